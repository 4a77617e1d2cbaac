/*
 * rows_leveldb.c - the LevelDB implementation of the storage seam (rows.h),
 * and the only C file that includes <leveldb/c.h> (ldb_env.cc, in C++,
 * gives it an environment that reads table files with pread).
 *
 * A row (partition, sort) is stored under the LevelDB key
 * partition || 0x00 || sort.  Partition keys hold no NUL, so the first NUL
 * ends the partition: the mapping is one-to-one, one partition's rows are
 * contiguous and ordered by sort key, and all partitions sharing a prefix
 * form one contiguous key range.
 *
 * LevelDB reports errors as malloc'd strings; they are turned into codes
 * here, once: "Corruption" -> KT_ECORRUPT, a held lock -> KT_EBUSY, absent
 * database -> KT_ENOTFOUND, everything else -> KT_EIO.  Reads verify
 * checksums (a row a get keeps in the row cache was verified when read),
 * so damaged files surface as KT_ECORRUPT, never as wrong data;
 * only a scan marked KT__SCAN_NOVERIFY, whose caller checks every row it
 * takes (value blocks with their own CRC-32C), skips them.  Table files
 * read through our environment (ldb_env.cc) are checked there, block by
 * block, with the CPU's CRC instruction; LevelDB's own check, in
 * software, is left on only for mapped tables (KEYTREE_MMAP_TABLES=1).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <leveldb/c.h>

#include "rows.h"

/* A fence (rows.h): partition prefixes that one thread rewrites in several
 * commits, hidden from every other thread until it is lifted.  Kept, once
 * lifted, as long as a snapshot taken while it stood is alive: such a
 * snapshot may hold the rewrite half done. */
typedef struct ldb_fence {
	struct ldb_fence *next;
	uint64_t token;
	pthread_t owner;
	int lifted;
	int broken;    /* lifted by a rewrite that could not finish */
	size_t nsnaps; /* live snapshots that refer to it */
	size_t nwait;  /* threads waiting for it to be lifted */
	size_t n;
	kt__buf *pre;
} ldb_fence;

/*
 * The row cache.  A lookup in LevelDB costs some 9,000 instructions even
 * when its block is cached (the memtables, then every level's index,
 * filter and block, each searched anew), and a mount reads the same few
 * node rows over and over: a directory's for its OPENDIR, each READDIRPLUS
 * and the listing itself, its parent's for "..".  So the small rows that
 * get() reads with checksums are kept, by key, in a table of slots (one
 * row each; a new row takes the slot of the one it hashes with).
 *
 * Entries must never answer what LevelDB would not.  rc_state is
 * seq << 1, or'ed with 1 while a commit is being written; commits are
 * written one at a time (cmu), and each drops the slots of every key it
 * writes before rc_state says it is done.  Hence:
 *  - a row read from LevelDB is kept only if rc_state was the same and
 *    even both before the read and when it is kept: no commit ran in
 *    between, and the entry is tagged with the commits it saw (seq);
 *  - a read of the latest state takes an entry only while no commit is
 *    being written: a commit in flight may have reached LevelDB, and a
 *    reader that saw its other rows must not see this one's old value;
 *  - a read through a snapshot takes an entry whose tag is at most the
 *    snapshot's seq: the row was not written since it was read, so it is
 *    what the snapshot holds; one through a snapshot taken before the
 *    last commit keeps nothing (the row may have changed since).
 * A commit of more rows than a quarter of the slots (a step of a large
 * rename or delete) drops them all at once instead: it raises rc_floor to
 * its own seq, and an entry tagged below rc_floor is no entry.  That
 * spares it a hash, a lock and a cache miss for each of its rows.
 * KEYTREE_ROW_CACHE=N sets the number of slots (0: none; at most 2^20,
 * rounded down to a power of two).  At the default, the rows kept take at
 * most 8.4 MiB (16384 slots of up to RC_MAX_ROW bytes), the slots 512 KiB.
 * A row kept passed LevelDB's checksum when it was read; damage to the
 * file after that is found by scans (kt_check), as with the block cache.
 */
#define RC_LOCKS 16
#define RC_MAX_ROW 512 /* key and value bytes kept at most */
#define RC_SLOTS_DEFAULT 16384
#define RC_SLOTS_MAX (1u << 20)

typedef struct rc_slot {
	uint32_t hash;
	uint32_t klen, vlen;
	uint64_t tag; /* commits applied when the row was read */
	char *blob;   /* the key, then the value; NULL: empty */
} rc_slot;

typedef struct kt__ldb {
	kt__rows base;
	leveldb_t *db;
	leveldb_options_t *opts;
	leveldb_env_t *env; /* table files read with pread (ldb_env.cc) */
	leveldb_cache_t *cache;
	leveldb_filterpolicy_t *filter;
	leveldb_readoptions_t *ropts;
	leveldb_readoptions_t *ropts_nv; /* without checksums: NOVERIFY */
	leveldb_writeoptions_t *wopts;
	leveldb_writeoptions_t *wopts_sync;
	/* Commits are checked and applied one at a time; seq counts them,
	 * so a commit whose snapshot saw the latest one has nothing to
	 * check. */
	pthread_mutex_t cmu;
	uint64_t seq;
	/* Fences, protected by cmu (fcv: one was lifted).  A read without
	 * a snapshot looks at nactive before it reads and at fgen after:
	 * fgen moves whenever a fence is set or lifted, so a read that ran
	 * while one was set is made again (see read_begin). */
	ldb_fence *fences;
	pthread_cond_t fcv;
	uint64_t ftoken;
	atomic_uint nactive;
	atomic_uint_fast64_t fgen;
	/* The row cache (see rc_get): slots, locks by slot, and the state
	 * its entries are checked against. */
	struct rc_slot *rc;
	size_t rc_mask;
	pthread_mutex_t rc_lock[RC_LOCKS];
	atomic_uint_fast64_t rc_state;
	atomic_uint_fast64_t rc_floor; /* entries tagged below: gone */
} kt__ldb;

/* When an iterator's status was last asked: the asking thread's number
 * and its count of table opens and reads then (rows.h); thread 0: never. */
typedef struct ldb_watch {
	unsigned long long thread, seen;
} ldb_watch;

struct kt__snap {
	const leveldb_snapshot_t *snap;
	leveldb_readoptions_t *ropts;
	leveldb_readoptions_t *ropts_nv; /* made at the first NOVERIFY scan */
	uint64_t seq; /* commits applied when the snapshot was taken */
	ldb_fence **refs; /* the fences standing when it was taken */
	size_t nrefs;
	/* get_near: an iterator over the snapshot, made at the first such
	 * read; near_at: it stands where the last one left it (on the row
	 * it found, or on the first row past where that row would be);
	 * near_off: it failed once, so plain gets from then on. */
	leveldb_iterator_t *near;
	int near_at, near_off;
	ldb_watch near_w;
};

struct kt__cursor {
	leveldb_iterator_t *it;
	const kt__snap *snap;         /* the snapshot it reads, or NULL */
	kt__buf lo;                   /* first key of the range */
	kt__buf hi;                   /* first key past the range */
	int reverse;
	int started;
	int done;
	int watch;   /* table files read through our environment */
	int nv;      /* ...and the caller checks the rows (NOVERIFY) */
	int nodes;   /* node rows only (KT__SCAN_NODES) */
	int unchecked; /* KT__SCAN_NOVERIFY: blocks read without checks */
	int whole;   /* a partition from its first row (no FROM, AFTER) */
	ldb_watch w;
};

