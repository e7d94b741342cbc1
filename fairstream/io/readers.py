"""Reading shards: ``iter_records`` and the row readers of JSON lines (plain, gzip, zstd) and Parquet."""

from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import json
import logging
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from fairstream.errors import ShardError, option
from fairstream.io.shards import ZSTD_FIX, OnError, check_on_error, compression_of, is_parquet_name

logger = logging.getLogger(__name__)


PARQUET_BATCH_ROWS = 256


class Skipped(str):
    """A skip message (a plain ``str`` for callers) that also says what was lost.

    ``reason`` is ``"bad-record"`` (one line) or ``"unreadable-shard"`` (the rest of a file).
    """

    reason: str

    def __new__(cls, message: str, reason: str = "bad-record") -> Skipped:
        """The message ``message`` tagged with ``reason``."""
        obj = super().__new__(cls, message)
        obj.reason = reason
        return obj


BadRecord = Callable[[str, str, bool], None]
"""``bad(message, reason, quiet)``: raise for a bad record, or count it (``quiet``: already counted)."""


def _zstandard(path: Path) -> Any:
    try:
        import zstandard
    except ImportError:
        raise ShardError(f"{path}: zstd-compressed; {ZSTD_FIX} to read it") from None
    return zstandard


class _ZstdReader(io.RawIOBase):
    """Decompressed bytes of a zstd file (any number of frames), for ``io.BufferedReader``.

    A stream that ends inside a frame raises ``EOFError`` (zstandard's own readers return the
    bytes so far silently), so a truncated file is reported like a truncated gzip file.
    """

    CHUNK = 1 << 16

    def __init__(self, raw: IO[bytes], zstandard: Any) -> None:
        super().__init__()
        self._raw = raw
        self._dctx = zstandard.ZstdDecompressor()
        self._frame: Any = None  # the decompressor of the frame being read, None between frames
        self._buf = b""  # decompressed bytes not handed out yet: self._buf[self._pos:]
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while self._pos >= len(self._buf):
            chunk = self._raw.read(self.CHUNK)
            if not chunk:
                if self._frame is not None:
                    raise EOFError("zstd stream ended inside a frame")
                return 0
            self._buf, self._pos = self._decompress(chunk), 0
        n = min(len(b), len(self._buf) - self._pos)
        b[:n] = self._buf[self._pos : self._pos + n]
        self._pos += n
        return n

    def _decompress(self, data: bytes) -> bytes:
        out = []
        while data:
            if self._frame is None:
                self._frame = self._dctx.decompressobj()
            out.append(self._frame.decompress(data))
            if not self._frame.eof:
                break
            data, self._frame = self._frame.unused_data, None
        return b"".join(out)


