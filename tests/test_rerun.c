/*
 * test_rerun.c - operations whose commit is refused run again from the
 * start, and leave no trace of the refused attempt.
 *
 * Each test puts a meddling engine between a store and its LevelDB
 * engine: at the first guarded commit it plays another process, changing
 * (through the real engine, unconditionally) one row the operation read,
 * so that the real engine refuses the commit and kt__tx_run() reruns the
 * operation on the changed store.  The tests then check the operation's
 * outputs and effects against that changed store: the orphan operations,
 * whose outputs (ids) must come from the successful run and whose inputs
 * (KT_APPEND) must not be consumed by the refused one, and kt_repair,
 * whose callback must hear each repair once.
 *
 * Like test_rows.c, this reaches the library's internals (tree.h).
 */
#include "kt_test.h"

#include "tree.h"

/* How the meddler changes its row's value. */
typedef void (*change_fn)(kt__buf *val);

typedef struct meddler {
	kt__rows base;
	kt__rows *real;
	kt__buf part, sort; /* the row to change at the first guarded commit */
	change_fn change;
	int armed;
	int refused; /* commits the real engine refused */
} meddler;

static int m_get(kt__rows *r, const kt__snap *snap, kt__slice part,
		 kt__slice sort, kt__buf *out)
{
	kt__rows *x = ((meddler *)r)->real;

	return x->ops->get(x, snap, part, sort, out);
}

static int m_scan(kt__cursor **out, kt__rows *r, const kt__snap *snap,
		  const kt__scan *how)
{
	kt__rows *x = ((meddler *)r)->real;

	return x->ops->scan(out, x, snap, how);
}

/* Cursors and snapshots are the real engine's, passed through; its
 * cursor functions need no handle. */
static const kt__rows_ops *real_ops;

static int m_next(kt__cursor *c, kt__row *row)
{
	return real_ops->next(c, row);
}

static void m_cursor_free(kt__cursor *c)
{
	real_ops->cursor_free(c);
}

static int m_snapshot(kt__snap **out, kt__rows *r)
{
	kt__rows *x = ((meddler *)r)->real;

	return x->ops->snapshot(out, x);
}

static void m_snapshot_free(kt__rows *r, kt__snap *snap)
{
	kt__rows *x = ((meddler *)r)->real;

	x->ops->snapshot_free(x, snap);
}

/* Another process's write: the row's value, changed. */
static void meddle(meddler *m)
{
	kt__buf v = {0};
	kt__write w;
	kt__commit cm;

	assert_int_equal(m->real->ops->get(m->real, NULL, kt__slb(&m->part),
					   kt__slb(&m->sort), &v), 0);
	m->change(&v);
	memset(&w, 0, sizeof(w));
	w.part = kt__slb(&m->part);
	w.sort = kt__slb(&m->sort);
	w.value = kt__slb(&v);
	memset(&cm, 0, sizeof(cm));
	cm.w = &w;
	cm.nw = 1;
	assert_int_equal(m->real->ops->commit(m->real, &cm), 0);
	kt__buf_free(&v);
}

static int m_commit(kt__rows *r, const kt__commit *cm)
{
	meddler *m = (meddler *)r;
	int rc;

	if (m->armed && cm->snap != NULL) {
		m->armed = 0;
		meddle(m);
	}
	rc = m->real->ops->commit(m->real, cm);
	if (rc == KT__ERETRY)
		m->refused++;
	return rc;
}

static int m_sync(kt__rows *r)
{
	kt__rows *x = ((meddler *)r)->real;

	return x->ops->sync(x);
}

static int m_empty(kt__rows *r)
{
	kt__rows *x = ((meddler *)r)->real;

	return x->ops->empty(x);
}

static void m_close(kt__rows *r)
{
	meddler *m = (meddler *)r;

	m->real->ops->close(m->real);
	kt__buf_free(&m->part);
	kt__buf_free(&m->sort);
	free(m);
}

static const kt__rows_ops meddler_ops = {
	.get = m_get,
	.scan = m_scan,
	.next = m_next,
	.cursor_free = m_cursor_free,
	.snapshot = m_snapshot,
	.snapshot_free = m_snapshot_free,
	.commit = m_commit,
	.sync = m_sync,
	.empty = m_empty,
	.close = m_close,
};

/* Put a meddler into the fixture's store (again after a reopen). */
static meddler *meddler_install(kt_test_fixture *f)
{
	meddler *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	m->base.ops = &meddler_ops;
	m->real = f->store->rows;
	real_ops = m->real->ops;
	f->store->rows = &m->base;
	return m;
}

/* Arm @p m: at the first guarded commit, change row (part, sort) by
 * @p change. */
static void meddler_arm(meddler *m, kt__slice part, kt__slice sort,
			change_fn change)
{
	assert_int_equal(kt__buf_set(&m->part, part.p, part.len), 0);
	assert_int_equal(kt__buf_set(&m->sort, sort.p, sort.len), 0);
	m->change = change;
	m->armed = 1;
	m->refused = 0;
}

