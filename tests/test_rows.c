/*
 * test_rows.c - conformance of the storage seam (tree/src/rows.h): every
 * case runs against every engine listed in engines[] below, so that a new
 * engine (the remote one, RADOS) starts with the same suite.
 *
 * - Point reads: present, absent, present with an empty value.
 * - Scans of one partition forward and reverse, AFTER (both directions),
 *   FROM; PREFIX scans across partitions, a partition sorting before the
 *   ones it is a proper prefix of; binary sort keys with 0x00 and 0xff.
 * - Snapshots: a commit after the snapshot is invisible through it.
 * - Rows read again and again (the LevelDB engine's row cache) follow
 *   every commit, and a commit's rows are never seen in part.
 * - get_near reads as get does, in any order of keys.
 * - Commits: puts and deletes of one batch land together, in order; a
 *   refused commit applies nothing.
 * - Guarded commits: ROW conditions compare values (a row changed and
 *   restored still holds), SCAN conditions cover the rows the scan
 *   returned and, when it was complete, the rest of its range.
 * - empty() and sync().
 *
 * The tests reach the library's internals: they include rows.h and link
 * the static library, whose hidden symbols an executable can still use.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "kt_test.h"

#include "rows.h"
#include "server.h"

/* ------------------------------------------------------------------------ */
/* Engines.  To run the suite on another engine, add one line to engines[]
 * with a function that opens (creating if needed) the engine's store in a
 * given empty-or-existing directory, and, if closing needs more than the
 * engine's close (a server to stop), a function that does it. */

typedef struct engine {
	const char *name;
	/* Open the store kept in directory @p dir (made by the test), or
	 * create it; @p ctx may receive anything close needs. */
	int (*open)(kt__rows **out, void **ctx, const char *dir);
	/* Close what open gave; NULL: r->ops->close(r). */
	void (*close)(kt__rows *r, void *ctx);
	/* What the engine promises beyond the seam's minimum (rows.h):
	 * one snapshot of the whole store that later commits do not
	 * change; conditions checked row by row (else per partition, so a
	 * change to another row of a partition read fails the commit too);
	 * numbered commits (kt__commit.applied). */
	int whole_snapshot;
	int exact_conds;
	int numbered;
} engine;

static int leveldb_open(kt__rows **out, void **ctx, const char *dir)
{
	kt__leveldb_opts o = {1, 0, 0};

	*ctx = NULL;
	return kt__leveldb_open(out, dir, &o);
}

/* The remote engine: a LevelDB engine served by a server in this very
 * process, reached through the socket as another process would. */
typedef struct remote_ctx {
	kt__rows *ldb;
	kt__server *srv;
} remote_ctx;

static int remote_open(kt__rows **out, void **ctx, const char *dir)
{
	remote_ctx *rc = calloc(1, sizeof(*rc));
	int err;

	*out = NULL;
	*ctx = rc;
	if (rc == NULL)
		return KT_ENOMEM;
	if ((err = leveldb_open(&rc->ldb, ctx, dir)) != 0 ||
	    (err = kt__server_start(&rc->srv, rc->ldb, dir)) != 0 ||
	    (err = kt__remote_open(out, dir)) != 0) {
		kt__server_stop(rc->srv);
		if (rc->ldb != NULL)
			rc->ldb->ops->close(rc->ldb);
		free(rc);
		*ctx = NULL;
		return err;
	}
	*ctx = rc;
	return 0;
}

static void remote_close(kt__rows *r, void *ctx)
{
	remote_ctx *rc = ctx;

	r->ops->close(r);
	kt__server_stop(rc->srv);
	rc->ldb->ops->close(rc->ldb);
	free(rc);
}

#ifdef KT_HAVE_RADOS
/* The RADOS engine, on the cluster KEYTREE_CEPH_CONF names (the ctest
 * fixture starts one), in pool "keytree": a new tree per test, named
 * after the test's temporary directory. */
static int rados_open(kt__rows **out, void **ctx, const char *dir)
{
	kt__rados_opts o;
	char tree[64];
	const char *conf = getenv("KEYTREE_CEPH_CONF");
	const char *base = strrchr(dir, '/');
	unsigned long h = 5381;

	*ctx = NULL;
	if (conf == NULL || conf[0] == '\0') {
		fprintf(stderr, "rados: KEYTREE_CEPH_CONF is not set: start a "
			"cluster with scripts/ceph-dev start\n");
		return KT_EINVAL;
	}
	for (base = dir; *base; base++)
		h = h * 33 + (unsigned char)*base;
	snprintf(tree, sizeof(tree), "rows-%ld-%lx", (long)getpid(), h);
	memset(&o, 0, sizeof(o));
	o.pool = "keytree";
	o.tree = tree;
	o.conf = conf;
	o.create = 1;
	return kt__rados_open(out, &o);
}
#endif

static const engine engines[] = {
	{"leveldb", leveldb_open, NULL, 1, 1, 1},
	{"remote", remote_open, remote_close, 1, 1, 1},
#ifdef KT_HAVE_RADOS
	{"rados", rados_open, NULL, 0, 0, 0},
#endif
};

/* The engine the current group runs on (cmocka runs groups one after the
 * other, in this thread). */
static const engine *engine_now;

typedef struct fixture {
	char dir[256];   /* temporary directory */
	char store[300]; /* the engine's store in it */
	kt__rows *r;
	void *ctx;
} fixture;

static void engine_close(fixture *f)
{
	if (f->r == NULL)
		return;
	if (engine_now->close != NULL)
		engine_now->close(f->r, f->ctx);
	else
		f->r->ops->close(f->r);
	f->r = NULL;
	f->ctx = NULL;
}

static int engine_open(fixture *f)
{
	int rc = engine_now->open(&f->r, &f->ctx, f->store);

	if (rc != 0)
		fprintf(stderr, "%s: open '%s': %d (%s)\n", engine_now->name,
			f->store, rc, kt_errmsg());
	return rc;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/kt-rows-XXXXXX",
		 tmp ? tmp : "/tmp");
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->store, sizeof(f->store), "%s/rows", f->dir);
	if (engine_open(f) != 0) {
		kt_test_rmtree(f->dir);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	if (f == NULL)
		return 0;
	engine_close(f);
	kt_test_rmtree(f->dir);
	free(f);
	return 0;
}

static kt__rows *rows_of(void **state)
{
	return ((fixture *)*state)->r;
}

/* ------------------------------------------------------------------------ */
/* Helpers. */

/* A slice of a string literal, embedded NULs included. */
#define L(s) kt__sl((s), sizeof(s) - 1)

/* Fail unless @p call returns @p want, showing the library's message. */
#define expect_rc(call, want)                                                  \
	do {                                                                   \
		int er__rc = (call);                                           \
		if (er__rc != (want))                                          \
			fail_msg("%s: got %d, want %d (%s)", #call, er__rc,    \
				 (int)(want), kt_errmsg());                    \
	} while (0)

/* A commit being built: writes and conditions, each up to 16. */
typedef struct batch {
	kt__write w[16];
	size_t nw;
	kt__cond c[16];
	size_t nc;
} batch;

static void b_put(batch *b, kt__slice part, kt__slice sort, kt__slice val)
{
	assert_true(b->nw < 16);
	memset(&b->w[b->nw], 0, sizeof(b->w[0]));
	b->w[b->nw].part = part;
	b->w[b->nw].sort = sort;
	b->w[b->nw].value = val;
	b->nw++;
}

static void b_del(batch *b, kt__slice part, kt__slice sort)
{
	assert_true(b->nw < 16);
	memset(&b->w[b->nw], 0, sizeof(b->w[0]));
	b->w[b->nw].part = part;
	b->w[b->nw].sort = sort;
	b->w[b->nw].del = 1;
	b->nw++;
}

/* A ROW condition: (part, sort) reads at the snapshot as it does now. */
static void b_row(batch *b, kt__slice part, kt__slice sort)
{
	assert_true(b->nc < 16);
	memset(&b->c[b->nc], 0, sizeof(b->c[0]));
	b->c[b->nc].kind = KT__COND_ROW;
	b->c[b->nc].part = part;
	b->c[b->nc].sort = sort;
	b->nc++;
}

/* A SCAN condition: scan @p how returned @p nrows rows at the snapshot,
 * and then (when @p complete) no more. */
static void b_scan(batch *b, const kt__scan *how, uint64_t nrows,
		   int complete)
{
	assert_true(b->nc < 16);
	memset(&b->c[b->nc], 0, sizeof(b->c[0]));
	b->c[b->nc].kind = KT__COND_SCAN;
	b->c[b->nc].how = *how;
	b->c[b->nc].nrows = nrows;
	b->c[b->nc].complete = complete;
	b->nc++;
}

/* Commit b, guarded by its conditions read at @p snap (NULL: none). */
static int b_commit(kt__rows *r, const batch *b, const kt__snap *snap)
{
	kt__commit cm;

	memset(&cm, 0, sizeof(cm));
	cm.w = b->w;
	cm.nw = b->nw;
	cm.snap = snap;
	cm.c = b->c;
	cm.nc = b->nc;
	return r->ops->commit(r, &cm);
}

/* Unconditional single writes. */
static void put(kt__rows *r, kt__slice part, kt__slice sort, kt__slice val)
{
	batch b = {0};

	b_put(&b, part, sort, val);
	expect_rc(b_commit(r, &b, NULL), 0);
}

static void del(kt__rows *r, kt__slice part, kt__slice sort)
{
	batch b = {0};

	b_del(&b, part, sort);
	expect_rc(b_commit(r, &b, NULL), 0);
}

/* A snapshot, fixed: the seam fixes a snapshot no later than its first
 * read (the remote engine takes it on the holder with that read), so a
 * read through it comes first, as in a transaction. */
static kt__snap *snap_take(kt__rows *r)
{
	kt__snap *s = NULL;
	kt__buf v = {0};
	int rc;

	expect_rc(r->ops->snapshot(&s, r), 0);
	assert_non_null(s);
	rc = r->ops->get(r, s, kt__sl("/fix", 4), kt__sl("", 0), &v);
	assert_true(rc == 0 || rc == KT_ENOTFOUND);
	kt__buf_free(&v);
	return s;
}

/* Read through @p s what the condition tests name, before anything else
 * changes: an engine without a whole-store snapshot (RADOS) fixes each
 * partition at its first read through the snapshot, and a transaction's
 * conditions are always things it read (rows.h). */
static void fix(kt__rows *r, kt__snap *s)
{
	static const char *const parts[] = {"p", "q", "empty", "n", "pp"};
	kt__scan how;
	kt__cursor *c = NULL;
	kt__row row;
	size_t i;
	int rc;

	memset(&how, 0, sizeof(how));
	how.part = kt__sl("", 0);
	how.flags = KT__SCAN_PREFIX;
	for (i = 0; i <= sizeof(parts) / sizeof(parts[0]); i++) {
		if (i > 0) {
			how.part = kt__sl(parts[i - 1], strlen(parts[i - 1]));
			how.flags = 0;
		}
		expect_rc(r->ops->scan(&c, r, s, &how), 0);
		while ((rc = r->ops->next(c, &row)) == 0)
			;
		expect_rc(rc, KT_ITEROVER);
		r->ops->cursor_free(c);
	}
}

/* Run scan @p how through @p s to its end, as a transaction whose
 * condition it becomes would have. */
static void scan_all(kt__rows *r, kt__snap *s, const kt__scan *how)
{
	kt__cursor *c = NULL;
	kt__row row;
	int rc;

	expect_rc(r->ops->scan(&c, r, s, how), 0);
	while ((rc = r->ops->next(c, &row)) == 0)
		;
	expect_rc(rc, KT_ITEROVER);
	r->ops->cursor_free(c);
}

/* What a commit that engines with exact conditions apply gives on the
 * others. */
#define EXACT_OK (engine_now->exact_conds ? 0 : KT__ERETRY)

/* Bytes as text: printable ASCII but the separators " /=\" as is, the
 * rest as \xHH, so binary keys show in failure messages. */
static void show(kt_test_str *s, kt__slice b)
{
	size_t i;

	for (i = 0; i < b.len; i++) {
		unsigned char c = (unsigned char)b.p[i];
		if (c > 0x20 && c < 0x7f && c != '/' && c != '=' &&
		    c != '\\')
			kt_test_str_add(s, &c, 1);
		else
			kt_test_str_addf(s, "\\x%02x", c);
	}
}

/* What a read of @p what answered (@p rc, value @p v, which is freed) as
 * text: "=value" or "(absent)". */
static char *read_text(const char *what, int rc, kt__buf *v)
{
	kt_test_str s = {0};

	if (rc == KT_ENOTFOUND) {
		kt_test_str_add(&s, "(absent)", 8);
	} else {
		if (rc != 0)
			fail_msg("%s: %d (%s)", what, rc, kt_errmsg());
		kt_test_str_add(&s, "=", 1);
		show(&s, kt__slb(v));
	}
	kt__buf_free(v);
	return s.p;
}

/* The value of (part, sort) at @p snap as text, or "(absent)". */
static char *get_text(kt__rows *r, const kt__snap *snap, kt__slice part,
		      kt__slice sort)
{
	kt__buf v = {0};

	return read_text("get", r->ops->get(r, snap, part, sort, &v), &v);
}

#define assert_get(r, snap, part, sort, want)                                  \
	do {                                                                   \
		char *ag__t = get_text((r), (snap), (part), (sort));           \
		assert_string_equal(ag__t, (want));                            \
		free(ag__t);                                                   \
	} while (0)

/* Rows a scan returns, as text "part/sort=value ..." ("" when none);
 * at most @p max rows (0: all). */
