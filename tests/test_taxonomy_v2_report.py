"""The bias report of a taxonomy-v2 run (16 classes, 241 keywords) reads well: every class is in the
overview and has its chart, no chart's labels overlap or are cut, the page never scrolls sideways
(checked in headless Chromium, skipped with the reason where it is missing), long tables are
collapsed below the attributes with most sentences.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from fairstream.stats import CooccurrenceCounts, write_report
from fairstream.stats.regard_chart import ClassRow, class_rows, regard_chart
from fairstream.stats.report_classes import class_anchor
from fairstream.taxonomy import Taxonomy
from tests.test_report_browser import CHROMIUM, chromium
from tests.test_stats_report import run_stats

SETTINGS = {"min_word_count": 1, "min_attribute_sentences": 2, "min_attribute_share": 0.3}
WORDS = ["community", "people", "school", "work", "family", "city", "news", "church", "party", "market"]
NEGATIVE = ["violent", "attack", "crime", "hate"]


def v2_counts() -> tuple[CooccurrenceCounts, CooccurrenceCounts]:
    """Counts of every keyword of every taxonomy-v2 class, the keyword's rank deciding its sentences
    (so classes have from 1 to 65 attributes of varied sizes); after: most negatives dropped."""
    before, after = CooccurrenceCounts(prune_every=None), CooccurrenceCounts(prune_every=None)
    for cls, attrs in Taxonomy.load("taxonomy-v2").classes.items():
        for i, attr in enumerate(attrs):
            for j in range(max(1, 14 - i // 2)):
                regard = ("negative", "neutral", "positive", "neutral")[(i + j) % 4]
                words = [WORDS[(i + j) % len(WORDS)], WORDS[(i * 3 + j) % len(WORDS)]]
                if regard == "negative":
                    words.append(NEGATIVE[(i + j) % len(NEGATIVE)])
                before.add_sentence(words, [(cls, attr.keyword, regard)])
                if regard != "negative" or j % 3 == 0:
                    after.add_sentence(words, [(cls, attr.keyword, regard)])
    before.totals["documents"], after.totals["documents"] = 500, 490
    return before, after


@pytest.fixture(scope="module")
def v2_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    before, after = v2_counts()
    stats = run_stats(before, after)
    stats["run"]["taxonomy"] = "taxonomy-v2"
    out = tmp_path_factory.mktemp("v2-report")
    paths = write_report(
        before, after, out, stream_stats=stats, taxonomy=Taxonomy.load("taxonomy-v2"), **SETTINGS
    )
    return {"paths": paths, "before": before, "after": after, "stats": stats}


def text_boxes(fig: Any) -> list[tuple[str, Any]]:
    """Every visible, non-empty text of a drawn figure with its box in pixels (each artist once)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    seen, out = set(), []
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        if id(t) in seen or not t.get_visible() or not t.get_text().strip():
            continue
        seen.add(id(t))
        out.append((t.get_text(), t.get_window_extent(renderer)))
    return out


def assert_readable(fig: Any) -> None:
    boxes = text_boxes(fig)
    width, height = fig.bbox.width, fig.bbox.height
    cut = [t for t, b in boxes if b.x0 < 0 or b.y0 < 0 or b.x1 > width or b.y1 > height]
    assert not cut, f"labels cut at the figure's edge: {cut}"
    overlaps = [(t1, t2) for (t1, b1), (t2, b2) in itertools.combinations(boxes, 2) if b1.overlaps(b2)]
    assert not overlaps, f"labels drawn over each other: {overlaps[:5]}"


def test_v2_charts_have_every_class_and_readable_labels(v2_report):
    before, after, stats = v2_report["before"], v2_report["after"], v2_report["stats"]
    classes = Taxonomy.load("taxonomy-v2").classes
    assert len(classes) == 16
    assert {p.name for p in v2_report["paths"].figures} == {f"regard_{class_anchor(c)}.png" for c in classes}
    # drawn again to measure their labels: the classes of most attributes (a summed bar), of the
    # longest keywords and of a single one
    longest = max(classes, key=lambda c: max(len(a.keyword) for a in classes[c]))
    for cls in {"nationality", "race/ethnicity", "political ideology", longest, "veteran status"}:
        rows = class_rows(cls, before, after)
        fig = regard_chart(cls, rows, 0.01, 12, estimates=stats["estimates"])
        assert_readable(fig)
        labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert labels[: min(12, len(rows))] == [r.keyword for r in rows[:12]]  # most sentences first
        if len(rows) > 12:
            assert labels[-1] == f"{len(rows) - 12} other attributes"
        assert fig.get_size_inches()[1] <= 10  # 12 attributes and one summed bar at most


