from __future__ import annotations

from pathlib import Path

from fairstream.models.card import model_quality
from fairstream.models.runtime import default_model_dir


def test_quality_of_the_shipped_model_is_read_from_its_card():
    q = model_quality(default_model_dir())
    assert q is not None
    card = (default_model_dir() / "MODEL_CARD.md").read_text(encoding="utf-8")
    # the first "mean" row is the held-out (or cross-validated) estimate, else the unseen-text row of this
    # model; its numbers are in the card as written
    sources = ("Every unseen labelled set", "Held out", "Cross-validated", "Unseen real text")
    assert any(s in q["source"] for s in sources), q["source"]
    for key in ("wsd_kappa", "regard_macro_f1", "negative_f1"):
        assert isinstance(q[key], float) and 0 < q[key] < 1 and f"{q[key]:.3f}" in card


def test_no_card_or_no_mean_row_gives_none(tmp_path: Path):
    assert model_quality(tmp_path) is None
    (tmp_path / "MODEL_CARD.md").write_text("# card\n\n| run | WSD kappa |\n|---|---|\n| s0 | 0.5 |\n")
    assert model_quality(tmp_path) is None
    (tmp_path / "MODEL_CARD.md").write_text(
        "# card\n## Quality\n| run | WSD kappa | regard macro-F1 |\n|---|---|---|\n| **mean** | 0.70 | 0.60 |\n"
    )
    assert model_quality(tmp_path) == {
        "wsd_kappa": 0.7,
        "regard_macro_f1": 0.6,
        "negative_f1": None,
        "source": "MODEL_CARD.md: Quality",
    }


def test_quality_falls_back_to_this_models_unseen_row_and_reads_its_first_columns(tmp_path: Path):
    from export.model_card import unseen_section

    scores = {
        "old (int8, the previous default)": {"all": {"n": 9, "wsd_kappa": 0.1, "regard_macro_f1": 0.2, "negative_f1": 0.3}},
        "new (int8, this model)": {"all": {"n": 9, "wsd_kappa": 0.8, "regard_macro_f1": 0.7, "negative_f1": 0.6},
                                   "random": {"n": 3, "wsd_kappa": 0.5, "regard_macro_f1": 0.4, "negative_f1": 0.2}},
    }  # fmt: skip
    card = "\n".join(
        ["# card", "## Quality", "### Cross-validated: not measured", "", "why", *unseen_section(scores, "")]
    )
    (tmp_path / "MODEL_CARD.md").write_text(card + "\n")
    # the random-items block repeats "WSD kappa" and "regard macro-F1": the all-items numbers are the estimate
    assert model_quality(tmp_path) == {
        "wsd_kappa": 0.8,
        "regard_macro_f1": 0.7,
        "negative_f1": 0.6,
        "source": "MODEL_CARD.md: Unseen real text",
    }
    # a mean row (held-out or cross-validated dev runs) wins wherever it is
    header = "| run | WSD kappa | regard macro-F1 |\n|---|---|---|\n| **mean** | 0.70 | 0.60 |\n"
    (tmp_path / "MODEL_CARD.md").write_text(card + "\n\n## Later\n" + header)
    assert model_quality(tmp_path)["source"] == "MODEL_CARD.md: Later"  # type: ignore[index]


def test_limits_count_every_real_text_round():
    from export.model_card import limits_lines

    sources = {"r6-helper-01": 300, "r8-helper-02": 250, "r9-helper-01": 200, "r4-helper-0": 354, "web": 10,
               "text-extra": 5, "written-forum": 520}  # fmt: skip
    text = "\n".join(limits_lines({"training": {"train_sources": sources}}))
    assert "755 real forum and web sentences" in text


