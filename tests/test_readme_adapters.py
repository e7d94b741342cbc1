"""Every adapter snippet of the README runs as written and keeps exactly the core step's text.

The snippets read ``shards/*.jsonl`` from the working folder: here the first 120 documents of the
sample corpus; the model is the shipped one (batch-invariant, so the adapters' different batch
sizes give the same decisions). HF ``datasets`` caches under the test's own folder, not the user's.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
from itertools import islice
from pathlib import Path

import datasets.config
import pytest

from fairstream.cli import build_parser, main
from fairstream.core import FilterConfig, FilterStep

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SAMPLE_CORPUS = ROOT / "fairstream" / "data" / "sample_corpus.jsonl"
N_DOCS = 120


def snippets() -> dict[str, tuple[str, str]]:
    """``{name: (language, code)}`` of the fenced blocks after ``<!-- readme-test: name -->``."""
    pattern = re.compile(r"<!-- readme-test: (\w+) -->\s*```(\w+)\n(.*?)```", re.S)
    return {name: (lang, code) for name, lang, code in pattern.findall(README.read_text(encoding="utf-8"))}


def sample_docs() -> list[dict]:
    """The first ``N_DOCS`` documents of the sample corpus."""
    with SAMPLE_CORPUS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in islice(f, N_DOCS)]


def make_workdir(path: Path, docs: list[dict], monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make ``path`` the working folder: ``shards/sample.jsonl``, and an HF ``datasets`` cache of its own (``hf-cache/``)."""
    (path / "shards").mkdir()
    (path / "shards" / "sample.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    monkeypatch.chdir(path)
    # datasets reads the variable once, at import (already done): load_dataset reads the config's value
    monkeypatch.setenv("HF_DATASETS_CACHE", str(path / "hf-cache"))  # for processes started here
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", path / "hf-cache")
    # fsspec keeps datatrove's folders by their relative name, resolved in the folder of the first use
    with contextlib.suppress(ImportError):
        from datatrove.io import DataFolder

        DataFolder.clear_instance_cache()
    return path


def core_kept(config: FilterConfig, docs: list[dict]) -> list[str]:
    kept = [r.text for r in FilterStep(config).process(docs) if r.kept]
    assert kept != [d["text"] for d in docs]  # the cap acts on these documents
    return kept


def test_readme_has_one_snippet_per_adapter():
    assert set(snippets()) == {"quickstart", "pipeline", "torch", "hf", "datatrove", "ray", "cli"}


def test_cli_snippet_keeps_the_core_steps_text(docs, workdir, capsys):
    lang, code = snippets()["cli"]
    assert lang == "bash"
    argv = shlex.split(code.strip())
    assert argv[0] == "fairstream"
    assert main(argv[1:]) == 0
    assert "documents:" in capsys.readouterr().out
    kept = [json.loads(line)["text"] for line in (workdir / "out" / "data" / "sample.jsonl").open()]
    config = FilterConfig.from_namespace(build_parser().parse_args(argv[1:]))
    assert config.caps == {"religion": 0.02} and config.lookahead == 128
    assert kept == core_kept(config, docs)


def measured_install_sizes() -> dict[str, int]:
    """``{"fairstream[torch]": MB, "fairstream[torch] (CUDA)": MB, ...}`` as benchmarks/install_sizes.py measured."""
    measured = json.loads((ROOT / "benchmarks" / "results" / "install_sizes.json").read_text())["variants"]
    return {variant: row["mb"] for variant, row in measured.items()}


def install_rows(section: str) -> dict[str, int]:
    """The MB column of the rows ``| `pip install ...` | adds | MB |`` of a Markdown table."""
    table = {}
    for command, mb in re.findall(r"^\| (`pip install [^|]*) \|[^|]*\| ([\d,]+) \|$", section, re.M):
        variant = re.search(r"fairstream(\[\w+\])?", command)
        assert variant is not None
        table[variant.group(0) + (" (CUDA)" if "CUDA" in command else "")] = int(mb.replace(",", ""))
    return table


def test_install_table_has_the_measured_sizes():
    """Each row of docs/adapters.md's install table gives the size benchmarks/install_sizes.py measured."""
    text = (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
    section = text[text.index("## Install") :]
    section = section[: section.index("\n## ", 1)]
    assert install_rows(section) == measured_install_sizes()


def test_readme_ways_in_table_has_the_measured_sizes():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Ways in") :]
    section = section[: section.index("\n## ", 1)]
    rows = re.findall(r"^\| [^|]+ \| (`pip install [^|]*) \| ([\d,]+) \|", section, re.M)
    assert len(rows) == 5  # torch, HF datasets, datatrove, Ray Data, the command line
    measured = measured_install_sizes()
    for command, mb in rows:
        variant = re.search(r"fairstream(\[\w+\])?", command)
        assert variant is not None and measured[variant.group(0)] == int(mb.replace(",", "")), command


def test_the_pipeline_snippet_needs_only_what_the_torch_extra_installs():
    """Every package the README's first example imports comes with ``pip install "fairstream[torch]"``."""
    import ast
    import re
    import tomllib
    from importlib.metadata import packages_distributions

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["torch"]]
    installed_by_extra = {
        re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower().replace("_", "-") for req in wanted
    }
    tree = ast.parse(snippets()["pipeline"][1])
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    dists = packages_distributions()
    needed = {d.lower().replace("_", "-") for m in modules - {"fairstream"} for d in dists.get(m, [m])}
    # tokenizers comes with the core (onnx tokenization); torchdata only with the extra
    assert needed <= installed_by_extra, needed - installed_by_extra
    assert "torchdata" in needed
