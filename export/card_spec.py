"""A card spec (export/cards/<model>.toml, export/cards/README.md): one declarative file per shipped model
that names every input of its card, and fills the ``{{...}}`` placeholders of its text fields and template.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from export.card_inputs import (
    DIFF_NAMES,
    SPEED_RESULTS,
    TABLE_METRICS,
    diff_text,
    grid_offsets_text,
    rule_f_text,
    side,
    speed_text,
)
from export.card_tables import fmt_score

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "export" / "cards"
PLACEHOLDER = re.compile(r"\{\{(\w+)((?: [^ {}]+)*)\}\}")
UNSEEN_SETS_HEADER = (
    "| set | pairs | regard macro-F1 | negative F1 | WSD kappa | measured |\n|---|---|---|---|---|---|"
)


class Spec:
    """A card spec (TOML): paths in it are relative to the repository root ``root``."""

    def __init__(self, path: Path, root: Path = ROOT) -> None:
        self.path, self.root = path, root
        self.data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))

    def file(self, name: str) -> Path:
        return self.root / name

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def text(self, key: str) -> str:
        """A text field with its ``{{...}}`` placeholders filled in (``render``)."""
        return self.render(self.data.get(key, ""))

    def render(self, text: str) -> str:
        """Fill ``{{diff FILE [METRIC]}}``, ``{{score FILE METRIC}}``, ``{{speed MODEL BASELINE}}``,
        ``{{rule_f FILE}}``, ``{{grid_offsets FILE}}`` and ``{{unseen_sets_table}}`` (FILE: from the root)."""

        def fill(m: re.Match) -> str:
            name, args = m.group(1), m.group(2).split()
            if name == "diff" and len(args) in (1, 2):
                return diff_text(self.file(args[0]), tuple(args[1:]) or tuple(DIFF_NAMES))
            if name == "score" and len(args) == 2 and args[1] in TABLE_METRICS:
                return str(side(self.file(args[0]), "b")["all"][args[1]])
            if name == "speed" and len(args) == 2:
                return speed_text(args[0], args[1], self.file(SPEED_RESULTS))
            if name == "rule_f" and len(args) == 1:
                return rule_f_text(self.file(args[0]))
            if name == "grid_offsets" and len(args) == 1:
                return grid_offsets_text(self.file(args[0]))
            if name == "unseen_sets_table" and not args:
                return "\n".join(self.unseen_sets_table())
            if name == "estimates_section" and not args:
                return "\n".join(self.estimates_section()).strip("\n")
            if name == "keywords_section" and not args:
                return "\n".join(self.keywords_section()).strip("\n")
            raise SystemExit(f"{self.path}: unknown placeholder {m.group(0)!r}")

        return PLACEHOLDER.sub(fill, text)

    def unseen_sets(self) -> list[dict[str, Any]]:
        """The ``[[unseen_sets]]`` rows, weakest first by regard macro-F1: a comparison file's side, or numbers
        measured outside the repository (then the row gives them and says so in ``measured``)."""
        rows = []
        for row in self.get("unseen_sets", []):
            if "file" in row:
                numbers = side(self.file(row["file"]), row["side"])["all"]
            else:
                numbers = {k: row[k] for k in ("n", *TABLE_METRICS)}
            rows.append({"set": row["set"], "measured": row["measured"], **numbers})
        return sorted(rows, key=lambda r: r["regard_macro_f1"])

    def estimates_section(self) -> list[str]:
        """The calibration and estimates section (spec keys ``calibration`` and ``estimates``: the JSON of
        ``export.calibrate`` and ``export.validate_estimates``), or why the model ships none."""
        from export.estimates_card import calibration_section

        if not (self.get("calibration") and self.get("estimates")):
            return [
                "",
                "## Calibration and estimated true shares: not calibrated",
                "",
                "This model ships no calibration, so the filter's estimated true negative shares use its own "
                "probabilities and are labelled uncalibrated (docs/estimates.md: such intervals covered the truth "
                "in well under half of the validation cells). " + self.text("no_calibration_reason"),
            ]
        return calibration_section(self.file(self.get("calibration")), self.file(self.get("estimates")))

    def keywords_section(self) -> list[str]:
        """Per-keyword WSD on taxonomy-v2's new keywords (spec key ``keywords``: ``export.eval_keywords --json``)."""
        from export.keywords_card import keywords_section

        name, unseen = self.get("keywords"), self.get("keywords_unseen_pairs")
        if not name:
            return []
        return keywords_section(
            self.file(name), shown=name, unseen_pairs=(self.file(unseen), unseen) if unseen else None
        )

    def unseen_sets_table(self) -> list[str]:
        return [UNSEEN_SETS_HEADER] + [
            f"| {r['set']} | {r['n']} | {fmt_score(r['regard_macro_f1'])} | {fmt_score(r['negative_f1'])} | "
            f"{fmt_score(r['wsd_kappa'])} | {r['measured']} |"
            for r in self.unseen_sets()
        ]
