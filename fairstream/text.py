"""Text handling: input checks, sentence splitting (NLTK punkt_tab), word tokens, length filter.

Sentence spans are character offsets into the original text, so a filter that removes sentences
can keep the rest of the document byte-for-byte, whitespace included.
"""

from __future__ import annotations

import bisect
import json
import logging
import re
import string
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from fairstream.errors import FairStreamError, InvalidDocumentError, option

logger = logging.getLogger(__name__)

DEFAULT_MIN_TOKENS = 16  # sentences need MORE than this many NLTK tokens (paper: > 16)
DEFAULT_MAX_TOKENS = 128  # ... and AT MOST this many (paper: <= 128)
DEFAULT_MAX_DOC_CHARS = 1_000_000
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")
MAX_BLOCK_CHARS = 20_000

NLTK_FIX = (
    "set NLTK_DATA to a folder that holds tokenizers/punkt_tab (e.g. ../shared/data/nltk_data), "
    "or run: python -m nltk.downloader punkt_tab"
)


def coerce_text(value: Any, *, where: str, max_chars: int | None = DEFAULT_MAX_DOC_CHARS) -> str:
    r"""Return ``value`` as ``str`` or raise ``InvalidDocumentError`` naming ``where``.

    ``bytes`` are decoded as strict UTF-8; ``None`` and other types are rejected; documents longer
    than ``max_chars`` (``None``: no limit) are rejected because one giant record usually means a
    broken extraction and would stall the stream; a ``str`` with a lone surrogate (reason
    ``"lone-surrogate"``, e.g. JSON's ``"\ud800"`` without its pair) is rejected with its offset.
    """
    if isinstance(value, str):
        text = value
    elif isinstance(value, bytes | bytearray):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidDocumentError(
                f"{where}: bytes are not valid UTF-8 ({exc.reason} at byte {exc.start})",
                reason="invalid-utf8",
                fix="decode them with the right encoding first, or pass "
                f"{option('on_error', 'skip')} to count and skip such records",
            ) from None
    elif value is None:
        raise InvalidDocumentError(
            f"{where}: text is None",
            reason="none",
            fix=f"fix the record or pass {option('on_error', 'skip')}",
        )
    else:
        raise InvalidDocumentError(
            f"{where}: text must be str or UTF-8 bytes, got {type(value).__name__}",
            reason="not-a-string",
            fix=f"fix the record or pass {option('on_error', 'skip')}",
        )
    if max_chars is not None and len(text) > max_chars:
        raise InvalidDocumentError(
            f"{where}: document has {len(text):,} characters, more than {option('max_doc_chars', max_chars)}",
            reason="too-large",
            fix=f"raise the limit if such documents are real, or pass {option('on_error', 'skip')}",
        )
    if text is value and not text.isascii():  # decoded bytes are valid UTF-8 already
        _check_encodable(text, where)
    return text


