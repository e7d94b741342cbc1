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


def model_quality(model_dir: str | Path) -> dict[str, Any] | None:
    """The first "mean" row of a quality table in the model card (the honest held-out estimate).

    Returns:
        ``{"wsd_kappa", "regard_macro_f1", "negative_f1", "source"}`` (a value is None when its
        column is missing), or None when the folder has no card or the card no such table.
    """
    path = Path(model_dir) / CARD
    if not path.is_file():
        return None
    section, headers = "", list[str]()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            section, headers = line.lstrip("#").strip(), []
        elif line.startswith("|") and not headers:
            headers = _cells(line)
        elif line.startswith("|") and headers:
            row = _cells(line)
            if row[0].lower() != "mean" or len(row) != len(headers):
                continue
            col = dict(zip(headers, row, strict=True))
            neg = col.get("F1 neg / neu / pos", "").split("/")[0].strip()
            return {
                "wsd_kappa": _number(col.get("WSD kappa", "")),
                "regard_macro_f1": _number(col.get("regard macro-F1", "")),
                "negative_f1": _number(neg) if neg else None,
                "source": f"{path.name}: {section}",
            }
        else:  # a table ended
            headers = []
    logger.info("%s: no quality table with a mean row", path)
    return None
