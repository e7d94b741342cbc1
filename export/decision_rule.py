"""Choose the regard decision rule (per-class logit offsets) by cross-validation over the dev items.

    python -m export.decision_rule --run RUN_DIR [--run RUN_DIR ...] \\
        --dev ../shared/data/labels/dev.jsonl --folds 5 --seed 0 [--json OUT]

A run folder is written by ``python -m export.train --eval-dev`` (the dev set held out): it holds
``dev_regard.npy`` / ``dev_wsd.npy`` (probabilities, in the order of the dev items as
``load_labelled_pairs`` reads them; for a ``--dev-folds`` run, the items of its held-out fold) and
``train_meta.json``.

The rule: regard = argmax_k log P(k) + offset_k, with offsets [negative, neutral, positive]
(``fairstream.models.decision``; the neutral offset is fixed at 0, so the negative and positive
offsets are shifts relative to neutral). The dev items are cut into ``--folds`` folds (stratified by
gold label, shuffled with ``--seed``, deterministic). For each fold, the offsets that maximize regard
macro-F1 on the *other* folds' person items (gold WSD "yes" with a regard label) are chosen from a
grid (default -2..2 step 0.1; ties go to the offsets nearest 0) and decide the held-out fold's items.
The pooled held-out decisions are scored with ``fairstream.eval.score`` (the numbers of
``fairstream eval-models``), with and without the rule: the "with" numbers are the honest
cross-validated estimate. Also printed: the offsets fitted on all items (what one would ship,
``python -m export.export_onnx --regard-offsets NEG NEU POS``), their in-sample score (optimistic,
not an estimate), and the spread of the per-fold offsets. With several runs, each is reported and
then the mean.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.core.schema import REGARD_LABELS
from fairstream.eval import score
from fairstream.models.decision import NO_OFFSETS, regard_decisions
from fairstream.models.labels import LabelledPair, load_labelled_pairs

# the metrics reported with and without the rule (keys of fairstream.eval.score)
REPORTED = ("regard_macro_f1", "regard_micro_f1", "negative_precision", "negative_recall")


FREE_OFFSETS = ("negative", "positive")


def offset_grid(limit: float = 2.0, step: float = 0.1, free: Sequence[str] = FREE_OFFSETS) -> np.ndarray:
    """Candidate offsets ``(G, 3)``: the ``free`` ones (negative, positive) in [-limit, limit], the rest 0.

    Neutral is always 0. Rows are ordered nearest 0 first (by L1 norm, then L2 norm, then value), so
    the first row of a tie is the one nearest 0.
    """
    if step <= 0 or limit < 0:
        raise ValueError(f"grid needs step > 0 and limit >= 0 (got step={step}, limit={limit})")
    unknown = sorted(set(free) - set(FREE_OFFSETS))
    if unknown or not free:
        raise ValueError(f"free offsets {list(free)}: choose one or both of {', '.join(FREE_OFFSETS)}")
    k = round(limit / step)
    values = np.round(np.arange(-k, k + 1) * step, 10)
    negs = values if "negative" in free else np.zeros(1)
    poss = values if "positive" in free else np.zeros(1)
    rows = [(float(neg), 0.0, float(pos)) for neg in negs for pos in poss]
    rows.sort(key=lambda r: (abs(r[0]) + abs(r[2]), r[0] ** 2 + r[2] ** 2, r[0], r[2]))
    return np.array(rows, dtype=np.float64)


def macro_f1_grid(probs: np.ndarray, gold: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Regard macro-F1 of each row of ``grid`` as offsets, on items with gold label indices ``gold``.

    The project's definition (``fairstream.models.metrics.f1_scores``): per-class F1
    2tp / (2tp + fp + fn), averaged over the classes that occur in the gold labels or the
    predictions. NaN for no items.
    """
    if len(gold) == 0:
        return np.full(len(grid), np.nan)
    with np.errstate(divide="ignore"):
        logp = np.log(np.asarray(probs, dtype=np.float64))
    pred = (logp[None, :, :] + grid[:, None, :]).argmax(axis=2)  # (G, n)
    total = np.zeros(len(grid))
    present = np.zeros(len(grid))
    for k in range(len(REGARD_LABELS)):
        is_pred = pred == k
        is_gold = gold == k
        tp = (is_pred & is_gold[None, :]).sum(axis=1)
        denom = is_pred.sum(axis=1) + is_gold.sum()  # 2tp + fp + fn
        occurs = denom > 0
        total += np.where(occurs, 2 * tp / np.maximum(denom, 1), 0.0)
        present += occurs
    return total / present


