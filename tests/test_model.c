/*
 * test_model.c - model-based test of the tree operations.
 *
 * Random sequences of put (plain, EXCL), mkdir and symlink (plain,
 * PARENTS), mknod (FIFOs, sockets and devices, now and then with a bad type
 * or device number), delete (plain, RECURSIVE, PRUNE, ITEM, ALL_PATHS),
 * rename (plain, NOREPLACE, EXCHANGE), link (kt_link: a further path of a
 * node), write (at an offset, past the end, KT_APPEND), truncate, setattr
 * (the mode, following the last link or KT_NOFOLLOW), attribute set (plain,
 * CREATE, REPLACE) and delete, and batches of these (all but write and
 * truncate, which have no batch form), are applied both to the store and to
 * a small in-memory reference model written straight from the comments in
 * keytree.h.  In the model a node (mobj) is apart from its paths (mnode),
 * so a node given several paths by kt_link is one mobj that every change
 * through any path changes.  Operations pick a random path of such a node
 * often, and links are made through random paths of nodes that already
 * have several.  Now and then a path is not canonical (KT_EINVAL) or holds the
 * delimiter (KT_ERESERVED).  After every step the result codes must be
 * equal (and a failure's message must name the path), and for every path
 * the step is about (its arguments, their parents, the nodes they resolve
 * to, the nodes it created or wrote, and two random paths) the store and
 * the model must agree on kt_lstat, kt_stat, kt_readlink, kt_get, the
 * listing (whole, and one random page) and the attributes, error codes
 * included.  Ids must survive renames and conversions; a written node must
 * get a version never seen before; a failed step must leave the versions of
 * those nodes unchanged.  Every CHECK_EVERY steps and at the end the whole
 * tree is compared (kt_find_new over "/", plus prefix, SUBTREE and ITEMS
 * searches) and kt_check must find nothing; the store is closed and
 * reopened (its digest unchanged) a few times during the run.  A second
 * test walks chains of 39, 40 and 41 links; a third goes through the alias
 * rules step by step, each code pinned.  The link count (kt_statbuf.nlink)
 * is compared in every stat, the paths of one node must share its id (and
 * no other node may have it), and kt_id_path must give one of its paths.
 *
 * Names come from a tiny alphabet so that nodes collide, replace each other
 * and share prefixes ("a" and "ab"; "æ" ends in the byte A6 of the default
 * delimiter C2 A6); link targets are absolute and relative (with "." and
 * ".."), often dangling, cyclic or pointing at directories, so that later
 * paths resolve through links in their middle components.
 *
 * Environment: KT_MODEL_OPS (default 20000 steps), KT_MODEL_SEED (default
 * fixed), KT_MODEL_VERBOSE=1 prints every step.  A failure names the step,
 * the operation, the paths, and expected versus actual, and the seed is
 * printed first, so that a run can be replayed exactly.
 *
 * Decisions where keytree.h leaves a corner open (POSIX decides; a change
 * here must be a change of the specification, not a way to match the
 * implementation):
 *  - Resolution walks components in order and the first failing component
 *    decides: an absent intermediate component (or a dangling link there) is
 *    KT_ENOTFOUND, an item-only one (or a link resolving to one) is
 *    KT_ENOTDIR, more than KT_LINK_HOPS_MAX links followed in one
 *    resolution is KT_ELOOP.
 *  - ".." in a link target is physical, as in POSIX: it goes to the parent
 *    of the directory reached so far (after following links), not a lexical
 *    shortening of the target; and "x/.." needs x to be a directory.
 *  - put turns item ancestors of its own path into item+dir and creates
 *    missing ones, but a link target is resolved strictly: a target whose
 *    middle component is absent is dangling (KT_ENOTFOUND), one whose middle
 *    component is an item is KT_ENOTDIR, and nothing is created through it
 *    except below a directory it resolves to.
 *  - mkdir and symlink with KT_CREATE_PARENTS treat ancestors as put does
 *    ("put always does"): missing ones are made, item-only ones become
 *    item+dir, just as mkdir of each prefix in turn would do.  Without it an
 *    item-only parent is KT_ENOTDIR.  mkdir with KT_CREATE_PARENTS on a link
 *    is still KT_EEXISTS (the last component is not followed).
 *  - put with KT_CREATE_EXCL checks the last component without following
 *    it: a link (even a dangling one), an item or a special file there is
 *    KT_EEXISTS; a directory without a value becomes item+dir.
 *  - A special file is neither an item nor a directory, and holds no
 *    value: put on it (or through a link to it) is KT_EINVAL, mkdir on it
 *    KT_EEXISTS, KT_DELETE_ITEM on it KT_EINVAL, kt_get of it KT_EINVAL;
 *    as an ancestor it is KT_ENOTDIR even for put, which converts only
 *    items.  mknod makes missing ancestors as put does.
 *  - delete with KT_DELETE_ITEM on an item-only node removes the node; on an
 *    item+dir node it removes the value even when the directory has
 *    children.  PRUNE walks up from the real parent (after following links
 *    in the middle components).
 *  - rename checks in the order of Linux renameat2: resolve the parent of
 *    src, then the parent of dst (so a bad dst parent wins over a missing
 *    src); src absent is KT_ENOTFOUND; NOREPLACE with dst present is
 *    KT_EEXISTS (even when dst is src, and before the subtree check);
 *    EXCHANGE with dst absent is KT_ENOTFOUND; src an ancestor of dst is
 *    KT_EINVAL, and with EXCHANGE also dst an ancestor of src; src and dst
 *    the same node does nothing; then the header's rules: a directory over
 *    a non-directory is KT_ENOTDIR, the reverse KT_EISDIR (also when dst is
 *    an ancestor of src, where Linux says ENOTEMPTY: the header is explicit
 *    here), a directory over a non-empty one KT_ENOTEMPTY.  EXCHANGE swaps
 *    any two nodes.  An item+dir counts as a directory.
 *  - Arguments are checked before the store is looked at: a bad path
 *    (KT_EINVAL, then KT_ERESERVED, src before dst) or an attribute name
 *    starting with the delimiter (KT_ERESERVED) wins over any resolution
 *    error.
 *  - Versions: the written node, a directory that gains or loses a child
 *    (except through EXCHANGE, which only swaps), and a renamed node must
 *    each show a version never observed before in an earlier step.  A node
 *    that gains or loses a path (kt_link, unlink of one path, a recursive
 *    delete or a rename over one of its paths) is written: its link count
 *    and ctime change.
 *  - Aliases (kt_link).  Checks in the order of Linux linkat(2): bad
 *    arguments, then existing (walked without following its last
 *    component; absent is KT_ENOTFOUND), then newpath (its ancestors made
 *    as put makes them; anything there is KT_EEXISTS, even when existing
 *    is a directory), then existing a directory or the root (KT_EPERM).
 *    newpath below existing itself is KT_EPERM (existing would become a
 *    directory with two paths).  An item with several paths cannot become
 *    item+dir: put, symlink, mknod, link and mkdir with KT_CREATE_PARENTS
 *    below it, and mkdir on it, are KT_EPERM; mkdir below it without
 *    KT_CREATE_PARENTS is still KT_ENOTDIR, as for any item.  A delete
 *    (plain, RECURSIVE, or ITEM on an item that is not a directory) removes
 *    only the paths it reaches; the node goes with its last path.
 *    ALL_PATHS removes the node at the path under every path (the parents
 *    of all of them lose a child; PRUNE starts at the given path's parent
 *    only); below a directory a RECURSIVE | ALL_PATHS delete removes only
 *    the paths under it.  A rename over another node's path removes that
 *    path only; a rename (plain or EXCHANGE) onto another path of the same
 *    node returns 0 and changes nothing, but NOREPLACE is KT_EEXISTS.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kt_test.h"

#define DEFAULT_OPS  20000UL
#define DEFAULT_SEED 0x6b657974726565ULL /* "keytree" */
#define CHECK_EVERY  500UL

