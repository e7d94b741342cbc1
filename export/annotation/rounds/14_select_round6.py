"""Choose up to 2,400 round-6 items for annotation and split them into 8 blind batches.

    python scripts/annotation/14_select_round6.py [--dir runs/round6] [--seed 6]

Reads ``candidates.jsonl`` (``12_extract_round6_candidates.py``) and ``scored.jsonl``
(``13_score_round6.py``). Reasons, filled in this order (an item gets the first that takes it):

1. ``model-negative``: the model calls the mention a person (P(wsd=yes) >= 0.5) with negative
   regard (argmax); highest P(negative) x P(wsd=yes) (2 decimals, ties in seeded random order) first;
2. ``uncertain``: P(wsd=yes) in 0.3-0.7, or person with high regard entropy; most uncertain first
   (ranked by max(1 - |2 P(yes) - 1|, regard entropy / ln 3));
3. ``random``: a seeded random sample of the rest, for calibration.

Caps keep the sample spread: at most 2 items per (source, document, keyword) and 3 per (source,
document); per reason at most ``--kw-cap`` of its quota for one keyword. Places a reason cannot fill
pass to the next one. The selected items are
shuffled and numbered ``r6-00001`` ...; ``batches/batch-XX.jsonl`` (what annotators read: text,
keyword, class, gloss and the stand-off fields, no scores) and ``selection.jsonl`` (uid, cid, reason,
scores, batch) are written beside the inputs.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from batches import write_selection_batches  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=ROOT / "runs/round6")
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--n-negative", type=int, default=1300)
    ap.add_argument("--n-uncertain", type=int, default=700)
    ap.add_argument("--n-random", type=int, default=400)
    ap.add_argument(
        "--kw-cap", type=float, default=0.15, help="share of a reason's quota one keyword may take"
    )
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument(
        "--mark-occurrence",
        action="store_true",
        help="add text_marked (the read occurrence marked [[...]]) for the annotators; use it for new rounds",
    )
    ap.add_argument("--round", type=int, default=6, help="uids are numbered rN-00001 ...")
    ap.add_argument(
        "--pool-cap",
        type=float,
        default=1.0,
        help="share of a reason's quota one pool (forum/wiki/web) may take",
    )
    args = ap.parse_args()
    cands = {c["cid"]: c for c in map(json.loads, (args.dir / "candidates.jsonl").open(encoding="utf-8"))}
    scores = {s["cid"]: s for s in map(json.loads, (args.dir / "scored.jsonl").open(encoding="utf-8"))}
    missing = set(cands) - set(scores)
    if missing:
        raise SystemExit(f"{len(missing)} candidates are not scored yet; run 13_score_round6.py")

    per_doc_kw: collections.Counter = collections.Counter()
    per_doc: collections.Counter = collections.Counter()
    chosen: dict[int, str] = {}

    def take(order: list[int], reason: str, quota: int) -> int:
        per_kw: collections.Counter = collections.Counter()
        per_pool: collections.Counter = collections.Counter()
        cap = max(1, int(args.kw_cap * quota))
        pool_cap = max(1, int(args.pool_cap * quota))
        n = 0
        for cid in order:
            if n >= quota:
                break
            c = cands[cid]
            dk, d = (c["source"], c["doc_id"], c["keyword"]), (c["source"], c["doc_id"])
            if cid in chosen or per_doc_kw[dk] >= 2 or per_doc[d] >= 3 or per_kw[c["keyword"]] >= cap:
                continue
            if per_pool[c["pool"]] >= pool_cap:
                continue
            chosen[cid] = reason
            per_doc_kw[dk] += 1
            per_doc[d] += 1
            per_kw[c["keyword"]] += 1
            per_pool[c["pool"]] += 1
            n += 1
        return quota - n  # unfilled places pass to the next reason

    def p_yes(cid: int) -> float:
        return scores[cid]["p_wsd_yes"]

    def p_neg(cid: int) -> float:
        return scores[cid]["p_regard"][0]

    neg = [cid for cid in cands if p_yes(cid) >= 0.5 and p_neg(cid) == max(scores[cid]["p_regard"])]
    # the student is saturated (thousands at P(negative) > 0.99): rank on 2 decimals, ties in seeded random
    # order, so the cap per keyword does not just take the first rows of each file
    random.Random(args.seed).shuffle(neg)
    neg.sort(key=lambda cid: -round(p_neg(cid) * p_yes(cid), 2))
    left = take(neg, "model-negative", args.n_negative)

    def uncertainty(cid: int) -> float:
        wsd_u = 1 - abs(2 * p_yes(cid) - 1)
        reg_u = scores[cid]["regard_entropy"] / math.log(3) if p_yes(cid) >= 0.3 else 0.0
        return max(wsd_u, reg_u)

    unc = sorted(cands, key=lambda cid: (-uncertainty(cid), cid))
    left = take(unc, "uncertain", args.n_uncertain + left)

    rest = sorted(cid for cid in cands if cid not in chosen)
    random.Random(args.seed).shuffle(rest)
    take(rest, "random", args.n_random + left)

    sel = sorted(chosen)
    random.Random(args.seed + 1).shuffle(sel)

    def selection(c: dict) -> dict:
        s = scores[c["cid"]]
        return {
            "reason": chosen[c["cid"]],
            "pool": c["pool"],
            "p_wsd_yes": s["p_wsd_yes"],
            "p_regard": s["p_regard"],
            "regard_entropy": s["regard_entropy"],
            "model": s["model"],
        }

    size = write_selection_batches(
        args.dir,
        [cands[cid] for cid in sel],
        f"r{args.round}-",
        args.batches,
        selection,
        args.mark_occurrence,
    )
    print(
        f"{len(sel)} selected into {args.batches} batches of <= {size}: {dict(collections.Counter(chosen.values()))}"
    )
    by = collections.Counter((chosen[cid], cands[cid]["pool"], cands[cid]["class"]) for cid in sel)
    for k, v in sorted(by.items()):
        print("\t".join(k), v, sep="\t")


if __name__ == "__main__":
    main()
