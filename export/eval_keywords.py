"""Score a model on labelled pairs of keywords it may never have trained on: per half, class and keyword.

    NLTK_DATA=../shared/data/nltk_data python -m export.eval_keywords \\
        --labels export/labels/v2keywords-r30.jsonl --split export/labels/taxonomy-v2-split.json \\
        --model joint-v6-cascade --json export/sweeps/session30-zero-shot-v2-keywords-cascade.json \\
        [--baseline joint-v6]

Issue 47's measurement of what a user who adds keywords gets. The labels are stand-off
(``export.labels.load_text_standoff``: texts from ``runs/packages`` and ../shared/data/corpus). The
split file's ``train`` and ``heldout`` keyword lists (fixed before the labels were read) name the
halves; pairs of keywords in neither are reported as ``other``. For each half, and each class
within it, the numbers of ``fairstream eval-models`` (``fairstream.eval.score``: WSD kappa, regard
macro-F1, negative precision and recall); per keyword, its pairs, gold person share and WSD
accuracy (yes against not-yes, "unsure" counting as not-yes as the guide says), so a card can show
which words the model cannot disambiguate. With ``--baseline``, per half the model minus the baseline on
the same pairs, with paired bootstrap 95% intervals (each model deciding by its own config), so a model
trained on the ``train`` half is compared with the one it started from.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairstream.eval import score
from fairstream.models.labels import LabelledPair

ROOT = Path(__file__).resolve().parents[1]


def halves(split: dict[str, Any], keyword: str) -> str:
    """Which half of the split a keyword is in (``other`` when neither)."""
    if keyword in split.get("train", []):
        return "train"
    return "heldout" if keyword in split.get("heldout", []) else "other"


def evaluate(
    pairs: Sequence[LabelledPair],
    preds: Sequence[Any],
    split: dict[str, Any],
    axis_of: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Scores per half, per (half, class), per (half, HolisticBias axis: ``axis_of`` maps a keyword to
    its taxonomy entry's ``axis``) and per keyword (see module docstring)."""
    wsd = ["yes" if q.person else "no" for q in preds]
    regard = [q.regard for q in preds]
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    by_axis: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        half = halves(split, p.mention.keyword)
        groups[(half, "(all)")].append(i)
        groups[(half, p.attribute_class)].append(i)
        if axis_of is not None:
            by_axis[(half, axis_of.get(p.mention.keyword) or "(none)")].append(i)
    out: dict[str, Any] = {"halves": {}, "keywords": {}}
    for (half, cls), idx in sorted(groups.items()):
        s = score([pairs[i] for i in idx], [wsd[i] for i in idx], [regard[i] for i in idx])
        out["halves"].setdefault(half, {})[cls] = s
    if axis_of is not None:
        out["axes"] = {}
        for (half, axis), idx in sorted(by_axis.items()):
            s = score([pairs[i] for i in idx], [wsd[i] for i in idx], [regard[i] for i in idx])
            out["axes"].setdefault(half, {})[axis] = s
    by_kw: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        by_kw[p.mention.keyword].append(i)
    for kw, idx in sorted(by_kw.items()):
        gold = [pairs[i].wsd == "yes" for i in idx]
        right = sum((wsd[i] == "yes") == g for i, g in zip(idx, gold, strict=True))
        out["keywords"][kw] = {
            "half": halves(split, kw),
            "class": pairs[idx[0]].attribute_class,
            "pairs": len(idx),
            "gold_person_share": round(sum(gold) / len(idx), 4),
            "model_person_share": round(sum(wsd[i] == "yes" for i in idx) / len(idx), 4),
            "wsd_accuracy": round(right / len(idx), 4),
        }
    return out


