"""The per-class regard chart of the report: before/after bars per attribute, of sane height.

The ``top`` attributes with most sentences get a row each (two bars, before and after filtering,
negative first so small shares stay visible, the cap as a dashed line); the rest are summed into
one row, so the figure is readable at any number of attributes.

The bars are the regard **the model judged**. With ``stats.json``'s estimates, each attribute's
bar also carries the **estimated true** negative share as a black diamond with its 95% interval
(not for the summed row, whose interval the estimates do not give).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairstream.core.schema import REGARD_LABELS as MODEL_ORDER
from fairstream.stats.counts import CooccurrenceCounts
from fairstream.stats.regards import REGARD_LABELS, UNKNOWN_REGARD
from fairstream.summary import basis_text, pct, share_text

REGARD_COLORS = {"negative": "#c62828", "neutral": "#b0b0b0", "positive": "#2e7d32", "unknown": "#e6e6e6"}
CHART_ORDER = (*MODEL_ORDER, UNKNOWN_REGARD)  # negative first: small shares stay visible


@dataclass(frozen=True)
class ClassRow:
    """One attribute of a class, counted from the co-occurrence counts."""

    keyword: str
    before: dict[str, int]  # regard label -> sentences
    after: dict[str, int] | None

    @property
    def n(self) -> int:
        """Person sentences before filtering."""
        return sum(self.before.values())

    @property
    def kept(self) -> int | None:
        """Person sentences kept (None without after-counts)."""
        return sum(self.after.values()) if self.after is not None else None


def class_rows(cls: str, before: CooccurrenceCounts, after: CooccurrenceCounts | None) -> list[ClassRow]:
    """The class's attributes with person sentences, most sentences first."""
    keywords = {kw for _, kw in before.attributes(cls)} | (
        {kw for _, kw in after.attributes(cls)} if after is not None else set()
    )
    rows = [
        ClassRow(
            kw,
            before.regard_distribution(cls, kw),
            after.regard_distribution(cls, kw) if after is not None else None,
        )
        for kw in keywords
    ]
    return sorted((r for r in rows if r.n), key=lambda r: (-r.n, r.keyword))


