"""The Tagger's prediction cache: on by default, and decisions and exact resume do not depend on it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fairstream.cli import sample_corpus_path
from fairstream.models.runtime import JointModel
from fairstream.stream.dataset import FairStream
from fairstream.stream.tagger import DEFAULT_CACHE_SIZE, Tagger

BOILERPLATE = (
    "Our community welcomes Muslim, Christian and Jewish families alike, and every volunteer who "
    "helps at the weekly food bank is thanked at the end of the month."
)


def docs_with_boilerplate() -> list[dict[str, Any]]:
    """The sample corpus with a footer repeated every few documents, as web boilerplate is."""
    docs = [json.loads(line) for line in sample_corpus_path().open(encoding="utf-8")][:120]
    return [
        {**d, "text": d["text"] + ("\n\n" + BOILERPLATE if i % 5 == 0 else "")} for i, d in enumerate(docs)
    ]


@pytest.fixture(scope="module")
def shipped() -> JointModel:
    model = JointModel(intra_op_threads=1)
    assert model.batch_invariant  # what makes a cached decision equal a recomputed one
    return model


def stream(model: JointModel, docs: list[dict[str, Any]], **kw: Any) -> FairStream:
    kw.setdefault("cache_size", DEFAULT_CACHE_SIZE)
    return FairStream(docs, model=model, cap=0.05, warmup=10, lookahead=8, annotate=True, **kw)


def test_cache_is_on_by_default_and_answers_repeats_across_batches(shipped):
    tagger = Tagger(shipped)
    assert tagger.cache_size == DEFAULT_CACHE_SIZE > 0
    (first,) = tagger.tag_batch([BOILERPLATE])
    calls, predicted = tagger.model_calls, tagger.mentions_predicted
    (again,) = tagger.tag_batch(["Different text first. " + BOILERPLATE])
    assert tagger.model_calls == calls and tagger.mentions_predicted == predicted  # no model call
    assert tagger.cache_hits == len(first.sentences[0].predictions) == 3
    assert again.sentences[0].predictions == first.sentences[0].predictions


def test_cache_is_off_for_a_model_that_is_not_batch_invariant(tiny_model_dir):
    model = JointModel(tiny_model_dir, intra_op_threads=1)
    model.batch_invariant = False
    assert Tagger(model, cache_size=100).cache_size == 0


def test_cached_stream_equals_uncached_and_resumes_exactly(shipped):
    docs = docs_with_boilerplate()
    cached = stream(shipped, docs)
    full = list(cached)
    assert cached.stats()["counters"]["cache_hits"] > 10  # the footer recurs across windows
    assert full == list(stream(shipped, docs, cache_size=0))
    # resume at several midpoints with an empty cache each time: the same output
    for midpoints in ([3], [41, 42, 97]):
        out: list[Any] = []
        state = None
        prev = 0
        for stop in [*midpoints, None]:
            s = stream(shipped, docs)
            if state is not None:
                s.load_state_dict(json.loads(json.dumps(state)))
            for taken, item in enumerate(s, 1):
                out.append(item)
                if stop is not None and taken == stop - prev:
                    break
            state = s.state_dict()
            prev = stop or 0
        assert out == full, midpoints
