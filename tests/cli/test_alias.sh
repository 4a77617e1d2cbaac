#!/usr/bin/env bash
# Aliases (hard links): ln TARGET NAME, the link count in ls -l, stat and
# stats, rm of one path and rm --all-paths, dump and load of alias records,
# import and export of hard links, and the refusals (store unchanged).
. "$(dirname "$0")/lib.sh"

# id PATH: the node id stat shows.
id_of() { kt stat "$1" | sed -n 's/^id: //p'; }

# links PATH: the link count stat shows.
links_of() { kt stat "$1" | sed -n 's/^links: //p'; }

# groups DIR: the hard-link groups of the files below DIR, one line per
# inode ("name name ..." sorted), the lines sorted: two trees with the same
# files linked together give the same text.
groups() {
	find "$1" ! -type d -printf '%i %P\n' | sort -k1,1 -k2 |
		awk '$1 != last { if (NR > 1) print line; line = $2; last = $1; next }
		     { line = line " " $2 }
		     END { if (NR > 0) print line }' | sort
}

# StatelyDB's enrolment example (issue 11): one item under two key paths.
t_stately_enrolment() {
	new_store
	run 0 kt put /student-123/course-PHYS341 \
		'{"student":"123","course":"PHYS341","year":2019,"grade":null}'
	run 0 kt ln /student-123/course-PHYS341 \
		/course-PHYS341/year-2019/student-123
	err_empty
	run 0 kt ls /student-123
	out_is course-PHYS341
	run 0 kt ls /course-PHYS341/year-2019
	out_is student-123
	run 0 kt find /student-123
	out_is /student-123/course-PHYS341
	run 0 kt find /course-PHYS341
	out_is /course-PHYS341/year-2019/student-123
	eq "$(id_of /course-PHYS341/year-2019/student-123)" \
		"$(id_of /student-123/course-PHYS341)" "the same node"
	# One update through one path, read through the other.
	run 0 kt put /course-PHYS341/year-2019/student-123 \
		'{"student":"123","course":"PHYS341","year":2019,"grade":"A"}'
	run 0 kt get /student-123/course-PHYS341
	out_is '{"student":"123","course":"PHYS341","year":2019,"grade":"A"}'
	run 0 kt attr set /student-123/course-PHYS341 term fall
	run 0 kt attr get /course-PHYS341/year-2019/student-123 term
	out_is fall
	# Deleted everywhere at once.
	run 0 kt rm --all-paths /student-123/course-PHYS341
	run 1 kt get /course-PHYS341/year-2019/student-123
	err_has "keytree: /course-PHYS341/year-2019/student-123: no such node"
	run 1 kt get /student-123/course-PHYS341
	run 0 kt find /
	out_is ""
	run 0 kt check
	out_is ""
}

t_ln_kinds() {
	new_store
	kt put /a hello
	run 0 kt ln /a /b/c
	run 0 kt stat /b
	out_has "kind: dir" # missing ancestors made, as put makes them
	# A symbolic link gets a further path itself, not its target.
	kt ln -s /a /sym
	run 0 kt ln /sym /sym2
	run 0 kt readlink /sym2
	out_is /a
	run 0 kt stat /sym2
	out_has "kind: link"
	out_has "links: 2"
	eq "$(links_of /a)" 2 "/a: /a and /b/c; the symbolic links are other nodes"
	# A special file.
	kt mknod /fifo p
	run 0 kt ln /fifo /fifo2
	run 0 kt stat /fifo2
	out_has "kind: special"
	out_has "links: 2"
	# Paths given as a shell user types them are normalised.
	run 0 kt ln a//  b/d/
	eq "$(id_of /b/d)" "$(id_of /a)" "normalised paths"
	run 0 kt check
	out_is ""
}

