/*
 * test_link.c - symbolic links: kt_symlink stores the target verbatim,
 * kt_readlink returns it as stored, and path resolution follows links in
 * every component (relative targets against the link's own parent, ".." at
 * the root staying at the root, at most KT_LINK_HOPS_MAX links), while the
 * no-follow calls (kt_lstat, kt_readlink, kt_delete, kt_rename) act on the
 * link itself.
 *
 * Where keytree.h does not say how a target is resolved, the tests expect
 * what POSIX path resolution does (noted at each such test).
 */
#include "kt_test.h"
#include "kt_helpers.h"

/* Needle for kt_assert_rejected when the message's wording is free. */
#define ANY_MSG ""

static uint64_t id_of(kt_store *s, const char *path)
{
	kt_statbuf st;
	int rc = kt_lstat(&st, s, path);

	if (rc != 0)
		fail_msg("lstat %s: %d (%s)", path, rc, kt_errmsg());
	return st.id;
}

/* Assert that the link at @p path has exactly @p want as its target. */
static void assert_target(kt_store *s, const char *path, const char *want)
{
	char *t = NULL;
	size_t len = 0;
	int rc = kt_readlink(&t, &len, s, path);

	if (rc != 0)
		fail_msg("readlink %s: %d (%s)", path, rc, kt_errmsg());
	assert_non_null(t);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(t, want, len);
	assert_int_equal(t[len], '\0');
	kt_free(t);
}

static void test_link__target_stored_verbatim(void **state)
{
	kt_store *s = store_of(state);
	static const char *const targets[] = {
		"/abs/olute",     "relative",      "rel/a/b",
		"../up/x",        "../../..",      "./here",
		".",              "..",            "a//b",
		"//double",       "/trailing/",    "/outside/nonexistent/q",
		"a/./b/../c",     "\xc3\xa9t\xc3\xa9",
	};
	char path[64];
	size_t i;

	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		kt_statbuf st;

		snprintf(path, sizeof(path), "/l%zu", i);
		ok(kt_symlink(s, path, targets[i], NULL));
		assert_target(s, path, targets[i]);
		ok(kt_lstat(&st, s, path));
		assert_int_equal(st.kind, KT_KIND_LINK);
		assert_int_equal(st.size, strlen(targets[i]));
	}
	/* Still verbatim after the store is closed and opened again. */
	kt_test_reopen(*state);
	s = store_of(state);
	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		snprintf(path, sizeof(path), "/l%zu", i);
		assert_target(s, path, targets[i]);
	}
}

static void test_link__readlink_len_may_be_null(void **state)
{
	kt_store *s = store_of(state);
	char *t = NULL;

	ok(kt_symlink(s, "/l", "/some/where", NULL));
	ok(kt_readlink(&t, NULL, s, "/l"));
	assert_string_equal(t, "/some/where");
	kt_free(t);
}

static void test_link__readlink_of_non_link_is_einval(void **state)
{
	kt_store *s = store_of(state);
	char *t = (char *)"unset";
	size_t len = 99;

	put_str(s, "/item", "v");
	ok(kt_mkdir(s, "/dir", NULL));
	expect_rc(kt_readlink(&t, &len, s, "/item"), KT_EINVAL);
	assert_true(kt_errmsg()[0] != '\0');
	assert_null(t);
	assert_int_equal(len, 0);
	expect_rc(kt_readlink(&t, &len, s, "/dir"), KT_EINVAL);
	expect_rc(kt_readlink(&t, &len, s, "/"), KT_EINVAL);
	expect_rc(kt_readlink(&t, &len, s, "/missing"), KT_ENOTFOUND);
}

static void test_link__readlink_does_not_follow_last(void **state)
{
	kt_store *s = store_of(state);

	ok(kt_symlink(s, "/b", "/c", NULL));
	ok(kt_symlink(s, "/a", "/b", NULL));
	/* readlink of /a is /a's own target, not /b's. */
	assert_target(s, "/a", "/b");
}

static void test_link__intermediate_component_followed(void **state)
{
	kt_store *s = store_of(state);

	ok(kt_mkdir(s, "/d", NULL));
	put_str(s, "/d/x", "dx");
	ok(kt_symlink(s, "/l", "/d", NULL));
	assert_value(s, "/l/x", "dx");

	/* A write through the link lands in the target directory. */
	put_str(s, "/l/y", "dy");
	assert_value(s, "/d/y", "dy");
	assert_int_equal(id_of(s, "/d/y"), id_of(s, "/l/y"));
	/* The link stays a link: nothing was made under it. */
	assert_target(s, "/l", "/d");
}

