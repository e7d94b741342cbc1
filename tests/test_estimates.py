"""Estimated true negative shares: calibration configs, the estimator, and counts that merge exactly."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fairstream.core.estimates import HIST_KEY, estimate_attribute, estimates, expected_count, with_estimates
from fairstream.core.stats import StreamStats
from fairstream.errors import ModelError
from fairstream.models.calibration import (
    N_BINS,
    Calibration,
    bin_probabilities,
    calibration_in,
    calibration_of,
    score_bin,
)
from fairstream.models.names import resolve_model_dir

DOCS = 40


def test_bins_are_monotone_and_cover_the_ends() -> None:
    probs = [0.0, 1e-9, 0.001, 0.2, 0.5, 0.8, 0.999, 1.0, float("nan")]
    bins = [score_bin(p) for p in probs[:-1]]
    assert bins == sorted(bins) and bins[0] == 0 and bins[-1] == N_BINS - 1
    assert score_bin(float("nan")) == 0
    centres = bin_probabilities()
    assert all(score_bin(c) == k for k, c in enumerate(centres))  # each centre lies in its own bin


def test_shipped_default_model_ships_a_calibration_with_a_shift() -> None:
    cal = calibration_in(resolve_model_dir("joint-v6-cascade"))
    assert cal.calibrated and cal.method in ("platt", "isotonic", "temperature")
    assert len(cal.bootstrap) >= 50 and 0.0 < cal.shift_sd < 2.0
    assert list(cal.table) == sorted(cal.table)  # a calibration map is monotone in the model's probability
    assert "dev" in cal.fit_on
    assert (
        calibration_in(resolve_model_dir("joint-v7-fast")).method == "none"
    )  # no out-of-fold fits for its recipe


def test_calibration_round_trips_and_bad_configs_name_the_key(tmp_path: Path) -> None:
    table = tuple(min(1.0, p * 1.2) for p in bin_probabilities())
    cal = Calibration("isotonic", table, (table, table), "test", {"shift": {"sd": 0.3}})
    back = calibration_of({"calibration": {"negative": cal.to_config()}}, "x/config.json")
    assert back.method == "isotonic" and back.shift_sd == 0.3 and len(back.bootstrap) == 2
    assert back.table == pytest.approx(table, abs=1e-6)
    bad = cal.to_config() | {"method": "magic"}
    with pytest.raises(ModelError, match=r"x/config.json: calibration method='magic' is not one of"):
        calibration_of({"calibration": {"negative": bad}}, "x/config.json")
    short = cal.to_config() | {"table": [0.5] * 3}
    with pytest.raises(ModelError, match=f"table must be {N_BINS} probabilities"):
        calibration_of({"calibration": {"negative": short}}, "x/config.json")
    assert calibration_of({}, "x").method == "none"


def test_expected_count_is_the_sum_of_calibrated_probabilities_and_each_variance_widens_it() -> None:
    counts = {score_bin(0.1): 30, score_bin(0.9): 10}
    plain = Calibration.identity()
    c = expected_count(counts, plain)
    p = plain.table
    assert c["estimate"] == pytest.approx(30 * p[score_bin(0.1)] + 10 * p[score_bin(0.9)])
    sampling = 30 * p[score_bin(0.1)] * (1 - p[score_bin(0.1)]) + 10 * p[score_bin(0.9)] * (
        1 - p[score_bin(0.9)]
    )
    assert c["high"] - c["estimate"] == pytest.approx(1.959964 * math.sqrt(sampling), rel=1e-5)
    lower = tuple(x * 0.8 for x in p)
    with_boot = Calibration("platt", p, (p, lower, tuple(min(1.0, x * 1.2) for x in p)), "t")
    with_shift = Calibration("platt", p, (), "t", {"shift": {"sd": 0.5}})
    for wider in (with_boot, with_shift):
        w = expected_count(counts, wider)
        assert w["estimate"] == pytest.approx(c["estimate"])
        assert w["high"] - w["low"] > c["high"] - c["low"]
    assert expected_count({}, plain) == {"n": 0, "estimate": 0.0, "low": 0.0, "high": 0.0}
    # the shift's part taken at Student's t (a handful of kinds of text) instead of the normal quantile
    t = Calibration("platt", p, (), "t", {"shift": {"sd": 0.5, "quantile": 2.57}})
    normal, student = expected_count(counts, with_shift), expected_count(counts, t)
    assert student["high"] - student["estimate"] > normal["high"] - normal["estimate"]
    shift_part = (0.5 * sampling) ** 2
    assert student["high"] - student["estimate"] == pytest.approx(
        math.sqrt(1.959964**2 * sampling + 2.57**2 * shift_part), rel=1e-5
    )


def test_estimate_of_an_attribute_counts_wrong_drops_from_the_dropped_bins() -> None:
    stats = StreamStats()
    for _ in range(8):
        stats.count_person_sentence("x", "neutral", 0.02, kept=True)
    stats.count_person_sentence("x", "negative", 0.9, kept=False)
    stats.count_person_sentence("x", "negative", 0.6, kept=False)
    attr = stats.to_dict()["attributes"]["x"]
    assert attr[HIST_KEY]["dropped"] == {str(score_bin(0.6)): 1, str(score_bin(0.9)): 1}
    est = estimate_attribute(attr, Calibration.identity())
    assert est["before"]["sentences"] == 10 and est["after"]["sentences"] == 8
    assert est["before"]["model_negative_share"] == 0.2 and est["after"]["model_negative_share"] == 0.0
    assert est["dropped"]["model_negative"] == 2
    table = Calibration.identity().table
    assert est["dropped"]["estimated_not_negative"] == pytest.approx(
        2 - table[score_bin(0.9)] - table[score_bin(0.6)], abs=1e-3
    )
    lo, hi = est["dropped"]["interval"]
    assert 0 <= lo <= est["dropped"]["estimated_not_negative"] <= hi <= 2


def test_old_stats_without_bins_give_no_attribute_estimates() -> None:
    zero = {"negative": 0, "neutral": 0, "positive": 0}
    old = {
        "attributes": {
            "x": {
                "mentions": 1,
                "person_sentences": 1,
                "before": {**zero, "negative": 1},
                "after": zero,
                "dropped": 1,
            }
        }
    }
    block = estimates(old, Calibration.identity())
    assert block["attributes"] == {} and block["pooled"]["before"]["sentences"] == 0
    assert StreamStats.from_dict(old) + StreamStats.from_dict(old)  # merging old and new stats works


@pytest.fixture(scope="module")
def sample(docs) -> list[dict]:
    return docs[:DOCS]


def _run(docs: list[dict], **settings):
    from fairstream.core import FilterStep
    from fairstream.core.windows import IndexedDocument

    step = FilterStep(**settings)
    results = list(step.filter_documents(IndexedDocument(i, d) for i, d in enumerate(docs)))
    return step, results


def test_counts_of_parts_add_up_to_the_whole_and_so_do_the_estimates(sample) -> None:
    whole, _ = _run(sample, cap=1.0)  # cap 1: no decision depends on what came before
    first, _ = _run(sample[:17], cap=1.0)
    second, _ = _run(sample[17:], cap=1.0)
    merged = StreamStats.from_dict(first.stats()) + StreamStats.from_dict(second.stats())
    full = whole.stats()
    assert merged.to_dict()["attributes"] == full["attributes"]
    assert with_estimates(merged.to_dict(), whole.calibration)["estimates"] == full["estimates"]
    assert full["estimates"]["calibrated"] and full["estimates"]["pooled"]["before"]["sentences"] > 10


def test_state_dict_resume_carries_the_bins(sample) -> None:
    from fairstream.core import FilterStep
    from fairstream.core.windows import IndexedDocument

    whole, _ = _run(sample, cap=0.05, warmup=0)
    a = FilterStep(cap=0.05, warmup=0)
    list(a.filter_documents(IndexedDocument(i, d) for i, d in enumerate(sample[:20])))
    b = FilterStep(cap=0.05, warmup=0)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    list(b.filter_documents(IndexedDocument(i, d) for i, d in enumerate(sample[20:], start=20)))
    assert b.stats()["attributes"] == whole.stats()["attributes"]
    assert b.stats()["estimates"] == whole.stats()["estimates"]


def test_stream_and_global_scope_write_the_same_estimates(sample, tmp_path: Path) -> None:
    """Counted from the stream's own judgements or from the global scope's annotations, the bins agree."""
    from fairstream.cli import main

    shards = tmp_path / "in"
    shards.mkdir()
    for k in range(2):
        part = sample[k::2]
        (shards / f"part-{k}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in part), encoding="utf-8")
    out = {}
    for scope in ("stream", "global"):
        rc = main(
            [
                "filter",
                str(shards),
                "-o",
                str(tmp_path / scope),
                "--cap",
                "1",
                "--cap-scope",
                scope,
                "--no-progress",
            ]
        )
        assert rc in (0, None)
        out[scope] = json.loads((tmp_path / scope / "stats.json").read_text(encoding="utf-8"))
    assert out["stream"]["estimates"] == out["global"]["estimates"]
    # the document and sentence counts a summary prints agree too (global once counted no document with a keyword)
    same = ("docs_in", "docs_out", "docs_empty", "docs_with_keyword", "sentences_candidate",
            "sentences_out_of_length", "sentences_dropped")  # fmt: skip
    counts = {scope: {k: out[scope]["counters"].get(k) for k in same} for scope in out}
    assert counts["stream"] == counts["global"] and counts["global"]["docs_with_keyword"] > 0, counts
    for scope in ("stream", "global"):  # both printed summaries say what is guaranteed and what estimated
        text = (tmp_path / scope / "summary.txt").read_text(encoding="utf-8")
        assert "guaranteed (a bound on the model's decisions" in text and "estimated (calibrated" in text, (
            text
        )
    assert out["stream"]["estimates"]["pooled"]["before"]["sentences"] > 10
