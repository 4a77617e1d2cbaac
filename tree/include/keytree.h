/*
 * keytree.h - the public interface of libkeytree, a hierarchical tree store
 * on LevelDB.
 *
 * keytree stores nodes under absolute, '/'-separated paths
 * ("/Accounts/123456/Links/xyzpdq").  A node is an item (a binary value with
 * named attributes), a directory, both at once, a symbolic link, or a
 * special file (a FIFO, socket or device node, recorded but not
 * interpreted).  Reading
 * an item is one row lookup; listing a directory is one ordered range scan.
 * The row layout is documented in docs/FORMAT.md.
 *
 * Conventions
 * -----------
 * - Fallible functions return int: 0 on success or a negative kt_error.
 *   On failure kt_errmsg() describes what went wrong in this thread, naming
 *   the path, byte or row at fault.
 * - Out-parameters come first.  Memory returned through them belongs to the
 *   caller and is released with kt_free() (or the type's _free function);
 *   on failure they are set to NULL / 0.
 * - Every path-taking function says whether it follows a symbolic link in
 *   the last component.  Links in the other components are always followed.
 *
 * Paths
 * -----
 * A path is a NUL-terminated byte string.  It is accepted only in canonical
 * form: it starts with '/', "/" alone is the root, components are separated
 * by exactly one '/', there is no trailing '/', and no component is "." or
 * "..".  Anything else (a relative path, "//", "/a/", "/a/./b") is rejected
 * with KT_EINVAL by every function, readers included; keytree never guesses
 * what a non-canonical path meant.  A name (component) is 1 to KT_NAME_MAX
 * bytes, may hold any byte except '/' and NUL, and may not contain the
 * store's delimiter (KT_ERESERVED).  A path is at most KT_PATH_MAX bytes
 * and KT_DEPTH_MAX components (KT_ENAMETOOLONG).
 *
 * Errors every call can return
 * ----------------------------
 * Each function's comment lists the codes its arguments and the store's
 * contents can cause.  Besides those, every call on a store (or on an
 * iterator or batch of one) can return:
 * - KT_EINVAL: the store, or a pointer argument that is not documented as
 *   optional, is NULL; an options struct has a version other than its
 *   *_VERSION;
 * - KT_ENOMEM: out of memory;
 * - KT_EIO: the storage engine failed to read or write (kt_errmsg() has
 *   what it said).  On a handle whose store another process holds (see
 *   Engines below), also: that process has exited, or the connection to
 *   it failed.  From then on every call on the handle fails with KT_EIO,
 *   nothing waits, and the store must be opened again;
 * - KT_ECORRUPT: a row it read failed to decode;
 * - and, for a call that changes the store: KT_EREADONLY when the store
 *   was opened read-only, and KT_EBUSY when other processes kept changing
 *   what the call read until it gave up rerunning (never while one process
 *   uses the store).
 * "A path error" below means KT_EINVAL (a path that is not canonical),
 * KT_ENAMETOOLONG or KT_ERESERVED, as Paths says.
 *
 * Engines
 * -------
 * The first process to open a store holds it and reads and writes it with
 * LevelDB; a kt_open() in another process while it is held connects to the
 * holder (DIR/keytree.sock) and runs the same tree layer over the remote
 * engine, which forwards every read and commit to the holder
 * (docs/CONCURRENCY.md).  Every call behaves the same on both, with the
 * same codes; what differs is noted as "Engines:" in the call's comment,
 * together with KT_EIO above and the cost (a round trip to the holder per
 * row read or commit).
 *
 * A store named rados:POOL[/NAMESPACE]/TREE lives in a Ceph cluster
 * (docs/FORMAT.md, "The RADOS layout").  There is no holder: every process,
 * on any host, is a client of the cluster.  What holds on both engines:
 * every mutation is atomic as any reader observes it and serializable
 * against every other mutation, from any process; it commits whole or not
 * at all, also when its process is killed (a commit cut short is rolled
 * forward or back by the next client that meets it, after at most the
 * lease, 3 s by default, or for a commit over thousands of objects its
 * budget, which grows with its size; a large rename or recursive delete,
 * one staged commit, once its heartbeat has stood still for a lease:
 * docs/FORMAT.md §14); and every call that reads without changing
 * anything (kt_get, kt_read, kt_stat, kt_readlink, kt_attr_get, the kt_id_
 * and _at readers, kt_orphan_stat and _read, kt_stats), like every
 * mutation that fails, answers from what the store held at one moment,
 * never from part of a commit.  LevelDB reads one snapshot.  RADOS reads
 * each partition (a directory's children, a node, a value's blocks) at
 * its own moment, then checks that nothing it read has changed since (one
 * stat per partition read, all in flight at once; none when it read only
 * one partition) and reads again when something has: a call that keeps
 * meeting other clients' commits gives up with KT_EBUSY after 100 tries.
 * What holds only on LevelDB: an iteration (kt_iter_new, kt_find_new,
 * the attribute listings) reads one snapshot from its start to its end.
 * On RADOS a listing reads a directory's children a page of up to 1024 at
 * a time and a find one partition after another, each at its own moment:
 * an entry there from the start of the iteration to its end is returned
 * exactly once and in order, one added or removed meanwhile may or may
 * not be, and a subtree another client moves during a find may be met at
 * both places or at neither.  A prefix find visits partitions in the same
 * byte order on both.  kt_check on RADOS checks as the readers do and
 * runs again (3 passes at most) when the tree changed under it; if its
 * writers never pause, it reports what its last pass found and says so.
 * Costs on RADOS: a round trip to an OSD per partition read (and one more
 * for a call that read several), one guarded operation for a mutation
 * that touches one partition, three round trips for one that touches
 * several (its objects are updated after it returns; docs/FORMAT.md §14,
 * docs/PERFORMANCE.md); a find or a walk of a subtree reads up to 32
 * partitions at once.  Limit on RADOS: one mutation (a put, a batch, a
 * rename or recursive delete inside a batch) carries at most 64 MiB of
 * rows, the size of one RADOS operation; a
 * larger one fails with KT_ETOOBIG and says so.  A larger rename or
 * recursive delete is a staged commit (see "Large subtrees" at
 * kt_rename()), with no such limit.  A directory of a RADOS store holds at
 * most 100,000 entries (its children are one object's key-value map,
 * docs/SCALING.md §2): a call that would add one more (a create, a
 * missing ancestor, a rename from another directory, kt_link(),
 * kt_orphan_link()) fails with KT_EDIRFULL naming the directory and
 * changes nothing.  $KEYTREE_DIR_MAX, read by kt_open(), sets that limit
 * on either engine (0: none, the default on LevelDB; anything but a
 * number from 0 to 2^32 - 1 makes kt_open() fail with KT_EINVAL).
 *
 * Threads
 * -------
 * A kt_store may be shared by any number of threads.  Each mutation reads
 * what it depends on, decides, and commits only if none of it changed
 * meanwhile (in this process or another), else it runs again from the
 * start, so concurrent writers never lose each other's rows.  Readers take
 * no lock.  A kt_iter or kt_batch belongs to one thread at a time.
 * kt_errmsg() is per thread.
 *
 * Durability
 * ----------
 * On RADOS a mutation is acknowledged once every replica of the objects it
 * changed has it (kt_options.sync changes nothing there).  On LevelDB
 * every mutation is one atomic write batch (on a client, applied by the
 * holder).  With
 * kt_options.sync set, each write is flushed to disk before it returns;
 * otherwise it survives a process crash but may be lost on a power cut
 * unless kt_sync() is called.
 *
 * Integrity
 * ---------
 * Damaged storage reads as KT_ECORRUPT, never as other bytes.  On LevelDB
 * every table block read is checked against its CRC, except that reads
 * of the blocks of a large, hole-free value check the value's own block
 * checksums instead (stores made since format 5: docs/FORMAT.md §6),
 * computed with the CPU's CRC instruction where it has one.  kt_check() reads
 * everything with every check on.  RADOS checks the data it stores.
 */
#ifndef KEYTREE_H
#define KEYTREE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(KT_BUILDING)
#define KT_EXTERN __attribute__((visibility("default")))
#else
#define KT_EXTERN
#endif

/** Library version. */
#define KT_VERSION_MAJOR 0
#define KT_VERSION_MINOR 1
#define KT_VERSION_PATCH 0
#define KT_VERSION_STRING "0.1.0"

/** The newest on-disk format this library reads and writes.  A store with
 * plain names is written in format 4, which older libraries read too; a
 * store with typed names (kt_options.typed_names) needs format 5. */
#define KT_FORMAT_VERSION 5

/** @name Limits
 * Enforced by every function; exceeding one fails with a message naming the
 * limit. */
/**@{*/
#define KT_NAME_MAX 255          /**< bytes in one name or attribute name */
#define KT_PATH_MAX 4096         /**< bytes in a path: "/" and the 4095 a
				    program may pass the kernel relative to
				    a mount's root */
#define KT_DEPTH_MAX 2048        /**< components in a path: a 4095-byte
				    relative path of one-byte names */
#define KT_TARGET_MAX 4095       /**< bytes in a link target: what
				    readlink(2) can return */
#define KT_VALUE_MAX (1ULL << 40) /**< bytes in a value (1 TiB, sparse) */
#define KT_ATTR_VALUE_MAX 65536  /**< bytes in one attribute value */
#define KT_LINK_HOPS_MAX 40      /**< links followed in one resolution */
#define KT_LINK_MAX 1024         /**< paths of one node (kt_link): every
				    change to it rewrites a row per path */
/**@}*/

