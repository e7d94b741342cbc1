"""The release: the sdist and wheel build, pass twine's checks, stay small, and install and filter.

Built with ``python -m build`` from a copy of the repository's tracked files (what a clean clone
holds); the wheel is installed with no extras into a fresh virtual environment, whose
``fairstream filter`` must write the same bytes as this checkout's on the sample corpus.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from fairstream.cli import main, sample_corpus_path
from fairstream.models.names import RETIRED_MODELS, shipped_model_names

ROOT = Path(__file__).resolve().parents[1]
WHEEL_LIMIT = 50_000_000  # bytes: PyPI's default upload limit is 100 MB; the goal is half


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An sdist and a wheel built from the tracked files (what a clean clone holds, no stray local files)."""
    base = tmp_path_factory.mktemp("release")
    src = base / "src"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():  # as the working tree has it: the test builds what is tested
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((ROOT / name).read_bytes())
    out = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(src)],
        check=True,
        capture_output=True,
    )
    return {"sdist": next(out.glob("*.tar.gz")), "wheel": next(out.glob("*.whl"))}


def test_sdist_and_wheel_pass_twine_check(dists: dict[str, Path]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dists["sdist"]), str(dists["wheel"])],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0 and run.stdout.count("PASSED") == 2, run.stdout + run.stderr


def test_the_wheel_is_small_and_ships_the_default_and_its_members_only(dists: dict[str, Path]) -> None:
    wheel = dists["wheel"]
    assert wheel.stat().st_size <= WHEEL_LIMIT, wheel.stat().st_size
    names = zipfile.ZipFile(wheel).namelist()
    models = {n.split("/")[3] for n in names if n.startswith("fairstream/data/models/")}
    assert models == set(shipped_model_names()) == {"joint-v6-cascade", "joint-v6", "joint-v7-fast"}
    assert not models & set(RETIRED_MODELS)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not [n for n in names if n.startswith(("export/", "tests/", "benchmarks/"))]
    with tarfile.open(dists["sdist"]) as sdist:
        assert any(m.name.endswith("/LICENSE") for m in sdist.getmembers())


@pytest.mark.slow
def test_the_wheel_installs_with_no_extras_and_filters_like_the_checkout(
    dists: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    install = subprocess.run([*pip, str(dists["wheel"])], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    args = ["filter", str(sample_corpus_path()), "--no-progress", "--no-report"]
    run = subprocess.run(
        [str(venv / "bin" / "fairstream"), *args, "-o", str(tmp_path / "installed")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "documents: 300 in = " in run.stdout
    # the installed package is the wheel's, not this checkout
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import fairstream; print(fairstream.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    ).stdout
    assert str(venv) in where
    assert main([*args, "-o", str(tmp_path / "checkout")]) == 0
    installed = (tmp_path / "installed" / "data" / "sample_corpus.jsonl").read_bytes()
    assert installed == (tmp_path / "checkout" / "data" / "sample_corpus.jsonl").read_bytes()
    stats = json.loads((tmp_path / "installed" / "stats.json").read_text())
    assert (
        stats["counters"]["docs_in"]
        == 300
        == stats["counters"]["docs_out"] + stats["counters"]["docs_dropped"]
    )
