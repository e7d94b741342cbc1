"""Pool one seed's five fold fits into a single run folder for ``python -m export.decision_rule``.

    NLTK_DATA=../shared/data/nltk_data python export/cv/pool_folds_for_rule.py \
        --runs export/sweeps/cv-s20 --seed 0 --out runs/s26/v6-s0-pooled
    python -m export.decision_rule --run runs/s26/v6-s0-pooled --dev ../shared/data/labels/dev.jsonl --folds 5

Each fit of ``export/cv/run_folds.sh`` (``RUNS/v6-sSEED-fFOLD``) holds its held-out fold's dev
probabilities. Put in dev order they are out-of-fold predictions for every dev item, i.e. a run that
never saw the item it predicts, which is what the decision rule's own cross-validation needs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.calibrate import out_of_fold  # noqa: E402
from fairstream.models.labels import load_labelled_pairs  # noqa: E402

FOLDS = 5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=Path, default=ROOT / "export/sweeps/cv-s20")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dev", type=Path, default=ROOT.parent / "shared/data/labels/dev.jsonl")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    dev = load_labelled_pairs(args.dev)
    wsd, reg = out_of_fold(args.runs, args.seed, dev, FOLDS)
    meta = json.loads((args.runs / f"v6-s{args.seed}-f0" / "train_meta.json").read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "dev_wsd.npy", wsd)
    np.save(args.out / "dev_regard.npy", reg)
    meta.update(dev_folds=None, fold=None, pooled_from=[f"v6-s{args.seed}-f{k}" for k in range(FOLDS)])
    (args.out / "train_meta.json").write_text(json.dumps(meta, indent=1))
    print(
        f"{args.out}: out-of-fold predictions for {len(dev)} dev items from {FOLDS} folds of seed {args.seed}"
    )


if __name__ == "__main__":
    main()
