/*
 * file.c - regular files of keytreefs: open, create, read, write, flush,
 * release and fsync.
 *
 * A handle (struct ktfs_file, fi->fh) points at its inode's entry in the
 * open table (open.c).  Reads and writes resolve the inode each time
 * (node.c), so a file that is renamed, or whose directory is, while open
 * keeps working; one unlinked while open is served by its orphan id.
 * Every write is committed to the store before it is acknowledged.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keytreefs.h"

static struct ktfs_file *file_of(const struct fuse_file_info *fi)
{
	return fi ? (struct ktfs_file *)(uintptr_t)fi->fh : NULL;
}

int ktfs_file_error(struct ktfs *fs, struct ktfs_file *f, int rc)
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

/* List @p f among the handles the kernel has. */
static void file_track(struct ktfs *fs, struct ktfs_file *f)
{
	ktfs_open_lock(fs);
	f->next = fs->files;
	if (f->next != NULL)
		f->next->pprev = &f->next;
	fs->files = f;
	f->pprev = &fs->files;
	ktfs_open_unlock(fs);
}

/* Take @p f off that list (it may not be on it) and free it. */
static void file_free(struct ktfs *fs, struct ktfs_file *f)
{
	ktfs_open_lock(fs);
	if (f->pprev != NULL) {
		*f->pprev = f->next;
		if (f->next != NULL)
			f->next->pprev = f->pprev;
	}
	ktfs_open_unlock(fs);
	free(f);
}

void ktfs_files_free(struct ktfs *fs)
{
	struct ktfs_file *f;

	while ((f = fs->files) != NULL) {
		(void)ktfs_open_put(fs, f->open);
		file_free(fs, f);
	}
}

/* Register an open of inode @ino in @fi.  The handle is counted first and
 * the node checked afterwards: an unlink in this mount decides under the
 * open table's lock, so it either sees this handle (and keeps an orphan),
 * or has made an orphan for other handles before this one was counted
 * (and the open joins it, ktfs_open_get), or has removed the node (and
 * the open fails).
 * @how: how the open began, KTFS_OPEN_*.  The node read goes to @out
 * (NULL: dropped); a directory that is not a value file is refused
 * (EISDIR). */
static int file_open(struct ktfs *fs, struct fuse_file_info *fi, uint64_t ino,
		     int how, struct ktfs_node *out)
{
	struct ktfs_file *f = calloc(1, sizeof(*f));
	struct ktfs_node n;
	int err;

	if (!f)
		return -ENOMEM;
	f->append = (fi->flags & O_APPEND) != 0;
	if (!(f->open = ktfs_open_get(fs, ino, how, &err))) {
		free(f);
		return err;
	}
	if ((err = ktfs_node_get(&n, fs, ino, f)) == 0 && !n.value &&
	    !n.orphan && (n.st.kind & KT_KIND_DIR)) {
		ktfs_node_free(&n);
		err = -EISDIR;
	}
	if (err < 0) {
		ktfs_open_put(fs, f->open);
		free(f);
		return err;
	}
	if (out != NULL)
		*out = n;
	else
		ktfs_node_free(&n);
	fi->fh = (uintptr_t)f;
	file_track(fs, f);
	/* Other writers (another mount, the CLI) tell the kernel what they
	 * change; this mount's writes go through the page cache. */
	fi->keep_cache = 1;
	return 0;
}

/* O_TRUNC: cut the value, and mark mtime and ctime even when it was
 * already empty, as POSIX asks of open(). */
static int truncate_on_open(struct ktfs *fs, uint64_t id)
{
	kt_setattr_args a = KT_SETATTR_ARGS_INIT;
	int rc = kt_id_truncate(fs->store, id, 0);

	if (rc == 0) {
		a.mask = KT_SET_MTIME_NOW;
		rc = kt_id_setattr(NULL, fs->store, id, &a);
	}
	return ktfs_errno(rc);
}

