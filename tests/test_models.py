from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairstream.errors import ModelError
from fairstream.models.encoding import MARK_CLOSE, MARK_OPEN, MentionInput, encode_batch, marked_text
from fairstream.models.metrics import cohen_kappa, f1_scores
from fairstream.models.runtime import JointModel

SENT = "The Muslim family met a Muslim doctor and an Asian nurse."


def test_marked_text_marks_the_given_occurrence():
    second = SENT.index("Muslim", 5)
    text, ks, ke = marked_text(MentionInput(SENT, second, second + 6, "muslim", "who believes in Islam"))
    assert text == f"The Muslim family met a {MARK_OPEN} Muslim {MARK_CLOSE} doctor and an Asian nurse."
    assert text[ks:ke] == "Muslim"
    asian = SENT.index("Asian")
    text2, ks2, ke2 = marked_text(MentionInput(SENT, asian, asian + 5, "asian", "of Asian race/ethnicity"))
    assert text2.count(MARK_OPEN) == 1 and text2[ks2:ke2] == "Asian" and "Muslim family" in text2


def test_mention_offsets_are_checked():
    with pytest.raises(ValueError, match="outside the text"):
        MentionInput("short", 3, 10, "x", "y")


def test_encode_pairs_and_target_mask(tiny_model_dir: Path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    first = MentionInput(SENT, 4, 10, "muslim", "who believes in Islam")
    asian = SENT.index("Asian")
    other = MentionInput(SENT, asian, asian + 5, "asian", "of Asian race/ethnicity")
    feeds = encode_batch(tok, [first, other], max_length=128)
    assert feeds["input_ids"].shape == feeds["target_mask"].shape
    for row, word in ((0, "muslim"), (1, "asian")):
        ids = feeds["input_ids"][row][feeds["target_mask"][row] > 0]
        assert tok.decode(ids.tolist()).replace(" ", "") == word
        # second segment (token type 1) holds "keyword ; gloss"
        seg_b = feeds["input_ids"][row][
            (feeds["token_type_ids"][row] == 1) & (feeds["attention_mask"][row] == 1)
        ]
        assert tok.decode(seg_b.tolist()).startswith(f"{word} ; ")
    # truncation keeps the judged occurrence
    long_text = "filler words here " * 200 + SENT + " trailing words" * 200
    start = long_text.index("Asian")
    feeds = encode_batch(tok, [MentionInput(long_text, start, start + 5, "asian", "g")], max_length=64)
    assert feeds["input_ids"].shape[1] <= 64 and feeds["target_mask"][0].sum() >= 1
    ids = feeds["input_ids"][0][feeds["target_mask"][0] > 0]
    assert tok.decode(ids.tolist()).replace(" ", "") == "asian"


def items() -> list[MentionInput]:
    texts = [
        "The Muslim community organised a food drive for the whole town last winter.",
        "Black pepper and white rice.",
        "Many Mexican workers were praised by the mayor for their effort in rebuilding the bridge after the flood hit.",
        "poor reviews",
    ]
    out = []
    for t in texts:
        for kw in ("muslim", "black", "white", "mexican", "poor"):
            i = t.lower().find(kw)
            if i >= 0:
                out.append(MentionInput(t, i, i + len(kw), kw, f"gloss of {kw}"))
    return out


def fp32_copy(tiny_model_dir: Path, tmp_path: Path) -> Path:
    fp32_dir = tmp_path / "fp32"
    shutil.copytree(tiny_model_dir, fp32_dir)
    cfg = json.loads((fp32_dir / "config.json").read_text())
    cfg["onnx"] = {"fp32": "model.fp32.onnx"}
    (fp32_dir / "config.json").write_text(json.dumps(cfg))
    return fp32_dir


def test_onnx_export_matches_torch_and_int8_agrees(tiny_model_dir: Path, tmp_path: Path):
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer

    from export.modeling import JointCrossEncoder

    run = tiny_model_dir.parent / "run"
    model = JointCrossEncoder(str(run / "encoder_config"), pretrained=False)
    model.load_state_dict(torch.load(run / "model.pt"))
    model.eval()
    tok = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    feeds = encode_batch(tok, items(), max_length=128)
    with torch.no_grad():
        torch_w, torch_r = (t.numpy() for t in model(**{k: torch.from_numpy(v) for k, v in feeds.items()}))
    onnx_model = JointModel(fp32_copy(tiny_model_dir, tmp_path), batch_size=64)
    onnx_w, onnx_r = onnx_model.predict_logits(items())
    # the exported graph computes what the PyTorch model does, for every length in the batch
    np.testing.assert_allclose(onnx_w, torch_w, atol=1e-4)
    np.testing.assert_allclose(onnx_r, torch_r, atol=1e-4)
    # int8 vs fp32: same labels for nearly all, close logits
    int8_w, int8_r = JointModel(tiny_model_dir).predict_logits(items())
    assert (onnx_w.argmax(1) == int8_w.argmax(1)).mean() >= 0.8
    assert (onnx_r.argmax(1) == int8_r.argmax(1)).mean() >= 0.8
    assert np.abs(onnx_w - int8_w).max() < 0.5


def test_fp32_predictions_do_not_depend_on_the_batch(tiny_model_dir: Path, tmp_path: Path):
    # (int8 dynamic quantization scales activations per batch, so only fp32 is batch-invariant;
    # FairStream therefore batches at fixed window positions, see test_stream resume tests)
    fp32 = fp32_copy(tiny_model_dir, tmp_path)
    many = JointModel(fp32, batch_size=8).predict_logits(items())[1]
    single = np.concatenate([JointModel(fp32, batch_size=1).predict_logits([it])[1] for it in items()])
    np.testing.assert_allclose(many, single, atol=1e-4)


def test_model_errors_name_the_file(tiny_model_dir: Path, tmp_path: Path):
    with pytest.raises(ModelError, match=r"config\.json: model config not found"):
        JointModel(tmp_path / "nothing")
    broken = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, broken)
    (broken / "model.int8.onnx").write_bytes(b"not an onnx file")
    with pytest.raises(ModelError, match=r"model\.int8\.onnx: cannot load ONNX model"):
        JointModel(broken).predict(items())
    (broken / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match=r"tokenizer\.json: tokenizer not found"):
        JointModel(broken).predict(items())
    (broken / "config.json").write_text("{oops")
    with pytest.raises(ModelError, match="corrupt model config"):
        JointModel(broken)


