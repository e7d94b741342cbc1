"""The report's headline: the run, what the cap guaranteed, what is estimated, and the attributes above it.

The run in numbers, its settings and model, and every attribute above its cap, with the reason.

The cap bounds the **model-judged** negative share (a guarantee about the model's decisions); the
true share is only **estimated** (``stats.json``'s ``estimates``, from the model's calibrated
P(negative)). The headline says both, labelled, and names the calibration.
"""

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
    NO_ESTIMATES,
    AttributeRow,
    basis_text,
    cap_text,
    estimate_cell,
    estimate_text,
    estimates_of,
    guarantee_text,
    headline_numbers,
    interval_text,
    model_text,
    pct,
    share_pct,
    share_text,
)


def claim_blocks(stream_stats: Mapping[str, Any], rows: Sequence[AttributeRow]) -> list[Block]:
    """The headline's two claims: what the cap guaranteed (model-judged) and what is estimated (true)."""
    run = stream_stats.get("run") or {}
    blocks: list[Block] = []
    if "cap" in run:
        blocks.append(
            Para(
                guarantee_text(run, rows, le="≤") + ". This bounds the model's decisions, not the text.",
                "claim",
                "Guaranteed",
            )
        )
    est = estimates_of(stream_stats)
    if est is None:
        return [*blocks, Para(NO_ESTIMATES + ".", "claim", "Estimated")]
    source = (
        "the model's calibrated probabilities"
        if est.get("calibrated")
        else "uncalibrated model probabilities"
    )
    text = f"{estimate_text(est)}; 95% intervals, from {source}. Calibration: {est.get('calibration', '?')}."
    return [*blocks, Para(text, "claim", "Estimated")]


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
        cards.append(
            ("negative-regard cap", f"{share_text(run['cap'])} per attribute", f"model-judged; {holds}", "")
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
    est = estimates_of(stream_stats) if stream_stats else None
    if est is not None and est["pooled"]["after"].get("sentences"):
        kept = est["pooled"]["after"]
        cards.append(
            (
                "true negative share after, estimated",
                share_pct(kept["estimated_negative_share"]),
                f"95% interval {interval_text(kept)}; model-judged {share_pct(kept.get('model_negative_share'))}; "
                f"pooled over attributes, from {basis_text(est)}",
                "",
            )
        )
    blocks: list[Block] = [Para(lead, "lead"), *(claim_blocks(stream_stats, rows) if stream_stats else [])]
    blocks.append(Cards(cards))
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
        per = est.get("attributes", {}) if est is not None else None
        headers = ["attribute", "kept person sentences", "model-judged negative after"]
        if per is not None:
            headers.append("estimated true negative after (95% interval)")
        blocks.append(
            Table(
                [*headers, "cap", "reason"],
                [
                    [
                        r.keyword,
                        str(r.kept),
                        f"{r.negative_after} ({pct(r.negative_after, r.kept)})",
                        *([estimate_cell(per.get(r.keyword, {}).get("after"))] if per is not None else []),
                        share_text(r.cap or 0.0),
                        r.reason,
                    ]
                    for r in over
                ],
                [True] * len(over),
                numeric=set(range(1, len(headers) + 1)),
            )
        )
    return blocks
