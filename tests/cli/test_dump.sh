#!/usr/bin/env bash
# dump and load: the round trip, subtrees, and rejection of malformed and
# truncated dumps with nothing applied.
. "$(dirname "$0")/lib.sh"

# A store with every kind of node, binary values, odd names, attributes.
fill() {
	new_store
	kt put /plain hello
	printf '\0\1\2\377' | kt put /bin/blob
	kt put /bin/empty ""
	kt put $'/odd/new\nline' x
	kt put $'/odd/\xfe\xff' y
	kt put '/odd/caf\u00e9 sp ace' z
	kt put /both/value v
	kt put /both v
	kt mkdir /links
	kt ln -s ../plain /links/rel
	kt ln -s /nowhere /links/dangling
	kt mkdir -p /empty/dir
	kt attr set /plain color red
	printf 'a\0b' | kt attr set /plain bin
	kt attr set /empty/dir note text
	kt attr set / rootattr 1
}

t_round_trip() {
	fill
	run 0 kt dump
	cp "$OUT" "$TMP/d1"
	err_empty
	KEYTREE_STORE=$(store_at copy)
	new_store
	run_in 0 "$TMP/d1" kt load
	run 0 kt dump
	cmp "$TMP/d1" "$OUT" || { diff "$TMP/d1" "$OUT" >&2; fail "dumps differ"; }
	run 0 kt get /bin/blob
	printf '\0\1\2\377' | cmp - "$OUT" || fail "binary value"
	run 0 kt attr get /plain bin
	printf 'a\0b' | cmp - "$OUT" || fail "binary attribute"
	run 0 kt readlink /links/rel
	out_is ../plain
	run 0 kt check
}

t_format() {
	fill
	run 0 kt dump
	python3 - "$OUT" <<'PY' || fail "dump format"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
assert lines[-1] == "", "ends with a newline"
recs = [json.loads(l) for l in lines[:-1]]
assert recs[0] == {"keytree": "dump", "format": 1}, recs[0]
assert recs[-1] == {"end": True, "records": len(recs) - 2}, recs[-1]
by = {json.dumps(r["path"]): r for r in recs[1:-1]}
p = by['"/plain"']
assert p["kind"] == "item" and p["value"] == "hello" and p["mode"] == 0o644
assert {"name": "color", "value": "red"} in p["attrs"]
assert {"name": "bin", "value": {"base64": "YQBi"}} in p["attrs"]
assert by['"/bin/blob"']["value"] == {"base64": "AAEC/w=="}
assert by['"/both"']["kind"] == "item+dir"
assert by['"/links/rel"'] ["target"] == "../plain"
assert by['{"base64": "L29kZC/+/w=="}']["value"] == "y"
for r in recs[1:-1]:
    for k in ("kind", "mode", "uid", "gid", "atime", "mtime"):
        assert k in r, (k, r)
PY
}

t_subtree() {
	fill
	run 0 kt dump /bin
	[ "$(wc -l <"$OUT")" -eq 5 ] || fail "header, 3 records, end"
	sed -n 2p "$OUT" | grep -q '"path":"/bin"' || fail "the subtree first"
	cp "$OUT" "$TMP/sub"
	KEYTREE_STORE=$(store_at copy)
	new_store
	run_in 0 "$TMP/sub" kt load
	run 0 kt find --all /
	out_is $'/bin\n/bin/blob\n/bin/empty'
	run 1 kt dump /nope
}

t_times_and_modes() {
	fill
	run 0 kt dump
	sed 's/"mode":420/"mode":384/; s/"mtime":[0-9]*/"mtime":1000000000123456789/' \
		"$OUT" >"$TMP/d"
	KEYTREE_STORE=$(store_at copy)
	new_store
	run_in 0 "$TMP/d" kt load
	run 0 kt stat --json /plain
	out_has '"mode":384'
	out_has '"mtime":1000000000123456789'
	run 0 kt stat --json /empty
	out_has '"mtime":1000000000123456789'
}

# Load D into a fresh store holding one node; it must fail with status 1,
# a message naming line LINE, and leave the store as it was.
load_rejected() {
	local d=$1 line=$2
	KEYTREE_STORE=$(store_at copy)
	drop_store
	new_store
	kt put /before 1
	kt dump >"$TMP/pre"
	run_in 1 "$d" kt load
	err_has "keytree: load: line $line: "
	kt dump >"$TMP/post"
	cmp "$TMP/pre" "$TMP/post" || fail "a rejected load changed the store"
}

t_malformed() {
	fill
	kt dump >"$TMP/d"
	sed '4s/.*/{"path": oops/' "$TMP/d" >"$TMP/bad"
	load_rejected "$TMP/bad" 4
	sed '5s/"kind":"[a-z+]*"/"kind":"file"/' "$TMP/d" >"$TMP/bad"
	load_rejected "$TMP/bad" 5
	err_has '"kind" must be'
	sed '3s/"mode":[0-9]*/"mode":99999/' "$TMP/d" >"$TMP/bad"
	load_rejected "$TMP/bad" 3
	sed '1s/.*/{"hello":1}/' "$TMP/d" >"$TMP/bad"
	load_rejected "$TMP/bad" 1
	err_has "not a keytree dump"
	sed '3s/"path":"[^"]*"/"path":"rel\/x"/' "$TMP/d" >"$TMP/bad"
	load_rejected "$TMP/bad" 3
	sed '3s/}$/,"extra":1}/' "$TMP/d" >"$TMP/bad"
	load_rejected "$TMP/bad" 3
	err_has 'unknown field "extra"'
	printf '' >"$TMP/bad"
	load_rejected "$TMP/bad" 1
}

t_truncated() {
	fill
	kt dump >"$TMP/d"
	local n
	n=$(wc -l <"$TMP/d")
	head -c $(($(stat -c %s "$TMP/d") - 10)) "$TMP/d" >"$TMP/cut"
	load_rejected "$TMP/cut" "$n"
	err_has "truncated"
	head -n $((n - 1)) "$TMP/d" >"$TMP/cut"
	load_rejected "$TMP/cut" "$n"
	err_has "the end line is missing"
	head -n 5 "$TMP/d" >"$TMP/cut"
	load_rejected "$TMP/cut" 6
	# A record dropped from the middle: the end line's count disagrees.
	sed 4d "$TMP/d" >"$TMP/cut"
	load_rejected "$TMP/cut" $((n - 1))
	err_has "records"
}

t_commit_failure_names_line() {
	fill
	kt dump >"$TMP/d"
	KEYTREE_STORE=$(store_at copy)
	new_store
	# An item where the dump has a link: the batch fails at that record.
	kt put /links/rel occupied
	kt dump >"$TMP/pre"
	local line
	line=$(grep -n '"path":"/links/rel"' "$TMP/d" | cut -d: -f1)
	run_in 1 "$TMP/d" kt load
	err_has "keytree: load: line $line: "
	kt dump >"$TMP/post"
	cmp "$TMP/pre" "$TMP/post" || fail "a failed load changed the store"
}

t_load_usage() {
	new_store
	run 2 kt load extra
	run 2 kt dump /a /b
}

run_case "$@"
