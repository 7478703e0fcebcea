#!/usr/bin/env bash
# Seed 001's gain at each of several commits: builds `wis` at each (in
# worktrees under WORK, one shared target directory), then runs
# `wis -t openneg` from every build, ROUNDS passes with the builds'
# order reversed on every other pass (so drift does not favour the first),
# and prints each build's token / deferred ratio per pass and its median.
#
#   harness/bisect-openneg.sh [-n THREADS] COMMIT...
#
# e.g. harness/bisect-openneg.sh 36ed115 9932175 9a87821 3679e45 387bb81 HEAD
# Knobs (environment): WORK (default /var/tmp/bisect-openneg), ROUNDS
# (default 4), REPEAT (wis -r, default 3). Say which CPU model with the
# figures: the gain is mostly atomic read-modify-writes, whose price
# differs by CPU (harness/README.md, "Seed 001").
set -euo pipefail
threads=1
if [ "${1:-}" = "-n" ]; then threads=$2; shift 2; fi
[ $# -gt 0 ] || { sed -n '2,16p' "$0"; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/var/tmp/bisect-openneg}
mkdir -p "$work/bin"
for c in "$@"; do
    id=$(git -C "$repo" rev-parse --short "$c")
    [ -x "$work/bin/wis-$id" ] && continue
    wt=$work/wt-$id
    [ -d "$wt" ] || git -C "$repo" worktree add -f --detach "$wt" "$id" > /dev/null
    (cd "$wt" && CARGO_TARGET_DIR=$work/target cargo build --release -q -p lockref-harness --bin wis)
    cp "$work/target/release/wis" "$work/bin/wis-$id"
done
ids=()
for c in "$@"; do ids+=("$(git -C "$repo" rev-parse --short "$c")"); done
echo "# $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) CPUs; openneg at $threads thread(s)"
: > "$work/ratios"
for pass in $(seq "${ROUNDS:-4}"); do
    order=("${ids[@]}")
    if [ $((pass % 2)) = 0 ]; then
        order=(); for ((i = ${#ids[@]} - 1; i >= 0; i--)); do order+=("${ids[i]}"); done
    fi
    for id in "${order[@]}"; do
        ratio=$("$work/bin/wis-$id" -q -t openneg -n "$threads" -r "${REPEAT:-3}" |
            awk '$1 == "openneg" {print $8; exit}')
        echo "pass $pass $id $ratio"
        echo "$id ${ratio%x}" >> "$work/ratios"
    done
done
echo "# median token / deferred per build"
for id in "${ids[@]}"; do
    awk -v id="$id" '$1 == id {print $2}' "$work/ratios" | sort -n |
        awk -v id="$id" '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s %.2fx\n", id, m}'
done
