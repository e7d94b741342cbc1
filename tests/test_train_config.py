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
    from export.training_set import build_training_set, check_leave_out
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


def test_max_round_leaves_out_later_labelling_rounds_and_keeps_files_without_a_round(tmp_path):
    """``--max-round 10`` rebuilds a model from before rounds 11 and 12 without naming each later file."""
    import json

    from export.labels import label_round
    from export.training_set import build_training_set, label_files
    from fairstream.taxonomy import Taxonomy

    for name, uid, rnd in (("written-a-v1.jsonl", "w1", None), ("written-r10.jsonl", "t10", 10),
                           ("written-r11.jsonl", "t11", 11)):  # fmt: skip
        _written(tmp_path / name, uid)
        if rnd is not None:
            rec = json.loads((tmp_path / name).read_text(encoding="utf-8"))
            (tmp_path / name).write_text(json.dumps({**rec, "round": rnd}) + "\n", encoding="utf-8")
    assert (
        label_round(tmp_path / "written-r11.jsonl") == 11
        and label_round(tmp_path / "written-a-v1.jsonl") is None
    )
    base = dict(labels_dir=tmp_path, corpus=tmp_path, packages=tmp_path, without_text_labels=False,
                with_dev_documents=False, dump_pairs=None, with_bias_labels=False, sheng=tmp_path / "none.tsv",
                include_dev=False, dev_folds=0, fold=0, seed=0, counterfactual=0, leave_out=[])  # fmt: skip
    taxonomy = Taxonomy.default()

    def uids(**kw):
        return sorted(p.uid for p in build_training_set(argparse.Namespace(**base, **kw), taxonomy))

    assert uids(max_round=None) == ["t10", "t11", "w1"]
    assert uids(max_round=10) == ["t10", "w1"]
    assert uids(max_round=9) == ["w1"]
    # --leave-out still applies beside it
    kept = label_files(
        argparse.Namespace(**{**base, "leave_out": ["written-r10.jsonl"]}, max_round=11), "written-*"
    )
    assert [p.name for p in kept] == ["written-a-v1.jsonl", "written-r11.jsonl"]


def test_encoder_layers_keep_evenly_spaced_pretrained_layers_and_the_run_rebuilds_them(tmp_path):
    import json

    import torch
    from transformers import BertConfig, BertModel

    from export.modeling import JointCrossEncoder, layers_to_keep

    assert layers_to_keep(6, 3) == [0, 2, 4] and layers_to_keep(6, 6) == list(range(6))
    assert layers_to_keep(4, 1) == [0]
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=4, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64)  # fmt: skip
    full = BertModel(cfg)
    full.save_pretrained(tmp_path / "enc")
    small = JointCrossEncoder(str(tmp_path / "enc"), encoder_layers=2).eval()
    layers = small.encoder.encoder.layer
    assert len(layers) == 2 and small.encoder.config.num_hidden_layers == 2
    for kept, original in zip(layers, (full.encoder.layer[0], full.encoder.layer[2]), strict=True):
        for a, b in zip(kept.parameters(), original.parameters(), strict=True):
            assert torch.equal(a, b)  # the pretrained weights of layers 0 and 2, not fresh ones
    # a run folder as export.train writes it rebuilds the smaller model from its saved config
    run = tmp_path / "run"
    run.mkdir()
    torch.save(small.state_dict(), run / "model.pt")
    small.encoder.config.save_pretrained(run / "encoder_config")
    (run / "train_meta.json").write_text(json.dumps({"pooling": "cls_span", "encoder_layers": 2}))
    again = JointCrossEncoder.from_run(run)
    ids = torch.tensor([[1, 5, 7, 9, 2]])
    inputs = (ids, torch.ones_like(ids), torch.zeros_like(ids), torch.tensor([[0, 1, 0, 0, 0]]))
    with torch.no_grad():
        for a, b in zip(small(*inputs), again(*inputs), strict=True):
            assert torch.equal(a, b)
    with pytest.raises(ValueError, match=r"encoder_layers=5: the encoder has 4 layers; allowed 1\.\.4"):
        JointCrossEncoder(str(tmp_path / "enc"), encoder_layers=5)
    with pytest.raises(ValueError, match=r"^encoder_layers="):
        TrainConfig(encoder_layers=-1)


def test_encoder_layers_on_an_encoder_without_a_known_layer_stack_is_a_clear_error():
    from torch import nn

    from export.modeling import keep_encoder_layers

    class Odd(nn.Module):
        config = None

    with pytest.raises(ValueError, match=r"encoder_layers=2: no layer stack found in Odd"):
        keep_encoder_layers(Odd(), 2)


def test_new_keywords_split_trains_on_the_train_half_only_and_refuses_an_unsplit_keyword(tmp_path):
    """``--new-keywords-split``: the heldout half's keywords never enter training (issue 47's measurement of
    what a user who adds a keyword gets depends on it), and a keyword the split does not name is an error."""
    import gzip
    import json

    from export.training_set import build_training_set
    from fairstream.taxonomy import Taxonomy

    text = "The gay couple moved in. A senior official spoke. The immigrant family arrived."
    with gzip.open(tmp_path / "tiny-s31.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps({"id": "d1", "text": text}) + "\n")

    def rec(uid: str, keyword: str, round_: int = 30) -> dict:
        start = text.lower().index(keyword)
        sent_start = text.rfind(".", 0, start) + 1 if "." in text[:start] else 0
        return {"uid": uid, "source": "corpus:tiny-s31.jsonl.gz", "doc_id": "d1", "sent_start": sent_start,
                "sent_end": text.index(".", start) + 1, "kw_start": start, "kw_end": start + len(keyword),
                "keyword": keyword, "class": "x", "gloss": f"who is {keyword}", "wsd": "yes",
                "regard": "neutral", "annotator": "t", "round": round_}  # fmt: skip

    labels = tmp_path / "v2keywords-r30.jsonl"
    labels.write_text("".join(json.dumps(rec(u, k)) + "\n" for u, k in
                              (("n1", "gay"), ("n2", "senior"), ("n3", "immigrant"))), encoding="utf-8")  # fmt: skip
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": ["gay", "immigrant"], "heldout": ["senior"]}), encoding="utf-8")
    base = dict(labels_dir=tmp_path, corpus=tmp_path, packages=tmp_path, without_text_labels=False,
                with_dev_documents=False, dump_pairs=None, with_bias_labels=False, sheng=tmp_path / "none.tsv",
                include_dev=False, dev_folds=0, fold=0, seed=0, counterfactual=0, leave_out=[],
                max_round=13)  # fmt: skip
    taxonomy = Taxonomy.default()
    assert build_training_set(argparse.Namespace(**base, new_keywords_split=None), taxonomy) == []
    pairs = build_training_set(argparse.Namespace(**base, new_keywords_split=split), taxonomy)
    assert sorted((p.uid, p.mention.keyword) for p in pairs) == [("n1", "gay"), ("n3", "immigrant")]
    assert all(p.mention.text[p.mention.start : p.mention.end].lower() == p.mention.keyword for p in pairs)
    split.write_text(json.dumps({"train": ["gay"], "heldout": ["senior"]}), encoding="utf-8")
    with pytest.raises(SystemExit, match=r"keyword 'immigrant' is in neither half of .*split.json"):
        build_training_set(argparse.Namespace(**base, new_keywords_split=split), taxonomy)
