"""``main``: run one ``fairstream`` command, turning errors a user can act on into one line."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from fairstream.cli.options import apply_config, check_options
from fairstream.cli.parser import build_parser
from fairstream.errors import FairStreamError, cli_interface


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fairstream`` command.

    Errors a user can act on (bad option, input or output) print one line and exit 2; ``--debug``
    shows the traceback instead.
    """
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    with _sigterm_stops():
        return _main(parser, argv, debug)


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a batch scheduler) arrived: stop as on Ctrl-C."""


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    """Turn SIGTERM into ``Terminated`` while a command runs, so it stops its workers and says so once."""

    def stop(signum: int, frame: Any) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(parser: argparse.ArgumentParser, argv: list[str], debug: bool) -> int:
    try:
        with cli_interface():  # messages name --flags, not keyword arguments
            args = apply_config(parser, argv)
            debug = debug or bool(args.debug)
            check_options(args)
            if args.verbose:
                handler = logging.StreamHandler()
                handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
                pkg_logger = logging.getLogger("fairstream")
                pkg_logger.addHandler(handler)
                pkg_logger.setLevel(logging.INFO)
            return int(args.func(args))
    except BrokenPipeError:  # the reader of stdout went away (`| head`): the work itself is done
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (FairStreamError, OSError) as exc:
        if debug:
            raise
        print(f"fairstream: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Terminated:
        print("fairstream: stopped by SIGTERM", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("fairstream: interrupted", file=sys.stderr)
        return 130


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, FairStreamError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)