t_ls_stat_links() {
	new_store
	kt put /d/a hello
	kt put /d/solo x
	kt ln /d/a /d/b
	kt ln /d/a /e/c
	run 0 kt ls -l /d
	grep -Eq '^-rw-r--r-- +3 +5 [0-9-]+ [0-9:]+ a$' "$OUT" ||
		fail "ls -l: the link count of a"
	grep -Eq '^-rw-r--r-- +3 +5 [0-9-]+ [0-9:]+ b$' "$OUT" ||
		fail "ls -l: the link count of b"
	grep -Eq '^-rw-r--r-- +1 +1 [0-9-]+ [0-9:]+ solo$' "$OUT" ||
		fail "ls -l: an ordinary item"
	run 0 kt ls -l /
	grep -Eq '^drwxr-xr-x +1 +[0-9]+ .* d$' "$OUT" || fail "ls -l: a directory"
	run 0 kt ls -l /e/c
	grep -Eq '^-rw-r--r-- +3 +5 .* /e/c$' "$OUT" || fail "ls -l of the item"
	run 0 kt stat /e/c
	out_has "links: 3"
	out_has "size: 5"
	run 0 kt stat /d/solo
	out_has "links: 1"
	run 0 kt stat /d
	out_has "links: 1"
	run 0 kt stat --json /d/b
	out_has '"nlink":3'
	run 0 kt ls --json /d
	python3 - "$OUT" <<'PY' || fail "ls --json nlink"
import json, sys
recs = {r["name"]: r for r in map(json.loads, open(sys.argv[1]))}
assert recs["a"]["nlink"] == 3 and recs["b"]["nlink"] == 3, recs
assert recs["solo"]["nlink"] == 1, recs
assert recs["a"]["id"] == recs["b"]["id"]
PY
	# tree and find show each path as an ordinary child.
	run 0 kt tree /
	out_has "2 directories, 4 items, 0 links"
	run 0 kt find /
	out_is $'/d/a\n/d/b\n/d/solo\n/e/c'
}

t_rm_paths() {
	new_store
	kt put /a v
	kt ln /a /b
	kt ln /a /c
	kt attr set /a k v
	# rm of one path: the others stay, with the value and attributes.
	run 0 kt rm /a
	run 1 kt get /a
	run 0 kt get /b
	out_is v
	run 0 kt attr get /c k
	out_is v
	eq "$(links_of /b)" 2 "links after rm of one path"
	# -a: every path at once.
	run 0 kt rm -a /c
	run 1 kt stat /b
	err_has "keytree: /b: no such node"
	run 1 kt stat /c
	run 0 kt find -a /
	out_is ""
	# On a node with one path it is an ordinary rm.
	kt put /x 1
	run 0 kt rm --all-paths /x
	run 1 kt get /x
	run 1 kt rm --all-paths /x
	err_has "keytree: /x: no such node"
	run 0 kt stats
	out_has "aliases: 0"
	run 0 kt check
	out_is ""
}

t_stats() {
	new_store
	kt put /a 12345
	kt ln /a /b
	kt ln /a /c/d
	kt put /e xy
	run 0 kt stats
	out_has "items: 2"
	out_has "aliases: 2"
	out_has "bytes: 7"
	run 0 kt stats --json
	out_has '"items":2,'
	out_has '"aliases":2}'
}

# ln that must fail: exit 1, a message naming the path, store unchanged.
t_ln_refused() {
	new_store
	kt put /a v
	kt mkdir /d
	kt put /both v
	kt mkdir /both
	kt put /taken w
	snapshot
	run 1 kt ln /d /d2
	err_is "keytree: /d: is a directory; a directory cannot have a second path (use ln -s for a symbolic link to it)"
	run 1 kt ln /both /both2
	err_has "keytree: /both: is an item that is also a directory; a directory cannot have a second path"
	run 1 kt ln / /r
	err_is "keytree: /: the root cannot have a second path"
	run 1 kt ln /a /taken
	err_is "keytree: /taken: already exists; ln makes a new path and never replaces a node"
	run 1 kt ln /a /d
	err_has "keytree: /d: already exists"
	run 1 kt ln /a /a
	err_has "keytree: /a: already exists"
	run 1 kt ln /missing /new
	err_is "keytree: /missing: no such node"
	run 1 kt ln /a "/x${D}y"
	err_has "keytree: /x${D}y:"
	err_plain
	run 2 kt ln /a
	err_has "missing operand"
	run 2 kt ln /a /b /c
	err_has "extra operand '/c'"
	unchanged
	run 0 kt find -a /
	out_is $'/a\n/both\n/d\n/taken'
}

# An item with several paths cannot gain children (kt_link's rule): the
# CLI says so and changes nothing.
t_alias_no_children() {
	new_store
	kt put /a v
	kt ln /a /b
	snapshot
	run 1 kt put /b/child x
	err_has "keytree: "
	err_plain
	run 1 kt mkdir /a
	err_plain
	unchanged
}

t_dump_load() {
	new_store
	kt put /z/item hello
	kt attr set /z/item color red
	kt ln /z/item /a/alias # sorts first: the record goes there
	kt ln /z/item /m
	kt ln -s /z/item /sym
	kt ln /sym /sym2
	kt put /plain p
	run 0 kt dump
	cp "$OUT" "$TMP/d1"
	python3 - "$TMP/d1" <<'PY' || fail "dump format of aliases"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])][1:-1]
