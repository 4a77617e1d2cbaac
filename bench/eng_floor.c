/*
 * eng_floor.c - the physical floor: the benchmark's workloads done on raw
 * LevelDB, reading and writing exactly the rows keytree reads and writes
 * for them (docs/FORMAT.md), with the LevelDB options keytree uses
 * (tree/src/rows_leveldb.c), and nothing else: no path checks, no link
 * resolution beyond the one hop the data needs, no transaction object.
 *
 *   put of a new item:  get the item's node row (absent), get the parent's
 *                       node row; one batch: [alloc row when a counter
 *                       reaches its limit], the item's node row, its id
 *                       row, the rewritten parent node row, the index row
 *                       in the parent's partition.
 *   get:                one get of the node row.
 *   get through a link: get the link's node row, get its target's node row.
 *   find, list:         one range scan (prefix ¦t, partition ¦big¦).
 *   rename, delete:     the rows of FORMAT.md §11, one batch each.
 *
 * The skeleton is made through the library (bench_kt_skeleton), so the
 * floor starts from a real store, and with -c the result is verified with
 * kt_check, which proves the rows are the very ones keytree would have.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <keytree.h>
#include <leveldb/c.h>

#include "bench.h"

#define D0	    '\xc2'
#define D1	    '\xa6'
#define NODE_HDR    74
#define ALLOC_CHUNK 1024

/* The library's environment for LevelDB (tree/src/ldb_env.cc), which the
 * static library links in. */
struct leveldb_env_t *kt__ldb_pread_env(void);
void kt__ldb_skip_checks(int skip);
/* The library's CRC-32C (tree/src/crc32c.c: the CPU's instruction where
 * it has one), which a store's block checksums use. */
uint32_t kt__crc32c(uint32_t crc, const void *p, size_t n);

static int mmap_tables(void)
{
	const char *v = getenv("KEYTREE_MMAP_TABLES");

	return v != NULL && strcmp(v, "1") == 0;
}

typedef struct fctx {
	const bench_params *p;
	leveldb_t *db;
	leveldb_options_t *opts;
	struct leveldb_env_t *env;
	leveldb_cache_t *cache;
	leveldb_filterpolicy_t *filter;
	leveldb_readoptions_t *ropts;
	leveldb_readoptions_t *ropts_nv; /* a checked block: no LevelDB CRC */
	leveldb_writeoptions_t *wopts;
	uint64_t next_id, id_limit, next_version, version_limit;
	uint32_t uid, gid;
} fctx;

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

static int ldb_fail(const char *what, char *err)
{
	bench_fail(what, err);
	leveldb_free(err);
	return -1;
}

static int f_dbopen(fctx *c)
{
	char *err = NULL;

	c->db = leveldb_open(c->opts, c->p->dir, &err);
	if (err != NULL)
		return ldb_fail("leveldb_open", err);
	return 0;
}

/* Read the counters as kt_open does: each starts at its persisted limit. */
static int f_load_alloc(fctx *c)
{
	static const char key[] = "/meta\0alloc";
	char *err = NULL, *v;
	size_t len = 0;

	v = leveldb_get(c->db, c->ropts, key, sizeof(key) - 1, &len, &err);
	if (err != NULL)
		return ldb_fail("alloc row", err);
	if (v == NULL || len != 16) {
		leveldb_free(v);
		return bench_fail("alloc row", "missing or damaged");
	}
	c->id_limit = c->next_id = get_u64((unsigned char *)v);
	c->version_limit = c->next_version = get_u64((unsigned char *)v + 8);
	leveldb_free(v);
	return 0;
}

/* Take ids and versions; when one reaches its limit, the raised alloc row
 * goes first in the batch (FORMAT.md §8). */
static void f_alloc(fctx *c, leveldb_writebatch_t *wb, int ids, int versions)
{
	static const char key[] = "/meta\0alloc";
	unsigned char v[16];

	if (c->next_id + (uint64_t)ids <= c->id_limit &&
	    c->next_version + (uint64_t)versions <= c->version_limit)
		return;
	if (c->next_id + (uint64_t)ids > c->id_limit)
		c->id_limit += ALLOC_CHUNK;
	if (c->next_version + (uint64_t)versions > c->version_limit)
		c->version_limit += ALLOC_CHUNK;
	put_u64(v, c->id_limit);
	put_u64(v + 8, c->version_limit);
	leveldb_writebatch_put(wb, key, sizeof(key) - 1, (char *)v, sizeof(v));
}

