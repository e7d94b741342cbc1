"""Every fenced code block of README.md and docs/*.md runs in a test, or says why not.

A block's marker is an HTML comment on the line before it (docs/development.md lists them):
``readme-test: NAME`` (run by a test of its own, tests/test_readme_*.py), ``same-as-readme: NAME``
(equal to the README's block NAME), ``slow: REASON`` (run with the slow tests), ``not-run: REASON``.
Blocks without a marker, and the slow ones, run here: the blocks of a page in order, in one folder
of that page (``shards/*.jsonl``: the first 120 sample-corpus documents in three shards; the
repository's ``fairstream/``, ``export/`` and git; a ``../shared`` whose corpus files hold their
first 40 documents), ``bash`` in ``bash -euo pipefail`` with the venv's commands first on PATH,
``python`` in a namespace of its own, ``json`` parsed.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKER = re.compile(r"^<!--\s*(readme-test|same-as-readme|not-run|slow):\s*(.*?)\s*-->$")
# README blocks run by their own tests (tests/test_readme_*.py); each name is checked there too
DEDICATED = {"quickstart", "pipeline", "torch", "hf", "datatrove", "ray", "cli"}
CORPUS_DOCS = 40  # documents kept of each ../shared corpus file: the commands, not the corpus, are tested


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: str | None
    note: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, each with the marker on the line before it."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start, lang = i, lines[i][3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            m = MARKER.match(before.strip())
            code = "\n".join(lines[start + 1 : end]) + "\n"
            found.append(
                Block(path, start + 1, lang, code, m.group(1) if m else None, m.group(2) if m else "")
            )
            i = end
        i += 1
    return found


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def readme_snippets() -> dict[str, Block]:
    return {b.note: b for b in blocks(README) if b.marker == "readme-test"}


def runnable(b: Block) -> bool:
    return b.marker in (None, "slow")


# -- the folder a page's blocks run in ----------------------------------------------------------------


def _slice_gz(src: Path, dst: Path, n: int) -> None:
    with gzip.open(src, "rt", encoding="utf-8") as f, gzip.open(dst, "wt", encoding="utf-8") as out:
        out.writelines(islice(f, n))


@pytest.fixture(scope="session")
def shared_slice(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<base>/shared``: ../shared with each corpus file cut to its first CORPUS_DOCS documents."""
    base = tmp_path_factory.mktemp("docs-blocks")
    data = base / "shared" / "data"
    data.mkdir(parents=True)
    for entry in (shared_dir / "data").iterdir():
        if entry.name != "corpus":
            (data / entry.name).symlink_to(entry)
    (data / "corpus").mkdir()
    for src in (shared_dir / "data" / "corpus").iterdir():
        if src.name.endswith(".jsonl.gz"):
            _slice_gz(src, data / "corpus" / src.name, CORPUS_DOCS)
        else:
            (data / "corpus" / src.name).symlink_to(src)
    return base


class PageRun:
    """One page's folder; runs its blocks in order, each at most once."""

    def __init__(self, path: Path, base: Path, docs: list[dict]) -> None:
        self.blocks = blocks(path)
        self.dir = base / re.sub(r"\W", "-", path.stem)
        self.dir.mkdir()
        for name in ("fairstream", "export", "benchmarks", ".git", "pyproject.toml"):
            (self.dir / name).symlink_to(ROOT / name)
        (self.dir / "shards").mkdir()
        for k in range(3):
            part = docs[k * 40 : (k + 1) * 40]
            (self.dir / "shards" / f"part-{k}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in part))
        self.done: set[int] = set()

    def run_upto(self, block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
        for b in self.blocks:
            if b.line > block.line:
                break
            if b.line not in self.done and (b.line == block.line or b.marker is None):
                self.done.add(b.line)
                run_block(b, self.dir, monkeypatch)


def run_block(b: Block, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets.config

    monkeypatch.chdir(folder)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(folder / "hf-cache"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", folder / "hf-cache")
    if b.lang == "python":
        exec(compile(b.code, b.id, "exec"), {"__name__": f"docs_block_{b.line}"})
    elif b.lang == "bash":
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        env["MPLBACKEND"] = "Agg"
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", b.code],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, (
            f"{b.id} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    elif b.lang == "json":
        json.loads(b.code)
    else:
        pytest.fail(f"{b.id}: no runner for a {b.lang or 'plain'} block; mark it not-run with the reason")


@pytest.fixture(scope="session")
def page_runs(shared_slice: Path) -> dict[Path, PageRun]:
    return {}


def _params() -> list:
    out = []
    for b in all_blocks():
        if runnable(b):
            marks = [pytest.mark.slow] if b.marker == "slow" else []
            out.append(pytest.param(b, id=b.id, marks=marks))
    return out


@pytest.mark.parametrize("block", _params())
def test_block_runs(block: Block, page_runs, shared_slice: Path, monkeypatch):
    if block.path not in page_runs:
        with (ROOT / "fairstream" / "data" / "sample_corpus.jsonl").open(encoding="utf-8") as f:
            docs = [json.loads(line) for line in islice(f, 120)]
        page_runs[block.path] = PageRun(block.path, shared_slice, docs)
    page_runs[block.path].run_upto(block, monkeypatch)


# -- every block is run, or says why not ---------------------------------------------------------------


def test_every_block_is_run_or_marked_with_a_reason():
    found = all_blocks()
    assert len(found) > 20
    for b in found:
        assert b.marker is not None or b.lang in ("python", "bash", "json"), (
            f"{b.id}: unmarked {b.lang!r} block"
        )
        if b.marker in ("not-run", "slow"):
            assert len(b.note) > 15, f"{b.id}: {b.marker} needs its reason"
    params = {p.values[0].id for p in _params()}
    others = {b.id for b in found if b.marker in ("readme-test", "same-as-readme", "not-run")}
    assert params | others == {b.id for b in found} and not params & others


def test_readme_blocks_are_each_run_by_their_own_test():
    readme = blocks(README)
    assert all(b.marker == "readme-test" for b in readme), [b.id for b in readme if b.marker != "readme-test"]
    assert [b.note for b in readme] == list(readme_snippets()) and set(readme_snippets()) == DEDICATED


def test_docs_copies_of_readme_blocks_are_the_same():
    snippets = readme_snippets()
    copies = [b for p in pages()[1:] for b in blocks(p) if b.marker == "same-as-readme"]
    assert {b.note for b in copies} == DEDICATED - {"quickstart"}
    for b in copies:
        assert (b.lang, b.code) == (snippets[b.note].lang, snippets[b.note].code), b.id
