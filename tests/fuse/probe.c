/*
 * probe.c - ktfs_probe, the FUSE tests' helper for what the shell cannot
 * do: dump a store through the library or a mounted tree through the
 * kernel in one comparable format, make nodes through the library,
 * renameat2(), a file used across its unlink, and readdir resumption.
 *
 *   ktfs_probe dump-store STORE VALUE_NAME      every node, sorted
 *   ktfs_probe dump-tree DIR [LINK_PREFIX]      every entry below DIR
 *   ktfs_probe populate STORE                   nodes made by the library
 *   ktfs_probe rename2 FROM TO noreplace|exchange
 *   ktfs_probe unlinked FILE                    open, unlink, use, close
 *   ktfs_probe append FILE                      O_APPEND offsets
 *   ktfs_probe write-error FILE                 a failed write, at close too
 *   ktfs_probe fsync FILE                       fsync, fdatasync, dir fsync
 *   ktfs_probe stats STORE                      "VALUE_BYTES ROW_BYTES"
 *   ktfs_probe readdir DIR                      streaming and seekdir
 *   ktfs_probe seekdir DIR [MIN]                seekdir to early telldir
 *                                               positions, and to a removed
 *                                               entry's (EINVAL); DIR holds
 *                                               MIN entries or more
 *                                               (default 2000)
 *   ktfs_probe orphan-rmdir DIR                 fstat of an unlinked open
 *                                               file after rmdir of its dir
 *   ktfs_probe mknod-file FILE                  mknod(S_IFREG) makes a file
 *   ktfs_probe rdonly-trunc FILE                open(O_RDONLY|O_TRUNC)
 *                                               truncates, as in Linux
 *   ktfs_probe tmpfile DIR                      O_TMPFILE: an unnamed
 *                                               file, named by linkat
 *                                               as DIR/named
 *   ktfs_probe unix-socket PATH                 bind a Unix socket at PATH,
 *                                               pass a message through it
 *                                               (the name stays)
 *   ktfs_probe dtypes DIR                       "NAME TYPE" per entry, TYPE
 *                                               from readdir's d_type
 *   ktfs_probe link FROM TO                     link(2); prints 0 or the
 *                                               errno's name (EPERM...)
 *   ktfs_probe hardlink-open DIR                an open file whose hard
 *                                               links are unlinked or
 *                                               replaced one by one
 *
 * Dump lines: "PATH KIND MODE UID GID SIZE MTIME_NS DATA" with KIND one of
 * d, f, l and DATA the link target or a hash of the content.  An item that
 * is also a directory dumps as a directory plus the file VALUE_NAME in it,
 * as the mount shows it.  Exit status 0 on success, 1 with a message.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <keytree.h>

static int fail(const char *what)
{
	fprintf(stderr, "ktfs_probe: %s: %s\n", what, strerror(errno));
	return 1;
}

static int kfail(const char *what, int rc)
{
	fprintf(stderr, "ktfs_probe: %s: %s: %s\n", what, kt_strerror(rc),
		kt_errmsg());
	return 1;
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

static int64_t ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* ---- dump-store ---- */

static int dump_value(kt_store *s, const char *path, uint64_t size,
		      uint64_t *h)
{
	static unsigned char buf[1 << 16];
	uint64_t off = 0;
	size_t n;
	int rc;

	*h = 0xcbf29ce484222325ULL;
	while (off < size) {
		if ((rc = kt_read(&n, s, path, buf, sizeof(buf), off)) < 0)
			return rc;
		if (n == 0)
			break;
		*h = fnv(*h, buf, n);
		off += n;
	}
	return 0;
}

static int dump_node(kt_store *s, const char *path, const char *vname)
{
	kt_statbuf st;
	char *target = NULL;
	uint64_t h = 0;
	int rc;

	if ((rc = kt_lstat(&st, s, path)) < 0)
		return kfail(path, rc);
	if (st.kind & KT_KIND_LINK) {
		if ((rc = kt_readlink(&target, NULL, s, path)) < 0)
			return kfail(path, rc);
		printf("%s l %04o %u %u %" PRIu64 " %" PRId64 " %s\n", path,
		       st.mode, st.uid, st.gid, st.size, st.mtime_ns, target);
		kt_free(target);
		return 0;
	}
	if (st.kind & KT_KIND_ITEM) {
		if ((rc = dump_value(s, path, st.size, &h)) < 0)
			return kfail(path, rc);
	}
	if (st.kind & KT_KIND_DIR) {
		printf("%s d %04o %u %u 0 %" PRId64 " -\n", path, st.mode,
		       st.uid, st.gid, st.mtime_ns);
		if (st.kind & KT_KIND_ITEM)
			printf("%s/%s f %04o %u %u %" PRIu64 " %" PRId64
			       " %016" PRIx64 "\n",
			       path, vname, st.mode & 0666, st.uid, st.gid,
			       st.size, st.mtime_ns, h);
	} else {
		printf("%s f %04o %u %u %" PRIu64 " %" PRId64 " %016" PRIx64
		       "\n",
		       path, st.mode, st.uid, st.gid, st.size, st.mtime_ns, h);
	}
	return 0;
}

