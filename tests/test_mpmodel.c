/*
 * test_mpmodel.c - several processes on one store, checked against the
 * reference model replayed in commit order.
 *
 * N processes (2, 4 and 8) are forked; each opens the store itself (the
 * first becomes the holder, the others reach it through its socket) and
 * runs OPS operations from the model test's generator (tests/model.h: put,
 * mkdir, symlink, mknod, delete, rename, link, write, truncate, setattr,
 * attributes and batches, on the model's tiny name space, so processes
 * collide all the time).  Each process logs every operation, what it
 * returned and, when it committed, its place in the store's commit order
 * (kt__commit.applied, which the holder sends back with each commit).
 *
 * Then the parent replays every committed operation, in commit order, on
 * a fresh reference model.  Every public call is one atomic, serializable
 * step, so:
 *   - each committed operation succeeds in the model too, at its place in
 *     the order (the model gives the code the store gave: 0);
 *   - no two commits share a place, and only calls that returned 0
 *     committed;
 *   - the final store equals the model (every node, its kind, value,
 *     link target, attributes, link count, listing and id sharing, as the
 *     model test compares them) and kt_check finds nothing.
 * A call that failed committed nothing; where in the order it ran is not
 * known, so its code is only required to be one a call can give (never
 * KT_EIO or KT_ECORRUPT).
 *
 * On RADOS (KEYTREE_TEST_ENGINE=rados) each process opens the tree as a
 * client of its own and asks the engine to number its commits, which that
 * engine does not otherwise (kt__rados_number_commits).
 *
 * The processes report through their exit status and stderr; the parent
 * arms alarm() against hangs.  KT_MPMODEL_OPS=n runs n operations per
 * process instead of 400.  KT_MPMODEL_SEED=n replays a run's choices
 * (the interleaving of processes is the scheduler's).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt_test.h"

#include "tree.h" /* kt_store.last_commit */

#define OPS 400 /* per process; KT_MPMODEL_OPS overrides */
#define GUARD_SECONDS 240
#define MAXPROC 8
#define PBUF MODEL_PBUF
#define BIGVAL MODEL_BIGVAL

#include "model.h"

static uint64_t seed_base = 0x6d706d6f64656cULL; /* "mpmodel" */
static unsigned long nops = OPS;

/* cfg.user: nonzero in a writer process. */
static int in_child_flag = 1, in_parent_flag = 0;

static void model_fail_cb(mctx *c, const char *what)
{
	if (*(const int *)c->cfg.user) {
		fprintf(stderr, "mpmodel child: %s\n  op: %s\n", what,
			c->desc);
		_exit(3);
	}
	fail_msg("mpmodel (KT_MPMODEL_SEED=%llu): %s\n  op: %s",
		 (unsigned long long)seed_base, what, c->desc);
}

/* A context over *@p store, which must be empty now (model_new compares
 * the root with it). */
static mctx *ctx_new(kt_store **store, uint64_t seed, int in_child)
{
	model_config cfg;
	mctx *c;

	memset(&cfg, 0, sizeof(cfg));
	cfg.store = store;
	cfg.fail = model_fail_cb;
	cfg.seed = seed;
	cfg.delimiter_names = 1;
	cfg.user = in_child ? &in_child_flag : &in_parent_flag;
	c = model_new(&cfg);
	assert_non_null(c);
	return c;
}

/* Forget the paths the last operation wrote (model_do_op does it for its
 * own steps). */
static void touched_clear(mctx *c)
{
	size_t i;

	for (i = 0; i < c->touched.n; i++)
		free(c->touched.v[i]);
	c->touched.n = 0;
}

/* ---- The log: one record per operation --------------------------------
 * i32 rc, u64 seq (0: nothing committed), u32 nsub, then the operation
 * and, for a batch, its nsub operations.  An operation: i32 type, u32
 * flags, i32 null_opts, i32 aname (index in anames), u32 ftype, u64 rdev,
 * u64 off, u32 smode, u32 vlen and the bytes, u32 and p1, u32 and p2. */

