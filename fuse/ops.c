/*
 * ops.c - the FUSE handlers of keytreefs and their static operations table.
 *
 * keytreefs uses libfuse's high-level (path) API: the kernel's paths are
 * canonical store paths already, and libfuse keeps the inode table and the
 * per-path locks that let unrelated directories proceed in parallel.
 *
 * How store nodes appear:
 * - a directory (with or without a value) is a directory; an item is a
 *   regular file whose content is its value; a link is a symlink;
 * - the value of an item that is also a directory is the file
 *   fs->value_name inside it (default "<delimiter>value"); since every
 *   store name is free of the delimiter, no child can have that name;
 * - inode numbers are node ids (with bit 63 set for the value file);
 * - attributes are "user.*" extended attributes.
 *
 * Files unlinked while open: libfuse (without hard_remove) renames an open
 * file that is unlinked, or replaced by a rename, to ".fuse_hidden<16 hex>"
 * in its directory, and unlinks that name at the last close.  keytreefs
 * turns that rename into kt_orphan_detach (open.c): the name is gone from
 * the store at once (so rm -r of the directory works), nothing moves in
 * the store, and every later operation on the file, through its handles or
 * the hidden name, is served by the orphan's id (kt_orphan_*), with
 * st_nlink 0.  The last release drops the orphan.  hard_remove is not used
 * because with it libfuse 3.14 can no longer name the file for the
 * GETATTR that fstat(2) sends without a handle, and fstat fails (ESTALE).
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "keytreefs.h"

/* Inode numbers of value files: the node id with this bit set. */
#define VALUE_INO_BIT (UINT64_C(1) << 63)

/* The name libfuse gives a file it hides: ".fuse_hidden%08x%08x". */
#define HIDDEN_PREFIX ".fuse_hidden"
#define HIDDEN_LEN (sizeof(HIDDEN_PREFIX) - 1 + 16)

#define XATTR_USER "user."
#define XATTR_USER_LEN (sizeof(XATTR_USER) - 1)

/* Directory offsets: 1 ".", 2 "..", 3 the value file, children from 4. */
#define DIR_OFF_DOT 1
#define DIR_OFF_DOTDOT 2
#define DIR_OFF_VALUE 3
/* How many recent (offset, name) pairs a directory handle remembers, so
 * that telldir/seekdir and the kernel's re-reads can resume. */
#define DIR_RING 1024

/* An open directory (fi->fh): a listing that streams from an iterator and
 * resumes by name, with offsets that are per-handle counters. */
struct ktfs_dir {
	kt_iter *it;      /* children, positioned after the last emitted */
	int stage;        /* next to emit: 0 ".", 1 "..", 2 value, 3 children */
	int done;         /* the iterator is exhausted */
	off_t last;       /* offset of the last entry the kernel accepted */
	off_t counter;    /* the last offset handed out to a child */
	char *after;      /* resume the children after this name (or NULL) */
	struct {          /* the entry fetched but not accepted */
		char *name;
		unsigned int kind;
		uint64_t id;
	} pending;
	struct {
		off_t off;
		char *name;
	} ring[DIR_RING];
};

/* What a FUSE path (or an open file) names in the store. */
struct loc {
	char *path;      /* store path, malloc'd; NULL for an orphan */
	int value;       /* the value file of the item+dir at path */
	int orphan;      /* a file unlinked while open: an orphan */
	uint64_t id;     /* with orphan: the orphan's id */
	uint64_t ino;    /* with orphan: the inode number it had */
	struct ktfs_file *file; /* the open file, or NULL */
};

/* loc_get() flags */
#define LOC_CREATING 1 /* the caller makes the node */
#define LOC_ORPHAN 2   /* the caller serves orphans (libfuse's hidden names) */

static struct ktfs *ktfs_get(void)
{
	return fuse_get_context()->private_data;
}

static const char *base_name(const char *path)
{
	return strrchr(path, '/') + 1;
}

static int is_hidden_name(const char *name)
{
	size_t i, n = sizeof(HIDDEN_PREFIX) - 1;

	if (strlen(name) != HIDDEN_LEN || strncmp(name, HIDDEN_PREFIX, n) != 0)
		return 0;
	for (i = n; i < HIDDEN_LEN; i++)
		if (!strchr("0123456789abcdef", name[i]))
			return 0;
	return 1;
}

/* Translate the FUSE path @fpath.  With LOC_CREATING a name the mount
 * keeps for itself is EPERM (the value file of the root) or EEXIST (a
 * hidden file) rather than ENOENT.  A hidden name of an orphan is the
 * orphan with LOC_ORPHAN (l->path NULL), ENOENT without. */
static int loc_get(struct loc *l, struct ktfs *fs, const char *fpath,
		   int flags)
{
	const char *base = base_name(fpath);
	int creating = (flags & LOC_CREATING) != 0;

	memset(l, 0, sizeof(*l));
	if (is_hidden_name(base) &&
	    ktfs_open_hidden(fs, base, &l->ino, &l->id)) {
		if (!(flags & LOC_ORPHAN))
			return creating ? -EEXIST : -ENOENT;
		l->orphan = 1;
		return 0;
	}
	if (strcmp(base, fs->value_name) == 0) {
		size_t n = (size_t)(base - fpath) - 1;

		if (n == 0) /* the root holds no value */
			return creating ? -EPERM : -ENOENT;
		l->path = strndup(fpath, n);
		l->value = 1;
	} else {
		l->path = strdup(fpath);
	}
	return l->path ? 0 : -ENOMEM;
}

