"""Train the Punkt parameters that fairstream ships as a fallback sentence splitter.

Used when NLTK's punkt_tab data is not installed on a user's machine. Trained with NLTK's
unsupervised PunktTrainer on the web text in ../shared/data/corpus; only the learned parameters
(abbreviations, collocations, sentence starters, orthographic context of frequent words) are
written, never text.

    python export/tools/train_punkt_fallback.py --corpus ../shared/data/corpus --out fairstream/data/punkt-fallback-en.json
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
from pathlib import Path

from nltk.tokenize.punkt import PunktTrainer

# Unsupervised training on a small corpus misses frequent titles ("Dr.", "Mr."): add common English
# abbreviations (lowercase, without the final period, as Punkt stores them).
COMMON_ABBREVIATIONS = (
    "mr mrs ms dr prof st jr sr vs etc inc ltd co corp no nos fig figs gen col lt sgt capt gov sen rep rev hon "
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun mt ft approx dept univ est vol "
    "ed eds pp op cf al ca u.s u.k e.g i.e a.m p.m ph.d b.a m.a m.d d.c"
).split()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="../shared/data/corpus")
    ap.add_argument("--out", default="fairstream/data/punkt-fallback-en.json")
    ap.add_argument(
        "--min-ortho-count", type=int, default=5, help="keep orthographic context of words seen this often"
    )
    args = ap.parse_args()
    trainer = PunktTrainer()
    trainer.INCLUDE_ALL_COLLOCS = False
    counts: collections.Counter[str] = collections.Counter()
    for path in sorted(Path(args.corpus).glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                text = json.loads(line)["text"]
                trainer.train(text, finalize=False)
                counts.update(w.lower() for w in text.split())
    trainer.finalize_training()
    params = trainer.get_params()
    ortho = {w: c for w, c in params.ortho_context.items() if counts[w] >= args.min_ortho_count}
    out = {
        "about": "Punkt parameters trained by export/tools/train_punkt_fallback.py with NLTK's PunktTrainer",
        "abbrev_types": sorted(set(params.abbrev_types) | set(COMMON_ABBREVIATIONS)),
        "collocations": sorted(list(c) for c in params.collocations),
        "sent_starters": sorted(params.sent_starters),
        "ortho_context": dict(sorted(ortho.items())),
    }
    tmp = f"{args.out}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, separators=(",", ":"))
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {len(out['abbrev_types'])} abbreviations, {len(ortho)} ortho words")


if __name__ == "__main__":
    main()
