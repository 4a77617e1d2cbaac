/*
 * test_lock.c - advisory locks kept in the store (kt_lock_set,
 * kt_lock_test).
 *
 * On every engine: the checks of the arguments, KT_ENOTSUP where the
 * engine keeps no locks, and the range arithmetic of one owner's locks
 * (lock.c) against a model that keeps a type per byte.  On RADOS
 * (KEYTREE_TEST_ENGINE=rados): two handles, each its own cluster client,
 * as two hosts are; and a client that is killed, or paused, while it
 * holds a lock: another takes the lock over after fencing it, and the
 * paused one, woken, can write nothing.  The dying client is this program
 * run again (--hold), a process of its own: librados does not survive a
 * fork.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "kt_test.h"
#include "rows.h"

#define RADOS_ONLY()                                                      \
	do {                                                              \
		if (!kt_test_on_rados()) {                                \
			fprintf(stderr, "skipped: locks are kept in the " \
				"store only on RADOS "                    \
				"(KEYTREE_TEST_ENGINE=rados)\n");         \
			skip();                                           \
		}                                                         \
	} while (0)

static kt_lock lock_of(int type, uint64_t start, uint64_t end,
		       uint64_t owner)
{
	kt_lock l;

	memset(&l, 0, sizeof(l));
	l.type = type;
	l.start = start;
	l.end = end;
	l.owner = owner;
	l.pid = (uint32_t)getpid();
	return l;
}

static kt_store *open_store(const char *loc)
{
	kt_store *st = NULL;
	int rc = kt_open(&st, loc, NULL);

	if (rc != 0)
		fail_msg("kt_open %s: %d (%s)", loc, rc, kt_errmsg());
	return st;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- Every engine ------------------------------------------------------ */

static void test_lock__arguments_checked(void **state)
{
	kt_test_fixture *f = *state;
	kt_lock l = lock_of(3, 0, 9, 1);

	assert_int_equal(kt_lock_set(f->store, 1, &l, 0), KT_EINVAL);
	assert_non_null(strstr(kt_errmsg(), "lock type 3"));
	l = lock_of(KT_LOCK_EXCL, 10, 9, 1);
	assert_int_equal(kt_lock_set(f->store, 1, &l, 0), KT_EINVAL);
	assert_non_null(strstr(kt_errmsg(), "ends (9) before it starts (10)"));
	assert_int_equal(kt_lock_test(f->store, 1, &l, 0), KT_EINVAL);
	/* A whole-node lock has no range to get wrong. */
	assert_int_not_equal(kt_lock_set(f->store, 1, &l, KT_LOCK_WHOLE),
			     KT_EINVAL);
	l = lock_of(KT_LOCK_EXCL, 0, 9, 1);
	assert_int_equal(kt_lock_set(f->store, 1, &l, 0x10), KT_EINVAL);
	assert_int_equal(kt_lock_set(NULL, 1, &l, 0), KT_EINVAL);
	assert_int_equal(kt_lock_set(f->store, 1, NULL, 0), KT_EINVAL);
	if (!kt_test_on_rados()) {
		assert_int_equal(kt_lock_set(f->store, 1, &l, 0), KT_ENOTSUP);
		assert_non_null(strstr(kt_errmsg(), "need a RADOS tree"));
		assert_int_equal(kt_lock_test(f->store, 1, &l, 0), KT_ENOTSUP);
	} else {
		l = lock_of(KT_LOCK_UNLOCK, 0, UINT64_MAX, 1);
		assert_int_equal(kt_lock_set(f->store, 1, &l, KT_LOCK_WHOLE),
				 0);
	}
}

/* One owner's locks, as a type per byte of a 64-byte file (0: none). */
#define SPAN 64

static void model_apply(unsigned char *m, int type, unsigned s, unsigned e)
{
	unsigned i;
	for (i = s; i <= e && i < SPAN; i++)
		m[i] = (unsigned char)type;
}

/* The entry's ranges must be sorted, disjoint, merged where they touch
 * with one type, and cover exactly the model's bytes. */
