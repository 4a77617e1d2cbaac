#!/usr/bin/env bash
# cli.sh - the keytree CLI on the RADOS engine, end to end.
#
# usage: cli.sh KEYTREE [WATCH]   (environment: KEYTREE_CEPH_CONF, the
# fixture's conf; WATCH: docs/examples/watch.c, built)
#
# On a new tree in pool "keytree" of the fixture's cluster: init, then put,
# get, ls, mv of a directory, a value large enough for block rows, rm -r,
# each checked against what it must print, with `keytree check` clean after
# the writes, the id index in shard objects (rados ls), and a value's
# blocks in the data of 4 MiB stripe objects (rados stat, listomapvals);
# then a store migrated both ways with dump | load (directory
# to RADOS and back), compared by their dumps; and the errors a user meets
# first: a tree that does not exist, a pool that does not exist, a
# configuration file that does not exist, a librados that cannot be
# loaded; kt_watch (the example watcher hears the CLI's commits, and goes
# on hearing them after its watch object was removed by hand); last,
# destroy removes one tree and leaves the other.
set -euo pipefail

kt=$1
watchbin=${2:-}
conf=${KEYTREE_CEPH_CONF:-}
fail() { printf 'ceph_cli: FAIL: %s\n' "$*" >&2; exit 1; }
step() { printf 'ceph_cli: %s\n' "$*"; }

