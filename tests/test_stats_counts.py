from __future__ import annotations

import json
import logging
import pickle
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairstream.errors import InvalidDocumentError
from fairstream.stats import BeforeAfterHook, CooccurrenceCounts
from fairstream.stats import words as words_mod

REL = "religion"


def exact(**kw) -> CooccurrenceCounts:
    return CooccurrenceCounts(prune_every=None, **kw)


# -- word filter -----------------------------------------------------------------------------------
def test_text_is_tokenized_lowercased_and_filtered():
    c = exact()
    n = c.add_sentence(
        "The Muslims were peaceful, and the community thrived in 1990!", [(REL, "muslim", "positive")]
    )
    # NLTK tokens; "the", "were", "and", "in" are NLTK stopwords; "," "!" punctuation; "1990" a number
    assert n == 4
    assert c.word_counts(REL, "muslim") == Counter(
        {"muslims": 1, "peaceful": 1, "community": 1, "thrived": 1}
    )
    assert c.config()["stopwords"] == "nltk:english"


def test_filter_options():
    toks = ["The", "Dogs", "don", "n't", "'s", "bark", "1990", "--", "a", "x1"]
    assert exact().filter_tokens(toks) == ["dogs", "bark", "x1"]
    assert exact(stopwords=None).filter_tokens(toks) == ["the", "dogs", "don", "n't", "'s", "bark", "a", "x1"]
    assert exact(stopwords=None, keep_numbers=True, drop_punctuation=False).filter_tokens(toks) == [
        "the",
        "dogs",
        "don",
        "n't",
        "'s",
        "bark",
        "1990",
        "--",
        "a",
        "x1",
    ]
    assert exact(lowercase=False, stopwords=["Bark"]).filter_tokens(toks) == ["The", "Dogs", "don", "a", "x1"]
    assert exact(min_token_length=4).filter_tokens(toks) == ["dogs", "bark"]


def test_missing_nltk_stopwords_fall_back_with_warning(monkeypatch, caplog):
    def missing(language):
        raise LookupError("no stopwords")

    monkeypatch.setattr(words_mod, "nltk_stopwords", missing)
    with caplog.at_level(logging.WARNING, logger="fairstream.stats.words"):
        c = exact()
    assert c.config()["stopwords"] == "builtin:english"
    assert "NLTK stopwords not found" in caplog.text
    assert c.filter_tokens(["the", "dogs", "were", "barking"]) == ["dogs", "barking"]
    # counts made with different stopword lists must not merge silently
    with pytest.raises(ValueError, match="stopwords"):
        _ = c + CooccurrenceCounts(prune_every=None, stopwords="nltk:english")


def test_bad_arguments_are_rejected_with_names():
    with pytest.raises(ValueError, match="min_token_length=0"):
        CooccurrenceCounts(min_token_length=0)
    with pytest.raises(ValueError, match="prune_every=0"):
        CooccurrenceCounts(prune_every=0)
    with pytest.raises(ValueError, match="klingon"):
        CooccurrenceCounts(stopwords="klingon")
    c = exact()
    with pytest.raises(ValueError, match="regard='angry'"):
        c.add_sentence(["word"], [(REL, "muslim", "angry")])
    with pytest.raises(ValueError, match="tuple"):
        c.add_sentence(["word"], [(REL, "muslim")])  # type: ignore[list-item]


# -- counting semantics --------------------------------------------------------------------------
def test_each_attribute_counts_once_per_sentence_under_its_most_negative_regard():
    c = exact(stopwords=None)
    c.add_sentence(
        ["alpha", "beta", "alpha"],
        [
            (REL, "muslim", "negative"),
            (REL, "muslim", "negative"),
            (REL, "jewish", None),
            (REL, "muslim", "positive"),
        ],
    )
    # one sentence toward muslim, negative (most negative wins, as in the cap controller and
    # stats.json), so the report's counts equal the stream's
    assert c.sentence_count(REL, "muslim") == 1
    assert c.sentence_count(REL, "muslim", "negative") == 1
    assert c.sentence_count(REL, "muslim", "positive") == 0
    assert c.regard_distribution(REL, "jewish") == {"positive": 0, "neutral": 0, "negative": 0, "unknown": 1}
    assert c.count(REL, "muslim", "alpha", "negative") == 2
    assert c.count(REL, "muslim", "alpha") == 2
    assert c.token_total(REL, "muslim", "positive") == 0
    assert c.totals["sentences_counted"] == 1 and c.totals["mentions"] == 4
    assert c.add_sentence(["alpha"], []) == 0  # no attribute: nothing counted
    assert c.totals["sentences_counted"] == 1


