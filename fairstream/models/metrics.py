"""Agreement metrics without scikit-learn: Cohen's kappa and per-class / micro / macro F1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def cohen_kappa(gold: Sequence[str], pred: Sequence[str]) -> float:
    """Cohen's kappa of two label sequences over the union of their labels."""
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} labels but pred has {len(pred)}")
    n = len(gold)
    if n == 0:
        return float("nan")
    observed = sum(g == p for g, p in zip(gold, pred, strict=True)) / n
    cg, cp = Counter(gold), Counter(pred)
    expected = sum(cg[k] * cp[k] for k in set(cg) | set(cp)) / (n * n)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1.0 - expected)


def f1_scores(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """Per-label F1 plus ``micro`` and ``macro`` averages over ``labels``."""
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} labels but pred has {len(pred)}")
    out: dict[str, float] = {}
    tp_all = fp_all = fn_all = 0
    for lab in labels:
        tp = sum(g == lab and p == lab for g, p in zip(gold, pred, strict=True))
        fp = sum(g != lab and p == lab for g, p in zip(gold, pred, strict=True))
        fn = sum(g == lab and p != lab for g, p in zip(gold, pred, strict=True))
        tp_all, fp_all, fn_all = tp_all + tp, fp_all + fp, fn_all + fn
        out[lab] = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0
    # macro averages over the labels that occur (in gold or predictions): a label absent from both
    # (e.g. no negative item in a small per-class slice) has no defined F1
    present = [lab for lab in labels if lab in set(gold) or lab in set(pred)]
    out["macro"] = sum(out[lab] for lab in present) / len(present) if present else float("nan")
    denom = 2 * tp_all + fp_all + fn_all
    out["micro"] = 2 * tp_all / denom if denom else 0.0
    return out


def precision_recall(
    gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]
) -> dict[str, tuple[float | None, float | None]]:
    """Per-label ``(precision, recall)``; ``None`` where it is 0/0 (label never predicted / never gold)."""
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} labels but pred has {len(pred)}")
    out: dict[str, tuple[float | None, float | None]] = {}
    for lab in labels:
        tp = sum(g == lab and p == lab for g, p in zip(gold, pred, strict=True))
        n_pred = sum(p == lab for p in pred)
        n_gold = sum(g == lab for g in gold)
        out[lab] = (tp / n_pred if n_pred else None, tp / n_gold if n_gold else None)
    return out
