"""The report's headline: the run in numbers, its settings and model, and every attribute above its cap."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fairstream.stats.counts import CooccurrenceCounts
from fairstream.stats.page import (
    Block,
    Cards,
    KeyValue,
    Para,
    Table,
)
from fairstream.summary import (
    AttributeRow,
    cap_text,
    headline_numbers,
    model_text,
    pct,
    share_text,
)


def headline_blocks(
    stream_stats: Mapping[str, Any] | None,
    before: CooccurrenceCounts,
    after: CooccurrenceCounts | None,
    rows: Sequence[AttributeRow],
) -> list[Block]:
    """The headline blocks: documents and sentences in and out, cap, settings, model, attributes over the cap."""
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
