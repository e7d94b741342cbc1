"""Stage a relabel of the items whose sentence holds the keyword more than once (session 16).

    python scripts/annotation/25_stage_marked_relabel.py [--out runs/relabel-s16]

Rounds 13 and 16 and judge 15 showed annotators the sentence and the keyword but not which
occurrence the model reads (the one at ``kw_start``, in all but one of these items the first), and
the agents sometimes labelled the person sense of a later occurrence. This writes every such item
again, with the read occurrence marked ``[[like this]]`` (``batches.mark_occurrence``), for a blind
relabel: ``batches/batch-XX.jsonl`` (uid, keyword, gloss, marked text; no earlier label), dealt
round-robin so each batch mixes the three files, and ``batches/second-pass.jsonl`` (every judge-15
item and a seeded sample of the rounds' items) for a second agent. ``meta.jsonl`` maps each uid to its
label file. ``26_merge_marked_relabel.py`` writes the answers back.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from batches import mark_occurrence  # noqa: E402

# label file -> the round folder whose batches hold its texts
SOURCES = {
    "labels/heldout-random-r15.jsonl": "runs/judge15",
    "labels/text-r13.jsonl": "runs/round13",
    "labels/text-r16.jsonl": "runs/round16",
}


def occurrences(text: str, keyword: str) -> int:
    return len(re.findall(r"(?<!\w)" + re.escape(keyword) + r"(?!\w)", text, flags=re.IGNORECASE))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT.parents[1] / "runs/relabel-s16")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--second-pass-rounds", type=int, default=65, help="round-13/16 items in the second pass")
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args()
    repo = ROOT.parents[1]
    items, meta = [], []
    for label_file, folder in SOURCES.items():
        for path in sorted((repo / folder / "batches").glob("batch-*.jsonl")):
            for line in path.open(encoding="utf-8"):
                r = json.loads(line)
                if occurrences(r["text"], r["keyword"]) < 2:
                    continue
                start, end = r["kw_start"] - r["sent_start"], r["kw_end"] - r["sent_start"]
                text = mark_occurrence(r["text"], start, end)
                items.append({"uid": r["uid"], "keyword": r["keyword"], "gloss": r["gloss"], "text": text})
                meta.append({"uid": r["uid"], "label_file": label_file})
    (args.out / "batches").mkdir(parents=True, exist_ok=True)
    for b in range(args.batches):
        with (args.out / "batches" / f"batch-{b + 1:02d}.jsonl").open("w", encoding="utf-8") as f:
            for it in items[b :: args.batches]:
                f.write(json.dumps(it, ensure_ascii=False) + "\n")
    judge = [it for it, m in zip(items, meta, strict=True) if "heldout" in m["label_file"]]
    rounds = [it for it, m in zip(items, meta, strict=True) if "heldout" not in m["label_file"]]
    sample = judge + random.Random(args.seed).sample(rounds, min(args.second_pass_rounds, len(rounds)))
    random.Random(args.seed + 1).shuffle(sample)
    with (args.out / "batches" / "second-pass.jsonl").open("w", encoding="utf-8") as f:
        for it in sample:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    with (args.out / "meta.jsonl").open("w", encoding="utf-8") as f:
        for m in meta:
            f.write(json.dumps(m) + "\n")
    per_file = {lf: sum(m["label_file"] == lf for m in meta) for lf in SOURCES}
    print(f"{len(items)} items {per_file}; second pass {len(sample)} ({len(judge)} judge-15)")


if __name__ == "__main__":
    main()
