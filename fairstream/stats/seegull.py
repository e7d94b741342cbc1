"""SeeGULL check: how many known nationality stereotypes the bias scores rank near the top.

For each nationality that the taxonomy shares with SeeGULL's global stereotypes, the words of
``V(nationality)`` are ranked by a bias score and recall@k is the share of SeeGULL stereotypes
(attributes) of that identity found among the top ``k`` words. Positive stereotypes (mean
offensiveness exactly -1) are checked against eq. 2 with ``r = positive``, negative ones (mean
offensiveness >= 1) against eq. 2 with ``r = negative``; both are compared with eq. 1, as in the
protected-attribute paper's Table 8.

Data quirks handled here:

* ``stereotypes_global_v1.csv`` has a two-row header (a group row above the column names), a
  typo'd identity (``3South Korean``) and repeated (identity, attribute) rows; v2 has one header
  row and lemmatised, lowercased attributes without ``-``/``_``.
* SeeGULL names identities as groups ("Swedes", "Netherlanders"); :data:`IDENTITY_MAP` maps the
  taxonomy keywords whose names differ, everything else matches case-insensitively.
* Attributes and words are compared by Snowball stems with ``-``/``_`` removed, so v2's lemmas
  ("reserve") match corpus words ("reserved"), and v1's "hard-working" matches "hardworking".
* Multi-word attributes ("good at hockey") cannot be one word of a unigram ranking. By default
  (``multiword="skip"``) they are left out and counted in the ``skipped_multiword`` field;
  ``"all"`` counts one as found when all its content words are in the top ``k``, ``"any"`` when
  one is. Stopwords are dropped from attributes, but a negation ("not intelligent") stays a
  required word, so it can never match its opposite.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fairstream.errors import FairStreamError
from fairstream.stats.counts import CooccurrenceCounts
from fairstream.stats.scores import (
    DEFAULT_MIN_ATTRIBUTE_SENTENCES,
    DEFAULT_MIN_ATTRIBUTE_SHARE,
    DEFAULT_MIN_WORD_COUNT,
    DEFAULT_TOP_N,
    score_class,
)

if TYPE_CHECKING:
    from fairstream.taxonomy import Taxonomy

logger = logging.getLogger(__name__)

NATIONALITY_CLASS = "nationality"
DEFAULT_KS = (50, 100, 200, 300, 500)
VERSIONS = ("v1", "v2")
MULTIWORD = ("skip", "all", "any")
MultiwordPolicy = Literal["skip", "all", "any"]

# Taxonomy keyword -> SeeGULL identity names, where they differ beyond case.
IDENTITY_MAP: dict[str, tuple[str, ...]] = {
    "afghan": ("Afghans", "Afghanis"),
    "greek": ("Greeks",),
    "swedish": ("Swedes",),
    "finnish": ("Finns",),
    "dutch": ("Netherlanders",),
    "somali": ("Somalis",),
    "filipino": ("Philippine",),
    "saudi": ("Saudi Arabian",),
    "turkish": ("Turks",),
    "korean": ("South Korean",),
    "american": ("United States",),  # taxonomy-v2
}

NEGATIONS = frozenset({"not", "no", "nor", "never", "non", "without"})


class SeegullError(FairStreamError, ValueError):
    """A SeeGULL file is missing or does not have the expected columns."""


@dataclass(frozen=True)
class Stereotype:
    """One SeeGULL row: an identity, an attribute and its mean offensiveness (-1 to 4)."""

    identity: str
    attribute: str
    offensiveness: float

    @property
    def polarity(self) -> str | None:
        """``"positive"`` (offensiveness -1), ``"negative"`` (>= 1) or ``None`` (in between)."""
        return _polarity(self.offensiveness)


def _polarity(offensiveness: float) -> str | None:
    if math.isclose(offensiveness, -1.0, abs_tol=1e-9):
        return "positive"
    if offensiveness >= 1.0 - 1e-9:
        return "negative"
    return None


def _clean_identity(name: str) -> str:
    # v1 has "3South Korean"; names never start with a digit
    return " ".join(name.strip().lstrip("0123456789").split())


def seegull_file(seegull_dir: str | Path, version: str = "v2") -> Path:
    """Path of ``stereotypes_global_<version>.csv`` in ``seegull_dir`` (or its ``dataset/``).

    Raises:
        ValueError: ``version`` is not ``"v1"`` or ``"v2"``.
        SeegullError: The file is not there.
    """
    if version not in VERSIONS:
        raise ValueError(f"version={version!r} is not one of {VERSIONS}")
    base = Path(seegull_dir)
    for candidate in (
        base / f"stereotypes_global_{version}.csv",
        base / "dataset" / f"stereotypes_global_{version}.csv",
    ):
        if candidate.is_file():
            return candidate
    raise SeegullError(
        f"{base}: stereotypes_global_{version}.csv not found; pass the SeeGULL folder "
        "(e.g. ../shared/data/bias/seegull)"
    )


def load_seegull(seegull_dir: str | Path, version: str = "v2") -> list[Stereotype]:
    """Read SeeGULL's global (nationality) stereotypes, either version.

    The header row is found by its column names (v1 has a group row above it); rows without an
    identity, attribute or numeric offensiveness are skipped with a warning.

    Args:
        seegull_dir: The SeeGULL folder.
        version: ``"v1"`` or ``"v2"`` (lemmatised attributes, fewer noisy rows).

    Returns:
        One :class:`Stereotype` per row, identities cleaned of stray leading digits.

    Raises:
        SeegullError: The file is missing or lacks the identity/attribute/offensiveness columns.
    """
    path = seegull_file(seegull_dir, version)
    with path.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    header_at = None
    for i, row in enumerate(rows[:5]):
        names = [c.strip().lower() for c in row]
        if "identity" in names and "attribute" in names:
            header_at = i
            break
    if header_at is None:
        raise SeegullError(f"{path}: no header row with 'identity' and 'attribute' in the first 5 rows")
    names = [c.strip().lower() for c in rows[header_at]]
    score_cols = [i for i, n in enumerate(names) if n.startswith("mean offensiveness")]
    if not score_cols:
        raise SeegullError(f"{path}: no 'mean offensiveness_score' column; columns are {names}")
    i_id, i_attr, i_score = names.index("identity"), names.index("attribute"), score_cols[0]
    out: list[Stereotype] = []
    bad = 0
    for row in rows[header_at + 1 :]:
        try:
            identity, attribute = _clean_identity(row[i_id]), " ".join(row[i_attr].split())
            score = float(row[i_score])
        except (IndexError, ValueError):
            bad += 1
            continue
        if not identity or not attribute or math.isnan(score):
            bad += 1
            continue
        out.append(Stereotype(identity, attribute, score))
    if bad:
        logger.warning("%s: skipped %d malformed rows", path, bad)
    return out


def identity_names(keyword: str) -> tuple[str, ...]:
    """SeeGULL identity names for a taxonomy keyword (mapped, else the keyword itself)."""
    return IDENTITY_MAP.get(keyword, (keyword,))


def shared_nationalities(keywords: Iterable[str], identities: Iterable[str]) -> dict[str, list[str]]:
    """Taxonomy keyword -> the SeeGULL identities it stands for, for keywords found in SeeGULL."""
    by_lower: dict[str, list[str]] = {}
    for name in identities:
        by_lower.setdefault(name.lower(), []).append(name)
    out: dict[str, list[str]] = {}
    for kw in keywords:
        found = sorted({n for alias in identity_names(kw) for n in by_lower.get(alias.lower(), [])})
        if found:
            out[kw] = found
    return out


class AttributeMatcher:
    """Normalises SeeGULL attributes and corpus words to comparable stem keys.

    Args:
        word_filter: The word filter of the counts (a :class:`CooccurrenceCounts`), so that an
            attribute keeps exactly the words that could have been counted; ``None`` uses the
            default filter (lowercase, NLTK English stopwords, no punctuation or numbers).
        multiword: ``"skip"``, ``"all"`` or ``"any"`` (see the module docstring).
    """

    def __init__(
        self, word_filter: CooccurrenceCounts | None = None, multiword: MultiwordPolicy = "skip"
    ) -> None:
        if multiword not in MULTIWORD:
            raise ValueError(f"multiword={multiword!r} is not one of {MULTIWORD}")
        from nltk.stem.snowball import SnowballStemmer

        self._stemmer = SnowballStemmer("english")
        self._filter = word_filter if word_filter is not None else CooccurrenceCounts(prune_every=None)
        self.multiword = multiword

    def word_key(self, word: str) -> str:
        """Stem of a word, lowercased, ``-`` and ``_`` removed."""
        w = word.lower().replace("-", "").replace("_", "")
        return self._stemmer.stem(w) if w else w

    def attribute_key(self, attribute: str) -> tuple[str, ...]:
        """Sorted stems of the attribute's content words (negations kept); empty if none."""
        keys = set()
        for tok in attribute.lower().replace("_", " ").split():
            tok = tok.strip(".,;:!?\"'()")
            if not tok:
                continue
            if tok in NEGATIONS or tok.endswith("n't"):
                keys.add("not")
                continue
            if not self._filter.filter_tokens([tok]):
                continue
            keys.add(self.word_key(tok))
        keys.discard("")
        return tuple(sorted(keys))

    def found(self, key: tuple[str, ...], top_keys: Collection[str]) -> bool | None:
        """Whether an attribute key is among the top words' keys; ``None`` if skipped."""
        if len(key) > 1:
            if self.multiword == "skip":
                return None
            if self.multiword == "any":
                # a negated attribute ("not tall") never matches its bare word ("tall")
                negated_ok = "not" not in key or "not" in top_keys
                return negated_ok and any(k in top_keys for k in key if k != "not")
        return all(k in top_keys for k in key)


