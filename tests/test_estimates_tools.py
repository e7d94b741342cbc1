"""The model-building side of the estimates: export.calibrate, export.validate_estimates, the cards and docs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from export.calibrate import intercept_shift, shift_sd
from export.calibrate import main as calibrate_main
from export.estimates_card import coverage_table, validation_table
from export.training_set import dev_fold
from export.validate_estimates import cells, simulate, truly_negative
from fairstream.core.estimates import estimates
from fairstream.models.calibration import Calibration, calibration_in
from fairstream.models.decision import Prediction
from fairstream.models.encoding import MentionInput
from fairstream.models.labels import LabelledPair, load_labelled_pairs

ROOT = Path(__file__).resolve().parent.parent
VALIDATION = ROOT / "export/sweeps/session30-validate-estimates-joint-v6-cascade.json"


def test_calibrate_fits_chooses_and_writes_a_calibration_from_fold_fits(
    shared_dir: Path, tmp_path: Path
) -> None:
    """Fold fits whose P(negative) is informative but too low: the fitted map raises it to the base rate."""
    dev_path = shared_dir / "data/labels/dev.jsonl"
    dev = load_labelled_pairs(dev_path)
    rng = np.random.default_rng(0)
    neg = np.array([p.wsd == "yes" and p.regard == "negative" for p in dev])
    person = np.array([p.wsd == "yes" for p in dev])
    p_neg = np.where(neg, rng.beta(2, 4, len(dev)), rng.beta(1, 30, len(dev)))  # under-states negatives
    p_yes = np.where(person, rng.beta(8, 2, len(dev)), rng.beta(2, 8, len(dev)))
    regard = np.stack([p_neg, 1 - p_neg, np.zeros(len(dev))], axis=1)
    wsd = np.stack([1 - p_yes, p_yes, np.zeros(len(dev))], axis=1)
    for fold in range(5):
        idx = [i for i, p in enumerate(dev) if dev_fold(p.uid, 5) == fold]
        run = tmp_path / "runs" / f"r1-s0-f{fold}"
        run.mkdir(parents=True)
        np.save(run / "dev_regard.npy", regard[idx])
        np.save(run / "dev_wsd.npy", wsd[idx])
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"name": "m", "max_length": 64}), encoding="utf-8")
    args = ["--runs", str(tmp_path / "runs"), "--prefix", "r1", "--dev", str(dev_path), "--model", str(model)]
    args += ["--bootstrap", "4", "--json", str(tmp_path / "cal.json"), "--write", "--recipe", "a test recipe"]
    assert calibrate_main(args) == 0
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    assert config["name"] == "m" and config["max_length"] == 64  # other keys kept
    cal = calibration_in(model)
    assert cal.calibrated and len(cal.bootstrap) == 4 and "a test recipe" in cal.fit_on
    assert set(cal.details["cv"]) == {"uncalibrated", "temperature", "platt", "isotonic"}
    chosen = cal.details["cv"][cal.method]["log_loss"]
    assert chosen == min(cal.details["cv"][m]["log_loss"] for m in ("temperature", "platt", "isotonic"))
    assert chosen < cal.details["cv"]["uncalibrated"]["log_loss"]
    assert set(cal.details["group_shifts"]) == {"dev forum", "dev web"}
    assert list(cal.table) == sorted(cal.table)
    # the model-person items' calibrated probabilities add up to about their true negatives
    counted = p_yes >= 0.5
    est = estimates(_stats_of(p_neg[counted]), cal)["pooled"]["before"]
    truth = neg[counted].mean()
    assert abs(est["estimated_negative_share"] - truth) < 0.02 < abs(est["model_negative_share"] - truth)
    assert calibration_in(model, "person").calibrated


def _stats_of(p_negative: np.ndarray) -> dict:
    from fairstream.core.stats import StreamStats

    stats = StreamStats()
    for p in p_negative:
        stats.count_person_sentence("x", "negative" if p >= 0.5 else "neutral", float(p), kept=True)
    return stats.to_dict()


def test_intercept_shift_and_its_spread() -> None:
    c = np.full(200, 0.2)
    y = np.array([1.0] * 80 + [0.0] * 120)
    u, se = intercept_shift(c, y)
    assert u == pytest.approx(math.log(0.4 / 0.6) - math.log(0.2 / 0.8), abs=1e-6) and 0 < se < 1
    assert shift_sd([(0.3, 0.1), (0.3, 0.1), (0.3, 0.2)]) == 0.0
    assert shift_sd([(-1.0, 0.1), (1.0, 0.1), (0.0, 0.1)]) > 0.5
    assert shift_sd([(0.5, 0.1)]) == 0.0


def _pair(i: int, keyword: str, wsd: str, regard: str | None) -> LabelledPair:
    text = f"Some {keyword} people spoke {i}."
    return LabelledPair(f"u{i}", MentionInput(text, 5, 5 + len(keyword), keyword, "g"), "c", wsd, regard)


def _pred(p_negative: float, person: bool = True) -> Prediction:
    regard = "negative" if p_negative >= 0.5 else "neutral"
    probs = (p_negative, 1 - p_negative, 0.0)
    return Prediction(
        (0.0, 1.0, 0.0) if person else (1.0, 0.0, 0.0), probs, person, regard if person else None
    )


def test_validation_counts_gold_beside_the_filters_decisions_and_judges_coverage() -> None:
    pairs = [_pair(i, "x", "yes", "negative" if i < 10 else "neutral") for i in range(40)]
    pairs += [_pair(40, "x", "no", None)]
    preds = [_pred(0.9 if i < 8 else (0.7 if i < 12 else 0.05)) for i in range(40)] + [_pred(0.8)]
    stats, gold = simulate(pairs, preds, cap=0.0, seed=0)
    g = gold["(pooled)"]
    # model negatives: items 0-11 and the non-person 40 (13); dropped at cap 0; truly negative: 0-9
    assert g == {"n": 41, "neg": 10, "kept": 28, "kept_neg": 0, "dropped": 13, "dropped_not_neg": 3}
    assert sum(truly_negative(p) for p in pairs) == 10
    est = estimates(stats.to_dict(), Calibration.identity())["pooled"]
    rows = {r["quantity"]: r for r in cells(est, g, 0.0)}
    wrong = rows["dropped not negative, cap 0"]
    assert wrong["gold"] == 3 and wrong["covered"] == (wrong["low"] <= 3 <= wrong["high"])
    share = rows["negative share after cap 0"]
    assert share["gold"] == 0.0 and share["model"] == 0.0


def test_docs_and_card_show_the_validation_tables_of_the_committed_run() -> None:
    val = json.loads(VALIDATION.read_text(encoding="utf-8"))
    docs = (ROOT / "docs/estimates.md").read_text(encoding="utf-8")
    card = (ROOT / "fairstream/data/models/joint-v6-cascade/MODEL_CARD.md").read_text(encoding="utf-8")
    for line in coverage_table(val) + validation_table(val):
        assert line in docs and line in card, line
    assert (ROOT / "fairstream/data/models/joint-v6-cascade/reliability.png").stat().st_size > 10_000


def test_a_card_spec_without_calibration_is_refused(tmp_path: Path) -> None:
    from export.model_card import build

    spec = tmp_path / "m.toml"
    spec.write_text(
        'model = "fairstream/data/models/joint-v6"\n[[unseen_sets]]\nset = "s"\nn = 1\nregard_macro_f1 = 0.5\n'
        'negative_f1 = 0.5\nwsd_kappa = 0.5\nmeasured = "now"\n',
        encoding="utf-8",
    )
    with pytest.raises(SystemExit, match="give calibration and estimates"):
        build(spec)


def test_eval_keywords_scores_each_half_class_and_keyword() -> None:
    from export.eval_keywords import evaluate

    split = {"train": ["gay"], "heldout": ["old"]}
    pairs = [
        LabelledPair(
            "a", MentionInput("Some gay men.", 5, 8, "gay", "g"), "sexual orientation", "yes", "neutral"
        ),
        LabelledPair("b", MentionInput("A gay party.", 2, 5, "gay", "g"), "sexual orientation", "no", None),
        LabelledPair("c", MentionInput("Old people.", 0, 3, "old", "g"), "age", "yes", "negative"),
        LabelledPair("d", MentionInput("An old house.", 3, 6, "old", "g"), "age", "no", None),
        LabelledPair("e", MentionInput("Vegan food.", 0, 5, "vegan", "g"), "dietary habits", "no", None),
    ]
    preds = [_pred(0.1), _pred(0.1), _pred(0.9), _pred(0.2), _pred(0.1, person=False)]
    out = evaluate(pairs, preds, split)
    assert set(out["halves"]) == {"train", "heldout", "other"}
    assert out["halves"]["train"]["(all)"]["n"] == 2 and out["halves"]["heldout"]["age"]["n"] == 2
    assert out["keywords"]["gay"] == {
        "half": "train",
        "class": "sexual orientation",
        "pairs": 2,
        "gold_person_share": 0.5,
        "model_person_share": 1.0,
        "wsd_accuracy": 0.5,
    }
    assert out["keywords"]["vegan"]["half"] == "other" and out["keywords"]["vegan"]["wsd_accuracy"] == 1.0
    assert "axes" not in out
    by_axis = evaluate(pairs, preds, split, {"gay": "sexual_orientation", "old": "age"})["axes"]
    assert by_axis["train"]["sexual_orientation"]["n"] == 2 and by_axis["heldout"]["age"]["n"] == 2
    assert by_axis["other"] == {"(none)": by_axis["other"]["(none)"]} and by_axis["other"]["(none)"]["n"] == 1


def test_card_lists_the_new_keywords_weakest_first(tmp_path: Path) -> None:
    from export.keywords_card import keywords_section

    half = {
        "(all)": {
            "n": 3,
            "wsd_kappa": 0.5,
            "regard_macro_f1": None,
            "negative_precision": None,
            "negative_recall": None,
        }
    }
    kw = {"pairs": 20, "class": "age", "half": "train", "gold_person_share": 0.5, "model_person_share": 0.5}
    data = {
        "halves": {"train": half, "heldout": half},
        "keywords": {
            "old": {**kw, "wsd_accuracy": 0.7},
            "elderly": {**kw, "wsd_accuracy": 0.9},
            "rare": {**kw, "pairs": 2, "wsd_accuracy": 0.0},
        },
    }
    path = tmp_path / "k.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    lines = keywords_section(path, shown="export/sweeps/k.json")
    rows = [ln for ln in lines if ln.startswith("| old ") or ln.startswith("| elderly ")]
    assert rows[0].startswith("| old ") and rows[1].startswith("| elderly ")  # weakest first
    assert "| train | 3 | 0.500 | - | - / - |" in lines
    assert lines[-1] == "Fewer than 15 pairs (not ranked): rare." and "`export/sweeps/k.json`" in lines[3]
    card = (ROOT / "fairstream/data/models/joint-v6-cascade/MODEL_CARD.md").read_text(encoding="utf-8")
    assert "## taxonomy-v2's new keywords: which ones this model can tell apart" in card
    assert not any(ln.startswith("Per HolisticBias axis") for ln in lines)  # no axes in the file: no table
    # axes, and round 31's unseen pairs of train-half keywords as a row of their own
    axis = {"n": 20, "wsd_kappa": 0.25, "regard_macro_f1": 0.75}
    path.write_text(
        json.dumps({**data, "axes": {"train": {"age": axis, "tiny": {**axis, "n": 3}}}}), encoding="utf-8"
    )
    unseen = tmp_path / "u.json"
    unseen.write_text(
        json.dumps({"halves": {"train": {"(all)": {**half["(all)"], "n": 7}}}}), encoding="utf-8"
    )
    lines = keywords_section(path, unseen_pairs=(unseen, "export/sweeps/u.json"))
    assert "| train, unseen pairs (round 31, `export/sweeps/u.json`) | 7 | 0.500 | - | - / - |" in lines
    assert "| train | age | 20 | 0.250 | 0.750 |" in lines and not any("| tiny |" in ln for ln in lines)
    assert "| train, unseen pairs (round 31" in card and "| heldout | sexual_orientation |" in card
