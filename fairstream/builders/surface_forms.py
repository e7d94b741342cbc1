"""Surface forms of a replaced word: its casing and the indefinite article before it (shared by the builders)."""

from __future__ import annotations

import re


def match_case(target: str, surface: str) -> str:
    """Write ``target`` in the casing style of ``surface``: UPPER, Title (per word), Capitalized or lower."""
    letters = [c for c in surface if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return target.upper()
    if surface[:1].isupper():  # "Muslim" -> "Native American": a capitalized name capitalizes every word
        return " ".join(w[:1].upper() + w[1:] for w in target.split(" "))
    return target


# "a" before these vowel letters (a consonant sound), "an" before these silent h's
_A_BEFORE = re.compile(r"^(?:uni|uk|use|usu|ura|uro|ure|uti|eu|ewe|one\b|once)", re.IGNORECASE)


_AN_BEFORE = re.compile(r"^(?:hour|honest|honou?r|heir)", re.IGNORECASE)


def indefinite_article(word: str) -> str:
    """``"a"`` or ``"an"`` for the word that follows (spelling rules with the common exceptions)."""
    if _AN_BEFORE.match(word):
        return "an"
    if word[:1].lower() in "aeiou" and not _A_BEFORE.match(word):
        return "an"
    return "a"


ARTICLE_BEFORE = re.compile(r"(?<!\w)(an?)(\s+)$", re.IGNORECASE)


def case_like(word: str, like: str) -> str:
    """``word`` with a capital first letter when ``like`` has one (the case of a one-letter article)."""
    return word[:1].upper() + word[1:] if like[:1].isupper() else word
