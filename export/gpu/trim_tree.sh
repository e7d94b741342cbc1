#!/usr/bin/env bash
# What a device call carries is the checkout's tracked and untracked-not-ignored files, at most 64 MiB
# with the carried folders; the tracked tree is ~180 MB (seven shipped model folders, the label files).
# Before a call that needs only the default cascade (joint-v6 + joint-v7-fast):
#
#   bash export/gpu/trim_tree.sh            # untrack the rest in the index and ignore it (files stay)
#   run(...)                                 # the device call
#   bash export/gpu/trim_tree.sh --restore  # index back to HEAD, .git/info/exclude as it was
#
# Commit first: --restore resets the index to HEAD (working-tree files are never touched).
set -euo pipefail
cd "$(dirname "$0")/../.."
TRIM=(labels fairstream/data/models/joint-v2 fairstream/data/models/joint-v3 fairstream/data/models/joint-v4
      fairstream/data/models/joint-v4-fast fairstream/data/models/joint-v5)
BACKUP=.git/info/exclude.before-trim
if [ "${1:-}" = "--restore" ]; then
  git reset -q
  [ -f "$BACKUP" ] && mv "$BACKUP" .git/info/exclude
  git status --short | head
  exit 0
fi
if [ -n "$(git diff --cached --name-only)" ]; then
  echo "trim_tree.sh: the index has staged changes; commit them first (--restore resets the index)" >&2
  exit 1
fi
[ -f "$BACKUP" ] || cp .git/info/exclude "$BACKUP" 2>/dev/null || : > "$BACKUP"
git rm -r -q --cached "${TRIM[@]}" > /dev/null
for path in "${TRIM[@]}"; do
  grep -qxF "/$path/" .git/info/exclude || echo "/$path/" >> .git/info/exclude
done
{ git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 du -cb 2>/dev/null | tail -1 \
  | awk '{printf "trim_tree.sh: %.1f MiB of the tree travel (plus the carried folders; limit 64 MiB)\n", $1 / 1048576}'
