"""One generator writes every shipped model's card from its spec (export/cards/*.toml)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from export.model_card import ROOT, SPECS, Spec, build, main
from fairstream.models.card import model_quality, unseen_sets

MODELS = ROOT / "fairstream" / "data" / "models"
SHIPPED = sorted(p.parent.name for p in MODELS.glob("*/config.json"))


def _needs_dev(spec: Path) -> None:
    s = Spec(spec)
    dev = s.file(s.get("dev", "../shared/data/labels/dev.jsonl"))
    if s.get("cv") and not dev.is_file():
        pytest.skip(f"{spec.name}: its cross-validation table scores {dev} (not here)")


def test_every_shipped_model_has_a_spec_and_no_shell_script_is_left():
    assert SHIPPED and sorted(p.stem for p in SPECS.glob("*.toml")) == SHIPPED
    assert not list((ROOT / "export" / "tools").glob("make_card_*.sh"))
    assert not (ROOT / "export" / "tools" / "card_rows.py").exists()


@pytest.mark.parametrize("model", SHIPPED)
def test_each_committed_card_is_its_spec_regenerated_byte_for_byte(model: str, tmp_path: Path, monkeypatch):
    spec = SPECS / f"{model}.toml"
    _needs_dev(spec)
    out = tmp_path / "MODEL_CARD.md"
    monkeypatch.setattr(sys, "argv", ["model_card", "--spec", str(spec), "--out", str(out)])
    main()
    card = MODELS / model / "MODEL_CARD.md"
    assert build(spec)[0] == card
    assert out.read_bytes() == card.read_bytes(), (
        f"run: python -m export.model_card --spec {spec.relative_to(ROOT)}"
    )


@pytest.mark.parametrize("model", SHIPPED)
def test_each_card_states_quality_as_the_range_over_its_specs_unseen_sets(model: str):
    rows = Spec(SPECS / f"{model}.toml").unseen_sets()
    assert len(rows) >= 5
    parsed = unseen_sets(MODELS / model)
    # the card's table, weakest first, is the spec's rows with their sizes
    assert [(r["set"], r["pairs"], r["regard_macro_f1"]) for r in parsed] == [
        (r["set"], r["n"], round(r["regard_macro_f1"], 3)) for r in rows
    ]
    q = model_quality(MODELS / model)
    assert q is not None and q["regard_macro_f1"] == parsed[0]["regard_macro_f1"]
    assert q["range"]["regard_macro_f1"] == [parsed[0]["regard_macro_f1"], parsed[-1]["regard_macro_f1"]]


def test_placeholders_are_filled_from_the_named_comparison(tmp_path: Path):
    import json

    cmp = {
        "a": "old", "b": "new",
        "all": {"n": 10, **{k: {"a": 0.5, "b": 0.625, "b_minus_a": 0.125, "ci95": [-0.01, 0.25]}
                            for k in ("wsd_kappa", "regard_macro_f1", "negative_f1", "negative_precision",
                                      "negative_recall")}},
    }  # fmt: skip
    (tmp_path / "cmp.json").write_text(json.dumps(cmp))
    (tmp_path / "spec.toml").write_text('model = "m"\n')
    spec = Spec(tmp_path / "spec.toml", root=tmp_path)
    assert spec.render("k {{score cmp.json wsd_kappa}}.") == "k 0.625."
    assert spec.render("{{diff cmp.json negative_precision}}") == "negative precision +0.125 (-0.010, 0.250)"
    assert spec.render("{{diff cmp.json}}").count("(-0.010, 0.250)") == 5
    with pytest.raises(SystemExit, match="unknown placeholder"):
        spec.render("{{nope cmp.json}}")
    # a comparison without random items (the judges) is a row all the same
    assert spec.render("{{unseen_sets_table}}").startswith("| set | pairs |")
