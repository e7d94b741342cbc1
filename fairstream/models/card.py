"""The measured quality of a model, read from its MODEL_CARD.md (written by ``export.model_card``).

Reports and summaries quote it next to the filter's results, so a reader sees how far the
regard decisions behind the drops can be trusted.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

CARD = "MODEL_CARD.md"


def _cells(line: str) -> list[str]:
    return [c.strip().strip("*").strip() for c in line.strip().strip("|").split("|")]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _quality(headers: list[str], row: list[str], source: str) -> dict[str, Any]:
    col: dict[str, str] = {}
    # the first of repeated columns: the unseen table repeats them for its random items
    for header, cell in zip(headers, row, strict=True):
        col.setdefault(header, cell)
    neg = col.get("F1 neg / neu / pos", "").split("/")[0].strip() or col.get("negative F1", "")
    return {
        "wsd_kappa": _number(col.get("WSD kappa", "")),
        "regard_macro_f1": _number(col.get("regard macro-F1", "")),
        "negative_f1": _number(neg) if neg else None,
        "source": source,
    }


def model_quality(model_dir: str | Path) -> dict[str, Any] | None:
    """The model's honest quality estimate, read from its card.

    The first "mean" row of a quality table (held-out or cross-validated dev runs); for a recipe
    without one, the "this model" row of the unseen-text table (real text no model trained on).

    Returns:
        ``{"wsd_kappa", "regard_macro_f1", "negative_f1", "source"}`` (a value is None when its
        column is missing), or None when the folder has no card or the card no such table.
    """
    path = Path(model_dir) / CARD
    if not path.is_file():
        return None
    section, headers = "", list[str]()
    unseen: dict[str, Any] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            section, headers = line.lstrip("#").strip(), []
        elif line.startswith("|") and not headers:
            headers = _cells(line)
        elif line.startswith("|") and headers:
            row = _cells(line)
            if len(row) != len(headers):
                continue
            if row[0].lower() == "mean":
                return _quality(headers, row, f"{path.name}: {section}")
            if unseen is None and "this model" in row[0].lower():
                unseen = _quality(headers, row, f"{path.name}: {section}")
        else:  # a table ended
            headers = []
    if unseen is None:
        logger.info("%s: no quality table with a mean or 'this model' row", path)
    return unseen
