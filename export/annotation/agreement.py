"""Step 5, ``agreement``: how far two sets of labels of the same items agree.

Any two JSON-lines files with ``uid``, ``wsd`` and ``regard`` per line: two label files, a label file
and a second pass's answers, or an annotator against an expert set (``dev.jsonl``, matched by uid).
The first file is the reference (the expert, or the first pass). Items are those in both (by uid).
WSD is compared as person or not ("unsure" counts as not, as the paper did): agreement and Cohen's
kappa. Regard on the items both call a person: agreement, Cohen's kappa, per-class F1 of the second
against the first, macro-F1, negative F1 (negative or not) and the confusion counts.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from export.annotation.records import AnnotationError, read_records
from fairstream.core.schema import REGARD_LABELS, WSD_LABELS
from fairstream.models.metrics import cohen_kappa, f1_scores

logger = logging.getLogger(__name__)


def _labels(path: Path) -> dict[str, tuple[str, str | None]]:
    out: dict[str, tuple[str, str | None]] = {}
    for i, rec in enumerate(read_records(path), 1):
        uid, wsd = rec.get("uid"), rec.get("wsd")
        if uid is None or wsd not in WSD_LABELS:
            raise AnnotationError(
                f"{path}: record {i} needs a uid and wsd in {WSD_LABELS}, got {uid!r} / {wsd!r}"
            )
        regard = rec.get("regard") if wsd == "yes" else None
        if wsd == "yes" and regard not in REGARD_LABELS:
            raise AnnotationError(f"{path}: record {i} (uid {uid}): regard {regard!r} for a person")
        out[str(uid)] = (wsd, regard)
    return out


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def agreement(reference: Path, other: Path) -> dict[str, Any]:
    """The agreement report of ``other`` against ``reference`` (see the module docstring)."""
    a, b = _labels(reference), _labels(other)
    uids = sorted(set(a) & set(b))
    if not uids:
        raise AnnotationError(f"{reference} and {other} share no uid")
    yes_a = ["yes" if a[u][0] == "yes" else "not-yes" for u in uids]
    yes_b = ["yes" if b[u][0] == "yes" else "not-yes" for u in uids]
    both = [u for u in uids if a[u][0] == "yes" and b[u][0] == "yes"]
    r_a = [str(a[u][1]) for u in both]
    r_b = [str(b[u][1]) for u in both]
    f1 = f1_scores(r_a, r_b, list(REGARD_LABELS)) if both else {}
    neg = f1_scores(["neg" if r == "negative" else "other" for r in r_a],
                    ["neg" if r == "negative" else "other" for r in r_b], ["neg"]) if both else {}  # fmt: skip
    return {
        "reference": str(reference),
        "other": str(other),
        "n_reference": len(a),
        "n_other": len(b),
        "n": len(uids),
        "wsd_agreement": _ratio(sum(x == y for x, y in zip(yes_a, yes_b, strict=True)), len(uids)),
        "wsd_kappa": cohen_kappa(yes_a, yes_b),
        "regard_compared": len(both),
        "regard_agreement": _ratio(sum(x == y for x, y in zip(r_a, r_b, strict=True)), len(both)),
        "regard_kappa": cohen_kappa(r_a, r_b) if both else None,
        "regard_macro_f1": f1.get("macro"),
        "regard_f1": {k: f1.get(k) for k in REGARD_LABELS},
        "negative_f1": neg.get("neg"),
        "regard_confusion": {
            g: {p: sum(x == g and y == p for x, y in zip(r_a, r_b, strict=True)) for p in REGARD_LABELS}
            for g in REGARD_LABELS
        },
    }


def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def to_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: one table of the numbers, one of the regard confusion counts."""
    rows = [
        ("items compared", report["n"]),
        ("WSD agreement (unsure = no)", report["wsd_agreement"]),
        ("WSD Cohen's kappa", report["wsd_kappa"]),
        ("regard compared (both: person)", report["regard_compared"]),
        ("regard agreement", report["regard_agreement"]),
        ("regard Cohen's kappa", report["regard_kappa"]),
        ("regard macro-F1", report["regard_macro_f1"]),
        *((f"regard F1 {k}", v) for k, v in report["regard_f1"].items()),
        ("negative F1", report["negative_f1"]),
    ]
    lines = [
        f"Agreement of `{report['other']}` ({report['n_other']} items) with `{report['reference']}` "
        f"({report['n_reference']} items, the reference)",
        "",
        "| measure | value |",
        "|---|---|",
        *(f"| {k} | {_fmt(v)} |" for k, v in rows),
        "",
        "| regard: reference \\ other | " + " | ".join(REGARD_LABELS) + " |",
        "|---|" + "---|" * len(REGARD_LABELS),
        *(
            f"| {g} | " + " | ".join(str(report["regard_confusion"][g][p]) for p in REGARD_LABELS) + " |"
            for g in REGARD_LABELS
        ),
    ]
    return "\n".join(lines) + "\n"
