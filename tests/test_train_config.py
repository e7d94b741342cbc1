"""One training recipe: export.train's flags and export.sweep's config defaults come from TrainConfig."""

from __future__ import annotations

import argparse

import pytest

from export.config import TrainConfig
from export.sweep import DEFAULTS


def test_train_flags_and_sweep_defaults_are_the_same_recipe():
    ap = argparse.ArgumentParser()
    TrainConfig.add_arguments(ap)
    from_flags = TrainConfig.from_mapping(ap.parse_args([]))
    from_sweep = TrainConfig.from_mapping(DEFAULTS)
    assert from_flags == from_sweep == TrainConfig()
    assert from_flags.regard_weight == 2.0  # the shipped joint-v2 recipe (export/EXPERIMENTS.md)
    parsed = TrainConfig.from_mapping(ap.parse_args(["--regard-weight", "1", "--pooling", "mean"]))
    assert (parsed.regard_weight, parsed.pooling) == (1.0, "mean")


@pytest.mark.parametrize(
    ("name", "value"), [("lr", 0.0), ("batch_size", 0), ("pooling", "max"), ("dropout", 1.0)]
)
def test_bad_values_name_the_setting(name, value):
    with pytest.raises(ValueError, match=rf"^{name}="):
        TrainConfig(**{name: value})


def _written(path, uid: str, keyword: str = "muslim", gloss: str = "who believes in Islam") -> None:
    import json

    rec = {"uid": uid, "text": f"The {keyword.title()} teacher helped every pupil after class.", "keyword": keyword,
           "class": "religion", "gloss": gloss, "wsd": "yes", "regard": "positive", "source": path.stem}  # fmt: skip
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")


def test_leave_out_drops_a_label_file_by_name_and_a_wrong_name_is_an_error(tmp_path):
    """``--leave-out text-r9.jsonl`` rebuilds a model from before a labelling round; a typo must not train on it."""
    from export.train import build_training_set, check_leave_out
    from fairstream.taxonomy import Taxonomy

    _written(tmp_path / "written-a-v1.jsonl", "a1")
    _written(tmp_path / "written-b-v1.jsonl", "b1")
    base = dict(labels_dir=tmp_path, corpus=tmp_path, packages=tmp_path, without_text_labels=False,
                with_dev_documents=False, dump_pairs=None, with_bias_labels=False, sheng=tmp_path / "none.tsv",
                include_dev=False, dev_folds=0, fold=0, seed=0, counterfactual=0)  # fmt: skip
    taxonomy = Taxonomy.default()
    every = build_training_set(argparse.Namespace(**base, leave_out=[]), taxonomy)
    assert sorted(p.uid for p in every) == ["a1", "b1"]
    args = argparse.Namespace(**base, leave_out=["written-b-v1.jsonl"])
    check_leave_out(args)
    assert [p.uid for p in build_training_set(args, taxonomy)] == ["a1"]
    with pytest.raises(
        SystemExit, match=r"--leave-out text-r9.jsonl: not a label file of .*written-a-v1.jsonl"
    ):
        check_leave_out(argparse.Namespace(**base, leave_out=["text-r9.jsonl"]))
