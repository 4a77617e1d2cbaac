#!/usr/bin/env bash
# racers.sh - shell loops race on the same names through the mount, with
# no lock in keytreefs to keep them apart: mkdir, create and symlink on one
# name (each an exclusive create in one library step), rename against
# unlink, and RENAME_EXCHANGE of a file and a directory against renames
# of the same names.  Afterwards no name is an item+dir (a file and a
# directory that merged), every loop's file content is whole, and the
# store checks clean (the CLI's `keytree check` when built, else the
# store dump reads without error) after unmounting.  Each loop runs
# KTFS_RACE_N rounds: 300 on LevelDB, 150 on RADOS, where every operation
# is a commit of several round trips (the loops race there for some 40 s).
source "$(dirname "$0")/lib.sh"

ktfs_mount -o create
R="$MNT/r"
mkdir "$R" "$R/x" "$R/ex"
rmdir "$R/x"
ktfs_size KTFS_RACE_N 300 150
N=$KTFS_RACE_N
pids=()

# mkdir vs create vs symlink on one name; each removes what it made.
(set +e; for i in $(seq $N); do mkdir "$R/x" 2>/dev/null && rmdir "$R/x" 2>/dev/null; done; true) &
pids+=($!)
(set +e; for i in $(seq $N); do (set -C; : >"$R/x") 2>/dev/null && rm -f "$R/x" 2>/dev/null; done; true) &
pids+=($!)
(set +e; for i in $(seq $N); do ln -s nodir/t "$R/x" 2>/dev/null && rm -f "$R/x" 2>/dev/null; done; true) &
pids+=($!)
# rename vs unlink.
(set +e; for i in $(seq $N); do echo "a$i" >"$R/a" 2>/dev/null; mv "$R/a" "$R/b" 2>/dev/null; done; true) &
pids+=($!)
(set +e; for i in $(seq $N); do rm -f "$R/b" "$R/a" 2>/dev/null; mv "$R/b" "$R/c" 2>/dev/null; done; true) &
pids+=($!)
# rename exchange of a file and a directory, against moves of both.
echo file >"$R/ef"
(set +e; for i in $(seq $N); do "$KTFS_PROBE" rename2 "$R/ef" "$R/ex" exchange >/dev/null 2>&1; done; true) &
pids+=($!)
(set +e; for i in $(seq $N); do mv "$R/ex" "$R/ey" 2>/dev/null; mv "$R/ey" "$R/ex" 2>/dev/null; done; true) &
pids+=($!)
# Only the loops: the mount runs in the background too.
for p in "${pids[@]}"; do wait "$p" || true; done
ok "racing loops finished"

# No file and directory merged into an item+dir: no value file anywhere.
vn=$(printf '\302\246value')
found=$(find "$MNT" -name "$vn" | wc -l)
expect_eq "item+dirs made by racing creates" "$found" 0
# What the exchange loops moved is still one file and one directory.
nf=0 nd=0
for p in "$R/ef" "$R/ex" "$R/ey"; do
	[ -f "$p" ] && nf=$((nf + 1))
	[ -d "$p" ] && nd=$((nd + 1))
	true
done
expect_eq "files among the exchanged names" "$nf" 1
expect_eq "directories among the exchanged names" "$nd" 1
for p in "$R/ef" "$R/ex" "$R/ey"; do
	[ -f "$p" ] && expect_eq "exchanged file content" "$(cat "$p")" file
	true
done
for p in "$R/b" "$R/c"; do
	[ -f "$p" ] && case "$(cat "$p")" in a[0-9]*) ;; *) fail "torn $p" ;; esac
	true
done
ok "one file and one directory, whole contents"
ktfs_umount

if [ -n "${KTFS_CLI:-}" ]; then
	"$KTFS_CLI" -s "$STORE" check >"$KTFS_TMP/check" 2>&1 ||
		fail "keytree check: $(cat "$KTFS_TMP/check")"
	ok "keytree check is clean"
else
	"$KTFS_PROBE" dump-store "$STORE" >/dev/null || fail "dump-store"
fi
