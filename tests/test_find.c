/*
 * test_find.c - kt_find_new: nodes whose path starts at a component
 * boundary with a prefix, whole subtrees with KT_FIND_SUBTREE, items only
 * with KT_FIND_ITEMS, full paths in the entries, parents before their
 * descendants, and links followed in the prefix's parent; finds read in
 * pages (kt_find_opts_new), resumed after a token.
 */
#include "kt_test.h"
#include "kt_helpers.h"

/* The paths found, in the order found. */
typedef struct found {
	size_t n;
	char **paths;
	unsigned int *kinds;
} found;

static void found_free(found *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		free(f->paths[i]);
	free(f->paths);
	free(f->kinds);
	memset(f, 0, sizeof(*f));
}

/*
 * Run kt_find_new(prefix, flags) into @p f, asserting what holds for every
 * entry: a full canonical path with a correct name_len, the kind and id
 * kt_lstat reports, and each parent that is found coming before its
 * descendants.
 */
static void find(found *f, kt_store *s, const char *prefix,
		 unsigned int flags)
{
	kt_iter *it = NULL;
	const kt_entry *e = NULL;
	size_t i;
	int rc = kt_find_new(&it, s, prefix, flags);

	if (rc != 0)
		fail_msg("kt_find_new %s: %d (%s)", prefix, rc, kt_errmsg());
	while ((rc = kt_iter_next(&e, it)) == 0) {
		kt_statbuf st;

		assert_int_equal(e->name_len, strlen(e->name));
		assert_true(e->name[0] == '/' && e->name_len > 1);
		st = lstat_of(s, e->name);
		assert_int_equal(e->kind, st.kind);
		assert_int_equal(e->id, st.id);
		f->paths = realloc(f->paths, (f->n + 1) * sizeof(*f->paths));
		f->kinds = realloc(f->kinds, (f->n + 1) * sizeof(*f->kinds));
		assert_non_null(f->paths);
		assert_non_null(f->kinds);
		f->paths[f->n] = strdup(e->name);
		assert_non_null(f->paths[f->n]);
		f->kinds[f->n] = e->kind;
		f->n++;
	}
	if (rc != KT_ITEROVER)
		fail_msg("kt_iter_next: %d (%s)", rc, kt_errmsg());
	kt_iter_free(it);

	/* A found ancestor comes before each found descendant. */
	for (i = 0; i < f->n; i++) {
		size_t j, li = strlen(f->paths[i]);

		for (j = 0; j < i; j++) {
			size_t lj = strlen(f->paths[j]);

			if (lj > li && strncmp(f->paths[j], f->paths[i], li)
			    == 0 && f->paths[j][li] == '/')
				fail_msg("'%s' came before its ancestor '%s'",
					 f->paths[j], f->paths[i]);
		}
	}
}

static int str_cmp_q(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Assert that @p f holds exactly the paths in @p want, in any order and
 * each once. */
static void assert_found(const found *f, const char *const *want, size_t n)
{
	char **got = malloc((f->n + 1) * sizeof(*got));
	const char **exp = malloc((n + 1) * sizeof(*exp));
	size_t i;

	assert_non_null(got);
	assert_non_null(exp);
	memcpy(got, f->paths, f->n * sizeof(*got));
	memcpy(exp, want, n * sizeof(*exp));
	qsort(got, f->n, sizeof(*got), str_cmp_q);
	qsort(exp, n, sizeof(*exp), str_cmp_q);
	for (i = 0; i < f->n || i < n; i++) {
		if (i >= f->n)
			fail_msg("'%s' not found", exp[i]);
		if (i >= n)
			fail_msg("'%s' found but not expected", got[i]);
		if (strcmp(got[i], exp[i]) != 0)
			fail_msg("found '%s' where '%s' was expected", got[i],
				 exp[i]);
	}
	free(got);
	free(exp);
}

static unsigned int kind_in(const found *f, const char *path)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (strcmp(f->paths[i], path) == 0)
			return f->kinds[i];
	fail_msg("'%s' was not found", path);
	return 0;
}