static char *scan_text_n(kt__rows *r, const kt__snap *snap,
			 const kt__scan *how, size_t max)
{
	kt__cursor *c = NULL;
	kt__row row;
	kt_test_str s = {0};
	size_t n = 0;
	int rc = KT_ITEROVER;

	expect_rc(r->ops->scan(&c, r, snap, how), 0);
	kt_test_str_add(&s, "", 0); /* "" when there are no rows */
	while ((max == 0 || n < max) && (rc = r->ops->next(c, &row)) == 0) {
		if (n++ > 0)
			kt_test_str_add(&s, " ", 1);
		show(&s, row.part);
		kt_test_str_add(&s, "/", 1);
		show(&s, row.sort);
		kt_test_str_add(&s, "=", 1);
		show(&s, row.value);
	}
	if ((max == 0 || n < max) && rc != KT_ITEROVER)
		fail_msg("next: %d (%s)", rc, kt_errmsg());
	r->ops->cursor_free(c);
	return s.p;
}

#define assert_scan(r, snap, how, want)                                        \
	do {                                                                   \
		char *as__t = scan_text_n((r), (snap), (how), 0);              \
		assert_string_equal(as__t, (want));                            \
		free(as__t);                                                   \
	} while (0)

/* A scan description. */
static kt__scan scan_of(kt__slice part, unsigned int flags)
{
	kt__scan how;

	memset(&how, 0, sizeof(how));
	how.part = part;
	how.flags = flags;
	return how;
}

/* Every row of the store, in order. */
static char *dump(kt__rows *r)
{
	kt__scan all = scan_of(L(""), KT__SCAN_PREFIX);

	return scan_text_n(r, NULL, &all, 0);
}

/* Fill partition "p" with a, c, e (values 1, 3, 5) and a neighbour
 * partition "q" with x. */
static void fill_ace(kt__rows *r)
{
	batch b = {0};

	b_put(&b, L("p"), L("a"), L("1"));
	b_put(&b, L("p"), L("c"), L("3"));
	b_put(&b, L("p"), L("e"), L("5"));
	b_put(&b, L("q"), L("x"), L("9"));
	expect_rc(b_commit(r, &b, NULL), 0);
}

/* ------------------------------------------------------------------------ */
/* Reads. */

static void test_rows__get_present_absent(void **state)
{
	kt__rows *r = rows_of(state);

	put(r, L("p"), L("k"), L("value"));
	put(r, L("p"), L(""), L(""));
	assert_get(r, NULL, L("p"), L("k"), "=value");
	/* A row with an empty value is there, unlike an absent one. */
	assert_get(r, NULL, L("p"), L(""), "=");
	assert_get(r, NULL, L("p"), L("kk"), "(absent)");
	assert_get(r, NULL, L("p"), L("\0"), "(absent)");
	assert_get(r, NULL, L("pk"), L(""), "(absent)");
	assert_get(r, NULL, L("q"), L("k"), "(absent)");
	del(r, L("p"), L("k"));
	assert_get(r, NULL, L("p"), L("k"), "(absent)");
	/* Deleting an absent row is no error. */
	del(r, L("p"), L("never"));
}

static void test_rows__scan_forward_reverse(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan fwd = scan_of(L("p"), 0);
	kt__scan rev = scan_of(L("p"), KT__SCAN_REVERSE);
	kt__scan none = scan_of(L("nothing"), 0);

	fill_ace(r);
	/* Neighbours of "p" in key order must not leak into its scan. */
	put(r, L("o"), L("z"), L("0"));
	put(r, L("pa"), L("a"), L("0"));
	assert_scan(r, NULL, &fwd, "p/a=1 p/c=3 p/e=5");
	assert_scan(r, NULL, &rev, "p/e=5 p/c=3 p/a=1");
	assert_scan(r, NULL, &none, "");
	none.flags = KT__SCAN_REVERSE;
	assert_scan(r, NULL, &none, "");
}

static void test_rows__scan_after(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), KT__SCAN_AFTER);

	fill_ace(r);
	how.after = L("a"); /* a row */
	assert_scan(r, NULL, &how, "p/c=3 p/e=5");
	how.after = L("b"); /* between rows */
	assert_scan(r, NULL, &how, "p/c=3 p/e=5");
	how.after = L("e"); /* the last row */
	assert_scan(r, NULL, &how, "");
	how.after = L(""); /* before everything */
	assert_scan(r, NULL, &how, "p/a=1 p/c=3 p/e=5");

	how.flags = KT__SCAN_AFTER | KT__SCAN_REVERSE;
	how.after = L("e");
	assert_scan(r, NULL, &how, "p/c=3 p/a=1");
	how.after = L("d");
	assert_scan(r, NULL, &how, "p/c=3 p/a=1");
	how.after = L("a");
	assert_scan(r, NULL, &how, "");
	how.after = L("z");
	assert_scan(r, NULL, &how, "p/e=5 p/c=3 p/a=1");
}

static void test_rows__scan_from(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), KT__SCAN_FROM);

	fill_ace(r);
	how.from = L("c"); /* a row: included */
	assert_scan(r, NULL, &how, "p/c=3 p/e=5");
	how.from = L("b");
	assert_scan(r, NULL, &how, "p/c=3 p/e=5");
	how.from = L("");
	assert_scan(r, NULL, &how, "p/a=1 p/c=3 p/e=5");
	how.from = L("f");
	assert_scan(r, NULL, &how, "");
}

/* Rows of partition "/id" (the tree layer's id index, sort key the id in
 * 8 bytes big-endian) keep the seam's order and conditions on every
 * engine, whatever an engine does with them inside: RADOS keeps each
 * chunk of 1024 ids in an object of its own (rows_rados.c).  Ids 1, 1024,
 * 1025, 3000 and 2^40 fall into four chunks; "/ida" and "/meta" are
 * partitions next to it. */
#define ID8(n) L("\0\0\0\0\0\0" n)
static void test_rows__id_partition(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan id = scan_of(L("/id"), 0);
	kt__scan all = scan_of(L("/"), KT__SCAN_PREFIX);
	kt__scan after = scan_of(L("/id"), KT__SCAN_AFTER);
	kt__scan from = scan_of(L("/id"), KT__SCAN_FROM);
	kt__snap *s;
	batch b = {0};

	/* Written out of order, in one commit. */
	b_put(&b, L("/id"), L("\0\0\0\x01\0\0\0\0"), L("e"));
	b_put(&b, L("/id"), ID8("\x0b\xb8"), L("d"));
	b_put(&b, L("/meta"), L("m"), L("9"));
	b_put(&b, L("/id"), ID8("\x04\x01"), L("c"));
	b_put(&b, L("/ida"), L("x"), L("8"));
	b_put(&b, L("/id"), ID8("\x04\x00"), L("b"));
	b_put(&b, L("/id"), ID8("\x00\x01"), L("a"));
	expect_rc(b_commit(r, &b, NULL), 0);

	assert_get(r, NULL, L("/id"), ID8("\x04\x01"), "=c");
	assert_get(r, NULL, L("/id"), ID8("\x04\x02"), "(absent)");
	assert_scan(r, NULL, &id,
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01=a "
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x04\\x00=b "
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x04\\x01=c "
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x0b\\xb8=d "
		    "\\x2fid/\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00=e");
	/* The whole key space: "/id" as one partition, then its
	 * neighbours. */
	assert_scan(r, NULL, &all,
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01=a "
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x04\\x00=b "
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x04\\x01=c "
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x0b\\xb8=d "
		    "\\x2fid/\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00=e "
		    "\\x2fida/x=8 \\x2fmeta/m=9");
	after.after = ID8("\x04\x00"); /* the last id of a chunk */
	assert_scan(r, NULL, &after,
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x04\\x01=c "
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x0b\\xb8=d "
		    "\\x2fid/\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00=e");
	from.from = ID8("\x0b\xb8");
	assert_scan(r, NULL, &from,
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x0b\\xb8=d "
		    "\\x2fid/\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00=e");
	from.from = ID8("\x0b\xb9");
	assert_scan(r, NULL, &from,
		    "\\x2fid/\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00=e");

	/* A scan of "/id" as a condition: a row added in another chunk
	 * than any it returned still fails the commit. */
	s = snap_take(r);
	scan_all(r, s, &id);
	put(r, L("/id"), ID8("\x20\x00"), L("f"));
	memset(&b, 0, sizeof(b));
	b_scan(&b, &id, 5, 1);
	b_put(&b, L("w"), L(""), L("written"));
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	assert_get(r, NULL, L("w"), L(""), "(absent)");
	r->ops->snapshot_free(r, s);

	/* A row condition on one id: a change of it fails the commit. */
	s = snap_take(r);
	assert_get(r, s, L("/id"), ID8("\x0b\xb8"), "=d");
	put(r, L("/id"), ID8("\x0b\xb8"), L("D"));
	memset(&b, 0, sizeof(b));
	b_row(&b, L("/id"), ID8("\x0b\xb8"));
	b_put(&b, L("w"), L(""), L("written"));
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	assert_get(r, NULL, L("w"), L(""), "(absent)");
	r->ops->snapshot_free(r, s);

	/* Deletes reach the right place. */
	del(r, L("/id"), ID8("\x04\x00"));
	del(r, L("/id"), ID8("\x20\x00"));
	assert_scan(r, NULL, &id,
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01=a "
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x04\\x01=c "
		    "\\x2fid/\\x00\\x00\\x00\\x00\\x00\\x00\\x0b\\xb8=D "
		    "\\x2fid/\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00=e");
}

static void test_rows__scan_prefix(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("a"), KT__SCAN_PREFIX);
	batch b = {0};

	/* Written out of order, so that the order seen is the engine's. */
	b_put(&b, L("ab"), L(""), L("2"));
	b_put(&b, L("b"), L(""), L("4"));
	b_put(&b, L("a"), L("\xff\xff"), L("1"));
	b_put(&b, L("a"), L(""), L("0"));
	b_put(&b, L("a\x01"), L("x"), L("5"));
	b_put(&b, L("ab"), L("c"), L("3"));
	b_put(&b, L("`"), L("z"), L("6")); /* '`' sorts just before 'a' */
	expect_rc(b_commit(r, &b, NULL), 0);

	/* Partition "a" (even its sort key ff ff) comes before "a\x01" and
	 * "ab", which it is a proper prefix of. */
	assert_scan(r, NULL, &how,
		    "a/=0 a/\\xff\\xff=1 a\\x01/x=5 ab/=2 ab/c=3");
	how.part = L("ab");
	assert_scan(r, NULL, &how, "ab/=2 ab/c=3");
	how.part = L("abc");
	assert_scan(r, NULL, &how, "");
	how.part = L("");
	assert_scan(r, NULL, &how,
		    "`/z=6 a/=0 a/\\xff\\xff=1 a\\x01/x=5 ab/=2 ab/c=3 b/=4");
}

/* A prefix ending in 0xff bytes covers exactly the partitions that start
 * with it (the range's end cannot be found by incrementing the last
 * byte). */
/* A prefix scan that resumes after a partition (a find's continuation):
 * that partition is left out, the ones it is a prefix of are not, and a
 * bound outside the prefix's range gives all or nothing. */
static void test_rows__scan_prefix_after(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("a"), KT__SCAN_PREFIX | KT__SCAN_AFTER);
	kt__snap *s;
	batch b = {0};

	b_put(&b, L("ab"), L(""), L("2"));
	b_put(&b, L("b"), L(""), L("4"));
	b_put(&b, L("a"), L("\xff\xff"), L("1"));
	b_put(&b, L("a"), L(""), L("0"));
	b_put(&b, L("a\x01"), L("x"), L("5"));
	b_put(&b, L("ab"), L("c"), L("3"));
	b_put(&b, L("abd"), L(""), L("7"));
	b_put(&b, L("`"), L("z"), L("6"));
	expect_rc(b_commit(r, &b, NULL), 0);

	how.after = L("a");
	assert_scan(r, NULL, &how, "a\\x01/x=5 ab/=2 ab/c=3 abd/=7");
	how.after = L("a\x01");
	assert_scan(r, NULL, &how, "ab/=2 ab/c=3 abd/=7");
	how.after = L("aa"); /* no such partition: what follows it */
	assert_scan(r, NULL, &how, "ab/=2 ab/c=3 abd/=7");
	how.after = L("ab");
	assert_scan(r, NULL, &how, "abd/=7");
	how.after = L("abd");
	assert_scan(r, NULL, &how, "");
	how.after = L("`"); /* before the prefix: all of it */
	assert_scan(r, NULL, &how,
		    "a/=0 a/\\xff\\xff=1 a\\x01/x=5 ab/=2 ab/c=3 abd/=7");
	how.after = L("b"); /* past it: nothing */
	assert_scan(r, NULL, &how, "");
	how.part = L("");
	how.after = L("ab");
	assert_scan(r, NULL, &how, "abd/=7 b/=4");

	/* As a condition: a row added after the bound fails the commit,
	 * one added before it does not on an engine with exact
	 * conditions. */
	how.part = L("a");
	how.after = L("a\x01");
	s = snap_take(r);
	fix(r, s);
	scan_all(r, s, &how);
	put(r, L("a"), L("new"), L("8"));
	memset(&b, 0, sizeof(b));
	b_scan(&b, &how, 3, 1);
	b_put(&b, L("w"), L(""), L("1"));
	expect_rc(b_commit(r, &b, s), EXACT_OK);
	put(r, L("ab"), L("d"), L("9"));
	memset(&b, 0, sizeof(b));
	b_scan(&b, &how, 3, 1);
	b_put(&b, L("w"), L(""), L("2"));
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	r->ops->snapshot_free(r, s);
}

static void test_rows__scan_prefix_ff(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("b\xff"), KT__SCAN_PREFIX);
	batch b = {0};

	b_put(&b, L("b"), L("\xff"), L("0"));
	b_put(&b, L("b\xfe"), L(""), L("1"));
	b_put(&b, L("b\xff"), L(""), L("2"));
	b_put(&b, L("b\xff\xff"), L("s"), L("3"));
	b_put(&b, L("c"), L(""), L("4"));
	b_put(&b, L("\xff"), L(""), L("5"));
	b_put(&b, L("\xff\xff"), L("t"), L("6"));
	expect_rc(b_commit(r, &b, NULL), 0);
	assert_scan(r, NULL, &how, "b\\xff/=2 b\\xff\\xff/s=3");
	how.part = L("\xff");
	assert_scan(r, NULL, &how, "\\xff/=5 \\xff\\xff/t=6");
	how.part = L("\xff\xff");
	assert_scan(r, NULL, &how, "\\xff\\xff/t=6");
}

