#!/bin/bash
# lockref-fuse beside the passthrough servers users run instead, over the
# same tree in the same run: each server is mounted in turn (round-robin,
# ROUNDS times, each round starting with the next server), the same
# workloads run through it, and the summary gives each workload's median
# seconds and the ratio of the first server's time to each other's (above
# 1.00: the first is slower), those ratios paired by round, and the CPU
# time each server took.
#
# Usage: fuse/bench-peers.sh [-r ROUNDS] [-b BUSY] OUT SERVER...
#   BUSY: CPU-bound neighbours (busy loops, as an ordinary user) running
#   for the whole run, as on a server host that is rarely idle (0 by
#   default).
#   SERVER is KIND[@LABEL]=BINARY (the label tells two builds of one kind
#   apart, e.g. lockref-fuse@before), KIND one of
#     lockref-fuse         this crate's binary (its default 1 s timeouts, 4 threads,
#                          kernel passthrough on)
#     lockref-fuse-nopt    the same with --no-passthrough
#     lockref-fuse-noalias the same with --no-root-alias (the FUSE root
#                          itself at the mount point: its ACL read on every
#                          path walk through it by a non-owner)
#     lockref-fuse-tN      the same with N serving threads (--threads N)
#     lockref-fuse-uring   the same over FUSE-over-io_uring (--io-uring;
#                          Linux 6.14+ with the fuse module's enable_uring
#                          set)
#     passthrough_hp       libfuse's example/passthrough_hp (4 threads, its
#                          fixed 86400 s timeouts, kernel passthrough on)
#     passthrough_hp_nopt  the same with --nopassthrough
#     passthrough_hp_uring the same over FUSE-over-io_uring (-o io_uring;
#                          Linux 6.14+ with the fuse module's enable_uring
#                          set, and a libfuse built with liburing)
#     passthrough_ll       libfuse's example/passthrough_ll (timeout=1)
#     fuse-backend-rs      fuse-backend-rs's passthrough example (its
#                          PassthroughFs; 4 threads, 1 s timeouts, as built
#                          by fuse/build-fuse-backend-rs.sh)
#   Every server gets allow_other and default_permissions.
#
# The peers are not part of this repository: build them yourself, e.g.
# libfuse from its repository with
#   meson setup build -Dexamples=true && ninja -C build \
#       example/passthrough_hp example/passthrough_ll
# (with liburing's headers installed, e.g. Debian's liburing-dev, the same
# build serves FUSE-over-io_uring when asked, as passthrough_hp_uring)
# and fuse-backend-rs from its repository with
#   fuse/build-fuse-backend-rs.sh FUSE_BACKEND_RS_CLONE
# Needs root (mounts, drop_caches, a second user), python3 (PYTHON to
# choose one; user 65534 runs it too), git, setpriv, tar, cargo.
# Writes OUT/machine.txt (CPU, count, kernel), OUT/runs.csv
# (server,workload,round,seconds,server_cpu_seconds: the wall time of the
# workload and the CPU time the server's threads took meanwhile) and
# OUT/summary.md (peers-summary.py: medians, ratios, ratios paired by
# round, the servers' CPU time).
set -euo pipefail

rounds=3
py=${PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3)
busy=0
while [ $# -ge 2 ]; do
    case $1 in
        -r) rounds=$2; shift 2 ;;
        -b) busy=$2; shift 2 ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 2; }
out=$1; shift
mkdir -p "$out"
servers=("$@")
# Refused before the tree is made, not at the first mount.
for s in "${servers[@]}"; do
    case ${s%%[@=]*} in
        passthrough_hp_uring | lockref-fuse-uring)
            [ "$(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null)" = Y ] || {
                echo "${s%%[@=]*}: FUSE-over-io_uring is off (as root:" \
                    "echo Y > /sys/module/fuse/parameters/enable_uring)" >&2
                exit 1
            } ;;
    esac
done

