#!/usr/bin/env bash
# import and export against real directory trees, checked with diff -r,
# modes, symbolic links, times and user extended attributes.
. "$(dirname "$0")/lib.sh"

# A tree with odd names, empty files, symlinks, modes and a binary file.
build_tree() {
	local t=$1
	mkdir -p "$t/sub/deeper" "$t/empty dir" "$t/ro"
	echo hello >"$t/plain"
	: >"$t/empty"
	head -c 100000 /dev/urandom >"$t/sub/random.bin"
	printf 'x' >"$t/sub/deeper/$'\n'"
	echo odd >"$t/"$'new\nline'
	echo odd >"$t/"$'tab\there'
	echo odd >"$t/-leading dash"
	echo odd >"$t/caf"$'\xc3\xa9'
	echo odd >"$t/bad"$'\xff'"utf8"
	echo odd >"$t/back\\slash"
	ln -s plain "$t/rel-link"
	ln -s /nonexistent/target "$t/dangling"
	ln -s ../plain "$t/sub/up-link"
	ln -s sub "$t/dir-link"
	chmod 0600 "$t/plain"
	chmod 0755 "$t/sub/random.bin"
	chmod 4750 "$t/sub/deeper"
	chmod 0555 "$t/ro"
	echo x >"$t/sub/exec"
	chmod 0711 "$t/sub/exec"
	touch -h -d '2001-02-03 04:05:06.123456789' "$t/rel-link"
	touch -d '1999-12-31 23:59:59.5' "$t/empty" "$t/sub"
}

# Modes and mtimes of every entry, symlinks not followed.
meta_list() {
	(cd "$1" && find . -printf '%p %y %m %T@ %l\n' | LC_ALL=C sort)
}

t_round_trip() {
	build_tree "$TMP/src"
	new_store
	run 0 kt import "$TMP/src" /copy
	err_empty
	run 0 kt export /copy "$TMP/dst"
	err_empty
	diff -r --no-dereference "$TMP/src" "$TMP/dst" >&2 ||
		fail "diff -r found differences"
	meta_list "$TMP/src" >"$TMP/m1"
	meta_list "$TMP/dst" >"$TMP/m2"
	diff "$TMP/m1" "$TMP/m2" >&2 || fail "modes, types or times differ"
	[ -L "$TMP/dst/rel-link" ] || fail "symlink not kept"
	eq "$(readlink "$TMP/dst/dangling")" /nonexistent/target "link target"
	eq "$(stat -c %a "$TMP/dst/sub/deeper")" 4750 "setuid directory mode"
	run 0 kt check
}

t_store_view() {
	build_tree "$TMP/src"
	new_store
	run 0 kt import "$TMP/src"
	run 0 kt get /plain
	out_is hello
	run 0 kt readlink /rel-link
	out_is plain
	run 0 kt stat --json /plain
	out_has '"mode":384'
	run 0 kt stat --json /rel-link
	out_has '"mtime":981173106123456789'
	run 0 kt ls /
	out_has 'new\nline'
}

t_xattrs() {
	mkdir -p "$TMP/src/d"
	echo v >"$TMP/src/f"
	if ! setfattr -n user.color -v red "$TMP/src/f" 2>/dev/null; then
		echo "skip: user xattrs not supported on $TMP"
		exit 77
	fi
	printf -v bin 'a\001b'
	setfattr -n user.bin -v "0x610062" "$TMP/src/f"
	setfattr -n user.note -v dirnote "$TMP/src/d"
	new_store
	run 0 kt import "$TMP/src" /x
	run 0 kt attr get /x/f color
	out_is red
	run 0 kt attr get /x/f bin
	printf 'a\0b' | cmp - "$OUT" || fail "binary xattr"
	kt attr set /x/f added yes
	run 0 kt export /x "$TMP/dst"
	eq "$(getfattr --only-values -n user.color "$TMP/dst/f")" red "color"
	eq "$(getfattr --only-values -n user.added "$TMP/dst/f")" yes "added"
	eq "$(getfattr --only-values -n user.note "$TMP/dst/d")" dirnote "dir"
	getfattr -e hex -n user.bin "$TMP/dst/f" | grep -q 0x610062 ||
		fail "binary xattr exported"
}

# /usr/share/doc, or on RADOS a part of it: a node there costs a few round
# trips and the whole (about 6,000 entries) takes over two minutes.  The
# part is its first directories in name order, KT_CLI_DOC_ENTRIES entries
# or a little more (default: 600 on RADOS, all on LevelDB).
t_usr_share_doc() {
	[ -d /usr/share/doc ] || { echo "skip: no /usr/share/doc"; exit 77; }
	local limit=${KT_CLI_DOC_ENTRIES:-} n=0 d
	if [ -z "$limit" ] && [ "$KT_CLI_ENGINE" = rados ]; then
		limit=600
	fi
	# A snapshot: apt may change /usr/share/doc while the test runs.
	if [ -z "$limit" ]; then
		cp -a /usr/share/doc "$TMP/src"
	else
		mkdir "$TMP/src"
		for d in /usr/share/doc/*; do
			[ "$n" -lt "$limit" ] || break
			cp -a "$d" "$TMP/src/"
			n=$((n + $(find "$d" | wc -l)))
		done
		echo "note: $n of the $(find /usr/share/doc -mindepth 1 | wc -l) entries of /usr/share/doc"
	fi
	new_store
	run 0 kt import "$TMP/src" /doc
	run 0 kt export /doc "$TMP/doc"
	diff -r --no-dereference "$TMP/src" "$TMP/doc" >&2 ||
		fail "diff -r found differences"
	meta_list "$TMP/src" >"$TMP/m1"
	meta_list "$TMP/doc" >"$TMP/m2"
	diff "$TMP/m1" "$TMP/m2" >&2 || fail "modes, types or times differ"
}

t_import_skips() {
	mkdir "$TMP/src"
	echo a >"$TMP/src/ok"
	mkfifo "$TMP/src/fifo"
	echo b >"$TMP/src/x${D}y"
	new_store
	run 1 kt import "$TMP/src"
	err_has "skipped: the name holds the store's delimiter"
	grep -q fifo "$ERR" && fail "the FIFO was not imported"
	run 0 kt get /ok
	out_is a
	run 1 kt import "$TMP/nope"
	err_has "keytree: $TMP/nope: No such file or directory"
	run 1 kt import "$TMP/src/ok"
	err_has "not a directory"
	run 2 kt import
}

t_export_errors() {
	new_store
	kt put /d/f 1
	mkdir "$TMP/full"
	echo x >"$TMP/full/y"
	run 1 kt export /d "$TMP/full"
	err_has "not empty"
	run 1 kt export /d/f "$TMP/out1"
	err_has "keytree: /d/f: not a directory"
	run 1 kt export /none "$TMP/out2"
	err_has "keytree: /none: no such node"
	kt put /both 1
	kt put /both/child 2
	run 1 kt export / "$TMP/out3"
	err_has "keytree: /both: both an item and a directory"
	[ -f "$TMP/out3/both/child" ] || fail "the rest was not exported"
	run 2 kt export /d
}

run_case "$@"
