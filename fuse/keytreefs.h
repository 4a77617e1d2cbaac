/*
 * keytreefs.h - what the files of keytreefs share: the mounted
 * filesystem's state, how a FUSE inode number names a store node, and the
 * functions between the files.  Private to fuse/; nothing here is
 * installed.
 *
 * keytreefs uses libfuse's low-level API.  A FUSE inode number (nodeid) is
 * the node's persistent keytree id (the root's id is 1, FUSE_ROOT_ID); the
 * value file of an item+dir is its node's id with bit 63 set.  Nothing is
 * kept per inode the kernel knows: every request resolves its inode
 * afresh with kt_id_lstat(), so FORGET costs nothing and the daemon's
 * memory does not grow with what the kernel has looked up or listed.
 *
 * Files:
 *   main.c   options, session, mount, signals, the loop
 *   ops.c    the operations table, init, forget
 *   node.c   inode resolution, the namespace lock, attributes, replies
 *   open.c   the open table and the orphans of files unlinked while open
 *   file.c   open, create, read, write, flush, release, fsync
 *   ns.c     lookup, mkdir, mknod, unlink, rmdir, symlink, readlink,
 *            rename, ...
 *   dir.c    opendir, readdir, readdirplus, releasedir, fsyncdir
 *   attr.c   getattr, setattr, statfs, extended attributes
 *   errno.c  kt_error -> errno
 *   io.c     reading requests: O_TMPFILE becomes a create
 *   watch.c  other processes' changes -> kernel cache invalidations
 *
 * Threads and locks.  Requests run on libfuse's worker threads.  The
 * tree is protected by the library alone: every call is one atomic,
 * guarded transaction that reruns on conflict, also against other
 * processes (a second mount, the CLI).  So the mount never changes the
 * store through a path it resolved earlier: it names a node by id
 * (kt_id_write, kt_id_truncate, kt_id_setattr, kt_id_attr_*, kt_id_put,
 * kt_id_delete) or a child by directory id and name (kt_lstat_at,
 * kt_make_at, kt_delete_at, kt_rename_at, kt_link_at), resolved inside
 * the call's own step.  Creation is exclusive in one step (kt_make_at), so
 * no name stripe is needed for a file and a directory racing for a name;
 * rmdir and unlink say in the call what they may remove (KT_DELETE_DIR,
 * KT_DELETE_NOTDIR), so no lock is needed between a look and the removal.
 * What is left is in-process state, and two locks guard it; order: the
 * open table's lock, then a directory handle's lock.
 * - the open table's lock (open.c) protects the table and each open
 *   file's error field, and is held from the decision "this file has
 *   handles here: orphan it" (or "none: delete it") to the library call
 *   that carries it out, and across a rename that replaces a file, so no
 *   handle of this mount opens on a file in between (an open counts its
 *   handle first and then checks the node is still there).  Another
 *   process cannot break that decision: the call is conditional on the
 *   node decided about (kt_delete_at_if and kt_orphan_detach_at refuse if
 *   another node has the name by then, and the mount looks again;
 *   kt_orphan_copy_id copies and drops a value in one step).  What the
 *   lock cannot do is know another process's handles: a file open only
 *   in another mount and unlinked here is deleted, as that mount's
 *   orphans are its own (docs/CONCURRENCY.md).
 * - a directory handle's lock (dir.c) protects its listing position.
 * Reads take no lock: kt_id_read, kt_id_lstat and kt_id_attr_get read by
 * id from one snapshot.
 */
#ifndef KEYTREEFS_H
#define KEYTREEFS_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include <keytree.h>

/** The keytreefs release, which follows the library it is built with. */
#define KTFS_VERSION KT_VERSION_STRING

/** Inode numbers of value files: the node id with this bit set. */
#define KTFS_VALUE_BIT (UINT64_C(1) << 63)

#define KTFS_OPEN_BUCKETS 256

/** One open inode's entry in the open table (open.c). */
struct ktfs_open;