/*
 * Close-to-open, as NFS promises it: an open() that begins after a close()
 * on another host returns, reads what was written before that close.
 * Every write is in the store before it is acknowledged, and the writer's
 * notify makes this kernel drop the file's cache (watch.c), but the notify
 * may still be on the way when the open comes.  So an open compares the
 * file's version (kt_statbuf.version, which every write changes) with the
 * version the kernel's cache is known to hold (recorded at the last open
 * here, and forgotten at the close of a handle that wrote through this
 * mount, whose pages cannot be told from another host's write), and
 * when they differ drops the file's attributes before the open returns:
 * the kernel reads them again at the first read, sees the new mtime and
 * size, and drops the pages itself (auto_inval_data, ops.c).  Dropping
 * the pages from here could deadlock: the kernel would wait for pages
 * that a read in flight keeps locked, and that read waits for a worker
 * (all of them, with -s).  A file opened again without a write in
 * between keeps its cache.
 */
static int seen_slot(uint64_t ino)
{
	return (int)((ino * 0x9e3779b97f4a7c15ULL) >> 52) &
	       (KTFS_SEEN_SLOTS - 1);
}

/* Record that the kernel's cache of @p ino holds @p version; with
 * @p check, first say whether it was known to hold that already. */
static int seen_note(struct ktfs *fs, uint64_t ino, uint64_t version,
		     int check)
{
	int i = seen_slot(ino), same;

	ktfs_open_lock(fs);
	same = fs->seen[i].ino == ino && fs->seen[i].version == version;
	fs->seen[i].ino = ino;
	fs->seen[i].version = version;
	ktfs_open_unlock(fs);
	return !check || same;
}

static void seen_forget(struct ktfs *fs, uint64_t ino)
{
	int i = seen_slot(ino);

	ktfs_open_lock(fs);
	if (fs->seen[i].ino == ino)
		fs->seen[i].ino = 0;
	ktfs_open_unlock(fs);
}

/* For tests (orphans.sh): with KEYTREEFS_TEST_OPEN_PAUSE=PATH, an OPEN
 * that finds the file PATH, between its look at the open table and the
 * count of its handle, makes PATH.held and waits (up to 30 s) until PATH
 * is removed, so that a test can unlink the file right there. */
static const char *open_pause_path;
static pthread_once_t open_pause_once = PTHREAD_ONCE_INIT;

static void open_pause_read(void)
{
	open_pause_path = getenv("KEYTREEFS_TEST_OPEN_PAUSE");
}

static void open_pause(void)
{
	char held[PATH_MAX + 8];
	int fd, i;

	pthread_once(&open_pause_once, open_pause_read);
	if (open_pause_path == NULL || access(open_pause_path, F_OK) != 0)
		return;
	snprintf(held, sizeof(held), "%s.held", open_pause_path);
	if ((fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
		close(fd);
	for (i = 0; i < 3000 && access(open_pause_path, F_OK) == 0; i++)
		usleep(10000);
	unlink(held);
}

void ktfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	struct ktfs_node n;
	uint64_t oid;
	int rc, orphan;

	/* The node is read once, after the open is counted (file_open). */
	memset(&n, 0, sizeof(n));
	orphan = ktfs_open_orphan(fs, NULL, ino, &oid);
	open_pause();
	rc = file_open(fs, fi, ino, orphan ? KTFS_OPEN_ORPHAN : KTFS_OPEN_NAMED,
		       &n);
	if (rc == 0 && !n.orphan && !seen_note(fs, ino, n.st.version, 1)) {
		struct fuse_session *se =
			__atomic_load_n(&fs->se, __ATOMIC_ACQUIRE);
		if (se != NULL)
			fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);
	}
	/* Linux truncates on O_TRUNC whatever the access mode (it has
	 * checked write permission), and with atomic O_TRUNC it counts on
	 * the OPEN to have done it. */
	if (rc == 0 && (fi->flags & O_TRUNC)) {
		if (ktfs_open_orphan(fs, file_of(fi)->open, ino, &n.id))
			rc = ktfs_errno(kt_orphan_truncate(fs->store, n.id, 0));
		else
			rc = truncate_on_open(fs, ino & ~KTFS_VALUE_BIT);
		if (rc == -EISDIR)
			rc = -ENOENT;
		if (rc < 0) {
			ktfs_open_put(fs, file_of(fi)->open);
			file_free(fs, file_of(fi));
		} else {
			file_of(fi)->wrote = 1;
		}
	}
	ktfs_node_free(&n);
	if (rc < 0)
		ktfs_reply_err(req, rc);
	else if (fuse_reply_open(req, fi) != 0) {
		/* Interrupted: the kernel sends no release for it. */
		ktfs_open_put(fs, file_of(fi)->open);
		file_free(fs, file_of(fi));
	}
}

