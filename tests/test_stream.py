from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from torch.utils.data import DataLoader

from fairstream.cli import sample_corpus_path
from fairstream.core.stats import StreamStats
from fairstream.errors import InvalidDocumentError
from fairstream.stream.dataset import FairStream, remove_spans


def sample_docs(repeat: int = 1) -> list[dict[str, Any]]:
    docs = [json.loads(line) for line in sample_corpus_path().open(encoding="utf-8")]
    out = []
    for r in range(repeat):
        out += [{**d, "id": f"{d['id']}-{r}"} for d in docs]
    return out


def make(model, source, **kw) -> FairStream:
    kw.setdefault("cap", 0.05)
    kw.setdefault("warmup", 20)
    kw.setdefault("lookahead", 16)
    return FairStream(source, model=model, **kw)


def test_order_preserved_and_kept_text_byte_identical(tiny_model):
    docs = sample_docs()
    stream = make(tiny_model, docs, annotate=True)
    out = list(stream)
    by_id = {d["id"]: d for d in docs}
    ids = [o["id"] for o in out]
    assert ids == [d["id"] for d in docs if d["id"] in set(ids)]  # input order
    n_dropped = 0
    for o in out:
        original = by_id[o["id"]]["text"]
        ann = o["fairstream"]
        assert ann["taxonomy"] == "taxonomy-v1" and ann["model"] == "tiny-test-model"
        dropped = [(s["start"], s["end"]) for s in ann["sentences"] if not s["kept"]]
        n_dropped += len(dropped)
        assert o["text"] == remove_spans(original, dropped)
        for s in ann["sentences"]:
            if s["kept"]:
                assert original[s["start"] : s["end"]] in o["text"]
    assert n_dropped > 0  # the tiny model makes the cap act
    stats = stream.stats()
    assert stats["counters"]["docs_in"] == len(docs)
    assert stats["counters"]["docs_out"] == len(out)


def test_remove_spans_keeps_whitespace_between_kept_sentences():
    text = "One.  Two!\n\nThree?  Four."
    assert remove_spans(text, [(6, 10)]) == "One.  Three?  Four."
    assert remove_spans(text, [(20, 25)]) == "One.  Two!\n\nThree?"
    assert remove_spans(text, [(0, 4)]) == "Two!\n\nThree?  Four."


def test_cap_holds_on_a_long_stream(tiny_model):
    stream = make(tiny_model, sample_docs(repeat=8), cap=0.05, warmup=20)
    list(stream)
    st = stream.stats()
    checked = 0
    for kw, a in st["attributes"].items():
        total = sum(a["after"].values())
        assert (
            a["after"]["negative"] + a["dropped"] >= a["before"]["negative"] - 0
        )  # nothing lost from the books
        if total >= 20:
            checked += 1
            assert a["after"]["negative"] <= 0.05 * total + 1e-9, kw
        # the controller's own tallies agree with the stats
        kept = stream.controller.kept.get(kw)
        if kept:
            assert kept == a["after"]
    assert checked >= 3
    assert any(
        a["before"]["negative"] / max(1, sum(a["before"].values())) > 0.05 for a in st["attributes"].values()
    )


def test_cap_one_tags_and_counts_without_dropping(tiny_model):
    docs = sample_docs()
    stream = make(tiny_model, docs, cap=1.0)
    out = list(stream)
    assert [o["text"] for o in out] == [d["text"] for d in docs if d["text"].strip()]
    assert stream.stats()["counters"].get("sentences_dropped", 0) == 0
    assert sum(a["before"]["negative"] for a in stream.stats()["attributes"].values()) > 0


