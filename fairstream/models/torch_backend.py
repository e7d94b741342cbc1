"""PyTorch inference backend of the joint model: the GPU path (fp16/bf16), also runnable on CPU (fp32).

The weights come from the model folder's ONNX graph, so no second weights file is shipped: int8
MatMul weights are dequantized per output channel (``(W_q - zp) * scale``), the int8 embedding
tables with their scale and zero point, and biases / LayerNorm parameters are named initializers.
The architecture (layers, hidden and intermediate sizes, heads, LayerNorm epsilon, pooling) is
read from the same graph. An fp32 or fp16 graph in the folder is preferred over int8 (exact weights).

The activations are not quantized here, so the torch model is the int8 model's weights with fp32 (or
fp16 / bf16) activations: it agrees with the int8 ONNX model within the activation rounding (tested
on the expert dev set, see ``tests/test_torch_backend.py``).

Inference: mentions are tokenized once, sorted by token length and cut into batches padded only to
their own longest row; attention is ``scaled_dot_product_attention`` (transformers' ``"sdpa"``).
On CUDA the batch size is sized from free GPU memory and sequence length unless given, and host
tensors are pinned for asynchronous copies. torch, transformers and onnx are imported only when a
``TorchJointModel`` loads (``pip install 'fairstream[torch-backend]'``).
"""

from __future__ import annotations

import collections
import functools
import hashlib
import itertools
import logging
import os
import re
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.errors import ModelError
from fairstream.models.cascade import Cascade, cascade_of
from fairstream.models.decision import Prediction, predictions_from_logits
from fairstream.models.encoding import MentionInput, encode_batch, encode_in_worker, init_encode_worker
from fairstream.models.runtime import REGARD_LABELS, WSD_LABELS, JointModel
from fairstream.models.settings import check_batch_size
from fairstream.models.torch_build import _require_torch, build_torch_model
from fairstream.processes import helper_pool, usable_cores

logger = logging.getLogger(__name__)

DTYPES = ("auto", "float32", "float16", "bfloat16")
# rows per batch on CPU when not given (measured: 16-32 is flat on a 2-core CPU, see benchmarks/)
CPU_BATCH_SIZE = 32
# largest auto-sized batch on CUDA; past this the GPU is saturated for a MiniLM-sized encoder
MAX_AUTO_BATCH = 4096
_TOKENIZE_CHUNK = 8192  # mentions tokenized at once, bounds the host memory of one predict() call
# on CUDA: smaller chunks, so tokenizing the next one overlaps the GPU's work on this one
_CUDA_CHUNK = 4096
# with tokenizer worker processes: chunks small enough to keep every worker busy on one call
_WORKER_CHUNK = 1024
# tokenizer processes beside a GPU by default (cores - 1, at most this many)
_MAX_TOKENIZE_WORKERS = 8
TOKENIZE_WORKERS_ENV = "FAIRSTREAM_TOKENIZE_WORKERS"  # overrides the default number of tokenizer processes


def cpu_has_fast_bf16() -> bool:
    """Whether oneDNN runs bfloat16 natively on this CPU (AVX-512 or AMX), as PyTorch decides it.

    Elsewhere (an AVX2-only CPU) PyTorch emulates bf16, many times slower than fp32.
    """
    import torch

    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


# -- the backend ---------------------------------------------------------------------------------------
def default_tokenize_workers(device: str) -> int:
    """Tokenizer processes when not given: ``FAIRSTREAM_TOKENIZE_WORKERS``, else cores - 1 (at most 8) on CUDA, 0 on CPU."""
    value = os.environ.get(TOKENIZE_WORKERS_ENV)
    if value is not None:
        if not value.strip().isdigit():
            raise ValueError(
                f"{TOKENIZE_WORKERS_ENV}={value!r}: must be a whole number >= 0 (0: tokenize in process)"
            )
        return int(value)
    if not device.startswith("cuda"):
        return 0
    return max(0, min(_MAX_TOKENIZE_WORKERS, usable_cores() - 1))


