"""``Annotator``: asks one item's two questions, following up unparsed replies, and counts the outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fairstream.annotate.answers import parse_answer
from fairstream.annotate.prompts import (
    RAW_SEPARATOR,
    REGARD_ANSWERS,
    WSD_ANSWERS,
    format_regard_prompt,
    format_retry_prompt,
    format_wsd_prompt,
)
from fairstream.llm import (
    AnnotationConfigError,
    ChatBackend,
    Message,
)


@dataclass(frozen=True)
class AnnotationItem:
    """One (sentence, keyword) pair to label."""

    uid: str
    text: str
    keyword: str
    gloss: str


@dataclass
class AnnotationCounts:
    """What a run did; counts add (``a + b``) and serialize with ``to_dict``."""

    done: int = 0
    skipped_existing: int = 0
    unparsed: int = 0
    retried: int = 0

    def __add__(self, other: AnnotationCounts) -> AnnotationCounts:
        return AnnotationCounts(
            self.done + other.done,
            self.skipped_existing + other.skipped_existing,
            self.unparsed + other.unparsed,
            self.retried + other.retried,
        )

    def to_dict(self) -> dict[str, int]:
        """The counts as a plain dict."""
        return {
            "done": self.done,
            "skipped_existing": self.skipped_existing,
            "unparsed": self.unparsed,
            "retried": self.retried,
        }


class Annotator:
    """Asks a backend the WSD question and, on "yes", the regard question for each item.

    Args:
        backend: The chat model.
        retries: How many times a reply without a parsable answer is followed up with
            ``RETRY_PROMPT`` (in the same conversation) before the answer is left ``None``.
    """

    def __init__(self, backend: ChatBackend, retries: int = 3) -> None:
        if retries < 0:
            raise AnnotationConfigError(f"retries={retries!r} must be >= 0")
        self.backend, self.retries = backend, retries
        self.counts = AnnotationCounts()

    def _ask(self, prompt: str, choices: Sequence[str]) -> tuple[str | None, str]:
        messages: list[Message] = [{"role": "user", "content": prompt}]
        reply = self.backend.chat(messages)
        replies = [reply]
        answer = parse_answer(reply, choices)
        for _ in range(self.retries):
            if answer is not None:
                break
            self.counts.retried += 1
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": format_retry_prompt(choices)},
            ]
            reply = self.backend.chat(messages)
            replies.append(reply)
            answer = parse_answer(reply, choices)
        if answer is None:
            self.counts.unparsed += 1
        return answer, RAW_SEPARATOR.join(replies)

    def annotate(self, item: AnnotationItem) -> dict[str, Any]:
        """The output record ``{"uid", "wsd", "regard", "wsd_raw", "regard_raw", "model"}`` of one item."""
        wsd, wsd_raw = self._ask(format_wsd_prompt(item.text, item.keyword, item.gloss), WSD_ANSWERS)
        regard: str | None = None
        regard_raw: str | None = None
        if wsd == "yes":
            regard, regard_raw = self._ask(
                format_regard_prompt(item.text, item.keyword, item.gloss), REGARD_ANSWERS
            )
        self.counts.done += 1
        return {
            "uid": item.uid,
            "wsd": wsd,
            "regard": regard,
            "wsd_raw": wsd_raw,
            "regard_raw": regard_raw,
            "model": self.backend.model_id,
        }
