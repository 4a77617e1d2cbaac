#!/usr/bin/env bash
# Listing: ls with every option, tree and find.
. "$(dirname "$0")/lib.sh"

fill() {
	new_store
	kt put /d/a 1
	kt put /d/b 22
	kt put /d/c/x 333
	kt ln -s /d/a /d/l
	kt mkdir /d/e
}

t_ls() {
	fill
	run 0 kt ls /d
	out_is $'a\nb\nc\ne\nl'
	run 0 kt ls
	out_is d
	run 1 kt ls /nope
	err_has "keytree: /nope: no such node"
	run 0 kt ls /d/a
	out_is /d/a
}

t_ls_long() {
	fill
	run 0 kt ls -l /d
	grep -Eq '^-rw-r--r-- +1 +2 [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{5} b$' \
		"$OUT" || fail "item line"
	grep -Eq '^drwxr-xr-x +1 +[0-9]+ .* c$' "$OUT" || fail "dir line"
	grep -Eq '^lrwxrwxrwx +1 +4 .* l -> /d/a$' "$OUT" || fail "link line"
	run 0 kt ls /d
	if grep -q -- '->' "$OUT"; then fail "target without -l"; fi
}

t_ls_recursive() {
	fill
	run 0 kt ls -R /d
	out_is $'/d:\na\nb\nc\ne\nl\n\n/d/c:\nx\n\n/d/e:'
}

t_ls_paging() {
	fill
	run 0 kt ls --limit 2 /d
	out_is $'a\nb'
	run 0 kt ls --after b --limit 2 /d
	out_is $'c\ne'
	run 0 kt ls --after l /d
	out_is ""
	run 0 kt ls --reverse /d
	out_is $'l\ne\nc\nb\na'
	run 0 kt ls --reverse --after c /d
	out_is $'b\na'
	run 2 kt ls -R --after a /d
	run 2 kt ls --limit 0 /d
}

t_ls_json() {
	fill
	run 0 kt ls --json /d
	[ "$(wc -l <"$OUT")" -eq 5 ] || fail "not one object per entry"
	out_has '{"name":"a","path":"/d/a","kind":"item",'
	out_has '"kind":"link",'
	out_has '"target":"/d/a"}'
	python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' \
		"$OUT" || fail "not JSON"
}

t_tree() {
	fill
	run 0 kt tree /d
	out_is "/d
├── a
├── b
├── c
│   └── x
├── e
└── l -> /d/a

2 directories, 3 items, 1 link"
	run 0 kt tree /d/a
	out_is "/d/a

0 directories, 1 item, 0 links"
	run 1 kt tree /nope
	err_has "keytree: /nope: no such node"
}

t_find() {
	new_store
	kt put /cust-1/ord-1 1
	kt put /cust-1/ord-2/li-9 1
	kt put /cust-1/ordinal 1
	kt put /cust-1/other 1
	kt put /cust-2/ord-1 1
	run 0 kt find /cust-1/ord
	sort "$OUT" >"$TMP/sorted"
	eq "$(cat "$TMP/sorted")" "/cust-1/ord-1
/cust-1/ord-2/li-9
/cust-1/ordinal" "find: items only"
	run 0 kt find --all /cust-1/ord
	sort "$OUT" >"$TMP/sorted"
	eq "$(cat "$TMP/sorted")" "/cust-1/ord-1
/cust-1/ord-2
/cust-1/ord-2/li-9
/cust-1/ordinal" "find --all: directories too"
	run 0 kt find /
	[ "$(wc -l <"$OUT")" -eq 5 ] || fail "find / count"
	run 0 kt find -a /
	[ "$(wc -l <"$OUT")" -eq 8 ] || fail "find -a / count"
	run 0 kt find /none
	out_is ""
	run 2 kt find
}

