from __future__ import annotations

import re

from fairstream.core.estimates import with_estimates
from fairstream.models.calibration import Calibration, bin_probabilities, score_bin
from fairstream.summary import WIDTH, attribute_rows, estimate_cell, format_summary, not_negative_cell


def attr(n: int, neg_before: int, kept: int, neg_after: int) -> dict:
    return {
        "mentions": n,
        "person_sentences": n,
        "before": {"negative": neg_before, "neutral": n - neg_before, "positive": 0},
        "after": {"negative": neg_after, "neutral": kept - neg_after, "positive": 0},
        "dropped": n - kept,
    }


def summary_of(attributes: dict, warmup: int = 100) -> dict:
    stats = {
        "counters": {
            "docs_in": 50,
            "docs_out": 48,
            "docs_dropped": 2,
            "docs_modified": 5,
            "sentences_candidate": 400,
            "sentences_dropped": 30,
        },
        "skipped": {},
        "attributes": attributes,
    }
    run = {"cap": 0.01, "warmup": warmup, "model": "m", "model_quality": None}
    return {"output_dir": "out", "shards": 1, "stats": stats, "run": run}


def rows_of(text: str) -> dict[str, str]:
    """The table's rows by attribute (an attribute above its cap is starred)."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^  (\w+)\*?\s+\d+\s+.*$", text, re.M)}


NEG_BIN, OK_BIN = score_bin(0.9), score_bin(0.05)  # where the model's negative / other sentences fall


def with_bins(a: dict, wrongly_dropped: int = 0) -> dict:
    """``a`` with the per-bin counts the filter keeps: model-negative sentences in a high bin.

    ``wrongly_dropped`` of the dropped sentences sit in the low bin (the model dropped them though
    its P(negative) was low: the cap drops only model-negative ones, so this only tests the sums).
    """
    kept = sum(a["after"].values())
    neg_dropped = a["dropped"] - wrongly_dropped
    a["p_negative_bins"] = {
        "kept": {str(NEG_BIN): a["after"]["negative"], str(OK_BIN): kept - a["after"]["negative"]},
        "dropped": {str(NEG_BIN): neg_dropped, str(OK_BIN): wrongly_dropped},
    }
    return a


def calibrated(scale: float = 0.8) -> Calibration:
    """A fitted-looking calibration: the model's probabilities shrunk, with 3 bootstrap refits."""
    base = [min(1.0, p * scale + 0.02) for p in bin_probabilities()]
    refits = tuple(tuple(min(1.0, p * f) for p in base) for f in (0.9, 1.0, 1.1))
    return Calibration("isotonic", tuple(base), refits, "test labels (3 sets)")


def estimated_summary(calibration: Calibration | None = None, warmup: int = 100) -> tuple[dict, str]:
    attributes = {
        "alpha": with_bins(attr(200, 40, 170, 1), wrongly_dropped=3),
        "beta": with_bins(attr(60, 10, 52, 0)),
        "tiny": with_bins(attr(3, 1, 3, 1)),  # above the cap, under the warm-up
        "quiet": with_bins(attr(20, 0, 20, 0)),  # nothing dropped
    }
    summary = summary_of(attributes, warmup=warmup)
    summary["stats"] = with_estimates(summary["stats"], calibration or Calibration.identity())
    return summary, format_summary(summary)


def test_table_shows_every_attribute_above_the_cap_and_no_empty_rows():
    attributes = {f"busy{i:02d}": attr(300, 40 + i, 265 + i, 2) for i in range(15)}  # many negatives, in cap
    attributes["tiny"] = attr(3, 1, 3, 1)  # 1 negative of 3 kept: 33% > 1%, under warm-up, few negatives
    attributes["ghost"] = attr(0, 0, 0, 0)  # mentioned, never in its person sense
    text = format_summary(summary_of(attributes))
    rows = rows_of(text)
    assert "tiny" in rows and rows["tiny"].startswith("  tiny*")  # starred: above its cap
    assert "ghost" not in text
    assert sum(1 for kw in rows if kw.startswith("busy")) == 10  # top 10 within the cap ...
    assert "5 more attributes, all within the cap" in text  # ... and the rest counted, not hidden
    assert "* 1 attribute above the cap (tiny)" in text and "--warmup 0" in text
    assert "documents: 50 in = 48 out" in text and "30 dropped (7.5%)" in text
    assert "warm-up 100" in text


