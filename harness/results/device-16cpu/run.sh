#!/bin/bash
# One prepared run on the lent many-core machine. Everything it runs was
# built on the dev VM (static glibc) and carried here; results go to $OUT.
#   QUICK=1: a short local rehearsal.
set -u
b=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
q=${QUICK:-0}
if [ "$q" = 1 ]; then R=1; D=0.2; BIG=4; else R=3; D=0.5; BIG=$(nproc); fi
N=$(nproc)
echo "== machine $(date -u +%FT%TZ)"
lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|Vendor|MHz' ; uname -r; id -u; nproc
ls -l /dev/fuse 2>&1; for t in python3 git setpriv; do command -v $t || echo "no $t"; done
cat /sys/fs/cgroup/cpu.max 2>/dev/null; uptime

echo "== A. seed 001 at each commit: openneg -n 1,2,$N -r $R -d $D, then again at 1 thread in the reverse order"
commits="36ed115 9932175 9a87821 3679e45 387bb81 new"
for c in $commits; do
  timeout 60 "$b/wis-$c" -q -t openneg -n "1,2,$N" -r "$R" -d "$D" -w 0.1 | grep -E '^openneg' | sed "s/^/fwd $c /"
done
for c in $(echo $commits | tr ' ' '\n' | tac); do
  timeout 60 "$b/wis-$c" -q -t openneg -n 1 -r "$R" -d "$D" -w 0.1 | grep -E '^openneg' | sed "s/^/bwd $c /"
done

echo "== B. hot entry (hotinode), unpinned, threads 1,2,4,$N,$((2*N)),$((4*N)), quiet then $N busy neighbours"
for bg in 0 $N; do
  timeout 120 "$b/wis-new" -q --no-pin -t hotinode -n "1,2,4,$N,$((2*N)),$((4*N))" -r "$R" -d "$D" -w 0.1 --background "$bg" --json "$out/hot-bg$bg.json" | grep -E '^(testcase|hotinode)' | sed "s/^/bg$bg /"
done

echo "== C. seeds and tables, pinned, threads 1,$N (-r $R -d $D)"
timeout 150 "$b/wis-new" -q -t open3,open1,openneg,pseudo,creat,trylookup,stat2,lockref,inodes -n "1,$N" -r "$R" -d "$D" -w 0.1 --json "$out/seeds.json" --csv "$out/seeds.csv" | grep -vE '^\s*$'

echo "== D. FUSE: 20,000 of each (failed open, open+close as root and as user 65534, open+read 4 KiB+close), 3 rounds"
if [ -c /dev/fuse ] && [ "$(id -u)" = 0 ] && command -v python3 >/dev/null; then
  w=$(mktemp -d /tmp/dev-fuse.XXXX); src=$w/src; mnt=$w/mnt
  mkdir -p "$src/tree" "$mnt"; chmod 755 "$w" "$src"; echo data > "$src/tree/file"; chmod -R a+rX "$src"
  n=20000; [ "$q" = 1 ] && n=2000
  cat > "$w/loop.py" <<'PY'
import os, sys, time
path, n, mode, user = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "user"
if user:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
t0 = time.perf_counter()
for i in range(n):
    if mode == "missing":
        try: os.open(path, os.O_RDONLY)
        except FileNotFoundError: pass
    elif mode == "read":
        fd = os.open(path, os.O_RDONLY); os.read(fd, 4096); os.close(fd)
    else:
        os.close(os.open(path, os.O_RDONLY))
print(f"{time.perf_counter() - t0:.4f}")
PY
  for round in 1 2 3; do
    for kind in lockref-fuse lockref-fuse-387bb81 lockref-fuse-nopt fuse-backend-rs passthrough_hp; do
      case $kind in
        lockref-fuse) "$b/lockref-fuse" --allow-other --threads 4 "$src" "$mnt" & ;;
        lockref-fuse-387bb81) "$b/lockref-fuse-387bb81" --allow-other --threads 4 "$src" "$mnt" & ;;
        lockref-fuse-nopt) "$b/lockref-fuse" --allow-other --threads 4 --no-passthrough "$src" "$mnt" & ;;
        fuse-backend-rs) "$b/fbr-passthrough" "$src" "$mnt" > /dev/null 2>&1 & ;;
        passthrough_hp) "$b/hp/example/passthrough_hp" --foreground --num-threads 4 -o allow_other "$src" "$mnt" > /dev/null 2>&1 & ;;
      esac
      pid=$!
      ok=0; for _ in $(seq 100); do mountpoint -q "$mnt" && { ok=1; break; }; sleep 0.05; done
      if [ $ok = 0 ]; then echo "$kind did not mount"; kill $pid 2>/dev/null; wait $pid 2>/dev/null; continue; fi
      python3 "$w/loop.py" "$mnt/tree/file" 10 open root > /dev/null
      line="fuse,$round,$kind"
      for wl in "missing root" "open root" "open user" "read root"; do
        read -r m u <<< "$wl"
        p=$mnt/tree/file; [ "$m" = missing ] && p=$mnt/tree/missing
        line="$line,${m}_$u=$(timeout 60 python3 "$w/loop.py" "$p" $n $m $u)"
      done
      echo "$line"
      umount "$mnt" || umount -l "$mnt"
      kill $pid 2>/dev/null; wait $pid 2>/dev/null
    done
  done
  rm -rf "$w"
else
  echo "skipped: no /dev/fuse, not root, or no python3"
fi
echo "== done $(date -u +%FT%TZ)"
