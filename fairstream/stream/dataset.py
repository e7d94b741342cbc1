"""FairStream: a torch ``IterableDataset`` that keeps each attribute's negative regard under a cap.

The filtering itself is ``fairstream.core.step.FilterStep``'s; this adapter adds what torch needs:
sharding across workers and ranks, look-ahead windows and the cursor. Model calls are batched over
a window of documents; the cap decisions are made when documents are emitted, in input order, so
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

import logging
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from fairstream.core.config import GRANULARITIES, FilterConfig, Granularity, loaded_or_setting
from fairstream.core.step import FilterStep, output_document, remove_spans
from fairstream.core.windows import IndexedDocument
from fairstream.errors import MissingDependencyError
from fairstream.stream.source_state import SourceCursor
from fairstream.stream.tagger import MentionModel
from fairstream.taxonomy import Taxonomy

try:
    import torch
    from torch.utils.data import IterableDataset, get_worker_info
except ImportError as exc:  # torch is the optional extra of this adapter only
    raise MissingDependencyError(
        f"FairStream is a torch IterableDataset and needs torch ({exc}): pip install 'fairstream[torch]'; "
        "without torch use fairstream.core.FilterStep, the datasets/datatrove/Ray adapters or the CLI"
    ) from exc

logger = logging.getLogger(__name__)

__all__ = ["GRANULARITIES", "FairStream", "Granularity", "remove_spans", "source_splits"]
Hook = Callable[[str, dict[str, Any]], None]


class FairStream(IterableDataset):
    """Wrap an iterable of documents and drop negative-regard text beyond a per-attribute cap.

    Args:
        source: documents: dicts (the text under ``text_field``) or strings; a list, a Hugging
            Face ``Dataset``/``IterableDataset``, a generator, any iterable (not a dict or a
            string). Sequences are indexed directly on resume; other iterables are re-read and
            skipped. A source that splits itself between workers (see the module docstring) is
            not split again; document indices are then positions within each worker's part.
        config: the filter's settings (``FilterConfig``; default: its defaults).
        settings: fields of ``FilterConfig`` overriding ``config`` (``cap=0.05``, ``granularity=``,
            ``seed=``, ``lookahead=``, ``on_error=``, ...; see ``FilterConfig`` for each one's
            meaning). ``max_doc_chars=None`` means no limit.
        model: a loaded model (e.g. a ``JointModel``) shared with other streams, or a model folder
            (same as the ``model`` setting); ``None``: the setting (default: the shipped model).
        taxonomy: a loaded taxonomy used instead of the ``taxonomy`` setting, or a shipped taxonomy's
            name or a JSON file (the same as the setting).
        annotate: add an annotation dict to each output document under ``annotation_field``.
        hooks: callables ``hook(original_text, annotation)`` run for every document (e.g. the
            co-occurrence sidecar's ``consume``).
        rank, world_size: DDP position; ``None`` reads ``torch.distributed`` if initialised (when the
            stream is made, else when it is iterated).
        locate: names document ``index`` in messages (e.g. ``file:line``); default ``document {index}``.
        stats_dir: a folder (seen by every worker and rank) where each worker writes its counts when
            its pass ends (``rank-R-worker-W.stats.json``); ``fairstream.io.stats_parts.merge_stats_parts``
            sums them. The totals of a finished epoch: ``loader.state_dict()`` lacks the documents
            a worker dropped after its last yielded one (torchdata snapshots with yielded items).
    """

    def __init__(
        self,
        source: Iterable[Any],
        config: FilterConfig | None = None,
        *,
        model: MentionModel | str | Path | None = None,
        taxonomy: Taxonomy | str | Path | None = None,
        annotate: bool = False,
        annotation_field: str = "fairstream",
        hooks: Sequence[Hook] = (),
        rank: int | None = None,
        world_size: int | None = None,
        locate: Callable[[int], str] | None = None,
        stats_dir: str | Path | None = None,
        **settings: Any,
    ) -> None:
        super().__init__()
        if isinstance(source, Mapping | str | bytes):
            raise TypeError(
                f"source is a {type(source).__name__}, not an iterable of documents (iterating it would "
                "give its keys or characters); pass a list of documents such as [doc], or one split of "
                "a DatasetDict such as ds['train']"
            )
        model = loaded_or_setting(settings, "model", model)
        taxonomy = loaded_or_setting(settings, "taxonomy", taxonomy)
        if settings.get("max_doc_chars", 0) is None:  # None: no limit, as in the text layer
            settings["max_doc_chars"] = 0
        config = config or FilterConfig()
        config = config.replace(**settings) if settings else config
        if (rank is None) != (world_size is None):
            raise ValueError(f"give both rank and world_size or neither (got {rank=}, {world_size=})")
        if world_size is not None and rank is not None and not 0 <= rank < world_size:
            raise ValueError(f"rank={rank} must be in [0, world_size={world_size})")
        self.source = source
        self.config = config
        self.text_field = config.text_field
        self.granularity = config.granularity
        self.annotate = annotate
        self.annotation_field = annotation_field
        self.on_error = config.on_error
        self.lookahead = config.lookahead
        self.hooks = list(hooks)
        self.locate = locate
        self.stats_dir = stats_dir
        if rank is None and torch.distributed.is_available() and torch.distributed.is_initialized():
            # recorded here, in the rank's own process: a DataLoader worker started by "spawn" (the
            # default where fork is unsafe) has no process group and would read every rank's documents
            rank, world_size = torch.distributed.get_rank(), torch.distributed.get_world_size()
        self._rank, self._world_size = rank, world_size
        self.step = FilterStep(config, model=model, taxonomy=taxonomy)
        self.tagger = self.step.tagger
        self.taxonomy = self.step.taxonomy
        self.controller = self.step.controller
        self._next_index = 0  # index (in the whole source) of the next document to emit
        self._resume_index: int | None = None
        # an iterable source's own resume point, nested in our state (indexed sources need none)
        self._cursor = None if _indexable(source) else SourceCursor(source)

    # -- public API --------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Mergeable counts (JSON-able); add several with ``StreamStats.from_dict(a) + ...``."""
        return self.step.stats()

    def state_dict(self) -> dict[str, Any]:
        """Position, tallies, generator and stats: everything needed to resume exactly.

        A source that saves its own position (a Hugging Face ``IterableDataset``, a torchdata node)
        has it nested under ``"source"``: where it resumes (the start of the window to re-read) and
        its own state there; a resumed stream restores it rather than re-reading what came before.
        """
        out = {**self.step.state_dict(), "next_index": self._next_index, "shard": list(self._shard())}
        if self._cursor is not None:
            saved = self._cursor.state_at(self._window_start(self._next_index))
            if saved is not None:
                out["source"] = saved
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from ``state_dict()``; the next iteration continues after the last emitted document."""
        shard = tuple(state.get("shard", self._shard()))
        if shard != self._shard():
            raise ValueError(f"state was saved for shard {shard} but this stream is shard {self._shard()}")
        self.step.load_state_dict(state)
        self._next_index = int(state["next_index"])
        self._resume_index = self._next_index
        if self._cursor is not None:
            self._cursor.restore(state.get("source"))

    # -- iteration ---------------------------------------------------------------------------------
    def _shard(self) -> tuple[int, int]:
        splits_workers, splits_ranks = source_splits(self.source)
        rank, world = (0, 1) if splits_ranks else self._rank_and_world()
        info = None if splits_workers else get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        return rank * workers + worker, world * workers

    def _rank_and_world(self) -> tuple[int, int]:
        """This process's DDP rank and world size: as given, else ``torch.distributed``'s, else ``(0, 1)``."""
        if self._rank is not None and self._world_size is not None:
            return self._rank, self._world_size
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_rank(), torch.distributed.get_world_size()
        return 0, 1

    def _indexed_source(self, start: int) -> Iterator[IndexedDocument]:
        shard, n_shards = self._shard()
        first = start + (shard - start) % n_shards  # the first index >= start in this shard
        src = self.source
        if self._cursor is None:
            for i in range(first, len(src), n_shards):  # type: ignore[arg-type]
                yield IndexedDocument(i, src[i])  # type: ignore[index]
            return
        yield from self._cursor.documents(first, shard, n_shards, self.lookahead * n_shards)

    def _window_start(self, resume: int) -> int:
        """The first document of this shard's window that holds document ``resume`` (or the next one)."""
        shard, n_shards = self._shard()
        local = max(0, (resume - shard + n_shards - 1) // n_shards)
        return shard + (local // self.lookahead) * self.lookahead * n_shards

    def __iter__(self) -> Iterator[Any]:
        resume = self._resume_index if self._resume_index is not None else 0
        if self._resume_index is None:
            self._next_index = 0
        self._resume_index = None
        n_shards = self._shard()[1]
        # Windows sit at fixed positions of this shard (multiples of ``lookahead`` documents), so a
        # resumed stream re-tags exactly the batches the uninterrupted one did: a model whose
        # outputs depend slightly on the batch (dynamic quantization, GPU kernels) decides alike.
        window_start = self._window_start(resume)
        locate = self.locate
        results = self.step.filter_documents(
            self._indexed_source(window_start),
            locate=(lambda d: locate(d.index)) if locate is not None else None,
            hooks=self.hooks,
            annotate=self.annotate,
            emit_from=resume,
        )
        annotation_field = self.annotation_field if self.annotate else None
        try:
            for doc, result in results:
                self._next_index = doc.index + n_shards
                if result.kept:
                    yield output_document(
                        doc.data, result, text_field=self.text_field, annotation_field=annotation_field
                    )
        finally:  # the end of this worker's pass, or a consumer that stopped early (the generator closed)
            self._write_stats_part()

    def _write_stats_part(self) -> None:
        """This process's counts as one part of ``stats_dir`` (named by rank and DataLoader worker).

        A ``StatefulDataLoader`` snapshots a worker's state only with the items it yields, so
        ``loader.state_dict()`` at the end of an epoch lacks the documents a worker read (and dropped)
        after its last kept one; the part is written when the worker's pass ends and has them all.
        """
        if self.stats_dir is None:
            return
        from fairstream.io.stats_parts import write_stats_part

        # the process's own rank and worker, even where the source splits itself (its shard number
        # is then the same in every worker)
        rank, _ = self._rank_and_world()
        info = get_worker_info()
        name = f"rank-{rank:05d}-worker-{info.id if info is not None else 0:03d}"
        write_stats_part(self.stats_dir, name, self.step.counts(), self.config.model)


def _indexable(source: Any) -> bool:
    """Whether documents are read by index (a list, a map-style ``Dataset``): resumed by index too."""
    return isinstance(source, Sequence) or (
        hasattr(source, "__getitem__") and hasattr(source, "__len__") and not isinstance(source, Mapping)
    )


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