/* Arm @p m on the node row of @p path. */
static void arm_node(meddler *m, kt_store *st, const char *path,
		     change_fn change)
{
	kt__buf part = {0};

	assert_int_equal(kt__enc_node(&part, &st->delim, path, strlen(path)),
			 0);
	meddler_arm(m, kt__slb(&part), kt__sl("", 0), change);
	kt__buf_free(&part);
}

/* Arm @p m on the row of orphan @p id. */
static void arm_orphan(meddler *m, uint64_t id, change_fn change)
{
	unsigned char k[8];

	kt__put64be(k, id);
	meddler_arm(m, kt__sl(KT__PART_ORPHAN, strlen(KT__PART_ORPHAN)),
		    kt__sl(k, 8), change);
}

/* Changes. */

static void node_edit(kt__buf *val, int append)
{
	kt__node n = {0};
	kt__buf out = {0};

	assert_int_equal(kt__node_decode(&n, val->p, val->len), 0);
	n.atime += 1000;
	if (append) {
		/* Another process appended "XY" to the inline value. */
		assert_int_equal(kt__buf_add(&n.payload, "XY", 2), 0);
		n.size += 2;
	}
	assert_int_equal(kt__node_encode(&out, &n), 0);
	kt__buf_free(val);
	*val = out;
	kt__node_free(&n);
}

/* Another process touched the node (atime). */
static void touch_node(kt__buf *val)
{
	node_edit(val, 0);
}

static void append_xy(kt__buf *val)
{
	node_edit(val, 1);
}

/* Another process reserved the next range of ids. */
static void reserve_ids(kt__buf *val)
{
	unsigned char *u = (unsigned char *)val->p;

	assert_int_equal(val->len, 16);
	kt__put64(u, kt__get64(u) + KT__ALLOC_CHUNK);
}

static kt_test_fixture *fix(void **state)
{
	return *state;
}

/* ------------------------------------------------------------------------ */

/* The rerun appends at the end of the value as the other process left it:
 * KT_APPEND is resolved in each run, not once. */
static void test_rerun__orphan_write_append(void **state)
{
	kt_test_fixture *f = fix(state);
	meddler *m = meddler_install(f);
	uint64_t id;
	char buf[16];
	size_t n;

	assert_int_equal(kt_orphan_new(&id, f->store, NULL), 0);
	assert_int_equal(kt_orphan_write(f->store, id, "abc", 3, 0), 0);
	arm_orphan(m, id, append_xy);
	assert_int_equal(kt_orphan_write(f->store, id, "def", 3, KT_APPEND),
			 0);
	assert_int_equal(m->refused, 1);
	assert_int_equal(kt_orphan_read(&n, f->store, id, buf, sizeof(buf),
					0), 0);
	assert_int_equal(n, 8);
	assert_memory_equal(buf, "abcXYdef", 8);
	assert_int_equal(kt_orphan_release(f->store, id), 0);
}

static void test_rerun__orphan_detach(void **state)
{
	kt_test_fixture *f = fix(state);
	meddler *m = meddler_install(f);
	kt_statbuf sb, ob;
	uint64_t id = 0;

	assert_int_equal(kt_put(f->store, "/d/x", "v", 1, NULL), 0);
	assert_int_equal(kt_lstat(&sb, f->store, "/d/x"), 0);
	arm_node(m, f->store, "/d/x", touch_node);
	assert_int_equal(kt_orphan_detach(&id, f->store, "/d/x"), 0);
	assert_int_equal(m->refused, 1);
	assert_int_equal(id, sb.id);
	assert_int_equal(kt_lstat(&sb, f->store, "/d/x"), KT_ENOTFOUND);
	assert_int_equal(kt_orphan_stat(&ob, f->store, id), 0);
	assert_int_equal(ob.size, 1);
	assert_int_equal(kt_orphan_release(f->store, id), 0);
}

static void test_rerun__orphan_copy(void **state)
{
	kt_test_fixture *f = fix(state);
	meddler *m = meddler_install(f);
	kt_statbuf sb, ob;
	uint64_t id = 0;
	char buf[4];
	size_t n;

	assert_int_equal(kt_put(f->store, "/x", "abc", 3, NULL), 0);
	assert_int_equal(kt_lstat(&sb, f->store, "/x"), 0);
	arm_node(m, f->store, "/x", append_xy);
	assert_int_equal(kt_orphan_copy(&id, f->store, "/x"), 0);
	assert_int_equal(m->refused, 1);
	assert_true(id != 0 && id != sb.id);
	assert_int_equal(kt_orphan_stat(&ob, f->store, id), 0);
	assert_int_equal(ob.id, id);
	/* A copy of the value as the rerun found it. */
	assert_int_equal(kt_orphan_read(&n, f->store, id, buf, sizeof(buf),
					0), 0);
	assert_int_equal(n, 4);
	assert_memory_equal(buf, "abcX", 4);
	assert_int_equal(kt_orphan_release(f->store, id), 0);
}

