"""Rounds 10 and 11 (issue 16, item 3): the previous round's unlabelled rest, scored by the shipped default.

    python scripts/annotation/22_score_round10.py [--previous runs/round9] [--out runs/round10] [--model joint-v4]
    python scripts/annotation/14_select_round6.py --dir runs/round10 --round 10 --seed 10 \
        --n-negative 800 --n-uncertain 600 --n-random 200
    # round 11 (session 13): the same on round 10's rest, scored by joint-v5
    python scripts/annotation/22_score_round10.py --previous runs/round10 --out runs/round11 --model joint-v5

Candidates: round 9's ``candidates.jsonl`` minus the 1,600 items round 9 labelled, and minus every
document that holds an unseen-text parity item (``runs/parity/unseen-*.jsonl``), so the int8-vs-fp32
parity sets stay unseen by any model trained on this round (the round-7 hold-out's documents were
already out of round 8's pool). joint-v4 was trained with the teacher that read rounds 6, 8 and 9;
its remaining errors on this text are what a new round should teach, so it alone scores: the
"model-negative" reason takes what joint-v4 calls negative, "uncertain" where its person or regard
decision is least sure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from batches import score_and_write

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--previous",
        "--round9",
        dest="previous",
        type=Path,
        default=ROOT / "runs/round9",
        help="the previous round's folder: its candidates.jsonl less its selection.jsonl are scored",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "runs/round10")
    ap.add_argument("--model", default="joint-v4", help="a shipped name or a model folder")
    args = ap.parse_args()
    labelled = {
        json.loads(line)["cid"] for line in (args.previous / "selection.jsonl").open(encoding="utf-8")
    }
    parity_docs = {
        (r["source"], str(r["doc_id"]))
        for path in sorted((ROOT / "runs/parity").glob("unseen-*.jsonl"))
        for r in map(json.loads, path.open(encoding="utf-8"))
    }
    all_cands = [json.loads(line) for line in (args.previous / "candidates.jsonl").open(encoding="utf-8")]
    cands = [
        c for c in all_cands
        if c["cid"] not in labelled and (c["source"], str(c["doc_id"])) not in parity_docs
    ]  # fmt: skip
    model_name = score_and_write(args.model, cands, args.out)
    print(
        f"{args.out}: {len(cands)} candidates scored by {model_name} (of {len(all_cands)}: "
        f"{len(labelled)} labelled in {args.previous.name}, the rest of the difference in parity documents)"
    )


if __name__ == "__main__":
    main()