static int dump_store(const char *dir, const char *vname)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *s = NULL;
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc, bad = 0;

	o.read_only = 1;
	if ((rc = kt_open(&s, dir, &o)) < 0)
		return kfail(dir, rc);
	if ((rc = kt_find_new(&it, s, "/", 0)) < 0) {
		kt_close(s);
		return kfail("find", rc);
	}
	while ((rc = kt_iter_next(&e, it)) == 0)
		bad |= dump_node(s, e->name, vname);
	if (rc != KT_ITEROVER)
		bad |= kfail("find", rc);
	kt_iter_free(it);
	kt_close(s);
	return bad;
}

/* ---- dump-tree ---- */

static size_t tree_root_len;
static const char *link_prefix;

static int tree_entry(const char *fpath, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	const char *p = fpath + tree_root_len;
	char target[8192];
	ssize_t n;

	(void)flag;
	if (ftw->level == 0)
		return 0;
	if (S_ISLNK(st->st_mode)) {
		const char *t = target;

		if ((n = readlink(fpath, target, sizeof(target) - 1)) < 0)
			return fail(fpath);
		target[n] = '\0';
		if (link_prefix && strncmp(t, link_prefix,
					   strlen(link_prefix)) == 0)
			t += strlen(link_prefix);
		printf("%s l %04o %u %u %zd %" PRId64 " %s\n", p,
		       st->st_mode & 07777, st->st_uid, st->st_gid, (ssize_t)strlen(t),
		       ns(&st->st_mtim), t);
	} else if (S_ISDIR(st->st_mode)) {
		printf("%s d %04o %u %u 0 %" PRId64 " -\n", p,
		       st->st_mode & 07777, st->st_uid, st->st_gid,
		       ns(&st->st_mtim));
	} else {
		static unsigned char buf[1 << 16];
		uint64_t h = 0xcbf29ce484222325ULL;
		int fd = open(fpath, O_RDONLY);

		if (fd < 0)
			return fail(fpath);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			h = fnv(h, buf, (size_t)n);
		close(fd);
		if (n < 0)
			return fail(fpath);
		printf("%s f %04o %u %u %jd %" PRId64 " %016" PRIx64 "\n", p,
		       st->st_mode & 07777, st->st_uid, st->st_gid,
		       (intmax_t)st->st_size, ns(&st->st_mtim), h);
	}
	return 0;
}

static int dump_tree(const char *dir, const char *prefix)
{
	tree_root_len = strlen(dir);
	link_prefix = prefix;
	return nftw(dir, tree_entry, 64, FTW_PHYS) != 0;
}

/* ---- populate ---- */

static int populate(const char *dir)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *s = NULL;
	int rc;

	o.create_if_missing = 1;
	if ((rc = kt_open(&s, dir, &o)) < 0)
		return kfail(dir, rc);
	if ((rc = kt_put(s, "/both", "own value\n", 10, NULL)) < 0 ||
	    (rc = kt_put(s, "/both/child", "child\n", 6, NULL)) < 0 ||
	    (rc = kt_put(s, "/a/b/c/d/e/f/g/h/deep", "deep\n", 5, NULL)) < 0 ||
	    (rc = kt_put(s, "/caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac",
			 "utf8\n", 5, NULL)) < 0 ||
	    (rc = kt_mkdir(s, "/links", NULL)) < 0 ||
	    (rc = kt_symlink(s, "/links/rel", "../a/b/c/d/e/f/g/h/deep",
			     NULL)) < 0 ||
	    (rc = kt_symlink(s, "/links/abs", "/both/child", NULL)) < 0 ||
	    (rc = kt_symlink(s, "/links/todir", "../a/b", NULL)) < 0 ||
	    (rc = kt_attr_set(s, "/both/child", "color", "blue", 4, 0)) < 0) {
		kt_close(s);
		return kfail("populate", rc);
	}
	kt_close(s);
	return 0;
}

/* ---- rename2, unlinked, readdir ---- */

static int rename2(const char *from, const char *to, const char *how)
{
	unsigned int flags = strcmp(how, "exchange") == 0 ? RENAME_EXCHANGE
							  : RENAME_NOREPLACE;

	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, flags) < 0)
		return fail("renameat2");
	return 0;
}