/* As loc_get() for a handler that may have an open file @fi: a file
 * unlinked while open is reached by its orphan id (libfuse passes its
 * hidden name, or NULL once it cannot name it), any other by its current
 * path. */
static int loc_any(struct loc *l, struct ktfs *fs, const char *fpath,
		   struct fuse_file_info *fi)
{
	struct ktfs_file *f =
		fi ? (struct ktfs_file *)(uintptr_t)fi->fh : NULL;
	uint64_t id;
	int rc;

	memset(l, 0, sizeof(*l));
	if (f && ktfs_open_orphan(fs, f->ino, &id)) {
		l->orphan = 1;
		l->id = id;
		l->ino = f->ino;
		l->file = f;
		return 0;
	}
	if (!fpath)
		return -ENOENT;
	rc = loc_get(l, fs, fpath, LOC_ORPHAN);
	l->file = f;
	return rc;
}

static struct timespec ts_of(int64_t ns)
{
	struct timespec t;

	t.tv_sec = ns / 1000000000;
	t.tv_nsec = ns % 1000000000;
	if (t.tv_nsec < 0) {
		t.tv_nsec += 1000000000;
		t.tv_sec--;
	}
	return t;
}

static int ns_of(int64_t *ns, const struct timespec *t)
{
	if (t->tv_sec > INT64_MAX / 1000000000 - 1 ||
	    t->tv_sec < INT64_MIN / 1000000000 + 1)
		return -EINVAL;
	*ns = (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
	return 0;
}

/* The bytes readlink() returns for a link of stored target @target. */
static int link_shows_mountpoint(const struct ktfs *fs, const char *target)
{
	return !fs->abslinks_host && target[0] == '/';
}

/* Fill @st for the node @ks at store path @path.  @value: the node's value
 * file.  Links cost one more read, for the length readlink reports. */
static void fill_stat(struct stat *st, struct ktfs *fs, const char *path,
		      const kt_statbuf *ks, int value)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ks->id;
	st->st_uid = ks->uid;
	st->st_gid = ks->gid;
	st->st_size = (off_t)ks->size;
	st->st_nlink = 1;
	if (value) {
		st->st_ino = ks->id | VALUE_INO_BIT;
		st->st_mode = S_IFREG | (ks->mode & 0666);
	} else if (ks->kind & KT_KIND_LINK) {
		char *target = NULL;

		st->st_mode = S_IFLNK | (ks->mode & 07777);
		if (kt_readlink(&target, NULL, fs->store, path) == 0 &&
		    link_shows_mountpoint(fs, target))
			st->st_size += (off_t)fs->mountpoint_len;
		kt_free(target);
	} else if (ks->kind & KT_KIND_DIR) {
		st->st_mode = S_IFDIR | (ks->mode & 07777);
		st->st_nlink = 2 + ks->nsubdirs;
		st->st_size = 0; /* the value is in the value file */
	} else {
		st->st_mode = S_IFREG | (ks->mode & 07777);
	}
	st->st_blksize = 128 * 1024;
	st->st_blocks = (blkcnt_t)(((uint64_t)st->st_size + 511) / 512);
	st->st_atim = ts_of(ks->atime_ns);
	st->st_mtim = ts_of(ks->mtime_ns);
	st->st_ctim = ts_of(ks->ctime_ns);
}

/* kt_lstat() of what @l names, checking that a value file exists. */
static int loc_stat(kt_statbuf *ks, struct ktfs *fs, const struct loc *l)
{
	int rc = kt_lstat(ks, fs->store, l->path);

	if (rc < 0)
		return ktfs_errno(rc);
	if (l->value && (!(ks->kind & KT_KIND_ITEM) ||
			 !(ks->kind & KT_KIND_DIR)))
		return -ENOENT;
	return 0;
}

static int ktfs_getattr(const char *fpath, struct stat *st,
			struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_get();
	kt_statbuf ks;
	struct loc l;
	int rc;

	if ((rc = loc_any(&l, fs, fpath, fi)) < 0)
		return rc;
	if (l.orphan) {
		/* A regular file without a name: the inode number its handles
		 * had, link count 0. */
		if ((rc = ktfs_errno(kt_orphan_stat(&ks, fs->store, l.id))) ==
		    0) {
			fill_stat(st, fs, NULL, &ks, 0);
			st->st_ino = l.ino;
			st->st_nlink = 0;
		}
	} else if ((rc = loc_stat(&ks, fs, &l)) == 0) {
		fill_stat(st, fs, l.path, &ks, l.value);
	}
	free(l.path);
	return rc;
}

/* Owner and mode of a new node at @path: the caller's uid and gid, mode
 * after the caller's umask; a set-group-ID parent passes on its group (and
 * its set-group-ID bit to new directories). */
static void new_owner(kt_create_options *o, struct ktfs *fs, const char *path,
		      mode_t mode, int is_dir)
{
	struct fuse_context *ctx = fuse_get_context();
	char *parent = strndup(path, (size_t)(base_name(path) - path));
	kt_statbuf ps;

	o->flags |= KT_CREATE_MODE | KT_CREATE_OWNER;
	o->mode = mode & 07777 & ~ctx->umask;
	o->uid = ctx->uid;
	o->gid = ctx->gid;
	if (parent) {
		if (strlen(parent) > 1)
			parent[strlen(parent) - 1] = '\0';
		if (kt_stat(&ps, fs->store, parent) == 0 &&
		    (ps.mode & S_ISGID)) {
			o->gid = ps.gid;
			if (is_dir)
				o->mode |= S_ISGID;
		}
	}
	free(parent);
}

