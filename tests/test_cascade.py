"""The two-model cascade (fairstream.models.cascade) with the real shipped models."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from fairstream.errors import ModelError
from fairstream.models.cascade import CascadeRoute, is_cascade
from fairstream.models.encoding import MentionInput
from fairstream.models.runtime import JointModel, default_model_dir, softmax

CASCADE = "joint-v6-cascade"


@pytest.fixture(scope="module")
def items() -> list[MentionInput]:
    from export.tools.sample_labels_as_pairs import sample_pairs

    return [
        MentionInput(r["text"], r["kw_start"], r["kw_end"], r["keyword"], r["gloss"]) for r in sample_pairs()
    ]


@pytest.fixture(scope="module")
def logits(items):
    """Logits of the cascade and of its two members on the sample corpus's labelled mentions."""
    cascade = JointModel(CASCADE)
    out = {"cascade": cascade.predict_logits(items), "cascade_model": cascade}
    for name in ("joint-v7-fast", "joint-v6"):
        out[name] = JointModel(name).predict_logits(items)
    return out


def test_route_sends_each_kind_of_doubt_to_the_full_model():
    route = CascadeRoute(wsd_margin=0.4, regard_confidence=0.9, negative_probability=0.05)

    def logit(p: list[float]) -> list[float]:
        return list(np.log(p))

    wsd = np.array(
        [
            logit([0.98, 0.01, 0.01]),  # surely not a person: the fast model decides
            logit([0.60, 0.30, 0.10]),  # unsure whether a person (P(yes) 0.3): routed
            logit([0.01, 0.98, 0.01]),  # surely a person ...
            logit([0.01, 0.98, 0.01]),
            logit([0.01, 0.98, 0.01]),
            logit([0.01, 0.98, 0.01]),
        ]
    )
    regard = np.array(
        [
            logit([0.30, 0.40, 0.30]),  # regard of a non-person is not asked
            logit([0.01, 0.98, 0.01]),
            logit([0.01, 0.98, 0.01]),  # ... surely neutral: the fast model decides
            logit([0.01, 0.85, 0.14]),  # ... unsure of its regard: routed
            logit([0.07, 0.92, 0.01]),  # ... sure enough, but some weight on negative: routed
            logit([0.97, 0.02, 0.01]),  # ... surely negative: routed (drops are the full model's call)
        ]
    )
    assert route.routed(wsd, regard, 0.5).tolist() == [False, True, False, True, True, True]


def test_cascade_takes_the_full_models_logits_exactly_where_it_routes(logits, items):
    wsd, regard = logits["cascade"]
    fast_w, fast_r = logits["joint-v7-fast"]
    full_w, full_r = logits["joint-v6"]
    cascade = logits["cascade_model"]
    routed = cascade.cascade.route.routed(fast_w, fast_r, cascade.wsd_threshold)
    assert 0 < routed.sum() < len(items)
    np.testing.assert_array_equal(wsd[routed], full_w[routed])
    np.testing.assert_array_equal(regard[routed], full_r[routed])
    np.testing.assert_array_equal(wsd[~routed], fast_w[~routed])
    np.testing.assert_array_equal(regard[~routed], fast_r[~routed])
    # every negative decision is the full model's
    person = softmax(wsd)[:, 1] >= cascade.wsd_threshold
    negative = person & (softmax(regard).argmax(axis=1) == 0)
    assert negative.any() and routed[negative].all()


def test_cascade_is_batch_invariant_and_pickles(logits, items):
    cascade = logits["cascade_model"]
    assert cascade.batch_invariant and is_cascade(default_model_dir(CASCADE))
    wsd, regard = logits["cascade"]
    one_by_one = [cascade.predict_logits([m]) for m in items[:40]]
    np.testing.assert_array_equal(np.concatenate([w for w, _ in one_by_one]), wsd[:40])
    np.testing.assert_array_equal(np.concatenate([r for _, r in one_by_one]), regard[:40])
    again = pickle.loads(pickle.dumps(JointModel(CASCADE, batch_size=3)))
    np.testing.assert_array_equal(again.predict_logits(items[40:80])[1], regard[40:80])
    preds = cascade.predict(items[:10])
    assert [p.person for p in preds] == (softmax(wsd[:10])[:, 1] >= 0.5).tolist()


