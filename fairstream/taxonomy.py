"""Protected-attribute taxonomy: classes, keywords, glosses and matched surface forms.

The default taxonomy (``taxonomy-v1``) ships as a JSON data file, beside ``taxonomy-v2`` (v1 plus
HolisticBias axes such as age, sexual orientation and political ideology; not the default). Users
can load a shipped taxonomy by name (``Taxonomy.load("taxonomy-v2")``), their own file
(``Taxonomy.from_file``) or extend the default (``Taxonomy.extended``), e.g. with age or political
belief. Every file is validated on load and errors name the file, the class and the keyword.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from fairstream.errors import TaxonomyError

DEFAULT_TAXONOMY = "taxonomy-v1"

# The ten classes of the protected-attribute paper. A custom taxonomy may add classes only when
# it declares them in "extra_classes", so that a typo ("religon") is caught instead of silently
# creating a new class.
PAPER_CLASSES = (
    "dietary habits",
    "disability",
    "economic status",
    "fertility status",
    "gender/sexuality",
    "nationality",
    "physical traits",
    "race/ethnicity",
    "religion",
    "residence",
)

# Classes of the shipped taxonomy-v2 beyond the paper's: allowed without "extra_classes".
EXTENDED_CLASSES = (
    "addiction",
    "age",
    "immigration status",
    "marital status",
    "political ideology",
    "veteran status",
)

_WORD = r"[a-z][a-z'\-]*[a-z]"
_KEYWORD_RE = re.compile(rf"^{_WORD}$")
# a surface form is a word or words joined by single spaces ("native american"), matched as a whole
_FORM_RE = re.compile(rf"^{_WORD}(?: [a-z](?:[a-z'\-]*[a-z])?)*$")
# optional provenance of an entry (kept, never used for matching)
_PROVENANCE_FIELDS = ("axis", "bucket", "source")
_FIELDS = ("keyword", "gloss", "forms", *_PROVENANCE_FIELDS, "dispreferred")


@dataclass(frozen=True)
class Attribute:
    """One protected attribute: a keyword of a class with its gloss and surface forms."""

    keyword: str
    attribute_class: str
    gloss: str
    forms: tuple[str, ...] = field(default=())
    # optional provenance (taxonomy-v2): HolisticBias axis and bucket, and where the entry came from
    axis: str | None = None
    bucket: str | None = None
    source: str | None = None
    # a term HolisticBias marks dispreferred: detected like any keyword, flagged for audits
    dispreferred: bool = False

    @property
    def description(self) -> str:
        """The gloss as a full phrase, e.g. "a person of Afghan nationality"."""
        return f"a person {self.gloss}"


class Taxonomy:
    """A validated, immutable set of protected attributes grouped by class."""

    def __init__(self, name: str, attributes: Iterable[Attribute], source: str = "<memory>") -> None:
        self.name = name
        self.source = source
        self._by_keyword: dict[str, Attribute] = {}
        self._by_form: dict[str, Attribute] = {}
        for attr in attributes:
            if attr.keyword in self._by_keyword:
                raise TaxonomyError(f"{source}: duplicate keyword {attr.keyword!r}")
            self._by_keyword[attr.keyword] = attr
            for form in attr.forms:
                other = self._by_form.get(form)
                if other is not None:
                    raise TaxonomyError(
                        f"{source}: surface form {form!r} of keyword {attr.keyword!r} is already a form of "
                        f"{other.keyword!r}; each form must belong to one keyword"
                    )
                self._by_form[form] = attr
        if not self._by_keyword:
            raise TaxonomyError(f"{source}: the taxonomy has no keywords")

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def default(cls) -> Taxonomy:
        """The shipped ``taxonomy-v1`` (10 classes, 97 keywords)."""
        return cls.shipped(DEFAULT_TAXONOMY)

    @classmethod
    def shipped(cls, name: str) -> Taxonomy:
        """A taxonomy shipped with fairstream by name (``"taxonomy-v1"``, ``"taxonomy-v2"``)."""
        if name not in shipped_taxonomies():
            raise TaxonomyError(f"{name!r} is not a shipped taxonomy; shipped: {list(shipped_taxonomies())}")
        path = taxonomy_path(name)
        return cls.from_dict(
            json.loads(path.read_text(encoding="utf-8")), source=f"fairstream/data/{path.name}"
        )

    @classmethod
    def load(cls, name_or_path: str | Path | None = None) -> Taxonomy:
        """Load the default (``None``), a shipped taxonomy by name or a JSON file by path.

        Shipped names are ``"taxonomy-v1"`` (the default) and ``"taxonomy-v2"``; any other string is a path.
        """
        if name_or_path is None:
            return cls.default()
        if isinstance(name_or_path, str) and name_or_path in shipped_taxonomies():
            return cls.shipped(name_or_path)
        return cls.from_file(name_or_path)

    @classmethod
    def from_file(cls, path: str | Path) -> Taxonomy:
        """Load and validate a taxonomy JSON file."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TaxonomyError(
                f"{path}: taxonomy file not found; pass a taxonomy JSON file or a shipped taxonomy "
                f"({', '.join(shipped_taxonomies())})"
            ) from None
        except IsADirectoryError:
            raise TaxonomyError(
                f"{path}: is a folder; pass a taxonomy JSON file or a shipped taxonomy "
                f"({', '.join(shipped_taxonomies())})"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TaxonomyError(
                f"{path}: not valid JSON ({exc}); see fairstream/data/{DEFAULT_TAXONOMY}.json"
            ) from exc
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> Taxonomy:
        """Build and validate a taxonomy from its JSON structure.

        The structure is ``{"name": str, "classes": {class: [{"keyword", "gloss", "forms"?}, ...]},
        "extra_classes"?: [str, ...]}``. ``forms`` defaults to the keyword alone. An entry may also
        carry provenance (``"axis"``, ``"bucket"``, ``"source"``: strings) and ``"dispreferred"``
        (bool); they are kept on the :class:`Attribute` and play no part in matching.
        """
        if not isinstance(data, Mapping):
            raise TaxonomyError(f"{source}: top level must be an object with 'name' and 'classes'")
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise TaxonomyError(f"{source}: 'name' must be a non-empty string (e.g. {DEFAULT_TAXONOMY!r})")
        classes = data.get("classes")
        if not isinstance(classes, Mapping) or not classes:
            raise TaxonomyError(f"{source}: 'classes' must be a non-empty object of class -> keyword list")
        extra = data.get("extra_classes", [])
        if not isinstance(extra, list) or not all(isinstance(c, str) for c in extra):
            raise TaxonomyError(f"{source}: 'extra_classes' must be a list of class names")
        allowed = set(PAPER_CLASSES) | set(EXTENDED_CLASSES) | set(extra)
        attributes: list[Attribute] = []
        for cls_name, items in classes.items():
            if cls_name not in allowed:
                raise TaxonomyError(
                    f"{source}: unknown class {cls_name!r}; allowed: {sorted(allowed)} "
                    "(declare new classes in 'extra_classes')"
                )
            if not isinstance(items, list) or not items:
                raise TaxonomyError(f"{source}: class {cls_name!r} must have a non-empty list of keywords")
            for i, item in enumerate(items):
                attributes.append(_parse_attribute(item, cls_name, i, source))
        return cls(name, attributes, source=source)

    def extended(self, data: Mapping[str, Any], name: str | None = None) -> Taxonomy:
        """A new taxonomy with the classes/keywords of ``data`` added (same structure as a file)."""
        merged = self.to_dict()
        for cls_name, items in data.get("classes", {}).items():
            merged["classes"].setdefault(cls_name, []).extend(items)
        merged["extra_classes"] = sorted(
            set(merged.get("extra_classes", [])) | set(data.get("extra_classes", []))
        )
        merged["name"] = name or f"{self.name}+ext"
        return Taxonomy.from_dict(merged, source=f"{self.source}+extension")

    def to_dict(self) -> dict[str, Any]:
        """The taxonomy in its JSON structure (round-trips through ``from_dict``)."""
        classes: dict[str, list[dict[str, Any]]] = {}
        for attr in self:
            entry: dict[str, Any] = {"keyword": attr.keyword, "gloss": attr.gloss, "forms": list(attr.forms)}
            for key in _PROVENANCE_FIELDS:
                if getattr(attr, key) is not None:
                    entry[key] = getattr(attr, key)
            if attr.dispreferred:
                entry["dispreferred"] = True
            classes.setdefault(attr.attribute_class, []).append(entry)
        extra = sorted(set(classes) - set(PAPER_CLASSES))
        return {"name": self.name, "classes": classes, "extra_classes": extra}

    @functools.cached_property
    def identity(self) -> str:
        """Name and content hash, e.g. ``"taxonomy-v1 (sha256 0123456789ab)"``: an edited file is another taxonomy.

        What a run's manifest and a stream's ``state_dict()`` record, so that a resume with another
        taxonomy is refused.
        """
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode("utf-8")).hexdigest()
        return f"{self.name} (sha256 {digest[:12]})"

    # -- queries ------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Attribute]:
        return iter(self._by_keyword.values())

    def __len__(self) -> int:
        return len(self._by_keyword)

    def __contains__(self, keyword: object) -> bool:
        return keyword in self._by_keyword

    def __getitem__(self, keyword: str) -> Attribute:
        try:
            return self._by_keyword[keyword]
        except KeyError:
            raise KeyError(f"{keyword!r} is not a keyword of {self.name}") from None

    def by_form(self, surface: str) -> Attribute:
        """The attribute whose surface form is ``surface`` (case-insensitive)."""
        return self._by_form[surface.lower()]

    @property
    def forms(self) -> dict[str, Attribute]:
        """Mapping of every lowercase surface form to its attribute."""
        return dict(self._by_form)

    @property
    def classes(self) -> dict[str, list[Attribute]]:
        """Attributes grouped by class, in file order."""
        out: dict[str, list[Attribute]] = {}
        for attr in self:
            out.setdefault(attr.attribute_class, []).append(attr)
        return out

    def __repr__(self) -> str:
        return f"Taxonomy(name={self.name!r}, classes={len(self.classes)}, keywords={len(self)})"


