#!/usr/bin/env bash
# views.sh - the mount and the library agree.  Nodes made by the library
# beforehand (item+dir, links across directories, deep paths, UTF-8 names,
# attributes) show correctly through the mount; after unmounting, the
# library (and the CLI, when built) sees exactly what was written through
# the mount, modes, owners, nanosecond times and links included; after a
# remount everything is still there with the same inode numbers.  Also:
# a second mount of a held store goes through the holder; SIGTERM and SIGINT unmount
# cleanly; mount.fuse3 (what `mount -t fuse.keytreefs` runs) and an
# fstab line through mount -T; -o ro; --help and --version.
source "$(dirname "$0")/lib.sh"

"$KEYTREEFS" --help >"$KTFS_TMP/help"
grep -q 'value_name=NAME' "$KTFS_TMP/help" || fail "--help"
# The defaults --help shows are the ones docs/FUSE.md states and the loop
# uses (libfuse's own help said -1 for max_idle_threads).
grep -qE 'max_idle_threads=N +idle worker threads kept \(default: 10\)' \
	"$KTFS_TMP/help" || fail "--help: max_idle_threads default"
grep -qE 'max_threads=N +worker threads at most \(default: 10\)' \
	"$KTFS_TMP/help" || fail "--help: max_threads default"
grep -qE 'entry_timeout=T .*\(default: 1\)' "$KTFS_TMP/help" ||
	fail "--help: entry_timeout default"
! grep -q 'default: -1' "$KTFS_TMP/help" || fail "--help still says -1"
"$KEYTREEFS" --version | grep -q '^keytreefs ' || fail "--version"
ok "--help (with the real defaults) and --version"

# Mistakes a newcomer makes get one clear line each, status 1.
rc=0
"$KEYTREEFS" -o create "$STORE.x" "$KTFS_TMP/no-such-dir" 2>"$KTFS_TMP/err" || rc=$?
expect_eq "exit status, missing mountpoint" "$rc" 1
expect_eq "lines for a missing mountpoint" "$(wc -l <"$KTFS_TMP/err")" 1
grep -q "no-such-dir: No such file or directory (the mountpoint must be an existing directory)" \
	"$KTFS_TMP/err" || fail "missing mountpoint: $(cat "$KTFS_TMP/err")"
rc=0
"$KEYTREEFS" "$KTFS_TMP/no-such-store" "$MNT" 2>"$KTFS_TMP/err" || rc=$?
expect_eq "exit status, missing store" "$rc" 1
grep -q "no-such-store: no such store (-o create makes one)" "$KTFS_TMP/err" ||
	fail "missing store: $(cat "$KTFS_TMP/err")"
mkdir "$KTFS_TMP/empty"
rc=0
"$KEYTREEFS" "$KTFS_TMP/empty" "$MNT" 2>"$KTFS_TMP/err" || rc=$?
expect_eq "exit status, empty directory as store" "$rc" 1
grep -q "empty: no keytree store here (-o create makes one)" "$KTFS_TMP/err" ||
	fail "directory without a store: $(cat "$KTFS_TMP/err")"
! mountpoint -q "$MNT" || fail "mounted a missing store"
ok "a missing mountpoint or store: one clear line, with a hint"

"$KTFS_PROBE" populate "$STORE"
ktfs_mount
expect_eq "item+dir is a directory" "$(stat -c %F "$MNT/both")" directory
expect_eq "item+dir value file" "$(cat "$MNT/both/$VALUE")" "own value"
expect_eq "item+dir child" "$(cat "$MNT/both/child")" child
expect_eq "listing of an item+dir" "$(ls -A "$MNT/both" | tr '\n' ' ')" \
	"child $VALUE "
expect_eq "deep path" "$(cat "$MNT/a/b/c/d/e/f/g/h/deep")" deep
expect_eq "UTF-8 names" "$(cat "$MNT/café/日本")" utf8
expect_eq "relative link across directories" "$(cat "$MNT/links/rel")" deep
expect_eq "absolute link (store root)" "$(cat "$MNT/links/abs")" child
expect_eq "readlink of an absolute target" "$(readlink "$MNT/links/abs")" \
	"$MNT/both/child"