def test_model_pickles_without_session(tiny_model_dir: Path):
    import pickle

    model = JointModel(tiny_model_dir)
    before = model.predict(items())
    clone = pickle.loads(pickle.dumps(model))
    assert clone._session is None
    assert [p.regard for p in clone.predict(items())] == [p.regard for p in before]


def test_metrics_against_hand_computed_values():
    gold = ["yes", "yes", "no", "no", "yes", "no"]
    pred = ["yes", "no", "no", "yes", "yes", "no"]
    # observed 4/6; expected (3*3 + 3*3)/36 = 0.5 -> kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert cohen_kappa(gold, pred) == pytest.approx(1 / 3)
    f = f1_scores(["a", "a", "b", "c"], ["a", "b", "b", "b"], ["a", "b", "c"])
    assert f["a"] == pytest.approx(2 / 3) and f["b"] == pytest.approx(0.5) and f["c"] == 0.0
    assert f["macro"] == pytest.approx((2 / 3 + 0.5) / 3) and f["micro"] == pytest.approx(0.5)
    assert cohen_kappa(["x", "x"], ["x", "x"]) == 1.0
    # labels absent from gold and predictions do not count in the macro average
    assert f1_scores(["a", "b"], ["a", "a"], ["a", "b", "c"])["macro"] == pytest.approx((2 / 3 + 0) / 2)


