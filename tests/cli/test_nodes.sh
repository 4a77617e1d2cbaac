#!/usr/bin/env bash
# The commands on single nodes: mkdir, ln, readlink, rm, mv, stat, attr.
. "$(dirname "$0")/lib.sh"

t_mkdir() {
	new_store
	run 0 kt mkdir /d
	run 1 kt mkdir /d
	err_has "keytree: /d:"
	run 1 kt mkdir /x/y/z
	err_has "keytree: /x/y/z:"
	run 0 kt mkdir -p /x/y/z
	run 0 kt mkdir -p /x/y/z
	run 0 kt mkdir --parents /p/q
	run 0 kt stat /x/y/z
	out_has "kind: dir"
}

# mkdir of an item makes it an item that is also a directory, keeping its
# value; --help and the man page say so.
t_mkdir_of_item() {
	new_store
	run 0 kt put /i v
	run 0 kt mkdir /i
	run 0 kt stat /i
	out_has "kind: item+dir"
	run 0 kt get /i
	out_is v
	run 0 kt mkdir --help
	out_has "item+dir"
	out_has "keeps its value"
	: "${KT_SRC:?}"
	grep -q "keeps its value" "$KT_SRC/docs/keytree.1" ||
		fail "the man page does not say what mkdir does to an item"
}

t_ln_readlink() {
	new_store
	run 0 kt ln -s ../some/where /l
	run 0 kt readlink /l
	out_is ../some/where
	run 1 kt ln /a /b
	err_is "keytree: /a: no such node"
	run 2 kt ln /l
	err_has "missing operand"
	run 1 kt ln -s /x /l
	err_has "keytree: /l:"
	run 0 kt put /item v
	run 1 kt readlink /item
	err_has "not a symbolic link"
}

t_path_of_id() {
	new_store
	run 0 kt put /a/b/c v
	run 0 kt stat /a/b/c
	id=$(sed -n "s/^id: *//p" "$OUT")
	[ -n "$id" ] || fail "stat shows no id"
	run 0 kt path "$id"
	out_is /a/b/c
	run 0 kt mv /a /z
	run 0 kt path "$id"
	out_is /z/b/c
	run 0 kt rm /z/b/c
	run 1 kt path "$id"
	err_has "keytree: $id:"
	err_has "no node has id $id"
	run 2 kt path x12
	err_has "'x12' is not a node id"
	run 2 kt path 0
}

t_rm() {
	new_store
	run 0 kt put /a/b/c 1
	run 1 kt rm /a
	err_has "keytree: /a:"
	run 0 kt rm /a/b/c
	run 1 kt get /a/b/c
	run 0 kt stat /a/b
	run 0 kt put /a/b/c 1
	run 0 kt rm -r /a
	run 1 kt stat /a
	run 1 kt rm /nope
	err_has "keytree: /nope: no such node"
}

t_rm_prune() {
	new_store
	run 0 kt put /a/b/c/d 1
	run 0 kt put /a/keep 1
	run 0 kt rm --prune /a/b/c/d
	run 1 kt stat /a/b
	run 0 kt stat /a
	run 0 kt ls /a
	out_is keep
}

t_rm_link_not_target() {
	new_store
	run 0 kt put /t v
	run 0 kt ln -s /t /l
	run 0 kt rm /l
	run 0 kt get /t
	out_is v
}

t_mv() {
	new_store
	run 0 kt put /a/x 1
	run 0 kt mv /a /b
	run 0 kt get /b/x
	out_is 1
	run 1 kt stat /a
	run 0 kt put /c 2
	run 1 kt mv --no-replace /c /b/x
	err_has "keytree: /c:"
	run 0 kt get /b/x
	out_is 1
	run 0 kt mv /c /b/x
	run 0 kt get /b/x
	out_is 2
}

# mv SRC DIR, DIR an existing directory: SRC moves into it, as mv(1)
# does, following a link to a directory.
t_mv_into_directory() {
	new_store
	run 0 kt put /a/x 1
	run 0 kt put /b 2
	run 0 kt mkdir /d
	run 0 kt mv /a /d
	run 0 kt get /d/a/x
	out_is 1
	run 1 kt stat /a
	run 0 kt ln -s /d /ld
	run 0 kt mv /b /ld
	run 0 kt get /d/b
	out_is 2
	run 0 kt readlink /ld
	out_is /d
	# An item that is also a directory is a directory to move into.
	run 0 kt put /i v
	run 0 kt mkdir /i
	run 0 kt mv /d/b /i
	run 0 kt get /i/b
	out_is 2
	run 0 kt get /i
	out_is v
}

# -T (--no-target-directory): DST is the new path, as mv used to treat it.
t_mv_no_target_directory() {
	new_store
	run 0 kt put /a/x 1
	run 0 kt mkdir /d
	run 0 kt mv -T /a /d
	run 0 kt get /d/x
	out_is 1
	run 1 kt stat /a
	run 0 kt put /f v
	run 0 kt mkdir /e
	snapshot
	run 1 kt mv --no-target-directory /f /e
	err_is "keytree: /f: '/e' is a directory"
	err_plain
	unchanged
	run 2 kt mv -T /f /e /d
	err_has "extra operand '/d'"
	unchanged
}