def test_cascade_on_the_torch_backend_routes_the_same_way(items):
    pytest.importorskip("torch")
    from fairstream.models.loader import load_model

    torch_cascade = load_model(CASCADE, device="cpu", backend="torch", batch_size=8, threads=1)
    onnx_cascade = load_model(CASCADE, device="cpu")
    a, b = torch_cascade.predict(items[:150]), onnx_cascade.predict(items[:150])
    agree = np.mean([(x.person, x.regard) == (y.person, y.regard) for x, y in zip(a, b, strict=True)])
    assert torch_cascade.cascade.routed > 0
    assert agree >= 0.95, agree  # fp32 members against int8 ones


def write_config(folder, cascade: dict) -> None:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"name": "c", "cascade": cascade}))


def test_bad_cascade_configs_name_the_file_and_the_problem(tmp_path):
    write_config(tmp_path / "a", {"fast": "joint-v7-fast"})
    with pytest.raises(ModelError, match=r'a/config.json: "cascade" needs "fast" and "full"'):
        JointModel(tmp_path / "a")
    write_config(tmp_path / "b", {"fast": "joint-v7-fast", "full": "joint-v6", "route": {"margin": 0.3}})
    with pytest.raises(
        ModelError, match=r"unknown cascade route setting\(s\) \['margin'\]; allowed: wsd_margin"
    ):
        JointModel(tmp_path / "b")
    write_config(tmp_path / "e", {"fast": "joint-v7-fast", "full": "joint-v6", "route": {"wsd_margin": 1.5}})
    with pytest.raises(
        ModelError, match=r"cascade route: wsd_margin=1.5: must be a probability between 0 and 1"
    ):
        JointModel(tmp_path / "e")
    write_config(tmp_path / "f", {"fast": "joint-v7-fast", "full": "joint-v6", "fsat": "x"})
    with pytest.raises(ModelError, match=r"unknown \"cascade\" field\(s\) \['fsat'\]"):
        JointModel(tmp_path / "f")
    write_config(tmp_path / "d", {"fast": ".", "full": "joint-v6"})
    with pytest.raises(ModelError, match="names itself as a member"):
        JointModel(tmp_path / "d")
    write_config(tmp_path / "c", {"fast": "joint-v7-fast", "full": "no-such-model"})
    with pytest.raises(ModelError, match=r"no-such-model/config\.json: model config not found"):
        JointModel(tmp_path / "c")


def test_members_must_decide_alike(tmp_path):
    member = tmp_path / "other"
    member.mkdir()
    cfg = json.loads((default_model_dir("joint-v6") / "config.json").read_text())
    cfg["wsd_threshold"] = 0.7
    (member / "config.json").write_text(json.dumps(cfg))
    write_config(tmp_path / "c", {"fast": "joint-v7-fast", "full": "../other"})
    with pytest.raises(ModelError, match="differ in wsd_threshold"):
        JointModel(tmp_path / "c")


def test_tokenizer_file_of_a_cascade_is_its_full_models():
    # the README's pipeline tokenizes with the default model's tokenizer; a cascade folder holds none
    assert JointModel(CASCADE).tokenizer_file == default_model_dir("joint-v6") / "tokenizer.json"
    assert JointModel(CASCADE).tokenizer_file.is_file()
    assert JointModel("joint-v7-fast").tokenizer_file == default_model_dir("joint-v7-fast") / "tokenizer.json"


def test_torch_cascade_reports_both_models_forward_passes(items):
    pytest.importorskip("torch")
    from fairstream.models.loader import load_model

    model = load_model(CASCADE, device="cpu", backend="torch", batch_size=16, threads=1)
    model.predict_logits(items[:64])
    routed = model.cascade.last_routed
    assert 0 < routed < 64
    # 64 rows through the fast model, then the routed ones through the full model, 16 at most per pass
    assert sum(model.last_batch_sizes) == 64 + routed and max(model.last_batch_sizes) <= 16


