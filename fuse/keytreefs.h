/*
 * keytreefs.h - what main.c, ops.c and errno.c of keytreefs share: the
 * mounted filesystem's state and the two functions between the files.
 * Private to fuse/; nothing here is installed.
 */
#ifndef KEYTREEFS_H
#define KEYTREEFS_H

#define FUSE_USE_VERSION 314

#include <fuse.h>
#include <fuse_lowlevel.h> /* fuse_parse_cmdline */
#include <pthread.h>
#include <stdint.h>

#include <keytree.h>

/** The keytreefs release, which follows the library it is built with. */
#define KTFS_VERSION KT_VERSION_STRING

/** One open inode's entry in the open table (open.c). */
struct ktfs_open;

/** An open regular file, the fi->fh of its handle. */
struct ktfs_file {
	uint64_t ino; /**< inode number: node id, | bit 63 for a value file */
	int append;   /**< opened with O_APPEND */
	int error;    /**< a write error not reported at flush yet (lock) */
};

#define KTFS_OPEN_BUCKETS 256

/** The state of one mount, the private_data of every request. */
struct ktfs {
	kt_store *store;           /**< set before the loop starts */
	char *store_dir;           /**< the store's directory, for statfs */
	char *value_name;          /**< name of an item+dir's own value */
	size_t value_name_len;
	char *mountpoint;          /**< absolute, for absolute link targets */
	size_t mountpoint_len;
	int abslinks_host;         /**< 1: absolute targets are host paths */
	int read_only;

	pthread_mutex_t lock;      /**< protects the two fields below */
	struct ktfs_open *open[KTFS_OPEN_BUCKETS]; /**< open inodes, by ino */
	uint64_t copy_seq;         /**< names of temporary copies (open.c) */
};

/** The FUSE operations table (ops.c). */
extern const struct fuse_operations ktfs_ops;

/** The negative errno for a kt_error code (errno.c); 0 for KT_OK. */
int ktfs_errno(int code);

/** @name The open table and orphans (open.c)
 * Open handles are counted per inode.  An inode that is unlinked or
 * replaced while it has handles becomes a library orphan, reached by id
 * (and by libfuse's hidden name for it) until its last handle is
 * released. */
/**@{*/

/** Count one more handle of inode @p ino; 0 or -ENOMEM. */
int ktfs_open_get(struct ktfs *fs, uint64_t ino);

/** Count one handle of @p ino less; the last one of an orphaned inode
 * drops the orphan.  0, or the negative errno of that drop. */
int ktfs_open_put(struct ktfs *fs, uint64_t ino);

/** 1 and the orphan's id in @p id if inode @p ino was unlinked while
 * open, else 0. */
int ktfs_open_orphan(struct ktfs *fs, uint64_t ino, uint64_t *id);

/** 1 with the inode and orphan id of the file libfuse hid under the base
 * name @p name, else 0. */
int ktfs_open_hidden(struct ktfs *fs, const char *name, uint64_t *ino,
		     uint64_t *id);

/** Hold the open table still (no handle opens or closes) across a
 * check of ktfs_open_busy() and the change it decides. */
void ktfs_open_lock(struct ktfs *fs);
void ktfs_open_unlock(struct ktfs *fs);

/** Handles of inode @p ino; the table must be held. */
unsigned int ktfs_open_busy(struct ktfs *fs, uint64_t ino);

/** How ktfs_orphan_make() takes the file out of the tree. */
enum ktfs_orphan_how {
	KTFS_ORPHAN_DETACH, /**< detach the plain item at path itself */
	KTFS_ORPHAN_COPY    /**< copy the item's (or item+dir's) value into a
			       new orphan; the caller then removes or
			       replaces the original */
};

/** Make the file at store path @p path an orphan for the handles of inode
 * @p ino, known to libfuse by the base name @p hidden (or NULL); the table
 * must be held.  0 or a negative errno. */
int ktfs_orphan_make(struct ktfs *fs, uint64_t ino, const char *path,
		     enum ktfs_orphan_how how, const char *hidden);

/** Undo a KTFS_ORPHAN_COPY whose follow-up failed: the handles of @p ino
 * go back to the path.  The table must be held. */
void ktfs_orphan_unmake(struct ktfs *fs, uint64_t ino);
/**@}*/

#endif /* KEYTREEFS_H */
