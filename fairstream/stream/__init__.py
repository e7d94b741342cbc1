"""The streaming filter: tagging, the cap controller and the FairStream dataset."""

from fairstream.stream.cap import CapController, UnitCounts
from fairstream.stream.dataset import FairStream, remove_spans
from fairstream.stream.hf import fairstream_map_fn
from fairstream.stream.stats import StreamStats, stats_from_loader_state
from fairstream.stream.tagger import Tagger

__all__ = [
    "CapController",
    "FairStream",
    "StreamStats",
    "Tagger",
    "UnitCounts",
    "fairstream_map_fn",
    "remove_spans",
    "stats_from_loader_state",
]