def test_strict_run_and_a_clean_table():
    text = format_summary(summary_of({"a": attr(200, 20, 180, 1)}, warmup=0))
    assert "strict (warm-up 0" in text and "every attribute is within its cap" in text
    assert "above the cap" not in text and "*" not in text


def test_rows_count_only_attributes_with_person_sentences_and_resolve_caps():
    stats = {"attributes": {"a": attr(10, 5, 6, 1), "b": attr(0, 0, 0, 0), "c": attr(4, 1, 4, 1)}}
    rows = attribute_rows(stats, {"cap": 0.5, "caps": {"a": 0.1}, "warmup": 5})
    assert [r.keyword for r in rows] == ["a", "c"]
    a, c = rows
    assert a.cap == 0.1 and a.over_cap  # 1 of 6 kept = 16.7% > 10%, with 6 >= warm-up 5
    assert a.reason.startswith("6 kept >= warm-up 5")
    assert not c.over_cap  # 1 of 4 = 25% <= 50%
    assert attribute_rows(stats)[0].cap is None and not attribute_rows(stats)[0].over_cap  # settings unknown


def test_model_line_names_what_its_quality_was_measured_on():
    from fairstream.summary import model_text

    q = {"wsd_kappa": 0.8, "regard_macro_f1": 0.73, "negative_f1": 0.64}
    dev = model_text({"model": "m", "model_quality": {**q, "source": "MODEL_CARD.md: Cross-validated: ..."}})
    assert dev == (
        "m (its card gives one held-out figure, no range over unseen sets: regard macro-F1 0.73, "
        "negative-regard F1 0.64, WSD kappa 0.80)"
    )
    unseen = model_text({"model": "m", "model_quality": {**q, "source": "MODEL_CARD.md: Unseen real text"}})
    assert unseen.startswith("m (its card gives one unseen real text figure, no range over unseen sets: ")
    assert "no measured quality" in model_text({"model": "m", "model_quality": None})


def test_the_shipped_models_quality_is_the_range_over_every_unseen_set_weakest_included():
    from fairstream.models.card import model_quality
    from fairstream.models.names import default_model_dir
    from fairstream.summary import model_text

    q = model_quality(default_model_dir())
    assert q is not None and len(q["sets"]) >= 5
    for metric in ("regard_macro_f1", "negative_f1", "wsd_kappa"):
        values = [s[metric] for s in q["sets"]]
        assert q["range"][metric] == [min(values), max(values)] and q[metric] == min(values)
    weakest = q["sets"][0]
    assert weakest["regard_macro_f1"] == min(s["regard_macro_f1"] for s in q["sets"])
    text = model_text({"model": "fairstream-joint-v6-cascade", "model_quality": q})
    low, high = q["range"]["regard_macro_f1"]
    assert f"regard macro-F1 {low:.2f}-{high:.2f}" in text and weakest["set"] in text
    assert f"{len(q['sets'])} unseen labelled sets" in text and q["card"] in text


