/*
 * api.c - kt_bench_api, the API benchmark: one run of every API workload
 * on one engine (keytree, the raw-LevelDB floor, SQLite or the plain
 * filesystem), printing one tab-separated line per measurement for
 * bench/run to aggregate:
 *
 *   api  WORKLOAD  LABEL  N  OPS  SECONDS
 *   disk LABEL  N  BYTES  ITEMS
 *
 * A run is one repetition on a fresh directory; bench/run repeats it and
 * takes medians.  Operations come in a seeded pseudo-random order that is
 * the same for every engine.  Nothing here asserts a timing.
 *
 * Example: kt_bench_api -e keytree -d /tmp/x -n 10000 -b 10000
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* xorshift64*: fast, seeded, identical on every engine. */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void bench_item_dir(char *buf, long i)
{
	snprintf(buf, BENCH_PATH_MAX, "/t%ld/u%ld/v%ld", i / 10000,
		 (i / 100) % 100, (i / 10) % 10);
}

void bench_item_name(char *buf, long i)
{
	snprintf(buf, BENCH_PATH_MAX, "i%ld", i % 10);
}

void bench_item_path(char *buf, long i)
{
	snprintf(buf, BENCH_PATH_MAX, "/t%ld/u%ld/v%ld/i%ld", i / 10000,
		 (i / 100) % 100, (i / 10) % 10, i % 10);
}

void bench_big_name(char *buf, long j)
{
	snprintf(buf, BENCH_PATH_MAX, "b%07ld", j);
}

void bench_link_name(char *buf, long k)
{
	snprintf(buf, BENCH_PATH_MAX, "l%06ld", k);
}

/* Links point at items spread over the whole set. */
long bench_link_target(const bench_params *p, long k)
{
	return (long)(((uint64_t)k * 7919u + 13u) % (uint64_t)p->n);
}

long bench_top_dirs(const bench_params *p)
{
	return (p->n + 9999) / 10000;
}

/* 100 bytes that differ per item, so compression sees real data. */
const unsigned char *bench_value(long i)
{
	static unsigned char v[BENCH_VALUE_LEN];
	uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
	size_t k;

	for (k = 0; k < sizeof(v); k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v[k] = (unsigned char)x;
	}
	return v;
}

int bench_fail(const char *what, const char *detail)
{
	fprintf(stderr, "kt_bench_api: %s: %s\n", what, detail ? detail : "");
	return -1;
}

static uint64_t disk_total;

static int disk_add(const char *path, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	disk_total += (uint64_t)sb->st_blocks * 512u;
	return 0;
}

/* Bytes allocated on disk under @p dir (what du reports). */
uint64_t bench_disk_bytes(const char *dir)
{
	disk_total = 0;
	if (nftw(dir, disk_add, 64, FTW_PHYS) != 0)
		return 0;
	return disk_total;
}

typedef struct run {
	const bench_engine *e;
	void *ctx;
	const char *label;
	const bench_params *p;
	double min_time;
	long gets;
} run;

static void report(const run *r, const char *wl, double ops, double secs)
{
	printf("api\t%s\t%s\t%ld\t%.0f\t%.6f\n", wl, r->label, r->p->n, ops,
	       secs);
	fflush(stdout);
}

