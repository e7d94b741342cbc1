r"""Keyword detection: whole-word, case-insensitive matches of taxonomy forms with offsets.

Matching rules (deliberate, and tested):

* A match is a taxonomy surface form (keyword or listed plural) not preceded or followed by a
  word character (``\w``: letters of any script, digits, underscore). So "Muslims" and
  "Muslim's" match, "Muslimah" and "blackboard" do not.
* Hyphens split words: "Asian-American" matches ``asian``, "anti-Muslim" matches ``muslim``, and
  "black-and-white" matches both; whether such a use refers to people is left to the WSD model.
  Hyphenated forms in the taxonomy ("non-binary") match as a whole.
* Possessives: "Muslim's"/"Muslim’s" match the form before the apostrophe.
* Overlapping candidates resolve to the longest form at a position ("Asians" over "Asian").
* Every occurrence is reported, in text order.

Text is lowercased once and scanned by an Aho-Corasick automaton (``ahocorasick_rs``, about 2x
the compiled trie-shaped regex used before); its overlapping raw hits are then held to the rules
above in Python (a few per kilobyte of web text). Text with the three characters that ``re``'s
case folding treats differently from ``str.lower()`` goes through the case-insensitive regex.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import ahocorasick_rs

from fairstream.taxonomy import Attribute, Taxonomy


@dataclass(frozen=True)
class Mention:
    """One keyword occurrence: character offsets into the text it was found in."""

    start: int
    end: int
    surface: str
    keyword: str
    attribute_class: str

    def to_dict(self) -> dict[str, object]:
        """JSON-able form."""
        return {
            "start": self.start,
            "end": self.end,
            "surface": self.surface,
            "keyword": self.keyword,
            "class": self.attribute_class,
        }


def _trie_pattern(words: list[str]) -> str:
    """A regex alternation shaped as a trie (shared prefixes factored), longest match first."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, dict]) -> str:
        optional = "" in node
        branches = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if optional:
            # the shorter word ends here; the longer continuation is tried first (greedy "?")
            return f"(?:{body})?" if len(branches) > 1 or len(body) > 1 else f"{body}?"
        return body

    return build(trie)


_FOLD_ONLY_CHARS = ("\u0130", "\u0131", "\u017f")
_FOLD_TO_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"  # exactly re's \w for str patterns


class KeywordDetector:
    """Find taxonomy keywords in text."""

    def __init__(self, taxonomy: Taxonomy | None = None) -> None:
        self.taxonomy = taxonomy or Taxonomy.default()
        self._forms: dict[str, Attribute] = self.taxonomy.forms
        self._form_list = sorted(self._forms)
        self._automaton = ahocorasick_rs.AhoCorasick(
            self._form_list, matchkind=ahocorasick_rs.MatchKind.Standard
        )
        boundary = r"(?<!\w)(?:{})(?!\w)"
        self._pattern = re.compile(boundary.format(_trie_pattern(self._form_list)), re.IGNORECASE)

    @staticmethod
    def _needs_regex(text: str) -> bool:
        # IGNORECASE and str.lower() agree except for three characters that re folds onto ASCII
        # letters but lower() does not ("İ" lowers to two characters; "ı" and "ſ" stay as they are)
        return not text.isascii() and any(c in text for c in _FOLD_ONLY_CHARS)

    def _spans(self, lowered: str) -> list[tuple[int, int]]:
        """Matches in lowercased text: leftmost first, longest form at a position, whole words."""
        n = len(lowered)
        hits = [
            (start, end)
            for _, start, end in self._automaton.find_matches_as_indexes(lowered, overlapping=True)
            if (start == 0 or not _is_word(lowered[start - 1])) and (end == n or not _is_word(lowered[end]))
        ]
        hits.sort(key=lambda h: (h[0], -h[1]))
        out, pos = [], 0
        for start, end in hits:
            if start >= pos:
                out.append((start, end))
                pos = end
        return out

    def has_any(self, text: str) -> bool:
        """Whether ``text`` contains at least one keyword (exactly when ``find`` reports one)."""
        if self._needs_regex(text):
            return self._pattern.search(text) is not None
        return bool(self._spans(text.lower()))

    def find(self, text: str) -> list[Mention]:
        """All keyword occurrences in ``text``, in order, with offsets into ``text``."""
        if not self._needs_regex(text):
            # without the three special characters lower() keeps every offset and a case-sensitive
            # scan of the lowered text finds exactly what IGNORECASE would
            lowered = text.lower()
            return [
                Mention(s, e, text[s:e], attr.keyword, attr.attribute_class)
                for s, e in self._spans(lowered)
                for attr in (self._forms[lowered[s:e]],)
            ]
        out = []
        for m in self._pattern.finditer(text):
            surface = m.group(0)
            attr = self._forms.get(surface.lower()) or self._forms[surface.translate(_FOLD_TO_ASCII).lower()]
            out.append(Mention(m.start(), m.end(), surface, attr.keyword, attr.attribute_class))
        return out

    def __getstate__(self) -> dict[str, object]:
        return {"taxonomy": self.taxonomy.to_dict(), "source": self.taxonomy.source}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(Taxonomy.from_dict(state["taxonomy"], source=str(state["source"])))  # type: ignore[arg-type,misc]
