"""Shipped models are selectable by name; a folder path always wins; a wrong name says what exists."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fairstream.errors import ModelError
from fairstream.models.runtime import (
    DEFAULT_MODEL,
    JointModel,
    default_model_dir,
    resolve_model_dir,
    shipped_model_names,
)


def test_every_shipped_name_resolves_to_its_package_folder():
    names = shipped_model_names()
    assert DEFAULT_MODEL in names
    for name in names:
        assert resolve_model_dir(name) == default_model_dir(name)
        assert resolve_model_dir(Path(name)) == default_model_dir(name)  # argparse type=Path gives this
        assert JointModel(name).model_dir == default_model_dir(name)
    assert resolve_model_dir(None) == default_model_dir()


def test_an_existing_folder_of_the_same_name_wins(tmp_path, monkeypatch):
    local = tmp_path / DEFAULT_MODEL
    shutil.copytree(default_model_dir(), local)
    monkeypatch.chdir(tmp_path)
    assert resolve_model_dir(DEFAULT_MODEL) == local.relative_to(tmp_path)
    assert JointModel(DEFAULT_MODEL).model_dir.resolve() == local


def test_an_unknown_name_lists_the_shipped_models(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelError) as err:
        JointModel("no-such-model")
    message = str(err.value)
    assert "no-such-model" in message
    for name in shipped_model_names():
        assert name in message


def test_cli_filter_takes_a_shipped_name_and_says_which_model_ran(tmp_path, capsys):
    import json

    from fairstream.cli import main, sample_corpus_path

    docs = [json.loads(line) for line in sample_corpus_path().open(encoding="utf-8")][:20]
    shard = tmp_path / "in.jsonl"
    shard.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    for name in shipped_model_names():
        out = tmp_path / name
        assert main(["filter", str(shard), "-o", str(out), "--model", name, "--no-progress"]) == 0
        expected = JointModel(name).name
        assert f"model: {expected}" in capsys.readouterr().out
        stats = json.loads((out / "stats.json").read_text())
        c = stats["counters"]
        assert c["docs_in"] == 20 and c["docs_out"] + c.get("docs_dropped", 0) == 20
        assert stats["run"]["model"] == expected


def test_help_texts_list_every_shipped_model_default_first_without_loading_numpy():
    import subprocess
    import sys

    from fairstream.models.names import shipped_models_text

    text = shipped_models_text()
    assert text.startswith(f"{DEFAULT_MODEL} (default), ")
    assert sorted(text.replace(" (default)", "").split(", ")) == shipped_model_names()
    # the CLI builds these help texts at start-up: listing the models must not load the runtime
    code = "import sys, fairstream.cli; print('numpy' in sys.modules, 'onnxruntime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    help_text = subprocess.run(
        [sys.executable, "-m", "fairstream", "eval-models", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    unwrapped = "".join(help_text.split())  # argparse wraps lines, at hyphens too
    assert all(name in unwrapped for name in shipped_model_names())
