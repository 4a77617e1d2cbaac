/*
 * mp.c - kt_bench_mp, the cost of several processes on one store
 * (docs/CONCURRENCY.md): what a call costs a process that reaches the
 * store through the holder, against the same call in the holder, and how
 * many puts per second 1, 2 and 4 writer processes get together.
 *
 *   kt_bench_mp [-d DIR] [-r REPS] [-q]
 *
 * 1. Through the holder.  A forked holder makes a store of 1000 items of
 *    100 bytes (/d/iJ) and a directory of 100 entries (/list), and a
 *    forked client opens it through the holder.  Both run the same timed
 *    blocks, alternating (holder, client, holder, ...), so that a change
 *    in the machine's load hits both alike: random gets, puts (a new
 *    value into an existing item), stats, and listings of /list.  The
 *    median of REPS blocks per side is reported, and the ratio client /
 *    holder.  For scale, the same run times a bare round trip (32 bytes
 *    over a Unix socket to a process that echoes them), the least any
 *    call through the holder can cost, and gives each call in those.
 *
 * 2. Writers.  1, 2 and 4 processes open one store (the first holds it,
 *    the others connect) and, started together, each puts its own items:
 *    either under a directory of its own (/wK/iJ, disjoint) or all in one
 *    directory (/shared/wK-J, where their commits guard the same parent).
 *    Reported: puts per second of all writers together (from the start
 *    signal to the last writer's end; median of REPS runs), and the ratio
 *    to one writer.
 *
 * Prints markdown tables.  -q is a smoke run (fewer calls and
 * repetitions); its numbers mean little.  Nothing here asserts a timing.
 * The parent never opens the store: a process that forks after LevelDB
 * started its compaction thread passes on a thread that is not there.
 */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keytree.h"

#define NITEMS 1000
#define NLIST 100
#define VLEN 100
#define MAXREPS 15
#define MAXW 4

enum { OP_GET, OP_PUT, OP_STAT, OP_LIST, NOPS };
static const char *const op_names[NOPS] = {"get", "put", "stat",
					   "list 100 entries"};
static long op_count[NOPS] = {4000, 1000, 4000, 200};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "kt_bench_mp: %s: %s\n", what, kt_errmsg());
	_exit(1);
}

