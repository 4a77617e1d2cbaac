/*
 * typed.c - kt_bench_typed: what typed names (kt_options.typed_names,
 * docs/FORMAT.md §3a) cost and save, each against a store with plain names
 * made in the same run with the same data:
 *
 *   - bytes per row of N items named by UUIDs under /u (kt_stats: every
 *     row of the store, keys and values), and the bytes of rows per item;
 *   - the listing rate of a directory of N children named 0 .. N-1
 *     (kt_iter_new over all of it, best of 3), and the insert rate of
 *     those children (one batch of 1000 per commit).
 *
 * Prints a markdown table; ratios are typed over plain.
 *
 * usage: kt_bench_typed [-q] [-n N] [-d WORKDIR]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keytree.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "kt_bench_typed: %s: %s (%s)\n", what,
		kt_strerror(rc), kt_errmsg());
	exit(1);
}

typedef struct result {
	kt_store_stats uuid;
	double insert_s, list_s;
	size_t listed;
} result;

static void uuid_of(char out[37], uint64_t i)
{
	uint64_t a = i * 0x9e3779b97f4a7c15ULL, b = ~i * 0xbf58476d1ce4e5b9ULL;

	snprintf(out, 37, "%08" PRIx64 "-%04" PRIx64 "-4%03" PRIx64
		 "-a%03" PRIx64 "-%012" PRIx64, a >> 32, (a >> 16) & 0xffff,
		 a & 0xfff, (b >> 48) & 0xfff, b & (uint64_t)0xffffffffffff);
}

/* Put @p n empty items under @p dir named by @p name, 1000 a batch. */
static void fill(kt_store *st, const char *dir, size_t n,
		 void (*name)(char *, uint64_t))
{
	char p[128], nm[40];
	size_t i;
	int rc;

	if ((rc = kt_mkdir(st, dir, NULL)) != 0)
		die("mkdir", rc);
	for (i = 0; i < n;) {
		kt_batch *b = NULL;
		size_t k;
		if ((rc = kt_batch_new(&b, st)) != 0)
			die("batch", rc);
		for (k = 0; k < 1000 && i < n; k++, i++) {
			name(nm, i);
			snprintf(p, sizeof(p), "%s/%s", dir, nm);
			if ((rc = kt_batch_put(b, p, "", 0, NULL)) != 0)
				die("batch put", rc);
		}
		if ((rc = kt_batch_commit(b)) != 0)
			die("commit", rc);
		kt_batch_free(b);
	}
}

static void number_of(char *out, uint64_t i)
{
	snprintf(out, 40, "%" PRIu64, i);
}

static void uuid_name(char *out, uint64_t i)
{
	uuid_of(out, i);
}

static void run(result *r, const char *dir, int typed, size_t n)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	double t, best = 0;
	int rc, round;

	o.create_if_missing = 1;
	o.error_if_exists = 1;
	o.typed_names = typed;
	if ((rc = kt_open(&st, dir, &o)) != 0)
		die(dir, rc);
	fill(st, "/u", n, uuid_name);
	if ((rc = kt_stats(&r->uuid, st)) != 0)
		die("stats", rc);
	t = now();
	fill(st, "/n", n, number_of);
	r->insert_s = now() - t;
	for (round = 0; round < 3; round++) {
		kt_iter *it = NULL;
		const kt_entry *e;
		size_t k = 0;
		t = now();
		if ((rc = kt_iter_new(&it, st, "/n", NULL)) != 0)
			die("list", rc);
		while ((rc = kt_iter_next(&e, it)) == 0)
			k++;
		kt_iter_free(it);
		t = now() - t;
		if (round == 0 || t < best)
			best = t;
		r->listed = k;
	}
	r->list_s = best;
	kt_close(st);
	if ((rc = kt_destroy(dir, NULL)) != 0)
		die("destroy", rc);
}

int main(int argc, char **argv)
{
	const char *work = "/var/tmp";
	size_t n = 100000;
	char pd[512], td[512];
	result p, t;
	int c;

	while ((c = getopt(argc, argv, "qn:d:")) != -1) {
		if (c == 'q')
			n = 5000;
		else if (c == 'n')
			n = (size_t)strtoull(optarg, NULL, 10);
		else if (c == 'd')
			work = optarg;
		else {
			fprintf(stderr, "usage: kt_bench_typed [-q] [-n N] "
				"[-d WORKDIR]\n");
			return 2;
		}
	}
	snprintf(pd, sizeof(pd), "%s/kt-bench-typed-plain-%d", work,
		 (int)getpid());
	snprintf(td, sizeof(td), "%s/kt-bench-typed-typed-%d", work,
		 (int)getpid());
	run(&p, pd, 0, n);
	run(&t, td, 1, n);
	if (p.listed != n || t.listed != n) {
		fprintf(stderr, "kt_bench_typed: listed %zu and %zu of %zu\n",
			p.listed, t.listed, n);
		return 1;
	}
	printf("| %zu items (after the root) | plain names | typed names | "
	       "typed / plain |\n|---|---:|---:|---:|\n", n);
	printf("| UUID-named items: bytes per row | %.1f | %.1f | %.2f |\n",
	       (double)p.uuid.row_bytes / (double)p.uuid.rows,
	       (double)t.uuid.row_bytes / (double)t.uuid.rows,
	       ((double)t.uuid.row_bytes / (double)t.uuid.rows) /
		       ((double)p.uuid.row_bytes / (double)p.uuid.rows));
	printf("| UUID-named items: row bytes per item | %.1f | %.1f | %.2f |\n",
	       (double)p.uuid.row_bytes / (double)n,
	       (double)t.uuid.row_bytes / (double)n,
	       (double)t.uuid.row_bytes / (double)p.uuid.row_bytes);
	printf("| numbered children: listing, entries/s (best of 3) | %.0f | "
	       "%.0f | %.2f |\n", (double)n / p.list_s, (double)n / t.list_s,
	       p.list_s / t.list_s);
	printf("| numbered children: insert, items/s (batches of 1000) | %.0f "
	       "| %.0f | %.2f |\n", (double)n / p.insert_s,
	       (double)n / t.insert_s, p.insert_s / t.insert_s);
	return 0;
}