/* Map a LevelDB error string to a code and record the message: @p what
 * says, in a user's terms, what failed ("reading the store failed", or
 * "open 'DIR'"), the code's meaning follows, and LevelDB's own text comes
 * last, in parentheses, as the detail. */
static int ldb_error(char *err, const char *what)
{
	char shown[512];
	int code = KT_EIO;

	if (strstr(err, "Corruption") != NULL)
		code = KT_ECORRUPT;
	else if (strstr(err, "lock") != NULL &&
		 (strstr(err, "unavailable") != NULL ||
		  strstr(err, "already held") != NULL ||
		  strstr(err, "Resource") != NULL))
		code = KT_EBUSY;
	else if (strstr(err, "does not exist") != NULL)
		code = KT_ENOTFOUND;
	/* LevelDB's text can quote file contents (a damaged CURRENT): show
	 * it escaped. */
	kt__show(shown, sizeof(shown), err, strlen(err));
	if (code == KT_EBUSY)
		kt__err(code, "%s: the store is in use by another process "
			"(LevelDB lock held): %s", what, shown);
	else
		kt__err(code, "%s: %s (LevelDB: %s)", what,
			code == KT_ECORRUPT    ? "the store is damaged"
			: code == KT_ENOTFOUND ? "the store is missing"
					       : "I/O error",
			shown);
	leveldb_free(err);
	return code;
}

static const leveldb_readoptions_t *ropts_of(kt__ldb *l, const kt__snap *s)
{
	return s ? s->ropts : l->ropts;
}

/* The read options of a scan: without LevelDB's checksums when the
 * caller checks the rows itself (KT__SCAN_NOVERIFY).  Such a read must
 * not fill the block cache: LevelDB takes a cached block as checked, so
 * a damaged block cached here would reach later checked reads, and
 * compaction, which would copy its damage into a new table under a valid
 * checksum.  A snapshot is read by one thread at a time, so its second
 * set is made when first asked. */
static const leveldb_readoptions_t *scan_ropts(kt__ldb *l, const kt__snap *s,
					       unsigned int flags)
{
	kt__snap *w = (kt__snap *)s;

	if (!(flags & KT__SCAN_NOVERIFY))
		return ropts_of(l, s);
	if (s == NULL)
		return l->ropts_nv;
	if (w->ropts_nv == NULL) {
		w->ropts_nv = leveldb_readoptions_create();
		leveldb_readoptions_set_verify_checksums(w->ropts_nv, 0);
		leveldb_readoptions_set_fill_cache(w->ropts_nv, 0);
		leveldb_readoptions_set_snapshot(w->ropts_nv, w->snap);
	}
	return w->ropts_nv;
}

static int key_make(kt__buf *k, kt__slice part, kt__slice sort)
{
	int rc;

	k->len = 0;
	if ((rc = kt__buf_reserve(k, part.len + 1 + sort.len)) != 0)
		return rc;
	/* Copied in line: every row a commit writes or a get reads makes
	 * its key here. */
	if (part.len != 0)
		memcpy(k->p, part.p, part.len);
	k->p[part.len] = '\0';
	if (sort.len != 0)
		memcpy(k->p + part.len + 1, sort.p, sort.len);
	k->len = part.len + 1 + sort.len;
	k->p[k->len] = '\0';
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Fences */

static int starts_with(kt__slice s, const kt__buf *pre)
{
	return s.len >= pre->len && memcmp(s.p, pre->p, pre->len) == 0;
}

/* Does a read of partition @p part (with @p pscan, of every partition
 * starting with it) reach into fence @p f? */
static int fence_hits(const ldb_fence *f, kt__slice part, int pscan)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (starts_with(part, &f->pre[i]) ||
		    (pscan && f->pre[i].len >= part.len &&
		     memcmp(f->pre[i].p, part.p, part.len) == 0))
			return 1;
	return 0;
}

static int fence_mine(const ldb_fence *f)
{
	return !f->broken && pthread_equal(f->owner, pthread_self());
}

static int fence_broken(void)
{
	return kt__err(KT_EIO, "that part of the store was being rewritten "
		       "by a large rename or delete that could not finish; "
		       "close the store and open it again to finish it");
}

_Thread_local int kt__fence_nowait;
_Thread_local int kt__fence_hint;

void kt__fence_pause(unsigned int *waits)
{
	struct timespec ts;
	unsigned int ms = *waits < 6 ? 1u << *waits : 50;

	if (ms > 50)
		ms = 50;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)ms * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	(*waits)++;
}

/* Wait, holding cmu, until fence @p f is lifted.  A broken fence stands
 * for good (until the store is closed), and refuses at once.  A thread
 * that may not wait is told KT__EFENCED while the fence stands. */
static void fence_drop(kt__ldb *l, ldb_fence *f);

static int fence_wait(kt__ldb *l, ldb_fence *f)
{
	int rc;

	if (!f->lifted && !f->broken && (kt__fence_nowait || kt__fence_hint))
		return KT__EFENCED;
	f->nwait++;
	while (!f->lifted && !f->broken)
		pthread_cond_wait(&l->fcv, &l->cmu);
	f->nwait--;
	rc = f->broken ? fence_broken() : 0;
	/* The last to leave a lifted fence nobody refers to frees it; the
	 * caller does not touch it after this. */
	if (f->lifted && f->nsnaps == 0 && f->nwait == 0)
		fence_drop(l, f);
	return rc;
}

/* Before a read through snapshot @p s of @p part: 0 to read, or
 * KT__ERETRY (after waiting for the fence to be lifted) when the snapshot
 * was taken while a fence over it stood, so that the caller reads again
 * through a new one. */
static int snap_check(kt__ldb *l, const kt__snap *s, kt__slice part,
		      int pscan)
{
	size_t i;
	int rc = 0;

	if (s->nrefs == 0)
		return 0;
	pthread_mutex_lock(&l->cmu);
	for (i = 0; i < s->nrefs && rc == 0; i++) {
		ldb_fence *f = s->refs[i];
		if (!fence_mine(f) && fence_hits(f, part, pscan)) {
			rc = fence_wait(l, f);
			if (rc == 0)
				rc = KT__ERETRY;
		}
	}
	pthread_mutex_unlock(&l->cmu);
	return rc;
}

/* Before a read at the latest state of @p part: wait while a fence of
 * another thread stands over it.  Returns fgen as it was before looking,
 * for read_again. */
static int read_begin(kt__ldb *l, kt__slice part, int pscan, uint64_t *gen)
{
	ldb_fence *f;
	int rc = 0;

	*gen = atomic_load(&l->fgen);
	if (atomic_load(&l->nactive) == 0)
		return 0;
	pthread_mutex_lock(&l->cmu);
again:
	for (f = l->fences; f != NULL && rc == 0; f = f->next)
		if (!f->lifted && !fence_mine(f) &&
		    fence_hits(f, part, pscan)) {
			rc = fence_wait(l, f);
			goto again;
		}
	*gen = atomic_load(&l->fgen);
	pthread_mutex_unlock(&l->cmu);
	return rc;
}

