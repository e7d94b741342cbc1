"""Pass 2: merge the shards' planner states and write the drop plan (``plan.json``).

The plan lists the units to drop (``[document id, sentence index]``; index 0 with
``granularity="document"``) and the counts per attribute before and after. It depends only on the
merged counts, the caps and ``(seed, document id, unit index)`` (``GlobalCapPlanner``), so the same
annotations give the same plan whichever processes or machines made them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fairstream.core.cap import CapController
from fairstream.core.config import FilterConfig
from fairstream.core.global_cap import GlobalCapPlanner
from fairstream.errors import FairStreamError
from fairstream.io import write_json
from fairstream.taxonomy import Taxonomy

PLAN_FILE = "plan.json"


def decide(states: Iterable[Mapping[str, Any]], config: FilterConfig) -> GlobalCapPlanner:
    """The merged planner of pass 1's shard states, with the cap's seed and caps."""
    controller = CapController(config.cap, caps=config.caps, taxonomy=Taxonomy.load(config.taxonomy))
    merged = GlobalCapPlanner(controller.cap_for, seed=config.seed)
    for state in states:
        part = GlobalCapPlanner(controller.cap_for, seed=config.seed)
        part.load_state_dict({**state["planners"][config.granularity], "seed": config.seed})
        try:
            merged = merged + part
        except ValueError as exc:
            raise FairStreamError(
                f"shard {state['shard']}: {exc}; the global cap needs unique document ids "
                "(fix the ids, or set --id-field '' to name documents by shard and line)"
            ) from None
    return merged


def write_plan(folder: Path, planner: GlobalCapPlanner, settings: Mapping[str, Any]) -> dict[str, Any]:
    """Plan the drops and write ``plan.json``; returns the plan as written."""
    plan = planner.plan()
    shares = {kw: plan.negative_share(kw) for kw in sorted(plan.kept)}
    out = {
        "settings": dict(settings),
        "rounds": plan.rounds,
        "dropped": sorted([list(k) for k in plan.dropped]),
        "before": plan.before,
        "kept": plan.kept,
        "kept_negative_share": {kw: (None if s != s else round(s, 6)) for kw, s in shares.items()},
    }
    write_json(folder / PLAN_FILE, out)
    return out


def load_dropped(folder: Path) -> set[tuple[str, int]]:
    """The units a written plan drops."""
    plan = json.loads((folder / PLAN_FILE).read_text(encoding="utf-8"))
    return {(str(d), int(i)) for d, i in plan["dropped"]}