def _parse_attribute(item: Any, cls_name: str, index: int, source: str) -> Attribute:
    where = f"{source}: class {cls_name!r} item {index}"
    if not isinstance(item, Mapping):
        raise TaxonomyError(f"{where}: must be an object with 'keyword' and 'gloss'")
    unknown = set(item) - set(_FIELDS)
    if unknown:
        raise TaxonomyError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {', '.join(_FIELDS)}")
    keyword = item.get("keyword")
    if not isinstance(keyword, str) or not _KEYWORD_RE.match(keyword):
        raise TaxonomyError(
            f"{where}: keyword {keyword!r} must be a lowercase word (letters, hyphen or apostrophe inside)"
        )
    where = f"{source}: keyword {keyword!r} ({cls_name})"
    gloss = item.get("gloss")
    if not isinstance(gloss, str) or not gloss.strip():
        raise TaxonomyError(
            f"{where}: empty gloss; write what completes 'a person ...', e.g. 'who is autistic'"
        )
    forms = item.get("forms", [keyword])
    if not isinstance(forms, list) or not forms or not all(isinstance(f, str) for f in forms):
        raise TaxonomyError(f"{where}: 'forms' must be a non-empty list of strings")
    norm_forms = []
    for form in forms:
        if not _FORM_RE.match(form):
            raise TaxonomyError(
                f"{where}: form {form!r} must be a lowercase word (or words joined by single spaces)"
            )
        if form not in norm_forms:
            norm_forms.append(form)
    if keyword not in norm_forms:
        norm_forms.insert(0, keyword)
    provenance: dict[str, str] = {}
    for key in _PROVENANCE_FIELDS:
        value = item.get(key)
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise TaxonomyError(f"{where}: {key!r} must be a non-empty string when given")
            provenance[key] = value
    dispreferred = item.get("dispreferred", False)
    if not isinstance(dispreferred, bool):
        raise TaxonomyError(f"{where}: 'dispreferred' must be true or false")
    return Attribute(
        keyword=keyword,
        attribute_class=cls_name,
        gloss=gloss.strip(),
        forms=tuple(norm_forms),
        axis=provenance.get("axis"),
        bucket=provenance.get("bucket"),
        source=provenance.get("source"),
        dispreferred=dispreferred,
    )


