"""Reading the answer out of a chat reply (``parse_answer``: tolerant of markdown, quotes, JSON and trailing text)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from fairstream.annotate.prompts import REGARD_ANSWERS, WSD_ANSWERS

_MARKDOWN = re.compile(r"[*`#~]+|(?<!\w)_+|_+(?!\w)")  # emphasis, code, headings; not snake_case


_OPEN_QUOTES = "\"'“”‘’«»„‚(\\["


_JSON_OBJECT = re.compile(r"\{[^{}]*\}")


_JSON_KEYS = ("answer", "final_answer", "label", "result", "wsd", "regard")


_FINAL_LINE_PREFIX = (
    r"(?:(?:therefore|thus|so|hence|final|finally|final answer|verdict|label|answer)[\s,:\-–—]*)?"
)


def _choice_group(choices: Sequence[str]) -> str:
    return "(" + "|".join(re.escape(c) for c in choices) + ")"


def parse_answer(reply: str | None, choices: Sequence[str]) -> str | None:
    """Read the final answer out of a model reply; ``None`` when there is none.

    Markdown emphasis and code marks are ignored, matching is case-insensitive, and quotes or
    brackets around the answer are allowed. In order of preference:

    1. the last statement of the answer, "answer is X", "answer: X", "answer would be X" or a JSON
       object such as ``{"answer": "X"}``, whichever comes last in the reply (text after it is
       ignored; an echoed choice list such as "yes/no" is not an answer);
    2. a last line that is only the answer, optionally after "Therefore," or "Final answer:".

    Args:
        reply: The model's reply (``None`` or empty gives ``None``).
        choices: The allowed answers, lowercase (``WSD_ANSWERS`` or ``REGARD_ANSWERS``).

    Returns:
        The answer as one of ``choices``, or ``None`` if the reply states none.
    """
    if not reply:
        return None
    lowered = tuple(c.lower() for c in choices)
    text = _MARKDOWN.sub("", reply)
    group = _choice_group(lowered)
    quotes = re.escape(_OPEN_QUOTES)
    stated = re.compile(
        r"\banswers?\b[\"'”’]?\s*"
        r"(?:(?:is|would be|will be|should be|must be)\b)?\s*[:=\-–—]?\s*"
        r"(?:(?:most\s+)?(?:likely|probably|clearly|definitely|simply)\b)?"
        rf"[{quotes}\s]*{group}\b(?!\s*(?:/|\||\bor\b|,\s*{group}\b))",
        re.IGNORECASE,
    )
    found: list[tuple[int, str]] = [(m.end(), m.group(1).lower()) for m in stated.finditer(text)]
    for m in _JSON_OBJECT.finditer(text):
        answer = _json_answer(m.group(0), lowered)
        if answer is not None:
            found.append((m.end(), answer))
    if found:
        return max(found)[1]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines:
        final = re.fullmatch(
            rf"{_FINAL_LINE_PREFIX}[{quotes}\s]*{group}[\"'”’)\]\s]*[.!]?[\"'”’)\]\s]*",
            lines[-1],
            re.IGNORECASE,
        )
        if final is not None:
            return final.group(1).lower()
    return None


def _json_answer(candidate: str, choices: Sequence[str]) -> str | None:
    try:
        obj = json.loads(candidate)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    for key, value in obj.items():
        if isinstance(key, str) and key.lower() in _JSON_KEYS and isinstance(value, str):
            answer = value.strip().strip(".").lower()
            if answer in choices:
                return answer
    return None


def parse_wsd(reply: str | None) -> str | None:
    """The WSD answer (``yes``, ``no`` or ``unsure``) of a reply, or ``None``."""
    return parse_answer(reply, WSD_ANSWERS)


def parse_regard(reply: str | None) -> str | None:
    """The regard answer (``positive``, ``negative`` or ``neutral``) of a reply, or ``None``."""
    return parse_answer(reply, REGARD_ANSWERS)
