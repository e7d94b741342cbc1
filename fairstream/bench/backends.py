"""The model backends a run times (``BACKENDS``), each made at a batch size, with the fp32 / fp16 exports they need."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairstream.bench.results import BACKENDS, CPU_SWEEP, CUDA_SWEEP, QUICK_SWEEP


@dataclass
class Backend:
    """A model to time: ``make(batch_size)`` returns an object with ``predict_logits``."""

    name: str
    device: str
    precision: str
    make: Callable[[int | None], Any] | None
    sweep: tuple[int | None, ...]
    skipped: str | None = None


def _onnx_fp32_dir(tmp: Path, threads: int | None, model: str | Path | None = None) -> Path:
    """A model folder whose fp32 graph is the torch model (int8 weights dequantized), exported.

    A cascade gets a cascade folder whose two members are so exported (the same route, fp32 models).
    """
    from fairstream.models.cascade import cascade_spec
    from fairstream.models.runtime import JointModel, resolve_model_dir

    src = resolve_model_dir(model)
    cfg = dict(JointModel(src).config)
    spec = cascade_spec(src, cfg)
    if spec is None:
        return _export_fp32(src, tmp / "onnx-fp32", cfg)
    fast, full, _ = spec
    cfg["cascade"] = {
        **cfg["cascade"],
        "fast": str(_export_fp32(resolve_model_dir(fast), tmp / "onnx-fp32-fast")),
        "full": str(_export_fp32(resolve_model_dir(full), tmp / "onnx-fp32-full")),
    }
    out = tmp / "onnx-fp32"
    out.mkdir()
    (out / "config.json").write_text(json.dumps(cfg))
    return out


def _export_fp32(src: Path, out: Path, cfg: dict[str, Any] | None = None) -> Path:
    import torch

    from fairstream.models.runtime import JointModel
    from fairstream.models.torch_backend import build_torch_model

    module = build_torch_model(src, attn_implementation="eager")
    names = ["input_ids", "attention_mask", "token_type_ids", "target_mask"]
    dummy = (
        torch.ones((2, 12), dtype=torch.long),
        torch.ones((2, 12), dtype=torch.long),
        torch.zeros((2, 12), dtype=torch.long),
        torch.ones((2, 12), dtype=torch.float32),
    )
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "sequence"} for n in names}
    axes.update({"wsd_logits": {0: "batch"}, "regard_logits": {0: "batch"}})
    out.mkdir()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            dummy,
            str(out / "model.fp32.onnx"),
            input_names=names,
            output_names=["wsd_logits", "regard_logits"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    cfg = dict(cfg if cfg is not None else JointModel(src).config)
    cfg["onnx"] = {"fp32": "model.fp32.onnx"}
    (out / "config.json").write_text(json.dumps(cfg))
    shutil.copy(src / "tokenizer.json", out / "tokenizer.json")
    return out


def backends(
    device: str,
    *,
    threads: int | None,
    quick: bool,
    sweep: Sequence[int] | None,
    tmp: Path,
    only: Sequence[str] | None = None,
    model: str | Path | None = None,
) -> list[Backend]:
    """The backends this machine can time, and rows saying why for those it cannot.

    ``model``: the model folder or shipped name every backend runs (``None``: the default).

    ``only`` (keys of ``BACKENDS``) keeps those backends and builds nothing for the others (the fp32
    export, say), so a short device run can time just the rows it needs.
    """
    wanted = {BACKENDS[k] for k in only} if only else set(BACKENDS.values())
    from fairstream.models.loader import cuda_available, load_model, resolve_device
    from fairstream.models.runtime import JointModel

    cpu_sweep: tuple[int | None, ...] = tuple(sweep) if sweep else (QUICK_SWEEP if quick else CPU_SWEEP)
    cuda_sweep: tuple[int | None, ...] = tuple(sweep) if sweep else ((None,) if quick else CUDA_SWEEP)
    out = [
        Backend(
            "onnxruntime int8 (shipped)",
            "cpu",
            "int8",
            lambda bs: load_model(model, device="cpu", batch_size=bs, threads=threads),
            cpu_sweep,
        )
    ]
    torch_reason = None
    try:
        import onnx  # noqa: F401
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        torch_reason = f"{exc.name} is not installed (pip install 'fairstream[torch-backend]')"
    if torch_reason is None:
        if BACKENDS["onnx-fp32"] in wanted:  # its export takes a while: only when the row is timed
            try:
                fp32_dir = _onnx_fp32_dir(tmp, threads, model)
                out.append(
                    Backend(
                        "onnxruntime fp32",
                        "cpu",
                        "fp32",
                        lambda bs: JointModel(
                            fp32_dir,
                            providers=["CPUExecutionProvider"],
                            batch_size=bs or 8,
                            intra_op_threads=threads,
                        ),
                        cpu_sweep,
                    )
                )
            except Exception as exc:  # the baseline is optional: say why it is missing
                out.append(Backend("onnxruntime fp32", "cpu", "fp32", None, (), f"export failed: {exc}"))
        out.append(
            Backend(
                "pytorch fp32 (transformers, sdpa)",
                "cpu",
                "fp32",
                lambda bs: load_model(model, device="cpu", backend="torch", batch_size=bs, threads=threads),
                cpu_sweep,
            )
        )
        # AMX / AVX512-BF16 CPUs run bf16 GEMMs natively: a fast CPU baseline there, but not
        # batch-invariant (its max_dp_vs_first_batch column says by how much)
        from fairstream.models.torch_backend import cpu_has_fast_bf16

        bf16_reason = None if cpu_has_fast_bf16() else "oneDNN has no bf16 on this CPU"
        make_bf16 = None if bf16_reason else _torch_maker("cpu", "bfloat16", threads, model)
        out.append(Backend(BACKENDS["torch-bf16"], "cpu", "bf16", make_bf16, cpu_sweep, bf16_reason))
    else:
        out.append(Backend("onnxruntime fp32", "cpu", "fp32", None, (), torch_reason))
        out.append(Backend("pytorch fp32 (transformers, sdpa)", "cpu", "fp32", None, (), torch_reason))
        out.append(Backend(BACKENDS["torch-bf16"], "cpu", "bf16", None, (), torch_reason))
    gpu = resolve_device(device) if device != "cpu" else "cpu"
    no_gpu = None
    if torch_reason is not None:
        no_gpu = torch_reason
    elif not cuda_available():
        no_gpu = "no CUDA device (torch.cuda.is_available() is False)"
    elif device == "cpu":
        no_gpu = "--device cpu"
    gpu = gpu if gpu != "cpu" else "cuda"
    for precision in ("float16", "bfloat16"):
        short = "fp16" if precision == "float16" else "bf16"
        name = f"pytorch {short} (sdpa)"
        reason = no_gpu
        if reason is None and precision == "bfloat16":
            import torch

            with torch.cuda.device(gpu):
                if not torch.cuda.is_bf16_supported():
                    reason = "this GPU has no bf16"
        make = None if reason else _torch_maker(gpu, precision, model=model)
        out.append(Backend(name, gpu, short, make, cuda_sweep, reason))
    import onnxruntime

    ort_reason = no_gpu or (
        None
        if "CUDAExecutionProvider" in onnxruntime.get_available_providers()
        else "onnxruntime has no CUDA provider (pip install 'fairstream[gpu]': onnxruntime-gpu, CUDA 12)"
    )
    out.append(Backend("onnxruntime fp16 (CUDA provider)", gpu, "fp16", None, (), ort_reason or None))
    if ort_reason is None and BACKENDS["ort-cuda-fp16"] in wanted:
        fp16_dir = _onnx_fp16_dir(tmp)
        out[-1] = Backend(
            "onnxruntime fp16 (CUDA provider)",
            gpu,
            "fp16",
            lambda bs: load_model(fp16_dir, device=gpu, backend="onnxruntime", batch_size=bs or 256),
            tuple(b for b in cuda_sweep if b is not None) or (256,),
        )
    return [b for b in out if b.name in wanted]


def _torch_maker(
    device: str, dtype: str, threads: int | None = None, model: str | Path | None = None
) -> Callable[[int | None], Any]:
    from fairstream.models.loader import load_model

    return lambda bs: load_model(
        model, device=device, backend="torch", dtype=dtype, batch_size=bs, threads=threads
    )


def _onnx_fp16_dir(tmp: Path) -> Path:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    src = tmp / "onnx-fp32"
    out = tmp / "onnx-fp16"
    shutil.copytree(src, out)
    model = onnx.load(str(src / "model.fp32.onnx"))
    onnx.save(convert_float_to_float16(model, keep_io_types=True), str(out / "model.fp16.onnx"))
    cfg = json.loads((out / "config.json").read_text())
    cfg["onnx"] = {"fp16": "model.fp16.onnx"}
    (out / "config.json").write_text(json.dumps(cfg))
    return out
