"""Regard labels of the counts and the attributes a sentence is counted under (its most negative regard)."""

from __future__ import annotations

from collections.abc import Iterable

from fairstream.core.schema import REGARDS_POSITIVE_FIRST

REGARDS = REGARDS_POSITIVE_FIRST  # the report's column order
UNKNOWN_REGARD = "unknown"  # person mentions whose regard is null in the annotation
REGARD_LABELS = (*REGARDS, UNKNOWN_REGARD)
WHICH = ("kept", "all")  # which sentences of a document are counted: the kept ones or all

Key = tuple[str, str, str]  # (attribute class, keyword, regard label)

# a sentence's regard toward an attribute is its most negative mention's (as in the cap controller)
_REGARD_RANK = {"negative": 0, "positive": 1, "neutral": 2, UNKNOWN_REGARD: 3}


def parse_attributes(attributes: Iterable[tuple[str, str, str | None]]) -> dict[Key, int]:
    """One ``(class, keyword, regard label)`` per attribute with its number of mentions."""
    by_attr: dict[tuple[str, str], tuple[str, int]] = {}
    for item in attributes:
        try:
            cls_name, keyword, regard = item
        except (TypeError, ValueError):
            raise ValueError(f"attribute {item!r} must be a (class, keyword, regard) tuple") from None
        label = UNKNOWN_REGARD if regard is None else regard
        if label not in REGARD_LABELS:
            raise ValueError(f"regard={regard!r} of {keyword!r} is not one of {(*REGARDS, None)}")
        attr = (str(cls_name), str(keyword))
        best, n = by_attr.get(attr, (label, 0))
        by_attr[attr] = (min(best, label, key=_REGARD_RANK.__getitem__), n + 1)
    return {(c, k, r): n for (c, k), (r, n) in by_attr.items()}
