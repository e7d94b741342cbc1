"""export.sweep and export.train.fit on a tiny random BERT built here (real training code, CPU)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

from export import sweep
from export.sweep import select
from fairstream.models.labels import load_labelled_pairs
from tests.fixtures.make_tiny_model import build_tokenizer

ROOT = Path(__file__).resolve().parents[1]

# sentences written for this test: (template, wsd, regard)
TEMPLATES = [
    ("The {k} nurse was praised for saving three lives during the flood last spring.", "yes", "positive"),
    ("Everyone knows {k} people are lazy thieves who cannot be trusted with anything.", "yes", "negative"),
    ("A {k} student asked where the library was before the lecture started.", "yes", "neutral"),
    ("The museum sells {k} pottery and old maps of the region to visitors.", "no", None),
]
KEYWORDS = [("german", "of German nationality"), ("muslim", "who believes in Islam"), ("poor", "who is poor")]


def write_pairs(path: Path, prefix: str, sources: list[str]) -> None:
    with path.open("w") as f:
        i = 0
        for kw, gloss in KEYWORDS:
            for tpl, wsd, regard in TEMPLATES:
                text = tpl.format(k=kw.capitalize() if tpl.startswith("The {k}") else kw)
                rec = {"uid": f"{prefix}{i}", "text": text, "keyword": kw, "gloss": gloss, "wsd": wsd,
                       "regard": regard, "source": sources[i % len(sources)]}  # fmt: skip
                f.write(json.dumps(rec) + "\n")
                i += 1


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 2-layer BERT saved like a Hugging Face encoder folder (weights, config, tokenizer.json)."""
    out = tmp_path_factory.mktemp("tiny-encoder")
    texts = [json.loads(line)["text"] for line in (ROOT / "fairstream/data/sample_corpus.jsonl").open()]
    tok = build_tokenizer([*texts, "<< >> ; who is a person of nationality"])
    BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                      sep_token="[SEP]", mask_token="[MASK]").save_pretrained(out)  # fmt: skip
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=256)  # fmt: skip
    BertModel(cfg).save_pretrained(out)
    return out


@pytest.fixture()
def pool_and_dev(tmp_path: Path) -> tuple[Path, Path]:
    write_pairs(tmp_path / "pool.jsonl", "p", ["corpus-a", "bias-b"])
    write_pairs(tmp_path / "dev.jsonl", "d", ["web"])
    return tmp_path / "pool.jsonl", tmp_path / "dev.jsonl"


def run_sweep(monkeypatch, encoder: Path, pool: Path, dev: Path, configs: list[dict], out: Path) -> None:
    (out.parent / "configs.json").write_text(json.dumps(configs))
    argv = ["sweep", "--encoder", str(encoder), "--pairs", str(pool), "--dev", str(dev),
            "--configs", str(out.parent / "configs.json"), "--out", str(out), "--device", "cpu"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    sweep.main()


def test_select_excludes_and_repeats_by_source_prefix(pool_and_dev):
    pool = load_labelled_pairs(pool_and_dev[0])
    base = {**sweep.DEFAULTS}
    assert len(select(pool, base)) == 12
    assert {p.source for p in select(pool, {**base, "exclude": ["bias-"]})} == {"corpus-a"}
    assert len(select(pool, {**base, "repeat": {"bias-": 3}})) == 6 + 6 * 3
    assert all(p.wsd == "yes" for p in select(pool, {**base, "regard_only_data": True}))


def test_dev_document_items_never_train_a_heldout_run(pool_and_dev):
    from dataclasses import replace

    from export.training_set import devdoc_folds

    pool = load_labelled_pairs(pool_and_dev[0])
    pool[0] = replace(pool[0], source="devdoc-3:02-5:134")
    assert devdoc_folds(pool[0].source, 3) == {0, 2}
    assert devdoc_folds(pool[0].source, 5) == {1, 3, 4}
    assert devdoc_folds("corpus-a", 5) is None
    with pytest.raises(ValueError, match="3- and 5-fold"):
        devdoc_folds(pool[0].source, 4)
    assert all(not p.source.startswith("devdoc-") for p in select(pool, {**sweep.DEFAULTS}))


def test_sweep_heldout_and_cv_write_scored_results(monkeypatch, tiny_encoder, pool_and_dev, tmp_path):
    pool, dev = pool_and_dev
    configs = [
        {"name": "held", "epochs": 2, "batch_size": 4, "lr": 1e-3},
        {"name": "cv", "eval": "cv", "folds": 2, "epochs": 1, "batch_size": 4, "exclude": ["bias-"],
         "repeat": {"corpus-": 2}},
    ]  # fmt: skip
    run_sweep(monkeypatch, tiny_encoder, pool, dev, configs, tmp_path / "out")
    results = [json.loads(line) for line in (tmp_path / "out/results.jsonl").open()]
    assert [r["name"] for r in results] == ["held", "cv"]
    assert results[0]["n_train"] == 12 and results[1]["n_train"] == 12  # 6 corpus pairs x 2
    for r in results:
        assert r["dev"]["n"] == 12 and r["dev"]["regard_n"] == 9
        assert 0.0 <= r["dev"]["regard_macro_f1"] <= 1.0
    probs = np.load(tmp_path / "out/probs.npz")
    for name in ("held", "cv"):
        for head in ("wsd", "regard"):
            p = probs[f"{name}/{head}"]
            assert p.shape == (12, 3)
            # every dev row scored (cv fills each row from the fold that held it out)
            np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-5)


