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

The package's modules: ``results`` (what a run measures), ``machine``, ``stages`` (documents, the
keyword stage, end to end), ``backends``, ``timing`` (one backend's sweep), ``run`` (``run_bench``)
and ``report`` (table, plot, output folder). The command line is ``fairstream.cli.bench``.
"""

from fairstream.bench.backends import Backend, backends
from fairstream.bench.backends import _export_fp32 as _export_fp32  # export/tools/activation_bits_parity.py
from fairstream.bench.machine import ISA_FLAGS, GpuSampler, cpu_model_and_features, machine_info
from fairstream.bench.report import best_rates, format_table, plot_sweep, write_outputs
from fairstream.bench.results import (
    BACKENDS,
    CPU_SWEEP,
    CUDA_SWEEP,
    QUICK_DOCS,
    QUICK_PAIRS,
    QUICK_SWEEP,
    BenchResult,
    Row,
)
from fairstream.bench.run import run_bench
from fairstream.bench.stages import end_to_end, keyword_stage, load_texts
from fairstream.bench.timing import agreement, probabilities, time_backend

__all__ = [
    "BACKENDS",
    "CPU_SWEEP",
    "CUDA_SWEEP",
    "ISA_FLAGS",
    "QUICK_DOCS",
    "QUICK_PAIRS",
    "QUICK_SWEEP",
    "Backend",
    "BenchResult",
    "GpuSampler",
    "Row",
    "agreement",
    "backends",
    "best_rates",
    "cpu_model_and_features",
    "end_to_end",
    "format_table",
    "keyword_stage",
    "load_texts",
    "machine_info",
    "plot_sweep",
    "probabilities",
    "run_bench",
    "time_backend",
    "write_outputs",
]
