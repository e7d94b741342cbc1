"""Round 8 (issue 16, item 3): the MPNet teacher scores the unseen round-6 text; 14 then selects from it.

    python scripts/annotation/19_score_round8.py --logits runs/device-s6/3/logits/teacher-full-full.npz \
        --offset 16076 [--round6 runs/round6] [--heldout labels/heldout-text-r7.jsonl] [--out runs/round8]
    python scripts/annotation/14_select_round6.py --dir runs/round8 --round 8 --seed 8 \
        --n-negative 1200 --n-uncertain 600 --n-random 200 --pool-cap 0.6

Candidates are round 6's ``unseen.jsonl`` (``16_split_round6_pool.py``) without the documents that
hold a round-7 hold-out item (``labels/heldout-text-r7.jsonl`` stays text no model trains on).
Scores are the teacher's (``teacher-full``: MPNet fine-tuned on the 8,350 training pairs and the whole
dev set, ``export.sweep`` eval "full" with ``save_logits``, session 6 on a lent GPU). Its logits file
holds one row per item of ``--pairs`` and then of each ``--pool`` the sweep was given; ``--offset`` is
the number of rows before the unseen pool (12,576 pairs + 3,500 distillation-pool mentions). Writes
``candidates.jsonl`` and ``scored.jsonl`` (the schema of ``13_score_round6.py``) under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fairstream.models.runtime import softmax  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logits", type=Path, required=True)
    ap.add_argument("--offset", type=int, required=True, help="rows before the unseen pool in --logits")
    ap.add_argument("--round6", type=Path, default=ROOT / "runs/round6")
    ap.add_argument("--heldout", type=Path, default=ROOT / "labels/heldout-text-r7.jsonl")
    ap.add_argument("--out", type=Path, default=ROOT / "runs/round8")
    ap.add_argument("--model", default="teacher-mpnet-full-s6")
    args = ap.parse_args()
    unseen = [json.loads(line) for line in (args.round6 / "unseen.jsonl").open(encoding="utf-8")]
    with np.load(args.logits) as z:
        wsd, reg = softmax(z["wsd"].astype(np.float64)), softmax(z["regard"].astype(np.float64))
    if args.offset + len(unseen) != len(wsd):
        raise SystemExit(
            f"--offset {args.offset} + {len(unseen)} unseen mentions != {len(wsd)} rows in {args.logits}: "
            "pass the logits of the sweep that scored this unseen.jsonl last"
        )
    held_docs = {
        (r["source"], r["doc_id"]) for r in map(json.loads, args.heldout.open(encoding="utf-8")) if r
    }
    args.out.mkdir(parents=True, exist_ok=True)
    kept = 0
    with (
        (args.out / "candidates.jsonl").open("w", encoding="utf-8") as fc,
        (args.out / "scored.jsonl").open("w", encoding="utf-8") as fs,
    ):
        for i, c in enumerate(unseen):
            if (c["source"], c["doc_id"]) in held_docs:
                continue
            kept += 1
            c = {k: v for k, v in c.items() if k != "uid"}
            fc.write(json.dumps(c, ensure_ascii=False) + "\n")
            pw, pr = wsd[args.offset + i], reg[args.offset + i]
            ent = -sum(float(p) * math.log(max(float(p), 1e-12)) for p in pr)
            fs.write(
                json.dumps(
                    dict(
                        cid=c["cid"],
                        p_wsd=[round(float(x), 5) for x in pw],
                        p_wsd_yes=round(float(pw[1]), 5),
                        p_regard=[round(float(x), 5) for x in pr],
                        regard_entropy=round(ent, 5),
                        person=bool(pw[1] >= 0.5),
                        model=args.model,
                    )
                )
                + "\n"
            )
    print(
        f"{kept} of {len(unseen)} unseen mentions (documents of round-7 hold-out items left out) -> {args.out}"
    )


if __name__ == "__main__":
    main()
