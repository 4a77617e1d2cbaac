/*
 * api.c - kt_bench_api, the API benchmark: one run of every API workload
 * on one engine (keytree, the raw-LevelDB floor, SQLite or the plain
 * filesystem), printing one tab-separated line per measurement for
 * bench/run to aggregate:
 *
 *   api  WORKLOAD  LABEL  N  OPS  SECONDS
 *   disk LABEL  N  BYTES  ITEMS
 *
 * With -w pair -E ENGINE2 -L LABEL2 it measures one engine against
 * another in the same process, on two stores of N items each (the second
 * at DIR-ENGINE2): the inserts and random gets in alternating blocks of
 * 1000 of the same items, finds and renames of /t0 (away and back) in
 * alternating turns, and the recursive deletes one right after the other
 * (which engine goes first alternating; repeated on both stores made
 * anew and filled again until each has deleted for -m seconds), each
 * timed apart:
 *
 *   api  insert_pair|get_pair|find_pair|rename_pair|delete_pair  LABEL
 *        N  OPS  SECONDS                                  (and LABEL2)
 *   apicpu  get_pair  LABEL  N  OPS  CPU_SECONDS   (and LABEL2)
 *
 * so that both see the same load on a shared machine and cluster (the
 * plain workloads run each engine in a process of its own, minutes
 * apart).
 *
 * With -w alias it runs the alias workloads instead (engines with aliases
 * only: keytree), on a store of their own holding the same data set:
 *
 *   link: give each of the N items a further path /sA/uB/vC/iD (the same
 *     length and depth as its first, /tA/uB/vC/iD), in a random order;
 *   get_primary, get_alias: random gets of the same items in the same
 *     order, through the first path and through the alias, in alternating
 *     blocks of 1000 (each block read both ways, which goes first
 *     alternating), timed apart;
 *   update_1, update_2, update_4, update_8: kt_put of a new 100-byte value,
 *     through the first path, into items with 1, 2, 4 and 8 paths (groups
 *     of -k items, by default min(N, 10^4), under /p1, /p2, /p4, /p8), in
 *     rounds of 1000 random items per group, the same items in each group,
 *     the order of the groups rotating from round to round;
 *
 * and the bytes on disk before and after the links:
 *
 *   adisk LABEL  N  BYTES_BEFORE  BYTES_AFTER  ALIASES
 *
 * With -w clients -j K it runs K client processes (see run_clients):
 *
 *   clients  insert|get  LABEL  K  OPS  SECONDS
 *   clcpu    insert|get  LABEL  K  BUSY   (the machine's CPUs, 0 to 1)
 *
 * With -w rwrite -z MIB -r OPS it makes a value of MIB mebibytes at /rw
 * (untimed, through the library for keytree and the floor alike), then
 * times OPS writes of 4 KiB at random 4 KiB-aligned offsets into it, as
 * kt_bench_fs randwrite does through the mount:
 *
 *   rw  MIB  LABEL  OPS  SECONDS
 *
 * A run is one repetition on a fresh directory; bench/run repeats it and
 * takes medians.  Operations come in a seeded pseudo-random order that is
 * the same for every engine.  Nothing here asserts a timing.
 *
 * Example: kt_bench_api -e keytree -d /tmp/x -n 10000 -b 10000
 *          kt_bench_api -e keytree -w alias -d /tmp/y -n 10000
 */
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <keytree.h>

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

/* An item's alias: another top-level directory, the same length. */
void bench_alias_path(char *buf, long i)
{
	snprintf(buf, BENCH_PATH_MAX, "/s%ld/u%ld/v%ld/i%ld", i / 10000,
		 (i / 100) % 100, (i / 10) % 10, i % 10);
}

/* Path @p m (0 the first) of item @p j in the group of items with @p k
 * paths. */