def test_training_is_seeded_and_reproducible(monkeypatch, tiny_encoder, pool_and_dev, tmp_path):
    pool, dev = pool_and_dev
    cfg = [{"name": "a", "epochs": 1, "batch_size": 4, "lr": 1e-3, "seed": 7}]
    run_sweep(monkeypatch, tiny_encoder, pool, dev, cfg, tmp_path / "one")
    run_sweep(monkeypatch, tiny_encoder, pool, dev, cfg, tmp_path / "two")
    run_sweep(monkeypatch, tiny_encoder, pool, dev, [{**cfg[0], "seed": 8}], tmp_path / "three")
    one, two, three = (np.load(tmp_path / d / "probs.npz")["a/regard"] for d in ("one", "two", "three"))
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, three)


def test_sweep_rejects_unknown_config_keys(monkeypatch, tiny_encoder, pool_and_dev, tmp_path):
    with pytest.raises(SystemExit, match=r"unknown keys \['epoch'\]; allowed .*'epochs'"):
        run_sweep(monkeypatch, tiny_encoder, *pool_and_dev, [{"name": "x", "epoch": 1}], tmp_path / "o")


def test_packed_encoder_round_trip_is_close(tiny_encoder, tmp_path):
    from safetensors.numpy import load_file

    spec = importlib.util.spec_from_file_location("pack_encoder", ROOT / "export/gpu/pack_encoder.py")
    assert spec and spec.loader
    pack_encoder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pack_encoder)
    pack_encoder.pack(tiny_encoder, tmp_path / "packed")
    packed = load_file(str(tmp_path / "packed/packed.safetensors"))
    assert packed["embeddings.word_embeddings.weight.q"].dtype == np.int8
    assert all(
        t.dtype in (np.int8, np.float16, np.float32, np.int64) for t in packed.values()
    )  # int64: shapes, ids
    pack_encoder.unpack(tmp_path / "packed", tmp_path / "unpacked")
    before = load_file(str(tiny_encoder / "model.safetensors"))
    after = load_file(str(tmp_path / "unpacked/model.safetensors"))
    assert before.keys() == after.keys()
    for name, t in before.items():
        err = np.abs(after[name] - t).max()
        scale = np.abs(t).max() + 1e-12
        assert err <= scale / 127, (name, err)  # int8 per row for embeddings, fp16 elsewhere
    assert (tmp_path / "unpacked/tokenizer.json").is_file()