static void check_against(const kt__lkent *e, const unsigned char *m)
{
	unsigned char got[SPAN];
	size_t i;
	uint64_t b;

	memset(got, 0, sizeof(got));
	for (i = 0; i < e->n; i++) {
		const kt__lkrange *r = &e->r[i];
		assert_true(r->start <= r->end);
		assert_true(r->type == KT_LOCK_SHARED ||
			    r->type == KT_LOCK_EXCL);
		if (i > 0) {
			assert_true(e->r[i - 1].end < r->start);
			assert_false(e->r[i - 1].end + 1 == r->start &&
				     e->r[i - 1].type == r->type);
		}
		assert_true(r->end < SPAN);
		for (b = r->start; b <= r->end; b++)
			got[b] = (unsigned char)r->type;
	}
	assert_memory_equal(got, m, SPAN);
}

static void test_lock__ranges_match_model(void **state)
{
	kt__lkent e[3];
	unsigned char m[3][SPAN];
	unsigned int seed = 12345, step;
	int o;

	(void)state;
	memset(e, 0, sizeof(e));
	memset(m, 0, sizeof(m));
	for (step = 0; step < 20000; step++) {
		unsigned s, len, x, b;
		int type, want = 0;
		const kt__lkrange *c;

		o = (int)(rand_r(&seed) % 3);
		s = (unsigned)rand_r(&seed) % SPAN;
		len = 1 + (unsigned)rand_r(&seed) % 12;
		if (s + len > SPAN)
			len = SPAN - s;
		type = rand_r(&seed) % 3;
		/* Would another owner's locks be in the way? */
		for (x = 0; x < 3; x++) {
			if ((int)x == o)
				continue;
			for (b = s; b < s + len && type != 0; b++)
				if (m[x][b] != 0 &&
				    (type == KT_LOCK_EXCL ||
				     m[x][b] == KT_LOCK_EXCL))
					want = 1;
			c = kt__lk_conflict(&e[x], type, s, s + len - 1);
			if (c != NULL) {
				assert_true(c->start <= s + len - 1 &&
					    s <= c->end);
				assert_true(type == KT_LOCK_EXCL ||
					    c->type == KT_LOCK_EXCL);
			}
			if (c != NULL)
				want |= 2;
		}
		/* The model and the entries agree on whether it conflicts. */
		assert_true(want == 0 || want == 3);
		if (want)
			continue;
		assert_int_equal(kt__lk_apply(&e[o], type, s, s + len - 1), 0);
		model_apply(m[o], type, s, s + len - 1);
		check_against(&e[o], m[o]);
	}
	/* The encoding keeps an entry as it is. */
	for (o = 0; o < 3; o++) {
		kt__buf v = {0};
		kt__lkent d;
		char key[KT__LKKEY_MAX];
		e[o].inst = 4100 + (uint64_t)o;
		e[o].owner = 0xfeedfacecafebeefULL;
		e[o].whole = o == 1;
		e[o].pid = 77;
		snprintf(e[o].addr, sizeof(e[o].addr), "127.0.0.1:0/%d", o);
		kt__lk_key(key, e[o].inst, e[o].owner, e[o].whole);
		assert_int_equal(kt__lk_enc(&v, &e[o]), 0);
		assert_int_equal(kt__lk_dec(&d, key, strlen(key), v.p, v.len,
					    "t"), 0);
		assert_true(d.inst == e[o].inst && d.owner == e[o].owner &&
			    d.whole == e[o].whole && d.pid == 77);
		assert_string_equal(d.addr, e[o].addr);
		check_against(&d, m[o]);
		kt__lk_free(&d);
		/* A cut value does not decode, and says where it was. */
		assert_int_equal(kt__lk_dec(&d, key, strlen(key), v.p,
					    v.len - 1, "T!lk.x"),
				 KT_ECORRUPT);
		assert_non_null(strstr(kt_errmsg(), "T!lk.x"));
		kt__lk_free(&d);
		kt__buf_free(&v);
		kt__lk_free(&e[o]);
	}
}

/* The cases POSIX spells out: a lock over the middle of another splits
 * it, a new type replaces the old under it, unlocking past the end. */
