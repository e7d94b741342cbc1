"""``fairstream taxonomy``: print (and so validate) a taxonomy; ``taxonomy check``: check a file before a run."""

from __future__ import annotations

import argparse
import json
import logging

from fairstream.cli.common import AddCommand, filter_config_options
from fairstream.errors import FairStreamError

logger = logging.getLogger(__name__)


def cmd_taxonomy(args: argparse.Namespace) -> int:
    """Print (and so validate) a taxonomy."""
    from fairstream.taxonomy import Taxonomy

    tax = Taxonomy.load(args.taxonomy)
    if args.json:
        print(json.dumps(tax.to_dict(), indent=2))
        return 0
    print(f"{tax.name}: {len(tax.classes)} classes, {len(tax)} keywords ({tax.source})")
    for cls, attrs in tax.classes.items():
        print(f"  {cls} ({len(attrs)}): " + ", ".join(a.keyword for a in attrs))
    return 0


def _count(flag: str, value: int, least: int) -> None:
    if value < least:
        raise FairStreamError(f"{flag} {value}: must be a whole number >= {least}")


def cmd_taxonomy_check(args: argparse.Namespace) -> int:
    """Check a taxonomy file (and, given shards, how its keywords fare on them); 1 if anything is wrong."""
    from fairstream.core.config import FilterConfig
    from fairstream.io import write_json
    from fairstream.taxonomy import Taxonomy, taxonomy_path
    from fairstream.taxonomy_check import (
        check_taxonomy,
        format_usage,
        keyword_usage,
        shown_path,
        usage_flags,
    )

    if args.taxonomy is not None:  # `taxonomy --taxonomy X check FILE`: FILE is what is checked
        raise FairStreamError(
            f"--taxonomy {args.taxonomy}: `fairstream taxonomy check` checks its FILE; pass the taxonomy "
            "as FILE and leave --taxonomy out"
        )
    _count("--max-docs", args.max_docs, 1)
    _count("--max-mentions-per-keyword", args.max_mentions_per_keyword, 1)
    if args.json and not args.shards:
        raise FairStreamError("--json: the per-keyword table needs shards; pass SHARDS... after FILE")
    path, shown = taxonomy_path(args.file), shown_path(args.file)
    problems = check_taxonomy(args.file)
    for p in problems:
        print(p.line())
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    if errors:
        print(f"{shown}: {errors} error(s), {warnings} warning(s): fix the errors before a run")
        return 1
    tax = Taxonomy.from_file(path)
    print(
        f"{shown}: OK: {tax.name}: {len(tax.classes)} classes, {len(tax)} keywords, "
        f"{len(tax.forms)} forms" + (f"; {warnings} warning(s)" if warnings else "")
    )
    flags = []
    if args.shards:
        report = keyword_usage(
            args.shards,
            tax,
            FilterConfig.from_namespace(args),
            max_docs=args.max_docs,
            max_mentions_per_keyword=args.max_mentions_per_keyword,
            progress=not args.no_progress,
        )
        for line in format_usage(report):
            print(line)
        flags = usage_flags(report, shown)
        for p in flags:
            print(p.line())
        unreliable = len({p.keyword for p in flags})
        print(
            f"{shown}: {unreliable} of {len(tax)} keywords look unreliable on {report.documents} documents"
            + (f" ({len(report.skipped)} bad records skipped)" if report.skipped else "")
        )
        if args.json:
            write_json(args.json, report.to_dict(shown))
            print(f"wrote the per-keyword table to {args.json}")
    return 1 if args.strict and (warnings or flags) else 0


def register(add: AddCommand) -> None:
    """Add ``taxonomy`` (and ``taxonomy check``) with ``fairstream.cli.parser``'s ``add(name, func, help)``."""
    from fairstream.taxonomy_check import DEFAULT_MAX_DOCS, DEFAULT_MAX_MENTIONS_PER_KEYWORD

    p = add("taxonomy", cmd_taxonomy, "Print and validate a taxonomy; 'taxonomy check FILE' checks a file.")
    p.add_argument("--json", action="store_true", help="print the taxonomy as JSON")
    subs = p.add_subparsers(dest="taxonomy_command", metavar="SUBCOMMAND")
    help_ = (
        "Check a taxonomy file before a run: every problem on one line (exit 1 on errors); with "
        "shards, each keyword's hits, hits per MB and the model's person / unsure shares."
    )
    c = subs.add_parser("check", help=help_, description=help_)
    c.set_defaults(func=cmd_taxonomy_check, _subparser=c)
    c.add_argument("file", metavar="FILE", help="taxonomy JSON file (or a shipped name: taxonomy-v1)")
    c.add_argument(
        "shards",
        metavar="SHARDS",
        nargs="*",
        help="shard files or folders, as fairstream filter reads them: report how each keyword fares on them",
    )
    c.add_argument("--config", help="JSON/TOML/YAML file of option values (command line wins)")
    c.add_argument("-v", "--verbose", action="store_true", help="log at INFO level to stderr")
    c.add_argument(
        "--debug", action="store_true", help="on an error, show the Python traceback, not one line"
    )
    c.add_argument(
        "--max-docs",
        type=int,
        default=DEFAULT_MAX_DOCS,
        metavar="N",
        help="read the first N documents of the shards (default: %(default)s)",
    )
    c.add_argument(
        "--max-mentions-per-keyword",
        type=int,
        default=DEFAULT_MAX_MENTIONS_PER_KEYWORD,
        metavar="N",
        help="judge at most N mentions of each keyword with the model (default: %(default)s)",
    )
    c.add_argument("--json", metavar="OUT", default=None, help="write the per-keyword table as JSON to OUT")
    c.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 on warnings and unreliable keywords too, not only on errors",
    )
    c.add_argument("--no-progress", action="store_true", help="no progress display")
    filter_config_options(
        c,
        (
            "model",
            "device",
            "batch_size",
            "text_field",
            "min_tokens",
            "max_tokens",
            "splitter",
            "max_doc_chars",
            "on_error",
        ),
    )
