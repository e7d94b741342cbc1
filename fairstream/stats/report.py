"""Bias report of a filter run: Markdown, a self-contained HTML page, the counts and PNG figures.

Written for a data engineer deciding whether to trust a run, in this order:

1. **Headline**: documents and judged sentences in and out, the dropped share; what the cap
   **guaranteed** (the model-judged negative share of every attribute <= cap, a bound on the
   model's decisions, with its warm-up exceptions) and what is **estimated** (the true negative
   share after filtering and the dropped sentences that were not negative, with 95% intervals,
   from the model's calibrated probabilities, naming the calibration; ``stats.json``'s
   ``estimates``); the cap and the run's settings, the model and its measured quality (from its
   model card), and every attribute above its cap with the reason.
2. **Attribute classes at a glance**: one row per class (person sentences, model-judged negative
   shares, drops, attributes above the cap), each linking to its section, and the taxonomy's classes
   without any mention (``fairstream.stats.report_overview``): a 16-class taxonomy stays navigable.
3. **Per attribute class**: a before/after regard chart (the top attributes by sentences, the
   rest summed in one bar, so it stays readable at any number of attributes; bars model-judged,
   the estimated true negative share a marker with its interval), the numbers behind it
   (model-judged and estimated columns, labelled), a few dropped sentences per attribute
   (truncated) and the word-level bias scores where there is data for them, each with a one-line
   explanation; the word tables show the attributes of the chart, the rest collapsed.
4. **Appendix** (collapsed): formulas, vocabulary rule, counting internals, the raw stream stats.

Counts come from one place: the headline and the cap status from ``stats.json`` (the stream's
counters plus the run's settings under ``"run"``), the per-class tables from the co-occurrence
counts, which count the same sentences the same way (a test checks they are equal).

The page is built from the blocks of ``fairstream.stats.page``: the headline's in
``fairstream.stats.report_headline``, each class's section (with the charts of
``fairstream.stats.regard_chart``) in ``fairstream.stats.report_classes``. ``write_report`` writes into ``out_dir``: ``report.md``, ``report.html`` (figures embedded as
base64 PNG, opens without a server), ``counts.json`` (before), ``counts_after.json`` (when given)
and ``figures/regard_<class>.png``; every file atomically.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairstream.io import atomic_write
from fairstream.stats.counts import CooccurrenceCounts
from fairstream.stats.page import (
    Block,
    Details,
    Figure,
    Heading,
    Para,
    Pre,
    Table,
    render_html,
    render_markdown,
)
from fairstream.stats.provenance import counts_taxonomy
from fairstream.stats.report_classes import class_blocks, score_blocks
from fairstream.stats.report_headline import headline_blocks
from fairstream.stats.report_overview import overview_blocks
from fairstream.stats.scores import (
    DEFAULT_MIN_ATTRIBUTE_SENTENCES,
    DEFAULT_MIN_ATTRIBUTE_SHARE,
    DEFAULT_MIN_WORD_COUNT,
    DEFAULT_TOP_N,
    score_class,
)
from fairstream.summary import (
    attribute_rows,
    estimates_of,
)

if TYPE_CHECKING:
    from fairstream.taxonomy import Taxonomy

logger = logging.getLogger(__name__)

TOP_ATTRIBUTES = 12  # bars per chart; the rest are summed into one bar


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
    taxonomy: Taxonomy | None = None,
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
        taxonomy: The run's taxonomy: its forms stay out of the vocabularies, the overview names its
            classes without mentions (default: the shipped taxonomy the counts record, if any; else the
            overview names none and the vocabularies leave out ``taxonomy-v1``'s forms).

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
    taxonomy = taxonomy or counts_taxonomy(before)  # a shipped one recorded in the counts, if any
    rows = attribute_rows(stream_stats) if stream_stats else []
    status = {r.keyword: r for r in rows}
    run = (stream_stats or {}).get("run") or {}
    estimates = estimates_of(stream_stats) if stream_stats else None
    blocks: list[Block] = [
        Heading(1, title),
        Para(f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.", "note"),
        *headline_blocks(stream_stats, before, after, rows),
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
    blocks += overview_blocks(
        classes,
        before,
        after,
        status,
        estimates=estimates,
        taxonomy_name=taxonomy.name if taxonomy is not None else None,
        taxonomy_classes=taxonomy.classes if taxonomy is not None else (),
    )
    figures: list[Figure] = []
    vocab_notes: list[str] = []
    example_map = (examples or {}).get("examples", {})
    for cls in classes:
        section, fig = class_blocks(
            cls, before, after, status, run.get("cap"), example_map, top_attributes, estimates=estimates
        )
        sc = score_class(before, cls, taxonomy=taxonomy, **settings)
        section += score_blocks(cls, before, after, sc, top_k, mitigation_k, top_attributes)
        if sc.skipped:
            vocab_notes.append(
                f"{cls}: not scored for too few sentences: "
                + ", ".join(f"{k} ({v})" for k, v in sorted(sc.skipped.items()))
            )
        if sc.keywords and not sc.words:
            vocab_notes.append(
                f"{cls}: no word passes the vocabulary rule (lower --min-attribute-share on small data)"
            )
        blocks += section
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