static int f_check(fctx *c)
{
	kt_store *st = NULL;
	size_t bad = 0;
	int rc;

	if (kt_open(&st, c->p->dir, NULL) != 0)
		return bench_fail("kt_open", kt_errmsg());
	rc = kt_check(&bad, st, NULL);
	kt_close(st);
	if (rc != 0) {
		fprintf(stderr,
			"kt_bench_api: floor: kt_check found %zu "
			"violations\n",
			bad);
		return -1;
	}
	return 0;
}

static int f_open(void **out, const bench_params *p)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	fctx *c = calloc(1, sizeof(*c));
	int rc;

	*out = c;
	if (c == NULL)
		return bench_fail("open", "out of memory");
	c->p = p;
	o.create_if_missing = 1;
	if (kt_open(&st, p->dir, &o) != 0)
		return bench_fail("kt_open", kt_errmsg());
	rc = bench_kt_skeleton(st, p);
	kt_close(st);
	if (rc != 0)
		return rc;
	/* The options of tree/src/rows_leveldb.c, its environment (table
	 * files read with pread; KEYTREE_MMAP_TABLES=1: mapped) included. */
	c->opts = leveldb_options_create();
	leveldb_options_set_paranoid_checks(c->opts, 1);
	if (!mmap_tables() && (c->env = kt__ldb_pread_env()) != NULL)
		leveldb_options_set_env(c->opts, c->env);
	c->cache = leveldb_cache_create_lru(bench_cache_bytes());
	leveldb_options_set_cache(c->opts, c->cache);
	c->filter = leveldb_filterpolicy_create_bloom(10);
	leveldb_options_set_filter_policy(c->opts, c->filter);
	leveldb_options_set_write_buffer_size(c->opts, 16u << 20);
	c->ropts = leveldb_readoptions_create();
	/* Read through keytree's environment, every block is checked there,
	 * in hardware (ldb_env.cc); LevelDB checks only mapped tables. */
	leveldb_readoptions_set_verify_checksums(c->ropts, c->env == NULL);
	/* keytree's read of a block that carries its own CRC-32C
	 * (FORMAT.md §6): LevelDB's check off, the block cache not filled. */
	c->ropts_nv = leveldb_readoptions_create();
	leveldb_readoptions_set_verify_checksums(c->ropts_nv, 0);
	leveldb_readoptions_set_fill_cache(c->ropts_nv, 0);
	c->wopts = leveldb_writeoptions_create();
	c->uid = (uint32_t)geteuid();
	c->gid = (uint32_t)getegid();
	if (f_dbopen(c) != 0)
		return -1;
	return f_load_alloc(c);
}

static int f_reopen(void *ctx)
{
	fctx *c = ctx;

	leveldb_close(c->db);
	c->db = NULL;
	if (c->p->check && f_check(c) != 0)
		return -1;
	if (f_dbopen(c) != 0)
		return -1;
	return f_load_alloc(c);
}

/* The id row of node @p id: "/id" 00 u64be(id) -> E(path). */
static void id_row_put(leveldb_writebatch_t *wb, const unsigned char *id_le,
		       const char *part, size_t plen)
{
	char key[4 + 8];
	int i;

	memcpy(key, "/id", 4);
	for (i = 0; i < 8; i++)
		key[4 + i] = (char)id_le[7 - i];
	leveldb_writebatch_put(wb, key, sizeof(key), part, plen);
}

static void id_row_delete(leveldb_writebatch_t *wb,
			  const unsigned char *id_le)
{
	char key[4 + 8];
	int i;

	memcpy(key, "/id", 4);
	for (i = 0; i < 8; i++)
		key[4 + i] = (char)id_le[7 - i];
	leveldb_writebatch_delete(wb, key, sizeof(key));
}

static int f_write(fctx *c, leveldb_writebatch_t *wb)
{
	char *err = NULL;

	leveldb_write(c->db, c->wopts, wb, &err);
	leveldb_writebatch_destroy(wb);
	if (err != NULL)
		return ldb_fail("leveldb_write", err);
	return 0;
}

