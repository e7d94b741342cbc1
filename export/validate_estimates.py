"""Validate the estimated true negative shares on every unseen labelled set: coverage and width.

    NLTK_DATA=../shared/data/nltk_data python -m export.validate_estimates \\
        [--model joint-v6-cascade] [--caps 1 0.05 0] [--min-sentences 30] \\
        [--json export/sweeps/session30-validate-estimates.json] [--markdown docs/estimates-validation.md]

For each set, every labelled mention is judged by the model as the filter judges it; the mentions
the model calls persons go, in the set's order, through the filter's cap controller
(``fairstream.core.cap.CapController``, warm-up 0) at each ``--caps`` value and are counted as
the filter counts them (``StreamStats.count_person_sentence``). The filter's estimates
(``fairstream.core.estimates``) are then compared with the annotators' labels:

* the true negative share among the counted mentions before filtering and among the kept ones
  after (a mention is truly negative when the annotators call it a person and negative);
* the number of dropped mentions that were not truly negative.

Each comparison is a cell: pooled over the set, and per attribute with at least
``--min-sentences`` counted mentions. A cell is covered when the gold value lies inside the 95%
interval. Coverage and mean interval width are reported per set and over all cells, for the
model's shipped calibration and for its uncalibrated probabilities. The person head's and the
negative head's calibration error (ECE) on each set are reported beside.

Sets: the round-7 hold-out, judges 14, 15 and 18 (stand-off, resolved from ``runs/packages`` and
../shared/data/corpus: ``export/tools/fetch_text_sources.py``), and the sample corpus's labels.
None was used to fit or choose the calibration (``python -m export.calibrate``: dev only).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from export.calibrate import compact_number_lists, ece, intercept_shift, reliability, shift_sd
from fairstream.core.cap import CapController, UnitCounts
from fairstream.core.estimates import estimates
from fairstream.core.stats import StreamStats
from fairstream.models.calibration import CALIBRATION_KEY, Calibration, count_bin, model_calibration
from fairstream.models.labels import LabelledPair, load_labelled_pairs

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "export/labels"
SETS: dict[str, str] = {
    "round-7 hold-out (forum and Wikipedia, chosen where older models disagreed)": "heldout-text-r7.jsonl",
    "judge 14 (random forum mentions)": "heldout-random-r14.jsonl",
    "judge 15 (random news, Wikipedia, plots, reviews)": "heldout-random-r15.jsonl",
    "judge 18 (random forum and web mentions)": "heldout-random-r18.jsonl",
    "sample corpus labels (fairstream/data/sample_corpus_labels.jsonl)": "sample",
}


def load_set(name: str) -> list[LabelledPair]:
    """The labelled pairs of one set of ``SETS``."""
    file = SETS[name]
    if file == "sample":
        import tempfile

        sys.path.insert(0, str(ROOT / "export/tools"))
        from sample_labels_as_pairs import sample_pairs

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "pairs.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in sample_pairs()), encoding="utf-8")
            return load_labelled_pairs(path)
    from export.labels import load_text_standoff

    return load_text_standoff(
        LABELS / file, packages_dir=ROOT / "runs/packages", corpus_dir=ROOT.parent / "shared/data/corpus"
    )


def truly_negative(pair: LabelledPair) -> bool:
    return pair.wsd == "yes" and pair.regard == "negative"


def simulate(
    pairs: Sequence[LabelledPair], preds: Sequence[Any], cap: float, seed: int
) -> tuple[StreamStats, dict[str, dict[str, int]]]:
    """The filter's counts of the model-person mentions at ``cap``, and the gold counts beside them."""
    controller = CapController(cap, warmup=0, seed=seed)
    stats = StreamStats()
    gold: dict[str, dict[str, int]] = {}
    for pair, pred in zip(pairs, preds, strict=True):
        if not (pred.person and pred.regard is not None):
            continue
        kw = pair.mention.keyword
        unit = UnitCounts()
        unit.add(kw, pred.regard)
        keep, _ = controller.decide(unit)
        stats.count_person_sentence(kw, pred.regard, pred.regard_probs[0], keep)
        for key in (kw, "(pooled)"):
            g = gold.setdefault(
                key, {"n": 0, "neg": 0, "kept": 0, "kept_neg": 0, "dropped": 0, "dropped_not_neg": 0}
            )
            g["n"] += 1
            g["neg"] += truly_negative(pair)
            if keep:
                g["kept"] += 1
                g["kept_neg"] += truly_negative(pair)
            else:
                g["dropped"] += 1
                g["dropped_not_neg"] += not truly_negative(pair)
    return stats, gold


