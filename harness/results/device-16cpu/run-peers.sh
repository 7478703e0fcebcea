#!/bin/bash
# The second prepared run: fuse/bench-peers.sh, every workload, lockref-fuse
# beside the peers, 3 rounds, on the lent machine. Results into $OUT/peers.
set -u
b=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
exec > >(tee "$out/log2.txt") 2>&1
lscpu | grep -E 'Model name|^CPU\(s\)'; uptime
for c in /usr/bin/python3 /usr/local/bin/python3 $(command -v python3); do
  [ -x "$c" ] && setpriv --reuid=65534 --regid=65534 --clear-groups "$c" -c 1 2>/dev/null && { export PYTHON=$c; break; }
done
echo "PYTHON=${PYTHON:-none}"
[ -n "${PYTHON:-}" ] || exit 1
timeout "${LIMIT:-400}" bash "$b/bench-peers.sh" -r "${ROUNDS:-3}" "$out/peers" \
  lockref-fuse="$b/lockref-fuse" lockref-fuse-nopt="$b/lockref-fuse" \
  passthrough_hp="$b/hp/example/passthrough_hp" passthrough_hp_nopt="$b/hp/example/passthrough_hp" \
  passthrough_ll="$b/hp/example/passthrough_ll" fuse-backend-rs="$b/fbr-passthrough"
echo "rc=$?"
cat "$out/peers/summary.md" 2>/dev/null
