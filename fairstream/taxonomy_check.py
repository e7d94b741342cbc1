"""Check a taxonomy file before a run: what the loader refuses, and what it accepts but should not.

``check_taxonomy(path)`` returns one ``Problem`` per thing found, all of them (it does not stop at
the first): the loader's own errors (invalid JSON, the schema, an empty class, a bad keyword or
form), duplicate keywords and duplicate surface forms across classes and keywords, and glosses
that do not complete "a person (or people) ...". Warnings (``severity="warning"``) are what loads
and runs but may not be meant: a form inside a longer form of another keyword ("american" inside
"african-american", which the matcher gives to the longer form), forms that overlap across a word,
variants of a multi-word form that other keywords capture ("african-americans" goes to "african"
and "americans" when only "african-american" is listed), and forms that do not look like forms of
their keyword.

**Glosses.** A gloss completes "a person (or people) ...". Every gloss of ``taxonomy-v1`` starts
with ``who`` ("who is deaf", "who believes in Islam") or ``of`` ("of Afghan nationality", "of Black
race/ethnicity"); ``GLOSS_STARTS`` adds the words that read the same way after "a person": whose,
with, without, from, in, living, born. A gloss must start with one of them, in lower case, and say
something after it; it must not repeat "a person", and it should not end like a sentence (".").

``keyword_usage(inputs, taxonomy)`` reads documents through the filter's own front
(``CandidateExtractor``) and model, and reports per keyword its hits (every whole-word match), hits
per MB of text, the mentions the filter would judge (those in sentences that pass the length
filter), the share of them the model judges to refer to a person and the share it is unsure of
(``UNSURE_LOW <= P(yes) <= UNSURE_HIGH``). ``usage_flags`` names the keywords that look unreliable.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fairstream.detect import KeywordDetector, Mention
from fairstream.errors import TaxonomyError, option
from fairstream.taxonomy import DEFAULT_TAXONOMY, EXTENDED_CLASSES, PAPER_CLASSES, Attribute, Taxonomy

if TYPE_CHECKING:
    from fairstream.core.config import FilterConfig
    from fairstream.stream.tagger import MentionModel

logger = logging.getLogger(__name__)

#: the first words of every gloss of taxonomy-v1
GLOSS_STARTS_V1 = ("who", "of")
#: the first words a gloss may have: v1's and those that read the same way after "a person"
GLOSS_STARTS = (*GLOSS_STARTS_V1, "whose", "with", "without", "from", "in", "living", "born")

#: P(yes) in [UNSURE_LOW, UNSURE_HIGH]: the model is unsure whether the mention refers to a person
UNSURE_LOW, UNSURE_HIGH = 0.2, 0.8
#: a keyword whose unsure share is above this (with at least MIN_JUDGED_UNSURE judged mentions) is flagged
UNSURE_SHARE_ABOVE = 0.3
MIN_JUDGED_UNSURE = 5
#: a keyword whose person share is below this (with at least MIN_JUDGED_PERSON judged mentions) is flagged
PERSON_SHARE_BELOW = 0.1
MIN_JUDGED_PERSON = 20
DEFAULT_MAX_DOCS = 2000
DEFAULT_MAX_MENTIONS_PER_KEYWORD = 200
_JUDGE_AT = 512  # new mentions collected before they are judged in one model call

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong (``error``) or worth a look (``warning``) in a taxonomy file.

    ``line()`` is ``FILE: class 'x' keyword 'y': problem; what to do`` (the class, the item index
    and the keyword where known; warnings say ``warning:`` before the problem).
    """

    file: str
    problem: str
    fix: str = ""
    attribute_class: str | None = None
    keyword: str | None = None
    item: int | None = None  # index in the class's list, for an item without a usable keyword
    kind: str = "schema"
    severity: Severity = "error"

    def line(self) -> str:
        """The one-line form printed by ``fairstream taxonomy check``."""
        where = []
        if self.attribute_class is not None:
            where.append(f"class {self.attribute_class!r}")
        if self.keyword is not None:
            where.append(f"keyword {self.keyword!r}")
        elif self.item is not None:
            where.append(f"item {self.item}")
        head = f"{self.file}: " + (" ".join(where) + ": " if where else "")
        tag = "warning: " if self.severity == "warning" else ""
        return head + tag + self.problem + (f"; {self.fix}" if self.fix else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)


