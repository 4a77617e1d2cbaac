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

/** The store directory that holds files unlinked while open (see ops.c).
 * It is hidden from the mount and emptied at every mount and unmount. */
#define KTFS_ORPHANS "/.keytreefs-unlinked"

/** One open file's entry in the open table (ops.c). */
struct ktfs_open;
/** One file unlinked while open: libfuse's hidden name -> store path. */
struct ktfs_hidden;

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

	pthread_mutex_t lock;      /**< protects the three fields below */
	struct ktfs_open *open[KTFS_OPEN_BUCKETS]; /**< open files by ino */
	struct ktfs_hidden *hidden; /**< files unlinked while open */
	uint64_t orphan_seq;       /**< names in KTFS_ORPHANS */

	pthread_mutex_t append_lock; /**< serialises O_APPEND writes */
};

/** The FUSE operations table (ops.c). */
extern const struct fuse_operations ktfs_ops;

/** The negative errno for a kt_error code (errno.c); 0 for KT_OK. */
int ktfs_errno(int code);

#endif /* KEYTREEFS_H */