static void test_rows__binary_sort_keys(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), 0);
	batch b = {0};

	b_put(&b, L("p"), L("\xff\xff"), L("6"));
	b_put(&b, L("p"), L("\x01"), L("4"));
	b_put(&b, L("p"), L("\0\0"), L("3"));
	b_put(&b, L("p"), L("\xff"), L("5"));
	b_put(&b, L("p"), L("\0"), L("2"));
	b_put(&b, L("p"), L(""), L("1"));
	/* Partitions next to "p" in LevelDB's key order. */
	b_put(&b, L("p\x01"), L(""), L("x"));
	b_put(&b, L("o\xff"), L("\xff"), L("y"));
	expect_rc(b_commit(r, &b, NULL), 0);

	assert_get(r, NULL, L("p"), L("\0"), "=2");
	assert_get(r, NULL, L("p"), L("\0\0"), "=3");
	assert_get(r, NULL, L("p"), L(""), "=1");
	assert_scan(r, NULL, &how,
		    "p/=1 p/\\x00=2 p/\\x00\\x00=3 p/\\x01=4 p/\\xff=5 "
		    "p/\\xff\\xff=6");
	how.flags = KT__SCAN_REVERSE;
	assert_scan(r, NULL, &how,
		    "p/\\xff\\xff=6 p/\\xff=5 p/\\x01=4 p/\\x00\\x00=3 "
		    "p/\\x00=2 p/=1");
	how.flags = KT__SCAN_AFTER;
	how.after = L("\0");
	assert_scan(r, NULL, &how, "p/\\x00\\x00=3 p/\\x01=4 p/\\xff=5 "
				   "p/\\xff\\xff=6");
	how.after = L("\xff");
	assert_scan(r, NULL, &how, "p/\\xff\\xff=6");
	how.after = L("\xff\xff");
	assert_scan(r, NULL, &how, "");
	how.flags = KT__SCAN_AFTER | KT__SCAN_REVERSE;
	how.after = L("\0\0");
	assert_scan(r, NULL, &how, "p/\\x00=2 p/=1");
	how.after = L("\0");
	assert_scan(r, NULL, &how, "p/=1");
	how.after = L("");
	assert_scan(r, NULL, &how, "");
	how.flags = KT__SCAN_FROM;
	how.from = L("\xff");
	assert_scan(r, NULL, &how, "p/\\xff=5 p/\\xff\\xff=6");
	how.from = L("\0");
	assert_scan(r, NULL, &how, "p/\\x00=2 p/\\x00\\x00=3 p/\\x01=4 "
				   "p/\\xff=5 p/\\xff\\xff=6");
}

/* What get_near (rows.h) reads through @p snap, as get_text; an engine
 * without it is read with get. */
static char *near_text(kt__rows *r, const kt__snap *snap, kt__slice part)
{
	kt__buf v = {0};
	int rc = r->ops->get_near != NULL
			 ? r->ops->get_near(r, snap, part, L(""), &v)
			 : r->ops->get(r, snap, part, L(""), &v);

	return read_text("get_near", rc, &v);
}

/* get_near answers as get does, through one snapshot, whatever the order
 * of the reads: a row a step on, the same row again, absent keys between
 * rows (which LevelDB finds by stepping past them), rows further on than
 * it steps, rows behind the last one read, keys past the last row, and
 * reads after plain gets.  Rows changed after the snapshot are not seen
 * (on an engine whose snapshot is the whole store at one moment). */
static void test_rows__get_near(void **state)
{
	kt__rows *r = rows_of(state);
	/* "-": a plain get of k30 in between. */
	static const char *const seq[] = {
		"k00", "k01", "k01", "k015", "k02", "k03", "k05", "k05x",
		"k06", "k40", "k41", "k10", "k11", "-", "k12", "k13", "k59",
		"k60", "zz", "k00", "a", "k58", "k59", "k2", "k20", "-",
		"k21", "k23",
	};
	char part[8], val[8], want[16];
	kt__snap *s;
	size_t i;
	int n;

	if (strcmp(engine_now->name, "leveldb") == 0)
		assert_non_null(r->ops->get_near);
	for (i = 0; i < 60; i++) {
		snprintf(part, sizeof(part), "k%02zu", i);
		snprintf(val, sizeof(val), "v%zu", i);
		put(r, kt__sl(part, strlen(part)), L(""),
		    kt__sl(val, strlen(val)));
		/* Rows of its own after some node rows, as attributes. */
		if (i % 3 == 0)
			put(r, kt__sl(part, strlen(part)), L("attr"), L("x"));
	}
	s = snap_take(r);
	/* What a snapshot of the whole store must not see (an engine
	 * whose snapshot is not one moment reads the latest state). */
	if (engine_now->whole_snapshot) {
		put(r, L("k02"), L(""), L("late"));
		del(r, L("k05"), L(""));
		put(r, L("k05x"), L(""), L("new"));
	}
	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		const char *k = strcmp(seq[i], "-") == 0 ? "k30" : seq[i];
		char *got;

		if (strlen(k) == 3 && k[0] == 'k' && sscanf(k + 1, "%d", &n) == 1 &&
		    n < 60)
			snprintf(want, sizeof(want), "=v%d", n);
		else
			snprintf(want, sizeof(want), "(absent)");
		if (strcmp(seq[i], "-") == 0) {
			assert_get(r, s, kt__sl(k, strlen(k)), L(""), want);
			continue;
		}
		got = near_text(r, s, kt__sl(k, strlen(k)));
		if (strcmp(got, want) != 0)
			fail_msg("read %zu, of %s: %s, want %s", i, k, got,
				 want);
		free(got);
	}
	r->ops->snapshot_free(r, s);
}

/* Call @p fn on the path of each LevelDB table file of @p store; the
 * count of them. */
static int each_table(const char *store, void (*fn)(const char *, void *),
		      void *arg)
{
	char path[600];
	struct dirent *de;
	DIR *d;
	int n = 0;

	assert_non_null(d = opendir(store));
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l < 4 || strcmp(de->d_name + l - 4, ".ldb") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", store, de->d_name);
		fn(path, arg);
		n++;
	}
	closedir(d);
	return n;
}

/* each_table: keep the largest table in *(biggest *). */
typedef struct biggest {
	off_t size;
	char path[600];
} biggest;

static void keep_biggest(const char *path, void *arg)
{
	biggest *b = arg;
	struct stat st;

	if (stat(path, &st) == 0 && st.st_size > b->size) {
		b->size = st.st_size;
		snprintf(b->path, sizeof(b->path), "%s", path);
	}
}

/* each_table: append 100 zero bytes to the table. */
static void pad_table(const char *path, void *arg)
{
	static const char pad[100];
	FILE *fp;

	(void)arg;
	assert_non_null(fp = fopen(path, "ab"));
	assert_int_equal(fwrite(pad, 1, sizeof(pad), fp), sizeof(pad));
	assert_int_equal(fclose(fp), 0);
}

/* One step of a cursor on a thread of its own (test_rows__damaged_block). */
typedef struct step_arg {
	kt__rows *r;
	kt__cursor *c;
	const char *get_first; /* a row to get first, failing or not */
	int rc;
	char part[16];
} step_arg;

static void *step_thread(void *arg)
{
	step_arg *a = arg;
	kt__buf v = {0};
	kt__row row;

	if (a->get_first != NULL)
		(void)a->r->ops->get(a->r, NULL,
				     kt__sl(a->get_first, strlen(a->get_first)),
				     L(""), &v);
	kt__buf_free(&v);
	a->rc = a->r->ops->next(a->c, &row);
	if (a->rc == 0)
		snprintf(a->part, sizeof(a->part), "%.*s", (int)row.part.len,
			 row.part.p);
	return NULL;
}

static void step_on_new_thread(step_arg *a)
{
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, step_thread, a), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

/* A table block damaged in the middle of the store (LevelDB engines: a
 * byte of a table file flipped).  LevelDB's iterator steps over such a
 * block and only notes it in its status; the engine asks after each move
 * that read a table file, so a scan returns the rows before the damage
 * with no gap and then the error, never fewer rows as if they were not
 * there; and get_near of each row in order reads each one or fails,
 * never says absent. */
static void test_rows__damaged_block(void **state)
{
	fixture *f = *state;
	char part[16], val[300];
	unsigned char b;
	kt__scan how;
	kt__cursor *c = NULL;
	kt__row row;
	kt__snap *sn;
	kt__buf v = {0};
	biggest big = {0, ""};
	off_t size;
	FILE *fp;
	int i, j, n, rc, got, failed = 0;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	if (engine_now->whole_snapshot == 0) {
		fprintf(stderr, "skipped on %s: it damages a LevelDB table "
			"file\n", engine_now->name);
		skip();
	}
	for (i = 0; i < 3000; i++) {
		snprintf(part, sizeof(part), "p%05d", i);
		for (j = 0; j < (int)sizeof(val); j++) {
			x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
			val[j] = (char)(x * 0x2545f4914f6cdd1dull >> 56);
		}
		put(f->r, kt__sl(part, strlen(part)), L(""),
		    kt__sl(val, sizeof(val)));
	}
	/* Reopened, the log becomes a table file. */
	engine_close(f);
	assert_int_equal(engine_open(f), 0);
	engine_close(f);
	each_table(f->store, keep_biggest, &big);
	size = big.size;
	assert_true(size > 500000);
	assert_non_null(fp = fopen(big.path, "r+b"));
	assert_int_equal(fseeko(fp, size / 2, SEEK_SET), 0);
	assert_int_equal(fread(&b, 1, 1, fp), 1);
	b ^= 0x5a;
	assert_int_equal(fseeko(fp, size / 2, SEEK_SET), 0);
	assert_int_equal(fwrite(&b, 1, 1, fp), 1);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(engine_open(f), 0);

	how = scan_of(L("p"), KT__SCAN_PREFIX);
	expect_rc(f->r->ops->scan(&c, f->r, NULL, &how), 0);
	for (n = 0; (rc = f->r->ops->next(c, &row)) == 0; n++) {
		snprintf(part, sizeof(part), "p%05d", n);
		if (row.part.len != strlen(part) ||
		    memcmp(row.part.p, part, row.part.len) != 0)
			fail_msg("row %d of the scan is %.*s: a gap before it",
				 n, (int)row.part.len, row.part.p);
	}
	f->r->ops->cursor_free(c);
	assert_int_equal(rc, KT_ECORRUPT);
	assert_true(n > 0 && n < 3000);

	/* The same cursor moved by two threads, one after the other (the
	 * second made when the first has ended, as a pool would): the first
	 * fails to read the damaged block once (a get), then stands on the
	 * row before it; the second's move reads the block.  Each thread
	 * counts its own table reads, from 0, often in the storage the
	 * first one left: the engine tells the threads apart. */
	{
		step_arg a;
		char two[16], before[16], damaged[16];

		assert_true(n >= 2);
		snprintf(two, sizeof(two), "p%05d", n - 2);
		snprintf(before, sizeof(before), "p%05d", n - 1);
		snprintf(damaged, sizeof(damaged), "p%05d", n);
		how = scan_of(L("p"), KT__SCAN_PREFIX | KT__SCAN_AFTER);
		how.after = kt__sl(two, 6);
		memset(&a, 0, sizeof(a));
		a.r = f->r;
		expect_rc(f->r->ops->scan(&a.c, f->r, NULL, &how), 0);
		a.get_first = damaged;
		step_on_new_thread(&a);
		assert_int_equal(a.rc, 0);
		assert_string_equal(a.part, before);
		a.get_first = NULL;
		step_on_new_thread(&a);
		if (a.rc == 0)
			fail_msg("the step past %s read %s: a gap, no error",
				 before, a.part);
		assert_int_equal(a.rc, KT_ECORRUPT);
		f->r->ops->cursor_free(a.c);
	}

	sn = snap_take(f->r);
	for (i = 0; i < 3000; i++) {
		snprintf(part, sizeof(part), "p%05d", i);
		got = f->r->ops->get_near != NULL
			      ? f->r->ops->get_near(f->r, sn, kt__sl(part, 6),
						    L(""), &v)
			      : f->r->ops->get(f->r, sn, kt__sl(part, 6), L(""),
					       &v);
		if (got == KT_ENOTFOUND)
			fail_msg("get_near of %s: absent", part);
		if (got != 0) {
			assert_int_equal(got, KT_ECORRUPT);
			failed++;
		}
	}
	f->r->ops->snapshot_free(f->r, sn);
	kt__buf_free(&v);
	assert_true(failed > 0);
}

/* Table files longer on disk than the store says (bytes after the footer,
 * as a copy that pads files leaves them): LevelDB reads a table's footer
 * where its recorded size puts it, and so does every read here; the
 * engine's own check of each block (ldb_env.cc) must tell that footer
 * from a block, which it once did by the file's size on disk, failing
 * every read of such a table as a bad checksum. */
