"""The model card's per-keyword WSD table on taxonomy-v2's new keywords, from ``export.eval_keywords --json``.

A user who filters with ``--taxonomy taxonomy-v2`` (or adds keywords) should see which words the model
cannot tell apart from their other senses. ``export.model_card`` adds ``keywords_section`` where a card
spec names the file (``keywords = "export/sweeps/...json"``) or a template says ``{{keywords_section}}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MIN_PAIRS = 15  # keywords with fewer labelled pairs are listed apart: their accuracy is too noisy to rank


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def keywords_section(
    path: Path, shown: str | None = None, unseen_pairs: tuple[Path, str] | None = None
) -> list[str]:
    """Per half, per HolisticBias axis and per keyword: pairs, gold and model person shares, WSD accuracy
    (weakest first).

    ``shown``: how the card names the file (a path from the repository root; default ``path``).
    ``unseen_pairs``: another ``eval_keywords`` JSON of the same model and how the card names it: pairs of
    ``train``-half keywords labelled after a model trained on that half (round 31), a row of its own,
    since round 30's ``train`` pairs are a trained model's own training data.
    """
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    halves = data["halves"]
    lines = [
        "",
        "## taxonomy-v2's new keywords: which ones this model can tell apart",
        "",
        f"Zero-shot: no shipped model trained on these keywords. On round 30's labelled pairs "
        f"(`export/labels/v2keywords-r30.jsonl`; `python -m export.eval_keywords`, `{shown or path.as_posix()}`), split into "
        "the keywords a later model may train on and those kept out of training (`export/labels/taxonomy-v2-split.json`):",
        "",
        "| half | pairs | WSD kappa | regard macro-F1 | negative precision / recall |",
        "|---|---:|---:|---:|---|",
    ]
    for half in ("train", "heldout"):
        s = halves[half]["(all)"]
        lines.append(
            f"| {half} | {s['n']} | {_f(s['wsd_kappa'])} | {_f(s['regard_macro_f1'])} | "
            f"{_f(s['negative_precision'])} / {_f(s['negative_recall'])} |"
        )
    if unseen_pairs is not None:
        extra_path, extra_shown = unseen_pairs
        s = json.loads(extra_path.read_text(encoding="utf-8"))["halves"]["train"]["(all)"]
        lines.append(
            f"| train, unseen pairs (round 31, `{extra_shown}`) | {s['n']} | {_f(s['wsd_kappa'])} | "
            f"{_f(s['regard_macro_f1'])} | {_f(s['negative_precision'])} / {_f(s['negative_recall'])} |"
        )
    if data.get("axes"):
        lines += [
            "",
            f"Per HolisticBias axis (the new keywords' `axis` in taxonomy-v2; at least {MIN_PAIRS} pairs):",
            "",
            "| half | axis | pairs | WSD kappa | regard macro-F1 |",
            "|---|---|---:|---:|---:|",
        ]
        for half in ("train", "heldout"):
            for axis, a in sorted(data["axes"].get(half, {}).items()):
                if a["n"] >= MIN_PAIRS:
                    lines.append(
                        f"| {half} | {axis} | {a['n']} | {_f(a['wsd_kappa'])} | {_f(a['regard_macro_f1'])} |"
                    )
    kws = sorted(data["keywords"].items(), key=lambda kv: (kv[1]["wsd_accuracy"], kv[0]))
    ranked = [(k, v) for k, v in kws if v["pairs"] >= MIN_PAIRS]
    lines += [
        "",
        f"Per keyword with at least {MIN_PAIRS} labelled pairs, weakest WSD accuracy first (person against not; "
        "'unsure' counts as not):",
        "",
        "| keyword | class | half | pairs | gold person share | model person share | WSD accuracy |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for k, v in ranked:
        lines.append(
            f"| {k} | {v['class']} | {v['half']} | {v['pairs']} | {v['gold_person_share']:.2f} | "
            f"{v['model_person_share']:.2f} | {v['wsd_accuracy']:.2f} |"
        )
    rare = sorted(k for k, v in kws if v["pairs"] < MIN_PAIRS)
    if rare:
        lines += ["", f"Fewer than {MIN_PAIRS} pairs (not ranked): {', '.join(rare)}."]
    return lines