static void make_customers(kt_store *s)
{
	put_str(s, "/cust-1/ord-1", "v");
	put_str(s, "/cust-1/ord-2/li-9", "v");
	put_str(s, "/cust-1/ordinal", "v");
	put_str(s, "/cust-1/order", "v");
	put_str(s, "/cust-1/ord", "v");
	put_str(s, "/cust-1/ord/z", "v");
	put_str(s, "/cust-1/xord", "v");
	put_str(s, "/cust-1/or", "v");
	put_str(s, "/cust-1/Ord", "v");
	put_str(s, "/cust-2/ord-1", "v");
	put_str(s, "/cust-10/ord-1", "v");
}

static void test_find__prefix_at_component_boundary(void **state)
{
	kt_store *s = store_of(state);
	static const char *const want[] = {
		"/cust-1/ord",     "/cust-1/ord/z",   "/cust-1/ord-1",
		"/cust-1/ord-2",   "/cust-1/ord-2/li-9",
		"/cust-1/ordinal", "/cust-1/order",
	};
	found f = {0};

	make_customers(s);
	find(&f, s, "/cust-1/ord", 0);
	assert_found(&f, want, sizeof(want) / sizeof(want[0]));
	assert_int_equal(kind_in(&f, "/cust-1/ord-2"), KT_KIND_DIR);
	assert_int_equal(kind_in(&f, "/cust-1/ord"),
			 KT_KIND_ITEM | KT_KIND_DIR);
	found_free(&f);

	/* The same after the store is opened again. */
	kt_test_reopen(*state);
	s = store_of(state);
	find(&f, s, "/cust-1/ord", 0);
	assert_found(&f, want, sizeof(want) / sizeof(want[0]));
	found_free(&f);
}

/* A first-component prefix matches every top-level name starting with it:
 * "/cust-1" finds /cust-10 too. */
static void test_find__prefix_in_root(void **state)
{
	kt_store *s = store_of(state);
	static const char *const want[] = {
		"/cust-1",         "/cust-1/ord",     "/cust-1/ord/z",
		"/cust-1/ord-1",   "/cust-1/ord-2",   "/cust-1/ord-2/li-9",
		"/cust-1/ordinal", "/cust-1/order",   "/cust-1/xord",
		"/cust-1/or",      "/cust-1/Ord",     "/cust-10",
		"/cust-10/ord-1",
	};
	found f = {0};

	make_customers(s);
	put_str(s, "/cus", "v");
	put_str(s, "/dust-1", "v");
	find(&f, s, "/cust-1", 0);
	assert_found(&f, want, sizeof(want) / sizeof(want[0]));
	found_free(&f);
}

static void test_find__subtree_excludes_name_prefix_siblings(void **state)
{
	kt_store *s = store_of(state);
	static const char *const sub[] = {"/a", "/a/x", "/a/x/y", "/a/x2"};
	static const char *const pre[] = {"/a",    "/a/x",  "/a/x/y", "/a/x2",
					  "/ab",   "/ab/z", "/a-b",   "/a b"};
	found f = {0};

	put_str(s, "/a/x/y", "v");
	put_str(s, "/a/x2", "v");
	put_str(s, "/ab/z", "v");
	put_str(s, "/a-b", "v");
	put_str(s, "/a b", "v");
	put_str(s, "/b", "v");
	find(&f, s, "/a", KT_FIND_SUBTREE);
	assert_found(&f, sub, 4);
	assert_string_equal(f.paths[0], "/a");
	found_free(&f);
	find(&f, s, "/a", 0);
	assert_found(&f, pre, 8);
	found_free(&f);
}

static void test_find__subtree_deeper_node(void **state)
{
	kt_store *s = store_of(state);
	static const char *const want[] = {"/p/q", "/p/q/r", "/p/q/r/s"};
	static const char *const leaf[] = {"/p/q/r/s"};
	found f = {0};

	put_str(s, "/p/q/r/s", "v");
	put_str(s, "/p/qq/r", "v");
	put_str(s, "/p/q-/r", "v");
	put_str(s, "/p/z", "v");
	find(&f, s, "/p/q", KT_FIND_SUBTREE);
	assert_found(&f, want, 3);
	found_free(&f);
	/* A leaf's subtree is the leaf alone. */
	find(&f, s, "/p/q/r/s", KT_FIND_SUBTREE);
	assert_found(&f, leaf, 1);
	found_free(&f);
}

