#!/usr/bin/env bash
# linkmax.sh - one file with KT_LINK_MAX (1024) names on the mount: the
# link count reaches the limit, the next link(2) is EMLINK, a write
# through one name is read through another, and removing 1023 names
# leaves one with link count 1 and the content.
#
# Apart from hardlinks.sh because of its cost on RADOS: every change to
# a node with several paths rewrites the node row of each path
# (keytree.h, KT_LINK_MAX), and on RADOS each path's row is in an object
# of its own, so the k-th link or unlink is a commit over k objects: some
# half a million object writes for the links and as many for the
# removals.  Measured on RADOS (3 memstore OSDs on 2 shared cores): 678 s
# at load average 18 (326 s for the links, 345 s for the removals); at
# load 25 the links alone took 415 s.  On LevelDB the script takes 5 to
# 10 s.  The limit is a constant, so no smaller size tests it: CTest runs
# this script on RADOS only when asked (fuse/CMakeLists.txt,
# KT_FUSE_RADOS_TESTS).
source "$(dirname "$0")/lib.sh"

ktfs_mount -o create
cd "$MNT"

# (One process makes the links: a process per ln would take longer.)
printf m >m
python3 -c 'import os
for i in range(2, 1025): os.link("m", "m.%d" % i)'
expect_eq "link count at the limit" "$(stat -c %h m.1024)" 1024
expect_eq "one link past the limit" "$("$KTFS_PROBE" link m m.over)" EMLINK
[ ! -e m.over ] || fail "the refused link left a name"
printf M >>m.777
expect_eq "a write through one of 1024 names, read through another" \
	"$(cat m.3)" mM
rm m.*
expect_eq "after removing 1023 names" "$(stat -c '%h %s' m)" "1 2"
ok "1024 names of one file, the next EMLINK"

cd /
ktfs_umount
if [ -n "${KTFS_CLI:-}" ]; then
	"$KTFS_CLI" -s "$STORE" check >"$KTFS_TMP/check" 2>&1 ||
		fail "keytree check: $(cat "$KTFS_TMP/check")"
	ok "keytree check is clean"
fi
