"""``fairstream taxonomy check``: problems of a taxonomy file, and how its keywords fare on shards."""

from __future__ import annotations

import json
import re
from collections import Counter
from itertools import islice
from pathlib import Path

import pytest

from fairstream.cli import main
from fairstream.core.config import FilterConfig
from fairstream.core.step import FilterStep
from fairstream.detect import KeywordDetector
from fairstream.errors import ShardError
from fairstream.io import sample_corpus_path
from fairstream.models.loader import load_model_for
from fairstream.taxonomy import Taxonomy
from fairstream.taxonomy_check import (
    GLOSS_STARTS_V1,
    KeywordUsage,
    UsageReport,
    check_taxonomy,
    gloss_problem,
    keyword_usage,
    usage_flags,
)

DATA = Path(__file__).resolve().parent.parent / "fairstream" / "data"


def broken_taxonomy() -> dict:
    """One of each problem the checker must report."""
    return {
        "name": "broken",
        "extra_classes": ["age"],
        "classes": {
            "nationality": [
                {
                    "keyword": "american",
                    "gloss": "of American nationality",
                    "forms": ["american", "americans"],
                },
                {"keyword": "mexican", "gloss": "of Mexican nationality", "forms": ["mexican", "mexicans"]},
            ],
            "race/ethnicity": [
                {
                    "keyword": "african",
                    "gloss": "of African race/ethnicity",
                    "forms": ["african", "africans"],
                },
                # "american" also matches inside this multi-word form
                {"keyword": "african-american", "gloss": "of African American race/ethnicity"},
                # duplicate keyword across classes
                {"keyword": "mexican", "gloss": "of Mexican race/ethnicity"},
                # duplicate surface form
                {"keyword": "latino", "gloss": "of Latino race/ethnicity", "forms": ["latino", "mexicans"]},
            ],
            # empty class
            "age": [],
            # bad glosses: a bare noun, a capitalised sentence
            "dietary habits": [
                {"keyword": "thai", "gloss": "cuisine"},
                {"keyword": "vegan", "gloss": "The person eats no animal products."},
            ],
        },
    }


@pytest.mark.parametrize("name", ["taxonomy-v1", "taxonomy-v2"])
def test_check_passes_on_shipped_taxonomies(name, capsys):
    if not (DATA / f"{name}.json").is_file():
        pytest.skip(f"{name} not yet present")
    assert main(["taxonomy", "check", name]) == 0
    out = capsys.readouterr().out
    tax = Taxonomy.from_file(DATA / f"{name}.json")
    assert f"OK: {name}: {len(tax.classes)} classes, {len(tax)} keywords, {len(tax.forms)} forms" in out
    assert not [p for p in check_taxonomy(name) if p.severity == "error"]


def test_v1_has_no_problem_at_all():
    assert check_taxonomy("taxonomy-v1") == []
    # the gloss rule is derived from v1: every gloss starts with one of its words
    assert {a.gloss.split()[0] for a in Taxonomy.default()} == set(GLOSS_STARTS_V1)


