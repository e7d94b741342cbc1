"""The report shows both kinds of negative share, labelled: model-judged (what the cap bounds) and
the estimated true share with its 95% interval (stats.json's ``estimates``), and its headline says
what was guaranteed and what is estimated."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np

from fairstream.stats import write_report
from tests.test_stats_report import SETTINGS, make_counts, run_stats
from tests.test_summary import calibrated


def pct1(x: float) -> str:
    return f"{100 * x:.1f}"


def report(tmp_path: Path, **stats_args) -> tuple[dict, str, str]:
    before, after = make_counts(False), make_counts(True)
    stats = run_stats(before, after, **stats_args)
    paths = write_report(before, after, tmp_path, stream_stats=stats, **SETTINGS)
    return stats, paths.markdown.read_text(encoding="utf-8"), paths.html.read_text(encoding="utf-8")


def test_headline_says_what_was_guaranteed_and_what_is_estimated(tmp_path: Path):
    stats, md, page = report(tmp_path)
    pooled = stats["estimates"]["pooled"]
    after, dropped = pooled["after"], pooled["dropped"]
    lo, hi = after["interval"]
    assert (
        "**Guaranteed:** the model-judged negative share of every attribute ≤ 1% once it has 100 kept "
        "sentences (the warm-up); 1 attribute with fewer kept sentences is above it (white). This bounds "
        "the model's decisions, not the text."
    ) in md
    assert (
        f"**Estimated:** the true negative share after filtering is {pct1(after['estimated_negative_share'])}% "
        f"[{pct1(lo)}-{pct1(hi)}%] pooled over attributes (model-judged: "
        f"{pct1(after['model_negative_share'])}%); ~{dropped['estimated_not_negative']:.1f} "
        f"[{dropped['interval'][0]:.1f}-{dropped['interval'][1]:.1f}] of {dropped['sentences']} dropped "
        "person sentences (counted once per attribute) were not negative; 95% intervals, from uncalibrated "
        "model probabilities. Calibration: uncalibrated (the model's own probabilities; no calibration "
        "uncertainty)."
    ) in md
    # muslim's 2 negatives dropped; of the 8 kept person sentences the model judged 1 negative (white)
    assert (dropped["sentences"], after["sentences"], after["model_negative_share"]) == (2, 8, 0.125)
    # in the page: both claims, labelled, right after the lead and before the cards and any class
    lead, cards, first_class = page.index('<p class="lead">'), page.index('class="cards"'), page.index("<h2")
    guaranteed, estimated = page.index("<b>Guaranteed:</b>"), page.index("<b>Estimated:</b>")
    assert lead < guaranteed < estimated < cards < first_class
    assert "true negative share after, estimated" in page[cards:first_class]


def test_a_calibrated_model_is_named_and_uncalibrated_is_said(tmp_path: Path):
    _, md, _ = report(tmp_path / "c", calibration=calibrated())
    assert (
        "; 95% intervals, from the model's calibrated probabilities. Calibration: isotonic, 3 bootstrap "
        "refits; fitted on test labels (3 sets)." in md
    )
    assert "uncalibrated" not in md.split("<details>")[0]
    _, md, _ = report(tmp_path / "u")
    assert "from uncalibrated model probabilities" in md


def test_tables_gain_estimated_columns_equal_to_the_stats(tmp_path: Path):
    stats, md, _ = report(tmp_path)
    est = stats["estimates"]["attributes"]
    head = md[: md.index("\n## ")]
    w = est["white"]["after"]
    assert (
        "| attribute | kept person sentences | model-judged negative after | estimated true negative after "
        "(95% interval) | cap | reason |" in head
    )
    assert (
        f"| white | 2 | 1 (50.0%) | {pct1(w['estimated_negative_share'])}% [{pct1(w['interval'][0])}-"
        f"{pct1(w['interval'][1])}] | 1% | under warm-up (2 kept < 100) |" in head
    )
    assert (
        "| attribute | person sentences | model-judged negative before | kept | model-judged negative after | "
        "dropped | estimated true negative before (95% interval) | estimated true negative after (95% "
        "interval) | dropped, estimated not negative (95% interval) | cap status |" in md
    )
    for kw, e in est.items():
        b, a, d = e["before"], e["after"], e["dropped"]
        cells = [
            f"{pct1(b['estimated_negative_share'])}% [{pct1(b['interval'][0])}-{pct1(b['interval'][1])}]",
            f"{pct1(a['estimated_negative_share'])}% [{pct1(a['interval'][0])}-{pct1(a['interval'][1])}]"
            if a["sentences"]
            else "-",
            f"~{d['estimated_not_negative']:.1f} [{d['interval'][0]:.1f}-{d['interval'][1]:.1f}]"
            if d["sentences"]
            else "-",
        ]
        assert re.search(rf"^\| {kw} \|( [^|]+ \|){{5}} {re.escape(' | '.join(cells))} \| ", md, re.M), kw
    # muslim: the model dropped its 2 negatives (high P(negative)); ~0.1 of them estimated not negative
    assert est["muslim"]["dropped"]["sentences"] == 2 and est["muslim"]["after"]["model_negative_share"] == 0


def test_old_stats_without_estimates_show_model_judged_shares_with_a_note(tmp_path: Path):
    stats, md, page = report(tmp_path, estimates=False)
    assert "estimates" not in stats
    assert (
        "**Estimated:** not available: this stats.json has no estimates (written before they existed; rerun "
        "the filter to get them), so every negative share shown is model-judged." in md
    )
    assert "**Guaranteed:** the model-judged negative share" in md
    assert "model-judged negative before" in md and "model-judged negative after" in md
    assert "estimated true negative" not in md and "true negative share after, estimated" not in page


def test_chart_marks_the_estimated_true_share_and_says_what_it_measures(tmp_path: Path):
    from PIL import Image

    before, after = make_counts(False), make_counts(True)

    def black_pixels(stats: dict, name: str) -> int:
        paths = write_report(before, after, tmp_path / name, stream_stats=stats, **SETTINGS)
        fig = next(p for p in paths.figures if p.name == "regard_religion.png")
        image = np.asarray(Image.open(io.BytesIO(fig.read_bytes())).convert("RGB")).reshape(-1, 3)
        return int((image.sum(axis=1) == 0).sum())

    with_marks = black_pixels(run_stats(before, after), "with")
    without = black_pixels(run_stats(before, after, estimates=False), "without")
    assert with_marks > without + 100  # black diamonds and their interval bars on every attribute's bars
    md = (tmp_path / "with" / "report.md").read_text(encoding="utf-8")
    assert (
        "![Regard per attribute, religion: model-judged shares, estimated true negative share with its 95% "
        "interval](figures/regard_religion.png)" in md
    )
