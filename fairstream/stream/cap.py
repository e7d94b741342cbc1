"""Moved to :mod:`fairstream.core.cap`; this name stays for existing imports."""

from fairstream.core.cap import CapController, UnitCounts, sentence_regard

__all__ = ["CapController", "UnitCounts", "sentence_regard"]
