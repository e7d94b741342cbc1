"""The torch-free core: one config object, one label schema, the filter step and its state."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from fairstream.cli import build_parser, sample_corpus_path
from fairstream.core import ANNOTATION_SCHEMA_VERSION, FilterConfig, FilterStep, remove_spans
from fairstream.errors import ConfigError, InvalidDocumentError, cli_interface

PACKAGE = Path(__file__).resolve().parent.parent / "fairstream"


def sample_docs() -> list[dict]:
    return [json.loads(line) for line in sample_corpus_path().open(encoding="utf-8")]


# -- config -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("setting", "value", "allowed"),
    [
        ("cap", 1.5, "[0, 1]"),
        ("cap", float("nan"), "[0, 1]"),
        ("warmup", -1, ">= 0"),
        ("seed", 0.5, ">= 0"),
        ("lookahead", 0, ">= 1"),
        ("batch_size", 0, ">= 1"),
        ("cache_size", -3, ">= 0"),
        ("max_doc_chars", -1, "no limit"),
        ("caps", {"muslim": 2.0}, "[0, 1]"),
        ("granularity", "word", "('sentence', 'document')"),
        ("splitter", "spacy", "('auto', 'punkt', 'fallback')"),
        ("on_error", "ignore", "('raise', 'skip')"),
        ("device", "tpu", "one of cpu, cuda, cuda:N, auto"),
        ("device", "cuda:x", "one of cpu, cuda, cuda:N, auto"),
    ],
)
def test_bad_setting_names_itself_and_the_allowed_values(setting, value, allowed):
    with pytest.raises(ConfigError) as info:
        FilterConfig(**{setting: value})
    message = str(info.value)
    assert message.startswith(f"{setting}=") and allowed in message and "\n" not in message
    with cli_interface(), pytest.raises(ConfigError, match=f"^--{setting.replace('_', '-')} "):
        FilterConfig(**{setting: value})


def test_token_bounds_must_be_ordered():
    with pytest.raises(ConfigError, match="min_tokens=20 must be less than max_tokens=10"):
        FilterConfig(min_tokens=20, max_tokens=10)


def test_config_is_frozen_and_round_trips_through_json():
    config = FilterConfig(cap=0.05, caps={"muslim": 0.02}, granularity="document", lookahead=7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.cap = 0.5  # type: ignore[misc]
    assert FilterConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    assert config.replace(seed=3).seed == 3 and config.seed == 0


def test_unknown_config_key_is_named_with_the_allowed_ones():
    with pytest.raises(ConfigError, match=r"c.json: unknown setting\(s\) \['capp'\]; allowed: \[.*'cap'"):
        FilterConfig.from_dict({"capp": 0.1}, where="c.json")


def test_every_setting_is_a_filter_option_with_help():
    sub = next(
        a for a in build_parser()._subparsers._group_actions[0].choices.values() if a.prog.endswith("filter")
    )
    help_text = " ".join(sub.format_help().split())
    by_dest = {a.dest: a for a in sub._actions}
    for f in dataclasses.fields(FilterConfig):
        flag = "--" + f.name.replace("_", "-")
        assert flag in help_text, flag
        assert by_dest[f.name].help and len(by_dest[f.name].help) > 10, f.name


def test_cli_options_and_config_file_build_the_same_config(tmp_path: Path):
    from fairstream.cli.options import apply_config

    argv = ["filter", "x.jsonl", "--lookahead", "7", "--caps", "muslim=0.02", "religion=0.05",
            "--min-tokens", "3", "--splitter", "fallback", "--max-doc-chars", "0"]  # fmt: skip
    from_flags = FilterConfig.from_namespace(build_parser().parse_args(argv))
    assert from_flags == FilterConfig(
        lookahead=7,
        caps={"muslim": 0.02, "religion": 0.05},
        min_tokens=3,
        splitter="fallback",
        max_doc_chars=0,
    )
    assert from_flags.doc_char_limit is None
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"lookahead": 7, "caps": {"muslim": 0.02, "religion": 0.05}, "min-tokens": 3,
                               "splitter": "fallback", "max_doc_chars": 0}))  # fmt: skip
    args = apply_config(build_parser(), ["filter", "x.jsonl", "--config", str(cfg)])
    assert FilterConfig.from_namespace(args) == from_flags


def test_bad_caps_pair_on_the_command_line_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["filter", "x.jsonl", "--caps", "muslim"])
    assert "KEYWORD_OR_CLASS=CAP" in capsys.readouterr().err


# -- schema -----------------------------------------------------------------------------------------
def test_regard_and_wsd_labels_are_defined_once():
    """No module but core/schema.py spells out a tuple of the label names (any order)."""
    regard = re.compile(r"\(\s*\"(negative|neutral|positive)\",\s*\"(negative|neutral|positive)\",")
    wsd = re.compile(r"\(\s*\"(no|yes|unsure)\",\s*\"(no|yes|unsure)\",")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "schema.py" and path.parent.name == "core":
            continue
        text = path.read_text(encoding="utf-8")
        if regard.search(text) or wsd.search(text):
            offenders.append(str(path.relative_to(PACKAGE)))
    assert offenders == []


# -- the step ---------------------------------------------------------------------------------------
def test_step_results_match_the_stream(tiny_model):
    from fairstream.stream.dataset import FairStream

    docs = sample_docs()
    config = FilterConfig(cap=0.05, warmup=20, lookahead=16)
    step = FilterStep(config, model=tiny_model)
    results = []
    for start in range(0, len(docs), 16):
        results += step.process(docs[start : start + 16], start=start)
    streamed = list(FairStream(docs, config, model=tiny_model))
    assert [r.text for r in results if r.kept] == [d["text"] for d in streamed]
    assert any(r.dropped for r in results)
    for doc, r in zip(docs, results, strict=True):
        assert r.text == remove_spans(doc["text"], [(d.start, d.end) for d in r.dropped])
        assert all(d.reason in ("cap-bound", "cap-sampled-out") for d in r.dropped)
        assert r.annotation["schema_version"] == ANNOTATION_SCHEMA_VERSION
        assert r.annotation["doc_kept"] is r.kept
    assert step.stats()["counters"]["docs_in"] == len(docs)


def test_step_state_dict_is_plain_json_and_resumes_exactly(tiny_model):
    docs = sample_docs()
    config = FilterConfig(cap=0.05, warmup=20, seed=7)
    whole = FilterStep(config, model=tiny_model)
    expected = [r.text for r in whole.process(docs[:150]) + whole.process(docs[150:], start=150)]
    first = FilterStep(config, model=tiny_model)
    head = [r.text for r in first.process(docs[:150])]
    state = json.loads(json.dumps(first.state_dict()))
    second = FilterStep(config, model=tiny_model)
    second.load_state_dict(state)
    tail = [r.text for r in second.process(docs[150:], start=150)]
    assert head + tail == expected
    a, b = whole.stats(), second.stats()
    assert a["attributes"] == b["attributes"] and a["counters"]["docs_in"] == b["counters"]["docs_in"]


def test_bad_document_raises_before_the_batch_changes_state(tiny_model):
    step = FilterStep(FilterConfig(cap=0.05), model=tiny_model)
    docs = [*sample_docs()[:5], {"id": "bad", "text": None}]
    before = json.dumps(step.state_dict())
    with pytest.raises(InvalidDocumentError, match=r"document 15 \(id='bad'\) field 'text'"):
        step.process(docs, start=10)
    assert json.dumps(step.state_dict()) == before
    skipping = FilterStep(FilterConfig(cap=0.05, on_error="skip"), model=tiny_model)
    results = skipping.process(docs)
    assert [r.kept for r in results][-1] is False and results[-1].error is not None
    assert skipping.stats()["skipped"] == {results[-1].error.reason: 1}
