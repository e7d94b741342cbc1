"""Resumable training: everything ``export.train.fit`` needs to go on exactly where it stopped.

A checkpoint is two files in the run folder, each replaced atomically: ``checkpoint.pt`` (model,
optimizer, scheduler, the torch RNG, the batch-order RNG as it was at the start of the current epoch
and how far into that epoch training got) and ``checkpoint.json`` (step, seconds spent so far and a
fingerprint of the recipe and training data, readable without loading the weights). A resumed fit on
the same thread count reproduces the uninterrupted one's weights exactly; a checkpoint whose
fingerprint differs from the run being started is refused rather than silently mixed in.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fairstream.errors import FairStreamError
from fairstream.models.labels import LabelledPair

WEIGHTS_FILE = "checkpoint.pt"
PROGRESS_FILE = "checkpoint.json"


def training_fingerprint(
    recipe: dict[str, Any],
    train: list[LabelledPair],
    soft: dict[int, tuple[np.ndarray, np.ndarray]] | None,
) -> str:
    """SHA-256 of the recipe, every training pair (text, offsets, labels) in order and the teacher logits."""
    h = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode())
    for p in train:
        m = p.mention
        h.update(f"{p.uid}\t{m.text}\t{m.start}\t{m.end}\t{m.gloss}\t{p.wsd}\t{p.regard}\n".encode())
    for i in sorted(soft or {}):
        w, r = (soft or {})[i]
        h.update(f"{i}:".encode() + np.asarray(w, np.float32).tobytes() + np.asarray(r, np.float32).tobytes())
    return h.hexdigest()


def _atomic_write(path: Path, write) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def save_checkpoint(folder: Path, state: dict[str, Any], progress: dict[str, Any]) -> None:
    """Write the weights first, then the progress that points at them (a crash between leaves the old pair)."""
    folder.mkdir(parents=True, exist_ok=True)
    _atomic_write(folder / WEIGHTS_FILE, lambda p: torch.save(state, p))
    _atomic_write(folder / PROGRESS_FILE, lambda p: p.write_text(json.dumps(progress, indent=2)))


def read_progress(folder: Path | None) -> dict[str, Any] | None:
    """The progress of ``folder``'s checkpoint, or None when it has none."""
    if folder is None or not (folder / PROGRESS_FILE).is_file() or not (folder / WEIGHTS_FILE).is_file():
        return None
    return json.loads((folder / PROGRESS_FILE).read_text())


def load_checkpoint(folder: Path, fingerprint: str) -> dict[str, Any] | None:
    """``folder``'s checkpoint state if it belongs to this run; None if there is none; raises if it is another run's."""
    progress = read_progress(folder)
    if progress is None:
        return None
    if progress.get("fingerprint") != fingerprint:
        raise FairStreamError(
            f"{folder / WEIGHTS_FILE} is a checkpoint of a different training run (other recipe or training "
            f"pairs), so it cannot be resumed: remove {folder / WEIGHTS_FILE} and {folder / PROGRESS_FILE} to "
            "start afresh, or pass another --out"
        )
    # the batch-order RNG state is a plain tuple of ints, which weights_only loading accepts
    state = torch.load(folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
    if state.get("step") != progress.get("step"):
        raise FairStreamError(
            f"{folder / WEIGHTS_FILE} (step {state.get('step')}) does not match {folder / PROGRESS_FILE} "
            f"(step {progress.get('step')}): remove both to start afresh"
        )
    return state


def remove_checkpoint(folder: Path) -> None:
    """Drop a finished run's checkpoint (the saved model supersedes it)."""
    for name in (PROGRESS_FILE, WEIGHTS_FILE):
        (folder / name).unlink(missing_ok=True)
