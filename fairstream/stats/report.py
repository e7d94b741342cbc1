"""Bias report of a filter run: Markdown, a self-contained HTML page, the counts and PNG figures.

Written for a data engineer deciding whether to trust a run, in this order:

1. **Headline**: documents and judged sentences in and out, the dropped share, the cap and the
   run's settings, the model and its measured quality (from its model card), and every attribute
   above its cap with the reason.
2. **Per attribute class**: a before/after regard chart (the top attributes by sentences, the
   rest summed in one bar, so it stays readable at any number of attributes), the numbers behind
   it, a few dropped sentences per attribute (truncated) and the word-level bias scores where
   there is data for them, each with a one-line explanation.
3. **Appendix** (collapsed): formulas, vocabulary rule, counting internals, the raw stream stats.

Counts come from one place: the headline and the cap status from ``stats.json`` (the stream's
counters plus the run's settings under ``"run"``), the per-class tables from the co-occurrence
counts, which count the same sentences the same way (a test checks they are equal).

``write_report`` writes into ``out_dir``: ``report.md``, ``report.html`` (figures embedded as
base64 PNG, opens without a server), ``counts.json`` (before), ``counts_after.json`` (when given)
and ``figures/regard_<class>.png``; every file atomically.
"""

from __future__ import annotations

import base64
import html
import io
import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fairstream.stats.counts import (
    REGARD_LABELS,
    REGARDS,
    CooccurrenceCounts,
    atomic_write_bytes,
    atomic_write_text,
)
from fairstream.stats.scores import (
    DEFAULT_MIN_ATTRIBUTE_SENTENCES,
    DEFAULT_MIN_ATTRIBUTE_SHARE,
    DEFAULT_MIN_WORD_COUNT,
    DEFAULT_TOP_N,
    ClassScores,
    mitigation_effect,
    score_class,
)
from fairstream.summary import (
    AttributeRow,
    attribute_rows,
    cap_text,
    headline_numbers,
    model_text,
    pct,
    share_text,
)

logger = logging.getLogger(__name__)

REGARD_COLORS = {"negative": "#c62828", "neutral": "#b0b0b0", "positive": "#2e7d32", "unknown": "#e6e6e6"}
CHART_ORDER = ("negative", "neutral", "positive", "unknown")  # negative first: small shares stay visible
TOP_ATTRIBUTES = 12  # bars per chart; the rest are summed into one bar
EXAMPLES_SHOWN = 2  # dropped sentences shown per attribute

EXPLAIN = {
    "eq1": "eq. 1 (frequency): how much more often the word occurs with this attribute than with the "
    "average attribute of its class (1 = as often).",
    "eq2": "eq. 2, r = regard: eq. 1, capped by how much more often the word occurs in sentences of "
    "regard r toward the attribute than in its average regard; high values for r = negative are the "
    "words the negative text about this attribute is made of.",
    "effect": "mitigation effect = 100 x p'(w|a) / p(w|a) after / before filtering: 100 = unchanged, "
    "0 = gone from the attribute's sentences.",
}


@dataclass(frozen=True)
class ReportPaths:
    """Files written by :func:`write_report`."""

    markdown: Path
    html: Path
    counts: Path
    counts_after: Path | None = None
    figures: tuple[Path, ...] = field(default=())

    def all(self) -> list[Path]:
        """Every file written."""
        out = [self.markdown, self.html, self.counts]
        if self.counts_after is not None:
            out.append(self.counts_after)
        return out + list(self.figures)


# -- a tiny document model rendered to both Markdown and HTML -------------------------------------
@dataclass
class _Heading:
    level: int
    text: str
    anchor: str = ""


@dataclass
class _Para:
    text: str
    tone: str = ""  # "", "warn", "good", "note"


@dataclass
class _Table:
    headers: list[str]
    rows: list[list[str]]
    flagged: list[bool] = field(default_factory=list)  # rows to highlight (above the cap)
    numeric: set[int] = field(default_factory=set)  # right-aligned columns


@dataclass
class _Figure:
    relpath: str  # relative to out_dir
    png: bytes
    alt: str


@dataclass
class _Cards:
    cards: list[tuple[str, str, str, str]]  # (label, value, detail, tone)


@dataclass
class _Examples:
    items: list[tuple[str, str, tuple[int, int], str]]  # (attribute, text, mark span, document)


