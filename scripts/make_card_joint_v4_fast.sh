#!/usr/bin/env bash
# Regenerate fairstream/data/models/joint-v4-fast/MODEL_CARD.md (export/README.md, "joint-v4-fast") from the
# committed comparisons in export/sweeps (each file records its --a/--b; export/EXPERIMENTS.md session 11):
#   session11-cmp-heldout-v4-fast.json      compare_models_heldout.py --a joint-v4 --b joint-v4-fast
#   session11-cmp-heldout-v4-fast-s1.json   ... --b <the seed-1 export of the same recipe>
#   session11-cmp-heldout-v3-fast.json      ... --a joint-v3 --b joint-v4-fast
#   session11-cmp-sample-v4-fast.json       ... --labels <sample corpus as pairs>
#   session11-eval-sample-v4-fast.json      fairstream eval-models --model joint-v4-fast --labels <...> --json
#   benchmarks/results/shipped-models.json  python benchmarks/bench_shipped_models.py (the speed ratio)
# $1 (default export/sweeps): another folder holding files of these names.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-export/sweeps}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
R=$R TMP=$TMP .venv/bin/python - <<'PY'
import json
import os

R, TMP = os.environ["R"], os.environ["TMP"]


def side(file: str, which: str) -> dict:
    d = json.load(open(f"{R}/{file}"))
    return {
        subset: {"n": d[subset]["n"], **{k: d[subset][k][which] for k in ("wsd_kappa", "regard_macro_f1", "negative_f1")}}
        for subset in ("all", "random")
    }


rows = {
    "joint-v4-fast (int8, 3 layers, this model)": side("session11-cmp-heldout-v4-fast.json", "b"),
    "the same recipe, seed 1 (int8, not shipped)": side("session11-cmp-heldout-v4-fast-s1.json", "b"),
    "joint-v4 (int8, 6 layers, the default)": side("session11-cmp-heldout-v4-fast.json", "a"),
    "joint-v3 (int8, 6 layers, the previous default)": side("session11-cmp-heldout-v3-fast.json", "a"),
}
json.dump(rows, open(f"{TMP}/heldout.json", "w"), indent=1)
names = {"wsd_kappa": "WSD kappa", "regard_macro_f1": "regard macro-F1", "negative_f1": "negative F1",
         "negative_precision": "negative precision", "negative_recall": "negative recall"}


def diffs(file: str) -> str:
    d = json.load(open(f"{R}/{file}"))["all"]
    return ", ".join(
        f"{name} {d[k]['b_minus_a']:+.3f} ({d[k]['ci95'][0]:.3f}, {d[k]['ci95'][1]:.3f})" for k, name in names.items()
    )


speed = json.load(open("benchmarks/results/shipped-models.json"))
rate = speed["pairs_per_cpu_second"]
open(f"{TMP}/notes.txt", "w").write(
    json.dumps(
        {
            "v4": diffs("session11-cmp-heldout-v4-fast.json"),
            "v3": diffs("session11-cmp-heldout-v3-fast.json"),
            "sample": diffs("session11-cmp-sample-v4-fast.json"),
            "speed": f"{rate['joint-v4-fast']['median']:.0f} against joint-v4's {rate['joint-v4']['median']:.0f} pairs per "
            f"CPU second ({rate['joint-v4-fast']['median'] / rate['joint-v4']['median']:.2f}x; one intra-op thread, "
            f"{speed['pairs']} corpus pairs, {speed['rounds']} interleaved rounds, commit {speed['machine'].get('commit', '?')}, "
            "benchmarks/results/shipped-models.md)",
        }
    )
)
PY
note() { .venv/bin/python -c "import json, sys; print(json.load(open('$TMP/notes.txt'))[sys.argv[1]])" "$1"; }
NO_CV="The same situation as joint-v4 (its card says why: the recipe's dev CV needs five teachers that each never saw one fold, a GPU job). This model is joint-v4's recipe with the encoder cut to 3 of MiniLM's 6 layers before fine-tuning (layers 0, 2 and 4: \`export.train --encoder-layers 3\`), so the estimate is the hold-out of real text below, paired with joint-v4 and joint-v3, and a second seed."
NOTE_UNSEEN="The round-7 hold-out (labels/heldout-text-r7.jsonl): 1,383 real forum and Wikipedia mentions (RedditBias, BOLD) that no model trained on, 272 negative; 1,291 chosen where session 4's teacher and joint-v2.1 disagreed or the teacher was unsure, 92 at random (joint-v4's card has the details). **The trade:** the model stage runs $(note speed). Against joint-v4 (paired bootstrap 95% intervals): $(note v4); the seed-1 run loses more (regard macro-F1 -0.042, interval -0.077 to -0.008; negative F1 -0.034), so the cost is 0.02-0.04 regard macro-F1 and about 0.03 negative F1. Against joint-v3: $(note v3). So it finds as many negatives as joint-v4, and more than joint-v3, but more of its negative calls are wrong (negative precision below both): it drops more sentences that were not negative. Use it where the model stage bounds throughput and a few more wrong drops are acceptable; the default stays joint-v4."
NOTE_SAMPLE="fairstream's own labelled sample corpus (498 mentions in 300 documents the project wrote; never trained on). Against joint-v4 on the same pairs: $(note sample)."
PYTHONPATH=$PWD .venv/bin/python -m export.model_card --model fairstream/data/models/joint-v4-fast \
  --no-cv-reason "$NO_CV" --unseen "$TMP/heldout.json" --unseen-note "$NOTE_UNSEEN" \
  --eval-json "$R/session11-eval-sample-v4-fast.json" --notes "$NOTE_SAMPLE" > /dev/null
