"""Estimated true negative shares: what the cap achieves on the data, not only on the model's decisions.

The cap bounds the **model-judged** negative share of the kept text (a guarantee about the
model's decisions). How many kept sentences are truly negative, and how many dropped ones were
not, is a different question: the model misses negatives and flags some that are not. With a
calibrated P(negative | sentence) the expected number of true negatives in any set of counted
sentences is the sum of those probabilities ("probabilistic classify and count"). The filter
counts each attribute's person sentences per probability bin (``fairstream.models.calibration``),
kept and dropped apart, so the estimate applies to merged counts of any workers, ranks and shards.

The 95% interval adds three variances:

* the sentences' own: given the probabilities, the number of true negatives among ``n`` sentences
  has variance ``sum p (1 - p)`` (the labels are uncertain even when the probabilities are right);
* the calibration's: the estimate under each bootstrap refit of the calibration (refitted on
  resamples of its own data) varies; their variance is added;
* the shift between kinds of text: on text unlike its data a calibration is off by some intercept
  ``d`` on the logit scale, which moves the count by about ``d * sum p (1 - p)``. ``d``'s spread
  (``Calibration.shift_sd``) is measured across labelled sets of different kinds of text.

A normal interval with all three, clipped to ``[0, n]``. The validation on every unseen labelled set
(``python -m export.validate_estimates``, docs/cap.md) measures how often the interval holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fairstream.models.calibration import Calibration, apply_table

Z95 = 1.959963984540054
#: the groups of sentences the filter counts per bin, per attribute
GROUPS = ("kept", "dropped")
#: where each attribute's bin counts live in ``StreamStats`` attribute records
HIST_KEY = "p_negative_bins"

WHAT = (
    "estimated true negative share: the sum of the calibrated P(negative) of each counted sentence, "
    "divided by their number, with a 95% interval (sampling and calibration uncertainty); "
    "'model_negative_share' is the share the model judged negative, the one the cap bounds"
)


def bins_of(attr: Mapping[str, Any], group: str) -> dict[int, int]:
    """One attribute's sentence counts per probability bin in ``group`` (``kept``/``dropped``)."""
    return {int(k): int(v) for k, v in attr.get(HIST_KEY, {}).get(group, {}).items()}


def add_bins(a: Mapping[int, int], b: Mapping[int, int]) -> dict[int, int]:
    """The counts of both (the merge of two workers' counts)."""
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def expected_count(counts: Mapping[int, int], calibration: Calibration) -> dict[str, float]:
    """Expected true negatives among counted sentences, with its 95% interval (see module docstring)."""
    n = sum(counts.values())
    point = apply_table(calibration.table, counts)
    sampling = sum(c * calibration.table[k] * (1.0 - calibration.table[k]) for k, c in counts.items())
    reps = [apply_table(row, counts) for row in calibration.bootstrap]
    between = 0.0
    if len(reps) > 1:
        mean = sum(reps) / len(reps)
        between = sum((r - mean) ** 2 for r in reps) / (len(reps) - 1)
    # a shift d of the calibration's intercept (text unlike its data) moves the expected count by
    # about d * sum p (1 - p): this part does not shrink with more sentences
    shift = (calibration.shift_sd * sampling) ** 2
    q = calibration.shift_quantile or Z95
    half = math.sqrt(Z95**2 * (sampling + between) + q**2 * shift)
    return {"n": n, "estimate": point, "low": max(0.0, point - half), "high": min(float(n), point + half)}


def _share(count: Mapping[str, float], model_negative: int) -> dict[str, Any]:
    n = count["n"]
    if not n:
        return {
            "sentences": 0,
            "model_negative_share": None,
            "estimated_negative_share": None,
            "interval": None,
        }
    return {
        "sentences": int(n),
        "model_negative_share": round(model_negative / n, 6),
        "estimated_negative_share": round(count["estimate"] / n, 6),
        "interval": [round(count["low"] / n, 6), round(count["high"] / n, 6)],
    }


def estimate_attribute(attr: Mapping[str, Any], calibration: Calibration) -> dict[str, Any]:
    """Model-judged and estimated true negative shares before and after filtering, and wrong drops.

    ``attr`` is one attribute's record of ``StreamStats`` (``before``/``after`` regard counts and the
    per-bin counts). ``dropped.estimated_not_negative`` is the expected number of dropped sentences
    that were not negative toward the attribute, with its interval.
    """
    kept, dropped = bins_of(attr, "kept"), bins_of(attr, "dropped")
    after = expected_count(kept, calibration)
    gone = expected_count(dropped, calibration)
    before = expected_count(add_bins(kept, dropped), calibration)
    model_neg_before = int(attr.get("before", {}).get("negative", 0))
    model_neg_after = int(attr.get("after", {}).get("negative", 0))
    n_dropped = int(gone["n"])
    return {
        "before": _share(before, model_neg_before),
        "after": _share(after, model_neg_after),
        "dropped": {
            "sentences": n_dropped,
            "model_negative": model_neg_before - model_neg_after,
            "estimated_not_negative": round(n_dropped - gone["estimate"], 4),
            "interval": [round(n_dropped - gone["high"], 4), round(n_dropped - gone["low"], 4)],
        },
    }


def estimates(stats: Mapping[str, Any], calibration: Calibration) -> dict[str, Any]:
    """The ``estimates`` block of a stats dict (``StreamStats.to_dict()``, merged or not).

    Per attribute with counted person sentences, and ``pooled`` over all of them (a sentence that
    mentions two attributes counts once for each).
    """
    per: dict[str, Any] = {}
    pooled: dict[str, Any] = {HIST_KEY: {"kept": {}, "dropped": {}}, "before": {}, "after": {}}
    for kw, attr in sorted(stats.get("attributes", {}).items()):
        if not attr.get(HIST_KEY):
            continue
        per[kw] = estimate_attribute(attr, calibration)
        for group in GROUPS:
            pooled[HIST_KEY][group] = add_bins(pooled[HIST_KEY][group], bins_of(attr, group))
        for key in ("before", "after"):
            for r, c in attr.get(key, {}).items():
                pooled[key][r] = pooled[key].get(r, 0) + c
    return {
        "what": WHAT,
        "calibration": calibration.describe(),
        "calibrated": calibration.calibrated,
        "pooled": estimate_attribute(pooled, calibration),
        "attributes": per,
    }


def with_estimates(stats: Mapping[str, Any], calibration: Calibration) -> dict[str, Any]:
    """``stats`` with its ``estimates`` block (re)computed, e.g. after merging workers' stats."""
    return {**stats, "estimates": estimates(stats, calibration)}
