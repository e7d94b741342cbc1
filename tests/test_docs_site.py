"""The documentation site builds with ``mkdocs build --strict`` and has every page of its nav."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def nav_pages(nav) -> list[str]:
    """The Markdown files named in mkdocs.yml's nav, in order."""
    out: list[str] = []
    for item in nav:
        for value in item.values() if isinstance(item, dict) else [item]:
            out += nav_pages(value) if isinstance(value, list) else [value]
    return out


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        pytest.skip("mkdocs / mkdocstrings are not installed: pip install -e '.[dev]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return out


def test_every_docs_page_is_in_the_nav_and_built(site: Path):
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = nav_pages(config["nav"])
    assert sorted(pages) == sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    for page in pages:
        html = site / ("index.html" if page == "index.md" else f"{page.removesuffix('.md')}/index.html")
        assert html.is_file(), html
    wanted = {
        "cap",
        "global-cap",
        "models",
        "performance",
        "builders",
        "finetune",
        "report",
        "taxonomy",
        "api",
    }
    assert wanted <= {p.removesuffix(".md") for p in pages}


def test_api_reference_is_generated_from_the_docstrings(site: Path):
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in (
        "FilterConfig",
        "FilterStep",
        "FairStream",
        "fairstream_map_fn",
        "FairStreamFilter",
        "filter_dataset",
    ):
        assert name in html, name
    assert "state_dict" in html  # members, not only the headings


def test_figures_of_the_report_page_are_in_the_site(site: Path):
    assert (site / "figures" / "corpus-regard-race-ethnicity.png").is_file()