/** An open regular file, the fi->fh of its handle. */
struct ktfs_file {
	struct ktfs_open *open; /**< its inode's open-table entry */
	int append;             /**< opened with O_APPEND */
	int error;              /**< a write error not reported yet (lock) */
	int wrote;              /**< written through this handle (atomic) */
	/** Every handle the kernel has, listed in struct ktfs (file.c),
	 * under its lock. */
	struct ktfs_file *next, **pprev;
};

/** Slots of struct ktfs.seen (a power of two). */
#define KTFS_SEEN_SLOTS 4096

/** The state of one mount, the userdata of every request. */
struct ktfs {
	kt_store *store;           /**< set before the loop starts */
	char *store_dir;           /**< the store's directory, for statfs */
	char *value_name;          /**< name of an item+dir's own value */
	size_t value_name_len;
	char *mountpoint;          /**< absolute, for absolute link targets */
	size_t mountpoint_len;
	int abslinks_host;         /**< 1: absolute targets are host paths */
	int read_only;
	double entry_timeout;      /**< kernel cache timeouts, seconds */
	double attr_timeout;
	double negative_timeout;
	int locks;                 /**< the store keeps locks (lock.c) */

	pthread_mutex_t lock;      /**< protects the fields below */
	struct ktfs_open *open[KTFS_OPEN_BUCKETS]; /**< open inodes, by ino */
	size_t nhooked;            /**< entries in open[] */
	struct ktfs_file *files;   /**< every handle the kernel has */
	/** Close-to-open (file.c): the version of a file that this
	 * kernel's cache is known to hold, by inode, direct-mapped (a
	 * slot lost to another inode costs one needless invalidation). */
	struct {
		uint64_t ino, version;
	} seen[KTFS_SEEN_SLOTS];

	/** The session, while other processes' changes are watched
	 * (watch.c); atomic. */
	struct fuse_session *se;
};

/** What one inode names, as ktfs_node_get() resolved it. */
struct ktfs_node {
	uint64_t ino;    /**< the FUSE inode number asked for */
	char *path;      /**< store path (kt_free); NULL for an orphan */
	size_t path_len;
	int value;       /**< the value file of the item+dir at path */
	int orphan;      /**< a file unlinked while open, reached by id */
	uint64_t id;     /**< with orphan: the orphan's id, else the node's */
	kt_statbuf st;   /**< the node's (or orphan's) metadata */
};

/** The operations table (ops.c). */
extern const struct fuse_lowlevel_ops ktfs_ops;

/** The session's reads and writes of /dev/fuse (io.c): an O_TMPFILE
 * request reaches ktfs_create() with the name "/". */
ssize_t ktfs_io_read(int fd, void *buf, size_t len, void *userdata);
ssize_t ktfs_io_writev(int fd, struct iovec *iov, int count, void *userdata);
/* Called by ktfs_io_read at the first request after INIT (main.c). */
void ktfs_io_after_init(void);

/** The name ktfs_create() gets for open(O_TMPFILE): no file has it. */
#define KTFS_TMPFILE_NAME "/"

/** The negative errno for a kt_error code (errno.c); 0 for KT_OK. */
int ktfs_errno(int code);

/** @name Resolution, attributes and replies (node.c) */
/**@{*/

/** The mount of request @p req. */
struct ktfs *ktfs_of(fuse_req_t req);

/** Resolve inode @p ino into @p n: an orphan if it was unlinked while open
 * (and @p f, its open file or NULL, says so, or no handle does), else the
 * node's current path and metadata, read in one view.  0, or -ENOENT when
 * no node has that id any more (or the value file is gone).  The path is
 * for reading only; release @p n with ktfs_node_free(). */
int ktfs_node_get(struct ktfs_node *n, struct ktfs *fs, uint64_t ino,
		  const struct ktfs_file *f);

/** As ktfs_node_get() for a directory: -ENOTDIR otherwise. */
int ktfs_dir_get(struct ktfs_node *n, struct ktfs *fs, uint64_t ino);

