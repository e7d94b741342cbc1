"""Models on the randomly drawn items of the unseen label sets, with 95% bootstrap intervals.

    NLTK_DATA=../shared/data/nltk_data python export/gpu/random_unseen.py \
        --model joint-v4 --model joint-v3 [--model soft:FILE ...] [--labels FILE ...] [--json OUT.json]

The round-7 hold-out (``export/labels/heldout-text-r7.jsonl``) and round 10 (``export/labels/text-r10.jsonl``)
were mostly chosen where models disagreed or were unsure, which makes them hard and favours no one
in particular but says little about ordinary text. Each also holds items drawn at random from its
pool (``selected_as == "random"``: 92 and 200 real forum / Wikipedia mentions). No shipped model
trained on either file, so their random items together are the closest thing here to the unseen text
issue 16's goals are judged on. Reports each model's WSD kappa, regard macro-F1 and negative F1 /
precision / recall on them (pooled, and per file), with percentile intervals over 2,000 resamples.
Only for models that never trained on these files (a model trained with round 10 must not be scored
on it: ``--labels export/labels/heldout-text-r7.jsonl --labels export/labels/text-r11.jsonl`` scores joint-v5 on
the hold-out's and round 11's random items, 92 + 165).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.gpu.compare_models_heldout import side_logits  # noqa: E402
from export.gpu.compare_students import METRICS, metrics  # noqa: E402
from export.gpu.heldout_pool import HELDOUT, load_with_reasons  # noqa: E402
from fairstream.models.runtime import softmax  # noqa: E402

FILES = (HELDOUT, ROOT / "export/labels/text-r10.jsonl")


def random_items(path: Path) -> list:
    pairs, chosen = load_with_reasons(path)
    return [p for p, s in zip(pairs, chosen, strict=True) if s == "random"]


def with_interval(pairs: list, wsd: np.ndarray, reg: np.ndarray, n_boot: int) -> dict[str, dict]:
    point = metrics(pairs, wsd, reg)
    rng = np.random.default_rng(0)
    draws: dict[str, list[float]] = {k: [] for k in METRICS}
    for _ in range(n_boot):
        idx = rng.integers(0, len(pairs), len(pairs))
        m = metrics([pairs[i] for i in idx], wsd[idx], reg[idx])
        for k in METRICS:
            draws[k].append(m[k])
    return {
        k: {
            "value": round(point[k], 3),
            "ci95": [round(float(np.percentile(draws[k], q)), 3) for q in (2.5, 97.5)],
        }
        for k in METRICS
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True, help="model folder, shipped name or soft:FILE")
    ap.add_argument(
        "--labels",
        type=Path,
        action="append",
        help="a stand-off label file whose random items to score (repeatable; default: the hold-out and round 10)",
    )
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    per_file = {path.name: random_items(path) for path in args.labels or FILES}
    sets = {**per_file, "pooled": [p for items in per_file.values() for p in items]}
    out: dict = {"n": {name: len(items) for name, items in sets.items()}, "models": {}}
    for spec in args.model:
        w, r, _ = side_logits(spec, sets["pooled"])  # scored by argmax, as its metrics always were
        wsd, reg = softmax(w), softmax(r)
        res, lo = {}, 0
        for name, items in per_file.items():
            sl = slice(lo, lo + len(items))
            res[name] = with_interval(items, wsd[sl], reg[sl], args.bootstrap)
            lo += len(items)
        res["pooled"] = with_interval(sets["pooled"], wsd, reg, args.bootstrap)
        out["models"][spec] = res
        row = res["pooled"]
        print(f"{spec}: " + ", ".join(f"{k} {row[k]['value']} {row[k]['ci95']}" for k in METRICS))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