def _annotation(text: str) -> dict:
    # sentence 0 kept with a person mention (negative) and a non-person one; sentence 1 dropped
    s0 = text.index("Muslim")
    s1 = text.index("Jewish")
    return {
        "doc_index": 7,
        "id": "doc-7",
        "taxonomy": "taxonomy-v1",
        "model": "fairstream-joint-v1",
        "sentences": [
            {
                "start": 0,
                "end": text.index(".") + 1,
                "n_tokens": 8,
                "kept": True,
                "reason": "not-negative",
                "mentions": [
                    {
                        "start": s0,
                        "end": s0 + 6,
                        "surface": "Muslim",
                        "keyword": "muslim",
                        "class": REL,
                        "wsd_score": 0.9,
                        "person": True,
                        "regard": "neutral",
                    },
                    {
                        "start": 4,
                        "end": 9,
                        "surface": "Black",
                        "keyword": "black",
                        "class": "race/ethnicity",
                        "wsd_score": 0.1,
                        "person": False,
                        "regard": None,
                    },
                ],
            },
            {
                "start": text.index(".") + 2,
                "end": len(text),
                "n_tokens": 6,
                "kept": False,
                "reason": "cap-dropped",
                "mentions": [
                    {
                        "start": s1,
                        "end": s1 + 6,
                        "surface": "Jewish",
                        "keyword": "jewish",
                        "class": REL,
                        "wsd_score": 0.8,
                        "person": True,
                        "regard": "negative",
                    },
                ],
            },
        ],
    }


TEXT = "The Black Sea trip of the Muslim family was calm. Jewish neighbours complained loudly."


def test_consume_kept_and_all_and_person_only():
    ann = _annotation(TEXT)
    kept, before = exact(), exact()
    assert kept.consume(TEXT, ann, which="kept") == 1
    assert before.consume(TEXT, ann, which="all") == 2
    assert kept.attributes() == [(REL, "muslim")]  # the non-person "Black" is not counted
    assert before.attributes() == [(REL, "jewish"), (REL, "muslim")]
    assert before.word_counts(REL, "jewish", "negative") == Counter(
        {"jewish": 1, "neighbours": 1, "complained": 1, "loudly": 1}
    )
    assert kept.word_counts(REL, "muslim") == Counter(
        {"black": 1, "sea": 1, "trip": 1, "muslim": 1, "family": 1, "calm": 1}
    )
    assert before.totals["documents"] == 1 and before.totals["sentences_seen"] == 2
    assert kept.totals["sentences_seen"] == 1
    assert before.provenance == Counter({"taxonomy-v1/fairstream-joint-v1": 1})


def test_stream_hooks_count_before_and_after_and_pickle():
    before, after = exact(), exact()
    hooks = [before.hook("all"), after.hook("kept")]
    for h in hooks:
        h(TEXT, _annotation(TEXT))
    assert before.totals["sentences_counted"] == 2 and after.totals["sentences_counted"] == 1
    restored = pickle.loads(pickle.dumps(hooks[0]))
    assert restored.which == "all" and restored.counts == before
    with pytest.raises(ValueError, match="which='both'"):
        before.hook("both")  # type: ignore[arg-type]


def test_before_after_hook_tokenizes_once_and_equals_two_hooks(monkeypatch):
    before, after = exact(), exact()
    hook = BeforeAfterHook(before, after)
    calls = []
    real = before.tokenize
    monkeypatch.setattr(before, "tokenize", lambda text: calls.append(text) or real(text))
    hook(TEXT, _annotation(TEXT))
    assert len(calls) == 2  # two sentences, each tokenized once for both counts
    b2, a2 = exact(), exact()
    b2.hook("all")(TEXT, _annotation(TEXT))
    a2.hook("kept")(TEXT, _annotation(TEXT))
    assert (before, after) == (b2, a2)
    with pytest.raises(ValueError, match="different word filters"):
        BeforeAfterHook(exact(), exact(stopwords=None))


