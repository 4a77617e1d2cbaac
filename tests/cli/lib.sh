# lib.sh - what the CLI test scripts share.  Each script defines cases as
# functions t_<name> and ends with `run_case "$@"`; CTest runs one case per
# test (tools/CMakeLists.txt finds them by the t_<name>() lines).
#
# Environment from CTest: KT_BIN (the keytree binary), KT_ROWS (the LevelDB
# row helper), KT_SRC (the source tree).
set -euo pipefail

: "${KT_BIN:?KT_BIN must name the keytree binary}"
: "${KT_ROWS:?KT_ROWS must name the row helper}"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kt-cli.XXXXXX")
cleanup() {
	chmod -R u+rwx "$TMP" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
export KEYTREE_STORE="$TMP/store"
OUT="$TMP/out"
ERR="$TMP/err"

# The default delimiter, U+00A6, and the partition bytes of the root.
D=$'\xc2\xa6'

kt() { "$KT_BIN" "$@"; }

fail() {
	echo "FAIL: $*" >&2
	if [ -s "$OUT" ]; then echo "--- stdout:" >&2; head -c 2000 "$OUT" >&2; fi
	if [ -s "$ERR" ]; then echo "--- stderr:" >&2; head -c 2000 "$ERR" >&2; fi
	exit 1
}

# run STATUS CMD...: run CMD with stdout in $OUT and stderr in $ERR and
# require exit status STATUS.
run() {
	local want=$1 got=0
	shift
	"$@" >"$OUT" 2>"$ERR" || got=$?
	[ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want"
}

# run_in STATUS INPUT-FILE CMD...: as run, with stdin from a file.
run_in() {
	local want=$1 in=$2 got=0
	shift 2
	"$@" <"$in" >"$OUT" 2>"$ERR" || got=$?
	[ "$got" -eq "$want" ] || fail "'$*' <$in exited $got, expected $want"
}

eq() { [ "$1" == "$2" ] || fail "${3:-value}: got '$1', expected '$2'"; }

# out_is TEXT: stdout is exactly TEXT (plus the final newline).
out_is() { eq "$(cat "$OUT")" "$1" "stdout"; }

# err_has TEXT: stderr contains TEXT.
err_has() { grep -qF -- "$1" "$ERR" || fail "stderr lacks '$1'"; }
out_has() { grep -qF -- "$1" "$OUT" || fail "stdout lacks '$1'"; }
err_empty() { [ ! -s "$ERR" ] || fail "stderr is not empty"; }

# err_is TEXT: stderr is exactly TEXT (one line).
err_is() { eq "$(cat "$ERR")" "$1" "stderr"; }

# err_plain: no message on stderr names a library call ("put '/a': ",
# "id_path: ", "batch operation 2 (put): ") or starts LevelDB's own text
# ("read: Corruption", "scan: ...") where the user's terms belong.
err_plain() {
	! grep -Eq -- "(^|: )[a-z_]+ '[^']*'(: | to ')|^keytree: [^:]*: [a-z_]+: |batch operation|(read|scan|write|sync): " "$ERR" ||
		fail "stderr names a library call"
}

# snapshot / unchanged: `keytree dump` of the store before a refused
# command, and the proof that it is the same afterwards.
snapshot() { kt dump >"$TMP/snapshot" || fail "dump before"; }
unchanged() {
	kt dump >"$TMP/snapshot.after" || fail "dump after"
	cmp -s "$TMP/snapshot" "$TMP/snapshot.after" ||
		fail "the store changed: $(diff "$TMP/snapshot" "$TMP/snapshot.after" | head -n 20)"
}

new_store() { kt init; }

run_case() {
	local name=${1:?usage: $0 CASE}
	declare -F "t_$name" >/dev/null || { echo "no case '$name'" >&2; exit 2; }
	cd "$TMP"
	"t_$name"
}
