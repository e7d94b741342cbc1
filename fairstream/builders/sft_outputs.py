"""The files of the SFT builder: its checkpoint (``pairs.jsonl``), the training records built from it and the run's result."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairstream.builders.records import BuilderConfigError, with_provenance
from fairstream.builders.story_pairs import (
    SFT_QUESTION,
    swap_map,
    swap_text,
)

BUILDER = "exploratory-sft"


CHECKPOINT = "pairs.jsonl"


REJECTION_REASONS = (
    "pair_unparsed",
    "rouge_out_of_range",
    "duplicate_story",
    "stance_unparsed",
    "same_stance",
    "judgment_unparsed",
    "judgment_not_neutral",
)


OUTPUT_FILES = ("sft", "sft_messages", "dpo", "dpo_messages", "cda", "cda_messages")


def read_checkpoint(path: Path) -> list[dict[str, Any]]:
    """The records of a checkpoint file (after ``prepare_output`` dropped a cut-off last line)."""
    from fairstream.io import read_jsonl

    return list(read_jsonl(path)) if path.exists() else []


def training_records(kept: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The SFT, DPO and CDA records (both TRL formats each) of kept checkpoint records."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in OUTPUT_FILES}
    for rec in kept:
        sides = {g: rec[g] for g in ("male", "female")}
        prompts = {g: f"{s['story']}\n\n{SFT_QUESTION}" for g, s in sides.items()}
        originals = {g: _judgment_text(s) for g, s in sides.items()}
        for g, s in sides.items():
            base = {k: v for k, v in rec["provenance"].items() if k != "source_item"}
            prov = {"source": rec["source"], "builder": BUILDER, "pair": rec["uid"], "side": g, **base}
            user = [{"role": "user", "content": prompts[g]}]
            neutral = s["neutral_explanation"]
            other = "female" if g == "male" else "male"
            swapped = swap_text(originals[other], swap_map(sides[other]["story"], s["story"]))
            rows: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
                ("sft", {"prompt": prompts[g], "completion": neutral}, {}),
                ("sft_messages", {"messages": [*user, {"role": "assistant", "content": neutral}]}, {}),
                ("dpo", {"prompt": prompts[g], "chosen": neutral, "rejected": originals[g]}, {}),
                (
                    "dpo_messages",
                    {
                        "prompt": user,
                        "chosen": [{"role": "assistant", "content": neutral}],
                        "rejected": [{"role": "assistant", "content": originals[g]}],
                    },
                    {},
                ),
            ]
            for kind, completion in (("original", originals[g]), ("swapped", swapped)):
                rows.append(("cda", {"prompt": prompts[g], "completion": completion}, {"cda": kind}))
                rows.append(
                    (
                        "cda_messages",
                        {"messages": [*user, {"role": "assistant", "content": completion}]},
                        {"cda": kind},
                    )
                )
            for name, row, extra in rows:
                out[name].append(with_provenance(row, **prov, **extra))
    return out


def _judgment_text(side: dict[str, Any]) -> str:
    explanation = (side.get("explanation") or "").strip()
    return f"{side['stance']}. {explanation}" if explanation else f"{side['stance']}."


@dataclass
class BuildResult:
    """What a run did and what the output folder now holds."""

    this_run: dict[str, int]
    total: dict[str, int]
    rejected: dict[str, int]
    outputs: dict[str, int]
    paths: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict (the ``stats.json`` content without settings)."""
        return {
            "this_run": self.this_run,
            "total": self.total,
            "rejected": self.rejected,
            "outputs": self.outputs,
            "paths": self.paths,
        }


def check_settings(out_dir: Path, settings: dict[str, Any], has_records: bool) -> None:
    """Refuse to mix runs with other settings in one folder; a folder without records is free."""
    from fairstream.io import write_json

    path = out_dir / "settings.json"
    if path.exists() and has_records:
        old = json.loads(path.read_text(encoding="utf-8"))
        diff = {k: (old.get(k), v) for k, v in settings.items() if old.get(k) != v}
        if diff:
            raise BuilderConfigError(
                f"{out_dir} holds a run with other settings {diff} (old, new); resume with the same "
                "settings or write to another --output folder"
            )
    else:
        write_json(path, settings)


def format_build_result(result: BuildResult) -> str:
    """A few lines for the terminal: kept pairs, rejections by reason, files written."""
    lines = [
        f"this run: {result.this_run['attempts']} attempts, {result.this_run['kept']} kept; "
        f"folder: {result.total['attempts']} attempts, {result.total['kept']} kept pairs",
        "rejected (folder): " + ", ".join(f"{k}={v}" for k, v in result.rejected.items()),
    ]
    lines += [f"wrote {result.outputs[name]:>4} records to {path}" for name, path in result.paths.items()]
    return "\n".join(lines)
