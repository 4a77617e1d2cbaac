/*
 * stress_api.c - many threads on one kt_store handle for a bounded time.
 *
 * keytree.h promises that a kt_store may be shared by any number of
 * threads and that writers never lose each other's rows.  Here
 * KT_STRESS_THREADS threads (default 6) spend KT_STRESS_SECONDS seconds
 * (default 15) doing put, append, read, truncate, rename (plain,
 * NOREPLACE, EXCHANGE), delete (plain, RECURSIVE, PRUNE, ITEM), mkdir,
 * symlink, listing, find, attributes, setattr and batches on a few names in
 * overlapping directories.  Results that concurrent users must expect
 * (KT_ENOTFOUND, KT_EEXISTS, KT_ENOTEMPTY, ...) are counted; any other code,
 * a failure without a message, a listing out of order or with a name twice,
 * or a value read back wrong fails the test.  Besides, every thread appends
 * numbered 16-byte records to one shared item with KT_APPEND: afterwards
 * each acknowledged record must be there exactly once, in each thread's
 * order, and nothing else.  Midway a second process opens the store
 * (through this one, its holder: docs/CONCURRENCY.md) and must find it
 * clean (kt_check) while the threads write.  At the end kt_check finds
 * nothing, before and after a reopen.
 *
 * Several processes cannot open one LevelDB store, so the API is stressed
 * with threads; tests/stress/mount.sh adds processes through keytreefs.
 * An alarm ends a hung run.  Runs under ThreadSanitizer in the ci-tsan
 * configuration of scripts/test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kt_test.h"

#define MAX_THREADS 32
#define REC	    16 /* bytes in one log record */

typedef struct worker {
	kt_store *store;
	pthread_barrier_t *start;
	double deadline;
	int n;
	uint64_t rng;
	unsigned long ops, expected, appended;
	unsigned long errors;
	char first_error[512];
} worker;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned rn(worker *w, unsigned n)
{
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (unsigned)((z ^ (z >> 31)) % n);
}

static void note(worker *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(worker *w, const char *fmt, ...)
{
	va_list ap;

	if (w->errors++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(w->first_error, sizeof(w->first_error), fmt, ap);
	va_end(ap);
}

/* Count a result: expected codes of a contended tree, or an error. */
static void res(worker *w, const char *what, const char *path, int rc)
{
	w->ops++;
	switch (rc) {
	case 0:
		return;
	case KT_ENOTFOUND:
	case KT_EEXISTS:
	case KT_ENOTDIR:
	case KT_EISDIR:
	case KT_ENOTEMPTY:
	case KT_ELOOP:
	case KT_EINVAL: /* into itself; ITEM of a link; readlink of a
			   non-link */
	case KT_ENOATTR:
		if (kt_errmsg()[0] == '\0')
			note(w, "%s '%s': %d without a message", what, path,
			     rc);
		w->expected++;
		return;
	default:
		note(w, "%s '%s': %d (%s)", what, path, rc, kt_errmsg());
	}
}

static void rand_path(worker *w, char *buf, size_t cap)
{
	static const char *const dirs[] = {"d0", "d1", "d2"};
	static const char *const names[] = {"a", "b", "ab", "c"};
	unsigned r = rn(w, 6);

	if (r < 2)
		snprintf(buf, cap, "/%s", dirs[rn(w, 3)]);
	else if (r < 4)
		snprintf(buf, cap, "/%s/%s", dirs[rn(w, 3)], names[rn(w, 4)]);
	else
		snprintf(buf, cap, "/%s/%s/%s", dirs[rn(w, 3)], names[rn(w, 4)],
			 names[rn(w, 4)]);
}

static void do_list(worker *w, const char *path)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	char prev[300] = "";
	int rc, first = 1;

	rc = kt_iter_new(&it, w->store, path, NULL);
	if (rc == 0) {
		while ((rc = kt_iter_next(&e, it)) == 0) {
			if (!first && strcmp(prev, e->name) >= 0)
				note(w, "listing '%s': '%s' after '%s'", path,
				     e->name, prev);
			snprintf(prev, sizeof(prev), "%s", e->name);
			first = 0;
		}
		if (rc == KT_ITEROVER)
			rc = 0;
	}
	kt_iter_free(it);
	res(w, "list", path, rc);
}

static void do_find(worker *w, const char *path)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc;

	rc = kt_find_new(&it, w->store, path, rn(w, 4));
	if (rc == 0) {
		while ((rc = kt_iter_next(&e, it)) == 0)
			if (e->name[0] != '/')
				note(w, "find '%s': entry '%s'", path, e->name);
		if (rc == KT_ITEROVER)
			rc = 0;
	}
	kt_iter_free(it);
	res(w, "find", path, rc);
}