def regard_chart(
    cls: str,
    rows: Sequence[ClassRow],
    cap: float | None,
    top: int,
    *,
    estimates: Mapping[str, Any] | None = None,
) -> Any:
    """The chart as a matplotlib ``Figure`` on an Agg canvas (``regard_figure`` renders it to PNG).

    One row per attribute (top ``top`` by sentences, the rest summed): before and after bars.
    ``estimates`` (``stats.json``'s block) adds each attribute's estimated true negative share
    with its 95% interval to its bars. The margins are measured, not guessed: the left one fits
    the longest attribute label, the figure is widened until the notes right of the bars, the
    legend and the titles fit, so nothing is cut or overlaps at any keyword length.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    per = (estimates or {}).get("attributes", {})
    marked = False

    shown = list(rows[:top])
    rest = rows[top:]
    if rest:
        before_sum = {r: sum(x.before[r] for x in rest) for r in REGARD_LABELS}
        after_sum = (
            {r: sum((x.after or {}).get(r, 0) for x in rest) for r in REGARD_LABELS}
            if rest[0].after is not None
            else None
        )
        shown.append(ClassRow(f"{len(rest)} other attributes", before_sum, after_sum))
    paired = shown[0].after is not None if shown else False
    per_row = 0.62 if paired else 0.36
    width, left_in, axes_in = 10.0, 1.6, 4.4  # inches: figure, y labels, bars (notes to the right)
    top_in, bottom_in = 0.75, 0.75
    height = top_in + per_row * len(shown) + 0.25 + bottom_in
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)  # the Agg backend, without touching pyplot's global backend
    ax = fig.add_axes((0, 0, 1, 1))
    bar_h = 0.36 if paired else 0.7
    yticks, ylabels, notes = [], [], []
    for i, row in enumerate(shown):
        bars = [("before", row.before)] + ([("after", row.after)] if paired and row.after is not None else [])
        for j, (label, dist) in enumerate(bars):
            y = i + (j - 0.5) * bar_h * 1.1 if paired else float(i)
            total = sum(dist.values())
            left = 0.0
            for regard in CHART_ORDER:
                share = dist.get(regard, 0) / total if total else 0.0
                if share:
                    ax.barh(
                        y,
                        share,
                        left=left,
                        height=bar_h,
                        color=REGARD_COLORS[regard],
                        edgecolor="white",
                        lw=0.5,
                    )
                left += share
            note = f"n={total}, model-judged negative {pct(dist.get('negative', 0), total)}"
            est = per.get(row.keyword, {}).get(label, {})
            if est.get("estimated_negative_share") is not None and est.get("interval"):
                x, (lo, hi) = est["estimated_negative_share"], est["interval"]
                ax.errorbar(
                    x, y, xerr=[[x - lo], [hi - x]], fmt="D", ms=4, color="black", elinewidth=1, capsize=2
                )
                note += f", est. true {100 * x:.1f}%"
                marked = True
            notes.append(
                ax.text(
                    1.02, y, f"{label}: {note}" if paired else note, va="center", fontsize=8, color="#333"
                )
            )
        yticks.append(float(i))
        ylabels.append(row.keyword)
    if cap is not None and 0 < cap < 1:
        ax.axvline(cap, color="#7a0000", lw=1, ls="--")
        ax.text(cap, -0.75, f" cap {share_text(cap)}", fontsize=7, color="#7a0000", va="bottom")
    ax.set_yticks(yticks)
    ax.set_yticklabels(ylabels, fontsize=9)
    ax.set_ylim(len(shown) - 0.4, -0.8)
    ax.set_xlim(0, 1)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xticklabels(["0", "25%", "50%", "75%", "100%"], fontsize=8)
    ax.set_xlabel("share of the attribute's person sentences", fontsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    used = [r for r in CHART_ORDER if any(x.before.get(r) or (x.after or {}).get(r) for x in shown)]
    handles: list[Any] = [Patch(color=REGARD_COLORS[r], label=r) for r in used]
    if marked and estimates:
        label = f"estimated true negative share, 95% interval ({basis_text(estimates)})"
        handles.append(Line2D([], [], color="black", marker="D", ms=4, lw=1, label=label))
    legend = fig.legend(handles=handles, loc="lower left", ncol=len(handles), fontsize=8, frameon=False)
    title = f"{cls}: regard of person sentences, as the model judged it (bars)"
    sub = "before (upper bar) and after (lower bar) filtering" if paired else "before filtering"
    if marked:
        sub += "; black diamond: the estimated true negative share with its 95% interval"
    heads = [
        fig.text(0, 1 - 0.12 / height, title, fontsize=10, ha="left", va="top"),
        fig.text(0, 1 - 0.36 / height, sub, fontsize=8, ha="left", va="top", color="#444"),
    ]

    # measure in inches what the labels need, then place the axes and widen the figure to fit
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]

    def inches(texts: Sequence[Any]) -> float:
        return max((t.get_window_extent(renderer).width / fig.dpi for t in texts), default=0.0)

    pad = 0.15
    left_in = max(left_in, inches(ax.get_yticklabels()) + 0.1 + pad)  # 0.1: tick length and gap
    note_in = inches(notes) + 0.02 * axes_in  # text starts at x = 1.02 of the axes
    legend_in = legend.get_window_extent(renderer).width / fig.dpi
    width = max(width, left_in + axes_in + note_in + pad, left_in + max(legend_in, inches(heads)) + pad)
    fig.set_size_inches(width, height)
    ax.set_position((left_in / width, bottom_in / height, axes_in / width, 1 - (top_in + bottom_in) / height))
    legend.set_bbox_to_anchor((left_in / width, 0), transform=fig.transFigure)
    for t in heads:
        t.set_x(left_in / width)
    return fig


def regard_figure(
    cls: str,
    rows: Sequence[ClassRow],
    cap: float | None,
    top: int,
    *,
    estimates: Mapping[str, Any] | None = None,
) -> bytes:
    """The chart of :func:`regard_chart` as PNG bytes."""
    fig = regard_chart(cls, rows, cap, top, estimates=estimates)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