/* New files belong to the caller, with the mode after its umask; a
 * set-group-ID parent @ps passes on its group. */
static void new_file_owner(kt_create_options *o, fuse_req_t req,
			   const kt_statbuf *ps, mode_t mode)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	o->flags |= KT_CREATE_MODE | KT_CREATE_OWNER;
	o->mode = mode & 07777 & ~ctx->umask;
	o->uid = ctx->uid;
	o->gid = (ps->mode & S_ISGID) ? ps->gid : ctx->gid;
}

/* Create (or, without O_EXCL, open) @name in the directory @dir; the
 * stat of the file in @st.  A new file is made in one exclusive step
 * (kt_make_at); without O_EXCL an existing file is opened instead, and a
 * name that vanished in between is tried again.  The value file gives
 * its directory a value, by the directory's id. */
static int create_in(struct ktfs *fs, fuse_req_t req, const struct ktfs_node *dir,
		     const char *name, mode_t mode, int flags, struct stat *st)
{
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	int excl = (flags & O_EXCL) != 0, value = 0, rc = 0, tries;
	kt_make_args a;
	kt_statbuf ks;

	if (ktfs_is_value_name(fs, name)) {
		if (dir->st.id == 1)
			return -EPERM; /* the root holds no value */
		value = 1;
		o.flags = KT_CREATE_EXCL;
		rc = kt_id_put(fs->store, dir->st.id, NULL, 0, &o);
		if (rc == KT_EEXISTS && !excl)
			rc = 0;
		rc = ktfs_errno(rc);
		if (rc == 0)
			rc = ktfs_errno(kt_id_lstat(&ks, NULL, NULL, fs->store,
						    dir->st.id));
	} else {
		memset(&a, 0, sizeof(a));
		a.version = KT_MAKE_ARGS_VERSION;
		a.kind = KT_KIND_ITEM;
		a.create = o;
		new_file_owner(&a.create, req, &dir->st, mode);
		for (tries = 0; tries < 64; tries++) {
			rc = kt_make_at(&ks, fs->store, dir->st.id, name, &a);
			if (rc != KT_EEXISTS || excl)
				break;
			rc = kt_lstat_at(&ks, fs->store, dir->st.id, name);
			if (rc != KT_ENOTFOUND)
				break;
		}
		rc = ktfs_errno(rc);
		if (rc == 0 && (ks.kind & KT_KIND_DIR))
			rc = -EISDIR;
		else if (rc == 0 && (ks.kind & KT_KIND_LINK))
			rc = -EEXIST; /* O_CREAT of a dangling link's name */
	}
	if (rc == 0 && (flags & O_TRUNC) && ks.size > 0 &&
	    (rc = truncate_on_open(fs, ks.id)) == 0)
		rc = ktfs_errno(kt_id_lstat(&ks, NULL, NULL, fs->store, ks.id));
	if (rc == 0)
		ktfs_fill_stat(st, fs, NULL, &ks, value);
	return rc;
}

/* open(O_TMPFILE) in the directory @dir (io.c turns it into a create
 * named "/"): a new orphan, open, with no name; linkat can give it one
 * (ns.c), and the last close drops it otherwise. */
