"""Choose a cascade's route on unlabelled text: the cheapest setting that decides (nearly) as the full model.

    NLTK_DATA=../shared/data/nltk_data python export/tools/choose_cascade_route.py \
        [--fast joint-v7-fast] [--full joint-v6] [--limit 0] [--min-agreement 0.99] [--min-negative-jaccard 0.95]

Runs both models on the unique (sentence, keyword) pairs of ``../shared/data/corpus`` (the keyword
stage's output; no labels), then scores a grid of the three route settings of
``fairstream.models.cascade.CascadeRoute`` on two things: the share of decisions (person or not, and
the regard of a person) equal to the full model's alone, and the Jaccard overlap of the negative
decisions. Prints the grid's cost/agreement frontier and the cheapest setting that meets both floors
(fixed before any labelled set is scored: joint-v6-cascade's route came from here, session 23).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import corpus_pairs  # noqa: E402

from fairstream.models.cascade import CascadeRoute  # noqa: E402
from fairstream.models.runtime import JointModel, softmax  # noqa: E402

GRID = {
    "wsd_margin": (0.35, 0.4, 0.42, 0.45, 0.47),
    "regard_confidence": (0.8, 0.9, 0.95, 0.97),
    "negative_probability": (1.0, 0.3, 0.1, 0.05, 0.02),
}


def decisions(wsd: np.ndarray, regard: np.ndarray, threshold: float) -> np.ndarray:
    """-1 for not a person, else the regard index."""
    return np.where(softmax(wsd)[:, 1] >= threshold, softmax(regard).argmax(axis=1), -1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fast", default="joint-v7-fast")
    ap.add_argument("--full", default="joint-v6")
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared/data/corpus")
    ap.add_argument("--limit", type=int, default=0, help="first N documents (0: all)")
    ap.add_argument("--min-agreement", type=float, default=0.99)
    ap.add_argument("--min-negative-jaccard", type=float, default=0.95)
    args = ap.parse_args()
    _, pairs = corpus_pairs(args.corpus, args.limit)
    fast, full = JointModel(args.fast), JointModel(args.full)
    if fast.wsd_threshold != full.wsd_threshold:
        raise SystemExit("--fast and --full use different WSD thresholds")
    fast_w, fast_r = fast.predict_logits(pairs)
    full_d = decisions(*full.predict_logits(pairs), full.wsd_threshold)
    fast_d = decisions(fast_w, fast_r, fast.wsd_threshold)
    rows = []
    for values in itertools.product(*GRID.values()):
        route = CascadeRoute(*values)
        routed = route.routed(fast_w, fast_r, fast.wsd_threshold)
        cascade = np.where(routed, full_d, fast_d)
        neg_full, neg_cascade = full_d == 0, cascade == 0
        union = (neg_full | neg_cascade).sum()
        rows.append(
            {
                **dict(zip(GRID, values, strict=True)),
                "routed": round(float(routed.mean()), 4),
                "agreement": round(float((cascade == full_d).mean()), 4),
                "negative_jaccard": round(float((neg_full & neg_cascade).sum() / union), 4) if union else 1.0,
            }
        )
    rows.sort(key=lambda r: (r["routed"], -r["agreement"]))
    print(f"{len(pairs)} pairs; fast alone agrees with full on {(fast_d == full_d).mean():.4f}")
    best = 0.0
    for r in rows:  # the frontier: each row agrees more than every cheaper one
        if r["agreement"] > best:
            best = r["agreement"]
            print(json.dumps(r))
    ok = [
        r
        for r in rows
        if r["agreement"] >= args.min_agreement and r["negative_jaccard"] >= args.min_negative_jaccard
    ]
    print("chosen:", json.dumps(ok[0]) if ok else "none meets the floors")


if __name__ == "__main__":
    main()
