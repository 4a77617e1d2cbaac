/*
 * eng_rados.c - the RADOS floor: the benchmark's workloads done with raw
 * librados on the layout keytree uses on RADOS (docs/FORMAT.md §14): one
 * object TREE/<partition> per partition, its rows in the omap under "." ||
 * esc(sort key), the catalog TREE!cat.  The rows are those of eng_floor.c
 * (FORMAT.md §4 to §8, §11), so keytree can open and check the result.
 *
 * What the floor does, per operation (a "round" is one wave of operations
 * in flight together, waited for together):
 *
 *   put of a new item:  round 1, two reads in parallel: the item's node
 *                       row (absent) and the parent's node row; round 2,
 *                       one compound write per object, all in parallel:
 *                       the item's object (made, node row, kt.lk "-"),
 *                       the id object (id row), the parent's object (its
 *                       rewritten node row), the parent's listing object
 *                       (index row), the catalog (the new partition).
 *   get:                one omap_get_vals_by_keys of "." on one object.
 *   get through a link: two such reads, one after the other.
 *   list:               omap pages of 1024 (librados's most) of one object.
 *   find:               catalog pages, and for every partition under the
 *                       prefix that is not a listing one omap read of its
 *                       node row, 64 in flight.
 *   rename, delete:     catalog pages, a read of every partition under the
 *                       directory (64 in flight), then one compound write
 *                       per object touched (64 in flight): the rows moved
 *                       or removed, the id rows, the root's index and node
 *                       rows, the catalog entries of new partitions.
 *
 * What it leaves out, and keytree does not: the commit record, the locks
 * and the flip of a commit over several objects (§14 "Commits"), guards
 * (assert_version, cmpxattr), the settling of locks met while reading
 * (keytree reads kt.lk with every read, in the same operation), path
 * checks and retries.  Ids and versions come from chunks reserved in the
 * counters row (/meta alloc) with a guarded read-modify-write, one extra
 * round per 1024 ids or versions, as keytree reserves them.  The catalog
 * entry of an item's listing partition is written with every put (keytree
 * remembers the entries it has seen).  A renamed directory's node row
 * moves as it is (keytree gives it a new ctime and version); the root's
 * node row is rewritten as keytree does.
 *
 * The skeleton is made through the library (bench_kt_skeleton), so the
 * floor starts from a real tree; with -c, kt_check verifies the result.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <keytree.h>
#include <rados/librados.h>

#include "bench.h"

#define D0	    '\xc2'
#define D1	    '\xa6'
#define NODE_HDR    74
#define ALLOC_CHUNK 1024
#define PAGE	    1024
#define WINDOW	    64

typedef struct rctx {
	const bench_params *p;
	rados_t cl;
	rados_ioctx_t io;
	char tree[256];
	uint64_t next_id, id_limit, next_version, version_limit;
	uint32_t uid, gid;
} rctx;

/* ------------------------------------------------------------ helpers */

static void put_u32(unsigned char *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *b)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static uint32_t get_u32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int r_fail(const char *what, int rc)
{
	return bench_fail(what, strerror(rc < 0 ? -rc : rc));
}

/* E(path): '/' becomes the delimiter; returns the length. */
static size_t enc(char *out, const char *path)
{
	size_t n = 0;

	if (strcmp(path, "/") == 0)
		return 0;
	for (; *path; path++) {
		if (*path == '/') {
			out[n++] = D0;
			out[n++] = D1;
		} else {
			out[n++] = *path;
		}
	}
	return n;
}

/* "." || esc(@p s) into @p out (room for 1 + 2 * n + 1); its length.
 * esc: 00 -> 01 01, 01 -> 01 02, other bytes as they are. */
static size_t okey(char *out, const char *s, size_t n)
{
	size_t i, k = 0;

	out[k++] = '.';
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 1) {
			out[k++] = 1;
			out[k++] = (char)(c + 1);
		} else {
			out[k++] = (char)c;
		}
	}
	out[k] = '\0';
	return k;
}

/* The inverse of okey() (without the checks keytree makes). */
static size_t okey_dec(char *out, const char *k, size_t n)
{
	size_t i, m = 0;

	for (i = 1; i < n; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c == 1 && i + 1 < n)
			c = (unsigned char)(k[++i] - 1);
		out[m++] = (char)c;
	}
	out[m] = '\0';
	return m;
}

/* The object of partition @p part (a bench partition is never long). */
static void oid_of(char *out, size_t cap, const rctx *c, const char *part,
		   size_t plen)
{
	size_t t = strlen(c->tree);

	if (t + 1 + plen + 1 > cap)
		plen = cap - t - 2;
	memcpy(out, c->tree, t);
	out[t] = '/';
	memcpy(out + t + 1, part, plen);
	out[t + 1 + plen] = '\0';
}

static void cat_oid(char *out, size_t cap, const rctx *c)
{
	snprintf(out, cap, "%s!cat", c->tree);
}

/* ------------------------------------------------------- one row read */

/* A read of one row, to run with others in one round. */
typedef struct rowread {
	char oid[1200];
	char key[2 * BENCH_PATH_MAX + 4];
	const char *keyp;
	rados_read_op_t op;
	rados_completion_t comp;
	rados_omap_iter_t it;
	int prval, rc;
	char *val; /* malloc'd, or NULL when absent */
	size_t len;
} rowread;

