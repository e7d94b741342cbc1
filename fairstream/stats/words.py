"""The word filter of the co-occurrence counts: stopwords (NLTK's, or a built-in fallback) and token tests."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

logger = logging.getLogger(__name__)

# NLTK's word tokenizer splits clitics off ("don't" -> "do", "n't"); they are function words.
CLITICS = frozenset({"'s", "n't", "'re", "'ve", "'ll", "'d", "'m", "\u2019s", "n\u2019t", "'t"})


def _wordset(*lines: str) -> frozenset[str]:
    return frozenset(w for line in lines for w in line.split())


# Used only when NLTK's stopwords corpus is not installed (a warning says so).
BUILTIN_STOPWORDS = _wordset(
    "a about above after again against all am an and any are as at be because been before being below",
    "between both but by can could did do does doing down during each few for from further had has",
    "have having he her here hers herself him himself his how i if in into is it its itself just me",
    "more most my myself no nor not now of off on once only or other our ours ourselves out over own",
    "same she should so some such than that the their theirs them themselves then there these they",
    "this those through to too under until up very was we were what when where which while who whom",
    "why will with would you your yours yourself yourselves s t d ll m o re ve y don didn doesn isn",
    "wasn weren won",
)

NLTK_STOPWORDS_FIX = (
    "set NLTK_DATA to a folder that holds corpora/stopwords (e.g. ../shared/data/nltk_data), "
    "or run: python -m nltk.downloader stopwords"
)

HAS_ALNUM = re.compile(r"[^\W_]")
HAS_ALPHA = re.compile(r"[^\W\d_]")


def nltk_stopwords(language: str) -> frozenset[str]:
    """NLTK's stopword list for ``language`` (raises LookupError when the corpus is not installed)."""
    from nltk.corpus import stopwords

    return frozenset(stopwords.words(language))


def resolve_stopwords(
    spec: str | Iterable[str] | None,
) -> tuple[str, tuple[str, ...] | None, frozenset[str] | None]:
    """The stopwords of ``CooccurrenceCounts(stopwords=spec)``.

    Returns:
        The name written into the counts' config, the custom list or None, and the loaded set
        (None while NLTK's list is to be loaded when counting starts).
    """
    if spec is None or spec == "none":
        return "none", None, frozenset()
    if isinstance(spec, str):
        if spec in ("builtin", "builtin:english"):
            return "builtin:english", None, BUILTIN_STOPWORDS | CLITICS
        if spec.startswith("nltk:"):
            if not spec[5:]:
                raise ValueError(f"stopwords={spec!r} needs a language, e.g. 'nltk:english'")
            return spec, None, None  # strict, loaded when counting starts
        if spec == "custom":
            raise ValueError("stopwords='custom' needs the list itself: pass an iterable of words")
        try:
            return f"nltk:{spec}", None, nltk_stopwords(spec) | CLITICS
        except LookupError:
            if spec != "english":
                raise ValueError(
                    f"stopwords={spec!r}: NLTK stopwords for {spec!r} not found; {NLTK_STOPWORDS_FIX}"
                ) from None
            logger.warning(
                "NLTK stopwords not found; using fairstream's built-in English list (%d words). "
                "Counts made this way do not merge with counts that used NLTK's list. To use NLTK's: %s",
                len(BUILTIN_STOPWORDS),
                NLTK_STOPWORDS_FIX,
            )
            return "builtin:english", None, BUILTIN_STOPWORDS | CLITICS
        except OSError:
            raise ValueError(
                f"stopwords={spec!r} is not a language of NLTK's stopwords corpus; pass e.g. 'english', "
                "'builtin', None or a list of words"
            ) from None
    words = tuple(sorted({str(w).lower() for w in spec}))
    return "custom", words, frozenset(words) | CLITICS
