"""Errors a person can act on: one line naming the flag or path, exit 2, nothing written."""

from __future__ import annotations

import argparse
import ast
import errno
import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from fairstream.cli import build_parser, main, sample_corpus_path
from fairstream.errors import option

ROOT = Path(__file__).resolve().parent.parent


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("fairstream: error: ") and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("cap", ["-0.5", "1.5", "nan", "inf", "-inf"])
def test_bad_cap_is_refused_before_any_work(cap, tmp_path: Path, monkeypatch, capsys):
    import fairstream.filter_job

    def no_model(*a, **k):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(fairstream.filter_job, "load_model_for", no_model)
    out = tmp_path / "out"
    assert main(["filter", str(sample_corpus_path()), f"--cap={cap}", "-o", str(out)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert f"--cap {float(cap)!r}" in line and "[0, 1]" in line
    assert not out.exists()
    # the same from a config file, which argparse does not type-check
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"cap": float(cap) if math.isfinite(float(cap)) else "inf"}))
    assert main(["filter", str(sample_corpus_path()), "--config", str(cfg), "-o", str(out)]) == 2
    assert "--cap" in one_line_error(capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--min-attribute-share", "0"], "--min-attribute-share"),
        (["--seed", "-1"], "--seed"),
        (["--top-n", "0"], "--top-n"),
        (["--max-doc-chars", "-5"], "--max-doc-chars"),
        (["--text-field", ""], "--text-field"),
    ],
)
def test_other_option_ranges(args, flag, tmp_path: Path, capsys):
    assert main(["filter", str(sample_corpus_path()), *args, "-o", str(tmp_path / "o")]) == 2
    assert flag in one_line_error(capsys.readouterr().err)
    assert not (tmp_path / "o").exists()