/* A directory's node row after a child came or went. */
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

static int f_put(void *ctx, long i)
{
	fctx *c = ctx;
	char path[BENCH_PATH_MAX], dir[BENCH_PATH_MAX], name[BENCH_PATH_MAX];
	char nkey[2 * BENCH_PATH_MAX], pkey[2 * BENCH_PATH_MAX];
	char ikey[2 * BENCH_PATH_MAX];
	unsigned char row[NODE_HDR + BENCH_VALUE_LEN], idx[9];
	char *err = NULL, *v, *parent;
	size_t nlen, plen, ilen, vlen = 0, namelen, plen_row = 0;
	leveldb_writebatch_t *wb;
	int64_t t = now_ns();
	uint64_t id;

	bench_item_path(path, i);
	bench_item_dir(dir, i);
	bench_item_name(name, i);
	nlen = enc(nkey, path);
	nkey[nlen++] = '\0';
	plen = enc(pkey, dir);
	memcpy(ikey, pkey, plen);
	pkey[plen++] = '\0';
	ilen = plen - 1;
	ikey[ilen++] = D0;
	ikey[ilen++] = D1;
	ikey[ilen++] = '\0';
	namelen = strlen(name);
	memcpy(ikey + ilen, name, namelen);
	ilen += namelen;

	v = leveldb_get(c->db, c->ropts, nkey, nlen, &vlen, &err);
	if (err != NULL)
		return ldb_fail("get", err);
	if (v != NULL) {
		leveldb_free(v);
		return bench_fail("put", "item exists");
	}
	parent = leveldb_get(c->db, c->ropts, pkey, plen, &plen_row, &err);
	if (err != NULL)
		return ldb_fail("get", err);
	if (parent == NULL || plen_row < NODE_HDR)
		return bench_fail("put", "no parent row");

	wb = leveldb_writebatch_create();
	f_alloc(c, wb, 1, 2);
	id = c->next_id++;
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
	touch_dir((unsigned char *)parent, c->next_version++, t);
	count_add((unsigned char *)parent, plen_row, +1);
	idx[0] = 1;
	put_u64(idx + 1, id);
	leveldb_writebatch_put(wb, nkey, nlen, (char *)row, sizeof(row));
	id_row_put(wb, row + 2, nkey, nlen - 1);
	leveldb_writebatch_put(wb, pkey, plen, parent, plen_row);
	leveldb_writebatch_put(wb, ikey, ilen, (char *)idx, sizeof(idx));
	leveldb_free(parent);
	return f_write(c, wb);
}

/* One get of a node row; copies the value out as kt_get does. */
static int f_get_row(fctx *c, const char *key, size_t klen, char **row,
		     size_t *len)
{
	char *err = NULL;

	*row = leveldb_get(c->db, c->ropts, key, klen, len, &err);
	if (err != NULL)
		return ldb_fail("get", err);
	if (*row == NULL || *len < NODE_HDR)
		return bench_fail("get", "no node row");
	return 0;
}

static int f_get(void *ctx, long i)
{
	fctx *c = ctx;
	char path[BENCH_PATH_MAX], key[2 * BENCH_PATH_MAX], *row;
	size_t klen, len = 0;
	void *val;

	bench_item_path(path, i);
	klen = enc(key, path);
	key[klen++] = '\0';
	if (f_get_row(c, key, klen, &row, &len) != 0)
		return -1;
	if (row[1] != 1 ||
	    get_u64((unsigned char *)row + 22) != BENCH_VALUE_LEN) {
		leveldb_free(row);
		return bench_fail("get", "not the item");
	}
	val = malloc(len - NODE_HDR + 1);
	memcpy(val, row + NODE_HDR, len - NODE_HDR);
	free(val);
	leveldb_free(row);
	return 0;
}