def test_eval_models_on_a_labels_file(tiny_model_dir: Path, tmp_path: Path):
    from fairstream.eval import evaluate_model, format_report

    rows = [
        {"uid": "1", "text": "The Muslim family met the mayor to talk about the new school in the town centre.", "keyword": "muslim",
         "class": "religion", "gloss": "who believes in Islam", "wsd": "yes", "regard": "neutral"},
        {"uid": "2", "text": "Add black pepper to the sauce and stir it for another five minutes on low heat please.", "keyword": "black",
         "class": "race/ethnicity", "gloss": "of Black race/ethnicity", "wsd": "no", "regard": None},
        {"uid": "3", "text": "Many Mexicans were praised for rebuilding the bridge after the flood in the spring.", "keyword": "mexican",
         "class": "nationality", "gloss": "of Mexican nationality", "wsd": "yes", "regard": "positive"},
    ]  # fmt: skip
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = evaluate_model(JointModel(tiny_model_dir), labels)
    assert result["metrics"]["n"] == 3 and result["metrics"]["regard_n"] == 2
    assert set(result["per_class"]) == {"religion", "race/ethnicity", "nationality"}
    assert len(result["predictions"]["wsd"]) == 3
    assert "WSD     kappa" in format_report(result)
    assert result["trained_on_these_labels"] is False and "NOTE" not in format_report(result)

    # a model whose config lists this file's digest among its training labels says so
    trained = tmp_path / "trained-model"
    shutil.copytree(tiny_model_dir, trained)
    cfg = json.loads((trained / "config.json").read_text())
    cfg.setdefault("training", {})["label_files_sha256"] = [hashlib.sha256(labels.read_bytes()).hexdigest()]
    (trained / "config.json").write_text(json.dumps(cfg))
    result = evaluate_model(JointModel(trained), labels)
    assert result["trained_on_these_labels"] is True
    assert "NOTE: this labels file is part of the model's training data" in format_report(result)

    # so does a cascade with that model as one of its two
    cascade = tmp_path / "cascade"
    cascade.mkdir()
    (cascade / "config.json").write_text(
        json.dumps({"name": "c", "cascade": {"fast": str(tiny_model_dir), "full": str(trained)}})
    )
    result = evaluate_model(JointModel(cascade), labels)
    assert result["trained_on_these_labels"] is True and result["metrics"]["n"] == 3


def test_score_reports_negative_precision_and_recall():
    from fairstream.eval import format_report, score
    from fairstream.models.labels import LabelledPair

    def pair(i: int, wsd: str, regard: str | None) -> LabelledPair:
        m = MentionInput(f"The Muslim family {i}.", 4, 10, "muslim", "who believes in Islam")
        return LabelledPair(str(i), m, "religion", wsd, regard)

    gold = [
        ("yes", "negative"),
        ("yes", "negative"),
        ("yes", "neutral"),
        ("yes", "neutral"),
        ("yes", "positive"),
    ]
    pairs = [pair(i, w, r) for i, (w, r) in enumerate(gold)] + [pair(9, "no", None)]
    # negative decided 3 times among person items, right once: precision 1/3; 1 of 2 found: recall 1/2
    # (the one neutral decision is a gold negative: neutral precision 0);
    # the non-person item decided negative is not scored for regard
    pred = ["negative", "neutral", "negative", "negative", "positive", "negative"]
    m = score(pairs, ["yes"] * 6, pred)
    assert m["negative_precision"] == pytest.approx(1 / 3) and m["negative_recall"] == pytest.approx(1 / 2)
    assert m["regard_precision"] == pytest.approx({"negative": 1 / 3, "neutral": 0.0, "positive": 1.0})
    assert m["regard_recall"] == pytest.approx({"negative": 0.5, "neutral": 0.0, "positive": 1.0})
    assert m["regard_f1"]["negative"] == pytest.approx(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5))
    # never decided negative: precision has no data (not 0.0); recall is 0 of 2
    m = score(pairs, ["yes"] * 6, ["neutral"] * 6)
    assert m["negative_precision"] is None and m["negative_recall"] == 0.0
    # no negative gold: recall has no data
    m = score(pairs[2:], ["yes"] * 4, ["negative", "neutral", "positive", "neutral"])
    assert m["negative_recall"] is None and m["negative_precision"] == 0.0
    result = {"model": "m", "labels": "l", "seconds": 0, "providers": [], "metrics": m,
              "per_class": {"religion": m}}  # fmt: skip
    table = format_report(result)
    assert "negative precision 0.000   negative recall no data" in table
    assert "neg P" in table and "neg R" in table


