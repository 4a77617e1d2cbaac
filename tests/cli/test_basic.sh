#!/usr/bin/env bash
# The command line itself: help, version, usage errors and exit statuses,
# init, put and get with binary values, path normalisation, messages.
. "$(dirname "$0")/lib.sh"

t_help() {
	local c cmds="init destroy put get cat ls tree find mkdir ln readlink rm mv
		stat attr dump load import export check stats"
	run 0 kt --help
	out_has "usage: keytree [-s STORE] COMMAND"
	for c in $cmds; do
		out_has "  $c"
	done
	unset KEYTREE_STORE
	for c in $cmds; do
		run 0 kt "$c" --help
		out_has "usage: keytree [-s STORE] $c"
	done
}

t_version() {
	run 0 kt --version
	out_has "keytree 0.1.0"
}

t_usage_errors() {
	run 2 kt
	err_has "no command given"
	run 2 kt frobnicate
	err_has "unknown command 'frobnicate'"
	run 2 kt --bogus
	new_store
	run 2 kt ls --bogus
	err_has "keytree: ls: unknown option '--bogus'"
	run 2 kt get
	err_has "keytree: get: missing operand"
	run 2 kt get /a /b
	err_has "extra operand '/b'"
	run 2 kt ls --limit x
	run 2 kt ls --after
	err_has "needs a value"
	run 2 kt mv --no-replace --exchange /a /b
	run 2 kt attr frob /a
}

t_no_store() {
	unset KEYTREE_STORE
	run 2 kt ls
	err_has "no store given"
	run 2 kt init
	err_has "no store given"
}

t_store_option() {
	local other
	other=$(store_at other)
	run 0 kt -s "$other" init
	run 0 kt --store "$other" put /x 1
	run 1 kt get /x
	err_has "no store here"
	run 0 kt -s "$other" get /x
	out_is 1
	KEYTREE_STORE="$other" run 0 kt get /x
}

t_init() {
	run 0 kt init
	err_empty
	if engine_is leveldb "the store directory's LevelDB files"; then
		[ -f "$KEYTREE_STORE/CURRENT" ] || fail "no store made"
	fi
	run 0 kt ls /
	out_is ""
	run 1 kt init
	err_has "keytree: $KEYTREE_STORE: a store already exists here"
}

t_init_delimiter() {
	run 0 kt init --delimiter ';'
	run 1 kt put '/a;b' 1
	err_has "keytree: /a;b:"
	run 0 kt put "/a${D}b" 1
	run 0 kt ls /
	out_is "a${D}b"
	run 1 kt -s "$(store_at bad)" init --delimiter /
}

t_put_get() {
	new_store
	run 0 kt put /a/b/c hello
	err_empty
	run 0 kt get /a/b/c
	out_is hello
	[ "$(stat -c %s "$OUT")" -eq 5 ] || fail "get added bytes"
	run 0 kt cat /a/b/c
	out_is hello
	run 0 kt put /a/b/c ""
	run 0 kt get /a/b/c
	[ ! -s "$OUT" ] || fail "empty value not empty"
}

t_put_stdin_binary() {
	new_store
	head -c 300000 /dev/urandom >"$TMP/blob"
	printf '\0\n\r\xff' >>"$TMP/blob"
	run_in 0 "$TMP/blob" kt put /bin
	run 0 kt get /bin
	cmp "$TMP/blob" "$OUT" || fail "value differs"
	: >"$TMP/empty"
	run_in 0 "$TMP/empty" kt put /e
	run 0 kt get /e
	[ ! -s "$OUT" ] || fail "empty stdin gave bytes"
}

t_get_errors() {
	new_store
	run 0 kt mkdir /d
	run 1 kt get /nope
	eq "$(cat "$ERR")" "keytree: /nope: no such node"
	run 1 kt get /d
	err_has "keytree: /d:"
	err_has "directory"
	[ ! -s "$OUT" ] || fail "output on failure"
}

t_get_follows_link() {
	new_store
	run 0 kt put /target value
	run 0 kt ln -s /target /link
	run 0 kt get /link
	out_is value
}

t_path_normalised() {
	new_store
	run 0 kt put a//b/ v
	run 0 kt get /a/b
	out_is v
	run 0 kt ls /a/
	out_is b
	run 1 kt get /a/./b
	err_has "keytree: /a/./b:"
	run 1 kt get /a/../a/b
}

