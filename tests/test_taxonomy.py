from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairstream.errors import TaxonomyError
from fairstream.taxonomy import PAPER_CLASSES, Taxonomy

REQUIRED_NATIONALITIES = [
    "afghan", "argentine", "armenian", "australian", "austrian", "belgian", "brazilian", "bulgarian", "canadian",
    "chilean", "chinese", "colombian", "croatian", "cuban", "danish", "dominican", "egyptian", "french", "german",
    "indian", "iraqi", "japanese", "korean", "mexican", "nigerian", "pakistani", "russian", "ukrainian",
]  # fmt: skip


def test_default_taxonomy_has_paper_shape():
    tax = Taxonomy.default()
    sizes = {cls: len(attrs) for cls, attrs in tax.classes.items()}
    assert sizes == {
        "dietary habits": 2, "disability": 6, "economic status": 2, "fertility status": 2, "gender/sexuality": 5,
        "nationality": 63, "physical traits": 2, "race/ethnicity": 7, "religion": 5, "residence": 3,
    }  # fmt: skip
    assert len(tax) == 97
    assert set(tax.classes) == set(PAPER_CLASSES)
    nationalities = {a.keyword for a in tax.classes["nationality"]}
    assert set(REQUIRED_NATIONALITIES) <= nationalities
    assert tax["afghan"].gloss == "of Afghan nationality"
    assert tax["autistic"].description == "a person who is autistic"
    assert tax.by_form("Muslims").keyword == "muslim"


def test_default_nationalities_come_from_seegull(shared_dir: Path):
    import csv

    rows = list(
        csv.DictReader((shared_dir / "data/bias/seegull/stereotypes_global_v2.csv").open(encoding="utf-8"))
    )
    identities = " ".join(r["identity"].lower() for r in rows)
    extra = {a.keyword for a in Taxonomy.default().classes["nationality"]} - set(REQUIRED_NATIONALITIES)
    # every added nationality is a SeeGULL identity (as adjective or under a demonym such as "Swedes")
    demonyms = {"filipino": "philippine", "dutch": "netherlanders"}
    stems = {kw: demonyms.get(kw, kw[:4]) for kw in extra}
    missing = [kw for kw, stem in stems.items() if stem not in identities]
    assert not missing, missing


def test_round_trip_and_extension():
    tax = Taxonomy.default()
    again = Taxonomy.from_dict(tax.to_dict())
    assert [(a.keyword, a.gloss, a.forms) for a in again] == [(a.keyword, a.gloss, a.forms) for a in tax]
    ext = tax.extended(
        {"extra_classes": ["age"], "classes": {"age": [{"keyword": "elderly", "gloss": "who is elderly"}]}}
    )
    assert len(ext) == 98 and ext["elderly"].attribute_class == "age" and ext["elderly"].forms == ("elderly",)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "t", "classes": {"religion": [{"keyword": "hindu", "gloss": "x"}, {"keyword": "hindu", "gloss": "y"}]}}, "duplicate keyword 'hindu'"),
        ({"name": "t", "classes": {"religion": [{"keyword": "hindu", "gloss": "  "}]}}, "empty gloss"),
        ({"name": "t", "classes": {"religon": [{"keyword": "hindu", "gloss": "x"}]}}, "unknown class 'religon'"),
        ({"name": "t", "classes": {"religion": [{"keyword": "Hindu", "gloss": "x"}]}}, "must be a lowercase word"),
        ({"name": "t", "classes": {"religion": [{"keyword": "hindu", "gloss": "x", "extra": 1}]}}, "unknown field"),
        ({"name": "", "classes": {}}, "'name' must be a non-empty string"),
        ({"name": "t", "classes": {"religion": [{"keyword": "a", "gloss": "x", "forms": ["b"]}]}}, "must be a lowercase word"),
        ({"name": "t", "classes": {"religion": [{"keyword": "jew", "gloss": "x", "forms": ["jews"]},
                                                {"keyword": "jews", "gloss": "y"}]}}, "already a form"),
    ],
)  # fmt: skip
def test_validation_errors_name_the_problem(data, message):
    with pytest.raises(TaxonomyError, match=message):
        Taxonomy.from_dict(data, source="my.json")


def test_file_errors(tmp_path: Path):
    with pytest.raises(TaxonomyError, match="not found"):
        Taxonomy.from_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TaxonomyError, match=r"bad\.json: not valid JSON"):
        Taxonomy.from_file(bad)
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            {
                "name": "mine",
                "classes": {"religion": [{"keyword": "sikh", "gloss": "who believes in Sikhism"}]},
            }
        )
    )
    assert Taxonomy.load(good).name == "mine"
