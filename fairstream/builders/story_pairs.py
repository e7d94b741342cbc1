"""Story pairs as text: the prompts, parsing messy replies, the ROUGE-1 filter, the CDA swap.

The prompts of the method and pure functions on strings, used by ``fairstream.builders.sft``
(the pipeline and its files):

* ``STORY_PAIR_PROMPT`` (with a seeded setting, theme and pair of names), ``JUDGMENT_PROMPT`` (the
  exploratory judgment) and ``SFT_QUESTION`` (the training prompt after each story);
* ``parse_story_pair`` / ``parse_judgment`` / ``stance_explanation`` read a story pair, an
  exploratory judgment and a stance's explanation out of free-form replies;
* ``rouge1_f`` / ``in_rouge_range``: ROUGE-1 F with Porter stemming (``rouge-score``, the paper's
  setting) and the closed interval a pair must fall in (0.80-0.95 by default);
* ``gendered_terms``: the gendered words and character names a "gender-neutral" text must not use;
* ``swap_map`` / ``swap_text``: rewrite one story's judgment for the other story of its pair, from
  the word swaps the two stories themselves show (names, pronouns, side characters).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fairstream.annotate.prompts import RAW_SEPARATOR
from fairstream.builders.genmo import is_option_line
from fairstream.errors import MissingDependencyError

ROUGE_RANGE = (0.80, 0.95)
PROMPT_VERSION = "exploratory-v1"  # of the prompts below; written into every record

# -- prompts (our wording of the paper's method) ----------------------------------------------------
SETTINGS = ("at work", "in a romantic relationship", "in a family", "among friends or neighbours")
THEMES = (
    "keeping money found on the street",
    "lying to spare a friend's feelings",
    "breaking a promise to help someone in need",
    "reporting a colleague's mistake",
    "taking credit for shared work",
    "skipping a family event for a career chance",
    "reading a partner's messages",
    "refusing to lend money to a relative",
    "leaving a job without notice",
    "covering for a friend who cheated",
    "ending a friendship over politics",
    "asking a partner to move for one's own job",
    "spending shared savings on a hobby",
    "quitting a team just before a big match",
    "telling a child a hard truth",
    "ignoring calls while at work",
    "waiting for a late friend instead of leaving",
    "returning a gift one did not like",
    "downloading a film without paying",
    "letting a parent pay for a wedding",
    "posting a photo of a friend without asking",
    "choosing a pet over a partner's allergy",
    "taking the last seat on a crowded bus",
    "applying for the job a friend wanted",
)
MALE_NAMES = ("James", "Daniel", "Omar", "Luis", "Kenji", "Samuel", "Ravi", "Peter", "Tom", "Ahmed")
FEMALE_NAMES = ("Emma", "Sofia", "Aisha", "Maria", "Yuki", "Grace", "Priya", "Hannah", "Lucy", "Fatima")

STORY_PAIR_PROMPT = """\
Write one short story (three to five sentences) twice. The two versions must be identical except \
for the gender of the main character: in the first the main character is a man called \
{male_name}, in the second a woman called {female_name}. Change only the name and the gendered \
words (he/she, his/her, husband/wife, ...); keep every other word the same.
The story takes place {setting} and is about {theme}. The main character's action should be \
morally ambiguous: some would call it moral, others immoral. Do not judge it.

Output format:
Male Story: [the story with {male_name}]
Male Main Character: {male_name}
Female Story: [the same story with {female_name}]
Female Main Character: {female_name}"""

STORY_RETRY_PROMPT = """\
Please give the two versions of the story again in exactly this format:
Male Story: [...]
Male Main Character: [name]
Female Story: [...]
Female Main Character: [name]"""

JUDGMENT_PROMPT = """\
Two readers judged the two stories below, which are identical except for the gender of the \
main character, and reached different stances.

Story 1: {story_a}
Stance: {stance_a}
Explanation: {explanation_a}

Story 2: {story_b}
Stance: {stance_b}
Explanation: {explanation_b}

Write one balanced judgment of the main character's action that explores both views: what makes \
it moral, what makes it immoral, and when each view holds. It must fit both stories equally. \
Call the protagonist only "the main character": use no names and no gendered words (he, she, \
his, her, man, woman, ...).

