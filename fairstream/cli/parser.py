"""``build_parser``: the argument parser of every command, one module of ``fairstream.cli`` per command group."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from fairstream import __version__
from fairstream.cli import (
    annotate,
    augment,
    bench,
    detect,
    eval_models,
    finetune,
    report,
    taxonomy,
)
from fairstream.cli import filter as filter_command
from fairstream.cli.common import common_options

# in the order of `fairstream --help`
COMMAND_GROUPS = (filter_command, detect, taxonomy, eval_models, report, annotate, finetune, augment, bench)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of all commands."""
    parser = argparse.ArgumentParser(
        prog="fairstream", description="Audit and rebalance social bias in pretraining text."
    )
    parser.add_argument("--version", action="version", version=f"fairstream {__version__}")
    subs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        p = subs.add_parser(name, help=help_, description=help_)
        common_options(p)
        p.set_defaults(func=func, _subparser=p)
        return p

    for group in COMMAND_GROUPS:
        group.register(add)
    return parser