/** Error codes.  Values are fixed forever; new ones are only appended. */
typedef enum kt_error {
	KT_OK = 0,
	KT_ENOTFOUND = -1,     /**< no node at that path, or a dangling link */
	KT_EEXISTS = -2,       /**< the node already exists */
	KT_ENOTDIR = -3,       /**< a component is not a directory */
	KT_EISDIR = -4,        /**< the node is a directory without a value */
	KT_ENOTEMPTY = -5,     /**< the directory has children */
	KT_ELOOP = -6,         /**< more than KT_LINK_HOPS_MAX links */
	KT_EINVAL = -7,        /**< invalid argument or path syntax */
	KT_ENAMETOOLONG = -8,  /**< a name, path or depth limit was exceeded */
	KT_ERESERVED = -9,     /**< a name contains the store's delimiter */
	KT_EBUSY = -10,        /**< the store is open in another process */
	KT_EREADONLY = -11,    /**< the store was opened read-only */
	KT_ENOMEM = -12,       /**< out of memory */
	KT_ECORRUPT = -13,     /**< a row failed to decode or a checksum failed */
	KT_EIO = -14,          /**< the storage engine reported an I/O error */
	KT_ENOTSTORE = -15,    /**< the directory is not a keytree store */
	KT_EVERSION = -16,     /**< the store has a newer format */
	KT_ECONFLICT = -17,    /**< a conditional write saw another version */
	KT_ETOOBIG = -18,      /**< a value or attribute is over its limit */
	KT_ENOATTR = -19,      /**< the node has no attribute of that name */
	KT_EPERM = -20,        /**< not allowed for this kind of node: a
				  directory cannot have a second path, an
				  item with several paths cannot become a
				  directory */
	KT_EMLINK = -21,       /**< the node already has KT_LINK_MAX paths */
	KT_ENOTSUP = -22,      /**< not supported by this build of the library
				  or by the store's engine */
	KT_ELOCKED = -23,      /**< another owner holds a conflicting lock
				  (kt_lock_set) */
	KT_EDIRFULL = -24,     /**< the directory already holds the most
				  entries its store allows (a RADOS store:
				  100,000 by default, $KEYTREE_DIR_MAX) */
	KT_ITEROVER = -100     /**< status: an iteration is over (not an error) */
} kt_error;

/** Node kinds, as bits of kt_statbuf.kind and kt_entry.kind.  An item that is
 * also a directory has both KT_KIND_ITEM and KT_KIND_DIR; a link has only
 * KT_KIND_LINK; a special file has only KT_KIND_SPECIAL. */
#define KT_KIND_ITEM 1u
#define KT_KIND_DIR 2u
#define KT_KIND_LINK 4u
/** A special file: a FIFO, a socket or a device node, which holds no value
 * and has no children.  The store only records its type (KT_TYPE_*) and,
 * for a device, its device number; what it does is up to whoever mounts
 * or exports the tree (a kernel gives FIFOs and devices their meaning). */
#define KT_KIND_SPECIAL 8u

/** @name Types of special files
 * kt_statbuf.type and kt_entry.type of a KT_KIND_SPECIAL node (0 for every
 * other kind).  The values equal the d_type values of <dirent.h> (DT_FIFO,
 * DT_CHR, DT_BLK, DT_SOCK), which are the same on Linux and the BSDs. */
/**@{*/
#define KT_TYPE_FIFO 1u  /**< a named pipe (mkfifo) */
#define KT_TYPE_CHR 2u   /**< a character device, with a device number */
#define KT_TYPE_BLK 6u   /**< a block device, with a device number */
#define KT_TYPE_SOCK 12u /**< a Unix domain socket's name */
/**@}*/

/** An open store.  Opaque; shareable between threads. */
typedef struct kt_store kt_store;

/** An iterator over a listing.  Opaque; one thread at a time. */
typedef struct kt_iter kt_iter;

/** A set of operations committed atomically.  Opaque. */
typedef struct kt_batch kt_batch;

/* ------------------------------------------------------------------------ */
/** @name Errors */
/**@{*/

/** Static English text for an error code ("no such node", ...).  Never
 * NULL, also for unknown codes. */
KT_EXTERN const char *kt_strerror(int code);

/** The detailed message of this thread's last failing call, such as
 * "put '/a/b¦c': name 'b¦c' contains the delimiter at byte 1".  Valid until
 * the next failing call in this thread.  Empty string if none failed. */
KT_EXTERN const char *kt_errmsg(void);

/** Release memory returned by the library.  Accepts NULL. */
KT_EXTERN void kt_free(void *ptr);

/** The library version, KT_VERSION_STRING of the built library. */
KT_EXTERN const char *kt_version(void);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Opening a store */
/**@{*/

/** The kt_options layout this header describes.  Version 2 appended
 * ceph_conf and ceph_client, version 3 typed_names, version 4
 * write_buffer_size.  kt_open() still takes a struct of an older version
 * (from a program built against an older keytree.h, or one that sets the
 * number itself): it ends before the fields appended since, and those
 * count as 0 or NULL.  Any other version is refused with KT_EINVAL. */
#define KT_OPTIONS_VERSION 4

/** Options for kt_open().  Zero in a field means its default; fields are
 * only ever appended.  Initialise with KT_OPTIONS_INIT. */
typedef struct kt_options {
	unsigned int version;  /**< KT_OPTIONS_VERSION */
	int create_if_missing; /**< create the store when absent */
	int error_if_exists;   /**< fail with KT_EEXISTS if it exists */
	int read_only;         /**< refuse every write with KT_EREADONLY */
	int sync;              /**< flush every write to disk before return */
	/** The reserved delimiter: one UTF-8 character (1 to 4 bytes) or a
	 * single byte, neither NUL nor '/'.  NULL means the default "¦"
	 * (U+00A6, bytes C2 A6).  Used when creating; when opening an
	 * existing store it must be NULL or equal to the stored one. */
	const char *delimiter;
	/** LevelDB block cache bytes; 0 = 8 MiB.  Not used by a RADOS
	 * store.  Table files are read with pread(2), not mapped, so the
	 * cache is what a handle keeps of them in its resident memory (the
	 * kernel's page cache keeps the rest, outside the process);
	 * $KEYTREE_MMAP_TABLES=1 lets LevelDB map them instead, each page
	 * read then counting in the process's RSS while its table is open.
	 * Besides, a handle keeps up to 16384 small rows it has read (a row
	 * cache of at most about 9 MiB, which every commit keeps current);
	 * $KEYTREE_ROW_CACHE=N sets how many, 0 none (docs/FUSE.md). */
	size_t cache_size;
	/** (version 2) A RADOS store: the Ceph configuration file to read
	 * (ceph.conf: where the monitors are, how to authenticate).  NULL:
	 * $KEYTREE_CEPH_CONF when set and not empty, else Ceph's own search
	 * ($CEPH_CONF, /etc/ceph/ceph.conf, ~/.ceph/config, ./ceph.conf).
	 * Not used by a directory store. */
	const char *ceph_conf;
	/** (version 2) A RADOS store: the Ceph client name to connect as,
	 * "client." and an id ("client.admin").  NULL: $KEYTREE_CEPH_CLIENT
	 * when set and not empty, else Ceph's default (client.admin).  Not
	 * used by a directory store. */
	const char *ceph_client;
	/** (version 3) Used when creating: the store's names are typed
	 * (format 5).  A name that is a canonical unsigned decimal number
	 * ("0", or digits without a leading zero, at most 2^64 - 1) sorts
	 * by its value, a canonical UUID (lower-case 8-4-4-4-12 hex) is
	 * kept in 16 bytes, and the other names sort as bytes: in every
	 * directory, numbers come first in numeric order, then UUIDs (in
	 * the order of their bytes, which is that of their text), then
	 * the other names in byte order.  "007", "+7" or an upper-case UUID
	 * are other names, not errors.  Opening an existing store with it
	 * set fails with KT_EINVAL unless the store has typed names;
	 * kt_statbuf.order tells which a store has. */
	int typed_names;
	/** (version 4) LevelDB write buffer bytes: how much of the latest
	 * writes a handle keeps in memory (the memtable, and its log on
	 * disk) before it writes them out as a sorted table.  0 = 16 MiB;
	 * otherwise 1 MiB to 1 GiB, else kt_open() fails with KT_EINVAL.
	 * While one buffer is being written out the next fills, so writes
	 * that come faster than the disk takes them hold up to twice this
	 * in memory: the largest part of a writing handle's resident memory.
	 * A smaller buffer bounds that, for more and smaller tables and so
	 * more compaction work per byte written (docs/PERFORMANCE.md,
	 * "keytreefs RSS").  Used when this handle opens the database (the first
	 * process to open a store); not used by a RADOS store. */
	size_t write_buffer_size;
} kt_options;

#define KT_OPTIONS_INIT                                                        \
	{KT_OPTIONS_VERSION, 0, 0, 0, 0, NULL, 0, NULL, NULL, 0, 0}

/** The default delimiter, U+00A6 BROKEN BAR in UTF-8. */
#define KT_DEFAULT_DELIMITER "\xc2\xa6"

/** The longest tree name of a RADOS location, in bytes. */
#define KT_RADOS_TREE_MAX 100

/**
 * Open (or create) the store at @p location.
 *
 * A location is one of:
 * - a directory: the store is a LevelDB database there, shared with other
 *   processes on this host through the first one to open it (Engines);
 * - "rados:POOL/TREE" or "rados:POOL/NAMESPACE/TREE": the tree named TREE
 *   in a pool of a Ceph cluster (and a RADOS namespace of it; without one,
 *   the pool's default namespace).  POOL and NAMESPACE are 1 to 255 bytes
 *   without '/' or control characters; TREE is 1 to KT_RADOS_TREE_MAX
 *   bytes of A-Z, a-z, 0-9, '.', '_' and '-'.  The pool must exist; the
 *   tree is made in it (create_if_missing).  Every process that opens it
 *   is a client of the cluster in its own right: there is no holder.
 *   opts->ceph_conf and opts->ceph_client say how to reach the cluster.
 *
 * A location starting with "rados:" is always read as a RADOS one; a
 * directory whose name starts so is given as "./rados:x" (or by its
 * absolute path).  create_if_missing, error_if_exists and read_only mean
 * the same for both kinds: a RADOS tree without any row counts as absent.
 *
 * @param out       receives the handle, NULL on failure
 * @param location  the store's directory, or a RADOS location as above
 * @param opts      options, or NULL for the defaults (open an existing
 *                  store)
 * @return 0, or
 *   - KT_ENOTFOUND: no store there and create_if_missing is not set;
 *   - KT_EEXISTS: it exists and error_if_exists is set;
 *   - KT_EBUSY: another process holds the store and does not serve it
 *     (an older keytree, or nothing answered on DIR/keytree.sock within
 *     about 2 s).  A store another keytree process holds opens through
 *     that process (docs/CONCURRENCY.md); if it later exits, every call on
 *     the handle fails with KT_EIO and the store must be opened again;
 *   - KT_ENOTSTORE: the directory holds something that is not a keytree
 *     store (a foreign LevelDB database, or other files), or the RADOS
 *     tree has rows but no keytree header;
 *   - KT_EVERSION: the store has a newer format than this library reads;
 *   - KT_EINVAL: a bad option, a delimiter other than the store's, a
 *     RADOS location that is malformed (the message names the part at
 *     fault: pool, namespace or tree name), a ceph_client that is not
 *     "client.ID", or a ceph_conf that cannot be read;
 *   - KT_ENOTSUP: a RADOS location, and this library was built without
 *     librados, or librados.so.2 cannot be loaded (it is loaded when the
 *     first RADOS location is opened; KEYTREE_LIBRADOS names another
 *     file);
 *   - KT_ECORRUPT, KT_EIO: the storage is damaged or unreadable; for a
 *     RADOS location, also: the cluster cannot be reached or the pool
 *     does not exist (the message says which).
 */