static int unlinked(const char *file)
{
	char buf[64] = {0};
	struct stat st;
	int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return fail(file);
	if (write(fd, "before", 6) != 6 || unlink(file) < 0)
		return fail("write/unlink");
	if (access(file, F_OK) == 0) {
		fprintf(stderr, "ktfs_probe: %s still there\n", file);
		return 1;
	}
	if (fstat(fd, &st) < 0)
		return fail("fstat");
	if (st.st_nlink != 0) {
		fprintf(stderr, "ktfs_probe: nlink %ju after unlink\n",
			(uintmax_t)st.st_nlink);
		return 1;
	}
	if (pwrite(fd, "+after", 6, 6) != 6 || pread(fd, buf, 12, 0) != 12 ||
	    strcmp(buf, "before+after") != 0) {
		fprintf(stderr, "ktfs_probe: read back '%s'\n", buf);
		return 1;
	}
	if (fstat(fd, &st) < 0 || st.st_size != 12) {
		fprintf(stderr, "ktfs_probe: size after unlink wrong\n");
		return 1;
	}
	/* ftruncate and fchmod by the handle only. */
	if (ftruncate(fd, 20) < 0 || fchmod(fd, 0600) < 0 ||
	    fstat(fd, &st) < 0)
		return fail("ftruncate/fchmod after unlink");
	if (st.st_size != 20 || (st.st_mode & 07777) != 0600 ||
	    st.st_nlink != 0) {
		fprintf(stderr, "ktfs_probe: after ftruncate/fchmod: size "
			"%jd mode %o nlink %ju\n", (intmax_t)st.st_size,
			(unsigned)(st.st_mode & 07777), (uintmax_t)st.st_nlink);
		return 1;
	}
	if (fsync(fd) < 0)
		return fail("fsync after unlink");
	return close(fd) < 0 ? fail("close") : 0;
}

/* Two handles: one O_APPEND, one not.  Appends land at the end the other
 * handle made, and the O_APPEND handle's position follows them. */
static int append(const char *file)
{
	char buf[64] = {0};
	int fa, fw;
	off_t pos;

	fw = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	fa = open(file, O_WRONLY | O_APPEND);
	if (fw < 0 || fa < 0)
		return fail(file);
	if (pwrite(fw, "abc", 3, 0) != 3 || write(fa, "X", 1) != 1)
		return fail("write");
	if ((pos = lseek(fa, 0, SEEK_CUR)) != 4) {
		fprintf(stderr, "ktfs_probe: position %jd after append, "
			"want 4\n", (intmax_t)pos);
		return 1;
	}
	if (pwrite(fw, "Z", 1, 9) != 1 || write(fa, "YY", 2) != 2)
		return fail("write");
	if ((pos = lseek(fa, 0, SEEK_CUR)) != 12) {
		fprintf(stderr, "ktfs_probe: position %jd after the second "
			"append, want 12\n", (intmax_t)pos);
		return 1;
	}
	if (pread(fw, buf, sizeof(buf), 0) != 12 ||
	    memcmp(buf, "abcX\0\0\0\0\0ZYY", 12) != 0) {
		fprintf(stderr, "ktfs_probe: content after appends wrong\n");
		return 1;
	}
	return close(fa) < 0 || close(fw) < 0 ? fail("close") : 0;
}

/* A write past the store's value limit fails with EFBIG, and close(2)
 * (flush) reports it again; a second close of a dup does not. */
static int write_error(const char *file)
{
	int fd = open(file, O_RDWR | O_CREAT, 0644), fd2;

	if (fd < 0)
		return fail(file);
	if ((fd2 = dup(fd)) < 0)
		return fail("dup");
	if (pwrite(fd, "x", 1, (off_t)1 << 40) != -1 || errno != EFBIG) {
		fprintf(stderr, "ktfs_probe: write at 1 TiB: %s, want EFBIG\n",
			strerror(errno));
		return 1;
	}
	errno = 0;
	if (close(fd) != -1 || errno != EFBIG) {
		fprintf(stderr, "ktfs_probe: close after a failed write: %s, "
			"want EFBIG\n", strerror(errno));
		return 1;
	}
	return close(fd2) < 0 ? fail("second close") : 0;
}

static int fsync_check(const char *file)
{
	char *dir = strdup(file), *slash;
	int fd = open(file, O_RDWR | O_CREAT, 0644), dfd;

	if (fd < 0 || !dir)
		return fail(file);
	if (write(fd, "sync", 4) != 4 || fsync(fd) < 0 || fdatasync(fd) < 0)
		return fail("fsync");
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	if ((dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY)) < 0 ||
	    fsync(dfd) < 0)
		return fail("fsync of the directory");
	free(dir);
	return close(dfd) < 0 || close(fd) < 0 ? fail("close") : 0;
}

/* Value bytes and row bytes of a store, opened read-only (which keeps
 * any orphans: a read-only open drops nothing). */
static int stats(const char *dir)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store_stats ss;
	kt_store *s = NULL;
	int rc;

	o.read_only = 1;
	if ((rc = kt_open(&s, dir, &o)) < 0)
		return kfail(dir, rc);
	rc = kt_stats(&ss, s);
	kt_close(s);
	if (rc < 0)
		return kfail("stats", rc);
	printf("%" PRIu64 " %" PRIu64 "\n", ss.value_bytes, ss.row_bytes);
	return 0;
}