def _check_encodable(text: str, where: str) -> None:
    r"""Raise ``InvalidDocumentError`` (``"lone-surrogate"``) if ``text`` is not valid Unicode.

    A ``str`` can hold lone surrogates (U+D800..U+DFFF), e.g. from a JSON escape ``"\ud800"`` that
    lost the other half of its UTF-16 pair; they are no characters, cannot be encoded as UTF-8, and
    the keyword matcher refuses them.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidDocumentError(
            f"{where}: lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start} (half of a "
            "UTF-16 pair, not text)",
            reason="lone-surrogate",
            fix=f"repair the record (drop or replace the escape) or pass {option('on_error', 'skip')} to "
            "count and skip such records",
        ) from None


SplitterName = Literal["auto", "punkt", "fallback"]
_fallback_warned = False  # the missing-punkt_tab warning was logged in this process
_SPLITTERS = ("auto", "punkt", "fallback")


class SentenceSplitter:
    """Sentence spans with NLTK Punkt.

    ``kind="punkt"`` needs NLTK's ``punkt_tab`` data and raises a clear error without it;
    ``"fallback"`` uses Punkt parameters that fairstream trained itself and ships; ``"auto"``
    (default) uses punkt_tab when it is installed and otherwise warns once and falls back.
    """

    def __init__(self, kind: SplitterName = "auto", language: str = "english") -> None:
        if kind not in _SPLITTERS:
            raise ValueError(f"kind={kind!r} is not one of {_SPLITTERS}")
        self.kind = kind
        self.language = language
        self._tokenizer: Any = None
        self.source: str | None = None  # "punkt_tab" or "fairstream-fallback" once loaded
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._tokenizer is not None:
                return self._tokenizer
            if self.kind in ("auto", "punkt"):
                try:
                    from nltk.tokenize import PunktTokenizer

                    self._tokenizer = _untimed_punkt(PunktTokenizer(self.language))
                    self.source = "punkt_tab"
                    return self._tokenizer
                except LookupError:
                    if self.kind == "punkt":
                        raise FairStreamError(
                            f"NLTK punkt_tab data for {self.language!r} not found: {NLTK_FIX}"
                        ) from None
                    global _fallback_warned
                    if not _fallback_warned:  # once per process, not once per splitter
                        _fallback_warned = True
                        logger.warning(
                            "NLTK punkt_tab not found; using fairstream's shipped Punkt parameters. To use "
                            "NLTK's: %s",
                            NLTK_FIX,
                        )
            self._tokenizer = _untimed_punkt(_fallback_punkt())
            self.source = "fairstream-fallback"
            return self._tokenizer

    def resolved_kind(self) -> SplitterName:
        """``"punkt"`` or ``"fallback"``: the splitter this one uses, loaded now (the fallback logged once)."""
        self._load()
        return "fallback" if self.source == "fairstream-fallback" else "punkt"

    def spans(self, text: str, offset: int = 0) -> list[tuple[int, int]]:
        """Character spans ``(start, end)`` of the sentences of ``text`` (shifted by ``offset``)."""
        tokenizer = self._tokenizer or self._load()
        try:
            return [(s + offset, e + offset) for s, e in tokenizer.span_tokenize(text)]
        except TimeoutError as exc:  # NLTK's regex time limit on pathological input
            raise FairStreamError(
                f"sentence splitting of a {len(text):,}-character block timed out in NLTK ({exc}); "
                f"such input is usually broken extraction: skip the document ({option('on_error', 'skip')})"
            ) from None

    def spans_at(self, text: str, positions: Iterable[int], offset: int = 0) -> list[tuple[int, int]]:
        """The sentences of ``spans(text)`` that the given positions fall in, without splitting the rest.

        Returns a sorted part of ``spans(text, offset)`` holding, for every position ``p`` (into
        ``text``), the last span that starts at or before ``p`` (if any), so assigning each position
        to that span gives what the full split would. Punkt decides each potential sentence end from
        its local context alone; only the ends next to a position are decided here, which is most of
        the saving on long paragraphs with one keyword.
        """
        tokenizer = self._tokenizer or self._load()
        if not _PunktBreaks.supported(tokenizer):  # an NLTK without the methods used: split it all
            spans = self.spans(text)
            return [(s + offset, e + offset) for s, e in _last_spans(spans, positions)]
        try:
            breaks = _PunktBreaks(tokenizer, text)
            found = {span for p in positions if (span := breaks.span_at(p)) is not None}
        except TimeoutError as exc:
            raise FairStreamError(
                f"sentence splitting of a {len(text):,}-character block timed out in NLTK ({exc}); "
                f"such input is usually broken extraction: skip the document ({option('on_error', 'skip')})"
            ) from None
        return [(s + offset, e + offset) for s, e in sorted(found)]

    def block_spans(self, text: str, max_chars: int = MAX_BLOCK_CHARS) -> list[tuple[int, int]]:
        """:func:`block_spans` with long paragraphs cut only where this splitter ends a sentence.

        So the blocks split exactly as their whole paragraphs would (Punkt decides each end from
        local context), and a sentence's span does not depend on where its paragraph starts. Where
        no such end lies in the second half before the limit, the position-based cut is the fallback.
        """
        tokenizer = self._tokenizer or self._load()
        if not _PunktBreaks.supported(tokenizer):
            return block_spans(text, max_chars)
        return block_spans(text, max_chars, lambda t, lo, hi: _sentence_start_before(tokenizer, t, lo, hi))

    def split(self, text: str) -> list[str]:
        """The sentences of ``text`` as strings."""
        return [text[s:e] for s, e in self.spans(text)]

    def __getstate__(self) -> dict[str, Any]:
        # The tokenizer and lock are rebuilt lazily in each worker process.
        return {"kind": self.kind, "language": self.language}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["kind"], state["language"])  # type: ignore[misc]


def _last_spans(spans: list[tuple[int, int]], positions: Iterable[int]) -> list[tuple[int, int]]:
    starts = [s for s, _ in spans]
    picked = {i for p in positions if (i := bisect.bisect_right(starts, p) - 1) >= 0}
    return [spans[i] for i in sorted(picked)]


class _PunktBreaks:
    """Punkt's sentence spans of one text, with each potential sentence end decided only on demand.

    A port of ``PunktSentenceTokenizer._slices_from_text`` and ``_realign_boundaries`` (NLTK 3.9+)
    that evaluates ``text_contains_sentbreak`` (Punkt's costly step) lazily. The candidate ends and
    their contexts come from NLTK's own ``_match_potential_end_contexts``; tests compare the result
    with ``span_tokenize`` on real paragraphs and generated text.
    """

    def __init__(self, tokenizer: Any, text: str) -> None:
        self.tokenizer = tokenizer
        self.text = text
        self.realign = tokenizer._lang_vars.re_boundary_realignment
        pairs = list(tokenizer._match_potential_end_contexts(text))
        self.ends = [m.end() for m, _ in pairs]
        self.contexts = [c for _, c in pairs]
        # where the sentence after each candidate end starts (NLTK: next token, else right after)
        self.next_starts = [m.start("next_tok") if m.group("next_tok") else m.end() for m, _ in pairs]
        self.n = len(pairs)
        self.stop = len(text.rstrip())
        self._known: dict[int, bool] = {}

    @staticmethod
    def supported(tokenizer: Any) -> bool:
        return (
            hasattr(tokenizer, "_match_potential_end_contexts")
            and hasattr(tokenizer, "text_contains_sentbreak")
            and hasattr(getattr(tokenizer, "_lang_vars", None), "re_boundary_realignment")
        )

    def _is_break(self, k: int) -> bool:
        known = self._known.get(k)
        if known is None:
            known = self._known[k] = bool(self.tokenizer.text_contains_sentbreak(self.contexts[k]))
        return known

    def _break_at_or_before(self, k: int) -> int:
        while k >= 0 and not self._is_break(k):
            k -= 1
        return k  # -1: the text's start

    def _break_at_or_after(self, k: int) -> int:
        while k < self.n and not self._is_break(k):
            k += 1
        return k  # n: the text's end

    def _raw(self, after: int, until: int) -> slice:
        """The unaligned sentence after break ``after`` (-1: start) up to break ``until`` (n: end)."""
        return slice(
            0 if after < 0 else self.next_starts[after], self.stop if until >= self.n else self.ends[until]
        )

    def _span(self, after: int) -> tuple[int, int] | None:
        """The realigned sentence after break ``after``, or None where NLTK yields none (empty)."""
        until = self._break_at_or_after(after + 1)
        raw = self._raw(after, until)
        start = raw.start
        if after >= 0:  # every sentence but the first loses leading closing punctuation
            m = self.realign.match(self.text[raw])
            if m:
                start += m.end()
        if until < self.n:  # ... which goes to the sentence before it
            nxt = self._raw(until, self._break_at_or_after(until + 1))
            m = self.realign.match(self.text[nxt])
            if m:
                return start, nxt.start + len(m.group(0).rstrip())
        return (start, raw.stop) if self.text[start : raw.stop] else None

    def span_at(self, pos: int) -> tuple[int, int] | None:
        """The last sentence span starting at or before ``pos`` (None if there is none)."""
        after = self._break_at_or_before(bisect.bisect_right(self.next_starts, pos) - 1)
        while True:
            span = self._span(after)
            if span is not None and span[0] <= pos:
                return span
            if after < 0:
                return None
            after = self._break_at_or_before(after - 1)


def _untimed(pattern: Any) -> Any:
    """NLTK's compiled pattern without the per-call time limit NLTK 3.10 wraps it in.

    NLTK >= 3.10 routes every regular expression through ``nltk.redos.TimedPattern``: the third-party
    ``regex`` engine plus a wall-clock timeout on each call, a guard meant for caller-supplied
    patterns. For NLTK's own constant tokenizer patterns (linear, applied to one bounded sentence or
    block) the guard is pure cost: about a fifth of the keyword stage on web text. The wrapped
    engine and pattern are the same, so the results are too (tested against NLTK's own calls).
    Older NLTK compiles with ``re`` and has nothing to unwrap.
    """
    inner = getattr(pattern, "_rx", None)
    return inner if inner is not None and hasattr(inner, "sub") and hasattr(inner, "finditer") else pattern


def _untimed_punkt(tokenizer: Any) -> Any:
    """``tokenizer`` with its language variables' word and period-context patterns untimed (in place)."""
    lang_vars = getattr(tokenizer, "_lang_vars", None)
    for build, attr in (
        ("_word_tokenizer_re", "_re_word_tokenizer"),
        ("period_context_re", "_re_period_context"),
    ):
        if lang_vars is not None and callable(getattr(lang_vars, build, None)):
            getattr(lang_vars, build)()  # compiles and caches the pattern on the instance
            if hasattr(lang_vars, attr):
                setattr(lang_vars, attr, _untimed(getattr(lang_vars, attr)))
    return tokenizer


def _fallback_punkt() -> Any:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    path = resources.files("fairstream") / "data" / "punkt-fallback-en.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    params = PunktParameters()
    params.abbrev_types = set(data["abbrev_types"])
    params.collocations = {tuple(c) for c in data["collocations"]}
    params.sent_starters = set(data["sent_starters"])
    for word, ctx in data["ortho_context"].items():
        params.ortho_context[word] = ctx
    return PunktSentenceTokenizer(params)


def block_spans(
    text: str, max_chars: int = MAX_BLOCK_CHARS, find_cut: CutFinder | None = None
) -> list[tuple[int, int]]:
    """Cut text into blocks that no sentence crosses.

    Blocks are paragraphs (blank-line separated). A paragraph longer than ``max_chars`` is cut
    before the limit where ``find_cut(text, lo, hi)`` finds a sentence start in ``text[lo:hi]``
    (:meth:`SentenceSplitter.block_spans` passes one that only returns starts Punkt decides from
    local context, so the cut changes no sentence), else at its last line break (else last
    whitespace) before the limit. Splitting blocks separately bounds NLTK's work per call and lets
    callers split only the blocks that contain keywords.
    """
    blocks: list[tuple[int, int]] = []
    start = 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        blocks.extend(_cut_long(text, start, m.start(), max_chars, find_cut))
        start = m.end()
    blocks.extend(_cut_long(text, start, len(text), max_chars, find_cut))
    return [(s, e) for s, e in blocks if e > s]


CutFinder = Callable[[str, int, int], "int | None"]


def _cut_long(
    text: str, start: int, end: int, max_chars: int, find_cut: CutFinder | None = None
) -> list[tuple[int, int]]:
    out = []
    while end - start > max_chars:
        limit = start + max_chars
        cut = find_cut(text, start + max_chars // 2, limit) if find_cut else None
        if cut is None:
            # no sentence start Punkt vouches for: a cut that depends on where the paragraph starts
            cut = text.rfind("\n", start + max_chars // 2, limit)
            if cut < 0:
                cut = max(text.rfind(" ", start + max_chars // 2, limit), text.rfind(". ", start, limit) + 1)
            if cut <= start:
                cut = limit
        out.append((start, cut))
        start = cut
    out.append((start, end))
    return out


def _sentence_start_before(tokenizer: Any, text: str, lo: int, hi: int) -> int | None:
    """The last sentence start in ``text[lo:hi]`` at which cutting the text changes no sentence.

    A long paragraph used to be cut at its last line break before a length limit, which depends on
    where the paragraph starts: a filter that removed earlier sentences moved the cut, and a
    heading joined to the sentence after it was split off on the second pass (so re-filtering the
    output found different sentences). Cutting where Punkt itself ends a sentence does not change
    the split, wherever the limit falls. A candidate end qualifies when Punkt decides it is a break
    from a context wholly inside the window (which starts at a token), the next sentence starts at
    a token Punkt's realignment leaves alone (no leading closing quote or bracket), and that token
    ends inside the window. Returns the next sentence's start, or None.
    """
    ws = _WHITESPACE.search(text, lo, hi)
    if ws is None:
        return None
    base = ws.end()  # the window starts at a token, so the first candidate's context is whole
    window = text[base:hi]
    lang = tokenizer._lang_vars
    realign, potential_end = lang.re_boundary_realignment, lang.period_context_re()
    candidates = [
        (m, context)
        for m, context in tokenizer._match_potential_end_contexts(window)
        if m.group("next_tok") and m.end("next_tok") < len(window)
    ]
    for m, context in reversed(candidates):
        nxt = m.start("next_tok")
        token_start = m.start()  # back to the whitespace before this end's token, as NLTK looks
        while token_start > 0 and window[token_start - 1] not in string.whitespace:
            token_start -= 1
        if (
            realign.match(window, nxt) is None
            # an earlier end in the same token ("tuned!!"): NLTK drops it as overlapping this one,
            # but without the next token this one is no candidate and the earlier one would split
            and potential_end.search(window[token_start : m.start() + 1]) is None
            and tokenizer.text_contains_sentbreak(context)
        ):
            return base + nxt
    return None


_WHITESPACE = re.compile(r"\s+")


class WordTokenizer:
    """NLTK's word tokenizer (the one ``nltk.word_tokenize`` applies to each sentence)."""

    def __init__(self) -> None:
        from nltk.tokenize import NLTKWordTokenizer

        self._tok = NLTKWordTokenizer()
        # per instance, so NLTK's class (and other users of it) keep their time limits
        tok: Any = self._tok
        for name in ("STARTING_QUOTES", "PUNCTUATION", "ENDING_QUOTES", "CONVERT_PARENTHESES"):
            setattr(tok, name, [(_untimed(p), sub) for p, sub in getattr(tok, name)])
        for name in ("PARENS_BRACKETS", "DOUBLE_DASHES"):
            p, sub = getattr(tok, name)
            setattr(tok, name, (_untimed(p), sub))
        tok.CONTRACTIONS2 = [_untimed(p) for p in tok.CONTRACTIONS2]
        tok.CONTRACTIONS3 = [_untimed(p) for p in tok.CONTRACTIONS3]

    def tokenize(self, sentence: str) -> list[str]:
        """NLTK word tokens of one sentence."""
        return self._tok.tokenize(sentence)

    def count(self, sentence: str) -> int:
        """Number of NLTK word tokens of one sentence."""
        return len(self._tok.tokenize(sentence))


@dataclass(frozen=True)
class LengthFilter:
    """Keep sentences with more than ``min_tokens`` and at most ``max_tokens`` NLTK tokens."""

    min_tokens: int = DEFAULT_MIN_TOKENS
    max_tokens: int = DEFAULT_MAX_TOKENS

    def __post_init__(self) -> None:
        if self.min_tokens < 0:
            raise ValueError(f"min_tokens={self.min_tokens} must be >= 0")
        if self.max_tokens <= self.min_tokens:
            raise ValueError(f"max_tokens={self.max_tokens} must be > min_tokens={self.min_tokens}")

    def accepts(self, n_tokens: int) -> bool:
        """Whether a sentence of ``n_tokens`` tokens passes."""
        return self.min_tokens < n_tokens <= self.max_tokens
