/*
 * rows.h - the storage seam.  The tree logic reaches storage only through
 * this interface, modelled on dynamotree's rows: a row is addressed by a
 * partition key (for index rows, the parent directory) and a sort key (the
 * child), and rows of one partition are kept in byte order of sort key.
 *
 * An engine offers: point get; an ordered scan of one partition, forward or
 * reverse, optionally starting after a sort key (pages); an ordered scan of
 * every partition whose key starts with a given prefix (a key range);
 * snapshots for consistent multi-row reads; and an atomic batch of writes.
 *
 * Partition keys never contain NUL.  Sort keys are arbitrary bytes.  Order
 * across partitions is the byte order of the partition key, a partition
 * sorting before any partition it is a proper prefix of.
 *
 * A commit is guarded: it carries the snapshot its transaction read from
 * and what it read there (rows, and the part of each scan it consumed),
 * and the engine applies it only if all of that is still the same in the
 * latest state; otherwise it applies nothing and says KT__ERETRY, and the
 * operation runner (ops.c) runs the operation again from the start.  This
 * is optimistic concurrency control, and it is what keeps the tree correct
 * when several processes (or, on a distributed engine, several hosts)
 * write one store: nothing relies on an in-process lock.
 *
 * What every engine promises, and what only some do.  LevelDB
 * (rows_leveldb.c, the only file that includes <leveldb/c.h>) has one
 * snapshot of the whole store, checks conditions row by row and numbers
 * its commits.  Ceph RADOS (rows_rados.c) is atomic only within one
 * object, one per partition, so there:
 * - a snapshot fixes each partition at its first read through it, and
 *   later reads see the latest state (no isolation); a condition must name
 *   something read through cm->snap, as the tree layer's always do;
 * - so a reader asks validate() at its end whether what it read still
 *   holds, and reads again when it does not (kt__rd_begin/kt__rd_end);
 * - conditions are checked per partition: a commit is refused when any
 *   partition a condition names changed at all (a false conflict the
 *   runner reruns), never applied when one fails;
 * - commits spanning partitions are made atomic by the engine itself (a
 *   commit record and locks, rows_rados.c), so a batch is still all or
 *   nothing as readers observe it;
 * - commits are not numbered (kt__commit.applied receives 0).
 * The tree logic still emits writes so that the row making a change
 * visible comes last (FORMAT.md §12), which keeps a cut-short batch
 * understandable to kt_repair on any engine.
 * A process that finds the store held by another reaches it through the
 * remote engine (rows_remote.c), which forwards every call of this
 * interface to the holder (server.c).
 */
#ifndef KT_ROWS_H
#define KT_ROWS_H

#include "common.h"

typedef struct kt__rows kt__rows;
typedef struct kt__snap kt__snap;
typedef struct kt__cursor kt__cursor;

/* A byte string borrowed from its owner. */
typedef struct kt__slice {
	const char *p;
	size_t len;
} kt__slice;

/* One row as a cursor yields it; valid until the next kt__cursor_next. */
typedef struct kt__row {
	kt__slice part;
	kt__slice sort;
	kt__slice value;
} kt__row;

/* One write of a batch; value.p == NULL means delete. */
typedef struct kt__write {
	kt__slice part;
	kt__slice sort;
	kt__slice value;
	int del;
} kt__write;

/* How a scan runs. */
typedef struct kt__scan {
	kt__slice part;  /* partition, or partition prefix with KT__SCAN_PREFIX */
	kt__slice after; /* with KT__SCAN_AFTER: start after this sort key */
	kt__slice from;  /* with KT__SCAN_FROM: start at this sort key */
	unsigned int flags;
} kt__scan;

/* A condition of a guarded commit: something the transaction read at its
 * snapshot, which must read the same in the latest state. */
typedef struct kt__cond {
	int kind;        /* KT__COND_ROW or KT__COND_SCAN */
	kt__slice part;  /* ROW: the row read (present or absent) */
	kt__slice sort;
	kt__scan how;    /* SCAN: the scan, as it was started */
	uint64_t nrows;  /* SCAN: rows the engine's cursor returned */
	int complete;    /* SCAN: and then KT_ITEROVER (no further row) */
} kt__cond;

#define KT__COND_ROW 1
#define KT__COND_SCAN 2

