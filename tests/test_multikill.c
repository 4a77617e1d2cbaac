/*
 * test_multikill.c - kill -9 of a process in the middle of writes to a
 * store that several processes share, and what must hold afterwards.
 *
 * Every round forks a holder (it opens the store first, so it holds it)
 * and three clients (they open it through the holder); all four put items
 * of their own, /rR/wK/nJ for J = 0, 1, 2, ..., and report each put the
 * library acknowledged to the parent through a pipe, so the parent knows
 * every acknowledged write.  Then, after a random number of
 * acknowledgements, the parent sends SIGKILL:
 *
 *   to the holder: every client's next call fails with KT_EIO, at once
 *   (alarm() in each client turns a hang into a failure); the parent's
 *   kt_open then becomes the holder (a forked process reads the store
 *   through it), every acknowledged write of every process is there, and
 *   kt_check is clean;
 *
 *   to a client: the holder and the other clients go on to the end of
 *   their writes without an error; every acknowledged write, the killed
 *   client's included, is there, and kt_check is clean.
 *
 * Each kind is done for several rounds, killing at different points.
 * KT_MK_SEED=n in the environment replays a run.
 */
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "kt_test.h"

#define GUARD_SECONDS 60
#define NPROC 4       /* the holder (0) and three clients */
#define MAXPUTS 20000 /* a bound on each writer; the kill comes first */
#define CLIENT_PUTS 300 /* each writer's puts when a client is killed */
#define ROUNDS 3

/* What a writer reports: the J of an acknowledged put, or the error that
 * stopped it (ERR_BIT | -rc), or DONE after its last put. */
#define ERR_BIT 0x80000000u
#define DONE 0x40000000u

static unsigned int seed;

static void item_path(char *buf, size_t size, int round, int k, uint32_t j)
{
	snprintf(buf, size, "/r%d/w%d/n%u", round, k, (unsigned)j);
}

static void item_value(char *buf, size_t size, int round, int k, uint32_t j)
{
	snprintf(buf, size, "round %d writer %d put %u", round, k,
		 (unsigned)j);
}

/*
 * A writer: open the store, say so on @p ack (0), wait for @p go to close,
 * put up to @p nputs items reporting each on @p ack; on an error report
 * it and stop.  Then wait for @p release to close before closing the
 * store (the holder must outlive its clients).
 */
static void writer_main(const char *dir, int round, int k, uint32_t nputs,
			int go, int ack, int release)
{
	kt_store *st = NULL;
	uint32_t j, msg = 0;
	char path[64], val[64], c;

	alarm(GUARD_SECONDS);
	if (kt_open(&st, dir, NULL) != 0) {
		fprintf(stderr, "writer %d: kt_open: %s\n", k, kt_errmsg());
		_exit(10);
	}
	if (write(ack, &msg, sizeof(msg)) != sizeof(msg) ||
	    read(go, &c, 1) != 0)
		_exit(11);
	for (j = 0; j < nputs; j++) {
		int rc;

		item_path(path, sizeof(path), round, k, j);
		item_value(val, sizeof(val), round, k, j);
		rc = kt_put(st, path, val, strlen(val), NULL);
		msg = rc == 0 ? j : ERR_BIT | (uint32_t)-rc;
		if (rc != 0 && rc != KT_EIO)
			fprintf(stderr, "writer %d: put %s: %d (%s)\n", k,
				path, rc, kt_errmsg());
		if (write(ack, &msg, sizeof(msg)) != sizeof(msg))
			_exit(12);
		if (rc != 0)
			break;
	}
	if (j == nputs) {
		msg = DONE;
		if (write(ack, &msg, sizeof(msg)) != sizeof(msg))
			_exit(12);
	}
	while (read(release, &c, 1) > 0)
		;
	kt_close(st);
	_exit(0);
}

/* The processes of one round, as the parent sees them. */
typedef struct round_state {
	pid_t pid[NPROC];
	int ack[NPROC];     /* read end of each writer's reports */
	int acked[NPROC];   /* puts acknowledged so far */
	int error[NPROC];   /* the error that stopped it, or 0 */
	int done[NPROC];    /* reported DONE */
	int open[NPROC];    /* its report pipe is still open */
	int release;        /* write end: closed to let the writers exit */
} round_state;

