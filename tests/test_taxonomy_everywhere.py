"""``--taxonomy my.json`` / ``FilterConfig(taxonomy=...)`` reach the keyword detector at every way in.

One user taxonomy (an ``occupation`` class whose keywords, gardener and baker, are in no shipped
taxonomy) and seven one-sentence documents that tell it from ``taxonomy-v1`` (which finds "Muslim"
twice and no gardener) and ``taxonomy-v2`` (which finds "refugees" too). Every way in must count the
user's keywords and not v1's: the command line (stream scope with scan workers, the global scope in
this process and with two worker processes, a rerun with another taxonomy), the report, a builder,
``eval-models`` and ``bench``, the core step, the Hugging Face mapper, the ``IterableDataset`` under
two DataLoader workers, datatrove, Ray Data and the offline job on Ray. The model is the tiny test
model (``tests/conftest.py``): it marks most mentions as people, so the counts reach the report.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from fairstream.cli import main
from fairstream.core import FilterConfig, FilterStep
from fairstream.errors import ConfigError
from fairstream.taxonomy import Taxonomy

TEXTS = [
    "The gardeners who volunteered at the community garden every weekend were praised by everyone in the small "
    "town for their hard work.",
    "The Muslim families who moved into the neighbourhood last spring were welcomed by everyone in the small "
    "town with a large dinner.",
    "A baker who opened a shop on the main street last year was blamed by angry neighbours for the noise early "
    "every single morning.",
    "The gardener who had looked after the castle grounds for forty years was described by some visitors as "
    "rude, lazy and dishonest.",
    "Nothing in this sentence mentions any group of people at all, since it only talks about the weather and the "
    "long rainy season.",
    "Several Muslim gardeners from the village cooperative were accused by the local council of stealing water "
    "during the dry summer.",
    "The refugees who arrived at the border station during the winter were given blankets, hot soup and a place "
    "to sleep by volunteers.",
]
DOCS = [{"id": f"doc-{i}", "text": t} for i, t in enumerate(TEXTS)]
TAXONOMY = {
    "name": "gardeners-test",
    "extra_classes": ["occupation"],
    "classes": {
        "occupation": [
            # "gardenfolk" is a form no rule derives from the keyword: only the taxonomy knows it
            {"keyword": "gardener", "gloss": "who gardens", "forms": ["gardener", "gardeners", "gardenfolk"]},
            {"keyword": "baker", "gloss": "who bakes bread", "forms": ["baker", "bakers"]},
        ]
    },
}
#: keyword -> mentions in DOCS (any sense), under the user taxonomy and under taxonomy-v1
CUSTOM = {"gardener": 3, "baker": 1}
V1 = {"muslim": 2}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``my-taxonomy.json`` and ``shards/part-{0,1}.jsonl`` (documents 0-3 and 4-6)."""
    root = tmp_path_factory.mktemp("taxonomy-everywhere")
    (root / "my-taxonomy.json").write_text(json.dumps(TAXONOMY), encoding="utf-8")
    (root / "shards").mkdir()
    for k, part in enumerate((DOCS[:4], DOCS[4:])):
        (root / "shards" / f"part-{k}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in part))
    return root


@pytest.fixture(scope="module")
def tax_file(base: Path) -> str:
    return str(base / "my-taxonomy.json")


@pytest.fixture(scope="module")
def config(tax_file: str, tiny_model_dir: Path) -> FilterConfig:
    return FilterConfig(taxonomy=tax_file, model=str(tiny_model_dir), seed=0)


def mentions(attributes: dict[str, dict[str, Any]]) -> dict[str, int]:
    """keyword -> mentions of the stats' per-attribute counts."""
    return {kw: a["mentions"] for kw, a in attributes.items() if a["mentions"]}


def check_counts(stats: dict[str, Any], kept: int | None = None, *, with_keyword: bool = True) -> None:
    """The user's keywords counted, v1's not; every document in is out, dropped or skipped.

    ``with_keyword=False``: the global scope's counts, whose report pass does not count documents
    with keywords.
    """
    assert mentions(stats["attributes"]) == CUSTOM
    c = stats["counters"]
    assert c["docs_in"] == len(DOCS)
    if with_keyword:
        assert c["docs_with_keyword"] == 4  # taxonomy-v1 finds 2
    assert c["docs_in"] == c["docs_out"] + c["docs_dropped"] + sum(stats["skipped"].values())
    if kept is not None:
        assert kept == c["docs_out"]


def output_docs(out: Path) -> list[dict[str, Any]]:
    rows = []
    for p in sorted((out / "data").rglob("*.jsonl")):
        rows += [json.loads(line) for line in p.open(encoding="utf-8")]
    return rows


# -- the taxonomy file and the documents ----------------------------------------------------------------


def test_the_user_taxonomy_passes_taxonomy_check(tax_file: str, capsys):
    assert main(["taxonomy", "check", tax_file]) == 0
    assert "OK: gardeners-test: 1 classes, 2 keywords, 5 forms" in capsys.readouterr().out
    assert main(["taxonomy", "--taxonomy", tax_file]) == 0
    assert "gardener" in capsys.readouterr().out


def test_core_step_counts_the_keywords_of_the_taxonomy_it_is_given(config: FilterConfig):
    def counted(cfg: FilterConfig) -> tuple[dict[str, int], set[str]]:
        step = FilterStep(cfg)
        results = step.process(DOCS, annotate=True)
        assert {r.annotation["taxonomy"] for r in results} == {step.taxonomy.name}
        return mentions(step.stats()["attributes"]), {step.taxonomy.name}

    assert counted(config.replace(taxonomy=None)) == (V1, {"taxonomy-v1"})
    assert counted(config) == (CUSTOM, {"gardeners-test"})
    v2, names = counted(config.replace(taxonomy="taxonomy-v2"))
    assert names == {"taxonomy-v2"} and v2 == {**V1, "refugee": 1}


def test_taxonomy_keyword_argument_takes_a_name_or_a_file_as_the_setting(tax_file: str, tiny_model_dir: Path):
    from fairstream import FairStream
    from fairstream.adapters.hf import fairstream_map_fn

    model = str(tiny_model_dir)
    made = [
        FilterStep(FilterConfig(model=model), taxonomy=tax_file),
        FairStream(DOCS, model=model, taxonomy=tax_file).step,
        fairstream_map_fn(model=model, taxonomy=tax_file).step,
        fairstream_map_fn(FilterConfig(model=model), taxonomy=Path(tax_file)).step,
    ]
    assert [(s.taxonomy.name, s.config.taxonomy) for s in made] == [("gardeners-test", tax_file)] * len(made)
    assert FairStream(DOCS, model=model, taxonomy="taxonomy-v2").taxonomy.name == "taxonomy-v2"


def test_a_taxonomy_that_names_nothing_is_refused_naming_the_setting_and_the_choices(base: Path, capsys):
    with pytest.raises(ConfigError, match=r"taxonomy='nope\.json': no such file; must be a shipped taxonomy "
                       r"\(taxonomy-v1, taxonomy-v2\) or a taxonomy JSON file"):  # fmt: skip
        FilterConfig(taxonomy="nope.json")
    with pytest.raises(ConfigError, match="is a folder"):
        FilterConfig(taxonomy=str(base))
    assert main(["filter", str(base / "shards"), "-o", str(base / "never"), "--taxonomy", "nope.json"]) == 2
    err = capsys.readouterr().err
    assert "--taxonomy nope.json: no such file; must be a shipped taxonomy (taxonomy-v1, taxonomy-v2)" in err
    assert not (base / "never").exists()
    # commands that read no taxonomy refuse one rather than ignore it
    assert main(["build-sft", "-o", str(base / "sft"), "--taxonomy", "taxonomy-v2"]) == 2
    assert "`fairstream build-sft` reads no taxonomy" in capsys.readouterr().err
    assert main(["taxonomy", "--taxonomy", "taxonomy-v2", "check", "taxonomy-v1"]) == 2
    assert "checks its FILE" in capsys.readouterr().err


# -- the command line -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stream_run(base: Path, tax_file: str, tiny_model_dir: Path) -> Path:
    """``fairstream filter --taxonomy my.json`` (stream scope, two scan worker processes)."""
    out = base / "out-stream"
    argv = ["filter", str(base / "shards"), "-o", str(out), "--taxonomy", tax_file, "--model", str(tiny_model_dir),
            "--scan-workers", "2", "--scan-overlap", "on", "--lookahead", "2", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    return out


def test_cli_filter_stream_scope(stream_run: Path):
    stats = json.loads((stream_run / "stats.json").read_text())
    check_counts(stats, kept=len(output_docs(stream_run)))
    assert stats["run"]["taxonomy"] == "gardeners-test"
    manifest = json.loads((stream_run / "_manifest.json").read_text())
    assert manifest["settings"]["tag"]["taxonomy"] == Taxonomy.from_dict(TAXONOMY).identity
    assert "gardener" in (stream_run / "report" / "report.md").read_text()


def test_cli_filter_refuses_a_rerun_with_another_taxonomy(
    stream_run: Path, base: Path, tiny_model_dir, capsys
):
    before = (stream_run / "stats.json").read_bytes()
    argv = ["filter", str(base / "shards"), "-o", str(stream_run), "--model", str(tiny_model_dir),
            "--scan-workers", "2", "--scan-overlap", "on", "--lookahead", "2", "--no-progress"]  # fmt: skip
    assert main([*argv, "--taxonomy", "taxonomy-v2"]) == 2
    err = capsys.readouterr().err
    assert "gardeners-test (sha256" in err and "taxonomy-v2 (sha256" in err
    assert (stream_run / "stats.json").read_bytes() == before


@pytest.mark.parametrize("workers", [1, 2])
def test_cli_filter_global_scope(workers: int, base: Path, tax_file: str, tiny_model_dir: Path, monkeypatch):
    monkeypatch.chdir(base)  # the taxonomy by a relative path: the worker processes get it absolute
    out = base / f"out-global-{workers}"
    argv = ["filter", "shards", "-o", str(out), "--cap-scope", "global", "--workers", str(workers),
            "--taxonomy", "my-taxonomy.json", "--model", str(tiny_model_dir), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    stats = json.loads((out / "stats.json").read_text())
    check_counts(stats, kept=len(output_docs(out)), with_keyword=False)
    assert stats["counts"]["kept"] + stats["counts"]["dropped"] + stats["counts"]["skipped"] == len(DOCS)
    assert stats["run"]["taxonomy"] == "gardeners-test"
    found: dict[str, int] = {}
    for path in (out / "attributes").glob("*.fairstream.jsonl.gz"):  # pass 1's annotations, by the workers
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for row in map(json.loads, f):
                assert row["fairstream"]["taxonomy"] == "gardeners-test"
                for s in row["fairstream"]["sentences"]:
                    for m in s["mentions"]:
                        found[m["keyword"]] = found.get(m["keyword"], 0) + 1
    assert found == CUSTOM


def test_global_job_tasks_carry_the_taxonomy_by_absolute_path(base: Path, tiny_model_dir: Path, monkeypatch):
    from fairstream.jobs import GlobalCapJob

    monkeypatch.chdir(base)
    cfg = FilterConfig(taxonomy="my-taxonomy.json", model=str(tiny_model_dir))
    tasks = GlobalCapJob(["shards"], base / "out-tasks", cfg, progress=False)._tasks({})
    assert {t["config"]["taxonomy"] for t in tasks} == {str(base / "my-taxonomy.json")}
    shipped = GlobalCapJob(
        ["shards"], base / "out-tasks", cfg.replace(taxonomy="taxonomy-v2"), progress=False
    )
    assert {t["config"]["taxonomy"] for t in shipped._tasks({})} == {"taxonomy-v2"}


def test_from_annotations_of_another_taxonomy_are_refused(base: Path, tax_file: str, tiny_model_dir, capsys):
    first = base / "out-annotated"
    common = [str(base / "shards"), "--cap-scope", "global", "--workers", "1", "--model", str(tiny_model_dir),
              "--no-progress"]  # fmt: skip
    assert main(["filter", *common, "-o", str(first), "--annotate-only", "--taxonomy", tax_file]) == 0
    assert main(["filter", *common, "-o", str(base / "out-from"), "--from-annotations", str(first)]) == 2
    err = capsys.readouterr().err
    assert "gardeners-test (sha256" in err and "taxonomy-v1 (sha256" in err


def test_cli_report_uses_the_taxonomys_forms(stream_run: Path, tax_file: str, capsys):
    from fairstream.stats import CooccurrenceCounts
    from fairstream.stats.scores import attribute_words

    before = CooccurrenceCounts.load(stream_run / "counts_before.json")
    assert set(before.classes()) == {"occupation"}
    assert {kw for _, kw in before.attributes("occupation")} <= set(CUSTOM)
    custom = Taxonomy.load(tax_file)
    if ("occupation", "gardener") in set(before.attributes("occupation")):
        assert "gardenfolk" in attribute_words(before, "occupation", custom)  # kept out of the vocabulary
        assert "gardenfolk" not in attribute_words(before, "occupation")
    out = stream_run.parent / "report-cli"
    argv = ["report", "--before", str(stream_run / "counts_before.json"), "--after",
            str(stream_run / "counts_after.json"), "--stream-stats", str(stream_run / "stats.json"),
            "--taxonomy", tax_file, "-o", str(out)]  # fmt: skip
    assert main(argv) == 0
    report = (out / "report.md").read_text()
    assert "occupation" in report and "gardener" in report


def test_cli_augment_builds_from_a_class_of_the_taxonomy(base: Path, tax_file: str, capsys):
    out = base / "augmented.jsonl"
    argv = ["augment", str(base / "shards" / "part-0.jsonl"), "-o", str(out), "--producer", "occupation",
            "--taxonomy", tax_file, "--no-wsd", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    rows = [json.loads(line) for line in out.open(encoding="utf-8")]
    texts = [r["text"] for r in rows]
    # 4 documents in, 3 mention a biaser: each gets one copy with gardener <-> baker swapped
    assert len(rows) == 4 + 3
    assert any("The bakers who volunteered at the community garden" in t for t in texts)
    assert any(t.startswith("A gardener who opened a shop") for t in texts)
    assert main([*argv[:5], "religion", *argv[6:]]) == 2
    err = capsys.readouterr().err  # the classes of the taxonomy given, not taxonomy-v1's
    assert "'religion' is not a class of gardeners-test; allowed:" in err and "occupation" in err


def test_cli_eval_models_finds_keywords_by_the_taxonomys_forms(
    base: Path, tax_file: str, tiny_model_dir, capsys
):
    labels = base / "labels.jsonl"
    rows = [{"text": "The gardenfolk of the valley were thanked by the mayor for the flowers in the square.",
             "keyword": "gardener", "gloss": "who gardens", "wsd": "yes", "regard": "positive"},
            {"text": "A baker in our street was praised by the neighbours for the bread.", "keyword": "baker",
             "gloss": "who bakes bread", "wsd": "yes", "regard": "positive"}]  # fmt: skip
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    argv = ["eval-models", "--labels", str(labels), "--model", str(tiny_model_dir), "--json"]
    assert main(argv) == 2  # taxonomy-v1 does not know the form "gardenfolk"
    assert "keyword 'gardener' does not occur in the text" in capsys.readouterr().err
    assert main([*argv, "--taxonomy", tax_file]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["n"] == 2


def test_cli_bench_times_the_taxonomys_keywords(base: Path, tax_file: str, tiny_model_dir, capsys):
    argv = ["bench", str(base / "shards"), "--quick", "--max-pairs", "4", "--batch-sizes", "4", "--threads", "1",
            "--backends", "int8", "--device", "cpu", "--model", str(tiny_model_dir), "--no-progress", "--json",
            "--taxonomy", tax_file]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["corpus"]["taxonomy"] == "gardeners-test"
    assert data["keyword_stage"]["mentions"] == sum(CUSTOM.values())
    assert data["end_to_end"]["mentions_judged"] == sum(CUSTOM.values())


# -- the adapters -----------------------------------------------------------------------------------------


def test_hf_mapper_and_its_resume_with_another_taxonomy(config: FilterConfig, tiny_model_dir: Path):
    import datasets

    from fairstream.adapters.hf import ANNOTATION_COLUMN, KEEP_COLUMN, fairstream_map_fn

    mapper = fairstream_map_fn(config, annotate=True)
    ds = datasets.Dataset.from_list(DOCS).map(mapper, batched=True, batch_size=3, keep_in_memory=True)
    check_counts(mapper.stats(), kept=sum(ds[KEEP_COLUMN]))
    keywords = [m["keyword"] for a in ds[ANNOTATION_COLUMN] for s in a["sentences"] for m in s["mentions"]]
    assert sorted(keywords) == sorted(kw for kw, n in CUSTOM.items() for _ in range(n))
    state = mapper.state_dict()
    again = fairstream_map_fn(config)
    again.load_state_dict(state)  # the same taxonomy resumes
    assert again.stats()["attributes"] == mapper.stats()["attributes"]
    with pytest.raises(ConfigError, match=r"saved with taxonomy gardeners-test \(sha256 \w+\) but this stream has "
                       r"taxonomy taxonomy-v1 \(sha256 \w+\)"):  # fmt: skip
        fairstream_map_fn(model=str(tiny_model_dir)).load_state_dict(state)


def test_iterable_dataset_under_two_dataloader_workers(config: FilterConfig, tiny_model_dir: Path):
    from torchdata.stateful_dataloader import StatefulDataLoader

    from fairstream import FairStream
    from fairstream.stream import loader_dataset_states, stats_from_loader_state

    # cap 1 (count, drop nothing): a worker's state reaches the loader with the documents it yields, so
    # the counts of documents a worker drops after its last kept one would be missing from the sum
    config = config.replace(cap=1.0)
    loader = StatefulDataLoader(FairStream(DOCS, config), batch_size=None, num_workers=2)
    kept = list(loader)
    state = loader.state_dict()
    stats = stats_from_loader_state(state).to_dict()
    check_counts(stats, kept=len(kept))
    workers = loader_dataset_states(state)
    assert len(workers) == 2 and {w["taxonomy"] for w in workers} == {Taxonomy.from_dict(TAXONOMY).identity}
    # a resume with another taxonomy is refused in the worker that loads the state, naming both
    resumed = StatefulDataLoader(
        FairStream(DOCS, config.replace(taxonomy="taxonomy-v2")), batch_size=None, num_workers=2
    )
    resumed.load_state_dict(state)
    with pytest.raises(
        ConfigError, match=r"saved with taxonomy gardeners-test .* this stream has taxonomy taxonomy-v2"
    ):
        list(resumed)


def run_datatrove(config: FilterConfig, shards: Path, tmp: Path) -> tuple[list[dict], dict[str, Any]]:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    from fairstream.adapters.datatrove import FairStreamFilter
    from fairstream.io.stats_parts import merge_stats_parts

    step = FairStreamFilter(config, stats_dir=tmp / "fairstream-stats")
    assert step.taxonomy.name == "gardeners-test"  # read where the pipeline is built, sent to the tasks
    LocalPipelineExecutor(
        pipeline=[JsonlReader(str(shards)), step, JsonlWriter(str(tmp / "kept"), compression=None)],
        tasks=1,
        logging_dir=str(tmp / "logs"),
    ).run()
    kept = [json.loads(line) for p in sorted((tmp / "kept").glob("*.jsonl")) for line in p.open()]
    return kept, merge_stats_parts(tmp / "fairstream-stats")


def test_datatrove_step(config: FilterConfig, base: Path, tmp_path: Path, monkeypatch):
    pytest.importorskip("datatrove", reason="datatrove is the 'datatrove' extra")
    monkeypatch.chdir(base)
    kept, stats = run_datatrove(config.replace(taxonomy="my-taxonomy.json"), base / "shards", tmp_path)
    check_counts(stats, kept=len(kept))


def test_ray_adapter_hands_the_loaded_taxonomy_to_its_actors(config: FilterConfig):
    from fairstream.adapters.ray import filter_dataset

    class FakeDataset:
        def map_batches(self, fn, **kwargs):
            return kwargs

    asked = filter_dataset(FakeDataset(), config)
    assert asked["fn_constructor_kwargs"]["taxonomy"].identity == Taxonomy.from_dict(TAXONOMY).identity


@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray", reason="Ray is the 'ray' extra: pip install 'fairstream[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


@pytest.mark.ray
def test_ray_data_adapter(ray_session, config: FilterConfig, tmp_path: Path):
    from fairstream.adapters.ray import filter_dataset
    from fairstream.io.stats_parts import merge_stats_parts

    ray_session.data.DataContext.get_current().execution_options.preserve_order = True
    ds = ray_session.data.from_items(DOCS, override_num_blocks=1)
    kept = filter_dataset(ds, config, stats_dir=tmp_path / "fairstream-stats").take_all()
    check_counts(merge_stats_parts(tmp_path / "fairstream-stats"), kept=len(kept))


@pytest.mark.ray
def test_offline_job_on_ray(ray_session, config: FilterConfig, base: Path, tmp_path: Path):
    from fairstream.jobs import GlobalCapJob

    out = tmp_path / "out-ray"
    summary = GlobalCapJob([base / "shards"], out, config, engine="ray", progress=False).run()
    assert summary["engine"] == "ray" and summary["documents"] == len(DOCS)
    stats = json.loads((out / "stats.json").read_text())
    check_counts(stats, kept=len(output_docs(out)), with_keyword=False)
    assert stats["run"]["taxonomy"] == "gardeners-test"