def test_counterfactual_copies_swap_the_keyword_within_its_class(pool_and_dev):
    from export.training_set import counterfactual_pairs
    from fairstream.taxonomy import Taxonomy

    tax = Taxonomy.default()
    pairs = load_labelled_pairs(pool_and_dev[0])
    out = counterfactual_pairs(pairs, tax, copies=2, seed=0)

    def n_others(keyword: str) -> int:
        cls = tax[keyword].attribute_class
        return sum(a.attribute_class == cls and a.keyword != keyword and " " not in a.keyword for a in tax)

    person = [p for p in pairs if p.wsd == "yes"]
    assert len(out) == sum(min(2, n_others(p.mention.keyword)) for p in person) > len(person)
    for cf in out:
        orig = next(p for p in pairs if cf.uid.startswith(p.uid + "-cf"))
        m = cf.mention
        assert m.keyword != orig.mention.keyword
        assert (
            tax[m.keyword].attribute_class == tax[orig.mention.keyword].attribute_class == cf.attribute_class
        )
        assert m.text[m.start : m.end].lower() == m.keyword
        assert m.text[m.start : m.end][0].isupper() == orig.mention.text[orig.mention.start].isupper()
        assert m.text[: m.start] == orig.mention.text[: orig.mention.start]
        assert m.text[m.end :] == orig.mention.text[orig.mention.end :]
        assert (cf.wsd, cf.regard) == (orig.wsd, orig.regard) and cf.source == "cf-" + orig.source
    assert counterfactual_pairs(pairs, tax, copies=2, seed=0) == out  # seeded


def write_pool(path: Path, n: int) -> None:
    with path.open("w") as f:
        for i in range(n):
            kw, gloss = KEYWORDS[i % len(KEYWORDS)]
            text = f"Yesterday a {kw} neighbour fixed the fence for the whole street, number {i}."
            start = text.index(kw)
            rec = {"uid": f"pool{i}", "text": text, "keyword": kw, "gloss": gloss, "class": "x",
                   "kw_start": start, "kw_end": start + len(kw)}  # fmt: skip
            f.write(json.dumps(rec) + "\n")


def run_sweep_args(monkeypatch, encoder, pool, dev, configs, out, *extra: str) -> None:
    (out.parent / f"{out.name}-configs.json").write_text(json.dumps(configs))
    argv = ["sweep", "--encoder", str(encoder), "--pairs", str(pool), "--dev", str(dev),
            "--configs", str(out.parent / f"{out.name}-configs.json"), "--out", str(out), "--device", "cpu", *extra]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    sweep.main()


def test_folds_run_apart_then_merged_equal_the_sequential_cv(
    monkeypatch, tiny_encoder, pool_and_dev, tmp_path
):
    pool, dev = pool_and_dev
    cfg = [{"name": "cv", "eval": "cv", "folds": 2, "epochs": 1, "batch_size": 4, "lr": 1e-3}]
    run_sweep_args(monkeypatch, tiny_encoder, pool, dev, cfg, tmp_path / "seq")
    for k in (0, 1):  # as separate processes would, into one folder
        run_sweep_args(monkeypatch, tiny_encoder, pool, dev, cfg, tmp_path / "par", "--fold", str(k))
    run_sweep_args(monkeypatch, tiny_encoder, pool, dev, cfg, tmp_path / "par", "--merge")
    seq = [json.loads(x) for x in (tmp_path / "seq/results.jsonl").open()]
    par = [json.loads(x) for x in (tmp_path / "par/results.jsonl").open()]
    assert [r.get("fold") for r in par[:2]] == [0, 1] and par[2]["merged_folds"] == 2
    assert par[0]["dev"]["n"] + par[1]["dev"]["n"] == 12  # each fold scores only its own items
    assert par[2]["dev"] == seq[0]["dev"]  # same fits, same pooled metrics
    with np.load(tmp_path / "par/folds/cv-f0.npz") as f0, np.load(tmp_path / "seq/probs.npz") as s:
        np.testing.assert_allclose(f0["regard"], s["cv/regard"][f0["rows"]], rtol=1e-5)
        with np.load(tmp_path / "par/probs.npz") as merged:  # --merge writes the pooled probabilities too
            np.testing.assert_allclose(merged["cv/regard"], s["cv/regard"], rtol=1e-5)
    assert not list((tmp_path / "par").rglob("*.tmp"))  # npz files are written whole, then renamed
    # a partial merge pools only the named folds: fold 1 alone scores what fold 1's own run scored
    run_sweep_args(
        monkeypatch, tiny_encoder, pool, dev, cfg, tmp_path / "par", "--merge", "--merge-folds", "1"
    )
    partial = json.loads((tmp_path / "par/results.jsonl").read_text().splitlines()[-1])
    assert partial["merged_folds"] == [1] and partial["dev"] == par[1]["dev"]
    with pytest.raises(SystemExit):
        run_sweep_args(monkeypatch, tiny_encoder, pool, dev, cfg, tmp_path / "par", "--merge-folds", "1")
    with pytest.raises(SystemExit, match=r"--fold 2: config 'cv' has folds 0\.\.1"):
        run_sweep_args(monkeypatch, tiny_encoder, pool, dev, cfg, tmp_path / "bad", "--fold", "2")


