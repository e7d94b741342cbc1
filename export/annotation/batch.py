"""Step 3, ``batch``: deal the selected items into one batch file per annotator, text resolved now.

The text is read from its source at this step only, and the batches are written outside the
repository (``runs/<round>/batches``). Each line is what an annotator reads, the item schema of
``fairstream annotate`` (``{"uid", "text", "keyword", "gloss"}``; ``text_marked`` with ``mark``: the
sentence with the occurrence to judge marked ``[[...]]``, since a sentence can hold the keyword twice).
Items are dealt in order into ``n`` contiguous batches (``batch-01.jsonl`` ...). ``second_pass``
draws that many items of each batch (seeded) into ``second-pass.jsonl`` for a blind second annotator.
``INSTRUCTIONS.md`` points at the guide and says what to write where.
"""

from __future__ import annotations

import logging
import math
import random
from pathlib import Path
from typing import Any

from export.annotation.records import AnnotationError, TextResolver, mark_occurrence, write_records
from export.labels import points_at_keyword
from fairstream.io import atomic_write

logger = logging.getLogger(__name__)

DEFAULT_GUIDE = "../shared/data/labels/GUIDE.md"

INSTRUCTIONS = """\
# Annotation batch: {name}

Read the guide first: {guide}. Label every item yourself, by reading it (no program, keyword rule
or heuristic may produce labels; scripts may only read the batch and write your answers).

* Your items: `{folder}/batch-XX.jsonl`, one JSON object per line: `uid`, `keyword`, `gloss`, `text`{marked}.
* Your answers: `{answers}/batch-XX.jsonl` (the same file name), one line per item, in input order:
  `{{"uid": ..., "wsd": "yes"|"no"|"unsure", "regard": "positive"|"neutral"|"negative"|null}}`;
  `regard` only when `wsd` is "yes", else null. Every uid exactly once.
* Work in chunks of about 40 items; use your own scratch folder, never a shared path.
* At the end check your file: every uid once, valid values, each label beside its text.
{second}
Merge when all answers are in: `python -m export.annotation merge --selected {selected} --batches {folder} --answers {answers} --round N --out LABELS.jsonl`.
"""


def write_batches(
    selected: list[dict[str, Any]],
    out: Path,
    n: int,
    resolver: TextResolver,
    *,
    mark: bool = False,
    second_pass: int = 0,
    seed: int = 0,
    guide: str = DEFAULT_GUIDE,
    selected_path: str = "SELECTED.jsonl",
) -> dict[str, int]:
    """Write the batches (see the module docstring); returns the item count per file."""
    if n < 1:
        raise AnnotationError(f"--annotators {n}: must be >= 1")
    if second_pass < 0:
        raise AnnotationError(f"--second-pass {second_pass}: must be >= 0")
    if not selected:
        raise AnnotationError("no selected items to batch")
    size = math.ceil(len(selected) / n)
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    second: list[dict[str, Any]] = []
    for b in range(n):
        items = [_item(rec, resolver, mark) for rec in selected[b * size : (b + 1) * size]]
        if not items:
            continue
        name = f"batch-{b + 1:02d}.jsonl"
        counts[name] = write_records(out / name, items)
        second += rng.sample(items, min(second_pass, len(items)))
    if second:
        rng.shuffle(second)
        counts["second-pass.jsonl"] = write_records(out / "second-pass.jsonl", second)
    note = (
        f"* A blind second pass: `{out}/second-pass.jsonl` ({len(second)} items drawn from the batches) goes to "
        "another annotator, who sees no first answers; answers in the same folder under the same name.\n"
        if second
        else ""
    )
    with atomic_write(out / "INSTRUCTIONS.md") as f:
        f.write(
            INSTRUCTIONS.format(
                name=out.name,
                guide=guide,
                folder=out,
                answers=out.parent / "answers",
                selected=selected_path,
                marked=", `text_marked` (label only the occurrence marked [[like this]])" if mark else "",
                second=note,
            )
        )
    return counts


def _item(rec: dict[str, Any], resolver: TextResolver, mark: bool) -> dict[str, Any]:
    text = resolver.sentence(rec)
    start, end = rec["kw_start"] - rec["sent_start"], rec["kw_end"] - rec["sent_start"]
    if not points_at_keyword(text[start:end], rec["keyword"]):
        raise AnnotationError(
            f"uid {rec['uid']}: offsets {rec['kw_start']}..{rec['kw_end']} do not point at {rec['keyword']!r} "
            f"in {rec['source']} document {rec['doc_id']} (source text changed?)"
        )
    item = {"uid": rec["uid"], "text": text, "keyword": rec["keyword"], "gloss": rec["gloss"]}
    if mark:
        item["text_marked"] = mark_occurrence(text, start, end)
    return item
