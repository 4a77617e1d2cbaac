/*
 * test_id.c - finding a node by its id: kt_id_path, kt_id_lstat and
 * kt_id_read follow the node through renames and exchanges, fail for
 * deleted and detached nodes, and survive a reopen.
 */
#include "kt_test.h"
#include "kt_helpers.h"

/* The path kt_id_path gives for @p id must be @p want. */
static void assert_id_at(kt_store *s, uint64_t id, const char *want)
{
	char *p = NULL;
	size_t len = 0;

	ok(kt_id_path(&p, &len, s, id));
	assert_non_null(p);
	assert_string_equal(p, want);
	assert_int_equal(len, strlen(want));
	kt_free(p);
}

static void test_id__root_and_new_nodes(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_statbuf st;
	char *p = NULL;
	size_t len = 0;

	co.flags = KT_CREATE_PARENTS;
	ok(kt_put(s, "/a/b/c", "v", 1, &co));
	ok(kt_symlink(s, "/l", "/a/b/c", NULL));
	assert_id_at(s, lstat_of(s, "/").id, "/");
	assert_id_at(s, lstat_of(s, "/a").id, "/a");
	assert_id_at(s, lstat_of(s, "/a/b/c").id, "/a/b/c");
	/* A link is found as itself, not as its target. */
	assert_id_at(s, lstat_of(s, "/l").id, "/l");

	ok(kt_id_lstat(&st, &p, &len, s, lstat_of(s, "/a/b/c").id));
	assert_string_equal(p, "/a/b/c");
	assert_int_equal(len, 6);
	assert_int_equal(st.kind, KT_KIND_ITEM);
	assert_int_equal(st.size, 1);
	assert_int_equal(st.version, lstat_of(s, "/a/b/c").version);
	kt_free(p);
	ok(kt_id_lstat(&st, NULL, NULL, s, lstat_of(s, "/l").id));
	assert_int_equal(st.kind, KT_KIND_LINK);
}

static void test_id__follows_rename_and_exchange(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *s = f->store;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	uint64_t dir, leaf, other;

	co.flags = KT_CREATE_PARENTS;
	ok(kt_put(s, "/x/y/leaf", "1", 1, &co));
	ok(kt_put(s, "/other", "2", 1, NULL));
	dir = lstat_of(s, "/x").id;
	leaf = lstat_of(s, "/x/y/leaf").id;
	other = lstat_of(s, "/other").id;

	ok(kt_rename(s, "/x", "/moved", 0));
	assert_id_at(s, dir, "/moved");
	assert_id_at(s, leaf, "/moved/y/leaf");

	ok(kt_rename(s, "/moved/y/leaf", "/other", KT_RENAME_EXCHANGE));
	assert_id_at(s, leaf, "/other");
	assert_id_at(s, other, "/moved/y/leaf");

	/* Replacing a node ends its id. */
	ok(kt_rename(s, "/moved/y/leaf", "/other", 0));
	assert_id_at(s, other, "/other");
	kt_assert_rejected(s, kt_id_path(&(char *){NULL}, NULL, s, leaf),
			   KT_ENOTFOUND, "no node has id");

	kt_test_reopen(f);
	assert_id_at(f->store, dir, "/moved");
	assert_id_at(f->store, other, "/other");
}

