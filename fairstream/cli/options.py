"""Option values of every command: ``--config`` files, and the range checks before any work."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fairstream.errors import FairStreamError


# -- config files ---------------------------------------------------------------------------------
def load_config(path: str | Path) -> dict[str, Any]:
    """Read a JSON, TOML or YAML config file into a dict."""
    path = Path(path)
    if not path.is_file():
        raise FairStreamError(f"{path}: config file not found")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise FairStreamError(
                    f"{path}: YAML configs need PyYAML: pip install pyyaml (or use JSON/TOML)"
                ) from None
            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except FairStreamError:
        raise
    except Exception as exc:
        raise FairStreamError(f"{path}: cannot parse config ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise FairStreamError(f"{path}: a config file must hold a mapping of option names to values")
    return {k.replace("-", "_"): v for k, v in data.items()}


def parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; an unknown option is reported with the usage of its subcommand."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        args._subparser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def apply_config(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; with ``--config FILE``, the file's values are the defaults the command line overrides."""
    args = parse(parser, argv)
    config_file = getattr(args, "config", None)
    if not config_file:
        return args
    sub = args._subparser
    config = load_config(config_file)
    allowed = {a.dest for a in sub._actions if a.dest not in ("help", "config")}
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise FairStreamError(f"{config_file}: unknown option(s) {unknown}; allowed: {sorted(allowed)}")
    sub.set_defaults(**config)
    return parse(parser, argv)


# -- option checks: every value, from the command line or a config file, before any work ----------
def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any, least: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= least


ALLOWED: dict[str, tuple[Callable[[Any], bool], str]] = {
    "cap": (lambda v: _is_number(v) and 0 <= v <= 1, "a number in [0, 1] (1 keeps every sentence)"),
    "warmup": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "min_attribute_share": (lambda v: _is_number(v) and 0 < v <= 1, "a number in (0, 1]"),
    "seed": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "max_doc_chars": (lambda v: _is_int(v, 0), "a whole number >= 0 (0: no limit)"),
    "top_n": (lambda v: _is_int(v, 1), "a whole number >= 1"),
    "top_k": (lambda v: _is_int(v, 1), "a whole number >= 1"),
    "min_word_count": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "min_attribute_sentences": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "min_tokens": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "max_tokens": (lambda v: _is_int(v, 1), "a whole number >= 1"),
    "batch_size": (lambda v: v is None or _is_int(v, 1), "a whole number >= 1"),
    "limit": (lambda v: v is None or _is_int(v, 1), "a whole number >= 1"),
    "retries": (lambda v: _is_int(v, 0), "a whole number >= 0"),
    "k": (
        lambda v: isinstance(v, list) and bool(v) and all(_is_int(x, 1) for x in v),
        "one or more whole numbers >= 1",
    ),
    "text_field": (lambda v: isinstance(v, str) and bool(v), "a field name"),
}


#: Commands that read no taxonomy, and why: a ``--taxonomy`` given to one is refused, not ignored.
NO_TAXONOMY = {
    "annotate": "each pair it labels carries its own keyword and gloss",
    "build-sft": "it builds from story pairs",
    "genmo-eval": "it scores answers to GenMO pairs",
    "swap-gender": "it swaps the words of its gender word lists",
    "db-index": "it compares sentence embeddings",
    "stereotype-score": "it scores StereoSet items",
}


def check_taxonomy_option(args: argparse.Namespace) -> None:
    """Refuse ``--taxonomy`` where no taxonomy is read, and a value that names no file or shipped taxonomy."""
    from fairstream.taxonomy import taxonomy_setting_problem

    value = getattr(args, "taxonomy", None)
    if value is None:
        return
    command = getattr(args, "command", None)
    if command in NO_TAXONOMY:
        raise FairStreamError(
            f"--taxonomy {value}: `fairstream {command}` reads no taxonomy ({NO_TAXONOMY[command]}); "
            "leave --taxonomy out"
        )
    problem = taxonomy_setting_problem(value)
    if problem is not None:
        raise FairStreamError(f"--taxonomy {value}: {problem}")


def check_options(args: argparse.Namespace) -> None:
    """Reject any option value outside its allowed range, naming the flag (one line, before any work)."""
    check_taxonomy_option(args)
    for action in args._subparser._actions:
        rule = ALLOWED.get(action.dest)
        if rule is None or not hasattr(args, action.dest):
            continue
        ok, allowed = rule
        value = getattr(args, action.dest)
        if not ok(value):
            flag = action.option_strings[-1] if action.option_strings else action.dest
            raise FairStreamError(f"{flag} {value!r}: must be {allowed}")
    if getattr(args, "min_tokens", 0) >= getattr(args, "max_tokens", 1):
        raise FairStreamError(
            f"--min-tokens {args.min_tokens} must be less than --max-tokens {args.max_tokens}"
        )
