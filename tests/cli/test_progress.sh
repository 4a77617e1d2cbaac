#!/usr/bin/env bash
# The progress line: drawn when stdout and stderr are terminals (under
# script(1)'s pseudo-terminal), absent otherwise.
. "$(dirname "$0")/lib.sh"

# on_tty CMD: run CMD (a shell string) with stdout and stderr on a pty;
# what the terminal showed goes to $OUT.
on_tty() {
	command -v script >/dev/null || {
		echo "skip: no script(1) to give a terminal"
		exit 77
	}
	script -qec "$1" /dev/null >"$OUT" </dev/null ||
		fail "'$1' failed on a terminal"
}

setup_tree() {
	mkdir -p "$TMP/src/d"
	for i in 1 2 3 4 5; do echo "$i" >"$TMP/src/d/f$i"; done
	new_store
}

t_shown_on_terminal() {
	setup_tree
	on_tty "'$KT_BIN' import '$TMP/src' /x"
	grep -aq $'\r' "$OUT" || fail "no line redrawn in place"
	grep -aEq 'import: [0-9]+/6 files, [0-9]+/s' "$OUT" ||
		fail "import: no done/total and rate"
	grep -aEq '(left|elapsed)' "$OUT" || fail "no time"
	on_tty "'$KT_BIN' export /x '$TMP/dst'"
	grep -aEq 'export: [0-9]+/6 nodes' "$OUT" || fail "export"
	on_tty "'$KT_BIN' dump /x"
	grep -aEq 'dump: [0-9]+/7 nodes' "$OUT" || fail "dump"
	kt dump >"$TMP/d"
	local s2
	s2=$(store_at s2)
	on_tty "KEYTREE_STORE='$s2' '$KT_BIN' init &&
		KEYTREE_STORE='$s2' '$KT_BIN' load <'$TMP/d'"
	grep -aEq 'load: [0-9]+/[0-9]+ lines' "$OUT" || fail "load"
	# check counts the store's path rows: the node rows of /x, /x/d and
	# its 5 files, and their 7 index rows.
	on_tty "'$KT_BIN' check"
	grep -aEq 'check: 14/14 rows' "$OUT" || fail "check"
}

t_silent_when_redirected() {
	setup_tree
	run 0 kt import "$TMP/src" /x
	err_empty
	# stderr a terminal, stdout a file: silent.
	on_tty "'$KT_BIN' export /x '$TMP/dst' >'$TMP/o'"
	if grep -aq 'export:' "$OUT"; then fail "progress with stdout a file"; fi
	on_tty "'$KT_BIN' dump >'$TMP/o'"
	if grep -aq 'dump:' "$OUT"; then fail "progress with stdout a file"; fi
	# stdout a terminal, stderr a file: silent.
	on_tty "'$KT_BIN' dump 2>'$TMP/e' >/dev/tty"
	[ ! -s "$TMP/e" ] || fail "progress with stderr a file"
	on_tty "'$KT_BIN' check 2>'$TMP/e' >/dev/tty"
	[ ! -s "$TMP/e" ] || fail "check progress with stderr a file"
}

run_case "$@"
