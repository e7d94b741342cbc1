"""Writing outputs atomically (a temporary file, then ``os.replace``): JSON, JSON lines and Parquet."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from fairstream.errors import OutputError
from fairstream.io.shards import ZSTD_FIX, compression_of, is_parquet_name

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

    Failures to create, write, flush, close or move the file raise ``OutputError`` naming ``path``
    (an ``OSError`` raised in the body is taken for a failed write of this file: readers feeding the
    body turn their own errors into ``ShardError``).
    """
    path = Path(path)
    with _writing(path):
        if path.is_dir():
            raise OutputError(f"{path}: is a folder, cannot write a file there")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        f = os.fdopen(fd, mode, encoding=None if "b" in mode else encoding)
        try:
            with _writing(path):  # an OSError of the body is a write of this file that failed
                yield f
            with _writing(path):
                f.flush()
                os.fsync(f.fileno())
                f.close()
        except BaseException:
            # closing flushes what is buffered: a full disk fails again, and must not hide the error
            # that names the file
            with contextlib.suppress(OSError):
                f.close()
            raise
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


def json_line(record: dict[str, Any]) -> bytes:
    r"""``record`` as one UTF-8 JSON line; a record with lone surrogates is written ``\u``-escaped.

    Non-ASCII text is written as is, except in a record whose strings hold lone surrogates (which
    UTF-8 cannot encode): that one is written with ASCII escapes, which read back as the same value.
    """
    try:
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, ensure_ascii=True) + "\n").encode("ascii")


@contextlib.contextmanager
def compressed_output(path: str | Path, raw: IO[bytes]) -> Iterator[IO[bytes]]:
    """Write into ``raw`` compressed as ``path``'s name says (see ``compression_of``).

    Yields ``raw`` itself for a plain name; a gzip (``mtime=0``) or zstd stream otherwise, which is
    finished (not ``raw``) on leaving the block, so the same records give the same bytes.
    """
    kind = compression_of(path)
    if kind is None:
        yield raw
        return
    out: Any
    if kind == "gzip":
        out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
    else:
        try:
            import zstandard
        except ImportError:
            raise OutputError(f"{path}: zstd output; {ZSTD_FIX} to write it") from None
        out = zstandard.ZstdCompressor().stream_writer(raw, closefd=False)
    try:
        yield out
    finally:
        with _writing(Path(path)):
            out.close()


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write records as JSON lines, atomically; returns the count.

    Compressed as the name says (gzip for ``.gz``/``.gzip``, zstd for ``.zst``/``.zstd``, any
    case); each record is a ``json_line``. Only write failures become ``OutputError``: an error
    raised by ``records`` passes unchanged.
    """
    path = Path(path)
    n = 0
    with atomic_write(path, "wb") as raw, compressed_output(path, raw) as out:
        for rec in records:
            line = json_line(rec)
            try:
                out.write(line)
            except OSError as exc:
                raise _output_error(path, exc) from exc
            n += 1
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
    if is_parquet_name(path):
        return write_parquet(path, records, schema=schema, batch_rows=batch_rows)
    return write_jsonl(path, records)