static void test_id__gone_after_delete_and_detach(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	char want[64], *p = (char *)1;
	uint64_t d, sub, file, orphan = 0;

	co.flags = KT_CREATE_PARENTS;
	ok(kt_put(s, "/d/sub/x", "1", 1, &co));
	ok(kt_put(s, "/file", "2", 1, NULL));
	d = lstat_of(s, "/d").id;
	sub = lstat_of(s, "/d/sub").id;
	file = lstat_of(s, "/file").id;

	ok(kt_delete(s, "/d", KT_DELETE_RECURSIVE));
	snprintf(want, sizeof(want), "no node has id %llu",
		 (unsigned long long)sub);
	kt_assert_rejected(s, kt_id_path(&p, NULL, s, sub), KT_ENOTFOUND,
			   want);
	/* The id is what the caller gave: the message names it, not the
	 * call (keytree path prints it as it is). */
	assert_string_equal(kt_errmsg(), want);
	assert_null(p);
	expect_rc(kt_id_path(&p, NULL, s, d), KT_ENOTFOUND);

	ok(kt_orphan_detach(&orphan, s, "/file"));
	assert_int_equal(orphan, file);
	expect_rc(kt_id_path(&p, NULL, s, file), KT_ENOTFOUND);
	ok(kt_orphan_release(s, orphan));

	/* An item+directory that loses its value keeps its id. */
	ok(kt_mkdir(s, "/both", NULL));
	ok(kt_mkdir(s, "/both/child", NULL));
	ok(kt_put(s, "/both", "v", 1, NULL));
	assert_int_equal(lstat_of(s, "/both").kind,
			 KT_KIND_ITEM | KT_KIND_DIR);
	d = lstat_of(s, "/both").id;
	ok(kt_delete(s, "/both", KT_DELETE_ITEM));
	assert_id_at(s, d, "/both");
}

/* A lookup by id tries the partition it found last for that id (api.c,
 * "The id cache"): what it finds there must be checked.  Here the place
 * an id was last found holds nothing, another node, or the same node
 * under a second path that its id row does not name; each answer must be
 * the one a fresh handle (no cache) gives. */
static void test_id__last_place_checked(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *s = f->store;
	uint64_t a, b, x;
	char *p = NULL;

	ok(kt_put(s, "/a", "1", 1, NULL));
	ok(kt_put(s, "/b", "2", 1, NULL));
	a = lstat_of(s, "/a").id;
	b = lstat_of(s, "/b").id;
	assert_id_at(s, a, "/a");
	assert_id_at(s, b, "/b");
	/* A's last place now holds B; B's holds nothing. */
	ok(kt_rename(s, "/a", "/c", 0));
	ok(kt_rename(s, "/b", "/a", 0));
	assert_id_at(s, a, "/c");
	assert_id_at(s, b, "/a");
	assert_int_equal(lstat_of(s, "/c").id, a);
	/* Gone: its last place is empty. */
	ok(kt_delete(s, "/c", 0));
	expect_rc(kt_id_path(&p, NULL, s, a), KT_ENOTFOUND);
	assert_null(p);

	/* X last found at /p; then /p is unlinked and linked again as the
	 * second path of X, whose id row names /q. */
	ok(kt_put(s, "/p", "x", 1, NULL));
	x = lstat_of(s, "/p").id;
	assert_id_at(s, x, "/p");
	ok(kt_link(s, "/p", "/q"));
	ok(kt_delete(s, "/p", 0));
	ok(kt_link(s, "/q", "/p"));
	assert_int_equal(lstat_of(s, "/p").id, x);
	ok(kt_id_path(&p, NULL, s, x));
	assert_string_equal(p, "/q");
	kt_test_reopen(f);
	assert_id_at(f->store, x, p);
	kt_free(p);
}

/* Changes by id (the kt_*_at and kt_id_* calls) read the node row at the
 * id's last place first too, inside their transaction: a directory moved
 * away with another taking its place, then moved again leaving its last
 * place empty; a file given a second path, whose first path then holds
 * another node.  Each change lands on the node of the id. */
