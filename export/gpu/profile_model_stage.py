"""Where the model stage's host time goes: cProfile of ``predict_logits`` on the corpus's unique pairs.

On a GPU the model stage is bound by the host (tokenization, batching, copies) long before the GPU
is busy; this names the functions. Usage (also on CPU, with ``--device cpu``)::

    python export/gpu/profile_model_stage.py .gpu-data --device cuda --model joint-v6-cascade -o OUT/profile.txt
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="*", help="shards or folders (default: the sample corpus)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--model", default=None)
    parser.add_argument("--limit", type=int, default=None, help="first N documents")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()

    from fairstream.bench import keyword_stage, load_texts
    from fairstream.models.loader import load_model

    texts, _ = load_texts(args.inputs, limit=args.limit)
    _, pairs = keyword_stage(texts)
    model = load_model(args.model, device=args.device, backend="torch")
    model.predict_logits(pairs[:2048])  # load and warm up
    t0 = time.perf_counter()
    model.predict_logits(pairs)
    plain = time.perf_counter() - t0
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    model.predict_logits(pairs)
    profiler.disable()
    profiled = time.perf_counter() - t0
    out = io.StringIO()
    out.write(f"{len(pairs)} pairs, {args.device}, {model.name}: {plain:.3f} s ({len(pairs) / plain:,.0f} pairs/s); "
              f"under the profiler {profiled:.3f} s\n\n")  # fmt: skip
    for key in ("cumulative", "tottime"):
        pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(25)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(out.getvalue(), encoding="utf-8")
    print(out.getvalue()[:4000])


if __name__ == "__main__":
    main()
