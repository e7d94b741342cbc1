"""Checks of the model settings that several ways in accept (``FilterConfig``, the loader, each backend)."""

from __future__ import annotations

from typing import Any

from fairstream.errors import ConfigError, option

BATCH_SIZE_ALLOWED = "a whole number >= 1"


def is_batch_size(value: Any, *, automatic: bool = True) -> bool:
    """Whether ``value`` is a batch size: a whole number >= 1, or ``None`` (automatic) where allowed."""
    if value is None:
        return automatic
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_batch_size(value: Any, *, automatic: bool = True) -> None:
    """Refuse a batch size that is not one (see ``is_batch_size``), naming the setting and what is allowed."""
    if not is_batch_size(value, automatic=automatic):
        extra = " (or None: automatic)" if automatic else ""
        raise ConfigError(f"{option('batch_size', value)}: must be {BATCH_SIZE_ALLOWED}{extra}")
