/*
 * tree.h - the tree layer's internal types: the store handle, decoded node
 * rows, transactions (a write overlay over the engine, so that each
 * operation of a batch sees the ones before it) and readers.
 */
#ifndef KT_TREE_H
#define KT_TREE_H

#include <pthread.h>

#include "path.h"
#include "rows.h"

/* Partition keys outside the path space start with '/', which can be
 * neither a delimiter nor part of a name. */
#define KT__PART_META "/meta"
#define KT__PART_BLK "/blk/"   /* + 16 hex digits of the node id */
#define KT__PART_ATTR "/attr/" /* + 16 hex digits of the node id */
#define KT__PART_ORPHAN "/orphan" /* sort key: the id, 8 bytes big-endian */
#define KT__PART_ID "/id" /* sort key: the id, 8 bytes big-endian; value:
			     the node's partition key (its encoded path) */
#define KT__PART_ALIAS "/alias/" /* + 16 hex digits of the node id; sort
				    key: the partition key of each path of
				    the node but the one its id row names;
				    value empty (format 4) */

/* Ids and versions are handed out from counters whose persisted limit is
 * raised KT__ALLOC_CHUNK at a time, in the same batch as the first row
 * that uses the new range, so that a crash can skip values but never reuse
 * one. */
#define KT__ALLOC_CHUNK 1024

/* The most entries a directory of a RADOS store may hold: its listing is
 * one object, which Ceph copies whole on recovery and flags past 200,000
 * keys (docs/SCALING.md §2).  $KEYTREE_DIR_MAX overrides it (0: none). */
#define KT__DIR_MAX_RADOS 100000

/* How many times kt__tx_run() runs an operation whose commit keeps being
 * refused because another process changed what it read. */
#define KT__RETRY_MAX 100

/* The id cache (api.c): the last node-row partition found for an id. */
#define KT__IDC_SLOTS 8192 /* a power of two: 1 MiB in all */
#define KT__IDC_PART 116   /* longer partitions are not kept */
typedef struct kt__idc_slot {
	uint64_t id; /* 0: empty (no node has id 0) */
	uint32_t len;
	char part[KT__IDC_PART];
} kt__idc_slot;

struct kt_store {
	kt__rows *rows;
	/* The holder serves the store to other processes (server.c); NULL
	 * in a client, whose rows are the remote engine, or when serving
	 * could not start. */
	struct kt__server *server;
	int remote; /* rows is the remote engine: another process holds */
	int rados;  /* rows is the RADOS engine: no holder, every process
		       a client of the cluster */
	struct kt__watch *watch; /* kt_watch()'s callback (watch.c) */
	uint32_t euid, egid; /* the process's, read once at open */
	kt__delim delim;
	int read_only;
	int sync;
	uint32_t block;      /* KT__BLOCK, as recorded in the header */
	uint32_t inline_max; /* KT__INLINE_MAX, as recorded */
	uint32_t format;     /* the store's format version */
	int blksum;          /* block rows end with a CRC-32C (format 5
				flag, value.c) */
	int journal;         /* a large rename or delete is under way or
				was cut short (format 5 flag, ops.c) */
	int counted;         /* directories count their entries (format 5
				flag): node rows of directories made from
				then on carry the count */
	uint32_t dir_max;    /* the most entries a directory may hold; 0,
				no limit (KT__DIR_MAX_RADOS on RADOS,
				$KEYTREE_DIR_MAX) */

	/* Where id lookups look first (api.c, "The id cache"): made at the
	 * first lookup, KT__IDC_SLOTS slots, under idc_lock. */
	pthread_mutex_t idc_lock;
	kt__idc_slot *idc;

	pthread_mutex_t wlock; /* serialises this handle's mutations */
	/* Protected by wlock: the ranges of ids and versions this handle
	 * has reserved (empty at open). */
	uint64_t next_id, id_limit;
	uint64_t next_ver, ver_limit;
	/* Protected by wlock: the engine's number of this handle's last
	 * commit (kt__commit.applied), for tests; 0 before any. */
	uint64_t last_commit;
};

/* Note that node @p id, which has one path, was found at partition
 * @p part (the id cache, api.c): a hint, checked when used. */
void kt__idc_put(kt_store *st, uint64_t id, kt__slice part);