work=$(mktemp -d /var/tmp/bench-peers.XXXXXX)
src=$work/src
mnt=$work/mnt
mkdir -p "$src" "$mnt"
neighbours=()
cleanup() {
    [ ${#neighbours[@]} -eq 0 ] || kill "${neighbours[@]}" 2>/dev/null || true
    mountpoint -q "$mnt" && umount -l "$mnt" || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "preparing the tree in $src"
mkdir -p "$src/many" "$src/tree"
chmod 755 "$work" "$src"
echo data > "$src/tree/file"
chmod -R a+rX "$src/tree"
(cd "$src/many" && seq 10000 | xargs touch)
dd if=/dev/urandom of="$src/big" bs=1M count=256 status=none
git init -q "$src/repo"
for d in $(seq 20); do
    mkdir -p "$src/repo/d$d"
    for f in $(seq 100); do echo "$d $f" > "$src/repo/d$d/f$f"; done
done
git -C "$src/repo" add -A
git -C "$src/repo" -c user.name=b -c user.email=b@b commit -q -m tree
# tar_x's archive (the repository's 2,000 files and 20 directories, kept
# outside the share) and cargo_build's crate (a binary of 24 modules, no
# dependencies, built offline), copied into the share for each run.
tar cf "$work/tree.tar" -C "$src/repo" $(cd "$src/repo" && echo d*)
mkdir -p "$work/crate/src"
printf '[package]\nname = "bench"\nversion = "0.1.0"\nedition = "2021"\n' > "$work/crate/Cargo.toml"
for m in $(seq 24); do
    printf 'pub fn f%d(x: u64) -> u64 { (0..x).map(|i| i * %d).sum() }\n' "$m" "$m" > "$work/crate/src/m$m.rs"
    echo "mod m$m;"
done > "$work/crate/src/main.rs"
echo "fn main() { println!(\"{}\", $(seq -s ' + ' 24 | sed 's/[0-9][0-9]*/m&::f&(3)/g')); }" >> "$work/crate/src/main.rs"
chmod -R a+rX "$work/crate"
sync
git config --global --add safe.directory '*'

mount_server() { # KIND BINARY
    case $1 in
        lockref-fuse) "$2" --allow-other --threads 4 "$src" "$mnt" & ;;
        lockref-fuse-nopt) "$2" --allow-other --threads 4 --no-passthrough "$src" "$mnt" & ;;
        lockref-fuse-noalias) "$2" --allow-other --threads 4 --no-root-alias "$src" "$mnt" & ;;
        lockref-fuse-t[1-9]*) "$2" --allow-other --threads "${1#lockref-fuse-t}" "$src" "$mnt" & ;;
        lockref-fuse-uring) "$2" --allow-other --threads 4 --io-uring "$src" "$mnt" & ;;
        passthrough_hp) "$2" --foreground --num-threads 4 -o allow_other "$src" "$mnt" & ;;
        passthrough_hp_nopt) "$2" --foreground --nopassthrough --num-threads 4 -o allow_other "$src" "$mnt" & ;;
        passthrough_hp_uring) "$2" --foreground --num-threads 4 -o allow_other,io_uring "$src" "$mnt" & ;;
        passthrough_ll) "$2" -f -o allow_other,default_permissions,timeout=1,source="$src" "$mnt" & ;;
        fuse-backend-rs) "$2" "$src" "$mnt" > /dev/null 2>&1 & ;;
        *) echo "unknown kind $1" >&2; exit 2 ;;
    esac
    server_pid=$!
    for _ in $(seq 100); do mountpoint -q "$mnt" && return; sleep 0.05; done
    echo "$1 did not mount" >&2; exit 1
}

unmount_server() { # KIND
    umount "$mnt" || umount -l "$mnt"
    # fuse-backend-rs's example waits for a signal after its threads end.
    [ "$1" = fuse-backend-rs ] && kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null || true
}

forget() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# The server's CPU time so far in nanoseconds: its threads' time on a CPU
# (schedstat), user and system, the kernel's work for its system calls
# included. Threads that have ended are not counted: the servers here keep
# theirs for the mount's life (libfuse's idle threads stay: its
# max_idle_threads is unlimited by default).
server_cpu() {
    cat /proc/"$server_pid"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}

py_loop='import os, sys
path, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for i in range(n):
    if mode == "missing":
        try: os.open(path, os.O_RDONLY)
        except FileNotFoundError: pass
    elif mode == "open":
        os.close(os.open(path, os.O_RDONLY))
    elif mode == "stat":
        os.lstat(path + str(i))
    else:
        fd = os.open(path + str(i), os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd); os.unlink(path + str(i))'

