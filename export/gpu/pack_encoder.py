"""Pack an encoder small enough to travel to a lent GPU machine (64 MiB per call, the tree included).

    python export/gpu/pack_encoder.py SRC_DIR DEST_DIR [--int8-all] [--keep-tokens-of FILE ...] [--part-mb N]
    python export/gpu/pack_encoder.py --unpack DEST_DIR [DEST_DIR2 ...] OUT_DIR   # there: fp32 model.safetensors

Default (MiniLM-L6: about 33 MB instead of 91): word embeddings as int8 with a per-row scale, every
other tensor as fp16. ``--int8-all`` stores every 2-D weight as per-row int8 (MPNet-base: ~110 MB
instead of 438; relative error per weight <= 1/254 of its row's largest value, a perturbation of the
starting point of fine-tuning, not of a shipped model).

``--keep-tokens-of`` (jsonl files with ``text`` and ``gloss`` fields, e.g. ``export.train --dump-pairs``
output, dev, pool files) keeps only the word-embedding rows of the tokens those texts use, plus the
special tokens; the other rows unpack as zeros. That is exact for any text drawn from those files
(their token rows are the same bytes) and wrong for other text, so use it for sweeps over fixed files.

``--part-mb`` splits the tensors over ``packed-00.safetensors``, ``packed-01...`` of at most that many
MB each (a tensor is never split), so a large encoder can travel over several calls; ``--unpack``
reads the parts from every DEST_DIR given.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

EMB = "embeddings.word_embeddings.weight"
INDEX = "packed-index.json"  # the part files a complete unpack needs
AUX = [
    INDEX,
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
]


def quantize_rows(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scale = np.abs(t).max(axis=1, keepdims=True) / 127.0 + 1e-12
    return np.round(t / scale).astype(np.int8), scale.astype(np.float32)


def used_token_ids(src: Path, files: list[Path]) -> np.ndarray:
    """Token ids of the model inputs built from ``files`` (labelled pairs or pool files), specials included."""
    from tokenizers import Tokenizer

    from export.distill import load_pool
    from fairstream.models.encoding import encode_rows
    from fairstream.models.labels import load_labelled_pairs
    from fairstream.taxonomy import Taxonomy

    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    forms = {a.keyword: a.forms for a in Taxonomy.default()}
    keep: set[int] = set()
    for path in files:
        with path.open(encoding="utf-8") as f:
            first = json.loads(f.readline())
        pairs = load_pool(path) if "wsd" not in first else load_labelled_pairs(path, forms)
        for ids, _, _ in encode_rows(tok, [p.mention for p in pairs], max_length=1 << 20):
            keep.update(ids)
    for token, idx in tok.get_vocab(with_added_tokens=True).items():
        if token.startswith(("[", "<")) and token.endswith(("]", ">")):
            keep.add(idx)
    return np.array(sorted(keep), dtype=np.int64)


def pack(
    src: Path,
    dest: Path,
    *,
    int8_all: bool = False,
    keep_tokens_of: list[Path] | None = None,
    part_mb: float | None = None,
) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(src / "model.safetensors"))
    out: dict[str, np.ndarray] = {}
    for name, t in tensors.items():
        if name.endswith(EMB):
            meta = np.array(t.shape, dtype=np.int64)
            if keep_tokens_of:
                rows = used_token_ids(src, keep_tokens_of)
                out[name + ".rows"] = rows
                t = t[rows]
            out[name + ".q"], out[name + ".scale"] = quantize_rows(t)
            out[name + ".shape"] = meta
        elif int8_all and t.ndim == 2 and t.dtype == np.float32 and min(t.shape) > 16:
            out[name + ".q"], out[name + ".scale"] = quantize_rows(t)
        else:
            out[name] = t.astype(np.float16) if t.dtype == np.float32 else t
    limit = int(part_mb * 1e6) if part_mb else None
    parts: list[dict[str, np.ndarray]] = [{}]
    size, last_base = 0, None
    for name in sorted(out, key=lambda n: (n.rsplit(".", 1)[0], n)):  # a weight's pieces stay together
        nbytes = out[name].nbytes
        base = name.rsplit(".", 1)[0]
        if limit and size + nbytes > limit and parts[-1] and base != last_base:
            parts.append({})
            size = 0
        parts[-1][name] = out[name]
        size, last_base = size + nbytes, base
    for old in dest.glob("packed*.safetensors"):
        old.unlink()
    paths = []
    for i, part in enumerate(parts):
        path = dest / ("packed.safetensors" if len(parts) == 1 else f"packed-{i:02d}.safetensors")
        save_file(part, str(path))
        paths.append(path)
    (dest / INDEX).write_text(json.dumps({"parts": [p.name for p in paths]}))
    for f in AUX:
        if (src / f).is_file():
            shutil.copy(src / f, dest / f)
    return paths


def unpack(dests: list[Path] | Path, out_dir: Path) -> None:
    dests = [dests] if isinstance(dests, Path) else dests
    out_dir.mkdir(parents=True, exist_ok=True)
    found = {p.name: p for dest in dests for p in sorted(dest.glob("packed*.safetensors"))}
    index = next((d / INDEX for d in dests if (d / INDEX).is_file()), None)
    if index is not None:
        missing = [name for name in json.loads(index.read_text())["parts"] if name not in found]
        if missing:
            raise SystemExit(f"unpack: parts missing: {missing}; pass every folder that holds a packed part")
    packed: dict[str, np.ndarray] = {}
    for path in found.values():
        packed.update(load_file(str(path)))
    tensors = {}
    for name, t in packed.items():
        if name.endswith((".scale", ".rows", ".shape")):
            continue
        if name.endswith(".q"):
            base = name[:-2]
            w = t.astype(np.float32) * packed[base + ".scale"]
            if base + ".rows" in packed:
                full = np.zeros(tuple(packed[base + ".shape"]), dtype=np.float32)
                full[packed[base + ".rows"]] = w
                w = full
            tensors[base] = w
        else:
            tensors[name] = t.astype(np.float32) if t.dtype == np.float16 else t
    save_file(tensors, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    for f in AUX:
        for dest in dests:
            if (dest / f).is_file():
                shutil.copy(dest / f, out_dir / f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unpack", action="store_true", help="DIRS...: packed folders, then the output folder")
    ap.add_argument("dirs", type=Path, nargs="+")
    ap.add_argument("--int8-all", action="store_true")
    ap.add_argument("--keep-tokens-of", type=Path, action="append", default=[])
    ap.add_argument("--part-mb", type=float)
    args = ap.parse_args()
    if args.unpack:
        if len(args.dirs) < 2:
            ap.error("--unpack needs packed folder(s) and an output folder")
        unpack(args.dirs[:-1], args.dirs[-1])
        return
    if len(args.dirs) != 2:
        ap.error("pack needs SRC_DIR DEST_DIR")
    paths = pack(
        args.dirs[0],
        args.dirs[1],
        int8_all=args.int8_all,
        keep_tokens_of=args.keep_tokens_of,
        part_mb=args.part_mb,
    )
    for p in paths:
        print(f"{p}: {p.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
