"""The per-attribute negative-regard cap controller.

Algorithm
---------
For each attribute ``a`` the controller keeps running tallies of the *kept* text: ``total_a``
(kept sentences that mention ``a`` in its person sense) and ``neg_a`` (those negative toward
``a``), and of the *seen* text before filtering (``seen_a``, ``seen_neg_a``). A unit (a sentence,
or a whole document with ``granularity="document"``) carries per-attribute counts ``n_a`` and
``k_a`` (how many of its sentences mention ``a`` / are negative toward ``a``).

* A unit that is negative toward no attribute is always kept (the cap never drops it).
* Otherwise it is kept only if, for every attribute it is negative toward, the **hard bound**
  ``neg_a + k_a <= cap_a * max(total_a + n_a, W)`` holds, ``W`` being the warm-up. Since
  ``total_a`` only grows, this proves the guarantee: once ``total_a >= W`` the kept negative share
  ``neg_a / total_a`` never exceeds ``cap_a`` (and during warm-up at most ``cap_a * W``
  negatives are kept, so the share is within the cap at the moment warm-up ends). With ``W = 0``
  (strict) the bound is ``neg_a + k_a <= cap_a * (total_a + n_a)``: the share is <= cap after
  every decision from the first sentence on, at the price of dropping every negative sentence
  until ``1 / cap_a`` sentences are kept (100 at a 1% cap). Attributes that end with fewer than
  ``W`` kept sentences may end above the cap; reports flag them with this reason.
* Within the bound the unit is kept with probability ``p = min_a p_a``. With ``r_a`` the raw
  negative rate seen so far, ``p_a = 1`` when ``r_a <= cap_a`` (nothing needs dropping);
  otherwise ``q_a = cap_a (1 - r_a) / (r_a (1 - cap_a))`` is the keep rate that makes the kept
  share equal the cap, and ``p_a = min(1, q_a (1 + d_a))`` where ``d_a >= 0`` is how many
  negatives the kept text is below its budget ``cap_a * total_a``. Keeping at the rate ``q_a``
  spreads the kept negatives over the whole stream instead of keeping the first ones, and the
  deficit term pulls the share back up to the cap after unlucky draws, so the final share ends
  close to the cap and no more negatives are dropped than needed.
* A sentence's regard toward ``a`` is the most negative regard of its person mentions of ``a``
  (negative > positive > neutral): a sentence that is negative toward one of two mentioned
  attributes counts as kept text (with its own regard) for the other one when kept.
* Decisions draw from the controller's own seeded ``numpy`` generator in stream order, so they
  are reproducible from the seed; ``state_dict()`` saves tallies and generator state.

Each DataLoader worker / rank runs its own controller over its own output, so each part obeys the
cap, and therefore so does their union (a union of sets each with negative share <= cap has
negative share <= cap).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fairstream.core.schema import REGARD_LABELS as REGARDS
from fairstream.core.schema import sentence_regard
from fairstream.errors import ConfigError, option
from fairstream.taxonomy import Taxonomy

__all__ = ["CapController", "UnitCounts", "sentence_regard"]


@dataclass
class UnitCounts:
    """Per-attribute counts of one unit (sentence or document): sentences by regard."""

    by_attr: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, keyword: str, regard: str, n: int = 1) -> None:
        """Count ``n`` sentences with the given regard toward ``keyword``."""
        counts = self.by_attr.setdefault(keyword, {r: 0 for r in REGARDS})
        counts[regard] += n

    @property
    def negative_attributes(self) -> list[str]:
        """Attributes this unit is negative toward."""
        return [a for a, c in self.by_attr.items() if c["negative"] > 0]


class CapController:
    """Decide which negative-regard units to keep so each attribute stays under its cap.

    Args:
        cap: default cap on the kept negative share, in ``[0, 1]``; ``1.0`` disables dropping.
        caps: overrides per attribute keyword or per class name (keyword wins over class).
        taxonomy: used to resolve class names in ``caps``.
        warmup: ``W`` in the guarantee: kept sentences after which the share is always <= cap;
            ``0`` is strict (the share is <= cap at every point, more negatives are dropped).
        seed: seed of the controller's own random generator.
    """

    def __init__(
        self,
        cap: float = 0.01,
        *,
        caps: Mapping[str, float] | None = None,
        taxonomy: Taxonomy | None = None,
        warmup: int = 100,
        seed: int = 0,
    ) -> None:
        _check_cap("cap", cap)
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(
                f"warmup={warmup!r} must be an int >= 0 (0: the cap holds from the first sentence)"
            )
        self.cap = cap
        self.warmup = warmup
        self.seed = seed
        self.taxonomy = taxonomy or Taxonomy.default()
        check_caps_keys(caps or {}, self.taxonomy)
        self.caps: dict[str, float] = {}
        for key, value in (caps or {}).items():
            _check_cap(f"caps[{key!r}]", value)
            self.caps[key] = value
        self._rng = _rng(seed)
        # kept and seen tallies per attribute: {keyword: {"negative": n, "neutral": n, "positive": n}}
        self.kept: dict[str, dict[str, int]] = {}
        self.seen: dict[str, dict[str, int]] = {}

    def cap_for(self, keyword: str) -> float:
        """The cap that applies to ``keyword``."""
        if keyword in self.caps:
            return self.caps[keyword]
        cls = self.taxonomy[keyword].attribute_class if keyword in self.taxonomy else None
        if cls is not None and cls in self.caps:
            return self.caps[cls]
        return self.cap

    def keep_probability(self, unit: UnitCounts) -> float:
        """Probability of keeping ``unit`` now (0 when the hard bound forbids it)."""
        p = 1.0
        for a, counts in unit.by_attr.items():
            k = counts["negative"]
            if k == 0:
                continue
            cap = self.cap_for(a)
            if cap >= 1.0:
                continue
            kept = self.kept.get(a, {})
            total, neg = sum(kept.values()), kept.get("negative", 0)
            n = sum(counts.values())
            budget = cap * max(total + n, self.warmup)
            if neg + k > budget + 1e-9:
                return 0.0
            seen = self.seen.get(a, {})
            seen_total = sum(seen.values()) + n
            rate = (seen.get("negative", 0) + k) / seen_total
            if rate <= cap:
                continue
            q = cap * (1.0 - rate) / (rate * (1.0 - cap)) if cap > 0 else 0.0
            deficit = max(0.0, cap * total - neg)
            p = min(p, min(1.0, q * (1.0 + deficit)))
        return p

    def decide(self, unit: UnitCounts) -> tuple[bool, str]:
        """Decide one unit in stream order and update the tallies; returns ``(keep, reason)``."""
        negatives = unit.negative_attributes
        if not negatives:
            keep, reason = True, "not-negative"
        else:
            p = self.keep_probability(unit)
            if p <= 0.0:
                keep, reason = False, "cap-bound"
            elif p >= 1.0:
                keep, reason = True, "cap-kept"
            else:
                keep = bool(self._rng.random() < p)
                reason = "cap-kept" if keep else "cap-sampled-out"
        for a, counts in unit.by_attr.items():
            seen = self.seen.setdefault(a, {r: 0 for r in REGARDS})
            for r, c in counts.items():
                seen[r] += c
            if keep:
                kept = self.kept.setdefault(a, {r: 0 for r in REGARDS})
                for r, c in counts.items():
                    kept[r] += c
        return keep, reason

    def negative_share(self, keyword: str) -> float:
        """Kept negative share of ``keyword`` (NaN before anything was kept)."""
        kept = self.kept.get(keyword, {})
        total = sum(kept.values())
        return kept.get("negative", 0) / total if total else math.nan

    def state_dict(self) -> dict[str, Any]:
        """Tallies and generator state as plain JSON-able data."""
        return {
            "kept": {a: dict(c) for a, c in self.kept.items()},
            "seen": {a: dict(c) for a, c in self.seen.items()},
            "rng": self._rng.bit_generator.state,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` saved."""
        self.kept = {a: dict(c) for a, c in state["kept"].items()}
        self.seen = {a: dict(c) for a, c in state["seen"].items()}
        self._rng = _rng(self.seed)
        self._rng.bit_generator.state = state["rng"]