def test_broken_file_every_problem_on_its_own_line(tmp_path: Path, capsys):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken_taxonomy()))
    assert main(["taxonomy", "check", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    problems = check_taxonomy(path)
    assert [p.line() for p in problems] == lines[:-1]
    assert lines[-1].endswith("fix the errors before a run")
    kinds = Counter((p.kind, p.attribute_class, p.keyword) for p in problems if p.severity == "error")
    assert kinds == Counter(
        {
            ("duplicate-keyword", "race/ethnicity", "mexican"): 1,
            ("duplicate-form", "race/ethnicity", "latino"): 1,
            ("empty-class", "age", None): 1,
            ("gloss", "dietary habits", "thai"): 1,
            ("gloss", "dietary habits", "vegan"): 1,
        }
    )
    text = "\n".join(lines)
    assert (
        f"{path}: class 'race/ethnicity' keyword 'mexican': duplicate keyword: already a keyword of class 'nationality'"
        in text
    )
    assert "surface form 'mexicans' is also a form of keyword 'mexican'" in text
    assert f"{path}: class 'age': must have a non-empty list of keywords" in text
    assert "gloss 'cuisine' does not complete 'a person ...'" in text
    assert "gloss 'The person eats no animal products.' starts with a capital letter" in text
    # the overlap: which keyword captures which, as the matcher does it
    overlap = [p for p in problems if p.kind == "overlap"]
    assert {p.keyword for p in overlap} == {"american", "african"}
    assert all(
        p.severity == "warning" and "'african-american' -> 'african-american'" in p.problem for p in overlap
    )
    variant = next(p for p in problems if p.kind == "variant")
    assert variant.keyword == "african-american"
    assert "'african-americans' ('african' -> 'african', 'americans' -> 'american')" in variant.problem


def test_overlap_report_agrees_with_the_matcher(tmp_path: Path):
    data = broken_taxonomy()
    del data["classes"]["age"], data["extra_classes"]
    data["classes"]["race/ethnicity"] = data["classes"]["race/ethnicity"][:2]
    data["classes"]["dietary habits"] = [{"keyword": "vegan", "gloss": "who is a vegan"}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    problems = check_taxonomy(path)
    assert {p.severity for p in problems} == {"warning"}
    detector = KeywordDetector(Taxonomy.from_file(path))
    sentence = "Many African-American voters and African-Americans in Chicago, and one American."
    found = [(m.surface, m.keyword) for m in detector.find(sentence)]
    # the longer form takes "African-American"; its plural, not a form of it, splits in two
    assert found == [
        ("African-American", "african-american"),
        ("African", "african"),
        ("Americans", "american"),
        ("American", "american"),
    ]
    assert main(["taxonomy", "check", str(path)]) == 0
    assert main(["taxonomy", "check", str(path), "--strict"]) == 1


def test_invalid_json_and_missing_file(tmp_path: Path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "classes": {')
    assert main(["taxonomy", "check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}: not valid JSON" in out
    assert main(["taxonomy", "check", str(tmp_path / "none.json")]) == 1
    assert "taxonomy file not found" in capsys.readouterr().out


def test_schema_errors_are_the_loaders_and_all_collected(tmp_path: Path):
    data = {
        "name": "x",
        "classes": {
            "religon": [{"keyword": "sikh", "gloss": "who believes in Sikhism"}],
            "religion": [
                {"keyword": "Hindu", "gloss": "who believes in Hinduism"},
                {"keyword": "jewish", "gloss": " "},
                {"keyword": "muslim", "gloss": "who believes in Islam", "colour": "green"},
            ],
        },
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    problems = check_taxonomy(path)
    lines = [p.line() for p in problems]
    assert len(lines) == 4, lines
    assert lines[0].startswith(f"{path}: class 'religon': unknown class 'religon'")
    assert f"{path}: class 'religion' keyword 'Hindu': keyword 'Hindu' must be a lowercase word" in lines[1]
    assert lines[2].startswith(f"{path}: class 'religion' keyword 'jewish': empty gloss")
    assert lines[3].startswith(f"{path}: class 'religion' keyword 'muslim': unknown field(s) ['colour']")


@pytest.mark.parametrize(
    ("gloss", "severity"),
    [
        ("", "error"),
        ("cuisine", "error"),
        ("Who is deaf", "error"),
        ("The person is deaf.", "error"),
        ("a person who is deaf", "error"),
        ("people of Afghan nationality", "error"),
        ("who", "error"),
        ("who is deaf.", "warning"),
        ("who is deaf", None),
        ("of Black race/ethnicity", None),
        ("with a hearing impairment", None),
        ("from a rural area", None),
    ],
)
def test_gloss_rule(gloss, severity):
    problem = gloss_problem(gloss, "deaf")
    assert (problem[2] if problem else None) == severity


# -- shards ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model():
    return load_model_for(FilterConfig())


@pytest.fixture(scope="module")
def shard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shards") / "first40.jsonl"
    with sample_corpus_path().open(encoding="utf-8") as f:
        path.write_text("".join(islice(f, 40)), encoding="utf-8")
    return path


def test_shard_report_agrees_with_the_filters_annotations(shard: Path, model):
    docs = [json.loads(line) for line in shard.read_text(encoding="utf-8").splitlines()]
    tax = Taxonomy.default()
    report = keyword_usage([shard], tax, model=model, max_mentions_per_keyword=10**6)
    assert report.documents == 40 and report.shards == 1
    text_bytes = sum(len(d["text"].encode("utf-8")) for d in docs)
    assert report.text_bytes == text_bytes

    results = FilterStep(FilterConfig(cap=1.0), model=model).process(docs, annotate=True)
    mentions = [m for r in results for s in r.annotation["sentences"] for m in s["mentions"]]
    judged = Counter(m["keyword"] for m in mentions)
    person = Counter(m["keyword"] for m in mentions if m["person"])
    unsure = Counter(m["keyword"] for m in mentions if 0.2 <= m["wsd_score"] <= 0.8)
    hits = Counter(m.keyword for d in docs for m in KeywordDetector(tax).find(d["text"]))
    assert sum(judged.values()) > 50 and sum(hits.values()) > sum(judged.values())
    for u in report.keywords:
        assert u.hits == hits[u.keyword], u
        assert u.hits_per_mb == pytest.approx(hits[u.keyword] / (text_bytes / 1e6))
        assert u.judged == u.candidates == judged[u.keyword], u
        assert u.person == person[u.keyword], u
        assert u.unsure == unsure[u.keyword], u
        if judged[u.keyword]:
            assert u.person_share == pytest.approx(person[u.keyword] / judged[u.keyword])
            assert u.unsure_share == pytest.approx(unsure[u.keyword] / judged[u.keyword])

    capped = keyword_usage([shard], tax, model=model, max_mentions_per_keyword=1)
    for a, b in zip(report.keywords, capped.keywords, strict=True):
        assert (b.hits, b.candidates) == (a.hits, a.candidates)
        assert b.judged == min(1, a.candidates)


def test_cli_shards_mode_table_flags_and_json(shard: Path, tmp_path: Path, capsys):
    out_json = tmp_path / "usage.json"
    argv = ["taxonomy", "check", "taxonomy-v1", str(shard), "--json", str(out_json), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    table = json.loads(out_json.read_text())
    assert table["documents"] == 40 and len(table["keywords"]) == 97
    zero = [k["keyword"] for k in table["keywords"] if k["hits"] == 0]
    assert zero  # 40 documents do not hold every keyword
    for k in table["keywords"]:
        row = re.search(
            rf"^{re.escape(k['attribute_class'])} +{k['keyword']} +(\d+) +([\d.]+) +(\d+) ", out, re.MULTILINE
        )
        assert row is not None, k
        assert (int(row[1]), int(row[3])) == (k["hits"], k["judged"])
        assert float(row[2]) == pytest.approx(k["hits_per_mb"], abs=0.051)
    for kw in zero:
        assert f"keyword {kw!r}: warning: no hits in 40 documents" in out
    assert {f["keyword"] for f in table["flags"]} >= set(zero)
    assert "of 97 keywords look unreliable on 40 documents" in out
    assert main([*argv, "--strict"]) == 1


def test_unreliable_keywords_are_flagged_one_line_each():
    keywords = [
        KeywordUsage("vegan", "dietary habits", hits=40, candidates=40, judged=40, person=30, unsure=20),
        KeywordUsage("black", "race/ethnicity", hits=90, candidates=80, judged=80, person=4, unsure=2),
        KeywordUsage("deaf", "disability", hits=0),
        KeywordUsage("blind", "disability", hits=3, candidates=0),
        KeywordUsage("poor", "economic status", hits=30, candidates=30, judged=30, person=20, unsure=3),
    ]
    report = UsageReport("t", "m", 100, 10**6, 1, keywords, 100, 200)
    flags = {p.keyword: p for p in usage_flags(report, "t.json")}
    assert set(flags) == {"vegan", "black", "deaf", "blind"}
    assert flags["vegan"].kind == "unsure" and "unsure of 50% of 40" in flags["vegan"].problem
    assert flags["black"].kind == "not-person" and "only 5% of 80" in flags["black"].problem
    assert flags["deaf"].kind == "no-hits"
    assert flags["blind"].kind == "not-judged"


def test_argument_errors_name_the_flag(tmp_path: Path, capsys):
    assert main(["taxonomy", "check", "taxonomy-v1", "--max-docs", "0"]) == 2
    assert "--max-docs 0: must be a whole number >= 1" in capsys.readouterr().err
    assert main(["taxonomy", "check", "taxonomy-v1", "--max-mentions-per-keyword", "-1"]) == 2
    assert "--max-mentions-per-keyword -1: must be a whole number >= 1" in capsys.readouterr().err
    assert main(["taxonomy", "check", "taxonomy-v1", "--json", str(tmp_path / "o.json")]) == 2
    assert "--json: the per-keyword table needs shards" in capsys.readouterr().err
    with pytest.raises(ValueError, match="max_docs=0: must be a whole number >= 1"):
        keyword_usage([sample_corpus_path()], Taxonomy.default(), max_docs=0)


def test_taxonomy_without_subcommand_is_unchanged(capsys):
    assert main(["taxonomy"]) == 0
    assert "taxonomy-v1: 10 classes, 97 keywords" in capsys.readouterr().out
    assert main(["taxonomy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "taxonomy-v1"


def test_bad_records_and_progress(tmp_path: Path, model, capsys):
    shard = tmp_path / "bad.jsonl"
    good = "The Muslim volunteers who organised the food bank were warmly thanked by the whole town council last Sunday."
    shard.write_text(json.dumps({"text": good}) + "\nnot json\n" + json.dumps({"id": 3}) + "\n")
    with pytest.raises(ShardError, match=r"bad\.jsonl:2: invalid JSON"):
        keyword_usage([shard], Taxonomy.default(), model=model)
    report = keyword_usage(
        [shard], Taxonomy.default(), FilterConfig(on_error="skip"), model=model, progress=True
    )
    assert report.documents == 2 and len(report.skipped) == 2
    muslim = next(u for u in report.keywords if u.keyword == "muslim")
    assert (muslim.hits, muslim.judged, muslim.person) == (1, 1, 1)
    assert "fairstream taxonomy check: " in capsys.readouterr().err