paths = [r["path"] for r in recs]
first = recs[paths.index("/a/alias")]
assert first["kind"] == "item" and first["value"] == "hello", first
assert first["attrs"] == [{"name": "color", "value": "red"}], first
for p in ("/m", "/z/item"):
    r = recs[paths.index(p)]
    assert r == {"path": p, "kind": "alias", "of": "/a/alias"}, r
    assert paths.index(p) > paths.index("/a/alias")
assert recs[paths.index("/sym")]["kind"] == "link"
assert recs[paths.index("/sym2")] == {"path": "/sym2", "kind": "alias", "of": "/sym"}
assert len(recs) == 9, paths
PY
	KEYTREE_STORE=$(store_at copy)
	new_store
	run_in 0 "$TMP/d1" kt load
	err_empty
	run 0 kt dump
	cmp "$TMP/d1" "$OUT" || { diff "$TMP/d1" "$OUT" >&2; fail "dumps differ"; }
	eq "$(links_of /m)" 3 "link count after load"
	eq "$(links_of /sym2)" 2 "symlink's link count after load"
	eq "$(id_of /z/item)" "$(id_of /a/alias)" "one node after load"
	run 0 kt put /m changed
	run 0 kt get /z/item
	out_is changed
	run 0 kt stats
	out_has "aliases: 3"
	run 0 kt check
	out_is ""
	# A subtree holding one path of the node has it as a plain record.
	run 0 kt dump /z
	if grep -q alias "$OUT"; then fail "alias record in /z"; fi
	cp "$OUT" "$TMP/sub"
	KEYTREE_STORE=$(store_at sub-store)
	new_store
	run_in 0 "$TMP/sub" kt load
	eq "$(links_of /z/item)" 1 "one path in the subtree"
	# A dump loaded again merges: an alias already there is kept.  (A
	# symbolic link is not: a link in the way fails a load.)
	KEYTREE_STORE=$(store_at merge)
	new_store
	kt put /p one
	kt ln /p /q
	kt dump >"$TMP/d2"
	kt put /q two
	run_in 0 "$TMP/d2" kt load
	eq "$(links_of /q)" 2 "link count after loading again"
	run 0 kt get /q
	out_is one
}

# load_bad RECORD MESSAGE: a dump whose third line is RECORD is refused
# with MESSAGE against line 3 (or the line in MESSAGE), store unchanged.
load_bad() {
	{
		echo '{"keytree":"dump","format":1}'
		echo '{"path":"/a","kind":"item","mode":420,"uid":0,"gid":0,"atime":0,"mtime":0,"value":"v"}'
		echo "$1"
		echo '{"path":"/d","kind":"dir","mode":493,"uid":0,"gid":0,"atime":0,"mtime":0}'
		echo '{"end":true,"records":3}'
	} >"$TMP/bad"
	snapshot
	run_in 1 "$TMP/bad" kt load
	err_is "keytree: load: $2"
	unchanged
}

t_load_refused() {
	new_store
	kt put /keep k
	load_bad '{"path":"/b","kind":"alias","of":"/missing"}' \
		'line 3: alias of /missing, which no earlier record holds (a node'"'"'s record comes before its aliases)'
	load_bad '{"path":"/b","kind":"alias","of":"/d"}' \
		'line 3: alias of /d, which no earlier record holds (a node'"'"'s record comes before its aliases)'
	load_bad '{"path":"/b","kind":"alias","of":"/"}' \
		'line 3: alias of /, a directory: a directory cannot have a second path'
	load_bad '{"path":"/b","kind":"alias","of":"/a","mode":420}' \
		'line 3: an alias has only "path", "kind" and "of": the rest is in its node'"'"'s record'
	load_bad '{"path":"/b","kind":"alias"}' \
		'line 3: an alias needs "of", the path of its node'"'"'s record, a string or {"base64": ...}'
	load_bad '{"path":"/b","kind":"alias","of":"/a/"}' \
		'line 3: "of" is not a canonical path'
	load_bad '{"path":"/","kind":"alias","of":"/a"}' \
		'line 3: the root cannot be an alias'
	load_bad '{"path":"/b","kind":"item","mode":420,"uid":0,"gid":0,"atime":0,"mtime":0,"value":"v","of":"/a"}' \
		'line 3: "of" belongs to aliases only'
	# An alias below its own node: the item would gain a child.
	sed -i 's|^{"path":"/b","kind":"item".*|{"path":"/a/b","kind":"alias","of":"/a"}|' \
		"$TMP/bad"
	grep -q '"/a/b"' "$TMP/bad" || fail "test dump not made"
	snapshot
	run_in 1 "$TMP/bad" kt load
	err_has "keytree: load: line 3: "
	err_plain
	unchanged
}