def test_document_granularity_drops_whole_documents(tiny_model):
    docs = sample_docs()
    stream = make(tiny_model, docs, granularity="document", annotate=True)
    out = list(stream)
    by_id = {d["id"]: d["text"] for d in docs}
    assert all(o["text"] == by_id[o["id"]] for o in out)
    st = stream.stats()
    assert st["counters"]["docs_dropped"] == len(docs) - len(out) > 0
    # sentences of dropped documents count as dropped, so the stats match the controller's tallies
    for kw, a in st["attributes"].items():
        assert stream.controller.kept.get(kw, {"negative": 0, "neutral": 0, "positive": 0}) == a["after"], kw
        assert sum(a["after"].values()) + a["dropped"] == a["person_sentences"], kw


def run_with_resume(model, docs, midpoints: list[int], **kw) -> list[Any]:
    """Iterate, saving state at each midpoint and continuing in a fresh stream from JSON state."""
    out: list[Any] = []
    state = None
    bounds = [*midpoints, None]
    prev = 0
    for stop in bounds:
        stream = make(model, docs, **kw)
        if state is not None:
            stream.load_state_dict(json.loads(json.dumps(state)))
        n = None if stop is None else stop - prev
        for taken, item in enumerate(stream, 1):
            out.append(item)
            if n is not None and taken == n:
                break
        state = stream.state_dict()
        prev = stop or 0
    return out


@pytest.mark.parametrize("midpoints", [[1], [37], [100, 101, 180], [15, 16, 17]])
def test_exact_resume(tiny_model, midpoints):
    docs = sample_docs()
    full = list(make(tiny_model, docs, annotate=True))
    assert run_with_resume(tiny_model, docs, midpoints, annotate=True) == full
    # the same from a generator source (re-read and skipped on resume)
    gen_full = list(make(tiny_model, (d for d in docs)))
    stream = make(tiny_model, (d for d in docs))
    it = iter(stream)
    head = [next(it) for _ in range(midpoints[0])]
    state = stream.state_dict()
    fresh = make(tiny_model, (d for d in docs))
    fresh.load_state_dict(state)
    assert head + list(fresh) == gen_full


def test_resume_restores_stats(tiny_model):
    docs = sample_docs()
    full = make(tiny_model, docs)
    list(full)
    stream = make(tiny_model, docs)
    it = iter(stream)
    for _ in range(50):
        next(it)
    resumed = make(tiny_model, docs)
    resumed.load_state_dict(stream.state_dict())
    list(resumed)
    a, b = full.stats(), resumed.stats()
    assert a["attributes"] == b["attributes"] and a["skipped"] == b["skipped"]
    for key in ("docs_in", "docs_out", "sentences_dropped", "sentences_candidate"):
        assert a["counters"][key] == b["counters"][key]


@pytest.mark.parametrize("num_workers", [0, 1, 2, 4])
def test_dataloader_workers_shard_without_duplicates(tiny_model, num_workers):
    docs = sample_docs()
    expected = Counter(d["id"] for d in docs if d["text"].strip())
    loader = DataLoader(make(tiny_model, docs, cap=1.0), batch_size=None, num_workers=num_workers)
    got = Counter(o["id"] for o in loader)
    assert got == expected
    # with a cap each worker filters its own part: still no duplicates, nothing invented
    capped = Counter(
        o["id"] for o in DataLoader(make(tiny_model, docs), batch_size=None, num_workers=num_workers)
    )
    assert max(capped.values()) == 1 and set(capped) <= set(expected)


def test_simulated_ranks_partition_the_stream(tiny_model):
    docs = sample_docs()
    parts = [[o["id"] for o in make(tiny_model, docs, cap=1.0, rank=r, world_size=3)] for r in range(3)]
    assert sorted(i for p in parts for i in p) == sorted(d["id"] for d in docs if d["text"].strip())
    assert all(len(set(p)) == len(p) for p in parts)
    with pytest.raises(ValueError, match="rank=3 must be in"):
        make(tiny_model, docs, rank=3, world_size=3)


