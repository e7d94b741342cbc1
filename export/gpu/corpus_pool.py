"""Every keyword mention fairstream's detector finds in a corpus, as a distillation pool.

    python export/gpu/corpus_pool.py --out runs/gpu/corpus-pool.jsonl \
        [--corpus ../shared/data/corpus] [--exclude-pairs runs/gpu/pairs.jsonl] \
        [--exclude-dev ../shared/data/labels/dev.jsonl]

The candidates come from the product's own front (``CandidateExtractor``: keyword scan, sentence
split, length filter), so the pool is what the filter hands the model. A mention is left out when
its sentence is a dev item (evaluation text must not reach training, even unlabelled) or already a
labelled training pair (it has gold labels). Identical (sentence, keyword span) pairs are kept once.
The output has the pool schema of ``export.distill.load_pool`` and holds corpus text: keep it
under ``runs/`` (never in the repository).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from fairstream.candidates import CandidateExtractor
from fairstream.models.labels import load_labelled_pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--exclude-pairs", type=Path, action="append", default=[])
    ap.add_argument("--exclude-dev", type=Path, default=Path("../shared/data/labels/dev.jsonl"))
    args = ap.parse_args()
    extractor = CandidateExtractor()
    taxonomy = extractor.taxonomy
    skip_text = {json.loads(line)["text"] for line in args.exclude_dev.open(encoding="utf-8") if line.strip()}
    n_dev_text = len(skip_text)
    for path in args.exclude_pairs:
        skip_text |= {p.mention.text for p in load_labelled_pairs(path)}
    shards = sorted(args.corpus.glob("*.jsonl.gz"))
    if not shards:
        raise SystemExit(f"--corpus {args.corpus}: no *.jsonl.gz shards")
    seen: set[tuple[str, int, int]] = set()
    counts = {"docs": 0, "mentions": 0, "excluded": 0, "duplicates": 0, "kept": 0}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for shard in shards:
            with gzip.open(shard, "rt", encoding="utf-8") as f:
                for line_no, line in enumerate(f):
                    doc = json.loads(line)
                    text = doc.get("text")
                    if not isinstance(text, str):
                        continue
                    counts["docs"] += 1
                    doc_id = str(doc.get("id", line_no))
                    for cand in extractor.scan(text).candidates:
                        sentence = text[cand.start : cand.end]
                        for m in cand.mentions:
                            counts["mentions"] += 1
                            if sentence in skip_text:
                                counts["excluded"] += 1
                                continue
                            key = (sentence, m.start - cand.start, m.end - cand.start)
                            if key in seen:
                                counts["duplicates"] += 1
                                continue
                            seen.add(key)
                            counts["kept"] += 1
                            rec = {
                                "uid": f"{shard.name}:{doc_id}:{m.start}",
                                "text": sentence,
                                "kw_start": key[1],
                                "kw_end": key[2],
                                "keyword": m.keyword,
                                "gloss": taxonomy[m.keyword].gloss,
                                "class": m.attribute_class,
                            }
                            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    tmp.replace(args.out)
    print(json.dumps({**counts, "dev_texts_excluded": n_dev_text, "out": str(args.out)}))


if __name__ == "__main__":
    main()
