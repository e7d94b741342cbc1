"""Moved to :mod:`fairstream.core.stats`; this name stays for existing imports."""

from fairstream.core.stats import StreamStats, loader_dataset_states, stats_from_loader_state

__all__ = ["StreamStats", "loader_dataset_states", "stats_from_loader_state"]