def cells(est: dict[str, Any], gold: dict[str, int], cap: float) -> list[dict[str, Any]]:
    """The comparisons of one scope (pooled or one attribute) at one cap."""
    out = []

    def share_cell(quantity: str, block: dict[str, Any], n: int, neg: int) -> None:
        if not n or block["interval"] is None:
            return
        lo, hi = block["interval"]
        truth = neg / n
        out.append(
            {
                "quantity": quantity,
                "n": n,
                "gold": truth,
                "model": block["model_negative_share"],
                "estimate": block["estimated_negative_share"],
                "low": lo,
                "high": hi,
                "covered": lo - 1e-9 <= truth <= hi + 1e-9,
                "width": hi - lo,
            }
        )

    if cap >= 1.0:
        share_cell("negative share before", est["before"], gold["n"], gold["neg"])
        return out
    share_cell(f"negative share after cap {cap:g}", est["after"], gold["kept"], gold["kept_neg"])
    d = est["dropped"]
    if d["sentences"]:
        lo, hi = d["interval"]
        truth = gold["dropped_not_neg"]
        out.append(
            {
                "quantity": f"dropped not negative, cap {cap:g}",
                "n": d["sentences"],
                "gold": truth,
                "model": 0,
                "estimate": d["estimated_not_negative"],
                "low": lo,
                "high": hi,
                "covered": lo - 1e-9 <= truth <= hi + 1e-9,
                "width": hi - lo,
            }
        )
    return out


