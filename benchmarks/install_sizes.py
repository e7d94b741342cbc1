"""Disk size of each install variant of fairstream, measured by installing it into a fresh virtualenv.

The project is built once into a wheel (from a copy of the files git tracks or does not ignore, so the
working tree gets no ``build/`` folder), and each variant (no extras, ``[torch]`` with the CPU build of
torch installed first, ``[torch]`` as the plain command resolves it, ``[datatrove]``, ``[ray]``,
``[train]`` with the CPU build first) is installed from that wheel into its own new venv, which is
deleted after it is measured; pip is upgraded first in each. A variant's size is the sum of the file sizes the RECORD of every
distribution that the install added to the bare venv lists (what ``pip install`` put on disk,
fairstream's own files and bytecode included); the venv's own pip is not counted. The ``du -s`` of
the venv's site-packages (disk blocks in use, pip included) is recorded beside it.
Writes ``results/install_sizes.{json,md}``.

    python benchmarks/install_sizes.py                      # CPU torch from PyTorch's CPU index
    python benchmarks/install_sizes.py --cpu-torch torch==2.13.0   # where that version is a CPU build
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results"
CPU_TORCH = "torch --index-url https://download.pytorch.org/whl/cpu"

# (label, extras, install the CPU build of torch first)
VARIANTS = [
    ("fairstream", "", False),
    ("fairstream[torch]", "torch", True),
    ("fairstream[torch] (CUDA)", "torch", False),
    ("fairstream[datatrove]", "datatrove", False),
    ("fairstream[ray]", "ray", False),
    ("fairstream[train]", "train", True),
]

# run in a venv, isolated from the working folder's metadata: {name: [version, bytes from its RECORD]}
SIZES = """
import json
from importlib import metadata
print(json.dumps({d.metadata["Name"].lower().replace("_", "-"): [d.version, sum(f.size or 0 for f in d.files or [])]
                  for d in metadata.distributions()}))
"""


def run(cmd: list[str]) -> str:
    print("+", shlex.join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE).stdout


def build_wheel(work: Path) -> Path:
    """A wheel of the working tree (tracked and not-ignored files), built outside it."""
    src = work / "src"
    files = run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "-z"])
    for rel in filter(None, files.split("\0")):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"), str(src)])
    return next((work / "dist").glob("fairstream-*.whl"))


def measure(work: Path, wheel: Path, extras: str, torch_first: str | None, no_cache: bool) -> dict:
    venv = work / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"] + (["--no-cache-dir"] * no_cache)
    # a current pip, as users have: the pip that comes with Python 3.11 (23.2) finds no solution for [train]
    run([*pip, "--upgrade", "pip"])
    bare = json.loads(run([py, "-I", "-c", SIZES]))
    if torch_first:
        run(pip + shlex.split(torch_first))
    run([*pip, f"{wheel}[{extras}]" if extras else str(wheel)])
    after = json.loads(run([py, "-I", "-c", SIZES]))
    site_packages = next(venv.glob("lib/python*/site-packages"))
    du_kb = int(run(["du", "-sk", str(site_packages)]).split()[0])  # blocks in use, pip included
    torch_version = after.get("torch", [None])[0]
    shutil.rmtree(venv)
    added = {k: size for k, (version, size) in after.items() if bare.get(k, [None])[0] != version}
    top = sorted(added.items(), key=lambda kv: -kv[1])[:4]
    return {
        "mb": round(sum(added.values()) / 1e6),
        "packages": len(added),
        "fairstream_mb": round(added["fairstream"] / 1e6),
        "site_packages_du_mb": round(du_kb * 1024 / 1e6),
        "torch": torch_version,
        "largest": {k: round(v / 1e6) for k, v in top},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--cpu-torch", default=CPU_TORCH, help=f"pip arguments of the CPU torch (default: {CPU_TORCH})"
    )
    parser.add_argument("--only", nargs="*", help="labels of the variants to measure (default: all)")
    args = parser.parse_args()
    commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).strip()
    if run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"]).strip():
        commit += "-dirty"  # the wheel holds the working tree's changes too
    rows = {}
    with tempfile.TemporaryDirectory(prefix="fairstream-sizes-") as tmp:
        work = Path(tmp)
        wheel = build_wheel(work)
        for label, extras, cpu_first in VARIANTS:
            if args.only and label not in args.only:
                continue
            # the CUDA wheels are several GB: not left in pip's cache
            try:
                rows[label] = measure(
                    work, wheel, extras, args.cpu_torch if cpu_first else None, "CUDA" in label
                )
            except subprocess.CalledProcessError as e:
                rows[label] = {"error": f"{shlex.join(e.cmd)} exited with {e.returncode}"}
            rows[label]["command"] = (f"pip install {args.cpu_torch}; " if cpu_first else "") + (
                f'pip install "fairstream[{extras}]"' if extras else "pip install fairstream"
            )
            print(label, rows[label], file=sys.stderr, flush=True)
    info = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "system": platform.system(),
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "cpu_torch": args.cpu_torch,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "install_sizes.json").write_text(json.dumps({"machine": info, "variants": rows}, indent=2) + "\n")
    lines = [
        f"Installed size per variant, measured {info['date']} at commit {commit} (Python {info['python']}, "
        f"{info['system']} {info['machine']}; `python benchmarks/install_sizes.py --cpu-torch "
        f'"{args.cpu_torch}"`): each variant installed from a wheel of the project into a fresh venv; '
        "MB on disk is the size of the files the install added to the bare venv (from their RECORDs), fairstream "
        "itself (its models) included; `du -s` counts the disk blocks of the whole site-packages, pip included.",
        "",
        "| install | commands | torch | MB on disk | of which fairstream | packages | largest (MB) "
        "| `du -s` of site-packages (MB) |",
        "|---|---|---|---:|---:|---:|---|---:|",
    ]
    for label, r in rows.items():
        if "error" in r:
            lines.append(f"| `{label}` | `{r['command']}` | failed: {r['error']} | | | | | |")
            continue
        largest = ", ".join(f"{k} {v}" for k, v in r["largest"].items())
        lines.append(
            f"| `{label}` | `{r['command']}` | {r['torch'] or '-'} | {r['mb']:,} | {r['fairstream_mb']} "
            f"| {r['packages']} | {largest} | {r['site_packages_du_mb']:,} |"
        )
    (OUT / "install_sizes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