KT_EXTERN int kt_open(kt_store **out, const char *location,
		      const kt_options *opts);

/** Close a store, flushing nothing beyond what sync already made durable.
 * Accepts NULL.  No iterator or batch of the store may outlive it. */
KT_EXTERN void kt_close(kt_store *store);

/** Remove the store at @p location and everything in it, for good.
 *
 * A directory: its LevelDB files are removed, then the directory itself
 * unless something else is left in it.  Refused while any process has the
 * store open (LevelDB's lock tells), and for a directory that does not
 * hold a keytree store.
 *
 * A RADOS tree: every object of the tree is removed, the catalog first, so
 * that the tree cannot be opened any more; a removal cut short leaves a
 * tree that cannot be opened, and calling again finishes it.  Clients
 * that have the tree open are not detected (RADOS has no holder): their
 * later calls fail or find nothing.
 *
 * Of @p opts (may be NULL) only version, ceph_conf and ceph_client count.
 * Returns 0, KT_ENOTFOUND (no store there), KT_EBUSY (open in another
 * process; the message names it), KT_ENOTSTORE (not a keytree store),
 * KT_EINVAL (a malformed location or options), KT_ENOTSUP (RADOS not
 * available), KT_EIO. */
KT_EXTERN int kt_destroy(const char *location, const kt_options *opts);

/** Make every write acknowledged so far durable on disk.  Returns 0 or
 * KT_EIO.  Engines: on a client the holder syncs its LevelDB, which makes
 * every process's acknowledged writes durable. */
KT_EXTERN int kt_sync(kt_store *store);

/** The store's delimiter, NUL-terminated; @p len receives its length in
 * bytes if not NULL.  Valid while the store is open. */
KT_EXTERN const char *kt_delimiter(const kt_store *store, size_t *len);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Watching what other processes change
 * A program that caches what it read (keytreefs: the kernel's caches of
 * names, attributes and pages) learns here what other processes sharing
 * the store committed, so that it can forget it.  See
 * docs/CONCURRENCY.md. */
/**@{*/

/** A name whose entry was added, removed or replaced. */
#define KT_CHANGE_NAME 1
/** A node whose metadata, value, attributes or paths changed. */
#define KT_CHANGE_NODE 2

/** One change, as a kt_watch() callback hears it. */
typedef struct kt_change {
	unsigned int what;  /**< KT_CHANGE_NAME or KT_CHANGE_NODE */
	const char *dir;    /**< NAME: the directory, a canonical path */
	size_t dir_len;
	const char *name;   /**< NAME: the entry's name (not NUL-ended) */
	size_t name_len;
	uint64_t id;        /**< NODE: the node's id */
} kt_change;

/** Hears the @p n changes of one commit of another process, on a thread
 * of the library.  The changes are valid during the call.  It may call
 * the library (reads are what it is for) but must not wait for anything
 * the committing process does. */
typedef void (*kt_watch_cb)(const kt_change *changes, size_t n,
			    void *payload);

/**
 * Hear every commit another process (or another handle) makes to the
 * store from now on, until kt_watch(store, NULL, NULL) or kt_close().
 * The handle's own commits are not reported.  A commit of a process that
 * watches nothing returns only after every watcher has heard of it (or
 * 2 s have passed), so that what it changed is not seen stale through a
 * watcher's caches afterwards; a commit of a watching process does not
 * wait (two watchers waiting for each other could never finish).
 * Changes are reported at the level of names and node ids; a commit that
 * moves a subtree reports every name in it.
 * Engines: the holder's server hears every commit; it tells the holder's
 * own watcher through a thread of its own, and a client's over a second
 * connection to the holder.
 * Engines: a RADOS store has no holder; its clients tell each other with
 * RADOS watch/notify on the tree's object TREE!watch, and the callback
 * runs on a thread of the watching handle.  Every handle (in this or
 * another process, on this or another host) is another client there.
 * A new watcher says hello to the handles that watch already, which tell
 * it their commits from then on; a handle that watches nothing reads who
 * watches at most once a second, so kt_watch() returns only 1.1 s after
 * its watcher is registered, when every handle knows of it: the watcher
 * misses no commit made after kt_watch() returned.  A commit of a handle
 * that watches nothing waits for the watchers' acknowledgements, 2 s at
 * most (a watcher that died costs that whole wait, until the OSD drops
 * its watch, 30 s by default; the next commit then forgets it).
 * @return 0, KT_EEXISTS when a callback is already set, KT_EIO when the
 *   holder or the cluster cannot be reached, KT_ENOMEM.
 */
KT_EXTERN int kt_watch(kt_store *store, kt_watch_cb cb, void *payload);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Advisory locks kept in the store
 * Locks that every client of a store sees, wherever it runs: what
 * keytreefs gives fcntl(2) and flock(2) on a RADOS tree, so that programs
 * on two hosts that lock a file exclude each other.  They are advisory:
 * nothing else in the library looks at them.
 *
 * A lock covers bytes [start, end] of a node (by id: every path of the
 * node shares its locks), shared or exclusive, and belongs to an owner,
 * a number the caller chooses, scoped to the store handle: two owners
 * (of one handle or of two) conflict when their ranges overlap and one
 * of them is exclusive.  An owner's own locks never conflict: setting a
 * lock replaces what the owner held in that range, splitting and merging
 * ranges as POSIX record locks do, and KT_LOCK_UNLOCK over a range drops
 * the owner's locks there.  With KT_LOCK_WHOLE the lock is flock(2)'s
 * kind instead: on the whole node, in a space of its own (whole-node and
 * range locks never conflict with each other), start and end ignored.
 *
 * Engines: a RADOS tree keeps a node's locks in object TREE!lk.<id>
 * (docs/FORMAT.md), changed with guarded operations.  A client that holds
 * locks watches TREE!lkw; one whose lock is in the way is asked whether it
 * lives (a notify on TREE!lkw), and one that does not answer within the
 * lease (KEYTREE_RADOS_LEASE_MS, 3 s by default) is fenced first (its
 * address blocklisted in the cluster, so that a paused client cannot go on
 * writing as if it still held the lock) and its locks on that node are
 * dropped.  A fenced client's every later call fails with KT_EIO saying
 * so: it must open the store again.  Other engines keep a store on one
 * host, where the kernel's own locks serve: kt_lock_set() and
 * kt_lock_test() return KT_ENOTSUP there.
 */
/**@{*/
#define KT_LOCK_UNLOCK 0  /**< no lock: drop the owner's locks in the range */
#define KT_LOCK_SHARED 1  /**< a shared (read) lock */
#define KT_LOCK_EXCL 2    /**< an exclusive (write) lock */
/** Flag: a whole-node lock (flock(2)), apart from the range locks. */
#define KT_LOCK_WHOLE 1u

/** One lock, or the one in the way (kt_lock_test). */
typedef struct kt_lock {
	int type;        /**< KT_LOCK_SHARED, KT_LOCK_EXCL or KT_LOCK_UNLOCK */
	uint64_t start;  /**< its first byte */
	uint64_t end;    /**< its last byte (UINT64_MAX: to any end); >= start */
	uint64_t owner;  /**< whose it is (scoped to the store handle) */
	uint32_t pid;    /**< kept with the lock, for kt_lock_test to report */
	int here;        /**< kt_lock_test: the lock is held through this
			    handle (otherwise pid names a process that may
			    run on another host) */
} kt_lock;

/**
 * Set, change or drop (KT_LOCK_UNLOCK) owner @p lk->owner's lock over
 * [@p lk->start, @p lk->end] of node @p id, which need not exist (a lock
 * is not checked against the tree).  Never waits: a conflicting lock of
 * another owner gives KT_ELOCKED and changes nothing; who holds it is
 * kt_lock_test()'s to tell.  Dropping what the owner does not hold is 0
 * and costs nothing.  kt_close() drops every lock the handle holds.
 * @return 0, KT_ELOCKED, KT_EINVAL (a bad type or range), KT_ENOTSUP (not
 *   a RADOS store), KT_EIO, KT_ECORRUPT (a lock object that does not
 *   decode), KT_ENOMEM.
 */
KT_EXTERN int kt_lock_set(kt_store *store, uint64_t id, const kt_lock *lk,
			  unsigned int flags);

/**
 * Would kt_lock_set(@p store, @p id, @p lk, @p flags) conflict?  On
 * return *@p lk describes the first conflicting lock of another owner
 * (its type, range, owner, pid and whether it is held through this
 * handle), or has type KT_LOCK_UNLOCK when there is none.  A lock of a
 * client that is fenced meanwhile (above) is not in the way.
 * @return 0, KT_EINVAL, KT_ENOTSUP, KT_EIO, KT_ECORRUPT, KT_ENOMEM.
 */
KT_EXTERN int kt_lock_test(kt_store *store, uint64_t id, kt_lock *lk,
			   unsigned int flags);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Node metadata */
/**@{*/

/** What kt_stat() reports about one node.
 *
 * Times follow POSIX: a new node gets atime = mtime = ctime = now; writing
 * a value (put, write, truncate) sets mtime and ctime; kt_setattr() and
 * attribute changes set ctime; adding or removing a child sets the
 * directory's mtime and ctime; a rename sets the moved node's ctime.  Reads
 * never change atime.  The version changes whenever any of the node's
 * metadata, value or attributes change, and versions are never reused in a
 * store, not even after a node is deleted and made again. */
