/*
 * test_at.c - the calls by directory id and name (kt_lstat_at, kt_make_at,
 * kt_delete_at, kt_rename_at, kt_link_at) and KT_CREATE_NEW: a name is
 * resolved against the directory wherever it is now, an exclusive create
 * fails on anything at all at the name and changes nothing, and bad
 * arguments are refused with the store unchanged.
 */
#include "kt_test.h"
#include "kt_helpers.h"

static uint64_t id_of(kt_store *s, const char *path)
{
	return lstat_of(s, path).id;
}

static kt_make_args make_args(unsigned int kind, const char *data)
{
	kt_make_args a;

	memset(&a, 0, sizeof(a));
	a.version = KT_MAKE_ARGS_VERSION;
	a.kind = kind;
	a.data = data;
	a.len = data ? strlen(data) : 0;
	return a;
}

static void assert_same_stat(const kt_statbuf *a, const kt_statbuf *b)
{
	assert_int_equal(a->id, b->id);
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->size, b->size);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->nlink, b->nlink);
}

static void test_at__make_each_kind(void **state)
{
	kt_store *s = store_of(state);
	kt_make_args a;
	kt_statbuf sb;
	kt_statbuf want;
	uint64_t d;

	ok(kt_mkdir(s, "/d", NULL));
	d = id_of(s, "/d");

	a = make_args(KT_KIND_ITEM, "hello");
	ok(kt_make_at(&sb, s, d, "item", &a));
	want = lstat_of(s, "/d/item");
	assert_same_stat(&sb, &want);
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_value(s, "/d/item", "hello");

	a = make_args(KT_KIND_DIR, NULL);
	a.create.version = KT_CREATE_OPTIONS_VERSION;
	a.create.flags = KT_CREATE_MODE;
	a.create.mode = 0700;
	ok(kt_make_at(&sb, s, d, "sub", &a));
	want = lstat_of(s, "/d/sub");
	assert_same_stat(&sb, &want);
	assert_int_equal(sb.kind, KT_KIND_DIR);
	assert_int_equal(sb.mode, 0700);

	a = make_args(KT_KIND_LINK, "item");
	ok(kt_make_at(&sb, s, d, "l", &a));
	want = lstat_of(s, "/d/l");
	assert_same_stat(&sb, &want);
	assert_int_equal(sb.kind, KT_KIND_LINK);
	assert_value(s, "/d/l", "hello");

	a = make_args(KT_KIND_SPECIAL, NULL);
	a.type = KT_TYPE_FIFO;
	ok(kt_make_at(&sb, s, d, "fifo", &a));
	assert_int_equal(sb.kind, KT_KIND_SPECIAL);
	assert_int_equal(sb.type, KT_TYPE_FIFO);

	/* The root has id 1; NULL statbuf is allowed. */
	a = make_args(KT_KIND_ITEM, "r");
	ok(kt_make_at(NULL, s, 1, "top", &a));
	assert_value(s, "/top", "r");
}

