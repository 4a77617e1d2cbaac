#!/usr/bin/env bash
# Messages a user reads: they say what failed in the user's terms and name
# the culprit (path, id, dump line); no library call names ("id_path:",
# "put '/a':", "batch operation 2 (put):") and no bare LevelDB text
# ("read: Corruption: ...") at their head.  A refused command leaves the
# store as it was.  The damaged-file cases are LevelDB's only.
. "$(dirname "$0")/lib.sh"

# flip FILE OFFSET: invert one byte of FILE.
flip() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf '%03o' $((b ^ 0xff)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# A store whose biggest table file holds a 200 kB value (random bytes, so
# that it does not compress) and a few small nodes, moved into tables by
# the opens that follow.
damaged_store() {
	new_store
	head -c 200000 /dev/urandom >"$TMP/big"
	kt put /big <"$TMP/big"
	kt put /dir/small hello
	kt check >/dev/null
}

t_unknown_id() {
	new_store
	run 1 kt path 999999
	err_is "keytree: 999999: no node has id 999999"
	err_plain
}

t_damaged_table() {
	engine_only leveldb "it damages a LevelDB table file of the store directory"
	local table size
	damaged_store
	table=$(ls -S "$KEYTREE_STORE"/*.ldb | head -n 1)
	size=$(stat -c %s "$table")
	flip "$table" $((size / 2))
	# A whole value is read without LevelDB's own checks; the value's
	# block checksums (FORMAT.md §6) catch the damage instead.
	run 1 kt get /big
	err_has "keytree: /big: block "
	err_has " of node 1025 is damaged: its checksum does not match its bytes"
	err_plain
	[ ! -s "$OUT" ] || fail "get of a damaged value wrote bytes"
	run 1 kt dump
	err_has "keytree: /big: block "
	err_has " of node 1025 is damaged: its checksum does not match its bytes"
	# The check names the damaged table file (ldb_env.cc checks each
	# block as it reads it; with KEYTREE_MMAP_TABLES=1 LevelDB does,
	# without the name).
	run 1 kt check
	if [ "${KEYTREE_MMAP_TABLES:-0}" = 1 ]; then
		err_is "keytree: $KEYTREE_STORE: reading the store failed: the store is damaged (LevelDB: Corruption: block checksum mismatch)"
	else
		err_is "keytree: $KEYTREE_STORE: reading the store failed: the store is damaged (LevelDB: Corruption: $table: block checksum mismatch)"
	fi
	err_plain
	run 1 kt stats
	err_has "keytree: $KEYTREE_STORE: reading the store failed: the store is damaged (LevelDB: Corruption:"
	err_plain
}

t_damaged_manifest() {
	engine_only leveldb "it damages the LevelDB MANIFEST of the store directory"
	local manifest size
	damaged_store
	manifest=$(ls "$KEYTREE_STORE"/MANIFEST-*)
	size=$(stat -c %s "$manifest")
	flip "$manifest" $((size / 2))
	run 1 kt ls /
	err_is "keytree: $KEYTREE_STORE: the store is damaged (LevelDB: Corruption: checksum mismatch)"
	err_plain
}

t_link_target_refused() {
	new_store
	run 0 kt ln -s "/x${D}y" /l
	snapshot
	run 1 kt get /l
	err_is "keytree: /l: in the target of link '/l': name 'x${D}y' contains the reserved delimiter at byte 1"
	err_plain
	run 1 kt put /l/z v
	err_is "keytree: /l/z: in the target of link '/l': name 'x${D}y' contains the reserved delimiter at byte 1"
	err_plain
	unchanged
}

# load reports a refused record by its line and the path of the record,
# whether the batch refuses it when it is recorded or when it commits.
t_load_refused() {
	local meta='"mode":420,"uid":0,"gid":0,"atime":1,"mtime":1'
	new_store
	run 0 kt put /a v
	snapshot
	printf '%s\n' '{"keytree":"dump","format":1}' \
		"{\"path\":\"/x${D}y\",\"kind\":\"item\",$meta,\"value\":\"v\"}" \
		'{"end":true,"records":1}' >"$TMP/delim.jsonl"
	run_in 1 "$TMP/delim.jsonl" kt load
	err_is "keytree: load: line 2: /x${D}y: name 'x${D}y' contains the reserved delimiter at byte 1"
	err_plain
	printf '%s\n' '{"keytree":"dump","format":1}' \
		"{\"path\":\"/a\",\"kind\":\"link\",$meta,\"target\":\"/b\"}" \
		'{"end":true,"records":1}' >"$TMP/link.jsonl"
	run_in 1 "$TMP/link.jsonl" kt load
	err_is "keytree: load: line 2: /a: something already exists there"
	err_plain
	unchanged
}

t_rm_not_empty() {
	new_store
	run 0 kt put /a/b/c 1
	snapshot
	run 1 kt rm /a
	err_is "keytree: /a: directory not empty (use rm -r to remove it and everything under it)"
	run 1 kt rm --prune /a/b
	err_has "use rm -r"
	unchanged
	run 0 kt rm -r /a
	run 1 kt stat /a
}

# A directory at its limit of entries (KEYTREE_DIR_MAX here; 100,000 on
# RADOS by default) refuses one more, naming the directory.
t_directory_full() {
	new_store
	run 0 kt put /d/a 1
	run 0 kt put /d/b 2
	run 0 kt put /e 3
	snapshot
	export KEYTREE_DIR_MAX=2
	run 1 kt put /d/c 3
	err_is "keytree: /d/c: directory '/d' already holds 2 entries, the most a directory of this store may hold (\$KEYTREE_DIR_MAX); spread them over subdirectories"
	err_plain
	run 1 kt mv /e /d/e
	err_has "directory '/d' already holds 2 entries"
	run 1 kt mkdir -p /d/x/y
	err_has "directory '/d' already holds 2 entries"
	unchanged
	run 0 kt rm /d/a
	run 0 kt mv /e /d/e
	export KEYTREE_DIR_MAX=many
	run 1 kt ls /d
	err_has "KEYTREE_DIR_MAX='many' is not a number"
	unset KEYTREE_DIR_MAX
	run 0 kt put /d/c 3
}

run_case "$@"
