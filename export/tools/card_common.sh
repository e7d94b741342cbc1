# Sourced by export/tools/make_card_joint_v4*.sh and make_card_joint_v5.sh (not run on its own): strict mode, the
# repository root as working folder, R = the folder of committed comparisons ($1, default export/sweeps),
# TMP = a scratch folder removed on exit, diff_of FILE = "b minus a with intervals" of one comparison and
# score_of FILE METRIC = side b's score on all items.
set -euo pipefail
cd "$(dirname "$0")/../.."
R=${1:-export/sweeps}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
diff_of() { .venv/bin/python export/tools/card_rows.py diff "$R/$1"; }
score_of() { .venv/bin/python export/tools/card_rows.py score "$R/$1" "$2"; }
