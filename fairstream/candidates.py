"""Candidate sentences: prefilter -> sentence split -> keyword mentions -> length filter.

This is the model-free front of every fairstream pipeline (filter, statistics, annotation). Only
sentences that contain a keyword are word-tokenized, and documents without any keyword are not
split at all, so the common case of web text costs one scan.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from fairstream.detect import KeywordDetector, Mention
from fairstream.taxonomy import Taxonomy
from fairstream.text import LengthFilter, SentenceSplitter, SplitterName, WordTokenizer


@dataclass
class CandidateSentence:
    """A sentence that mentions at least one keyword and passed the length filter.

    ``start``/``end`` are offsets into the document; mention offsets are document offsets too.
    """

    start: int
    end: int
    n_tokens: int
    mentions: list[Mention]
    tokens: list[str] = field(default_factory=list)  # NLTK word tokens (reused by the statistics sidecar)


@dataclass
class DocumentScan:
    """What the front of the pipeline found in one document."""

    has_keyword: bool
    n_sentences: int = 0  # sentences located (those holding a keyword; the rest is never split)
    candidates: list[CandidateSentence] = field(default_factory=list)
    n_mention_sentences_out_of_length: int = 0


class CandidateExtractor:
    """Find the sentences of a document that mention taxonomy keywords and pass the length filter."""

    def __init__(
        self,
        taxonomy: Taxonomy | None = None,
        *,
        splitter: SplitterName = "auto",
        length_filter: LengthFilter | None = None,
    ) -> None:
        self.detector = KeywordDetector(taxonomy)
        self.taxonomy = self.detector.taxonomy
        self.splitter = SentenceSplitter(splitter)
        self.length_filter = length_filter or LengthFilter()
        self.words = WordTokenizer()

    def scan(self, text: str) -> DocumentScan:
        """Scan one document (already checked to be a ``str``)."""
        mentions = self.detector.find(text)  # one scan; documents without keywords stop here
        if not mentions:
            return DocumentScan(has_keyword=False)
        # locate only the sentences that hold mentions, within their blocks (paragraphs)
        blocks = self.splitter.block_spans(text)
        block_starts = [b[0] for b in blocks]
        by_block: dict[int, list[int]] = {}
        for m in mentions:
            by_block.setdefault(bisect.bisect_right(block_starts, m.start) - 1, []).append(m.start)
        spans: list[tuple[int, int]] = []
        for b, starts in sorted(by_block.items()):
            bs, be = blocks[b]
            spans.extend(self.splitter.spans_at(text[bs:be], [p - bs for p in starts], offset=bs))
        scan = DocumentScan(has_keyword=True, n_sentences=len(spans))
        starts = [s for s, _ in spans]
        grouped: dict[int, list[Mention]] = {}
        for m in mentions:
            i = bisect.bisect_right(starts, m.start) - 1
            # a mention in the whitespace between sentences belongs to no sentence
            if i >= 0 and m.end <= spans[i][1]:
                grouped.setdefault(i, []).append(m)
        for i, ms in grouped.items():
            start, end = spans[i]
            tokens = self.words.tokenize(text[start:end])
            if self.length_filter.accepts(len(tokens)):
                scan.candidates.append(CandidateSentence(start, end, len(tokens), ms, tokens))
            else:
                scan.n_mention_sentences_out_of_length += 1
        scan.candidates.sort(key=lambda c: c.start)
        return scan
