"""Write a shipped model's MODEL_CARD.md from its spec: one generator for every card.

    python -m export.model_card                                  # every export/cards/*.toml
    python -m export.model_card --spec export/cards/joint-v6.toml [--out /tmp/card.md]
    python -m export.model_card --check                          # exit 1 if a committed card is out of date

A spec (TOML, export/cards/README.md) names the model folder and every input the card reads: the
committed paired comparisons (``export/gpu/compare_models_heldout.py --json``) under export/sweeps,
``export.sweep`` results, ``export.train --dev-folds`` run folders, ``export.decision_rule --json``,
benchmarks/results files, and the notes text, whose ``{{diff FILE}}`` / ``{{score FILE METRIC}}`` /
``{{speed MODEL BASELINE}}`` placeholders are filled from those files. Every card states quality as the
range over every unseen labelled set (``unseen_sets``: the table ``fairstream.models.card`` reads). A spec
with ``template`` fills a hand-written Markdown card's placeholders instead (the cascade's).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from export.card_spec import ROOT, SPECS, Spec
from export.card_tables import HEADER, fmt_metrics
from export.dev_card import (
    cv_section,
    decision_rule_section,
    fold_predictions,
    load_dev,
    pool_folds,
    sweep_folds,
    sweep_rows,
)
from export.standard_card import limits_lines, regard_rule_line, standard_card, unseen_section

# The generator's parts live in card_spec (the spec and its placeholders), card_inputs (the result files it
# cites), card_tables, dev_card and standard_card (the sections); this module builds and writes the cards.
# The names below stay importable from here for export/cv/score_cv.py and the tests.
__all__ = [
    "HEADER",
    "ROOT",
    "SPECS",
    "Spec",
    "build",
    "cv_section",
    "decision_rule_section",
    "fmt_metrics",
    "fold_predictions",
    "limits_lines",
    "load_dev",
    "main",
    "pool_folds",
    "regard_rule_line",
    "sweep_folds",
    "sweep_rows",
    "unseen_section",
]


def build(spec_path: Path, root: Path = ROOT) -> tuple[Path, str]:
    """The card a spec describes: (where it belongs, its text). A spec with ``template`` fills that Markdown
    file's placeholders (a card written by hand around generated tables); otherwise ``standard_card``."""
    spec = Spec(spec_path, root)
    card = spec.file(spec.get("model")) / "MODEL_CARD.md"
    if not spec.get("unseen_sets"):
        raise SystemExit(
            f"{spec_path}: every card states quality over every unseen labelled set (unseen_sets)"
        )
    calibrated = bool(spec.get("calibration") and spec.get("estimates"))
    if not calibrated and not spec.get("no_calibration_reason"):
        raise SystemExit(
            f"{spec_path}: give calibration and estimates (python -m export.calibrate --json, python -m "
            "export.validate_estimates --json: export/README.md, 'Calibration') or no_calibration_reason"
        )
    if template := spec.get("template"):
        return card, spec.render(spec.file(template).read_text(encoding="utf-8"))
    return card, standard_card(spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--spec",
        type=Path,
        nargs="*",
        default=None,
        help=f"card specs (default: every {SPECS.relative_to(ROOT)}/*.toml)",
    )
    ap.add_argument(
        "--out", type=Path, default=None, help="write here instead of the model's MODEL_CARD.md (one spec)"
    )
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a committed card differs")
    args = ap.parse_args()
    specs = args.spec or sorted(SPECS.glob("*.toml"))
    if args.out and len(specs) != 1:
        raise SystemExit("--out takes one --spec")
    stale = []
    for spec_path in specs:
        card, text = build(spec_path)
        if args.check:
            if not card.is_file() or card.read_text(encoding="utf-8") != text:
                stale.append(str(card))
            continue
        out = args.out or card
        out.write_text(text, encoding="utf-8")
        print(f"{spec_path} -> {out}")
        estimates = Spec(spec_path).get("estimates")
        if estimates and "](reliability.png)" in text:  # the figure the card shows, beside it
            from export.estimates_card import draw_reliability

            draw_reliability(ROOT / estimates, out.parent / "reliability.png")
    if stale:
        raise SystemExit(f"out of date (python -m export.model_card): {', '.join(stale)}")


if __name__ == "__main__":
    main()