def test_student_learns_from_its_folds_teacher_logits(monkeypatch, tiny_encoder, pool_and_dev, tmp_path):
    pool, dev = pool_and_dev
    write_pool(tmp_path / "u.pool.jsonl", 5)
    common = {"eval": "cv", "folds": 2, "epochs": 1, "batch_size": 4, "lr": 1e-3}
    teacher = [{"name": "t", **common, "save_logits": True}, {"name": "t", "eval": "full", "epochs": 1,
               "batch_size": 4, "save_logits": True}]  # fmt: skip
    out = tmp_path / "out"
    run_sweep_args(
        monkeypatch, tiny_encoder, pool, dev, teacher, out, "--pool", str(tmp_path / "u.pool.jsonl")
    )
    for tag in ("t-f0", "t-f1", "t-full"):
        with np.load(out / "logits" / f"{tag}.npz") as z:
            assert z["wsd"].shape == z["regard"].shape == (12 + 5, 3)  # every pair, then every pool mention
    with np.load(out / "logits/t-f0.npz") as a, np.load(out / "logits/t-f1.npz") as b:
        assert not np.allclose(a["regard"], b["regard"])  # two fits, on different dev folds
    student = [{"name": "s", **common, "distill_from": "t", "distill_pool": 3}]
    run_sweep_args(
        monkeypatch, tiny_encoder, pool, dev, student, out, "--pool", str(tmp_path / "u.pool.jsonl")
    )
    results = {
        r["name"] + str(r["config"]["eval"]): r for r in map(json.loads, (out / "results.jsonl").open())
    }
    assert results["scv"]["n_train"] == 12 + 3 and results["scv"]["dev"]["n"] == 12
    assert "dev" not in results["tfull"]  # trained on everything: nothing held out
    with np.load(out / "probs.npz") as z:  # the teacher's and the student's, both kept
        assert {"t/regard", "s/regard"} <= set(z.files)
    # the same student without the teacher's labels learns something else
    plain = [{"name": "p", **common}]
    run_sweep_args(monkeypatch, tiny_encoder, pool, dev, plain, tmp_path / "plain")
    with np.load(out / "probs.npz") as s, np.load(tmp_path / "plain/probs.npz") as p:
        assert not np.allclose(s["s/regard"], p["p/regard"])
    with pytest.raises(SystemExit, match=r"no teacher logits .*nobody-f0\.npz"):
        run_sweep_args(monkeypatch, tiny_encoder, pool, dev, [{**student[0], "distill_from": "nobody"}],
                       out, "--pool", str(tmp_path / "u.pool.jsonl"))  # fmt: skip
    with pytest.raises(SystemExit, match="distill_pool 9 > the 5 --pool mentions"):
        run_sweep_args(monkeypatch, tiny_encoder, pool, dev, [{**student[0], "distill_pool": 9}], out,
                       "--pool", str(tmp_path / "u.pool.jsonl"))  # fmt: skip


