/*
 * ops.c - keytreefs's low-level operations table, with the two handlers
 * that belong to no file of their own: init (what keytreefs asks of the
 * kernel) and forget (nothing to do).
 *
 * Inode numbers are persistent node ids and every request resolves its
 * inode afresh (node.c), so keytreefs keeps no per-inode state for the
 * kernel's lookups and FORGET has nothing to drop.
 */

#include <stdlib.h>

#include "keytreefs.h"

static void ktfs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct ktfs *fs = userdata;

	/* Listings carry full attributes (readdirplus), and always: with
	 * readdirplus_auto the kernel would switch to plain READDIR plus a
	 * LOOKUP per entry after the first pass. */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned int)FUSE_CAP_READDIRPLUS_AUTO;
	/* Requests are read through io.c (O_TMPFILE), not spliced. */
	conn->want &= ~(unsigned int)FUSE_CAP_SPLICE_READ;
	/* A file's attributes read afresh with a new mtime or size drop
	 * its cached pages: what lets open and lock drop only the
	 * attributes (file.c, lock.c), safe from inside a request. */
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	/* open() honours O_TRUNC itself (file.c). */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* Locks: the store's when it keeps them for every client (a RADOS
	 * tree, which other hosts mount too: lock.c), else the kernel's.
	 * No writeback cache: every write reaches the store before it is
	 * acknowledged. */
	conn->want &= ~(unsigned int)(FUSE_CAP_POSIX_LOCKS |
				      FUSE_CAP_FLOCK_LOCKS |
				      FUSE_CAP_WRITEBACK_CACHE);
	if (fs->locks && (conn->capable & FUSE_CAP_POSIX_LOCKS) &&
	    (conn->capable & FUSE_CAP_FLOCK_LOCKS))
		conn->want |= FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS;
	else
		fs->locks = 0;
	/* The kernel clears set-user-ID and set-group-ID bits on write,
	 * truncate and chown by sending the mode change itself; with
	 * HANDLE_KILLPRIV (which libfuse asks for by default) it would
	 * leave that to the daemon. */
	conn->want &= ~(unsigned int)FUSE_CAP_HANDLE_KILLPRIV;
}

/* Reply buffers, one per thread (ktfs_reply_buf).  A READ or a
 * READDIRPLUS is answered from a buffer as large as the kernel asks for,
 * 128 KiB for a reader's usual request; a fresh one each time cost the
 * daemon a malloc and a free of that size, and malloc's consolidation of
 * its free lists.  The key's destructor frees a worker's when the worker
 * ends.  A thread keeps at most KTFS_REPLY_KEEP bytes; larger requests,
 * and every request if the key could not be made, get a buffer of their
 * own. */
struct reply_buf {
	char *p;
	size_t cap;
};

static pthread_key_t reply_key;
static pthread_once_t reply_once = PTHREAD_ONCE_INIT;
static int reply_key_ok;

static void reply_buf_free(void *v)
{
	struct reply_buf *b = v;

	if (b) {
		free(b->p);
		free(b);
	}
}

static void reply_key_make(void)
{
	reply_key_ok = pthread_key_create(&reply_key, reply_buf_free) == 0;
}

static char *reply_buf_own(size_t size, char **to_free)
{
	return *to_free = malloc(size);
}

char *ktfs_reply_buf(size_t size, char **to_free)
{
	struct reply_buf *b;

	*to_free = NULL;
	if (size == 0)
		size = 1;
	pthread_once(&reply_once, reply_key_make);
	if (!reply_key_ok || size > KTFS_REPLY_KEEP)
		return reply_buf_own(size, to_free);
	if (!(b = pthread_getspecific(reply_key))) {
		if (!(b = calloc(1, sizeof(*b))))
			return reply_buf_own(size, to_free);
		if (pthread_setspecific(reply_key, b) != 0) {
			free(b);
			return reply_buf_own(size, to_free);
		}
	}
	if (b->cap < size) {
		/* Nothing in it is kept from one reply to the next. */
		free(b->p);
		b->p = malloc(size);
		b->cap = b->p ? size : 0;
	}
	return b->p;
}

void ktfs_reply_buf_release(void)
{
	pthread_once(&reply_once, reply_key_make);
	if (!reply_key_ok)
		return;
	reply_buf_free(pthread_getspecific(reply_key));
	(void)pthread_setspecific(reply_key, NULL);
}

static void ktfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

static void ktfs_forget_multi(fuse_req_t req, size_t count,
			      struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

const struct fuse_lowlevel_ops ktfs_ops = {
	.init = ktfs_init,
	.lookup = ktfs_lookup,
	.forget = ktfs_forget,
	.forget_multi = ktfs_forget_multi,
	.getattr = ktfs_getattr,
	.setattr = ktfs_setattr,
	.readlink = ktfs_readlink,
	.mknod = ktfs_mknod,
	.mkdir = ktfs_mkdir,
	.unlink = ktfs_unlink,
	.rmdir = ktfs_rmdir,
	.symlink = ktfs_symlink,
	.rename = ktfs_rename,
	.link = ktfs_link,
	.open = ktfs_open,
	.read = ktfs_read,
	.write = ktfs_write,
	.flush = ktfs_flush,
	.release = ktfs_release,
	.fsync = ktfs_fsync,
	.opendir = ktfs_opendir,
	.readdir = ktfs_readdir,
	.readdirplus = ktfs_readdirplus,
	.releasedir = ktfs_releasedir,
	.fsyncdir = ktfs_fsyncdir,
	.statfs = ktfs_statfs,
	.setxattr = ktfs_setxattr,
	.getxattr = ktfs_getxattr,
	.listxattr = ktfs_listxattr,
	.removexattr = ktfs_removexattr,
	.create = ktfs_create,
	.getlk = ktfs_getlk,
	.setlk = ktfs_setlk,
	.flock = ktfs_flock,
};
