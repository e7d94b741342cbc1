"""Error hierarchy: every error names the file/record and says what to do.

Messages suggest options in the interface the user is using: ``option("on_error", "skip")`` reads
``on_error='skip'`` from Python and ``--on-error skip`` inside the command line (``cli_interface()``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

_INTERFACE: ContextVar[str] = ContextVar("fairstream_interface", default="python")
_NO_VALUE = object()
# keyword arguments whose command-line flag is not simply --name-with-dashes
_CLI_FLAGS = {"output_dir": "--output"}


@contextlib.contextmanager
def cli_interface() -> Iterator[None]:
    """Within this block, messages name command-line flags instead of keyword arguments."""
    token = _INTERFACE.set("cli")
    try:
        yield
    finally:
        _INTERFACE.reset(token)


def option(name: str, value: Any = _NO_VALUE) -> str:
    """A keyword argument as the user sets it: ``on_error='skip'`` (Python) or ``--on-error skip`` (CLI)."""
    if _INTERFACE.get() == "cli":
        flag = _CLI_FLAGS.get(name, "--" + name.replace("_", "-"))
        return flag if value is _NO_VALUE else f"{flag} {value}"
    return f"{name}=" if value is _NO_VALUE else f"{name}={value!r}"


class FairStreamError(Exception):
    """Base class of all fairstream errors."""


class TaxonomyError(FairStreamError, ValueError):
    """A taxonomy file is malformed (duplicate keyword, empty gloss, unknown class, ...)."""


class InvalidDocumentError(FairStreamError, ValueError):
    """A document's text is missing, not a string, not valid UTF-8 or too large.

    ``reason`` is a short key used when such documents are counted and skipped; ``problem`` is the
    message without ``fix`` (what the user can do), for logs of documents already being skipped.
    """

    def __init__(self, message: str, reason: str = "invalid", fix: str = "") -> None:
        super().__init__(f"{message}; {fix}" if fix else message)
        self.reason = reason
        self.problem = message


class ModelError(FairStreamError, RuntimeError):
    """A model file is missing, corrupt or incompatible."""


class ShardError(FairStreamError, RuntimeError):
    """An input shard is corrupt, truncated or unreadable."""


class OutputError(FairStreamError, OSError):
    """An output cannot be written (no permission, not a folder, disk full); the message names the path."""


class MissingDependencyError(FairStreamError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class WorkerError(FairStreamError, RuntimeError):
    """A worker process died (killed, out of memory); the message says which and what to do."""


class ConfigError(FairStreamError, ValueError):
    """A setting is outside its allowed values; the message names the setting and what is allowed."""
