"""Every adapter keeps exactly the core step's text on the same documents, seed and granularity.

Documents are real ones (the first of ../shared/data/corpus/fineweb-edu-sample.jsonl.gz plus the
sample corpus, so the cap acts); the model is the tiny test model, whose int8 outputs depend on
the batch, so every adapter is given the same batches (windows of ``lookahead`` documents from
the first): equal output then means equal decisions, not just similar ones.
"""

from __future__ import annotations

import gzip
import json
from itertools import islice
from pathlib import Path

import pytest

from fairstream.cli import sample_corpus_path
from fairstream.core import FilterConfig, FilterStep

LOOKAHEAD = 16


@pytest.fixture(scope="module")
def shard(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    with gzip.open(shared_dir / "data/corpus/fineweb-edu-sample.jsonl.gz", "rt", encoding="utf-8") as f:
        web = [{"id": d["id"], "text": d["text"]} for d in map(json.loads, islice(f, 60))]
    sample = [json.loads(line) for line in sample_corpus_path().open(encoding="utf-8")]
    docs = web + [{"id": d["id"], "text": d["text"]} for d in sample[:100]]
    path = tmp_path_factory.mktemp("adapters") / "in" / "part-0.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def read_docs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8")]


def run_core(config: FilterConfig, shard: Path, tmp: Path) -> list[str]:
    docs, step, out = read_docs(shard), FilterStep(config), []
    for start in range(0, len(docs), LOOKAHEAD):
        out += [r.text for r in step.process(docs[start : start + LOOKAHEAD], start=start) if r.kept]
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "stats.json").write_text(json.dumps(step.stats()), encoding="utf-8")
    return out


def run_torch(config: FilterConfig, shard: Path, tmp: Path) -> list[str]:
    from fairstream.stream.dataset import FairStream

    return [d["text"] for d in FairStream(read_docs(shard), config)]


def run_hf(config: FilterConfig, shard: Path, tmp: Path) -> list[str]:
    import datasets

    from fairstream.adapters.hf import KEEP_COLUMN, fairstream_map_fn

    ds = datasets.Dataset.from_list(read_docs(shard))
    mapped = ds.map(fairstream_map_fn(config), batched=True, batch_size=LOOKAHEAD)
    return [r["text"] for r in mapped if r[KEEP_COLUMN]]


def run_datatrove(config: FilterConfig, shard: Path, tmp: Path) -> list[str]:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    from fairstream.adapters.datatrove import FairStreamFilter

    LocalPipelineExecutor(
        pipeline=[
            JsonlReader(str(shard.parent)),
            FairStreamFilter(
                config,
                exclusion_writer=JsonlWriter(str(tmp / "removed"), compression=None),
                stats_dir=tmp / "fairstream-stats",
            ),
            JsonlWriter(str(tmp / "kept"), compression=None),
        ],
        tasks=1,
        logging_dir=str(tmp / "logs"),
    ).run()
    return [d["text"] for p in sorted((tmp / "kept").glob("*.jsonl")) for d in read_docs(p)]


def run_cli_job(config: FilterConfig, shard: Path, tmp: Path) -> list[str]:
    from fairstream.filter_job import FilterJob

    FilterJob([shard], tmp / "job", config, report=False, progress=False).run()
    return [d["text"] for d in read_docs(tmp / "job" / "data" / shard.name)]


def run_ray(config: FilterConfig, shard: Path, tmp: Path) -> list[str]:
    ray = pytest.importorskip("ray")
    from fairstream.adapters.ray import filter_dataset

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        ray.data.DataContext.get_current().execution_options.preserve_order = True
        ds = ray.data.from_items(read_docs(shard), override_num_blocks=1)
        return [r["text"] for r in filter_dataset(ds, config, stats_dir=tmp / "fairstream-stats").take_all()]
    finally:
        ray.shutdown()


ADAPTERS = {
    "torch": run_torch,
    "hf": run_hf,
    "datatrove": run_datatrove,
    "cli-job": run_cli_job,
    "ray": run_ray,
}


