from __future__ import annotations

import math
from pathlib import Path

import pytest

from fairstream.stats import (
    IDENTITY_MAP,
    AttributeMatcher,
    CooccurrenceCounts,
    SeegullError,
    format_seegull_table,
    load_seegull,
    recall_at_k,
    seegull_recall_table,
    shared_nationalities,
)
from fairstream.taxonomy import Taxonomy

V2_HEADER = (
    "identity,attribute,region_stereo,region_nonstereo,region_unsure,NA_stereo,NA_nonstereo,NA_unsure,"
    "Annotation1,Annotation2,Annotation3,mean offensiveness_score\n"
)
V1_HEADER = (
    ",,Stereotype Ratings within Region,,,Stereotype Ratings from North America,,,Offensiveness Annotations,,,\n"
    "identity,attribute,region_stereo,region_nonstereo,region_unsure,NA_stereo,NA_nonstereo,us_unsure,"
    "Annotation1,Annotation2,Annotation3,mean offensiveness_score\n"
)


def row(identity: str, attribute: str, score: float) -> str:
    return f"{identity},{attribute},3,0,0,3,0,0,0,0,0,{score}\n"


TINY_ROWS = [
    ("Swedes", "reserve", -1),  # lemmatised (v2): matches the corpus word "reserved"
    ("Swedes", "tall", -1),
    ("Swedes", "boring", 1),
    ("Swedes", "cold", 0.333),  # neither positive (-1) nor negative (>= 1)
    ("Swedes", "good at hockey", -1),  # multi-word: skipped by default
    ("Greeks", "hospitable", -1),
    ("Greeks", "lazy", 2),
    ("French", "romantic", -1),
    ("French", "arrogant", 2.5),
    ("Zimbabwean", "friendly", -1),  # not a taxonomy nationality
]


@pytest.fixture
def tiny_seegull(tmp_path: Path) -> Path:
    (tmp_path / "stereotypes_global_v2.csv").write_text(
        V2_HEADER + "".join(row(*r) for r in TINY_ROWS), encoding="utf-8"
    )
    v1_rows = [
        *TINY_ROWS,
        ("3South Korean", "hard-working", -1),
        ("Greeks", "hospitable", -1),
        ("Greeks", "", 1),
    ]
    (tmp_path / "stereotypes_global_v1.csv").write_text(
        V1_HEADER + "".join(row(*r) for r in v1_rows), encoding="utf-8"
    )
    return tmp_path


# -- loader ------------------------------------------------------------------------------------
def test_loader_handles_both_versions(tiny_seegull: Path):
    v2 = load_seegull(tiny_seegull, "v2")
    assert len(v2) == len(TINY_ROWS)
    assert (v2[0].identity, v2[0].attribute, v2[0].offensiveness, v2[0].polarity) == (
        "Swedes",
        "reserve",
        -1.0,
        "positive",
    )
    assert [s.polarity for s in v2[2:4]] == ["negative", None]
    v1 = load_seegull(tiny_seegull, "v1")  # two-row header, typo'd identity, empty attribute skipped
    assert len(v1) == len(TINY_ROWS) + 2
    assert v1[len(TINY_ROWS)].identity == "South Korean"
    with pytest.raises(ValueError, match="version='v3'"):
        load_seegull(tiny_seegull, "v3")
    with pytest.raises(SeegullError, match=r"stereotypes_global_v2\.csv not found"):
        load_seegull(tiny_seegull / "nowhere")