/* Entries of open directory @p d from where it stands, and whether
 * @p name is among them. */
static size_t read_rest(DIR *d, const char *name, int *seen)
{
	struct dirent *e;
	size_t n = 0;

	*seen = 0;
	while ((e = readdir(d)) != NULL) {
		n++;
		*seen |= strcmp(e->d_name, name) == 0;
	}
	return n;
}

/* @p d has been read to its end, @p n entries: it stays at its end, and
 * after rewinddir() it lists an entry made meanwhile, and then, after one
 * more rewind, no longer lists it once it is removed (keytreefs answers
 * a read at the end from memory: a rewind must read the store again). */
static int rewind_check(DIR *d, const char *dir, size_t n, const char *last)
{
	const char *made = "probe-made-after-the-end";
	struct dirent *e;
	char path[4096];
	long end;
	size_t m;
	int fd, seen;

	if (readdir(d) != NULL) {
		fprintf(stderr, "ktfs_probe: an entry after the end\n");
		return 1;
	}
	end = telldir(d);
	snprintf(path, sizeof(path), "%s/%s", dir, made);
	if ((fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644)) < 0)
		return fail(path);
	close(fd);
	/* rewinddir, then seekdir back to the end: a name that sorts after
	 * the last one is there now (the kernel does not tell the daemon
	 * of the rewind, only of the read at the old end). */
	rewinddir(d);
	seekdir(d, end);
	e = readdir(d);
	if (last != NULL && strcmp(made, last) > 0 &&
	    (e == NULL || strcmp(e->d_name, made) != 0)) {
		fprintf(stderr, "ktfs_probe: after rewinddir and seekdir to "
			"the end: %s, not %s\n", e ? e->d_name : "(end)",
			made);
		return 1;
	}
	rewinddir(d);
	if ((m = read_rest(d, "probe-made-after-the-end", &seen)) != n + 1 ||
	    !seen) {
		fprintf(stderr, "ktfs_probe: after rewinddir: %zu entries "
			"(want %zu), the new one %s\n", m, n + 1,
			seen ? "listed" : "missing");
		return 1;
	}
	if (unlink(path) != 0)
		return fail(path);
	rewinddir(d);
	if ((m = read_rest(d, "probe-made-after-the-end", &seen)) != n ||
	    seen) {
		fprintf(stderr, "ktfs_probe: after unlink and rewinddir: %zu "
			"entries (want %zu), the removed one %s\n", m, n,
			seen ? "listed" : "gone");
		return 1;
	}
	return 0;
}

/* Read DIR, remembering telldir() positions: no entry may come twice and
 * every entry has a d_type; then seekdir() back to the middle and read
 * the same tail again, and rewind (rewind_check).  Prints the number of
 * entries. */
static int readdir_check(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	long *pos = NULL;
	size_t n = 0, i, j, mid;
	int bad = 0;

	if (!d)
		return fail(dir);
	for (;;) {
		long p = telldir(d);

		if (!(e = readdir(d)))
			break;
		if (e->d_type == DT_UNKNOWN) {
			fprintf(stderr, "ktfs_probe: %s: no d_type\n",
				e->d_name);
			bad = 1;
		}
		names = realloc(names, (n + 1) * sizeof(*names));
		pos = realloc(pos, (n + 1) * sizeof(*pos));
		names[n] = strdup(e->d_name);
		pos[n++] = p;
	}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (strcmp(names[i], names[j]) == 0) {
				fprintf(stderr, "ktfs_probe: %s twice\n",
					names[i]);
				bad = 1;
			}
	mid = n / 2;
	seekdir(d, pos[mid]);
	for (i = mid; i < n && (e = readdir(d)); i++)
		if (strcmp(e->d_name, names[i]) != 0) {
			fprintf(stderr,
				"ktfs_probe: after seekdir: %s, not %s\n",
				e->d_name, names[i]);
			bad = 1;
			break;
		}
	if (!bad)
		bad = rewind_check(d, dir, n, n > 0 ? names[n - 1] : NULL);
	printf("%zu\n", n);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(pos);
	closedir(d);
	return bad;
}

/* Read all of DIR (regular files, at least @p min: the caller makes
 * enough for the listing to take more than one reply of the mount, and 20
 * or more for the positions tried below) with telldir() before each
 * entry; then seekdir() to early and scattered positions, each of which
 * must give the same entries again in the same order; then unlink an
 * early entry and seekdir() to the position just after it (the cookie is
 * the removed entry's): readdir must fail with EINVAL, not skip or
 * repeat.  Prints the number of entries. */
