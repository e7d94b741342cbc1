#!/bin/bash
# Keep each finished CV fit's record in the repo and score what is there (export/EXPERIMENTS.md, session 20-21):
# RUNS/v6-sS-fK/{train_meta.json,dev_wsd.npy,dev_regard.npy} -> export/sweeps/cv-s20/v6-sS-fK/ (a few KB each:
# held-out fold probabilities, no text), then export/cv/score_cv.py on the committed copies.
#   bash export/cv/collect_folds.sh [RUNS]
set -eu
cd "$(dirname "$0")/../.."
export NLTK_DATA=${NLTK_DATA:-$PWD/../shared/data/nltk_data}
RUNS=${1:-runs/cv-s20}
KEEP=export/sweeps/cv-s20
for d in "$RUNS"/v6-s*-f*/; do
  [ -f "$d/train_meta.json" ] || continue
  n=$(basename "$d")
  mkdir -p "$KEEP/$n"
  cp "$d/train_meta.json" "$d/dev_wsd.npy" "$d/dev_regard.npy" "$KEEP/$n/"
done
${PYTHON:-.venv/bin/python} export/cv/score_cv.py --runs "$KEEP" --json export/sweeps/session20-cv-joint-v6-recipe.json
