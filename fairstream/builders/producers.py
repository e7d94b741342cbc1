"""Bias producers of the substitution builder: sets of interchangeable biasers, from a taxonomy class or a list file.

A taxonomy class gives its keywords with their plurals, and their other forms as variants that are
matched too. A variant's number is read from the forms: "teenagers" is the plural of the listed
"teenager", which is then a noun, so a copy writes the target's noun ("adults", "teens") or, for an
adjective without one, "elderly people" / "an elderly person". Keywords the taxonomy marks
dispreferred (taxonomy-v2's "handicapped", "illegal-immigrant", ...) are left out of a producer
built from it: a copy never writes them. Besides its classes, a taxonomy's HolisticBias axes that lie
within one class are producers too ("sexual orientation": gay, straight, bisexual, ... of the
``gender/sexuality`` class, so a copy swaps an orientation for an orientation, not for a gender).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairstream.builders.records import BuilderConfigError
from fairstream.taxonomy import Attribute, Taxonomy, shipped_taxonomies

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Biaser:
    """One interchangeable biaser: singular form, optional plural, gloss for the WSD model."""

    singular: str
    plural: str | None
    gloss: str
    # other forms, matched too: (variant, number) with number "plural", "noun" (a singular noun) or
    # "" (unknown: written as the singular)
    variants: tuple[tuple[str, str], ...] = field(default=())

    @property
    def forms(self) -> tuple[str, ...]:
        """Lowercase surface forms matched in text."""
        return (self.singular,) if self.plural is None else (self.singular, self.plural)

    def nouns(self) -> tuple[str, str] | None:
        """The first singular noun variant that has its plural among the variants ("teen", "teens")."""
        plurals = {v for v, number in self.variants if number == "plural"}
        return next(
            ((v, p) for v, number in self.variants if number == "noun" for p in _plurals(v) if p in plurals),
            None,
        )

    def number(self, surface: str) -> str:
        """How a matched form counts: ``"plural"``, ``"noun"`` (singular noun) or ``""`` (the singular)."""
        if self.plural is not None and surface == self.plural:
            return "plural"
        return next((number for v, number in self.variants if v == surface), "")

    def form(self, plural: bool, noun: bool = False) -> tuple[str, str]:
        """The form for a source of that number, and a suffix where no noun exists (``" people"``).

        ``noun``: the source is a singular noun ("a teenager"): an adjective without a noun form
        gets ``" person"`` ("an elderly person").
        """
        if plural:
            if self.plural is not None:
                return self.plural, ""
            pair = self.nouns()
            return (pair[1], "") if pair else (self.singular, " people")
        if noun and self.plural is None:
            pair = self.nouns()
            return (pair[0], "") if pair else (self.singular, " person")
        return self.singular, ""


def producer_groups(taxonomy: Taxonomy) -> dict[str, list[Attribute]]:
    """What ``--producer`` may name: every class, and every HolisticBias axis whose keywords lie in one class.

    An axis is named with spaces ("sexual_orientation": "sexual orientation"); one that spans several
    classes ("characteristics"), has one keyword or a class's name is not a producer of its own.
    """
    groups: dict[str, list[Attribute]] = dict(taxonomy.classes)
    axes: dict[str, list[Attribute]] = {}
    for attr in taxonomy:
        if attr.axis:
            axes.setdefault(attr.axis.replace("_", " "), []).append(attr)
    for axis, attrs in sorted(axes.items()):
        if axis not in groups and len(attrs) > 1 and len({a.attribute_class for a in attrs}) == 1:
            groups[axis] = attrs
    return groups


def _plurals(word: str) -> tuple[str, ...]:
    """Regular plurals of a word or of a phrase's last word ("housewife": "housewives" too)."""
    out = (word + "s", word + "es")
    return out + (
        (word[:-2] + "ves",) if word.endswith("fe") else (word[:-1] + "ves",) if word.endswith("f") else ()
    )


def _plural_of(attr: Attribute) -> str | None:
    for form in attr.forms:
        if form != attr.keyword and form in _plurals(attr.keyword):
            return form
    return None


def _variants(attr: Attribute, plural: str | None) -> tuple[tuple[str, str], ...]:
    """The attribute's other forms with their number, read from the forms themselves."""
    forms = set(attr.forms) | {attr.keyword}
    out = []
    for v in attr.forms:
        if v in (attr.keyword, plural):
            continue
        if any(p in forms for p in _plurals(v)):
            number = "noun"  # its plural is listed too: a countable noun ("teenager", "senior citizen")
        elif any(v in _plurals(u) for u in forms):
            number = "plural"
        else:
            number = ""
        out.append((v, number))
    return tuple(out)


