"""What passes 1 and 3 share: the task of one shard, the per-process step, units and paths.

A task is a plain dict (it crosses process and machine boundaries): the shard, its name (its path
relative to the inputs' common folder), the job folder, the filter settings and the checkpoint
interval. Each worker process loads the model once (``worker_step``) with the threads it is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fairstream.core.config import FilterConfig
from fairstream.core.schema import REGARD_LABELS, sentence_regard
from fairstream.core.stats import is_bad_record
from fairstream.core.step import FilterStep

ATTRIBUTES_DIR = "attributes"
DATA_DIR = "data"
PARTS_DIR = "_parts"
ATTRIBUTES_SUFFIX = ".fairstream.jsonl.gz"
STATE_SUFFIX = ".fairstream.state.json"

Report = Callable[[int, int], None]  # (documents, input bytes) done since the last call

_STEPS: dict[str, FilterStep] = {}


def worker_step(config: FilterConfig, threads: int | None) -> FilterStep:
    """A tagging-only step (the stream cap off), loaded once per process and settings."""
    key = json.dumps([config.to_dict(), threads], sort_keys=True)
    if key not in _STEPS:
        from fairstream.models.loader import load_model, load_model_for

        if config.device == "cpu":
            model = load_model(config.model, batch_size=config.batch_size, threads=threads)
        else:  # a GPU decides like the CPU only up to its precision: "device" is a pass-1 setting
            model = load_model_for(config)
        _STEPS[key] = FilterStep(config.replace(cap=1.0, caps={}), model=model)
    return _STEPS[key]


def count_bad_records(skipped: Sequence[Any], counts: dict[str, Any], already: int) -> int:
    """Add the reader's skips from ``skipped[already:]`` to a shard's counts; returns ``len(skipped)``.

    A bad record (a line that is not a usable record) counts in ``documents`` and ``skipped``
    (records in = out + dropped + skipped); the unreadable rest of a shard is a problem, not a
    document. Called at every checkpoint, so a resumed shard counts each bad line once: the reader
    is quiet about the lines before the checkpoint's record and reports those after it.
    """
    for message in skipped[already:]:
        if is_bad_record(message):
            counts["documents"] = counts.get("documents", 0) + 1
            counts["skipped"] = counts.get("skipped", 0) + 1
    return len(skipped)


def task_config(task: Mapping[str, Any]) -> FilterConfig:
    """The filter settings a task carries."""
    return FilterConfig.from_dict(task["config"])


def attributes_path(folder: Path, name: str) -> Path:
    """The attribute file of shard ``name`` (one JSON line per document, in the shard's order)."""
    return folder / ATTRIBUTES_DIR / (name + ATTRIBUTES_SUFFIX)


def state_path(folder: Path, name: str) -> Path:
    """Pass 1's per-shard result: planner states and counts (its presence marks the shard done)."""
    return folder / ATTRIBUTES_DIR / (name + STATE_SUFFIX)


def doc_key(doc: Mapping[str, Any], id_field: str | None, name: str, line: int) -> str:
    """The document id the cap's priorities hash: the id field, else ``shard:line``."""
    if id_field and doc.get(id_field) is not None:
        return str(doc[id_field])
    return f"{name}:{line}"


def sentence_units(annotation: Mapping[str, Any]) -> list[dict[str, dict[str, int]]]:
    """Per candidate sentence: its regard toward each attribute it mentions in the person sense."""
    units = []
    for s in annotation["sentences"]:
        per_attr: dict[str, list[str]] = {}
        for m in s["mentions"]:
            if m["person"] and m["regard"] is not None:
                per_attr.setdefault(m["keyword"], []).append(m["regard"])
        units.append(
            {kw: {r: int(r == sentence_regard(rs)) for r in REGARD_LABELS} for kw, rs in per_attr.items()}
        )
    return units


def document_unit(units: list[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    """A document's counts: its sentences' summed."""
    out: dict[str, dict[str, int]] = {}
    for u in units:
        for kw, counts in u.items():
            mine = out.setdefault(kw, dict.fromkeys(REGARD_LABELS, 0))
            for r, c in counts.items():
                mine[r] += c
    return out