def test_simulated_process_group_rank_is_recorded_when_the_stream_is_made(tiny_model, monkeypatch):
    """A DataLoader worker started by "spawn" has no process group: the rank must come from the rank's process."""
    import torch.distributed as dist

    docs = sample_docs()
    with monkeypatch.context() as m:  # the process group as the rank's own process sees it (rank 1 of 2)
        m.setattr(dist, "is_available", lambda: True)
        m.setattr(dist, "is_initialized", lambda: True)
        m.setattr(dist, "get_rank", lambda: 1)
        m.setattr(dist, "get_world_size", lambda: 2)
        stream = make(tiny_model, docs, cap=1.0)
    assert not dist.is_initialized()  # now iterated where no process group exists, as in a spawned worker
    got = [o["id"] for o in stream]
    assert got == [d["id"] for d in docs[1::2] if d["text"].strip()]


def test_stateful_dataloader_resume(tiny_model):
    tdl = pytest.importorskip("torchdata.stateful_dataloader")
    docs = sample_docs()
    for workers in (0, 2):
        full = [
            o["id"]
            for o in tdl.StatefulDataLoader(make(tiny_model, docs), batch_size=None, num_workers=workers)
        ]
        loader = tdl.StatefulDataLoader(make(tiny_model, docs), batch_size=None, num_workers=workers)
        head = []
        for i, o in enumerate(loader):
            head.append(o["id"])
            if i == 60:
                break
        state = loader.state_dict()
        resumed = tdl.StatefulDataLoader(make(tiny_model, docs), batch_size=None, num_workers=workers)
        resumed.load_state_dict(state)
        assert head + [o["id"] for o in resumed] == full, workers
        # the workers' stats, summed from the loader state, count every document exactly once
        from fairstream.core.stats import stats_from_loader_state

        assert stats_from_loader_state(resumed.state_dict()).counters["docs_in"] == len(docs), workers


def test_hf_datasets_streaming_source(tiny_model, shared_dir: Path, tmp_path: Path):
    datasets = pytest.importorskip("datasets")
    src = shared_dir / "data/corpus/dolma-datajuicer-fixtures.jsonl.gz"
    ds = datasets.load_dataset("json", data_files=str(src), split="train", streaming=True)
    stream = make(tiny_model, ds, annotate=True)
    out = list(stream)
    with gzip.open(src, "rt") as f:
        n = sum(1 for _ in f)
    assert stream.stats()["counters"]["docs_in"] == n
    assert len(out) <= n and all("fairstream" in o for o in out)
    # map-style Dataset too, indexed directly
    mds = datasets.load_dataset("json", data_files=str(src), split="train", cache_dir=str(tmp_path))
    assert [o["id"] for o in make(tiny_model, mds, cap=1.0)] == [
        o["id"] for o in make(tiny_model, ds, cap=1.0)
    ]


def write_id_files(folder: Path, n_files: int, n_docs: int = 60) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    text = "Many Mexican families opened bakeries in the valley and sold bread to the neighbours there."
    files = []
    for f in range(n_files):
        path = folder / f"part-{f}.jsonl"
        path.write_text("".join(json.dumps({"id": f"{f}-{i}", "text": text}) + "\n" for i in range(n_docs)))
        files.append(str(path))
    return files


@pytest.mark.parametrize("n_files", [1, 3])
@pytest.mark.parametrize("num_workers", [1, 2, 4])
def test_hf_streaming_source_under_workers_every_document_once(tiny_model, tmp_path, n_files, num_workers):
    """The README recipe: a datasets IterableDataset splits itself between workers; it is not split twice."""
    datasets = pytest.importorskip("datasets")
    files = write_id_files(tmp_path, n_files)
    ids_in = Counter(json.loads(line)["id"] for f in files for line in Path(f).read_text().splitlines())
    ds = datasets.load_dataset("json", data_files=files, split="train", streaming=True)
    loader = DataLoader(make(tiny_model, ds, cap=1.0, lookahead=8), batch_size=None, num_workers=num_workers)
    assert Counter(o["id"] for o in loader) == ids_in
    # torchdata nodes around it are seen through
    nodes = pytest.importorskip("torchdata.nodes")
    wrapped = nodes.IterableWrapper(ds)
    loader = DataLoader(
        make(tiny_model, wrapped, cap=1.0, lookahead=8), batch_size=None, num_workers=num_workers
    )
    assert Counter(o["id"] for o in loader) == ids_in