typedef struct kt_statbuf {
	uint64_t id;       /**< persistent unique id, kept across rename */
	unsigned int kind; /**< KT_KIND_* bits */
	uint32_t mode;     /**< permission bits (07777) */
	uint32_t uid, gid; /**< owner */
	uint64_t size;     /**< value bytes, or link target bytes */
	int64_t atime_ns;  /**< times in nanoseconds since the Unix epoch */
	int64_t mtime_ns;
	int64_t ctime_ns;
	uint64_t version;  /**< changes on every write of the node */
	uint32_t nsubdirs; /**< children that are directories */
	uint32_t nattrs;   /**< number of attributes */
	uint64_t stored;   /**< bytes the value takes in the store: its size
			      when inline, else its stored blocks in whole
			      blocks (holes take none); 0 for non-items */
	unsigned int type; /**< KT_TYPE_* of a special file; 0 otherwise */
	uint64_t rdev;     /**< device number of a character or block device
			      (a dev_t as makedev(3) encodes it); 0 for
			      everything else */
	uint32_t nlink;    /**< paths of the node: 1, or more for a node
			      given further paths with kt_link() (a hard
			      link count); always 1 for a directory */
	unsigned int order; /**< a directory's: how its children sort
			       (KT_ORDER_*), chosen for the whole store at
			       creation (kt_options.typed_names); 0 for
			       every other node */
} kt_statbuf;

/** @name How a directory orders its children (kt_statbuf.order) */
/**@{*/
#define KT_ORDER_BYTES 1 /**< by the bytes of their names */
#define KT_ORDER_TYPED 2 /**< typed names: numbers by value, then UUIDs,
			    then the other names by their bytes */
/**@}*/

/** Metadata of the node at @p path, following a link in the last
 * component.  Returns 0, KT_ENOTFOUND, KT_ENOTDIR, KT_ELOOP or a path
 * error. */
KT_EXTERN int kt_stat(kt_statbuf *st, kt_store *store, const char *path);

/** As kt_stat() but a link in the last component is reported itself; the
 * same errors (KT_ELOOP only from the other components). */
KT_EXTERN int kt_lstat(kt_statbuf *st, kt_store *store, const char *path);

/** The canonical path of the node whose id is @p id, in a NUL-terminated
 * string (*path, free with kt_free()) and its length (*len, may be NULL).
 * One lookup: every node has an id row that names its path.  KT_ENOTFOUND
 * if no node in the tree has that id: it was deleted, never existed, or is
 * an orphan (reach those with the kt_orphan_* calls); KT_ENAMETOOLONG for
 * a node whose path is over the limits (see kt_repair()). */
KT_EXTERN int kt_id_path(char **path, size_t *len, kt_store *store,
			 uint64_t id);

/** As kt_read() on the node whose id is @p id, wherever it is now: the id,
 * the node and its value are read from one snapshot, so a rename at the
 * same time cannot make it read another node.  KT_ENOTFOUND if no node has
 * that id, KT_EISDIR for a directory without a value, KT_EINVAL for a
 * link or a special file. */
KT_EXTERN int kt_id_read(size_t *nread, kt_store *store, uint64_t id,
			 void *buf, size_t len, uint64_t offset);

/** kt_id_path() and kt_lstat() of that path, read from one consistent
 * view.  @p path may be NULL when only the metadata is wanted; otherwise
 * it is set as by kt_id_path().  The errors of kt_id_path(). */
KT_EXTERN int kt_id_lstat(kt_statbuf *st, char **path, size_t *len,
			  kt_store *store, uint64_t id);

/** Flags for kt_setattr(). */
#define KT_SET_MODE 0x01u
#define KT_SET_UID 0x02u
#define KT_SET_GID 0x04u
#define KT_SET_ATIME 0x08u     /**< atime_ns */
#define KT_SET_MTIME 0x10u     /**< mtime_ns */
#define KT_SET_ATIME_NOW 0x20u /**< atime = now */
#define KT_SET_MTIME_NOW 0x40u /**< mtime = now */
#define KT_NOFOLLOW 0x1000u    /**< act on a link itself, not its target */

#define KT_SETATTR_ARGS_VERSION 1

/** Changes for kt_setattr(); @c mask says which fields apply.  Fields are
 * only ever appended.  Initialise with KT_SETATTR_ARGS_INIT; any other
 * version is refused with KT_EINVAL. */
typedef struct kt_setattr_args {
	unsigned int version;      /**< KT_SETATTR_ARGS_VERSION */
	unsigned int mask;         /**< KT_SET_* bits */
	uint32_t mode, uid, gid;   /**< with KT_SET_MODE, _UID, _GID */
	int64_t atime_ns, mtime_ns; /**< with KT_SET_ATIME, KT_SET_MTIME */
} kt_setattr_args;

#define KT_SETATTR_ARGS_INIT {KT_SETATTR_ARGS_VERSION, 0, 0, 0, 0, 0, 0}

/** Change mode, owner or times.  Follows a link in the last component
 * unless @p flags has KT_NOFOLLOW.  ctime becomes now.  Returns 0,
 * KT_ENOTFOUND, KT_EINVAL (args NULL or of another version, mode above
 * 07777, unknown mask bits or flags), KT_ENOTDIR, KT_ELOOP, a path error
 * or KT_EREADONLY. */
KT_EXTERN int kt_setattr(kt_store *store, const char *path,
			 const kt_setattr_args *args, unsigned int flags);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Creating and writing nodes */
/**@{*/

#define KT_CREATE_OPTIONS_VERSION 1

/** kt_create_options.flags */
#define KT_CREATE_EXCL 0x01u       /**< put: fail if an item or link exists;
				      mkdir: fail if a directory exists */
#define KT_CREATE_PARENTS 0x02u    /**< mkdir: make missing ancestors (every
				      other creating call always does) */
#define KT_CREATE_IF_VERSION 0x04u /**< put: write only if the item's version
				      equals if_version (KT_ECONFLICT) */
#define KT_CREATE_MODE 0x08u       /**< use mode for a new node */
#define KT_CREATE_OWNER 0x10u      /**< use uid/gid for new nodes */
#define KT_CREATE_NEW 0x20u        /**< put, mkdir, symlink, mknod: fail
				      with KT_EEXISTS if any node at all is
				      at the path (a link there is not
				      followed): the check and the create are
				      one atomic step, also against other
				      processes */

/* Missing ancestors.  Every call that makes a node at a path makes the
 * missing directories above it, as `mkdir -p` would, in the same atomic
 * batch: kt_put(), kt_symlink(), kt_mknod(), kt_orphan_link() and their
 * batch forms.  An ancestor that is an item becomes an item and directory;
 * an ancestor that is a link is followed; one that is a special file is
 * KT_ENOTDIR.  kt_mkdir() is the one exception: like mkdir(1), it wants
 * the parent to exist unless KT_CREATE_PARENTS is given.  (keytreefs keeps
 * POSIX behaviour: there a missing parent is ENOENT.) */

/** How to create nodes.  NULL means defaults: mode 0644 for items and
 * special files, 0755 for directories, 0777 for links; owner the process's
 * effective uid/gid. */
typedef struct kt_create_options {
	unsigned int version; /**< KT_CREATE_OPTIONS_VERSION */
	unsigned int flags;   /**< KT_CREATE_* */
	uint32_t mode;        /**< with KT_CREATE_MODE: permission bits */
	uint32_t uid, gid;    /**< with KT_CREATE_OWNER */
	uint64_t if_version;  /**< with KT_CREATE_IF_VERSION */
} kt_create_options;

#define KT_CREATE_OPTIONS_INIT {KT_CREATE_OPTIONS_VERSION, 0, 0, 0, 0, 0}

/**
 * Write the whole value of the item at @p path, creating it and any missing
 * ancestors.  An existing directory there becomes an item and directory at
 * once; an existing item keeps its id, mode and owner.  Ancestors that are
 * items become items and directories.  The root is a directory and cannot
 * hold a value (KT_EINVAL).  Follows links in every component,
 * the last included; a dangling link fails with KT_ENOTFOUND.
 *
 * @param value  @p len bytes; may be NULL when len is 0
 * @return 0, KT_EEXISTS (KT_CREATE_EXCL and an item, link or special
 *   file is there), KT_EINVAL (a special file is there: it holds no
 *   value), KT_ECONFLICT (KT_CREATE_IF_VERSION and another version, or no item),
 *   KT_ENOTDIR (an ancestor is a link to an item), KT_ETOOBIG, KT_ELOOP,
 *   a path error, KT_EREADONLY.
 */
KT_EXTERN int kt_put(kt_store *store, const char *path, const void *value,
		     size_t len, const kt_create_options *opts);

/**
 * Make a directory at @p path.  The parent must exist unless
 * KT_CREATE_PARENTS is given.  An existing item there becomes an item and
 * directory.  An existing directory is KT_EEXISTS, except with
 * KT_CREATE_PARENTS (like mkdir -p).  Does not follow a link in the last
 * component: a link or a special file there is KT_EEXISTS.
 * @return 0, KT_EEXISTS, KT_ENOTFOUND (a missing parent without
 *   KT_CREATE_PARENTS), KT_ENOTDIR (an ancestor is not a directory or an
 *   item), KT_EPERM (the item there, or an item ancestor, has several
 *   paths: kt_link()), KT_EINVAL (unknown flags, a mode above 07777),
 *   KT_ELOOP, a path error, KT_EREADONLY.
 */
KT_EXTERN int kt_mkdir(kt_store *store, const char *path,
		       const kt_create_options *opts);

/**
 * Make a symbolic link at @p link whose target is @p target, stored
 * verbatim (absolute or relative, 1 to KT_PATH_MAX bytes, need not exist).
 * Missing ancestors are made, as kt_put() makes them (KT_CREATE_PARENTS
 * changes nothing).  Anything at @p link already is KT_EEXISTS.
 * @return 0, KT_EEXISTS, KT_EINVAL (an empty target, bad options),
 *   KT_ENAMETOOLONG (a target over KT_TARGET_MAX), KT_ENOTDIR, KT_EPERM
 *   (an item ancestor with several paths), KT_ELOOP, a path error,
 *   KT_EREADONLY.
 */
KT_EXTERN int kt_symlink(kt_store *store, const char *link, const char *target,
			 const kt_create_options *opts);

/** The target of the link at @p path, as stored, NUL-terminated; release
 * with kt_free().  @p len (if not NULL) receives its length.  KT_EINVAL if
 * the node is not a link; KT_ENOTFOUND, KT_ENOTDIR, KT_ELOOP or a path
 * error as kt_lstat(). */
KT_EXTERN int kt_readlink(char **target, size_t *len, kt_store *store,
			  const char *path);