static int f_get_link(void *ctx, long k)
{
	fctx *c = ctx;
	char name[BENCH_PATH_MAX], path[BENCH_PATH_MAX * 2];
	char key[4 * BENCH_PATH_MAX], *row;
	size_t klen, len = 0, tlen;
	void *val;

	bench_link_name(name, k);
	snprintf(path, sizeof(path), "/l/%s", name);
	klen = enc(key, path);
	key[klen++] = '\0';
	if (f_get_row(c, key, klen, &row, &len) != 0)
		return -1;
	tlen = len - NODE_HDR;
	if (row[1] != 4 || tlen >= BENCH_PATH_MAX) {
		leveldb_free(row);
		return bench_fail("get_link", "not a link");
	}
	memcpy(path, row + NODE_HDR, tlen);
	path[tlen] = '\0';
	leveldb_free(row);
	klen = enc(key, path);
	key[klen++] = '\0';
	if (f_get_row(c, key, klen, &row, &len) != 0)
		return -1;
	val = malloc(len - NODE_HDR + 1);
	memcpy(val, row + NODE_HDR, len - NODE_HDR);
	free(val);
	leveldb_free(row);
	return 0;
}

/* Iterate over [lo, hi) calling @p fn on each row; returns rows seen. */
static long
scan(fctx *c, const char *lo, size_t lolen, const char *hi, size_t hilen,
     void (*fn)(void *arg, const char *k, size_t kl, const char *v, size_t vl),
     void *arg)
{
	leveldb_iterator_t *it = leveldb_create_iterator(c->db, c->ropts);
	char *err = NULL;
	long n = 0;

	for (leveldb_iter_seek(it, lo, lolen); leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl);
		const char *v = leveldb_iter_value(it, &vl);
		size_t m = kl < hilen ? kl : hilen;
		int cmp = memcmp(k, hi, m);

		if (cmp > 0 || (cmp == 0 && kl >= hilen))
			break;
		fn(arg, k, kl, v, vl);
		n++;
	}
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	if (err != NULL)
		return ldb_fail("scan", err);
	return n;
}

typedef struct listing {
	long entries;
	uint64_t idsum;
	char path[4 * BENCH_PATH_MAX];
} listing;

/* find: report node rows (empty sort key) with their path, kind and id. */
static void find_row(void *arg, const char *k, size_t kl, const char *v,
		     size_t vl)
{
	listing *l = arg;
	size_t i, n = 0;

	if (kl == 0 || k[kl - 1] != '\0' || vl < NODE_HDR)
		return; /* an index row */
	for (i = 0; i + 1 < kl && n + 1 < sizeof(l->path); i++) {
		if (k[i] == D0 && i + 2 < kl && k[i + 1] == D1) {
			l->path[n++] = '/';
			i++;
		} else {
			l->path[n++] = k[i];
		}
	}
	l->path[n] = '\0';
	l->idsum += get_u64((const unsigned char *)v + 2) + (uint8_t)v[1];
	l->entries++;
}

static long f_find(void *ctx)
{
	static const char lo[] = "\xc2\xa6t", hi[] = "\xc2\xa6u";
	listing l = {0};

	if (scan(ctx, lo, 3, hi, 3, find_row, &l) < 0)
		return -1;
	return l.entries;
}

/* list: each index row gives a name, a kind and an id. */
static void list_row(void *arg, const char *k, size_t kl, const char *v,
		     size_t vl)
{
	listing *l = arg;
	const char *nul = memchr(k, '\0', kl);
	size_t nl = kl - (size_t)(nul - k) - 1;

	if (vl != 9 || nl >= sizeof(l->path))
		return;
	memcpy(l->path, nul + 1, nl);
	l->path[nl] = '\0';
	l->idsum += get_u64((const unsigned char *)v + 1) + (uint8_t)v[0];
	l->entries++;
}

static long f_list_big(void *ctx)
{
	static const char lo[] = "\xc2\xa6"
				 "big\xc2\xa6",
			  hi[] = "\xc2\xa6"
				 "big\xc2\xa6\x01";
	listing l = {0};

	if (scan(ctx, lo, sizeof(lo), hi, sizeof(hi) - 1, list_row, &l) < 0)
		return -1;
	return l.entries;
}

typedef struct mover {
	leveldb_writebatch_t *wb;
	size_t fromlen;
	char to[2 * BENCH_PATH_MAX];
	size_t tolen;
	char key[8 * BENCH_PATH_MAX];
	long rows;
} mover;

