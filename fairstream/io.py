"""Reading document shards and writing outputs atomically.

``iter_records`` yields ``(line, record)`` pairs (the 1-based line of a JSON-lines file, the 1-based
row of a Parquet file) and raises ``ShardError`` naming the file and the line for corrupt or
truncated input; with ``on_error="skip"`` bad lines are counted instead, and a shard that cannot be
read to its end is one error that says how many documents were read before it.
Writers write to a temporary file in the target folder and ``os.replace`` it, so an interrupted
run never leaves a half-written output behind; a write that fails (no permission, disk full)
raises ``OutputError`` naming the path.
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

from fairstream.errors import OutputError, ShardError, option

logger = logging.getLogger(__name__)

OnError = Literal["raise", "skip"]
ON_ERROR_VALUES = ("raise", "skip")


def check_on_error(on_error: str) -> None:
    """Reject an ``on_error`` value that is not one of ``ON_ERROR_VALUES``."""
    if on_error not in ON_ERROR_VALUES:
        raise ValueError(f"on_error={on_error!r} is not one of {ON_ERROR_VALUES}")


SHARD_SUFFIXES = (".jsonl", ".jsonl.gz", ".json.gz", ".parquet")


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


def list_shards(inputs: Iterable[str | Path]) -> list[Path]:
    """Expand files and folders into a list of shard files (each folder's sorted; each file once)."""
    shards: list[Path] = []
    seen: set[Path] = set()
    inputs = list(inputs)
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SHARD_SUFFIXES))
        elif path.is_file():
            found = [path]
        else:
            raise ShardError(f"{path}: no such file or folder")
        for p in found:
            if p.resolve() not in seen:
                seen.add(p.resolve())
                shards.append(p)
    if not shards:
        raise ShardError(f"no shards ({', '.join(SHARD_SUFFIXES)}) found in {[str(i) for i in inputs]}")
    return shards


def relative_names(shards: Iterable[str | Path]) -> list[Path]:
    """Each shard's path relative to the shards' common folder: distinct files get distinct names.

    ``a/000.jsonl.gz`` and ``b/000.jsonl.gz`` keep their folders; a single shard is its file name.
    """
    resolved = [Path(s).resolve() for s in shards]
    if not resolved:
        return []
    root = Path(os.path.commonpath([p.parent for p in resolved]))
    return [p.relative_to(root) for p in resolved]


def iter_records(
    path: str | Path, *, on_error: OnError = "raise", skipped: list[str] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, record)`` of a ``.jsonl``, ``.jsonl.gz``/``.json.gz`` or ``.parquet`` shard.

    ``line`` is 1-based (the row for Parquet). Corrupt lines, non-object lines and shards that end
    early raise ``ShardError`` with the file and line, or, with ``on_error="skip"``, are logged and
    appended to ``skipped`` (as ``Skipped`` messages).
    """
    check_on_error(on_error)
    if str(path).endswith(".parquet"):
        yield from _parquet_records(Path(path), on_error, skipped)
    else:
        yield from _jsonl_records(Path(path), on_error, skipped)


def read_jsonl(
    path: str | Path, *, on_error: OnError = "raise", skipped: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a ``.jsonl`` or gzip-compressed ``.jsonl.gz`` file.

    Corrupt lines, non-object lines and truncated gzip streams raise ``ShardError`` with the file
    and line number, or, with ``on_error="skip"``, are logged and appended to ``skipped``.
    """
    check_on_error(on_error)
    for _, record in _jsonl_records(Path(path), on_error, skipped):
        yield record