/**
 * Make a special file at @p path: a FIFO, a socket, or a character or block
 * device (@p type, one of KT_TYPE_*).  The store records the type and the
 * device number; it gives the node no behaviour.  Missing ancestors are
 * made, as kt_put() makes them (an ancestor that is an item becomes an item
 * and directory).  Anything at @p path already, a dangling link included,
 * is KT_EEXISTS.  Does not follow a link in the last component.  Options
 * give the mode (default 0644) and owner; KT_CREATE_EXCL and
 * KT_CREATE_PARENTS change nothing, since both always hold.
 *
 * A special file has a mode, an owner, times and attributes, and can be
 * renamed, deleted and kt_setattr()'d like any node.  It holds no value:
 * kt_get(), kt_read(), kt_write(), kt_truncate() and kt_put() on it fail
 * with KT_EINVAL.  It has no children: a path through it is KT_ENOTDIR.
 *
 * @param rdev  the device number of a KT_TYPE_CHR or KT_TYPE_BLK node (any
 *              value, 0 included); must be 0 for a FIFO or a socket
 * @return 0, KT_EEXISTS, KT_EINVAL (an unknown type, a device number on a
 *   FIFO or socket, the root), KT_ENOTDIR (an ancestor is not a directory
 *   or an item), KT_ELOOP, a path error, KT_EREADONLY.
 */
KT_EXTERN int kt_mknod(kt_store *store, const char *path, unsigned int type,
		       uint64_t rdev, const kt_create_options *opts);

/**
 * Read the whole value of the item at @p path (following links).  The
 * value is returned in a buffer from malloc, with one NUL byte after the
 * last (not counted in @p len), released with kt_free().
 * @return 0, KT_ENOTFOUND, KT_EISDIR (a directory without a value),
 *   KT_EINVAL (a special file), KT_ENOTDIR, KT_ELOOP, KT_ENOMEM, a path
 *   error.
 */
KT_EXTERN int kt_get(void **value, size_t *len, kt_store *store,
		     const char *path);

/** Read up to @p len bytes at @p offset of the item's value into @p buf;
 * @p nread receives the count (0 at or past the end).  Holes read as
 * zeros.  Follows links.  KT_EISDIR for a directory without a value,
 * KT_EINVAL for a special file; KT_ENOTFOUND, KT_ENOTDIR, KT_ELOOP or a
 * path error as kt_get(). */
KT_EXTERN int kt_read(size_t *nread, kt_store *store, const char *path,
		      void *buf, size_t len, uint64_t offset);

/** kt_write() offset meaning "at the end of the value", read and written
 * under the writer lock, so concurrent appends never overwrite each other
 * (O_APPEND). */
#define KT_APPEND UINT64_MAX

/** Write @p len bytes at @p offset (or at the end, with KT_APPEND) of an
 * existing item's value, extending it (with a hole) as needed.  Costs the
 * bytes written, not the size of the value.  Follows links.  KT_ENOTFOUND if
 * there is no node, KT_EISDIR for a directory without a value, KT_EINVAL
 * for a special file or a NULL @p buf with @p len > 0, KT_ETOOBIG past
 * KT_VALUE_MAX, KT_ENOTDIR, KT_ELOOP, a path error, KT_EREADONLY. */
KT_EXTERN int kt_write(kt_store *store, const char *path, const void *buf,
		       size_t len, uint64_t offset);

/** Set the size of an existing item's value, cutting it or extending it
 * with a hole.  Follows links.  Fails as kt_write() does (KT_ETOOBIG for
 * a size over KT_VALUE_MAX). */
KT_EXTERN int kt_truncate(kt_store *store, const char *path, uint64_t size);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Removing and renaming */
/**@{*/

#define KT_DELETE_RECURSIVE 0x01u /**< remove the whole subtree */
#define KT_DELETE_PRUNE 0x02u     /**< then remove ancestors left as empty
				     directories without a value */
#define KT_DELETE_ITEM 0x04u      /**< remove only the value of an item that
				     is also a directory; the directory stays */
#define KT_DELETE_ALL_PATHS 0x08u /**< remove a node with several paths
				     (kt_link) under every one of them, with
				     its value and attributes */

/**
 * Remove the node at @p path.  A link in the last component is removed
 * itself, not its target.  A node with children fails with KT_ENOTEMPTY
 * unless KT_DELETE_RECURSIVE is given, in which case the whole subtree goes
 * atomically (see "Large subtrees" at kt_rename()).  The root cannot be
 * removed (KT_EINVAL).
 * With KT_DELETE_ITEM the node must be an item (KT_EISDIR for a directory
 * without a value, KT_EINVAL for a link or a special file); if it is also a directory, only
 * the value goes and the directory (with its attributes) stays.
 * KT_DELETE_PRUNE then walks up from the parent and removes each ancestor
 * below the root that is a directory without a value and without children.
 * The parent's mtime and ctime become now.
 *
 * A node with several paths (kt_link()) loses only the path given: it stays
 * under its others, with its link count one less, and its value and
 * attributes go with its last path (POSIX unlink).  A recursive delete does
 * the same for every such path below @p path.  KT_DELETE_ALL_PATHS removes
 * the node at @p path under all its paths at once, and its value and
 * attributes, in one batch (StatelyDB's delete of an item with aliases); on
 * a node with one path it is an ordinary delete.
 *
 * @return 0, KT_ENOTFOUND, KT_ENOTEMPTY, KT_EISDIR and KT_EINVAL (as
 *   above, and for the root, unknown flags or flags that exclude each
 *   other), KT_ENOTDIR (an ancestor is not a directory; KT_DELETE_DIR on
 *   what is not one), KT_ELOOP, a path error, KT_EREADONLY.
 */
KT_EXTERN int kt_delete(kt_store *store, const char *path,
			unsigned int flags);

#define KT_RENAME_NOREPLACE 0x01u /**< fail with KT_EEXISTS if dst exists */
#define KT_RENAME_EXCHANGE 0x02u  /**< swap src and dst, both must exist */

/**
 * Move the node at @p src, with its whole subtree, to @p dst atomically.
 * Links in the last component of either path are not followed.  POSIX
 * rules: a non-directory replaces a non-directory; a directory replaces
 * only an empty directory (KT_ENOTEMPTY); a directory over a
 * non-directory is KT_ENOTDIR, the reverse KT_EISDIR; moving a directory
 * into itself is KT_EINVAL; renaming a path to itself, or onto another
 * path of the same node (kt_link()), does nothing.  The parent of @p dst
 * must exist.  Ids are kept.  Of a node with several paths only the path
 * @p src moves; replacing one path of such a node at @p dst removes only
 * that path.
 *
 * Cost: rows are keyed by path, so the move rewrites one row per node in
 * the subtree plus one per index entry: linear in the subtree size.  Values
 * and attributes are keyed by id and are not copied.
 *
 * Large subtrees (this call and a recursive kt_delete()).  On a directory
 * store, a subtree of more than 16384 rows is moved or deleted in steps
 * of that many rows after one commit that makes the change (its commit
 * point), so memory stays bounded.  Readers never see the steps: those of
 * other parts of the tree go on as usual, those of the subtree (at either
 * path) wait until the last step; writers of the subtree wait too, and
 * writers of this handle wait for the whole call.  If the process dies
 * after the commit point, the next writable open of the store finishes
 * the change before it returns (a read-only open fails with KT_EBUSY until
 * then).  If a step fails (KT_EIO, KT_ENOMEM), the call returns that error
 * although the change is made, saying so, and the subtree stays
 * unreadable through this handle (KT_EIO) until the store is opened
 * again.  Through another process's store the same holds, and if this
 * process dies in the steps, that process finishes them.  On RADOS a
 * subtree of more than 16384 rows (or 8 MiB) goes in steps too, as the
 * parts of one staged commit: nothing of it is seen before the last part, when all of
 * it takes effect at once; readers of the subtree read it as it was until
 * then and wait for nothing, writers of it wait; a client that dies
 * before that point leaves nothing done (its locks are rolled back once
 * its heartbeat has stood still for a lease), one that dies after it
 * leaves all of it done (docs/FORMAT.md §14, "Staged commits").  Inside
 * a batch, and with KT_RENAME_EXCHANGE or KT_DELETE_ALL_PATHS, the whole
 * subtree is one batch in memory, as for a small one (docs/FORMAT.md
 * §11).
 *
 * @return 0, KT_ENOTFOUND (no @p src, or no parent of @p dst),
 *   KT_EEXISTS (KT_RENAME_NOREPLACE), KT_ENOTEMPTY, KT_ENOTDIR, KT_EISDIR,
 *   KT_EINVAL (into itself, the root, unknown flags, NOREPLACE with
 *   EXCHANGE), KT_ENAMETOOLONG (a node of the subtree would be over the
 *   path limits at its new place), KT_ELOOP, a path error, KT_EREADONLY.
 */
KT_EXTERN int kt_rename(kt_store *store, const char *src, const char *dst,
			unsigned int flags);

/**
 * Give the node at @p existing a further path, @p newpath: a hard link, or
 * in StatelyDB's terms an alias.  Every path of the node is a full citizen:
 * a get, stat or read through any of them is the same node (the same id,
 * value, attributes, mode, owner, times and version) and costs one lookup
 * of its node row, as through the first; a listing shows each path as an
 * ordinary child; a change through any path (a value, a ranged write, a
 * truncate, attributes, kt_setattr()) changes it under every path in the
 * same atomic batch.  kt_statbuf.nlink counts the paths.
 *
 * Cost: each path has its own copy of the node row, so every change to
 * the node rewrites one row per path (linear in its paths, at most
 * KT_LINK_MAX); values and attributes are keyed by id and stored once.
 * The node's ctime becomes now.
 *
 * A link in the last component of @p existing is not followed (the link
 * itself gets the new path, as link(2) does); links in the other components
 * of both paths are.  Missing ancestors of @p newpath are made, as kt_put()
 * makes them.  kt_delete() removes one path; kt_rename() moves one.
 *
 * @return 0, KT_ENOTFOUND (no node at @p existing), KT_EEXISTS (anything
 *   at @p newpath), KT_EPERM (@p existing is a directory, an item and
 *   directory included, or the root), KT_EMLINK (it has KT_LINK_MAX paths
 *   already), KT_ENOTDIR, KT_ELOOP, a path error, KT_EREADONLY.
 */
