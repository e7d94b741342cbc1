"""The PyTorch backend (GPU path) run on CPU with the same code, and the device setting."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnx")

import torch

from fairstream.core.config import FilterConfig
from fairstream.errors import ModelError
from fairstream.models.encoding import MentionInput
from fairstream.models.labels import load_labelled_pairs
from fairstream.models.loader import load_model, parse_device
from fairstream.models.runtime import JointModel
from fairstream.models.torch_backend import TorchJointModel, auto_batch_size, build_torch_model
from fairstream.taxonomy import Taxonomy

NO_CUDA = "needs a CUDA GPU: torch.cuda.is_available() is False on this machine"


def is_backend(model, cls) -> bool:
    """Whether ``model`` runs on ``cls``: itself, or both members of a cascade (the default model)."""
    members = [model.fast, model.full] if model.cascade is not None else [model]
    return all(isinstance(m, cls) for m in members)


@pytest.fixture(scope="module")
def dev_items(shared_dir) -> list[MentionInput]:
    tax = Taxonomy.default()
    pairs = load_labelled_pairs(
        shared_dir / "data" / "labels" / "dev.jsonl", {a.keyword: a.forms for a in tax}
    )
    items = [p.mention for p in pairs]
    random.Random(0).shuffle(items)
    return items[:400]


@pytest.fixture(scope="module")
def torch_cpu() -> TorchJointModel:
    return TorchJointModel(device="cpu", threads=1)


def _probs(model, items):
    wsd, reg = model.predict_logits(items)
    e_w, e_r = np.exp(wsd - wsd.max(1, keepdims=True)), np.exp(reg - reg.max(1, keepdims=True))
    return np.concatenate([e_w / e_w.sum(1, keepdims=True), e_r / e_r.sum(1, keepdims=True)], axis=1)


def test_weights_read_from_fp32_graph_equal_the_checkpoint(tiny_model_dir, tmp_path_factory):
    # the tiny model keeps its fp32 graph and its training checkpoint: extraction must be exact
    run = tiny_model_dir.parent / "run"
    checkpoint = torch.load(run / "model.pt", map_location="cpu")
    module = build_torch_model(tiny_model_dir)
    assert module.encoder.config.num_attention_heads == 2
    assert module.encoder.config.num_hidden_layers == 2
    got = module.state_dict()
    compared = 0
    for key, value in checkpoint.items():
        if key.startswith("encoder.pooler.") or key.endswith("_ids"):
            continue  # the pooler is not used by the joint model, so it is not in the graph
        torch.testing.assert_close(got[key], value, rtol=0, atol=0, msg=key)
        compared += 1
    assert compared >= 30


def test_weights_read_from_int8_graph_are_the_dequantized_checkpoint(tiny_model_dir):
    run = tiny_model_dir.parent / "run"
    checkpoint = torch.load(run / "model.pt", map_location="cpu")
    got = build_torch_model(tiny_model_dir, onnx_kind="int8").state_dict()
    for key in (
        "encoder.encoder.layer.1.attention.self.query.weight",
        "encoder.embeddings.word_embeddings.weight",
    ):
        ref = checkpoint[key]
        step = ref.abs().max() / 127  # one int8 step of the largest channel
        assert (got[key] - ref).abs().max() <= step
        assert not torch.equal(got[key], ref)  # really the int8 values


def test_torch_cpu_agrees_with_shipped_int8_on_dev_mentions(torch_cpu, dev_items):
    int8 = _probs(JointModel(intra_op_threads=1), dev_items)
    fp32 = _probs(torch_cpu, dev_items)
    person_agree = ((int8[:, 1] >= 0.5) == (fp32[:, 1] >= 0.5)).mean()
    person = int8[:, 1] >= 0.5
    regard_agree = (int8[person, 3:].argmax(1) == fp32[person, 3:].argmax(1)).mean()
    assert person_agree >= 0.98, person_agree
    assert regard_agree >= 0.97, regard_agree
    assert np.abs(int8 - fp32).mean() < 0.01
    assert person.sum() > 50  # the check covers both decisions


def test_batching_padding_and_sorting_do_not_change_results(dev_items):
    items = dev_items[:48]
    # one graph (the default cascade's full model): its forward passes are what this test counts
    alone = TorchJointModel("joint-v6", device="cpu", batch_size=1, threads=1)
    batched = TorchJointModel("joint-v6", device="cpu", batch_size=16, threads=1)
    one_by_one = np.concatenate([alone.predict_logits([it])[0] for it in items[:12]])
    w1, r1 = alone.predict_logits(items)
    w16, r16 = batched.predict_logits(items)
    np.testing.assert_allclose(w1[:12], one_by_one, atol=1e-4)
    np.testing.assert_allclose(w1, w16, atol=1e-4)
    np.testing.assert_allclose(r1, r16, atol=1e-4)
    assert batched.last_batch_sizes == [16, 16, 16]
    # input order is kept whatever the length sort did
    reversed_w, _ = batched.predict_logits(items[::-1])
    np.testing.assert_allclose(reversed_w[::-1], w16, atol=1e-4)
    preds = batched.predict(items)
    assert all((p.wsd_probs[1] >= batched.wsd_threshold) == p.person for p in preds)


def test_predict_interface_matches_onnx_model(torch_cpu):
    text = "The Muslim family opened a bakery that the whole town loves and visits every single day."
    (pred,) = torch_cpu.predict([MentionInput(text, 4, 10, "muslim", "who believes in Islam")])
    assert pred.person and pred.regard in ("positive", "neutral", "negative")
    assert abs(sum(pred.wsd_probs) - 1) < 1e-6 and abs(sum(pred.regard_probs) - 1) < 1e-6
    assert torch_cpu.predict([]) == []
    assert torch_cpu.name == JointModel().name


def test_torch_model_pickles_without_weights(torch_cpu):
    import pickle

    clone = pickle.loads(pickle.dumps(torch_cpu))
    members = [clone.fast, clone.full] if clone.cascade is not None else [clone]
    assert all(isinstance(m, TorchJointModel) and m._module is None for m in members)
    assert clone.device == "cpu" and clone.threads == 1


@pytest.mark.parametrize("value", ["gpu", "cuda:", "cuda:x", "CUDA:-1", "", 0, None])
def test_device_errors_name_the_argument_and_allowed_values(value):
    with pytest.raises(ValueError, match=r"device=.*must be one of cpu, cuda, cuda:N, auto"):
        parse_device(value)


def test_device_values_accepted():
    assert [parse_device(v) for v in ("cpu", "CUDA", "cuda:1", " auto ")] == ["cpu", "cuda", "cuda:1", "auto"]


def test_cpu_device_is_onnx_runtime_int8():
    model = load_model(device="cpu", batch_size=4)
    assert is_backend(model, JointModel) and model.batch_size == 4


def test_auto_without_cuda_is_onnx_runtime():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: auto picks it")
    assert is_backend(load_model(device="auto"), JointModel)


def test_cuda_without_gpu_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    model = load_model(device="cuda")
    with pytest.raises(ModelError, match=r"device='cuda'.*no CUDA device.*device='cpu'"):
        model.predict([MentionInput("The Muslim family", 4, 10, "muslim", "who believes in Islam")])


def test_bad_backend_and_batch_size_name_the_argument():
    with pytest.raises(ValueError, match=r"backend='tensorrt'.*auto, torch, onnxruntime"):
        load_model(device="cpu", backend="tensorrt")
    with pytest.raises(ValueError, match=r"batch_size=0.*>= 1"):
        load_model(device="cpu", batch_size=0)


def test_auto_batch_size_shrinks_with_length_and_grows_with_memory():
    args = {"hidden": 384, "heads": 12, "intermediate": 1536, "elem_bytes": 2}
    short = auto_batch_size(8 << 30, 32, **args)
    long = auto_batch_size(8 << 30, 192, **args)
    small_gpu = auto_batch_size(1 << 30, 192, **args)
    assert short > long > small_gpu >= 1
    assert auto_batch_size(1 << 10, 192, **args) == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_half_precision_agrees_with_int8(dev_items, dtype):
    if dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16")
    gpu = TorchJointModel(device="cuda", dtype=dtype)
    int8 = _probs(JointModel(), dev_items)
    half = _probs(gpu, dev_items)
    assert ((int8[:, 1] >= 0.5) == (half[:, 1] >= 0.5)).mean() >= 0.98
    assert np.abs(int8 - half).mean() < 0.02
    assert max(gpu.last_batch_sizes) > 16  # auto-sized from free memory, not the CPU default


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_batches_agree_with_one_by_one(dev_items):
    gpu = TorchJointModel(device="cuda", dtype="float32")
    items = dev_items[:32]
    one = np.concatenate([gpu.predict_logits([it])[0] for it in items])
    np.testing.assert_allclose(gpu.predict_logits(items)[0], one, atol=1e-3)


def test_device_setting_reaches_the_stream_and_the_filter_job(tmp_path):
    from fairstream.core.config import FilterConfig
    from fairstream.filter_job import FilterJob
    from fairstream.stream.dataset import FairStream

    stream = FairStream(["A text."], device="cpu")
    assert is_backend(stream.step.tagger.model, JointModel)
    shard = tmp_path / "in.jsonl"
    shard.write_text('{"text": "A text."}\n')
    job = FilterJob([shard], tmp_path / "out", config=FilterConfig(device="cpu", batch_size=3))
    assert is_backend(job.model, JointModel) and job.model.batch_size == 3
    if not torch.cuda.is_available():
        gpu_stream = FairStream(
            [
                "The Muslim family opened a small bakery that the whole town loves and visits every day of the week."
            ],
            device="cuda",
        )
        model = gpu_stream.step.tagger.model
        assert is_backend(model, TorchJointModel) and model.batch_size is None  # default 8 = auto on GPU
        assert FairStream(["x"], device="cuda", batch_size=64).step.tagger.model.batch_size == 64
        with pytest.raises(ModelError, match="no CUDA device"):
            list(gpu_stream)


def test_filter_cli_rejects_a_bad_device_naming_the_flag(tmp_path, capsys):
    from fairstream.cli import main

    shard = tmp_path / "in.jsonl"
    shard.write_text('{"text": "A text."}\n')
    assert main(["filter", str(shard), "-o", str(tmp_path / "out"), "--device", "gpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fairstream: error: --device") and "cpu, cuda, cuda:N, auto" in err
    assert len(err.splitlines()) == 1


def test_chunked_and_prefetched_tokenization_keeps_results_and_order(dev_items):
    """The GPU feeder (chunks tokenized in a thread ahead of the model) on CPU, same code path."""
    items = dev_items[:40]
    whole = TorchJointModel("joint-v6", device="cpu", batch_size=8, threads=1)
    ahead = TorchJointModel("joint-v6", device="cpu", batch_size=8, threads=1, chunk_size=7, prefetch=True)
    w, r = whole.predict_logits(items)
    w7, r7 = ahead.predict_logits(items)
    np.testing.assert_allclose(w7, w, atol=1e-4)
    np.testing.assert_allclose(r7, r, atol=1e-4)
    assert ahead.last_batch_sizes == [7] * 5 + [5]  # one pass per chunk: batches never span two
    assert sum(whole.last_batch_sizes) == 40 and max(whole.last_batch_sizes) == 8
    assert ahead.predict_logits([])[0].shape == (0, 3)
    with pytest.raises(ValueError, match="chunk_size=0"):
        TorchJointModel("joint-v6", device="cpu", chunk_size=0)


def test_tokenizer_worker_processes_build_the_same_inputs_in_order(dev_items, monkeypatch):
    """The GPU feeder's worker processes (single-threaded tokenizers), run on CPU with the same code."""
    items = dev_items[:50]
    in_process = TorchJointModel("joint-v6", device="cpu", batch_size=8, threads=1, chunk_size=6)
    pooled = TorchJointModel(
        "joint-v6", device="cpu", batch_size=8, threads=1, chunk_size=6, tokenize_workers=2
    )
    try:
        chunks = list(pooled.encoded_chunks(items))
        assert [start for start, _ in chunks] == list(range(0, 50, 6))
        for (start, feeds), (start2, want) in zip(chunks, in_process.encoded_chunks(items), strict=True):
            assert start == start2
            for key in want:
                np.testing.assert_array_equal(feeds[key], want[key])
        assert pooled._tokenize_pool is not None  # the processes really ran
        w, r = pooled.predict_logits(items)
        w0, r0 = in_process.predict_logits(items)
        np.testing.assert_array_equal(w, w0)
        np.testing.assert_array_equal(r, r0)
        # a call of one chunk stays in this process; close() stops the workers, the next call restarts them
        pooled.close()
        pooled.predict_logits(items[:5])
        assert pooled._tokenize_pool is None
        assert pickle.loads(pickle.dumps(pooled)).tokenize_workers == 2
    finally:
        pooled.close()
    monkeypatch.setenv("FAIRSTREAM_TOKENIZE_WORKERS", "3")
    assert TorchJointModel("joint-v6", device="cpu").tokenize_workers == 3
    monkeypatch.setenv("FAIRSTREAM_TOKENIZE_WORKERS", "many")
    with pytest.raises(ValueError, match="FAIRSTREAM_TOKENIZE_WORKERS='many'"):
        TorchJointModel("joint-v6", device="cpu")
    monkeypatch.delenv("FAIRSTREAM_TOKENIZE_WORKERS")
    assert TorchJointModel("joint-v6", device="cpu").tokenize_workers == 0
    with pytest.raises(ValueError, match="tokenize_workers=-1"):
        TorchJointModel("joint-v6", device="cpu", tokenize_workers=-1)