def test_eval_models_uses_the_models_regard_offsets(tiny_model_dir: Path, tmp_path: Path):
    from fairstream.core.schema import REGARD_LABELS
    from fairstream.eval import evaluate_model, format_report
    from fairstream.models.decision import regard_index

    rows = [
        {"uid": str(i), "text": t, "keyword": kw, "class": "nationality", "gloss": "g", "wsd": "yes", "regard": r}
        for i, (t, kw, r) in enumerate([
            ("Many Mexican families moved to the valley and opened bakeries.", "mexican", "positive"),
            ("The Mexican workers were blamed for the fire by the angry crowd.", "mexican", "negative"),
            ("An Asian student asked about the bus timetable at the station.", "asian", "neutral"),
            ("The Asian doctors were thanked for their care in the hospital.", "asian", "positive"),
        ])
    ]  # fmt: skip
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plain = evaluate_model(JointModel(tiny_model_dir), labels)
    assert plain["regard_logit_offsets"] == [0.0, 0.0, 0.0] and plain["metrics_argmax"] is None
    shifted_dir = tmp_path / "shifted"
    shutil.copytree(tiny_model_dir, shifted_dir)
    cfg = json.loads((shifted_dir / "config.json").read_text())
    cfg["regard_logit_offsets"] = [-50.0, 0.0, 50.0]  # every decision positive
    (shifted_dir / "config.json").write_text(json.dumps(cfg))
    model = JointModel(shifted_dir)
    shifted = evaluate_model(model, labels)
    assert shifted["predictions"]["regard"] == ["positive"] * 4
    assert shifted["regard_logit_offsets"] == [-50.0, 0.0, 50.0]
    assert shifted["metrics_argmax"] == plain["metrics"]  # the comparison without the rule
    assert shifted["metrics"]["negative_precision"] is None and shifted["metrics"]["negative_recall"] == 0.0
    table = format_report(shifted)
    assert "regard_logit_offsets [-50, +0, +50]" in table and "argmax  micro-F1" in table
    # the decision of eval-models is the prediction's own where the mention is a person
    from fairstream.models.labels import load_labelled_pairs

    mentions = [p.mention for p in load_labelled_pairs(labels)]
    for p, decided in zip(model.predict(mentions), shifted["predictions"]["regard"], strict=True):
        assert decided == REGARD_LABELS[regard_index(p.regard_probs, model.regard_offsets)]
        assert p.regard in (None, decided)


def test_fp16_export_for_gpu_matches_fp32(tiny_model_dir: Path, tmp_path: Path):
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from export.export_onnx import convert_fp16

    fp16 = tmp_path / "model.fp16.onnx"
    convert_fp16(tiny_model_dir / "model.fp32.onnx", fp16)
    tok = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    feeds = encode_batch(tok, items(), max_length=128)
    # ONNX Runtime's CPU provider also runs fp16 graphs, which lets this machine check the conversion
    half = ort.InferenceSession(str(fp16), providers=["CPUExecutionProvider"]).run(None, feeds)
    full = ort.InferenceSession(
        str(tiny_model_dir / "model.fp32.onnx"), providers=["CPUExecutionProvider"]
    ).run(None, feeds)
    for h, f in zip(half, full, strict=True):
        assert h.dtype == np.float32  # inputs/outputs stay fp32 (keep_io_types)
        np.testing.assert_allclose(h, f, atol=0.05 * max(1.0, np.abs(f).max()))
    # the runtime picks int8 on CPU and refuses a folder that only has fp16 there
    only16 = tmp_path / "only16"
    shutil.copytree(tiny_model_dir, only16)
    shutil.copy(fp16, only16 / "model.fp16.onnx")
    cfg = json.loads((only16 / "config.json").read_text())
    cfg["onnx"] = {"fp16": "model.fp16.onnx"}
    (only16 / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelError, match="no ONNX file usable with CPUExecutionProvider"):
        JointModel(only16, providers=["CPUExecutionProvider"]).predict(items())