/* A commit: writes in the order to apply them, and what they depend on. */
typedef struct kt__commit {
	const kt__write *w;
	size_t nw;
	/* The snapshot the conditions were read at; NULL: unconditional. */
	const kt__snap *snap;
	const kt__cond *c;
	size_t nc;
	int sync; /* durable on disk before returning */
	/* When not NULL, receives the commit's place in the order of all
	 * commits the engine applied (1, 2, ...), for tests that replay
	 * several processes' calls in commit order; 0 from an engine that
	 * keeps no such order (RADOS). */
	uint64_t *applied;
} kt__commit;

#define KT__SCAN_PREFIX 0x01u  /* every partition starting with part */
#define KT__SCAN_REVERSE 0x02u /* descending (single partition only) */
#define KT__SCAN_AFTER 0x04u   /* single partition: sort keys after 'after';
				 * with KT__SCAN_PREFIX: the partitions
				 * after partition key 'after' (that one
				 * excluded, those it is a prefix of not) */
#define KT__SCAN_FROM 0x08u    /* single partition: sort keys >= 'from' */
#define KT__SCAN_PAST 0x20u    /* with KT__SCAN_PREFIX, on an engine with
				 * fences: start just past the row
				 * (after, from), a step's last */
#define KT__SCAN_NOVERIFY 0x10u /* a hint: the caller checks what it reads
				 * (block checksums, value.c), so an engine
				 * may skip its own checksums of the rows */
#define KT__SCAN_NODES 0x40u   /* a hint: the caller keeps only rows with
				 * an empty sort key (node rows: a find),
				 * so an engine may leave the others out;
				 * the same scan always gives the same rows */

