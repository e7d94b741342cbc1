"""The exact global cap: which negative units to drop so every attribute meets its cap over the whole corpus.

The stream-scope controller (``CapController``) decides online and guarantees the cap only once an
attribute has ``warmup`` kept sentences. With all annotations at hand (pass 1 of the offline job),
pass 2 can meet the cap exactly for every attribute, small ones included:

* Units (sentences, or documents with ``granularity="document"``) that are negative toward no
  attribute are never dropped; only their per-attribute counts are kept (memory: one counter per
  attribute, whatever the corpus size). Units negative toward some attribute are held with their
  counts (they are rare: about 3% of person sentences in web text).
* For attribute ``a`` with ``m_a`` kept non-negative sentences, at most ``floor(cap_a * m_a /
  (1 - cap_a))`` negative ones may be kept (the largest ``n`` with ``n / (n + m_a) <= cap_a``).
* Each negative unit has a priority from a hash of ``(seed, document id, unit index)``; for every
  attribute over its budget the lowest-priority units negative toward it are dropped until it fits.
  Dropping a unit also removes its non-negative sentences of other attributes, which can lower
  their budgets, so this repeats until no attribute is over budget. Kept sets only shrink, so it
  ends, and at the end every attribute's kept negative share is <= its cap.
* With one attribute per unit this drops exactly the minimum (``K_a - budget_a``); with units that
  touch several attributes it is a greedy, not a proven minimum (that problem is an integer
  program), and it reports how many rounds it took.

Decisions depend only on the merged counts and on ``(seed, document id, unit index)``: not on the
order units were added, on how shards were split between processes or machines, or on restarts.
Planners fill independently per shard and merge with ``+``; ``state_dict()`` is plain JSON.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fairstream.core.schema import REGARD_LABELS as REGARDS

Counts = Mapping[str, Mapping[str, int]]  # {keyword: {"negative": n, "neutral": n, "positive": n}}


def unit_priority(seed: int, doc_id: str, unit_index: int) -> int:
    """A stable 64-bit priority: the same on every machine, Python version and run."""
    digest = hashlib.blake2b(f"{seed}\x1f{doc_id}\x1f{unit_index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def negative_budget(cap: float, non_negative: int) -> int | None:
    """Most negatives keepable beside ``non_negative`` kept sentences at ``cap`` (``None``: no limit)."""
    if cap >= 1.0:
        return None
    if cap <= 0.0:
        return 0
    n = math.floor(cap * non_negative / (1.0 - cap))
    # guard the float division at exact boundaries: the share must really be <= cap
    while n > 0 and n > cap * (n + non_negative) + 1e-12:
        n -= 1
    return n


@dataclass(frozen=True)
class GlobalCapPlan:
    """Pass 2's result: units to drop and the counts the kept corpus will have."""

    dropped: frozenset[tuple[str, int]]
    kept: dict[str, dict[str, int]]
    before: dict[str, dict[str, int]]
    rounds: int

    def negative_share(self, keyword: str) -> float:
        """Kept negative share of ``keyword`` (NaN without kept sentences)."""
        c = self.kept.get(keyword, {})
        total = sum(c.values())
        return c.get("negative", 0) / total if total else float("nan")