static void test_link__link_deep_in_path_followed(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/p/q/r/s/v", "deep");
	ok(kt_mkdir(s, "/x", NULL));
	ok(kt_symlink(s, "/x/toq", "/p/q", NULL));
	assert_value(s, "/x/toq/r/s/v", "deep");
	ok(kt_symlink(s, "/p/q/r/tos", "/p/q/r/s", NULL));
	assert_value(s, "/x/toq/r/tos/v", "deep");
}

static void test_link__last_component_followed_by_get_and_put(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf st;

	put_str(s, "/t", "old");
	ok(kt_symlink(s, "/l", "/t", NULL));
	assert_value(s, "/l", "old");
	put_str(s, "/l", "new");
	assert_value(s, "/t", "new");
	assert_target(s, "/l", "/t");
	ok(kt_stat(&st, s, "/l"));
	assert_int_equal(st.kind, KT_KIND_ITEM);
	assert_int_equal(st.id, id_of(s, "/t"));
}

static void test_link__relative_target_against_link_parent(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/v", "root-v");
	put_str(s, "/q/v", "root-q-v");
	put_str(s, "/p/v", "p-v");
	put_str(s, "/p/q/v", "p-q-v");

	ok(kt_symlink(s, "/p/rel", "q/v", NULL));
	assert_value(s, "/p/rel", "p-q-v");
	ok(kt_symlink(s, "/p/q/up", "../v", NULL));
	assert_value(s, "/p/q/up", "p-v");
	ok(kt_symlink(s, "/p/q/self", "v", NULL));
	assert_value(s, "/p/q/self", "p-q-v");
	ok(kt_symlink(s, "/top", "q/v", NULL));
	assert_value(s, "/top", "root-q-v");
	/* As a directory in the middle of a path, too. */
	ok(kt_symlink(s, "/p/toq", "q", NULL));
	assert_value(s, "/p/toq/v", "p-q-v");
}

/* POSIX resolves a relative target against the directory that holds the
 * link, not against the path spelled to reach it: /alias/sib with
 * /alias -> /p/q and /p/q/sib -> "../v" is /p/v, not /v. */
static void test_link__relative_target_uses_physical_parent(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/v", "root-v");
	put_str(s, "/p/v", "p-v");
	ok(kt_mkdir(s, "/p/q", NULL));
	ok(kt_symlink(s, "/alias", "/p/q", NULL));
	ok(kt_symlink(s, "/p/q/sib", "../v", NULL));
	assert_value(s, "/alias/sib", "p-v");
}

static void test_link__dotdot_at_root_stays_at_root(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/d/x", "dx");
	ok(kt_symlink(s, "/up", "../../../d", NULL));
	assert_value(s, "/up/x", "dx");
	ok(kt_symlink(s, "/absup", "/../../d/x", NULL));
	assert_value(s, "/absup", "dx");
	ok(kt_mkdir(s, "/p", NULL));
	ok(kt_mkdir(s, "/p/q", NULL));
	ok(kt_symlink(s, "/p/q/far", "../../../../../d/x", NULL));
	assert_value(s, "/p/q/far", "dx");
	/* A link to ".." of the root is the root itself. */
	ok(kt_symlink(s, "/root", "..", NULL));
	assert_value(s, "/root/d/x", "dx");
	assert_value(s, "/root/root/root/d/x", "dx");
}

/* keytree.h only says targets are stored verbatim; resolution of "." and
 * of repeated slashes is taken from POSIX ("." is the directory itself,
 * "//" counts as one "/"). */
static void test_link__dot_and_double_slash_in_target(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/d/x", "dx");
	ok(kt_symlink(s, "/dot", "./d/./x", NULL));
	assert_value(s, "/dot", "dx");
	ok(kt_symlink(s, "/dbl", "/d//x", NULL));
	assert_value(s, "/dbl", "dx");
	ok(kt_symlink(s, "/reldbl", "d//x", NULL));
	assert_value(s, "/reldbl", "dx");
	ok(kt_symlink(s, "/mix", "d/../d/./x", NULL));
	assert_value(s, "/mix", "dx");
}

static void test_link__chain(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/d/x", "dx");
	ok(kt_symlink(s, "/c3", "/d", NULL));
	ok(kt_symlink(s, "/c2", "c3", NULL));
	ok(kt_symlink(s, "/c1", "/c2", NULL));
	assert_value(s, "/c1/x", "dx");
	ok(kt_symlink(s, "/d/lx", "x", NULL));
	ok(kt_symlink(s, "/lx", "/c1/lx", NULL));
	assert_value(s, "/lx", "dx");
}

