/*
 * fuzz_ops.c - operation sequences chosen by the fuzzer, applied both to a
 * store and to the reference model of tests/test_model.c.
 *
 * The model, the operation generator and every comparison are those of
 * tests/test_model.c (see its opening comment for the operations, the
 * decisions the model takes where keytree.h leaves a corner open, and what
 * is compared after each step).  What differs here:
 *  - every random choice rn(n) reads the next byte (two bytes when n is
 *    over 256) of the fuzz input instead of a PRNG, so the fuzzer steers
 *    which operations, paths, flags, link targets and batches come; when
 *    the input is used up the run ends with a comparison of the whole tree
 *    (check_all: kt_find_new, every node in detail, kt_check);
 *  - value bytes come from a small generator seeded by one input byte;
 *  - the name alphabet also holds the default delimiter's halves (C2, A6,
 *    "a" C2), so that names meet the delimiter where keys are joined;
 *  - each input starts from a new, empty store on tmpfs, and a choice now
 *    and then closes and reopens it (the visible state must be unchanged).
 * Any difference aborts with the step, the call and expected versus
 * actual; KT_FUZZ_VERBOSE=1 prints every step when replaying an input.
 *
 * The model, the generator and the comparisons are tests/model.h, shared
 * with tests/test_model.c, so a change of the specification there is a
 * change here too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_util.h"

/* test_model.c's cmocka assertions, as aborts. */
#define assert_true(x)                                                         \
	do {                                                                   \
		if (!(x))                                                      \
			fz_fail("assertion '%s' failed at %s:%d", #x,          \
				__FILE__, __LINE__);                           \
	} while (0)
#define assert_non_null(x)     assert_true((x) != NULL)
#define assert_int_equal(a, b) assert_true((a) == (b))

#define MAX_STEPS 400UL
#define PBUF	  4352
#define BIGVAL	  20000

typedef struct fz_fixture {
	char path[300];
	kt_store *store;
} fz_fixture;

#define MODEL_FIXTURE fz_fixture
#define MODEL_CTX_FIELDS                                                       \
	const uint8_t *in; /* the fuzz input still to decode */                \
	size_t inlen;                                                          \
	int exhausted; /* rn() ran past its end */
#define MODEL_EXTRA_NAMES , "\xc2", "\xa6", "a\xc2"

#include "../tests/model.h"

/* A choice among @p n, read from the fuzz input: one byte for up to 256
 * choices, two for more.  Past the end of the input every choice is 0,
 * and the run stops after the step in progress. */
static unsigned int rn(mctx *c, unsigned int n)
{
	unsigned int v = 0, k = n > 256 ? 2 : 1;

	if (n <= 1)
		return 0;
	if (c->inlen < k) {
		c->exhausted = 1;
		c->inlen = 0;
		return 0;
	}
	while (k-- > 0) {
		v = v << 8 | *c->in++;
		c->inlen--;
	}
	return v % n;
}

/* Value bytes from a small generator seeded by one input byte, so that a
 * large value costs one byte of input, not thousands. */
static void model_value_bytes(mctx *c, unsigned char *v, size_t n)
{
	uint32_t x = 0x9e3779b9u ^ rn(c, 256);
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		v[i] = (unsigned char)x;
	}
}

static void model_fail(mctx *c, const char *what)
{
	fz_fail("model mismatch at step %lu\n  op: %s\n  %s", c->step, c->desc,
		what);
}


/* ------------------------------------------------------------------------
 * The run */

typedef struct snap {
	int lrc, src;
	uint64_t lver, sver;
} snap;

static void take_snap(mctx *c, snap *sn, size_t n)
{
	size_t i;
	kt_statbuf st;

	for (i = 0; i < n; i++) {
		sn[i].lrc = kt_lstat(&st, c->f->store, c->checks.v[i]);
		sn[i].lver = sn[i].lrc == 0 ? st.version : 0;
		sn[i].src = kt_stat(&st, c->f->store, c->checks.v[i]);
		sn[i].sver = sn[i].src == 0 ? st.version : 0;
	}
}

/* Paths the step is about: its arguments, their parents, what they
 * resolve to and the parents of that, and two random ones. */
static void add_checks(mctx *c, const char *path)
{
	char p[PBUF];
	res r;
	int follow;

	sl_push_unique(&c->checks, path);
	if (path_err(path) != 0 || strcmp(path, "/") == 0)
		return;
	parent_of(p, path);
	sl_push_unique(&c->checks, p);
	for (follow = 0; follow < 2; follow++) {
		if (m_resolve(c, path, follow, &r) != 0 || r.path[0] == '\0')
			continue;
		sl_push_unique(&c->checks, r.path);
		if (strcmp(r.path, "/") != 0) {
			parent_of(p, r.path);
			sl_push_unique(&c->checks, p);
		}
	}
}

/* The message of a failed operation names its path (a failed batch also
 * the number of the operation, counted from 1). */
