/*
 * test_attr.c - named attributes: set/get/delete/iterate, binary and empty
 * values, the CREATE/REPLACE flags, name and value limits, the reserved
 * delimiter prefix, the nattrs count, and how attributes travel with their
 * node through rename, reopen, delete, directories and links.
 */
#include "kt_test.h"

/* An iterator a failed assertion may have left open: freed by teardown,
 * because closing a store with a live LevelDB iterator aborts the whole
 * test program and loses the failure report. */
static kt_iter *g_iter;

/* Free @p it and forget it. */
static void iter_free(kt_iter *it)
{
	if (it == g_iter)
		g_iter = NULL;
	kt_iter_free(it);
}

static int teardown(void **state)
{
	kt_iter_free(g_iter);
	g_iter = NULL;
	return kt_test_teardown(state);
}

static void put_str(kt_store *st, const char *path, const char *val)
{
	int rc = kt_put(st, path, val, strlen(val), NULL);

	if (rc != 0)
		fail_msg("kt_put(%s): %d %s", path, rc, kt_errmsg());
}

static void set_str(kt_store *st, const char *path, const char *name,
		    const char *val)
{
	int rc = kt_attr_set(st, path, name, val, strlen(val), 0);

	if (rc != 0)
		fail_msg("kt_attr_set(%s, %s): %d %s", path, name, rc,
			 kt_errmsg());
}

/* Assert attribute @p name of @p path is the @p len bytes @p want. */
static void assert_attr(kt_store *st, const char *path, const char *name,
			const void *want, size_t len)
{
	void *v = NULL;
	size_t got = 99;
	int rc = kt_attr_get(&v, &got, st, path, name);

	if (rc != 0)
		fail_msg("kt_attr_get(%s, %s): %d %s", path, name, rc,
			 kt_errmsg());
	if (got != len)
		fail_msg("kt_attr_get(%s, %s): %zu bytes, want %zu", path,
			 name, got, len);
	if (len)
		assert_memory_equal(v, want, len);
	kt_free(v);
}

static void assert_attr_str(kt_store *st, const char *path, const char *name,
			    const char *val)
{
	assert_attr(st, path, name, val, strlen(val));
}

static void assert_no_attr(kt_store *st, const char *path, const char *name)
{
	void *v = (void *)st;
	size_t len = 9;

	assert_int_equal(kt_attr_get(&v, &len, st, path, name), KT_ENOATTR);
	assert_null(v);
	assert_int_equal(len, 0);
}

static uint32_t nattrs(kt_store *st, const char *path)
{
	kt_statbuf sb;

	assert_int_equal(kt_stat(&sb, st, path), 0);
	return sb.nattrs;
}

/* Number of entries kt_attr_iter_new yields for @p path. */
static size_t count_attrs(kt_store *st, const char *path)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	size_t n = 0;
	int rc;

	assert_int_equal(kt_attr_iter_new(&it, st, path), 0);
	g_iter = it;
	while ((rc = kt_iter_next(&e, it)) == 0)
		n++;
	assert_int_equal(rc, KT_ITEROVER);
	iter_free(it);
	return n;
}

static void test_attr__set_get_delete(void **state)
{
	kt_test_fixture *f = *state;

	put_str(f->store, "/a", "value");
	assert_no_attr(f->store, "/a", "color");
	set_str(f->store, "/a", "color", "red");
	assert_attr_str(f->store, "/a", "color", "red");
	/* overwrite without flags */
	set_str(f->store, "/a", "color", "blue-green");
	assert_attr_str(f->store, "/a", "color", "blue-green");
	set_str(f->store, "/a", "color", "b");
	assert_attr_str(f->store, "/a", "color", "b");
	/* the value of the item is untouched */
	{
		void *v = NULL;
		size_t len = 0;

		assert_int_equal(kt_get(&v, &len, f->store, "/a"), 0);
		assert_int_equal(len, 5);
		assert_memory_equal(v, "value", 5);
		kt_free(v);
	}
	assert_int_equal(kt_attr_delete(f->store, "/a", "color"), 0);
	assert_no_attr(f->store, "/a", "color");
	kt_assert_rejected(f->store, kt_attr_delete(f->store, "/a", "color"),
			   KT_ENOATTR, "color");
}

