"""Keyword stage in worker processes (``scan_workers``): how fast can the CPU feed a fast model?

    python benchmarks/bench_scan_workers.py [--workers 1,2] [--rounds 3] [--limit N]

On CPU the model is ~85% of the time, so scan workers buy nothing there (they default to 0). Beside a
GPU the keyword stage is the limit: this measures it alone, as the Tagger runs it, on the corpus:
in this process, then in N worker processes (chunks of 64 documents, results in order), wall time
of the whole corpus including the transfer of texts and scans, rounds interleaved, median reported.
Every configuration must return the same scans as in-process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import DEFAULT_CORPUS, load_corpus, machine, machine_line, write_results

from fairstream.candidates import CandidateExtractor
from fairstream.stream.tagger import _init_scan_worker, _scan_in_worker
from fairstream.text import LengthFilter

CHUNK = 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    texts = [d["text"] for d in load_corpus(args.corpus, args.limit)]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    extractor = CandidateExtractor()
    counts = [int(n) for n in args.workers.split(",")]
    pools = {
        n: ProcessPoolExecutor(
            n, mp_context=get_context("fork"), initializer=_init_scan_worker,
            initargs=(extractor.taxonomy, "auto", LengthFilter()),
        )
        for n in counts
    }  # fmt: skip
    chunks = [texts[lo : lo + CHUNK] for lo in range(0, len(texts), CHUNK)]
    for pool in pools.values():  # start the processes outside the timing
        list(pool.map(_scan_in_worker, chunks[:8]))
    reference = [extractor.scan(t) for t in texts]
    wall: dict[str, list[float]] = {"in process": []} | {f"{n} worker(s)": [] for n in counts}
    same: dict[str, bool] = {}
    for r in range(args.rounds):
        t0 = time.perf_counter()
        [extractor.scan(t) for t in texts]
        wall["in process"].append(time.perf_counter() - t0)
        for n, pool in pools.items():
            t0 = time.perf_counter()
            scans = [s for part in pool.map(_scan_in_worker, chunks) for s in part]
            wall[f"{n} worker(s)"].append(time.perf_counter() - t0)
            same[f"{n} worker(s)"] = scans == reference
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in wall.items()), flush=True)
    for pool in pools.values():
        pool.shutdown()
    base = statistics.median(wall["in process"])
    rows = []
    for name, times in wall.items():
        w = statistics.median(times)
        check = "-" if name == "in process" else ("yes" if same[name] else "**NO**")
        rows.append(f"| {name} | {w:.2f} | {mb / w:.1f} | {base / w:.2f}x | {check} |")
    m = machine()
    result = {"docs": len(texts), "mb": round(mb, 2), "wall_s": wall, "same_scans": same, "machine": m}
    md = "\n".join([
        "# Keyword stage in worker processes",
        "",
        f"{len(texts)} documents ({mb:.1f} MB) of {args.corpus}; chunks of {CHUNK} documents; "
        f"{args.rounds} interleaved rounds (median wall). Machine: {machine_line(m)}.",
        "",
        "| keyword stage | wall s | MB/s | vs in process | same scans |",
        "|---|---|---|---|---|",
        *rows,
    ])  # fmt: skip
    print(md)
    print(f"\nwrote {write_results('scan-workers', result, md)}")


if __name__ == "__main__":
    main()
