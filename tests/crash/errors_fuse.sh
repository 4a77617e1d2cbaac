#!/usr/bin/env bash
# errors_fuse.sh - the rejected inputs of docs/ERRORS.md made with the shell
# through a keytreefs mount.  Each case requires the command to fail with
# the errno text ERRORS.md gives (C locale), and the tree seen through the
# mount (paths, types, sizes, modes, contents) to be the same before and
# after.  At the end the store is unmounted and `keytree check` must pass.
#
# Environment: KEYTREEFS, KT_CLI (set by CTest).  Exits 77 (skipped)
# without /dev/fuse or fusermount3.  KT_ERRORS_PRINT=1 prints each message.
set -uo pipefail

: "${KEYTREEFS:?KEYTREEFS must name the keytreefs binary}"
: "${KT_CLI:?KT_CLI must name the keytree binary}"
export LC_ALL=C

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "errors_fuse: SKIP: no /dev/fuse or fusermount3"
	exit 77
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kt-errors-fuse.XXXXXX")
STORE=$TMP/store
MNT=$TMP/mnt
FSPID=
mkdir -p "$MNT"
cleanup() {
	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT"
	fi
	[ -n "$FSPID" ] && { kill "$FSPID" 2>/dev/null; wait "$FSPID"; }
	rm -rf "$TMP"
}
trap cleanup EXIT

# At most 9 entries per directory (the root holds 8 below, /d/e is filled
# to 9), so that a full directory can be met without 100,000 files.
KEYTREE_DIR_MAX=9 "$KEYTREEFS" -f -o create "$STORE" "$MNT" </dev/null \
	2>"$TMP/daemon.log" &
FSPID=$!
for _ in $(seq 200); do
	mountpoint -q "$MNT" && break
	sleep 0.05
done
mountpoint -q "$MNT" || { cat "$TMP/daemon.log"; exit 1; }

D=$'\xc2\xa6'
mkdir -p "$MNT/d/e"
echo hello >"$MNT/item"
echo f >"$MNT/d/e/f"
ln -s self "$MNT/self"
ln -s l2 "$MNT/l1"
ln -s l1 "$MNT/l2"
mkfifo "$MNT/fifo"
for i in 1 2 3 4 5 6 7 8; do echo "$i" >"$MNT/d/e/g$i"; done
# An item that is also a directory: its value file cannot be linked.
mkdir "$MNT/both"
echo v >"$MNT/both/${D}value"
# Ancestors for the path-length cases: 16 names of 250 bytes (4018 bytes
# with /d), and 2048 components (4096 bytes: the length limit binds at the
# same place).  mkdir -p makes one component at a time,
# so only the store sees the whole path of the one after.
seg=$(printf 's%.0s' $(seq 250))
long16=d$(printf "/$seg%.0s" $(seq 16))
deep2048=$(printf 'x/%.0s' $(seq 2048))
mkdir -p "$MNT/$long16" "$MNT/$deep2048"

# The two long chains hold nothing but directories: walking all 2064 of
# them through the mount for every case costs minutes under ASan, so the
# snapshot leaves them out and instead lists what is below each chain's
# last directory (nothing, if a rejected mkdir left no trace).  Even that
# walk is slow: the deep chain's last directory is 4096 bytes down
# (reached in two steps), and each of its 2048 lookups costs in
# proportion to its depth, about 3 s a walk under ASan.  So only the
# cases that aim at a chain, and the final check, take the full snapshot
# ("snapshot chains"); the others compare everything else, and a change
# they made to a chain would still fail the final comparison.
snapshot() {
	(cd "$MNT" &&
		find . \( -path ./x -o -path "./d/$seg" \) -prune -o \
			-printf '%p %y %s %m %l\n' | sort &&
		find . \( -path ./x -o -path "./d/$seg" \) -prune -o \
			-type f -exec sha256sum {} + | sort) || return
	[ "${1:-}" = chains ] || return 0
	(cd "$MNT" &&
		echo "tip: $(ls -A "$long16" | tr '\n' ' ')" &&
		stat -c '%F %a' "$long16" &&
		cd "${deep2048:0:2048}" && cd "${deep2048:2048}" &&
		echo "tip: $(ls -A . | tr '\n' ' ')" && stat -c '%F %a' .)
}
snapshot >"$TMP/before"
snapshot chains >"$TMP/before-chains"
[ "$(grep -c '^tip: ' "$TMP/before-chains")" -eq 2 ] ||
	{ echo "FAIL: the snapshot cannot reach the chains' ends" >&2; exit 1; }

