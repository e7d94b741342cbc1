"""Two exported models (int8, as the product runs them) on the round-7 hold-out, with paired bootstrap CIs.

    NLTK_DATA=../shared/data/nltk_data python export/gpu/compare_models_heldout.py \
        --a joint-v2 --b runs/full-s8/joint-v3 [--json OUT.json]

``--a`` / ``--b`` take a model folder, a shipped model's name, or ``soft:FILE``: a teacher's logits from
``export.distill`` (``--pool`` a file written by ``heldout_pool.py``, or any soft-label file that
holds the hold-out's sentences), matched by the hash of the text the model reads, so a torch run
(the MPNet teacher, fp32) is compared without exporting it. Scores all 1,383 hold-out items and the
92 chosen at random (the others were chosen where earlier models disagreed, which favours models that
agree with the teacher), as ``compare_students.py`` scores folds: B - A with a 95% interval over
resampled items (2,000 draws). Each model decides by its own config (WSD threshold and
``regard_logit_offsets``), as the product does; a ``soft:`` side by 0.5 and argmax.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.gpu.compare_students import ARGMAX_RULE, paired  # noqa: E402
from export.gpu.heldout_pool import HELDOUT, load_with_reasons  # noqa: E402
from fairstream.models.labels import load_labelled_pairs  # noqa: E402
from fairstream.models.runtime import JointModel, softmax  # noqa: E402

Rule = tuple[float, tuple[float, float, float]]


def side_logits(spec: str, pairs: list) -> tuple[np.ndarray, np.ndarray, Rule]:
    """WSD and regard logits of ``pairs`` from a model (folder or name) or ``soft:FILE``, and the rule it
    decides by: the model's shipped one (WSD threshold, regard logit offsets); a teacher's 0.5 and argmax."""
    if not spec.startswith("soft:"):
        model = JointModel(spec)
        wsd, regard = model.predict_logits([p.mention for p in pairs])[:2]
        return wsd, regard, (model.wsd_threshold, model.regard_offsets)
    from export.distill import load_soft_labels, pair_key

    by_text = {text_sha1: logits for (_, text_sha1), logits in load_soft_labels(spec[5:]).items()}
    keys = [pair_key(p) for p in pairs]
    missing = [p.uid for p, key in zip(pairs, keys, strict=True) if key not in by_text]
    if missing:
        raise SystemExit(
            f"{spec[5:]}: no logits for {len(missing)} of {len(pairs)} items (first: {missing[0]}); "
            "run export.distill --no-training-set --pool on heldout_pool.py's file (or the --labels file)"
        )
    rows = [by_text[key] for key in keys]
    return np.stack([w for w, _ in rows]), np.stack([r for _, r in rows]), ARGMAX_RULE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="baseline: model folder, shipped name or soft:FILE")
    ap.add_argument("--b", required=True, help="candidate: model folder, shipped name or soft:FILE")
    ap.add_argument(
        "--labels",
        type=Path,
        help="score this labels file (dev-set schema, e.g. export/tools/sample_labels_as_pairs.py's output) "
        "instead of the round-7 hold-out",
    )
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--standoff",
        type=Path,
        default=HELDOUT,
        help="a stand-off text label file to score (default: the round-7 hold-out; e.g. export/labels/text-r10.jsonl: "
        "only for models that never trained on it)",
    )
    args = ap.parse_args()
    if args.labels:
        pairs, chosen = load_labelled_pairs(args.labels), list[str | None]()
    else:
        pairs, chosen = load_with_reasons(args.standoff)
    probs, rule_of = {}, {}
    for side in ("a", "b"):
        w, r, rule_of[side] = side_logits(getattr(args, side), pairs)  # each side decides as its config says
        probs[side] = (softmax(w), softmax(r))
        print(f"{side}: {getattr(args, side)}")
    rules = (rule_of["a"], rule_of["b"])
    out: dict = {"a": str(args.a), "b": str(args.b), "rules": {"a": rules[0], "b": rules[1]}}
    for subset, items in (
        ("all", list(range(len(pairs)))),
        ("random", [i for i, s in enumerate(chosen) if s == "random"]),
    ):
        if not items:
            continue
        sub = [pairs[i] for i in items]
        a = (probs["a"][0][items], probs["a"][1][items])
        b = (probs["b"][0][items], probs["b"][1][items])
        out[subset] = {"n": len(items), **paired(sub, a, b, args.bootstrap, rules)}
        print(subset, json.dumps(out[subset]))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
