"""Keyword hits per MB of text of a taxonomy (and a baseline taxonomy) on JSON-lines corpora.

    python export/tools/taxonomy_hits.py [--taxonomy taxonomy-v2] [--baseline taxonomy-v1]
        [--corpus ../shared/data/corpus/*.jsonl.gz] [--json export/sweeps/session30-taxonomy-v2-hits.json]

Counts with fairstream's own matcher, so the numbers are what the filter sees: ``hits`` are the
mentions :class:`fairstream.detect.KeywordDetector` reports (whole-word, case-insensitive, longest
form at a position), ``in_candidates`` those of them that :class:`fairstream.candidates.CandidateExtractor`
keeps (the sentence passes the length filter: the mentions the WSD model is asked about). A MB is
10**6 bytes of UTF-8 document text. The JSON holds, per keyword of ``--taxonomy``: class, whether it
is new over the baseline, provenance (axis, bucket, source, dispreferred), hits, hits per MB, hits in
candidate sentences (and, for a baseline keyword, its hits under the baseline); per class the same totals
(``baseline_hits``: those of the class's baseline keywords under the baseline); and for both taxonomies the mentions per MB.
Corpus files are JSON lines (``.jsonl`` or ``.jsonl.gz``) with a ``text`` field.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fairstream.candidates import CandidateExtractor  # noqa: E402
from fairstream.taxonomy import Taxonomy  # noqa: E402

DEFAULT_CORPUS = sorted((ROOT.parent / "shared" / "data" / "corpus").glob("*.jsonl.gz"))
DEFAULT_OUT = ROOT / "export" / "sweeps" / "session30-taxonomy-v2-hits.json"


def read_texts(path: Path) -> Iterator[str]:
    """The ``text`` of every JSON line of ``path`` (gzip when it ends in ``.gz``)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                text = json.loads(line).get("text")
                if isinstance(text, str):
                    yield text


def count(taxonomy: Taxonomy, corpus: Sequence[Path]) -> dict[str, Any]:
    """Hits of every keyword of ``taxonomy`` on ``corpus``: totals, per keyword and per file."""
    extractor = CandidateExtractor(taxonomy)
    hits: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    files = []
    n_bytes = n_docs = docs_with = 0
    for path in corpus:
        f_bytes = f_docs = 0
        for text in read_texts(path):
            f_docs += 1
            f_bytes += len(text.encode("utf-8"))
            mentions = extractor.detector.find(text)
            if not mentions:
                continue
            docs_with += 1
            hits.update(m.keyword for m in mentions)
            for cand in extractor.scan(text).candidates:
                kept.update(m.keyword for m in cand.mentions)
        files.append({"file": path.name, "docs": f_docs, "mb": round(f_bytes / 1e6, 3)})
        n_bytes += f_bytes
        n_docs += f_docs
    mb = n_bytes / 1e6
    return {
        "mb": mb,
        "docs": n_docs,
        "docs_with_mention": docs_with,
        "files": files,
        "hits": hits,
        "in_candidates": kept,
    }


def per_mb(n: int, mb: float) -> float:
    return round(n / mb, 3) if mb else 0.0


def report(taxonomy: Taxonomy, baseline: Taxonomy | None, corpus: Sequence[Path]) -> dict[str, Any]:
    """The JSON report: per keyword, per class and the totals of both taxonomies."""
    res = count(taxonomy, corpus)
    base = count(baseline, corpus) if baseline is not None else None
    mb = res["mb"]
    keywords: dict[str, dict[str, Any]] = {}
    classes: dict[str, dict[str, Any]] = {}
    for attr in taxonomy:
        h, k = res["hits"][attr.keyword], res["in_candidates"][attr.keyword]
        new = baseline is not None and attr.keyword not in baseline
        keywords[attr.keyword] = {
            "class": attr.attribute_class,
            "new": new,
            "axis": attr.axis,
            "bucket": attr.bucket,
            "source": attr.source,
            "dispreferred": attr.dispreferred,
            "hits": h,
            "hits_per_mb": per_mb(h, mb),
            "in_candidates": k,
        }
        if base is not None and not new:
            # a longer new form can take a baseline keyword's hits ("African American" over "African")
            keywords[attr.keyword]["baseline_hits"] = base["hits"][attr.keyword]
        c = classes.setdefault(
            attr.attribute_class,
            {"keywords": 0, "new_keywords": 0, "hits": 0, "in_candidates": 0, "baseline_hits": 0},
        )
        c["keywords"] += 1
        c["new_keywords"] += int(new)
        c["hits"] += h
        c["in_candidates"] += k
        c["baseline_hits"] += keywords[attr.keyword].get("baseline_hits", 0)
    for c in classes.values():
        c["hits_per_mb"] = per_mb(c["hits"], mb)
        c["baseline_hits_per_mb"] = per_mb(c["baseline_hits"], mb)
    totals = {taxonomy.name: _totals(taxonomy, res)}
    if baseline is not None and base is not None:
        totals[baseline.name] = _totals(baseline, base)
    return {
        "taxonomy": taxonomy.name,
        "baseline": baseline.name if baseline is not None else None,
        "matcher": "fairstream.detect.KeywordDetector (hits); fairstream.candidates.CandidateExtractor (in_candidates)",
        "corpus": res["files"],
        "mb": round(mb, 3),
        "docs": res["docs"],
        "totals": totals,
        "classes": dict(sorted(classes.items())),
        "keywords": dict(sorted(keywords.items(), key=lambda kv: (-kv[1]["hits"], kv[0]))),
    }


def _totals(taxonomy: Taxonomy, res: dict[str, Any]) -> dict[str, Any]:
    mentions = sum(res["hits"].values())
    kept = sum(res["in_candidates"].values())
    return {
        "keywords": len(taxonomy),
        "classes": len(taxonomy.classes),
        "mentions": mentions,
        "mentions_per_mb": per_mb(mentions, res["mb"]),
        "in_candidates": kept,
        "in_candidates_per_mb": per_mb(kept, res["mb"]),
        "docs_with_mention": res["docs_with_mention"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--taxonomy", default="taxonomy-v2", help="taxonomy name or JSON file")
    ap.add_argument(
        "--baseline", default="taxonomy-v1", help="taxonomy to compare with ('none' for no comparison)"
    )
    ap.add_argument("--corpus", nargs="+", type=Path, default=DEFAULT_CORPUS, help="JSON-lines files")
    ap.add_argument("--json", type=Path, default=DEFAULT_OUT, help="report to write")
    args = ap.parse_args(argv)
    if not args.corpus:
        ap.error("no corpus files (pass --corpus)")
    taxonomy = Taxonomy.load(args.taxonomy)
    baseline = None if args.baseline == "none" else Taxonomy.load(args.baseline)
    out = report(taxonomy, baseline, args.corpus)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    for name, t in out["totals"].items():
        print(
            f"{name}: {t['keywords']} keywords, {t['mentions']} mentions, {t['mentions_per_mb']} per MB "
            f"({t['in_candidates_per_mb']} per MB in candidate sentences) on {out['mb']} MB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
