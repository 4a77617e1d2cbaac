#!/usr/bin/env bash
# hardlinks.sh - hard links on the mount (kt_link): ln gives a file a
# second name with the same inode number and link count 2 on both; a
# write, chmod or touch through one name shows through the other at once
# (the kernel's caches included, also with long cache timeouts); rm of
# one name leaves the other with link count 1; link of a directory or of
# an item+dir's value file is EPERM, onto an existing name EEXIST (past
# KT_LINK_MAX names EMLINK: linkmax.sh); symbolic links and FIFOs can be
# linked; rename of one name onto another of the same file changes
# nothing; an open file keeps working while its names are unlinked or
# replaced one by one; listings of a directory holding several names of
# one file neither skip nor repeat entries; everything survives a remount
# and `keytree check` is clean.  Then the programs the issue names: tar
# of a tree with hard links extracts on the mount and re-archives with the
# same link groups, rsync -aH round-trips, and git clone of a repository
# on the mount hard-links its objects, with git fsck clean.
source "$(dirname "$0")/lib.sh"
: "${KTFS_CLI:?KTFS_CLI must name the keytree binary}"
# The directory of linked pairs holds more entries than one reply of the
# mount (128 KiB: some 710 of LevelDB's names, 340 of RADOS's): 1100
# pairs; on RADOS, where each link and each unlink of a name is a commit
# over several objects, 200 pairs with 200 more bytes in each name.
ktfs_size KTFS_HARDLINK_PAIRS 1100 200
ktfs_size KTFS_HARDLINK_PAD 0 200

# link_groups DIR: one line per non-directory inode below DIR, "NLINK
# PATH..." with its paths sorted, the lines sorted: equal for two trees
# exactly when the same names are linked together.
link_groups() {
	(cd "$1" && find . ! -type d -printf '%i %n %p\n') | sort -k3 |
		awk '{ g[$1] = g[$1] " " $3; n[$1] = $2 }
		     END { for (i in g) print n[i] g[i] }' | sort
}

# basics DIR: the single-file checks, in DIR on the mount.
basics() {
	local d=$1 ino
	mkdir "$d"
	printf 'one\n' >"$d/a"
	stat "$d/a" >/dev/null # the kernel caches a's attributes first
	ln "$d/a" "$d/b"
	ino=$(stat -c %i "$d/a")
	expect_eq "inode of the second name" "$(stat -c %i "$d/b")" "$ino"
	expect_eq "link counts after ln" \
		"$(stat -c %h "$d/a") $(stat -c %h "$d/b")" "2 2"
	expect_eq "ls -l link counts" \
		"$(ls -ln "$d" | awk 'NR > 1 { printf "%s %s ", $2, $9 }')" \
		"2 a 2 b "
	printf 'two\n' >>"$d/a"
	expect_eq "cat b after a write through a" "$(cat "$d/b")" $'one\ntwo'
	expect_eq "size through b" "$(stat -c %s "$d/b")" 8
	expect_eq "mtime of both" "$(stat -c %Y "$d/b")" "$(stat -c %Y "$d/a")"
	printf 'THREE\n' >"$d/b" # O_TRUNC through the other name
	expect_eq "cat a after a truncating write through b" \
		"$(cat "$d/a")" THREE
	chmod 600 "$d/a"
	expect_eq "chmod through a, mode through b" "$(stat -c %a "$d/b")" 600
	touch -d '2001-02-03 04:05:06' "$d/b"
	expect_eq "touch through b, mtime through a" \
		"$(stat -c %Y "$d/a")" 981173106
	setfattr -n user.color -v blue "$d/a"
	expect_eq "xattr set through a, read through b" \
		"$(getfattr --only-values -n user.color "$d/b")" blue
	# rename(2) of one name onto another of the same file: nothing
	# happens (mv itself refuses, so ask the kernel directly).
	python3 -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' \
		"$d/a" "$d/b"
	expect_eq "both names after rename onto the other" \
		"$(ls "$d" | tr '\n' ' ')" "a b "
	expect_eq "link count after that rename" "$(stat -c %h "$d/a")" 2
	ln "$d/b" "$d/c"
	expect_eq "a third name: link count through a" "$(stat -c %h "$d/a")" 3
	rm "$d/a"
	expect_eq "b after rm a: link count" "$(stat -c %h "$d/b")" 2
	rm "$d/c"
	expect_eq "b after rm c: link count" "$(stat -c %h "$d/b")" 1
	expect_eq "b after rm a and c: content" "$(cat "$d/b")" THREE
	expect_eq "b keeps its inode" "$(stat -c %i "$d/b")" "$ino"
	[ ! -e "$d/a" ] || fail "a still there after rm"
}

ktfs_mount -o create
cd "$MNT"

basics one
ok "ln: one inode, link count 2; write, truncate, chmod, touch, xattr through either name; rename onto the other is a no-op; rm leaves the rest"