static void put_raw(FILE *f, const void *p, size_t n)
{
	if (n > 0 && fwrite(p, 1, n, f) != n)
		_exit(5);
}

static void put_str(FILE *f, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);

	put_raw(f, &n, sizeof(n));
	put_raw(f, s, n);
}

static int aname_index(const char *a)
{
	size_t i, n;
	const char *const *anames = model_attr_names(&n);

	for (i = 0; i < n; i++)
		if (anames[i] == a || strcmp(anames[i], a) == 0)
			return (int)i;
	return -1;
}

static void op_write(FILE *f, const model_op *o)
{
	int32_t type = o->type, nullo = o->null_opts;
	int32_t an = aname_index(o->aname ? o->aname : "x");
	uint32_t flags = o->flags, ft = o->ftype, sm = o->smode;
	uint32_t vl = (uint32_t)o->vlen;

	put_raw(f, &type, 4);
	put_raw(f, &flags, 4);
	put_raw(f, &nullo, 4);
	put_raw(f, &an, 4);
	put_raw(f, &ft, 4);
	put_raw(f, &o->rdev, 8);
	put_raw(f, &o->off, 8);
	put_raw(f, &sm, 4);
	put_raw(f, &vl, 4);
	put_raw(f, o->val, vl);
	put_str(f, o->p1);
	put_str(f, o->p2);
}

static int get_raw(FILE *f, void *p, size_t n)
{
	return n == 0 || fread(p, 1, n, f) == n ? 0 : -1;
}

static int get_str(FILE *f, char *s, size_t cap)
{
	uint32_t n;

	if (get_raw(f, &n, 4) != 0 || n >= cap || get_raw(f, s, n) != 0)
		return -1;
	s[n] = '\0';
	return 0;
}

static int op_read(FILE *f, model_op *o)
{
	int32_t type, nullo, an;
	uint32_t flags, ft, sm, vl;
	size_t nnames;
	const char *const *anames = model_attr_names(&nnames);

	if (get_raw(f, &type, 4) || get_raw(f, &flags, 4) ||
	    get_raw(f, &nullo, 4) || get_raw(f, &an, 4) ||
	    get_raw(f, &ft, 4) || get_raw(f, &o->rdev, 8) ||
	    get_raw(f, &o->off, 8) || get_raw(f, &sm, 4) ||
	    get_raw(f, &vl, 4) || vl > BIGVAL || get_raw(f, o->val, vl) ||
	    get_str(f, o->p1, PBUF) || get_str(f, o->p2, PBUF) || an < 0 ||
	    (size_t)an >= nnames)
		return -1;
	o->type = type;
	o->flags = flags;
	o->null_opts = nullo;
	o->aname = anames[an];
	o->ftype = ft;
	o->smode = sm;
	o->vlen = vl;
	return 0;
}

/* One logged operation, in the parent. */
typedef struct rec {
	int proc;
	unsigned long n; /* its number in the process's run */
	int32_t rc;
	uint64_t seq;
	model_op o;
	model_op sub[4];
	uint32_t nsub;
} rec;

static void rec_free(rec *r)
{
	uint32_t i;

	free(r->o.val);
	for (i = 0; i < 4; i++)
		free(r->sub[i].val);
}

static int rec_read(FILE *f, rec *r)
{
	uint32_t i;

	memset(r, 0, sizeof(*r));
	r->o.val = malloc(BIGVAL);
	for (i = 0; i < 4; i++)
		r->sub[i].val = malloc(BIGVAL);
	if (get_raw(f, &r->rc, 4) != 0) {
		rec_free(r);
		return 1; /* the end */
	}
	if (get_raw(f, &r->seq, 8) || get_raw(f, &r->nsub, 4) ||
	    r->nsub > 4 || op_read(f, &r->o)) {
		rec_free(r);
		return -1;
	}
	for (i = 0; i < r->nsub; i++)
		if (op_read(f, &r->sub[i]) != 0) {
			rec_free(r);
			return -1;
		}
	return 0;
}

