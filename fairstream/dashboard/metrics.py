"""The flat scalars of one stats dict (``dashboard_metrics``) and where a calibration comes from."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fairstream.core.config import FilterConfig
from fairstream.models.calibration import Calibration, calibration_in
from fairstream.models.names import resolve_model_dir

#: MLflow's metric names allow these characters (TensorBoard and W&B take them too)
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /:]")
_COUNTERS = {
    "docs_in": "docs_in",
    "docs_out": "docs_out",
    "docs_dropped": "docs_dropped",
    "docs_modified": "docs_modified",
    "sentences_in": "sentences_candidate",
    "sentences_dropped": "sentences_dropped",
}


def dashboard_metrics(
    stats: Mapping[str, Any], *, prefix: str = "fairstream/", top_k: int | None = None
) -> dict[str, float]:
    """The flat scalars a dashboard shows for one stats dict (with its ``estimates`` block).

    Counters (``docs_in``, ``docs_out``, ``docs_dropped``, ``docs_modified``, ``sentences_in`` (the
    candidate sentences), ``sentences_dropped``, ``docs_skipped``), then for ``pooled`` and for each
    attribute with counted person sentences (the ``top_k`` with most of them, if given):
    ``person_sentences``, ``dropped``, ``model_negative_share_{before,after}``,
    ``estimated_negative_share_{before,after}`` with ``_low``/``_high`` (the 95% interval) and
    ``estimated_not_negative_dropped`` with ``_low``/``_high``. A share of no sentences is left out.

    Args:
        stats: ``FairStream.stats()``, or merged counts after ``with_estimates(merged, calibration)``.
        prefix: put before every name.
        top_k: only the ``top_k`` attributes with most person sentences (ties by name); None: all.
    """
    if "estimates" not in stats:
        raise ValueError(
            "stats has no 'estimates' block: compute it with "
            "fairstream.core.estimates.with_estimates(stats, calibration)"
        )
    if top_k is not None and top_k < 0:
        raise ValueError(f"top_k={top_k}: must be >= 0 or None")
    counters = stats.get("counters", {})
    out = {f"{prefix}{name}": float(counters.get(key, 0)) for name, key in _COUNTERS.items()}
    out[f"{prefix}docs_skipped"] = float(sum(stats.get("skipped", {}).values()))
    est = stats["estimates"]
    counted = [kw for kw, e in est["attributes"].items() if e["before"]["sentences"] > 0]
    counted.sort(key=lambda kw: (-est["attributes"][kw]["before"]["sentences"], kw))
    if top_k is not None:
        counted = counted[:top_k]
    out.update(_attribute_metrics(f"{prefix}pooled/", est["pooled"]))
    for kw in sorted(counted):
        name = f"{prefix}{_UNSAFE.sub('_', kw)}/"
        out.update(_attribute_metrics(name, est["attributes"][kw]))
    return out


def _attribute_metrics(name: str, est: Mapping[str, Any]) -> dict[str, float]:
    out = {f"{name}person_sentences": float(est["before"]["sentences"])}
    for when in ("before", "after"):
        share = est[when]
        if not share["sentences"]:
            continue
        out[f"{name}model_negative_share_{when}"] = float(share["model_negative_share"])
        out[f"{name}estimated_negative_share_{when}"] = float(share["estimated_negative_share"])
        out[f"{name}estimated_negative_share_{when}_low"] = float(share["interval"][0])
        out[f"{name}estimated_negative_share_{when}_high"] = float(share["interval"][1])
    dropped = est["dropped"]
    out[f"{name}dropped"] = float(dropped["sentences"])
    out[f"{name}estimated_not_negative_dropped"] = float(dropped["estimated_not_negative"])
    out[f"{name}estimated_not_negative_dropped_low"] = float(dropped["interval"][0])
    out[f"{name}estimated_not_negative_dropped_high"] = float(dropped["interval"][1])
    return out


def calibration_from(source: Any) -> Calibration | None:
    """The calibration of a ``Calibration``, a ``FairStream``/``FilterStep`` or a ``FilterConfig``.

    A ``FilterConfig`` gives its model folder's shipped calibration (read without loading the
    model); None when ``source`` holds none.
    """
    if isinstance(source, Calibration):
        return source
    if isinstance(source, FilterConfig):
        return calibration_in(resolve_model_dir(source.model))
    found = getattr(getattr(source, "step", source), "calibration", None)
    return found if isinstance(found, Calibration) else None
