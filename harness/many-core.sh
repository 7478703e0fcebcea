#!/usr/bin/env bash
# A prepared many-core run of the harness, for a machine with no network.
#
#   harness/many-core.sh build [BUNDLE]   here: build the release binary and
#                                         gather it and the traces (default
#                                         BUNDLE: target/many-core)
#   BUNDLE/many-core.sh run [OUT]         there: the full sweep, every
#                                         testcase at 1..N threads (N: the
#                                         CPUs the process may use), then the
#                                         hot entry (hotinode: dashmap beside
#                                         the lockref tables) at 1, 2, 4, ...
#                                         64 threads, past N, unpinned, quiet
#                                         and beside busy neighbours, then the
#                                         shipped trace replayed; CSV, JSON,
#                                         SVG and PNG into OUT/<machine>/
#                                         (default OUT: ./results)
#
# Knobs (environment): DURATION (seconds per run, default 1), REPEAT (runs
# per point, median reported, default 3), MAX_THREADS (default N), STEP
# (thread counts 1 then every STEP up to MAX_THREADS, default 1),
# HOT_THREADS (the hot entry's thread counts, default 1,2,4,8,16,32,64),
# HOT_BACKGROUND (its busy neighbours, runs of each, default "0 2").
#
# The binary is built here and carried: nothing is fetched or compiled
# there. It needs the same architecture and a glibc at least as new.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

build() {
    local bundle=${1:-target/many-core}
    cd "$here/.."
    cargo build --release -p lockref-harness --bin wis
    mkdir -p "$bundle/traces"
    cp target/release/wis "$bundle/wis"
    cp harness/traces/*.trace "$bundle/traces/"
    cp harness/many-core.sh "$bundle/many-core.sh"
    echo "bundle ready: $bundle ($(du -sh "$bundle" | cut -f1)); run it there with: $bundle/many-core.sh run"
}

machine_name() {
    local model
    model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
    [ -n "$model" ] || model=$(uname -m)
    printf '%s-%scpu' "$model" "$(nproc)" | tr -cs 'A-Za-z0-9._-' '-' | sed 's/^-//; s/-$//'
}

run() {
    local out=${1:-results}
    local wis="$here/wis"
    [ -x "$wis" ] || { echo "no wis next to this script: run '$0 build' first" >&2; exit 2; }
    local n=${MAX_THREADS:-$(nproc)} step=${STEP:-1}
    local threads="1" t
    for ((t = step; t <= n; t += step)); do [ "$t" -gt 1 ] && threads="$threads,$t"; done
    case ",$threads," in *",$n,"*) ;; *) threads="$threads,$n" ;; esac
    local dir
    dir="$out/$(machine_name)"
    mkdir -p "$dir"
    {
        echo "# lockref many-core run, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "# $(uname -a)"
        echo "# threads: $threads; duration ${DURATION:-1} s; repeat ${REPEAT:-3}"
        lscpu 2>/dev/null | sed 's/^/# /' || true
    } > "$dir/machine.txt"
    "$wis" -q -n "$threads" -d "${DURATION:-1}" -r "${REPEAT:-3}" \
        --csv "$dir/wis.csv" --json "$dir/wis.json" --svg "$dir/wis.svg" --png "$dir/wis.png" \
        | tee "$dir/wis.txt"
    # The hot entry: every thread on one directory and one file cycling
    # through zero, dashmap + Arc beside the lockref tables, up to 64
    # threads whatever the CPUs (unpinned: a server's threads are not),
    # quiet and beside busy neighbours.
    local bg
    for bg in ${HOT_BACKGROUND:-0 2}; do
        "$wis" -q -t hotinode -n "${HOT_THREADS:-1,2,4,8,16,32,64}" -d "${DURATION:-1}" \
            -r "${REPEAT:-3}" --no-pin --background "$bg" \
            --csv "$dir/hotinode-bg$bg.csv" --json "$dir/hotinode-bg$bg.json" \
            --svg "$dir/hotinode-bg$bg.svg" --png "$dir/hotinode-bg$bg.png" \
            | tee "$dir/hotinode-bg$bg.txt"
    done
    for tr in "$here"/traces/*.trace; do
        local name
        name=$(basename "$tr" .trace)
        "$wis" -q -n "$threads" -d "${DURATION:-1}" -r "${REPEAT:-3}" --replay "$tr" \
            --csv "$dir/replay-$name.csv" --json "$dir/replay-$name.json" \
            --svg "$dir/replay-$name.svg" --png "$dir/replay-$name.png" \
            | tee "$dir/replay-$name.txt"
    done
    echo "results in $dir"
}

case "${1:-}" in
    build) shift; build "$@" ;;
    run) shift; run "$@" ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
esac
