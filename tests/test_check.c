/*
 * test_check.c - kt_check on healthy stores: every kind of node, values
 * large and sparse, attributes, links (dangling too), and the aftermath of
 * renames and deletes all pass with zero violations and without the
 * callback being called.
 */
#include "kt_test.h"
#include "kt_helpers.h"

typedef struct calls {
	size_t n;
	char first[512];
} calls;

static int record_cb(const char *what, void *payload)
{
	calls *c = payload;

	if (c->n++ == 0)
		snprintf(c->first, sizeof(c->first), "%s", what);
	return 0;
}

/* kt_check must return 0, report 0 violations and never call back. */
static void assert_healthy(kt_store *s)
{
	calls c = {0};
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	size_t n = 12345;
	int rc;

	o.on_violation = record_cb;
	o.payload = &c;
	rc = kt_check(&n, s, &o);

	if (rc != 0 || n != 0 || c.n != 0)
		fail_msg("kt_check: %d (%s), %zu violations, %zu callbacks, "
			 "first: %s", rc, kt_errmsg(), n, c.n, c.first);
}

/* A store with one of everything. */
static void populate(kt_store *s)
{
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	size_t big_len = 1u << 20, i;
	char *big = malloc(big_len);
	char path[64];

	assert_non_null(big);
	for (i = 0; i < big_len; i++)
		big[i] = (char)(i * 7);
	put_str(s, "/item", "value");
	put_str(s, "/empty-value", "");
	ok(kt_mkdir(s, "/dir", NULL));
	ok(kt_mkdir(s, "/dir/empty", NULL));
	put_str(s, "/both", "value");
	put_str(s, "/both/child", "c");
	ok(kt_mkdir(s, "/both/sub", NULL));
	put_str(s, "/ancestors/made/by/put", "deep");
	o.flags = KT_CREATE_PARENTS;
	ok(kt_mkdir(s, "/mkdir/p/q", &o));
	ok(kt_symlink(s, "/links/abs", "/item", &o));
	ok(kt_symlink(s, "/links/rel", "../dir", NULL));
	ok(kt_symlink(s, "/links/dangling", "/nowhere/at/all", NULL));
	ok(kt_symlink(s, "/links/loop", "/links/loop", NULL));
	ok(kt_put(s, "/big", big, big_len, NULL));
	put_str(s, "/sparse", "start");
	ok(kt_write(s, "/sparse", "end", 3, (uint64_t)1 << 36));
	/* Cut back to 1 MiB: kt_assert_rejected's digest reads values. */
	ok(kt_truncate(s, "/sparse", (uint64_t)1 << 20));
	ok(kt_attr_set(s, "/item", "user.a", "1", 1, 0));
	ok(kt_attr_set(s, "/item", "user.b", big, 65536, 0));
	ok(kt_attr_set(s, "/dir", "user.dir", "d", 1, 0));
	ok(kt_attr_set(s, "/both", "user.both", "", 0, 0));
	ok(kt_attr_set(s, "/", "user.root", "r", 1, 0));
	ok(kt_attr_set(s, "/item", "user.gone", "g", 1, 0));
	ok(kt_attr_delete(s, "/item", "user.gone"));
	ok(kt_put(s, "/\xc3\xa9t\xc3\xa9/\x01\xff", "binary", 6, NULL));
	for (i = 0; i < 100; i++) {
		snprintf(path, sizeof(path), "/many/n%03zu", i);
		put_str(s, path, "v");
	}
	free(big);
}

static void test_check__empty_store(void **state)
{
	assert_healthy(store_of(state));
}

static void test_check__healthy_store_all_kinds(void **state)
{
	kt_store *s = store_of(state);

	populate(s);
	assert_healthy(s);
	kt_test_reopen(*state);
	assert_healthy(store_of(state));
}

static void test_check__after_renames_and_deletes(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;

	populate(s);
	ok(kt_rename(s, "/dir", "/dir2", 0));
	ok(kt_rename(s, "/both", "/ancestors/made/both", 0));
	ok(kt_rename(s, "/item", "/big", 0));
	ok(kt_rename(s, "/sparse", "/mkdir", KT_RENAME_EXCHANGE));
	ok(kt_delete(s, "/many/n050", 0));
	ok(kt_delete(s, "/ancestors/made/both", KT_DELETE_ITEM));
	ok(kt_delete(s, "/sparse/p/q", KT_DELETE_PRUNE));
	ok(kt_delete(s, "/links", KT_DELETE_RECURSIVE));
	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/batch/x", "x", 1, NULL));
	ok(kt_batch_rename(b, "/batch", "/batched", 0));
	ok(kt_batch_delete(b, "/many", KT_DELETE_RECURSIVE));
	ok(kt_batch_commit(b));
	kt_batch_free(b);
	assert_healthy(s);
}

