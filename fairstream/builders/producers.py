"""Bias producers of the substitution builder: sets of interchangeable biasers, from a taxonomy class or a list file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairstream.builders.records import BuilderConfigError
from fairstream.taxonomy import Attribute, Taxonomy


@dataclass(frozen=True)
class Biaser:
    """One interchangeable biaser: singular form, optional plural, gloss for the WSD model."""

    singular: str
    plural: str | None
    gloss: str

    @property
    def forms(self) -> tuple[str, ...]:
        """Lowercase surface forms matched in text."""
        return (self.singular,) if self.plural is None else (self.singular, self.plural)

    def form(self, plural: bool) -> tuple[str, str]:
        """The form for a singular or plural source, and a suffix (``" people"`` when no plural exists)."""
        if not plural:
            return self.singular, ""
        return (self.plural, "") if self.plural is not None else (self.singular, " people")


def _plural_of(attr: Attribute) -> str | None:
    for form in attr.forms:
        if form != attr.keyword and form in (attr.keyword + "s", attr.keyword + "es"):
            return form
    return None


@dataclass(frozen=True)
class BiasProducer:
    """A named set of at least two interchangeable biasers (order defines the cyclic shifts)."""

    name: str
    biasers: tuple[Biaser, ...]

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
        """The keywords of one taxonomy class, with their plural forms and glosses."""
        classes = taxonomy.classes
        if attribute_class not in classes:
            raise BuilderConfigError(
                f"--producer {attribute_class!r} is not a class of {taxonomy.name}; allowed: {sorted(classes)}"
            )
        biasers = []
        for attr in classes[attribute_class]:
            plural = _plural_of(attr)
            # other listed variants ("non-binary") are matched too but written as the keyword
            biasers.append(Biaser(attr.keyword, plural, attr.gloss))
            extra = [f for f in attr.forms if f not in (attr.keyword, plural)]
            if extra:
                biasers[-1] = _WithVariants(attr.keyword, plural, attr.gloss, tuple(extra))
        return cls(attribute_class, tuple(biasers))

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


@dataclass(frozen=True)
class _WithVariants(Biaser):
    variants: tuple[str, ...] = ()


def all_forms(b: Biaser) -> tuple[str, ...]:
    """Every form of a biaser that is matched: its own and, from a list file, its variants."""
    return b.forms + (b.variants if isinstance(b, _WithVariants) else ())