/* A node row, decoded. */
typedef struct kt__node {
	unsigned int kind;
	uint64_t id;
	uint32_t mode, uid, gid;
	uint64_t size;
	int64_t atime, mtime, ctime;
	uint64_t version;
	uint32_t nsubdirs;
	uint32_t nattrs;
	uint32_t nblocks; /* block rows of the value (format 2) */
	uint32_t nlink;   /* paths of the node (format 4); 0 or 1: one */
	/* A directory's number of entries (index rows in its listing),
	 * when its row carries it (counted); a row written before its store
	 * counted does not. */
	uint32_t nentries;
	int counted;
	kt__buf payload; /* inline value, link target, or a special file's
			    type and device number (KT__SPECIAL_LEN) */
} kt__node;

#define KT__NODE_HDR 74 /* bytes before the payload */
#define KT__NODE_HDR_LINKED 78 /* ... of a node with several paths, whose
				  header ends with u32 nlink (format 4) */
#define KT__NODE_HDR_COUNTED 78 /* ... of a directory that counts its
				   entries: u32 nentries */
/* Bytes before the payload of the encoded node row @p p. */
size_t kt__node_hdr_len(const char *p, size_t len);

/* The payload of a special file (format 3): u8 type, u64 rdev (LE). */
#define KT__SPECIAL_LEN 9
/* 1 if @p type is one of KT_TYPE_*. */
int kt__type_valid(unsigned int type);
/* "a FIFO", "a socket", "a character device", "a block device". */
const char *kt__type_noun(unsigned int type);
/* The payload of a special file of @p type and @p rdev. */
void kt__special_encode(unsigned char out[KT__SPECIAL_LEN], unsigned int type,
			uint64_t rdev);
/* The type of node n (0 unless it is a special file) and its rdev. */
unsigned int kt__node_type(const kt__node *n, uint64_t *rdev);
/* What n is, for messages: "a link", "a FIFO", "a directory without a
 * value"... (for nodes that are not items). */
const char *kt__node_noun(const kt__node *n);

int kt__node_decode(kt__node *n, const char *p, size_t len);
/* Decode only the fixed header; payload left empty. */
int kt__node_decode_hdr(kt__node *n, const char *p, size_t len);
int kt__node_encode(kt__buf *out, const kt__node *n);
void kt__node_free(kt__node *n);
void kt__node_fill_stat(kt_statbuf *sb, const kt_store *st,
			const kt__node *n);
static inline int kt__node_inline(const kt_store *s, const kt__node *n)
{
	return (n->kind & KT_KIND_ITEM) && n->size <= s->inline_max;
}
/* Index row: kind byte + id; a special file's (format 3) adds its type
 * byte, so that listings know it without reading the node. */
#define KT__INDEX_LEN 9
#define KT__INDEX_MAX 10
/* Encode n's index row into out; returns its length. */
size_t kt__index_encode(unsigned char out[KT__INDEX_MAX], const kt__node *n);
/* Decode an index row; @p type (may be NULL) receives the type of a
 * special file, else 0. */
int kt__index_decode(unsigned int *kind, uint64_t *id, unsigned int *type,
		     const char *p, size_t len);

/* Partition keys of the id-keyed rows. */
void kt__part_blk(char out[32], uint64_t id);
void kt__part_attr(char out[32], uint64_t id);

/* ------------------------------------------------------------------------ */

/* One pending write in a transaction.  key = part || 0 || sort, used for
 * ordering and lookup; the entry owns its bytes: one allocation at key,
 * the value following the key (val points into it). */
typedef struct kt__txw {
	char *key;
	size_t plen; /* partition length within key */
	size_t klen;
	char *val;
	size_t vlen;
	int del;
	int dead;  /* superseded by a later write of the same key */
	int clean; /* a cached engine read, not a write */
	int phase; /* commit phase (tx.c), fixed when the write is made */
} kt__txw;

/* Owner given to new nodes. */
typedef struct kt__owner {
	uint32_t uid, gid;
} kt__owner;

/* A scan made by a transaction: the condition its commit carries. */
typedef struct kt__txscan {
	kt__buf part, after, from; /* owned copies of the scan's keys */
	unsigned int flags;
	uint64_t nrows;
	int complete;
} kt__txscan;

/* A rename or recursive delete too large for one commit, as the first
 * attempt found it (ops.c, "Large renames and deletes"): 'R' or 'D', and
 * the real paths. */
typedef struct kt__bigplan {
	int kind;
	kt__buf src, dst;
	void *run; /* ops.c's state of the operation once fenced */
} kt__bigplan;

