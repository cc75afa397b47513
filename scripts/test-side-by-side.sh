#!/usr/bin/env bash
# The suite on a loaded machine: two fresh clones of HEAD run `npm test` side by side, RUNS times
# in a row (default 3). The suite must pass in both while the other runs (README, "npm test").
# Usage: scripts/test-side-by-side.sh [runs]   (logs and a summary under $TMPDIR/admin-api-side-by-side)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-3}"
work="${TMPDIR:-/tmp}/admin-api-side-by-side"
rev="$(git -C "$root" rev-parse HEAD)"
mkdir -p "$work"
echo "side by side at $rev, $runs run(s); logs in $work"
failed=0
for run in $(seq 1 "$runs"); do
  for side in a b; do
    rm -rf "$work/$run-$side"
    git clone -q "$root" "$work/$run-$side" && git -C "$work/$run-$side" checkout -q "$rev"
    (cd "$work/$run-$side" && . scripts/node.sh >/dev/null && npm ci --no-audit --no-fund --loglevel=warn >/dev/null)
  done
  started=$(date +%s)
  for side in a b; do
    (cd "$work/$run-$side" && npm test >"$work/$run-$side.log" 2>&1; echo "exit $?" >>"$work/$run-$side.log") &
  done
  wait
  for side in a b; do
    result="$(grep -E '^Tests:' "$work/$run-$side.log" | tail -1) ($(tail -1 "$work/$run-$side.log"))"
    echo "run $run $side: $result"
    grep -q '^exit 0$' "$work/$run-$side.log" || failed=1
    rm -rf "$work/$run-$side/node_modules"
  done
  echo "run $run took $(($(date +%s) - started)) s"
done
exit "$failed"