KT_EXTERN int kt_link(kt_store *store, const char *existing,
		      const char *newpath);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Calls by directory id and name
 * What a filesystem needs: it knows a directory by its id (an inode
 * number), not by a path, and another process may rename the directory at
 * any moment.  These calls name a node as (@p dir, @p name): the child
 * @p name of the directory whose id is @p dir.  The id is resolved inside
 * the call's own atomic step, so the call acts on the directory wherever it
 * is when it commits, never on a stale path.  @p name is one component:
 * not empty, no '/', not "." or "..", within KT_NAME_MAX, without the
 * delimiter (KT_EINVAL, KT_ENAMETOOLONG, KT_ERESERVED).  Besides each
 * call's own errors: KT_ENOTFOUND (no node has id @p dir), KT_ENOTDIR
 * (it is not a directory), KT_ENAMETOOLONG (the resulting path is over
 * KT_PATH_MAX or KT_DEPTH_MAX). */
/**@{*/

#define KT_MAKE_ARGS_VERSION 1

/** What kt_make_at() makes. */
typedef struct kt_make_args {
	unsigned int version; /**< KT_MAKE_ARGS_VERSION */
	unsigned int kind;    /**< KT_KIND_ITEM, KT_KIND_DIR, KT_KIND_LINK
				 or KT_KIND_SPECIAL */
	const void *data;     /**< ITEM: the value; LINK: the target */
	size_t len;           /**< bytes of data */
	unsigned int type;    /**< SPECIAL: KT_TYPE_* */
	uint64_t rdev;        /**< SPECIAL: the device number */
	kt_create_options create; /**< mode and owner (KT_CREATE_MODE,
				     KT_CREATE_OWNER; other flags are
				     KT_EINVAL); version 0 means defaults */
} kt_make_args;

/** kt_lstat() of (@p dir, @p name), read from one snapshot. */
KT_EXTERN int kt_lstat_at(kt_statbuf *st, kt_store *store, uint64_t dir,
			  const char *name);

/**
 * Make a new node (@p dir, @p name) as @p args says, only if nothing at
 * all has that name (KT_EEXISTS otherwise, whatever is there: the check
 * and the create are one atomic step, also against other processes).
 * @p st (may be NULL) receives the new node's metadata.
 * @return 0, KT_EEXISTS, KT_EINVAL (bad args: unknown kind or type, a
 *   link target that is empty or holds a NUL), KT_ETOOBIG,
 *   KT_ENAMETOOLONG (a link target over KT_TARGET_MAX), KT_EREADONLY, and
 *   the errors of every call by directory id.
 */
KT_EXTERN int kt_make_at(kt_statbuf *st, kt_store *store, uint64_t dir,
			 const char *name, const kt_make_args *args);

/** kt_delete() of (@p dir, @p name), with its @p flags and errors. */
KT_EXTERN int kt_delete_at(kt_store *store, uint64_t dir, const char *name,
			   unsigned int flags);

/** kt_rename() of (@p dir, @p name) to (@p newdir, @p newname), with its
 * @p flags and errors; both directories are resolved in the same atomic
 * step. */
KT_EXTERN int kt_rename_at(kt_store *store, uint64_t dir, const char *name,
			   uint64_t newdir, const char *newname,
			   unsigned int flags);

/** kt_link() of the node with id @p id (at the path its id row names) to
 * (@p newdir, @p newname); @p st (may be NULL) receives its metadata
 * afterwards (the new link count).  KT_ENOTFOUND also when no node has id
 * @p id. */
KT_EXTERN int kt_link_at(kt_statbuf *st, kt_store *store, uint64_t id,
			 uint64_t newdir, const char *newname);

/** kt_delete() and kt_delete_at() flag: remove only a directory without a
 * value (what rmdir(2) removes): KT_ENOTDIR for anything that is not a
 * directory (a link to one included), KT_ENOTEMPTY for an item and
 * directory (its value counts as content).  Not with KT_DELETE_ITEM or
 * KT_DELETE_NOTDIR (KT_EINVAL). */
#define KT_DELETE_DIR 0x10u
/** kt_delete() and kt_delete_at() flag: remove only a node that is not a
 * directory (what unlink(2) removes): KT_EISDIR for a directory, an item
 * and directory included. */
#define KT_DELETE_NOTDIR 0x20u
/** kt_rename() and kt_rename_at() flag: a directory that is also an item
 * is not empty (KT_ENOTEMPTY when a directory would replace it), as for a
 * filesystem that shows the value as a file inside it. */
#define KT_RENAME_VALUE_FULL 0x04u

/** kt_delete_at(), only if the node (@p dir, @p name) is the one with id
 * @p id: KT_ECONFLICT if another node has the name now (KT_ENOTFOUND if
 * none has), checked in the same atomic step as the delete.  For a caller
 * that decided what to do from the node it saw there. */
KT_EXTERN int kt_delete_at_if(kt_store *store, uint64_t dir,
			      const char *name, uint64_t id,
			      unsigned int flags);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Calls by node id
 * What a filesystem does to an inode it knows by number.  Each resolves
 * @p id (its id row) inside the call's own atomic step and acts on that
 * node wherever it is when the step commits, so a rename of the node or of
 * a directory above it at the same time, in this process or another,
 * cannot make it act on another node or lose the change.  The node itself
 * is acted on: a link is never followed.  Besides each call's own errors:
 * KT_ENOTFOUND (no node in the tree has id @p id: it was deleted, never
 * existed, or is an orphan, reached by the kt_orphan_* calls),
 * KT_EREADONLY for the changing calls on a read-only store. */
/**@{*/

/** kt_write() on the node with id @p id: KT_EISDIR for a directory
 * without a value, KT_EINVAL for a link or a special file, KT_ETOOBIG.
 * The value of an item and directory is written. */
KT_EXTERN int kt_id_write(kt_store *store, uint64_t id, const void *buf,
			  size_t len, uint64_t offset);

/** kt_put() on the node with id @p id: its whole value; a directory
 * without one gets it (and is an item and directory from then on).
 * KT_EINVAL for a link, a special file or the root, KT_EEXISTS with
 * KT_CREATE_EXCL when it is an item already, KT_ECONFLICT with
 * KT_CREATE_IF_VERSION, KT_ETOOBIG. */
KT_EXTERN int kt_id_put(kt_store *store, uint64_t id, const void *value,
			size_t len, const kt_create_options *opts);

/** kt_truncate() on the node with id @p id; errors as kt_id_write(). */
KT_EXTERN int kt_id_truncate(kt_store *store, uint64_t id, uint64_t size);

/** kt_setattr() on the node with id @p id (a link itself, as with
 * KT_NOFOLLOW); @p st (may be NULL) receives its metadata afterwards.
 * KT_EINVAL for bad @p args as kt_setattr(). */
KT_EXTERN int kt_id_setattr(kt_statbuf *st, kt_store *store, uint64_t id,
			    const kt_setattr_args *args);

/** kt_attr_set() on the node with id @p id.  KT_EEXISTS, KT_ENOATTR as
 * @p flags say, KT_EINVAL for a link (links carry no attributes) or a bad
 * name, KT_ENAMETOOLONG, KT_ERESERVED, KT_ETOOBIG. */
KT_EXTERN int kt_id_attr_set(kt_store *store, uint64_t id, const char *name,
			     const void *value, size_t len,
			     unsigned int flags);

/** kt_attr_get() on the node with id @p id, read from one snapshot;
 * release @p value with kt_free().  KT_ENOATTR if absent (always for a
 * link), and the name errors of kt_id_attr_set(). */
KT_EXTERN int kt_id_attr_get(void **value, size_t *len, kt_store *store,
			     uint64_t id, const char *name);

/** kt_attr_delete() on the node with id @p id: KT_ENOATTR if absent, and
 * the name errors of kt_id_attr_set(). */
KT_EXTERN int kt_id_attr_delete(kt_store *store, uint64_t id,
				const char *name);

/** kt_attr_iter_new() on the node with id @p id, over a snapshot taken
 * now (a link's iteration is empty). */
KT_EXTERN int kt_id_attr_iter_new(kt_iter **out, kt_store *store, uint64_t id);

/** kt_delete() of the node with id @p id at the path its id row names,
 * with kt_delete()'s @p flags and errors: with KT_DELETE_ITEM, what drops
 * the value of an item and directory wherever it is. */
KT_EXTERN int kt_id_delete(kt_store *store, uint64_t id, unsigned int flags);

/** kt_orphan_copy() of the node with id @p id, into a new orphan whose
 * id @p orphan receives; with @p flags KT_DELETE_ITEM the node's value is
 * dropped in the same atomic step (as kt_id_delete() with KT_DELETE_ITEM
 * drops it), so no write can fall between the copy and the drop: what
 * unlinking an open value of an item and directory needs.  Other flags
 * are KT_EINVAL; the errors of kt_orphan_copy() otherwise. */
KT_EXTERN int kt_orphan_copy_id(uint64_t *orphan, kt_store *store,
				uint64_t id, unsigned int flags);

/** kt_orphan_detach() of (@p dir, @p name), only if it is the node with
 * id @p id (KT_ECONFLICT otherwise, KT_ENOTFOUND if nothing is there), in
 * one atomic step; the orphan keeps id @p id.  The errors of
 * kt_orphan_detach() and of the calls by directory id. */
KT_EXTERN int kt_orphan_detach_at(kt_store *store, uint64_t dir,
				  const char *name, uint64_t id);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Orphans: items unlinked while still in use
 * A filesystem must keep a file that is unlinked while open readable and
 * writable until its last close.  kt_orphan_detach() takes an item out of
 * the tree in one atomic step (its name is gone at once) but keeps the node,
 * its value and its attributes under its id; the kt_orphan_* calls then
 * reach it by id until kt_orphan_release() drops it.  Orphans left behind
 * by a process that died are dropped by the next kt_open() that may write.
 * kt_check() counts them as live.  Every call on orphan @p id returns
 * KT_ENOTFOUND when there is no orphan @p id, and every changing call
 * KT_EREADONLY on a read-only store.
 * Engines: an orphan belongs to the handle that made it.  A client's
 * orphans are dropped by the holder when the client's connection ends
 * (it closed or died); the holder's own are dropped with the holder, by
 * the next process to hold the store (docs/CONCURRENCY.md). */
/**@{*/