@dataclass
class RecallResult:
    """Recall@k pooled over identities (micro) and averaged per identity (macro)."""

    k: int
    hits: int
    total: int
    micro: float
    macro: float
    identities: int


def recall_at_k(
    rankings: Mapping[str, Sequence[str]],
    stereotypes: Mapping[str, Iterable[str]],
    ks: Iterable[int] = DEFAULT_KS,
    *,
    matcher: AttributeMatcher | None = None,
) -> tuple[dict[int, RecallResult], int]:
    """Recall@k of stereotype attributes in ranked word lists.

    Args:
        rankings: Identity -> its words, best first (only identities present here count).
        stereotypes: Identity -> its attribute phrases (duplicates after normalisation count once).
        ks: The cut-offs.
        matcher: Normalisation and multi-word policy (default: no word filter, ``"skip"``).

    Returns:
        ``({k: RecallResult}, number of multi-word attributes skipped)``. Identities with no
        (non-skipped) attribute are left out; recall is NaN when nothing is left.
    """
    matcher = matcher or AttributeMatcher()
    ks = sorted(set(ks))
    if not ks or ks[0] < 1:
        raise ValueError(f"ks={ks} must be positive ints")
    keys_by_identity: dict[str, set[tuple[str, ...]]] = {}
    skipped = 0
    for identity, phrases in stereotypes.items():
        if identity not in rankings:
            continue
        keys = {k for k in (matcher.attribute_key(p) for p in phrases) if k}
        if matcher.multiword == "skip":
            skipped += sum(1 for k in keys if len(k) > 1)
            keys = {k for k in keys if len(k) == 1}
        if keys:
            keys_by_identity[identity] = keys
    out: dict[int, RecallResult] = {}
    for k in ks:
        hits = total = 0
        per_identity = []
        for identity, keys in keys_by_identity.items():
            top_keys = {matcher.word_key(w) for w in rankings[identity][:k]}
            h = sum(1 for key in keys if matcher.found(key, top_keys))
            hits += h
            total += len(keys)
            per_identity.append(h / len(keys))
        out[k] = RecallResult(
            k=k,
            hits=hits,
            total=total,
            micro=hits / total if total else math.nan,
            macro=sum(per_identity) / len(per_identity) if per_identity else math.nan,
            identities=len(per_identity),
        )
    return out, skipped


