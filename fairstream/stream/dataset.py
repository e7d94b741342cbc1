"""FairStream: a torch ``IterableDataset`` that keeps each attribute's negative regard under a cap.

Pipeline per document: prefilter -> sentence split + length filter -> keyword mentions -> WSD ->
regard for person mentions -> cap decision. Model calls are batched over a bounded look-ahead
window of documents; the cap decisions are made when documents are emitted, in input order, so
that ``state_dict()`` taken between two documents restores exactly: a resumed stream yields what
the uninterrupted one would have.

Sharding: under ``DataLoader(num_workers=k)`` and DDP ranks the source is split by document index
(document ``i`` goes to shard ``i mod (world_size * k)``), so no document is duplicated or lost.
A source that splits itself is not split again: a Hugging Face ``IterableDataset`` gives each
DataLoader worker its own files (and each rank its part after ``split_dataset_by_node``), and a
torchdata node over a ``DistributedSampler`` reads only its rank's part; such sources are seen
through torchdata node wrappers too. Each worker runs its own cap controller over its own output;
every part obeys the cap, and so does their union.
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from torch.utils.data import IterableDataset, get_worker_info

from fairstream.errors import InvalidDocumentError, option
from fairstream.io import OnError, check_on_error
from fairstream.stream.cap import CapController, UnitCounts, sentence_regard
from fairstream.stream.stats import StreamStats
from fairstream.stream.tagger import MentionModel, TaggedDocument, Tagger
from fairstream.taxonomy import Taxonomy
from fairstream.text import (
    DEFAULT_MAX_DOC_CHARS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_TOKENS,
    LengthFilter,
    SplitterName,
    coerce_text,
)

logger = logging.getLogger(__name__)

Granularity = Literal["sentence", "document"]
GRANULARITIES = ("sentence", "document")
Hook = Callable[[str, dict[str, Any]], None]


class FairStream(IterableDataset):
    """Wrap an iterable of documents and drop negative-regard text beyond a per-attribute cap.

    Args:
        source: documents: dicts (the text under ``text_field``) or strings; a list, a Hugging
            Face ``Dataset``/``IterableDataset``, a generator, any iterable (not a dict or a
            string). Sequences are indexed directly on resume; other iterables are re-read and
            skipped. A source that splits itself between workers (see the module docstring) is
            not split again; document indices are then positions within each worker's part.
        text_field: field holding the text of dict documents.
        id_field: field used to name documents in errors and annotations (optional).
        cap: kept negative share allowed per attribute (default 1%); ``1.0`` tags and counts only.
        caps: per-keyword or per-class caps overriding ``cap``.
        granularity: ``"sentence"`` removes dropped sentences (the rest stays byte-for-byte);
            ``"document"`` drops whole documents.
        seed: seed of the cap controller's generator.
        model: a ``JointModel``, model folder or ``None`` for the shipped ``joint-v2``.
        annotate: add an annotation dict to each output document under ``annotation_field``.
        on_error: ``"raise"`` (default) or ``"skip"`` bad documents (counted in ``stats()``). With
            ``"raise"`` every document before the bad one is yielded first.
        lookahead: documents read ahead to batch model calls; repeated sentences within this window
            (web boilerplate) are judged once.
        cache_size: an extra LRU cache of judged mentions across windows (0 = off). It saves model
            calls on boilerplate spread far apart; the shipped model is batch-invariant, so a
            cached decision equals a recomputed one and resume stays exact.
        batch_size: mentions per model forward pass when ``model`` is a folder or ``None`` (a
            ``JointModel`` passed in keeps its own). Speed only: with a batch-invariant model
            (the shipped one) decisions do not depend on it.
        warmup: kept mentions per attribute after which the share is guaranteed <= cap.
        hooks: callables ``hook(original_text, annotation)`` run for every document (e.g. the
            co-occurrence sidecar's ``consume``).
        rank, world_size: DDP position; ``None`` reads ``torch.distributed`` if initialised.
        locate: names document ``index`` in messages (e.g. ``file:line``); default ``document {index}``.
    """

    def __init__(
        self,
        source: Iterable[Any],
        *,
        text_field: str = "text",
        id_field: str | None = "id",
        cap: float = 0.01,
        caps: Mapping[str, float] | None = None,
        granularity: Granularity = "sentence",
        seed: int = 0,
        model: MentionModel | str | Path | None = None,
        taxonomy: Taxonomy | None = None,
        annotate: bool = False,
        annotation_field: str = "fairstream",
        on_error: OnError = "raise",
        lookahead: int = 256,
        warmup: int = 100,
        cache_size: int = 0,
        batch_size: int = 8,
        min_tokens: int = DEFAULT_MIN_TOKENS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_doc_chars: int | None = DEFAULT_MAX_DOC_CHARS,
        splitter: SplitterName = "auto",
        hooks: Sequence[Hook] = (),
        rank: int | None = None,
        world_size: int | None = None,
        locate: Callable[[int], str] | None = None,
    ) -> None:
        super().__init__()
        if isinstance(source, Mapping | str | bytes):
            raise TypeError(
                f"source is a {type(source).__name__}, not an iterable of documents (iterating it would "
                "give its keys or characters); pass a list of documents such as [doc], or one split of "
                "a DatasetDict such as ds['train']"
            )
        if granularity not in GRANULARITIES:
            raise ValueError(f"granularity={granularity!r} is not one of {GRANULARITIES}")
        check_on_error(on_error)
        if lookahead < 1:
            raise ValueError(f"lookahead={lookahead} must be >= 1")
        if (rank is None) != (world_size is None):
            raise ValueError(f"give both rank and world_size or neither (got {rank=}, {world_size=})")
        if world_size is not None and rank is not None and not 0 <= rank < world_size:
            raise ValueError(f"rank={rank} must be in [0, world_size={world_size})")
        self.source = source
        self.text_field = text_field
        self.id_field = id_field
        self.granularity = granularity
        self.annotate = annotate
        self.annotation_field = annotation_field
        self.on_error = on_error
        self.lookahead = lookahead
        self.max_doc_chars = max_doc_chars
        self.hooks = list(hooks)
        self.locate = locate
        self._rank, self._world_size = rank, world_size
        self.tagger = Tagger(
            model,
            taxonomy=taxonomy,
            splitter=splitter,
            length_filter=LengthFilter(min_tokens, max_tokens),
            cache_size=cache_size,
            batch_size=batch_size,
        )
        self.taxonomy = self.tagger.taxonomy
        self.controller = CapController(cap, caps=caps, taxonomy=self.taxonomy, warmup=warmup, seed=seed)
        self._stats = StreamStats()
        self._next_index = 0  # index (in the whole source) of the next document to emit
        self._resume_index: int | None = None

    # -- public API --------------------------------------------------------------------------------
    def add_hook(self, hook: Hook) -> None:
        """Run ``hook(original_text, annotation)`` for every document."""
        self.hooks.append(hook)

    def stats(self) -> dict[str, Any]:
        """Mergeable counts (JSON-able); add several with ``StreamStats.from_dict(a) + ...``."""
        out = self._stats.to_dict()
        out["counters"]["model_calls"] = self.tagger.model_calls
        out["counters"]["mentions_predicted"] = self.tagger.mentions_predicted
        out["counters"]["cache_hits"] = self.tagger.cache_hits
        out["seconds"] = {k: round(v, 3) for k, v in self.tagger.seconds.items()}
        return out

    def state_dict(self) -> dict[str, Any]:
        """Position, tallies, generator and stats: everything needed to resume exactly."""
        return {
            "next_index": self._next_index,
            "controller": self.controller.state_dict(),
            "stats": self._stats.to_dict(),
            "shard": list(self._shard()),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from ``state_dict()``; the next iteration continues after the last emitted document."""
        shard = tuple(state.get("shard", self._shard()))
        if shard != self._shard():
            raise ValueError(f"state was saved for shard {shard} but this stream is shard {self._shard()}")
        self.controller.load_state_dict(state["controller"])
        self._stats = StreamStats.from_dict(state["stats"])
        self._next_index = int(state["next_index"])
        self._resume_index = self._next_index

    # -- iteration ---------------------------------------------------------------------------------
    def _shard(self) -> tuple[int, int]:
        splits_workers, splits_ranks = source_splits(self.source)
        rank, world = self._rank, self._world_size
        if splits_ranks:
            rank, world = 0, 1
        elif rank is None or world is None:
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
            else:
                rank, world = 0, 1
        info = None if splits_workers else get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        return rank * workers + worker, world * workers

    def _indexed_source(self, start: int) -> Iterator[tuple[int, Any]]:
        shard, n_shards = self._shard()
        first = start + (shard - start) % n_shards  # the first index >= start in this shard
        src = self.source
        if isinstance(src, Sequence) or (
            hasattr(src, "__getitem__") and hasattr(src, "__len__") and not isinstance(src, Mapping)
        ):
            for i in range(first, len(src), n_shards):  # type: ignore[arg-type]
                yield i, src[i]
            return
        for i, doc in enumerate(itertools.islice(src, first, None), start=first):
            if (i - shard) % n_shards == 0:
                yield i, doc

    def __iter__(self) -> Iterator[Any]:
        resume = self._resume_index if self._resume_index is not None else 0
        if self._resume_index is None:
            self._next_index = 0
        self._resume_index = None
        shard, n_shards = self._shard()
        # Windows sit at fixed positions of this shard (multiples of ``lookahead`` documents), so a
        # resumed stream re-tags exactly the batches the uninterrupted one did: dynamic int8
        # quantization makes model outputs depend slightly on the batch they were computed in.
        local = max(0, (resume - shard + n_shards - 1) // n_shards)
        window_start = shard + (local // self.lookahead) * self.lookahead * n_shards
        source = self._indexed_source(window_start)
        while True:
            window: list[tuple[int, Any]] = []
            try:
                for item in source:
                    window.append(item)
                    if len(window) >= self.lookahead:
                        break
            except Exception:
                # the source failed (e.g. a corrupt shard): emit what it gave before the error first
                yield from self._process_window(window, n_shards, resume)
                raise
            yield from self._process_window(window, n_shards, resume)
            if len(window) < self.lookahead:
                return

    def _process_window(self, window: list[tuple[int, Any]], n_shards: int, emit_from: int) -> Iterator[Any]:
        if not window:
            return
        texts: list[str | InvalidDocumentError] = [self._text_of(index, doc) for index, doc in window]
        tagged_iter = iter(self.tagger.tag_batch([t for t in texts if isinstance(t, str)]))
        # everything that changes state happens here, document by document, so that a state_dict
        # taken after any yielded document describes exactly what was emitted
        for (index, doc), text in zip(window, texts, strict=True):
            if index < emit_from:  # emitted before a resume; tagged again only to rebuild the batch
                if isinstance(text, str):
                    next(tagged_iter)
                continue
            if isinstance(text, InvalidDocumentError) and self.on_error == "raise":
                raise text  # after every document before it; the state still points at this one
            self._next_index = index + n_shards
            self._stats.counters["docs_in"] += 1
            if isinstance(text, InvalidDocumentError):
                self._stats.skipped[text.reason] += 1
                logger.warning("skipped %s", text.problem)
                continue
            out = self._emit(index, doc, text, next(tagged_iter))
            if out is not None:
                yield out

    def _doc_id(self, index: int, doc: Any) -> str:
        name = self.locate(index) if self.locate is not None else f"document {index}"
        if self.id_field and isinstance(doc, Mapping) and doc.get(self.id_field) is not None:
            return f"{name} (id={doc[self.id_field]!r})"
        return name

    def _text_of(self, index: int, doc: Any) -> str | InvalidDocumentError:
        """The document's text, or the error that makes it unusable (raised when it is reached)."""
        try:
            if isinstance(doc, Mapping):
                if self.text_field not in doc:
                    raise InvalidDocumentError(
                        f"{self._doc_id(index, doc)}: no field {self.text_field!r} (fields: {sorted(doc)[:10]})",
                        reason="missing-field",
                        fix=f"set {option('text_field')} or pass {option('on_error', 'skip')}",
                    )
                value = doc[self.text_field]
            else:
                value = doc
            return coerce_text(
                value,
                where=f"{self._doc_id(index, doc)} field {self.text_field!r}",
                max_chars=self.max_doc_chars,
            )
        except InvalidDocumentError as exc:
            return exc

    def _emit(self, index: int, doc: Any, text: str, tagged: TaggedDocument) -> Any:
        stats = self._stats
        if not text.strip():
            stats.counters["docs_empty"] += 1
        if tagged.scan.has_keyword:
            stats.counters["docs_with_keyword"] += 1
        stats.counters["sentences_candidate"] += len(tagged.sentences)
        stats.counters["sentences_out_of_length"] += tagged.scan.n_mention_sentences_out_of_length
        sentence_units: list[UnitCounts] = []
        for ts in tagged.sentences:
            per_attr: dict[str, list[str]] = {}
            for m, p in zip(ts.sentence.mentions, ts.predictions, strict=True):
                stats.attr(m.keyword)["mentions"] += 1
                if p.person and p.regard is not None:
                    per_attr.setdefault(m.keyword, []).append(p.regard)
            unit = UnitCounts()
            for kw, regards in per_attr.items():
                r = sentence_regard(regards)
                unit.add(kw, r)
                a = stats.attr(kw)
                a["person_sentences"] += 1
                a["before"][r] += 1
            sentence_units.append(unit)
        decisions = self._decide(sentence_units)
        dropped_spans = []
        for ts, unit, (keep, _) in zip(tagged.sentences, sentence_units, decisions, strict=True):
            for kw, counts in unit.by_attr.items():
                r = next(k for k, v in counts.items() if v)
                if keep:
                    stats.attr(kw)["after"][r] += 1
                else:
                    stats.attr(kw)["dropped"] += 1
            if not keep:
                stats.counters["sentences_dropped"] += 1
                dropped_spans.append((ts.sentence.start, ts.sentence.end))
        new_text = remove_spans(text, dropped_spans) if dropped_spans else text
        doc_dropped = bool(dropped_spans) and (self.granularity == "document" or not new_text.strip())
        annotation = (
            self._annotation(index, doc, tagged, decisions) if (self.annotate or self.hooks) else None
        )
        if annotation is not None:
            # hooks count documents out from this, so their counts equal stats()["counters"]["docs_out"]
            annotation["doc_kept"] = not doc_dropped
        if self.hooks and annotation is not None:
            # hooks also get each sentence's NLTK tokens, so the sidecar need not tokenize again
            sentences = [
                {**s, "tokens": ts.sentence.tokens}
                for s, ts in zip(annotation["sentences"], tagged.sentences, strict=True)
            ]
            for hook in self.hooks:
                hook(text, {**annotation, "sentences": sentences})
        if doc_dropped:
            stats.counters["docs_dropped"] += 1
            return None
        stats.counters["docs_out"] += 1
        if dropped_spans:
            stats.counters["docs_modified"] += 1
        if isinstance(doc, Mapping):
            out = dict(doc)
            out[self.text_field] = new_text
        elif self.annotate:
            out = {self.text_field: new_text}
        else:
            return new_text
        if self.annotate:
            out[self.annotation_field] = annotation
        return out

    def _decide(self, units: list[UnitCounts]) -> list[tuple[bool, str]]:
        if self.granularity == "sentence":
            return [self.controller.decide(u) for u in units]
        doc_unit = UnitCounts()
        for u in units:
            for kw, counts in u.by_attr.items():
                for r, c in counts.items():
                    doc_unit.add(kw, r, c)
        keep, reason = self.controller.decide(doc_unit)
        # a dropped document drops all its sentences, so the stats agree with the controller's tallies
        return [(keep, reason if keep or u.negative_attributes else "document-dropped") for u in units]

    def _annotation(
        self, index: int, doc: Any, tagged: TaggedDocument, decisions: list[tuple[bool, str]]
    ) -> dict[str, Any]:
        doc_id = doc.get(self.id_field) if (self.id_field and isinstance(doc, Mapping)) else None
        sentences = []
        for ts, (keep, reason) in zip(tagged.sentences, decisions, strict=True):
            mentions = []
            for m, p in zip(ts.sentence.mentions, ts.predictions, strict=True):
                d = m.to_dict()
                d.update(
                    {
                        "wsd_score": round(p.wsd_score, 4),
                        "person": p.person,
                        "regard": p.regard,
                        "regard_probs": [round(x, 4) for x in p.regard_probs],
                    }
                )
                mentions.append(d)
            sentences.append(
                {
                    "start": ts.sentence.start,
                    "end": ts.sentence.end,
                    "n_tokens": ts.sentence.n_tokens,
                    "kept": keep,
                    "reason": reason,
                    "mentions": mentions,
                }
            )
        return {
            "doc_index": index,
            "id": doc_id,
            "taxonomy": self.taxonomy.name,
            "model": self.tagger.model.name,
            "granularity": self.granularity,
            "sentences": sentences,
        }


def source_splits(source: Any) -> tuple[bool, bool]:
    """Whether ``source`` splits its documents itself: ``(between DataLoader workers, between ranks)``.

    A Hugging Face ``IterableDataset`` gives each worker its own files, and each rank its part once
    ``split_dataset_by_node`` was applied; a torchdata ``SamplerWrapper`` over a
    ``DistributedSampler`` reads only its rank's part. torchdata nodes are seen through.
    """
    seen: set[int] = set()
    while id(source) not in seen:
        seen.add(id(source))
        hf = sys.modules.get("datasets")
        if hf is not None and isinstance(source, hf.IterableDataset):
            return True, getattr(source, "_distributed", None) is not None
        if not type(source).__module__.startswith("torchdata.nodes"):
            break
        sampler = getattr(source, "sampler", None)
        if isinstance(sampler, torch.utils.data.DistributedSampler):
            return False, True
        source = next(
            (getattr(source, a) for a in ("iterable", "source", "root") if hasattr(source, a)), None
        )
    return False, False


def remove_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """Remove sentence spans and the whitespace after each (before it, for a final sentence).

    Everything else, including the whitespace between kept sentences, is kept byte-for-byte.
    """
    out, pos = [], 0
    for start, end in sorted(spans):
        stop = end
        while stop < len(text) and text[stop].isspace():
            stop += 1
        if stop == len(text):  # last sentence: eat the whitespace before it instead
            while start > pos and text[start - 1].isspace():
                start -= 1
        out.append(text[pos:start])
        pos = stop
    out.append(text[pos:])
    return "".join(out)
