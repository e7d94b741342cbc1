"""Step 4, ``merge``: check the annotators' answers and write one stand-off label file.

For every batch file (``batch-*.jsonl``, or the names given) the answers are read from the file of
the same name in the answers folder: one ``{"uid", "wsd", "regard"}`` per line (GUIDE.md; the
records ``fairstream annotate`` writes also qualify, their other fields are ignored). Every line is
checked, and the first problem stops the merge with one line naming the file, the line and what is
wrong: not a JSON object, a uid not in that batch or answered twice, ``wsd`` not one of yes / no /
unsure (null: an unparsed LLM reply), a person without a regard, a regard for a non-person; and an
item of the batch left unanswered. The output holds no text: the records of
``export/labels/text-r*.jsonl`` (``records.LABEL_FIELDS``), sorted by uid, annotator
``<annotator_prefix><batch number>`` (or ``annotator`` for all).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from export.annotation.records import STANDOFF_FIELDS, AnnotationError, iter_with_lines, read_records
from fairstream.core.schema import REGARD_LABELS, WSD_LABELS

logger = logging.getLogger(__name__)


def read_answers(path: Path, uids: list[str]) -> dict[str, dict[str, Any]]:
    """uid -> {"wsd", "regard"} for exactly ``uids`` from an answer file; see the module docstring."""
    if not path.is_file():
        raise AnnotationError(f"{path}: answer file not found (expected one line per item of the batch)")
    wanted = set(uids)
    answers: dict[str, dict[str, Any]] = {}
    seen_at: dict[str, int] = {}
    for lineno, line in iter_with_lines(path):
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AnnotationError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(rec, dict):
            raise AnnotationError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        uid = str(rec.get("uid", ""))
        if uid not in wanted:
            raise AnnotationError(f"{where}: uid {rec.get('uid')!r} is not an item of this batch")
        if uid in seen_at:
            raise AnnotationError(f"{where}: uid {uid!r} answered again (first on line {seen_at[uid]})")
        seen_at[uid] = lineno
        wsd, regard = rec.get("wsd"), rec.get("regard")
        if wsd not in WSD_LABELS:
            raise AnnotationError(f"{where}: uid {uid}: wsd {wsd!r} is not one of {WSD_LABELS}")
        if wsd == "yes" and regard not in REGARD_LABELS:
            raise AnnotationError(
                f"{where}: uid {uid}: regard {regard!r} for a person; expected one of {REGARD_LABELS}"
            )
        if wsd != "yes" and regard is not None:
            raise AnnotationError(
                f"{where}: uid {uid}: regard {regard!r} given, but wsd is {wsd!r} (regard must be null)"
            )
        answers[uid] = {"wsd": wsd, "regard": regard}
    missing = [u for u in uids if u not in answers]
    if missing:
        raise AnnotationError(f"{path}: {len(missing)} items of the batch unanswered, e.g. uid {missing[0]}")
    return answers


def merge(
    selected: list[dict[str, Any]],
    batches: Iterable[Path],
    answers_dir: Path,
    round_no: int,
    annotator_prefix: str | None = None,
    annotator: str | None = None,
) -> list[dict[str, Any]]:
    """The label records of every answered batch; see the module docstring."""
    by_uid = {str(r["uid"]): r for r in selected}
    prefix = annotator_prefix if annotator_prefix is not None else f"r{round_no}-helper-"
    out: dict[str, dict[str, Any]] = {}
    for batch in batches:
        items = read_records(batch)
        uids = [str(it.get("uid")) for it in items]
        unknown = [u for u in uids if u not in by_uid]
        if unknown:
            raise AnnotationError(f"{batch}: uid {unknown[0]} is not in the selection (wrong --selected?)")
        answers = read_answers(answers_dir / batch.name, uids)
        who = annotator or f"{prefix}{batch.stem.rsplit('-', 1)[-1]}"
        for uid in uids:
            if uid in out:
                raise AnnotationError(
                    f"{batch}: uid {uid} is in another batch too; merge each pass on its own"
                )
            sel = by_uid[uid]
            rec: dict[str, Any] = {"uid": uid, **{k: sel[k] for k in STANDOFF_FIELDS}, **answers[uid]}
            rec.update(
                annotator=who,
                round=round_no,
                pool=sel.get("pool", ""),
                selected_as=sel.get("selected_as", ""),
            )
            out[uid] = rec
    if not out:
        raise AnnotationError("no batch files to merge (check --batches)")
    return [out[u] for u in sorted(out)]
