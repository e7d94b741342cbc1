"""Round 12 (issue 16, item 3): every still-unlabelled mention of round 6's unseen pool, scored by a model.

    python scripts/unseen_parity_pool.py --max-round 8 --out runs/parity/unseen-3000.jsonl
    python scripts/unseen_parity_pool.py --max-round 9 --out runs/parity/unseen-3000-s9.jsonl
    python scripts/annotation/23_score_round12.py [--out runs/round12] [--model joint-v5]
    python scripts/annotation/14_select_round6.py --dir runs/round12 --round 12 --seed 12 \
        --n-negative 800 --n-uncertain 600 --n-random 200

Rounds 9-11 each scored the previous round's rest, a chain of ``runs/`` folders; this script rebuilds
the same rest from what the repository holds, so it needs no earlier round's folder. Candidates are
round 6's ``unseen.jsonl`` (``12_extract_round6_candidates.py`` + ``16_split_round6_pool.py``) without:
every mention a ``labels/text-*.jsonl`` or ``labels/heldout-text-r7.jsonl`` record points at (same
source, document, sentence and keyword offsets); every document holding a hold-out item (round 8's
rule: the hold-out's documents stay text no model trains on); every document holding an unseen-text
parity item (``runs/parity/unseen-*.jsonl``, round 10's rule; the two draws above are the ones that
existed then, redrawn exactly). The model alone scores, as in rounds 10 and 11.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from batches import score_and_write

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fairstream.io import read_jsonl  # noqa: E402


def mention_key(rec: dict) -> tuple[str, str, int, int]:
    return rec["source"], str(rec["doc_id"]), int(rec["sent_start"]), int(rec["kw_start"])


def doc_key(rec: dict) -> tuple[str, str]:
    return rec["source"], str(rec["doc_id"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unseen", type=Path, default=ROOT / "runs/round6/unseen.jsonl")
    ap.add_argument("--out", type=Path, default=ROOT / "runs/round12")
    ap.add_argument("--model", default="joint-v5", help="a shipped name or a model folder")
    args = ap.parse_args()
    parity_files = sorted((ROOT / "runs/parity").glob("unseen-*.jsonl"))
    if not parity_files:
        ap.error("no runs/parity/unseen-*.jsonl: draw the parity pools first (see the docstring)")
    heldout = list(read_jsonl(ROOT / "labels/heldout-text-r7.jsonl"))
    labelled = {mention_key(r) for p in sorted((ROOT / "labels").glob("text-*.jsonl")) for r in read_jsonl(p)}
    labelled |= {mention_key(r) for r in heldout}
    held_docs = {doc_key(r) for r in heldout} | {doc_key(r) for p in parity_files for r in read_jsonl(p)}
    rows = list(read_jsonl(args.unseen))
    cands = [c for c in rows if mention_key(c) not in labelled and doc_key(c) not in held_docs]
    model_name = score_and_write(args.model, cands, args.out)
    n_labelled = sum(mention_key(c) in labelled for c in rows)
    print(
        f"{args.out}: {len(cands)} candidates scored by {model_name} (of {len(rows)}: {n_labelled} labelled, "
        f"{len(rows) - len(cands) - n_labelled} more in hold-out or parity documents; "
        f"parity pools: {', '.join(p.name for p in parity_files)})"
    )


if __name__ == "__main__":
    main()
