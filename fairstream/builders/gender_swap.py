"""Counterfactual gender swaps (two-way) of gendered words, pronouns and given names.

The lexicon is the WinoBias lists (``generalized_swaps.txt``, ``extra_gendered_words.txt`` in
``../shared/data/bias/winobias/``, read at run time) with fairstream's own list on top
(``data/gender-words-v1.tsv``: fixes of the lists' typos and one-sided pairs, words they lack).
Every pair is made two-way unless a direction is already given. As in the counterfactual data
substitution (CDS) reference implementations, NLTK's perceptron tagger settles what a word list
cannot:

* ``her`` becomes ``his`` when the next word is tagged a noun, adjective or number (a
  determiner: "her job") and ``him`` otherwise ("asked her to"); where NLTK's own tag of ``her``
  (PRP$ / PRP) disagrees, the swap is listed as uncertain for review. ``his`` becomes ``hers``
  when no noun phrase follows ("the book is his") and ``her`` otherwise.
* Given names (``data/gender-names-v1.txt``, paired by the project) are swapped only when tagged
  a proper noun (NNP), so "Will" and "Mark" as verbs stay.
* Words whose gendered sense is rare or that have no clear counterpart (``AMBIGUOUS``: "miss" as
  a verb, "master" of a degree, "host" of a network, ...) are left alone unless tagged NNP (a
  title, "Miss Jones"); each is reported with its reason.

Casing is kept (lower / Capitalized / UPPER). Every output record carries provenance: each swap
with its offsets, and the cases left alone.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from fairstream.builders.records import BuilderConfigError, source_id, with_provenance
from fairstream.builders.surface_forms import match_case
from fairstream.errors import MissingDependencyError

logger = logging.getLogger(__name__)

BUILDER = "gender_swap"
WINOBIAS_FILES = ("generalized_swaps.txt", "extra_gendered_words.txt")
PROJECT_WORDS = "gender-words-v1.tsv"
PROJECT_NAMES = "gender-names-v1.txt"
# swapped only when tagged NNP (a title or name); otherwise their common non-gendered sense wins
AMBIGUOUS = frozenset(
    {"miss", "master", "masters", "host", "hosts", "god", "gods", "governor", "governors", "chick", "chicks"}
    | {"tailor", "tailors", "priest", "priests", "lord", "lords"}
)
PRONOUNS = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself"})
# tags of the next word that make "his" a determiner ("his old car") rather than "hers"
_NOUN_PHRASE = ("NN", "JJ", "CD", "VBG", "RB")
# ... and "her" a determiner ("her job" -> "his job") rather than an object ("asked her to" -> "him").
# The next word's tag decides, not the tag of "her" itself: on WinoBias dev the tagger calls "her"
# PRP$ in "asked her for tips" and PRP in "it was her job"; where the two disagree the swap is
# listed as uncertain ("wished her happy birthday" is a double object the rule gets wrong)
_HER_DETERMINER_BEFORE = ("NN", "JJ", "CD")

_FIXED_PRONOUNS = {
    "he": "she",
    "she": "he",
    "him": "her",
    "hers": "his",
    "himself": "herself",
    "herself": "himself",
}
_TOKEN = re.compile(r"(?i:mrs?|ms)\.|\w+(?:[-'’]\w+)*(?<!'s)(?<!’s)|'s|’s|[^\w\s]")


def _data_file(name: str) -> Path:
    return Path(str(resources.files("fairstream") / "data" / name))


@dataclass(frozen=True)
class GenderLexicon:
    """Word -> counterpart (lowercase), given-name pairs, and where each entry came from."""

    words: dict[str, str]
    names: dict[str, str]
    sources: tuple[str, ...]

    @classmethod
    def load(cls, winobias_dir: str | Path | None = None) -> GenderLexicon:
        """Read the WinoBias lists (when a folder is given) and the project's lists."""
        words: dict[str, str] = {}
        sources: list[str] = []
        explicit: set[str] = set()
        if winobias_dir is not None:
            folder = Path(winobias_dir)
            for name in WINOBIAS_FILES:
                path = folder / name
                if not path.is_file():
                    raise BuilderConfigError(
                        f"--winobias-dir {folder}: {name} not found; pass the WinoBias folder "
                        "(e.g. ../shared/data/bias/winobias)"
                    )
                pairs = []
                for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                    parts = line.split()
                    if not parts:
                        continue
                    if len(parts) != 2:
                        raise BuilderConfigError(f"{path}:{lineno}: expected two words, got {line!r}")
                    pairs.append((parts[0].lower(), parts[1].lower()))
                # explicit directions first, then the reverse of each pair where none is given
                for a, b in pairs:
                    if a not in explicit:
                        words[a] = b
                        explicit.add(a)
                for a, b in pairs:
                    words.setdefault(b, a)
                sources.append(str(path))
        words_path = _data_file(PROJECT_WORDS)
        for lineno, line in enumerate(words_path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip() or line.startswith("#"):
                continue
            a, b, mode = line.split("\t")
            if mode not in ("both", "one-way"):
                raise BuilderConfigError(f"{words_path}:{lineno}: third column must be 'both' or 'one-way'")
            words[a] = b
            if mode == "both":
                words[b] = a
        sources.append(f"fairstream/data/{PROJECT_WORDS}")
        names: dict[str, str] = {}
        for line in _data_file(PROJECT_NAMES).read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                male, female = line.split("\t")
                names[male.lower()], names[female.lower()] = female, male
        sources.append(f"fairstream/data/{PROJECT_NAMES}")
        # pronouns are resolved by part of speech, never by the table
        for p in PRONOUNS:
            words.pop(p, None)
        return cls(words, names, tuple(sources))


@dataclass
class SwapStats:
    """Counts of one run (they add)."""

    entries: int = 0
    entries_changed: int = 0
    swaps: Counter[str] = field(default_factory=Counter)  # by kind: word, pronoun, name
    left_alone: Counter[str] = field(default_factory=Counter)  # by reason
    her_as: Counter[str] = field(default_factory=Counter)  # his / him
    uncertain: int = 0
    examples_left_alone: list[str] = field(default_factory=list)
    examples_uncertain: list[str] = field(default_factory=list)

    def __add__(self, other: SwapStats) -> SwapStats:
        return SwapStats(
            self.entries + other.entries,
            self.entries_changed + other.entries_changed,
            self.swaps + other.swaps,
            self.left_alone + other.left_alone,
            self.her_as + other.her_as,
            self.uncertain + other.uncertain,
            (self.examples_left_alone + other.examples_left_alone)[:50],
            (self.examples_uncertain + other.examples_uncertain)[:50],
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "entries": self.entries,
            "entries_changed": self.entries_changed,
            "swaps": dict(sorted(self.swaps.items())),
            "swaps_total": sum(self.swaps.values()),
            "left_alone": dict(sorted(self.left_alone.items())),
            "left_alone_total": sum(self.left_alone.values()),
            "her_as": dict(sorted(self.her_as.items())),
            "uncertain": self.uncertain,
            "examples_left_alone": self.examples_left_alone,
            "examples_uncertain": self.examples_uncertain,
        }


class GenderSwapper:
    """Swap gendered words, pronouns and given names of texts (see the module docstring).

    Args:
        lexicon: The word and name tables; ``None`` loads the project lists plus the WinoBias
            lists of ``winobias_dir``.
        winobias_dir: WinoBias folder with ``generalized_swaps.txt`` and ``extra_gendered_words.txt``.
        swap_names: Whether to swap given names (NNP only).
    """

    def __init__(
        self,
        lexicon: GenderLexicon | None = None,
        *,
        winobias_dir: str | Path | None = None,
        swap_names: bool = True,
    ) -> None:
        self.lexicon = lexicon or GenderLexicon.load(winobias_dir)
        self.swap_names = swap_names
        self.stats = SwapStats()
        self._tagger: Any = None
        self._splitter: Any = None

    def _tag(self, tokens: list[str]) -> list[str]:
        if self._tagger is None:
            try:
                from nltk.tag.perceptron import PerceptronTagger

                self._tagger = PerceptronTagger()
            except LookupError as exc:
                raise MissingDependencyError(
                    "gender swaps need NLTK's averaged_perceptron_tagger_eng: set NLTK_DATA to a folder "
                    "that has taggers/averaged_perceptron_tagger_eng (e.g. ../shared/data/nltk_data) "
                    f"or run python -m nltk.downloader averaged_perceptron_tagger_eng ({exc})"
                ) from None
        return [t for _, t in self._tagger.tag(tokens)]

    def _sentences(self, text: str) -> list[tuple[int, int]]:
        if self._splitter is None:
            from fairstream.text import SentenceSplitter

            self._splitter = SentenceSplitter()
        return self._splitter.spans(text) or [(0, len(text))]

    def swap_text(self, text: str) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
        """The swapped text, its changes and the cases left alone (offsets into ``text``)."""
        changes: list[dict[str, Any]] = []
        left: list[dict[str, Any]] = []
        for s, e in self._sentences(text):
            toks = [(m.start() + s, m.end() + s, m.group(0)) for m in _TOKEN.finditer(text[s:e])]
            if not toks:
                continue
            tags = self._tag([t for _, _, t in toks])
            for i, (start, end, tok) in enumerate(toks):
                low = tok.lower()
                tag = tags[i]
                nxt = tags[i + 1] if i + 1 < len(tags) else "."
                new, kind, reason = self._decide(tok, tag, nxt)
                if new is None:
                    if reason is not None:
                        left.append({"start": start, "end": end, "word": tok, "tag": tag, "reason": reason})
                    continue
                change = {"start": start, "end": end, "from": tok, "to": match_case(new, tok), "kind": kind}
                if low == "her":
                    change["tag"] = tag
                    if (tag == "PRP$") != (new == "his"):  # the tagger's own call disagrees
                        change["uncertain"] = True
                changes.append(change)
        out, pos = [], 0
        for c in changes:
            out.append(text[pos : c["start"]])
            out.append(c["to"])
            pos = c["end"]
        out.append(text[pos:])
        return "".join(out), changes, left

    def _decide(self, tok: str, tag: str, nxt: str) -> tuple[str | None, str, str | None]:
        low = tok.lower()
        if low == "her":
            return ("his" if nxt.startswith(_HER_DETERMINER_BEFORE) else "him"), "pronoun", None
        if low == "his":
            return ("her" if nxt.startswith(_NOUN_PHRASE) else "hers"), "pronoun", None
        if low in _FIXED_PRONOUNS:
            return _FIXED_PRONOUNS[low], "pronoun", None
        if low in self.lexicon.words:
            if low in AMBIGUOUS and tag != "NNP":
                return None, "word", f"ambiguous word ({tag}, not a title)"
            return self.lexicon.words[low], "word", None
        if low in self.lexicon.names and tok[:1].isupper():  # a lowercase "will" or "mark" is no name
            if not self.swap_names:
                return None, "name", None
            if tag != "NNP":
                return None, "name", f"listed name not tagged as a proper noun ({tag})"
            return self.lexicon.names[low].lower(), "name", None
        return None, "", None

    def swap(
        self, records: Iterable[dict[str, Any]], text_field: str = "text", path: Any = None
    ) -> Iterator[dict[str, Any]]:
        """Yield one swapped record per input record, with provenance; counts go to ``self.stats``."""
        for rec in records:
            text = rec[text_field]
            new_text, changes, left = self.swap_text(text)
            sid = source_id(rec, path)
            st = self.stats
            st.entries += 1
            st.entries_changed += bool(changes)
            for c in changes:
                st.swaps[c["kind"]] += 1
                if c["from"].lower() == "her":
                    st.her_as[c["to"].lower()] += 1
                if c.get("uncertain"):
                    st.uncertain += 1
                    if len(st.examples_uncertain) < 50:
                        st.examples_uncertain.append(
                            f"{sid}: her -> {c['to']} ({c['tag']}): {_around(text, c)}"
                        )
            for x in left:
                st.left_alone[x["reason"].split(" (")[0]] += 1
                if len(st.examples_left_alone) < 50:
                    st.examples_left_alone.append(f"{sid}: {x['word']!r} {x['reason']}: {_around(text, x)}")
            out = dict(rec)
            out[text_field] = new_text
            if rec.get("id") is not None:
                out["id"] = f"{rec['id']}#swap"
            yield with_provenance(out, source=sid, builder=BUILDER, changes=changes, left_alone=left)


def _around(text: str, span: dict[str, Any], width: int = 40) -> str:
    lo, hi = max(0, span["start"] - width), min(len(text), span["end"] + width)
    return f"...{text[lo : span['start']]}[{text[span['start'] : span['end']]}]{text[span['end'] : hi]}..."