#include "model.h"

static void model_fail(mctx *c, const char *what)
{
	fail_msg("model mismatch at step %lu (replay: KT_MODEL_SEED=%llu "
		 "KT_MODEL_OPS=%lu)\n  op: %s\n  %s",
		 c->step, (unsigned long long)c->seed, c->step + 1, c->desc,
		 what);
}

static unsigned long long env_num(const char *name, unsigned long long def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0')
		return def;
	v = strtoull(s, &end, 0);
	if (*end != '\0') {
		fprintf(stderr, "%s: not a number: '%s'\n", name, s);
		return def;
	}
	return v;
}

static void print_stats(mctx *c)
{
	int t, k;

	printf("model: %zu paths at the end, at most %zu; at most %zu of them "
	       "further paths of a node (aliases); %lu path checks\n",
	       c->m.n, c->max_nodes, c->max_aliases, c->nchecks);
	for (t = 0; t < OP__COUNT; t++) {
		printf("  %-12s", model_op_names[t]);
		for (k = 0; k < NRC; k++)
			if (c->count[t][k])
				printf(" %s:%lu", model_rcname(-k), c->count[t][k]);
		printf("\n");
	}
}

/* A default run must have exercised each operation's success and the
 * interesting errors, or the generator has drifted and proves little. */
