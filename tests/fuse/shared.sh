#!/usr/bin/env bash
# shared.sh - the mount sees what other processes change in its store.
# keytreefs is mounted with kernel cache timeouts of an hour, so whatever
# the kernel cached (a missing name, a file's pages and size, a name
# that was renamed or removed) would stay wrong for an hour unless the
# mount invalidated it: each check right after the CLI's command returns
# shows that it did, and before the CLI returned (the CLI watches
# nothing, so its commit waits until the mount has heard it).  Then a
# second mount (a client of the first, the holder) and the first see each
# other's changes, both ways, and `keytree check` is clean on the live
# store.
source "$(dirname "$0")/lib.sh"

: "${KTFS_CLI:?KTFS_CLI must name the keytree CLI}"
kt() { "$KTFS_CLI" -s "$STORE" "$@"; }

# On both engines: on RADOS the clients tell each other with RADOS
# watch/notify (kt_watch), with no holder.
LONG=entry_timeout=3600,attr_timeout=3600,negative_timeout=3600
ktfs_mount -o create,$LONG

# A name the kernel knows to be missing appears.
! stat "$MNT/x" 2>/dev/null || fail "x exists before it was made"
ls "$MNT" >/dev/null
kt put /x hello
expect_eq "a name made by the CLI" "$(cat "$MNT/x")" hello
ok "a new name from the CLI shows at once (negative entry forgotten)"

# Pages and size the kernel keeps (keep_cache) follow a rewrite.
expect_eq "cached read" "$(cat "$MNT/x")" hello
kt put /x "a longer value"
expect_eq "rewritten by the CLI" "$(cat "$MNT/x")" "a longer value"
expect_eq "size after the rewrite" "$(stat -c %s "$MNT/x")" 14
ok "a value rewritten by the CLI is read anew (pages and size forgotten)"

# Renames and deletes: the old names go, the new ones come.
mkdir "$MNT/d"
echo inner >"$MNT/d/f"
stat "$MNT/d/f" >/dev/null
kt mv /x /y
! stat "$MNT/x" 2>/dev/null || fail "x still there after the CLI's mv"
expect_eq "renamed by the CLI" "$(cat "$MNT/y")" "a longer value"
kt mv /d /e
! stat "$MNT/d/f" 2>/dev/null || fail "d/f still there after mv /d /e"
expect_eq "moved directory" "$(cat "$MNT/e/f")" inner
kt rm /y
! stat "$MNT/y" 2>/dev/null || fail "y still there after the CLI's rm"
expect_eq "listing after the CLI's changes" "$(ls "$MNT" | tr '\n' ' ')" "e "
ok "renames and deletes by the CLI show at once"

# Metadata and attributes.
stat -c %a "$MNT/e/f" >/dev/null
kt attr set /e/f color blue
expect_eq "attribute set by the CLI" \
	"$(getfattr --only-values -n user.color "$MNT/e/f")" blue
ok "attributes set by the CLI show at once"

# A second mount goes through the first (the holder; on RADOS it is one
# more client of the cluster); each sees the other's changes although
# both cache for an hour.
MNT2=$KTFS_TMP/mnt2
mkdir "$MNT2"
"$KEYTREEFS" -f -o $LONG "$STORE" "$MNT2" 2>"$KTFS_TMP/second.log" &
second=$!
for i in $(seq 200); do
	mountpoint -q "$MNT2" && break
	kill -0 "$second" 2>/dev/null || break
	sleep 0.05
done
mountpoint -q "$MNT2" ||
	fail "the second mount failed: $(cat "$KTFS_TMP/second.log")"
! stat "$MNT2/z" 2>/dev/null || fail "z before it was made"
expect_eq "first mount's file in the second" "$(cat "$MNT2/e/f")" inner
echo zed >"$MNT/z"
echo changed >"$MNT/e/f"
# The holder's writes do not wait for the second mount's invalidations
# (the holder watches too): wait for them without a clock limit of our
# own beyond the test's watchdog.
for i in $(seq 200); do
	[ "$(cat "$MNT2/z" 2>/dev/null)" = zed ] &&
		[ "$(cat "$MNT2/e/f")" = changed ] && break
	sleep 0.05
done
expect_eq "first mount's new file in the second" "$(cat "$MNT2/z")" zed
expect_eq "first mount's rewrite in the second" "$(cat "$MNT2/e/f")" changed
echo two >"$MNT2/from2"
mv "$MNT2/z" "$MNT2/zz"
for i in $(seq 200); do
	[ -e "$MNT/from2" ] && [ ! -e "$MNT/z" ] && break
	sleep 0.05
done
expect_eq "second mount's file in the first" "$(cat "$MNT/from2")" two
! stat "$MNT/z" 2>/dev/null || fail "z still there in the first mount"
expect_eq "second mount's rename in the first" "$(cat "$MNT/zz")" zed
# The CLI (which watches nothing) waits for both mounts.
kt put /from-cli c
expect_eq "CLI's file in the first mount" "$(cat "$MNT/from-cli")" c
expect_eq "CLI's file in the second mount" "$(cat "$MNT2/from-cli")" c
ok "two mounts and the CLI see each other's changes"

# keytree check while both mounts and the CLI write: every run is clean
# (it reads one snapshot of the store through the holder).
writer() { # DIR TAG
	local i
	mkdir -p "$1/w$2"
	for i in $(seq 150); do
		echo "$i" >"$1/w$2/f$((i % 7))"
		mv "$1/w$2/f$((i % 7))" "$1/w$2/g$((i % 5))"
		[ $((i % 11)) -ne 0 ] || rm -f "$1/w$2/g$((i % 5))"
	done
}
writer "$MNT" a & wa=$!
writer "$MNT2" b & wb=$!
( for i in $(seq 100); do kt put "/wc/x$((i % 9))" "$i"; done ) & wc=$!
# On RADOS kt_check reads the partitions one after another, not at one
# moment (keytree.h, Engines): while others write it may see a node's
# rows from before a commit and its id row from after, so only the check
# after the writers is asserted there.
checks=0
live_check=0
if ktfs_engine_is leveldb "keytree check clean while the writers run (one snapshot)"; then
	live_check=1
fi
while kill -0 $wa 2>/dev/null || kill -0 $wb 2>/dev/null; do
	if [ "$live_check" = 0 ]; then
		sleep 0.2
		continue
	fi
	kt check >"$KTFS_TMP/check.out" 2>&1 ||
		fail "check while writers run: $(cat "$KTFS_TMP/check.out")"
	checks=$((checks + 1))
done
wait $wa || fail "writer through the first mount failed"
wait $wb || fail "writer through the second mount failed"
wait $wc || fail "CLI writer failed"
[ "$checks" -ge 1 ] || [ "$live_check" = 0 ] ||
	fail "no check ran while the writers ran"
kt check >"$KTFS_TMP/check.out" || fail "check on the live store: $(cat "$KTFS_TMP/check.out")"
expect_eq "CLI writer's last value, through the second mount" \
	"$(cat "$MNT2/wc/x1")" 100
if [ "$live_check" = 1 ]; then
	ok "keytree check is clean while two mounts and the CLI write ($checks runs)"
else
	ok "two mounts and the CLI wrote at once; keytree check is clean after"
fi

fusermount3 -u "$MNT2"
wait "$second" || fail "the second keytreefs exited with status $?"
ktfs_umount
ok "both mounts unmounted cleanly"
