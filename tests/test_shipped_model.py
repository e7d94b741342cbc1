"""Tests of the shipped models (real weights) on the project's own labelled sample corpus."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fairstream.core.schema import REGARD_LABELS
from fairstream.models.encoding import MentionInput
from fairstream.models.metrics import cohen_kappa, f1_scores
from fairstream.models.runtime import JointModel, default_model_dir, shipped_model_names


def test_shipped_files_are_small_and_complete():
    names = {
        json.loads((default_model_dir(n) / "config.json").read_text())["name"] for n in shipped_model_names()
    }
    # the default (joint-v6-cascade: joint-v7-fast decides what it is sure of, joint-v6 the rest) and
    # its two members, each usable alone; the earlier models left the package in 0.2.0
    assert names == {"fairstream-joint-v6-cascade", "fairstream-joint-v7-fast", "fairstream-joint-v6"}
    assert (
        json.loads((default_model_dir() / "config.json").read_text())["name"] == "fairstream-joint-v6-cascade"
    )
    for model in shipped_model_names():
        folder = default_model_dir(model)
        cfg = json.loads((folder / "config.json").read_text())
        assert (folder / "MODEL_CARD.md").is_file()
        if "cascade" in cfg:  # no graph of its own: two shipped models
            assert {cfg["cascade"]["fast"], cfg["cascade"]["full"]} <= set(shipped_model_names())
            assert JointModel(model).batch_invariant
            continue
        assert cfg["batch_invariant"] is True
        for name in (*cfg["onnx"].values(), "tokenizer.json"):
            size = (folder / name).stat().st_size
            assert 0 < size < 30e6, (name, size)


def layers(name: str) -> int:
    """Encoder layers of a shipped int8 graph, counted from its integer matmuls."""
    import onnx

    graph = onnx.load(str(default_model_dir(name) / "model.int8.onnx"), load_external_data=False).graph
    matmuls = sum(1 for n in graph.node if n.op_type == "MatMulIntegerToFloat")
    return (matmuls - 2) // 6  # Q, K, V, attention output, two feed-forward per layer; two heads


def test_a_retired_model_name_is_one_line_naming_the_release_that_dropped_it(tmp_path, capsys):
    from fairstream.cli import main
    from fairstream.errors import ModelError

    shard = tmp_path / "x.jsonl"
    shard.write_text('{"text": "The Muslim man helped his neighbours carry their bags home."}\n')
    assert main(["filter", str(shard), "--model", "joint-v5", "-o", str(tmp_path / "o")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("fairstream:")]
    assert len(err) == 1 and "'joint-v5' was retired from the package in fairstream 0.2.0" in err[0]
    assert "joint-v6-cascade (default)" in err[0]
    with pytest.raises(ModelError, match=r"'joint-v4-fast' was retired"):
        JointModel("joint-v4-fast")


def test_joint_v7_fast_is_joint_v6s_recipe_on_fewer_layers_with_round_16_and_teacher_r16():
    fast = json.loads((default_model_dir("joint-v7-fast") / "config.json").read_text())["training"]
    full = json.loads((default_model_dir("joint-v6") / "config.json").read_text())["training"]
    assert fast["encoder_layers"] == 3 and layers("joint-v7-fast") * 2 == layers("joint-v6")
    # export/EXPERIMENTS.md session 17, rule (c): round 16's labels and teacher-r16's logits, nothing else
    assert fast["soft_labels"] == "labels/soft/teacher-mpnet-r16-s17.jsonl.gz"
    added = set(fast["train_sources"]) - set(full["train_sources"])
    assert added and all(s.startswith("r16-") for s in added)
    assert all(fast["train_sources"][s] == n for s, n in full["train_sources"].items())
    assert fast["n_train"] == full["n_train"] + sum(fast["train_sources"][s] for s in added)
    same = ("epochs", "lr", "batch_size", "seed", "include_dev", "regard_weight", "distill_pool")
    same += ("distill_weight", "temperature")
    assert {k: fast[k] for k in same} == {k: full[k] for k in same}


def test_inference_path_imports_no_torch_or_transformers():
    code = (
        "import sys; from fairstream.models.runtime import JointModel; from fairstream.models.encoding import MentionInput;"
        "t='The Muslim family opened a bakery that the whole town loves.';"
        "p=JointModel().predict([MentionInput(t, 4, 10, 'muslim', 'who believes in Islam')]);"
        "print(p[0].person, 'torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[1:] == ["False", "False"]


@pytest.fixture(scope="module")
def sample_predictions():
    # the same pairs the model card's sample-corpus table is scored on
    from export.tools.sample_labels_as_pairs import sample_pairs

    gold = sample_pairs()
    items = [MentionInput(r["text"], r["kw_start"], r["kw_end"], r["keyword"], r["gloss"]) for r in gold]
    return gold, JointModel().predict(items)


def test_shipped_model_agrees_with_sample_labels(sample_predictions):
    gold, preds = sample_predictions
    assert len(gold) > 300
    g = ["yes" if r["wsd"] == "yes" else "not" for r in gold]
    p = ["yes" if x.person else "not" for x in preds]
    kappa = cohen_kappa(g, p)
    yes = [i for i, r in enumerate(gold) if r["wsd"] == "yes"]
    reg_gold = [gold[i]["regard"] for i in yes]
    reg_pred = [REGARD_LABELS[max(range(3), key=lambda k: preds[i].regard_probs[k])] for i in yes]
    macro = f1_scores(reg_gold, reg_pred, list(REGARD_LABELS))["macro"]
    # floors well above chance (an untrained model scores near 0 kappa / 0.3 macro-F1); on this text no
    # model trained on, joint-v5 measured kappa 0.90 / macro-F1 0.86 (int8), joint-v4 0.90 / 0.88,
    # joint-v3 0.92 / 0.88, joint-v2.1 0.91 / 0.86
    assert kappa >= 0.7, kappa
    assert macro >= 0.7, macro
