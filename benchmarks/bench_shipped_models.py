"""The shipped models side by side: same architecture, so the same speed? (issue 16: "at the same speed")

    python benchmarks/bench_shipped_models.py [--limit 1500] [--rounds 5] [--model DIR ... --name NAME]

The unique (sentence, keyword) pairs of the first ``--limit`` corpus documents go through every model
in ``fairstream/data/models`` (``JointModel(name)``, one intra-op thread, one pass at a time, batch 8),
rounds interleaved so drift hits every model alike; pairs per CPU second, median of the rounds, and
the ratio to the default. Writes ``benchmarks/results/shipped-models.{json,md}``; ``--model DIR``
adds a candidate model folder to the same rounds (then ``--name`` names the results file).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import add_pair_arguments, corpus_pairs, machine, machine_line, write_results

from fairstream.models.runtime import DEFAULT_MODEL, JointModel, shipped_model_names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_pair_arguments(ap, rounds=5)
    ap.add_argument("--model", action="append", default=[], help="also time this model folder (repeatable)")
    ap.add_argument("--name", default="shipped-models", help="results file name in benchmarks/results")
    ap.add_argument(
        "--only", nargs="+", metavar="NAME", help="time only these shipped models (give --name too)"
    )
    args = ap.parse_args()
    if (args.model or args.only) and args.name == "shipped-models":
        ap.error(
            "--model/--only: give --name too, so a subset does not overwrite the shipped models' results"
        )
    unknown = set(args.only or []) - set(shipped_model_names())
    if unknown:
        ap.error(f"--only: {sorted(unknown)} not shipped; shipped: {', '.join(shipped_model_names())}")
    docs, pairs = corpus_pairs(args.corpus, args.limit)
    names = [*(args.only or shipped_model_names()), *args.model]
    if DEFAULT_MODEL not in names:  # the ratio column's reference
        names.insert(0, DEFAULT_MODEL)
    models = {n: JointModel(n, intra_op_threads=1, batch_threads=1) for n in names}
    for model in models.values():
        model.predict_logits(pairs[:16])  # load the session outside the timing
    rates: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        for n in names if r % 2 == 0 else reversed(names):
            c0 = time.process_time()
            models[n].predict_logits(pairs)
            rates[n].append(len(pairs) / (time.process_time() - c0))
    median = {n: statistics.median(v) for n, v in rates.items()}
    m = machine()
    result = {
        "machine": m,
        "documents": len(docs),
        "pairs": len(pairs),
        "rounds": args.rounds,
        "default": DEFAULT_MODEL,
        "pairs_per_cpu_second": {
            n: {"median": round(median[n], 1), "rounds": [round(x, 1) for x in rates[n]]} for n in names
        },
        "ratio_to_default": {n: round(median[n] / median[DEFAULT_MODEL], 3) for n in names},
        # a cascade's share of pairs that went on to its full model (the same share every round)
        "routed_share": {
            n: round(m.cascade.routed / m.cascade.seen, 4) for n, m in models.items() if m.cascade is not None
        },
    }
    lines = [
        "# Shipped models side by side" + (f" with {len(args.model)} candidate(s)" if args.model else ""),
        "",
        f"{machine_line(m)}; {len(pairs)} unique pairs of the first {len(docs)} corpus documents, one intra-op "
        f"thread, batch 8, {args.rounds} interleaved rounds, median.",
        "",
        "| model | pairs per CPU s (median) | min - max | ratio to the default |",
        "|---|---:|---:|---:|",
    ]
    for n in names:
        lines.append(
            f"| {models[n].name}{' (default)' if n == DEFAULT_MODEL else ''} | {median[n]:.1f} | "
            f"{min(rates[n]):.1f} - {max(rates[n]):.1f} | {result['ratio_to_default'][n]:.3f}x |"
        )
    for n, share in result["routed_share"].items():
        lines += ["", f"{models[n].name} sent {100 * share:.1f}% of the pairs on to its full model."]
    print(write_results(args.name, result, "\n".join(lines)).read_text())


if __name__ == "__main__":
    main()
