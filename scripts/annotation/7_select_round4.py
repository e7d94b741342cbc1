"""Round 4: every remaining real corpus item outside the dev documents.

Run after 1_extract_candidates.py (writes /tmp/cands.json). Documents holding a dev sentence and
items already in labels/corpus-v1.jsonl are excluded; labels come from annotators reading every item.
"""

import collections
import json
import random
from pathlib import Path


cands = json.load(open("/tmp/cands.json"))
dev_texts = {json.loads(x)["text"] for x in open("/work/shared/data/labels/dev.jsonl")}
dev_docs = {(c["file"], c["doc_id"]) for c in cands if c["text"] in dev_texts}
# candidates only list keyword sentences; a dev sentence anywhere marks the document (same rule as round 1)
labelled = {(r["file"], r["doc_id"], r["sent_start"], r["keyword"]) for r in map(json.loads, open("labels/corpus-v1.jsonl"))}
pool = [
    c for c in cands
    if (c["file"], c["doc_id"]) not in dev_docs and (c["file"], c["doc_id"], c["sent_start"], c["keyword"]) not in labelled
]  # fmt: skip
print("pool", len(pool), "dev docs", len(dev_docs))
# the pool is small enough to label whole (no model-based selection, so no selection bias)
rng = random.Random(4)
sel = list(pool)
rng.shuffle(sel)
print("selected", len(sel), collections.Counter(c["cls"] for c in sel))
work = Path("/tmp/annot4")
work.mkdir(exist_ok=True)
meta = {}
nb = 8
for i, c in enumerate(sel):
    c["uid"] = f"r4-{i:05d}"
    meta[c["uid"]] = {k: v for k, v in c.items() if k != "text"}
for b in range(nb):
    with (work / f"batch_{b}.jsonl").open("w") as f:
        for c in sel[b::nb]:
            f.write(json.dumps({"uid": c["uid"], "keyword": c["keyword"], "gloss": c["gloss"], "text": c["text"]}) + "\n")
json.dump(meta, (work / "meta.json").open("w"))
