"""Distillation (export/distill.py, export.train --soft-labels) on a tiny random BERT built here (CPU)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from export import distill
from export import train as train_module
from export.config import TrainConfig
from export.distill import attach_soft_labels, distillation_loss, load_pool, load_soft_labels, pair_key
from export.losses import distilled_loss, gold_loss
from export.train import fit, predict, warn_if_bf16_is_emulated
from fairstream.errors import FairStreamError
from fairstream.models.labels import load_labelled_pairs
from tests.test_train_sweep import tiny_encoder, write_pairs  # noqa: F401  (fixture)


def train_tiny_run(encoder: Path, pairs, hp: TrainConfig, run: Path):
    """Train on ``pairs`` and save an ``export.train``-style run folder; returns the model and tokenizer."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(encoder, use_fast=True)
    backend = tok.backend_tokenizer
    backend.no_truncation()
    backend.no_padding()
    model, _ = fit(str(encoder), backend, pairs, hp, quiet=True)
    run.mkdir(parents=True)
    torch.save(model.state_dict(), run / "model.pt")
    tok.save_pretrained(run / "tokenizer")
    model.encoder.config.save_pretrained(run / "encoder_config")
    (run / "train_meta.json").write_text(json.dumps({"max_length": hp.max_length, "encoder": str(encoder)}))
    return model, backend


def test_distillation_loss_is_zero_only_when_student_matches_teacher():
    teacher = torch.tensor([[2.0, 0.0, -1.0], [0.0, 0.0, 3.0]])
    assert torch.allclose(distillation_loss(teacher.clone(), teacher, 2.0), torch.zeros(2), atol=1e-6)
    other = torch.tensor([[0.0, 2.0, -1.0], [3.0, 0.0, 0.0]])
    assert (distillation_loss(other, teacher, 2.0) > 0.1).all()
    # the T^2 factor keeps the loss of a fixed gap from vanishing at high temperature
    assert distillation_loss(other, teacher, 4.0).sum() > 0.5 * distillation_loss(other, teacher, 1.0).sum()


@pytest.fixture()
def gold_pairs(tmp_path: Path):
    write_pairs(tmp_path / "pool.jsonl", "p", ["corpus-a"])
    return load_labelled_pairs(tmp_path / "pool.jsonl")


def test_distill_weight_zero_is_exactly_the_gold_recipe(gold_pairs):
    torch.manual_seed(0)
    w, r = torch.randn(len(gold_pairs), 3), torch.randn(len(gold_pairs), 3)
    soft_of = {
        id(p): (np.random.randn(3).astype(np.float32), np.random.randn(3).astype(np.float32))
        for p in gold_pairs
    }
    reg_w = torch.tensor([1.6, 0.6, 1.6])
    hp = TrainConfig(distill_weight=0.0)
    assert torch.allclose(
        distilled_loss(w, r, gold_pairs, soft_of, reg_w, hp), gold_loss(w, r, gold_pairs, reg_w, hp)
    )
    # with weight on the teacher, the loss changes
    hp_half = TrainConfig(distill_weight=0.5)
    assert not torch.allclose(
        distilled_loss(w, r, gold_pairs, soft_of, reg_w, hp_half), gold_loss(w, r, gold_pairs, reg_w, hp)
    )


def test_pool_pairs_without_gold_learn_regard_weighted_by_the_teachers_person_probability(gold_pairs):
    pool = [p.__class__(p.uid, p.mention, p.attribute_class, "", None, "pool") for p in gold_pairs[:2]]
    r = torch.zeros(2, 3, requires_grad=True)
    not_person = np.array([5.0, -5.0, 0.0], np.float32)  # teacher: "no" sense
    person = np.array([-5.0, 5.0, 0.0], np.float32)
    regard = np.array([4.0, 0.0, 0.0], np.float32)
    soft_of = {id(pool[0]): (not_person, regard), id(pool[1]): (person, regard)}
    loss = distilled_loss(torch.zeros(2, 3), r, pool, soft_of, torch.ones(3), TrainConfig())
    loss.backward()
    assert r.grad is not None
    # the non-person mention barely pulls on the regard head; the person mention does
    assert r.grad[0].abs().sum() < 0.01 * r.grad[1].abs().sum()


