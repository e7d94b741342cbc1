"""Judge 18 (session 18): 600 random forum / Wikipedia / web mentions from documents no label file touches.

    python scripts/annotation/27_draw_judge18.py [--n 600] [--seed 18] [--out runs/judge18]
    # 4 annotator agents label runs/judge18/view/batch-0N.jsonl into runs/judge18/answers/batch-0N.jsonl
    python scripts/annotation/15_merge_round6.py --dir runs/judge18 --out labels/heldout-random-r18.jsonl --round 18

Judge 14 was drawn from a pool that left out labelled *mentions*, so 47 of its items share a document
(a RedditBias comment row) with rounds 8 and 9 (export/EXPERIMENTS.md, session 17). This judge leaves
out every document that any ``labels/`` file points at (training rounds, the hold-out, judges 14 and
15, the checks) and takes at most one mention per document, drawn at random from round 6's unseen
pool (``runs/round6/unseen.jsonl``; its documents are disjoint from the distillation pool's). No model
scores anything before the labels are in. Written as ``14_select_round6.py`` writes a round
(``batches/``, ``selection.jsonl``, uids ``j18-00001`` ...), plus ``view/`` (uid, keyword, gloss, text,
text_marked: what the agents read).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from batches import write_selection_batches  # noqa: E402

from scripts.unseen_parity_pool import doc_key  # noqa: E402

VIEW_FIELDS = ("uid", "keyword", "gloss", "text", "text_marked")


UID_PREFIX = "j18-"


def labelled_documents(labels_dir: Path) -> set[tuple[str, str]]:
    """(source, doc_id) of every record in ``labels_dir`` (recursively) that points into a text source,
    except this judge's own labels (``UID_PREFIX``), so the draw can be repeated once they are in."""
    docs: set[tuple[str, str]] = set()
    for path in sorted(labels_dir.rglob("*.jsonl")):
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    rec = json.loads(line)
                    if (
                        "source" in rec
                        and "doc_id" in rec
                        and not str(rec.get("uid", "")).startswith(UID_PREFIX)
                    ):
                        docs.add(doc_key(rec))
    return docs


def draw(cands: list[dict], excluded: set[tuple[str, str]], n: int, seed: int) -> list[dict]:
    """A seeded random order of the mentions outside ``excluded``, at most one per document, first ``n``."""
    free = [c for c in cands if doc_key(c) not in excluded]
    random.Random(seed).shuffle(free)
    seen: set[tuple[str, str]] = set()
    judge = []
    for c in free:
        doc = doc_key(c)
        if doc in seen:
            continue
        seen.add(doc)
        judge.append(c)
        if len(judge) == n:
            return judge
    raise SystemExit(f"--n {n}: only {len(judge)} unlabelled documents in the pool")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unseen", type=Path, default=ROOT / "runs/round6/unseen.jsonl")
    ap.add_argument("--labels", type=Path, default=ROOT / "labels")
    ap.add_argument("--out", type=Path, default=ROOT / "runs/judge18")
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--batches", type=int, default=4)
    args = ap.parse_args()
    cands = [json.loads(line) for line in args.unseen.open(encoding="utf-8") if line.strip()]
    excluded = labelled_documents(args.labels)
    judge = draw(cands, excluded, args.n, args.seed)
    write_selection_batches(
        args.out,
        judge,
        UID_PREFIX,
        args.batches,
        lambda c: {"reason": "random", "pool": c["pool"]},
        mark=True,
    )
    (args.out / "view").mkdir(exist_ok=True)
    for batch in sorted((args.out / "batches").glob("batch-*.jsonl")):
        rows = [json.loads(line) for line in batch.open(encoding="utf-8")]
        tmp = args.out / "view" / (batch.name + ".tmp")
        tmp.write_text(
            "".join(json.dumps({k: r[k] for k in VIEW_FIELDS}) + "\n" for r in rows), encoding="utf-8"
        )
        tmp.replace(args.out / "view" / batch.name)
    print(
        f"judge 18: {len(judge)} mentions from {len(judge)} documents ({len(excluded)} labelled documents left out) "
        f"-> {args.out}: {dict(collections.Counter(c['pool'] for c in judge))}, "
        f"{dict(collections.Counter(c['keyword'] for c in judge).most_common(8))}"
    )


if __name__ == "__main__":
    main()