void ktfs_node_free(struct ktfs_node *n);

/** "@p dir/@p name" (the root's children: "/name"), from malloc; NULL
 * when out of memory. */
char *ktfs_child_path(const char *dir, size_t dir_len, const char *name);

/** 1 if @p name is the value file's name. */
int ktfs_is_value_name(const struct ktfs *fs, const char *name);

/** Fill @p st for the node @p ks (@p value: its value file); @p path is
 * unused.  A link costs more reads, for the length readlink returns. */
void ktfs_fill_stat(struct stat *st, struct ktfs *fs, const char *path,
		    const kt_statbuf *ks, int value);

/** The target of the link with id @p id (kt_free), read by its path and
 * checked to be still that node's; 0 or a negative errno. */
int ktfs_readlink_id(char **target, struct ktfs *fs, uint64_t id);

/** The S_IF* file type bits of a special file of type @p type
 * (KT_TYPE_*), e.g. S_IFIFO for KT_TYPE_FIFO; 0 for an unknown type. */
mode_t ktfs_type_mode(unsigned int type);

/** ktfs_fill_stat() of a resolved node (an orphan: link count 0). */
void ktfs_node_stat(struct stat *st, struct ktfs *fs,
		    const struct ktfs_node *n);

/** Reply to a LOOKUP, MKDIR, SYMLINK... with the entry @p st. */
void ktfs_reply_entry(fuse_req_t req, struct ktfs *fs, const struct stat *st);

/** Fill an entry parameter for @p st with the mount's timeouts. */
void ktfs_entry_param(struct fuse_entry_param *e, struct ktfs *fs,
		      const struct stat *st);

/** Reply with the negative errno @p rc (or success with nothing). */
void ktfs_reply_err(fuse_req_t req, int rc);

/**
 * A buffer of at least @p size bytes for a reply (READ, READDIRPLUS),
 * good until the calling thread's next call.  Up to KTFS_REPLY_KEEP bytes
 * it is the thread's own, kept from request to request; a larger one is
 * made for this reply alone.  The caller frees *@p to_free (NULL for the
 * thread's own) once the reply is sent.  NULL when out of memory.
 */
char *ktfs_reply_buf(size_t size, char **to_free);
#define KTFS_REPLY_KEEP ((size_t)256 << 10)

/** Free the calling thread's reply buffer (the main thread's, after the
 * loop: workers' go when they end). */
void ktfs_reply_buf_release(void);

/** Nanoseconds <-> timespec; ktfs_ns_of() gives -EINVAL out of range. */
struct timespec ktfs_ts_of(int64_t ns);
int ktfs_ns_of(int64_t *ns, const struct timespec *t);

/** 1 if readlink shows the stored target @p target with the mountpoint
 * in front (-o abslinks=store and an absolute target). */
int ktfs_link_shows_mountpoint(const struct ktfs *fs, const char *target);
/**@}*/

/** @name The open table and orphans (open.c)
 * Open handles are counted per inode.  An inode that is unlinked or
 * replaced while it has handles becomes a library orphan, reached by id
 * until its last handle is released. */
/**@{*/

/** How an open began (ktfs_open_get). */
#define KTFS_OPEN_NAMED 0   /**< on a name: the kernel looked it up */
#define KTFS_OPEN_ORPHAN 1  /**< on an orphan (/proc/PID/fd/N) */
#define KTFS_OPEN_CREATED 2 /**< on a file this request has just made */

/** Count one more handle of inode @p ino; NULL with the negative errno in
 * @p err when out of memory, or when the orphan an open of /proc/PID/fd/N
 * asked for was released meanwhile (ENOENT).  @p how is one of
 * KTFS_OPEN_*.  With KTFS_OPEN_ORPHAN the handle is of the orphan of
 * @p ino.  Otherwise an orphaned entry of @p ino is there because the
 * name went while the open was under way, or, for a value file, because
 * its number is in use again (its directory got a value anew): the open
 * joins the orphan in the first case, and sets the entry aside in the
 * second, to be of the file that has the name now.  A value file's
 * directory is read to tell the two apart; a created file is always of
 * the second kind. */