expect_eq "link to a directory" "$(ls "$MNT/links/todir/")" c
expect_eq "attribute as xattr" \
	"$(getfattr --absolute-names --only-values -n user.color "$MNT/both/child")" blue
ok "library-made nodes show through the mount"

# Write through the mount: files, modes, owners, times, links, an
# item+dir's value, and renames.
cd "$MNT"
mkdir -p w/sub
printf 'data' >w/file
chmod 600 w/file
chown 12:34 w/file
touch -d '2040-01-02 03:04:05.987654321' w/file
printf 'v' >"w/sub/$VALUE" # w/sub becomes an item and a directory
ln -s ../both/child w/rel
ln -s /w/file w/abs
mkdir w/moved-from
ino=$(stat -c %i w/moved-from)
mv w/moved-from w/moved
expect_eq "inode kept across rename" "$(stat -c %i w/moved)" "$ino"
expect_eq "time after 2038" "$(stat -c %y w/file)" \
	"2040-01-02 03:04:05.987654321 +0000"
cd /
"$KTFS_PROBE" dump-tree "$MNT" "$MNT" | sort >"$KTFS_TMP/mount.dump"
ktfs_umount

"$KTFS_PROBE" dump-store "$STORE" "$VALUE" | sort >"$KTFS_TMP/store.dump"
diff "$KTFS_TMP/mount.dump" "$KTFS_TMP/store.dump" ||
	fail "the library sees something else than the mount showed"
grep -q "^/w/sub/$VALUE f 0644 .* 1 " "$KTFS_TMP/store.dump" ||
	fail "value written through the value file"
grep -q '^/w/file f 0600 12 34 4 2209086245987654321 ' "$KTFS_TMP/store.dump" ||
	fail "mode, owner and time of /w/file in the store"
grep -q '^/w/abs l .* /w/file$' "$KTFS_TMP/store.dump" ||
	fail "absolute target stored as a store path"
ok "the library sees what was written through the mount"

if [ -n "${KTFS_CLI:-}" ]; then
	expect_eq "CLI cat" "$("$KTFS_CLI" -s "$STORE" cat /w/file)" data
	expect_eq "CLI readlink" "$("$KTFS_CLI" -s "$STORE" readlink /w/rel)" \
		../both/child
	expect_eq "CLI value of an item+dir" \
		"$("$KTFS_CLI" -s "$STORE" cat /w/sub)" v
	ok "the CLI sees what was written through the mount"
fi

ktfs_mount
"$KTFS_PROBE" dump-tree "$MNT" "$MNT" | sort >"$KTFS_TMP/remount.dump"
diff "$KTFS_TMP/mount.dump" "$KTFS_TMP/remount.dump" ||
	fail "the remount shows something else"
expect_eq "inode kept across remount" "$(stat -c %i "$MNT/w/moved")" "$ino"
ok "everything is still there after a remount"

# A second mount of the same store works: its kt_open goes through the
# holder, the first mount (the second does not see the first's later
# changes until cache invalidation exists, so only what was there).
mkdir "$KTFS_TMP/mnt2"
"$KEYTREEFS" -f "$STORE" "$KTFS_TMP/mnt2" 2>"$KTFS_TMP/second.log" &
second=$!
for i in $(seq 200); do
	mountpoint -q "$KTFS_TMP/mnt2" && break
	kill -0 "$second" 2>/dev/null || break
	sleep 0.05
done
mountpoint -q "$KTFS_TMP/mnt2" ||
	fail "a second mount of a held store failed: $(cat "$KTFS_TMP/second.log")"
expect_eq "a file through the second mount" "$(cat "$KTFS_TMP/mnt2/w/file")" \
	data
fusermount3 -u "$KTFS_TMP/mnt2" || fusermount3 -uz "$KTFS_TMP/mnt2"
wait "$second" || fail "the second keytreefs exited with status $?"
if [ "$KTFS_ENGINE" = leveldb ]; then
	ok "a second mount of a held store goes through the holder"
else
	ok "a second mount of the tree (another client of the cluster)"
fi
if [ -n "${KTFS_CLI:-}" ]; then
	expect_eq "keytree get on a mounted store" \
		"$("$KTFS_CLI" -s "$STORE" get /w/file)" data
	ok "the CLI works on a mounted store"