/* After such a read: did a fence come or go while it ran?  Then it may
 * have seen a rewrite half done, and is made again.  (A commit inside a
 * fence is made after the fence is set; a read that saw its rows also
 * sees the fgen that was raised before them.) */
static int read_again(kt__ldb *l, uint64_t gen)
{
	return atomic_load(&l->fgen) != gen;
}

static void fence_free(ldb_fence *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		kt__buf_free(&f->pre[i]);
	free(f->pre);
	free(f);
}

/* Unlink and free fence @p f (caller holds cmu). */
static void fence_drop(kt__ldb *l, ldb_fence *f)
{
	ldb_fence **pp;

	for (pp = &l->fences; *pp != NULL; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	fence_free(f);
}

static int ldb_fence_set(kt__rows *r, const kt__slice *pre, size_t n,
			 uint64_t *token)
{
	kt__ldb *l = (kt__ldb *)r;
	ldb_fence *f = calloc(1, sizeof(*f));
	size_t i;
	int rc = 0;

	if (f == NULL || (f->pre = calloc(n ? n : 1, sizeof(*f->pre))) == NULL) {
		free(f);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	for (i = 0; i < n && rc == 0; i++, f->n++)
		rc = kt__buf_set(&f->pre[i], pre[i].p, pre[i].len);
	if (rc != 0) {
		fence_free(f);
		return rc;
	}
	f->owner = pthread_self();
	pthread_mutex_lock(&l->cmu);
	f->token = ++l->ftoken;
	f->next = l->fences;
	l->fences = f;
	atomic_fetch_add(&l->nactive, 1);
	atomic_fetch_add(&l->fgen, 1);
	pthread_mutex_unlock(&l->cmu);
	*token = f->token;
	return 0;
}

static int ldb_fence_lift(kt__rows *r, uint64_t token, int broken)
{
	kt__ldb *l = (kt__ldb *)r;
	ldb_fence *f;

	pthread_mutex_lock(&l->cmu);
	for (f = l->fences; f != NULL; f = f->next)
		if (f->token == token && !f->lifted && !f->broken)
			break;
	if (f != NULL && broken) {
		f->broken = 1;
		pthread_cond_broadcast(&l->fcv);
	} else if (f != NULL) {
		f->lifted = 1;
		atomic_fetch_sub(&l->nactive, 1);
		atomic_fetch_add(&l->fgen, 1);
		pthread_cond_broadcast(&l->fcv);
		if (f->nsnaps == 0 && f->nwait == 0)
			fence_drop(l, f);
	}
	pthread_mutex_unlock(&l->cmu);
	return 0;
}

/* A commit of another thread than a fence's owner that writes into it,
 * or depends on a read of it, waits until the fence is lifted and is then
 * refused: what it read is out of date.  So is one whose snapshot was
 * taken while a fence stood, when it depends on a read inside it.  Caller
 * holds cmu.  0 or KT__ERETRY (or the error of a broken fence). */
static int commit_fenced(kt__ldb *l, const kt__commit *cm)
{
	ldb_fence *f;
	size_t i, j;

	for (f = l->fences; f != NULL; f = f->next) {
		int hit = 0;
		if (f->lifted || fence_mine(f))
			continue;
		for (i = 0; i < cm->nw && !hit; i++)
			hit = fence_hits(f, cm->w[i].part, 0);
		for (i = 0; i < cm->nc && !hit; i++)
			hit = fence_hits(f, cm->c[i].kind == KT__COND_SCAN
						    ? cm->c[i].how.part
						    : cm->c[i].part,
					 cm->c[i].kind == KT__COND_SCAN &&
						 (cm->c[i].how.flags &
						  KT__SCAN_PREFIX));
		if (hit) {
			int rc = fence_wait(l, f);
			return rc != 0 ? rc : KT__ERETRY;
		}
	}
	for (j = 0; cm->snap != NULL && j < cm->snap->nrefs; j++) {
		f = cm->snap->refs[j];
		if (fence_mine(f))
			continue;
		for (i = 0; i < cm->nc; i++)
			if (fence_hits(f, cm->c[i].kind == KT__COND_SCAN
						  ? cm->c[i].how.part
						  : cm->c[i].part,
				       cm->c[i].kind == KT__COND_SCAN &&
					       (cm->c[i].how.flags &
						KT__SCAN_PREFIX)))
				return KT__ERETRY;
	}
	return 0;
}

/* The hash of the row of LevelDB key @p key (key_make's form). */
static uint32_t rc_hash(const char *key, size_t klen)
{
	return kt__crc32c(0, key, klen);
}

static rc_slot *rc_slot_of(kt__ldb *l, uint32_t hash)
{
	return &l->rc[hash & l->rc_mask];
}

static pthread_mutex_t *rc_lock_of(kt__ldb *l, const rc_slot *slot)
{
	return &l->rc_lock[(size_t)(slot - l->rc) % RC_LOCKS];
}

/* Look key @p key up in the row cache for a read through @p snap (NULL:
 * the latest state): 1 and the row in @p out, 0 if not there, or an
 * error.  @p keep is set to the rc_state to keep the row under after
 * reading it from LevelDB, or to UINT64_MAX if it must not be kept. */
static int rc_get(kt__ldb *l, const kt__snap *snap, uint32_t hash,
		  const char *key, size_t klen, kt__buf *out, uint64_t *keep)
{
	uint64_t state = atomic_load(&l->rc_state);
	rc_slot *slot;
	int rc = 0;

	*keep = UINT64_MAX;
	if (snap == NULL && (state & 1))
		return 0; /* a commit is being written */
	slot = rc_slot_of(l, hash);
	pthread_mutex_lock(rc_lock_of(l, slot));
	if (slot->blob != NULL && slot->hash == hash && slot->klen == klen &&
	    slot->tag >= atomic_load(&l->rc_floor) &&
	    (snap == NULL || slot->tag <= snap->seq) &&
	    memcmp(slot->blob, key, klen) == 0) {
		out->len = 0;
		rc = kt__buf_set(out, slot->blob + klen, slot->vlen);
		rc = rc == 0 ? 1 : rc;
	}
	pthread_mutex_unlock(rc_lock_of(l, slot));
	if (rc == 0 && !(state & 1) &&
	    (snap == NULL || state == snap->seq << 1))
		*keep = state;
	return rc;
}

/* Keep row (@p key, @p val) of hash @p hash, read from LevelDB, if
 * rc_state is still @p keep (rc_get). */
static void rc_put(kt__ldb *l, uint64_t keep, uint32_t hash, const char *key,
		   size_t klen, const char *val, size_t vlen)
{
	char *blob, *old = NULL;
	rc_slot *slot;

	if (keep == UINT64_MAX || klen + vlen > RC_MAX_ROW ||
	    (blob = malloc(klen + vlen + 1)) == NULL)
		return;
	memcpy(blob, key, klen);
	if (vlen)
		memcpy(blob + klen, val, vlen);
	slot = rc_slot_of(l, hash);
	pthread_mutex_lock(rc_lock_of(l, slot));
	if (atomic_load(&l->rc_state) == keep) {
		old = slot->blob;
		slot->blob = blob;
		slot->hash = hash;
		slot->klen = (uint32_t)klen;
		slot->vlen = (uint32_t)vlen;
		slot->tag = keep >> 1;
		blob = NULL;
	}
	pthread_mutex_unlock(rc_lock_of(l, slot));
	free(old);
	free(blob);
}

/* Drop the row of hash @p hash from the row cache, if there: a commit
 * writes a row of that hash (any row that has it goes). */
static void rc_forget(kt__ldb *l, uint32_t hash)
{
	rc_slot *slot = rc_slot_of(l, hash);
	char *old = NULL;

	pthread_mutex_lock(rc_lock_of(l, slot));
	if (slot->blob != NULL && slot->hash == hash) {
		old = slot->blob;
		slot->blob = NULL;
	}
	pthread_mutex_unlock(rc_lock_of(l, slot));
	free(old);
}

/* Drop every row from the row cache. */
static void rc_clear(kt__ldb *l)
{
	size_t i;

	for (i = 0; i <= l->rc_mask; i++) {
		pthread_mutex_lock(rc_lock_of(l, &l->rc[i]));
		free(l->rc[i].blob);
		l->rc[i].blob = NULL;
		pthread_mutex_unlock(rc_lock_of(l, &l->rc[i]));
	}
}

/* Make the row cache of store @p dir: KEYTREE_ROW_CACHE slots (rounded
 * down to a power of two; 0: none), else RC_SLOTS_DEFAULT.  0, or
 * KT_EINVAL for a value that is not such a number. */
static int rc_init(kt__ldb *l, const char *dir)
{
	const char *v = getenv("KEYTREE_ROW_CACHE");
	size_t n = RC_SLOTS_DEFAULT, p = 1;
	char *end = NULL;
	int i;

	for (i = 0; i < RC_LOCKS; i++)
		pthread_mutex_init(&l->rc_lock[i], NULL);
	if (v != NULL && *v != '\0') {
		unsigned long long want;

		errno = 0;
		want = strtoull(v, &end, 10);
		if (*v < '0' || *v > '9' || *end != '\0' || errno != 0 ||
		    want > RC_SLOTS_MAX)
			return kt__err(KT_EINVAL,
				       "open '%s': KEYTREE_ROW_CACHE='%s' is "
				       "not a number of cached rows from 0 "
				       "(none) to %u",
				       dir, v, RC_SLOTS_MAX);
		n = (size_t)want;
	}
	if (n == 0)
		return 0;
	while (p * 2 <= n)
		p *= 2;
	if ((l->rc = calloc(p, sizeof(*l->rc))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	l->rc_mask = p - 1;
	return 0;
}

static void rc_free(kt__ldb *l)
{
	int i;

	if (l->rc != NULL) {
		rc_clear(l);
		free(l->rc);
		l->rc = NULL;
	}
	for (i = 0; i < RC_LOCKS; i++)
		pthread_mutex_destroy(&l->rc_lock[i]);
}

/* Read row (@p part, @p sort) with @p ro; through the row cache if
 * @p cache, for a read through @p snap (NULL: the latest state). */
static int get_with(kt__ldb *l, const leveldb_readoptions_t *ro,
		    kt__slice part, kt__slice sort, kt__buf *out, int cache,
		    const kt__snap *snap)
{
	char keybuf[512];
	kt__buf kb = {0};
	const char *key;
	size_t klen = part.len + 1 + sort.len;
	char *err = NULL, *val;
	size_t vlen = 0;
	uint64_t keep = UINT64_MAX;
	uint32_t hash = 0;
	int rc;

	/* Most keys fit on the stack; the hot read path stays malloc-free. */
	if (klen <= sizeof(keybuf)) {
		memcpy(keybuf, part.p, part.len);
		keybuf[part.len] = '\0';
		if (sort.len)
			memcpy(keybuf + part.len + 1, sort.p, sort.len);
		key = keybuf;
	} else {
		if ((rc = key_make(&kb, part, sort)) != 0)
			return rc;
		key = kb.p;
	}
	if (cache && l->rc != NULL && klen <= RC_MAX_ROW) {
		hash = rc_hash(key, klen);
		rc = rc_get(l, snap, hash, key, klen, out, &keep);
		if (rc != 0) {
			kt__buf_free(&kb);
			return rc < 0 ? rc : 0;
		}
	}
	val = leveldb_get(l->db, ro, key, klen, &vlen, &err);
	if (err == NULL && val != NULL)
		rc_put(l, keep, hash, key, klen, val, vlen);
	kt__buf_free(&kb);
	if (err != NULL)
		return ldb_error(err, "reading the store failed");
	if (val == NULL)
		return KT_ENOTFOUND;
	if (out->p == NULL && vlen > 0) {
		/* LevelDB's C API hands over a malloc'd copy (leveldb_free
		 * is free): keep it rather than copy it once more. */
		out->p = val;
		out->len = out->cap = vlen;
		return 0;
	}
	rc = kt__buf_set(out, val, vlen);
	leveldb_free(val);
	return rc;
}

/* A get that minds the fences: through a snapshot, refused when the
 * snapshot may have caught a fenced rewrite half done; at the latest
 * state, after any fence over the row is lifted. */
static int fenced_get(kt__ldb *l, const kt__snap *snap,
		      const leveldb_readoptions_t *ro, kt__slice part,
		      kt__slice sort, kt__buf *out, int cache)
{
	uint64_t gen;
	int rc;

	if (snap != NULL) {
		if ((rc = snap_check(l, snap, part, 0)) != 0)
			return rc;
		return get_with(l, ro, part, sort, out, cache, snap);
	}
	for (;;) {
		if ((rc = read_begin(l, part, 0, &gen)) != 0)
			return rc;
		rc = get_with(l, ro, part, sort, out, cache, NULL);
		if (!read_again(l, gen))
			return rc;
		out->len = 0;
	}
}

static int ldb_get(kt__rows *r, const kt__snap *snap, kt__slice part,
		   kt__slice sort, kt__buf *out)
{
	kt__ldb *l = (kt__ldb *)r;

	/* A get_near after this one seeks at once: the rows read now and
	 * then are not near each other (ldb_get_near). */
	if (snap != NULL && snap->near_at)
		((kt__snap *)snap)->near_at = 0;
	return fenced_get(l, snap, ropts_of(l, snap), part, sort, out, 1);
}

/* A get whose caller checks the row itself: without LevelDB's checksums
 * and without filling the block cache (scan_ropts). */
static int ldb_get_unchecked(kt__rows *r, const kt__snap *snap,
			     kt__slice part, kt__slice sort, kt__buf *out)
{
	kt__ldb *l = (kt__ldb *)r;

	int rc;

	/* Our environment's check too (kt__ldb_skip_checks). */
	if (l->env != NULL)
		kt__ldb_skip_checks(1);
	rc = fenced_get(l, snap, scan_ropts(l, snap, KT__SCAN_NOVERIFY), part,
			sort, out, 0);
	if (l->env != NULL)
		kt__ldb_skip_checks(0);
	return rc;
}

/* Byte order of two strings, a proper prefix first. */
static int memcmp_len(const char *a, size_t al, const char *b, size_t bl)
{
	size_t n = al < bl ? al : bl;
	int c = n > 0 ? memcmp(a, b, n) : 0;

	if (c != 0)
		return c;
	return al < bl ? -1 : al > bl;
}

/* Must the status of an iterator be asked after a move?  LevelDB's
 * iterator steps over a block that fails its checksum, or a table file it
 * cannot open, and only records that in its status; asking walks every
 * level's iterator, a sixth of the time of a find over 10^6 items.
 * Through our environment (@p ours; ldb_env.cc) every open and read of a
 * table file is counted on the thread that makes it.  LevelDB keeps no
 * failed open in its table cache, and its block cache only holds blocks
 * that were read with their check (the reads without it never fill the
 * cache; a table's index and filter live in the table, which failed to
 * open if they were damaged).  So a move on the same thread that opened
 * and read nothing cannot have met damage on disk.  (Bytes that passed
 * their checksum yet do not parse, which only a bug in a writer could
 * make, are caught when the move that reads them from disk asks, else at
 * the end of the scan.)  Otherwise (tables mapped), ask after every move. */
static int must_ask(int ours, ldb_watch *w)
{
	unsigned long long thread, calls;

	if (!ours)
		return 1;
	kt__ldb_table_calls(&thread, &calls);
	if (thread == w->thread && calls == w->seen)
		return 0;
	w->thread = thread;
	w->seen = calls;
	return 1;
}

/* How many rows get_near steps over before it seeks instead. */
#define NEAR_STEPS 16

/* Did the snapshot's near iterator meet an error (a block that fails its
 * checksum, which LevelDB's iterator steps over and only records)?  Then
 * it is dropped, and the read is made with a get, which says what went
 * wrong where, if anything, for that row. */
static int near_failed(const kt__ldb *l, kt__snap *s)
{
	char *err = NULL;

	if (!must_ask(l->env != NULL, &s->near_w))
		return 0;
	leveldb_iter_get_error(s->near, &err);
	if (err == NULL)
		return 0;
	leveldb_free(err);
	leveldb_iter_destroy(s->near);
	s->near = NULL;
	s->near_at = 0;
	s->near_off = 1;
	return 1;
}

/* A get through a snapshot that steps to the row from the one the last
 * such get read, when it lies at most NEAR_STEPS rows further on: a
 * listing reads its files' node rows in key order, and between two of
 * them lie only the first one's own rows (attributes, value blocks).  A
 * step costs a small part of a lookup, which looks for the key afresh in
 * the memtables and in every level.  Anything else seeks.  The iterator
 * reads the same snapshot with the same options as get, so the answer is
 * the same: found, or absent when the steps pass from below the key to
 * above it. */
static int ldb_get_near(kt__rows *r, const kt__snap *snap, kt__slice part,
			kt__slice sort, kt__buf *out)
{
	kt__ldb *l = (kt__ldb *)r;
	kt__snap *s = (kt__snap *)snap; /* one thread reads through it */
	char key[512];
	size_t klen = part.len + 1 + sort.len, kl, vl;
	const char *k, *v;
	int c = -1, i, rc;

	if (s == NULL || s->near_off || klen > sizeof(key)) {
		if (s != NULL)
			s->near_at = 0;
		return fenced_get(l, snap, ropts_of(l, snap), part, sort,
				  out, 1);
	}
	if ((rc = snap_check(l, s, part, 0)) != 0)
		return rc;
	memcpy(key, part.p, part.len);
	key[part.len] = '\0';
	if (sort.len)
		memcpy(key + part.len + 1, sort.p, sort.len);
	if (s->near == NULL) {
		s->near = leveldb_create_iterator(l->db, s->ropts);
		s->near_at = 0;
		s->near_w.thread = 0;
	}
	if (s->near_at) {
		k = leveldb_iter_key(s->near, &kl);
		c = memcmp_len(k, kl, key, klen);
		for (i = 0; c < 0 && i < NEAR_STEPS; i++) {
			leveldb_iter_next(s->near);
			if (near_failed(l, s))
				return get_with(l, s->ropts, part, sort, out, 0,
					NULL);
			if (!leveldb_iter_valid(s->near)) {
				s->near_at = 0; /* past the last row */
				return KT_ENOTFOUND;
			}
			k = leveldb_iter_key(s->near, &kl);
			if ((c = memcmp_len(k, kl, key, klen)) > 0)
				return KT_ENOTFOUND; /* stepped past it */
		}
		/* Found; else too far on, or already past it: seek. */
	}
	if (c != 0) {
		leveldb_iter_seek(s->near, key, klen);
		if (near_failed(l, s))
			return get_with(l, s->ropts, part, sort, out, 0,
					NULL);
		if (!(s->near_at = leveldb_iter_valid(s->near) != 0))
			return KT_ENOTFOUND;
		k = leveldb_iter_key(s->near, &kl);
		if (memcmp_len(k, kl, key, klen) != 0)
			return KT_ENOTFOUND;
	}
	v = leveldb_iter_value(s->near, &vl);
	return kt__buf_set(out, v, vl);
}

static int scan_plain(kt__cursor **out, kt__rows *r, const kt__snap *snap,
		      const kt__scan *how)
{
	kt__ldb *l = (kt__ldb *)r;
	kt__cursor *c;
	int rc = 0;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	c->watch = l->env != NULL;
	c->unchecked = (how->flags & KT__SCAN_NOVERIFY) != 0;
	c->nv = c->watch && c->unchecked;
	c->nodes = (how->flags & KT__SCAN_NODES) != 0;
	c->reverse = (how->flags & KT__SCAN_REVERSE) != 0;
	if (how->flags & KT__SCAN_PREFIX) {
		/* [prefix, prefix+1): the prefix never ends in 0xff for
		 * our partitions, but handle it by trimming. */
		rc = kt__buf_set(&c->lo, how->part.p, how->part.len);
		if (rc == 0)
			rc = kt__buf_set(&c->hi, how->part.p, how->part.len);
		while (rc == 0 && c->hi.len > 0 &&
		       (unsigned char)c->hi.p[c->hi.len - 1] == 0xff)
			c->hi.len--;
		if (rc == 0 && c->hi.len > 0)
			c->hi.p[c->hi.len - 1]++;
		/* Past row (X, S): from X||00||S||00, the smallest key
		 * after it. */
		if (rc == 0 && (how->flags & KT__SCAN_PAST)) {
			kt__buf a = {0};
			if ((rc = key_make(&a, how->after, how->from)) == 0 &&
			    (rc = kt__buf_addc(&a, '\0')) == 0 &&
			    memcmp_len(a.p, a.len, c->lo.p, c->lo.len) > 0) {
				kt__buf_free(&c->lo);
				c->lo = a;
				memset(&a, 0, sizeof(a));
			}
			kt__buf_free(&a);
		}
		/* After partition X: from X||01, past every key X||00||sort
		 * of X and before those of partitions X is a prefix of. */
		else if (rc == 0 && (how->flags & KT__SCAN_AFTER)) {
			kt__buf a = {0};
			if ((rc = kt__buf_set(&a, how->after.p,
					      how->after.len)) == 0 &&
			    (rc = kt__buf_addc(&a, '\1')) == 0 &&
			    memcmp_len(a.p, a.len, c->lo.p, c->lo.len) > 0) {
				kt__buf_free(&c->lo);
				c->lo = a;
				memset(&a, 0, sizeof(a));
			}
			kt__buf_free(&a);
		}
	} else {
		if (how->flags & KT__SCAN_FROM)
			rc = key_make(&c->lo, how->part, how->from);
		else if (how->flags & KT__SCAN_AFTER) {
			/* The smallest key after 'after' is after||0x00. */
			rc = key_make(&c->lo, how->part, how->after);
			if (rc == 0 && !c->reverse)
				rc = kt__buf_addc(&c->lo, '\0');
		} else
			rc = key_make(&c->lo, how->part, kt__sl("", 0));
		if (rc == 0) {
			rc = kt__buf_set(&c->hi, how->part.p, how->part.len);
			if (rc == 0)
				rc = kt__buf_addc(&c->hi, '\1');
		}
		if (rc == 0 && c->reverse && (how->flags & KT__SCAN_AFTER)) {
			/* Reverse after X: keys < part||0||X. */
			kt__buf tmp = c->hi;
			c->hi = c->lo;
			c->lo = tmp;
			rc = key_make(&c->lo, how->part, kt__sl("", 0));
		}
	}
	if (rc != 0) {
		kt__buf_free(&c->lo);
		kt__buf_free(&c->hi);
		free(c);
		return rc;
	}
	c->it = leveldb_create_iterator(l->db, scan_ropts(l, snap, how->flags));
	c->snap = snap;
	c->whole = !(how->flags & (KT__SCAN_PREFIX | KT__SCAN_FROM |
				   KT__SCAN_AFTER));
	*out = c;
	return 0;
}

static void ldb_cursor_free(kt__cursor *c);

/* A scan that minds the fences, as fenced_get.  Without a snapshot,
 * LevelDB's iterator reads the state of its creation. */
static int ldb_scan(kt__cursor **out, kt__rows *r, const kt__snap *snap,
		    const kt__scan *how)
{
	kt__ldb *l = (kt__ldb *)r;
	int pscan = (how->flags & KT__SCAN_PREFIX) != 0;
	uint64_t gen;
	int rc;

	*out = NULL;
	if (snap != NULL) {
		if ((rc = snap_check(l, snap, how->part, pscan)) != 0)
			return rc;
		return scan_plain(out, r, snap, how);
	}
	for (;;) {
		if ((rc = read_begin(l, how->part, pscan, &gen)) != 0)
			return rc;
		if ((rc = scan_plain(out, r, snap, how)) != 0 ||
		    !read_again(l, gen))
			return rc;
		ldb_cursor_free(*out);
		*out = NULL;
	}
}

/* Is key k at or above the cursor's lo? */
static int above_lo(const kt__cursor *c, const char *k, size_t klen)
{
	size_t n = klen < c->lo.len ? klen : c->lo.len;
	int cmp = memcmp(k, c->lo.p, n);

	return cmp > 0 || (cmp == 0 && klen >= c->lo.len);
}

/* Is key k still inside the cursor's range?  Only the bound it moves
 * towards needs a look: a forward cursor starts at a seek to lo and only
 * climbs from there, a reverse one starts below hi and only falls.
 * Unless its blocks go unchecked (NOVERIFY): a damaged block could hold
 * keys out of order, so such a cursor looks at both. */
static int in_range(const kt__cursor *c, const char *k, size_t klen)
{
	size_t n;
	int cmp;

	if (c->reverse)
		return above_lo(c, k, klen);
	if (c->unchecked && !above_lo(c, k, klen))
		return 0;
	if (c->hi.len == 0)
		return 1; /* no upper bound */
	n = klen < c->hi.len ? klen : c->hi.len;
	cmp = memcmp(k, c->hi.p, n);
	return cmp < 0 || (cmp == 0 && klen < c->hi.len);
}

/* One move of the cursor: 0 with the row, KT_ITEROVER, an error, or 1
 * for a row the scan leaves out (KT__SCAN_NODES). */
static int ldb_step(kt__cursor *c, kt__row *row)
{
	const char *k, *nul;
	size_t klen, vlen;
	char *err = NULL;
	unsigned char valid;

	if (!c->started) {
		c->started = 1;
		if (!c->reverse) {
			leveldb_iter_seek(c->it, c->lo.p, c->lo.len);
		} else if (c->hi.len == 0) {
			leveldb_iter_seek_to_last(c->it);
		} else {
			leveldb_iter_seek(c->it, c->hi.p, c->hi.len);
			if (leveldb_iter_valid(c->it))
				leveldb_iter_prev(c->it);
			else
				leveldb_iter_seek_to_last(c->it);
		}
	} else if (!c->reverse) {
		leveldb_iter_next(c->it);
	} else {
		leveldb_iter_prev(c->it);
	}
	/* LevelDB's iterator steps over a block that fails its checksum and
	 * only records the failure in its status: ask after every move that
	 * read a table file (must_ask), and at the end, or a damaged block
	 * would read as rows that are simply not there. */
	valid = leveldb_iter_valid(c->it);
	if (must_ask(c->watch, &c->w) || !valid) {
		leveldb_iter_get_error(c->it, &err);
		if (err != NULL) {
			c->done = 1;
			return ldb_error(err, "reading the store failed");
		}
	}
	if (!valid) {
		c->done = 1;
		return KT_ITEROVER;
	}
	k = leveldb_iter_key(c->it, &klen);
	if (!in_range(c, k, klen)) {
		c->done = 1;
		leveldb_iter_get_error(c->it, &err);
		if (err != NULL)
			return ldb_error(err, "reading the store failed");
		return KT_ITEROVER;
	}
	nul = memchr(k, '\0', klen);
	if (nul == NULL) {
		c->done = 1;
		return kt__err(KT_ECORRUPT, "row key without partition "
			       "separator (%zu bytes)", klen);
	}
	if (c->nodes && nul + 1 != k + klen)
		return 1;
	row->part = kt__sl(k, (size_t)(nul - k));
	row->sort = kt__sl(nul + 1, klen - (size_t)(nul - k) - 1);
	row->value.p = leveldb_iter_value(c->it, &vlen);
	row->value.len = vlen;
	return 0;
}

static int ldb_next(kt__cursor *c, kt__row *row)
{
	int rc;

	if (c->done)
		return KT_ITEROVER;
	/* Reads for a caller that checks the rows itself skip our
	 * environment's check too (kt__ldb_skip_checks). */
	if (c->nv)
		kt__ldb_skip_checks(1);
	while ((rc = ldb_step(c, row)) == 1)
		;
	if (c->nv)
		kt__ldb_skip_checks(0);
	return rc;
}

static void ldb_cursor_free(kt__cursor *c)
{
	if (c == NULL)
		return;
	if (c->it != NULL)
		leveldb_iter_destroy(c->it);
	kt__buf_free(&c->lo);
	kt__buf_free(&c->hi);
	free(c);
}

/* A forward cursor over a snapshot, at the end of its range, becomes the
 * snapshot's near iterator when it has none, so that no second iterator
 * is made.  It stands on the first row past the range: after a scan of
 * a whole directory's index partition, that is its first child's node
 * row, where a listing's get_near reads begin, so the first is found
 * without a seek.  After a scan that began after a name (a listing's
 * later page), the reads begin further on: near_at 0, and the first
 * seeks.  It was made with the options get_near's iterator would have
 * had (not a NOVERIFY scan's), and its last move asked its status, as
 * get_near's moves do; near_w makes the next move ask again. */
static void ldb_cursor_done(kt__rows *r, kt__cursor *c, const kt__snap *snap)
{
	kt__snap *s = (kt__snap *)snap; /* one thread reads through it */

	(void)r;
	if (s != NULL && c->snap == snap && s->near == NULL && !s->near_off &&
	    c->it != NULL && c->started && c->done && !c->reverse &&
	    !c->unchecked) {
		s->near = c->it;
		c->it = NULL;
		s->near_at = c->whole && leveldb_iter_valid(s->near) != 0;
		s->near_w.thread = 0;
	}
	ldb_cursor_free(c);
}

static int ldb_snapshot(kt__snap **out, kt__rows *r)
{
	kt__ldb *l = (kt__ldb *)r;
	kt__snap *s = calloc(1, sizeof(*s));
	int oom = 0;

	*out = NULL;
	if (s == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	/* Under the commit lock, so that seq names exactly the commits the
	 * snapshot sees. */
	pthread_mutex_lock(&l->cmu);
	s->snap = leveldb_create_snapshot(l->db);
	s->seq = l->seq;
	if (l->fences != NULL) {
		ldb_fence *f;
		size_t n = 0;
		for (f = l->fences; f != NULL; f = f->next)
			n += !f->lifted;
		if (n > 0 && (s->refs = calloc(n, sizeof(*s->refs))) == NULL)
			oom = 1;
		for (f = l->fences; f != NULL && s->refs != NULL; f = f->next)
			if (!f->lifted) {
				s->refs[s->nrefs++] = f;
				f->nsnaps++;
			}
	}
	pthread_mutex_unlock(&l->cmu);
	if (oom) {
		leveldb_release_snapshot(l->db, s->snap);
		free(s);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	s->ropts = leveldb_readoptions_create();
	leveldb_readoptions_set_verify_checksums(s->ropts, l->env == NULL);
	leveldb_readoptions_set_snapshot(s->ropts, s->snap);
	*out = s;
	return 0;
}

static void ldb_snapshot_free(kt__rows *r, kt__snap *s)
{
	kt__ldb *l = (kt__ldb *)r;

	if (s == NULL)
		return;
	if (s->near != NULL)
		leveldb_iter_destroy(s->near);
	leveldb_readoptions_destroy(s->ropts);
	if (s->ropts_nv)
		leveldb_readoptions_destroy(s->ropts_nv);
	leveldb_release_snapshot(l->db, s->snap);
	if (s->nrefs > 0) {
		size_t i;
		pthread_mutex_lock(&l->cmu);
		for (i = 0; i < s->nrefs; i++) {
			ldb_fence *f = s->refs[i];
			if (--f->nsnaps == 0 && f->lifted && f->nwait == 0)
				fence_drop(l, f);
		}
		pthread_mutex_unlock(&l->cmu);
	}
	free(s->refs);
	free(s);
}

/* Is row (part, sort) the same at snapshot @p s as in the latest state?
 * 1 yes, 0 no, or an error. */
static int row_same(kt__ldb *l, const kt__snap *s, kt__slice part,
		    kt__slice sort)
{
	kt__buf a = {0}, b = {0};
	int ra, rb, same;

	ra = get_with(l, ropts_of(l, s), part, sort, &a, 0, NULL);
	rb = ra == 0 || ra == KT_ENOTFOUND
		     ? get_with(l, l->ropts, part, sort, &b, 0, NULL)
		     : ra;
	if (ra != 0 && ra != KT_ENOTFOUND)
		same = ra;
	else if (rb != 0 && rb != KT_ENOTFOUND)
		same = rb;
	else
		same = ra == rb && (ra != 0 || (a.len == b.len &&
						(a.len == 0 ||
						 memcmp(a.p, b.p, a.len) == 0)));
	kt__buf_free(&a);
	kt__buf_free(&b);
	return same;
}

/* Does the scan of condition @p c return the same rows now as at @p s?
 * 1 yes, 0 no, or an error. */
static int scan_same(kt__ldb *l, const kt__snap *s, const kt__cond *c)
{
	kt__cursor *x = NULL, *y = NULL;
	kt__row rx, ry;
	uint64_t i;
	int rc, ex, ey;

	if ((rc = scan_plain(&x, &l->base, s, &c->how)) != 0)
		return rc;
	if ((rc = scan_plain(&y, &l->base, NULL, &c->how)) != 0) {
		ldb_cursor_free(x);
		return rc;
	}
	rc = 1;
	for (i = 0; rc == 1 && (i < c->nrows || c->complete); i++) {
		ex = ldb_next(x, &rx);
		ey = ldb_next(y, &ry);
		if (ex != 0 && ex != KT_ITEROVER)
			rc = ex;
		else if (ey != 0 && ey != KT_ITEROVER)
			rc = ey;
		else if (ex != ey)
			rc = 0;
		else if (ex == KT_ITEROVER)
			break; /* both over: same */
		else if (rx.part.len != ry.part.len ||
			 rx.sort.len != ry.sort.len ||
			 rx.value.len != ry.value.len ||
			 memcmp(rx.part.p, ry.part.p, rx.part.len) != 0 ||
			 (rx.sort.len &&
			  memcmp(rx.sort.p, ry.sort.p, rx.sort.len) != 0) ||
			 (rx.value.len &&
			  memcmp(rx.value.p, ry.value.p, rx.value.len) != 0))
			rc = 0;
	}
	ldb_cursor_free(x);
	ldb_cursor_free(y);
	return rc;
}

/* Do all of cm's conditions hold?  1, 0, or an error.  Caller holds cmu. */
static int conds_hold(kt__ldb *l, const kt__commit *cm)
{
	size_t i;
	int rc = 1;

	if (cm->snap == NULL || cm->snap->seq == l->seq)
		return 1; /* nothing was committed since the reads */
	for (i = 0; i < cm->nc && rc == 1; i++) {
		const kt__cond *c = &cm->c[i];
		rc = c->kind == KT__COND_SCAN
			     ? scan_same(l, cm->snap, c)
			     : row_same(l, cm->snap, c->part, c->sort);
	}
	return rc;
}

static int ldb_commit(kt__rows *r, const kt__commit *cm)
{
	kt__ldb *l = (kt__ldb *)r;
	leveldb_writebatch_t *wb = leveldb_writebatch_create();
	kt__buf k = {0};
	char *err = NULL;
	uint32_t few[16], *hash = NULL; /* per write: its row's hash in the
					   row cache */
	size_t i;
	int rc = 0, wipe;

	/* Many rows: drop the whole row cache rather than row by row. */
	wipe = l->rc != NULL && cm->nw > (l->rc_mask + 1) / 4;
	if (l->rc != NULL && cm->nw > 0 && !wipe) {
		hash = cm->nw <= 16 ? few : malloc(cm->nw * sizeof(*hash));
		if (hash == NULL)
			rc = kt__err(KT_ENOMEM, "out of memory");
	}
	for (i = 0; i < cm->nw && rc == 0; i++) {
		const kt__write *w = &cm->w[i];
		rc = key_make(&k, w->part, w->sort);
		if (rc != 0)
			break;
		if (hash != NULL)
			hash[i] = rc_hash(k.p, k.len);
		if (w->del)
			leveldb_writebatch_delete(wb, k.p, k.len);
		else
			leveldb_writebatch_put(wb, k.p, k.len, w->value.p,
					       w->value.len);
	}
	if (rc == 0) {
		pthread_mutex_lock(&l->cmu);
		rc = l->fences != NULL ? commit_fenced(l, cm) : 0;
		if (rc == 0)
			rc = conds_hold(l, cm);
		if (rc == 1) {
			atomic_store(&l->rc_state, l->seq << 1 | 1);
			leveldb_write(l->db,
				      cm->sync ? l->wopts_sync : l->wopts, wb,
				      &err);
			if (err != NULL)
				rc = ldb_error(err, "writing to the store "
					       "failed");
			else
				rc = 0;
			/* A failed write may still have reached the log:
			 * count it, so later snapshots check again, and
			 * forget its rows. */
			for (i = 0; i < cm->nw && hash != NULL; i++)
				rc_forget(l, hash[i]);
			if (wipe)
				atomic_store(&l->rc_floor, l->seq + 1);
			l->seq++;
			atomic_store(&l->rc_state, l->seq << 1);
			if (rc == 0 && cm->applied != NULL)
				*cm->applied = l->seq;
		} else if (rc == 0) {
			rc = KT__ERETRY;
		}
		pthread_mutex_unlock(&l->cmu);
	}
	kt__buf_free(&k);
	if (hash != few)
		free(hash);
	leveldb_writebatch_destroy(wb);
	return rc;
}

static int ldb_sync(kt__rows *r)
{
	kt__ldb *l = (kt__ldb *)r;
	leveldb_writebatch_t *wb = leveldb_writebatch_create();
	char *err = NULL;

	/* An empty synchronous write forces the log to disk. */
	leveldb_write(l->db, l->wopts_sync, wb, &err);
	leveldb_writebatch_destroy(wb);
	if (err != NULL)
		return ldb_error(err, "flushing the store to disk failed");
	return 0;
}

static int ldb_empty(kt__rows *r)
{
	kt__ldb *l = (kt__ldb *)r;
	leveldb_iterator_t *it = leveldb_create_iterator(l->db, l->ropts);
	char *err = NULL;
	int empty;

	leveldb_iter_seek_to_first(it);
	empty = !leveldb_iter_valid(it);
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	if (err != NULL)
		return ldb_error(err, "reading the store failed");
	return empty;
}

static void ldb_close(kt__rows *r)
{
	kt__ldb *l = (kt__ldb *)r;

	if (l == NULL)
		return;
	if (l->db)
		leveldb_close(l->db);
	leveldb_options_destroy(l->opts);
	if (l->env)
		leveldb_env_destroy(l->env);
	if (l->cache)
		leveldb_cache_destroy(l->cache);
	if (l->filter)
		leveldb_filterpolicy_destroy(l->filter);
	leveldb_readoptions_destroy(l->ropts);
	leveldb_readoptions_destroy(l->ropts_nv);
	leveldb_writeoptions_destroy(l->wopts);
	leveldb_writeoptions_destroy(l->wopts_sync);
	while (l->fences != NULL)
		fence_drop(l, l->fences);
	rc_free(l);
	pthread_cond_destroy(&l->fcv);
	pthread_mutex_destroy(&l->cmu);
	free(l);
}

/* KEYTREE_MMAP_TABLES=1: leave table files to LevelDB, which maps them. */
static int mmap_tables(void)
{
	const char *v = getenv("KEYTREE_MMAP_TABLES");

	return v != NULL && strcmp(v, "1") == 0;
}

static const kt__rows_ops ldb_ops = {
	.get = ldb_get,
	.get_unchecked = ldb_get_unchecked,
	.get_near = ldb_get_near,
	.scan = ldb_scan,
	.next = ldb_next,
	.cursor_free = ldb_cursor_free,
	.cursor_done = ldb_cursor_done,
	.snapshot = ldb_snapshot,
	.snapshot_free = ldb_snapshot_free,
	.commit = ldb_commit,
	.sync = ldb_sync,
	.empty = ldb_empty,
	.close = ldb_close,
	.fence = ldb_fence_set,
	.unfence = ldb_fence_lift,
	.atomic_batch = 1,
};

int kt__leveldb_open(kt__rows **out, const char *dir,
		     const kt__leveldb_opts *o)
{
	kt__ldb *l;
	char *err = NULL;
	int rc;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	l->base.ops = &ldb_ops;
	pthread_mutex_init(&l->cmu, NULL);
	pthread_cond_init(&l->fcv, NULL);
	if ((rc = rc_init(l, dir)) != 0) {
		ldb_close(&l->base);
		return rc;
	}
	l->opts = leveldb_options_create();
	leveldb_options_set_create_if_missing(l->opts, o->create);
	leveldb_options_set_paranoid_checks(l->opts, 1);
	/* Table files are read with pread, not mapped, so that what a
	 * process reads of them stays in the page cache and out of its
	 * resident set, bounded by the block cache (ldb_env.cc).
	 * KEYTREE_MMAP_TABLES=1 keeps LevelDB's mappings. */
	if (!mmap_tables() && (l->env = kt__ldb_pread_env()) != NULL)
		leveldb_options_set_env(l->opts, l->env);
	l->cache = leveldb_cache_create_lru(o->cache_size ? o->cache_size
						       : 8u << 20);
	leveldb_options_set_cache(l->opts, l->cache);
	l->filter = leveldb_filterpolicy_create_bloom(10);
	leveldb_options_set_filter_policy(l->opts, l->filter);
	leveldb_options_set_write_buffer_size(l->opts,
					      o->write_buffer_size
						      ? o->write_buffer_size
						      : KT__WBUF_DEFAULT);
	l->ropts = leveldb_readoptions_create();
	/* Read through our environment, every block is checked as it is
	 * read (ldb_env.cc), in hardware where the CPU can; LevelDB's own
	 * check, in software, is then only needed for mapped tables. */
	leveldb_readoptions_set_verify_checksums(l->ropts, l->env == NULL);
	l->ropts_nv = leveldb_readoptions_create();
	leveldb_readoptions_set_verify_checksums(l->ropts_nv, 0);
	leveldb_readoptions_set_fill_cache(l->ropts_nv, 0);
	l->wopts = leveldb_writeoptions_create();
	l->wopts_sync = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(l->wopts_sync, 1);

	l->db = leveldb_open(l->opts, dir, &err);
	if (err != NULL) {
		char what[4200];

		snprintf(what, sizeof(what), "open '%s'", dir);
		rc = ldb_error(err, what);
		if (rc == KT_EBUSY) {
			char holder[PATH_MAX + 128];

			kt__lock_holder(holder, sizeof(holder), dir);
			kt__err(rc, "open '%s': the store is in use by %s", dir,
				holder);
		}
		ldb_close(&l->base);
		return rc;
	}
	*out = &l->base;
	return 0;
}

int kt__leveldb_destroy(const char *dir)
{
	leveldb_options_t *o = leveldb_options_create();
	char *err = NULL;
	char what[4200];
	int rc = 0;

	leveldb_destroy_db(o, dir, &err);
	leveldb_options_destroy(o);
	if (err != NULL) {
		snprintf(what, sizeof(what), "destroy '%s'", dir);
		rc = ldb_error(err, what);
	}
	return rc;
}
