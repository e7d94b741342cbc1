"""The filter's core, free of torch and of every engine: settings, labels, the cap and the step.

Adapters (``fairstream.stream.dataset`` for torch, ``fairstream.adapters.*`` for HF datasets,
datatrove and Ray Data, ``fairstream.filter_job`` for the command line) feed it batches; nothing
here imports them.
"""

from typing import TYPE_CHECKING, Any

from fairstream.core.config import FilterConfig
from fairstream.core.schema import ANNOTATION_SCHEMA_VERSION, REGARD_LABELS, WSD_LABELS

if TYPE_CHECKING:
    from fairstream.core.step import DocResult, DroppedSpan, FilterStep, remove_spans

_STEP_NAMES = ("DocResult", "DroppedSpan", "FilterStep", "remove_spans")


def __getattr__(name: str) -> Any:
    # lazy: the step imports the tagger and the model runtime, which import core.schema; loading
    # it here eagerly made `import fairstream.models.runtime` (first) a circular import
    if name in _STEP_NAMES:
        from fairstream.core import step

        return getattr(step, name)
    raise AttributeError(f"module 'fairstream.core' has no attribute {name!r}")


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