/* A value that starts with its path and writer, then letters. */
static size_t make_value(char *buf, size_t cap, const char *path, worker *w)
{
	int n = snprintf(buf, cap, "%s by %d:", path, w->n);
	size_t len = (size_t)n + rn(w, 200), i;

	for (i = (size_t)n; i < len && i < cap; i++)
		buf[i] = (char)('a' + i % 26);
	return len < cap ? len : cap;
}

static void do_get(worker *w, const char *path)
{
	void *v = NULL;
	size_t len = 0;
	int rc = kt_get(&v, &len, w->store, path);

	if (rc == 0 && ((char *)v)[len] != '\0')
		note(w, "get '%s': no NUL after the value", path);
	kt_free(v);
	res(w, "get", path, rc);
}

static void do_batch(worker *w)
{
	kt_batch *b = NULL;
	char p[128], q[128], v[300];
	int rc, i, n = 2 + (int)rn(w, 3);

	if ((rc = kt_batch_new(&b, w->store)) != 0) {
		res(w, "batch_new", "", rc);
		return;
	}
	for (i = 0; i < n && rc == 0; i++) {
		rand_path(w, p, sizeof(p));
		switch (rn(w, 4)) {
		case 0:
			rc = kt_batch_put(b, p, v,
					  make_value(v, sizeof(v), p, w), NULL);
			break;
		case 1:
			rc = kt_batch_mkdir(b, p, NULL);
			break;
		case 2:
			rand_path(w, q, sizeof(q));
			rc = kt_batch_rename(b, p, q, 0);
			break;
		default:
			rc = kt_batch_delete(b, p, KT_DELETE_RECURSIVE);
			break;
		}
	}
	if (rc != 0)
		note(w, "batch record: %d (%s)", rc, kt_errmsg());
	else
		res(w, "batch_commit", "", kt_batch_commit(b));
	kt_batch_free(b);
}

static void do_append(worker *w)
{
	char rec[REC + 1];
	int rc;

	snprintf(rec, sizeof(rec), "%02d:%012lu\n", w->n, w->appended);
	rc = kt_write(w->store, "/log/all", rec, REC, KT_APPEND);
	if (rc == 0)
		w->appended++;
	else
		note(w, "append: %d (%s)", rc, kt_errmsg());
	w->ops++;
}

static void one_op(worker *w)
{
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_statbuf st;
	char p[128], q[128], v[300];
	size_t n = 0;
	char *t = NULL;
	void *a = NULL;
	static const unsigned del_flags[] = {
		0, KT_DELETE_RECURSIVE, KT_DELETE_PRUNE | KT_DELETE_RECURSIVE,
		KT_DELETE_ITEM};

	rand_path(w, p, sizeof(p));
	switch (rn(w, 18)) {
	case 0:
	case 1:
		res(w, "put", p,
		    kt_put(w->store, p, v, make_value(v, sizeof(v), p, w),
			   NULL));
		break;
	case 2:
		do_append(w);
		break;
	case 3:
		do_get(w, p);
		break;
	case 4:
		res(w, "write", p,
		    kt_write(w->store, p, "/x", 2, rn(w, 2) ? KT_APPEND : 0));
		break;
	case 5:
		res(w, "truncate", p, kt_truncate(w->store, p, rn(w, 50)));
		break;
	case 6:
		rand_path(w, q, sizeof(q));
		res(w, "rename", p,
		    kt_rename(w->store, p, q,
			      rn(w, 3) == 0 ? KT_RENAME_EXCHANGE
			      : rn(w, 2)    ? KT_RENAME_NOREPLACE
					    : 0));
		break;
	case 7:
		res(w, "delete", p,
		    kt_delete(w->store, p, del_flags[rn(w, 4)]));
		break;
	case 8:
		co.flags = rn(w, 2) ? KT_CREATE_PARENTS : 0;
		res(w, "mkdir", p, kt_mkdir(w->store, p, &co));
		break;
	case 9:
		co.flags = KT_CREATE_PARENTS;
		res(w, "symlink", p,
		    kt_symlink(w->store, p, rn(w, 2) ? "a" : "/d1/b", &co));
		break;
	case 10:
		do_list(w, p);
		break;
	case 11:
		do_find(w, p);
		break;
	case 12:
		res(w, "attr_set", p,
		    kt_attr_set(w->store, p, rn(w, 2) ? "x" : "y", p, strlen(p),
				0));
		break;
	case 13:
		res(w, "attr_get", p, kt_attr_get(&a, &n, w->store, p, "x"));
		kt_free(a);
		break;
	case 14:
		res(w, "attr_delete", p, kt_attr_delete(w->store, p, "y"));
		break;
	case 15:
		sa.mask = KT_SET_MODE | KT_SET_MTIME_NOW;
		sa.mode = 0600 + rn(w, 0100);
		res(w, "setattr", p, kt_setattr(w->store, p, &sa, 0));
		break;
	case 16:
		do_batch(w);
		break;
	default:
		res(w, "stat", p,
		    rn(w, 2) ? kt_stat(&st, w->store, p)
			     : kt_lstat(&st, w->store, p));
		res(w, "readlink", p, kt_readlink(&t, &n, w->store, p));
		kt_free(t);
		break;
	}
}