static void test_rows__padded_table_reads(void **state)
{
	fixture *f = *state;
	char part[16], val[100];
	kt__scan how;
	kt__cursor *c = NULL;
	kt__row row;
	kt__buf v = {0};
	int i, n, rc;

	if (engine_now->whole_snapshot == 0) {
		fprintf(stderr, "skipped on %s: it pads LevelDB table "
			"files\n", engine_now->name);
		skip();
	}
	for (i = 0; i < 3000; i++) {
		snprintf(part, sizeof(part), "p%05d", i);
		memset(val, 'a' + i % 26, sizeof(val));
		put(f->r, kt__sl(part, strlen(part)), L(""),
		    kt__sl(val, sizeof(val)));
	}
	/* Reopened, the log becomes a table file. */
	engine_close(f);
	assert_int_equal(engine_open(f), 0);
	engine_close(f);
	assert_true(each_table(f->store, pad_table, NULL) > 0);
	assert_int_equal(engine_open(f), 0);

	how = scan_of(L("p"), KT__SCAN_PREFIX);
	expect_rc(f->r->ops->scan(&c, f->r, NULL, &how), 0);
	for (n = 0; (rc = f->r->ops->next(c, &row)) == 0; n++)
		;
	f->r->ops->cursor_free(c);
	expect_rc(rc, KT_ITEROVER);
	assert_int_equal(n, 3000);
	for (i = 0; i < 3000; i += 7) {
		snprintf(part, sizeof(part), "p%05d", i);
		expect_rc(f->r->ops->get(f->r, NULL, kt__sl(part, 6), L(""),
					 &v),
			  0);
		assert_int_equal(v.len, sizeof(val));
		assert_int_equal(v.p[0], 'a' + i % 26);
	}
	kt__buf_free(&v);
}

/* ------------------------------------------------------------------------ */
/* Snapshots and commits. */

static void test_rows__snapshot_isolation(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), 0);
	kt__snap *s;
	batch b = {0};

	fill_ace(r);
	s = snap_take(r);
	b_put(&b, L("p"), L("a"), L("changed"));
	b_del(&b, L("p"), L("c"));
	b_put(&b, L("p"), L("d"), L("new"));
	expect_rc(b_commit(r, &b, NULL), 0);

	if (!engine_now->whole_snapshot) {
		/* Reads through the snapshot see the latest state; what
		 * the snapshot keeps is what each partition read through it
		 * was, so that a commit guarded on it is refused. */
		batch g = {0};
		assert_get(r, s, L("p"), L("a"), "=changed");
		b_row(&g, L("p"), L("a"));
		b_put(&g, L("p"), L("a"), L("mine"));
		r->ops->snapshot_free(r, s);
		s = snap_take(r);
		fix(r, s);
		put(r, L("p"), L("a"), L("again"));
		expect_rc(b_commit(r, &g, s), KT__ERETRY);
		assert_get(r, NULL, L("p"), L("a"), "=again");
		r->ops->snapshot_free(r, s);
		return;
	}
	assert_get(r, s, L("p"), L("a"), "=1");
	assert_get(r, s, L("p"), L("c"), "=3");
	assert_get(r, s, L("p"), L("d"), "(absent)");
	assert_scan(r, s, &how, "p/a=1 p/c=3 p/e=5");
	how.flags = KT__SCAN_REVERSE;
	assert_scan(r, s, &how, "p/e=5 p/c=3 p/a=1");
	/* The latest state has the commit. */
	assert_get(r, NULL, L("p"), L("a"), "=changed");
	assert_get(r, NULL, L("p"), L("c"), "(absent)");
	assert_scan(r, NULL, &how, "p/e=5 p/d=new p/a=changed");
	r->ops->snapshot_free(r, s);
	/* A snapshot taken now sees it too. */
	s = snap_take(r);
	assert_get(r, s, L("p"), L("d"), "=new");
	r->ops->snapshot_free(r, s);
}

/* Reads of the same rows again and again (which the LevelDB engine answers
 * from its row cache) see every commit: the latest state after it, and a
 * snapshot what it held, whatever was read in between. */
static void test_rows__reread_rows_follow_commits(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *s1, *s3;

	put(r, L("p"), L("k"), L("v1"));
	assert_get(r, NULL, L("p"), L("k"), "=v1");
	assert_get(r, NULL, L("p"), L("k"), "=v1");
	s1 = snap_take(r);
	assert_get(r, s1, L("p"), L("k"), "=v1");
	put(r, L("p"), L("k"), L("v2"));
	assert_get(r, NULL, L("p"), L("k"), "=v2");
	if (engine_now->whole_snapshot) {
		/* v2 was read after s1 was taken: not s1's. */
		assert_get(r, s1, L("p"), L("k"), "=v1");
		put(r, L("p"), L("k"), L("v3"));
		/* s1's row, read after a later commit, is no one else's. */
		assert_get(r, s1, L("p"), L("k"), "=v1");
		assert_get(r, NULL, L("p"), L("k"), "=v3");
		s3 = snap_take(r);
		assert_get(r, s3, L("p"), L("k"), "=v3");
		del(r, L("p"), L("k"));
		assert_get(r, s3, L("p"), L("k"), "=v3");
		assert_get(r, s1, L("p"), L("k"), "=v1");
		r->ops->snapshot_free(r, s3);
	} else {
		del(r, L("p"), L("k"));
	}
	assert_get(r, NULL, L("p"), L("k"), "(absent)");
	put(r, L("p"), L("k"), L("v4"));
	assert_get(r, NULL, L("p"), L("k"), "=v4");
	r->ops->snapshot_free(r, s1);
}

/* A commit of more rows than a quarter of the row cache's slots (16384 by
 * default) drops the whole cache at once rather than row by row: rows read
 * before it, those it wrote and those it did not, still read as they are,
 * through the latest state and through a snapshot taken before it.  (With
 * KEYTREE_ROW_CACHE over 16800 in the environment the commit is not large
 * enough, and this checks the row-by-row road instead.) */
static void test_rows__reread_rows_follow_a_large_commit(void **state)
{
	kt__rows *r = rows_of(state);
	enum { NROWS = 4200 };
	kt__write *w = calloc(NROWS, sizeof(*w));
	char (*sort)[16] = calloc(NROWS, sizeof(*sort));
	kt__commit cm;
	kt__snap *s;
	size_t i;

	if (strcmp(engine_now->name, "leveldb") != 0) {
		/* The row cache is the LevelDB engine's; elsewhere this is
		 * just a large commit, which other tests make. */
		free(w);
		free(sort);
		skip();
	}
	assert_non_null(w);
	assert_non_null(sort);
	put(r, L("p"), L("k"), L("v1"));
	put(r, L("p"), L("other"), L("same"));
	assert_get(r, NULL, L("p"), L("k"), "=v1");
	assert_get(r, NULL, L("p"), L("k"), "=v1");
	assert_get(r, NULL, L("p"), L("other"), "=same");
	s = snap_take(r);
	assert_get(r, s, L("p"), L("k"), "=v1");
	/* k changes among NROWS - 1 new rows, in one commit. */
	for (i = 0; i < NROWS - 1; i++) {
		snprintf(sort[i], sizeof(sort[i]), "f%05zu", i);
		w[i].part = L("q");
		w[i].sort = kt__sl(sort[i], strlen(sort[i]));
		w[i].value = L("x");
	}
	w[i].part = L("p");
	w[i].sort = L("k");
	w[i].value = L("v2");
	memset(&cm, 0, sizeof(cm));
	cm.w = w;
	cm.nw = NROWS;
	expect_rc(r->ops->commit(r, &cm), 0);
	assert_get(r, NULL, L("p"), L("k"), "=v2");
	assert_get(r, NULL, L("p"), L("k"), "=v2");
	assert_get(r, NULL, L("p"), L("other"), "=same");
	assert_get(r, NULL, L("q"), L("f00000"), "=x");
	assert_get(r, s, L("p"), L("k"), "=v1");
	assert_get(r, s, L("q"), L("f00000"), "(absent)");
	r->ops->snapshot_free(r, s);
	/* And the cache works again after it: a small commit still shows. */
	put(r, L("p"), L("k"), L("v3"));
	assert_get(r, NULL, L("p"), L("k"), "=v3");
	assert_get(r, NULL, L("p"), L("k"), "=v3");
	free(w);
	free(sort);
}

/* One writer commits rows a and b together, each commit one more than the
 * last; readers of the latest state read one and then the other.  The
 * second read comes later, so it must show the commit the first showed,
 * or a later one: never a row a commit that was already seen replaced. */
typedef struct pair_run {
	kt__rows *r;
	atomic_int done;
	atomic_int bad;
	char why[160];
} pair_run;

/* The number row (p, @p sort) holds, read through @p s (NULL: the
 * latest state); -1 if it cannot be read. */
static long num_read(kt__rows *r, const kt__snap *s, kt__slice sort)
{
	kt__buf v = {0};
	char num[32];
	long n = -1;

	if (r->ops->get(r, s, L("p"), sort, &v) == 0 && v.len < sizeof(num)) {
		memcpy(num, v.p, v.len);
		num[v.len] = '\0';
		n = strtol(num, NULL, 10);
	}
	kt__buf_free(&v);
	return n;
}

static long pair_read(kt__rows *r, kt__slice sort)
{
	return num_read(r, NULL, sort);
}

static void *pair_reader(void *arg)
{
	pair_run *pr = arg;
	int flip = 0;

	while (!atomic_load(&pr->done) && !atomic_load(&pr->bad)) {
		kt__slice first = flip ? L("b") : L("a");
		kt__slice second = flip ? L("a") : L("b");
		long x = pair_read(pr->r, first), y = pair_read(pr->r, second);

		if (x < 0 || y < 0 || y < x) {
			snprintf(pr->why, sizeof(pr->why),
				 "read %s=%ld, then %s=%ld", first.p, x,
				 second.p, y);
			atomic_store(&pr->bad, 1);
		}
		flip = !flip;
	}
	return NULL;
}

static void test_rows__commit_seen_whole_by_rereads(void **state)
{
	kt__rows *r = rows_of(state);
	pair_run pr = {r, 0, 0, ""};
	pthread_t t[2];
	struct timespec t0, now;
	char num[32];
	long i;
	int k;

	put(r, L("p"), L("a"), L("0"));
	put(r, L("p"), L("b"), L("0"));
	for (k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&t[k], NULL, pair_reader, &pr),
				 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 1; i <= 20000 && !atomic_load(&pr.bad); i++) {
		batch b = {0};
		int n = snprintf(num, sizeof(num), "%ld", i);

		b_put(&b, L("p"), L("a"), kt__sl(num, (size_t)n));
		b_put(&b, L("p"), L("b"), kt__sl(num, (size_t)n));
		expect_rc(b_commit(r, &b, NULL), 0);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= 2)
			break;
	}
	atomic_store(&pr.done, 1);
	for (k = 0; k < 2; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
	if (atomic_load(&pr.bad))
		fail_msg("a commit of a and b seen in part: %s", pr.why);
}

/* A commit's own thread reads its row back right after it, while two
 * readers keep reading it (so a read that straddles the commit would keep
 * the old value, were that allowed), and each, now and then, reads it
 * through a snapshot, then the latest, then the snapshot again: the
 * snapshot's row stays the same and the latest is no older. */
typedef struct own_run {
	kt__rows *r;
	atomic_int done, bad;
	char why[200];
} own_run;

static long own_read(kt__rows *r, const kt__snap *s)
{
	return num_read(r, s, L("a"));
}

static void *own_reader(void *arg)
{
	own_run *o = arg;
	unsigned n = 0;

	while (!atomic_load(&o->done) && !atomic_load(&o->bad)) {
		if (own_read(o->r, NULL) < 0) {
			snprintf(o->why, sizeof(o->why), "a latest read failed");
			atomic_store(&o->bad, 1);
		}
		if ((++n & 7) == 0 && engine_now->whole_snapshot) {
			kt__snap *s = NULL;
			long a, b, c;

			if (o->r->ops->snapshot(&s, o->r) != 0)
				continue;
			a = own_read(o->r, s);
			b = own_read(o->r, NULL);
			c = own_read(o->r, s);
			if (a < 0 || c != a || b < a) {
				snprintf(o->why, sizeof(o->why),
					 "snapshot %ld, latest %ld, snapshot "
					 "again %ld",
					 a, b, c);
				atomic_store(&o->bad, 1);
			}
			o->r->ops->snapshot_free(o->r, s);
		}
	}
	return NULL;
}

static void test_rows__own_commit_read_back(void **state)
{
	kt__rows *r = rows_of(state);
	own_run o = {r, 0, 0, ""};
	struct timespec t0, now;
	pthread_t t[2];
	char num[32];
	long i, got;
	int k;

	put(r, L("p"), L("a"), L("0"));
	for (k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&t[k], NULL, own_reader, &o),
				 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 1; i <= 30000 && !atomic_load(&o.bad); i++) {
		int n = snprintf(num, sizeof(num), "%ld", i);

		put(r, L("p"), L("a"), kt__sl(num, (size_t)n));
		if ((got = own_read(r, NULL)) != i) {
			snprintf(o.why, sizeof(o.why),
				 "committed %ld, then read %ld", i, got);
			atomic_store(&o.bad, 1);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= 2)
			break;
	}
	atomic_store(&o.done, 1);
	for (k = 0; k < 2; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
	if (atomic_load(&o.bad))
		fail_msg("%s", o.why);
}

/* validate(): on an engine without it the snapshot must be one moment;
 * on one with it (RADOS), reads through a snapshot pass while nothing
 * they read has changed, and fail once anything did: a row nobody read
 * in a partition read, a partition read as absent and made since, or one
 * partition read twice with a commit in between. */
static void test_rows__validate(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *s = NULL;

	if (r->ops->validate == NULL) {
		assert_true(engine_now->whole_snapshot);
		return;
	}
	assert_false(engine_now->whole_snapshot);
	fill_ace(r);
	s = snap_take(r);
	assert_get(r, s, L("p"), L("a"), "=1");
	assert_get(r, s, L("q"), L("x"), "=9");
	expect_rc(r->ops->validate(r, s), 0);
	expect_rc(r->ops->validate(r, s), 0);
	put(r, L("q"), L("y"), L("10"));
	expect_rc(r->ops->validate(r, s), KT__ERETRY);
	r->ops->snapshot_free(r, s);

	s = snap_take(r);
	assert_get(r, s, L("p"), L("a"), "=1");
	assert_get(r, s, L("n"), L("k"), "(absent)");
	expect_rc(r->ops->validate(r, s), 0);
	put(r, L("n"), L("k"), L("new"));
	expect_rc(r->ops->validate(r, s), KT__ERETRY);
	r->ops->snapshot_free(r, s);

	/* One partition, read twice around a commit: the reads disagree
	 * although one object was read. */
	expect_rc(r->ops->snapshot(&s, r), 0);
	assert_get(r, s, L("p"), L("a"), "=1");
	put(r, L("p"), L("b"), L("2"));
	assert_get(r, s, L("p"), L("c"), "=3");
	expect_rc(r->ops->validate(r, s), KT__ERETRY);
	r->ops->snapshot_free(r, s);

	/* One partition read once is one moment, whatever came after. */
	expect_rc(r->ops->snapshot(&s, r), 0);
	assert_get(r, s, L("p"), L("a"), "=1");
	put(r, L("p"), L("b"), L("22"));
	expect_rc(r->ops->validate(r, s), 0);
	r->ops->snapshot_free(r, s);
}

