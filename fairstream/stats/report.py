"""Bias report: Markdown, a self-contained HTML page, the counts behind it and PNG figures.

``write_report`` writes into ``out_dir``::

    report.md           tables, figures linked from figures/
    report.html         the same, with the figures embedded as base64 PNG (opens without a server)
    counts.json         the counts the report is about (``before``)
    counts_after.json   the counts after filtering, when given
    figures/regard_<class>.png

For each attribute class the report shows the regard distribution per attribute (stacked bars,
like the paper's Figure 2, before and after filtering side by side when both are given), the
sentence counts behind it, the top-k words per attribute for eq. 1 and for eq. 2 with
``r = positive / neutral / negative`` (like the paper's Tables 2 and 7), and, with ``after``,
the mitigation effect ``100 * p'(w|a) / p(w|a)`` of each attribute's most negatively biased
words. Every file is written atomically (temporary file, then ``os.replace``).
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

logger = logging.getLogger(__name__)

REGARD_COLORS = {"positive": "#2e7d32", "neutral": "#9e9e9e", "negative": "#c62828", "unknown": "#e0e0e0"}


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


@dataclass
class _Para:
    text: str


@dataclass
class _Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass
class _Figure:
    relpath: str  # relative to out_dir
    png: bytes
    alt: str


_Block = _Heading | _Para | _Table | _Figure


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _render_markdown(blocks: Sequence[_Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, _Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, _Para):
            out.append(b.text)
        elif isinstance(b, _Table):
            lines = ["| " + " | ".join(_md_cell(h) for h in b.headers) + " |", "|" + "---|" * len(b.headers)]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("\n".join(lines))
        else:
            out.append(f"![{b.alt}]({b.relpath})")
        out.append("")
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
table{border-collapse:collapse;margin:0.6em 0 1.4em;font-size:0.9em}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
img{max-width:100%;border:1px solid #eee}
h2{border-bottom:1px solid #ddd;padding-bottom:0.2em;margin-top:2em}
code{background:#f5f5f5;padding:0 3px}
"""


def _render_html(blocks: Sequence[_Block], title: str) -> str:
    body: list[str] = []
    for b in blocks:
        if isinstance(b, _Heading):
            body.append(f"<h{b.level}>{html.escape(b.text)}</h{b.level}>")
        elif isinstance(b, _Para):
            body.append(f"<p>{html.escape(b.text)}</p>")
        elif isinstance(b, _Table):
            head = "".join(f"<th>{html.escape(h)}</th>" for h in b.headers)
            rows = "".join(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in b.rows
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        else:
            data = base64.b64encode(b.png).decode("ascii")
            body.append(
                f'<figure><img alt="{html.escape(b.alt)}" src="data:image/png;base64,{data}"></figure>'
            )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


# -- helpers -------------------------------------------------------------------------------------
def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "class"


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:.{digits}f}"
    return str(value)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out += _flatten(value, name + ".")
        elif isinstance(value, float):
            out.append((name, f"{value:.6g}"))
        elif isinstance(value, str | int | bool) or value is None:
            out.append((name, str(value)))
        else:
            out.append((name, json.dumps(value, default=str)))
    return out


def _stats_blocks(stats: Mapping[str, Any]) -> list[_Block]:
    """Scalars (nested dicts flattened) as one table; each dict of dicts as its own table."""
    scalars: dict[str, Any] = {}
    blocks: list[_Block] = []
    for key, value in stats.items():
        if isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
            flat = {name: dict(_flatten(inner)) for name, inner in value.items()}
            columns = sorted({c for row in flat.values() for c in row})
            rows = [[name, *[row.get(c, "") for c in columns]] for name, row in sorted(flat.items())]
            blocks += [_Heading(3, str(key)), _Table([str(key), *columns], rows)]
        else:
            scalars[key] = value
    if scalars:
        blocks.insert(0, _Table(["statistic", "value"], [list(kv) for kv in _flatten(scalars)]))
    return blocks


