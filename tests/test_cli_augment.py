"""The augment, swap-gender and db-index commands end to end on ../shared data."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from fairstream.builders.records import read_records
from fairstream.cli import main
from fairstream.models.runtime import JointModel


@pytest.fixture(scope="module")
def crows_religion(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("crows") / "religion.jsonl"
    with open(shared_dir / "data/bias/crows_pairs/crows_pairs_anonymized.csv", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["bias_type"] == "religion"]
    path.write_text(
        "".join(json.dumps({"id": f"crows-{r['']}", "body": r["sent_more"]}) + "\n" for r in rows)
    )
    return path


def test_augment_cli_producer_parquet(crows_religion: Path, tmp_path: Path, capsys):
    out = tmp_path / "aug.parquet"
    rc = main(
        [
            *("augment", str(crows_religion), "-o", str(out), "--producer", "religion"),
            *("--text-field", "body", "--limit", "40", "--no-progress"),
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    stats = json.loads(printed[: printed.rindex("}") + 1])
    recs = list(read_records(out, "body"))
    originals = [r for r in recs if r["provenance"]["role"] == "original"]
    copies = [r for r in recs if r["provenance"]["role"] == "copy"]
    assert len(originals) == stats["entries"] == 40
    assert len(copies) == stats["copies"] == 4 * stats["entries_with_biaser"] > 0
    assert f"wrote {len(recs)} records to {out}" in printed
    for c in copies:
        p = c["provenance"]
        assert (
            p["builder"] == "substitute"
            and p["version"] == "builders-v1"
            and p["wsd_model"] == JointModel().name
        )
        src = next(o for o in originals if o["id"] == p["source_id"])
        assert c["id"].startswith(src["id"] + "#sub")
        for ch in p["changes"]:
            assert src["body"][ch["start"] : ch["end"]] == ch["from"]


def test_augment_cli_argument_errors(crows_religion: Path, tmp_path: Path, capsys):
    out = str(tmp_path / "x.jsonl")
    assert main(["augment", str(crows_religion), "-o", out]) == 2
    assert "exactly one of --producer CLASS or --biasers FILE" in capsys.readouterr().err
    assert main(["augment", str(crows_religion), "-o", out, "--producer", "religon"]) == 2
    err = capsys.readouterr().err
    assert "--producer 'religon' is not a class" in err and "religion" in err
    assert main(["augment", str(crows_religion), "-o", out, "--producer", "religion"]) == 2
    assert "field 'text' is missing; pass --text-field" in capsys.readouterr().err
    assert (
        main(["augment", str(crows_religion), "-o", out, "--producer", "religion", "--morphism", "upshift"])
        == 2
    )
    assert "--morphism upshift needs --llm-model" in capsys.readouterr().err


def test_swap_gender_cli_with_config(shared_dir: Path, tmp_path: Path, capsys):
    src = shared_dir / "data/bias/winobias/anti_stereotyped_type2.txt.dev"
    inp = tmp_path / "wino.jsonl.gz"
    import gzip

    with gzip.open(inp, "wt") as f:
        for line in src.read_text().splitlines()[:30]:
            num, text = line.split(" ", 1)
            f.write(json.dumps({"id": num, "text": re.sub(r"[\[\]]", "", text).strip()}) + "\n")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"winobias_dir": str(shared_dir / "data/bias/winobias"), "no_names": True}))
    out, report = tmp_path / "swapped.jsonl", tmp_path / "report.json"
    assert (
        main(
            [
                "swap-gender",
                str(inp),
                "-o",
                str(out),
                "--config",
                str(cfg),
                "--report",
                str(report),
                "--no-progress",
            ]
        )
        == 0
    )
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(recs) == 30 and all(r["id"].endswith("#swap") for r in recs)
    stats = json.loads(report.read_text())
    assert stats["entries"] == 30 and stats["swaps_total"] == sum(
        len(r["provenance"]["changes"]) for r in recs
    )
    assert stats["swaps_total"] >= 30  # every WinoBias sentence has a gendered pronoun
    capsys.readouterr()


@pytest.mark.slow  # loads torch, transformers and the MiniLM encoder: about 20 s on 2 busy cores
def test_db_index_cli_two_inputs(crows_religion: Path, shared_dir: Path, tmp_path: Path, capsys):
    out = tmp_path / "db.json"
    rc = main(
        [
            *("db-index", str(crows_religion), str(crows_religion), "--text-field", "body", "--limit", "30"),
            *("--k-max", "3", "--n-comparison", "20", "--bias-type", "religion", "-o", str(out)),
            *("--bias-dir", str(shared_dir / "data/bias"), "--no-progress"),
        ]
    )
    assert rc == 0
    res = json.loads(out.read_text())
    (r,) = res["results"].values()  # the same path twice: one entry
    assert r["n_entries"] == 30 and r["n_comparison"] == 20 and r["k"] in (2, 3)
    assert sum(c["size"] for c in r["clusters"]) == 30
    assert "db-index" in capsys.readouterr().out
    assert main(["db-index", str(crows_religion), "--k-min", "5", "--k-max", "3"]) == 2
    assert "--k-min 5 / --k-max 3" in capsys.readouterr().err