fi

for sig in TERM INT; do
	kill -"$sig" "$KTFS_PID"
	rc=0
	ktfs_wait_daemon || rc=$?
	expect_eq "exit status after SIG$sig" "$rc" 0
	! mountpoint -q "$MNT" || fail "still mounted after SIG$sig"
	ok "SIG$sig unmounts; the daemon exits with status 0"
	# A RADOS store has no holder: every process is a client of the
	# cluster, with no lock to give back.
	if ktfs_engine_is leveldb "the store's LOCK is free after SIG$sig"; then
		"$KTFS_PROBE" store-free "$STORE" ||
			fail "store not closed after SIG$sig"
		ok "SIG$sig closes the store"
	fi
	ktfs_mount
done
ktfs_umount

ktfs_mount -o ro
if (echo x >"$MNT/w/new") 2>/dev/null; then
	fail "-o ro accepted a write"
fi
expect_eq "-o ro reads" "$(cat "$MNT/w/file")" data
ktfs_umount
ok "-o ro"

# Mounted by mount.fuse3 and mount(8), the daemon detaches (and reopens
# the store after forking); umount returns before it has closed the store.
# On RADOS, where no lock shows a holder, the daemon is waited for by its
# command line, which holds the store's name (unique to this test).
wait_store_free() { # DUMP_FILE
	local i
	for i in $(seq 100); do
		if [ "$KTFS_ENGINE" = leveldb ]; then
			"$KTFS_PROBE" store-free "$STORE" &&
				"$KTFS_PROBE" dump-store "$STORE" "$VALUE" \
					>"$1" 2>/dev/null && return 0
		elif ! pgrep -f -- "$STORE" >/dev/null; then
			"$KTFS_PROBE" dump-store "$STORE" "$VALUE" >"$1" &&
				return 0
		fi
		sleep 0.1
	done
	fail "the store stayed busy after umount"
}

# `mount -t fuse.keytreefs STORE MNT` runs mount.fuse3, which finds
# keytreefs on PATH; mount(8) gives its helpers a PATH of its own, so the
# test calls mount.fuse3 itself, the way mount(8) does, with the built
# binary on PATH.
tmpbin=$KTFS_TMP/bin
mkdir "$tmpbin"
ln -s "$KEYTREEFS" "$tmpbin/keytreefs"
env PATH="$tmpbin:$PATH" /sbin/mount.fuse3 "$STORE" "$MNT" -t keytreefs \
	-o durable || fail "mount.fuse3 -t keytreefs"
expect_eq "mount.fuse3: type" "$(findmnt -n -o FSTYPE "$MNT")" fuse.keytreefs
expect_eq "mount.fuse3: source" "$(findmnt -n -o SOURCE "$MNT")" "$STORE"
expect_eq "mount.fuse3: content" "$(cat "$MNT/w/file")" data
echo fresh >"$MNT/w/fresh"
umount "$MNT"
wait_store_free "$KTFS_TMP/after.dump"
grep -q '^/w/fresh f ' "$KTFS_TMP/after.dump" ||
	fail "write through mount.fuse3 not in the store"
ok "mount.fuse3 STORE MNT -t keytreefs (what mount -t fuse.keytreefs runs), umount"

# An /etc/fstab line, in the form that names the program by its path
# (independent of PATH), mounted with mount(8) from a private fstab file.
printf '%s#%s %s fuse durable,noauto 0 0\n' "$KEYTREEFS" "$STORE" "$MNT" \
	>"$KTFS_TMP/fstab"
mount -T "$KTFS_TMP/fstab" "$MNT" || fail "mount -T FSTAB MNT"
expect_eq "fstab: type" "$(findmnt -n -o FSTYPE "$MNT")" fuse.keytreefs
expect_eq "fstab: content" "$(cat "$MNT/w/fresh")" fresh
rm "$MNT/w/fresh"
umount "$MNT"
wait_store_free "$KTFS_TMP/after.dump"
! grep -q '^/w/fresh ' "$KTFS_TMP/after.dump" ||
	fail "removal through the fstab mount not in the store"
ok "an fstab line (PROGRAM#STORE MNT fuse ...) mounted with mount -T"