@pytest.mark.parametrize("arch", ["mpnet", "roberta"])
def test_other_encoder_architectures_export_and_run_batch_invariant(arch: str, tmp_path: Path):
    """The teacher (MPNet) and a user's roberta-base go through the same export and runtime as MiniLM."""
    torch = pytest.importorskip("torch")
    import transformers
    from tokenizers import Tokenizer

    from export.export_onnx import export_model
    from export.modeling import JointCrossEncoder
    from tests.fixtures.make_tiny_model import build_tokenizer

    texts = [it.text for it in items()] + ["<< >> ; who is a person of nationality race religion gender"]
    tok = build_tokenizer(texts)
    run = tmp_path / "run"
    (run / "tokenizer").mkdir(parents=True)
    transformers.BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]").save_pretrained(run / "tokenizer")  # fmt: skip
    config_cls = {"mpnet": transformers.MPNetConfig, "roberta": transformers.RobertaConfig}[arch]
    cfg = config_cls(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=300, pad_token_id=tok.token_to_id("[PAD]"))  # fmt: skip
    cfg.save_pretrained(run / "encoder_config")
    torch.manual_seed(0)
    model = JointCrossEncoder(str(run / "encoder_config"), pretrained=False)
    with torch.no_grad():
        model.regard_head.weight.mul_(40.0)
        model.wsd_head.weight.mul_(20.0)
    torch.save(model.state_dict(), run / "model.pt")
    meta = {"encoder": f"runs/enc/tiny-random-{arch}", "max_length": 128, "seed": 0, "include_dev": False,
            "soft_labels": "soft.jsonl.gz", "soft_labelled_pairs": 5, "distill_weight": 0.5, "temperature": None,
            "distill_pool": []}  # fmt: skip
    (run / "train_meta.json").write_text(json.dumps(meta))
    out = tmp_path / "model"
    export_model(run, out, name=f"tiny-{arch}", threshold=0.5, keep_fp32=True)
    exported = json.loads((out / "config.json").read_text())
    assert exported["encoder"] == f"tiny-random-{arch}"
    # how it was trained travels with the model; settings a run did not use are left out
    assert exported["training"] == {"seed": 0, "include_dev": False, "soft_labels": "soft.jsonl.gz",
                                    "soft_labelled_pairs": 5, "distill_weight": 0.5}  # fmt: skip
    model.eval()
    feeds = encode_batch(Tokenizer.from_file(str(out / "tokenizer.json")), items(), max_length=128)
    with torch.no_grad():
        torch_w, torch_r = (t.numpy() for t in model(**{k: torch.from_numpy(v) for k, v in feeds.items()}))
    onnx_w, onnx_r = JointModel(fp32_copy(out, tmp_path), batch_size=64).predict_logits(items())
    np.testing.assert_allclose(onnx_w, torch_w, atol=1e-4)  # the graph computes what the model does
    np.testing.assert_allclose(onnx_r, torch_r, atol=1e-4)
    int8 = [JointModel(out, batch_size=bs, intra_op_threads=1).predict_logits(items()) for bs in (1, 3, 64)]
    for w, r in int8[1:]:  # per-row int8: a mention's logits do not depend on its batch
        np.testing.assert_array_equal(w, int8[0][0])
        np.testing.assert_array_equal(r, int8[0][1])
    assert (int8[0][1].argmax(1) == onnx_r.argmax(1)).mean() >= 0.8
    # from the ONNX graph alone the torch (GPU) backend rebuilds BERT-style encoders only: others are
    # refused with a clear error ...
    from fairstream.errors import ModelError
    from fairstream.models.loader import load_model

    with pytest.raises(
        ModelError, match=r"model\.(int8|fp32)\.onnx: .*\(RoBERTa, MPNet\) are not supported.*onnxruntime"
    ):
        load_model(out, device="cpu", backend="torch").predict_logits(items())
    # ... and exported --with-torch they run there from their own weights, any architecture
    export_model(run, tmp_path / "with-torch", name=f"tiny-{arch}", threshold=0.5, with_torch=True)
    cfg_json = json.loads((tmp_path / "with-torch/config.json").read_text())
    assert cfg_json["torch"]["weights"] == "torch/model.safetensors"
    torch_model = load_model(tmp_path / "with-torch", device="cpu", backend="torch", batch_size=2)
    tw, tr = torch_model.predict_logits(items())
    np.testing.assert_allclose(tw, torch_w, atol=1e-4)
    np.testing.assert_allclose(tr, torch_r, atol=1e-4)
    assert [p.person for p in torch_model.predict(items())] == [bool(y >= 0.5) for y in softmax_yes(tw)]
    (tmp_path / "with-torch/torch/model.safetensors").unlink()
    with pytest.raises(ModelError, match=r"model\.safetensors: listed in .*config\.json but missing"):
        load_model(tmp_path / "with-torch", device="cpu", backend="torch").predict_logits(items())