failures=0
cases=0
# reject [--chains] NAME ERRNO-TEXT CMD...: CMD fails, its stderr has
# ERRNO-TEXT, and the tree is unchanged (with --chains, the chains' ends
# too).
reject() {
	local view= ref=$TMP/before rc=0
	if [ "$1" = --chains ]; then
		view=chains ref=$TMP/before-chains
		shift
	fi
	local name=$1 want=$2
	shift 2
	cases=$((cases + 1))
	"$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "FAIL $name: '$*' succeeded" >&2
		failures=$((failures + 1))
	elif ! grep -qF -- "$want" "$TMP/err"; then
		echo "FAIL $name: expected '$want', got: $(cat "$TMP/err")" >&2
		failures=$((failures + 1))
	elif ! snapshot $view | cmp -s - "$ref"; then
		echo "FAIL $name: the tree changed" >&2
		snapshot $view | diff "$ref" - >&2
		failures=$((failures + 1))
	else
		[ -z "${KT_ERRORS_PRINT:-}" ] ||
			echo "ERRORS| $name | $(head -n 1 "$TMP/err" | sed 's/.*: //')"
		echo "ok $name"
	fi
}

long=$(printf 'n%.0s' $(seq 256))

reject touch_name_with_delimiter "Invalid argument" touch "$MNT/x${D}y"
reject mkdir_name_with_delimiter "Invalid argument" mkdir "$MNT/d/x${D}"
reject mkdir_name_256_bytes "File name too long" mkdir "$MNT/$long"
reject touch_name_256_bytes "File name too long" touch "$MNT/d/$long"
reject mkdir_dot "File exists" mkdir "$MNT/d/."
reject mkdir_dotdot "File exists" mkdir "$MNT/d/.."
reject rmdir_dot "Invalid argument" rmdir "$MNT/d/."
reject rmdir_not_empty "Directory not empty" rmdir "$MNT/d"
# mv refuses this itself; rename(2) asks the kernel.
reject rename_into_own_subtree "Invalid argument" \
	perl -e 'rename($ARGV[0], $ARGV[1]) or die "$!\n"' "$MNT/d" "$MNT/d/e/g"
reject cat_link_to_itself "Too many levels of symbolic links" cat "$MNT/self"
reject cat_link_loop "Too many levels of symbolic links" cat "$MNT/l1"
reject truncate_over_limit "File too large" truncate -s 2T "$MNT/item"
reject --chains mkdir_path_too_long "File name too long" mkdir -p "$MNT/$long16/$seg"
reject --chains mkdir_path_too_deep "File name too long" mkdir -p "$MNT/${deep2048}y"
reject ln_value_file "Operation not permitted" \
	ln "$MNT/both/${D}value" "$MNT/hard"
reject mkdir_below_fifo "Not a directory" mkdir "$MNT/fifo/d"
# /d/e holds its 9 entries, the most the mount allows here.
reject touch_in_full_directory "No space left on device" touch "$MNT/d/e/new"
reject mkdir_in_full_directory "No space left on device" mkdir "$MNT/d/e/new"
reject symlink_in_full_directory "No space left on device" \
	ln -s /item "$MNT/d/e/new"
reject mkfifo_in_full_directory "No space left on device" \
	mkfifo "$MNT/d/e/new"
reject link_into_full_directory "No space left on device" \
	ln "$MNT/item" "$MNT/d/e/new"
reject rename_into_full_directory "No space left on device" \
	mv "$MNT/item" "$MNT/d/e/new"

# What no case may have changed, the chains' ends included.
cases=$((cases + 1))
if snapshot chains | cmp -s - "$TMP/before-chains"; then
	echo "ok unchanged_at_the_end"
else
	echo "FAIL unchanged_at_the_end: the tree changed" >&2
	snapshot chains | diff "$TMP/before-chains" - >&2
	failures=$((failures + 1))
fi

fusermount3 -u "$MNT"
wait "$FSPID"
FSPID=
"$KT_CLI" -s "$STORE" check || { echo "FAIL: keytree check" >&2; failures=$((failures + 1)); }
echo "errors_fuse: $cases cases, $failures failed"
[ "$failures" -eq 0 ]