static void test_attr__missing_get_is_enoattr(void **state)
{
	kt_test_fixture *f = *state;
	void *v = NULL;
	size_t len = 0;

	put_str(f->store, "/a", "v");
	set_str(f->store, "/a", "present", "1");
	assert_int_equal(kt_attr_get(&v, &len, f->store, "/a", "absent"),
			 KT_ENOATTR);
	assert_non_null(strstr(kt_errmsg(), "absent"));
	/* a name that is a prefix or extension of an existing one */
	assert_no_attr(f->store, "/a", "presen");
	assert_no_attr(f->store, "/a", "present2");
	/* no node: not found, not ENOATTR */
	assert_int_equal(kt_attr_get(&v, &len, f->store, "/nope", "present"),
			 KT_ENOTFOUND);
	assert_null(v);
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/nope", "x", "1", 1, 0),
			   KT_ENOTFOUND, "/nope");
	kt_assert_rejected(f->store,
			   kt_attr_delete(f->store, "/nope", "present"),
			   KT_ENOTFOUND, "/nope");
	{
		kt_iter *it = NULL;

		assert_int_equal(kt_attr_iter_new(&it, f->store, "/nope"),
				 KT_ENOTFOUND);
		g_iter = it;
		assert_null(it);
	}
}

static void test_attr__list_in_byte_order(void **state)
{
	/* set in this order; expected back in byte order */
	static const char *names[] = {"b", "a", "c", "\x01", "\xff", "aa",
				      "B", "a\xc2", "\xc2", "A"};
	static const char *sorted[] = {"\x01", "A", "B", "a", "aa", "a\xc2",
				       "b", "c", "\xc2", "\xff"};
	kt_test_fixture *f = *state;
	size_t n = sizeof(names) / sizeof(names[0]), i = 0;
	kt_iter *it = NULL;
	const kt_entry *e;
	char val[32];
	int rc;

	put_str(f->store, "/a", "v");
	put_str(f->store, "/other", "v");
	set_str(f->store, "/other", "zzz", "not mine");
	for (i = 0; i < n; i++) {
		snprintf(val, sizeof(val), "value of %s", names[i]);
		set_str(f->store, "/a", names[i], val);
	}
	assert_int_equal(kt_attr_iter_new(&it, f->store, "/a"), 0);
	g_iter = it;
	i = 0;
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if (i >= n)
			fail_msg("more than %zu attributes", n);
		assert_int_equal(e->name_len, strlen(sorted[i]));
		assert_string_equal(e->name, sorted[i]);
		snprintf(val, sizeof(val), "value of %s", sorted[i]);
		assert_int_equal(e->value_len, strlen(val));
		assert_memory_equal(e->value, val, e->value_len);
		assert_int_equal(e->kind, 0);
		assert_int_equal(e->id, 0);
		i++;
	}
	assert_int_equal(rc, KT_ITEROVER);
	assert_int_equal(i, n);
	/* the end is sticky */
	assert_int_equal(kt_iter_next(&e, it), KT_ITEROVER);
	iter_free(it);

	/* a node without attributes lists nothing */
	put_str(f->store, "/bare", "v");
	assert_int_equal(count_attrs(f->store, "/bare"), 0);
	assert_int_equal(count_attrs(f->store, "/other"), 1);
}

static void test_attr__binary_and_empty_values(void **state)
{
	kt_test_fixture *f = *state;
	unsigned char b[300];
	kt_iter *it = NULL;
	const kt_entry *e;
	size_t i;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)(i & 1 ? 0 : i);
	put_str(f->store, "/a", "v");
	assert_int_equal(kt_attr_set(f->store, "/a", "bin", b, sizeof(b), 0),
			 0);
	assert_attr(f->store, "/a", "bin", b, sizeof(b));
	assert_int_equal(kt_attr_set(f->store, "/a", "empty", NULL, 0, 0), 0);
	assert_attr(f->store, "/a", "empty", "", 0);
	assert_int_equal(kt_attr_set(f->store, "/a", "empty2", "x", 0, 0), 0);
	assert_attr(f->store, "/a", "empty2", "", 0);
	assert_int_equal(nattrs(f->store, "/a"), 3);
	/* an empty value is present, not absent */
	assert_int_equal(kt_attr_iter_new(&it, f->store, "/a"), 0);
	g_iter = it;
	assert_int_equal(kt_iter_next(&e, it), 0);
	assert_string_equal(e->name, "bin");
	assert_int_equal(e->value_len, sizeof(b));
	assert_memory_equal(e->value, b, sizeof(b));
	assert_int_equal(kt_iter_next(&e, it), 0);
	assert_string_equal(e->name, "empty");
	assert_int_equal(e->value_len, 0);
	assert_int_equal(kt_iter_next(&e, it), 0);
	assert_string_equal(e->name, "empty2");
	assert_int_equal(e->value_len, 0);
	assert_int_equal(kt_iter_next(&e, it), KT_ITEROVER);
	iter_free(it);
	/* NULL with a length is an error */
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "n", NULL, 3, 0),
			   KT_EINVAL, "");
}

