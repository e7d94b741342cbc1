"""The regard decision rule: per-class logit offsets added before the argmax.

A model's ``config.json`` may hold ``"regard_logit_offsets": [negative, neutral, positive]``
(absent: zeros, the plain argmax). The regard decided for a mention is

    argmax_k  log P(regard = k) + offset_k

which is the argmax of the logits plus the offsets (a shift of the log-prior of each class). A
negative offset on "negative" asks for more evidence before a mention is called negative (fewer
drops by the filter, higher negative precision, lower recall). The probabilities a model reports
(``Prediction.regard_probs``, ``regard_probs`` in annotations) stay the model's own softmax: only
the decision (``Prediction.regard``, what the filter and ``fairstream eval-models`` use) moves.
The offsets are chosen by cross-validation on held-out predictions (``python -m export.decision_rule``).

Every model (ONNX Runtime, PyTorch, a cascade of either) turns its logits into ``Prediction``s
through :func:`predictions_from_logits`, and ``fairstream eval-models`` and ``export.train.evaluate``
decide through :func:`regard_index` from the probabilities they report, so they all agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.core.schema import REGARD_LABELS
from fairstream.errors import ModelError

REGARD_OFFSETS_KEY = "regard_logit_offsets"
NO_OFFSETS: tuple[float, float, float] = (0.0, 0.0, 0.0)


def softmax(x: np.ndarray) -> np.ndarray:
    """Probabilities from logits along the last axis (shifted by the row maximum: no overflow)."""
    z = x - x.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def parse_regard_offsets(value: Any, where: str | Path) -> tuple[float, float, float]:
    """Check a ``regard_logit_offsets`` value: 3 finite numbers in ``REGARD_LABELS`` order.

    Args:
        value: the value read from the config (``None``: absent, zeros).
        where: the file it was read from, named in the error.

    Raises:
        ModelError: naming the key and ``where`` when the value is not 3 finite numbers.
    """
    if value is None:
        return NO_OFFSETS
    ok = (
        isinstance(value, list | tuple)
        and len(value) == len(REGARD_LABELS)
        and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    )
    if not ok:
        raise ModelError(
            f"{where}: {REGARD_OFFSETS_KEY}={value!r} must be a list of {len(REGARD_LABELS)} finite numbers "
            f"(logit offsets for {', '.join(REGARD_LABELS)}); fix or remove the key (absent = zeros = argmax)"
        )
    return (float(value[0]), float(value[1]), float(value[2]))


def regard_offsets_of(config: dict[str, Any], where: str | Path) -> tuple[float, float, float]:
    """The checked ``regard_logit_offsets`` of a model config (zeros when absent)."""
    return parse_regard_offsets(config.get(REGARD_OFFSETS_KEY), where)


def regard_index(probs: Sequence[float] | np.ndarray, offsets: Sequence[float] = NO_OFFSETS) -> int:
    """Index into ``REGARD_LABELS`` of the regard decided from one mention's probabilities.

    With all offsets zero this is exactly ``argmax(probs)`` (today's rule, ties to the first class);
    otherwise ``argmax(log(probs) + offsets)`` in float64 (a probability of 0 never wins).
    """
    p = np.asarray(probs, dtype=np.float64)
    if not any(offsets):
        return int(p.argmax())
    with np.errstate(divide="ignore"):
        return int((np.log(p) + np.asarray(offsets, dtype=np.float64)).argmax())


def regard_indices(probs: np.ndarray, offsets: Sequence[float] = NO_OFFSETS) -> np.ndarray:
    """:func:`regard_index` of each row of an ``(n, 3)`` probability array."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != len(REGARD_LABELS):
        raise ValueError(f"regard probabilities must have shape (n, {len(REGARD_LABELS)}), got {p.shape}")
    if not any(offsets):
        return p.argmax(axis=1)
    with np.errstate(divide="ignore"):
        return (np.log(p) + np.asarray(offsets, dtype=np.float64)).argmax(axis=1)


def regard_decisions(probs: np.ndarray, offsets: Sequence[float] = NO_OFFSETS) -> list[str]:
    """Regard labels decided for each row of an ``(n, 3)`` probability array."""
    return [REGARD_LABELS[int(k)] for k in regard_indices(probs, offsets)]


@dataclass(frozen=True)
class Prediction:
    """Model output for one mention."""

    wsd_probs: tuple[float, float, float]  # in WSD_LABELS order: no, yes, unsure
    regard_probs: tuple[float, float, float]  # in REGARD_LABELS order: negative, neutral, positive
    person: bool  # P(wsd = yes) >= the model's threshold
    # decided regard when ``person``, else None: the argmax of log(regard_probs) plus the model's
    # ``regard_logit_offsets`` (plain argmax without them); regard_probs are the model's own
    regard: str | None

    @property
    def wsd_score(self) -> float:
        """Probability that the keyword refers to a person with the attribute."""
        return self.wsd_probs[1]

    @property
    def wsd(self) -> str:
        """Most likely WSD label, with ``yes`` decided by the threshold."""
        if self.person:
            return "yes"
        return "unsure" if self.wsd_probs[2] > self.wsd_probs[0] else "no"


def predictions_from_logits(
    wsd_logits: np.ndarray,
    regard_logits: np.ndarray,
    threshold: float,
    regard_offsets: Sequence[float] = NO_OFFSETS,
) -> list[Prediction]:
    """``Prediction``s from a model's logits: the one rule every backend decides by.

    The probabilities are the softmax of the float32 logits (the dtype every backend returns), so
    ``P(yes) >= threshold`` compares the same number whichever backend produced the logits; the
    regard adds ``regard_offsets`` to the log-probabilities before the argmax (:func:`regard_index`).
    """
    wsd_p = softmax(np.asarray(wsd_logits, dtype=np.float32))
    reg_p = softmax(np.asarray(regard_logits, dtype=np.float32))
    out = []
    for w, r in zip(wsd_p, reg_p, strict=True):
        person = bool(w[1] >= threshold)
        out.append(
            Prediction(
                wsd_probs=(float(w[0]), float(w[1]), float(w[2])),
                regard_probs=(float(r[0]), float(r[1]), float(r[2])),
                person=person,
                regard=REGARD_LABELS[regard_index(r, regard_offsets)] if person else None,
            )
        )
    return out
