"""The offline job with an exact global cap (fairstream.jobs), on real shards and the shipped model.

Shards are built from ../shared/data/corpus at run time: documents cut to their first 1,500
characters, chosen among those with candidate sentences, so a run takes seconds.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fairstream.core.config import FilterConfig
from fairstream.core.global_cap import negative_budget
from fairstream.errors import FairStreamError
from fairstream.jobs import GlobalCapJob
from fairstream.jobs.reader import ShardReader

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus"
CAP = 0.01
REPO = Path(__file__).resolve().parents[1]


# words around which web text is more often negative toward people; picking some documents by them
# (no model involved) gives the cap negative sentences to work on with any model: a more precise
# regard head calls fewer sentences of plain educational web text negative
NEGATIVE_CUES = re.compile(
    r"\b(terror\w*|crim\w*|kill\w*|racis\w*|hat(?:e|red)|attack\w*|violen\w*|slave\w*|murder\w*|lazy|"
    r"stupid|dangerous|extremis\w*|riot\w*|abus\w*)\b",
    re.IGNORECASE,
)


def corpus_docs(n: int, *, chars: int = 1500, cue_share: float = 0.0) -> list[dict[str, Any]]:
    """``n`` short corpus documents with at least one candidate sentence (keywords only, no model).

    ``cue_share`` of them (rounded down) are the first documents with a candidate sentence holding a
    ``NEGATIVE_CUES`` word, the rest the first other documents, in corpus order.
    """
    from fairstream.candidates import CandidateExtractor

    if not CORPUS.is_dir():
        pytest.fail(f"{CORPUS} is missing: the tests read the shared corpus from ../shared")
    extractor = CandidateExtractor()
    want_cued = int(n * cue_share)
    cued: list[dict[str, Any]] = []
    plain: list[dict[str, Any]] = []
    for name in ("fineweb-edu-sample.jsonl.gz", "dclm-sample.jsonl.gz"):
        with gzip.open(CORPUS / name, "rt", encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                text = doc["text"][:chars]
                candidates = extractor.scan(text).candidates
                if not candidates:
                    continue
                has_cue = any(NEGATIVE_CUES.search(text[c.start : c.end]) for c in candidates)
                group = cued if has_cue and len(cued) < want_cued else plain
                if group is plain and len(plain) == n - want_cued:
                    continue
                group.append({"id": doc["id"], "text": text, "source": name})
                if len(cued) == want_cued and len(plain) == n - want_cued:
                    return cued + plain
    return cued + plain


def write_shards(root: Path, docs: list[dict[str, Any]]) -> Path:
    """Four shards: two JSON lines files of the same name in two folders, gzip, Parquet."""
    quarter = len(docs) // 4
    parts = [docs[i * quarter : (i + 1) * quarter] for i in range(3)] + [docs[3 * quarter :]]
    inputs = root / "in"
    for sub, part in zip(("a/000.jsonl", "b/000.jsonl", "c/000.jsonl.gz"), parts, strict=False):
        path = inputs / sub
        path.parent.mkdir(parents=True, exist_ok=True)
        opener: Any = gzip.open if sub.endswith(".gz") else open
        with opener(path, "wt", encoding="utf-8") as f:
            for d in part:
                f.write(json.dumps(d) + "\n")
    (inputs / "d").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(parts[3]), inputs / "d" / "000.parquet")
    return inputs


def files_of(folder: Path) -> dict[str, bytes]:
    """Every output file's bytes (data, attribute files and the plan), by relative path."""
    out = {}
    for sub in ("data", "attributes"):
        for p in sorted((folder / sub).rglob("*")):
            if p.is_file():
                out[str(p.relative_to(folder))] = p.read_bytes()
    out["plan.json"] = (folder / "plan.json").read_bytes()
    return out


def read_shard(path: Path) -> list[dict[str, Any]]:
    """All records of an output shard."""
    return [r.data for r in ShardReader(path).records()]


