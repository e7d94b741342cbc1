from __future__ import annotations

import pytest

from fairstream.stats.examples import DroppedExamples, snippet


def test_snippet_keeps_the_mention_on_one_line_and_cuts_around_it():
    text = "Intro.  " + "word " * 60 + "the Muslim\nfamily " + "tail " * 60
    start, end = 8, len(text)
    m0 = text.index("Muslim")
    cut = snippet(text, start, end, (m0, m0 + 6), 80)
    s, e = cut["mark"]
    assert cut["text"][s:e] == "Muslim"
    assert len(cut["text"]) <= 82 and cut["text"].startswith("\u2026") and cut["text"].endswith("\u2026")
    assert "\n" not in cut["text"] and "  " not in cut["text"]
    short = snippet("A short one about Muslims.", 0, 26, (18, 25), 80)
    assert short == {"text": "A short one about Muslims.", "mark": [18, 25]}


def annotation(doc_index: int, kept: bool, regard: str, person: bool = True) -> dict:
    return {
        "doc_index": doc_index,
        "id": f"d{doc_index}",
        "sentences": [
            {
                "start": 0,
                "end": 20,
                "kept": kept,
                "mentions": [
                    {
                        "start": 4,
                        "end": 10,
                        "keyword": "muslim",
                        "class": "religion",
                        "person": person,
                        "regard": regard,
                    }
                ],
            }
        ],
    }


def test_collects_only_dropped_negative_person_sentences_up_to_the_limit_and_round_trips():
    ex = DroppedExamples(per_attribute=2)
    text = "The Muslim people of here"
    ex(text, annotation(0, kept=True, regard="negative"))  # kept: not an example
    ex(text, annotation(1, kept=False, regard="neutral"))  # dropped for another attribute's sake
    ex(text, annotation(2, kept=False, regard="negative", person=False))
    assert ex.examples == {}
    ex(text, annotation(3, kept=False, regard="negative"))
    ex(text, annotation(4, kept=False, regard="negative"))  # the same sentence again: shown once
    ex("Our Muslim friends came by", annotation(5, kept=False, regard="negative"))
    ex("The Muslim crowd over there", annotation(6, kept=False, regard="negative"))  # over the limit
    found = ex.examples["muslim"]
    assert [e["id"] for e in found] == ["d3", "d5"]
    assert found[0]["text"][slice(*found[0]["mark"])] == "Muslim"
    again = DroppedExamples.from_dict(ex.to_dict())
    assert again.examples == ex.examples and again.per_attribute == 2
    with pytest.raises(ValueError, match="per_attribute=0"):
        DroppedExamples(per_attribute=0)
