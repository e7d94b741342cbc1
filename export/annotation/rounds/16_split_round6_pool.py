"""Split the round-6 pool left after annotation into a distillation pool and an unseen-text set.

    python scripts/annotation/16_split_round6_pool.py [--dir runs/round6] [--distill 3500] [--seed 6]

Items that were annotated (``selection.jsonl``) are removed. Of the rest, whole documents (source,
doc_id) go either to ``distill-pool.jsonl`` (mentions the student learns from the teacher's soft
labels only) or to ``unseen.jsonl`` (text no model trains on: int8-vs-fp32 parity and teacher/student
agreement on unseen text), so no document feeds both. The distillation pool takes documents in seeded
random order up to ``--distill`` mentions, spread over the pools in proportion ``--mix``
(forum:wiki:web). Both files keep the pool schema of ``export.distill.load_pool`` (with text: keep them
under runs/).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=ROOT / "runs/round6")
    ap.add_argument("--distill", type=int, default=3500, help="mentions in the distillation pool")
    ap.add_argument("--mix", default="2:1:1", help="forum:wiki:web shares of the distillation pool")
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument(
        "--labels",
        type=Path,
        default=ROOT / "labels/text-v1.jsonl",
        help="when selection.jsonl is gone (a fresh machine): the annotated items, matched to candidates "
        "by source, document and keyword offset",
    )
    args = ap.parse_args()
    cands = [json.loads(line) for line in (args.dir / "candidates.jsonl").open()]
    if (args.dir / "selection.jsonl").is_file():
        annotated = {json.loads(line)["cid"] for line in (args.dir / "selection.jsonl").open()}
    else:
        by_place = {(c["source"], c["doc_id"], c["kw_start"]): c["cid"] for c in cands}
        labels = [json.loads(line) for line in args.labels.open(encoding="utf-8") if line.strip()]
        annotated = {by_place[(r["source"], r["doc_id"], r["kw_start"])] for r in labels}
        print(f"selection rebuilt from {args.labels}: {len(annotated)} annotated candidates")
    annotated_docs = {(c["source"], c["doc_id"]) for c in cands if c["cid"] in annotated}
    # a document with an annotated mention stays out of both sets (its text is in training)
    rest = [c for c in cands if (c["source"], c["doc_id"]) not in annotated_docs]
    docs: dict[str, dict[tuple[str, str], list[dict]]] = collections.defaultdict(dict)
    for c in rest:
        docs[c["pool"]].setdefault((c["source"], c["doc_id"]), []).append(c)
    shares = dict(zip(("forum", "wiki", "web"), map(float, args.mix.split(":")), strict=True))
    total_share = sum(shares.values())
    rng = random.Random(args.seed)
    distill, unseen = [], []
    for pool in sorted(docs):
        quota = round(args.distill * shares.get(pool, 0) / total_share)
        keys = sorted(docs[pool])
        rng.shuffle(keys)
        taken = 0
        for key in keys:
            items = docs[pool][key]
            if taken < quota:
                distill += items
                taken += len(items)
            else:
                unseen += items
    for name, items in (("distill-pool.jsonl", distill), ("unseen.jsonl", unseen)):
        with (args.dir / name).open("w", encoding="utf-8") as f:
            for c in items:
                f.write(json.dumps({**c, "uid": f"c6-{c['cid']:05d}"}, ensure_ascii=False) + "\n")
        by_pool = collections.Counter(c["pool"] for c in items)
        print(f"{name}: {len(items)} mentions {dict(sorted(by_pool.items()))}")


if __name__ == "__main__":
    main()
