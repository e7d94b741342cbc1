"""Tag documents: candidate sentences plus WSD and regard for each keyword mention.

Model calls are batched across all documents passed to ``tag_batch`` and answered from a bounded
LRU cache for repeated sentences (web boilerplate). Documents and sentences without keyword
mentions cost no model call.

With ``scan_workers=N`` the keyword stage (matching, sentence splitting, word tokens) runs in N
worker processes, so a fast model (a GPU) is not held back by one core scanning text: the main
process sends chunks of documents to them and, while they scan the next chunks, judges the mentions
of the chunks already scanned.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fairstream.candidates import CandidateExtractor, CandidateSentence, DocumentScan
from fairstream.core.config import DEFAULT_CACHE_SIZE
from fairstream.errors import WorkerError, option
from fairstream.models.encoding import MentionInput
from fairstream.models.runtime import DEFAULT_BATCH_SIZE, JointModel, Prediction
from fairstream.models.settings import check_batch_size
from fairstream.processes import helper_pool
from fairstream.taxonomy import Taxonomy
from fairstream.text import LengthFilter, SplitterName

logger = logging.getLogger(__name__)
# Between model calls (no overlap) the workers pay off only on windows of hundreds of documents:
# starting them (a fork of a process holding the model) and handing texts over cost ~0.3 s a pass
SCAN_WORKERS_MIN_DOCS = 512


def runs_on_gpu(model: Any) -> bool:
    """Whether ``model`` (anything with an optional ``device``) runs on a CUDA device."""
    return str(getattr(model, "device", "cpu")).startswith("cuda")


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


Key = tuple[str, int, int, str]  # (sentence, start, end, keyword): one judged mention

# the keyword stage of a scan worker process (set by its initializer)
_worker_extractor: CandidateExtractor | None = None


def _init_scan_worker(taxonomy: Taxonomy, splitter: SplitterName, length_filter: LengthFilter) -> None:
    global _worker_extractor
    _worker_extractor = CandidateExtractor(taxonomy, splitter=splitter, length_filter=length_filter)


def _scan_in_worker(texts: list[str]) -> list[DocumentScan]:
    assert _worker_extractor is not None, "scan worker without its initializer"
    return [_worker_extractor.scan(t) for t in texts]


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
        scan_workers: processes running the keyword stage (0: in this process). The tags are the
            same with any number. Inside a daemonic process (a DataLoader worker), which may not
            start processes, it falls back to 0 with a warning.
        scan_overlap: whether the workers' scans overlap the model. ``True``: callers hand the next
            window to ``prefetch`` while this one is judged, and with a batch-invariant model the
            mentions of scanned chunks are judged while later chunks are scanned: right for a model
            faster than one core's keyword stage (a GPU). ``False``: each window is scanned by all
            workers (calls of ``SCAN_WORKERS_MIN_DOCS`` documents or more; smaller ones scan in
            this process), then judged in one call: on CPU the model already uses the cores, and
            overlapping them only slows it by what the scan saves (2 workers on 2 cores ran 1.06x no
            workers this way, benchmarks/RESULTS.md). ``None`` (default): ``True`` when the model's ``device`` is
            CUDA.
        scan_fallback_warns: whether falling back to 0 scan workers inside a daemonic process logs a
            warning (``False`` for a default the user did not ask for: it then logs at debug level).
    """

    def __init__(
        self,
        model: MentionModel | str | Path | None = None,
        *,
        taxonomy: Taxonomy | None = None,
        splitter: SplitterName = "auto",
        length_filter: LengthFilter | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        batch_size: int | None = None,
        scan_workers: int = 0,
        scan_overlap: bool | None = None,
        scan_fallback_warns: bool = True,
    ) -> None:
        if cache_size < 0:
            raise ValueError(f"cache_size={cache_size} must be >= 0")
        if scan_workers < 0:
            raise ValueError(f"scan_workers={scan_workers} must be >= 0 (0: scan in this process)")
        check_batch_size(batch_size)
        self.extractor = CandidateExtractor(taxonomy, splitter=splitter, length_filter=length_filter)
        self.taxonomy = self.extractor.taxonomy
        self.model: MentionModel = (
            model
            if model is not None and not isinstance(model, str | Path)
            else JointModel(model, batch_size=batch_size or DEFAULT_BATCH_SIZE)
        )
        if cache_size and not getattr(self.model, "batch_invariant", False):
            logger.info("%s is not batch-invariant: the prediction cache is off", self.model.name)
            cache_size = 0
        self.cache_size = cache_size
        self.scan_workers = scan_workers
        if scan_overlap is None:
            scan_overlap = runs_on_gpu(self.model)
        self.scan_overlap = scan_overlap
        self.scan_fallback_warns = scan_fallback_warns
        self.scan_min_docs = SCAN_WORKERS_MIN_DOCS  # without overlap, smaller calls scan in process
        self._scan_pool: ProcessPoolExecutor | None = None
        # scans started by ``prefetch``, oldest first: the window after the one being tagged, and
        # the one after it that the caller hands over before tagging it
        self._prefetched: list[tuple[list[str], int, list[Future[list[DocumentScan]]]]] = []
        self._cache: OrderedDict[Key, Prediction] = OrderedDict()
        self.cache_hits = 0  # mentions answered from the cache (judged in an earlier call)
        self.batch_repeats = 0  # mentions repeated within one call, judged once
        self.model_calls = 0
        self.prefetched_calls = 0  # tag_batch calls whose scans were started by ``prefetch``
        self.mentions_predicted = 0
        self.seconds = {"scan": 0.0, "model": 0.0}  # where the tagger's time goes (for benchmarks)

    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        state["_scan_pool"] = None  # processes do not pickle; a copy starts its own
        state["_prefetched"] = []
        return state

    def close(self) -> None:
        """Stop the scan worker processes (started again by the next ``tag_batch``)."""
        if self._scan_pool is not None:
            self._scan_pool.shutdown(cancel_futures=True)
            self._scan_pool = None
        self._prefetched = []

    @property
    def prefetches(self) -> bool:
        """Whether ``prefetch`` does anything (scan workers that overlap the model): callers then read a window ahead."""
        return self.scan_workers > 0 and self.scan_overlap

    def prefetch(self, texts: list[str]) -> None:
        """Start scanning ``texts`` in the scan workers now, for the ``tag_batch(texts)`` call to come.

        Callers hand over the next window before the model judges the current one, so the workers
        scan while the model runs; the later ``tag_batch`` with equal texts takes these scans.
        """
        if not self.prefetches:
            return
        pool = self._pool() if len(texts) > 1 else None
        if pool is not None:
            self._prefetched = [*self._prefetched[-1:], (list(texts), *self._submit_scans(texts, pool))]

    def _pool(self) -> ProcessPoolExecutor | None:
        if self.scan_workers == 0:
            return None
        if self._scan_pool is None:
            # the sentence splitter is chosen here, once: without NLTK's data the fallback's warning
            # is logged by this process, not once more by every worker (16 times on a 16-core host)
            kind = self.extractor.splitter.resolved_kind()
            self._scan_pool = helper_pool(  # the workers only scan text
                self.scan_workers,
                _init_scan_worker,
                (self.taxonomy, kind, self.extractor.length_filter),
                setting="scan_workers",
                doing="scanning",
                warn=self.scan_fallback_warns,
            )
            if self._scan_pool is None:
                self.scan_workers = 0
        return self._scan_pool

    def tag_batch(self, texts: list[str]) -> list[TaggedDocument]:
        """Tag several documents, batching model calls over all their uncached mentions."""
        least = 2 if self.scan_overlap else self.scan_min_docs
        pool = self._pool() if len(texts) >= least else None
        if pool is not None:
            return self._tag_with_workers(texts, pool)
        t0 = time.perf_counter()
        scans = [self.extractor.scan(t) for t in texts]
        todo: dict[Key, MentionInput] = {}
        found: dict[Key, Prediction] = {}
        keys: list[list[list[Key]]] = []
        self._collect(texts, scans, todo, found, keys)
        t1 = time.perf_counter()
        self.seconds["scan"] += t1 - t0
        if todo:
            self._judge(list(todo), todo, found)
            self._remember_all(todo, found)
            self.seconds["model"] += time.perf_counter() - t1
        return self._tagged(scans, keys, found)

    def _tag_with_workers(self, texts: list[str], pool: ProcessPoolExecutor) -> list[TaggedDocument]:
        """``tag_batch`` with the keyword stage in ``pool``, judging chunks while later ones are scanned."""
        ahead = next((p for p in self._prefetched if p[0] == texts), None)
        if ahead is not None:
            _, chunk, futures = ahead
            self._prefetched.remove(ahead)
            self.prefetched_calls += 1
        else:
            chunk, futures = self._submit_scans(texts, pool)
        starts = range(0, len(texts), chunk)
        # a batch-invariant model judges a mention alike in any batch: when scans overlap the model,
        # send what is scanned once it fills a few batches; otherwise one call, as without workers
        flush_early = self.scan_overlap and getattr(self.model, "batch_invariant", False)
        flush_at = max(256, 32 * (getattr(self.model, "batch_size", None) or 8)) if flush_early else math.inf
        scans: list[DocumentScan] = []
        todo: dict[Key, MentionInput] = {}
        found: dict[Key, Prediction] = {}
        keys: list[list[list[Key]]] = []
        waiting: list[Key] = []
        for lo, future in zip(starts, futures, strict=True):
            t0 = time.perf_counter()
            try:
                chunk_scans = future.result()
            except BrokenProcessPool as exc:
                raise self._worker_died(exc) from exc
            scans += chunk_scans
            before = len(todo)
            self._collect(texts[lo : lo + chunk], chunk_scans, todo, found, keys)
            waiting += itertools.islice(todo, before, None)
            t1 = time.perf_counter()
            self.seconds["scan"] += t1 - t0
            if len(waiting) >= flush_at or (waiting and lo == starts[-1]):
                self._judge(waiting, todo, found)
                waiting = []
                self.seconds["model"] += time.perf_counter() - t1
        self._remember_all(todo, found)  # after the last lookup, as without workers (same LRU state)
        return self._tagged(scans, keys, found)

    def _submit_scans(
        self, texts: list[str], pool: ProcessPoolExecutor
    ) -> tuple[int, list[Future[list[DocumentScan]]]]:
        chunk = min(64, max(1, math.ceil(len(texts) / (4 * self.scan_workers))))
        try:
            return chunk, [
                pool.submit(_scan_in_worker, texts[lo : lo + chunk]) for lo in range(0, len(texts), chunk)
            ]
        except BrokenProcessPool as exc:  # a worker died since the last call
            raise self._worker_died(exc) from exc

    def _worker_died(self, exc: BaseException) -> WorkerError:
        self.close()  # the next call starts new workers
        return WorkerError(
            f"a keyword-stage worker process died ({exc}); it may have run out of memory: "
            f"rerun with fewer scan workers or {option('scan_workers', 0)}"
        )

    def _judge(self, batch: list[Key], todo: dict[Key, MentionInput], found: dict[Key, Prediction]) -> None:
        preds = self.model.predict([todo[k] for k in batch])
        self.model_calls += 1
        self.mentions_predicted += len(preds)
        found.update(zip(batch, preds, strict=True))

    def _remember_all(self, todo: dict[Key, MentionInput], found: dict[Key, Prediction]) -> None:
        for key in todo:
            self._remember(key, found[key])

    @staticmethod
    def _tagged(
        scans: list[DocumentScan], keys: list[list[list[Key]]], found: dict[Key, Prediction]
    ) -> list[TaggedDocument]:
        return [
            TaggedDocument(
                scan,
                [
                    TaggedSentence(cand, [found[k] for k in sent_keys])
                    for cand, sent_keys in zip(scan.candidates, doc_keys, strict=True)
                ],
            )
            for scan, doc_keys in zip(scans, keys, strict=True)
        ]

    def _collect(
        self,
        texts: list[str],
        scans: list[DocumentScan],
        todo: dict[Key, MentionInput],
        found: dict[Key, Prediction],
        keys: list[list[list[Key]]],
    ) -> None:
        """Each mention's key; new ones into ``todo``, cached ones into ``found`` (repeats counted)."""
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

    def _remember(self, key: Key, pred: Prediction) -> None:
        if self.cache_size == 0:
            return
        self._cache[key] = pred
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
