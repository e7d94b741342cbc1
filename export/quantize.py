"""int8 quantization whose result for one input row does not depend on the other rows of its batch.

    python -m export.quantize model.int8.onnx model.rowq.onnx     # rewrite a dynamic int8 model
    python -m export.quantize --from-fp32 model.fp32.onnx out.onnx  # quantize an fp32 export
    python -m export.quantize --rebit model.int8.onnx out.onnx      # a per-row graph to --activation-bits

onnxruntime's ``quantize_dynamic`` inserts ``DynamicQuantizeLinear`` before every int8 MatMul: one
scale and zero point for the whole activation tensor, computed at run time over every token of every
sequence in the batch, padding included. A mention's probabilities therefore moved with its batch
neighbours and its padding (WSD 0.33 alone vs 0.69 in a batch of 4 on a real mention), and the
filter's decisions changed with batch size, worker count and shard order.

``per_row_activations`` rewrites such a graph so that every activation row (one token's hidden
vector, or one pooled vector in the heads) is quantized with a scale from its own values:

    s = max(|x|) / 63                           per row, over the last axis
    q = round(x / s) + 64                       uint8 in [1, 127] (QuantizeLinear along the row axis)
    y = s * (w_scale * ((q - 64) @ W))          W int8, symmetric per output channel

New exports use 7 of uint8's bits (``--activation-bits 7``, the default since session 23): on CPUs
without VNNI (AVX2 only), onnxruntime's u8 x s8 GEMM adds pairs of byte products in 16-bit saturating
arithmetic, and 255 x 127 x 2 overflows it; 127 x 127 x 2 does not, so the integer sums are exact
on every CPU (the graph's fp32 operations can still round differently from one instruction set to
another, so a mention at a threshold may rarely decide differently). The price is resolution: on
all 12,868 unique corpus pairs, on an AVX2-only EPYC where 8-bit saturates, against the fp32 twin
(``export/tools/activation_bits_parity.py``, session 25), joint-v6 decides alike on 99.58% with 8-bit
activations (mean |dP| 0.0034, max 0.45) and 99.52% with 7-bit (0.0041, max 0.35); joint-v7-fast 99.74%
and 99.64%. (Session 23's first probe, on 2,096 of those pairs, had 7-bit ahead: that was noise.) So
the shipped graphs keep 8-bit activations (``--activation-bits 8``: ``max(|x|) / 127``, zero point 128):
closer to fp32 on average even where they saturate, with rare large errors on CPUs without VNNI, which
is why two CPU classes can decide a few mentions differently. ``--rebit`` moves a per-row graph to the
other width without re-exporting, for a cluster that mixes CPU classes.

The integer GEMM is exact and each row's scale depends on that row alone, so a row's output is
bit-identical alone, padded to any length, or inside any batch (the attention MatMuls stay fp32,
and masked keys add exact zeros). The GEMM runs as onnxruntime's fused ``MatMulIntegerToFloat``
with a scalar zero point (its fast u8 x s8 path) and the row scale is applied after it:
that op takes a single scale for A and, handed a per-row one, silently uses one value.

Measured on the shipped model's weights (1,415 dev pairs, 2-core CPU, 1 thread, batch 8, CPU time;
export/EXPERIMENTS.md): against the same weights with fp32 activations, per-tensor dynamic int8
agreed on 99.72% of person decisions (mean |dP| 0.0053), this scheme on 100.00% (0.0019), at 0.83x
the per-tensor speed. An asymmetric per-row variant (uint8 with a per-row zero point, corrected by
``zp * colsum(W)``) was closer still (0.0010) but ran at 0.68x, so it is not used.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

ACTIVATION_BITS = 7  # exact integer sums on CPUs without VNNI too (see the module doc)
METADATA_KEY = "fairstream.quantization"


def quantization_tag(activation_bits: int = ACTIVATION_BITS) -> str:
    """The ``config.json`` / graph metadata description of the scheme."""
    if activation_bits == 8:  # the wording of the graphs shipped before session 23
        return "int8 weights per channel; int8 activations per row (batch-invariant)"
    return f"int8 weights per channel; {activation_bits}-bit activations per row (batch-invariant, exact integer sums on every CPU)"


QUANTIZATION_TAG = quantization_tag()


def quantize_dynamic_int8(src: Path, dst: Path) -> None:
    """onnxruntime dynamic int8 (per-channel MatMul and Gather weights), one activation scale per tensor."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    with tempfile.TemporaryDirectory() as tmp:
        pre = Path(tmp) / "pre.onnx"
        quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
        quantize_dynamic(
            str(pre),
            str(dst),
            per_channel=True,
            op_types_to_quantize=["MatMul", "Gather"],
            weight_type=QuantType.QInt8,
        )