#ifdef KT_HAVE_RADOS
/* A commit over several objects held at its commit point (rows_rados.c
 * calls kt__rados_test_pending there): the hook says it is there and
 * waits for the test's word, or 60 s at most. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int pending, go;
} hold = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static void hold_hook(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&hold.mu);
	hold.pending = 1;
	pthread_cond_broadcast(&hold.cv);
	while (!hold.go &&
	       pthread_cond_timedwait(&hold.cv, &hold.mu, &until) == 0)
		;
	pthread_mutex_unlock(&hold.mu);
}

typedef struct held_commit {
	kt__rows *r;
	int scan; /* guarded on a scan of every partition starting "p" */
	int rc;
	int read; /* guarded on the rows it writes, read first */
} held_commit;

/* Read p/a and q/x through @p s, and make @p b guarded on them: a commit
 * that read its objects (which a record on one of them needs). */
static void read_both(kt__rows *r, kt__snap *s, batch *b)
{
	kt__buf v = {0};
	int rc;

	rc = r->ops->get(r, s, L("p"), L("a"), &v);
	assert_true(rc == 0 || rc == KT_ENOTFOUND);
	rc = r->ops->get(r, s, L("q"), L("x"), &v);
	assert_true(rc == 0 || rc == KT_ENOTFOUND);
	kt__buf_free(&v);
	b_row(b, L("p"), L("a"));
	b_row(b, L("q"), L("x"));
}

static void hold_wait_pending(void)
{
	pthread_mutex_lock(&hold.mu);
	while (!hold.pending)
		pthread_cond_wait(&hold.cv, &hold.mu);
	pthread_mutex_unlock(&hold.mu);
}

static void hold_release(void)
{
	pthread_mutex_lock(&hold.mu);
	hold.go = 1;
	pthread_cond_broadcast(&hold.cv);
	pthread_mutex_unlock(&hold.mu);
}

static void *held_writer(void *arg)
{
	held_commit *h = arg;
	kt__scan how = scan_of(L("p"), KT__SCAN_PREFIX);
	kt__snap *s = NULL;
	batch b = {0};

	if (h->scan) {
		s = snap_take(h->r);
		scan_all(h->r, s, &how);
		b_scan(&b, &how, 1, 1);
	} else if (h->read) {
		s = snap_take(h->r);
		read_both(h->r, s, &b);
	}
	b_put(&b, L("p"), L("a"), L("2"));
	b_put(&b, L("q"), L("x"), L("10"));
	h->rc = b_commit(h->r, &b, s);
	if (s != NULL)
		h->r->ops->snapshot_free(h->r, s);
	return NULL;
}

/* p/a=1 and q/x=9, then held_writer's commit started and held pending. */
static void hold_start(held_commit *h, pthread_t *t)
{
	put(h->r, L("p"), L("a"), L("1"));
	put(h->r, L("q"), L("x"), L("9"));
	hold.pending = hold.go = 0;
	kt__rados_test_pending = hold_hook;
	assert_int_equal(pthread_create(t, NULL, held_writer, h), 0);
	hold_wait_pending();
}

typedef struct late_put {
	kt__rows *r;
	int rc, done;
} late_put;

/* A put into a new partition "pq", inside the held commit's scan. */
static void *late_writer(void *arg)
{
	late_put *l = arg;
	batch b = {0};

	b_put(&b, L("pq"), L("k"), L("v"));
	l->rc = b_commit(l->r, &b, NULL);
	pthread_mutex_lock(&hold.mu);
	l->done = 1;
	pthread_mutex_unlock(&hold.mu);
	return NULL;
}
#endif

#ifdef KT_HAVE_RADOS
static void open_layout(fixture *f, const char *suffix, int layout);
#endif

/* RADOS: a commit that is pending (its locks taken, its record not yet
 * flipped) does not hold up readers of the objects it locked: they read
 * the rows as they were before it, and it still commits afterwards.  A
 * snapshot that read past it no longer validates once it took effect,
 * and a commit guarded on such a read runs again rather than write over
 * the pending commit.  (Only RADOS has a pending state to look at; the
 * other engines apply a commit at once.)  In a tree of layout 3, where a
 * commit with every lock in is still pending until its commit point;
 * test_rows__read_past_parallel has layout 4. */
static void test_rows__read_past_pending(void **state)
{
#ifdef KT_HAVE_RADOS
	fixture *f = *state;
	kt__rows *r;
	kt__snap *s1, *s2;
	held_commit h = {NULL, 0, -1, 1};
	unsigned long n0 = kt__rados_test_onobj;
	pthread_t t;
	batch b = {0};
	char *d;

	if (strcmp(engine_now->name, "rados") != 0)
		skip();
	open_layout(f, "-v3", 3);
	r = h.r = f->r;
	hold_start(&h, &t);

	/* Both objects are locked now; reading them does not wait. */
	s1 = snap_take(r);
	assert_get(r, s1, L("p"), L("a"), "=1");
	assert_get(r, s1, L("q"), L("x"), "=9");
	expect_rc(r->ops->validate(r, s1), 0);
	s2 = snap_take(r);
	assert_get(r, s2, L("p"), L("a"), "=1");

	hold_release();
	assert_int_equal(pthread_join(t, NULL), 0);
	kt__rados_test_pending = NULL;
	/* Not rolled back by the readers: it committed, with its record
	 * on one of its objects (test_rows__record_kinds has a record
	 * object pending). */
	expect_rc(h.rc, 0);
	assert_true(kt__rados_test_onobj == n0 + 1);
	/* What s1 read is not one moment any more... */
	expect_rc(r->ops->validate(r, s1), KT__ERETRY);
	/* ...and a write guarded on s2's read runs again. */
	b_row(&b, L("p"), L("a"));
	b_put(&b, L("p"), L("a"), L("3"));
	expect_rc(b_commit(r, &b, s2), KT__ERETRY);
	d = dump(r);
	assert_string_equal(d, "p/a=2 q/x=10");
	free(d);
	r->ops->snapshot_free(r, s1);
	r->ops->snapshot_free(r, s2);
#else
	(void)state;
	skip();
#endif
}

#ifdef KT_HAVE_RADOS
/* A commit of p/a and q/x in one, blind (read nothing). */
static void *blind_two(void *arg)
{
	held_commit *h = arg;
	batch b = {0};

	int tries = 0;

	do {
		b.nw = 0;
		b_put(&b, L("p"), L("a"), L("7"));
		b_put(&b, L("q"), L("x"), L("70"));
		h->rc = b_commit(h->r, &b, NULL);
	} while (h->rc == KT__ERETRY && ++tries < 10);
	return NULL;
}
#endif

/* RADOS, layout 4: a parallel commit is committed once every lock is in.
 * Held with its primary's lock in and the other's not sent, it is not
 * yet: readers read past it, and it commits once released.  Held so
 * for longer than twice its budget while a writer waits for it, that
 * writer rolls it back (the lock that never came cannot come later and
 * commit it: its writer gives up), and the held commit then runs
 * again. */
static void test_rows__read_past_parallel(void **state)
{
#ifdef KT_HAVE_RADOS
	kt__rows *r = rows_of(state);
	kt__snap *s1;
	held_commit h = {r, 0, -1, 1}, w = {r, 0, -1, 0};
	unsigned long n0 = kt__rados_test_onobj;
	pthread_t t, tw;
	char *d;

	if (strcmp(engine_now->name, "rados") != 0)
		skip();
	assert_int_equal(kt__rados_layout(r), 4);
	put(r, L("p"), L("a"), L("1"));
	put(r, L("q"), L("x"), L("9"));
	hold.pending = hold.go = 0;
	kt__rados_test_prim_locked = hold_hook;
	assert_int_equal(pthread_create(&t, NULL, held_writer, &h), 0);
	hold_wait_pending();
	s1 = snap_take(r);
	assert_get(r, s1, L("p"), L("a"), "=1");
	assert_get(r, s1, L("q"), L("x"), "=9");
	expect_rc(r->ops->validate(r, s1), 0);
	hold_release();
	assert_int_equal(pthread_join(t, NULL), 0);
	expect_rc(h.rc, 0);
	assert_true(kt__rados_test_onobj == n0 + 1);
	expect_rc(r->ops->validate(r, s1), KT__ERETRY);
	r->ops->snapshot_free(r, s1);
	d = dump(r);
	assert_string_equal(d, "p/a=2 q/x=10");
	free(d);

	/* Held, and a writer of both objects waits for it. */
	hold.pending = hold.go = 0;
	h.rc = -1;
	assert_int_equal(pthread_create(&t, NULL, held_writer, &h), 0);
	hold_wait_pending();
	assert_int_equal(pthread_create(&tw, NULL, blind_two, &w), 0);
	assert_int_equal(pthread_join(tw, NULL), 0);
	expect_rc(w.rc, 0);
	hold_release();
	assert_int_equal(pthread_join(t, NULL), 0);
	kt__rados_test_prim_locked = NULL;
	expect_rc(h.rc, KT__ERETRY);
	d = dump(r);
	assert_string_equal(d, "p/a=7 q/x=70");
	free(d);
#else
	(void)state;
	skip();
#endif
}

#ifdef KT_HAVE_RADOS
/* Close @p f's tree and open a new one, named with @p suffix, made in
 * layout @p layout (FORMAT.md §14). */
static void open_layout(fixture *f, const char *suffix, int layout)
{
	engine_close(f);
	strcat(f->store, suffix);
	kt__rados_test_layout = layout;
	assert_int_equal(engine_open(f), 0);
	kt__rados_test_layout = 0;
	assert_int_equal(kt__rados_layout(f->r), layout);
}

static int sweep_note(const char *what, void *arg)
{
	(void)what;
	(*(int *)arg)++;
	return 0;
}

/* Two puts in one commit, guarded on p/a and q/x. */
static void b_put_one(kt__rows *r, kt__slice p1, kt__slice k1, kt__slice v1,
		      kt__slice p2, kt__slice k2, kt__slice v2)
{
	kt__snap *s = snap_take(r);
	batch b = {0};

	read_both(r, s, &b);
	b_put(&b, p1, k1, v1);
	b_put(&b, p2, k2, v2);
	expect_rc(b_commit(r, &b, s), 0);
	r->ops->snapshot_free(r, s);
}

/* p/a=2 and q/x=10 in one commit over two objects, guarded on both. */
static void put_two(kt__rows *r)
{
	kt__snap *s = snap_take(r);
	batch b = {0};

	read_both(r, s, &b);
	b_put(&b, L("p"), L("a"), L("2"));
	b_put(&b, L("q"), L("x"), L("10"));
	expect_rc(b_commit(r, &b, s), 0);
	r->ops->snapshot_free(r, s);
}
/* p/a=1 and q/x=9, then a parallel commit of both (layout 4) whose
 * primary's lock is lost on its way, as if its client were killed: the
 * other object stays locked, pointing to a primary that has none. */
static void lose_primary(kt__rows *r)
{
	kt__snap *s;
	batch b = {0};

	put(r, L("p"), L("a"), L("1"));
	put(r, L("q"), L("x"), L("9"));
	s = snap_take(r);
	read_both(r, s, &b);
	b_put(&b, L("p"), L("a"), L("2"));
	b_put(&b, L("q"), L("x"), L("10"));
	kt__rados_test_drop_prim = 1;
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	kt__rados_test_drop_prim = 0;
	r->ops->snapshot_free(r, s);
}

/* No lock, fence or record left for kt_repair's sweep, and a commit of
 * both objects goes through. */
static void assert_nothing_left(kt__rows *r)
{
	size_t swept = 0;
	int notes = 0;
	char *d;

	expect_rc(kt__rados_sweep(r, sweep_note, &notes, &swept), 0);
	assert_int_equal((int)swept, 0);
	assert_int_equal(notes, 0);
	put_two(r);
	d = dump(r);
	assert_string_equal(d, "p/a=2 q/x=10");
	free(d);
}
#endif

/* RADOS, layout 4: a parallel commit whose client died with its
 * primary's lock lost on the way leaves the other locks pointing to a
 * primary that has none.  A reader of such an object waits twice the
 * budget (the lock might still come), then fences the primary, unlocks
 * the object and takes the fence away: the rows are as before, nothing
 * stays locked, and kt_repair finds nothing to do. */
static void test_rows__parallel_no_primary(void **state)
{
#ifdef KT_HAVE_RADOS
	kt__rows *r = rows_of(state);

	if (strcmp(engine_now->name, "rados") != 0)
		skip();
	lose_primary(r);
	assert_get(r, NULL, L("p"), L("a"), "=1");
	assert_get(r, NULL, L("q"), L("x"), "=9");
	assert_nothing_left(r);
#else
	(void)state;
	skip();
#endif
}

/* RADOS, layout 4: as above, but the first reader to settle the commit
 * stops (as if killed) right after it fenced the primary, leaving the
 * fence on the primary and the commit's lock on the other object.  The
 * next reader of that object finds the primary not free: it must see
 * that the fence is for this very commit and finish the job (unlock,
 * take the fence away), where it used to wait for a free primary without
 * end (crash_rados hung in CI on such a state).  A stale fence is also
 * settled by a reader of the primary itself, after twice the budget. */