# A store with typed names (keytree init --typed): the mount lists a
# directory in the store's order, numbers by value first, over many
# readdir replies (each resumes after a name), and ls sorts as ever.
if [ -n "$KTFS_CLI" ]; then
	if [ "$KTFS_ENGINE" = rados ]; then
		ktfs_tree "f-$$-typed-$RANDOM"
	else
		STORE=$KTFS_TMP/typed
	fi
	"$KTFS_CLI" -s "$STORE" init --typed || fail "keytree init --typed"
	ktfs_mount
	mkdir "$MNT/o"
	for i in $(seq 300 -1 0) abc 007 123e4567-e89b-12d3-a456-426614174000; do
		: >"$MNT/o/$i"
	done
	{
		seq 0 300
		printf '%s\n' 123e4567-e89b-12d3-a456-426614174000 007 abc
	} >"$KTFS_TMP/typed.want"
	ls -f "$MNT/o" | grep -v '^\.\.\?$' >"$KTFS_TMP/typed.got"
	diff "$KTFS_TMP/typed.want" "$KTFS_TMP/typed.got" >"$KTFS_TMP/typed.diff" ||
		fail "readdir of a typed directory: $(head "$KTFS_TMP/typed.diff")"
	expect_eq "ls sorts names itself" "$(ls "$MNT/o" | head -n 3 | tr '\n' ' ')" \
		"0 007 1 "
	ktfs_umount
	ok "a store with typed names: readdir gives 0..300 by value, then the UUID, then other names"
fi

# keytreefs -o create,typed makes such a store itself; -o typed on a store
# with plain names is refused, saying why.
if [ "$KTFS_ENGINE" = rados ]; then
	ktfs_tree "f-$$-typed2-$RANDOM"
else
	STORE=$KTFS_TMP/typed2
fi
ktfs_mount -o create,typed
for i in 100 9 10 abc; do : >"$MNT/$i"; done
expect_eq "readdir of a store made with -o create,typed" \
	"$(ls -f "$MNT" | grep -v '^\.\.\?$' | tr '\n' ' ')" "9 10 100 abc "
ktfs_umount
if [ "$KTFS_ENGINE" = rados ]; then
	ktfs_tree "f-$$-plain-$RANDOM"
else
	STORE=$KTFS_TMP/plain2
fi
ktfs_mount -o create
ktfs_umount
rc=0
"$KEYTREEFS" -o typed "$STORE" "$MNT" 2>"$KTFS_TMP/err" || rc=$?
expect_eq "exit status, -o typed on a plain store" "$rc" 1
grep -q "typed names are chosen when a store is made" "$KTFS_TMP/err" ||
	fail "-o typed on a plain store: $(cat "$KTFS_TMP/err")"
! mountpoint -q "$MNT" || fail "mounted a plain store with -o typed"
ok "keytreefs -o create,typed makes a typed store; -o typed on a plain one is refused"


# size_refused OPTION VALUE...: keytreefs -o OPTION=VALUE exits 1 for
# each VALUE, saying "OPTION=VALUE: not a size", and mounts nothing.
size_refused() {
	local opt=$1 bad rc
	shift
	for bad in "$@"; do
		rc=0
		"$KEYTREEFS" -o "$opt=$bad" "$STORE" "$MNT" 2>"$KTFS_TMP/err" || rc=$?
		expect_eq "exit status, -o $opt=$bad" "$rc" 1
		grep -q "$opt=$bad: not a size" "$KTFS_TMP/err" ||
			fail "-o $opt=$bad: $(cat "$KTFS_TMP/err")"
		! mountpoint -q "$MNT" || fail "mounted with -o $opt=$bad"
	done
}

# -o cache=SIZE sets the store's block cache (what the daemon keeps of
# the store in memory); a size it cannot read is refused, naming it, and
# nothing is mounted.
size_refused cache abc 12X 0 512K 2T -1M
ktfs_mount -o cache=1M
head -c 300000 /dev/urandom >"$KTFS_TMP/big"
cp "$KTFS_TMP/big" "$MNT/big"
ktfs_umount
ktfs_mount -o cache=64m
cmp "$KTFS_TMP/big" "$MNT/big" || fail "a value written with cache=1M reads back"
ktfs_umount
ok "keytreefs -o cache=SIZE mounts with 1M and 64m; abc, 12X, 0, 512K, 2T and -1M are refused"