@dataclass(frozen=True)
class BiasProducer:
    """A named set of at least two interchangeable biasers (order defines the cyclic shifts)."""

    name: str
    biasers: tuple[Biaser, ...]
    left_out: tuple[str, ...] = field(default=())  # dispreferred keywords of the class, not used

    def __post_init__(self) -> None:
        if len(self.biasers) < 2:
            raise BuilderConfigError(
                f"bias producer {self.name!r} has {len(self.biasers)} biaser(s); it needs at least 2"
            )
        seen: dict[str, str] = {}
        for b in self.biasers:
            for f in b.forms:
                if f in seen:
                    raise BuilderConfigError(
                        f"bias producer {self.name!r}: form {f!r} belongs to both {seen[f]!r} and {b.singular!r}"
                    )
                seen[f] = b.singular

    @classmethod
    def from_taxonomy(cls, taxonomy: Taxonomy, attribute_class: str) -> BiasProducer:
        """The keywords of one taxonomy class or axis (:func:`producer_groups`) with their forms and glosses.

        Keywords the taxonomy marks dispreferred are left out (``left_out``).

        Raises:
            BuilderConfigError: The class is not in the taxonomy (one line naming the allowed
                classes, and a shipped taxonomy that has it), or has fewer than two keywords.
        """
        groups = producer_groups(taxonomy)
        if attribute_class not in groups:
            hint = next(
                (
                    f"; {name} has it: add --taxonomy {name}"
                    for name in shipped_taxonomies()
                    if name != taxonomy.name and attribute_class in producer_groups(Taxonomy.shipped(name))
                ),
                "",
            )
            axes = sorted(set(groups) - set(taxonomy.classes))
            raise BuilderConfigError(
                f"--producer {attribute_class!r} is not a class of {taxonomy.name}; allowed: "
                f"{', '.join(sorted(taxonomy.classes))}"
                + (f", or an axis within a class: {', '.join(axes)}" if axes else "")
                + hint
            )
        biasers, left_out = [], []
        for attr in groups[attribute_class]:
            if attr.dispreferred:  # counted by an audit, never written into a copy
                left_out.append(attr.keyword)
                continue
            plural = _plural_of(attr)
            biasers.append(Biaser(attr.keyword, plural, attr.gloss, _variants(attr, plural)))
        if left_out:
            logger.info(
                "producer %r: dispreferred keywords left out: %s", attribute_class, ", ".join(left_out)
            )
        if len(biasers) < 2:
            raise BuilderConfigError(
                f"--producer {attribute_class!r}: {taxonomy.name} has {len(biasers)} usable keyword(s) in it "
                f"({', '.join(b.singular for b in biasers) or 'none'}); a producer needs at least 2 to swap "
                "between: pick another class or list them with --biasers FILE"
            )
        return cls(attribute_class, tuple(biasers), tuple(left_out))

    @classmethod
    def from_file(cls, path: str | Path, taxonomy: Taxonomy | None = None) -> BiasProducer:
        """Read a biasers file: JSON ``{"name", "biasers": [{"singular", "plural"?, "gloss"?}]}``.

        Or plain text, one biaser per line: ``singular[, plural]`` (``#`` starts a comment). A biaser
        without a gloss takes the taxonomy's gloss when it is a taxonomy keyword, else ``"who is X"``.
        """
        path = Path(path)
        if not path.is_file():
            raise BuilderConfigError(f"--biasers {path}: file not found")
        taxonomy = taxonomy or Taxonomy.default()
        text = path.read_text(encoding="utf-8")
        entries: list[dict[str, Any]] = []
        name = path.stem
        if path.suffix == ".json":
            try:
                data = json.loads(text)
                name = str(data.get("name", name))
                entries = list(data["biasers"])
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
                raise BuilderConfigError(
                    f"--biasers {path}: expected JSON {{'name', 'biasers': [{{'singular', 'plural'?, 'gloss'?}}]}} "
                    f"({type(exc).__name__}: {exc})"
                ) from None
        else:
            for lineno, line in enumerate(text.splitlines(), start=1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                parts = [p.strip() for p in line.split(",")]
                if len(parts) > 2 or not all(parts):
                    raise BuilderConfigError(
                        f"--biasers {path}:{lineno}: expected 'singular' or 'singular, plural', got {line!r}"
                    )
                entries.append({"singular": parts[0], "plural": parts[1] if len(parts) == 2 else None})
        biasers = []
        for i, e in enumerate(entries):
            if not isinstance(e, dict) or not isinstance(e.get("singular"), str) or not e["singular"].strip():
                raise BuilderConfigError(f"--biasers {path}: biaser {i + 1} needs a non-empty 'singular'")
            singular = " ".join(e["singular"].lower().split())
            plural = " ".join(e["plural"].lower().split()) if e.get("plural") else None
            gloss = e.get("gloss")
            if not gloss:
                gloss = taxonomy[singular].gloss if singular in taxonomy else f"who is {singular}"
            biasers.append(Biaser(singular, plural, str(gloss)))
        return cls(name, tuple(biasers))

    def taxonomy(self) -> Taxonomy:
        """A taxonomy of this producer's forms, so the shared keyword detector can match them."""
        attrs = [
            Attribute(keyword=b.singular, attribute_class=self.name, gloss=b.gloss, forms=all_forms(b))
            for b in self.biasers
        ]
        return Taxonomy(f"producer:{self.name}", attrs, source=f"producer {self.name}")


def all_forms(b: Biaser) -> tuple[str, ...]:
    """Every form of a biaser that is matched: its own and, from a taxonomy, its variants."""
    return b.forms + tuple(v for v, _ in b.variants)