def test_soft_labels_attach_only_where_uid_and_text_match(tmp_path, gold_pairs):
    path = tmp_path / "soft.jsonl"
    recs = [
        {
            "uid": gold_pairs[0].uid,
            "text_sha1": pair_key(gold_pairs[0]),
            "wsd_logits": [1, 2, 3],
            "regard_logits": [3, 2, 1],
        },
        {"uid": gold_pairs[1].uid, "text_sha1": "stale", "wsd_logits": [1, 2, 3], "regard_logits": [3, 2, 1]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    attached = attach_soft_labels(gold_pairs, load_soft_labels(path))
    assert list(attached) == [0]
    np.testing.assert_allclose(attached[0][1], [3, 2, 1])
    path.write_text('{"uid": "x", "text_sha1": "y", "wsd_logits": [1, 2], "regard_logits": [1, 2, 3]}\n')
    with pytest.raises(FairStreamError, match="3 values"):
        load_soft_labels(path)


def test_several_soft_label_files_read_as_their_concatenation(tmp_path, gold_pairs):
    def write(path, recs):
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        return path

    def rec(pair, wsd):
        return {"uid": pair.uid, "text_sha1": pair_key(pair), "wsd_logits": wsd, "regard_logits": [0, 0, 0]}

    first = write(tmp_path / "a.jsonl", [rec(gold_pairs[0], [1, 0, 0]), rec(gold_pairs[1], [1, 0, 0])])
    later = [rec(gold_pairs[1], [0, 1, 0]), rec(gold_pairs[2], [0, 0, 1])]
    gz = tmp_path / "b.jsonl.gz"
    gz.write_bytes(gzip.compress(write(tmp_path / "b.jsonl", later).read_bytes()))
    both = write(
        tmp_path / "both.jsonl", [rec(gold_pairs[0], [1, 0, 0]), rec(gold_pairs[1], [1, 0, 0]), *later]
    )
    merged = load_soft_labels([first, gz])
    assert merged.keys() == load_soft_labels(both).keys() and len(merged) == 3
    for key, (wsd, _) in load_soft_labels(both).items():
        np.testing.assert_array_equal(merged[key][0], wsd)
    # the later file's logits for the pair both files hold
    np.testing.assert_array_equal(merged[(gold_pairs[1].uid, pair_key(gold_pairs[1]))][0], [0, 1, 0])
    with pytest.raises(FairStreamError, match=r"missing\.jsonl: soft-label file not found"):
        load_soft_labels([first, tmp_path / "missing.jsonl"])


def test_pool_offsets_resolve_against_the_sentence_or_the_document(tmp_path):
    pool = tmp_path / "cands.jsonl"
    text = "Two Muslim students won the prize."
    pool.write_text(
        json.dumps({"uid": "a", "text": text, "kw_start": 4, "kw_end": 10, "keyword": "muslim", "gloss": "g"}) + "\n"
        + json.dumps({"uid": "b", "text": text, "sent_start": 100, "kw_start": 104, "kw_end": 110, "keyword": "muslim", "gloss": "g"}) + "\n"
    )  # fmt: skip
    pairs = load_pool(pool)
    assert [p.mention.text[p.mention.start : p.mention.end] for p in pairs] == ["Muslim", "Muslim"]
    assert all(p.wsd == "" and p.regard is None for p in pairs)
    pool.write_text(
        json.dumps({"uid": "c", "text": "short", "kw_start": 3, "kw_end": 40, "keyword": "k", "gloss": "g"})
        + "\n"
    )
    with pytest.raises(FairStreamError, match="outside the text"):
        load_pool(pool)


def test_teacher_labels_a_pool_and_a_student_learns_them(monkeypatch, tmp_path, tiny_encoder, gold_pairs):  # noqa: F811
    """Real teacher run folder -> export.distill CLI -> student trained on the teacher's labels only."""
    hp = TrainConfig(epochs=30, lr=1e-3, batch_size=4, max_length=48, seed=3)
    run = tmp_path / "teacher"
    teacher, backend = train_tiny_run(tiny_encoder, gold_pairs, hp, run)

    pool = tmp_path / "pool.jsonl"
    with pool.open("w") as f:
        for p in gold_pairs:
            m = p.mention
            f.write(json.dumps({"uid": "u-" + p.uid, "text": m.text, "kw_start": m.start, "kw_end": m.end,
                                "keyword": m.keyword, "gloss": m.gloss}) + "\n")  # fmt: skip
    soft_path = tmp_path / "soft.jsonl"
    argv = [
        "distill",
        "--teacher",
        str(run),
        "--out",
        str(soft_path),
        "--pool",
        str(pool),
        "--no-training-set",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    distill.main()
    soft = load_soft_labels(soft_path)
    unlabelled = load_pool(pool)
    assert len(soft) == len(unlabelled) == len(gold_pairs)

    attached = attach_soft_labels(unlabelled, soft)
    assert len(attached) == len(unlabelled)
    student, _ = fit(
        str(tiny_encoder),
        backend,
        unlabelled,
        TrainConfig(**{**hp.to_dict(), "seed": 9}),
        quiet=True,
        soft=attached,
    )
    t_wsd, _ = predict(teacher, backend, gold_pairs, 48)
    s_wsd, _ = predict(student, backend, unlabelled, 48)
    # no gold label was seen by the student: its senses follow the teacher's
    assert (t_wsd.argmax(1) == s_wsd.argmax(1)).mean() >= 0.9


def test_bf16_training_learns_as_fp32_does_and_keeps_fp32_weights(tmp_path, tiny_encoder, gold_pairs):  # noqa: F811
    """``--precision bf16`` (autocast) is a faster way to the same model: fp32 master weights, same decisions."""
    hp = TrainConfig(epochs=30, lr=1e-3, batch_size=4, max_length=48, seed=3)
    fp32, backend = train_tiny_run(tiny_encoder, gold_pairs, hp, tmp_path / "fp32")
    bf16, _ = train_tiny_run(tiny_encoder, gold_pairs, TrainConfig(**{**hp.to_dict(), "precision": "bf16"}),
                             tmp_path / "bf16")  # fmt: skip
    assert all(p.dtype == torch.float32 for p in bf16.parameters())
    # the bf16 forward really ran: same seed and batches, yet not the same weights
    assert any(not torch.equal(a, b) for a, b in zip(fp32.parameters(), bf16.parameters(), strict=True))
    gold = np.array([p.wsd == "yes" for p in gold_pairs])
    (w32, r32), (w16, r16) = (predict(m, backend, gold_pairs, 48) for m in (fp32, bf16))
    assert ((w16[:, 1] >= 0.5) == gold).mean() >= 0.9  # it learned the training labels
    assert ((w32[:, 1] >= 0.5) == (w16[:, 1] >= 0.5)).mean() >= 0.9
    assert (r32.argmax(1) == r16.argmax(1)).mean() >= 0.8
    with pytest.raises(ValueError, match=r"^precision='fp16' is not allowed \(.*fp32, or bf16"):
        TrainConfig(precision="fp16")


def test_bf16_on_a_cpu_without_fast_bf16_kernels_warns(monkeypatch, caplog):
    """An emulated bf16 step took 133 s against fp32's 5 s (session 27): the user hears it before the first step."""
    caplog.set_level("WARNING", logger="export.train")
    real = train_module.cpu_has_fast_bf16()
    assert warn_if_bf16_is_emulated("bf16", "cpu") is (not real)  # this machine, as PyTorch sees it
    caplog.clear()
    monkeypatch.setattr(train_module, "cpu_has_fast_bf16", lambda: False)
    assert warn_if_bf16_is_emulated("bf16", "cpu") is True
    assert "use --precision fp32" in caplog.text and "AVX-512 or AMX" in caplog.text
    caplog.clear()
    for precision, device in (("fp32", "cpu"), ("bf16", "cuda")):  # nothing emulated to warn of
        assert warn_if_bf16_is_emulated(precision, device) is False
    monkeypatch.setattr(train_module, "cpu_has_fast_bf16", lambda: True)
    assert warn_if_bf16_is_emulated("bf16", "cpu") is False
    assert caplog.text == ""
