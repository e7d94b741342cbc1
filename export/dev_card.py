"""The card's dev-set estimates: ``export.sweep`` runs (held out or cross-validated), ``export.train
--dev-folds`` run folders pooled per seed, and ``export.decision_rule``'s cross-validated regard rule.

``export/cv/score_cv.py`` reuses ``load_dev``, ``fold_predictions`` and ``pool_folds``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from export.card_tables import HEADER, SWEEP_HEADER, fmt_metrics, fmt_score, mean_row


def load_dev(dev_path: Path) -> list:
    """The expert dev set as labelled pairs (the taxonomy's word forms locate each keyword)."""
    from fairstream.models.labels import load_labelled_pairs
    from fairstream.taxonomy import Taxonomy

    return load_labelled_pairs(dev_path, {a.keyword: a.forms for a in Taxonomy.default()})


def fold_predictions(runs: list[Path], dev: list) -> list[tuple[int, list, Any, Any]]:
    """Each ``export.train --dev-folds`` run's fold, its dev items (dev-file order) and saved probabilities."""
    import numpy as np

    from export.train import dev_fold

    parts = []
    for run in runs:
        meta = json.loads((run / "train_meta.json").read_text())
        n_folds, fold = meta["dev_folds"], meta["fold"]
        mine = [p for p in dev if dev_fold(p.uid, n_folds) == fold]
        w, r = np.load(run / "dev_wsd.npy"), np.load(run / "dev_regard.npy")
        if len(w) != len(mine) or len(r) != len(mine):
            raise SystemExit(
                f"{run}: {len(w)} dev predictions, but fold {fold} of {n_folds} has {len(mine)} items"
            )
        parts.append((fold, mine, w, r))
    return parts


def pool_folds(parts: list[tuple[int, list, Any, Any]]) -> tuple[list, Any, Any]:
    """``fold_predictions``' folds as one prediction per item: (items, WSD probabilities, regard probabilities)."""
    import numpy as np

    pairs = [p for _, mine, _, _ in parts for p in mine]
    return pairs, np.concatenate([w for *_, w, _ in parts]), np.concatenate([r for *_, r in parts])


def cross_validated(runs: list[Path], dev: list, threshold: float) -> tuple[dict, list[dict]]:
    """Pool the dev-fold predictions of cross-validation runs and score them (pooled, then per run)."""
    from export.train import evaluate

    parts = fold_predictions(runs, dev)
    folds = [evaluate(w, r, mine, threshold) for _, mine, w, r in parts]
    pairs, wsd, reg = pool_folds(parts)
    return evaluate(wsd, reg, pairs, threshold), folds


def cv_section(runs: list[Path], dev_path: Path, threshold: float, note: str = "") -> list[str]:
    """The card's CV section from ``export.train --dev-folds`` run folders: pooled per seed, then the mean."""
    by_seed: dict[int, list[Path]] = {}
    metas = {run: json.loads((run / "train_meta.json").read_text()) for run in runs}
    for run, meta in metas.items():
        by_seed.setdefault(int(meta["seed"]), []).append(run)
    fold_sets = {seed: sorted(metas[r]["fold"] for r in rs) for seed, rs in by_seed.items()}
    if len({tuple(f) for f in fold_sets.values()}) != 1:
        raise SystemExit(f"--cv: every seed needs the same folds; got {{seed: folds}} {fold_sets}")
    k = {int(m["dev_folds"]) for m in metas.values()}.pop()
    present = next(iter(fold_sets.values()))
    partial = f" (only folds {present} of {k} so far)" if len(present) < k else ""
    dev = load_dev(dev_path)
    scored = {
        seed: cross_validated(sorted(by_seed[seed], key=lambda r: metas[r]["fold"]), dev, threshold)
        for seed in sorted(by_seed)
    }
    lines = [
        "",
        f"### Cross-validated: the shipped recipe (all training data + the dev set) in {k} folds{partial}",
        "",
        "Each fold trains on everything plus the other dev fold(s) and is scored on its own dev fold (split by "
        f"a hash of the item uid; PyTorch fp32, WSD threshold {threshold}). Pooled over the folds, per seed:",
        "",
    ]
    if len(scored) == 1:
        lines += [HEADER, fmt_metrics(next(iter(scored.values()))[0])]
    else:
        lines += [SWEEP_HEADER, *(f"| seed {s} " + fmt_metrics(pooled) for s, (pooled, _) in scored.items())]
        lines.append(mean_row([pooled for pooled, _ in scored.values()]))
    lines += ["", "Per fold:"]
    for seed, (_, folds) in scored.items():
        lines.append(
            f"* seed {seed}: "
            + "; ".join(
                f"fold {i}: kappa {m['wsd_kappa']:.3f}, regard macro-F1 {m['regard_macro_f1']:.3f} (n={m['n']})"
                for i, m in zip(present, folds, strict=True)
            )
        )
    if note:
        lines += ["", note]
    return lines


def _sweep_results(files: list[Path], names: list[str]) -> dict[str, dict]:
    results = {}
    for f in files:
        for line in f.read_text().splitlines():
            r = json.loads(line)
            results[r["name"]] = r
    missing = [n for n in names if n not in results]
    if missing:
        raise SystemExit(f"--sweep files have no runs named {missing}; they have {sorted(results)}")
    return results


def sweep_folds(files: list[Path], names: list[str]) -> int:
    """The number of cross-validation folds of the named sweep runs (they must agree)."""
    results = _sweep_results(files, names)
    folds = {int(results[n]["config"].get("folds", 5)) for n in names}
    if len(folds) != 1:
        raise SystemExit(f"--cv-names {names}: runs with different fold counts {sorted(folds)}")
    return folds.pop()


def sweep_rows(files: list[Path], names: list[str], label: str = "mean") -> list[str]:
    """Table rows (one per named sweep run, then the mean) from ``export.sweep`` results files."""
    results = _sweep_results(files, names)
    rows = [f"| {n} (seed {results[n]['config']['seed']}) " + fmt_metrics(results[n]["dev"]) for n in names]
    return [*rows, mean_row([results[n]["dev"] for n in names], label)]


def decision_rule_section(dr: dict, note: str = "") -> list[str]:
    """Table of ``export.decision_rule --json``: regard scores with and without the rule, per run; ``note`` under it."""
    from export.decision_rule import FREE_OFFSETS  # (numpy and fairstream only when a rule is carded)

    free = dr["grid"].get("free", FREE_OFFSETS)
    fixed = ", ".join(k for k in ("negative", "neutral", "positive") if k not in free)
    head = (
        "| run | rule | regard macro-F1 | F1 neg / neu / pos | negative precision | negative recall |\n"
        "|---|---|---|---|---|---|"
    )
    lines = [
        "",
        f"### Regard decision rule: {dr['folds']}-fold cross-validation over the dev items",
        "",
        "Offsets added to the regard log-probabilities before the argmax, fitted by maximizing regard macro-F1 "
        f"on the other folds' person items (grid [-{dr['grid']['limit']}, {dr['grid']['limit']}] step "
        f"{dr['grid']['step']}, {fixed} fixed at 0, seed {dr['seed']}) and applied to the held-out fold; the "
        "pooled held-out decisions are scored. Predictions of runs that held the dev set out.",
        "",
        head,
    ]
    rows = [(Path(r["run"]).name, r) for r in dr["runs"]]
    if "mean" in dr:
        rows.append(("**mean**", dr["mean"]))
    for name, r in rows:
        for label, key in (("argmax", "without_rule"), ("offsets (CV)", "with_rule_cv")):
            m = r[key]
            f1 = m["regard_f1"]
            lines.append(
                f"| {name} | {label} | {fmt_score(m['regard_macro_f1'])} | "
                f"{fmt_score(f1['negative'])} / {fmt_score(f1['neutral'])} / {fmt_score(f1['positive'])} | "
                f"{fmt_score(m['negative_precision'])} | {fmt_score(m['negative_recall'])} |"
            )
    fitted = dr["mean"]["offsets_fitted_on_all"] if "mean" in dr else dr["runs"][0]["offsets_fitted_on_all"]
    lines += [
        "",
        f"Offsets fitted on all dev items: {[round(x, 3) for x in fitted]} (negative, neutral, positive).",
    ]
    return lines + (["", note] if note else [])