# Several sources move into a directory together, or none does.
t_mv_several_into_directory() {
	new_store
	run 0 kt put /p 1
	run 0 kt put /q/r 2
	run 0 kt mkdir /z
	run 0 kt mv /p /q /z
	run 0 kt get /z/p
	out_is 1
	run 0 kt get /z/q/r
	out_is 2
	run 1 kt stat /p
	run 1 kt stat /q
}

t_mv_several_refused() {
	new_store
	run 0 kt put /p 1
	run 0 kt put /q 2
	run 0 kt put /f v
	run 0 kt mkdir /z
	run 0 kt put /z/q old
	snapshot
	run 1 kt mv /p /q /f
	err_is "keytree: /f: not a directory, so several sources cannot move into it"
	unchanged
	run 1 kt mv /p /q /nope
	err_is "keytree: /nope: no such node"
	unchanged
	run 1 kt mv /p /nope /z
	err_is "keytree: /nope: no such node"
	err_plain
	unchanged
	run 1 kt mv -n /p /q /z
	err_is "keytree: /q: '/z/q' exists"
	err_plain
	unchanged
	run 2 kt mv --exchange /p /q /z
	err_has "extra operand '/z'"
	unchanged
}

t_mv_into_refused() {
	new_store
	run 0 kt put /c 1
	run 0 kt put /d/c/x 2
	run 0 kt put /d/y 3
	snapshot
	run 1 kt mv /c /d
	err_is "keytree: /c: '/d/c' is a directory"
	err_plain
	run 1 kt mv --no-replace /d/y /d
	err_is "keytree: /d/y: the source and the target are the same node"
	run 1 kt mv /d /d/c
	err_is "keytree: /d: a directory cannot move into its own subtree"
	err_plain
	unchanged
}

t_mv_exchange() {
	new_store
	run 0 kt put /a 1
	run 0 kt put /b 2
	run 0 kt mv --exchange /a /b
	run 0 kt get /a
	out_is 2
	run 0 kt get /b
	out_is 1
	run 1 kt mv --exchange /a /none
	# An exchange swaps the two names given, even with a directory.
	run 0 kt put /d/x 3
	run 0 kt mv --exchange /a /d
	run 0 kt get /a/x
	out_is 3
	run 0 kt get /d
	out_is 2
}

t_stat() {
	new_store
	run 0 kt put /a/b hello
	run 0 kt attr set /a/b k v
	run 0 kt stat /a/b
	out_has "path: /a/b"
	out_has "kind: item"
	out_has "size: 5"
	out_has "mode: 0644 (-rw-r--r--)"
	out_has "uid: $(id -u)"
	out_has "attributes: 1"
	grep -Eq '^id: [0-9]+$' "$OUT" || fail "no id"
	grep -Eq '^version: [0-9]+$' "$OUT" || fail "no version"
	grep -Eq '^mtime: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z$' \
		"$OUT" || fail "no mtime"
	out_has "atime: "
	out_has "ctime: "
	run 0 kt stat /a
	out_has "kind: dir"
	out_has "subdirs: 0"
}

t_stat_link() {
	new_store
	run 0 kt put /t hello
	run 0 kt ln -s /t /l
	run 0 kt stat /l
	out_has "kind: link"
	out_has "target: /t"
	out_has "size: 2"
	run 0 kt stat -L /l
	out_has "kind: item"
	out_has "size: 5"
}

t_stat_json() {
	new_store
	run 0 kt put /a v
	run 0 kt stat --json /a
	[ "$(wc -l <"$OUT")" -eq 1 ] || fail "not one line"
	out_has '{"path":"/a","kind":"item","id":'
	out_has '"size":1,"stored":1,"mode":420,'
	out_has '"nattrs":0}'
	run 0 kt put $'/\xff' v
	run 0 kt stat --json $'/\xff'
	out_has '{"path":{"base64":"L/8="}'
}

t_attr() {
	new_store
	run 0 kt put /a v
	run 0 kt attr set /a color red
	run 0 kt attr set /a size 10
	run 0 kt attr get /a color
	out_is red
	run 0 kt attr ls /a
	out_is $'color\nsize'
	run 0 kt attr rm /a color
	run 1 kt attr get /a color
	err_has "keytree: /a:"
	err_has "color"
	run 1 kt attr rm /a color
	run 0 kt attr ls /a
	out_is size
	run 2 kt attr get /a
	run 2 kt attr ls /a x
}

t_attr_stdin_binary() {
	new_store
	run 0 kt put /a v
	printf 'a\0b\xff\n' >"$TMP/v"
	run_in 0 "$TMP/v" kt attr set /a bin
	run 0 kt attr get /a bin
	cmp "$TMP/v" "$OUT" || fail "attribute value differs"
}

run_case "$@"
