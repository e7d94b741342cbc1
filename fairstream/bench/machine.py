"""The machine a run measured: CPU model and instruction sets, library versions, the GPU and its sampled use."""

from __future__ import annotations

import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from fairstream.processes import usable_cores

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
