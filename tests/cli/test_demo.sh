#!/usr/bin/env bash
# The example scripts/demo runs (docs/examples/hello.c): it says what it
# renamed and deleted before it shows what the store holds at the end.
. "$(dirname "$0")/lib.sh"

t_example_says_what_it_changed() {
	: "${KT_BUILD:?}"
	run 0 "$KT_BUILD/kt_example_hello"
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
}

run_case "$@"