def test_card_tables_carry_negative_precision_and_recall(tmp_path: Path):
    from export.model_card import HEADER, decision_rule_section, fmt_metrics, regard_rule_line

    m = {"n": 10, "wsd_kappa": 0.5, "wsd_f1": 0.6, "regard_n": 6, "regard_micro_f1": 0.7, "regard_macro_f1": 0.65,
         "regard_f1": {"negative": 0.4, "neutral": 0.8, "positive": 0.75},
         "negative_precision": 0.5, "negative_recall": 1 / 3}  # fmt: skip
    assert HEADER.split("\n")[0].endswith("| negative precision | negative recall |")
    assert fmt_metrics(m).endswith("| 0.500 | 0.333 |")
    assert HEADER.split("\n")[0].count("|") == fmt_metrics(m).count("|")
    # sweep results recorded before these keys existed, or a class never decided negative
    old = {k: v for k, v in m.items() if not k.startswith("negative_")}
    assert fmt_metrics(old).endswith("| n/a | n/a |")
    assert fmt_metrics({**m, "negative_precision": None}).endswith("| n/a | 0.333 |")
    # the card's quality reader still finds its columns in the wider table
    header = "| run " + HEADER.split("\n")[0]
    (tmp_path / "MODEL_CARD.md").write_text(
        f"# card\n## Quality\n{header}\n|---{HEADER.split(chr(10))[1]}\n| **mean** {fmt_metrics(m)}\n"
    )
    q = model_quality(tmp_path)
    assert q is not None and q["regard_macro_f1"] == 0.65 and q["negative_f1"] == 0.4
    assert "argmax of the regard probabilities" in regard_rule_line({})
    assert "[-0.4, 0.0, 0.3]" in regard_rule_line({"regard_logit_offsets": [-0.4, 0, 0.3]})
    run = {"run": "runs/a", "offsets_fitted_on_all": [0.3, 0.0, -0.1],
           "without_rule": {**m, "negative_precision": None}, "with_rule_cv": m}  # fmt: skip
    section = "\n".join(
        decision_rule_section({"folds": 5, "seed": 0, "grid": {"limit": 2.0, "step": 0.1}, "runs": [run]})
    )
    assert "| a | argmax | 0.650 | 0.400 / 0.800 / 0.750 | n/a | 0.333 |" in section
    assert "| a | offsets (CV) | 0.650 | 0.400 / 0.800 / 0.750 | 0.500 | 0.333 |" in section
    assert "[0.3, 0.0, -0.1]" in section and "neutral fixed at 0" in section
    # a negative-only search (export.decision_rule --free negative) says what it held fixed, and the verdict follows
    grid = {"limit": 2.0, "step": 0.1, "free": ["negative"]}
    lines = decision_rule_section({"folds": 5, "seed": 0, "grid": grid, "runs": [run]}, "Not shipped: why.")
    assert "neutral, positive fixed at 0" in "\n".join(lines) and lines[-1] == "Not shipped: why."


def test_card_sections_for_cv_only_models_and_unseen_text(tmp_path: Path):
    import json

    import pytest

    from export.model_card import sweep_folds, sweep_rows, unseen_section

    m = {"n": 10, "wsd_kappa": 0.5, "wsd_f1": 0.6, "regard_n": 6, "regard_micro_f1": 0.7, "regard_macro_f1": 0.65,
         "regard_f1": {"negative": 0.4, "neutral": 0.8, "positive": 0.75}}  # fmt: skip
    runs = tmp_path / "results.jsonl"
    runs.write_text(
        "\n".join(
            json.dumps({"name": n, "config": {"seed": s, "folds": f}, "dev": {**m, "regard_macro_f1": v}})
            for n, s, f, v in (("a-s0", 0, 5, 0.6), ("a-s1", 1, 5, 0.7), ("b-s0", 0, 3, 0.5))
        )
    )
    assert sweep_folds([runs], ["a-s0", "a-s1"]) == 5
    with pytest.raises(SystemExit, match="different fold counts"):
        sweep_folds([runs], ["a-s0", "b-s0"])
    with pytest.raises(SystemExit, match="no runs named"):
        sweep_rows([runs], ["nope"])
    rows = sweep_rows([runs], ["a-s0", "a-s1"], label="baseline mean")
    assert rows[-1].startswith("| **baseline mean** |") and "| 0.650 |" in rows[-1]
    scores = {
        "new (int8)": {"all": {"n": 100, "wsd_kappa": 0.8, "regard_macro_f1": 0.7, "negative_f1": 0.6},
                       "random": {"n": 10, "wsd_kappa": 0.9, "regard_macro_f1": 0.85, "negative_f1": None}},
        "old (int8)": {"all": {"n": 100, "wsd_kappa": 0.7, "regard_macro_f1": 0.6, "negative_f1": 0.5}},
    }  # fmt: skip
    table = unseen_section(scores, "chosen where models disagree")
    assert "chosen where models disagree" in table
    assert "| new (int8) | 100 | 0.800 | 0.700 | 0.600 | 10 | 0.900 | 0.850 |" in table
    assert "| old (int8) | 100 | 0.700 | 0.600 | 0.500 | n/a | n/a | n/a |" in table


