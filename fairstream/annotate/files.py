"""Annotating a file: reading the items, resuming the output (``prepare_output``), ``annotate_file`` and ``run_annotation``."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from fairstream.annotate.annotator import AnnotationCounts, AnnotationItem, Annotator
from fairstream.errors import ShardError
from fairstream.llm import (
    BACKENDS,
    AnnotationConfigError,
    make_backend,
)

logger = logging.getLogger(__name__)


def read_items(path: Path, max_items: int | None = None) -> list[AnnotationItem]:
    """Read and check the first ``max_items`` items of a JSON lines file (blank lines are ignored).

    Raises:
        ShardError: The file is missing, or a line is not a JSON object with a ``uid`` (string
            or integer) and non-empty string ``text``, ``keyword`` and ``gloss``, or repeats a
            uid; the message names ``file:line``.
    """
    items: list[AnnotationItem] = []
    seen: dict[str, int] = {}
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise ShardError(f"{path}: input file not found") from None
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            if max_items is not None and len(items) >= max_items:
                break
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ShardError(f"{where}: invalid UTF-8 ({exc.reason} at byte {exc.start})") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ShardError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise ShardError(f"{where}: expected a JSON object, got {type(obj).__name__}")
            uid = obj.get("uid")
            if isinstance(uid, bool) or not isinstance(uid, str | int) or uid == "":
                raise ShardError(f"{where}: 'uid' must be a non-empty string or an integer, got {uid!r}")
            for name in ("text", "keyword", "gloss"):
                value = obj.get(name)
                if not isinstance(value, str) or not value.strip():
                    raise ShardError(f"{where}: field {name!r} must be a non-empty string, got {value!r}")
            key = str(uid)
            if key in seen:
                raise ShardError(f"{where}: uid {uid!r} repeats line {seen[key]}; uids must be unique")
            seen[key] = lineno
            items.append(AnnotationItem(key, obj["text"], obj["keyword"], obj["gloss"]))
    return items


def prepare_output(path: Path) -> set[str]:
    """The uids already in an output file, after dropping a last line cut off by a crash.

    A last line without its newline, or whose JSON is broken, is what an interrupted write leaves
    behind: it is removed from the file (with a warning) so its item is annotated again.

    Raises:
        ShardError: An earlier line is corrupt or lacks a ``uid``; the message names ``file:line``.
    """
    if not path.exists():
        return set()
    data = path.read_bytes()
    lines = data.split(b"\n")
    # after split, a complete file ends with b""; anything else in lines[-1] was cut off
    complete, tail = lines[:-1], lines[-1]
    keep_bytes = len(data) - len(tail)
    if complete and tail == b"" and _parse_record(complete[-1]) is None and complete[-1].strip():
        # newline written but content broken (e.g. zero-filled after a power loss)
        tail = complete.pop() + b"\n"
        keep_bytes -= len(tail)
    if tail.strip():
        logger.warning(
            "%s: dropping an incomplete last line (%d bytes) left by an interrupted run; "
            "its item will be annotated again",
            path,
            len(tail),
        )
        with path.open("r+b") as handle:
            handle.truncate(keep_bytes)
            handle.flush()
            os.fsync(handle.fileno())
    elif tail:  # only whitespace after the last newline
        with path.open("r+b") as handle:
            handle.truncate(keep_bytes)
    done: set[str] = set()
    for lineno, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        record = _parse_record(raw)
        if record is None:
            raise ShardError(
                f"{path}:{lineno}: corrupt output line (not a JSON object with a 'uid'); "
                "fix or remove it, then run again"
            )
        done.add(str(record["uid"]))
    return done


def _parse_record(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(obj, dict) or obj.get("uid") in (None, ""):
        return None
    return obj


def annotate_file(
    input_path: Path,
    output_path: Path,
    annotator: Annotator,
    *,
    max_items: int | None = None,
    progress: bool = False,
) -> dict[str, int]:
    """Annotate the items of ``input_path`` not yet in ``output_path``, appending their records.

    Each record is written as one line, flushed and fsynced before the next item starts, so a
    crash loses at most the item in flight; the next run skips every uid already written.

    Args:
        input_path: JSON lines with ``uid``, ``text``, ``keyword`` and ``gloss``.
        output_path: JSON lines output, created or appended to (its folder is created).
        annotator: Asks the questions; its counts are updated as items are done.
        max_items: Consider only the first ``max_items`` input items (``None``: all).
        progress: Show a tqdm progress bar.

    Returns:
        The counts of this run: ``done``, ``skipped_existing``, ``unparsed`` and ``retried``.
    """
    if max_items is not None and max_items < 0:
        raise AnnotationConfigError(f"max_items={max_items!r} must be >= 0 or None")
    items = read_items(input_path, max_items)
    done_uids = prepare_output(output_path)
    todo = [item for item in items if item.uid not in done_uids]
    start = AnnotationCounts(**annotator.counts.to_dict())
    skipped = len(items) - len(todo)
    logger.info(
        "%s: %d items, %d already in %s, %d to annotate with %s",
        input_path,
        len(items),
        skipped,
        output_path,
        len(todo),
        annotator.backend.model_id,
    )
    output_path.parent.mkdir(parents=True, exist_ok=True)
    from tqdm import tqdm

    with (
        output_path.open("a", encoding="utf-8", newline="\n") as out,
        tqdm(total=len(todo), disable=not progress, unit="item", desc="annotate") as bar,
    ):
        for item in todo:
            record = annotator.annotate(item)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
            bar.update(1)
            bar.set_postfix(unparsed=annotator.counts.unparsed - start.unparsed, refresh=False)
    c = annotator.counts
    counts = AnnotationCounts(
        done=c.done - start.done,
        skipped_existing=skipped,
        unparsed=c.unparsed - start.unparsed,
        retried=c.retried - start.retried,
    )
    logger.info("%s: %s", output_path, counts.to_dict())
    return counts.to_dict()


def run_annotation(
    input_path: Path,
    output_path: Path,
    backend: str,
    model: str,
    base_url: str | None,
    gguf_file: str | None,
    max_items: int | None,
    retries: int,
    progress: bool,
    *,
    max_new_tokens: int = 160,
) -> dict[str, int]:
    """Label (sentence, keyword) pairs with an LLM; resumable (the ``fairstream annotate`` command).

    Args:
        input_path: JSON lines with ``uid``, ``text``, ``keyword`` and ``gloss`` (the dev-set
            schema; other fields are ignored).
        output_path: JSON lines of ``{"uid", "wsd", "regard", "wsd_raw", "regard_raw", "model"}``,
            appended to; uids already there are skipped and a line cut off by a crash is dropped.
        backend: ``"openai"`` (an OpenAI-compatible server at ``base_url``) or ``"transformers"``
            (a local model).
        model: The served model name (openai) or a local folder / repository id (transformers).
        base_url: The API root of the server, e.g. ``http://localhost:8000/v1`` (openai only).
        gguf_file: A ``.gguf`` file inside ``model`` to load (transformers only).
        max_items: Consider only the first ``max_items`` input items (``None``: all).
        retries: Retries of failed requests (openai) and follow-ups of unparsable replies.
        progress: Show a progress bar.
        max_new_tokens: Upper bound on each reply's length in tokens.

    Returns:
        ``{"done", "skipped_existing", "unparsed", "retried"}``: items annotated by this run, items
        found already done, answers left ``None`` after all follow-ups, follow-ups sent.
    """
    if backend not in BACKENDS:
        raise AnnotationConfigError(f"backend={backend!r} is not one of {BACKENDS}")
    if retries < 0:
        raise AnnotationConfigError(f"retries={retries!r} must be >= 0")
    chat = make_backend(
        backend, model, base_url=base_url, gguf_file=gguf_file, retries=retries, max_new_tokens=max_new_tokens
    )
    return annotate_file(
        Path(input_path), Path(output_path), Annotator(chat, retries), max_items=max_items, progress=progress
    )
