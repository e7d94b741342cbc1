"""Committed result files a card cites, read as numbers or as the sentences a spec's placeholders become.

Paired comparisons (``export/gpu/compare_models_heldout.py --json``) record their --a/--b and, per subset
("all", "random"), every metric's value on side a and side b with b - a and its bootstrap interval. The
other readers take ``benchmarks/bench_shipped_models.py``, ``export/cv/score_cv.py`` and
``export.decision_rule --json`` output.
"""

from __future__ import annotations

import json
from pathlib import Path

TABLE_METRICS = ("wsd_kappa", "regard_macro_f1", "negative_f1")
DIFF_NAMES = {
    "wsd_kappa": "WSD kappa",
    "regard_macro_f1": "regard macro-F1",
    "negative_f1": "negative F1",
    "negative_precision": "negative precision",
    "negative_recall": "negative recall",
}
SPEED_RESULTS = "benchmarks/results/shipped-models.json"


def side(path: Path, which: str) -> dict:
    """One model's numbers (``which``: "a" or "b") on all items and on the random ones."""
    if which not in ("a", "b"):
        raise SystemExit(f"{path}: side {which!r}; allowed: a, b")
    d = json.loads(path.read_text())
    return {
        subset: {"n": d[subset]["n"], **{k: d[subset][k][which] for k in TABLE_METRICS}}
        for subset in ("all", "random")
        if subset in d
    }


def diff_text(path: Path, metrics: tuple[str, ...] = tuple(DIFF_NAMES)) -> str:
    """b minus a on all items, each with its paired bootstrap 95% interval."""
    d = json.loads(path.read_text())["all"]
    return ", ".join(
        f"{DIFF_NAMES[k]} {d[k]['b_minus_a']:+.3f} ({d[k]['ci95'][0]:.3f}, {d[k]['ci95'][1]:.3f})"
        for k in metrics
    )


def speed_text(model: str, baseline: str, results: Path) -> str:
    """A model's model-stage rate beside a baseline's, from ``benchmarks/bench_shipped_models.py``."""
    speed = json.loads(results.read_text())
    rate = speed["pairs_per_cpu_second"]
    fast, base = rate[model]["median"], rate[baseline]["median"]
    return (
        f"{fast:.0f} against {baseline}'s {base:.0f} pairs per CPU second ({fast / base:.2f}x; one intra-op "
        f"thread, {speed['pairs']} corpus pairs, {speed['rounds']} interleaved rounds, commit "
        f"{speed['machine'].get('commit', '?')}, benchmarks/results/shipped-models.md)"
    )


def rule_f_text(path: Path) -> str:
    """Rule (f)'s state (export/EXPERIMENTS.md, session 20) from ``export/cv/score_cv.py``'s JSON."""
    cv = json.loads(path.read_text())
    rule = cv["rule_f"]
    seeds = {s: v["pooled"]["regard_macro_f1"] for s, v in cv["per_seed"].items() if len(v["folds"]) == 5}
    done = "; ".join(f"seed {s}: {f:.3f}" for s, f in seeds.items())
    if rule["holds"] is None:
        lines = [
            f"Not decided yet: rule (f) needs two seeds with all five folds, and only {done} is complete "
            "(the other seed's folds are training; export/cv/run_folds.sh)."
        ]
    elif "mean" not in rule:
        lines = [
            f"Rule (f) does not hold, decided by one seed: {done}, not above the joint-v2 recipe's best seed "
            f"({rule['reference_best']:.3f}), which clause (2) asks of every seed ("
            f"{min(seeds.values()) - rule['reference_mean']:+.3f} over its mean, where clause (1) asks more than "
            f"+{rule['reference_spread']:.3f}). The second seed's folds are still training, for the two-seed mean."
        ]
    else:
        verdict = "holds" if rule["holds"] else "does not hold"
        every = "every" if rule["clause_2_every_seed_above_best"] else "not every"
        lines = [
            f"Rule (f) {verdict}: the seeds' mean {rule['mean']:.3f} ({done}) is "
            f"{rule['gain_over_reference_mean']:+.3f} over the joint-v2 recipe's mean (needs more than "
            f"+{rule['reference_spread']:.3f}), and {every} seed is above its best seed ({rule['reference_best']:.3f})."
        ]
    if rule["holds"] is False:
        lines.append(
            "So on the dev set's web text this recipe does not show a gain over joint-v2's beyond the seed spread; "
            "what joint-v6 gains shows on the unseen real text below (forum, news and Wikipedia, the text its added "
            "label rounds come from)."
        )
    return "\n".join(lines)


def grid_offsets_text(path: Path) -> str:
    """The full decision-rule grid's CV score and its positive offsets per fold (``export.decision_rule --json``)."""
    r = json.loads(path.read_text())["runs"][0]
    return (
        f"regard macro-F1 {r['with_rule_cv']['regard_macro_f1']:.3f} with the rule (CV), positive offsets "
        f"{[o[2] for o in r['fold_offsets']]} across the folds"
    )
