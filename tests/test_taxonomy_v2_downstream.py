"""taxonomy-v2 downstream of the filter (issue 47): the bias scores and SeeGULL recall on its classes,
``augment --producer`` with its classes, and co-occurrence counts and stats parts that refuse to add
up across taxonomies (name and content hash) while counts of one taxonomy merge exactly.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from fairstream.builders.producers import BiasProducer, producer_groups
from fairstream.builders.records import BuilderConfigError
from fairstream.cli import main
from fairstream.core import FilterConfig
from fairstream.core.step import FilterStep
from fairstream.io.stats_parts import merge_stats_parts, write_stats_part
from fairstream.stats import CooccurrenceCounts, load_seegull, score_class, seegull_recall_table
from fairstream.stats.provenance import TaxonomyMismatchError
from fairstream.stats.scores import attribute_words
from fairstream.taxonomy import Taxonomy

V2 = Taxonomy.load("taxonomy-v2")
FILTER = FilterConfig(cap=1.0, min_tokens=4)  # count every mention of the short sentences below


# -- bias scores and SeeGULL recall on taxonomy-v2's classes -----------------------------------------
def v2_counts(words_of: dict[str, list[list[str]]], regard: str = "neutral") -> CooccurrenceCounts:
    """Counts of hand-made sentences per v2 keyword, recorded as made with taxonomy-v2 (as the stream does)."""
    counts = CooccurrenceCounts(prune_every=None)
    counts.note_taxonomy(V2.identity)
    for keyword, sentences in words_of.items():
        for i, words in enumerate(sentences):
            r = regard if i % 3 else "negative"
            counts.add_sentence(words, [(V2[keyword].attribute_class, keyword, r)])
    return counts


def test_scores_run_on_every_v2_class_and_leave_out_its_own_forms():
    filler = ["school", "family", "work", "city", "news", "music", "health", "market"]
    sentences = {
        a.keyword: [[*a.forms[-1].split(" "), filler[(i + j) % 8], filler[(i * 3 + j) % 8]] for j in range(4)]
        for i, a in enumerate(V2)
    }
    counts = v2_counts(sentences)
    settings = {"min_word_count": 1, "min_attribute_sentences": 2, "min_attribute_share": 0.5}
    for cls, attrs in V2.classes.items():
        sc = score_class(counts, cls, **settings)  # the taxonomy comes from the counts' record
        assert list(sc.keywords) == sorted(a.keyword for a in attrs), cls
        if len(attrs) < 2:
            continue
        assert sc.words and set(sc.words) <= set(filler), (cls, sc.words)  # no form of the class's own
        for w in sc.words:  # eq. 1 averages 1 over the class's attributes
            mean = sum(sc.value(w, kw, None) for kw in sc.keywords) / len(sc.keywords)
            assert math.isclose(mean, 1.0), (cls, w, mean)
    # the forms v1 lacks, and the words of multi-word forms, stay out of their class's vocabulary
    age, economic = attribute_words(counts, "age"), attribute_words(counts, "economic status")
    assert {"teenagers", "retirees", "senior", "citizens", "older"} <= age
    assert {"middle", "class", "housewives", "jobless"} <= economic
    assert "teenagers" not in attribute_words(counts, "age", Taxonomy.default())  # v1: no age forms


def test_seegull_recall_counts_american_under_v2(shared_dir: Path):
    seegull = shared_dir / "data/bias/seegull"
    stereotypes = [s for s in load_seegull(seegull, "v2") if s.identity == "United States"]
    negative = [s.attribute for s in stereotypes if s.offensiveness >= 1 and " " not in s.attribute][:3]
    assert len(negative) == 3
    sentences = {
        "american": [[negative[j % 3], "people", "city"] for j in range(9)],
        "german": [["people", "music", "city"] for _ in range(9)],
        "french": [["people", "food", "music"] for _ in range(9)],
    }
    counts = v2_counts(sentences)
    rows = seegull_recall_table(
        counts, seegull, ks=(5,), min_word_count=1, min_attribute_sentences=3, min_attribute_share=0.3
    )
    neg_eq2 = next(r for r in rows if r["stereotypes"] == "negative" and r["regard"] == "negative")
    assert neg_eq2["nationalities"] == 3  # american is SeeGULL's "United States"
    assert neg_eq2["hits@5"] >= 1  # its stereotype words, in its negative sentences, are found
    assert "american" not in neg_eq2["nationalities_missing"]
    assert "guatemalan" in neg_eq2["nationalities_missing"]  # a v2 nationality without counts


# -- augment --producer with taxonomy-v2's classes ------------------------------------------------
def test_every_v2_class_is_a_producer_without_dispreferred_terms():
    dispreferred = {a.keyword for a in V2 if a.dispreferred}
    for name in producer_groups(V2):
        if name == "veteran status":
            continue
        producer = BiasProducer.from_taxonomy(V2, name)
        assert len(producer.biasers) >= 2 and not {b.singular for b in producer.biasers} & dispreferred
    assert {"age", "immigration status", "political ideology", "sexual orientation"} <= set(
        producer_groups(V2)
    )
    orientation = BiasProducer.from_taxonomy(V2, "sexual orientation")  # an axis of gender/sexuality
    assert {b.singular for b in orientation.biasers} == {
        a.keyword for a in V2.classes["gender/sexuality"] if a.axis == "sexual_orientation"
    }
    assert "illegal-immigrant" in BiasProducer.from_taxonomy(V2, "immigration status").left_out
    with pytest.raises(BuilderConfigError, match=r"'veteran status': taxonomy-v2 has 1 usable keyword"):
        BiasProducer.from_taxonomy(V2, "veteran status")


def test_augment_cli_v2_age_producer_keeps_number_and_refuses_a_class_v1_lacks(tmp_path: Path, capsys):
    src = tmp_path / "in.jsonl"
    texts = [
        "The teenagers who volunteered at the shelter were praised.",
        "A teenager was helped across the road by two students.",
    ]
    src.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    out = tmp_path / "out.jsonl"
    args = ["augment", str(src), "-o", str(out), "--producer", "age", "--no-wsd", "--no-progress"]
    assert main([*args, "--taxonomy", "taxonomy-v2"]) == 0
    copies = [json.loads(line)["text"] for line in out.read_text().splitlines()]
    n = len(BiasProducer.from_taxonomy(V2, "age").biasers)
    assert len(copies) == 2 * n  # each original and its n-1 copies
    for expected in (
        "The adults who volunteered",  # a noun's plural
        "The elderly people who volunteered",  # an adjective without a noun: "people"
        "The retirees who volunteered",  # an adjective's listed noun ("retired": retiree, retirees)
        "An adult was helped",
        "An elderly person was helped",  # a singular noun source: "person", and the article follows
    ):
        assert any(c.startswith(expected) for c in copies), (expected, copies)
    assert not any(c.startswith(("The young who", "An elderly was")) for c in copies)
    capsys.readouterr()

    assert main(args) == 2  # the default taxonomy-v1 has no age class
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err  # one line
    assert "--producer 'age' is not a class of taxonomy-v1; allowed: dietary habits, disability," in err
    assert err.endswith("taxonomy-v2 has it: add --taxonomy taxonomy-v2"), err


# -- co-occurrence counts and stats parts across taxonomies -----------------------------------------
DOCS = [
    "The Muslim volunteers at the shelter were praised by everyone in the town last week.",
    "Young people and elderly neighbours met at the library to talk about the new park.",
    "Many immigrants and Mexican families opened small shops on the main street last year.",
]


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, FilterStep]:
    """Filter steps of taxonomy-v1, -v2 and a user's file that reuses v1's name (one model for all)."""
    v1 = FilterStep(FILTER, taxonomy="taxonomy-v1")
    own = Taxonomy.default().extended(
        {"extra_classes": ["age"], "classes": {"age": [{"keyword": "young", "gloss": "who is young"}]}},
        name="taxonomy-v1",
    )
    path = tmp_path_factory.mktemp("taxonomy") / "own.json"
    path.write_text(json.dumps(own.to_dict()), encoding="utf-8")
    model = v1.tagger.model
    return {
        "v1": v1,
        "v2": FilterStep(FILTER, taxonomy="taxonomy-v2", model=model),
        "own": FilterStep(FILTER, taxonomy=str(path), model=model),
    }


def count(step: FilterStep, docs: list[str], start: int = 0) -> CooccurrenceCounts:
    counts = CooccurrenceCounts(prune_every=None)
    for r, text in zip(step.process([{"text": t} for t in docs], start=start), docs, strict=True):
        counts.consume(text, r.annotation, "all")
    return counts


def test_counts_of_one_taxonomy_merge_exactly_and_record_it(steps):
    whole = count(steps["v2"], DOCS)
    parts = count(steps["v2"], DOCS[:2]) + count(steps["v2"], DOCS[2:], start=2)
    assert parts == whole and whole.taxonomy == V2.identity
    assert whole.sentence_count("age", "young") and whole.sentence_count("immigration status", "immigrant")
    again = CooccurrenceCounts.from_dict(json.loads(json.dumps(whole.to_dict())))
    assert again == whole and again.taxonomy == V2.identity
    legacy = whole.to_dict()
    del legacy["taxonomy"]  # counts written before the taxonomy was recorded
    assert (CooccurrenceCounts.from_dict(legacy) + whole).taxonomy == V2.identity  # same name: merged


def refusal(a: Any, b: Any) -> str:
    with pytest.raises(TaxonomyMismatchError) as info:
        a + b
    message = str(info.value)
    assert "\n" not in message and "count them again with one taxonomy" in message
    return message


def test_counts_of_different_taxonomies_refuse_to_merge_naming_both(steps):
    v1, v2, own = (count(steps[k], DOCS) for k in ("v1", "v2", "own"))
    ids = {k: steps[k].taxonomy.identity for k in steps}
    assert (
        ids["own"].startswith("taxonomy-v1 (sha256 ") and ids["own"] != ids["v1"]
    )  # same name, other content
    message = refusal(v1, v2)
    assert f"of different taxonomies: {ids['v1']} and {ids['v2']}" in message
    assert ids["own"] in refusal(own, v1)  # a user's file under a shipped name is another taxonomy
    legacy = v1.to_dict()
    del legacy["taxonomy"]
    assert "taxonomy-v1 (content hash not recorded)" in refusal(CooccurrenceCounts.from_dict(legacy), v2)
    # and counting a v2 annotation into v1 counts is refused before anything is counted
    before = v1.to_dict()
    result = steps["v2"].process([{"text": DOCS[0]}])[0]
    with pytest.raises(TaxonomyMismatchError, match=r"^document 0 \(id=None\): cannot add up"):
        v1.consume(DOCS[0], result.annotation, "all")
    assert v1.to_dict() == before


def test_stats_parts_of_different_taxonomies_refuse_to_merge(steps, tmp_path: Path):
    same = tmp_path / "same"
    write_stats_part(same, "a", steps["v2"].counts(), None)
    write_stats_part(same, "b", steps["v2"].counts(), None)
    merged = merge_stats_parts(same)
    assert merged["taxonomy"] == V2.identity and merged["parts"] == 2
    assert merged["counters"]["docs_in"] == 2 * steps["v2"].counts()["counters"]["docs_in"]
    mixed = tmp_path / "mixed"
    write_stats_part(mixed, "a", steps["v1"].counts(), None)
    write_stats_part(mixed, "b", steps["v2"].counts(), None)
    with pytest.raises(TaxonomyMismatchError) as info:
        merge_stats_parts(mixed)
    message = str(info.value)
    assert message.startswith(
        "a.stats.json and b.stats.json: cannot add up stats parts of different taxonomies"
    )
    assert steps["v1"].taxonomy.identity in message and V2.identity in message and "\n" not in message
