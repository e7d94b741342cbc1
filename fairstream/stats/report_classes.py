"""The report's section of one attribute class: its regard chart and table, dropped examples and word scores.

Negative shares come in two kinds, labelled apart: model-judged (counted from the model's regard
decisions; what the cap bounds) and, where ``stats.json`` has its ``estimates``, the estimated true
share with its 95% interval and the dropped sentences estimated not negative.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fairstream.stats.counts import CooccurrenceCounts
from fairstream.stats.page import (
    Block,
    Details,
    Examples,
    Figure,
    Heading,
    Para,
    Table,
)
from fairstream.stats.regard_chart import ClassRow, class_rows, regard_figure
from fairstream.stats.regards import REGARDS
from fairstream.stats.scores import (
    ClassScores,
    mitigation_effect,
)
from fairstream.summary import (
    AttributeRow,
    estimate_cell,
    not_negative_cell,
    pct,
)

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


def class_anchor(name: str) -> str:
    """The HTML anchor of a class's section and its figure's name ("race/ethnicity" -> "race-ethnicity")."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "class"


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _words_cell(items: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{w} ({s:.2f})" for w, s in items if s > 0)


def _split(
    keywords: Sequence[str], rows: Sequence[list[str]], shown: int
) -> tuple[list[list[str]], list[list[str]]]:
    """Rows of the ``shown`` first keywords (the class's attributes with most sentences), and the rest."""
    first = set(keywords[:shown])
    return [r for r in rows if r[0] in first], [r for r in rows if r[0] not in first]


def score_blocks(
    cls: str,
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    sc: ClassScores,
    top_k: int,
    mitigation_k: int,
    top_attributes: int | None = None,
) -> list[Block]:
    """Word-level bias scores, only rows and columns that hold data.

    Attributes come in the chart's order (most sentences first); with ``top_attributes`` the rows
    of the attributes beyond it sit in a collapsed table below each table, so a class of many
    attributes does not push the next class pages down.
    """
    if len(sc.keywords) < 2 or not sc.words:  # with one attribute every eq. 1 score is 1: no information
        return []
    order = sorted(sc.keywords, key=lambda kw: (-before.sentence_count(cls, kw), kw))
    shown = len(order) if top_attributes is None else top_attributes
    columns = [("eq. 1", None), *[(f"eq. 2, r={r}", r) for r in REGARDS]]
    rows = []
    for kw in order:
        cells = [_words_cell(sc.top(kw, top_k, r)) for _, r in columns]
        if any(cells):
            rows.append([kw, *cells])
    keep_cols = [j for j in range(len(columns)) if any(row[j + 1] for row in rows)]
    if not rows or not keep_cols:
        return []
    headers = ["attribute", *[columns[j][0] for j in keep_cols]]
    main, rest = _split(order, [[row[0], *[row[j + 1] or "-" for j in keep_cols]] for row in rows], shown)
    blocks: list[Block] = [
        Heading(3, f"Words most associated with each attribute (top {top_k}, score in parentheses)"),
        Para(EXPLAIN["eq1"], "note"),
        Para(EXPLAIN["eq2"], "note"),
        Table(headers, main),
    ]
    if rest:
        blocks.append(
            Details(f"Words of {len(rest)} more attributes with fewer sentences", [Table(headers, rest)])
        )
    if after is not None:
        # the words eq. 2 ranks for negative regard; a word of score 0 is not negatively biased
        effect = [
            r
            # the scores above: the same vocabulary (the run's taxonomy), not computed twice
            for r in mitigation_effect(before, after, cls, top_k=mitigation_k, regard="negative", scores=sc)
            if r["count_before"] > 0
            and not (isinstance(r["percent"], float) and math.isnan(r["percent"]))
            and isinstance(r["score_before"], float)
            and r["score_before"] > 0
        ]
        effect.sort(key=lambda r: order.index(r["keyword"]) if r["keyword"] in order else len(order))
        if effect:
            headers = [
                "attribute",
                "word",
                "eq. 2 (negative) before",
                "count before",
                "count after",
                "effect %",
            ]
            numeric = {2, 3, 4, 5}
            table_rows = [
                [
                    r["keyword"],
                    r["word"],
                    _fmt(r["score_before"]),
                    str(r["count_before"]),
                    str(r["count_after"]),
                    _fmt(r["percent"], 0),
                ]
                for r in effect
            ]
            with_words = [kw for kw in order if any(row[0] == kw for row in table_rows)]
            main, rest = _split(with_words, table_rows, shown)
            blocks += [
                Heading(3, "Did filtering remove the negatively biased words?"),
                Para(EXPLAIN["effect"], "note"),
                Table(headers, main, numeric=numeric),
            ]
            if rest:
                n_rest = len(with_words) - min(shown, len(with_words))
                blocks.append(
                    Details(
                        f"{n_rest} more attributes' negatively biased words",
                        [Table(headers, rest, numeric=numeric)],
                    )
                )
    return blocks


def class_blocks(
    cls: str,
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    status: Mapping[str, AttributeRow],
    cap: float | None,
    examples: Mapping[str, Sequence[Mapping[str, Any]]],
    top_attributes: int,
    estimates: Mapping[str, Any] | None = None,
) -> tuple[list[Block], Figure | None]:
    """The blocks of one class's section (chart, table, dropped examples) and its figure (None: no rows).

    ``estimates`` is ``stats.json``'s ``estimates`` block (None: model-judged shares only).
    """
    per = (estimates or {}).get("attributes", {})
    rows = class_rows(cls, before, after)
    if not rows:
        return [], None
    n = sum(r.n for r in rows)
    neg = sum(r.before["negative"] for r in rows)
    title = (
        f"{cls}: {len(rows)} attribute{'s' if len(rows) != 1 else ''}, {n} person sentences, "
        f"{pct(neg, n)} model-judged negative"
    )
    if after is not None:
        kept = sum(r.kept or 0 for r in rows)
        title += f", {n - kept} dropped"
    blocks: list[Block] = [Heading(2, title, anchor=class_anchor(cls))]
    fig = Figure(
        f"figures/regard_{class_anchor(cls)}.png",
        regard_figure(cls, rows, cap, top_attributes, estimates=estimates),
        f"Regard per attribute, {cls}: model-judged shares"
        + (", estimated true negative share with its 95% interval" if estimates else ""),
    )
    blocks.append(fig)
    headers = ["attribute", "person sentences", "model-judged negative before"]
    if after is not None:
        headers += ["kept", "model-judged negative after", "dropped"]
        if estimates:
            headers += [
                "estimated true negative before (95% interval)",
                "estimated true negative after (95% interval)",
                "dropped, estimated not negative (95% interval)",
            ]
        headers += ["cap status"] if status else []

    def table_row(r: ClassRow) -> list[str]:
        row = [r.keyword, str(r.n), pct(r.before["negative"], r.n)]
        if after is not None and r.after is not None and r.kept is not None:
            st = status.get(r.keyword)
            state = (
                ("ABOVE CAP: " + st.reason) if st is not None and st.over_cap else ("within" if st else "")
            )
            row += [str(r.kept), pct(r.after["negative"], r.kept), str(r.n - r.kept)]
            if estimates:
                e = per.get(r.keyword, {})
                row += [
                    estimate_cell(e.get("before")),
                    estimate_cell(e.get("after")),
                    not_negative_cell(e.get("dropped")),
                ]
            row += [state] if status else []
        return row

    def notable(i: int, r: ClassRow) -> bool:  # in the chart, above the cap, or with drops
        st = status.get(r.keyword)
        return i < top_attributes or bool(st and st.over_cap) or (r.kept is not None and r.kept < r.n)

    main = [r for i, r in enumerate(rows) if notable(i, r)]
    rest = [r for i, r in enumerate(rows) if not notable(i, r)]

    def table(part: list[ClassRow]) -> Table:
        flagged = [bool((st := status.get(r.keyword)) and st.over_cap) for r in part]
        numeric = set(range(1, len(headers) - (1 if status else 0)))
        return Table(headers, [table_row(r) for r in part], flagged if status else [], numeric=numeric)

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