static int ktfs_mkdir(const char *fpath, mode_t mode)
{
	struct ktfs *fs = ktfs_get();
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_statbuf ks;
	struct loc l;
	int rc;

	if ((rc = loc_get(&l, fs, fpath, LOC_CREATING)) < 0)
		return rc;
	if (l.value || kt_lstat(&ks, fs->store, l.path) == 0) {
		rc = -EEXIST;
	} else {
		o.flags = KT_CREATE_EXCL;
		new_owner(&o, fs, l.path, mode, 1);
		rc = ktfs_errno(kt_mkdir(fs->store, l.path, &o));
	}
	free(l.path);
	return rc;
}

/* Register an open of the node @ks in @fi.  (libfuse holds the node's
 * path while open runs, so no unlink can pass between the stat and this
 * count.) */
static int file_open(struct ktfs *fs, struct fuse_file_info *fi,
		     const kt_statbuf *ks, int value)
{
	struct ktfs_file *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->ino = value ? (ks->id | VALUE_INO_BIT) : ks->id;
	f->append = (fi->flags & O_APPEND) != 0;
	if (ktfs_open_get(fs, f->ino) < 0) {
		free(f);
		return -ENOMEM;
	}
	fi->fh = (uintptr_t)f;
	return 0;
}

/* Remember the first failed write or truncate of handle @f, to report it
 * again at flush and fsync (close(2) and fsync(2)): a write the kernel
 * made on the program's behalf (mmap, writeback) has no other way back. */
static int file_error(struct ktfs *fs, struct ktfs_file *f, int rc)
{
	if (rc < 0 && f) {
		ktfs_open_lock(fs);
		if (f->error == 0)
			f->error = rc;
		ktfs_open_unlock(fs);
	}
	return rc;
}

/* The write error of @f not reported yet (0 if none), now reported. */
static int file_take_error(struct ktfs *fs, struct ktfs_file *f)
{
	int rc;

	ktfs_open_lock(fs);
	rc = f->error;
	f->error = 0;
	ktfs_open_unlock(fs);
	return rc;
}

/* O_TRUNC: cut the value, and mark mtime and ctime even when it was
 * already empty, as POSIX asks of open(). */
static int truncate_on_open(struct ktfs *fs, const char *path)
{
	kt_setattr_args a = {0};
	int rc = kt_truncate(fs->store, path, 0);

	if (rc == 0) {
		a.mask = KT_SET_MTIME_NOW;
		rc = kt_setattr(fs->store, path, &a, 0);
	}
	return ktfs_errno(rc);
}

static int ktfs_open(const char *fpath, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_get();
	kt_statbuf ks;
	struct loc l;
	int rc;

	if ((rc = loc_get(&l, fs, fpath, 0)) < 0)
		return rc;
	rc = loc_stat(&ks, fs, &l);
	if (rc == 0 && !l.value && (ks.kind & KT_KIND_DIR))
		rc = -EISDIR;
	if (rc == 0 && (fi->flags & O_TRUNC) &&
	    (fi->flags & O_ACCMODE) != O_RDONLY)
		rc = truncate_on_open(fs, l.path);
	if (rc == 0)
		rc = file_open(fs, fi, &ks, l.value);
	free(l.path);
	return rc;
}

static int ktfs_create(const char *fpath, mode_t mode,
		       struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_get();
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	int excl = (fi->flags & O_EXCL) != 0;
	kt_statbuf ks;
	struct loc l;
	int rc;

	if ((rc = loc_get(&l, fs, fpath, LOC_CREATING)) < 0)
		return rc;
	rc = kt_lstat(&ks, fs->store, l.path);
	if (l.value) {
		/* Give the directory a value: it becomes an item+dir. */
		if (rc < 0)
			rc = ktfs_errno(rc);
		else if (!(ks.kind & KT_KIND_DIR))
			rc = -ENOENT;
		else if (!(ks.kind & KT_KIND_ITEM))
			rc = ktfs_errno(kt_put(fs->store, l.path, NULL, 0,
					       NULL));
		else if (excl)
			rc = -EEXIST;
	} else if (rc == 0) {
		rc = excl ? -EEXIST : (ks.kind & KT_KIND_DIR) ? -EISDIR : 0;
	} else {
		o.flags = KT_CREATE_EXCL;
		new_owner(&o, fs, l.path, mode, 0);
		rc = kt_put(fs->store, l.path, NULL, 0, &o);
		/* O_CREAT without O_EXCL never fails after a lost race. */
		rc = (rc == KT_EEXISTS && !excl) ? 0 : ktfs_errno(rc);
	}
	if (rc == 0 && (rc = loc_stat(&ks, fs, &l)) == 0 &&
	    (fi->flags & O_TRUNC) && ks.size > 0)
		rc = truncate_on_open(fs, l.path);
	if (rc == 0)
		rc = file_open(fs, fi, &ks, l.value);
	free(l.path);
	return rc;
}

/* The last release of a file unlinked while open drops its orphan.  A
 * write error not reported yet is returned (libfuse logs it; close(2) got
 * it from flush). */
static int ktfs_release(const char *fpath, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_get();
	struct ktfs_file *f = (struct ktfs_file *)(uintptr_t)fi->fh;
	int rc = f->error, drop;

	(void)fpath;
	drop = ktfs_open_put(fs, f->ino);
	free(f);
	return rc ? rc : drop;
}

static int ktfs_read(const char *fpath, char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_get();
	size_t n = 0;
	struct loc l;
	int rc;

	if ((rc = loc_any(&l, fs, fpath, fi)) < 0)
		return rc;
	if (l.orphan)
		rc = kt_orphan_read(&n, fs->store, l.id, buf, size,
				    (uint64_t)off);
	else
		rc = kt_read(&n, fs->store, l.path, buf, size, (uint64_t)off);
	free(l.path);
	return rc < 0 ? ktfs_errno(rc) : (int)n;
}

