"""fairstream: audit and rebalance social bias in LLM pretraining text while it streams.

Main entry points:

* :class:`fairstream.FilterStep` and :class:`fairstream.FilterConfig`: the torch-free filter
  core (documents in, kept text + dropped spans + annotations out) and its one settings object;
  the adapters in ``fairstream.adapters`` (HF datasets, datatrove, Ray Data) call it.
* :class:`fairstream.FairStream`: the streaming ``IterableDataset`` filter with a per-attribute
  negative-regard cap (needs the ``torch`` extra).
* :class:`fairstream.Taxonomy` and :class:`fairstream.KeywordDetector`: protected-attribute
  keywords and their fast detection.
* :class:`fairstream.JointModel`: the ONNX WSD + regard classifier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.2.0.dev0"

__all__ = [
    "CandidateExtractor",
    "CapController",
    "FairStream",
    "FilterConfig",
    "FilterStep",
    "JointModel",
    "KeywordDetector",
    "Taxonomy",
    "__version__",
]

if TYPE_CHECKING:
    from fairstream.candidates import CandidateExtractor
    from fairstream.core.cap import CapController
    from fairstream.core.config import FilterConfig
    from fairstream.core.step import FilterStep
    from fairstream.detect import KeywordDetector
    from fairstream.models.runtime import JointModel
    from fairstream.stream.dataset import FairStream
    from fairstream.taxonomy import Taxonomy

_LAZY = {
    "CandidateExtractor": "fairstream.candidates",
    "CapController": "fairstream.core.cap",
    "FairStream": "fairstream.stream.dataset",
    "FilterConfig": "fairstream.core.config",
    "FilterStep": "fairstream.core.step",
    "JointModel": "fairstream.models.runtime",
    "KeywordDetector": "fairstream.detect",
    "Taxonomy": "fairstream.taxonomy",
}


def __getattr__(name: str) -> Any:
    # lazy so that `import fairstream` stays cheap (no torch until FairStream is used)
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'fairstream' has no attribute {name!r}")