typedef struct kt__tx {
	kt_store *st;
	kt__snap *snap; /* every read of the transaction is made here; taken
			   at the first read */
	kt__txscan *scans;
	size_t nscans, capscans;
	kt__owner own; /* owner of nodes this transaction makes */
	kt__txw *w;
	size_t nw, capw;
	size_t nreal; /* entries that are writes, not cached reads */
	size_t *hash; /* open addressing: index+1 into w, 0 = empty */
	size_t hcap;
	int64_t now;
	uint64_t next_id, id_limit;
	uint64_t next_ver, ver_limit;
	int alloc_dirty;
	/* Set by the operation runner (ops.c) for the attempt: 0, a large
	 * rename or delete is one commit like any other; 1, one over
	 * a few rows stops with KT__EBIG and says what it is in *plan; 2,
	 * the fence is up: one of up to kt__big_rows rows is made in this
	 * commit, a larger one makes its commit point, journal and first
	 * step, leaving the other rows of the subtree to later commits. */
	int big;
	kt__bigplan *plan;
	/* Writes its caller owns, applied after the transaction's own and
	 * never read back through it: the rows a step of a large operation
	 * moves or deletes, which the engine's fence keeps everyone else
	 * from (ops.c), go this way without a copy each into the overlay. */
	const kt__write *extra;
	size_t nextra;
} kt__tx;

void kt__tx_init(kt__tx *tx, kt_store *st);
void kt__tx_free(kt__tx *tx);
/* Run @p fn in a fresh transaction under the store's writer lock and
 * commit what it wrote; when the commit reports that another process
 * changed what the transaction read (KT__ERETRY), run it again from the
 * start, a bounded number of times with backoff.  @p fn must leave no
 * effect outside the transaction but what it sets again when rerun. */
int kt__tx_run(kt_store *st, int (*fn)(kt__tx *tx, void *arg), void *arg);
/* The same, for a caller that holds the store's writer lock already. */
int kt__tx_run_held(kt_store *st, int (*fn)(kt__tx *tx, void *arg),
		    void *arg);
int kt__tx_put(kt__tx *tx, kt__slice part, kt__slice sort, kt__slice val);
int kt__tx_del(kt__tx *tx, kt__slice part, kt__slice sort);
int kt__tx_commit(kt__tx *tx);
/* A fresh node id, and a fresh version; each handle reserves ranges of
 * them from the counter row, KT__ALLOC_CHUNK at a time. */
int kt__tx_alloc_id(kt__tx *tx, uint64_t *id);
int kt__tx_version(kt__tx *tx, uint64_t *v);
/* Raise the persisted counter limits to at least @p min_id and @p min_ver
 * (repair); @p raised gets bit 1 for ids, 2 for versions. */
int kt__tx_counters_raise(kt__tx *tx, uint64_t min_id, uint64_t min_ver,
			  int *raised);

/* A reader: reads through a transaction's overlay (writers, holding the
 * lock), or from a snapshot or the latest state (readers). */
typedef struct kt__rd {
	kt_store *st;
	kt__tx *tx;
	kt__snap *snap;
} kt__rd;

/* The id cache's read (api.c): node @p id from the node row at the
 * partition last found for it, through reader @p rd (a transaction's
 * reads become its conditions).  0 with @p n and, unless NULL, @p path
 * set when that row is the node's and the node has one path; KT_ENOTFOUND
 * when the cache cannot tell (read the id row then); another error when
 * the read failed. */
int kt__idc_lookup(kt__node *n, kt__buf *path, kt__rd *rd, uint64_t id);

int kt__rd_get(kt__rd *rd, kt__slice part, kt__slice sort, kt__buf *out);
/* A hint that row (part, sort) will be read soon (rows.h, prefetch). */
void kt__rd_prefetch(kt__rd *rd, kt__slice part, kt__slice sort);
/* A hint that partition @p part will be scanned from its start soon. */
void kt__rd_prefetch_scan(kt__rd *rd, kt__slice part);

/* A call that only reads runs as
 *
 *	unsigned int attempt = 0;
 *	do {
 *		if ((rc = kt__rd_begin(&rd, st)) == 0)
 *			rc = read_it(&rd, ...);
 *	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
 *
 * On an engine that validates (RADOS, rows.h) kt__rd_begin takes a
 * snapshot, so that every read is recorded, and kt__rd_end asks whether
 * all of it still holds: if not, the call read another client's commit
 * part way, and it runs again (after a short pause; KT_EBUSY after
 * KT__RETRY_MAX attempts).  Whatever the attempt produced for its caller
 * must be freed by it when it fails; kt__rd_end returns KT__ERETRY only
 * in place of what read_it returned.  Elsewhere both only set up and free
 * the reader: @p rc comes back as it was. */
int kt__rd_begin(kt__rd *rd, kt_store *st);
/* As kt__rd_begin, for a reader that needs one snapshot on every engine
 * (a node row and its blocks, say): it takes one on LevelDB too. */
