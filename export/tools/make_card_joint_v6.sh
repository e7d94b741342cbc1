#!/usr/bin/env bash
# Regenerate fairstream/data/models/joint-v6/MODEL_CARD.md (export/README.md, "joint-v6") from the committed
# comparisons in export/sweeps (each file records its --a/--b; export/EXPERIMENTS.md session 15):
#   session15-cmp-heldout-v5-r13-s0.json        compare_models_heldout.py --a joint-v5 --b joint-v6 (the seed-0 export)
#   session15-cmp-heldout-v5-r13-s1.json        ... --b <the seed-1 export of the same recipe>
#   session15-cmp-{sample,r14}-v5-r13-s{0,1}.json   the same on the sample corpus (--labels) and judge 14 (--standoff)
#   session16-judge15-v5-vs-{joint-v6,r13-s1}.json   the same on judge 15 as relabelled in session 16 (--standoff export/labels/heldout-random-r15.jsonl)
#   session13-eval-sample-v5.json               fairstream eval-models --model joint-v5 --labels <...> --json (the sample set's layout)
# $1 (default export/sweeps): another folder holding files of these names.
source "$(dirname "$0")/card_common.sh"  # strict mode, cd to the root, R, TMP, diff_of, score_of
.venv/bin/python export/tools/card_rows.py rows "$TMP/heldout-r7-card.json" \
  "joint-v6 (int8, this model)=$R/session15-cmp-heldout-v5-r13-s0.json@b" \
  "the same recipe, seed 1 (int8, not shipped)=$R/session15-cmp-heldout-v5-r13-s1.json@b" \
  "joint-v5 (int8, the previous default)=$R/session15-cmp-heldout-v5-r13-s0.json@a"
NO_CV="Its leak-free dev CV (export/EXPERIMENTS.md, session 20: students that read the soft labels of a teacher that never saw dev, five folds and two seeds) has no complete seed yet. joint-v6 is joint-v5's recipe with four more real label rounds in its training files: rounds 11 and 12 (2,765 forum mentions, 1,082 negative; the MPNet teacher's out-of-sample logits on round 11) and round 13 (1,200 news, Wikipedia and review mentions, 589 of them not a person; gold labels only). The estimates are the unseen sets below, each paired with joint-v5 and a second seed. \`fairstream eval-models\` on the dev set shows training-set numbers for this model."
NOTE_UNSEEN="The round-7 hold-out (export/labels/heldout-text-r7.jsonl): 1,383 real forum and Wikipedia mentions (RedditBias, BOLD) that no model trained on, 272 negative, mostly chosen where older models disagreed. joint-v6 minus joint-v5 (paired bootstrap 95% intervals): $(diff_of session15-cmp-heldout-v5-r13-s0.json); seed 1: $(diff_of session15-cmp-heldout-v5-r13-s1.json). Judge 15 (export/labels/heldout-random-r15.jsonl: 600 mentions drawn at random from BBC news, Wikipedia passages and plot summaries and IMDb reviews, 163 persons, 15 negative after session 16's relabel of the items holding the keyword twice; second pass WSD kappa 1.00), the text this model's new labels target: WSD kappa $(score_of session16-judge15-v5-vs-joint-v6.json wsd_kappa), regard macro-F1 $(score_of session16-judge15-v5-vs-joint-v6.json regard_macro_f1), negative F1 $(score_of session16-judge15-v5-vs-joint-v6.json negative_f1); minus joint-v5: $(diff_of session16-judge15-v5-vs-joint-v6.json); seed 1: $(diff_of session16-judge15-v5-vs-r13-s1.json). Judge 14 (export/labels/heldout-random-r14.jsonl: 600 random forum mentions): WSD kappa $(score_of session15-cmp-r14-v5-r13-s0.json wsd_kappa), regard macro-F1 $(score_of session15-cmp-r14-v5-r13-s0.json regard_macro_f1), negative F1 $(score_of session15-cmp-r14-v5-r13-s0.json negative_f1); minus joint-v5: $(diff_of session15-cmp-r14-v5-r13-s0.json); seed 1: $(diff_of session15-cmp-r14-v5-r13-s1.json). The person decision on news and Wikipedia text improves (interval above zero at seed 0); on random forum text regard macro-F1 dips at both seeds (intervals just across zero), so this is not a better model everywhere."
NOTE_SAMPLE="fairstream's own labelled sample corpus (498 mentions in 300 documents the project wrote; never trained on). Against joint-v5 on the same pairs: $(diff_of session15-cmp-sample-v5-r13-s0.json); seed 1: $(diff_of session15-cmp-sample-v5-r13-s1.json)."
# Session 20's leak-free dev CV of this recipe (export/sweeps/cv-s20, scored into $CV_JSON by
# export/cv/collect_folds.sh): the seeds whose five folds are all there; until one is, the card says why not.
CV_JSON=export/sweeps/session20-cv-joint-v6-recipe.json
CV_RUNS=()
for seed_dir in $(ls -d export/sweeps/cv-s20/v6-s*-f0 2>/dev/null); do
  seed_runs=("${seed_dir%-f0}"-f[0-4])
  [ "${#seed_runs[@]}" -eq 5 ] && CV_RUNS+=("${seed_runs[@]}")
