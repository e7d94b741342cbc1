"""``fairstream bench``: measure this machine on your own shards (or the shipped sample corpus).

What one run measures, side by side:

* **end to end**: the filter step (what ``FairStream`` and ``fairstream filter`` run) over the documents with the model of ``--device``:
  docs/s, MB/s, judged mentions/s and the time split between the keyword stage (prefilter,
  sentences, tokens, length filter) and the model;
* **the keyword stage alone** over the same documents, which also collects the unique (sentence,
  keyword) pairs the model stage judges;
* **the model stage** on those pairs for each backend (pairs/s and a batch-size sweep): ONNX Runtime
  int8 (the shipped CPU path), ONNX Runtime fp32 (the same weights dequantized and exported), PyTorch
  fp32 (transformers, CPU), and on a CUDA GPU PyTorch fp16 / bf16 (plus ONNX Runtime CUDA when
  ``onnxruntime-gpu`` is installed); each backend's decisions are compared with the int8 model's;
* GPU name, peak memory (``torch.cuda``) and utilisation (``nvidia-smi``, sampled) where a GPU is present.

A backend that cannot run here is a row that says why, never a number. Rates are given per
wall-clock second and per CPU second of this process (the latter is steadier on a shared machine;
on a GPU the wall clock is what counts).
"""

from __future__ import annotations

import json
import logging
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.models.encoding import MentionInput
from fairstream.models.names import shipped_models_text
from fairstream.processes import usable_cores

logger = logging.getLogger(__name__)

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


# -- machine ----------------------------------------------------------------------------------------
# instruction sets that change int8 speed and results: without VNNI, onnxruntime's u8 x s8 GEMM sums
# pairs of products in 16 bits, which can saturate (joint-v6's hold-out scores move by up to 0.018)
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def cpu_model_and_features() -> tuple[str, list[str]]:
    """The CPU's model name and its flags among ``ISA_FLAGS``, from one read of Linux ``/proc/cpuinfo``.

    Elsewhere (or unreadable): ``platform.processor()`` and no flags.
    """
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    first: dict[str, str] = {}  # the first core's fields
    for line in lines:
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())
    flags = set(first.get("flags", "").split())
    return first.get("model name") or platform.processor(), [f for f in ISA_FLAGS if f in flags]


