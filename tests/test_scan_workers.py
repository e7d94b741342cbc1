"""The keyword stage in worker processes (``scan_workers``): same tags, counts and outputs as in-process."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from torch.utils.data import DataLoader

from fairstream.cli import main, sample_corpus_path
from fairstream.core.config import FilterConfig
from fairstream.core.step import FilterStep, default_scan_workers
from fairstream.core.windows import read_one_ahead
from fairstream.models.runtime import JointModel, usable_cores
from fairstream.stream.dataset import FairStream
from fairstream.stream.tagger import Tagger


def sample_docs(n: int = 150) -> list[dict[str, Any]]:
    return [json.loads(line) for line in sample_corpus_path().open(encoding="utf-8")][:n]


@pytest.fixture(scope="module")
def shipped() -> JointModel:
    return JointModel(intra_op_threads=1)


def test_worker_scans_tag_exactly_as_in_process(shipped):
    texts = [d["text"] for d in sample_docs()]
    here, workers = Tagger(shipped, scan_workers=0), Tagger(shipped, scan_workers=2)
    workers.scan_min_docs = 2  # calls of 50 documents go to the workers too
    try:
        for lo in range(0, len(texts), 50):  # three calls: the cache carries across them in both
            assert workers.tag_batch(texts[lo : lo + 50]) == here.tag_batch(texts[lo : lo + 50])
        assert workers._scan_pool is not None  # the scans really ran in worker processes
        for name in ("mentions_predicted", "cache_hits", "batch_repeats"):
            assert getattr(workers, name) == getattr(here, name), name
        assert workers.mentions_predicted > 0 and list(workers._cache) == list(here._cache)
    finally:
        workers.close()
    assert workers._scan_pool is None


@pytest.mark.parametrize("overlap", ["on", "off", "auto"])
def test_stream_with_scan_workers_keeps_and_drops_the_same(shipped, overlap):
    docs = sample_docs(300)

    def run(n: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        stream = FairStream(
            docs,
            model=shipped,
            cap=0.01,
            warmup=0,
            annotate=True,
            scan_workers=n,
            lookahead=64,
            scan_overlap=overlap,
        )
        stream.tagger.scan_min_docs = 2  # windows of 64 use the workers here too
        out = list(stream)
        assert stream.tagger._scan_pool is None  # the workers end with the pass
        # overlapping: each window after the first was scanned while the one before was judged;
        # not (off, and auto with a CPU model): each window scanned by the workers, then one model call
        overlaps = n > 0 and overlap == "on"
        assert stream.tagger.prefetched_calls == (4 if overlaps else 0)
        return out, stream.stats()

    (plain, plain_stats), (pooled, pooled_stats) = run(0), run(2)
    assert pooled == plain and len(plain) > 0
    calls = plain_stats["counters"]["model_calls"], pooled_stats["counters"]["model_calls"]
    # without overlap one model call per window, as in one process; with it, chunks may go as scanned
    assert calls[0] == 5 and (calls[1] >= calls[0] if overlap == "on" else calls[1] == calls[0])
    counts = {k: v for k, v in plain_stats["counters"].items() if k != "model_calls"}
    assert {k: v for k, v in pooled_stats["counters"].items() if k != "model_calls"} == counts
    assert counts["docs_in"] == len(docs) and counts["sentences_dropped"] > 0


def _stream_in_worker(docs: list[dict[str, Any]]) -> list[Any]:
    return list(DataLoader(FairStream(docs, cap=0.01, scan_workers=1), batch_size=None, num_workers=1))


def test_default_scan_workers_fall_back_quietly_in_a_daemonic_process(shipped, monkeypatch, caplog):
    # a default computed in the main process (the cores, on Linux) is pickled into DataLoader workers,
    # which may not start processes: it scans in process there without a warning nobody asked for;
    # an explicit setting still warns
    import logging

    import fairstream.processes

    daemonic = type("Daemonic", (), {"daemon": True})()
    monkeypatch.setattr(fairstream.processes.multiprocessing, "current_process", lambda: daemonic)
    for config, warns in ((FilterConfig(), False), (FilterConfig(scan_workers=2), True)):
        tagger = FilterStep(config, model=shipped).tagger
        tagger.scan_workers = 2  # as the main process's default would be on a machine with 2+ cores
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="fairstream.processes"):
            assert tagger._pool() is None and tagger.scan_workers == 0
        levels = [r.levelno for r in caplog.records if "scan_workers=2 ignored" in r.getMessage()]
        assert levels == [logging.WARNING if warns else logging.DEBUG]


def test_dataloader_worker_falls_back_to_scanning_in_process():
    # DataLoader workers are daemonic and may not start processes: the setting is ignored there
    # (with a warning) and the worker filters exactly as without it
    docs = sample_docs(40)
    out = _stream_in_worker(docs)
    assert out == list(FairStream(docs, cap=0.01)) and len(out) > 30


def test_pickled_tagger_carries_the_setting_not_the_processes(shipped):
    tagger = Tagger(shipped, scan_workers=1)
    tagger.scan_min_docs = 2
    tagger.tag_batch(["An Asian visitor met a Muslim neighbour.", "Nothing here."])
    assert tagger._scan_pool is not None
    clone = pickle.loads(pickle.dumps(tagger))
    assert clone.scan_workers == 1 and clone._scan_pool is None
    tagger.close()


def test_scan_workers_argument_checks_and_defaults_with_a_stand_in_gpu_model(shipped, tmp_path):
    with pytest.raises(ValueError, match=r"scan_workers=-1 must be >= 0"):
        Tagger(shipped, scan_workers=-1)
    assert default_scan_workers(shipped) == 0  # on CPU: opt-in (--scan-workers N)
    assert shipped.device == "cpu"
    gpu_like = type("Gpu", (), {"device": "cuda:0"})()  # as TorchJointModel on a GPU names itself
    assert default_scan_workers(gpu_like) == max(1, usable_cores() - 1)
    # scans overlap the model only beside a GPU, unless told
    gpu_like = type("Gpu", (), {"device": "cuda:0", "name": "stand-in", "batch_invariant": True})()
    assert Tagger(gpu_like, scan_workers=1).prefetches and not Tagger(shipped, scan_workers=1).prefetches
    assert Tagger(shipped, scan_workers=1, scan_overlap=True).prefetches
    assert not Tagger(gpu_like, scan_workers=1, scan_overlap=False).prefetches
    assert not Tagger(gpu_like, scan_workers=0).prefetches
    small = Tagger(shipped, scan_workers=2)  # between model calls, a small call is not worth the workers
    small.tag_batch(["An Asian visitor met a Muslim neighbour.", "Nothing here."])
    assert small._scan_pool is None and small.scan_min_docs > 2
    with pytest.raises(ValueError, match="scan_overlap"):
        FilterConfig(scan_overlap="sometimes")
    assert FilterStep(FilterConfig(scan_workers=3), model=shipped).tagger.scan_workers == 3
    assert FilterStep(model=shipped).tagger.scan_workers == 0
    assert FilterStep(FilterConfig(scan_workers=0), model=shipped).tagger.scan_workers == 0
    code = main(["filter", str(sample_corpus_path()), "-o", str(tmp_path / "o"), "--scan-workers", "-2"])
    assert code == 2 and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "scope_args", [[], ["--cap-scope", "global", "--workers", "1"]], ids=["stream-scope", "global-scope"]
)
def test_cli_scan_workers_read_ahead_and_write_the_same_outputs(tmp_path, monkeypatch, scope_args):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in sample_docs(120)), encoding="utf-8")
    handed_over = []  # windows the job read ahead and gave to the scan workers
    real_prefetch = Tagger.prefetch
    monkeypatch.setattr(
        Tagger, "prefetch", lambda self, texts: (handed_over.append(len(texts)), real_prefetch(self, texts))
    )
    outs = {}
    for n, overlap in ((0, "auto"), (2, "on"), (2, "auto")):
        handed_over.clear()
        out = tmp_path / f"o{n}-{overlap}"
        argv = [
            "filter",
            str(corpus),
            "-o",
            str(out),
            "--scan-workers",
            str(n),
            "--scan-overlap",
            overlap,
            "--lookahead",
            "40",
            *scope_args,
        ]
        assert main(argv) == 0
        outs[n, overlap] = (out / "data" / "c.jsonl").read_text(encoding="utf-8")
        counters = json.loads((out / "stats.json").read_text())["counters"]
        assert counters["docs_in"] == 120 and counters["docs_out"] == outs[n, overlap].count("\n")
        # three windows: with overlap the 2nd and 3rd are handed over ahead (the global scope: in its
        # annotate pass); "auto" with the CPU model scans each window with the workers when it comes
        assert handed_over == ([40, 40] if n and overlap == "on" else [])
    assert len(set(outs.values())) == 1 and 100 < outs[0, "auto"].count("\n") <= 120


def test_read_one_ahead_hands_out_what_was_read_before_an_error():
    def items():
        yield from (1, 2, 3)
        raise OSError("truncated shard")

    got = []
    with pytest.raises(OSError, match="truncated shard"):
        for pair in read_one_ahead(items()):
            got.append(pair)
    assert got == [(1, 2), (2, 3), (3, None)]
    assert list(read_one_ahead(iter([]))) == [] and list(read_one_ahead(iter([7]))) == [(7, None)]


def test_failing_source_with_scan_workers_emits_everything_before_the_error(shipped):
    docs = sample_docs(50)

    def source():
        yield from docs[:23]
        raise OSError("corrupt record after 23 documents")

    expected = list(FairStream(docs[:23], model=shipped, cap=0.01, lookahead=5))
    stream = FairStream(source(), model=shipped, cap=0.01, lookahead=5, scan_workers=1)
    stream.tagger.scan_min_docs = 2
    out = []
    with pytest.raises(OSError, match="corrupt record"):
        for doc in stream:
            out.append(doc)
    assert out == expected and stream.stats()["counters"]["docs_in"] == 23


def test_a_killed_scan_worker_is_one_clear_error_and_the_tagger_recovers(shipped):
    import os
    import signal
    import time

    from fairstream.errors import WorkerError

    texts = [d["text"] for d in sample_docs(20)]
    tagger = Tagger(shipped, scan_workers=1)
    tagger.scan_min_docs = 2
    first = tagger.tag_batch(texts)
    assert tagger._scan_pool is not None
    for wait_first in (False, True):  # the death seen when scans are handed over, or when awaited
        assert tagger._scan_pool is not None
        for pid in list(tagger._scan_pool._processes):  # a real SIGKILL, as the OOM killer sends
            os.kill(pid, signal.SIGKILL)
        if wait_first:
            time.sleep(1.0)
        with pytest.raises(WorkerError, match=r"keyword-stage worker process died.*scan_workers=0"):
            tagger.tag_batch(texts)
        assert tagger._scan_pool is None  # the broken pool is dropped; the next call starts a new one
        assert tagger.tag_batch(texts) == first
    tagger.close()


def test_without_nltk_data_the_fallback_warning_comes_once_not_once_per_worker(tmp_path):
    # a user's process (stderr as they see it, no pytest log capture): without NLTK's punkt_tab each
    # forked scan worker used to log the fallback warning again (16 lines on a 16-core GPU host)
    script = tmp_path / "run.py"
    script.write_text(
        "import json, nltk\n"
        "nltk.data.path[:] = []\n"
        "from fairstream.cli import sample_corpus_path\n"
        "from fairstream.stream.tagger import Tagger\n"
        "texts = [json.loads(x)['text'] for x in sample_corpus_path().open()][:60]\n"
        "workers, here = Tagger(scan_workers=3), Tagger(scan_workers=0)\n"
        "workers.scan_min_docs = 2\n"
        "tagged = workers.tag_batch(texts)\n"
        "assert workers._scan_pool is not None\n"
        "workers.close()\n"
        "assert tagged == here.tag_batch(texts), 'workers split differently'\n"
        "print(workers.extractor.splitter.source, sum(len(t.sentences) for t in tagged))\n"
    )
    import subprocess
    import sys

    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    source, n_sentences = run.stdout.split()
    assert source == "fairstream-fallback" and int(n_sentences) > 0
    assert run.stderr.count("NLTK punkt_tab not found") == 1