def test_tokenizer_workers_fall_back_to_this_process_inside_a_daemonic_process(
    dev_items, monkeypatch, caplog
):
    from fairstream import processes
    from fairstream.models import torch_backend

    class Daemon:
        daemon = True

    monkeypatch.setattr(processes.multiprocessing, "current_process", lambda: Daemon())
    model = TorchJointModel(
        "joint-v6", device="cpu", batch_size=8, threads=1, chunk_size=4, tokenize_workers=2
    )
    with caplog.at_level("WARNING", logger="fairstream.models.torch_backend"):
        starts = [start for start, _ in model.encoded_chunks(dev_items[:10])]
    assert starts == [0, 4, 8]
    assert model.tokenize_workers == 0 and model._tokenize_pool is None
    assert "tokenize_workers=2 ignored: a daemonic process" in caplog.text
    # the default (no argument, no environment variable) falls back without a warning in every worker
    caplog.clear()
    monkeypatch.delenv("FAIRSTREAM_TOKENIZE_WORKERS", raising=False)
    monkeypatch.setattr(torch_backend, "default_tokenize_workers", lambda device: 3)
    quiet = TorchJointModel("joint-v6", device="cpu", batch_size=8, threads=1, chunk_size=4)
    copy = pickle.loads(pickle.dumps(quiet))
    with caplog.at_level("WARNING", logger="fairstream.models.torch_backend"):
        assert len(list(copy.encoded_chunks(dev_items[:10]))) == 3
    assert copy.tokenize_workers == 0 and "ignored" not in caplog.text


