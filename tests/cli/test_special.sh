#!/usr/bin/env bash
# Special files (FIFOs, sockets, device nodes) through the command line:
# mknod, how ls -l, stat, tree, find and stats show them, import and export
# of real ones, dump and load, and the rejections (store unchanged).
. "$(dirname "$0")/lib.sh"

# Modes, owners, mtimes and device numbers of every entry below DIR.
meta_list() {
	(cd "$1" && find . -mindepth 1 -printf '%p\n' | LC_ALL=C sort |
		while read -r p; do
			stat -c '%n %F %a %u:%g %Y %t:%T' "$p"
		done)
}

# A socket's name made by bind(), as a server would leave it.
make_socket() {
	python3 -c 'import socket, sys
socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"
}

# run_unchanged STATUS CMD...: as run, and the store's dump is unchanged.
run_unchanged() {
	kt dump >"$TMP/before"
	run "$@"
	kt dump >"$TMP/after"
	cmp -s "$TMP/before" "$TMP/after" || fail "'${*:2}' changed the store"
}

t_mknod() {
	new_store
	run 0 kt mknod /dev/null c 1 3
	err_empty
	run 0 kt mknod -m 600 /dev/sda b 8 0x10
	run 0 kt mknod /run/pipe p
	run 0 kt mknod /run/sock socket
	run 0 kt mknod /run/tty u 4 64
	run 0 kt ls -l /dev
	grep -Eq '^crw-r--r-- +1 +1, 3 [0-9-]+ [0-9:]+ null$' "$OUT" ||
		fail "ls -l of a character device"
	grep -Eq '^brw------- +1 +8, 16 [0-9-]+ [0-9:]+ sda$' "$OUT" ||
		fail "ls -l of a block device"
	run 0 kt ls -l /run
	grep -Eq '^prw-r--r-- +1 +0 [0-9-]+ [0-9:]+ pipe$' "$OUT" ||
		fail "ls -l of a FIFO"
	grep -Eq '^srw-r--r-- +1 +0 [0-9-]+ [0-9:]+ sock$' "$OUT" ||
		fail "ls -l of a socket"
	grep -Eq '^crw-r--r-- +1 +4, 64 ' "$OUT" || fail "ls -l of u (char)"
	run 0 kt ls -l /dev/null
	grep -Eq '^crw-r--r-- +1 +1, 3 .* /dev/null$' "$OUT" ||
		fail "ls -l of the device itself"
	run 0 kt stat /dev/null
	out_has "kind: special"
	out_has "type: char"
	out_has "rdev: 1, 3 (major, minor)"
	out_has "mode: 0644 (crw-r--r--)"
	run 0 kt stat /run/pipe
	out_has "type: fifo"
	grep -q '^rdev' "$OUT" && fail "a FIFO shows a device number"
	run 0 kt stat --json /dev/sda
	out_has '"kind":"special"'
	out_has '"type":"block","rdev":2064}'
	run 0 kt ls --json /run
	out_has '"name":"sock","path":"/run/sock","kind":"special"'
	out_has '"type":"socket"'
	run 0 kt find -a --json /run/p
	out_is '{"path":"/run/pipe","kind":"special","id":'"$(kt stat --json /run/pipe | sed 's/.*"id":\([0-9]*\),.*/\1/')"',"type":"fifo"}'
	run 0 kt find /
	out_is ""
	run 0 kt tree /run
	out_has "0 directories, 0 items, 0 links, 3 special files"
	run 0 kt stats
	out_has "special files: 5"
	run 0 kt stats --json
	out_has '"specials":5,"aliases":0}'
	# Like any node: attributes, rename, remove.
	run 0 kt attr set /run/pipe note hello
	run 0 kt mv /run/pipe /run/fifo
	run 0 kt stat /run/fifo
	out_has "type: fifo"
	out_has "attributes: 1"
	run 0 kt rm /run/fifo
	run 1 kt stat /run/fifo
	run 0 kt check
}

t_mknod_errors() {
	new_store
	kt put /item v
	kt mknod /fifo p
	run_unchanged 2 kt mknod /x q
	err_has "unknown type 'q'"
	run_unchanged 2 kt mknod /x c 1
	err_has "a device needs MAJOR and MINOR"
	run_unchanged 2 kt mknod /x p 1 2
	err_has "a FIFO has no device number"
	run_unchanged 2 kt mknod /x b one 2
	err_has "MAJOR and MINOR must be numbers"
	run_unchanged 2 kt mknod /x c 1 4294967296
	err_has "MAJOR and MINOR must be numbers below 2^32"
	run_unchanged 2 kt mknod -m 8888 /x p
	err_has "--mode needs octal permission bits"
	run_unchanged 2 kt mknod /x
	run_unchanged 1 kt mknod /item s
	err_has "keytree: /item: an item already exists there"
	run_unchanged 1 kt mknod /fifo p
	err_has "keytree: /fifo: a FIFO already exists there"
	run_unchanged 1 kt mknod /fifo/x p
	err_has "'/fifo' is not a directory"
	run_unchanged 1 kt get /fifo
	err_has "keytree: /fifo: a FIFO holds no value"
	run_unchanged 1 kt put /fifo v
	err_has "a FIFO is there, which holds no value"
	run_unchanged 1 kt mkdir /fifo
	err_has "a FIFO exists there"
}

