"""The report in a real headless browser: Chromium renders the page and the headline is on it,
with what the cap guaranteed (model-judged) and what is estimated (the true share) in plain words.

Needs Chromium (Debian: ``apt-get install chromium``); skipped with that reason where it is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fairstream.stats import write_report
from tests.test_stats_report import SETTINGS, make_counts, run_stats

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH, HEIGHT = 1200, 1400


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    flags = [
        "--headless",
        "--no-sandbox",  # tests may run as root (containers, CI)
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium not found: install it (Debian: apt-get install chromium) to run this test",
)
def test_report_renders_in_chromium_with_the_headline_on_screen(tmp_path: Path):
    from PIL import Image

    before, after = make_counts(False), make_counts(True)
    stats = run_stats(before, after)
    paths = write_report(before, after, tmp_path / "rep", stream_stats=stats, **SETTINGS)
    url = paths.html.resolve().as_uri()
    shot = tmp_path / "report.png"
    chromium(tmp_path / "profile", f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", url)
    dom = chromium(tmp_path / "profile2", "--dump-dom", url).stdout

    # the browser parsed the page: title, headline sentence and cards are in its DOM
    assert "<h1>fairstream bias report</h1>" in dom
    assert (
        "Kept 11 of 12 documents; dropped 1 of 10 judged sentences (10.0%); 1 attribute above the 1% cap."
        in dom
    )
    assert dom.index('class="cards"') < dom.index("<h2")
    # what was guaranteed and what is estimated: two labelled claims between the lead and the cards
    guaranteed = (
        '<p class="claim"><b>Guaranteed:</b> the model-judged negative share of every attribute ≤ 1% once it '
        "has 100 kept sentences (the warm-up); 1 attribute with fewer kept sentences is above it (white)."
    )
    kept, dropped = stats["estimates"]["pooled"]["after"], stats["estimates"]["pooled"]["dropped"]
    (lo, hi), (d_lo, d_hi) = kept["interval"], dropped["interval"]
    estimated = (
        '<p class="claim"><b>Estimated:</b> the true negative share after filtering is '
        f"{100 * kept['estimated_negative_share']:.1f}% [{100 * lo:.1f}-{100 * hi:.1f}%] pooled over "
        f"attributes (model-judged: 12.5%); ~{dropped['estimated_not_negative']:.1f} [{d_lo:.1f}-{d_hi:.1f}] "
        "of 2 dropped person sentences (counted once per attribute) were not negative; 95% intervals, from "
        "uncalibrated model probabilities."
    )
    assert guaranteed in dom and estimated in dom, dom[: dom.index('class="cards"')]
    assert dom.index("<b>Guaranteed:</b>") < dom.index("<b>Estimated:</b>") < dom.index('class="cards"')

    # and drew it: a full-size, non-blank screenshot whose top holds the headline's text and cards
    image = Image.open(shot).convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    top = np.asarray(image)[:360].reshape(-1, 3).astype(int)
    dark = float((top.sum(axis=1) < 200).mean())
    assert dark > 0.01, f"headline area is nearly blank ({dark:.2%} dark pixels)"
    # the red "above the cap" card (#fff1f0) is drawn in the headline
    assert ((top == (255, 241, 240)).all(axis=1)).any()
    # and the two claims are drawn on the first screen, above the cards: the grey bar at each one's
    # left edge (#8c959f), with dark text beside it, in two blocks before the first red card row
    pixels = np.asarray(image).astype(int)
    bar_rows = np.flatnonzero(((pixels == (140, 149, 159)).all(axis=2)).any(axis=1))
    card_rows = np.flatnonzero(((pixels == (255, 241, 240)).all(axis=2)).any(axis=1))
    assert bar_rows.size and card_rows.size and bar_rows.max() < card_rows.min() < HEIGHT
    blocks = np.split(bar_rows, np.flatnonzero(np.diff(bar_rows) > 1) + 1)
    assert len(blocks) == 2, [(int(b[0]), int(b[-1])) for b in blocks]  # Guaranteed, Estimated
    for b in blocks:
        text = pixels[b[0] : b[-1] + 1].reshape(-1, 3)
        assert float((text.sum(axis=1) < 200).mean()) > 0.005  # words on it, not an empty box
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, cards, chart: not a blank or one-colour page