def softmax_yes(wsd_logits: np.ndarray) -> np.ndarray:
    e = np.exp(wsd_logits - wsd_logits.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True))[:, 1]


def test_exported_activations_use_7_bits_so_avx2_pair_sums_cannot_saturate(
    tiny_model_dir: Path, tmp_path: Path
):
    # onnxruntime's u8 x s8 GEMM on CPUs without VNNI adds pairs of byte products in 16-bit saturating
    # arithmetic: with 8-bit activations (q up to 255) a pair reaches 255 * 127 * 2 = 64,770 and the
    # int8 logits depend on the CPU class; 7-bit activations keep every pair sum exact
    import onnx
    from onnx import numpy_helper

    from export.quantize import per_row_activations, quantization_tag, quantize_dynamic_int8

    graph = onnx.load(str(tiny_model_dir / "model.int8.onnx")).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    smax, zp = float(inits["perrow/smax"]), int(inits["perrow/zp128"])
    assert (smax, zp) == (63.0, 64)
    weights = [inits[n.input[1]] for n in graph.node if n.op_type == "MatMulIntegerToFloat"]
    assert weights and all(w.dtype == np.int8 for w in weights)
    largest_pair = 2 * (zp + smax) * max(int(np.abs(w.astype(np.int32)).max()) for w in weights)
    assert largest_pair <= 32767, largest_pair
    assert json.loads((tiny_model_dir / "config.json").read_text())["quantization"] == quantization_tag(7)
    # the 8-bit scheme of the graphs shipped before session 23 stays available, and does overflow
    from export.export_onnx import export_fp32

    fp32, dyn = tmp_path / "fp32.onnx", tmp_path / "dyn.onnx"
    export_fp32(tiny_model_dir.parent / "run", fp32, 128)
    quantize_dynamic_int8(fp32, dyn)
    eight = {
        i.name: numpy_helper.to_array(i)
        for i in per_row_activations(onnx.load(str(dyn)), 8).graph.initializer
    }
    assert (float(eight["perrow/smax"]), int(eight["perrow/zp128"])) == (127.0, 128)
    assert 2 * (128 + 127) * 127 > 32767
    with pytest.raises(ValueError, match="activation_bits=6: must be 7 or 8"):
        per_row_activations(onnx.load(str(dyn)), 6)