struct ktfs_open *ktfs_open_get(struct ktfs *fs, uint64_t ino, int how,
				int *err);

/** The first handle of a new unnamed file (O_TMPFILE), the orphan @p id,
 * whose inode number is its id; NULL when out of memory. */
struct ktfs_open *ktfs_open_tmpfile(struct ktfs *fs, uint64_t id);

/** Give the unnamed file (O_TMPFILE) of inode @p ino the store path
 * @p path (linkat): it is an ordinary file from then on.  -EPERM for any
 * other orphan (the kernel links no other unlinked file), or the negative
 * errno of kt_orphan_link().  A named file's further names are kt_link()
 * (ns.c). */
int ktfs_open_link(struct ktfs *fs, uint64_t ino, const char *path);

/** Count one handle of @p o less; the last one of an orphaned inode drops
 * the orphan.  0, or the negative errno of that drop. */
int ktfs_open_put(struct ktfs *fs, struct ktfs_open *o);

/** 1 and the orphan's id in @p id if the handles of @p o (or, when @p o is
 * NULL, of inode @p ino) are of an orphan, else 0. */
int ktfs_open_orphan(struct ktfs *fs, const struct ktfs_open *o,
		     uint64_t ino, uint64_t *id);

/** Hold the open table still (no handle opens or closes) across a
 * check of ktfs_open_busy() and the change it decides. */
void ktfs_open_lock(struct ktfs *fs);
void ktfs_open_unlock(struct ktfs *fs);

/** Handles of inode @p ino not orphaned yet; the table must be held. */
unsigned int ktfs_open_busy(struct ktfs *fs, uint64_t ino);

/** How ktfs_orphan_make() takes the file out of the tree. */
enum ktfs_orphan_how {
	KTFS_ORPHAN_DETACH, /**< detach the plain item at path itself */
	KTFS_ORPHAN_COPY,   /**< copy the item's (or item+dir's) value into a
			       new orphan; the caller then removes or
			       replaces the original */
	KTFS_ORPHAN_TAKE    /**< copy an item+dir's value into a new orphan
			       and drop it from the node, in one step */
};

/** Make the file of inode @p ino an orphan for its handles: the plain
 * item (@p dir, @p name) is detached if it still has the id of @p ino; a
 * value file's node is copied by id.  The table must be held.  0, -EAGAIN
 * when another node has the name by now (look again), or a negative
 * errno. */
int ktfs_orphan_make(struct ktfs *fs, uint64_t ino, uint64_t dir,
		     const char *name, enum ktfs_orphan_how how);

/** Undo an orphan_make whose follow-up failed: the handles of @p ino go
 * back to the file.  @p dir 0: the orphan was a copy and is dropped; else
 * the detached file is linked back as (@p dir, @p name) if that name is
 * free (if not, it stays an orphan for its handles).  Table held. */
void ktfs_orphan_unmake(struct ktfs *fs, uint64_t ino, uint64_t dir,
			const char *name);

/** Set the orphaned entry of @p ino aside: its handles still reach the
 * orphan, but handle-less requests on @p ino reach the file that has the
 * name now (a value file replaced by a rename).  The table must be held. */
void ktfs_open_setaside(struct ktfs *fs, uint64_t ino);

/** Take the file (@p dir, @p name), inode @p ino (a value file if it has
 * KTFS_VALUE_BIT) with @p nlink paths, out of the tree: an orphan for its
 * handles if it has any and this is its last path, else deleted if
 * @p or_delete, else left alone (returning 1).  The value of an item+dir
 * is copied into its orphan, since it cannot be detached without its
 * directory.  -EAGAIN: another node has the name by now; look again. */
int ktfs_unlink_file(struct ktfs *fs, uint64_t dir, const char *name,
		     uint64_t ino, uint32_t nlink, int or_delete);