int kt__rd_begin_snap(kt__rd *rd, kt_store *st);
int kt__rd_end(kt__rd *rd, int rc, unsigned int *attempt);
/* Does the engine validate reads (and readers need kt__rd_begin)? */
int kt__rd_validates(const kt_store *st);

/* A merged cursor over the engine and a transaction's overlay. */
typedef struct kt__mcur kt__mcur;
/* kt__rd_get for a caller that checks the row itself (value blocks with
 * their CRC-32C): the engine may skip its own checksums (rows.h). */
int kt__rd_get_unchecked(kt__rd *rd, kt__slice part, kt__slice sort,
			 kt__buf *out);
/* kt__rd_get for a caller reading rows in ascending key order, each a
 * few rows past the one it read before this way (rows.h, get_near). */
int kt__rd_get_near(kt__rd *rd, kt__slice part, kt__slice sort,
		    kt__buf *out);
int kt__rd_scan(kt__mcur **out, kt__rd *rd, const kt__scan *how);
int kt__mcur_next(kt__mcur *c, kt__row *row);
void kt__mcur_free(kt__mcur *c);
/* @p c, a forward scan through rd's snapshot that said KT_ITEROVER, is
 * done with, and get_near reads through that snapshot follow: the
 * engine may pass on its cursor to them (rows.h, cursor_done).  @p c
 * says KT_ITEROVER from then on, and is still freed by the caller. */
void kt__mcur_done(kt__mcur *c, kt__rd *rd);

/* Id rows (format 2): id -> the node's partition key.  kt__id_put takes a
 * canonical path, kt__id_put_enc an already encoded partition key. */
int kt__id_put(kt__tx *tx, uint64_t id, const char *p, size_t len);
int kt__id_put_enc(kt__tx *tx, uint64_t id, const char *part, size_t plen);
int kt__id_del(kt__tx *tx, uint64_t id);
/* Read the id row of @p id: its partition key into @p part. */
int kt__id_get(kt__buf *part, kt__rd *rd, uint64_t id);

/* Nodes with several paths (alias.c, format 4). */
typedef struct kt__paths {
	kt__buf *v; /* partition keys: the id row's path first */
	size_t n, cap;
} kt__paths;
void kt__part_alias(char out[32], uint64_t id);
/* Every path (partition key) of node @p id. */
int kt__paths_get(kt__paths *ps, kt__rd *rd, uint64_t id);
void kt__paths_free(kt__paths *ps);
/* Record a further path of @p id. */
int kt__alias_add(kt__tx *tx, uint64_t id, kt__slice part);
/* Path @p part of @p id goes (the node keeps others): if the id row names
 * it, the first further path takes its place there. */
int kt__alias_remove(kt__tx *tx, uint64_t id, kt__slice part);
/* Path @p from of @p id becomes @p to. */
int kt__alias_move(kt__tx *tx, uint64_t id, kt__slice from, kt__slice to);
/* Write node n, with a fresh version, under every one of its paths. */
int kt__node_put_all(kt__tx *tx, kt__node *n);

/* Read the node row of canonical path p: 0, KT_ENOTFOUND, error. */
int kt__node_get(kt__node *n, kt__rd *rd, const char *p, size_t len);
/* Read the node row under partition key @p part. */
int kt__node_get_enc(kt__node *n, kt__rd *rd, kt__slice part);
/* Write the node row of p with a fresh version; a node with several paths
 * is written under all of them (kt__node_put_all). */
int kt__node_put(kt__tx *tx, const char *p, size_t len, kt__node *n);

/* ------------------------------------------------------------------------ */
/* Resolution (resolve.c). */

#define KT__R_FOLLOW 0x01u  /* follow a link in the last component */
#define KT__R_CREATE 0x02u  /* make missing ancestors (writers only) */
#define KT__R_NEW 0x04u     /* the last component is likely absent: read
			       its parent at the same time (also implied
			       by KT__R_CREATE) */

typedef struct kt__res {
	kt__buf path; /* real canonical path of the node (or where it goes) */
	size_t parent_len; /* path[0..parent_len) is the parent ("" = root) */
	int exists;
	kt__node node; /* when exists */
} kt__res;

int kt__resolve(kt__res *r, kt__rd *rd, const char *path, unsigned int flags,
		const char *op);
void kt__res_free(kt__res *r);


/* Make a new node of @p kind at real path p, whose parent is a directory
 * (writers): an item with value data, a link with target data, a special
 * file with its payload (KT__SPECIAL_LEN bytes), or an empty directory.
 * Owner and times come from the transaction; the parent is updated. */