t_busy_store() {
	engine_only leveldb "it holds LevelDB's LOCK file with the row helper; a RADOS tree has no lock"
	new_store
	# A holder that does not serve the store (LevelDB's lock alone, as
	# an older keytree held it): after a short wait for a server, the
	# message names the holder: the helper's pid and program name.
	coproc HOLD { "$KT_ROWS" "$KEYTREE_STORE" hold; }
	read -r line <&"${HOLD[0]}"
	eq "$line" held "helper"
	local pid
	pid=$(pgrep -f -x "$KT_ROWS $KEYTREE_STORE hold")
	run 1 kt ls
	err_has "keytree: $KEYTREE_STORE: the store is in use by process $pid ($(basename "$KT_ROWS" | cut -c1-15))"
	run 1 kt put /x 1
	err_has "in use by process $pid"
	exec {HOLD[1]}>&-
	wait "$HOLD_PID"
	run 0 kt ls
}

t_held_store() {
	# A program holds the store through the library: the CLI works on
	# it at the same time, through the holder, both ways.  (A RADOS
	# tree has no holder: both processes open it and commit to it.)
	new_store
	run 0 kt put /before 1
	coproc HOLD { "${KT_HOLD:?KT_HOLD must name the hold helper}" \
		"$KEYTREE_STORE"; }
	local line
	read -r line <&"${HOLD[0]}"
	case $line in "held "*) ;; *) fail "helper said '$line'" ;; esac
	run 0 kt put /x hello
	run 0 kt get /x
	out_is hello
	run 0 kt ls
	out_is $'before\nx'
	echo "get /x" >&"${HOLD[1]}"
	read -r line <&"${HOLD[0]}"
	eq "$line" hello "the holder reads what the CLI wrote"
	echo "put /y from-holder" >&"${HOLD[1]}"
	read -r line <&"${HOLD[0]}"
	eq "$line" ok "the holder's put"
	run 0 kt get /y
	out_is from-holder
	run 0 kt check
	exec {HOLD[1]}>&-
	wait "$HOLD_PID"
	# The holder has gone; the CLI holds the store itself now.
	run 0 kt get /x
	out_is hello
}

t_destroy() {
	new_store
	run 0 kt put /a/b 1
	# Without --yes nothing happens.
	run 2 kt destroy
	err_has "for good; say --yes"
	run 0 kt get /a/b
	# Refused while a program holds the store; the message names it.
	# RADOS has no holder to ask: there destroy goes ahead and the
	# holder's later calls fail (keytree.h, kt_destroy).
	coproc HOLD { "${KT_HOLD:?KT_HOLD must name the hold helper}" \
		"$KEYTREE_STORE"; }
	local line
	read -r line <&"${HOLD[0]}"
	case $line in "held "*) ;; *) fail "helper said '$line'" ;; esac
	if engine_is leveldb "destroy refused while a process holds the store"; then
		run 1 kt destroy --yes
		err_has "in use by process"
		exec {HOLD[1]}>&-
		wait "$HOLD_PID"
		run 0 kt get /a/b
		run 0 kt destroy --yes
	else
		run 0 kt destroy --yes
		echo "get /a/b" >&"${HOLD[1]}"
		read -r line <&"${HOLD[0]}"
		[ "$line" != 1 ] || fail "the holder read a destroyed tree"
		exec {HOLD[1]}>&-
		wait "$HOLD_PID"
	fi
	err_empty
	run 1 kt get /a/b
	err_has "keytree: $KEYTREE_STORE: no store here"
	if engine_is leveldb "what destroy leaves of a directory"; then
		[ ! -e "$KEYTREE_STORE" ] ||
			fail "the store directory is still there"
		run 1 kt destroy --yes
		err_has "no store there"
		# What is not a store is not removed.
		mkdir "$TMP/junk"
		echo hi >"$TMP/junk/file"
		run 1 kt -s "$TMP/junk" destroy --yes
		err_has "no keytree store"
		[ -f "$TMP/junk/file" ] || fail "a foreign file was removed"
	else
		run 1 kt destroy --yes
		err_has "no tree '${KEYTREE_STORE##*/}'"
	fi
}

t_not_a_store() {
	engine_only leveldb "it opens a directory that holds no store"
	mkdir "$TMP/junk"
	echo hi >"$TMP/junk/file"
	run 1 kt -s "$TMP/junk" ls
	err_has "keytree: $TMP/junk:"
	err_has "no keytree store"
}

t_escaped_names() {
	new_store
	run 0 kt put $'/a\nb' 1
	run 0 kt put $'/c\x1bd' 1
	run 0 kt put $'/e\\f' 1
	run 0 kt put $'/g\xffh' 1
	run 0 kt ls
	out_is $'a\\nb\nc\\x1bd\ne\\\\f\ng\\xffh'
	if LC_ALL=C grep -q $'\x1b' "$OUT"; then fail "raw ESC printed"; fi
	run 1 kt get $'/x\x07y'
	err_has 'keytree: /x\x07y: no such node'
}

run_case "$@"