def machine_info() -> dict[str, Any]:
    """CPU, cores, library versions and (where present) the GPU."""
    import onnxruntime

    cpu, features = cpu_model_and_features()
    info: dict[str, Any] = {
        "cpu": cpu,
        "cpu_features": features,
        "cores": usable_cores(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "onnxruntime": onnxruntime.__version__,
        "onnxruntime_providers": onnxruntime.get_available_providers(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda_available"] = bool(torch.cuda.is_available())
        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            info["gpu"] = {
                "name": props.name,
                "memory_gb": round(props.total_memory / 2**30, 1),
                "count": torch.cuda.device_count(),
                "cuda": torch.version.cuda,
            }
    except ImportError:
        info["torch"] = None
        info["cuda_available"] = False
    return info


class GpuSampler:
    """Samples ``nvidia-smi`` utilisation and memory while a block runs (nothing where it is missing)."""

    def __init__(self, index: int = 0, period_ms: int = 200) -> None:
        self.index, self.period_ms = index, period_ms
        self.proc: subprocess.Popen[str] | None = None
        self.samples: list[tuple[float, float]] = []
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GpuSampler:
        exe = shutil.which("nvidia-smi")
        if exe:
            self.proc = subprocess.Popen(
                [
                    exe,
                    "--query-gpu=utilization.gpu,memory.used",
                    "--format=csv,noheader,nounits",
                    f"-i={self.index}",
                    f"-lms={self.period_ms}",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            self._thread = threading.Thread(target=self._read, daemon=True)
            self._thread.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                util, mem = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((util, mem))

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def summary(self) -> dict[str, Any]:
        """Mean / max utilisation (%) and max memory used (MiB), or why there is none."""
        if self.proc is None:
            return {"nvidia_smi": "not found on PATH"}
        if not self.samples:
            return {"nvidia_smi": "no samples (run shorter than the sampling period)"}
        util = [u for u, _ in self.samples]
        return {
            "util_mean_pct": round(statistics.fmean(util), 1),
            "util_max_pct": max(util),
            "memory_used_max_mib": max(m for _, m in self.samples),
            "samples": len(self.samples),
        }


# -- inputs -----------------------------------------------------------------------------------------
def load_texts(
    shards: Sequence[str | Path], *, text_field: str = "text", limit: int | None = None
) -> tuple[list[str], list[str]]:
    """Texts of the first ``limit`` documents of ``shards`` (default: the shipped sample corpus)."""
    from fairstream.cli import sample_corpus_path
    from fairstream.io import iter_records, list_shards

    paths = list_shards(shards) if shards else [sample_corpus_path()]
    texts: list[str] = []
    for path in paths:
        for line, record in iter_records(path, on_error="skip"):
            text = record.get(text_field)
            if not isinstance(text, str):
                logger.warning("%s:%d: no string field %r; skipped", path, line, text_field)
                continue
            texts.append(text)
            if limit is not None and len(texts) >= limit:
                return texts, [str(p) for p in paths]
    return texts, [str(p) for p in paths]


def keyword_stage(texts: list[str]) -> tuple[dict[str, Any], list[MentionInput]]:
    """Time the keyword stage over ``texts``; return its numbers and the unique pairs to judge."""
    from fairstream.candidates import CandidateExtractor

    extractor = CandidateExtractor()
    extractor.scan("warm up the splitter and tokenizer with a Muslim keyword in a sentence.")
    unique: dict[tuple[str, int, int, str], MentionInput] = {}
    occurrences = sentences = 0
    t0, c0 = time.perf_counter(), time.process_time()
    scans = [extractor.scan(t) for t in texts]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for text, scan in zip(texts, scans, strict=True):
        for cand in scan.candidates:
            sentences += 1
            sent = text[cand.start : cand.end]
            for m in cand.mentions:
                occurrences += 1
                key = (sent, m.start - cand.start, m.end - cand.start, m.keyword)
                if key not in unique:
                    attr = extractor.taxonomy[m.keyword]
                    unique[key] = MentionInput(sent, key[1], key[2], attr.keyword, attr.gloss)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    stats = {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "docs_per_s": _rate(len(texts), wall),
        "mb_per_s": _rate(mb, wall, 3),
        "mb_per_cpu_s": _rate(mb, cpu, 3),
        "candidate_sentences": sentences,
        "mentions": occurrences,
        "unique_pairs": len(unique),
        "duplicate_share": round(1 - len(unique) / occurrences, 4) if occurrences else 0.0,
    }
    return stats, list(unique.values())


def _rate(n: float, seconds: float | None, digits: int = 1) -> float | None:
    return round(n / seconds, digits) if seconds else None


# -- backends ---------------------------------------------------------------------------------------
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


def _probs(wsd: np.ndarray, regard: np.ndarray) -> np.ndarray:
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
        probs = _probs(*logits)
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
                _rate(len(pairs), wall),
                _rate(len(pairs), cpu),
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


def _children_cpu() -> float:
    """CPU seconds of this process's ended child processes (the scan workers), where the OS says."""
    try:
        import resource
    except ImportError:  # Windows: the scan workers' time is not counted
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def end_to_end(
    texts: list[str],
    device: str,
    threads: int | None,
    batch_size: int | None,
    scan_workers: int | None = None,
    lookahead: int | None = None,
    model_name: str | Path | None = None,
) -> dict[str, Any]:
    """The filter over ``texts`` with the model of ``device``: rates and the stage split.

    Runs ``FilterStep``, the core that every adapter (``FairStream``, ``fairstream filter``,
    ``datasets.map``, ...) feeds, over look-ahead windows as the adapters do (with scan workers, the
    next window is handed to them before the current one is judged); no torch on the CPU path.
    """
    from fairstream.core.config import FilterConfig
    from fairstream.core.step import FilterStep
    from fairstream.models.loader import load_model, resolve_device

    device = resolve_device(device)
    model = load_model(model_name, device=device, batch_size=batch_size, threads=threads)
    settings: dict[str, Any] = {"lookahead": lookahead} if lookahead is not None else {}
    step = FilterStep(
        FilterConfig(cap=0.01, device=device, scan_workers=scan_workers, **settings), model=model
    )
    window = step.config.lookahead
    # warm up outside the timing: the scan workers first (a scan the run never asks for), so they
    # fork before CUDA starts in this process
    step.tagger.prefetch(["An Asian visitor met a Muslim neighbour.", "A Muslim family opened a bakery."])
    if hasattr(model, "start_workers"):  # the torch backend's tokenizer processes (on a GPU)
        model.start_workers()
    model.predict_logits(
        [MentionInput("A Muslim family opened a bakery.", 2, 8, "muslim", "who believes in Islam")]
    )
    if getattr(model, "cascade", None) is not None:  # count the run's pairs only
        model.cascade.seen = model.cascade.routed = 0
    t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
    n_out = 0
    windows = ((lo, texts[lo : lo + window]) for lo in range(0, len(texts), window))
    for lo, chunk in step.read_ahead(windows, lambda w: w[1]):
        n_out += len(step.process(chunk, start=lo, annotate=False))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # both wait for their helper processes (scan workers, tokenizer processes): their CPU time counts
    step.tagger.close()
    if hasattr(model, "close"):
        model.close()
    cpu += _children_cpu() - k0
    stats = step.stats()
    seconds = stats.get("seconds", {})
    mentions = stats.get("counters", {}).get("mentions_predicted", 0)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    keyword_s, model_s = float(seconds.get("scan", 0.0)), float(seconds.get("model", 0.0))
    return {
        "device": device,
        "model": model.name,
        "backend": type(model).__name__,
        "scan_workers": step.tagger.scan_workers,
        "tokenize_workers": getattr(model, "tokenize_workers", 0),
        "lookahead": window,
        "docs": len(texts),
        "docs_out": n_out,
        "mb": round(mb, 3),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "docs_per_s": _rate(len(texts), wall),
        "mb_per_s": _rate(mb, wall, 3),
        "mb_per_cpu_s": _rate(mb, cpu, 3),
        "mentions_judged": mentions,
        "mentions_per_s": _rate(mentions, wall),
        "docs_per_cpu_s": _rate(len(texts), cpu),
        "mentions_per_cpu_s": _rate(mentions, cpu),
        "split": {
            "keyword_stage_s": round(keyword_s, 3),
            "model_s": round(model_s, 3),
            "rest_s": round(max(0.0, wall - keyword_s - model_s), 3),
            "model_share": round(model_s / wall, 3) if wall else None,
            "keyword_share": round(keyword_s / wall, 3) if wall else None,
        },
        # a cascade (the default): the share of judged pairs its fast model sent on to the full one
        "cascade_routed_share": _routed_share(model),
    }


def _routed_share(model: Any) -> float | None:
    cascade = getattr(model, "cascade", None)
    if cascade is None or not cascade.seen:
        return None
    return round(cascade.routed / cascade.seen, 4)


# -- the run ----------------------------------------------------------------------------------------
def run_bench(
    shards: Sequence[str | Path] = (),
    *,
    device: str = "auto",
    limit: int | None = None,
    quick: bool = False,
    batch_sizes: Sequence[int] | None = None,
    rounds: int = 1,
    threads: int | None = None,
    max_pairs: int | None = None,
    text_field: str = "text",
    progress: bool = True,
    scan_workers: int | None = None,
    only: Sequence[str] | None = None,
    on_update: Callable[[BenchResult], None] | None = None,
    model: str | Path | None = None,
    lookahead: int | None = None,
) -> BenchResult:
    """Measure everything described in the module docstring; see ``fairstream bench --help``.

    ``only``: keys of ``BACKENDS`` to time (default all). ``on_update`` is called with the result so
    far after the end-to-end run and after each backend (``complete`` False until the end), so a run
    that is stopped still leaves what it measured. ``model``: model folder or shipped name (``None``:
    the default), run by every row. ``lookahead``: documents per window of the end-to-end run
    (``None``: the filter's default).
    """
    unknown = sorted(set(only or ()) - set(BACKENDS))
    if unknown:
        raise ValueError(f"only={unknown}: unknown backends; allowed: {', '.join(BACKENDS)}")
    from tqdm import tqdm

    from fairstream.models.loader import load_model, parse_device

    device = parse_device(device)
    from fairstream.models.runtime import JointModel

    # a missing folder or unknown name fails here, naming the shipped models, before any work
    JointModel(model)
    if rounds < 1:
        raise ValueError(f"rounds={rounds} must be >= 1")
    if threads is not None and threads < 1:
        raise ValueError(f"threads={threads} must be >= 1")
    texts, paths = load_texts(
        shards, text_field=text_field, limit=QUICK_DOCS if quick and limit is None else limit
    )
    if not texts:
        raise ValueError(f"no documents with a string field {text_field!r} in {paths}")
    kw, pairs = keyword_stage(texts)
    cap = QUICK_PAIRS if quick and max_pairs is None else max_pairs
    pairs = pairs[:cap] if cap else pairs
    if not pairs:
        raise ValueError(f"no keyword mentions to judge in {len(texts)} documents; give more or other shards")
    e2e = end_to_end(texts, device, threads, None, scan_workers, lookahead=lookahead, model_name=model)
    result = BenchResult(
        machine_info(),
        {"shards": paths, "docs": len(texts), "mb": e2e["mb"], "pairs_timed": len(pairs)},
        e2e,
        kw,
    )
    if on_update is not None:
        on_update(result)
    # every backend's decisions (the int8 model's too, at each batch size) against the shipped int8 model
    reference = _probs(*load_model(model, device="cpu", batch_size=8, threads=threads).predict_logits(pairs))
    with tempfile.TemporaryDirectory(prefix="fairstream-bench-") as tmp:
        todo = backends(
            device, threads=threads, quick=quick, sweep=batch_sizes, tmp=Path(tmp), only=only, model=model
        )
        bar = tqdm(todo, desc="fairstream bench", unit="backend", disable=not progress, file=sys.stderr)
        for backend in bar:
            bar.set_postfix_str(backend.name)
            result.rows.extend(time_backend(backend, pairs, rounds, reference))
            if on_update is not None:
                on_update(result)
    result.complete = True
    return result


# -- output -----------------------------------------------------------------------------------------
def _fmt(v: Any, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def format_table(result: BenchResult) -> str:
    """The terminal / Markdown table of a run."""
    m, e, k = result.machine, result.end_to_end, result.keyword_stage
    gpu = m.get("gpu")
    lines = [
        f"Machine: {m['cpu']}"
        + (f" ({', '.join(m['cpu_features'])})" if m.get("cpu_features") else "")
        + f", {m['cores']} cores; "
        + (f"GPU {gpu['name']} ({gpu['memory_gb']} GB, CUDA {gpu['cuda']})" if gpu else "no GPU")
        + f"; Python {m['python']}, onnxruntime {m['onnxruntime']}, torch {m.get('torch')}; {m['date']}.",
        f"Corpus: {result.corpus['docs']} documents, {result.corpus['mb']} MB ({', '.join(result.corpus['shards'][:3])}"
        + (" ..." if len(result.corpus["shards"]) > 3 else "")
        + ").",
        "",
        f"End to end (the filter step, {e['backend']} on {e['device']}, "
        f"{e.get('scan_workers', 0)} keyword-stage worker processes"
        + (f", {e['tokenize_workers']} tokenizer processes" if e.get("tokenize_workers") else "")
        + (f", look-ahead {e['lookahead']} documents" if e.get("lookahead") else "")
        + f"): {_fmt(e['docs_per_s'], 1)} docs/s, "
        f"{_fmt(e['mb_per_s'], 3)} MB/s, {_fmt(e['mentions_per_s'], 1)} judged mentions/s "
        f"({e['mentions_judged']} mentions, {e['wall_s']} s wall, {e['cpu_s']} s CPU); "
        f"time: model {e['split']['model_share']:.0%}, keyword stage {e['split']['keyword_share']:.0%}."
        + (
            f" The cascade sent {e['cascade_routed_share']:.1%} of the judged pairs on to its full model."
            if e.get("cascade_routed_share") is not None
            else ""
        ),
        f"Keyword stage alone: {_fmt(k['mb_per_s'], 3)} MB/s ({_fmt(k['mb_per_cpu_s'], 3)} MB per CPU s), "
        f"{k['candidate_sentences']} candidate sentences, {k['mentions']} mentions, {k['unique_pairs']} unique "
        f"pairs ({k['duplicate_share']:.1%} repeats).",
        "",
        "Model stage on the unique pairs (rates per wall second / per CPU second of this process):",
        "",
        "| backend | device | batch | pairs/s | pairs per CPU s | person agree vs int8 | mean abs dP "
        "| max dP vs first batch | GPU util / peak mem |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in result.rows:
        if r.skipped:
            lines.append(f"| {r.backend} | {r.device} | - | not run: {r.skipped} | | | | | |")
            continue
        a = r.agreement_vs_int8 or {}
        g = r.gpu or {}
        gpu_cell = (
            f"{g.get('util_mean_pct', '-')}% / {g.get('peak_allocated_mib', '-')} MiB"
            + (f" ({g['nvidia_smi']})" if "nvidia_smi" in g else "")
            if g
            else ""
        )
        lines.append(
            f"| {r.backend} | {r.device} | {r.batch_size} | {_fmt(r.pairs_per_s, 1)} | {_fmt(r.pairs_per_cpu_s, 1)} | "
            f"{a.get('person_agreement', 0):.2%} | {a.get('mean_abs_dp', 0):.4f} | "
            f"{_fmt(r.max_dp_vs_first_batch, 4)} | {gpu_cell} |"
        )
    best = best_rates(result)
    base = best.get("pytorch fp32 (transformers, sdpa)")
    if base:
        ratios = ", ".join(f"{name} {rate / base:.2f}x" for name, rate in best.items())
        lines += ["", f"Best per backend, ratio to PyTorch fp32 on CPU (pairs per CPU second): {ratios}."]
    return "\n".join(lines)


def best_rates(result: BenchResult) -> dict[str, float]:
    """Each measured backend's best pairs/s over its batch sizes (per CPU second on CPU, wall on GPU)."""
    best: dict[str, float] = {}
    for r in result.rows:
        rate = r.pairs_per_cpu_s if r.device == "cpu" else r.pairs_per_s
        if rate is not None:
            best[r.backend] = max(best.get(r.backend, 0.0), rate)
    return best


def plot_sweep(result: BenchResult) -> bytes:
    """PNG: pairs/s against batch size, one line per backend."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    series: dict[str, list[tuple[int, float]]] = {}
    for r in result.rows:
        if r.pairs_per_s is None or r.batch_size in ("-", "auto"):
            continue
        rate = r.pairs_per_cpu_s if r.device == "cpu" and r.pairs_per_cpu_s else r.pairs_per_s
        series.setdefault(f"{r.backend} ({r.device})", []).append((int(r.batch_size), rate))
    for name, pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xscale("log", base=2)
    sizes = sorted({p[0] for pts in series.values() for p in pts})
    if sizes:
        ax.set_xticks(sizes, [str(b) for b in sizes])
        ax.minorticks_off()
    ax.set_xlabel("batch size (pairs per forward pass)")
    ax.set_ylabel("pairs/s (CPU: per CPU second)")
    ax.set_title("fairstream bench: model stage throughput", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def write_outputs(result: BenchResult, folder: Path, *, plot: bool = True) -> list[Path]:
    """``bench.json``, ``bench.md`` and ``batch_sweep.png`` in ``folder`` (each written atomically).

    ``plot=False`` leaves the plot out (the partial results written while a run goes on).
    """
    from fairstream.io import atomic_write, write_json

    paths = [folder / "bench.json", folder / "bench.md"]
    write_json(paths[0], result.to_dict())
    head = "# fairstream bench\n\n" + ("" if result.complete else "*Partial: the run has not finished.*\n\n")
    with atomic_write(paths[1]) as f:
        f.write(head + format_table(result) + "\n")
    if plot:
        paths.append(folder / "batch_sweep.png")
        with atomic_write(paths[2], "wb") as f:
            f.write(plot_sweep(result))
    return paths


# -- command line -----------------------------------------------------------------------------------
def _batch_sizes(value: str) -> list[int]:
    import argparse

    try:
        sizes = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(b < 1 for b in sizes):
        raise argparse.ArgumentTypeError(
            f"{value!r}: must be comma-separated whole numbers >= 1, e.g. 1,8,32"
        )
    return sizes


def _device(value: str) -> str:
    import argparse

    from fairstream.models.loader import DEVICES, parse_device

    try:
        return parse_device(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: must be one of {', '.join(DEVICES)}") from None


def _whole(least: int) -> Callable[[str], int]:
    import argparse

    def check(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            n = least - 1
        if n < least:
            raise argparse.ArgumentTypeError(f"{value!r}: must be a whole number >= {least}")
        return n

    return check


def _backend_keys(value: str) -> list[str]:
    import argparse

    keys = [k.strip() for k in value.split(",") if k.strip()]
    bad = [k for k in keys if k not in BACKENDS]
    if not keys or bad:
        raise argparse.ArgumentTypeError(f"{value!r}: must be comma-separated of {', '.join(BACKENDS)}")
    return keys


def cmd_bench(args: Any) -> int:
    """Run the benchmark; print the table (or JSON) and write the output folder."""
    seen_rows = [0]

    def on_update(partial: BenchResult) -> None:
        # an interrupted run (a time limit, Ctrl-C) still leaves what it measured
        if args.output:
            write_outputs(partial, Path(args.output), plot=False)
        if args.no_progress:
            for row in partial.rows[seen_rows[0] :]:
                rate = "skipped: " + str(row.skipped) if row.skipped else f"{row.pairs_per_s} pairs/s"
                print(f"fairstream bench: {row.backend} batch {row.batch_size}: {rate}", file=sys.stderr)
            if not seen_rows[0] and not partial.rows:
                e = partial.end_to_end
                print(f"fairstream bench: end to end {e['mb_per_s']} MB/s on {e['device']}", file=sys.stderr)
            seen_rows[0] = len(partial.rows)

    result = run_bench(
        args.inputs,
        device=args.device,
        limit=args.limit,
        quick=args.quick,
        batch_sizes=args.batch_sizes,
        rounds=args.rounds,
        threads=args.threads,
        max_pairs=args.max_pairs,
        text_field=args.text_field,
        progress=not args.no_progress,
        scan_workers=args.scan_workers,
        only=args.backends,
        on_update=on_update,
        model=args.model,
        lookahead=args.lookahead,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(format_table(result))
    if args.output:
        for path in write_outputs(result, Path(args.output)):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def register(add: Callable[..., Any]) -> None:
    """Add ``fairstream bench`` with ``cli.build_parser``'s ``add`` helper."""
    p = add(
        "bench",
        cmd_bench,
        "Measure throughput on this machine: end to end, keyword stage, model stage per backend "
        "(ONNX int8/fp32, PyTorch fp32, GPU fp16/bf16) with a batch-size sweep.",
    )
    p.add_argument("inputs", nargs="*", help="shard files or folders; none = the shipped sample corpus")
    p.add_argument(
        "--device",
        type=_device,
        default="auto",
        help="cpu, cuda, cuda:N or auto (default: %(default)s): the end-to-end run's device, and whether "
        "the GPU rows run",
    )
    p.add_argument(
        "--limit", type=_whole(1), default=None, help="first N documents (default: all; --quick: 40)"
    )
    p.add_argument(
        "--max-pairs", type=_whole(1), default=None, help="time the model on at most N pairs (default: all)"
    )
    p.add_argument(
        "--batch-sizes",
        type=_batch_sizes,
        default=None,
        help="batch sizes of the sweep, comma-separated (default: 1,8,32,128 on CPU; 64,256,1024,auto on CUDA)",
    )
    p.add_argument(
        "--rounds", type=_whole(1), default=1, help="timed repeats per point, median kept (default: 1)"
    )
    p.add_argument(
        "--threads", type=_whole(1), default=None, help="intra-op threads on CPU (default: the library's)"
    )
    p.add_argument(
        "--lookahead",
        type=_whole(1),
        default=None,
        help="documents per look-ahead window of the end-to-end run (default: the filter's, 1024); "
        "a GPU gets bigger model calls from bigger windows",
    )
    p.add_argument(
        "--scan-workers",
        type=_whole(0),
        default=None,
        help="keyword-stage processes of the end-to-end run (default: the filter's: cores - 1 beside a GPU, "
        "0 on CPU)",
    )
    p.add_argument(
        "--quick", action="store_true", help="a slice: 40 documents, 48 pairs, batch sizes 1 and 8"
    )
    p.add_argument(
        "--backends",
        type=_backend_keys,
        default=None,
        help=f"model-stage rows to time, comma-separated (default: all): {', '.join(BACKENDS)}",
    )
    p.add_argument(
        "--model",
        default=None,
        help=f"model folder or shipped model name every row runs: {shipped_models_text()}",
    )
    p.add_argument("--text-field", default="text", help="field that holds the text (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    p.add_argument("-o", "--output", default=None, help="folder for bench.json, bench.md and batch_sweep.png")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
