/*
 * tx.c - transactions: the write overlay every mutation builds before one
 * atomic commit, and readers that see through it.
 *
 * A transaction records writes indexed by a hash of the row key, so that a
 * later read of the same row sees the pending value (and engine reads are
 * remembered too).  At commit the writes are put in the order the storage
 * seam asks for: see commit_cmp().  Scans merge the engine's cursor with the pending writes that fall
 * in the scanned range.
 *
 * Every read of a transaction is made at one snapshot, taken at its first
 * read, and is remembered: the rows (present or absent) as cached reads,
 * the scans with how far the engine's cursor went.  The commit hands both
 * to the engine as conditions, and the engine applies the writes only if
 * none of it has changed since the snapshot (rows.h).  Within a process
 * the writer lock serialises transactions, so they never conflict with
 * each other; the conditions are what protects the tree from writers in
 * other processes.  kt__tx_run() reruns an operation whose commit was
 * refused.
 */
#include <errno.h>
#include <time.h>
#include <stdlib.h>

#include "server.h"
#include "tree.h"

void kt__tx_init(kt__tx *tx, kt_store *st)
{
	memset(tx, 0, sizeof(*tx));
	tx->st = st;
	tx->now = kt__now();
	tx->own.uid = st->euid;
	tx->own.gid = st->egid;
	tx->next_id = st->next_id;
	tx->id_limit = st->id_limit;
	tx->next_ver = st->next_ver;
	tx->ver_limit = st->ver_limit;
}

void kt__tx_free(kt__tx *tx)
{
	size_t i;

	for (i = 0; i < tx->nw; i++) {
		free(tx->w[i].key); /* and the value after it */
	}
	for (i = 0; i < tx->nscans; i++) {
		kt__buf_free(&tx->scans[i].part);
		kt__buf_free(&tx->scans[i].after);
		kt__buf_free(&tx->scans[i].from);
	}
	free(tx->scans);
	if (tx->snap != NULL)
		tx->st->rows->ops->snapshot_free(tx->st->rows, tx->snap);
	free(tx->w);
	free(tx->hash);
	memset(tx, 0, sizeof(*tx));
}

/* The snapshot the transaction reads at, taken at its first read. */
static int tx_snap(kt__tx *tx)
{
	if (tx->snap != NULL)
		return 0;
	return tx->st->rows->ops->snapshot(&tx->snap, tx->st->rows);
}