/* rename: copy a row of the subtree under the new prefix, drop the old. */
static void move_row(void *arg, const char *k, size_t kl, const char *v,
		     size_t vl)
{
	mover *m = arg;
	size_t rest = kl - m->fromlen;

	memcpy(m->key, m->to, m->tolen);
	memcpy(m->key + m->tolen, k + m->fromlen, rest);
	leveldb_writebatch_put(m->wb, m->key, m->tolen + rest, v, vl);
	/* A node row (empty sort key): its id row follows it. */
	if (k[kl - 1] == '\0' && vl >= NODE_HDR)
		id_row_put(m->wb, (const unsigned char *)v + 2, m->key,
			   m->tolen + rest - 1);
	leveldb_writebatch_delete(m->wb, k, kl);
	m->rows++;
}

static void delete_row(void *arg, const char *k, size_t kl, const char *v,
		       size_t vl)
{
	mover *m = arg;

	if (k[kl - 1] == '\0' && vl >= NODE_HDR)
		id_row_delete(m->wb, (const unsigned char *)v + 2);
	leveldb_writebatch_delete(m->wb, k, kl);
	m->rows++;
}

/* Rename a top-level directory: FORMAT.md §11, one batch. */
static int f_rename(void *ctx, const char *from, const char *to)
{
	fctx *c = ctx;
	mover m = {0};
	char lo[2 * BENCH_PATH_MAX], hi[2 * BENCH_PATH_MAX];
	char fkey[2 * BENCH_PATH_MAX], tkey[2 * BENCH_PATH_MAX];
	char ifrom[BENCH_PATH_MAX], ito[BENCH_PATH_MAX];
	char *row = NULL, *root = NULL, *err = NULL, *v;
	size_t flen, tlen, len = 0, rlen = 0, vlen = 0;
	int64_t t = now_ns();

	flen = enc(fkey, from);
	tlen = enc(tkey, to);
	/* The subtree: every partition under E(from) D. */
	memcpy(lo, fkey, flen);
	lo[flen] = D0;
	lo[flen + 1] = D1;
	memcpy(hi, lo, flen + 2);
	hi[flen + 1] = (char)(D1 + 1);
	memcpy(m.to, tkey, tlen);
	m.to[tlen] = D0;
	m.to[tlen + 1] = D1;
	m.tolen = tlen + 2;
	m.fromlen = flen + 2;
	fkey[flen++] = '\0';
	tkey[tlen++] = '\0';
	if (f_get_row(c, fkey, flen, &row, &len) != 0)
		return -1;
	v = leveldb_get(c->db, c->ropts, tkey, tlen, &vlen, &err);
	if (err != NULL || v != NULL) {
		leveldb_free(row);
		leveldb_free(v);
		return err ? ldb_fail("get", err)
			   : bench_fail("rename", "target exists");
	}
	if (f_get_row(c, "", 1, &root, &rlen) != 0) {
		leveldb_free(row);
		return -1;
	}
	m.wb = leveldb_writebatch_create();
	f_alloc(c, m.wb, 0, 2);
	if (scan(c, lo, flen + 1, hi, flen + 1, move_row, &m) < 0) {
		leveldb_writebatch_destroy(m.wb);
		leveldb_free(row);
		leveldb_free(root);
		return -1;
	}
	put_u64((unsigned char *)row + 46, (uint64_t)t);
	put_u64((unsigned char *)row + 54, c->next_version++);
	leveldb_writebatch_put(m.wb, tkey, tlen, row, len);
	id_row_put(m.wb, (const unsigned char *)row + 2, tkey, tlen - 1);
	ifrom[0] = ito[0] = D0;
	ifrom[1] = ito[1] = D1;
	ifrom[2] = ito[2] = '\0';
	/* Both are top-level: their index rows are in the root's
	 * partition, D 00 name. */
	memcpy(ito + 3, to + 1, strlen(to) - 1);
	memcpy(ifrom + 3, from + 1, strlen(from) - 1);
	{
		unsigned char idx[9];

		idx[0] = (unsigned char)row[1];
		memcpy(idx + 1, row + 2, 8);
		leveldb_writebatch_put(m.wb, ito, strlen(to) + 2, (char *)idx,
				       sizeof(idx));
	}
	leveldb_writebatch_delete(m.wb, ifrom, strlen(from) + 2);
	leveldb_writebatch_delete(m.wb, fkey, flen);
	touch_dir((unsigned char *)root, c->next_version++, t);
	leveldb_writebatch_put(m.wb, "", 1, root, rlen);
	leveldb_free(row);
	leveldb_free(root);
	return f_write(c, m.wb);
}