static int do_insert(run *r)
{
	long n = r->p->n, i, *perm = malloc(sizeof(long) * (size_t)n);
	double t0;

	if (perm == NULL)
		return bench_fail("insert", "out of memory");
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {
		long j = (long)(rnd() % (uint64_t)(i + 1)), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	t0 = now();
	for (i = 0; i < n; i++)
		if (r->e->put(r->ctx, perm[i]) != 0) {
			free(perm);
			return -1;
		}
	report(r, "insert", (double)n, now() - t0);
	free(perm);
	return 0;
}

/* Random point reads (items, or links when @p links), at least r->gets of
 * them and for at least the minimum time. */
static int do_gets(run *r, int links)
{
	long span = links ? r->p->nlinks : r->p->n, done = 0, k;
	double t0 = now(), t = t0;

	while (done < r->gets || t - t0 < r->min_time) {
		for (k = 0; k < 1000; k++) {
			long x = (long)(rnd() % (uint64_t)span);
			int rc = links ? r->e->get_link(r->ctx, x)
				       : r->e->get(r->ctx, x);
			if (rc != 0)
				return -1;
		}
		done += 1000;
		t = now();
	}
	report(r, links ? "get_link" : "get", (double)done, t - t0);
	return 0;
}

/* Repeat a listing for at least the minimum time; ops are entries. */
static int do_list(run *r, int big)
{
	double t0 = now(), t = t0, total = 0;
	long expect = big ? r->p->nbig : -1, got;

	do {
		got = big ? r->e->list_big(r->ctx) : r->e->find(r->ctx);
		if (got < 0)
			return -1;
		if (expect >= 0 && got != expect) {
			fprintf(stderr,
				"kt_bench_api: %s listed %ld of %ld "
				"entries in /big\n",
				r->label, got, expect);
			return -1;
		}
		total += (double)got;
		t = now();
	} while (t - t0 < r->min_time);
	report(r, big ? "list_dir" : "find", total, t - t0);
	return 0;
}

/* Move /t0 (10^4 items, fewer when n is smaller) away and back. */
static int do_rename(run *r)
{
	double t0 = now(), t = t0;
	long done = 0;

	do {
		if (r->e->rename(r->ctx, "/t0", "/r0") != 0 ||
		    r->e->rename(r->ctx, "/r0", "/t0") != 0)
			return -1;
		done += 2;
		t = now();
	} while (t - t0 < r->min_time);
	report(r, "rename", (double)done, t - t0);
	return 0;
}

static int do_delete(run *r)
{
	double t0 = now();
	long got = r->e->delete_all(r->ctx);

	if (got < 0)
		return -1;
	report(r, "delete", (double)(r->p->n + r->p->nbig + r->p->nlinks),
	       now() - t0);
	return 0;
}

static const bench_engine *engine_named(const char *name)
{
	static const bench_engine *const all[] = {&bench_keytree, &bench_floor,
						  &bench_sqlite, &bench_fs};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(all[i]->name, name) == 0)
			return all[i];
	return NULL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kt_bench_api -e keytree|floor|sqlite|fs -d DIR -n N "
		"[-b NBIG] [-k NLINKS]\n"
		"                    [-g GETS] [-m MIN_SECONDS] [-l LABEL] "
		"[-s SEED] [-c]\n");
}

int main(int argc, char **argv)
{
	bench_params p = {0};
	run r = {0};
	const char *ename = NULL;
	int opt, rc = 1;

	p.nbig = 10000;
	p.nlinks = -1;
	r.min_time = 0.3;
	r.gets = 100000;
	while ((opt = getopt(argc, argv, "e:d:n:b:k:g:m:l:s:c")) != -1) {
		switch (opt) {
		case 'e':
			ename = optarg;
			break;
		case 'd':
			p.dir = optarg;
			break;
		case 'n':
			p.n = atol(optarg);
			break;
		case 'b':
			p.nbig = atol(optarg);
			break;
		case 'k':
			p.nlinks = atol(optarg);
			break;
		case 'g':
			r.gets = atol(optarg);
			break;
		case 'm':
			r.min_time = atof(optarg);
			break;
		case 'l':
			r.label = optarg;
			break;
		case 's':
			rng_state ^= strtoull(optarg, NULL, 0);
			break;
		case 'c':
			p.check = 1;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (ename == NULL || p.dir == NULL || p.n <= 0 || p.nbig <= 0 ||
	    (r.e = engine_named(ename)) == NULL) {
		usage();
		return 2;
	}
	if (p.nlinks < 0)
		p.nlinks = p.n < 10000 ? p.n : 10000;
	if (r.label == NULL)
		r.label = ename;
	r.p = &p;
	if (mkdir(p.dir, 0755) != 0 && errno != EEXIST) {
		perror(p.dir);
		return 1;
	}
	if (r.e->open(&r.ctx, &p) != 0)
		return 1;
	if (do_insert(&r) != 0 || r.e->reopen(r.ctx) != 0)
		goto out;
	printf("disk\t%s\t%ld\t%llu\t%ld\n", r.label, p.n,
	       (unsigned long long)bench_disk_bytes(p.dir),
	       p.n + p.nbig + p.nlinks);
	if (do_gets(&r, 0) != 0 || do_gets(&r, 1) != 0 || do_list(&r, 0) != 0 ||
	    do_list(&r, 1) != 0 || do_rename(&r) != 0 || do_delete(&r) != 0 ||
	    r.e->reopen(r.ctx) != 0)
		goto out;
	rc = 0;
out:
	r.e->close(r.ctx);
	return rc;
}
