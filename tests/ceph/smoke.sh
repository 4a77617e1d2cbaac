#!/usr/bin/env bash
# smoke.sh - the CTest fixture "ceph" gives a cluster that stores objects.
#
# usage: smoke.sh   (environment: KEYTREE_CEPH_CONF, the fixture's conf)
#
# Puts an object of a few kilobytes into pool "keytree" with the rados CLI,
# reads it back, lists the pool, removes the object, and checks each step:
# the bytes read equal the bytes put, the listing holds the object, and
# after the removal neither listing nor read finds it.  Every rados call
# runs under `timeout`, so a dead cluster fails the test instead of hanging
# it.  Driven by the CTest test ceph_smoke.
set -euo pipefail

conf=${KEYTREE_CEPH_CONF:-}
pool=keytree
t=30

fail() { printf 'ceph_smoke: FAIL: %s\n' "$*" >&2; exit 1; }
step() { printf 'ceph_smoke: %s\n' "$*"; }

[ -n "$conf" ] || fail "KEYTREE_CEPH_CONF is not set"
[ -f "$conf" ] || fail "KEYTREE_CEPH_CONF=$conf: no such file (did ceph_start run?)"

work=$(mktemp -d "${TMPDIR:-/tmp}/kt-ceph-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT

r() { timeout "$t" rados -c "$conf" -p "$pool" "$@"; }

# A name unique to this run, so that runs on one cluster cannot mix, and
# binary content of an odd size.
obj="smoke-$$-$RANDOM"
head -c 5000 /dev/urandom >"$work/in"
printf 'end of %s' "$obj" >>"$work/in"
size=$(stat -c %s "$work/in")
[ "$size" -gt 4096 ] || fail "test data is only $size bytes"

step "put $obj ($size bytes)"
r put "$obj" "$work/in" || fail "rados put $obj failed (exit $?)"

step "get $obj"
r get "$obj" "$work/out" || fail "rados get $obj failed (exit $?)"
cmp "$work/in" "$work/out" ||
	fail "$obj read back differs from what was put"

step "stat $obj"
st=$(r stat "$obj") || fail "rados stat $obj failed"
[[ $st == *"size $size"* ]] || fail "rados stat says '$st', expected size $size"

step "ls"
r ls >"$work/ls" || fail "rados ls failed"
grep -qx -- "$obj" "$work/ls" ||
	fail "rados ls does not list $obj: $(head -c 300 "$work/ls")"

step "rm $obj"
r rm "$obj" || fail "rados rm $obj failed"
r ls >"$work/ls" || fail "rados ls after rm failed"
if grep -qx -- "$obj" "$work/ls"; then
	fail "rados ls still lists $obj after rm"
fi
if r get "$obj" "$work/gone" 2>"$work/err"; then
	fail "rados get $obj succeeded after rm"
fi
grep -q "No such file or directory" "$work/err" ||
	fail "rados get after rm failed for another reason: $(cat "$work/err")"

step "ok"