static void test_rows__parallel_fence_left(void **state)
{
#ifdef KT_HAVE_RADOS
	kt__rows *r = rows_of(state);
	int stopped = 0, second = -1, i;
	unsigned long own;

	if (strcmp(engine_now->name, "rados") != 0)
		skip();
	lose_primary(r);
	/* Reads without a snapshot wait for every lock: the one of the
	 * object that is not the primary stops after its fence. */
	kt__rados_test_fence_stop = 1;
	for (i = 0; i < 2; i++) {
		kt__buf v = {0};
		int rc = r->ops->get(r, NULL, i ? L("q") : L("p"),
				     i ? L("x") : L("a"), &v);
		kt__buf_free(&v);
		if (rc == KT_EIO &&
		    strstr(kt_errmsg(), "stopped after") != NULL) {
			stopped++;
			second = i;
		} else {
			expect_rc(rc, 0);
		}
	}
	kt__rados_test_fence_stop = 0;
	assert_int_equal(stopped, 1);
	/* The object that is not the primary first: its reader meets the
	 * fence (a reader of the primary first would clear the fence as a
	 * lock without a record, after twice the budget) and goes on. */
	own = kt__rados_test_par_busy[0];
	if (second == 0) {
		assert_get(r, NULL, L("p"), L("a"), "=1");
		assert_get(r, NULL, L("q"), L("x"), "=9");
	} else {
		assert_get(r, NULL, L("q"), L("x"), "=9");
		assert_get(r, NULL, L("p"), L("a"), "=1");
	}
	assert_true(kt__rados_test_par_busy[0] == own + 1);
	assert_nothing_left(r);
#else
	(void)state;
	skip();
#endif
}

/* RADOS, layout 4: two parallel commits, both lost with their primary's
 * lock, each holding the primary of the other: X locked q with primary p,
 * Y locked p with primary q (each chose as primary the object it had read
 * and found).  A reader of q must undo X, which needs p fenced, which
 * needs Y undone, which needs q fenced: it hands q over from X to Y's
 * fence in one guarded operation, undoes Y, then X is gone with it.  It
 * used to wait for a free primary without end. */
static void test_rows__parallel_ring(void **state)
{
#ifdef KT_HAVE_RADOS
	kt__rows *r = rows_of(state);
	kt__snap *sx, *sy;
	batch bx = {0}, by = {0};
	kt__buf v = {0};
	unsigned long handed = kt__rados_test_par_busy[1];

	if (strcmp(engine_now->name, "rados") != 0)
		skip();
	put(r, L("p"), L("a"), L("1"));
	put(r, L("q"), L("x"), L("9"));
	/* Y reads q before X locks it. */
	sy = snap_take(r);
	expect_rc(r->ops->get(r, sy, L("q"), L("x"), &v), 0);
	b_row(&by, L("q"), L("x"));
	sx = snap_take(r);
	expect_rc(r->ops->get(r, sx, L("p"), L("a"), &v), 0);
	kt__buf_free(&v);
	b_row(&bx, L("p"), L("a"));
	b_put(&bx, L("p"), L("a"), L("2"));
	b_put(&bx, L("q"), L("x"), L("10"));
	b_put(&by, L("p"), L("a"), L("3"));
	b_put(&by, L("q"), L("x"), L("30"));
	kt__rados_test_drop_prim = 1;
	expect_rc(b_commit(r, &bx, sx), KT__ERETRY);
	expect_rc(b_commit(r, &by, sy), KT__ERETRY);
	kt__rados_test_drop_prim = 0;
	r->ops->snapshot_free(r, sx);
	r->ops->snapshot_free(r, sy);
	assert_get(r, NULL, L("q"), L("x"), "=9");
	assert_get(r, NULL, L("p"), L("a"), "=1");
	assert_true(kt__rados_test_par_busy[1] == handed + 1);
	assert_nothing_left(r);
#else
	(void)state;
	skip();
#endif
}

/* RADOS: in a tree of layout 4 (parallel commits) or 3 a commit over a
 * few objects keeps its record on one of them; in a tree of layout 2 it
 * writes a record object as before, and readers still read past it
 * while it is pending. */
static void test_rows__record_kinds(void **state)
{
#ifdef KT_HAVE_RADOS
	fixture *f = *state;
	held_commit h = {NULL, 0, -1, 1};
	unsigned long n0;
	kt__snap *s;
	pthread_t t;
	char *d;

	if (strcmp(engine_now->name, "rados") != 0)
		skip();
	n0 = kt__rados_test_onobj;
	put(f->r, L("p"), L("a"), L("1"));
	put_two(f->r);
	assert_true(kt__rados_test_onobj == n0 + 1);

	open_layout(f, "-v3", 3);
	n0 = kt__rados_test_onobj;
	put(f->r, L("p"), L("a"), L("1"));
	put_two(f->r);
	assert_true(kt__rados_test_onobj == n0 + 1);
	d = dump(f->r);
	assert_string_equal(d, "p/a=2 q/x=10");
	free(d);

	open_layout(f, "-v2", 2);
	n0 = kt__rados_test_onobj;
	h.r = f->r;
	hold_start(&h, &t);
	s = snap_take(f->r);
	assert_get(f->r, s, L("p"), L("a"), "=1");
	assert_get(f->r, s, L("q"), L("x"), "=9");
	expect_rc(f->r->ops->validate(f->r, s), 0);
	f->r->ops->snapshot_free(f->r, s);
	hold_release();
	assert_int_equal(pthread_join(t, NULL), 0);
	kt__rados_test_pending = NULL;
	expect_rc(h.rc, 0);
	assert_true(kt__rados_test_onobj == n0);
	d = dump(f->r);
	assert_string_equal(d, "p/a=2 q/x=10");
	free(d);
	/* Reopened, the tree keeps its layout. */
	engine_close(f);
	assert_int_equal(engine_open(f), 0);
	assert_int_equal(kt__rados_layout(f->r), 2);
#else
	(void)state;
	skip();
#endif
}

/* RADOS: a client killed right after the commit point of a commit whose
 * record is on one of its objects leaves the others locked: the next
 * reader rolls them forward from that record, and the record goes.  One
 * killed after its commits were applied leaves only their records, which
 * kt_repair's sweep removes (and then has nothing more to say). */
static void test_rows__record_on_object_left(void **state)
{
#ifdef KT_HAVE_RADOS
	fixture *f = *state;
	size_t swept = 0;
	unsigned long n0;
	int notes = 0;
	char *d;

	if (strcmp(engine_now->name, "rados") != 0)
		skip();
	put(f->r, L("p"), L("a"), L("1"));
	put(f->r, L("q"), L("x"), L("9"));
	kt__rados_test_stop_after_commit = 1;
	put_two(f->r);
	engine_close(f);
	kt__rados_test_stop_after_commit = 0;
	assert_int_equal(engine_open(f), 0);
	assert_get(f->r, NULL, L("q"), L("x"), "=10");
	assert_get(f->r, NULL, L("p"), L("a"), "=2");
	expect_rc(kt__rados_sweep(f->r, sweep_note, &notes, &swept), 0);
	assert_int_equal((int)swept, 0);
	assert_int_equal(notes, 0);

	/* Applied, but the client gone before the records' removal. */
	put_two(f->r);
	b_put_one(f->r, L("p"), L("b"), L("3"), L("q"), L("y"), L("4"));
	kt__rados_test_stop_after_commit = 1;
	engine_close(f);
	kt__rados_test_stop_after_commit = 0;
	assert_int_equal(engine_open(f), 0);
	/* Nothing anyone reads changes: removed quietly. */
	n0 = kt__rados_test_marks_swept;
	expect_rc(kt__rados_sweep(f->r, sweep_note, &notes, &swept), 0);
	assert_int_equal((int)swept, 0);
	assert_int_equal(notes, 0);
	assert_true(kt__rados_test_marks_swept >= n0 + 1);
	n0 = kt__rados_test_marks_swept;
	expect_rc(kt__rados_sweep(f->r, sweep_note, &notes, &swept), 0);
	assert_true(kt__rados_test_marks_swept == n0);
	d = dump(f->r);
	assert_string_equal(d, "p/a=2 p/b=3 q/x=10 q/y=4");
	free(d);

	/* Killed at the commit point, and nobody read since: the sweep
	 * rolls it forward, and says so once. */
	kt__rados_test_stop_after_commit = 1;
	b_put_one(f->r, L("p"), L("c"), L("5"), L("q"), L("z"), L("6"));
	engine_close(f);
	kt__rados_test_stop_after_commit = 0;
	assert_int_equal(engine_open(f), 0);
	notes = 0;
	expect_rc(kt__rados_sweep(f->r, sweep_note, &notes, &swept), 0);
	assert_int_equal((int)swept, 1);
	assert_int_equal(notes, 1);
	expect_rc(kt__rados_sweep(f->r, sweep_note, &notes, &swept), 0);
	assert_int_equal((int)swept, 0);
	d = dump(f->r);
	assert_string_equal(d, "p/a=2 p/b=3 p/c=5 q/x=10 q/y=4 q/z=6");
	free(d);
#else
	(void)state;
	skip();
#endif
}

/* RADOS: a commit guarded on a prefix scan (a rename, a recursive
 * delete) locks the catalog while it is pending; a new partition outside
 * the scanned prefix still gets its catalog entry at once, so creates
 * elsewhere do not wait for it, while one inside waits until it is over
 * (it could change what the scan read). */
static void test_rows__catalog_past_pending(void **state)
{
#ifdef KT_HAVE_RADOS
	fixture *f = *state;
	kt__rows *r;
	held_commit h = {NULL, 1, -1, 0};
	late_put l = {NULL, -1, 0};
	pthread_t t, tl;
	char *d;
	int done;

	if (strcmp(engine_now->name, "rados") != 0)
		skip();
	/* Layout 3: held at its commit point, the commit is pending (in
	 * layout 4 one with every lock in is committed). */
	open_layout(f, "-v3", 3);
	r = h.r = l.r = f->r;
	hold_start(&h, &t);
	assert_int_equal(pthread_create(&tl, NULL, late_writer, &l), 0);
	/* Outside "p": does not wait (the hook would hold it 60 s). */
	put(r, L("zz"), L("k"), L("v"));
	usleep(300 * 1000);
	pthread_mutex_lock(&hold.mu);
	done = l.done;
	pthread_mutex_unlock(&hold.mu);
	assert_false(done); /* "pq" waits for the held commit */
	hold_release();
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(pthread_join(tl, NULL), 0);
	kt__rados_test_pending = NULL;
	expect_rc(h.rc, 0);
	expect_rc(l.rc, 0);
	d = dump(r);
	assert_string_equal(d, "p/a=2 pq/k=v q/x=10 zz/k=v");
	free(d);
#else
	(void)state;
	skip();
#endif
}

/* A cursor opened on a snapshot keeps reading it while commits land. */
static void test_rows__cursor_on_snapshot(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), 0);
	kt__cursor *c = NULL;
	kt__snap *s;
	kt__row row;

	fill_ace(r);
	s = snap_take(r);
	expect_rc(r->ops->scan(&c, r, s, &how), 0);
	expect_rc(r->ops->next(c, &row), 0);
	assert_int_equal(row.sort.len, 1);
	assert_memory_equal(row.sort.p, "a", 1);
	put(r, L("p"), L("b"), L("2"));
	del(r, L("p"), L("c"));
	expect_rc(r->ops->next(c, &row), 0);
	assert_memory_equal(row.sort.p, "c", 1);
	expect_rc(r->ops->next(c, &row), 0);
	assert_memory_equal(row.sort.p, "e", 1);
	expect_rc(r->ops->next(c, &row), KT_ITEROVER);
	/* And stays over. */
	expect_rc(r->ops->next(c, &row), KT_ITEROVER);
	r->ops->cursor_free(c);
	r->ops->snapshot_free(r, s);
}

static void test_rows__batch_together_in_order(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *before;
	batch b = {0};
	char *t;

	fill_ace(r);
	before = snap_take(r);
	b_put(&b, L("p"), L("b"), L("2"));
	b_del(&b, L("p"), L("c"));
	b_put(&b, L("p"), L("e"), L("five"));
	b_put(&b, L("r"), L(""), L("new partition"));
	b_del(&b, L("q"), L("x"));
	/* Writes apply in the order given: the later one wins. */
	b_put(&b, L("s"), L("1"), L("first"));
	b_del(&b, L("s"), L("1"));
	b_del(&b, L("s"), L("2"));
	b_put(&b, L("s"), L("2"), L("second"));
	expect_rc(b_commit(r, &b, NULL), 0);

	t = dump(r);
	assert_string_equal(t, "p/a=1 p/b=2 p/e=five r/=new\\x20partition "
			       "s/2=second");
	free(t);
	if (!engine_now->whole_snapshot) {
		r->ops->snapshot_free(r, before);
		return;
	}
	/* A snapshot from before sees none of it. */
	t = scan_text_n(r, before, &(kt__scan){.part = L(""),
					       .flags = KT__SCAN_PREFIX}, 0);
	assert_string_equal(t, "p/a=1 p/c=3 p/e=5 q/x=9");
	free(t);
	r->ops->snapshot_free(r, before);
}

/* Each applied commit gets the next number of the engine's commit order;
 * a refused one gets none. */
