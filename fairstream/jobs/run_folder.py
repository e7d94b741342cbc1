"""One run per output folder: its manifest, its lock, and what it never overwrites.

A run's folder holds ``_manifest.json``: the cap's scope, every setting that changes outputs
(``FilterConfig.output_settings``), the job's own (checkpoint interval, annotations folder) and the
identity of each input (its real path, size, modification time and a hash of its first 64 KiB). A
rerun resumes only when all of them agree; otherwise it is refused with one line naming each
difference, before anything in the folder is touched. ``force_restart`` discards the run's own
files and starts over; ``overwrite`` empties a folder that is not a fairstream run (or is one).

A run holds an advisory lock (``fcntl.flock`` on ``.fairstream.lock``) for its whole life: a second
run on the folder is refused, naming the holder (pid, host, start time), and changes nothing. The
kernel releases the lock of a process that died, so the lock file a killed run leaves is taken over.
Writing into the folder, removing a killed run's temporary files included, starts only under it.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
import shutil
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairstream.errors import FairStreamError, OutputError, option
from fairstream.io import RUN_MARKER_FILES, find_shards, remove_temp_files, write_json

if TYPE_CHECKING:
    from fairstream.core.config import FilterConfig

try:
    import fcntl
except ImportError:  # not on a POSIX system: no lock (logged)
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

MANIFEST_FILE = RUN_MARKER_FILES[0]
LOCK_FILE = ".fairstream.lock"
MANIFEST_FORMAT = 1
#: What runs write at the top of their folder: ``force_restart`` removes these and nothing else.
RUN_FILES = (
    "data",
    "attributes",
    "_parts",
    "report",
    "stats.json",
    "summary.txt",
    "counts_before.json",
    "counts_after.json",
    "examples.json",
    "plan.json",
    "_state.json",
    "_annotate.json",
    "_apply.json",
    MANIFEST_FILE,
)
HEAD_BYTES = 64 * 1024
#: What to do after a write failed mid-run (a full disk, say): the run resumes where it stopped.
RESUME_HINT = "free space (or fix the folder) and rerun the same command: it resumes where it stopped"


def input_identity(shards: Sequence[Path], names: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Per input: its output name, real path, size, mtime and the SHA-256 of its first 64 KiB."""
    out = []
    for shard, name in zip(shards, names, strict=True):
        st = shard.stat()
        with open(shard, "rb") as f:
            head = hashlib.sha256(f.read(HEAD_BYTES)).hexdigest()
        out.append(
            {
                "name": str(name),
                "path": str(shard.resolve()),
                "size": st.st_size,
                "mtime_ns": st.st_mtime_ns,
                "head_sha256": head,
            }
        )
    return out


def tag_settings(config: FilterConfig) -> dict[str, Any]:
    """A ``FilterConfig``'s tagging settings, the splitter, model and taxonomy named by what they are.

    The model by the name in its folder's ``config.json`` (``None`` and the default's own name are
    the same model); the taxonomy by its name and a hash of its content (a file edited between two
    runs is another taxonomy).
    """
    from fairstream.models.names import resolve_model_dir
    from fairstream.taxonomy import Taxonomy
    from fairstream.text import SentenceSplitter

    settings = config.output_settings("tag")
    # "auto" is Punkt where NLTK's data is found, else the shipped parameters: they split differently
    settings["splitter"] = SentenceSplitter(config.splitter).resolved_kind()
    model_dir = resolve_model_dir(config.model)
    try:
        settings["model"] = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))["name"]
    except (OSError, ValueError, KeyError):  # the loader names what is wrong with the folder
        settings["model"] = str(model_dir.resolve())
    settings["taxonomy"] = Taxonomy.load(config.taxonomy).identity
    return settings