def check_caps_keys(caps: Mapping[str, Any], taxonomy: Taxonomy) -> None:
    """Refuse a ``caps`` key that is neither a keyword nor a class of ``taxonomy``, naming the nearest."""
    keywords = sorted(a.keyword for a in taxonomy)
    known = set(keywords) | set(taxonomy.classes)
    for key in caps:
        if key in known:
            continue
        near = difflib.get_close_matches(str(key), [*taxonomy.classes, *keywords], n=3, cutoff=0.6)
        hint = f"did you mean {', '.join(near)}?" if near else f"classes: {', '.join(taxonomy.classes)}"
        raise ConfigError(
            f"{option('caps').rstrip('=')}: {key!r} is neither a keyword nor a class of {taxonomy.name} ({hint}); "
            "'fairstream taxonomy' lists them"
        )


def _rng(seed: int) -> Any:
    # numpy on first use: FilterConfig checks caps by this module's rules, and the CLI builds its
    # parser from FilterConfig without loading numpy
    import numpy as np

    return np.random.default_rng(seed)


CAP_ALLOWED = "a number in [0, 1] (1 keeps every sentence)"


def is_cap(value: Any) -> bool:
    """Whether ``value`` is a cap: a finite number in [0, 1] (the one rule; ``FilterConfig`` checks by it too)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


def _check_cap(name: str, value: float) -> None:
    if not is_cap(value):
        raise ConfigError(f"{option(name, value)}: must be {CAP_ALLOWED}")
