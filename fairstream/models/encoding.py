"""Model inputs for the joint WSD + regard cross-encoder (shared by training and inference).

An input pairs the sentence, with the judged keyword occurrence wrapped in markers, with the
attribute description ``"{keyword} ; {gloss}"`` as the tokenizer's second segment, so each
encoder's own special tokens frame it (``[CLS] a [SEP] b [SEP]`` for BERT, ``<s> a </s></s> b
</s>`` for RoBERTa). The markers tell the model *which* occurrence it judges when a sentence
mentions several attributes or one keyword twice; a token mask over the marked span lets the
model pool the keyword's own token vectors.

Only ``tokenizers`` and ``numpy`` are imported here: no torch on the inference path.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

# the labels live in fairstream.core.schema; re-exported here for imports written before it
from fairstream.core.schema import REGARD_LABELS as REGARD_LABELS
from fairstream.core.schema import WSD_LABELS as WSD_LABELS

MARK_OPEN = "<<"
MARK_CLOSE = ">>"
# Long sentences are cut to a character window around the keyword so the marked occurrence is
# never truncated away by the tokenizer's max length.
CONTEXT_CHARS = 500


@dataclass(frozen=True)
class MentionInput:
    """One (sentence, keyword occurrence) to judge; ``start``/``end`` index into ``text``."""

    text: str
    start: int
    end: int
    keyword: str
    gloss: str

    def __post_init__(self) -> None:
        if not (0 <= self.start < self.end <= len(self.text)):
            raise ValueError(
                f"mention offsets start={self.start}, end={self.end} are outside the text (length {len(self.text)})"
            )


def marked_text(item: MentionInput) -> tuple[str, int, int]:
    """The (windowed) text with the occurrence wrapped in markers, and the span of the keyword in it."""
    lo = max(0, item.start - CONTEXT_CHARS)
    hi = min(len(item.text), item.end + CONTEXT_CHARS)
    before, word, after = (
        item.text[lo : item.start],
        item.text[item.start : item.end],
        item.text[item.end : hi],
    )
    prefix = f"{before}{MARK_OPEN} "
    out = f"{prefix}{word} {MARK_CLOSE}{after}"
    return out, len(prefix), len(prefix) + len(word)


def attribute_text(item: MentionInput) -> str:
    """The second segment: ``"{keyword} ; {gloss}"``."""
    return f"{item.keyword} ; {item.gloss}"


TokenRow = tuple[list[int], list[int], list[float]]  # ids, token types, target mask of one input


def encode_rows(tokenizer: Any, items: list[MentionInput], max_length: int) -> list[TokenRow]:
    """Tokenize mentions without padding: one ``(ids, token types, target mask)`` row each.

    The tokenizer must have truncation and padding disabled; the first segment is truncated around
    the keyword to ``max_length`` tokens. Callers that batch sort the rows by ``len(ids)`` first, so
    a batch pads little (see :func:`pad_rows`).
    """
    marked = [marked_text(it) for it in items]
    encs = tokenizer.encode_batch([(m[0], attribute_text(it)) for m, it in zip(marked, items, strict=True)])
    rows: list[TokenRow] = []
    for enc, (_, ks, ke) in zip(encs, marked, strict=True):
        ids, types, offsets, seq = enc.ids, enc.type_ids, enc.offsets, enc.sequence_ids
        target = [
            1.0 if s == 0 and o[0] < ke and o[1] > ks else 0.0 for s, o in zip(seq, offsets, strict=True)
        ]
        if len(ids) > max_length:
            ids, types, target, seq = _truncate_first(ids, types, target, seq, max_length)
        rows.append((ids, types, target))
    return rows


def pad_id_of(tokenizer: Any) -> int:
    """The tokenizer's padding id (``[PAD]`` for BERT, ``<pad>`` for RoBERTa, else 0)."""
    pad_id = tokenizer.token_to_id("[PAD]")
    if pad_id is None:
        pad_id = tokenizer.token_to_id("<pad>") or 0
    return int(pad_id)


def pad_rows(rows: list[TokenRow], pad_id: int) -> dict[str, np.ndarray]:
    """Model inputs for ``rows``, padded to the longest: ids, attention mask, token types, target mask."""
    width = max(len(r[0]) for r in rows)
    n = len(rows)
    input_ids = np.full((n, width), pad_id, dtype=np.int64)
    attention = np.zeros((n, width), dtype=np.int64)
    token_type = np.zeros((n, width), dtype=np.int64)
    target_mask = np.zeros((n, width), dtype=np.float32)
    feeds: dict[str, np.ndarray] = {
        "input_ids": input_ids,
        "attention_mask": attention,
        "token_type_ids": token_type,
        "target_mask": target_mask,
    }
    for i, row in enumerate(rows):
        _fill_row(feeds, i, row)
    return feeds


def _fill_row(feeds: dict[str, np.ndarray], i: int, row: TokenRow) -> None:
    """Write one unpadded row into row ``i`` of the padded model inputs."""
    ids, types, target = row
    k = len(ids)
    feeds["input_ids"][i, :k] = ids
    feeds["attention_mask"][i, :k] = 1
    feeds["token_type_ids"][i, :k] = types
    feeds["target_mask"][i, :k] = target
    if not any(target):  # keep the pooling well defined even if the keyword was cut
        feeds["target_mask"][i, 0] = 1.0