void bench_paths_path(char *buf, int k, int m, long j)
{
	snprintf(buf, BENCH_PATH_MAX, "/p%d/a%d/d%ld/i%ld", k, m, j / 100,
		 j % 100);
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

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	if (ftw->level == 0)
		return 0; /* the directory itself stays */
	if (remove(path) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

/* Close @p r's store, remove it and make it again, empty but for the
 * directory skeleton (untimed). */
static int store_anew(run *r)
{
	r->e->close(r->ctx);
	r->ctx = NULL;
	if (strncmp(r->p->dir, "rados:", 6) == 0) {
		if (kt_destroy(r->p->dir, NULL) != 0)
			return bench_fail("kt_destroy", kt_errmsg());
	} else if (nftw(r->p->dir, rm_one, 64, FTW_DEPTH | FTW_PHYS) != 0) {
		return -1;
	}
	return r->e->open(&r->ctx, r->p);
}

/* With libktradoscount.so preloaded (radoscount.c): the RADOS operations
 * and rounds so far, read at the start of each workload. */
typedef void count_fn(uint64_t *ops, uint64_t *rounds);
static count_fn *counter;
static uint64_t mark_ops, mark_rounds;

static void count_mark(void)
{
	if (counter != NULL)
		counter(&mark_ops, &mark_rounds);
}

static void report(const run *r, const char *wl, double ops, double secs)
{
	uint64_t o, n;

	printf("api\t%s\t%s\t%ld\t%.0f\t%.6f\n", wl, r->label, r->p->n, ops,
	       secs);
	/*   rt  WORKLOAD  LABEL  N  OPS  RADOS_OPS  ROUNDS */
	if (counter != NULL) {
		counter(&o, &n);
		printf("rt\t%s\t%s\t%ld\t%.0f\t%llu\t%llu\n", wl, r->label,
		       r->p->n, ops, (unsigned long long)(o - mark_ops),
		       (unsigned long long)(n - mark_rounds));
		count_mark();
	}
	fflush(stdout);
}

/* 0 .. n-1 in a seeded random order (free it), or NULL. */
static long *shuffled(long n)
{
	long i, *perm = malloc(sizeof(long) * (size_t)(n > 0 ? n : 1));

	if (perm == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {
		long j = (long)(rnd() % (uint64_t)(i + 1)), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	return perm;
}

static int do_insert(run *r)
{
	long n = r->p->n, i, *perm = shuffled(n);
	double t0;

	if (perm == NULL)
		return bench_fail("insert", "out of memory");
	count_mark();
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
	double t0, t;

	count_mark();
	t = t0 = now();
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
	double t0, t, total = 0;
	long expect = big ? r->p->nbig : -1, got;

	count_mark();
	t = t0 = now();
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

/* Resident memory from /proc/self/status, in kB (0 when unknown). */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t fl = strlen(field);
	long v = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			v = atol(line + fl + 1);
			break;
		}
	fclose(f);
	return v;
}

/* Start a new peak of resident memory (VmHWM), and return what is
 * resident now: writing 5 to clear_refs resets the peak (Linux 4.0). */
static long peak_start(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");

	if (f != NULL) {
		fputs("5", f);
		fclose(f);
	}
	return status_kb("VmRSS");
}

/* How far resident memory rose above @p base since peak_start:
 *   apimem  WORKLOAD  LABEL  N  KB */
static void peak_report(const run *r, const char *wl, long base)
{
	long hwm = status_kb("VmHWM");

	printf("apimem\t%s\t%s\t%ld\t%ld\n", wl, r->label, r->p->n,
	       hwm > base ? hwm - base : 0);
	fflush(stdout);
}

/* Move /t0 (10^4 items, fewer when n is smaller) away and back. */
static int do_rename(run *r)
{
	double t0, t;
	long done = 0, base = peak_start();

	count_mark();
	t = t0 = now();
	do {
		if (r->e->rename(r->ctx, "/t0", "/r0") != 0 ||
		    r->e->rename(r->ctx, "/r0", "/t0") != 0)
			return -1;
		done += 2;
		t = now();
	} while (t - t0 < r->min_time);
	report(r, "rename", (double)done, t - t0);
	peak_report(r, "rename", base);
	return 0;
}

static int do_delete(run *r)
{
	double t0;
	long got, base = peak_start();

	count_mark();
	t0 = now();
	got = r->e->delete_all(r->ctx);
	if (got < 0)
		return -1;
	report(r, "delete", (double)(r->p->n + r->p->nbig + r->p->nlinks),
	       now() - t0);
	peak_report(r, "delete", base);
	return 0;
}

/* ------------------------------------------------------------ aliases */

/* Each timed alias operation goes through a function of its own, named
 * alias_<workload>, so that bench/instructions can count it alone
 * (callgrind --toggle-collect); noinline keeps the names in the profile. */
#define BENCH_NOINLINE __attribute__((noinline))

/* The groups of the update workload: items with this many paths. */
static const int group_paths[] = {1, 2, 4, 8};
#define NGROUPS (sizeof(group_paths) / sizeof(group_paths[0]))

/* Items per group: -k, by default min(N, 10^4). */
static long group_items(const run *r)
{
	return r->p->nlinks;
}

static BENCH_NOINLINE int alias_link(run *r, long i)
{
	char from[BENCH_PATH_MAX], to[BENCH_PATH_MAX];

	bench_item_path(from, i);
	bench_alias_path(to, i);
	return r->e->link(r->ctx, from, to);
}

static BENCH_NOINLINE int alias_get_primary(run *r, long i)
{
	char path[BENCH_PATH_MAX];

	bench_item_path(path, i);
	return r->e->get_path(r->ctx, path);
}

static BENCH_NOINLINE int alias_get_alias(run *r, long i)
{
	char path[BENCH_PATH_MAX];

	bench_alias_path(path, i);
	return r->e->get_path(r->ctx, path);
}

static int update_in(run *r, int k, long j, long v)
{
	char path[BENCH_PATH_MAX];

	bench_paths_path(path, k, 0, j);
	return r->e->put_path(r->ctx, path, v);
}

static BENCH_NOINLINE int alias_update_1(run *r, long j, long v)
{
	return update_in(r, 1, j, v);
}

static BENCH_NOINLINE int alias_update_2(run *r, long j, long v)
{
	return update_in(r, 2, j, v);
}

static BENCH_NOINLINE int alias_update_4(run *r, long j, long v)
{
	return update_in(r, 4, j, v);
}

static BENCH_NOINLINE int alias_update_8(run *r, long j, long v)
{
	return update_in(r, 8, j, v);
}

static int (*const group_update[])(run *, long, long) = {
	alias_update_1, alias_update_2, alias_update_4, alias_update_8};

/* Give every item its alias, in a random order (timed). */
static int do_link(run *r)
{
	long n = r->p->n, i, *perm = shuffled(n);
	double t0;

	if (perm == NULL)
		return bench_fail("link", "out of memory");
	t0 = now();
	for (i = 0; i < n; i++)
		if (alias_link(r, perm[i]) != 0) {
			free(perm);
			return -1;
		}
	report(r, "link", (double)n, now() - t0);
	free(perm);
	return 0;
}

/* Gets through the first path and through the alias: the same items in
 * the same order, block by block, each timed apart. */
static int do_alias_gets(run *r)
{
	long idx[1000], done = 0, b, k;
	double t[2] = {0, 0};

	for (b = 0; done < r->gets || t[0] < r->min_time ||
		    t[1] < r->min_time;
	     b++) {
		int pass;

		for (k = 0; k < 1000; k++)
			idx[k] = (long)(rnd() % (uint64_t)r->p->n);
		for (pass = 0; pass < 2; pass++) {
			int alias = (int)((b + pass) & 1);
			double t0 = now();

			for (k = 0; k < 1000; k++)
				if ((alias ? alias_get_alias(r, idx[k])
					   : alias_get_primary(r, idx[k])) != 0)
					return -1;
			t[alias] += now() - t0;
		}
		done += 1000;
	}
	report(r, "get_primary", (double)done, t[0]);
	report(r, "get_alias", (double)done, t[1]);
	return 0;
}

/* The groups of items with 1, 2, 4 and 8 paths (untimed). */
static int fill_groups(run *r)
{
	long m = group_items(r), j;
	size_t g;
	int a;

	for (g = 0; g < NGROUPS; g++)
		for (j = 0; j < m; j++) {
			char first[BENCH_PATH_MAX], more[BENCH_PATH_MAX];

			bench_paths_path(first, group_paths[g], 0, j);
			if (r->e->put_path(r->ctx, first, j) != 0)
				return -1;
			for (a = 1; a < group_paths[g]; a++) {
				bench_paths_path(more, group_paths[g], a, j);
				if (r->e->link(r->ctx, first, more) != 0)
					return -1;
			}
		}
	return 0;
}

/* Updates of the groups' items, in rounds: the same 1000 random items of
 * each group, the groups in an order that rotates by round. */
static int do_updates(run *r)
{
	long m = group_items(r), idx[1000], done = 0, want, round, k;
	double t[NGROUPS] = {0};
	size_t g, q;
	int more = 1;

	want = r->gets / 10 > 1000 ? r->gets / 10 : 1000;
	for (round = 0; more; round++) {
		for (k = 0; k < 1000; k++)
			idx[k] = (long)(rnd() % (uint64_t)m);
		for (q = 0; q < NGROUPS; q++) {
			double t0;

			g = ((size_t)round + q) % NGROUPS;
			t0 = now();
			for (k = 0; k < 1000; k++)
				if (group_update[g](r, idx[k],
						    idx[k] + round + 1) != 0)
					return -1;
			t[g] += now() - t0;
		}
		done += 1000;
		more = done < want;
		for (g = 0; g < NGROUPS; g++)
			more |= t[g] < r->min_time;
	}
	for (g = 0; g < NGROUPS; g++) {
		char wl[32];

		snprintf(wl, sizeof(wl), "update_%d", group_paths[g]);
		report(r, wl, (double)done, t[g]);
	}
	return 0;
}

/* The alias workloads, on a fresh store (see the top of this file). */
static int run_alias(run *r)
{
	uint64_t before;
	long i;

	for (i = 0; i < r->p->n; i++)
		if (r->e->put(r->ctx, i) != 0)
			return -1;
	if (r->e->reopen(r->ctx) != 0)
		return -1;
	before = bench_disk_bytes(r->p->dir);
	if (do_link(r) != 0 || r->e->reopen(r->ctx) != 0)
		return -1;
	printf("adisk\t%s\t%ld\t%llu\t%llu\t%ld\n", r->label, r->p->n,
	       (unsigned long long)before,
	       (unsigned long long)bench_disk_bytes(r->p->dir), r->p->n);
	if (do_alias_gets(r) != 0 || fill_groups(r) != 0 ||
	    r->e->reopen(r->ctx) != 0 || do_updates(r) != 0)
		return -1;
	if (r->p->check && r->e->check(r->ctx) != 0)
		return -1;
	return r->e->reopen(r->ctx);
}

/* ------------------------------------------------------------ pairs */

/* CPU seconds this process has used, in all its threads. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Random gets on two engines (@p a, @p b) holding the same items, in
 * alternating blocks of 1000 (the same items both ways, which engine goes
 * first alternating), at least a->gets of them and for at least the
 * minimum time on each, timed apart. */
static int do_pair_gets(run *a, run *b)
{
	long idx[1000], done = 0, blk, k;
	double t[2] = {0, 0}, cpu[2] = {0, 0};

	count_mark(); /* both engines' gets count on a's line: not split */
	for (blk = 0; done < a->gets || t[0] < a->min_time ||
		      t[1] < a->min_time;
	     blk++) {
		int pass;

		for (k = 0; k < 1000; k++)
			idx[k] = (long)(rnd() % (uint64_t)a->p->n);
		for (pass = 0; pass < 2; pass++) {
			int which = (int)((blk + pass) & 1);
			run *r = which ? b : a;
			double t0 = now(), c0 = cpu_now();

			for (k = 0; k < 1000; k++)
				if (r->e->get(r->ctx, idx[k]) != 0)
					return -1;
			t[which] += now() - t0;
			cpu[which] += cpu_now() - c0;
		}
		done += 1000;
	}
	report(a, "get_pair", (double)done, t[0]);
	report(b, "get_pair", (double)done, t[1]);
	/*   apicpu  WORKLOAD  LABEL  N  OPS  CPU_SECONDS (this process, all
	 *   its threads: the library's and librados's) */
	printf("apicpu\tget_pair\t%s\t%ld\t%ld\t%.6f\n", a->label, a->p->n,
	       done, cpu[0]);
	printf("apicpu\tget_pair\t%s\t%ld\t%ld\t%.6f\n", b->label, b->p->n,
	       done, cpu[1]);
	fflush(stdout);
	return 0;
}

/* The N items inserted into both engines in the same random order, in
 * alternating blocks of 1000 (which engine goes first alternating),
 * timed apart into @p t. */
static int pair_fill(run *a, run *b, double t[2])
{
	long n = a->p->n, i, end, blk, *perm = shuffled(n);

	if (perm == NULL)
		return bench_fail("pair", "out of memory");
	for (blk = 0, i = 0; i < n; blk++, i = end) {
		int pass;

		end = i + 1000 < n ? i + 1000 : n;
		for (pass = 0; pass < 2; pass++) {
			int which = (int)((blk + pass) & 1);
			run *r = which ? b : a;
			double t0 = now();
			long k;

			for (k = i; k < end; k++)
				if (r->e->put(r->ctx, perm[k]) != 0) {
					free(perm);
					return -1;
				}
			t[which] += now() - t0;
		}
	}
	free(perm);
	return 0;
}

static int do_pair_inserts(run *a, run *b)
{
	double t[2] = {0, 0};

	if (pair_fill(a, b, t) != 0)
		return -1;
	report(a, "insert_pair", (double)a->p->n, t[0]);
	report(b, "insert_pair", (double)a->p->n, t[1]);
	return 0;
}

/* The fewest rounds of renames of the pair, however fast: one rename of
 * a 10^4-item subtree takes some 50 ms, and which of the two stores
 * LevelDB makes wait for a compaction (the first renames land on the
 * stores the inserts left) decides a ratio of a few rounds. */
#define PAIR_RENAME_ROUNDS 8

/* Finds of everything under /t, and renames of /t0 away and back, each
 * engine in turn (which goes first alternating) until both have run for
 * the minimum time (the renames at least PAIR_RENAME_ROUNDS rounds),
 * timed apart; then each engine's recursive delete of everything, one
 * right after the other (which first, by the seed, then alternating),
 * repeated on both stores made anew and filled again (untimed, the N
 * items, closed and opened) until both have deleted for the minimum
 * time: one delete of 10^4 items takes some 30 ms. */
static int do_pair_rest(run *a, run *b)
{
	double t[2], tr[2] = {0, 0}, td[2] = {0, 0}, fill[2] = {0, 0};
	long got[2] = {0, 0}, done = 0, dels = 0, round;
	run *both[2];
	int which, first;

	both[0] = a;
	both[1] = b;
	t[0] = t[1] = 0;
	for (round = 0; t[0] < a->min_time || t[1] < a->min_time; round++)
		for (which = (int)(round & 1);; which ^= 1) {
			double t0 = now();
			long n = both[which]->e->find(both[which]->ctx);

			if (n < 0)
				return -1;
			t[which] += now() - t0;
			got[which] += n;
			if (which == (int)((round & 1) ^ 1))
				break;
		}
	report(a, "find_pair", (double)got[0], t[0]);
	report(b, "find_pair", (double)got[1], t[1]);
	for (round = 0; tr[0] < a->min_time || tr[1] < a->min_time ||
			round < PAIR_RENAME_ROUNDS;
	     round++) {
		for (which = (int)(round & 1);; which ^= 1) {
			run *r = both[which];
			double t0 = now();

			if (r->e->rename(r->ctx, "/t0", "/r0") != 0 ||
			    r->e->rename(r->ctx, "/r0", "/t0") != 0)
				return -1;
			tr[which] += now() - t0;
			if (which == (int)((round & 1) ^ 1))
				break;
		}
		done += 2;
	}
	report(a, "rename_pair", (double)done, tr[0]);
	report(b, "rename_pair", (double)done, tr[1]);
	first = (int)(rnd() & 1); /* the seed (-s) decides */
	for (round = 0; td[0] < a->min_time || td[1] < a->min_time; round++) {
		if (round > 0 &&
		    (store_anew(a) != 0 || store_anew(b) != 0 ||
		     pair_fill(a, b, fill) != 0 || a->e->reopen(a->ctx) != 0 ||
		     b->e->reopen(b->ctx) != 0))
			return -1;
		for (which = 0; which < 2; which++) {
			int x = which ^ first ^ (int)(round & 1);
			double t0 = now();

			if (both[x]->e->delete_all(both[x]->ctx) < 0)
				return -1;
			td[x] += now() - t0;
		}
		dels += a->p->n + a->p->nbig + a->p->nlinks;
	}
	report(a, "delete_pair", (double)dels, td[0]);
	report(b, "delete_pair", (double)dels, td[1]);
	return 0;
}

/* The pair workload: both stores made, filled with the same N items
 * (do_pair_inserts), closed and opened again, then do_pair_gets and
 * do_pair_rest. */
static int run_pair(run *a, run *b)
{
	run *both[2];
	int x;

	both[0] = a;
	both[1] = b;
	for (x = 0; x < 2; x++)
		if (both[x]->e->open(&both[x]->ctx, both[x]->p) != 0)
			return -1;
	if (do_pair_inserts(a, b) != 0)
		return -1;
	for (x = 0; x < 2; x++)
		if (both[x]->e->reopen(both[x]->ctx) != 0)
			return -1;
	if (do_pair_gets(a, b) != 0)
		return -1;
	return do_pair_rest(a, b);
}

/* ------------------------------------------------------------ clients */

/* Tell the parent one byte, or die. */
static void tell(int fd, char c)
{
	if (write(fd, &c, 1) != 1)
		_exit(1);
}

/* The machine's CPU time so far, from /proc/stat: *busy and *all in
 * clock ticks (busy: all but idle and iowait); 0 when unknown. */
static void host_cpu(unsigned long long *busy, unsigned long long *all)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	int i;

	*busy = *all = 0;
	if (f == NULL)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
		for (i = 0; i < 8; i++)
			*all += v[i];
		*busy = *all - v[3] - v[4];
	}
	fclose(f);
}

/* The share of the machine's CPU time that was busy between two
 * host_cpu readings, 0 to 1 (-1 when unknown). */
static double host_busy(const unsigned long long a[2],
			const unsigned long long b[2])
{
	return b[1] > a[1] ? (double)(b[0] - a[0]) / (double)(b[1] - a[1])
			   : -1;
}

/* The clients workload: @p k processes, each on a store of its own
 * (engine attach), first each putting its n items into a top-level
 * directory of its own (/t1 .. /tK), then each doing r->gets random gets
 * of its own items.  Each phase is timed from the start signal to the
 * last client's end; ops are those of all clients together. */
static int run_clients(run *r, int k)
{
	const bench_params *p = r->p;
	int go[2], done[2], rel[2], i, failed = 0;
	pid_t *pid = calloc((size_t)k, sizeof(pid_t));
	double t0, t1, t2;
	unsigned long long c0[2], c1[2], c2[2];
	char c;

	if (pid == NULL || pipe(done) != 0)
		return bench_fail("clients", "out of memory or no pipe");
	/* The skeleton, in a process of its own: librados is never started
	 * in this one, which forks the clients. */
	pid[0] = fork();
	if (pid[0] == 0) {
		void *ctx = NULL;
		int rc = r->e->open(&ctx, p);

		r->e->close(ctx);
		_exit(rc != 0);
	}
	if (pid[0] < 0 || waitpid(pid[0], &i, 0) != pid[0] || i != 0)
		return bench_fail("clients", "making the store failed");
	if (pipe(go) != 0 || pipe(rel) != 0)
		return bench_fail("clients", "no pipe");
	for (i = 0; i < k; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			void *ctx = NULL;
			long j, base = (long)(i + 1) * 10000, *perm;

			close(go[1]);
			close(done[0]);
			close(rel[1]);
			rng_state ^= (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull;
			perm = shuffled(p->per_top);
			if (perm == NULL || r->e->attach(&ctx, p) != 0)
				_exit(1);
			tell(done[1], 'o');
			if (read(go[0], &c, 1) != 1)
				_exit(1);
			for (j = 0; j < p->per_top; j++)
				if (r->e->put(ctx, base + perm[j]) != 0)
					_exit(1);
			tell(done[1], 'p');
			if (read(rel[0], &c, 1) != 1)
				_exit(1);
			for (j = 0; j < r->gets; j++)
				if (r->e->get(ctx, base + (long)(rnd() %
						(uint64_t)p->per_top)) != 0)
					_exit(1);
			tell(done[1], 'g');
			r->e->close(ctx);
			free(perm);
			_exit(0);
		}
		if (pid[i] < 0)
			return bench_fail("clients", "fork failed");
	}
	close(go[0]);
	close(rel[0]);
	close(done[1]);
	for (i = 0; i < k; i++)
		if (read(done[0], &c, 1) != 1 || c != 'o')
			failed = 1;
	/* Go (a byte each), and time until all have put. */
	host_cpu(&c0[0], &c0[1]);
	t0 = now();
	for (i = 0; i < k && !failed; i++)
		if (write(go[1], "g", 1) != 1)
			failed = 1;
	for (i = 0; i < k && !failed; i++)
		if (read(done[0], &c, 1) != 1 || c != 'p')
			failed = 1;
	t1 = now();
	host_cpu(&c1[0], &c1[1]);
	for (i = 0; i < k && !failed; i++)
		if (write(rel[1], "g", 1) != 1)
			failed = 1;
	for (i = 0; i < k && !failed; i++)
		if (read(done[0], &c, 1) != 1 || c != 'g')
			failed = 1;
	t2 = now();
	host_cpu(&c2[0], &c2[1]);
	close(go[1]);
	close(rel[1]);
	close(done[0]);
	for (i = 0; i < k; i++) {
		int st = 0;

		if (waitpid(pid[i], &st, 0) != pid[i] || st != 0)
			failed = 1;
	}
	free(pid);
	if (failed)
		return bench_fail("clients", "a client failed");
	printf("clients\tinsert\t%s\t%d\t%ld\t%.6f\n", r->label, k,
	       (long)k * p->per_top, t1 - t0);
	printf("clients\tget\t%s\t%d\t%ld\t%.6f\n", r->label, k,
	       (long)k * r->gets, t2 - t1);
	/*   clcpu  PHASE  LABEL  K  BUSY (share of the machine's CPU time,
	 *   every process on it: the clients, the cluster, anything else) */
	printf("clcpu\tinsert\t%s\t%d\t%.3f\n", r->label, k,
	       host_busy(c0, c1));
	printf("clcpu\tget\t%s\t%d\t%.3f\n", r->label, k,
	       host_busy(c1, c2));
	return 0;
}

static const bench_engine *engine_named(const char *name)
{
	static const bench_engine *const all[] = {&bench_keytree, &bench_floor,
						  &bench_sqlite, &bench_fs,
#ifdef KT_BENCH_RADOS
						  &bench_rados,
#endif
	};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(all[i]->name, name) == 0)
			return all[i];
	return NULL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kt_bench_api -e keytree|floor|sqlite|fs|rados -d DIR "
		"-n N [-b NBIG] [-k NLINKS]\n"
		"                    [-g GETS] [-m MIN_SECONDS] [-l LABEL] "
		"[-s SEED] [-c] [-w alias]\n"
		"       kt_bench_api -e ENGINE -d DIR -w pair -E ENGINE2 "
		"-L LABEL2 -n N [-g GETS]\n"
		"                    [-m MIN_SECONDS] [-l LABEL] [-s SEED]  "
		"(ENGINE2's store: DIR-ENGINE2)\n"
		"       kt_bench_api -e keytree|rados -d rados:POOL/TREE "
		"-w clients -j K -n N [-g GETS]\n"
		"       kt_bench_api -e keytree|floor -d DIR -w rwrite -z MIB "
		"-r OPS [-l LABEL] [-s SEED] [-c]\n"
		"DIR may be a location rados:POOL[/NS]/TREE for keytree and "
		"rados (the RADOS\n"
		"floor); the tree is destroyed at the end.\n");
}

