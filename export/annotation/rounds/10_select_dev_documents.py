"""Round 5: the candidate items of the documents that hold dev sentences (not the dev sentences).

Rounds 1-4 left these documents out so that the dev set stays held out. The shipped model trains on
the dev set anyway, so it can also train on the rest of those documents; for honest numbers the
cross-validation keeps each document's items out of training whenever one of its dev items is in
the evaluated fold (labels/corpus-devdocs-v1.jsonl records each item's dev folds for 3 and 5 folds).
"""

import collections
import hashlib
import json
import random
import sys
from pathlib import Path

from batches import write_batches

cands = json.load(open("/tmp/cands.json"))
dev = [json.loads(x) for x in open("/work/shared/data/labels/dev.jsonl")]
uids_by_text = collections.defaultdict(list)
for d in dev:
    uids_by_text[d["text"]].append(d["uid"])
doc_dev_uids = collections.defaultdict(list)
for c in cands:
    if c["text"] in uids_by_text:
        doc_dev_uids[(c["file"], c["doc_id"])] += uids_by_text[c["text"]]


def dev_fold(uid: str, folds: int) -> int:  # same as export.train.dev_fold
    return int(hashlib.sha1(uid.encode()).hexdigest(), 16) % folds


pool = [c for c in cands if (c["file"], c["doc_id"]) in doc_dev_uids and c["text"] not in uids_by_text]
print("dev documents", len(doc_dev_uids), "items in them (not dev sentences)", len(pool))
rng = random.Random(5)
rng.shuffle(pool)
for c in pool:
    uids = sorted(set(doc_dev_uids[(c["file"], c["doc_id"])]))
    c["dev_folds_3"] = sorted({dev_fold(u, 3) for u in uids})
    c["dev_folds_5"] = sorted({dev_fold(u, 5) for u in uids})
write_batches(pool, Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/annot5"), 8, "r5-")
print(collections.Counter(c["cls"] for c in pool))
print(collections.Counter(len(c["dev_folds_5"]) for c in pool))
