/*
 * eng_keytree.c - the benchmark's workloads through libkeytree's public
 * API, with the store's default options, as an application would use it.
 *
 * The skeleton (every leaf directory, /big and /l) is made here through
 * the library in batches; the floor (eng_floor.c) makes its skeleton with
 * this same function, so both start from identical rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <keytree.h>

#include "bench.h"

typedef struct kctx {
	kt_store *st;
	const bench_params *p;
} kctx;

static int kt_fail(const char *what)
{
	return bench_fail(what, kt_errmsg());
}

/* Commit @p b when it holds @p *n operations or more (or @p force), then
 * start a new one. */
static int flush(kt_batch **b, kt_store *st, long *n, long limit, int force)
{
	int rc;

	if (*n < limit && !(force && *n > 0))
		return 0;
	rc = kt_batch_commit(*b);
	kt_batch_free(*b);
	*b = NULL;
	*n = 0;
	if (rc != 0)
		return kt_fail("skeleton commit");
	if (kt_batch_new(b, st) != 0)
		return kt_fail("batch");
	return 0;
}

int bench_kt_skeleton(kt_store *st, const bench_params *p)
{
	kt_create_options mk = KT_CREATE_OPTIONS_INIT;
	kt_batch *b = NULL;
	char path[BENCH_PATH_MAX * 2], name[BENCH_PATH_MAX];
	long i, n = 0;

	mk.flags = KT_CREATE_PARENTS;
	if (kt_batch_new(&b, st) != 0)
		return kt_fail("batch");
	for (i = 0; i < p->n; i += 10) {
		if (p->per_top > 0 && i % 10000 >= p->per_top)
			continue;
		bench_item_dir(path, i);
		if (kt_batch_mkdir(b, path, &mk) != 0)
			goto fail;
		n++;
		if (flush(&b, st, &n, 1000, 0) != 0)
			return -1;
	}
	if (kt_batch_mkdir(b, "/l", &mk) != 0 ||
	    kt_batch_mkdir(b, "/big", &mk) != 0)
		goto fail;
	for (i = 0; i < p->nlinks; i++) {
		char target[BENCH_PATH_MAX];

		bench_link_name(name, i);
		snprintf(path, sizeof(path), "/l/%s", name);
		bench_item_path(target, bench_link_target(p, i));
		if (kt_batch_symlink(b, path, target, NULL) != 0)
			goto fail;
		n++;
		if (flush(&b, st, &n, 1000, 0) != 0)
			return -1;
	}
	for (i = 0; i < p->nbig; i++) {
		bench_big_name(name, i);
		snprintf(path, sizeof(path), "/big/%s", name);
		if (kt_batch_put(b, path, bench_value(i), BENCH_VALUE_LEN,
				 NULL) != 0)
			goto fail;
		n++;
		if (flush(&b, st, &n, 1000, 0) != 0)
			return -1;
	}
	if (flush(&b, st, &n, 1000, 1) != 0)
		return -1;
	kt_batch_free(b);
	return 0;
fail:
	kt_batch_free(b);
	return kt_fail("skeleton");
}

static int k_open(void **out, const bench_params *p)
{
	kt_options o = KT_OPTIONS_INIT;
	kctx *c = calloc(1, sizeof(*c));

	*out = c;
	if (c == NULL)
		return bench_fail("open", "out of memory");
	c->p = p;
	o.create_if_missing = 1;
	o.cache_size = bench_cache_bytes();
	if (kt_open(&c->st, p->dir, &o) != 0)
		return kt_fail("kt_open");
	return bench_kt_skeleton(c->st, p);
}

static int k_attach(void **out, const bench_params *p)
{
	kt_options o = KT_OPTIONS_INIT;
	kctx *c = calloc(1, sizeof(*c));

	*out = c;
	if (c == NULL)
		return bench_fail("open", "out of memory");
	o.cache_size = bench_cache_bytes();
	c->p = p;
	if (kt_open(&c->st, p->dir, &o) != 0)
		return kt_fail("kt_open");
	return 0;
}

static int k_reopen(void *ctx)
{
	kctx *c = ctx;

	kt_options o = KT_OPTIONS_INIT;

	o.cache_size = bench_cache_bytes();
	kt_close(c->st);
	c->st = NULL;
	if (kt_open(&c->st, c->p->dir, &o) != 0)
		return kt_fail("kt_open");
	return 0;
}

static int k_put(void *ctx, long i)
{
	kctx *c = ctx;
	char path[BENCH_PATH_MAX];

	bench_item_path(path, i);
	if (kt_put(c->st, path, bench_value(i), BENCH_VALUE_LEN, NULL) != 0)
		return kt_fail("kt_put");
	return 0;
}

static int k_read(kctx *c, const char *path)
{
	void *v = NULL;
	size_t len = 0;

	if (kt_get(&v, &len, c->st, path) != 0)
		return kt_fail("kt_get");
	kt_free(v);
	if (len != BENCH_VALUE_LEN)
		return bench_fail("kt_get", "wrong length");
	return 0;
}

static int k_get(void *ctx, long i)
{
	char path[BENCH_PATH_MAX];

	bench_item_path(path, i);
	return k_read(ctx, path);
}

