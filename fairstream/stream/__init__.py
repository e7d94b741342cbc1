"""The streaming filter's torch side: the FairStream dataset (and old import paths of the core).

Names load on first use, so importing this package (e.g. for ``fairstream.stream.tagger``) does
not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fairstream.adapters.hf import fairstream_map_fn
    from fairstream.core.cap import CapController, UnitCounts
    from fairstream.core.stats import StreamStats, loader_dataset_states, stats_from_loader_state
    from fairstream.core.step import remove_spans
    from fairstream.stream.dataset import FairStream
    from fairstream.stream.tagger import Tagger

_LAZY = {
    "CapController": "fairstream.core.cap",
    "FairStream": "fairstream.stream.dataset",
    "StreamStats": "fairstream.core.stats",
    "Tagger": "fairstream.stream.tagger",
    "UnitCounts": "fairstream.core.cap",
    "fairstream_map_fn": "fairstream.adapters.hf",
    "loader_dataset_states": "fairstream.core.stats",
    "remove_spans": "fairstream.core.step",
    "stats_from_loader_state": "fairstream.core.stats",
}

__all__ = [
    "CapController",
    "FairStream",
    "StreamStats",
    "Tagger",
    "UnitCounts",
    "fairstream_map_fn",
    "loader_dataset_states",
    "remove_spans",
    "stats_from_loader_state",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'fairstream.stream' has no attribute {name!r}")
