"""A source that saves its own position is resumed from it (nested state, as torchdata does), exactly."""

from __future__ import annotations

import json

import pytest

from fairstream.stream.dataset import FairStream
from fairstream.stream.source_state import resume_kind
from tests.test_stream import sample_docs

DOCS = sample_docs()[:120]  # real sample-corpus text; 4 shards of 30 below


def stream_of(model, source) -> FairStream:
    return FairStream(source, model=model, cap=0.05, warmup=5, lookahead=8)


def hf_source(reads: list[int]):
    datasets = pytest.importorskip("datasets")

    def gen(shards):
        for s in shards:
            for doc in DOCS[s * 30 : (s + 1) * 30]:
                reads.append(1)
                yield doc

    return datasets.IterableDataset.from_generator(gen, gen_kwargs={"shards": [0, 1, 2, 3]})


@pytest.mark.parametrize("stop", [1, 64, 75])
def test_a_hugging_face_iterable_resumes_from_its_own_state_without_rereading_finished_shards(
    tiny_model, stop
):
    full_reads: list[int] = []
    full = [d["id"] for d in stream_of(tiny_model, hf_source(full_reads))]
    assert len(full_reads) == len(DOCS) and full  # documents in: all 120, each once

    stream = stream_of(tiny_model, hf_source([]))
    head = []
    for out in stream:
        head.append(out["id"])
        if len(head) == stop:
            break
    state = json.loads(json.dumps(stream.state_dict()))  # plain JSON, as a checkpoint holds it
    assert state["source"]["index"] <= state["next_index"]

    reads: list[int] = []
    resumed = stream_of(tiny_model, hf_source(reads))
    resumed.load_state_dict(state)
    assert head + [d["id"] for d in resumed] == full
    # the dataset skipped the shards before the window it resumed in; islice would read them all
    assert len(reads) == len(DOCS) - (state["source"]["index"] // 30) * 30
    assert resumed.stats()["counters"]["docs_in"] == len(DOCS)


def test_a_torchdata_node_resumes_from_its_state_and_restarts_on_a_new_pass(tiny_model):
    nodes = pytest.importorskip("torchdata.nodes")
    full = [d["id"] for d in stream_of(tiny_model, nodes.IterableWrapper(DOCS))]
    node = nodes.IterableWrapper(DOCS)
    assert resume_kind(node) == "node"
    stream = stream_of(tiny_model, node)
    it = iter(stream)
    head = [next(it)["id"] for _ in range(50)]
    state = json.loads(json.dumps(stream.state_dict()))
    assert "source" in state
    resumed = stream_of(tiny_model, nodes.IterableWrapper(DOCS))
    resumed.load_state_dict(state)
    assert head + [d["id"] for d in resumed] == full
    # a second pass over the same stream starts the node again from its first document
    assert [d["id"] for d in stream_of(tiny_model, node)] == full


def test_plain_iterables_have_no_source_state_and_still_resume_by_rereading(tiny_model):
    assert resume_kind(iter(DOCS)) is None and resume_kind(DOCS) is None
    full = [d["id"] for d in stream_of(tiny_model, (d for d in DOCS))]
    stream = stream_of(tiny_model, (d for d in DOCS))
    it = iter(stream)
    head = [next(it)["id"] for _ in range(30)]
    state = stream.state_dict()
    assert "source" not in state
    resumed = stream_of(tiny_model, (d for d in DOCS))
    resumed.load_state_dict(state)
    assert head + [d["id"] for d in resumed] == full