def test_tokens_carried_by_the_annotation_are_used():
    ann = _annotation(TEXT)
    ann["sentences"][0]["tokens"] = ["The", "Given", "tokens", "."]
    c = exact()
    c.consume(TEXT, ann)
    assert c.word_counts(REL, "muslim") == Counter({"given": 1, "tokens": 1})


def test_consume_rejects_bad_input():
    c = exact()
    with pytest.raises(ValueError, match="which='some'"):
        c.consume(TEXT, _annotation(TEXT), which="some")  # type: ignore[arg-type]
    ann = _annotation(TEXT)
    ann["sentences"][0]["end"] = 10_000
    with pytest.raises(InvalidDocumentError, match=r"document 7 .*sentence 0"):
        c.consume(TEXT, ann)
    with pytest.raises(InvalidDocumentError, match="'sentences' must be a list"):
        c.consume(TEXT, {"doc_index": 1, "sentences": None})
    ann = _annotation(TEXT)
    del ann["sentences"][0]["mentions"][0]["keyword"]
    with pytest.raises(InvalidDocumentError, match="sentence 0 has a malformed mention"):
        c.consume(TEXT, ann)
    ann = _annotation(TEXT)
    ann["sentences"][0]["mentions"][0]["regard"] = "hostile"
    with pytest.raises(InvalidDocumentError, match="regard='hostile'"):
        c.consume(TEXT, ann)


# -- values: merge, serialization ------------------------------------------------------------------
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
ATTRS = [(REL, "muslim"), (REL, "jewish"), ("race/ethnicity", "black"), ("residence", "rural")]
REGARD_VALUES = ["positive", "neutral", "negative", None]

sentence_st = st.tuples(
    st.lists(st.sampled_from(WORDS), max_size=8),
    st.lists(st.tuples(st.sampled_from(ATTRS), st.sampled_from(REGARD_VALUES)), max_size=3),
)
stream_st = st.lists(sentence_st, max_size=40)


def count_all(sentences, **kw) -> CooccurrenceCounts:
    c = CooccurrenceCounts(stopwords=None, **kw)
    for tokens, attrs in sentences:
        c.add_sentence(tokens, [(cls, kw_, r) for (cls, kw_), r in attrs])
    return c


@settings(max_examples=60, deadline=None)
@given(stream_st, st.integers(min_value=0, max_value=40), st.integers(min_value=0, max_value=40))
def test_merging_equals_counting_in_one_go(sentences, i, j):
    i, j = sorted((min(i, len(sentences)), min(j, len(sentences))))
    parts = [sentences[:i], sentences[i:j], sentences[j:]]
    one_go = count_all(sentences, prune_every=None)
    a, b, c = (count_all(p, prune_every=None) for p in parts)
    assert a + b + c == one_go
    assert c + (b + a) == one_go  # order does not matter
    assert sum([a, b, c]) == one_go
    acc = count_all([], prune_every=None)
    for part in (a, b, c):
        acc += part
    assert acc == one_go
    assert a == count_all(parts[0], prune_every=None)  # + does not change its operands


@settings(max_examples=40, deadline=None)
@given(stream_st, st.sampled_from([None, 1, 3]))
def test_serialization_round_trips(sentences, prune_every):
    c = count_all(sentences, prune_every=prune_every)
    assert CooccurrenceCounts.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    assert pickle.loads(pickle.dumps(c)) == c
    assert c.copy() == c


def test_save_load_atomic_json_and_gzip(tmp_path: Path):
    c = count_all(
        [(["alpha", "beta"], [(ATTRS[0], "negative")]), (["beta"], [(ATTRS[1], None)])], prune_every=None
    )
    for name in ("counts.json", "counts.json.gz"):
        path = c.save(tmp_path / "sub" / name)
        assert CooccurrenceCounts.load(path) == c
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == [
        "counts.json",
        "counts.json.gz",
    ]  # no temp files
    assert (
        json.loads((tmp_path / "sub" / "counts.json").read_text())["format"] == "fairstream-cooccurrence-v1"
    )
    (tmp_path / "bad.json").write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="expected 'fairstream-cooccurrence-v1'"):
        CooccurrenceCounts.load(tmp_path / "bad.json")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        CooccurrenceCounts.load(tmp_path / "broken.json")


