"""Names of the models shipped inside the package.

Standard library only, so the CLI can list them in its help without loading numpy or onnxruntime.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_MODEL = "joint-v6-cascade"
#: Models the package no longer ships, and the release that dropped them (git history keeps them).
RETIRED_MODELS = {
    "joint-v2": "0.2.0",
    "joint-v3": "0.2.0",
    "joint-v4": "0.2.0",
    "joint-v4-fast": "0.2.0",
    "joint-v5": "0.2.0",
}


def default_model_dir(name: str = DEFAULT_MODEL) -> Path:
    """Folder of a model shipped inside the package."""
    return Path(str(resources.files("fairstream") / "data" / "models" / name))


def shipped_model_names() -> list[str]:
    """Names of the models inside the package (each usable as ``model=NAME``)."""
    root = default_model_dir().parent
    return sorted(p.name for p in root.iterdir() if (p / "config.json").is_file()) if root.is_dir() else []


def shipped_models_text() -> str:
    """The shipped model names for a help text, the default first: "joint-v6-cascade (default), joint-v7-fast, ..."."""
    others = sorted((n for n in shipped_model_names() if n != DEFAULT_MODEL), reverse=True)
    return ", ".join([f"{DEFAULT_MODEL} (default)", *others])


def resolve_model_dir(model: str | Path | None) -> Path:
    """A model folder from ``None`` (the default), a folder path, or the name of a shipped model.

    A folder that exists wins over a shipped name, so ``./joint-v2`` on disk is never shadowed; the
    name of a retired model (``RETIRED_MODELS``) is a ``ModelError`` naming the release that dropped it.
    """
    if model is None:
        return default_model_dir()
    path = Path(model)
    # a bare name (a str or a Path of one part, as argparse's type=Path gives) may name a shipped model
    if not path.exists() and len(path.parts) == 1 and not path.is_absolute():
        shipped = default_model_dir(path.name)
        if (shipped / "config.json").is_file():
            return shipped
        if path.name in RETIRED_MODELS:
            from fairstream.errors import ModelError

            raise ModelError(
                f"model {path.name!r} was retired from the package in fairstream {RETIRED_MODELS[path.name]}; "
                "pass the folder of a copy (git history keeps it; export/README.md says how to rebuild one), "
                f"or a shipped model: {shipped_models_text()}"
            )
    return path
