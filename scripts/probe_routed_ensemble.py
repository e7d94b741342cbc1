"""Rule (i) (export/EXPERIMENTS.md, session 27): the default cascade, its routed mentions deciding by the mean
of joint-v6's and joint-v5's logits, against the shipped cascade on the five unseen sets.

    python scripts/sample_labels_as_pairs.py --out runs/s27/sample-pairs.jsonl
    NLTK_DATA=../shared/data/nltk_data python scripts/probe_routed_ensemble.py \
        --sample runs/s27/sample-pairs.jsonl --json export/sweeps/session27-rule-i-ensemble-v6-v5.json

The shipped cascade is simulated from its members' logits (checked equal to ``JointModel("joint-v6-cascade")``
logit for logit), so both sides share the fast model's route.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fairstream.models.cascade import CascadeRoute  # noqa: E402
from fairstream.models.labels import load_labelled_pairs  # noqa: E402
from fairstream.models.runtime import JointModel, softmax  # noqa: E402
from scripts.gpu.compare_students import ARGMAX_RULE, paired  # noqa: E402
from scripts.gpu.heldout_pool import HELDOUT, load_with_reasons  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--sample", type=Path, required=True, help="scripts/sample_labels_as_pairs.py's output")
ap.add_argument("--json", type=Path, required=True)
args = ap.parse_args()
SETS = {
    "heldout": lambda: load_with_reasons(HELDOUT)[0],
    "r14": lambda: load_with_reasons(ROOT / "labels/heldout-random-r14.jsonl")[0],
    "r15": lambda: load_with_reasons(ROOT / "labels/heldout-random-r15.jsonl")[0],
    "r18": lambda: load_with_reasons(ROOT / "labels/heldout-random-r18.jsonl")[0],
    "sample": lambda: load_labelled_pairs(args.sample),
}
fast, v6, v5, shipped = (JointModel(m) for m in ("joint-v7-fast", "joint-v6", "joint-v5", "joint-v6-cascade"))
route = CascadeRoute(
    **json.loads((ROOT / "fairstream/data/models/joint-v6-cascade/config.json").read_text())["cascade"][
        "route"
    ]
)
assert v5.wsd_threshold == v6.wsd_threshold == 0.5 and v5.regard_offsets == v6.regard_offsets == (
    0.0,
    0.0,
    0.0,
)
out = {}
for name, load in SETS.items():
    pairs = load()
    items = [p.mention for p in pairs]
    fw, fr = fast.predict_logits(items)
    w6, r6 = v6.predict_logits(items)
    w5, r5 = v5.predict_logits(items)
    routed = route.routed(fw, fr, fast.wsd_threshold)
    base_w, base_r = np.where(routed[:, None], w6, fw), np.where(routed[:, None], r6, fr)
    sw, sr = shipped.predict_logits(items)
    assert np.array_equal(base_w, sw) and np.array_equal(base_r, sr), name  # the simulation is the product
    cand_w = np.where(routed[:, None], (w6 + w5) / 2, fw)
    cand_r = np.where(routed[:, None], (r6 + r5) / 2, fr)
    res = paired(
        pairs,
        (softmax(base_w), softmax(base_r)),
        (softmax(cand_w), softmax(cand_r)),
        2000,
        (ARGMAX_RULE, ARGMAX_RULE),
    )
    out[name] = {"n": len(pairs), "routed": round(float(routed.mean()), 4), **res}
    print(name, json.dumps(out[name]), flush=True)
args.json.write_text(json.dumps(out, indent=1) + "\n")
