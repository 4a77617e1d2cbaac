/*
 * test_dirmax.c - the most entries a directory may hold (KT_EDIRFULL).
 *
 * A store counts each directory's entries in the directory's node row
 * (docs/FORMAT.md §4), and refuses to add an entry past its limit: 100,000
 * on RADOS, where a directory's listing is one object (docs/SCALING.md
 * §2), none on LevelDB; $KEYTREE_DIR_MAX sets it on either.  These tests
 * set it to a handful and check that every way of adding an entry (put,
 * mkdir, symlink, mknod, missing parents, rename, link, orphan_link) is
 * refused at the limit with a message naming the directory, leaving the
 * store unchanged, that changes which add nothing still work, and that a
 * place freed is a place to use.  Teardown's kt_check compares every
 * directory's count with its listing.
 */
#include "kt_test.h"
#include "kt_helpers.h"

extern int kt__test_counted;

#define MAX 5

static int setup(void **state)
{
	setenv("KEYTREE_DIR_MAX", "5", 1);
	return kt_test_setup(state);
}

static int teardown(void **state)
{
	int rc = kt_test_teardown(state);

	unsetenv("KEYTREE_DIR_MAX");
	return rc;
}

/* /d with MAX items a .. e. */
static void fill(kt_store *s)
{
	char p[16];
	int i;

	for (i = 0; i < MAX; i++) {
		snprintf(p, sizeof(p), "/d/%c", 'a' + i);
		put_str(s, p, "v");
	}
}

static void test_dirmax__create_past_the_limit_refused(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	fill(s);
	kt_assert_rejected(s, kt_put(s, "/d/f", "v", 1, NULL), KT_EDIRFULL,
			   "directory '/d' already holds 5 entries");
	assert_string_equal(kt_strerror(KT_EDIRFULL), "directory full");
	/* The message says what to do about it. */
	assert_non_null(strstr(kt_errmsg(), "KEYTREE_DIR_MAX"));
	assert_non_null(strstr(kt_errmsg(), "subdirectories"));
	kt_assert_rejected(s, kt_mkdir(s, "/d/g", NULL), KT_EDIRFULL, "'/d'");
	kt_assert_rejected(s, kt_symlink(s, "/d/h", "/d/a", NULL),
			   KT_EDIRFULL, "'/d'");
	kt_assert_rejected(s, kt_mknod(s, "/d/p", KT_TYPE_FIFO, 0, NULL),
			   KT_EDIRFULL, "'/d'");
	/* Missing ancestors count where they are made. */
	co.flags = KT_CREATE_PARENTS;
	kt_assert_rejected(s, kt_mkdir(s, "/d/x/y/z", &co), KT_EDIRFULL,
			   "'/d'");
	assert_absent(s, "/d/x");
	kt_assert_rejected(s, kt_put(s, "/d/x/y", "v", 1, NULL), KT_EDIRFULL,
			   "'/d'");
	assert_absent(s, "/d/x");
}

static void test_dirmax__changes_that_add_nothing_still_work(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf st;

	fill(s);
	/* Overwrite, a new value for an item; an item gaining children
	 * (/d/a becomes a directory too); an attribute. */
	put_str(s, "/d/a", "new value");
	assert_value(s, "/d/a", "new value");
	put_str(s, "/d/a/inner", "below a");
	ok(kt_attr_set(s, "/d/b", "k", "v", 1, 0));
	/* A rename inside the full directory, and over one of its own. */
	ok(kt_rename(s, "/d/c", "/d/cc", 0));
	ok(kt_rename(s, "/d/cc", "/d/d", 0));
	assert_value(s, "/d/d", "v");
	assert_absent(s, "/d/cc");
	/* That rename over /d/d freed a place. */
	put_str(s, "/d/f", "v");
	kt_assert_rejected(s, kt_put(s, "/d/g", "v", 1, NULL), KT_EDIRFULL,
			   "'/d'");
	ok(kt_stat(&st, s, "/d"));
	assert_int_equal(st.nsubdirs, 1); /* a, an item and a directory */
}

