"""Compare two CV configs of an ``export.sweep --fold`` run on the folds both finished, with paired bootstrap CIs.

    NLTK_DATA=../shared/data/nltk_data python export/gpu/compare_students.py --sweep SWEEP_DIR \
        --dev ../shared/data/labels/dev.jsonl --a base-text-cv5-s0 --b distill-text-cv5-s0 \
        [--heldout-row 20476] [--json OUT.json]

Dev: the pooled predictions of the common folds (``SWEEP_DIR/folds/NAME-fK.npz``), scored as
``fairstream eval-models`` scores (WSD at 0.5, regard argmax), per fold and pooled, with a 95% paired
bootstrap interval of B - A (items resampled, 2,000 times). Hold-out: where a fold's model saved its
logits (``save_logits``) with the round-7 hold-out as the last pool (rows ``--heldout-row``.. in
``export/labels/heldout-text-r7.jsonl`` order), each fold's model is scored on all 1,383 items, and B - A is
bootstrapped on the mean of the folds' probabilities. Items of one document are resampled
independently, so the intervals are somewhat narrow.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.gpu.heldout_pool import load_heldout  # noqa: E402
from export.train import evaluate  # noqa: E402
from fairstream.models.decision import NO_OFFSETS  # noqa: E402
from fairstream.models.labels import LabelledPair, load_labelled_pairs  # noqa: E402
from fairstream.models.runtime import softmax  # noqa: E402

# eval-models' rule for a model without regard_logit_offsets: P(person) >= 0.5, regard argmax
ARGMAX_RULE: tuple[float, tuple[float, float, float]] = (0.5, NO_OFFSETS)
METRICS = ("wsd_kappa", "regard_macro_f1", "negative_f1", "negative_precision", "negative_recall")


def metrics(
    pairs: list[LabelledPair],
    wsd_p: np.ndarray,
    reg_p: np.ndarray,
    rule: tuple[float, tuple[float, float, float]] = ARGMAX_RULE,
) -> dict[str, float]:
    """eval-models' metrics under a model's decision ``rule``: (WSD threshold, regard logit offsets)."""
    m = evaluate(wsd_p, reg_p, pairs, *rule)
    return {
        "wsd_kappa": m["wsd_kappa"],
        "regard_macro_f1": m["regard_macro_f1"],
        "negative_f1": m["regard_f1"]["negative"] or 0.0,
        "negative_precision": m["negative_precision"] or 0.0,
        "negative_recall": m["negative_recall"] or 0.0,
    }


def paired(
    pairs: list[LabelledPair],
    a: tuple[np.ndarray, np.ndarray],
    b: tuple[np.ndarray, np.ndarray],
    n_boot: int,
    rules: tuple[Any, Any] = (ARGMAX_RULE, ARGMAX_RULE),
) -> dict[str, dict[str, Any]]:
    """A's and B's metrics, B - A, and its 95% bootstrap interval (the same resampled items for both).

    ``rules``: each side's decision rule, (WSD threshold, regard logit offsets); default ``ARGMAX_RULE``.
    """
    rule_a, rule_b = rules
    ma, mb = metrics(pairs, *a, rule_a), metrics(pairs, *b, rule_b)
    rng = np.random.default_rng(0)
    deltas: dict[str, list[float]] = {k: [] for k in METRICS}
    for _ in range(n_boot):
        idx = rng.integers(0, len(pairs), len(pairs))
        sub = [pairs[i] for i in idx]
        xa, xb = metrics(sub, a[0][idx], a[1][idx], rule_a), metrics(sub, b[0][idx], b[1][idx], rule_b)
        for k in METRICS:
            deltas[k].append(xb[k] - xa[k])
    return {
        k: {
            "a": round(ma[k], 3),
            "b": round(mb[k], 3),
            "b_minus_a": round(mb[k] - ma[k], 3),
            "ci95": [round(float(np.percentile(deltas[k], q)), 3) for q in (2.5, 97.5)],
        }
        for k in METRICS
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", type=Path, required=True)
    ap.add_argument("--dev", type=Path, default=ROOT.parent / "shared/data/labels/dev.jsonl")
    ap.add_argument("--a", required=True, help="baseline config name")
    ap.add_argument("--b", required=True, help="candidate config name")
    ap.add_argument("--heldout-row", type=int, help="first row of the hold-out in the saved logits files")
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    dev = load_labelled_pairs(args.dev)
    folds = [
        k
        for k in range(5)
        if all((args.sweep / "folds" / f"{n}-f{k}.npz").is_file() for n in (args.a, args.b))
    ]
    if not folds:
        raise SystemExit(f"{args.sweep}/folds: no fold that both {args.a} and {args.b} finished")
    out: dict = {"a": args.a, "b": args.b, "folds": folds, "per_fold": {}}
    pooled: dict[str, list] = {args.a: [[], [], []], args.b: [[], [], []]}
    for k in folds:
        fold_probs = {}
        for name in (args.a, args.b):
            with np.load(args.sweep / "folds" / f"{name}-f{k}.npz") as z:
                rows, wsd, reg = z["rows"], z["wsd"], z["regard"]
            fold_probs[name] = (wsd, reg)
            pooled[name][0].append(rows)
            pooled[name][1].append(wsd)
            pooled[name][2].append(reg)
        items = [dev[i] for i in rows]
        out["per_fold"][k] = {
            n: {m: round(v, 3) for m, v in metrics(items, *p).items()} for n, p in fold_probs.items()
        }
        print(f"fold {k} ({len(items)} items): " + json.dumps(out["per_fold"][k]))
    rows = np.concatenate(pooled[args.a][0])
    assert (rows == np.concatenate(pooled[args.b][0])).all()
    items = [dev[i] for i in rows]
    probs = {n: (np.concatenate(v[1]), np.concatenate(v[2])) for n, v in pooled.items()}
    out["dev_pooled"] = paired(items, probs[args.a], probs[args.b], args.bootstrap)
    out["dev_pooled"]["n"] = len(items)
    print(f"dev, folds {folds} pooled ({len(items)} items): " + json.dumps(out["dev_pooled"]))
    if args.heldout_row is not None:
        r7 = load_heldout()
        block = slice(args.heldout_row, args.heldout_row + len(r7))
        held: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {args.a: [], args.b: []}
        for k in folds:
            paths = {n: args.sweep / "logits" / f"{n}-f{k}.npz" for n in (args.a, args.b)}
            if not all(p.is_file() for p in paths.values()):
                continue  # this fold's models did not save logits: no hold-out scores
            for name, path in paths.items():
                with np.load(path) as z:
                    held[name].append((softmax(z["wsd"][block]), softmax(z["regard"][block])))
        n_held = min(len(v) for v in held.values())
        if n_held:
            out["heldout_per_fold_model"] = {
                n: [{m: round(x, 3) for m, x in metrics(r7, *p).items()} for p in v[:n_held]]
                for n, v in held.items()
            }
            mean = {n: (np.mean([p[0] for p in v[:n_held]], 0), np.mean([p[1] for p in v[:n_held]], 0))
                    for n, v in held.items()}  # fmt: skip
            out["heldout_mean_of_folds"] = paired(r7, mean[args.a], mean[args.b], args.bootstrap)
            out["heldout_mean_of_folds"]["n_models"] = n_held
            print("hold-out r7, each fold's model: " + json.dumps(out["heldout_per_fold_model"]))
            print(
                f"hold-out r7, mean of {n_held} folds' probabilities: "
                + json.dumps(out["heldout_mean_of_folds"])
            )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
