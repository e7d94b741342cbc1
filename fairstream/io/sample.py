"""The small corpus that ships with fairstream (``fairstream detect`` and ``bench`` read it by default)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

SAMPLE_CORPUS = "sample_corpus.jsonl"


def sample_corpus_path() -> Path:
    """The small corpus that ships with fairstream (written by the project, mixed senses and regards)."""
    return Path(str(resources.files("fairstream") / "data" / SAMPLE_CORPUS))
