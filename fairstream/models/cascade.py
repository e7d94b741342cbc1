"""A two-model cascade: a fast model decides the mentions it is sure of, the full model the rest.

A cascade model folder holds a ``config.json`` without ONNX files::

    {"name": "fairstream-joint-v6-cascade",
     "cascade": {"fast": "joint-v7-fast", "full": "joint-v6",
                 "route": {"wsd_margin": 0.42, "regard_confidence": 0.97, "negative_probability": 0.05}}}

``fast`` and ``full`` are shipped model names or folders (relative to the cascade's folder). Every
mention goes through the fast model; a mention goes on to the full model (and takes its logits)
when the fast model

* is unsure whether the keyword refers to a person: ``|P(yes) - threshold| < wsd_margin``, or
* calls it a person and is unsure of the regard: ``max P(regard) < regard_confidence``, or
* calls it a person and gives negative regard some weight: ``P(negative) >= negative_probability``.

(probabilities before any ``regard_logit_offsets``, which both models must share). The cascade's own
``config.json`` may hold ``regard_logit_offsets``: a decision rule chosen for the cascade, used for
its decisions in place of the members' shared one (the route still reads the fast model's
probabilities). So the fast model
alone decides only confident non-person mentions and confident non-negative person mentions; every
negative decision (the ones that drop sentences) is the full model's. The route depends on each
mention's own fast logits, so a cascade of batch-invariant models is batch-invariant. The numbers
above were fixed on unlabelled corpus pairs (the cheapest rule that agreed with the full model on
>= 99% of decisions and on the negatives with Jaccard >= 0.95), not on a labelled set; their quality
is measured on the hold-outs (see the cascade's MODEL_CARD.md).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.errors import ModelError
from fairstream.models.decision import (
    REGARD_OFFSETS_KEY,
    Prediction,
    predictions_from_logits,
    regard_offsets_of,
    softmax,
)
from fairstream.models.encoding import REGARD_LABELS, WSD_LABELS, MentionInput
from fairstream.models.names import resolve_model_dir

logger = logging.getLogger(__name__)

ROUTE_KEYS = ("wsd_margin", "regard_confidence", "negative_probability")


@dataclass(frozen=True)
class CascadeRoute:
    """When the fast model's answer is not taken (see the module doc)."""

    wsd_margin: float = 0.42
    regard_confidence: float = 0.97
    negative_probability: float = 0.05

    def __post_init__(self) -> None:
        for key in ROUTE_KEYS:
            value = getattr(self, key)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{key}={value}: must be a probability between 0 and 1")

    def routed(self, wsd_logits: np.ndarray, regard_logits: np.ndarray, wsd_threshold: float) -> np.ndarray:
        """Boolean mask: the mentions that go on to the full model."""
        p_yes = softmax(wsd_logits)[:, 1]
        regard = softmax(regard_logits)
        person = p_yes >= wsd_threshold
        unsure_person = np.abs(p_yes - wsd_threshold) < self.wsd_margin
        unsure_regard = regard.max(axis=1) < self.regard_confidence
        maybe_negative = regard[:, 0] >= self.negative_probability
        return np.asarray(unsure_person | (person & (unsure_regard | maybe_negative)))


def cascade_spec(
    model_dir: Path, config: dict[str, Any]
) -> tuple[str | Path, str | Path, CascadeRoute] | None:
    """``(fast, full, route)`` when ``config`` (read from ``model_dir/config.json``) is a cascade, else None."""
    spec = config.get("cascade")
    if spec is None:
        return None
    where = model_dir / "config.json"
    if not isinstance(spec, dict) or not all(isinstance(spec.get(k), str) for k in ("fast", "full")):
        raise ModelError(f'{where}: "cascade" needs "fast" and "full" (model names or folders)')
    extra = set(spec) - {"fast", "full", "route"}
    if extra:
        raise ModelError(f'{where}: unknown "cascade" field(s) {sorted(extra)}; allowed: fast, full, route')
    route = spec.get("route", {})
    unknown = set(route) - set(ROUTE_KEYS)
    if unknown:
        raise ModelError(
            f"{where}: unknown cascade route setting(s) {sorted(unknown)}; allowed: {', '.join(ROUTE_KEYS)}"
        )

    def member(value: str) -> str | Path:
        local = model_dir / value
        if not (local / "config.json").is_file():
            return value
        if local.resolve() == model_dir.resolve():
            raise ModelError(f"{where}: the cascade names itself as a member ({value!r})")
        return local

    try:
        rule = CascadeRoute(**{k: float(v) for k, v in route.items()})
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{where}: cascade route: {exc}") from None
    return member(spec["fast"]), member(spec["full"]), rule