/* An O_APPEND write goes to the end of the value as the store has it,
 * under the library's writer lock (KT_APPEND), so appenders never
 * overwrite each other.  The return is the byte count; the kernel moves
 * the file position past the end it knows, which is the store's end since
 * the mount is the store's only writer. */
static int ktfs_write(const char *fpath, const char *buf, size_t size,
		      off_t off, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_get();
	struct ktfs_file *f = (struct ktfs_file *)(uintptr_t)fi->fh;
	uint64_t at = f->append ? KT_APPEND : (uint64_t)off;
	struct loc l;
	int rc;

	if ((rc = loc_any(&l, fs, fpath, fi)) < 0)
		return file_error(fs, f, rc);
	if (l.orphan)
		rc = kt_orphan_write(fs->store, l.id, buf, size, at);
	else
		rc = kt_write(fs->store, l.path, buf, size, at);
	free(l.path);
	if (rc < 0)
		return file_error(fs, f, ktfs_errno(rc));
	return (int)size;
}

static int ktfs_truncate(const char *fpath, off_t size,
			 struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_get();
	struct loc l;
	int rc;

	if (size < 0)
		return -EINVAL;
	if ((rc = loc_any(&l, fs, fpath, fi)) < 0)
		return rc;
	if (l.orphan)
		rc = kt_orphan_truncate(fs->store, l.id, (uint64_t)size);
	else
		rc = kt_truncate(fs->store, l.path, (uint64_t)size);
	free(l.path);
	return file_error(fs, l.file, ktfs_errno(rc));
}

/* close(2): every write is committed to the store before it is
 * acknowledged, so nothing is left to push; what is left to do is report
 * a write on this handle that failed, once. */
static int ktfs_flush(const char *fpath, struct fuse_file_info *fi)
{
	(void)fpath;
	return file_take_error(ktfs_get(),
			       (struct ktfs_file *)(uintptr_t)fi->fh);
}

/* fsync(2): a failed write on this handle, else make every write so far
 * durable (one synced LevelDB write).  An orphan's rows are synced with
 * the rest. */
static int ktfs_fsync(const char *fpath, int datasync,
		      struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_get();
	int rc = 0;

	(void)fpath;
	(void)datasync;
	if (fi)
		rc = file_take_error(fs,
				     (struct ktfs_file *)(uintptr_t)fi->fh);
	return rc ? rc : ktfs_errno(kt_sync(fs->store));
}

/* Take the file @l out of the tree.  If it has open handles it becomes an
 * orphan for them, known to libfuse as @hidden (or NULL); otherwise, if
 * @or_delete, it (or an item+dir's value) is deleted, and if not, ENOENT.
 * The value of an item+dir is copied into the orphan, since it cannot be
 * detached without its directory. */
static int orphan_unlink(struct ktfs *fs, const struct loc *l,
			 const char *hidden, int or_delete)
{
	kt_statbuf ks;
	uint64_t ino;
	int rc;

	ktfs_open_lock(fs);
	if ((rc = loc_stat(&ks, fs, l)) < 0)
		goto out;
	ino = l->value ? (ks.id | VALUE_INO_BIT) : ks.id;
	if (ktfs_open_busy(fs, ino) == 0) {
		rc = or_delete ? ktfs_errno(kt_delete(
					 fs->store, l->path,
					 l->value ? KT_DELETE_ITEM : 0))
			       : -ENOENT;
	} else if (!l->value) {
		rc = ktfs_orphan_make(fs, ino, l->path, KTFS_ORPHAN_DETACH,
				      hidden);
	} else if ((rc = ktfs_orphan_make(fs, ino, l->path, KTFS_ORPHAN_COPY,
					  hidden)) == 0) {
		rc = ktfs_errno(kt_delete(fs->store, l->path, KT_DELETE_ITEM));
		if (rc < 0)
			ktfs_orphan_unmake(fs, ino);
	}
out:
	ktfs_open_unlock(fs);
	return rc;
}

/* Unlink.  (libfuse hides an open file instead; see the top.) */
static int ktfs_unlink(const char *fpath)
{
	struct ktfs *fs = ktfs_get();
	struct loc l;
	int rc;

	if ((rc = loc_get(&l, fs, fpath, LOC_ORPHAN)) < 0)
		return rc;
	if (l.orphan) /* libfuse's hidden name: the last release drops it */
		return 0;
	rc = orphan_unlink(fs, &l, NULL, 1);
	free(l.path);
	return rc;
}

static int ktfs_rmdir(const char *fpath)
{
	struct ktfs *fs = ktfs_get();
	kt_statbuf ks;
	struct loc l;
	int rc;

	if ((rc = loc_get(&l, fs, fpath, 0)) < 0)
		return rc;
	if (l.value)
		rc = -ENOTDIR;
	else if ((rc = loc_stat(&ks, fs, &l)) < 0)
		;
	else if (!(ks.kind & KT_KIND_DIR))
		rc = -ENOTDIR;
	else if (ks.kind & KT_KIND_ITEM) /* it holds its value file */
		rc = -ENOTEMPTY;
	else
		rc = ktfs_errno(kt_delete(fs->store, l.path, 0));
	free(l.path);
	return rc;
}

