"""Finding and reading document shards, and writing outputs atomically.

``find_shards`` expands input files and folders into the shards to read, following symlinked
folders and files, and lists every thing under an input folder it does not read with the reason.
Shards are JSON lines (plain, gzip or zstd, chosen by the name's suffix, matched
case-insensitively) or Parquet. ``iter_records`` yields ``(line, record)`` pairs (the 1-based line
of a JSON-lines file, the 1-based row of a Parquet file) and raises ``ShardError`` naming the file
and the line for corrupt or truncated input; with ``on_error="skip"`` bad lines are counted
instead, and a shard that cannot be read to its end is one error that says how many documents
were read before it (``jsonl_rows`` and ``parquet_rows`` hold these messages for every reader).
Writers write to a temporary file in the target folder and ``os.replace`` it, so an interrupted
run never leaves a half-written output behind; a write that fails (no permission, disk full)
raises ``OutputError`` naming the path.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import json
import logging
import os
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
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


SHARD_SUFFIXES = (
    ".jsonl",
    ".jsonl.gz",
    ".json.gz",
    ".jsonl.gzip",
    ".json.gzip",
    ".jsonl.zst",
    ".json.zst",
    ".jsonl.zstd",
    ".json.zstd",
    ".parquet",
)
"""Names read as shards in a folder, matched case-insensitively (``.gzip`` is gzip like ``.gz``,
``.zstd`` zstd like ``.zst``)."""
RUN_MARKER_FILES = ("_manifest.json", "_state.json", "_annotate.json")
"""A folder holding one of these is a fairstream output folder: never searched for input shards."""
PARQUET_BATCH_ROWS = 256
_SHORT_SUFFIXES = ".jsonl, .jsonl.gz, .jsonl.zst, .json.gz, .parquet, ..."
_ZSTD_FIX = "pip install zstandard (or 'fairstream[zstd]')"


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


# -- finding shards --------------------------------------------------------------------------------
def is_shard_name(name: str) -> bool:
    """Whether a file of this name is read when found in an input folder (``SHARD_SUFFIXES``)."""
    return name.lower().endswith(SHARD_SUFFIXES)


def is_parquet_name(path: str | Path) -> bool:
    """Whether ``path`` names a Parquet file (``.parquet``, any case); everything else is JSON lines."""
    return Path(path).name.lower().endswith(".parquet")


def compression_of(path: str | Path) -> Literal["gzip", "zstd"] | None:
    """The compression a JSON-lines file's name says: ``.gz``/``.gzip`` gzip, ``.zst``/``.zstd`` zstd.

    Matched case-insensitively; any other name is plain text.
    """
    name = Path(path).name.lower()
    if name.endswith((".gz", ".gzip")):
        return "gzip"
    if name.endswith((".zst", ".zstd")):
        return "zstd"
    return None


@dataclass(frozen=True)
class ShardListing:
    """What ``find_shards`` found.

    Attributes:
        shards: each input file once, in order, as an absolute path the way the user reaches it
            (``os.path.abspath``: symlinks are not resolved).
        names: each shard's path relative to the shards' common folder, computed on those
            unresolved paths, so a symlink keeps its own name; distinct shards get distinct names.
        skipped: one line ``"PATH: why"`` per thing under an input folder that is not read (not a
            shard, a fairstream output folder, a symlink loop, a file already read, ...).
    """

    shards: list[Path]
    names: list[Path]
    skipped: list[str]


def find_shards(inputs: Iterable[str | Path], *, exclude: Sequence[str | Path] = ()) -> ShardListing:
    """Expand files and folders into the shards to read, and say what is not read and why.

    Folders are searched recursively in sorted order, following symlinked folders and files (a
    folder reached again, through a loop or another link, is read once). Files named with one of
    ``SHARD_SUFFIXES`` (any case) are read; hidden files and folders (names starting with ``.``,
    such as writers' temporary files) are passed over, the folders with a line in ``skipped``;
    plain ``.json`` files are not read (datasets keep metadata in them) and, like every other file
    not read, get a line in ``skipped``. So does a folder holding one of ``RUN_MARKER_FILES`` (an
    earlier run's output, not searched) and a file reached again (through a link, or a hard link).

    A file given directly is read whatever its name: as Parquet if it ends in ``.parquet``, else as
    JSON lines (gzip or zstd by its suffix, see ``compression_of``).

    ``exclude``: folders never read, compared on resolved paths (a run's own output folder): they
    are passed over inside input folders, and an input file or folder inside one is refused.

    Raises ``ShardError`` for an input that does not exist, an input inside ``exclude``, and when
    no shard is found (the message says what was skipped).
    """
    inputs = list(inputs)
    walk = _ShardWalk([Path(os.path.realpath(e)) for e in exclude])
    for item in inputs:
        walk.add_input(item)
    if not walk.shards:
        message = f"no shards ({_SHORT_SUFFIXES}) found in {[str(i) for i in inputs]}"
        if walk.skipped:
            shown = "; ".join(walk.skipped[:3]) + ("; ..." if len(walk.skipped) > 3 else "")
            message += f"; {len(walk.skipped)} skipped: {shown}"
        raise ShardError(message)
    return ShardListing(walk.shards, relative_names(walk.shards), walk.skipped)


class _ShardWalk:
    """The state of one ``find_shards`` call: shards and skip lines so far, files and folders seen."""

    def __init__(self, excluded: list[Path]) -> None:
        self.excluded = excluded
        self.shards: list[Path] = []
        self.skipped: list[str] = []
        self.files: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) -> the path it was read as
        self.folders: dict[tuple[int, int], str] = {}

    def add_input(self, item: str | Path) -> None:
        shown = str(item)
        path = os.path.abspath(item)
        try:
            st = os.stat(path)
        except OSError:
            raise ShardError(f"{shown}: no such file or folder") from None
        inside = self._excluded(os.path.realpath(path))
        if inside is not None:
            where = "is" if Path(os.path.realpath(path)) == inside else "is inside"
            raise ShardError(
                f"{shown}: {where} the output folder {inside}, which is never read as input; name "
                f"another input or another output folder ({option('output_dir')})"
            )
        if os.path.isdir(path):
            self._walk(path, shown, st, ())
        elif os.path.isfile(path):
            self._add_file(path, shown, st)
        else:
            raise ShardError(f"{shown}: not a file or folder")

    def _excluded(self, real: str) -> Path | None:
        """The excluded folder that ``real`` (a resolved path) is or lies in, if any."""
        p = Path(real)
        return next((e for e in self.excluded if p == e or e in p.parents), None)

    def _add_file(self, path: str, shown: str, st: os.stat_result) -> None:
        key = (st.st_dev, st.st_ino)
        if key in self.files:
            self.skipped.append(f"{shown}: the same file as {self.files[key]}, read once")
            return
        self.files[key] = shown
        self.shards.append(Path(path))

    def _walk(
        self, folder: str, shown: str, st: os.stat_result, ancestors: tuple[tuple[int, int], ...]
    ) -> None:
        key = (st.st_dev, st.st_ino)
        if key in ancestors:
            self.skipped.append(f"{shown}: symlink loop (back to {self.folders[key]}), not read again")
            return
        if key in self.folders:
            self.skipped.append(f"{shown}: the same folder as {self.folders[key]}, read once")
            return
        self.folders[key] = shown
        inside = self._excluded(os.path.realpath(folder))
        if inside is not None:
            self.skipped.append(f"{shown}: the output folder, not read as input")
            return
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            self.skipped.append(f"{shown}: cannot be listed ({exc.strerror or exc})")
            return
        marker = next((e.name for e in entries if e.name in RUN_MARKER_FILES), None)
        if marker is not None:
            self.skipped.append(
                f"{shown}: a fairstream output folder (holds {marker}), not searched; name its data "
                "folder to read its outputs"
            )
            return
        for entry in entries:
            self._entry(entry, os.path.join(shown, entry.name), (*ancestors, key))

    def _entry(self, entry: os.DirEntry[str], shown: str, ancestors: tuple[tuple[int, int], ...]) -> None:
        try:
            is_dir = entry.is_dir()  # follows symlinks
            is_file = not is_dir and entry.is_file()
            st = entry.stat() if is_dir or is_file else None
        except OSError as exc:
            self.skipped.append(f"{shown}: cannot be read ({exc.strerror or exc})")
            return
        if entry.name.startswith("."):
            if is_dir:
                self.skipped.append(f"{shown}: a hidden folder, not searched")
            return  # hidden files: writers' temporary files and the like
        if st is None:
            why = "a symlink to nothing (missing target or a loop)" if entry.is_symlink() else "not a file"
            self.skipped.append(f"{shown}: {why}")
            return
        if is_dir:
            self._walk(entry.path, shown, st, ancestors)
            return
        if not is_shard_name(entry.name):
            if entry.name.lower().endswith(".json"):
                why = "plain .json is not read (datasets keep metadata in it); name it .jsonl if it holds JSON lines"
            else:
                why = f"not a shard ({_SHORT_SUFFIXES})"
            self.skipped.append(f"{shown}: {why}")
            return
        if entry.is_symlink():
            inside = self._excluded(os.path.realpath(entry.path))
            if inside is not None:
                self.skipped.append(f"{shown}: links into the output folder {inside}, not read as input")
                return
        self._add_file(entry.path, shown, st)


def list_shards(inputs: Iterable[str | Path]) -> list[Path]:
    """The shards of ``find_shards(inputs)``: absolute paths, each file once, folders' sorted."""
    return find_shards(inputs).shards


def relative_names(shards: Iterable[str | Path]) -> list[Path]:
    """Each shard's path relative to the shards' common folder: distinct files get distinct names.

    ``a/000.jsonl.gz`` and ``b/000.jsonl.gz`` keep their folders; a single shard is its file name.
    Paths are made absolute without resolving symlinks, so a link is named by its own path.
    """
    paths = [Path(os.path.abspath(s)) for s in shards]
    if not paths:
        return []
    root = Path(os.path.commonpath([p.parent for p in paths]))
    return [p.relative_to(root) for p in paths]


# -- reading ---------------------------------------------------------------------------------------
BadRecord = Callable[[str, str, bool], None]
"""``bad(message, reason, quiet)``: raise for a bad record, or count it (``quiet``: already counted)."""


def _zstandard(path: Path) -> Any:
    try:
        import zstandard
    except ImportError:
        raise ShardError(f"{path}: zstd-compressed; {_ZSTD_FIX} to read it") from None
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
            raise OutputError(f"{path}: zstd output; {_ZSTD_FIX} to write it") from None
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
