"""Merge round-5 answers (other sentences of the dev documents) into labels/devdocs-v1.jsonl."""

import collections
import sys
from pathlib import Path

from batches import corpus_record, read_answers, write_records

work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/annot5")
dest = Path(sys.argv[2] if len(sys.argv) > 2 else "labels/devdocs-v1.jsonl")
rows = [
    {
        **corpus_record(m, a, regard, f"r5-helper-{b}", 5),
        "dev_folds_3": m["dev_folds_3"],
        "dev_folds_5": m["dev_folds_5"],
    }
    for b, m, regard, a in read_answers(work, 8)
]
write_records(rows, dest)
print(len(rows), collections.Counter(r["wsd"] for r in rows), collections.Counter(r["regard"] for r in rows))
