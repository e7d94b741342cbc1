"""The checks of a taxonomy file itself: the loader's errors, duplicates and glosses (``check_taxonomy``)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairstream.errors import TaxonomyError
from fairstream.taxonomy import (
    DEFAULT_TAXONOMY,
    EXTENDED_CLASSES,
    PAPER_CLASSES,
    Attribute,
    Taxonomy,
    taxonomy_path,
)
from fairstream.taxonomy_check.overlaps import _other_keyword, form_overlaps
from fairstream.taxonomy_check.problems import Problem, Severity

#: the first words of every gloss of taxonomy-v1
GLOSS_STARTS_V1 = ("who", "of")
#: the first words a gloss may have: v1's and those that read the same way after "a person"
GLOSS_STARTS = (*GLOSS_STARTS_V1, "whose", "with", "without", "from", "in", "living", "born")


# the file checked for a name or path is the one Taxonomy.load reads (kept under this name: it is public)
resolve_taxonomy_path = taxonomy_path


def shown_path(name_or_path: str | Path) -> str:
    """How messages name a taxonomy file: ``fairstream/data/NAME.json`` for a shipped name, else the path."""
    path = taxonomy_path(name_or_path)
    return f"fairstream/data/{path.name}" if path != Path(name_or_path) else str(path)


def check_taxonomy(path: str | Path) -> list[Problem]:
    """Every problem of the taxonomy file ``path`` (or shipped name): errors, then warnings."""
    source = shown_path(path)
    path = taxonomy_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [
            Problem(
                source, "taxonomy file not found", f"pass a JSON file or {DEFAULT_TAXONOMY!r}", kind="file"
            )
        ]
    except IsADirectoryError:
        return [Problem(source, "is a folder", "pass a taxonomy JSON file", kind="file")]
    except UnicodeDecodeError as exc:
        return [
            Problem(source, f"not UTF-8 ({exc.reason} at byte {exc.start})", "save it as UTF-8", kind="json")
        ]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [
            Problem(
                source,
                f"not valid JSON ({exc})",
                f"see fairstream/data/{DEFAULT_TAXONOMY}.json for the structure",
                kind="json",
            )
        ]
    return check_data(data, source=source)


def check_data(data: Any, *, source: str = "<dict>") -> list[Problem]:
    """Every problem of a taxonomy's JSON structure (``check_taxonomy`` without the file)."""
    problems: list[Problem] = []
    if not isinstance(data, Mapping):
        return [Problem(source, "top level must be an object with 'name' and 'classes'", kind="schema")]
    base = {k: v for k, v in data.items() if k != "classes"}
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(
            Problem(source, "'name' must be a non-empty string", f"e.g. {DEFAULT_TAXONOMY!r}", kind="schema")
        )
        base["name"] = "unnamed"
    extra = data.get("extra_classes", [])
    if not isinstance(extra, list) or not all(isinstance(c, str) for c in extra):
        problems.append(
            Problem(source, "'extra_classes' must be a list of class names", 'e.g. ["age"]', kind="schema")
        )
        extra = []
        base["extra_classes"] = []
    classes = data.get("classes")
    if not isinstance(classes, Mapping) or not classes:
        problems.append(
            Problem(
                source,
                "'classes' must be a non-empty object of class -> keyword list",
                f"see fairstream/data/{DEFAULT_TAXONOMY}.json",
                kind="schema",
            )
        )
        return problems
    allowed = set(PAPER_CLASSES) | set(EXTENDED_CLASSES) | set(extra)  # the loader's rule
    attrs: list[Attribute] = []
    for cls_name, items in classes.items():
        attrs += _check_class(str(cls_name), items, base, allowed, source, problems)
    for cls_name in extra:
        if cls_name not in classes:
            problems.append(
                Problem(
                    source,
                    "declared in 'extra_classes' but has no keywords",
                    "add its keywords under 'classes' or drop it from 'extra_classes'",
                    attribute_class=cls_name,
                    kind="empty-class",
                    severity="warning",
                )
            )
    unique = _check_duplicates(attrs, source, problems)
    keywords = {a.keyword for a in unique}
    for attr in unique:
        problem = gloss_problem(attr.gloss, attr.keyword)
        if problem is not None:
            text, fix, severity = problem
            problems.append(
                Problem(
                    source, text, fix, attr.attribute_class, attr.keyword, kind="gloss", severity=severity
                )
            )
        for form in attr.forms:
            other = _other_keyword(form, attr.keyword, keywords)
            if other is not None:
                problems.append(
                    Problem(
                        source,
                        f"form {form!r} looks like a form of keyword {other!r}, not of {attr.keyword!r}",
                        f"check it belongs to {attr.keyword!r}; else move it to {other!r}",
                        attr.attribute_class,
                        attr.keyword,
                        kind="form",
                        severity="warning",
                    )
                )
    if unique:
        problems += form_overlaps(Taxonomy("check", unique, source=source), source)
    if not any(p.severity == "error" for p in problems):
        # whatever else the loader refuses (a rule added after this checker) is reported too
        try:
            Taxonomy.from_dict(data, source=source)
        except TaxonomyError as exc:
            problems.append(Problem(source, _strip(str(exc), source), kind="schema"))
    problems.sort(key=lambda p: p.severity != "error")  # errors first, each kind in file order
    return problems