static void check_errmsg(mctx *c, const op *o)
{
	const char *msg = kt_errmsg();
	char num[32] = "";

	if (o->type == OP_BATCH) {
		o = &c->sub[c->bad_sub];
		snprintf(num, sizeof(num), "%zu", c->bad_sub + 1);
	}
	if (msg[0] == '\0')
		mismatch(c, "failed but kt_errmsg() is empty");
	if (strstr(msg, num) == NULL)
		mismatch(c,
			 "kt_errmsg() '%s' does not say that operation %s "
			 "failed",
			 msg, num);
	if (strstr(msg, o->p1) == NULL &&
	    ((o->type != OP_RENAME && o->type != OP_LINK) ||
	     strstr(msg, o->p2) == NULL))
		mismatch(c, "kt_errmsg() '%s' does not name \"%s\"", msg,
			 o->p1);
}

/* Apply c->o to the model and to the store, and compare the results and
 * then the paths the operation is about and @p extra. */
static void do_op(mctx *c, const char *const *extra, size_t nextra)
{
	op *o = &c->o;
	snap sn[32], after[32];
	int want, got;
	size_t i, nsnap;

	describe(c, o);
	sl_clear(&c->checks);
	sl_clear(&c->touched);
	if (o->type == OP_BATCH) {
		for (i = 0; i < c->nsub; i++) {
			add_checks(c, c->sub[i].p1);
			if (c->sub[i].type == OP_RENAME ||
			    c->sub[i].type == OP_LINK)
				add_checks(c, c->sub[i].p2);
		}
	} else {
		add_checks(c, o->p1);
		if (o->type == OP_RENAME || o->type == OP_LINK)
			add_checks(c, o->p2);
	}
	for (i = 0; i < nextra; i++)
		sl_push_unique(&c->checks, extra[i]);
	nsnap = c->checks.n < 32 ? c->checks.n : 32;
	take_snap(c, sn, nsnap);

	want = model_apply(c, o);
	got = store_apply(c, o);
	if (c->verbose)
		fprintf(stderr, "step %lu: %s = %s\n", c->step, c->desc,
			rcname(want));
	c->count[o->type][-want < NRC ? -want : NRC - 1]++;
	if (got != want)
		mismatch(c, "expected %s, got %s (%s)", rcname(want),
			 rcname(got), got < 0 ? kt_errmsg() : "");
	if (got < 0)
		check_errmsg(c, o);
	if (got < 0) {
		/* a rejected operation writes nothing */
		take_snap(c, after, nsnap);
		for (i = 0; i < nsnap; i++)
			if (sn[i].lrc != after[i].lrc ||
			    sn[i].lver != after[i].lver ||
			    sn[i].src != after[i].src ||
			    sn[i].sver != after[i].sver)
				mismatch(
					c,
					"rejected with %s but \"%s\" "
					"changed: lstat %s version %llu -> %s "
					"%llu, stat %s version %llu -> %s %llu",
					rcname(got), c->checks.v[i],
					rcname(sn[i].lrc),
					(unsigned long long)sn[i].lver,
					rcname(after[i].lrc),
					(unsigned long long)after[i].lver,
					rcname(sn[i].src),
					(unsigned long long)sn[i].sver,
					rcname(after[i].src),
					(unsigned long long)after[i].sver);
	}
	for (i = 0; i < c->touched.n; i++)
		sl_push_unique(&c->checks, c->touched.v[i]);
	if (o->type == OP_RENAME && want == 0) {
		/* the paths moved: look at them again */
		add_checks(c, o->p1);
		add_checks(c, o->p2);
	}
	for (i = 0; o->type == OP_BATCH && want == 0 && i < c->nsub; i++) {
		add_checks(c, c->sub[i].p1);
		if (c->sub[i].type == OP_RENAME || c->sub[i].type == OP_LINK)
			add_checks(c, c->sub[i].p2);
	}
	for (i = 0; i < c->checks.n; i++)
		check_path(c, c->checks.v[i]);
	if (c->m.n > c->max_nodes)
		c->max_nodes = c->m.n;
}