def new_manifest(
    scope: str,
    config: FilterConfig,
    shards: Sequence[Path],
    names: Sequence[str | Path],
    *,
    decide: bool = True,
    job: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a run: ``decide=False`` for a run that only annotates (no ``"cap"`` section)."""
    from fairstream import __version__

    settings: dict[str, Any] = {"tag": tag_settings(config)}
    if decide:
        settings["cap"] = config.output_settings("cap")
        if scope == "global":  # the global cap decides over the whole corpus: no warm-up
            settings["cap"].pop("warmup")
    return {
        "fairstream_run": MANIFEST_FORMAT,
        "fairstream_version": __version__,
        "scope": scope,
        "settings": settings,
        "job": dict(job or {}),
        "inputs": input_identity(shards, names),
    }


def _flag(key: str) -> str:
    return option(key).rstrip("=")


def _input_differences(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> list[str]:
    before = {i["name"]: i for i in old}
    now = {i["name"]: i for i in new}
    diffs = [f"input {n} is no longer given" for n in before if n not in now]
    diffs += [f"new input {n}" for n in now if n not in before]
    for name in (n for n in now if n in before):
        a, b = before[name], now[name]
        if a["path"] != b["path"]:
            diffs.append(f"input {name} is now {b['path']} (was {a['path']})")
        elif a["size"] != b["size"]:
            diffs.append(f"input {name} changed ({a['size']:,} -> {b['size']:,} bytes)")
        elif a["head_sha256"] != b["head_sha256"]:
            diffs.append(f"input {name} changed (its first bytes differ)")
        elif a["mtime_ns"] != b["mtime_ns"]:
            when = datetime.datetime.fromtimestamp(b["mtime_ns"] / 1e9, datetime.UTC)
            diffs.append(f"input {name} was modified ({when:%Y-%m-%d %H:%M:%S} UTC)")
    return diffs


def manifest_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Everything in which run ``new`` differs from the run ``old`` that its folder holds.

    A settings section that one side lacks is not compared: a run with ``annotate_only`` has no
    ``"cap"`` section, and a later run that decides on its annotations adds one.
    """
    if old.get("scope") != new.get("scope"):
        return [f"{_flag('cap_scope')} was {old.get('scope')}, now {new.get('scope')}"]
    diffs = []
    sections = [(old.get("settings", {}).get(s), new.get("settings", {}).get(s)) for s in ("tag", "cap")]
    sections.append((old.get("job", {}), new.get("job", {})))
    for a, b in sections:
        if a is None or b is None:
            continue
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                diffs.append(f"{_flag(key)} was {a.get(key)!r}, now {b.get(key)!r}")
    return diffs + _input_differences(old.get("inputs", []), new.get("inputs", []))


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of the run in ``folder`` (``None`` when it has none)."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FairStreamError(
            f"{path}: unreadable run manifest ({exc}); pass {option('force_restart')} to start over"
        ) from None
    if not isinstance(data, dict) or data.get("fairstream_run") != MANIFEST_FORMAT:
        raise FairStreamError(
            f"{path}: not a run manifest this fairstream can read; pass {option('force_restart')} to "
            "start over, or choose another output folder"
        )
    return data


class FolderLock:
    """An exclusive advisory lock on ``folder/.fairstream.lock`` naming its holder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise ``OutputError`` naming the run that holds it."""
        if fcntl is None:
            logger.info(
                "no advisory locks on this system: %s is not protected from a second run", self.folder
            )
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot create the run's lock ({exc.strerror or exc})") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder_text(fd)
            os.close(fd)
            raise OutputError(
                f"{self.folder}: in use by another fairstream run ({holder}); wait for it to end, or choose "
                f"another output folder ({_flag('output_dir')})"
            ) from None
        previous = _holder_text(fd, default="")
        if previous:  # its holder died without releasing it (killed): the kernel freed the lock
            logger.info("%s: took over the lock of %s, which is no longer running", self.folder, previous)
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode("utf-8"), 0)
        self._fd = fd

    def release(self) -> None:
        """Let the lock go (its file stays: removing it would race with a run taking it)."""
        if self._fd is None or fcntl is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)  # empty: the next run sees a clean release
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def _holder_text(fd: int, default: str = "holder unknown") -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        return f"pid {data['pid']} on {data['host']}, started {data['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return default


