#!/usr/bin/env bash
# fairstream quick start. Needs only python3 (>= 3.11); sets up .venv on first use (idempotent).
#   ./run.sh demo   filter the embedded sample corpus, print a summary, write a report
#   ./run.sh test   ruff + mypy + pytest (the default, non-slow suite)
#   ./run.sh test-all   the same including slow tests (training, real LLM)
set -euo pipefail
cd "$(dirname "$0")"
VENV="${FAIRSTREAM_VENV:-.venv}"
PY="$VENV/bin/python"

setup() {  # $1: extras to install
  local extras="$1"
  local stamp="$VENV/.fairstream-setup-$(cat pyproject.toml run.sh | sha1sum | cut -c1-12)-${extras//,/-}"
  [ -f "$stamp" ] && return 0
  python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "fairstream needs Python >= 3.11")'
  [ -x "$PY" ] || python3 -m venv "$VENV"
  "$PY" -m pip install -q --disable-pip-version-check --upgrade pip
  # the CPU build of torch first: resolving plain "torch" pulls several GB of CUDA wheels
  "$PY" -c 'import torch' 2>/dev/null || "$PY" -m pip install -q --disable-pip-version-check "torch==2.13.0"
  "$PY" -m pip install -q --disable-pip-version-check -e ".[$extras]"
  touch "$stamp"
}

# NLTK data: ../shared when present (tests, CI); otherwise fairstream falls back to its own Punkt
if [ -z "${NLTK_DATA:-}" ] && [ -d ../shared/data/nltk_data ]; then
  export NLTK_DATA="$(cd ../shared/data/nltk_data && pwd)"
fi

case "${1:-}" in
  demo)
    setup ""
    shift
    exec "$VENV/bin/fairstream" filter --output fairstream-demo "$@"
    ;;
  test|test-all)
    mode="$1"
    setup "dev,train"
    "$VENV/bin/ruff" check fairstream export tests benchmarks scripts
    "$VENV/bin/ruff" format --check fairstream export tests benchmarks scripts
    "$VENV/bin/mypy" fairstream
    if [ "$mode" = test-all ]; then
      exec "$PY" -m pytest -m "" -q
    fi
    exec "$PY" -m pytest -q
    ;;
  *)
    echo "usage: ./run.sh demo|test|test-all" >&2
    exit 2
    ;;
esac
