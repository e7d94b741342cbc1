"""Write the round-7 hold-out (``export/labels/heldout-text-r7.jsonl``, stand-off) as a pool file for ``export.sweep``.

    NLTK_DATA=../shared/data/nltk_data python export/gpu/heldout_pool.py OUT.pool.jsonl [--labels FILE]

``--labels`` writes another stand-off text label file the same way (e.g. round 10, for
``export.distill --no-training-set --pool``).

Pass it as the *last* ``--pool`` of a sweep whose configs set ``save_logits``: every fit then saves
its logits on the 1,383 hold-out items (the last rows of its logits file, in the label file's order),
which ``export/gpu/compare_students.py --heldout-row`` scores. A pool is never trained on unless a
config's ``distill_pool`` reaches it, and the distillation pool (3,500) comes first.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.labels import load_text_standoff  # noqa: E402
from fairstream.models.labels import LabelledPair  # noqa: E402

HELDOUT = ROOT / "export/labels/heldout-text-r7.jsonl"


def load_heldout(path: Path = HELDOUT) -> list[LabelledPair]:
    """The labelled pairs of a stand-off text label file (default: the round-7 hold-out's 1,383), texts
    resolved from ``runs/packages`` and the corpus."""
    return load_text_standoff(
        path, packages_dir=ROOT / "runs/packages", corpus_dir=ROOT.parent / "shared/data/corpus"
    )


def load_with_reasons(path: Path = HELDOUT) -> tuple[list[LabelledPair], list[str | None]]:
    """``load_heldout(path)`` and each item's ``selected_as`` (why it was chosen: "random" and others)."""
    with path.open(encoding="utf-8") as f:
        reasons = [json.loads(line).get("selected_as") for line in f if line.strip()]
    return load_heldout(path), reasons


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument(
        "--labels",
        type=Path,
        default=HELDOUT,
        help="another stand-off text label file (e.g. export/labels/text-r10.jsonl)",
    )
    args = ap.parse_args()
    pairs = load_heldout(args.labels)
    tmp = args.out.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for p in pairs:
            m = p.mention
            rec = {"uid": p.uid, "text": m.text, "kw_start": m.start, "kw_end": m.end, "keyword": m.keyword,
                   "gloss": m.gloss, "class": p.attribute_class}  # fmt: skip
            f.write(json.dumps(rec) + "\n")
    tmp.replace(args.out)
    print(f"{args.out}: {len(pairs)} mentions of {args.labels.name}")


if __name__ == "__main__":
    main()
