"""What several commands share: ``AddCommand``, the common options and ``FilterConfig``'s flags.

Also the vocabulary-rule options and reading an input file with a one-line error.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from fairstream.core.config import FilterConfig
from fairstream.errors import FairStreamError

#: ``add(name, func, help)``: a subcommand with the common options; see ``fairstream.cli.parser``.
AddCommand = Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]


def common_options(p: argparse.ArgumentParser) -> None:
    """``--config``, ``--taxonomy``, ``--verbose`` and ``--debug``: options of every command."""
    p.add_argument("--config", help="JSON/TOML/YAML file of option values (command line wins)")
    p.add_argument(
        "--taxonomy",
        default=None,
        help="taxonomy: a shipped one by name (taxonomy-v1, taxonomy-v2) or a JSON file (default: taxonomy-v1)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level to stderr")
    p.add_argument(
        "--debug", action="store_true", help="on an error, show the Python traceback, not one line"
    )


def filter_config_options(
    p: argparse.ArgumentParser,
    names: Iterable[str] | None = None,
    *,
    help_suffix: dict[str, str] | None = None,
) -> None:
    """Add ``FilterConfig``'s options (all, or those of the fields ``names``, in that order) with their help and defaults.

    A flag of a filter setting is so declared once, in ``FilterConfig``, for every command that
    takes it. ``help_suffix`` (field name -> text) adds what one command says more about a flag.
    """
    if names is None:
        FilterConfig.add_arguments(p)
    else:
        fields = [f.name for f in dataclasses.fields(FilterConfig)]
        for name in names:  # one at a time: in the order given
            if name not in fields:
                raise ValueError(f"{name!r} is not a setting of FilterConfig")
            FilterConfig.add_arguments(p, skip=tuple(n for n in fields if n != name))
    for name, text in (help_suffix or {}).items():
        action = next(a for a in p._actions if a.dest == name)
        action.help = f"{action.help}; {text}"


def vocabulary_options(p: argparse.ArgumentParser) -> None:
    """The options of the vocabulary rule (which words the bias scores use)."""
    p.add_argument(
        "--top-n",
        type=int,
        default=20000,
        help="K of the vocabulary rule: each attribute's K most frequent words (default: %(default)s)",
    )
    p.add_argument(
        "--min-word-count", type=int, default=3, help="words need c(w,a) >= this (default: %(default)s)"
    )
    p.add_argument(
        "--min-attribute-sentences",
        type=int,
        default=10,
        help="attributes with fewer sentences are left out (default: %(default)s)",
    )
    p.add_argument(
        "--min-attribute-share",
        type=float,
        default=1.0,
        help="a word is in V when in the top-K of this share of the class's attributes (1.0: the paper's "
        "intersection; lower it on small corpora where the intersection is empty)",
    )


def vocabulary_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The values of ``vocabulary_options`` as keyword arguments of the report and the scores."""
    return {
        "top_n": args.top_n,
        "min_word_count": args.min_word_count,
        "min_attribute_sentences": args.min_attribute_sentences,
        "min_attribute_share": args.min_attribute_share,
    }


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (``ValueError`` for any other JSON value)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"holds a JSON {type(data).__name__}, not an object")
    return data


def load_input(flag: str, path: str, load: Callable[[Path], Any], what: str) -> Any:
    """``load(path)``, or a one-line error naming the flag, the path and the problem."""
    p = Path(path)
    if not p.is_file():
        raise FairStreamError(
            f"{flag} {p}: {'is a folder' if p.is_dir() else 'no such file'}; expected {what}"
        )
    try:
        return load(p)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problem = str(exc).removeprefix(f"{p}: ")
        raise FairStreamError(f"{flag} {p}: not {what} ({problem})") from None
