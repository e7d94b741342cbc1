"""Cost of the co-occurrence sidecar per annotated sentence (fairstream.stats.CooccurrenceCounts).

The sentences are the ones the stream would annotate: CandidateExtractor (keyword prefilter,
Punkt sentences, NLTK length filter) on the shared corpus. No model runs here: FOR TIMING ONLY,
every mention is treated as person-sense with neutral regard, so every candidate sentence is
counted (the most work the sidecar can get from these documents).

Reported per annotated sentence:
  * counting: ``CooccurrenceCounts.consume(text, annotation)`` (NLTK word tokens, filter, counts)
  * of which tokenizing: NLTK word tokenization alone (the annotation carries no tokens)
  * counting with the tokens already in the annotation (``"tokens"`` per sentence)
  * BeforeAfterHook: counts before and after filtering, one tokenization per sentence
  * front: the stream's model-free front (CandidateExtractor.scan), for scale
  * with --stream-ms-per-sentence: the sidecar's overhead relative to the whole stream

    python benchmarks/bench_stats.py --quick      # writes benchmarks/results/stats.{json,md}
    python benchmarks/bench_stats.py --max-docs 6000 --prune-every 1000 --stream-ms-per-sentence 2.0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault(
    "NLTK_DATA", str(Path(__file__).resolve().parent.parent.parent / "shared/data/nltk_data")
)

from benchmarks._common import DEFAULT_CORPUS, load_corpus, machine, machine_line, write_results

TIMING_NOTE = (
    "timing only: mentions found by CandidateExtractor, each treated as person-sense with neutral "
    "regard (no model run), so every candidate sentence is counted"
)


def load_docs(corpus: Path, max_docs: int) -> list[str]:
    docs = [d["text"] for d in load_corpus(corpus, max_docs) if isinstance(d.get("text"), str)]
    if not docs:
        sys.exit(
            f"no documents in {corpus}/*.jsonl.gz; pass --corpus (the shared corpus is ../shared/data/corpus)"
        )
    return docs


def annotate(docs: list[str]) -> tuple[list[tuple[str, dict[str, Any]]], float, int]:
    """Annotations shaped like the stream's (person/neutral for timing), and the front's time."""
    from fairstream.candidates import CandidateExtractor

    extractor = CandidateExtractor()
    extractor.scan(
        "A Muslim family walked to the market together on a bright and sunny morning in May."
    )  # warm
    out = []
    t0 = time.perf_counter()
    scans = [extractor.scan(text) for text in docs]
    front_s = time.perf_counter() - t0
    n_sentences = 0
    for i, (text, scan) in enumerate(zip(docs, scans, strict=True)):
        sentences = []
        for cand in scan.candidates:
            mentions = [
                {**m.to_dict(), "wsd_score": 1.0, "person": True, "regard": "neutral"} for m in cand.mentions
            ]
            sentences.append(
                {
                    "start": cand.start,
                    "end": cand.end,
                    "n_tokens": cand.n_tokens,
                    "kept": True,
                    "reason": "not-negative",
                    "mentions": mentions,
                }
            )
        n_sentences += len(sentences)
        ann = {
            "doc_index": i,
            "id": str(i),
            "taxonomy": "taxonomy-v1",
            "model": "timing-only",
            "sentences": sentences,
        }
        out.append((text, ann))
    return out, front_s, n_sentences


def run(args: argparse.Namespace) -> dict[str, Any]:
    from fairstream.stats import BeforeAfterHook, CooccurrenceCounts
    from fairstream.text import WordTokenizer

    docs = load_docs(Path(args.corpus), args.max_docs)
    annotated, front_s, n_sent = annotate(docs)
    if n_sent == 0:
        sys.exit("no candidate sentences in the documents read; raise --max-docs")
    sentence_texts = [text[s["start"] : s["end"]] for text, ann in annotated for s in ann["sentences"]]

    # the same annotations with the NLTK tokens attached (what the stream could pass along)
    tok = WordTokenizer()
    with_tokens = [
        (
            text,
            {
                **ann,
                "sentences": [
                    {**s, "tokens": tok.tokenize(text[s["start"] : s["end"]])} for s in ann["sentences"]
                ],
            },
        )
        for text, ann in annotated
    ]

    count_times, tok_times, given_times, pair_times = [], [], [], []
    counts = None
    for _ in range(args.repeat):
        counts = CooccurrenceCounts(prune_every=args.prune_every)
        t0 = time.perf_counter()
        for text, ann in annotated:
            counts.consume(text, ann, which="all")
        count_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for s in sentence_texts:
            tok.tokenize(s)
        tok_times.append(time.perf_counter() - t0)
        given = CooccurrenceCounts(prune_every=args.prune_every)
        t0 = time.perf_counter()
        for text, ann in with_tokens:
            given.consume(text, ann, which="all")
        given_times.append(time.perf_counter() - t0)
        hook = BeforeAfterHook(
            CooccurrenceCounts(prune_every=args.prune_every), CooccurrenceCounts(prune_every=args.prune_every)
        )
        t0 = time.perf_counter()
        for text, ann in annotated:
            hook(text, ann)
        pair_times.append(time.perf_counter() - t0)
    assert counts is not None
    merge_t0 = time.perf_counter()
    merged = counts + counts
    merge_s = time.perf_counter() - merge_t0
    payload = json.dumps(counts.to_dict())

    count_s, tok_s = statistics.median(count_times), statistics.median(tok_times)
    result: dict[str, Any] = {
        "note": TIMING_NOTE,
        "documents": len(docs),
        "annotated_sentences": n_sent,
        "mentions": counts.totals["mentions"],
        "repeat": args.repeat,
        "counting_us_per_sentence": 1e6 * count_s / n_sent,
        "tokenizing_us_per_sentence": 1e6 * tok_s / n_sent,
        "counting_tokens_given_us_per_sentence": 1e6 * statistics.median(given_times) / n_sent,
        "before_after_hook_us_per_sentence": 1e6 * statistics.median(pair_times) / n_sent,
        "front_us_per_sentence": 1e6 * front_s / n_sent,
        "counting_vs_front": count_s / front_s if front_s else None,
        "merge_ms": 1e3 * merge_s,
        "merged_sentences": merged.totals["sentences_counted"],
        "json_bytes": len(payload),
        "memory": counts.memory_report(),
        "machine": machine(),
    }
    if args.stream_ms_per_sentence:
        result["stream_ms_per_sentence"] = args.stream_ms_per_sentence
        result["overhead_vs_stream_percent"] = (
            100 * result["counting_us_per_sentence"] / (1e3 * args.stream_ms_per_sentence)
        )
    return result


def markdown(r: dict[str, Any]) -> str:
    rows = [
        (
            "documents / annotated sentences / mentions",
            f"{r['documents']} / {r['annotated_sentences']} / {r['mentions']}",
        ),
        ("counting (consume), us per sentence", f"{r['counting_us_per_sentence']:.1f}"),
        ("  of which NLTK word tokenizing, us per sentence", f"{r['tokenizing_us_per_sentence']:.1f}"),
        (
            "counting with tokens in the annotation, us per sentence",
            f"{r['counting_tokens_given_us_per_sentence']:.1f}",
        ),
        (
            "BeforeAfterHook (before + after counts), us per sentence",
            f"{r['before_after_hook_us_per_sentence']:.1f}",
        ),
        ("stream front (CandidateExtractor.scan), us per sentence", f"{r['front_us_per_sentence']:.1f}"),
        ("counting / front", f"{r['counting_vs_front']:.2f}x" if r["counting_vs_front"] else "n/a"),
        ("merge (a + a)", f"{r['merge_ms']:.1f} ms"),
        ("word entries / error bound", f"{r['memory']['entries']} / {r['memory']['error_bound']}"),
        ("counts JSON", f"{r['json_bytes'] / 1e6:.2f} MB"),
    ]
    if "overhead_vs_stream_percent" in r:
        rows.append(
            (
                f"overhead vs stream at {r['stream_ms_per_sentence']} ms/sentence",
                f"{r['overhead_vs_stream_percent']:.2f}%",
            )
        )
    lines = [
        "# bench_stats: co-occurrence sidecar cost",
        "",
        f"Machine: {machine_line(r['machine'])}; median of {r['repeat']} runs (single process).",
        f"Note: {r['note']}.",
        "",
        "| measure | value |",
        "|---|---:|",
        *[f"| {a} | {b} |" for a, b in rows],
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="folder of *.jsonl.gz documents")
    parser.add_argument("--max-docs", type=int, default=2000, help="documents to read (default 2000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions; the median is reported")
    parser.add_argument(
        "--prune-every", type=int, default=100_000, help="CooccurrenceCounts(prune_every=...); 0 = exact"
    )
    parser.add_argument(
        "--stream-ms-per-sentence",
        type=float,
        default=None,
        help="the stream's measured time per annotated sentence, to report the sidecar's relative overhead",
    )
    parser.add_argument(
        "--out", default=None, help="folder for bench_stats.json/.md instead of benchmarks/results/stats.*"
    )
    parser.add_argument("--quick", action="store_true", help="300 documents, 1 repetition")
    args = parser.parse_args(argv)
    if args.quick:
        args.max_docs, args.repeat = min(args.max_docs, 300), 1
    if args.prune_every == 0:
        args.prune_every = None
    result = run(args)
    text = markdown(result)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench_stats.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        (out / "bench_stats.md").write_text(text + "\n", encoding="utf-8")
        print(f"wrote {out / 'bench_stats.md'}")
    else:
        print(f"wrote {write_results('stats', result, text)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