def resolve_taxonomy_path(name_or_path: str | Path) -> Path:
    """A taxonomy file: ``name_or_path`` itself, or a shipped taxonomy named so (``"taxonomy-v1"``)."""
    path = Path(name_or_path)
    if not path.exists() and re.fullmatch(r"[\w.-]+", str(name_or_path)):
        shipped = resources.files("fairstream") / "data" / f"{name_or_path}.json"
        if shipped.is_file():
            return Path(str(shipped))
    return path


def shown_path(name_or_path: str | Path) -> str:
    """How messages name a taxonomy file: ``fairstream/data/NAME.json`` for a shipped name, else the path."""
    path = resolve_taxonomy_path(name_or_path)
    return f"fairstream/data/{path.name}" if path != Path(name_or_path) else str(path)


def check_taxonomy(path: str | Path) -> list[Problem]:
    """Every problem of the taxonomy file ``path`` (or shipped name): errors, then warnings."""
    source = shown_path(path)
    path = resolve_taxonomy_path(path)
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


# -- keyword usage on shards ------------------------------------------------------------------------
@dataclass
class KeywordUsage:
    """How often one keyword is found in the documents read, and what the model makes of it."""

    keyword: str
    attribute_class: str
    hits: int = 0  # every whole-word match
    candidates: int = 0  # matches in sentences that pass the length filter (what the filter judges)
    judged: int = 0  # candidates judged here (the first ``max_mentions_per_keyword``)
    person: int = 0  # judged mentions with P(yes) >= the model's threshold
    unsure: int = 0  # judged mentions with UNSURE_LOW <= P(yes) <= UNSURE_HIGH
    hits_per_mb: float = 0.0

    @property
    def person_share(self) -> float | None:
        """Share of the judged mentions judged to refer to a person (None: none judged)."""
        return self.person / self.judged if self.judged else None

    @property
    def unsure_share(self) -> float | None:
        """Share of the judged mentions the model is unsure of (None: none judged)."""
        return self.unsure / self.judged if self.judged else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, shares included (rounded to 4 digits)."""
        out: dict[str, Any] = asdict(self)
        out["hits_per_mb"] = round(self.hits_per_mb, 3)
        for name in ("person_share", "unsure_share"):
            value = getattr(self, name)
            out[name] = None if value is None else round(value, 4)
        return out


@dataclass
class UsageReport:
    """What ``keyword_usage`` read and found."""

    taxonomy: str
    model: str
    documents: int
    text_bytes: int  # UTF-8 bytes of the documents' text
    shards: int
    keywords: list[KeywordUsage]
    max_docs: int
    max_mentions_per_keyword: int
    skipped: list[str] = field(default_factory=list)

    @property
    def text_mb(self) -> float:
        """Megabytes (10**6 bytes) of text read."""
        return self.text_bytes / 1e6

    def to_dict(self, source: str | None = None) -> dict[str, Any]:
        """JSON-able form with the flags (``usage_flags``)."""
        return {
            "taxonomy": self.taxonomy,
            "model": self.model,
            "documents": self.documents,
            "text_mb": round(self.text_mb, 6),
            "shards": self.shards,
            "max_docs": self.max_docs,
            "max_mentions_per_keyword": self.max_mentions_per_keyword,
            "thresholds": {
                "unsure_p_yes": [UNSURE_LOW, UNSURE_HIGH],
                "unsure_share_above": UNSURE_SHARE_ABOVE,
                "min_judged_unsure": MIN_JUDGED_UNSURE,
                "person_share_below": PERSON_SHARE_BELOW,
                "min_judged_person": MIN_JUDGED_PERSON,
            },
            "keywords": [k.to_dict() for k in self.keywords],
            "flags": [p.to_dict() for p in usage_flags(self, source or self.taxonomy)],
            "skipped": list(self.skipped),
        }


def _check_count(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{option(name, value)}: must be a whole number >= {least}")
    return value


def keyword_usage(
    inputs: Iterable[str | Path],
    taxonomy: Taxonomy,
    config: FilterConfig | None = None,
    *,
    model: MentionModel | None = None,
    max_docs: int = DEFAULT_MAX_DOCS,
    max_mentions_per_keyword: int = DEFAULT_MAX_MENTIONS_PER_KEYWORD,
    progress: bool = False,
) -> UsageReport:
    """Hits, hits per MB and the model's person / unsure shares of each keyword of ``taxonomy``.

    The first ``max_docs`` documents of ``inputs`` (anything ``fairstream filter`` reads, in its
    order) are read.

    Documents are read and their text taken as the filter does (``config``'s ``text_field``,
    ``max_doc_chars``, ``on_error``); sentences are found by the filter's ``CandidateExtractor``
    (``splitter``, ``min_tokens``/``max_tokens``) and the mentions judged by the filter's model
    (``config.model``/``device``/``batch_size``, or ``model``), as ``MentionInput``s built like the
    tagger's, so each judged mention gets the prediction the filter's annotation holds. Only the first
    ``max_mentions_per_keyword`` candidate mentions of a keyword are judged (repeats judged once).
    """
    from fairstream.candidates import CandidateExtractor
    from fairstream.core.config import FilterConfig
    from fairstream.errors import InvalidDocumentError
    from fairstream.io import find_shards
    from fairstream.jobs.reader import ShardReader
    from fairstream.models.encoding import MentionInput
    from fairstream.models.loader import load_model_for
    from fairstream.progress import Progress
    from fairstream.text import LengthFilter, coerce_text

    max_docs = _check_count("max_docs", max_docs, 1)
    max_mentions_per_keyword = _check_count("max_mentions_per_keyword", max_mentions_per_keyword, 1)
    config = config or FilterConfig()
    listing = find_shards(inputs)
    if model is None:
        model = load_model_for(config)
    extractor = CandidateExtractor(
        taxonomy, splitter=config.splitter, length_filter=LengthFilter(config.min_tokens, config.max_tokens)
    )
    usage = {a.keyword: KeywordUsage(a.keyword, a.attribute_class) for a in taxonomy}
    judged: dict[tuple[str, int, int, str], Any] = {}  # (sentence, start, end, keyword) -> prediction
    skipped: list[str] = []  # bad records and invalid documents (on_error="skip")
    n_docs = text_bytes = shards_read = 0
    max_chars = config.max_doc_chars or None
    bar = Progress(
        sum(s.stat().st_size for s in listing.shards), desc="fairstream taxonomy check", enabled=progress
    )
    window: list[tuple[str, MentionInput]] = []  # (keyword, mention judged) in text order
    todo: dict[tuple[str, int, int, str], MentionInput] = {}

    def flush() -> None:
        if todo:
            keys = list(todo)
            preds = model.predict([todo[k] for k in keys])
            judged.update(zip(keys, preds, strict=True))
            todo.clear()
        for keyword, item in window:
            pred = judged[(item.text, item.start, item.end, keyword)]
            u = usage[keyword]
            u.person += bool(pred.person)
            u.unsure += UNSURE_LOW <= pred.wsd_score <= UNSURE_HIGH
        window.clear()

    def collect(text: str) -> None:
        scan = extractor.scan(text)
        if not scan.has_keyword:
            return
        for m in extractor.detector.find(text):
            usage[m.keyword].hits += 1
        for cand in scan.candidates:
            sentence = text[cand.start : cand.end]
            for m in cand.mentions:
                u = usage[m.keyword]
                u.candidates += 1
                if u.judged >= max_mentions_per_keyword:
                    continue
                u.judged += 1
                key = (sentence, m.start - cand.start, m.end - cand.start, m.keyword)
                attr = taxonomy[m.keyword]
                item = MentionInput(sentence, key[1], key[2], attr.keyword, attr.gloss)
                if key not in judged:
                    todo.setdefault(key, item)
                window.append((m.keyword, item))

    try:
        for shard in listing.shards:
            if n_docs >= max_docs:
                break
            shards_read += 1
            bar.note(shard.name)
            reader = ShardReader(shard, on_error=config.on_error)
            shard_start = bar.n
            try:
                for record in reader.records():
                    if n_docs >= max_docs:
                        break
                    n_docs += 1
                    bar.advance(max(0.0, shard_start + record.position - bar.n))
                    where = f"{shard}:{record.line} field {config.text_field!r}"
                    try:
                        text = coerce_text(
                            record.data.get(config.text_field), where=where, max_chars=max_chars
                        )
                    except InvalidDocumentError as exc:
                        if config.on_error == "raise":
                            raise
                        logger.warning("skipping: %s", exc.problem)
                        skipped.append(exc.problem)
                        continue
                    text_bytes += len(text.encode("utf-8"))
                    collect(text)
                    if len(todo) >= _JUDGE_AT:
                        flush()
            finally:
                skipped += reader.skipped
            bar.advance(max(0.0, shard_start + reader.size - bar.n))
        flush()
    finally:
        bar.close()
    for u in usage.values():
        u.hits_per_mb = u.hits / (text_bytes / 1e6) if text_bytes else 0.0
    return UsageReport(
        taxonomy=taxonomy.name,
        model=str(getattr(model, "name", type(model).__name__)),
        documents=n_docs,
        text_bytes=text_bytes,
        shards=shards_read,
        keywords=list(usage.values()),
        max_docs=max_docs,
        max_mentions_per_keyword=max_mentions_per_keyword,
        skipped=skipped,
    )


def usage_flags(report: UsageReport, source: str) -> list[Problem]:
    """One warning per keyword that looks unreliable on the documents read (see the module constants)."""
    flags = []
    read = f"{report.documents} documents ({report.text_mb:.2f} MB)"
    for u in report.keywords:

        def flag(problem: str, fix: str, kind: str, u: KeywordUsage = u) -> None:
            flags.append(
                Problem(source, problem, fix, u.attribute_class, u.keyword, kind=kind, severity="warning")
            )

        if u.hits == 0:
            flag(
                f"no hits in {read}",
                "check its forms, or read more documents (--max-docs) if it is rare",
                "no-hits",
            )
        elif u.candidates == 0:
            flag(
                f"{u.hits} hits but none in a sentence the filter judges (length filter)",
                "its mentions are never judged here: check --min-tokens/--max-tokens or the texts",
                "not-judged",
            )
        else:
            unsure, person = u.unsure_share or 0.0, u.person_share or 0.0
            if u.judged >= MIN_JUDGED_UNSURE and unsure > UNSURE_SHARE_ABOVE:
                flag(
                    f"the model is unsure of {unsure:.0%} of {u.judged} judged mentions "
                    f"({UNSURE_LOW} <= P(yes) <= {UNSURE_HIGH})",
                    "check the gloss, label a sample and run fairstream eval-models on it",
                    "unsure",
                )
            if u.judged >= MIN_JUDGED_PERSON and person < PERSON_SHARE_BELOW:
                flag(
                    f"only {person:.0%} of {u.judged} judged mentions refer to a person",
                    "mostly another sense: check the gloss and forms, or drop the keyword",
                    "not-person",
                )
    return flags


def format_usage(report: UsageReport) -> list[str]:
    """The per-keyword table as text lines (keywords in taxonomy order)."""
    lines = [
        f"{report.documents} documents, {report.text_mb:.2f} MB of text, model {report.model}",
        f"{'class':<18} {'keyword':<16} {'hits':>6} {'hits/MB':>9} {'judged':>7} {'person':>7} {'unsure':>7}",
    ]

    def share(v: float | None) -> str:
        return "-" if v is None else f"{v:.0%}"

    for u in report.keywords:
        lines.append(
            f"{u.attribute_class:<18} {u.keyword:<16} {u.hits:>6} {u.hits_per_mb:>9.1f} {u.judged:>7} "
            f"{share(u.person_share):>7} {share(u.unsure_share):>7}"
        )
    return lines
