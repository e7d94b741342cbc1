"""Merge round-4 answers (every remaining corpus item outside dev documents) into labels/corpus-v2.jsonl."""

import collections
import sys
from pathlib import Path

from batches import corpus_record, read_answers, write_records

work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/annot4")
dest = Path(sys.argv[2] if len(sys.argv) > 2 else "labels/corpus-v2.jsonl")
rows = [corpus_record(m, a, regard, f"r4-helper-{b}", 4) for b, m, regard, a in read_answers(work, 8)]
write_records(rows, dest)
print(len(rows), collections.Counter(r["wsd"] for r in rows), collections.Counter(r["regard"] for r in rows))