def _words_cell(items: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{w} ({s:.2f})" for w, s in items) if items else "-"


def _regard_figure(
    attribute_class: str, panels: Sequence[tuple[str, CooccurrenceCounts]], keywords: Sequence[str]
) -> bytes:
    """Stacked horizontal bars of the sentence share per regard, one panel per counts object."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = 1.7 + 0.28 * max(len(keywords), 1)
    fig = Figure(figsize=(4.2 * len(panels) + 1.2, height), dpi=90)
    FigureCanvasAgg(fig)  # the Agg backend, without touching pyplot's global backend
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    ys = list(range(len(keywords)))
    for ax, (label, counts) in zip(axes, panels, strict=True):
        left = [0.0] * len(keywords)
        totals = [counts.sentence_count(attribute_class, kw) for kw in keywords]
        for regard in REGARD_LABELS:
            shares = [
                counts.sentence_count(attribute_class, kw, regard) / t if t else 0.0
                for kw, t in zip(keywords, totals, strict=True)
            ]
            if regard == "unknown" and not any(shares):
                continue
            ax.barh(ys, shares, left=left, color=REGARD_COLORS[regard], label=regard, height=0.75)
            left = [a + b for a, b in zip(left, shares, strict=True)]
        for y, t in zip(ys, totals, strict=True):
            ax.text(1.01, y, f"n={t}", va="center", fontsize=7)
        ax.set_xlim(0, 1.18)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_xticklabels(["0", "25%", "50%", "75%", "100%"], fontsize=8)
        ax.set_title(f"{attribute_class}: {label}", fontsize=9)
    axes[0].invert_yaxis()  # first attribute on top (the axes share y)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels(keywords, fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _summary_table(before: CooccurrenceCounts, after: CooccurrenceCounts | None) -> _Table:
    def col(c: CooccurrenceCounts) -> dict[str, str]:
        mem = c.memory_report()
        return {
            "documents": str(c.totals["documents"]),
            "annotated sentences considered": str(c.totals["sentences_seen"]),
            "sentences counted (>= 1 person mention)": str(c.totals["sentences_counted"]),
            "person mentions": str(c.totals["mentions"]),
            "word entries stored": str(mem["entries"]),
            "pruning: sentences per bucket": str(mem["prune_every"]),
            "pruning: max undercount of any c(w,a,r)": str(mem["error_bound"]),
            "word filter": json.dumps(c.config(), sort_keys=True)
            if "stopword_list" not in c.config()
            else "custom stopword list",
            "taxonomy/model (documents)": ", ".join(f"{k} ({v})" for k, v in sorted(c.provenance.items()))
            or "-",
        }

    b = col(before)
    headers = ["", "before"] + (["after"] if after is not None else [])
    a = col(after) if after is not None else None
    rows = [[k, v] + ([a[k]] if a is not None else []) for k, v in b.items()]
    return _Table(headers, rows)


def _class_blocks(
    attribute_class: str,
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    sc: ClassScores,
    top_k: int,
    mitigation_k: int,
    settings: Mapping[str, Any],
    figures_dir_rel: str,
) -> tuple[list[_Block], _Figure]:
    blocks: list[_Block] = [_Heading(2, f"Class: {attribute_class}")]
    keywords = [kw for _, kw in before.attributes(attribute_class)]
    if after is not None:
        keywords = sorted(set(keywords) | {kw for _, kw in after.attributes(attribute_class)})
    panels = [("before", before)] + ([("after", after)] if after is not None else [])
    png = _regard_figure(attribute_class, panels, keywords)
    fig = _Figure(
        f"{figures_dir_rel}/regard_{_slug(attribute_class)}.png",
        png,
        f"Regard per attribute: {attribute_class}",
    )
    blocks += [_Para("Share of sentences per regard for each attribute (person-sense mentions)."), fig]

    headers = ["attribute", "sentences", *REGARD_LABELS, "tokens"]
    if after is not None:
        headers += ["sentences after", "negative after", "negative share before -> after"]
    rows = []
    for kw in keywords:
        dist = before.regard_distribution(attribute_class, kw)
        n = before.sentence_count(attribute_class, kw)
        row = [
            kw,
            str(n),
            *[str(dist[r]) for r in REGARD_LABELS],
            str(before.token_total(attribute_class, kw)),
        ]
        if after is not None:
            n_after = after.sentence_count(attribute_class, kw)
            neg_after = after.sentence_count(attribute_class, kw, "negative")
            share_b = dist["negative"] / n if n else math.nan
            share_a = neg_after / n_after if n_after else math.nan
            row += [str(n_after), str(neg_after), f"{_fmt(100 * share_b, 1)}% -> {_fmt(100 * share_a, 1)}%"]
        rows.append(row)
    blocks += [_Heading(3, "Sentence counts by regard (the data behind the figure)"), _Table(headers, rows)]

    blocks.append(_Heading(3, f"Top {top_k} words per attribute"))
    share = settings["min_attribute_share"]
    rule = (
        "intersection of each attribute's" if share >= 1.0 else f"words in >= {share:.0%} of the attributes'"
    )
    note = (
        f"Vocabulary V: {len(sc.words)} words ({rule} top {settings['top_n']} words "
        f"with c(w,a) >= {settings['min_word_count']}); attributes with >= "
        f"{settings['min_attribute_sentences']} sentences: {len(sc.keywords)}."
    )
    if sc.skipped:
        note += (
            " Left out for too few sentences: "
            + ", ".join(f"{k} ({v})" for k, v in sorted(sc.skipped.items()))
            + "."
        )
    if not sc.words and len(sc.keywords) > 1 and share >= 1.0:
        note += " V is empty: on small samples lower min_attribute_share or min_word_count."
    blocks.append(_Para(note + " Scores in parentheses."))
    if sc.keywords and sc.words:
        rows = [
            [kw, _words_cell(sc.top(kw, top_k))] + [_words_cell(sc.top(kw, top_k, r)) for r in REGARDS]
            for kw in sc.keywords
        ]
        blocks.append(_Table(["attribute", "eq. 1 (frequency)", *[f"eq. 2, r={r}" for r in REGARDS]], rows))
    else:
        blocks.append(_Para("No scores: no attribute has enough sentences, or V is empty."))

    if after is not None and sc.keywords and sc.words:
        effect = mitigation_effect(
            before, after, attribute_class, top_k=mitigation_k, regard="negative", **settings
        )
        blocks.append(
            _Heading(3, "Before/after filtering: mitigation effect on the most negatively biased words")
        )
        blocks.append(
            _Para(
                f"Each attribute's top {mitigation_k} words by eq. 2 (r=negative) before filtering; "
                "effect = 100 x p'(w|a) / p(w|a) (100 = unchanged, 0 = gone)."
            )
        )
        rows = [
            [
                r["keyword"],
                r["word"],
                _fmt(r["score_before"]),
                str(r["count_before"]),
                str(r["count_after"]),
                f"{r['p_before']:.2e}",
                f"{r['p_after']:.2e}",
                _fmt(r["percent"], 1),
            ]
            for r in effect
        ]
        headers = [
            "attribute",
            "word",
            "eq. 2 neg. before",
            "c before",
            "c after",
            "p before",
            "p after",
            "effect %",
        ]
        blocks.append(_Table(headers, rows))
    return blocks, fig


def write_report(
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    out_dir: str | Path,
    top_k: int = 10,
    stream_stats: dict[str, Any] | None = None,
    *,
    top_n: int = DEFAULT_TOP_N,
    min_word_count: int = DEFAULT_MIN_WORD_COUNT,
    min_attribute_sentences: int = DEFAULT_MIN_ATTRIBUTE_SENTENCES,
    min_attribute_share: float = DEFAULT_MIN_ATTRIBUTE_SHARE,
    mitigation_k: int = 5,
    title: str = "fairstream bias report",
) -> ReportPaths:
    """Write the bias report (Markdown, self-contained HTML, counts JSON, PNG figures).

    Args:
        before: Counts of the data before filtering (or the only counts).
        after: Counts after filtering, for before/after tables and figures; may be None.
        out_dir: Output folder (created if needed).
        top_k: Words per attribute in the top-word tables.
        stream_stats: The stream's own statistics, shown as a table (nested dicts flattened).
        top_n: Vocabulary rule: each attribute's top ``top_n`` words (paper: 20,000).
        min_word_count: Minimum ``c(w, a)`` for a word to enter an attribute's top list.
        min_attribute_sentences: Minimum sentences for an attribute to be scored.
        min_attribute_share: Vocabulary rule: share of attributes whose top list must hold a
            word (1.0: the paper's intersection; lower it for small samples).
        mitigation_k: Words per attribute in the before/after table.
        title: Page title.

    Returns:
        The paths written.

    Raises:
        ValueError: An argument is out of range.
    """
    if top_k < 1:
        raise ValueError(f"top_k={top_k} must be >= 1")
    if mitigation_k < 1:
        raise ValueError(f"mitigation_k={mitigation_k} must be >= 1")
    out = Path(out_dir)
    figures_dir = out / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {
        "top_n": top_n,
        "min_word_count": min_word_count,
        "min_attribute_sentences": min_attribute_sentences,
        "min_attribute_share": min_attribute_share,
    }

    blocks: list[_Block] = [
        _Heading(1, title),
        _Para(
            f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}. Counts: counts.json"
            + (" (before filtering) and counts_after.json (after)." if after is not None else ".")
            + " Eq. 1: p(w|a) / mean over a' of p(w|a'); eq. 2: min(eq. 1, p(r|w,a) / mean over r' of "
            "p(r'|w,a)) with p(r|w,a) = c(w,a,r) / sum over r' of c(w,a,r')."
        ),
        _Heading(2, "Summary"),
        _summary_table(before, after),
    ]
    classes = sorted(set(before.classes()) | (set(after.classes()) if after is not None else set()))
    if not classes:
        blocks.append(_Para("No person-sense mentions were counted."))
    figures: list[_Figure] = []
    for attribute_class in classes:
        sc = score_class(before, attribute_class, **settings)
        class_blocks, fig = _class_blocks(
            attribute_class, before, after, sc, top_k, mitigation_k, settings, "figures"
        )
        blocks += class_blocks
        figures.append(fig)
    if stream_stats:  # the long per-attribute table goes last, after the figures
        blocks += [_Heading(2, "Stream statistics"), *_stats_blocks(stream_stats)]

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
