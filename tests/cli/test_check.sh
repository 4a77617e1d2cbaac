#!/usr/bin/env bash
# check, check --repair and stats, on clean stores and on stores damaged by
# writing LevelDB rows directly (kt_cli_rows; rows per docs/FORMAT.md).
. "$(dirname "$0")/lib.sh"

rows() { "$KT_ROWS" "$KEYTREE_STORE" "$@"; }

fill() {
	new_store
	kt put /a/b 1
	kt put /a/c 22
	kt put /z 333
}

t_clean() {
	fill
	run 0 kt check
	out_is ""
	err_empty
	run 0 kt check --repair
	out_is ""
}

t_unreachable_node() {
	fill
	# The index row of /a in the root's partition: /a becomes
	# unreachable though its node row remains.
	rows has "$D" a || fail "no index row where FORMAT.md puts it"
	rows del "$D" a
	run 1 kt check
	[ -s "$OUT" ] || fail "no violation printed"
	grep -q '/a\|a' "$OUT" || fail "the violation does not name /a"
	err_has "keytree: $KEYTREE_STORE: "
	err_has "violation"
	run 0 kt ls /
	out_is z
	run 0 kt check --repair
	out_has "repaired: "
	run 0 kt check
	out_is ""
	run 0 kt ls /
	out_is $'a\nz'
}

t_dangling_index_row() {
	fill
	# Remove the node row of /a/c: its index row in /a points at nothing.
	rows has "${D}a${D}c" "" || fail "no node row where FORMAT.md puts it"
	rows del "${D}a${D}c" ""
	run 1 kt check
	grep -q 'c' "$OUT" || fail "the violation does not name c"
	run 0 kt check --repair
	run 0 kt check
	run 0 kt ls /a
	out_is b
}

t_undecodable_row() {
	fill
	rows put "${D}z" "" "garbage"
	run 1 kt check
	[ -s "$OUT" ] || fail "no violation printed"
	run 0 kt check --repair
	run 0 kt check
}

t_check_usage() {
	new_store
	run 2 kt check extra
	run 2 kt check --frob
}

t_stats() {
	new_store
	run 0 kt stats
	out_has "items: 0"
	out_has "directories: 1"
	kt put /a/b hello
	kt put /c xy
	kt ln -s /c /l
	kt attr set /c k v
	run 0 kt stats
	out_has "items: 2"
	out_has "directories: 2"
	out_has "links: 1"
	out_has "bytes: 7"
	out_has "attributes: 1"
	grep -Eq '^rows: [1-9][0-9]*$' "$OUT" || fail "rows"
	grep -Eq '^row bytes: [1-9][0-9]*$' "$OUT" || fail "row bytes"
	run 0 kt stats --json
	out_has '{"items":2,"dirs":2,"links":1,"bytes":7,"attrs":1,"rows":'
}

run_case "$@"
