"""Resumable training (export/checkpoint.py): an interrupted ``export.train`` run goes on where it stopped.

Real training code on a tiny random BERT built here (CPU); the interruption is a KeyboardInterrupt raised
from the progress bar after a given number of steps, as Ctrl-C or a killed session would leave it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from tqdm import tqdm

import export.train as train_mod
from export.checkpoint import PROGRESS_FILE, WEIGHTS_FILE
from export.config import TrainConfig
from fairstream.errors import FairStreamError
from fairstream.models.labels import load_labelled_pairs
from tests.test_train_sweep import tiny_encoder, write_pairs  # noqa: F401  (fixture)

# 12 pairs in batches of 4: 3 steps per epoch, 12 steps; checkpoints at steps 5 and 10
HP = TrainConfig(epochs=4, lr=1e-3, batch_size=4, max_length=48, seed=5, dropout=0.1)


class InterruptedBar(tqdm):
    """A progress bar that raises KeyboardInterrupt once training has made ``stop_at`` steps."""

    stop_at = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # counted here: a disabled (quiet) bar keeps no count of its own
        self.steps_seen = kwargs.get("initial", 0)

    def update(self, n=1):
        super().update(n)
        self.steps_seen += n
        if self.steps_seen >= self.stop_at:
            raise KeyboardInterrupt


@pytest.fixture()
def pairs(tmp_path: Path):
    write_pairs(tmp_path / "pairs.jsonl", "p", ["corpus-a"])
    return load_labelled_pairs(tmp_path / "pairs.jsonl")


def backend_of(encoder: Path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(encoder, use_fast=True).backend_tokenizer
    tok.no_truncation()
    tok.no_padding()
    return tok


def interrupt_after(monkeypatch, steps: int) -> None:
    bar = type("Bar", (InterruptedBar,), {"stop_at": steps})
    monkeypatch.setattr(train_mod, "tqdm", bar)


def test_interrupted_fit_resumes_to_the_uninterrupted_weights(monkeypatch, tmp_path, tiny_encoder, pairs):  # noqa: F811
    torch.set_num_threads(1)
    backend = backend_of(tiny_encoder)
    whole, total = train_mod.fit(str(tiny_encoder), backend, pairs, HP, quiet=True)
    assert total == 12

    run = tmp_path / "run"
    interrupt_after(monkeypatch, 8)  # in epoch 3, after the checkpoint at step 5 (mid epoch 2)
    with pytest.raises(KeyboardInterrupt):
        train_mod.fit(str(tiny_encoder), backend, pairs, HP, quiet=True, checkpoint=run, checkpoint_every=5)
    progress = json.loads((run / PROGRESS_FILE).read_text())
    assert progress["step"] == 5 and progress["total_steps"] == 12

    monkeypatch.undo()
    resumed, _ = train_mod.fit(
        str(tiny_encoder), backend, pairs, HP, quiet=True, checkpoint=run, checkpoint_every=5
    )
    expected, got = whole.state_dict(), resumed.state_dict()
    assert expected.keys() == got.keys()
    assert all(torch.equal(expected[k], got[k]) for k in expected), "resumed weights differ"


def test_checkpoint_of_another_recipe_is_refused_by_name(monkeypatch, tmp_path, tiny_encoder, pairs):  # noqa: F811
    backend = backend_of(tiny_encoder)
    run = tmp_path / "run"
    interrupt_after(monkeypatch, 6)
    with pytest.raises(KeyboardInterrupt):
        train_mod.fit(str(tiny_encoder), backend, pairs, HP, quiet=True, checkpoint=run, checkpoint_every=5)
    monkeypatch.undo()
    other = TrainConfig(**{**HP.to_dict(), "lr": 2e-3})
    with pytest.raises(FairStreamError, match=r"checkpoint\.pt is a checkpoint of a different training run"):
        train_mod.fit(
            str(tiny_encoder), backend, pairs, other, quiet=True, checkpoint=run, checkpoint_every=5
        )
    with pytest.raises(FairStreamError, match="different training run"):
        train_mod.fit(
            str(tiny_encoder), backend, pairs[:-1], HP, quiet=True, checkpoint=run, checkpoint_every=5
        )


def test_cli_rerun_resumes_records_it_and_removes_the_checkpoint(monkeypatch, tmp_path, tiny_encoder, pairs):  # noqa: F811
    pairs_file = tmp_path / "pairs.jsonl"

    def run_cli(out: Path, *extra: str) -> None:
        argv = ["export.train", "--encoder", str(tiny_encoder), "--out", str(out), "--pairs", str(pairs_file),
                "--epochs", "4", "--lr", "1e-3", "--batch-size", "4", "--max-length", "48", "--seed", "5",
                "--threads", "1", *extra]  # fmt: skip
        monkeypatch.setattr(sys, "argv", argv)
        train_mod.main()

    run_cli(tmp_path / "whole", "--checkpoint-every", "0")
    interrupt_after(monkeypatch, 11)
    with pytest.raises(KeyboardInterrupt):
        run_cli(tmp_path / "resumed", "--checkpoint-every", "5")
    assert (tmp_path / "resumed" / WEIGHTS_FILE).is_file() and not (
        tmp_path / "resumed" / "model.pt"
    ).exists()
    monkeypatch.setattr(train_mod, "tqdm", tqdm)
    run_cli(tmp_path / "resumed", "--checkpoint-every", "5")

    meta = json.loads((tmp_path / "resumed" / "train_meta.json").read_text())
    assert meta["resumed_from_step"] == 10
    assert json.loads((tmp_path / "whole" / "train_meta.json").read_text())["resumed_from_step"] is None
    assert (
        not (tmp_path / "resumed" / WEIGHTS_FILE).exists()
        and not (tmp_path / "resumed" / PROGRESS_FILE).exists()
    )
    whole = torch.load(tmp_path / "whole" / "model.pt", weights_only=True)
    resumed = torch.load(tmp_path / "resumed" / "model.pt", weights_only=True)
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)

    with pytest.raises(SystemExit):
        run_cli(tmp_path / "bad", "--checkpoint-every", "-1")