# Errors: a directory and a value file cannot be linked (ln refuses a
# directory itself, so link(2) comes from the probe); a name in use.
mkdir vd
printf v >"vd/$VALUE"
expect_eq "link of a directory" "$("$KTFS_PROBE" link vd vd-link)" EPERM
expect_eq "link of an item+dir's value file" \
	"$("$KTFS_PROBE" link "vd/$VALUE" value-link)" EPERM
[ ! -e vd-link ] && [ ! -e value-link ] || fail "a failed link left a name"
printf x >taken
printf y >src
expect_eq "link onto an existing name" "$("$KTFS_PROBE" link src taken)" EEXIST
expect_eq "the existing name kept its content" "$(cat taken)" x
expect_eq "link into a missing directory" \
	"$("$KTFS_PROBE" link src nodir/x)" ENOENT
ok "link of a directory or value file EPERM, onto a name EEXIST"

# Symbolic links are linked themselves (not followed), FIFOs too.
ln -s some/target sl
ln -P sl sl2
expect_eq "linked symlink: target" "$(readlink sl2)" some/target
expect_eq "linked symlink: type, links, inode" \
	"$(stat -c '%F %h %i' sl2)" "$(stat -c '%F %h %i' sl)"
expect_eq "linked symlink: link count" "$(stat -c %h sl)" 2
mkfifo fifo
ln fifo fifo2
expect_eq "linked fifo" "$(stat -c '%F %h' fifo2)" "fifo 2"
expect_eq "linked fifo: inode" "$(stat -c %i fifo2)" "$(stat -c %i fifo)"
rm sl fifo
expect_eq "symlink and fifo after rm of the first name" \
	"$(stat -c '%h' sl2 fifo2 | tr '\n' ' ')" "1 1 "
ok "symbolic links and FIFOs are linked as themselves"

# A file open while its names are unlinked or replaced one by one.
"$KTFS_PROBE" hardlink-open "$MNT"
expect_eq "names left by the open-file checks" "$(ls | grep -c '^ho-' || true)" 0
ok "an open file keeps working while its names go one by one"

# A shell process holds a descriptor across the unlink of one name.
printf 'start\n' >held
ln held held2
exec 7>>held
rm held
printf 'by fd\n' >&7
expect_eq "the other name sees the descriptor's write" \
	"$(cat held2)" $'start\nby fd'
printf 'by name\n' >>held2
printf 'fd again\n' >&7
exec 7>&-
expect_eq "after the close" "$(cat held2)" $'start\nby fd\nby name\nfd again'
expect_eq "link count after the close" "$(stat -c %h held2)" 1
ok "a process writes through a descriptor whose name was unlinked"

# Several names of one file in one directory: listings stream in pages
# and resume by offset; none may be skipped or repeated, and seekdir
# back must work (tests/fuse/probe.c readdir, seekdir).
mkdir pairs
pad=$(printf "%${KTFS_HARDLINK_PAD}s" "" | tr ' ' x)
for i in $(seq "$KTFS_HARDLINK_PAIRS"); do
	: >"pairs/file-with-a-longish-name-$pad$i"
done
python3 -c 'import os
for f in os.listdir("pairs"): os.link("pairs/" + f, "pairs/" + f + ".l")'
np=$((2 * KTFS_HARDLINK_PAIRS))
# (The probe's status counts: a substitution inside expect_eq's arguments
# would hide it.)
n=$("$KTFS_PROBE" readdir pairs) || fail "readdir of the linked pairs"
expect_eq "entries of a directory of linked pairs" "$n" $((np + 2))
expect_eq "distinct names listed" "$(ls pairs | sort -u | wc -l)" "$np"
expect_eq "link counts listed" \
	"$(ls -ln pairs | awk 'NR > 1 { print $2 }' | sort -u)" 2
n=$("$KTFS_PROBE" seekdir pairs "$np") || fail "seekdir in the linked pairs"
expect_eq "seekdir in that directory" "$n" $((np + 2))
rm -r pairs
ok "readdir of $KTFS_HARDLINK_PAIRS linked pairs in one directory: no entry lost or repeated"

# Long cache timeouts: whatever the kernel keeps must still be right.
cd /
ktfs_umount
ktfs_mount -o attr_timeout=60,entry_timeout=60,negative_timeout=60
cd "$MNT"
basics cached
ok "the same with 60 s kernel cache timeouts"

# Persistence: the names, their inode numbers and link counts survive a
# remount, and the store passes keytree check.
mkdir keep
printf 'kept\n' >keep/x
ln keep/x keep/y
ln keep/x z
ino=$(stat -c %i keep/x)
cd /
ktfs_umount
ktfs_mount
expect_eq "after remount: content" "$(cat "$MNT/keep/y")" kept
expect_eq "after remount: inode and links" \
	"$(stat -c '%i %h' "$MNT/keep/x" "$MNT/keep/y" "$MNT/z" | tr '\n' ' ')" \
	"$ino 3 $ino 3 $ino 3 "
ktfs_umount
"$KTFS_CLI" -s "$STORE" check >&2 || fail "keytree check after the tests"
ok "hard links survive a remount; keytree check is clean"