def validate_set(
    pairs: Sequence[LabelledPair],
    preds: Sequence[Any],
    calibrations: dict[str, Calibration],
    caps: Sequence[float],
    min_sentences: int,
    seed: int,
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for cap in caps:
        stats, gold = simulate(pairs, preds, cap, seed)
        data = stats.to_dict()
        for cal_name, cal in calibrations.items():
            block = estimates(data, cal)
            scopes: list[tuple[str, dict[str, Any]]] = [("(pooled)", block["pooled"])]
            scopes += [(kw, e) for kw, e in block["attributes"].items() if gold[kw]["n"] >= min_sentences]
            for scope, est in scopes:
                for cell in cells(est, gold[scope], cap):
                    rows.append({"calibration": cal_name, "scope": scope, "cap": cap, **cell})
    return {"mentions": len(pairs), "rows": rows}


def reliability_of(
    pairs: Sequence[LabelledPair],
    preds: Sequence[Any],
    calibrations: dict[str, Calibration],
    person_calibration: Calibration | None = None,
) -> dict[str, Any]:
    """ECE and reliability points of the negative head (over model-person mentions) and the person head
    (over all mentions), with the model's own and the shipped calibrated probabilities."""
    person = [(p, q) for p, q in zip(pairs, preds, strict=True) if q.person and q.regard is not None]
    heads = {
        "negative": (
            [q.regard_probs[0] for _, q in person],
            np.array([truly_negative(p) for p, _ in person], dtype=float),
            next((c for c in calibrations.values() if c.calibrated), Calibration.identity()),
        ),
        "person": (
            [q.wsd_probs[1] for q in preds],
            np.array([p.wsd == "yes" for p in pairs], dtype=float),
            person_calibration or Calibration.identity(),
        ),
    }
    out: dict[str, Any] = {}
    for head, (probs, y, cal) in heads.items():
        bins = [count_bin(float(x)) for x in probs]
        out[head] = {"n": len(y), "positives": int(y.sum())}
        for name, table in (("uncalibrated", Calibration.identity().table), ("calibrated", cal.table)):
            c = np.array(table)[bins]
            out[head][name] = {
                "ece": round(ece(c, y), 4),
                "mean_p": round(float(c.mean()), 4),
                "points": reliability(c, y),
            }
    return {
        "model_person": len(person),
        "gold_negative_among_model_person": int(heads["negative"][1].sum()),
        "reliability": out,
    }


def coverage(rows: Sequence[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    sel = [r for r in rows if keep(r)]
    if not sel:
        return {"cells": 0}
    shares = [r for r in sel if "share" in r["quantity"]]
    return {
        "cells": len(sel),
        "covered": sum(r["covered"] for r in sel),
        "coverage": round(sum(r["covered"] for r in sel) / len(sel), 4),
        "mean_share_width": round(float(np.mean([r["width"] for r in shares])), 4) if shares else None,
    }


def set_shift(
    pairs: Sequence[LabelledPair], preds: Sequence[Any], calibration: Calibration
) -> tuple[float, float]:
    """The intercept shift ``(u, se)`` of one set's model-person mentions under ``calibration``."""
    person = [(p, q) for p, q in zip(pairs, preds, strict=True) if q.person and q.regard is not None]
    table = np.array(calibration.table)
    c = table[[count_bin(q.regard_probs[0]) for _, q in person]]
    y = np.array([truly_negative(p) for p, _ in person], dtype=float)
    return intercept_shift(c, y)


def with_shift(calibration: Calibration, sd: float, fit_on: str, groups: int | None = None) -> Calibration:
    """``calibration`` with a shift SD; with ``groups``, its quantile is Student's t at ``groups - 2`` df."""
    shift: dict[str, Any] = {"sd": round(sd, 4), "fit_on": fit_on}
    if groups is not None:
        shift.update(groups=groups, quantile=round(t_quantile(groups - 2), 4))
    return replace(calibration, details={**calibration.details, "shift": shift})


def t_quantile(df: int) -> float:
    """Student's t 97.5% quantile (the normal's for df < 1: no groups to speak of)."""
    from scipy.stats import t

    return float(t.ppf(0.975, df)) if df >= 1 else 1.959963984540054


#: the intervals as the filter computes them (the others are shown for comparison)
SHIPPED = "calibrated + shift, t quantile (shipped)"
QUANTITIES = ("negative share before", "negative share", "dropped not negative")


def field_is(key: str, value: str) -> Callable[[dict[str, Any]], bool]:
    return lambda row: bool(row[key] == value)


def quantity_is(kind: str) -> Callable[[dict[str, Any]], bool]:
    """Rows of one kind of quantity (the caps folded together)."""
    return lambda row: bool(row["quantity"].split(",")[0].split(" after")[0] == kind)


def main(argv: Sequence[str] | None = None) -> int:
    from fairstream.models.runtime import JointModel

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="joint-v6-cascade")
    ap.add_argument("--caps", type=float, nargs="+", default=[1.0, 0.05, 0.0])
    ap.add_argument(
        "--min-sentences", type=int, default=30, help="per-attribute cells need this many counted mentions"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sets", nargs="*", help="substrings of the set names to run (default: all)")
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--write-shift",
        type=Path,
        action="append",
        default=[],
        help="model folder whose config.json gets the shift SD fitted over every set and dev's kinds of text (repeat)",
    )
    args = ap.parse_args(argv)
    model = JointModel(args.model)
    shipped = model_calibration(model)
    if not shipped.calibrated:
        raise SystemExit(f"{args.model} ships no calibration: run python -m export.calibrate --write first")
    dev_shifts = {k: tuple(v) for k, v in shipped.details.get("group_shifts", {}).items()}
    data = {}
    for name in SETS:
        if args.sets and not any(s in name for s in args.sets):
            continue
        pairs = load_set(name)
        data[name] = (pairs, model.predict([p.mention for p in pairs]))
    shifts = {
        **dev_shifts,
        **{name: set_shift(pairs, preds, shipped) for name, (pairs, preds) in data.items()},
    }
    results: dict[str, Any] = {}
    all_rows: list[dict[str, Any]] = []
    for name, (pairs, preds) in data.items():
        others = [v for k, v in shifts.items() if k != name]
        loso = shift_sd(others)
        calibrations = {
            SHIPPED: with_shift(shipped, loso, f"leave-one-set-out: every group but {name}", len(others)),
            "calibrated + shift, normal quantile": with_shift(
                shipped, loso, f"leave-one-set-out: every group but {name}"
            ),
            "calibrated, no shift term": with_shift(shipped, 0.0, "none"),
            "uncalibrated": Calibration.identity(),
        }
        res = validate_set(pairs, preds, calibrations, args.caps, args.min_sentences, args.seed)
        res.update(reliability_of(pairs, preds, calibrations, model_calibration(model, "person")))
        res["shift"] = {
            "u": round(shifts[name][0], 4),
            "se": round(shifts[name][1], 4),
            "loso_sd": round(loso, 4),
        }
        for r in res["rows"]:
            r["set"] = name
        all_rows += res["rows"]
        results[name] = res
        print(
            f"\n{name}: {res['mentions']} mentions, {res['model_person']} model-person, "
            f"{res['gold_negative_among_model_person']} of them truly negative; shift {res['shift']}; ECE "
            + ", ".join(
                f"{h} {r['uncalibrated']['ece']} -> {r['calibrated']['ece']}"
                for h, r in res["reliability"].items()
            )
        )
        for r in res["rows"]:
            if r["scope"] == "(pooled)":
                print(
                    f"  {r['calibration']:26s} {r['quantity']:34s} gold {r['gold']:.4g}  est {r['estimate']:.4g} "
                    f"[{r['low']:.4g}, {r['high']:.4g}]  model {r['model']}  {'ok' if r['covered'] else 'MISS'}"
                )
    summary = {}
    for cal_name in (
        SHIPPED,
        "calibrated + shift, normal quantile",
        "calibrated, no shift term",
        "uncalibrated",
    ):
        mine = [r for r in all_rows if r["calibration"] == cal_name]
        summary[cal_name] = {
            "all cells": coverage(mine, lambda r: True),
            "pooled cells": coverage(mine, lambda r: r["scope"] == "(pooled)"),
            "attribute cells": coverage(mine, lambda r: r["scope"] != "(pooled)"),
            "per set": {s: coverage(mine, field_is("set", s)) for s in results},
            "per quantity": {q: coverage(mine, quantity_is(q)) for q in QUANTITIES},
        }
    full_sd = shift_sd(list(shifts.values()))
    print(
        json.dumps({k: {m: v for m, v in d.items() if m != "per set"} for k, d in summary.items()}, indent=1)
    )
    print(f"shift SD over all {len(shifts)} groups: {full_sd:.4f}; groups: {shifts}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "model": args.model,
                    "caps": args.caps,
                    "min_sentences": args.min_sentences,
                    "shifts": shifts,
                    "shift_sd_all": full_sd,
                    "summary": summary,
                    "sets": results,
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
    for folder in args.write_shift:
        path = folder / "config.json"
        config = json.loads(path.read_text(encoding="utf-8"))
        config[CALIBRATION_KEY]["negative"]["shift"] = {
            "sd": round(full_sd, 4),
            "groups": len(shifts),
            "quantile": round(t_quantile(len(shifts) - 2), 4),
            "fit_on": "DerSimonian-Laird over the intercept shifts of dev's kinds of text and of every unseen labelled set "
            "(python -m export.validate_estimates; its coverage is measured leave-one-set-out)",
            "group_shifts": {k: [round(x, 4) for x in v] for k, v in shifts.items()},
        }
        path.write_text(compact_number_lists(json.dumps(config, indent=2)) + "\n", encoding="utf-8")
        print(f"wrote the shift SD into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