static int ktfs_symlink(const char *target, const char *fpath)
{
	struct ktfs *fs = ktfs_get();
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	struct fuse_context *ctx = fuse_get_context();
	struct loc l;
	int rc;

	if ((rc = loc_get(&l, fs, fpath, LOC_CREATING)) < 0)
		return rc;
	if (l.value) {
		free(l.path);
		return -EEXIST;
	}
	/* A target inside the mount is kept as the store path it names. */
	if (!fs->abslinks_host && fs->mountpoint_len > 1 &&
	    strncmp(target, fs->mountpoint, fs->mountpoint_len) == 0 &&
	    target[fs->mountpoint_len] == '/')
		target += fs->mountpoint_len;
	o.flags = KT_CREATE_OWNER;
	o.uid = ctx->uid;
	o.gid = ctx->gid;
	rc = ktfs_errno(kt_symlink(fs->store, l.path, target, &o));
	free(l.path);
	return rc;
}

static int ktfs_readlink(const char *fpath, char *buf, size_t size)
{
	struct ktfs *fs = ktfs_get();
	char *target = NULL;
	struct loc l;
	int rc;

	if (size == 0)
		return -EINVAL;
	if ((rc = loc_get(&l, fs, fpath, 0)) < 0)
		return rc;
	rc = ktfs_errno(kt_readlink(&target, NULL, fs->store, l.path));
	if (rc == 0)
		snprintf(buf, size, "%s%s",
			 link_shows_mountpoint(fs, target) ? fs->mountpoint
							    : "",
			 target);
	kt_free(target);
	free(l.path);
	return rc;
}

/* A rename from or to a value file: the value is copied in one atomic
 * batch (so the cost is the value's size, and a moved file gets a new
 * inode number).  RENAME_EXCHANGE is not supported here (EINVAL). */
