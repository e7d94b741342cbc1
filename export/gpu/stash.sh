#!/usr/bin/env bash
# Keep a carried folder on a warm lent machine between calls (a packed encoder too big for one call):
#   bash export/gpu/stash.sh .gpu-stash2        -> its files land in /root/stash
set -euo pipefail
mkdir -p /root/stash
cp -r "$1"/. /root/stash/
ls -la /root/stash
