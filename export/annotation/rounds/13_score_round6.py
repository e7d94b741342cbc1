"""Score the round-6 pool with the shipped student model (joint-v2, int8 ONNX) for selection only.

    nice -n 19 python scripts/annotation/13_score_round6.py [--cands runs/round6/candidates.jsonl] \
        [--out runs/round6/scored.jsonl] [--model DIR]

Writes one line per candidate: ``cid``, ``p_wsd`` (no, yes, unsure), ``p_wsd_yes``, ``p_regard``
(negative, neutral, positive), ``regard_entropy`` (nats), ``person`` (the model's threshold) and
``model``. The scores only choose which items annotators read (``14_select_round6.py``); they never
become labels and annotators never see them. Resumable: items already in ``--out`` are skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from batches import candidate_mention, entropy

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fairstream.models.loader import load_model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cands", type=Path, default=ROOT / "runs/round6/candidates.jsonl")
    ap.add_argument("--out", type=Path, default=ROOT / "runs/round6/scored.jsonl")
    ap.add_argument("--model", type=Path, default=None, help="model folder (default: the shipped joint-v2)")
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    model = load_model(args.model, device="cpu", threads=args.threads)
    cands = [json.loads(line) for line in args.cands.open(encoding="utf-8")]
    done = set()
    if args.out.is_file():
        done = {json.loads(line)["cid"] for line in args.out.open(encoding="utf-8") if line.strip()}
    todo = [c for c in cands if c["cid"] not in done]
    t0 = time.time()
    with args.out.open("a", encoding="utf-8") as f:
        for lo in range(0, len(todo), args.chunk):
            chunk = todo[lo : lo + args.chunk]
            items = [candidate_mention(c) for c in chunk]
            for c, p in zip(chunk, model.predict(items), strict=True):
                ent = entropy(p.regard_probs)
                rec = dict(
                    cid=c["cid"],
                    p_wsd=[round(x, 5) for x in p.wsd_probs],
                    p_wsd_yes=round(p.wsd_score, 5),
                    p_regard=[round(x, 5) for x in p.regard_probs],
                    regard_entropy=round(ent, 5),
                    person=p.person,
                    model=model.name,
                )
                f.write(json.dumps(rec) + "\n")
            f.flush()
            n = lo + len(chunk)
            print(f"{n}/{len(todo)} scored, {n / (time.time() - t0):.1f}/s", flush=True)


if __name__ == "__main__":
    main()
