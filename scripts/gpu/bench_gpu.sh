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
#   run(command="bash scripts/gpu/bench_gpu.sh", carry=[".whl", ".gpu-data"], timeout_s=330)
#
# There it writes, in two runs each under its own time limit (GPU_S, CPU_S seconds):
#   $OUT/gpu/{bench.md,bench.json,batch_sweep.png}: the end-to-end run (torch on the GPU, keyword stage
#       in cores - 1 worker processes) and the GPU rows (PyTorch fp16 / bf16, batch sweep, utilisation,
#       memory) on every unique corpus pair;
#   $OUT/cpu/...: the CPU baselines of the same host (ONNX int8 / fp32, PyTorch fp32) on 2,000 pairs;
# with FAST_S=N (seconds, default 0: skipped; pass it in the command and raise timeout_s by N),
#   $OUT/gpu-fast/...: the end to end and the fp16 rows again with the 3-layer joint-v7-fast;
# plus $OUT/nvidia-smi.txt and $OUT/log.txt. Each run writes bench.json after every backend, so a run
# stopped by its limit still returns what it measured ("complete": false). Session 6 learned this the
# hard way: one run of everything (8,000 pairs, CPU batch 1 included) outlived a 230 s limit and
# returned nothing.
set -uo pipefail
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
export NLTK_DATA="${NLTK_DATA:-/nonexistent}"  # the shipped Punkt parameters (as the lent machine has no data)
timeout "${GPU_S:-170}" python3 -m fairstream bench .gpu-data --device cuda --rounds 2 --no-progress \
  --backends cuda-fp16,cuda-bf16 -o "$OUT/gpu" 2>&1 | grep -v "punkt_tab not found" | tee "$OUT/log.txt"
timeout "${CPU_S:-120}" python3 -m fairstream bench .gpu-data --device cpu --max-pairs 2000 --no-progress \
  --backends int8,onnx-fp32,torch-fp32,torch-bf16 --batch-sizes 8,32,128 -o "$OUT/cpu" 2>&1 \
  | grep -v "punkt_tab not found" | tee -a "$OUT/log.txt"
if [ "${FAST_S:-0}" -gt 0 ]; then
  timeout "$FAST_S" python3 -m fairstream bench .gpu-data --device cuda --no-progress --model joint-v7-fast \
    --backends cuda-fp16 -o "$OUT/gpu-fast" 2>&1 | grep -v "punkt_tab not found" | tee -a "$OUT/log.txt"
fi