static void test_link__cycle_is_eloop(void **state)
{
	kt_store *s = store_of(state);
	void *v = NULL;
	size_t len = 0;
	kt_statbuf st;

	ok(kt_symlink(s, "/a", "/b", NULL));
	ok(kt_symlink(s, "/b", "a", NULL));
	expect_rc(kt_get(&v, &len, s, "/a"), KT_ELOOP);
	assert_true(kt_errmsg()[0] != '\0');
	assert_null(v);
	expect_rc(kt_stat(&st, s, "/b"), KT_ELOOP);
	expect_rc(kt_get(&v, &len, s, "/a/x"), KT_ELOOP);
	/* The links themselves are fine. */
	ok(kt_lstat(&st, s, "/a"));
	assert_int_equal(st.kind, KT_KIND_LINK);
	kt_assert_rejected(s, kt_put(s, "/a", "v", 1, NULL), KT_ELOOP, "/a");
	kt_assert_rejected(s, kt_put(s, "/b/x", "v", 1, NULL), KT_ELOOP,
			   "/b");
}

static void test_link__self_link_is_eloop(void **state)
{
	kt_store *s = store_of(state);
	void *v = NULL;
	size_t len = 0;
	kt_statbuf st;

	ok(kt_symlink(s, "/self", "/self", NULL));
	expect_rc(kt_get(&v, &len, s, "/self"), KT_ELOOP);
	expect_rc(kt_stat(&st, s, "/self"), KT_ELOOP);
	ok(kt_mkdir(s, "/d", NULL));
	ok(kt_symlink(s, "/d/me", "me", NULL));
	expect_rc(kt_get(&v, &len, s, "/d/me"), KT_ELOOP);
	expect_rc(kt_get(&v, &len, s, "/d/me/x"), KT_ELOOP);
	ok(kt_symlink(s, "/d/dotme", "./dotme", NULL));
	expect_rc(kt_stat(&st, s, "/d/dotme"), KT_ELOOP);
}

/* A chain /h1 -> /h2 -> ... -> /hN -> /end, so resolving /h1 follows N
 * links. */
static void make_chain(kt_store *s, int n)
{
	char link[32], target[32];
	int i;

	put_str(s, "/end", "end");
	for (i = 1; i <= n; i++) {
		snprintf(link, sizeof(link), "/h%d", i);
		if (i == n)
			snprintf(target, sizeof(target), "/end");
		else
			snprintf(target, sizeof(target), "/h%d", i + 1);
		ok(kt_symlink(s, link, target, NULL));
	}
}

static void test_link__forty_hops_resolve(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf st;

	make_chain(s, KT_LINK_HOPS_MAX);
	assert_value(s, "/h1", "end");
	ok(kt_stat(&st, s, "/h1"));
	assert_int_equal(st.kind, KT_KIND_ITEM);
}

static void test_link__forty_one_hops_is_eloop(void **state)
{
	kt_store *s = store_of(state);
	void *v = NULL;
	size_t len = 0;
	kt_statbuf st;

	make_chain(s, KT_LINK_HOPS_MAX + 1);
	expect_rc(kt_get(&v, &len, s, "/h1"), KT_ELOOP);
	expect_rc(kt_stat(&st, s, "/h1"), KT_ELOOP);
	/* One hop shorter from the second link is fine. */
	assert_value(s, "/h2", "end");
}

static void test_link__dangling_is_enotfound_naming_target(void **state)
{
	kt_store *s = store_of(state);
	void *v = NULL;
	size_t len = 0;
	kt_statbuf st;

	ok(kt_symlink(s, "/dl", "/nowhere/thing", NULL));
	expect_rc(kt_get(&v, &len, s, "/dl"), KT_ENOTFOUND);
	assert_null(v);
	if (strstr(kt_errmsg(), "nowhere") == NULL)
		fail_msg("message '%s' does not name the target", kt_errmsg());
	expect_rc(kt_stat(&st, s, "/dl"), KT_ENOTFOUND);
	if (strstr(kt_errmsg(), "nowhere") == NULL)
		fail_msg("message '%s' does not name the target", kt_errmsg());
	expect_rc(kt_get(&v, &len, s, "/dl/x"), KT_ENOTFOUND);
	/* The link itself exists. */
	ok(kt_lstat(&st, s, "/dl"));
	assert_int_equal(st.kind, KT_KIND_LINK);
	assert_int_equal(st.size, strlen("/nowhere/thing"));
}

