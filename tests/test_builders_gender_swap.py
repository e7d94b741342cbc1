"""Counterfactual gender swaps on WinoBias (../shared) with NLTK's tagger."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fairstream.builders.gender_swap import GenderLexicon, GenderSwapper
from fairstream.builders.records import BuilderConfigError


@pytest.fixture(scope="module")
def winobias(shared_dir: Path) -> Path:
    return shared_dir / "data/bias/winobias"


@pytest.fixture(scope="module")
def swapper(winobias: Path) -> GenderSwapper:
    return GenderSwapper(winobias_dir=winobias)


def read_wino(path: Path) -> list[str]:
    # drop the line number and the coreference brackets: plain sentences
    return [
        re.sub(r"[\[\]]", "", re.sub(r"^\d+ ", "", line)).strip() for line in path.read_text().splitlines()
    ]


def test_lexicon_is_two_way_and_project_list_fixes_typos(winobias):
    lex = GenderLexicon.load(winobias)
    assert lex.words["actor"] == "actress" and lex.words["actress"] == "actor"
    assert lex.words["wizard"] == "witch" and lex.words["witch"] == "wizard"  # extra list, reverse added
    assert lex.words["gentleman"] == "lady"  # WinoBias has the typo "mentleman"
    assert lex.words["goddess"] == "god"  # ... and "godess"
    assert "her" not in lex.words and "his" not in lex.words  # pronouns go by part of speech
    assert lex.names["john"] == "Jennifer" and lex.names["jennifer"] == "John"
    with pytest.raises(BuilderConfigError, match=r"generalized_swaps\.txt not found"):
        GenderLexicon.load(winobias.parent)


def test_pro_swapped_is_anti_on_winobias(swapper, winobias):
    # WinoBias pro- and anti-stereotyped files hold the same sentences with the gender flipped, so a
    # correct swap of one is the other (a few pairs also differ in other words: the bar is not 100%)
    total = same = 0
    for t in ("1", "2"):
        for split in ("dev", "test"):
            pro = read_wino(winobias / f"pro_stereotyped_type{t}.txt.{split}")
            anti = read_wino(winobias / f"anti_stereotyped_type{t}.txt.{split}")
            for a, b in zip(pro + anti, anti + pro, strict=True):
                total += 1
                same += swapper.swap_text(a)[0] == b
    assert total == 3168
    assert same / total >= 0.95, f"{same}/{total} swapped sentences equal their counterpart"


def test_her_by_part_of_speech_and_uncertain_reported(swapper, winobias):
    pro2 = read_wino(winobias / "pro_stereotyped_type2.txt.dev")
    pro1 = read_wino(winobias / "pro_stereotyped_type1.txt.dev")
    obj = next(s for s in pro2 if "slapped her" in s)
    det = next(s for s in pro1 if "her idea" in s)
    out = list(swapper.swap([{"id": "o", "text": obj}, {"id": "d", "text": det}]))
    assert "slapped him" in out[0]["text"] and "his idea" in out[1]["text"]
    her = [c for r in out for c in r["provenance"]["changes"] if c["from"] == "her"]
    assert [c["to"] for c in her] == ["him", "his"]
    assert out[0]["id"] == "o#swap" and out[0]["provenance"]["source_id"] == "o"
    # "asked her for tips": NLTK tags her PRP$; the next word says object -> swapped to him, listed
    s = GenderSwapper(swapper.lexicon)
    text = "The janitor cleaned the room for the chief and asked her for tips."
    (rec,) = s.swap([{"id": "u", "text": text}])
    assert rec["text"].endswith("asked him for tips.")
    (change,) = rec["provenance"]["changes"]
    assert change["tag"] == "PRP$" and change["uncertain"] is True
    assert s.stats.uncertain == 1 and "asked [her] for tips" in s.stats.examples_uncertain[0]


def test_names_only_as_proper_nouns_and_casing(swapper):
    s = GenderSwapper(swapper.lexicon)
    text = "Yesterday Will called Mark, and Mark will call back. I miss Miss Jones. HE met his AUNT; the book is hers. Mr. Smith and Mary's son."
    (rec,) = s.swap([{"text": text}])
    assert rec["text"] == (
        "Yesterday Jane called Sandra, and Sandra will call back. I miss Mr. Jones. SHE met her UNCLE; "
        "the book is his. Mrs. Smith and James's daughter."
    )
    reasons = [(x["word"], x["reason"].split(" (")[0]) for x in rec["provenance"]["left_alone"]]
    assert reasons == [("miss", "ambiguous word")]
    st = s.stats.to_dict()
    assert st["swaps"] == {"name": 4, "pronoun": 3, "word": 4}
    assert st["left_alone"] == {"ambiguous word": 1}
    # a listed name at the start of a sentence used as a modal verb is left alone and reported
    (rec2,) = s.swap([{"text": "Will you come to the party?"}])
    assert rec2["text"] == "Will you come to the party?"
    assert [x["reason"].split(" (")[0] for x in rec2["provenance"]["left_alone"]] == [
        "listed name not tagged as a proper noun"
    ]


def test_ambiguous_occupation_words_left_alone_on_winobias(winobias):
    s = GenderSwapper(winobias_dir=winobias)
    sents = [x for x in read_wino(winobias / "pro_stereotyped_type1.txt.dev") if "tailor" in x]
    assert sents
    out = list(s.swap({"text": t} for t in sents))
    assert all("tailor" in r["text"] for r in out)  # the WinoBias occupation is not gendered
    assert s.stats.left_alone["ambiguous word"] == sum(t.count("tailor") for t in sents)
    assert s.stats.swaps["pronoun"] >= len(sents)