static int value_rename(struct ktfs *fs, const struct loc *from,
			const struct loc *to, unsigned int flags)
{
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_statbuf fs_, ts;
	kt_batch *b = NULL;
	void *val = NULL;
	size_t len = 0;
	int rc, dst_exists;

	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	if ((rc = loc_stat(&fs_, fs, from)) < 0)
		return rc;
	if (!from->value && (fs_.kind & (KT_KIND_DIR | KT_KIND_LINK)))
		return (fs_.kind & KT_KIND_DIR) ? -EISDIR : -EINVAL;
	rc = kt_lstat(&ts, fs->store, to->path);
	if (to->value && rc < 0)
		return ktfs_errno(rc);
	dst_exists = to->value ? (ts.kind & KT_KIND_ITEM) != 0 : rc == 0;
	if (!to->value && dst_exists && (ts.kind & KT_KIND_DIR))
		return -EISDIR;
	if (dst_exists && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (from->value == to->value && strcmp(from->path, to->path) == 0)
		return 0;
	o.flags = KT_CREATE_MODE | KT_CREATE_OWNER;
	o.mode = fs_.mode & 0666;
	o.uid = fs_.uid;
	o.gid = fs_.gid;
	if ((rc = kt_get(&val, &len, fs->store, from->path)) == 0 &&
	    (rc = kt_batch_new(&b, fs->store)) == 0 &&
	    (!dst_exists || to->value ||
	     (rc = kt_batch_delete(b, to->path, 0)) == 0) &&
	    (rc = kt_batch_put(b, to->path, val, len, &o)) == 0 &&
	    (rc = kt_batch_delete(b, from->path,
				  from->value ? KT_DELETE_ITEM : 0)) == 0)
		rc = kt_batch_commit(b);
	kt_batch_free(b);
	kt_free(val);
	return ktfs_errno(rc);
}

/* A rename between two plain paths (no value file). */
static int plain_rename(struct ktfs *fs, const char *from, const char *to,
			unsigned int flags)
{
	unsigned int kflags = 0;
	kt_statbuf ks, ds;

	if (flags & RENAME_NOREPLACE)
		kflags |= KT_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		kflags |= KT_RENAME_EXCHANGE;
	/* An item+dir target holds its value file: not empty. */
	if (!(flags & (RENAME_EXCHANGE | RENAME_NOREPLACE)) &&
	    kt_lstat(&ks, fs->store, from) == 0 && (ks.kind & KT_KIND_DIR) &&
	    kt_lstat(&ds, fs->store, to) == 0 && (ds.kind & KT_KIND_DIR) &&
	    (ds.kind & KT_KIND_ITEM) && ks.id != ds.id)
		return -ENOTEMPTY;
	return ktfs_errno(kt_rename(fs->store, from, to, kflags));
}

static int ktfs_rename(const char *ffrom, const char *fto, unsigned int flags)
{
	struct ktfs *fs = ktfs_get();
	struct loc from, to;
	int rc;

	if (flags & ~(unsigned int)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((rc = loc_get(&from, fs, ffrom, 0)) < 0)
		return rc;
	/* libfuse hiding an open file that is unlinked or replaced: it goes
	 * out of the tree as an orphan, and the hidden name maps to it.  In
	 * a rename over an open file, libfuse hides the target first and
	 * then renames the source: the source is never at risk. */
	if (flags == 0 && is_hidden_name(base_name(fto))) {
		rc = orphan_unlink(fs, &from, base_name(fto), 0);
		if (rc != -ENOENT) {
			free(from.path);
			return rc;
		}
	}
	if ((rc = loc_get(&to, fs, fto, LOC_CREATING)) < 0) {
		free(from.path);
		return rc;
	}
	if (from.value || to.value)
		rc = value_rename(fs, &from, &to, flags);
	else
		rc = plain_rename(fs, from.path, to.path, flags);
	free(from.path);
	free(to.path);
	return rc;
}

static int ktfs_link(const char *from, const char *to)
{
	(void)from;
	(void)to;
	return -EPERM; /* keytree has no hard links */
}

/* Only regular files (through create), directories and links exist in a
 * store: device nodes, FIFOs and sockets are refused. */
static int ktfs_mknod(const char *fpath, mode_t mode, dev_t rdev)
{
	(void)fpath;
	(void)mode;
	(void)rdev;
	return -EPERM;
}

static int setattr_path(const char *fpath, struct fuse_file_info *fi,
			const kt_setattr_args *a, int value_ok)
{
	struct ktfs *fs = ktfs_get();
	struct loc l;
	int rc;

	if ((rc = loc_any(&l, fs, fpath, fi)) < 0)
		return rc;
	if (l.orphan)
		rc = ktfs_errno(kt_orphan_setattr(fs->store, l.id, a));
	else if (l.value && !value_ok)
		rc = -EPERM; /* mode and owner belong to the directory */
	else
		rc = ktfs_errno(
			kt_setattr(fs->store, l.path, a,
				   l.value ? 0 : KT_NOFOLLOW));
	free(l.path);
	return rc;
}

static int ktfs_chmod(const char *fpath, mode_t mode,
		      struct fuse_file_info *fi)
{
	kt_setattr_args a = {0};

	a.mask = KT_SET_MODE;
	a.mode = mode & 07777;
	return setattr_path(fpath, fi, &a, 0);
}

static int ktfs_chown(const char *fpath, uid_t uid, gid_t gid,
		      struct fuse_file_info *fi)
{
	kt_setattr_args a = {0};

	if (uid != (uid_t)-1) {
		a.mask |= KT_SET_UID;
		a.uid = uid;
	}
	if (gid != (gid_t)-1) {
		a.mask |= KT_SET_GID;
		a.gid = gid;
	}
	return setattr_path(fpath, fi, &a, 0);
}

static int ktfs_utimens(const char *fpath, const struct timespec tv[2],
			struct fuse_file_info *fi)
{
	kt_setattr_args a = {0};
	int rc;

	if (!tv) {
		a.mask = KT_SET_ATIME_NOW | KT_SET_MTIME_NOW;
	} else {
		if (tv[0].tv_nsec == UTIME_NOW)
			a.mask |= KT_SET_ATIME_NOW;
		else if (tv[0].tv_nsec != UTIME_OMIT) {
			if ((rc = ns_of(&a.atime_ns, &tv[0])) < 0)
				return rc;
			a.mask |= KT_SET_ATIME;
		}
		if (tv[1].tv_nsec == UTIME_NOW)
			a.mask |= KT_SET_MTIME_NOW;
		else if (tv[1].tv_nsec != UTIME_OMIT) {
			if ((rc = ns_of(&a.mtime_ns, &tv[1])) < 0)
				return rc;
			a.mask |= KT_SET_MTIME;
		}
	}
	if (a.mask == 0)
		return 0;
	return setattr_path(fpath, fi, &a, 1);
}

static int ktfs_statfs(const char *fpath, struct statvfs *sv)
{
	struct ktfs *fs = ktfs_get();

	(void)fpath;
	if (statvfs(fs->store_dir, sv) < 0)
		return -errno;
	sv->f_namemax = KT_NAME_MAX;
	sv->f_flag = 0;
	return 0;
}

/* The attribute name for xattr @name, or NULL outside "user.". */
static const char *attr_name(const char *name)
{
	if (strncmp(name, XATTR_USER, XATTR_USER_LEN) != 0 ||
	    name[XATTR_USER_LEN] == '\0')
		return NULL;
	return name + XATTR_USER_LEN;
}

static int ktfs_setxattr(const char *fpath, const char *name,
			 const char *value, size_t size, int flags)
{
	struct ktfs *fs = ktfs_get();
	const char *an = attr_name(name);
	unsigned int kflags = 0;
	struct loc l;
	int rc;

	if (!an)
		return -ENOTSUP;
	if (flags & XATTR_CREATE)
		kflags |= KT_ATTR_CREATE;
	if (flags & XATTR_REPLACE)
		kflags |= KT_ATTR_REPLACE;
	if ((rc = loc_get(&l, fs, fpath, 0)) < 0)
		return rc;
	rc = kt_attr_set(fs->store, l.path, an, value, size, kflags);
	free(l.path);
	return rc == KT_ETOOBIG ? -E2BIG : ktfs_errno(rc);
}

static int ktfs_getxattr(const char *fpath, const char *name, char *value,
			 size_t size)
{
	struct ktfs *fs = ktfs_get();
	const char *an = attr_name(name);
	void *v = NULL;
	size_t len = 0;
	struct loc l;
	int rc;

	/* Answered without touching the store: security.capability is asked
	 * for on every write. */
	if (!an)
		return -ENODATA;
	if ((rc = loc_get(&l, fs, fpath, 0)) < 0)
		return rc;
	rc = ktfs_errno(kt_attr_get(&v, &len, fs->store, l.path, an));
	if (rc == 0) {
		if (size == 0)
			rc = (int)len;
		else if (size < len)
			rc = -ERANGE;
		else {
			memcpy(value, v, len);
			rc = (int)len;
		}
	}
	kt_free(v);
	free(l.path);
	return rc;
}

static int ktfs_listxattr(const char *fpath, char *list, size_t size)
{
	struct ktfs *fs = ktfs_get();
	const kt_entry *e;
	kt_iter *it = NULL;
	kt_statbuf ks;
	size_t total = 0;
	struct loc l;
	int rc;

	if ((rc = loc_get(&l, fs, fpath, 0)) < 0)
		return rc;
	if ((rc = loc_stat(&ks, fs, &l)) < 0 || (ks.kind & KT_KIND_LINK))
		goto out; /* links carry no user attributes */
	if ((rc = kt_attr_iter_new(&it, fs->store, l.path)) < 0) {
		rc = ktfs_errno(rc);
		goto out;
	}
	while ((rc = kt_iter_next(&e, it)) == 0) {
		size_t n = XATTR_USER_LEN + e->name_len + 1;

		if (size) {
			if (total + n > size) {
				rc = -ERANGE;
				goto out;
			}
			memcpy(list + total, XATTR_USER, XATTR_USER_LEN);
			memcpy(list + total + XATTR_USER_LEN, e->name,
			       e->name_len + 1);
		}
		total += n;
	}
	rc = rc == KT_ITEROVER ? (int)total : ktfs_errno(rc);
out:
	kt_iter_free(it);
	free(l.path);
	return rc;
}

static int ktfs_removexattr(const char *fpath, const char *name)
{
	struct ktfs *fs = ktfs_get();
	const char *an = attr_name(name);
	struct loc l;
	int rc;

	if (!an)
		return -ENODATA;
	if ((rc = loc_get(&l, fs, fpath, 0)) < 0)
		return rc;
	rc = ktfs_errno(kt_attr_delete(fs->store, l.path, an));
	free(l.path);
	return rc;
}

static int ktfs_opendir(const char *fpath, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_get();
	struct ktfs_dir *d;
	kt_statbuf ks;
	struct loc l;
	int rc;

	if ((rc = loc_get(&l, fs, fpath, 0)) < 0)
		return rc;
	rc = loc_stat(&ks, fs, &l);
	free(l.path);
	if (rc < 0)
		return rc;
	if (l.value || !(ks.kind & KT_KIND_DIR))
		return -ENOTDIR;
	if (!(d = calloc(1, sizeof(*d))))
		return -ENOMEM;
	d->counter = DIR_OFF_VALUE;
	fi->fh = (uintptr_t)d;
	return 0;
}

static void dir_reset_children(struct ktfs_dir *d)
{
	kt_iter_free(d->it);
	d->it = NULL;
	d->done = 0;
	free(d->pending.name);
	d->pending.name = NULL;
	free(d->after);
	d->after = NULL;
}

/* Position @d to continue after offset @off. */
static int dir_seek(struct ktfs_dir *d, off_t off)
{
	dir_reset_children(d);
	d->last = off;
	if (off < DIR_OFF_VALUE) {
		d->stage = (int)off;
		return 0;
	}
	d->stage = 3;
	if (off == DIR_OFF_VALUE)
		return 0;
	if (d->ring[off % DIR_RING].off != off)
		return -EINVAL; /* a cookie too old to resume */
	d->after = strdup(d->ring[off % DIR_RING].name);
	return d->after ? 0 : -ENOMEM;
}

/* Fetch the next child into d->pending; 1 at the end. */
static int dir_next(struct ktfs *fs, struct ktfs_dir *d, const char *dpath)
{
	kt_list_options lo = KT_LIST_OPTIONS_INIT;
	const kt_entry *e;
	int rc;

	if (d->pending.name)
		return 0;
	if (d->done)
		return 1;
	if (!d->it) {
		lo.after = d->after;
		lo.after_len = d->after ? strlen(d->after) : 0;
		if ((rc = kt_iter_new(&d->it, fs->store, dpath, &lo)) < 0)
			return ktfs_errno(rc);
	}
	rc = kt_iter_next(&e, d->it);
	if (rc == KT_ITEROVER) {
		d->done = 1;
		return 1;
	}
	if (rc < 0)
		return ktfs_errno(rc);
	if (!(d->pending.name = strdup(e->name)))
		return -ENOMEM;
	d->pending.kind = e->kind;
	d->pending.id = e->id;
	return 0;
}

static char *child_path(const char *dir, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name) < 0)
		return NULL;
	return p;
}