typedef struct names {
	char **v;
	long n, cap;
} names;

static void name_row(void *arg, const char *k, size_t kl, const char *v,
		     size_t vl)
{
	names *ns = arg;
	size_t nl = kl - 3;

	(void)v;
	(void)vl;
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? ns->cap * 2 : 64;
		ns->v = realloc(ns->v, sizeof(*ns->v) * (size_t)ns->cap);
	}
	ns->v[ns->n] = malloc(nl + 1);
	memcpy(ns->v[ns->n], k + 3, nl);
	ns->v[ns->n][nl] = '\0';
	ns->n++;
}

/* Delete one top-level directory with its subtree: FORMAT.md §11. */
static int f_delete_top(fctx *c, const char *name)
{
	char lo[BENCH_PATH_MAX + 4], hi[BENCH_PATH_MAX + 4];
	char ikey[BENCH_PATH_MAX + 4], nkey[BENCH_PATH_MAX + 4], *root;
	size_t nl = strlen(name), rlen = 0;
	mover m = {0};
	int64_t t = now_ns();

	if (f_get_row(c, "", 1, &root, &rlen) != 0)
		return -1;
	m.wb = leveldb_writebatch_create();
	f_alloc(c, m.wb, 0, 1);
	ikey[0] = lo[0] = nkey[0] = D0;
	ikey[1] = lo[1] = nkey[1] = D1;
	ikey[2] = '\0';
	memcpy(ikey + 3, name, nl);
	leveldb_writebatch_delete(m.wb, ikey, nl + 3);
	memcpy(lo + 2, name, nl);
	lo[nl + 2] = D0;
	lo[nl + 3] = D1;
	memcpy(hi, lo, nl + 4);
	hi[nl + 3] = (char)(D1 + 1);
	if (scan(c, lo, nl + 4, hi, nl + 4, delete_row, &m) < 0) {
		leveldb_writebatch_destroy(m.wb);
		leveldb_free(root);
		return -1;
	}
	memcpy(nkey + 2, name, nl);
	nkey[nl + 2] = '\0';
	{
		char *top = NULL;
		size_t toplen = 0;
		if (f_get_row(c, nkey, nl + 3, &top, &toplen) != 0) {
			leveldb_writebatch_destroy(m.wb);
			leveldb_free(root);
			return -1;
		}
		id_row_delete(m.wb, (const unsigned char *)top + 2);
		leveldb_free(top);
	}
	leveldb_writebatch_delete(m.wb, nkey, nl + 3);
	touch_dir((unsigned char *)root, c->next_version++, t);
	put_u32((unsigned char *)root + 62,
		get_u32((unsigned char *)root + 62) - 1);
	count_add((unsigned char *)root, rlen, -1);
	leveldb_writebatch_put(m.wb, "", 1, root, rlen);
	leveldb_free(root);
	return f_write(c, m.wb);
}

static long f_delete_all(void *ctx)
{
	fctx *c = ctx;
	static const char lo[] = "\xc2\xa6\0", hi[] = "\xc2\xa6\x01";
	names ns = {0};
	long i, rc = 0;

	if (scan(c, lo, 3, hi, 3, name_row, &ns) < 0)
		return -1;
	for (i = 0; i < ns.n; i++) {
		if (rc == 0 && f_delete_top(c, ns.v[i]) != 0)
			rc = -1;
		free(ns.v[i]);
	}
	free(ns.v);
	return rc == 0 ? ns.n : -1;
}

static void f_close(void *ctx)
{
	fctx *c = ctx;

	if (c == NULL)
		return;
	if (c->db != NULL)
		leveldb_close(c->db);
	if (c->opts != NULL) {
		leveldb_options_destroy(c->opts);
		if (c->env != NULL)
			leveldb_env_destroy(c->env);
		leveldb_cache_destroy(c->cache);
		leveldb_filterpolicy_destroy(c->filter);
		leveldb_readoptions_destroy(c->ropts);
		leveldb_readoptions_destroy(c->ropts_nv);
		leveldb_writeoptions_destroy(c->wopts);
	}
	free(c);
}

