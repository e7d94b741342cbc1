"""Shared helpers for benchmarks: corpus loading, machine description, result files."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "corpus"
RESULTS = ROOT / "benchmarks" / "results"


def load_corpus(corpus: Path, limit: int | None = None) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(corpus.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                docs.append(json.loads(line))
                if limit is not None and len(docs) >= limit:
                    return docs
    return docs


def add_pair_arguments(ap: argparse.ArgumentParser, rounds: int) -> None:
    """``--corpus``, ``--limit`` and ``--rounds`` of the benchmarks that time the model on corpus pairs."""
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--limit", type=int, default=1500, help="first N documents (0: all)")
    ap.add_argument("--rounds", type=int, default=rounds)


def corpus_pairs(corpus: Path, limit: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """The first ``limit`` documents (0: all) and their unique (sentence, keyword) pairs, as the keyword stage finds them."""
    from fairstream.bench import keyword_stage

    docs = load_corpus(corpus, limit or None)
    return docs, keyword_stage([d["text"] for d in docs])[1]


def machine() -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
    except OSError:
        commit = ""
    import onnxruntime

    from fairstream.bench import cpu_model_and_features

    cpu, features = cpu_model_and_features()
    return {
        "cpu": cpu,
        "cpu_features": features,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "onnxruntime": onnxruntime.__version__,
        "providers": onnxruntime.get_available_providers(),
        "commit": commit,
    }


def write_results(name: str, result: dict[str, Any], markdown: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    md = RESULTS / f"{name}.md"
    md.write_text(markdown + "\n")
    return md


def machine_line(m: dict[str, Any]) -> str:
    isa = f" ({', '.join(m['cpu_features'])})" if m.get("cpu_features") else ""
    return f"{m['cpu']}{isa}, {m['cores']} cores, Python {m['python']}, onnxruntime {m['onnxruntime']} ({', '.join(m['providers'])}), commit {m['commit']}"