[ -n "$conf" ] && [ -f "$conf" ] || fail "KEYTREE_CEPH_CONF is not a file"
work=$(mktemp -d "${TMPDIR:-/tmp}/kt-ceph-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree="cli-$$-$RANDOM"
loc="rados:keytree/$tree"
k() { timeout 120 "$kt" -s "$loc" "$@"; }

step "init $loc"
k init
step "put, get, ls"
k put /a/b/c hello
[ "$(k get /a/b/c)" = hello ] || fail "get /a/b/c"
k put /a/d world
[ "$(k ls /a | tr '\n' ' ')" = "b d " ] || fail "ls /a: $(k ls /a)"
step "mv of a directory"
k mv /a/b /x
[ "$(k get /x/c)" = hello ] || fail "get /x/c after mv"
if k get /a/b/c 2>/dev/null; then fail "/a/b/c still there after mv"; fi
step "a value in blocks"
head -c 200000 /dev/urandom > "$work/big"
k put /big < "$work/big"
k get /big | cmp - "$work/big" || fail "big value differs"
k check > "$work/check" || fail "check: $(cat "$work/check")"

step "a value's blocks are in object data, 4 MiB stripes"
# 9,000,000 bytes: blocks 0 to 549, stripes 0 (blocks 0-255), 1 and 2
# (blocks 512-549); the bytes in each stripe's data, 5-byte entries in its
# omap, and the stripes listed in the value's base object.
head -c 9000000 /dev/urandom > "$work/nine"
k put /nine < "$work/nine"
k get /nine | cmp - "$work/nine" || fail "9 MB value differs"
timeout 60 rados -c "$conf" -p keytree ls > "$work/objects" ||
	fail "rados ls"
grep "^$tree//blk/[0-9a-f]\{16\}\.[0-9a-f]\{16\}\$" "$work/objects" |
	sort > "$work/stripes"
base=$(sed -n 's/\.[0-9a-f]\{16\}$//p' "$work/stripes" | sort -u |
	while read -r b; do
		n=$(grep -c "^$b\." "$work/stripes")
		[ "$n" = 3 ] && echo "$b"
	done)
[ -n "$base" ] || fail "no value in 3 stripes: $(cat "$work/stripes")"
sizes=""
for s in 0 1 2; do
	o="$base.000000000000000$s"
	st=$(timeout 60 rados -c "$conf" -p keytree stat "$o") ||
		fail "rados stat $o"
	sizes="$sizes ${st##*size }"
	vals=$(timeout 60 rados -c "$conf" -p keytree listomapvals "$o" |
		grep -c "^value (5 bytes)")
	want=256; [ $s = 2 ] && want=38
	[ "$vals" = $want ] ||
		fail "$o: $vals omap values of 5 bytes, want $want"
done
[ "$sizes" = " 4194304 4194304 611392" ] ||
	fail "stripe sizes$sizes, want 4194304 4194304 611392"
[ "$(timeout 60 rados -c "$conf" -p keytree listomapkeys "$base" |
	tr '\n' ' ')" = "s0000000000000000 s0000000000000001 s0000000000000002 " ] ||
	fail "the base $base does not list the 3 stripes"
# A second copy, then an overwrite that deletes every block of the first.
k put /nine2 < "$work/nine"
k check > "$work/check" || fail "check after 9 MB: $(cat "$work/check")"
k put /nine small
[ "$(k get /nine)" = small ] || fail "/nine after its overwrite"
k get /nine2 | cmp - "$work/nine" || fail "the second 9 MB value differs"
k check > "$work/check" || fail "check after overwrite: $(cat "$work/check")"
step "rm -r"
k rm -r /x
[ "$(k ls / | tr '\n' ' ')" = "a big nine nine2 " ] || fail "ls / after rm: $(k ls /)"
k check > "$work/check" || fail "check after rm: $(cat "$work/check")"

step "the id index is sharded by allocation chunk"
# Each CLI process takes its own chunk of 1024 ids, so the creates above
# (three processes) wrote their id rows into several shard objects
# TREE//id.<16 hex digits>, and nothing into one object TREE//id.
timeout 60 rados -c "$conf" -p keytree ls > "$work/objects" ||
	fail "rados ls"
grep -q "^$tree//id\.[0-9a-f]\{16\}\$" "$work/objects" ||
	fail "no id shard object: $(grep "^$tree/" "$work/objects" | sort)"
[ "$(grep -c "^$tree//id\.[0-9a-f]\{16\}\$" "$work/objects")" -ge 2 ] ||
	fail "one id shard for three processes: $(grep "^$tree//id" "$work/objects")"
if grep -q "^$tree//id\$" "$work/objects"; then
	fail "an unsharded id index object $tree//id"
fi

step "migrate: directory -> RADOS -> directory"
"$kt" -s "$work/src" init
"$kt" -s "$work/src" put /m/one 1
"$kt" -s "$work/src" put /m/two/deep "two deep"
"$kt" -s "$work/src" put /blob < "$work/big"
"$kt" -s "$work/src" dump > "$work/src.dump"
timeout 120 "$kt" -s "rados:keytree/$tree-m" init
timeout 120 "$kt" -s "rados:keytree/$tree-m" load < "$work/src.dump"
timeout 120 "$kt" -s "rados:keytree/$tree-m" dump > "$work/rados.dump"
"$kt" -s "$work/back" init
"$kt" -s "$work/back" load < "$work/rados.dump"
"$kt" -s "$work/back" dump > "$work/back.dump"
cmp "$work/src.dump" "$work/back.dump" || fail "dumps differ after the round trip"
[ "$(timeout 120 "$kt" -s "rados:keytree/$tree-m" get /m/two/deep)" = "two deep" ] ||
	fail "get after load"

step "a large commit: a load of 3000 items in one batch, lease 1 s"
# One commit over thousands of objects takes longer than the lease to
# write its record and locks; its budget grows with its size (FORMAT.md
# §14), so it commits instead of giving up and running again forever.
{
	printf '{"keytree":"dump","format":1}\n'
	for i in $(seq 1 3000); do
		printf '{"path":"/L/d%d/i%d","kind":"item","mode":420,"uid":0,"gid":0,"atime":1,"mtime":1,"value":"v"}\n' $((i % 20)) "$i"
	done
	printf '{"end":true,"records":3000}\n'
} > "$work/large.dump"
k load < "$work/large.dump" 2> "$work/load.err" ||
	fail "load of 3000 items: $(cat "$work/load.err")"
[ "$(k find /L | wc -l)" = 3000 ] || fail "find /L after the load: $(k find /L | wc -l) items"
step "a commit over the size of one RADOS operation is refused, clearly"
head -c 70000000 /dev/zero | tr '\0' x > "$work/huge"
if k put /huge < "$work/huge" 2> "$work/huge.err"; then
	fail "a 70 MB value was taken in one commit"
fi
grep -q "limited to 64 MiB" "$work/huge.err" || fail "huge put: $(cat "$work/huge.err")"
if k get /huge > /dev/null 2>&1; then fail "the refused put left /huge"; fi
rm -f "$work/huge"

step "init on a cluster slower than the lease (1 ms) still makes the tree"
# Its first commit runs out of its budget at least once; kt_open tries
# again with more (it used to pass the engine's internal retry code out:
# 'unknown error').
KEYTREE_RADOS_LEASE_MS=1 timeout 120 "$kt" -s "rados:keytree/$tree-slow" init \
	2> "$work/slow.err" || fail "init with a 1 ms lease: $(cat "$work/slow.err")"
timeout 120 "$kt" -s "rados:keytree/$tree-slow" destroy --yes ||
	fail "destroy of $tree-slow"

step "errors name the culprit"
if out=$(timeout 120 "$kt" -s "rados:keytree/nosuch-$tree" get /x 2>&1); then
	fail "a missing tree opened"
fi
case $out in *nosuch-$tree*) ;; *) fail "missing tree: '$out'" ;; esac
if out=$(timeout 120 "$kt" -s "rados:nosuchpool/$tree" get /x 2>&1); then
	fail "a missing pool opened"
fi
case $out in *nosuchpool*) ;; *) fail "missing pool: '$out'" ;; esac
if out=$(KEYTREE_CEPH_CONF=$work/none.conf timeout 120 "$kt" -s "$loc" get /a/d 2>&1); then
	fail "a missing configuration file worked"
fi
case $out in *none.conf*) ;; *) fail "missing conf: '$out'" ;; esac
# librados is loaded only when a RADOS store is opened; a missing one is
# named, and a directory store does not need it at all.
if out=$(KEYTREE_LIBRADOS=$work/no-librados.so timeout 120 "$kt" -s "$loc" get /a/d 2>&1); then
	fail "a missing librados worked"
