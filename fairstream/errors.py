"""Error hierarchy: every error names the file/record and says what to do."""

from __future__ import annotations


class FairStreamError(Exception):
    """Base class of all fairstream errors."""


class TaxonomyError(FairStreamError, ValueError):
    """A taxonomy file is malformed (duplicate keyword, empty gloss, unknown class, ...)."""


class InvalidDocumentError(FairStreamError, ValueError):
    """A document's text is missing, not a string, not valid UTF-8 or too large.

    ``reason`` is a short key used when such documents are counted and skipped.
    """

    def __init__(self, message: str, reason: str = "invalid") -> None:
        super().__init__(message)
        self.reason = reason


class ModelError(FairStreamError, RuntimeError):
    """A model file is missing, corrupt or incompatible."""


class ShardError(FairStreamError, RuntimeError):
    """An input shard is corrupt, truncated or unreadable."""


class MissingDependencyError(FairStreamError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""
