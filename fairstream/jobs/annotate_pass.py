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
    every, window = int(task["every"]), config.lookahead
    pending: list[Record] = []
    last_pos = start_pos = int(ck.get("position", 0))
    # the reader's skips already in ``counts``; its skips when the last pending record was read
    bad_seen = bad_mark = 0

    def flush() -> None:
        nonlocal n_parts, last_pos, bad_seen
        rows: list[dict[str, Any]] = []
        chunks = [pending[i : i + window] for i in range(0, len(pending), window)]
        # with scan workers the next window's keyword stage runs while this one is judged
        for chunk in step.read_ahead(chunks, lambda c: [r.data for r in c]):
            rows += _annotate(step, chunk, task, planners, counts)
            if report is not None:  # a window at a time: the model's work is the slow part
                report(len(chunk), chunk[-1].position - last_pos)
            last_pos = chunk[-1].position
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


def _annotate(
    step: Any,
    window: list[Record],
    task: Mapping[str, Any],
    planners: dict[str, GlobalCapPlanner],
    counts: dict[str, int],
) -> list[dict[str, Any]]:
    config = step.config
    name = task["name"]
    lines = {r.index: r.line for r in window}
    results = step.process(
        [r.data for r in window], start=window[0].index, locate=lambda i: f"{task['shard']}:{lines[i]}"
    )
    rows = []
    for rec, res in zip(window, results, strict=True):
        key = doc_key(rec.data, config.id_field, name, rec.line)
        counts["documents"] += 1
        if res.error is not None:
            counts["skipped"] += 1
            rows.append({"id": key, "line": rec.line, "error": _reason(res.error)})
            continue
        ann = {k: v for k, v in res.annotation.items() if k not in _DROP_FROM_ANNOTATION}
        ann["sentences"] = [
            {k: v for k, v in s.items() if k not in ("kept", "reason")} for s in ann["sentences"]
        ]
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
        rows.append(
            {
                "id": key,
                "line": rec.line,
                "attributes": {"fairstream__person_regard": person},
                "fairstream": ann,
            }
        )
    return rows


def _reason(error: InvalidDocumentError) -> str:
    return f"{error.reason}: {error.problem}"
