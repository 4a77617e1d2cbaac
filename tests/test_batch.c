/*
 * test_batch.c - kt_batch: recorded operations are applied in order, each
 * seeing the ones before, and committed all together or not at all; a
 * failing batch reports the failing operation's code and number; a batch
 * commits once.
 */
#include "kt_test.h"
#include "kt_helpers.h"

static void assert_clean(kt_store *s)
{
	size_t n = 99;
	int rc = kt_check(&n, s, NULL);

	if (rc != 0)
		fail_msg("kt_check: %d (%s), %zu violations", rc, kt_errmsg(),
			 n);
	assert_int_equal(n, 0);
}

static void test_batch__commits_all_ops(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;
	char *before = NULL, *now = NULL;
	char path[32] = "/a/x";
	void *v = NULL;
	size_t len = 0;

	put_str(s, "/old", "old");
	put_str(s, "/gone", "gone");
	put_str(s, "/attr", "v");
	ok(kt_attr_set(s, "/attr", "user.drop", "d", 1, 0));
	before = kt_test_digest(s);
	ok(kt_batch_new(&b, s));
	assert_non_null(b);
	ok(kt_batch_mkdir(b, "/a", NULL));
	ok(kt_batch_put(b, path, "xv", 2, NULL));
	ok(kt_batch_symlink(b, "/a/l", "x", NULL));
	ok(kt_batch_attr_set(b, "/a/x", "user.k", "kv", 2, 0));
	ok(kt_batch_rename(b, "/old", "/new", 0));
	ok(kt_batch_delete(b, "/gone", 0));
	ok(kt_batch_attr_delete(b, "/attr", "user.drop"));
	/* Arguments are copied when recorded. */
	strcpy(path, "/zzz");
	/* Nothing is visible before the commit. */
	now = kt_test_digest(s);
	assert_string_equal(before, now);
	free(now);
	ok(kt_batch_commit(b));
	kt_batch_free(b);

	assert_int_equal(lstat_of(s, "/a").kind, KT_KIND_DIR);
	assert_value(s, "/a/x", "xv");
	assert_value(s, "/a/l", "xv");
	ok(kt_attr_get(&v, &len, s, "/a/x", "user.k"));
	assert_int_equal(len, 2);
	assert_memory_equal(v, "kv", 2);
	kt_free(v);
	assert_value(s, "/new", "old");
	assert_absent(s, "/old");
	assert_absent(s, "/gone");
	assert_absent(s, "/zzz");
	expect_rc(kt_attr_get(&v, &len, s, "/attr", "user.drop"), KT_ENOATTR);
	kt_test_reopen(*state);
	s = store_of(state);
	assert_value(s, "/a/x", "xv");
	assert_clean(s);
	free(before);
}

static void test_batch__third_op_fails_commits_none(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;

	put_str(s, "/keep", "keep");
	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/one", "v", 1, NULL));
	ok(kt_batch_put(b, "/keep", "changed", 7, NULL));
	ok(kt_batch_delete(b, "/missing", 0));
	ok(kt_batch_mkdir(b, "/four", NULL));
	/* No digit in any path, so "3" can only be the operation number. */
	kt_assert_rejected(s, kt_batch_commit(b), KT_ENOTFOUND, "3");
	if (strstr(kt_errmsg(), "missing") == NULL)
		fail_msg("message '%s' does not say why", kt_errmsg());
	kt_batch_free(b);
	assert_absent(s, "/one");
	assert_absent(s, "/four");
	assert_value(s, "/keep", "keep");
}

/* The failure depends on an earlier op of the same batch: /a only exists
 * because op 1 made it. */
static void test_batch__failure_sees_earlier_ops(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;
	kt_create_options excl = KT_CREATE_OPTIONS_INIT;

	excl.flags = KT_CREATE_EXCL;
	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/a", "v", 1, NULL));
	ok(kt_batch_mkdir(b, "/b", NULL));
	ok(kt_batch_put(b, "/a", "w", 1, &excl));
	kt_assert_rejected(s, kt_batch_commit(b), KT_EEXISTS, "3");
	kt_batch_free(b);
	assert_absent(s, "/a");
	assert_absent(s, "/b");
}

