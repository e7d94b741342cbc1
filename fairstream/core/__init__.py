"""The filter's core, free of torch and of every engine: settings, labels, the cap and the step.

Adapters (``fairstream.stream.dataset`` for torch, ``fairstream.adapters.*`` for HF datasets,
datatrove and Ray Data, ``fairstream.filter_job`` for the command line) feed it batches; nothing
here imports them.
"""

from fairstream.core.config import FilterConfig
from fairstream.core.schema import ANNOTATION_SCHEMA_VERSION, REGARD_LABELS, WSD_LABELS
from fairstream.core.step import DocResult, DroppedSpan, FilterStep, remove_spans

__all__ = [
    "ANNOTATION_SCHEMA_VERSION",
    "REGARD_LABELS",
    "WSD_LABELS",
    "DocResult",
    "DroppedSpan",
    "FilterConfig",
    "FilterStep",
    "remove_spans",
]