static int seekdir_check(const char *dir, size_t min)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	long *pos = NULL;
	size_t n = 0, i, k, t;
	size_t tries[8];
	int bad = 0;

	if (!d)
		return fail(dir);
	for (;;) {
		long p = telldir(d);

		if (!(e = readdir(d)))
			break;
		names = realloc(names, (n + 1) * sizeof(*names));
		pos = realloc(pos, (n + 1) * sizeof(*pos));
		names[n] = strdup(e->d_name);
		pos[n++] = p;
	}
	if (n < min) {
		fprintf(stderr,
			"ktfs_probe: only %zu entries, fewer than %zu\n", n,
			min);
		return 1;
	}
	tries[0] = 0;
	tries[1] = 1;
	tries[2] = 3;
	tries[3] = 5;
	tries[4] = 17;
	tries[5] = n / 3;
	tries[6] = 7;
	tries[7] = n - 1;
	for (t = 0; t < 8 && !bad; t++) {
		k = tries[t];
		seekdir(d, pos[k]);
		for (i = k; i < n && i < k + 300; i++) {
			errno = 0;
			e = readdir(d);
			if (!e || strcmp(e->d_name, names[i]) != 0) {
				fprintf(stderr,
					"ktfs_probe: seekdir to #%zu: entry "
					"#%zu is %s, not %s\n",
					k, i, e ? e->d_name : strerror(errno),
					names[i]);
				bad = 1;
				break;
			}
		}
	}
	/* names[0..2] are ".", ".." (any order) and children follow. */
	k = 10;
	if (!bad && unlinkat(dirfd(d), names[k - 1], 0) != 0)
		bad = fail(names[k - 1]);
	if (!bad) {
		seekdir(d, pos[k]);
		errno = 0;
		e = readdir(d);
		if (e || errno != EINVAL) {
			fprintf(stderr,
				"ktfs_probe: seekdir after a removed entry: "
				"%s\n",
				e ? e->d_name : strerror(errno));
			bad = 1;
		}
	}
	printf("%zu\n", n);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(pos);
	closedir(d);
	return bad;
}

/* DIR/sub/f is opened, written, unlinked, then DIR/sub removed: fstat on
 * the descriptor must still work (link count 0, the size, the inode
 * number it had), and so must read, write, ftruncate and fchmod. */
static int orphan_rmdir(const char *dir)
{
	char sub[4096], f[4200], buf[16];
	struct stat before, st;
	int fd;

	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(f, sizeof(f), "%s/f", sub);
	if (mkdir(sub, 0755) != 0)
		return fail(sub);
	if ((fd = open(f, O_RDWR | O_CREAT | O_EXCL, 0644)) < 0)
		return fail(f);
	if (write(fd, "orphan", 6) != 6 || fstat(fd, &before) != 0)
		return fail("write");
	if (unlink(f) != 0 || rmdir(sub) != 0)
		return fail("unlink, rmdir");
	if (fstat(fd, &st) != 0)
		return fail("fstat after rmdir");
	if (st.st_nlink != 0 || st.st_size != 6 || st.st_ino != before.st_ino) {
		fprintf(stderr,
			"ktfs_probe: fstat: nlink %lu size %lld ino %llu "
			"(was %llu)\n",
			(unsigned long)st.st_nlink, (long long)st.st_size,
			(unsigned long long)st.st_ino,
			(unsigned long long)before.st_ino);
		return 1;
	}
	if (pwrite(fd, "!", 1, 6) != 1 || ftruncate(fd, 5) != 0 ||
	    fchmod(fd, 0600) != 0 || fstat(fd, &st) != 0)
		return fail("pwrite, ftruncate, fchmod, fstat");
	if (st.st_size != 5 || (st.st_mode & 07777) != 0600)
		return fail("size or mode after ftruncate and fchmod");
	if (pread(fd, buf, sizeof(buf), 0) != 5 || memcmp(buf, "orpha", 5))
		return fail("pread");
	if (close(fd) != 0)
		return fail("close");
	return 0;
}

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

static int mknod_file(const char *path)
{
	struct stat st;

	if (mknod(path, S_IFREG | 0640, 0) != 0)
		return fail("mknod S_IFREG");
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & 0777) != (0640 & ~current_umask()) ||
	    st.st_size != 0)
		return fail("the node mknod made is not an empty regular file");
	if (mknod(path, S_IFREG | 0640, 0) == 0 || errno != EEXIST)
		return fail("mknod over an existing name");
	return 0;
}

static int rdonly_trunc(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_TRUNC);

	if (fd < 0)
		return fail("open O_RDONLY|O_TRUNC");
	if (fstat(fd, &st) != 0 || st.st_size != 0)
		return fail("not truncated at open");
	close(fd);
	return 0;
}

/* ---- tmpfile ---- */