def versus(
    pairs: Sequence[LabelledPair],
    split: dict[str, Any],
    baseline: str,
    logits: tuple[Any, Any],
    rule: tuple[float, tuple[float, float, float]],
    n_boot: int,
) -> dict[str, Any]:
    """Per half (and all pairs), the model minus ``baseline``: both sides' metrics, the difference and its
    paired bootstrap 95% interval (``export.gpu.compare_students.paired``, same resampled items).

    ``logits`` and ``rule``: the model's WSD and regard logits of ``pairs`` (as ``main`` computed them
    for its own scores) and its decision rule (WSD threshold, regard offsets); the baseline's are
    computed here.
    """
    from export.gpu.compare_students import paired
    from fairstream.models.runtime import JointModel, softmax

    base = JointModel(baseline)
    base_logits = base.predict_logits([p.mention for p in pairs])[:2]
    sides = [
        (softmax(w), softmax(r), side_rule)
        for (w, r), side_rule in ((base_logits, (base.wsd_threshold, base.regard_offsets)), (logits, rule))
    ]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        groups[halves(split, p.mention.keyword)].append(i)
        groups["(all)"].append(i)
    out: dict[str, Any] = {"baseline": baseline, "bootstrap": n_boot, "halves": {}}
    for half, idx in sorted(groups.items()):
        sub = [pairs[i] for i in idx]
        (wa, ra, rule_a), (wb, rb, rule_b) = sides
        out["halves"][half] = {
            "n": len(idx),
            **paired(sub, (wa[idx], ra[idx]), (wb[idx], rb[idx]), n_boot, (rule_a, rule_b)),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from export.labels import load_text_standoff
    from fairstream.models.runtime import JointModel

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--labels", type=Path, required=True, help="stand-off label file (repeat)", action="append"
    )
    ap.add_argument("--split", type=Path, default=ROOT / "export/labels/taxonomy-v2-split.json")
    ap.add_argument("--model", default="joint-v6-cascade")
    ap.add_argument(
        "--baseline", help="a second model (name or folder): per half, --model minus it, paired bootstrap"
    )
    ap.add_argument("--bootstrap", type=int, default=1000, help="resamples for --baseline's intervals")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    split = json.loads(args.split.read_text(encoding="utf-8"))
    pairs: list[LabelledPair] = []
    for path in args.labels:
        pairs += load_text_standoff(
            path, packages_dir=ROOT / "runs/packages", corpus_dir=ROOT.parent / "shared/data/corpus"
        )
    model = JointModel(args.model)
    from fairstream.models.decision import predictions_from_logits
    from fairstream.taxonomy import Taxonomy

    # one pass of the model: its predictions (as model.predict decides) and, with --baseline, the logits
    logits = model.predict_logits([p.mention for p in pairs])[:2]
    rule = (model.wsd_threshold, model.regard_offsets)

    # the HolisticBias axis each new keyword came from (taxonomy-v2's provenance field)
    axis_of = {a.keyword: a.axis for a in Taxonomy.load("taxonomy-v2") if a.axis}
    result = {
        "model": args.model,
        "labels": [str(p) for p in args.labels],
        **evaluate(pairs, predictions_from_logits(*logits, *rule), split, axis_of),
    }
    if args.baseline:
        result["versus_baseline"] = versus(pairs, split, args.baseline, logits, rule, args.bootstrap)
        for half, diff in result["versus_baseline"]["halves"].items():
            print(
                f"{half:8s} minus {args.baseline}: "
                + ", ".join(f"{k} {d['b_minus_a']:+.3f} {d['ci95']}" for k, d in diff.items() if k != "n")
            )
    for half, classes in result["halves"].items():
        for cls, s in classes.items():
            print(
                f"{half:8s} {cls:22s} n {s['n']:5d}  WSD kappa {s['wsd_kappa'] if s['wsd_kappa'] is None else round(s['wsd_kappa'], 3)}"
                f"  regard macro-F1 {s['regard_macro_f1'] if s['regard_macro_f1'] is None else round(s['regard_macro_f1'], 3)}"
                f"  neg P/R {s['negative_precision']}/{s['negative_recall']}"
            )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