typedef struct kt__rows_ops {
	/* Read one row into out.  0, KT_ENOTFOUND, or an error. */
	int (*get)(kt__rows *r, const kt__snap *snap, kt__slice part,
		   kt__slice sort, kt__buf *out);
	/* Optional (NULL: use get).  The same read for a caller that checks
	 * the row itself (value blocks with their own CRC-32C, value.c),
	 * as KT__SCAN_NOVERIFY is for a scan: the engine may skip its own
	 * checksums of it. */
	int (*get_unchecked)(kt__rows *r, const kt__snap *snap,
			     kt__slice part, kt__slice sort, kt__buf *out);
	/* Optional (NULL: use get).  The same read through a snapshot, for a
	 * caller reading rows in ascending key order, each probably only a
	 * few rows past the last one it read this way (the node rows of a
	 * directory's files, read one after another by a listing): an
	 * engine may step to it from there instead of looking it up afresh.
	 * It answers as get would have. */
	int (*get_near)(kt__rows *r, const kt__snap *snap, kt__slice part,
			kt__slice sort, kt__buf *out);
	int (*scan)(kt__cursor **out, kt__rows *r, const kt__snap *snap,
		    const kt__scan *how);
	/* 0 with row set, KT_ITEROVER, or an error. */
	int (*next)(kt__cursor *c, kt__row *row);
	void (*cursor_free)(kt__cursor *c);
	/* Optional (NULL: the cursor is left to cursor_free).  Free cursor
	 * @p c, made through @p snap, whose next said KT_ITEROVER at the end
	 * of its range, when get_near reads through @p snap follow: the rows
	 * just past a directory's index partition are its children's node
	 * rows, which a listing reads next, and an engine may keep what the
	 * cursor holds to step to them.  The reads answer as they would
	 * have. */
	void (*cursor_done)(kt__rows *r, kt__cursor *c, const kt__snap *snap);
	/* A consistent view of the store, fixed no later than the first
	 * read through it (a remote engine takes it with that read, saving
	 * a round trip); one thread at a time reads through it. */
	int (*snapshot)(kt__snap **out, kt__rows *r);
	void (*snapshot_free)(kt__rows *r, kt__snap *snap);
	/* Apply every write of cm if every condition holds: a ROW condition
	 * holds if the row is the same (same value, or absent in both) in
	 * the latest state as in cm->snap; a SCAN condition if the scan,
	 * run on the latest state, returns the same first nrows rows (keys
	 * and values) as on cm->snap, and, when complete, no row after
	 * them.  0: applied; KT__ERETRY: a condition failed, nothing was
	 * applied; any other error: nothing was applied either. */
	int (*commit)(kt__rows *r, const kt__commit *cm);
	/* For an engine whose snapshot is not one moment of the whole
	 * store (RADOS; NULL for the others): was everything read through
	 * @p snap so far what the store held at one moment?  0: yes (a
	 * moment between the first read and this call; RADOS finds every
	 * object read still at the version read, or only one object read,
	 * once); KT__ERETRY: not known to be, since something read has
	 * changed (a commit of another client may have been read part
	 * way): read again through a new snapshot; any other error: it
	 * cannot say. */
	int (*validate)(kt__rows *r, const kt__snap *snap);
	/* Optional (NULL: the engine reads nothing ahead).  A hint: row
	 * (part, sort) will probably be read through @p snap soon; an engine
	 * whose reads cost a round trip may start reading it now, so that
	 * the get costs no further wait.  Nothing is promised either way,
	 * and the get answers as it would have. */
	void (*prefetch)(kt__rows *r, const kt__snap *snap, kt__slice part,
			 kt__slice sort);
	/* Optional, the same kind of hint for a scan: partition @p part
	 * will probably be scanned forward from its start (no bound)
	 * through @p snap soon; its first rows may be read now. */
	void (*prefetch_scan)(kt__rows *r, const kt__snap *snap,
			      kt__slice part);
	int (*sync)(kt__rows *r);
	/* Is the store empty of rows altogether? 1 yes, 0 no, <0 error. */
	int (*empty)(kt__rows *r);
	void (*close)(kt__rows *r);
	/* Optional (NULL: the engine has none, and the tree layer makes a
	 * large rename or recursive delete one commit).  Fence off every
	 * partition that starts with one of the @p n prefixes @p pre from
	 * all threads but the calling one, which may then rewrite them in
	 * many commits without anyone seeing the work half done (ops.c,
	 * "Large renames and deletes"):
	 * - a read of them at the latest state waits until the fence is
	 *   lifted;
	 * - a read through a snapshot taken while the fence stood, and a
	 *   commit of another thread that writes into the fence or depends
	 *   on a read of it, wait if it still stands and then fail with
	 *   KT__ERETRY, so that the caller reads again;
	 * - other partitions are read and written as ever.
	 * *@p token names the fence for unfence. */
	int (*fence)(kt__rows *r, const kt__slice *pre, size_t n,
		     uint64_t *token);
	/* (A thread that sets kt__fence_nowait, as the holder's connection
	 * threads do, is told KT__EFENCED where it would wait.) */
	/* Lift fence @p token.  With @p broken, the rewrite it guarded could
	 * not be finished: the fence then stands until the engine is
	 * closed, and whatever would have waited for it fails with KT_EIO
	 * at once, the caller's thread included.  0, or for a staged engine
	 * (below) what became of the commits made behind it. */
	int (*unfence)(kt__rows *r, uint64_t token, int broken);
	/* 1 (RADOS): the fence is a staged commit instead.  Nobody is held
	 * back; the commits the calling thread makes behind it are the
	 * parts of one commit, written and locked as they come but seen by
	 * nobody until unfence, which makes them all take effect at once
	 * (0) or, with @p broken, none of them (0).  A part that meets a
	 * change by another client fails with KT__ECHANGED, and so does
	 * the unfence that follows it, or one whose stage another client
	 * rolled back (its writer was thought gone): nothing took effect,
	 * run the operation again.  0: a fence as above (LevelDB, remote). */
	int staged;
	/* 1: a commit's writes become visible all at once, whatever their
	 * order (LevelDB's write batch; the remote engine, whose holder
	 * applies them so), and the tree layer need not sort them into the
	 * visibility phases of docs/FORMAT.md §12.  0 (RADOS): it must. */
	int atomic_batch;
} kt__rows_ops;

struct kt__rows {
	const kt__rows_ops *ops;
};

/* Set on a thread that must not wait for fences (server.c): it is told
 * KT__EFENCED instead (rows_leveldb.c). */
extern _Thread_local int kt__fence_nowait;

/* Set around a read that is only a hint (the id cache, api.c): where it
 * would wait for a fence it is told KT__EFENCED at once (the LevelDB and
 * remote engines; RADOS's staged commits hold no reader back but for the
 * moment a stage settles), and its caller reads what it needs another
 * way. */
extern _Thread_local int kt__fence_hint;

/* Wait before asking again after KT__EFENCED: 1 ms, doubling to 50 ms,
 * counting in *@p waits (rows_leveldb.c). */
void kt__fence_pause(unsigned int *waits);

/* Options for opening the LevelDB engine. */
typedef struct kt__leveldb_opts {
	int create;
	size_t cache_size;        /* 0: 8 MiB */
	size_t write_buffer_size; /* 0: KT__WBUF_DEFAULT */
} kt__leveldb_opts;

/* The LevelDB write buffer (kt_options.write_buffer_size): its default
 * and the range kt_open() accepts. */
