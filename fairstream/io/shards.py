"""Which files are shards and in what format, and finding them under the inputs (``find_shards``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fairstream.errors import ShardError, option

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


_SHORT_SUFFIXES = ".jsonl, .jsonl.gz, .jsonl.zst, .json.gz, .parquet, ..."


ZSTD_FIX = "pip install zstandard (or 'fairstream[zstd]')"


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