static void rr_init(rowread *r, const rctx *c, const char *part, size_t plen,
		    const char *sort, size_t slen)
{
	oid_of(r->oid, sizeof(r->oid), c, part, plen);
	okey(r->key, sort, slen);
	r->keyp = r->key;
	r->val = NULL;
	r->len = 0;
	r->it = NULL;
	r->prval = 0;
	r->op = rados_create_read_op();
	rados_read_op_omap_get_vals_by_keys(r->op, &r->keyp, 1, &r->it,
					    &r->prval);
	r->rc = rados_aio_create_completion2(NULL, NULL, &r->comp);
	if (r->rc == 0)
		r->rc = rados_aio_read_op_operate(r->op, c->io, r->comp,
						  r->oid, 0);
}

/* Wait for @p r; 0 (r->val NULL when the row or the object is absent),
 * or -1. */
static int rr_wait(rowread *r)
{
	char *k, *v;
	size_t kl, vl;

	if (r->rc == 0) {
		rados_aio_wait_for_complete(r->comp);
		r->rc = rados_aio_get_return_value(r->comp);
	}
	rados_aio_release(r->comp);
	if (r->rc == 0 && r->prval < 0)
		r->rc = r->prval;
	if (r->rc == 0 && r->it != NULL &&
	    rados_omap_get_next2(r->it, &k, &v, &kl, &vl) == 0 && k != NULL) {
		r->val = malloc(vl ? vl : 1);
		memcpy(r->val, v, vl);
		r->len = vl;
	}
	if (r->it != NULL)
		rados_omap_get_end(r->it);
	rados_release_read_op(r->op);
	if (r->rc == -ENOENT)
		r->rc = 0;
	if (r->rc < 0)
		return r_fail(r->oid, r->rc);
	return 0;
}

/* One row, alone in its round. */
static int row_get(rctx *c, const char *part, size_t plen, const char *sort,
		   size_t slen, char **val, size_t *len)
{
	rowread r;

	rr_init(&r, c, part, plen, sort, slen);
	if (rr_wait(&r) != 0)
		return -1;
	*val = r.val;
	*len = r.len;
	return 0;
}

/* -------------------------------------------------------- write batch */

/* Row writes, applied as one compound operation per object. */
typedef struct wr {
	char *part, *key, *val; /* key: the omap key */
	size_t plen, klen, vlen;
	int del;
	int make; /* the object is new: make it with kt.lk */
} wr;

typedef struct batch {
	wr *w;
	size_t n, cap;
} batch;

static void b_add(batch *b, const char *part, size_t plen, const char *sort,
		  size_t slen, const void *val, size_t vlen, int del)
{
	wr *w;

	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 64;
		b->w = realloc(b->w, b->cap * sizeof(*b->w));
	}
	w = &b->w[b->n++];
	w->part = malloc(plen + 1);
	memcpy(w->part, part, plen);
	w->part[plen] = '\0';
	w->plen = plen;
	w->key = malloc(2 * slen + 2);
	w->klen = okey(w->key, sort, slen);
	w->vlen = del ? 0 : vlen;
	w->val = malloc(vlen ? vlen : 1);
	if (!del)
		memcpy(w->val, val, vlen);
	w->del = del;
	w->make = 0;
}

static void b_put(batch *b, const char *part, size_t plen, const char *sort,
		  size_t slen, const void *val, size_t vlen)
{
	b_add(b, part, plen, sort, slen, val, vlen, 0);
}

static void b_del(batch *b, const char *part, size_t plen, const char *sort,
		  size_t slen)
{
	b_add(b, part, plen, sort, slen, NULL, 0, 1);
}

/* The catalog entry of partition @p part: a write to partition
 * "\x01!cat", never a real one, which b_commit() sends to TREE!cat. */
static void b_catalog(batch *b, const char *part, size_t plen)
{
	static const char cat[] = "\x01!cat";

	b_put(b, cat, sizeof(cat) - 1, part, plen, "", 0);
}

/* The partition of the write just added is new: its object is made, with
 * kt.lk, and the catalog gets its entry. */
static void b_newpart(batch *b, const char *part, size_t plen)
{
	b->w[b->n - 1].make = 1;
	b_catalog(b, part, plen);
}

static void b_free(batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->w[i].part);
		free(b->w[i].key);
		free(b->w[i].val);
	}
	free(b->w);
	memset(b, 0, sizeof(*b));
}

static int wr_cmp(const void *a, const void *b)
{
	const wr *x = a, *y = b;
	size_t n = x->plen < y->plen ? x->plen : y->plen;
	int r = memcmp(x->part, y->part, n);

	if (r != 0)
		return r;
	return x->plen < y->plen ? -1 : x->plen > y->plen;
}

/* An object's operation in flight. */
typedef struct inflight {
	rados_write_op_t op;
	rados_completion_t comp;
	char oid[1200];
	const char **k, **v;
	size_t *kl, *vl;
	int rc;
} inflight;