def read_cascade_config(model_dir: Path) -> dict[str, Any]:
    """A cascade folder's ``config.json``, checked to be readable and named."""
    cfg_path = model_dir / "config.json"
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelError(f"{cfg_path}: cannot read the cascade's config ({exc})") from None
    if not isinstance(cfg, dict) or "name" not in cfg:
        raise ModelError(f"{cfg_path}: missing field 'name'")
    return cfg


def cascade_of(backend: type, model_dir: str | Path | None, settings: dict[str, Any]) -> Cascade | None:
    """The ``Cascade`` that ``backend(model_dir, **settings)`` stands for, or None for a single graph.

    ``JointModel.__new__`` and ``TorchJointModel.__new__`` ask this, so a cascade folder gives a
    cascade of two models of that backend, each with ``settings``.
    """
    resolved = resolve_model_dir(model_dir)
    return Cascade(resolved, functools.partial(backend, **settings)) if is_cascade(resolved) else None


def is_cascade(model_dir: Path) -> bool:
    """Whether ``model_dir`` holds a cascade's config (a cheap check that loads no model)."""
    try:
        return "cascade" in json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


class Cascade:
    """A model made of two: routes mentions between a fast and a full model (see the module doc).

    It has the interface of the models it is made of (``name``, ``model_dir``, ``config``,
    ``predict``, ``predict_logits``, ``wsd_threshold``, ``regard_offsets``, ``batch_invariant``,
    ``close``, ...); other settings (``device``, ``batch_size``, ``providers``, ...) are its full
    model's. ``JointModel(folder)`` and ``TorchJointModel(folder)`` return one for a cascade folder.

    Args:
        model_dir: the cascade's folder (its ``config.json`` has a ``"cascade"`` section).
        make: builds a member model from a name or folder (e.g. ``functools.partial(JointModel,
            batch_size=8)``), so both members get the caller's backend, device, batch size and
            threads; it must pickle (members are rebuilt in the process that unpickles).

    Counts what it routed (``seen``, ``routed``, ``last_routed``) for benchmarks and logs.
    """

    cascade: Cascade  # itself: callers that handle a cascade's members apart find them here

    def __init__(self, model_dir: str | Path, make: Callable[..., Any]) -> None:
        self.model_dir = Path(model_dir)
        self.config = read_cascade_config(self.model_dir)
        self.name: str = self.config["name"]
        spec = cascade_spec(self.model_dir, self.config)
        if spec is None:
            raise ModelError(f'{self.model_dir}/config.json: not a cascade (no "cascade" section)')
        fast_spec, full_spec, self.route = spec
        self._make = make
        self.fast, self.full = make(fast_spec), make(full_spec)
        for attr in ("wsd_threshold", "regard_offsets"):
            if getattr(self.fast, attr) != getattr(self.full, attr):
                raise ModelError(
                    f"{self.model_dir}/config.json: the cascade's models differ in {attr} "
                    f"({getattr(self.fast, attr)} vs {getattr(self.full, attr)}); their decisions must mean the same"
                )
        self.wsd_threshold: float = self.full.wsd_threshold
        self.regard_offsets: tuple[float, float, float] = (
            regard_offsets_of(self.config, self.model_dir / "config.json")
            if REGARD_OFFSETS_KEY in self.config
            else self.full.regard_offsets
        )
        self.max_length: int = self.full.max_length
        self.batch_invariant = bool(
            getattr(self.fast, "batch_invariant", False) and getattr(self.full, "batch_invariant", False)
        )
        self.cascade = self
        logger.debug("cascade %s: %s first, %s where %s", self.model_dir, fast_spec, full_spec, self.route)
        self.seen = 0
        self.routed = 0
        self.last_routed = 0  # mentions of the last call that went on to the full model
        self.last_batch_sizes: list[int] = []  # both models' forward passes of the last call
        self._shared: bool | None = None

    def __getattr__(self, name: str) -> Any:
        # settings and state of the backend (device, batch_size, providers, resolved_dtype, ...)
        if name.startswith("_") or "full" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.full, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self.model_dir), self._make))

    @property
    def tokenizer_file(self) -> Path:
        """The full model's ``tokenizer.json``."""
        return Path(self.full.tokenizer_file)

    def resolved_threads(self) -> tuple[int, int]:
        """The full model's ``(intra-op threads per pass, passes at once)``."""
        return tuple(self.full.resolved_threads())

    def predict(self, items: list[MentionInput]) -> list[Prediction]:
        """Predictions for a batch of mentions, in input order (the full model's where routed)."""
        if not items:
            return []
        return predictions_from_logits(*self.predict_logits(items), self.wsd_threshold, self.regard_offsets)

    def start_workers(self) -> None:
        """Start the fast model's tokenizer processes, if it has any (it tokenizes for both)."""
        start = getattr(self.fast, "start_workers", None)
        if start is not None:
            start()

    def close(self) -> None:
        """Stop both models' worker processes, if any."""
        for member in (self.fast, self.full):
            close = getattr(member, "close", None)
            if close is not None:
                close()

    def _shares_encoding(self) -> bool:
        """Whether the members build equal inputs (same tokenizer and length), so one tokenization serves both."""
        if self._shared is None:
            keys = [getattr(m, "encoding_key", None) for m in (self.fast, self.full)]
            self._shared = all(callable(k) for k in keys) and keys[0]() == keys[1]()  # type: ignore[misc]
        return self._shared

    def predict_logits(self, items: list[MentionInput]) -> tuple[np.ndarray, np.ndarray]:
        """Raw WSD and regard logits in input order: the full model's for routed mentions."""
        predict = self._predict_shared if self._shares_encoding() else self._predict_separately
        wsd, regard, routed = predict(items)
        self.seen += len(items)
        self.routed += routed
        self.last_routed = routed
        self.last_batch_sizes = [
            *getattr(self.fast, "last_batch_sizes", []),
            *(getattr(self.full, "last_batch_sizes", []) if routed else []),
        ]
        return wsd, regard

    def _predict_separately(self, items: list[MentionInput]) -> tuple[np.ndarray, np.ndarray, int]:
        """Logits and the number routed; each model tokenizes what it is given."""
        wsd, regard = self.fast.predict_logits(items)
        idx = np.flatnonzero(self.route.routed(wsd, regard, self.wsd_threshold))
        if len(idx):
            full_wsd, full_regard = self.full.predict_logits([items[i] for i in idx])
            wsd, regard = wsd.copy(), regard.copy()
            wsd[idx], regard[idx] = full_wsd, full_regard
        return wsd, regard, len(idx)

    def _predict_shared(self, items: list[MentionInput]) -> tuple[np.ndarray, np.ndarray, int]:
        """Logits and the number routed, tokenizing once: the routed rows of the fast model's inputs go on."""
        n = len(items)
        wsd = np.zeros((n, len(WSD_LABELS)), dtype=np.float32)
        regard = np.zeros((n, len(REGARD_LABELS)), dtype=np.float32)
        self.fast.last_batch_sizes, self.full.last_batch_sizes = [], []
        routed = 0
        for start, feeds in self.fast.encoded_chunks(items):
            stop = start + len(feeds["input_ids"])
            w, r = self.fast.run_encoded(feeds)
            idx = np.flatnonzero(self.route.routed(w, r, self.wsd_threshold))
            if len(idx):
                w[idx], r[idx] = self.full.run_encoded({k: v[idx] for k, v in feeds.items()})
            wsd[start:stop], regard[start:stop] = w, r
            routed += len(idx)
        return wsd, regard, routed
