"""Examples of dropped sentences per attribute, collected by a stream hook for the report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULT_PER_ATTRIBUTE = 3
DEFAULT_MAX_CHARS = 200


def snippet(text: str, start: int, end: int, mark: tuple[int, int], max_chars: int) -> dict[str, Any]:
    """``text[start:end]`` on one line, cut to ``max_chars`` around ``mark`` (absolute offsets).

    Returns ``{"text", "mark"}`` with ``mark`` the marked span's offsets in the snippet.
    """
    a, b = mark[0] - start, mark[1] - start
    sentence = text[start:end]
    lo, hi = 0, len(sentence)
    if hi > max_chars:  # keep the mention, centred, and cut at word boundaries
        lo = max(0, min(a - (max_chars - (b - a)) // 2, hi - max_chars))
        hi = lo + max_chars
        if lo > 0:
            lo = sentence.find(" ", lo, a) + 1 or lo
        if hi < len(sentence):
            hi = sentence.rfind(" ", b, hi) if sentence.rfind(" ", b, hi) > 0 else hi
    prefix = "\u2026" if lo > 0 else ""
    suffix = "\u2026" if hi < len(sentence) else ""
    body = sentence[lo:hi]
    # one line: newlines and runs of spaces become one space (offsets shift only before the mark)
    head = " ".join((prefix + body[: a - lo]).split()) + (" " if body[: a - lo][-1:].isspace() else "")
    marked = " ".join(body[a - lo : b - lo].split())
    tail = (" " if body[b - lo : b - lo + 1].isspace() else "") + " ".join(body[b - lo :].split()) + suffix
    return {"text": head + marked + tail, "mark": [len(head), len(head) + len(marked)]}


class DroppedExamples:
    """Stream hook keeping the first ``per_attribute`` dropped sentences negative toward each attribute.

    A plain-dict value: ``to_dict()`` / ``from_dict()`` (the filter job saves it with its resume
    state). Sentences are cut to ``max_chars`` around the mention.
    """

    def __init__(
        self, per_attribute: int = DEFAULT_PER_ATTRIBUTE, max_chars: int = DEFAULT_MAX_CHARS
    ) -> None:
        if per_attribute < 1:
            raise ValueError(f"per_attribute={per_attribute} must be >= 1")
        if max_chars < 20:
            raise ValueError(f"max_chars={max_chars} must be >= 20")
        self.per_attribute, self.max_chars = per_attribute, max_chars
        self.examples: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, text: str, annotation: Mapping[str, Any]) -> None:
        """Collect from one document's annotation (the stream's hook signature)."""
        for sent in annotation.get("sentences", ()):
            if sent.get("kept", True):
                continue
            for m in sent.get("mentions", ()):
                if not (m.get("person") is True and m.get("regard") == "negative"):
                    continue
                found = self.examples.setdefault(m["keyword"], [])
                if len(found) >= self.per_attribute:
                    continue
                cut = snippet(text, sent["start"], sent["end"], (m["start"], m["end"]), self.max_chars)
                if any(e["text"] == cut["text"] for e in found):  # boilerplate repeated across documents
                    continue
                found.append(
                    {
                        "class": m.get("class"),
                        "id": annotation.get("id"),
                        "doc_index": annotation.get("doc_index"),
                        "start": sent["start"],
                        **cut,
                    }
                )

    def extend(self, other: DroppedExamples) -> None:
        """Add ``other``'s examples after these (as if its documents came next), up to the limit."""
        for kw, items in other.examples.items():
            found = self.examples.setdefault(kw, [])
            for e in items:
                if len(found) < self.per_attribute and all(f["text"] != e["text"] for f in found):
                    found.append(dict(e))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data."""
        return {"per_attribute": self.per_attribute, "max_chars": self.max_chars, "examples": self.examples}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DroppedExamples:
        """Inverse of ``to_dict``."""
        out = cls(
            int(data.get("per_attribute", DEFAULT_PER_ATTRIBUTE)),
            int(data.get("max_chars", DEFAULT_MAX_CHARS)),
        )
        out.examples = {k: [dict(e) for e in v] for k, v in data.get("examples", {}).items()}
        return out
