#!/bin/bash
# gsab.sh ROUNDS RUNS NAME=KIND:BIN...: cold git status A/B. In each round, each server
# mounted in turn (rotating), RUNS runs of (sync; drop_caches; git status), printing
# "round server wall_us server_cpu_us" per run.
ROUNDS=$1; RUNS=$2; shift 2; servers=("$@")
S=/var/tmp/prof/src; M=/var/tmp/prof/mnt
if [ ! -d $S/repo/.git ]; then git init -q $S/repo; for d in $(seq 20); do mkdir -p $S/repo/d$d; for f in $(seq 100); do echo "$d $f" > $S/repo/d$d/f$f; done; done
  git -C $S/repo add -A; git -C $S/repo -c user.name=b -c user.email=b@b commit -q -m tree; fi
git config --global --add safe.directory '*'
cpu() { cat /proc/$pid/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
for r in $(seq $ROUNDS); do for i in $(seq 0 $((${#servers[@]}-1))); do
  s=${servers[$(( (i + r - 1) % ${#servers[@]} ))]}; name=${s%%=*}; kb=${s#*=}; kind=${kb%%:*}; bin=${kb#*:}
  case $kind in
   lf) $bin --allow-other --threads 4 --io-uring $S $M & ;;
   hpu) $bin --foreground --num-threads 4 -o allow_other,io_uring $S $M & ;;
  esac; pid=$!
  for _ in $(seq 100); do mountpoint -q $M && break; sleep 0.05; done
  git -C $M/repo status --porcelain > /dev/null
  for n in $(seq $RUNS); do sync; echo 3 > /proc/sys/vm/drop_caches
    c0=$(cpu); t0=$(date +%s%N); git -C $M/repo status --porcelain > /dev/null; t1=$(date +%s%N); c1=$(cpu)
    echo "$r $name $(( (t1-t0)/1000 )) $(( (c1-c0)/1000 ))"; done
  umount $M || umount -l $M; wait $pid 2>/dev/null
done; done
