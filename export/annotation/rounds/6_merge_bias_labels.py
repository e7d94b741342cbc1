"""Merge the annotators' answers for the bias-set batches into labels/bias-v1.jsonl (stand-off)."""

import sys
from pathlib import Path

from batches import read_answers, write_records

work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/annot2")
dest = Path(sys.argv[2] if len(sys.argv) > 2 else "labels/bias-v1.jsonl")
rows = [
    {"uid": m["uid"], "source": m["source"], "row": m["row"], "field": m["field"], "kw_start": m["kw_start"],
     "kw_end": m["kw_end"], "keyword": m["keyword"], "class": m["cls"], "gloss": m["gloss"], "wsd": a["wsd"],
     "regard": regard, "annotator": f"bias-helper-{b}", "round": 3}
    for b, m, regard, a in read_answers(work, 7)
]  # fmt: skip
write_records(rows, dest)
print(len(rows), "pairs ->", dest)