# The programs of the issue.
ktfs_mount
src=$KTFS_TMP/src
mkdir -p "$src/d1" "$src/d2/deep"
printf 'shared\n' >"$src/d1/f"
ln "$src/d1/f" "$src/d1/h"
ln "$src/d1/f" "$src/d2/deep/g"
seq 1 20000 >"$src/d2/big"
ln "$src/d2/big" "$src/big-too"
printf 'alone\n' >"$src/d1/solo"
chmod 640 "$src/d2/big"
tar -C "$src" -cf "$KTFS_TMP/src.tar" .
mkdir "$MNT/tarx"
tar -C "$MNT/tarx" -xpf "$KTFS_TMP/src.tar" 2>"$KTFS_TMP/tar.err" ||
	fail "tar x onto the mount: $(cat "$KTFS_TMP/tar.err")"
[ ! -s "$KTFS_TMP/tar.err" ] || fail "tar x said: $(cat "$KTFS_TMP/tar.err")"
expect_eq "tar x: link groups" "$(link_groups "$MNT/tarx")" \
	"$(link_groups "$src")"
diff -r "$src" "$MNT/tarx" || fail "tar x: content differs"
tar -C "$MNT/tarx" -cf "$KTFS_TMP/back.tar" .
expect_eq "hard-link members of the archive from the mount" \
	"$(tar tvf "$KTFS_TMP/back.tar" | grep -c '^h')" \
	"$(tar tvf "$KTFS_TMP/src.tar" | grep -c '^h')"
mkdir "$KTFS_TMP/back"
tar -C "$KTFS_TMP/back" -xpf "$KTFS_TMP/back.tar"
expect_eq "re-archived tree: link groups" "$(link_groups "$KTFS_TMP/back")" \
	"$(link_groups "$src")"
diff -r "$src" "$KTFS_TMP/back" || fail "re-archived tree differs"
ok "tar of a tree with hard links extracts on the mount and re-archives with the same links"

rsync -aH "$src/" "$MNT/rs/" || fail "rsync -aH onto the mount: exit $?"
expect_eq "rsync -aH onto the mount: link groups" "$(link_groups "$MNT/rs")" \
	"$(link_groups "$src")"
diff -r "$src" "$MNT/rs" || fail "rsync -aH onto the mount: content"
expect_eq "a second rsync -aH has nothing to do" \
	"$(rsync -aH --itemize-changes "$src/" "$MNT/rs/")" ""
rsync -aH "$MNT/rs/" "$KTFS_TMP/rsback/" || fail "rsync -aH back: exit $?"
expect_eq "rsync -aH back: link groups" "$(link_groups "$KTFS_TMP/rsback")" \
	"$(link_groups "$src")"
diff -r "$src" "$KTFS_TMP/rsback" || fail "rsync -aH back: content"
ok "rsync -aH round-trips hard links through the mount"

# git clone of a local repository hard-links its objects, which needs
# both on one filesystem: the source repository is on the mount too.
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org \
	GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.org \
	GIT_CONFIG_NOSYSTEM=1 HOME=$KTFS_TMP
git init -q "$MNT/gsrc"
cp -a "$src/." "$MNT/gsrc/"
git -C "$MNT/gsrc" add -A
git -C "$MNT/gsrc" commit -qm one
echo change >>"$MNT/gsrc/d1/solo"
git -C "$MNT/gsrc" commit -qam two
git clone -q "$MNT/gsrc" "$MNT/gdst"
nobj=$(find "$MNT/gsrc/.git/objects" -type f -path '*/objects/??/*' | wc -l)
[ "$nobj" -gt 5 ] || fail "only $nobj loose objects in the source"
expect_eq "cloned objects with link count 2" \
	"$(find "$MNT/gdst/.git/objects" -type f -path '*/objects/??/*' -links 2 | wc -l)" \
	"$nobj"
o=$(find "$MNT/gsrc/.git/objects" -type f -path '*/objects/??/*' | head -1)
expect_eq "a cloned object is the source's inode" \
	"$(stat -c %i "$MNT/gdst/.git/objects/${o#"$MNT/gsrc/.git/objects/"}")" \
	"$(stat -c %i "$o")"
git -C "$MNT/gdst" fsck --full --strict 2>&1 || fail "git fsck of the clone"
expect_eq "git status of the clone" "$(git -C "$MNT/gdst" status --porcelain)" ""
echo more >>"$MNT/gdst/d1/solo"
git -C "$MNT/gdst" commit -qam three
git -C "$MNT/gdst" gc -q
git -C "$MNT/gdst" fsck --full --strict 2>&1 || fail "git fsck after gc"
git -C "$MNT/gsrc" fsck --full --strict 2>&1 || fail "git fsck of the source after the clone's gc"
expect_eq "git log of the source" \
	"$(git -C "$MNT/gsrc" log --format=%s | tr '\n' ' ')" "two one "
ok "git clone on the mount hard-links $nobj objects; fsck clean, also after gc"

cd /
ktfs_umount
"$KTFS_CLI" -s "$STORE" check >&2 || fail "keytree check after tar, rsync and git"
ok "keytree check clean after tar, rsync and git"
