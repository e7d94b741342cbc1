from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

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


def test_report_files_html_is_self_contained(tmp_path: Path):
    before, after = make_counts(False), make_counts(True)
    stream_stats = {
        "counters": {"documents": 10, "sentences_kept": 8},
        "attributes": {"muslim": {"mentions": 3, "before": {"negative": 2}}, "white": {"mentions": 2}},
    }
    paths = write_report(before, after, tmp_path / "rep", top_k=3, stream_stats=stream_stats, **SETTINGS)
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
    assert not re.search(r'(src|href)="(?!data:)', page)  # nothing to fetch: readable without a server
    assert "<script" not in page
    # top-word tables (eq. 1 and eq. 2 per regard), before/after and the counts behind them
    for needle in (
        "eq. 1 (frequency)",
        "eq. 2, r=positive",
        "eq. 2, r=negative",
        "eq. 2, r=neutral",
        "mitigation effect",
        "Sentence counts by regard",
        "Stream statistics",
        "sentences_kept",
    ):
        assert needle in page, needle
    assert "extremist" in page  # the top negatively biased word of muslim

    md = paths.markdown.read_text(encoding="utf-8")
    for fig in paths.figures:
        assert f"](figures/{fig.name})" in md
    assert "| attribute | eq. 1 (frequency) |" in md
    assert CooccurrenceCounts.load(paths.counts) == before
    assert paths.counts_after is not None and CooccurrenceCounts.load(paths.counts_after) == after


def test_report_numbers_match_the_counts(tmp_path: Path):
    before, after = make_counts(False), make_counts(True)
    paths = write_report(before, after, tmp_path, top_k=3, **SETTINGS)
    md = paths.markdown.read_text(encoding="utf-8")
    # muslim: 3 sentences (1 positive, 0 neutral, 2 negative, 0 unknown), 9 tokens; after: 1 sentence, 0 negative
    assert "| muslim | 3 | 1 | 0 | 2 | 0 | 9 | 1 | 0 | 66.7% -> 0.0% |" in md
    # community: p = 3/9 before, 1/3 after -> 100%; extremist: 2/9 -> 0 -> 0%
    assert re.search(r"\| muslim \| extremist \| [0-9.]+ \| 2 \| 0 \| 2\.22e-01 \| 0\.00e\+00 \| 0\.0 \|", md)


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


def test_report_explains_an_empty_vocabulary(tmp_path: Path):
    paths = write_report(make_counts(False), None, tmp_path, min_word_count=5, min_attribute_sentences=1)
    assert "V is empty" in paths.markdown.read_text(encoding="utf-8")


def test_report_rejects_bad_arguments(tmp_path: Path):
    with pytest.raises(ValueError, match="top_k=0"):
        write_report(make_counts(False), None, tmp_path, top_k=0)


def test_report_does_not_change_pyplot_backend(tmp_path: Path):
    import matplotlib

    backend = matplotlib.get_backend()
    write_report(make_counts(False), None, tmp_path, **SETTINGS)
    assert matplotlib.get_backend() == backend