static int fl_wait(inflight *f)
{
	if (f->rc == 0) {
		rados_aio_wait_for_complete(f->comp);
		f->rc = rados_aio_get_return_value(f->comp);
	}
	rados_aio_release(f->comp);
	rados_release_write_op(f->op);
	free(f->k);
	free(f->v);
	free(f->kl);
	free(f->vl);
	f->op = NULL;
	if (f->rc < 0)
		return r_fail(f->oid, f->rc);
	return 0;
}

/* Apply @p b: one compound write per object, WINDOW in flight.  Puts go
 * before deletions within an object: no batch here writes one key twice,
 * so the order of the writes of one object does not matter. */
static int b_commit(rctx *c, batch *b)
{
	inflight fl[WINDOW];
	size_t i = 0, j, k, slot = 0, nfl = 0;
	int rc = 0;

	memset(fl, 0, sizeof(fl));
	qsort(b->w, b->n, sizeof(*b->w), wr_cmp);
	while (i < b->n) {
		inflight *f;
		size_t nput = 0, ndel = 0, m;
		int make = 0;

		for (j = i; j < b->n && wr_cmp(&b->w[i], &b->w[j]) == 0; j++)
			make |= b->w[j].make;
		if (nfl == WINDOW) {
			if (fl_wait(&fl[slot]) != 0)
				rc = -1;
			nfl--;
		}
		f = &fl[slot];
		slot = (slot + 1) % WINDOW;
		nfl++;
		if (b->w[i].part[0] == '\x01')
			cat_oid(f->oid, sizeof(f->oid), c);
		else
			oid_of(f->oid, sizeof(f->oid), c, b->w[i].part,
			       b->w[i].plen);
		m = j - i;
		f->k = malloc(m * sizeof(char *));
		f->v = malloc(m * sizeof(char *));
		f->kl = malloc(m * sizeof(size_t));
		f->vl = malloc(m * sizeof(size_t));
		for (k = i; k < j; k++)
			if (!b->w[k].del) {
				f->k[nput] = b->w[k].key;
				f->kl[nput] = b->w[k].klen;
				f->v[nput] = b->w[k].val;
				f->vl[nput++] = b->w[k].vlen;
			}
		for (k = i; k < j; k++)
			if (b->w[k].del) {
				f->k[nput + ndel] = b->w[k].key;
				f->kl[nput + ndel++] = b->w[k].klen;
			}
		f->op = rados_create_write_op();
		if (make) {
			rados_write_op_create(f->op, LIBRADOS_CREATE_IDEMPOTENT,
					      NULL);
			rados_write_op_setxattr(f->op, "kt.lk", "-", 1);
		}
		if (nput > 0)
			rados_write_op_omap_set2(f->op, f->k, f->v, f->kl,
						 f->vl, nput);
		if (ndel > 0)
			rados_write_op_omap_rm_keys2(f->op, f->k + nput,
						     f->kl + nput, ndel);
		f->rc = rados_aio_create_completion2(NULL, NULL, &f->comp);
		if (f->rc == 0)
			f->rc = rados_aio_write_op_operate(f->op, c->io,
							   f->comp, f->oid,
							   NULL, 0);
		i = j;
	}
	for (k = 0; k < WINDOW; k++)
		if (fl[k].op != NULL && fl_wait(&fl[k]) != 0)
			rc = -1;
	b_free(b);
	return rc;
}

/* ------------------------------------------------------------ counters */

/* Reserve the next chunk of ids (@p which 0) or versions (1): read the
 * counters row and write it raised, guarded on its value (omap_cmp). */
static int reserve(rctx *c, int which)
{
	char oid[1200], key[16], *v = NULL;
	size_t len = 0, klen;
	unsigned char nv[16];
	const char *kp = key;

	oid_of(oid, sizeof(oid), c, "/meta", 5);
	klen = okey(key, "alloc", 5);
	for (;;) {
		rados_write_op_t op;
		uint64_t lim;
		int rc, prv = 0;
		const char *vp = (const char *)nv;
		size_t nvl = sizeof(nv);

		if (row_get(c, "/meta", 5, "alloc", 5, &v, &len) != 0)
			return -1;
		if (v == NULL || len != 16) {
			free(v);
			return bench_fail("alloc row", "missing or damaged");
		}
		memcpy(nv, v, 16);
		lim = get_u64(nv + 8 * which);
		put_u64(nv + 8 * which, lim + ALLOC_CHUNK);
		op = rados_create_write_op();
		rados_write_op_omap_cmp(op, key, LIBRADOS_CMPXATTR_OP_EQ, v,
					len, &prv);
		rados_write_op_omap_set2(op, &kp, &vp, &klen, &nvl, 1);
		rc = rados_write_op_operate(op, c->io, oid, NULL, 0);
		rados_release_write_op(op);
		free(v);
		if (rc == -ECANCELED)
			continue;
		if (rc < 0)
			return r_fail("alloc row", rc);
		if (which == 0) {
			c->next_id = lim;
			c->id_limit = lim + ALLOC_CHUNK;
		} else {
			c->next_version = lim;
			c->version_limit = lim + ALLOC_CHUNK;
		}
		return 0;
	}
}

static int take(rctx *c, uint64_t *id, int versions)
{
	if (id != NULL) {
		if (c->next_id >= c->id_limit && reserve(c, 0) != 0)
			return -1;
		*id = c->next_id++;
	}
	if (c->next_version + (uint64_t)versions > c->version_limit &&
	    reserve(c, 1) != 0)
		return -1;
	return 0;
}