/** Detach the item at @p path (not following a link in the last
 * component) and keep it as an orphan; @p id receives its id.  Only a plain
 * item can be detached: KT_EISDIR for a directory, KT_EINVAL for a link or
 * a special file, KT_EPERM for an item with several paths (kt_link()):
 * kt_delete() that path instead, and the item stays reachable by id
 * through its others.  Also KT_ENOTFOUND, KT_ENOTDIR, KT_ELOOP, a path
 * error, KT_EREADONLY. */
KT_EXTERN int kt_orphan_detach(uint64_t *id, kt_store *store,
			       const char *path);

/** Make a new orphan holding a copy of the value and attributes of the
 * item at @p path (an item, or an item+directory: its value), with its mode
 * bits, owner and times; @p id receives the new orphan's id.  The node at
 * @p path is not changed.  Stored blocks are copied as they are, so holes
 * stay holes: the cost is the bytes stored, not the value's size.  One
 * atomic batch; the copy is held in memory until it commits.  KT_EISDIR
 * for a directory without a value, KT_EINVAL for a link or a special
 * file, KT_ENOTFOUND, KT_ENOTDIR, KT_ELOOP, a path error, KT_EREADONLY. */
KT_EXTERN int kt_orphan_copy(uint64_t *id, kt_store *store, const char *path);

/** Make a new, empty orphan item (what open(2) with O_TMPFILE makes): no
 * path, value empty, mode and owner from @p opts as for kt_put()
 * (KT_CREATE_MODE and KT_CREATE_OWNER; other flags are KT_EINVAL), times
 * now.  @p id receives its id.  It lives until kt_orphan_release(), or
 * until kt_orphan_link() gives it a path; a later writable kt_open()
 * drops it if neither happened. */
KT_EXTERN int kt_orphan_new(uint64_t *id, kt_store *store,
			    const kt_create_options *opts);

/** Give orphan @p id the path @p path: it becomes an item in the tree
 * again, with its id, value, attributes, mode, owner and times (ctime
 * becomes now), and is no longer an orphan.  Missing ancestors are made as
 * by kt_put().  One atomic batch.  KT_ENOTFOUND if there is no orphan @p id,
 * KT_EEXISTS if anything (a link included) is at @p path, KT_ENOTDIR if an
 * ancestor is not a directory, a path error, KT_EREADONLY.  What linkat(2)
 * of an O_TMPFILE file does in keytreefs. */
KT_EXTERN int kt_orphan_link(kt_store *store, uint64_t id, const char *path);

/** Metadata of orphan @p id; KT_ENOTFOUND if there is none. */
KT_EXTERN int kt_orphan_stat(kt_statbuf *st, kt_store *store, uint64_t id);

/** As kt_read(), on orphan @p id; KT_ENOTFOUND if there is none. */
KT_EXTERN int kt_orphan_read(size_t *nread, kt_store *store, uint64_t id,
			     void *buf, size_t len, uint64_t offset);

/** As kt_write(), on orphan @p id: KT_ENOTFOUND, KT_EINVAL (a NULL @p buf
 * with @p len > 0), KT_ETOOBIG, KT_EREADONLY. */
KT_EXTERN int kt_orphan_write(kt_store *store, uint64_t id, const void *buf,
			      size_t len, uint64_t offset);

/** As kt_truncate(), on orphan @p id: KT_ENOTFOUND, KT_ETOOBIG,
 * KT_EREADONLY. */
KT_EXTERN int kt_orphan_truncate(kt_store *store, uint64_t id, uint64_t size);

/** As kt_setattr(), on orphan @p id: KT_ENOTFOUND, KT_EINVAL (args NULL
 * or of another version, mode above 07777, unknown mask bits),
 * KT_EREADONLY. */
KT_EXTERN int kt_orphan_setattr(kt_store *store, uint64_t id,
				const kt_setattr_args *args);

/** Drop orphan @p id with its value and attributes: KT_ENOTFOUND,
 * KT_EREADONLY. */
KT_EXTERN int kt_orphan_release(kt_store *store, uint64_t id);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Attributes
 * Named binary values on a node.  A name is 1 to KT_NAME_MAX bytes without
 * NUL, and may not start with the store's delimiter (KT_ERESERVED).  All
 * follow links in the last component.  Besides each call's own errors:
 * KT_EINVAL (an empty name), KT_ENAMETOOLONG (a name over KT_NAME_MAX),
 * KT_ERESERVED, and, for the node, KT_ENOTFOUND, KT_ENOTDIR, KT_ELOOP
 * or a path error. */
/**@{*/

#define KT_ATTR_CREATE 0x01u  /**< fail with KT_EEXISTS if it exists */
#define KT_ATTR_REPLACE 0x02u /**< fail with KT_ENOATTR if it does not */

/** Set attribute @p name of the node at @p path.  KT_EEXISTS with
 * KT_ATTR_CREATE, KT_ENOATTR with KT_ATTR_REPLACE, KT_ETOOBIG (a value over
 * KT_ATTR_VALUE_MAX), KT_EINVAL (unknown flags, a NULL @p value with
 * @p len > 0), KT_EREADONLY. */
KT_EXTERN int kt_attr_set(kt_store *store, const char *path, const char *name,
			  const void *value, size_t len, unsigned int flags);

/** Get attribute @p name; release @p value with kt_free().  KT_ENOATTR if
 * absent. */
KT_EXTERN int kt_attr_get(void **value, size_t *len, kt_store *store,
			  const char *path, const char *name);

/** Remove attribute @p name; KT_ENOATTR if absent, KT_EREADONLY. */
KT_EXTERN int kt_attr_delete(kt_store *store, const char *path,
			     const char *name);

/** Iterate over the attributes of a node in byte order of name; each entry
 * has name and value, over a snapshot taken now. */
KT_EXTERN int kt_attr_iter_new(kt_iter **out, kt_store *store,
			       const char *path);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Listing */
/**@{*/

/** One entry of an iteration.  Borrowed: valid until the next
 * kt_iter_next() or kt_iter_free() on the same iterator. */
typedef struct kt_entry {
	const char *name;  /**< child name, full path (kt_find_new) or
			      attribute name; NUL-terminated */
	size_t name_len;   /**< bytes in name */
	unsigned int kind; /**< KT_KIND_* bits (0 for attributes) */
	uint64_t id;       /**< node id (0 for attributes) */
	const void *value; /**< attribute value (NULL for listings) */
	size_t value_len;
	unsigned int type; /**< KT_TYPE_* of a special file (listings carry
			      it in the index row, so no lookup); 0 for
			      other kinds and attributes */
	const kt_statbuf *stat; /**< the child's metadata, as kt_lstat()
				   gives it, in a listing asked for it
				   (KT_LIST_STAT); NULL otherwise */
} kt_entry;

/* Version 2 added flags; a version 1 structure (without it) is still
 * accepted. */
#define KT_LIST_OPTIONS_VERSION 2

/** Each entry of a listing carries its child's metadata (kt_entry.stat),
 * read in the listing's snapshot: what `ls -l` and a mount's
 * READDIRPLUS need, without a kt_lstat() per entry.  A child whose node
 * is gone by the time it is read (RADOS: a listing reads the directory a
 * page at a time, Engines at the top) is left out.  On RADOS the
 * children's rows are read many at once, ahead of the caller. */
#define KT_LIST_STAT 0x01u

/** Paging for kt_iter_new(). */
typedef struct kt_list_options {
	unsigned int version; /**< KT_LIST_OPTIONS_VERSION */
	const char *after;    /**< start after this name (NULL: at the start) */
	size_t after_len;     /**< bytes in after */
	size_t limit;         /**< at most this many entries; 0: no limit */
	int reverse;          /**< descending order of name */
	unsigned int flags;   /**< KT_LIST_STAT (version 2) */
} kt_list_options;

#define KT_LIST_OPTIONS_INIT {KT_LIST_OPTIONS_VERSION, NULL, 0, 0, 0, 0}

/**
 * Iterate over the direct children of the directory at @p path (following
 * links in every component), in the store's order of names (byte order;
 * with typed names, kt_options.typed_names: numbers by value, then UUIDs,
 * then the other names by bytes; kt_statbuf.order), over a snapshot taken
 * now (on RADOS, a page of the directory at a time: Engines at the top).
 * Pages resume with kt_list_options.after set to the last name seen,
 * which stays correct while others insert and delete.
 * @return 0, KT_ENOTFOUND, KT_ENOTDIR (not a directory), KT_ELOOP, a
 *   path error, KT_EINVAL (options of another version, a NULL after with
 *   after_len > 0, an unknown flag).
 * Engines: on a client the snapshot lives in the holder, and rows come
 * from it a batch at a time.
 */
KT_EXTERN int kt_iter_new(kt_iter **out, kt_store *store, const char *path,
			  const kt_list_options *opts);

/** Advance: 0 with @p entry set, KT_ITEROVER at the end, or an error
 * (KT_EIO, KT_ECORRUPT, KT_ENOMEM), after which the iteration is over. */
KT_EXTERN int kt_iter_next(const kt_entry **entry, kt_iter *iter);

/** Release an iterator.  Accepts NULL. */
KT_EXTERN void kt_iter_free(kt_iter *iter);

#define KT_FIND_SUBTREE 0x01u /**< the node at path and its descendants */
#define KT_FIND_ITEMS 0x02u   /**< report only nodes that are items */

/**
 * Iterate, in one ordered range scan, over every node whose path starts at
 * a component boundary with @p prefix: "/cust-1/ord" finds
 * "/cust-1/ord-1", "/cust-1/ord-2/li-9" and "/cust-1/ordinal".  With
 * KT_FIND_SUBTREE, @p prefix names a node, and it and its descendants are
 * found.  "/" finds every node but the root.  The last component of
 * @p prefix need not exist; its parent is resolved following links, and
 * entries carry full paths below the resolved parent.  With typed names
 * (kt_options.typed_names) a last component of @p prefix that is itself
 * a number or a UUID matches that name only; any other matches the other
 * names it begins.  Entries come in the
 * byte order of their rows (see docs/FORMAT.md; with typed names, siblings
 * in the typed order); a parent precedes its
 * descendants.
 * @return 0, KT_ENOTFOUND (no parent of @p prefix; with KT_FIND_SUBTREE,
 *   no node at it), KT_ENOTDIR, KT_EINVAL (unknown flags), KT_ELOOP, a
 *   path error.
 */
KT_EXTERN int kt_find_new(kt_iter **out, kt_store *store, const char *prefix,
			  unsigned int flags);

#define KT_FIND_OPTIONS_VERSION 1

