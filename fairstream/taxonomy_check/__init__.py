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

from fairstream.taxonomy_check.files import (
    GLOSS_STARTS,
    GLOSS_STARTS_V1,
    check_data,
    check_taxonomy,
    gloss_problem,
    resolve_taxonomy_path,
    shown_path,
)
from fairstream.taxonomy_check.overlaps import form_derives, form_overlaps
from fairstream.taxonomy_check.problems import Problem, Severity
from fairstream.taxonomy_check.usage import (
    DEFAULT_MAX_DOCS,
    DEFAULT_MAX_MENTIONS_PER_KEYWORD,
    MIN_JUDGED_PERSON,
    MIN_JUDGED_UNSURE,
    PERSON_SHARE_BELOW,
    UNSURE_HIGH,
    UNSURE_LOW,
    UNSURE_SHARE_ABOVE,
    KeywordUsage,
    UsageReport,
    format_usage,
    keyword_usage,
    usage_flags,
)

__all__ = [
    "DEFAULT_MAX_DOCS",
    "DEFAULT_MAX_MENTIONS_PER_KEYWORD",
    "GLOSS_STARTS",
    "GLOSS_STARTS_V1",
    "MIN_JUDGED_PERSON",
    "MIN_JUDGED_UNSURE",
    "PERSON_SHARE_BELOW",
    "UNSURE_HIGH",
    "UNSURE_LOW",
    "UNSURE_SHARE_ABOVE",
    "KeywordUsage",
    "Problem",
    "Severity",
    "UsageReport",
    "check_data",
    "check_taxonomy",
    "form_derives",
    "form_overlaps",
    "format_usage",
    "gloss_problem",
    "keyword_usage",
    "resolve_taxonomy_path",
    "shown_path",
    "usage_flags",
]
