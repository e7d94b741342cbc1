"""Write the embedded sample corpus's stand-off labels as labelled pairs (the dev-set schema).

    python export/tools/sample_labels_as_pairs.py --out runs/sample-corpus-labels-as-pairs.jsonl
    fairstream eval-models --labels runs/sample-corpus-labels-as-pairs.jsonl --model MODEL --json > eval-sample.json

Each label (document id, keyword offsets) becomes its sentence as the product's candidate extractor
cuts it, with the keyword's offsets in that sentence, so ``eval-models`` judges exactly the mention the
filter would judge (``tests/test_shipped_model.py`` scores the same pairs). The model card's
"sample corpus" table comes from here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fairstream.candidates import CandidateExtractor  # noqa: E402
from fairstream.cli import sample_corpus_path  # noqa: E402


def sample_pairs() -> list[dict]:
    corpus = sample_corpus_path()
    docs = {json.loads(line)["id"]: json.loads(line)["text"] for line in corpus.open(encoding="utf-8")}
    labels = corpus.with_name("sample_corpus_labels.jsonl")
    gold = {(r["doc_id"], r["start"]): r for r in map(json.loads, labels.open(encoding="utf-8"))}
    ext = CandidateExtractor()
    out = []
    for doc_id, text in docs.items():
        for cand in ext.scan(text).candidates:
            for m in cand.mentions:
                label = gold.get((doc_id, m.start))
                if label is None:
                    continue
                attr = ext.taxonomy[m.keyword]
                out.append(
                    {
                        "uid": f"{doc_id}:{m.start}",
                        "text": text[cand.start : cand.end],
                        "kw_start": m.start - cand.start,
                        "kw_end": m.end - cand.start,
                        "keyword": m.keyword,
                        "class": attr.attribute_class,
                        "gloss": attr.gloss,
                        "wsd": label["wsd"],
                        "regard": label["regard"] if label["wsd"] == "yes" else None,
                        "source": "sample-corpus",
                    }
                )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    pairs = sample_pairs()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    tmp.replace(args.out)
    print(f"{len(pairs)} labelled pairs -> {args.out}")


if __name__ == "__main__":
    main()
