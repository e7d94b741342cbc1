"""``fairstream filter``: filter document shards; write outputs, stats and a report."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from fairstream.cli.common import AddCommand, filter_config_options, vocabulary_options, vocabulary_settings
from fairstream.core.config import FilterConfig
from fairstream.errors import FairStreamError
from fairstream.io import sample_corpus_path


def cmd_filter(args: argparse.Namespace) -> int:
    """Filter shards and write outputs, stats and a report."""
    from fairstream.filter_job import FilterJob
    from fairstream.jobs.config import JobConfig
    from fairstream.summary import format_summary

    job_config = JobConfig.from_namespace(args)
    if job_config.cap_scope == "global":
        return _filter_global(args, job_config)
    job = FilterJob(
        inputs=args.inputs,
        output_dir=Path(args.output),
        config=FilterConfig.from_namespace(args),
        annotate=args.annotate,
        report=not args.no_report,
        report_settings=vocabulary_settings(args),
        progress=not args.no_progress,
        overwrite=job_config.overwrite,
        force_restart=job_config.force_restart,
    )
    t0 = time.perf_counter()
    summary = job.run()
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    print(format_summary(summary))
    for problem in summary.get("problems", []):
        print(f"fairstream: lost: {problem}", file=sys.stderr)
    return 0


def _filter_global(args: argparse.Namespace, job_config: Any) -> int:
    """``filter --cap-scope global``: the two-pass job of ``fairstream.jobs``."""
    from fairstream.jobs import GlobalCapJob, format_job_summary

    if args.annotate:
        raise FairStreamError(
            "--annotate: with --cap-scope global the annotations are the attribute files under "
            "OUTPUT/attributes (one JSON line per document); leave --annotate out"
        )
    job = GlobalCapJob(
        args.inputs,
        Path(args.output),
        FilterConfig.from_namespace(args),
        engine=job_config.engine,
        workers=job_config.workers,
        checkpoint_every=job_config.checkpoint_every,
        annotate_only=job_config.annotate_only,
        from_annotations=job_config.from_annotations,
        ray_address=job_config.ray_address,
        progress=not args.no_progress,
        report=not args.no_report,
        report_settings=vocabulary_settings(args),
        overwrite=job_config.overwrite,
        force_restart=job_config.force_restart,
    )
    summary = job.run()
    print(format_job_summary(summary))
    for problem in summary.get("problems", []):
        print(f"fairstream: lost: {problem}", file=sys.stderr)
    return 0


def register(add: AddCommand) -> None:
    """Add ``filter`` with ``fairstream.cli.parser``'s ``add(name, func, help)``."""
    p = add(
        "filter",
        cmd_filter,
        "Filter document shards; write outputs, stats and a report.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        help="shard files or folders (.jsonl, .jsonl.gz, .json.gz, .parquet; folders are searched "
        f"recursively); try the shipped sample: {sample_corpus_path()}",
    )
    p.add_argument(
        "-o",
        "--output",
        default="fairstream-out",
        help="output folder; each shard is written to data/ under its path relative to the inputs' "
        "common folder, in its own format (default: %(default)s)",
    )
    # every setting of the filter, with its help and default, from the one config object
    filter_config_options(p)
    # the offline job's own settings (scope of the cap, engine, workers), from its config object
    from fairstream.jobs.config import JobConfig

    JobConfig.add_arguments(p)
    p.add_argument("--annotate", action="store_true", help="add per-document annotations to the output")
    p.add_argument("--no-report", action="store_true", help="skip the Markdown/HTML report")
    vocabulary_options(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