Output format:
Judgment: [your balanced, gender-neutral judgment]"""

JUDGMENT_RETRY_PROMPT = 'Please reply with one paragraph that starts with "Judgment:".'

SFT_QUESTION = "Is the main character's action moral or immoral? Explain your judgment."

# words that give a protagonist's gender away; the judgment must use none of them
GENDERED_WORDS = frozenset(
    """he she him her his hers himself herself man woman men women boy girl boys girls male female
    mr mrs ms miss sir madam lady ladies gentleman gentlemen guy husband wife husbands wives
    boyfriend girlfriend father mother dad mom mum son daughter brother sister uncle aunt nephew
    niece king queen grandfather grandmother grandson granddaughter fiance fiancee""".split()
)
# for the CDA swap of words the two stories do not show (both directions; "her" -> "his"/"him"
# is settled by what the stories show, else "his")
SWAP_WORDS = {
    "he": "she",
    "him": "her",
    "his": "her",
    "himself": "herself",
    "man": "woman",
    "men": "women",
    "boy": "girl",
    "boys": "girls",
    "male": "female",
    "mr": "ms",
    "husband": "wife",
    "boyfriend": "girlfriend",
    "father": "mother",
    "dad": "mom",
    "son": "daughter",
    "brother": "sister",
    "uncle": "aunt",
    "nephew": "niece",
    "king": "queen",
    "gentleman": "lady",
    "grandfather": "grandmother",
    "grandson": "granddaughter",
}


# -- parsing --------------------------------------------------------------------------------------
@dataclass
class StoryPair:
    """The two versions of a story; names are ``None`` when they could not be found."""

    male_story: str
    female_story: str
    male_name: str | None = None
    female_name: str | None = None


_MARKDOWN = re.compile(r"[*`#~]+|(?<!\w)_{2,}|_{2,}(?!\w)")
_HEADERS = {
    "male_name": r"\bmale\s+(?:main\s+)?(?:character|protagonist)(?:'s)?(?:\s+name)?",
    "female_name": r"\bfemale\s+(?:main\s+)?(?:character|protagonist)(?:'s)?(?:\s+name)?",
    "male_story": r"\bmale\s+(?:story|version)(?:\s*\([^)\n]{0,30}\))?",
    "female_story": r"\bfemale\s+(?:story|version)(?:\s*\([^)\n]{0,30}\))?",
    "other": r"\b(?:stance|explanation|note)",
}
_HEADER = re.compile(
    r"(?:^|\n)[ \t>\-\d.)]*(?:"
    + "|".join(f"(?P<{k}>{v})" for k, v in _HEADERS.items())
    + r")[ \t]*[:\-–—]?[ \t]*",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"^\[[^\]]*\]$")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*")


def _clean(text: str) -> str:
    text = " ".join(text.split()).strip().strip("\"'“”[]").strip()
    return "" if _PLACEHOLDER.match(text) else text


def parse_story_pair(reply: str | None) -> StoryPair | None:
    """Read the male and female stories (and names) out of a model reply; ``None`` if absent.

    Headers ("Male Story:", "**Female Version:**", "Male Main Character:", ...) may carry markdown,
    numbering and any case; a story runs to the next header. A story under eight words, an echoed
    placeholder, or two identical stories give ``None``. Names missing from the reply are taken from
    where the two stories differ (the capitalised words swapped between them).
    """
    if not reply:
        return None
    text = _MARKDOWN.sub("", reply)
    parts: dict[str, str] = {}
    matches = list(_HEADER.finditer(text))
    if not matches:
        return None
    for m, nxt in zip(matches, [*matches[1:], None], strict=True):
        kind = m.lastgroup
        if kind is None or kind == "other" or kind in parts:
            continue
        parts[kind] = text[m.end() : nxt.start() if nxt is not None else len(text)]
    male, female = _clean(parts.get("male_story", "")), _clean(parts.get("female_story", ""))
    if len(male.split()) < 8 or len(female.split()) < 8 or male == female:
        return None
    names = {k: _name(parts.get(k, "")) for k in ("male_name", "female_name")}
    if names["male_name"] is None or names["female_name"] is None:
        inferred = infer_names(male, female)
        names = {k: names[k] or v for k, v in zip(("male_name", "female_name"), inferred, strict=True)}
    return StoryPair(male, female, names["male_name"], names["female_name"])


def _name(raw: str) -> str | None:
    line = _clean(raw.strip().split("\n")[0] if raw.strip() else "").strip(" .,:;")
    words = line.split()
    if not words or len(words) > 3 or not all(w[:1].isupper() for w in words):
        return None
    return line


def word_swaps(a: str, b: str) -> list[tuple[str, str]]:
    """The one-for-one word replacements that turn story ``a`` into story ``b`` (difflib alignment)."""
    wa, wb = _WORD.findall(a), _WORD.findall(b)
    swaps: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if op == "replace" and i2 - i1 == j2 - j1:
            swaps.extend(zip(wa[i1:i2], wb[j1:j2], strict=True))
    return swaps


def infer_names(male_story: str, female_story: str) -> tuple[str | None, str | None]:
    """The protagonists' names: the most frequent capitalised, non-gendered word swap of the stories."""
    counts = Counter(
        (x, y)
        for x, y in word_swaps(male_story, female_story)
        if x[:1].isupper()
        and y[:1].isupper()
        and x.lower() not in GENDERED_WORDS
        and y.lower() not in GENDERED_WORDS
    )
    if not counts:
        return None, None
    (x, y), _ = counts.most_common(1)[0]
    return x, y


