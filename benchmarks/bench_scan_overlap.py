"""The whole filter on CPU with the keyword stage in worker processes, overlapping the model or not.

    python benchmarks/bench_scan_overlap.py [--limit 3000] [--workers 2] [--rounds 3]

Three configurations of ``FairStream`` with the shipped default model, each in its own process,
rounds alternating (order reversed every other round): the keyword stage in the model's process
(``scan_workers=0``, the CPU default); N scan workers that scan each window when it comes, the model
then judging it with the cores to itself (``scan_overlap="off"``, what ``auto`` means on CPU); N scan
workers that scan the next window while the model judges this one (``scan_overlap="on"``, what
``auto`` means beside a GPU). Wall seconds of the loop (process start and model load excluded),
median per configuration; every configuration must write the same documents.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent))

from benchmarks._common import DEFAULT_CORPUS, load_corpus, machine, machine_line, write_results  # noqa: E402

CONFIGS = {"in process": (0, "auto"), "workers, no overlap": (None, "off"), "workers, overlap": (None, "on")}


def one_run(corpus: Path, limit: int, workers: int, overlap: str) -> dict:
    """Run in this process (called through ``--stage``): the loop's wall time and an output digest."""
    import hashlib

    from fairstream.stream.dataset import FairStream

    docs = load_corpus(corpus, limit)
    stream = FairStream(docs, cap=0.01, scan_workers=workers, scan_overlap=overlap)
    t0 = time.perf_counter()
    out = list(stream)
    wall = time.perf_counter() - t0
    stream.step.tagger.close()
    digest = hashlib.sha256(json.dumps([d["text"] for d in out]).encode()).hexdigest()
    return {"wall_s": wall, "docs_out": len(out), "sha256": digest, "seconds": stream.stats()["seconds"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--limit", type=int, default=3000, help="first N documents")
    ap.add_argument("--workers", type=int, default=2, help="scan worker processes of the two worker rows")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stage", nargs=2, metavar=("WORKERS", "OVERLAP"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        print(json.dumps(one_run(args.corpus, args.limit, int(args.stage[0]), args.stage[1])))
        return
    runs: dict[str, list[dict]] = {name: [] for name in CONFIGS}
    for r in range(args.rounds):
        order = list(CONFIGS) if r % 2 == 0 else list(reversed(CONFIGS))
        for name in order:
            workers, overlap = CONFIGS[name]
            n = args.workers if workers is None else workers
            cmd = [sys.executable, str(HERE), "--corpus", str(args.corpus), "--limit", str(args.limit)]
            done = subprocess.run(
                [*cmd, "--stage", str(n), overlap], capture_output=True, text=True, check=True
            )
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"  round {r + 1}/{args.rounds} {name}: {runs[name][-1]['wall_s']:.2f} s", flush=True)
    digests = {run["sha256"] for rs in runs.values() for run in rs}
    base = statistics.median(run["wall_s"] for run in runs["in process"])
    m = machine()
    rows = []
    for name, rs in runs.items():
        wall = statistics.median(run["wall_s"] for run in rs)
        scan = statistics.median(run["seconds"]["scan"] for run in rs)
        each = ", ".join(f"{run['wall_s']:.1f}" for run in rs)
        rows.append(f"| {name} | {wall:.2f} ({each}) | {scan:.2f} | {base / wall:.2f}x |")
    md = "\n".join(
        [
            "# Keyword stage in worker processes on CPU: overlapping the model or not",
            "",
            f"First {args.limit} documents of {args.corpus}, the shipped default model, {args.workers} scan workers in "
            f"the worker rows, {args.rounds} alternating rounds, each run in its own process. Machine: {machine_line(m)}.",
            "",
            "| configuration | wall s, median (each round) | waiting for scans s | vs in process |",
            "|---|---|---|---|",
            *rows,
            "",
            f"Outputs identical across all runs: **{'yes' if len(digests) == 1 else 'NO'}**.",
        ]
    )
    result = {
        "machine": m,
        "limit": args.limit,
        "workers": args.workers,
        "runs": runs,
        "identical": len(digests) == 1,
    }
    print(md)
    print("wrote", write_results("scan-overlap", result, md))


if __name__ == "__main__":
    main()