/* ------------------------------------------------------------ open */

/* rados:POOL[/NS]/TREE */
static int connect_to(rctx *c)
{
	const char *loc = c->p->dir, *conf = getenv("KEYTREE_CEPH_CONF");
	char pool[256], ns[256] = "";
	const char *a, *b;
	int rc;

	if (strncmp(loc, "rados:", 6) != 0)
		return bench_fail("rados floor: not a rados: location", loc);
	a = loc + 6;
	b = strrchr(a, '/');
	if (b == NULL || b == a || (size_t)(b - a) >= sizeof(pool) ||
	    strlen(b + 1) >= sizeof(c->tree))
		return bench_fail("rados floor: bad location", loc);
	snprintf(c->tree, sizeof(c->tree), "%s", b + 1);
	snprintf(pool, sizeof(pool), "%.*s", (int)(b - a), a);
	if ((a = strchr(pool, '/')) != NULL) {
		snprintf(ns, sizeof(ns), "%s", a + 1);
		pool[a - pool] = '\0';
	}
	if ((rc = rados_create(&c->cl, NULL)) < 0)
		return r_fail("rados_create", rc);
	if (conf != NULL && conf[0] != '\0' &&
	    (rc = rados_conf_read_file(c->cl, conf)) < 0)
		return r_fail(conf, rc);
	if ((rc = rados_connect(c->cl)) < 0)
		return r_fail("rados_connect", rc);
	if ((rc = rados_ioctx_create(c->cl, pool, &c->io)) < 0)
		return r_fail(pool, rc);
	if (ns[0] != '\0')
		rados_ioctx_set_namespace(c->io, ns);
	c->uid = (uint32_t)geteuid();
	c->gid = (uint32_t)getegid();
	return 0;
}

static int r_attach(void **out, const bench_params *p)
{
	rctx *c = calloc(1, sizeof(*c));

	*out = c;
	if (c == NULL)
		return bench_fail("open", "out of memory");
	c->p = p;
	return connect_to(c);
}

static int r_open(void **out, const bench_params *p)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	int rc;

	o.create_if_missing = 1;
	if (kt_open(&st, p->dir, &o) != 0)
		return bench_fail("kt_open", kt_errmsg());
	rc = bench_kt_skeleton(st, p);
	kt_close(st);
	if (rc != 0) {
		*out = NULL;
		return rc;
	}
	return r_attach(out, p);
}

static int r_check(void *ctx)
{
	rctx *c = ctx;
	kt_store *st = NULL;
	size_t bad = 0;
	int rc;

	if (kt_open(&st, c->p->dir, NULL) != 0)
		return bench_fail("kt_open", kt_errmsg());
	rc = kt_check(&bad, st, NULL);
	kt_close(st);
	if (rc != 0) {
		fprintf(stderr,
			"kt_bench_api: rados floor: kt_check found %zu "
			"violations (%s)\n",
			bad, kt_errmsg());
		return -1;
	}
	return 0;
}

static int r_reopen(void *ctx)
{
	rctx *c = ctx;

	if (c->p->check && r_check(c) != 0)
		return -1;
	return 0;
}

static void r_close(void *ctx)
{
	rctx *c = ctx;

	if (c == NULL)
		return;
	if (c->io != NULL)
		rados_ioctx_destroy(c->io);
	if (c->cl != NULL)
		rados_shutdown(c->cl);
	free(c);
}

/* ------------------------------------------------------------ put, get */

static void touch_dir(unsigned char *row, uint64_t version, int64_t t)
{
	put_u64(row + 38, (uint64_t)t);
	put_u64(row + 46, (uint64_t)t);
	put_u64(row + 54, version);
}

/* A directory's entry count, which its row carries after the header when
 * its format byte is 3 (docs/FORMAT.md §4): @p d more. */
static void count_add(unsigned char *row, size_t len, int d)
{
	if (len >= NODE_HDR + 4 && row[0] == 3)
		put_u32(row + NODE_HDR,
			(uint32_t)((int64_t)get_u32(row + NODE_HDR) + d));
}

/* The id row of node @p id_le: partition "/id", sort key u64be(id), kept
 * by keytree in the shard of the id's allocation chunk, partition
 * "/id." + 16 hex digits of (id - 1) >> 10 (rows_rados.c).  The shard is
 * made, and given its catalog entry, with every put: the floor does not
 * track which shards exist. */
static void id_row(batch *b, const unsigned char *id_le, const char *path,
		   size_t plen, int del)
{
	char sort[8], part[24];
	uint64_t id = 0;

	for (int i = 0; i < 8; i++) {
		sort[i] = (char)id_le[7 - i];
		id = id << 8 | id_le[7 - i];
	}
	snprintf(part, sizeof(part), "/id.%016" PRIx64,
		 id == 0 ? (uint64_t)0 : (id - 1) >> 10);
	if (del) {
		b_del(b, part, 20, sort, 8);
	} else {
		b_put(b, part, 20, sort, 8, path, plen);
		b_newpart(b, part, 20);
	}
}