static void test_lock__split_and_merge(void **state)
{
	kt__lkent e;

	(void)state;
	memset(&e, 0, sizeof(e));
	assert_int_equal(kt__lk_apply(&e, KT_LOCK_SHARED, 0, UINT64_MAX), 0);
	assert_int_equal(kt__lk_apply(&e, KT_LOCK_EXCL, 10, 19), 0);
	assert_int_equal(e.n, 3);
	assert_true(e.r[0].end == 9 && e.r[1].start == 10 &&
		    e.r[1].end == 19 && e.r[2].start == 20 &&
		    e.r[2].end == UINT64_MAX);
	assert_int_equal(kt__lk_apply(&e, KT_LOCK_SHARED, 10, 19), 0);
	assert_int_equal(e.n, 1);
	assert_true(e.r[0].start == 0 && e.r[0].end == UINT64_MAX);
	assert_int_equal(kt__lk_apply(&e, KT_LOCK_UNLOCK, 5, UINT64_MAX), 0);
	assert_int_equal(e.n, 1);
	assert_true(e.r[0].end == 4);
	assert_int_equal(kt__lk_apply(&e, KT_LOCK_UNLOCK, 0, UINT64_MAX), 0);
	assert_int_equal(e.n, 0);
	kt__lk_free(&e);
}

/* ---- RADOS: two clients ------------------------------------------------ */

static void test_lock__two_clients_exclude(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *b;
	kt_lock l, t;

	RADOS_ONLY();
	b = open_store(f->path);
	l = lock_of(KT_LOCK_EXCL, 0, 99, 1);
	assert_int_equal(kt_lock_set(f->store, 42, &l, 0), 0);
	/* b is in the way of neither a's owner nor of bytes past 99. */
	l = lock_of(KT_LOCK_SHARED, 50, 60, 1);
	assert_int_equal(kt_lock_set(b, 42, &l, 0), KT_ELOCKED);
	assert_non_null(strstr(kt_errmsg(), "bytes 0 to 99"));
	t = l;
	assert_int_equal(kt_lock_test(b, 42, &t, 0), 0);
	assert_int_equal(t.type, KT_LOCK_EXCL);
	assert_true(t.start == 0 && t.end == 99 && t.owner == 1);
	assert_int_equal(t.pid, (uint32_t)getpid());
	assert_int_equal(t.here, 0);
	l = lock_of(KT_LOCK_EXCL, 100, 200, 1);
	assert_int_equal(kt_lock_set(b, 42, &l, 0), 0);
	/* Another owner of a's own handle is in the way too, and "here". */
	t = lock_of(KT_LOCK_SHARED, 0, 0, 2);
	assert_int_equal(kt_lock_test(f->store, 42, &t, 0), 0);
	assert_int_equal(t.type, KT_LOCK_EXCL);
	assert_int_equal(t.here, 1);
	/* Another node is free. */
	l = lock_of(KT_LOCK_EXCL, 0, 99, 1);
	assert_int_equal(kt_lock_set(b, 43, &l, 0), 0);
	/* a drops the middle: b may take it, not more. */
	l = lock_of(KT_LOCK_UNLOCK, 40, 59, 1);
	assert_int_equal(kt_lock_set(f->store, 42, &l, 0), 0);
	l = lock_of(KT_LOCK_EXCL, 40, 59, 1);
	assert_int_equal(kt_lock_set(b, 42, &l, 0), 0);
	l = lock_of(KT_LOCK_EXCL, 39, 40, 1);
	assert_int_equal(kt_lock_set(b, 42, &l, 0), KT_ELOCKED);
	/* A failed request changes nothing of b's: 40..59 is still b's. */
	t = lock_of(KT_LOCK_SHARED, 45, 45, 5);
	assert_int_equal(kt_lock_test(f->store, 42, &t, 0), 0);
	assert_int_equal(t.type, KT_LOCK_EXCL);
	assert_true(t.start == 40 && t.end == 59 && t.here == 0);
	kt_close(b);
}

