"""Fit a model's calibration by cross-validation on out-of-fold dev predictions; ship it in config.json.

    NLTK_DATA=../shared/data/nltk_data python -m export.calibrate \\
        --runs export/sweeps/cv-s20 --seed 0 --dev ../shared/data/labels/dev.jsonl \\
        --model fairstream/data/models/joint-v6 --model fairstream/data/models/joint-v6-cascade \\
        --json export/sweeps/session30-calibration-joint-v6.json [--write]

Data: the dev items' predictions by fits that never saw them (``export/cv/run_folds.sh`` writes one
fit per fold, ``RUNS/v6-sSEED-fFOLD``, each holding its held-out fold's probabilities), so the
calibration is fitted on predictions as unseen as the text the filter will meet. Never on a set
that is reported as unseen (``python -m export.validate_estimates`` reports those).

Two heads (``fairstream.models.calibration``):

* ``negative``: among the items the model calls persons (out-of-fold P(person) >= the model's WSD
  threshold), P(the item is truly negative toward a person | the model's P(negative)); an item
  the annotators call not a person is not a negative. This is the probability whose sum over
  counted sentences estimates their true negatives.
* ``person``: over all items, P(gold WSD is yes | the model's P(person)).

Methods, each mapping the model's logit ``z`` (clipped to the bins' range): ``temperature``
(``sigmoid(a z)``), ``platt`` (``sigmoid(a z + b)``) and ``isotonic`` (monotone step map). The one
with the lowest cross-validated log loss (``--folds`` folds, stratified, seeded) is fitted on all
items and ``--bootstrap`` times on resamples of them (the calibration's own uncertainty). All are
applied on the bins the filter counts in, so what is validated is what runs.

``--write`` stores the calibration in each ``--model``'s ``config.json`` (the key ``calibration``);
a cascade folder gets its full model's (these fits are of its recipe). ``--figure`` draws the
reliability diagram the model card shows.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from export.training_set import dev_fold
from fairstream.models.calibration import (
    BIN_WIDTH,
    CALIBRATION_KEY,
    LOGIT_MIN,
    N_BINS,
    Calibration,
    count_bin,
)
from fairstream.models.labels import LabelledPair, load_labelled_pairs

METHODS = ("temperature", "platt", "isotonic")
Fit = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (z, y) -> table over the bins
CENTRES = LOGIT_MIN + (np.arange(N_BINS) + 0.5) * BIN_WIDTH


def out_of_fold(
    runs: Path, seed: int, dev: Sequence[LabelledPair], folds: int = 5, prefix: str = "v6"
) -> tuple[np.ndarray, np.ndarray]:
    """``(wsd, regard)`` probabilities of every dev item from the fold fit that held it out
    (``RUNS/PREFIX-sSEED-fFOLD``, as ``export/cv/run_folds.sh`` names them)."""
    wsd, reg = np.zeros((len(dev), 3)), np.zeros((len(dev), 3))
    filled = np.zeros(len(dev), dtype=bool)
    for fold in range(folds):
        run = runs / f"{prefix}-s{seed}-f{fold}"
        if not (run / "dev_regard.npy").is_file():
            raise SystemExit(f"{run}: no dev_regard.npy; seed {seed} needs all {folds} folds")
        idx = [i for i, p in enumerate(dev) if dev_fold(p.uid, folds) == fold]
        w, r = np.load(run / "dev_wsd.npy"), np.load(run / "dev_regard.npy")
        if len(w) != len(idx):
            raise SystemExit(f"{run}: {len(w)} predictions for the {len(idx)} items of fold {fold}")
        wsd[idx], reg[idx], filled[idx] = w, r, True
    if not filled.all():
        raise SystemExit("some dev items belong to no fold")
    return wsd, reg


def head_data(
    head: str, dev: Sequence[LabelledPair], wsd: np.ndarray, reg: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(p, y, pool)`` of a head: the model's probability, the gold outcome and the kind of text of each
    item it applies to."""
    pools = np.array([p.source for p in dev])
    if head == "person":
        return wsd[:, 1], np.array([p.wsd == "yes" for p in dev], dtype=float), pools
    person = wsd[:, 1] >= threshold
    y = np.array([p.wsd == "yes" and p.regard == "negative" for p in dev], dtype=float)
    return reg[person, 0], y[person], pools[person]