@dataclass
class _KeyValue:
    items: list[tuple[str, str]]


@dataclass
class _Pre:
    text: str


@dataclass
class _Details:
    summary: str
    blocks: list[_Block]


_Block = _Heading | _Para | _Table | _Figure | _Cards | _Examples | _KeyValue | _Pre | _Details


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _render_markdown(blocks: Sequence[_Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, _Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, _Para):
            out.append(("**Warning:** " if b.tone == "warn" else "") + b.text)
        elif isinstance(b, _Table):
            lines = ["| " + " | ".join(_md_cell(h) for h in b.headers) + " |", "|" + "---|" * len(b.headers)]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("\n".join(lines))
        elif isinstance(b, _Cards):
            out.append(
                "\n".join(
                    f"* **{label}: {value}**" + (f" ({d})" if d else "") for label, value, d, _ in b.cards
                )
            )
        elif isinstance(b, _Examples):
            lines = []
            for kw, text, (s, e), doc in b.items:
                lines.append(
                    f"* *{kw}*: {_md_cell(text[:s])}**{_md_cell(text[s:e])}**{_md_cell(text[e:])} ({doc})"
                )
            out.append("\n".join(lines))
        elif isinstance(b, _KeyValue):
            out.append("\n".join(f"* **{k}:** {v}" for k, v in b.items))
        elif isinstance(b, _Pre):
            out.append("```\n" + b.text + "\n```")
        elif isinstance(b, _Details):
            out.append(
                f"<details><summary>{html.escape(b.summary)}</summary>\n\n{_render_markdown(b.blocks)}\n</details>"
            )
        else:
            out.append(f"![{b.alt}]({b.relpath})")
        out.append("")
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;max-width:1040px;margin:1.5em auto;
padding:0 1.2em;color:#1f2328;line-height:1.45;background:#fff}
h1{font-size:1.6em;margin:0.2em 0 0.1em}
h2{border-bottom:1px solid #d0d7de;padding-bottom:0.2em;margin-top:1.8em;font-size:1.3em}
h3{margin:1.2em 0 0.4em;font-size:1.05em}
.sub{color:#57606a;margin:0 0 1em}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:1em 0}
.card{flex:1 1 200px;border:1px solid #d0d7de;border-radius:8px;padding:10px 14px;background:#f6f8fa}
.card .label{font-size:0.8em;text-transform:uppercase;letter-spacing:0.04em;color:#57606a}
.card .value{font-size:1.45em;font-weight:600;margin:2px 0}
.card .detail{font-size:0.85em;color:#57606a}
.card.bad{background:#fff1f0;border-color:#f5a39c}.card.bad .value{color:#b42318}
.card.good{background:#effaf2;border-color:#9fd9ae}.card.good .value{color:#1a7f37}
p.lead{font-size:1.15em;margin:0.4em 0 0.8em}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0.8em 0}
dl.kv dt{font-weight:600;color:#57606a}dl.kv dd{margin:0}
p.warn{background:#fff8e5;border-left:4px solid #d4a72c;padding:6px 10px}
p.good{color:#1a7f37}
p.note{color:#57606a;font-size:0.9em}
table{border-collapse:collapse;margin:0.5em 0 1.2em;font-size:0.88em}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.flag td{background:#fff1f0}
img{max-width:100%}
figure{margin:0.5em 0}
ul.examples{padding-left:1.2em;font-size:0.9em}
ul.examples li{margin:0.25em 0}
ul.examples .doc{color:#57606a}
mark{background:#ffd8d3;padding:0 2px}
details{margin:1.5em 0;border:1px solid #d0d7de;border-radius:8px;padding:0.5em 1em}
summary{cursor:pointer;font-weight:600}
pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:0.8em;max-height:30em}
"""


def _render_html_blocks(blocks: Sequence[_Block]) -> list[str]:
    body: list[str] = []
    esc = html.escape
    for b in blocks:
        if isinstance(b, _Heading):
            anchor = f' id="{esc(b.anchor)}"' if b.anchor else ""
            body.append(f"<h{b.level}{anchor}>{esc(b.text)}</h{b.level}>")
        elif isinstance(b, _Para):
            cls = f' class="{b.tone}"' if b.tone else ""
            body.append(f"<p{cls}>{esc(b.text)}</p>")
        elif isinstance(b, _Table):
            head = "".join(f"<th>{esc(h)}</th>" for h in b.headers)
            rows = []
            for i, row in enumerate(b.rows):
                flag = ' class="flag"' if i < len(b.flagged) and b.flagged[i] else ""
                cells = "".join(
                    f'<td class="num">{esc(c)}</td>' if j in b.numeric else f"<td>{esc(c)}</td>"
                    for j, c in enumerate(row)
                )
                rows.append(f"<tr{flag}>{cells}</tr>")
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
        elif isinstance(b, _Cards):
            cards = "".join(
                f'<div class="card {tone}"><div class="label">{esc(label)}</div>'
                f'<div class="value">{esc(value)}</div><div class="detail">{esc(detail)}</div></div>'
                for label, value, detail, tone in b.cards
            )
            body.append(f'<div class="cards">{cards}</div>')
        elif isinstance(b, _Examples):
            items = "".join(
                f"<li><b>{esc(kw)}</b>: {esc(text[:s])}<mark>{esc(text[s:e])}</mark>{esc(text[e:])} "
                f'<span class="doc">({esc(doc)})</span></li>'
                for kw, text, (s, e), doc in b.items
            )
            body.append(f'<ul class="examples">{items}</ul>')
        elif isinstance(b, _KeyValue):
            items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in b.items)
            body.append(f'<dl class="kv">{items}</dl>')
        elif isinstance(b, _Pre):
            body.append(f"<pre>{esc(b.text)}</pre>")
        elif isinstance(b, _Details):
            inner = "\n".join(_render_html_blocks(b.blocks))
            body.append(f"<details><summary>{esc(b.summary)}</summary>\n{inner}\n</details>")
        else:
            data = base64.b64encode(b.png).decode("ascii")
            body.append(f'<figure><img alt="{esc(b.alt)}" src="data:image/png;base64,{data}"></figure>')
    return body


def _render_html(blocks: Sequence[_Block], title: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(_render_html_blocks(blocks))
        + "\n</body></html>\n"
    )


# -- helpers -------------------------------------------------------------------------------------
def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "class"


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class _ClassRow:
    """One attribute of a class, counted from the co-occurrence counts."""

    keyword: str
    before: dict[str, int]  # regard label -> sentences
    after: dict[str, int] | None

    @property
    def n(self) -> int:
        return sum(self.before.values())

    @property
    def kept(self) -> int | None:
        return sum(self.after.values()) if self.after is not None else None


def _class_rows(cls: str, before: CooccurrenceCounts, after: CooccurrenceCounts | None) -> list[_ClassRow]:
    keywords = {kw for _, kw in before.attributes(cls)} | (
        {kw for _, kw in after.attributes(cls)} if after is not None else set()
    )
    rows = [
        _ClassRow(
            kw,
            before.regard_distribution(cls, kw),
            after.regard_distribution(cls, kw) if after is not None else None,
        )
        for kw in keywords
    ]
    return sorted((r for r in rows if r.n), key=lambda r: (-r.n, r.keyword))


def _regard_figure(cls: str, rows: Sequence[_ClassRow], cap: float | None, top: int) -> bytes:
    """One row per attribute (top ``top`` by sentences, the rest summed): before and after bars."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    shown = list(rows[:top])
    rest = rows[top:]
    if rest:
        before_sum = {r: sum(x.before[r] for x in rest) for r in REGARD_LABELS}
        after_sum = (
            {r: sum((x.after or {}).get(r, 0) for x in rest) for r in REGARD_LABELS}
            if rest[0].after is not None
            else None
        )
        shown.append(_ClassRow(f"{len(rest)} other attributes", before_sum, after_sum))
    paired = shown[0].after is not None if shown else False
    per_row = 0.62 if paired else 0.36
    height = 1.0 + per_row * len(shown)
    fig = Figure(figsize=(9.0, height), dpi=100)
    FigureCanvasAgg(fig)  # the Agg backend, without touching pyplot's global backend
    ax = fig.add_axes((0.2, 0.55 / height, 0.56, 1 - 0.85 / height))
    bar_h = 0.36 if paired else 0.7
    yticks, ylabels = [], []
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
            neg = dist.get("negative", 0)
            note = (
                f"{label}: n={total}, negative {pct(neg, total)}"
                if paired
                else f"n={total}, negative {pct(neg, total)}"
            )
            ax.text(1.02, y, note, va="center", fontsize=8, color="#333")
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
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    used = [r for r in CHART_ORDER if any(x.before.get(r) or (x.after or {}).get(r) for x in shown)]
    handles = [Patch(color=REGARD_COLORS[r], label=r) for r in used]
    fig.legend(
        handles=handles,
        loc="lower left",
        ncol=len(handles),
        fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.2, 0),
    )
    title = f"{cls}: regard of person sentences" + (
        ", before (upper bar) and after (lower bar) filtering" if paired else ""
    )
    fig.suptitle(title, fontsize=10, x=0.2, ha="left", y=1 - 0.12 / height)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _words_cell(items: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{w} ({s:.2f})" for w, s in items if s > 0)


def _score_blocks(
    cls: str,
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    sc: ClassScores,
    top_k: int,
    mitigation_k: int,
    settings: Mapping[str, Any],
) -> list[_Block]:
    """Word-level bias scores, only rows and columns that hold data."""
    if len(sc.keywords) < 2 or not sc.words:  # with one attribute every eq. 1 score is 1: no information
        return []
    columns = [("eq. 1", None), *[(f"eq. 2, r={r}", r) for r in REGARDS]]
    rows = []
    for kw in sc.keywords:
        cells = [_words_cell(sc.top(kw, top_k, r)) for _, r in columns]
        if any(cells):
            rows.append([kw, *cells])
    keep_cols = [j for j in range(len(columns)) if any(row[j + 1] for row in rows)]
    if not rows or not keep_cols:
        return []
    blocks: list[_Block] = [
        _Heading(3, f"Words most associated with each attribute (top {top_k}, score in parentheses)"),
        _Para(EXPLAIN["eq1"], "note"),
        _Para(EXPLAIN["eq2"], "note"),
        _Table(
            ["attribute", *[columns[j][0] for j in keep_cols]],
            [[row[0], *[row[j + 1] or "-" for j in keep_cols]] for row in rows],
        ),
    ]
    if after is not None:
        effect = [
            r
            for r in mitigation_effect(before, after, cls, top_k=mitigation_k, regard="negative", **settings)
            if r["count_before"] > 0 and not (isinstance(r["percent"], float) and math.isnan(r["percent"]))
        ]
        if effect:
            blocks += [
                _Heading(3, "Did filtering remove the negatively biased words?"),
                _Para(EXPLAIN["effect"], "note"),
                _Table(
                    [
                        "attribute",
                        "word",
                        "eq. 2 (negative) before",
                        "count before",
                        "count after",
                        "effect %",
                    ],
                    [
                        [
                            r["keyword"],
                            r["word"],
                            _fmt(r["score_before"]),
                            str(r["count_before"]),
                            str(r["count_after"]),
                            _fmt(r["percent"], 0),
                        ]
                        for r in effect
                    ],
                    numeric={2, 3, 4, 5},
                ),
            ]
    return blocks


def _class_blocks(
    cls: str,
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    status: Mapping[str, AttributeRow],
    cap: float | None,
    examples: Mapping[str, Sequence[Mapping[str, Any]]],
    top_attributes: int,
) -> tuple[list[_Block], _Figure | None]:
    rows = _class_rows(cls, before, after)
    if not rows:
        return [], None
    n = sum(r.n for r in rows)
    neg = sum(r.before["negative"] for r in rows)
    title = f"{cls}: {len(rows)} attribute{'s' if len(rows) != 1 else ''}, {n} person sentences, {pct(neg, n)} negative"
    if after is not None:
        kept = sum(r.kept or 0 for r in rows)
        title += f", {n - kept} dropped"
    blocks: list[_Block] = [_Heading(2, title, anchor=_slug(cls))]
    fig = _Figure(
        f"figures/regard_{_slug(cls)}.png",
        _regard_figure(cls, rows, cap, top_attributes),
        f"Regard per attribute, {cls}",
    )
    blocks.append(fig)
    headers = ["attribute", "person sentences", "negative before"]
    if after is not None:
        headers += ["kept", "negative after", "dropped", "cap status"]

    def table_row(r: _ClassRow) -> list[str]:
        row = [r.keyword, str(r.n), pct(r.before["negative"], r.n)]
        if after is not None and r.after is not None and r.kept is not None:
            st = status.get(r.keyword)
            state = (
                ("ABOVE CAP: " + st.reason) if st is not None and st.over_cap else ("within" if st else "")
            )
            row += [str(r.kept), pct(r.after["negative"], r.kept), str(r.n - r.kept), state]
        return row

    def notable(i: int, r: _ClassRow) -> bool:  # in the chart, above the cap, or with drops
        st = status.get(r.keyword)
        return i < top_attributes or bool(st and st.over_cap) or (r.kept is not None and r.kept < r.n)

    main = [r for i, r in enumerate(rows) if notable(i, r)]
    rest = [r for i, r in enumerate(rows) if not notable(i, r)]

    def table(part: list[_ClassRow]) -> _Table:
        flagged = [bool((st := status.get(r.keyword)) and st.over_cap) for r in part]
        return _Table(headers, [table_row(r) for r in part], flagged, numeric={1, 2, 3, 4, 5})

    blocks.append(table(main))
    if rest:
        blocks.append(
            _Details(
                f"{len(rest)} more attributes with fewer sentences, no drops, within the cap",
                [table(rest)],
            )
        )
    items = [
        (
            r.keyword,
            e["text"],
            (int(e["mark"][0]), int(e["mark"][1])),
            f"document {e.get('id') or e.get('doc_index')}",
        )
        for r in rows
        for e in list(examples.get(r.keyword, ()))[:EXAMPLES_SHOWN]
    ]
    if items:
        blocks += [
            _Heading(3, "Dropped sentences, a few per attribute (negative toward the marked mention)"),
            _Examples(items),
        ]
    return blocks, fig


def _headline_blocks(
    stream_stats: Mapping[str, Any] | None,
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    rows: Sequence[AttributeRow],
) -> list[_Block]:
    run = (stream_stats or {}).get("run") or {}
    over = sorted((r for r in rows if r.over_cap), key=lambda r: (-r.share_after, r.keyword))
    if stream_stats:
        h = headline_numbers(stream_stats)
        docs_in, docs_out, judged, dropped = (
            h["docs_in"],
            h["docs_out"],
            h["sentences_judged"],
            h["sentences_dropped"],
        )
        doc_detail = (
            f"{h['docs_dropped']} dropped, {h['docs_modified']} modified, {h['docs_skipped']} skipped"
        )
    else:  # counts only: the same numbers as the stream's counters (documents the stream output)
        docs_in = before.totals["documents"]
        docs_out = after.totals["documents"] if after is not None else docs_in
        judged = before.totals["sentences_seen"]
        dropped = judged - (after.totals["sentences_seen"] if after is not None else judged)
        doc_detail = f"{docs_in - docs_out} dropped"
    lead = (
        f"Kept {docs_out:,} of {docs_in:,} documents; dropped {dropped:,} of {judged:,} judged sentences "
        f"({pct(dropped, judged)})"
    )
    if run:
        lead += (
            f"; {len(over)} attribute{'s' if len(over) != 1 else ''} above the {share_text(run['cap'])} cap."
            if over
            else f"; every attribute within the {share_text(run['cap'])} cap."
        )
    else:
        lead += "."
    cards = [
        ("documents kept", f"{docs_out:,} of {docs_in:,}", doc_detail, ""),
        (
            "judged sentences dropped",
            f"{dropped:,} ({pct(dropped, judged)})",
            f"of {judged:,} sentences with a person-sense keyword",
            "",
        ),
    ]
    if run:
        strict = run.get("warmup") == 0
        cards.append(
            (
                "negative-regard cap",
                f"{share_text(run['cap'])} per attribute",
                "strict: holds from the first sentence"
                if strict
                else f"holds after {run.get('warmup')} kept sentences",
                "",
            )
        )
        cards.append(
            (
                "attributes above the cap",
                str(len(over)) if over else "none",
                ", ".join(r.keyword for r in over[:6]) + (" ..." if len(over) > 6 else "")
                if over
                else f"all {len(rows)} attributes within",
                "bad" if over else "good",
            )
        )
    blocks: list[_Block] = [_Para(lead, "lead"), _Cards(cards)]
    if not run:
        blocks.append(
            _Para(
                "Cap, settings and model are unknown: pass the run's stats.json (--stream-stats) to see them "
                "and which attributes are above the cap.",
                "note",
            )
        )
        return blocks
    inputs = [Path(x).name for x in run.get("shards", [])]
    blocks.append(
        _KeyValue(
            [
                ("cap", cap_text(run)),
                ("model", model_text(run) + "; its regard decisions drive the drops"),
                (
                    "settings",
                    f"granularity {run.get('granularity')}, seed {run.get('seed')}, taxonomy {run.get('taxonomy')}",
                ),
                (
                    "input" + ("s" if len(inputs) != 1 else ""),
                    ", ".join(inputs[:5]) + (f" and {len(inputs) - 5} more" if len(inputs) > 5 else ""),
                ),
            ]
        )
    )
    if over:
        blocks.append(
            _Para(
                f"{len(over)} attribute{'s' if len(over) != 1 else ''} ended above the cap: the cap holds once an "
                f"attribute has {run.get('warmup')} kept sentences (the warm-up) and these have fewer. "
                "--warmup 0 makes the cap strict, at the cost of dropping every negative sentence about an "
                "attribute until it has 1/cap kept sentences.",
                "warn",
            )
        )
        blocks.append(
            _Table(
                ["attribute", "kept person sentences", "negative after", "cap", "reason"],
                [
                    [
                        r.keyword,
                        str(r.kept),
                        f"{r.negative_after} ({pct(r.negative_after, r.kept)})",
                        share_text(r.cap or 0.0),
                        r.reason,
                    ]
                    for r in over
                ],
                [True] * len(over),
                numeric={1, 2, 3},
            )
        )
    return blocks


def _appendix(
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    stream_stats: Mapping[str, Any] | None,
    vocab_notes: list[str],
    settings: Mapping[str, Any],
) -> _Details:
    def col(c: CooccurrenceCounts) -> dict[str, str]:
        mem = c.memory_report()
        return {
            "documents": str(c.totals["documents"]),
            "annotated sentences": str(c.totals["sentences_seen"]),
            "sentences counted (>= 1 person mention)": str(c.totals["sentences_counted"]),
            "person mentions": str(c.totals["mentions"]),
            "word entries stored": str(mem["entries"]),
            "pruning: sentences per bucket": str(mem["prune_every"]),
            "pruning: max undercount of any c(w,a,r)": str(mem["error_bound"]),
            "word filter": "custom stopword list"
            if "stopword_list" in c.config()
            else json.dumps(c.config(), sort_keys=True),
            "taxonomy/model (documents)": ", ".join(f"{k} ({v})" for k, v in sorted(c.provenance.items()))
            or "-",
        }

    b, a = col(before), col(after) if after is not None else None
    blocks: list[_Block] = [
        _Heading(3, "Formulas"),
        _Para(
            "Eq. 1: p(w|a) / mean over a' of p(w|a'). Eq. 2: min(eq. 1, p(r|w,a) / mean over r' of p(r'|w,a)) "
            "with p(r|w,a) = c(w,a,r) / sum over r' of c(w,a,r'). A sentence counts once per attribute, under "
            "its most negative regard toward it (the cap controller's rule)."
        ),
        _Heading(3, "Vocabulary rule"),
        _Para(
            f"A word is scored when it is in the top {settings['top_n']} words (c(w,a) >= "
            f"{settings['min_word_count']}) of at least {settings['min_attribute_share']:.0%} of its class's "
            f"attributes with >= {settings['min_attribute_sentences']} sentences."
        ),
        *[_Para(n, "note") for n in vocab_notes],
        _Heading(3, "Co-occurrence counts"),
        _Table(
            ["", "before"] + (["after"] if a is not None else []),
            [[k, v] + ([a[k]] if a is not None else []) for k, v in b.items()],
        ),
    ]
    if stream_stats:
        blocks += [
            _Heading(3, "Stream statistics (stats.json)"),
            _Pre(json.dumps(stream_stats, indent=1, sort_keys=True)),
        ]
    return _Details("Appendix: formulas, vocabulary rule, counting internals, raw statistics", blocks)


def write_report(
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    out_dir: str | Path,
    top_k: int = 10,
    stream_stats: Mapping[str, Any] | None = None,
    *,
    examples: Mapping[str, Any] | None = None,
    top_n: int = DEFAULT_TOP_N,
    min_word_count: int = DEFAULT_MIN_WORD_COUNT,
    min_attribute_sentences: int = DEFAULT_MIN_ATTRIBUTE_SENTENCES,
    min_attribute_share: float = DEFAULT_MIN_ATTRIBUTE_SHARE,
    mitigation_k: int = 5,
    top_attributes: int = TOP_ATTRIBUTES,
    title: str = "fairstream bias report",
) -> ReportPaths:
    """Write the bias report (Markdown, self-contained HTML, counts JSON, PNG figures).

    Args:
        before: Counts of the data before filtering (or the only counts).
        after: Counts after filtering, for before/after tables and figures; may be None.
        out_dir: Output folder (created if needed).
        top_k: Words per attribute in the top-word tables.
        stream_stats: The run's ``stats.json`` (with its ``"run"`` settings): headline and cap status.
        examples: The run's ``examples.json`` (``DroppedExamples.to_dict()``): dropped sentences shown.
        top_n: Vocabulary rule: each attribute's top ``top_n`` words (paper: 20,000).
        min_word_count: Minimum ``c(w, a)`` for a word to enter an attribute's top list.
        min_attribute_sentences: Minimum sentences for an attribute to be scored.
        min_attribute_share: Vocabulary rule: share of attributes whose top list must hold a
            word (1.0: the paper's intersection; lower it for small samples).
        mitigation_k: Words per attribute in the before/after table.
        top_attributes: Attributes drawn per chart (by sentences); the rest are summed in one bar.
        title: Page title.

    Returns:
        The paths written.

    Raises:
        ValueError: An argument is out of range.
    """
    for name, value in (("top_k", top_k), ("mitigation_k", mitigation_k), ("top_attributes", top_attributes)):
        if value < 1:
            raise ValueError(f"{name}={value} must be >= 1")
    out = Path(out_dir)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {
        "top_n": top_n,
        "min_word_count": min_word_count,
        "min_attribute_sentences": min_attribute_sentences,
        "min_attribute_share": min_attribute_share,
    }
    rows = attribute_rows(stream_stats) if stream_stats else []
    status = {r.keyword: r for r in rows}
    run = (stream_stats or {}).get("run") or {}
    blocks: list[_Block] = [
        _Heading(1, title),
        _Para(f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.", "note"),
        *_headline_blocks(stream_stats, before, after, rows),
    ]

    def class_order(cls: str) -> tuple[int, int, str]:  # where the filter acted most first
        n = sum(before.sentence_count(cls, kw) for _, kw in before.attributes(cls))
        kept = (
            sum(after.sentence_count(cls, kw) for _, kw in after.attributes(cls)) if after is not None else n
        )
        return (-(n - kept), -n, cls)

    classes = sorted(
        set(before.classes()) | (set(after.classes()) if after is not None else set()), key=class_order
    )
    if not classes:
        blocks.append(_Para("No person-sense mentions were counted: nothing to report per class."))
    figures: list[_Figure] = []
    vocab_notes: list[str] = []
    example_map = (examples or {}).get("examples", {})
    for cls in classes:
        class_blocks, fig = _class_blocks(
            cls, before, after, status, run.get("cap"), example_map, top_attributes
        )
        sc = score_class(before, cls, **settings)
        class_blocks += _score_blocks(cls, before, after, sc, top_k, mitigation_k, settings)
        if sc.skipped:
            vocab_notes.append(
                f"{cls}: not scored for too few sentences: "
                + ", ".join(f"{k} ({v})" for k, v in sorted(sc.skipped.items()))
            )
        if sc.keywords and not sc.words:
            vocab_notes.append(
                f"{cls}: no word passes the vocabulary rule (lower --min-attribute-share on small data)"
            )
        blocks += class_blocks
        if fig is not None:
            figures.append(fig)
    blocks.append(_appendix(before, after, stream_stats, vocab_notes, settings))

    fig_paths = []
    for fig in figures:
        path = out / fig.relpath
        atomic_write_bytes(path, fig.png)
        fig_paths.append(path)
    counts_path = before.save(out / "counts.json")
    counts_after_path = after.save(out / "counts_after.json") if after is not None else None
    if after is None:
        (out / "counts_after.json").unlink(missing_ok=True)  # a stale one would contradict this report
    md_path, html_path = out / "report.md", out / "report.html"
    atomic_write_text(md_path, _render_markdown(blocks))
    atomic_write_text(html_path, _render_html(blocks, title))
    logger.info("wrote bias report to %s (%d classes)", out, len(classes))
    return ReportPaths(md_path, html_path, counts_path, counts_after_path, tuple(fig_paths))