def seegull_recall_table(
    counts: CooccurrenceCounts,
    seegull_dir: str | Path,
    ks: Iterable[int] = DEFAULT_KS,
    version: str = "v2",
    *,
    multiword: MultiwordPolicy = "skip",
    top_n: int = DEFAULT_TOP_N,
    min_word_count: int = DEFAULT_MIN_WORD_COUNT,
    min_attribute_sentences: int = DEFAULT_MIN_ATTRIBUTE_SENTENCES,
    min_attribute_share: float = DEFAULT_MIN_ATTRIBUTE_SHARE,
    taxonomy: Taxonomy | None = None,
) -> list[dict[str, Any]]:
    """The paper's Table 8: recall@k of SeeGULL stereotypes under eq. 2 and eq. 1.

    Args:
        counts: Co-occurrence counts with a ``nationality`` class.
        seegull_dir: The SeeGULL folder (holding ``stereotypes_global_v1/v2.csv``).
        ks: Cut-offs.
        version: SeeGULL version, ``"v1"`` or ``"v2"``.
        multiword: Policy for multi-word attributes (``"skip"``, ``"all"``, ``"any"``).
        top_n: Vocabulary rule setting (see :func:`fairstream.stats.scores.vocabulary`).
        min_word_count: Vocabulary rule setting.
        min_attribute_sentences: Nationalities with fewer sentences are left out.
        min_attribute_share: Vocabulary rule relaxation (1.0: the paper's intersection).
        taxonomy: The run's taxonomy: its nationality keywords and forms (default: the shipped
            taxonomy the counts were made with, else ``taxonomy-v1``).

    Returns:
        Four rows (positive stereotypes vs eq. 2 r=positive and vs eq. 1, negative stereotypes
        vs eq. 2 r=negative and vs eq. 1), each with ``stereotypes``, ``score``, ``regard``,
        ``nationalities``, ``n_stereotypes``, ``in_vocabulary`` (attributes that are a word of
        ``V`` at all: the most any k can find), ``skipped_multiword``, and per k
        ``recall@k`` (pooled), ``macro_recall@k`` and ``hits@k``; plus ``version``,
        ``multiword``, ``vocabulary_size`` and ``nationalities_missing`` (shared with SeeGULL but
        below ``min_attribute_sentences`` or not counted).
    """
    ks = tuple(sorted(set(ks)))
    stereotypes = load_seegull(seegull_dir, version)
    sc = score_class(
        counts,
        NATIONALITY_CLASS,
        top_n=top_n,
        min_word_count=min_word_count,
        min_attribute_sentences=min_attribute_sentences,
        min_attribute_share=min_attribute_share,
        taxonomy=taxonomy,
    )
    from fairstream.stats.provenance import counts_taxonomy
    from fairstream.taxonomy import Taxonomy

    taxonomy = taxonomy or counts_taxonomy(counts) or Taxonomy.default()
    nationality_keywords = sorted(
        {a.keyword for a in taxonomy.classes.get(NATIONALITY_CLASS, [])}
        | {kw for _, kw in counts.attributes(NATIONALITY_CLASS)}
    )
    shared = shared_nationalities(nationality_keywords, {s.identity for s in stereotypes})
    active = [kw for kw in shared if kw in sc.keywords]
    missing = sorted(set(shared) - set(active))
    if missing:
        logger.info("SeeGULL nationalities without enough counts (left out): %s", missing)

    # mean offensiveness per (keyword, normalised attribute), over duplicate rows and aliases
    matcher = AttributeMatcher(counts, multiword)
    identity_to_kw = {name: kw for kw, names in shared.items() for name in names}
    scores: dict[str, dict[tuple[str, ...], list[float]]] = {}
    phrase_of: dict[tuple[str, tuple[str, ...]], str] = {}
    for s in stereotypes:
        kw = identity_to_kw.get(s.identity)
        if kw is None or kw not in active:
            continue
        key = matcher.attribute_key(s.attribute)
        if not key:
            continue
        scores.setdefault(kw, {}).setdefault(key, []).append(s.offensiveness)
        phrase_of.setdefault((kw, key), s.attribute)
    by_polarity: dict[str, dict[str, list[str]]] = {"positive": {}, "negative": {}}
    for kw, per_key in scores.items():
        for key, values in per_key.items():
            polarity = _polarity(sum(values) / len(values))
            if polarity is not None:
                by_polarity[polarity].setdefault(kw, []).append(phrase_of[(kw, key)])

    vocab_keys = {matcher.word_key(w) for w in sc.words}
    rows: list[dict[str, Any]] = []
    for polarity in ("positive", "negative"):
        phrases = by_polarity[polarity]
        in_vocab = sum(
            1
            for kw, ps in phrases.items()
            for key in {matcher.attribute_key(p) for p in ps}
            if (len(key) == 1 or multiword != "skip") and matcher.found(key, vocab_keys)
        )
        for regard in (polarity, None):
            rankings = {kw: [w for w, _ in sc.top(kw, max(ks), regard)] for kw in phrases}
            results, skipped = recall_at_k(rankings, phrases, ks, matcher=matcher)
            row: dict[str, Any] = {
                "stereotypes": polarity,
                "score": f"eq2 (r={regard})" if regard else "eq1",
                "regard": regard,
                "version": version,
                "multiword": multiword,
                "nationalities": results[ks[0]].identities,
                "n_stereotypes": results[ks[0]].total,
                "in_vocabulary": in_vocab,
                "skipped_multiword": skipped,
                "vocabulary_size": len(sc.words),
                "nationalities_missing": missing,
            }
            for k in ks:
                row[f"recall@{k}"] = results[k].micro
                row[f"macro_recall@{k}"] = results[k].macro
                row[f"hits@{k}"] = results[k].hits
            rows.append(row)
    return rows


