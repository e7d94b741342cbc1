"""Bias statistics sidecar: co-occurrence counts, bias scores (eq. 1, eq. 2), reports, SeeGULL check.

Usable live next to the stream (``CooccurrenceCounts.consume(text, annotation)``) and offline on
annotated shards; counts from workers and shards merge with ``+``. See ``docs/stats.md``.
"""

from fairstream.stats.counts import COUNTS_FORMAT, CooccurrenceCounts
from fairstream.stats.examples import DroppedExamples
from fairstream.stats.hooks import BeforeAfterHook, CountsHook, consume_into
from fairstream.stats.regards import REGARD_LABELS, REGARDS, UNKNOWN_REGARD
from fairstream.stats.report import ReportPaths, write_report
from fairstream.stats.scores import (
    ClassScores,
    active_attributes,
    frequency_bias,
    mitigation_effect,
    regard_bias,
    score_class,
    top_k,
    vocabulary,
)
from fairstream.stats.seegull import (
    IDENTITY_MAP,
    AttributeMatcher,
    RecallResult,
    SeegullError,
    Stereotype,
    format_seegull_table,
    load_seegull,
    recall_at_k,
    seegull_recall_table,
    shared_nationalities,
)

__all__ = [
    "COUNTS_FORMAT",
    "IDENTITY_MAP",
    "REGARDS",
    "REGARD_LABELS",
    "UNKNOWN_REGARD",
    "AttributeMatcher",
    "BeforeAfterHook",
    "ClassScores",
    "CooccurrenceCounts",
    "CountsHook",
    "DroppedExamples",
    "RecallResult",
    "ReportPaths",
    "SeegullError",
    "Stereotype",
    "active_attributes",
    "consume_into",
    "format_seegull_table",
    "frequency_bias",
    "load_seegull",
    "mitigation_effect",
    "recall_at_k",
    "regard_bias",
    "score_class",
    "seegull_recall_table",
    "shared_nationalities",
    "top_k",
    "vocabulary",
    "write_report",
]
