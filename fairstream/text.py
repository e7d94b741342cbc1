"""Text handling: input checks, sentence splitting (NLTK punkt_tab), word tokens, length filter.

Sentence spans are character offsets into the original text, so a filter that removes sentences
can keep the rest of the document byte-for-byte, whitespace included.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from fairstream.errors import FairStreamError, InvalidDocumentError, option

logger = logging.getLogger(__name__)

DEFAULT_MIN_TOKENS = 16  # sentences need MORE than this many NLTK tokens (paper: > 16)
DEFAULT_MAX_TOKENS = 128  # ... and AT MOST this many (paper: <= 128)
DEFAULT_MAX_DOC_CHARS = 1_000_000

NLTK_FIX = (
    "set NLTK_DATA to a folder that holds tokenizers/punkt_tab (e.g. ../shared/data/nltk_data), "
    "or run: python -m nltk.downloader punkt_tab"
)


def coerce_text(value: Any, *, where: str, max_chars: int | None = DEFAULT_MAX_DOC_CHARS) -> str:
    """Return ``value`` as ``str`` or raise ``InvalidDocumentError`` naming ``where``.

    ``bytes`` are decoded as strict UTF-8; ``None`` and other types are rejected; documents longer
    than ``max_chars`` (``None``: no limit) are rejected because one giant record usually means a
    broken extraction and would stall the stream.
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
    return text


SplitterName = Literal["auto", "punkt", "fallback"]
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

                    self._tokenizer = PunktTokenizer(self.language)
                    self.source = "punkt_tab"
                    return self._tokenizer
                except LookupError:
                    if self.kind == "punkt":
                        raise FairStreamError(
                            f"NLTK punkt_tab data for {self.language!r} not found: {NLTK_FIX}"
                        ) from None
                    logger.warning(
                        "NLTK punkt_tab not found; using fairstream's shipped Punkt parameters. To use "
                        "NLTK's: %s",
                        NLTK_FIX,
                    )
            self._tokenizer = _fallback_punkt()
            self.source = "fairstream-fallback"
            return self._tokenizer

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

    def split(self, text: str) -> list[str]:
        """The sentences of ``text`` as strings."""
        return [text[s:e] for s, e in self.spans(text)]

    def __getstate__(self) -> dict[str, Any]:
        # The tokenizer and lock are rebuilt lazily in each worker process.
        return {"kind": self.kind, "language": self.language}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["kind"], state["language"])  # type: ignore[misc]


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


_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")
MAX_BLOCK_CHARS = 20_000


def block_spans(text: str, max_chars: int = MAX_BLOCK_CHARS) -> list[tuple[int, int]]:
    """Cut text into blocks that no sentence crosses.

    Blocks are paragraphs (blank-line separated); a paragraph longer than ``max_chars`` is cut at
    its last line break (else last whitespace) before the limit. Splitting blocks separately
    bounds NLTK's work per call and lets callers split only the blocks that contain keywords.
    """
    blocks: list[tuple[int, int]] = []
    start = 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        blocks.extend(_cut_long(text, start, m.start(), max_chars))
        start = m.end()
    blocks.extend(_cut_long(text, start, len(text), max_chars))
    return [(s, e) for s, e in blocks if e > s]


def _cut_long(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    out = []
    while end - start > max_chars:
        limit = start + max_chars
        cut = text.rfind("\n", start + max_chars // 2, limit)
        if cut < 0:
            cut = max(text.rfind(" ", start + max_chars // 2, limit), text.rfind(". ", start, limit) + 1)
        if cut <= start:
            cut = limit
        out.append((start, cut))
        start = cut
    out.append((start, end))
    return out


class WordTokenizer:
    """NLTK's word tokenizer (the one ``nltk.word_tokenize`` applies to each sentence)."""

    def __init__(self) -> None:
        from nltk.tokenize import NLTKWordTokenizer

        self._tok = NLTKWordTokenizer()

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
