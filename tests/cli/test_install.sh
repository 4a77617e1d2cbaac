#!/usr/bin/env bash
# cmake --install puts the keytree binary and its man page in place, and
# the installed binary runs and opens a store of this run's engine (on
# RADOS: it finds librados on its own).
. "$(dirname "$0")/lib.sh"

t_installed() {
	: "${KT_BUILD:?}" "${CMAKE_COMMAND:?}"
	run 0 "$CMAKE_COMMAND" --install "$KT_BUILD" --prefix "$TMP/prefix"
	[ -x "$TMP/prefix/bin/keytree" ] || fail "no bin/keytree"
	local man="$TMP/prefix/share/man/man1/keytree.1"
	[ -f "$man" ] || fail "no man page at share/man/man1/keytree.1"
	grep -q '^\.TH KEYTREE 1' "$man" || fail "not the keytree man page"
	run 0 "$TMP/prefix/bin/keytree" --version
	out_has "keytree 0.1.0"
	run 0 "$TMP/prefix/bin/keytree" init
	run 0 "$TMP/prefix/bin/keytree" put /a/b installed
	run 0 "$TMP/prefix/bin/keytree" get /a/b
	out_is installed
	if command -v man >/dev/null; then
		MANWIDTH=80 man -l "$man" >"$OUT" 2>"$ERR" || fail "man -l"
		out_has "keytree - inspect and script a keytree store"
	fi
}

run_case "$@"