def test_hf_source_split_by_node_is_not_split_by_rank_again(tiny_model, tmp_path):
    datasets = pytest.importorskip("datasets")
    from datasets.distributed import split_dataset_by_node

    files = write_id_files(tmp_path, 2, n_docs=20)
    ds = datasets.load_dataset("json", data_files=files, split="train", streaming=True)
    parts = [
        [
            o["id"]
            for o in make(
                tiny_model, split_dataset_by_node(ds, rank=r, world_size=2), cap=1.0, rank=r, world_size=2
            )
        ]
        for r in range(2)
    ]
    assert sorted(parts[0] + parts[1]) == sorted(f"{f}-{i}" for f in range(2) for i in range(20))


def test_dict_or_string_source_is_refused(tiny_model):
    with pytest.raises(TypeError, match=r"source is a dict, not an iterable of documents.*\[doc\]"):
        make(tiny_model, {"id": "a", "text": "some text"})
    with pytest.raises(TypeError, match="source is a str"):
        make(tiny_model, "some text")


@pytest.mark.parametrize("bad_at", [0, 5, 15, 16, 17])
def test_raise_yields_every_document_before_the_bad_one(tiny_model, bad_at):
    docs = [
        {"id": str(i), "text": f"Document {i} talks about the weather and nothing else."} for i in range(30)
    ]
    docs[bad_at] = {"id": "bad", "text": None}
    stream = make(tiny_model, docs, cap=1.0, lookahead=16)
    got = []
    with pytest.raises(InvalidDocumentError, match=rf"document {bad_at} \(id='bad'\)"):
        for o in stream:
            got.append(o["id"])
    assert got == [str(i) for i in range(bad_at)]
    # the state points at the bad document: nothing after it was counted as read
    assert stream.state_dict()["next_index"] == bad_at
    assert stream.stats()["counters"].get("docs_in", 0) == bad_at


def test_source_error_mid_window_yields_what_came_before(tiny_model):
    from fairstream.errors import ShardError

    def source():
        for i in range(10):
            yield {"id": str(i), "text": f"Document {i} is about the weather and nothing else at all."}
        raise ShardError("x.jsonl.gz: corrupt or truncated after line 10")

    got = []
    with pytest.raises(ShardError, match="truncated"):
        for o in make(tiny_model, source(), cap=1.0, lookahead=16):
            got.append(o["id"])
    assert got == [str(i) for i in range(10)]


def test_bad_input_raises_with_index_and_id_or_is_counted(tiny_model):
    good = "A plain sentence about weather without any protected words in it at all, really none."
    docs = [
        {"id": "a", "text": good},
        {"id": "b", "text": None},
        {"id": "c", "body": good},
        {"id": "d", "text": b"\xff\xfe bad bytes"},
        {"id": "e", "text": 12},
        {"id": "f", "text": ""},
        {"id": "g", "text": good.encode()},
        {"id": "h", "text": "x" * 150},
    ]
    with pytest.raises(InvalidDocumentError, match=r"document 1 \(id='b'\) field 'text': text is None"):
        list(make(tiny_model, docs))
    stream = make(tiny_model, docs, on_error="skip", max_doc_chars=100)
    out = list(stream)
    assert [o["id"] for o in out] == ["a", "f", "g"]  # empty documents pass through, counted
    assert out[2]["text"] == good
    st = stream.stats()
    assert st["skipped"] == {
        "none": 1,
        "missing-field": 1,
        "invalid-utf8": 1,
        "not-a-string": 1,
        "too-large": 1,
    }
    assert st["counters"]["docs_in"] == 8 and st["counters"]["docs_empty"] == 1
    with pytest.raises(ValueError, match="granularity='word' is not one of"):
        make(tiny_model, docs, granularity="word")
    with pytest.raises(ValueError, match="on_error='ignore' is not one of"):
        make(tiny_model, docs, on_error="ignore")


