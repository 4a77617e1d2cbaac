#!/usr/bin/env bash
# orphans.sh - files unlinked or replaced while open, and what close and
# fsync report: a file kept open across its unlink (read, write, ftruncate,
# fchmod, fstat with st_nlink 0), its space gone from the store after the
# last close (kt_stats of the store after unmounting), rm -r of a directory
# holding an open unlinked file, mv over an open file (the old content stays
# readable through the descriptor), an item+dir's value file unlinked while
# open, O_APPEND offsets and concurrent appenders, a failed write reported
# again at close, fsync and directory fsync; O_TMPFILE files, named by
# linkat or dropped at close.
source "$(dirname "$0")/lib.sh"

ktfs_mount -o create
cd "$MNT"

"$KTFS_PROBE" unlinked f
[ ! -e f ] || fail "unlinked file still there"
ok "read, write, ftruncate, fchmod, fstat (nlink 0) after unlink"

# 2 MiB kept open across its unlink, then closed: the space must go.
head -c $((2 * 1024 * 1024)) /dev/urandom >"$KTFS_TMP/big"
cp "$KTFS_TMP/big" big
exec 9<big
rm big
expect_eq "unlinked file readable to the end" \
	"$(cmp - "$KTFS_TMP/big" <&9 && echo same)" same
exec 9<&-
ok "a 2 MiB file read through its descriptor after unlink"

mkdir -p held/sub
exec 8>held/sub/open
echo data >&8
rm -r held
[ ! -e held ] || fail "rm -r of a directory with an open file"
echo more >&8 || fail "write after rm -r"
exec 8>&-
expect_eq "nothing hidden left" "$(ls -A | grep -c fuse_hidden || true)" 0
ok "rm -r of a directory holding an open unlinked file"

# An unlink while another file is open looks its file up in the open
# table first; with nothing open it removes the file in one step.
printf a >keep
printf b >gone1
printf c >gone2
exec 5<keep
rm gone1
[ ! -e gone1 ] || fail "unlink with another file open left the file"
exec 5<&-
rm gone2
[ ! -e gone2 ] || fail "unlink with nothing open left the file"
expect_eq "the file that was open" "$(cat keep)" a
rm keep
expect_eq "the directory after the unlinks" "$(ls -A | tr '\n' ' ')" ""
ok "unlink with another file open, and with nothing open"

printf 'old content' >dst
printf 'new' >src
ino=$(stat -c %i src)
exec 7<dst
mv src dst
expect_eq "mv over an open file: the new content by name" "$(cat dst)" new
expect_eq "mv kept the source's inode" "$(stat -c %i dst)" "$ino"
expect_eq "mv over an open file: the old content by descriptor" \
	"$(cat <&7)" "old content"
expect_eq "the replaced file's link count" \
	"$(stat -L -c %h /proc/self/fd/7)" 0
exec 7<&-
expect_eq "after the close" "$(cat dst)" new
expect_eq "the directory after mv" "$(ls -A | tr '\n' ' ')" "dst "
ok "mv over an open file keeps the old one readable through its descriptor"

mkdir both
printf 'own' >"both/$VALUE"
exec 6<"both/$VALUE"
rm "both/$VALUE"
expect_eq "value file read after unlink" "$(cat <&6)" own
expect_eq "the directory stays" "$(stat -c %F both)" directory
[ ! -e "both/$VALUE" ] || fail "value file still there"
exec 6<&-
ok "an item+dir's value file unlinked while open"

"$KTFS_PROBE" append app
pids=
for w in a b; do
	(for i in $(seq 200); do echo "$w-line-$i" >>lines; done) &
	pids="$pids $!"
done
wait $pids # not lib.sh's watchdog
expect_eq "concurrent appenders: lines" "$(wc -l <lines)" 400
expect_eq "concurrent appenders: bytes" "$(stat -c %s lines)" \
	"$(($(seq 200 | sed 's/^/a-line-/' | wc -c) * 2))"
ok "O_APPEND: at the store's end, offsets the kernel expects"

mkdir tmpd
"$KTFS_PROBE" tmpfile tmpd
expect_eq "the file linkat named" "$(stat -c '%s %h %a' tmpd/named)" "100000 1 644"
ok "O_TMPFILE: an unnamed file, readable and writable, named by linkat"