def attribute_rows(folder: Path) -> dict[str, dict[str, Any]]:
    """Attribute lines of every shard, by document id (read with gzip + json only)."""
    rows = {}
    for p in (folder / "attributes").rglob("*.fairstream.jsonl.gz"):
        with gzip.open(p, "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                rows[row["id"]] = row
    return rows


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_shards(tmp_path_factory.mktemp("jobs"), corpus_docs(160, cue_share=0.25))


@pytest.fixture(scope="module")
def one_worker(shards: Path) -> Path:
    out = shards.parent / "out-1"
    GlobalCapJob([shards], out, FilterConfig(cap=CAP), workers=1, checkpoint_every=16, progress=False).run()
    return out


def test_global_cap_holds_on_the_recounted_merged_output(shards: Path, one_worker: Path) -> None:
    originals = {}
    for p in shards.rglob("*"):
        if p.is_file():
            originals.update({d["id"]: d["text"] for d in read_shard(p)})
    outputs = {}
    for name in ("a/000.jsonl", "b/000.jsonl", "c/000.jsonl.gz", "d/000.parquet"):
        outputs.update({d["id"]: d["text"] for d in read_shard(one_worker / "data" / name)})
    rows = attribute_rows(one_worker)
    assert set(rows) == set(originals)
    before: dict[str, dict[str, int]] = {}
    kept: dict[str, dict[str, int]] = {}
    for doc_id, row in rows.items():
        text = originals[doc_id]
        out = outputs.get(doc_id)
        for start, end, regards in row["attributes"]["fairstream__person_regard"]:
            survived = out is not None and text[start:end] in out
            for kw, regard in regards.items():
                before.setdefault(kw, {"negative": 0, "other": 0})[
                    "negative" if regard == "negative" else "other"
                ] += 1
                if survived:
                    kept.setdefault(kw, {"negative": 0, "other": 0})[
                        "negative" if regard == "negative" else "other"
                    ] += 1
    over_before = [kw for kw, c in before.items() if c["negative"] > CAP * (c["negative"] + c["other"])]
    assert over_before, "the test corpus must have attributes above the cap, else it checks nothing"
    for kw, c in kept.items():
        assert c["negative"] <= negative_budget(CAP, c["other"]), (kw, c)  # type: ignore[operator]
    # as few drops as the rule allows: an attribute whose negative sentences mention no other
    # attribute keeps exactly min(its negatives, its budget beside the kept non-negatives)
    plan = json.loads((one_worker / "plan.json").read_text())
    shared = set()
    for row in rows.values():
        for _, _, regards in row["attributes"]["fairstream__person_regard"]:
            if len(regards) > 1:
                shared |= {kw for kw, r in regards.items() if r == "negative"}
    checked = 0
    for kw, c in plan["kept"].items():
        if kw in shared or not before.get(kw, {}).get("negative"):
            continue
        budget = negative_budget(CAP, c["neutral"] + c["positive"])
        assert budget is not None
        assert c["negative"] == min(before[kw]["negative"], budget), kw
        checked += 1
    assert checked
    # the recount from the outputs is the plan's count of the kept corpus, attribute by attribute
    recount = {kw: (c["negative"], c["other"]) for kw, c in kept.items() if c["negative"] + c["other"]}
    planned = {
        kw: (c["negative"], c["neutral"] + c["positive"]) for kw, c in plan["kept"].items() if sum(c.values())
    }
    assert recount == planned
    # nothing else changed: documents without dropped sentences are byte for byte their input
    dropped_ids = {d for d, _ in plan["dropped"]}
    for doc_id, text in originals.items():
        if doc_id not in dropped_ids:
            assert outputs[doc_id] == text


def test_same_basename_inputs_keep_their_folders(one_worker: Path, shards: Path) -> None:
    a = read_shard(one_worker / "data" / "a" / "000.jsonl")
    b = read_shard(one_worker / "data" / "b" / "000.jsonl")
    assert {d["id"] for d in a} <= {d["id"] for d in read_shard(shards / "a" / "000.jsonl")}
    assert {d["id"] for d in b} <= {d["id"] for d in read_shard(shards / "b" / "000.jsonl")}
    assert not {d["id"] for d in a} & {d["id"] for d in b}
    assert pq.read_schema(one_worker / "data" / "d" / "000.parquet") == pq.read_schema(
        shards / "d" / "000.parquet"
    )


def test_attribute_files_align_with_the_shards_line_by_line(one_worker: Path, shards: Path) -> None:
    for name in ("a/000.jsonl", "c/000.jsonl.gz", "d/000.parquet"):
        with gzip.open(one_worker / "attributes" / (name + ".fairstream.jsonl.gz"), "rt") as f:
            rows = [json.loads(line) for line in f]
        docs = list(ShardReader(shards / name).records())
        assert [(r["id"], r["line"]) for r in rows] == [(d.data["id"], d.line) for d in docs]


def test_a_second_cap_from_saved_annotations_equals_a_full_run(
    shards: Path, one_worker: Path, tmp_path: Path
) -> None:
    from_ann = tmp_path / "from-ann"
    config = FilterConfig(cap=0.25)
    GlobalCapJob(
        [shards],
        from_ann,
        config,
        workers=1,
        checkpoint_every=16,
        from_annotations=one_worker,
        progress=False,
    ).run()
    assert not (from_ann / "attributes").exists()  # pass 1 did not run again
    full = tmp_path / "full"
    GlobalCapJob([shards], full, config, workers=1, checkpoint_every=16, progress=False).run()
    assert files_of(from_ann) == {k: v for k, v in files_of(full).items() if not k.startswith("attributes")}
    assert (
        json.loads((full / "plan.json").read_text())["dropped"]
        != json.loads((one_worker / "plan.json").read_text())["dropped"]
    ), "a 25% cap must drop less than a 1% cap on this corpus"


def test_document_granularity_keeps_documents_whole_or_drops_them(
    shards: Path, one_worker: Path, tmp_path: Path
) -> None:
    out = tmp_path / "doc"
    config = FilterConfig(cap=CAP, granularity="document")
    GlobalCapJob(
        [shards], out, config, workers=1, checkpoint_every=16, from_annotations=one_worker, progress=False
    ).run()
    plan = json.loads((out / "plan.json").read_text())
    assert plan["dropped"] and all(i == 0 for _, i in plan["dropped"])
    dropped = {d for d, _ in plan["dropped"]}
    for name in ("a/000.jsonl", "b/000.jsonl", "c/000.jsonl.gz", "d/000.parquet"):
        source = {d["id"]: d for d in read_shard(shards / name)}
        kept = read_shard(out / "data" / name)
        assert [d["id"] for d in kept] == [i for i in source if i not in dropped]
        assert all(d == source[d["id"]] for d in kept)
    for c in plan["kept"].values():
        assert c["negative"] <= negative_budget(CAP, c["neutral"] + c["positive"])  # type: ignore[operator]


def test_annotate_only_writes_no_outputs_and_refuses_a_changed_setting(shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = GlobalCapJob([shards / "a"], out, workers=1, annotate_only=True, progress=False).run()
    assert summary["documents"] == 40 and not (out / "data").exists() and not (out / "plan.json").exists()
    assert (out / "attributes" / "000.jsonl.fairstream.jsonl.gz").is_file()
    with pytest.raises(FairStreamError, match="min_tokens"):
        GlobalCapJob(
            [shards / "a"], out, FilterConfig(min_tokens=8), workers=1, annotate_only=True, progress=False
        ).run()


def test_temporary_files_are_removed_on_start(shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    job = GlobalCapJob([shards / "a"], out, workers=1, progress=False)
    with job.folder.claim(job.manifest()):  # a run killed once it held the folder: its manifest stays
        pass
    (out / "data" / "a").mkdir(parents=True)
    left = out / "data" / "a" / ".000.jsonl.abc.tmp"
    left.write_text("half")
    job.run()
    assert not left.exists()
    assert not [p for p in (out / "_parts" / "annotate").rglob("*") if p.is_file()]  # no parts left


@pytest.mark.slow
def test_two_workers_write_the_same_bytes_as_one(shards: Path, one_worker: Path) -> None:
    out = shards.parent / "out-2"
    GlobalCapJob([shards], out, FilterConfig(cap=CAP), workers=2, checkpoint_every=16, progress=False).run()
    assert files_of(out) == files_of(one_worker)


@pytest.mark.slow
@pytest.mark.ray
def test_ray_writes_the_same_bytes_as_the_local_pool(shards: Path, one_worker: Path) -> None:
    ray = pytest.importorskip("ray", reason="Ray is the 'ray' extra: pip install 'fairstream[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = shards.parent / "out-ray"
        GlobalCapJob(
            [shards], out, FilterConfig(cap=CAP), engine="ray", checkpoint_every=16, progress=False
        ).run()
    finally:
        ray.shutdown()
    assert files_of(out) == files_of(one_worker)


KILLABLE = """
import sys
from fairstream.core.config import FilterConfig
from fairstream.jobs import GlobalCapJob
GlobalCapJob([sys.argv[1]], sys.argv[2], FilterConfig(cap=0.01), workers=1, checkpoint_every=4,
             progress=False).run()
"""


@pytest.mark.slow
def test_sigkill_mid_shard_then_rerun_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    docs = corpus_docs(120)
    shard = tmp_path / "in" / "000.jsonl"
    shard.parent.mkdir()
    shard.write_text("".join(json.dumps(d) + "\n" for d in docs))
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, str(shard), str(killed)], env=env)
    checkpoint = killed / "_parts" / "annotate" / "000.jsonl" / "checkpoint.json"
    deadline = time.monotonic() + 300
    parts = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if checkpoint.is_file():
            parts = json.loads(checkpoint.read_text())["parts"]
            if parts >= 3:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "the job ended before it could be killed mid-shard"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 3 <= json.loads(checkpoint.read_text())["parts"] < 30  # killed inside the shard
    subprocess.run([sys.executable, "-c", KILLABLE, str(shard), str(killed)], env=env, check=True)
    clean = tmp_path / "clean"
    GlobalCapJob([shard], clean, FilterConfig(cap=0.01), workers=1, checkpoint_every=4, progress=False).run()
    assert files_of(killed) == files_of(clean)
    with gzip.open(killed / "attributes" / "000.jsonl.fairstream.jsonl.gz", "rt") as f:
        ids = [json.loads(line)["id"] for line in f]
    assert ids == [d["id"] for d in docs]  # no duplicates, no gaps
    assert not [p for p in (killed / "_parts" / "annotate").rglob("*") if p.is_file()]


def test_cli_global_scope_runs_and_prints_a_summary_that_stays(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fairstream.cli import main

    out = tmp_path / "cli"
    argv = ["filter", str(shards / "a"), "-o", str(out), "--cap-scope", "global", "--workers", "1"]
    assert main([*argv, "--cap", "0.01"]) == 0
    captured = capsys.readouterr()
    assert "attributes over their cap" in captured.out
    assert "\r" not in captured.err  # not a terminal: plain progress lines
    assert "pass 1/3 annotate" in captured.err and "pass 3/3 apply" in captured.err
    assert (out / "data" / "000.jsonl").is_file()
    # a rerun with another cap in the same folder is refused, naming the option
    assert main([*argv, "--cap", "0.05"]) != 0
    assert "--cap was 0.01, now 0.05" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--workers", "2"], "--workers needs --cap-scope global"),
        (["--engine", "ray"], "--engine ray needs --cap-scope global"),
        (["--cap-scope", "global", "--ray-address", "auto"], "--ray-address needs --engine ray"),
        (["--cap-scope", "global", "--workers", "0"], "--workers 0: must be a whole number >= 1"),
    ],
)
def test_cli_job_options_out_of_place_are_one_line_errors(
    flags: list[str], named: str, shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fairstream.cli import main

    assert main(["filter", str(shards / "a"), "-o", str(tmp_path / "o"), *flags]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert named in err[-1]
    assert not (tmp_path / "o").exists()


def test_a_repeated_document_id_is_a_one_line_error_naming_file_and_line(
    one_worker: Path, shards: Path, tmp_path: Path
) -> None:
    # a document with a negative sentence (only those enter the plan) from the annotated shards
    negative = next(
        doc_id
        for doc_id, row in attribute_rows(one_worker).items()
        if any("negative" in r.values() for _, _, r in row["attributes"]["fairstream__person_regard"])
    )
    docs = [d for p in shards.rglob("*") if p.is_file() for d in read_shard(p)]
    rows = [d for d in docs if d["id"] == negative] * 2
    shard = tmp_path / "000.jsonl"
    shard.write_text("".join(json.dumps(d) + "\n" for d in rows))
    with pytest.raises(FairStreamError, match=r"000.jsonl:2: document id .* appears twice"):
        GlobalCapJob([shard], tmp_path / "out", workers=1, progress=False).run()
    # named by shard and line instead, the same documents are fine
    summary = GlobalCapJob(
        [shard], tmp_path / "by-line", FilterConfig(id_field=None), workers=1, progress=False
    ).run()
    assert summary["documents"] == 2


RSS_CHILD = """
import json, resource, sys
from fairstream.core.config import FilterConfig
from fairstream.jobs import GlobalCapJob
from fairstream.jobs.tasks import worker_step
config = FilterConfig(cache_size=100_000)
worker_step(config, 1).process([{"id": "w", "text": "The Muslim man was kind to his neighbours and helped "
                                                    "them carry their bags home after a long day."}])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
GlobalCapJob([sys.argv[1]], sys.argv[2], config, workers=1, checkpoint_every=200, progress=False).run()
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024)
"""


@pytest.mark.slow
def test_peak_memory_does_not_grow_with_the_shard(tmp_path: Path) -> None:
    docs = corpus_docs(300, chars=4000)
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_text("".join(json.dumps(d) + "\n" for d in docs))
    # five times the documents under new ids: the model's cache answers the repeats, so only the
    # job's own buffers could make the larger shard cost more memory
    large.write_text(
        "".join(json.dumps({**d, "id": f"{k}-{d['id']}"}) + "\n" for k in range(5) for d in docs)
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def growth(shard: Path) -> int:
        out = subprocess.run(
            [sys.executable, "-c", RSS_CHILD, str(shard), str(tmp_path / f"out-{shard.stem}")],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return int(out.stdout.strip().splitlines()[-1])

    extra = large.stat().st_size - small.stat().st_size
    assert extra > 3_000_000
    # a job that held the shard would grow by more than the extra JSON; this one by far less
    small_growth, large_growth = growth(small), growth(large)
    assert large_growth - small_growth < extra / 4, (small_growth, large_growth, extra)