static void start_round(round_state *rs, const char *dir, int round,
			uint32_t nputs)
{
	int go[2], rel[2], k, i;
	uint32_t msg;

	memset(rs, 0, sizeof(*rs));
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(rel), 0);
	for (k = 0; k < NPROC; k++) {
		int ack[2];

		assert_int_equal(pipe(ack), 0);
		rs->pid[k] = fork();
		assert_true(rs->pid[k] >= 0);
		if (rs->pid[k] == 0) {
			close(go[1]);
			close(rel[1]);
			close(ack[0]);
			for (i = 0; i < k; i++)
				close(rs->ack[i]);
			writer_main(dir, round, k, nputs, go[0], ack[1],
				    rel[0]);
		}
		close(ack[1]);
		rs->ack[k] = ack[0];
		rs->open[k] = 1;
		/* Writer 0 is open before any other starts: it holds. */
		assert_int_equal(read(rs->ack[k], &msg, sizeof(msg)),
				 sizeof(msg));
		assert_int_equal(msg, 0);
	}
	close(go[0]);
	close(rel[0]);
	rs->release = rel[1];
	close(go[1]);
}

/* Read the reports that are there (waiting for one if @p wait); 0 when
 * every pipe has reached its end. */
static int pump(round_state *rs, int wait)
{
	struct pollfd p[NPROC];
	int k, n = 0;

	for (k = 0; k < NPROC; k++) {
		p[k].fd = rs->open[k] ? rs->ack[k] : -1;
		p[k].events = POLLIN;
		n += rs->open[k];
	}
	if (n == 0)
		return 0;
	if (poll(p, NPROC, wait ? -1 : 0) < 0)
		fail_msg("poll: %s", strerror(errno));
	for (k = 0; k < NPROC; k++) {
		uint32_t msg;
		ssize_t got;

		if (!(p[k].revents & (POLLIN | POLLHUP)))
			continue;
		got = read(rs->ack[k], &msg, sizeof(msg));
		if (got == 0) {
			rs->open[k] = 0;
			close(rs->ack[k]);
			continue;
		}
		assert_int_equal(got, sizeof(msg));
		if (msg == DONE)
			rs->done[k] = 1;
		else if (msg & ERR_BIT)
			rs->error[k] = -(int)(msg & ~ERR_BIT);
		else if ((int)msg != rs->acked[k])
			fail_msg("writer %d reported put %u after %d", k,
				 (unsigned)msg, rs->acked[k]);
		else
			rs->acked[k]++;
	}
	return 1;
}