def test_cv_section_pools_each_seed_over_its_folds_then_averages(tmp_path: Path):
    import json

    import numpy as np
    import pytest

    from export.model_card import cv_section
    from export.train import dev_fold
    from fairstream.core.schema import REGARD_LABELS
    from fairstream.models.labels import load_labelled_pairs
    from tests.test_train_sweep import write_pairs

    write_pairs(tmp_path / "dev.jsonl", "d", ["dev"])
    dev = load_labelled_pairs(tmp_path / "dev.jsonl")
    assert {dev_fold(p.uid, 2) for p in dev} == {0, 1}

    def fold_run(seed: int, fold: int, right: bool) -> Path:
        """A --dev-folds 2 run folder whose predictions are all right, or all "not a person"."""
        run = tmp_path / f"s{seed}-f{fold}"
        run.mkdir()
        mine = [p for p in dev if dev_fold(p.uid, 2) == fold]
        wsd = np.array([[0.0, 1.0, 0.0] if right and p.wsd == "yes" else [1.0, 0.0, 0.0] for p in mine])
        reg = np.array([np.eye(3)[REGARD_LABELS.index(p.regard or "neutral")] for p in mine])
        np.save(run / "dev_wsd.npy", wsd)
        np.save(run / "dev_regard.npy", reg)
        (run / "train_meta.json").write_text(json.dumps({"seed": seed, "dev_folds": 2, "fold": fold}))
        return run

    runs = [fold_run(0, 0, True), fold_run(0, 1, True), fold_run(1, 0, False), fold_run(1, 1, False)]
    lines = cv_section(runs, tmp_path / "dev.jsonl", 0.5, note="rule (f): not decided")
    text = "\n".join(lines)
    assert "in 2 folds" in text and lines[-1] == "rule (f): not decided"
    seed0 = next(line for line in lines if line.startswith("| seed 0 "))
    seed1 = next(line for line in lines if line.startswith("| seed 1 "))
    mean = next(line for line in lines if line.startswith("| **mean** "))
    assert seed0.split(" | ")[2] == "1.000" and seed1.split(" | ")[2] == "0.000"  # WSD kappa
    assert mean.split(" | ")[2] == "0.500"
    assert text.count("fold 0: kappa") == 2
    with pytest.raises(SystemExit, match="same folds"):
        cv_section(runs[:3], tmp_path / "dev.jsonl", 0.5)
    partial = cv_section([runs[1], runs[3]], tmp_path / "dev.jsonl", 0.5)
    assert "in 2 folds (only folds [1] of 2 so far)" in partial[1]
    assert any(line.startswith("* seed 1: fold 1: kappa") for line in partial)
    # predictions that do not line up with their fold's items are refused, naming the run
    np.save(runs[0] / "dev_wsd.npy", np.load(runs[0] / "dev_wsd.npy")[:-1])
    with pytest.raises(SystemExit, match=r"s0-f0: \d+ dev predictions, but fold 0 of 2 has \d+ items"):
        cv_section(runs, tmp_path / "dev.jsonl", 0.5)