done
if [ "${#CV_RUNS[@]}" -gt 0 ]; then
  RULE_F=$(.venv/bin/python - "$CV_JSON" <<'PY'
import json, sys
cv = json.load(open(sys.argv[1]))
rule = cv["rule_f"]
seeds = {s: v["pooled"]["regard_macro_f1"] for s, v in cv["per_seed"].items() if len(v["folds"]) == 5}
done = "; ".join(f"seed {s}: {f:.3f}" for s, f in seeds.items())
if rule["holds"] is None:
    print(f"Not decided yet: rule (f) needs two seeds with all five folds, and only {done} is complete "
          "(the other seed's folds are training; export/cv/run_folds.sh).")
elif "mean" not in rule:
    print(f"Rule (f) does not hold, decided by one seed: {done}, not above the joint-v2 recipe's best seed "
          f"({rule['reference_best']:.3f}), which clause (2) asks of every seed ("
          f"{min(seeds.values()) - rule['reference_mean']:+.3f} over its mean, where clause (1) asks more than "
          f"+{rule['reference_spread']:.3f}). The second seed's folds are still training, for the two-seed mean.")
else:
    verdict = "holds" if rule["holds"] else "does not hold"
    print(f"Rule (f) {verdict}: the seeds' mean {rule['mean']:.3f} ({done}) is "
          f"{rule['gain_over_reference_mean']:+.3f} over the joint-v2 recipe's mean (needs more than "
          f"+{rule['reference_spread']:.3f}), and {'every' if rule['clause_2_every_seed_above_best'] else 'not every'} "
          f"seed is above its best seed ({rule['reference_best']:.3f}).")
if rule["holds"] is False:
    print("So on the dev set's web text this recipe does not show a gain over joint-v2's beyond the seed spread; "
          "what joint-v6 gains shows on the unseen real text below (forum, news and Wikipedia, the text its added "
          "label rounds come from).")
PY
)
  CV_NOTE="How these fits differ from the shipped joint-v6: it read the soft labels of MPNet teachers trained with the whole dev set, which would leak every fold into its student; each fit here reads instead the soft labels of one MPNet teacher that never saw the dev set (export/labels/soft/teacher-mpnet-nodev-s20.jsonl.gz, on exactly the pairs joint-v6's soft labels cover), with joint-v6's data and settings otherwise (export/EXPERIMENTS.md, session 20). Rule (f), fixed before any fit: the recipe improves on joint-v2's beyond the seed spread if the mean of two seeds' pooled regard macro-F1 exceeds the joint-v2 recipe's mean (0.648) by more than its seed spread (0.033) and each seed is above its best seed (0.668). $RULE_F"
  CV_ARGS=(--cv "${CV_RUNS[@]}" --cv-note "$CV_NOTE" --sweep export/sweeps/sweep4-final-recipe.jsonl
    --baseline-names final-recipe-cv5-s0 final-recipe-cv5-s1 final-recipe-cv5-s2
    --baseline-note "joint-v2's recipe (the default before the teachers and the real-text rounds: export/sweeps/sweep4-final-recipe.jsonl)")
else
  CV_ARGS=(--no-cv-reason "$NO_CV")
fi
# Session 26: the regard decision rule by CV over seed 0's out-of-fold predictions (negative offset only:
# the positive one swung with the fold), and rule (h)'s verdict on the unseen sets
RULE_JSON=export/sweeps/session26-decision-rule-joint-v6-cv-negative.json
RULE_NOTE="Not shipped (export/EXPERIMENTS.md, session 26, rule (h)): with these offsets the default cascade finds more negatives on four of the five unseen sets (negative recall +0.025 to +0.040; judge 15 unchanged) but on forum text buys them with precision (negative precision, offsets minus argmax: round-7 hold-out $(diff_of session26-cmp-heldout-cascade-neg06.json | grep -o 'negative precision [^,]*,[^)]*)'), judge 14 $(diff_of session26-cmp-r14-cascade-neg06.json | grep -o 'negative precision [^,]*,[^)]*)')), and the filter's drops are the negative decisions. The full grid (negative and positive offsets): $(.venv/bin/python -c "import json; r = json.load(open('export/sweeps/session26-decision-rule-joint-v6-cv-full.json'))['runs'][0]; print('regard macro-F1 %.3f with the rule (CV), positive offsets %s across the folds' % (r['with_rule_cv']['regard_macro_f1'], [o[2] for o in r['fold_offsets']]))")."
PYTHONPATH=$PWD .venv/bin/python -m export.model_card --model fairstream/data/models/joint-v6 \
  "${CV_ARGS[@]}" --unseen "$TMP/heldout-r7-card.json" --unseen-note "$NOTE_UNSEEN" \
  --decision-rule "$RULE_JSON" --decision-rule-note "$RULE_NOTE" \
  --notes "$NOTE_SAMPLE" > /dev/null
