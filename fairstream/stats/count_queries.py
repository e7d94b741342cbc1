"""The read side of co-occurrence counts: ``n(a, r)``, ``N(a, r)``, ``c(w, a, r)`` and their bounds.

``CountQueries`` is a base class of :class:`fairstream.stats.CooccurrenceCounts` (which counts,
prunes, merges and saves); it reads the stored counts that class keeps up to date.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fairstream.stats.regards import REGARD_LABELS, Key


class CountQueries:
    """Queries of stored counts (see :class:`fairstream.stats.CooccurrenceCounts` for what they are)."""

    _words: dict[Key, Counter[str]]
    _deltas: dict[Key, dict[str, int]]
    _sentences: Counter[Key]
    _tokens: Counter[Key]
    totals: Counter[str]
    prune_every: int | None
    n_prunes: int
    error_bound: int

    def keys(self) -> list[Key]:
        """Sorted ``(class, keyword, regard)`` triples that have been counted."""
        return sorted(self._sentences)

    def classes(self) -> list[str]:
        """Sorted attribute classes that have been counted."""
        return sorted({c for c, _, _ in self._sentences})

    def attributes(self, attribute_class: str | None = None) -> list[tuple[str, str]]:
        """Sorted ``(class, keyword)`` pairs that have been counted, optionally of one class."""
        return sorted(
            {(c, k) for c, k, _ in self._sentences if attribute_class is None or c == attribute_class}
        )

    def _regards(self, regard: str | None) -> tuple[str, ...]:
        if regard is None:
            return REGARD_LABELS
        if regard not in REGARD_LABELS:
            raise ValueError(f"regard={regard!r} is not one of {REGARD_LABELS} or None (all)")
        return (regard,)

    def sentence_count(self, attribute_class: str, keyword: str, regard: str | None = None) -> int:
        """``n(a, r)``: sentences counted for the attribute (all regards when ``regard`` is None)."""
        return sum(self._sentences.get((attribute_class, keyword, r), 0) for r in self._regards(regard))

    def token_total(self, attribute_class: str, keyword: str, regard: str | None = None) -> int:
        """``N(a, r)``: word tokens counted for the attribute (exact, not affected by pruning)."""
        return sum(self._tokens.get((attribute_class, keyword, r), 0) for r in self._regards(regard))

    def regard_distribution(self, attribute_class: str, keyword: str) -> dict[str, int]:
        """Sentences per regard label (``positive``, ``neutral``, ``negative``, ``unknown``)."""
        return {r: self._sentences.get((attribute_class, keyword, r), 0) for r in REGARD_LABELS}

    def word_counts(self, attribute_class: str, keyword: str, regard: str | None = None) -> Counter[str]:
        """``c(w, a, r)`` for all words (summed over regards when ``regard`` is None), as a new Counter."""
        out: Counter[str] = Counter()
        for r in self._regards(regard):
            counter = self._words.get((attribute_class, keyword, r))
            if counter:
                out.update(counter)
        return out

    def count(self, attribute_class: str, keyword: str, word: str, regard: str | None = None) -> int:
        """``c(w, a, r)`` of one word (summed over regards when ``regard`` is None)."""
        return sum(
            self._words.get((attribute_class, keyword, r), Counter()).get(word, 0)
            for r in self._regards(regard)
        )

    def count_bounds(self, attribute_class: str, keyword: str, word: str, regard: str) -> tuple[int, int]:
        """Interval ``(low, high)`` that holds the true ``c(w, a, r)`` despite pruning."""
        self._regards(regard)
        key = (attribute_class, keyword, regard)
        counter = self._words.get(key, Counter())
        if word in counter:
            return counter[word], counter[word] + self._deltas.get(key, {}).get(word, 0)
        return 0, self.error_bound

    @property
    def n_entries(self) -> int:
        """Number of stored word entries (what memory grows with)."""
        return sum(len(c) for c in self._words.values())

    def memory_report(self) -> dict[str, Any]:
        """Size and accuracy of the counts: entries, pruning settings and the error bound."""
        return {
            "entries": self.n_entries,
            "delta_entries": sum(len(d) for d in self._deltas.values()),
            "attribute_regard_keys": len(self._sentences),
            "prune_every": self.prune_every,
            "n_prunes": self.n_prunes,
            "error_bound": self.error_bound,
            "sentences_counted": self.totals["sentences_counted"],
            "bound_meaning": "each c(w,a,r) is undercounted by at most error_bound (never overcounted)",
        }
