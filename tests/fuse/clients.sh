#!/usr/bin/env bash
# clients.sh - real programs on a mounted store: tar x of a real tree
# (/usr/include/linux, asm-generic and netinet: ~850 entries, a subset of
# /usr/include to keep the suite fast) then diff -r against the same
# tarball extracted to local disk; git init/commit locally, git clone into
# the mount, git fsck and a clean git status; rsync -a twice, the second
# run transferring nothing.  On RADOS, where every file costs a few
# commits of several round trips, the tree is a smaller part of the same
# headers (KTFS_CLIENTS_TREE: ~170 entries, directories three deep).
source "$(dirname "$0")/lib.sh"
ktfs_size KTFS_CLIENTS_TREE "linux asm-generic netinet" \
	"linux/fs.h linux/netfilter linux/usb asm-generic netinet"

ktfs_mount -o create
local_dir=$KTFS_TMP/local
mkdir -p "$local_dir"

# tar: a real tree, with a relative link added so links are covered too.
tree=$KTFS_TMP/tree
mkdir -p "$tree"
for d in $KTFS_CLIENTS_TREE; do
	mkdir -p "$tree/$(dirname "$d")"
	cp -a "/usr/include/$d" "$tree/$d"
done
ln -s ../linux/fs.h "$tree/netinet/fs-link.h"
tar -C "$tree" -cf "$KTFS_TMP/inc.tar" .
mkdir "$local_dir/tar" "$MNT/tar"
tar -C "$local_dir/tar" -xpf "$KTFS_TMP/inc.tar"
tar -C "$MNT/tar" -xpf "$KTFS_TMP/inc.tar"
diff -r --no-dereference "$local_dir/tar" "$MNT/tar" ||
	fail "tar x into the mount differs from a local extraction"
# Types, modes, nanosecond mtimes and link targets too.
(cd "$MNT/tar" && find . -printf '%y %m %T@ %p %l\n' | sort) >"$KTFS_TMP/m.list"
(cd "$local_dir/tar" && find . -printf '%y %m %T@ %p %l\n' | sort) >"$KTFS_TMP/l.list"
diff "$KTFS_TMP/l.list" "$KTFS_TMP/m.list" || fail "tar x: metadata differs"
ok "tar x of $(tar -tf "$KTFS_TMP/inc.tar" | wc -l) entries equals a local extraction"

# git: a repository made locally, cloned into the mount.
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org \
	GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.org \
	GIT_CONFIG_NOSYSTEM=1 HOME=$KTFS_TMP
repo=$KTFS_TMP/repo
git init -q "$repo"
cp -a "$tree/netinet" "$repo/"
ln -s netinet/in.h "$repo/in-link.h"
printf '#!/bin/sh\necho hi\n' >"$repo/run.sh"
chmod +x "$repo/run.sh"
git -C "$repo" add -A
git -C "$repo" commit -qm one
echo change >>"$repo/run.sh"
git -C "$repo" commit -qam two
git clone -q "$repo" "$MNT/clone"
git -C "$MNT/clone" fsck --full --strict 2>&1 || fail "git fsck in the mount"
expect_eq "git status after clone" "$(git -C "$MNT/clone" status --porcelain)" ""
echo more >>"$MNT/clone/run.sh"
git -C "$MNT/clone" commit -qam three
git -C "$MNT/clone" gc -q
git -C "$MNT/clone" fsck --full --strict 2>&1 || fail "git fsck after commit and gc"
expect_eq "git status after commit" "$(git -C "$MNT/clone" status --porcelain)" ""
expect_eq "git log" "$(git -C "$MNT/clone" log --format=%s | tr '\n' ' ')" \
	"three two one "
ok "git clone into the mount, fsck, status clean, commit, gc"

# rsync -a twice: the second run has nothing to do.
rsync -a "$tree/" "$MNT/rsync/"
out=$(rsync -a --itemize-changes "$tree/" "$MNT/rsync/")
expect_eq "second rsync -a itemized changes" "$out" ""
diff -r --no-dereference "$tree" "$MNT/rsync" || fail "rsync copy differs"
ok "rsync -a twice, the second transferring nothing"

ktfs_umount
ok "unmounted cleanly"
