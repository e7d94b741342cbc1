"""fairstream's stand-off training labels, resolved against the third-party text they point into (training only).

Stand-off schema (fairstream's own labels of third-party text, which stays where it is)::

    {"uid", "file", "doc_id", "sent_start", "sent_end", "kw_start", "kw_end", "keyword",
     "class", "gloss", "wsd", "regard", "annotator"}

where ``file`` is a corpus file name resolved against a corpus folder and offsets index the
document's text; bias-set labels address a CrowS-Pairs / StereoSet sentence by ``source``, ``row``
and ``field`` instead.
"""

from __future__ import annotations

import csv
import functools
import gzip
import json
from pathlib import Path
from typing import Any

from fairstream.errors import FairStreamError
from fairstream.models.encoding import MentionInput
from fairstream.models.labels import LabelledPair, check_labels


def load_standoff(path: str | Path, corpus_dir: str | Path) -> list[LabelledPair]:
    """Resolve a stand-off label file against the corpus folder it points into."""
    path, corpus_dir = Path(path), Path(corpus_dir)
    records = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    needed: dict[str, set[str]] = {}
    for rec in records:
        needed.setdefault(rec["file"], set()).add(rec["doc_id"])
    docs: dict[tuple[str, str], str] = {}
    for fname, ids in needed.items():
        fpath = corpus_dir / fname
        if not fpath.is_file():
            raise FairStreamError(
                f"{path}: points into {fpath}, which does not exist; pass the corpus folder"
            )
        with gzip.open(fpath, "rt", encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                if doc["id"] in ids:
                    docs[(fname, doc["id"])] = doc["text"]
    out = []
    for rec in records:
        where = f"{path}: uid {rec['uid']}"
        doc_text = docs.get((rec["file"], rec["doc_id"]))
        if doc_text is None:
            raise FairStreamError(f"{where}: document {rec['doc_id']!r} not found in {rec['file']}")
        s0 = rec["sent_start"]
        sentence = doc_text[s0 : rec["sent_end"]]
        out.append(_standoff_pair(where, rec, sentence, s0, rec.get("annotator", "corpus")))
    return out


def _standoff_pair(where: str, rec: dict[str, Any], text: str, offset: int, source: str) -> LabelledPair:
    """A stand-off record resolved to ``text`` (which starts at ``offset`` of what the record indexes)."""
    check_labels(where, rec["wsd"], rec["regard"])
    start, end = rec["kw_start"] - offset, rec["kw_end"] - offset
    if not text[start:end].lower().replace("-", "").startswith(rec["keyword"].replace("-", "")):
        raise FairStreamError(f"{where}: offsets do not point at {rec['keyword']!r} (source text changed?)")
    return LabelledPair(
        uid=rec["uid"],
        mention=MentionInput(text, start, end, rec["keyword"], rec["gloss"]),
        attribute_class=rec["class"],
        wsd=rec["wsd"],
        regard=rec["regard"] if rec["wsd"] == "yes" else None,
        source=source,
    )


BIAS_SOURCES = {
    "crows_pairs": "data/bias/crows_pairs/crows_pairs_anonymized.csv",
    "stereoset-intersentence": "data/bias/stereoset/dev.json.gz",
    "stereoset-intrasentence": "data/bias/stereoset/dev.json.gz",
}


@functools.cache
def _bias_table(shared_dir: Path, source: str) -> dict[tuple[str, str], str]:
    """Every text of one bias set keyed by (row, field); read once per process."""
    if source not in BIAS_SOURCES:
        raise FairStreamError(f"unknown bias source {source!r}; expected one of {sorted(BIAS_SOURCES)}")
    fpath = shared_dir / BIAS_SOURCES[source]
    if not fpath.is_file():
        raise FairStreamError(f"{fpath} does not exist; pass the shared data folder (../shared)")
    table: dict[tuple[str, str], str] = {}
    if source == "crows_pairs":
        with fpath.open(newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                for col in ("sent_more", "sent_less"):
                    table[(row[""], col)] = row[col]
    else:
        task = source.split("-", 1)[1]
        with gzip.open(fpath, "rt", encoding="utf-8") as f:
            data = json.load(f)["data"][task]
        for ex in data:
            for s in ex["sentences"]:
                # intersentence: the context sentence, then the continuation being judged
                text = f"{ex['context']} {s['sentence']}" if task == "intersentence" else s["sentence"]
                table[(ex["id"], s["id"])] = text
    return table


def bias_text(ref: dict[str, Any], shared_dir: str | Path) -> str:
    """The text of one CrowS-Pairs or StereoSet sentence addressed by source, row and field."""
    source = ref["source"]
    text = _bias_table(Path(shared_dir), source).get((str(ref["row"]), str(ref["field"])))
    if text is None:
        raise FairStreamError(f"{source}: no row {ref['row']!r} / {ref['field']!r} (data changed?)")
    return text


def load_bias_standoff(path: str | Path, shared_dir: str | Path) -> list[LabelledPair]:
    """Resolve stand-off labels of bias-set sentences (``source``, ``row``, ``field``, offsets)."""
    path = Path(path)
    out = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            rec = json.loads(line)
            where = f"{path}:{lineno} (uid {rec.get('uid')})"
            text = bias_text(rec, shared_dir)
            out.append(_standoff_pair(where, rec, text, 0, rec.get("annotator", rec["source"])))
    return out