static void test_find__items_filter(void **state)
{
	kt_store *s = store_of(state);
	static const char *const items[] = {"/m/both", "/m/both/c", "/m/item"};
	static const char *const prefixed[] = {"/m/both", "/m/both/c",
					       "/m/item", "/mm"};
	static const char *const all[] = {"/m",      "/m/both", "/m/both/c",
					  "/m/item", "/m/dir",  "/m/link"};
	found f = {0};

	put_str(s, "/m/item", "v");
	ok(kt_mkdir(s, "/m/dir", NULL));
	put_str(s, "/m/both", "v");
	put_str(s, "/m/both/c", "v");
	ok(kt_symlink(s, "/m/link", "/m/item", NULL));

	find(&f, s, "/m", KT_FIND_SUBTREE | KT_FIND_ITEMS);
	assert_found(&f, items, 3);
	assert_int_equal(kind_in(&f, "/m/both"), KT_KIND_ITEM | KT_KIND_DIR);
	assert_int_equal(kind_in(&f, "/m/item"), KT_KIND_ITEM);
	found_free(&f);

	find(&f, s, "/m", KT_FIND_SUBTREE);
	assert_found(&f, all, 6);
	assert_int_equal(kind_in(&f, "/m/link"), KT_KIND_LINK);
	assert_int_equal(kind_in(&f, "/m/dir"), KT_KIND_DIR);
	found_free(&f);

	/* As a name prefix, without SUBTREE: /mm matches "/m" too. */
	put_str(s, "/mm", "v");
	ok(kt_mkdir(s, "/mdir", NULL));
	find(&f, s, "/m", KT_FIND_ITEMS);
	assert_found(&f, prefixed, 4);
	found_free(&f);
}

static void test_find__root_finds_all_but_root(void **state)
{
	kt_store *s = store_of(state);
	static const char *const want[] = {
		"/a",   "/a/b", "/a/b/c", "/d",   "/l",
		"/e",   "/e/f", "/\xc3\xa9", "/\xc3\xa9/x",
	};
	found f = {0};
	size_t i;

	/* An empty store has nothing to find. */
	find(&f, s, "/", 0);
	assert_int_equal(f.n, 0);
	found_free(&f);

	put_str(s, "/a/b/c", "v");
	ok(kt_mkdir(s, "/d", NULL));
	ok(kt_symlink(s, "/l", "/a", NULL));
	put_str(s, "/e", "v");
	put_str(s, "/e/f", "v");
	put_str(s, "/\xc3\xa9/x", "v");
	find(&f, s, "/", 0);
	assert_found(&f, want, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < f.n; i++)
		assert_string_not_equal(f.paths[i], "/");
	found_free(&f);
}

/* The parent-first rule with names that sort around the delimiter and
 * around '/' (0x2f): "a.b" (0x2e) and "a0" (0x30). */
static void test_find__parent_precedes_descendants(void **state)
{
	kt_store *s = store_of(state);
	found f = {0};

	put_str(s, "/a/z/y/x", "v");
	put_str(s, "/a.b/c", "v");
	put_str(s, "/a0/c", "v");
	put_str(s, "/a/\x01/q", "v");
	put_str(s, "/a/\xff/q", "v");
	put_str(s, "/a/\xc2\xa5/q", "v");
	put_str(s, "/a/\xc2\xa7/q", "v");
	/* find() fails the test if a descendant comes first. */
	find(&f, s, "/", 0);
	assert_int_equal(f.n, 16);
	found_free(&f);
	find(&f, s, "/a", KT_FIND_SUBTREE);
	assert_int_equal(f.n, 12);
	found_free(&f);
}

static void test_find__missing_last_component_is_empty(void **state)
{
	kt_store *s = store_of(state);
	found f = {0};

	make_customers(s);
	find(&f, s, "/cust-1/zzz", 0);
	assert_int_equal(f.n, 0);
	found_free(&f);
	find(&f, s, "/nothing", 0);
	assert_int_equal(f.n, 0);
	found_free(&f);
}

/* As elsewhere, a missing or non-directory parent is an error; keytree.h
 * only says the parent is resolved, these codes follow POSIX. */
static void test_find__bad_parent(void **state)
{
	kt_store *s = store_of(state);
	kt_iter *it = NULL;

	put_str(s, "/f", "v");
	kt_assert_rejected(s, kt_find_new(&it, s, "/missing/x", 0),
			   KT_ENOTFOUND, "/missing");
	assert_null(it);
	kt_assert_rejected(s, kt_find_new(&it, s, "/f/x", 0), KT_ENOTDIR,
			   "/f");
	assert_null(it);
}

