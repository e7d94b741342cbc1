"""``fairstream report`` and ``seegull-recall``: the bias report and the SeeGULL check from saved counts."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fairstream.cli.common import (
    AddCommand,
    load_input,
    read_json_object,
    vocabulary_options,
    vocabulary_settings,
)


def cmd_report(args: argparse.Namespace) -> int:
    """Write the bias report from saved co-occurrence counts."""
    from fairstream.stats import CooccurrenceCounts, write_report
    from fairstream.taxonomy import Taxonomy

    counts_file = "a counts file written by fairstream filter (counts_before.json or counts_after.json)"
    before = load_input("--before", args.before, CooccurrenceCounts.load, counts_file)
    after = load_input("--after", args.after, CooccurrenceCounts.load, counts_file) if args.after else None
    stream_stats = (
        load_input("--stream-stats", args.stream_stats, read_json_object, "a stats.json file")
        if args.stream_stats
        else None
    )
    examples = (
        load_input("--examples", args.examples, read_json_object, "an examples.json file")
        if args.examples
        else None
    )
    paths = write_report(
        before,
        after,
        Path(args.out),
        top_k=args.top_k,
        stream_stats=stream_stats,
        examples=examples,
        taxonomy=Taxonomy.load(args.taxonomy),  # the run's: its forms stay out of the vocabularies
        **vocabulary_settings(args),
    )
    for p in paths.all():
        print(f"wrote {p}")
    return 0


def cmd_seegull(args: argparse.Namespace) -> int:
    """Recall@k of SeeGULL stereotypes against the bias scores of saved counts."""
    from fairstream.stats import CooccurrenceCounts, format_seegull_table, seegull_recall_table
    from fairstream.taxonomy import Taxonomy

    counts = load_input(
        "--counts", args.counts, CooccurrenceCounts.load, "a counts file written by fairstream filter"
    )
    rows = seegull_recall_table(
        counts,
        Path(args.seegull_dir),
        ks=tuple(args.k),
        version=args.version,
        multiword=args.multiword,
        taxonomy=Taxonomy.load(args.taxonomy),
        **vocabulary_settings(args),
    )
    print(json.dumps(rows, indent=2) if args.json else format_seegull_table(rows))
    return 0


def register(add: AddCommand) -> None:
    """Add ``report`` and ``seegull-recall`` with ``fairstream.cli.parser``'s ``add(name, func, help)``."""
    p = add("report", cmd_report, "Write the Markdown + HTML bias report from saved co-occurrence counts.")
    p.add_argument("--before", required=True, help="counts.json of the unfiltered stream")
    p.add_argument("--after", default=None, help="counts.json of the filtered stream")
    p.add_argument(
        "--stream-stats",
        default=None,
        help="stats.json of the filter run: the report's headline, cap and model (optional)",
    )
    p.add_argument(
        "--examples", default=None, help="examples.json of the filter run: dropped sentences shown (optional)"
    )
    p.add_argument("-o", "--out", default="fairstream-report", help="report folder (default: %(default)s)")
    p.add_argument(
        "--top-k", type=int, default=10, help="words shown per attribute in tables (default: %(default)s)"
    )
    vocabulary_options(p)

    p = add(
        "seegull-recall", cmd_seegull, "Recall@k of SeeGULL stereotypes by the bias scores (paper Table 8)."
    )
    p.add_argument("--counts", required=True, help="counts.json (e.g. written by fairstream filter)")
    p.add_argument(
        "--seegull-dir",
        default="../shared/data/bias/seegull",
        help="folder of the SeeGULL CSV files (default: %(default)s)",
    )
    p.add_argument(
        "--version", choices=["v1", "v2"], default="v2", help="SeeGULL release (default: %(default)s)"
    )
    p.add_argument(
        "-k",
        type=int,
        nargs="+",
        default=[50, 100, 200, 300, 500],
        help="cut-offs k of recall@k (default: %(default)s)",
    )
    p.add_argument(
        "--multiword",
        choices=["skip", "all", "any"],
        default="skip",
        help="multi-word stereotypes: skip them, or count a hit when all / any of their words are in "
        "the top k (default: %(default)s)",
    )
    vocabulary_options(p)
    p.add_argument("--json", action="store_true", help="print the table as JSON")
