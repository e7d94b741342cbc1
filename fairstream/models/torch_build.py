"""A model folder's joint cross-encoder as a torch module: from its torch weights, or rebuilt from its ONNX graph.

``build_torch_model`` is what the PyTorch backend (``fairstream.models.torch_backend``) runs and
what training starts from; it reads the shipped int8/fp32 graphs' weights back into a BERT encoder.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.errors import MissingDependencyError, ModelError
from fairstream.models.runtime import JointModel

logger = logging.getLogger(__name__)


def _require_torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"{exc.name} is required for the torch backend (device='cuda' / 'auto'): "
            "pip install 'fairstream[torch-backend]', or use device='cpu' (ONNX Runtime)"
        ) from exc
    return torch


# -- weights and architecture from the ONNX graph ----------------------------------------------------
@dataclass
class ExtractedWeights:
    """A state dict for :class:`JointCrossEncoder` and the BERT configuration read from a graph."""

    state_dict: dict[str, np.ndarray]
    config: dict[str, Any]
    pooling: str
    source: Path


def _module_of_matmul(weight_name: str, output_name: str) -> str:
    """Module path of a MatMul, from its weight's name or its output's (``/a/b.0/c/MatMul...`` -> ``a.b.0.c``)."""
    base = re.sub(r"_quantized$", "", weight_name)
    if base.endswith(".weight_Transposed") or base.endswith(".weight"):
        return base.rsplit(".weight", 1)[0]
    path = output_name.lstrip("/").split("/MatMul")[0]
    return path.replace("/", ".")


def extract_weights(onnx_path: Path) -> ExtractedWeights:
    """Read a joint model's weights and architecture from its ONNX graph (int8, fp16 or fp32).

    Raises:
        ModelError: the graph is not a BERT-style joint model this reader knows, naming what is
            missing, so a half-loaded model is never used.
    """
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as exc:
        raise MissingDependencyError(
            "onnx is required to read the weights for the torch backend: pip install 'fairstream[torch-backend]'"
        ) from exc
    try:
        model = onnx.load(str(onnx_path))
    except Exception as exc:
        raise ModelError(f"{onnx_path}: cannot read the ONNX graph ({exc}); re-export the model") from None
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    arrays: dict[str, np.ndarray] = {}

    def arr(name: str) -> np.ndarray:
        if name not in arrays:
            arrays[name] = numpy_helper.to_array(inits[name])
        return arrays[name]

    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    state: dict[str, np.ndarray] = {}
    for node in graph.node:
        if node.op_type == "MatMulIntegerToFloat" and node.input[1] in inits:
            w = arr(node.input[1]).astype(np.float32)
            zp = arr(node.input[5]).astype(np.float32) if len(node.input) > 5 and node.input[5] else 0.0
            w = (w - zp) * arr(node.input[3]).astype(np.float32)
            module = _module_of_matmul(node.input[1], node.output[0])
            state[f"{module}.weight"] = w.T
        elif node.op_type == "MatMul" and node.input[1] in inits:
            module = _module_of_matmul(node.input[1], node.name or node.output[0])
            state[f"{module}.weight"] = arr(node.input[1]).astype(np.float32).T
        elif node.op_type == "Gemm" and node.input[1] in inits:
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            w = arr(node.input[1]).astype(np.float32)
            module = _module_of_matmul(node.input[1], node.name or node.output[0])
            state[f"{module}.weight"] = w if trans_b else w.T
            if len(node.input) > 2 and node.input[2] in inits:
                state[f"{module}.bias"] = arr(node.input[2]).astype(np.float32)
        elif node.op_type == "Gather" and node.input[0] in inits and "embeddings" in node.input[0]:
            table = arr(node.input[0])
            name = node.input[0]
            if name.endswith("_quantized"):
                (deq,) = [n for n in consumers.get(node.output[0], []) if n.op_type == "DequantizeLinear"]
                scale = arr(deq.input[1]).astype(np.float32)
                zp = arr(deq.input[2]).astype(np.float32) if len(deq.input) > 2 else 0.0
                table = (table.astype(np.float32) - zp) * scale
                name = name[: -len("_quantized")]
            state[name] = table.astype(np.float32)
        elif node.op_type in ("Add", "LayerNormalization") and node.name.startswith("/"):
            # parameters named by the node that reads them: the exporter and the optimizer share equal
            # initializers (zero biases, unit LayerNorm weights) under one of their names
            module = node.name.lstrip("/").rsplit("/", 1)[0].replace("/", ".")
            params = [i for i in node.input if i in inits]
            if node.op_type == "LayerNormalization" and len(node.input) == 3 and len(params) == 2:
                state[f"{module}.weight"] = arr(node.input[1]).astype(np.float32)
                state[f"{module}.bias"] = arr(node.input[2]).astype(np.float32)
            elif node.op_type == "Add" and len(params) == 1 and f"{module}.weight" in state:
                state[f"{module}.bias"] = arr(params[0]).astype(np.float32)
    # the exporter shares equal initializers (zero biases, unit LayerNorm weights) through Identity nodes
    aliases = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Identity" and n.input[0] in inits}
    for name in [*inits, *aliases]:
        if (
            name.startswith(("encoder.", "wsd_head.", "regard_head."))
            and not name.endswith(("_quantized", "_scale", "_zero_point", "_Transposed"))
        ) and name not in state:
            state[name] = arr(aliases.get(name, name)).astype(np.float32)
    config = _bert_config(graph, state, inits, numpy_helper, onnx_path)
    head = state.get("wsd_head.weight")
    if head is None or "regard_head.weight" not in state:
        raise ModelError(
            f"{onnx_path}: no wsd_head / regard_head weights found; not a fairstream joint model"
        )
    ratio = head.shape[1] // config["hidden_size"]
    if ratio not in (2, 3):
        raise ModelError(
            f"{onnx_path}: head width {head.shape[1]} is not 2 or 3 x hidden {config['hidden_size']}"
        )
    return ExtractedWeights(state, config, "cls_span" if ratio == 2 else "cls_span_mean", onnx_path)


def _bert_config(
    graph: Any, state: dict[str, np.ndarray], inits: dict[str, Any], numpy_helper: Any, path: Path
) -> dict[str, Any]:
    need = (
        "encoder.embeddings.word_embeddings.weight",
        "encoder.embeddings.position_embeddings.weight",
        "encoder.embeddings.LayerNorm.weight",
    )
    missing = [k for k in need if k not in state]
    if missing:
        raise ModelError(
            f"{path}: not a BERT-style encoder graph (missing {missing}); the torch backend reads "
            "BERT / MiniLM joint models; run this model with ONNX Runtime (backend='onnxruntime', device='cpu')"
        )
    if any(n.op_type == "CumSum" for n in graph.node):  # RoBERTa-style position ids from the padding mask
        raise ModelError(
            f"{path}: RoBERTa-style position ids (RoBERTa, MPNet) are not supported by the torch backend, which "
            "rebuilds BERT / MiniLM encoders; run this model with ONNX Runtime (backend='onnxruntime', "
            "device='cpu', or the CUDA provider with onnxruntime-gpu)"
        )
    vocab, hidden = state["encoder.embeddings.word_embeddings.weight"].shape
    layers = sorted(
        {int(m.group(1)) for k in state if (m := re.match(r"encoder\.encoder\.layer\.(\d+)\.", k))}
    )
    if not layers or layers != list(range(len(layers))):
        raise ModelError(f"{path}: encoder layers {layers} are not numbered 0..n-1")
    intermediate = state["encoder.encoder.layer.0.intermediate.dense.weight"].shape[0]
    eps = next(
        (
            a.f
            for n in graph.node
            if n.op_type == "LayerNormalization"
            for a in n.attribute
            if a.name == "epsilon"
        ),
        1e-12,
    )
    heads = _attention_heads(graph, inits, numpy_helper, int(hidden))
    if heads is None:
        raise ModelError(
            f"{path}: cannot read the number of attention heads from the graph; re-export the model"
        )
    act = "gelu" if any(n.op_type == "Erf" for n in graph.node) else "gelu_new"
    token_types = state.get("encoder.embeddings.token_type_embeddings.weight")
    return {
        "model_type": "bert",
        "vocab_size": int(vocab),
        "hidden_size": int(hidden),
        "num_hidden_layers": len(layers),
        "num_attention_heads": heads,
        "intermediate_size": int(intermediate),
        "hidden_act": act,
        "max_position_embeddings": int(state["encoder.embeddings.position_embeddings.weight"].shape[0]),
        "type_vocab_size": int(token_types.shape[0]) if token_types is not None else 0,
        "layer_norm_eps": float(f"{eps:.4g}"),  # stored as float32 in the graph
    }


def _attention_heads(graph: Any, inits: dict[str, Any], numpy_helper: Any, hidden: int) -> int | None:
    """Heads from the shape the first query projection is reshaped to.

    transformers 4 exports ``[batch, seq, heads, head_dim]``; transformers 5 ``[batch, seq, -1, head_dim]``.
    """
    producers = {o: n for n in graph.node for o in n.output}

    def ints(name: str, depth: int = 0) -> list[int]:
        if name in inits:
            v = numpy_helper.to_array(inits[name])
            return [int(x) for x in np.ravel(v)] if v.dtype.kind == "i" and v.size <= 4 else []
        node = producers.get(name)
        if node is None or depth > 3:
            return []
        if node.op_type == "Constant":
            v = numpy_helper.to_array(node.attribute[0].t)
            return [int(x) for x in np.ravel(v)] if v.dtype.kind == "i" and v.size <= 4 else []
        if node.op_type in ("Concat", "Unsqueeze"):
            return [x for i in node.input for x in ints(i, depth + 1)]
        return []

    for node in graph.node:
        if node.op_type == "Reshape" and "attention/self" in node.name:
            values = ints(node.input[1])
            for h in values:
                if h > 0 and hidden % h == 0 and hidden // h in values:
                    return h
            if len(values) >= 2 and values[-2] == -1 and values[-1] > 0 and hidden % values[-1] == 0:
                return hidden // values[-1]
    return None


def _build_from_torch_weights(model_dir: Path, spec: Any, attn_implementation: str) -> Any:
    """The model from the PyTorch weights that ``export.export_onnx --with-torch`` wrote (any encoder)."""
    _require_torch()
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModel

    from fairstream.models.torch_model import JointCrossEncoder

    where = f"{model_dir}/config.json"
    if not isinstance(spec, dict) or not {"weights", "encoder_config"} <= set(spec):
        raise ModelError(
            f"{where}: 'torch' must name 'weights' and 'encoder_config' (export.export_onnx --with-torch)"
        )
    weights, cfg_dir = model_dir / spec["weights"], model_dir / spec["encoder_config"]
    for path in (weights, cfg_dir / "config.json"):
        if not path.is_file():
            raise ModelError(f"{path}: listed in {where} but missing; re-export with --with-torch")
    cfg = AutoConfig.from_pretrained(cfg_dir)
    try:
        encoder = AutoModel.from_config(cfg, attn_implementation=attn_implementation)
    except (ValueError, ImportError):  # an architecture without SDPA support (MPNet): plain attention
        encoder = AutoModel.from_config(cfg, attn_implementation="eager")
    module = JointCrossEncoder(encoder, dropout=0.0, pooling=spec.get("pooling", "cls_span"))
    state = {k: v.float() for k, v in load_file(str(weights)).items()}
    _load_checked(module, state, weights, f"weights do not match {cfg_dir}'s {cfg.model_type}")
    logger.info("built the torch model from %s (%s)", weights, cfg.model_type)
    return module


def build_torch_model(
    model_dir: str | Path | None = None, *, attn_implementation: str = "sdpa", onnx_kind: str | None = None
) -> Any:
    """The ``JointCrossEncoder`` of a model folder as a torch module (fp32, eval mode, on CPU).

    Args:
        model_dir: model folder or shipped model name (``None``: the shipped default, ``joint-v6-cascade``).
        attn_implementation: transformers attention (``"sdpa"``, or ``"eager"`` for export).
        onnx_kind: which graph of ``config.json``'s ``onnx`` to read (default: fp32, fp16, then int8).

    A folder exported ``--with-torch`` (config.json names ``"torch"`` weights) is built from those
    weights and the encoder's own config, so any architecture runs; otherwise the encoder is rebuilt
    as BERT from the ONNX graph (the shipped model).
    """
    torch = _require_torch()
    from transformers import BertConfig, BertModel

    from fairstream.models.torch_model import JointCrossEncoder

    meta = JointModel(model_dir)  # reads and checks config.json; loads no session
    if meta.cascade is not None:
        raise ModelError(
            f"{meta.model_dir} is a cascade of two models ({meta.config['cascade']['fast']}, "
            f"{meta.config['cascade']['full']}): build each of them (TorchJointModel runs the cascade)"
        )
    if "torch" in meta.config and onnx_kind is None:
        return _build_from_torch_weights(meta.model_dir, meta.config["torch"], attn_implementation)
    files: dict[str, str] = meta.config["onnx"]
    kinds = [onnx_kind] if onnx_kind else [k for k in ("fp32", "fp16", "int8") if k in files]
    if not kinds or kinds[0] not in files:
        raise ModelError(
            f"{meta.model_dir}/config.json: no ONNX graph {onnx_kind or ''} (have {sorted(files)})"
        )
    path = meta.model_dir / files[kinds[0]]
    if not path.is_file():
        raise ModelError(f"{path}: ONNX file listed in config.json is missing; re-export the model")
    weights = extract_weights(path)
    cfg = BertConfig(**weights.config)
    cfg._attn_implementation = attn_implementation
    encoder = BertModel(cfg, add_pooling_layer=False)
    module = JointCrossEncoder(encoder, dropout=0.0, pooling=weights.pooling)
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in weights.state_dict.items()}
    _load_checked(module, tensors, path, "graph weights do not match the model")
    logger.info("built the torch model from %s (%s)", path, weights.config)
    return module


def _load_checked(module: Any, tensors: dict[str, Any], source: Path, mismatch: str) -> None:
    """Load ``tensors`` (read from ``source``) into ``module``, eval mode, after checking names and shapes.

    A half-loaded model is never used: any difference raises a ``ModelError`` naming ``source``.
    """
    expected = module.state_dict()
    unknown = sorted(set(tensors) - set(expected))
    missing = sorted(k for k in set(expected) - set(tensors) if not k.endswith("_ids"))
    if unknown or missing:
        raise ModelError(
            f"{source}: {mismatch} (missing {missing[:5]}, unknown {unknown[:5]}); re-export the model"
        )
    for key, tensor in tensors.items():
        if tuple(tensor.shape) != tuple(expected[key].shape):
            raise ModelError(
                f"{source}: {key} has shape {tuple(tensor.shape)}, expected {tuple(expected[key].shape)}"
            )
    module.load_state_dict(tensors, strict=False)
    module.eval()
