#!/usr/bin/env bash
# together.sh - two of the example programs on one store at once: watch
# (docs/examples/watch.c) opens the store first and holds it; hello
# (docs/examples/hello.c) then opens the same store, which goes through
# watch, and does all its work there.  watch must print hello's commits
# as they happen, all 8 of them before hello's last call returns (hello
# watches nothing, so each of its commits waits until watch heard it),
# and hello must finish as it does alone.  SIGINT then stops watch.
set -euo pipefail
hello=${1:?usage: together.sh HELLO WATCH}
watch=${2:?usage: together.sh HELLO WATCH}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kt-examples.XXXXXX")
wpid=
cleanup() {
	[ -z "$wpid" ] || kill "$wpid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$watch" "$tmp/store" >"$tmp/watch.out" 2>"$tmp/watch.err" &
wpid=$!
for i in $(seq 200); do
	grep -q '^watching ' "$tmp/watch.out" 2>/dev/null && break
	kill -0 "$wpid" 2>/dev/null || fail "watch ended: $(cat "$tmp/watch.err")"
	sleep 0.05
done
grep -q '^watching ' "$tmp/watch.out" || fail "watch did not start"

"$hello" "$tmp/store" >"$tmp/hello.out" 2>&1 ||
	fail "hello through watch's store failed: $(cat "$tmp/hello.out")"
grep -q 'Grace' "$tmp/hello.out" || fail "hello's output: $(cat "$tmp/hello.out")"

kill -INT "$wpid"
wait "$wpid" || fail "watch exited with status $?"
wpid=
for want in 'commit 8:' '  name /customers/c-1/name' \
	'  name /customers/c-2' '  name /customers/c-3' \
	'  name /favourites/ada' '  name /customers/c-1/orders/o-1'; do
	grep -qF -- "$want" "$tmp/watch.out" ||
		fail "watch did not print '$want': $(cat "$tmp/watch.out")"
done
grep -q '^commit 9:' "$tmp/watch.out" && fail "watch saw a 9th commit"
echo "ok - hello ran through watch's store; watch printed its 8 commits"
