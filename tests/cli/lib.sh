# lib.sh - what the CLI test scripts share.  Each script defines cases as
# functions t_<name> and ends with `run_case "$@"`; CTest runs one case per
# test (tools/CMakeLists.txt finds them by the t_<name>() lines).
#
# KT_CLI_ENGINE chooses the engine of the stores a case makes: leveldb
# (the default) makes $KEYTREE_STORE a directory in the case's temporary
# directory $TMP; rados makes it a new tree, rados:keytree/cli-PID-RANDOM,
# in the cluster KEYTREE_CEPH_CONF names (CTest's `ceph` fixture).  A case
# that needs a further store takes its location from `store_at NAME`, a
# directory in $TMP or a tree rados:keytree/cli-PID-RANDOM-NAME; every
# RADOS tree of the case is destroyed (`keytree destroy --yes`) on exit,
# and one that cannot be is a failure.  What only makes sense on one
# engine says so: a whole case starts with `engine_only ENGINE REASON`,
# and CMake (tools/CMakeLists.txt) registers it on that engine only; run
# on the other by hand it prints "skip: REASON" and exits 77 (CTest's
# SKIP_RETURN_CODE, so it would show as skipped, not passed); a part of a
# case runs under `if engine_is ENGINE REASON; then ... fi`, which prints
# "skip - REASON" on the other engine.
#
# Environment from CTest: KT_BIN (the keytree binary), KT_ROWS (the LevelDB
# row helper), KT_SRC (the source tree), KT_CLI_ENGINE, and for rados
# KEYTREE_CEPH_CONF.
set -euo pipefail

: "${KT_BIN:?KT_BIN must name the keytree binary}"
: "${KT_ROWS:?KT_ROWS must name the row helper}"

KT_CLI_ENGINE=${KT_CLI_ENGINE:-leveldb}
case $KT_CLI_ENGINE in
leveldb) ;;
rados)
	: "${KEYTREE_CEPH_CONF:?KT_CLI_ENGINE=rados needs KEYTREE_CEPH_CONF}"
	if [ ! -f "$KEYTREE_CEPH_CONF" ]; then
		echo "FAIL: KEYTREE_CEPH_CONF: no file $KEYTREE_CEPH_CONF" >&2
		exit 1
	fi
	export KEYTREE_CEPH_CONF
	;;
*)
	echo "FAIL: KT_CLI_ENGINE is '$KT_CLI_ENGINE'; use leveldb or rados" >&2
	exit 1
	;;
esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kt-cli.XXXXXX")
# The RADOS trees made, one location a line; beside $TMP, not in it, so
# that a case can require $TMP to hold only what it made itself.
KT_CLI_TREES=$TMP.trees
KT_CLI_TREE=cli-$$-$RANDOM$RANDOM

# store_at NAME: the location of a store named NAME for this case, on this
# run's engine; nothing is made.
store_at() {
	if [ "$KT_CLI_ENGINE" = rados ]; then
		echo "rados:keytree/$KT_CLI_TREE-$1" >>"$KT_CLI_TREES"
		echo "rados:keytree/$KT_CLI_TREE-$1"
	else
		echo "$TMP/$1"
	fi
}

# drop_store: remove the store $KEYTREE_STORE names, if there is one.
drop_store() {
	if [ "$KT_CLI_ENGINE" = rados ]; then
		"$KT_BIN" destroy --yes 2>/dev/null || true
	else
		rm -rf "$KEYTREE_STORE"
	fi
}

cleanup() {
	local rc=$? t
	trap - EXIT
	cd /
	# memstore OSDs keep every object in RAM: the trees go.  One the
	# case never made is no error; one that stays is.
	if [ -f "$KT_CLI_TREES" ]; then
		while read -r t; do
			if ! "$KT_BIN" -s "$t" destroy --yes 2>"$TMP.destroy" \
				</dev/null && ! grep -q ": no tree '" "$TMP.destroy"; then
				echo "FAIL: keytree -s $t destroy --yes: $(cat "$TMP.destroy")" >&2
				rc=1
			fi
		done < <(sort -u "$KT_CLI_TREES")
	fi
	chmod -R u+rwx "$TMP" 2>/dev/null || true
	rm -rf "$TMP" "$KT_CLI_TREES" "$TMP.destroy"
	exit "$rc"
}
trap cleanup EXIT
if [ "$KT_CLI_ENGINE" = rados ]; then
	echo "rados:keytree/$KT_CLI_TREE" >>"$KT_CLI_TREES"
	export KEYTREE_STORE="rados:keytree/$KT_CLI_TREE"
else
	export KEYTREE_STORE="$TMP/store"
fi
OUT="$TMP/out"
ERR="$TMP/err"

# engine_is ENGINE REASON: true on ENGINE; on the other engine false,
# after a line saying which part of the case is left out and why.
engine_is() {
	[ "$KT_CLI_ENGINE" = "$1" ] && return 0
	echo "skip - $2 (only on $1; this run: $KT_CLI_ENGINE)"
	return 1
}

# engine_only ENGINE REASON: the case applies to ENGINE only; on the
# other it is reported skipped (status 77) with REASON.
engine_only() {
	[ "$KT_CLI_ENGINE" = "$1" ] && return 0
	echo "skip: $2 (only on $1; this run: $KT_CLI_ENGINE)"
	exit 77
}

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