/* keytree.h: put through a dangling link fails with KT_ENOTFOUND (unlike
 * POSIX open(O_CREAT), which would create the target). */
static void test_link__put_through_dangling_is_enotfound(void **state)
{
	kt_store *s = store_of(state);

	ok(kt_symlink(s, "/dl", "/nowhere", NULL));
	kt_assert_rejected(s, kt_put(s, "/dl", "v", 1, NULL), KT_ENOTFOUND,
			   "nowhere");
	kt_assert_rejected(s, kt_put(s, "/dl/x", "v", 1, NULL), KT_ENOTFOUND,
			   "nowhere");
}

static void test_link__lstat_reports_link_stat_target(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf ls, st;

	ok(kt_mkdir(s, "/d", NULL));
	ok(kt_symlink(s, "/l", "/d", NULL));
	ok(kt_lstat(&ls, s, "/l"));
	ok(kt_stat(&st, s, "/l"));
	assert_int_equal(ls.kind, KT_KIND_LINK);
	assert_int_equal(ls.size, 2);
	assert_int_equal(st.kind, KT_KIND_DIR);
	assert_int_equal(st.id, id_of(s, "/d"));
	assert_true(ls.id != st.id);
}

static void test_link__delete_removes_link_not_target(void **state)
{
	kt_store *s = store_of(state);
	uint64_t did = 0;

	put_str(s, "/d/x", "dx");
	did = id_of(s, "/d");
	ok(kt_symlink(s, "/l", "/d", NULL));
	ok(kt_delete(s, "/l", 0));
	assert_absent(s, "/l");
	assert_int_equal(id_of(s, "/d"), did);
	assert_value(s, "/d/x", "dx");

	ok(kt_symlink(s, "/li", "/d/x", NULL));
	ok(kt_delete(s, "/li", 0));
	assert_absent(s, "/li");
	assert_value(s, "/d/x", "dx");
}

static void test_link__rename_moves_link_itself(void **state)
{
	kt_store *s = store_of(state);
	uint64_t lid = 0, did = 0;

	put_str(s, "/d/x", "dx");
	did = id_of(s, "/d");
	ok(kt_symlink(s, "/l", "/d", NULL));
	lid = id_of(s, "/l");
	ok(kt_rename(s, "/l", "/m", 0));
	assert_absent(s, "/l");
	assert_target(s, "/m", "/d");
	assert_int_equal(id_of(s, "/m"), lid);
	assert_int_equal(id_of(s, "/d"), did);
	assert_value(s, "/d/x", "dx");
	assert_value(s, "/m/x", "dx");
}

static void test_link__symlink_over_existing_is_eexists(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/item", "v");
	ok(kt_mkdir(s, "/dir", NULL));
	ok(kt_symlink(s, "/link", "/item", NULL));
	ok(kt_symlink(s, "/dangling", "/nowhere", NULL));
	kt_assert_rejected(s, kt_symlink(s, "/item", "/x", NULL), KT_EEXISTS,
			   "/item");
	kt_assert_rejected(s, kt_symlink(s, "/dir", "/x", NULL), KT_EEXISTS,
			   "/dir");
	kt_assert_rejected(s, kt_symlink(s, "/link", "/x", NULL), KT_EEXISTS,
			   "/link");
	kt_assert_rejected(s, kt_symlink(s, "/dangling", "/x", NULL),
			   KT_EEXISTS, "/dangling");
	/* The root exists too (POSIX symlink(2) on "/" gives EEXIST). */
	kt_assert_rejected(s, kt_symlink(s, "/", "/x", NULL), KT_EEXISTS,
			   ANY_MSG);
}

/* A link makes its missing ancestors, as put does (dynamotree's README
 * starts on an empty store with a link in /AccountsByEmail), with or
 * without KT_CREATE_PARENTS, in the batch form too; an ancestor that is an
 * item becomes an item and directory. */
