"""Moved to :mod:`fairstream.adapters.hf`; this name stays for existing imports."""

from fairstream.adapters.hf import KEEP_COLUMN, FairStreamMapper, fairstream_map_fn

__all__ = ["KEEP_COLUMN", "FairStreamMapper", "fairstream_map_fn"]
