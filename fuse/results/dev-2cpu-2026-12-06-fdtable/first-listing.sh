#!/bin/bash
# lsf2.sh BIN KEPT [server args]: mount, stat KEPT files of a/, forget, time ls -f of b/
BIN=$1; KEPT=$2; shift 2
S=/var/tmp/prof/src; M=/var/tmp/prof/mnt
if [ ! -d $S/b ]; then mkdir -p $S/a $S/b; (cd $S/a && seq 8000 | xargs touch); (cd $S/b && seq 10000 | xargs touch); sync; fi
mkdir -p $M
$BIN --allow-other --threads 4 --io-uring "$@" $S $M & pid=$!
for _ in $(seq 100); do mountpoint -q $M && break; sleep 0.05; done
if [ "$KEPT" -gt 0 ]; then (cd $M/a && seq $KEPT | xargs stat -c %i > /dev/null); fi
sync; echo 3 > /proc/sys/vm/drop_caches; sleep ${SLEEP:-0}
c0=$(awk '{print $14+$15}' /proc/$pid/stat)
t0=$(date +%s%N); ls -f $M/b > /dev/null; t1=$(date +%s%N)
c1=$(awk '{print $14+$15}' /proc/$pid/stat)
echo "kept=$KEPT wall_ms=$(( (t1-t0)/1000000 )) server_ticks=$((c1-c0)) fds=$(ls /proc/$pid/fd | wc -l)"
umount $M || umount -l $M; wait $pid 2>/dev/null
