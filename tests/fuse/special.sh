#!/usr/bin/env bash
# special.sh - FIFOs, sockets and device nodes in the mount: mkfifo,
# mknod c/b and bind() of a Unix socket make them, with their type, mode,
# owner and device number, as ext4 or tmpfs would; stat, ls -l and readdir
# show them; rename, chmod, chown, touch and unlink treat them as any node;
# a FIFO passes data (the kernel's pipe: its opens never reach the daemon)
# and a socket takes a connection by its name.  A tree with all of them
# copied in and out again with tar and with rsync -a is identical (types,
# modes, owners, mtimes, device numbers, contents), and a second rsync has
# nothing to do.
source "$(dirname "$0")/lib.sh"

umask 022
# One line per entry below DIR (not DIR itself): path, type, mode, owner,
# mtime, device number (0:0 for others), and size for regular files.
listing() {
	(cd "$1" && find . -mindepth 1 -printf '%p\n' | sort | while read -r p; do
		stat -c '%n %F %a %u:%g %Y %t:%T' "$p"
		[ -f "$p" ] && [ ! -L "$p" ] && stat -c '%n size %s' "$p"
		true
	done)
}
# Contents of the regular files below DIR.
contents() {
	(cd "$1" && find . -type f -exec sha256sum {} + | sort)
}

ktfs_mount -o create
cd "$MNT"

mkfifo -m 640 fifo
mknod null c 1 3
mknod disk b 8 1
mknod big c 4000 1048575 # beyond the old 8-bit major/minor
"$KTFS_PROBE" unix-socket sock
expect_eq "a FIFO" "$(stat -c '%F %a %u:%g %s' fifo)" "fifo 640 0:0 0"
expect_eq "a character device" "$(stat -c '%F %a %t:%T' null)" \
	"character special file 644 1:3"
expect_eq "a block device" "$(stat -c '%F %t:%T' disk)" \
	"block special file 8:1"
expect_eq "a large device number" "$(stat -c '%Hr:%Lr' big)" "4000:1048575"
expect_eq "a socket made by bind()" "$(stat -c '%F %a' sock)" "socket 755"
expect_eq "ls -l type letters" \
	"$(ls -l big disk fifo null sock | cut -c1 | tr -d '\n')" "cbpcs"
expect_eq "ls -l of a device shows major, minor" \
	"$(ls -l null | awk '{ print $5 $6 }')" "1,3"
expect_eq "readdir's d_type" \
	"$("$KTFS_PROBE" dtypes . | grep -v '^\.' | sort | tr '\n' ' ')" \
	"big c disk b fifo p null c sock s "
ok "mkfifo, mknod c/b and bind(): types, modes and device numbers"

# Existing names: the kernel and the daemon both say EEXIST.
mkfifo fifo 2>/dev/null && fail "mkfifo over a FIFO succeeded"
mknod null c 1 5 2>/dev/null && fail "mknod over a device succeeded"
expect_eq "device number unchanged" "$(stat -c '%t:%T' null)" "1:3"
mkdir fifo/d 2>/dev/null && fail "mkdir below a FIFO succeeded"
ok "no node over an existing name, nothing below a FIFO"

# The kernel makes the FIFO a pipe: data passes, and the daemon sees no
# open of it.
(echo through-the-fifo >fifo) &
writer=$!
expect_eq "what came out of the FIFO" "$(cat fifo)" "through-the-fifo"
wait "$writer"
ok "data passes through a FIFO in the mount"

ino=$(stat -c %i fifo)
mv fifo pipe
expect_eq "inode kept by rename" "$(stat -c %i pipe)" "$ino"
expect_eq "type kept by rename" "$(stat -c %F pipe)" "fifo"
mkdir sub
mv null sub/null
expect_eq "a device moved into a directory" \
	"$(stat -c '%F %t:%T' sub/null)" "character special file 1:3"
chmod 600 pipe
chown 1234:5678 sub/null
touch -h -d @1700000000 disk
expect_eq "chmod" "$(stat -c '%a %F' pipe)" "600 fifo"
expect_eq "chown" "$(stat -c '%u:%g %t:%T' sub/null)" "1234:5678 1:3"
expect_eq "touch" "$(stat -c '%Y %F' disk)" "1700000000 block special file"
echo v >file
mv -T pipe file
expect_eq "a FIFO renamed over a file" "$(stat -c %F file)" "fifo"
mv -T sub/null sock
expect_eq "a device renamed over a socket" "$(stat -c '%F %t:%T' sock)" \
	"character special file 1:3"
rm file sock
[ ! -e file ] && [ ! -e sock ] || fail "unlink left a special file"
ok "rename, chmod, chown, touch, unlink"

# Everything is kept across a remount.
cd /
ktfs_umount
ktfs_mount
cd "$MNT"
expect_eq "after remount" "$(stat -c '%F %t:%T %Y' disk)" \
	"block special file 8:1 1700000000"
expect_eq "after remount" "$(stat -c '%Hr:%Lr' big)" "4000:1048575"
rm disk big
rmdir sub
ok "types, device numbers and times kept across a remount"

