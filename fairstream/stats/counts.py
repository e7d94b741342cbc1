"""Co-occurrence counts of words with protected attributes, by regard: the input of every bias score.

For each attribute class ``A``, attribute (keyword) ``a`` and regard ``r`` a
:class:`CooccurrenceCounts` keeps

* ``n(a, r)``: the number of sentences that mention ``a`` in its person sense with regard ``r``;
* ``N(a, r)``: the number of word tokens counted in those sentences (exact, never pruned);
* ``c(w, a, r)``: how often word ``w`` occurs in those sentences.

Words are NLTK word tokens, lowercased; punctuation, numbers and NLTK stopwords are left out (all
configurable). A sentence that mentions several attributes counts once for each ``(class,
keyword)``, under its regard toward that attribute: the most negative of its mentions' regards
(negative > positive > neutral > unknown), the rule the cap controller uses, so ``n(a, r)`` equals
the stream's per-attribute counts in ``stats.json`` exactly.

Counts are values (STYLE habit 3): they add with ``+`` (and ``sum``), serialize to JSON and merge
across workers, shards and machines. Merging is exact: ``a + b`` equals counting both streams in
one object. Counts remember the taxonomy they were made with (``taxonomy``: its name and content
hash, from the annotations) and refuse to add up with counts of another taxonomy
(:mod:`fairstream.stats.provenance`).

Bounded memory (lossy counting, Manku & Motwani 2002). With ``prune_every=P`` the stream is cut
into buckets of ``P`` counted sentences. At the end of each bucket the error bound ``E`` grows by
one and every word entry with ``c + delta <= E`` is deleted, where ``delta`` is the largest count
the entry may have lost before it was (re)inserted (``E`` at insertion time). This keeps the
invariant, for every word, attribute and regard::

    c_true - error_bound <= c_stored <= c_true        (c_stored = 0 for deleted words)

so ``error_bound`` (reported by :meth:`CooccurrenceCounts.memory_report` and written into every
serialized count) is the maximum possible undercount of any single ``c(w, a, r)``. It grows by
one per bucket, i.e. it is at most ``sentences_counted / P``; the number of entries kept is
``O(P * log(sentences / P))`` instead of growing with the vocabulary of the whole stream. Sums
over regards, ``c(w, a)``, can be undercounted by up to ``len(regards) * error_bound``. Merging
two pruned counts adds their bounds. ``prune_every=None`` counts exactly.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from fairstream.errors import FairStreamError
from fairstream.io import atomic_write
from fairstream.stats import words as word_filter
from fairstream.stats.count_queries import CountQueries
from fairstream.stats.hooks import CountsHook, consume_into
from fairstream.stats.provenance import merged_taxonomy, provenance_taxonomies
from fairstream.stats.regards import REGARD_LABELS, WHICH, Key, parse_attributes

logger = logging.getLogger(__name__)

COUNTS_FORMAT = "fairstream-cooccurrence-v1"
DEFAULT_PRUNE_EVERY = 100_000


class CooccurrenceCounts(CountQueries):
    """Mergeable counts of words co-occurring with protected attributes (person sense), by regard.

    Args:
        lowercase: Lowercase tokens before counting.
        stopwords: Words to leave out. A language name (``"english"``, the default) loads NLTK's
            list and, for English only, falls back to a small built-in list with a warning when
            the NLTK corpus is missing; ``"nltk:<language>"`` requires NLTK's list (loaded when
            counting starts); ``"builtin"`` uses the built-in English list; ``None`` keeps every
            word; any other iterable is a custom list. Clitics (``'s``, ``n't``, ...) are
            stopwords whenever a list is used.
        drop_punctuation: Leave out tokens without any letter or digit.
        keep_numbers: Count tokens that have digits but no letter (``"1990"``).
        min_token_length: Leave out tokens shorter than this many characters.
        prune_every: Counted sentences per lossy-counting bucket (see the module docstring);
            ``None`` counts exactly with unbounded memory.

    Raises:
        ValueError: An argument is out of range.
    """

    def __init__(
        self,
        *,
        lowercase: bool = True,
        stopwords: str | Iterable[str] | None = "english",
        drop_punctuation: bool = True,
        keep_numbers: bool = False,
        min_token_length: int = 1,
        prune_every: int | None = DEFAULT_PRUNE_EVERY,
    ) -> None:
        if not isinstance(min_token_length, int) or min_token_length < 1:
            raise ValueError(f"min_token_length={min_token_length!r} must be an int >= 1")
        if prune_every is not None and (not isinstance(prune_every, int) or prune_every < 1):
            raise ValueError(f"prune_every={prune_every!r} must be None (exact counts) or an int >= 1")
        self.lowercase = bool(lowercase)
        self.drop_punctuation = bool(drop_punctuation)
        self.keep_numbers = bool(keep_numbers)
        self.min_token_length = min_token_length
        self.prune_every = prune_every
        self._stop_name, self._stop_custom, self._stop = word_filter.resolve_stopwords(stopwords)
        self._tokenizer: Any = None

        self._words: dict[Key, Counter[str]] = {}
        self._deltas: dict[Key, dict[str, int]] = {}
        self._sentences: Counter[Key] = Counter()
        self._tokens: Counter[Key] = Counter()
        self.totals: Counter[str] = Counter(
            {"documents": 0, "sentences_seen": 0, "sentences_counted": 0, "mentions": 0}
        )
        self.provenance: Counter[str] = Counter()
        # the identity (name and content hash) of the taxonomy counted with; None: not recorded
        self.taxonomy: str | None = None
        self.error_bound = 0
        self.n_prunes = 0
        self._since_prune = 0

    # -- configuration ------------------------------------------------------------------------
    def _stopset(self) -> frozenset[str]:
        if self._stop is None:
            language = self._stop_name[5:]
            try:
                self._stop = word_filter.nltk_stopwords(language) | word_filter.CLITICS
            except (LookupError, OSError):
                raise FairStreamError(
                    f"these counts were made with NLTK's {language!r} stopwords, which are not installed "
                    f"here; counting on would change the word filter: {word_filter.NLTK_STOPWORDS_FIX}"
                ) from None
        return self._stop

    def config(self) -> dict[str, Any]:
        """The word filter as a JSON-able dict (two counts merge only when these are equal)."""
        out: dict[str, Any] = {
            "lowercase": self.lowercase,
            "stopwords": self._stop_name,
            "drop_punctuation": self.drop_punctuation,
            "keep_numbers": self.keep_numbers,
            "min_token_length": self.min_token_length,
        }
        if self._stop_custom is not None:
            out["stopword_list"] = list(self._stop_custom)
        return out

    def _check_compatible(self, other: CooccurrenceCounts) -> None:
        merged_taxonomy(
            self.taxonomy,
            other.taxonomy,
            provenance_taxonomies(self.provenance),
            provenance_taxonomies(other.provenance),
        )
        mine, theirs = self.config(), other.config()
        for name in mine.keys() | theirs.keys():
            if mine.get(name) != theirs.get(name):
                shown_mine = mine.get(name) if name != "stopword_list" else "<list>"
                shown_theirs = theirs.get(name) if name != "stopword_list" else "<different list>"
                raise ValueError(
                    f"cannot merge counts made with different word filters: {name}={shown_mine!r} vs "
                    f"{name}={shown_theirs!r}; recount one of them with the other's settings"
                )

    def note_taxonomy(self, identity: str, where: str = "") -> None:
        """Record the taxonomy of what is counted next (an annotation's ``taxonomy_identity``).

        Raises:
            TaxonomyMismatchError: These counts hold counts of another taxonomy.
        """
        if identity != self.taxonomy:
            try:
                self.taxonomy = merged_taxonomy(
                    self.taxonomy, identity, provenance_taxonomies(self.provenance)
                )
            except ValueError as exc:
                raise type(exc)(f"{where}: {exc}" if where else str(exc)) from None

    # -- counting -----------------------------------------------------------------------------
    def filter_tokens(self, tokens: Iterable[str]) -> list[str]:
        """The tokens that are counted, normalised (lowercased unless ``lowercase=False``)."""
        stop = self._stop if self._stop is not None else self._stopset()
        out = []
        min_len = self.min_token_length
        for tok in tokens:
            word = tok.lower() if self.lowercase else tok
            if len(word) < min_len:
                continue
            if not word.isalpha():
                if word_filter.HAS_ALNUM.search(word) is None:
                    if self.drop_punctuation:
                        continue
                elif not self.keep_numbers and word_filter.HAS_ALPHA.search(word) is None:
                    continue
            if stop and (word if self.lowercase else word.lower()) in stop:
                continue
            out.append(word)
        return out

    def tokenize(self, text: str) -> list[str]:
        """NLTK word tokens of ``text`` after the word filter."""
        if self._tokenizer is None:
            from fairstream.text import WordTokenizer

            self._tokenizer = WordTokenizer()
        return self.filter_tokens(self._tokenizer.tokenize(text))

    def add_sentence(
        self,
        tokens_or_text: str | Sequence[str],
        attributes: Iterable[tuple[str, str, str | None]],
    ) -> int:
        """Count one sentence once for each ``(class, keyword)`` it mentions (most negative regard).

        Args:
            tokens_or_text: The sentence as text (tokenized with NLTK) or as word tokens; either
                way the word filter is applied.
            attributes: ``(attribute_class, keyword, regard)`` of each person-sense mention;
                ``regard`` is ``"positive"``, ``"neutral"``, ``"negative"`` or ``None`` (counted
                as ``"unknown"``). An attribute mentioned twice counts once, under the more
                negative regard.

        Returns:
            The number of word tokens counted per attribute (0 when ``attributes`` is empty).

        Raises:
            ValueError: A regard label is not one of the allowed values.
        """
        triples = parse_attributes(attributes)
        if not triples:
            return 0
        words = (
            self.tokenize(tokens_or_text)
            if isinstance(tokens_or_text, str)
            else self.filter_tokens(tokens_or_text)
        )
        self._add_words(words, triples)
        return len(words)

    def _add_words(self, words: list[str], triples: Mapping[Key, int]) -> None:
        """Count already filtered words for each triple (``triples``: key -> mentions)."""
        bound = self.error_bound
        unique = set(words) if bound else ()
        for key in triples:
            counter = self._words.get(key)
            if counter is None:
                counter = self._words[key] = Counter()
            if bound:
                new = [w for w in unique if w not in counter]
                if new:
                    deltas = self._deltas.setdefault(key, {})
                    for w in new:
                        deltas[w] = bound
            counter.update(words)
            self._sentences[key] += 1
            self._tokens[key] += len(words)
        self.totals["sentences_counted"] += 1
        self.totals["mentions"] += sum(triples.values())
        self._since_prune += 1
        if self.prune_every is not None and self._since_prune >= self.prune_every:
            self.prune()

    def consume(
        self, text: str, annotation: Mapping[str, Any], which: Literal["kept", "all"] = "kept"
    ) -> int:
        """Count one document from the stream's annotation (the sidecar hook).

        Only mentions with ``"person": true`` are counted; offsets are into ``text``. A sentence
        that carries its NLTK word tokens (``"tokens": [...]``) is not tokenized again.

        Args:
            text: The document text the annotation refers to.
            annotation: The stream's per-document annotation dict (``doc_index``, ``id``,
                ``taxonomy``, ``model``, ``sentences`` with ``start``, ``end``, ``kept`` and
                ``mentions``).
            which: ``"kept"`` counts only sentences the filter kept (the data after filtering);
                ``"all"`` counts every annotated sentence (the data before filtering).

        Returns:
            The number of sentences counted.

        Raises:
            ValueError: ``which`` is not allowed.
            InvalidDocumentError: The annotation does not fit the text (bad offsets or fields).
        """
        if which not in WHICH:
            raise ValueError(f"which={which!r} is not one of {WHICH}")
        return consume_into(text, annotation, [(self, which)])[0]

    def hook(self, which: Literal["kept", "all"] = "kept") -> CountsHook:
        """A stream hook ``hook(text, annotation)`` that counts into these counts (picklable).

        E.g. ``FairStream(..., hooks=[before.hook("all"), after.hook("kept")])``.
        """
        if which not in WHICH:
            raise ValueError(f"which={which!r} is not one of {WHICH}")
        return CountsHook(self, which)

    def prune(self) -> None:
        """End a lossy-counting bucket: raise ``error_bound`` by one and drop rare word entries.

        Every entry with ``c + delta <= error_bound`` (after the increase) is deleted; see the
        module docstring for why no count is then undercounted by more than ``error_bound``.
        """
        threshold = self.error_bound + 1
        for key, counter in self._words.items():
            deltas = self._deltas.get(key)
            if deltas:
                kept = Counter({w: c for w, c in counter.items() if c + deltas.get(w, 0) > threshold})
                new_deltas = {w: d for w, d in deltas.items() if w in kept}
                if new_deltas:
                    self._deltas[key] = new_deltas
                else:
                    del self._deltas[key]
            else:
                kept = Counter({w: c for w, c in counter.items() if c > threshold})
            self._words[key] = kept
        self.error_bound = threshold
        self.n_prunes += 1
        self._since_prune = 0
        logger.debug("pruned co-occurrence counts: %d entries, error bound %d", self.n_entries, threshold)

    # -- values: add, copy, compare -----------------------------------------------------------
    def copy(self) -> CooccurrenceCounts:
        """A deep copy."""
        out = CooccurrenceCounts.from_dict(self.to_dict())
        out._stop = self._stop
        return out

    def __iadd__(self, other: CooccurrenceCounts) -> CooccurrenceCounts:
        if not isinstance(other, CooccurrenceCounts):
            return NotImplemented
        self._check_compatible(other)
        if other is self:
            other = other.copy()
        e_self, e_other = self.error_bound, other.error_bound
        for key in self._words.keys() | other._words.keys():
            mine = self._words.get(key)
            if mine is None:
                mine = self._words[key] = Counter()
            theirs = other._words.get(key, Counter())
            if e_self or e_other:
                # an entry missing on one side may have lost up to that side's error bound there
                d_mine, d_theirs = self._deltas.get(key, {}), other._deltas.get(key, {})
                merged: dict[str, int] = {}
                for w in mine.keys() | theirs.keys():
                    d = (d_mine.get(w, 0) if w in mine else e_self) + (
                        d_theirs.get(w, 0) if w in theirs else e_other
                    )
                    if d:
                        merged[w] = d
                if merged:
                    self._deltas[key] = merged
                else:
                    self._deltas.pop(key, None)
            mine.update(theirs)
        self._sentences.update(other._sentences)
        self._tokens.update(other._tokens)
        self.totals.update(other.totals)
        self.provenance.update(other.provenance)
        self.taxonomy = self.taxonomy if self.taxonomy is not None else other.taxonomy
        self.error_bound = e_self + e_other
        self.n_prunes += other.n_prunes
        self._since_prune += other._since_prune
        return self

    def __add__(self, other: CooccurrenceCounts) -> CooccurrenceCounts:
        if not isinstance(other, CooccurrenceCounts):
            return NotImplemented
        out = self.copy()
        out += other
        return out

    def __radd__(self, other: object) -> CooccurrenceCounts:
        # lets sum(parts) work: sum starts from 0
        if isinstance(other, int) and other == 0:
            return self.copy()
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CooccurrenceCounts):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"CooccurrenceCounts(attributes={len(self.attributes())}, "
            f"sentences={self.totals['sentences_counted']}, entries={self.n_entries}, "
            f"error_bound={self.error_bound})"
        )

    def __getstate__(self) -> dict[str, Any]:
        return self.to_dict()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(CooccurrenceCounts.from_dict(state).__dict__)

    # -- serialization ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (deterministic: keys and words sorted); round-trips via ``from_dict``."""
        entries = []
        for key in sorted(self._words.keys() | self._sentences.keys()):
            cls_name, keyword, regard = key
            words = self._words.get(key, Counter())
            deltas = self._deltas.get(key, {})
            entries.append(
                {
                    "class": cls_name,
                    "keyword": keyword,
                    "regard": regard,
                    "sentences": self._sentences[key],
                    "tokens": self._tokens[key],
                    "words": {w: words[w] for w in sorted(words)},
                    "deltas": {w: deltas[w] for w in sorted(deltas)},
                }
            )
        return {
            "format": COUNTS_FORMAT,
            "config": self.config(),
            "pruning": {
                "prune_every": self.prune_every,
                "error_bound": self.error_bound,
                "n_prunes": self.n_prunes,
                "sentences_since_prune": self._since_prune,
            },
            "totals": {k: self.totals[k] for k in sorted(self.totals)},
            "provenance": {k: self.provenance[k] for k in sorted(self.provenance)},
            "taxonomy": self.taxonomy,
            "attributes": entries,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> CooccurrenceCounts:
        """Rebuild counts from :meth:`to_dict` output.

        Raises:
            ValueError: The structure is not a fairstream co-occurrence count.
        """
        if not isinstance(data, Mapping) or data.get("format") != COUNTS_FORMAT:
            got = data.get("format") if isinstance(data, Mapping) else type(data).__name__
            raise ValueError(f"{source}: format={got!r}, expected {COUNTS_FORMAT!r}")
        try:
            config = dict(data["config"])
            pruning = data["pruning"]
            stop_name = config.pop("stopwords")
            stop_list = config.pop("stopword_list", None)
            stopwords: str | Iterable[str] | None = stop_list if stop_name == "custom" else stop_name
            out = cls(stopwords=stopwords, prune_every=pruning["prune_every"], **config)
            out.error_bound = int(pruning["error_bound"])
            out.n_prunes = int(pruning["n_prunes"])
            out._since_prune = int(pruning["sentences_since_prune"])
            out.totals = Counter({k: int(v) for k, v in data["totals"].items()})
            out.provenance = Counter({k: int(v) for k, v in data["provenance"].items()})
            taxonomy = data.get("taxonomy")  # absent from counts written before it was recorded
            out.taxonomy = None if taxonomy is None else str(taxonomy)
            for entry in data["attributes"]:
                regard = entry["regard"]
                if regard not in REGARD_LABELS:
                    raise ValueError(f"regard {regard!r} is not one of {REGARD_LABELS}")
                key = (str(entry["class"]), str(entry["keyword"]), regard)
                out._words[key] = Counter({str(w): int(c) for w, c in entry["words"].items()})
                if entry.get("deltas"):
                    out._deltas[key] = {str(w): int(d) for w, d in entry["deltas"].items()}
                out._sentences[key] = int(entry["sentences"])
                out._tokens[key] = int(entry["tokens"])
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(
                f"{source}: malformed co-occurrence counts ({type(exc).__name__}: {exc})"
            ) from None
        return out

    def save(self, path: str | Path) -> Path:
        """Write JSON atomically (temporary file, then ``os.replace``); ``.gz`` paths are gzipped.

        Returns:
            The path written.
        """
        path = Path(path)
        payload = json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if path.suffix == ".gz":
            payload = gzip.compress(payload, mtime=0)
        with atomic_write(path, "wb") as fh:
            fh.write(payload)
        return path

    @classmethod
    def load(cls, path: str | Path) -> CooccurrenceCounts:
        """Read counts written by :meth:`save`.

        Raises:
            ValueError: The file is not valid JSON or not fairstream counts.
        """
        path = Path(path)
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        try:
            data = json.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not valid JSON ({exc}); expected counts written by save()") from None
        return cls.from_dict(data, source=str(path))
