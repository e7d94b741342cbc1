"""``fairstream bench``: measure throughput on this machine (the work is in ``fairstream.bench``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from fairstream.cli.common import AddCommand
from fairstream.models.names import shipped_models_text


# -- command line -----------------------------------------------------------------------------------
def _batch_sizes(value: str) -> list[int]:
    try:
        sizes = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(b < 1 for b in sizes):
        raise argparse.ArgumentTypeError(
            f"{value!r}: must be comma-separated whole numbers >= 1, e.g. 1,8,32"
        )
    return sizes


def _device(value: str) -> str:
    from fairstream.models.loader import DEVICES, parse_device

    try:
        return parse_device(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: must be one of {', '.join(DEVICES)}") from None


def _whole(least: int) -> Callable[[str], int]:
    def check(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            n = least - 1
        if n < least:
            raise argparse.ArgumentTypeError(f"{value!r}: must be a whole number >= {least}")
        return n

    return check


def _backend_keys(value: str) -> list[str]:
    from fairstream.bench import BACKENDS

    keys = [k.strip() for k in value.split(",") if k.strip()]
    bad = [k for k in keys if k not in BACKENDS]
    if not keys or bad:
        raise argparse.ArgumentTypeError(f"{value!r}: must be comma-separated of {', '.join(BACKENDS)}")
    return keys


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmark; print the table (or JSON) and write the output folder."""
    from fairstream.bench import BenchResult, format_table, run_bench, write_outputs

    seen_rows = [0]

    def on_update(partial: BenchResult) -> None:
        # an interrupted run (a time limit, Ctrl-C) still leaves what it measured
        if args.output:
            write_outputs(partial, Path(args.output), plot=False)
        if args.no_progress:
            for row in partial.rows[seen_rows[0] :]:
                rate = "skipped: " + str(row.skipped) if row.skipped else f"{row.pairs_per_s} pairs/s"
                print(f"fairstream bench: {row.backend} batch {row.batch_size}: {rate}", file=sys.stderr)
            if not seen_rows[0] and not partial.rows:
                e = partial.end_to_end
                print(f"fairstream bench: end to end {e['mb_per_s']} MB/s on {e['device']}", file=sys.stderr)
            seen_rows[0] = len(partial.rows)

    result = run_bench(
        args.inputs,
        device=args.device,
        limit=args.limit,
        quick=args.quick,
        batch_sizes=args.batch_sizes,
        rounds=args.rounds,
        threads=args.threads,
        max_pairs=args.max_pairs,
        text_field=args.text_field,
        progress=not args.no_progress,
        scan_workers=args.scan_workers,
        only=args.backends,
        on_update=on_update,
        model=args.model,
        lookahead=args.lookahead,
        taxonomy=args.taxonomy,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(format_table(result))
    if args.output:
        for path in write_outputs(result, Path(args.output)):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def register(add: AddCommand) -> None:
    """Add ``bench`` with ``fairstream.cli.parser``'s ``add(name, func, help)``."""
    from fairstream.bench import BACKENDS

    p = add(
        "bench",
        cmd_bench,
        "Measure throughput on this machine: end to end, keyword stage, model stage per backend "
        "(ONNX int8/fp32, PyTorch fp32, GPU fp16/bf16) with a batch-size sweep.",
    )
    p.add_argument("inputs", nargs="*", help="shard files or folders; none = the shipped sample corpus")
    p.add_argument(
        "--device",
        type=_device,
        default="auto",
        help="cpu, cuda, cuda:N or auto (default: %(default)s): the end-to-end run's device, and whether "
        "the GPU rows run",
    )
    p.add_argument(
        "--limit", type=_whole(1), default=None, help="first N documents (default: all; --quick: 40)"
    )
    p.add_argument(
        "--max-pairs", type=_whole(1), default=None, help="time the model on at most N pairs (default: all)"
    )
    p.add_argument(
        "--batch-sizes",
        type=_batch_sizes,
        default=None,
        help="batch sizes of the sweep, comma-separated (default: 1,8,32,128 on CPU; 64,256,1024,auto on CUDA)",
    )
    p.add_argument(
        "--rounds", type=_whole(1), default=1, help="timed repeats per point, median kept (default: 1)"
    )
    p.add_argument(
        "--threads", type=_whole(1), default=None, help="intra-op threads on CPU (default: the library's)"
    )
    p.add_argument(
        "--lookahead",
        type=_whole(1),
        default=None,
        help="documents per look-ahead window of the end-to-end run (default: the filter's, 1024); "
        "a GPU gets bigger model calls from bigger windows",
    )
    p.add_argument(
        "--scan-workers",
        type=_whole(0),
        default=None,
        help="keyword-stage processes of the end-to-end run (default: the filter's: cores - 1 beside a GPU, "
        "0 on CPU)",
    )
    p.add_argument(
        "--quick", action="store_true", help="a slice: 40 documents, 48 pairs, batch sizes 1 and 8"
    )
    p.add_argument(
        "--backends",
        type=_backend_keys,
        default=None,
        help=f"model-stage rows to time, comma-separated (default: all): {', '.join(BACKENDS)}",
    )
    p.add_argument(
        "--model",
        default=None,
        help=f"model folder or shipped model name every row runs: {shipped_models_text()}",
    )
    p.add_argument("--text-field", default="text", help="field that holds the text (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    p.add_argument("-o", "--output", default=None, help="folder for bench.json, bench.md and batch_sweep.png")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
