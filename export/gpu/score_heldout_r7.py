"""Score the session-6 teachers' logits (and the shipped model) on the round-7 hold-out (never trained on).

    NLTK_DATA=../shared/data/nltk_data python export/gpu/score_heldout_r7.py [--logits runs/device-s6/3/logits] \
        [--scored NAME=FILE.npz@ROW ...] [--model EXPORTED_MODEL_DIR ...]

Reads ``export/labels/heldout-text-r7.jsonl`` (resolved against ``runs/packages`` and ../shared/data/corpus),
round 6's ``runs/round6/unseen.jsonl`` (whose rows the teachers scored after the 16,076 rows of the
training pairs and the distillation pool) and the sweep's logits files. Prints WSD kappa, regard
macro-F1 and negative F1 on all 1,383 items and on the 92 chosen at random.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.gpu.heldout_pool import HELDOUT, load_heldout  # noqa: E402
from export.train import evaluate  # noqa: E402
from fairstream.models.runtime import JointModel, softmax  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logits", type=Path, default=ROOT / "runs/device-s6/3/logits")
    ap.add_argument("--offset", type=int, default=16076)
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    ap.add_argument(
        "--scored",
        action="append",
        default=[],
        metavar="NAME=FILE.npz@ROW",
        help="also score a sweep's logits file whose rows ROW.. are the hold-out in file order (a pool "
        "made from export/labels/heldout-text-r7.jsonl passed last to export.sweep with save_logits); repeatable",
    )
    ap.add_argument(
        "--model",
        action="append",
        type=Path,
        default=[],
        help="also score this exported model folder (its int8 graph, as the product runs it); repeatable",
    )
    args = ap.parse_args()
    with HELDOUT.open(encoding="utf-8") as f:
        r7 = [json.loads(line) for line in f if line.strip()]
    pairs = load_heldout()
    with (ROOT / "runs/round6/unseen.jsonl").open(encoding="utf-8") as f:
        unseen = [json.loads(line) for line in f]
    row = {(c["source"], str(c["doc_id"]), c["kw_start"]): i for i, c in enumerate(unseen)}
    rows = np.array([args.offset + row[(r["source"], str(r["doc_id"]), r["kw_start"])] for r in r7])
    random_items = [i for i, r in enumerate(r7) if r.get("selected_as") == "random"]
    results: dict[str, dict] = {}

    def report(name: str, p_wsd: np.ndarray, p_regard: np.ndarray) -> None:
        results[name] = {}
        for subset, items in (("all", list(range(len(r7)))), ("random", random_items)):
            m = evaluate(p_wsd[items], p_regard[items], [pairs[i] for i in items], 0.5)
            results[name][subset] = {
                "n": len(items),
                "wsd_kappa": round(m["wsd_kappa"], 3),
                "regard_macro_f1": round(m["regard_macro_f1"], 3),
                "negative_f1": round(m["regard_f1"]["negative"] or 0.0, 3),
            }
        print(f"{name:32s} {json.dumps(results[name])}")

    with np.load(args.logits / "teacher-full-full.npz") as z:
        report("teacher-full", softmax(z["wsd"][rows]), softmax(z["regard"][rows]))
    for seed in (0, 1):
        ws, rs = [], []
        for k in range(5):
            with np.load(args.logits / f"teacher-cv5-s{seed}-f{k}.npz") as z:
                ws.append(softmax(z["wsd"][rows]))
                rs.append(softmax(z["regard"][rows]))
        for k in range(5):
            report(f"teacher-cv5-s{seed} fold {k}", ws[k], rs[k])
        report(f"teacher-cv5-s{seed} mean of folds", np.mean(ws, 0), np.mean(rs, 0))
    for spec in args.scored:
        name, _, rest = spec.partition("=")
        file, _, first = rest.rpartition("@")
        if not (name and file and first.isdigit()):
            raise SystemExit(f"--scored {spec!r}: expected NAME=FILE.npz@ROW")
        with np.load(file) as z:
            block = slice(int(first), int(first) + len(r7))
            if z["wsd"][block].shape[0] != len(r7):
                raise SystemExit(f"--scored {spec!r}: {file} has no {len(r7)} rows from row {first}")
            report(name, softmax(z["wsd"][block]), softmax(z["regard"][block]))
    for model_dir in [None, *args.model]:
        model = JointModel(model_dir)
        wsd_p, reg_p = (softmax(x) for x in model.predict_logits([p.mention for p in pairs])[:2])
        report(f"{'shipped ' if model_dir is None else ''}{model.name} (int8)", wsd_p, reg_p)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
