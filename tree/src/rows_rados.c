/*
 * rows_rados.c - the Ceph RADOS implementation of the storage seam
 * (rows.h), and the only file that includes <rados/librados.h>.
 *
 * Layout.  A tree T lives in one pool (and namespace) as these objects:
 *
 *   T/<partition key>    one object per partition; its omap holds the
 *                        partition's rows: omap key "." || esc(sort key),
 *                        omap value the row's value.  A partition key too
 *                        long for an object name gives T#<32 hex digits of
 *                        its hash> instead, with the key in xattr kt.part.
 *   T//id.<16 hex>       partition "/id", the id index, sharded by
 *                        allocation chunk (below, "The id index").
 *   T//blk/<id>.<16 hex> a value's blocks, 256 per object: the bytes in
 *                        the object's data, an index in its omap; T//blk/<id>
 *                        lists the value's stripes (below, "Blocks").
 *   T!cat                the catalog: one omap key "." || partition key
 *                        per partition that ever held a row, so that the
 *                        partitions starting with a prefix can be listed
 *                        in byte order (RADOS lists objects unordered).
 *   T!tx.<txid>          the record of a commit spanning several objects
 *                        while it runs (below).
 *   T!watch              who watches the tree, and what watchers listen
 *                        on (below, "Watching").
 *   T!seq                a commit counter, only when a handle was asked
 *                        to number its commits (kt__rados_number_commits,
 *                        for tests that replay commits in order).
 *
 * esc() keeps omap keys free of NUL (librados takes C strings for paging
 * bounds) and preserves order: 00 -> 01 01, 01 -> 01 02, other bytes as
 * they are.  Every object carries xattr kt.lk: "-" when free, or the id of
 * the commit that has it locked.
 *
 * Commits.  RADOS makes one compound operation on one object atomic and
 * offers guards (assert_version, cmpxattr), but nothing across objects.  A
 * snapshot here records, for each object read through it, the object
 * version seen (reads of a locked object first settle the lock, unless its
 * commit is still pending: then the snapshot notes the lock too).  A commit's
 * conditions then become "every object read is still at the version seen":
 * coarser than the seam asks (any change to the object, not only to the
 * rows read, fails it) but never weaker, and the tree layer reruns the
 * operation.
 *
 * - One object touched (read or written): one guarded operation.
 * - Several: an optimistic two-phase commit in the manner of Percolator.
 *   1. Write the record T!tx.<txid>, state P (pending), holding every
 *      object's writes.
 *   2. Lock every object read or written, in parallel: each lock is
 *      guarded on the version read (or on "free" for a blind write, or
 *      on absence), so it fails if anything changed.  Any failure: abort.
 *   3. The commit point: flip the record from P to C with one guarded
 *      operation.  Exactly one of this and a rollback (P to A) succeeds.
 *   4. Apply each object's writes and unlock it, guarded on the lock
 *      still being this commit's; then delete the record.
 *
 * A reader that meets a lock settles it from the record: C, roll the
 * object forward; A or no record, unlock it; P, read the object as it is
 * (as it was before that commit; oread_do).  A writer that needs an object
 * locked by a P record waits, and once it has been pending for longer than
 * the lease (the writer died, or stalls), flips it to A itself and rolls
 * back.  A writer whose record was flipped to A
 * cannot commit any more, so nothing needs fencing: the record's state
 * change is the only commit point and it is guarded.  A client killed at
 * any step leaves either locks of a P record (rolled back after the
 * lease), of a C record (rolled forward by the next reader), or nothing.
 *
 * Reads.  Each read sees one object at one moment, and reads of several
 * objects through a snapshot see each at its own.  validate() tells a
 * reader whether they still add up to one moment: every object read is
 * still at the version it was read at (below, "Validation").  The tree
 * layer validates every call that reads without committing, and reruns it
 * when the answer is no; iterations are validated by nobody, and are
 * weaker than on LevelDB (keytree.h, "Engines").  Commits are
 * serializable.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rados/librados.h>

#include "rows.h"
#include "server.h"

/*
 * librados is loaded when the first RADOS tree is opened, not linked: it
 * pulls in Ceph's common library, whose start-up costs every process tens
 * of milliseconds (and more than half a second under the sanitizers) even
 * when it only ever opens a directory.  The header still gives the types;
 * each function below is called through this table, and the #defines after
 * it keep the code reading as plain librados calls.  KEYTREE_LIBRADOS
 * names another file to load (a Ceph installed outside the library path).
 */
#define RADOS_SONAME "librados.so.2"
#define RADOS_FUNCS \
	X(aio_remove) \
	X(nobjects_list_close) \
	X(nobjects_list_next2) \
	X(nobjects_list_open) \
	X(remove) \
	X(aio_create_completion2) \
	X(aio_get_return_value) \
	X(aio_get_version) \
	X(aio_read_op_operate) \
	X(aio_release) \
	X(aio_wait_for_complete) \
	X(aio_write_op_operate) \
	X(aio_notify) \
	X(aio_is_complete) \
	X(blocklist_add) \
	X(buffer_free) \
	X(getaddrs) \
	X(wait_for_latest_osdmap) \
	X(notify2) \
	X(notify_ack) \
	X(unwatch2) \
	X(watch2) \
	X(watch_flush) \
	X(conf_get) \
	X(conf_parse_env) \
	X(conf_read_file) \
	X(conf_set) \
	X(connect) \
	X(create2) \
	X(create_read_op) \
	X(create_write_op) \
	X(get_instance_id) \
	X(getxattrs_end) \
	X(getxattrs_next) \
	X(ioctx_create) \
	X(ioctx_destroy) \
	X(ioctx_set_namespace) \
	X(omap_get_end) \
	X(omap_get_next2) \
	X(read_op_getxattrs) \
	X(read_op_omap_get_vals2) \
	X(read_op_omap_get_vals_by_keys) \
	X(read_op_read) \
	X(read_op_stat) \
	X(release_read_op) \
	X(release_write_op) \
	X(shutdown) \
	X(write_op_assert_version) \
	X(write_op_cmpxattr) \
	X(write_op_create) \
	X(write_op_omap_rm_keys2) \
	X(write_op_omap_set2) \
	X(write_op_omap_clear) \
	X(write_op_remove) \
	X(write_op_setxattr) \
	X(write_op_rmxattr) \
	X(write_op_write) \
	X(write_op_write_full) \
	X(write_op_zero) \
	X(read_op_assert_version) \
	X(read_op_operate)

