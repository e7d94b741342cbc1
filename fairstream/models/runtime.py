"""ONNX Runtime inference for the joint WSD + regard cross-encoder.

A model directory holds ``config.json``, ``tokenizer.json`` and one or more ONNX files (int8 for
CPU, optionally fp16 for CUDA, since dynamic int8 quantization does not run on the CUDA execution
provider). Sessions are created lazily in each process that predicts, so a ``JointModel`` pickles
into DataLoader workers and Ray tasks without carrying a session.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.core.schema import REGARD_LABELS, WSD_LABELS
from fairstream.errors import MissingDependencyError, ModelError
from fairstream.models.cascade import Cascade, cascade_of
from fairstream.models.decision import (  # noqa: F401  (Prediction, softmax re-exported)
    Prediction,
    predictions_from_logits,
    regard_offsets_of,
    softmax,
)
from fairstream.models.encoding import MentionInput, encode_rows, pad_id_of, pad_rows
from fairstream.models.names import (  # noqa: F401  (re-exported: runtime was their home)
    DEFAULT_MODEL,
    default_model_dir,
    resolve_model_dir,
    shipped_model_names,
)
from fairstream.models.settings import check_batch_size
from fairstream.processes import usable_cores

logger = logging.getLogger(__name__)

_PROVIDER_PREFERENCE = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
# Graph fusions left out on the CPU provider because the fused kernel is slower than the ops it
# replaces: onnxruntime 1.32's fp32 SkipLayerNormalization ran at 4.2 ns per element against 0.55 for
# Add + LayerNormalization (one thread, 240 x 384 rows), and the whole int8 model gained 1.14x
# without it (benchmarks/bench_model_stage.py). Both forms normalise each row on its own, so batch
# invariance is unchanged.
CPU_DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)


def make_session(
    onnx_file: Path,
    providers: list[str],
    threads: int,
    *,
    optimized_model_path: Path | None = None,
    disabled_optimizers: Sequence[str] | None = None,
) -> Any:
    """An ONNX Runtime session with fairstream's options (threads, optimisations, CPU fusions left out).

    Args:
        onnx_file: the model graph.
        providers: execution providers in order of preference.
        threads: intra-op threads; 0 for ONNX Runtime's own default.
        optimized_model_path: where to write the optimised graph (to inspect what runs).
        disabled_optimizers: graph optimisers to leave out; ``None``: ``CPU_DISABLED_OPTIMIZERS`` on
            the CPU provider, none elsewhere (``()`` gives onnxruntime's full set, for comparisons).
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if optimized_model_path is not None:
        opts.optimized_model_filepath = str(optimized_model_path)
    if disabled_optimizers is None:
        disabled_optimizers = CPU_DISABLED_OPTIMIZERS if providers[0] == "CPUExecutionProvider" else ()
    disabled = list(disabled_optimizers)
    return ort.InferenceSession(
        str(onnx_file), sess_options=opts, providers=providers, disabled_optimizers=disabled
    )


THREADS_ENV = "FAIRSTREAM_INTRA_OP_THREADS"  # threads per session, overrides the automatic choice
PROCESSES_ENV = "FAIRSTREAM_PROCESSES"  # processes predicting at once, set by a process pool


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 1:
        raise ValueError(f"environment variable {name}={value!r} must be a whole number >= 1")
    return n


def concurrent_processes() -> int:
    """How many processes predict at once: ``FAIRSTREAM_PROCESSES``, else the DataLoader's workers."""
    from_env = _env_int(PROCESSES_ENV)
    if from_env is not None:
        return from_env
    torch = sys.modules.get("torch")  # only if the caller uses torch; never imported here
    if torch is not None:
        info = torch.utils.data.get_worker_info()
        if info is not None:
            return int(info.num_workers)
    return 1


def auto_intra_op_threads(processes: int | None = None) -> int:
    """Intra-op threads per session so that threads x processes <= cores (at least 1).

    ONNX Runtime's default gives every process one thread per core; with two DataLoader workers on
    two cores that ran at 0.82x of one worker, against 1.66x with one thread each (benchmarks/RESULTS.md).
    """
    n = concurrent_processes() if processes is None else processes
    return max(1, usable_cores() // max(1, n))


#: Mentions per forward pass on CPU when none is given: ONNX Runtime int8 is fastest about there.
DEFAULT_BATCH_SIZE = 8


class JointModel:
    """Joint WSD + regard classifier over ONNX Runtime.

    Args:
        model_dir: model folder or shipped model name; ``None`` means the shipped default (``DEFAULT_MODEL``).
        providers: ONNX Runtime execution providers in order of preference; ``None`` picks from
            what is installed (TensorRT, CUDA, then CPU).
        batch_size: mentions per forward pass (inputs are length-sorted to cut padding). Speed
            only: a batch-invariant model (``config.json`` ``"batch_invariant": true``, as the shipped
            one) gives each mention the same probabilities alone, padded or in any batch. Small
            batches were fastest on a 2-core CPU; raise it on a GPU.
        intra_op_threads: threads inside one forward pass. ``None`` (default): the environment
            variable ``FAIRSTREAM_INTRA_OP_THREADS`` if set, else 1 and the process's share of the
            cores goes to ``batch_threads`` instead. ``0``: ONNX Runtime's own default (one thread
            per physical core in every process, which oversubscribes under several workers).
        batch_threads: forward passes run at once, each on its own thread (ONNX Runtime releases
            the GIL), over the batches of one ``predict`` call. ``None`` (default): when
            ``intra_op_threads`` is automatic, ``auto_intra_op_threads()``: the usable cores divided
            by the processes predicting at once (DataLoader workers, or ``FAIRSTREAM_PROCESSES``
            set by a process pool), so threads x processes <= cores; otherwise 1. Small batches
            parallelise badly inside one pass: on 2 cores two passes at once ran 1.25-1.44x the
            pairs/s of one pass on two intra-op threads. Results do not depend on it (the same
            batches are formed; only their order of execution changes).

    The regard decision adds ``config.json``'s ``regard_logit_offsets`` (``[negative, neutral,
    positive]``, absent: zeros) to the log-probabilities before the argmax (see
    :mod:`fairstream.models.decision`); the reported probabilities are not shifted.
    """

    cascade: Cascade | None = None  # a single graph; a cascade folder gives a ``Cascade`` instead

    def __new__(cls, model_dir: str | Path | None = None, **settings: Any) -> Any:
        """A ``JointModel`` of one graph, or the ``Cascade`` a cascade folder describes (same interface)."""
        return cascade_of(cls, model_dir, settings) or super().__new__(cls)

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        providers: list[str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        intra_op_threads: int | None = None,
        batch_threads: int | None = None,
    ) -> None:
        check_batch_size(batch_size, automatic=False)
        if intra_op_threads is not None and intra_op_threads < 0:
            raise ValueError(f"intra_op_threads={intra_op_threads} must be >= 0 (0: ONNX Runtime's default)")
        if batch_threads is not None and batch_threads < 1:
            raise ValueError(f"batch_threads={batch_threads} must be >= 1")
        self.model_dir = resolve_model_dir(model_dir)
        self.batch_size = batch_size
        self.intra_op_threads = intra_op_threads
        self.batch_threads = batch_threads
        self._requested_providers = providers
        self.config = self._read_config()
        self.name: str = self.config["name"]
        self.max_length: int = int(self.config.get("max_length", 256))
        self.wsd_threshold: float = float(self.config.get("wsd_threshold", 0.5))
        # per-tensor dynamic int8 scales activations over the whole batch, padding included
        self.batch_invariant: bool = bool(self.config.get("batch_invariant", False))
        self.regard_offsets: tuple[float, float, float] = regard_offsets_of(
            self.config, self.model_dir / "config.json"
        )
        self._session: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._tokenizer: Any = None
        self._pid: int | None = None
        self._lock = threading.Lock()
        self.providers: list[str] = []

    def _read_config(self) -> dict[str, Any]:
        cfg_path = self.model_dir / "config.json"
        if not cfg_path.is_file():
            raise ModelError(
                f"{cfg_path}: model config not found. Pass the folder of a fairstream model (config.json, "
                "tokenizer.json, *.onnx) or the name of a shipped one "
                f"({', '.join(shipped_model_names()) or 'none installed'}), reinstall fairstream to restore "
                "the shipped models, or train one with export/train.py (in fairstream's source repository)"
            )
        try:
            cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ModelError(f"{cfg_path}: corrupt model config ({exc}); re-export the model") from None
        for key in ("name", "onnx"):
            if key not in cfg:
                raise ModelError(
                    f"{cfg_path}: missing field {key!r}; re-export the model (export/export_onnx.py in fairstream's source repository)"
                )
        return cfg

    # -- lazy, per-process resources -------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._session is not None and self._pid == os.getpid():
            return
        with self._lock:
            if self._session is not None and self._pid == os.getpid():
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - both are core dependencies
                raise MissingDependencyError(
                    f"{exc.name} is required for inference: pip install fairstream"
                ) from exc
            tok_path = self.model_dir / "tokenizer.json"
            if not tok_path.is_file():
                raise ModelError(f"{tok_path}: tokenizer not found; re-export the model")
            try:
                tokenizer = Tokenizer.from_file(str(tok_path))
            except Exception as exc:
                raise ModelError(f"{tok_path}: corrupt tokenizer ({exc}); re-export the model") from None
            tokenizer.no_truncation()
            tokenizer.no_padding()
            available = ort.get_available_providers()
            wanted = self._wanted_providers()
            missing = [p for p in wanted if p not in available]
            if missing:
                raise ModelError(f"providers {missing} are not available; installed: {available}")
            onnx_file = self._onnx_file_for(wanted[0])
            threads, parallel = self.resolved_threads()
            try:
                session = make_session(onnx_file, wanted, threads)
            except Exception as exc:
                raise ModelError(
                    f"{onnx_file}: cannot load ONNX model ({type(exc).__name__}: {exc}); re-export it"
                ) from None
            self._input_names = {i.name for i in session.get_inputs()}
            self._pad_id = pad_id_of(tokenizer)
            self._pool = ThreadPoolExecutor(parallel, "fairstream-batch") if parallel > 1 else None
            self._tokenizer, self._session, self._pid = tokenizer, session, os.getpid()
            self.providers = session.get_providers()
            logger.info(
                "loaded %s from %s with providers %s, %s intra-op threads, %d batches at once",
                self.name,
                onnx_file,
                self.providers,
                threads or "ONNX Runtime's default",
                parallel,
            )
            if not self.batch_invariant and "int8" in onnx_file.name:
                logger.warning(
                    "%s: int8 model without per-row activation quantization; its decisions depend on "
                    "which mentions share a batch (batch size, workers, shard order). Re-export it "
                    "with per-row activation quantization (export/quantize.py in fairstream's source "
                    'repository) and set "batch_invariant": true in its config.json',
                    onnx_file,
                )

    def resolved_threads(self) -> tuple[int, int]:
        """``(intra-op threads per pass, passes at once)`` this process will use (see the class doc)."""
        intra = self.intra_op_threads
        if intra is None:
            intra = _env_int(THREADS_ENV)
        if self._wanted_providers()[0] != "CPUExecutionProvider":  # a GPU queues passes itself
            return intra or 0, 1
        if intra is None:
            share = auto_intra_op_threads()
            return 1, self.batch_threads or share
        return intra, self.batch_threads or 1

    @property
    def tokenizer_file(self) -> Path:
        """The model's ``tokenizer.json``."""
        return self.model_dir / "tokenizer.json"

    @property
    def device(self) -> str:
        """``cpu``, or ``cuda`` when a GPU execution provider (CUDA, TensorRT) comes first."""
        return "cpu" if self._wanted_providers()[0] == "CPUExecutionProvider" else "cuda"

    def _wanted_providers(self) -> list[str]:
        import onnxruntime as ort

        available = ort.get_available_providers()
        return self._requested_providers or [p for p in _PROVIDER_PREFERENCE if p in available]

    def _onnx_file_for(self, provider: str) -> Path:
        files: dict[str, str] = self.config["onnx"]
        order = ("fp16", "fp32", "int8") if provider != "CPUExecutionProvider" else ("int8", "fp32")
        for kind in order:
            if kind in files:
                path = self.model_dir / files[kind]
                if not path.is_file():
                    raise ModelError(
                        f"{path}: ONNX file listed in config.json is missing; re-export the model"
                    )
                return path
        raise ModelError(
            f"{self.model_dir}/config.json: no ONNX file usable with {provider} (have {sorted(files)})"
        )

    def __getstate__(self) -> dict[str, Any]:
        return {
            "model_dir": str(self.model_dir),
            "providers": self._requested_providers,
            "batch_size": self.batch_size,
            "intra_op_threads": self.intra_op_threads,
            "batch_threads": self.batch_threads,
        }

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt through the constructor: unpickling must not call ``__new__`` without the folder
        state = self.__getstate__()
        return (
            functools.partial(type(self), **{k: v for k, v in state.items() if k != "model_dir"}),
            (state["model_dir"],),
        )

    # -- inference ---------------------------------------------------------------------------------
    def predict_logits(self, items: list[MentionInput]) -> tuple[np.ndarray, np.ndarray]:
        """Raw WSD and regard logits, in input order (shapes ``(n, 3)`` and ``(n, 3)``)."""
        self._ensure_loaded()
        n = len(items)
        wsd = np.zeros((n, len(WSD_LABELS)), dtype=np.float32)
        regard = np.zeros((n, len(REGARD_LABELS)), dtype=np.float32)
        # tokenize once, then batch by token count: sorting by characters left 19% of a batch of 8
        # as padding on corpus mentions, by tokens 2% (1.30x model stage)
        rows = encode_rows(self._tokenizer, items, self.max_length)
        order = sorted(range(n), key=lambda i: len(rows[i][0]))
        batches = [order[lo : lo + self.batch_size] for lo in range(0, n, self.batch_size)]

        def run(idx: list[int]) -> None:  # batches write disjoint rows, so threads need no lock
            feeds = pad_rows([rows[i] for i in idx], self._pad_id)
            feeds = {k: v for k, v in feeds.items() if k in self._input_names}
            out_wsd, out_regard = self._session.run(["wsd_logits", "regard_logits"], feeds)
            wsd[idx] = out_wsd
            regard[idx] = out_regard

        if self._pool is not None and len(batches) > 1:
            for _ in self._pool.map(run, batches):  # consumed to re-raise a failed pass
                pass
        else:
            for idx in batches:
                run(idx)
        return wsd, regard

    def predict(self, items: list[MentionInput]) -> list[Prediction]:
        """Predictions for a batch of mentions, in input order."""
        if not items:
            return []
        return predictions_from_logits(*self.predict_logits(items), self.wsd_threshold, self.regard_offsets)
