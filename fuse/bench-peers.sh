#!/bin/bash
# lockref-fuse beside the passthrough servers users run instead, over the
# same tree in the same run: each server is mounted in turn (round-robin,
# ROUNDS times), the same workloads run through it, and the summary gives
# each workload's median seconds and the ratio of the first server's time
# to each other's (above 1.00: the first is slower).
#
# Usage: fuse/bench-peers.sh [-r ROUNDS] OUT SERVER...
#   SERVER is KIND[@LABEL]=BINARY (the label tells two builds of one kind
#   apart, e.g. lockref-fuse@before), KIND one of
#     lockref-fuse         this crate's binary (its default 1 s timeouts, 4 threads,
#                          kernel passthrough on)
#     lockref-fuse-nopt    the same with --no-passthrough
#     lockref-fuse-noalias the same with --no-root-alias (the FUSE root
#                          itself at the mount point: its ACL read on every
#                          path walk through it by a non-owner)
#     passthrough_hp       libfuse's example/passthrough_hp (4 threads, its
#                          fixed 86400 s timeouts, kernel passthrough on)
#     passthrough_hp_nopt  the same with --nopassthrough
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
# and fuse-backend-rs from its repository with
#   fuse/build-fuse-backend-rs.sh FUSE_BACKEND_RS_CLONE
# Needs root (mounts, drop_caches, a second user), python3 (PYTHON to
# choose one; user 65534 runs it too), git, setpriv.
# Writes OUT/runs.csv (server,workload,round,seconds) and OUT/summary.md.
set -euo pipefail

rounds=3
py=${PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3)
if [ "${1:-}" = "-r" ]; then rounds=$2; shift 2; fi
[ $# -ge 2 ] || { sed -n '2,34p' "$0"; exit 2; }
out=$1; shift
mkdir -p "$out"
servers=("$@")

work=$(mktemp -d /var/tmp/bench-peers.XXXXXX)
src=$work/src
mnt=$work/mnt
mkdir -p "$src" "$mnt"
cleanup() {
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
git config --global --add safe.directory '*'

mount_server() { # KIND BINARY
    case $1 in
        lockref-fuse) "$2" --allow-other --threads 4 "$src" "$mnt" & ;;
        lockref-fuse-nopt) "$2" --allow-other --threads 4 --no-passthrough "$src" "$mnt" & ;;
        lockref-fuse-noalias) "$2" --allow-other --threads 4 --no-root-alias "$src" "$mnt" & ;;
        passthrough_hp) "$2" --foreground --num-threads 4 -o allow_other "$src" "$mnt" & ;;
        passthrough_hp_nopt) "$2" --foreground --nopassthrough --num-threads 4 -o allow_other "$src" "$mnt" & ;;
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

py_loop='import os, sys
path, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for i in range(n):
    if mode == "missing":
        try: os.open(path, os.O_RDONLY)
        except FileNotFoundError: pass
    elif mode == "open":
        os.close(os.open(path, os.O_RDONLY))
    else:
        fd = os.open(path + str(i), os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd); os.unlink(path + str(i))'

# Each workload: a name and a command; its time is measured around the
# command alone (preparation such as drop_caches is outside).
run_workloads() { # SERVER ROUND
    local name=$1 round=$2
    timed() { # WORKLOAD PREP CMD
        eval "$2"
        local t0 t1
        t0=$(date +%s.%N)
        eval "$3" > /dev/null
        t1=$(date +%s.%N)
        echo "$name,$1,$round,$(awk "BEGIN { printf \"%.6f\", $t1 - $t0 }")" >> "$out/runs.csv"
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
    timed git_status_warm_x3 "git -C $mnt/repo status --porcelain > /dev/null" \
        "for i in 1 2 3; do git -C $mnt/repo status --porcelain; done"
    timed ls_f_10000 "forget" "ls -f $mnt/many"
    timed read_256m "forget" "dd if=$mnt/big of=/dev/null bs=1M status=none"
    timed write_256m_fsync ":" "dd if=/dev/zero of=$mnt/w bs=1M count=256 conv=fsync status=none"
    rm -f "$src/w"
}

: > "$out/runs.csv"
for round in $(seq "$rounds"); do
    for s in "${servers[@]}"; do
        label=${s%%=*}; kind=${label%%@*}; bin=${s#*=}
        echo "round $round: $label"
        mount_server "$kind" "$bin"
        run_workloads "$label" "$round"
        unmount_server "$kind"
    done
done

python3 - "$out/runs.csv" "${servers[@]%%=*}" > "$out/summary.md" <<'EOF'
import csv, statistics, sys
runs, names = sys.argv[1], sys.argv[2:]
t = {}
for server, workload, _, secs in csv.reader(open(runs)):
    t.setdefault(workload, {}).setdefault(server, []).append(float(secs))
base, peers = names[0], names[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"Median seconds over the rounds on {cpu}; ratio = {base} / peer (above 1.00: {base} slower).\n")
print("| workload | " + " | ".join(names) + " | " + " | ".join(f"vs {p}" for p in peers) + " |")
print("|---" * (1 + len(names) + len(peers)) + "|")
for w, by in t.items():
    med = {n: statistics.median(by[n]) for n in names if n in by}
    cells = [f"{med[n]:.3f}" for n in names]
    ratios = [f"{med[base] / med[p]:.2f}" if base in med and med.get(p) else "-" for p in peers]
    print(f"| {w} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
EOF
cat "$out/summary.md"
