#!/bin/bash
KIND=$1; BIN=$2; S=/var/tmp/prof/src; M=/var/tmp/prof/mnt
[ -f /var/tmp/prof/tree.tar ] || tar cf /var/tmp/prof/tree.tar -C $S/repo $(cd $S/repo && echo d*)
case $KIND in
 lf) $BIN --allow-other --threads 4 --io-uring $S $M & ;;
 hpu) $BIN --foreground --num-threads 4 -o allow_other,io_uring $S $M & ;;
esac; pid=$!
for _ in $(seq 100); do mountpoint -q $M && break; sleep 0.05; done
rm -rf $S/untar; mkdir -p $S/untar
strace -c -f -p $pid -o /var/tmp/prof/tar.$KIND.strace & st=$!; sleep 1
tar xf /var/tmp/prof/tree.tar -C $M/untar; sleep 0.3
kill -INT $st; wait $st
umount $M || umount -l $M; wait $pid 2>/dev/null; rm -rf $S/untar
awk 'NR>2 && $NF != "syscall" && $1 !~ /^-/ {print $4, $NF}' /var/tmp/prof/tar.$KIND.strace | sort -nr | head -20 | tr '\n' ';'; echo
