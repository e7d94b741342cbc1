"""One source of truth: on a real run of the sample corpus (shipped model), the CLI summary, the
report and the co-occurrence counts show exactly the numbers of stats.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fairstream.cli import main, sample_corpus_path
from fairstream.core.schema import REGARD_LABELS as REGARDS
from fairstream.stats import CooccurrenceCounts
from fairstream.summary import attribute_rows, estimate_cell, not_negative_cell, pct


@pytest.mark.slow
def test_cli_summary_report_and_counts_equal_stats_json(tmp_path: Path, capsys):
    out = tmp_path / "run"
    args = [
        "filter",
        str(sample_corpus_path()),
        "-o",
        str(out),
        "--no-progress",
        "--min-attribute-share",
        "0.1",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    stats = json.loads((out / "stats.json").read_text())
    c = stats["counters"]
    before = CooccurrenceCounts.load(out / "counts_before.json")
    after = CooccurrenceCounts.load(out / "counts_after.json")
    assert stats["run"]["cap"] == 0.01 and stats["run"]["warmup"] == 100

    # counts: documents and sentences in and out
    assert before.totals["documents"] == c["docs_in"] - sum(stats["skipped"].values())
    assert after.totals["documents"] == c["docs_out"] < c["docs_in"]
    assert before.totals["sentences_seen"] == c["sentences_candidate"]
    assert after.totals["sentences_seen"] == c["sentences_candidate"] - c["sentences_dropped"]
    # counts: every attribute, by regard, before and after
    in_counts = {kw: cls for cls, kw in before.attributes()}
    rows = attribute_rows(stats)
    assert {r.keyword for r in rows} == set(in_counts)
    for kw, a in stats["attributes"].items():
        if not a["person_sentences"]:
            continue
        cls = in_counts[kw]
        b, f = before.regard_distribution(cls, kw), after.regard_distribution(cls, kw)
        assert {r: b[r] for r in REGARDS} == a["before"] and b["unknown"] == 0, kw
        assert {r: f[r] for r in REGARDS} == a["after"], kw
        assert sum(b.values()) - sum(f.values()) == a["dropped"], kw

    # the report: headline and every attribute's row
    md = (out / "report" / "report.md").read_text(encoding="utf-8")
    assert (
        f"Kept {c['docs_out']:,} of {c['docs_in']:,} documents; dropped {c['sentences_dropped']:,} of "
        f"{c['sentences_candidate']:,} judged sentences" in md
    )
    est = stats["estimates"]
    for r in rows:
        e = est["attributes"][r.keyword]
        cells = [r.keyword, r.person_sentences, pct(r.negative_before, r.person_sentences), r.kept,
                 pct(r.negative_after, r.kept), r.dropped, estimate_cell(e["before"]),
                 estimate_cell(e["after"]), not_negative_cell(e["dropped"])]  # fmt: skip
        assert "| " + " | ".join(map(str, cells)) + " | " in md, r
    # the estimates: one per attribute, over the same sentences; the model-judged shares are the rows'
    assert set(est["attributes"]) == {r.keyword for r in rows}
    for r in rows:
        e = est["attributes"][r.keyword]
        assert (e["before"]["sentences"], e["after"]["sentences"], e["dropped"]["sentences"]) == (
            r.person_sentences, r.kept, r.dropped,
        )  # fmt: skip
        assert e["before"]["model_negative_share"] == round(r.negative_before / r.person_sentences, 6)
    flat_md = " ".join(md.split())
    assert f"from the model's calibrated probabilities. Calibration: {est['calibration']}." in flat_md or (
        not est["calibrated"]
        and f"from uncalibrated model probabilities. Calibration: {est['calibration']}." in flat_md
    )

    # the CLI: headline, and each row it prints; every attribute above its cap is printed
    assert f"documents: {c['docs_in']} in = {c['docs_out']} out" in printed
    assert (
        f"{c['sentences_candidate']} with person keywords judged, {c['sentences_dropped']} dropped" in printed
    )
    by_kw = {r.keyword: r for r in rows}
    shown = re.findall(
        r"^  (\w+)(\*?)  +(\d+)  +(\d+)  +(\d+)  +(\S+)  +(\S+)  +(.+?)  +(\S.*)$", printed, re.M
    )
    assert shown
    for kw, star, n, kept, dropped, neg_b, neg_a, est_after, not_neg in shown:
        r, e = by_kw[kw], est["attributes"][kw]
        assert (bool(star), int(n), int(kept), int(dropped), neg_b, neg_a, est_after, not_neg) == (
            r.over_cap, r.person_sentences, r.kept, r.dropped, pct(r.negative_before, r.person_sentences),
            pct(r.negative_after, r.kept), estimate_cell(e["after"]), not_negative_cell(e["dropped"]),
        )  # fmt: skip
    over = {r.keyword for r in rows if r.over_cap}
    assert over and over <= {kw for kw, *_ in shown}  # the sample corpus has attributes under warm-up
    flat = " ".join(printed.split())
    pooled = est["pooled"]
    assert f"the true negative share after filtering is {estimate_cell(pooled['after'], '%')} pooled" in flat
    assert f"{not_negative_cell(pooled['dropped'])} of {pooled['dropped']['sentences']} dropped" in flat
    assert f"calibration: {est['calibration']}" in flat
    assert set((out / "summary.txt").read_text().splitlines()) <= set(printed.splitlines())  # + time


@pytest.mark.parametrize("granularity", ["sentence", "document"])
def test_counts_equal_stats_json_with_either_granularity(
    granularity: str, tiny_model_dir: Path, tmp_path: Path
):
    """The co-occurrence counts count what the stream counts: documents out, sentences per regard."""
    out = tmp_path / granularity
    args = ["filter", str(sample_corpus_path()), "-o", str(out), "--no-progress", "--no-report",
            "--model", str(tiny_model_dir), "--cap", "0.05", "--granularity", granularity]  # fmt: skip
    assert main(args) == 0
    stats = json.loads((out / "stats.json").read_text())
    c = stats["counters"]
    before = CooccurrenceCounts.load(out / "counts_before.json")
    after = CooccurrenceCounts.load(out / "counts_after.json")
    assert c["docs_dropped"] > 0  # the tiny random model finds many negatives: documents do go
    assert (before.totals["documents"], after.totals["documents"]) == (c["docs_in"], c["docs_out"])
    for cls, kw in before.attributes():
        a = stats["attributes"][kw]
        assert {r: before.sentence_count(cls, kw, r) for r in REGARDS} == a["before"], kw
        assert {r: after.sentence_count(cls, kw, r) for r in REGARDS} == a["after"], kw


def test_global_scope_report_and_counts_equal_stats_json_and_the_plan(tmp_path: Path) -> None:
    """``--cap-scope global``: the report, the co-occurrence counts, stats.json and plan.json agree,
    on small real shards (jsonl, gzip, Parquet) and the shipped model; --no-report writes none."""
    from fairstream.core.config import FilterConfig
    from fairstream.jobs import GlobalCapJob
    from fairstream.summary import GLOBAL_GUARANTEE
    from tests.test_jobs import corpus_docs, write_shards

    shards = write_shards(tmp_path, corpus_docs(48, cue_share=0.5))
    out = tmp_path / "global"
    settings = {"min_attribute_share": 0.1}
    job = GlobalCapJob(
        [shards], out, FilterConfig(cap=0.01), workers=1, progress=False, report_settings=settings
    )
    summary = job.run()
    stats = json.loads((out / "stats.json").read_text())
    plan = json.loads((out / "plan.json").read_text())
    c = stats["counters"]
    before = CooccurrenceCounts.load(out / "counts_before.json")
    after = CooccurrenceCounts.load(out / "counts_after.json")
    assert stats["run"]["cap_scope"] == "global" and stats["run"]["cap"] == 0.01

    # the stream's counters equal pass 3's counts
    assert c["docs_in"] == stats["counts"]["documents"] == 48
    assert (c["docs_out"], c.get("docs_dropped", 0)) == (stats["counts"]["kept"], stats["counts"]["dropped"])
    assert c["sentences_dropped"] == stats["counts"]["sentences_dropped"] > 0
    # counts: documents and sentences in and out
    assert before.totals["documents"] == c["docs_in"] - sum(stats["skipped"].values())
    assert after.totals["documents"] == c["docs_out"]
    assert before.totals["sentences_seen"] == c["sentences_candidate"]
    assert after.totals["sentences_seen"] == c["sentences_candidate"] - c["sentences_dropped"]
    # every attribute, by regard, before and after: counts == stats.json == the plan
    in_counts = {kw: cls for cls, kw in before.attributes()}
    rows = attribute_rows(stats)
    assert (
        {r.keyword for r in rows}
        == set(in_counts)
        == {kw for kw, v in plan["before"].items() if sum(v.values())}
    )
    for r in rows:
        a, cls = stats["attributes"][r.keyword], in_counts[r.keyword]
        assert (
            {g: before.sentence_count(cls, r.keyword, g) for g in REGARDS}
            == a["before"]
            == plan["before"][r.keyword]
        )
        assert (
            {g: after.sentence_count(cls, r.keyword, g) for g in REGARDS}
            == a["after"]
            == plan["kept"].get(r.keyword, dict.fromkeys(REGARDS, 0))  # none kept: not in the plan
        )
        assert not r.over_cap, r  # the global guarantee, small attributes included
    examples = json.loads((out / "examples.json").read_text())["examples"]
    assert examples and all(len(v) <= 3 for v in examples.values())

    # the report: headline, the guarantee, every attribute's row
    md = (out / "report" / "report.md").read_text(encoding="utf-8")
    assert summary["report"] == [str(out / "report" / "report.html"), str(out / "report" / "report.md")]
    assert (
        f"Kept {c['docs_out']:,} of {c['docs_in']:,} documents; dropped {c['sentences_dropped']:,} of "
        f"{c['sentences_candidate']:,} judged sentences" in md
    )
    assert "every attribute within the 1% cap" in md and GLOBAL_GUARANTEE in md
    for r in rows:
        cells = [r.keyword, r.person_sentences, pct(r.negative_before, r.person_sentences), r.kept,
                 pct(r.negative_after, r.kept), r.dropped]  # fmt: skip
        assert "| " + " | ".join(map(str, cells)) + " | " in md, r
    assert "report: " in (out / "summary.txt").read_text()

    # --no-report: a second cap from the same annotations writes neither report nor its counts
    bare = tmp_path / "bare"
    GlobalCapJob(
        [shards], bare, FilterConfig(cap=0.05), workers=1, progress=False, from_annotations=out, report=False
    ).run()
    assert (bare / "stats.json").is_file() and (bare / "data").is_dir()
    assert not any((bare / f).exists() for f in ("report", "counts_before.json", "examples.json"))
    assert "counters" not in json.loads((bare / "stats.json").read_text())