t_import_export() {
	local src=$TMP/src
	mkdir -p "$src/d"
	echo hello >"$src/d/file"
	mkfifo -m 640 "$src/d/fifo"
	make_socket "$src/sock"
	local devices=0
	if [ "$(id -u)" -eq 0 ]; then
		devices=1
		mknod -m 600 "$src/d/null" c 1 3
		mknod "$src/disk" b 8 1
		chown 1000:1001 "$src/d/fifo" "$src/d/null"
	fi
	find "$src" -depth -exec touch -h -d @1650000000 {} +
	touch -h -d @1650000123 "$src/d/fifo" "$src/sock"
	new_store
	run 0 kt import "$src" /copy
	err_empty
	run 0 kt stat /copy/d/fifo
	out_has "type: fifo"
	out_has "mode: 0640 (prw-r-----)"
	run 0 kt stat --json /copy/sock
	out_has '"type":"socket"'
	out_has '"mtime":1650000123000000000'
	if [ "$devices" -eq 1 ]; then
		run 0 kt stat /copy/d/null
		out_has "rdev: 1, 3 (major, minor)"
		out_has "uid: 1000"
		run 0 kt ls -l /copy
		grep -Eq '^brw-r--r-- +1 +8, 1 .* disk$' "$OUT" ||
			fail "ls -l of the imported block device"
	fi
	run 0 kt export /copy "$TMP/dst"
	err_empty
	meta_list "$src" >"$TMP/m1"
	meta_list "$TMP/dst" >"$TMP/m2"
	diff "$TMP/m1" "$TMP/m2" >&2 ||
		fail "types, modes, owners, times or device numbers differ"
	grep -q '^\./d/fifo fifo 640 ' "$TMP/m2" || fail "no FIFO exported"
	grep -q '^\./sock socket ' "$TMP/m2" || fail "no socket exported"
	cmp "$src/d/file" "$TMP/dst/d/file" || fail "a file's content"
	# The exported socket is a name a server can bind again.
	rm "$TMP/dst/sock"
	make_socket "$TMP/dst/sock"
	run 0 kt check
}

t_dump_load() {
	new_store
	kt mknod /dev/null c 1 3
	kt mknod -m 600 /dev/sda b 8 16
	kt mknod /p p
	kt mknod /s s
	kt attr set /p color red
	run 0 kt dump
	cp "$OUT" "$TMP/d1"
	grep -q '^{"path":"/dev/null","kind":"special","type":"char","rdev":259,"mode":420,' "$TMP/d1" ||
		fail "the dump record of a device"
	grep -q '^{"path":"/p","kind":"special","type":"fifo","mode":420,.*"attrs":\[{"name":"color","value":"red"}\]}$' "$TMP/d1" ||
		fail "the dump record of a FIFO"
	grep -q '"path":"/s","kind":"special","type":"socket","mode"' "$TMP/d1" ||
		fail "the dump record of a socket"
	grep -q '"type":"fifo","rdev"' "$TMP/d1" && fail "a FIFO with rdev"
	KEYTREE_STORE=$(store_at copy)
	new_store
	run_in 0 "$TMP/d1" kt load
	run 0 kt dump
	cmp "$TMP/d1" "$OUT" || { diff "$TMP/d1" "$OUT" >&2; fail "dumps differ"; }
	run 0 kt stat /dev/sda
	out_has "rdev: 8, 16 (major, minor)"
	out_has "mode: 0600 (brw-------)"
	run 0 kt check
	# Into a store that has the node already: refused like a link.
	run_in 1 "$TMP/d1" kt load
	err_has "keytree: load: line 4: "
	err_has "/dev/null"
	err_has "a character device already exists there"
}

t_load_rejects() {
	new_store
	kt put /keep v
	local h='{"keytree":"dump","format":1}'
	local ok='{"path":"/ok","kind":"special","type":"fifo","mode":420,"uid":0,"gid":0,"atime":0,"mtime":0}'
	local m='"mode":420,"uid":0,"gid":0,"atime":0,"mtime":0'
	bad() { # WANT-IN-STDERR RECORD
		printf '%s\n%s\n%s\n{"end":true,"records":2}\n' "$h" "$ok" "$2" \
			>"$TMP/bad"
		kt dump >"$TMP/before"
		run_in 1 "$TMP/bad" kt load
		err_has "keytree: load: line 3: $1"
		kt dump >"$TMP/after"
		cmp -s "$TMP/before" "$TMP/after" || fail "a rejected load changed the store"
	}
	bad 'a special file needs a "type": fifo, socket, char or block' \
		'{"path":"/x","kind":"special",'"$m"'}'
	bad 'a special file needs a "type"' \
		'{"path":"/x","kind":"special","type":"pipe",'"$m"'}'
	bad 'a fifo has no "rdev"' \
		'{"path":"/x","kind":"special","type":"fifo","rdev":1,'"$m"'}'
	bad 'a char device needs an "rdev", a non-negative integer' \
		'{"path":"/x","kind":"special","type":"char",'"$m"'}'
	bad 'a block device needs an "rdev"' \
		'{"path":"/x","kind":"special","type":"block","rdev":-1,'"$m"'}'
	bad '"type" and "rdev" belong to special files only' \
		'{"path":"/x","kind":"item","type":"fifo",'"$m"',"value":"v"}'
	bad 'fields that a special cannot have' \
		'{"path":"/x","kind":"special","type":"socket",'"$m"',"value":"v"}'
	bad '"kind" must be item, dir, item+dir, link, special or alias' \
		'{"path":"/x","kind":"fifo",'"$m"'}'
	bad '' '{"path":"/keep","kind":"special","type":"fifo",'"$m"'}'
	err_has "/keep"
	err_has "an item already exists there"
}

run_case "$@"
