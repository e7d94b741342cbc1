"""The items of the SFT builder: story pairs to generate (``generation_item``) or read from a file (``read_story_items``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.builders.genmo import STANCES
from fairstream.builders.records import BuilderConfigError
from fairstream.builders.story_pairs import (
    FEMALE_NAMES,
    MALE_NAMES,
    SETTINGS,
    STORY_PAIR_PROMPT,
    THEMES,
)
from fairstream.errors import ShardError


@dataclass
class Side:
    """One story of a pair with the model's stance and the judgments."""

    story: str
    character_name: str | None = None
    stance: str | None = None
    explanation: str | None = None
    neutral_explanation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The paper's per-side record (``story``, ``character_name``, ``stance``, ...)."""
        return {
            "story": self.story,
            "character_name": self.character_name,
            "stance": self.stance,
            "explanation": self.explanation,
            "neutral_explanation": self.neutral_explanation,
        }


@dataclass
class Item:
    """One attempt: a prompt to generate a pair from, or a pair read from a file."""

    uid: str
    source: str
    prompt: str | None = None
    hints: dict[str, str] = field(default_factory=dict)
    male: Side | None = None
    female: Side | None = None
    eval_set: str | None = None


def generation_item(index: int, seed: int) -> Item:
    """The ``index``-th generation attempt: setting, theme and names drawn from ``(seed, index)``."""
    rng = np.random.default_rng([seed, index])
    hints = {
        "setting": SETTINGS[int(rng.integers(len(SETTINGS)))],
        "theme": THEMES[int(rng.integers(len(THEMES)))],
        "male_name": MALE_NAMES[int(rng.integers(len(MALE_NAMES)))],
        "female_name": FEMALE_NAMES[int(rng.integers(len(FEMALE_NAMES)))],
    }
    return Item(
        uid=f"gen-{index}", source=f"generated:{index}", prompt=STORY_PAIR_PROMPT.format(**hints), hints=hints
    )


def _looks_like_genmo(path: Path, rec: dict[str, Any]) -> bool:
    return "genmo" in path.name.lower() or ({"male_story", "female_story", "environment"} <= set(rec))


def read_story_items(path: str | Path, *, allow_eval_data: bool = False) -> list[Item]:
    """Story pairs from a file (a JSON list, or JSON lines).

    Records are GenMO-style ``{"male_story", "female_story"}`` or the paper's ``{"male": {"story",
    "character_name", ...}, "female": ...}``; stances, explanations and neutral explanations found
    there are used, not asked again.

    Raises:
        ShardError: A record lacks the stories; the message names ``file`` and the record.
        BuilderConfigError: The file is the GenMO evaluation set and ``allow_eval_data`` is off.
    """
    path = Path(path)
    if not path.is_file():
        raise ShardError(f"{path}: stories file not found")
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ShardError(f"{path}: not a JSON file ({exc}); give a JSON list or JSON lines") from None
        if not isinstance(data, list):
            raise ShardError(f"{path}: expected a JSON list of story pairs, got {type(data).__name__}")
        records: list[Any] = data
    else:
        from fairstream.io import read_jsonl

        records = list(read_jsonl(path))
    items = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(records):
        where = f"{path}: pair {i}"
        if not isinstance(rec, dict):
            raise ShardError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        sides = []
        for gender in ("male", "female"):
            nested = rec.get(gender)
            if isinstance(nested, dict):
                side = Side(
                    story=nested.get("story") or "",
                    character_name=nested.get("character_name"),
                    stance=nested.get("stance"),
                    explanation=nested.get("explanation"),
                    neutral_explanation=nested.get("neutral_explanation"),
                )
            else:
                side = Side(story=rec.get(f"{gender}_story") or "", character_name=rec.get(f"{gender}_name"))
            if not isinstance(side.story, str) or not side.story.strip():
                raise ShardError(
                    f"{where}: needs a non-empty '{gender}_story' (or '{gender}': {{'story': ...}})"
                )
            if side.stance is not None and side.stance not in STANCES:
                raise ShardError(f"{where}: {gender} stance {side.stance!r} is not one of {STANCES}")
            sides.append(side)
        eval_set = "GenMO" if _looks_like_genmo(path, rec) else None
        if eval_set and not allow_eval_data:
            raise BuilderConfigError(
                f"{path} looks like the GenMO evaluation set, which must never be used for training; "
                "pass --allow-eval-data only to test the pipeline (the records are marked eval_set=GenMO)"
            )
        key = rec.get("id", i)
        if f"{path.name}:{key}" in seen:
            raise ShardError(
                f"{where}: id {key!r} repeats pair {seen[f'{path.name}:{key}']}; ids must be unique"
            )
        seen[f"{path.name}:{key}"] = i
        items.append(
            Item(
                uid=f"{path.name}:{key}",
                source=f"{path.name}:{key}",
                male=sides[0],
                female=sides[1],
                eval_set=eval_set,
            )
        )
    return items