static void test_rows__commit_order_numbers(void **state)
{
	kt__rows *r = rows_of(state);
	uint64_t a = 0, b = 0, c = 77;
	kt__commit cm;
	kt__write w;
	kt__snap *s;
	kt__cond cd;

	memset(&w, 0, sizeof(w));
	w.part = L("n");
	w.sort = L("1");
	w.value = L("x");
	memset(&cm, 0, sizeof(cm));
	cm.w = &w;
	cm.nw = 1;
	cm.applied = &a;
	expect_rc(r->ops->commit(r, &cm), 0);
	cm.applied = &b;
	expect_rc(r->ops->commit(r, &cm), 0);
	if (!engine_now->numbered) {
		/* No order across the store to number commits in. */
		assert_int_equal(a, 0);
		assert_int_equal(b, 0);
		return;
	}
	assert_true(a >= 1);
	assert_int_equal(b, a + 1);
	/* A commit whose condition fails applies nothing, numbers nothing. */
	s = snap_take(r);
	fix(r, s);
	put(r, L("n"), L("1"), L("changed"));
	memset(&cd, 0, sizeof(cd));
	cd.kind = KT__COND_ROW;
	cd.part = L("n");
	cd.sort = L("1");
	cm.snap = s;
	cm.c = &cd;
	cm.nc = 1;
	cm.applied = &c;
	expect_rc(r->ops->commit(r, &cm), KT__ERETRY);
	assert_int_equal(c, 77);
	r->ops->snapshot_free(r, s);
}

/* A commit refused for one failed condition applies none of its writes,
 * however many conditions hold. */
static void test_rows__refused_commit_applies_nothing(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("q"), 0);
	kt__snap *s;
	batch b = {0};
	char *t0, *t1;

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("c"), L("changed elsewhere"));
	t0 = dump(r);
	b_row(&b, L("p"), L("a"));      /* holds */
	b_scan(&b, &how, 1, 1);         /* holds */
	b_row(&b, L("p"), L("c"));      /* fails */
	b_put(&b, L("p"), L("a"), L("x"));
	b_del(&b, L("p"), L("e"));
	b_put(&b, L("new"), L(""), L("y"));
	b_del(&b, L("q"), L("x"));
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	t1 = dump(r);
	assert_string_equal(t1, t0);
	free(t0);
	free(t1);
	r->ops->snapshot_free(r, s);
}

/* ------------------------------------------------------------------------ */
/* Guarded commits: ROW conditions. */

static void test_rows__commit_unconditional(void **state)
{
	kt__rows *r = rows_of(state);
	batch b = {0};

	fill_ace(r);
	put(r, L("p"), L("a"), L("other"));
	/* No snapshot, no conditions: applies whatever happened. */
	b_put(&b, L("p"), L("a"), L("mine"));
	expect_rc(b_commit(r, &b, NULL), 0);
	assert_get(r, NULL, L("p"), L("a"), "=mine");
}

/* A snapshot with no conditions applies, even after other commits. */
static void test_rows__commit_no_conditions(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *s;
	batch b = {0};

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("a"), L("other"));
	b_put(&b, L("p"), L("a"), L("mine"));
	expect_rc(b_commit(r, &b, s), 0);
	assert_get(r, NULL, L("p"), L("a"), "=mine");
	r->ops->snapshot_free(r, s);
}

/* Nothing committed since the snapshot: every condition holds. */
static void test_rows__commit_nothing_changed(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), 0);
	kt__snap *s;
	batch b = {0};

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	b_row(&b, L("p"), L("a"));
	b_row(&b, L("p"), L("b")); /* absent, still absent */
	b_scan(&b, &how, 3, 1);
	b_put(&b, L("p"), L("b"), L("2"));
	expect_rc(b_commit(r, &b, s), 0);
	assert_get(r, NULL, L("p"), L("b"), "=2");
	r->ops->snapshot_free(r, s);
}

static void test_rows__cond_row_changed(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *s;
	batch b = {0};

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("c"), L("33"));
	b_row(&b, L("p"), L("c"));
	b_put(&b, L("p"), L("c"), L("mine"));
	b_put(&b, L("p"), L("z"), L("26"));
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	assert_get(r, NULL, L("p"), L("c"), "=33");
	assert_get(r, NULL, L("p"), L("z"), "(absent)");
	r->ops->snapshot_free(r, s);
}

static void test_rows__cond_row_deleted(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *s;
	batch b = {0};

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	del(r, L("p"), L("c"));
	b_row(&b, L("p"), L("c"));
	b_put(&b, L("p"), L("z"), L("26"));
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	assert_get(r, NULL, L("p"), L("z"), "(absent)");
	r->ops->snapshot_free(r, s);
}

static void test_rows__cond_absent_row_created(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *s;
	batch b = {0};

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("b"), L("theirs"));
	b_row(&b, L("p"), L("b")); /* read as absent */
	b_put(&b, L("p"), L("b"), L("mine"));
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	assert_get(r, NULL, L("p"), L("b"), "=theirs");
	r->ops->snapshot_free(r, s);
}

/* Created with an empty value: still not the same as absent. */
static void test_rows__cond_absent_row_created_empty(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *s;
	batch b = {0};

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("b"), L(""));
	b_row(&b, L("p"), L("b"));
	b_put(&b, L("p"), L("z"), L("26"));
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	assert_get(r, NULL, L("p"), L("z"), "(absent)");
	r->ops->snapshot_free(r, s);
}

/* Conditions compare values, not versions: a row changed and changed
 * back reads the same. */
static void test_rows__cond_row_restored(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *s;
	batch b = {0};

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("c"), L("other"));
	put(r, L("p"), L("c"), L("3"));
	/* And an absent row created and deleted again. */
	put(r, L("p"), L("b"), L("brief"));
	del(r, L("p"), L("b"));
	b_row(&b, L("p"), L("c"));
	b_row(&b, L("p"), L("b"));
	b_put(&b, L("p"), L("c"), L("mine"));
	expect_rc(b_commit(r, &b, s), EXACT_OK);
	assert_get(r, NULL, L("p"), L("c"),
		   engine_now->exact_conds ? "=mine" : "=3");
	r->ops->snapshot_free(r, s);
}

static void test_rows__cond_other_row_changed(void **state)
{
	kt__rows *r = rows_of(state);
	kt__snap *s;
	batch b = {0};

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("e"), L("55"));  /* same partition */
	put(r, L("q"), L("y"), L("new")); /* another one */
	put(r, L("p"), L("a\0"), L("next to a"));
	b_row(&b, L("p"), L("a"));
	b_row(&b, L("p"), L("b"));
	b_put(&b, L("p"), L("a"), L("mine"));
	expect_rc(b_commit(r, &b, s), EXACT_OK);
	assert_get(r, NULL, L("p"), L("a"),
		   engine_now->exact_conds ? "=mine" : "=1");
	assert_get(r, NULL, L("p"), L("e"), "=55");
	r->ops->snapshot_free(r, s);
}

/* ------------------------------------------------------------------------ */
/* Guarded commits: SCAN conditions.  Partition p holds a, c, e. */

/* Commit a write guarded by one SCAN condition read at @p s. */
static int commit_scan_guarded(kt__rows *r, const kt__snap *s,
			       const kt__scan *how, uint64_t nrows,
			       int complete)
{
	batch b = {0};

	b_scan(&b, how, nrows, complete);
	b_put(&b, L("w"), L(""), L("written"));
	return b_commit(r, &b, s);
}

static void test_rows__cond_scan_insert_inside(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), 0);
	kt__snap *s;

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("b"), L("2")); /* between the first two rows */
	/* The scan had returned a and c, and was not over. */
	expect_rc(commit_scan_guarded(r, s, &how, 2, 0), KT__ERETRY);
	assert_get(r, NULL, L("w"), L(""), "(absent)");
	r->ops->snapshot_free(r, s);
}

static void test_rows__cond_scan_value_changed_inside(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), 0);
	kt__snap *s;

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("c"), L("33"));
	expect_rc(commit_scan_guarded(r, s, &how, 2, 0), KT__ERETRY);
	assert_get(r, NULL, L("w"), L(""), "(absent)");
	r->ops->snapshot_free(r, s);
}

static void test_rows__cond_scan_delete_inside(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), KT__SCAN_REVERSE);
	kt__snap *s;

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	del(r, L("p"), L("c"));
	/* The reverse scan had returned e and c. */
	expect_rc(commit_scan_guarded(r, s, &how, 2, 0), KT__ERETRY);
	assert_get(r, NULL, L("w"), L(""), "(absent)");
	r->ops->snapshot_free(r, s);
}

static void test_rows__cond_scan_insert_past_incomplete(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), 0);
	kt__snap *s;

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	/* Past the two rows the scan returned: it never looked there. */
	put(r, L("p"), L("d"), L("4"));
	put(r, L("p"), L("f"), L("6"));
	put(r, L("p"), L("e"), L("55"));
	expect_rc(commit_scan_guarded(r, s, &how, 2, 0), EXACT_OK);
	assert_get(r, NULL, L("w"), L(""),
		   engine_now->exact_conds ? "=written" : "(absent)");
	r->ops->snapshot_free(r, s);
}

/* A scan that returned nothing and was not over depends on nothing. */
static void test_rows__cond_scan_zero_rows_incomplete(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), 0);
	kt__snap *s;

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("0"), L("first now"));
	expect_rc(commit_scan_guarded(r, s, &how, 0, 0), EXACT_OK);
	r->ops->snapshot_free(r, s);
}

static void test_rows__cond_scan_insert_past_complete(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), 0);
	kt__snap *s;

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	/* After the last row: the complete scan would now return it. */
	put(r, L("p"), L("f"), L("6"));
	expect_rc(commit_scan_guarded(r, s, &how, 3, 1), KT__ERETRY);
	assert_get(r, NULL, L("w"), L(""), "(absent)");
	r->ops->snapshot_free(r, s);
}

/* The same for a scan that found nothing at all. */
static void test_rows__cond_scan_empty_complete(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("empty"), 0);
	kt__snap *s;

	fill_ace(r);
	s = snap_take(r);
	fix(r, s);
	put(r, L("empty"), L("k"), L("1"));
	expect_rc(commit_scan_guarded(r, s, &how, 0, 1), KT__ERETRY);
	assert_get(r, NULL, L("w"), L(""), "(absent)");
	r->ops->snapshot_free(r, s);
}

/* Complete scans of the other kinds, each seeing a new row at its end. */
static void test_rows__cond_scan_complete_kinds(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan after = scan_of(L("p"), KT__SCAN_AFTER);
	kt__scan before = scan_of(L("p"), KT__SCAN_AFTER | KT__SCAN_REVERSE);
	kt__scan from = scan_of(L("p"), KT__SCAN_FROM);
	kt__scan prefix = scan_of(L("p"), KT__SCAN_PREFIX);
	kt__snap *s;

	fill_ace(r);
	after.after = L("a");
	before.after = L("e");
	from.from = L("c");
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("\0"), L("0")); /* first of p, before a */
	put(r, L("p"), L("z"), L("26"));
	put(r, L("pp"), L(""), L("new partition"));
	/* after a: c, e, then over; now z follows e. */
	expect_rc(commit_scan_guarded(r, s, &after, 2, 1), KT__ERETRY);
	/* before e, descending: c, a, then over; now \0 follows a. */
	expect_rc(commit_scan_guarded(r, s, &before, 2, 1), KT__ERETRY);
	expect_rc(commit_scan_guarded(r, s, &from, 2, 1), KT__ERETRY);
	/* prefix p: ..., then partition pp. */
	expect_rc(commit_scan_guarded(r, s, &prefix, 3, 1), KT__ERETRY);
	assert_get(r, NULL, L("w"), L(""), "(absent)");
	/* The same scans, incomplete after their first row, still hold. */
	expect_rc(commit_scan_guarded(r, s, &after, 1, 0), EXACT_OK);
	expect_rc(commit_scan_guarded(r, s, &before, 1, 0), EXACT_OK);
	expect_rc(commit_scan_guarded(r, s, &from, 1, 0), EXACT_OK);
	r->ops->snapshot_free(r, s);
}

static void test_rows__cond_scan_outside_range(void **state)
{
	kt__rows *r = rows_of(state);
	kt__scan how = scan_of(L("p"), KT__SCAN_AFTER);
	kt__scan pre = scan_of(L("p"), KT__SCAN_PREFIX);
	kt__snap *s;

	fill_ace(r);
	how.after = L("a");
	s = snap_take(r);
	fix(r, s);
	put(r, L("p"), L("a"), L("11"));      /* the 'after' key itself */
	put(r, L("p"), L("0"), L("before"));  /* before the range */
	put(r, L("q"), L("x"), L("99"));      /* another partition */
	put(r, L("o"), L("z"), L("z"));       /* one sorting before */
	put(r, L("p\x01"), L(""), L("next")); /* next in key order */
	/* The scan (c, e, over) reads the same on the latest state. */
	expect_rc(commit_scan_guarded(r, s, &how, 2, 1), EXACT_OK);
	assert_get(r, NULL, L("w"), L(""),
		   engine_now->exact_conds ? "=written" : "(absent)");
	r->ops->snapshot_free(r, s);

	/* A complete prefix scan is not disturbed by partitions that do
	 * not start with its prefix, on either side. */
	s = snap_take(r);
	fix(r, s);
	put(r, L("o\xff"), L(""), L("1"));
	put(r, L("q"), L(""), L("2"));
	expect_rc(commit_scan_guarded(r, s, &pre, 5, 1), EXACT_OK);
	r->ops->snapshot_free(r, s);
}

/* ------------------------------------------------------------------------ */
/* empty(), sync(). */

static void test_rows__empty(void **state)
{
	kt__rows *r = rows_of(state);

	expect_rc(r->ops->empty(r), 1);
	put(r, L("p"), L("k"), L("v"));
	expect_rc(r->ops->empty(r), 0);
	put(r, L("\xff\xff"), L("\xff"), L(""));
	del(r, L("p"), L("k"));
	expect_rc(r->ops->empty(r), 0);
	del(r, L("\xff\xff"), L("\xff"));
	expect_rc(r->ops->empty(r), 1);
}

/* sync() succeeds, and what was committed (with and without the sync
 * flag) is there after the engine is closed and opened again. */
