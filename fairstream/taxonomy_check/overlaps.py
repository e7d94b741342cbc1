"""Forms of one keyword that the matcher gives to another: warnings of ``fairstream taxonomy check``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from fairstream.detect import KeywordDetector, Mention
from fairstream.taxonomy import Taxonomy
from fairstream.taxonomy_check.problems import Problem


def form_derives(form: str, keyword: str) -> bool:
    """Whether ``form`` looks like a form of ``keyword``.

    One holds the other, or they share a stem of half the keyword, letters only ("non-binary" of
    "nonbinary", "women" of "woman").
    """
    f, k = re.sub(r"\W", "", form), re.sub(r"\W", "", keyword)
    if k in f or f in k:
        return True
    stem = 0
    for a, b in zip(f, k, strict=False):
        if a != b:
            break
        stem += 1
    return stem >= max(1, len(k) // 2)


def _other_keyword(form: str, keyword: str, keywords: set[str]) -> str | None:
    """Another keyword that ``form`` is (or is the plural of), when it does not derive from ``keyword``."""
    if form_derives(form, keyword):
        return None
    for base in (form, form.removesuffix("s"), form.removesuffix("es")):
        if base != keyword and base in keywords:
            return base
    return None


def _describe(mentions: Sequence[Mention]) -> str:
    return ", ".join(f"{m.surface!r} -> {m.keyword!r}" for m in mentions) or "nothing"


def _has_word_boundaries(text: str, start: int, end: int) -> bool:
    return (start == 0 or not _is_word(text[start - 1])) and (end == len(text) or not _is_word(text[end]))


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _examples(items: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def form_overlaps(taxonomy: Taxonomy, source: str) -> list[Problem]:
    """Warnings about forms that overlap, with what the matcher (``KeywordDetector``) does with them.

    One line per pair of keywords (or per keyword for variants):

    * forms inside multi-word forms of another keyword ("american" in "african-american"): the
      matcher gives the whole phrase to the longer form (longest form at a position wins);
    * forms that overlap another's across a word ("south-asian" and "asian-american" in
      "south-asian-american"): the leftmost form wins, the other loses the match;
    * variants of a multi-word form (spaces for hyphens or back, a plural "s") that are not forms
      of its keyword but that other keywords match in parts ("east-asians" -> "asians").
    """
    detector = KeywordDetector(taxonomy)
    forms = taxonomy.forms
    multi = [f for f in forms if re.search(r"\W", f)]
    inside: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (small kw, big kw) -> (small, big)
    for big in multi:
        owner = forms[big]
        for small, attr in forms.items():
            if attr.keyword == owner.keyword:
                continue
            start = big.find(small)
            while start >= 0 and not _has_word_boundaries(big, start, start + len(small)):
                start = big.find(small, start + 1)
            if start >= 0:
                inside.setdefault((attr.keyword, owner.keyword), []).append((small, big))
    problems: list[Problem] = []
    for (kw, big_kw), pairs in inside.items():
        attr, owner = taxonomy[kw], taxonomy[big_kw]
        example = pairs[0][1]
        problems.append(
            Problem(
                source,
                f"its forms occur inside forms of keyword {big_kw!r} ({owner.attribute_class}): "
                + _examples([f"{s!r} in {b!r}" for s, b in pairs])
                + f"; the matcher gives those phrases to {big_kw!r} (the longest form at a position "
                f"wins: in {example!r} it finds {_describe(detector.find(example))}), so {kw!r} does "
                "not count them",
                "fine if meant; else remove the forms from one of the two keywords",
                attr.attribute_class,
                kw,
                kind="overlap",
                severity="warning",
            )
        )
    # a word-suffix of one multi-word form that is a word-prefix of another form
    crossing: dict[tuple[str, str], list[tuple[str, list[Mention]]]] = {}
    for left in multi:
        left_kw = forms[left].keyword
        for m in re.finditer(r"\W", left):
            tail = left[m.end() :]
            for right, attr in forms.items():
                if attr.keyword == left_kw or len(right) <= len(tail) or not right.startswith(tail):
                    continue
                if _is_word(right[len(tail)]):
                    continue
                text = left + right[len(tail) :]
                found = detector.find(text)
                if not any(f.surface == right and f.keyword == attr.keyword for f in found):
                    crossing.setdefault((attr.keyword, left_kw), []).append((text, found))
    for (kw, left_kw), cases in crossing.items():
        attr = taxonomy[kw]
        text, found = cases[0]
        problems.append(
            Problem(
                source,
                f"its forms overlap forms of keyword {left_kw!r} across a word in {len(cases)} "
                f"phrase(s), e.g. {text!r}: the matcher finds {_describe(found)} (the leftmost form "
                f"wins), so {kw!r} loses the match",
                "fine if meant; else remove one of the forms",
                attr.attribute_class,
                kw,
                kind="overlap",
                severity="warning",
            )
        )
    variants: dict[str, dict[str, list[Mention]]] = {}  # keyword -> variant -> what the matcher finds
    for form in multi:
        attr = forms[form]
        candidates = {re.sub(r"\W+", " ", form), re.sub(r"\W+", "-", form)}
        if not form.endswith("s"):
            candidates.add(form + "s")
        for variant in sorted(candidates - set(forms)):
            found = detector.find(variant)
            if any(f.keyword != attr.keyword for f in found):
                variants.setdefault(attr.keyword, {})[variant] = found
    for kw, found_in in variants.items():
        attr = taxonomy[kw]
        shown = [f"{v!r} ({_describe(found)})" for v, found in found_in.items()]
        problems.append(
            Problem(
                source,
                "variants of its multi-word forms are not its forms, and other keywords match them: "
                + _examples(shown),
                f"add them to the forms of {kw!r} if they mean the same",
                attr.attribute_class,
                kw,
                kind="variant",
                severity="warning",
            )
        )
    return problems
