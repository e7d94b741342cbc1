"""Reading document shards and writing outputs atomically.

Readers yield ``(record_index, record)`` pairs and raise ``ShardError`` naming the file and the
line for corrupt or truncated input; with ``on_error="skip"`` bad lines are counted instead.
Writers write to a temporary file in the target folder and ``os.replace`` it, so an interrupted
run never leaves a half-written output behind.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal

from fairstream.errors import ShardError

logger = logging.getLogger(__name__)

OnError = Literal["raise", "skip"]
ON_ERROR_VALUES = ("raise", "skip")


def check_on_error(on_error: str) -> None:
    """Reject an ``on_error`` value that is not one of ``ON_ERROR_VALUES``."""
    if on_error not in ON_ERROR_VALUES:
        raise ValueError(f"on_error={on_error!r} is not one of {ON_ERROR_VALUES}")


SHARD_SUFFIXES = (".jsonl", ".jsonl.gz", ".json.gz", ".parquet")


def list_shards(inputs: Iterable[str | Path]) -> list[Path]:
    """Expand files and folders into a sorted list of shard files."""
    shards: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            shards.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SHARD_SUFFIXES))
            )
        elif path.is_file():
            shards.append(path)
        else:
            raise ShardError(f"{path}: no such file or folder")
    if not shards:
        raise ShardError(f"no shards ({', '.join(SHARD_SUFFIXES)}) found in {[str(i) for i in inputs]}")
    return shards


def read_jsonl(
    path: str | Path, *, on_error: OnError = "raise", skipped: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a ``.jsonl`` or gzip-compressed ``.jsonl.gz`` file.

    Corrupt lines, non-object lines and truncated gzip streams raise ``ShardError`` with the file
    and line number, or, with ``on_error="skip"``, are logged and appended to ``skipped``.
    """
    check_on_error(on_error)
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    lineno = 0
    try:
        with opener(path, "rb") as raw:
            for raw_line in raw:
                lineno += 1
                try:
                    line = raw_line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    _bad(
                        f"{path}:{lineno}: invalid UTF-8 ({exc.reason} at byte {exc.start})",
                        on_error,
                        skipped,
                    )
                    continue
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    _bad(
                        f"{path}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno})", on_error, skipped
                    )
                    continue
                if not isinstance(obj, dict):
                    _bad(
                        f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}",
                        on_error,
                        skipped,
                    )
                    continue
                yield obj
    except FileNotFoundError:
        raise ShardError(f"{path}: file not found") from None
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
        _bad(
            f"{path}: corrupt or truncated after line {lineno} ({type(exc).__name__}: {exc}); "
            "re-download or regenerate the shard",
            on_error,
            skipped,
        )


def _bad(message: str, on_error: OnError, skipped: list[str] | None) -> None:
    if on_error == "raise":
        raise ShardError(message + "; pass on_error='skip' to count and skip bad records")
    logger.warning("skipping: %s", message)
    if skipped is not None:
        skipped.append(message)


def read_parquet(path: str | Path, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Yield the rows of a Parquet file as dicts, batch by batch."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(columns=columns):
            yield from batch.to_pylist()
    except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
        raise ShardError(f"{path}: unreadable Parquet ({type(exc).__name__}: {exc})") from exc


def read_documents(
    path: str | Path, *, on_error: OnError = "raise", skipped: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield records of any supported shard format."""
    name = str(path)
    if name.endswith(".parquet"):
        yield from read_parquet(path)
    else:
        yield from read_jsonl(path, on_error=on_error, skipped=skipped)


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success it replaces ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_write(path) as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write records as JSON lines (gzip if the name ends in ``.gz``), atomically; returns the count."""
    n = 0
    path = Path(path)
    if path.name.endswith(".gz"):
        with atomic_write(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            for rec in records:
                gz.write((json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
                n += 1
        return n
    with atomic_write(path) as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    return n