def test_chart_makes_room_for_long_keywords_and_numbers():
    # a user taxonomy's long keyword, and counts in the hundred thousands, must not be cut or overlap
    rows = [
        ClassRow("a-very-long-keyword-of-a-user-taxonomy", {"negative": 5, "neutral": 123456, "positive": 7},
                 {"negative": 1, "neutral": 123456, "positive": 7}),
        ClassRow("x", {"negative": 1, "neutral": 1, "positive": 0}, {"negative": 0, "neutral": 1, "positive": 0}),
    ]  # fmt: skip
    fig = regard_chart("a class of a rather long name, to test the title", rows, 0.01, 12)
    assert_readable(fig)
    assert fig.get_size_inches()[0] > 10  # widened, not cut


def test_v2_report_overview_links_every_class_and_collapses_long_tables(v2_report):
    md = v2_report["paths"].markdown.read_text(encoding="utf-8")
    page = v2_report["paths"].html.read_text(encoding="utf-8")
    classes = Taxonomy.load("taxonomy-v2").classes
    overview = md[md.index("## Attribute classes at a glance") : md.index("\n## ", md.index("at a glance"))]
    linked = re.findall(r"^\| \[([^\]]+)\]\(#([a-z0-9-]+)\) \|", overview, flags=re.M)
    assert sorted(c for c, _ in linked) == sorted(classes)
    for cls, anchor in linked:
        assert f'<h2 id="{anchor}">{cls}:' in page and f'href="#{anchor}"' in page
    # sections in the overview's order; the first overview row is the first section
    assert [c for c, _ in linked] == re.findall(r'<h2 id="[^"]+">([^:<]+):', page)
    # the shared note on model-judged and estimated shares stands once, not in all 16 sections
    assert md.count("Estimated true: the expected share truly negative") == 1
    # nationality has 65 attributes: 12 in the chart; word rows beyond them are collapsed
    nat = md[md.index('<a id="nationality">') :]
    nat = nat[: nat.index('<a id="', 10)]
    assert "<details><summary>Words of " in nat
    words = nat[nat.index("| attribute | eq. 1") : nat.index("<details><summary>Words of ")]
    assert len(re.findall(r"^\| [a-z-]+ \|", words, flags=re.M)) == 1 + 12  # the header and 12 rows


LAYOUT_PROBE = """<script>
window.addEventListener("load", () => {
  const de = document.documentElement, out = {};
  out.viewport = de.clientWidth;
  out.scrollWidth = de.scrollWidth;
  out.sections = [...document.querySelectorAll("h2[id]")].map(h => h.id);
  out.links = [...document.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute("href").slice(1));
  out.images = [...document.querySelectorAll("figure img")].map(i => ({
    alt: i.alt, natural: i.naturalWidth, shown: i.getBoundingClientRect().width}));
  // anything drawn past the right edge, outside the boxes that scroll on their own
  out.wide = [...document.querySelectorAll("body *")]
    .filter(e => !e.closest("div.table, pre") && e.getBoundingClientRect().right > de.clientWidth + 0.5)
    .map(e => e.tagName + ": " + (e.textContent || "").slice(0, 60));
  const pre = document.createElement("pre");
  pre.id = "layout-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def probe_layout(html: Path, tmp_path: Path, width: int) -> dict[str, Any]:
    """Load the page at ``width`` pixels in Chromium and read what the probe script measured."""
    probed = tmp_path / f"probed-{width}.html"
    probed.write_text(html.read_text(encoding="utf-8").replace("</body>", LAYOUT_PROBE + "</body>"))
    dom = chromium(
        tmp_path / f"profile-{width}",
        "--dump-dom",
        "--virtual-time-budget=10000",
        f"--window-size={width},1000",
        probed.resolve().as_uri(),
    ).stdout
    found = re.search(r'<pre id="layout-probe">(.*?)</pre>', dom, flags=re.S)
    assert found, "the probe script did not run"
    return json.loads(
        found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    )


@pytest.mark.browser
@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium not found: install it (Debian: apt-get install chromium) to run this test",
)
def test_v2_report_in_chromium_has_every_class_and_no_sideways_scroll(v2_report, tmp_path: Path):
    from PIL import Image

    html = v2_report["paths"].html
    classes = Taxonomy.load("taxonomy-v2").classes
    for width in (1200, 800):  # a laptop window and a narrow one: tables scroll in their box, the page never
        layout = probe_layout(html, tmp_path, width)
        assert layout["scrollWidth"] <= layout["viewport"], (width, layout["wide"][:5])
        assert not layout["wide"], (width, layout["wide"][:5])
        assert sorted(layout["sections"]) == sorted(["classes", *map(class_anchor, classes)])
        assert set(layout["links"]) == set(map(class_anchor, classes))  # every link lands on a section
        charts = {i["alt"].split(",")[1].split(":")[0].strip(): i for i in layout["images"]}
        assert sorted(charts) == sorted(classes)  # every class's chart, drawn
        for cls, img in charts.items():
            assert img["natural"] > 0, cls
            if width == 1200:  # at full width the charts are not shrunk (their text stays legible)
                assert img["shown"] >= 0.95 * img["natural"], (cls, img)
    shot = tmp_path / "v2-report.png"
    chromium(
        tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1200,2400", html.resolve().as_uri()
    )
    image = Image.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # headline, overview and the first chart drawn
