"""What a run measures: ``Row`` (one model-stage measurement) and ``BenchResult`` (a whole run).

Also the run's fixed sizes (``--quick``, the batch-size sweeps) and the backend names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

QUICK_DOCS = 40


QUICK_PAIRS = 48


CPU_SWEEP = (1, 8, 32, 128)


QUICK_SWEEP = (1, 8)


CUDA_SWEEP: tuple[int | None, ...] = (64, 256, 1024, None)  # None: auto-sized from free memory


# --backends keys -> row names (the table and JSON keep the long names)
BACKENDS = {
    "int8": "onnxruntime int8 (shipped)",
    "onnx-fp32": "onnxruntime fp32",
    "torch-fp32": "pytorch fp32 (transformers, sdpa)",
    "torch-bf16": "pytorch bf16 on CPU (oneDNN, sdpa)",
    "cuda-fp16": "pytorch fp16 (sdpa)",
    "cuda-bf16": "pytorch bf16 (sdpa)",
    "ort-cuda-fp16": "onnxruntime fp16 (CUDA provider)",
}


@dataclass
class Row:
    """One model-stage measurement (or the reason it could not be made)."""

    backend: str
    device: str
    precision: str
    batch_size: str
    pairs: int = 0
    wall_s: float | None = None
    cpu_s: float | None = None
    pairs_per_s: float | None = None
    pairs_per_cpu_s: float | None = None
    agreement_vs_int8: dict[str, float] | None = None
    # largest |dP| against the same backend at the sweep's first batch size: 0.0 for a batch-invariant
    # model, whose decisions (and so a resumed run's) cannot depend on what shared a batch
    max_dp_vs_first_batch: float | None = None
    gpu: dict[str, Any] | None = None
    skipped: str | None = None


@dataclass
class BenchResult:
    """Everything one run measured; ``to_dict`` is the JSON written by ``--json`` / ``--output``."""

    machine: dict[str, Any]
    corpus: dict[str, Any]
    end_to_end: dict[str, Any]
    keyword_stage: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    complete: bool = False  # False while a run is under way (or was stopped): the rows so far

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        out = asdict(self)
        out["rows"] = [asdict(r) for r in self.rows]
        return out


def rate(n: float, seconds: float | None, digits: int = 1) -> float | None:
    """``n / seconds`` rounded, or None without a time."""
    return round(n / seconds, digits) if seconds else None
