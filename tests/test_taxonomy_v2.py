"""taxonomy-v2: v1 kept entry for entry, new entries with provenance, one keyword per form, the hits tool."""

from __future__ import annotations

import gzip
import json
from importlib import resources
from pathlib import Path

import pytest

from export.tools.taxonomy_hits import main as hits_main
from fairstream.cli import main
from fairstream.detect import KeywordDetector
from fairstream.errors import TaxonomyError
from fairstream.taxonomy import DEFAULT_TAXONOMY, Taxonomy, shipped_taxonomies


def raw(name: str) -> dict:
    return json.loads((resources.files("fairstream") / "data" / f"{name}.json").read_text(encoding="utf-8"))


def test_v2_loads_by_name_and_v1_stays_the_default():
    assert set(shipped_taxonomies()) >= {"taxonomy-v1", "taxonomy-v2"}
    v2 = Taxonomy.load("taxonomy-v2")
    assert v2.name == "taxonomy-v2" and 200 <= len(v2) <= 260
    assert DEFAULT_TAXONOMY == "taxonomy-v1" and Taxonomy.load().name == "taxonomy-v1"
    assert Taxonomy.load("taxonomy-v1").to_dict() == Taxonomy.default().to_dict()
    with pytest.raises(TaxonomyError, match="not a shipped taxonomy"):
        Taxonomy.shipped("taxonomy-v9")


def test_every_v1_entry_is_in_v2_unchanged():
    v1, v2 = raw("taxonomy-v1"), raw("taxonomy-v2")
    for cls, entries in v1["classes"].items():
        assert v2["classes"][cls][: len(entries)] == entries, cls  # same entries, first, in v1's order
    assert "axis" not in json.dumps(Taxonomy.default().to_dict())  # v1 carries no provenance


def test_new_entries_have_gloss_forms_and_provenance():
    v1, v2 = Taxonomy.load("taxonomy-v1"), Taxonomy.load("taxonomy-v2")
    new = [a for a in v2 if a.keyword not in v1]
    assert len(new) == len(v2) - len(v1)
    for a in new:
        assert a.gloss and a.forms and a.keyword in a.forms, a.keyword
        assert a.axis and a.bucket and a.source in {"holistic-bias-v1.1", "fairstream"}, a.keyword
    for a in v1:
        assert (a.axis, a.bucket, a.source, a.dispreferred) == (None, None, None, False)
    for kw in ("gay", "lesbian", "transgender", "elderly", "middle-aged", "atheist", "sikh", "immigrant",
               "refugee", "native-american", "obese", "working-class", "conservative", "veteran"):  # fmt: skip
        assert kw in v2, kw
    assert v2["retarded"].dispreferred and v2["oriental"].dispreferred and not v2["gay"].dispreferred
    again = Taxonomy.from_dict(v2.to_dict())
    assert list(again) == list(v2)  # provenance round-trips


def test_no_form_belongs_to_two_keywords():
    v2 = Taxonomy.load("taxonomy-v2")
    seen: dict[str, str] = {}
    for a in v2:
        for form in a.forms:
            assert form not in seen, (form, a.keyword, seen.get(form))
            seen[form] = a.keyword
    assert seen.keys() == v2.forms.keys()


def test_multi_word_forms_match_whole_and_longest():
    det = KeywordDetector(Taxonomy.load("taxonomy-v2"))
    text = "Native Americans, African-American voters, a middle-aged veteran and working class gays."
    assert [(m.surface, m.keyword) for m in det.find(text)] == [
        ("Native Americans", "native-american"),
        ("African-American", "african-american"),
        ("middle-aged", "middle-aged"),
        ("veteran", "veteran"),
        ("working class", "working-class"),
        ("gays", "gay"),
    ]
    with pytest.raises(TaxonomyError, match="words joined by single spaces"):
        Taxonomy.from_dict(
            {"name": "t", "classes": {"age": [{"keyword": "old", "gloss": "x", "forms": ["old  man"]}]}}
        )


def test_cli_prints_v2(capsys):
    assert main(["taxonomy", "--taxonomy", "taxonomy-v2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("taxonomy-v2: 16 classes,") and "political ideology (" in out


def test_hits_tool_on_a_tiny_corpus(tmp_path: Path):
    corpus = tmp_path / "tiny.jsonl.gz"
    docs = [
        {"id": "a", "text": "The elderly refugees and the young gay couple met a Sikh family."},
        {"id": "b", "text": "An old tree. The Muslim community welcomed immigrants."},
        {"id": "c", "text": "Nothing to see here."},
    ]
    with gzip.open(corpus, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(d) + "\n" for d in docs)
    out = tmp_path / "hits.json"
    assert hits_main(["--taxonomy", "taxonomy-v2", "--corpus", str(corpus), "--json", str(out)]) == 0
    rep = json.loads(out.read_text())
    kws = rep["keywords"]
    assert {k: kws[k]["hits"] for k in ("elderly", "refugee", "young", "gay", "sikh", "old", "muslim", "immigrant")} == {
        "elderly": 1, "refugee": 1, "young": 1, "gay": 1, "sikh": 1, "old": 1, "muslim": 1, "immigrant": 1,
    }  # fmt: skip
    assert kws["gay"]["new"] and not kws["muslim"]["new"] and kws["muslim"]["baseline_hits"] == 1
    mb = sum(len(d["text"].encode()) for d in docs) / 1e6
    assert kws["gay"]["hits_per_mb"] == round(1 / mb, 3)
    assert rep["totals"]["taxonomy-v2"]["mentions"] == 8 and rep["totals"]["taxonomy-v1"]["mentions"] == 1
    assert rep["classes"]["age"]["hits"] == 3 and rep["docs"] == 3
