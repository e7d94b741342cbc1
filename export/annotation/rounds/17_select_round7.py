"""Round 7: choose items where the MPNet teacher and the MiniLM student disagree, or the teacher is unsure.

    python scripts/annotation/17_select_round7.py --teacher-soft runs/distill/soft.jsonl \
        [--round6 runs/round6] [--out runs/round7] [--seed 7]

Candidates are the round-6 ``unseen.jsonl`` mentions that the teacher scored (``export.distill --pool``
writes their logits into the soft-label file under their uid); the student's scores are round 6's
``scored.jsonl``. Reasons, filled in this order (an item gets the first that takes it):

1. ``disagree-regard``: one model calls the mention a person with negative regard and the other does
   not (the filter's decision); largest gap in P(person) x P(negative) first;
2. ``disagree-wsd``: the two models' person decisions differ; largest gap in P(person) first;
3. ``teacher-uncertain``: the teacher's P(person) in 0.3-0.7 or high regard entropy;
4. ``random``: a seeded sample of the rest, for calibration.

The same caps as round 6 (2 per document and keyword, 3 per document, a share per keyword).
Writes ``batches/``, ``view/`` (what annotators read: uid, keyword, gloss, text), ``selection.jsonl``
and ``unseen.jsonl``: round 6's unseen set without the documents selected here (text no model
trains on, for parity).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BATCH_FIELDS = [
    "uid", "text", "keyword", "class", "gloss",
    "source", "doc_id", "sent_start", "sent_end", "kw_start", "kw_end",
]  # fmt: skip


def softmax(x: list[float]) -> np.ndarray:
    e = np.exp(np.asarray(x, dtype=np.float64) - max(x))
    return e / e.sum()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--teacher-soft", type=Path, required=True)
    ap.add_argument("--round6", type=Path, default=ROOT / "runs/round6")
    ap.add_argument("--out", type=Path, default=ROOT / "runs/round7")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--quotas", default="700:400:300:200", help="disagree-regard:disagree-wsd:uncertain:random"
    )
    ap.add_argument("--kw-cap", type=float, default=0.15)
    ap.add_argument("--batches", type=int, default=6)
    args = ap.parse_args()
    unseen = {c["uid"]: c for c in map(json.loads, (args.round6 / "unseen.jsonl").open(encoding="utf-8"))}
    student = {s["cid"]: s for s in map(json.loads, (args.round6 / "scored.jsonl").open(encoding="utf-8"))}
    teacher = {}
    for line in args.teacher_soft.open(encoding="utf-8"):
        rec = json.loads(line)
        if rec["uid"] in unseen:
            teacher[rec["uid"]] = (softmax(rec["wsd_logits"]), softmax(rec["regard_logits"]))
    cands = sorted(teacher)
    print(f"{len(cands)} of {len(unseen)} unseen mentions scored by the teacher")

    def s_yes(u: str) -> float:
        return student[unseen[u]["cid"]]["p_wsd_yes"]

    def s_neg(u: str) -> float:
        return s_yes(u) * student[unseen[u]["cid"]]["p_regard"][0]

    def t_yes(u: str) -> float:
        return float(teacher[u][0][1])

    def t_neg(u: str) -> float:
        return t_yes(u) * float(teacher[u][1][0])

    def s_neg_decision(u: str) -> bool:
        p = student[unseen[u]["cid"]]["p_regard"]
        return s_yes(u) >= 0.5 and p[0] == max(p)

    def t_neg_decision(u: str) -> bool:
        return t_yes(u) >= 0.5 and int(np.argmax(teacher[u][1])) == 0

    per_doc_kw: collections.Counter = collections.Counter()
    per_doc: collections.Counter = collections.Counter()
    chosen: dict[str, str] = {}

    def take(order: list[str], reason: str, quota: int) -> int:
        per_kw: collections.Counter = collections.Counter()
        cap = max(1, int(args.kw_cap * quota))
        n = 0
        for u in order:
            if n >= quota:
                break
            c = unseen[u]
            dk, d = (c["source"], c["doc_id"], c["keyword"]), (c["source"], c["doc_id"])
            if u in chosen or per_doc_kw[dk] >= 2 or per_doc[d] >= 3 or per_kw[c["keyword"]] >= cap:
                continue
            chosen[u] = reason
            per_doc_kw[dk] += 1
            per_doc[d] += 1
            per_kw[c["keyword"]] += 1
            n += 1
        return quota - n

    q_reg, q_wsd, q_unc, q_rand = map(int, args.quotas.split(":"))
    rng = random.Random(args.seed)
    shuffled = cands[:]
    rng.shuffle(shuffled)
    dis_reg = [u for u in shuffled if s_neg_decision(u) != t_neg_decision(u)]
    dis_reg.sort(key=lambda u: -round(abs(s_neg(u) - t_neg(u)), 2))
    left = take(dis_reg, "disagree-regard", q_reg)
    dis_wsd = [u for u in shuffled if (s_yes(u) >= 0.5) != (t_yes(u) >= 0.5)]
    dis_wsd.sort(key=lambda u: -round(abs(s_yes(u) - t_yes(u)), 2))
    left = take(dis_wsd, "disagree-wsd", q_wsd + left)

    def t_uncertainty(u: str) -> float:
        wsd_u = 1 - abs(2 * t_yes(u) - 1)
        p = teacher[u][1]
        reg_u = float(-(p * np.log(p + 1e-12)).sum() / math.log(3)) if t_yes(u) >= 0.3 else 0.0
        return max(wsd_u, reg_u)

    unc = sorted(shuffled, key=lambda u: -round(t_uncertainty(u), 2))
    left = take(unc, "teacher-uncertain", q_unc + left)
    rest = [u for u in shuffled if u not in chosen]
    take(rest, "random", q_rand + left)

    sel = sorted(chosen)
    random.Random(args.seed + 1).shuffle(sel)
    size = math.ceil(len(sel) / args.batches)
    for sub in ("batches", "view"):
        (args.out / sub).mkdir(parents=True, exist_ok=True)
    with (args.out / "selection.jsonl").open("w", encoding="utf-8") as fsel:
        for b in range(args.batches):
            part = sel[b * size : (b + 1) * size]
            name = f"batch-{b + 1:02d}.jsonl"
            with (args.out / "batches" / name).open("w") as fb, (args.out / "view" / name).open("w") as fv:
                for k, u in enumerate(part, start=b * size + 1):
                    c = unseen[u]
                    uid = f"r7-{k:05d}"
                    rec = {f: (uid if f == "uid" else c[f]) for f in BATCH_FIELDS}
                    fb.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    view = {f: rec[f] for f in ("uid", "keyword", "gloss", "text")}
                    fv.write(json.dumps(view, ensure_ascii=False) + "\n")
                    fsel.write(
                        json.dumps(
                            dict(
                                uid=uid,
                                cid=c["cid"],
                                batch=b + 1,
                                reason=chosen[u],
                                pool=c["pool"],
                                student_p_yes=round(s_yes(u), 5),
                                student_p_regard=student[c["cid"]]["p_regard"],
                                teacher_p_yes=round(t_yes(u), 5),
                                teacher_p_regard=[round(float(x), 5) for x in teacher[u][1]],
                            )
                        )
                        + "\n"
                    )
    selected_docs = {(unseen[u]["source"], unseen[u]["doc_id"]) for u in sel}
    kept = [c for c in unseen.values() if (c["source"], c["doc_id"]) not in selected_docs]
    with (args.out / "unseen.jsonl").open("w", encoding="utf-8") as f:
        for c in kept:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print(f"{len(sel)} selected into {args.batches} batches: {dict(collections.Counter(chosen.values()))}")
    print(f"unseen after round 7: {len(kept)} mentions -> {args.out / 'unseen.jsonl'}")
    by = collections.Counter((chosen[u], unseen[u]["pool"]) for u in sel)
    for k, v in sorted(by.items()):
        print("\t".join(k), v, sep="\t")


if __name__ == "__main__":
    main()