/* Entries in @dir other than . and .., or -1. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static int tmpfile_check(const char *dir)
{
	static char data[100000], back[100000];
	char named[4096], other[4096];
	struct stat st, st2;
	int fd, n0;
	size_t i;

	snprintf(named, sizeof(named), "%s/named", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + 1);
	umask(022);
	n0 = count_entries(dir);
	fd = open(dir, O_TMPFILE | O_RDWR, 0664);
	if (fd < 0)
		return fail("open O_TMPFILE");
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 ||
	    (st.st_mode & 07777) != 0644 || st.st_size != 0)
		return fail("fstat of the new unnamed file (regular, no link, "
			    "mode 0644, empty)");
	if (pwrite(fd, data, sizeof(data), 0) != (ssize_t)sizeof(data) ||
	    pread(fd, back, sizeof(back), 0) != (ssize_t)sizeof(back) ||
	    memcmp(data, back, sizeof(data)) != 0)
		return fail("write and read back the unnamed file");
	if (count_entries(dir) != n0)
		return fail("the unnamed file shows in its directory");
	if (linkat(fd, "", AT_FDCWD, named, AT_EMPTY_PATH) != 0)
		return fail("linkat AT_EMPTY_PATH");
	if (fstat(fd, &st2) != 0 || st2.st_nlink != 1 || st2.st_ino != st.st_ino)
		return fail("fstat after linkat (one link, same inode)");
	if (stat(named, &st2) != 0 || st2.st_ino != st.st_ino ||
	    st2.st_size != (off_t)sizeof(data))
		return fail("stat of the name linkat gave");
	if (pwrite(fd, "Z", 1, 0) != 1)
		return fail("write after linkat");
	close(fd);
	if ((fd = open(named, O_RDONLY)) < 0 ||
	    read(fd, back, sizeof(back)) != (ssize_t)sizeof(back) ||
	    back[0] != 'Z' || memcmp(data + 1, back + 1, sizeof(data) - 1) != 0)
		return fail("content through the name");
	/* A named file can get a second name (a hard link) the same way. */
	if (linkat(fd, "", AT_FDCWD, other, AT_EMPTY_PATH) != 0)
		return fail("linkat of a named file");
	if (fstat(fd, &st2) != 0 || st2.st_nlink != 2 ||
	    st2.st_ino != st.st_ino || stat(other, &st2) != 0 ||
	    st2.st_ino != st.st_ino || st2.st_nlink != 2)
		return fail("the second name: same inode, two links");
	if (unlink(other) != 0 || fstat(fd, &st2) != 0 || st2.st_nlink != 1)
		return fail("unlink of the second name (one link left)");
	close(fd);
	/* O_EXCL: the file may never be linked (the kernel refuses). */
	if ((fd = open(dir, O_TMPFILE | O_WRONLY | O_EXCL, 0600)) < 0)
		return fail("open O_TMPFILE|O_EXCL");
	if (linkat(fd, "", AT_FDCWD, other, AT_EMPTY_PATH) == 0)
		return fail("linkat of an O_EXCL unnamed file");
	close(fd);
	/* Onto an existing name: EEXIST, and the file stays unnamed. */
	if ((fd = open(dir, O_TMPFILE | O_RDWR, 0600)) < 0)
		return fail("open O_TMPFILE again");
	if (linkat(fd, "", AT_FDCWD, named, AT_EMPTY_PATH) == 0 ||
	    errno != EEXIST)
		return fail("linkat onto an existing name (want EEXIST)");
	if (fstat(fd, &st) != 0 || st.st_nlink != 0)
		return fail("nlink after a failed linkat");
	/* Closed without a name: it is gone (the test checks the store). */
	if (pwrite(fd, data, sizeof(data), 0) != (ssize_t)sizeof(data))
		return fail("write to the second unnamed file");
	close(fd);
	if (count_entries(dir) != n0 + 1)
		return fail("entries after the unnamed files");
	return 0;
}

/* bind() a Unix socket at @p path (the kernel makes the name with mknod
 * S_IFSOCK), then connect to it by that name and pass a message. */