/* The value is made through the library, as the skeleton is. */
static int f_rw_make(void *ctx, const char *path, uint64_t size,
		     const unsigned char *data, size_t dlen)
{
	fctx *c = ctx;
	kt_store *st = NULL;
	int rc;

	leveldb_close(c->db);
	c->db = NULL;
	if (kt_open(&st, c->p->dir, NULL) != 0)
		return bench_fail("kt_open", kt_errmsg());
	rc = bench_kt_fill(st, path, size, data, dlen);
	kt_close(st);
	if (rc != 0 || f_dbopen(c) != 0)
		return -1;
	return f_load_alloc(c);
}

#define BLOCK 16384

/* The CRC-32C that ends block row @p b (FORMAT.md §6). */
static uint32_t blk_crc(uint64_t b, const void *p, size_t len)
{
	unsigned char be[8];
	int i;

	for (i = 0; i < 8; i++)
		be[i] = (unsigned char)(b >> (56 - 8 * i));
	return kt__crc32c(kt__crc32c(0, be, 8), p, len);
}

/* A 4 KiB write inside a dense value, as kt_write makes it: get the node
 * row, get the block (its own CRC checked instead of LevelDB's), patch
 * it, and one batch: [alloc row], the block with its new CRC, the node
 * row with new times and version. */
static int f_rw_write(void *ctx, const char *path, const void *buf,
		      uint64_t off)
{
	fctx *c = ctx;
	char key[2 * BENCH_PATH_MAX], bkey[32], *row, *blk, *err = NULL;
	size_t klen, len = 0, blen = 0, n;
	uint64_t id, b = off / BLOCK, version;
	leveldb_writebatch_t *wb;
	int64_t t = now_ns();
	int i;

	klen = enc(key, path);
	key[klen++] = '\0';
	if (f_get_row(c, key, klen, &row, &len) != 0)
		return -1;
	id = get_u64((unsigned char *)row + 2);
	snprintf(bkey, sizeof(bkey), "/blk/%016llx", (unsigned long long)id);
	bkey[21] = '\0';
	for (i = 0; i < 8; i++)
		bkey[22 + i] = (char)(b >> (56 - 8 * i));
	/* As keytree reads a block it checks itself: the environment's
	 * check off as well as LevelDB's. */
	if (c->env != NULL)
		kt__ldb_skip_checks(1);
	blk = leveldb_get(c->db, c->ropts_nv, bkey, 30, &blen, &err);
	if (c->env != NULL)
		kt__ldb_skip_checks(0);
	if (err != NULL) {
		leveldb_free(row);
		return ldb_fail("get", err);
	}
	n = blen - 4;
	if (blk == NULL || blen < 4 || off % BLOCK + 4096 > n ||
	    blk_crc(b, blk, n) != get_u32((unsigned char *)blk + n)) {
		leveldb_free(row);
		leveldb_free(blk);
		return bench_fail("rwrite", "no such block, or damaged");
	}
	memcpy(blk + off % BLOCK, buf, 4096);
	put_u32((unsigned char *)blk + n, blk_crc(b, blk, n));
	wb = leveldb_writebatch_create();
	f_alloc(c, wb, 0, 1);
	version = c->next_version++;
	put_u64((unsigned char *)row + 38, (uint64_t)t);
	put_u64((unsigned char *)row + 46, (uint64_t)t);
	put_u64((unsigned char *)row + 54, version);
	leveldb_writebatch_put(wb, bkey, 30, blk, blen);
	leveldb_writebatch_put(wb, key, klen, row, len);
	leveldb_free(blk);
	leveldb_free(row);
	return f_write(c, wb);
}

const bench_engine bench_floor = {
	.name = "floor",
	.open = f_open,
	.reopen = f_reopen,
	.put = f_put,
	.get = f_get,
	.get_link = f_get_link,
	.find = f_find,
	.list_big = f_list_big,
	.rename = f_rename,
	.delete_all = f_delete_all,
	.close = f_close,
	.rw_make = f_rw_make,
	.rw_write = f_rw_write,
};