/* "entries carry full paths below the resolved parent": found through
 * /lnk -> /real, the paths are /real/..., and the found link /real/ord-3
 * is reported, not walked into. */
static void test_find__link_in_parent_followed(void **state)
{
	kt_store *s = store_of(state);
	static const char *const want[] = {"/real/ord-1", "/real/ord-2",
					   "/real/ord-2/z", "/real/ord-3"};
	found f = {0};

	put_str(s, "/real/ord-1", "v");
	put_str(s, "/real/ord-2/z", "v");
	put_str(s, "/real/other", "v");
	put_str(s, "/elsewhere/q", "v");
	ok(kt_symlink(s, "/real/ord-3", "/elsewhere", NULL));
	ok(kt_symlink(s, "/lnk", "/real", NULL));
	find(&f, s, "/lnk/ord", 0);
	assert_found(&f, want, 4);
	assert_int_equal(kind_in(&f, "/real/ord-3"), KT_KIND_LINK);
	found_free(&f);
}

/* Only the parent is resolved: with KT_FIND_SUBTREE on a link, the link
 * itself is the node found, not its target's subtree. */
static void test_find__subtree_of_link_is_the_link(void **state)
{
	kt_store *s = store_of(state);
	static const char *const want[] = {"/lnk"};
	found f = {0};

	put_str(s, "/real/x", "v");
	ok(kt_symlink(s, "/lnk", "/real", NULL));
	find(&f, s, "/lnk", KT_FIND_SUBTREE);
	assert_found(&f, want, 1);
	assert_int_equal(f.kinds[0], KT_KIND_LINK);
	found_free(&f);
}

static void test_find__deleted_nodes_gone(void **state)
{
	kt_store *s = store_of(state);
	static const char *const want[] = {"/t", "/t/keep"};
	found f = {0};

	put_str(s, "/t/gone/deep", "v");
	put_str(s, "/t/keep", "v");
	ok(kt_delete(s, "/t/gone", KT_DELETE_RECURSIVE));
	find(&f, s, "/t", KT_FIND_SUBTREE);
	assert_found(&f, want, 2);
	found_free(&f);
}

/* ------------------------------------------------------------------------ */
/* Pages: kt_find_opts_new with a limit and a continuation token. */

