#!/usr/bin/env bash
# nodes.sh - what follows from inode numbers being persistent node ids
# (the low-level keytreefs): inode numbers stable across rename and
# remount, and the same in readdir and stat; seekdir to early telldir
# positions of a directory of 2500 entries (1000 on RADOS: still several
# replies of the mount), and EINVAL for the position of a removed entry;
# fstat of a file unlinked while open after its directory is removed too;
# `ls -l` of those entries costing no LOOKUP or GETATTR per entry
# (readdirplus); an unlinked open file reopened through /proc.  (That the
# daemon keeps nothing per inode is measured by bench/run, which lists
# 10^6 entries: docs/FUSE.md.)
source "$(dirname "$0")/lib.sh"
ktfs_size KTFS_NODES_BIG 2500 1000
big=$KTFS_NODES_BIG

ktfs_mount -o create
cd "$MNT"

mkdir -p a/b c
echo x >a/b/f
printf 'own' >"a/$VALUE"
ino_f=$(stat -c %i a/b/f)
ino_b=$(stat -c %i a/b)
ino_v=$(stat -c %i "a/$VALUE")
expect_eq "the root's inode number" "$(stat -c %i .)" 1
expect_eq "a value file's inode number has bit 63" \
	"$((ino_v - (1 << 63)))" "$(stat -c %i a)"
expect_eq "readdir's d_ino is stat's" \
	"$(ls -i a/b | awk '{ print $1 }')" "$ino_f"
mv a/b c/moved
expect_eq "inode kept across a directory's rename" \
	"$(stat -c %i c/moved)" "$ino_b"
expect_eq "inode of a file in a renamed directory" \
	"$(stat -c %i c/moved/f)" "$ino_f"
mv c/moved/f c/f2
expect_eq "inode kept across a file's rename" "$(stat -c %i c/f2)" "$ino_f"
cd /
ktfs_umount
ktfs_mount
cd "$MNT"
expect_eq "inode kept across remount" "$(stat -c %i c/f2)" "$ino_f"
expect_eq "directory inode kept across remount" \
	"$(stat -c %i c/moved)" "$ino_b"
expect_eq "value file inode kept across remount" \
	"$(stat -c %i "a/$VALUE")" "$ino_v"
ok "inode numbers: persistent ids, stable across rename and remount"

mkdir big
(cd big && seq -f 'entry-%05g' "$big" | xargs touch)
n=$("$KTFS_PROBE" seekdir big "$big") || fail "seekdir"
expect_eq "seekdir" "$n" $((big + 2))
expect_eq "one entry removed by the probe" "$(ls big | wc -l)" $((big - 1))
ok "seekdir to early telldir positions of $big entries; removed: EINVAL"

"$KTFS_PROBE" orphan-rmdir "$MNT"
[ ! -e sub ] || fail "sub still there"
ok "fstat of an open unlinked file after rmdir of its directory"

printf 'abc' >reo
exec 5<>reo
rm reo
expect_eq "an unlinked file reopened through /proc" \
	"$(cat /proc/self/fd/5)" abc
echo more >/proc/self/fd/5
expect_eq "written through the reopened descriptor" "$(cat <&5)" more
expect_eq "link count through the descriptor" \
	"$(stat -L -c %h /proc/self/fd/5)" 0
exec 5>&-
ok "an open unlinked file reopened through /proc/self/fd"

cd /
ktfs_umount
: >"$LOG"
ktfs_mount -d -o entry_timeout=30,attr_timeout=30
ls -l "$MNT/big" >/dev/null
lookups=$(grep -c 'opcode: LOOKUP' "$LOG" || true)
getattrs=$(grep -c 'opcode: GETATTR' "$LOG" || true)
plus=$(grep -c 'opcode: READDIRPLUS' "$LOG" || true)
[ "$plus" -gt 0 ] || fail "no READDIRPLUS"
# More than one reply with entries, and the empty one at the end: the
# listing resumed from an offset at least once.
[ "$plus" -gt 2 ] || fail "ls -l of $((big - 1)) entries took $plus replies"
[ "$lookups" -lt 10 ] ||
	fail "ls -l of $((big - 1)) entries cost $lookups LOOKUPs"
[ "$getattrs" -lt 10 ] ||
	fail "ls -l of $((big - 1)) entries cost $getattrs GETATTRs"
ok "ls -l of $((big - 1)) entries: $plus READDIRPLUS, $lookups LOOKUP, $getattrs GETATTR"
ktfs_umount