class GlobalCapPlanner:
    """Collect units' counts (pass 1), then ``plan()`` the drops (pass 2).

    Args:
        cap_for: the cap of an attribute keyword (e.g. ``CapController(...).cap_for``).
        seed: seed of the priorities that choose which negative units are kept.
    """

    def __init__(self, cap_for: Callable[[str], float], *, seed: int = 0) -> None:
        self.cap_for = cap_for
        self.seed = seed
        self.base: dict[str, dict[str, int]] = {}  # counts of units that can never be dropped
        self.candidates: dict[tuple[str, int], dict[str, dict[str, int]]] = {}

    def add(self, doc_id: str, unit_index: int, counts: Counts) -> None:
        """Count one unit; ``counts`` maps each attribute to its sentences by regard."""
        clean = {kw: {r: int(c.get(r, 0)) for r in REGARDS} for kw, c in counts.items()}
        if any(c["negative"] > 0 for c in clean.values()):
            key = (str(doc_id), int(unit_index))
            if key in self.candidates:
                raise ValueError(f"unit {key} added twice (document ids must be unique across shards)")
            self.candidates[key] = clean
        else:
            _add_into(self.base, clean)

    def __add__(self, other: GlobalCapPlanner) -> GlobalCapPlanner:
        if other.seed != self.seed:
            raise ValueError(f"cannot merge planners with seeds {self.seed} and {other.seed}")
        out = GlobalCapPlanner(self.cap_for, seed=self.seed)
        for part in (self, other):
            _add_into(out.base, part.base)
            for key, counts in part.candidates.items():
                if key in out.candidates:
                    raise ValueError(f"unit {key} is in two planners (overlapping shards?)")
                out.candidates[key] = counts
        return out

    def state_dict(self) -> dict[str, Any]:
        """Plain JSON: the seed, never-dropped counts and the negative units."""
        return {
            "seed": self.seed,
            "base": self.base,
            "candidates": [[doc, idx, counts] for (doc, idx), counts in sorted(self.candidates.items())],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Inverse of ``state_dict``."""
        self.seed = int(state["seed"])
        self.base = {kw: dict(c) for kw, c in state["base"].items()}
        self.candidates = {
            (str(d), int(i)): {kw: dict(c) for kw, c in counts.items()}
            for d, i, counts in state["candidates"]
        }

    def plan(self) -> GlobalCapPlan:
        """Decide which negative units to drop; every attribute ends at or under its cap."""
        kept_keys = set(self.candidates)
        priority = {k: unit_priority(self.seed, *k) for k in kept_keys}
        negative_toward: dict[str, list[tuple[str, int]]] = {}
        for key, counts in self.candidates.items():
            for kw, c in counts.items():
                if c["negative"]:
                    negative_toward.setdefault(kw, []).append(key)
        for keys in negative_toward.values():
            keys.sort(key=lambda k: (priority[k], k), reverse=True)  # highest priority kept first
        rounds = 0
        while True:
            rounds += 1
            kept = self._counts(kept_keys)
            changed = False
            for kw in sorted(negative_toward):
                cap = self.cap_for(kw)
                kept.setdefault(kw, dict.fromkeys(REGARDS, 0))
                for key in reversed(negative_toward[kw]):  # the lowest priorities go first
                    budget = negative_budget(cap, _non_negative(kept, kw))
                    if budget is None or kept[kw]["negative"] <= budget:
                        break
                    if key in kept_keys:
                        kept_keys.discard(key)
                        _subtract(kept, self.candidates[key])
                        changed = True
            if not changed:
                break
        return GlobalCapPlan(
            dropped=frozenset(set(self.candidates) - kept_keys),
            kept=self._counts(kept_keys),
            before=self._counts(set(self.candidates)),
            rounds=rounds,
        )

    def _counts(self, keys: set[tuple[str, int]]) -> dict[str, dict[str, int]]:
        out = {kw: dict(c) for kw, c in self.base.items()}
        for key in keys:
            _add_into(out, self.candidates[key])
        return out


def _non_negative(counts: Mapping[str, Mapping[str, int]], kw: str) -> int:
    c = counts.get(kw, {})
    return c.get("neutral", 0) + c.get("positive", 0)


def _add_into(total: dict[str, dict[str, int]], counts: Counts) -> None:
    for kw, c in counts.items():
        mine = total.setdefault(kw, dict.fromkeys(REGARDS, 0))
        for r in REGARDS:
            mine[r] += c.get(r, 0)


def _subtract(total: dict[str, dict[str, int]], counts: Counts) -> None:
    for kw, c in counts.items():
        for r in REGARDS:
            total[kw][r] -= c.get(r, 0)