def test_loader_on_the_shared_data(shared_dir: Path):
    folder = shared_dir / "data" / "bias" / "seegull"
    v1, v2 = load_seegull(folder, "v1"), load_seegull(folder, "v2")
    assert len(v1) == 7130 and len(v2) == 6781  # data rows per MANIFEST.tsv
    assert (v1[0].identity, v1[0].attribute, v1[0].offensiveness) == ("Northern Irish", "terrorist", 4.0)
    assert "South Korean" in {s.identity for s in v1} and "3South Korean" not in {s.identity for s in v1}
    # taxonomy-v2's nationalities: v1's 63 and american, guatemalan
    nationalities = [a.keyword for a in Taxonomy.load("taxonomy-v2").classes["nationality"]]
    shared = shared_nationalities(nationalities, {s.identity for s in v2})
    for kw, names in IDENTITY_MAP.items():
        assert set(shared[kw]) <= set(names), kw
    assert shared["swedish"] == ["Swedes"] and shared["dutch"] == ["Netherlanders"]
    assert shared["french"] == ["French"]  # case-insensitive match for the rest
    assert shared["afghan"] == ["Afghans"] and shared["american"] == ["United States"]
    assert shared_nationalities(["afghan"], {s.identity for s in v1})["afghan"] == ["Afghanis", "Afghans"]
    assert "cuban" not in shared and "dominican" not in shared  # not in SeeGULL
    assert len(shared) == len(nationalities) - 2


# -- matching and recall@k on hand-made rankings -------------------------------------------------
def test_attribute_matching():
    m = AttributeMatcher()
    assert m.attribute_key("reserve") == m.attribute_key("reserved") == (m.word_key("reserved"),)
    assert m.attribute_key("hard-working") == (m.word_key("hardworking"),)
    assert m.attribute_key("good at hockey") == ("good", "hockey")
    assert m.attribute_key("not tall") == ("not", "tall")
    f = AttributeMatcher(CooccurrenceCounts(prune_every=None))  # with the counts' stopwords
    assert f.attribute_key("good at hockey") == ("good", "hockey")
    assert f.attribute_key("the best") == ("best",)
    with pytest.raises(ValueError, match="multiword='some'"):
        AttributeMatcher(multiword="some")  # type: ignore[arg-type]


def test_recall_at_k_by_hand():
    rankings = {
        "Swedes": ["reserved", "cold", "tall", "good"],
        "Greeks": ["lazy", "hospitable"],
        "Ignored": ["x"],  # no stereotypes: left out
    }
    stereotypes = {
        "Swedes": ["reserve", "tall", "blond", "good at hockey", "not tall"],
        "Greeks": ["hospitable"],
        "Nowhere": ["friendly"],  # no ranking: left out
    }
    res, skipped = recall_at_k(rankings, stereotypes, ks=(1, 2, 3))
    assert skipped == 2  # "good at hockey", "not tall"
    # Swedes: reserv, tall, blond (3); Greeks: hospit (1)
    assert (res[1].hits, res[1].total) == (1, 4)
    assert res[1].micro == pytest.approx(1 / 4) and res[1].macro == pytest.approx((1 / 3 + 0) / 2)
    assert (res[2].hits, res[2].micro, res[2].macro) == (
        2,
        pytest.approx(2 / 4),
        pytest.approx((1 / 3 + 1) / 2),
    )
    assert (res[3].hits, res[3].micro, res[3].macro) == (
        3,
        pytest.approx(3 / 4),
        pytest.approx((2 / 3 + 1) / 2),
    )
    assert res[3].identities == 2

    # multi-word policies: "good at hockey" needs good AND hockey ("all") or either ("any");
    # "not tall" never matches "tall" alone
    res_all, _ = recall_at_k(rankings, stereotypes, ks=(4,), matcher=AttributeMatcher(multiword="all"))
    res_any, _ = recall_at_k(rankings, stereotypes, ks=(4,), matcher=AttributeMatcher(multiword="any"))
    assert (res_all[4].hits, res_all[4].total) == (3, 6)  # reserve, tall, hospitable
    assert (res_any[4].hits, res_any[4].total) == (4, 6)  # + good at hockey


def test_recall_is_nan_without_stereotypes():
    res, _ = recall_at_k({"A": ["x"]}, {"A": ["two words"]}, ks=(1,))
    assert res[1].total == 0 and math.isnan(res[1].micro) and math.isnan(res[1].macro)


# -- the full table on tiny counts -----------------------------------------------------------------
NAT = "nationality"


