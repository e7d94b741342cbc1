"""The report's overview of the attribute classes: one row per class, each linking to its section.

With a taxonomy of many classes (``taxonomy-v2``: 16) the per-class sections make a long page; the
overview, right after the headline, shows every class's person sentences, model-judged negative
shares and drops side by side, in the sections' order, flags the classes with an attribute above
its cap, and names the taxonomy's classes that had no person-sense mention at all. The note that
tells model-judged shares from estimated true ones stands here once, not in every section.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fairstream.stats.counts import CooccurrenceCounts
from fairstream.stats.page import Block, Heading, Para, Table
from fairstream.stats.regard_chart import class_rows
from fairstream.stats.report_classes import class_anchor
from fairstream.summary import AttributeRow, basis_text, pct

OVERVIEW_ANCHOR = "classes"


def overview_blocks(
    classes: Sequence[str],
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    status: Mapping[str, AttributeRow],
    *,
    estimates: Mapping[str, Any] | None = None,
    taxonomy_name: str | None = None,
    taxonomy_classes: Iterable[str] = (),
) -> list[Block]:
    """The overview's blocks: a heading, what the table shows, the table, the classes never mentioned.

    ``classes`` in the order of their sections; ``taxonomy_classes`` (the run's taxonomy's classes,
    empty when unknown) names those without any person-sense mention.
    """
    headers = ["class", "attributes", "person sentences", "model-judged negative before"]
    if after is not None:
        headers += ["model-judged negative after", "dropped"]
    if status:
        headers.append("attributes above the cap")
    rows, links, flagged = [], [], []
    for cls in classes:
        attrs = class_rows(cls, before, after)
        if not attrs:
            continue
        n = sum(r.n for r in attrs)
        row = [cls, str(len(attrs)), str(n), pct(sum(r.before["negative"] for r in attrs), n)]
        if after is not None:
            kept = sum(r.kept or 0 for r in attrs)
            neg_after = sum((r.after or {}).get("negative", 0) for r in attrs)
            row += [pct(neg_after, kept), str(n - kept)]
        over = [r.keyword for r in attrs if (st := status.get(r.keyword)) is not None and st.over_cap]
        if status:
            row.append(", ".join(over) or "-")
        rows.append(row)
        links.append(class_anchor(cls))
        flagged.append(bool(over))
    if not rows:
        return []
    of = f" of {taxonomy_name}" if taxonomy_name else ""
    blocks: list[Block] = [
        Heading(2, "Attribute classes at a glance", anchor=OVERVIEW_ANCHOR),
        Para(
            f"{len(rows)} attribute class{'es' if len(rows) != 1 else ''}{of} with person-sense mentions, in "
            "the order of the sections below (where the filter dropped most first); a class's name links "
            "to its section: chart, numbers per attribute, dropped sentences and word scores.",
            "note",
        ),
        Table(
            headers,
            rows,
            flagged if status else [],
            numeric=set(range(1, len(headers) - bool(status))),
            links=links,
        ),
    ]
    missing = sorted(set(taxonomy_classes) - set(classes))
    if missing:
        blocks.append(
            Para(
                f"No person-sense mention counted of the class{'es' if len(missing) > 1 else ''} "
                f"{', '.join(missing)}{of}.",
                "note",
            )
        )
    if estimates and after is not None:
        blocks.append(
            Para(
                "In every section, model-judged: the share of person sentences the model called negative "
                "(what the cap bounds). Estimated true: the expected share truly negative, from "
                f"{basis_text(estimates)}, with a 95% interval; dropped, estimated not negative: how many of "
                "the dropped sentences were probably not negative toward the attribute.",
                "note",
            )
        )
    return blocks
