#!/usr/bin/env bash
# A prepared many-core run of the harness, for a machine with no network.
#
#   harness/many-core.sh build [BUNDLE]   here: build the release binary and
#                                         gather it and the traces (default
#                                         BUNDLE: target/many-core)
#   BUNDLE/many-core.sh run [OUT]         there: the full sweep, every
#                                         testcase at 1..N threads (N: the
#                                         CPUs the process may use), then the
#                                         shipped trace replayed; CSV, JSON,
#                                         SVG and PNG into OUT/<machine>/
#                                         (default OUT: ./results)
#
# Knobs (environment): DURATION (seconds per run, default 1), REPEAT (runs
# per point, median reported, default 3), MAX_THREADS (default N), STEP
# (thread counts 1 then every STEP up to MAX_THREADS, default 1).
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
