"""Tag documents: candidate sentences plus WSD and regard for each keyword mention.

Model calls are batched across all documents passed to ``tag_batch`` and answered from a bounded
LRU cache for repeated sentences (web boilerplate). Documents and sentences without keyword
mentions cost no model call.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from fairstream.candidates import CandidateExtractor, CandidateSentence, DocumentScan
from fairstream.core.config import DEFAULT_CACHE_SIZE
from fairstream.models.encoding import MentionInput
from fairstream.models.runtime import JointModel, Prediction
from fairstream.taxonomy import Taxonomy
from fairstream.text import LengthFilter, SplitterName

logger = logging.getLogger(__name__)


class MentionModel(Protocol):
    """What the tagger needs from a model: a name and batched predictions."""

    name: str

    def predict(self, items: list[MentionInput]) -> list[Prediction]:
        """Predictions in input order."""
        ...


@dataclass
class TaggedSentence:
    """A candidate sentence with one prediction per mention."""

    sentence: CandidateSentence
    predictions: list[Prediction]


@dataclass
class TaggedDocument:
    """A scanned document with its tagged candidate sentences."""

    scan: DocumentScan
    sentences: list[TaggedSentence]


class Tagger:
    """Candidate extraction + model predictions with a bounded cache.

    Args:
        model: a ``JointModel``, a model folder, or ``None`` for the shipped default (loaded lazily).
        taxonomy: protected-attribute taxonomy (default ``taxonomy-v1``).
        cache_size: cached (sentence, mention) predictions kept across ``tag_batch`` calls (0: off;
            repeated mentions within one call are always judged once). On by default: with a
            batch-invariant model (the shipped one) a cached prediction equals a recomputed one, so
            decisions and exact resume do not depend on it; with a model that is not, the cache is
            turned off (its answers would depend on what was judged before).
    """

    def __init__(
        self,
        model: MentionModel | str | Path | None = None,
        *,
        taxonomy: Taxonomy | None = None,
        splitter: SplitterName = "auto",
        length_filter: LengthFilter | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        batch_size: int = 8,
    ) -> None:
        if cache_size < 0:
            raise ValueError(f"cache_size={cache_size} must be >= 0")
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} must be >= 1")
        self.extractor = CandidateExtractor(taxonomy, splitter=splitter, length_filter=length_filter)
        self.taxonomy = self.extractor.taxonomy
        self.model: MentionModel = (
            model
            if model is not None and not isinstance(model, str | Path)
            else JointModel(model, batch_size=batch_size)
        )
        if cache_size and not getattr(self.model, "batch_invariant", False):
            logger.info("%s is not batch-invariant: the prediction cache is off", self.model.name)
            cache_size = 0
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, int, int, str], Prediction] = OrderedDict()
        self.cache_hits = 0  # mentions answered from the cache (judged in an earlier call)
        self.batch_repeats = 0  # mentions repeated within one call, judged once
        self.model_calls = 0
        self.mentions_predicted = 0
        self.seconds = {"scan": 0.0, "model": 0.0}  # where the tagger's time goes (for benchmarks)

    def tag_batch(self, texts: list[str]) -> list[TaggedDocument]:
        """Tag several documents with one batched model call for all their uncached mentions."""
        t0 = time.perf_counter()
        scans = [self.extractor.scan(t) for t in texts]
        todo: dict[tuple[str, int, int, str], MentionInput] = {}
        found: dict[tuple[str, int, int, str], Prediction] = {}
        keys: list[list[list[tuple[str, int, int, str]]]] = []
        for text, scan in zip(texts, scans, strict=True):
            doc_keys = []
            for cand in scan.candidates:
                sent = text[cand.start : cand.end]
                sent_keys = []
                for m in cand.mentions:
                    key = (sent, m.start - cand.start, m.end - cand.start, m.keyword)
                    sent_keys.append(key)
                    if key in found or key in todo:
                        self.batch_repeats += 1
                        continue
                    if key in self._cache:
                        self._cache.move_to_end(key)
                        found[key] = self._cache[key]
                        self.cache_hits += 1
                    else:
                        attr = self.taxonomy[m.keyword]
                        todo[key] = MentionInput(sent, key[1], key[2], attr.keyword, attr.gloss)
                doc_keys.append(sent_keys)
            keys.append(doc_keys)
        t1 = time.perf_counter()
        self.seconds["scan"] += t1 - t0
        if todo:
            preds = self.model.predict(list(todo.values()))
            self.model_calls += 1
            self.mentions_predicted += len(preds)
            for key, pred in zip(todo.keys(), preds, strict=True):
                found[key] = pred
                self._remember(key, pred)
            self.seconds["model"] += time.perf_counter() - t1
        out = []
        for scan, doc_keys in zip(scans, keys, strict=True):
            tagged = [
                TaggedSentence(cand, [found[k] for k in sent_keys])
                for cand, sent_keys in zip(scan.candidates, doc_keys, strict=True)
            ]
            out.append(TaggedDocument(scan, tagged))
        return out

    def _remember(self, key: tuple[str, int, int, str], pred: Prediction) -> None:
        if self.cache_size == 0:
            return
        self._cache[key] = pred
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