static void *worker_main(void *arg)
{
	worker *w = arg;

	pthread_barrier_wait(w->start);
	while (now() < w->deadline)
		one_op(w);
	return NULL;
}

static unsigned long env_ul(const char *name, unsigned long def)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 10) : def;
}

/* A second process opens the store this one holds, through it, and
 * checks it while the threads write. */
static void probe_busy(const char *dir)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "stress_api", "--probe-open", dir,
		      (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("a second process opening and checking the store in "
			 "use: status %#x", status);
}

/* Every acknowledged record once, each thread's in its order. */
static void check_log(kt_store *st, worker *ws, int nthreads)
{
	unsigned long next[MAX_THREADS] = {0}, total = 0, seq;
	void *v = NULL;
	size_t len = 0, off;
	int i, t;

	assert_int_equal(kt_get(&v, &len, st, "/log/all"), 0);
	for (i = 0; i < nthreads; i++)
		total += ws[i].appended;
	if (len != total * REC)
		fail_msg("the log holds %zu bytes, %lu records were "
			 "acknowledged (%lu bytes)",
			 len, total, total * REC);
	for (off = 0; off < len; off += REC) {
		const char *r = (const char *)v + off;
		if (sscanf(r, "%2d:%12lu", &t, &seq) != 2 || t < 0 ||
		    t >= nthreads || r[REC - 1] != '\n')
			fail_msg("log record at %zu is garbled: '%.16s'", off,
				 r);
		if (seq != next[t])
			fail_msg("log record at %zu: thread %d record %lu, "
				 "expected %lu (lost or repeated)",
				 off, t, seq, next[t]);
		next[t]++;
	}
	kt_free(v);
}

static void test_stress_api__threads(void **state)
{
	kt_test_fixture *f = *state;
	unsigned long nthreads = env_ul("KT_STRESS_THREADS", 6);
	double secs = (double)env_ul("KT_STRESS_SECONDS", 15);
	worker ws[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	pthread_barrier_t start;
	size_t bad = 0;
	unsigned long i, ops = 0, expected = 0, appended = 0;
	int failed = 0;

	if (nthreads < 1 || nthreads > MAX_THREADS)
		nthreads = 6;
	assert_int_equal(kt_put(f->store, "/log/all", "", 0, NULL), 0);
	assert_int_equal(
		pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1), 0);
	memset(ws, 0, sizeof(ws));
	for (i = 0; i < nthreads; i++) {
		ws[i].store = f->store;
		ws[i].start = &start;
		ws[i].deadline = now() + secs;
		ws[i].n = (int)i;
		ws[i].rng = 0x5eed + i * 7919;
		assert_int_equal(
			pthread_create(&tid[i], NULL, worker_main, &ws[i]), 0);
	}
	pthread_barrier_wait(&start);
	sleep((unsigned)(secs / 2));
	probe_busy(f->path);
	for (i = 0; i < nthreads; i++) {
		pthread_join(tid[i], NULL);
		ops += ws[i].ops;
		expected += ws[i].expected;
		appended += ws[i].appended;
		if (ws[i].errors) {
			fprintf(stderr, "thread %lu: %lu errors, first: %s\n",
				i, ws[i].errors, ws[i].first_error);
			failed = 1;
		}
	}
	pthread_barrier_destroy(&start);
	printf("stress_api: %lu threads, %.0f s: %lu operations, %lu "
	       "expected errors, %lu appends\n",
	       nthreads, secs, ops, expected, appended);
	if (failed)
		fail_msg("unexpected results, see above");
	assert_true(ops > 1000);
	check_log(f->store, ws, (int)nthreads);
	assert_int_equal(kt_check(&bad, f->store, NULL), 0);
	assert_int_equal(bad, 0);
	kt_test_reopen(f);
	check_log(f->store, ws, (int)nthreads);
	/* the teardown runs kt_check once more, after the reopen */
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stress_api__threads,
						kt_test_setup,
						kt_test_teardown),
	};
	unsigned long secs = env_ul("KT_STRESS_SECONDS", 15);

	if (argc == 3 && strcmp(argv[1], "--probe-open") == 0) {
		kt_store *st = NULL;
		size_t bad = 0;
		int rc = kt_open(&st, argv[2], NULL);

		if (rc == 0)
			rc = kt_check(&bad, st, NULL);
		if (rc != 0 || bad != 0)
			fprintf(stderr, "probe: kt_open/kt_check gave %d, %zu "
				"violations (%s)\n", rc, bad, kt_errmsg());
		kt_close(st);
		return rc == 0 && bad == 0 ? 0 : 1;
	}
	/* the watchdog: a hung run dies instead of holding CI */
	alarm((unsigned)secs + 240);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