"$KTFS_PROBE" write-error toobig
ok "a failed write is reported again by close (flush)"
"$KTFS_PROBE" fsync synced
ok "fsync, fdatasync and directory fsync"

rm -r both app lines toobig synced dst tmpd
cd /
ktfs_umount
# After the last close and the unmount, no orphan's value or rows are
# left in the store.
no_orphan_kept() {
	local vbytes rbytes
	read -r vbytes rbytes < <("$KTFS_PROBE" stats "$STORE")
	expect_eq "value bytes left in the store" "$vbytes" 0
	[ "$rbytes" -lt 100000 ] ||
		fail "the store still holds $rbytes row bytes: an orphan was kept"
}
no_orphan_kept
ok "the space of files unlinked while open is gone after the last close"

# An open of a named file that an unlink overtakes, while another
# descriptor keeps the file: the open joins the orphan (it reads the
# data, as if it had come just before the unlink), and the descriptor
# already open still reaches the file by inode number (chmod through
# /proc: a SETATTR without a handle).  With KEYTREEFS_TEST_OPEN_PAUSE,
# an OPEN that finds the file $KTFS_TMP/pause between its look at the
# open table and the count of its handle waits there until the file is
# removed; the unlink comes while it waits.
head -c 300000 /dev/urandom >"$KTFS_TMP/racedsrc"
KEYTREEFS_TEST_OPEN_PAUSE="$KTFS_TMP/pause" ktfs_mount
cp "$KTFS_TMP/racedsrc" "$MNT/raced"
exec 7<"$MNT/raced"
: >"$KTFS_TMP/pause"
cat "$MNT/raced" >"$KTFS_TMP/raced.out" 2>"$KTFS_TMP/raced.err" &
catpid=$!
for i in $(seq 600); do
	[ ! -e "$KTFS_TMP/pause.held" ] || break
	sleep 0.05
done
[ -e "$KTFS_TMP/pause.held" ] || fail "the open of raced did not reach the pause"
rm "$MNT/raced"
rm "$KTFS_TMP/pause"
wait "$catpid" ||
	fail "an open overtaken by an unlink failed: $(cat "$KTFS_TMP/raced.err")"
cmp "$KTFS_TMP/raced.out" "$KTFS_TMP/racedsrc" ||
	fail "what the overtaken open read differs from what was written"
chmod 600 "/proc/$$/fd/7" ||
	fail "chmod of the open, unlinked file through /proc/$$/fd/7"
expect_eq "its mode after the chmod" "$(stat -L -c %a "/proc/$$/fd/7")" 600
exec 7<&-
ktfs_umount
no_orphan_kept
ok "an open overtaken by an unlink joins the orphan; the other descriptor keeps it by inode number"

# The same for an item+dir's value file, whose inode number would be in
# use again had the directory got a value anew: it has not, so the open
# joins the orphan too.
KEYTREEFS_TEST_OPEN_PAUSE="$KTFS_TMP/pause" ktfs_mount
mkdir "$MNT/vraced"
cp "$KTFS_TMP/racedsrc" "$MNT/vraced/$VALUE"
exec 7<"$MNT/vraced/$VALUE"
: >"$KTFS_TMP/pause"
cat "$MNT/vraced/$VALUE" >"$KTFS_TMP/raced.out" 2>"$KTFS_TMP/raced.err" &
catpid=$!
for i in $(seq 600); do
	[ ! -e "$KTFS_TMP/pause.held" ] || break
	sleep 0.05
done
[ -e "$KTFS_TMP/pause.held" ] ||
	fail "the open of the value file did not reach the pause"
rm "$MNT/vraced/$VALUE"
rm "$KTFS_TMP/pause"
wait "$catpid" ||
	fail "an open of a value file overtaken by an unlink failed: $(cat "$KTFS_TMP/raced.err")"
cmp "$KTFS_TMP/raced.out" "$KTFS_TMP/racedsrc" ||
	fail "what the overtaken open of the value file read differs"
chmod 600 "/proc/$$/fd/7" ||
	fail "chmod of the open, unlinked value file through /proc/$$/fd/7"
expect_eq "the value file's mode after the chmod" \
	"$(stat -L -c %a "/proc/$$/fd/7")" 600
exec 7<&-
rmdir "$MNT/vraced"
ktfs_umount
no_orphan_kept
ok "an open of a value file overtaken by an unlink joins the orphan"
