"""Calibrated probabilities: a model's P(negative) (and P(person)) mapped to observed frequencies.

A model's softmax is not a frequency: the shipped models' mean P(negative) under-states how often
their person mentions are truly negative. A calibration, fitted by cross-validation on held-out
predictions (``python -m export.calibrate``) and shipped in the model's ``config.json``, maps the
model's probability to the share of such mentions that annotators call negative.

The map is defined on fixed bins of the model's probability (``N_BINS`` bins of width
``BIN_WIDTH`` in logit space, the ends open), so that

* the filter's counts stay integers: per attribute it counts sentences per bin
  (``fairstream.core.stats``), which add up exactly across workers, ranks and shards; and
* any calibration, and each of its bootstrap replicates, applies to merged counts afterwards:
  the expected number of true negatives among counted sentences is ``sum_k n_k * table[k]``.

``bootstrap`` holds the same map refitted on resamples of the calibration data; their spread is
the calibration's own uncertainty (``fairstream.core.estimates`` adds it to the sampling variance).

Config (``config.json``)::

    "calibration": {"negative": {"method": "isotonic", "bins": {"logit_min": -8, "logit_max": 8, "n": 64},
                                 "table": [...], "bootstrap": [[...], ...], "fit_on": "...", ...},
                    "person": {...}}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairstream.errors import ModelError

CALIBRATION_KEY = "calibration"
LOGIT_MIN = -8.0
LOGIT_MAX = 8.0
N_BINS = 64
BIN_WIDTH = (LOGIT_MAX - LOGIT_MIN) / N_BINS
BINS = {"logit_min": LOGIT_MIN, "logit_max": LOGIT_MAX, "n": N_BINS}
#: what each calibrated head's probability is: the key in ``config["calibration"]``
HEADS = ("negative", "person")
METHODS = ("isotonic", "platt", "temperature", "none")


def score_bin(p: float) -> int:
    """The bin of a probability (its logit, clipped to the bins' range; the ends are open)."""
    if not p > 0.0:  # 0 and NaN
        return 0
    if p >= 1.0:
        return N_BINS - 1
    z = math.log(p) - math.log1p(-p)
    return min(N_BINS - 1, max(0, math.floor((z - LOGIT_MIN) / BIN_WIDTH)))


#: places a probability is rounded to before it is binned: annotations store it so, and a count made
#: from annotations (the global scope's report pass) must bin as the stream does
COUNT_DECIMALS = 4


def count_bin(p: float) -> int:
    """The bin the filter counts a probability in: ``score_bin`` of it rounded as annotations round it."""
    return score_bin(round(p, COUNT_DECIMALS))


def bin_probabilities() -> list[float]:
    """The probability at the centre of each bin (what an uncalibrated model's table holds)."""
    return [1.0 / (1.0 + math.exp(-(LOGIT_MIN + (k + 0.5) * BIN_WIDTH))) for k in range(N_BINS)]


@dataclass(frozen=True)
class Calibration:
    """A map from a model's probability bin to a calibrated probability, with bootstrap replicates.

    ``method="none"`` is the identity (the model's own probability at each bin's centre, no
    replicates): what a model without a shipped calibration gets, and reports say so.
    """

    method: str
    table: tuple[float, ...]
    bootstrap: tuple[tuple[float, ...], ...] = ()
    fit_on: str = ""
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def shift_sd(self) -> float:
        """SD of the shift between kinds of text, on the logit scale (``details["shift"]["sd"]``; 0 if absent).

        A calibration fitted on one kind of text is off by an unknown intercept on another: the
        estimates add that uncertainty (``fairstream.core.estimates``). Fitted across labelled sets
        by ``python -m export.validate_estimates --write-shift``.
        """
        shift = self.details.get("shift")
        return float(shift.get("sd", 0.0)) if isinstance(shift, Mapping) else 0.0

    @property
    def shift_quantile(self) -> float | None:
        """The quantile the shift's part of an interval is taken at (``details["shift"]["quantile"]``).

        ``None``: the normal 1.96. The shift SD is estimated from a handful of kinds of text, so a
        prediction for a new kind uses Student's t with (groups - 2) degrees of freedom, as a
        random-effects meta-analysis predicts a new study's effect (Higgins, Thompson & Spiegelhalter 2009).
        """
        shift = self.details.get("shift")
        q = shift.get("quantile") if isinstance(shift, Mapping) else None
        return float(q) if isinstance(q, int | float) and not isinstance(q, bool) else None

    @property
    def calibrated(self) -> bool:
        """Whether this is a fitted calibration (not the model's own probabilities)."""
        return self.method != "none"

    @classmethod
    def identity(cls) -> Calibration:
        """The model's own probabilities (no calibration shipped)."""
        return cls("none", tuple(bin_probabilities()), (), "none: the model's own probabilities")

    def describe(self) -> str:
        """One line naming the calibration (for summaries and reports)."""
        if not self.calibrated:
            return "uncalibrated (the model's own probabilities; no calibration uncertainty)"
        return f"{self.method}, {len(self.bootstrap)} bootstrap refits; fitted on {self.fit_on}"

    def to_config(self) -> dict[str, Any]:
        """The ``config.json`` form (``from_config`` reads it back)."""
        return {
            "method": self.method,
            "bins": dict(BINS),
            "table": [round(x, 6) for x in self.table],
            "bootstrap": [[round(x, 5) for x in row] for row in self.bootstrap],
            "fit_on": self.fit_on,
            **self.details,
        }

    @classmethod
    def from_config(cls, value: Any, where: str | Path) -> Calibration:
        """Read one head's calibration from a model config (``None``: the identity)."""
        if value is None:
            return cls.identity()

        def bad(problem: str) -> ModelError:
            return ModelError(
                f"{where}: {CALIBRATION_KEY} {problem}; refit it with 'python -m export.calibrate' or remove the key"
            )

        if not isinstance(value, Mapping):
            raise bad("must be an object")
        method = value.get("method")
        if method not in METHODS:
            raise bad(f"method={method!r} is not one of {', '.join(METHODS)}")
        if dict(value.get("bins", {})) != BINS:
            raise bad(f"bins={value.get('bins')!r} differ from this version's {BINS}")
        table = _probabilities(value.get("table"), bad, "table")
        boot = value.get("bootstrap", [])
        if not isinstance(boot, list):
            raise bad("bootstrap must be a list of tables")
        replicates = tuple(_probabilities(row, bad, "bootstrap row") for row in boot)
        details = {
            k: v for k, v in value.items() if k not in ("method", "bins", "table", "bootstrap", "fit_on")
        }
        return cls(method, table, replicates, str(value.get("fit_on", "")), details)


def _probabilities(row: Any, bad: Any, what: str) -> tuple[float, ...]:
    ok = isinstance(row, list) and len(row) == N_BINS
    ok = ok and all(isinstance(x, int | float) and not isinstance(x, bool) and 0.0 <= x <= 1.0 for x in row)
    if not ok:
        raise bad(f"{what} must be {N_BINS} probabilities in [0, 1]")
    return tuple(float(x) for x in row)


def calibration_of(config: Mapping[str, Any], where: str | Path, head: str = "negative") -> Calibration:
    """The calibration of one head (``negative`` or ``person``) in a model config; identity when absent."""
    if head not in HEADS:
        raise ValueError(f"head={head!r}: choose one of {', '.join(HEADS)}")
    block = config.get(CALIBRATION_KEY)
    if block is None:
        return Calibration.identity()
    if not isinstance(block, Mapping):
        raise ModelError(f"{where}: {CALIBRATION_KEY} must be an object with keys {', '.join(HEADS)}")
    return Calibration.from_config(block.get(head), where)


def model_calibration(model: Any, head: str = "negative") -> Calibration:
    """The calibration a loaded model ships (its ``config``; a cascade's own folder config)."""
    config = getattr(model, "config", None)
    if not isinstance(config, Mapping):
        return Calibration.identity()
    where = Path(str(getattr(model, "model_dir", "model"))) / "config.json"
    return calibration_of(config, where, head)


def apply_table(table: Sequence[float], counts: Mapping[int, int]) -> float:
    """``sum_k counts[k] * table[k]``: the expected number of positives among counted items."""
    return float(sum(n * table[k] for k, n in counts.items()))


def calibration_in(model_dir: str | Path | None, head: str = "negative") -> Calibration:
    """The calibration shipped in a model folder's ``config.json`` (read without loading the model)."""
    import json

    if model_dir is None:
        return Calibration.identity()
    path = Path(model_dir) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: cannot read the model's config ({exc})") from None
    return calibration_of(config, path, head) if isinstance(config, dict) else Calibration.identity()
