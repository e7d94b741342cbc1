"""Score session 20's 5-fold dev CV of joint-v6's recipe and apply rule (f) (export/EXPERIMENTS.md).

    NLTK_DATA=../shared/data/nltk_data python export/cv/score_cv.py [--runs export/sweeps/cv-s20] \
        [--json export/sweeps/session20-cv-joint-v6-recipe.json]

Each fit (``export/cv/run_folds.sh``: ``RUNS/v6-sSEED-fFOLD``) saved its held-out fold's probabilities
(``dev_wsd.npy``, ``dev_regard.npy``, in the dev file's order within the fold). Per seed the five folds
are pooled into one prediction per dev item and scored as ``fairstream eval-models`` scores (WSD at
0.5, regard argmax). A seed with missing folds is reported on the folds it has and left out of the
rule. The reference is the joint-v2 recipe's 5-fold CV (``export/sweeps/sweep4-final-recipe.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.gpu.compare_students import metrics as student_metrics  # noqa: E402
from export.model_card import fold_predictions, load_dev, pool_folds  # noqa: E402
from fairstream.models.labels import LabelledPair  # noqa: E402

FOLDS = 5
REFERENCE = ROOT / "export/sweeps/sweep4-final-recipe.jsonl"
REFERENCE_NAMES = ("final-recipe-cv5-s0", "final-recipe-cv5-s1", "final-recipe-cv5-s2")


def metrics(pairs: list[LabelledPair], wsd_p: np.ndarray, reg_p: np.ndarray) -> dict[str, float]:
    return {k: round(v, 3) for k, v in student_metrics(pairs, wsd_p, reg_p).items()}


def reference() -> dict[str, dict[str, float]]:
    rows = {}
    for line in REFERENCE.read_text().splitlines():
        rec = json.loads(line)
        if rec["name"] in REFERENCE_NAMES:
            d = rec["dev"]
            rows[rec["name"]] = {
                "wsd_kappa": round(d["wsd_kappa"], 3),
                "regard_macro_f1": round(d["regard_macro_f1"], 3),
                "negative_f1": round(d["regard_f1"]["negative"], 3),
            }
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--runs",
        type=Path,
        default=ROOT / "export/sweeps/cv-s20",
        help="fit folders (export/cv/collect_folds.sh)",
    )
    ap.add_argument("--prefix", default="v6", help="fit folders are RUNS/PREFIX-sSEED-fFOLD")
    ap.add_argument("--dev", type=Path, default=ROOT.parent / "shared/data/labels/dev.jsonl")
    ap.add_argument("--json", type=Path, help="write the scores here")
    args = ap.parse_args(argv)
    dev = load_dev(args.dev)
    seeds = sorted({int(p.name.split("-s")[1].split("-f")[0]) for p in args.runs.glob(f"{args.prefix}-s*-f*")
                    if (p / "dev_regard.npy").is_file()})  # fmt: skip
    out: dict = {"runs": str(args.runs), "per_seed": {}, "reference_joint_v2_recipe": reference()}
    for seed in seeds:
        runs = [args.runs / f"{args.prefix}-s{seed}-f{k}" for k in range(FOLDS)]
        parts = fold_predictions([run for run in runs if (run / "dev_regard.npy").is_file()], dev)
        per_fold = {fold: metrics(mine, w, r) for fold, mine, w, r in parts}
        pairs, wsd, reg = pool_folds(parts)
        pooled = metrics(pairs, wsd, reg)
        out["per_seed"][seed] = {
            "folds": sorted(per_fold),
            "n": len(pairs),
            "per_fold": per_fold,
            "pooled": pooled,
        }
        print(f"seed {seed}, folds {sorted(per_fold)} pooled ({len(pairs)} items): {json.dumps(pooled)}")
    ref = out["reference_joint_v2_recipe"]
    ref_f1 = [r["regard_macro_f1"] for r in ref.values()]
    complete = [s for s, v in out["per_seed"].items() if len(v["folds"]) == FOLDS]
    rule: dict = {
        "reference_mean": round(float(np.mean(ref_f1)), 3),
        "reference_spread": round(max(ref_f1) - min(ref_f1), 3),
        "reference_best": max(ref_f1),
        "complete_seeds": complete,
    }
    new = [out["per_seed"][s]["pooled"]["regard_macro_f1"] for s in complete]
    if len(complete) >= 2:
        rule["mean"] = round(float(np.mean(new)), 3)
        rule["gain_over_reference_mean"] = round(rule["mean"] - rule["reference_mean"], 3)
        rule["clause_1_gain_beyond_spread"] = rule["gain_over_reference_mean"] > rule["reference_spread"]
        rule["clause_2_every_seed_above_best"] = all(f > rule["reference_best"] for f in new)
        rule["holds"] = rule["clause_1_gain_beyond_spread"] and rule["clause_2_every_seed_above_best"]
    elif any(f <= rule["reference_best"] for f in new):
        # clause 2 needs every seed above the reference's best, so one complete seed at or below it decides
        rule["clause_2_every_seed_above_best"] = False
        rule["holds"] = False
    else:
        rule["holds"] = None  # not decided: fewer than two seeds have all five folds
    out["rule_f"] = rule
    print("rule (f): " + json.dumps(rule))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