# -o write_buffer=SIZE sets LevelDB's write buffer (what the daemon keeps
# of its latest writes in memory before writing a table); sizes outside
# 1M to 1G are refused, naming the option, and nothing is mounted.
size_refused write_buffer abc 0 512K 2G 1T -4M
# The log holds what the buffer holds: LevelDB starts a new one each time
# a full buffer goes out as a table, and the daemon's close leaves the
# last one.
logbytes() { find "$STORE" -maxdepth 1 -name '*.log' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
ktfs_mount -o write_buffer=1M
head -c 3000000 /dev/urandom >"$KTFS_TMP/wbig"
cp "$KTFS_TMP/wbig" "$MNT/wbig"
ktfs_umount
if ktfs_engine_is leveldb "LevelDB's log in the store's directory"; then
	# 3 MB through a 1 MiB buffer: at most one buffer's worth is left
	# in the log (with the default 12 MiB, all 3 MB would be).
	[ "$(logbytes)" -lt 2000000 ] ||
		fail "3 MB written with write_buffer=1M left $(logbytes) bytes of log"
fi
ktfs_mount -o write_buffer=1G
cmp "$KTFS_TMP/wbig" "$MNT/wbig" || fail "a value written with write_buffer=1M reads back"
ktfs_umount
ok "keytreefs -o write_buffer=SIZE mounts with 1M and 1G; abc, 0, 512K, 2G, 1T and -4M are refused"

# -o readahead=SIZE: how far the kernel reads ahead in a file read in
# order, the read_ahead_kb of the mount's backing device; 1M unless told,
# 0 keeps the kernel's own; sizes outside 4K to 64M are refused.  Only
# root may write it (the tests run as root in CI).
size_refused readahead abc 1 2K 65M 1G -4K
ra_kb() {
	stat "$MNT" >/dev/null
	cat "/sys/class/bdi/$(mountpoint -d "$MNT")/read_ahead_kb"
}
if [ "$(id -u)" = 0 ]; then
	ktfs_mount -o readahead=0
	kernel_ra=$(ra_kb)
	ktfs_umount
	ktfs_mount
	expect_eq "read-ahead by default (KiB)" "$(ra_kb)" 1024
	cmp "$KTFS_TMP/wbig" "$MNT/wbig" || fail "a value reads back with 1M of read-ahead"
	ktfs_umount
	ktfs_mount -o readahead=256K
	expect_eq "read-ahead with -o readahead=256K (KiB)" "$(ra_kb)" 256
	ktfs_umount
	# A mount point whose line in /proc/self/mountinfo is longer than
	# 8 KiB (each space is written there as \040): the daemon finds
	# its device all the same.
	sp=$(printf '%*s' 250 '')
	long="$KTFS_TMP/ra/$sp/$sp/$sp/$sp/$sp/$sp/$sp/$sp/$sp"
	mkdir -p "$long"
	short_mnt=$MNT
	MNT=$long
	ktfs_mount
	line=$({ grep -F " $(printf '%s' "$long" | sed 's/ /\\040/g') " /proc/self/mountinfo || true; } | wc -c)
	[ "$line" -gt 8192 ] || fail "the long mount point's mountinfo line is $line bytes, not over 8 KiB"
	expect_eq "read-ahead at a mount point of $line bytes in mountinfo (KiB)" "$(ra_kb)" 1024
	ktfs_umount
	MNT=$short_mnt
	rm -rf "$KTFS_TMP/ra"
	# Linux gives every backing device 128 KiB (VM_READAHEAD_PAGES).
	[ "$kernel_ra" != 1024 ] ||
		fail "read-ahead with -o readahead=0: $kernel_ra, not the kernel's"
	ok "keytreefs -o readahead: 1024 KiB by default (also at a mount point whose mountinfo line is over 8 KiB), 256 with 256K, the kernel's ($kernel_ra) with 0; abc, 1, 2K, 65M, 1G and -4K are refused"
else
	ok "keytreefs -o readahead: abc, 1, 2K, 65M, 1G and -4K are refused (not root: the read-ahead itself is not checked)"
fi