@contextlib.contextmanager
def open_shard(path: str | Path) -> Iterator[tuple[Any, IO[bytes]]]:
    """Open a JSON-lines shard: ``(lines, raw)``, the decompressed bytes and the file itself.

    gzip for ``.gz``/``.gzip``, zstd for ``.zst``/``.zstd`` (needs ``zstandard``), plain otherwise
    (see ``compression_of``); ``raw.tell()`` is the position in the file. A missing or unreadable
    file raises ``ShardError``.
    """
    path = Path(path)
    kind = compression_of(path)
    zstandard = _zstandard(path) if kind == "zstd" else None
    try:
        raw = open(path, "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        raise ShardError(f"{path}: file not found") from None
    except OSError as exc:
        raise ShardError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with raw:
        if kind == "gzip":
            with gzip.GzipFile(fileobj=raw) as lines:
                yield lines, raw
        elif kind == "zstd":
            with io.BufferedReader(_ZstdReader(raw, zstandard), buffer_size=_ZstdReader.CHUNK) as zlines:
                yield zlines, raw
        else:
            yield raw, raw


def _read_errors() -> tuple[type[BaseException], ...]:
    """What a corrupt or truncated compressed file raises while it is read."""
    errors: tuple[type[BaseException], ...] = (EOFError, gzip.BadGzipFile, zlib.error, OSError)
    zstandard = sys.modules.get("zstandard")
    return (*errors, zstandard.ZstdError) if zstandard is not None else errors


def jsonl_rows(path: Path, bad: BadRecord, start: int = 0) -> Iterator[tuple[int, int, dict[str, Any], int]]:
    """``(index, line, record, position)`` of a JSON-lines shard from its ``start``-th good record on.

    ``index`` counts good records from 0, ``line`` is 1-based, ``position`` the bytes of the file
    read so far. Blank lines are passed over and a UTF-8 byte order mark before line 1 is dropped.
    A bad line (invalid UTF-8 or JSON, not an object) is handed to ``bad`` (quietly before
    ``start``); so is a file that ends early or is corrupt (reason ``"unreadable-shard"``), with
    how many records were read before it.
    """
    lineno = index = 0
    with open_shard(path) as (lines, raw):
        try:
            for raw_line in lines:
                lineno += 1
                if lineno == 1 and raw_line.startswith(codecs.BOM_UTF8):
                    raw_line = raw_line[len(codecs.BOM_UTF8) :]
                if not raw_line.strip():
                    continue
                obj = _parse_line(raw_line, f"{path}:{lineno}", bad, quiet=index < start)
                if obj is None:
                    continue
                if index >= start:
                    yield index, lineno, obj, raw.tell()
                index += 1
        except _read_errors() as exc:
            bad(
                f"{path}: corrupt or truncated after line {lineno} ({type(exc).__name__}: {exc}); "
                f"{index} documents were read, the rest of the file is lost: re-download or regenerate it",
                "unreadable-shard",
                False,
            )


def _parse_line(raw_line: bytes, where: str, bad: BadRecord, *, quiet: bool) -> dict[str, Any] | None:
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
    bad(f"{where}: {problem}", "bad-record", quiet)
    return None


def parquet_rows(
    path: Path, bad: BadRecord, start: int = 0, batch_rows: int = PARQUET_BATCH_ROWS
) -> Iterator[tuple[int, int, dict[str, Any], int]]:
    """``(index, row, record, position)`` of a Parquet shard from row ``start`` (0-based) on.

    ``row`` is 1-based; ``position`` is the file's size times the share of rows read. Batches of
    ``batch_rows`` rows are converted to Python, those before ``start`` not at all. A file that
    cannot be read to its end is handed to ``bad`` (reason ``"unreadable-shard"``).
    """
    import pyarrow.parquet as pq

    if not path.is_file():
        raise ShardError(f"{path}: file not found")
    size = path.stat().st_size
    row = 0
    try:
        pf = pq.ParquetFile(path)
        total = max(1, pf.metadata.num_rows)
        for batch in pf.iter_batches(batch_size=batch_rows):
            if row + batch.num_rows <= start:
                row += batch.num_rows
                continue
            for record in batch.to_pylist():
                if row >= start:
                    yield row, row + 1, record, (row + 1) * size // total
                row += 1
    except ShardError:
        raise
    except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
        bad(
            f"{path}: unreadable Parquet after row {row} ({type(exc).__name__}: {exc}); "
            f"{row} documents were read, the rest of the file is lost: re-download or regenerate it",
            "unreadable-shard",
            False,
        )


def iter_records(
    path: str | Path, *, on_error: OnError = "raise", skipped: list[str] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, record)`` of a JSON-lines (plain, gzip or zstd) or ``.parquet`` shard.

    ``line`` is 1-based (the row for Parquet). Corrupt lines, non-object lines and shards that end
    early raise ``ShardError`` with the file and line, or, with ``on_error="skip"``, are logged and
    appended to ``skipped`` (as ``Skipped`` messages).
    """
    check_on_error(on_error)
    if is_parquet_name(path):
        yield from _parquet_records(Path(path), on_error, skipped)
    else:
        yield from _jsonl_records(Path(path), on_error, skipped)


def read_jsonl(
    path: str | Path, *, on_error: OnError = "raise", skipped: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSON-lines file (gzip or zstd by its name, see ``compression_of``).

    Corrupt lines, non-object lines and truncated compressed streams raise ``ShardError`` with the
    file and line number, or, with ``on_error="skip"``, are logged and appended to ``skipped``.
    """
    check_on_error(on_error)
    for _, record in _jsonl_records(Path(path), on_error, skipped):
        yield record


def _handler(on_error: OnError, skipped: list[str] | None) -> BadRecord:
    def bad(message: str, reason: str, quiet: bool) -> None:
        _bad(message, on_error, skipped, reason)

    return bad


def _jsonl_records(
    path: Path, on_error: OnError, skipped: list[str] | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    for _, line, record, _ in jsonl_rows(path, _handler(on_error, skipped)):
        yield line, record


def _parquet_records(
    path: Path, on_error: OnError, skipped: list[str] | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    for _, row, record, _ in parquet_rows(path, _handler(on_error, skipped), batch_rows=65_536):
        yield row, record


def _bad(message: str, on_error: OnError, skipped: list[str] | None, reason: str = "bad-record") -> None:
    if on_error == "raise":
        raise ShardError(f"{message}; pass {option('on_error', 'skip')} to count and skip bad records")
    logger.warning("skipping: %s", message)
    if skipped is not None:
        skipped.append(Skipped(message, reason))


def read_parquet(
    path: str | Path, *, on_error: OnError = "raise", skipped: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the rows of a Parquet file as dicts, batch by batch (``on_error`` as in ``iter_records``)."""
    check_on_error(on_error)
    for _, record in _parquet_records(Path(path), on_error, skipped):
        yield record


def read_documents(
    path: str | Path, *, on_error: OnError = "raise", skipped: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield records of any supported shard format (``iter_records`` without the line numbers)."""
    for _, record in iter_records(path, on_error=on_error, skipped=skipped):
        yield record
