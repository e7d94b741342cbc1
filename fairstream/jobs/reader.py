"""Stream a shard's records with bounded memory, from any record on, with the bytes read so far.

The formats and the error messages are ``fairstream.io``'s (``jsonl_rows``, ``parquet_rows``,
which ``iter_records`` reads through too); this reader adds what the offline job needs on top:
the position in the file (for progress in MB), skipping the first ``start`` records cheaply
(resume inside a shard: JSON lines before it are not yielded and their bad lines not counted
again; Parquet batches before the start are not converted) and small Parquet batches, so a shard
of long documents never sits in memory whole.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairstream.errors import ShardError, option
from fairstream.io import PARQUET_BATCH_ROWS, Skipped, is_parquet_name, jsonl_rows, parquet_rows

logger = logging.getLogger(__name__)

__all__ = ["PARQUET_BATCH_ROWS", "Record", "ShardReader"]


@dataclass(frozen=True)
class Record:
    """One record: its 0-based ``index`` among the shard's good records, 1-based ``line`` (row)."""

    index: int
    line: int
    data: dict[str, Any]
    position: int  # input bytes read when this record was read (approximate for compressed input)


class ShardReader:
    """Records of a JSON-lines (plain, gzip or zstd) or Parquet shard, streamed.

    Args:
        path: the shard.
        on_error: ``"raise"``: a bad line raises ``ShardError`` naming file and line;
            ``"skip"``: it is logged and appended to ``skipped`` and does not count as a record.
        batch_rows: Parquet rows converted to Python at a time.
    """

    def __init__(self, path: str | Path, *, on_error: str = "raise", batch_rows: int = PARQUET_BATCH_ROWS):
        self.path = Path(path)
        if not self.path.is_file():
            raise ShardError(f"{self.path}: file not found")
        self.size = self.path.stat().st_size
        self.on_error = on_error
        self.batch_rows = batch_rows
        self.skipped: list[Skipped] = []

    @property
    def is_parquet(self) -> bool:
        """Whether the shard is Parquet (``.parquet``, any case; else JSON lines)."""
        return is_parquet_name(self.path)

    def records(self, start: int = 0) -> Iterator[Record]:
        """Records from the ``start``-th good record on (bad lines before it are skipped silently)."""
        if self.is_parquet:
            rows = parquet_rows(self.path, self._handle, start, self.batch_rows)
        else:
            rows = jsonl_rows(self.path, self._handle, start)
        for index, line, data, position in rows:
            yield Record(index, line, data, position)

    def parquet_schema(self) -> Any:
        """The Arrow schema of a Parquet shard (outputs keep it)."""
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.path).schema_arrow

    def _handle(self, message: str, reason: str, quiet: bool) -> None:
        self._bad(message, reason=reason, quiet=quiet)

    def _bad(self, message: str, *, reason: str = "bad-record", quiet: bool = False) -> None:
        if self.on_error == "raise":
            raise ShardError(f"{message}; pass {option('on_error', 'skip')} to count and skip bad records")
        if not quiet:  # a resumed shard does not count the bad lines before its checkpoint twice
            logger.warning("skipping: %s", message)
            self.skipped.append(Skipped(message, reason))
        return None