static void test_rows__sync_and_reopen(void **state)
{
	fixture *f = *state;
	kt__commit cm;
	kt__write w;

	put(f->r, L("p"), L("a"), L("1"));
	memset(&w, 0, sizeof(w));
	w.part = L("p");
	w.sort = L("b");
	w.value = L("2");
	memset(&cm, 0, sizeof(cm));
	cm.w = &w;
	cm.nw = 1;
	cm.sync = 1;
	expect_rc(f->r->ops->commit(f->r, &cm), 0);
	put(f->r, L("p"), L("c"), L("3"));
	expect_rc(f->r->ops->sync(f->r), 0);
	/* Nothing to flush is no error either. */
	expect_rc(f->r->ops->sync(f->r), 0);

	engine_close(f);
	assert_int_equal(engine_open(f), 0);
	assert_get(f->r, NULL, L("p"), L("a"), "=1");
	assert_get(f->r, NULL, L("p"), L("b"), "=2");
	assert_get(f->r, NULL, L("p"), L("c"), "=3");
	expect_rc(f->r->ops->empty(f->r), 0);
}


/* ------------------------------------------------------------------------ */
/* A value's block rows (partition "/blk/" + 16 hex digits, 8-byte
 * big-endian block numbers): on RADOS they live in object data, 256 to
 * an object, with a list of those objects in the value's base object
 * (docs/FORMAT.md, section 14); through the seam they must behave like
 * any partition's rows. */

#define BLKP L("/blk/0000000000000401")
#define BLK8(a, b, c) L("\0\0\0\0\0" a b c)

/* The rows scan @p how returns, compactly: the partition's last three
 * characters, "/", the block number (or the key as text when it is not
 * 8 bytes), then "=" the value when at most 8 bytes, else ":" its length
 * and its first byte (and "!" when not every byte is that one). */
static char *blk_text(kt__rows *r, const kt__snap *snap, const kt__scan *how)
{
	kt__cursor *c = NULL;
	kt__row row;
	kt_test_str s = {0};
	size_t n = 0, i;
	int rc;

	expect_rc(r->ops->scan(&c, r, snap, how), 0);
	kt_test_str_add(&s, "", 0);
	while ((rc = r->ops->next(c, &row)) == 0) {
		if (n++ > 0)
			kt_test_str_add(&s, " ", 1);
		kt_test_str_add(&s, row.part.p + row.part.len - 3, 3);
		if (row.sort.len == 8)
			kt_test_str_addf(&s, "/%llu",
					 (unsigned long long)kt__get64be(
						 (const unsigned char *)
							 row.sort.p));
		else
			kt_test_str_addf(&s, "/%.*s", (int)row.sort.len,
					 row.sort.p);
		if (row.value.len <= 8) {
			kt_test_str_addf(&s, "=%.*s", (int)row.value.len,
					 row.value.p);
			continue;
		}
		kt_test_str_addf(&s, ":%zu%c", row.value.len, row.value.p[0]);
		for (i = 1; i < row.value.len; i++)
			if (row.value.p[i] != row.value.p[0])
				break;
		if (i < row.value.len)
			kt_test_str_add(&s, "!", 1);
	}
	if (rc != KT_ITEROVER)
		fail_msg("next: %d (%s)", rc, kt_errmsg());
	r->ops->cursor_free(c);
	return s.p;
}

#define assert_blk(r, snap, how, want)                                         \
	do {                                                                   \
		char *ab__t = blk_text((r), (snap), (how));                    \
		assert_string_equal(ab__t, (want));                            \
		free(ab__t);                                                   \
	} while (0)

static void blk_exercise(kt__rows *r)
{
	static char full[16384], longv[20000], longw[17000];
	kt__scan all = scan_of(BLKP, 0);
	kt__scan from = scan_of(BLKP, KT__SCAN_FROM);
	kt__scan after = scan_of(BLKP, KT__SCAN_AFTER);
	kt__scan prefix = scan_of(L("/blk/"), KT__SCAN_PREFIX);
	kt__buf v = {0};
	kt__snap *s;
	batch b = {0};

	memset(full, 'F', sizeof(full));
	memset(longv, 'L', sizeof(longv));
	memset(longw, 'W', sizeof(longw));
	/* Out of order, across stripes (256 blocks each on RADOS), one
	 * longer than a block's place in an object, one empty, one whose
	 * key is not 8 bytes. */
	b_put(&b, BLKP, BLK8("\0", "\x03", "\xe8"), kt__sl(longv, sizeof(longv)));
	b_put(&b, BLKP, BLK8("\0", "\0", "\x05"), L("b5"));
	b_put(&b, BLKP, BLK8("\0", "\x01", "\0"), kt__sl(full, sizeof(full)));
	b_put(&b, BLKP, BLK8("\0", "\0", "\0"), L("b0"));
	b_put(&b, BLKP, BLK8("\0", "\0", "\xff"), L("b255"));
	b_put(&b, BLKP, BLK8("\x01", "\x11", "\x70"), L("b70000"));
	b_put(&b, BLKP, L("abc"), L("odd"));
	b_put(&b, L("/blk/0000000000000402"), BLK8("\0", "\0", "\x01"),
	      L("other"));
	b_put(&b, BLKP, BLK8("\0", "\0", "\x07"), L(""));
	expect_rc(b_commit(r, &b, NULL), 0);

	assert_get(r, NULL, BLKP, BLK8("\0", "\0", "\x05"), "=b5");
	assert_get(r, NULL, BLKP, BLK8("\0", "\0", "\x06"), "(absent)");
	assert_get(r, NULL, BLKP, BLK8("\0", "\0", "\x07"), "=");
	assert_get(r, NULL, BLKP, BLK8("\0", "\x01", "\x01"), "(absent)");
	expect_rc(r->ops->get(r, NULL, BLKP, BLK8("\0", "\x01", "\0"), &v), 0);
	assert_int_equal(v.len, sizeof(full));
	assert_memory_equal(v.p, full, sizeof(full));
	expect_rc(r->ops->get(r, NULL, BLKP, BLK8("\0", "\x03", "\xe8"), &v),
		  0);
	assert_int_equal(v.len, sizeof(longv));
	assert_memory_equal(v.p, longv, sizeof(longv));
	assert_blk(r, NULL, &all,
		   "401/0=b0 401/5=b5 401/7= 401/255=b255 401/256:16384F "
		   "401/1000:20000L 401/70000=b70000 401/abc=odd");
	from.from = BLK8("\0", "\x01", "\0");
	assert_blk(r, NULL, &from,
		   "401/256:16384F 401/1000:20000L 401/70000=b70000 "
		   "401/abc=odd");
	after.after = BLK8("\0", "\0", "\xff");
	assert_blk(r, NULL, &after,
		   "401/256:16384F 401/1000:20000L 401/70000=b70000 "
		   "401/abc=odd");
	after.after = BLK8("\0", "\x03", "\xe8");
	assert_blk(r, NULL, &after, "401/70000=b70000 401/abc=odd");
	assert_blk(r, NULL, &prefix,
		   "401/0=b0 401/5=b5 401/7= 401/255=b255 401/256:16384F "
		   "401/1000:20000L 401/70000=b70000 401/abc=odd 402/1=other");

	/* Deletes, and overwrites that change how a block is kept. */
	memset(&b, 0, sizeof(b));
	b_del(&b, BLKP, BLK8("\0", "\0", "\x05"));
	b_del(&b, BLKP, BLK8("\0", "\x01", "\0"));
	b_del(&b, BLKP, BLK8("\x01", "\x11", "\x70"));
	b_put(&b, BLKP, BLK8("\0", "\0", "\xff"), L("x"));
	b_put(&b, BLKP, BLK8("\0", "\x03", "\xe8"), L("short"));
	b_put(&b, BLKP, BLK8("\0", "\0", "\0"), kt__sl(longw, sizeof(longw)));
	expect_rc(b_commit(r, &b, NULL), 0);
	assert_blk(r, NULL, &all,
		   "401/0:17000W 401/7= 401/255=x 401/1000=short 401/abc=odd");
	assert_get(r, NULL, BLKP, BLK8("\0", "\x01", "\0"), "(absent)");
	/* A block written again after its deletion reads as written, not
	 * as what its place held before. */
	put(r, BLKP, BLK8("\0", "\x01", "\0"), L("again"));
	assert_get(r, NULL, BLKP, BLK8("\0", "\x01", "\0"), "=again");

	/* A scan of a value's blocks as a condition: a block added in a
	 * stripe the value did not have fails the commit; a new partition
	 * elsewhere (on RADOS, a new catalog entry) and another value's
	 * blocks do not. */
	s = snap_take(r);
	scan_all(r, s, &all);
	put(r, L("/blk/0000000000000402"), BLK8("\0", "\x05", "\0"), L("o"));
	put(r, L("zz-new"), L("k"), L("v"));
	memset(&b, 0, sizeof(b));
	b_scan(&b, &all, 6, 1);
	b_put(&b, L("w"), L(""), L("written"));
	expect_rc(b_commit(r, &b, s), 0);
	r->ops->snapshot_free(r, s);
	s = snap_take(r);
	scan_all(r, s, &all);
	put(r, BLKP, BLK8("\0", "\x03", "\0"), L("b768"));
	memset(&b, 0, sizeof(b));
	b_scan(&b, &all, 6, 1);
	b_put(&b, L("w"), L(""), L("again"));
	expect_rc(b_commit(r, &b, s), KT__ERETRY);
	assert_get(r, NULL, L("w"), L(""), "=written");
	r->ops->snapshot_free(r, s);
	assert_blk(r, NULL, &all,
		   "401/0:17000W 401/7= 401/255=x 401/256=again 401/768=b768 "
		   "401/1000=short 401/abc=odd");
	kt__buf_free(&v);
}

static void test_rows__blk_partition(void **state)
{
	blk_exercise(rows_of(state));
#ifdef KT_HAVE_RADOS
	if (strcmp(engine_now->name, "rados") == 0)
		assert_int_equal(kt__rados_layout(rows_of(state)), 4);
#endif
}

/* A RADOS tree made before blocks moved to object data (layout 1, no
 * kt.fmt on its catalog) keeps working, and keeps its layout. */
static void test_rows__blk_layout_1(void **state)
{
#ifdef KT_HAVE_RADOS
	fixture *f = *state;
	kt__scan all = scan_of(BLKP, 0);

	if (strcmp(engine_now->name, "rados") != 0)
		skip();
	open_layout(f, "-v1", 1);
	blk_exercise(f->r);
	engine_close(f);
	assert_int_equal(engine_open(f), 0);
	assert_int_equal(kt__rados_layout(f->r), 1);
	assert_blk(f->r, NULL, &all,
		   "401/0:17000W 401/7= 401/255=x 401/256=again 401/768=b768 "
		   "401/1000=short 401/abc=odd");
#else
	(void)state;
	skip();
#endif
}

/* ------------------------------------------------------------------------ */

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(test_rows__get_present_absent),
		T(test_rows__scan_forward_reverse),
		T(test_rows__scan_after),
		T(test_rows__scan_from),
		T(test_rows__id_partition),
		T(test_rows__blk_partition),
		T(test_rows__blk_layout_1),
		T(test_rows__scan_prefix),
		T(test_rows__scan_prefix_after),
		T(test_rows__scan_prefix_ff),
		T(test_rows__binary_sort_keys),
		T(test_rows__snapshot_isolation),
		T(test_rows__reread_rows_follow_commits),
		T(test_rows__reread_rows_follow_a_large_commit),
		T(test_rows__commit_seen_whole_by_rereads),
		T(test_rows__own_commit_read_back),
		T(test_rows__get_near),
		T(test_rows__damaged_block),
		T(test_rows__padded_table_reads),
		T(test_rows__cursor_on_snapshot),
		T(test_rows__validate),
		T(test_rows__read_past_pending),
		T(test_rows__read_past_parallel),
		T(test_rows__parallel_no_primary),
		T(test_rows__parallel_fence_left),
		T(test_rows__parallel_ring),
		T(test_rows__record_kinds),
		T(test_rows__record_on_object_left),
		T(test_rows__catalog_past_pending),
		T(test_rows__batch_together_in_order),
		T(test_rows__commit_order_numbers),
		T(test_rows__refused_commit_applies_nothing),
		T(test_rows__commit_unconditional),
		T(test_rows__commit_no_conditions),
		T(test_rows__commit_nothing_changed),
		T(test_rows__cond_row_changed),
		T(test_rows__cond_row_deleted),
		T(test_rows__cond_absent_row_created),
		T(test_rows__cond_absent_row_created_empty),
		T(test_rows__cond_row_restored),
		T(test_rows__cond_other_row_changed),
		T(test_rows__cond_scan_insert_inside),
		T(test_rows__cond_scan_value_changed_inside),
		T(test_rows__cond_scan_delete_inside),
		T(test_rows__cond_scan_insert_past_incomplete),
		T(test_rows__cond_scan_zero_rows_incomplete),
		T(test_rows__cond_scan_insert_past_complete),
		T(test_rows__cond_scan_empty_complete),
		T(test_rows__cond_scan_complete_kinds),
		T(test_rows__cond_scan_outside_range),
		T(test_rows__empty),
		T(test_rows__sync_and_reopen),
	};
	size_t i;
	int failed = 0;

	/* With arguments, only the engines named run (each must exist). */
	for (i = 1; i < (size_t)argc; i++) {
		size_t j, found = 0;
		for (j = 0; j < sizeof(engines) / sizeof(engines[0]); j++)
			found += strcmp(argv[i], engines[j].name) == 0;
		if (!found) {
			fprintf(stderr, "test_rows: no engine '%s' in this "
				"build\n", argv[i]);
			return 1;
		}
	}
	for (i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		/* Without arguments, the engines that need nothing but this
		 * machine: RADOS needs a cluster (test_rows_rados). */
		int j, named = argc < 2 && strcmp(engines[i].name, "rados");
		for (j = 1; j < argc; j++)
			named |= strcmp(argv[j], engines[i].name) == 0;
		if (!named)
			continue;
		engine_now = &engines[i];
		failed += cmocka_run_group_tests_name(engines[i].name, tests,
						      NULL, NULL);
	}
	return failed;
}
