"""Model-card inputs from paired comparisons (``export/gpu/compare_models_heldout.py --json``).

    python export/tools/card_rows.py rows OUT.json "NAME=FILE@a" "NAME=FILE@b" ...   # export.model_card --unseen
    python export/tools/card_rows.py diff FILE                    # "WSD kappa +0.001 (-0.029, 0.034), ..." (b - a)
    python export/tools/card_rows.py score FILE METRIC            # side b's score on all items, e.g. regard_macro_f1
    python export/tools/card_rows.py speed MODEL BASELINE         # from benchmarks/results/shipped-models.json

``rows`` takes one side (``a`` or ``b``) of each comparison file as a table row named NAME, so
every row of a card's unseen-text table comes from the same items and the same scorer. The
``export/tools/make_card_*.sh`` scripts call it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE_METRICS = ("wsd_kappa", "regard_macro_f1", "negative_f1")
DIFF_NAMES = {
    "wsd_kappa": "WSD kappa",
    "regard_macro_f1": "regard macro-F1",
    "negative_f1": "negative F1",
    "negative_precision": "negative precision",
    "negative_recall": "negative recall",
}


def side(path: Path, which: str) -> dict:
    """One model's numbers (``which``: "a" or "b") on all items and on the random ones."""
    if which not in ("a", "b"):
        raise SystemExit(f"{path}: side {which!r}; allowed: a, b")
    d = json.loads(path.read_text())
    return {
        subset: {"n": d[subset]["n"], **{k: d[subset][k][which] for k in TABLE_METRICS}}
        for subset in ("all", "random")
    }


def diff_text(path: Path) -> str:
    """b minus a on all items, each with its paired bootstrap 95% interval."""
    d = json.loads(path.read_text())["all"]
    return ", ".join(
        f"{name} {d[k]['b_minus_a']:+.3f} ({d[k]['ci95'][0]:.3f}, {d[k]['ci95'][1]:.3f})"
        for k, name in DIFF_NAMES.items()
    )


def speed_text(model: str, baseline: str, results: Path) -> str:
    """A model's model-stage rate beside a baseline's, from ``benchmarks/bench_shipped_models.py``."""
    speed = json.loads(results.read_text())
    rate = speed["pairs_per_cpu_second"]
    fast, base = rate[model]["median"], rate[baseline]["median"]
    return (
        f"{fast:.0f} against {baseline}'s {base:.0f} pairs per CPU second ({fast / base:.2f}x; one intra-op "
        f"thread, {speed['pairs']} corpus pairs, {speed['rounds']} interleaved rounds, commit "
        f"{speed['machine'].get('commit', '?')}, benchmarks/results/shipped-models.md)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    rows = sub.add_parser("rows", help="write the unseen-text table's rows")
    rows.add_argument("out", type=Path)
    rows.add_argument("specs", nargs="+", metavar="NAME=FILE@SIDE")
    diff = sub.add_parser("diff", help="print b - a with intervals")
    diff.add_argument("file", type=Path)
    score = sub.add_parser("score", help="print side b's score on all items")
    score.add_argument("file", type=Path)
    score.add_argument("metric", choices=TABLE_METRICS)
    speed = sub.add_parser("speed", help="print a model's model-stage speed beside a baseline's")
    speed.add_argument("model")
    speed.add_argument("baseline")
    speed.add_argument("--results", type=Path, default=ROOT / "benchmarks/results/shipped-models.json")
    args = ap.parse_args()
    if args.command == "rows":
        table = {}
        for spec in args.specs:
            name, _, rest = spec.partition("=")
            file, _, which = rest.rpartition("@")
            if not (name and file and which):
                raise SystemExit(f"{spec!r}: expected NAME=FILE@SIDE")
            table[name] = side(Path(file), which)
        args.out.write_text(json.dumps(table, indent=1))
    elif args.command == "diff":
        print(diff_text(args.file))
    elif args.command == "score":
        print(side(args.file, "b")["all"][args.metric])
    else:
        print(speed_text(args.model, args.baseline, args.results))


if __name__ == "__main__":
    main()