static struct {
#define X(n) __typeof__(rados_##n) *n;
	RADOS_FUNCS
#undef X
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static char lib_error[256];   /* empty once every symbol is resolved */

static void lib_load(void)
{
	const char *file = getenv("KEYTREE_LIBRADOS");
	const char *why;
	void *h;

	if (file == NULL || file[0] == '\0')
		file = RADOS_SONAME;
	if ((h = dlopen(file, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		why = dlerror();
		snprintf(lib_error, sizeof(lib_error), "%s",
			 why && why[0] ? why : file);
		return;
	}
#define X(n)								\
	if ((*(void **)&lib.n = dlsym(h, "rados_" #n)) == NULL) {	\
		snprintf(lib_error, sizeof(lib_error),			\
			 "%s has no rados_" #n, file);		\
		return;							\
	}
	RADOS_FUNCS
#undef X
}

#define rados_aio_remove (lib.aio_remove)
#define rados_nobjects_list_close (lib.nobjects_list_close)
#define rados_nobjects_list_next2 (lib.nobjects_list_next2)
#define rados_nobjects_list_open (lib.nobjects_list_open)
#define rados_remove (lib.remove)
#define rados_aio_create_completion2 (lib.aio_create_completion2)
#define rados_aio_get_return_value (lib.aio_get_return_value)
#define rados_aio_get_version (lib.aio_get_version)
#define rados_blocklist_add (lib.blocklist_add)
#define rados_getaddrs (lib.getaddrs)
#define rados_wait_for_latest_osdmap (lib.wait_for_latest_osdmap)
#define rados_aio_read_op_operate (lib.aio_read_op_operate)
#define rados_aio_release (lib.aio_release)
#define rados_aio_wait_for_complete (lib.aio_wait_for_complete)
#define rados_aio_write_op_operate (lib.aio_write_op_operate)
#define rados_aio_notify (lib.aio_notify)
#define rados_aio_is_complete (lib.aio_is_complete)
#define rados_buffer_free (lib.buffer_free)
#define rados_notify2 (lib.notify2)
#define rados_notify_ack (lib.notify_ack)
#define rados_unwatch2 (lib.unwatch2)
#define rados_watch2 (lib.watch2)
#define rados_watch_flush (lib.watch_flush)
#define rados_conf_get (lib.conf_get)
#define rados_conf_parse_env (lib.conf_parse_env)
#define rados_conf_read_file (lib.conf_read_file)
#define rados_conf_set (lib.conf_set)
#define rados_connect (lib.connect)
#define rados_create2 (lib.create2)
#define rados_create_read_op (lib.create_read_op)
#define rados_create_write_op (lib.create_write_op)
#define rados_get_instance_id (lib.get_instance_id)
#define rados_getxattrs_end (lib.getxattrs_end)
#define rados_getxattrs_next (lib.getxattrs_next)
#define rados_ioctx_create (lib.ioctx_create)
#define rados_ioctx_destroy (lib.ioctx_destroy)
#define rados_ioctx_set_namespace (lib.ioctx_set_namespace)
#define rados_omap_get_end (lib.omap_get_end)
#define rados_omap_get_next2 (lib.omap_get_next2)
#define rados_read_op_getxattrs (lib.read_op_getxattrs)
#define rados_read_op_omap_get_vals2 (lib.read_op_omap_get_vals2)
#define rados_read_op_omap_get_vals_by_keys (lib.read_op_omap_get_vals_by_keys)
#define rados_read_op_read (lib.read_op_read)
#define rados_read_op_stat (lib.read_op_stat)
#define rados_release_read_op (lib.release_read_op)
#define rados_release_write_op (lib.release_write_op)
#define rados_shutdown (lib.shutdown)
#define rados_write_op_assert_version (lib.write_op_assert_version)
#define rados_write_op_cmpxattr (lib.write_op_cmpxattr)
#define rados_write_op_create (lib.write_op_create)
#define rados_write_op_omap_rm_keys2 (lib.write_op_omap_rm_keys2)
#define rados_write_op_omap_set2 (lib.write_op_omap_set2)
#define rados_write_op_omap_clear (lib.write_op_omap_clear)
#define rados_write_op_remove (lib.write_op_remove)
#define rados_write_op_setxattr (lib.write_op_setxattr)
#define rados_write_op_rmxattr (lib.write_op_rmxattr)
#define rados_write_op_write_full (lib.write_op_write_full)
#define rados_write_op_write (lib.write_op_write)
#define rados_write_op_zero (lib.write_op_zero)
#define rados_read_op_assert_version (lib.read_op_assert_version)
#define rados_read_op_operate (lib.read_op_operate)

#define LK "kt.lk"
#define PARTX "kt.part"
#define LKSCOPE "kt.lks"
#define STX "kt.st"
#define FREE "-"
#define STG_PART "kt.s."  /* + 8 hex digits: the object has writes in that part */
#define STG_DONE "kt.sa"  /* the last part applied to the object */
#define STG_BEAT "kt.hb"  /* a staged commit's heartbeat */
#define PRIX "kt.pri"     /* on an object a commit with its record on
			     another object (its primary) locked: that
			     object's name */
#define PRI_STATE "kt.t." /* + id: on the primary, the commit's state after
			     its commit point or roll-back (C or A) */
#define PRI_BODY "kt.d."  /* + id: on the primary, the commit's writes */
#define PRI_CAT "kt.c."   /* + id: on the primary of a parallel commit, the
			     catalog keys it adds, each ended by a NUL */
#define PAGE_MAX 1024          /* librados returns at most this per call */
#define OID_MAX 1024           /* longer partitions get hashed names */
#define LEASE_DEFAULT_MS 3000
#define KNOWN_MAX 65536        /* catalog entries remembered per handle */

struct fin;

typedef struct rad {
	kt__rows base;
	rados_t cl;
	rados_ioctx_t io;
	char *tree;
	size_t treelen;
	unsigned int lease_ms;
	uint64_t inst;             /* this client's instance id */
	pthread_mutex_t mu;        /* guards known and txseq */
	uint64_t txseq;
	int numbered;              /* kt__rados_number_commits() */
	unsigned int slow;         /* budgets are multiplied by 1 << slow,
				      raised after a commit ran out of its
				      own (under mu) */
	/* Partitions known to be in the catalog (entries are never removed,
	 * so this cannot go stale), kept as a set of names. */
	struct kt__snap *known_set;
	/* Committed commits still being applied (fin_*), under mu. */
	struct fin *fins;
	size_t nfins;
	/* A parallel commit's fin sends its other objects' applies once its
	 * primary's is acknowledged: fin_gen counts those launches, under
	 * fin_mu, and fin_cv tells them (fin_wait_mine). */
	pthread_mutex_t fin_mu;
	pthread_cond_t fin_cv;
	uint64_t fin_gen;
	long par_unlaunched;       /* such fins not launched yet (atomic) */
	/* Records on primaries whose commits are finished, to remove from
	 * them with this client's next write there (marks_*), under mu. */
	struct pmark *marks;
	size_t nmarks;
	/* The id shard this handle last locked: it exists (under mu). */
	char *shard_ok;
	/* Watching (kt__rados_watch), under mu: this handle's watch of
	 * T!watch and whom it tells; whether other handles watch, as last
	 * read, and when. */
	kt__notify_fn note;
	void *note_arg;
	uint64_t wcookie;
	int watching;
	int others;
	uint64_t others_at;
	uint64_t others_ver;       /* T!watch's version when last read */
	struct wheard *heard;      /* notes heard, for the watch thread */
	struct wheard **heard_end;
	pthread_cond_t wcv;
	pthread_t wthread;
	int wstop;
	int wlost;                 /* librados lost the watch: renew it */
	struct wsent *sent;        /* notifies in flight (watching handle) */
	int layout;                /* 1, or 2: blocks in object data */
	/* Locks (kt__rados_lock): the watch of T!lkw, set up under lkmu;
	 * under mu, whether librados lost it, the locks this handle holds
	 * and which other clients answered lately. */
	pthread_mutex_t lkmu;
	pthread_mutex_t lkop;      /* one change of locks at a time */
	int lkw;
	int lkw_lost;
	uint64_t lkwcookie;
	char *lkwoid;
	char addr[256];            /* this client's, for fencing it */
	struct lkheld *held;
	size_t nheld, capheld;
	struct { uint64_t inst, at; } alive[8];
	uint64_t fenced[8];        /* clients this handle fenced, lately */
	unsigned int nfenced;
	/* Staged commits (rad_fence): this handle's, if one is open, and,
	 * under mu, the heartbeats of other clients' ones lately met, with
	 * when each was first seen at that beat. */
	struct stage *stage;
	struct { char id[80]; char beat[24]; uint64_t at; } beats[8];
	unsigned int nbeats;
} rad;

static const kt__rows_ops rad_ops;

/* What a snapshot saw of one object. */
typedef struct seen {
	char *oid;
	uint64_t ver;
	int exists;
	/* The id of a commit that had the object locked, still pending,
	 * when it was read (its rows were read as they were before it);
	 * NULL when the object was free. */
	char *lk;
} seen;

struct pfent;

struct kt__snap {
	rad *e;
	seen *v;      /* open addressing, capacity a power of two */
	size_t nv, capv;
	int torn;     /* an object read twice had changed in between */
	struct pfent *pf; /* rows read ahead (rad_prefetch), AHEAD_MAX */
};

/* ------------------------------------------------------------------------ */
/* Small helpers */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts;
	ts.tv_sec = ms / 1000u;
	ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static uint64_t hash64(const char *p, size_t n, uint64_t h)
{
	size_t i;
	for (i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h;
}

/* Record a RADOS failure (@p rc, a negative errno) as KT_EIO. */
static int rerr(int rc, const char *what, const char *oid)
{
	char a[KT__SHOWSZ];
	const char *why = strerror(-rc);

	if (rc == -ETIMEDOUT)
		why = "timed out (is the cluster up? see "
		      "rados_osd_op_timeout)";
	else if (rc == -ESHUTDOWN)
		why = "this client is fenced (blocklisted): it held a lock "
		      "and did not answer another client within the lease, "
		      "which took the lock over; open the store again";
	if (oid != NULL)
		return kt__err(KT_EIO, "ceph: %s object '%s': %s", what,
			       kt__show(a, sizeof(a), oid, strlen(oid)), why);
	return kt__err(KT_EIO, "ceph: %s: %s", what, why);
}

/* Is @p rc what a failed guard returns? */
static int is_conflict(int rc)
{
	return rc == -ECANCELED || rc == -ERANGE || rc == -EOVERFLOW ||
	       rc == -EEXIST || rc == -ENOENT;
}

/* The omap key of sort key @p s: "." || esc(s). */
static int okey(kt__buf *out, kt__slice s)
{
	size_t i;
	int rc;

	out->len = 0;
	if ((rc = kt__buf_addc(out, '.')) != 0)
		return rc;
	for (i = 0; i < s.len && rc == 0; i++) {
		unsigned char c = (unsigned char)s.p[i];
		if (c <= 1) {
			if ((rc = kt__buf_addc(out, 1)) == 0)
				rc = kt__buf_addc(out, (char)(c + 1));
		} else {
			rc = kt__buf_addc(out, (char)c);
		}
	}
	return rc;
}

/* The sort key of omap key @p k (without checks beyond the format's). */
static int okey_dec(kt__buf *out, const char *k, size_t n)
{
	size_t i;
	int rc = 0;

	out->len = 0;
	if (n == 0 || k[0] != '.')
		return kt__err(KT_ECORRUPT, "ceph: omap key without '.'");
	if ((rc = kt__buf_reserve(out, n)) != 0)
		return rc;
	for (i = 1; i < n; i++) {
		unsigned char c = (unsigned char)k[i];
		if (c == 1) {
			if (i + 1 == n || (k[i + 1] != 1 && k[i + 1] != 2))
				return kt__err(KT_ECORRUPT, "ceph: bad escape "
					       "in an omap key");
			c = (unsigned char)(k[++i] - 1);
		}
		out->p[out->len++] = (char)c;
	}
	out->p[out->len] = '\0';
	return 0;
}

/* The object name of partition @p part. */
static int oid_of(kt__buf *out, const rad *e, kt__slice part)
{
	char hex[40];
	int rc;

	out->len = 0;
	if ((rc = kt__buf_add(out, e->tree, e->treelen)) != 0)
		return rc;
	if (e->treelen + 1 + part.len <= OID_MAX) {
		if ((rc = kt__buf_addc(out, '/')) == 0)
			rc = kt__buf_add(out, part.p, part.len);
		return rc;
	}
	snprintf(hex, sizeof(hex), "#%016" PRIx64 "%016" PRIx64,
		 hash64(part.p, part.len, 0xcbf29ce484222325ULL),
		 hash64(part.p, part.len, 0x84222325cbf29ce4ULL));
	return kt__buf_add(out, hex, strlen(hex));
}

static int is_hashed(const char *oid, const rad *e)
{
	return oid[e->treelen] == '#';
}

/*
 * The id index.  It is sharded: every create writes a row into partition
 * "/id" (the tree layer's KT__PART_ID), so one object for all of them
 * would be locked by every create of every client, and concurrent creates
 * would abort each other there.  Ids are handed out in chunks of 1024 per
 * handle (KT__ALLOC_CHUNK, a row write of /meta), so the row of id N goes
 * to the object of chunk (N - 1) >> 10 instead: partition "/id." + 16
 * lower-case hex digits of the chunk.  Two clients then write different
 * objects for 1024 creates at a time.  The shards sort in id order, so a
 * scan of "/id" is a walk of the catalog entries starting with "/id",
 * each shard read in turn and its rows reported as partition "/id"; a
 * sort key that is not 8 bytes (no valid id row has one) stays in the
 * plain "/id" object, which sorts first.
 */
#define IDPART "/id"
#define IDPART_LEN 3
#define IDSHARD_LEN (IDPART_LEN + 1 + 16)
#define IDSHARD_BITS 10

static int is_idpart(kt__slice part)
{
	return part.len == IDPART_LEN && memcmp(part.p, IDPART, IDPART_LEN) == 0;
}

/* Is @p part (a physical partition) one of the id index's shards? */
static int is_idshard(kt__slice part)
{
	size_t i;

	if (part.len != IDSHARD_LEN || memcmp(part.p, IDPART ".", 4) != 0)
		return 0;
	for (i = 4; i < IDSHARD_LEN; i++)
		if (!((part.p[i] >= '0' && part.p[i] <= '9') ||
		      (part.p[i] >= 'a' && part.p[i] <= 'f')))
			return 0;
	return 1;
}

/* The shard that holds the id row with sort key @p sort (8 bytes). */
static uint64_t idshard_of(kt__slice sort)
{
	uint64_t id = kt__get64be((const unsigned char *)sort.p);
	return id == 0 ? 0 : (id - 1) >> IDSHARD_BITS;
}

/*
 * Blocks.  A value's blocks (partition "/blk/" + 16 hex digits of the node
 * id, sort key the block number, 8 bytes big-endian) are kept in object
 * data, not in omap: an OSD stores omap values in its key-value database,
 * where large values are rewritten by every compaction, and object data
 * is what RADOS is made for.  An object holds the 256 blocks of one
 * stripe (4 MiB at the tree's 16 KiB blocks, the object size RBD and
 * CephFS use by default, well below osd_max_object_size), partition
 * "/blk/<id>." + 16 hex digits of block >> 8, so a value of any size fits
 * and a write touches only the stripes it changes.  In that object, block
 * b's bytes are at (b & 255) * 16384 and its omap key (as any row's) has
 * value "d" + its length (4 bytes, little-endian): the omap still says
 * which blocks exist and how long each is, which keeps holes free.  A
 * block longer than the stride (a store made with a larger block size)
 * keeps its bytes in the omap value instead (longer than 5 bytes, so
 * never mistaken); so does a row whose sort key is not 8 bytes (no valid
 * block row has one), in the stripe of its first 8 bytes padded with
 * zeros, which keeps the rows in sort-key order.
 *
 * A scan of one value's blocks must find its stripes without walking the
 * catalog (a guard on the catalog would make every truncate conflict with
 * every create in the tree): the value's base object, partition
 * "/blk/<id>" itself, keeps omap key "s" + the 16 hex digits of each
 * stripe that was ever written, added by the commit that first writes
 * into the stripe.  A scan reads that list, then the stripes in order,
 * and is guarded on the base and the stripes it read.  A prefix scan (a
 * check) walks the catalog, where each stripe has its entry, and sees no
 * row of a base (its keys do not start with ".").
 *
 * Trees made before this layout (no xattr kt.fmt on the catalog, layout
 * 1) keep their blocks in one object per value, in omap.
 */
#define BLKPART "/blk/"
#define BLKPART_LEN 5
#define BLKBASE_LEN (BLKPART_LEN + 16)
#define STRIPE_LEN (BLKBASE_LEN + 1 + 16)
#define STRIPE_SHIFT 8
#define STRIPE_BLOCKS (1u << STRIPE_SHIFT)
#define DSTRIDE 16384u              /* bytes of object data per block */
#define STRIPE_BYTES ((size_t)STRIPE_BLOCKS * DSTRIDE)
#define PHYS_MAX (STRIPE_LEN + 1)   /* a buffer for phys_part */
#define LAYOUT_CUR 4
#define FMTX "kt.fmt"

static int all_hex(const char *p, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') ||
		      (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

/* Is @p part a value's block partition ("/blk/" + 16 hex digits)? */
static int is_blkpart(kt__slice part)
{
	return part.len == BLKBASE_LEN &&
	       memcmp(part.p, BLKPART, BLKPART_LEN) == 0 &&
	       all_hex(part.p + BLKPART_LEN, 16);
}

/* Is @p part (physical) a stripe of a value's blocks? */
static int is_stripe(kt__slice part)
{
	return part.len == STRIPE_LEN &&
	       is_blkpart(kt__sl(part.p, BLKBASE_LEN)) &&
	       part.p[BLKBASE_LEN] == '.' &&
	       all_hex(part.p + BLKBASE_LEN + 1, 16);
}

/* Is object @p oid of tree @p e a stripe? */
static int oid_is_stripe(const rad *e, const char *oid)
{
	return oid[e->treelen] == '/' &&
	       is_stripe(kt__sl(oid + e->treelen + 1,
				strlen(oid + e->treelen + 1)));
}

/* Block number of a block row's sort key: its first 8 bytes, padded with
 * zeros (order-preserving; only 8-byte keys are valid). */
static uint64_t blk_of(kt__slice sort)
{
	unsigned char b[8] = {0};
	memcpy(b, sort.p, sort.len < 8 ? sort.len : 8);
	return kt__get64be(b);
}

/* Is @p part split over several objects in tree @p e (the id index; a
 * value's blocks from layout 2 on)?  SH_ID, SH_BLK, or 0. */
#define SH_ID 1
#define SH_BLK 2
static int sh_kind(const rad *e, kt__slice part)
{
	if (is_idpart(part))
		return SH_ID;
	if (e->layout >= 2 && is_blkpart(part))
		return SH_BLK;
	return 0;
}

/* The partition whose object holds row (@p part, @p sort): @p part
 * itself, an id shard or a stripe, written into @p buf. */
static kt__slice phys_part(const rad *e, kt__slice part, kt__slice sort,
			   char buf[PHYS_MAX])
{
	switch (sh_kind(e, part)) {
	case SH_ID:
		if (sort.len != 8)
			return part;
		snprintf(buf, PHYS_MAX, IDPART ".%016" PRIx64,
			 idshard_of(sort));
		return kt__sl(buf, IDSHARD_LEN);
	case SH_BLK:
		memcpy(buf, part.p, BLKBASE_LEN);
		snprintf(buf + BLKBASE_LEN, PHYS_MAX - BLKBASE_LEN,
			 ".%016" PRIx64, blk_of(sort) >> STRIPE_SHIFT);
		return kt__sl(buf, STRIPE_LEN);
	}
	return part;
}

/* The partition the tree layer knows physical partition @p part as. */
static kt__slice logical_part(kt__slice part)
{
	if (is_idshard(part))
		return kt__sl(IDPART, IDPART_LEN);
	if (is_stripe(part))
		return kt__sl(part.p, BLKBASE_LEN);
	return part;
}

static int name_of(kt__buf *out, const rad *e, const char *what)
{
	out->len = 0;
	if (kt__buf_add(out, e->tree, e->treelen) != 0 ||
	    kt__buf_add(out, what, strlen(what)) != 0)
		return kt__err(KT_ENOMEM, "out of memory");
	return 0;
}

/* ------------------------------------------------------------------------ */
/* What a snapshot saw */

static seen *seen_slot(kt__snap *s, const char *oid)
{
	size_t h, mask;

	if (s->capv == 0)
		return NULL;
	mask = s->capv - 1;
	h = (size_t)hash64(oid, strlen(oid), 7) & mask;
	while (s->v[h].oid != NULL && strcmp(s->v[h].oid, oid) != 0)
		h = (h + 1) & mask;
	return &s->v[h];
}

static const seen *seen_find(const kt__snap *s, const char *oid)
{
	seen *x = seen_slot((kt__snap *)s, oid);
	return x != NULL && x->oid != NULL ? x : NULL;
}

/* Note that @p oid read at version @p ver (exists) through @p s, unless
 * an earlier read through it already did: the first version seen is what
 * a commit is guarded on and what validation compares with.  A later read
 * that finds another version marks the snapshot torn: its reads cannot
 * all agree with one moment. */
static int seen_note(kt__snap *s, const char *oid, int exists, uint64_t ver,
		     const char *lk)
{
	seen *x;

	if (s == NULL)
		return 0;
	if (2 * (s->nv + 1) > s->capv) {
		size_t cap = s->capv ? 2 * s->capv : 16, i;
		seen *old = s->v, *nv = calloc(cap, sizeof(*nv));
		size_t ocap = s->capv;
		if (nv == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		s->v = nv;
		s->capv = cap;
		for (i = 0; i < ocap; i++)
			if (old[i].oid != NULL)
				*seen_slot(s, old[i].oid) = old[i];
		free(old);
	}
	x = seen_slot(s, oid);
	if (x->oid != NULL) {
		if (x->exists != exists || (exists && x->ver != ver))
			s->torn = 1;
		return 0;
	}
	if ((x->oid = strdup(oid)) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	if (lk != NULL && (x->lk = strdup(lk)) == NULL) {
		free(x->oid);
		x->oid = NULL;
		return kt__err(KT_ENOMEM, "out of memory");
	}
	x->exists = exists;
	x->ver = ver;
	s->nv++;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Reading one object */

/* The result of reading one object. */
typedef struct oread {
	int exists;
	uint64_t ver;
	char lock[128];  /* kt.lk */
	kt__buf part;    /* kt.part, for hashed names */
	kt__buf scope;   /* kt.lks, of the catalog (catalog_add) */
	/* rows, as a flat list: keys (decoded) and values */
	kt__buf *keys, *vals;
	size_t n, cap;
	int more;        /* the page stopped before the end */
	int moved;       /* a stripe changed between its two reads: the
			    rows are not usable, read again (oread_once) */
	int raw;         /* keep omap keys as they are (a stripe list) */
	int fmt;         /* kt.fmt, of the catalog (0: none) */
} oread;

static void oread_clear(oread *r)
{
	size_t i;
	for (i = 0; i < r->cap; i++) {
		kt__buf_free(&r->keys[i]);
		kt__buf_free(&r->vals[i]);
	}
	free(r->keys);
	free(r->vals);
	kt__buf_free(&r->part);
	kt__buf_free(&r->scope);
	memset(r, 0, sizeof(*r));
}

static int oread_add(oread *r, const char *k, size_t kl, const char *v,
		     size_t vl)
{
	int rc;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		kt__buf *nk = realloc(r->keys, cap * sizeof(*nk));
		kt__buf *nv;
		if (nk == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		r->keys = nk;
		nv = realloc(r->vals, cap * sizeof(*nv));
		if (nv == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		r->vals = nv;
		memset(r->keys + r->cap, 0, (cap - r->cap) * sizeof(*nk));
		memset(r->vals + r->cap, 0, (cap - r->cap) * sizeof(*nv));
		r->cap = cap;
	}
	if ((rc = r->raw ? kt__buf_set(&r->keys[r->n], k, kl)
			 : okey_dec(&r->keys[r->n], k, kl)) != 0)
		return rc;
	if ((rc = kt__buf_set(&r->vals[r->n], v, vl)) != 0)
		return rc;
	r->n++;
	return 0;
}

/* Append an already decoded row. */
static int oread_add_dec(oread *r, const kt__buf *k, const kt__buf *v)
{
	kt__buf enc = {0};
	int rc = okey(&enc, kt__slb(k));

	if (rc == 0)
		rc = oread_add(r, enc.p, enc.len, v->p ? v->p : "", v->len);
	kt__buf_free(&enc);
	return rc;
}

/* What to read from an object besides its xattrs. */
typedef struct oreq {
	const char *key;    /* one omap key (encoded), or NULL */
	const char *after;  /* page: start after this omap key ("" first) */
	const char *prefix; /* page: only keys with this prefix */
	unsigned int max;   /* page size; 0: no page */
} oreq;

static int xattrs_take(oread *out, rados_xattrs_iter_t xi)
{
	const char *name, *val;
	size_t len;

	while (rados_getxattrs_next(xi, &name, &val, &len) == 0 &&
	       name != NULL) {
		if (strcmp(name, LK) == 0) {
			if (len >= sizeof(out->lock))
				len = sizeof(out->lock) - 1;
			memcpy(out->lock, val, len);
			out->lock[len] = '\0';
		} else if (strcmp(name, PARTX) == 0) {
			if (kt__buf_set(&out->part, val, len) != 0)
				return kt__err(KT_ENOMEM, "out of memory");
		} else if (strcmp(name, FMTX) == 0) {
			size_t i;
			out->fmt = len > 0 && len < 4 ? 0 : -1;
			for (i = 0; i < len && out->fmt >= 0; i++)
				out->fmt = val[i] >= '0' && val[i] <= '9'
						   ? out->fmt * 10 + val[i] - '0'
						   : -1;
		} else if (strcmp(name, LKSCOPE) == 0) {
			if (kt__buf_set(&out->scope, val, len) != 0)
				return kt__err(KT_ENOMEM, "out of memory");
		}
	}
	return 0;
}

/* Append the rows of omap iterator @p it (NULL: none) to @p out. */
static int omap_take(oread *out, rados_omap_iter_t it, const char *oid)
{
	char *k, *v;
	size_t kl, vl;
	int rc;

	if (it == NULL)
		return 0;
	while ((rc = rados_omap_get_next2(it, &k, &v, &kl, &vl)) == 0 &&
	       k != NULL)
		if ((rc = oread_add(out, k, kl, v, vl)) != 0)
			return rc;
	return rc < 0 ? rerr(rc, "reading the keys of", oid) : 0;
}

/* One read operation in flight: what oread_start sent, for oread_finish
 * to collect. */
typedef struct opend {
	rados_read_op_t op;
	rados_completion_t c;
	rados_xattrs_iter_t xi;
	rados_omap_iter_t oi, ki;
	unsigned char more;
	int xrv, orv, krv;
	int rc;           /* of the sending */
	int busy;         /* sent, not yet collected */
	/* A stripe's data read along (Blocks): bytes [dlo, dlo + dlen) of
	 * the object asked for, dgot of them there. */
	rad *e;
	char *dbuf;
	uint64_t dlo;
	size_t dlen, dgot;
	int drv;
} opend;

/* The data a read of stripe @p oid for @p q takes along: the block of
 * its key, and the blocks its page can return, up to the stripe's end.
 * Rows outside it are read after (stripe_fill). */
static void stripe_window(const oreq *q, uint64_t *lo, size_t *len)
{
	kt__buf sk = {0};
	const char *from = q->key != NULL ? q->key : q->after;
	uint64_t b = 0;
	size_t n;

	if (from != NULL && from[0] != '\0' &&
	    okey_dec(&sk, from, strlen(from)) == 0 && sk.len == 8) {
		b = kt__get64be((const unsigned char *)sk.p);
		if (q->key == NULL)
			b++; /* after it */
	}
	kt__buf_free(&sk);
	*lo = (uint64_t)(b & (STRIPE_BLOCKS - 1)) * DSTRIDE;
	n = (q->key != NULL) + (q->max > 0 ? q->max : 0);
	if (n > STRIPE_BLOCKS)
		n = STRIPE_BLOCKS;
	*len = n * DSTRIDE;
	if (*lo + *len > STRIPE_BYTES)
		*len = STRIPE_BYTES - (size_t)*lo;
}

/* Send one read operation on @p oid (librados copies @p q's strings). */
static void fin_wait_mine(rad *e, const char *oid);

static void oread_start(rad *e, const char *oid, const oreq *q, opend *p)
{
	fin_wait_mine(e, oid);
	memset(p, 0, sizeof(*p));
	p->busy = 1;
	if ((p->op = rados_create_read_op()) == NULL) {
		p->rc = kt__err(KT_ENOMEM, "out of memory");
		return;
	}
	rados_read_op_getxattrs(p->op, &p->xi, &p->xrv);
	if (q->key != NULL)
		rados_read_op_omap_get_vals_by_keys(p->op, &q->key, 1, &p->ki,
						    &p->krv);
	if (q->max > 0)
		rados_read_op_omap_get_vals2(p->op, q->after, q->prefix,
					     q->max, &p->oi, &p->more,
					     &p->orv);
	p->e = e;
	if (oid_is_stripe(e, oid)) {
		stripe_window(q, &p->dlo, &p->dlen);
		if (p->dlen > 0 && (p->dbuf = malloc(p->dlen)) == NULL) {
			p->rc = kt__err(KT_ENOMEM, "out of memory");
			return;
		}
		if (p->dlen > 0)
			rados_read_op_read(p->op, p->dlo, p->dlen, p->dbuf,
					   &p->dgot, &p->drv);
	}
	p->rc = rados_aio_create_completion2(NULL, NULL, &p->c);
	if (p->rc == 0)
		p->rc = rados_aio_read_op_operate(p->op, e->io, p->c, oid, 0);
	if (p->rc < 0)
		p->rc = rerr(p->rc, "reading", oid);
}

/* Is row @p i of stripe read @p out a block whose bytes are in the
 * object's data?  Then *off and *len say where. */
static int stripe_in_data(const oread *out, size_t i, const char *oid,
			  uint64_t *off, size_t *len, int *rc)
{
	const kt__buf *k = &out->keys[i], *v = &out->vals[i];

	*rc = 0;
	if (k->len != 8 || v->len > DSTRIDE)
		return 0; /* in omap */
	if (v->len != 5 || v->p[0] != 'd' ||
	    (*len = kt__get32((const unsigned char *)v->p + 1)) > DSTRIDE) {
		*rc = kt__err(KT_ECORRUPT, "ceph: block index entry of %zu "
			      "bytes in stripe '%s' does not decode", v->len,
			      oid);
		return 0;
	}
	*off = (uint64_t)(kt__get64be((const unsigned char *)k->p) &
			  (STRIPE_BLOCKS - 1)) *
	       DSTRIDE;
	return 1;
}

/* Replace each data block's index entry in @p out by its bytes, taken
 * from the data read along (@p p) or, for blocks outside that window, in
 * one more read guarded on the version the first was answered at; when
 * the stripe has changed since, out->moved says so. */
static int stripe_fill(opend *p, const char *oid, oread *out)
{
	uint64_t lo = UINT64_MAX, hi = 0, off, flo = 0;
	char *fbuf = NULL;
	size_t i, len, fgot = 0;
	int rc = 0, need = 0;

	if (p->dlen > 0 && p->drv < 0)
		return rerr(p->drv, "reading the data of", oid);
	for (i = 0; i < out->n; i++) {
		if (!stripe_in_data(out, i, oid, &off, &len, &rc)) {
			if (rc != 0)
				return rc;
			continue;
		}
		if (off >= p->dlo && off + len <= p->dlo + p->dlen)
			continue;
		need = 1;
		if (off < lo)
			lo = off;
		if (off + len > hi)
			hi = off + len;
	}
	if (need) {
		rados_read_op_t op = rados_create_read_op();
		int frv = 0;
		if (op == NULL || (fbuf = malloc(hi - lo)) == NULL) {
			if (op != NULL)
				rados_release_read_op(op);
			return kt__err(KT_ENOMEM, "out of memory");
		}
		flo = lo;
		rados_read_op_assert_version(op, out->ver);
		rados_read_op_read(op, lo, hi - lo, fbuf, &fgot, &frv);
		rc = rados_read_op_operate(op, p->e->io, oid, 0);
		rados_release_read_op(op);
		if (rc == -ERANGE || rc == -EOVERFLOW || rc == -ENOENT) {
			free(fbuf);
			out->moved = 1;
			return 0;
		}
		if (rc == 0 && frv < 0)
			rc = frv;
		if (rc < 0) {
			free(fbuf);
			return rerr(rc, "reading the data of", oid);
		}
	}
	for (i = 0; i < out->n && rc == 0; i++) {
		const char *src;
		size_t have;
		kt__buf *v = &out->vals[i];
		if (!stripe_in_data(out, i, oid, &off, &len, &rc))
			continue;
		if (off >= p->dlo && off + len <= p->dlo + p->dlen) {
			src = p->dbuf + (off - p->dlo);
			have = off - p->dlo >= p->dgot
				       ? 0
				       : p->dgot - (size_t)(off - p->dlo);
		} else {
			src = fbuf + (off - flo);
			have = off - flo >= fgot ? 0
						 : fgot - (size_t)(off - flo);
		}
		/* Past the object's end, a block reads as zeros (a write
		 * always reaches its end, so this is not expected). */
		if (have > len)
			have = len;
		if ((rc = kt__buf_reserve(v, len)) != 0)
			break;
		memcpy(v->p, src, have);
		memset(v->p + have, 0, len - have);
		v->len = len;
		v->p[len] = '\0';
	}
	free(fbuf);
	return rc;
}

/* Wait for the read @p p and take its answer into @p out (@p out NULL:
 * drop it); release everything it held. */
static int oread_finish(opend *p, const char *oid, oread *out)
{
	int rc = p->rc;

	if (rc == 0) {
		rados_aio_wait_for_complete(p->c);
		rc = rados_aio_get_return_value(p->c);
		if (out != NULL)
			out->ver = rados_aio_get_version(p->c);
	}
	if (out == NULL)
		goto done;
	if (p->rc != 0)
		goto done; /* not sent: rc says why */
	out->n = 0;
	out->more = 0;
	out->moved = 0;
	out->lock[0] = '\0';
	out->part.len = 0;
	out->fmt = 0;
	if (rc == -ENOENT) {
		out->exists = 0;
		out->ver = 0;
		rc = 0;
		goto done;
	}
	if (rc == 0 && p->xrv < 0)
		rc = p->xrv;
	if (rc == 0 && p->orv < 0)
		rc = p->orv;
	if (rc == 0 && p->krv < 0)
		rc = p->krv;
	if (rc < 0) {
		rc = rerr(rc, "reading", oid);
		goto done;
	}
	out->exists = 1;
	if ((rc = xattrs_take(out, p->xi)) != 0)
		goto done;
	/* The one key asked for comes first: it sorts before the page,
	 * which starts after it. */
	if ((rc = omap_take(out, p->ki, oid)) != 0 ||
	    (rc = omap_take(out, p->oi, oid)) != 0)
		goto done;
	out->more = p->more != 0;
	if (p->e != NULL && oid_is_stripe(p->e, oid))
		rc = stripe_fill(p, oid, out);
done:
	if (p->c != NULL)
		rados_aio_release(p->c);
	if (p->xi != NULL)
		rados_getxattrs_end(p->xi);
	if (p->oi != NULL)
		rados_omap_get_end(p->oi);
	if (p->ki != NULL)
		rados_omap_get_end(p->ki);
	if (p->op != NULL)
		rados_release_read_op(p->op);
	free(p->dbuf);
	memset(p, 0, sizeof(*p));
	return out == NULL ? 0 : rc;
}

/* One read operation on @p oid, as it is now (locks not settled). */
static int oread_once(rad *e, const char *oid, const oreq *q, oread *out)
{
	opend p;
	int rc;

	do {
		oread_start(e, oid, q, &p);
		rc = oread_finish(&p, oid, out);
	} while (rc == 0 && out->moved);
	return rc;
}

static int lock_settle(rad *e, const char *oid, const char *txid,
		       uint64_t *pending_since, int *pending);

/*
 * Read @p oid and note what was seen in @p s.  A lock is settled first,
 * except the lock of a commit that is still pending (record P, within
 * its lease): through a snapshot (@p s not NULL) the object is then taken
 * as it is, which is as it was before that commit, and the snapshot
 * notes whose lock it was.  That is what keeps readers of the objects a
 * long commit holds (a rename of a large subtree, the catalog) from
 * waiting for it.  Such a read is right at the moment it was made, since
 * the record was still P after it (it is read after the object, and a
 * record leaves P only once); a snapshot that read more than one object
 * checks, when validated, that the commit has not taken effect since, and
 * a commit guarded on such an object waits for the lock first (it would
 * fail anyway: settling the lock changes the object's version).  Without
 * a snapshot (wait_free) every lock is waited for.
 */
static int oread_do(rad *e, kt__snap *s, const char *oid, const oreq *q,
		    oread *out)
{
	uint64_t since = 0;
	char since_lk[sizeof(out->lock)] = "";
	int rc, pending = 0;

	for (;;) {
		if ((rc = oread_once(e, oid, q, out)) != 0)
			return rc;
		if (!out->exists || out->lock[0] == '\0' ||
		    strcmp(out->lock, FREE) == 0)
			break;
		/* The time a lock was first seen is that lock's: another
		 * commit's lock met next starts its own wait (else a live
		 * commit whose record is still on its way would be undone
		 * at once, after a dead one's wait). */
		if (strcmp(out->lock, since_lk) != 0) {
			since = 0;
			memcpy(since_lk, out->lock, sizeof(since_lk));
		}
		if ((rc = lock_settle(e, oid, out->lock, &since,
				      s != NULL ? &pending : NULL)) != 0)
			return rc;
		if (pending)
			return seen_note(s, oid, out->exists, out->ver,
					 out->lock);
	}
	return seen_note(s, oid, out->exists, out->ver, NULL);
}

/* ------------------------------------------------------------------------ */
/* Writing: one compound operation */

static int wop_run(rad *e, rados_write_op_t op, const char *oid)
{
	rados_completion_t c = NULL;
	int rc = rados_aio_create_completion2(NULL, NULL, &c);

	if (rc == 0)
		rc = rados_aio_write_op_operate(op, e->io, c, oid, NULL, 0);
	if (rc == 0) {
		rados_aio_wait_for_complete(c);
		rc = rados_aio_get_return_value(c);
	}
	if (c != NULL)
		rados_aio_release(c);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Commit records */

/* One object's part in a commit. */
typedef struct objw {
	char *oid;
	kt__slice part;     /* the partition (for kt.part of hashed names) */
	const seen *saw;    /* what the snapshot saw of it, or NULL */
	/* Its writes, in the order given: omap keys, values, deletions.
	 * They are applied in runs of puts and of deletions, in order, so
	 * that a later write of a key wins. */
	char **k;
	const char **v;
	size_t *kl, *vl;
	unsigned char *del;
	size_t nw, capw;
	size_t nset;        /* how many of them are puts */
	int hashed;         /* the name is a hash: writes set kt.part */
	int guarded;        /* a condition names it */
	/* The catalog: the prefixes of the scans that guard it, each
	 * followed by a NUL (partition keys have none); see catalog_add. */
	kt__buf scope;
	int locked;         /* step 2 succeeded on it */
	struct pmark *marks; /* records removed by its lock (marks_fold) */
	int rc;
	rados_completion_t c;
	rados_write_op_t op;
} objw;

static void objw_free(objw *o)
{
	size_t i;
	for (i = 0; i < o->nw; i++)
		free(o->k[i]);
	free(o->k);
	free((void *)o->v);
	free(o->kl);
	free(o->vl);
	free(o->del);
	free(o->oid);
	kt__buf_free(&o->scope);
}

/* Send @p o's prepared operation (o->op) to its object; o->rc says
 * whether it went. */
static void objw_send(rad *e, objw *o)
{
	o->c = NULL;
	o->rc = rados_aio_create_completion2(NULL, NULL, &o->c);
	if (o->rc == 0)
		o->rc = rados_aio_write_op_operate(o->op, e->io, o->c, o->oid,
						   NULL, 0);
}

/* Wait for @p o's operation sent by objw_send, into o->rc, and release
 * it. */
static void objw_reap(objw *o)
{
	if (o->rc == 0) {
		rados_aio_wait_for_complete(o->c);
		o->rc = rados_aio_get_return_value(o->c);
	}
	if (o->c != NULL)
		rados_aio_release(o->c);
	rados_release_write_op(o->op);
	o->op = NULL;
	o->c = NULL;
}

/* Add a write of omap key @p kp (taken over, length @p kpl): a put of
 * @p val, or with @p del a deletion. */
static int objw_addk(objw *o, char *kp, size_t kpl, kt__slice val, int del)
{
	if (o->nw == o->capw) {
		size_t cap = o->capw ? 2 * o->capw : 8;
		void *a;
		if ((a = realloc(o->k, cap * sizeof(char *))) == NULL)
			goto nomem;
		o->k = a;
		if ((a = realloc((void *)o->v, cap * sizeof(char *))) == NULL)
			goto nomem;
		o->v = a;
		if ((a = realloc(o->kl, cap * sizeof(size_t))) == NULL)
			goto nomem;
		o->kl = a;
		if ((a = realloc(o->vl, cap * sizeof(size_t))) == NULL)
			goto nomem;
		o->vl = a;
		if ((a = realloc(o->del, cap)) == NULL)
			goto nomem;
		o->del = a;
		o->capw = cap;
	}
	o->k[o->nw] = kp;
	o->kl[o->nw] = kpl;
	o->v[o->nw] = del ? "" : (val.p ? val.p : "");
	o->vl[o->nw] = del ? 0 : val.len;
	o->del[o->nw] = (unsigned char)(del != 0);
	o->nset += !del;
	o->nw++;
	return 0;
nomem:
	free(kp);
	return kt__err(KT_ENOMEM, "out of memory");
}

static int objw_add(objw *o, kt__slice sort, const kt__write *w)
{
	kt__buf k = {0};
	size_t kl;
	char *kp;
	int rc;

	if ((rc = okey(&k, sort)) != 0) {
		kt__buf_free(&k);
		return rc;
	}
	kl = k.len;
	if ((kp = kt__buf_detach(&k, NULL)) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	return objw_addk(o, kp, kl, w->value,
			 w->del || w->value.p == NULL);
}

/* Add the writes of stripe @p o to @p op, one by one in order (Blocks):
 * a block's bytes into the data and its length into the omap; a deletion
 * zeroes the block's place, so the OSD frees it. */
static void stripe_ops(rados_write_op_t op, const objw *o)
{
	size_t i;

	for (i = 0; i < o->nw; i++) {
		const char *k = o->k[i];
		size_t kl = o->kl[i], vl = o->vl[i];
		kt__buf sk = {0};
		uint64_t off = 0;
		int data = 0;
		char tag[5];
		const char *tv = tag;
		size_t tl = sizeof(tag);

		/* The omap key is "." + esc(8-byte block number). */
		if (okey_dec(&sk, k, kl) == 0 && sk.len == 8) {
			data = 1;
			off = (uint64_t)(kt__get64be((const unsigned char *)
							     sk.p) &
					 (STRIPE_BLOCKS - 1)) *
			      DSTRIDE;
		}
		kt__buf_free(&sk);
		if (o->del[i]) {
			rados_write_op_omap_rm_keys2(op, &k, &kl, 1);
			if (data)
				rados_write_op_zero(op, off, DSTRIDE);
			continue;
		}
		if (data && vl <= DSTRIDE) {
			tag[0] = 'd';
			kt__put32((unsigned char *)tag + 1, (uint32_t)vl);
			if (vl > 0)
				rados_write_op_write(op, o->v[i], vl, off);
			if (vl < DSTRIDE)
				rados_write_op_zero(op, off + vl,
						    DSTRIDE - vl);
			rados_write_op_omap_set2(op, &k, &tv, &kl, &tl, 1);
			continue;
		}
		/* Longer than the stride, or not a block: the bytes in
		 * omap (a value of other than 5 bytes says so). */
		rados_write_op_omap_set2(op, &k, &o->v[i], &kl, &vl, 1);
		if (data)
			rados_write_op_zero(op, off, DSTRIDE);
	}
}

/* Add @p o's writes to @p op. */
static void objw_ops(rados_write_op_t op, const objw *o)
{
	size_t i = 0, j;

	if (o->hashed && o->nset > 0 && o->part.len > 0)
		rados_write_op_setxattr(op, PARTX, o->part.p, o->part.len);
	if (is_stripe(o->part)) {
		stripe_ops(op, o);
		return;
	}
	while (i < o->nw) {
		for (j = i; j < o->nw && o->del[j] == o->del[i]; j++)
			;
		if (o->del[i])
			rados_write_op_omap_rm_keys2(
				op, (const char *const *)o->k + i, o->kl + i,
				j - i);
		else
			rados_write_op_omap_set2(
				op, (const char *const *)o->k + i, o->v + i,
				o->kl + i, o->vl + i, j - i);
		i = j;
	}
}

static void put32(kt__buf *b, uint32_t v, int *rc)
{
	unsigned char x[4];
	kt__put32(x, v);
	if (*rc == 0)
		*rc = kt__buf_add(b, x, 4);
}

static void putb(kt__buf *b, const void *p, size_t n, int *rc)
{
	put32(b, (uint32_t)n, rc);
	if (*rc == 0)
		*rc = kt__buf_add(b, p, n);
}

/* The record's body: for each object, its name and writes. */
static int record_body(kt__buf *b, const objw *o, size_t n)
{
	size_t i, j;
	int rc = 0;

	rc = kt__buf_add(b, "KTX2", 4);
	put32(b, (uint32_t)n, &rc);
	for (i = 0; i < n; i++) {
		putb(b, o[i].oid, strlen(o[i].oid), &rc);
		putb(b, o[i].part.p, o[i].part.len, &rc);
		put32(b, (uint32_t)o[i].nw, &rc);
		for (j = 0; j < o[i].nw; j++) {
			if (rc == 0)
				rc = kt__buf_addc(b, (char)o[i].del[j]);
			putb(b, o[i].k[j], o[i].kl[j], &rc);
			putb(b, o[i].v[j], o[i].vl[j], &rc);
		}
	}
	return rc;
}

/* A record, parsed back: objects in the order written. */
typedef struct rec {
	objw *o;
	size_t n;
	kt__buf body; /* the values point into it */
} rec;

static void rec_free(rec *r)
{
	size_t i;
	for (i = 0; i < r->n; i++)
		objw_free(&r->o[i]);
	free(r->o);
	kt__buf_free(&r->body);
	memset(r, 0, sizeof(*r));
}

static int get32(const kt__buf *b, size_t *at, uint32_t *v)
{
	if (b->len - *at < 4)
		return -1;
	*v = kt__get32((const unsigned char *)b->p + *at);
	*at += 4;
	return 0;
}

static int getb(const kt__buf *b, size_t *at, const char **p, size_t *n)
{
	uint32_t len;
	if (get32(b, at, &len) != 0 || b->len - *at < len)
		return -1;
	*p = b->p + *at;
	*n = len;
	*at += len;
	return 0;
}

static char *dupn(const char *p, size_t n)
{
	char *s = malloc(n + 1);
	if (s != NULL) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

static int rec_parse(rec *r, const rad *e, const char *oid)
{
	size_t at = 4, i, j;
	uint32_t n, m;
	const char *p, *q;
	size_t pn, qn;
	char *k;
	int del, rc;

	if (r->body.len < 4 || memcmp(r->body.p, "KTX2", 4) != 0 ||
	    get32(&r->body, &at, &n) != 0 || n > r->body.len)
		goto bad;
	if ((r->o = calloc(n ? n : 1, sizeof(*r->o))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		objw *o = &r->o[i];
		r->n++;
		if (getb(&r->body, &at, &p, &pn) != 0 ||
		    (o->oid = dupn(p, pn)) == NULL ||
		    getb(&r->body, &at, &p, &pn) != 0)
			goto bad;
		o->part = kt__sl(p, pn);
		o->hashed = is_hashed(o->oid, e);
		if (get32(&r->body, &at, &m) != 0)
			goto bad;
		for (j = 0; j < m; j++) {
			if (at >= r->body.len)
				goto bad;
			del = r->body.p[at++] != 0;
			if (getb(&r->body, &at, &p, &pn) != 0 ||
			    getb(&r->body, &at, &q, &qn) != 0)
				goto bad;
			if ((k = dupn(p, pn)) == NULL)
				return kt__err(KT_ENOMEM, "out of memory");
			if ((rc = objw_addk(o, k, pn, kt__sl(q, qn), del)) != 0)
				return rc;
		}
	}
	return 0;
bad:
	return kt__err(KT_ECORRUPT, "ceph: commit record '%s' does not decode",
		       oid);
}

static int is_staged(const char *txid);

/* Is @p txid the id of a commit whose record is kept on one of its own
 * objects (its primary), not in an object of its own?  ".o" (layout 3:
 * committed at the primary's apply) or ".p" (layout 4: committed once
 * every lock is in, "Parallel commits"). */
static int is_onobj(const char *txid)
{
	size_t n = strlen(txid);
	return n > 2 && (strcmp(txid + n - 2, ".o") == 0 ||
			 strcmp(txid + n - 2, ".p") == 0);
}

static int is_par(const char *txid)
{
	size_t n = strlen(txid);
	return n > 2 && strcmp(txid + n - 2, ".p") == 0;
}

/* Read the record object @p oname (taken over): its state ('P', 'C',
 * 'A'; 's' for a part of a staged commit), or 0 when there is none; with
 * @p body, its writes too; with @p beat, a staged commit's heartbeat
 * (STG_BEAT, at most 23 characters; "" when none). */
static int rec_read_obj(rad *e, kt__buf oname, char *state, rec *body,
			char *beat)
{
	kt__buf name = oname;
	rados_read_op_t op = rados_create_read_op();
	rados_completion_t c = NULL;
	rados_xattrs_iter_t xi = NULL;
	size_t got = 0;
	int srv = 0, rrv = 0, strv = 0, rc;
	uint64_t size = 0;
	time_t mt;

	*state = 0;
	if (beat != NULL)
		beat[0] = '\0';
	if (op == NULL) {
		kt__buf_free(&name);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	/* The state, and the size so that the body can be read whole. */
	rados_read_op_stat(op, &size, &mt, &strv);
	rados_read_op_getxattrs(op, &xi, &srv);
	rc = rados_aio_create_completion2(NULL, NULL, &c);
	if (rc == 0)
		rc = rados_aio_read_op_operate(op, e->io, c, name.p, 0);
	if (rc == 0) {
		rados_aio_wait_for_complete(c);
		rc = rados_aio_get_return_value(c);
	}
	if (rc == 0 && xi != NULL) {
		const char *xn, *xv;
		size_t xl;
		while (rados_getxattrs_next(xi, &xn, &xv, &xl) == 0 &&
		       xn != NULL) {
			if (strcmp(xn, STX) == 0 && xl == 1)
				*state = *xv;
			if (beat != NULL && strcmp(xn, STG_BEAT) == 0 &&
			    xl < 24) {
				memcpy(beat, xv, xl);
				beat[xl] = '\0';
			}
		}
	}
	if (xi != NULL)
		rados_getxattrs_end(xi);
	if (c != NULL)
		rados_aio_release(c);
	c = NULL;
	rados_release_read_op(op);
	if (rc == -ENOENT) {
		*state = 0;
		kt__buf_free(&name);
		return 0;
	}
	if (rc < 0) {
		rc = rerr(rc, "reading commit record", name.p);
		kt__buf_free(&name);
		return rc;
	}
	if (body != NULL && *state != 0) {
		if ((rc = kt__buf_reserve(&body->body, (size_t)size + 1)) != 0) {
			kt__buf_free(&name);
			return rc;
		}
		op = rados_create_read_op();
		rados_read_op_read(op, 0, (size_t)size, body->body.p, &got,
				   &rrv);
		rc = rados_aio_create_completion2(NULL, NULL, &c);
		if (rc == 0)
			rc = rados_aio_read_op_operate(op, e->io, c, name.p, 0);
		if (rc == 0) {
			rados_aio_wait_for_complete(c);
			rc = rados_aio_get_return_value(c);
		}
		if (c != NULL)
			rados_aio_release(c);
		rados_release_read_op(op);
		if (rc == -ENOENT) {
			/* Finished meanwhile. */
			*state = 0;
			kt__buf_free(&name);
			return 0;
		}
		if (rc < 0 || rrv < 0) {
			rc = rerr(rc < 0 ? rc : rrv, "reading commit record",
				  name.p);
			kt__buf_free(&name);
			return rc;
		}
		body->body.len = got;
		rc = rec_parse(body, e, name.p);
	}
	kt__buf_free(&name);
	return rc;
}

/* Read the record of commit @p txid: its state ('P', 'C', 'A'), or 0
 * when there is none; with @p body, its writes too (not of a staged
 * commit, whose writes are in its parts). */
static int rec_read(rad *e, const char *txid, char *state, rec *body)
{
	kt__buf name = {0};
	int rc;

	if ((rc = name_of(&name, e, "!tx.")) != 0 ||
	    (rc = kt__buf_add(&name, txid, strlen(txid))) != 0) {
		kt__buf_free(&name);
		return rc;
	}
	return rec_read_obj(e, name, state, is_staged(txid) ? NULL : body,
			    NULL);
}

/* Flip the record of @p txid from state P to @p to.  0 done, 1 it was
 * not pending any more (or gone), <0 an error. */
static int rec_flip(rad *e, const char *txid, char to)
{
	kt__buf name = {0};
	rados_write_op_t op;
	int rc;

	if ((rc = name_of(&name, e, "!tx.")) != 0 ||
	    (rc = kt__buf_add(&name, txid, strlen(txid))) != 0) {
		kt__buf_free(&name);
		return rc;
	}
	op = rados_create_write_op();
	rados_write_op_cmpxattr(op, STX, LIBRADOS_CMPXATTR_OP_EQ, "P", 1);
	rados_write_op_setxattr(op, STX, &to, 1);
	rc = wop_run(e, op, name.p);
	rados_release_write_op(op);
	if (rc == -ECANCELED || rc == -ENOENT)
		rc = 1;
	else if (rc < 0)
		rc = rerr(rc, "settling commit record", name.p);
	kt__buf_free(&name);
	return rc;
}

static void rec_remove(rad *e, const char *txid)
{
	kt__buf name = {0};
	rados_write_op_t op;

	if (name_of(&name, e, "!tx.") != 0 ||
	    kt__buf_add(&name, txid, strlen(txid)) != 0) {
		kt__buf_free(&name);
		return;
	}
	op = rados_create_write_op();
	rados_write_op_remove(op);
	(void)wop_run(e, op, name.p);
	rados_release_write_op(op);
	kt__buf_free(&name);
}

/* Finish object @p o of commit @p txid: with @p apply its writes, and in
 * any case its lock, guarded on the lock being @p txid's.  A lock that is
 * not (any more) the commit's means someone finished it already. */
static void objw_finish_op(rados_write_op_t op, const objw *o,
			   const char *txid, int apply)
{
	rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ, txid,
				strlen(txid));
	if (apply)
		objw_ops(op, o);
	rados_write_op_setxattr(op, LK, FREE, 1);
	if (is_onobj(txid))
		rados_write_op_rmxattr(op, PRIX);
}

/* Finish every object of @p o in parallel.  0, or the first error that is
 * not "already finished". */
static int finish_all(rad *e, objw *o, size_t n, const char *txid,
		      int apply, int only_locked)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < n; i++) {
		o[i].c = NULL;
		o[i].op = NULL;
		if (only_locked && !o[i].locked)
			continue;
		o[i].op = rados_create_write_op();
		objw_finish_op(o[i].op, &o[i], txid, apply);
		o[i].rc = rados_aio_create_completion2(NULL, NULL, &o[i].c);
		if (o[i].rc == 0)
			o[i].rc = rados_aio_write_op_operate(
				o[i].op, e->io, o[i].c, o[i].oid, NULL, 0);
	}
	for (i = 0; i < n; i++) {
		if (o[i].op == NULL)
			continue;
		if (o[i].rc == 0) {
			rados_aio_wait_for_complete(o[i].c);
			o[i].rc = rados_aio_get_return_value(o[i].c);
		}
		if (o[i].c != NULL)
			rados_aio_release(o[i].c);
		rados_release_write_op(o[i].op);
		o[i].op = NULL;
		o[i].c = NULL;
		if (o[i].rc < 0 && o[i].rc != -ECANCELED &&
		    o[i].rc != -ENOENT && rc == 0)
			rc = rerr(o[i].rc, apply ? "applying a commit to"
					  : "unlocking", o[i].oid);
	}
	return rc;
}

/* The writer of commit @p txid gave itself this many milliseconds from
 * sending its locks to having its record (the last field of the id; 0
 * for ids of older clients, which wrote the record before any lock). */
static unsigned int tx_budget(const char *txid)
{
	const char *q;
	int dots = 0;

	/* The fourth field (a fifth, "o", says where the record is). */
	for (q = txid; *q && dots < 3; q++)
		dots += *q == '.';
	if (dots < 3)
		return 0;
	return (unsigned int)strtoul(q, NULL, 16);
}

/* ------------------------------------------------------------------------ */
/* Staged commits: what every client needs to settle their locks */

/*
 * A large rename or recursive delete is too large for one commit record
 * (one RADOS operation, 64 MiB) and for one batch in memory.  The tree
 * layer makes it in steps behind a fence (ops.c, "Large renames and
 * deletes"); on RADOS that fence is a staged commit, one commit in parts:
 *
 * - rad_fence writes the header record T!tx.ID, ID ending in ".S", in
 *   state P, before any lock, and starts a heartbeat: every quarter lease
 *   it rewrites the header's kt.hb, guarded on the state being P.
 * - Each commit of the fencing thread is a part k: its writes go to the
 *   part record T!tx.ID.k (8 hex digits), written alongside the locks of
 *   its objects.  An object's lock is kt.lk = ID as for any commit,
 *   guarded as usual, and xattr kt.s.k says the object has writes in part
 *   k.  An object the stage locked in an earlier part only gains kt.s.k,
 *   guarded on kt.lk still being ID.  Nothing is applied: readers read
 *   what was there before (the record is P).
 * - rad_unfence flips the header from P to C, the commit point of all the
 *   parts at once, then applies each part in order and unlocks.  An
 *   object with writes in several parts keeps kt.sa, the last part
 *   applied to it, and each application is guarded on coming after it
 *   (cmpxattr greater-than on zero-padded hex), so that whoever applies,
 *   the writer or a reader rolling forward, each part reaches each object
 *   once and in order.
 * - A part that fails (a guard: something changed since it was read)
 *   dooms the stage: rad_unfence flips it to A and unlocks, and the tree
 *   layer runs the operation again.
 *
 * Memory is bounded by one part, plus the set of objects with writes in
 * more than one part (id-index shards, the catalog, partitions cut by a
 * step boundary).  Another client that meets such a lock: P with a
 * heartbeat that moved within the lease, it reads past it (a reader) or
 * waits (a writer); P whose heartbeat stood still for a lease, it flips
 * the header to A (the writer is gone or stuck, and can no longer
 * commit); C, it rolls the object forward from the parts its kt.s.*
 * name; A or no header, it unlocks the object.
 */
typedef struct stage {
	rad *e;
	char id[80];
	kt__buf name;        /* the header record's object */
	pthread_t owner;     /* the thread whose commits are parts */
	uint32_t nparts;     /* parts written and locked */
	int doomed;          /* a part failed: roll back at unfence */
	char *busy;          /* an object another commit held */
	kt__snap *snap;      /* the reads the owner made without a snapshot
				of its own (the steps' cursor), since the
				last part */
	kt__snap *multi;     /* objects with writes in several parts (a set) */
	pthread_t beat;
	pthread_mutex_t bmu;
	pthread_cond_t bcv;
	int bstop;
	int lost;            /* the header left P: another client rolled the
				stage back (under bmu) */
} stage;

static int is_staged(const char *txid)
{
	size_t n = strlen(txid);
	return n > 2 && strcmp(txid + n - 2, ".S") == 0;
}

/* The stage open on this handle, if the calling thread is its owner. */
static stage *stage_mine(rad *e)
{
	stage *g;

	/* Any thread may look; only the owner frees it, so a stage that is
	 * this thread's stays valid after the unlock. */
	if (__atomic_load_n(&e->stage, __ATOMIC_ACQUIRE) == NULL)
		return NULL;
	pthread_mutex_lock(&e->mu);
	g = e->stage;
	if (g != NULL && !pthread_equal(g->owner, pthread_self()))
		g = NULL;
	pthread_mutex_unlock(&e->mu);
	return g;
}

/* The name of part @p k of staged commit @p txid. */
static int stage_part_name(kt__buf *out, const rad *e, const char *txid,
			   uint32_t k)
{
	char sfx[16];
	int rc;

	out->len = 0;
	snprintf(sfx, sizeof(sfx), ".%08" PRIx32, k);
	if ((rc = name_of(out, e, "!tx.")) != 0 ||
	    (rc = kt__buf_add(out, txid, strlen(txid))) != 0 ||
	    (rc = kt__buf_add(out, sfx, strlen(sfx))) != 0)
		return rc;
	if ((rc = kt__buf_addc(out, '\0')) == 0)
		out->len--;
	return rc;
}

/* Part @p k of @p txid, parsed into @p r.  0; 1 it is gone (the stage
 * was finished meanwhile); <0 an error. */
static int stage_part_read(rad *e, const char *txid, uint32_t k, rec *r)
{
	kt__buf name = {0};
	char state;
	int rc;

	if ((rc = stage_part_name(&name, e, txid, k)) != 0) {
		kt__buf_free(&name);
		return rc;
	}
	rc = rec_read_obj(e, name, &state, r, NULL);
	if (rc == 0 && state == 0)
		return 1;
	return rc;
}

/* The op that applies part @p k of an object and notes it, guarded on
 * its lock being @p txid's and on no later part having been applied. */
static void stage_apply_op(rados_write_op_t op, const objw *o,
			   const char *txid, uint32_t k)
{
	char xn[24], kv[12];

	snprintf(xn, sizeof(xn), STG_PART "%08" PRIx32, k);
	snprintf(kv, sizeof(kv), "%08" PRIx32, k);
	rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ, txid,
				strlen(txid));
	rados_write_op_cmpxattr(op, STG_DONE, LIBRADOS_CMPXATTR_OP_GT, kv,
				strlen(kv));
	if (o != NULL)
		objw_ops(op, o);
	rados_write_op_setxattr(op, STG_DONE, kv, strlen(kv));
	rados_write_op_rmxattr(op, xn);
}

/*
 * Settle object @p oid locked by staged commit @p txid, whose header says
 * C (@p apply: roll it forward from the parts its kt.s.* name) or A or is
 * gone (unlock it).  0: done, or the object changed meanwhile (read it
 * again); <0 an error.
 */
static int stage_obj_finish(rad *e, const char *oid, const char *txid,
			    int apply)
{
	rados_read_op_t rop = rados_create_read_op();
	rados_write_op_t op;
	rados_xattrs_iter_t xi = NULL;
	uint32_t *parts = NULL;
	size_t np = 0, cap = 0, i, j;
	int xrv = 0, rc, mine = 0;

	if (rop == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	rados_read_op_getxattrs(rop, &xi, &xrv);
	rc = rados_read_op_operate(rop, e->io, oid, 0);
	if (rc == 0 && xrv == 0 && xi != NULL) {
		const char *xn, *xv;
		size_t xl;
		while (rados_getxattrs_next(xi, &xn, &xv, &xl) == 0 &&
		       xn != NULL) {
			if (strcmp(xn, LK) == 0)
				mine = xl == strlen(txid) &&
				       memcmp(xv, txid, xl) == 0;
			else if (strncmp(xn, STG_PART, strlen(STG_PART)) ==
				 0) {
				if (np == cap) {
					size_t nc = cap ? 2 * cap : 16;
					uint32_t *np2 = realloc(
						parts, nc * sizeof(*parts));
					if (np2 == NULL) {
						rc = -ENOMEM;
						break;
					}
					parts = np2;
					cap = nc;
				}
				parts[np++] = (uint32_t)strtoul(
					xn + strlen(STG_PART), NULL, 16);
			}
		}
	}
	if (xi != NULL)
		rados_getxattrs_end(xi);
	rados_release_read_op(rop);
	if (rc == -ENOENT || (rc == 0 && !mine)) {
		free(parts);
		return 0; /* finished by someone else */
	}
	if (rc < 0) {
		free(parts);
		return rerr(rc, "reading the lock of", oid);
	}
	/* In order of parts. */
	for (i = 1; i < np; i++)
		for (j = i; j > 0 && parts[j - 1] > parts[j]; j--) {
			uint32_t t = parts[j];
			parts[j] = parts[j - 1];
			parts[j - 1] = t;
		}
	for (i = 0; apply && i < np; i++) {
		rec r = {0};
		const objw *o = NULL;
		size_t k;
		if ((rc = stage_part_read(e, txid, parts[i], &r)) != 0) {
			rec_free(&r);
			free(parts);
			return rc < 0 ? rc : 0;
		}
		for (k = 0; k < r.n && o == NULL; k++)
			if (strcmp(r.o[k].oid, oid) == 0)
				o = &r.o[k];
		op = rados_create_write_op();
		stage_apply_op(op, o, txid, parts[i]);
		rc = wop_run(e, op, oid);
		rados_release_write_op(op);
		rec_free(&r);
		if (rc == -ECANCELED || rc == -ENOENT) {
			free(parts);
			return 0; /* applied by another: read again */
		}
		if (rc < 0) {
			free(parts);
			return rerr(rc, "applying a commit to", oid);
		}
	}
	op = rados_create_write_op();
	rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ, txid,
				strlen(txid));
	rados_write_op_setxattr(op, LK, FREE, 1);
	rados_write_op_rmxattr(op, STG_DONE);
	for (i = 0; i < np; i++) {
		char xn[24];
		snprintf(xn, sizeof(xn), STG_PART "%08" PRIx32, parts[i]);
		rados_write_op_rmxattr(op, xn);
	}
	rc = wop_run(e, op, oid);
	rados_release_write_op(op);
	free(parts);
	if (rc < 0 && rc != -ECANCELED && rc != -ENOENT)
		return rerr(rc, "unlocking", oid);
	return 0;
}

/* How long has staged commit @p txid's heartbeat stood at @p beat, as
 * far as this handle has seen? */
static uint64_t beat_still(rad *e, const char *txid, const char *beat)
{
	uint64_t t = now_ms(), d = 0;
	unsigned int i, n;

	pthread_mutex_lock(&e->mu);
	n = e->nbeats < 8 ? e->nbeats : 8;
	for (i = 0; i < n; i++)
		if (strcmp(e->beats[i].id, txid) == 0)
			break;
	if (i == n) {
		i = e->nbeats++ % 8;
		snprintf(e->beats[i].id, sizeof(e->beats[i].id), "%s", txid);
		e->beats[i].beat[0] = '\001'; /* differs from any */
	}
	if (strcmp(e->beats[i].beat, beat) != 0) {
		snprintf(e->beats[i].beat, sizeof(e->beats[i].beat), "%s",
			 beat);
		e->beats[i].at = t;
	}
	d = t - e->beats[i].at;
	pthread_mutex_unlock(&e->mu);
	return d;
}

/* lock_settle for the lock of a staged commit (above). */
static int stage_settle(rad *e, const char *oid, const char *txid,
			int *pending)
{
	kt__buf name = {0};
	char state, beat[24];
	int rc, own, owner;

	if ((rc = name_of(&name, e, "!tx.")) != 0 ||
	    (rc = kt__buf_add(&name, txid, strlen(txid))) != 0) {
		kt__buf_free(&name);
		return rc;
	}
	if ((rc = rec_read_obj(e, name, &state, NULL, beat)) != 0)
		return rc;
	if (state != 'P')
		return stage_obj_finish(e, oid, txid, state == 'C');
	pthread_mutex_lock(&e->mu);
	own = e->stage != NULL && strcmp(e->stage->id, txid) == 0;
	owner = own && pthread_equal(e->stage->owner, pthread_self());
	pthread_mutex_unlock(&e->mu);
	if (!own && beat_still(e, txid, beat) >= e->lease_ms) {
		/* Its writer stopped beating a lease ago: gone or stuck,
		 * and once the header is A it can commit no more. */
		if ((rc = rec_flip(e, txid, 'A')) < 0)
			return rc;
		return 0;
	}
	if (pending != NULL) {
		*pending = 1;
		return 0;
	}
	if (owner)
		return kt__err(KT_EIO, "ceph: object '%s' is locked by this "
			       "thread's own staged commit", oid);
	sleep_ms(10);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Records kept on a commit's own object (layout 3)
 *
 * A commit over a few objects whose record is small keeps the record on
 * one of its own objects, its primary, instead of in an object of its own
 * (T!tx.ID): its id ends in ".o"; the primary's lock operation also writes
 * kt.d.ID, the record's body, and every other object's lock operation
 * writes kt.pri, the primary's name.  The commit point is the primary's
 * apply: guarded on kt.lk = ID, it applies the primary's writes, unlocks
 * it and sets kt.t.ID = C, in one operation.  A roll-back unlocks the
 * primary the same way, with kt.t.ID = A and kt.d.ID removed.  So the
 * commit is pending while the primary's lock is ID, committed once kt.t.ID
 * is C, and has no record when neither holds (never got its primary's
 * lock, or finished: kt.t.ID and kt.d.ID are removed once every other
 * object is applied or unlocked).  The record costs no operation of its
 * own: a record object costs three (made, flipped, removed), this one the
 * removal from the primary.  The rules for readers are those of a record
 * object (lock_settle), read through kt.pri.
 */
#define ONOBJ_MAX_BYTES 32768  /* larger records get an object of their own */
#define ONOBJ_SHARED_MAX_BYTES 4096 /* on an object other clients read */
#define ONOBJ_MAX_OBJECTS 64

/* What prim_read needs of one object's xattrs. */
typedef struct pxa {
	int exists;
	char lock[128];
	kt__buf pri;   /* kt.pri */
	char t;        /* kt.t.ID, 0 when none */
	int has_d;
	kt__buf d;     /* kt.d.ID */
	kt__buf c;     /* kt.c.ID */
} pxa;

static void pxa_free(pxa *x)
{
	kt__buf_free(&x->pri);
	kt__buf_free(&x->d);
	kt__buf_free(&x->c);
}

static void pxa_names(char *tn, char *dn, size_t cap, const char *txid)
{
	snprintf(tn, cap, PRI_STATE "%s", txid);
	snprintf(dn, cap, PRI_BODY "%s", txid);
}

/* Read every xattr of @p oid and hand each to @p fn, until it returns
 * non-zero (that is returned).  0 also when there is no such object
 * (*@p exists then 0). */
static int xattrs_each(rad *e, const char *oid, int *exists,
		       int (*fn)(const char *name, const char *v, size_t n,
				 void *arg),
		       void *arg)
{
	rados_read_op_t op = rados_create_read_op();
	rados_completion_t c = NULL;
	rados_xattrs_iter_t xi = NULL;
	int srv = 0, rc, frc = 0;

	*exists = 0;
	if (op == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	rados_read_op_getxattrs(op, &xi, &srv);
	rc = rados_aio_create_completion2(NULL, NULL, &c);
	if (rc == 0)
		rc = rados_aio_read_op_operate(op, e->io, c, oid, 0);
	if (rc == 0) {
		rados_aio_wait_for_complete(c);
		rc = rados_aio_get_return_value(c);
	}
	if (rc == 0 && xi != NULL) {
		const char *xn, *xv;
		size_t xl;
		*exists = 1;
		while (frc == 0 && rados_getxattrs_next(xi, &xn, &xv, &xl) == 0 &&
		       xn != NULL)
			frc = fn(xn, xv, xl, arg);
	}
	if (xi != NULL)
		rados_getxattrs_end(xi);
	if (c != NULL)
		rados_aio_release(c);
	rados_release_read_op(op);
	if (frc != 0)
		return frc;
	if (rc == -ENOENT)
		return 0;
	return rc < 0 ? rerr(rc, "reading the xattrs of", oid) : 0;
}

static void lock_take(char *lock, size_t cap, const char *v, size_t n)
{
	if (n < cap) {
		memcpy(lock, v, n);
		lock[n] = '\0';
	}
}

typedef struct pxa_walk {
	pxa *x;
	char tn[128], dn[128], cn[128];
} pxa_walk;

static int pxa_one(const char *xn, const char *xv, size_t xl, void *arg)
{
	pxa_walk *w = arg;

	if (strcmp(xn, LK) == 0)
		lock_take(w->x->lock, sizeof(w->x->lock), xv, xl);
	else if (strcmp(xn, PRIX) == 0)
		return kt__buf_set(&w->x->pri, xv, xl);
	else if (strcmp(xn, w->tn) == 0 && xl == 1)
		w->x->t = *xv;
	else if (strcmp(xn, w->dn) == 0) {
		w->x->has_d = 1;
		return kt__buf_set(&w->x->d, xv, xl);
	} else if (strcmp(xn, w->cn) == 0)
		return kt__buf_set(&w->x->c, xv, xl);
	return 0;
}

static int pxa_read(rad *e, const char *oid, const char *txid, pxa *x)
{
	pxa_walk w;
	int rc;

	memset(x, 0, sizeof(*x));
	w.x = x;
	pxa_names(w.tn, w.dn, sizeof(w.tn), txid);
	snprintf(w.cn, sizeof(w.cn), PRI_CAT "%s", txid);
	if ((rc = xattrs_each(e, oid, &x->exists, pxa_one, &w)) != 0)
		pxa_free(x);
	return rc;
}

/*
 * Parallel commits (layout 4, ids ending in ".p")
 *
 * A commit whose record is on its primary is decided the moment its last
 * lock is in, as CockroachDB's parallel commits are: its writer waits for
 * one round (all locks at once, the record with the primary's) where a
 * commit point of its own would take a second.  The rule: the commit is
 * committed once every object of its body is locked by it while the
 * primary still is, and the catalog holds the keys of kt.c.ID; the
 * primary's apply (kt.t.ID = C) then only makes that visible.  Its writer
 * takes the commit as committed when every lock and the catalog entries
 * were acknowledged within its budget, counted from before they were
 * sent; else it rolls back, as a commit of layout 3 does.
 *
 * A reader that meets a lock reads the primary, then every other lock of
 * the body and the catalog keys, all at once.  All in: it commits it (the
 * primary's apply, guarded on its lock; the writer's own may come first)
 * and rolls the objects forward.  One missing: while the primary is still
 * locked no lock of the commit has gone (each goes only with its apply or
 * roll-back, after the primary's), so it was missing at that moment; read
 * the primary's lock once more to know it is still there, and the rows
 * read were the rows at that moment: a reader takes them.  A writer waits,
 * and rolls the commit back once twice the budget has passed since it
 * first met the lock: a writer whose acknowledgements came within its
 * budget had every lock in by then (it sent them after that lock's commit
 * began), so the commit was not one.  A lock missing from the primary
 * means no record, as for layout 3.
 *
 * The writer sends the primary's apply when the call returns, and the
 * other objects' applies once that is acknowledged (a secondary applied
 * first would look, to a reader, like a lock that never came).  Until
 * then this client's own reads and writes of those objects wait for it
 * (fin_wait_mine), so that they reach each OSD after the apply.
 */
typedef struct pchk {
	rados_read_op_t op;
	rados_completion_t c;
	rados_xattrs_iter_t xi;
	rados_omap_iter_t ki;
	int rv;
	const char *oid;
} pchk;

static void pchk_send(rad *e, pchk *k, const char *oid, const char **keys,
		      size_t nkeys)
{
	memset(k, 0, sizeof(*k));
	k->oid = oid;
	if ((k->op = rados_create_read_op()) == NULL)
		return;
	if (keys != NULL)
		rados_read_op_omap_get_vals_by_keys(k->op, keys, nkeys, &k->ki,
						    &k->rv);
	else
		rados_read_op_getxattrs(k->op, &k->xi, &k->rv);
	if (rados_aio_create_completion2(NULL, NULL, &k->c) != 0) {
		k->c = NULL;
		return;
	}
	if (rados_aio_read_op_operate(k->op, e->io, k->c, oid, 0) != 0) {
		rados_aio_release(k->c);
		k->c = NULL;
	}
}

/* Wait for @p k: <0 an error; else with @p txid, 1 when the object is
 * locked by it; without, the number of keys found. */
static int pchk_take(pchk *k, const char *txid)
{
	int rc = -EIO, n = 0;

	if (k->c != NULL) {
		rados_aio_wait_for_complete(k->c);
		rc = rados_aio_get_return_value(k->c);
	}
	if (rc == -ENOENT)
		rc = 0;
	else if (rc < 0)
		rc = rerr(rc, "reading the locks of a commit at", k->oid);
	while (rc == 0 && k->xi != NULL) {
		const char *xn, *xv;
		size_t xl;
		if (rados_getxattrs_next(k->xi, &xn, &xv, &xl) != 0 ||
		    xn == NULL)
			break;
		if (strcmp(xn, LK) == 0)
			n = xl == strlen(txid) && memcmp(xv, txid, xl) == 0;
	}
	while (rc == 0 && k->ki != NULL) {
		char *kk, *vv;
		size_t kl, vl;
		if (rados_omap_get_next2(k->ki, &kk, &vv, &kl, &vl) != 0 ||
		    kk == NULL)
			break;
		n++;
	}
	if (k->xi != NULL)
		rados_getxattrs_end(k->xi);
	if (k->ki != NULL)
		rados_omap_get_end(k->ki);
	if (k->c != NULL)
		rados_aio_release(k->c);
	if (k->op != NULL)
		rados_release_read_op(k->op);
	memset(k, 0, sizeof(*k));
	return rc < 0 ? rc : n;
}

/* Is parallel commit @p txid, whose primary @p pri was seen locked by
 * it with body @p r and catalog keys @p cat, committed: every other
 * object locked by it, every key in the catalog?  *@p all says. */
static int par_check(rad *e, const rec *r, const char *pri,
		     const char *txid, const kt__buf *cat, int *all)
{
	pchk *k;
	const char *keys[ONOBJ_MAX_OBJECTS + 1];
	size_t nk = 0, i, at;
	kt__buf catoid = {0};
	int rc = 0, t;

	*all = 0;
	for (at = 0; at < cat->len;) {
		const char *z = memchr(cat->p + at, '\0', cat->len - at);
		if (z == NULL || nk == ONOBJ_MAX_OBJECTS + 1)
			return kt__err(KT_ECORRUPT, "ceph: the catalog keys of "
				       "commit %s on object '%s' do not "
				       "decode", txid, pri);
		keys[nk++] = cat->p + at;
		at = (size_t)(z - cat->p) + 1;
	}
	if (nk > 0 && (rc = name_of(&catoid, e, "!cat")) != 0)
		return rc;
	if ((k = calloc(r->n + 1, sizeof(*k))) == NULL) {
		kt__buf_free(&catoid);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	for (i = 0; i < r->n; i++)
		if (strcmp(r->o[i].oid, pri) != 0)
			pchk_send(e, &k[i], r->o[i].oid, NULL, 0);
	if (nk > 0)
		pchk_send(e, &k[r->n], catoid.p, keys, nk);
	*all = 1;
	for (i = 0; i <= r->n; i++) {
		if (k[i].oid == NULL)
			continue;
		t = pchk_take(&k[i], i < r->n ? txid : NULL);
		if (t < 0 && rc == 0)
			rc = t;
		if (t >= 0 && t < (i < r->n ? 1 : (int)nk))
			*all = 0;
	}
	free(k);
	kt__buf_free(&catoid);
	if (rc != 0)
		*all = 0;
	return rc;
}

/*
 * The state of commit @p txid (is_onobj), whose lock was met on @p oid:
 * 'P' (its primary is still locked by it), 'C', 'A', 0 (no record), or
 * 'G': @p oid is not locked by it any more (read it again).  With
 * @p body, the record's writes when there are any (P and C); with @p pri,
 * the primary's name.  A parallel commit whose locks are all in is 'I':
 * committed, its primary not applied yet.
 */
static int prim_read(rad *e, const char *oid, const char *txid, char *state,
		     rec *body, kt__buf *pri)
{
	pxa a, b;
	pxa *p;
	rec own = {0};
	const char *poid;
	int rc, all = 0;

	*state = 0;
	if ((rc = pxa_read(e, oid, txid, &a)) != 0)
		return rc;
	if (strcmp(a.lock, txid) != 0) {
		*state = 'G';
		pxa_free(&a);
		return 0;
	}
	memset(&b, 0, sizeof(b));
	poid = a.pri.len ? a.pri.p : oid;
	if (a.pri.len == 0) {
		p = &a; /* the primary itself, so pending */
		*state = 'P';
		rc = pri != NULL ? kt__buf_set(pri, oid, strlen(oid)) : 0;
	} else {
		rc = pri != NULL ? kt__buf_set(pri, a.pri.p, a.pri.len) : 0;
		if (rc == 0)
			rc = pxa_read(e, a.pri.p, txid, &b);
		p = &b;
		if (rc == 0)
			*state = strcmp(b.lock, txid) == 0 ? 'P'
				 : b.t == 'C' || b.t == 'A' ? b.t
							    : 0;
	}
	if (body == NULL && is_par(txid) && *state == 'P')
		body = &own;
	if (rc == 0 && body != NULL && p->has_d &&
	    (*state == 'P' || *state == 'C')) {
		kt__buf_free(&body->body);
		body->body = p->d;
		memset(&p->d, 0, sizeof(p->d));
		rc = rec_parse(body, e, poid);
	}
	if (rc == 0 && *state == 'P' && is_par(txid)) {
		rc = par_check(e, body, poid, txid, &p->c, &all);
		if (rc == 0 && all) {
			*state = 'I';
		} else if (rc == 0) {
			/* One missing: it was so at that moment only if the
			 * primary was still locked after it. */
			pxa x;
			if ((rc = pxa_read(e, poid, txid, &x)) == 0) {
				if (strcmp(x.lock, txid) != 0)
					*state = 'G';
				pxa_free(&x);
			}
		}
	}
	rec_free(&own);
	pxa_free(&a);
	pxa_free(&b);
	return rc;
}

/* End commit @p txid at its primary @p pri, guarded on its lock: with
 * @p apply (the primary's writes) its commit point, C; without, its
 * roll-back, A (the body goes: nobody needs it).  0 done, 1 it was not
 * pending (any more), <0 an error (unknown whether it took effect). */
static void prim_end_op(rados_write_op_t op, const char *txid,
			const objw *apply)
{
	char tn[128], dn[128];

	pxa_names(tn, dn, sizeof(tn), txid);
	rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ, txid,
				strlen(txid));
	if (apply != NULL)
		objw_ops(op, apply);
	rados_write_op_setxattr(op, LK, FREE, 1);
	rados_write_op_setxattr(op, tn, apply != NULL ? "C" : "A", 1);
	if (apply == NULL)
		rados_write_op_rmxattr(op, dn);
	if (apply == NULL && is_par(txid)) {
		snprintf(dn, sizeof(dn), PRI_CAT "%s", txid);
		rados_write_op_rmxattr(op, dn);
	}
}

static int prim_end(rad *e, const char *pri, const char *txid,
		    const objw *apply)
{
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (op == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	prim_end_op(op, txid, apply);
	rc = wop_run(e, op, pri);
	rados_release_write_op(op);
	if (rc == -ECANCELED || rc == -ENOENT)
		return 1;
	return rc < 0 ? rerr(rc, apply != NULL ? "committing at"
					       : "rolling back a commit at",
			     pri)
		      : 0;
}

static int prim_abort(rad *e, const char *pri, const char *txid)
{
	return prim_end(e, pri, txid, NULL);
}

/* The removal of commit @p txid's record from its primary @p pri, added
 * to @p op: once every other object of the commit is finished. */
static void prim_remove_op(rados_write_op_t op, const char *txid)
{
	char tn[128], dn[128];

	pxa_names(tn, dn, sizeof(tn), txid);
	rados_write_op_rmxattr(op, tn);
	rados_write_op_rmxattr(op, dn);
	if (is_par(txid)) {
		snprintf(tn, sizeof(tn), PRI_CAT "%s", txid);
		rados_write_op_rmxattr(op, tn);
	}
}

static void prim_remove(rad *e, const char *pri, const char *txid)
{
	rados_write_op_t op = rados_create_write_op();

	if (op == NULL)
		return;
	prim_remove_op(op, txid);
	(void)wop_run(e, op, pri);
	rados_release_write_op(op);
}

/* Finish every object of record @p r but its primary @p pri (applied or
 * unlocked by its own operation already). */
static int prim_finish(rad *e, rec *r, const char *pri, const char *txid,
		       int apply)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		if (strcmp(r->o[i].oid, pri) == 0 && i + 1 < r->n) {
			objw t = r->o[i];
			r->o[i] = r->o[r->n - 1];
			r->o[r->n - 1] = t;
			break;
		}
	}
	if (r->n > 0 && strcmp(r->o[r->n - 1].oid, pri) == 0)
		return finish_all(e, r->o, r->n - 1, txid, apply, 0);
	return finish_all(e, r->o, r->n, txid, apply, 0);
}

/* Unlock @p oid alone, held by commit @p txid, which has no record. */
static int unlock_one(rad *e, const char *oid, const char *txid)
{
	objw one;

	memset(&one, 0, sizeof(one));
	one.oid = (char *)oid;
	return finish_all(e, &one, 1, txid, 0, 0);
}

/* With @p on, fence primary @p pri of parallel commit @p txid, whose
 * lock is not there: lock it with the id "TXID!", guarded on its being
 * free, so that the commit's own lock, if still on its way, fails (it is
 * guarded on the object being free, or on its version).  0 done, 1 the
 * object is not free (read again), <0 an error.  Without @p on, take the
 * fence away.  A fence whose client dies is a lock of a commit with no
 * record: undone after twice the budget, as any such. */
static int par_fence(rad *e, const char *pri, const char *txid, int on)
{
	char fid[128];
	rados_write_op_t op;
	int rc;

	snprintf(fid, sizeof(fid), "%s!", txid);
	if ((op = rados_create_write_op()) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ,
				on ? FREE : fid, on ? 1 : strlen(fid));
	rados_write_op_setxattr(op, LK, on ? fid : FREE,
				on ? strlen(fid) : 1);
	rc = wop_run(e, op, pri);
	rados_release_write_op(op);
	if (rc == -ENOENT && on) {
		/* Made, fenced: a lock that comes would make it anew. */
		if ((op = rados_create_write_op()) == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
		rados_write_op_setxattr(op, LK, fid, strlen(fid));
		rc = wop_run(e, op, pri);
		rados_release_write_op(op);
		if (rc == -EEXIST)
			return 1;
	}
	if (rc == -ECANCELED || (rc == -ENOENT && !on))
		return on ? 1 : 0;
	return rc < 0 ? rerr(rc, "fencing the primary of a commit at", pri)
		      : 0;
}

static int wait_free(rad *e, const char *oid);

/* For tests: when set, a reader that has fenced the primary of a parallel
 * commit stops there (KT_EIO), as if its client were killed before it
 * unlocked the other object and took the fence away. */
int kt__rados_test_fence_stop;

/*
 * par_fence found primary @p pri of parallel commit @p txid not free (a
 * reader is about to undo a lock of @p txid, which has no record).  0: go
 * on as fenced; 1: read again; <0 an error.
 *
 * - This commit's own fence ("TXID!": a reader stopped between fencing
 *   and unlocking) stands: go on.
 * - A lock of a commit X that an outer call of this thread is undoing
 *   (commits that each hold the primary of another, with no record):
 *   hand @p pri over from X to this commit's fence in one guarded
 *   operation, and go on.  That undoes X's lock there; X's own primary
 *   is held by a commit this thread is undoing, so X's lock cannot land
 *   there before this one's unlock is in, and once it can, X is missing
 *   @p pri: neither can be found whole.
 * - Anything else: settle it (its writer may be gone, and no other
 *   reader need ever look at @p pri), then read again.
 */
#define PAR_RING 8
static _Thread_local const char *par_ring[PAR_RING];
static _Thread_local int par_depth;
unsigned long kt__rados_test_par_busy[2]; /* own fences, hand-overs */

static int par_pri_busy(rad *e, const char *pri, const char *txid)
{
	char fid[128];
	rados_write_op_t op;
	pxa x;
	int rc, i, ring = 0;

	if ((rc = pxa_read(e, pri, txid, &x)) != 0)
		return rc;
	if (!x.exists || x.lock[0] == '\0' || strcmp(x.lock, FREE) == 0) {
		pxa_free(&x);
		return 1; /* free now */
	}
	snprintf(fid, sizeof(fid), "%s!", txid);
	if (strcmp(x.lock, fid) == 0) {
		pxa_free(&x);
		__atomic_add_fetch(&kt__rados_test_par_busy[0], 1,
				   __ATOMIC_RELAXED);
		return 0;
	}
	/* Only a lock that is not X's primary's (it names X's primary in
	 * kt.pri): undoing a primary's would take its record with it. */
	for (i = 0; i < par_depth && !ring; i++)
		ring = strcmp(x.lock, par_ring[i]) == 0 && x.pri.len > 0 &&
		       is_par(x.lock);
	if (ring) {
		if ((op = rados_create_write_op()) == NULL) {
			pxa_free(&x);
			return kt__err(KT_ENOMEM, "out of memory");
		}
		rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ,
					x.lock, strlen(x.lock));
		rados_write_op_cmpxattr(op, PRIX, LIBRADOS_CMPXATTR_OP_EQ,
					x.pri.p, x.pri.len);
		rados_write_op_setxattr(op, LK, fid, strlen(fid));
		rados_write_op_rmxattr(op, PRIX);
		rc = wop_run(e, op, pri);
		pxa_free(&x);
		rados_release_write_op(op);
		if (rc == -ECANCELED || rc == -ENOENT)
			return 1; /* it changed: read again */
		if (rc < 0)
			return rerr(rc, "fencing the primary of a commit at",
				    pri);
		__atomic_add_fetch(&kt__rados_test_par_busy[1], 1,
				   __ATOMIC_RELAXED);
		return 0;
	}
	pxa_free(&x);
	if (par_depth == PAR_RING)
		return kt__err(KT_EIO, "ceph: a chain of more than %d commits "
			       "without a record, each holding the primary "
			       "of the next, stands in the way at object '%s'",
			       PAR_RING + 1, pri);
	par_ring[par_depth++] = txid;
	rc = wait_free(e, pri);
	par_depth--;
	return rc < 0 ? rc : 1;
}

/* lock_settle for a commit whose record is on its primary. */
static int prim_settle(rad *e, const char *oid, const char *txid,
		       uint64_t *pending_since, int *pending)
{
	rec r = {0};
	kt__buf pri = {0};
	char state;
	int rc;

	rc = prim_read(e, oid, txid, &state, &r, &pri);
	if (rc != 0 || state == 'G')
		goto out;
	if (state == 'I') {
		/* A parallel commit with every lock in: committed.  Its
		 * primary's apply, which its writer may send first. */
		size_t k;
		for (k = 0; k < r.n && strcmp(r.o[k].oid, pri.p) != 0; k++)
			;
		if (k == r.n) {
			rc = kt__err(KT_ECORRUPT, "ceph: the record of commit "
				     "%s on object '%s' does not name that "
				     "object", txid, pri.p);
			goto out;
		}
		if ((rc = prim_end(e, pri.p, txid, &r.o[k])) != 0) {
			if (rc > 0)
				rc = 0; /* ended meanwhile: read again */
			goto out;
		}
		state = 'C';
	}
	if (state == 'P') {
		uint64_t t = now_ms();
		unsigned int b = tx_budget(txid);
		/* A parallel commit with a lock missing may still get it
		 * within its budget: rolled back only after twice that. */
		uint64_t wait = is_par(txid) ? 2 * (uint64_t)b
			      : b > e->lease_ms ? b : e->lease_ms;
		if (*pending_since == 0)
			*pending_since = t;
		if (t - *pending_since < wait) {
			/* Each look at a parallel commit reads all its
			 * objects: look less often once it is not quick. */
			uint64_t d = t - *pending_since;
			if (pending != NULL)
				*pending = 1;
			else
				sleep_ms(d < 20 ? 1
					 : d < 200 || !is_par(txid) ? 10 : 50);
			goto out;
		}
		/* Pending for longer than the lease: roll it back, and
		 * unlock the rest of it, which only this body names. */
		rc = prim_abort(e, pri.p, txid);
		if (rc == 0 && prim_finish(e, &r, pri.p, txid, 0) == 0 &&
		    !is_par(txid))
			prim_remove(e, pri.p, txid);
		if (rc > 0)
			rc = 0;
		*pending_since = 0;
		goto out;
	}
	if (state == 0) {
		/* No record: as lock_settle says for a record object, the
		 * primary's lock may still come within twice the budget. */
		unsigned int b = tx_budget(txid);
		uint64_t t = now_ms();
		if (*pending_since == 0)
			*pending_since = t;
		if (t - *pending_since < 2 * (uint64_t)b) {
			sleep_ms(t - *pending_since < 20 ? 1 : 10);
			goto out;
		}
		if (is_par(txid) && strcmp(pri.p, oid) != 0) {
			/* The primary's lock may still land, and a reader
			 * that then found every lock in (this one among them,
			 * its unlock still on the way) would commit it: fence
			 * the primary until the unlock is in. */
			rc = par_fence(e, pri.p, txid, 1);
			if (rc > 0)
				rc = par_pri_busy(e, pri.p, txid);
			if (rc != 0) {
				if (rc > 0)
					rc = 0; /* not free: read again */
				goto out;
			}
			if (kt__rados_test_fence_stop) {
				rc = kt__err(KT_EIO, "test: stopped after "
					     "fencing '%s'", pri.p);
				goto out;
			}
			/* The fence goes only once the unlock is known to be
			 * in (a reader that finds it left goes on as
			 * fenced). */
			rc = unlock_one(e, oid, txid);
			if (rc == 0)
				rc = par_fence(e, pri.p, txid, 0);
		} else {
			rc = unlock_one(e, oid, txid);
		}
		*pending_since = 0;
		goto out;
	}
	if (state == 'A') {
		/* The one who rolled it back unlocks the rest, or the
		 * objects' readers do. */
		rc = unlock_one(e, oid, txid);
		*pending_since = 0;
		goto out;
	}
	if (r.n == 0) {
		rc = kt__err(KT_ECORRUPT, "ceph: commit %s is committed but "
			     "its record on object '%s' has no writes", txid,
			     pri.p);
		goto out;
	}
	/* C: finish all of it, then drop the record; a parallel commit's
	 * stays for its writer, which may be about to look (it took its
	 * commit for rolled back, late, unless it finds C), or for
	 * kt_repair. */
	rc = prim_finish(e, &r, pri.p, txid, 1);
	if (rc == 0 && !is_par(txid))
		prim_remove(e, pri.p, txid);
	*pending_since = 0;
out:
	rec_free(&r);
	kt__buf_free(&pri);
	return rc;
}

/* The state of the commit @p txid whose lock is on @p oid, as rec_read
 * says it (and 'G' when @p oid no longer holds it, for a record on a
 * primary). */
static int lock_state(rad *e, const char *oid, const char *txid, char *state)
{
	int rc;

	if (is_onobj(txid)) {
		rc = prim_read(e, oid, txid, state, NULL, NULL);
		if (*state == 'I')
			*state = 'C';
		return rc;
	}
	return rec_read(e, txid, state, NULL);
}

/* Settle the lock @p txid found on @p oid.  0: settled (or it is worth
 * reading again); <0 an error.  @p pending_since keeps, across calls for
 * the same object, when the record was first seen pending.  With
 * @p pending, a record still P within its lease is not waited for: 0
 * with *pending set says so (the object, read before the record, is as it
 * was before that commit). */
static int lock_settle(rad *e, const char *oid, const char *txid,
		       uint64_t *pending_since, int *pending)
{
	rec r = {0};
	char state;
	int rc;

	if (is_staged(txid))
		return stage_settle(e, oid, txid, pending);
	if (is_onobj(txid))
		return prim_settle(e, oid, txid, pending_since, pending);
	rc = rec_read(e, txid, &state, &r);
	if (rc != 0) {
		rec_free(&r);
		return rc;
	}
	if (state == 'P') {
		uint64_t t = now_ms();
		unsigned int b = tx_budget(txid);
		rec_free(&r);
		if (*pending_since == 0)
			*pending_since = t;
		/* The writer gives up by itself once its budget is spent (a
		 * large commit's budget is longer than the lease). */
		if (t - *pending_since < (b > e->lease_ms ? b : e->lease_ms)) {
			if (pending != NULL) {
				*pending = 1;
				return 0;
			}
			sleep_ms(t - *pending_since < 20 ? 1 : 10);
			return 0;
		}
		/* Pending for longer than the lease: roll it back. */
		if ((rc = rec_flip(e, txid, 'A')) < 0)
			return rc;
		*pending_since = 0;
		return 0; /* read again: now C (it won) or A */
	}
	if (state == 0) {
		/* No record.  Its writer sends the record and the locks
		 * together (commit_many) and gives up unless the record is in
		 * within the budget its id names: until twice that has passed
		 * since this lock was first seen, the record may still come.
		 * After that, or for an id of an older client (record first),
		 * the commit never got to its commit point, and never will
		 * (a record is removed only after every lock is gone). */
		unsigned int b = tx_budget(txid);
		objw one;
		rec_free(&r); /* a body read may have begun before it went */
		if (b > 0) {
			uint64_t t = now_ms();
			if (*pending_since == 0)
				*pending_since = t;
			if (t - *pending_since < 2 * (uint64_t)b) {
				sleep_ms(t - *pending_since < 20 ? 1 : 10);
				return 0;
			}
		}
		memset(&one, 0, sizeof(one));
		one.oid = (char *)oid;
		rc = finish_all(e, &one, 1, txid, 0, 0);
		*pending_since = 0;
		return rc;
	}
	/* C or A: finish the whole commit, then drop its record. */
	rc = finish_all(e, r.o, r.n, txid, state == 'C', 0);
	if (rc == 0)
		rec_remove(e, txid);
	rec_free(&r);
	*pending_since = 0;
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Point reads */

/* A hashed object name must hold the partition asked for. */
static int part_check(const rad *e, const char *oid, const oread *r,
		      kt__slice part)
{
	char a[KT__SHOWSZ];

	/* An object made empty by a commit's guard has no kt.part until
	 * its first write. */
	if (!r->exists || !is_hashed(oid, e) || r->part.len == 0)
		return 0;
	if (r->part.len == part.len &&
	    memcmp(r->part.p ? r->part.p : "", part.p, part.len) == 0)
		return 0;
	return kt__err(KT_ECORRUPT, "ceph: object '%s' holds another "
		       "partition than the one its name is the hash of",
		       kt__show(a, sizeof(a), oid, strlen(oid)));
}

/*
 * Rows read ahead.  The tree layer says which row it will probably read
 * next through a snapshot (a create reads the name, finds it absent, then
 * reads the parent: rows.h, prefetch); the read of it is sent at once and
 * kept with the snapshot, and the get takes its answer, as a read at that
 * moment would have been (a lock met is settled by reading again).
 */
#define AHEAD_MAX 32 /* a listing with KT_LIST_STAT asks for as many (iter.c) */

struct pfent {
	char *oid;    /* NULL: the slot is free */
	kt__buf key;  /* the omap key asked for */
	int scan;     /* instead: the first page of a scan (prefetch_scan) */
	opend p;
};

static void pf_drop(kt__snap *s)
{
	size_t i;

	if (s->pf == NULL)
		return;
	for (i = 0; i < AHEAD_MAX; i++)
		if (s->pf[i].oid != NULL) {
			(void)oread_finish(&s->pf[i].p, "", NULL);
			free(s->pf[i].oid);
			kt__buf_free(&s->pf[i].key);
		}
	free(s->pf);
	s->pf = NULL;
}

/* A free slot for a read ahead through @p s, or NULL when AHEAD_MAX are
 * in flight already (or there is no memory for them). */
static struct pfent *pf_slot(kt__snap *s)
{
	size_t i;

	if (s->pf == NULL && (s->pf = calloc(AHEAD_MAX, sizeof(*s->pf))) == NULL)
		return NULL;
	for (i = 0; i < AHEAD_MAX; i++)
		if (s->pf[i].oid == NULL)
			return &s->pf[i];
	return NULL;
}

static void rad_prefetch(kt__rows *r, const kt__snap *snap, kt__slice part,
			 kt__slice sort)
{
	rad *e = (rad *)r;
	kt__snap *s = (kt__snap *)snap;
	char pb[PHYS_MAX];
	kt__buf oid = {0};
	struct pfent *f;
	oreq q;

	if (s == NULL)
		return;
	if ((f = pf_slot(s)) == NULL)
		return; /* enough in flight */
	part = phys_part(e, part, sort, pb);
	if (oid_of(&oid, e, part) != 0 || okey(&f->key, sort) != 0 ||
	    seen_find(s, oid.p) != NULL) {
		kt__buf_free(&oid); /* already read: a get asks again */
		kt__buf_free(&f->key);
		return;
	}
	memset(&q, 0, sizeof(q));
	q.key = f->key.p;
	oread_start(e, oid.p, &q, &f->p);
	f->oid = kt__buf_detach(&oid, NULL);
	if (f->oid == NULL) {
		(void)oread_finish(&f->p, "", NULL);
		kt__buf_free(&f->key);
	}
}

/* The read of (@p oid, @p key) sent ahead through @p s, if any, or with
 * @p key NULL the first page of a scan of @p oid: taken into @p rd and
 * noted in @p s.  1 taken, 0 none, <0 an error. */
static int pf_take(rad *e, kt__snap *s, const char *oid, const kt__buf *key,
		   const oreq *q, oread *rd)
{
	struct pfent *f = NULL;
	size_t i;
	int rc;

	if (s == NULL || s->pf == NULL)
		return 0;
	for (i = 0; i < AHEAD_MAX && f == NULL; i++)
		if (s->pf[i].oid != NULL && strcmp(s->pf[i].oid, oid) == 0 &&
		    (key == NULL
			     ? s->pf[i].scan
			     : !s->pf[i].scan && s->pf[i].key.len == key->len &&
				       memcmp(s->pf[i].key.p, key->p,
					      key->len) == 0))
			f = &s->pf[i];
	if (f == NULL)
		return 0;
	rc = oread_finish(&f->p, oid, rd);
	free(f->oid);
	f->oid = NULL;
	f->scan = 0;
	kt__buf_free(&f->key);
	if (rc != 0)
		return rc;
	if (rd->moved ||
	    (rd->exists && rd->lock[0] != '\0' && strcmp(rd->lock, FREE) != 0))
		rc = oread_do(e, s, oid, q, rd);
	else
		rc = seen_note(s, oid, rd->exists, rd->ver, NULL);
	return rc != 0 ? rc : 1;
}

static int rad_get(kt__rows *r, const kt__snap *snap, kt__slice part,
		   kt__slice sort, kt__buf *out)
{
	rad *e = (rad *)r;
	kt__buf oid = {0}, k = {0};
	char pb[PHYS_MAX];
	oread rd;
	oreq q;
	int rc;

	memset(&rd, 0, sizeof(rd));
	memset(&q, 0, sizeof(q));
	if (snap == NULL) {
		stage *g = stage_mine(e); /* as rad_scan */
		if (g != NULL)
			snap = g->snap;
	}
	part = phys_part(e, part, sort, pb);
	if ((rc = oid_of(&oid, e, part)) == 0 && (rc = okey(&k, sort)) == 0) {
		q.key = k.p;
		rc = pf_take(e, (kt__snap *)snap, oid.p, &k, &q, &rd);
		if (rc == 0)
			rc = oread_do(e, (kt__snap *)snap, oid.p, &q, &rd);
		else if (rc == 1)
			rc = 0;
	}
	if (rc == 0)
		rc = part_check(e, oid.p, &rd, part);
	if (rc == 0)
		rc = rd.n == 0 ? KT_ENOTFOUND
			       : kt__buf_set(out, rd.vals[0].p, rd.vals[0].len);
	oread_clear(&rd);
	kt__buf_free(&oid);
	kt__buf_free(&k);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Scans */

/* First pages a prefix scan keeps in flight. */
#define PREFETCH 32
#define FIRST_PAGE 16

/* The seam's prefetch_scan: send the read of the first page of a scan of
 * @p part from its start, which cur_load takes (pf_take) as the read it
 * would have made.  Not for the id index, whose scan is a walk. */
static void rad_prefetch_scan(kt__rows *r, const kt__snap *snap,
			      kt__slice part)
{
	rad *e = (rad *)r;
	kt__snap *s = (kt__snap *)snap;
	kt__buf oid = {0};
	struct pfent *f;
	oreq q;

	if (s == NULL || sh_kind(e, part))
		return;
	if ((f = pf_slot(s)) == NULL)
		return; /* enough in flight */
	if (oid_of(&oid, e, part) != 0 || seen_find(s, oid.p) != NULL) {
		kt__buf_free(&oid); /* already read: the scan reads again */
		return;
	}
	memset(&q, 0, sizeof(q));
	q.prefix = ".";
	q.after = "";
	q.max = FIRST_PAGE;
	oread_start(e, oid.p, &q, &f->p);
	f->scan = 1;
	f->oid = kt__buf_detach(&oid, NULL);
	if (f->oid == NULL) {
		(void)oread_finish(&f->p, "", NULL);
		f->scan = 0;
	}
}

struct kt__cursor {
	rad *e;
	kt__snap *snap;
	unsigned int flags;
	kt__buf bound;    /* AFTER / FROM: the sort key */
	/* The partition being read. */
	kt__buf part, oid;
	oread page;
	size_t pos;
	size_t pagesz;
	int loaded;       /* the partition's first page is in */
	/* Prefix scans: the catalog. */
	kt__buf catoid, catprefix;
	kt__buf catafter; /* a prefix scan's AFTER: its catalog key */
	oread cat;
	size_t catpos;
	int catloaded;
	int sharded;      /* a scan of the id index (SH_ID) or of a value's
			     blocks (SH_BLK): its objects in turn */
	kt__buf lpart;    /* SH_BLK: the partition scanned */
	opend first;      /* SH_BLK: the read of the bound's stripe, sent
			     with the base's, for when the base lists it */
	kt__buf firstoid;
	/* Prefix scans read ahead: the first pages of the partitions at
	 * catalog positions catpos - 1 ... catpos + PREFETCH - 2 are in
	 * flight together, slot i % PREFETCH holding position i (pfat: i + 1,
	 * 0 when empty). */
	opend pf[PREFETCH];
	size_t pfat[PREFETCH];
	size_t pfnext;    /* the next position to send */
	size_t curpos;    /* the position of the partition being read, + 1 */
	int done;
	int past;         /* KT__SCAN_PAST: the first partition from past
			     the bound */
	kt__buf key;      /* scratch: an omap key */
};

static int bound_cmp(const kt__buf *k, const kt__buf *b)
{
	size_t n = k->len < b->len ? k->len : b->len;
	int c = memcmp(k->p, b->p ? b->p : "", n);
	if (c != 0)
		return c;
	return k->len < b->len ? -1 : k->len > b->len;
}

/* Prefetching.  A prefix scan (a find, a check, a rename's or a delete's
 * walk) reads every partition under its prefix, most of them one page;
 * reading them one after the other costs a round trip each.  Instead the
 * first pages of the next PREFETCH partitions in the catalog are sent at
 * once, and each is taken when the scan reaches it: as oread_do would
 * have read it then, but earlier (reads of a scan see each partition at
 * its own moment anyway; keytree.h, "Engines").  A page that shows a lock
 * is dropped and read again the usual way, settling the lock. */
static int prefetched(const kt__cursor *c)
{
	return c->curpos > 0 &&
	       c->pfat[(c->curpos - 1) % PREFETCH] == c->curpos;
}

/* Take read @p p, sent earlier for the current partition's first page,
 * into c->page as oread_do would have made it: a page that shows a lock,
 * or a stripe that moved between its reads, is read again the usual way. */
static int take_sent(kt__cursor *c, opend *p, const oreq *q)
{
	int rc;

	if ((rc = oread_finish(p, c->oid.p, &c->page)) != 0)
		return rc;
	if (c->page.moved || (c->page.exists && c->page.lock[0] != '\0' &&
			      strcmp(c->page.lock, FREE) != 0))
		return oread_do(c->e, c->snap, c->oid.p, q, &c->page);
	return seen_note(c->snap, c->oid.p, c->page.exists, c->page.ver,
			 NULL);
}

static int take_prefetched(kt__cursor *c, const oreq *q)
{
	size_t slot = (c->curpos - 1) % PREFETCH;

	c->pfat[slot] = 0;
	return take_sent(c, &c->pf[slot], q);
}

/* Drop every read in flight (a new catalog page, or the cursor's end). */
static void prefetch_drop(kt__cursor *c)
{
	size_t i;

	for (i = 0; i < PREFETCH; i++)
		if (c->pfat[i] != 0) {
			(void)oread_finish(&c->pf[i], "", NULL);
			c->pfat[i] = 0;
		}
	c->pfnext = 0;
}

/* Send the first pages of the catalog entries up to PREFETCH ahead of
 * position @p at (the one about to be read included). */
static int prefetch_more(kt__cursor *c, size_t at)
{
	kt__buf oid = {0};
	oreq q;
	int rc = 0;

	memset(&q, 0, sizeof(q));
	q.prefix = ".";
	q.after = "";
	q.max = FIRST_PAGE;
	if (c->pfnext < at)
		c->pfnext = at;
	while (rc == 0 && c->pfnext < c->cat.n && c->pfnext < at + PREFETCH) {
		size_t slot = c->pfnext % PREFETCH;
		if (c->pfat[slot] != 0) { /* passed over: drop it */
			(void)oread_finish(&c->pf[slot], "", NULL);
			c->pfat[slot] = 0;
		}
		if ((rc = oid_of(&oid, c->e,
				 kt__slb(&c->cat.keys[c->pfnext]))) == 0) {
			oread_start(c->e, oid.p, &q, &c->pf[slot]);
			c->pfat[slot] = c->pfnext + 1;
		}
		c->pfnext++;
	}
	kt__buf_free(&oid);
	return rc;
}

/* The read of a partition's first page: from the start, or from the
 * scan's bound (its omap key kept in c->key). */
static int first_req(kt__cursor *c, oreq *q)
{
	int rc;

	memset(q, 0, sizeof(*q));
	q->prefix = ".";
	q->after = "";
	q->max = FIRST_PAGE;
	if (!(c->flags & KT__SCAN_REVERSE) &&
	    ((c->flags & (KT__SCAN_AFTER | KT__SCAN_FROM)) || c->past)) {
		if ((rc = okey(&c->key, kt__slb(&c->bound))) != 0)
			return rc;
		q->after = c->key.p;
		if (c->flags & KT__SCAN_FROM)
			q->key = c->key.p;
	}
	return 0;
}

/* A scan of a value's blocks: send the read of the stripe its bound is
 * in (the first) along with the base's, so that the usual scan, whose
 * stripe the base lists, takes no round trip more than it did when a
 * value was one object. */
static void first_send(kt__cursor *c)
{
	char pb[PHYS_MAX];
	kt__slice part;
	oreq q;

	part = phys_part(c->e, kt__slb(&c->lpart),
			 c->bound.len > 0 ? kt__slb(&c->bound)
					  : kt__sl("\0\0\0\0\0\0\0\0", 8),
			 pb);
	if (first_req(c, &q) != 0 || oid_of(&c->firstoid, c->e, part) != 0)
		return;
	oread_start(c->e, c->firstoid.p, &q, &c->first);
}

/* Read the next page of the current partition into c->page.  A reverse
 * scan reads the whole range at once and walks it backwards. */
static int cur_load(kt__cursor *c)
{
	oread more;
	oreq q;
	int rc, first = !c->loaded;

	memset(&more, 0, sizeof(more));
	if (first) {
		c->pagesz = FIRST_PAGE;
		if ((rc = first_req(c, &q)) != 0)
			return rc;
	} else {
		kt__buf *last = &c->page.keys[c->page.n - 1];
		memset(&q, 0, sizeof(q));
		q.prefix = ".";
		if ((rc = okey(&c->key, kt__slb(last))) != 0)
			return rc;
		q.after = c->key.p;
		if (c->pagesz < PAGE_MAX)
			c->pagesz *= 2;
	}
	q.max = (c->flags & KT__SCAN_REVERSE) ? PAGE_MAX
					      : (unsigned int)c->pagesz;
	if (first && c->first.busy && strcmp(c->firstoid.p, c->oid.p) == 0)
		rc = take_sent(c, &c->first, &q); /* first_send's */
	else if (first && prefetched(c))
		rc = take_prefetched(c, &q);
	else if (first && !c->past &&
		 !(c->flags & (KT__SCAN_REVERSE | KT__SCAN_AFTER |
			       KT__SCAN_FROM)) &&
		 (rc = pf_take(c->e, c->snap, c->oid.p, NULL, &q,
			       &c->page)) != 0)
		rc = rc < 0 ? rc : 0; /* sent ahead (rad_prefetch_scan) */
	else
		rc = oread_do(c->e, c->snap, c->oid.p, &q, &c->page);
	if (c->first.busy) /* the base did not list that stripe */
		(void)oread_finish(&c->first, "", NULL);
	if (rc == 0)
		rc = part_check(c->e, c->oid.p, &c->page, kt__slb(&c->part));
	c->loaded = 1;
	c->pos = 0;
	c->past = 0; /* the bound was the first partition's only */
	if (rc != 0 || !(c->flags & KT__SCAN_REVERSE))
		return rc;
	/* Reverse: gather the rest, then drop what lies at or past the
	 * bound, and walk from the end. */
	while (rc == 0 && c->page.more) {
		size_t i;
		kt__buf *last = &c->page.keys[c->page.n - 1];
		if ((rc = okey(&c->key, kt__slb(last))) != 0)
			break;
		q.after = c->key.p;
		q.key = NULL;
		if ((rc = oread_do(c->e, c->snap, c->oid.p, &q, &more)) != 0)
			break;
		for (i = 0; i < more.n && rc == 0; i++)
			rc = oread_add_dec(&c->page, &more.keys[i],
					   &more.vals[i]);
		c->page.more = more.more;
	}
	oread_clear(&more);
	if (rc == 0 && (c->flags & (KT__SCAN_AFTER | KT__SCAN_FROM))) {
		while (c->page.n > 0) {
			int cmp = bound_cmp(&c->page.keys[c->page.n - 1],
					    &c->bound);
			if (cmp < 0 || (cmp == 0 && (c->flags & KT__SCAN_FROM)))
				break;
			c->page.n--;
		}
	}
	c->page.more = 0;
	return rc;
}

/* Move to the next partition of a prefix scan; 0, or KT_ITEROVER. */
static int cur_next_part(kt__cursor *c)
{
	oreq q;
	int rc;

	for (;;) {
		if (c->catloaded && c->catpos < c->cat.n) {
			kt__buf *p = &c->cat.keys[c->catpos++];
			if (c->sharded == SH_BLK) {
				/* The base's list: "s" + 16 hex digits. */
				if (p->len != 17 || p->p[0] != 's' ||
				    !all_hex(p->p + 1, 16))
					continue;
				if (c->bound.len > 0 &&
				    strtoull(p->p + 1, NULL, 16) <
					    blk_of(kt__slb(&c->bound)) >>
						    STRIPE_SHIFT)
					continue;
				if ((rc = kt__buf_set(&c->part, c->lpart.p,
						      c->lpart.len)) != 0 ||
				    (rc = kt__buf_addc(&c->part, '.')) != 0 ||
				    (rc = kt__buf_add(&c->part, p->p + 1,
						      16)) != 0)
					return rc;
			} else {
				if (c->sharded && !is_idpart(kt__slb(p)) &&
				    !is_idshard(kt__slb(p)))
					continue;
				/* Shards wholly before a scan's bound hold
				 * no row it returns. */
				if (c->sharded && is_idshard(kt__slb(p)) &&
				    c->bound.len == 8 &&
				    strtoull(p->p + IDPART_LEN + 1, NULL, 16) <
					    idshard_of(kt__slb(&c->bound)))
					continue;
				if ((rc = kt__buf_set(&c->part, p->p,
						      p->len)) != 0)
					return rc;
			}
			if ((rc = oid_of(&c->oid, c->e, kt__slb(&c->part))) !=
			    0)
				return rc;
			c->curpos = 0;
			if (!c->sharded) {
				if ((rc = prefetch_more(c, c->catpos - 1)) != 0)
					return rc;
				c->curpos = c->catpos;
			}
			c->loaded = 0;
			c->page.n = 0;
			c->pos = 0;
			return 0;
		}
		if (c->catloaded && !c->cat.more)
			return KT_ITEROVER;
		prefetch_drop(c);
		memset(&q, 0, sizeof(q));
		q.prefix = c->catprefix.p;
		q.max = 256;
		if (c->catloaded) {
			kt__buf *last = &c->cat.keys[c->cat.n - 1];
			if (c->sharded == SH_BLK)
				rc = kt__buf_set(&c->key, last->p, last->len);
			else
				rc = okey(&c->key, kt__slb(last));
			if (rc != 0)
				return rc;
			q.after = c->key.p;
		} else {
			q.after = c->catafter.len > 0 ? c->catafter.p : "";
		}
		c->cat.raw = c->sharded == SH_BLK;
		if ((rc = oread_do(c->e, c->snap, c->catoid.p, &q, &c->cat)) !=
		    0)
			return rc;
		c->catloaded = 1;
		c->catpos = 0;
	}
}

/* Keep a single-partition scan's AFTER or FROM sort key in c->bound. */
static int bound_set(kt__cursor *c, const kt__scan *how)
{
	if (how->flags & KT__SCAN_AFTER)
		return kt__buf_set(&c->bound, how->after.p, how->after.len);
	if (how->flags & KT__SCAN_FROM)
		return kt__buf_set(&c->bound, how->from.p, how->from.len);
	return 0;
}

static int rad_scan(kt__cursor **out, kt__rows *r, const kt__snap *snap,
		    const kt__scan *how)
{
	rad *e = (rad *)r;
	kt__cursor *c = calloc(1, sizeof(*c));
	int rc = 0;

	*out = NULL;
	if (c == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	c->e = e;
	c->snap = (kt__snap *)snap;
	/* The steps of a staged commit read without a snapshot: through
	 * the stage's, which its next part is guarded on. */
	if (snap == NULL) {
		stage *g = stage_mine(e);
		if (g != NULL)
			c->snap = g->snap;
	}
	c->flags = how->flags;
	if (!(how->flags & KT__SCAN_PREFIX) &&
	    sh_kind(e, how->part) == SH_BLK) {
		/* A value's blocks: the stripes its base lists, from the
		 * bound's on, in order; a bound applies to each. */
		c->sharded = SH_BLK;
		c->flags |= KT__SCAN_PREFIX;
		if (how->flags & KT__SCAN_REVERSE)
			rc = kt__err(KT_EINVAL, "ceph: a reverse scan of a "
				     "value's blocks is not supported");
		if (rc == 0 &&
		    (rc = kt__buf_set(&c->lpart, how->part.p,
				      how->part.len)) == 0 &&
		    (rc = oid_of(&c->catoid, e, how->part)) == 0 &&
		    (rc = kt__buf_set(&c->catprefix, "s", 1)) == 0)
			rc = bound_set(c, how);
		if (rc == 0 && c->bound.len > 0 &&
		    blk_of(kt__slb(&c->bound)) >> STRIPE_SHIFT > 0) {
			char a[24];
			snprintf(a, sizeof(a), "s%016" PRIx64,
				 (blk_of(kt__slb(&c->bound)) >> STRIPE_SHIFT) -
					 1);
			rc = kt__buf_set(&c->catafter, a, strlen(a));
		}
		if (rc == 0)
			first_send(c);
		if (rc == 0 && (rc = cur_next_part(c)) == KT_ITEROVER) {
			c->done = 1;
			rc = 0;
		}
	} else if (!(how->flags & KT__SCAN_PREFIX) && is_idpart(how->part)) {
		/* The id index: its shards, through the catalog, in id
		 * order; a bound applies to every shard. */
		c->sharded = SH_ID;
		c->flags |= KT__SCAN_PREFIX;
		if (how->flags & KT__SCAN_REVERSE)
			rc = kt__err(KT_EINVAL, "ceph: a reverse scan of the "
				     "id index is not supported");
		if (rc == 0 && (rc = name_of(&c->catoid, e, "!cat")) == 0)
			rc = okey(&c->catprefix, how->part);
		if (rc == 0)
			rc = bound_set(c, how);
		/* The catalog is read now, so that the snapshot has seen
		 * it by the time scan returns. */
		if (rc == 0 && (rc = cur_next_part(c)) == KT_ITEROVER) {
			c->done = 1;
			rc = 0;
		}
	} else if (how->flags & KT__SCAN_PREFIX) {
		if ((rc = name_of(&c->catoid, e, "!cat")) == 0)
			rc = okey(&c->catprefix, how->part);
		/* After partition X: catalog keys after X's (those of the
		 * partitions X is a prefix of follow it).  The bound is the
		 * catalog's, not the rows'. */
		if (rc == 0 && (how->flags & KT__SCAN_AFTER)) {
			rc = okey(&c->catafter, how->after);
			c->flags &= ~KT__SCAN_AFTER;
		} else if (rc == 0 && (how->flags & KT__SCAN_PAST)) {
			/* The rest of partition 'after' past sort key
			 * 'from' (the last row a step took), then the
			 * partitions after it. */
			if ((rc = okey(&c->catafter, how->after)) == 0 &&
			    (rc = kt__buf_set(&c->part, how->after.p,
					      how->after.len)) == 0 &&
			    (rc = oid_of(&c->oid, e, how->after)) == 0)
				rc = kt__buf_set(&c->bound, how->from.p,
						 how->from.len);
			c->past = 1;
			c->flags &= ~KT__SCAN_PAST;
		}
	} else {
		if ((rc = kt__buf_set(&c->part, how->part.p, how->part.len)) ==
		    0)
			rc = oid_of(&c->oid, e, how->part);
		if (rc == 0)
			rc = bound_set(c, how);
		/* Read the first page now, so that the snapshot has seen
		 * the partition by the time scan returns. */
		if (rc == 0)
			rc = cur_load(c);
	}
	if (rc != 0) {
		e->base.ops->cursor_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

static int rad_next(kt__cursor *c, kt__row *row)
{
	int rc;

	for (;;) {
		if (c->done)
			return KT_ITEROVER;
		if (c->loaded && c->pos < c->page.n) {
			size_t i = (c->flags & KT__SCAN_REVERSE)
					   ? c->page.n - 1 - c->pos
					   : c->pos;
			c->pos++;
			row->part = logical_part(kt__slb(&c->part));
			row->sort = kt__slb(&c->page.keys[i]);
			row->value = kt__slb(&c->page.vals[i]);
			return 0;
		}
		if (c->loaded && c->page.more && c->page.n > 0) {
			if ((rc = cur_load(c)) != 0)
				return rc;
			continue;
		}
		if (!(c->flags & KT__SCAN_PREFIX)) {
			c->done = 1;
			continue;
		}
		if (!c->loaded && c->oid.len > 0) {
			if ((rc = cur_load(c)) != 0)
				return rc;
			continue;
		}
		rc = cur_next_part(c);
		if (rc == KT_ITEROVER) {
			c->done = 1;
			continue;
		}
		if (rc != 0)
			return rc;
	}
}

static void rad_cursor_free(kt__cursor *c)
{
	if (c == NULL)
		return;
	prefetch_drop(c);
	kt__buf_free(&c->bound);
	kt__buf_free(&c->part);
	kt__buf_free(&c->oid);
	oread_clear(&c->page);
	kt__buf_free(&c->catoid);
	kt__buf_free(&c->catprefix);
	kt__buf_free(&c->catafter);
	oread_clear(&c->cat);
	kt__buf_free(&c->key);
	kt__buf_free(&c->lpart);
	if (c->first.busy)
		(void)oread_finish(&c->first, "", NULL);
	kt__buf_free(&c->firstoid);
	free(c);
}

/* ------------------------------------------------------------------------ */
/* Snapshots */

static int rad_snapshot(kt__snap **out, kt__rows *r)
{
	kt__snap *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	s->e = (rad *)r;
	*out = s;
	return 0;
}

static void snap_clear(kt__snap *s)
{
	size_t i;
	for (i = 0; i < s->capv; i++) {
		free(s->v[i].oid);
		free(s->v[i].lk);
	}
	free(s->v);
	s->v = NULL;
	s->nv = s->capv = 0;
}

static void rad_snapshot_free(kt__rows *r, kt__snap *s)
{
	(void)r;
	if (s == NULL)
		return;
	pf_drop(s);
	snap_clear(s);
	free(s);
}

/*
 * Validation.  The reads through a snapshot each saw one object at one
 * moment.  If every object is still at the version it was read at, all
 * of them hold at once, now: the reads are as good as one snapshot taken
 * at this moment.  Versions only grow and every change (a lock taken
 * included) makes a new one, so "same version" means "not touched".  One
 * object read once needs no check; otherwise one stat per object, all in
 * flight together, VALIDATE_BATCH at a time.
 */
#define VALIDATE_BATCH 256

typedef struct vstat {
	rados_read_op_t op;
	rados_completion_t c;
	const seen *x;
	uint64_t size;
	time_t mtime;
	int rv;
	int started;
} vstat;

/* The objects read under the lock of a pending commit (oread_do) were
 * read as they were before it: right at this moment only if that commit
 * has not taken effect since.  Its record must still be P, or A (rolled
 * back: the rows read are the rows).  C, or gone (finished, or never
 * written), and the reads are not known to hold at one moment.  Records
 * are read after every object's check, so "still P" covers the moment
 * those checks establish. */
static int validate_pending(rad *e, const kt__snap *s, int *changed)
{
	const char *done[8];
	size_t i, nd = 0, j;
	int rc;

	for (i = 0; i < s->capv && !*changed; i++) {
		const char *lk = s->v[i].oid != NULL ? s->v[i].lk : NULL;
		char state = 0;
		if (lk == NULL)
			continue;
		for (j = 0; j < nd && strcmp(done[j], lk) != 0; j++)
			;
		if (j < nd)
			continue;
		if ((rc = lock_state(e, s->v[i].oid, lk, &state)) != 0)
			return rc;
		if (state != 'P' && state != 'A')
			*changed = 1;
		if (nd < sizeof(done) / sizeof(done[0]))
			done[nd++] = lk;
	}
	return 0;
}

static int rad_validate(kt__rows *r, const kt__snap *s)
{
	rad *e = (rad *)r;
	vstat *v;
	size_t i = 0, n, k;
	int rc = 0, changed = 0;

	if (s == NULL || s->nv == 0 || (s->nv == 1 && !s->torn))
		return 0;
	if (s->torn)
		return KT__ERETRY;
	if ((v = calloc(VALIDATE_BATCH, sizeof(*v))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	while (i < s->capv && rc == 0 && !changed) {
		for (n = 0; i < s->capv && n < VALIDATE_BATCH; i++) {
			vstat *w = &v[n];
			int arc;
			if (s->v[i].oid == NULL)
				continue;
			memset(w, 0, sizeof(*w));
			w->x = &s->v[i];
			n++;
			if ((w->op = rados_create_read_op()) == NULL) {
				rc = kt__err(KT_ENOMEM, "out of memory");
				break;
			}
			rados_read_op_stat(w->op, &w->size, &w->mtime, &w->rv);
			arc = rados_aio_create_completion2(NULL, NULL, &w->c);
			if (arc == 0)
				arc = rados_aio_read_op_operate(w->op, e->io,
								w->c,
								w->x->oid, 0);
			if (arc != 0) {
				rc = rerr(arc, "checking", w->x->oid);
				break;
			}
			w->started = 1;
		}
		/* Every operation started is waited for, even after an
		 * error: its completion owns buffers in v. */
		for (k = 0; k < n; k++) {
			vstat *w = &v[k];
			if (w->started) {
				int arc;
				rados_aio_wait_for_complete(w->c);
				arc = rados_aio_get_return_value(w->c);
				if (arc == -ENOENT) {
					if (w->x->exists)
						changed = 1;
				} else if (arc < 0) {
					if (rc == 0)
						rc = rerr(arc, "checking",
							  w->x->oid);
				} else if (!w->x->exists ||
					   rados_aio_get_version(w->c) !=
						   w->x->ver) {
					changed = 1;
				}
			}
			if (w->c != NULL)
				rados_aio_release(w->c);
			if (w->op != NULL)
				rados_release_read_op(w->op);
		}
	}
	free(v);
	if (rc == 0 && !changed)
		rc = validate_pending(e, s, &changed);
	if (rc != 0)
		return rc;
	return changed ? KT__ERETRY : 0;
}

/* ------------------------------------------------------------------------ */
/* Commits */

/* The objects of one commit, with an index by name. */
typedef struct oset {
	objw *o;
	size_t n, cap;
	size_t *idx;   /* open addressing: 1 + position in o, 0 empty */
	size_t capidx;
} oset;

static void oset_free(oset *s)
{
	size_t i;
	for (i = 0; i < s->n; i++)
		objw_free(&s->o[i]);
	free(s->o);
	free(s->idx);
	memset(s, 0, sizeof(*s));
}

/* Set @p x's partition to @p part.  A plain name holds its partition:
 * point there, so the slice outlives a caller's buffer (an id shard's or
 * a stripe's name is made in one). */
static void oset_part(objw *x, kt__slice part)
{
	size_t n = strlen(x->oid);

	x->part = part;
	if (part.len > 0 && n > part.len &&
	    memcmp(x->oid + n - part.len, part.p, part.len) == 0)
		x->part = kt__sl(x->oid + n - part.len, part.len);
}

/* The entry for @p oid, made when absent; @p part, its partition, when
 * known (an entry made for a guard alone has none yet). */
static int oset_get(oset *s, const char *oid, kt__slice part, objw **out)
{
	size_t h, mask, i;

	if (2 * (s->n + 1) > s->capidx) {
		size_t cap = s->capidx ? 2 * s->capidx : 32;
		size_t *ni = calloc(cap, sizeof(*ni));
		if (ni == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		free(s->idx);
		s->idx = ni;
		s->capidx = cap;
		for (i = 0; i < s->n; i++) {
			h = (size_t)hash64(s->o[i].oid, strlen(s->o[i].oid),
					   3) & (cap - 1);
			while (s->idx[h] != 0)
				h = (h + 1) & (cap - 1);
			s->idx[h] = i + 1;
		}
	}
	mask = s->capidx - 1;
	h = (size_t)hash64(oid, strlen(oid), 3) & mask;
	while (s->idx[h] != 0) {
		objw *x = &s->o[s->idx[h] - 1];
		if (strcmp(x->oid, oid) == 0) {
			if (x->part.len == 0 && part.len > 0)
				oset_part(x, part);
			*out = x;
			return 0;
		}
		h = (h + 1) & mask;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		objw *no = realloc(s->o, cap * sizeof(*no));
		if (no == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		s->o = no;
		s->cap = cap;
	}
	memset(&s->o[s->n], 0, sizeof(s->o[s->n]));
	if ((s->o[s->n].oid = strdup(oid)) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	s->o[s->n].part = part;
	oset_part(&s->o[s->n], part);
	s->idx[h] = ++s->n;
	*out = &s->o[s->n - 1];
	return 0;
}

static int known_has(rad *e, const char *part)
{
	int has;
	pthread_mutex_lock(&e->mu);
	has = seen_find(e->known_set, part) != NULL;
	pthread_mutex_unlock(&e->mu);
	return has;
}

static void known_add(rad *e, const char *part)
{
	pthread_mutex_lock(&e->mu);
	if (e->known_set->nv >= KNOWN_MAX)
		snap_clear(e->known_set);
	(void)seen_note(e->known_set, part, 1, 0, NULL);
	pthread_mutex_unlock(&e->mu);
}

/* The guard that makes a write op on @p o fail if the object changed
 * since its snapshot saw it (or, for a blind write, if it is locked); and
 * the object's making, when it is new.  @p lock: the value kt.lk takes. */
static void guard_ops(rados_write_op_t op, const rad *e, const objw *o,
		      int make, const char *lock)
{
	if (make) {
		rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
		if (is_hashed(o->oid, e) && o->part.len > 0)
			rados_write_op_setxattr(op, PARTX, o->part.p,
						o->part.len);
	} else if (o->saw != NULL) {
		rados_write_op_assert_version(op, o->saw->ver);
	} else {
		rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ, FREE,
					1);
	}
	rados_write_op_setxattr(op, LK, lock, strlen(lock));
	if (o->scope.len > 0 && strcmp(lock, FREE) != 0) {
		/* The lock's id, then what it guards (catalog_add). */
		size_t n = strlen(lock) + 1 + o->scope.len;
		char *v = malloc(n);
		if (v != NULL) {
			memcpy(v, lock, strlen(lock) + 1);
			memcpy(v + strlen(lock) + 1, o->scope.p, o->scope.len);
			rados_write_op_setxattr(op, LKSCOPE, v, n);
			free(v);
		}
	}
}

static int must_make(const objw *o)
{
	return o->saw != NULL && !o->saw->exists;
}

/* Wait until @p oid is not locked (settling a lock whose writer is gone). */
static int wait_free(rad *e, const char *oid)
{
	oread r;
	oreq q;
	int rc;

	memset(&r, 0, sizeof(r));
	memset(&q, 0, sizeof(q));
	rc = oread_do(e, NULL, oid, &q, &r);
	oread_clear(&r);
	return rc;
}

/*
 * The catalog is locked by another commit (a rename, a recursive delete,
 * anything that scanned a prefix): may @p cat's entries go in under that
 * lock?  The lock guards only what the commit's prefix scans read, and
 * its kt.lks names them (guard_ops); an entry that none of them starts
 * can change nothing they read, so creates elsewhere in the tree need not
 * wait for a long commit.  The write is guarded on the same lock and
 * scope.  *how: 1 the entries are in; 0 one is in a scanned range (or
 * the lock says nothing of its scope): wait for the lock; 2 the lock
 * changed meanwhile: try again.
 */
static int catalog_past_lock(rad *e, objw *cat, int *how)
{
	rados_write_op_t op;
	oread r;
	oreq q;
	size_t i, at, idl;
	int rc;

	*how = 0;
	memset(&r, 0, sizeof(r));
	memset(&q, 0, sizeof(q));
	if ((rc = oread_once(e, cat->oid, &q, &r)) != 0)
		return rc;
	idl = strlen(r.lock);
	if (!r.exists || idl == 0 || strcmp(r.lock, FREE) == 0) {
		*how = 2;
		goto out;
	}
	if (r.scope.len <= idl || memcmp(r.scope.p, r.lock, idl + 1) != 0)
		goto out;
	for (at = idl + 1; at < r.scope.len;) {
		const char *pre = r.scope.p + at;
		size_t pl = strnlen(pre, r.scope.len - at);
		for (i = 0; i < cat->nw; i++) {
			/* Entry keys are "." + esc(partition); esc keeps
			 * prefixes, so compare encoded. */
			kt__buf ek = {0};
			int covered;
			if ((rc = okey(&ek, kt__sl(pre, pl))) != 0)
				goto out;
			covered = cat->kl[i] >= ek.len &&
				  memcmp(cat->k[i], ek.p, ek.len) == 0;
			kt__buf_free(&ek);
			if (covered)
				goto out;
		}
		at += pl + 1;
	}
	op = rados_create_write_op();
	rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ, r.lock, idl);
	rados_write_op_cmpxattr(op, LKSCOPE, LIBRADOS_CMPXATTR_OP_EQ,
				r.scope.p, r.scope.len);
	objw_ops(op, cat);
	rc = wop_run(e, op, cat->oid);
	rados_release_write_op(op);
	if (rc == 0) {
		*how = 1;
	} else if (rc == -ECANCELED) {
		*how = 2;
		rc = 0;
	} else {
		rc = rerr(rc, "adding to the catalog", cat->oid);
	}
out:
	oread_clear(&r);
	return rc;
}

/* Add the catalog entries for the partitions in @p parts, outside any
 * commit: an entry for a partition that ends up without rows is harmless,
 * and a prefix scan that ran before the entry appeared is guarded on the
 * catalog's version. */
static int catalog_add(rad *e, objw *cat)
{
	rados_write_op_t op;
	int rc, how;

	for (;;) {
		op = rados_create_write_op();
		rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ, FREE,
					1);
		objw_ops(op, cat);
		rc = wop_run(e, op, cat->oid);
		rados_release_write_op(op);
		if (rc != -ECANCELED)
			break;
		if ((rc = catalog_past_lock(e, cat, &how)) != 0)
			return rc;
		if (how == 1)
			return 0;
		if (how == 0 && (rc = wait_free(e, cat->oid)) != 0)
			return rc;
	}
	if (rc == -ENOENT)
		return kt__err(KT_EIO, "ceph: the tree's catalog object '%s' "
			       "is gone", cat->oid);
	if (rc < 0)
		return rerr(rc, "adding to the catalog", cat->oid);
	return 0;
}

/* One object: one guarded compound operation. */
static void marks_fold(rad *e, const char *oid, rados_write_op_t op,
		       struct pmark **taken);
static void marks_back(rad *e, struct pmark *taken, int done);

static int commit_one(rad *e, objw *o)
{
	rados_write_op_t op;
	int rc, make = must_make(o);

	fin_wait_mine(e, o->oid);
	op = rados_create_write_op();
	if (make) {
		guard_ops(op, e, o, 1, FREE);
	} else if (o->saw != NULL) {
		rados_write_op_assert_version(op, o->saw->ver);
	} else {
		rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ, FREE,
					1);
	}
	objw_ops(op, o);
	marks_fold(e, o->oid, op, &o->marks);
	rc = wop_run(e, op, o->oid);
	rados_release_write_op(op);
	marks_back(e, o->marks, rc == 0);
	o->marks = NULL;
	if (rc == -ENOENT && o->saw == NULL) {
		/* A blind write to an object that does not exist yet. */
		op = rados_create_write_op();
		guard_ops(op, e, o, 1, FREE);
		objw_ops(op, o);
		rc = wop_run(e, op, o->oid);
		rados_release_write_op(op);
	}
	if (rc == -ECANCELED && o->saw == NULL) {
		/* Locked by another commit: settle it, then run again. */
		if ((rc = wait_free(e, o->oid)) != 0)
			return rc;
		return KT__ERETRY;
	}
	if (rc < 0 && is_conflict(rc))
		return KT__ERETRY;
	if (rc < 0)
		return rerr(rc, "writing", o->oid);
	return 0;
}

/* With a record on primary @p prim (NULL: the record has an object of
 * its own), what the lock of @p o writes besides kt.lk: on the primary
 * the record's @p body, on the others the primary's name. */
static void lock_extra(rados_write_op_t op, const objw *o, const objw *prim,
		       const char *txid, const kt__buf *body,
		       const kt__buf *catk)
{
	char tn[128], dn[128];

	if (prim == NULL)
		return;
	if (o == prim) {
		pxa_names(tn, dn, sizeof(tn), txid);
		rados_write_op_setxattr(op, dn, body->p, body->len);
		if (catk != NULL && catk->len > 0) {
			snprintf(tn, sizeof(tn), PRI_CAT "%s", txid);
			rados_write_op_setxattr(op, tn, catk->p, catk->len);
		}
	} else {
		rados_write_op_setxattr(op, PRIX, prim->oid,
					strlen(prim->oid));
	}
}

static void shard_note(rad *e, const char *oid)
{
	pthread_mutex_lock(&e->mu);
	if (e->shard_ok == NULL || strcmp(e->shard_ok, oid) != 0) {
		free(e->shard_ok);
		e->shard_ok = strdup(oid);
	}
	pthread_mutex_unlock(&e->mu);
}

/* Step 2 of a commit over several objects: lock them all in parallel. */
void (*kt__rados_test_prim_locked)(void);
int kt__rados_test_drop_prim;

static int lock_all(rad *e, oset *s, const char *txid, const char **busy,
		    const objw *prim, const kt__buf *body, const kt__buf *catk)
{
	size_t i;
	int conflict = 0, err = 0;

	*busy = NULL;
	for (i = 0; i < s->n; i++)
		fin_wait_mine(e, s->o[i].oid);
	/* The primary's first: a client killed while sending leaves, as
	 * far as it can, no lock that points to a record that never came
	 * (which its readers would wait twice the budget for). */
	for (i = 0; i <= s->n; i++) {
		objw *o = i == 0 ? (objw *)prim : &s->o[i - 1];
		if (o == NULL || (i > 0 && o == prim))
			continue;
		if (i == 0 && kt__rados_test_drop_prim && is_par(txid)) {
			/* A test: as if lost on its way. */
			o->op = rados_create_write_op();
			o->c = NULL;
			o->rc = -ECANCELED;
			continue;
		}
		o->op = rados_create_write_op();
		guard_ops(o->op, e, o, must_make(o), txid);
		lock_extra(o->op, o, prim, txid, body, catk);
		marks_fold(e, o->oid, o->op, &o->marks);
		objw_send(e, o);
		if (i == 0 && kt__rados_test_prim_locked != NULL &&
		    is_par(txid)) {
			/* A test looks at a parallel commit with its
			 * primary's lock in and the others on their way. */
			if (o->c != NULL)
				rados_aio_wait_for_complete(o->c);
			kt__rados_test_prim_locked();
		}
	}
	for (i = 0; i < s->n; i++) {
		objw *o = &s->o[i];
		objw_reap(o);
		marks_back(e, o->marks, o->rc == 0);
		o->marks = NULL;
		if (o->rc == -ENOENT && o->saw == NULL) {
			rados_write_op_t op = rados_create_write_op();
			guard_ops(op, e, o, 1, txid);
			lock_extra(op, o, prim, txid, body, catk);
			o->rc = wop_run(e, op, o->oid);
			rados_release_write_op(op);
		}
		if (o->rc == 0) {
			o->locked = 1;
			if (is_idshard(o->part))
				shard_note(e, o->oid);
		} else if (is_conflict(o->rc)) {
			conflict = 1;
			if (o->saw == NULL && o->rc == -ECANCELED)
				*busy = o->oid;
		} else if (err == 0) {
			err = rerr(o->rc, "locking", o->oid);
		}
	}
	if (err != 0)
		return err;
	return conflict ? KT__ERETRY : 0;
}

/*
 * Step 4 runs in the background.  Once the record says C the commit
 * stands, whoever applies it, so the caller need not wait for it: the
 * apply-and-unlock operations are sent and the call returns.  This
 * client's own later operations on those objects reach each OSD after
 * them (RADOS keeps one client's operations on one object in order);
 * another client that meets a lock first rolls the commit forward itself,
 * as it would after a crash.  The record may only go once every object
 * has been applied (a lock without a record is undone), so each commit in
 * flight is kept here until its operations are complete and then its
 * record is removed, also in the background.  fin_reap() collects what
 * has finished; it runs before each commit, and at close, waiting.  The
 * background operations' completions have a callback (fin_done), which
 * only counts them: nobody waits for them on the way of a call (and the
 * benchmark's counting shim, bench/radoscount.c, tells them apart so).
 */
#define FIN_MAX 64  /* commits in flight before a commit waits for some */

typedef struct fin {
	struct fin *next;
	char txid[64];
	size_t n;
	rados_completion_t *c;  /* the apply of each object */
	rados_write_op_t *op;
	size_t sent;            /* applies sent */
	int done;               /* completions called back (fin_done) */
	int removing;           /* the record's removal is under way */
	rados_completion_t rc;
	rados_write_op_t rop;
	kt__buf name;           /* the record's object, or the primary */
	int onobj;              /* the record is on the primary, name */
	size_t want;            /* applies to send */
	int ready;              /* onobj: all applied; remove the record */
	/* A parallel commit's: the primary's apply (pop, pc) goes first,
	 * and its callback (fin_prim_cb) sends the others' and sets
	 * launched; pfail, the primary's apply failed (the locks are left
	 * for readers to settle).  oids: the others' names, each ended by a
	 * NUL, for fin_wait_mine. */
	rad *e;
	int par;
	size_t pidx;            /* the primary's place */
	int launched;
	int pfail;
	rados_completion_t pc;
	rados_write_op_t pop;
	kt__buf oids;
} fin;

/*
 * A record kept on a primary (prim_*) is removed once every other object
 * of its commit is applied.  A removal of its own would be a write to the
 * primary after the call returned, which changes the object's version
 * under this client's next reads of it (a create in the same directory
 * reads the parent, the primary of the create before), and a commit
 * guarded on such a read would run again.  So the removal rides with this
 * client's next write to that object instead (its lock, or a commit on it
 * alone), costing nothing; what has not gone that way by close, or once
 * MARKS_MAX wait, is removed with operations of its own.  A client killed
 * first leaves the record; kt_repair removes it (sweep_marks).
 */
#define MARKS_MAX 64
#define MARKS_FOLD_MAX 8       /* removals added to one operation */

typedef struct pmark {
	struct pmark *next;
	char txid[64];
	char oid[];
} pmark;

static void marks_add(rad *e, const char *oid, const char *txid)
{
	size_t n = strlen(oid);
	pmark *m = malloc(sizeof(*m) + n + 1);

	if (m == NULL)
		return; /* left for kt_repair */
	memcpy(m->oid, oid, n + 1);
	snprintf(m->txid, sizeof(m->txid), "%s", txid);
	m->next = e->marks;
	e->marks = m;
	e->nmarks++;
}

static void prim_remove_op(rados_write_op_t op, const char *txid);

/* Add to @p op, a write to @p oid, the removal of the finished records on
 * it; *@p taken keeps them until marks_back. */
static void marks_fold(rad *e, const char *oid, rados_write_op_t op,
		       pmark **taken)
{
	pmark **pp, *m;
	int n = 0;

	*taken = NULL;
	pthread_mutex_lock(&e->mu);
	for (pp = &e->marks; (m = *pp) != NULL && n < MARKS_FOLD_MAX;) {
		if (strcmp(m->oid, oid) != 0) {
			pp = &m->next;
			continue;
		}
		*pp = m->next;
		e->nmarks--;
		m->next = *taken;
		*taken = m;
		prim_remove_op(op, m->txid);
		n++;
	}
	pthread_mutex_unlock(&e->mu);
}

/* The operation marks_fold added @p taken to is over: @p done, they are
 * gone; else they stay to be removed. */
static void marks_back(rad *e, pmark *taken, int done)
{
	pmark *m;

	while ((m = taken) != NULL) {
		taken = m->next;
		if (done) {
			free(m);
			continue;
		}
		pthread_mutex_lock(&e->mu);
		m->next = e->marks;
		e->marks = m;
		e->nmarks++;
		pthread_mutex_unlock(&e->mu);
	}
}

/* Remove every finished record still on its primary, in parallel. */
static void marks_flush(rad *e)
{
	pmark *all, *m;
	size_t n = 0, i;
	rados_completion_t *c;
	rados_write_op_t *op;

	pthread_mutex_lock(&e->mu);
	all = e->marks;
	e->marks = NULL;
	n = e->nmarks;
	e->nmarks = 0;
	pthread_mutex_unlock(&e->mu);
	c = calloc(n ? n : 1, sizeof(*c));
	op = calloc(n ? n : 1, sizeof(*op));
	for (m = all, i = 0; m != NULL && c != NULL && op != NULL && i < n;
	     m = m->next, i++) {
		if ((op[i] = rados_create_write_op()) == NULL)
			continue;
		prim_remove_op(op[i], m->txid);
		if (rados_aio_create_completion2(NULL, NULL, &c[i]) != 0) {
			c[i] = NULL;
			continue;
		}
		if (rados_aio_write_op_operate(op[i], e->io, c[i], m->oid,
					       NULL, 0) != 0) {
			rados_aio_release(c[i]);
			c[i] = NULL;
		}
	}
	for (i = 0; c != NULL && op != NULL && i < n; i++) {
		if (c[i] != NULL) {
			rados_aio_wait_for_complete(c[i]);
			rados_aio_release(c[i]);
		}
		if (op[i] != NULL)
			rados_release_write_op(op[i]);
	}
	free(c);
	free(op);
	while ((m = all) != NULL) {
		all = m->next;
		free(m);
	}
}

static void fin_done(rados_completion_t c, void *arg)
{
	(void)c;
	__atomic_add_fetch(&((fin *)arg)->done, 1, __ATOMIC_RELEASE);
}

/* Have @p n of @p f's completions been called back? */
static int fin_has(fin *f, size_t n, int wait)
{
	while ((size_t)__atomic_load_n(&f->done, __ATOMIC_ACQUIRE) < n) {
		if (!wait)
			return 0;
		sleep_ms(1);
	}
	return 1;
}

static void fin_free(fin *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		if (f->c[i] != NULL)
			rados_aio_release(f->c[i]);
		if (f->op[i] != NULL)
			rados_release_write_op(f->op[i]);
	}
	if (f->rc != NULL)
		rados_aio_release(f->rc);
	if (f->rop != NULL)
		rados_release_write_op(f->rop);
	if (f->pc != NULL)
		rados_aio_release(f->pc);
	if (f->pop != NULL)
		rados_release_write_op(f->pop);
	kt__buf_free(&f->oids);
	kt__buf_free(&f->name);
	free(f->c);
	free(f->op);
	free(f);
}

/* Advance @p f: start the record's removal once every apply is complete
 * (and succeeded, or found the lock gone: someone else finished it).  1
 * when @p f is done with, 0 when not yet. */
static int fin_step(rad *e, fin *f, int wait)
{
	size_t i;

	if (f->par) {
		while (!__atomic_load_n(&f->launched, __ATOMIC_ACQUIRE)) {
			if (!wait)
				return 0;
			sleep_ms(1);
		}
		/* The locks stay, for readers to settle; done once
		 * fin_launched is through with f. */
		if (f->pfail)
			return fin_has(f, 1, wait);
	}
	if (!f->removing) {
		int ok = f->sent == f->want;
		if (!fin_has(f, f->sent + (size_t)f->par, wait))
			return 0;
		for (i = 0; i < f->n; i++) {
			int rc;
			if (f->c[i] == NULL)
				continue;
			rc = rados_aio_get_return_value(f->c[i]);
			if (rc < 0 && rc != -ECANCELED && rc != -ENOENT)
				ok = 0;
		}
		/* A failed apply leaves the locks of a committed record:
		 * the next reader rolls it forward, and removes it. */
		if (!ok)
			return 1;
		if (f->onobj) {
			f->ready = 1; /* removed with a later write (marks_*) */
			return 1;
		}
		f->removing = 1;
		f->rop = rados_create_write_op();
		if (f->rop == NULL ||
		    rados_aio_create_completion2(f, fin_done, &f->rc) != 0) {
			f->rc = NULL;
			return 1;
		}
		rados_write_op_remove(f->rop);
		if (rados_aio_write_op_operate(f->rop, e->io, f->rc,
					       f->name.p, NULL, 0) != 0)
			return 1;
	}
	return fin_has(f, f->sent + 1, wait);
}

/* Collect the commits in flight that are done; with @p wait, all. */
static void fin_reap(rad *e, int wait)
{
	fin **pp, *f, *done = NULL;

	pthread_mutex_lock(&e->mu);
	for (pp = &e->fins; (f = *pp) != NULL;) {
		if (fin_step(e, f, wait || e->nfins > FIN_MAX)) {
			*pp = f->next;
			e->nfins--;
			if (f->ready)
				marks_add(e, f->name.p, f->txid);
			f->next = done;
			done = f;
		} else {
			pp = &f->next;
		}
	}
	pthread_mutex_unlock(&e->mu);
	while ((f = done) != NULL) {
		done = f->next;
		fin_free(f);
	}
}

/* Send step 4 of commit @p txid, whose record is @p name, and keep it in
 * flight.  Nothing to report: the commit stands either way.  With
 * @p prim, the record is on that object, already applied: the others
 * are, and then the record is removed from it. */
/* A fin for commit @p txid over the objects of @p s, whose record is
 * @p name; NULL when out of memory (then the locks stay for readers to
 * settle). */
static fin *fin_new(const oset *s, const char *txid, const char *name,
		    size_t len)
{
	fin *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	if ((f->c = calloc(s->n, sizeof(*f->c))) == NULL ||
	    (f->op = calloc(s->n, sizeof(*f->op))) == NULL ||
	    kt__buf_set(&f->name, name, len) != 0) {
		fin_free(f);
		return NULL;
	}
	snprintf(f->txid, sizeof(f->txid), "%s", txid);
	f->n = s->n;
	return f;
}

static void fin_start(rad *e, oset *s, const char *txid, const kt__buf *name,
		      const objw *prim)
{
	fin *f = fin_new(s, txid, name->p, name->len);
	size_t i;

	if (f == NULL)
		return;
	f->onobj = prim != NULL;
	f->want = s->n - (prim != NULL);
	for (i = 0; i < s->n; i++) {
		if (&s->o[i] == prim)
			continue;
		if ((f->op[i] = rados_create_write_op()) == NULL)
			continue;
		objw_finish_op(f->op[i], &s->o[i], txid, 1);
		if (rados_aio_create_completion2(f, fin_done, &f->c[i]) != 0) {
			f->c[i] = NULL;
			continue;
		}
		if (rados_aio_write_op_operate(f->op[i], e->io, f->c[i],
					       s->o[i].oid, NULL, 0) != 0) {
			rados_aio_release(f->c[i]);
			f->c[i] = NULL;
			continue;
		}
		f->sent++;
	}
	pthread_mutex_lock(&e->mu);
	f->next = e->fins;
	e->fins = f;
	e->nfins++;
	pthread_mutex_unlock(&e->mu);
}

/* @p f's other applies are sent (or never will be).  Its last touch of
 * @p f: fin_step frees it once done counts this one. */
static void fin_launched(rad *e, fin *f)
{
	pthread_mutex_lock(&e->fin_mu);
	__atomic_store_n(&f->launched, 1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&e->par_unlaunched, 1, __ATOMIC_RELEASE);
	e->fin_gen++;
	pthread_cond_broadcast(&e->fin_cv);
	pthread_mutex_unlock(&e->fin_mu);
	__atomic_add_fetch(&f->done, 1, __ATOMIC_RELEASE);
}

/* The primary's apply of a parallel commit is in (or someone else
 * applied it first, ECANCELED): send the other objects' applies.  Any
 * other answer leaves them locked, for readers to roll forward (sending
 * them would unlock objects of a commit that readers cannot yet tell
 * from one whose lock never came). */
static void fin_prim_cb(rados_completion_t c, void *arg)
{
	fin *f = arg;
	rad *e = f->e;
	int rv = rados_aio_get_return_value(c);
	size_t i, sent = 0, at = 0;

	if (rv == 0 || rv == -ECANCELED) {
		for (i = 0; i < f->n; i++) {
			const char *oid = f->oids.p + at;
			if (i == f->pidx)
				continue;
			at += strlen(oid) + 1;
			if (f->op[i] == NULL)
				continue;
			if (rados_aio_create_completion2(f, fin_done,
							 &f->c[i]) != 0) {
				f->c[i] = NULL;
				continue;
			}
			if (rados_aio_write_op_operate(f->op[i], f->e->io,
						       f->c[i], oid, NULL,
						       0) != 0) {
				rados_aio_release(f->c[i]);
				f->c[i] = NULL;
				continue;
			}
			sent++;
		}
	} else {
		f->pfail = 1;
	}
	f->sent = sent;
	fin_launched(e, f);
}

/* Is @p oid an object of one of this handle's parallel commits whose
 * apply there is not sent yet?  Then wait until it is, so that what this
 * client sends to it next reaches it after the apply. */
static void fin_wait_mine(rad *e, const char *oid)
{
	for (;;) {
		uint64_t g;
		fin *f;
		int found = 0;
		if (__atomic_load_n(&e->par_unlaunched, __ATOMIC_ACQUIRE) == 0)
			return; /* the usual case, at no cost */
		pthread_mutex_lock(&e->fin_mu);
		g = e->fin_gen;
		pthread_mutex_unlock(&e->fin_mu);
		pthread_mutex_lock(&e->mu);
		for (f = e->fins; f != NULL && !found; f = f->next) {
			size_t at;
			if (!f->par ||
			    __atomic_load_n(&f->launched, __ATOMIC_ACQUIRE))
				continue;
			for (at = 0; at < f->oids.len && !found;
			     at += strlen(f->oids.p + at) + 1)
				found = strcmp(f->oids.p + at, oid) == 0;
		}
		pthread_mutex_unlock(&e->mu);
		if (!found)
			return;
		pthread_mutex_lock(&e->fin_mu);
		while (e->fin_gen == g) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 20 * 1000000L;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&e->fin_cv, &e->fin_mu, &until);
		}
		pthread_mutex_unlock(&e->fin_mu);
	}
}

/* Send the commit of parallel commit @p txid, decided: its primary
 * @p prim's apply now, the others' from fin_prim_cb. */
static void fin_start_par(rad *e, oset *s, const char *txid,
			  const objw *prim)
{
	fin *f = fin_new(s, txid, prim->oid, strlen(prim->oid));
	size_t i;
	int rc = 0;

	if (f == NULL)
		return;
	if ((f->pop = rados_create_write_op()) == NULL) {
		fin_free(f);
		return;
	}
	f->e = e;
	f->par = 1;
	f->onobj = 1;
	f->want = s->n - 1;
	prim_end_op(f->pop, txid, prim);
	for (i = 0; i < s->n && rc == 0; i++) {
		if (&s->o[i] == prim) {
			f->pidx = i;
			continue;
		}
		rc = kt__buf_add(&f->oids, s->o[i].oid, strlen(s->o[i].oid) + 1);
		if (rc == 0 && (f->op[i] = rados_create_write_op()) != NULL)
			objw_finish_op(f->op[i], &s->o[i], txid, 1);
	}
	if (rc != 0) {
		fin_free(f);
		return;
	}
	__atomic_add_fetch(&e->par_unlaunched, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&e->mu);
	f->next = e->fins;
	e->fins = f;
	e->nfins++;
	pthread_mutex_unlock(&e->mu);
	if (rados_aio_create_completion2(f, fin_prim_cb, &f->pc) != 0 ||
	    rados_aio_write_op_operate(f->pop, e->io, f->pc, prim->oid, NULL,
				       0) != 0) {
		f->pfail = 1;
		fin_launched(e, f);
	}
}

/* Step 1 of a commit over several objects: the record, written with an
 * operation made by the caller, and alongside it the new catalog entries
 * of @p cat (if any); sent by rw_send, waited for by rw_wait. */
typedef struct rwrite {
	rados_completion_t c, cc;
	rados_write_op_t cop;
	int rc, crc;
} rwrite;

static void rw_send(rad *e, rwrite *w, rados_write_op_t op, const char *name,
		    objw *cat)
{
	memset(w, 0, sizeof(*w));
	if (cat != NULL && cat->nw > 0 &&
	    (w->cop = rados_create_write_op()) != NULL) {
		rados_write_op_cmpxattr(w->cop, LK, LIBRADOS_CMPXATTR_OP_EQ,
					FREE, 1);
		objw_ops(w->cop, cat);
		w->crc = rados_aio_create_completion2(NULL, NULL, &w->cc);
		if (w->crc == 0)
			w->crc = rados_aio_write_op_operate(w->cop, e->io,
							    w->cc, cat->oid,
							    NULL, 0);
	}
	if (op == NULL)
		return; /* the record goes with the primary's lock */
	w->rc = rados_aio_create_completion2(NULL, NULL, &w->c);
	if (w->rc == 0)
		w->rc = rados_aio_write_op_operate(op, e->io, w->c, name, NULL,
						   0);
}

/* 0: the record and the catalog entries are in; else an error. */
static int rw_wait(rad *e, rwrite *w, const char *name, objw *cat)
{
	if (w->rc == 0 && w->c != NULL) {
		rados_aio_wait_for_complete(w->c);
		w->rc = rados_aio_get_return_value(w->c);
	}
	if (w->c != NULL)
		rados_aio_release(w->c);
	if (w->cop != NULL) {
		if (w->crc == 0) {
			rados_aio_wait_for_complete(w->cc);
			w->crc = rados_aio_get_return_value(w->cc);
		}
		if (w->cc != NULL)
			rados_aio_release(w->cc);
		rados_release_write_op(w->cop);
	}
	if (w->rc < 0)
		return rerr(w->rc, "writing commit record", name);
	/* The catalog locked by another commit, or any other failure:
	 * the plain way, which settles a lock and says what went wrong. */
	if (cat != NULL && cat->nw > 0 && (w->cop == NULL || w->crc != 0))
		return catalog_add(e, cat);
	return 0;
}


/*
 * The time a commit over @p nobj objects with a record of @p len bytes
 * may take to write its record and locks: the lease, and more for a
 * large one (a load, a rename or a delete of a big subtree), so that it
 * can finish at all.  The id carries it; readers that meet a lock wait
 * for it before they roll the commit back (lock_settle), so a client
 * killed during a large commit holds its objects that much longer.
 */
#define BUDGET_PER_OBJECT_MS 4
#define BUDGET_BYTES_PER_MS 16384
#define BUDGET_MAX_MS (3600u * 1000u)
#define BUDGET_SLOW_MAX 4

static unsigned int commit_budget(rad *e, size_t nobj, size_t len)
{
	uint64_t b = (uint64_t)nobj * BUDGET_PER_OBJECT_MS +
		     len / BUDGET_BYTES_PER_MS;
	unsigned int slow;

	/* The usual case, a few objects: just the lease. */
	if (nobj <= 64 && len <= 1024 * 1024)
		b = 0;
	/* A machine or cluster slower than the allowance above made a
	 * commit of this handle run out of its budget: give more. */
	pthread_mutex_lock(&e->mu);
	slow = e->slow;
	pthread_mutex_unlock(&e->mu);
	b = (e->lease_ms + b) << slow;
	return b > BUDGET_MAX_MS ? BUDGET_MAX_MS : (unsigned int)b;
}

void (*kt__rados_test_pending)(void);
int kt__rados_test_layout;
unsigned long kt__rados_test_onobj;
unsigned long kt__rados_test_marks_swept;
int kt__rados_test_stop_after_commit;

/* The object of @p s that keeps the commit's record (layout 3), or NULL
 * when the record gets an object of its own.  Best an id shard: every
 * create, rename and delete writes one, this client's creates write the
 * same one for 1024 ids, and none reads it first, so the record's removal
 * rides with this client's next lock of it (marks_fold) and changes no
 * version another read of this client depends on.  Else one that exists
 * already and is written.  Never the catalog (its lock has a scope, and
 * every new partition writes it) nor a stripe of blocks. */
static const objw *pick_primary(rad *e, const oset *s, size_t len)
{
	const objw *best = NULL;
	size_t i;
	int score, bs = -1;

	if (e->layout < 3 || len > ONOBJ_MAX_BYTES || s->n > ONOBJ_MAX_OBJECTS)
		return NULL;
	pthread_mutex_lock(&e->mu);
	for (i = 0; i < s->n; i++) {
		const objw *o = &s->o[i];
		if (o->scope.len > 0 || oid_is_stripe(e, o->oid) ||
		    strcmp(o->oid + e->treelen, "!cat") == 0)
			continue;
		/* An id shard this client has locked before, or else an
		 * object read and found: one that may not exist yet would
		 * take a second lock operation (made after the first failed),
		 * and meanwhile the others' locks would point to a record
		 * that is not there, which their readers wait twice the
		 * budget for if the client dies. */
		if (is_idshard(o->part) && o->nw > 0 && e->shard_ok != NULL &&
		    strcmp(o->oid, e->shard_ok) == 0) {
			score = 4;
		} else if (o->saw != NULL && o->saw->exists &&
			   len <= ONOBJ_SHARED_MAX_BYTES) {
			/* Others read it, and their reads carry its
			 * xattrs: only a small record goes there. */
			score = 2 + (o->nw > 0);
		} else {
			continue;
		}
		if (score > bs) {
			bs = score;
			best = o;
		}
	}
	pthread_mutex_unlock(&e->mu);
	return best;
}

static int commit_many(rad *e, oset *s, objw *cat)
{
	char txid[80];
	kt__buf name = {0}, body = {0}, catk = {0};
	rados_write_op_t op = NULL;
	const char *busy = NULL;
	const objw *prim;
	unsigned int budget;
	uint64_t seq, t0;
	rwrite w;
	int rc, rc2, rrc, par = 0, ended;
	size_t i;

	pthread_mutex_lock(&e->mu);
	seq = ++e->txseq;
	pthread_mutex_unlock(&e->mu);
	if ((rc = record_body(&body, s->o, s->n)) != 0)
		goto out;
	budget = commit_budget(e, s->n, body.len);
	/* Layout 4: a record on a primary makes a parallel commit, whose
	 * primary also names its new catalog entries (which count with
	 * the record's size). */
	if (e->layout >= 4 && (cat == NULL || cat->nw <= ONOBJ_MAX_OBJECTS)) {
		par = 1;
		for (i = 0; cat != NULL && i < cat->nw && rc == 0; i++)
			if ((rc = kt__buf_add(&catk, cat->k[i], cat->kl[i])) ==
			    0)
				rc = kt__buf_addc(&catk, '\0');
		if (rc != 0)
			goto out;
	}
	prim = pick_primary(e, s, body.len + catk.len);
	if (prim == NULL)
		par = 0;
	snprintf(txid, sizeof(txid),
		 "%" PRIx64 ".%" PRIx64 ".%" PRIx64 ".%x%s", e->inst,
		 (uint64_t)getpid(), seq, budget,
		 prim == NULL ? "" : par ? ".p" : ".o");
	if (prim != NULL)
		rc = kt__buf_set(&name, prim->oid, strlen(prim->oid));
	else if ((rc = name_of(&name, e, "!tx.")) == 0)
		rc = kt__buf_add(&name, txid, strlen(txid));
	if (rc != 0)
		goto out;
	/* 1 and 2 together: the record, pending, with new catalog entries
	 * (they only need to be in before the commit point), and the
	 * locks.  A reader that meets a lock before its record exists
	 * waits (lock_settle); the record must therefore be in within the
	 * budget the id names, or the commit gives up: after twice that a
	 * reader may take a lock without a record for one that never will
	 * have one.  A record on a primary goes with its lock. */
	t0 = now_ms();
	if (prim == NULL) {
		op = rados_create_write_op();
		rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
		rados_write_op_setxattr(op, STX, "P", 1);
		rados_write_op_write_full(op, body.p, body.len);
	}
	rw_send(e, &w, op, name.p, cat);
	rc = lock_all(e, s, txid, &busy, prim, &body, &catk);
	rrc = rw_wait(e, &w, name.p, cat);
	if (op != NULL)
		rados_release_write_op(op);
	if (rrc != 0) {
		/* No record, or no catalog entries: undo the locks.  A
		 * record that did get written is rolled back below. */
		if (rc == 0 || rc == KT__ERETRY)
			rc = rrc;
		if (w.rc < 0) {
			(void)finish_all(e, s->o, s->n, txid, 0, 1);
			goto out;
		}
	} else if (rc == 0 && now_ms() - t0 >= budget) {
		rc = KT__ERETRY; /* too slow to be sure: give up */
		pthread_mutex_lock(&e->mu);
		if (e->slow < BUDGET_SLOW_MAX)
			e->slow++;
		pthread_mutex_unlock(&e->mu);
	} else if (rc == 0 && e->slow > 0 && now_ms() - t0 < budget / 8) {
		pthread_mutex_lock(&e->mu); /* fast again */
		if (e->slow > 0)
			e->slow--;
		pthread_mutex_unlock(&e->mu);
	}
	if (rc == 0 && kt__rados_test_pending != NULL)
		kt__rados_test_pending();
	if (par && kt__rados_test_drop_prim) {
		rc = KT__ERETRY; /* a test: killed with its locks sent */
		goto out;
	}
	if (rc == 0 && par) {
		/* Every lock and entry in within the budget: committed
		 * (Parallel commits).  The applies go in the background. */
		__atomic_add_fetch(&kt__rados_test_onobj, 1, __ATOMIC_RELAXED);
		if (!kt__rados_test_stop_after_commit)
			fin_start_par(e, s, txid, prim);
		goto out;
	}
	if (rc == 0) {
		/* 3. The commit point. */
		rc2 = prim != NULL ? prim_end(e, prim->oid, txid, prim)
				   : rec_flip(e, txid, 'C');
		if (rc2 < 0) {
			/* Whether it committed is unknown; whoever meets
			 * its locks next settles it from the record. */
			rc = rc2;
			goto out;
		}
		if (rc2 == 0 && prim != NULL)
			__atomic_add_fetch(&kt__rados_test_onobj, 1,
					   __ATOMIC_RELAXED);
		if (rc2 == 0 && kt__rados_test_stop_after_commit) {
			rc = 0;
			goto out;
		}
		if (rc2 == 0) {
			/* 4. Apply and unlock, in the background (fin_*). */
			fin_start(e, s, txid, &name, prim);
			rc = 0;
			goto out;
		}
		/* Rolled back by another client meanwhile. */
		rc = KT__ERETRY;
	}
	/* Abort: make sure no one can commit it, then unlock. */
	if (prim != NULL) {
		/* A parallel commit's primary may be locked although its
		 * answer said otherwise (lost): then readers may find every
		 * lock in and commit it, so it is rolled back there first,
		 * in any case, before anything is unlocked. */
		rc2 = prim->locked || par ? prim_abort(e, prim->oid, txid) : 1;
		if (rc2 < 0) {
			rc = rc2;
			goto out;
		}
		ended = rc2 == 0;
		if (rc2 > 0 && par) {
			/* Not pending: a reader that found every lock in may
			 * have committed it (it was late). */
			pxa x;
			if ((rc2 = pxa_read(e, prim->oid, txid, &x)) != 0) {
				rc = rc2;
				goto out;
			}
			rc2 = x.t == 'C';
			pxa_free(&x);
			if (rc2) {
				fin_start(e, s, txid, &name, prim);
				rc = 0;
				goto out;
			}
		}
		/* Every object, not only those known locked: a lock whose
		 * answer was lost may have been taken (the unlock is
		 * guarded on it). */
		if (finish_all(e, s->o, s->n, txid, 0, 0) == 0 &&
		    (prim->locked || ended))
			prim_remove(e, prim->oid, txid);
	} else {
		rc2 = rec_flip(e, txid, 'A');
		if (rc2 < 0) {
			rc = rc2;
			goto out;
		}
		if (finish_all(e, s->o, s->n, txid, 0, 0) == 0)
			rec_remove(e, txid);
	}
	if (rc == KT__ERETRY && busy != NULL && (rc2 = wait_free(e, busy)) != 0)
		rc = rc2;
out:
	kt__buf_free(&name);
	kt__buf_free(&body);
	kt__buf_free(&catk);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Staged commits: the writer (see "Staged commits" above) */

static int stage_lost(stage *g)
{
	int lost;

	pthread_mutex_lock(&g->bmu);
	lost = g->lost;
	pthread_mutex_unlock(&g->bmu);
	return lost;
}

/* The heartbeat: the header's kt.hb rewritten every quarter lease while
 * it is P.  Another client rolls the stage back only once the beat has
 * stood still for a lease. */
static void *stage_beat(void *arg)
{
	stage *g = arg;
	rad *e = g->e;
	uint64_t n = 0;

	pthread_mutex_lock(&g->bmu);
	while (!g->bstop) {
		struct timespec ts;
		rados_write_op_t op;
		char v[24];
		int rc;
		kt__deadline(&ts, CLOCK_MONOTONIC,
			     e->lease_ms / 4 ? e->lease_ms / 4 : 1);
		(void)pthread_cond_timedwait(&g->bcv, &g->bmu, &ts);
		if (g->bstop)
			break;
		pthread_mutex_unlock(&g->bmu);
		snprintf(v, sizeof(v), "%" PRIu64, ++n);
		op = rados_create_write_op();
		rados_write_op_cmpxattr(op, STX, LIBRADOS_CMPXATTR_OP_EQ, "P",
					1);
		rados_write_op_setxattr(op, STG_BEAT, v, strlen(v));
		rc = wop_run(e, op, g->name.p);
		rados_release_write_op(op);
		pthread_mutex_lock(&g->bmu);
		if (rc == -ECANCELED || rc == -ENOENT) {
			g->lost = 1;
			break;
		}
	}
	pthread_mutex_unlock(&g->bmu);
	return NULL;
}

static void stage_free(rad *e, stage *g)
{
	if (g->snap != NULL)
		rad_snapshot_free(&e->base, g->snap);
	if (g->multi != NULL)
		rad_snapshot_free(&e->base, g->multi);
	kt__buf_free(&g->name);
	free(g->busy);
	free(g);
}

/* The fence of the seam, on RADOS: open a staged commit for the calling
 * thread.  Nobody is held back, so the prefixes are not needed. */
static int rad_fence(kt__rows *r, const kt__slice *pre, size_t n,
		     uint64_t *token)
{
	rad *e = (rad *)r;
	rados_write_op_t op;
	stage *g;
	uint64_t seq;
	int rc, open;

	(void)pre;
	(void)n;
	pthread_mutex_lock(&e->mu);
	open = e->stage != NULL;
	seq = ++e->txseq;
	pthread_mutex_unlock(&e->mu);
	if (open)
		return kt__err(KT_EBUSY, "ceph: a staged commit is already "
			       "open on this handle");
	if ((g = calloc(1, sizeof(*g))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	g->e = e;
	snprintf(g->id, sizeof(g->id), "%" PRIx64 ".%" PRIx64 ".%" PRIx64 ".S",
		 e->inst, (uint64_t)getpid(), seq);
	if ((rc = name_of(&g->name, e, "!tx.")) != 0 ||
	    (rc = kt__buf_add(&g->name, g->id, strlen(g->id))) != 0 ||
	    (rc = kt__buf_addc(&g->name, '\0')) != 0 ||
	    (rc = rad_snapshot(&g->snap, r)) != 0 ||
	    (rc = rad_snapshot(&g->multi, r)) != 0) {
		stage_free(e, g);
		return rc;
	}
	g->name.len--;
	/* The header before any lock, so that a lock whose header is gone
	 * is known to be of a stage that never committed. */
	op = rados_create_write_op();
	rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	rados_write_op_setxattr(op, STX, "P", 1);
	rados_write_op_setxattr(op, STG_BEAT, "0", 1);
	rados_write_op_write_full(op, "KTS1", 4);
	rc = wop_run(e, op, g->name.p);
	rados_release_write_op(op);
	if (rc < 0) {
		rc = rerr(rc, "writing commit record", g->name.p);
		stage_free(e, g);
		return rc;
	}
	pthread_mutex_init(&g->bmu, NULL);
	{
		pthread_condattr_t ca; /* beats by the monotonic clock */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&g->bcv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (pthread_create(&g->beat, NULL, stage_beat, g) != 0) {
		rec_remove(e, g->id);
		pthread_mutex_destroy(&g->bmu);
		pthread_cond_destroy(&g->bcv);
		stage_free(e, g);
		return kt__err(KT_ENOMEM, "cannot start a thread");
	}
	g->owner = pthread_self();
	pthread_mutex_lock(&e->mu);
	__atomic_store_n(&e->stage, g, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&e->mu);
	*token = seq;
	return 0;
}

/* A blind write of a part met another commit's lock on @p oid: settle it
 * now if that commit is over or its writer gone, without waiting.  0
 * settled (or free by now), 1 still pending, <0 an error. */
static int stage_unblock(rad *e, stage *g, const char *oid)
{
	uint64_t since = 0;
	oread r;
	oreq q;
	int rc, pending = 0;

	memset(&r, 0, sizeof(r));
	memset(&q, 0, sizeof(q));
	rc = oread_once(e, oid, &q, &r);
	if (rc == 0 && r.exists && r.lock[0] != '\0' &&
	    strcmp(r.lock, FREE) != 0 && strcmp(r.lock, g->id) != 0) {
		rc = lock_settle(e, oid, r.lock, &since, &pending);
		if (rc == 0 && pending)
			rc = 1;
	}
	oread_clear(&r);
	return rc;
}

#define STAGE_WINDOW 512 /* operations of a part in flight at once */

/* Write operations sent together, STAGE_WINDOW at most, whose results
 * nobody needs (settling is guarded, and whoever comes later settles
 * what one of them failed to). */
typedef struct wbatch {
	rados_write_op_t op[STAGE_WINDOW];
	rados_completion_t c[STAGE_WINDOW];
	size_t n;
} wbatch;

static void wb_wait(wbatch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		if (b->c[i] != NULL) {
			rados_aio_wait_for_complete(b->c[i]);
			rados_aio_release(b->c[i]);
		}
		rados_release_write_op(b->op[i]);
	}
	b->n = 0;
}

/* Send @p op (taken over) to @p oid, which is copied by librados. */
static void wb_send(rad *e, wbatch *b, rados_write_op_t op, const char *oid)
{
	if (b->n == STAGE_WINDOW)
		wb_wait(b);
	b->op[b->n] = op;
	b->c[b->n] = NULL;
	if (rados_aio_create_completion2(NULL, NULL, &b->c[b->n]) != 0 ||
	    rados_aio_write_op_operate(op, e->io, b->c[b->n], oid, NULL, 0) !=
		    0) {
		if (b->c[b->n] != NULL)
			rados_aio_release(b->c[b->n]);
		b->c[b->n] = NULL;
	}
	b->n++;
}

/* One part: its record and its objects' locks, all in flight together.
 * An object this stage locked already gains the part's mark only. */
static int stage_part(rad *e, stage *g, oset *s)
{
	kt__buf name = {0}, body = {0};
	rados_write_op_t op, recop;
	unsigned char *app = NULL;
	const char *busy = NULL;
	char xn[24];
	rwrite w;
	size_t i, b0, b1;
	int rc, rrc, conflict = 0, err = 0;

	if (g->doomed || stage_lost(g) || g->snap->torn) {
		g->doomed = 1;
		return KT__ECHANGED;
	}
	snprintf(xn, sizeof(xn), STG_PART "%08" PRIx32, g->nparts);
	if ((rc = stage_part_name(&name, e, g->id, g->nparts)) != 0 ||
	    (rc = record_body(&body, s->o, s->n)) != 0)
		goto out;
	if ((app = calloc(s->n + 1, 1)) == NULL) {
		rc = kt__err(KT_ENOMEM, "out of memory");
		goto out;
	}
	recop = rados_create_write_op();
	rados_write_op_create(recop, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	rados_write_op_setxattr(recop, STX, "s", 1);
	rados_write_op_write_full(recop, body.p, body.len);
	rw_send(e, &w, recop, name.p, NULL);
	/* STAGE_WINDOW objects at a time: an operation in flight costs
	 * librados a few KiB, and a part may hold thousands. */
	for (b0 = 0; b0 < s->n; b0 = b1) {
		b1 = b0 + STAGE_WINDOW < s->n ? b0 + STAGE_WINDOW : s->n;
		for (i = b0; i < b1; i++) {
			objw *o = &s->o[i];
			app[i] = o->saw != NULL && o->saw->lk != NULL &&
				 strcmp(o->saw->lk, g->id) == 0;
			o->op = rados_create_write_op();
			o->locked = 0;
			if (app[i])
				rados_write_op_cmpxattr(o->op, LK,
							LIBRADOS_CMPXATTR_OP_EQ,
							g->id, strlen(g->id));
			else
				guard_ops(o->op, e, o, must_make(o), g->id);
			rados_write_op_setxattr(o->op, xn, "", 0);
			objw_send(e, o);
		}
		for (i = b0; i < b1; i++) {
			objw *o = &s->o[i];
			objw_reap(o);
			if (o->rc == -ENOENT && !app[i] && o->saw == NULL) {
				/* A blind write to an object not made yet. */
				op = rados_create_write_op();
				guard_ops(op, e, o, 1, g->id);
				rados_write_op_setxattr(op, xn, "", 0);
				o->rc = wop_run(e, op, o->oid);
				rados_release_write_op(op);
			}
			if (o->rc != 0 && !app[i] && is_conflict(o->rc)) {
				/* Locked by this stage in an earlier part,
				 * which a blind write (id rows, the catalog)
				 * cannot know: add the mark, on the lock still
				 * being ours. */
				op = rados_create_write_op();
				rados_write_op_cmpxattr(op, LK,
							LIBRADOS_CMPXATTR_OP_EQ,
							g->id, strlen(g->id));
				rados_write_op_setxattr(op, xn, "", 0);
				if (wop_run(e, op, o->oid) == 0) {
					o->rc = 0;
					app[i] = 1;
				}
				rados_release_write_op(op);
			}
			if (o->rc != 0 && !app[i] && o->saw == NULL &&
			    is_conflict(o->rc) &&
			    stage_unblock(e, g, o->oid) == 0) {
				/* Another's lock, of a commit that is over (a
				 * client killed in its own stage leaves many):
				 * settled; lock it now. */
				op = rados_create_write_op();
				guard_ops(op, e, o, 0, g->id);
				rados_write_op_setxattr(op, xn, "", 0);
				o->rc = wop_run(e, op, o->oid);
				rados_release_write_op(op);
				if (o->rc == -ENOENT) {
					op = rados_create_write_op();
					guard_ops(op, e, o, 1, g->id);
					rados_write_op_setxattr(op, xn, "", 0);
					o->rc = wop_run(e, op, o->oid);
					rados_release_write_op(op);
				}
			}
			if (o->rc == 0) {
				o->locked = !app[i];
			} else if (is_conflict(o->rc)) {
				conflict = 1;
				if (busy == NULL)
					busy = o->oid;
			} else if (err == 0) {
				err = rerr(o->rc, "locking", o->oid);
			}
		}
	}
	rrc = rw_wait(e, &w, name.p, NULL);
	rados_release_write_op(recop);
	if (rrc != 0 && err == 0)
		err = rrc;
	if (err != 0 || conflict) {
		/* This part's own locks go now, the earlier parts' when the
		 * stage is rolled back (rad_unfence). */
		(void)finish_all(e, s->o, s->n, g->id, 0, 1);
		if (w.rc == 0) {
			rados_write_op_t rop = rados_create_write_op();
			rados_write_op_remove(rop);
			(void)wop_run(e, rop, name.p);
			rados_release_write_op(rop);
		}
		/* Objects of earlier parts that got this part's mark: the
		 * roll-back removes every part's mark from them. */
		for (i = 0; i < s->n; i++)
			if (app[i] && s->o[i].rc == 0)
				(void)seen_note(g->multi, s->o[i].oid, 1, 0,
						NULL);
		g->doomed = 1;
		if (busy != NULL && g->busy == NULL)
			g->busy = strdup(busy);
		rc = err != 0 ? err : KT__ECHANGED;
		goto out;
	}
	for (i = 0; i < s->n && rc == 0; i++)
		if (app[i])
			rc = seen_note(g->multi, s->o[i].oid, 1, 0, NULL);
	if (rc == 0)
		g->nparts++;
	else
		g->doomed = 1;
	/* The next part is guarded on the reads made for it. */
	snap_clear(g->snap);
out:
	free(app);
	kt__buf_free(&name);
	kt__buf_free(&body);
	return rc;
}

static void publish(rad *e, const kt__commit *cm);

/* Tell the watchers what part @p r of a committed stage changed, as a
 * commit of its own (on a directory store they hear each step so). */
static void stage_publish(rad *e, const rec *r)
{
	kt__write *w;
	kt__buf *keys;
	kt__commit cm;
	size_t i, j, n = 0, total = 0;

	for (i = 0; i < r->n; i++)
		total += r->o[i].nw;
	w = calloc(total + 1, sizeof(*w));
	keys = calloc(total + 1, sizeof(*keys));
	for (i = 0; w != NULL && keys != NULL && i < r->n; i++) {
		const objw *o = &r->o[i];
		kt__slice lp;
		if (o->part.len == 0)
			continue; /* the catalog */
		lp = logical_part(o->part);
		for (j = 0; j < o->nw; j++) {
			/* Rows only: a stripe list's keys are not. */
			if (o->kl[j] == 0 || o->k[j][0] != '.' ||
			    okey_dec(&keys[n], o->k[j], o->kl[j]) != 0)
				continue;
			w[n].part = lp;
			w[n].sort = kt__slb(&keys[n]);
			w[n].del = o->del[j];
			w[n].value = o->del[j] ? kt__sl(NULL, 0)
					       : kt__sl(o->v[j], o->vl[j]);
			n++;
		}
	}
	if (n > 0) {
		memset(&cm, 0, sizeof(cm));
		cm.w = w;
		cm.nw = n;
		publish(e, &cm);
	}
	for (i = 0; keys != NULL && i < total; i++)
		kt__buf_free(&keys[i]);
	free(keys);
	free(w);
}

/* For tests: when it counts down to 0, that object's apply of a staged
 * commit is not sent, as if it failed (KT_EIO from the OSD). */
int kt__rados_test_apply_fail;
unsigned long kt__rados_test_parts_held; /* later parts not sent */

/* Settle every object of every part of @p g: with @p apply, each part's
 * writes in order, unlocking an object with its last part; else only
 * unlock.  Objects of several parts are unlocked at the end.  Errors are
 * left for the readers who meet the locks (and kt_repair), which settle
 * them from the header and the parts: 1 when every part was read and
 * every apply went in (or had been made by a reader), so that the header
 * and the parts may go; 0 when they must stay.  An object whose apply
 * failed gets none of its later parts (a later part applied would fence
 * the earlier one out: the object's apply note says which part it is
 * at) and is not unlocked; after a part that cannot be read, applying
 * stops.  The readers then apply each such object's parts in order. */
static int stage_settle_all(rad *e, stage *g, int apply)
{
	uint32_t k;
	size_t i, b0, b1;
	wbatch wb;
	kt__snap *failed = NULL; /* objects of several parts left locked */
	int clean = 1, halt = 0;

	wb.n = 0;

	for (k = 0; k < g->nparts; k++) {
		rec r = {0};
		char xn[24];
		if (stage_part_read(e, g->id, k, &r) != 0) {
			rec_free(&r);
			clean = 0;
			if (apply)
				break;
			continue;
		}
		snprintf(xn, sizeof(xn), STG_PART "%08" PRIx32, k);
		for (b0 = 0; b0 < r.n; b0 = b1) {
			b1 = b0 + STAGE_WINDOW < r.n ? b0 + STAGE_WINDOW : r.n;
			for (i = b0; i < b1; i++) {
				objw *o = &r.o[i];
				int multi = seen_find(g->multi, o->oid) != NULL;
				o->op = rados_create_write_op();
				if (apply) {
					stage_apply_op(o->op, o, g->id, k);
				} else {
					rados_write_op_cmpxattr(
						o->op, LK,
						LIBRADOS_CMPXATTR_OP_EQ, g->id,
						strlen(g->id));
					rados_write_op_rmxattr(o->op, xn);
				}
				if (!apply || !multi) {
					rados_write_op_setxattr(o->op, LK, FREE,
								1);
					rados_write_op_rmxattr(o->op, STG_DONE);
				}
				if (!apply && multi) {
					uint32_t j;
					/* (and a failed part's) */
					for (j = 0; j <= g->nparts; j++) {
						char xj[24];
						snprintf(xj, sizeof(xj),
							 STG_PART "%08" PRIx32,
							 j);
						rados_write_op_rmxattr(o->op,
								       xj);
					}
				}
				o->c = NULL;
				if (apply && multi && failed != NULL &&
				    seen_find(failed, o->oid) != NULL) {
					o->rc = 1; /* not sent */
					kt__rados_test_parts_held++;
					continue;
				}
				if (apply && kt__rados_test_apply_fail > 0 &&
				    --kt__rados_test_apply_fail == 0) {
					o->rc = -EIO;
					continue;
				}
				objw_send(e, o);
			}
			for (i = b0; i < b1; i++) {
				objw *o = &r.o[i];
				objw_reap(o);
				if (o->rc == 0 || o->rc == -ECANCELED ||
				    o->rc == 1)
					continue;
				clean = 0;
				if (!apply ||
				    seen_find(g->multi, o->oid) == NULL)
					continue;
				if ((failed == NULL &&
				     rad_snapshot(&failed, &e->base) != 0) ||
				    seen_note(failed, o->oid, 1, 0, NULL) != 0)
					halt = 1; /* cannot remember it */
			}
		}
		if (apply)
			stage_publish(e, &r);
		rec_free(&r);
		if (halt)
			break;
	}
	if (!apply || k < g->nparts) {
		if (failed != NULL)
			rad_snapshot_free(&e->base, failed);
		return clean;
	}
	for (i = 0; i < g->multi->capv; i++) {
		const char *oid = g->multi->v[i].oid;
		rados_write_op_t op;
		if (oid == NULL ||
		    (failed != NULL && seen_find(failed, oid) != NULL))
			continue;
		op = rados_create_write_op();
		rados_write_op_cmpxattr(op, LK, LIBRADOS_CMPXATTR_OP_EQ, g->id,
					strlen(g->id));
		rados_write_op_setxattr(op, LK, FREE, 1);
		rados_write_op_rmxattr(op, STG_DONE);
		wb_send(e, &wb, op, oid);
	}
	wb_wait(&wb);
	if (failed != NULL)
		rad_snapshot_free(&e->base, failed);
	return clean;
}

/* Remove the parts of @p txid (the first @p n, or while they are there
 * when @p n is UINT32_MAX), then its header: last, since a lock whose
 * header is gone is undone. */
static void stage_remove(rad *e, const char *txid, uint32_t n)
{
	kt__buf name = {0};
	uint32_t k;
	wbatch wb;

	wb.n = 0;
	for (k = 0; k < n; k++) {
		rados_write_op_t op;
		int rc;
		if (stage_part_name(&name, e, txid, k) != 0)
			break;
		op = rados_create_write_op();
		rados_write_op_remove(op);
		if (n != UINT32_MAX) {
			wb_send(e, &wb, op, name.p);
			continue;
		}
		/* How many there are is not known: one at a time. */
		rc = wop_run(e, op, name.p);
		rados_release_write_op(op);
		if (rc == -ENOENT)
			break;
	}
	wb_wait(&wb);
	kt__buf_free(&name);
	rec_remove(e, txid);
}

/* For tests: called once a stage has committed, before it is applied. */
void (*kt__rados_test_staged)(void);

/* Close the stage: commit it (all parts take effect at once) or, with
 * @p broken, roll it back.  0; KT__ECHANGED when asked to commit a stage
 * that a part doomed or another client rolled back; another error when
 * the commit point's outcome is unknown (whoever meets a lock settles it
 * from the header). */
static int rad_unfence(kt__rows *r, uint64_t token, int broken)
{
	rad *e = (rad *)r;
	stage *g = stage_mine(e);
	char *busy = NULL;
	int rc = 0, st;

	(void)token;
	if (g == NULL)
		return 0;
	pthread_mutex_lock(&g->bmu);
	g->bstop = 1;
	pthread_cond_signal(&g->bcv);
	pthread_mutex_unlock(&g->bmu);
	pthread_join(g->beat, NULL);
	pthread_mutex_destroy(&g->bmu);
	pthread_cond_destroy(&g->bcv);
	if (!broken && !g->doomed && !g->lost) {
		/* The commit point of every part. */
		st = rec_flip(e, g->id, 'C');
		if (st == 0 && kt__rados_test_staged != NULL)
			kt__rados_test_staged();
		if (st == 0) {
			/* An apply that did not go in leaves its object
			 * locked: the header (C) and the parts stay for
			 * whoever meets it, else the lock, its header gone,
			 * would be undone and the commit lose that object's
			 * writes. */
			if (stage_settle_all(e, g, 1))
				stage_remove(e, g->id, g->nparts);
			goto out;
		}
		if (st < 0) {
			rc = st;
			goto out;
		}
	}
	if (!broken)
		rc = KT__ECHANGED;
	if ((st = rec_flip(e, g->id, 'A')) < 0) {
		rc = st;
		goto out;
	}
	/* Rolled back: a lock left behind is undone all the same once its
	 * header is gone. */
	(void)stage_settle_all(e, g, 0);
	stage_remove(e, g->id, g->nparts);
	busy = g->busy;
	g->busy = NULL;
out:
	pthread_mutex_lock(&e->mu);
	__atomic_store_n(&e->stage, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&e->mu);
	stage_free(e, g);
	/* What another commit held: wait until it is free, so that the
	 * next try does not meet it again at once. */
	if (busy != NULL) {
		int wrc = wait_free(e, busy);
		if (rc == 0)
			rc = wrc;
		free(busy);
	}
	return rc;
}

/* Add to @p s the objects condition @p c depends on: the partition of a
 * row or of a scan; for a prefix scan the catalog and every partition
 * with the prefix that the snapshot read (a hashed name cannot be told
 * apart, so all of those). */
static int guard_cond(rad *e, const kt__snap *snap, const kt__cond *c,
		      oset *s, const char *catoid, size_t *cat)
{
	kt__buf oid = {0};
	objw *o;
	size_t i;
	int rc = 0;

	int sk = c->kind == KT__COND_SCAN && !(c->how.flags & KT__SCAN_PREFIX)
			 ? sh_kind(e, c->how.part)
			 : 0;

	if (c->kind == KT__COND_ROW ||
	    (!(c->how.flags & KT__SCAN_PREFIX) && sk == 0)) {
		char pb[PHYS_MAX];
		kt__slice part = c->kind == KT__COND_ROW
					 ? phys_part(e, c->part, c->sort, pb)
					 : c->how.part;
		if ((rc = oid_of(&oid, e, part)) == 0 &&
		    seen_find(snap, oid.p) != NULL &&
		    (rc = oset_get(s, oid.p, part, &o)) == 0)
			o->guarded = 1;
		kt__buf_free(&oid);
		return rc;
	}
	/* From here, a prefix scan, or a scan of the id index: the
	 * catalog and its shards, all of whose names start with "/id"; or
	 * a scan of a value's blocks: its base and stripes, not the
	 * catalog (Blocks). */
	if (sk != SH_BLK && seen_find(snap, catoid) != NULL &&
	    (rc = oset_get(s, catoid, kt__sl("", 0), &o)) == 0) {
		o->guarded = 1;
		*cat = (size_t)(o - s->o);
		if ((rc = kt__buf_add(&o->scope, c->how.part.p,
				      c->how.part.len)) == 0)
			rc = kt__buf_addc(&o->scope, '\0');
	}
	for (i = 0; rc == 0 && i < snap->capv; i++) {
		const char *x = snap->v[i].oid;
		if (x == NULL)
			continue;
		if (x[e->treelen] == '#' ||
		    (x[e->treelen] == '/' &&
		     strlen(x + e->treelen + 1) >= c->how.part.len &&
		     memcmp(x + e->treelen + 1, c->how.part.p,
			    c->how.part.len) == 0))
			if ((rc = oset_get(s, x, kt__sl("", 0), &o)) == 0)
				o->guarded = 1;
	}
	return rc;
}

/* A numbered commit also reads the counter object T!seq and writes it
 * one higher, guarded like any object read: every two numbered commits
 * then conflict, so the numbers follow the order in which they took
 * effect.  *n receives the commit's number. */
static int number_add(rad *e, kt__snap *gs, oset *s, char *val,
		      size_t valsz, uint64_t *n)
{
	kt__buf oid = {0}, key = {0};
	oread r;
	oreq q;
	objw *o;
	kt__write w;
	int rc;

	memset(&r, 0, sizeof(r));
	memset(&q, 0, sizeof(q));
	*n = 0;
	if ((rc = name_of(&oid, e, "!seq")) == 0 &&
	    (rc = okey(&key, kt__sl("n", 1))) == 0 &&
	    (rc = kt__buf_add(&key, "", 1)) == 0) {
		q.key = key.p;
		rc = oread_do(e, gs, oid.p, &q, &r);
	}
	if (rc == 0 && r.n == 1)
		*n = strtoull(r.vals[0].p ? r.vals[0].p : "0", NULL, 10);
	*n += 1;
	snprintf(val, valsz, "%" PRIu64, *n);
	memset(&w, 0, sizeof(w));
	w.value = kt__sl(val, strlen(val) + 1);
	if (rc == 0 && (rc = oset_get(s, oid.p, kt__sl("", 0), &o)) == 0) {
		o->guarded = 1;
		rc = objw_add(o, kt__sl("n", 1), &w);
	}
	oread_clear(&r);
	kt__buf_free(&oid);
	kt__buf_free(&key);
	return rc;
}

void kt__rados_number_commits(kt__rows *r)
{
	if (r->ops == &rad_ops)
		((rad *)r)->numbered = 1;
}

/*
 * A commit's rows travel in one operation: the record of a commit over
 * several objects holds them all, and a one-object commit is one write.
 * An OSD refuses an operation larger than osd_max_write_size (90 MB by
 * default) with EMSGSIZE, which would say nothing useful; refuse such a
 * commit here instead, with what to do about it.
 */
#define COMMIT_MAX ((size_t)64 << 20)

static int size_check(const oset *s)
{
	size_t i, j, n = 0;

	for (i = 0; i < s->n; i++) {
		n += strlen(s->o[i].oid) + 16;
		for (j = 0; j < s->o[i].nw; j++)
			n += s->o[i].kl[j] + s->o[i].vl[j] + 8;
	}
	if (n <= COMMIT_MAX)
		return 0;
	return kt__err(KT_ETOOBIG, "ceph: this change is %.1f MiB of rows "
		       "in one commit; a commit on RADOS is limited to %zu "
		       "MiB (one RADOS operation): write a large value in "
		       "pieces (kt_write), or load a large dump in parts",
		       (double)n / (1 << 20), COMMIT_MAX >> 20);
}

static int rad_commit(kt__rows *r, const kt__commit *cm)
{
	rad *e = (rad *)r;
	kt__snap *snap = (kt__snap *)cm->snap;
	kt__snap *gs = snap, *own = NULL; /* where guarded versions are */
	oset s;
	objw *o, pre;
	size_t cat = (size_t)-1; /* the catalog's place in s, if guarded */
	kt__buf oid = {0}, catoid = {0}, pk = {0}, lastpk = {0};
	char numval[24];
	uint64_t num = 0;
	size_t i;
	int rc;
	/* A part of this thread's staged commit (rad_fence)? */
	stage *g = stage_mine(e);

	/* A stage is numbered by its first part, which holds the counter
	 * until the stage ends; the later parts leave the number be. */
	int number = g == NULL || g->nparts == 0;

	memset(&s, 0, sizeof(s));
	memset(&pre, 0, sizeof(pre));
	if (cm->applied != NULL && number)
		*cm->applied = 0;
	if (cm->nw == 0)
		return 0;
	/* Reads that already disagree: the guards would fail later. */
	if (snap != NULL && snap->torn)
		return KT__ERETRY;
	if ((rc = name_of(&catoid, e, "!cat")) != 0)
		return rc;
	if (e->numbered && cm->applied != NULL && number) {
		if (gs == NULL && (rc = rad_snapshot(&own, r)) == 0)
			gs = own;
		if (rc == 0)
			rc = number_add(e, gs, &s, numval, sizeof(numval),
					&num);
	}
	/* Every object a condition names is guarded, written or not. */
	for (i = 0; rc == 0 && snap != NULL && i < cm->nc; i++)
		rc = guard_cond(e, snap, &cm->c[i], &s, catoid.p, &cat);
	for (i = 0; i < cm->nw && rc == 0; i++) {
		const kt__write *w = &cm->w[i];
		char pb[PHYS_MAX];
		kt__slice part = phys_part(e, w->part, w->sort, pb);
		if ((rc = oid_of(&oid, e, part)) != 0 ||
		    (rc = oset_get(&s, oid.p, part, &o)) != 0 ||
		    (rc = objw_add(o, w->sort, w)) != 0)
			break;
		if (w->del || w->value.p == NULL)
			continue;
		/* A put: its partition must be in the catalog. */
		if (lastpk.p != NULL && lastpk.len == part.len &&
		    memcmp(lastpk.p, part.p, part.len) == 0)
			continue; /* done for the write before */
		if ((rc = kt__buf_set(&pk, part.p, part.len)) != 0 ||
		    (rc = kt__buf_set(&lastpk, part.p, part.len)) != 0)
			break;
		if (known_has(e, pk.p))
			continue;
		/* A new stripe goes into its base's list, in this commit
		 * (Blocks): a scan of the value finds it there. */
		if (sh_kind(e, w->part) == SH_BLK) {
			char sk[24];
			char *kp;
			snprintf(sk, sizeof(sk), "s%016" PRIx64,
				 blk_of(w->sort) >> STRIPE_SHIFT);
			if ((rc = oid_of(&oid, e, w->part)) != 0 ||
			    (rc = oset_get(&s, oid.p, w->part, &o)) != 0)
				break;
			if ((kp = strdup(sk)) == NULL) {
				rc = kt__err(KT_ENOMEM, "out of memory");
				break;
			}
			if ((rc = objw_addk(o, kp, strlen(sk), kt__sl("", 0),
					    0)) != 0)
				break;
		}
		if (cat == (size_t)-1 && g != NULL) {
			/* A part: the entries take effect with the stage,
			 * and the catalog is most likely the stage's
			 * already (its first part scanned a prefix). */
			if ((rc = oset_get(&s, catoid.p, kt__sl("", 0), &o)) !=
			    0)
				break;
			cat = (size_t)(o - s.o);
		}
		if (cat != (size_t)-1) {
			/* This commit depends on the catalog: the entry
			 * goes in the commit itself. */
			o = &s.o[cat];
		} else {
			o = &pre;
			if (pre.oid == NULL &&
			    (pre.oid = strdup(catoid.p)) == NULL) {
				rc = kt__err(KT_ENOMEM, "out of memory");
				break;
			}
		}
		{
			kt__write cw;
			memset(&cw, 0, sizeof(cw));
			cw.value = kt__sl("", 0);
			rc = objw_add(o, kt__slb(&pk), &cw);
		}
	}
	for (i = 0; rc == 0 && i < s.n; i++) {
		s.o[i].saw = s.o[i].guarded ? seen_find(gs, s.o[i].oid)
					    : NULL;
		/* A part is guarded on every object it writes that was
		 * read, by its transaction or by the steps' cursor. */
		if (g != NULL && s.o[i].saw == NULL && gs != NULL)
			s.o[i].saw = seen_find(gs, s.o[i].oid);
		if (g != NULL && s.o[i].saw == NULL)
			s.o[i].saw = seen_find(g->snap, s.o[i].oid);
		s.o[i].hashed = is_hashed(s.o[i].oid, e);
	}
	/* An object read under another commit's pending lock (oread_do)
	 * changes version when that lock is settled, whichever way, so a
	 * commit guarded on it cannot succeed; its version, the locked one,
	 * must not be used as a guard either, since the lock itself would
	 * pass it.  Wait for the lock, then run again. */
	for (i = 0; rc == 0 && i < s.n; i++)
		if (s.o[i].saw != NULL && s.o[i].saw->lk != NULL) {
			if (g != NULL && strcmp(s.o[i].saw->lk, g->id) == 0)
				continue; /* the stage's own */
			if (g != NULL) {
				/* Waiting holding the stage's locks could
				 * deadlock: roll back, wait, run again. */
				g->doomed = 1;
				if (g->busy == NULL)
					g->busy = strdup(s.o[i].oid);
				rc = KT__ECHANGED;
			} else if ((rc = wait_free(e, s.o[i].oid)) == 0) {
				rc = KT__ERETRY;
			}
		}
	/* New catalog entries go in before the commit can take effect: on
	 * their own before a one-object commit, alongside the record of a
	 * commit over several.  (omap_set of a key twice is fine.) */
	fin_reap(e, 0);
	{
		size_t nm;
		pthread_mutex_lock(&e->mu);
		nm = e->nmarks;
		pthread_mutex_unlock(&e->mu);
		if (nm > MARKS_MAX)
			marks_flush(e);
	}
	if (rc == 0 && pre.nw > 0 && s.n == 1)
		rc = catalog_add(e, &pre);
	if (rc == 0)
		rc = size_check(&s);
	/* Remember the new entries only once they are certainly in. */
	if (rc == 0)
		rc = g != NULL	 ? stage_part(e, g, &s)
		     : s.n == 1 ? commit_one(e, &s.o[0])
				: commit_many(e, &s, &pre);
	if (rc == 0 && num != 0)
		*cm->applied = num;
	if (rc == 0 && g == NULL)
		publish(e, cm);
	/* (A part's catalog entries are not certainly in before the stage
	 * commits: not remembered.) */
	if (rc == 0 && g == NULL) {
		for (i = 0; i < pre.nw; i++) {
			kt__buf d = {0};
			if (okey_dec(&d, pre.k[i], pre.kl[i]) == 0)
				known_add(e, d.p);
			kt__buf_free(&d);
		}
		for (i = 0; cat != (size_t)-1 && i < s.o[cat].nw; i++) {
			kt__buf d = {0};
			if (okey_dec(&d, s.o[cat].k[i], s.o[cat].kl[i]) == 0)
				known_add(e, d.p);
			kt__buf_free(&d);
		}
	}
	oset_free(&s);
	objw_free(&pre);
	kt__buf_free(&oid);
	kt__buf_free(&catoid);
	kt__buf_free(&pk);
	kt__buf_free(&lastpk);
	if (own != NULL)
		rad_snapshot_free(r, own);
	return rc;
}


/* ------------------------------------------------------------------------ */
/* Watching */

/*
 * kt_watch on RADOS.  There is no holder that hears every commit, so the
 * clients tell each other, with RADOS watch/notify on the tree's object
 * T!watch:
 * - a watching handle registers a watch on it (rados_watch2) and an omap
 *   key "w" + its instance id, so that the others know someone listens;
 * - after each commit that took effect, a handle that knows of another
 *   watcher sends a notify on T!watch: its instance id (8 bytes) and a
 *   note of the commit's writes (server.h, the holder's encoding: values
 *   cut to KT__NOTE_VALUE bytes), at most about NOTE_CHUNK bytes each;
 * - a watcher's librados callback queues the note; a thread of the
 *   handle passes it on (unless it is the handle's own) and only then
 *   acknowledges it, so the watcher's callback runs on a thread of ours,
 *   free to read the store.
 * As with the holder's notes: a handle that watches nothing waits for
 * the acknowledgements (at most KT__NOTE_WAIT_MS), so that once its call
 * returns every watcher has heard it; a watching handle does not wait
 * (two watchers waiting for each other could stall).  Whether anyone
 * watches is read again at most every WATCHERS_MS; a new watcher also
 * says hello (a notify of no writes), so the handles that watch already
 * (the mounts) tell it their commits at once, and a handle that watches
 * nothing does within WATCHERS_MS; kt__rados_watch returns only after
 * that, so a new watcher misses nothing.  A watcher that dies leaves
 * its key: notifies then still go out, and a handle that watches nothing
 * waits for the dead watch until the OSD drops it (its watch timeout, 30
 * s by default).  The first notify after that which reaches nobody at all
 * drops the dead keys (watch_forget_dead), and commits stop notifying.
 */
#define WATCHERS_MS 1000
#define NOTE_CHUNK (1u << 20)

typedef struct wheard {
	struct wheard *next;
	uint64_t notify_id, handle;
	size_t len;
	unsigned char data[];
} wheard;

typedef struct wsent {
	struct wsent *next;
	rados_completion_t c;
	char *reply;
	size_t rlen;
	kt__buf body;
} wsent;

static int watch_oid(kt__buf *out, const rad *e)
{
	return name_of(out, e, "!watch");
}

/* The omap key that says handle @p inst watches: "." "w" 16 hex. */
static void watch_key(char out[24], uint64_t inst)
{
	snprintf(out, 24, ".w%016" PRIx64, inst);
}

/* librados's callback: queue the note for the watch thread. */
static void watch_cb(void *arg, uint64_t notify_id, uint64_t handle,
		     uint64_t notifier_id, void *data, size_t len)
{
	rad *e = arg;
	wheard *h = malloc(sizeof(*h) + len);
	kt__buf oid = {0};

	(void)notifier_id;
	if (h == NULL) {
		/* Cannot keep it: acknowledge, or the notifier waits. */
		if (watch_oid(&oid, e) == 0)
			(void)rados_notify_ack(e->io, oid.p, notify_id,
					       handle, NULL, 0);
		kt__buf_free(&oid);
		return;
	}
	h->next = NULL;
	h->notify_id = notify_id;
	h->handle = handle;
	h->len = len;
	if (len > 0)
		memcpy(h->data, data, len);
	pthread_mutex_lock(&e->mu);
	*e->heard_end = h;
	e->heard_end = &h->next;
	pthread_cond_signal(&e->wcv);
	pthread_mutex_unlock(&e->mu);
}

/* The watch was lost (the client was cut off for longer than the watch
 * timeout, or the object went): librados hears nothing more on it until
 * it is watched again, which the watch thread does (watch_renew).  What
 * was committed meanwhile is not heard; caches see it once they time
 * out. */
static void watch_errcb(void *pre, uint64_t cookie, int err)
{
	rad *e = pre;

	(void)cookie;
	(void)err;
	pthread_mutex_lock(&e->mu);
	e->wlost = 1;
	pthread_cond_signal(&e->wcv);
	pthread_mutex_unlock(&e->mu);
}

static void watch_hello(rad *e, const char *oid);

/* Make T!watch if need be, and with @p key, this handle's key in it, the
 * sign for the others that it listens (set once it does): 0 or a RADOS
 * error. */
static int watch_register(rad *e, const char *oid, int key)
{
	rados_write_op_t op;
	char k[24];
	const char *kp = k, *vp = "";
	size_t kl, vl = 0;
	int rc;

	watch_key(k, e->inst);
	kl = strlen(k);
	op = rados_create_write_op();
	rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	if (key)
		rados_write_op_omap_set2(op, &kp, &vp, &kl, &vl, 1);
	rc = wop_run(e, op, oid);
	rados_release_write_op(op);
	return rc;
}

/* Watch again after the watch was lost, on the watch thread. */
static void watch_renew(rad *e, const char *oid)
{
	uint64_t old, cookie = 0;
	unsigned int delay = 100;

	pthread_mutex_lock(&e->mu);
	old = e->wcookie;
	pthread_mutex_unlock(&e->mu);
	(void)rados_unwatch2(e->io, old);
	for (;;) {
		int stop;
		pthread_mutex_lock(&e->mu);
		stop = e->wstop;
		pthread_mutex_unlock(&e->mu);
		if (stop)
			return;
		/* The object may be gone (removed by hand): make it and
		 * watch it, then say again that this handle listens. */
		if (watch_register(e, oid, 0) == 0 &&
		    rados_watch2(e->io, oid, &cookie, watch_cb, watch_errcb,
				 e) == 0)
			break;
		sleep_ms(delay); /* the cluster is away: try again */
		if (delay < 5000)
			delay *= 2;
	}
	pthread_mutex_lock(&e->mu);
	e->wcookie = cookie;
	pthread_mutex_unlock(&e->mu);
	(void)watch_register(e, oid, 1);
	watch_hello(e, oid);
}

/* The watch thread: pass each note on, then acknowledge it. */
static int lkw_ready(rad *e);

static void *watch_main(void *arg)
{
	rad *e = arg;
	kt__buf oid = {0};

	(void)watch_oid(&oid, e);
	pthread_mutex_lock(&e->mu);
	for (;;) {
		wheard *h;
		kt__notify_fn fn;
		void *fa;
		while (e->heard == NULL && !e->wstop && !e->wlost &&
		       !e->lkw_lost)
			pthread_cond_wait(&e->wcv, &e->mu);
		if (e->lkw_lost && !e->wstop) {
			/* The watch that says this client lives (Locks):
			 * renew it now, not at the next lock call. */
			pthread_mutex_unlock(&e->mu);
			if (lkw_ready(e) != 0)
				usleep(200000);
			pthread_mutex_lock(&e->mu);
			continue;
		}
		if (e->wlost && !e->wstop) {
			e->wlost = 0;
			pthread_mutex_unlock(&e->mu);
			if (oid.p != NULL)
				watch_renew(e, oid.p);
			pthread_mutex_lock(&e->mu);
			continue;
		}
		if ((h = e->heard) == NULL)
			break; /* stopping, nothing left */
		if ((e->heard = h->next) == NULL)
			e->heard_end = &e->heard;
		fn = e->note;
		fa = e->note_arg;
		pthread_mutex_unlock(&e->mu);
		if (fn != NULL && h->len >= 8 &&
		    kt__get64be(h->data) != e->inst) {
			kt__wire_in in;
			kt__write *w = NULL;
			size_t n = 0;
			in.p = h->data + 8;
			in.len = h->len - 8;
			in.pos = 0;
			in.bad = 0;
			if (kt__note_decode(&w, &n, &in) == 0) {
				if (n > 0) {
					fn(fa, w, n);
				} else {
					/* A new watcher's hello: tell it
					 * our commits from now on. */
					pthread_mutex_lock(&e->mu);
					e->others = 1;
					e->others_at = now_ms();
					pthread_mutex_unlock(&e->mu);
				}
			}
			free(w);
		}
		if (oid.p != NULL)
			(void)rados_notify_ack(e->io, oid.p, h->notify_id,
					       h->handle, NULL, 0);
		free(h);
		pthread_mutex_lock(&e->mu);
	}
	pthread_mutex_unlock(&e->mu);
	kt__buf_free(&oid);
	return NULL;
}

static void watch_stop(rad *e)
{
	kt__buf oid = {0};
	rados_write_op_t op;
	char k[24];
	const char *kp = k;
	size_t kl;

	wheard *h;

	if (!e->watching)
		return;
	/* The thread stops passing notes on (acknowledging what is
	 * queued) and ends, so it renews nothing any more; then the watch
	 * goes, and with it the callbacks; what they queued meanwhile is
	 * dropped (its notifiers stop waiting after KT__NOTE_WAIT_MS). */
	pthread_mutex_lock(&e->mu);
	e->note = NULL;
	e->note_arg = NULL;
	e->wstop = 1;
	pthread_cond_signal(&e->wcv);
	pthread_mutex_unlock(&e->mu);
	pthread_join(e->wthread, NULL);
	(void)rados_unwatch2(e->io, e->wcookie);
	(void)rados_watch_flush(e->cl);
	pthread_mutex_lock(&e->mu);
	while ((h = e->heard) != NULL) {
		e->heard = h->next;
		free(h);
	}
	e->heard_end = &e->heard;
	e->wlost = 0;
	pthread_mutex_unlock(&e->mu);
	e->watching = 0;
	watch_key(k, e->inst);
	kl = strlen(k);
	if (watch_oid(&oid, e) == 0) {
		op = rados_create_write_op();
		rados_write_op_omap_rm_keys2(op, &kp, &kl, 1);
		(void)wop_run(e, op, oid.p);
		rados_release_write_op(op);
	}
	kt__buf_free(&oid);
}

/* Hello (a note of no writes): the handles that watch already learn at
 * once that this one listens, rather than at their next look
 * (WATCHERS_MS); this waits for them. */
static void watch_hello(rad *e, const char *oid)
{
	unsigned char hello[12];
	char *reply = NULL;
	size_t rlen = 0;

	kt__put64be(hello, e->inst);
	memset(hello + 8, 0, 4);
	(void)rados_notify2(e->io, oid, (const char *)hello,
			    (int)sizeof(hello), KT__NOTE_WAIT_MS, &reply,
			    &rlen);
	if (reply != NULL)
		rados_buffer_free(reply);
}

int kt__rados_watch(kt__rows *r, kt__notify_fn fn, void *arg)
{
	rad *e = (rad *)r;
	kt__buf oid = {0};
	int rc;

	if (fn == NULL) {
		watch_stop(e);
		return 0;
	}
	if (e->watching)
		return kt__err(KT_EEXISTS, "watch: this store handle is "
			       "watched already");
	if ((rc = watch_oid(&oid, e)) != 0)
		return rc;
	/* Make the object, listen, then say that this handle listens. */
	if ((rc = watch_register(e, oid.p, 0)) < 0) {
		rc = rerr(rc, "registering a watcher in", oid.p);
		kt__buf_free(&oid);
		return rc;
	}
	pthread_mutex_lock(&e->mu);
	e->note = fn;
	e->note_arg = arg;
	e->heard = NULL;
	e->heard_end = &e->heard;
	e->wstop = 0;
	e->wlost = 0;
	pthread_mutex_unlock(&e->mu);
	if (pthread_create(&e->wthread, NULL, watch_main, e) != 0) {
		rc = kt__err(KT_ENOMEM, "watch: cannot start a thread");
	} else if ((rc = rados_watch2(e->io, oid.p, &e->wcookie, watch_cb,
				      watch_errcb, e)) < 0) {
		rc = rerr(rc, "watching", oid.p);
		pthread_mutex_lock(&e->mu);
		e->wstop = 1;
		pthread_cond_signal(&e->wcv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->wthread, NULL);
	} else if ((rc = watch_register(e, oid.p, 1)) < 0) {
		rc = rerr(rc, "registering a watcher in", oid.p);
		(void)rados_unwatch2(e->io, e->wcookie);
		(void)rados_watch_flush(e->cl);
		pthread_mutex_lock(&e->mu);
		e->wstop = 1;
		pthread_cond_signal(&e->wcv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->wthread, NULL);
	} else {
		uint64_t until = now_ms() + WATCHERS_MS + WATCHERS_MS / 10;
		watch_hello(e, oid.p);
		e->watching = 1;
		rc = 0;
		/* A handle that read who watches before our key was in keeps
		 * that answer for WATCHERS_MS and tells us nothing meanwhile:
		 * return once every such answer has run out (with a tenth
		 * more for clocks that tick apart), so that the caller (a
		 * mount, whose kernel caches nothing before this returns)
		 * misses no commit. */
		while (now_ms() < until)
			sleep_ms((unsigned int)(until - now_ms()));
	}
	if (rc != 0) {
		pthread_mutex_lock(&e->mu);
		e->note = NULL;
		e->note_arg = NULL;
		pthread_mutex_unlock(&e->mu);
	}
	kt__buf_free(&oid);
	return rc;
}

/* Does any handle but this one watch the tree?  Read again at most every
 * WATCHERS_MS. */
static int others_watch(rad *e)
{
	uint64_t t = now_ms();
	kt__buf oid = {0};
	char k[24];
	oread r;
	oreq q;
	size_t i;
	int known, others = 0;

	pthread_mutex_lock(&e->mu);
	known = e->others_at != 0 && t - e->others_at < WATCHERS_MS;
	others = e->others;
	pthread_mutex_unlock(&e->mu);
	if (known)
		return others;
	others = 0;
	memset(&r, 0, sizeof(r));
	memset(&q, 0, sizeof(q));
	q.prefix = ".w";
	q.after = "";
	q.max = 64;
	watch_key(k, e->inst);
	if (watch_oid(&oid, e) == 0 && oread_once(e, oid.p, &q, &r) == 0) {
		/* Keys come back decoded: "w" and the hex digits. */
		for (i = 0; i < r.n && !others; i++)
			others = r.keys[i].len != strlen(k) - 1 ||
				 memcmp(r.keys[i].p, k + 1, r.keys[i].len) != 0;
	}
	pthread_mutex_lock(&e->mu);
	e->others = others;
	e->others_at = t;
	e->others_ver = r.exists ? r.ver : 0;
	pthread_mutex_unlock(&e->mu);
	oread_clear(&r);
	kt__buf_free(&oid);
	return others;
}

/* Release the notifies of a watching handle that have completed; with
 * @p wait, wait for all of them. */
static void sent_reap(rad *e, int wait)
{
	wsent **pp, *w;

	pthread_mutex_lock(&e->mu);
	pp = &e->sent;
	while ((w = *pp) != NULL) {
		if (!wait && !rados_aio_is_complete(w->c)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		pthread_mutex_unlock(&e->mu);
		rados_aio_wait_for_complete(w->c);
		rados_aio_release(w->c);
		if (w->reply != NULL)
			rados_buffer_free(w->reply);
		kt__buf_free(&w->body);
		free(w);
		pthread_mutex_lock(&e->mu);
		pp = &e->sent;
	}
	pthread_mutex_unlock(&e->mu);
}

/* Did the notify whose reply is @p p (@p n bytes) reach nobody: no
 * acknowledgement and no watcher that timed out?  The reply is le32
 * acks, each le64 gid, le64 cookie, le32 length and that many bytes;
 * then le32 timeouts, each le64 gid and le64 cookie. */
static int notify_reached_nobody(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;

	if (p == NULL || n < 8)
		return 0;
	return kt__get32(u) == 0 && kt__get32(u + 4) == 0;
}

/* Nobody watches any more, but T!watch still names watchers: handles
 * that died without saying goodbye.  Drop their keys, unless T!watch
 * changed since they were read (a new watcher put its key in). */
static void watch_forget_dead(rad *e, const char *oid)
{
	rados_write_op_t op;
	uint64_t ver;

	pthread_mutex_lock(&e->mu);
	ver = e->others_ver;
	e->others = 0;
	pthread_mutex_unlock(&e->mu);
	if (ver == 0)
		return;
	op = rados_create_write_op();
	rados_write_op_assert_version(op, ver);
	rados_write_op_omap_clear(op);
	(void)wop_run(e, op, oid);
	rados_release_write_op(op);
}

/* Send one notify of @p body (taken over). */
static void notify_send(rad *e, const char *oid, kt__buf *body)
{
	char *reply = NULL;
	size_t rlen = 0;
	wsent *w;

	if (!e->watching) {
		(void)rados_notify2(e->io, oid, body->p, (int)body->len,
				    KT__NOTE_WAIT_MS, &reply, &rlen);
		if (notify_reached_nobody(reply, rlen))
			watch_forget_dead(e, oid);
		if (reply != NULL)
			rados_buffer_free(reply);
		kt__buf_free(body);
		return;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		kt__buf_free(body);
		return;
	}
	w->body = *body;
	memset(body, 0, sizeof(*body));
	if (rados_aio_create_completion2(NULL, NULL, &w->c) != 0) {
		kt__buf_free(&w->body);
		free(w);
		return;
	}
	if (rados_aio_notify(e->io, oid, w->c, w->body.p, (int)w->body.len,
			     KT__NOTE_WAIT_MS, &w->reply, &w->rlen) != 0) {
		rados_aio_release(w->c);
		kt__buf_free(&w->body);
		free(w);
		return;
	}
	pthread_mutex_lock(&e->mu);
	w->next = e->sent;
	e->sent = w;
	pthread_mutex_unlock(&e->mu);
}

/* Tell the watchers, if any, about @p cm, which has just taken effect. */
static void publish(rad *e, const kt__commit *cm)
{
	kt__buf oid = {0};
	size_t i = 0;

	sent_reap(e, 0);
	if (cm->nw == 0 || !others_watch(e) || watch_oid(&oid, e) != 0) {
		kt__buf_free(&oid);
		return;
	}
	while (i < cm->nw) {
		kt__commit part;
		kt__buf b = {0};
		unsigned char from[8];
		size_t j = i, sz = 0;
		while (j < cm->nw && (j == i || sz < NOTE_CHUNK)) {
			sz += cm->w[j].part.len + cm->w[j].sort.len + 40;
			j++;
		}
		memset(&part, 0, sizeof(part));
		part.w = cm->w + i;
		part.nw = j - i;
		kt__put64be(from, e->inst);
		if (kt__buf_add(&b, from, 8) == 0 &&
		    kt__note_encode(&b, &part) == 0)
			notify_send(e, oid.p, &b);
		kt__buf_free(&b);
		i = j;
	}
	kt__buf_free(&oid);
}

/* ------------------------------------------------------------------------ */
/* Locks */

/*
 * kt_lock_set and kt_lock_test.  Node N's advisory locks are the omap of
 * object T!lk.<16 hex N>: one key per (client, owner, kind), its value the
 * owner's ranges (rows.h, kt__lkent; lock.c does the range arithmetic).
 * Each change is one operation guarded on the version read (or an
 * exclusive create when there was no object): when the guard fails,
 * someone else changed the node's locks, so read again.  The object goes
 * with its last entry.
 *
 * Who lives.  A client watches T!lkw before it writes its first entry,
 * and its librados callback acknowledges every notify on the spot.  A
 * client that finds another client's lock in its way notifies T!lkw, with
 * the lease as timeout: the clients that acknowledge are alive (believed
 * for ALIVE_MS).  One that does not (killed, stalled, or cut off for
 * longer than its watch lasts) is fenced before its entries are dropped:
 * its address, kept in each entry, is blocklisted in the OSD map, and we
 * wait until our own map has the blocklist, so that every OSD we reach
 * from then on refuses that client, as RBD does before it breaks the
 * exclusive lock of an image's dead owner.  So a client that paused with a
 * lock cannot wake up and write as if it still held it: its calls fail
 * (rerr, -ESHUTDOWN) until it opens the store again as a new client.  The
 * blocklist entry expires after the cluster's default (an hour).
 */
#define ALIVE_MS 1000
#define LK_TRIES 64
#define LK_OWNERS_MAX 1024     /* entries in one lock object */

typedef struct lkheld {
	uint64_t id, owner;
	int whole;
} lkheld;

/* Does this handle hold locks of (@p id, @p owner, @p whole)?  With
 * @p set >= 0, record that it does (1) or does not (0).  Under mu. */
static int lk_held(rad *e, uint64_t id, uint64_t owner, int whole, int set)
{
	size_t i;
	int found = 0;

	pthread_mutex_lock(&e->mu);
	for (i = 0; i < e->nheld; i++)
		if (e->held[i].id == id && e->held[i].owner == owner &&
		    e->held[i].whole == whole) {
			found = 1;
			break;
		}
	if (set == 0 && found) {
		e->held[i] = e->held[--e->nheld];
	} else if (set == 1 && !found) {
		if (e->nheld == e->capheld) {
			size_t cap = e->capheld ? 2 * e->capheld : 16;
			lkheld *h = realloc(e->held, cap * sizeof(*h));
			if (h == NULL) {
				pthread_mutex_unlock(&e->mu);
				return kt__err(KT_ENOMEM, "out of memory");
			}
			e->held = h;
			e->capheld = cap;
		}
		e->held[e->nheld].id = id;
		e->held[e->nheld].owner = owner;
		e->held[e->nheld++].whole = whole;
	}
	pthread_mutex_unlock(&e->mu);
	return found;
}

static void lkw_cb(void *arg, uint64_t notify_id, uint64_t handle,
		   uint64_t notifier_id, void *data, size_t len)
{
	rad *e = arg;

	(void)notifier_id;
	(void)data;
	(void)len;
	(void)rados_notify_ack(e->io, e->lkwoid, notify_id, handle, NULL, 0);
}

static void lkw_errcb(void *pre, uint64_t cookie, int err)
{
	rad *e = pre;

	(void)cookie;
	(void)err;
	pthread_mutex_lock(&e->mu);
	e->lkw_lost = 1;
	pthread_cond_signal(&e->wcv); /* the watch thread renews it */
	pthread_mutex_unlock(&e->mu);
}

/* Watch T!lkw (again, if librados lost the watch), so that others can
 * tell this client lives: 0 or KT_EIO. */
static int lkw_ready(rad *e)
{
	rados_write_op_t op;
	kt__buf b = {0};
	char *a = NULL;
	int rc = 0, lost;

	pthread_mutex_lock(&e->lkmu);
	pthread_mutex_lock(&e->mu);
	lost = e->lkw_lost;
	pthread_mutex_unlock(&e->mu);
	if (e->lkw && !lost)
		goto out;
	if (e->lkwoid == NULL) {
		if ((rc = name_of(&b, e, "!lkw")) != 0 ||
		    (rc = kt__buf_addc(&b, '\0')) != 0)
			goto out;
		e->lkwoid = b.p;
		b.p = NULL;
	}
	if (e->addr[0] == '\0') {
		if ((rc = rados_getaddrs(e->cl, &a)) < 0) {
			rc = rerr(rc, "reading this client's address", NULL);
			goto out;
		}
		snprintf(e->addr, sizeof(e->addr), "%s", a);
		rados_buffer_free(a);
	}
	if (e->lkw) {
		(void)rados_unwatch2(e->io, e->lkwcookie);
		e->lkw = 0;
	}
	op = rados_create_write_op();
	rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	rc = wop_run(e, op, e->lkwoid);
	rados_release_write_op(op);
	if (rc == 0)
		rc = rados_watch2(e->io, e->lkwoid, &e->lkwcookie, lkw_cb,
				  lkw_errcb, e);
	if (rc < 0) {
		rc = rerr(rc, "watching", e->lkwoid);
		goto out;
	}
	e->lkw = 1;
	pthread_mutex_lock(&e->mu);
	e->lkw_lost = 0;
	pthread_mutex_unlock(&e->mu);
out:
	pthread_mutex_unlock(&e->lkmu);
	kt__buf_free(&b);
	return rc;
}

static void lk_alive_note(rad *e, uint64_t inst, uint64_t t)
{
	size_t i, old = 0;

	for (i = 0; i < sizeof(e->alive) / sizeof(e->alive[0]); i++) {
		if (e->alive[i].inst == inst) {
			old = i;
			break;
		}
		if (e->alive[i].at < e->alive[old].at)
			old = i;
	}
	e->alive[old].inst = inst;
	e->alive[old].at = t;
}

/* Does client @p inst answer a notify on T!lkw within the lease?  1, 0
 * (it timed out, or does not watch at all: its watch is gone), or KT_EIO
 * when that cannot be told: a client is never fenced on a doubt. */
static int lk_alive(rad *e, uint64_t inst)
{
	const unsigned char *p;
	char *reply = NULL;
	size_t rlen = 0, off, i, n;
	uint64_t t = now_ms();
	int rc, found = 0, ok = 0;

	pthread_mutex_lock(&e->mu);
	for (i = 0; i < sizeof(e->alive) / sizeof(e->alive[0]); i++)
		if (e->alive[i].inst == inst && t - e->alive[i].at < ALIVE_MS)
			found = 1;
	pthread_mutex_unlock(&e->mu);
	if (found)
		return 1;
	rc = rados_notify2(e->io, e->lkwoid, "", 0, e->lease_ms, &reply,
			   &rlen);
	if (rc < 0 && rc != -ETIMEDOUT) {
		if (reply != NULL)
			rados_buffer_free(reply);
		return rerr(rc, "asking who lives on", e->lkwoid);
	}
	/* The reply: u32 count, then per acknowledgement u64 client id,
	 * u64 cookie, u32 length and that many bytes; then u32 count and
	 * per watcher that timed out u64 client id, u64 cookie.  Only a
	 * reply read whole decides. */
	p = (const unsigned char *)reply;
	t = now_ms();
	pthread_mutex_lock(&e->mu);
	if (reply != NULL && rlen >= 4) {
		n = kt__get32(p);
		for (i = 0, off = 4; i < n && off + 20 <= rlen; i++) {
			uint64_t gid = kt__get64(p + off);
			size_t bl = kt__get32(p + off + 16);
			if (bl > rlen - off - 20)
				break;
			if (gid == inst)
				found = 1;
			lk_alive_note(e, gid, t);
			off += 20 + bl;
		}
		if (i == n && off + 4 <= rlen) {
			n = kt__get32(p + off);
			ok = n <= (rlen - off - 4) / 16;
		}
	}
	pthread_mutex_unlock(&e->mu);
	if (reply != NULL)
		rados_buffer_free(reply);
	if (!found && !ok)
		return kt__err(KT_EIO, "ceph: locks: cannot tell whether "
			       "client %" PRIu64 " lives (a notify on '%s' "
			       "gave %s)", inst, e->lkwoid,
			       rc < 0 ? "no usable reply" : "a malformed "
			       "reply");
	return found;
}

static int lk_was_fenced(rad *e, uint64_t inst)
{
	unsigned int i;
	int hit = 0;

	pthread_mutex_lock(&e->mu);
	for (i = 0; i < sizeof(e->fenced) / sizeof(e->fenced[0]); i++)
		if (e->fenced[i] == inst && inst != 0)
			hit = 1;
	pthread_mutex_unlock(&e->mu);
	return hit;
}

/* Fence client @p d->inst (it did not answer): blocklist its address and
 * wait until this client's OSD map has that. */
static int lk_fence(rad *e, const kt__lkent *d)
{
	char a[KT__SHOWSZ];
	int rc;

	if (d->addr[0] == '\0')
		return kt__err(KT_ECORRUPT, "a lock of client %" PRIu64
			       " keeps no address to fence it by", d->inst);
	if ((rc = rados_blocklist_add(e->cl, (char *)d->addr, 0)) < 0 ||
	    (rc = rados_wait_for_latest_osdmap(e->cl)) < 0)
		return kt__err(KT_EIO, "ceph: fencing client %" PRIu64 " (%s), "
			       "which holds a lock and does not answer: %s",
			       d->inst,
			       kt__show(a, sizeof(a), d->addr, strlen(d->addr)),
			       strerror(-rc));
	/* Its other entries go without asking again. */
	pthread_mutex_lock(&e->mu);
	e->fenced[e->nfenced++ % (sizeof(e->fenced) / sizeof(e->fenced[0]))] =
		d->inst;
	pthread_mutex_unlock(&e->mu);
	return 0;
}

static void lk_ents_free(kt__lkent *v, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		kt__lk_free(&v[i]);
	free(v);
}

/* Drop every entry of client @p inst from lock object @p oid, read as
 * @p rd: 0, or a guard failed (read again), or KT_EIO. */
static int lk_drop_client(rad *e, const char *oid, const oread *rd,
			  const kt__lkent *v, size_t n, uint64_t inst)
{
	rados_write_op_t op = rados_create_write_op();
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	size_t *lens = calloc(n ? n : 1, sizeof(*lens));
	size_t i, k = 0;
	int rc;

	if (keys == NULL || lens == NULL) {
		rados_release_write_op(op);
		free(keys);
		free(lens);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	for (i = 0; i < n; i++)
		if (v[i].inst == inst) {
			keys[k] = rd->keys[i].p;
			lens[k++] = rd->keys[i].len;
		}
	rados_write_op_assert_version(op, rd->ver);
	if (k == n)
		rados_write_op_remove(op);
	else
		rados_write_op_omap_rm_keys2(op, keys, lens, k);
	rc = wop_run(e, op, oid);
	rados_release_write_op(op);
	free(keys);
	free(lens);
	if (rc < 0 && !is_conflict(rc))
		return rerr(rc, "dropping a fenced client's locks from", oid);
	return 0;
}

int kt__rados_lock(kt__rows *r, uint64_t id, kt_lock *lk, unsigned int flags,
		   int test)
{
	rad *e = (rad *)r;
	int whole = (flags & KT_LOCK_WHOLE) != 0;
	char name[32], mykey[KT__LKKEY_MAX], a[KT__SHOWSZ];
	kt__buf oid = {0}, val = {0};
	kt__lkent *v = NULL, m;
	oread rd;
	size_t n = 0, i;
	int rc, tries, mine;

	memset(&m, 0, sizeof(m));
	memset(&rd, 0, sizeof(rd));
	rd.raw = 1;
	/* Dropping what this handle does not hold: nothing to do. */
	if (!test && lk->type == KT_LOCK_UNLOCK &&
	    lk_held(e, id, lk->owner, whole, -1) == 0)
		return 0;
	if (!test && (rc = lkw_ready(e)) != 0)
		return rc;
	if (test && e->lkwoid == NULL && (rc = lkw_ready(e)) != 0)
		return rc;
	snprintf(name, sizeof(name), "!lk.%016" PRIx64, id);
	if ((rc = name_of(&oid, e, name)) != 0 ||
	    (rc = kt__buf_addc(&oid, '\0')) != 0) {
		kt__buf_free(&oid);
		return rc;
	}
	/* A change and what this handle notes it holds go together: two
	 * threads of one owner must not leave the note saying otherwise
	 * than the store (lk_held). */
	if (!test)
		pthread_mutex_lock(&e->lkop);
	kt__lk_key(mykey, e->inst, lk->owner, whole);
	for (tries = 0;; tries++) {
		const kt__lkrange *c = NULL;
		oreq q;
		rados_write_op_t op;

		if (tries == LK_TRIES) {
			rc = kt__err(KT_EIO, "locks of node %" PRIu64 ": the "
				     "lock object kept changing (%d reads)",
				     id, tries);
			break;
		}
		memset(&q, 0, sizeof(q));
		q.after = "";
		q.max = PAGE_MAX;
		if ((rc = oread_once(e, oid.p, &q, &rd)) != 0)
			break;
		lk_ents_free(v, n);
		n = 0;
		if ((v = calloc(rd.n ? rd.n : 1, sizeof(*v))) == NULL) {
			rc = kt__err(KT_ENOMEM, "out of memory");
			break;
		}
		mine = -1;
		for (i = 0; i < rd.n && rc == 0; i++, n++) {
			rc = kt__lk_dec(&v[i], rd.keys[i].p, rd.keys[i].len,
					rd.vals[i].p, rd.vals[i].len, oid.p);
			if (rc == 0 && strlen(mykey) == rd.keys[i].len &&
			    memcmp(mykey, rd.keys[i].p, rd.keys[i].len) == 0)
				mine = (int)i;
		}
		if (rc != 0)
			break;
		for (i = 0; i < n && c == NULL; i++)
			if ((int)i != mine && v[i].whole == whole)
				c = kt__lk_conflict(&v[i], lk->type, lk->start,
						    lk->end);
		if (c != NULL) {
			const kt__lkent *d = &v[--i];
			if (d->inst != e->inst) {
				int fenced = lk_was_fenced(e, d->inst);
				int alive = fenced ? 0 : lk_alive(e, d->inst);
				if (alive < 0) {
					rc = alive;
					break;
				}
				if (!alive) {
					if ((!fenced && (rc = lk_fence(e, d)) != 0) ||
					    (rc = lk_drop_client(e, oid.p, &rd,
								 v, n,
								 d->inst)) != 0)
						break;
					continue;
				}
			}
			if (test) {
				lk->type = c->type;
				lk->start = c->start;
				lk->end = c->end;
				lk->owner = d->owner;
				lk->pid = d->pid;
				lk->here = d->inst == e->inst;
				break;
			}
			rc = kt__err(KT_ELOCKED, "lock of node %" PRIu64 ": "
				     "bytes %" PRIu64 " to %" PRIu64 " are "
				     "locked (%s) by owner %" PRIx64 " of "
				     "client %" PRIu64 " (%s)", id, c->start,
				     c->end, c->type == KT_LOCK_EXCL
					     ? "exclusive" : "shared",
				     d->owner, d->inst,
				     kt__show(a, sizeof(a), d->addr,
					      strlen(d->addr)));
			break;
		}
		if (test) {
			lk->type = KT_LOCK_UNLOCK;
			break;
		}
		kt__lk_free(&m);
		if (mine >= 0) {
			m = v[mine];
			memset(&v[mine], 0, sizeof(v[mine]));
		} else {
			if (lk->type == KT_LOCK_UNLOCK) {
				rc = lk_held(e, id, lk->owner, whole, 0);
				rc = rc < 0 ? rc : 0;
				break;
			}
			if (n >= LK_OWNERS_MAX) {
				rc = kt__err(KT_EIO, "locks of node %" PRIu64
					     ": %d owners hold locks on it "
					     "already", id, LK_OWNERS_MAX);
				break;
			}
			m.inst = e->inst;
			m.owner = lk->owner;
			m.whole = whole;
			snprintf(m.addr, sizeof(m.addr), "%s", e->addr);
		}
		m.pid = lk->pid;
		if ((rc = kt__lk_apply(&m, lk->type, lk->start, lk->end)) != 0 ||
		    (m.n > 0 && (rc = kt__lk_enc(&val, &m)) != 0))
			break;
		op = rados_create_write_op();
		if (!rd.exists)
			rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
		else
			rados_write_op_assert_version(op, rd.ver);
		if (m.n > 0) {
			const char *kp = mykey, *vp = val.p;
			size_t kl = strlen(mykey), vl = val.len;
			rados_write_op_omap_set2(op, &kp, &vp, &kl, &vl, 1);
		} else if (n == 1) {
			rados_write_op_remove(op);
		} else {
			const char *kp = mykey;
			size_t kl = strlen(mykey);
			rados_write_op_omap_rm_keys2(op, &kp, &kl, 1);
		}
		rc = wop_run(e, op, oid.p);
		rados_release_write_op(op);
		if (rc < 0 && is_conflict(rc))
			continue;
		if (rc < 0) {
			rc = rerr(rc, "writing locks to", oid.p);
			break;
		}
		rc = lk_held(e, id, lk->owner, whole, m.n > 0);
		rc = rc < 0 ? rc : 0;
		break;
	}
	if (!test)
		pthread_mutex_unlock(&e->lkop);
	lk_ents_free(v, n);
	kt__lk_free(&m);
	oread_clear(&rd);
	kt__buf_free(&oid);
	kt__buf_free(&val);
	return rc;
}

/* Drop every lock this handle holds, and stop watching T!lkw
 * (rad_close). */
static void lk_close(rad *e)
{
	kt_lock u;

	memset(&u, 0, sizeof(u));
	u.end = UINT64_MAX;
	for (;;) {
		lkheld h;
		pthread_mutex_lock(&e->mu);
		if (e->nheld == 0) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		h = e->held[e->nheld - 1];
		pthread_mutex_unlock(&e->mu);
		u.owner = h.owner;
		if (kt__rados_lock(&e->base, h.id, &u,
				   h.whole ? KT_LOCK_WHOLE : 0, 0) != 0)
			(void)lk_held(e, h.id, h.owner, h.whole, 0);
	}
	if (e->lkw) {
		(void)rados_unwatch2(e->io, e->lkwcookie);
		/* No callback may still run on lkwoid. */
		(void)rados_watch_flush(e->cl);
	}
	e->lkw = 0;
	free(e->held);
	free(e->lkwoid);
	e->held = NULL;
	e->lkwoid = NULL;
}

/* ------------------------------------------------------------------------ */
/* The rest of the seam */

int kt__rados_layout(kt__rows *r)
{
	return ((rad *)r)->layout;
}

static int rad_empty(kt__rows *r)
{
	rad *e = (rad *)r;
	kt__cursor *c = NULL;
	kt__scan how;
	kt__row row;
	int rc;

	memset(&how, 0, sizeof(how));
	how.part = kt__sl("", 0);
	how.flags = KT__SCAN_PREFIX;
	if ((rc = rad_scan(&c, &e->base, NULL, &how)) != 0)
		return rc;
	rc = rad_next(c, &row);
	rad_cursor_free(c);
	if (rc == KT_ITEROVER)
		return 1;
	return rc == 0 ? 0 : rc;
}

static int rad_sync(kt__rows *r)
{
	/* RADOS acknowledges a write once every replica has it. */
	(void)r;
	return 0;
}

static void rad_close(kt__rows *r)
{
	rad *e = (rad *)r;

	if (e == NULL)
		return;
	if (e->io != NULL) {
		lk_close(e);
		watch_stop(e);
		sent_reap(e, 1);
	}
	fin_reap(e, 1);
	if (e->io != NULL && !kt__rados_test_stop_after_commit)
		marks_flush(e);
	while (e->marks != NULL) {
		pmark *m = e->marks;
		e->marks = m->next;
		free(m);
	}
	free(e->shard_ok);
	if (e->io != NULL)
		rados_ioctx_destroy(e->io);
	if (e->cl != NULL)
		rados_shutdown(e->cl);
	if (e->known_set != NULL)
		rad_snapshot_free(r, e->known_set);
	pthread_mutex_destroy(&e->mu);
	pthread_mutex_destroy(&e->fin_mu);
	pthread_cond_destroy(&e->fin_cv);
	pthread_mutex_destroy(&e->lkmu);
	pthread_mutex_destroy(&e->lkop);
	pthread_cond_destroy(&e->wcv);
	free(e->tree);
	free(e);
}

static const kt__rows_ops rad_ops = {
	.get = rad_get,
	.scan = rad_scan,
	.next = rad_next,
	.cursor_free = rad_cursor_free,
	.snapshot = rad_snapshot,
	.snapshot_free = rad_snapshot_free,
	.commit = rad_commit,
	.validate = rad_validate,
	.prefetch = rad_prefetch,
	.prefetch_scan = rad_prefetch_scan,
	.sync = rad_sync,
	.empty = rad_empty,
	.close = rad_close,
	.fence = rad_fence,
	.unfence = rad_unfence,
	.staged = 1,
};

static int tree_name_ok(const char *t)
{
	size_t i, n = strlen(t);

	if (n == 0 || n > 100)
		return 0;
	for (i = 0; i < n; i++) {
		char c = t[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

/* Ceph options keytree gives other defaults than Ceph's own (0: wait
 * forever for an OSD or a monitor operation; 300 s to reach a monitor at
 * connect), so that a cluster that is down gets a clear error in half a
 * minute.  An option still at Ceph's default after the configuration file
 * and CEPH_ARGS is taken to be unset. */
static const struct {
	const char *name;
	double ceph;
} timeouts[] = {
	{"rados_osd_op_timeout", 0},
	{"rados_mon_op_timeout", 0},
	{"client_mount_timeout", 300},
};
#define TIMEOUT_DEFAULT "30"

static void conf_defaults(rados_t cl)
{
	char cur[32];
	size_t i;

	for (i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++)
		if (rados_conf_get(cl, timeouts[i].name, cur, sizeof(cur)) ==
			    0 &&
		    strtod(cur, NULL) == timeouts[i].ceph)
			(void)rados_conf_set(cl, timeouts[i].name,
					     TIMEOUT_DEFAULT);
}

/* Load librados, connect to the cluster @p o names and open its pool and
 * namespace: *cl and *io, both NULL on failure. */
static int cluster_open(const kt__rados_opts *o, rados_t *cl,
			rados_ioctx_t *io)
{
	int rc;

	*cl = NULL;
	*io = NULL;
	if (o->pool == NULL || o->pool[0] == '\0')
		return kt__err(KT_EINVAL, "ceph: no pool named");
	pthread_once(&lib_once, lib_load);
	if (lib_error[0] != '\0')
		return kt__err(KT_ENOTSUP, "ceph: librados is not available "
			       "(%s); install the librados2 package",
			       lib_error);
	if (o->tree == NULL || !tree_name_ok(o->tree))
		return kt__err(KT_EINVAL, "ceph: tree name '%s' is not 1 to "
			       "100 of A-Z a-z 0-9 . _ -",
			       o->tree ? o->tree : "");
	rc = rados_create2(cl, "ceph",
			   o->client && o->client[0] ? o->client
						     : "client.admin", 0);
	if (rc < 0) {
		*cl = NULL;
		return rerr(rc, "creating a cluster handle (client name "
			    "wrong?)", NULL);
	}
	rc = rados_conf_read_file(*cl, o->conf && o->conf[0] ? o->conf
							     : NULL);
	if (rc < 0) {
		if (o->conf && o->conf[0])
			rc = kt__err(KT_EIO, "ceph: reading configuration "
				     "'%s': %s", o->conf, strerror(-rc));
		else
			rc = kt__err(KT_EIO, "ceph: no configuration found "
				     "(give one with KEYTREE_CEPH_CONF or "
				     "ceph_conf): %s", strerror(-rc));
		goto fail;
	}
	(void)rados_conf_parse_env(*cl, NULL);
	conf_defaults(*cl);
	if ((rc = rados_connect(*cl)) < 0) {
		char t[32] = "?";
		(void)rados_conf_get(*cl, "client_mount_timeout", t, sizeof(t));
		rc = kt__err(KT_EIO, "ceph: cannot connect to the cluster%s%s"
			     ": %s%s%s%s", o->conf ? " of " : "",
			     o->conf ? o->conf : "", strerror(-rc),
			     rc == -ETIMEDOUT ? " (no monitor answered in "
						"client_mount_timeout, " : "",
			     rc == -ETIMEDOUT ? t : "",
			     rc == -ETIMEDOUT ? " s: is the cluster up?)"
					      : "");
		goto fail;
	}
	if ((rc = rados_ioctx_create(*cl, o->pool, io)) < 0) {
		*io = NULL;
		if (rc == -ENOENT)
			rc = kt__err(KT_ENOTFOUND, "ceph: pool '%s' does not "
				     "exist (make it with 'ceph osd pool "
				     "create %s')", o->pool, o->pool);
		else
			rc = rerr(rc, "opening pool", o->pool);
		goto fail;
	}
	rados_ioctx_set_namespace(*io, o->nspace ? o->nspace : "");
	return 0;
fail:
	rados_shutdown(*cl);
	*cl = NULL;
	return rc;
}

int kt__rados_open(kt__rows **out, const kt__rados_opts *o)
{
	rad *e;
	const char *env;
	kt__buf cat = {0};
	oread r;
	oreq q;
	int rc;

	*out = NULL;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	e->base.ops = &rad_ops;
	pthread_mutex_init(&e->mu, NULL);
	pthread_mutex_init(&e->fin_mu, NULL);
	pthread_cond_init(&e->fin_cv, NULL);
	pthread_mutex_init(&e->lkmu, NULL);
	pthread_mutex_init(&e->lkop, NULL);
	pthread_cond_init(&e->wcv, NULL);
	e->heard_end = &e->heard;
	if ((rc = cluster_open(o, &e->cl, &e->io)) != 0) {
		rad_close(&e->base);
		return rc;
	}
	if ((e->tree = strdup(o->tree)) == NULL ||
	    (e->known_set = calloc(1, sizeof(*e->known_set))) == NULL) {
		rad_close(&e->base);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	e->treelen = strlen(e->tree);
	e->lease_ms = o->lease_ms;
	if (e->lease_ms == 0 && (env = getenv("KEYTREE_RADOS_LEASE_MS")) &&
	    atoi(env) > 0)
		e->lease_ms = (unsigned int)atoi(env);
	if (e->lease_ms == 0)
		e->lease_ms = LEASE_DEFAULT_MS;
	e->inst = rados_get_instance_id(e->cl);
	/* The tree exists when its catalog does. */
	memset(&r, 0, sizeof(r));
	memset(&q, 0, sizeof(q));
	if ((rc = name_of(&cat, e, "!cat")) == 0)
		rc = oread_once(e, cat.p, &q, &r);
	if (rc == 0 && !r.exists) {
		if (!o->create) {
			rc = kt__err(KT_ENOTFOUND, "ceph: no tree '%s' in pool "
				     "'%s'%s%s", o->tree, o->pool,
				     o->nspace && o->nspace[0] ? ", namespace "
							       : "",
				     o->nspace ? o->nspace : "");
		} else {
			rados_write_op_t op = rados_create_write_op();
			char fmt[16];
			e->layout = kt__rados_test_layout > 0
					    ? kt__rados_test_layout
					    : LAYOUT_CUR;
			snprintf(fmt, sizeof(fmt), "%d", e->layout);
			rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE,
					      NULL);
			rados_write_op_setxattr(op, LK, FREE, 1);
			if (e->layout > 1)
				rados_write_op_setxattr(op, FMTX, fmt,
							strlen(fmt));
			rc = wop_run(e, op, cat.p);
			rados_release_write_op(op);
			if (rc == -EEXIST) /* made meanwhile: read it */
				rc = oread_once(e, cat.p, &q, &r);
			else if (rc < 0)
				rc = rerr(rc, "making the tree's catalog",
					  cat.p);
		}
	}
	/* The layout: kt.fmt, or 1 for trees made before it was kept. */
	if (rc == 0 && r.exists) {
		e->layout = r.fmt == 0 ? 1 : r.fmt;
		if (r.fmt < 0 || r.fmt > LAYOUT_CUR)
			rc = kt__err(KT_ECORRUPT, "ceph: tree '%s' has layout "
				     "'%s' (xattr " FMTX " of its catalog), "
				     "which this keytree does not know; "
				     "a newer keytree made it", o->tree,
				     r.fmt < 0 ? "?" : "newer");
	}
	oread_clear(&r);
	kt__buf_free(&cat);
	if (rc != 0) {
		rad_close(&e->base);
		return rc;
	}
	*out = &e->base;
	return 0;
}

/* Is @p oid one of tree @p t's objects: "T/", "T#" or "T!" and more? */
static int tree_owns(const char *oid, const char *t, size_t tlen)
{
	return strncmp(oid, t, tlen) == 0 &&
	       (oid[tlen] == '/' || oid[tlen] == '#' || oid[tlen] == '!');
}

#define REMOVE_WINDOW 64   /* removals in flight at once */

/* Remove the objects named in @p names (NUL-separated, @p n of them),
 * REMOVE_WINDOW at a time.  An object already gone is not an error. */
static int remove_all(rados_ioctx_t io, const char *names, size_t n)
{
	rados_completion_t c[REMOVE_WINDOW];
	const char *oid[REMOVE_WINDOW];
	const char *p = names;
	size_t i = 0, k, m;
	int rc = 0, r;

	while (i < n && rc == 0) {
		for (m = 0; m < REMOVE_WINDOW && i < n; m++, i++) {
			oid[m] = p;
			p += strlen(p) + 1;
			c[m] = NULL;
			r = rados_aio_create_completion2(NULL, NULL, &c[m]);
			if (r == 0)
				r = rados_aio_remove(io, oid[m], c[m]);
			if (r < 0 && rc == 0)
				rc = rerr(r, "removing", oid[m]);
		}
		for (k = 0; k < m; k++) {
			if (c[k] == NULL)
				continue;
			rados_aio_wait_for_complete(c[k]);
			r = rados_aio_get_return_value(c[k]);
			rados_aio_release(c[k]);
			if (r < 0 && r != -ENOENT && rc == 0)
				rc = rerr(r, "removing", oid[k]);
		}
	}
	return rc;
}

/*
 * Sweeping commit records.  A record normally goes when its commit is
 * finished: by its writer, or by a reader that met one of its locks.  A
 * writer killed after its last lock was gone but before removing the
 * record (or one whose locks nobody ever meets again) leaves it behind:
 * harmless, but it stays.  The sweep lists the tree's records and
 * finishes each: C rolled forward, A rolled back (each object guarded on
 * its lock still being the commit's, so what is finished already is left
 * alone), then removed; a record still P after a lease is flipped to A
 * first, as a reader would after waiting that long.
 */
/* Finish staged commit @p txid, whose writer is gone: every object of
 * every part rolled forward (@p apply) or back, then the records. */
static int lock_of(rad *e, const char *oid, char *lock, size_t cap);

/* Finish object @p oid of staged commit @p txid for the sweep: until its
 * lock is no longer the commit's.  stage_obj_finish also returns 0 for
 * "read again" (a reader applied a part meanwhile), and the parts must
 * not go while any object still needs them. */
static int stage_sweep_obj(rad *e, const char *oid, const char *txid,
			   int apply)
{
	char lock[128];
	int rc, tries;

	/* A reader rolling it forward at the same time is done within
	 * milliseconds.  An object that still will not move (a part fenced
	 * out by a later one, as older writers could leave, or a part
	 * record gone) is left as the sweep always left it. */
	for (tries = 0; tries < 20; tries++) {
		if ((rc = stage_obj_finish(e, oid, txid, apply)) != 0 ||
		    (rc = lock_of(e, oid, lock, sizeof(lock))) != 0)
			return rc;
		if (strcmp(lock, txid) != 0)
			return 0;
		sleep_ms(10);
	}
	return 0;
}

static int stage_sweep_one(rad *e, const char *txid, int apply)
{
	uint32_t k;
	size_t i;
	int rc = 0;

	for (k = 0; rc == 0; k++) {
		rec r = {0};
		rc = stage_part_read(e, txid, k, &r);
		for (i = 0; rc == 0 && i < r.n; i++)
			rc = stage_sweep_obj(e, r.o[i].oid, txid, apply);
		rec_free(&r);
	}
	if (rc < 0)
		return rc;
	stage_remove(e, txid, UINT32_MAX);
	return 0;
}

static int sweep_records(rad *e, int (*note)(const char *, void *),
			 void *arg, size_t *nswept);
static int sweep_locks(rad *e, int (*note)(const char *, void *), void *arg,
		       size_t *nswept);

int kt__rados_sweep(kt__rows *r, int (*note)(const char *, void *),
		    void *arg, size_t *nswept)
{
	rad *e = (rad *)r;
	int rc;

	*nswept = 0;
	/* Only this engine's handles (a test may put another engine, over
	 * this one, under a store). */
	if (r->ops != &rad_ops)
		return 0;
	fin_reap(e, 1);
	marks_flush(e); /* this handle's own */
	rc = sweep_records(e, note, arg, nswept);
	if (rc == 0)
		rc = sweep_locks(e, note, arg, nswept);
	return rc;
}

/* The lock (kt.lk) on an object, read with others in flight: send() it,
 * then take() it ("" when the object has none or is gone). */
typedef struct lkread {
	const char *oid;
	rados_read_op_t op;
	rados_completion_t c;
	rados_xattrs_iter_t xi;
	int srv;
} lkread;

#define LOCK_WINDOW 32 /* lock reads in flight at once */

static int lkread_send(rad *e, lkread *r, const char *oid)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->oid = oid;
	if ((r->op = rados_create_read_op()) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	rados_read_op_getxattrs(r->op, &r->xi, &r->srv);
	rc = rados_aio_create_completion2(NULL, NULL, &r->c);
	if (rc == 0)
		rc = rados_aio_read_op_operate(r->op, e->io, r->c, oid, 0);
	if (rc < 0) {
		/* Nothing in flight: take() finds nothing to wait for. */
		if (r->c != NULL)
			rados_aio_release(r->c);
		if (r->xi != NULL)
			rados_getxattrs_end(r->xi);
		rados_release_read_op(r->op);
		r->c = NULL;
		r->op = NULL;
		r->xi = NULL;
		return rerr(rc, "reading the lock of", oid);
	}
	return 0;
}

/* With @p marked, whether the object keeps a commit's record as its
 * primary (kt.t.ID or kt.d.ID). */
static int lkread_take(lkread *r, char *lock, size_t cap, int *marked)
{
	const char *xn, *xv, *oid = r->oid;
	size_t xl;
	int rc = 0;

	lock[0] = '\0';
	if (marked != NULL)
		*marked = 0;
	if (r->c != NULL) {
		rados_aio_wait_for_complete(r->c);
		rc = rados_aio_get_return_value(r->c);
	}
	while (rc == 0 && r->xi != NULL &&
	       rados_getxattrs_next(r->xi, &xn, &xv, &xl) == 0 && xn != NULL) {
		if (strcmp(xn, LK) == 0 && xl < cap) {
			memcpy(lock, xv, xl);
			lock[xl] = '\0';
		}
		if (marked != NULL &&
		    (strncmp(xn, PRI_STATE, strlen(PRI_STATE)) == 0 ||
		     strncmp(xn, PRI_BODY, strlen(PRI_BODY)) == 0 ||
		     strncmp(xn, PRI_CAT, strlen(PRI_CAT)) == 0))
			*marked = 1;
	}
	if (r->xi != NULL)
		rados_getxattrs_end(r->xi);
	if (r->c != NULL)
		rados_aio_release(r->c);
	if (r->op != NULL)
		rados_release_read_op(r->op);
	memset(r, 0, sizeof(*r));
	if (rc == -ENOENT)
		return 0;
	return rc < 0 ? rerr(rc, "reading the lock of", oid) : 0;
}

static int lock_of(rad *e, const char *oid, char *lock, size_t cap)
{
	lkread r;
	int rc = lkread_send(e, &r, oid);

	if (rc != 0) {
		(void)lkread_take(&r, lock, cap, NULL);
		return rc;
	}
	return lkread_take(&r, lock, cap, NULL);
}

/*
 * Records left on primaries (prim_*): a client killed after its commit
 * point but before its next write to the primary leaves kt.t.ID and
 * kt.d.ID there, which nothing else would remove.  For each: a commit
 * rolled back (A) has nothing left to do; a committed one (C) has its
 * other objects finished first, from the body, if any is still locked by
 * it; then the record goes.  A primary still locked by the commit is
 * left to its writer (sweep_locks settles such locks first).
 */
typedef struct marks_walk {
	char lock[128];
	kt__buf ids;  /* the ids of the records, each ended by a NUL */
} marks_walk;

static int marks_one(const char *xn, const char *xv, size_t xl, void *arg)
{
	marks_walk *w = arg;
	size_t pl = strlen(PRI_STATE), at;
	const char *id = xn + pl;
	int dup = 0;

	if (strcmp(xn, LK) == 0)
		lock_take(w->lock, sizeof(w->lock), xv, xl);
	/* Each id once: by its state, or its body alone. */
	if (strncmp(xn, PRI_STATE, pl) != 0 && strncmp(xn, PRI_BODY, pl) != 0 &&
	    strncmp(xn, PRI_CAT, pl) != 0)
		return 0;
	for (at = 0; at < w->ids.len; at += strlen(w->ids.p + at) + 1)
		dup |= strcmp(w->ids.p + at, id) == 0;
	if (dup || strlen(id) >= 64)
		return 0;
	return kt__buf_add(&w->ids, id, strlen(id) + 1);
}

static int sweep_marks_one(rad *e, const char *oid,
			   int (*note)(const char *, void *), void *arg,
			   size_t *nswept)
{
	marks_walk w;
	size_t at;
	int rc, exists;

	memset(&w, 0, sizeof(w));
	rc = xattrs_each(e, oid, &exists, marks_one, &w);
	for (at = 0; rc == 0 && at < w.ids.len;
	     at += strlen(w.ids.p + at) + 1) {
		const char *id = w.ids.p + at;
		rec r = {0};
		pxa x;
		size_t i;
		char msg[300], other[128];
		int finished = 0;
		if (strcmp(w.lock, id) == 0)
			continue;
		if ((rc = pxa_read(e, oid, id, &x)) != 0)
			break;
		if (strcmp(x.lock, id) == 0 || (x.t != 'C' && x.t != 'A')) {
			pxa_free(&x); /* pending (locked meanwhile) */
			continue;
		}
		if (x.t == 'C' && x.has_d) {
			r.body = x.d;
			memset(&x.d, 0, sizeof(x.d));
			rc = rec_parse(&r, e, oid);
			for (i = 0; rc == 0 && i < r.n; i++) {
				if (strcmp(r.o[i].oid, oid) == 0)
					continue;
				rc = lock_of(e, r.o[i].oid, other,
					     sizeof(other));
				if (rc == 0 && strcmp(other, id) == 0) {
					rc = wait_free(e, r.o[i].oid);
					finished = 1;
				}
			}
		}
		pxa_free(&x);
		rec_free(&r);
		if (rc != 0)
			break;
		prim_remove(e, oid, id);
		__atomic_add_fetch(&kt__rados_test_marks_swept, 1,
				   __ATOMIC_RELAXED);
		/* Told and counted only when it had objects to finish:
		 * the record of a commit that is over changes nothing
		 * anyone reads (a live client's may be waiting for its
		 * next write there). */
		if (!finished)
			continue;
		(*nswept)++;
		snprintf(msg, sizeof(msg),
			 "commit %.80s, whose record object %.120s kept, "
			 "finished and its record removed", id, oid);
		if (note != NULL)
			(void)note(msg, arg);
	}
	kt__buf_free(&w.ids);
	return rc;
}

/* Locks whose commit has no record.  A writer sends its record with its
 * locks, and removes the record only after every lock is gone; but a lock
 * operation of a client killed mid-commit can reach its OSD after the
 * commit was rolled back and its record removed.  A reader of that object
 * undoes such a lock after twice the budget its id names
 * (lock_settle); an object nobody reads would keep it, so the sweep walks
 * the tree's objects, and undoes each lock whose record is still absent
 * once that time has passed (locks of commits with a record belong to
 * live clients: sweep_records has settled the others). */
/* Keep in @p found (object, lock id, ...) only the locks still there
 * and still without a record; *@p wait becomes twice the longest budget
 * among them. */
static int sweep_locks_recheck(rad *e, kt__buf *found, uint64_t *wait)
{
	kt__buf keep = {0};
	char lock[128];
	size_t at;
	int rc = 0;

	*wait = 0;
	for (at = 0; rc == 0 && at < found->len;) {
		const char *oid = found->p + at;
		const char *txid = oid + strlen(oid) + 1;
		char state = 0;
		at = (size_t)(txid - found->p) + strlen(txid) + 1;
		if ((rc = lock_of(e, oid, lock, sizeof(lock))) != 0 ||
		    strcmp(lock, txid) != 0 ||
		    (rc = lock_state(e, oid, txid, &state)) != 0 || state != 0)
			continue;
		if (!is_staged(txid) && 2 * (uint64_t)tx_budget(txid) > *wait)
			*wait = 2 * (uint64_t)tx_budget(txid);
		if ((rc = kt__buf_add(&keep, oid, strlen(oid) + 1)) == 0)
			rc = kt__buf_add(&keep, txid, strlen(txid) + 1);
	}
	kt__buf_free(found);
	*found = keep;
	return rc;
}

static int sweep_locks(rad *e, int (*note)(const char *, void *), void *arg,
		       size_t *nswept)
{
	rados_list_ctx_t ls = NULL;
	kt__buf objs = {0}, found = {0}, marked = {0};
	const char *ent, *key, *ns;
	size_t elen, klen, nslen, at, nfound = 0;
	char lock[128];
	uint64_t wait = 0, t0;
	int rc = 0, lr;

	lr = rados_nobjects_list_open(e->io, &ls);
	while (lr == 0 && rc == 0) {
		lr = rados_nobjects_list_next2(ls, &ent, &key, &ns, &elen,
					       &klen, &nslen);
		if (lr < 0)
			break;
		if (memchr(ent, '\0', elen) != NULL || elen <= e->treelen ||
		    !tree_owns(ent, e->tree, e->treelen) ||
		    (elen > e->treelen + 4 &&
		     memcmp(ent + e->treelen, "!tx.", 4) == 0))
			continue;
		if ((rc = kt__buf_add(&objs, ent, elen)) == 0)
			rc = kt__buf_addc(&objs, '\0');
	}
	if (ls != NULL)
		rados_nobjects_list_close(ls);
	if (rc == 0 && lr < 0 && lr != -ENOENT)
		rc = rerr(lr, "listing the objects of tree", e->tree);
	/* Pass 1: the locked objects whose commit has no record, their
	 * locks read LOCK_WINDOW at a time (one object after another would
	 * take minutes in a tree of 10^5 objects). */
	{
		lkread win[LOCK_WINDOW];
		size_t head = 0, tail = 0, send_at = 0;
		for (;;) {
			const char *oid;
			char state = 0;
			unsigned int b;
			int trc, mk = 0;
			while (rc == 0 && head - tail < LOCK_WINDOW &&
			       send_at < objs.len) {
				rc = lkread_send(e, &win[head % LOCK_WINDOW],
						 objs.p + send_at);
				head++;
				send_at += strlen(objs.p + send_at) + 1;
			}
			if (tail == head)
				break;
			oid = win[tail % LOCK_WINDOW].oid;
			trc = lkread_take(&win[tail % LOCK_WINDOW], lock,
					  sizeof(lock), &mk);
			tail++;
			if (rc == 0)
				rc = trc;
			if (rc == 0 && mk)
				rc = kt__buf_add(&marked, oid, strlen(oid) + 1);
			if (rc != 0 || lock[0] == '\0' ||
			    strcmp(lock, FREE) == 0)
				continue;
			if ((rc = lock_state(e, oid, lock, &state)) != 0 ||
			    state == 'G')
				continue;
			/* A record on a primary is no object for
			 * sweep_records to find: settle its locks here. */
			if (state != 0) {
				char now[128], msg[300];
				if (!is_onobj(lock))
					continue;
				if ((rc = wait_free(e, oid)) != 0 ||
				    (rc = lock_of(e, oid, now, sizeof(now))) != 0 ||
				    strcmp(now, lock) == 0)
					continue;
				(*nswept)++;
				snprintf(msg, sizeof(msg),
					 "commit %.80s (%s), whose record is on "
					 "one of its objects, finished",
					 lock, state == 'C' ? "committed, rolled "
							      "forward"
							    : "rolled back");
				if (note != NULL)
					(void)note(msg, arg);
				continue;
			}
			b = is_staged(lock) ? 0 : tx_budget(lock);
			if (2 * (uint64_t)b > wait)
				wait = 2 * (uint64_t)b;
			if ((rc = kt__buf_add(&found, oid,
					      strlen(oid) + 1)) == 0)
				rc = kt__buf_add(&found, lock,
						 strlen(lock) + 1);
			nfound++;
		}
	}
	kt__buf_free(&objs);
	if (rc != 0 || nfound == 0) {
		kt__buf_free(&found);
		goto marks;
	}
	/* A live commit's record arrives within moments of its locks: look
	 * again after a lease, and wait out the budgets of the locks still
	 * without a record only (a large commit's is long). */
	t0 = now_ms();
	sleep_ms((unsigned int)(wait < e->lease_ms ? wait : e->lease_ms) + 1);
	rc = sweep_locks_recheck(e, &found, &wait);
	if (rc == 0 && found.len > 0 && now_ms() - t0 <= wait) {
		uint64_t rest = wait + 1 - (now_ms() - t0);
		while (rest > 0) {
			unsigned int step = rest > 60000 ? 60000
							 : (unsigned int)rest;
			sleep_ms(step);
			rest -= step;
		}
	}
	/* Pass 2, once a record sent with them would have come: undo each
	 * lock still there and still without a record. */
	for (at = 0; rc == 0 && at < found.len;) {
		const char *oid = found.p + at;
		const char *txid = oid + strlen(oid) + 1;
		char state = 0;
		at = (size_t)(txid - found.p) + strlen(txid) + 1;
		if ((rc = lock_of(e, oid, lock, sizeof(lock))) != 0)
			break;
		if (strcmp(lock, txid) != 0)
			continue; /* settled meanwhile */
		if ((rc = lock_state(e, oid, txid, &state)) != 0)
			break;
		if (state != 0)
			continue;
		{
			uint64_t since = now_ms() - 2 * wait - 1;
			rc = lock_settle(e, oid, txid, &since, NULL);
		}
		/* Told only when it is gone (lock_settle also returns 0 for
		 * "read again"). */
		if (rc == 0 && (rc = lock_of(e, oid, lock, sizeof(lock))) == 0 &&
		    strcmp(lock, txid) != 0) {
			char msg[300];
			(*nswept)++;
			snprintf(msg, sizeof(msg),
				 "object %.120s was locked by commit %.80s, "
				 "which has no record: unlocked", oid, txid);
			if (note != NULL)
				(void)note(msg, arg);
		}
	}
	kt__buf_free(&found);
marks:
	/* A reader that found every lock of a parallel commit in committed
	 * it and left its record (C) for the writer, which looks there
	 * when its own answers came late: give it a lease to. */
	if (rc == 0 && marked.len > 0)
		sleep_ms(e->lease_ms);
	for (at = 0; rc == 0 && at < marked.len;
	     at += strlen(marked.p + at) + 1)
		rc = sweep_marks_one(e, marked.p + at, note, arg, nswept);
	kt__buf_free(&marked);
	return rc;
}

static int sweep_records(rad *e, int (*note)(const char *, void *),
			 void *arg, size_t *nswept)
{
	rados_list_ctx_t ls = NULL;
	kt__buf names = {0};
	const char *ent, *key, *ns;
	size_t elen, klen, nslen, pre, n = 0, i, at;
	char *pending;
	char (*beats)[24];
	kt__buf parts = {0};
	int rc = 0, lr, pass;

	fin_reap(e, 1);
	pre = e->treelen + 4; /* "TREE!tx." */
	lr = rados_nobjects_list_open(e->io, &ls);
	while (lr == 0 && rc == 0) {
		lr = rados_nobjects_list_next2(ls, &ent, &key, &ns, &elen,
					       &klen, &nslen);
		if (lr < 0)
			break;
		if (elen <= pre || memchr(ent, '\0', elen) != NULL ||
		    strncmp(ent, e->tree, e->treelen) != 0 ||
		    memcmp(ent + e->treelen, "!tx.", 4) != 0)
			continue;
		/* Keep the commit ids; a staged commit's parts go with its
		 * header, and only those left without one here. */
		if (elen - pre > 3 && memmem(ent + pre, elen - pre, ".S.", 3)) {
			if ((rc = kt__buf_add(&parts, ent, elen)) == 0)
				rc = kt__buf_add(&parts, "", 1);
			continue;
		}
		if ((rc = kt__buf_add(&names, ent + pre, elen - pre)) == 0)
			rc = kt__buf_add(&names, "", 1);
		n++;
	}
	if (ls != NULL)
		rados_nobjects_list_close(ls);
	if (rc == 0 && lr < 0 && lr != -ENOENT)
		rc = rerr(lr, "listing the commit records of tree", e->tree);
	/* Parts whose header is gone: their writer was killed while it
	 * removed them (the header goes last). */
	for (at = 0; rc == 0 && at < parts.len;
	     at += strlen(parts.p + at) + 1) {
		const char *pn = parts.p + at;
		const char *end = strstr(pn + pre, ".S.");
		kt__buf hn = {0};
		char state = 0;
		if (end == NULL ||
		    (rc = kt__buf_add(&hn, pn, (size_t)(end - pn) + 2)) != 0 ||
		    (rc = kt__buf_addc(&hn, '\0')) != 0) {
			kt__buf_free(&hn);
			continue;
		}
		hn.len--;
		if ((rc = rec_read_obj(e, hn, &state, NULL, NULL)) == 0 &&
		    state == 0) {
			rados_write_op_t op = rados_create_write_op();
			rados_write_op_remove(op);
			if (wop_run(e, op, pn) == 0) {
				(*nswept)++;
				if (note != NULL) {
					char msg[200];
					snprintf(msg, sizeof(msg),
						 "part %.80s of a finished "
						 "staged commit removed",
						 pn + pre);
					(void)note(msg, arg);
				}
			}
			rados_release_write_op(op);
		}
	}
	kt__buf_free(&parts);
	if (rc != 0 || n == 0) {
		kt__buf_free(&names);
		return rc;
	}
	pending = calloc(n, 1);
	beats = calloc(n, sizeof(*beats));
	if (pending == NULL || beats == NULL) {
		free(pending);
		free(beats);
		kt__buf_free(&names);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	/* Pass 0 finishes what is C or A and marks what is P; pass 1,
	 * after a lease (or the longest budget among them: a large commit
	 * may still be writing its locks), rolls back what is still P. */
	for (pass = 0; pass < 2 && rc == 0; pass++) {
		int any = 0;
		if (pass == 1) {
			unsigned int wait = e->lease_ms, b;
			for (i = 0, at = 0; i < n;
			     at += strlen(names.p + at) + 1, i++) {
				any |= pending[i];
				b = tx_budget(names.p + at);
				if (pending[i] && b > wait)
					wait = b;
			}
			if (!any)
				break;
			sleep_ms(wait);
		}
		for (i = 0, at = 0; i < n && rc == 0;
		     at += strlen(names.p + at) + 1, i++) {
			const char *txid = names.p + at;
			char state, msg[200];
			rec body = {0};
			if (pass == 1 && !pending[i])
				continue;
			pending[i] = 0;
			if (is_staged(txid)) {
				/* A staged commit beats while its writer
				 * works: rolled back only if it stood still
				 * for the lease. */
				char beat[24];
				kt__buf hn = {0};
				if ((rc = name_of(&hn, e, "!tx.")) != 0 ||
				    (rc = kt__buf_add(&hn, txid,
						      strlen(txid))) != 0) {
					kt__buf_free(&hn);
					break;
				}
				/* (hn is taken over) */
				if ((rc = rec_read_obj(e, hn, &state, NULL,
						       beat)) != 0)
					break;
				if (state == 'P' && pass == 0) {
					pending[i] = 1;
					memcpy(beats[i], beat, sizeof(beat));
					continue;
				}
				if (state == 'P' &&
				    strcmp(beats[i], beat) != 0)
					continue; /* alive */
				if (state == 'P' &&
				    (rc = rec_flip(e, txid, 'A')) < 0)
					break;
				if ((rc = rec_read(e, txid, &state, NULL)) != 0)
					break;
				if (state != 'C' && state != 'A')
					continue;
				rc = stage_sweep_one(e, txid, state == 'C');
				if (rc == 0) {
					(*nswept)++;
					snprintf(msg, sizeof(msg),
						 "staged commit record %.80s "
						 "(%s) finished and removed",
						 txid,
						 state == 'C' ? "committed, "
								"rolled forward"
							      : "rolled back");
					if (note != NULL)
						(void)note(msg, arg);
				}
				continue;
			}
			if ((rc = rec_read(e, txid, &state, NULL)) != 0)
				break;
			if (state == 'P' && pass == 0) {
				pending[i] = 1;
				continue;
			}
			if (state == 'P' && (rc = rec_flip(e, txid, 'A')) < 0)
				break;
			rc = rec_read(e, txid, &state, &body);
			if (rc == 0 && (state == 'C' || state == 'A')) {
				rc = finish_all(e, body.o, body.n, txid,
						state == 'C', 0);
				if (rc == 0) {
					rec_remove(e, txid);
					(*nswept)++;
					snprintf(msg, sizeof(msg),
						 "commit record %.80s (%s) "
						 "finished and removed", txid,
						 state == 'C' ? "committed, "
								"rolled forward"
							      : "rolled back");
					if (note != NULL)
						(void)note(msg, arg);
				}
			}
			rec_free(&body);
		}
	}
	free(pending);
	free(beats);
	kt__buf_free(&names);
	return rc;
}

int kt__rados_destroy(const kt__rados_opts *o, uint64_t *nobjects)
{
	rados_t cl;
	rados_ioctx_t io;
	rados_list_ctx_t ls = NULL;
	kt__buf names = {0}, cat = {0};
	const char *ent, *key, *ns;
	size_t elen, klen, nslen, n = 0, tlen;
	int rc, r;

	*nobjects = 0;
	if ((rc = cluster_open(o, &cl, &io)) != 0)
		return rc;
	tlen = strlen(o->tree);
	/* RADOS lists a pool's objects in no useful order: walk the
	 * namespace once and keep this tree's names. */
	r = rados_nobjects_list_open(io, &ls);
	while (r == 0 && rc == 0) {
		r = rados_nobjects_list_next2(ls, &ent, &key, &ns, &elen,
					      &klen, &nslen);
		if (r < 0)
			break;
		if (memchr(ent, '\0', elen) != NULL ||
		    !tree_owns(ent, o->tree, tlen) || elen < tlen + 1)
			continue;
		if ((rc = kt__buf_add(&names, ent, elen)) == 0)
			rc = kt__buf_add(&names, "", 1);
		n++;
	}
	if (ls != NULL)
		rados_nobjects_list_close(ls);
	if (rc == 0 && r < 0 && r != -ENOENT)
		rc = rerr(r, "listing the pool", o->pool);
	if (rc == 0 && n == 0)
		rc = kt__err(KT_ENOTFOUND, "ceph: no tree '%s' in pool '%s'%s%s",
			     o->tree, o->pool,
			     o->nspace && o->nspace[0] ? ", namespace " : "",
			     o->nspace ? o->nspace : "");
	/* The catalog first: a tree without one cannot be opened, so no
	 * client starts on what is being removed, and a removal cut short
	 * is finished by running it again. */
	if (rc == 0 && (rc = kt__buf_add(&cat, o->tree, tlen)) == 0 &&
	    (rc = kt__buf_add(&cat, "!cat", 5)) == 0) {
		r = rados_remove(io, cat.p);
		if (r < 0 && r != -ENOENT)
			rc = rerr(r, "removing", cat.p);
	}
	if (rc == 0)
		rc = remove_all(io, names.p, n);
	if (rc == 0)
		*nobjects = n;
	kt__buf_free(&names);
	kt__buf_free(&cat);
	rados_ioctx_destroy(io);
	rados_shutdown(cl);
	return rc;
}