static int rm_cb(const char *p, const struct stat *sb, int type,
		 struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One timed block of @p op on @p st; its seconds. */
static double run_block(kt_store *st, int op, uint64_t *rs)
{
	unsigned char val[VLEN];
	char path[64];
	double t0 = now();
	long i;

	memset(val, 'v', sizeof(val));
	for (i = 0; i < op_count[op]; i++) {
		kt_statbuf sb;
		kt_iter *it = NULL;
		const kt_entry *e;
		void *v = NULL;
		size_t len = 0;
		int rc, n = 0;

		*rs = *rs * 6364136223846793005ull + 1442695040888963407ull;
		snprintf(path, sizeof(path), "/d/i%d",
			 (int)((*rs >> 33) % NITEMS));
		switch (op) {
		case OP_GET:
			if (kt_get(&v, &len, st, path) != 0)
				die("get");
			kt_free(v);
			break;
		case OP_PUT:
			val[0] = (unsigned char)i;
			if (kt_put(st, path, val, VLEN, NULL) != 0)
				die("put");
			break;
		case OP_STAT:
			if (kt_stat(&sb, st, path) != 0)
				die("stat");
			break;
		default:
			if (kt_iter_new(&it, st, "/list", NULL) != 0)
				die("list");
			while ((rc = kt_iter_next(&e, it)) == 0)
				n++;
			if (rc != KT_ITEROVER || n != NLIST)
				die("list");
			kt_iter_free(it);
		}
	}
	return now() - t0;
}

/* A process that obeys one-byte commands: an op number runs a block and
 * answers its seconds; the end of the pipe closes the store. */
static pid_t start_worker(const char *dir, int fill, int *cmd, int *ans)
{
	int down[2], up[2];
	pid_t pid;

	if (pipe(down) != 0 || pipe(up) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		kt_options o = KT_OPTIONS_INIT;
		kt_store *st = NULL;
		unsigned char val[VLEN];
		uint64_t rs = (uint64_t)getpid();
		double secs = 0;
		char c, path[64];
		int i;

		close(down[1]);
		close(up[0]);
		o.create_if_missing = fill;
		if (kt_open(&st, dir, &o) != 0)
			die("open");
		memset(val, 'v', sizeof(val));
		for (i = 0; fill && i < NITEMS; i++) {
			snprintf(path, sizeof(path), "/d/i%d", i);
			if (kt_put(st, path, val, VLEN, NULL) != 0)
				die("fill");
		}
		for (i = 0; fill && i < NLIST; i++) {
			snprintf(path, sizeof(path), "/list/e%03d", i);
			if (kt_put(st, path, val, 10, NULL) != 0)
				die("fill");
		}
		if (write(up[1], &secs, sizeof(secs)) != sizeof(secs))
			_exit(1);
		while (read(down[0], &c, 1) == 1) {
			secs = run_block(st, c, &rs);
			if (write(up[1], &secs, sizeof(secs)) != sizeof(secs))
				_exit(1);
		}
		kt_close(st);
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	*cmd = down[1];
	*ans = up[0];
	return pid;
}

static double ask(int cmd, int ans, int op)
{
	char c = (char)op;
	double secs = -1;

	if (write(cmd, &c, 1) != 1 || read(ans, &secs, sizeof(secs)) !=
					      sizeof(secs)) {
		fprintf(stderr, "kt_bench_mp: a worker died\n");
		exit(1);
	}
	return secs;
}

/* The floor of any call through the holder: one round trip of a small
 * message over a Unix stream socket to another process that answers it
 * at once.  Seconds per round trip over @p n of them. */
static double bare_round_trips(int fd, long n)
{
	char m[32];
	double t0 = now();
	long i;

	memset(m, 'r', sizeof(m));
	for (i = 0; i < n; i++)
		if (write(fd, m, sizeof(m)) != sizeof(m) ||
		    read(fd, m, sizeof(m)) != sizeof(m)) {
			fprintf(stderr, "kt_bench_mp: echo failed\n");
			exit(1);
		}
	return (now() - t0) / n;
}

static pid_t start_echo(int *fd)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char m[32];
		ssize_t got;

		close(sv[0]);
		while ((got = read(sv[1], m, sizeof(m))) > 0)
			if (write(sv[1], m, (size_t)got) != got)
				_exit(1);
		_exit(0);
	}
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

static void bench_remote(const char *dir, int reps)
{
	double t[2][NOPS][MAXREPS], rt[MAXREPS], secs, floor;
	int cmd[2], ans[2], r, op, w, echo = -1;
	pid_t pid[2], epid;

	for (w = 0; w < 2; w++) {
		pid[w] = start_worker(dir, w == 0, &cmd[w], &ans[w]);
		if (pid[w] < 0 || read(ans[w], &secs, sizeof(secs)) !=
					  sizeof(secs)) {
			fprintf(stderr, "kt_bench_mp: no worker\n");
			exit(1);
		}
	}
	epid = start_echo(&echo);
	if (epid < 0)
		exit(1);
	for (op = 0; op < NOPS; op++) /* warm both up */
		for (w = 0; w < 2; w++)
			ask(cmd[w], ans[w], op);
	for (r = 0; r < reps; r++) {
		rt[r] = bare_round_trips(echo, op_count[OP_GET]);
		for (op = 0; op < NOPS; op++)
			for (w = 0; w < 2; w++) {
				int which = (r + op) % 2 ? 1 - w : w;

				t[which][op][r] = ask(cmd[which], ans[which],
						      op) / op_count[op];
			}
	}
	close(echo);
	waitpid(epid, NULL, 0);
	floor = median(rt, reps);
	printf("| call (median of %d blocks) | in the holder | through the "
	       "holder | ratio | in bare round trips |\n"
	       "|---|---|---|---|---|\n", reps);
	for (op = 0; op < NOPS; op++) {
		double a = median(t[0][op], reps), b = median(t[1][op], reps);

		printf("| %s | %.1f µs | %.1f µs | %.2f× | %.1f |\n",
		       op_names[op], a * 1e6, b * 1e6, b / a, b / floor);
	}
	printf("| bare round trip (socket, 32 bytes) | | %.1f µs | | 1 |\n",
	       floor * 1e6);
	for (w = 1; w >= 0; w--) { /* the client first, then the holder */
		close(cmd[w]);
		close(ans[w]);
		waitpid(pid[w], NULL, 0);
	}
}

/* @p nw writers each putting @p nputs items; the seconds from the start
 * signal to the last one's end. */
static double writers_run(const char *dir, int nw, long nputs, int shared)
{
	int go[2], done[2], rel[2], w;
	pid_t pid[MAXW];
	double t0, t1;
	char c;

	if (pipe(go) != 0 || pipe(done) != 0 || pipe(rel) != 0)
		exit(1);
	for (w = 0; w < nw; w++) {
		pid[w] = fork();
		if (pid[w] == 0) {
			kt_options o = KT_OPTIONS_INIT;
			kt_store *st = NULL;
			char val[VLEN], path[64];
			long j;

			close(go[1]);
			close(done[0]);
			close(rel[1]);
			o.create_if_missing = 1;
			if (kt_open(&st, dir, &o) != 0)
				die("open");
			c = 'o';
			if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) !=
							      0)
				_exit(1);
			memset(val, 'w', sizeof(val));
			for (j = 0; j < nputs; j++) {
				if (shared)
					snprintf(path, sizeof(path),
						 "/shared/w%d-%ld", w, j);
				else
					snprintf(path, sizeof(path),
						 "/w%d/i%ld", w, j);
				if (kt_put(st, path, val, VLEN, NULL) != 0)
					die("put");
			}
			c = 'd';
			if (write(done[1], &c, 1) != 1)
				_exit(1);
			/* The holder stays until every writer is done. */
			while (read(rel[0], &c, 1) > 0)
				;
			kt_close(st);
			_exit(0);
		}
		/* The first one opens alone, so it holds. */
		if (read(done[0], &c, 1) != 1)
			exit(1);
	}
	close(go[0]);
	close(done[1]);
	t0 = now();
	close(go[1]);
	for (w = 0; w < nw; w++)
		if (read(done[0], &c, 1) != 1 || c != 'd') {
			fprintf(stderr, "kt_bench_mp: a writer failed\n");
			exit(1);
		}
	t1 = now();
	close(done[0]);
	close(rel[0]);
	close(rel[1]);
	for (w = nw - 1; w >= 0; w--)
		waitpid(pid[w], NULL, 0);
	return t1 - t0;
}

