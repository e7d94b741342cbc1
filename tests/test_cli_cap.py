"""``fairstream filter --warmup``: the cap's warm-up from the command line and config files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairstream.cli import build_parser, main, sample_corpus_path
from fairstream.summary import attribute_rows


def test_help_states_the_warmup_next_to_the_cap(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["filter", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--warmup WARMUP" in text and "0 = strict" in text
    assert "it holds once an attribute has --warmup kept sentences" in text


def run_filter(tmp_path: Path, name: str, *extra: str) -> dict:
    out = tmp_path / name
    args = [
        "filter",
        str(sample_corpus_path()),
        "-o",
        str(out),
        "--no-progress",
        "--no-report",
        "--cap",
        "0.05",
    ]
    assert main([*args, *extra]) == 0
    return json.loads((out / "stats.json").read_text())


def test_warmup_0_keeps_every_attribute_within_the_cap_and_costs_drops(tiny_model_dir: Path, tmp_path: Path):
    model = ["--model", str(tiny_model_dir)]
    loose = run_filter(tmp_path, "loose", *model)
    strict = run_filter(tmp_path, "strict", *model, "--warmup", "0")
    assert loose["run"]["warmup"] == 100 and strict["run"]["warmup"] == 0
    assert any(r.over_cap for r in attribute_rows(loose))  # the tiny random model: many negatives
    assert not any(r.over_cap for r in attribute_rows(strict))
    assert strict["counters"]["sentences_dropped"] > loose["counters"]["sentences_dropped"]

    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"warmup": 0}))
    from_config = run_filter(tmp_path, "config", *model, "--config", str(config))
    assert from_config["run"]["warmup"] == 0
    assert from_config["counters"] == strict["counters"] | {
        "model_calls": from_config["counters"]["model_calls"]
    }


@pytest.mark.parametrize("bad", ["-1", "x", "1.5"])
def test_bad_warmup_is_one_line_naming_the_option(bad: str, tmp_path: Path, capsys):
    try:
        code = main(["filter", str(sample_corpus_path()), "-o", str(tmp_path / "o"), "--warmup", bad])
    except SystemExit as exc:  # argparse's own usage error for a value that is not an int
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and "--warmup" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()  # rejected before any work