static void test_id__last_place_checked_by_changes(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *s = f->store;
	kt_make_args m;
	uint64_t a, a2, x;

	memset(&m, 0, sizeof(m));
	m.version = KT_MAKE_ARGS_VERSION;
	m.kind = KT_KIND_ITEM;
	m.data = "v";
	m.len = 1;
	ok(kt_mkdir(s, "/a", NULL));
	a = lstat_of(s, "/a").id;
	ok(kt_make_at(NULL, s, a, "x", &m));
	/* A's last place now holds A2. */
	ok(kt_rename(s, "/a", "/b", 0));
	ok(kt_mkdir(s, "/a", NULL));
	a2 = lstat_of(s, "/a").id;
	ok(kt_make_at(NULL, s, a, "y", &m));
	assert_value(s, "/b/y", "v");
	assert_absent(s, "/a/y");
	ok(kt_make_at(NULL, s, a2, "z", &m));
	assert_value(s, "/a/z", "v");
	/* A's last place (/b) now empty. */
	ok(kt_rename(s, "/b", "/c", 0));
	ok(kt_delete_at(s, a, "y", 0));
	assert_absent(s, "/c/y");
	assert_value(s, "/c/x", "v");
	ok(kt_rename_at(s, a, "x", a2, "x2", 0));
	assert_value(s, "/a/x2", "v");
	assert_absent(s, "/c/x");

	/* X last found at /p, then linked to /q, unlinked at /p, and /p
	 * made again as another node. */
	ok(kt_put(s, "/p", "1", 1, NULL));
	x = lstat_of(s, "/p").id;
	ok(kt_id_put(s, x, "2", 1, NULL));
	assert_value(s, "/p", "2");
	ok(kt_link(s, "/p", "/q"));
	ok(kt_delete(s, "/p", 0));
	put_str(s, "/p", "other");
	ok(kt_id_put(s, x, "3", 1, NULL));
	assert_value(s, "/q", "3");
	assert_value(s, "/p", "other");
	expect_rc(kt_make_at(NULL, s, x, "n", &m), KT_ENOTDIR);
	kt_test_reopen(f);
	ok(kt_delete_at(f->store, a2, "z", 0));
	assert_absent(f->store, "/a/z");
}

/* kt_id_read reads the node's value wherever the node has moved. */
static void test_id__read_by_id(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	unsigned char *big = malloc(50000), buf[16];
	size_t got = 0;
	uint64_t id, dir, ln;
	size_t i;

	assert_non_null(big);
	for (i = 0; i < 50000; i++)
		big[i] = (unsigned char)(i * 7);
	co.flags = KT_CREATE_PARENTS;
	ok(kt_put(s, "/d/big", big, 50000, &co));
	ok(kt_symlink(s, "/ln", "/d/big", NULL));
	id = lstat_of(s, "/d/big").id;
	dir = lstat_of(s, "/d").id;
	ln = lstat_of(s, "/ln").id;
	ok(kt_rename(s, "/d", "/e", 0));
	ok(kt_id_read(&got, s, id, buf, sizeof(buf), 40000));
	assert_int_equal(got, sizeof(buf));
	assert_memory_equal(buf, big + 40000, sizeof(buf));
	ok(kt_id_read(&got, s, id, buf, sizeof(buf), 49990));
	assert_int_equal(got, 10);
	kt_assert_rejected(s, kt_id_read(&got, s, dir, buf, 1, 0), KT_EISDIR,
			   "directory");
	kt_assert_rejected(s, kt_id_read(&got, s, ln, buf, 1, 0), KT_EINVAL,
			   "link");
	ok(kt_delete(s, "/e/big", 0));
	kt_assert_rejected(s, kt_id_read(&got, s, id, buf, 1, 0),
			   KT_ENOTFOUND, "no node has id");
	expect_rc(kt_id_read(NULL, s, id, buf, 1, 0), KT_EINVAL);
	free(big);
}

static void test_id__rejects(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf st;
	char *p = NULL;

	expect_rc(kt_id_path(NULL, NULL, s, 1), KT_EINVAL);
	expect_rc(kt_id_lstat(NULL, &p, NULL, s, 1), KT_EINVAL);
	expect_rc(kt_id_path(&p, NULL, NULL, 1), KT_EINVAL);
	expect_rc(kt_id_lstat(&st, NULL, NULL, NULL, 1), KT_EINVAL);
	expect_rc(kt_id_path(&p, NULL, s, 0), KT_ENOTFOUND);
	expect_rc(kt_id_path(&p, NULL, s, UINT64_MAX), KT_ENOTFOUND);
	assert_null(p);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, kt_test_setup, \
					      kt_test_teardown)
	const struct CMUnitTest tests[] = {
		T(test_id__root_and_new_nodes),
		T(test_id__follows_rename_and_exchange),
		T(test_id__gone_after_delete_and_detach),
		T(test_id__last_place_checked),
		T(test_id__last_place_checked_by_changes),
		T(test_id__read_by_id),
		T(test_id__rejects),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