/* The stat of the next child for the filler: the full attributes when
 * @plus, else the type and inode number.  1: the child is gone. */
static int child_stat(struct stat *st, struct ktfs *fs, const char *dpath,
		      const struct ktfs_dir *d, int plus)
{
	kt_statbuf ks;
	char *p;
	int rc;

	memset(st, 0, sizeof(*st));
	if (!plus) {
		st->st_ino = d->pending.id;
		st->st_mode = (d->pending.kind & KT_KIND_LINK)  ? S_IFLNK
			      : (d->pending.kind & KT_KIND_DIR) ? S_IFDIR
								: S_IFREG;
		return 0;
	}
	if (!(p = child_path(dpath, d->pending.name)))
		return -ENOMEM;
	rc = kt_lstat(&ks, fs->store, p);
	if (rc == 0)
		fill_stat(st, fs, p, &ks, 0);
	free(p);
	return rc == KT_ENOTFOUND ? 1 : ktfs_errno(rc);
}

/* Emit ".", ".." and the value file from stage d->stage on.  1: the
 * kernel's buffer is full. */
static int dir_fill_special(struct ktfs *fs, struct ktfs_dir *d,
			    const char *dpath, void *buf,
			    fuse_fill_dir_t filler, int plus)
{
	kt_statbuf ks;
	struct stat st;
	int rc;

	if ((rc = kt_lstat(&ks, fs->store, dpath)) < 0)
		return ktfs_errno(rc);
	if (d->stage == 0) {
		memset(&st, 0, sizeof(st));
		st.st_ino = ks.id;
		st.st_mode = S_IFDIR;
		if (filler(buf, ".", &st, DIR_OFF_DOT, 0))
			return 1;
		d->last = DIR_OFF_DOT;
		d->stage = 1;
	}
	if (d->stage == 1) {
		kt_statbuf ps;
		char *parent = strdup(dpath);

		if (!parent)
			return -ENOMEM;
		*strrchr(parent, '/') = '\0';
		memset(&st, 0, sizeof(st));
		st.st_ino = kt_lstat(&ps, fs->store,
				     parent[0] ? parent : "/") == 0
				    ? ps.id
				    : ks.id;
		st.st_mode = S_IFDIR;
		free(parent);
		if (filler(buf, "..", &st, DIR_OFF_DOTDOT, 0))
			return 1;
		d->last = DIR_OFF_DOTDOT;
		d->stage = 2;
	}
	if (d->stage == 2) {
		if (ks.kind & KT_KIND_ITEM) {
			fill_stat(&st, fs, dpath, &ks, 1);
			if (!plus)
				st.st_mode &= S_IFMT;
			if (filler(buf, fs->value_name, &st, DIR_OFF_VALUE,
				   plus ? FUSE_FILL_DIR_PLUS : 0))
				return 1;
		}
		d->last = DIR_OFF_VALUE;
		d->stage = 3;
	}
	return 0;
}