/* Op 3 goes through a link to /f, which is a plain item until op 1 makes
 * it an item and directory; op 4 goes through a link to a plain item and
 * fails.  Links made after recording count: ops apply at commit. */
static void test_batch__fourth_op_fails_after_dependent_ops(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;
	kt_statbuf st;

	put_str(s, "/f", "v");
	put_str(s, "/h", "v");
	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/f/x", "v", 1, NULL));
	ok(kt_batch_put(b, "/g", "v", 1, NULL));
	ok(kt_batch_put(b, "/lf/y", "v", 1, NULL));
	ok(kt_batch_put(b, "/lh/z", "v", 1, NULL));
	ok(kt_symlink(s, "/lf", "/f", NULL));
	ok(kt_symlink(s, "/lh", "/h", NULL));
	kt_assert_rejected(s, kt_batch_commit(b), KT_ENOTDIR, "4");
	kt_batch_free(b);
	assert_absent(s, "/g");
	assert_int_equal(lstat_of(s, "/f").kind, KT_KIND_ITEM);
	expect_rc(kt_lstat(&st, s, "/f/x"), KT_ENOTDIR);
}

static void test_batch__later_ops_see_earlier(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;
	uint64_t id = 0;

	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/a", "va", 2, NULL));
	ok(kt_batch_rename(b, "/a", "/b", 0));
	ok(kt_batch_put(b, "/c", "vc", 2, NULL));
	ok(kt_batch_delete(b, "/c", 0));
	ok(kt_batch_mkdir(b, "/d", NULL));
	ok(kt_batch_put(b, "/d/e", "ve", 2, NULL));
	ok(kt_batch_rename(b, "/d", "/f", 0));
	ok(kt_batch_attr_set(b, "/f/e", "user.x", "1", 1, 0));
	ok(kt_batch_symlink(b, "/l", "/f/e", NULL));
	ok(kt_batch_put(b, "/l", "through", 7, NULL));
	ok(kt_batch_put(b, "/t", "t", 1, NULL));
	ok(kt_batch_delete(b, "/t", 0));
	ok(kt_batch_put(b, "/t", "again", 5, NULL));
	ok(kt_batch_commit(b));
	kt_batch_free(b);

	assert_value(s, "/b", "va");
	assert_absent(s, "/a");
	assert_absent(s, "/c");
	assert_absent(s, "/d");
	assert_value(s, "/f/e", "through");
	assert_int_equal(lstat_of(s, "/f/e").nattrs, 1);
	assert_value(s, "/t", "again");
	id = lstat_of(s, "/f/e").id;
	assert_true(id != 0);
	assert_int_equal(lstat_of(s, "/").nsubdirs, 1);
	assert_clean(s);
}

static void test_batch__commit_twice_is_einval(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;

	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/a", "v", 1, NULL));
	ok(kt_batch_commit(b));
	put_str(s, "/a", "changed after");
	/* A second commit must not apply the put again. */
	kt_assert_rejected(s, kt_batch_commit(b), KT_EINVAL, "");
	assert_value(s, "/a", "changed after");
	kt_batch_free(b);
}

static void test_batch__empty_batch_commits(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;
	char *before = kt_test_digest(s), *after = NULL;

	ok(kt_batch_new(&b, s));
	ok(kt_batch_commit(b));
	after = kt_test_digest(s);
	assert_string_equal(before, after);
	kt_batch_free(b);
	free(before);
	free(after);
}

static void test_batch__free_uncommitted_writes_nothing(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;

	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/a", "v", 1, NULL));
	ok(kt_batch_mkdir(b, "/d", NULL));
	kt_batch_free(b);
	kt_batch_free(NULL);
	assert_absent(s, "/a");
	assert_absent(s, "/d");
	kt_test_reopen(*state);
	assert_absent(store_of(state), "/a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup,         \
						kt_test_teardown)
		T(test_batch__commits_all_ops),
		T(test_batch__third_op_fails_commits_none),
		T(test_batch__failure_sees_earlier_ops),
		T(test_batch__fourth_op_fails_after_dependent_ops),
		T(test_batch__later_ops_see_earlier),
		T(test_batch__commit_twice_is_einval),
		T(test_batch__empty_batch_commits),
		T(test_batch__free_uncommitted_writes_nothing),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