class RunFolder:
    """The output folder of one run (see module docstring).

    Args:
        path: the folder (created when missing).
        overwrite: empty the folder first, whatever it holds.
        force_restart: discard the fairstream run the folder holds (its own files only) and start over.
    """

    def __init__(self, path: str | Path, *, overwrite: bool = False, force_restart: bool = False) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.force_restart = force_restart

    def holds_run(self) -> bool:
        """Whether the folder holds a fairstream run (a manifest, or the files of an older version's)."""
        return any((self.path / m).is_file() for m in RUN_MARKER_FILES)

    def _foreign_entries(self) -> list[str]:
        if not self.path.is_dir() or self.holds_run():
            return []
        return sorted(p.name for p in self.path.iterdir() if p.name != LOCK_FILE)

    def find_inputs(self, inputs: Sequence[str | Path]) -> tuple[list[Path], list[str], list[str]]:
        """The shards of ``inputs``, their output names and what was not read (``find_shards``).

        This folder is never among them. Checked first (``check_placement``): an output folder that
        holds an input, or is a file, or is someone else's, is refused before anything is read.
        """
        self.check_placement(inputs)
        listing = find_shards(inputs, exclude=[self.path])
        return listing.shards, [str(p) for p in listing.names], listing.skipped

    def check_placement(self, inputs: Sequence[str | Path]) -> None:
        """Refuse, before any work, an output folder that is a file, holds an input, or is someone else's."""
        out = self.path
        if out.exists() and not out.is_dir():
            raise OutputError(
                f"{out}: exists and is not a folder; choose another output folder ({_flag('output_dir')})"
            )
        real = out.resolve()
        for item in inputs:
            p = Path(item).resolve()
            if p == real or real in p.parents:
                raise OutputError(
                    f"{out}: holds the input {item}; choose an output folder outside the inputs "
                    f"({_flag('output_dir')})"
                )
        foreign = self._foreign_entries()
        if foreign and not self.overwrite:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise OutputError(
                f"{out}: not empty ({shown}) and not a fairstream output folder; choose a new or empty "
                f"folder, or pass {_flag('overwrite')} to empty it first"
            )

    @contextlib.contextmanager
    def claim(self, manifest: Mapping[str, Any]) -> Iterator[dict[str, Any] | None]:
        """Hold the folder for a run with ``manifest``; yields the manifest of the run it resumes.

        Under the lock: empty or reset the folder as asked, or refuse a resume whose manifest
        differs (one line naming each difference); then remove a killed run's temporary files and
        save ``manifest``.
        """
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(
                f"{self.path}: cannot create the output folder ({exc.strerror or exc})"
            ) from exc
        lock = FolderLock(self.path)
        lock.acquire()
        try:
            old = self._prepare(manifest)
            for tmp in remove_temp_files(self.path):
                logger.info("removed %s, left by an interrupted run", tmp)
            saved: dict[str, Any] = dict(manifest)
            if old is not None:  # a section the new run lacks (annotate-only) keeps what was decided
                saved["settings"] = {**old.get("settings", {}), **manifest.get("settings", {})}
            write_json(self.path / MANIFEST_FILE, saved)
            yield old
        finally:
            lock.release()

    def _prepare(self, manifest: Mapping[str, Any]) -> dict[str, Any] | None:
        if self.overwrite:
            self._remove(p for p in self.path.iterdir() if p.name != LOCK_FILE)
            return None
        foreign = self._foreign_entries()
        if foreign:  # another process filled the folder since check_placement
            raise OutputError(
                f"{self.path}: not empty and not a fairstream output folder; pass {_flag('overwrite')}"
            )
        if self.force_restart:
            self._remove(self.path / name for name in RUN_FILES)
            return None
        old = read_manifest(self.path)
        if old is None:
            if self.holds_run():
                raise FairStreamError(
                    f"{self.path}: holds a run of an older fairstream, whose settings cannot be checked; pass "
                    f"{_flag('force_restart')} to start over, or choose another output folder"
                )
            return None
        diffs = manifest_differences(old, manifest)
        if diffs:
            raise FairStreamError(
                f"{self.path}: holds a run with other settings or inputs: {'; '.join(diffs)}. Rerun with the "
                f"same ones to resume, pass {_flag('force_restart')} to start over, or choose another output folder"
            )
        return old

    def _remove(self, paths: Iterable[Path]) -> None:
        for p in paths:
            if p.is_symlink() or p.is_file():
                p.unlink()
            elif p.is_dir():
                shutil.rmtree(p)


def check_annotations(folder: Path, manifest: Mapping[str, Any]) -> None:
    """Refuse annotations (``from_annotations``) made with other tagging settings or inputs."""
    old = read_manifest(folder)
    if old is None:
        raise FairStreamError(
            f"{folder}: no annotations there ({_flag('from_annotations')} takes the output folder of a run "
            f"with {_flag('annotate_only')})"
        )
    if old.get("scope") != "global":
        raise FairStreamError(
            f"{folder}: holds a {_flag('cap_scope')} {old.get('scope')} run, not annotations"
        )
    tag_only = {
        "scope": "global",
        "settings": {"tag": manifest["settings"]["tag"]},
        "inputs": manifest["inputs"],
    }
    diffs = manifest_differences({**old, "job": {}}, tag_only)
    if diffs:
        raise FairStreamError(
            f"{folder}: its annotations were made with other settings or inputs: {'; '.join(diffs)}; "
            f"annotate again ({_flag('annotate_only')}) or use the same settings"
        )