/* Whatever is at the name, an exclusive create fails and writes nothing. */
static void test_at__make_refuses_anything_there(void **state)
{
	kt_store *s = store_of(state);
	static const unsigned int kinds[] = {KT_KIND_ITEM, KT_KIND_DIR,
					     KT_KIND_LINK, KT_KIND_SPECIAL};
	static const char *names[] = {"item", "dir", "both", "dangling",
				      "link", "fifo"};
	char *before, *after;
	uint64_t d;
	size_t i, k;

	put_str(s, "/d/item", "v");
	ok(kt_mkdir(s, "/d/dir", NULL));
	put_str(s, "/d/both/child", "c");
	put_str(s, "/d/both", "value");
	ok(kt_symlink(s, "/d/dangling", "nowhere", NULL));
	ok(kt_symlink(s, "/d/link", "dir", NULL));
	ok(kt_mknod(s, "/d/fifo", KT_TYPE_FIFO, 0, NULL));
	d = id_of(s, "/d");
	before = kt_test_digest(s);
	for (i = 0; i < sizeof(names) / sizeof(*names); i++) {
		for (k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
			kt_make_args a = make_args(kinds[k], NULL);
			if (kinds[k] == KT_KIND_LINK)
				a = make_args(KT_KIND_LINK, "t");
			if (kinds[k] == KT_KIND_SPECIAL)
				a.type = KT_TYPE_SOCK;
			expect_rc(kt_make_at(NULL, s, d, names[i], &a),
				  KT_EEXISTS);
			assert_non_null(strstr(kt_errmsg(), "already exists"));
		}
	}
	after = kt_test_digest(s);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

/* The directory is found by id wherever it moved. */
static void test_at__follows_renamed_directory(void **state)
{
	kt_store *s = store_of(state);
	kt_make_args a = make_args(KT_KIND_ITEM, "x");
	kt_statbuf sb;
	uint64_t d;

	ok(kt_mkdir(s, "/a", NULL));
	ok(kt_mkdir(s, "/a/d", NULL));
	d = id_of(s, "/a/d");
	ok(kt_rename(s, "/a", "/b", 0));
	ok(kt_make_at(NULL, s, d, "f", &a));
	assert_value(s, "/b/d/f", "x");
	assert_absent(s, "/a");
	ok(kt_lstat_at(&sb, s, d, "f"));
	assert_int_equal(sb.id, id_of(s, "/b/d/f"));
	ok(kt_rename(s, "/b/d", "/c", 0));
	ok(kt_delete_at(s, d, "f", 0));
	assert_absent(s, "/c/f");
}

static void test_at__bad_arguments_change_nothing(void **state)
{
	kt_store *s = store_of(state);
	kt_make_args a = make_args(KT_KIND_ITEM, "x");
	kt_make_args bad;
	char *before, *after;
	char bigname[KT_NAME_MAX + 2];
	uint64_t d, f;

	put_str(s, "/d/f", "v");
	d = id_of(s, "/d");
	f = id_of(s, "/d/f");
	before = kt_test_digest(s);
	expect_rc(kt_make_at(NULL, s, d, "", &a), KT_EINVAL);
	expect_rc(kt_make_at(NULL, s, d, "a/b", &a), KT_EINVAL);
	assert_non_null(strstr(kt_errmsg(), "a/b"));
	expect_rc(kt_make_at(NULL, s, d, ".", &a), KT_EINVAL);
	expect_rc(kt_make_at(NULL, s, d, "..", &a), KT_EINVAL);
	expect_rc(kt_make_at(NULL, s, d, NULL, &a), KT_EINVAL);
	memset(bigname, 'n', sizeof(bigname) - 1);
	bigname[sizeof(bigname) - 1] = '\0';
	expect_rc(kt_make_at(NULL, s, d, bigname, &a), KT_ENAMETOOLONG);
	expect_rc(kt_make_at(NULL, s, d, "x" KT_DEFAULT_DELIMITER "y", &a),
		  KT_ERESERVED);
	/* Not a directory, no such id. */
	expect_rc(kt_make_at(NULL, s, f, "x", &a), KT_ENOTDIR);
	expect_rc(kt_make_at(NULL, s, 999999, "x", &a), KT_ENOTFOUND);
	assert_non_null(strstr(kt_errmsg(), "999999"));
	/* Bad args. */
	bad = a;
	bad.version = 99;
	expect_rc(kt_make_at(NULL, s, d, "x", &bad), KT_EINVAL);
	bad = make_args(77, NULL);
	expect_rc(kt_make_at(NULL, s, d, "x", &bad), KT_EINVAL);
	bad = make_args(KT_KIND_LINK, NULL);
	expect_rc(kt_make_at(NULL, s, d, "x", &bad), KT_EINVAL);
	bad = make_args(KT_KIND_SPECIAL, NULL);
	bad.type = 99;
	expect_rc(kt_make_at(NULL, s, d, "x", &bad), KT_EINVAL);
	bad = a;
	bad.create.version = KT_CREATE_OPTIONS_VERSION;
	bad.create.flags = KT_CREATE_PARENTS;
	expect_rc(kt_make_at(NULL, s, d, "x", &bad), KT_EINVAL);
	expect_rc(kt_delete_at(s, d, "missing", 0), KT_ENOTFOUND);
	expect_rc(kt_rename_at(s, d, "f", 424242, "g", 0), KT_ENOTFOUND);
	after = kt_test_digest(s);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

static void test_at__lstat_does_not_follow(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf sb;

	put_str(s, "/d/t", "v");
	ok(kt_symlink(s, "/d/l", "t", NULL));
	ok(kt_lstat_at(&sb, s, id_of(s, "/d"), "l"));
	assert_int_equal(sb.kind, KT_KIND_LINK);
	expect_rc(kt_lstat_at(&sb, s, id_of(s, "/d"), "none"), KT_ENOTFOUND);
	expect_rc(kt_lstat_at(&sb, s, id_of(s, "/d/t"), "x"), KT_ENOTDIR);
}

static void test_at__rename_and_link(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf sb;
	uint64_t a, b, f;

	put_str(s, "/a/f", "v");
	ok(kt_mkdir(s, "/b", NULL));
	a = id_of(s, "/a");
	b = id_of(s, "/b");
	f = id_of(s, "/a/f");
	ok(kt_rename_at(s, a, "f", b, "g", 0));
	assert_absent(s, "/a/f");
	assert_int_equal(id_of(s, "/b/g"), f);
	ok(kt_link_at(&sb, s, f, a, "h"));
	assert_int_equal(sb.id, f);
	assert_int_equal(sb.nlink, 2);
	assert_value(s, "/a/h", "v");
	/* NOREPLACE keeps its meaning by id. */
	expect_rc(kt_rename_at(s, a, "h", b, "g", KT_RENAME_NOREPLACE),
		  KT_EEXISTS);
	/* Linking a directory is refused as by path. */
	expect_rc(kt_link_at(NULL, s, a, b, "dirlink"), KT_EPERM);
}

/* KT_CREATE_NEW on the path calls. */
static void test_at__create_new_by_path(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	char *before, *after;

	o.flags = KT_CREATE_NEW;
	ok(kt_mkdir(s, "/dir", NULL));
	ok(kt_symlink(s, "/dangling", "none", NULL));
	put_str(s, "/item", "v");
	before = kt_test_digest(s);
	expect_rc(kt_put(s, "/dir", "x", 1, &o), KT_EEXISTS);
	expect_rc(kt_put(s, "/dangling", "x", 1, &o), KT_EEXISTS);
	expect_rc(kt_mkdir(s, "/item", &o), KT_EEXISTS);
	expect_rc(kt_symlink(s, "/item", "t", &o), KT_EEXISTS);
	expect_rc(kt_mknod(s, "/dir", KT_TYPE_FIFO, 0, &o), KT_EEXISTS);
	after = kt_test_digest(s);
	assert_string_equal(before, after);
	free(before);
	free(after);
	ok(kt_put(s, "/new", "x", 1, &o));
	assert_value(s, "/new", "x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup,         \
						kt_test_teardown)
		T(test_at__make_each_kind),
		T(test_at__make_refuses_anything_there),
		T(test_at__follows_renamed_directory),
		T(test_at__bad_arguments_change_nothing),
		T(test_at__lstat_does_not_follow),
		T(test_at__rename_and_link),
		T(test_at__create_new_by_path),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