def test_strings_in_strings_out_and_hooks(tiny_model):
    texts = [d["text"] for d in sample_docs()[:40]]
    seen: list[tuple[str, dict]] = []
    stream = make(tiny_model, texts, cap=1.0, hooks=[lambda t, a: seen.append((t, a))])
    out = list(stream)
    assert out == [t for t in texts if t.strip()]
    assert len(seen) == len(texts) and all("sentences" in a for _, a in seen)


def test_stats_merge():
    a = StreamStats()
    a.counters["docs_in"] += 2
    a.attr("muslim")["before"]["negative"] += 1
    b = StreamStats.from_dict(json.loads(json.dumps(a.to_dict())))
    c = a + b
    assert c.counters["docs_in"] == 4 and c.attributes["muslim"]["before"]["negative"] == 2


def test_hf_map_and_filter(tiny_model):
    datasets = pytest.importorskip("datasets")
    docs = sample_docs()
    ds = datasets.Dataset.from_list(docs)
    from fairstream.adapters.hf import fairstream_map_fn

    mapper = fairstream_map_fn(model=tiny_model, cap=0.05, warmup=20, lookahead=16)
    # batches that are multiples of the look-ahead window batch model calls exactly like the stream
    mapped = ds.map(mapper, batched=True, batch_size=48)
    assert len(mapped) == len(docs) and mapped["id"] == [d["id"] for d in docs]
    kept = mapped.filter(lambda b: b["fairstream_keep"], batched=True)
    # the same decisions as the streaming wrapper over the same documents in the same order
    streamed = list(make(tiny_model, docs, lookahead=16))
    assert [r["text"] for r in kept] == [o["text"] for o in streamed]
    assert mapper.stats()["counters"]["docs_in"] == len(docs)


def test_hf_iterable_dataset_map(tiny_model):
    datasets = pytest.importorskip("datasets")
    from fairstream.adapters.hf import fairstream_map_fn

    docs = sample_docs()
    ids = datasets.Dataset.from_list(docs).to_iterable_dataset(num_shards=1)
    mapped = ids.map(fairstream_map_fn(model=tiny_model, cap=1.0, lookahead=16), batched=True, batch_size=32)
    rows = list(mapped)
    assert [r["id"] for r in rows] == [d["id"] for d in docs]
    assert all(r["fairstream_keep"] for r in rows) and [r["text"] for r in rows] == [d["text"] for d in docs]


def test_stats_dir_counts_every_document_a_worker_read_after_its_last_kept_one(tmp_path):
    """torchdata snapshots a worker's state only with the items it yields: documents it drops after its
    last kept one are missing from ``loader.state_dict()`` at the end of an epoch. ``stats_dir=`` has each
    worker write its counts when its pass ends, so the merged parts count every document in."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    from fairstream.core.config import FilterConfig
    from fairstream.io.stats_parts import merge_stats_parts
    from fairstream.stream import stats_from_loader_state

    negative = (
        "In the town square yesterday afternoon the Muslim men were violent thugs who attacked everyone "
        "they could find and then robbed the shops."
    )
    docs = [{"id": f"d{i}", "text": "The weather was fine today and we walked." if i < 4 else negative}
            for i in range(10)]  # fmt: skip
    config = FilterConfig(cap=0.0, warmup=0, granularity="document")
    loader = StatefulDataLoader(FairStream(docs, config, stats_dir=tmp_path), batch_size=None, num_workers=2)
    kept = list(loader)
    assert len(kept) == 4
    merged = merge_stats_parts(tmp_path)
    c = merged["counters"]
    assert (c["docs_in"], c["docs_out"], c["docs_dropped"]) == (10, 4, 6)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "rank-00000-worker-000.stats.json",
        "rank-00000-worker-001.stats.json",
    ]
    # the loader's own state has only what came with yielded items (why stats_dir exists)
    assert stats_from_loader_state(loader.state_dict()).counters["docs_in"] == 4
