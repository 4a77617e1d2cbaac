#!/usr/bin/env bash
# cli_check.sh CASE - `keytree check` on a store whose LevelDB files were
# damaged must exit 1 and say what is damaged: the kind of damage LevelDB
# found (a checksum mismatch, a CURRENT that points nowhere), not just a
# count.  Damage to rows is tested in tests/cli/test_check.sh, where the
# message names the path.
#
# Cases: log, manifest, current, table.  Environment: KT_CLI.
set -euo pipefail

: "${KT_CLI:?KT_CLI must name the keytree binary}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kt-cli-check.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export KEYTREE_STORE=$TMP/store
kt() { "$KT_CLI" "$@"; }

# flip FILE OFFSET: invert one byte.
flip() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf '%03o' $((b ^ 0xff)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

kt init
# One large value of random bytes (so that it does not compress), moved into
# a table by the next open; then a small write that stays in the log.
head -c 200000 /dev/urandom >"$TMP/big"
kt put /big <"$TMP/big"
kt put /dir/small hello
kt check
kt put /dir/later "in the log"

case ${1:-} in
log) file=$(ls "$KEYTREE_STORE"/*.log | tail -n 1) ;;
manifest) file=$(ls "$KEYTREE_STORE"/MANIFEST-*) ;;
current) file=$KEYTREE_STORE/CURRENT ;;
table) file=$(ls -S "$KEYTREE_STORE"/*.ldb | head -n 1) ;;
*) echo "usage: $0 log|manifest|current|table" >&2; exit 2 ;;
esac
size=$(stat -c %s "$file")
[ "$size" -gt 0 ] || { echo "FAIL: $file is empty" >&2; exit 1; }
flip "$file" $((size / 2))

rc=0
kt check >"$TMP/out" 2>"$TMP/err" || rc=$?
cat "$TMP/out" "$TMP/err"
[ "$rc" -eq 1 ] || { echo "FAIL: check exited $rc, expected 1" >&2; exit 1; }
grep -qiE 'corrupt|checksum' "$TMP/out" "$TMP/err" ||
	{ echo "FAIL: check does not say what is damaged" >&2; exit 1; }
# Reading the damaged value must fail too, not return other bytes.
rc=0
kt get /big >"$TMP/got" 2>"$TMP/err" || rc=$?
if [ "$rc" -eq 0 ] && ! cmp -s "$TMP/got" "$TMP/big"; then
	echo "FAIL: get /big returned wrong data with status 0" >&2
	exit 1
fi
echo "ok: check exits 1 and says: $(head -n 1 "$TMP/err")"
