#!/usr/bin/env bash
# crash_fuse.sh - crash consistency through a keytreefs mount.
#
# Each round mounts the store with `keytreefs -f`, starts a writer that
# writes files of random sizes (in place with `dd conv=fsync`, or to a
# temporary name, fsynced, then renamed over the file) and, only after dd
# and mv have succeeded, appends "done PATH SHA256" to a log on local disk
# ("begin PATH" before it starts).  At a random moment keytreefs and the
# writer get SIGKILL.  Then: `fusermount3 -u` (lazy if it must), `keytree
# check` must pass, and `keytree export` of the store must hold every file
# whose last log record is "done", with that content.  The next round
# mounts the same store again.
#
# Environment: KEYTREEFS, KT_CLI (binaries, set by CTest),
# KT_CRASH_FUSE_ROUNDS (default 30), KT_CRASH_SEED (for $RANDOM).
# Exits 77 (skipped) without /dev/fuse or fusermount3.
set -uo pipefail

: "${KEYTREEFS:?KEYTREEFS must name the keytreefs binary}"
: "${KT_CLI:?KT_CLI must name the keytree binary}"
rounds=${KT_CRASH_FUSE_ROUNDS:-30}
seed=${KT_CRASH_SEED:-$$}
RANDOM=$seed

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "crash_fuse: SKIP: no /dev/fuse or fusermount3"
	exit 77
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kt-crash-fuse.XXXXXX")
STORE=$TMP/store
MNT=$TMP/mnt
LOGF=$TMP/writes.log
DLOG=$TMP/daemon.log
W=$TMP/w
mkdir -p "$MNT" "$W"
: >"$LOGF"
FSPID=
WPID=

cleanup() {
	[ -n "$WPID" ] && kill -KILL "$WPID" 2>/dev/null
	[ -n "$FSPID" ] && kill -KILL "$FSPID" 2>/dev/null
	wait 2>/dev/null
	mountpoint -q "$MNT" && { fusermount3 -u "$MNT" 2>/dev/null ||
		fusermount3 -uz "$MNT"; }
	if [ "${KEEP:-0}" = 1 ]; then
		echo "crash_fuse: kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT

fail() {
	echo "crash_fuse: FAIL (round $round, KT_CRASH_SEED=$seed): $*" >&2
	[ -s "$DLOG" ] && { echo "--- keytreefs log:" >&2; tail -20 "$DLOG" >&2; }
	KEEP=1
	exit 1
}

# The writer: runs until it is killed or the mount goes away.
writer() {
	local n=0 rel size hash
	RANDOM=$1
	while :; do
		n=$((n + 1))
		rel=d$((RANDOM % 4))/f$((RANDOM % 25))
		mkdir -p "$MNT/${rel%/*}" 2>/dev/null || return
		size=$(((RANDOM % 4) * RANDOM + RANDOM % 100))
		head -c "$size" /dev/urandom >"$W/data"
		hash=$(sha256sum <"$W/data")
		hash=${hash%% *}
		echo "begin $rel" >>"$LOGF"
		if [ $((RANDOM % 3)) -eq 0 ]; then
			dd if="$W/data" of="$MNT/$rel.tmp" bs=64k conv=fsync \
				status=none 2>/dev/null || return
			mv -f "$MNT/$rel.tmp" "$MNT/$rel" 2>/dev/null || return
		else
			dd if="$W/data" of="$MNT/$rel" bs=64k conv=fsync,notrunc \
				status=none 2>/dev/null || return
			# notrunc then truncate: an overwrite in place that
			# passes through mixed contents, as editors' do.
			truncate -s "$size" "$MNT/$rel" 2>/dev/null || return
			dd if=/dev/null of="$MNT/$rel" conv=fsync,notrunc \
				status=none 2>/dev/null || return
		fi
		echo "done $rel $hash" >>"$LOGF"
	done
}

mount_store() {
	local opt=""
	[ -d "$STORE" ] || opt="-o create"
	# shellcheck disable=SC2086
	"$KEYTREEFS" -f $opt "$STORE" "$MNT" </dev/null 2>>"$DLOG" &
	FSPID=$!
	for _ in $(seq 200); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$FSPID" 2>/dev/null || break
		sleep 0.05
	done
	fail "keytreefs did not mount"
}

verify() {
	local exp=$TMP/export rel hash got nfiles=0 last
	"$KT_CLI" -s "$STORE" check >"$TMP/check.out" 2>&1 ||
		fail "keytree check after the kill: $(cat "$TMP/check.out")"
	rm -rf "$exp"
	"$KT_CLI" -s "$STORE" export / "$exp" >"$TMP/export.out" 2>&1 ||
		fail "keytree export: $(cat "$TMP/export.out")"
	# The last record of each path decides.
	declare -A last=()
	while read -r what rel hash; do
		last[$rel]="$what $hash"
	done <"$LOGF"
	for rel in "${!last[@]}"; do
		set -- ${last[$rel]}
		[ "$1" = done ] || continue
		[ -f "$exp/$rel" ] || fail "$rel was fsynced but is missing"
		got=$(sha256sum <"$exp/$rel")
		[ "${got%% *}" = "$2" ] ||
			fail "$rel was fsynced but its content differs"
		nfiles=$((nfiles + 1))
	done
	VERIFIED=$nfiles
}

start=$SECONDS
total=0
inflight=0
for round in $(seq "$rounds"); do
	mount_store
	writer $((seed + round)) &
	WPID=$!
	sleep "0.$((RANDOM % 6 + 1))$((RANDOM % 10))"
	kill -KILL "$FSPID"
	kill -KILL "$WPID" 2>/dev/null
	wait "$FSPID" 2>/dev/null
	wait "$WPID" 2>/dev/null
	FSPID=
	WPID=
	# Children of the writer (dd, mv) fail once the daemon is gone.
	sleep 0.05
	if mountpoint -q "$MNT" || grep -q " $MNT " /proc/mounts; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" ||
			fail "cannot unmount"
	fi
	[ "$(tail -n 1 "$LOGF" | cut -d' ' -f1)" = begin ] &&
		inflight=$((inflight + 1))
	verify
	total=$((total + VERIFIED))
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$DLOG"; then
		fail "sanitizer report from keytreefs"
	fi
done
echo "crash_fuse: $rounds kills in $((SECONDS - start)) s;" \
	"$(grep -c '^done' "$LOGF") fsynced writes, $total file checks" \
	"passed; $inflight kills with a write in flight (KT_CRASH_SEED=$seed)"
