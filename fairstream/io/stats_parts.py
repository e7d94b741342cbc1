"""Each worker's stats as a file in one folder, and their sum with the estimates.

Ray Data actors and datatrove tasks each run their own ``FilterStep`` in a process the caller does
not see. Given a ``stats_dir``, each writes its running stats there (``write_stats_part``: one JSON
file per actor or task, replaced atomically, so a reader never sees half a file); afterwards
``merge_stats_parts(stats_dir)`` adds them up (the counts are integers and add exactly) and
computes the estimated true negative shares of the total with the model's calibration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fairstream.core.estimates import with_estimates
from fairstream.core.stats import StreamStats
from fairstream.errors import FairStreamError
from fairstream.io.writers import write_json
from fairstream.models.calibration import Calibration, calibration_in
from fairstream.models.names import resolve_model_dir
from fairstream.stats.provenance import TaxonomyMismatchError, merged_taxonomy

PART_SUFFIX = ".stats.json"


def write_stats_part(folder: str | Path, name: str, stats: dict[str, Any], model: str | None) -> Path:
    """Write one worker's counts (``FilterStep.counts()``) as ``folder/<name>.stats.json``, atomically.

    ``model`` (the config's model: a name, a folder or None for the default) travels with the counts,
    so the merge applies that model's calibration.
    """
    path = Path(folder) / f"{name}{PART_SUFFIX}"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {**stats, "model": model})
    return path


def merge_stats_parts(folder: str | Path, calibration: Calibration | None = None) -> dict[str, Any]:
    """The sum of every part in ``folder``, with ``estimates`` (the parts' model's calibration by default).

    Raises:
        FairStreamError: naming the folder when it holds no part, and a part that is not valid JSON.
        TaxonomyMismatchError: parts were counted with different taxonomies (name and content hash).
    """
    folder = Path(folder)
    parts = sorted(folder.glob(f"*{PART_SUFFIX}"))
    if not parts:
        raise FairStreamError(f"{folder}: no *{PART_SUFFIX} files (was stats_dir given to the filter?)")
    total, models, taxonomy, first = StreamStats(), set(), None, None
    for path in parts:
        try:
            part = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise FairStreamError(
                f"{path}: not a stats part ({exc}); delete it and run that worker again"
            ) from None
        # per-keyword counts of two taxonomies do not add up (a part from before it was recorded: taken)
        if part.get("taxonomy") is not None:
            try:
                taxonomy = merged_taxonomy(taxonomy, part["taxonomy"], what="stats parts")
            except TaxonomyMismatchError as exc:
                raise TaxonomyMismatchError(f"{first} and {path.name}: {exc}") from None
            first = first or path.name
        total = total + StreamStats.from_dict(part)
        models.add(part.get("model"))
    if calibration is None:
        if len(models) != 1:
            raise FairStreamError(
                f"{folder}: parts from several models {sorted(map(str, models))}; pass calibration="
            )
        calibration = calibration_in(resolve_model_dir(models.pop()))
    return {**with_estimates(total.to_dict(), calibration), "parts": len(parts), "taxonomy": taxonomy}
