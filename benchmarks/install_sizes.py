"""Disk size of each install variant of fairstream, from the packages installed in this environment.

For each variant (no extras, ``[torch]``, ``[datatrove]``, ``[ray]``, ``[train]``) the closure of
its requirements is resolved over the installed distributions' metadata, and each distribution's
size is the sum of the file sizes its RECORD lists (what ``pip install`` put on disk). Packages
pulled in by several variants are counted in each. Writes ``results/install_sizes.{json,md}``.

    python benchmarks/install_sizes.py
"""

from __future__ import annotations

import json
import platform
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

VARIANTS = {"fairstream": [], "fairstream[torch]": ["torch"], "fairstream[datatrove]": ["datatrove"],
            "fairstream[ray]": ["ray"], "fairstream[train]": ["train"]}  # fmt: skip
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results"


def dist_size(dist: metadata.Distribution) -> int:
    return sum(f.size or 0 for f in dist.files or [])


def closure(extras: list[str]) -> dict[str, int]:
    installed = {canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions()}
    # fairstream's own requirements from pyproject.toml (an editable install's metadata may be older)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    roots = project["dependencies"] + [r for e in extras for r in project["optional-dependencies"][e]]
    seen: dict[str, int] = {}
    todo = [(Requirement(r).name, tuple(Requirement(r).extras)) for r in roots]
    while todo:
        name, want = todo.pop()
        dist = installed.get(canonicalize_name(name))
        if dist is None:
            continue  # an optional requirement not installed here (e.g. a platform-only package)
        key = canonicalize_name(name)
        if key not in seen:
            seen[key] = dist_size(dist)
        for text in dist.requires or []:
            req = Requirement(text)
            envs = [{"extra": e} for e in want] or [{"extra": ""}]
            wanted = req.marker is None or any(req.marker.evaluate(env) for env in envs)
            if wanted and (canonicalize_name(req.name) not in seen or req.extras):
                todo.append((req.name, tuple(req.extras)))
    return seen


def main() -> None:
    rows = {}
    for variant, extras in VARIANTS.items():
        sizes = closure(extras)
        top = sorted(sizes.items(), key=lambda kv: -kv[1])[:4]
        rows[variant] = {
            "mb": round(sum(sizes.values()) / 1e6),
            "packages": len(sizes),
            "largest": {k: round(v / 1e6) for k, v in top},
        }
    info = {"python": platform.python_version(), "machine": platform.machine(), "system": platform.system()}
    OUT.mkdir(exist_ok=True)
    (OUT / "install_sizes.json").write_text(json.dumps({"machine": info, "variants": rows}, indent=2) + "\n")
    lines = [
        f"Installed size per variant (Python {info['python']}, {info['system']} {info['machine']}, "
        "CPU wheels; `python benchmarks/install_sizes.py`; fairstream itself not counted)",
        "",
        "| install | MB on disk | packages | largest (MB) |",
        "|---|---:|---:|---|",
    ]
    for variant, r in rows.items():
        largest = ", ".join(f"{k} {v}" for k, v in r["largest"].items())
        lines.append(f"| `pip install {variant}` | {r['mb']:,} | {r['packages']} | {largest} |")
    (OUT / "install_sizes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