static int k_get_link(void *ctx, long k)
{
	char path[BENCH_PATH_MAX * 2], name[BENCH_PATH_MAX];

	bench_link_name(name, k);
	snprintf(path, sizeof(path), "/l/%s", name);
	return k_read(ctx, path);
}

static long drain(kt_iter *it)
{
	const kt_entry *e;
	long n = 0;
	int rc;

	while ((rc = kt_iter_next(&e, it)) == 0)
		n++;
	kt_iter_free(it);
	if (rc != KT_ITEROVER)
		return kt_fail("kt_iter_next");
	return n;
}

static long k_find(void *ctx)
{
	kctx *c = ctx;
	kt_iter *it = NULL;

	if (kt_find_new(&it, c->st, "/t", 0) != 0)
		return kt_fail("kt_find_new");
	return drain(it);
}

static long k_list_big(void *ctx)
{
	kctx *c = ctx;
	kt_iter *it = NULL;

	if (kt_iter_new(&it, c->st, "/big", NULL) != 0)
		return kt_fail("kt_iter_new");
	return drain(it);
}

static int k_rename(void *ctx, const char *from, const char *to)
{
	kctx *c = ctx;

	if (kt_rename(c->st, from, to, 0) != 0)
		return kt_fail("kt_rename");
	return 0;
}

static long k_delete_all(void *ctx)
{
	kctx *c = ctx;
	kt_iter *it = NULL;
	const kt_entry *e;
	char **names = NULL;
	long n = 0, cap = 0, i;
	int rc;

	if (kt_iter_new(&it, c->st, "/", NULL) != 0)
		return kt_fail("kt_iter_new");
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, sizeof(*names) * (size_t)cap);
		}
		names[n] = malloc(e->name_len + 2);
		names[n][0] = '/';
		memcpy(names[n] + 1, e->name, e->name_len + 1);
		n++;
	}
	kt_iter_free(it);
	for (i = 0; i < n; i++) {
		if (rc == KT_ITEROVER &&
		    kt_delete(c->st, names[i], KT_DELETE_RECURSIVE) != 0)
			rc = kt_fail("kt_delete");
		free(names[i]);
	}
	free(names);
	return rc == KT_ITEROVER ? n : -1;
}

static int k_put_path(void *ctx, const char *path, long i)
{
	kctx *c = ctx;

	if (kt_put(c->st, path, bench_value(i), BENCH_VALUE_LEN, NULL) != 0)
		return kt_fail("kt_put");
	return 0;
}

static int k_link(void *ctx, const char *existing, const char *newpath)
{
	kctx *c = ctx;

	if (kt_link(c->st, existing, newpath) != 0)
		return kt_fail("kt_link");
	return 0;
}

static int k_get_path(void *ctx, const char *path)
{
	return k_read(ctx, path);
}

static int k_violation(const char *what, void *payload)
{
	(void)payload;
	fprintf(stderr, "kt_bench_api: keytree: kt_check: %s\n", what);
	return 0;
}

/* kt_check of the whole store: with aliases, it verifies that every path
 * of a node holds the same node row and that the counts agree. */
static int k_check(void *ctx)
{
	kctx *c = ctx;
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	size_t bad = 0;

	o.on_violation = k_violation;
	if (kt_check(&bad, c->st, &o) == 0)
		return 0;
	if (bad == 0)
		return kt_fail("kt_check");
	fprintf(stderr, "kt_bench_api: keytree: kt_check found %zu "
		"violations\n", bad);
	return -1;
}

static void k_close(void *ctx)
{
	kctx *c = ctx;

	if (c == NULL)
		return;
	kt_close(c->st);
	free(c);
}

int bench_kt_fill(struct kt_store *st, const char *path, uint64_t size,
		  const unsigned char *data, size_t dlen)
{
	uint64_t done;

	if (kt_put(st, path, "", 0, NULL) != 0)
		return kt_fail("kt_put");
	for (done = 0; done < size; done += dlen) {
		size_t n = size - done < dlen ? (size_t)(size - done) : dlen;
		if (kt_write(st, path, data, n, done) != 0)
			return kt_fail("kt_write");
	}
	return 0;
}

static int k_rw_make(void *ctx, const char *path, uint64_t size,
		     const unsigned char *data, size_t dlen)
{
	kctx *c = ctx;

	if (bench_kt_fill(c->st, path, size, data, dlen) != 0)
		return -1;
	return k_reopen(c);
}

static int k_rw_write(void *ctx, const char *path, const void *buf,
		      uint64_t off)
{
	kctx *c = ctx;

	if (kt_write(c->st, path, buf, 4096, off) != 0)
		return kt_fail("kt_write");
	return 0;
}

const bench_engine bench_keytree = {
	.name = "keytree",
	.open = k_open,
	.attach = k_attach,
	.reopen = k_reopen,
	.put = k_put,
	.get = k_get,
	.get_link = k_get_link,
	.find = k_find,
	.list_big = k_list_big,
	.rename = k_rename,
	.delete_all = k_delete_all,
	.close = k_close,
	.put_path = k_put_path,
	.link = k_link,
	.get_path = k_get_path,
	.check = k_check,
	.rw_make = k_rw_make,
	.rw_write = k_rw_write,
};
