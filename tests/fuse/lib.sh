# lib.sh - sourced by every FUSE test (tests/fuse/*.sh).
#
# Gives each test a temporary directory with a store ($STORE) and a
# mountpoint ($MNT), ktfs_mount/ktfs_umount to run keytreefs in the
# foreground in the background, and a trap that always unmounts, stops the
# daemon and removes the directory, so a failing test never leaves a stale
# mount.  The test fails when the daemon exits non-zero or prints a
# sanitizer report.  A watchdog ends the test after KTFS_TEST_LIMIT seconds
# (default 240), below CTest's timeout, so the trap still runs.
#
# KTFS_MODE=daemon runs each mount as users do by default, without -f: the
# command detaches and a daemon serves the mount.  ktfs_daemon_run starts
# it, adopts the daemon and ends with its status, so the test still sees
# how the daemon ended; the daemon's sanitizer reports go to files
# ($KTFS_TMP/san.*), since its stderr is /dev/null once it has detached.
# A mount with -d (debug, which implies -f) stays in front in either mode.
#
# KTFS_ENGINE=rados makes $STORE a new tree, rados:keytree/f-PID-RANDOM,
# in the cluster KEYTREE_CEPH_CONF names (CTest's `ceph` fixture), instead
# of a directory (KTFS_ENGINE=leveldb, the default); keytreefs, the CLI
# and the probe find the cluster through that variable.  A part of a test
# that only makes sense on one engine (files in the store's directory, a
# holder process, watched invalidation, statfs figures) runs under
# `if ktfs_engine_is ENGINE REASON; then ... fi`, which prints
# "skip - REASON (engine)" on the other.  A script that makes many nodes
# takes its sizes from ktfs_size, smaller on RADOS, where every commit is
# several round trips to the cluster.
#
# Environment (set by CTest): KEYTREEFS, KTFS_PROBE, KTFS_DAEMON_RUN,
# KTFS_MODE (foreground, the default, or daemon), KTFS_ENGINE.
set -euo pipefail

: "${KEYTREEFS:?KEYTREEFS must name the keytreefs binary}"
: "${KTFS_PROBE:?KTFS_PROBE must name the ktfs_probe binary}"

KTFS_ENGINE=${KTFS_ENGINE:-leveldb}
case $KTFS_ENGINE in
leveldb) ;;
rados)
	: "${KEYTREE_CEPH_CONF:?KTFS_ENGINE=rados needs KEYTREE_CEPH_CONF}"
	if [ ! -f "$KEYTREE_CEPH_CONF" ]; then
		echo "FAIL: KEYTREE_CEPH_CONF: no file $KEYTREE_CEPH_CONF" >&2
		exit 1
	fi
	export KEYTREE_CEPH_CONF
	;;
*)
	echo "FAIL: KTFS_ENGINE is '$KTFS_ENGINE'; use leveldb or rados" >&2
	exit 1
	;;
esac

export TZ=UTC LC_ALL=C.UTF-8
KTFS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ktfs-test.XXXXXX")
STORE=$KTFS_TMP/store
KTFS_TREES=() # RADOS trees to destroy at the end (ktfs_tree)
# ktfs_tree NAME: a RADOS tree of this test, destroyed by the trap.
ktfs_tree() {
	STORE=rados:keytree/$1
	KTFS_TREES+=("$STORE")
}
if [ "$KTFS_ENGINE" = rados ]; then
	ktfs_tree "f-$$-$RANDOM$RANDOM"
fi
MNT=$KTFS_TMP/mnt
LOG=$KTFS_TMP/daemon.log
VALUE=$'\xc2\xa6value' # the default name of an item+dir's value file
KTFS_PID=
KTFS_BAD=0
mkdir -p "$MNT"
: >"$LOG"

# The daemon's log must hold no sanitizer report, nor may a detached
# daemon have written one to a file.
ktfs_check_log() {
	local f
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$LOG"; then
		echo "FAIL: sanitizer report from keytreefs:" >&2
		cat "$LOG" >&2
		KTFS_BAD=1
	fi
	for f in "$KTFS_TMP"/san.*; do
		[ -e "$f" ] || continue
		echo "FAIL: sanitizer report from the keytreefs daemon:" >&2
		cat "$f" >&2
		KTFS_BAD=1
	done
}

# ktfs_start ARGS...: start keytreefs ARGS (store and mountpoint
# included) in the background, in $KTFS_MODE; sets KTFS_PID to a process
# that ends with the daemon's status and passes signals on to it.
ktfs_start() {
	local a front=0
	for a in "$@"; do
		case $a in -f | -d | -odebug) front=1 ;; esac
	done
	if [ "${KTFS_MODE:-foreground}" = daemon ] && [ "$front" = 0 ]; then
		: "${KTFS_DAEMON_RUN:?KTFS_DAEMON_RUN must name ktfs_daemon_run}"
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$KTFS_TMP/san" \
		UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$KTFS_TMP/san" \
			"$KTFS_DAEMON_RUN" "$KEYTREEFS" "$@" </dev/null 2>>"$LOG" &
	elif [ "$front" = 1 ]; then
		"$KEYTREEFS" "$@" </dev/null 2>>"$LOG" &
	else
		"$KEYTREEFS" -f "$@" </dev/null 2>>"$LOG" &
	fi
	KTFS_PID=$!
}