/* ---- A writer --------------------------------------------------------- */

/* Codes a call may give when other processes change the store under it:
 * anything a call can give alone, and KT_EBUSY when it lost the race for
 * the store too many times in a row.  Never an I/O error or damage. */
static int rc_possible(int rc)
{
	return rc != KT_EIO && rc != KT_ECORRUPT && rc != KT_ENOMEM;
}

/* A writer: open, wait for go, run, say done on @p done, and close the
 * store only when @p quit ends (the holder must outlive every client's
 * run, or they would lose it half way). */
static void writer(const char *dir, int proc, int go, int done, int quit,
		   const char *logpath)
{
	kt_test_fixture f;
	kt_options o = KT_OPTIONS_INIT;
	mctx *c;
	FILE *log;
	unsigned long i;
	char b;
	int rc;

	alarm(GUARD_SECONDS);
	memset(&f, 0, sizeof(f));
	if ((rc = kt_open(&f.store, dir, &o)) != 0) {
		fprintf(stderr, "mpmodel child %d: kt_open: %s\n", proc,
			kt_errmsg());
		_exit(2);
	}
#ifdef KT_HAVE_RADOS
	/* RADOS keeps no commit order of its own: ask for one. */
	if (f.store->rados)
		kt__rados_number_commits(f.store->rows);
#endif
	/* Before anyone writes: the model starts from the empty store. */
	c = ctx_new(&f.store, seed_base * 31 + (uint64_t)proc, 1);
	b = 'r';
	if (write(done, &b, 1) != 1 || read(go, &b, 1) != 1)
		_exit(2);
	log = fopen(logpath, "w");
	if (log == NULL)
		_exit(2);
	for (i = 0; i < nops; i++) {
		uint64_t before = f.store->last_commit, seq;
		int32_t rc32;
		uint32_t k;

		c->step = i;
		c->nsub = 0;
		model_gen_op(c, &c->o);
		model_describe(c, &c->o);
		rc = model_store_apply(c, &c->o);
		seq = f.store->last_commit != before ? f.store->last_commit : 0;
		if (!rc_possible(rc)) {
			fprintf(stderr, "mpmodel child %d: op %lu %s gave %d "
				"(%s)\n", proc, i, c->desc, rc, kt_errmsg());
			_exit(4);
		}
		if (seq != 0 && rc != 0) {
			fprintf(stderr, "mpmodel child %d: %s failed (%d) but "
				"committed\n", proc, c->desc, rc);
			_exit(4);
		}
		rc32 = rc;
		k = c->o.type == OP_BATCH ? (uint32_t)c->nsub : 0;
		put_raw(log, &rc32, 4);
		put_raw(log, &seq, 8);
		put_raw(log, &k, 4);
		op_write(log, &c->o);
		for (k = 0; c->o.type == OP_BATCH && k < c->nsub; k++)
			op_write(log, &c->sub[k]);
		/* Only so that the next choices follow the tree roughly: this
		 * process's model is not the store. */
		touched_clear(c);
		model_apply(c, &c->o);
	}
	if (fclose(log) != 0)
		_exit(5);
	model_free(c);
	b = 'd';
	if (write(done, &b, 1) != 1)
		_exit(2);
	while (read(quit, &b, 1) > 0)
		;
	kt_close(f.store);
	_exit(0);
}

/* ---- The parent ------------------------------------------------------- */

static int setup(void **state)
{
	kt_test_fixture *f;
	const char *s = getenv("KT_MPMODEL_SEED");

	if (s != NULL && *s != '\0')
		seed_base = strtoull(s, NULL, 0);
	if (kt_test_setup(state) != 0)
		return -1;
	f = *state;
	/* The children open the store; this process holds nothing while
	 * they run (docs/CONCURRENCY.md, "Forking"). */
	kt_close(f->store);
	f->store = NULL;
	alarm(GUARD_SECONDS);
	return 0;
}

