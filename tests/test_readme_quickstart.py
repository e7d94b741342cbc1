"""The README's quick start, its length, and the model quality it quotes.

The quick start is exactly two commands that need nothing installed beforehand: ``./run.sh demo`` and
``./run.sh test``. ``./run.sh test`` is this test suite (it cannot run inside it; ``.ci/run`` runs it),
and the command ``./run.sh demo`` runs is the block of docs/report.md that tests/test_docs_blocks.py runs.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from fairstream.models.card import model_quality
from fairstream.models.runtime import default_model_dir
from tests.test_docs_blocks import blocks
from tests.test_readme_adapters import snippets

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def test_quick_start_is_the_two_run_sh_commands():
    lang, code = snippets()["quickstart"]
    assert lang == "bash"
    commands = [line.split("#")[0].strip() for line in code.strip().splitlines()]
    assert commands == ["./run.sh demo", "./run.sh test"]
    run_sh = (ROOT / "run.sh").read_text(encoding="utf-8")
    assert run_sh.startswith("#!/usr/bin/env bash") and "python3 -m venv" in run_sh  # it sets up its own venv
    assert re.search(r"^  demo\)$", run_sh, re.M) and re.search(r"^  test\)$", run_sh, re.M)
    assert "./run.sh test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_run_sh_test_installs_what_builds_the_docs():
    run_sh = (ROOT / "run.sh").read_text(encoding="utf-8")
    test_case = run_sh[run_sh.index("  test)") :]
    assert re.search(r'setup "[^"]*\bdev\b', test_case) and "pytest" in test_case
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["dev"]
    names = {re.split(r"[<>=\[]", req, maxsplit=1)[0] for req in dev}
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= names


def test_the_demo_command_is_the_one_the_report_page_runs():
    run_sh = (ROOT / "run.sh").read_text(encoding="utf-8")
    demo = run_sh[run_sh.index("  demo)") : run_sh.index(";;", run_sh.index("  demo)"))]
    command = re.search(r'exec "\$VENV/bin/fairstream" (.*?) "\$@"', demo.replace("\\\n", " "), re.S)
    assert command is not None
    demo_argv = ["fairstream", *shlex.split(command.group(1))]
    page = [b for b in blocks(ROOT / "docs" / "report.md") if b.marker is None]
    assert any(shlex.split(b.code) == demo_argv for b in page), demo_argv


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, len(lines)
    for heading in (
        "## Quick start",
        "## A pretraining input pipeline",
        "## Ways in",
        "## What the filter guarantees",
    ):
        assert any(line.startswith(heading) for line in lines), heading


def test_readme_links_to_docs_pages_that_exist():
    text = README.read_text(encoding="utf-8")
    links = set(re.findall(r"\]\((docs/[^)#]*)\)", text))
    assert links and all((ROOT / link).exists() for link in links), links
    for page in ("cap", "global-cap", "models", "performance", "builders", "finetune", "report", "taxonomy"):
        assert f"docs/{page}.md" in links, page


def test_quoted_quality_is_the_range_over_every_unseen_set():
    """README and docs/models.md quote the default's card: the range of each metric, and every set."""
    quality = model_quality(default_model_dir())
    assert quality is not None and "Every unseen labelled set" in quality["source"]
    names = {
        "regard_macro_f1": "regard macro-F1",
        "negative_f1": "negative-regard F1",
        "wsd_kappa": "WSD kappa",
    }
    sizes = [s["pairs"] for s in quality["sets"]]
    for path in (README, ROOT / "docs" / "models.md"):
        text = " ".join(path.read_text(encoding="utf-8").split())
        for key, name in names.items():
            low, high = quality["range"][key]
            assert f"{name} **{low:.2f}-{high:.2f}**" in text, (path.name, name)
        assert f"six sets of {min(sizes):,}-{max(sizes):,} pairs" in text and len(sizes) == 6
    models = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([^|]+) \| (\d+) \| ([\d.]+) \|", models, re.M)
    table = [(name, int(pairs), float(f1)) for name, pairs, f1 in rows]
    assert table[: len(sizes)] == [(s["set"], s["pairs"], s["regard_macro_f1"]) for s in quality["sets"]]
    assert [f1 for *_, f1 in table[: len(sizes)]] == sorted(
        f1 for *_, f1 in table[: len(sizes)]
    )  # weakest first