def taxonomy_path(name_or_path: str | Path) -> Path:
    """The file ``Taxonomy.load`` reads for ``name_or_path``: a shipped taxonomy's by its name, else the path."""
    if isinstance(name_or_path, str) and name_or_path in shipped_taxonomies():
        return Path(str(resources.files("fairstream") / "data" / f"{name_or_path}.json"))
    return Path(name_or_path)


def portable_taxonomy_setting(name_or_path: str | None) -> str | None:
    """The ``taxonomy`` setting as any process reads it alike: a shipped name (or ``None``) as is, a file's path made absolute.

    For settings handed to worker processes or machines, whose working folder may differ.
    """
    if name_or_path is None or name_or_path in shipped_taxonomies():
        return name_or_path
    return str(Path(name_or_path).resolve())


def taxonomy_setting_problem(name_or_path: object) -> str | None:
    """Why a ``taxonomy`` setting cannot be loaded, without reading it (``None``: it names a file or a shipped taxonomy)."""
    allowed = f"a shipped taxonomy ({', '.join(shipped_taxonomies())}) or a taxonomy JSON file"
    if not isinstance(name_or_path, str) or not name_or_path:
        return f"must be {allowed}"
    if name_or_path in shipped_taxonomies():
        return None
    path = Path(name_or_path)
    if path.is_dir():
        return f"is a folder; must be {allowed}"
    if not path.is_file():
        return f"no such file; must be {allowed}"
    return None


def shipped_taxonomies() -> tuple[str, ...]:
    """Names of the taxonomies shipped in ``fairstream/data`` (``taxonomy-v1``, ``taxonomy-v2``, ...)."""
    data = resources.files("fairstream") / "data"
    return tuple(
        sorted(
            p.name.removesuffix(".json")
            for p in data.iterdir()
            if p.name.startswith("taxonomy-") and p.name.endswith(".json")
        )
    )
