"""The GPU path's host work: turning mentions into model inputs, before and after vectorizing it.

    python benchmarks/bench_gpu_feeder.py [--limit 0] [--rounds 3]

On an H200 the PyTorch model stage ran at 9-16k pairs/s with the GPU under 12% busy (RESULTS.md,
session 24): the host sets the pace. This times that host work alone on this machine, rounds
alternating, on the corpus's unique (sentence, keyword) pairs: the tokenizer itself (the floor), the
per-token rows of ``encode_rows`` + ``pad_rows`` (the torch backend's encoding until session 24) and
the vectorized ``encode_batch``, and the same in tokenizer worker processes (the torch backend's
default beside a GPU), and checks that the first two build identical arrays. The cascade used to
tokenize its routed share (~18%) a second time; it now reuses the fast model's inputs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from _common import DEFAULT_CORPUS, corpus_pairs, machine, machine_line, write_results

from fairstream.models.encoding import (
    attribute_text,
    encode_batch,
    encode_rows,
    marked_text,
    pad_id_of,
    pad_rows,
)
from fairstream.models.runtime import JointModel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--limit", type=int, default=0, help="first N documents (0: all)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=0, help="tokenizer processes (0: the cores)")
    args = ap.parse_args()
    from tokenizers import Tokenizer

    _, pairs = corpus_pairs(args.corpus, args.limit)
    model = JointModel("joint-v6")
    tok = Tokenizer.from_file(str(model.tokenizer_file))
    tok.no_truncation()
    tok.no_padding()
    ml = model.max_length

    def tokenizer_only() -> object:
        return tok.encode_batch([(marked_text(p)[0], attribute_text(p)) for p in pairs])

    def per_token_rows() -> dict[str, np.ndarray]:
        return pad_rows(encode_rows(tok, pairs, ml), pad_id_of(tok))

    def vectorized() -> dict[str, np.ndarray]:
        return encode_batch(tok, pairs, ml)

    from fairstream.models.torch_backend import TorchJointModel

    workers = args.workers or max(1, len(os.sched_getaffinity(0)))
    # the torch backend's feeder as it runs beside a GPU: chunks of 1,024 from worker processes (the
    # model itself is never called here, so device="cpu" times the same host work)
    pooled = TorchJointModel("joint-v6", device="cpu", tokenize_workers=workers)
    pooled.start_workers()
    pooled.encode(pairs[:1])  # loads the model outside the timing

    def in_worker_processes() -> list[object]:
        return [feeds for _, feeds in pooled.encoded_chunks(pairs)]

    ways = {
        "tokenizer only": tokenizer_only,
        "per-token rows": per_token_rows,
        "vectorized": vectorized,
        f"vectorized, {workers} worker processes": in_worker_processes,
    }
    same = all(
        np.array_equal(a, b) for a, b in zip(per_token_rows().values(), vectorized().values(), strict=True)
    )
    times: dict[str, list[float]] = {k: [] for k in ways}
    for _ in range(args.rounds):
        for name, fn in ways.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    pooled.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    pool_key = list(ways)[-1]
    m = machine()
    result = {
        "machine": m,
        "pairs": len(pairs),
        "rounds": args.rounds,
        "seconds": times,
        "median_s": med,
        "pairs_per_s": {k: round(len(pairs) / v) for k, v in med.items()},
        "identical_arrays": same,
        "speedup_vectorized": round(med["per-token rows"] / med["vectorized"], 2),
        "python_share_before": round(1 - med["tokenizer only"] / med["per-token rows"], 3),
        "python_share_after": round(1 - med["tokenizer only"] / med["vectorized"], 3),
        "workers": workers,
        "speedup_worker_processes": round(med["vectorized"] / med[pool_key], 2),
    }
    lines = [
        "# GPU feeder: host-side encoding of model inputs",
        "",
        f"Machine: {machine_line(m)}. {len(pairs):,} unique corpus pairs, median of {args.rounds} alternating rounds.",
        "",
        "| encoding | seconds | pairs/s | host Python share |",
        "|---|---:|---:|---:|",
        f"| tokenizer only (`Tokenizer.encode_batch`, the floor) | {med['tokenizer only']:.3f} | {len(pairs) / med['tokenizer only']:,.0f} | - |",
        f"| per-token rows (`encode_rows` + `pad_rows`, until session 24) | {med['per-token rows']:.3f} | {len(pairs) / med['per-token rows']:,.0f} | {result['python_share_before']:.0%} |",
        f"| vectorized `encode_batch` | {med['vectorized']:.3f} | {len(pairs) / med['vectorized']:,.0f} | {result['python_share_after']:.0%} |",
        f"| {pool_key} (chunks of 1,024, single-threaded tokenizers: the default beside a GPU) | {med[pool_key]:.3f} | {len(pairs) / med[pool_key]:,.0f} | - |",
        "",
        f"Vectorized / per-token: **{result['speedup_vectorized']}x**; identical arrays: {same}. "
        f"Worker processes / vectorized in process: **{result['speedup_worker_processes']}x**.",
    ]  # fmt: skip
    print(write_results("gpu-feeder", result, "\n".join(lines)).read_text())


if __name__ == "__main__":
    main()
