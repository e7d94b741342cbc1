"""export.parity: int8-vs-fp32 decision agreement on unlabelled text (a tiny BERT trained and exported here)."""

from __future__ import annotations

import json

from export.config import TrainConfig
from export.distill import load_pool
from export.export_onnx import export_fp32, export_model, fp32_twin
from export.parity import decision_agreement, unseen_parity
from fairstream.models.labels import load_labelled_pairs
from fairstream.models.runtime import JointModel
from tests.test_distill import train_tiny_run
from tests.test_train_sweep import tiny_encoder, write_pairs  # noqa: F401  (fixture)


def test_unseen_parity_counts_every_mention_and_fp32_agrees_with_itself(tmp_path, tiny_encoder):  # noqa: F811
    write_pairs(tmp_path / "gold.jsonl", "g", ["corpus"])
    gold = load_labelled_pairs(tmp_path / "gold.jsonl")
    run = tmp_path / "run"
    train_tiny_run(tiny_encoder, gold, TrainConfig(epochs=5, lr=1e-3, batch_size=4, max_length=48), run)
    export_model(run, tmp_path / "model", name="tiny", threshold=0.5)

    text = tmp_path / "unseen.jsonl"
    sentences = ["Muslim neighbours helped us move the piano.", "The German car broke down again.",
                 "Poor families waited for hours in the cold.", "Some say the German team was lazy."]  # fmt: skip
    with text.open("w") as f:
        for i, s in enumerate(sentences):
            kw = next(k for k in ("muslim", "german", "poor") if k in s.lower())
            start = s.lower().index(kw)
            f.write(json.dumps({"uid": f"u{i}", "text": s, "kw_start": start, "kw_end": start + len(kw),
                                "keyword": kw, "gloss": "g"}) + "\n")  # fmt: skip
    [report] = unseen_parity(tmp_path / "model", run, [text])
    assert report["n"] == len(sentences)
    assert 0.0 <= report["wsd_decision_agreement"] <= 1.0
    assert report["wsd_flips"] == round((1 - report["wsd_decision_agreement"]) * len(sentences))
    assert report["wsd_flips_near_tie"] <= report["wsd_flips"]
    assert report["max_abs_delta_p_yes"] < 0.2  # int8 of the same weights stays close

    export_fp32(run, tmp_path / "fp32.onnx", 48)
    fp32 = JointModel(fp32_twin(tmp_path / "model", tmp_path / "fp32.onnx", tmp_path))
    same = decision_agreement(fp32, fp32, load_pool(text))
    assert same["wsd_decision_agreement"] == 1.0 and same["wsd_flips"] == 0
    assert same["max_abs_delta_p_yes"] == 0.0
    assert same["regard_compared"] == same["reference_person"]


def test_score_runs_scores_a_run_folder_like_eval(monkeypatch, tmp_path, tiny_encoder, capsys):  # noqa: F811
    import sys

    from export import score_runs
    from export.distill import load_run
    from export.train import evaluate, predict

    write_pairs(tmp_path / "gold.jsonl", "g", ["corpus"])
    gold = load_labelled_pairs(tmp_path / "gold.jsonl")
    run = tmp_path / "run"
    train_tiny_run(tiny_encoder, gold, TrainConfig(epochs=3, lr=1e-3, batch_size=4, max_length=48), run)
    out = tmp_path / "scores.json"
    argv = [
        "score_runs",
        "--run",
        str(run),
        "--labels",
        str(tmp_path / "gold.jsonl"),
        "--json",
        str(out),
        "--threads",
        "1",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    score_runs.main()
    got = json.loads(out.read_text())[str(run)]
    loaded, tokenizer, max_length = load_run(run)
    expected = evaluate(*predict(loaded, tokenizer, gold, max_length), gold, 0.5)
    assert got["n"] == len(gold)
    assert got["regard_macro_f1"] == expected["regard_macro_f1"]
    assert got["wsd_kappa"] == expected["wsd_kappa"]
    assert "WSD kappa" in capsys.readouterr().out