static void test_dirmax__a_place_freed_is_a_place_to_use(void **state)
{
	kt_store *s = store_of(state);

	fill(s);
	ok(kt_delete(s, "/d/a", 0));
	put_str(s, "/d/f", "v");
	kt_assert_rejected(s, kt_put(s, "/d/g", "v", 1, NULL), KT_EDIRFULL,
			   "'/d'");
	/* A directory (and what is below it) removed whole. */
	put_str(s, "/e/x", "v");
	ok(kt_delete(s, "/d/b", 0));
	ok(kt_mkdir(s, "/d/sub", NULL));
	put_str(s, "/d/sub/deep", "v");
	ok(kt_delete(s, "/d/sub", KT_DELETE_RECURSIVE));
	put_str(s, "/d/g", "v");
	kt_assert_rejected(s, kt_put(s, "/d/h", "v", 1, NULL), KT_EDIRFULL,
			   "'/d'");
	/* The limit is per directory: others still take entries. */
	put_str(s, "/e/y", "v");
}

static void test_dirmax__rename_and_link_into_a_full_directory(void **state)
{
	kt_store *s = store_of(state);

	fill(s);
	put_str(s, "/e/x", "moving");
	/* A subtree of a dozen rows: with KEYTREE_TEST_BIG_ROWS=4 (the
	 * _steps runs) its rename is a large one, fenced or staged. */
	put_str(s, "/e/sub/a", "1");
	put_str(s, "/e/sub/b", "2");
	put_str(s, "/e/sub/c/d", "3");
	kt_assert_rejected(s, kt_rename(s, "/e/x", "/d/x", 0), KT_EDIRFULL,
			   "'/d'");
	kt_assert_rejected(s, kt_rename(s, "/e/sub", "/d/sub", 0),
			   KT_EDIRFULL, "'/d'");
	kt_assert_rejected(s, kt_link(s, "/e/x", "/d/x"), KT_EDIRFULL,
			   "'/d'");
	/* Onto an existing entry it replaces: no new entry. */
	ok(kt_rename(s, "/e/x", "/d/a", 0));
	assert_value(s, "/d/a", "moving");
	/* An exchange gives each directory as many entries as it had. */
	put_str(s, "/e/y", "y");
	ok(kt_rename(s, "/e/y", "/d/b", KT_RENAME_EXCHANGE));
	assert_value(s, "/d/b", "y");
	assert_value(s, "/e/y", "v");
	/* The subtree moves once there is room, whole. */
	ok(kt_delete(s, "/d/e", 0));
	ok(kt_rename(s, "/e/sub", "/d/sub", 0));
	assert_value(s, "/d/sub/c/d", "3");
	assert_absent(s, "/e/sub");
	ok(kt_rename(s, "/d/sub", "/e/sub", 0));
	put_str(s, "/d/e", "v");
	/* Out of the full directory, then back into it. */
	ok(kt_rename(s, "/d/c", "/e/c", 0));
	ok(kt_link(s, "/e/y", "/d/y"));
	kt_assert_rejected(s, kt_rename(s, "/e/c", "/d/c", 0), KT_EDIRFULL,
			   "'/d'");
	ok(kt_delete(s, "/d/y", 0));
	ok(kt_rename(s, "/e/c", "/d/c", 0));
}

static void test_dirmax__the_root_counts_too(void **state)
{
	kt_store *s = store_of(state);
	char p[16];
	int i;

	for (i = 0; i < MAX; i++) {
		snprintf(p, sizeof(p), "/%c", 'a' + i);
		put_str(s, p, "v");
	}
	kt_assert_rejected(s, kt_put(s, "/f", "v", 1, NULL), KT_EDIRFULL,
			   "directory '/'");
	/* Below the root's entries there is room. */
	put_str(s, "/a/x", "v");
}

static void test_dirmax__a_bad_limit_is_refused_at_open(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *other = NULL;
	const char *bad[] = {"lots", "-1", "5x", "4294967296"};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("KEYTREE_DIR_MAX", bad[i], 1);
		expect_rc(kt_open(&other, f->path, NULL), KT_EINVAL);
		assert_null(other);
		assert_non_null(strstr(kt_errmsg(), "KEYTREE_DIR_MAX"));
		assert_non_null(strstr(kt_errmsg(), bad[i]));
	}
	/* 0: no limit. */
	setenv("KEYTREE_DIR_MAX", "0", 1);
	kt_test_reopen(f);
	fill(f->store);
	put_str(f->store, "/d/f", "v");
	put_str(f->store, "/d/g", "v");
	setenv("KEYTREE_DIR_MAX", "5", 1);
	/* Above the limit already: nothing more goes in, entries go out. */
	kt_test_reopen(f);
	kt_assert_rejected(f->store, kt_put(f->store, "/d/h", "v", 1, NULL),
			   KT_EDIRFULL, "already holds 7 entries");
	/* A rename inside it adds no entry, nor does one from elsewhere
	 * onto an existing name. */
	ok(kt_rename(f->store, "/d/a", "/d/z", 0));
	ok(kt_rename(f->store, "/d/z", "/d/b", 0));
	put_str(f->store, "/e/x", "from e");
	ok(kt_rename(f->store, "/e/x", "/d/c", 0));
	assert_value(f->store, "/d/c", "from e");
	kt_assert_rejected(f->store, kt_rename(f->store, "/e", "/d/e2", 0),
			   KT_EDIRFULL, "already holds 6 entries");
	ok(kt_delete(f->store, "/d/g", 0));
	ok(kt_delete(f->store, "/d/f", 0));
	ok(kt_delete(f->store, "/d/e", 0));
	put_str(f->store, "/d/h", "v");
}

