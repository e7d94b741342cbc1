"""Pass 1: annotate one shard; write its attribute file and its planner states.

The attribute file ``attributes/<shard>.fairstream.jsonl.gz`` has one JSON line per document of
the shard, in the shard's order (dolma's layout: documents and attributes aligned line by line,
joined on ``id``), readable with ``gzip`` + ``json`` alone::

    {"id": "doc-7", "line": 7,
     "attributes": {"fairstream__person_regard": [[start, end, {"muslim": "negative"}], ...]},
     "fairstream": {"schema_version": 1, "taxonomy": ..., "model": ...,
                    "sentences": [{"start", "end", "n_tokens", "mentions": [...]}, ...]}}

``line`` is the document's 1-based line (row for Parquet) in the shard; a record the filter could
not use (``on_error="skip"``) has ``"error"`` instead of the annotation. Spans are character
offsets into the document's text. ``<shard>.fairstream.state.json`` holds the shard's
``GlobalCapPlanner`` states (per sentence and per document: pass 2 picks by ``granularity``) and
counts; it is written last, so it marks the shard done.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairstream.core.global_cap import GlobalCapPlanner
from fairstream.core.stats import UNREADABLE_SHARD
from fairstream.errors import FairStreamError, InvalidDocumentError
from fairstream.io import write_json
from fairstream.jobs.checkpoint import ShardParts
from fairstream.jobs.reader import Record, ShardReader
from fairstream.jobs.tasks import (
    PARTS_DIR,
    Report,
    attributes_path,
    count_bad_records,
    doc_key,
    document_unit,
    sentence_units,
    state_path,
    task_config,
    worker_step,
)

logger = logging.getLogger(__name__)

_DROP_FROM_ANNOTATION = ("doc_index", "doc_kept", "granularity")


def _no_cap(_keyword: str) -> float:
    return 1.0


def annotate_shard(task: Mapping[str, Any], report: Report | None = None) -> dict[str, Any]:
    """Annotate one shard (resuming from its checkpoint); return its state (see module docstring)."""
    folder, name = Path(task["work"]), task["name"]
    done = state_path(folder, name)
    if done.is_file():
        import json

        return dict(json.loads(done.read_text(encoding="utf-8")))
    config = task_config(task)
    step = worker_step(config, task.get("threads"))
    parts = ShardParts(folder / PARTS_DIR / "annotate" / name, ".jsonl")
    ck = parts.load()
    n_parts, start = int(ck.get("parts", 0)), int(ck.get("records", 0))
    planners = {g: GlobalCapPlanner(_no_cap) for g in ("sentence", "document")}
    for g, p in planners.items():
        if g in ck.get("planners", {}):
            p.load_state_dict(ck["planners"][g])
    counts: dict[str, int] = dict(ck.get("counts", {"documents": 0, "skipped": 0, "sentences": 0}))
    reader = ShardReader(task["shard"], on_error=config.on_error)
    every = int(task["every"])
    pending: list[Record] = []
    last_pos = start_pos = int(ck.get("position", 0))
    # the reader's skips already in ``counts``; its skips when the last pending record was read
    bad_seen = bad_mark = 0

    def flush() -> None:
        nonlocal n_parts, bad_seen

        def on_window(window: list[Record]) -> None:
            nonlocal last_pos
            if report is not None:  # a window at a time: the model's work is the slow part
                report(len(window), window[-1].position - last_pos)
            last_pos = window[-1].position

        # windows restart at each part, so a resumed shard batches its documents as a whole run did
        results = step.filter_documents(
            pending,
            locate=lambda rec: f"{task['shard']}:{rec.line}",
            annotate=True,
            on_window=on_window,
            stop_scan_workers=False,
        )
        rows = [_annotation_row(rec, res, task, config, planners, counts) for rec, res in results]
        parts.write_part(n_parts, rows)
        n_parts += 1
        # the bad lines before the part's last record: those after it are read again on a resume
        bad_seen = count_bad_records(reader.skipped[:bad_mark], counts, bad_seen)
        last = pending[-1]
        parts.save(
            n_parts,
            {
                "records": last.index + 1,
                "position": last.position,
                "planners": {g: p.state_dict() for g, p in planners.items()},
                "counts": counts,
            },
        )
        pending.clear()

    for rec in reader.records(start):
        pending.append(rec)
        bad_mark = len(reader.skipped)
        if len(pending) >= every:
            flush()
    if pending:
        flush()
    step.tagger.close()
    count_bad_records(reader.skipped, counts, bad_seen)
    parts.join(attributes_path(folder, name), n_parts)
    state = {
        "shard": name,
        "bytes": reader.size,
        "counts": counts,
        "problems": [str(s) for s in reader.skipped if s.reason == UNREADABLE_SHARD],
        "planners": {g: p.state_dict() for g, p in planners.items()},
    }
    write_json(done, state)
    parts.remove()
    if report is not None:
        report(0, max(0, reader.size - max(last_pos, start_pos)))
    return state


def _annotation_row(
    rec: Record,
    res: Any,
    task: Mapping[str, Any],
    config: Any,
    planners: dict[str, GlobalCapPlanner],
    counts: dict[str, int],
) -> dict[str, Any]:
    """One document's row of the attributes file; its sentences go to the planners."""
    key = doc_key(rec.data, config.id_field, task["name"], rec.line)
    counts["documents"] += 1
    if res.error is not None:
        counts["skipped"] += 1
        return {"id": key, "line": rec.line, "error": _reason(res.error)}
    ann = {k: v for k, v in res.annotation.items() if k not in _DROP_FROM_ANNOTATION}
    ann["sentences"] = [{k: v for k, v in s.items() if k not in ("kept", "reason")} for s in ann["sentences"]]
    units = sentence_units(ann)
    counts["sentences"] += len(units)
    doc = document_unit(units)
    try:
        for i, unit in enumerate(units):
            if unit:
                planners["sentence"].add(key, i, unit)
        if doc:
            planners["document"].add(key, 0, doc)
    except ValueError:
        raise FairStreamError(
            f"{task['shard']}:{rec.line}: document id {key!r} appears twice in this shard; the global "
            "cap needs unique ids: fix them, or name documents by shard and line instead "
            "(--id-field '' on the command line, id_field=None in Python)"
        ) from None
    person = [
        [s["start"], s["end"], {kw: next(r for r, c in u[kw].items() if c) for kw in sorted(u)}]
        for s, u in zip(ann["sentences"], units, strict=True)
        if u
    ]
    return {
        "id": key,
        "line": rec.line,
        "attributes": {"fairstream__person_regard": person},
        "fairstream": ann,
    }


def _reason(error: InvalidDocumentError) -> str:
    return f"{error.reason}: {error.problem}"