#define KT__WBUF_DEFAULT ((size_t)16 << 20)
#define KT__WBUF_MIN ((size_t)1 << 20)
#define KT__WBUF_MAX ((size_t)1 << 30)

/* Open the LevelDB engine on @p dir.  KT_ENOTFOUND when absent and not
 * creating, KT_EBUSY when locked, KT_ECORRUPT, KT_EIO. */
int kt__leveldb_open(kt__rows **out, const char *dir,
		     const kt__leveldb_opts *opts);

/* A LevelDB environment (leveldb_env_t) that reads table files with pread
 * instead of mapping them (ldb_env.cc), for leveldb_options_set_env; NULL
 * when this LevelDB's C API is not laid out as expected.  Free with
 * leveldb_env_destroy, after the database that uses it is closed. */
struct leveldb_env_t;
struct leveldb_env_t *kt__ldb_pread_env(void);

/* This thread's number (from 1, never reused by another thread) and its
 * count of the table files opened and read through that environment,
 * every one, failed or not: a LevelDB iterator moved by this thread can
 * only have met damage on disk (and stepped over a block) if the count
 * moved meanwhile. */
void kt__ldb_table_calls(unsigned long long *thread,
			 unsigned long long *calls);

/* Whether blocks this thread reads through that environment go
 * unchecked: the environment checks each block's CRC-32C as it reads it
 * (so LevelDB's own check stays off), except while a read whose caller
 * checks every row itself (KT__SCAN_NOVERIFY) has it set. */
void kt__ldb_skip_checks(int skip);

/* Remove the LevelDB database in @p dir (its files; LevelDB takes its
 * lock first, so KT_EBUSY while another process has it open). */
int kt__leveldb_destroy(const char *dir);

/* Options for opening the RADOS engine (rows_rados.c, built when
 * librados is found: KT_HAVE_RADOS). */
typedef struct kt__rados_opts {
	const char *pool;     /* the pool the tree lives in */
	const char *nspace;   /* its namespace; NULL or "": the default */
	const char *tree;     /* the tree's name within pool and namespace */
	const char *conf;     /* ceph.conf; NULL: Ceph's own search */
	const char *client;   /* client name ("client.admin"); NULL: default */
	int create;           /* make the tree when it does not exist */
	unsigned int lease_ms; /* how long an unfinished commit of another
				  client may stay pending before it is
				  rolled back; 0: the default */
} kt__rados_opts;

/* Connect to the cluster and open the tree @p o names.  KT_ENOTFOUND when
 * the tree does not exist and o->create is not set, KT_EINVAL for a bad
 * name, KT_EIO when the cluster cannot be reached (the message says why). */
int kt__rados_open(kt__rows **out, const kt__rados_opts *o);

/* Remove every object of the tree @p o names (o->create and o->lease_ms
 * are ignored), the catalog first; *nobjects says how many.  KT_ENOTFOUND
 * when the tree has no objects at all. */
int kt__rados_destroy(const kt__rados_opts *o, uint64_t *nobjects);

/* From now on, number this handle's commits (kt__commit.applied) with a
 * counter object every numbered commit reads and writes: a total order
 * for tests that replay several processes' calls (test_mpmodel), at the
 * price of making every two such commits conflict. */
void kt__rados_number_commits(kt__rows *r);

/* Hear the commits of the tree's other handles (kt_watch on RADOS):
 * @p fn is called with each one's writes (values cut short, as the
 * holder's notes are: server.h), on a thread of this handle; NULL @p fn
 * stops.  0, KT_EEXISTS, KT_EIO. */
int kt__rados_watch(kt__rows *r,
		    void (*fn)(void *arg, const kt__write *w, size_t n),
		    void *arg);

/* Finish and remove every commit record of the tree that is left over
 * (rows_rados.c, "Sweeping commit records"): @p note, if not NULL, is told
 * of each; *nswept says how many.  Waits one lease when some are pending. */
int kt__rados_sweep(kt__rows *r, int (*note)(const char *, void *),
		    void *arg, size_t *nswept);

/* For tests only (test_rows): when set, a commit over several objects
 * calls it once its record and locks are in, just before its commit
 * point, so that a test can look at the store while the commit is
 * pending. */
extern void (*kt__rados_test_pending)(void);
/* For tests: a parallel commit (layout 4) calls it once its primary's
 * lock is in, before it sends the other locks (which, once all in,
 * commit it). */
