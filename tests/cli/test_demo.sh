#!/usr/bin/env bash
# The example scripts/demo runs (docs/examples/hello.c): it says what it
# renamed and deleted before it shows what the store holds at the end.
# On RADOS it is given this case's tree, and the CLI reads what it left.
. "$(dirname "$0")/lib.sh"

t_example_says_what_it_changed() {
	: "${KT_BUILD:?}"
	if [ "$KT_CLI_ENGINE" = rados ]; then
		run 0 "$KT_BUILD/kt_example_hello" "$KEYTREE_STORE"
	else
		run 0 "$KT_BUILD/kt_example_hello"
	fi
	out_has "renamed /customers/c-2 to /customers/c-3"
	out_has "deleted /customers/c-1/orders and everything under it"
	out_has "checked the store: 0 broken invariants"
	# ... and in that order: the changes, then the final listing.
	local renamed final
	renamed=$(grep -n "^renamed " "$OUT" | cut -d: -f1)
	final=$(grep -n "^what the store holds now:" "$OUT" | cut -d: -f1)
	[ -n "$final" ] && [ "$renamed" -lt "$final" ] ||
		fail "the final listing comes before the changes"
	! grep -q "c-1/orders" <(sed -n "$final,\$p" "$OUT") ||
		fail "the final listing still holds the deleted orders"
	if [ "$KT_CLI_ENGINE" = rados ]; then
		run 0 kt ls /customers
		out_is $'c-1\nc-3'
		run 0 kt check
		out_is ""
	fi
}

run_case "$@"
