"""One place that turns a ``device`` setting into a model backend.

=========  ==============================================================================
device     backend
=========  ==============================================================================
``cpu``    ONNX Runtime, int8 graph (``JointModel``; no torch imported)
``cuda``   PyTorch in bf16/fp16 (``TorchJointModel``); ``cuda:N`` picks the GPU
``auto``   ``cuda`` when torch sees a CUDA device, else ``cpu``
=========  ==============================================================================

ONNX Runtime's CUDA / TensorRT providers stay available with ``backend="onnxruntime"`` on a CUDA
device when ``onnxruntime-gpu`` is installed and the model folder holds an fp16 or fp32 graph
(dynamic int8 does not run on the CUDA provider); PyPI's ``onnxruntime-gpu`` wheels target CUDA 12,
so PyTorch is the default GPU path.
"""

from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path
from typing import Any

from fairstream.errors import ModelError, option
from fairstream.models.settings import check_batch_size

logger = logging.getLogger(__name__)

DEVICES = ("cpu", "cuda", "cuda:N", "auto")
BACKENDS = ("auto", "torch", "onnxruntime")


def parse_device(device: Any, *, name: str = "device") -> str:
    """Check a device setting; returns it normalised (``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``).

    Raises:
        ValueError: naming the argument (``device=`` or ``--device``) and the allowed values.
    """
    value = device.strip().lower() if isinstance(device, str) else device
    if isinstance(value, str) and (value in ("cpu", "cuda", "auto") or re.fullmatch(r"cuda:\d+", value)):
        return value
    raise ValueError(f"{option(name, device)}: must be one of {', '.join(DEVICES)} (N: a GPU index >= 0)")


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA device (imports torch only if it is installed)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` or ``cpu``; other values checked and returned."""
    device = parse_device(device)
    if device == "auto":
        device = "cuda" if cuda_available() else "cpu"
        logger.info("device='auto' resolved to %r", device)
    return device


def load_model(
    model_dir: str | Path | None = None,
    *,
    device: str = "cpu",
    batch_size: int | None = None,
    backend: str = "auto",
    dtype: str = "auto",
    threads: int | None = None,
) -> Any:
    """The joint model for ``device``: ``JointModel`` (ONNX Runtime) or ``TorchJointModel``.

    Args:
        model_dir: model folder or shipped model name (``None``: the shipped default, ``joint-v6-cascade``).
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (see the module docstring).
        batch_size: rows per forward pass; ``None``: 8 on CPU (ONNX Runtime), sized from free GPU
            memory on CUDA.
        backend: on CUDA, ``torch`` (default) or ``onnxruntime`` (needs ``onnxruntime-gpu`` and an
            fp16/fp32 graph); ``auto`` picks ONNX Runtime on CPU and torch on CUDA.
        dtype: torch dtype on CUDA (``auto``: bf16 where supported, else fp16).
        threads: intra-op threads on CPU (``None``: the library's default).
    """
    device = resolve_device(device)
    if backend not in BACKENDS:
        raise ValueError(f"{option('backend', backend)}: must be one of {', '.join(BACKENDS)}")
    check_batch_size(batch_size)
    if device == "cpu" and backend != "torch":
        from fairstream.models.runtime import DEFAULT_BATCH_SIZE, JointModel

        return JointModel(
            model_dir,
            providers=["CPUExecutionProvider"],
            batch_size=batch_size or DEFAULT_BATCH_SIZE,
            intra_op_threads=threads,
        )
    if device != "cpu" and backend == "onnxruntime":
        return _onnxruntime_gpu(model_dir, device, batch_size or 64, threads)
    from fairstream.models.torch_backend import TorchJointModel

    return TorchJointModel(model_dir, device=device, dtype=dtype, batch_size=batch_size, threads=threads)


def load_model_for(config: Any) -> Any:
    """The model a ``FilterConfig`` asks for (``model``, ``device``, ``batch_size``).

    ``batch_size=None`` (the default) is 8 on a CPU and sized from free memory on a GPU; a value
    given is used as it is, on any device.
    """
    return load_model(config.model, device=parse_device(config.device), batch_size=config.batch_size)


def _onnxruntime_gpu(model_dir: str | Path | None, device: str, batch_size: int, threads: int | None) -> Any:
    import onnxruntime as ort

    from fairstream.models.runtime import JointModel

    available = ort.get_available_providers()
    if "CUDAExecutionProvider" not in available:
        raise ModelError(
            f"backend='onnxruntime' on {device}: onnxruntime has no CUDA provider (installed: {available}); "
            "pip install 'fairstream[gpu]' (onnxruntime-gpu, CUDA 12) or use the torch backend"
        )
    if device not in ("cuda", "cuda:0"):
        raise ModelError(
            f"backend='onnxruntime' runs on cuda:0 only here (got {device}); use the torch backend for other GPUs"
        )
    model = JointModel(model_dir, batch_size=batch_size, intra_op_threads=threads)
    # a cascade (the default) has no graph of its own: each of its two models needs one
    graphs = [model] if model.cascade is None else [model.cascade.fast, model.cascade.full]
    for graph in graphs:
        if not {"fp16", "fp32"} & set(graph.config["onnx"]):
            raise ModelError(
                f"{graph.model_dir}: no fp16/fp32 ONNX graph for the CUDA provider (int8 runs on CPU only); "
                "export one with fp16 (export/export_onnx.py --fp16 in fairstream's source repository) or use the "
                "torch backend"
            )
    # the CPU provider last: ops the GPU providers do not take fall back to it
    providers = [p for p in ("TensorrtExecutionProvider", "CUDAExecutionProvider") if p in available]
    providers.append("CPUExecutionProvider")
    return JointModel(model_dir, providers=providers, batch_size=batch_size, intra_op_threads=threads)
