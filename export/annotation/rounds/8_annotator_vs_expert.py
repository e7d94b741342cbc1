"""How close an annotator agent following GUIDE.md comes to the expert dev labels.

The sample (labels/checks/annotator-on-dev-sample.jsonl, answers by dev uid, made blind) holds every
dev item with negative or positive regard, 110 of the neutral ones and 40 of the not-yes ones
(seed 11); counts are re-weighted to the dev set's proportions before computing kappa and F1.
"""

import collections
import json
import sys

dev_path = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/labels/dev.jsonl"
answers_path = sys.argv[2] if len(sys.argv) > 2 else "labels/checks/annotator-on-dev-sample.jsonl"
dev = {r["uid"]: r for r in map(json.loads, open(dev_path))}
answers = [json.loads(x) for x in open(answers_path)]
n_neutral = sum(r["wsd"] == "yes" and r["regard"] == "neutral" for r in dev.values())
n_not_yes = sum(r["wsd"] != "yes" for r in dev.values())
weight = {"negative": 1.0, "positive": 1.0, "neutral": n_neutral / 110, "not-yes": n_not_yes / 40}
labels = ["negative", "neutral", "positive"]
wsd = collections.Counter()
regard = collections.Counter()
raw = collections.Counter()
for a in answers:
    g = dev[a["uid"]]
    stratum = g["regard"] if g["wsd"] == "yes" else "not-yes"
    wsd[(g["wsd"] == "yes", a["wsd"] == "yes")] += weight[stratum]
    if g["wsd"] == "yes" and a["wsd"] == "yes":
        regard[(g["regard"], a["regard"])] += weight[stratum]
        raw[(g["regard"], a["regard"])] += 1
n = sum(wsd.values())
po = (wsd[(True, True)] + wsd[(False, False)]) / n
p_gold = (wsd[(True, True)] + wsd[(True, False)]) / n
p_ann = (wsd[(True, True)] + wsd[(False, True)]) / n
pe = p_gold * p_ann + (1 - p_gold) * (1 - p_ann)
f1 = {}
for lab in labels:
    tp = regard[(lab, lab)]
    fp = sum(regard[(g, lab)] for g in labels if g != lab)
    fn = sum(regard[(lab, p)] for p in labels if p != lab)
    f1[lab] = 2 * tp / (2 * tp + fp + fn)
print(f"items {len(answers)}; WSD kappa (re-weighted) {(po - pe) / (1 - pe):.3f}")
print(
    "regard F1 (re-weighted):",
    {k: round(v, 3) for k, v in f1.items()},
    "macro",
    round(sum(f1.values()) / 3, 3),
)
print("regard confusion, gold rows x annotator columns (raw counts, both WSD yes):")
for g in labels:
    print(f"  {g:9s}", [raw[(g, p)] for p in labels])