def test_custom_stopwords_round_trip_and_block_merges_with_other_lists():
    c = CooccurrenceCounts(prune_every=None, stopwords=["Beta"])
    c.add_sentence(["alpha", "beta"], [(REL, "muslim", "neutral")])
    back = CooccurrenceCounts.from_dict(c.to_dict())
    assert back == c and back.filter_tokens(["beta", "gamma"]) == ["gamma"]
    other = CooccurrenceCounts(prune_every=None, stopwords=["gamma"])
    with pytest.raises(ValueError, match="different word filters"):
        _ = c + other


# -- pruning (lossy counting) ----------------------------------------------------------------------
def _assert_within_bound(approx: CooccurrenceCounts, truth: CooccurrenceCounts) -> None:
    e = approx.error_bound
    keys = truth.keys()
    assert keys == approx.keys()
    for cls, kw, regard in keys:
        # exact quantities are never pruned
        assert approx.sentence_count(cls, kw, regard) == truth.sentence_count(cls, kw, regard)
        assert approx.token_total(cls, kw, regard) == truth.token_total(cls, kw, regard)
        true_words = truth.word_counts(cls, kw, regard)
        got = approx.word_counts(cls, kw, regard)
        for w in set(true_words) | set(got):
            assert true_words[w] - e <= got[w] <= true_words[w], (cls, kw, regard, w)
            lo, hi = approx.count_bounds(cls, kw, w, regard)
            assert lo <= true_words[w] <= hi <= got[w] + e


zipf_words = st.lists(
    st.integers(min_value=0, max_value=60).map(lambda i: f"w{i % 7 if i < 40 else i}x"), max_size=10
)
zipf_stream = st.lists(
    st.tuples(
        zipf_words,
        st.lists(
            st.tuples(st.sampled_from(ATTRS[:2]), st.sampled_from(REGARD_VALUES)), min_size=1, max_size=2
        ),
    ),
    max_size=60,
)


@settings(max_examples=80, deadline=None)
@given(zipf_stream, st.integers(min_value=1, max_value=6))
def test_pruning_never_undercounts_by_more_than_the_bound(sentences, prune_every):
    truth = count_all(sentences, prune_every=None)
    approx = count_all(sentences, prune_every=prune_every)
    assert approx.error_bound == approx.n_prunes == len(sentences) // prune_every
    _assert_within_bound(approx, truth)


@settings(max_examples=60, deadline=None)
@given(zipf_stream, zipf_stream, zipf_stream, st.integers(min_value=1, max_value=5))
def test_bound_holds_after_merging_pruned_counts_and_counting_on(s1, s2, s3, prune_every):
    a = count_all(s1, prune_every=prune_every)
    b = count_all(s2, prune_every=prune_every)
    merged = a + b
    assert merged.error_bound == a.error_bound + b.error_bound
    _assert_within_bound(merged, count_all(s1 + s2, prune_every=None))
    for tokens, attrs in s3:  # keep streaming into the merged counts
        merged.add_sentence(tokens, [(cls, kw, r) for (cls, kw), r in attrs])
    _assert_within_bound(merged, count_all(s1 + s2 + s3, prune_every=None))
    assert CooccurrenceCounts.from_dict(merged.to_dict()) == merged


def test_memory_stays_bounded_on_a_long_stream_of_new_words():
    c = CooccurrenceCounts(stopwords=None, prune_every=50)
    exact_c = exact(stopwords=None)
    frequent = ["common", "usual", "typical"]
    for i in range(5_000):
        tokens = [*frequent, f"rare{i}a", f"rare{i}b", f"rare{i}c"]
        c.add_sentence(tokens, [(REL, "muslim", "neutral")])
        exact_c.add_sentence(tokens, [(REL, "muslim", "neutral")])
        assert c.n_entries <= 3 + 3 * 50  # frequent words + one bucket of new words
    assert exact_c.n_entries == 3 + 3 * 5_000
    report = c.memory_report()
    assert report["error_bound"] == 100 and report["n_prunes"] == 100
    for w in frequent:  # frequent words are kept exactly here (never deleted)
        assert c.count(REL, "muslim", w) == 5_000
    _assert_within_bound(c, exact_c)


def test_repr_and_queries():
    c = count_all([(["alpha"], [(ATTRS[0], "negative"), (ATTRS[2], "positive")])], prune_every=None)
    assert c.classes() == ["race/ethnicity", REL]
    assert c.attributes(REL) == [(REL, "muslim")]
    assert "error_bound=0" in repr(c)
    with pytest.raises(ValueError, match="regard='bad'"):
        c.sentence_count(REL, "muslim", "bad")
