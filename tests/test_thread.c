/*
 * test_thread.c - one store shared by several threads.  keytree.h promises
 * that concurrent writers never lose each other's rows: every item a
 * thread was told it created must be listed afterwards, and the store must
 * pass kt_check.  Threads record failures instead of asserting, since
 * cmocka's asserts are for the main thread only.
 *
 * Each thread makes PER_THREAD items on LevelDB and on RADOS with
 * KT_RADOS_LONG=1.  A short run on RADOS, where every commit takes several
 * round trips and the commits of one handle's threads take turns, makes
 * PER_THREAD_RADOS: still 8 threads at once on one directory, every
 * shared path raced by all of them, and recursive deletes of /churn
 * among the creations below it.
 */
#include "kt_test.h"
#include "kt_helpers.h"

#include <pthread.h>

#define NTHREADS 8
#define PER_THREAD 400
#define PER_THREAD_RADOS 16
_Static_assert(PER_THREAD_RADOS <= PER_THREAD, "items fit in acked[]");
#define NSHARED_DIRS 6

/* Items per thread in this run (PER_THREAD or PER_THREAD_RADOS), set by
 * each test before its threads start, and how often a thread of mixed()
 * deletes /churn: every 25th item at full size, every 4th on a short run
 * (16 and 4 times per thread). */
static int per_thread = PER_THREAD;
static int churn_every = 25;

static void choose_size(void)
{
	per_thread = (int)kt_test_scale(PER_THREAD, PER_THREAD_RADOS);
	churn_every = per_thread == PER_THREAD ? 25 : 4;
}

typedef struct worker {
	kt_store *store;
	pthread_barrier_t *start;
	int n;                 /* thread number */
	int errors;            /* unexpected results */
	char first_error[256]; /* the first of them, for the report */
	unsigned char acked[PER_THREAD]; /* put of item i returned 0 */
	int exclusive_wins;    /* EXCL creations of /race/excl-* won */
} worker;

static void note(worker *w, const char *what, int rc)
{
	if (w->errors++ == 0)
		snprintf(w->first_error, sizeof(w->first_error),
			 "thread %d: %s: %d (%s)", w->n, what, rc,
			 kt_errmsg());
}

/* Only distinct items in one shared directory. */
static void *create_items(void *arg)
{
	worker *w = arg;
	char path[64];
	int i, rc;

	pthread_barrier_wait(w->start);
	for (i = 0; i < per_thread; i++) {
		snprintf(path, sizeof(path), "/shared/t%d-%04d", w->n, i);
		rc = kt_put(w->store, path, path, strlen(path), NULL);
		if (rc == 0)
			w->acked[i] = 1;
		else
			note(w, path, rc);
	}
	return NULL;
}

/* Distinct items in the shared directory, mixed with operations on paths
 * that other threads touch too: mkdir -p of shared directories, puts that
 * create shared ancestors, overwrites of one shared item, deletes of own
 * items in shared directories, EXCL races and recursive deletes that race
 * with creations below them. */
static void *mixed(void *arg)
{
	worker *w = arg;
	kt_create_options parents = KT_CREATE_OPTIONS_INIT;
	kt_create_options excl = KT_CREATE_OPTIONS_INIT;
	char path[96];
	int i, rc;

	parents.flags = KT_CREATE_PARENTS;
	excl.flags = KT_CREATE_EXCL;
	pthread_barrier_wait(w->start);
	for (i = 0; i < per_thread; i++) {
		int k = i % NSHARED_DIRS;

		snprintf(path, sizeof(path), "/shared/t%d-%04d", w->n, i);
		rc = kt_put(w->store, path, path, strlen(path), NULL);
		if (rc == 0)
			w->acked[i] = 1;
		else
			note(w, path, rc);

		snprintf(path, sizeof(path), "/ov/dir-%d/sub", k);
		rc = kt_mkdir(w->store, path, &parents);
		if (rc != 0)
			note(w, path, rc);

		snprintf(path, sizeof(path), "/ov/dir-%d/t%d-%d", k, w->n, i);
		rc = kt_put(w->store, path, "x", 1, NULL);
		if (rc != 0)
			note(w, path, rc);
		if (i % 2 == 1) {
			rc = kt_delete(w->store, path, 0);
			if (rc != 0)
				note(w, path, rc);
		}

		rc = kt_put(w->store, "/ov/common", &w->n, sizeof(w->n), NULL);
		if (rc != 0)
			note(w, "/ov/common", rc);

		snprintf(path, sizeof(path), "/race/excl-%d", i);
		rc = kt_put(w->store, path, &w->n, sizeof(w->n), &excl);
		if (rc == 0)
			w->exclusive_wins++;
		else if (rc != KT_EEXISTS)
			note(w, path, rc);

		if (i % churn_every == 0) {
			rc = kt_delete(w->store, "/churn",
				       KT_DELETE_RECURSIVE);
			if (rc != 0 && rc != KT_ENOTFOUND)
				note(w, "delete /churn", rc);
		}
		snprintf(path, sizeof(path), "/churn/a%d/b/c%d", w->n, i);
		rc = kt_put(w->store, path, "c", 1, NULL);
		if (rc != 0)
			note(w, path, rc);
	}
	return NULL;
}