static uint64_t hash_key(const char *k, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)k[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* Find the slot for key: the slot holding it, or the empty one where it
 * would go. */
static size_t *hash_slot(kt__tx *tx, const char *k, size_t klen)
{
	size_t mask = tx->hcap - 1;
	size_t i = (size_t)hash_key(k, klen) & mask;

	for (;;) {
		size_t *s = &tx->hash[i];
		kt__txw *w;

		if (*s == 0)
			return s;
		w = &tx->w[*s - 1];
		if (w->klen == klen && memcmp(w->key, k, klen) == 0)
			return s;
		i = (i + 1) & mask;
	}
}

static int hash_grow(kt__tx *tx)
{
	size_t ncap = tx->hcap ? tx->hcap * 2 : 64;
	size_t *old = tx->hash, ocap = tx->hcap, i;

	tx->hash = calloc(ncap, sizeof(*tx->hash));
	if (tx->hash == NULL) {
		tx->hash = old;
		return kt__err(KT_ENOMEM, "out of memory");
	}
	tx->hcap = ncap;
	for (i = 0; i < ocap; i++) {
		if (old[i] != 0) {
			kt__txw *w = &tx->w[old[i] - 1];
			*hash_slot(tx, w->key, w->klen) = old[i];
		}
	}
	free(old);
	return 0;
}

/* The commit phase of a write.  Index rows are what make nodes reachable,
 * so a batch removes index rows before anything else, then writes node and
 * data rows, then adds index rows, and only then removes node and data
 * rows: at no point does an index row point at a missing node.  LevelDB
 * applies the whole batch at once; an engine that is atomic per partition
 * applies it in this order. */
static int phase_of(const kt__txw *w)
{
	int index = w->plen > 0 && w->key[0] != '/' && w->klen > w->plen + 1;

	if (index)
		return w->del ? 0 : 2;
	return w->del ? 3 : 1;
}

static int tx_write(kt__tx *tx, kt__slice part, kt__slice sort,
		    kt__slice val, int del, int clean)
{
	size_t klen = part.len + 1 + sort.len;
	size_t *slot;
	kt__txw *w;
	int rc;

	if (tx->st->read_only && !clean)
		return kt__err(KT_EREADONLY, "the store was opened read-only");
	if ((tx->nw + 1) * 2 > tx->hcap && (rc = hash_grow(tx)) != 0)
		return rc;
	if (tx->nw == tx->capw) {
		size_t ncap = tx->capw ? tx->capw * 2 : 16;
		kt__txw *nw = realloc(tx->w, ncap * sizeof(*nw));
		if (nw == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		tx->w = nw;
		tx->capw = ncap;
	}
	w = &tx->w[tx->nw];
	memset(w, 0, sizeof(*w));
	/* Key and value in one allocation; w->key owns it. */
	w->key = malloc(klen + val.len + 1);
	if (w->key == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	w->val = w->key + klen;
	memcpy(w->key, part.p, part.len);
	w->key[part.len] = '\0';
	if (sort.len)
		memcpy(w->key + part.len + 1, sort.p, sort.len);
	w->plen = part.len;
	w->klen = klen;
	if (val.len)
		memcpy(w->val, val.p, val.len);
	w->vlen = val.len;
	w->del = del;
	w->clean = clean;
	w->phase = phase_of(w);
	if (!clean)
		tx->nreal++;
	/* A rewrite supersedes the earlier write and moves to the end, so
	 * the emission order stays the visibility order. */
	slot = hash_slot(tx, w->key, klen);
	if (*slot != 0)
		tx->w[*slot - 1].dead = 1;
	*slot = tx->nw + 1;
	tx->nw++;
	return 0;
}

int kt__tx_put(kt__tx *tx, kt__slice part, kt__slice sort, kt__slice val)
{
	return tx_write(tx, part, sort, val, 0, 0);
}

int kt__tx_del(kt__tx *tx, kt__slice part, kt__slice sort)
{
	return tx_write(tx, part, sort, kt__sl("", 0), 1, 0);
}

static kt__slice meta_part(void)
{
	return kt__sl(KT__PART_META, strlen(KT__PART_META));
}

/* Read the counter row, the persisted limits: every id and version below
 * them may be in use, or reserved by a process. */
static int counters_get(kt__tx *tx, unsigned char u[16])
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__buf v = {0};
	int rc;

	rc = kt__rd_get(&rd, meta_part(), kt__sl("alloc", 5), &v);
	if (rc == 0 && v.len == 16)
		memcpy(u, v.p, 16);
	else if (rc == 0 || rc == KT_ENOTFOUND)
		rc = kt__err(KT_ECORRUPT, "the counter row is missing or "
			     "damaged");
	kt__buf_free(&v);
	return rc;
}

static int counters_put(kt__tx *tx, const unsigned char u[16])
{
	return kt__tx_put(tx, meta_part(), kt__sl("alloc", 5),
			  kt__sl(u, 16));
}

/* Reserve the next KT__ALLOC_CHUNK ids (which 0) or versions (which 1)
 * for this store handle: raise the persisted limit in this transaction.
 * Two processes reserving at once both read the counter row, so one of
 * their commits fails its condition and reruns: ranges never overlap.
 * The range is the handle's once the commit lands (kt__tx_commit). */
static int reserve(kt__tx *tx, int which)
{
	unsigned char u[16];
	uint64_t lim;
	int rc;

	if ((rc = counters_get(tx, u)) != 0)
		return rc;
	lim = kt__get64(u + 8 * which);
	if (lim > UINT64_MAX - 2 * KT__ALLOC_CHUNK)
		return kt__err(KT_ECORRUPT, "the %s counter is exhausted",
			       which ? "version" : "id");
	if (which == 0) {
		tx->next_id = lim;
		tx->id_limit = lim + KT__ALLOC_CHUNK;
	} else {
		tx->next_ver = lim;
		tx->ver_limit = lim + KT__ALLOC_CHUNK;
	}
	kt__put64(u + 8 * which, lim + KT__ALLOC_CHUNK);
	tx->alloc_dirty = 1;
	return counters_put(tx, u);
}

int kt__tx_alloc_id(kt__tx *tx, uint64_t *id)
{
	int rc;

	if (tx->next_id >= tx->id_limit && (rc = reserve(tx, 0)) != 0)
		return rc;
	*id = tx->next_id++;
	return 0;
}

int kt__tx_version(kt__tx *tx, uint64_t *v)
{
	int rc;

	if (tx->next_ver >= tx->ver_limit && (rc = reserve(tx, 1)) != 0)
		return rc;
	*v = tx->next_ver++;
	return 0;
}

int kt__tx_counters_raise(kt__tx *tx, uint64_t min_id, uint64_t min_ver,
			  int *raised)
{
	unsigned char u[16];
	int rc;

	*raised = 0;
	if ((rc = counters_get(tx, u)) != 0)
		return rc;
	if (kt__get64(u) < min_id) {
		kt__put64(u, min_id);
		*raised |= 1;
	}
	if (kt__get64(u + 8) < min_ver) {
		kt__put64(u + 8, min_ver);
		*raised |= 2;
	}
	return *raised ? counters_put(tx, u) : 0;
}

static _Thread_local const kt__tx *ordering;

/* Order by phase, then by partition (rows of one partition together), then
 * by emission order. */
static int commit_cmp(const void *a, const void *b)
{
	const kt__txw *x = &ordering->w[*(const size_t *)a];
	const kt__txw *y = &ordering->w[*(const size_t *)b];
	int px = x->phase, py = y->phase, c;
	size_t n;

	if (px != py)
		return px - py;
	n = x->plen < y->plen ? x->plen : y->plen;
	c = memcmp(x->key, y->key, n);
	if (c == 0 && x->plen != y->plen)
		c = x->plen < y->plen ? -1 : 1;
	if (c != 0)
		return c;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static int is_counter_row(const kt__txw *w)
{
	return w->plen == strlen(KT__PART_META) &&
	       memcmp(w->key, KT__PART_META, w->plen) == 0 &&
	       w->klen == w->plen + 6 &&
	       memcmp(w->key + w->plen + 1, "alloc", 5) == 0;
}

/* What the transaction read, as the commit's conditions: every row it
 * read from the engine (a cached read, even one it later overwrote), and
 * every scan. */
static int conds_make(kt__cond **out, size_t *n, const kt__tx *tx)
{
	kt__cond *c;
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	if (tx->snap == NULL)
		return 0;
	c = malloc((tx->nw + tx->nscans + 1) * sizeof(*c));
	if (c == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	for (i = 0; i < tx->nw; i++) {
		const kt__txw *w = &tx->w[i];
		if (!w->clean)
			continue;
		memset(&c[k], 0, sizeof(c[k]));
		c[k].kind = KT__COND_ROW;
		c[k].part = kt__sl(w->key, w->plen);
		c[k].sort = kt__sl(w->key + w->plen + 1, w->klen - w->plen - 1);
		k++;
	}
	for (i = 0; i < tx->nscans; i++) {
		const kt__txscan *sc = &tx->scans[i];
		memset(&c[k], 0, sizeof(c[k]));
		c[k].kind = KT__COND_SCAN;
		c[k].how.part = kt__slb(&sc->part);
		c[k].how.after = kt__slb(&sc->after);
		c[k].how.from = kt__slb(&sc->from);
		c[k].how.flags = sc->flags;
		c[k].nrows = sc->nrows;
		c[k].complete = sc->complete;
		k++;
	}
	*out = c;
	*n = k;
	return 0;
}

int kt__tx_commit(kt__tx *tx)
{
	kt_store *st = tx->st;
	kt__write *wv = NULL;
	kt__cond *conds = NULL;
	kt__commit cm;
	size_t *order = NULL;
	size_t i, n = 0, live = 0, nc = 0;
	int rc;

	if (tx->nreal == 0 && tx->nextra == 0)
		return 0;
	wv = malloc((tx->nw + tx->nextra) * sizeof(*wv));
	order = malloc((tx->nw ? tx->nw : 1) * sizeof(*order));
	if (wv == NULL || order == NULL) {
		free(wv);
		free(order);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	/* A raised counter limit goes first: on an engine that applies a
	 * batch in pieces, no row may carry an id or version beyond what
	 * is persisted. */
	for (i = 0; i < tx->nw; i++) {
		kt__txw *w = &tx->w[i];
		if (w->dead || w->clean)
			continue;
		if (is_counter_row(w)) {
			wv[n].part = kt__sl(w->key, w->plen);
			wv[n].sort = kt__sl(w->key + w->plen + 1,
					    w->klen - w->plen - 1);
			wv[n].value = kt__sl(w->val, w->vlen);
			wv[n].del = w->del;
			n++;
		} else {
			order[live++] = i;
		}
	}
	/* An engine that applies a batch at once needs no order; sorting a
	 * big rename's or delete's writes cost a tenth of its time. */
	if (!st->rows->ops->atomic_batch) {
		ordering = tx;
		qsort(order, live, sizeof(*order), commit_cmp);
		ordering = NULL;
	}
	for (i = 0; i < live; i++) {
		kt__txw *w = &tx->w[order[i]];
		wv[n].part = kt__sl(w->key, w->plen);
		wv[n].sort = kt__sl(w->key + w->plen + 1, w->klen - w->plen - 1);
		wv[n].value = kt__sl(w->val, w->vlen);
		wv[n].del = w->del;
		n++;
	}
	for (i = 0; i < tx->nextra; i++)
		wv[n++] = tx->extra[i];
	rc = conds_make(&conds, &nc, tx);
	if (rc == 0) {
		memset(&cm, 0, sizeof(cm));
		cm.w = wv;
		cm.nw = n;
		cm.snap = tx->snap;
		cm.c = conds;
		cm.nc = nc;
		cm.sync = st->sync;
		cm.applied = &st->last_commit;
		rc = st->rows->ops->commit(st->rows, &cm);
		/* Other processes that watch the store hear of it. */
		if (rc == 0 && st->server != NULL)
			kt__server_publish(st->server, &cm);
	}
	free(conds);
	free(wv);
	free(order);
	if (rc == 0) {
		st->next_id = tx->next_id;
		st->id_limit = tx->id_limit;
		st->next_ver = tx->next_ver;
		st->ver_limit = tx->ver_limit;
	}
	return rc;
}

/* How long to wait before the @p attempt'th rerun: a random time up to a
 * bound that doubles from 50 us to 20 ms, so that processes that keep
 * colliding spread out. */
static void backoff(unsigned int attempt, unsigned int *seed)
{
	long cap = 50000L << (attempt < 9 ? attempt : 9);
	struct timespec ts;

	if (cap > 20000000L)
		cap = 20000000L;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)(rand_r(seed) % cap);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int tx_run(kt_store *st, int (*fn)(kt__tx *tx, void *arg), void *arg,
		  int lock)
{
	unsigned int attempt, seed = (unsigned int)(uintptr_t)&attempt ^
				     (unsigned int)kt__now();
	kt__rows *r = st->rows;
	kt__tx tx;
	int rc = KT__ERETRY, nowait = kt__fence_nowait;
	unsigned int waits = 0;

	for (attempt = 0; attempt < KT__RETRY_MAX; attempt++) {
		if (rc == KT__EFENCED)
			kt__fence_pause(&waits);
		else if (attempt > 0)
			backoff(attempt, &seed);
		if (lock)
			pthread_mutex_lock(&st->wlock);
		/* Never wait for a fence holding the writer lock: the
		 * fence's owner may need it (server.c, a client that went
		 * away in its steps).  Wait without it, then run again. */
		kt__fence_nowait = 1;
		kt__tx_init(&tx, st);
		rc = fn(&tx, arg);
		if (rc == 0)
			rc = kt__tx_commit(&tx);
		else if (rc != KT__ERETRY && tx.snap != NULL &&
			 r->ops->validate != NULL && rc != KT_EIO &&
			 rc != KT_ENOMEM &&
			 r->ops->validate(r, tx.snap) == KT__ERETRY)
			/* An operation that fails (ENOTFOUND, or even
			 * ECORRUPT: a link count and the paths it counts
			 * disagreeing) on an engine whose reads are not one
			 * moment may have read another client's commit part
			 * way; if what it read has changed since, it did,
			 * and it runs again.  A commit needs no such check:
			 * its guards refuse it. */
			rc = KT__ERETRY;
		kt__tx_free(&tx);
		kt__fence_nowait = nowait;
		if (lock)
			pthread_mutex_unlock(&st->wlock);
		if (rc == KT__EFENCED && lock)
			attempt--; /* waiting for a fence is no conflict */
		else if (rc != KT__ERETRY)
			return rc;
	}
	return kt__err(KT_EBUSY, "gave up after %d attempts: other processes "
		       "kept changing what this operation reads",
		       KT__RETRY_MAX);
}

int kt__tx_run(kt_store *st, int (*fn)(kt__tx *tx, void *arg), void *arg)
{
	return tx_run(st, fn, arg, 1);
}

int kt__tx_run_held(kt_store *st, int (*fn)(kt__tx *tx, void *arg),
		    void *arg)
{
	return tx_run(st, fn, arg, 0);
}

/* ------------------------------------------------------------------------ */
/* Readers outside transactions */

int kt__rd_validates(const kt_store *st)
{
	return st != NULL && st->rows->ops->validate != NULL;
}

int kt__rd_begin(kt__rd *rd, kt_store *st)
{
	rd->st = st;
	rd->tx = NULL;
	rd->snap = NULL;
	if (!kt__rd_validates(st))
		return 0;
	return st->rows->ops->snapshot(&rd->snap, st->rows);
}

int kt__rd_begin_snap(kt__rd *rd, kt_store *st)
{
	int rc = kt__rd_begin(rd, st);

	if (rc == 0 && rd->snap == NULL)
		rc = st->rows->ops->snapshot(&rd->snap, st->rows);
	return rc;
}

int kt__rd_end(kt__rd *rd, int rc, unsigned int *attempt)
{
	kt__rows *r;
	unsigned int seed;
	int v = 0;

	if (rd->st == NULL || rd->snap == NULL)
		return rc;
	r = rd->st->rows;
	if (r->ops->validate != NULL && rc != KT_EIO && rc != KT_ENOMEM)
		v = r->ops->validate(r, rd->snap);
	r->ops->snapshot_free(r, rd->snap);
	rd->snap = NULL;
	if (v == 0)
		return rc;
	if (v != KT__ERETRY)
		return rc != 0 ? rc : v;
	if (++*attempt >= KT__RETRY_MAX)
		return kt__err(KT_EBUSY, "gave up after %d attempts: other "
			       "clients kept changing what this call reads",
			       KT__RETRY_MAX);
	seed = (unsigned int)(uintptr_t)rd ^ *attempt ^
	       (unsigned int)kt__now();
	backoff(*attempt, &seed);
	return KT__ERETRY;
}

void kt__rd_prefetch(kt__rd *rd, kt__slice part, kt__slice sort)
{
	kt__rows *r = rd->st->rows;
	const kt__snap *snap;

	if (r->ops->prefetch == NULL)
		return;
	/* Written by the transaction: the get will not reach the engine. */
	if (rd->tx != NULL && rd->tx->nw > 0) {
		char kb[512];
		size_t klen = part.len + 1 + sort.len;
		if (klen > sizeof(kb))
			return;
		memcpy(kb, part.p, part.len);
		kb[part.len] = '\0';
		if (sort.len)
			memcpy(kb + part.len + 1, sort.p, sort.len);
		if (*hash_slot(rd->tx, kb, klen) != 0)
			return;
	}
	if (rd->tx != NULL && tx_snap(rd->tx) != 0)
		return;
	snap = rd->tx != NULL ? rd->tx->snap : rd->snap;
	if (snap != NULL)
		r->ops->prefetch(r, snap, part, sort);
}

void kt__rd_prefetch_scan(kt__rd *rd, kt__slice part)
{
	kt__rows *r = rd->st->rows;
	const kt__snap *snap;

	if (r->ops->prefetch_scan == NULL)
		return;
	if (rd->tx != NULL && tx_snap(rd->tx) != 0)
		return;
	snap = rd->tx != NULL ? rd->tx->snap : rd->snap;
	if (snap != NULL)
		r->ops->prefetch_scan(r, snap, part);
}

/* How rd_get asks the engine: get, get_unchecked or get_near. */
enum { RD_CHECKED, RD_UNCHECKED, RD_NEAR };

static int rd_get(kt__rd *rd, kt__slice part, kt__slice sort, kt__buf *out,
		  int how)
{
	kt__rows *r = rd->st->rows;
	const kt__snap *snap;
	int rc;

	if (rd->tx != NULL && rd->tx->nw > 0) {
		char kb[512];
		char *k = kb;
		size_t klen = part.len + 1 + sort.len, *slot;

		if (klen > sizeof(kb) && (k = malloc(klen)) == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		memcpy(k, part.p, part.len);
		k[part.len] = '\0';
		if (sort.len)
			memcpy(k + part.len + 1, sort.p, sort.len);
		slot = hash_slot(rd->tx, k, klen);
		if (k != kb)
			free(k);
		if (*slot != 0) {
			kt__txw *w = &rd->tx->w[*slot - 1];
			if (w->del)
				return KT_ENOTFOUND;
			return kt__buf_set(out, w->val, w->vlen);
		}
	}
	if (rd->tx != NULL && (rc = tx_snap(rd->tx)) != 0)
		return rc;
	snap = rd->tx != NULL ? rd->tx->snap : rd->snap;
	if (how == RD_UNCHECKED && r->ops->get_unchecked != NULL)
		rc = r->ops->get_unchecked(r, snap, part, sort, out);
	else if (how == RD_NEAR && r->ops->get_near != NULL && snap != NULL)
		rc = r->ops->get_near(r, snap, part, sort, out);
	else
		rc = r->ops->get(r, snap, part, sort, out);
	/* Remember what the engine said: operations read the same rows
	 * (a parent, say) more than once.  Not an unchecked miss, which its
	 * caller asks again with the checks (value.c). */
	if (rd->tx != NULL &&
	    (rc == 0 || (rc == KT_ENOTFOUND && how != RD_UNCHECKED))) {
		int crc = tx_write(rd->tx, part, sort,
				   rc == 0 ? kt__slb(out) : kt__sl("", 0),
				   rc == KT_ENOTFOUND, 1);
		if (crc != 0)
			return crc;
	}
	return rc;
}

int kt__rd_get(kt__rd *rd, kt__slice part, kt__slice sort, kt__buf *out)
{
	return rd_get(rd, part, sort, out, RD_CHECKED);
}

int kt__rd_get_unchecked(kt__rd *rd, kt__slice part, kt__slice sort,
			 kt__buf *out)
{
	return rd_get(rd, part, sort, out, RD_UNCHECKED);
}

int kt__rd_get_near(kt__rd *rd, kt__slice part, kt__slice sort,
		    kt__buf *out)
{
	return rd_get(rd, part, sort, out, RD_NEAR);
}

struct kt__mcur {
	kt__rows *rows;
	kt__cursor *ec;  /* engine cursor */
	int ec_rc;       /* 1: have row in erow; KT_ITEROVER; error */
	kt__row erow;
	kt__tx *tx;
	size_t *ov;      /* indexes of overlay writes in range, sorted */
	size_t nov, iov;
	int reverse;
	long scan; /* index of the transaction's record of this scan, or -1 */
};

static int key_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c != 0)
		return c;
	return al < bl ? -1 : al > bl;
}

/* qsort has no context argument; the scan being sorted is published here
 * for the duration of the sort.  Thread-local, so concurrent sorts in
 * different threads do not meet. */
static _Thread_local const kt__tx *sorting;

static int ov_cmp(const void *a, const void *b)
{
	const kt__txw *x = &sorting->w[*(const size_t *)a];
	const kt__txw *y = &sorting->w[*(const size_t *)b];

	return key_cmp(x->key, x->klen, y->key, y->klen);
}

/* Does overlay write w fall in the range the scan covers? */
static int ov_in(const kt__txw *w, const kt__scan *how)
{
	const char *sort = w->key + w->plen + 1;
	size_t slen = w->klen - w->plen - 1;

	if (how->flags & KT__SCAN_PREFIX)
		return w->plen >= how->part.len &&
		       memcmp(w->key, how->part.p, how->part.len) == 0 &&
		       (!(how->flags & KT__SCAN_AFTER) ||
			key_cmp(w->key, w->plen, how->after.p,
				how->after.len) > 0);
	if (w->plen != how->part.len ||
	    memcmp(w->key, how->part.p, w->plen) != 0)
		return 0;
	if (how->flags & KT__SCAN_FROM)
		return key_cmp(sort, slen, how->from.p, how->from.len) >= 0;
	if (how->flags & KT__SCAN_AFTER) {
		int c = key_cmp(sort, slen, how->after.p, how->after.len);
		return (how->flags & KT__SCAN_REVERSE) ? c < 0 : c > 0;
	}
	return 1;
}

static void ec_advance(kt__mcur *c)
{
	int rc = c->rows->ops->next(c->ec, &c->erow);

	c->ec_rc = rc == 0 ? 1 : rc;
	if (c->scan >= 0) {
		kt__txscan *sc = &c->tx->scans[c->scan];
		if (rc == 0)
			sc->nrows++;
		else if (rc == KT_ITEROVER)
			sc->complete = 1;
	}
}

/* Remember a scan of the transaction: its commit depends on the rows the
 * scan returns from the engine. */
static int scan_record(kt__tx *tx, const kt__scan *how, long *idx)
{
	kt__txscan *sc;
	int rc;

	if (tx->nscans == tx->capscans) {
		size_t ncap = tx->capscans ? tx->capscans * 2 : 4;
		kt__txscan *n = realloc(tx->scans, ncap * sizeof(*n));
		if (n == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		tx->scans = n;
		tx->capscans = ncap;
	}
	sc = &tx->scans[tx->nscans];
	memset(sc, 0, sizeof(*sc));
	sc->flags = how->flags;
	if ((rc = kt__buf_set(&sc->part, how->part.p, how->part.len)) != 0 ||
	    (rc = kt__buf_set(&sc->after, how->after.p, how->after.len)) != 0 ||
	    (rc = kt__buf_set(&sc->from, how->from.p, how->from.len)) != 0) {
		kt__buf_free(&sc->part);
		kt__buf_free(&sc->after);
		kt__buf_free(&sc->from);
		return rc;
	}
	*idx = (long)tx->nscans++;
	return 0;
}

int kt__rd_scan(kt__mcur **out, kt__rd *rd, const kt__scan *how)
{
	kt__rows *r = rd->st->rows;
	kt__mcur *c = calloc(1, sizeof(*c));
	size_t i;
	int rc;

	*out = NULL;
	if (c == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	c->rows = r;
	c->reverse = (how->flags & KT__SCAN_REVERSE) != 0;
	c->tx = rd->tx;
	c->scan = -1;
	if (rd->tx != NULL) {
		for (i = 0; i < rd->tx->nw; i++) {
			kt__txw *w = &rd->tx->w[i];
			if (w->dead || w->clean || !ov_in(w, how))
				continue;
			if (c->nov % 64 == 0) {
				size_t *n = realloc(c->ov, (c->nov + 64) *
								   sizeof(*n));
				if (n == NULL) {
					kt__mcur_free(c);
					return kt__err(KT_ENOMEM,
						       "out of memory");
				}
				c->ov = n;
			}
			c->ov[c->nov++] = i;
		}
		if (c->nov > 1) {
			sorting = rd->tx;
			qsort(c->ov, c->nov, sizeof(*c->ov), ov_cmp);
			sorting = NULL;
		}
	}
	if (rd->tx != NULL) {
		if ((rc = tx_snap(rd->tx)) != 0 ||
		    (rc = scan_record(rd->tx, how, &c->scan)) != 0) {
			kt__mcur_free(c);
			return rc;
		}
	}
	rc = r->ops->scan(&c->ec, r, rd->tx != NULL ? rd->tx->snap : rd->snap,
			  how);
	if (rc != 0) {
		kt__mcur_free(c);
		return rc;
	}
	ec_advance(c);
	*out = c;
	return 0;
}

int kt__mcur_next(kt__mcur *c, kt__row *row)
{
	for (;;) {
		kt__txw *w = NULL;
		int cmp;

		if (c->ec_rc == 2)
			ec_advance(c);
		if (c->ec_rc < 0 && c->ec_rc != KT_ITEROVER)
			return c->ec_rc;
		if (c->iov < c->nov)
			w = &c->tx->w[c->ov[c->reverse ? c->nov - 1 - c->iov
						       : c->iov]];
		if (c->ec_rc != 1 && w == NULL)
			return KT_ITEROVER;
		if (c->ec_rc != 1) {
			cmp = 1; /* only the overlay has rows */
		} else if (w == NULL) {
			cmp = -1;
		} else {
			/* Compare the engine row's key with w's. */
			size_t pl = c->erow.part.len;
			int pc = memcmp(c->erow.part.p, w->key,
					pl < w->plen ? pl : w->plen);
			if (pc == 0)
				pc = pl < w->plen ? -1 : pl > w->plen;
			if (pc == 0)
				pc = key_cmp(c->erow.sort.p, c->erow.sort.len,
					     w->key + w->plen + 1,
					     w->klen - w->plen - 1);
			cmp = c->reverse ? -pc : pc;
		}
		if (cmp < 0) {
			*row = c->erow;
			/* The row stays valid until the next call, which
			 * is when the engine cursor moves. */
			c->ec_rc = 2;
			return 0;
		}
		/* The overlay wins ties: it is newer. */
		if (cmp == 0)
			ec_advance(c);
		c->iov++;
		if (w->del)
			continue;
		row->part = kt__sl(w->key, w->plen);
		row->sort = kt__sl(w->key + w->plen + 1, w->klen - w->plen - 1);
		row->value = kt__sl(w->val, w->vlen);
		return 0;
	}
}

void kt__mcur_done(kt__mcur *c, kt__rd *rd)
{
	kt__rows *r = c->rows;

	/* Only a plain read's cursor, at its end, with no overlay left. */
	if (c->ec == NULL || c->ec_rc != KT_ITEROVER || c->reverse ||
	    c->tx != NULL || rd->tx != NULL || rd->snap == NULL ||
	    c->iov < c->nov || r->ops->cursor_done == NULL)
		return;
	r->ops->cursor_done(r, c->ec, rd->snap);
	c->ec = NULL;
}

void kt__mcur_free(kt__mcur *c)
{
	if (c == NULL)
		return;
	if (c->ec != NULL)
		c->rows->ops->cursor_free(c->ec);
	free(c->ov);
	free(c);
}