def fit_offsets(probs: np.ndarray, gold: np.ndarray, grid: np.ndarray) -> tuple[tuple[float, ...], float]:
    """The grid offsets with the highest macro-F1 on these items (the one nearest 0 among ties)."""
    scores = macro_f1_grid(probs, gold, grid)
    if np.isnan(scores).all():
        return NO_OFFSETS, float("nan")
    best = np.nanmax(scores)
    first = int(np.flatnonzero(scores >= best - 1e-12)[0])  # grid rows are ordered nearest 0 first
    return tuple(float(x) for x in grid[first]), float(scores[first])


def person_items(pairs: Sequence[LabelledPair]) -> np.ndarray:
    """Indices of the items regard is scored on: gold WSD "yes" with a regard label."""
    return np.array([i for i, p in enumerate(pairs) if p.wsd == "yes" and p.regard is not None], dtype=int)


def cv_folds(pairs: Sequence[LabelledPair], folds: int, seed: int) -> np.ndarray:
    """Fold of each item: stratified by gold label (each regard class, and non-person), seeded shuffle."""
    if folds < 2:
        raise ValueError(f"--folds {folds}: cross-validation needs at least 2 folds")
    strata = [p.regard if (p.wsd == "yes" and p.regard is not None) else "" for p in pairs]
    rng = np.random.default_rng(seed)
    out = np.full(len(pairs), -1, dtype=int)
    start = 0
    for stratum in (*REGARD_LABELS, ""):
        idx = rng.permutation(np.array([i for i, s in enumerate(strata) if s == stratum], dtype=int))
        out[idx] = (start + np.arange(len(idx))) % folds
        start += len(idx)
    return out


def cross_validate(
    reg_p: np.ndarray, pairs: Sequence[LabelledPair], folds: np.ndarray, grid: np.ndarray
) -> tuple[list[str], list[tuple[float, ...]]]:
    """Held-out regard decisions of every item, each from offsets fitted on the other folds only.

    Returns the pooled decisions (in item order) and the offsets of each fold.
    """
    gold_idx = np.array([REGARD_LABELS.index(p.regard) if p.regard in REGARD_LABELS else -1 for p in pairs])
    person = np.zeros(len(pairs), dtype=bool)
    person[person_items(pairs)] = True
    decisions: list[str] = [""] * len(pairs)
    per_fold = []
    for k in range(int(folds.max()) + 1):
        fit_on = person & (folds != k)
        offsets, _ = fit_offsets(reg_p[fit_on], gold_idx[fit_on], grid)
        per_fold.append(offsets)
        held = np.flatnonzero(folds == k)
        for i, label in zip(held, regard_decisions(reg_p[held], offsets), strict=True):
            decisions[i] = label
    return decisions, per_fold


