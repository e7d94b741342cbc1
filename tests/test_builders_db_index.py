"""db-index: hand-computed arithmetic, and a real augmented set scoring lower than its source."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from fairstream.builders.db_index import (
    SentenceEncoder,
    choose_k,
    crows_stereotypes,
    db_index,
    db_index_from_embeddings,
    load_comparison,
    stereoset_stereotypes,
)
from fairstream.builders.producers import BiasProducer
from fairstream.builders.records import BuilderConfigError
from fairstream.builders.substitute import BiaserSubstitution
from fairstream.models.runtime import JointModel
from fairstream.taxonomy import Taxonomy


def unit(*v: float) -> np.ndarray:
    a = np.array(v, dtype=np.float64)
    return a / np.linalg.norm(a)


def test_db_index_arithmetic_by_hand():
    emb = np.stack([unit(1, 0), unit(1, 0), unit(0, 1)])
    comp = np.stack([unit(1, 0), unit(1, 1)])
    r = db_index_from_embeddings(emb, comp, labels=np.array([0, 0, 1]), n_comparison=2)
    s = 1 / np.sqrt(2)
    # cluster 0 (two copies of e1): sims (1, s); cluster 1 (e2): sims (0, s)
    assert r.clusters[0]["mean"] == pytest.approx((1 + s) / 2, abs=1e-5)
    assert r.clusters[0]["std"] == pytest.approx((1 - s) / 2, abs=1e-5)
    assert r.clusters[1]["mean"] == pytest.approx(s / 2, abs=1e-5)
    # per comparison entry, mean over clusters: (0.5, s); db-index = their mean, spread = their std
    assert r.db_index == pytest.approx((0.5 + s) / 2)
    assert r.spread == pytest.approx(abs(s - 0.5) / 2)
    # weighted: every entry once: (1 + s + 1 + s + 0 + s) / 6
    assert r.weighted == pytest.approx((2 + 3 * s) / 6)
    with pytest.raises(BuilderConfigError, match="empty dataset"):
        db_index_from_embeddings(emb[:0], comp)


def test_choose_k_finds_separated_groups():
    rng = np.random.default_rng(0)
    centers = np.eye(8)[:3] * 5
    pts = np.concatenate([c + rng.normal(scale=0.2, size=(20, 8)) for c in centers])
    pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    k, labels, scores = choose_k(pts, range(2, 7))
    assert k == 3 and max(scores, key=scores.get) == 3
    assert len(set(labels[:20].tolist())) == 1 and len(set(labels.tolist())) == 3
    assert choose_k(pts[:2], range(2, 5))[0] == 1  # too few entries to cluster


def test_comparison_sets_from_shared_data(shared_dir: Path):
    bias = shared_dir / "data/bias"
    ss = stereoset_stereotypes(bias / "stereoset/dev.json.gz", ["religion"])
    # one stereotype per religion item: 78 intersentence + the intrasentence religion items
    assert len(ss) > 78 and all(isinstance(t, str) and t for t in ss)
    cp = crows_stereotypes(bias / "crows_pairs/crows_pairs_anonymized.csv")
    assert len(cp) == 1508
    assert (
        len(load_comparison("both", bias))
        == len(stereoset_stereotypes(bias / "stereoset/dev.json.gz")) + 1508
    )
    with pytest.raises(BuilderConfigError, match="has no texts; check --bias-type"):
        load_comparison("stereoset", bias, ["religon"])
    with pytest.raises(BuilderConfigError, match="not one of"):
        load_comparison("nope", bias)


@pytest.mark.slow  # about 30 s on 2 cores: WSD model, MiniLM embeddings and a k-means grid
def test_augmented_set_scores_lower_than_its_source(shared_dir: Path):
    """Constructed case: CrowS-Pairs stereotypes about Muslims vs StereoSet's religion stereotypes."""
    bias = shared_dir / "data/bias"
    with open(bias / "crows_pairs/crows_pairs_anonymized.csv", encoding="utf-8") as f:
        source = [
            r["sent_more"]
            for r in csv.DictReader(f)
            if r["bias_type"] == "religion"
            and r["stereo_antistereo"] == "stereo"
            and re.search(r"(?i)\bmuslims?\b", r["sent_more"])
        ]
    assert len(source) >= 25
    sub = BiaserSubstitution(
        BiasProducer.from_taxonomy(Taxonomy.default(), "religion"), model=JointModel(intra_op_threads=1)
    )
    augmented = [r["text"] for r in sub.augment({"text": t} for t in source)]
    assert len(augmented) == len(source) + sub.stats.copies and sub.stats.copies >= 4 * 25
    comparison = load_comparison("stereoset", bias, ["religion"])
    enc = SentenceEncoder(batch_size=64)
    before = db_index(source, comparison, enc, ks=range(2, 6), n_comparison=150, seed=0)
    after = db_index(augmented, comparison, enc, ks=range(2, 6), n_comparison=150, seed=0)
    assert before.n_comparison == after.n_comparison == 150
    assert after.db_index < before.db_index
    assert after.weighted < before.weighted
    assert sum(c["size"] for c in after.clusters) == len(augmented)
    assert 0 < after.spread < 1 and all(-1 <= c["mean"] <= 1 for c in before.clusters)


def test_encoder_rejects_a_folder_without_config(tmp_path):
    with pytest.raises(BuilderConfigError, match=r"no config\.json"):
        SentenceEncoder(tmp_path)
