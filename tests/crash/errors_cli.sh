#!/usr/bin/env bash
# errors_cli.sh - the rejected inputs of docs/ERRORS.md that come in through
# the command-line tool: damaged dump files given to `keytree load`, and
# bad names typed on the command line.  Each case requires exit status 1,
# a message naming the line or name at fault, and a store whose
# `keytree dump` is the same before and after.
#
# Environment: KT_CLI (the keytree binary, set by CTest).
# KT_ERRORS_PRINT=1 prints each message (how ERRORS.md was written).
set -euo pipefail

: "${KT_CLI:?KT_CLI must name the keytree binary}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kt-errors-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export KEYTREE_STORE=$TMP/store
D=$'\xc2\xa6'
HDR='{"keytree":"dump","format":1}'
META='"mode":420,"uid":0,"gid":0,"atime":1,"mtime":1'
failures=0
cases=0

kt() { "$KT_CLI" "$@"; }

"$KT_CLI" init
kt put /a hello
kt put /dir/child c
kt attr set /a color red
kt dump >"$TMP/before"

# reject NAME NEEDLE CMD...: CMD must exit 1 with NEEDLE on stderr and leave
# the dump unchanged.
reject() {
	local name=$1 needle=$2 rc=0
	shift 2
	cases=$((cases + 1))
	"$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
	if [ "$rc" -ne 1 ]; then
		echo "FAIL $name: exit status $rc, expected 1" >&2
		cat "$TMP/err" >&2
		failures=$((failures + 1))
		return
	fi
	if ! grep -qF -- "$needle" "$TMP/err"; then
		echo "FAIL $name: message lacks '$needle':" >&2
		cat "$TMP/err" >&2
		failures=$((failures + 1))
		return
	fi
	# The user's terms: no library call ("put '/x': ") in the message.
	if grep -Eq -- "(^|: )[a-z_]+ '[^']*'(: | to ')|batch operation" \
		"$TMP/err"; then
		echo "FAIL $name: message names a library call:" >&2
		cat "$TMP/err" >&2
		failures=$((failures + 1))
		return
	fi
	kt dump >"$TMP/after"
	if ! cmp -s "$TMP/before" "$TMP/after"; then
		echo "FAIL $name: the store changed" >&2
		diff "$TMP/before" "$TMP/after" >&2 || true
		failures=$((failures + 1))
		return
	fi
	[ -z "${KT_ERRORS_PRINT:-}" ] || echo "ERRORS| $name | $(cat "$TMP/err")"
	echo "ok $name"
}

# load_file NAME CONTENT: write a dump file.
dumpfile() { printf '%s' "$2" >"$TMP/$1.jsonl"; }

load_from() { kt load <"$TMP/$1.jsonl"; }

rec() { printf '{"path":"%s","kind":"item",%s,"value":"%s"}' "$1" "$META" "$2"; }

dumpfile bad_json "$HDR
$(rec /new v)
{\"path\":\"/z\",\"kind\":
{\"end\":true,\"records\":2}
"
reject load_bad_json "line 3" load_from bad_json

dumpfile bad_base64 "$HDR
$(rec /new v)
{\"path\":\"/z\",\"kind\":\"item\",$META,\"value\":{\"base64\":\"!!not base64\"}}
{\"end\":true,\"records\":2}
"
reject load_bad_base64 "line 3" load_from bad_base64

dumpfile truncated_line "$HDR
$(rec /new v)
{\"path\":\"/z\",\"kind\":\"item\",$META,\"val"
reject load_truncated_line "line 3: truncated" load_from truncated_line

dumpfile no_end_line "$HDR
$(rec /new v)
"
reject load_missing_end_line "truncated" load_from no_end_line

dumpfile wrong_count "$HDR
$(rec /new v)
{\"end\":true,\"records\":5}
"
reject load_wrong_record_count "line 3" load_from wrong_count

dumpfile newer_format '{"keytree":"dump","format":2}
{"end":true,"records":0}
'
reject load_newer_format "line 1" load_from newer_format

dumpfile delim_name "$HDR
$(rec /new v)
$(rec "/x${D}y" v)
{\"end\":true,\"records\":2}
"
reject load_name_with_delimiter "line 3: /x${D}y: name" load_from delim_name

# "/a\0b" in base64: a NUL inside a name.
dumpfile nul_name "$HDR
$(rec /new v)
{\"path\":{\"base64\":\"L2EAYg==\"},\"kind\":\"item\",$META,\"value\":\"v\"}
{\"end\":true,\"records\":2}
"
reject load_name_with_nul "line 3" load_from nul_name

dumpfile dot_name "$HDR
$(rec /new v)
$(rec /dir/./x v)
{\"end\":true,\"records\":2}
"
reject load_dot_name "line 3: /dir/./x: '.' is not" load_from dot_name

dumpfile long_name "$HDR
$(rec /new v)
$(rec "/$(printf 'n%.0s' $(seq 256))" v)
{\"end\":true,\"records\":2}
"
reject load_name_256_bytes "name of 256 bytes is over the limit" \
	load_from long_name

dumpfile unknown_field "$HDR
{\"path\":\"/z\",\"kind\":\"item\",$META,\"value\":\"v\",\"colour\":1}
{\"end\":true,\"records\":1}
"
reject load_unknown_field "line 2" load_from unknown_field

dumpfile link_over_item "$HDR
$(rec /new v)
{\"path\":\"/a\",\"kind\":\"link\",\"mode\":511,\"uid\":0,\"gid\":0,\"atime\":1,\"mtime\":1,\"target\":\"/dir\"}
{\"end\":true,\"records\":2}
"
reject load_link_over_item "line 3: /a: something already exists" \
	load_from link_over_item

reject put_name_with_delimiter "x${D}y" kt put "/x${D}y" v
reject mkdir_dot_name "." kt mkdir /dir/.
reject rm_not_empty "/dir: directory not empty (use rm -r" kt rm /dir

echo "errors_cli: $cases cases, $failures failed"
[ "$failures" -eq 0 ]