# Each workload: a name and a command; its time is measured around the
# command alone (preparation such as drop_caches is outside).
run_workloads() { # SERVER ROUND
    local name=$1 round=$2
    timed() { # WORKLOAD PREP CMD
        eval "$2"
        local t0 t1 c0 c1
        c0=$(server_cpu)
        t0=$(date +%s.%N)
        eval "$3" > /dev/null
        t1=$(date +%s.%N)
        c1=$(server_cpu)
        echo "$name,$1,$round,$(awk "BEGIN { printf \"%.6f,%.6f\", $t1 - $t0, ($c1 - $c0) / 1e9 }")" >> "$out/runs.csv"
    }
    timed failed_open "$py -c '$py_loop' $mnt/tree/missing 1 missing" \
        "$py -c '$py_loop' $mnt/tree/missing 20000 missing"
    timed open_close_root "$py -c '$py_loop' $mnt/tree/file 1 open" \
        "$py -c '$py_loop' $mnt/tree/file 20000 open"
    timed open_close_user "setpriv --reuid=65534 --regid=65534 --clear-groups $py -c '$py_loop' $mnt/tree/file 1 open" \
        "setpriv --reuid=65534 --regid=65534 --clear-groups $py -c '$py_loop' $mnt/tree/file 20000 open"
    timed create_unlink ":" "$py -c '$py_loop' $mnt/tree/new 2000 create"
    # Untimed first: git refreshes its index when the inode numbers differ
    # from the last server's (the libfuse servers and lockref-fuse report
    # the host's, fuse-backend-rs its own), which is not what is measured.
    timed git_status_cold "git -C $mnt/repo status --porcelain > /dev/null; forget" \
        "git -C $mnt/repo status --porcelain"
    # Names never looked up, right after the kernel forgot every inode
    # (a server that keeps forgotten inodes has many kept): the first
    # lookup of each.
    local fresh="$src/fresh/$name-$round"
    timed first_lookups "mkdir -p $fresh && (cd $fresh && seq 0 1999 | sed 's/^/f/' | xargs touch)" \
        "$py -c '$py_loop' $mnt/fresh/$name-$round/f 2000 stat"
    timed git_status_warm_x3 "git -C $mnt/repo status --porcelain > /dev/null" \
        "for i in 1 2 3; do git -C $mnt/repo status --porcelain; done"
    timed ls_f_10000 "forget" "ls -f $mnt/many"
    # 2,000 small files read cold, right after the kernel forgot every
    # inode and dropped every page: each an open, a read and a close.
    timed cold_read_small "forget" "cat $mnt/repo/d*/f*"
    # Read once untimed first: on the dev VM the first read of the file
    # after a mount took 0.145 s or 0.27-0.47 s by turns, whatever the
    # server (every server's reads are kernel passthrough there), and the
    # reads after it 0.145 s (fuse/results/dev-2cpu-2026-12-06-fdtable/).
    timed read_256m "dd if=$mnt/big of=/dev/null bs=1M status=none; forget" \
        "dd if=$mnt/big of=/dev/null bs=1M status=none"
    timed write_256m_fsync ":" "dd if=/dev/zero of=$mnt/w bs=1M count=256 conv=fsync status=none"
    local untar="$src/untar-$name-$round" crate="$src/crate-$name-$round"
    timed tar_x "mkdir -p $untar" "tar xf $work/tree.tar -C $mnt/untar-$name-$round"
    timed cargo_build "cp -r $work/crate $crate && sync" \
        "cargo build --offline -q --manifest-path $mnt/crate-$name-$round/Cargo.toml"
    rm -f "$src/w"
    rm -rf "$fresh" "$untar" "$crate"
}

: > "$out/runs.csv"
for _ in $(seq "$busy"); do
    setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'while :; do :; done' &
    neighbours+=($!)
done
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "${cpu:-an unnamed CPU}, $(nproc) CPUs, kernel $(uname -r), $busy busy neighbours" > "$out/machine.txt"
# Each round starts with the next server, so that none always runs first
# (after the tree was made) or always after the same one.
for round in $(seq "$rounds"); do
    for i in $(seq 0 $((${#servers[@]} - 1))); do
        s=${servers[$(( (i + round - 1) % ${#servers[@]} ))]}
        label=${s%%=*}; kind=${label%%@*}; bin=${s#*=}
        echo "round $round: $label"
        mount_server "$kind" "$bin"
        run_workloads "$label" "$round"
        unmount_server "$kind"
    done
done

"$py" "$(dirname "$0")/peers-summary.py" "$out/runs.csv" "${servers[@]%%=*}" > "$out/summary.md"
cat "$out/summary.md"