t_load_alias_of_dir() {
	new_store
	{
		echo '{"keytree":"dump","format":1}'
		echo '{"path":"/d","kind":"dir","mode":493,"uid":0,"gid":0,"atime":0,"mtime":0}'
		echo '{"path":"/x","kind":"alias","of":"/d"}'
		echo '{"end":true,"records":2}'
	} >"$TMP/bad"
	snapshot
	run_in 1 "$TMP/bad" kt load
	err_is "keytree: load: line 3: alias of /d, a directory: a directory cannot have a second path"
	unchanged
	# An alias onto a node already in the store fails against its line.
	kt put /a v
	kt put /taken t
	{
		echo '{"keytree":"dump","format":1}'
		echo '{"path":"/a","kind":"item","mode":420,"uid":0,"gid":0,"atime":0,"mtime":0,"value":"v"}'
		echo '{"path":"/taken","kind":"alias","of":"/a"}'
		echo '{"end":true,"records":2}'
	} >"$TMP/bad"
	snapshot
	run_in 1 "$TMP/bad" kt load
	err_has "keytree: load: line 3: "
	err_plain
	unchanged
}

t_import_export() {
	local src="$TMP/src"
	mkdir -p "$src/sub/deep" "$src/other"
	echo one >"$src/one"
	ln "$src/one" "$src/sub/one-again"
	ln "$src/one" "$src/sub/deep/one-more"
	echo two >"$src/other/two"
	ln "$src/other/two" "$src/two-link"
	echo solo >"$src/solo"
	ln -s one "$src/sym"
	ln "$src/sym" "$src/sym-hard"
	echo outside >"$TMP/outside"
	ln "$TMP/outside" "$src/half" # its other name is not imported
	new_store
	run 0 kt import "$src"
	err_empty
	eq "$(id_of /sub/one-again)" "$(id_of /one)" "imported hard link"
	eq "$(id_of /sub/deep/one-more)" "$(id_of /one)" "imported hard link"
	eq "$(links_of /one)" 3 "link count of one"
	eq "$(links_of /two-link)" 2 "link count of two"
	eq "$(links_of /sym-hard)" 2 "link count of the symbolic link"
	eq "$(links_of /solo)" 1 "an ordinary file"
	eq "$(links_of /half)" 1 "a file whose other name is outside"
	run 0 kt readlink /sym-hard
	out_is one
	run 0 kt get /sub/one-again
	out_is one
	run 0 kt stats
	out_has "aliases: 4"
	run 0 kt check
	out_is ""
	run 0 kt export / "$TMP/dst"
	err_empty
	rm "$TMP/outside"
	eq "$(groups "$TMP/dst")" "$(groups "$src")" "hard-link groups"
	eq "$(stat -c %h "$TMP/dst/sub/deep/one-more")" 3 "exported link count"
	eq "$(cat "$TMP/dst/sub/deep/one-more")" one "exported content"
	eq "$(readlink "$TMP/dst/sym-hard")" one "exported symbolic link"
	# A subtree holding one path of a node exports an ordinary file.
	run 0 kt export /sub "$TMP/dst2"
	eq "$(stat -c %h "$TMP/dst2/one-again")" 2 "two paths below /sub"
	eq "$(stat -c %i "$TMP/dst2/one-again")" \
		"$(stat -c %i "$TMP/dst2/deep/one-more")" "linked below /sub"
	run 0 kt export /other "$TMP/dst3"
	eq "$(stat -c %h "$TMP/dst3/two")" 1 "one path below /other"
}

# DUMP.md's example, an alias record included, loads and dumps back as is.
t_dump_doc_example() {
	: "${KT_SRC:?}"
	sed -n '/^{"keytree":"dump"/,/^{"end":true/p' "$KT_SRC/docs/DUMP.md" |
		head -n 9 >"$TMP/example"
	grep -q '"kind":"alias"' "$TMP/example" || fail "no alias in the example"
	new_store
	run_in 0 "$TMP/example" kt load
	eq "$(id_of /z)" "$(id_of /a)" "the alias of the example"
	run 0 kt attr get /z color
	out_is red
	run 0 kt dump
	cmp "$TMP/example" "$OUT" || { diff "$TMP/example" "$OUT" >&2; fail "not as documented"; }
}

t_help() {
	run 0 kt ln --help
	out_has "ln [-s] TARGET NAME"
	out_has "-s, --symbolic"
	run 0 kt rm --help
	out_has "-a, --all-paths"
	run 0 kt --help
	out_has "ln [-s] TARGET NAME"
	: "${KT_SRC:?}"
	grep -q "all\\\\-paths" "$KT_SRC/docs/keytree.1" ||
		fail "the man page lacks rm --all-paths"
	grep -q '"kind":"alias"' "$KT_SRC/docs/DUMP.md" ||
		fail "DUMP.md lacks the alias record"
}

run_case "$@"
