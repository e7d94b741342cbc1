from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from fairstream.core.estimates import with_estimates
from fairstream.models.calibration import Calibration, score_bin
from fairstream.stats import CooccurrenceCounts, write_report

SETTINGS = {"min_word_count": 1, "min_attribute_sentences": 1, "min_attribute_share": 0.5}


def make_counts(drop_negative: bool) -> CooccurrenceCounts:
    rows = [
        ("religion", "muslim", "positive", "peaceful community gathered"),
        ("religion", "muslim", "negative", "violent extremist community attack"),
        ("religion", "muslim", "negative", "extremist community"),
        ("religion", "christian", "neutral", "community church peaceful"),
        ("religion", "christian", "positive", "peaceful community charity"),
        ("religion", "christian", None, "community peaceful choir"),
        ("race/ethnicity", "white", "negative", "supremacist rally violent people"),
        ("race/ethnicity", "white", "neutral", "people voted rally"),
        ("race/ethnicity", "black", "positive", "people celebrated rally"),
        ("race/ethnicity", "black", "neutral", "people voted"),
    ]
    c = CooccurrenceCounts(prune_every=None)
    for cls, kw, regard, text in rows:
        if drop_negative and regard == "negative" and "supremacist" not in text:
            continue
        c.add_sentence(text.split(), [(cls, kw, regard)])
    return c


def run_stats(
    before: CooccurrenceCounts,
    after: CooccurrenceCounts,
    warmup: int = 100,
    calibration: Calibration | None = None,
    estimates: bool = True,
) -> dict:
    """A stats.json consistent with the counts (as the filter job writes it), with its run settings.

    Its ``estimates`` (``estimates=False``: an old stats.json without them) come from per-bin counts
    that put the model's negative sentences in a high P(negative) bin and the rest in a low one.
    """
    attributes = {}
    high, low = score_bin(0.9), score_bin(0.05)
    for cls, kw in before.attributes():
        b, a = before.regard_distribution(cls, kw), after.regard_distribution(cls, kw)
        kept = sum(a.values())
        attributes[kw] = {
            "mentions": sum(b.values()),
            "person_sentences": sum(b.values()),
            "before": {r: b[r] for r in ("negative", "neutral", "positive")},
            "after": {r: a[r] for r in ("negative", "neutral", "positive")},
            "dropped": sum(b.values()) - kept,
            "p_negative_bins": {
                "kept": {str(high): a["negative"], str(low): kept - a["negative"]},
                "dropped": {str(high): sum(b.values()) - kept},
            },
        }
    attributes["jewish"] = {  # mentioned, never in its person sense: must appear nowhere
        "mentions": 2,
        "person_sentences": 0,
        "before": {"negative": 0, "neutral": 0, "positive": 0},
        "after": {"negative": 0, "neutral": 0, "positive": 0},
        "dropped": 0,
    }
    stats = {
        "counters": {
            "docs_in": 12,
            "docs_out": 11,
            "docs_dropped": 1,
            "docs_modified": 1,
            "sentences_candidate": 10,
            "sentences_dropped": 1,
        },
        "skipped": {},
        "attributes": attributes,
        "run": {
            "cap": 0.01,
            "warmup": warmup,
            "granularity": "sentence",
            "seed": 0,
            "model": "tiny-model",
            "taxonomy": "taxonomy-v1",
            "shards": ["a/000.jsonl.gz"],
            "model_quality": {"wsd_kappa": 0.79, "regard_macro_f1": 0.66, "negative_f1": 0.42},
        },
    }
    return with_estimates(stats, calibration or Calibration.identity()) if estimates else stats