/* A rejected operation leaves no partial rows behind. */
static void test_check__after_rejected_ops(void **state)
{
	kt_store *s = store_of(state);

	populate(s);
	kt_assert_rejected(s, kt_delete(s, "/dir", 0), KT_ENOTEMPTY, "/dir");
	kt_assert_rejected(s, kt_rename(s, "/dir", "/dir/empty/x", 0),
			   KT_EINVAL, "/dir");
	kt_assert_rejected(s, kt_put(s, "/links/abs/x", "v", 1, NULL),
			   KT_ENOTDIR, "/links/abs");
	assert_healthy(s);
}

static void test_check__null_out_and_callback(void **state)
{
	kt_store *s = store_of(state);

	populate(s);
	ok(kt_check(NULL, s, NULL));
	assert_healthy(s);
}

/* What the progress callback saw. */
typedef struct prog {
	size_t calls;
	uint64_t last_done, last_total;
	int monotonic;  /* done never went down, never past total */
	size_t stop_at; /* return non-zero on this call (0: never) */
} prog;

static int prog_cb(uint64_t done, uint64_t total, void *payload)
{
	prog *p = payload;

	if (p->calls > 0 && done < p->last_done)
		p->monotonic = 0;
	if (done > total)
		p->monotonic = 0;
	p->last_done = done;
	p->last_total = total;
	p->calls++;
	return p->stop_at != 0 && p->calls == p->stop_at;
}

/* kt_check_options: on_progress counts up to the number of path rows;
 * returning non-zero from it stops the check with KT_ITEROVER. */
static void test_check__progress(void **state)
{
	kt_store *s = store_of(state);
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	prog p = {0, 0, 0, 1, 0};
	size_t n = 99;

	populate(s);
	o.on_progress = prog_cb;
	o.payload = &p;
	ok(kt_check(&n, s, &o));
	assert_int_equal(n, 0);
	assert_true(p.calls >= 2); /* at the start and at the end */
	assert_true(p.monotonic);
	assert_true(p.last_total > 0);
	assert_int_equal(p.last_done, p.last_total);
	/* stopped on the first call */
	memset(&p, 0, sizeof(p));
	p.monotonic = 1;
	p.stop_at = 1;
	expect_rc(kt_check(&n, s, &o), KT_ITEROVER);
	assert_int_equal(p.calls, 1);
	assert_non_null(strstr(kt_errmsg(), "stopped"));
}

/* An options struct of another version is refused by kt_check and
 * kt_repair, naming the version; kt_repair refuses a progress callback. */
static void test_check__options_refused(void **state)
{
	kt_store *s = store_of(state);
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	prog p = {0, 0, 0, 1, 0};
	size_t n = 99;

	populate(s);
	o.version = 0;
	kt_assert_rejected(s, kt_check(&n, s, &o), KT_EINVAL,
			   "options version 0");
	assert_int_equal(n, 0);
	o.version = KT_CHECK_OPTIONS_VERSION + 1;
	kt_assert_rejected(s, kt_check(&n, s, &o), KT_EINVAL,
			   "options version 2");
	n = 99;
	kt_assert_rejected(s, kt_repair(&n, s, &o), KT_EINVAL,
			   "options version 2");
	assert_int_equal(n, 0);
	o.version = KT_CHECK_OPTIONS_VERSION;
	o.on_progress = prog_cb;
	o.payload = &p;
	kt_assert_rejected(s, kt_repair(&n, s, &o), KT_EINVAL, "on_progress");
	assert_int_equal(p.calls, 0);
	kt_assert_rejected(s, kt_check(&n, NULL, NULL), KT_EINVAL, "store");
	/* NULL options: no callbacks */
	ok(kt_repair(&n, s, NULL));
	assert_int_equal(n, 0);
	assert_healthy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup,         \
						kt_test_teardown)
		T(test_check__empty_store),
		T(test_check__healthy_store_all_kinds),
		T(test_check__after_renames_and_deletes),
		T(test_check__after_rejected_ops),
		T(test_check__null_out_and_callback),
		T(test_check__progress),
		T(test_check__options_refused),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