static int r_put(void *ctx, long i)
{
	rctx *c = ctx;
	char path[BENCH_PATH_MAX], dir[BENCH_PATH_MAX], name[BENCH_PATH_MAX];
	char npart[2 * BENCH_PATH_MAX], ppart[2 * BENCH_PATH_MAX + 2];
	unsigned char row[NODE_HDR + BENCH_VALUE_LEN], idx[9];
	size_t nlen, plen;
	rowread ri, rp;
	batch b = {0};
	int64_t t = now_ns();
	uint64_t id;
	int rc;

	bench_item_path(path, i);
	bench_item_dir(dir, i);
	bench_item_name(name, i);
	nlen = enc(npart, path);
	plen = enc(ppart, dir);
	rr_init(&ri, c, npart, nlen, "", 0);
	rr_init(&rp, c, ppart, plen, "", 0);
	rc = rr_wait(&ri);
	if (rr_wait(&rp) != 0 || rc != 0) {
		free(ri.val);
		free(rp.val);
		return -1;
	}
	if (ri.val != NULL) {
		free(ri.val);
		free(rp.val);
		return bench_fail("put", "item exists");
	}
	if (rp.val == NULL || rp.len < NODE_HDR) {
		free(rp.val);
		return bench_fail("put", "no parent row");
	}
	if (take(c, &id, 2) != 0) {
		free(rp.val);
		return -1;
	}
	row[0] = 1;
	row[1] = 1; /* item */
	put_u64(row + 2, id);
	put_u32(row + 10, 0644);
	put_u32(row + 14, c->uid);
	put_u32(row + 18, c->gid);
	put_u64(row + 22, BENCH_VALUE_LEN);
	put_u64(row + 30, (uint64_t)t);
	put_u64(row + 38, (uint64_t)t);
	put_u64(row + 46, (uint64_t)t);
	put_u64(row + 54, c->next_version++);
	put_u32(row + 62, 0);
	put_u32(row + 66, 0);
	put_u32(row + 70, 0);
	memcpy(row + NODE_HDR, bench_value(i), BENCH_VALUE_LEN);
	touch_dir((unsigned char *)rp.val, c->next_version++, t);
	count_add((unsigned char *)rp.val, rp.len, +1);
	idx[0] = 1;
	put_u64(idx + 1, id);
	b_put(&b, npart, nlen, "", 0, row, sizeof(row));
	b_newpart(&b, npart, nlen);
	id_row(&b, row + 2, npart, nlen, 0);
	b_put(&b, ppart, plen, "", 0, rp.val, rp.len);
	ppart[plen] = D0;
	ppart[plen + 1] = D1;
	b_put(&b, ppart, plen + 2, name, strlen(name), idx, sizeof(idx));
	/* The listing may be new too (keytree remembers which partitions
	 * it has seen in the catalog; the floor writes the entry again). */
	b_catalog(&b, ppart, plen + 2);
	free(rp.val);
	return b_commit(c, &b);
}

/* The value of the node row of @p path, copied out as kt_get does. */
static int read_node(rctx *c, const char *path, char **row, size_t *len)
{
	char part[4 * BENCH_PATH_MAX];
	size_t plen = enc(part, path);

	if (row_get(c, part, plen, "", 0, row, len) != 0)
		return -1;
	if (*row == NULL || *len < NODE_HDR) {
		free(*row);
		return bench_fail("get: no node row", path);
	}
	return 0;
}

static int r_get(void *ctx, long i)
{
	char path[BENCH_PATH_MAX], *row;
	size_t len = 0;
	void *val;

	bench_item_path(path, i);
	if (read_node(ctx, path, &row, &len) != 0)
		return -1;
	if (row[1] != 1 ||
	    get_u64((unsigned char *)row + 22) != BENCH_VALUE_LEN) {
		free(row);
		return bench_fail("get", "not the item");
	}
	val = malloc(len - NODE_HDR + 1);
	memcpy(val, row + NODE_HDR, len - NODE_HDR);
	free(val);
	free(row);
	return 0;
}

static int r_get_link(void *ctx, long k)
{
	char name[BENCH_PATH_MAX], path[BENCH_PATH_MAX * 2], *row;
	size_t len = 0, tlen;
	void *val;

	bench_link_name(name, k);
	snprintf(path, sizeof(path), "/l/%s", name);
	if (read_node(ctx, path, &row, &len) != 0)
		return -1;
	tlen = len - NODE_HDR;
	if (row[1] != 4 || tlen >= BENCH_PATH_MAX) {
		free(row);
		return bench_fail("get_link", "not a link");
	}
	memcpy(path, row + NODE_HDR, tlen);
	path[tlen] = '\0';
	free(row);
	if (read_node(ctx, path, &row, &len) != 0)
		return -1;
	val = malloc(len - NODE_HDR + 1);
	memcpy(val, row + NODE_HDR, len - NODE_HDR);
	free(val);
	free(row);
	return 0;
}

/* ------------------------------------------------------------ scans */

/* Page through the omap of @p oid (keys starting with @p prefix), 1024 a
 * call, calling @p fn on each; the number of keys, or -1. */
