"""Timing one backend over a batch-size sweep, and how far its decisions are from the int8 model's."""

from __future__ import annotations

import logging
import statistics
import time
from typing import Any

import numpy as np

from fairstream.bench.backends import Backend
from fairstream.bench.machine import GpuSampler
from fairstream.bench.results import Row, rate
from fairstream.models.encoding import MentionInput

logger = logging.getLogger(__name__)


def probabilities(wsd: np.ndarray, regard: np.ndarray) -> np.ndarray:
    """Softmax of the WSD and the regard logits, side by side (the rows ``agreement`` compares)."""

    def soft(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return np.concatenate([soft(wsd.astype(np.float64)), soft(regard.astype(np.float64))], axis=1)


def agreement(p: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """Person-decision and regard agreement, and mean |dP|, of ``p`` against ``ref`` (``_probs`` rows)."""
    person = ref[:, 1] >= 0.5
    return {
        "person_agreement": round(float(((p[:, 1] >= 0.5) == person).mean()), 4),
        "regard_agreement": round(float((p[person, 3:].argmax(1) == ref[person, 3:].argmax(1)).mean()), 4)
        if person.any()
        else 1.0,
        "mean_abs_dp": round(float(np.abs(p - ref).mean()), 5),
    }


def time_backend(
    backend: Backend, pairs: list[MentionInput], rounds: int, reference: np.ndarray | None
) -> list[Row]:
    """One row per batch size of the backend's sweep (median of ``rounds``)."""
    if backend.make is None:
        return [Row(backend.name, backend.device, backend.precision, "-", skipped=backend.skipped)]
    rows = []
    first_probs: np.ndarray | None = None
    torch_mod: Any = None
    if backend.device.startswith("cuda"):
        import torch as torch_mod
    for bs in backend.sweep:
        model = backend.make(bs)
        if hasattr(model, "start_workers"):
            model.start_workers()
        # load and warm up outside the timing (on a GPU, with batches of the sizes the timed run uses)
        model.predict_logits(pairs[: min(len(pairs), 2048 if torch_mod is not None else 8)])
        walls, cpus = [], []
        gpu: dict[str, Any] | None = None
        logits: tuple[np.ndarray, np.ndarray] | None = None
        index = int(backend.device.split(":")[1]) if ":" in backend.device else 0
        for _ in range(rounds):
            if torch_mod is not None:
                torch_mod.cuda.reset_peak_memory_stats(backend.device)
            with GpuSampler(index) if torch_mod is not None else _Null() as sampler:
                t0, c0 = time.perf_counter(), time.process_time()
                logits = model.predict_logits(pairs)  # returns host arrays: the GPU work is done
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            if torch_mod is not None:
                gpu = {
                    "peak_allocated_mib": round(torch_mod.cuda.max_memory_allocated(backend.device) / 2**20),
                    "batch_sizes_used": sorted(set(getattr(model, "last_batch_sizes", [])))[-3:],
                    **sampler.summary(),
                }
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        assert logits is not None
        probs = probabilities(*logits)
        agree = agreement(probs, reference) if reference is not None else None
        if first_probs is None:
            first_probs = probs
        variation = round(float(np.abs(probs - first_probs).max()), 6) if len(pairs) else 0.0
        rows.append(
            Row(
                backend.name,
                backend.device,
                backend.precision,
                "auto" if bs is None else str(bs),
                len(pairs),
                round(wall, 3),
                round(cpu, 3),
                rate(len(pairs), wall),
                rate(len(pairs), cpu),
                agree,
                variation,
                gpu,
            )
        )
        logger.info("%s batch %s: %.1f pairs/s", backend.name, bs, len(pairs) / wall)
        if hasattr(model, "close"):  # its tokenizer processes, before the next batch size starts its own
            model.close()
    return rows


class _Null:
    def __enter__(self) -> _Null:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def summary(self) -> dict[str, Any]:
        return {}
