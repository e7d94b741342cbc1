"""Round 9 (issue 16, item 3): the round-8 pool's unlabelled rest, scored by the teacher and joint-v3 together.

    python scripts/annotation/20_score_round9.py [--round8 runs/round8] [--out runs/round9] [--model joint-v3]
    python scripts/annotation/14_select_round6.py --dir runs/round9 --round 9 --seed 9 \
        --n-negative 800 --n-uncertain 600 --n-random 200

Candidates: round 8's ``candidates.jsonl`` (round 6's unseen text without the documents of round-7
hold-out items) minus the 2,000 items round 8 labelled. Round 8 chose by the MPNet teacher alone, and
joint-v3 (trained on round 8) now misses negatives the teacher finds and calls some neutral
stereotype reports negative (`export/EXPERIMENTS.md`, session 9), so the scores written here are the
mean of the two models' probabilities: ``14_select_round6.py``'s "model-negative" then takes what the
pair calls negative, and its "uncertain" (high entropy of the mean) takes where they disagree. Both
models' own probabilities are kept in ``scored.jsonl`` (``p_regard_teacher``, ``p_regard_student``),
so the selection bias stays visible.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from batches import score_candidates, score_record, write_scored

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fairstream.models.runtime import JointModel  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--round8", type=Path, default=ROOT / "runs/round8")
    ap.add_argument("--out", type=Path, default=ROOT / "runs/round9")
    ap.add_argument("--model", default="joint-v3", help="the student (a shipped name or a model folder)")
    args = ap.parse_args()
    labelled = {json.loads(line)["cid"] for line in (args.round8 / "selection.jsonl").open(encoding="utf-8")}
    cands = [
        c for c in map(json.loads, (args.round8 / "candidates.jsonl").open(encoding="utf-8"))
        if c["cid"] not in labelled
    ]  # fmt: skip
    teacher = {s["cid"]: s for s in map(json.loads, (args.round8 / "scored.jsonl").open(encoding="utf-8"))}
    model = JointModel(args.model)
    p_wsd_yes, p_reg = score_candidates(model, cands)
    records = []
    for c, s_yes, s_reg in zip(cands, p_wsd_yes, p_reg, strict=True):
        t = teacher[c["cid"]]
        p_yes = (t["p_wsd_yes"] + s_yes) / 2
        p_regard = [(a + b) / 2 for a, b in zip(t["p_regard"], s_reg, strict=True)]
        extra = {
            "p_wsd_yes_teacher": t["p_wsd_yes"],
            "p_regard_teacher": t["p_regard"],
            "p_wsd_yes_student": round(s_yes, 5),
            "p_regard_student": [round(x, 5) for x in s_reg],
        }
        records.append(
            score_record(c["cid"], p_yes, p_regard, f"mean of {t['model']} and {model.name}", **extra)
        )
    write_scored(args.out, cands, records)
    print(f"{args.out}: {len(cands)} candidates scored by {t['model']} + {model.name}")


if __name__ == "__main__":
    main()