static long omap_walk(rctx *c, const char *oid, const char *prefix,
		      void (*fn)(void *arg, const char *k, size_t kl,
				 const char *v, size_t vl),
		      void *arg)
{
	char after[4 * BENCH_PATH_MAX + 8] = "";
	unsigned char more = 1;
	long n = 0;

	while (more) {
		rados_read_op_t op = rados_create_read_op();
		rados_omap_iter_t it = NULL;
		char *k, *v;
		size_t kl, vl;
		int rc, prv = 0;

		more = 0;
		rados_read_op_omap_get_vals2(op, after, prefix, PAGE, &it,
					     &more, &prv);
		rc = rados_read_op_operate(op, c->io, oid, 0);
		if (rc == 0 && prv < 0)
			rc = prv;
		while (rc == 0 && it != NULL &&
		       rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 &&
		       k != NULL) {
			fn(arg, k, kl, v, vl);
			if (kl < sizeof(after)) {
				memcpy(after, k, kl);
				after[kl] = '\0';
			}
			n++;
		}
		if (it != NULL)
			rados_omap_get_end(it);
		rados_release_read_op(op);
		if (rc == -ENOENT)
			return n;
		if (rc < 0)
			return r_fail(oid, rc);
	}
	return n;
}

typedef struct strs {
	char **v;
	size_t *len;
	long n, cap;
} strs;

static void strs_add(strs *s, const char *p, size_t n)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, sizeof(*s->v) * (size_t)s->cap);
		s->len = realloc(s->len, sizeof(*s->len) * (size_t)s->cap);
	}
	s->v[s->n] = malloc(n + 1);
	memcpy(s->v[s->n], p, n);
	s->v[s->n][n] = '\0';
	s->len[s->n++] = n;
}

static void strs_free(strs *s)
{
	for (long i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->len);
	memset(s, 0, sizeof(*s));
}

/* A catalog key: keep the partition it names. */
static void cat_row(void *arg, const char *k, size_t kl, const char *v,
		    size_t vl)
{
	char part[4 * BENCH_PATH_MAX + 8];
	size_t n;

	(void)v;
	(void)vl;
	if (kl >= sizeof(part))
		return;
	n = okey_dec(part, k, kl);
	strs_add(arg, part, n);
}

/* The partitions whose key starts with @p prefix, in byte order. */
static int catalog(rctx *c, const char *prefix, size_t plen, strs *out)
{
	char oid[300], key[4 * BENCH_PATH_MAX + 8];

	cat_oid(oid, sizeof(oid), c);
	okey(key, prefix, plen);
	return omap_walk(c, oid, key, cat_row, out) < 0 ? -1 : 0;
}

/* Every row of each partition of @p parts, read with WINDOW in flight
 * (a partition of more than 1024 rows is read on, alone); @p fn is
 * called on each row with the partition's index. */
typedef void (*row_fn)(void *arg, long part, const char *k, size_t kl,
		       const char *v, size_t vl);

typedef struct partread {
	rados_read_op_t op;
	rados_completion_t comp;
	rados_omap_iter_t it;
	unsigned char more;
	int prval, rc;
	long part;
	char oid[1200];
} partread;

typedef struct fwd {
	row_fn fn;
	void *arg;
	long part;
} fwd;

static void fwd_row(void *arg, const char *k, size_t kl, const char *v,
		    size_t vl)
{
	fwd *f = arg;

	f->fn(f->arg, f->part, k, kl, v, vl);
}

static int pr_wait(rctx *c, partread *r, const char *only, row_fn fn,
		   void *arg)
{
	char *k, *v, last[4 * BENCH_PATH_MAX + 8] = "";
	size_t kl, vl;
	int rc;

	if (r->rc == 0) {
		rados_aio_wait_for_complete(r->comp);
		r->rc = rados_aio_get_return_value(r->comp);
	}
	rados_aio_release(r->comp);
	if (r->rc == 0 && r->prval < 0)
		r->rc = r->prval;
	while (r->rc == 0 && r->it != NULL &&
	       rados_omap_get_next2(r->it, &k, &v, &kl, &vl) == 0 &&
	       k != NULL) {
		fn(arg, r->part, k, kl, v, vl);
		if (kl < sizeof(last)) {
			memcpy(last, k, kl);
			last[kl] = '\0';
		}
	}
	if (r->it != NULL)
		rados_omap_get_end(r->it);
	rados_release_read_op(r->op);
	r->op = NULL;
	rc = r->rc;
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return r_fail(r->oid, rc);
	if (r->more && only == NULL) {
		/* The rest of a big partition, page by page. */
		fwd f = {fn, arg, r->part};
		char after[sizeof(last)];
		unsigned char more = 1;

		memcpy(after, last, sizeof(after));
		while (more) {
			rados_read_op_t op = rados_create_read_op();
			rados_omap_iter_t it = NULL;
			int prv = 0;

			more = 0;
			rados_read_op_omap_get_vals2(op, after, ".", PAGE, &it,
						     &more, &prv);
			rc = rados_read_op_operate(op, c->io, r->oid, 0);
			if (rc == 0 && prv < 0)
				rc = prv;
			while (rc == 0 && it != NULL &&
			       rados_omap_get_next2(it, &k, &v, &kl, &vl) ==
				       0 &&
			       k != NULL) {
				fwd_row(&f, k, kl, v, vl);
				if (kl < sizeof(after)) {
					memcpy(after, k, kl);
					after[kl] = '\0';
				}
			}
			if (it != NULL)
				rados_omap_get_end(it);
			rados_release_read_op(op);
			if (rc < 0 && rc != -ENOENT)
				return r_fail(r->oid, rc);
		}
	}
	return 0;
}

