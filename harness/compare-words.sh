#!/usr/bin/env bash
# Every seed's testcases on both dentry words, from two builds of `wis`:
# the dcache on the compare-and-swap word (the default) and on the
# fetch_add word (`--cfg lockref_dcache_add_word`). The two binaries run
# alternately, ROUNDS times each (cas, add, cas, add, ...), so both sides
# share the machine's drift; `wis --compare` then prints each
# configuration's median over the rounds and the ratio add/cas.
#
#   harness/compare-words.sh [OUT]        (default OUT: target/compare-words)
#
# Knobs (environment): TESTS (default: every testcase), THREADS (default:
# 1 and the CPUs this process may use), DURATION (seconds per run, default
# 1), ROUNDS (default 3).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
out=${1:-target/compare-words}
mkdir -p "$out"

cargo build -q --release -p lockref-harness --bin wis
RUSTFLAGS="--cfg lockref_dcache_add_word" CARGO_TARGET_DIR=target/add-word \
    cargo build -q --release -p lockref-harness --bin wis
cas=target/release/wis
add=target/add-word/release/wis

args=(-q -d "${DURATION:-1}")
[ -n "${TESTS:-}" ] && args+=(-t "$TESTS")
[ -n "${THREADS:-}" ] && args+=(-n "$THREADS")
rm -f "$out"/cas-*.json "$out"/add-*.json
for ((round = 1; round <= ${ROUNDS:-3}; round++)); do
    echo "round $round: compare-and-swap word" >&2
    "$cas" "${args[@]}" --json "$out/cas-$round.json" > /dev/null
    echo "round $round: fetch_add word" >&2
    "$add" "${args[@]}" --json "$out/add-$round.json" > /dev/null
done
"$cas" --compare "$out"/cas-*.json --against "$out"/add-*.json | tee "$out/compare.txt"
