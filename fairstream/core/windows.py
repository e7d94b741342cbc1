"""Windows of a document stream: the unit the model is called on, read one ahead where it helps."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Document(Protocol):
    """A document in stream order: its ``index`` in the stream and its ``data`` (a dict or a string)."""

    @property
    def index(self) -> int:
        """The document's position in the stream (0-based)."""
        ...

    @property
    def data(self) -> Any:
        """The document itself."""
        ...


@dataclass(frozen=True)
class IndexedDocument:
    """The plain ``Document``: an index and the document."""

    index: int
    data: Any


def lookahead_windows(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of ``size`` items (the last may be shorter), read lazily.

    If reading fails (e.g. a corrupt shard), the items read before the error come out first as a
    shorter window, then the error.
    """
    source = iter(items)
    while True:
        window: list[T] = []
        try:
            for item in source:
                window.append(item)
                if len(window) >= size:
                    break
        except Exception as exc:
            if window:
                yield window
            raise exc
        if window:
            yield window
        if len(window) < size:
            return


def read_one_ahead(items: Iterator[T]) -> Iterator[tuple[T, T | None]]:
    """Each item with the one after it (``None`` after the last), read before the item is handed out.

    If reading the next item fails, the current one is handed out first (with ``None``) and the
    error raised after it, so nothing read before a corrupt record is lost.
    """
    try:
        current = next(items)
    except StopIteration:
        return
    while True:
        try:
            following = next(items)
        except StopIteration:
            yield current, None
            return
        except Exception as exc:
            yield current, None
            raise exc
        yield current, following
        current = following
