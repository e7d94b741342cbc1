"""After pass 3: count one shard for the report, as the stream scope counts it.

Reads the shard and its attribute file side by side (as pass 3 does), marks each sentence kept or
dropped by the plan, and feeds every document to the same hooks the stream scope uses
(``fairstream.stats.outputs.run_hooks``: co-occurrence counts before/after and dropped examples),
and counts the stream's per-attribute stats (``StreamStats``) from the same sentences, so the
report's tables, its headline and ``stats.json`` hold the same numbers. A shard's result is saved
under ``_parts/counted/`` (a rerun skips it); the job merges them in shard order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairstream.core.stats import StreamStats, count_unread_records
from fairstream.errors import FairStreamError
from fairstream.io import write_json
from fairstream.jobs.apply_pass import attribute_lines, dropped_units, kept_sentences
from fairstream.jobs.reader import ShardReader
from fairstream.jobs.tasks import PARTS_DIR, Report, attributes_path, task_config


def counted_path(folder: Path, name: str) -> Path:
    """The shard's counts for the report (its presence marks the shard counted)."""
    return folder / PARTS_DIR / "counted" / (name + ".json")


def count_shard(task: Mapping[str, Any], report: Report | None = None) -> dict[str, Any]:
    """Count one filtered shard for the report; return (and save) its stats, counts and examples."""
    from fairstream.stats import CooccurrenceCounts, DroppedExamples
    from fairstream.stats.outputs import run_hooks

    folder, name = Path(task["work"]), task["name"]
    done = counted_path(folder, name)
    if done.is_file():
        return dict(json.loads(done.read_text(encoding="utf-8")))
    config = task_config(task)
    dropped = dropped_units(task["plan"])
    reader = ShardReader(task["shard"], on_error=config.on_error)
    attrs = attribute_lines(Path(task["annotations"]), name, 0)
    before, after, examples = CooccurrenceCounts(), CooccurrenceCounts(), DroppedExamples()
    hooks = run_hooks(before, after, examples)
    stats = StreamStats()
    provenance: dict[str, Any] = {}
    for rec in reader.records():
        attr = next(attrs, None)
        if attr is None or attr.get("line") != rec.line:
            raise FairStreamError(
                f"{task['shard']}:{rec.line}: its annotations ({attributes_path(Path(task['annotations']), name)}) "
                f"are at line {None if attr is None else attr.get('line')}: the shard changed since pass 1; "
                "annotate it again"
            )
        stats.counters["docs_in"] += 1
        if "error" in attr:  # skipped in pass 1, as the stream skips it
            stats.skipped[str(attr["error"]).split(":", 1)[0]] += 1
            continue
        ann, key, text = attr["fairstream"], str(attr["id"]), rec.data[config.text_field]
        provenance.setdefault("model", ann.get("model"))
        provenance.setdefault("taxonomy", ann.get("taxonomy"))
        kept, doc_kept = kept_sentences(ann, key, dropped, config.granularity, text)
        _count(stats, ann, kept, doc_kept, text)
        annotation = {
            **ann,
            "id": key,
            "doc_index": rec.index,
            "doc_kept": doc_kept,
            "sentences": [{**s, "kept": k} for s, k in zip(ann["sentences"], kept, strict=True)],
        }
        for hook in hooks:
            hook(text, annotation)
    count_unread_records(stats, reader.skipped)
    result = {
        "shard": name,
        "bytes": reader.size,
        "counts": {"documents": stats.counters["docs_in"]},  # what the engines report progress with
        **provenance,
        "stats": stats.to_dict(),
        "before": before.to_dict(),
        "after": after.to_dict(),
        "examples": examples.to_dict(),
    }
    write_json(done, result)
    if report is not None:
        report(stats.counters["docs_in"], reader.size)
    return result


def _count(stats: StreamStats, ann: Mapping[str, Any], kept: list[bool], doc_kept: bool, text: str) -> None:
    """Count one document the way ``FilterStep.decide`` counts it."""
    c = stats.counters
    if not text.strip():
        c["docs_empty"] += 1
    # annotations written before these fields: a document with a judged sentence has a keyword
    if ann.get("has_keyword", bool(ann["sentences"])):
        c["docs_with_keyword"] += 1
    c["sentences_out_of_length"] += int(ann.get("sentences_out_of_length", 0))
    c["sentences_candidate"] += len(ann["sentences"])
    for s, keep in zip(ann["sentences"], kept, strict=True):
        per_attr = stats.count_mentions(
            (m["keyword"], m["person"], m["regard"], m["regard_probs"][0]) for m in s["mentions"]
        )
        for kw, (regard, p_negative) in per_attr.items():
            stats.count_person_sentence(kw, regard, p_negative, keep)
        if not keep:
            c["sentences_dropped"] += 1
    if not doc_kept:
        c["docs_dropped"] += 1
    else:
        c["docs_out"] += 1
        if not all(kept):
            c["docs_modified"] += 1