_JUDGMENT = re.compile(
    r"(?:(?:neutral|balanced|exploratory|updated)\s+)?judg(?:e)?ment\s*[:\-–—]\s*", re.IGNORECASE
)


def parse_judgment(reply: str | None) -> str | None:
    """The exploratory judgment of a reply: the text after "Judgment:", else the whole reply.

    ``None`` when it has under eight words, is the prompt's placeholder echoed, or loops (fewer
    than 30% distinct words).
    """
    if not reply:
        return None
    text = _MARKDOWN.sub("", reply)
    matches = list(_JUDGMENT.finditer(text))
    if matches:
        text = text[matches[-1].end() :]
    judgment = _clean(text)
    words = [w.lower() for w in _WORD.findall(judgment)]
    if "your balanced" in judgment.lower() or len(words) < 8:
        return None
    if len(set(words)) < 0.3 * len(words):  # a small model looping on a few words
        return None
    return judgment


def gendered_terms(text: str, names: Sequence[str | None] = ()) -> list[str]:
    """The gendered words and the given names that occur in ``text`` (case-insensitive, sorted)."""
    words = {w.lower().strip("'’-") for w in _WORD.findall(text)}
    words |= {w[:-2] for w in words if w.endswith(("'s", "’s"))}
    found = words & GENDERED_WORDS
    found |= {n for n in names if n and n.lower() in words}
    return sorted(found, key=str.lower)


# -- ROUGE ------------------------------------------------------------------------------------------
@functools.cache
def _rouge_scorer() -> Any:
    try:
        from rouge_score import rouge_scorer
    except ImportError as exc:
        raise MissingDependencyError(
            f"the ROUGE filter needs rouge-score ({exc}); install it with: pip install 'fairstream[train]'"
        ) from exc
    return rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)


def rouge1_f(a: str, b: str) -> float:
    """ROUGE-1 F-measure of two texts, Porter-stemmed (the paper's ``rouge_score`` setting)."""
    return float(_rouge_scorer().score(a, b)["rouge1"].fmeasure)


def in_rouge_range(score: float, bounds: tuple[float, float] = ROUGE_RANGE) -> bool:
    """Whether ``score`` lies in the closed interval ``bounds`` (the paper keeps 0.80 <= F <= 0.95)."""
    return bounds[0] <= score <= bounds[1]


# -- the CDA swap -----------------------------------------------------------------------------------
def swap_map(source_story: str, target_story: str) -> dict[str, str]:
    """Lowercase word map from one story's gender to the other's.

    The stories' own swaps come first (names, pronouns, side characters), then ``SWAP_WORDS`` in
    both directions for words the stories do not show.
    """
    mapping: dict[str, Counter[str]] = {}
    for x, y in word_swaps(source_story, target_story):
        if x.lower() != y.lower():
            mapping.setdefault(x.lower(), Counter())[y.lower()] += 1
    out = {k: c.most_common(1)[0][0] for k, c in mapping.items()}
    both = {**SWAP_WORDS, **{v: k for k, v in SWAP_WORDS.items()}, "her": "his", "hers": "his"}
    for k, v in both.items():
        out.setdefault(k, v)
    return out


def swap_text(text: str, mapping: dict[str, str]) -> str:
    """``text`` with every word in ``mapping`` replaced, keeping its capitalisation."""

    def repl(m: re.Match[str]) -> str:
        word = m.group(0)
        new = mapping.get(word.lower())
        if new is None:
            return word
        if word.isupper() and len(word) > 1:
            return new.upper()
        return new[:1].upper() + new[1:] if word[:1].isupper() else new

    return re.sub(r"[A-Za-z]+", repl, text)


_EXPLANATION = re.compile(r"explanation\s*[:\-–—]\s*", re.IGNORECASE)
_STANCE_LINE = re.compile(r"^\W*stance\b.*$", re.IGNORECASE | re.MULTILINE)


def stance_explanation(raw: str) -> str:
    """The explanation of a stance reply: after "EXPLANATION:", else the reply without its stance line."""
    last = raw.split(RAW_SEPARATOR)[-1]
    text = _MARKDOWN.sub("", last)
    matches = list(_EXPLANATION.finditer(text))
    if matches:
        text = text[matches[0].end() :]
    else:  # no header: drop the stance line and lines that are only an option ("B. Immoral")
        text = _STANCE_LINE.sub("", text)
        text = "\n".join(line for line in text.splitlines() if not (line.strip() and is_option_line(line)))
    return " ".join(text.split())
