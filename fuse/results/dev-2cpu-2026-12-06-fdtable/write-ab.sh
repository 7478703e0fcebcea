#!/bin/bash
# wr.sh KIND BIN N: N x (256 MiB write + fsync through the mount; rm; sync) on one mount
KIND=$1; BIN=$2; N=$3
S=/var/tmp/prof/src; M=/var/tmp/prof/mnt
case $KIND in
 lf) $BIN --allow-other --threads 4 --io-uring $S $M & ;;
 hpu) $BIN --foreground --num-threads 4 -o allow_other,io_uring $S $M & ;;
esac
pid=$!
for _ in $(seq 100); do mountpoint -q $M && break; sleep 0.05; done
for i in $(seq $N); do sync; t0=$(date +%s%N); dd if=/dev/zero of=$M/w bs=1M count=256 conv=fsync status=none; t1=$(date +%s%N); echo -n "$(( (t1-t0)/1000000 )) "; rm -f $S/w; done; echo " $KIND"
umount $M || umount -l $M; wait $pid 2>/dev/null
