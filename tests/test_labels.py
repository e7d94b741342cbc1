"""The project's stand-off label files resolve against ../shared and fail loudly when they do not."""

import json
from pathlib import Path

import pytest

from export.labels import load_bias_standoff, load_standoff
from fairstream.errors import FairStreamError
from fairstream.models.labels import load_labelled_pairs

LABELS = Path(__file__).resolve().parents[1] / "export" / "labels"


def _check_marks_keyword(pairs):
    for p in pairs:
        m = p.mention
        surface = m.text[m.start : m.end].lower().replace("-", "")
        assert surface.startswith(m.keyword.replace("-", "")), (p.uid, surface, m.keyword)
        assert (p.regard is None) == (p.wsd != "yes"), p.uid


def test_corpus_labels_resolve(shared_dir: Path):
    pairs = load_standoff(LABELS / "corpus-v1.jsonl", shared_dir / "data/corpus")
    assert len(pairs) == sum(1 for line in (LABELS / "corpus-v1.jsonl").open() if line.strip())
    _check_marks_keyword(pairs)


def test_bias_labels_resolve_for_every_source(shared_dir: Path):
    pairs = load_bias_standoff(LABELS / "bias-v1.jsonl", shared_dir)
    records = [json.loads(line) for line in (LABELS / "bias-v1.jsonl").open()]
    assert len(pairs) == len(records)
    assert {r["source"] for r in records} == {
        "crows_pairs",
        "stereoset-intersentence",
        "stereoset-intrasentence",
    }
    _check_marks_keyword(pairs)
    # intersentence items are the context sentence followed by the judged continuation
    inter = next(p for p, r in zip(pairs, records, strict=True) if r["source"] == "stereoset-intersentence")
    assert inter.mention.text.count(".") >= 1


def test_bias_labels_with_wrong_offsets_name_the_record(shared_dir: Path, tmp_path: Path):
    rec = json.loads((LABELS / "bias-v1.jsonl").open().readline())
    rec["kw_start"] += 1
    rec["kw_end"] += 1
    bad = tmp_path / "bias-bad.jsonl"
    bad.write_text(json.dumps(rec) + "\n")
    with pytest.raises(FairStreamError, match=rf"bias-bad.jsonl:1 \(uid {rec['uid']}\).*offsets"):
        load_bias_standoff(bad, shared_dir)


def test_bias_labels_need_the_shared_folder(tmp_path: Path):
    with pytest.raises(FairStreamError, match="does not exist; pass the shared data folder"):
        load_bias_standoff(LABELS / "bias-v1.jsonl", tmp_path / "nowhere")


def test_dumped_pairs_load_back_identically(shared_dir: Path, tmp_path: Path):
    from export.training_set import dump_pairs

    pairs = load_bias_standoff(LABELS / "bias-v1.jsonl", shared_dir)[:200]
    dump_pairs(pairs, tmp_path / "pool.jsonl")
    assert load_labelled_pairs(tmp_path / "pool.jsonl") == pairs


def test_dev_document_items_train_only_where_their_dev_items_are_not_evaluated(shared_dir: Path):
    from argparse import Namespace

    from export.training_set import dev_document_pairs, devdoc_folds

    base = dict(labels_dir=LABELS, corpus=shared_dir / "data/corpus", dump_pairs=None, include_dev=False)
    n_records = sum(1 for line in (LABELS / "devdocs-v1.jsonl").open() if line.strip())
    assert dev_document_pairs(Namespace(**base, dev_folds=0, fold=0)) == []  # dev held out whole
    assert (
        len(dev_document_pairs(Namespace(**{**base, "include_dev": True}, dev_folds=0, fold=0))) == n_records
    )
    for folds in (3, 5):
        for k in range(folds):
            kept = dev_document_pairs(Namespace(**base, dev_folds=folds, fold=k))
            assert 0 < len(kept) < n_records
            assert all(k not in (devdoc_folds(p.source, folds) or {k}) for p in kept)
    # the dev sentences themselves are never among them
    dev_texts = {json.loads(line)["text"] for line in (shared_dir / "data/labels/dev.jsonl").open()}
    assert (
        not {
            p.mention.text
            for p in dev_document_pairs(Namespace(**{**base, "include_dev": True}, dev_folds=0, fold=0))
        }
        & dev_texts
    )
