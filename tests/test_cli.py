from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from fairstream.cli import build_parser, main, sample_corpus_path

COMMANDS = ["filter", "detect", "taxonomy", "eval-models", "report", "seegull-recall", "annotate"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: fairstream {command}" in out and "--config" in out


def test_taxonomy_command(capsys):
    assert main(["taxonomy"]) == 0
    out = capsys.readouterr().out
    assert "taxonomy-v1: 10 classes, 97 keywords" in out and "nationality (63)" in out


def test_detect_command_on_sample_corpus(tmp_path: Path, capsys):
    out = tmp_path / "m.jsonl"
    assert main(["detect", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.open()]
    assert len(rows) == 300
    mentions = [m for r in rows for s in r["sentences"] for m in s["mentions"]]
    assert {"muslim", "mexican", "white"} <= {m["keyword"] for m in mentions}


def test_config_file_sets_defaults_and_rejects_unknown_keys(tmp_path: Path, capsys):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("min_tokens = 3\nmax_tokens = 400\n")
    out = tmp_path / "m.jsonl"
    assert main(["detect", "--config", str(cfg), "-o", str(out)]) == 0
    n_loose = sum(len(json.loads(line)["sentences"]) for line in out.open())
    assert main(["detect", "-o", str(out)]) == 0
    n_default = sum(len(json.loads(line)["sentences"]) for line in out.open())
    assert n_loose > n_default
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"cap": 0.1, "colour": "red"}))
    assert main(["filter", str(sample_corpus_path()), "--config", str(bad)]) == 2
    assert "unknown option(s) ['colour']" in capsys.readouterr().err


def test_errors_are_one_line_messages(tmp_path: Path, capsys):
    assert main(["detect", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["eval-models", "--labels", str(tmp_path / "x.jsonl"), "--model", str(tmp_path)]) == 2
    assert "model config not found" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["filter", "--granularity", "word"])


def write_shards(folder: Path, docs: list[dict], n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        p = folder / f"part-{i}.jsonl.gz"
        with gzip.open(p, "wt") as f:
            for d in docs[i::n]:
                f.write(json.dumps(d) + "\n")
        paths.append(p)
    return paths


def read_out(folder: Path) -> list[dict]:
    rows = []
    for p in sorted((folder / "data").rglob("*.jsonl.gz")):
        with gzip.open(p, "rt") as f:
            rows += [json.loads(line) for line in f]
    return rows


def test_filter_job_resumes_after_interruption(tiny_model_dir: Path, tmp_path: Path, monkeypatch, capsys):
    from fairstream.filter_job import FilterJob

    docs = [json.loads(line) for line in sample_corpus_path().open()]
    shards = write_shards(tmp_path / "in", docs, 3)
    args = ["filter", *map(str, shards), "--model", str(tiny_model_dir), "--cap", "0.05", "--no-progress"]
    assert main([*args, "-o", str(tmp_path / "full")]) == 0
    summary = capsys.readouterr().out
    assert "documents: 300 in" in summary and "report.html" in summary
    full = read_out(tmp_path / "full")
    assert (tmp_path / "full" / "report" / "report.html").is_file()

    # interrupt the second shard half-way: the first shard and the state stay, nothing half-written
    calls = {"n": 0}
    original = FilterJob._step

    def failing_step(self):
        step = original(self)
        calls["n"] += 1
        if calls["n"] == 2:
            real_decide = step.decide

            def decide(index, *a, **k):
                if index == 40:
                    raise KeyboardInterrupt
                return real_decide(index, *a, **k)

            step.decide = decide  # type: ignore[method-assign]
        return step

    monkeypatch.setattr(FilterJob, "_step", failing_step)
    assert main([*args, "-o", str(tmp_path / "resumed")]) == 130
    assert [p.name for p in (tmp_path / "resumed" / "data").iterdir() if not p.name.startswith(".")] == [
        "part-0.jsonl.gz"
    ]
    monkeypatch.setattr(FilterJob, "_step", original)
    assert main([*args, "-o", str(tmp_path / "resumed")]) == 0
    assert read_out(tmp_path / "resumed") == full
    a = json.loads((tmp_path / "full" / "stats.json").read_text())
    b = json.loads((tmp_path / "resumed" / "stats.json").read_text())
    assert a["attributes"] == b["attributes"] and a["counters"]["docs_in"] == b["counters"]["docs_in"] == 300
    # other settings in the same folder are refused
    assert (
        main([*args[:-3], "--cap", "0.2", "--model", str(tiny_model_dir), "-o", str(tmp_path / "resumed")])
        == 2
    )
    assert "other settings" in capsys.readouterr().err
    shutil.rmtree(tmp_path / "in")


def test_report_and_seegull_commands_from_filter_output(
    tiny_model_dir: Path, tmp_path: Path, shared_dir: Path, capsys
):
    out = tmp_path / "o"
    args = ["filter", str(sample_corpus_path()), "--model", str(tiny_model_dir), "-o", str(out)]
    assert main([*args, "--no-progress", "--no-report"]) == 0
    assert main(["report", "--before", str(out / "counts_before.json"), "--after", str(out / "counts_after.json"),
                 "-o", str(tmp_path / "rep")]) == 0  # fmt: skip
    assert (tmp_path / "rep" / "report.html").is_file()
    capsys.readouterr()
    assert main(["seegull-recall", "--counts", str(out / "counts_before.json"),
                 "--seegull-dir", str(shared_dir / "data/bias/seegull")]) == 0  # fmt: skip
    assert "recall@" in capsys.readouterr().out.lower()
