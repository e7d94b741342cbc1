from __future__ import annotations

from pathlib import Path

from fairstream.models.card import model_quality
from fairstream.models.runtime import default_model_dir


def test_quality_of_the_shipped_model_is_read_from_its_card():
    q = model_quality(default_model_dir())
    assert q is not None
    card = (default_model_dir() / "MODEL_CARD.md").read_text(encoding="utf-8")
    # the first "mean" row is the held-out estimate; its numbers are in the card as written
    assert "Held out" in q["source"]
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