@pytest.mark.parametrize("granularity", ["sentence", "document"])
@pytest.mark.parametrize(
    "adapter", [pytest.param(a, marks=pytest.mark.slow) if a == "ray" else a for a in ADAPTERS]
)
def test_every_adapter_keeps_the_core_steps_text(adapter, granularity, shard, tiny_model_dir, tmp_path):
    config = FilterConfig(
        cap=0.05, warmup=20, seed=3, granularity=granularity, lookahead=LOOKAHEAD, model=str(tiny_model_dir)
    )
    expected = run_core(config, shard, tmp_path / "core")
    n_in = len(read_docs(shard))
    assert 0 < len(expected) <= n_in
    # the cap acts on these documents: the check compares real decisions
    assert expected != [d["text"] for d in read_docs(shard)]
    assert ADAPTERS[adapter](config, shard, tmp_path) == expected
    if adapter in ("datatrove", "ray"):  # their workers' stats come back through stats_dir, estimates and all
        from fairstream.io.stats_parts import merge_stats_parts

        core = json.loads((tmp_path / "core" / "stats.json").read_text(encoding="utf-8"))
        merged = merge_stats_parts(tmp_path / "fairstream-stats")
        assert merged["parts"] == 1
        assert merged["attributes"] == core["attributes"] and merged["counters"]["docs_in"] == len(
            read_docs(shard)
        )
        assert (
            merged["estimates"] == core["estimates"]
            and merged["estimates"]["pooled"]["before"]["sentences"] > 0
        )


def test_datatrove_sends_removed_text_to_the_exclusion_writer_and_counts(shard, tiny_model_dir, tmp_path):
    config = FilterConfig(cap=0.05, warmup=20, seed=3, lookahead=LOOKAHEAD, model=str(tiny_model_dir))
    kept = run_datatrove(config, shard, tmp_path)
    removed = [d for p in sorted((tmp_path / "removed").glob("*.jsonl")) for d in read_docs(p)]
    originals = {d["id"]: d["text"] for d in read_docs(shard)}
    assert removed and len(kept) + sum(1 for r in removed if not r["id"].endswith("/removed")) == len(
        originals
    )
    for r in removed:
        if r["id"].endswith("/removed"):  # the sentences cut from a kept document, with their reasons
            spans = r["metadata"]["fairstream_dropped"]
            original = originals[r["id"].removesuffix("/removed")]
            assert r["text"] == "\n".join(original[s:e] for s, e, _ in spans)
            assert {reason for _, _, reason in spans} <= {"cap-bound", "cap-sampled-out"}
        else:
            assert r["text"] == originals[r["id"]] and r["metadata"]["filter_reason"]
    stats = json.loads((tmp_path / "logs" / "stats.json").read_text())
    ours = next(s for s in stats if "fairstream" in s["name"])["stats"]
    dropped_sentences = sum(len(r["metadata"].get("fairstream_dropped", [])) for r in removed)
    assert ours["total"] == len(originals) and ours["forwarded"] == len(kept)
    assert ours["sentences_dropped"] >= dropped_sentences > 0


@pytest.mark.parametrize(
    ("device", "cluster_gpus", "gpus", "actor_device"),
    [
        ("cuda", 0, 1, "cuda"),
        ("cuda:1", 0, 1, "cuda"),  # Ray makes the actor's one GPU its cuda:0
        ("auto", 2, 1, "cuda"),
        ("auto", 0, 0, "auto"),
        ("cpu", 2, 0, "cpu"),
    ],
)
def test_ray_asks_for_a_gpu_for_every_gpu_device(device, cluster_gpus, gpus, actor_device, monkeypatch):
    """What ``filter_dataset`` asks Ray for, read from a fake dataset and cluster (no GPU here)."""
    ray = pytest.importorskip("ray", reason="Ray is the 'ray' extra: pip install 'fairstream[ray]'")
    from fairstream.adapters.ray import filter_dataset

    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0, "GPU": float(cluster_gpus)})

    class FakeDataset:
        def map_batches(self, fn, **kwargs):
            return kwargs

    asked = filter_dataset(FakeDataset(), FilterConfig(device=device))
    assert asked["num_gpus"] == gpus and asked["fn_constructor_kwargs"]["config"].device == actor_device
