"""torch is an optional extra: the CLI and the core run where it cannot be imported.

Each check runs in a fresh interpreter whose import system refuses torch (what an install
without the ``torch`` extra looks like) and then lists what got imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fairstream.cli import sample_corpus_path

ROOT = Path(__file__).resolve().parent.parent

# refuses torch the way a missing package does (``sys.modules["torch"] = None`` would also stop
# it, but scipy.stats, which nltk imports, reads that entry as a loaded torch and fails)
NO_TORCH = """
import importlib.abc, json, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "torchdata"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoTorch())
"""


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH + code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )


def loaded(result: subprocess.CompletedProcess[str]) -> list[str]:
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_cli_filter_runs_without_torch(tmp_path: Path):
    out = tmp_path / "out"
    argv = ["filter", str(sample_corpus_path()), "-o", str(out), "--no-progress", "--no-report"]
    result = run_python(
        "from fairstream.cli import main\n"
        f"rc = main({argv!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchdata'))))\n"
        "sys.exit(rc)\n"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert loaded(result) == []
    stats = json.loads((out / "stats.json").read_text())
    n_docs = sum(1 for _ in sample_corpus_path().open())
    assert stats["counters"]["docs_in"] == n_docs
    kept = (out / "data" / "sample_corpus.jsonl").read_text().splitlines()
    assert len(kept) == stats["counters"]["docs_out"] > 0


def test_core_imports_no_adapter_engine_or_cli():
    result = run_python(
        "import fairstream.core\nfrom fairstream import FilterConfig, FilterStep\nprint(json.dumps(sorted(sys.modules)))\n"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    mods = loaded(result)
    forbidden = ("torch", "torchdata", "datasets", "datatrove", "ray", "fairstream.cli", "fairstream.adapters",
                 "fairstream.stream.dataset", "fairstream.filter_job", "fairstream.jobs")  # fmt: skip
    assert [m for m in mods if m.startswith(forbidden)] == []
    assert "fairstream.core.step" in mods


def test_fairstream_without_torch_names_the_extra():
    result = run_python("from fairstream import FairStream\n")
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "MissingDependencyError" in last and "pip install 'fairstream[torch]'" in last