def logit_bins(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each probability's bin (as the filter counts it) and that bin's centre logit."""
    bins = np.array([count_bin(float(x)) for x in p])
    return bins, CENTRES[bins]


def _logistic(z: np.ndarray, y: np.ndarray, intercept: bool) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1e6, fit_intercept=intercept, max_iter=1000).fit(z[:, None], y)
    return np.asarray(lr.predict_proba(CENTRES[:, None])[:, 1])


def _isotonic(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(z, y)
    return np.asarray(iso.predict(CENTRES))


FITS: dict[str, Fit] = {
    "temperature": lambda z, y: _logistic(z, y, intercept=False),
    "platt": lambda z, y: _logistic(z, y, intercept=True),
    "isotonic": _isotonic,
}


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)))


def ece(p: np.ndarray, y: np.ndarray, n_bins: int = 10) -> float:
    """Expected calibration error over equal-width probability bins (weighted by items)."""
    edges = np.minimum((p * n_bins).astype(int), n_bins - 1)
    return float(
        sum(abs(p[edges == b].mean() - y[edges == b].mean()) * (edges == b).sum() for b in set(edges))
        / len(p)
    )


def reliability(p: np.ndarray, y: np.ndarray, n_bins: int = 10) -> list[dict[str, Any]]:
    """Per equal-width bin: items, mean predicted probability, observed share (the diagram's points)."""
    edges = np.minimum((p * n_bins).astype(int), n_bins - 1)
    return [
        {
            "bin": f"{b / n_bins:.1f}-{(b + 1) / n_bins:.1f}",
            "n": int((edges == b).sum()),
            "predicted": round(float(p[edges == b].mean()), 4),
            "observed": round(float(y[edges == b].mean()), 4),
        }
        for b in range(n_bins)
        if (edges == b).any()
    ]


def intercept_shift(c: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The intercept ``u`` (logit scale) that makes calibrated probabilities ``c`` fit outcomes ``y``, and its SE.

    The maximum-likelihood ``u`` of ``y ~ Bernoulli(sigmoid(logit(c) + u))`` (Newton steps): how far one
    kind of text is from the calibration. Its spread across kinds of text is the shift the estimates add.
    """
    q0 = np.clip(c, 1e-6, 1 - 1e-6)
    zc, u, h = np.log(q0 / (1 - q0)), 0.0, 1.0
    for _ in range(100):
        q = 1.0 / (1.0 + np.exp(-(zc + u)))
        h = float((q * (1 - q)).sum())
        step = float((y - q).sum()) / h
        u += step
        if abs(step) < 1e-10:
            break
    return u, 1.0 / math.sqrt(h)


def shift_sd(shifts: Sequence[tuple[float, float]]) -> float:
    """Between-group SD of intercept shifts ``(u, se)``: the DerSimonian-Laird random-effects estimate."""
    if len(shifts) < 2:
        return 0.0
    u = np.array([s[0] for s in shifts])
    w = 1.0 / np.array([s[1] for s in shifts]) ** 2
    mean = float((w * u).sum() / w.sum())
    q = float((w * (u - mean) ** 2).sum())
    denom = float(w.sum() - (w**2).sum() / w.sum())
    return math.sqrt(max(0.0, (q - (len(u) - 1)) / denom))


def stratified_folds(y: np.ndarray, folds: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.zeros(len(y), dtype=int)
    for label in (0.0, 1.0):
        idx = np.flatnonzero(y == label)
        rng.shuffle(idx)
        out[idx] = np.arange(len(idx)) % folds
    return out


def cross_validate(p: np.ndarray, y: np.ndarray, folds: int, seed: int) -> dict[str, Any]:
    """Out-of-fold calibrated probabilities of each method, their log loss, Brier score and ECE."""
    bins, z = logit_bins(p)
    fold = stratified_folds(y, folds, seed)
    raw = 1.0 / (1.0 + np.exp(-z))
    rows = {
        "uncalibrated": {
            "log_loss": log_loss(raw, y),
            "brier": float(np.mean((raw - y) ** 2)),
            "ece": ece(raw, y),
            "mean_p": float(raw.mean()),
        }
    }
    for method, fit in FITS.items():
        oof = np.zeros(len(y))
        for k in range(folds):
            table = fit(z[fold != k], y[fold != k])
            oof[fold == k] = table[bins[fold == k]]
        rows[method] = {
            "log_loss": log_loss(oof, y),
            "brier": float(np.mean((oof - y) ** 2)),
            "ece": ece(oof, y),
            "mean_p": float(oof.mean()),
        }
    return {k: {m: round(v, 5) for m, v in r.items()} for k, r in rows.items()}


def out_of_fold_calibrated(p: np.ndarray, y: np.ndarray, method: str, folds: int, seed: int) -> np.ndarray:
    """Each item's probability under ``method`` fitted on the other folds (as ``cross_validate`` scores it)."""
    bins, z = logit_bins(p)
    fold = stratified_folds(y, folds, seed)
    oof = np.zeros(len(y))
    for k in range(folds):
        oof[fold == k] = FITS[method](z[fold != k], y[fold != k])[bins[fold == k]]
    return oof


def fit_head(
    p: np.ndarray,
    y: np.ndarray,
    *,
    folds: int,
    seed: int,
    bootstrap: int,
    fit_on: str,
    groups: np.ndarray | None = None,
) -> tuple[Calibration, dict[str, Any]]:
    """Choose the method by CV log loss, fit it on all items and on ``bootstrap`` resamples.

    With ``groups`` (the kind of text of each item, e.g. dev's ``pool``), each group's intercept shift
    under the cross-validated calibration is recorded (``details["group_shifts"]``): the dev side of
    the shift the estimates add (``python -m export.validate_estimates --write-shift``).
    """
    cv = cross_validate(p, y, folds, seed)
    method = min(METHODS, key=lambda m: cv[m]["log_loss"])
    bins, z = logit_bins(p)
    table = FITS[method](z, y)
    rng = np.random.default_rng(seed + 1)
    replicates = []
    for _ in range(bootstrap):
        idx = rng.integers(0, len(y), len(y))
        replicates.append(tuple(float(x) for x in FITS[method](z[idx], y[idx])))
    details: dict[str, Any] = {
        "n_fit": len(y),
        "positives": int(y.sum()),
        "cv_folds": folds,
        "seed": seed,
        "chosen_by": "lowest cross-validated log loss",
        "cv": cv,
    }
    if groups is not None:
        oof = out_of_fold_calibrated(p, y, method, folds, seed)
        details["group_shifts"] = {
            f"dev {g}": [round(v, 4) for v in intercept_shift(oof[groups == g], y[groups == g])]
            for g in sorted(set(groups.tolist()))
        }
    cal = Calibration(method, tuple(float(x) for x in table), tuple(replicates), fit_on, details)
    report = {
        "method": method,
        "cv": cv,
        "n": len(y),
        "positives": int(y.sum()),
        "reliability_uncalibrated": reliability(1.0 / (1.0 + np.exp(-z)), y),
        "reliability_calibrated_in_sample": reliability(table[bins], y),
    }
    return cal, report


def write_calibration(model_dir: Path, heads: dict[str, Calibration]) -> None:
    """Store the heads' calibrations in ``model_dir/config.json`` (other keys untouched, order kept)."""
    path = model_dir / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config[CALIBRATION_KEY] = {head: cal.to_config() for head, cal in heads.items()}
    path.write_text(compact_number_lists(json.dumps(config, indent=2)) + "\n", encoding="utf-8")


def compact_number_lists(text: str) -> str:
    """``json.dumps(..., indent=2)`` with each list of plain numbers on one line (tables stay readable)."""
    import re

    return re.sub(
        r"\[\s*(-?[0-9][0-9.eE+-]*(?:,\s*-?[0-9][0-9.eE+-]*)*)\s*\]",
        lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
        text,
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=Path, default=Path("export/sweeps/cv-s20"))
    ap.add_argument("--seed", type=int, default=0, help="the fold fits' seed (RUNS/PREFIX-sSEED-fFOLD)")
    ap.add_argument("--prefix", default="v6", help="the fold fits' name prefix (RUNS/PREFIX-sSEED-fFOLD)")
    ap.add_argument("--recipe", default="joint-v6's recipe", help="what the fold fits are, for the card")
    ap.add_argument("--dev", type=Path, default=Path("../shared/data/labels/dev.jsonl"))
    ap.add_argument(
        "--model", type=Path, action="append", default=[], help="model folder to write into (repeat)"
    )
    ap.add_argument(
        "--threshold", type=float, default=0.5, help="WSD threshold deciding 'person' (the models' 0.5)"
    )
    ap.add_argument("--folds", type=int, default=5, help="CV folds choosing the method")
    ap.add_argument(
        "--bootstrap", type=int, default=100, help="refits on resamples (calibration uncertainty)"
    )
    ap.add_argument("--json", type=Path, help="write the CV table and reliability points here")
    ap.add_argument(
        "--write", action="store_true", help="store the calibration in each --model's config.json"
    )
    args = ap.parse_args(argv)
    if args.bootstrap < 2 or args.folds < 2:
        ap.error("--bootstrap and --folds must be >= 2")
    dev = load_labelled_pairs(args.dev)
    wsd, reg = out_of_fold(args.runs, args.seed, dev, prefix=args.prefix)
    fit_on = (
        f"out-of-fold predictions of {args.recipe} on the {len(dev)} dev items "
        f"({args.dev.name}; 5 fold fits of seed {args.seed}, {args.runs.as_posix()})"
    )
    heads, report = {}, {}
    for head in ("negative", "person"):
        p, y, pools = head_data(head, dev, wsd, reg, args.threshold)
        heads[head], report[head] = fit_head(
            p, y, folds=args.folds, seed=args.seed, bootstrap=args.bootstrap, fit_on=fit_on, groups=pools
        )
        report[head]["group_shifts"] = heads[head].details.get("group_shifts")
        cv = report[head]["cv"]
        print(f"{head}: {len(y)} items, {int(y.sum())} positive; chosen {report[head]['method']}")
        for name, row in cv.items():
            print(
                f"  {name:13s} log loss {row['log_loss']:.4f}  Brier {row['brier']:.4f}  ECE {row['ece']:.4f}  mean p {row['mean_p']:.4f}"
            )
    if args.json:
        args.json.write_text(
            json.dumps({"fit_on": fit_on, "heads": report}, indent=1) + "\n", encoding="utf-8"
        )
    if args.write:
        for model_dir in args.model:
            write_calibration(model_dir, heads)
            print(f"wrote {CALIBRATION_KEY} into {model_dir / 'config.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
