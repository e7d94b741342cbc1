"""The training recipe: one frozen config for ``export.train``, ``export.train.fit`` and ``export.sweep``.

Before this, ``export.sweep`` defaulted ``regard_weight`` to 2.0 (the shipped recipe) while
``export.train`` defaulted it to 1.0, so the same "defaults" trained different models. The defaults
here are the shipped joint-v2 recipe (export/EXPERIMENTS.md); joint-v3 adds distillation flags on top (export.train --soft-labels).
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

PRECISIONS = ("fp32", "bf16")


def _opt(default: Any, help_: str) -> Any:
    return field(default=default, metadata={"help": help_})


@dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters of one training run (data selection lives with the commands that build the pool)."""

    epochs: float = _opt(4.0, "passes over the training pairs (fractions allowed)")
    lr: float = _opt(8e-5, "peak learning rate (linear warm-up and decay)")
    batch_size: int = _opt(16, "pairs per optimizer step")
    max_length: int = _opt(192, "tokens per input; longer sentences are cut around the keyword")
    regard_weight: float = _opt(2.0, "weight of the regard loss beside the WSD loss")
    wsd_weight: float = _opt(1.0, "weight of the WSD loss")
    dropout: float = _opt(0.1, "dropout before the heads")
    pooling: str = _opt("cls_span", "pooled vector: cls_span (first token + keyword tokens) or mean")
    seed: int = _opt(0, "seed of initialisation, shuffling and dropout")
    distill_weight: float = _opt(
        0.5, "with --soft-labels: share of the teacher's soft loss beside the gold loss"
    )
    temperature: float = _opt(2.0, "with --soft-labels: softmax temperature of teacher and student")
    encoder_layers: int = _opt(
        0, "keep this many of the encoder's layers, evenly spaced from the first (0: all): a faster student"
    )
    precision: str = _opt(
        "fp32",
        "training arithmetic: fp32, or bf16 (autocast: matmuls in bfloat16, weights, optimizer and losses "
        "in fp32; ~1.9x a step on a CPU with AVX-512 BF16, the usual choice on a GPU; emulated and far "
        "slower on an AVX2-only CPU, where training warns)",
    )

    def __post_init__(self) -> None:
        checks = {
            "epochs": self.epochs > 0,
            "lr": self.lr > 0,
            "batch_size": self.batch_size >= 1,
            "max_length": self.max_length >= 8,
            "regard_weight": self.regard_weight >= 0,
            "wsd_weight": self.wsd_weight >= 0,
            "dropout": 0 <= self.dropout < 1,
            "pooling": self.pooling in ("cls_span", "mean"),
            "seed": self.seed >= 0,
            "distill_weight": 0 <= self.distill_weight <= 1,
            "temperature": self.temperature > 0,
            "encoder_layers": self.encoder_layers >= 0,
            "precision": self.precision in PRECISIONS,
        }
        for name, ok in checks.items():
            if not ok:
                help_ = next(f.metadata["help"] for f in fields(self) if f.name == name)
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed ({help_})")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return asdict(self)

    @classmethod
    def from_mapping(cls, values: Any) -> TrainConfig:
        """From a dict or ``argparse.Namespace``; keys that are not recipe fields are ignored."""
        src = vars(values) if isinstance(values, argparse.Namespace) else dict(values)
        return cls(**{f.name: src[f.name] for f in fields(cls) if f.name in src})

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """``--epochs``, ``--lr``, ... with the recipe's defaults and help."""
        for f in fields(cls):
            default = f.default if f.default is not MISSING else None
            kind = type(default) if default is not None else str
            parser.add_argument(
                f"--{f.name.replace('_', '-')}",
                type=kind,
                default=default,
                help=f"{f.metadata['help']} (default: %(default)s)",
            )
