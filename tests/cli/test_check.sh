#!/usr/bin/env bash
# check, check --repair and stats, on clean stores and on stores damaged by
# writing rows directly, under keytree (rows per docs/FORMAT.md).
. "$(dirname "$0")/lib.sh"

# rows has|del|put PART SORT [VALUE]: the row (PART, SORT) of the store:
# exit 0 if it exists (has), delete it, or write VALUE.  On LevelDB through
# kt_cli_rows; on RADOS through the rados tool, as the omap key "." SORT of
# the object TREE/PART (no byte 00 or 01 here, which esc() would change).
rows() {
	if [ "$KT_CLI_ENGINE" = leveldb ]; then
		"$KT_ROWS" "$KEYTREE_STORE" "$@"
		return
	fi
	command -v rados >/dev/null || {
		echo "skip: no rados tool to damage a tree with"
		exit 77
	}
	local r=(timeout 60 rados -c "$KEYTREE_CEPH_CONF" -p keytree)
	local obj=${KEYTREE_STORE#rados:keytree/}/$2 key=.$3
	case $1 in
	has) "${r[@]}" getomapval "$obj" "$key" >/dev/null 2>&1 ;;
	del) "${r[@]}" rmomapkey "$obj" "$key" ;;
	put) "${r[@]}" setomapval "$obj" "$key" "$4" ;;
	*) fail "rows: unknown operation '$1'" ;;
	esac
}

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

# A store with typed names: an index row whose key is not a name's row
# form (here 03 '5', the text form, where the number 5 has its own) would
# make listing fail; check reports it, repair removes it.
t_typed_bad_name_form() {
	kt init --typed
	kt put /d/b 1
	rows put "${D}"$'\x03d'"${D}" $'\x035' "x"
	run 1 kt ls /d
	run 1 kt check
	out_has "no name's row form"
	run 0 kt check --repair
	run 0 kt check
	run 0 kt ls /d
	out_is b
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
