"""Labels and the annotation record: the one definition every layer imports.

The model's output heads, the stream's counts, the statistics and the report all name regard and
WSD classes; they import them from here so that no two places can disagree on the set or the
order. ``REGARD_LABELS`` and ``WSD_LABELS`` are in the order of the model's output logits.
"""

from __future__ import annotations

from typing import Any, TypedDict

#: Version of the annotation record below; bump it when a field changes meaning or is removed.
ANNOTATION_SCHEMA_VERSION = 1

#: Regard classes in the order of the model's regard logits.
REGARD_LABELS: tuple[str, str, str] = ("negative", "neutral", "positive")
#: The same classes as reports show them (positive first, as in the paper's tables).
REGARDS_POSITIVE_FIRST: tuple[str, str, str] = (REGARD_LABELS[2], REGARD_LABELS[1], REGARD_LABELS[0])
#: The same classes in the order the paper's regard prompt lists them (the LLM annotator's answers).
REGARDS_AS_PROMPTED: tuple[str, str, str] = (REGARD_LABELS[2], REGARD_LABELS[0], REGARD_LABELS[1])
#: Word-sense classes in the order of the model's WSD logits ("yes": the person sense).
WSD_LABELS: tuple[str, str, str] = ("no", "yes", "unsure")
#: The same classes in the order the paper's WSD prompt lists them.
WSD_AS_PROMPTED: tuple[str, str, str] = (WSD_LABELS[1], WSD_LABELS[0], WSD_LABELS[2])

#: Why a sentence was kept or dropped (``reason`` of an annotated sentence and of a dropped span).
KEEP_REASONS = ("not-negative", "cap-kept")
DROP_REASONS = ("cap-bound", "cap-sampled-out", "document-dropped")


class SentenceRecord(TypedDict):
    """One candidate sentence: its span in the original text and the cap's decision."""

    start: int
    end: int
    n_tokens: int
    kept: bool
    reason: str
    # each: start, end, surface, keyword, class (the mention) + wsd_score, person, regard, regard_probs
    mentions: list[dict[str, Any]]


class AnnotationRecord(TypedDict, total=False):
    """Per-document annotation: what was found, judged, kept and dropped, and by which versions."""

    schema_version: int
    doc_index: int
    id: Any
    taxonomy: str
    model: str
    granularity: str
    sentences: list[SentenceRecord]
    doc_kept: bool


def sentence_regard(regards: list[str]) -> str:
    """Regard of a sentence toward one attribute from its mentions' regards (most negative wins)."""
    if "negative" in regards:
        return "negative"
    return "positive" if "positive" in regards else "neutral"
