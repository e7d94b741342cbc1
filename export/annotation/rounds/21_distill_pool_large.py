"""A larger distillation pool: round 6's unseen mentions that no label round and no parity set used.

    python scripts/annotation/21_distill_pool_large.py [--out runs/round6/distill-pool-large.jsonl]

Rounds 7-9 were drawn from ``runs/round6/unseen.jsonl`` (round 7 is the hold-out every model is
compared on) and the unseen-text parity sets from it too. This keeps the unseen mentions whose
document (source, doc_id) holds none of those items, so a student that learns the teacher's soft
labels on them never reads a hold-out or parity document. Same pool schema as ``distill-pool.jsonl``
(text included: keep it under runs/).
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _records(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _doc(rec: dict) -> tuple[str, str]:
    return rec["source"], str(rec["doc_id"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unseen", type=Path, default=ROOT / "runs/round6/unseen.jsonl")
    ap.add_argument(
        "--exclude",
        type=Path,
        action="append",
        help="files whose documents stay out (default: the hold-out, rounds 8-9, the parity sets)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "runs/round6/distill-pool-large.jsonl")
    args = ap.parse_args()
    exclude = args.exclude or [
        ROOT / "labels/heldout-text-r7.jsonl",
        ROOT / "labels/text-r8.jsonl",
        ROOT / "labels/text-r9.jsonl",
        *sorted((ROOT / "runs/parity").glob("unseen-*.jsonl")),
    ]
    banned = {_doc(r) for path in exclude for r in _records(path)}
    unseen = _records(args.unseen)
    kept = [r for r in unseen if _doc(r) not in banned]
    tmp = args.out.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for r in kept:
            f.write(json.dumps(r) + "\n")
    tmp.replace(args.out)
    pools = dict(collections.Counter(r["pool"] for r in kept))
    print(
        f"{args.out}: {len(kept)} of {len(unseen)} unseen mentions ({pools}); {len(banned)} documents left out"
    )


if __name__ == "__main__":
    main()