def load_run(
    run: Path, dev: Sequence[LabelledPair]
) -> tuple[np.ndarray, np.ndarray, list[LabelledPair], dict]:
    """A run folder's dev probabilities, the dev items they belong to, and its train_meta.json."""
    meta_path = run / "train_meta.json"
    for f in (meta_path, run / "dev_regard.npy", run / "dev_wsd.npy"):
        if not f.is_file():
            raise SystemExit(f"{f}: not found; --run takes a folder of `python -m export.train --eval-dev`")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta.get("include_dev"):
        raise SystemExit(
            f"{meta_path}: include_dev is true, so its dev predictions are training-set predictions; "
            "choose the offsets on a run that held the dev set out (--eval-dev without --include-dev)"
        )
    pairs = list(dev)
    if meta.get("dev_folds"):
        from export.train import dev_fold

        pairs = [p for p in dev if dev_fold(p.uid, meta["dev_folds"]) == meta["fold"]]
    reg = np.load(run / "dev_regard.npy")
    wsd = np.load(run / "dev_wsd.npy")
    for name, arr in (("dev_regard.npy", reg), ("dev_wsd.npy", wsd)):
        if arr.shape != (len(pairs), 3):
            raise SystemExit(
                f"{run / name}: shape {arr.shape}, expected ({len(pairs)}, 3) for the dev items of this run; "
                "is --dev the file the run was evaluated on?"
            )
        if not (np.isfinite(arr).all() and np.allclose(arr.sum(axis=1), 1.0, atol=1e-3) and (arr >= 0).all()):
            raise SystemExit(f"{run / name}: rows are not probabilities (softmax outputs)")
    return wsd, reg, pairs, meta


def _spread(per_fold: list[tuple[float, ...]]) -> dict[str, dict[str, float]]:
    arr = np.array(per_fold, dtype=np.float64)
    return {
        label: {
            "min": float(arr[:, k].min()),
            "max": float(arr[:, k].max()),
            "mean": round(float(arr[:, k].mean()), 6),
            "std": round(float(arr[:, k].std()), 6),
        }
        for k, label in enumerate(REGARD_LABELS)
    }


def analyse_run(
    wsd: np.ndarray,
    reg: np.ndarray,
    pairs: Sequence[LabelledPair],
    *,
    folds: int,
    seed: int,
    grid: np.ndarray,
    threshold: float = 0.5,
) -> dict[str, Any]:
    """Cross-validated effect of the decision rule on one run's dev probabilities."""
    pred_wsd = ["yes" if w[1] >= threshold else "no" for w in wsd]
    fold_of = cv_folds(pairs, folds, seed)
    cv_decisions, per_fold = cross_validate(reg, pairs, fold_of, grid)
    person = person_items(pairs)
    gold_idx = np.array([REGARD_LABELS.index(pairs[i].regard or "") for i in person], dtype=int)
    shipped, _ = fit_offsets(reg[person], gold_idx, grid)
    return {
        "n": len(pairs),
        "regard_n": len(person),
        "folds": folds,
        "seed": seed,
        "without_rule": score(pairs, pred_wsd, regard_decisions(reg)),
        "with_rule_cv": score(pairs, pred_wsd, cv_decisions),
        "fold_offsets": [list(o) for o in per_fold],
        "fold_offsets_spread": _spread(per_fold),
        "offsets_fitted_on_all": list(shipped),
        # in-sample: fitted and scored on the same items, so optimistic; not an estimate
        "with_rule_in_sample": score(pairs, pred_wsd, regard_decisions(reg, shipped)),
    }


def _mean(results: list[dict[str, Any]]) -> dict[str, Any]:
    def avg(values: list[Any]) -> float | None:
        vals = [v for v in values if v is not None]
        return sum(vals) / len(vals) if len(vals) == len(values) and vals else None

    out: dict[str, Any] = {}
    for part in ("without_rule", "with_rule_cv"):
        ms = [r[part] for r in results]
        out[part] = {k: avg([m[k] for m in ms]) for k in REPORTED}
        out[part]["regard_f1"] = {lab: avg([m["regard_f1"][lab] for m in ms]) for lab in REGARD_LABELS}
    out["offsets_fitted_on_all"] = [
        round(float(np.mean([r["offsets_fitted_on_all"][k] for r in results])), 6) for k in range(3)
    ]
    return out


def _n(x: float | None) -> str:
    return "no data" if x is None or x != x else f"{x:.3f}"


def _offsets(o: Sequence[float]) -> str:
    return "[" + ", ".join(f"{x:+.2f}" for x in o) + "]"