static void check_coverage(mctx *c)
{
	static const struct {
		int type, rc;
	} need[] = {
		{OP_PUT, 0},
		{OP_PUT, KT_ENOTFOUND},
		{OP_PUT, KT_ENOTDIR},
		{OP_PUT, KT_ELOOP},
		{OP_PUT, KT_EEXISTS},
		{OP_PUT, KT_EINVAL},
		{OP_MKDIR, 0},
		{OP_MKDIR, KT_EEXISTS},
		{OP_MKDIR, KT_ENOTFOUND},
		{OP_MKDIR, KT_ENOTDIR},
		{OP_SYMLINK, 0},
		{OP_SYMLINK, KT_EEXISTS},
		{OP_DELETE, 0},
		{OP_DELETE, KT_ENOTEMPTY},
		{OP_DELETE, KT_EISDIR},
		{OP_DELETE, KT_EINVAL},
		{OP_DELETE, KT_ENOTFOUND},
		{OP_RENAME, 0},
		{OP_RENAME, KT_EEXISTS},
		{OP_RENAME, KT_ENOTDIR},
		{OP_RENAME, KT_EISDIR},
		{OP_RENAME, KT_ENOTEMPTY},
		{OP_RENAME, KT_EINVAL},
		{OP_RENAME, KT_ENOTFOUND},
		{OP_ATTR_SET, 0},
		{OP_ATTR_SET, KT_EEXISTS},
		{OP_ATTR_SET, KT_ENOATTR},
		{OP_ATTR_SET, KT_ELOOP},
		{OP_ATTR_DELETE, 0},
		{OP_ATTR_DELETE, KT_ENOATTR},
		{OP_BATCH, 0},
		{OP_BATCH, KT_ENOTFOUND},
		{OP_BATCH, KT_EEXISTS},
		{OP_PUT, KT_ERESERVED},
		{OP_ATTR_SET, KT_ERESERVED},
		{OP_RENAME, KT_ELOOP},
		{OP_DELETE, KT_ENOTDIR},
		{OP_MKNOD, 0},
		{OP_MKNOD, KT_EEXISTS},
		{OP_MKNOD, KT_EINVAL},
		{OP_MKNOD, KT_ENOTDIR},
		{OP_LINK, 0},
		{OP_LINK, KT_ENOTFOUND},
		{OP_LINK, KT_EEXISTS},
		{OP_LINK, KT_EPERM},
		{OP_LINK, KT_ENOTDIR},
		{OP_LINK, KT_EINVAL},
		{OP_PUT, KT_EPERM},
		{OP_MKDIR, KT_EPERM},
		{OP_SYMLINK, KT_EPERM},
		{OP_WRITE, 0},
		{OP_WRITE, KT_EISDIR},
		{OP_WRITE, KT_ENOTFOUND},
		{OP_TRUNCATE, 0},
		{OP_SETATTR, 0},
		{OP_SETATTR, KT_ENOTFOUND},
	};
	size_t i;

	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (c->count[need[i].type][-need[i].rc] == 0)
			fail_msg("coverage: no %s returned %s in %lu steps",
				 model_op_names[need[i].type], model_rcname(need[i].rc),
				 c->step);
}