static void test_attr__create_and_replace_flags(void **state)
{
	kt_test_fixture *f = *state;

	put_str(f->store, "/a", "v");
	assert_int_equal(kt_attr_set(f->store, "/a", "k", "1", 1,
				     KT_ATTR_CREATE), 0);
	assert_attr_str(f->store, "/a", "k", "1");
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "k", "2", 1,
				       KT_ATTR_CREATE),
			   KT_EEXISTS, "k");
	assert_attr_str(f->store, "/a", "k", "1");
	assert_int_equal(kt_attr_set(f->store, "/a", "k", "3", 1,
				     KT_ATTR_REPLACE), 0);
	assert_attr_str(f->store, "/a", "k", "3");
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "new", "4", 1,
				       KT_ATTR_REPLACE),
			   KT_ENOATTR, "new");
	assert_no_attr(f->store, "/a", "new");
	/* an empty value still exists for CREATE */
	assert_int_equal(kt_attr_set(f->store, "/a", "e", NULL, 0, 0), 0);
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "e", "x", 1,
				       KT_ATTR_CREATE),
			   KT_EEXISTS, "e");
	/* after a delete, CREATE works again and REPLACE does not */
	assert_int_equal(kt_attr_delete(f->store, "/a", "k"), 0);
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "k", "5", 1,
				       KT_ATTR_REPLACE),
			   KT_ENOATTR, "k");
	assert_int_equal(kt_attr_set(f->store, "/a", "k", "6", 1,
				     KT_ATTR_CREATE), 0);
	assert_attr_str(f->store, "/a", "k", "6");
}

static void test_attr__reserved_names(void **state)
{
	kt_test_fixture *f = *state;
	void *v = NULL;
	size_t len = 0;

	put_str(f->store, "/a", "v");
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "\xc2\xa6" "x", "1", 1,
				       0),
			   KT_ERESERVED, "x");
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "\xc2\xa6", "1", 1, 0),
			   KT_ERESERVED, "/a");
	/* Only a name that *starts* with the delimiter is reserved (header);
	 * the delimiter later in the name, or a part of it, is fine. */
	set_str(f->store, "/a", "x\xc2\xa6", "mid");
	assert_attr_str(f->store, "/a", "x\xc2\xa6", "mid");
	set_str(f->store, "/a", "\xc2", "lead byte");
	set_str(f->store, "/a", "\xa6", "trail byte");
	set_str(f->store, "/a", "\xc2\xa7", "section sign");
	assert_attr_str(f->store, "/a", "\xc2", "lead byte");
	assert_attr_str(f->store, "/a", "\xa6", "trail byte");
	assert_attr_str(f->store, "/a", "\xc2\xa7", "section sign");
	assert_int_equal(nattrs(f->store, "/a"), 4);
	assert_int_equal(count_attrs(f->store, "/a"), 4);
	/* delete and readers refuse it too, rather than reporting absence,
	 * as kt_attr_get already does for "" and over-long names */
	kt_assert_rejected(f->store,
			   kt_attr_delete(f->store, "/a", "\xc2\xa6" "x"),
			   KT_ERESERVED, "x");
	assert_int_equal(kt_attr_get(&v, &len, f->store, "/a", "\xc2\xa6" "x"),
			 KT_ERESERVED);
	assert_null(v);
}