/* An item unlinked while in use (kt_orphan) frees its place; linking it
 * back into the full directory is refused. */
static void test_dirmax__orphans(void **state)
{
	kt_store *s = store_of(state);
	uint64_t id = 0;

	fill(s);
	ok(kt_orphan_detach(&id, s, "/d/a"));
	put_str(s, "/d/f", "v");
	kt_assert_rejected(s, kt_orphan_link(s, id, "/d/a"), KT_EDIRFULL,
			   "'/d'");
	ok(kt_orphan_link(s, id, "/e/a"));
	assert_value(s, "/e/a", "v");
}

/* A RADOS tree made before stores counted their entries: opening it
 * changes nothing (a client of an older library may still be using it);
 * kt_repair makes it count, quietly, and the limit holds from then on. */
static void test_dirmax__tree_from_before_counts_after_repair(void **st)
{
	kt_test_fixture *f = *st;
	kt_check_options co = KT_CHECK_OPTIONS_INIT;
	size_t n = 99;

	if (!kt_test_on_rados()) {
		fprintf(stderr, "skipped on LevelDB: a directory store made "
			"before counted directories keeps not counting "
			"(test_format covers a directory without its count)"
			"\n");
		skip();
	}
	/* Remake the tree as a library before counts made it. */
	kt_close(f->store);
	f->store = NULL;
	ok(kt_destroy(f->path, NULL));
	kt__test_counted = 0;
	{
		kt_options o = KT_OPTIONS_INIT;
		o.create_if_missing = 1;
		unsetenv("KEYTREE_DIR_MAX");
		ok(kt_open(&f->store, f->path, &o));
		kt__test_counted = 1;
	}
	fill(f->store);
	put_str(f->store, "/d/f", "six entries, no limit yet");
	kt_close(f->store);
	f->store = NULL;
	setenv("KEYTREE_DIR_MAX", "5", 1);
	ok(kt_open(&f->store, f->path, NULL));
	ok(kt_check(&n, f->store, &co));
	assert_int_equal(n, 0);
	/* Not counted yet, so no limit. */
	put_str(f->store, "/d/g", "seven");
	n = 99;
	ok(kt_repair(&n, f->store, NULL));
	assert_int_equal(n, 0);
	kt_assert_rejected(f->store, kt_put(f->store, "/d/h", "v", 1, NULL),
			   KT_EDIRFULL, "already holds 7 entries");
	ok(kt_delete(f->store, "/d/g", 0));
	ok(kt_delete(f->store, "/d/f", 0));
	ok(kt_delete(f->store, "/d/e", 0));
	put_str(f->store, "/d/h", "v");
	kt_assert_rejected(f->store, kt_put(f->store, "/d/h2", "v", 1, NULL),
			   KT_EDIRFULL, "already holds 5 entries");
	/* Another handle reads the flag the repair set. */
	kt_test_reopen(f);
	kt_assert_rejected(f->store, kt_put(f->store, "/d/h2", "v", 1, NULL),
			   KT_EDIRFULL, "already holds 5 entries");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_dirmax__create_past_the_limit_refused),
		T(test_dirmax__changes_that_add_nothing_still_work),
		T(test_dirmax__a_place_freed_is_a_place_to_use),
		T(test_dirmax__rename_and_link_into_a_full_directory),
		T(test_dirmax__the_root_counts_too),
		T(test_dirmax__a_bad_limit_is_refused_at_open),
		T(test_dirmax__orphans),
		T(test_dirmax__tree_from_before_counts_after_repair),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
