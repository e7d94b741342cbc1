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

The page is built from the blocks of ``fairstream.stats.page`` and the charts of
``fairstream.stats.regard_chart``. ``write_report`` writes into ``out_dir``: ``report.md``, ``report.html`` (figures embedded as
base64 PNG, opens without a server), ``counts.json`` (before), ``counts_after.json`` (when given)
and ``figures/regard_<class>.png``; every file atomically.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fairstream.io import atomic_write
from fairstream.stats.counts import CooccurrenceCounts
from fairstream.stats.page import (
    Block,
    Cards,
    Details,
    Examples,
    Figure,
    Heading,
    KeyValue,
    Para,
    Pre,
    Table,
    render_html,
    render_markdown,
)
from fairstream.stats.regard_chart import ClassRow, class_rows, regard_figure
from fairstream.stats.regards import REGARDS
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


# -- helpers -------------------------------------------------------------------------------------
def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "class"


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


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
) -> list[Block]:
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
    blocks: list[Block] = [
        Heading(3, f"Words most associated with each attribute (top {top_k}, score in parentheses)"),
        Para(EXPLAIN["eq1"], "note"),
        Para(EXPLAIN["eq2"], "note"),
        Table(
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
                Heading(3, "Did filtering remove the negatively biased words?"),
                Para(EXPLAIN["effect"], "note"),
                Table(
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
) -> tuple[list[Block], Figure | None]:
    rows = class_rows(cls, before, after)
    if not rows:
        return [], None
    n = sum(r.n for r in rows)
    neg = sum(r.before["negative"] for r in rows)
    title = f"{cls}: {len(rows)} attribute{'s' if len(rows) != 1 else ''}, {n} person sentences, {pct(neg, n)} negative"
    if after is not None:
        kept = sum(r.kept or 0 for r in rows)
        title += f", {n - kept} dropped"
    blocks: list[Block] = [Heading(2, title, anchor=_slug(cls))]
    fig = Figure(
        f"figures/regard_{_slug(cls)}.png",
        regard_figure(cls, rows, cap, top_attributes),
        f"Regard per attribute, {cls}",
    )
    blocks.append(fig)
    headers = ["attribute", "person sentences", "negative before"]
    if after is not None:
        headers += ["kept", "negative after", "dropped"] + (["cap status"] if status else [])

    def table_row(r: ClassRow) -> list[str]:
        row = [r.keyword, str(r.n), pct(r.before["negative"], r.n)]
        if after is not None and r.after is not None and r.kept is not None:
            st = status.get(r.keyword)
            state = (
                ("ABOVE CAP: " + st.reason) if st is not None and st.over_cap else ("within" if st else "")
            )
            row += [str(r.kept), pct(r.after["negative"], r.kept), str(r.n - r.kept)] + (
                [state] if status else []
            )
        return row

    def notable(i: int, r: ClassRow) -> bool:  # in the chart, above the cap, or with drops
        st = status.get(r.keyword)
        return i < top_attributes or bool(st and st.over_cap) or (r.kept is not None and r.kept < r.n)

    main = [r for i, r in enumerate(rows) if notable(i, r)]
    rest = [r for i, r in enumerate(rows) if not notable(i, r)]

    def table(part: list[ClassRow]) -> Table:
        flagged = [bool((st := status.get(r.keyword)) and st.over_cap) for r in part]
        return Table(headers, [table_row(r) for r in part], flagged, numeric={1, 2, 3, 4, 5})

    blocks.append(table(main))
    if rest:
        blocks.append(
            Details(
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
            Heading(3, "Dropped sentences, a few per attribute (negative toward the marked mention)"),
            Examples(items),
        ]
    return blocks, fig


def _headline_blocks(
    stream_stats: Mapping[str, Any] | None,
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    rows: Sequence[AttributeRow],
) -> list[Block]:
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
        if run.get("cap_scope") == "global":
            holds = "global scope: every attribute at or under it, small ones included"
        elif run.get("warmup") == 0:
            holds = "strict: holds from the first sentence"
        else:
            holds = f"holds after {run.get('warmup')} kept sentences"
        cards.append(("negative-regard cap", f"{share_text(run['cap'])} per attribute", holds, ""))
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
    blocks: list[Block] = [Para(lead, "lead"), Cards(cards)]
    if not run:
        blocks.append(
            Para(
                "Cap, settings and model are unknown: pass the run's stats.json (--stream-stats) to see them "
                "and which attributes are above the cap.",
                "note",
            )
        )
        return blocks
    inputs = [Path(x).name for x in run.get("shards", [])]
    blocks.append(
        KeyValue(
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
    if over and run.get("cap_scope") == "global":
        blocks.append(
            Para(
                f"{len(over)} attribute{'s' if len(over) != 1 else ''} ended above the cap, which the global "
                "scope should never allow: check that stats.json and plan.json come from the same run.",
                "warn",
            )
        )
    elif over:
        blocks.append(
            Para(
                f"{len(over)} attribute{'s' if len(over) != 1 else ''} ended above the cap: the cap holds once an "
                f"attribute has {run.get('warmup')} kept sentences (the warm-up) and these have fewer. "
                "--warmup 0 makes the cap strict, at the cost of dropping every negative sentence about an "
                "attribute until it has 1/cap kept sentences.",
                "warn",
            )
        )
    if over:
        blocks.append(
            Table(
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
) -> Details:
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
    blocks: list[Block] = [
        Heading(3, "Formulas"),
        Para(
            "Eq. 1: p(w|a) / mean over a' of p(w|a'). Eq. 2: min(eq. 1, p(r|w,a) / mean over r' of p(r'|w,a)) "
            "with p(r|w,a) = c(w,a,r) / sum over r' of c(w,a,r'). A sentence counts once per attribute, under "
            "its most negative regard toward it (the cap controller's rule)."
        ),
        Heading(3, "Vocabulary rule"),
        Para(
            f"A word is scored when it is in the top {settings['top_n']} words (c(w,a) >= "
            f"{settings['min_word_count']}) of at least {settings['min_attribute_share']:.0%} of its class's "
            f"attributes with >= {settings['min_attribute_sentences']} sentences."
        ),
        *[Para(n, "note") for n in vocab_notes],
        Heading(3, "Co-occurrence counts"),
        Table(
            ["", "before"] + (["after"] if a is not None else []),
            [[k, v] + ([a[k]] if a is not None else []) for k, v in b.items()],
        ),
    ]
    if stream_stats:
        blocks += [
            Heading(3, "Stream statistics (stats.json)"),
            Pre(json.dumps(stream_stats, indent=1, sort_keys=True)),
        ]
    return Details("Appendix: formulas, vocabulary rule, counting internals, raw statistics", blocks)


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
    blocks: list[Block] = [
        Heading(1, title),
        Para(f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.", "note"),
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
        blocks.append(Para("No person-sense mentions were counted: nothing to report per class."))
    figures: list[Figure] = []
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
        with atomic_write(path, "wb") as fh:
            fh.write(fig.png)
        fig_paths.append(path)
    counts_path = before.save(out / "counts.json")
    counts_after_path = after.save(out / "counts_after.json") if after is not None else None
    if after is None:
        (out / "counts_after.json").unlink(missing_ok=True)  # a stale one would contradict this report
    md_path, html_path = out / "report.md", out / "report.html"
    for path, text in ((md_path, render_markdown(blocks)), (html_path, render_html(blocks, title))):
        with atomic_write(path) as fh:
            fh.write(text)
    logger.info("wrote bias report to %s (%d classes)", out, len(classes))
    return ReportPaths(md_path, html_path, counts_path, counts_after_path, tuple(fig_paths))