_LOADER_WHERE = re.compile(r"^(?:class '(?:[^'\\]|\\.)*' item \d+: |keyword '(?:[^'\\]|\\.)*' \([^)]*\): )")


def _strip(message: str, source: str) -> str:
    """A loader message without its ``FILE: class 'x' item 0:`` / ``keyword 'k' (class):`` prefix."""
    message = message.removeprefix(f"{source}: ")
    return _LOADER_WHERE.sub("", message, count=1)


def _check_class(
    cls_name: str,
    items: Any,
    base: dict[str, Any],
    allowed: set[str],
    source: str,
    problems: list[Problem],
) -> list[Attribute]:
    """The attributes of one class that the loader accepts alone; the loader's errors into ``problems``."""
    if cls_name not in allowed or not isinstance(items, list) or not items:
        # the loader's own message for an unknown or empty class
        try:
            Taxonomy.from_dict({**base, "classes": {cls_name: items}}, source=source)
        except TaxonomyError as exc:
            empty = isinstance(items, list) and not items
            problems.append(
                Problem(
                    source,
                    _strip(str(exc), source).replace(f"class {cls_name!r} ", "", 1),
                    "add keywords or remove the class" if empty else "",
                    attribute_class=cls_name,
                    kind="empty-class" if empty else "schema",
                )
            )
        if not isinstance(items, list):
            return []
    # each item alone through the loader (with its class allowed), so every bad item is reported
    item_base = {**base, "extra_classes": [*base.get("extra_classes", []), cls_name]}
    attrs = []
    for i, item in enumerate(items):
        keyword = item.get("keyword") if isinstance(item, Mapping) else None
        try:
            tax = Taxonomy.from_dict({**item_base, "classes": {cls_name: [item]}}, source=source)
        except TaxonomyError as exc:
            shown = keyword if isinstance(keyword, str) and keyword else None
            problems.append(
                Problem(source, _strip(str(exc), source), "", cls_name, shown, item=i, kind="schema")
            )
            continue
        attrs.append(next(iter(tax)))
    return attrs


def _check_duplicates(attrs: list[Attribute], source: str, problems: list[Problem]) -> list[Attribute]:
    """Duplicate keywords and forms into ``problems``; returns the attributes to check further.

    Those are the first entry of each keyword, without the forms another keyword already has.
    """
    seen: dict[str, Attribute] = {}
    owner: dict[str, Attribute] = {}
    unique: list[Attribute] = []
    for attr in attrs:
        first = seen.get(attr.keyword)
        if first is not None:
            where = (
                "listed twice in this class"
                if first.attribute_class == attr.attribute_class
                else f"already a keyword of class {first.attribute_class!r}"
            )
            problems.append(
                Problem(
                    source,
                    f"duplicate keyword: {where}",
                    "keep one entry (a keyword belongs to one class)",
                    attr.attribute_class,
                    attr.keyword,
                    kind="duplicate-keyword",
                )
            )
            continue
        seen[attr.keyword] = attr
        forms = []
        for form in attr.forms:
            other = owner.get(form)
            if other is not None:
                problems.append(
                    Problem(
                        source,
                        f"surface form {form!r} is also a form of keyword {other.keyword!r} "
                        f"({other.attribute_class})",
                        "each form must belong to one keyword: remove it from one of them",
                        attr.attribute_class,
                        attr.keyword,
                        kind="duplicate-form",
                    )
                )
                continue
            owner[form] = attr
            forms.append(form)
        if attr.keyword in forms:
            unique.append(dataclasses.replace(attr, forms=tuple(forms)))
        # a keyword whose own form is another's keeps out of the overlap analysis (already an error)
    return unique


def gloss_problem(gloss: str, keyword: str) -> tuple[str, str, Severity] | None:
    """``(problem, what to do, severity)`` when ``gloss`` does not complete "a person ...", else None."""
    g = gloss.strip()
    example = "e.g. 'who is deaf' or 'of Afghan nationality'"
    starts = ", ".join(GLOSS_STARTS)
    if not g:
        return "empty gloss", f"write what completes 'a person ...', {example}", "error"
    words = g.split()
    first = words[0].lower()
    if re.match(r"(?:an?\s+)?(?:person|people|someone|somebody)\b", g, re.IGNORECASE):
        return (
            f"gloss {g!r} repeats 'a person': it is read as 'a person {g}'",
            "drop the leading words, e.g. 'who is deaf'",
            "error",
        )
    if g[0].isupper():
        return (
            f"gloss {g!r} starts with a capital letter: it must complete 'a person ...', not be a "
            "sentence or a name",
            f"start it in lower case with one of: {starts} ({example})",
            "error",
        )
    if first not in GLOSS_STARTS:
        return (
            f"gloss {g!r} does not complete 'a person ...' (it reads 'a person {g}')",
            f"start it with one of: {starts} ({example})",
            "error",
        )
    if len(words) < 2:
        return f"gloss {g!r} is incomplete", f"say who the person is, {example}", "error"
    if g[-1] in ".!?":
        return (
            f"gloss {g!r} ends with {g[-1]!r}: it is a phrase after 'a person', not a sentence",
            "drop the final punctuation",
            "warning",
        )
    return None
