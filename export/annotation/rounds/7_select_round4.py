"""Round 4: every remaining real corpus item outside the dev documents.

Run after 1_extract_candidates.py (writes /tmp/cands.json). Documents holding a dev sentence and
items already in labels/corpus-v1.jsonl are excluded; labels come from annotators reading every item.
"""

import collections
import json
import random
import sys
from pathlib import Path

from batches import write_batches


cands = json.load(open("/tmp/cands.json"))
dev_texts = {json.loads(x)["text"] for x in open("/work/shared/data/labels/dev.jsonl")}
dev_docs = {(c["file"], c["doc_id"]) for c in cands if c["text"] in dev_texts}
# candidates only list keyword sentences; a dev sentence anywhere marks the document (same rule as round 1)
labelled = {
    (r["file"], r["doc_id"], r["sent_start"], r["keyword"])
    for r in map(json.loads, open("labels/corpus-v1.jsonl"))
}
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
write_batches(sel, Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/annot4"), 8, "r4-")