/* Wait for writer @p k; it must have exited with status 0. */
static void reap(round_state *rs, int k)
{
	int status;

	assert_int_equal(waitpid(rs->pid[k], &status, 0), rs->pid[k]);
	if (WIFSIGNALED(status))
		fail_msg("writer %d killed by signal %d%s (seed %u)", k,
			 WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? ": it hung" : "", seed);
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Every acknowledged put of the round is in the store, and it is clean. */
static void verify_round(kt_store *st, const round_state *rs, int round)
{
	char path[64], val[64];
	size_t bad = 99;
	int k, j;

	for (k = 0; k < NPROC; k++)
		for (j = 0; j < rs->acked[k]; j++) {
			void *v = NULL;
			size_t len = 0;
			int rc;

			item_path(path, sizeof(path), round, k, (uint32_t)j);
			item_value(val, sizeof(val), round, k, (uint32_t)j);
			rc = kt_get(&v, &len, st, path);
			if (rc != 0 || len != strlen(val) ||
			    memcmp(v, val, len) != 0)
				fail_msg("acknowledged put %s lost: rc %d "
					 "(%s) (seed %u)", path, rc,
					 rc ? kt_errmsg() : "other value",
					 seed);
			kt_free(v);
		}
	assert_int_equal(kt_check(&bad, st, NULL), 0);
	assert_int_equal(bad, 0);
}

/* Open the store through the holder a child of this process has, and
 * verify the round there. */
static void verify_through_holder(const char *dir, const round_state *rs,
				  int round)
{
	kt_store *st = NULL;

	if (kt_open(&st, dir, NULL) != 0)
		fail_msg("kt_open through the holder: %s", kt_errmsg());
	verify_round(st, rs, round);
	kt_close(st);
}

/* After the holder was killed: a fresh process opens the store, which
 * makes it the holder (no other process is left); the round is verified
 * through it. */
static void next_holder_check(const char *dir, const round_state *rs,
			      int round)
{
	int up[2], down[2], status;
	pid_t pid;
	char c = 0;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		kt_store *st = NULL;

		alarm(GUARD_SECONDS);
		close(up[0]);
		close(down[1]);
		c = kt_open(&st, dir, NULL) == 0 ? 'o' : 'e';
		if (c != 'o')
			fprintf(stderr, "next holder: kt_open: %s\n",
				kt_errmsg());
		if (write(up[1], &c, 1) != 1 || c != 'o')
			_exit(1);
		while (read(down[0], &c, 1) > 0)
			;
		kt_close(st);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &c, 1), 1);
	if (c != 'o')
		fail_msg("the next kt_open after the holder was killed "
			 "failed (seed %u)", seed);
	verify_through_holder(dir, rs, round);
	close(down[1]);
	close(up[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * This process never opens a store itself, only through a holder it
 * forked: LevelDB's default environment starts one compaction thread per
 * process, and a child forked after that thread started inherits the
 * flag "started" but not the thread, so a store it holds can never
 * compact and its kt_close() (or a write when the memory table is full)
 * waits forever.  So the store is made by a forked child, and every check
 * runs through a holder.
 */
static int setup(void **state)
{
	kt_test_fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	const char *env = getenv("KT_MK_SEED");
	pid_t pid;
	int status;

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/kt-test-XXXXXX",
		 tmp ? tmp : "/tmp");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/store", f->dir);
	*state = f;
	pid = fork();
	if (pid == 0) {
		kt_options o = KT_OPTIONS_INIT;
		kt_store *st = NULL;

		o.create_if_missing = 1;
		_exit(kt_open(&st, f->path, &o) == 0 ? (kt_close(st), 0) : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	seed = env ? (unsigned)strtoul(env, NULL, 10)
		   : (unsigned)time(NULL) ^ (unsigned)getpid();
	srand(seed);
	alarm(GUARD_SECONDS * 2);
	return 0;
}

static int teardown(void **state)
{
	alarm(0);
	return kt_test_teardown(state);
}

static void test_multikill__holder(void **state)
{
	kt_test_fixture *f = *state;
	round_state rs;
	int round, k, at;

	for (round = 0; round < ROUNDS; round++) {
		at = 1 + rand() % 200;
		start_round(&rs, f->path, round, MAXPUTS);
		/* Until every client has had @p at puts acknowledged. */
		for (;;) {
			for (k = 1; k < NPROC && rs.acked[k] >= at; k++)
				;
			if (k == NPROC)
				break;
			assert_true(pump(&rs, 1));
			for (k = 0; k < NPROC; k++)
				if (rs.error[k] || (k > 0 && rs.done[k]))
					fail_msg("writer %d stopped before the "
						 "kill: error %d", k,
						 rs.error[k]);
		}
		assert_int_equal(kill(rs.pid[0], SIGKILL), 0);
		close(rs.release); /* the clients exit once they failed */
		while (pump(&rs, 1))
			;
		for (k = 0; k < NPROC; k++) {
			int status;

			if (k == 0) {
				assert_int_equal(waitpid(rs.pid[0], &status,
							 0), rs.pid[0]);
				assert_true(WIFSIGNALED(status));
				continue;
			}
			reap(&rs, k);
			if (rs.error[k] != KT_EIO)
				fail_msg("client %d stopped with %d, not "
					 "KT_EIO, after %d puts (seed %u)", k,
					 rs.error[k], rs.acked[k], seed);
		}
		/* The next opener, a fresh process, becomes the holder; this
		 * process checks the store through it. */
		next_holder_check(f->path, &rs, round);
	}
}

static void test_multikill__client(void **state)
{
	kt_test_fixture *f = *state;
	round_state rs;
	int round, k, victim, at;

	for (round = 0; round < ROUNDS; round++) {
		victim = 1 + rand() % (NPROC - 1);
		at = 1 + rand() % (CLIENT_PUTS / 2);
		start_round(&rs, f->path, round, CLIENT_PUTS);
		while (rs.acked[victim] < at) {
			assert_true(pump(&rs, 1));
			for (k = 0; k < NPROC; k++)
				if (rs.error[k])
					fail_msg("writer %d: error %d", k,
						 rs.error[k]);
		}
		assert_int_equal(kill(rs.pid[victim], SIGKILL), 0);
		/* Everyone else gets to the end of its puts. */
		for (;;) {
			for (k = 0; k < NPROC && (k == victim || rs.done[k]);
			     k++)
				;
			if (k == NPROC)
				break;
			assert_true(pump(&rs, 1));
			for (k = 0; k < NPROC; k++)
				if (rs.error[k])
					fail_msg("writer %d failed with %d "
						 "after client %d was killed "
						 "(seed %u)", k, rs.error[k],
						 victim, seed);
		}
		/* The holder still serves: check through it. */
		verify_through_holder(f->path, &rs, round);
		close(rs.release);
		while (pump(&rs, 1))
			;
		for (k = 0; k < NPROC; k++) {
			int status;

			if (k != victim) {
				reap(&rs, k);
				continue;
			}
			assert_int_equal(waitpid(rs.pid[k], &status, 0),
					 rs.pid[k]);
			assert_true(WIFSIGNALED(status));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_multikill__holder),
		T(test_multikill__client),
#undef T
	};

	/* SIGPIPE stays at its default: the library must never raise it,
	 * whatever happens to a holder. */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