def format_run(name: str, r: dict[str, Any]) -> str:
    """Text report of one ``analyse_run`` result."""
    lines = [
        f"{name}: {r['n']} dev items, {r['regard_n']} person items; {r['folds']}-fold CV (seed {r['seed']})",
        f"  {'':<22} {'macro-F1':>8} {'F1 neg':>7} {'F1 neu':>7} {'F1 pos':>7} {'neg P':>7} {'neg R':>7}",
    ]
    for label, key in (
        ("argmax (no rule)", "without_rule"),
        ("with rule, CV", "with_rule_cv"),
        ("with rule, in-sample*", "with_rule_in_sample"),
    ):
        if key not in r:
            continue
        m = r[key]
        f1 = m["regard_f1"]
        lines.append(
            f"  {label:<22} {_n(m['regard_macro_f1']):>8} {_n(f1['negative']):>7} {_n(f1['neutral']):>7} "
            f"{_n(f1['positive']):>7} {_n(m['negative_precision']):>7} {_n(m['negative_recall']):>7}"
        )
    if "fold_offsets" in r:
        s = r["fold_offsets_spread"]
        lines += [
            "  per-fold offsets [neg, neu, pos]: " + " ".join(_offsets(o) for o in r["fold_offsets"]),
            f"  spread: negative {s['negative']['min']:+.2f}..{s['negative']['max']:+.2f} "
            f"(sd {s['negative']['std']:.2f}), positive {s['positive']['min']:+.2f}..{s['positive']['max']:+.2f} "
            f"(sd {s['positive']['std']:.2f})",
            f"  offsets fitted on all items (to ship): {_offsets(r['offsets_fitted_on_all'])}",
            "  * in-sample: fitted and scored on the same items (optimistic); the CV row is the estimate",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, action="append", required=True, help="export.train --eval-dev folder")
    ap.add_argument("--dev", type=Path, default=Path("../shared/data/labels/dev.jsonl"))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0, help="seed of the fold assignment")
    ap.add_argument("--grid-limit", type=float, default=2.0, help="offsets searched in [-limit, limit]")
    ap.add_argument("--grid-step", type=float, default=0.1)
    ap.add_argument(
        "--free",
        nargs="+",
        choices=FREE_OFFSETS,
        default=list(FREE_OFFSETS),
        help="the offsets searched (the others stay 0; neutral always 0): e.g. --free negative when "
        "the positive offset swings from fold to fold",
    )
    ap.add_argument("--threshold", type=float, default=0.5, help="WSD yes threshold (WSD scores only)")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args(argv)
    if args.folds < 2:
        ap.error(f"--folds {args.folds}: needs at least 2")
    try:
        grid = offset_grid(args.grid_limit, args.grid_step, args.free)
    except ValueError as exc:
        ap.error(str(exc))
    from fairstream.taxonomy import Taxonomy

    dev = load_labelled_pairs(args.dev, {a.keyword: a.forms for a in Taxonomy.default()})
    results = []
    for run in args.run:
        wsd, reg, pairs, _meta = load_run(run, dev)
        result = analyse_run(
            wsd, reg, pairs, folds=args.folds, seed=args.seed, grid=grid, threshold=args.threshold
        )
        results.append({"run": str(run), **result})
        print(format_run(str(run), result))
        print()
    out: dict[str, Any] = {
        "dev": str(args.dev),
        "folds": args.folds,
        "seed": args.seed,
        "grid": {"limit": args.grid_limit, "step": args.grid_step, "neutral": 0.0, "free": list(args.free)},
        "runs": results,
    }
    if len(results) > 1:
        out["mean"] = _mean(results)
        m = out["mean"]
        print(f"mean of {len(results)} runs:")
        for label, key in (("argmax (no rule)", "without_rule"), ("with rule, CV", "with_rule_cv")):
            f1 = m[key]["regard_f1"]
            print(
                f"  {label:<22} macro-F1 {_n(m[key]['regard_macro_f1'])}  F1 neg/neu/pos "
                f"{_n(f1['negative'])}/{_n(f1['neutral'])}/{_n(f1['positive'])}  "
                f"neg P {_n(m[key]['negative_precision'])}  neg R {_n(m[key]['negative_recall'])}"
            )
        print(f"  mean offsets fitted on all items: {_offsets(m['offsets_fitted_on_all'])}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
