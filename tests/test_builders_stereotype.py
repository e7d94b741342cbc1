"""Stereotype score, StereoSet ss/lms/ICAT and mb-index: hand-computed arithmetic, real StereoSet items,
and one real SmolLM2-135M run of `fairstream stereotype-score` (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fairstream.builders.records import BuilderConfigError
from fairstream.builders.stereotype import (
    OPTIONS,
    icat,
    load_intersentence,
    mb_index,
    scores_from_similarities,
)
from fairstream.cli import main
from tests.test_annotate import SMOLLM2_GGUF, smollm2_dir


def test_scores_by_hand():
    # columns: stereotype, anti-stereotype, unrelated
    sims = np.array(
        [
            [0.9, 0.5, 0.1],  # nearest stereotype; stereo > anti; both > unrelated (2 related)
            [0.2, 0.6, 0.3],  # nearest anti; anti > stereo; only anti > unrelated (1)
            [0.1, 0.2, 0.8],  # nearest unrelated; anti > stereo; none > unrelated (0)
            [0.7, 0.4, 0.5],  # nearest stereotype; stereo > anti; only stereo > unrelated (1)
            [0.6, 0.3, 0.2],  # nearest stereotype; stereo > anti; both (2)
        ]
    )
    s = scores_from_similarities(sims)
    assert s["nearest"] == {"stereotype": 3, "anti-stereotype": 1, "unrelated": 1}
    assert s["stereotype_score"] == pytest.approx(3 / 4)
    assert (s["pro"], s["related"], s["items"]) == (3, 6, 5)
    assert s["ss"] == pytest.approx(60.0)  # 100 * 3 / 5
    assert s["lms"] == pytest.approx(60.0)  # 100 * 6 / (2 * 5)
    assert s["icat"] == pytest.approx(48.0)  # 60 * min(60, 40) / 50
    with pytest.raises(BuilderConfigError, match="no items"):
        scores_from_similarities(np.zeros((0, 3)))


def test_icat_and_mb_index_by_hand():
    assert icat(100, 50) == 100  # ideal model
    assert icat(90, 100) == 0 and icat(90, 0) == 0  # always (anti-)stereotypical
    assert icat(80, 65) == pytest.approx(80 * 35 / 50)
    assert mb_index(20.0, 0.75, 1000) == pytest.approx(0.015)
    with pytest.raises(BuilderConfigError, match="dataset_size=0 must be >= 1"):
        mb_index(20.0, 0.5, 0)
    with pytest.raises(BuilderConfigError, match="fraction"):
        mb_index(20.0, 75, 10)


def test_load_stereoset_intersentence(shared_dir: Path):
    path = shared_dir / "data/bias/stereoset/dev.json.gz"
    items = load_intersentence(path)
    assert len(items) == 2123
    assert all(set(it.options) == set(OPTIONS) and it.context for it in items)
    religion = load_intersentence(path, ["religion"])
    assert len(religion) == 78 and {it.bias_type for it in religion} == {"religion"}
    assert [it.id for it in load_intersentence(path, limit=5)] == [it.id for it in items[:5]]
    with pytest.raises(BuilderConfigError, match=r"--bias-type \['religon'\]: not in StereoSet; allowed"):
        load_intersentence(path, ["religon"])
    with pytest.raises(BuilderConfigError, match="file not found"):
        load_intersentence(path.parent / "missing.json.gz")


@pytest.mark.slow
def test_real_smollm2_stereotype_score_cli(shared_dir: Path, tmp_path: Path, capsys):
    folder = smollm2_dir()
    ref = tmp_path / "ref.jsonl"
    ref.write_text(
        "".join(
            json.dumps({"id": i, "text": t}) + "\n"
            for i, t in enumerate(
                ["The river flows past the old mill and into the sea.", "She planted tomatoes in the spring."]
            )
        )
    )
    out, summary = tmp_path / "items.jsonl", tmp_path / "summary.json"
    rc = main(
        [
            "stereotype-score",
            "--model",
            str(folder),
            "--gguf-file",
            SMOLLM2_GGUF,
            "--stereoset",
            str(shared_dir / "data/bias/stereoset/dev.json.gz"),
            "--bias-type",
            "gender",
            "religion",
            "--limit",
            "6",
            "--max-new-tokens",
            "12",
            "--reference",
            str(ref),
            "--dataset-size",
            "500",
            "-o",
            str(out),
            "--summary",
            str(summary),
            "--no-progress",
        ]
    )
    assert rc == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 6 and {r["bias_type"] for r in records} <= {"gender", "religion"}
    for r in records:
        assert isinstance(r["continuation"], str)
        assert r["nearest"] == max(r["similarity"], key=r["similarity"].get)
        assert r["provenance"]["model"] == f"{folder}#{SMOLLM2_GGUF}"
    s = json.loads(summary.read_text())
    sims = np.array([[r["similarity"][o] for o in OPTIONS] for r in records])
    again = scores_from_similarities(sims)
    for key in ("nearest", "pro", "related", "items"):
        assert s["overall"][key] == again[key]
    assert s["overall"]["icat"] == pytest.approx(icat(s["overall"]["lms"], s["overall"]["ss"]))
    assert 1 < s["perplexity"] < 10_000
    if s["overall"]["stereotype_score"] is not None:
        assert s["mb_index"] == pytest.approx(s["perplexity"] * s["overall"]["stereotype_score"] / 500)
    assert '"icat"' in capsys.readouterr().out