/** Flags and paging for kt_find_opts_new(). */
typedef struct kt_find_options {
	unsigned int version; /**< KT_FIND_OPTIONS_VERSION */
	unsigned int flags;   /**< KT_FIND_* */
	const char *after;    /**< the continuation token: resume after this
				 path, the name of the last entry of the
				 previous page (NULL: at the start) */
	size_t limit;         /**< at most this many entries; 0: no limit */
} kt_find_options;

#define KT_FIND_OPTIONS_INIT {KT_FIND_OPTIONS_VERSION, 0, NULL, 0}

/**
 * kt_find_new() in pages.  With @p opts->limit, the iteration ends after
 * that many entries; the next page is a new iteration with @p opts->after
 * set to the name of the last entry returned.  It resumes exactly after
 * that path in the find's order (the byte order of the rows, the same on
 * every engine: a node, then its descendants, then the next sibling's),
 * whether or not the node is still there: every node present from the
 * first page to the last is returned exactly once, in order, one added or
 * removed between pages may or may not be.  With KT_FIND_SUBTREE the node
 * at @p prefix is returned first, on the first page only.  A page reads
 * only what it returns (on RADOS, the partitions after the token, many in
 * flight at once), so a long find can be spread over many calls, processes
 * or hosts.  @p opts NULL is a find without flags or paging.
 * @return as kt_find_new(), and KT_EINVAL for options of another version,
 *   unknown flags, or an @p after that is not a path or does not lie under
 *   @p prefix (a token from another find).
 */
KT_EXTERN int kt_find_opts_new(kt_iter **out, kt_store *store,
			       const char *prefix,
			       const kt_find_options *opts);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Batches
 * Operations recorded with kt_batch_*() are applied by kt_batch_commit() in
 * order, each seeing the effects of the ones before, and committed in one
 * atomic write: all of them or none.  Arguments are copied when recorded. */
/**@{*/

/** Start an empty batch on @p store.  Release it with kt_batch_free().
 * Returns 0, KT_EINVAL or KT_ENOMEM. */
KT_EXTERN int kt_batch_new(kt_batch **out, kt_store *store);

/** Record a kt_put().  The path, value and options are checked for syntax
 * and limits now (KT_EINVAL, KT_ENAMETOOLONG, KT_ERESERVED, KT_ETOOBIG,
 * KT_EREADONLY); everything that depends on the store's contents is checked
 * when the batch commits. */
KT_EXTERN int kt_batch_put(kt_batch *batch, const char *path,
			   const void *value, size_t len,
			   const kt_create_options *opts);

/** Record a kt_mkdir(); checked as kt_batch_put() says. */
KT_EXTERN int kt_batch_mkdir(kt_batch *batch, const char *path,
			     const kt_create_options *opts);

/** Record a kt_symlink(); checked as kt_batch_put() says. */
KT_EXTERN int kt_batch_symlink(kt_batch *batch, const char *link,
			       const char *target,
			       const kt_create_options *opts);

/** Record a kt_mknod(); checked as kt_batch_put() says (the type and
 * device number too). */
KT_EXTERN int kt_batch_mknod(kt_batch *batch, const char *path,
			     unsigned int type, uint64_t rdev,
			     const kt_create_options *opts);

/** Record a kt_delete(); checked as kt_batch_put() says. */
KT_EXTERN int kt_batch_delete(kt_batch *batch, const char *path,
			      unsigned int flags);

/** Record a kt_rename(); checked as kt_batch_put() says. */
KT_EXTERN int kt_batch_rename(kt_batch *batch, const char *src,
			      const char *dst, unsigned int flags);

/** Record a kt_link(); checked as kt_batch_put() says. */
KT_EXTERN int kt_batch_link(kt_batch *batch, const char *existing,
			    const char *newpath);

/** Record a kt_attr_set(); checked as kt_batch_put() says. */
KT_EXTERN int kt_batch_attr_set(kt_batch *batch, const char *path,
				const char *name, const void *value,
				size_t len, unsigned int flags);

/** Record a kt_attr_delete(); checked as kt_batch_put() says. */
KT_EXTERN int kt_batch_attr_delete(kt_batch *batch, const char *path,
				   const char *name);

/** Record a kt_setattr(); checked as kt_batch_put() says. */
KT_EXTERN int kt_batch_setattr(kt_batch *batch, const char *path,
			       const kt_setattr_args *args,
			       unsigned int flags);

/** Apply and commit every recorded operation.  On failure nothing is
 * written, the return is the failing operation's code, and kt_errmsg()
 * says which operation (counted from 1) failed and why.  A batch commits
 * at most once; later calls give KT_EINVAL.  Like every change, it may
 * return KT_EBUSY when other processes kept changing what it read. */
KT_EXTERN int kt_batch_commit(kt_batch *batch);

/** Release a batch, committed or not.  Accepts NULL. */
KT_EXTERN void kt_batch_free(kt_batch *batch);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Checking and statistics */
/**@{*/

/** What kt_stats() counts. */
typedef struct kt_store_stats {
	uint64_t items;       /**< nodes in the tree that are items (incl.
				 item+dir; orphans are not counted here, but
				 their rows are in rows and row_bytes) */
	uint64_t dirs;        /**< nodes that are directories, the root too */
	uint64_t links;       /**< symbolic links */
	uint64_t value_bytes; /**< sum of value sizes (logical, holes too) */
	uint64_t attrs;       /**< attributes */
	uint64_t rows;        /**< rows of every kind in the storage engine */
	uint64_t row_bytes;   /**< bytes of keys and values in those rows */
	uint64_t specials;    /**< special files (FIFOs, sockets, devices) */
	uint64_t aliases;     /**< paths beyond the first of nodes with
				 several (kt_link); the counts above count
				 such a node once */
} kt_store_stats;

/** Count the store's contents in one scan over a snapshot.  Returns 0,
 * KT_EINVAL (a NULL argument), or what stopped the scan (KT_EIO,
 * KT_ECORRUPT, KT_ENOMEM). */
KT_EXTERN int kt_stats(kt_store_stats *out, kt_store *store);

/** Called by kt_check() for each violation found, and by kt_repair() for
 * each repair made; @p what describes it, naming the row.  Return non-zero
 * to stop checking (kt_repair() ignores the return). */
typedef int (*kt_check_cb)(const char *what, void *payload);

/** Progress of a long operation: @p done units of an estimated @p total
 * (0 when unknown).  Return non-zero to stop it. */
typedef int (*kt_progress_cb)(uint64_t done, uint64_t total, void *payload);

#define KT_CHECK_OPTIONS_VERSION 1

/** Options for kt_check() and kt_repair().  Zero in a field means "none";
 * fields are only ever appended.  Initialise with KT_CHECK_OPTIONS_INIT. */
typedef struct kt_check_options {
	unsigned int version;        /**< KT_CHECK_OPTIONS_VERSION */
	kt_check_cb on_violation;    /**< kt_check(): per violation;
					kt_repair(): per repair made */
	kt_progress_cb on_progress;  /**< kt_check() only: now and then,
					path rows checked so far of the
					store's path rows */
	void *payload;               /**< passed to both callbacks */
} kt_check_options;

#define KT_CHECK_OPTIONS_INIT {KT_CHECK_OPTIONS_VERSION, NULL, NULL, NULL}

/**
 * Verify every invariant of the store over a snapshot: each index row
 * points at a node of the recorded kind, each node but the root is reachable
 * through an index row in its parent's partition, every ancestor of a node
 * is a directory, directory counts and attribute counts agree, and every
 * value and attribute row belongs to a live node (orphans are live).
 * Writers, in this process or others, may run meanwhile: the snapshot is
 * one consistent state.  With on_progress set, counting the rows for the
 * total costs one extra scan, much cheaper than the check.  On RADOS
 * (Engines at the top) the violations reach on_violation only once the
 * pass is known to have read one state, after the whole pass.
 *
 * @param nviolations  receives the number of violations (may be NULL)
 * @param opts         callbacks, or NULL for none
 * @return 0 when clean; KT_ECORRUPT when violations were found (also when
 *   on_violation stopped the check); KT_ITEROVER when on_progress stopped
 *   it (@p nviolations holds those found so far); KT_EINVAL (a NULL
 *   store, an unknown opts->version); or what stopped the scan: KT_EIO,
 *   KT_ENOMEM (and KT_ECORRUPT for a row the engine cannot read).
 */
KT_EXTERN int kt_check(size_t *nviolations, kt_store *store,
		       const kt_check_options *opts);

/**
 * Repair what kt_check() finds, in one atomic batch: index rows that point
 * at nothing or disagree with their node are removed or rewritten; nodes
 * without an index row are linked back into their parent when the parent
 * is a directory, and removed with their subtree when it is not or is
 * missing; counts are recomputed; block and attribute rows of no node are
 * removed.  opts->on_violation is called once per repair made, after the
 * batch of repairs has committed (a failed repair reports none, and
 * @p nfixed is 0).  Repair reads the whole store in one step and commits
 * only if nothing it read changed meanwhile (rerunning otherwise): while
 * other processes keep writing it may give up with KT_EBUSY; run it
 * again when they stop.  A node whose path is over the length or depth
 * limit (which only a rename by an older library could make) cannot be
 * repaired: it is reported through on_violation as "cannot repair: ...",
 * not counted, and the call returns KT_ECORRUPT after committing every
 * other repair; a recursive kt_delete() of an ancestor within the limits
 * removes it.  On RADOS it first finishes and removes the commit records
 * that killed clients left behind (docs/FORMAT.md §14), each counted and
 * reported as a repair ("commit record ID (committed, rolled forward)
 * finished and removed", or "commit ID (...), whose record is on one
 * of its objects, finished"); when one is still pending it waits one
 * lease (3 s by default) and then rolls it back.
 * @param nfixed  receives the number of repairs (may be NULL)
 * @param opts    callbacks, or NULL for none; on_progress must be NULL
 * @return 0 (the store now passes kt_check), KT_ECORRUPT (something could
 *   not be repaired; the rest was), KT_EREADONLY, KT_EBUSY (see above),
 *   KT_EINVAL (a NULL store, an unknown opts->version, an on_progress
 *   callback), KT_ENOMEM, KT_EIO.
 */
KT_EXTERN int kt_repair(size_t *nfixed, kt_store *store,
			const kt_check_options *opts);
/**@}*/

#ifdef __cplusplus
}
#endif

#endif /* KEYTREE_H */
