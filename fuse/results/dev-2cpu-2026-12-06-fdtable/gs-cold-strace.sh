#!/bin/bash
# gss.sh BIN: strace -c -f of the server over one cold git status (after one warm)
BIN=$1; S=/var/tmp/prof/src; M=/var/tmp/prof/mnt
$BIN --allow-other --threads 4 --io-uring $S $M & pid=$!
for _ in $(seq 100); do mountpoint -q $M && break; sleep 0.05; done
git -C $M/repo status --porcelain > /dev/null
strace -c -f -p $pid -o /var/tmp/prof/gss.out & st=$!; sleep 1
sync; echo 3 > /proc/sys/vm/drop_caches; sleep 0.5
git -C $M/repo status --porcelain > /dev/null; sleep 0.5
kill -INT $st; wait $st
umount $M || umount -l $M; wait $pid 2>/dev/null
awk 'NR>2 && $NF != "syscall" && $1 !~ /^-/ {print}' /var/tmp/prof/gss.out | sort -k4 -nr | head -12