def encode_batch(tokenizer: Any, items: list[MentionInput], max_length: int) -> dict[str, np.ndarray]:
    """Tokenize a batch with a ``tokenizers.Tokenizer``: ids, attention mask, token types, target mask.

    The tokenizer must have truncation and padding disabled; this function pads to the longest
    item (so callers should sort by length to cut padding) and truncates the first segment only.
    Equal to ``pad_rows(encode_rows(...))``, built with array operations: the Python work per
    mention is a few attribute reads, which keeps a GPU fed (the per-token loop of
    :func:`encode_rows` runs only for the rare rows that need truncation or whose keyword span does
    not map to tokens).
    """
    marked = [marked_text(it) for it in items]
    encs = tokenizer.encode_batch([(m[0], attribute_text(it)) for m, it in zip(marked, items, strict=True)])
    n = len(encs)
    ids_of = [e.ids for e in encs]
    types_of = [e.type_ids for e in encs]
    lengths = np.fromiter(map(len, ids_of), dtype=np.int64, count=n)
    # the target span: the first-segment tokens from the one holding the keyword's first character
    # to the one holding its last (contiguous, as the markers put spaces around the keyword)
    first = np.zeros(n, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    special: dict[int, TokenRow] = {}
    for i, (enc, (text, ks, ke)) in enumerate(zip(encs, marked, strict=True)):
        # ASCII keywords only: a character there is one byte, so one token even for byte-level BPE
        ascii_word = text[ks:ke].isascii()
        a, b = (enc.char_to_token(ks, 0), enc.char_to_token(ke - 1, 0)) if ascii_word else (None, None)
        if a is None or b is None or lengths[i] > max_length:
            seq, offsets = enc.sequence_ids, enc.offsets
            target = [
                1.0 if s == 0 and o[0] < ke and o[1] > ks else 0.0 for s, o in zip(seq, offsets, strict=True)
            ]
            ids, types = ids_of[i], types_of[i]
            if len(ids) > max_length:
                ids, types, target, seq = _truncate_first(ids, types, target, seq, max_length)
            ids_of[i], types_of[i] = ids, types
            special[i] = (ids, types, target)
            lengths[i] = len(ids)
        else:
            first[i], last[i] = a, b
    width = int(lengths.max()) if n else 0
    pad_id = pad_id_of(tokenizer)
    cols = np.arange(width)
    attention = (cols < lengths[:, None]).astype(np.int64)
    # row-major boolean indexing visits each row's first `length` cells in order: the rows' tokens
    # concatenated fill them exactly
    filled = attention.astype(bool)
    input_ids = np.full((n, width), pad_id, dtype=np.int64)
    input_ids[filled] = np.fromiter(itertools.chain.from_iterable(ids_of), dtype=np.int64)
    token_type = np.zeros((n, width), dtype=np.int64)
    token_type[filled] = np.fromiter(itertools.chain.from_iterable(types_of), dtype=np.int64)
    target_mask = ((cols >= first[:, None]) & (cols <= last[:, None])).astype(np.float32)
    feeds: dict[str, np.ndarray] = {
        "input_ids": input_ids,
        "attention_mask": attention,
        "token_type_ids": token_type,
        "target_mask": target_mask,
    }
    for i, row in special.items():  # their target masks (ids and types are in place already)
        _fill_row(feeds, i, row)
    return feeds


def _truncate_first(
    ids: list[int], types: list[int], target: list[float], seq: list[int | None], max_length: int
) -> tuple[list[int], list[int], list[float], list[int | None]]:
    """Drop first-segment tokens far from the target until the sequence fits."""
    excess = len(ids) - max_length
    first = [i for i, s in enumerate(seq) if s == 0]
    tgt = [i for i in first if target[i]] or first[:1]
    centre = (tgt[0] + tgt[-1]) // 2
    # remove first-segment positions farthest from the target first
    drop = set(sorted(first, key=lambda i: -abs(i - centre))[:excess])
    keep = [i for i in range(len(ids)) if i not in drop]
    return [ids[i] for i in keep], [types[i] for i in keep], [target[i] for i in keep], [seq[i] for i in keep]


# -- tokenizer worker processes (the GPU feeder) ------------------------------------------------------
_WORKER: dict[str, Any] = {}


def init_encode_worker(tokenizer_file: str, max_length: int) -> None:
    """Initializer of a tokenizer worker process: one single-threaded tokenizer per process."""
    import os

    # set before the tokenizer's thread pool exists: N processes, one core each
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_file)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    _WORKER.update(tokenizer=tokenizer, max_length=max_length)


def encode_in_worker(items: list[MentionInput]) -> dict[str, np.ndarray]:
    """:func:`encode_batch` in a process set up by :func:`init_encode_worker`."""
    return encode_batch(_WORKER["tokenizer"], items, _WORKER["max_length"])