static void run(kt_store *s, void *(*fn)(void *), worker *w)
{
	pthread_t th[NTHREADS];
	pthread_barrier_t start;
	int i;

	assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
	for (i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].store = s;
		w[i].start = &start;
		w[i].n = i;
		assert_int_equal(pthread_create(&th[i], NULL, fn, &w[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&start);
	for (i = 0; i < NTHREADS; i++)
		if (w[i].errors != 0)
			fail_msg("%d unexpected results; first: %s",
				 w[i].errors, w[i].first_error);
}

/* Assert that every acknowledged item is listed in /shared, exactly once
 * and in order, and readable with its value. */
static void assert_all_listed(kt_store *s, const worker *w)
{
	kt_iter *it = NULL;
	const kt_entry *e = NULL;
	char want[64], path[80];
	int t, i, rc;
	size_t n = 0, acked = 0;

	for (t = 0; t < NTHREADS; t++)
		for (i = 0; i < per_thread; i++)
			acked += w[t].acked[i];
	assert_int_equal(acked, NTHREADS * per_thread);

	ok(kt_iter_new(&it, s, "/shared", NULL));
	/* Names "t<thread>-<i>" list in the order of the loops below. */
	for (t = 0; t < NTHREADS; t++) {
		for (i = 0; i < per_thread; i++) {
			snprintf(want, sizeof(want), "t%d-%04d", t, i);
			rc = kt_iter_next(&e, it);
			if (rc != 0)
				fail_msg("listing ended (%d) before '%s'", rc,
					 want);
			if (strcmp(e->name, want) != 0)
				fail_msg("listed '%s' where '%s' belongs",
					 e->name, want);
			assert_int_equal(e->kind, KT_KIND_ITEM);
			n++;
		}
	}
	assert_int_equal(kt_iter_next(&e, it), KT_ITEROVER);
	kt_iter_free(it);
	assert_int_equal(n, acked);

	for (t = 0; t < NTHREADS; t++) {
		void *v = NULL;
		size_t len = 0;

		snprintf(path, sizeof(path), "/shared/t%d-%04d", t,
			 per_thread - 1);
		ok(kt_get(&v, &len, s, path));
		assert_int_equal(len, strlen(path));
		assert_memory_equal(v, path, len);
		kt_free(v);
	}
}

static void assert_clean(kt_store *s)
{
	size_t n = 99;
	int rc = kt_check(&n, s, NULL);

	if (rc != 0)
		fail_msg("kt_check: %d (%s), %zu violations", rc, kt_errmsg(),
			 n);
	assert_int_equal(n, 0);
}

static size_t count_children(kt_store *s, const char *path)
{
	kt_iter *it = NULL;
	const kt_entry *e = NULL;
	size_t n = 0;
	int rc;

	ok(kt_iter_new(&it, s, path, NULL));
	while ((rc = kt_iter_next(&e, it)) == 0)
		n++;
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	return n;
}

static void test_thread__same_dir_no_lost_rows(void **state)
{
	kt_store *s = store_of(state);
	worker w[NTHREADS];

	choose_size();
	ok(kt_mkdir(s, "/shared", NULL));
	run(s, create_items, w);
	assert_all_listed(s, w);
	assert_clean(s);
	kt_assert_rejected(s, kt_delete(s, "/shared", 0), KT_ENOTEMPTY,
			   "/shared");
	/* And from disk, not only from memory. */
	kt_test_reopen(*state);
	s = store_of(state);
	assert_all_listed(s, w);
	assert_clean(s);
}

/* The shared directory is made by the threads' puts, not beforehand. */
static void test_thread__mixed_overlapping_ops(void **state)
{
	kt_store *s = store_of(state);
	worker w[NTHREADS];
	kt_statbuf st;
	char path[64];
	int t, k, wins = 0;

	choose_size();
	run(s, mixed, w);
	assert_all_listed(s, w);

	/* Each shared dir: its "sub" plus the items with an even i. */
	for (k = 0; k < NSHARED_DIRS; k++) {
		size_t want = 1;
		int i;

		for (i = 0; i < per_thread; i++)
			if (i % NSHARED_DIRS == k && i % 2 == 0)
				want += NTHREADS;
		snprintf(path, sizeof(path), "/ov/dir-%d", k);
		assert_int_equal(count_children(s, path), want);
		ok(kt_lstat(&st, s, path));
		assert_int_equal(st.nsubdirs, 1);
	}
	ok(kt_lstat(&st, s, "/ov"));
	assert_int_equal(st.nsubdirs, NSHARED_DIRS);
	assert_int_equal(count_children(s, "/ov"), NSHARED_DIRS + 1);

	/* Each EXCL creation was won by exactly one thread. */
	for (t = 0; t < NTHREADS; t++)
		wins += w[t].exclusive_wins;
	assert_int_equal(wins, per_thread);
	assert_int_equal(count_children(s, "/race"), per_thread);
	assert_clean(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup,         \
						kt_test_teardown)
		T(test_thread__same_dir_no_lost_rows),
		T(test_thread__mixed_overlapping_ops),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