def test_filter_requires_inputs(capsys):
    with pytest.raises(SystemExit) as info:
        main(["filter", "-o", "x"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: fairstream filter" in err and "required: inputs" in err


def test_unknown_option_shows_the_subcommand_usage(capsys):
    with pytest.raises(SystemExit) as info:
        main(["filter", str(sample_corpus_path()), "--bogus"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: fairstream filter" in err and "unrecognized arguments: --bogus" in err


def test_version_and_python_m(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    from fairstream import __version__

    assert capsys.readouterr().out.strip() == f"fairstream {__version__}"
    run = subprocess.run(
        [sys.executable, "-m", "fairstream", "--version"], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 0 and run.stdout.strip() == f"fairstream {__version__}"


def test_every_option_has_help():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for parsers in [parser, *subparsers.choices.values()]:
        for action in parsers._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{parsers.prog} {action.option_strings or action.dest}")
    assert missing == []


def test_messages_suggest_only_options_that_exist():
    """Every ``option("name")`` in the package maps to a flag of some command."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {s for p in subparsers.choices.values() for a in p._actions for s in a.option_strings}
    used = set()
    for path in (ROOT / "fairstream").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "option"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                used.add(node.args[0].value)
    assert {"on_error", "text_field", "max_doc_chars", "output_dir"} <= used
    from fairstream.errors import cli_interface

    with cli_interface():
        missing = {name for name in used if option(name) not in flags}
    assert missing == set()


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


GOOD = "A plain sentence about the weather without any protected words in it at all, really none."


@pytest.mark.parametrize(
    ("row", "extra", "expected"),
    [
        ({"id": "b", "text": None}, [], "--on-error skip"),
        ({"id": "b", "body": GOOD}, [], "--text-field"),
        ({"id": "b", "text": GOOD}, ["--max-doc-chars", "20"], "--max-doc-chars"),
    ],
)
def test_messages_name_cli_flags_file_and_line(row, extra, expected, tiny_model_dir, tmp_path, capsys):
    shard = write_jsonl(tmp_path / "s.jsonl", [{"id": "a", "text": "short"}, row])
    args = ["filter", str(shard), "--model", str(tiny_model_dir), "-o", str(tmp_path / "o"), "--no-progress"]
    assert main([*args, *extra]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert f"{shard}:2 (id='b')" in line and expected in line
    assert "on_error=" not in line and "text_field=" not in line and "max_doc_chars=" not in line
    # with --on-error skip the same run goes on and counts the record
    assert main([*args, *extra, "--on-error", "skip"]) == 0
    stats = json.loads((tmp_path / "o" / "stats.json").read_text())
    assert sum(stats["skipped"].values()) == 1 and stats["counters"]["docs_in"] == 2


def test_python_messages_name_keyword_arguments(tiny_model):
    from fairstream.errors import InvalidDocumentError
    from fairstream.stream.dataset import FairStream

    with pytest.raises(InvalidDocumentError, match=r"pass on_error='skip'") as info:
        list(FairStream([{"text": None}], model=tiny_model))
    assert "--on-error" not in str(info.value)
    with pytest.raises(InvalidDocumentError, match=r"set text_field= or pass on_error='skip'"):
        list(FairStream([{"body": "x"}], model=tiny_model))


def test_output_problems_are_one_line(tiny_model_dir: Path, tmp_path: Path, monkeypatch, capsys):
    base = ["filter", str(sample_corpus_path()), "--model", str(tiny_model_dir), "--no-progress"]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # -o that is a file
    assert main([*base, "-o", str(blocker)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert str(blocker) in line and "not a folder" in line and "--output" in line
    # an output folder that cannot be created (its parent is a file)
    assert main([*base, "-o", str(blocker / "out")]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert str(blocker / "out") in line and "cannot create" in line
    # disk full while writing a shard
    shard = tmp_path / "in.jsonl.gz"
    with gzip.open(shard, "wt") as f:
        f.write(sample_corpus_path().read_text())

    def disk_full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gzip.GzipFile, "write", disk_full)
    args = ["filter", str(shard), "--model", str(tiny_model_dir), "--no-progress", "-o", str(tmp_path / "o")]
    assert main(args) == 2
    line = one_line_error(capsys.readouterr().err)
    assert str(tmp_path / "o" / "data" / "in.jsonl.gz") in line and "No space left on device" in line
    assert not list((tmp_path / "o" / "data").iterdir())  # no half-written shard or temporary file
    # --debug keeps the traceback
    from fairstream.errors import OutputError

    with pytest.raises(OutputError):
        main([*args, "--debug"])


def test_report_inputs_missing_or_wrong(tmp_path: Path, capsys):
    assert main(["report", "--before", str(tmp_path / "nope.json")]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert "--before" in line and "nope.json" in line and "no such file" in line
    wrong = tmp_path / "stats.json"
    wrong.write_text(json.dumps({"counters": {}}))
    assert main(["report", "--before", str(wrong)]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert "--before" in line and "stats.json" in line and "not a counts file" in line
    garbage = tmp_path / "g.json"
    garbage.write_bytes(b"\x00\x01 not json")
    assert main(["seegull-recall", "--counts", str(garbage)]) == 2
    assert "--counts" in one_line_error(capsys.readouterr().err)


def test_eval_models_json_is_strict_and_says_no_data(tiny_model_dir: Path, tmp_path: Path, capsys):
    # two classes; "religion" has no person (wsd yes) item, so its regard scores have no data
    rows = [
        {"uid": "1", "text": "Many Mexican families moved to the valley and opened small bakeries there.",
         "keyword": "mexican", "class": "nationality", "gloss": "from Mexico", "wsd": "yes", "regard": "positive"},
        {"uid": "2", "text": "The Muslim calendar follows the phases of the moon through the year.",
         "keyword": "muslim", "class": "religion", "gloss": "who follow Islam", "wsd": "no", "regard": None},
    ]  # fmt: skip
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["eval-models", "--labels", str(labels), "--model", str(tiny_model_dir), "--json"]) == 0
    out = capsys.readouterr().out

    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    result = json.loads(out, parse_constant=refuse)
    religion = result["per_class"]["religion"]
    assert religion["regard_n"] == 0
    assert religion["regard_macro_f1"] is None and religion["regard_micro_f1"] is None
    assert set(religion["regard_f1"].values()) == {None}
    assert religion["negative_precision"] is None and religion["negative_recall"] is None
    assert set(religion["regard_precision"].values()) == set(religion["regard_recall"].values()) == {None}
    assert result["metrics"]["regard_recall"]["positive"] in (0.0, 1.0)  # one positive gold item
    assert result["metrics"]["negative_recall"] is None  # no negative gold item: no data, not 0
    assert main(["eval-models", "--labels", str(labels), "--model", str(tiny_model_dir)]) == 0
    table = capsys.readouterr().out
    assert "no data" in table and "nan" not in table
    assert "negative precision" in table and "negative recall" in table


def test_detect_on_error_skip_skips_bad_documents(tmp_path: Path, capsys):
    shard = write_jsonl(tmp_path / "s.jsonl", [{"id": "a", "text": GOOD}, {"id": "b", "text": None}])
    out = tmp_path / "m.jsonl"
    assert main(["detect", str(shard), "-o", str(out), "--no-progress"]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert f"{shard}:2 field 'text'" in line and "--on-error skip" in line
    assert main(["detect", str(shard), "-o", str(out), "--on-error", "skip", "--no-progress"]) == 0
    assert "1 bad records skipped" in capsys.readouterr().out
    assert [json.loads(line)["id"] for line in out.open()] == ["a"]


def test_every_commands_defaults_pass_the_option_checks():
    """The range rules apply by option name to every command: none may reject a command's own default."""
    from fairstream.cli.options import check_options

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        defaults = {a.dest: a.default for a in sub._actions if a.dest != "help"}
        check_options(argparse.Namespace(**defaults, _subparser=sub, command=name))


def test_a_reader_that_stops_early_is_not_an_error():
    """``fairstream ... | head -1``: the pipe closes under the printing; no traceback, no error line."""
    import fcntl
    import os

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ: a pipe smaller than what the command prints
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairstream", "taxonomy", "--json"],
        stdout=write_end,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as out:
        assert out.read(1) == b"{"
    # closed as head closes it after its line
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.wait(timeout=60) == 141 and "Traceback" not in err and "error" not in err, err
