"""Turn a sweep's logits files (``export.sweep`` ``save_logits``) into soft-label files without text.

    python export/gpu/save_teacher_logits.py --logits-dir runs/device-s6/3/logits --data DIR \
        --full teacher-full-full --out-jsonl export/labels/soft/teacher-mpnet-full-s6.jsonl.gz \
        --cv teacher-cv5-s0 teacher-cv5-s1 --out-npz export/labels/soft/teacher-mpnet-cv5-s6.npz --npz-rows 16076

``DIR`` holds the files the sweep scored, in its row order: ``pairs.jsonl`` then ``*.pool.jsonl`` by
name. The jsonl file has the ``export.distill`` schema (uid, text_sha1, raw logits), readable by
``export.train --soft-labels``. The npz holds the cv teachers' per-fold logits (float16, shape
folds x rows x 3, key ``NAME/wsd`` and ``NAME/regard``) with ``uid`` and ``text_sha1`` per row, so a
later device call can train per-fold distilled students without training the teachers again.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.distill import load_pool, pair_key  # noqa: E402
from fairstream.models.labels import load_labelled_pairs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logits-dir", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--full", help="stem of the logits file for --out-jsonl")
    ap.add_argument("--out-jsonl", type=Path)
    ap.add_argument("--cv", nargs="*", default=[], help="cv config names (files NAME-f0..f4.npz)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--out-npz", type=Path)
    ap.add_argument(
        "--npz-rows",
        type=int,
        help="keep the first N rows in --out-npz (the pairs and the distillation pool)",
    )
    args = ap.parse_args()
    rows = load_labelled_pairs(args.data / "pairs.jsonl")
    for pool in sorted(args.data.glob("*.pool.jsonl")):
        rows += load_pool(pool)
    uids = [p.uid for p in rows]
    keys = [pair_key(p) for p in rows]
    if args.full and args.out_jsonl:
        with np.load(args.logits_dir / f"{args.full}.npz") as z:
            wsd, reg = z["wsd"], z["regard"]
        if len(wsd) != len(rows):
            raise SystemExit(f"{args.full}: {len(wsd)} rows, {len(rows)} items in {args.data}")
        args.out_jsonl.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(args.out_jsonl, "wt", encoding="utf-8") as f:
            for i in range(len(rows)):
                rec = {
                    "uid": uids[i],
                    "text_sha1": keys[i],
                    "wsd_logits": [round(float(x), 4) for x in wsd[i]],
                    "regard_logits": [round(float(x), 4) for x in reg[i]],
                }
                f.write(json.dumps(rec) + "\n")
        print(f"{args.out_jsonl}: {len(rows)} rows")
    if args.cv and args.out_npz:
        n = args.npz_rows or len(rows)
        arrays: dict[str, np.ndarray] = {
            "uid": np.array(uids[:n], dtype="S"),
            "text_sha1": np.array(keys[:n], dtype="S"),
        }
        for name in args.cv:
            w, r = [], []
            for k in range(args.folds):
                with np.load(args.logits_dir / f"{name}-f{k}.npz") as z:
                    w.append(z["wsd"])
                    r.append(z["regard"])
            arrays[f"{name}/wsd"] = np.stack(w)[:, :n].astype(np.float16)
            arrays[f"{name}/regard"] = np.stack(r)[:, :n].astype(np.float16)
        np.savez_compressed(args.out_npz, **arrays)  # type: ignore[arg-type]
        print(f"{args.out_npz}: {args.out_npz.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
