"""Rule (i) (export/EXPERIMENTS.md, session 27): the default cascade, its routed mentions deciding by the mean
of joint-v6's and joint-v5's logits, against the shipped cascade on the five unseen sets.

    python export/tools/sample_labels_as_pairs.py --out runs/s27/sample-pairs.jsonl
    NLTK_DATA=../shared/data/nltk_data python export/tools/probe_routed_ensemble.py \
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.gpu.compare_students import ARGMAX_RULE, paired  # noqa: E402
from export.gpu.heldout_pool import HELDOUT, load_with_reasons  # noqa: E402
from fairstream.models.decision import NO_OFFSETS  # noqa: E402
from fairstream.models.labels import load_labelled_pairs  # noqa: E402
from fairstream.models.runtime import JointModel, softmax  # noqa: E402

JUDGES = {
    "heldout": HELDOUT,
    **{f"r{r}": ROOT / f"export/labels/heldout-random-r{r}.jsonl" for r in (14, 15, 18)},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sample", type=Path, required=True, help="export/tools/sample_labels_as_pairs.py's output"
    )
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args()
    shipped = JointModel("joint-v6-cascade")
    assert shipped.cascade is not None
    fast, v6, route = shipped.cascade.fast, shipped.cascade.full, shipped.cascade.route  # its own members
    v5 = JointModel("joint-v5")
    assert (v5.wsd_threshold, v5.regard_offsets) == (v6.wsd_threshold, v6.regard_offsets) == ARGMAX_RULE
    assert shipped.regard_offsets == NO_OFFSETS  # both sides decide by argmax
    sets = {name: load_with_reasons(path)[0] for name, path in JUDGES.items()}
    sets["sample"] = load_labelled_pairs(args.sample)
    out = {}
    for name, pairs in sets.items():
        items = [p.mention for p in pairs]
        fw, fr = fast.predict_logits(items)
        w6, r6 = v6.predict_logits(items)
        w5, r5 = v5.predict_logits(items)
        routed = route.routed(fw, fr, fast.wsd_threshold)[:, None]
        base_w, base_r = np.where(routed, w6, fw), np.where(routed, r6, fr)
        sw, sr = shipped.predict_logits(items)
        assert np.array_equal(base_w, sw) and np.array_equal(base_r, sr), (
            name
        )  # the simulation is the product
        cand_w, cand_r = np.where(routed, (w6 + w5) / 2, fw), np.where(routed, (r6 + r5) / 2, fr)
        base, cand = (softmax(base_w), softmax(base_r)), (softmax(cand_w), softmax(cand_r))
        res = paired(pairs, base, cand, 2000, (ARGMAX_RULE, ARGMAX_RULE))
        out[name] = {"n": len(pairs), "routed": round(float(routed.mean()), 4), **res}
        print(name, json.dumps(out[name]), flush=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