static void test_rerun__orphan_link(void **state)
{
	kt_test_fixture *f = fix(state);
	meddler *m = meddler_install(f);
	uint64_t id;
	kt_statbuf sb;
	void *v = NULL;
	size_t len = 0;

	assert_int_equal(kt_orphan_new(&id, f->store, NULL), 0);
	assert_int_equal(kt_orphan_write(f->store, id, "abc", 3, 0), 0);
	arm_orphan(m, id, append_xy);
	assert_int_equal(kt_orphan_link(f->store, id, "/y"), 0);
	assert_int_equal(m->refused, 1);
	assert_int_equal(kt_get(&v, &len, f->store, "/y"), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(v, "abcXY", 5);
	kt_free(v);
	assert_int_equal(kt_lstat(&sb, f->store, "/y"), 0);
	assert_int_equal(sb.id, id);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), KT_ENOTFOUND);
}

/* A fresh handle reserves ids in the orphan's transaction; another
 * process reserving the same range first makes it take the next. */
static void test_rerun__orphan_new(void **state)
{
	kt_test_fixture *f = fix(state);
	meddler *m;
	kt_statbuf sb;
	unsigned char u[16];
	kt__buf v = {0};
	uint64_t id = 0, limit;

	kt_test_reopen(f);
	m = meddler_install(f);
	assert_int_equal(m->real->ops->get(m->real, NULL,
					   kt__sl(KT__PART_META, 5),
					   kt__sl("alloc", 5), &v), 0);
	assert_int_equal(v.len, 16);
	memcpy(u, v.p, 16);
	kt__buf_free(&v);
	limit = kt__get64(u);
	meddler_arm(m, kt__sl(KT__PART_META, 5), kt__sl("alloc", 5),
		    reserve_ids);
	assert_int_equal(kt_orphan_new(&id, f->store, NULL), 0);
	assert_int_equal(m->refused, 1);
	/* Not from the range the other process took. */
	assert_true(id >= limit + KT__ALLOC_CHUNK);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), 0);
	assert_int_equal(sb.id, id);
	assert_int_equal(kt_orphan_release(f->store, id), 0);
}

static void test_rerun__orphan_release(void **state)
{
	kt_test_fixture *f = fix(state);
	meddler *m = meddler_install(f);
	kt_statbuf sb;
	uint64_t id;

	assert_int_equal(kt_orphan_new(&id, f->store, NULL), 0);
	arm_orphan(m, id, touch_node);
	assert_int_equal(kt_orphan_release(f->store, id), 0);
	assert_int_equal(m->refused, 1);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), KT_ENOTFOUND);
}

static int count_cb(const char *what, void *payload)
{
	(void)what;
	(*(size_t *)payload)++;
	return 0;
}

/* The callback hears each repair once: the refused attempt's fixes did not
 * happen, and are not reported. */
static void test_rerun__repair_reports_once(void **state)
{
	kt_test_fixture *f = fix(state);
	meddler *m = meddler_install(f);
	kt__buf part = {0};
	kt__write w;
	kt__commit cm;
	kt_check_options co = KT_CHECK_OPTIONS_INIT;
	size_t calls = 0, nfixed = 0, bad = 0;

	assert_int_equal(kt_put(f->store, "/a/x", "1", 1, NULL), 0);
	assert_int_equal(kt_put(f->store, "/b", "2", 1, NULL), 0);
	/* Damage: the index row of /a/x goes. */
	assert_int_equal(kt__enc_index(&part, &f->store->delim, "/a", 2), 0);
	memset(&w, 0, sizeof(w));
	w.part = kt__slb(&part);
	w.sort = kt__sl("x", 1);
	w.del = 1;
	memset(&cm, 0, sizeof(cm));
	cm.w = &w;
	cm.nw = 1;
	assert_int_equal(m->real->ops->commit(m->real, &cm), 0);
	kt__buf_free(&part);
	assert_int_equal(kt_check(&bad, f->store, NULL), KT_ECORRUPT);
	assert_true(bad > 0);

	arm_node(m, f->store, "/b", touch_node);
	co.on_violation = count_cb;
	co.payload = &calls;
	assert_int_equal(kt_repair(&nfixed, f->store, &co), 0);
	assert_int_equal(m->refused, 1);
	assert_true(nfixed > 0);
	assert_int_equal(calls, nfixed);
	assert_int_equal(kt_check(&bad, f->store, NULL), 0);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_rerun__orphan_write_append, kt_test_setup,
			kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_rerun__orphan_detach,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_rerun__orphan_copy,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_rerun__orphan_link,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_rerun__orphan_new,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_rerun__orphan_release,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_rerun__repair_reports_once,
						kt_test_setup,
						kt_test_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
