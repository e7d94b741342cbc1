"""Agreement of an independent second annotator with the round-6 labels on a blind sample.

    python scripts/annotation/18_agreement_round6.py [--dir runs/round6] [--labels labels/text-v1.jsonl]

The sample (``view/second-pass.jsonl``: 30 random items of each of the 8 batches) was labelled again
by another annotator agent who saw neither the first answers nor the model scores
(``answers-second-pass.jsonl``). Reports WSD Cohen's kappa (unsure counted as no, as everywhere) and,
on items both call a person, regard agreement, Cohen's kappa and macro-F1 of the second pass
against the first. Writes the second pass's labels stand-off to ``labels/checks/text-v1-second-pass.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sklearn.metrics import cohen_kappa_score, f1_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batches import STANDOFF_FIELDS

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=ROOT / "runs/round6")
    ap.add_argument("--labels", type=Path, default=ROOT / "labels/text-v1.jsonl")
    ap.add_argument("--out", type=Path, default=ROOT / "labels/checks/text-v1-second-pass.jsonl")
    args = ap.parse_args()
    first = {r["uid"]: r for r in map(json.loads, args.labels.open())}
    second = [json.loads(line) for line in (args.dir / "answers-second-pass.jsonl").open() if line.strip()]
    yes1 = [first[s["uid"]]["wsd"] == "yes" for s in second]
    yes2 = [s["wsd"] == "yes" for s in second]
    both = [i for i, s in enumerate(second) if yes1[i] and yes2[i]]
    r1 = [first[second[i]["uid"]]["regard"] for i in both]
    r2 = [second[i]["regard"] for i in both]
    labels = ["negative", "neutral", "positive"]
    neg1 = [r == "negative" for r in r1]
    neg2 = [r == "negative" for r in r2]
    report = {
        "n": len(second),
        "wsd_agreement": sum(a == b for a, b in zip(yes1, yes2, strict=True)) / len(second),
        "wsd_kappa": cohen_kappa_score(yes1, yes2),
        "regard_compared": len(both),
        "regard_agreement": sum(a == b for a, b in zip(r1, r2, strict=True)) / len(both),
        "regard_kappa": cohen_kappa_score(r1, r2, labels=labels),
        "regard_macro_f1": f1_score(r1, r2, labels=labels, average="macro"),
        "negative_f1": f1_score(neg1, neg2),
    }
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in report.items()}, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as f:
        for s in second:
            rec = {k: first[s["uid"]][k] for k in STANDOFF_FIELDS}
            rec.update(
                wsd=s["wsd"], regard=s["regard"] if s["wsd"] == "yes" else None, annotator="r6-second-pass"
            )
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
