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


UNSEEN_SETS = "Every unseen labelled set"
METRICS = ("regard_macro_f1", "negative_f1", "wsd_kappa")
_HEADERS = ("regard macro-F1", "negative F1", "WSD kappa")  # the card's column of each metric


def unseen_sets(model_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of the card's "Every unseen labelled set" table, weakest first by regard macro-F1.

    Each row: ``{"set", "pairs", "regard_macro_f1", "negative_f1", "wsd_kappa", "measured"}``;
    empty when the card has no such table.
    """
    path = Path(model_dir) / CARD
    if not path.is_file():
        return []
    rows: list[dict[str, Any]] = []
    inside, headers = False, list[str]()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            inside, headers = line.lstrip("#").strip() == UNSEEN_SETS, []
        elif inside and line.startswith("|") and not headers:
            headers = _cells(line)
        elif inside and line.startswith("|") and not set(line) <= set("|-: "):
            col = dict(zip(headers, _cells(line), strict=False))
            rows.append(
                {
                    "set": col.get("set", ""),
                    "pairs": int(_number(col.get("pairs", "")) or 0),
                    **{m: _number(col.get(header, "")) for m, header in zip(METRICS, _HEADERS, strict=True)},
                    "measured": col.get("measured", ""),
                }
            )
    return sorted(rows, key=lambda r: (r["regard_macro_f1"] is None, r["regard_macro_f1"] or 0.0))


def model_quality(model_dir: str | Path) -> dict[str, Any] | None:
    """The model's honest quality estimate, read from its card.

    Where the card has an "Every unseen labelled set" table, quality is the range over its rows:
    ``{"sets": [...], "range": {metric: [lowest, highest]}, metric: lowest, ..., "source", "card"}`` (each
    single value is the weakest set's, never a flattering mean). Otherwise, as below.

    The first "mean" row of a quality table (held-out or cross-validated dev runs); for a recipe
    without one, the "this model" row of the unseen-text table (real text no model trained on).

    Returns:
        ``{"wsd_kappa", "regard_macro_f1", "negative_f1", "source"}`` (a value is None when its
        column is missing), or None when the folder has no card or the card no such table.
    """
    path = Path(model_dir) / CARD
    if not path.is_file():
        return None
    sets = unseen_sets(model_dir)
    if sets:
        ranges = {}
        for m in METRICS:
            values = [r[m] for r in sets if r[m] is not None]
            ranges[m] = [min(values), max(values)] if values else None
        return {
            **{m: (r[0] if r else None) for m, r in ranges.items()},
            "range": ranges,
            "sets": sets,
            "source": f"{path.name}: {UNSEEN_SETS}",
            "card": str(path),
        }
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
