"""Write the marked-occurrence relabel (session 16) back into the label files it came from.

    python scripts/annotation/26_merge_marked_relabel.py [--dir runs/relabel-s16] [--dry-run]

Reads ``25_stage_marked_relabel.py``'s ``meta.jsonl``, the agents' ``answers/batch-XX.jsonl`` (one
{"uid", "wsd", "regard"} per item, GUIDE.md) and the blind second pass ``answers-second-pass.jsonl``.
Every relabelled record takes the new label (the agent saw which occurrence the model reads) and keeps
the old one under ``"marked_relabel": {"annotator", "before": {"wsd", "regard"}}``, so the change is
visible and reversible; the record order and all other fields stay. Prints what changed per file, and
the second pass's agreement with the relabel (WSD kappa, unsure counted as no; regard kappa on items
both call a person), and writes the second pass stand-off to ``labels/checks/relabel-s16-second-pass.jsonl``.
Running it again is a no-op: the "before" of a record already relabelled is kept.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from sklearn.metrics import cohen_kappa_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batches import STANDOFF_FIELDS, read_batch_answers

from fairstream.io import write_jsonl

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=REPO / "runs/relabel-s16")
    ap.add_argument("--checks-out", type=Path, default=REPO / "labels/checks/relabel-s16-second-pass.jsonl")
    ap.add_argument("--dry-run", action="store_true", help="report, write nothing")
    args = ap.parse_args()
    meta = [json.loads(line) for line in (args.dir / "meta.jsonl").open()]
    new: dict[str, tuple[dict, str]] = {}
    for path in sorted((args.dir / "batches").glob("batch-*.jsonl")):
        uids = [json.loads(line)["uid"] for line in path.open()]
        answers = read_batch_answers(args.dir / "answers" / path.name, uids, strict=True)
        for u in uids:
            new[u] = (answers[u], f"s16-relabel-{path.stem.split('-')[1]}")
    assert set(new) == {m["uid"] for m in meta}, "meta and batches disagree"

    by_file = collections.defaultdict(dict)
    for m in meta:
        by_file[m["label_file"]][m["uid"]] = new[m["uid"]]
    records_by_uid = {}
    for label_file, relabels in by_file.items():
        path = REPO / label_file
        records = [json.loads(line) for line in path.open(encoding="utf-8")]
        changes: collections.Counter[str] = collections.Counter()
        for rec in records:
            if rec["uid"] not in relabels:
                continue
            answer, annotator = relabels[rec["uid"]]
            before = rec.get("marked_relabel", {}).get("before") or {
                "wsd": rec["wsd"],
                "regard": rec["regard"],
            }
            after = {"wsd": answer["wsd"], "regard": answer["regard"]}
            if after != before:
                changes[f"{before['wsd']}/{before['regard']} -> {after['wsd']}/{after['regard']}"] += 1
            rec.update(after)
            rec["marked_relabel"] = {"annotator": annotator, "before": before}
            records_by_uid[rec["uid"]] = rec
        print(f"{label_file}: {len(relabels)} relabelled, {sum(changes.values())} changed")
        for change, n in changes.most_common():
            print(f"    {n:3d}  {change}")
        if not args.dry_run:
            write_jsonl(path, records)

    second_path = args.dir / "answers-second-pass.jsonl"
    second_uids = [json.loads(line)["uid"] for line in (args.dir / "batches" / "second-pass.jsonl").open()]
    second = read_batch_answers(second_path, second_uids, strict=True)
    yes1 = [new[u][0]["wsd"] == "yes" for u in second_uids]
    yes2 = [second[u]["wsd"] == "yes" for u in second_uids]
    both = [u for u, a, b in zip(second_uids, yes1, yes2, strict=True) if a and b]
    r1 = [new[u][0]["regard"] for u in both]
    r2 = [second[u]["regard"] for u in both]
    report = {
        "n": len(second_uids),
        "wsd_agreement": round(sum(a == b for a, b in zip(yes1, yes2, strict=True)) / len(second_uids), 3),
        "wsd_kappa": round(float(cohen_kappa_score(yes1, yes2)), 3),
        "regard_compared": len(both),
        "regard_kappa": round(
            float(cohen_kappa_score(r1, r2, labels=["negative", "neutral", "positive"])), 3
        ),
    }
    print("second pass vs relabel:", json.dumps(report))
    if not args.dry_run:
        write_jsonl(
            args.checks_out,
            (
                {
                    **{k: records_by_uid[u][k] for k in STANDOFF_FIELDS},
                    "wsd": second[u]["wsd"],
                    "regard": second[u]["regard"],
                    "annotator": "s16-relabel-second-pass",
                }
                for u in second_uids
            ),
        )


if __name__ == "__main__":
    main()