static void bench_writers(const char *base, int reps, long nputs)
{
	static const int counts[] = {1, 2, 4};
	double rate[2][3], t[MAXREPS];
	char dir[600];
	int shared, i, r, run = 0;

	for (shared = 0; shared < 2; shared++)
		for (i = 0; i < 3; i++) {
			for (r = 0; r < reps; r++) {
				snprintf(dir, sizeof(dir), "%s/w%d", base,
					 run++);
				t[r] = writers_run(dir, counts[i], nputs,
						   shared);
				nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
			}
			rate[shared][i] = counts[i] * nputs / median(t, reps);
		}
	printf("\n| writers (%ld puts each, median of %d runs) | disjoint "
	       "dirs, puts/s | vs 1 | one shared dir, puts/s | vs 1 |\n"
	       "|---|---|---|---|---|\n", nputs, reps);
	for (i = 0; i < 3; i++)
		printf("| %d | %.0f | %.2f× | %.0f | %.2f× |\n", counts[i],
		       rate[0][i], rate[0][i] / rate[0][0], rate[1][i],
		       rate[1][i] / rate[1][0]);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char base[512], dir[600];
	int opt, reps = 7, quick = 0, op;
	long nputs = 2000;

	snprintf(base, sizeof(base), "%s/kt-bench-mp-XXXXXX",
		 tmp ? tmp : "/tmp");
	while ((opt = getopt(argc, argv, "d:r:q")) != -1) {
		switch (opt) {
		case 'd':
			snprintf(base, sizeof(base), "%s/kt-bench-mp-XXXXXX",
				 optarg);
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 'q':
			quick = 1;
			break;
		default:
			fprintf(stderr,
				"usage: kt_bench_mp [-d DIR] [-r REPS] [-q]\n");
			return 2;
		}
	}
	if (quick) {
		reps = 3;
		nputs = 200;
		for (op = 0; op < NOPS; op++)
			op_count[op] /= 10;
	}
	if (reps < 1 || reps > MAXREPS) {
		fprintf(stderr, "kt_bench_mp: -r must be 1 to %d, not %d\n",
			MAXREPS, reps);
		return 2;
	}
	if (mkdtemp(base) == NULL) {
		fprintf(stderr, "kt_bench_mp: %s: %s\n", base,
			strerror(errno));
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/calls", base);
	bench_remote(dir, reps);
	bench_writers(base, reps, nputs);
	nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