/* Read partitions @p parts: all rows, or with @p only the one row with
 * that omap key. */
static int read_parts(rctx *c, const strs *parts, const char *only,
		      row_fn fn, void *arg)
{
	partread pr[WINDOW];
	long i;
	size_t slot = 0, nfl = 0, k;
	int rc = 0;

	memset(pr, 0, sizeof(pr));
	for (i = 0; i < parts->n; i++) {
		partread *r;

		if (nfl == WINDOW) {
			if (pr_wait(c, &pr[slot], only, fn, arg) != 0)
				rc = -1;
			nfl--;
		}
		r = &pr[slot];
		slot = (slot + 1) % WINDOW;
		nfl++;
		oid_of(r->oid, sizeof(r->oid), c, parts->v[i], parts->len[i]);
		r->part = i;
		r->it = NULL;
		r->more = 0;
		r->prval = 0;
		r->op = rados_create_read_op();
		if (only != NULL)
			rados_read_op_omap_get_vals_by_keys(r->op, &only, 1,
							    &r->it, &r->prval);
		else
			rados_read_op_omap_get_vals2(r->op, "", ".", PAGE,
						     &r->it, &r->more,
						     &r->prval);
		r->rc = rados_aio_create_completion2(NULL, NULL, &r->comp);
		if (r->rc == 0)
			r->rc = rados_aio_read_op_operate(r->op, c->io,
							  r->comp, r->oid, 0);
	}
	for (k = 0; k < WINDOW; k++)
		if (pr[k].op != NULL && pr_wait(c, &pr[k], only, fn, arg) != 0)
			rc = -1;
	return rc;
}

typedef struct counting {
	long entries;
	uint64_t idsum;
} counting;

static void find_row(void *arg, long part, const char *k, size_t kl,
		     const char *v, size_t vl)
{
	counting *n = arg;

	(void)part;
	(void)k;
	(void)kl;
	if (vl < NODE_HDR)
		return;
	n->idsum += get_u64((const unsigned char *)v + 2) + (uint8_t)v[1];
	n->entries++;
}

static int is_listing(const char *part, size_t len)
{
	return len >= 2 && part[len - 2] == D0 && part[len - 1] == D1;
}

static long r_find(void *ctx)
{
	rctx *c = ctx;
	strs parts = {0}, nodes = {0};
	counting n = {0};
	long i;
	int rc;

	if (catalog(c, "\xc2\xa6t", 3, &parts) != 0)
		return -1;
	for (i = 0; i < parts.n; i++)
		if (!is_listing(parts.v[i], parts.len[i]))
			strs_add(&nodes, parts.v[i], parts.len[i]);
	rc = read_parts(c, &nodes, ".", find_row, &n);
	strs_free(&parts);
	strs_free(&nodes);
	return rc == 0 ? n.entries : -1;
}

static void list_row(void *arg, const char *k, size_t kl, const char *v,
		     size_t vl)
{
	counting *n = arg;

	(void)k;
	(void)kl;
	if (vl != 9)
		return;
	n->idsum += get_u64((const unsigned char *)v + 1) + (uint8_t)v[0];
	n->entries++;
}

static long r_list_big(void *ctx)
{
	rctx *c = ctx;
	char oid[1200];
	counting n = {0};

	oid_of(oid, sizeof(oid), c, "\xc2\xa6" "big\xc2\xa6", 7);
	if (omap_walk(c, oid, ".", list_row, &n) < 0)
		return -1;
	return n.entries;
}

/* ------------------------------------------------------ rename, delete */

typedef struct mover {
	rctx *c;
	const strs *parts;
	batch b;
	size_t fromlen; /* bytes of the old prefix to replace */
	char to[2 * BENCH_PATH_MAX];
	size_t tolen;
	int del;	/* delete instead of moving */
	long lastnew;	/* the last partition made under the new name */
	long rows;
} mover;

/* Move (or delete) one row of the subtree; a node row's id row follows. */
static void move_row(void *arg, long part, const char *k, size_t kl,
		     const char *v, size_t vl)
{
	mover *m = arg;
	const char *p = m->parts->v[part];
	size_t plen = m->parts->len[part], nl;
	char sort[4 * BENCH_PATH_MAX], np[4 * BENCH_PATH_MAX];
	size_t sl = okey_dec(sort, k, kl);
	int node = kl == 1 && vl >= NODE_HDR;

	m->rows++;
	b_del(&m->b, p, plen, sort, sl);
	if (m->del) {
		if (node)
			id_row(&m->b, (const unsigned char *)v + 2, p, plen, 1);
		return;
	}
	memcpy(np, m->to, m->tolen);
	memcpy(np + m->tolen, p + m->fromlen, plen - m->fromlen);
	nl = m->tolen + plen - m->fromlen;
	b_put(&m->b, np, nl, sort, sl, v, vl);
	if (m->lastnew != part) {
		b_newpart(&m->b, np, nl);
		m->lastnew = part;
	}
	if (node)
		id_row(&m->b, (const unsigned char *)v + 2, np, nl, 0);
}

