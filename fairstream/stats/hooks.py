"""Counting annotated documents into co-occurrence counts: the stream hooks and the shared tokenize-once loop.

This module does not import ``fairstream.stats.counts`` (whose ``consume`` and ``hook`` use it):
it takes any object with the counting methods of :class:`Counts`, which ``CooccurrenceCounts`` is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

from fairstream.errors import InvalidDocumentError
from fairstream.stats.regards import WHICH, Key, parse_attributes


class Counts(Protocol):
    """What the hooks need of :class:`fairstream.stats.CooccurrenceCounts`."""

    totals: Counter[str]
    provenance: Counter[str]

    def note_taxonomy(self, identity: str, where: str = "") -> None: ...  # noqa: D102

    def filter_tokens(self, tokens: Iterable[str]) -> list[str]: ...  # noqa: D102

    def tokenize(self, text: str) -> list[str]: ...  # noqa: D102

    def consume(  # noqa: D102
        self, text: str, annotation: Mapping[str, Any], which: Literal["kept", "all"] = "kept"
    ) -> int: ...

    def _add_words(self, words: list[str], triples: Mapping[Key, int]) -> None: ...

    def _check_compatible(self, other: Any) -> None: ...


def consume_into(
    text: str,
    annotation: Mapping[str, Any],
    targets: Sequence[tuple[Counts, Literal["kept", "all"]]],
) -> list[int]:
    """Count one annotated document into several counts, tokenizing each sentence once.

    All targets must share one word filter (checked by :class:`BeforeAfterHook`).

    Returns:
        The number of sentences counted into each target.
    """
    if not targets:
        raise ValueError("targets is empty: pass at least one (counts, which) pair")
    for _, which in targets:
        if which not in WHICH:
            raise ValueError(f"which={which!r} is not one of {WHICH}")
    where = f"document {annotation.get('doc_index')!r} (id={annotation.get('id')!r})"
    sentences = annotation.get("sentences")
    if not isinstance(sentences, list):
        raise InvalidDocumentError(f"{where}: annotation field 'sentences' must be a list")
    provenance = f"{annotation.get('taxonomy')}/{annotation.get('model')}"
    identity = annotation.get("taxonomy_identity")
    if isinstance(identity, str):  # before anything is counted: counts of one taxonomy only
        for counts, _ in targets:
            counts.note_taxonomy(identity, where)
    doc_kept = annotation.get("doc_kept", True) is not False
    for counts, which in targets:
        if which == "all" or doc_kept:  # "kept" counts the documents the stream output
            counts.totals["documents"] += 1
            counts.provenance[provenance] += 1
    counted = [0] * len(targets)
    first = targets[0][0]
    for i, sent in enumerate(sentences):
        if not isinstance(sent, Mapping):
            raise InvalidDocumentError(f"{where}: sentence {i} must be an object")
        kept = bool(sent.get("kept"))
        wanted = [j for j, (_, which) in enumerate(targets) if which == "all" or kept]
        for j in wanted:
            targets[j][0].totals["sentences_seen"] += 1
        if not wanted:
            continue
        try:
            triples = parse_attributes(
                (m["class"], m["keyword"], m.get("regard"))
                for m in sent.get("mentions", ())
                if m.get("person") is True
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidDocumentError(f"{where}: sentence {i} has a malformed mention ({exc!r})") from None
        except ValueError as exc:
            raise InvalidDocumentError(f"{where}: sentence {i}: {exc}") from None
        if not triples:
            continue
        start, end = sent.get("start"), sent.get("end")
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text)):
            raise InvalidDocumentError(
                f"{where}: sentence {i} has offsets start={start!r}, end={end!r} outside the text "
                f"(0..{len(text)}); pass the same text that was annotated"
            )
        tokens = sent.get("tokens")
        words = first.filter_tokens(tokens) if isinstance(tokens, list) else first.tokenize(text[start:end])
        for j in wanted:
            targets[j][0]._add_words(words, triples)
            counted[j] += 1
    return counted


class BeforeAfterHook:
    """Stream hook counting every annotated sentence into ``before`` and kept ones into ``after``.

    Same as ``[before.hook("all"), after.hook("kept")]`` but tokenizes each sentence once.

    Raises:
        ValueError: The two counts use different word filters.
    """

    def __init__(self, before: Counts, after: Counts) -> None:
        before._check_compatible(after)
        self.before = before
        self.after = after

    def __call__(self, text: str, annotation: Mapping[str, Any]) -> None:
        """Count one document into both counts."""
        consume_into(text, annotation, [(self.before, "all"), (self.after, "kept")])

    def __repr__(self) -> str:
        return f"BeforeAfterHook(before={self.before!r}, after={self.after!r})"


class CountsHook:
    """Callable ``(text, annotation) -> None`` feeding a stream's annotations to counts."""

    def __init__(self, counts: Counts, which: Literal["kept", "all"] = "kept") -> None:
        self.counts = counts
        self.which = which

    def __call__(self, text: str, annotation: Mapping[str, Any]) -> None:
        """Count one document (see :meth:`fairstream.stats.CooccurrenceCounts.consume`)."""
        self.counts.consume(text, annotation, self.which)

    def __repr__(self) -> str:
        return f"CountsHook(which={self.which!r}, counts={self.counts!r})"
