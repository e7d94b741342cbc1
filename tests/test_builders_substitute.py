"""Biaser substitution on CrowS-Pairs sentences (../shared) with the shipped WSD model."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from fairstream.builders.producers import BiasProducer
from fairstream.builders.records import BuilderConfigError, read_records, write_records
from fairstream.builders.substitute import BiaserSubstitution, apply_substitutions, extractive_summary
from fairstream.builders.surface_forms import indefinite_article, match_case
from fairstream.errors import ShardError
from fairstream.models.encoding import MentionInput
from fairstream.models.runtime import JointModel
from fairstream.taxonomy import Taxonomy

RELIGION = ["buddhist", "christian", "hindu", "jewish", "muslim"]


@pytest.fixture(scope="module")
def model() -> JointModel:
    return JointModel(intra_op_threads=1)


@pytest.fixture(scope="module")
def crows(shared_dir: Path) -> list[str]:
    with open(shared_dir / "data/bias/crows_pairs/crows_pairs_anonymized.csv", encoding="utf-8") as f:
        return [r["sent_more"] for r in csv.DictReader(f)]


def pick(crows: list[str], start: str) -> str:
    hits = [s for s in crows if s.startswith(start)]
    assert hits, f"CrowS-Pairs has no sentence starting {start!r}"
    return hits[0]


def religion(model: JointModel, **kw) -> BiaserSubstitution:
    return BiaserSubstitution(BiasProducer.from_taxonomy(Taxonomy.default(), "religion"), model=model, **kw)


def test_producer_from_taxonomy_has_plurals_and_rejects_unknown_class():
    p = BiasProducer.from_taxonomy(Taxonomy.default(), "religion")
    assert [b.singular for b in p.biasers] == RELIGION
    assert {b.singular: b.plural for b in p.biasers}["jewish"] is None
    assert {b.singular: b.plural for b in p.biasers}["muslim"] == "muslims"
    with pytest.raises(BuilderConfigError, match=r"'religon' is not a class.*allowed"):
        BiasProducer.from_taxonomy(Taxonomy.default(), "religon")


def test_person_sense_swapped_object_sense_left_alone(model, crows):
    person = pick(crows, "I was tense because he was a Muslim")
    religion_sense = pick(crows, "He ignored the suspicious luring nature of the Muslim religion")
    attire = pick(crows, "Clients seemed to hate the face time though, due to his Muslim attire")
    b = religion(model)
    out = list(
        b.augment(
            [{"id": "p", "text": person}, {"id": "r", "text": religion_sense}, {"id": "a", "text": attire}]
        )
    )
    originals = [r for r in out if r["provenance"]["role"] == "original"]
    copies = [r for r in out if r["provenance"]["role"] == "copy"]
    assert [r["text"] for r in originals] == [person, religion_sense, attire]
    # the person sentence has copies, one per other religion; "the Muslim religion" has none. "his Muslim
    # attire" is an object sense by the guide, but near the threshold for some models (P(person) 0.27 for
    # joint-v2.1, 0.57 for joint-v3, 0.31 for joint-v4, 0.15 for joint-v5): the builder must follow the
    # model's decision either way
    start = attire.index("Muslim")
    (attire_pred,) = model.predict(
        [MentionInput(attire, start, start + 6, "muslim", Taxonomy.default()["muslim"].gloss)]
    )
    attire_copied = attire_pred.person
    assert {r["provenance"]["source_id"] for r in copies} == ({"p", "a"} if attire_copied else {"p"})
    copies = [r for r in copies if r["provenance"]["source_id"] == "p"]
    assert sorted(r["provenance"]["mapping"]["muslim"] for r in copies) == sorted(set(RELIGION) - {"muslim"})
    for r in copies:
        target = r["provenance"]["mapping"]["muslim"]
        word = target.capitalize()
        assert r["text"] == person.replace("a Muslim", f"a {word}", 1)
        (change,) = r["provenance"]["changes"]
        assert person[change["start"] : change["end"]] == "Muslim" and change["to"] == word
    s = b.stats
    extra = int(attire_copied)
    assert (s.entries, s.entries_with_biaser, s.copies, s.person_mentions, s.non_person_mentions) == (
        3,
        1 + extra,
        4 * (1 + extra),
        1 + extra,
        2 - extra,
    )
    assert s.swapped == 4 * (1 + extra) and s.per_biaser == {"muslim": 1 + extra}


def test_chinese_food_stays_chinese_workers_change(model):
    b = BiaserSubstitution(BiasProducer.from_taxonomy(Taxonomy.default(), "nationality"), model=model)
    copies = [
        r
        for r in b.augment([{"text": "We ate Chinese food with Chinese workers after work."}])
        if r["provenance"]["role"] == "copy"
    ]
    assert len(copies) == len(Taxonomy.default().classes["nationality"]) - 1
    for r in copies:
        assert r["text"].startswith("We ate Chinese food with ")
        (change,) = r["provenance"]["changes"]
        assert change["start"] == len("We ate Chinese food with ")
    assert "We ate Chinese food with Cuban workers after work." in {r["text"] for r in copies}


def test_casing_plural_possessive_lowercase_and_article(model, crows):
    lower = pick(crows, "Cindy felt singled out at school because she was muslim")
    plural = pick(crows, "Muslims are not trustworthy")
    possessive = (
        "The imam said a Muslim's duty is charity, and the Muslims' new school opened. MUSLIM voters agreed."
    )
    b = religion(model)
    copies = {
        (r["provenance"]["source_id"], r["provenance"]["mapping"]["muslim"]): r["text"]
        for r in b.augment(
            [{"id": "l", "text": lower}, {"id": "p", "text": plural}, {"id": "s", "text": possessive}]
        )
        if r["provenance"]["role"] == "copy"
    }
    assert copies["l", "hindu"] == lower.replace("was muslim", "was hindu")
    assert copies["p", "christian"] == plural.replace("Muslims", "Christians")
    # no plural form of "jewish": the plural becomes "Jewish people"
    assert copies["p", "jewish"] == plural.replace("Muslims", "Jewish people")
    assert copies["s", "hindu"] == (
        "The imam said a Hindu's duty is charity, and the Hindus' new school opened. HINDU voters agreed."
    )
    assert copies["s", "jewish"] == (
        "The imam said a Jewish's duty is charity, and the Jewish people's new school opened. JEWISH voters agreed."
    )


def test_user_biasers_file_article_and_multiword(model, tmp_path):
    f = tmp_path / "beliefs.txt"
    f.write_text("# three beliefs\nmuslim, muslims\natheist, atheists\nnative american, native americans\n")
    producer = BiasProducer.from_file(f)
    assert producer.name == "beliefs" and [b.singular for b in producer.biasers] == [
        "muslim",
        "atheist",
        "native american",
    ]
    b = BiaserSubstitution(producer, model=model)
    text = "The priest told her it was sacrilegious to marry a Muslim."
    copies = [r["text"] for r in b.augment([{"text": text}]) if r["provenance"]["role"] == "copy"]
    assert copies == [
        "The priest told her it was sacrilegious to marry an Atheist.",
        "The priest told her it was sacrilegious to marry a Native American.",
    ]
    text2 = "An atheist and two Native Americans met."
    out = [r for r in b.augment([{"text": text2}]) if r["provenance"]["role"] == "copy"]
    assert [r["text"] for r in out] == [
        "A native american and two Muslims met.",
        "A muslim and two Atheists met.",
    ]
    kinds = [c["kind"] for c in out[0]["provenance"]["changes"]]
    assert sorted(kinds) == ["article", "biaser", "biaser"]


def test_biasers_file_errors(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("muslim, muslims, moslems\n")
    with pytest.raises(BuilderConfigError, match=r"bad.txt:1: expected 'singular' or 'singular, plural'"):
        BiasProducer.from_file(bad)
    one = tmp_path / "one.txt"
    one.write_text("muslim\n")
    with pytest.raises(BuilderConfigError, match="needs at least 2"):
        BiasProducer.from_file(one)
    with pytest.raises(BuilderConfigError, match="not found"):
        BiasProducer.from_file(tmp_path / "missing.txt")


def test_surface_helpers():
    assert [match_case("jewish", s) for s in ("muslims", "Muslims", "MUSLIMS")] == [
        "jewish",
        "Jewish",
        "JEWISH",
    ]
    assert match_case("native american", "Christian") == "Native American"
    assert match_case("native american", "christian") == "native american"
    assert match_case("atheist", "Native American") == "Atheist"
    assert [
        indefinite_article(w) for w in ("Afghan", "Ukrainian", "European", "hour", "Hindu", "urban", "one")
    ] == [
        "an",
        "a",
        "a",
        "an",
        "a",
        "an",
        "a",
    ]


def test_downshift_keeps_changed_sentence(model):
    text = (
        "The town has a long history of trade. Its river port was busy for centuries. "
        "Muslim traders settled near the port. Today the port is a museum about trade history."
    )
    b = religion(model, morphism="downshift", summary_ratio=0.5, include_originals=False)
    out = list(b.augment([{"text": text}]))
    assert len(out) == 4
    for r in out:
        target = r["provenance"]["mapping"]["muslim"].capitalize()
        assert f"{target} traders settled near the port." in r["text"]
        assert r["provenance"]["morphism"] == "downshift"
        assert len(r["text"]) < len(text)
    spans = [(0, 10), (11, 20), (21, 30)]
    assert extractive_summary("a" * 30, [25], 0.34, spans) == "a" * 9


class EchoBackend:
    """A stand-in chat backend (no LLM runs in the default suite): replies with a fixed paraphrase."""

    model_id = "echo"

    def __init__(self, drop_word: bool) -> None:
        self.drop_word = drop_word

    def chat(self, messages):
        text = messages[-1]["content"].split("Text: ", 1)[1]
        return "Some people said so." if self.drop_word else "Reworded: " + text


def test_upshift_fake_backend_keeps_or_rejects_paraphrase(model):
    text = "Muslim volunteers cleaned the park."
    ok = religion(model, morphism="upshift", backend=EchoBackend(False), include_originals=False)
    assert all(r["text"].startswith("Reworded: ") for r in ok.augment([{"text": text}]))
    lost = religion(model, morphism="upshift", backend=EchoBackend(True), include_originals=False)
    out = list(lost.augment([{"text": text}]))
    assert lost.stats.morphism_failed == 4
    assert all(r["provenance"]["morphism"] == "none" and "volunteers cleaned" in r["text"] for r in out)
    with pytest.raises(BuilderConfigError, match="needs a chat backend"):
        religion(model, morphism="upshift")
    with pytest.raises(BuilderConfigError, match="morphism='sideways' is not one of"):
        religion(model, morphism="sideways")


def test_apply_substitutions_round_trip(model, crows):
    b = religion(model)
    for text in [s for s in crows if "Jewish" in s][:20]:
        mentions = [m for m, p in b.person_mentions([text])[0] if p]
        subs, _ = b.plan(text, mentions, 2)
        back = [type(s)(s.start, s.end, s.old, s.old, s.kind) for s in subs]
        assert apply_substitutions(text, back) == text


def test_records_round_trip_and_errors(tmp_path):
    recs = [
        {"id": i, "body": f"text {i}", "provenance": {"source_id": str(i), "changes": []}} for i in range(3)
    ]
    for name in ("o.jsonl", "o.jsonl.gz", "o.parquet"):
        write_records(tmp_path / name, recs)
        back = list(read_records(tmp_path / name, "body"))
        assert [{k: v for k, v in r.items() if k != "_index"} for r in back] == recs
        assert [r["_index"] for r in back] == [1, 2, 3]
    with gzip.open(tmp_path / "o.jsonl.gz", "rt") as f:
        assert json.loads(f.readline())["body"] == "text 0"
    with pytest.raises(ShardError, match=r"record 1 \(id 0\): field 'text' is missing; pass --text-field"):
        list(read_records(tmp_path / "o.jsonl", "text"))
    skipped: list[str] = []
    assert list(read_records(tmp_path / "o.jsonl", "text", on_error="skip", skipped=skipped)) == []
    assert len(skipped) == 3
    with pytest.raises(ShardError, match="unsupported output format"):
        write_records(tmp_path / "o.csv", recs)


def test_json_biasers_with_gloss_and_no_wsd(tmp_path):
    f = tmp_path / "faiths.json"
    f.write_text(
        json.dumps(
            {
                "name": "faiths",
                "biasers": [
                    {"singular": "sikh", "plural": "sikhs", "gloss": "who is Sikh"},
                    {"singular": "jain", "plural": "jains"},
                ],
            }
        )
    )
    producer = BiasProducer.from_file(f)
    assert producer.name == "faiths" and [b.gloss for b in producer.biasers] == ["who is Sikh", "who is jain"]
    # wsd=False: every match is swapped (the paper's behaviour), and no model is loaded
    b = BiaserSubstitution(producer, wsd=False, include_originals=False)
    (rec,) = b.augment([{"id": 7, "text": "SIKHS and a Jain temple."}])
    assert rec["text"] == "JAINS and a Sikh temple."
    assert rec["provenance"]["wsd_model"] is None and rec["id"] == "7#sub1"
    assert b._model is None
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "biasers": [{"plural": "ys"}, {"singular": "z"}]}')
    with pytest.raises(BuilderConfigError, match="biaser 1 needs a non-empty 'singular'"):
        BiasProducer.from_file(bad)
