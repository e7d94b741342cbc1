"""Stream a shard's records with bounded memory, from any record on, with the bytes read so far.

``fairstream.io.iter_records`` reads the same formats with the same error messages; this reader
adds what the offline job needs on top: the position in the file (for progress in MB), skipping
the first ``start`` records cheaply (resume inside a shard: JSON lines are counted, not parsed;
Parquet batches before the start are not converted) and small Parquet batches, so a shard of
long documents never sits in memory whole.
"""

from __future__ import annotations

import gzip
import json
import logging
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairstream.errors import ShardError, option
from fairstream.io import Skipped

logger = logging.getLogger(__name__)

PARQUET_BATCH_ROWS = 256


@dataclass(frozen=True)
class Record:
    """One record: its 0-based ``index`` among the shard's good records, 1-based ``line`` (row)."""

    index: int
    line: int
    data: dict[str, Any]
    position: int  # input bytes read when this record was read (approximate for compressed input)


class ShardReader:
    """Records of a ``.jsonl``, ``.jsonl.gz``/``.json.gz`` or ``.parquet`` shard, streamed.

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
        """Whether the shard is Parquet (else JSON lines)."""
        return self.path.name.endswith(".parquet")

    def records(self, start: int = 0) -> Iterator[Record]:
        """Records from the ``start``-th good record on (bad lines before it are skipped silently)."""
        if self.is_parquet:
            yield from self._parquet(start)
        else:
            yield from self._jsonl(start)

    def parquet_schema(self) -> Any:
        """The Arrow schema of a Parquet shard (outputs keep it)."""
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.path).schema_arrow

    # -- JSON lines ------------------------------------------------------------------------------
    def _jsonl(self, start: int) -> Iterator[Record]:
        lineno = index = 0
        with open(self.path, "rb") as raw:
            stream: Any = gzip.GzipFile(fileobj=raw) if self.path.name.endswith(".gz") else raw
            try:
                for raw_line in stream:
                    lineno += 1
                    if not raw_line.strip():
                        continue
                    obj = self._parse(raw_line, lineno, quiet=index < start)
                    if obj is None:
                        continue
                    if index >= start:
                        yield Record(index, lineno, obj, raw.tell())
                    index += 1
            except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
                self._bad(
                    f"{self.path}: corrupt or truncated after line {lineno} ({type(exc).__name__}: {exc}); "
                    f"{index} documents were read, the rest of the file is lost: re-download or "
                    "regenerate it",
                    reason="unreadable-shard",
                )

    def _parse(self, raw_line: bytes, lineno: int, *, quiet: bool) -> dict[str, Any] | None:
        try:
            obj = json.loads(raw_line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            problem = f"invalid UTF-8 ({exc.reason} at byte {exc.start})"
        except json.JSONDecodeError as exc:
            problem = f"invalid JSON ({exc.msg} at column {exc.colno})"
        else:
            if isinstance(obj, dict):
                return obj
            problem = f"expected a JSON object, got {type(obj).__name__}"
        self._bad(f"{self.path}:{lineno}: {problem}", quiet=quiet)
        return None

    # -- Parquet ----------------------------------------------------------------------------------
    def _parquet(self, start: int) -> Iterator[Record]:
        import pyarrow.parquet as pq

        row = 0
        try:
            pf = pq.ParquetFile(self.path)
            total = max(1, pf.metadata.num_rows)
            for batch in pf.iter_batches(batch_size=self.batch_rows):
                if row + batch.num_rows <= start:
                    row += batch.num_rows
                    continue
                for record in batch.to_pylist():
                    if row >= start:
                        yield Record(row, row + 1, record, (row + 1) * self.size // total)
                    row += 1
        except ShardError:
            raise
        except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
            self._bad(
                f"{self.path}: unreadable Parquet after row {row} ({type(exc).__name__}: {exc}); "
                f"{row} documents were read, the rest of the file is lost: re-download or regenerate it",
                reason="unreadable-shard",
            )

    def _bad(self, message: str, *, reason: str = "bad-record", quiet: bool = False) -> None:
        if self.on_error == "raise":
            raise ShardError(f"{message}; pass {option('on_error', 'skip')} to count and skip bad records")
        if not quiet:  # a resumed shard does not count the bad lines before its checkpoint twice
            logger.warning("skipping: %s", message)
            self.skipped.append(Skipped(message, reason))
        return None
