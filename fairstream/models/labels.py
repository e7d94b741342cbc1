"""Labelled (sentence, keyword) pairs in the dev-set schema (what ``fairstream eval-models`` reads).

One JSON object per line::

    {"uid", "text", "keyword", "class", "gloss", "wsd": "yes"|"no"|"unsure",
     "regard": "positive"|"neutral"|"negative"|null, ...}

The project's stand-off training labels are resolved by ``export.labels`` (training only).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairstream.core.schema import REGARD_LABELS, WSD_LABELS
from fairstream.errors import FairStreamError
from fairstream.models.encoding import MentionInput


@dataclass(frozen=True)
class LabelledPair:
    """A judged mention with its gold labels."""

    uid: str
    mention: MentionInput
    attribute_class: str
    wsd: str
    regard: str | None
    source: str = ""


def first_occurrence(text: str, keyword: str, forms: Iterable[str] = ()) -> tuple[int, int] | None:
    """Offsets of the first whole-word, case-insensitive occurrence of the keyword or its forms."""
    words = sorted({keyword, *forms}, key=len, reverse=True)
    m = re.search(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + r")(?!\w)", text, re.IGNORECASE)
    if m is None:
        # forms the taxonomy does not list (e.g. "Jews"): fall back to a prefix match
        m = re.search(r"(?<!\w)" + re.escape(keyword) + r"\w*", text, re.IGNORECASE)
    return None if m is None else (m.start(), m.end())


def check_labels(where: str, wsd: Any, regard: Any) -> None:
    """Raise naming ``where`` unless ``wsd`` and ``regard`` are valid labels of the schema."""
    if wsd not in WSD_LABELS:
        raise FairStreamError(f"{where}: wsd={wsd!r} is not one of {WSD_LABELS}")
    if regard is not None and regard not in REGARD_LABELS:
        raise FairStreamError(f"{where}: regard={regard!r} is not one of {(*REGARD_LABELS, None)}")


def load_labelled_pairs(
    path: str | Path, forms_of: dict[str, tuple[str, ...]] | None = None
) -> list[LabelledPair]:
    """Load a file of the dev-set schema; the judged occurrence is the keyword's first one."""
    path = Path(path)
    if not path.is_file():
        raise FairStreamError(f"{path}: labels file not found")
    out = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                rec = json.loads(line)
                text, keyword, gloss = rec["text"], rec["keyword"].lower(), rec["gloss"]
            except (json.JSONDecodeError, KeyError, AttributeError) as exc:
                raise FairStreamError(
                    f"{where}: not a labelled pair ({exc}); expected fields text, keyword, gloss, wsd, regard"
                ) from None
            check_labels(where, rec.get("wsd"), rec.get("regard"))
            span = (rec["kw_start"], rec["kw_end"]) if "kw_start" in rec else None
            span = span or first_occurrence(text, keyword, (forms_of or {}).get(keyword, ()))
            if span is None:
                raise FairStreamError(f"{where}: keyword {keyword!r} does not occur in the text")
            out.append(
                LabelledPair(
                    uid=str(rec.get("uid", f"{path.name}:{lineno}")),
                    mention=MentionInput(text, span[0], span[1], keyword, gloss),
                    attribute_class=rec.get("class", ""),
                    wsd=rec["wsd"],
                    regard=rec.get("regard") if rec["wsd"] == "yes" else None,
                    source=str(rec.get("source", rec.get("pool", path.stem))),
                )
            )
    return out