# ktfs_mount [OPTIONS...]: mount $STORE on $MNT, wait until it is up.
ktfs_mount() {
	ktfs_start "$@" "$STORE" "$MNT"
	local i
	for i in $(seq 200); do
		if mountpoint -q "$MNT"; then
			return 0
		fi
		if ! kill -0 "$KTFS_PID" 2>/dev/null; then
			break
		fi
		sleep 0.05
	done
	echo "FAIL: keytreefs did not mount" >&2
	cat "$LOG" >&2
	return 1
}

# Wait up to 20 s for the daemon to exit; its status, or 124 if it hung.
ktfs_wait_daemon() {
	local i rc=0
	for i in $(seq 400); do
		if ! kill -0 "$KTFS_PID" 2>/dev/null; then
			wait "$KTFS_PID" || rc=$?
			KTFS_PID=
			return "$rc"
		fi
		sleep 0.05
	done
	kill -KILL "$KTFS_PID" 2>/dev/null || true
	wait "$KTFS_PID" 2>/dev/null || true
	KTFS_PID=
	return 124
}

# ktfs_umount: unmount, and fail unless the daemon exits 0 and clean.
ktfs_umount() {
	local rc=0
	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" || { sleep 0.5; fusermount3 -u "$MNT"; } ||
			fusermount3 -uz "$MNT" || true
	fi
	if [ -n "$KTFS_PID" ]; then
		ktfs_wait_daemon || rc=$?
		if [ "$rc" -ne 0 ]; then
			echo "FAIL: keytreefs exited with status $rc" >&2
			cat "$LOG" >&2
			KTFS_BAD=1
		fi
	fi
	ktfs_check_log
	[ "$KTFS_BAD" -eq 0 ]
}

ktfs_cleanup() {
	local rc=$? t
	trap - EXIT INT TERM
	cd /
	if [ -n "${KTFS_WATCHDOG:-}" ]; then
		kill "$KTFS_WATCHDOG" 2>/dev/null || true
	fi
	# Also a dead daemon's mount, which mountpoint(1) cannot stat, and
	# any further mount a test made in its directory (a second mount
	# of the same store, say) that a failure left behind.
	if grep -q " $MNT " /proc/mounts; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" ||
			umount -l "$MNT" || true
	fi
	local m
	# /proc/mounts writes a space as \040 (a tab \011, a newline
	# \012): printf %b reads those back.
	for m in $(awk -v d="$KTFS_TMP/" 'index($2, d) == 1 { print $2 }' \
		/proc/mounts); do
		m=$(printf '%b' "$m")
		fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" || true
	done
	if [ -n "$KTFS_PID" ]; then
		ktfs_wait_daemon || true
	fi
	ktfs_check_log
	# The RADOS trees go (memstore OSDs keep every object in RAM); one
	# the test never made is no error, one left behind after a pass is.
	for t in "${KTFS_TREES[@]}"; do
		if [ -z "${KTFS_CLI:-}" ]; then
			echo "note: $t left in the cluster (no KTFS_CLI to destroy it)"
		elif ! "$KTFS_CLI" -s "$t" destroy --yes 2>"$KTFS_TMP/destroy.err" &&
			! grep -q ": no tree '" "$KTFS_TMP/destroy.err"; then
			echo "FAIL: keytree destroy $t: $(cat "$KTFS_TMP/destroy.err")" >&2
			rc=1
		fi
	done
	if [ "$rc" -ne 0 ] || [ "$KTFS_BAD" -ne 0 ]; then
		echo "--- daemon log (last 30 lines)" >&2
		tail -n 30 "$LOG" >&2
		rc=1
	fi
	rm -rf "$KTFS_TMP"
	exit "$rc"
}
trap ktfs_cleanup EXIT
trap 'echo "FAIL: interrupted or timed out" >&2; exit 1' INT TERM

(
	sleep "${KTFS_TEST_LIMIT:-240}"
	kill -TERM $$ 2>/dev/null
) </dev/null >/dev/null 2>&1 &
KTFS_WATCHDOG=$!

# Assertions: each names what it checks.
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
expect_eq() { # WHAT GOT WANT
	[ "$2" == "$3" ] || fail "$1: got '$2', want '$3'"
}
ok() {
	echo "ok - $*"
}

# ktfs_engine_is ENGINE REASON: true on ENGINE; on the other engine false,
# after a line saying which part is left out and why.
ktfs_engine_is() {
	[ "$KTFS_ENGINE" = "$1" ] && return 0
	echo "skip - $2 (only on $1; this run: $KTFS_ENGINE)"
	return 1
}

# ktfs_size VAR LEVELDB RADOS: set VAR to how much a check makes on this
# engine (entries of a directory, racing rounds, the tree a program
# copies), and print it.  A commit on RADOS costs several round trips to
# the cluster (a create through the mount took 20 to 45 ms here), so a
# script that makes thousands of nodes makes fewer there; the check is
# the same and holds what it claims at either size.  VAR set in the environment wins, e.g.
# KTFS_NODES_BIG=2500 for nodes.sh at its LevelDB size on RADOS.
ktfs_size() {
	if [ -z "${!1:-}" ]; then
		case $KTFS_ENGINE in
		leveldb) printf -v "$1" %s "$2" ;;
		*) printf -v "$1" %s "$3" ;;
		esac
	fi
	echo "# $1=${!1} ($KTFS_ENGINE)"
}
