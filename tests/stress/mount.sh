#!/usr/bin/env bash
# mount.sh - the mount stress test: several processes with several threads
# each (kt_stress_fs) create, write, read, truncate, rename, unlink, mkdir,
# rmdir, readdir, symlink and stat in overlapping directories of one
# keytreefs mount for KT_STRESS_SECONDS seconds (default 20).
#
# Passes when no worker saw an unexpected error (EIO, ENOTCONN, ...), none
# died, the mount never hung, the daemon exits 0 on unmount with no
# sanitizer report in its log, and `keytree check` then finds no violation
# in the store.  The mount helpers and the trap that always unmounts come
# from tests/fuse/lib.sh; its watchdog (KTFS_TEST_LIMIT, set here to the
# stress time plus 120 s, below CTest's timeout) ends a hung run, and the
# workers get their own `timeout` besides.
#
# Environment (from CTest): KEYTREEFS, KTFS_PROBE, KT_STRESS_FS (the
# worker), KT_CLI (the keytree tool); KT_STRESS_SECONDS,
# KT_STRESS_PROCS (3), KT_STRESS_THREADS (4), KT_STRESS_SEED.
set -euo pipefail

secs=${KT_STRESS_SECONDS:-20}
procs=${KT_STRESS_PROCS:-3}
threads=${KT_STRESS_THREADS:-4}
seed=${KT_STRESS_SEED:-$(date +%s)}
: "${KT_STRESS_FS:?KT_STRESS_FS must name kt_stress_fs}"
: "${KT_CLI:?KT_CLI must name the keytree tool}"
export KTFS_TEST_LIMIT=$((secs + 120))

. "$(dirname "${BASH_SOURCE[0]}")/../fuse/lib.sh"

# The default, multi-threaded daemon, with no kernel caching of entries or
# attributes, so that every operation reaches the store.
ktfs_mount -o create,entry_timeout=0,attr_timeout=0
mkdir "$MNT/d0" "$MNT/d1" "$MNT/d2"

wrc=0
timeout -k 10 $((secs + 60)) \
	"$KT_STRESS_FS" "$MNT" "$secs" "$procs" "$threads" "$seed" || wrc=$?
if [ "$wrc" -eq 124 ] || [ "$wrc" -eq 137 ]; then
	fail "the workers hung (seed $seed)"
fi
[ "$wrc" -eq 0 ] || fail "the workers reported errors (seed $seed)"
ok "workers clean"

# The mount still answers, and lists what the workers left.
find "$MNT" | wc -l | sed 's/^/nodes left: /'

ktfs_umount || fail "unmount"
ok "unmounted, daemon exit 0, no sanitizer report"

out=$("$KT_CLI" -s "$STORE" check 2>&1) || {
	echo "$out" >&2
	fail "keytree check found violations (seed $seed)"
}
echo "$out"
ok "keytree check clean"