def test_packed_parts_with_pruned_vocabulary_unpack_from_several_folders(
    tiny_encoder, pool_and_dev, tmp_path
):
    from safetensors.numpy import load_file

    spec = importlib.util.spec_from_file_location("pack_encoder", ROOT / "export/gpu/pack_encoder.py")
    assert spec and spec.loader
    pack_encoder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pack_encoder)
    pool, dev = pool_and_dev
    parts = pack_encoder.pack(
        tiny_encoder, tmp_path / "packed", int8_all=True, keep_tokens_of=[pool, dev], part_mb=0.02
    )
    assert len(parts) >= 2  # split by size (a tensor is never cut)
    one, two = tmp_path / "a", tmp_path / "b"  # as two device calls would carry them
    one.mkdir()
    two.mkdir()
    for i, p in enumerate(parts):
        p.rename((one if i % 2 else two) / p.name)
    for f in (tmp_path / "packed").iterdir():
        f.rename(one / f.name)
    with pytest.raises(SystemExit, match="parts missing"):
        pack_encoder.unpack([one], tmp_path / "half")
    pack_encoder.unpack([one, two], tmp_path / "unpacked")
    before = load_file(str(tiny_encoder / "model.safetensors"))
    after = load_file(str(tmp_path / "unpacked/model.safetensors"))
    assert before.keys() == after.keys()
    emb = next(n for n in before if n.endswith("word_embeddings.weight"))
    used = np.abs(after[emb]).sum(1) > 0
    assert 0 < used.sum() < len(used)  # only the rows of tokens the texts use travel
    for name, t in before.items():
        rows = used if name == emb else slice(None)
        err = np.abs(after[name][rows] - t[rows])
        if t.ndim == 2:
            assert (err <= np.abs(t[rows]).max(axis=1, keepdims=True) / 254 + 1e-7).all(), (
                name
            )  # per-row int8
        else:
            assert err.max() <= np.abs(t).max() * 1e-3 + 1e-7, name  # fp16 vectors
    assert (after[emb][~used] == 0).all()


def test_committed_teacher_logits_align_by_key_and_unscored_rows_train_on_gold(pool_and_dev, tmp_path):
    from export.distill import pair_key
    from export.sweep import SweepContext, soft_labels_for

    spec = importlib.util.spec_from_file_location("train_cv", ROOT / "export/gpu/train_cv.py")
    assert spec and spec.loader
    train_cv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train_cv)
    pool, _ = pool_and_dev
    data = tmp_path / "data"
    data.mkdir()
    (data / "pairs.jsonl").write_text(pool.read_text())
    pairs = load_labelled_pairs(pool)
    scored = pairs[::2]  # the teacher saw every other pair, in another order
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, len(scored), 3)).astype(np.float16)
    np.savez_compressed(
        tmp_path / "t.npz",
        uid=np.array([p.uid for p in scored[::-1]], dtype="S"),
        text_sha1=np.array([pair_key(p) for p in scored[::-1]], dtype="S"),
        **{"teacher-cv5-s0/wsd": logits, "teacher-cv5-s0/regard": -logits},
    )
    names = train_cv.write_teacher_logits(tmp_path / "t.npz", data, [], tmp_path / "sweep/logits")
    assert names == ["teacher-cv5-s0"]
    ctx = SweepContext("enc", None, "cpu", pairs, [], tmp_path / "sweep")
    soft = soft_labels_for(pairs, ctx, "teacher-cv5-s0-f1")
    assert sorted(soft) == list(range(0, len(pairs), 2))  # unscored rows (NaN) are left to gold labels
    for j, p in enumerate(scored[::-1]):
        i = pairs.index(p)
        np.testing.assert_allclose(soft[i][0], logits[1, j].astype(np.float32))
        np.testing.assert_allclose(soft[i][1], -logits[1, j].astype(np.float32))