static int create_tmpfile(struct ktfs *fs, fuse_req_t req,
			  const struct ktfs_node *dir, mode_t mode,
			  struct fuse_file_info *fi, struct stat *st)
{
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	struct ktfs_node n;
	struct ktfs_file *f;
	uint64_t id = 0;
	int rc;

	new_file_owner(&o, req, &dir->st, mode);
	if ((rc = ktfs_errno(kt_orphan_new(&id, fs->store, &o))) < 0)
		return rc;
	if (!(f = calloc(1, sizeof(*f))) ||
	    !(f->open = ktfs_open_tmpfile(fs, id))) {
		free(f);
		kt_orphan_release(fs->store, id);
		return -ENOMEM;
	}
	f->append = (fi->flags & O_APPEND) != 0;
	fi->fh = (uintptr_t)f;
	file_track(fs, f);
	memset(&n, 0, sizeof(n));
	n.ino = n.id = id;
	n.orphan = 1;
	rc = ktfs_errno(kt_orphan_stat(&n.st, fs->store, id));
	if (rc == 0)
		ktfs_node_stat(st, fs, &n); /* link count 0 */
	return rc;
}

void ktfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	struct fuse_entry_param e;
	struct ktfs_node dir;
	struct stat st;
	int rc, tmpfile = strcmp(name, KTFS_TMPFILE_NAME) == 0;

	if ((rc = ktfs_dir_get(&dir, fs, parent)) == 0) {
		if (tmpfile)
			rc = create_tmpfile(fs, req, &dir, mode, fi, &st);
		else
			rc = create_in(fs, req, &dir, name, mode, fi->flags,
				       &st);
		ktfs_node_free(&dir);
	}
	if (rc == 0 && !tmpfile)
		rc = file_open(fs, fi, st.st_ino, KTFS_OPEN_CREATED, NULL);
	if (rc < 0) {
		ktfs_reply_err(req, rc);
		return;
	}
	ktfs_entry_param(&e, fs, &st);
	if (fuse_reply_create(req, &e, fi) != 0) {
		ktfs_open_put(fs, file_of(fi)->open);
		file_free(fs, file_of(fi));
	}
}

/* mknod of a regular file: an exclusive create that opens nothing. */
void ktfs_mknod_file(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct ktfs *fs = ktfs_of(req);
	struct ktfs_node dir;
	struct stat st;
	int rc;

	if ((rc = ktfs_dir_get(&dir, fs, parent)) == 0) {
		rc = create_in(fs, req, &dir, name, mode, O_CREAT | O_EXCL,
			       &st);
		ktfs_node_free(&dir);
	}
	if (rc < 0)
		ktfs_reply_err(req, rc);
	else
		ktfs_reply_entry(req, fs, &st);
}

/* The last release of a file unlinked while open drops its orphan.  A
 * write error not reported yet is returned (close(2) got it from flush). */
void ktfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	struct ktfs_file *f = file_of(fi);
	int rc = f->error, drop;
	uint64_t *owners = NULL;
	size_t n, i;

	/* The last descriptor of the open file description: its flock
	 * goes, and the record locks of owners that locked only through
	 * it (its own, F_OFD_SETLK: no flush drops those). */
	if (fi->flock_release)
		(void)ktfs_locks_drop(fs, ino, fi->lock_owner, 1);
	n = ktfs_open_lockuse_end(fs, f->open, f, &owners);
	for (i = 0; i < n; i++)
		(void)ktfs_locks_drop(fs, ino, owners[i], 0);
	free(owners);
	drop = ktfs_open_put(fs, f->open);
	file_free(fs, f);
	ktfs_reply_err(req, rc ? rc : drop);
}

void ktfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	char *own;
	char *buf = ktfs_reply_buf(size, &own);
	size_t got = 0;
	uint64_t oid = 0;
	int rc = 0, tries;

	if (!buf) {
		ktfs_reply_err(req, -ENOMEM);
		return;
	}
	/* No namespace lock: kt_id_read finds the node by id and reads it
	 * from one snapshot, so a rename, even of a large directory, neither
	 * misleads nor holds back a read.  An unlink that makes the file an
	 * orphan meanwhile shows as KT_ENOTFOUND (KT_EISDIR for a value
	 * file): look again. */
	for (tries = 0; tries < 2; tries++) {
		if (ktfs_open_orphan(fs, file_of(fi)->open, ino, &oid))
			rc = kt_orphan_read(&got, fs->store, oid, buf, size,
					    (uint64_t)off);
		else
			rc = kt_id_read(&got, fs->store, ino & ~KTFS_VALUE_BIT,
					buf, size, (uint64_t)off);
		if (rc != KT_ENOTFOUND && rc != KT_EISDIR)
			break;
	}
	/* A value file whose directory lost its value is gone. */
	rc = rc == KT_EISDIR ? -ENOENT : ktfs_errno(rc);
	if (rc < 0)
		ktfs_reply_err(req, rc);
	else
		fuse_reply_buf(req, buf, got);
	free(own);
}

/* An O_APPEND write goes to the end of the value as the store has it,
 * in the library's atomic step (KT_APPEND), so appenders never overwrite
 * each other, in any process.  The write goes by id (kt_id_write), so a
 * rename at the same time cannot send it elsewhere; an unlink that makes
 * the file an orphan meanwhile shows as KT_ENOTFOUND: look again. */
void ktfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		off_t off, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	struct ktfs_file *f = file_of(fi);
	/* A page of a shared mapping written back through an O_APPEND
	 * handle still goes to its own offset. */
	uint64_t at = f->append && !fi->writepage ? KT_APPEND : (uint64_t)off;
	uint64_t oid = 0;
	int rc = 0, tries;

	for (tries = 0; tries < 2; tries++) {
		if (ktfs_open_orphan(fs, f->open, ino, &oid))
			rc = kt_orphan_write(fs->store, oid, buf, size, at);
		else
			rc = kt_id_write(fs->store, ino & ~KTFS_VALUE_BIT, buf,
					 size, at);
		if (rc != KT_ENOTFOUND && rc != KT_EISDIR)
			break;
	}
	/* A value file whose directory lost its value is gone. */
	rc = rc == KT_EISDIR ? -ENOENT : ktfs_errno(rc);
	if (rc < 0) {
		ktfs_reply_err(req, ktfs_file_error(fs, f, rc));
	} else {
		__atomic_store_n(&f->wrote, 1, __ATOMIC_RELAXED);
		fuse_reply_write(req, size);
	}
}

/* close(2): every write is committed to the store before it is
 * acknowledged, so nothing is left to push; what is left to do is report
 * a write on this handle that failed, once. */
void ktfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	struct ktfs_file *f = file_of(fi);
	int rc = file_take_error(fs, f);

	/* Written through this mount: the version the store has now may
	 * also hold another host's write whose notify is on its way, which
	 * this kernel's pages do not: the next open here looks afresh
	 * (close-to-open, above). */
	if (f != NULL && __atomic_exchange_n(&f->wrote, 0, __ATOMIC_RELAXED))
		seen_forget(fs, ino);
	/* A close drops the closing process's record locks on the file
	 * (POSIX), which the kernel leaves to us when we keep them. */
	int lk = ktfs_locks_drop(fs, ino, fi->lock_owner, 0);

	ktfs_reply_err(req, rc ? rc : lk);
}

/* fsync(2): a failed write on this handle, else make every write so far
 * durable (one synced LevelDB write).  An orphan's rows are synced with
 * the rest. */
void ktfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	int rc = 0;

	(void)ino;
	(void)datasync;
	if (file_of(fi))
		rc = file_take_error(fs, file_of(fi));
	ktfs_reply_err(req, rc ? rc : ktfs_errno(kt_sync(fs->store)));
}
