"""Keep a teacher's soft labels only for the pairs that reference soft-label files cover.

    python export/cv/nodev_soft_labels.py --soft runs/cv-s20/soft-all.jsonl \
        --like export/labels/soft/teacher-mpnet-text-s10.jsonl.gz --like export/labels/soft/teacher-mpnet-text-s10-r10.jsonl.gz \
        --like export/labels/soft/teacher-mpnet-r10-s13-r11.jsonl.gz --out export/labels/soft/teacher-mpnet-nodev-s20.jsonl.gz

A pair is kept when its (uid, text hash) is in a ``--like`` file, so a student trained on the output
soft-labels exactly the pairs a student of the reference files did (session 20's leak-free CV of
joint-v6's recipe: a teacher that never saw dev, standing in for teachers that did). Fails if a
reference pair has no row in ``--soft``: the stand-in would then train that pair on gold only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from pathlib import Path


def read_rows(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--soft", type=Path, required=True, help="the teacher's soft labels (export.distill --out)"
    )
    ap.add_argument("--like", type=Path, action="append", required=True, help="reference soft-label file")
    ap.add_argument("--out", type=Path, required=True, help="filtered soft labels (.jsonl or .jsonl.gz)")
    args = ap.parse_args(argv)
    wanted = {(r["uid"], r["text_sha1"]) for p in args.like for r in read_rows(p)}
    kept, seen = [], set()
    for row in read_rows(args.soft):
        key = (row["uid"], row["text_sha1"])
        if key in wanted and key not in seen:
            kept.append(row)
            seen.add(key)
    missing = wanted - seen
    if missing:
        print(
            f"error: {len(missing)} reference pairs have no row in {args.soft}, e.g. {sorted(missing)[:3]}",
            file=sys.stderr,
        )
        return 1
    tmp = args.out.with_name(args.out.name + ".tmp")
    opener = gzip.open if args.out.suffix == ".gz" else open
    with opener(tmp, "wt", encoding="utf-8") as f:
        for row in kept:
            f.write(json.dumps(row) + "\n")
    os.replace(tmp, args.out)
    print(
        f"kept {len(kept)} of the teacher's rows (every one of the {len(wanted)} reference pairs) -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
