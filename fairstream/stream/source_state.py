"""Where an iterable source can resume by itself, nested in the stream's state as torchdata nests its nodes'.

A source that saves its own position (a Hugging Face ``IterableDataset``: ``state_dict()`` /
``load_state_dict()``; a torchdata node: ``state_dict()`` / ``reset(state)``) is asked for it at the
start of each look-ahead window, and a resumed stream restores it instead of reading and
discarding every document before the resume point. Other iterables are re-read up to that point
(the only way back into a generator).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from fairstream.core.windows import IndexedDocument

logger = logging.getLogger(__name__)

# window starts remembered: the one being emitted, the one read ahead, and one spare
_MARKS_KEPT = 3


def resume_kind(source: Any) -> str | None:
    """How ``source`` saves and restores its own position: ``"node"``, ``"dataset"`` or None (it cannot)."""
    if not callable(getattr(source, "state_dict", None)):
        return None
    nodes = sys.modules.get("torchdata.nodes")
    if nodes is not None and isinstance(source, nodes.BaseNode):
        return "node"
    if callable(getattr(source, "load_state_dict", None)):
        return "dataset"
    return None


class SourceCursor:
    """Reads an iterable source by document index and remembers the source's own state at window starts.

    Args:
        source: the iterable (not indexable) source of a stream.
    """

    def __init__(self, source: Iterable[Any]) -> None:
        self.source = source
        self.kind = resume_kind(source)
        self._marks: dict[int, Any] = {}  # document index -> the source's state before reading it
        self._position: int | None = None  # index of the next document the source will give
        self._restore: Mapping[str, Any] | None = None

    def restore(self, saved: Mapping[str, Any] | None) -> None:
        """Resume the next pass from ``saved`` (``state_at``'s value), if the source can."""
        self._restore = saved if self.kind is not None else None

    def documents(self, first: int, shard: int, n_shards: int, window: int) -> Iterator[IndexedDocument]:
        """This shard's documents from index ``first`` on (``first`` is this shard's and starts a window).

        ``window``: documents of the whole source between two window starts of this shard, at
        which the source's state is remembered.
        """
        self._marks.clear()
        base, it = self._start(first)
        index = base
        while True:
            if self.kind is not None and index >= first and (index - first) % window == 0:
                self._mark(index)
            self._position = index  # the source's next document
            try:
                doc = next(it)
            except StopIteration:
                return
            self._position = index + 1
            if index >= first and (index - shard) % n_shards == 0:
                yield IndexedDocument(index, doc)
            index += 1

    def state_at(self, index: int) -> dict[str, Any] | None:
        """Where the source resumes at or before document ``index``: ``{"index", "state"}``, or None."""
        if self.kind is None:
            return None
        if index in self._marks:
            return {"index": index, "state": self._marks[index]}
        if self._position is not None and self._position <= index:  # nothing read past it yet
            return {"index": self._position, "state": self._state()}
        return None

    # -- the source's own protocol ---------------------------------------------------------------------
    def _start(self, first: int) -> tuple[int, Iterator[Any]]:
        saved, self._restore = self._restore, None
        if saved is not None and int(saved["index"]) <= first:
            if self.kind == "node":
                self.source.reset(saved["state"])  # type: ignore[attr-defined]
            else:
                self.source.load_state_dict(saved["state"])  # type: ignore[attr-defined]
            logger.debug("source restored at document %d", saved["index"])
            return int(saved["index"]), iter(self.source)
        if self.kind == "node":
            self.source.reset()  # type: ignore[attr-defined]  # a new pass starts at the beginning
        return 0, iter(self.source)

    def _state(self) -> Any:
        return self.source.state_dict()  # type: ignore[attr-defined]

    def _mark(self, index: int) -> None:
        self._marks[index] = self._state()
        while len(self._marks) > _MARKS_KEPT:
            del self._marks[min(self._marks)]