static void test_attr__reserved_names_custom_delimiter(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/pipe", f->dir);
	o.create_if_missing = 1;
	o.delimiter = "|";
	assert_int_equal(kt_open(&st, dir, &o), 0);
	put_str(st, "/a", "v");
	assert_int_equal(kt_attr_set(st, "/a", "|x", "1", 1, 0),
			 KT_ERESERVED);
	set_str(st, "/a", "\xc2\xa6" "x", "default delimiter is free here");
	assert_attr_str(st, "/a", "\xc2\xa6" "x",
			"default delimiter is free here");
	assert_int_equal(kt_check(NULL, st, NULL), 0);
	kt_close(st);
}

static void test_attr__bad_names(void **state)
{
	kt_test_fixture *f = *state;
	char n255[256], n256[257];
	void *v = NULL;
	size_t len = 0;

	memset(n255, 'k', 255);
	n255[255] = '\0';
	memset(n256, 'k', 256);
	n256[256] = '\0';
	put_str(f->store, "/a", "v");
	kt_assert_rejected(f->store, kt_attr_set(f->store, "/a", "", "1", 1, 0),
			   KT_EINVAL, "/a");
	assert_int_equal(kt_attr_get(&v, &len, f->store, "/a", ""),
			 KT_EINVAL);
	kt_assert_rejected(f->store, kt_attr_delete(f->store, "/a", ""),
			   KT_EINVAL, "/a");
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", NULL, "1", 1, 0),
			   KT_EINVAL, "/a");
	assert_int_equal(kt_attr_get(&v, &len, f->store, "/a", NULL),
			 KT_EINVAL);

	set_str(f->store, "/a", n255, "long name");
	assert_attr_str(f->store, "/a", n255, "long name");
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", n256, "1", 1, 0),
			   KT_ENAMETOOLONG, "");
	assert_int_equal(kt_attr_get(&v, &len, f->store, "/a", n256),
			 KT_ENAMETOOLONG);
	/* the message names the limit */
	if (strstr(kt_errmsg(), "255") == NULL &&
	    strstr(kt_errmsg(), "NAME_MAX") == NULL)
		fail_msg("message '%s' does not name the limit", kt_errmsg());
	kt_assert_rejected(f->store, kt_attr_delete(f->store, "/a", n256),
			   KT_ENAMETOOLONG, "");
	{
		kt_iter *it = NULL;
		const kt_entry *e;

		assert_int_equal(kt_attr_iter_new(&it, f->store, "/a"), 0);
		g_iter = it;
		assert_int_equal(kt_iter_next(&e, it), 0);
		assert_int_equal(e->name_len, 255);
		assert_string_equal(e->name, n255);
		iter_free(it);
	}
}

static void test_attr__value_limit(void **state)
{
	kt_test_fixture *f = *state;
	size_t max = KT_ATTR_VALUE_MAX, i;
	unsigned char *b = malloc(max + 1);

	assert_non_null(b);
	for (i = 0; i <= max; i++)
		b[i] = (unsigned char)(i * 7 + (i >> 8));
	put_str(f->store, "/a", "v");
	assert_int_equal(kt_attr_set(f->store, "/a", "max", b, max, 0), 0);
	assert_attr(f->store, "/a", "max", b, max);
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "over", b, max + 1, 0),
			   KT_ETOOBIG, "65536");
	/* replacing an existing one with an oversized value fails too */
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "max", b + 1, max + 1,
				       0),
			   KT_ETOOBIG, "65536");
	assert_attr(f->store, "/a", "max", b, max);
	free(b);
}