static int unix_socket(const char *path)
{
	struct sockaddr_un a;
	char buf[8] = {0};
	int srv, cli = -1, conn = -1, rc = 1;

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "ktfs_probe: %s: path too long\n", path);
		return 1;
	}
	strcpy(a.sun_path, path);
	if ((srv = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		return fail("socket");
	if (bind(srv, (struct sockaddr *)&a, sizeof(a)) != 0)
		fail("bind");
	else if (listen(srv, 1) != 0)
		fail("listen");
	else if ((cli = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
		 connect(cli, (struct sockaddr *)&a, sizeof(a)) != 0)
		fail("connect by the bound name");
	else if (write(cli, "ping", 4) != 4)
		fail("write");
	else if ((conn = accept(srv, NULL, NULL)) < 0)
		fail("accept");
	else if (read(conn, buf, sizeof(buf)) != 4 || memcmp(buf, "ping", 4))
		fail("the message did not pass");
	else
		rc = 0;
	if (conn >= 0)
		close(conn);
	if (cli >= 0)
		close(cli);
	close(srv);
	return rc;
}

/* Each entry of @p dir with the type readdir gives it. */
static int dtypes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char t;

	if (!d)
		return fail("opendir");
	while ((e = readdir(d)) != NULL) {
		switch (e->d_type) {
		case DT_REG: t = 'f'; break;
		case DT_DIR: t = 'd'; break;
		case DT_LNK: t = 'l'; break;
		case DT_FIFO: t = 'p'; break;
		case DT_SOCK: t = 's'; break;
		case DT_CHR: t = 'c'; break;
		case DT_BLK: t = 'b'; break;
		default: t = '?'; break;
		}
		printf("%s %c\n", e->d_name, t);
	}
	closedir(d);
	return 0;
}

/* ---- hard links ---- */

/* link(2) FROM TO: prints 0, or the name of the errno it failed with
 * (ln refuses a directory itself, without asking the filesystem). */
static int link_errno(const char *from, const char *to)
{
	if (link(from, to) == 0)
		printf("0\n");
	else
		printf("%s\n", strerrorname_np(errno));
	return 0;
}

/* @p n bytes at offset @p off of the file @p path must be @p want. */
static int path_is(const char *path, off_t off, const char *want)
{
	char buf[64] = {0};
	size_t n = strlen(want);
	int fd = open(path, O_RDONLY);
	ssize_t got = fd < 0 ? -1 : pread(fd, buf, n, off);

	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)n || memcmp(buf, want, n) != 0) {
		fprintf(stderr, "ktfs_probe: %s holds '%s', want '%s'\n",
			path, got < 0 ? strerror(errno) : buf, want);
		return 1;
	}
	return 0;
}

/* The descriptor @p fd must have link count @p nlink and inode @p ino,
 * and read @p want at offset 0. */
static int fd_is(int fd, nlink_t nlink, ino_t ino, const char *want)
{
	char buf[64] = {0};
	size_t n = strlen(want);
	struct stat st;

	if (fstat(fd, &st) != 0)
		return fail("fstat");
	if (st.st_nlink != nlink || st.st_ino != ino) {
		fprintf(stderr,
			"ktfs_probe: fstat: nlink %ju inode %ju, want %ju "
			"%ju\n",
			(uintmax_t)st.st_nlink, (uintmax_t)st.st_ino,
			(uintmax_t)nlink, (uintmax_t)ino);
		return 1;
	}
	if (pread(fd, buf, n, 0) != (ssize_t)n || memcmp(buf, want, n) != 0) {
		fprintf(stderr, "ktfs_probe: descriptor reads '%s', want "
			"'%s'\n", buf, want);
		return 1;
	}
	return 0;
}

static int put_file(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n = fd < 0 ? -1 : write(fd, data, strlen(data));

	if (fd < 0 || n != (ssize_t)strlen(data) || close(fd) != 0)
		return fail(path);
	return 0;
}

/* A file with two links, open through the first, which is unlinked: the
 * descriptor goes on reading and writing the file, which the second link
 * shows at once (and the descriptor sees writes through it), link count
 * 1; the last link unlinked too, the descriptor still works, link count
 * 0.  Then a file with two links, open, one of which is replaced by a
 * rename: the descriptor and the other link keep the old file. */
static int hardlink_open(const char *dir)
{
	char a[4096], b[4096], c[4096], d[4096], e[4096];
	struct stat st;
	int fd, bad = 0;

	snprintf(a, sizeof(a), "%s/ho-a", dir);
	snprintf(b, sizeof(b), "%s/ho-b", dir);
	snprintf(c, sizeof(c), "%s/ho-c", dir);
	snprintf(d, sizeof(d), "%s/ho-d", dir);
	snprintf(e, sizeof(e), "%s/ho-e", dir);
	if (put_file(a, "0123456789") || link(a, b) != 0 || stat(b, &st) != 0)
		return fail("make ho-a and its link ho-b");
	if ((fd = open(a, O_RDWR)) < 0)
		return fail("open ho-a");
	bad = fd_is(fd, 2, st.st_ino, "0123456789");
	if (!bad && unlink(a) != 0)
		bad = fail("unlink ho-a");
	if (!bad && access(a, F_OK) == 0)
		bad = fail("ho-a still there");
	if (!bad)
		bad = fd_is(fd, 1, st.st_ino, "0123456789");
	if (!bad && pwrite(fd, "XY", 2, 0) != 2)
		bad = fail("write through the descriptor after the unlink");
	if (!bad)
		bad = path_is(b, 0, "XY23456789");
	if (!bad) {
		int fb = open(b, O_WRONLY);

		if (fb < 0 || pwrite(fb, "Z", 1, 9) != 1 || close(fb) != 0)
			bad = fail("write through ho-b");
	}
	if (!bad)
		bad = fd_is(fd, 1, st.st_ino, "XY2345678Z");
	if (!bad && (ftruncate(fd, 4) != 0 || fchmod(fd, 0640) != 0))
		bad = fail("ftruncate and fchmod through the descriptor");
	if (!bad) {
		struct stat sb;

		if (stat(b, &sb) != 0 || sb.st_size != 4 ||
		    (sb.st_mode & 07777) != 0640)
			bad = fail("ho-b after ftruncate and fchmod (size 4, "
				   "mode 0640)");
	}
	/* The last link: the file lives on for the descriptor alone. */
	if (!bad && unlink(b) != 0)
		bad = fail("unlink ho-b");
	if (!bad)
		bad = fd_is(fd, 0, st.st_ino, "XY23");
	if (!bad && pwrite(fd, "W", 1, 4) != 1)
		bad = fail("write after the last unlink");
	if (!bad)
		bad = fd_is(fd, 0, st.st_ino, "XY23W");
	close(fd);
	if (bad)
		return bad;

	/* rename over one link of an open file */
	if (put_file(c, "old") || link(c, d) != 0 || put_file(e, "new") ||
	    stat(c, &st) != 0)
		return fail("make ho-c, its link ho-d, and ho-e");
	if ((fd = open(c, O_RDWR)) < 0)
		return fail("open ho-c");
	if (rename(e, c) != 0)
		bad = fail("rename ho-e over ho-c");
	if (!bad)
		bad = path_is(c, 0, "new") || path_is(d, 0, "old");
	if (!bad)
		bad = fd_is(fd, 1, st.st_ino, "old");
	if (!bad && pwrite(fd, "OLD", 3, 0) != 3)
		bad = fail("write through the descriptor after the rename");
	if (!bad)
		bad = path_is(d, 0, "OLD");
	close(fd);
	if (!bad && (unlink(c) != 0 || unlink(d) != 0))
		bad = fail("unlink ho-c and ho-d");
	return bad;
}