/* The context of the running test, released by model_teardown when a
 * failure jumped out of the test. */
static mctx *live_ctx;

/* A model holding only the root, for the fixture's empty store; choices
 * from the PRNG seeded with DEFAULT_SEED. */
static mctx *ctx_new(kt_test_fixture *f)
{
	model_config cfg = {0};
	mctx *c;

	cfg.store = &f->store;
	cfg.path = f->path;
	cfg.digest = kt_test_digest;
	cfg.fail = model_fail;
	cfg.seed = DEFAULT_SEED;
	cfg.check_every = CHECK_EVERY;
	c = model_new(&cfg);
	assert_non_null(c);
	live_ctx = c;
	return c;
}

static void ctx_free(mctx *c)
{
	model_free(c);
	live_ctx = NULL;
}

/* A random run of @p nops steps: the seed and logging from the
 * environment, reopenings spread over it, and its replay line printed
 * under @p label. */
static void run_setup(mctx *c, unsigned long nops, const char *label)
{
	model_use_prng(c, env_num("KT_MODEL_SEED", DEFAULT_SEED));
	if (getenv("KT_MODEL_VERBOSE") != NULL)
		c->cfg.log = stdout;
	c->cfg.reopen_every = nops / 4 < 5000 ? nops / 4 : 5000;
	printf("%s: KT_MODEL_SEED=%llu KT_MODEL_OPS=%lu\n", label,
	       (unsigned long long)c->seed, nops);
	fflush(stdout);
}