def _pct(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * value:.1f}"


def format_seegull_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Markdown table of :func:`seegull_recall_table` rows (recall in %, pooled over nationalities)."""
    if not rows:
        return "_no SeeGULL rows_\n"
    ks = sorted(int(key.split("@")[1]) for key in rows[0] if key.startswith("recall@"))
    head = ["stereotypes", "score", "nationalities", "stereotypes (n)", "in V", *[f"R@{k}" for k in ks]]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|"]
    for row in rows:
        cells = [
            str(row["stereotypes"]),
            str(row["score"]),
            str(row["nationalities"]),
            str(row["n_stereotypes"]),
            str(row.get("in_vocabulary", "")),
            *[_pct(row.get(f"recall@{k}")) for k in ks],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    first = rows[0]
    notes = [
        f"SeeGULL {first.get('version')}; recall@k in % pooled over nationalities; 'in V': stereotypes "
        "that are words of the vocabulary at all (the most any k can find); "
        f"multi-word attributes: {first.get('multiword')}"
        + (
            " (skipped: "
            + ", ".join(f"{r['stereotypes']} {r.get('skipped_multiword')}" for r in rows if r["regard"])
            + ")"
            if first.get("multiword") == "skip"
            else ""
        )
        + f"; vocabulary size {first.get('vocabulary_size')}.",
    ]
    if first.get("nationalities_missing"):
        notes.append("Left out (too few sentences): " + ", ".join(first["nationalities_missing"]) + ".")
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"