def _failing_initializer(*_args: object) -> None:
    raise OSError("no tokenizer here")


def test_tokenizer_workers_that_cannot_start_are_a_clear_error(dev_items, monkeypatch):
    from fairstream.models import torch_backend

    monkeypatch.setattr(torch_backend, "init_encode_worker", _failing_initializer)
    model = TorchJointModel(
        "joint-v6", device="cpu", batch_size=8, threads=1, chunk_size=4, tokenize_workers=2
    )
    with pytest.raises(ModelError, match="FAIRSTREAM_TOKENIZE_WORKERS=0"):
        list(model.encoded_chunks(dev_items[:10]))
    assert model._tokenize_pool is None


def test_filter_with_scan_and_tokenizer_processes_decides_as_in_one_process():
    """The GPU layout (scan workers and tokenizer processes beside the model) on CPU: same outputs."""
    from fairstream.bench import load_texts
    from fairstream.core.config import FilterConfig
    from fairstream.core.step import FilterStep

    texts, _ = load_texts([], limit=240)  # the sample corpus, three look-ahead windows

    pools: list[bool] = []

    def run(scan_workers: int, tokenize_workers: int) -> tuple[list[object], dict[str, object]]:
        model = TorchJointModel(
            "joint-v6",
            device="cpu",
            batch_size=16,
            threads=1,
            chunk_size=32,
            tokenize_workers=tokenize_workers,
        )
        step = FilterStep(FilterConfig(cap=0.01, lookahead=80, scan_workers=scan_workers), model=model)
        windows = ((lo, texts[lo : lo + 80]) for lo in range(0, len(texts), 80))
        out = []
        try:
            for lo, chunk in step.read_ahead(windows, lambda w: w[1]):
                out += [(r.kept, r.text) for r in step.process(chunk, start=lo, annotate=False)]
        finally:
            pools.append(model._tokenize_pool is not None)
            step.tagger.close()
            model.close()
        return out, step.stats()["counters"]

    plain, plain_counts = run(0, 0)
    pooled, pooled_counts = run(1, 2)
    assert len(plain) == len(pooled) == 240
    assert pooled == plain
    assert pooled_counts == plain_counts and plain_counts["mentions_predicted"] > 32
    assert pools == [False, True]  # the second run's model did tokenize in its processes


def test_an_explicit_batch_size_is_kept_on_a_gpu_too(monkeypatch):
    """``--batch-size 8`` on a GPU is 8, not "sized from free memory" (8 used to be the default and so
    read as unset). A fake ``load_model`` records what it is asked for: no GPU here."""
    import fairstream.models.loader as loader

    asked: list[dict] = []
    real = loader.load_model
    monkeypatch.setattr(loader, "load_model", lambda model, **kw: asked.append(kw))
    for config in (FilterConfig(device="cuda", batch_size=8), FilterConfig(device="cuda"), FilterConfig()):
        loader.load_model_for(config)
    assert [(a["device"], a["batch_size"]) for a in asked] == [("cuda", 8), ("cuda", None), ("cpu", None)]
    monkeypatch.setattr(loader, "load_model", real)
    assert loader.load_model_for(FilterConfig()).batch_size == 8  # the real CPU model: 8 when unset
