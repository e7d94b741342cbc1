"""Pick unlabelled real mentions for int8-vs-fp32 parity: text no label file holds and no model trained on.

    python export/tools/unseen_parity_pool.py [--n 3000] [--seed 8] [--max-round N] [--leave-out mentions|documents]
        [--out runs/parity/unseen-3000.jsonl]

Draws ``--n`` mentions at random from round 6's unseen pool (``runs/round6/unseen.jsonl``, written by
``export/annotation/rounds/12_extract_round6_candidates.py at git 9ac7ad9; now python -m export.annotation candidates --recipe export/annotation/recipes/round6.json``), leaving out every mention that a
``export/labels/text-*.jsonl`` or ``export/labels/heldout-text-r7.jsonl`` record points at (same source, document and
offset): those were labelled, and the text-label rounds were trained on. The distillation pool is a
separate split of the candidates, so the teacher's soft labels never touched these either.

``--leave-out documents`` leaves out every mention of a document that a label file holds, not only the
labelled mentions (the training rounds' and the hold-out's documents; ``annotation/27_draw_judge18.py`` also
leaves out the judges'). Use it for a new pool: judge 14 (drawn with the default, which redraws the existing
pools unchanged) shares 47 of its 600 items' documents with rounds 8 and 9, another keyword of a sentence
or comment they labelled (export/EXPERIMENTS.md, session 17).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.labels import label_round  # noqa: E402


def key(rec: dict) -> tuple[str, str, int]:
    return rec["source"], str(rec["doc_id"]), int(rec["kw_start"])


def doc_key(rec: dict) -> tuple[str, str]:
    return rec["source"], str(rec["doc_id"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unseen", type=Path, default=ROOT / "runs/round6/unseen.jsonl")
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--out", type=Path, default=ROOT / "runs/parity/unseen-3000.jsonl")
    ap.add_argument(
        "--max-round",
        type=int,
        metavar="N",
        help="leave out only the labels of rounds up to N: redraws the pool as it was drawn after round N "
        "(--max-round 9: unseen-3000-s9.jsonl; --max-round 8: unseen-3000.jsonl)",
    )
    ap.add_argument(
        "--leave-out",
        choices=("mentions", "documents"),
        default="mentions",
        help="what a label record excludes: its mention (default; the existing pools) or its whole document "
        "(for a new judge)",
    )
    args = ap.parse_args()
    key_of = key if args.leave_out == "mentions" else doc_key
    label_files = [
        *sorted((ROOT / "labels").glob("text-*.jsonl")),
        ROOT / "export/labels/heldout-text-r7.jsonl",
    ]
    if args.max_round is not None:
        label_files = [p for p in label_files if (label_round(p) or 0) <= args.max_round]
    labelled: set[tuple] = set()
    for path in label_files:
        with path.open(encoding="utf-8") as f:
            labelled |= {key_of(json.loads(line)) for line in f if line.strip()}
    with args.unseen.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    free = [r for r in rows if key_of(r) not in labelled]
    if len(free) < args.n:
        raise SystemExit(f"--n {args.n}: only {len(free)} unlabelled mentions in {args.unseen}")
    random.Random(args.seed).shuffle(free)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in free[: args.n]), encoding="utf-8")
    tmp.replace(args.out)
    print(
        f"{args.n} of {len(free)} unlabelled mentions ({len(rows) - len(free)} left out by --leave-out "
        f"{args.leave_out}) -> {args.out}"
    )


if __name__ == "__main__":
    main()