# A FIFO's opens are the kernel's: with debug output, none reaches the
# daemon.
cd /
ktfs_umount
: >"$LOG"
ktfs_mount -d
mkfifo "$MNT/quiet"
qino=$(stat -c %i "$MNT/quiet")
(echo quiet >"$MNT/quiet") &
writer=$!
expect_eq "read through the FIFO" "$(cat "$MNT/quiet")" "quiet"
wait "$writer"
if grep -q "opcode: OPEN (14), nodeid: $qino," "$LOG"; then
	fail "an open of the FIFO reached the daemon"
fi
grep -q 'opcode: MKNOD' "$LOG" || fail "mkfifo did not come as MKNOD"
rm "$MNT/quiet"
ktfs_umount
ktfs_mount
ok "opens of a FIFO stay in the kernel"

# A tree with every kind of node, copied in and out with tar and rsync.
SRC=$KTFS_TMP/src
mkdir -p "$SRC/d/e"
echo hello >"$SRC/d/file"
head -c 100000 /dev/urandom >"$SRC/d/e/big"
ln -s file "$SRC/d/link"
mkfifo -m 600 "$SRC/d/fifo"
mknod -m 640 "$SRC/d/e/tty" c 1 7
mknod "$SRC/d/sda" b 8 0
(cd "$SRC/d" && "$KTFS_PROBE" unix-socket sock)
chown 1000:1001 "$SRC/d/fifo" "$SRC/d/e/tty"
chown -h 1002:1003 "$SRC/d/link"
chmod 1777 "$SRC/d/e"
find "$SRC" -depth -exec touch -h -d @1650000000 {} +
touch -h -d @1650000123 "$SRC/d/fifo" "$SRC/d/link" "$SRC/d/sda"

# tar (GNU tar leaves sockets out, as on any filesystem).
mkdir "$MNT/tar" "$KTFS_TMP/tar-out"
tar -C "$SRC" --numeric-owner -cf - . 2>"$KTFS_TMP/tar.err" |
	tar -C "$MNT/tar" --numeric-owner -xpf -
grep -q 'socket ignored' "$KTFS_TMP/tar.err" ||
	fail "tar did not say it left out the socket"
tar -C "$MNT/tar" --numeric-owner -cf - . 2>/dev/null |
	tar -C "$KTFS_TMP/tar-out" --numeric-owner -xpf -
listing "$SRC" | grep -v '^\./d/sock ' >"$KTFS_TMP/want-tar"
listing "$MNT/tar" >"$KTFS_TMP/in-tar"
listing "$KTFS_TMP/tar-out" >"$KTFS_TMP/out-tar"
grep -q '^\./d/e/tty character special file 640 1000:1001 1650000000 1:7$' \
	"$KTFS_TMP/in-tar" || fail "tar: the device in the mount: $(cat "$KTFS_TMP/in-tar")"
diff "$KTFS_TMP/want-tar" "$KTFS_TMP/in-tar" >&2 ||
	fail "tar into the mount changed types, modes, owners or times"
diff "$KTFS_TMP/want-tar" "$KTFS_TMP/out-tar" >&2 ||
	fail "tar out of the mount changed types, modes, owners or times"
diff <(contents "$SRC") <(contents "$MNT/tar") >&2 || fail "tar: contents"
diff <(contents "$SRC") <(contents "$KTFS_TMP/tar-out") >&2 ||
	fail "tar out: contents"
ok "tar of FIFOs and devices into the mount and out again: identical"

# rsync -a (devices and specials included, sockets too).
rsync -a "$SRC/" "$MNT/rs/"
rsync -a "$MNT/rs/" "$KTFS_TMP/rs-out/"
listing "$SRC" >"$KTFS_TMP/want-rs"
listing "$MNT/rs" >"$KTFS_TMP/in-rs"
listing "$KTFS_TMP/rs-out" >"$KTFS_TMP/out-rs"
grep -q '^\./d/sock socket ' "$KTFS_TMP/in-rs" || fail "rsync: no socket"
diff "$KTFS_TMP/want-rs" "$KTFS_TMP/in-rs" >&2 ||
	fail "rsync into the mount changed types, modes, owners or times"
diff "$KTFS_TMP/want-rs" "$KTFS_TMP/out-rs" >&2 ||
	fail "rsync out of the mount changed types, modes, owners or times"
diff <(contents "$SRC") <(contents "$MNT/rs") >&2 || fail "rsync: contents"
again=$(rsync -ai "$SRC/" "$MNT/rs/")
expect_eq "a second rsync -a into the mount transfers nothing" "$again" ""
again=$(rsync -ai "$MNT/rs/" "$KTFS_TMP/rs-out/")
expect_eq "a second rsync -a out of the mount transfers nothing" "$again" ""
ok "rsync -a of FIFOs, devices and sockets in and out: identical, then idle"

cd /
ktfs_umount
if [ -n "${KTFS_CLI:-}" ]; then
	"$KTFS_CLI" -s "$STORE" check >&2 || fail "keytree check after the tests"
	ok "keytree check"
fi