/* Every name of one find (no pages), in order, as one string. */
static char *find_all(kt_store *s, const char *prefix, unsigned int flags)
{
	kt_test_str out = {0};
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc;

	ok(kt_find_new(&it, s, prefix, flags));
	kt_test_str_add(&out, "", 0);
	while ((rc = kt_iter_next(&e, it)) == 0) {
		kt_test_str_add(&out, e->name, e->name_len);
		kt_test_str_add(&out, " ", 1);
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	return out.p;
}

/* The same find read in pages of @p limit, each resuming after the last
 * name of the one before; every page but the last is full. */
static char *find_paged(kt_store *s, const char *prefix, unsigned int flags,
			size_t limit)
{
	kt_find_options o = KT_FIND_OPTIONS_INIT;
	kt_test_str out = {0};
	char last[KT_PATH_MAX + 1];
	size_t got;

	o.flags = flags;
	o.limit = limit;
	kt_test_str_add(&out, "", 0);
	do {
		kt_iter *it = NULL;
		const kt_entry *e;
		int rc;

		ok(kt_find_opts_new(&it, s, prefix, &o));
		got = 0;
		while ((rc = kt_iter_next(&e, it)) == 0) {
			kt_test_str_add(&out, e->name, e->name_len);
			kt_test_str_add(&out, " ", 1);
			assert_true(e->name_len <= KT_PATH_MAX);
			memcpy(last, e->name, e->name_len + 1);
			got++;
		}
		assert_int_equal(rc, KT_ITEROVER);
		assert_true(got <= limit);
		kt_iter_free(it);
		o.after = last;
	} while (got == limit);
	return out.p;
}

static void test_find__pages_add_up_to_the_whole(void **state)
{
	kt_store *s = store_of(state);
	static const struct {
		const char *prefix;
		unsigned int flags;
	} finds[] = {
		{"/", 0},
		{"/cust-1/ord", 0},
		{"/cust-1", KT_FIND_SUBTREE},
		{"/cust-1/ord", KT_FIND_SUBTREE | KT_FIND_ITEMS},
		{"/cust", KT_FIND_ITEMS},
	};
	size_t i, limit;

	make_customers(s);
	for (i = 0; i < sizeof(finds) / sizeof(finds[0]); i++) {
		char *whole = find_all(s, finds[i].prefix, finds[i].flags);
		assert_true(strlen(whole) > 0);
		for (limit = 1; limit <= 4; limit++) {
			char *paged = find_paged(s, finds[i].prefix,
						 finds[i].flags, limit);
			if (strcmp(whole, paged) != 0)
				fail_msg("find '%s' 0x%x in pages of %zu: '%s', "
					 "whole: '%s'", finds[i].prefix,
					 finds[i].flags, limit, paged, whole);
			free(paged);
		}
		free(whole);
	}
}

/* A token stays good when its node goes, or when nodes come and go around
 * it: the next page starts right after it. */
static void test_find__token_survives_changes(void **state)
{
	kt_store *s = store_of(state);
	kt_find_options o = KT_FIND_OPTIONS_INIT;
	kt_iter *it = NULL;
	const kt_entry *e;

	put_str(s, "/t/a", "v");
	put_str(s, "/t/b/deep", "v");
	put_str(s, "/t/c", "v");
	o.flags = KT_FIND_SUBTREE;
	o.limit = 3; /* /t, /t/a, /t/b */
	o.after = "/t/b";
	ok(kt_delete(s, "/t/b", KT_DELETE_RECURSIVE));
	put_str(s, "/t/a2", "v");   /* before the token: not on this page */
	put_str(s, "/t/b0", "v");   /* after it */
	ok(kt_find_opts_new(&it, s, "/t", &o));
	ok(kt_iter_next(&e, it));
	assert_string_equal(e->name, "/t/b0");
	ok(kt_iter_next(&e, it));
	assert_string_equal(e->name, "/t/c");
	assert_int_equal(kt_iter_next(&e, it), KT_ITEROVER);
	kt_iter_free(it);

	/* After the subtree's top: its descendants, not the top again. */
	o.after = "/t";
	o.limit = 1;
	ok(kt_find_opts_new(&it, s, "/t", &o));
	ok(kt_iter_next(&e, it));
	assert_string_equal(e->name, "/t/a");
	assert_int_equal(kt_iter_next(&e, it), KT_ITEROVER);
	kt_iter_free(it);
}

static void test_find__bad_options(void **state)
{
	kt_store *s = store_of(state);
	kt_find_options o = KT_FIND_OPTIONS_INIT;
	kt_iter *it = NULL;

	put_str(s, "/a/x", "v");
	put_str(s, "/b/y", "v");
	o.after = "/b/y"; /* a token of another find */
	assert_int_equal(kt_find_opts_new(&it, s, "/a", &o), KT_EINVAL);
	assert_null(it);
	assert_non_null(strstr(kt_errmsg(), "/b/y"));
	o.after = "/a/x/"; /* not canonical */
	assert_int_equal(kt_find_opts_new(&it, s, "/a", &o), KT_EINVAL);
	o.after = "a/x"; /* not a path */
	assert_int_equal(kt_find_opts_new(&it, s, "/a", &o), KT_EINVAL);
	o.after = NULL;
	o.version = KT_FIND_OPTIONS_VERSION + 1;
	assert_int_equal(kt_find_opts_new(&it, s, "/a", &o), KT_EINVAL);
	o.version = KT_FIND_OPTIONS_VERSION;
	o.flags = 0x80;
	assert_int_equal(kt_find_opts_new(&it, s, "/a", &o), KT_EINVAL);
	/* NULL options: a plain find. */
	ok(kt_find_opts_new(&it, s, "/a", NULL));
	kt_iter_free(it);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup,         \
						kt_test_teardown)
		T(test_find__prefix_at_component_boundary),
		T(test_find__prefix_in_root),
		T(test_find__subtree_excludes_name_prefix_siblings),
		T(test_find__subtree_deeper_node),
		T(test_find__items_filter),
		T(test_find__root_finds_all_but_root),
		T(test_find__parent_precedes_descendants),
		T(test_find__missing_last_component_is_empty),
		T(test_find__bad_parent),
		T(test_find__link_in_parent_followed),
		T(test_find__subtree_of_link_is_the_link),
		T(test_find__deleted_nodes_gone),
		T(test_find__pages_add_up_to_the_whole),
		T(test_find__token_survives_changes),
		T(test_find__bad_options),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
