"""One labelling round end to end through the real CLI (``python -m export.annotation ...``).

The documents are written here (a few sentences of our own, gzip JSON lines, in tmp_path), the
taxonomy is the shipped ``fairstream/data/taxonomy-v1.json``, and the annotators are simulated: the
test itself writes their answer files (``simulated_answer``), so no label here is a real judgement.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from export.annotation.records import LABEL_FIELDS
from export.labels import load_text_standoff

ROOT = Path(__file__).resolve().parents[1]
TAXONOMY = ROOT / "fairstream/data/taxonomy-v1.json"

# doc id -> text; every sentence is written for this test
DOCS = {
    "d1": "The Muslim students organised a food drive for the whole town. Later the German engineers fixed "
    "the old bridge near the river.",
    "d2": "My neighbour is a vegan and she cooks for the poor families on our street every week.",
    "d3": "A Christian charity opened a shelter for elderly women in the rural district last year. "
    "The black cat slept on the warm windowsill all afternoon long.",
    "d4": "Nobody expected the Japanese tourists to climb the whole mountain before breakfast time.",
    "d5": "Several Indian doctors volunteered at the rural clinic during the long flood season.",
}
DEV_SENTENCE = DOCS["d4"]  # d4 holds an expert dev sentence: a dev document


def cli(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "export.annotation", "--quiet", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def simulated_answer(item: dict) -> dict:
    """A simulated annotator: a fixed rule of this test, not a judgement (black cat: no; others: yes)."""
    if "cat" in item["text"]:
        return {"uid": item["uid"], "wsd": "no", "regard": None}
    return {
        "uid": item["uid"],
        "wsd": "yes",
        "regard": "positive" if "volunteer" in item["text"] else "neutral",
    }


@pytest.fixture(scope="module")
def round_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("round")
    corpus = base / "corpus"
    corpus.mkdir()
    with gzip.open(corpus / "docs.jsonl.gz", "wt", encoding="utf-8") as f:
        for doc_id, text in DOCS.items():
            f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    write_jsonl(base / "dev.jsonl", [{"uid": "dev-1", "text": DEV_SENTENCE, "keyword": "japanese"}])
    cli(
        "candidates", "--source", "corpus:docs.jsonl.gz", "--corpus-dir", corpus, "--tokens", "5:60",
        "--taxonomy", TAXONOMY, "--dev", base / "dev.jsonl", "--out", base / "candidates.jsonl",
    )  # fmt: skip
    return base


def test_candidates_are_standoff_and_leave_out_dev_documents(round_dir: Path) -> None:
    cands = records(round_dir / "candidates.jsonl")
    assert [c["cid"] for c in cands] == list(range(len(cands)))
    assert all("text" not in c for c in cands)
    found = [(c["doc_id"], c["keyword"], c["n_tokens"]) for c in cands]
    # one per (sentence, keyword), in reading order; d4 is a dev document
    assert found == [
        ("d1", "muslim", 12), ("d1", "german", 12), ("d2", "vegan", 18), ("d2", "poor", 18),
        ("d3", "christian", 16), ("d3", "rural", 16), ("d3", "black", 12), ("d5", "indian", 14), ("d5", "rural", 14),
    ]  # fmt: skip
    for c in cands:
        text = DOCS[c["doc_id"]]
        assert text[c["kw_start"] : c["kw_end"]].lower().startswith(c["keyword"][:4])
        assert c["sent_start"] <= c["kw_start"] < c["kw_end"] <= c["sent_end"]


def test_candidates_token_bounds_and_reproducible(round_dir: Path, tmp_path: Path) -> None:
    args: list[str | Path] = ["candidates", "--source", "corpus:docs.jsonl.gz", "--corpus-dir", round_dir / "corpus",
            "--dev", round_dir / "dev.jsonl", "--taxonomy", TAXONOMY]  # fmt: skip
    cli(*args, "--tokens", "5:60", "--out", tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_bytes() == (round_dir / "candidates.jsonl").read_bytes()
    cli(*args, "--tokens", "14:16", "--tokens", "17:", "--out", tmp_path / "bounded.jsonl")
    kept = {(c["doc_id"], c["keyword"]) for c in records(tmp_path / "bounded.jsonl")}
    # more than 14 and at most 16, or more than 17 tokens: the 12- and 14-token sentences go
    assert kept == {("d3", "christian"), ("d3", "rural"), ("d2", "vegan"), ("d2", "poor")}


def test_round_end_to_end(round_dir: Path) -> None:
    base, corpus = round_dir, round_dir / "corpus"
    cands = records(base / "candidates.jsonl")
    first = cands[0]
    # an earlier round labelled one mention; a hold-out holds all of d2
    prev = {"uid": "r1-00001", "source": first["source"], "doc_id": first["doc_id"],
            "sent_start": first["sent_start"], "kw_start": first["kw_start"], "wsd": "no", "regard": None}  # fmt: skip
    write_jsonl(base / "prev.jsonl", [prev])
    write_jsonl(base / "heldout.jsonl", [{"uid": "h-1", "source": "corpus:docs.jsonl.gz", "doc_id": "d2"}])
    select: list[str | Path] = ["select", "--candidates", base / "candidates.jsonl", "--exclude-labelled", base / "prev.jsonl",
              "--exclude-documents", base / "heldout.jsonl", "--per-doc", "0", "--per-doc-keyword", "0",
              "--quota", "random=all", "--prefix", "t1-"]  # fmt: skip
    cli(*select, "--seed", "1", "--out", base / "selected.jsonl")
    cli(*select, "--seed", "1", "--out", base / "selected-again.jsonl")
    cli(*select, "--seed", "2", "--out", base / "selected-seed2.jsonl")
    selected = records(base / "selected.jsonl")
    n_d2 = sum(c["doc_id"] == "d2" for c in cands)
    assert len(selected) == len(cands) - 1 - n_d2
    assert (base / "selected.jsonl").read_bytes() == (base / "selected-again.jsonl").read_bytes()
    assert {r["cid"] for r in records(base / "selected-seed2.jsonl")} == {r["cid"] for r in selected}
    assert not any(r["doc_id"] == "d2" for r in selected)
    assert first["cid"] not in {r["cid"] for r in selected}
    assert [r["uid"] for r in selected] == [f"t1-{k:05d}" for k in range(1, len(selected) + 1)]
    assert all("text" not in r for r in selected)

    out = cli("batch", "--selected", base / "selected.jsonl", "--out", base / "batches", "--annotators", "2",
              "--second-pass", "1", "--mark", "--corpus-dir", corpus)  # fmt: skip
    assert "batch-01.jsonl" in out.stdout
    batches = sorted((base / "batches").glob("batch-*.jsonl"))
    items = [it for b in batches for it in records(b)]
    assert len(batches) == 2 and [it["uid"] for it in items] == [r["uid"] for r in selected]
    for it, sel in zip(items, selected, strict=True):
        assert set(it) == {"uid", "text", "keyword", "gloss", "text_marked"}
        assert it["text"] == DOCS[sel["doc_id"]][sel["sent_start"] : sel["sent_end"]]
        assert "[[" in it["text_marked"]
    assert "GUIDE.md" in (base / "batches/INSTRUCTIONS.md").read_text()
    second = records(base / "batches/second-pass.jsonl")
    assert len(second) == 2

    answers = base / "answers"
    answers.mkdir()
    for b in [*batches, base / "batches/second-pass.jsonl"]:
        write_jsonl(answers / b.name, [simulated_answer(it) for it in records(b)])
    cli("merge", "--selected", base / "selected.jsonl", "--batches", base / "batches", "--answers", answers,
        "--round", "19", "--out", base / "labels.jsonl", "--check-text", "--corpus-dir", corpus)  # fmt: skip
    labels = records(base / "labels.jsonl")
    assert len(labels) == len(selected)
    assert all(list(r) == list(LABEL_FIELDS) for r in labels)
    # the format of the shipped text-round label files
    shipped = json.loads((ROOT / "export/labels/text-r8.jsonl").open().readline())
    assert list(shipped) == list(LABEL_FIELDS)
    assert {r["annotator"] for r in labels} == {"r19-helper-01", "r19-helper-02"}
    pairs = load_text_standoff(base / "labels.jsonl", corpus_dir=corpus)
    assert [p.uid for p in pairs] == [r["uid"] for r in labels]
    assert all(
        p.mention.text[p.mention.start : p.mention.end].lower()[:3] == p.mention.keyword[:3] for p in pairs
    )

    cli("merge", "--selected", base / "selected.jsonl", "--batches", base / "batches", "--answers", answers,
        "--names", "second-pass.jsonl", "--annotator", "r19-second-pass", "--round", "19",
        "--out", base / "second-pass.jsonl")  # fmt: skip
    cli("agreement", base / "labels.jsonl", base / "second-pass.jsonl", "--json", base / "agreement.json",
        "--markdown", base / "agreement.md")  # fmt: skip
    report = json.loads((base / "agreement.json").read_text())
    assert report["n"] == 2 and report["wsd_kappa"] == 1.0
    assert "| WSD Cohen's kappa |" in (base / "agreement.md").read_text()


def test_scores_choose_by_reason(round_dir: Path) -> None:
    base = round_dir
    cands = records(base / "candidates.jsonl")
    # fake model probabilities: even cids a confident negative person, odd ones a coin toss
    scores = [
        {
            "cid": c["cid"],
            "p_wsd_yes": 0.95 if c["cid"] % 2 == 0 else 0.5,
            "p_regard": [0.8, 0.1, 0.1],
            "model": "fake",
        }
        for c in cands
    ]
    write_jsonl(base / "scores.jsonl", scores)
    cli("select", "--candidates", base / "candidates.jsonl", "--scores", base / "scores.jsonl", "--quota",
        "model-negative=2", "--quota", "uncertain=2", "--prefix", "s-", "--out", base / "scored-sel.jsonl")  # fmt: skip
    sel = records(base / "scored-sel.jsonl")
    by_reason = {r["cid"]: r["selected_as"] for r in sel}
    assert sorted(by_reason.values()) == ["model-negative", "model-negative", "uncertain", "uncertain"]
    assert all(cid % 2 == 0 for cid, why in by_reason.items() if why == "model-negative")
    assert all(cid % 2 == 1 for cid, why in by_reason.items() if why == "uncertain")


def test_malformed_answer_is_one_line_naming_file_and_line(round_dir: Path, tmp_path: Path) -> None:
    base = round_dir
    cli(
        "select", "--candidates", base / "candidates.jsonl", "--prefix", "m-", "--out", tmp_path / "sel.jsonl"
    )
    cli("batch", "--selected", tmp_path / "sel.jsonl", "--out", tmp_path / "batches", "--annotators", "1",
        "--corpus-dir", base / "corpus")  # fmt: skip
    items = records(tmp_path / "batches/batch-01.jsonl")
    answers = [simulated_answer(it) for it in items]
    answers[1] = {"uid": items[1]["uid"], "wsd": "maybe", "regard": None}
    (tmp_path / "answers").mkdir()
    write_jsonl(tmp_path / "answers/batch-01.jsonl", answers)
    proc = cli("merge", "--selected", tmp_path / "sel.jsonl", "--batches", tmp_path / "batches", "--answers",
               tmp_path / "answers", "--round", "1", "--out", tmp_path / "labels.jsonl", check=False)  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"{tmp_path / 'answers/batch-01.jsonl'}:2:" in lines[0] and "wsd 'maybe'" in lines[0]
    assert not (tmp_path / "labels.jsonl").exists()

    answers[1] = {"uid": items[1]["uid"], "wsd": "no", "regard": "negative"}
    write_jsonl(tmp_path / "answers/batch-01.jsonl", answers)
    proc = cli("merge", "--selected", tmp_path / "sel.jsonl", "--batches", tmp_path / "batches", "--answers",
               tmp_path / "answers", "--round", "1", "--out", tmp_path / "labels.jsonl", check=False)  # fmt: skip
    assert (
        proc.returncode == 2 and "batch-01.jsonl:2:" in proc.stderr and "regard must be null" in proc.stderr
    )


def test_bad_argument_names_it_and_the_allowed_values(round_dir: Path, tmp_path: Path) -> None:
    proc = cli("select", "--candidates", round_dir / "candidates.jsonl", "--quota", "loud=3", "--prefix", "x-",
               "--out", tmp_path / "s.jsonl", check=False)  # fmt: skip
    assert proc.returncode == 2
    assert "--quota 'loud=3'" in proc.stderr and "model-negative" in proc.stderr and "random" in proc.stderr
    proc = cli(
        "candidates",
        "--source",
        "corpus:x.jsonl.gz",
        "--tokens",
        "9",
        "--out",
        tmp_path / "c.jsonl",
        check=False,
    )
    assert proc.returncode == 2 and "--tokens '9'" in proc.stderr


def test_agreement_numbers(tmp_path: Path) -> None:
    ref = [("a", "yes", "negative"), ("b", "yes", "neutral"), ("c", "no", None), ("d", "yes", "positive")]
    other = [("a", "yes", "negative"), ("b", "yes", "positive"), ("c", "unsure", None), ("d", "no", None)]
    write_jsonl(tmp_path / "ref.jsonl", [{"uid": u, "wsd": w, "regard": r} for u, w, r in ref])
    write_jsonl(tmp_path / "other.jsonl", [{"uid": u, "wsd": w, "regard": r} for u, w, r in other])
    cli("agreement", tmp_path / "ref.jsonl", tmp_path / "other.jsonl", "--json", tmp_path / "a.json")
    rep = json.loads((tmp_path / "a.json").read_text())
    assert rep["n"] == 4 and rep["wsd_agreement"] == 0.75
    assert rep["wsd_kappa"] == pytest.approx(0.5)  # po 0.75, pe 0.75*0.5 + 0.25*0.5
    assert rep["regard_compared"] == 2 and rep["regard_agreement"] == 0.5
    assert rep["regard_f1"]["negative"] == 1.0 and rep["negative_f1"] == 1.0
    assert rep["regard_confusion"]["neutral"]["positive"] == 1


def test_batch_accepts_the_forms_of_a_shipped_taxonomy_and_refuses_changed_text():
    """A candidate's offsets may point at a form that does not start with the keyword ("cis" for
    cisgender, "Native Americans" for native-american); text that is no form of it means the source changed."""
    from export.annotation.batch import points_at_keyword

    assert points_at_keyword("Jews", "jew") and points_at_keyword("vegans", "vegan")
    assert points_at_keyword("cis", "cisgender")
    assert points_at_keyword("Native  Americans", "native-american")
    assert not points_at_keyword("cat", "cisgender") and not points_at_keyword("the", "jew")


def test_select_keeps_one_half_of_a_split_and_leaves_out_a_labelled_sentence_in_any_document(
    tmp_path: Path,
) -> None:
    """``--keywords-of SPLIT:HALF`` and ``--exclude-same-text``: how round 31 drew unseen pairs of trained
    keywords (a labelled sentence that stands in another document must not come back as an unseen item)."""
    sentence = "The Muslim students organised a food drive for the whole town and its rural villages."
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, docs in (("new.jsonl.gz", {"e1": sentence, "e3": "Several Indian doctors volunteered at the rural "
                                         "clinic during the long flood season."}),
                       ("old.jsonl.gz", {"o1": "It rained all day long. " + sentence})):  # fmt: skip
        with gzip.open(corpus / name, "wt", encoding="utf-8") as f:
            for doc_id, text in docs.items():
                f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    cli("candidates", "--source", "corpus:new.jsonl.gz", "--corpus-dir", corpus, "--tokens", "5:60",
        "--taxonomy", TAXONOMY, "--out", tmp_path / "candidates.jsonl")  # fmt: skip
    cands = records(tmp_path / "candidates.jsonl")
    assert sorted((c["doc_id"], c["keyword"]) for c in cands) == [
        ("e1", "muslim"), ("e1", "rural"), ("e3", "indian"), ("e3", "rural")
    ]  # fmt: skip
    start = len(
        "It rained all day long. "
    )  # an earlier round labelled the sentence in another file's document
    write_jsonl(tmp_path / "labels.jsonl", [{"uid": "x-1", "source": "corpus:old.jsonl.gz", "doc_id": "o1",
                                             "sent_start": start, "sent_end": start + len(sentence),
                                             "kw_start": start + 4, "kw_end": start + 10}])  # fmt: skip
    (tmp_path / "split.json").write_text(json.dumps({"train": ["muslim", "indian"], "heldout": ["rural"]}))
    base: list[str | Path] = ["select", "--candidates", tmp_path / "candidates.jsonl", "--corpus-dir", corpus,
                              "--per-doc", "0", "--per-doc-keyword", "0", "--quota", "random=all", "--prefix", "t-"]  # fmt: skip
    cli(*base, "--keywords-of", f"{tmp_path / 'split.json'}:train", "--out", tmp_path / "half.jsonl")
    assert sorted((r["doc_id"], r["keyword"]) for r in records(tmp_path / "half.jsonl")) == [
        ("e1", "muslim"), ("e3", "indian")
    ]  # fmt: skip
    cli(*base, "--keywords-of", f"{tmp_path / 'split.json'}:train", "--exclude-same-text", tmp_path / "labels.jsonl",
        "--out", tmp_path / "selected.jsonl")  # fmt: skip
    assert [(r["doc_id"], r["keyword"]) for r in records(tmp_path / "selected.jsonl")] == [("e3", "indian")]
    bad = cli(
        *base, "--keywords-of", f"{tmp_path / 'split.json'}:test", "--out", tmp_path / "x.jsonl", check=False
    )
    assert bad.returncode != 0 and "has no half 'test'; its halves: heldout, train" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
