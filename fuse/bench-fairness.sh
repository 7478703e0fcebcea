#!/bin/bash
# One user's open+close rate through a lockref-fuse mount, alone and then
# beside another user's flood: N processes of user 1000 opening and closing
# another file in a loop (or, with --cpu-only, N processes that only spin,
# no file system at all: the share of the slowdown that is the CPUs').
# Prints the slowdown (beside / alone) of user 65534's 5,000 open+close.
#
# Usage: fuse/bench-fairness.sh [--cpu-only] BINARY [N]   (N: 16)
# Needs root (the mount, setpriv), python3, bc.
set -euo pipefail
cpu_only=false
if [ "${1:-}" = --cpu-only ]; then cpu_only=true; shift; fi
[ $# -ge 1 ] || { sed -n '2,9p' "$0"; exit 2; }
bin=$1 procs=${2:-16}
work=$(mktemp -d /var/tmp/bench-fairness.XXXXXX)
src=$work/src mnt=$work/mnt
mkdir -p "$src" "$mnt"
chmod 755 "$work" "$src" "$mnt"
echo b > "$src/b"; echo a > "$src/a"; chmod 644 "$src/a" "$src/b"
pids=()
cleanup() {
    [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
    mountpoint -q "$mnt" && umount -l "$mnt"
    rm -rf "$work"
}
trap cleanup EXIT
"$bin" --allow-other "$src" "$mnt" &
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.05; done
loop='import os, sys
path, n = sys.argv[1], int(sys.argv[2])
for i in range(n): os.close(os.open(path, os.O_RDONLY))'
timed() { # seconds of user 65534's 5,000 open+close
    local t0
    t0=$(date +%s.%N)
    setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "$loop" "$mnt/b" 5000
    echo "$(date +%s.%N) - $t0" | bc
}
timed > /dev/null
alone=$(timed)
for _ in $(seq "$procs"); do
    if $cpu_only; then
        setpriv --reuid=1000 --regid=1000 --clear-groups /usr/bin/python3 -c 'while True: pass' &
    else
        setpriv --reuid=1000 --regid=1000 --clear-groups /usr/bin/python3 -c "$loop" "$mnt/a" 1000000000 &
    fi
    pids+=($!)
done
sleep 1
beside=$(timed)
echo "$(basename "$bin") $([ "$cpu_only" = true ] && echo cpu-only || echo flood) processes=$procs alone=${alone}s beside=${beside}s slowdown=$(echo "scale=2; $beside / $alone" | bc)"