/* -w rwrite: @p ops random 4 KiB writes into a value of @p mib MiB. */
static int run_rwrite(run *r, long mib, long ops)
{
	static unsigned char data[1 << 20];
	uint64_t size = (uint64_t)mib << 20, blocks = size / 4096;
	double t0;
	size_t i;
	long k;

	for (i = 0; i < sizeof(data); i += 8) {
		uint64_t x = rnd();
		memcpy(data + i, &x, 8);
	}
	if (r->e->rw_make(r->ctx, "/rw", size, data, sizeof(data)) != 0)
		return -1;
	t0 = now();
	for (k = 0; k < ops; k++) {
		uint64_t off = (rnd() % blocks) * 4096;
		if (r->e->rw_write(r->ctx, "/rw", data + (k % 256) * 4096,
				   off) != 0)
			return -1;
	}
	printf("rw\t%ld\t%s\t%ld\t%.6f\n", mib, r->label, ops, now() - t0);
	fflush(stdout);
	/* With -c the floor's store is checked here (its rows, the blocks'
	 * CRCs included). */
	return r->e->reopen(r->ctx);
}

/* -w pair: @p r's engine against @p ename2's, on stores @p p->dir and
 * @p p->dir-ENGINE2. */
static int main_pair(run *r, bench_params *p, const char *ename,
		     const char *ename2, const char *label2, int rados)
{
	bench_params p2;
	run r2;
	char dir2[1024];
	int rc, x;

	if (ename2 == NULL || (r2.e = engine_named(ename2)) == NULL ||
	    label2 == NULL) {
		fprintf(stderr, "kt_bench_api: -w pair needs -E ENGINE2 and "
			"-L LABEL2\n");
		return 2;
	}
	if ((size_t)snprintf(dir2, sizeof(dir2), "%s-%s", p->dir, ename2) >=
	    sizeof(dir2)) {
		fprintf(stderr, "kt_bench_api: -d %s is too long\n", p->dir);
		return 2;
	}
	p->nbig = 1;
	p->nlinks = 0;
	p2 = *p;
	p2.dir = dir2;
	r->label = r->label ? r->label : ename;
	r->p = p;
	r2 = *r;
	r2.e = engine_named(ename2);
	r2.ctx = NULL;
	r2.label = label2;
	r2.p = &p2;
	for (x = 0; x < 2 && !rados; x++)
		if (mkdir(x ? dir2 : p->dir, 0755) != 0 && errno != EEXIST) {
			perror(x ? dir2 : p->dir);
			return 1;
		}
	rc = run_pair(r, &r2) != 0;
	if (r->ctx != NULL)
		r->e->close(r->ctx);
	if (r2.ctx != NULL)
		r2.e->close(r2.ctx);
	for (x = 0; x < 2 && rados; x++)
		if (kt_destroy(x ? dir2 : p->dir, NULL) != 0)
			rc = bench_fail("kt_destroy", kt_errmsg()) != 0;
	return rc;
}

