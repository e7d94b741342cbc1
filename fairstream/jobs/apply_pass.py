"""Pass 3: write one shard's output from its documents, its attribute file and the drop plan.

Documents and attribute lines are read side by side (same order, checked by line number), so
neither is held whole. A sentence in the plan is cut with ``remove_spans`` (the rest of the text
is kept byte for byte); a document left blank, or dropped whole with ``granularity="document"``,
is not written. The output has the input's format (Parquet keeps the input's schema).
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from fairstream.core.step import remove_spans
from fairstream.errors import FairStreamError
from fairstream.io import write_json
from fairstream.jobs.checkpoint import ShardParts
from fairstream.jobs.reader import ShardReader
from fairstream.jobs.tasks import (
    DATA_DIR,
    PARTS_DIR,
    Report,
    attributes_path,
    count_bad_records,
    document_unit,
    sentence_units,
    task_config,
)

logger = logging.getLogger(__name__)

_DROPPED: dict[str, set[tuple[str, int]]] = {}


def dropped_units(plan_file: str) -> set[tuple[str, int]]:
    """The units ``plan.json`` drops, read once per worker process."""
    if plan_file not in _DROPPED:  # once per worker process
        plan = json.loads(Path(plan_file).read_text(encoding="utf-8"))
        _DROPPED.clear()
        _DROPPED[plan_file] = {(str(d), int(i)) for d, i in plan["dropped"]}
    return _DROPPED[plan_file]


def done_path(folder: Path, name: str) -> Path:
    """Marks the shard's output complete (with its counts)."""
    return folder / PARTS_DIR / "applied" / (name + ".json")


def apply_shard(task: Mapping[str, Any], report: Report | None = None) -> dict[str, Any]:
    """Write the filtered shard (resuming from its checkpoint); return its counts."""
    folder, name = Path(task["work"]), task["name"]
    done = done_path(folder, name)
    if done.is_file():
        return dict(json.loads(done.read_text(encoding="utf-8")))
    config = task_config(task)
    dropped = dropped_units(task["plan"])
    reader = ShardReader(task["shard"], on_error=config.on_error)
    suffix = ".parquet" if reader.is_parquet else ".jsonl"
    schema = reader.parquet_schema() if reader.is_parquet else None
    parts = ShardParts(folder / PARTS_DIR / "apply" / name, suffix)
    ck = parts.load()
    n_parts, start = int(ck.get("parts", 0)), int(ck.get("records", 0))
    counts: dict[str, Any] = dict(
        ck.get(
            "counts",
            {"documents": 0, "kept": 0, "dropped": 0, "skipped": 0, "sentences_dropped": 0, "modified": 0},
        )
    )
    attrs = attribute_lines(Path(task["annotations"]), name, start)
    every = int(task["every"])
    last_pos = start_pos = int(ck.get("position", 0))
    rows: list[dict[str, Any]] = []
    n_in_part = bad_seen = 0
    for rec in reader.records(start):
        attr = next(attrs, None)
        if attr is None or attr.get("line") != rec.line:
            raise FairStreamError(
                f"{task['shard']}:{rec.line}: its annotations ({attributes_path(Path(task['annotations']), name)}) "
                f"are at line {None if attr is None else attr.get('line')}: the shard changed since pass 1; "
                "annotate it again"
            )
        out = _apply(rec.data, attr, dropped, config.text_field, config.granularity, counts)
        if out is not None:
            rows.append(out)
        n_in_part += 1
        if n_in_part >= every:
            parts.write_part(n_parts, rows, schema)
            n_parts += 1
            bad_seen = count_bad_records(reader.skipped, counts, bad_seen)
            parts.save(n_parts, {"records": rec.index + 1, "position": rec.position, "counts": counts})
            if report is not None:
                report(n_in_part, rec.position - last_pos)
            last_pos, rows, n_in_part = rec.position, [], 0
    if n_in_part:
        parts.write_part(n_parts, rows, schema)
        n_parts += 1
    count_bad_records(reader.skipped, counts, bad_seen)
    parts.join(folder / DATA_DIR / name, n_parts, schema)
    result = {"shard": name, "bytes": reader.size, "counts": counts}
    write_json(done, result)
    parts.remove()
    if report is not None:
        report(n_in_part, max(0, reader.size - max(last_pos, start_pos)))
    return result


def attribute_lines(annotations: Path, name: str, start: int) -> Iterator[dict[str, Any]]:
    """The lines of a shard's attribute file from the ``start``-th on, parsed."""
    path = attributes_path(annotations, name)
    if not path.is_file():
        raise FairStreamError(f"{path}: no annotations for shard {name}; run pass 1 (--annotate-only) first")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= start:
                yield json.loads(line)


def _apply(
    doc: dict[str, Any],
    attr: Mapping[str, Any],
    dropped: set[tuple[str, int]],
    text_field: str,
    granularity: str,
    counts: dict[str, Any],
) -> dict[str, Any] | None:
    counts["documents"] += 1
    if "error" in attr:  # a record the filter skipped in pass 1: not written, a skip (as in stream scope)
        counts["skipped"] = counts.get("skipped", 0) + 1
        return None
    ann = attr["fairstream"]
    text = doc[text_field]
    kept, doc_kept = kept_sentences(ann, attr["id"], dropped, granularity, text)
    n_dropped = kept.count(False)
    counts["sentences_dropped"] += n_dropped
    if not doc_kept:
        counts["dropped"] += 1
        return None
    counts["kept"] += 1
    if granularity == "document" or not n_dropped:  # a kept document is whole
        return doc
    counts["modified"] += 1
    spans = [(s["start"], s["end"]) for s, k in zip(ann["sentences"], kept, strict=True) if not k]
    return {**doc, text_field: remove_spans(text, spans)}


def kept_sentences(
    ann: Mapping[str, Any], key: str, dropped: set[tuple[str, int]], granularity: str, text: str
) -> tuple[list[bool], bool]:
    """Which of a document's sentences the plan keeps, and whether the document is written.

    With ``granularity="document"`` a planned document drops every sentence; with ``"sentence"``
    a document is dropped when nothing but white space is left of it.
    """
    n = len(ann["sentences"])
    if granularity == "document":
        gone = bool(document_unit(sentence_units(ann))) and (key, 0) in dropped
        return [not gone] * n, not gone
    kept = [(key, i) not in dropped for i in range(n)]
    if all(kept):
        return kept, True
    spans = [(s["start"], s["end"]) for s, k in zip(ann["sentences"], kept, strict=True) if not k]
    return kept, bool(remove_spans(text, spans).strip())