fi
case $out in *"librados is not available"*no-librados.so*) ;;
*) fail "missing librados: '$out'" ;; esac
KEYTREE_LIBRADOS=$work/no-librados.so "$kt" -s "$work/plain" init >/dev/null ||
	fail "a directory store needed librados"
if [ -n "$watchbin" ]; then
	step "kt_watch: a watcher hears the CLI, also after its watch object went"
	"$watchbin" "$loc" >"$work/watch.out" 2>"$work/watch.err" &
	wpid=$!
	for i in $(seq 200); do
		grep -q '^watching ' "$work/watch.out" 2>/dev/null && break
		kill -0 "$wpid" 2>/dev/null ||
			fail "watch ended: $(cat "$work/watch.err")"
		sleep 0.05
	done
	grep -q '^watching ' "$work/watch.out" || fail "watch did not start"
	# The CLI watches nothing: its put returns once the watcher heard.
	k put /w/one 1
	grep -qF '  name /w/one' "$work/watch.out" ||
		fail "the watcher did not hear put /w/one: $(cat "$work/watch.out")"
	# Removing the object it watches cuts the watch; the watcher makes
	# it again, watches anew, and then puts its key back.
	timeout 60 rados -c "$conf" -p keytree rm "$tree!watch" ||
		fail "rados rm $tree!watch"
	watching() {
		timeout 60 rados -c "$conf" -p keytree listomapkeys \
			"$tree!watch" 2>/dev/null | grep -q '^\.w'
	}
	for i in $(seq 200); do
		watching && break
		sleep 0.05
	done
	watching || fail "the watcher did not watch again"
	k put /w/two 2
	grep -qF '  name /w/two' "$work/watch.out" ||
		fail "the watcher did not hear put /w/two: $(cat "$work/watch.out")"
	kill -INT "$wpid"
	wait "$wpid" || fail "watch exited with status $?"

	step "kt_watch: the key of a watcher killed with -9 goes"
	# It cannot say goodbye: its key stays, and the CLI's commits wait
	# for it (2 s each) until the OSD drops its watch (30 s by default);
	# the first notify after that reaches nobody and drops the key.
	"$watchbin" "$loc" >"$work/watch2.out" 2>"$work/watch2.err" &
	wpid=$!
	for i in $(seq 200); do
		watching && grep -q '^watching ' "$work/watch2.out" && break
		sleep 0.05
	done
	watching || fail "the second watcher did not start"
	kill -9 "$wpid"
	wait "$wpid" 2>/dev/null || true
	for i in $(seq 60); do
		k put "/w/after$i" "$i"
		watching || break
	done
	! watching || fail "the dead watcher's key stayed after $i puts"
fi

step "check --repair undoes a lock that no commit record names"
# A killed client's lock operation can reach its OSD after its commit was
# rolled back and its record removed.  A reader of the object undoes such
# a lock after twice the budget its id names (here 0x3e8 ms); check
# --repair finds it also where nobody reads.
k put /lk/x v
lkobj="$tree/¦lk¦x"
timeout 60 rados -c "$conf" -p keytree ls > "$work/objects" ||
	fail "rados ls"
grep -qxF "$lkobj" "$work/objects" || fail "no object $lkobj"
timeout 60 rados -c "$conf" -p keytree setxattr "$lkobj" kt.lk \
	cli.dead.1.3e8 || fail "setxattr kt.lk"
out=$(k check --repair 2>&1) || fail "check --repair: $out"
case $out in
*"object $lkobj was locked by commit cli.dead.1.3e8, which has no record: unlocked"*) ;;
*) fail "check --repair did not undo the lock: '$out'" ;;
esac
[ "$(timeout 60 rados -c "$conf" -p keytree getxattr "$lkobj" kt.lk)" = - ] ||
	fail "$lkobj is still locked"
[ "$(k get /lk/x)" = v ] || fail "get /lk/x after the repair"
out=$(k check --repair 2>&1) || fail "second check --repair: $out"
case $out in *locked*) fail "a second repair found a lock: '$out'" ;; esac

step "destroy"
timeout 120 "$kt" -s "rados:keytree/$tree-m" destroy --yes ||
	fail "destroy of the migrated tree"
if out=$(timeout 120 "$kt" -s "rados:keytree/$tree-m" ls / 2>&1); then
	fail "a destroyed tree opened"
fi
if out=$(timeout 120 "$kt" -s "rados:keytree/$tree-m" destroy --yes 2>&1); then
	fail "a second destroy worked"
fi
case $out in *"no tree '$tree-m'"*) ;; *) fail "second destroy: '$out'" ;; esac
# Tree names share prefixes ($tree and $tree-m): only one went.
[ "$(k get /a/d)" = world ] || fail "destroy touched another tree"
k destroy --yes || fail "destroy of $loc"
step "ok"