/* ---- store-free ---- */

/* Exit 0 when no process holds the store in @p dir (nobody has a lock on
 * its LOCK file), 1 when one does.  kt_open() of a held store succeeds
 * through the holder, so opening tells nothing about this. */
static int store_free(const char *dir)
{
	char lock[4096];
	struct flock fl;
	int fd;

	snprintf(lock, sizeof(lock), "%s/LOCK", dir);
	if ((fd = open(lock, O_RDONLY | O_CLOEXEC)) < 0)
		return fail("open LOCK");
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_GETLK, &fl) != 0) {
		close(fd);
		return fail("F_GETLK on LOCK");
	}
	close(fd);
	return fl.l_type == F_UNLCK ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "store-free") == 0)
		return store_free(argv[2]);
	if (argc == 4 && strcmp(argv[1], "dump-store") == 0)
		return dump_store(argv[2], argv[3]);
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "dump-tree") == 0)
		return dump_tree(argv[2], argc == 4 ? argv[3] : NULL);
	if (argc == 3 && strcmp(argv[1], "populate") == 0)
		return populate(argv[2]);
	if (argc == 5 && strcmp(argv[1], "rename2") == 0)
		return rename2(argv[2], argv[3], argv[4]);
	if (argc == 3 && strcmp(argv[1], "unlinked") == 0)
		return unlinked(argv[2]);
	if (argc == 3 && strcmp(argv[1], "append") == 0)
		return append(argv[2]);
	if (argc == 3 && strcmp(argv[1], "write-error") == 0)
		return write_error(argv[2]);
	if (argc == 3 && strcmp(argv[1], "fsync") == 0)
		return fsync_check(argv[2]);
	if (argc == 3 && strcmp(argv[1], "stats") == 0)
		return stats(argv[2]);
	if (argc == 3 && strcmp(argv[1], "readdir") == 0)
		return readdir_check(argv[2]);
	if (argc == 3 && strcmp(argv[1], "seekdir") == 0)
		return seekdir_check(argv[2], 2000);
	if (argc == 4 && strcmp(argv[1], "seekdir") == 0 && atoi(argv[3]) >= 20)
		return seekdir_check(argv[2], (size_t)atoi(argv[3]));
	if (argc == 3 && strcmp(argv[1], "orphan-rmdir") == 0)
		return orphan_rmdir(argv[2]);
	if (argc == 3 && strcmp(argv[1], "mknod-file") == 0)
		return mknod_file(argv[2]);
	if (argc == 3 && strcmp(argv[1], "rdonly-trunc") == 0)
		return rdonly_trunc(argv[2]);
	if (argc == 3 && strcmp(argv[1], "tmpfile") == 0)
		return tmpfile_check(argv[2]);
	if (argc == 3 && strcmp(argv[1], "unix-socket") == 0)
		return unix_socket(argv[2]);
	if (argc == 3 && strcmp(argv[1], "dtypes") == 0)
		return dtypes(argv[2]);
	if (argc == 4 && strcmp(argv[1], "link") == 0)
		return link_errno(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "hardlink-open") == 0)
		return hardlink_open(argv[2]);
	fprintf(stderr, "usage: see the opening comment of tests/fuse/probe.c\n");
	return 2;
}