def test_report_files_html_is_self_contained(tmp_path: Path):
    before, after = make_counts(False), make_counts(True)
    paths = write_report(
        before, after, tmp_path / "rep", top_k=3, stream_stats=run_stats(before, after), **SETTINGS
    )
    for p in paths.all():
        assert p.is_file() and p.stat().st_size > 0, p
    assert {p.name for p in paths.figures} == {"regard_religion.png", "regard_race-ethnicity.png"}
    assert not [
        p for p in (tmp_path / "rep").rglob("*") if p.name.endswith(".tmp")
    ]  # atomic writes left no temp files

    page = paths.html.read_text(encoding="utf-8")
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 2
    assert all(base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n" for img in images)
    assert "<table>" in page and "</html>" in page
    # nothing to fetch: readable without a server (links only to anchors on the page itself)
    assert not re.search(r'(src|href)="(?!data:|#)', page)
    for anchor in re.findall(r'href="#([^"]+)"', page):
        assert f'id="{anchor}"' in page, anchor
    assert "<script" not in page
    for needle in ("eq. 1", "eq. 2, r=negative", "mitigation effect", "Appendix", "sentences_candidate"):
        assert needle in page, needle
    assert "extremist" in page  # the top negatively biased word of muslim

    md = paths.markdown.read_text(encoding="utf-8")
    for fig in paths.figures:
        assert f"](figures/{fig.name})" in md
    assert "| attribute | eq. 1 |" in md
    assert CooccurrenceCounts.load(paths.counts) == before
    assert paths.counts_after is not None and CooccurrenceCounts.load(paths.counts_after) == after


def test_report_opens_with_the_headline_and_keeps_internals_in_a_collapsed_appendix(tmp_path: Path):
    before, after = make_counts(False), make_counts(True)
    paths = write_report(before, after, tmp_path, stream_stats=run_stats(before, after), **SETTINGS)
    page = paths.html.read_text(encoding="utf-8")
    lead = "Kept 11 of 12 documents; dropped 1 of 10 judged sentences (10.0%)"
    first_class = page.index("<h2")
    assert page.index(lead) < first_class  # the headline comes before any per-class detail
    head = page[:first_class]
    for needle in ("1% per attribute", "warm-up 100", "tiny-model", "regard macro-F1 0.66", "WSD kappa 0.79",
                   "granularity sentence", "000.jsonl.gz"):  # fmt: skip
        assert needle in head, needle
    appendix = page[page.index("<details><summary>Appendix") :]
    for internal in ("word entries stored", "pruning", "Eq. 1: p(w|a)", "&quot;counters&quot;"):
        assert internal not in head and internal in appendix, internal
    # no row for an attribute without person sentences (only the raw stats.json in the appendix has it)
    assert "jewish" not in page[: page.index("<details><summary>Appendix")]


def test_report_flags_every_attribute_above_its_cap_with_the_reason(tmp_path: Path):
    before, after = make_counts(False), make_counts(True)
    stats = run_stats(before, after)
    # white keeps 1 negative of 2 sentences (50% > 1%): under warm-up. With warm-up 0 that cannot
    # happen, so a strict run that reports it over the cap names another reason.
    paths = write_report(before, after, tmp_path / "w", stream_stats=stats, **SETTINGS)
    page = paths.html.read_text(encoding="utf-8")
    assert "1 attribute above the 1% cap" in page
    head = page[: page.index("<h2")]
    assert '<tr class="flag"><td>white</td>' in head and "under warm-up (2 kept &lt; 100)" in head
    assert '<div class="card bad">' in head
    assert "muslim" not in head  # within the cap: not in the headline's list
    md = paths.markdown.read_text(encoding="utf-8")
    assert re.search(
        r"\| white \| 2 \| 50\.0% \| 2 \| 50\.0% \| 0 \| (.+? \| ){3}ABOVE CAP: under warm-up", md
    )

    stats["attributes"]["white"]["after"] = {"negative": 0, "neutral": 2, "positive": 0}
    stats["attributes"]["muslim"]["after"] = {"negative": 0, "neutral": 0, "positive": 1}
    clean = write_report(before, after, tmp_path / "c", stream_stats=stats, **SETTINGS)
    page = clean.html.read_text(encoding="utf-8")
    assert "every attribute within the 1% cap" in page and '<div class="card good">' in page
    assert 'class="flag"' not in page


def test_report_numbers_match_the_counts(tmp_path: Path):
    before, after = make_counts(False), make_counts(True)
    paths = write_report(before, after, tmp_path, top_k=3, **SETTINGS)
    md = paths.markdown.read_text(encoding="utf-8")
    # muslim: 3 sentences, 2 negative; after: 1 kept, 0 negative, 2 dropped (no stats: no cap status)
    assert "| muslim | 3 | 66.7% | 1 | 0.0% | 2 |\n" in md and "cap status" not in md
    # extremist: p = 2/9 before, 0 after -> effect 0%
    assert re.search(r"\| muslim \| extremist \| [0-9.]+ \| 2 \| 0 \| 0 \|", md)
    assert "Kept 9 of 10 documents" not in md  # counts alone: documents come from the counts
    assert f"Kept {after.totals['documents']} of {before.totals['documents']} documents" in md


def test_report_without_after_and_empty_counts(tmp_path: Path):
    out = tmp_path / "rep"
    write_report(make_counts(False), make_counts(True), out, **SETTINGS)
    paths = write_report(make_counts(False), None, out, **SETTINGS)
    assert paths.counts_after is None
    assert not (out / "counts_after.json").exists()  # the stale one would contradict the report
    assert "mitigation effect" not in paths.markdown.read_text(encoding="utf-8")
    empty = write_report(CooccurrenceCounts(prune_every=None), None, tmp_path / "empty")
    assert "No person-sense mentions" in empty.markdown.read_text(encoding="utf-8")
    assert empty.figures == ()


def test_report_shows_score_tables_only_where_there_is_data(tmp_path: Path):
    # no word reaches c(w,a) >= 5: no score table, no "V is empty", no all-zero rows; the appendix says why
    paths = write_report(make_counts(False), None, tmp_path, min_word_count=5, min_attribute_sentences=1)
    md = paths.markdown.read_text(encoding="utf-8")
    assert "eq. 2, r=" not in md and "V is empty" not in md and "(0.00)" not in md
    assert "no word passes the vocabulary rule" in md
    # one scored attribute per class: eq. 1 is 1 for every word, so no table either
    counts = CooccurrenceCounts(prune_every=None)
    for regard in ("negative", "neutral", "positive"):
        counts.add_sentence(["community", "people"], [("religion", "muslim", regard)])
    counts.add_sentence(["community"], [("religion", "christian", "neutral")])
    one = write_report(counts, None, tmp_path / "one", min_word_count=1, min_attribute_sentences=2)
    md = one.markdown.read_text(encoding="utf-8")
    assert "| attribute | eq. 1 |" not in md and "christian (1)" in md  # the appendix names the left-out one


def test_report_shows_dropped_examples_escaped_and_marked(tmp_path: Path):
    before, after = make_counts(False), make_counts(True)
    examples = {"examples": {"muslim": [
        {"id": "d1", "doc_index": 0, "start": 0, "text": "They said <b>Muslim</b> people are bad", "mark": [13, 19]},
        {"id": "d2", "doc_index": 1, "start": 0, "text": "second", "mark": [0, 6]},
        {"id": "d3", "doc_index": 2, "start": 0, "text": "third example", "mark": [0, 5]},
    ]}}  # fmt: skip
    paths = write_report(before, after, tmp_path, examples=examples, **SETTINGS)
    page = paths.html.read_text(encoding="utf-8")
    assert "They said &lt;b&gt;<mark>Muslim</mark>&lt;/b&gt; people are bad" in page
    assert "(document d1)" in page and "(document d2)" in page
    assert "third example" not in page  # a few per attribute, not all


def test_chart_height_stays_sane_with_many_attributes(tmp_path: Path):
    import struct

    counts = CooccurrenceCounts(prune_every=None)
    for i in range(60):
        for j in range(i % 7 + 1):
            counts.add_sentence(
                ["word"], [("nationality", f"nation{i:02d}", "negative" if j == 0 else "neutral")]
            )
    paths = write_report(counts, counts, tmp_path, **SETTINGS)
    png = paths.figures[0].read_bytes()
    width, height = struct.unpack(">II", png[16:24])
    assert height <= 1000 and width <= 1000, (width, height)  # 12 attributes + one bar for the other 48
    md = paths.markdown.read_text(encoding="utf-8")
    # every attribute has a row in the class table (the rest in a collapsed one)
    assert len(set(re.findall(r"\| (nation\d\d) \| \d+ \| [0-9.]+% \|", md))) == 60
    assert "more attributes with fewer sentences" in md


def test_report_rejects_bad_arguments(tmp_path: Path):
    with pytest.raises(ValueError, match="top_k=0"):
        write_report(make_counts(False), None, tmp_path, top_k=0)
    with pytest.raises(ValueError, match="top_attributes=0"):
        write_report(make_counts(False), None, tmp_path, top_attributes=0)


def test_report_does_not_change_pyplot_backend(tmp_path: Path):
    import matplotlib

    backend = matplotlib.get_backend()
    write_report(make_counts(False), None, tmp_path, **SETTINGS)
    assert matplotlib.get_backend() == backend