# find in pages: --limit, then --after the last path of the page before;
# the pages add up to the whole find, in its order, on every engine.
t_find_paging() {
	new_store
	kt put /t/a 1
	kt put /t/b/deep 1
	kt put /t/b/deeper 1
	kt put /t/c 1
	kt put /u/x 1
	run 0 kt find -a /t
	cp "$OUT" "$TMP/whole"
	: >"$TMP/pages"
	after=()
	for _ in 1 2 3 4 5 6 7; do
		run 0 kt find -a --limit 2 "${after[@]}" /t
		cat "$OUT" >>"$TMP/pages"
		[ "$(wc -l <"$OUT")" -le 2 ] || fail "a page of more than 2"
		[ "$(wc -l <"$OUT")" -eq 2 ] || break
		after=(--after "$(tail -n 1 "$OUT")")
	done
	eq "$(cat "$TMP/pages")" "$(cat "$TMP/whole")" "pages of 2 against the whole find"
	eq "$(cat "$TMP/whole")" "/t
/t/a
/t/b
/t/b/deep
/t/b/deeper
/t/c" "find -a /t"
	# The token need not exist any more.
	kt rm -r /t/b
	run 0 kt find -a --after /t/b/deep /t
	out_is "/t/c"
	# A token from another find is refused, naming it.
	run 1 kt find --after /u/x /t
	err_has "/u/x"
	run 2 kt find --limit 0 /t
	err_has "--limit needs a positive count"
}

t_find_json() {
	new_store
	kt put /a/b 1
	run 0 kt find --json /a
	out_is '{"path":"/a/b","kind":"item","id":'"$(kt stat --json /a/b |
		sed 's/.*"id":\([0-9]*\).*/\1/')"'}'
	run 0 kt find --json --all /a
	out_is '{"path":"/a","kind":"dir","id":'"$(kt stat --json /a |
		sed 's/.*"id":\([0-9]*\).*/\1/')"'}
{"path":"/a/b","kind":"item","id":'"$(kt stat --json /a/b |
		sed 's/.*"id":\([0-9]*\).*/\1/')"'}'
}

# A store made with typed names: numbers by value, then UUIDs, then other
# names by bytes, in ls, its pages both ways, find and dump; ls -l says
# so; a dump of it warns when loaded into a plain store.
t_typed_names() {
	kt init --typed
	for n in abc 100 9 007 10 123e4567-e89b-12d3-a456-426614174000 0; do
		kt put "/o/$n" "$n"
	done
	run 0 kt ls /o
	out_is $'0\n9\n10\n100\n123e4567-e89b-12d3-a456-426614174000\n007\nabc'
	run 0 kt ls --after 9 --limit 1 /o
	out_is 10
	run 0 kt ls --reverse --after 100 /o
	out_is $'10\n9\n0'
	run 0 kt ls -l /o
	[ "$(head -n 1 "$OUT")" = "order: typed" ] || fail "ls -l: no order line"
	run 0 kt ls --json /
	out_has '"order":"typed"'
	run 0 kt find /o
	out_is $'/o/0\n/o/9\n/o/10\n/o/100\n/o/123e4567-e89b-12d3-a456-426614174000\n/o/007\n/o/abc'
	run 0 kt get /o/007
	out_is 007
	run 0 kt check
	run 0 kt dump
	[ "$(head -n 1 "$OUT")" = '{"keytree":"dump","format":1,"names":"typed"}' ] ||
		fail "dump header: $(head -n 1 "$OUT")"
	cp "$OUT" "$TMP/typed.dump"
	# Into a plain store: loaded, with a warning; listed by bytes.
	KEYTREE_STORE=$(store_at plain)
	export KEYTREE_STORE
	kt init
	run 0 kt load <"$TMP/typed.dump"
	err_has "the dump comes from a store with typed names"
	run 0 kt ls /o
	out_is $'0\n007\n10\n100\n123e4567-e89b-12d3-a456-426614174000\n9\nabc'
	run 0 kt ls -l /o
	if grep -q '^order:' "$OUT"; then fail "a plain store says typed"; fi
	# Into a typed one: the same order as the source.
	KEYTREE_STORE=$(store_at typed2)
	kt init --typed
	run 0 kt load <"$TMP/typed.dump"
	err_empty
	run 0 kt ls /o
	out_is $'0\n9\n10\n100\n123e4567-e89b-12d3-a456-426614174000\n007\nabc'
	# Typed is chosen at init, for good: init with a control-byte
	# delimiter cannot type names.
	KEYTREE_STORE=$(store_at ctl)
	run 1 kt init --typed --delimiter $'\x05'
	err_has "typed names need a delimiter"
}

run_case "$@"