/** ktfs_unlink_file() with the open table held by the caller. */
int ktfs_unlink_file_held(struct ktfs *fs, uint64_t dir, const char *name,
			  uint64_t ino, uint32_t nlink, int or_delete);

/** Unlink the file (@p dir, @p name) at once if the open table is empty:
 * then no handle can keep whatever file has the name, and the table held
 * keeps one from being opened meanwhile.  0 or a negative errno when it
 * did; 1 when something is open (use ktfs_unlink_file()). */
int ktfs_unlink_unopened(struct ktfs *fs, uint64_t dir, const char *name);
/**@}*/

/** @name Handlers (file.c, ns.c, dir.c, attr.c) */
/**@{*/
void ktfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void ktfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode);
void ktfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, dev_t rdev);
void ktfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void ktfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ktfs_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		  const char *name);
void ktfs_readlink(fuse_req_t req, fuse_ino_t ino);
void ktfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		 fuse_ino_t newparent, const char *newname,
		 unsigned int flags);
void ktfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	       const char *newname);

void ktfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/** mknod of a regular file (file.c): created as by an exclusive create. */
void ktfs_mknod_file(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode);
void ktfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		 mode_t mode, struct fuse_file_info *fi);
void ktfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	       struct fuse_file_info *fi);
void ktfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		size_t size, off_t off, struct fuse_file_info *fi);
void ktfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/** Release the handles the kernel never released (file.c): it sends a
 * file's RELEASE after close(2) returns, so an unmount right after a
 * close can end the session first.  After the session, before kt_close. */
void ktfs_files_free(struct ktfs *fs);

/** Locks kept in the store (lock.c), for every host: set when
 * ktfs.locks. */
void ktfs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *fl);
void ktfs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *fl, int sleep);
void ktfs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		int op);
/** Drop @p owner's record locks (@p whole: its flock) on @p ino: 0 or a
 * negative errno; nothing when the store keeps no locks. */
int ktfs_locks_drop(struct ktfs *fs, fuse_ino_t ino, uint64_t owner,
		    int whole);
/** Note that handle @p fh of inode entry @p o took range locks as
 * @p owner (open.c). */
void ktfs_open_lockuse(struct ktfs *fs, struct ktfs_open *o, const void *fh,
		       uint64_t owner);
/** Forget handle @p fh's notes; the owners that no other handle of the
 * inode used come back in *@p out (malloc'd, count returned): the last
 * description through which they locked is gone, so their record locks
 * go too (an open file description's own locks, F_OFD_SETLK, which no
 * flush drops). */
size_t ktfs_open_lockuse_end(struct ktfs *fs, struct ktfs_open *o,
			     const void *fh, uint64_t **out);
/** Stop the thread that serves lock requests waiting for a lock, and
 * answer those EINTR (after the session's loop ended). */
void ktfs_locks_stop(void);
void ktfs_release(fuse_req_t req, fuse_ino_t ino,
		  struct fuse_file_info *fi);
void ktfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		struct fuse_file_info *fi);
/** Remember the first failed write or truncate of @p f (NULL: none); the
 * negative errno @p rc is returned. */
int ktfs_file_error(struct ktfs *fs, struct ktfs_file *f, int rc);

void ktfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ktfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi);
void ktfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi);
void ktfs_releasedir(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi);
void ktfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		   struct fuse_file_info *fi);

void ktfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ktfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		  int to_set, struct fuse_file_info *fi);
void ktfs_statfs(fuse_req_t req, fuse_ino_t ino);
void ktfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		   const char *value, size_t size, int flags);
void ktfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		   size_t size);
void ktfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void ktfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
/**@}*/

/** @name Other processes' changes (watch.c) */
/**@{*/

/** Make the kernel forget what other processes change in the store, from
 * now on; kt_watch()'s error otherwise. */
int ktfs_watch_start(struct ktfs *fs, struct fuse_session *se);

/** Stop that (before the session goes); waits for a call in progress. */
void ktfs_watch_stop(struct ktfs *fs);
/**@}*/

#endif /* KEYTREEFS_H */