def test_onnxruntime_gpu_backend_checks_each_member_for_a_gpu_graph_with_a_faked_provider_list(monkeypatch):
    # no onnxruntime-gpu here: only the provider list is faked, to reach the graph check; the shipped
    # members hold int8 graphs only, which the CUDA provider cannot run, and the error names the member
    import onnxruntime

    from fairstream.models.loader import load_model

    monkeypatch.setattr(
        onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    with pytest.raises(ModelError, match=r"joint-v7-fast: no fp16/fp32 ONNX graph for the CUDA provider"):
        load_model(CASCADE, device="cuda", backend="onnxruntime")


def test_torch_cascade_tokenizes_once_for_both_models(items, monkeypatch):
    """The members share a tokenizer, so the routed rows of the fast model's inputs go on as they are."""
    pytest.importorskip("torch")
    from fairstream.models.torch_backend import TorchJointModel

    shared = TorchJointModel(CASCADE, device="cpu", batch_size=8, threads=1, chunk_size=24, prefetch=True)
    separate = TorchJointModel(CASCADE, device="cpu", batch_size=8, threads=1, chunk_size=24)
    separate.cascade._shared = False  # the generic path: each model tokenizes what it is given

    def refuse(_items):
        raise AssertionError("the full model tokenized again")

    monkeypatch.setattr(shared.cascade.full, "encode", refuse)
    w, r = shared.predict_logits(items[:60])
    w2, r2 = separate.predict_logits(items[:60])
    assert shared.cascade._shared is True
    assert shared.cascade.last_routed == separate.cascade.last_routed > 0
    np.testing.assert_allclose(w, w2, atol=1e-4)
    np.testing.assert_allclose(r, r2, atol=1e-4)


def test_a_cascade_level_decision_rule_moves_only_decisions_and_only_routed_ones(tmp_path, logits, items):
    shipped = json.loads((default_model_dir(CASCADE) / "config.json").read_text())
    folder = tmp_path / "ruled"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps({"name": "ruled", "cascade": shipped["cascade"], "regard_logit_offsets": [0.6, 0, 0]})
    )
    ruled = JointModel(folder)
    assert ruled.regard_offsets == (0.6, 0.0, 0.0) and ruled.cascade is not None
    _, regard = ruled.predict_logits(items)
    np.testing.assert_array_equal(regard, logits["cascade"][1])  # the logits and the route are untouched
    preds = ruled.predict(items)
    probs = softmax(regard)
    with np.errstate(divide="ignore"):
        want = (np.log(probs.astype(np.float64)) + np.array([0.6, 0, 0])).argmax(axis=1)
    person = np.array([p.person for p in preds])
    assert [p.regard for p in preds] == [
        ["negative", "neutral", "positive"][k] if is_person else None
        for k, is_person in zip(want, person, strict=True)
    ]
    # a mention the fast model decides alone is sure it is not negative: +0.6 cannot turn it
    fast_w, fast_r = logits["joint-v7-fast"]
    routed = ruled.cascade.route.routed(fast_w, fast_r, ruled.wsd_threshold)
    assert (want[~routed & person] == probs[~routed & person].argmax(axis=1)).all()
    # the same rule on the torch backend
    pytest.importorskip("torch")
    from fairstream.models.loader import load_model

    assert load_model(folder, device="cpu", backend="torch", threads=1).regard_offsets == (0.6, 0.0, 0.0)


def test_a_bad_cascade_decision_rule_names_the_file(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps(
            {
                "name": "bad",
                "cascade": {"fast": "joint-v7-fast", "full": "joint-v6"},
                "regard_logit_offsets": [1, 2],
            }
        )
    )
    with pytest.raises(ModelError, match=r"bad/config\.json.*regard_logit_offsets"):
        JointModel(folder)