static void test_attr__nattrs_counts(void **state)
{
	kt_test_fixture *f = *state;

	put_str(f->store, "/a", "v");
	assert_int_equal(nattrs(f->store, "/a"), 0);
	set_str(f->store, "/a", "one", "1");
	assert_int_equal(nattrs(f->store, "/a"), 1);
	set_str(f->store, "/a", "two", "2");
	set_str(f->store, "/a", "three", "3");
	assert_int_equal(nattrs(f->store, "/a"), 3);
	/* overwriting does not count twice */
	set_str(f->store, "/a", "two", "22");
	assert_int_equal(kt_attr_set(f->store, "/a", "two", "222", 3,
				     KT_ATTR_REPLACE), 0);
	assert_int_equal(nattrs(f->store, "/a"), 3);
	/* failures do not count */
	assert_int_equal(kt_attr_set(f->store, "/a", "two", "x", 1,
				     KT_ATTR_CREATE), KT_EEXISTS);
	assert_int_equal(kt_attr_set(f->store, "/a", "four", "x", 1,
				     KT_ATTR_REPLACE), KT_ENOATTR);
	assert_int_equal(kt_attr_delete(f->store, "/a", "four"), KT_ENOATTR);
	assert_int_equal(nattrs(f->store, "/a"), 3);
	assert_int_equal(kt_attr_delete(f->store, "/a", "one"), 0);
	assert_int_equal(nattrs(f->store, "/a"), 2);
	assert_int_equal(count_attrs(f->store, "/a"), 2);
	/* writing the value does not touch them */
	put_str(f->store, "/a", "new value");
	assert_int_equal(kt_truncate(f->store, "/a", 0), 0);
	assert_int_equal(nattrs(f->store, "/a"), 2);
	assert_attr_str(f->store, "/a", "two", "222");
	kt_test_reopen(f);
	assert_int_equal(nattrs(f->store, "/a"), 2);
}

static void test_attr__survive_rename(void **state)
{
	kt_test_fixture *f = *state;

	put_str(f->store, "/a", "v");
	set_str(f->store, "/a", "k", "item attr");
	put_str(f->store, "/d/sub/leaf", "v");
	set_str(f->store, "/d", "k", "dir attr");
	set_str(f->store, "/d/sub/leaf", "k", "leaf attr");

	assert_int_equal(kt_rename(f->store, "/a", "/b", 0), 0);
	assert_attr_str(f->store, "/b", "k", "item attr");
	assert_int_equal(nattrs(f->store, "/b"), 1);
	{
		void *v = NULL;
		size_t len = 0;

		assert_int_equal(kt_attr_get(&v, &len, f->store, "/a", "k"),
				 KT_ENOTFOUND);
	}
	/* a subtree: every node keeps its own */
	assert_int_equal(kt_rename(f->store, "/d", "/e", 0), 0);
	assert_attr_str(f->store, "/e", "k", "dir attr");
	assert_attr_str(f->store, "/e/sub/leaf", "k", "leaf attr");
	assert_int_equal(count_attrs(f->store, "/e/sub/leaf"), 1);
	/* a new node at the old path starts bare */
	put_str(f->store, "/a", "again");
	assert_int_equal(nattrs(f->store, "/a"), 0);
	assert_no_attr(f->store, "/a", "k");
	assert_int_equal(count_attrs(f->store, "/a"), 0);
}

static void test_attr__survive_reopen(void **state)
{
	kt_test_fixture *f = *state;
	unsigned char b[5] = {0, 1, 0, 2, 0};

	put_str(f->store, "/a", "v");
	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	set_str(f->store, "/a", "k1", "v1");
	assert_int_equal(kt_attr_set(f->store, "/a", "k2", b, sizeof(b), 0),
			 0);
	set_str(f->store, "/d", "k", "dir");
	kt_test_reopen(f);
	assert_attr_str(f->store, "/a", "k1", "v1");
	assert_attr(f->store, "/a", "k2", b, sizeof(b));
	assert_attr_str(f->store, "/d", "k", "dir");
	assert_int_equal(nattrs(f->store, "/a"), 2);
}

static void test_attr__gone_with_delete(void **state)
{
	kt_test_fixture *f = *state;

	put_str(f->store, "/a", "v");
	set_str(f->store, "/a", "k", "old");
	assert_int_equal(kt_delete(f->store, "/a", 0), 0);
	{
		void *v = NULL;
		size_t len = 0;

		assert_int_equal(kt_attr_get(&v, &len, f->store, "/a", "k"),
				 KT_ENOTFOUND);
	}
	/* recreated: no attribute comes back */
	put_str(f->store, "/a", "v");
	assert_no_attr(f->store, "/a", "k");
	assert_int_equal(nattrs(f->store, "/a"), 0);
	assert_int_equal(count_attrs(f->store, "/a"), 0);

	/* recursive delete takes the attributes of the whole subtree */
	put_str(f->store, "/t/x/y", "v");
	set_str(f->store, "/t", "k", "1");
	set_str(f->store, "/t/x/y", "k", "2");
	assert_int_equal(kt_delete(f->store, "/t", KT_DELETE_RECURSIVE), 0);
	put_str(f->store, "/t/x/y", "v");
	assert_no_attr(f->store, "/t", "k");
	assert_no_attr(f->store, "/t/x/y", "k");
	/* teardown's kt_check also verifies no orphan attribute rows */
}

