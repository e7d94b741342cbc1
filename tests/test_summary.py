from __future__ import annotations

import re

from fairstream.summary import attribute_rows, format_summary


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
    return {m.group(1): m.group(0) for m in re.finditer(r"^  (\w+)\s+\d+\s+.*$", text, re.M)}


def test_table_shows_every_attribute_above_the_cap_and_no_empty_rows():
    attributes = {f"busy{i:02d}": attr(300, 40 + i, 265 + i, 2) for i in range(15)}  # many negatives, in cap
    attributes["tiny"] = attr(3, 1, 3, 1)  # 1 negative of 3 kept: 33% > 1%, under warm-up, few negatives
    attributes["ghost"] = attr(0, 0, 0, 0)  # mentioned, never in its person sense
    text = format_summary(summary_of(attributes))
    rows = rows_of(text)
    assert "tiny" in rows and "ABOVE CAP: under warm-up (3 kept < 100)" in rows["tiny"]
    assert "ghost" not in text
    assert sum(1 for kw in rows if kw.startswith("busy")) == 10  # top 10 within the cap ...
    assert "5 more attributes, all within the cap" in text  # ... and the rest counted, not hidden
    assert "1 attribute above the cap (tiny)" in text and "--warmup 0" in text
    assert "documents: 50 in = 48 out" in text and "30 dropped (7.5%)" in text
    assert "warm-up 100" in text


def test_strict_run_and_a_clean_table():
    text = format_summary(summary_of({"a": attr(200, 20, 180, 1)}, warmup=0))
    assert "strict (warm-up 0" in text and "every attribute is within its cap" in text
    assert "ABOVE CAP" not in text


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