static void test_model__random_ops(void **state)
{
	kt_test_fixture *f = *state;
	mctx *c = ctx_new(f);
	unsigned long nops;
	struct timespec t0, t1;

	nops = (unsigned long)env_num("KT_MODEL_OPS", DEFAULT_OPS);
	run_setup(c, nops, "model");
	clock_gettime(CLOCK_MONOTONIC, &t0);

	model_run(c, nops);

	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("model: %lu steps in %.2f s\n", nops,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	print_stats(c);
	if (nops >= DEFAULT_OPS)
		check_coverage(c);

	ctx_free(c);
}

/* The same on a store made with typed names (FORMAT.md §3a): an alphabet
 * with numbers, "007" and a UUID, listings and their pages in the typed
 * order, finds by the typed prefix rule; a quarter of the steps. */
static void test_model__typed_names(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	mctx *c;
	unsigned long nops;
	int rc;

	kt_close(f->store);
	f->store = NULL;
	assert_int_equal(kt_destroy(f->path, NULL), 0);
	o.create_if_missing = 1;
	o.typed_names = 1;
	if ((rc = kt_open(&f->store, f->path, &o)) != 0)
		fail_msg("kt_open typed: %s", kt_errmsg());
	c = ctx_new(f);
	c->cfg.typed_names = 1;
	c->cfg.delimiter_names = 1;
	model_retune(c);
	nops = (unsigned long)env_num("KT_MODEL_OPS", DEFAULT_OPS) / 4;
	if (nops == 0)
		nops = 1;
	run_setup(c, nops, "model (typed names)");
	model_run(c, nops);
	print_stats(c);
	ctx_free(c);
}

static int set_op(mctx *c, int type, const char *p1, const char *p2,
		  unsigned int flags)
{
	c->o.type = type;
	snprintf(c->o.p1, sizeof(c->o.p1), "%s", p1);
	snprintf(c->o.p2, sizeof(c->o.p2), "%s", p2 ? p2 : "");
	c->o.flags = flags;
	c->o.null_opts = 0;
	c->o.aname = "x";
	c->o.vlen = 1;
	c->o.val[0] = (unsigned char)c->step;
	c->o.off = 0;
	c->o.smode = 0600;
	model_do_op(c, NULL, 0);
	model_end_step(c);
	c->step++;
	return c->last_rc;
}

/* Chains of 39, 40 and 41 links: KT_LINK_HOPS_MAX links may be followed in
 * one resolution, one more is KT_ELOOP, for readers and writers alike,
 * whether the chain is the last component or a middle one. */
static void test_model__link_hops(void **state)
{
	mctx *c = ctx_new(*state);
	char p[64], t[64];
	int k, i;

	set_op(c, OP_PUT, "/t/v", NULL, 0);
	for (k = KT_LINK_HOPS_MAX - 1; k <= KT_LINK_HOPS_MAX + 1; k++) {
		/* /h<k>/l0 -> l1 -> ... -> l<k-1> -> /t: k links */
		snprintf(p, sizeof(p), "/h%d", k);
		set_op(c, OP_MKDIR, p, NULL, 0);
		for (i = 0; i < k; i++) {
			snprintf(p, sizeof(p), "/h%d/l%d", k, i);
			if (i + 1 < k)
				snprintf(t, sizeof(t), "l%d", i + 1);
			else
				snprintf(t, sizeof(t), "/t");
			set_op(c, OP_SYMLINK, p, t, 0);
		}
		snprintf(p, sizeof(p), "/h%d/l0/v", k);
		set_op(c, OP_PUT, p, NULL, 0);
		set_op(c, OP_ATTR_SET, p, NULL, 0);
		snprintf(p, sizeof(p), "/h%d/l0/new", k);
		set_op(c, OP_MKDIR, p, NULL, 0);
		set_op(c, OP_RENAME, p, "/t/moved", 0);
		set_op(c, OP_DELETE, p, NULL, 0);
		snprintf(p, sizeof(p), "/h%d/l0", k);
		set_op(c, OP_ATTR_SET, p, NULL, 0);
		set_op(c, OP_PUT, p, NULL, 0);
		snprintf(p, sizeof(p), "/h%d/l%d", k, k - 1);
		set_op(c, OP_DELETE, p, NULL, 0);
		/* now the chain ends in a dangling link */
		snprintf(p, sizeof(p), "/h%d/l0", k);
		set_op(c, OP_PUT, p, NULL, 0);
	}
	assert_int_equal(c->count[OP_ATTR_SET][0], 4);
	assert_int_equal(c->count[OP_ATTR_SET][-KT_ELOOP], 2);
	assert_int_equal(c->count[OP_PUT][-KT_ELOOP], 2);
	model_check_all(c);
	ctx_free(c);
}

/* The number of paths of the node at @p path in the model. */
static uint32_t m_nlink(mctx *c, const char *path)
{
	mnode *n = model_find(c, path);

	return n ? n->b->nlink : 0;
}

/* Aliases, step by step: every call is also compared with the store (and
 * every path of the node it touched), and its code is the one the header
 * gives. */
static void test_model__aliases(void **state)
{
	mctx *c = ctx_new(*state);

	assert_int_equal(set_op(c, OP_PUT, "/s/i", NULL, 0), 0);
	/* newpath's ancestors are made */
	assert_int_equal(set_op(c, OP_LINK, "/s/i", "/c/x/i", 0), 0);
	assert_int_equal(m_nlink(c, "/c/x/i"), 2);
	assert_true(model_find(c, "/s/i")->b == model_find(c, "/c/x/i")->b);
	assert_int_equal(set_op(c, OP_LINK, "/s/i", "/c/x/i", 0), KT_EEXISTS);
	assert_int_equal(set_op(c, OP_LINK, "/s/i", "/s", 0), KT_EEXISTS);
	assert_int_equal(set_op(c, OP_LINK, "/nope", "/z", 0), KT_ENOTFOUND);
	assert_int_equal(set_op(c, OP_LINK, "/s", "/z", 0), KT_EPERM);
	assert_int_equal(set_op(c, OP_LINK, "/", "/z", 0), KT_EPERM);
	assert_int_equal(set_op(c, OP_LINK, "/s/i/x", "/z", 0), KT_ENOTDIR);
	assert_int_equal(set_op(c, OP_LINK, "/s/i", "/s/i/x", 0), KT_EPERM);
	/* changes through one path, compared through both */
	assert_int_equal(set_op(c, OP_PUT, "/c/x/i", NULL, 0), 0);
	assert_int_equal(set_op(c, OP_ATTR_SET, "/s/i", NULL, 0), 0);
	assert_int_equal(set_op(c, OP_WRITE, "/c/x/i", NULL, 0), 0);
	assert_int_equal(set_op(c, OP_SETATTR, "/c/x/i", NULL, 0), 0);
	assert_int_equal(model_find(c, "/s/i")->b->mode, 0600);
	assert_int_equal(set_op(c, OP_ATTR_DELETE, "/c/x/i", NULL, 0), 0);
	assert_int_equal(set_op(c, OP_TRUNCATE, "/s/i", NULL, 0), 0);
	/* an item with two paths gains no children */
	assert_int_equal(set_op(c, OP_PUT, "/c/x/i/y", NULL, 0), KT_EPERM);
	assert_int_equal(set_op(c, OP_MKDIR, "/s/i", NULL, 0), KT_EPERM);
	assert_int_equal(set_op(c, OP_MKDIR, "/s/i/y", NULL,
				KT_CREATE_PARENTS),
			 KT_EPERM);
	assert_int_equal(set_op(c, OP_MKDIR, "/s/i/y", NULL, 0), KT_ENOTDIR);
	assert_int_equal(set_op(c, OP_SYMLINK, "/s/i/y", "/s", 0), KT_EPERM);
	assert_int_equal(set_op(c, OP_LINK, "/s/i", "/s/i/y", 0), KT_EPERM);
	/* a symbolic link is linked itself, not followed */
	assert_int_equal(set_op(c, OP_SYMLINK, "/l", "/s/i", 0), 0);
	assert_int_equal(set_op(c, OP_LINK, "/l", "/l2", 0), 0);
	assert_int_equal(m_nlink(c, "/l2"), 2);
	assert_int_equal(m_nlink(c, "/s/i"), 2);
	assert_int_equal(set_op(c, OP_PUT, "/l2", NULL, 0), 0);
	/* rename onto another path of the node does nothing */
	assert_int_equal(set_op(c, OP_RENAME, "/s/i", "/c/x/i", 0), 0);
	assert_int_equal(m_nlink(c, "/s/i"), 2);
	assert_int_equal(set_op(c, OP_RENAME, "/s/i", "/c/x/i",
				KT_RENAME_EXCHANGE),
			 0);
	assert_int_equal(set_op(c, OP_RENAME, "/s/i", "/c/x/i",
				KT_RENAME_NOREPLACE),
			 KT_EEXISTS);
	/* rename moves one path */
	assert_int_equal(set_op(c, OP_RENAME, "/c/x/i", "/c/y", 0), 0);
	assert_null(model_find(c, "/c/x/i"));
	assert_int_equal(m_nlink(c, "/c/y"), 2);
	/* a rename over one path of another node removes that path only */
	assert_int_equal(set_op(c, OP_PUT, "/o", NULL, 0), 0);
	assert_int_equal(set_op(c, OP_RENAME, "/o", "/l2", 0), 0);
	assert_int_equal(m_nlink(c, "/l"), 1);
	/* unlink of one path */
	assert_int_equal(set_op(c, OP_LINK, "/c/y", "/d/i3", 0), 0);
	assert_int_equal(m_nlink(c, "/s/i"), 3);
	assert_int_equal(set_op(c, OP_DELETE, "/d/i3", NULL, 0), 0);
	assert_int_equal(m_nlink(c, "/s/i"), 2);
	assert_int_equal(set_op(c, OP_DELETE, "/c/y", NULL, KT_DELETE_ITEM),
			 0);
	assert_int_equal(m_nlink(c, "/s/i"), 1);
	/* a recursive delete of a directory holding two paths of a node */
	assert_int_equal(set_op(c, OP_LINK, "/s/i", "/r/a", 0), 0);
	assert_int_equal(set_op(c, OP_LINK, "/r/a", "/r/b", 0), 0);
	assert_int_equal(m_nlink(c, "/s/i"), 3);
	assert_int_equal(set_op(c, OP_DELETE, "/r", NULL, KT_DELETE_RECURSIVE),
			 0);
	assert_int_equal(m_nlink(c, "/s/i"), 1);
	/* with one path left it may become a directory again */
	assert_int_equal(set_op(c, OP_LINK, "/s/i", "/c/z", 0), 0);
	assert_int_equal(set_op(c, OP_DELETE, "/s/i", NULL, 0), 0);
	assert_int_equal(set_op(c, OP_MKDIR, "/c/z", NULL, 0), 0);
	assert_int_equal(set_op(c, OP_LINK, "/c/z", "/c/w", 0), KT_EPERM);
	/* everywhere at once */
	assert_int_equal(set_op(c, OP_PUT, "/e", NULL, 0), 0);
	assert_int_equal(set_op(c, OP_LINK, "/e", "/f/e", 0), 0);
	assert_int_equal(set_op(c, OP_LINK, "/f/e", "/g/h/e", 0), 0);
	assert_int_equal(set_op(c, OP_DELETE, "/f/e", NULL,
				KT_DELETE_ALL_PATHS | KT_DELETE_PRUNE),
			 0);
	assert_null(model_find(c, "/e"));
	assert_null(model_find(c, "/g/h/e"));
	assert_null(model_find(c, "/f"));
	assert_non_null(model_find(c, "/g/h"));
	model_check_all(c);
	ctx_free(c);
}

/* KT_LINK_MAX paths of one node, and then KT_EMLINK.  The paths are made
 * with the model and the store side by side, comparing only the codes
 * (comparing every path after each link would cost the square); the last
 * link, its refusal and an unlink go through do_op, and then the whole
 * tree is compared. */
static void test_model__link_max(void **state)
{
	mctx *c;
	char p[64];
	int i, want, got;

	KT_TEST_LONG_ON_RADOS();
	c = ctx_new(*state);

	assert_int_equal(set_op(c, OP_PUT, "/m/i", NULL, 0), 0);
	for (i = 1; i < KT_LINK_MAX - 1; i++) {
		snprintf(c->o.p2, sizeof(c->o.p2), "/m/p%d", i);
		strcpy(c->o.p1, i % 2 ? "/m/i" : "/m/p1");
		c->o.type = OP_LINK;
		model_describe(c, &c->o);
		want = model_apply(c, &c->o);
		got = model_store_apply(c, &c->o);
		if (want != 0 || got != 0)
			model_mismatch(c, "expected 0 from the model and the store, "
				 "got %s and %s", model_rcname(want), model_rcname(got));
	}
	assert_int_equal(m_nlink(c, "/m/i"), KT_LINK_MAX - 1);
	snprintf(p, sizeof(p), "/m/p%d", KT_LINK_MAX - 1);
	assert_int_equal(set_op(c, OP_LINK, "/m/p7", p, 0), 0);
	assert_int_equal(m_nlink(c, "/m/i"), KT_LINK_MAX);
	assert_int_equal(set_op(c, OP_LINK, "/m/i", "/m/q", 0), KT_EMLINK);
	assert_int_equal(set_op(c, OP_LINK, "/m/i", "/m/p1", 0), KT_EEXISTS);
	assert_int_equal(set_op(c, OP_DELETE, "/m/p3", NULL, 0), 0);
	assert_int_equal(set_op(c, OP_LINK, "/m/i", "/m/q", 0), 0);
	model_check_all(c);
	ctx_free(c);
}

static int model_teardown(void **state)
{
	if (live_ctx != NULL)
		ctx_free(live_ctx);
	return kt_test_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_model__link_hops,
						kt_test_setup, model_teardown),
		cmocka_unit_test_setup_teardown(test_model__aliases,
						kt_test_setup, model_teardown),
		cmocka_unit_test_setup_teardown(test_model__link_max,
						kt_test_setup, model_teardown),
		cmocka_unit_test_setup_teardown(test_model__random_ops,
						kt_test_setup, model_teardown),
		cmocka_unit_test_setup_teardown(test_model__typed_names,
						kt_test_setup, model_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