static int teardown(void **state)
{
	kt_test_fixture *f = *state;

	alarm(0);
	if (f->store != NULL) {
		kt_close(f->store);
		f->store = NULL;
	}
	return kt_test_teardown(state);
}

static int rec_cmp(const void *a, const void *b)
{
	const rec *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void run(kt_test_fixture *f, int nproc)
{
	pid_t pid[MAXPROC];
	int gop[2], dp[2], qp[2], p, status;
	char logpath[MAXPROC][400];
	rec *recs = NULL;
	size_t nrec = 0, cap = 0, i, failed = 0, noop = 0;
	mctx *c;
	char b = 'g';

	assert_int_equal(pipe(gop), 0);
	assert_int_equal(pipe(dp), 0);
	assert_int_equal(pipe(qp), 0);
	for (p = 0; p < nproc; p++) {
		snprintf(logpath[p], sizeof(logpath[p]), "%s/log.%d", f->dir,
			 p);
		pid[p] = fork();
		assert_true(pid[p] >= 0);
		if (pid[p] == 0) {
			char a[5][32];

			close(gop[1]);
			close(dp[0]);
			close(qp[1]);
			/* A fresh image, not a fork of this one: librados
			 * (RADOS) is not safe to use in a forked child of a
			 * process that had it running. */
			snprintf(a[0], sizeof(a[0]), "%d", p);
			snprintf(a[1], sizeof(a[1]), "%d", gop[0]);
			snprintf(a[2], sizeof(a[2]), "%d", dp[1]);
			snprintf(a[3], sizeof(a[3]), "%d", qp[0]);
			snprintf(a[4], sizeof(a[4]), "%llu",
				 (unsigned long long)seed_base);
			execl("/proc/self/exe", "test_mpmodel", "--writer",
			      f->path, a[0], a[1], a[2], a[3], logpath[p],
			      a[4], (char *)NULL);
			fprintf(stderr, "mpmodel: exec: %s\n", strerror(errno));
			_exit(2);
		}
	}
	close(gop[0]);
	close(dp[1]);
	close(qp[0]);
	/* All open and ready (or gone: dp ends), then all go at once. */
	for (p = 0; p < nproc && read(dp[0], &b, 1) == 1; p++)
		;
	b = 'g';
	for (p = 0; p < nproc; p++)
		assert_int_equal(write(gop[1], &b, 1), 1);
	close(gop[1]);
	/* Every run over (or a process gone: its end of dp closes), then
	 * all close their stores. */
	for (p = 0; p < nproc && read(dp[0], &b, 1) == 1; p++)
		;
	close(dp[0]);
	close(qp[1]);
	for (p = 0; p < nproc; p++) {
		assert_int_equal(waitpid(pid[p], &status, 0), pid[p]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("process %d ended with %s %d "
				 "(KT_MPMODEL_SEED=%llu)", p,
				 WIFEXITED(status) ? "status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status)
						   : WTERMSIG(status),
				 (unsigned long long)seed_base);
	}

	/* Every committed operation, in commit order. */
	for (p = 0; p < nproc; p++) {
		FILE *lf = fopen(logpath[p], "r");
		unsigned long n = 0;
		int r;

		assert_non_null(lf);
		for (;;) {
			if (nrec == cap) {
				cap = cap ? 2 * cap : 1024;
				recs = realloc(recs, cap * sizeof(*recs));
				assert_non_null(recs);
			}
			r = rec_read(lf, &recs[nrec]);
			if (r == 1)
				break;
			assert_int_equal(r, 0);
			recs[nrec].proc = p;
			recs[nrec].n = n++;
			if (recs[nrec].seq == 0) {
				if (recs[nrec].rc == 0)
					noop++;
				else
					failed++;
				rec_free(&recs[nrec]);
				continue;
			}
			nrec++;
		}
		fclose(lf);
		assert_int_equal(n, nops);
	}
	qsort(recs, nrec, sizeof(*recs), rec_cmp);
	for (i = 1; i < nrec; i++)
		if (recs[i].seq == recs[i - 1].seq)
			fail_msg("commit #%llu claimed by process %d op %lu and "
				 "process %d op %lu",
				 (unsigned long long)recs[i].seq, recs[i].proc,
				 recs[i].n, recs[i - 1].proc, recs[i - 1].n);

	/* A context for the replay, made over an empty store (model_new
	 * compares the root), then pointed at the real one. */
	{
		kt_options eo = KT_OPTIONS_INIT;
		char empty[400];

		snprintf(empty, sizeof(empty), "%s/empty", f->dir);
		eo.create_if_missing = 1;
		assert_int_equal(kt_open(&f->store, empty, &eo), 0);
		c = ctx_new(&f->store, 0, 0);
		kt_close(f->store);
		f->store = NULL;
	}
	assert_int_equal(kt_open(&f->store, f->path, NULL), 0);
	for (i = 0; i < nrec; i++) {
		rec *r = &recs[i];
		uint32_t k;
		int want;

		c->step = i;
		c->o.type = r->o.type;
		memcpy(c->o.p1, r->o.p1, PBUF);
		memcpy(c->o.p2, r->o.p2, PBUF);
		c->o.flags = r->o.flags;
		c->o.null_opts = r->o.null_opts;
		c->o.aname = r->o.aname;
		c->o.ftype = r->o.ftype;
		c->o.rdev = r->o.rdev;
		c->o.off = r->o.off;
		c->o.smode = r->o.smode;
		c->o.vlen = r->o.vlen;
		memcpy(c->o.val, r->o.val, r->o.vlen);
		c->nsub = r->nsub;
		for (k = 0; k < r->nsub; k++) {
			unsigned char *v = c->sub[k].val;

			c->sub[k] = r->sub[k];
			c->sub[k].val = v;
			memcpy(v, r->sub[k].val, r->sub[k].vlen);
		}
		model_describe(c, &c->o);
		touched_clear(c);
		want = model_apply(c, &c->o);
		if (want != 0)
			fail_msg("commit #%llu, process %d op %lu: %s returned "
				 "0 and committed, but replayed in commit order "
				 "the model gives %s (KT_MPMODEL_SEED=%llu)",
				 (unsigned long long)r->seq, r->proc, r->n,
				 c->desc, model_rcname(want),
				 (unsigned long long)seed_base);
	}
	snprintf(c->desc, sizeof(c->desc), "(the store after %zu commits of "
		 "%d processes against the model)", nrec, nproc);
	model_check_all(c);
	printf("mpmodel: %d processes, %lu ops each: %zu committed, %zu "
	       "failed, %zu without changes; %zu nodes at the end\n",
	       nproc, nops, nrec, failed, noop, c->m.n);
	fflush(stdout);
	model_free(c);
	for (i = 0; i < nrec; i++)
		rec_free(&recs[i]);
	free(recs);
}

static void test_mpmodel__two(void **state)
{
	run(*state, 2);
}

static void test_mpmodel__four(void **state)
{
	run(*state, 4);
}

static void test_mpmodel__eight(void **state)
{
	run(*state, 8);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mpmodel__two, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mpmodel__four, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mpmodel__eight, setup,
						teardown),
	};

	const char *n = getenv("KT_MPMODEL_OPS");

	if (n != NULL && strtoul(n, NULL, 10) > 0)
		nops = strtoul(n, NULL, 10);
	/* A writer process, started by run(). */
	if (argc == 9 && strcmp(argv[1], "--writer") == 0) {
		seed_base = strtoull(argv[8], NULL, 10);
		writer(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
		       atoi(argv[6]), argv[7]);
	}
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