static void test_lock__shared_share(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *b;
	kt_lock l;

	RADOS_ONLY();
	b = open_store(f->path);
	l = lock_of(KT_LOCK_SHARED, 0, UINT64_MAX, 9);
	assert_int_equal(kt_lock_set(f->store, 7, &l, 0), 0);
	assert_int_equal(kt_lock_set(b, 7, &l, 0), 0);
	/* Neither can make its shared lock exclusive while the other
	 * shares; once one lets go, the other can. */
	l.type = KT_LOCK_EXCL;
	assert_int_equal(kt_lock_set(b, 7, &l, 0), KT_ELOCKED);
	l.type = KT_LOCK_UNLOCK;
	assert_int_equal(kt_lock_set(f->store, 7, &l, 0), 0);
	l.type = KT_LOCK_EXCL;
	assert_int_equal(kt_lock_set(b, 7, &l, 0), 0);
	kt_close(b);
}

static void test_lock__whole_apart_from_ranges(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *b;
	kt_lock l;

	RADOS_ONLY();
	b = open_store(f->path);
	l = lock_of(KT_LOCK_EXCL, 0, 0, 3);
	assert_int_equal(kt_lock_set(f->store, 5, &l, KT_LOCK_WHOLE), 0);
	/* flock and fcntl locks do not see each other, as on Linux. */
	l = lock_of(KT_LOCK_EXCL, 0, UINT64_MAX, 3);
	assert_int_equal(kt_lock_set(b, 5, &l, 0), 0);
	l = lock_of(KT_LOCK_SHARED, 0, 0, 3);
	assert_int_equal(kt_lock_set(b, 5, &l, KT_LOCK_WHOLE), KT_ELOCKED);
	kt_close(b);
}

static void test_lock__close_drops_locks(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *b;
	kt_lock l, t;

	RADOS_ONLY();
	b = open_store(f->path);
	l = lock_of(KT_LOCK_EXCL, 0, 0, 1);
	assert_int_equal(kt_lock_set(b, 11, &l, KT_LOCK_WHOLE), 0);
	l = lock_of(KT_LOCK_EXCL, 0, 10, 1);
	assert_int_equal(kt_lock_set(b, 12, &l, 0), 0);
	kt_close(b);
	t = lock_of(KT_LOCK_EXCL, 0, 0, 1);
	assert_int_equal(kt_lock_test(f->store, 11, &t, KT_LOCK_WHOLE), 0);
	assert_int_equal(t.type, KT_LOCK_UNLOCK);
	t = lock_of(KT_LOCK_EXCL, 0, 10, 1);
	assert_int_equal(kt_lock_test(f->store, 12, &t, 0), 0);
	assert_int_equal(t.type, KT_LOCK_UNLOCK);
}

/* ---- RADOS: a client that dies or stalls with a lock ------------------ */

typedef struct holder {
	pid_t pid;
	FILE *to, *from;
} holder;

/* Run this program again as a client that takes an exclusive whole-node
 * lock on node @p id, then waits for commands. */