static void test_attr__delete_item_keeps_dir_attrs(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf sb;

	put_str(f->store, "/n", "value");
	put_str(f->store, "/n/child", "c");
	set_str(f->store, "/n", "k", "kept");
	assert_int_equal(kt_delete(f->store, "/n", KT_DELETE_ITEM), 0);
	assert_int_equal(kt_stat(&sb, f->store, "/n"), 0);
	assert_int_equal(sb.kind, KT_KIND_DIR);
	assert_attr_str(f->store, "/n", "k", "kept");
	assert_int_equal(sb.nattrs, 1);
}

static void test_attr__on_directories(void **state)
{
	kt_test_fixture *f = *state;

	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	set_str(f->store, "/d", "k", "dir");
	assert_attr_str(f->store, "/d", "k", "dir");
	assert_int_equal(nattrs(f->store, "/d"), 1);
	/* the root too */
	set_str(f->store, "/", "k", "root");
	assert_attr_str(f->store, "/", "k", "root");
	assert_int_equal(nattrs(f->store, "/"), 1);
	/* children do not see the parent's attributes */
	put_str(f->store, "/d/c", "v");
	assert_no_attr(f->store, "/d/c", "k");
	/* a directory that becomes an item keeps them */
	put_str(f->store, "/d", "now an item too");
	assert_attr_str(f->store, "/d", "k", "dir");
	assert_int_equal(kt_attr_delete(f->store, "/d", "k"), 0);
	assert_no_attr(f->store, "/d", "k");
	assert_int_equal(nattrs(f->store, "/d"), 0);
}

static void test_attr__follow_links(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf sb;
	kt_iter *it = NULL;
	const kt_entry *e;

	put_str(f->store, "/target", "v");
	assert_int_equal(kt_symlink(f->store, "/link", "/target", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/link2", "link", NULL), 0);
	set_str(f->store, "/link", "k", "via link");
	assert_attr_str(f->store, "/target", "k", "via link");
	assert_attr_str(f->store, "/link2", "k", "via link");
	assert_int_equal(kt_lstat(&sb, f->store, "/link"), 0);
	assert_int_equal(sb.nattrs, 0);
	assert_int_equal(nattrs(f->store, "/link"), 1);
	assert_int_equal(kt_attr_iter_new(&it, f->store, "/link2"), 0);
	g_iter = it;
	assert_int_equal(kt_iter_next(&e, it), 0);
	assert_string_equal(e->name, "k");
	assert_int_equal(kt_iter_next(&e, it), KT_ITEROVER);
	iter_free(it);
	assert_int_equal(kt_attr_delete(f->store, "/link2", "k"), 0);
	assert_no_attr(f->store, "/target", "k");
	/* a link to a directory, as an inner component too */
	put_str(f->store, "/dir/inner", "v");
	assert_int_equal(kt_symlink(f->store, "/dl", "/dir", NULL), 0);
	set_str(f->store, "/dl/inner", "k", "inner");
	assert_attr_str(f->store, "/dir/inner", "k", "inner");
	/* dangling: nothing to act on */
	assert_int_equal(kt_symlink(f->store, "/dangling", "/gone", NULL), 0);
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/dangling", "k", "1", 1, 0),
			   KT_ENOTFOUND, "/");
}

#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup, \
						 teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_attr__set_get_delete),
		T(test_attr__missing_get_is_enoattr),
		T(test_attr__list_in_byte_order),
		T(test_attr__binary_and_empty_values),
		T(test_attr__create_and_replace_flags),
		T(test_attr__reserved_names),
		T(test_attr__reserved_names_custom_delimiter),
		T(test_attr__bad_names),
		T(test_attr__value_limit),
		T(test_attr__nattrs_counts),
		T(test_attr__survive_rename),
		T(test_attr__survive_reopen),
		T(test_attr__gone_with_delete),
		T(test_attr__delete_item_keeps_dir_attrs),
		T(test_attr__on_directories),
		T(test_attr__follow_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