/* One random step; two random paths are compared besides. */
static void run_step(mctx *c)
{
	char p1[PBUF], p2[PBUF];
	const char *const extra[2] = {p1, p2};
	size_t i;

	if (rn(c, 100) < 5) {
		/* a batch of valid operations; a bad path could be refused
		 * when recorded or when committed */
		c->o.type = OP_BATCH;
		c->nsub = 2 + rn(c, 3);
		for (i = 0; i < c->nsub; i++) {
			op *o = &c->sub[i];
			do
				gen_op(c, o);
			while (!c->exhausted &&
			       (path_err(o->p1) != 0 ||
				strcmp(o->p1, "/") == 0 ||
				((o->type == OP_RENAME ||
				  o->type == OP_LINK) &&
				 path_err(o->p2) != 0) ||
				strcmp(o->aname, anames[NANAMES - 1]) == 0 ||
				(o->type == OP_SYMLINK && o->p2[0] == '\0') ||
				o->type == OP_WRITE || o->type == OP_TRUNCATE ||
				(o->type == OP_MKNOD && mknod_args_bad(o))));
			/* past the end of the input the same invalid choice
			 * would come forever: end the batch here */
			if (c->exhausted) {
				c->nsub = i;
				break;
			}
			/* puts mostly succeed, so that whole batches do */
			if (rn(c, 2) && o->type != OP_PUT) {
				o->type = OP_PUT;
				o->flags = 0;
				rand_value(c, o);
			}
			/* act on what the operation before made (or moved
			 * away, or below it) */
			if (i > 0 && rn(c, 2) == 0) {
				const op *b = &c->sub[i - 1];
				int two = o->type == OP_RENAME ||
					  o->type == OP_LINK;
				char *to = rn(c, 2) && two ? o->p2 : o->p1;
				strcpy(p1, (b->type == OP_RENAME ||
					    b->type == OP_LINK) &&
						   rn(c, 3)
						   ? b->p2
						   : b->p1);
				if (rn(c, 3) == 0 && strlen(p1) + 16 < PBUF) {
					strcat(p1, "/");
					strcat(p1, names[rn(c, NNAMES)]);
				}
				strcpy(to, p1);
			}
		}
	} else {
		gen_op(c, &c->o);
	}
	pick_path(c, p1);
	pick_path(c, p2);
	do_op(c, extra, 2);
}

/* Fold this step's observed versions into the set of earlier ones. */
static void end_step(mctx *c)
{
	size_t i;

	for (i = 0; i < c->step_versions.cap; i++)
		if (c->step_versions.v[i] != 0)
			u64_add(&c->versions, c->step_versions.v[i]);
	if (c->step_versions.has_zero)
		c->versions.has_zero = 1;
	if (c->step_versions.n > 0 || c->step_versions.has_zero) {
		memset(c->step_versions.v, 0,
		       c->step_versions.cap * sizeof(*c->step_versions.v));
		c->step_versions.n = 0;
		c->step_versions.has_zero = 0;
	}
}

/* Close and reopen the store: everything visible must be as it was. */
static void reopen(mctx *c)
{
	char *before = fz_digest(c->f->store, "/"), *after;
	int rc;

	kt_close(c->f->store);
	c->f->store = NULL;
	if ((rc = kt_open(&c->f->store, c->f->path, NULL)) != 0)
		fz_fail("reopen: %d (%s)", rc, kt_errmsg());
	after = fz_digest(c->f->store, "/");
	if (strcmp(before, after) != 0) {
		free(before);
		free(after);
		mismatch(c, "the store differs after close and reopen");
	}
	free(before);
	free(after);
	check_path(c, "/");
}

/* A model holding only the root, for the fixture's empty store. */
static mctx *ctx_new(fz_fixture *f)
{
	mctx *c = calloc(1, sizeof(*c));
	mnode *root;
	size_t i;

	assert_non_null(c);
	c->f = f;
	c->o.val = malloc(BIGVAL);
	assert_non_null(c->o.val);
	for (i = 0; i < 4; i++) {
		c->sub[i].val = malloc(BIGVAL);
		assert_non_null(c->sub[i].val);
	}
	root = m_new(&c->m, "/", KT_KIND_DIR);
	root->b->vstate = V_KNOWN;
	check_path(c, "/");
	return c;
}

static void ctx_free(mctx *c)
{
	size_t i;

	while (c->m.n > 0)
		m_remove_subtree(&c->m, c->m.v[c->m.n - 1]->path);
	free(c->m.v);
	sl_free(&c->plan);
	sl_free(&c->touched);
	sl_free(&c->checks);
	free(c->versions.v);
	free(c->step_versions.v);
	free(c->o.val);
	for (i = 0; i < 4; i++)
		free(c->sub[i].val);
	free(c);
}

static fz_fixture fixture;
static int verbose;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(fixture.path, sizeof(fixture.path), "%s/store", fz_scratch());
	verbose = getenv("KT_FUZZ_VERBOSE") != NULL;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kt_options o = KT_OPTIONS_INIT;
	mctx *c;
	int rc;

	fz_rmtree(fixture.path);
	o.create_if_missing = 1;
	if ((rc = kt_open(&fixture.store, fixture.path, &o)) != 0)
		fz_fail("kt_open: %d (%s)", rc, kt_errmsg());
	c = ctx_new(&fixture);
	c->verbose = verbose;
	c->in = data;
	c->inlen = size;
	c->exhausted = 0; /* ctx_new's first look at "/" drew choices */
	for (c->step = 0; c->step < MAX_STEPS && !c->exhausted; c->step++) {
		run_step(c);
		if (rn(c, 64) == 0)
			reopen(c);
		end_step(c);
	}
	snprintf(c->desc, sizeof(c->desc), "(final comparison)");
	check_all(c);
	ctx_free(c);
	kt_close(fixture.store);
	fixture.store = NULL;
	return 0;
}