@pytest.mark.slow
def test_device_script_students_plan_runs_end_to_end_on_cpu(tiny_encoder, tmp_path):
    """``export/gpu/train_cv.py --plan students`` as the next device call runs it, with tiny fits on CPU."""
    import subprocess

    from export.distill import pair_key

    spec = importlib.util.spec_from_file_location("pack_encoder", ROOT / "export/gpu/pack_encoder.py")
    assert spec and spec.loader
    pack_encoder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pack_encoder)
    data = tmp_path / "data"
    data.mkdir()
    lines = []
    for prefix in ("a", "b", "c"):  # 36 dev items: every one of 5 folds holds some
        write_pairs(tmp_path / f"{prefix}.jsonl", prefix, ["web"])
        lines += (tmp_path / f"{prefix}.jsonl").read_text().splitlines()
    (data / "dev.jsonl").write_text("\n".join(lines) + "\n")
    write_pairs(data / "pairs.jsonl", "p", ["corpus-a", "r8-helper-01"])  # half of them "text labels"
    write_pool(data / "1-distill.pool.jsonl", 25)
    write_pool(data / "2-heldout.pool.jsonl", 4)  # last pool: scored by every student, trained on by none
    pack_encoder.pack(tiny_encoder, tmp_path / "minilm", int8_all=True)
    rows = load_labelled_pairs(data / "pairs.jsonl")
    rng = np.random.default_rng(1)
    logits = {
        f"teacher-cv5-s0/{head}": rng.normal(size=(5, len(rows), 3)).astype(np.float16)
        for head in ("wsd", "regard")
    }
    np.savez_compressed(
        tmp_path / "t.npz",
        uid=np.array([p.uid for p in rows], dtype="S"),
        text_sha1=np.array([pair_key(p) for p in rows], dtype="S"),
        **logits,
    )
    out = tmp_path / "out"
    out.mkdir()
    run = subprocess.run(
        [sys.executable, str(ROOT / "export/gpu/train_cv.py"), "--plan", "students", "--teacher-logits",
         str(tmp_path / "t.npz"), "--data", str(data), "--minilm", str(tmp_path / "minilm"), "--out", str(out),
         "--work", str(tmp_path / "work"), "--device", "cpu", "--smoke", "--seeds", "0", "--parallel", "2",
         "--deadline", "3000", "--kinds", "base", "distill-text"],
        capture_output=True, text=True, timeout=3300, cwd=ROOT,
    )  # fmt: skip
    # the deadline must not bind here (at 600 s a loaded machine once cut 2 of the 20 fits): this test is
    # about every planned fit running and merging, not about the deadline
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    jobs = json.loads((out / "jobs.json").read_text())
    # the two configs at the ends of the plan (each fit is a process of its own: all four took 129 s here)
    assert len(jobs) == 10 and all(j["rc"] == 0 for j in jobs)  # 2 configs x 5 folds
    merged = {r["name"]: r for r in map(json.loads, (out / "results.jsonl").open()) if r.get("merged_folds")}
    assert sorted(merged) == ["base-cv5-s0", "distill-text-cv5-s0"]
    assert all(r["dev"]["n"] == 36 for r in merged.values())
    per_fold = [r for r in map(json.loads, (out / "results.jsonl").open()) if r.get("fold") == 0]
    n_train = {r["name"]: r["n_train"] for r in per_fold}
    # text labels (source r8-helper-*) only in the -text configs; the distillation pool only in distill-*
    assert n_train["base-cv5-s0"] == 6 and n_train["distill-text-cv5-s0"] == 12 + 20
    assert "teacher logits ['teacher-cv5-s0']: 12 of 41 rows scored" in run.stdout
    import tarfile

    with tarfile.open(out / "logits.tar") as tar:
        names = tar.getnames()
        assert len(names) == 10 + 5  # each student fit's logits, and the teacher's 5 folds as read
        member = tar.extractfile("distill-text-cv5-s0-f3.npz")
        assert member is not None
        with np.load(member) as z:  # pairs, then the distillation pool, then the hold-out pool
            assert z["regard"].shape == (12 + 25 + 4, 3) and np.isfinite(z["regard"]).all()