def test_rebit_turns_a_shipped_8_bit_graph_into_the_7_bit_export(tiny_model_dir: Path, tmp_path: Path):
    """``export.quantize --rebit``: an 8-bit per-row graph becomes bit for bit what a 7-bit export computes."""
    import onnx
    import onnxruntime as ort

    from export.export_onnx import export_fp32
    from export.quantize import (
        METADATA_KEY,
        per_row_activations,
        quantization_tag,
        quantize_dynamic_int8,
        set_activation_bits,
    )

    fp32, dyn = tmp_path / "fp32.onnx", tmp_path / "dyn.onnx"
    export_fp32(tiny_model_dir.parent / "run", fp32, 128)
    quantize_dynamic_int8(fp32, dyn)
    seven, rebit = tmp_path / "seven.onnx", tmp_path / "rebit.onnx"
    onnx.save(per_row_activations(onnx.load(str(dyn)), 7), str(seven))
    subprocess.run(
        [sys.executable, "-m", "export.quantize", "--rebit", str(tmp_path / "eight.onnx"), str(rebit)],
        capture_output=True, check=False, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip  # the source does not exist yet: must fail without writing
    assert not rebit.exists()
    onnx.save(per_row_activations(onnx.load(str(dyn)), 8), str(tmp_path / "eight.onnx"))
    done = subprocess.run(
        [sys.executable, "-m", "export.quantize", "--rebit", str(tmp_path / "eight.onnx"), str(rebit)],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rng = np.random.default_rng(0)
    n, t = 5, 23
    feed = {
        "input_ids": rng.integers(5, 90, (n, t)).astype(np.int64),
        "attention_mask": np.ones((n, t), np.int64),
        "token_type_ids": np.zeros((n, t), np.int64),
        "target_mask": (np.arange(t)[None, :] == 3).repeat(n, 0).astype(np.float32),
    }
    outs = {}
    for name, path in (("seven", seven), ("rebit", rebit), ("eight", tmp_path / "eight.onnx")):
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = {i.name for i in sess.get_inputs()}
        outs[name] = sess.run(None, {k: v for k, v in feed.items() if k in names})
    for a, b in zip(outs["seven"], outs["rebit"], strict=True):
        assert np.array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(outs["seven"], outs["eight"], strict=True))
    meta = {p.key: p.value for p in onnx.load(str(rebit)).metadata_props}
    assert meta[METADATA_KEY] == quantization_tag(7)
    with pytest.raises(ValueError, match="not a per-row activation graph"):
        set_activation_bits(onnx.load(str(dyn)), 7)


def _byte_level_tokenizer(texts: list[str]) -> Any:
    """A RoBERTa-style tokenizer (byte-level BPE, ``<s> a </s></s> b </s>``) trained on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>"])
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return tok


def test_vectorized_encode_batch_equals_the_per_token_rows(tiny_model_dir: Path):
    """``encode_batch`` (array operations, the GPU feeder) builds exactly ``pad_rows(encode_rows(...))``.

    Mentions where the fast path must step aside: truncation, a non-ASCII keyword (a character
    can be several byte-level tokens), a control character the normalizer removes, a keyword at
    the very start or end, CJK text, a keyword inside a longer word."""
    from tokenizers import Tokenizer

    from fairstream.models.encoding import encode_rows, pad_id_of, pad_rows

    def at(text: str, word: str, nth: int = 0) -> MentionInput:
        start = -1
        for _ in range(nth + 1):
            start = text.index(word, start + 1)
        return MentionInput(text, start, start + len(word), word.lower(), "a person of some group")

    long_text = "filler words here " * 60 + SENT + " trailing words" * 60
    mentions = [
        at(SENT, "Muslim"), at(SENT, "Muslim", 1), at(SENT, "Asian"),
        at("Muslim at the start.", "Muslim"), at("At the end: Asian", "Asian"),
        at("A Māori elder spoke; Māori voices.", "Māori", 1), at("The\x07 Asian\x00 nurse.", "Asian"),
        at("中国人 and a Chinese visitor 在这里.", "Chinese"), at("Pan-Asian festivals, Asians too.", "Asian", 1),
        at(long_text, "Asian"), at("An Asian", "Asian"), at("x " * 300 + "a Jewish man", "Jewish"),
    ]  # fmt: skip
    tokenizers = {"wordpiece": Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json")),
                  "byte-level": _byte_level_tokenizer([m.text for m in mentions] + ["<< >> ; a person of some group"])}  # fmt: skip
    for name, tok in tokenizers.items():
        tok.no_truncation()
        tok.no_padding()
        for max_length in (16, 48, 192):
            fast = encode_batch(tok, mentions, max_length)
            rows = pad_rows(encode_rows(tok, mentions, max_length), pad_id_of(tok))
            for key, want in rows.items():
                assert fast[key].dtype == want.dtype, (name, key)
                np.testing.assert_array_equal(
                    fast[key], want, err_msg=f"{name} {key} max_length={max_length}"
                )
            assert (fast["target_mask"].sum(axis=1) >= 1).all()