int kt__make_node(kt__tx *tx, const char *p, size_t len, unsigned int kind,
		  uint32_t mode, const void *data, size_t dlen);

/* Add or change the index row of node n at real path p, in its parent. */
int kt__index_put(kt__tx *tx, const char *p, size_t len, const kt__node *n);

/* The entries of directory p as the transaction sees them (its own writes
 * included), at most @p max of them (0: all); the scan is a condition of
 * its commit. */
int kt__count_entries(kt__tx *tx, const char *p, size_t len, uint64_t max,
		      uint64_t *out);

/* Record in the parent of p that entries changed: mtime/ctime now,
 * nsubdirs adjusted by @p dirs (+1 a directory came, -1 one went, 0) and
 * the entry count by @p ents (+1 an index row was added, which the
 * caller has already put, -1 one removed, 0 one changed).  An entry
 * added past the store's dir_max fails with KT_EDIRFULL, naming the
 * parent. */
int kt__parent_touch(kt__tx *tx, const char *p, size_t len, int dirs,
		     int ents);

/* Give an item node the directory kind as well (it gains children). */
int kt__item_to_dir(kt__tx *tx, const char *p, size_t len, kt__node *n);

/* ------------------------------------------------------------------------ */
/* Values (value.c). */

/* For tests of older formats (test_format): when 0, stores made from
 * now on have no block checksums, as before format 5 (store.c). */
extern int kt__test_blksum;
/* For tests of older stores: when 0, stores made from now on do not count
 * their directories' entries, and kt_repair does not make a RADOS tree
 * count them (store.c, repair.c). */
extern int kt__test_counted;

/* Make a store made before counted directories count them from now on
 * (the header's flag; store.c).  Its directories without a count are
 * counted by kt_repair, or each at the first entry added to it (node.c).
 * Libraries older than the flag refuse the store afterwards. */
int kt__store_count_entries(kt_store *st);

/* Check block row @p b of node @p id as stored (@p v, *@p len bytes):
 * in a store with block checksums, its CRC-32C, and then *@p len becomes
 * the length of its bytes without it (value.c).  KT_ECORRUPT. */
int kt__blk_open(const kt_store *st, uint64_t id, uint64_t b, const void *v,
		 size_t *len);
int kt__value_read(kt__rd *rd, const kt__node *n, void *buf, size_t len,
		   uint64_t off, size_t *nread);
int kt__value_set(kt__tx *tx, kt__node *n, const void *data, size_t len);
int kt__value_write(kt__tx *tx, kt__node *n, const void *data, size_t len,
		    uint64_t off);
int kt__value_truncate(kt__tx *tx, kt__node *n, uint64_t size);
/* Drop blocks that lie past the end of n's value (all of them when the
 * value is inline or absent), and bytes past the end in the last one.
 * Returns 1 if anything was cut, 0 if nothing was, or an error. */
int kt__value_trim(kt__tx *tx, const kt__node *n);
/* Delete every block and attribute row of node n. */
int kt__node_drop_data(kt__tx *tx, const kt__node *n);

int64_t kt__now(void);

/* Large renames and recursive deletes (ops.c). */
/* Rows of a subtree that one commit moves or deletes at most; a larger
 * one goes in steps behind a fence (tests lower it). */
extern size_t kt__big_rows;
/* For tests: called after each commit of a large operation, with 0 for
 * the commit point and 1, 2... for the steps after it; -1 after one
 * that was made in one commit behind the fence after all. */
extern void (*kt__test_big_step)(int step);
/* Finish the large operation a journal row records (at open). */
int kt__big_resume(kt_store *st);
/* The same for the holder, when a client went away in its steps
 * (server.c): nothing when no journal row is there (it went away before
 * its commit point). */
int kt__big_finish(kt_store *st);
/* The header row as this library writes it, with or without the journal
 * flag (store.c). */
int kt__header_put(kt__tx *tx, int journal);

/* Drop every orphan (at open: their users are gone). */
int kt__orphans_drop_all(kt_store *st);

typedef struct kt__watch kt__watch;
struct kt__write;

/* The changes the writes @p w of one commit stand for, each once: *out
 * (malloc'd) points into *arena (malloc'd); free both. */
int kt__changes(kt_change **out, size_t *n, char **arena,
		const kt__delim *d, const struct kt__write *w, size_t nw);

/* Stop kt_watch()'s callback, if any (kt_close). */
void kt__watch_stop(kt_store *st);

#endif /* KT_TREE_H */