int main(int argc, char **argv)
{
	bench_params p = {0};
	run r = {0};
	const char *ename = NULL, *what = NULL, *ename2 = NULL, *label2 = NULL;
	int opt, rc = 1, nclients = 0, rados;
	long rw_mib = 0, rw_ops = 0;

	p.nbig = 10000;
	p.nlinks = -1;
	r.min_time = 0.3;
	r.gets = 100000;
	while ((opt = getopt(argc, argv, "e:d:n:b:k:g:m:l:s:cw:j:E:L:z:r:")) !=
	       -1) {
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
		case 'w':
			what = optarg;
			break;
		case 'j':
			nclients = atoi(optarg);
			break;
		case 'E':
			ename2 = optarg;
			break;
		case 'L':
			label2 = optarg;
			break;
		case 'z':
			rw_mib = atol(optarg);
			break;
		case 'r':
			rw_ops = atol(optarg);
			break;
		default:
			usage();
			return 2;
		}
	}
	if (ename == NULL || p.dir == NULL || p.n <= 0 || p.nbig <= 0 ||
	    (r.e = engine_named(ename)) == NULL ||
	    (what != NULL && strcmp(what, "alias") != 0 &&
	     strcmp(what, "clients") != 0 && strcmp(what, "pair") != 0 &&
	     strcmp(what, "rwrite") != 0)) {
		usage();
		return 2;
	}
	rados = strncmp(p.dir, "rados:", 6) == 0;
	*(void **)&counter = dlsym(RTLD_DEFAULT, "ktcount_read");
	if (what != NULL && strcmp(what, "clients") == 0) {
		if (nclients < 1 || nclients > 64 || p.n > 10000 ||
		    r.e->attach == NULL) {
			fprintf(stderr, "kt_bench_api: -w clients needs -j 1..64, "
				"-n up to 10^4 and an engine with attach "
				"(keytree, rados)\n");
			return 2;
		}
		r.label = r.label ? r.label : ename;
		r.p = &p;
		p.per_top = p.n;
		p.n = (long)(nclients + 1) * 10000;
		p.nbig = 1;
		p.nlinks = 0;
		if (!rados && mkdir(p.dir, 0755) != 0 && errno != EEXIST) {
			perror(p.dir);
			return 1;
		}
		rc = run_clients(&r, nclients) != 0;
		if (rados && kt_destroy(p.dir, NULL) != 0)
			rc = bench_fail("kt_destroy", kt_errmsg());
		return rc;
	}
	if (what != NULL && strcmp(what, "pair") == 0)
		return main_pair(&r, &p, ename, ename2, label2, rados);
	if (what != NULL && strcmp(what, "rwrite") == 0) {
		if (rw_mib < 1 || rw_ops < 1 || r.e->rw_make == NULL || rados) {
			fprintf(stderr, "kt_bench_api: -w rwrite needs -z MIB "
				"and -r OPS (1 or more) and keytree or the "
				"floor on a local directory\n");
			return 2;
		}
		r.label = r.label ? r.label : ename;
		r.p = &p;
		p.nbig = 1;
		p.nlinks = 0;
		if (mkdir(p.dir, 0755) != 0 && errno != EEXIST) {
			perror(p.dir);
			return 1;
		}
		if (r.e->open(&r.ctx, &p) == 0)
			rc = run_rwrite(&r, rw_mib, rw_ops) != 0;
		r.e->close(r.ctx);
		return rc;
	}
	if (what != NULL && (r.e->link == NULL || r.e->get_path == NULL ||
			     r.e->put_path == NULL || r.e->check == NULL)) {
		fprintf(stderr, "kt_bench_api: %s has no aliases\n", ename);
		return 2;
	}
	if (p.nlinks < 0)
		p.nlinks = p.n < 10000 ? p.n : 10000;
	if (what != NULL && p.nlinks == 0) {
		usage();
		return 2;
	}
	if (r.label == NULL)
		r.label = ename;
	r.p = &p;
	if (!rados && mkdir(p.dir, 0755) != 0 && errno != EEXIST) {
		perror(p.dir);
		return 1;
	}
	if (r.e->open(&r.ctx, &p) != 0)
		return 1;
	if (what != NULL) {
		rc = run_alias(&r) != 0;
		goto out;
	}
	if (do_insert(&r) != 0 || r.e->reopen(r.ctx) != 0)
		goto out;
	if (!rados)
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
	if (rados && kt_destroy(p.dir, NULL) != 0)
		rc = bench_fail("kt_destroy", kt_errmsg());
	return rc;
}