extern void (*kt__rados_test_prim_locked)(void);
/* For tests: when set, a parallel commit sends every lock but its
 * primary's, and returns KT__ERETRY at once, as if its client were
 * killed with the primary's lock lost on its way. */
extern int kt__rados_test_drop_prim;
/* For tests: when set, a reader that has fenced the primary of such a
 * commit fails right there (KT_EIO), leaving the fence and the other
 * lock, as if its client were killed between the two. */
extern int kt__rados_test_fence_stop;
/* For tests: how many times a reader about to fence the primary of such
 * a commit found there [0] that commit's own fence, left, and went on;
 * [1] a lock it was undoing further up, and handed it over. */
extern unsigned long kt__rados_test_par_busy[2];
/* For tests: when it counts down to 0, that object's apply of a staged
 * commit is not sent, as if it failed. */
extern int kt__rados_test_apply_fail;
/* For tests: how many later parts of an object whose apply failed the
 * writer held back. */
extern unsigned long kt__rados_test_parts_held;
/* For tests: called when a staged commit (rad_fence) has just committed,
 * before it is applied. */
extern void (*kt__rados_test_staged)(void);

/* For tests: the layout (docs/FORMAT.md §14) of the trees
 * kt__rados_open makes from now on; 0, the current one. */
extern int kt__rados_test_layout;

/* For tests: how many commits so far kept their record on one of their
 * own objects (layouts 3 and 4) and reached their commit point; when kt__rados_test_stop_after_commit is set,
 * a commit over several objects returns at its commit point, applying
 * nothing more, and a closing handle leaves the records of its finished
 * commits on their objects: as if its client were killed there. */
extern unsigned long kt__rados_test_onobj;
/* For tests: records on objects kt__rados_sweep removed so far. */
extern unsigned long kt__rados_test_marks_swept;
extern int kt__rados_test_stop_after_commit;

/* The layout of the tree @p r (a RADOS handle) is in. */
int kt__rados_layout(kt__rows *r);

/* Advisory locks (kt_lock_set, kt_lock_test on RADOS): set @p lk, or with
 * @p test report the first conflicting lock in *lk.  @p lk has been
 * checked (lock.c); with KT_LOCK_WHOLE its range is all bytes. */
int kt__rados_lock(kt__rows *r, uint64_t id, kt_lock *lk, unsigned int flags,
		   int test);

/*
 * An owner's locks on one node, as the engine keeps them (lock.c): one
 * entry per (client, owner, kind).  Encoded as an omap key
 *   "o" 16 hex (client instance) "." 16 hex (owner) "w"|"r"
 * ("w": whole-node locks, "r": range locks) and a value
 *   u8 1 | u32 pid | u16 n | n bytes client address | u32 count |
 *   count * (u64 start | u64 end | u8 type)          (little-endian)
 * with the ranges sorted, disjoint, and neighbours of one type merged.
 */
typedef struct kt__lkrange {
	uint64_t start, end;
	int type;
} kt__lkrange;

typedef struct kt__lkent {
	uint64_t inst, owner;
	int whole;
	uint32_t pid;
	char addr[256];
	kt__lkrange *r;
	size_t n, cap;
} kt__lkent;

#define KT__LKKEY_MAX 40
/* The omap key of (@p inst, @p owner, @p whole), NUL-ended. */
void kt__lk_key(char out[KT__LKKEY_MAX], uint64_t inst, uint64_t owner,
		int whole);
/* Decode an entry; KT_ECORRUPT naming @p where when it does not. */
int kt__lk_dec(kt__lkent *e, const char *k, size_t kl, const char *v,
	       size_t vl, const char *where);
int kt__lk_enc(kt__buf *out, const kt__lkent *e);
/* The first of @p e's ranges in conflict with a lock of @p type over
 * [@p start, @p end] of another owner, or NULL. */
const kt__lkrange *kt__lk_conflict(const kt__lkent *e, int type,
				   uint64_t start, uint64_t end);
/* Make @p e hold @p type over [@p start, @p end] (KT_LOCK_UNLOCK: nothing
 * there), as a POSIX lock request does: KT_ENOMEM or 0. */
int kt__lk_apply(kt__lkent *e, int type, uint64_t start, uint64_t end);
void kt__lk_free(kt__lkent *e);

static inline kt__slice kt__sl(const void *p, size_t len)
{
	kt__slice s;
	s.p = p;
	s.len = len;
	return s;
}

static inline kt__slice kt__slb(const kt__buf *b)
{
	return kt__sl(b->p ? b->p : "", b->len);
}

#endif /* KT_ROWS_H */
