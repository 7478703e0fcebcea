#!/usr/bin/env bash
# The hot entry, before and after a change to the lock: `wis -t hotinode`
# (every thread on one directory and one file cycling through zero, on
# the dashmap, lockref, lockref-keep and virtiofsd-style inode tables) at
# 1, 2, 4, 8 and 16 threads, quiet and beside busy neighbours, `-r 5`
# rounds round-robin over the variants, from each `wis` binary given, one
# after the other. Prints each run's summary; JSON beside.
#
#   harness/hot-entry.sh OUT_DIR WIS [WIS...]
#
# e.g. an older commit's `wis` built in a worktree, then this one's:
#   git worktree add /tmp/before <commit>
#   (cd /tmp/before && cargo build --release -p lockref-harness)
#   cargo build --release -p lockref-harness
#   harness/hot-entry.sh /tmp/hot /tmp/before/target/release/wis target/release/wis
set -euo pipefail
out=${1:?usage: hot-entry.sh OUT_DIR WIS [WIS...]}
shift
[ $# -gt 0 ] || { echo "usage: hot-entry.sh OUT_DIR WIS [WIS...]" >&2; exit 2; }
mkdir -p "$out"
threads=${THREADS:-1,2,4,8,16}
rounds=${ROUNDS:-5}
background=${BACKGROUND:-0 2}
n=0
for wis in "$@"; do
    n=$((n + 1))
    for bg in $background; do
        echo "== $wis, $bg busy neighbours"
        "$wis" -t hotinode -n "$threads" -r "$rounds" -q --no-pin \
            --background "$bg" --json "$out/hot-$n-bg$bg.json" |
            grep -E '^(testcase|hotinode)'
    done
done
