#!/usr/bin/env bash
# fairstream bench on a lent CUDA machine, in one device call (issue 15's GPU rows).
#
# The lent machines have PyTorch, transformers, onnxruntime (CPU), tokenizers, numpy and pyarrow,
# but not nltk or ahocorasick_rs, and ../shared does not travel. So, here first:
#
#   bash scripts/gpu/bench_gpu.sh --prepare
#
# which downloads those two wheels (pinned to the versions the tests ran with) into .whl/ and
# copies the corpus shards into .gpu-data/, both kept out of git by .git/info/exclude. Then one
# device call, carrying both folders:
#
#   run(command="bash scripts/gpu/bench_gpu.sh", carry=[".whl", ".gpu-data"], timeout_s=560)
#
# There it writes $OUT/bench/{bench.md,bench.json,batch_sweep.png}, $OUT/nvidia-smi.txt and
# $OUT/log.txt (8,000 pairs and 2 rounds keep the CPU rows of a 16-core host within the call): the end-to-end run (torch bf16 on the GPU, keyword stage in cores - 1 worker
# processes), the model stage of every backend over a batch sweep, GPU utilisation and memory.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = "--prepare" ]; then
  PY="${PYTHON:-.venv/bin/python}"
  rm -rf .whl .gpu-data
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "nltk==3.10.4" "ahocorasick-rs==1.0.3"
  mkdir -p .gpu-data
  cp ../shared/data/corpus/*.jsonl.gz .gpu-data/
  for path in /.whl/ /.gpu-data/; do
    grep -qxF "$path" .git/info/exclude 2>/dev/null || echo "$path" >> .git/info/exclude
  done
  du -sh .whl .gpu-data
  exit 0
fi

OUT="${OUT:-out}"
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD"
export PYTHONUNBUFFERED=1
{
  nvidia-smi || true
  python3 -c 'import torch, transformers, onnxruntime; print(torch.__version__, transformers.__version__, onnxruntime.__version__, torch.cuda.get_device_name(0))'
} > "$OUT/nvidia-smi.txt" 2>&1
set -o pipefail
python3 -m fairstream bench .gpu-data --device cuda --rounds 2 --max-pairs 8000 --no-progress \
  -o "$OUT/bench" 2>&1 | tee "$OUT/log.txt"
