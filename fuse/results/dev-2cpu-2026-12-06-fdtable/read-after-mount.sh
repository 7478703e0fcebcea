#!/bin/bash
# rd.sh KIND BIN N: N x (drop caches; dd read 256 MiB) on one mount
KIND=$1; BIN=$2; N=$3
S=/var/tmp/prof/src; M=/var/tmp/prof/mnt
[ -f $S/big ] || { dd if=/dev/urandom of=$S/big bs=1M count=256 status=none; sync; }
case $KIND in
 lf) $BIN --allow-other --threads 4 --io-uring $S $M & ;;
 lfdev) $BIN --allow-other --threads 4 $S $M & ;;
 hpu) $BIN --foreground --num-threads 4 -o allow_other,io_uring $S $M & ;;
esac
pid=$!
for _ in $(seq 100); do mountpoint -q $M && break; sleep 0.05; done
for i in $(seq $N); do [ -n "$PRE" ] && ls -f $M/b > /dev/null; sync; echo 3 > /proc/sys/vm/drop_caches; t0=$(date +%s%N); dd if=$M/big of=/dev/null bs=1M status=none; t1=$(date +%s%N); echo -n "$(( (t1-t0)/1000000 )) "; done; echo " $KIND"
umount $M || umount -l $M; wait $pid 2>/dev/null