/* The subtree of top-level directory /@p name: its node partition and
 * every partition under it. */
static int subtree(rctx *c, const char *name, strs *parts)
{
	char pre[BENCH_PATH_MAX + 4];
	size_t nl = strlen(name);
	strs all = {0};
	long i;

	pre[0] = D0;
	pre[1] = D1;
	memcpy(pre + 2, name, nl);
	if (catalog(c, pre, nl + 2, &all) != 0)
		return -1;
	/* "¦t0" also names "¦t00…": keep "¦t0" and "¦t0¦…" only. */
	for (i = 0; i < all.n; i++)
		if (all.len[i] == nl + 2 ||
		    (all.v[i][nl + 2] == D0 && all.v[i][nl + 3] == D1))
			strs_add(parts, all.v[i], all.len[i]);
	strs_free(&all);
	return 0;
}

/* Rewrite the root's node row (touched, a new version, @p dsub more
 * subdirectories) and its index row of @p name (@p idx, or NULL to
 * delete it) into @p b. */
static int root_rows(rctx *c, batch *b, const char *name,
		     const unsigned char *idx, int dsub, int dent)
{
	char *root = NULL;
	size_t rlen = 0;

	if (row_get(c, "", 0, "", 0, &root, &rlen) != 0)
		return -1;
	if (root == NULL || rlen < NODE_HDR) {
		free(root);
		return bench_fail("root", "no node row");
	}
	if (take(c, NULL, 1) != 0) {
		free(root);
		return -1;
	}
	touch_dir((unsigned char *)root, c->next_version++, now_ns());
	put_u32((unsigned char *)root + 62,
		(uint32_t)((int)get_u32((unsigned char *)root + 62) + dsub));
	count_add((unsigned char *)root, rlen, dent);
	b_put(b, "", 0, "", 0, root, rlen);
	if (idx != NULL)
		b_put(b, "\xc2\xa6", 2, name, strlen(name), idx, 9);
	else
		b_del(b, "\xc2\xa6", 2, name, strlen(name));
	free(root);
	return 0;
}

static int r_rename(void *ctx, const char *from, const char *to)
{
	rctx *c = ctx;
	mover m;
	strs parts = {0};
	char *row = NULL;
	size_t len = 0;
	unsigned char idx[9];
	int rc = -1;

	memset(&m, 0, sizeof(m));
	m.c = c;
	m.parts = &parts;
	m.lastnew = -1;
	if (subtree(c, from + 1, &parts) != 0)
		goto out;
	/* The renamed directory's node row: the new version, its index row
	 * in the root. */
	if (read_node(c, from, &row, &len) != 0)
		goto out;
	m.fromlen = enc(m.to, from);
	m.tolen = enc(m.to, to);
	if (read_parts(c, &parts, NULL, move_row, &m) != 0)
		goto out;
	idx[0] = (unsigned char)row[1];
	memcpy(idx + 1, row + 2, 8);
	if (root_rows(c, &m.b, from + 1, NULL, 0, 0) != 0)
		goto out;
	b_put(&m.b, "\xc2\xa6", 2, to + 1, strlen(to) - 1, idx, 9);
	rc = b_commit(c, &m.b);
out:
	b_free(&m.b);
	strs_free(&parts);
	free(row);
	return rc;
}

static void name_row(void *arg, const char *k, size_t kl, const char *v,
		     size_t vl)
{
	char name[BENCH_PATH_MAX * 2];

	(void)v;
	(void)vl;
	if (kl >= sizeof(name))
		return;
	strs_add(arg, name, okey_dec(name, k, kl));
}

static int r_delete_top(rctx *c, const char *name, int isdir)
{
	mover m;
	strs parts = {0};
	int rc = -1;

	memset(&m, 0, sizeof(m));
	m.c = c;
	m.parts = &parts;
	m.del = 1;
	if (subtree(c, name, &parts) != 0 ||
	    read_parts(c, &parts, NULL, move_row, &m) != 0 ||
	    root_rows(c, &m.b, name, NULL, isdir ? -1 : 0, -1) != 0)
		goto out;
	rc = b_commit(c, &m.b);
out:
	b_free(&m.b);
	strs_free(&parts);
	return rc;
}

static long r_delete_all(void *ctx)
{
	rctx *c = ctx;
	char oid[1200];
	strs names = {0};
	long i, n, rc = 0;

	oid_of(oid, sizeof(oid), c, "\xc2\xa6", 2);
	if (omap_walk(c, oid, ".", name_row, &names) < 0)
		return -1;
	for (i = 0; i < names.n; i++)
		if (rc == 0 && r_delete_top(c, names.v[i], 1) != 0)
			rc = -1;
	n = names.n;
	strs_free(&names);
	return rc == 0 ? n : -1;
}

const bench_engine bench_rados = {
	.name = "rados",
	.open = r_open,
	.attach = r_attach,
	.reopen = r_reopen,
	.put = r_put,
	.get = r_get,
	.get_link = r_get_link,
	.find = r_find,
	.list_big = r_list_big,
	.rename = r_rename,
	.delete_all = r_delete_all,
	.close = r_close,
};