static void holder_start(holder *h, const char *loc, uint64_t id)
{
	int in[2], out[2];
	char ids[32], line[256];

	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	snprintf(ids, sizeof(ids), "%llu", (unsigned long long)id);
	h->pid = fork();
	assert_true(h->pid >= 0);
	if (h->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl("/proc/self/exe", "test_lock", "--hold", loc, ids,
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	h->to = fdopen(in[1], "w");
	h->from = fdopen(out[0], "r");
	assert_non_null(fgets(line, sizeof(line), h->from));
	assert_string_equal(line, "held\n");
}

static void holder_end(holder *h)
{
	int status;

	kill(h->pid, SIGKILL);
	waitpid(h->pid, &status, 0);
	fclose(h->to);
	fclose(h->from);
}

/* The child: lock, say so, then "put" writes a node and says how. */
static int hold_main(const char *loc, const char *ids)
{
	kt_store *st = NULL;
	kt_lock l = lock_of(KT_LOCK_EXCL, 0, 0, 1);
	char line[64];
	int rc;

	if ((rc = kt_open(&st, loc, NULL)) != 0 ||
	    (rc = kt_lock_set(st, strtoull(ids, NULL, 10), &l,
			      KT_LOCK_WHOLE)) != 0) {
		printf("error %d %s\n", rc, kt_errmsg());
		return 1;
	}
	printf("held\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		rc = kt_put(st, "/after-wake", "x", 1, NULL);
		printf("put %d %s\n", rc, rc ? kt_errmsg() : "");
		fflush(stdout);
	}
	return 0;
}

/* Wait until @p st takes the whole-node lock on @p id (the holder is
 * dead or stalled): how long it took, in ms. */
static uint64_t take_over(kt_store *st, uint64_t id)
{
	kt_lock l = lock_of(KT_LOCK_EXCL, 0, 0, 1);
	uint64_t t0 = now_ms();
	int rc;

	while ((rc = kt_lock_set(st, id, &l, KT_LOCK_WHOLE)) == KT_ELOCKED) {
		assert_true(now_ms() - t0 < 60000);
		usleep(50000);
	}
	if (rc != 0)
		fail_msg("lock after the holder went: %d (%s)", rc,
			 kt_errmsg());
	return now_ms() - t0;
}

static void test_lock__killed_client_is_fenced(void **state)
{
	kt_test_fixture *f = *state;
	holder h;
	kt_lock t;
	uint64_t ms;

	RADOS_ONLY();
	holder_start(&h, f->path, 77);
	/* Alive: its lock is in the way, and stays so. */
	t = lock_of(KT_LOCK_SHARED, 0, 0, 1);
	assert_int_equal(kt_lock_test(f->store, 77, &t, KT_LOCK_WHOLE), 0);
	assert_int_equal(t.type, KT_LOCK_EXCL);
	assert_int_equal(t.pid, (uint32_t)h.pid);
	assert_int_equal(t.here, 0);
	t = lock_of(KT_LOCK_EXCL, 0, 0, 1);
	assert_int_equal(kt_lock_set(f->store, 77, &t, KT_LOCK_WHOLE),
			 KT_ELOCKED);
	kill(h.pid, SIGKILL);
	ms = take_over(f->store, 77);
	fprintf(stderr, "lock of a killed client taken over in %llu ms\n",
		(unsigned long long)ms);
	holder_end(&h);
}

static void test_lock__paused_client_is_fenced(void **state)
{
	kt_test_fixture *f = *state;
	holder h;
	char line[512];
	uint64_t ms;

	RADOS_ONLY();
	holder_start(&h, f->path, 78);
	/* Before the pause it writes as any client does. */
	fprintf(h.to, "put\n");
	fflush(h.to);
	assert_non_null(fgets(line, sizeof(line), h.from));
	assert_string_equal(line, "put 0 \n");
	kill(h.pid, SIGSTOP);
	ms = take_over(f->store, 78);
	fprintf(stderr, "lock of a paused client taken over in %llu ms\n",
		(unsigned long long)ms);
	/* Woken, it believes it holds the lock; the cluster refuses it. */
	kill(h.pid, SIGCONT);
	fprintf(h.to, "put\n");
	fflush(h.to);
	assert_non_null(fgets(line, sizeof(line), h.from));
	if (strncmp(line, "put -14 ", 8) != 0 || strstr(line, "fenced") == NULL)
		fail_msg("the fenced client wrote, or failed otherwise: %s",
			 line);
	holder_end(&h);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lock__arguments_checked,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test(test_lock__ranges_match_model),
		cmocka_unit_test(test_lock__split_and_merge),
		cmocka_unit_test_setup_teardown(test_lock__two_clients_exclude,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_lock__shared_share,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(
			test_lock__whole_apart_from_ranges, kt_test_setup,
			kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_lock__close_drops_locks,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(
			test_lock__killed_client_is_fenced, kt_test_setup,
			kt_test_teardown),
		cmocka_unit_test_setup_teardown(
			test_lock__paused_client_is_fenced, kt_test_setup,
			kt_test_teardown),
	};

	if (argc == 4 && strcmp(argv[1], "--hold") == 0)
		return hold_main(argv[2], argv[3]);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