def quantize_int8(src: Path, dst: Path, activation_bits: int = ACTIVATION_BITS) -> None:
    """The shipped int8 recipe: dynamic int8 weights, then per-row activation quantization."""
    with tempfile.TemporaryDirectory() as tmp:
        dyn = Path(tmp) / "dynamic.onnx"
        quantize_dynamic_int8(src, dyn)
        onnx.save(per_row_activations(onnx.load(str(dyn)), activation_bits), str(dst))


def is_batch_invariant(model_path: Path) -> bool:
    """Whether an ONNX file was written by :func:`per_row_activations` (or has no dynamic quantizer)."""
    model = onnx.load(str(model_path), load_external_data=False)
    if any(p.key == METADATA_KEY for p in model.metadata_props):
        return True
    return not any(n.op_type == "DynamicQuantizeLinear" for n in model.graph.node)


def fp32_activation_reference(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same int8 weights, dequantized, with fp32 activations: isolates activation rounding.

    Takes a per-tensor dynamic int8 graph (``quantize_dynamic_int8``); used to measure how far each
    activation scheme moves decisions when no fp32 export of the weights is at hand.
    """
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    nodes, consumers, producers = _indexed_copy(graph)
    dropped: set[int] = set()
    swapped: dict[int, onnx.NodeProto] = {}
    for mm in nodes:
        if mm.op_type != "MatMulInteger":
            continue
        quantizer = producers[mm.input[0]]
        (cast,) = consumers[mm.output[0]]
        (out_mul,) = consumers[cast.output[0]]
        scales = producers[next(i for i in out_mul.input if i != cast.output[0])]
        w_scale = next(i for i in scales.input if i in inits)
        w = numpy_helper.to_array(inits[mm.input[1]]).astype(np.float32) * numpy_helper.to_array(
            inits[w_scale]
        )
        graph.initializer.append(_const(f"{mm.input[1]}/fp32", w.astype(np.float32)))
        swapped[id(mm)] = helper.make_node(
            "MatMul", [quantizer.input[0], f"{mm.input[1]}/fp32"], [out_mul.output[0]]
        )
        dropped.update({id(quantizer), id(cast), id(out_mul), id(scales)})
    del graph.node[:]
    graph.node.extend(swapped.get(id(n), n) for n in nodes if id(n) not in dropped)
    used = {name for n in graph.node for name in n.input}
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)
    onnx.checker.check_model(model)
    return model


def _indexed_copy(
    graph: onnx.GraphProto,
) -> tuple[list[onnx.NodeProto], dict[str, list[onnx.NodeProto]], dict[str, onnx.NodeProto]]:
    """Copies of the graph's nodes (stable identities while it is rebuilt), their readers and writers by tensor."""
    nodes = [onnx.NodeProto.FromString(n.SerializeToString()) for n in graph.node]
    consumers: dict[str, list[onnx.NodeProto]] = {}
    producers: dict[str, onnx.NodeProto] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
        for name in node.output:
            producers[name] = node
    return nodes, consumers, producers


def _const(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(value, name)


def _constants(activation_bits: int) -> dict[str, np.ndarray]:
    if activation_bits not in (7, 8):
        raise ValueError(f"activation_bits={activation_bits}: must be 7 or 8")
    half = 2 ** (activation_bits - 1)
    return {
        "perrow/smax": np.array(half - 1.0, dtype=np.float32),  # the largest |q - zero point|
        "perrow/eps": np.array(1e-30, dtype=np.float32),
        "perrow/flat": np.array([-1], dtype=np.int64),
        "perrow/one": np.array(1.0, dtype=np.float32),
        # the zero point (the name predates 7-bit activations; shipped 8-bit graphs hold 128)
        "perrow/zp128": np.array(half, dtype=np.uint8),
    }


def per_row_activations(model: onnx.ModelProto, activation_bits: int = ACTIVATION_BITS) -> onnx.ModelProto:
    """Replace every per-tensor ``DynamicQuantizeLinear`` -> ``MatMulInteger`` by per-row quantization.

    ``activation_bits``: 7 (default: exact on every CPU) or 8 (see the module doc).

    Raises:
        ValueError: on a pattern this rewrite does not know (a weight with a non-zero zero point,
            a quantized activation read by anything but MatMulInteger -> Cast -> Mul), so a
            half-rewritten model is never produced.
    """
    constants = _constants(activation_bits)
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    nodes, consumers, producers = _indexed_copy(graph)

    new_nodes: list[onnx.NodeProto] = []
    replaced: set[int] = set()  # nodes re-emitted in fused form right after their quantizer
    n_rewritten = 0
    for node in nodes:
        if id(node) in replaced:
            continue
        if node.op_type != "DynamicQuantizeLinear":
            new_nodes.append(node)
            continue
        x = node.input[0]
        q_out, s_out, zp_out = node.output
        prefix = f"perrow/{node.name}"
        new_nodes += _row_quantizer(prefix, x, q_out, s_out)
        for mm in consumers.get(q_out, []):
            if mm.op_type != "MatMulInteger":
                raise ValueError(f"{node.name}: quantized tensor read by {mm.op_type} {mm.name}")
            if mm.input[1] not in inits:
                raise ValueError(f"{mm.name}: weight {mm.input[1]} is not a constant")
            w_zp = mm.input[3] if len(mm.input) > 3 else ""
            if w_zp and np.any(numpy_helper.to_array(inits[w_zp]) != 0):
                raise ValueError(f"{mm.name}: weight zero point is not 0 (asymmetric weights)")
            new_nodes += _fused_matmul(mm, s_out, w_zp, consumers, producers, replaced)
        for c in consumers.get(zp_out, []):
            if id(c) not in replaced:
                raise ValueError(f"{node.name}: zero point read by {c.op_type} {c.name}; cannot rewrite")
        n_rewritten += 1
    if n_rewritten == 0:
        raise ValueError("no DynamicQuantizeLinear node found: not an onnxruntime dynamic int8 model")
    del graph.node[:]
    graph.node.extend(new_nodes)
    graph.initializer.extend(_const(k, v) for k, v in constants.items())
    used = {name for n in graph.node for name in n.input}
    for init in [i for i in graph.initializer if i.name not in used]:  # the old zero points
        graph.initializer.remove(init)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    del model.metadata_props[:]
    model.metadata_props.append(
        onnx.StringStringEntryProto(key=METADATA_KEY, value=quantization_tag(activation_bits))
    )
    onnx.checker.check_model(model)
    return model


def set_activation_bits(model: onnx.ModelProto, activation_bits: int) -> onnx.ModelProto:
    """A per-row graph (from :func:`per_row_activations`) moved to ``activation_bits``-bit activations, in place.

    The width lives in two constants shared by every quantizer (the largest ``|q - zero point|`` and
    the zero point), so a shipped 8-bit graph becomes the 7-bit one its weights would export to today.

    Raises:
        ValueError: ``model`` is not a per-row graph, or ``activation_bits`` is not 7 or 8.
    """
    constants = _constants(activation_bits)
    inits = {i.name: i for i in model.graph.initializer}
    for name in ("perrow/smax", "perrow/zp128"):
        if name not in inits:
            raise ValueError(f"constant {name!r} not found: not a per-row activation graph (export.quantize)")
        inits[name].CopyFrom(_const(name, constants[name]))
    del model.metadata_props[:]
    model.metadata_props.append(
        onnx.StringStringEntryProto(key=METADATA_KEY, value=quantization_tag(activation_bits))
    )
    onnx.checker.check_model(model)
    return model


def _row_quantizer(p: str, x: str, q_out: str, s_out: str) -> list[onnx.NodeProto]:
    """Nodes that quantize each row of ``x`` (last axis) with its own symmetric scale."""
    mk = helper.make_node
    return [
        mk("ReduceMax", [x], [f"{p}/rmax"], axes=[-1], keepdims=1),
        mk("ReduceMin", [x], [f"{p}/rmin"], axes=[-1], keepdims=1),
        mk("Neg", [f"{p}/rmin"], [f"{p}/neg_min"]),
        mk("Max", [f"{p}/rmax", f"{p}/neg_min"], [f"{p}/absmax"]),
        mk("Div", [f"{p}/absmax", "perrow/smax"], [f"{p}/s_raw"]),
        # an all-zero row: any scale gives q = zero point and an exact zero output
        mk("Max", [f"{p}/s_raw", "perrow/eps"], [s_out]),
        # QuantizeLinear takes a 1-D per-axis scale: view x as (rows, K), quantize along axis 0
        mk("Shape", [x], [f"{p}/shape"]),
        mk("Shape", [x], [f"{p}/k"], start=-1),
        mk("Concat", ["perrow/flat", f"{p}/k"], [f"{p}/shape2d"], axis=0),
        mk("Reshape", [x, f"{p}/shape2d"], [f"{p}/x2d"]),
        mk("Reshape", [s_out, "perrow/flat"], [f"{p}/s1d"]),
        mk("Shape", [f"{p}/s1d"], [f"{p}/rows"]),
        mk("Expand", ["perrow/zp128", f"{p}/rows"], [f"{p}/zp1d"]),
        mk("QuantizeLinear", [f"{p}/x2d", f"{p}/s1d", f"{p}/zp1d"], [f"{p}/q2d"], axis=0),
        mk("Reshape", [f"{p}/q2d", f"{p}/shape"], [q_out]),
    ]


def _fused_matmul(
    mm: onnx.NodeProto,
    row_scale: str,
    w_zp: str,
    consumers: dict[str, list[onnx.NodeProto]],
    producers: dict[str, onnx.NodeProto],
    replaced: set[int],
) -> list[onnx.NodeProto]:
    """``MatMulInteger -> Cast -> Mul(row scale x weight scale)`` as MatMulIntegerToFloat, then the row scale."""
    (cast,) = consumers[mm.output[0]]
    (out_mul,) = consumers[cast.output[0]]
    if cast.op_type != "Cast" or out_mul.op_type != "Mul":
        raise ValueError(
            f"{mm.name}: expected MatMulInteger -> Cast -> Mul, got {cast.op_type} -> {out_mul.op_type}"
        )
    scales = producers[next(i for i in out_mul.input if i != cast.output[0])]
    if scales.op_type != "Mul" or row_scale not in scales.input or len(consumers[scales.output[0]]) != 1:
        raise ValueError(f"{mm.name}: scale product {scales.name} is not Mul(activation scale, weight scale)")
    w_scale = next(i for i in scales.input if i != row_scale)
    replaced.update({id(mm), id(cast), id(out_mul), id(scales)})
    fused = f"{mm.output[0]}/fused"
    return [
        helper.make_node(
            "MatMulIntegerToFloat",
            [mm.input[0], mm.input[1], "perrow/one", w_scale, "perrow/zp128", w_zp],
            [fused],
            domain="com.microsoft",
        ),
        helper.make_node("Mul", [fused, row_scale], [out_mul.output[0]]),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path, help="an onnxruntime dynamic int8 model (fp32 with --from-fp32)")
    ap.add_argument("dst", type=Path)
    source = ap.add_mutually_exclusive_group()
    source.add_argument("--from-fp32", action="store_true", help="src is fp32: quantize it first")
    source.add_argument(
        "--rebit",
        action="store_true",
        help="src is already a per-row graph: only change its activation width",
    )
    ap.add_argument(
        "--activation-bits",
        type=int,
        choices=(7, 8),
        default=ACTIVATION_BITS,
        help="7: exact on every CPU (default); 8: finer on VNNI CPUs, saturates on AVX2-only ones",
    )
    args = ap.parse_args()
    if args.rebit:
        onnx.save(set_activation_bits(onnx.load(str(args.src)), args.activation_bits), str(args.dst))
    elif args.from_fp32:
        quantize_int8(args.src, args.dst, args.activation_bits)
    else:
        onnx.save(per_row_activations(onnx.load(str(args.src)), args.activation_bits), str(args.dst))
    print(f"wrote {args.dst} ({args.dst.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
