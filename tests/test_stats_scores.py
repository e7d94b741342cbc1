"""Eq. 1 and eq. 2 against values computed by hand on a tiny corpus.

The corpus (class "religion", tokens given directly, no stopwords):

    muslim     positive  peaceful community
    muslim     negative  violent community
    muslim     negative  violent attack
    muslim     neutral   community
    christian  positive  peaceful church
    christian  neutral   community church peaceful
    christian  (unknown) community peaceful

    N(muslim) = 7:    community 3 (pos 1, neg 1, neu 1), violent 2 (neg), peaceful 1 (pos), attack 1 (neg)
    N(christian) = 7: peaceful 3 (pos 1, neu 1, unknown 1), church 2 (pos 1, neu 1), community 2 (neu 1, unknown 1)

V = {community, peaceful} (the words both attributes have).

    p(peaceful|m) = 1/7, p(peaceful|c) = 3/7, mean 2/7   -> B1(peaceful, m) = 1/2, B1(peaceful, c) = 3/2
    p(community|m) = 3/7, p(community|c) = 2/7, mean 5/14 -> B1(community, m) = 6/5, B1(community, c) = 4/5

Eq. 2 (p(r|w,a) over labelled regards only; mean over the 3 regards is 1/3):

    community, m: p(r|w,a) = 1/3 each -> ratio 1 for every r -> B2 = min(6/5, 1) = 1     (regard term binds)
    peaceful, m:  p(pos) = 1          -> B2(pos) = min(1/2, 3) = 1/2, B2(neg) = B2(neu) = 0
    peaceful, c:  p(pos) = p(neu) = 1/2 (unknown left out) -> B2(pos) = B2(neu) = min(3/2, 3/2) = 3/2
    community, c: p(neu) = 1 (unknown left out) -> B2(neu) = min(4/5, 3) = 4/5, B2(pos) = B2(neg) = 0
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairstream.stats import (
    CooccurrenceCounts,
    frequency_bias,
    mitigation_effect,
    regard_bias,
    score_class,
    top_k,
    vocabulary,
)

REL = "religion"
CORPUS = [
    ("muslim", "positive", ["peaceful", "community"]),
    ("muslim", "negative", ["violent", "community"]),
    ("muslim", "negative", ["violent", "attack"]),
    ("muslim", "neutral", ["community"]),
    ("christian", "positive", ["peaceful", "church"]),
    ("christian", "neutral", ["community", "church", "peaceful"]),
    ("christian", None, ["community", "peaceful"]),
]
LOOSE = {"min_word_count": 1, "min_attribute_sentences": 1, "exclude": ()}


def build(corpus=CORPUS) -> CooccurrenceCounts:
    c = CooccurrenceCounts(stopwords=None, prune_every=None)
    for kw, regard, tokens in corpus:
        c.add_sentence(tokens, [(REL, kw, regard)])
    return c


def test_eq1_hand_computed():
    b1 = frequency_bias(build(), REL, **LOOSE)
    assert b1["muslim"] == pytest.approx({"peaceful": 1 / 2, "community": 6 / 5})
    assert b1["christian"] == pytest.approx({"peaceful": 3 / 2, "community": 4 / 5})
    # eq. 1 averages to 1 over the attributes of the class
    for w in ("peaceful", "community"):
        assert (b1["muslim"][w] + b1["christian"][w]) / 2 == pytest.approx(1.0)


def test_eq2_hand_computed():
    c = build()
    pos, neu, neg = (regard_bias(c, REL, r, **LOOSE) for r in ("positive", "neutral", "negative"))
    assert pos["muslim"] == pytest.approx({"community": 1.0, "peaceful": 0.5})
    assert neu["muslim"] == pytest.approx({"community": 1.0, "peaceful": 0.0})
    assert neg["muslim"] == pytest.approx({"community": 1.0, "peaceful": 0.0})
    assert pos["christian"] == pytest.approx({"community": 0.0, "peaceful": 1.5})
    assert neu["christian"] == pytest.approx({"community": 0.8, "peaceful": 1.5})
    assert neg["christian"] == pytest.approx({"community": 0.0, "peaceful": 0.0})


def test_intermediate_arrays():
    sc = score_class(build(), REL, **LOOSE)
    assert sc.keywords == ("christian", "muslim") and sc.words == ("community", "peaceful")
    np.testing.assert_allclose(sc.token_totals, [7, 7])
    np.testing.assert_allclose(sc.p_word, [[2 / 7, 3 / 7], [3 / 7, 1 / 7]])
    # p(r|w,a) for christian/peaceful: pos 1/2, neu 1/2, neg 0 (the unknown-regard sentence is left out)
    np.testing.assert_allclose(sc.regard_prob[0, :, 1], [0.5, 0.5, 0.0])
    assert sc.value("peaceful", "christian", "positive") == pytest.approx(1.5)
    assert math.isnan(sc.value("church", "christian"))  # not in V


def test_eq2_is_undefined_without_regard_labelled_counts():
    corpus = [("muslim", None, ["alpha"]), ("christian", "positive", ["alpha"])]
    sc = score_class(build(corpus), REL, **LOOSE)
    assert math.isnan(sc.value("alpha", "muslim", "positive"))
    assert sc.score("muslim", "positive") == {}  # NaN dropped
    assert sc.top("muslim", 5, "positive") == []
    assert sc.value("alpha", "muslim") == pytest.approx(1.0)


def test_vocabulary_rule_top_n_intersection_with_alphabetical_ties():
    c = build()
    # muslim by frequency: community 3, violent 2, attack 1 / peaceful 1 (tie -> alphabetical)
    # christian: peaceful 3, church 2 / community 2 (tie -> alphabetical)
    assert vocabulary(c, REL, top_n=1, **LOOSE) == []  # {community} & {peaceful}
    assert vocabulary(c, REL, top_n=2, **LOOSE) == []  # {community, violent} & {peaceful, church}
    assert vocabulary(c, REL, top_n=3, **LOOSE) == ["community"]  # attack beats peaceful for muslim
    assert vocabulary(c, REL, top_n=4, **LOOSE) == ["community", "peaceful"]
    assert vocabulary(c, REL, top_n=20_000, **LOOSE) == ["community", "peaceful"]


def test_vocabulary_minimum_counts_and_share():
    c = build()
    loose = dict(LOOSE)
    loose["min_word_count"] = 2  # muslim keeps community, violent; christian peaceful, church, community
    assert vocabulary(c, REL, **loose) == ["community"]
    # a word in any attribute's top list (share 1/2 of 2 attributes)
    assert vocabulary(c, REL, min_attribute_share=0.5, **LOOSE) == [
        "attack",
        "church",
        "community",
        "peaceful",
        "violent",
    ]
    # an attribute below min_attribute_sentences leaves A and no longer restricts V
    extra = build([*CORPUS, ("jewish", "positive", ["unique"])])
    assert vocabulary(extra, REL, **LOOSE) == []
    strict = {"min_word_count": 1, "min_attribute_sentences": 2, "exclude": ()}
    assert vocabulary(extra, REL, **strict) == ["community", "peaceful"]
    sc = score_class(extra, REL, **strict)
    assert sc.skipped == {"jewish": 1}
    with pytest.raises(KeyError, match="fewer than min_attribute_sentences=2"):
        sc.top("jewish")


def test_relaxed_vocabulary_gives_zero_eq1_where_a_word_is_absent():
    sc = score_class(build(), REL, min_attribute_share=0.5, **LOOSE)
    # church occurs only with christian: B1 = |A| = 2 there and 0 for muslim (eq. 2 undefined)
    assert sc.value("church", "christian") == pytest.approx(2.0)
    assert sc.value("church", "muslim") == 0.0
    assert math.isnan(sc.value("church", "muslim", "positive"))
    assert sc.value("church", "christian", "positive") == pytest.approx(min(2.0, 1.5))


def test_class_keywords_and_forms_are_excluded_by_default():
    corpus = [
        ("muslim", "neutral", ["muslims", "muslim", "prayer"]),
        ("christian", "neutral", ["muslim", "prayer"]),
    ]
    c = build(corpus)
    assert vocabulary(c, REL, min_word_count=1, min_attribute_sentences=1) == ["prayer"]
    assert vocabulary(c, REL, min_word_count=1, min_attribute_sentences=1, exclude=()) == ["muslim", "prayer"]


def test_top_words_order_and_top_k():
    sc = score_class(build(), REL, **LOOSE)
    assert sc.top("muslim", 2) == [("community", pytest.approx(1.2)), ("peaceful", pytest.approx(0.5))]
    assert sc.top("muslim", 1) == [("community", pytest.approx(1.2))]
    # ties on the score: the more frequent word first (violent 2 vs attack 1, both only with muslim)
    relaxed = score_class(build(), REL, min_attribute_share=0.5, **LOOSE)
    assert relaxed.top("muslim", 2) == [("violent", pytest.approx(2.0)), ("attack", pytest.approx(2.0))]
    assert top_k({"b": 2.0, "a": 2.0, "c": 3.0, "d": math.nan}, 2) == [("c", 3.0), ("a", 2.0)]
    with pytest.raises(ValueError, match="regard='angry'"):
        sc.top("muslim", 2, "angry")
    with pytest.raises(KeyError, match="not counted"):
        sc.top("hindu")


def test_mitigation_effect_hand_computed():
    before = build()
    after = build([row for row in CORPUS if row[1] != "negative"])  # filtering dropped the negative sentences
    rows = mitigation_effect(before, after, REL, keyword="muslim", words=["violent", "community"], **LOOSE)
    by_word = {r["word"]: r for r in rows}
    # violent: p = 2/7 before, 0 after -> 0%
    assert by_word["violent"]["p_before"] == pytest.approx(2 / 7)
    assert by_word["violent"]["percent"] == 0.0
    # community: p = 3/7 before; after N(muslim) = 3 and c = 2 -> 100 * (2/3) / (3/7) = 155.6%
    assert by_word["community"]["percent"] == pytest.approx(100 * (2 / 3) / (3 / 7))
    assert by_word["community"]["count_before"] == 3 and by_word["community"]["count_after"] == 2
    assert math.isnan(by_word["violent"]["score_before"])  # not in V
    # default: each attribute's top words by eq. 2 (r=negative) before filtering
    auto = mitigation_effect(before, after, REL, top_k=1, **LOOSE)
    # christian: both eq. 2 (neg) scores are 0, the tie goes to the more frequent peaceful
    assert [(r["keyword"], r["word"]) for r in auto] == [("christian", "peaceful"), ("muslim", "community")]
    unseen = mitigation_effect(before, after, REL, keyword="muslim", words=["nothing"], **LOOSE)
    assert unseen[0]["percent"] is None
    # the scores a report already computed (with the run's taxonomy) pick the same words, and are
    # refused beside vocabulary settings they were not computed with
    sc = score_class(before, REL, **LOOSE)
    assert mitigation_effect(before, after, REL, top_k=1, scores=sc) == auto
    with pytest.raises(ValueError, match="without vocabulary settings"):
        mitigation_effect(before, after, REL, top_k=1, scores=sc, **LOOSE)
    with pytest.raises(ValueError, match="of class 'religion'"):
        mitigation_effect(before, after, "nationality", scores=sc)


def test_bad_settings_are_rejected():
    c = build()
    with pytest.raises(ValueError, match="top_n=0"):
        vocabulary(c, REL, top_n=0)
    with pytest.raises(ValueError, match="min_word_count=0"):
        score_class(c, REL, min_word_count=0)
    with pytest.raises(ValueError, match=r"min_attribute_share=1\.5"):
        score_class(c, REL, min_attribute_share=1.5)
    with pytest.raises(ValueError, match="regard='bad'"):
        regard_bias(c, REL, "bad")


def test_empty_class_scores():
    sc = score_class(build(), "nationality", **LOOSE)
    assert sc.keywords == () and sc.words == ()
    assert frequency_bias(build(), "nationality", **LOOSE) == {}