static int ktfs_readdir(const char *fpath, void *buf, fuse_fill_dir_t filler,
			off_t off, struct fuse_file_info *fi,
			enum fuse_readdir_flags flags)
{
	struct ktfs *fs = ktfs_get();
	struct ktfs_dir *d = (struct ktfs_dir *)(uintptr_t)fi->fh;
	int plus = (flags & FUSE_READDIR_PLUS) != 0;
	struct stat st;
	struct loc l;
	int rc;

	if (!fpath)
		return 0; /* removed while open: nothing is left in it */
	if ((rc = loc_get(&l, fs, fpath, 0)) < 0)
		return rc;
	if ((off == 0 || off != d->last) && (rc = dir_seek(d, off)) < 0)
		goto out;
	if (d->stage < 3 &&
	    (rc = dir_fill_special(fs, d, l.path, buf, filler, plus)) != 0) {
		rc = rc > 0 ? 0 : rc;
		goto out;
	}
	while ((rc = dir_next(fs, d, l.path)) == 0) {
		off_t next = d->counter + 1;
		size_t slot = (size_t)(next % DIR_RING);

		if ((rc = child_stat(&st, fs, l.path, d, plus)) < 0)
			goto out;
		if (rc == 0) {
			if (filler(buf, d->pending.name, &st, next,
				   plus ? FUSE_FILL_DIR_PLUS : 0))
				break; /* full: keep the pending entry */
			d->counter = next;
			d->last = next;
			free(d->ring[slot].name);
			d->ring[slot].name = d->pending.name;
			d->ring[slot].off = next;
		} else {
			free(d->pending.name);
		}
		d->pending.name = NULL;
	}
	rc = rc > 0 ? 0 : rc;
out:
	free(l.path);
	return rc;
}

static int ktfs_releasedir(const char *fpath, struct fuse_file_info *fi)
{
	struct ktfs_dir *d = (struct ktfs_dir *)(uintptr_t)fi->fh;
	size_t i;

	(void)fpath;
	dir_reset_children(d);
	for (i = 0; i < DIR_RING; i++)
		free(d->ring[i].name);
	free(d);
	return 0;
}

/* fsync(2) of a directory: its entries are rows like any other, and one
 * synced write makes every earlier write durable. */
static int ktfs_fsyncdir(const char *fpath, int datasync,
			 struct fuse_file_info *fi)
{
	(void)fpath;
	(void)datasync;
	(void)fi;
	return ktfs_errno(kt_sync(ktfs_get()->store));
}

static void *ktfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1;         /* st_ino is the node id */
	cfg->readdir_ino = 0;
	/* See "Files unlinked while open" above.  nullpath_ok stays off: in
	 * libfuse 3.14 it withholds the path from every operation on a
	 * handle, and the library reaches only orphans by id.  Without it
	 * libfuse passes the current path of a handle, and NULL for one
	 * whose file it can no longer name (a hidden file in a directory
	 * removed since), which is then served through fi->fh. */
	cfg->hard_remove = 0;
	cfg->nullpath_ok = 0;
	cfg->kernel_cache = 1;    /* the mount is the store's only writer */
	/* Every listing is a readdirplus: ls -l needs no GETATTR. */
	conn->want &= ~(unsigned int)FUSE_CAP_READDIRPLUS_AUTO;
	return fuse_get_context()->private_data;
}

const struct fuse_operations ktfs_ops = {
	.init = ktfs_init,
	.getattr = ktfs_getattr,
	.readlink = ktfs_readlink,
	.mknod = ktfs_mknod,
	.mkdir = ktfs_mkdir,
	.unlink = ktfs_unlink,
	.rmdir = ktfs_rmdir,
	.symlink = ktfs_symlink,
	.rename = ktfs_rename,
	.link = ktfs_link,
	.chmod = ktfs_chmod,
	.chown = ktfs_chown,
	.truncate = ktfs_truncate,
	.open = ktfs_open,
	.read = ktfs_read,
	.write = ktfs_write,
	.statfs = ktfs_statfs,
	.flush = ktfs_flush,
	.release = ktfs_release,
	.fsync = ktfs_fsync,
	.setxattr = ktfs_setxattr,
	.getxattr = ktfs_getxattr,
	.listxattr = ktfs_listxattr,
	.removexattr = ktfs_removexattr,
	.opendir = ktfs_opendir,
	.readdir = ktfs_readdir,
	.releasedir = ktfs_releasedir,
	.fsyncdir = ktfs_fsyncdir,
	.create = ktfs_create,
	.utimens = ktfs_utimens,
};
