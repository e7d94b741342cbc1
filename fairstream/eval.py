"""Evaluate a joint model on a labels file of the dev-set schema (``fairstream eval-models``).

WSD is scored as yes vs not-yes ("unsure" counts as not protected, as in the paper): Cohen's kappa
and F1 of "yes". Regard is scored on the items whose *gold* WSD is yes: micro and macro F1 over
negative / neutral / positive, and each class's precision and recall. Negative precision and recall
are also named on their own (``negative_precision``, ``negative_recall``): the filter drops
sentences decided negative, so negative precision is the share of its regard-driven drops that
were right. Both tasks are also broken down per attribute class. A score with no data (a label
that occurs neither in the gold labels nor in the predictions, a precision of a class never
predicted, a recall of a class never in the gold labels, a slice without items) is ``None``: JSON
``null``, "no data" in the table, never a made-up 0.0 or a NaN.

The regard decision is the model's: the argmax of the log-probabilities plus its
``regard_logit_offsets`` (``fairstream.models.decision``). With offsets, the result also holds
``metrics_argmax``: the same scores with the plain argmax, so the rule's effect is visible.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairstream.core.schema import REGARD_LABELS
from fairstream.models.decision import NO_OFFSETS, regard_index
from fairstream.models.labels import LabelledPair, load_labelled_pairs
from fairstream.models.metrics import cohen_kappa, f1_scores, precision_recall
from fairstream.models.runtime import JointModel
from fairstream.taxonomy import Taxonomy


def _defined_f1(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, float | None]:
    """``f1_scores`` with ``None`` where F1 is 0/0: a label in neither gold nor predictions, no items."""
    scores: dict[str, float | None] = dict(f1_scores(gold, pred, labels))
    for lab in labels:
        if lab not in gold and lab not in pred:
            scores[lab] = None
    if not any(lab in gold or lab in pred for lab in labels):
        scores["micro"] = scores["macro"] = None
    return scores


def score(
    pairs: Sequence[LabelledPair], pred_wsd: Sequence[str], pred_regard: Sequence[str | None]
) -> dict[str, Any]:
    """WSD kappa/F1 and regard micro/macro F1, per-class F1, precision and recall (``None``: no data)."""
    gold_w = ["yes" if p.wsd == "yes" else "not-yes" for p in pairs]
    pred_w = ["yes" if w == "yes" else "not-yes" for w in pred_wsd]
    yes = [i for i, p in enumerate(pairs) if p.wsd == "yes" and p.regard is not None]
    gold_r = [pairs[i].regard or "" for i in yes]
    pred_r = [pred_regard[i] or "neutral" for i in yes]
    f1r = _defined_f1(gold_r, pred_r, list(REGARD_LABELS))
    pr = precision_recall(gold_r, pred_r, list(REGARD_LABELS))
    return {
        "n": len(pairs),
        "wsd_kappa": cohen_kappa(gold_w, pred_w) if pairs else None,
        "wsd_f1": _defined_f1(gold_w, pred_w, ["yes"])["yes"],
        "regard_n": len(yes),
        "regard_micro_f1": f1r["micro"],
        "regard_macro_f1": f1r["macro"],
        "regard_f1": {k: f1r[k] for k in REGARD_LABELS},
        "regard_precision": {k: pr[k][0] for k in REGARD_LABELS},
        "regard_recall": {k: pr[k][1] for k in REGARD_LABELS},
        # the filter's drops are the negative decisions: how many were right, how many it found
        "negative_precision": pr["negative"][0],
        "negative_recall": pr["negative"][1],
    }


def evaluate_model(model: JointModel, labels: str | Path, taxonomy: Taxonomy | None = None) -> dict[str, Any]:
    """Predict every pair of ``labels`` and score it overall and per attribute class."""
    taxonomy = taxonomy or Taxonomy.default()
    pairs = load_labelled_pairs(labels, {a.keyword: a.forms for a in taxonomy})
    t0 = time.perf_counter()
    preds = model.predict([p.mention for p in pairs])
    seconds = time.perf_counter() - t0
    # regard is scored on gold-yes items, so it takes the regard head's decision even where WSD says
    # no, by the model's own rule (its regard_logit_offsets, as Prediction.regard)
    offsets = tuple(getattr(model, "regard_offsets", NO_OFFSETS))
    pred_wsd = [p.wsd for p in preds]
    pred_regard = [REGARD_LABELS[regard_index(p.regard_probs, offsets)] for p in preds]
    per_class = {}
    for cls in sorted({p.attribute_class for p in pairs}):
        idx = [i for i, p in enumerate(pairs) if p.attribute_class == cls]
        per_class[cls] = score(
            [pairs[i] for i in idx], [pred_wsd[i] for i in idx], [pred_regard[i] for i in idx]
        )
    digest = hashlib.sha256(Path(labels).read_bytes()).hexdigest()
    # a cascade trained on what either of its models trained on
    cascade = getattr(model, "cascade", None)
    configs = [cascade.fast.config, cascade.full.config] if cascade is not None else [model.config]
    trained_on = any(digest in c.get("training", {}).get("label_files_sha256", []) for c in configs)
    return {
        "labels": str(labels),
        "labels_sha256": digest,
        # the shipped model is trained on the dev set after its held-out numbers were measured
        "trained_on_these_labels": trained_on,
        "model": model.name,
        "providers": model.providers,
        "seconds": round(seconds, 2),
        "metrics": score(pairs, pred_wsd, pred_regard),
        "regard_logit_offsets": list(offsets),
        # with a decision rule: the scores of the plain argmax, for comparison
        "metrics_argmax": (
            score(pairs, pred_wsd, [REGARD_LABELS[regard_index(p.regard_probs)] for p in preds])
            if any(offsets)
            else None
        ),
        "per_class": per_class,
        "predictions": {"uid": [p.uid for p in pairs], "wsd": pred_wsd, "regard": pred_regard},
    }


def to_json(result: dict[str, Any]) -> str:
    """An ``evaluate_model`` result as strict JSON (``null`` for a score without data, never NaN)."""

    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(result), indent=2, allow_nan=False)


def _num(x: float | None, width: int = 0) -> str:
    text = "no data" if x is None or not math.isfinite(x) else f"{x:.3f}"
    return f"{text:>{width}}"


def _regard_pr_line(m: dict[str, Any], label: str = "regard") -> str:
    prec, rec = m.get("regard_precision", {}), m.get("regard_recall", {})
    per = ", ".join(f"{k} {_num(prec.get(k))} / {_num(rec.get(k))}" for k in REGARD_LABELS)
    return (
        f"{label:<7} negative precision {_num(m.get('negative_precision'))}   "
        f"negative recall {_num(m.get('negative_recall'))}   (precision / recall: {per})"
    )


def format_report(result: dict[str, Any]) -> str:
    """Human-readable table of an ``evaluate_model`` result."""
    m = result["metrics"]
    offsets = result.get("regard_logit_offsets") or []
    lines = [
        f"model {result['model']} on {result['labels']} ({m['n']} pairs, {result['seconds']} s, {result['providers']})",
        f"WSD     kappa {_num(m['wsd_kappa'])}   F1(yes) {_num(m['wsd_f1'])}",
        f"regard  micro-F1 {_num(m['regard_micro_f1'])}   macro-F1 {_num(m['regard_macro_f1'])}   (n={m['regard_n']}; "
        + ", ".join(f"{k} {_num(v)}" for k, v in m["regard_f1"].items())
        + ")",
        _regard_pr_line(m),
    ]
    if any(offsets):
        a = result.get("metrics_argmax") or {}
        shown = ", ".join(f"{x:+g}" for x in offsets)
        lines += [
            f"regard decisions use the model's regard_logit_offsets [{shown}] (negative, neutral, positive); "
            "without them (plain argmax):",
            f"argmax  micro-F1 {_num(a.get('regard_micro_f1'))}   macro-F1 {_num(a.get('regard_macro_f1'))}   ("
            + ", ".join(f"{k} {_num(v)}" for k, v in a.get("regard_f1", {}).items())
            + ")",
            _regard_pr_line(a, "argmax"),
        ]
    lines += [
        "",
        f"{'class':<18} {'n':>5} {'kappa':>7} {'F1 yes':>7} {'reg n':>6} {'micro':>7} {'macro':>7} "
        f"{'neg P':>7} {'neg R':>7}",
    ]
    if result.get("trained_on_these_labels"):
        lines[1:1] = [
            "NOTE: this labels file is part of the model's training data, so these are training-set scores;",
            "      the held-out and cross-validated estimates are in the model's MODEL_CARD.md.",
        ]
    for cls, s in result["per_class"].items():
        lines.append(
            f"{cls:<18} {s['n']:>5} {_num(s['wsd_kappa'], 7)} {_num(s['wsd_f1'], 7)} {s['regard_n']:>6} "
            f"{_num(s['regard_micro_f1'], 7)} {_num(s['regard_macro_f1'], 7)} "
            f"{_num(s.get('negative_precision'), 7)} {_num(s.get('negative_recall'), 7)}"
        )
    return "\n".join(lines)