def test_table_shows_model_judged_and_estimated_shares_equal_to_the_stats():
    summary, text = estimated_summary()
    est = summary["stats"]["estimates"]
    rows = rows_of(text)
    header = text.splitlines()[text.splitlines().index(rows["tiny"]) - 1]
    assert "neg. before" in header and "true neg. after" in header and "dropped not neg." in header
    groups = text.splitlines()[text.splitlines().index(header) - 1]
    assert "model-judged" in groups and "estimated, 95% interval" in groups
    for r in attribute_rows(summary["stats"], summary["run"]):
        cells = re.split(r"\s{2,}", rows[r.keyword].strip())
        e = est["attributes"][r.keyword]
        assert cells == [
            r.keyword + ("*" if r.over_cap else ""),
            str(r.person_sentences),
            str(r.kept),
            str(r.dropped),
            f"{100 * r.negative_before / r.person_sentences:.1f}%",
            f"{100 * r.negative_after / r.kept:.1f}%",
            f"{100 * e['after']['estimated_negative_share']:.1f}% [{100 * e['after']['interval'][0]:.1f}-"
            f"{100 * e['after']['interval'][1]:.1f}]",
            *([f"~{e['dropped']['estimated_not_negative']:.1f} [{e['dropped']['interval'][0]:.1f}-"
               f"{e['dropped']['interval'][1]:.1f}]"] if r.dropped else ["-"]),
        ], r.keyword  # fmt: skip
    # the pooled line: true share after with its interval, the model-judged one, the wrong drops
    after, dropped = est["pooled"]["after"], est["pooled"]["dropped"]
    flat = " ".join(text.split())
    assert (
        f"estimated (uncalibrated model probabilities, 95% interval): the true negative share after "
        f"filtering is {estimate_cell(after, '%')} pooled over attributes (model-judged: "
        f"{100 * after['model_negative_share']:.1f}%); {not_negative_cell(dropped)} of "
        f"{dropped['sentences']} dropped person sentences (counted once per attribute) were not negative"
    ) in flat
    assert dropped["sentences"] == 30 + 8 and after["sentences"] == 170 + 52 + 3 + 20
    assert f"calibration: {est['calibration']}" in flat and "uncalibrated" in est["calibration"]


def test_the_summary_says_what_the_cap_guarantees_and_what_it_does_not():
    _, text = estimated_summary()
    flat = " ".join(text.split())
    assert (
        "guaranteed (a bound on the model's decisions, not on the text): the model-judged negative share "
        "of every attribute <= 1% once it has 100 kept sentences (the warm-up); 1 attribute with fewer "
        "kept sentences is above it (tiny)"
    ) in flat
    _, strict = estimated_summary(warmup=0)
    assert "<= 1% after every decision (strict: warm-up 0)" in " ".join(strict.split())
    summary, _ = estimated_summary()
    summary["run"] = {**summary["run"], "cap_scope": "global", "warmup": None}
    assert "<= 1% (global scope: small attributes included)" in " ".join(format_summary(summary).split())


def test_a_calibrated_model_is_named_with_its_calibration():
    _, text = estimated_summary(calibrated())
    flat = " ".join(text.split())
    assert "estimated (calibrated P(negative), 95% interval): the true negative share after" in flat
    assert "calibration: isotonic, 3 bootstrap refits; fitted on test labels (3 sets)" in flat
    assert "uncalibrated" not in flat
    # the calibration moves the estimate, never the model-judged share the cap bounds
    _, plain = estimated_summary()
    assert rows_of(text)["alpha"].split()[:6] == rows_of(plain)["alpha"].split()[:6]
    assert rows_of(text)["alpha"].split()[6:] != rows_of(plain)["alpha"].split()[6:]


def test_old_stats_without_estimates_show_model_judged_shares_with_a_note():
    summary = summary_of({"a": attr(200, 20, 180, 1)})
    assert "estimates" not in summary["stats"]
    text = format_summary(summary)
    flat = " ".join(text.split())
    assert "estimated true negative shares: not available: this stats.json has no estimates" in flat
    assert "every negative share shown is model-judged" in flat
    assert "model-judged" in text and "neg. before" in text
    assert "true neg. after" not in text and "estimated, 95% interval" not in text
    assert rows_of(text)["a"].split() == ["a", "200", "180", "20", "10.0%", "0.6%"]


def test_the_summary_fits_100_columns():
    summary, _ = estimated_summary(calibrated())
    summary["stats"]["run"] = summary["run"] = {
        **summary["run"],
        "model_quality": {"wsd_kappa": 0.8, "regard_macro_f1": 0.73, "negative_f1": 0.64, "source": "card"},
    }
    for line in format_summary(summary).splitlines():
        assert len(line) <= WIDTH, line
