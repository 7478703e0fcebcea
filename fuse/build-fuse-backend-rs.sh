#!/bin/bash
# Builds fuse-backend-rs's own passthrough server, the example in its
# repository (tests/passthrough: its PassthroughFs served on /dev/fuse by
# its transport), as bench-peers.sh's `fuse-backend-rs` peer, with the
# settings every peer gets there: 4 serving threads (the example has 2)
# and 1 s entry and attribute timeouts (its default is 5 s). It mounts
# with allow_other and default_permissions already.
#
# Usage: fuse/build-fuse-backend-rs.sh REPO
#   REPO: a clone of https://github.com/cloud-hypervisor/fuse-backend-rs
#   (its example is edited in place, then built). Prints the binary's path.
set -euo pipefail
[ $# -eq 1 ] || { sed -n '2,12p' "$0"; exit 2; }
repo=$1
main=$repo/tests/passthrough/src/main.rs
if ! grep -q 'Daemon::new(src_dir, dest_dir, 4)' "$main"; then
    grep -q 'Daemon::new(src_dir, dest_dir, 2)' "$main" &&
        grep -q 'cfg.do_import = false;' "$main" ||
        { echo "$main: not the example this script knows" >&2; exit 1; }
    sed -i 's/Daemon::new(src_dir, dest_dir, 2)/Daemon::new(src_dir, dest_dir, 4)/' "$main"
    sed -i 's/cfg.do_import = false;/cfg.do_import = false;\n        cfg.entry_timeout = std::time::Duration::from_secs(1);\n        cfg.attr_timeout = std::time::Duration::from_secs(1);/' "$main"
fi
cd "$repo/tests/passthrough"
cargo build --release -q
target=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
echo "$target/release/passthrough"
