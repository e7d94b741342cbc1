"""Bias scores from co-occurrence counts: frequency bias (eq. 1) and frequency+regard bias (eq. 2).

Notation (per attribute class ``A``; see :mod:`fairstream.stats.counts`): ``c(w, a, r)`` is how
often word ``w`` occurs in sentences that mention attribute ``a`` (person sense) with regard
``r``; ``c(w, a) = sum_r c(w, a, r)`` over all regard labels (including ``unknown``);
``N(a)`` is the number of word tokens counted for ``a`` (all words, not only the vocabulary);
``R = (positive, neutral, negative)``.

* ``p(w | a) = c(w, a) / N(a)``
* Frequency bias (eq. 1)::

      B1(w, a) = p(w | a) / ( (1/|A|) * sum_{a' in A} p(w | a') )

  1 means "as frequent with ``a`` as with the average attribute of the class"; the maximum is
  ``|A|`` (the word occurs with ``a`` only).
* ``p(r | w, a) = c(w, a, r) / sum_{r' in R} c(w, a, r')`` (sentences with unknown regard are
  left out of this ratio; undefined, NaN, when ``w`` has no regard-labelled count with ``a``).
* Frequency+regard bias (eq. 2)::

      B2(w, a, r) = min( B1(w, a),  p(r | w, a) / ( (1/|R|) * sum_{r' in R} p(r' | w, a) ) )

  The second term equals ``|R| * p(r | w, a)``; the minimum keeps only words that are both
  unusually frequent with ``a`` and used with regard ``r``.

Vocabulary rule (the paper's appendix): ``V(A)`` is the intersection over ``a in A`` of the
``top_n`` (default 20,000) most frequent words of ``a`` (ties broken alphabetically). To keep
tiny-sample noise out, an attribute takes part (is in ``A``) only with at least
``min_attribute_sentences`` sentences, and a word is eligible for an attribute's top list only
with ``c(w, a) >= min_word_count``. The attribute's own keywords and surface forms are left out
of ``V`` by default (a sentence about "Muslims" trivially contains "muslims").

On small samples the intersection over many attributes (63 nationalities) is often empty.
``min_attribute_share < 1`` relaxes the rule: a word is in ``V`` when it is in the top list of
at least ``ceil(min_attribute_share * |A|)`` attributes; where ``c(w, a) = 0`` then ``p(w|a) = 0``
in the mean of eq. 1, ``B1(w, a) = 0`` and eq. 2 is undefined (NaN). The default, 1.0, is the
paper's rule.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from fairstream.stats.counts import CooccurrenceCounts
from fairstream.stats.regards import REGARD_LABELS, REGARDS

if TYPE_CHECKING:
    from fairstream.taxonomy import Taxonomy

logger = logging.getLogger(__name__)

DEFAULT_TOP_N = 20_000
DEFAULT_MIN_WORD_COUNT = 3
DEFAULT_MIN_ATTRIBUTE_SENTENCES = 10
DEFAULT_MIN_ATTRIBUTE_SHARE = 1.0


def _check_settings(
    top_n: int, min_word_count: int, min_attribute_sentences: int, min_attribute_share: float = 1.0
) -> None:
    if not isinstance(min_attribute_share, int | float) or not 0.0 < min_attribute_share <= 1.0:
        raise ValueError(
            f"min_attribute_share={min_attribute_share!r} must be in (0, 1]; 1.0 is the paper's intersection rule"
        )
    if not isinstance(top_n, int) or top_n < 1:
        raise ValueError(f"top_n={top_n!r} must be an int >= 1 (the paper uses 20,000)")
    if not isinstance(min_word_count, int) or min_word_count < 1:
        raise ValueError(f"min_word_count={min_word_count!r} must be an int >= 1")
    if not isinstance(min_attribute_sentences, int) or min_attribute_sentences < 1:
        raise ValueError(f"min_attribute_sentences={min_attribute_sentences!r} must be an int >= 1")


def attribute_words(
    counts: CooccurrenceCounts, attribute_class: str, taxonomy: Taxonomy | None = None
) -> set[str]:
    """Words that name the attributes of a class: keywords, ``keyword + "s"`` and taxonomy forms.

    Forms come from ``taxonomy`` (the run's; default: the shipped taxonomy the counts were made with,
    else ``taxonomy-v1``) for keywords it knows, and so do the words of multi-word forms
    ("senior citizens": "senior", "citizens"), which every sentence of the form holds; this is the
    default ``exclude`` set of the vocabulary.
    """
    from fairstream.stats.provenance import counts_taxonomy
    from fairstream.taxonomy import Taxonomy

    taxonomy = taxonomy or counts_taxonomy(counts) or Taxonomy.default()
    out: set[str] = set()
    for _, keyword in counts.attributes(attribute_class):
        out.update({keyword, keyword + "s"})
        if keyword in taxonomy:
            for form in taxonomy[keyword].forms:
                out.update({form, *form.split(" ")})
    return out


def active_attributes(
    counts: CooccurrenceCounts,
    attribute_class: str,
    *,
    min_attribute_sentences: int = DEFAULT_MIN_ATTRIBUTE_SENTENCES,
) -> list[str]:
    """Keywords of the class with at least ``min_attribute_sentences`` counted sentences, sorted."""
    return [
        kw
        for _, kw in counts.attributes(attribute_class)
        if counts.sentence_count(attribute_class, kw) >= min_attribute_sentences
    ]


def vocabulary(
    counts: CooccurrenceCounts,
    attribute_class: str,
    *,
    top_n: int = DEFAULT_TOP_N,
    min_word_count: int = DEFAULT_MIN_WORD_COUNT,
    min_attribute_sentences: int = DEFAULT_MIN_ATTRIBUTE_SENTENCES,
    min_attribute_share: float = DEFAULT_MIN_ATTRIBUTE_SHARE,
    exclude: Collection[str] | None = None,
    taxonomy: Taxonomy | None = None,
) -> list[str]:
    """The class vocabulary ``V(A)``: intersection of each active attribute's ``top_n`` words.

    Args:
        counts: The co-occurrence counts.
        attribute_class: The class ``A``.
        top_n: How many of each attribute's most frequent words take part (ties alphabetical).
        min_word_count: A word needs ``c(w, a) >= min_word_count`` to be in ``a``'s top list.
        min_attribute_sentences: Attributes with fewer sentences are left out of ``A``.
        min_attribute_share: Share of the active attributes whose top list must hold a word
            (1.0: all of them, the paper's intersection).
        exclude: Words never in ``V``; ``None`` leaves out the class's own keywords and forms
            (:func:`attribute_words`), ``()`` leaves out nothing.
        taxonomy: Whose forms ``exclude=None`` leaves out (the run's; default as in :func:`attribute_words`).

    Returns:
        ``V(A)`` sorted alphabetically (empty when no attribute is active).
    """
    _check_settings(top_n, min_word_count, min_attribute_sentences, min_attribute_share)
    excluded = attribute_words(counts, attribute_class, taxonomy) if exclude is None else set(exclude)
    keywords = active_attributes(counts, attribute_class, min_attribute_sentences=min_attribute_sentences)
    need = max(1, math.ceil(min_attribute_share * len(keywords) - 1e-9))
    in_lists: Counter[str] = Counter()
    for keyword in keywords:
        totals = counts.word_counts(attribute_class, keyword)
        eligible = ((w, c) for w, c in totals.items() if c >= min_word_count and w not in excluded)
        in_lists.update(w for w, _ in heapq.nsmallest(top_n, eligible, key=lambda wc: (-wc[1], wc[0])))
    return sorted(w for w, n in in_lists.items() if n >= need)


@dataclass
class ClassScores:
    """Eq. 1 and eq. 2 for every word of ``V(A)`` and every active attribute of a class.

    Arrays are indexed ``[attribute, ...]`` in the order of ``keywords`` and ``[..., word]`` in
    the order of ``words``; regard axes follow ``REGARD_LABELS`` for ``counts`` and ``REGARDS``
    for ``regard_prob`` and ``eq2``.
    """

    attribute_class: str
    keywords: tuple[str, ...]
    words: tuple[str, ...]
    counts: np.ndarray  # (A, len(REGARD_LABELS), V): c(w, a, r)
    token_totals: np.ndarray  # (A,): N(a)
    sentences: np.ndarray  # (A,): n(a)
    p_word: np.ndarray  # (A, V): p(w | a)
    eq1: np.ndarray  # (A, V)
    regard_prob: np.ndarray  # (A, len(REGARDS), V): p(r | w, a), NaN when undefined
    eq2: np.ndarray  # (A, len(REGARDS), V)
    skipped: dict[str, int] = field(default_factory=dict)  # keyword -> sentences, below the minimum
    settings: dict[str, Any] = field(default_factory=dict)

    def _a(self, keyword: str) -> int:
        try:
            return self.keywords.index(keyword)
        except ValueError:
            why = (
                f"it has {self.skipped[keyword]} sentences, fewer than min_attribute_sentences="
                f"{self.settings.get('min_attribute_sentences')}"
                if keyword in self.skipped
                else "it was not counted"
            )
            raise KeyError(
                f"{keyword!r} is not an active attribute of {self.attribute_class!r}: {why}"
            ) from None

    def _scores(self, keyword: str, regard: str | None) -> np.ndarray:
        a = self._a(keyword)
        if regard is None:
            return self.eq1[a]
        if regard not in REGARDS:
            raise ValueError(f"regard={regard!r} is not one of {REGARDS} or None (eq. 1)")
        return self.eq2[a, REGARDS.index(regard)]

    def score(self, keyword: str, regard: str | None = None) -> dict[str, float]:
        """Eq. 1 (``regard=None``) or eq. 2 with ``r=regard`` for every word of ``V`` (NaN dropped)."""
        values = self._scores(keyword, regard)
        return {w: float(v) for w, v in zip(self.words, values, strict=True) if not math.isnan(v)}

    def value(self, word: str, keyword: str, regard: str | None = None) -> float:
        """One score; NaN when the word is not in ``V`` or eq. 2 is undefined for it."""
        try:
            i = self.words.index(word)
        except ValueError:
            return math.nan
        return float(self._scores(keyword, regard)[i])

    def top(self, keyword: str, k: int = 10, regard: str | None = None) -> list[tuple[str, float]]:
        """The ``k`` highest-scoring words (ties: higher ``c(w, a)`` first, then alphabetical)."""
        if k < 0:
            raise ValueError(f"k={k} must be >= 0")
        values = self._scores(keyword, regard)
        freq = self.counts[self._a(keyword)].sum(axis=0)
        valid = np.flatnonzero(~np.isnan(values))
        order = valid[np.lexsort((valid, -freq[valid], -values[valid]))]
        return [(self.words[i], float(values[i])) for i in order[:k]]


def score_class(
    counts: CooccurrenceCounts,
    attribute_class: str,
    *,
    top_n: int = DEFAULT_TOP_N,
    min_word_count: int = DEFAULT_MIN_WORD_COUNT,
    min_attribute_sentences: int = DEFAULT_MIN_ATTRIBUTE_SENTENCES,
    min_attribute_share: float = DEFAULT_MIN_ATTRIBUTE_SHARE,
    exclude: Collection[str] | None = None,
    taxonomy: Taxonomy | None = None,
) -> ClassScores:
    """Compute eq. 1 and eq. 2 (all regards) for one class; settings as in :func:`vocabulary`.

    Returns:
        A :class:`ClassScores`. With fewer than two active attributes eq. 1 is 1 for every word.
    """
    _check_settings(top_n, min_word_count, min_attribute_sentences, min_attribute_share)
    keywords = active_attributes(counts, attribute_class, min_attribute_sentences=min_attribute_sentences)
    skipped = {
        kw: counts.sentence_count(attribute_class, kw)
        for _, kw in counts.attributes(attribute_class)
        if kw not in keywords
    }
    words = vocabulary(
        counts,
        attribute_class,
        top_n=top_n,
        min_word_count=min_word_count,
        min_attribute_sentences=min_attribute_sentences,
        min_attribute_share=min_attribute_share,
        exclude=exclude,
        taxonomy=taxonomy,
    )
    index = {w: i for i, w in enumerate(words)}
    n_a, n_v = len(keywords), len(words)
    c = np.zeros((n_a, len(REGARD_LABELS), n_v), dtype=np.float64)
    for a, kw in enumerate(keywords):
        for r, label in enumerate(REGARD_LABELS):
            for w, n in counts.word_counts(attribute_class, kw, label).items():
                i = index.get(w)
                if i is not None:
                    c[a, r, i] = n
    token_totals = np.array([counts.token_total(attribute_class, kw) for kw in keywords], dtype=np.float64)
    sentences = np.array([counts.sentence_count(attribute_class, kw) for kw in keywords], dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_word = c.sum(axis=1) / token_totals[:, None] if n_a else np.zeros((0, n_v))
        # every word of V has c(w, a) >= min_word_count >= 1 for at least one active a: the mean is > 0
        eq1 = p_word / p_word.mean(axis=0, keepdims=True) if n_a else np.zeros((0, n_v))
        labelled = c[:, : len(REGARDS), :]
        regard_prob = labelled / labelled.sum(axis=1, keepdims=True)  # NaN where no labelled count
        ratio = regard_prob / regard_prob.mean(axis=1, keepdims=True)
        eq2 = np.minimum(eq1[:, None, :], ratio)
    settings = {
        "top_n": top_n,
        "min_word_count": min_word_count,
        "min_attribute_sentences": min_attribute_sentences,
        "min_attribute_share": min_attribute_share,
        "exclude": "class keywords and forms" if exclude is None else sorted(exclude),
        "error_bound": counts.error_bound,
    }
    if skipped:
        logger.debug("class %r: attributes below min_attribute_sentences: %s", attribute_class, skipped)
    return ClassScores(
        attribute_class=attribute_class,
        keywords=tuple(keywords),
        words=tuple(words),
        counts=c,
        token_totals=token_totals,
        sentences=sentences,
        p_word=p_word,
        eq1=eq1,
        regard_prob=regard_prob,
        eq2=eq2,
        skipped=skipped,
        settings=settings,
    )


def frequency_bias(
    counts: CooccurrenceCounts, attribute_class: str, **settings: Any
) -> dict[str, dict[str, float]]:
    """Eq. 1: ``{keyword: {word: B1(w, a)}}`` over ``V(A)``; ``settings`` as in :func:`score_class`."""
    sc = score_class(counts, attribute_class, **settings)
    return {kw: sc.score(kw) for kw in sc.keywords}


def regard_bias(
    counts: CooccurrenceCounts, attribute_class: str, regard: str, **settings: Any
) -> dict[str, dict[str, float]]:
    """Eq. 2 with ``r=regard``: ``{keyword: {word: B2(w, a, r)}}`` (undefined values dropped)."""
    if regard not in REGARDS:
        raise ValueError(f"regard={regard!r} is not one of {REGARDS}")
    sc = score_class(counts, attribute_class, **settings)
    return {kw: sc.score(kw, regard) for kw in sc.keywords}


def top_k(scores: Mapping[str, float], k: int) -> list[tuple[str, float]]:
    """The ``k`` highest scores of a ``{word: score}`` mapping (NaN dropped, ties alphabetical)."""
    if k < 0:
        raise ValueError(f"k={k} must be >= 0")
    valid = ((w, s) for w, s in scores.items() if not math.isnan(s))
    return heapq.nsmallest(k, valid, key=lambda ws: (-ws[1], ws[0]))


def mitigation_effect(
    before: CooccurrenceCounts,
    after: CooccurrenceCounts,
    attribute_class: str,
    *,
    keyword: str | None = None,
    words: Iterable[str] | None = None,
    top_k: int = 10,
    regard: str | None = "negative",
    scores: ClassScores | None = None,
    **settings: Any,
) -> list[dict[str, Any]]:
    """How much of each word's association survives filtering: ``100 * p'(w | a) / p(w | a)``.

    ``p`` comes from ``before`` (e.g. counts of all sentences) and ``p'`` from ``after`` (counts
    of kept sentences), each with its own ``N(a)``. E.g. 19 means the word is 19% as frequent
    with the attribute after filtering as before.

    Args:
        before: Counts before filtering.
        after: Counts after filtering.
        attribute_class: The class.
        keyword: One attribute; ``None``: every active attribute of the class in ``before``.
        words: The words to report; ``None``: each attribute's ``top_k`` words in ``before`` by
            eq. 2 with ``r=regard`` (by eq. 1 when ``regard`` is None).
        top_k: How many top-biased words per attribute when ``words`` is None.
        regard: The regard whose eq. 2 picks the words.
        scores: ``score_class(before, attribute_class, ...)`` already computed (a report has it, with
            the run's taxonomy); ``None`` computes it from ``settings``.
        **settings: Vocabulary settings for :func:`score_class` (not with ``scores``).

    Returns:
        One dict per (keyword, word): ``class``, ``keyword``, ``word``, ``score_before`` (the
        eq. used to pick it, NaN for given words outside ``V``), ``count_before``,
        ``count_after``, ``p_before``, ``p_after`` and ``percent`` (None when ``p_before`` is 0).
    """
    if regard is not None and regard not in REGARDS:
        raise ValueError(f"regard={regard!r} is not one of {REGARDS} or None (eq. 1)")
    if scores is not None and (settings or scores.attribute_class != attribute_class):
        raise ValueError(
            f"scores= are of class {scores.attribute_class!r} with their own settings: pass them for "
            f"attribute_class={attribute_class!r} without vocabulary settings ({sorted(settings)})"
        )
    sc = scores if scores is not None else score_class(before, attribute_class, **settings)
    if keyword is not None:
        keywords: list[str] = [keyword]
    elif words is not None:
        keywords = [kw for _, kw in before.attributes(attribute_class)]
    else:
        keywords = list(sc.keywords)
    chosen = list(words) if words is not None else None
    rows: list[dict[str, Any]] = []
    for kw in keywords:
        picked = [w for w, _ in sc.top(kw, top_k, regard)] if chosen is None else chosen
        n_before = before.token_total(attribute_class, kw)
        n_after = after.token_total(attribute_class, kw)
        for w in picked:
            c_before = before.count(attribute_class, kw, w)
            c_after = after.count(attribute_class, kw, w)
            p_before = c_before / n_before if n_before else 0.0
            p_after = c_after / n_after if n_after else 0.0
            score = sc.value(w, kw, regard) if kw in sc.keywords else math.nan
            rows.append(
                {
                    "class": attribute_class,
                    "keyword": kw,
                    "word": w,
                    "score_before": score,
                    "count_before": c_before,
                    "count_after": c_after,
                    "p_before": p_before,
                    "p_after": p_after,
                    "percent": 100.0 * p_after / p_before if p_before > 0 else None,
                }
            )
    return rows
