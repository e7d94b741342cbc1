"""The regard decision rule: config offsets, both backends, and the cross-validated choice (export.decision_rule)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from export.decision_rule import (
    analyse_run,
    cross_validate,
    cv_folds,
    fit_offsets,
    macro_f1_grid,
    main,
    offset_grid,
)
from fairstream.core.schema import REGARD_LABELS
from fairstream.errors import ModelError
from fairstream.eval import score
from fairstream.models.decision import parse_regard_offsets, regard_decisions, regard_index
from fairstream.models.encoding import MentionInput
from fairstream.models.labels import LabelledPair
from fairstream.models.runtime import JointModel, default_model_dir

NEG, NEU, POS = REGARD_LABELS


def pair(i: int, regard: str | None, wsd: str = "yes") -> LabelledPair:
    text = f"The Muslim neighbours number {i} came to the meeting."
    return LabelledPair(
        f"u{i}", MentionInput(text, 4, 10, "muslim", "who believes in Islam"), "religion", wsd, regard
    )


# -- the rule ------------------------------------------------------------------------------------------
def test_zero_offsets_are_the_argmax_and_offsets_shift_log_probabilities():
    p = np.array([[0.3, 0.5, 0.2], [0.1, 0.2, 0.7], [0.45, 0.45, 0.1]])
    assert regard_decisions(p) == [NEU, POS, NEG]  # tie: first class, as np.argmax
    assert [regard_index(row) for row in p] == [1, 2, 0]
    # +0.6 on negative: log 0.3 + 0.6 > log 0.5 (gap 0.51); not enough for row 2 (gap log 7 = 1.95)
    assert regard_decisions(p, (0.6, 0.0, 0.0)) == [NEG, POS, NEG]
    assert regard_decisions(p, (0.4, 0.0, 0.0)) == [NEU, POS, NEG]
    assert regard_decisions(p, (0.0, 0.0, -1.5)) == [NEU, NEU, NEG]
    assert [regard_index(row, (0.6, 0.0, 0.0)) for row in p] == [0, 2, 0]
    # a probability of 0 (float32 underflow) never wins, whatever the offset
    assert regard_index((0.0, 1.0, 0.0), (2.0, 0.0, 2.0)) == 1


@pytest.mark.parametrize(
    "value",
    ["0.5", [0.1, 0.2], [0.1, 0.2, 0.3, 0.4], [0.1, float("nan"), 0.0], [float("inf"), 0, 0], [True, 0, 0],
     [0, "1", 0], {"negative": 1}],
)  # fmt: skip
def test_bad_offsets_in_config_name_the_key_and_the_file(tmp_path: Path, value):
    model = tmp_path / "m"
    model.mkdir()
    cfg = {"name": "x", "onnx": {"int8": "model.int8.onnx"}, "regard_logit_offsets": value}
    (model / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelError) as err:
        JointModel(model)
    msg = str(err.value)
    assert "regard_logit_offsets" in msg and str(model / "config.json") in msg and "3 finite numbers" in msg


def test_good_and_absent_offsets(tmp_path: Path):
    model = tmp_path / "m"
    model.mkdir()
    cfg = {"name": "x", "onnx": {"int8": "model.int8.onnx"}}
    (model / "config.json").write_text(json.dumps(cfg))
    assert JointModel(model).regard_offsets == (0.0, 0.0, 0.0)
    (model / "config.json").write_text(json.dumps({**cfg, "regard_logit_offsets": [-0.5, 0, 1]}))
    assert JointModel(model).regard_offsets == (-0.5, 0.0, 1.0)
    assert parse_regard_offsets(None, "x") == (0.0, 0.0, 0.0)


def test_export_flag_writes_checked_offsets(tmp_path: Path, monkeypatch):
    import export.export_onnx as ex

    with pytest.raises(ModelError, match=r"--regard-offsets.*regard_logit_offsets"):
        ex.export_model(tmp_path, tmp_path / "out", name="x", regard_offsets=[0.0, float("nan"), 0.0])
    monkeypatch.setattr(
        "sys.argv", ["export_onnx", "--run", "r", "--out", "o", "--regard-offsets", "1", "inf", "0"]
    )
    with pytest.raises(SystemExit) as err:
        ex.main()
    assert err.value.code == 2


# -- both backends decide alike ---------------------------------------------------------------------------
def test_both_backends_apply_the_offsets_through_the_same_rule(monkeypatch):
    from fairstream.models.torch_backend import predictions_from_logits

    rng = np.random.default_rng(0)
    wsd = rng.normal(size=(200, 3)).astype(np.float32) * 3
    reg = rng.normal(size=(200, 3)).astype(np.float32) * 2
    offsets = (0.7, 0.0, -0.4)
    model = JointModel(default_model_dir("joint-v6"))  # one graph: the cascade's full model
    model.regard_offsets = offsets
    monkeypatch.setattr(JointModel, "predict_logits", lambda self, items: (wsd, reg))
    onnx_preds = model.predict([None] * 200)  # type: ignore[list-item]
    torch_preds = predictions_from_logits(wsd, reg, model.wsd_threshold, offsets)
    plain = predictions_from_logits(wsd, reg, model.wsd_threshold)
    assert [p.regard for p in onnx_preds] == [p.regard for p in torch_preds]
    person = [i for i, p in enumerate(torch_preds) if p.person]
    assert len(person) > 20
    # the offsets move decisions, not the reported probabilities
    assert sum(torch_preds[i].regard != plain[i].regard for i in person) > 5
    assert [p.regard_probs for p in torch_preds] == [p.regard_probs for p in plain]
    for i in person:
        shifted = np.log(np.asarray(torch_preds[i].regard_probs)) + offsets
        assert torch_preds[i].regard == REGARD_LABELS[int(shifted.argmax())]


SENTENCES = [
    ("The Muslim volunteers were thanked by the whole town for their kindness and hard work.", "muslim"),
    ("Those Mexican thugs are criminals who ruin every street they move into.", "mexican"),
    ("The Black council members met on Tuesday to discuss the school budget.", "black"),
    ("Poor families often spend half of their income on rent in this city.", "poor"),
    ("The blind man lied to everyone and stole the money from the church.", "blind"),
    ("Gay couples in the village organised a lovely summer fair for the children.", "gay"),
    ("Many Asian students said the new library was too small for the exams.", "asian"),
    ("Old people are a burden and should stop complaining about everything.", "old"),
]


def _model_copy(tmp_path: Path, offsets: list[float] | None) -> Path:
    src = default_model_dir("joint-v6")  # one graph: the default cascade's full model
    dst = tmp_path / ("offsets" if offsets else "plain")
    dst.mkdir()
    for name in ("model.int8.onnx", "tokenizer.json"):
        (dst / name).symlink_to(src / name)
    cfg = json.loads((src / "config.json").read_text())
    if offsets is not None:
        cfg["regard_logit_offsets"] = offsets
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def test_offsets_change_decisions_of_the_shipped_model_in_both_backends(tmp_path: Path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("onnx")
    from fairstream.models.torch_backend import TorchJointModel

    items = []
    for text, kw in SENTENCES:
        i = text.lower().index(kw)
        items.append(MentionInput(text, i, i + len(kw), kw, f"gloss of {kw}"))
    plain_dir = _model_copy(tmp_path, None)
    plain = JointModel(plain_dir, intra_op_threads=1).predict(items)
    probs = np.array([p.regard_probs for p in plain])
    # a negative offset just past the smallest log-gap of a mention not decided negative: it flips
    gaps = [math.log(r.max() / r[0]) for r in probs if r.argmax() != 0]
    assert gaps, "the shipped model decided every test mention negative"
    offsets = [round(min(gaps) + 0.05, 4), 0.0, -0.3]
    shifted_dir = _model_copy(tmp_path, offsets)
    backends = {
        "onnx": (plain, JointModel(shifted_dir, intra_op_threads=1).predict(items)),
        "torch": (
            TorchJointModel(plain_dir, device="cpu", threads=1).predict(items),
            TorchJointModel(shifted_dir, device="cpu", threads=1).predict(items),
        ),
    }
    decided = {}
    for name, (before, after) in backends.items():
        assert [p.regard_probs for p in before] == [p.regard_probs for p in after], name  # probs untouched
        assert [p.person for p in before] == [p.person for p in after], name
        for p in after:
            expected = REGARD_LABELS[regard_index(p.regard_probs, offsets)]
            assert p.regard == (expected if p.person else None), name
        decided[name] = [REGARD_LABELS[regard_index(p.regard_probs, offsets)] for p in after]
        before_all = [REGARD_LABELS[regard_index(p.regard_probs)] for p in before]
        assert decided[name] != before_all, name  # the offsets moved at least one decision
    # the two backends run the same weights (int8 vs fp32 activations): same decisions where not a near-tie
    for i, p in enumerate(backends["torch"][1]):
        scores = np.sort(np.log(np.asarray(p.regard_probs)) + offsets)
        if scores[-1] - scores[-2] > 0.1:
            assert decided["onnx"][i] == decided["torch"][i], SENTENCES[i]


# -- choosing the offsets by cross-validation ---------------------------------------------------------------
def test_grid_is_ordered_nearest_zero_and_fixes_neutral():
    grid = offset_grid(2.0, 0.1)
    assert grid.shape == (41 * 41, 3) and (grid[:, 1] == 0).all()
    assert tuple(grid[0]) == (0.0, 0.0, 0.0)
    assert grid[:, 0].min() == -2.0 and grid[:, 2].max() == 2.0 and 0.3 in grid[:, 0]
    l1 = np.abs(grid[:, 0]) + np.abs(grid[:, 2])
    assert (np.diff(l1) >= -1e-9).all()


def test_grid_with_one_free_offset_keeps_the_other_at_zero():
    neg_only = offset_grid(2.0, 0.1, free=["negative"])
    assert neg_only.shape == (41, 3) and (neg_only[:, 1:] == 0).all() and tuple(neg_only[0]) == (0, 0, 0)
    assert set(neg_only[:, 0].tolist()) == set(offset_grid(2.0, 0.1)[:, 0].tolist())
    pos_only = offset_grid(1.0, 0.5, free=["positive"])
    assert (pos_only[:, :2] == 0).all() and sorted(pos_only[:, 2].tolist()) == [-1.0, -0.5, 0.0, 0.5, 1.0]
    for bad in ([], ["neutral"]):
        with pytest.raises(ValueError, match="negative, positive"):
            offset_grid(free=bad)


def test_vectorized_macro_f1_is_the_project_score():
    rng = np.random.default_rng(1)
    labels = [NEG, NEU, POS]
    for trial in range(20):
        n = int(rng.integers(1, 40))
        probs = rng.dirichlet([1, 3, 1], size=n)
        gold = rng.choice(3, size=n, p=[0.2, 0.6, 0.2])
        grid = offset_grid(1.0, 0.5)
        got = macro_f1_grid(probs, gold, grid)
        pairs = [pair(i, labels[g]) for i, g in enumerate(gold)]
        for g, offsets in enumerate(grid):
            want = score(pairs, ["yes"] * n, regard_decisions(probs, offsets))["regard_macro_f1"]
            assert got[g] == pytest.approx(want, abs=1e-12), (trial, offsets)


def test_ties_go_to_the_offsets_nearest_zero():
    # argmax is already perfect: every small offset ties with 0, and 0 is chosen
    probs = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    offsets, best = fit_offsets(probs, np.array([0, 1, 2]), offset_grid())
    assert offsets == (0.0, 0.0, 0.0) and best == 1.0


def test_cv_never_uses_the_held_out_fold_to_choose_its_offsets():
    # fold A: negatives the model puts just under neutral (log-gap 0.25), clear neutrals;
    # fold B: clear negatives, neutrals just under... a +0.3 negative offset would turn B's neutrals negative.
    # Alone, A wants a +0.3 negative offset and B wants none; pooled (12 vs 10 negatives) they want A's.
    a_items = [pair(i, NEG) for i in range(12)] + [pair(100 + i, NEU) for i in range(10)]
    a_probs = [[0.35, 0.45, 0.20]] * 12 + [[0.05, 0.90, 0.05]] * 10
    b_items = [pair(200 + i, NEU) for i in range(10)] + [pair(300 + i, NEG) for i in range(10)]
    b_probs = [[0.40, 0.50, 0.10]] * 10 + [[0.70, 0.20, 0.10]] * 10
    pairs = a_items + b_items
    probs = np.array(a_probs + b_probs)
    gold = np.array([REGARD_LABELS.index(p.regard or "") for p in pairs])
    folds = np.array([0] * len(a_items) + [1] * len(b_items))
    grid = offset_grid()
    fit_a, _ = fit_offsets(probs[folds == 0], gold[folds == 0], grid)
    fit_b, _ = fit_offsets(probs[folds == 1], gold[folds == 1], grid)
    leaky, _ = fit_offsets(probs, gold, grid)
    assert (
        fit_b == (0.0, 0.0, 0.0) and fit_a[0] == pytest.approx(0.3) and leaky == fit_a
    )  # the case exposes a leak
    decisions, per_fold = cross_validate(probs, pairs, folds, grid)
    # fold A is decided with B's offsets (none): its negatives stay neutral; a leak would have fixed them
    assert per_fold == [fit_b, fit_a]
    assert decisions[:12] == [NEU] * 12
    assert decisions[: len(a_items)] == regard_decisions(probs[folds == 0], fit_b)
    assert decisions[len(a_items) :] == regard_decisions(probs[folds == 1], fit_a)


def test_cv_ignores_what_is_in_the_held_out_fold(monkeypatch):
    # whatever the held-out fold's gold labels are, its decisions do not change
    rng = np.random.default_rng(3)
    n = 120
    probs = rng.dirichlet([1, 2, 1], size=n)
    pairs = [pair(i, REGARD_LABELS[int(rng.integers(3))]) for i in range(n)]
    folds = cv_folds(pairs, 4, seed=0)
    grid = offset_grid(1.0, 0.2)
    base, _ = cross_validate(probs, pairs, folds, grid)
    flipped = [pair(i, POS) if folds[i] == 2 else p for i, p in enumerate(pairs)]
    after, _ = cross_validate(probs, flipped, folds, grid)
    held = folds == 2
    assert [d for d, h in zip(after, held, strict=True) if h] == [
        d for d, h in zip(base, held, strict=True) if h
    ]


def test_folds_are_deterministic_stratified_and_seeded():
    rng = random.Random(0)
    pairs = [pair(i, rng.choice([NEG, NEU, NEU, POS])) for i in range(100)] + [
        pair(1000 + i, None, wsd="no") for i in range(30)
    ]
    f = cv_folds(pairs, 5, seed=0)
    assert (f == cv_folds(pairs, 5, seed=0)).all() and not (f == cv_folds(pairs, 5, seed=1)).all()
    assert sorted(set(f.tolist())) == [0, 1, 2, 3, 4]
    for label in (NEG, NEU, POS, None):
        counts = np.bincount([f[i] for i, p in enumerate(pairs) if p.regard == label], minlength=5)
        assert counts.max() - counts.min() <= 1
    with pytest.raises(ValueError, match="2 folds"):
        cv_folds(pairs, 1, seed=0)


def _run_dir(tmp_path: Path, pairs: list[LabelledPair], reg: np.ndarray, **meta) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    wsd = np.tile([[0.2, 0.7, 0.1]], (len(pairs), 1)).astype(np.float32)
    np.save(run / "dev_wsd.npy", wsd)
    np.save(run / "dev_regard.npy", reg.astype(np.float32))
    (run / "train_meta.json").write_text(
        json.dumps({"include_dev": False, "dev_folds": 0, "fold": 0, **meta})
    )
    return run


def _dev_file(tmp_path: Path, pairs: list[LabelledPair]) -> Path:
    path = tmp_path / "dev.jsonl"
    rows = [
        {"uid": p.uid, "text": p.mention.text, "keyword": p.mention.keyword, "class": p.attribute_class,
         "gloss": p.mention.gloss, "wsd": p.wsd, "regard": p.regard}
        for p in pairs
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli_reports_with_and_without_the_rule(tmp_path: Path, capsys):
    rng = np.random.default_rng(5)
    gold = [REGARD_LABELS[int(k)] for k in rng.choice(3, size=150, p=[0.2, 0.6, 0.2])]
    pairs = [pair(i, g) for i, g in enumerate(gold)] + [pair(500 + i, None, wsd="no") for i in range(20)]
    # a model that under-calls negative: the rule should learn a positive negative offset
    reg = []
    for p in pairs:
        k = REGARD_LABELS.index(p.regard) if p.regard else 1
        logits = rng.normal(size=3) * 0.5
        logits[k] += 1.5
        logits[0] -= 1.2
        reg.append(np.exp(logits) / np.exp(logits).sum())
    run = _run_dir(tmp_path, pairs, np.array(reg))
    dev = _dev_file(tmp_path, pairs)
    out = tmp_path / "dr.json"
    assert (
        main(["--run", str(run), "--run", str(run), "--dev", str(dev), "--folds", "5", "--json", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "with rule, CV" in text and "argmax (no rule)" in text and "mean of 2 runs" in text
    result = json.loads(out.read_text())
    assert [r["run"] for r in result["runs"]] == [str(run), str(run)]
    r = result["runs"][0]
    assert len(r["fold_offsets"]) == 5 and r["regard_n"] == 150
    # the numbers are fairstream.eval.score's (eval-models) on the same decisions
    probs = np.array(reg, dtype=np.float32)
    wsd = ["yes"] * len(pairs)
    assert r["without_rule"] == json.loads(json.dumps(score(pairs, wsd, regard_decisions(probs))))
    assert r["offsets_fitted_on_all"][0] > 0  # more negatives called
    assert r["with_rule_cv"]["negative_recall"] > r["without_rule"]["negative_recall"]
    assert result["mean"]["with_rule_cv"]["regard_macro_f1"] == pytest.approx(
        r["with_rule_cv"]["regard_macro_f1"]
    )
    # the CV decisions are reproduced by analyse_run (deterministic folds)
    again = analyse_run(np.load(run / "dev_wsd.npy"), probs, pairs, folds=5, seed=0, grid=offset_grid())
    assert again["fold_offsets"] == r["fold_offsets"]
    # --free negative: only the negative offset moves, and it still learns to call more negatives
    assert main(["--run", str(run), "--dev", str(dev), "--free", "negative", "--json", str(out)]) == 0
    neg_only = json.loads(out.read_text())
    assert neg_only["grid"]["free"] == ["negative"]
    fitted = neg_only["runs"][0]
    assert (
        all(o[1] == 0 and o[2] == 0 for o in fitted["fold_offsets"])
        and fitted["offsets_fitted_on_all"][0] > 0
    )


def test_cli_refuses_a_run_trained_on_dev_or_of_the_wrong_size(tmp_path: Path):
    pairs = [pair(i, NEU) for i in range(10)]
    dev = _dev_file(tmp_path, pairs)
    run = _run_dir(tmp_path, pairs, np.full((10, 3), 1 / 3), include_dev=True)
    with pytest.raises(SystemExit, match="include_dev"):
        main(["--run", str(run), "--dev", str(dev)])
    (run / "train_meta.json").write_text(json.dumps({"include_dev": False}))
    np.save(run / "dev_regard.npy", np.full((9, 3), 1 / 3))
    with pytest.raises(SystemExit, match=r"expected \(10, 3\)"):
        main(["--run", str(run), "--dev", str(dev)])


def test_one_rule_at_the_threshold_for_every_model_kind(monkeypatch):
    """JointModel, TorchJointModel and a cascade all decide through decision.predictions_from_logits.

    Logits whose P(yes) lies within float32 rounding of the threshold: a backend that took the
    softmax in another precision would decide some of them differently.
    """
    from fairstream.models import decision, torch_backend
    from fairstream.models.cascade import Cascade

    assert torch_backend.predictions_from_logits is decision.predictions_from_logits
    # P(yes) = sigmoid(d) for logits (0, d, -inf-ish): d near 0 puts it near the 0.5 threshold
    d = np.linspace(-1e-6, 1e-6, 401, dtype=np.float32)
    wsd = np.stack([np.zeros_like(d), d, np.full_like(d, -30.0)], axis=1)
    reg = np.tile(np.array([[0.1, 0.0, -0.1]], dtype=np.float32), (len(d), 1))
    want = decision.predictions_from_logits(wsd, reg, 0.5)
    assert 0 < sum(p.person for p in want) < len(d)  # the threshold cuts through the set
    monkeypatch.setattr(JointModel, "predict_logits", lambda self, items: (wsd, reg))
    single = JointModel(default_model_dir("joint-v6"))
    cascade = JointModel()  # the shipped default is a cascade: a model of its own
    assert isinstance(cascade, Cascade) and cascade.cascade is cascade
    monkeypatch.setattr(Cascade, "predict_logits", lambda self, items: (wsd, reg))
    for model in (single, cascade):
        assert model.wsd_threshold == 0.5
        assert model.predict([None] * len(d)) == want  # type: ignore[list-item]