static void test_link__symlink_makes_missing_parents(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_batch *b = NULL;
	kt_statbuf st;

	ok(kt_symlink(s, "/AccountsByEmail/alice@example.com",
		      "/Accounts/12345", NULL));
	assert_target(s, "/AccountsByEmail/alice@example.com",
		      "/Accounts/12345");
	ok(kt_lstat(&st, s, "/AccountsByEmail"));
	assert_int_equal(st.kind, KT_KIND_DIR);
	o.flags = KT_CREATE_PARENTS;
	ok(kt_symlink(s, "/no/deeper/l", "/x", &o));
	assert_target(s, "/no/deeper/l", "/x");
	ok(kt_put(s, "/item", "v", 1, NULL));
	ok(kt_batch_new(&b, s));
	ok(kt_batch_symlink(b, "/item/under/l", "/x", NULL));
	ok(kt_batch_commit(b));
	kt_batch_free(b);
	assert_target(s, "/item/under/l", "/x");
	ok(kt_lstat(&st, s, "/item"));
	assert_int_equal(st.kind, KT_KIND_ITEM | KT_KIND_DIR);
	/* A link on the way is followed; a special file is no directory. */
	ok(kt_mknod(s, "/fifo", KT_TYPE_FIFO, 0, NULL));
	kt_assert_rejected(s, kt_symlink(s, "/fifo/l", "/x", NULL),
			   KT_ENOTDIR, "/fifo");
}

static void test_link__empty_target_is_einval(void **state)
{
	kt_store *s = store_of(state);

	kt_assert_rejected(s, kt_symlink(s, "/l", "", NULL), KT_EINVAL,
			   ANY_MSG);
	assert_absent(s, "/l");
}

static void test_link__target_length_limit(void **state)
{
	kt_store *s = store_of(state);
	char *t = malloc(KT_TARGET_MAX + 2);
	size_t i;

	assert_non_null(t);
	/* "/aaa.../aaa..." in components of 100 bytes, KT_TARGET_MAX long
	 * (what readlink(2) can return). */
	for (i = 0; i < KT_TARGET_MAX + 1; i++)
		t[i] = (i % 101 == 0) ? '/' : 'a';
	t[KT_TARGET_MAX] = '\0';
	ok(kt_symlink(s, "/max", t, NULL));
	assert_target(s, "/max", t);

	t[KT_TARGET_MAX] = 'a';
	t[KT_TARGET_MAX + 1] = '\0';
	kt_assert_rejected(s, kt_symlink(s, "/over", t, NULL),
			   KT_ENAMETOOLONG, ANY_MSG);
	assert_absent(s, "/over");
	free(t);
}

static void test_link__link_to_item_as_dir_is_enotdir(void **state)
{
	kt_store *s = store_of(state);
	void *v = NULL;
	size_t len = 0;
	kt_statbuf st;
	kt_iter *it = NULL;

	put_str(s, "/f", "item");
	ok(kt_symlink(s, "/lf", "/f", NULL));
	expect_rc(kt_get(&v, &len, s, "/lf/x"), KT_ENOTDIR);
	expect_rc(kt_stat(&st, s, "/lf/x"), KT_ENOTDIR);
	expect_rc(kt_iter_new(&it, s, "/lf", NULL), KT_ENOTDIR);
	assert_null(it);
	kt_assert_rejected(s, kt_put(s, "/lf/x", "v", 1, NULL), KT_ENOTDIR,
			   "/lf");
	kt_assert_rejected(s, kt_mkdir(s, "/lf/x", NULL), KT_ENOTDIR, "/lf");
	/* The item did not become a directory. */
	ok(kt_stat(&st, s, "/f"));
	assert_int_equal(st.kind, KT_KIND_ITEM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup,         \
						kt_test_teardown)
		T(test_link__target_stored_verbatim),
		T(test_link__readlink_len_may_be_null),
		T(test_link__readlink_of_non_link_is_einval),
		T(test_link__readlink_does_not_follow_last),
		T(test_link__intermediate_component_followed),
		T(test_link__link_deep_in_path_followed),
		T(test_link__last_component_followed_by_get_and_put),
		T(test_link__relative_target_against_link_parent),
		T(test_link__relative_target_uses_physical_parent),
		T(test_link__dotdot_at_root_stays_at_root),
		T(test_link__dot_and_double_slash_in_target),
		T(test_link__chain),
		T(test_link__cycle_is_eloop),
		T(test_link__self_link_is_eloop),
		T(test_link__forty_hops_resolve),
		T(test_link__forty_one_hops_is_eloop),
		T(test_link__dangling_is_enotfound_naming_target),
		T(test_link__put_through_dangling_is_enotfound),
		T(test_link__lstat_reports_link_stat_target),
		T(test_link__delete_removes_link_not_target),
		T(test_link__rename_moves_link_itself),
		T(test_link__symlink_over_existing_is_eexists),
		T(test_link__symlink_makes_missing_parents),
		T(test_link__empty_target_is_einval),
		T(test_link__target_length_limit),
		T(test_link__link_to_item_as_dir_is_enotdir),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
