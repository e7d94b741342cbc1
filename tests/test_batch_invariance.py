"""A mention's decision is a function of that mention alone: not of its batch, its padding or the run's settings.

Real mentions come from the expert dev set (../shared/data/labels/dev.jsonl) and real shards from
../shared/data/corpus; the model is the shipped one (int8, per-row activation quantization).
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import onnx
import pytest

from export.quantize import is_batch_invariant, per_row_activations
from fairstream.cli import main
from fairstream.models.encoding import MentionInput, encode_batch
from fairstream.models.labels import load_labelled_pairs
from fairstream.models.names import DEFAULT_MODEL
from fairstream.models.runtime import JointModel, shipped_model_names
from fairstream.taxonomy import Taxonomy

TOL = 1e-5


@pytest.fixture(scope="module")
def dev_mentions(shared_dir: Path) -> list[MentionInput]:
    tax = Taxonomy.default()
    pairs = load_labelled_pairs(
        shared_dir / "data" / "labels" / "dev.jsonl", {a.keyword: a.forms for a in tax}
    )
    mentions = [p.mention for p in pairs]
    random.Random(0).shuffle(mentions)
    return mentions[:130]


def _probs(model: JointModel, feeds: dict[str, np.ndarray]) -> np.ndarray:
    model._ensure_loaded()
    feeds = {k: v for k, v in feeds.items() if k in model._input_names}
    wsd, regard = model._session.run(["wsd_logits", "regard_logits"], feeds)
    e_w, e_r = np.exp(wsd - wsd.max(1, keepdims=True)), np.exp(regard - regard.max(1, keepdims=True))
    return np.concatenate([e_w / e_w.sum(1, keepdims=True), e_r / e_r.sum(1, keepdims=True)], axis=1)


def _padded(feeds: dict[str, np.ndarray], extra: int, pad_id: int) -> dict[str, np.ndarray]:
    out = {}
    for k, v in feeds.items():
        fill = pad_id if k == "input_ids" else 0
        out[k] = np.concatenate([v, np.full((v.shape[0], extra), fill, dtype=v.dtype)], axis=1)
    return out


def _assert_alone_padded_and_in_any_batch(model: JointModel, targets, others, rng: random.Random) -> None:
    assert model.batch_invariant
    model._ensure_loaded()
    tok = model._tokenizer
    pad_id = tok.token_to_id("[PAD]")
    for target in targets:
        alone = _probs(model, encode_batch(tok, [target], model.max_length))[0]
        for extra in (1, 7, 60):
            padded = _probs(model, _padded(encode_batch(tok, [target], model.max_length), extra, pad_id))[0]
            assert np.abs(padded - alone).max() < TOL, f"padding by {extra} tokens moved {target.keyword}"
        for size in (2, 8, 64):
            batch = [*rng.sample(others, size - 1), target]
            rng.shuffle(batch)
            probs = _probs(model, encode_batch(tok, batch, model.max_length))
            row = probs[batch.index(target)]
            assert np.abs(row - alone).max() < TOL, f"batch of {size} moved {target.keyword}"


@pytest.mark.parametrize("threads", [1, 2])
def test_shipped_model_probabilities_alone_padded_and_in_any_batch(dev_mentions, threads: int):
    model = JointModel(intra_op_threads=threads)
    # the default is a cascade: each of its graphs (the route itself is tested in test_cascade.py)
    graphs = [model.cascade.fast, model.cascade.full] if model.cascade is not None else [model]
    for graph in graphs:
        _assert_alone_padded_and_in_any_batch(
            graph, dev_mentions[:6], dev_mentions[6:], random.Random(threads)
        )


@pytest.mark.parametrize("name", [n for n in shipped_model_names() if n != DEFAULT_MODEL])
def test_every_other_shipped_graph_is_batch_invariant_too(dev_mentions, name: str):
    # the README promises it of every shipped graph (the default's test above covers the default)
    model = JointModel(name, intra_op_threads=1)
    _assert_alone_padded_and_in_any_batch(model, dev_mentions[:2], dev_mentions[2:], random.Random(0))


def test_predict_is_identical_at_every_batch_size(dev_mentions):
    ref = JointModel(batch_size=1).predict(dev_mentions)
    for bs in (3, 8, 64):
        got = JointModel(batch_size=bs).predict(dev_mentions)
        assert [p.person for p in got] == [p.person for p in ref]
        assert [p.regard for p in got] == [p.regard for p in ref]
        diff = max(
            max(
                abs(a - b)
                for a, b in zip(g.wsd_probs + g.regard_probs, r.wsd_probs + r.regard_probs, strict=True)
            )
            for g, r in zip(got, ref, strict=True)
        )
        assert diff < TOL


def test_today_per_tensor_quantization_was_batch_dependent_and_the_rewrite_fixes_it(
    tiny_model_dir: Path, tmp_path: Path
):
    # rebuild the per-tensor graph the old export wrote, from the tiny model's fp32 run
    from export.export_onnx import export_fp32
    from export.quantize import quantize_dynamic_int8

    run = tiny_model_dir.parent / "run"  # the conftest fixture keeps the PyTorch checkpoint there
    fp32, per_tensor = tmp_path / "fp32.onnx", tmp_path / "per_tensor.onnx"
    export_fp32(run, fp32, 128)
    quantize_dynamic_int8(fp32, per_tensor)
    assert not is_batch_invariant(per_tensor)
    rewritten = tmp_path / "rowq.onnx"
    onnx.save(per_row_activations(onnx.load(str(per_tensor))), str(rewritten))
    assert is_batch_invariant(rewritten)

    from onnxruntime import InferenceSession, SessionOptions
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    short = MentionInput("Muslim families met in the park on Sunday.", 0, 6, "muslim", "who follows Islam")
    long_text = "The Asian visitors, tired after a long day of travel across three cities, " * 3
    long = MentionInput(long_text, 4, 9, "asian", "of Asian race/ethnicity")

    def first_row(path: Path, items: list[MentionInput]) -> np.ndarray:
        opts = SessionOptions()
        opts.log_severity_level = 3
        sess = InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        names = {i.name for i in sess.get_inputs()}
        feeds = {k: v for k, v in encode_batch(tok, items, 128).items() if k in names}
        return np.concatenate(sess.run(None, feeds), axis=1)[0]

    moved_before = np.abs(first_row(per_tensor, [short]) - first_row(per_tensor, [short, long])).max()
    moved_after = np.abs(first_row(rewritten, [short]) - first_row(rewritten, [short, long])).max()
    assert moved_before > 1e-3  # the defect: a neighbour changed this mention's logits
    assert moved_after < TOL
    # and the rewrite stays close to fp32 (weights are untouched; only activation rounding differs)
    ref = first_row(fp32, [short])
    assert np.abs(first_row(rewritten, [short]) - ref).max() < 0.05 * np.abs(ref).max()


def test_rewrite_refuses_a_model_without_dynamic_quantization(tiny_model_dir: Path, tmp_path: Path):
    from export.export_onnx import export_fp32

    fp32 = tmp_path / "fp32.onnx"
    run = tiny_model_dir.parent / "run"
    export_fp32(run, fp32, 128)
    with pytest.raises(ValueError, match="no DynamicQuantizeLinear"):
        per_row_activations(onnx.load(str(fp32)))


def _real_shards(shared_dir: Path, folder: Path, n_docs: int = 80) -> list[Path]:
    src = shared_dir / "data" / "corpus" / "fineweb-edu-sample.jsonl.gz"
    docs = []
    with gzip.open(src, "rt", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if len(doc["text"]) < 6000:  # short documents keep the test fast
                docs.append({"id": doc["id"], "text": doc["text"]})
            if len(docs) == n_docs:
                break
    folder.mkdir(parents=True)
    paths = []
    for i in range(2):
        p = folder / f"part-{i}.jsonl"
        p.write_text("".join(json.dumps(d) + "\n" for d in docs[i::2]), encoding="utf-8")
        paths.append(p)
    return paths


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted((folder / "data").rglob("*"))
        if p.is_file()
    }


def test_filter_output_and_annotations_identical_at_batch_size_1_and_64(shared_dir: Path, tmp_path: Path):
    shards = _real_shards(shared_dir, tmp_path / "in")
    runs = {}
    for bs in (1, 64):
        out = tmp_path / f"out-bs{bs}"
        args = ["filter", *map(str, shards), "-o", str(out), "--annotate", "--batch-size", str(bs)]
        assert main([*args, "--no-progress", "--no-report", "--cap", "0.01", "--warmup", "0"]) == 0
        runs[bs] = out
    a, b = _files(runs[1]), _files(runs[64])
    assert a.keys() == b.keys() and a  # same files, and some were written
    for name in a:
        assert a[name] == b[name], f"{name} differs between --batch-size 1 and 64"
    s1 = json.loads((runs[1] / "stats.json").read_text())
    s64 = json.loads((runs[64] / "stats.json").read_text())
    assert s1["attributes"] == s64["attributes"]
    assert sum(c["person_sentences"] for c in s1["attributes"].values()) > 10  # the model had work


def test_auditing_the_output_with_cap_1_finds_what_the_run_reported_as_kept(shared_dir: Path, tmp_path: Path):
    # real web text has few negative person sentences in a test-sized slice, so the project's own
    # sample corpus (written with all three regards) rides along to make the cap drop sentences
    sample = Path(__file__).resolve().parent.parent / "fairstream" / "data" / "sample_corpus.jsonl"
    shards = [*_real_shards(shared_dir, tmp_path / "in", n_docs=120), sample]
    first, audit = tmp_path / "first", tmp_path / "audit"
    common = ["--no-progress", "--no-report", "--batch-size", "8"]
    assert (
        main(["filter", *map(str, shards), "-o", str(first), "--cap", "0.01", "--warmup", "0", *common]) == 0
    )
    kept_files = sorted((first / "data").rglob("*.jsonl*"))
    assert len(kept_files) == 3
    assert main(["filter", *map(str, kept_files), "-o", str(audit), "--cap", "1", *common]) == 0
    reported = json.loads((first / "stats.json").read_text())["attributes"]
    found = json.loads((audit / "stats.json").read_text())["attributes"]
    assert sum(c["dropped"] for c in reported.values()) > 0  # the first run did drop sentences
    for kw, c in reported.items():
        after = c["after"]
        seen = found.get(kw, {"before": dict.fromkeys(after, 0)})["before"]
        assert seen == after, f"{kw}: first run kept {after}, the audit of its output found {seen}"
