from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"

if "NLTK_DATA" not in os.environ and (SHARED / "data" / "nltk_data").is_dir():
    os.environ["NLTK_DATA"] = str(SHARED / "data" / "nltk_data")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the tests need ../shared beside the repository")
    return SHARED


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight ONNX model built through the real export path (tests/fixtures/make_tiny_model.py)."""
    from tests.fixtures.make_tiny_model import make

    base = tmp_path_factory.mktemp("tiny-model")
    return make(base / "model", keep_run=base / "run")


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir: Path):
    from fairstream.models.runtime import JointModel

    return JointModel(tiny_model_dir, intra_op_threads=1)


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    """The first 120 documents of the sample corpus (what the README's snippets read from ``shards/``)."""
    from tests.test_readme_adapters import sample_docs

    return sample_docs()


@pytest.fixture
def workdir(docs, tmp_path: Path, monkeypatch) -> Path:
    """A working folder holding ``shards/sample.jsonl`` (``docs``) and its own HF ``datasets`` cache."""
    from tests.test_readme_adapters import make_workdir

    return make_workdir(tmp_path, docs, monkeypatch)