def _jsonl_records(
    path: Path, on_error: OnError, skipped: list[str] | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    lineno = n_read = 0
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
                n_read += 1
                yield lineno, obj
    except FileNotFoundError:
        raise ShardError(f"{path}: file not found") from None
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
        _bad(
            f"{path}: corrupt or truncated after line {lineno} ({type(exc).__name__}: {exc}); "
            f"{n_read} documents were read, the rest of the file is lost: re-download or regenerate it",
            on_error,
            skipped,
            reason="unreadable-shard",
        )


def _parquet_records(
    path: Path, on_error: OnError, skipped: list[str] | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow.parquet as pq

    if not path.is_file():
        raise ShardError(f"{path}: file not found")
    row = 0
    try:
        for batch in pq.ParquetFile(path).iter_batches():
            for record in batch.to_pylist():
                row += 1
                yield row, record
    except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
        _bad(
            f"{path}: unreadable Parquet after row {row} ({type(exc).__name__}: {exc}); "
            f"{row} documents were read, the rest of the file is lost: re-download or regenerate it",
            on_error,
            skipped,
            reason="unreadable-shard",
        )


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


TEMP_SUFFIX = ".tmp"


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Turn an ``OSError`` of writing ``path`` into one ``OutputError`` naming the path and the problem."""
    try:
        yield
    except OutputError:
        raise
    except OSError as exc:
        raise _output_error(path, exc) from exc


def _output_error(path: Path, exc: OSError) -> OutputError:
    return OutputError(f"{path}: cannot write ({exc.strerror or exc})")


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success it replaces ``path`` atomically.

    Failures to create, flush or move the file raise ``OutputError`` naming ``path``; writes in the
    body go through ``write_json``/``write_jsonl`` (or the caller's own handling).
    """
    path = Path(path)
    with _writing(path):
        if path.is_dir():
            raise OutputError(f"{path}: is a folder, cannot write a file there")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
            with _writing(path):
                f.flush()
                os.fsync(f.fileno())
        with _writing(path):
            os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are meant to be shared
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def remove_temp_files(folder: str | Path) -> list[Path]:
    """Delete the temporary files that ``atomic_write`` leaves when a run is killed; returns them."""
    removed = []
    for p in Path(folder).rglob(f".*{TEMP_SUFFIX}"):
        if p.is_file():
            p.unlink()
            removed.append(p)
    return removed


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_write(path) as f, _writing(Path(path)):
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write records as JSON lines (gzip if the name ends in ``.gz``), atomically; returns the count.

    Only write failures become ``OutputError``: an error raised by ``records`` passes unchanged.
    """
    path = Path(path)
    n = 0
    with atomic_write(path, "wb") as raw:
        out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if path.name.endswith(".gz") else raw
        try:
            for rec in records:
                line = (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")
                try:
                    out.write(line)
                except OSError as exc:
                    raise _output_error(path, exc) from exc
                n += 1
        finally:
            if out is not raw:
                with _writing(path):
                    out.close()
    return n


def write_parquet(
    path: str | Path,
    records: Iterable[dict[str, Any]],
    *,
    schema: Any = None,
    batch_rows: int | None = None,
) -> int:
    """Write records as Parquet, atomically; returns the count.

    By default the records are read whole and the columns inferred from all of them. With
    ``batch_rows`` they are written ``batch_rows`` at a time (bounded memory): the columns are
    ``schema``'s (an Arrow schema, e.g. the input's) plus any other inferred from the first batch,
    and a later batch that does not fit them raises ``OutputError``. An error raised by
    ``records`` passes unchanged (and leaves no output).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if batch_rows is None:
        rows = list(records)
        with atomic_write(path, "wb") as f, _writing(path):
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), f)
        return len(rows)
    n = 0
    with atomic_write(path, "wb") as f:
        writer: Any = None
        try:
            for rows in _batches(records, batch_rows):
                if writer is None:
                    schema = _extended_schema(rows, schema)
                    with _writing(path):
                        writer = pq.ParquetWriter(f, schema)
                try:
                    table = pa.Table.from_pylist(rows, schema=schema)
                except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                    raise OutputError(
                        f"{path}: records {n + 1}-{n + len(rows)} do not fit the columns of the first "
                        f"{batch_rows} ({exc})"
                    ) from exc
                with _writing(path):
                    writer.write_table(table)
                n += len(rows)
            if writer is None:  # no records: an empty table with the known columns
                with _writing(path):
                    pq.write_table(pa.Table.from_pylist([], schema=schema), f)
        finally:
            if writer is not None:
                with _writing(path):
                    writer.close()
    return n


def _batches(records: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for rec in records:
        batch.append(rec)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _extended_schema(rows: list[dict[str, Any]], schema: Any) -> Any:
    """``schema`` (if any) followed by the columns of ``rows`` it lacks, their types inferred."""
    import pyarrow as pa

    inferred = pa.Table.from_pylist(rows).schema
    if schema is None:
        return inferred
    return pa.schema(list(schema) + [f for f in inferred if f.name not in schema.names])


def write_documents(
    path: str | Path,
    records: Iterable[dict[str, Any]],
    *,
    schema: Any = None,
    batch_rows: int | None = None,
) -> int:
    """Write records in the format the name says (``.parquet``, else JSON lines); returns the count.

    JSON lines are always written one record at a time; ``schema`` and ``batch_rows`` are
    ``write_parquet``'s (``batch_rows`` streams Parquet too).
    """
    if str(path).endswith(".parquet"):
        return write_parquet(path, records, schema=schema, batch_rows=batch_rows)
    return write_jsonl(path, records)