def auto_batch_size(
    free_bytes: int, seq_len: int, hidden: int, heads: int, intermediate: int, elem_bytes: int
) -> int:
    """Rows per batch that fit in half of ``free_bytes`` at ``seq_len`` tokens.

    Inference keeps about one layer's activations alive: a few ``hidden``-wide tensors, the
    ``intermediate``-wide FFN output and, if SDPA falls back to the math kernel, the
    ``heads x seq x seq`` attention scores. The factor 2 covers allocator fragmentation.
    """
    per_row = seq_len * (8 * hidden + 2 * intermediate + 2 * heads * seq_len) * elem_bytes * 2
    return int(max(1, min(MAX_AUTO_BATCH, (free_bytes // 2) // max(1, per_row))))


class TorchJointModel:
    """Joint WSD + regard classifier on PyTorch (CUDA in fp16/bf16, or CPU in fp32).

    Same interface as :class:`~fairstream.models.runtime.JointModel`: ``name``, ``model_dir``,
    ``predict(items) -> list[Prediction]``. Loads lazily in the process that predicts (pickles
    into DataLoader workers).

    Args:
        model_dir: model folder or shipped model name; ``None`` means the shipped default ``joint-v6-cascade``.
        device: a torch device string: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        dtype: ``"auto"`` (fp32 on CPU; bf16 on CUDA where supported, else fp16), ``"float32"``,
            ``"float16"`` or ``"bfloat16"``.
        batch_size: rows per forward pass; ``None``: sized from free GPU memory and each batch's
            sequence length on CUDA, ``CPU_BATCH_SIZE`` on CPU.
        threads: torch intra-op threads on CPU (``None``: torch's default).
        chunk_size: mentions tokenized at once (``None``: 4096 on CUDA, 8192 on CPU); bounds host memory.
        prefetch: tokenize the next chunk in a thread while the model runs this one (``None``: on
            CUDA, where the host's tokenization, not the GPU, sets the pace).
        tokenize_workers: processes that tokenize chunks of 1,024 mentions ahead of the model, so
            the tokenizer's Python work is spread over cores (``None``: ``FAIRSTREAM_TOKENIZE_WORKERS``
            if set, else the cores minus one, at most 8, on CUDA and 0 on CPU; 0: in this process).
            Started on the first call with more than one chunk; not inside a daemonic process
            (a DataLoader worker), which falls back to 0.
    """

    cascade: Cascade | None = None  # a single graph; a cascade folder gives a ``Cascade`` instead

    def __new__(cls, model_dir: str | Path | None = None, **settings: Any) -> Any:
        """A ``TorchJointModel`` of one graph, or the ``Cascade`` a cascade folder describes."""
        return cascade_of(cls, model_dir, settings) or super().__new__(cls)

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        device: str = "cuda",
        dtype: str = "auto",
        batch_size: int | None = None,
        threads: int | None = None,
        chunk_size: int | None = None,
        prefetch: bool | None = None,
        tokenize_workers: int | None = None,
    ) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype={dtype!r} is not one of {DTYPES}")
        check_batch_size(batch_size)
        if threads is not None and threads < 1:
            raise ValueError(f"threads={threads} must be >= 1 (None: torch's default)")
        if chunk_size is not None and chunk_size < 1:
            raise ValueError(f"chunk_size={chunk_size} must be >= 1 (None: automatic)")
        if tokenize_workers is not None and tokenize_workers < 0:
            raise ValueError(f"tokenize_workers={tokenize_workers} must be >= 0 (None: automatic)")
        if not (device == "cpu" or re.fullmatch(r"cuda(:\d+)?", device)):
            raise ValueError(f"device={device!r} is not one of 'cpu', 'cuda', 'cuda:N' (N >= 0)")
        meta = JointModel(model_dir)  # reads and checks config.json
        self.model_dir = meta.model_dir
        self.config = meta.config
        self.name: str = meta.name
        self.max_length = meta.max_length
        self.wsd_threshold = meta.wsd_threshold
        self.regard_offsets = meta.regard_offsets  # config.json's regard_logit_offsets, checked
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.threads = threads
        self.chunk_size = chunk_size or (_CUDA_CHUNK if device.startswith("cuda") else _TOKENIZE_CHUNK)
        self.prefetch = device.startswith("cuda") if prefetch is None else bool(prefetch)
        self._chunk_given = chunk_size is not None
        self.tokenize_workers = (
            default_tokenize_workers(device) if tokenize_workers is None else tokenize_workers
        )
        self._tokenize_workers_arg = tokenize_workers  # what a pickled copy resolves again in its process
        # asked for (argument or environment), not the default
        self._workers_asked = tokenize_workers is not None or TOKENIZE_WORKERS_ENV in os.environ
        self._tokenize_pool: ProcessPoolExecutor | None = None
        self.providers: list[str] = []  # JointModel compatibility (benchmarks print it)
        self._module: Any = None
        self._tokenizer: Any = None
        self._pid: int | None = None
        self._lock = threading.Lock()
        self.resolved_dtype: str | None = None
        self.last_batch_sizes: list[int] = []  # rows of each forward pass of the last predict() call

    def __getstate__(self) -> dict[str, Any]:
        return {
            "model_dir": str(self.model_dir),
            "device": self.device,
            "dtype": self.dtype,
            "batch_size": self.batch_size,
            "threads": self.threads,
            "chunk_size": self.chunk_size if self._chunk_given else None,
            "prefetch": self.prefetch,
            "tokenize_workers": self._tokenize_workers_arg,
        }

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt through the constructor: unpickling must not call ``__new__`` without the folder
        state = self.__getstate__()
        settings = {k: v for k, v in state.items() if k != "model_dir"}
        return (functools.partial(type(self), **settings), (state["model_dir"],))

    def _ensure_loaded(self) -> None:
        if self._module is not None and self._pid == os.getpid():
            return
        with self._lock:
            if self._module is not None and self._pid == os.getpid():
                return
            torch = _require_torch()
            from tokenizers import Tokenizer

            if self.device.startswith("cuda"):
                if not torch.cuda.is_available():
                    raise ModelError(
                        f"device={self.device!r}: torch {torch.__version__} sees no CUDA device "
                        "(CPU-only build or no GPU); use device='cpu' or 'auto'"
                    )
                index = int(self.device.split(":")[1]) if ":" in self.device else 0
                if index >= torch.cuda.device_count():
                    raise ModelError(
                        f"device={self.device!r}: only {torch.cuda.device_count()} CUDA device(s) visible"
                    )
            elif self.threads is not None:
                torch.set_num_threads(self.threads)
            tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            dtype = self.dtype
            if dtype == "auto":
                if self.device == "cpu":
                    dtype = "float32"
                else:
                    with torch.cuda.device(self.device):
                        dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
            module = build_torch_model(self.model_dir)
            module = module.to(device=self.device, dtype=getattr(torch, dtype))
            self._module, self._tokenizer, self._pid = module, tokenizer, os.getpid()
            self.resolved_dtype = dtype
            self.providers = [f"torch:{self.device}:{dtype}"]
            logger.info("loaded %s on %s (%s)", self.name, self.device, dtype)

    def _batches(self, lengths: np.ndarray) -> Iterator[np.ndarray]:
        """Indices of each batch, from rows sorted by length (shortest first)."""
        order = np.argsort(lengths, kind="stable")
        if self.batch_size is not None or not self.device.startswith("cuda"):
            size = self.batch_size or CPU_BATCH_SIZE
            for lo in range(0, len(order), size):
                yield order[lo : lo + size]
            return
        torch = _require_torch()
        cfg = self._module.encoder.config
        free, _total = torch.cuda.mem_get_info(torch.device(self.device))
        elem = 2 if self.resolved_dtype in ("float16", "bfloat16") else 4
        lo = 0
        while lo < len(order):
            # the batch's longest row sets its width; the rows are sorted, so look at the row that
            # would be last in a batch of the size the shortest row allows and shrink to fit
            size = auto_batch_size(
                free,
                int(lengths[order[lo]]),
                cfg.hidden_size,
                cfg.num_attention_heads,
                cfg.intermediate_size,
                elem,
            )
            while size > 1:
                last = int(lengths[order[min(len(order), lo + size) - 1]])
                fit = auto_batch_size(
                    free, last, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size, elem
                )
                if fit >= size:
                    break
                size = fit
            yield order[lo : lo + size]
            lo += size

    def encode(self, items: list[MentionInput]) -> dict[str, np.ndarray]:
        """Model inputs of ``items`` (padded to the longest; :meth:`run_encoded` cuts each batch)."""
        self._ensure_loaded()
        return encode_batch(self._tokenizer, items, self.max_length)

    def encoding_key(self) -> tuple[str, int]:
        """Models with equal keys build equal inputs, so a cascade tokenizes once for both."""
        digest = hashlib.sha256((self.model_dir / "tokenizer.json").read_bytes()).hexdigest()
        return digest, self.max_length

    def encoded_chunks(self, items: list[MentionInput]) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """``(start, inputs)`` of each chunk of ``items``, in order.

        With ``tokenize_workers`` the chunks are tokenized in worker processes, up to one per worker
        ahead of the caller; else, with ``prefetch``, the next chunk is tokenized in a thread while
        the caller runs the model on this one (the tokenizer releases the GIL).
        """
        self._ensure_loaded()
        workers = self.tokenize_workers > 0
        chunk = self.chunk_size if not workers or self._chunk_given else min(self.chunk_size, _WORKER_CHUNK)
        starts = range(0, len(items), chunk)
        pool = self._tokenizer_pool() if workers and len(starts) > 1 else None
        if pool is not None:
            yield from self._chunks_from_pool(pool, items, starts, chunk)
            return
        if len(starts) < 2 or not self.prefetch:
            for start in starts:
                yield start, self.encode(items[start : start + chunk])
            return
        with ThreadPoolExecutor(1, thread_name_prefix="fairstream-tokenize") as threads:
            pending = threads.submit(self.encode, items[:chunk])
            for start in starts:
                feeds = pending.result()
                if start + chunk < len(items):
                    pending = threads.submit(self.encode, items[start + chunk : start + 2 * chunk])
                yield start, feeds

    def _chunks_from_pool(
        self, pool: ProcessPoolExecutor, items: list[MentionInput], starts: range, chunk: int
    ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        def submit(start: int) -> tuple[int, Future[dict[str, np.ndarray]]]:
            return start, pool.submit(encode_in_worker, items[start : start + chunk])

        todo = iter(starts)
        ahead = collections.deque(
            submit(start) for start in itertools.islice(todo, self.tokenize_workers + 1)
        )
        try:
            while ahead:
                start, future = ahead.popleft()
                feeds = future.result()
                following = next(todo, None)
                if following is not None:
                    ahead.append(submit(following))
                yield start, feeds
        except BrokenProcessPool as exc:
            self.close()
            raise ModelError(
                f"a tokenizer worker process died ({exc}); it may have run out of memory: rerun with "
                f"fewer tokenizer processes ({TOKENIZE_WORKERS_ENV}=N or tokenize_workers=N; 0: none)"
            ) from exc
        finally:
            for _, future in ahead:
                future.cancel()

    def _tokenizer_pool(self) -> ProcessPoolExecutor | None:
        if self._tokenize_pool is None:
            # (a forked child must not use the parent's tokenizer thread pool: tokenizers turns it
            # off in the child by itself)
            pool = helper_pool(
                self.tokenize_workers,
                init_encode_worker,
                (str(self.model_dir / "tokenizer.json"), self.max_length),
                setting="tokenize_workers",
                doing="tokenizing",
                warn=self._workers_asked,  # the default falls back quietly in every DataLoader worker
            )
            if pool is None:
                self.tokenize_workers = 0
                return None
            try:  # the first job starts every process (all at once with fork)
                pool.submit(encode_in_worker, []).result()
            except BrokenProcessPool as exc:
                pool.shutdown(cancel_futures=True)
                raise ModelError(
                    f"the tokenizer worker processes did not start ({exc}); rerun with "
                    f"{TOKENIZE_WORKERS_ENV}=0 (or tokenize_workers=0) to tokenize in this process"
                ) from exc
            self._tokenize_pool = pool
        return self._tokenize_pool

    def start_workers(self) -> None:
        """Start the tokenizer processes now (else the first call of two or more chunks starts them)."""
        pool = self._tokenizer_pool() if self.tokenize_workers else None
        if pool is not None:  # with spawn, processes start on demand: give each a job
            list(pool.map(encode_in_worker, [[] for _ in range(self.tokenize_workers)]))

    def close(self) -> None:
        """Stop the tokenizer worker processes, if any (the next call starts them again)."""
        if self._tokenize_pool is not None:
            self._tokenize_pool.shutdown(cancel_futures=True)
            self._tokenize_pool = None

    def run_encoded(self, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """WSD and regard logits (float32) of encoded rows, in row order.

        Rows are sorted by length and cut into batches padded to their own longest row. On CUDA the
        inputs go over once, in sorted order (batches are then slices on the GPU), and the logits
        come back once: two host-device copies and one wait per call, not per batch.
        """
        self._ensure_loaded()
        torch = _require_torch()
        n = len(feeds["input_ids"])
        lengths = feeds["attention_mask"].sum(axis=1)
        keys = ("input_ids", "attention_mask", "token_type_ids", "target_mask")
        cuda = self.device.startswith("cuda")
        batches = list(self._batches(lengths))
        if not batches:
            return np.zeros((0, len(WSD_LABELS)), np.float32), np.zeros((0, len(REGARD_LABELS)), np.float32)
        order = np.concatenate(batches)
        sorted_feeds = {k: np.ascontiguousarray(feeds[k][order]) for k in keys}
        if cuda:
            on_device = {
                k: torch.from_numpy(v).pin_memory().to(self.device, non_blocking=True)
                for k, v in sorted_feeds.items()
            }
        else:
            on_device = {k: torch.from_numpy(v) for k, v in sorted_feeds.items()}
        outs_wsd, outs_regard = [], []
        lo = 0
        with torch.inference_mode():
            for idx in batches:
                hi = lo + len(idx)
                width = int(lengths[idx].max())
                out_wsd, out_regard = self._module(*(on_device[k][lo:hi, :width].contiguous() for k in keys))
                outs_wsd.append(out_wsd.float())
                outs_regard.append(out_regard.float())
                self.last_batch_sizes.append(len(idx))
                lo = hi
            sorted_wsd = torch.cat(outs_wsd).cpu().numpy()
            sorted_regard = torch.cat(outs_regard).cpu().numpy()
        wsd = np.empty((n, len(WSD_LABELS)), dtype=np.float32)
        regard = np.empty((n, len(REGARD_LABELS)), dtype=np.float32)
        wsd[order], regard[order] = sorted_wsd, sorted_regard
        return wsd, regard

    def predict_logits(self, items: list[MentionInput]) -> tuple[np.ndarray, np.ndarray]:
        """Raw WSD and regard logits (float32), in input order."""
        n = len(items)
        wsd = np.zeros((n, len(WSD_LABELS)), dtype=np.float32)
        regard = np.zeros((n, len(REGARD_LABELS)), dtype=np.float32)
        self.last_batch_sizes = []
        for start, feeds in self.encoded_chunks(items):
            stop = start + len(feeds["input_ids"])
            wsd[start:stop], regard[start:stop] = self.run_encoded(feeds)
        return wsd, regard

    def predict(self, items: list[MentionInput]) -> list[Prediction]:
        """Predictions for a batch of mentions, in input order."""
        if not items:
            return []
        return predictions_from_logits(*self.predict_logits(items), self.wsd_threshold, self.regard_offsets)