def tiny_counts() -> CooccurrenceCounts:
    """swedish: reserved/tall (positive), boring (negative); greek: lazy (negative), hospitable (positive);
    french: romantic (positive), arrogant (negative); "quiet" in every sentence."""
    c = CooccurrenceCounts(prune_every=None)
    data = [
        ("swedish", "positive", "reserved tall quiet"),
        ("swedish", "positive", "reserved tall quiet"),
        ("swedish", "negative", "boring quiet"),
        ("greek", "negative", "lazy quiet"),
        ("greek", "negative", "lazy quiet"),
        ("greek", "positive", "hospitable quiet"),
        ("french", "negative", "arrogant quiet"),
        ("french", "positive", "romantic quiet"),
        ("french", "positive", "romantic quiet"),
    ]
    for kw, regard, text in data:
        c.add_sentence(text.split(), [(NAT, kw, regard)])
    return c


def test_seegull_recall_table_by_hand(tiny_seegull: Path):
    rows = seegull_recall_table(
        tiny_counts(),
        tiny_seegull,
        ks=(1, 2, 3),
        version="v2",
        min_word_count=1,
        min_attribute_sentences=1,
        min_attribute_share=1 / 3,
    )
    by = {(r["stereotypes"], r["score"]): r for r in rows}
    assert list(by) == [
        ("positive", "eq2 (r=positive)"),
        ("positive", "eq1"),
        ("negative", "eq2 (r=negative)"),
        ("negative", "eq1"),
    ]
    pos2, pos1 = by[("positive", "eq2 (r=positive)")], by[("positive", "eq1")]
    neg2, neg1 = by[("negative", "eq2 (r=negative)")], by[("negative", "eq1")]
    # positive stereotypes: Swedes {reserve, tall}, Greeks {hospitable}, French {romantic}
    assert pos2["n_stereotypes"] == 4 and pos2["nationalities"] == 3 and pos2["skipped_multiword"] == 1
    # eq. 2 (pos) top-1: reserved, hospitable, romantic -> 3/4; top-2 adds tall
    assert (pos2["recall@1"], pos2["recall@2"]) == (pytest.approx(3 / 4), 1.0)
    # eq. 1 top-1: swedish reserved (ties at 3 -> more frequent), greek lazy (miss), french romantic -> 2/4
    assert (pos1["recall@1"], pos1["recall@2"]) == (pytest.approx(2 / 4), 1.0)
    # negative: Swedes {boring}, Greeks {lazy}, French {arrogant}; eq. 2 (neg) finds all at k=1
    assert neg2["n_stereotypes"] == 3 and neg2["recall@1"] == 1.0
    # eq. 1: swedish reserved, tall, boring -> k=3; greek lazy -> k=1; french romantic, arrogant -> k=2
    assert (neg1["recall@1"], neg1["recall@2"], neg1["recall@3"]) == (
        pytest.approx(1 / 3),
        pytest.approx(2 / 3),
        1.0,
    )
    assert neg1["hits@2"] == 2 and pos2["in_vocabulary"] == 4
    assert pos2["version"] == "v2" and "greek" not in pos2["nationalities_missing"]
    table = format_seegull_table(rows)
    assert (
        table.splitlines()[0]
        == "| stereotypes | score | nationalities | stereotypes (n) | in V | R@1 | R@2 | R@3 |"
    )
    assert "| positive | eq2 (r=positive) | 3 | 4 | 4 | 75.0 | 100.0 | 100.0 |" in table
    assert "| negative | eq1 | 3 | 3 | 3 | 33.3 | 66.7 | 100.0 |" in table


def test_seegull_recall_table_v1_and_missing_nationalities(tiny_seegull: Path):
    rows = seegull_recall_table(
        tiny_counts(),
        tiny_seegull,
        ks=(1,),
        version="v1",
        min_word_count=1,
        min_attribute_sentences=1,
        min_attribute_share=1 / 3,
    )
    pos2 = rows[0]
    # v1 repeats (Greeks, hospitable): counted once; South Korean has no counts -> listed as missing
    assert pos2["n_stereotypes"] == 4
    assert "korean" in pos2["nationalities_missing"]
    assert "Left out (too few sentences): " in format_seegull_table(rows)
    assert format_seegull_table([]) == "_no SeeGULL rows_\n"
