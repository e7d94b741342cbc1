"""Pack a BERT-style encoder small enough to travel to a lent GPU machine (64 MiB tree limit).

    python scripts/gpu/pack_encoder.py SRC_DIR DEST_DIR      # here
    python scripts/gpu/pack_encoder.py --unpack DEST_DIR OUT_DIR   # there: fp32 model.safetensors

Word embeddings go as int8 with a per-row scale, everything else as fp16: about 33 MB for
MiniLM-L6 instead of 91 MB. The round trip changes weights by < 0.5% relative (a perturbation
of the starting point only; used for recipe sweeps, not for the shipped model).
"""

import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

EMB = "embeddings.word_embeddings.weight"
AUX = ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]


def pack(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(src / "model.safetensors"))
    out = {}
    for name, t in tensors.items():
        if name.endswith(EMB):
            scale = np.abs(t).max(axis=1, keepdims=True) / 127.0 + 1e-12
            out[name + ".q"] = np.round(t / scale).astype(np.int8)
            out[name + ".scale"] = scale.astype(np.float32)
        else:
            out[name] = t.astype(np.float16)
    save_file(out, str(dest / "packed.safetensors"))
    for f in AUX:
        if (src / f).is_file():
            shutil.copy(src / f, dest / f)


def unpack(dest: Path, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    packed = load_file(str(dest / "packed.safetensors"))
    tensors = {}
    for name, t in packed.items():
        if name.endswith(".scale"):
            continue
        if name.endswith(".q"):
            base = name[:-2]
            tensors[base] = t.astype(np.float32) * packed[base + ".scale"]
        else:
            tensors[name] = t.astype(np.float32)
    save_file(tensors, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    for f in AUX:
        if (dest / f).is_file():
            shutil.copy(dest / f, out_dir / f)


if __name__ == "__main__":
    if sys.argv[1] == "--unpack":
        unpack(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        pack(Path(sys.argv[1]), Path(sys.argv[2]))
