#!/usr/bin/env bash
# fairstream bench on a lent CUDA machine, in one device call (issue 15's GPU rows).
#
# The lent machines have PyTorch, transformers, onnxruntime (CPU), tokenizers, numpy and pyarrow,
# but not nltk or ahocorasick_rs, and ../shared does not travel. So, here first:
#
#   bash export/gpu/bench_gpu.sh --prepare
#
# which downloads those two wheels (pinned to the versions the tests ran with) into .whl/ and
# copies the corpus shards into .gpu-data/, both kept out of git by .git/info/exclude. Then one
# device call, carrying both folders:
#
#   run(command="bash export/gpu/bench_gpu.sh", carry=[".whl", ".gpu-data"], timeout_s=330)
#
# There it writes, each run under its own time limit in seconds (0 skips it):
#   $OUT/gpu/{bench.md,bench.json,batch_sweep.png} (GPU_S, default 170): the end-to-end run (torch on the
#       GPU, keyword stage in cores - 1 worker processes) and the GPU rows (PyTorch fp16 / bf16, batch
#       sweep, utilisation, memory) on every unique corpus pair, with the default model;
#   $OUT/cpu/... (CPU_S, default 120): the CPU baselines of the same host (ONNX int8 / fp32, PyTorch
#       fp32 / bf16) on 2,000 pairs, end to end on the first CPU_LIMIT documents (default 1,000);
#   $OUT/gpu-v6/..., $OUT/gpu-fast/... (V6_S, FAST_S, default 0): end to end and the bf16 rows with one
#       of the cascade's members alone (joint-v6, 6 layers: the model of issue 15's 50,000 pairs/s
#       goal; joint-v7-fast, 3 layers);
#   $OUT/gpu-inprocess/... (INPROC_S, default 0): the first run's bf16 rows with FAIRSTREAM_TOKENIZE_WORKERS=0
#       (tokenization in the model's process, as before session 24's tokenizer processes);
#   $OUT/gpu-lookahead/... (LOOK_S, default 0): end to end with --lookahead 4096 (the default is 1024);
#   $OUT/profile.txt (PROFILE_S, default 0): cProfile of the default model's stage on the GPU;
# plus $OUT/nvidia-smi.txt, $OUT/log.txt and $OUT/results.tgz (all of it: a call returns 8 files at
# most). Raise the call's timeout_s to the sum plus a minute. Each run writes bench.json after every
# backend, so a run stopped by its limit still returns what it measured ("complete": false). Session 6
# learned this the hard way: one run of everything (8,000 pairs, CPU batch 1 included) outlived a 230 s
# limit and returned nothing.
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
run_bench() {  # seconds, output folder, then fairstream bench's arguments; skipped when seconds is 0
  local seconds="$1" folder="$2"
  shift 2
  [ "$seconds" -gt 0 ] || return 0
  timeout "$seconds" python3 -m fairstream bench .gpu-data --no-progress -o "$OUT/$folder" "$@" 2>&1 \
    | grep -v "punkt_tab not found" | tee -a "$OUT/log.txt"
}
: > "$OUT/log.txt"
run_bench "${GPU_S:-170}" gpu --device cuda --rounds 3 --backends cuda-fp16,cuda-bf16
run_bench "${V6_S:-0}" gpu-v6 --device cuda --rounds 3 --model joint-v6 --backends cuda-bf16
# the same as the first run, tokenizing in the model's process (the A/B of the tokenizer processes)
FAIRSTREAM_TOKENIZE_WORKERS=0 run_bench "${INPROC_S:-0}" gpu-inprocess --device cuda --rounds 3 --backends cuda-bf16
# end to end with 4x the default look-ahead: bigger model calls keep every tokenizer process busy
run_bench "${LOOK_S:-0}" gpu-lookahead --device cuda --lookahead 4096 --max-pairs 2000 --batch-sizes 1024 \
  --backends cuda-bf16
run_bench "${CPU_S:-120}" cpu --device cpu --limit "${CPU_LIMIT:-1000}" --max-pairs 2000 \
  --backends int8,onnx-fp32,torch-fp32,torch-bf16 --batch-sizes 8,32,128
run_bench "${FAST_S:-0}" gpu-fast --device cuda --rounds 3 --model joint-v7-fast --backends cuda-bf16
if [ "${PROFILE_S:-0}" -gt 0 ]; then
  timeout "$PROFILE_S" python3 export/gpu/profile_model_stage.py .gpu-data --device cuda -o "$OUT/profile.txt" \
    2>&1 | grep -v "punkt_tab not found" | tail -5 | tee -a "$OUT/log.txt"
fi
# a call returns at most 8 files: everything in one archive too
(cd "$OUT" && tar czf results.tgz --exclude results.tgz .)
