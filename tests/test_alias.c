/*
 * test_alias.c - nodes with several paths (kt_link, hard links, aliases):
 * every path is the same node (id, value, attributes, mode, owner, times,
 * version), a change through one path is seen through all of them at once,
 * delete removes one path (the data goes with the last, or with all of them
 * under KT_DELETE_ALL_PATHS), rename moves one path, and the operations
 * that would give such a node children or a second identity are refused
 * without changing the store.  The fixture's teardown runs kt_check on
 * every store.
 *
 * A short run on RADOS (kt_test.h) skips, saying why, the two cases that
 * make a node with KT_LINK_MAX paths, and appends 40 times per thread
 * instead of 200.
 */
#include "kt_test.h"
#include "kt_helpers.h"

#include <pthread.h>
#include <time.h>

/* Values above this many bytes live in block rows (KT inline limit). */
#define INLINE_MAX 4096

/* Let the clock move on, so that a time set "now" differs from the last. */
static void tick(void)
{
	struct timespec ts = {0, 2000000};

	nanosleep(&ts, NULL);
}

static void assert_clean(kt_store *s)
{
	size_t bad = 99;
	int rc = kt_check(&bad, s, NULL);

	if (rc != 0 || bad != 0)
		fail_msg("kt_check: %d (%s), %zu violations", rc, kt_errmsg(),
			 bad);
}

/* Fail unless two statbufs agree in every field, naming the first that
 * differs. */
static void assert_stat_equal(const kt_statbuf *a, const kt_statbuf *b,
			      const char *pa, const char *pb)
{
#define F(field)                                                              \
	if (a->field != b->field)                                             \
		fail_msg("%s and %s differ in " #field ": %llu vs %llu", pa,  \
			 pb, (unsigned long long)a->field,                    \
			 (unsigned long long)b->field)
	F(id);
	F(kind);
	F(mode);
	F(uid);
	F(gid);
	F(size);
	F(atime_ns);
	F(mtime_ns);
	F(ctime_ns);
	F(version);
	F(nsubdirs);
	F(nattrs);
	F(stored);
	F(type);
	F(rdev);
	F(nlink);
#undef F
}

/* The attributes of @p path as one string "name=value|..." (free()). */
static char *attrs_of(kt_store *s, const char *path)
{
	kt_test_str str = {0};
	const kt_entry *e;
	kt_iter *it = NULL;
	int rc;

	ok(kt_attr_iter_new(&it, s, path));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		kt_test_str_add(&str, e->name, e->name_len);
		kt_test_str_add(&str, "=", 1);
		kt_test_str_hex(&str, e->value, e->value_len);
		kt_test_str_add(&str, "|", 1);
	}
	expect_rc(rc, KT_ITEROVER);
	kt_iter_free(it);
	if (str.p == NULL)
		kt_test_str_add(&str, "", 0);
	return str.p;
}

/* Assert that the @p n paths are one node with @p n paths: kt_lstat
 * identical in every field, nlink n, and the same value (for items) and
 * attributes.  Returns the statbuf. */
static kt_statbuf assert_one_node(kt_store *s, const char *const *paths,
				  size_t n)
{
	kt_statbuf first = lstat_of(s, paths[0]);
	void *v0 = NULL;
	size_t l0 = 0, i;
	char *a0 = attrs_of(s, paths[0]);

	if (first.nlink != n)
		fail_msg("%s: nlink %u, want %zu", paths[0],
			 (unsigned)first.nlink, n);
	if (first.kind & KT_KIND_ITEM)
		ok(kt_get(&v0, &l0, s, paths[0]));
	for (i = 1; i < n; i++) {
		kt_statbuf sb = lstat_of(s, paths[i]);
		char *a = attrs_of(s, paths[i]);

		assert_stat_equal(&first, &sb, paths[0], paths[i]);
		if (strcmp(a, a0) != 0)
			fail_msg("attributes of %s (%s) and %s (%s) differ",
				 paths[0], a0, paths[i], a);
		free(a);
		if (first.kind & KT_KIND_ITEM) {
			void *v = NULL;
			size_t l = 0;

			ok(kt_get(&v, &l, s, paths[i]));
			assert_int_equal(l, l0);
			if (l != 0 && memcmp(v, v0, l) != 0)
				fail_msg("values of %s and %s differ",
					 paths[0], paths[i]);
			kt_free(v);
		}
	}
	kt_free(v0);
	free(a0);
	return first;
}

static void assert_attr(kt_store *s, const char *path, const char *name,
			const char *want)
{
	void *v = NULL;
	size_t len = 0;
	int rc = kt_attr_get(&v, &len, s, path, name);

	if (rc != 0)
		fail_msg("attr %s of %s: %d (%s)", name, path, rc, kt_errmsg());
	assert_int_equal(len, strlen(want));
	assert_memory_equal(v, want, len);
	kt_free(v);
}

static void assert_no_attr(kt_store *s, const char *path, const char *name)
{
	void *v = NULL;
	size_t len = 0;

	expect_rc(kt_attr_get(&v, &len, s, path, name), KT_ENOATTR);
	assert_null(v);
}

/* Assert that kt_id_path(id) is one of @p paths (or KT_ENOTFOUND when
 * n is 0). */
static void assert_id_path_in(kt_store *s, uint64_t id,
			      const char *const *paths, size_t n)
{
	char *p = NULL;
	size_t len = 0, i;
	int rc = kt_id_path(&p, &len, s, id);

	if (n == 0) {
		if (rc != KT_ENOTFOUND)
			fail_msg("id %llu: got %d (%s), want KT_ENOTFOUND",
				 (unsigned long long)id, rc,
				 p ? p : kt_errmsg());
		kt_free(p);
		return;
	}
	if (rc != 0)
		fail_msg("id_path %llu: %d (%s)", (unsigned long long)id, rc,
			 kt_errmsg());
	assert_int_equal(len, strlen(p));
	for (i = 0; i < n; i++)
		if (strcmp(p, paths[i]) == 0)
			break;
	if (i == n)
		fail_msg("id %llu has path %s, not one of its paths",
			 (unsigned long long)id, p);
	kt_free(p);
}

/* A value of @p len bytes with a pattern that depends on @p seed. */
static unsigned char *pattern(size_t len, unsigned seed)
{
	unsigned char *b = malloc(len ? len : 1);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < len; i++)
		b[i] = (unsigned char)(i * 7 + seed * 13 + (i >> 8));
	return b;
}

static void assert_value_bytes(kt_store *s, const char *path,
			       const unsigned char *want, size_t len)
{
	void *v = NULL;
	size_t got = 0;

	ok(kt_get(&v, &got, s, path));
	if (got != len)
		fail_msg("%s: %zu bytes, want %zu", path, got, len);
	if (len != 0 && memcmp(v, want, len) != 0)
		fail_msg("%s: value differs", path);
	kt_free(v);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------ */
/* kt_link: one node, several paths */

static void test_alias__link_gives_same_node_through_both_paths(void **state)
{
	kt_store *s = store_of(state);
	static const char *const paths[] = {"/a/item", "/b/c/alias"};
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_statbuf before, after, dir;

	o.flags = KT_CREATE_MODE | KT_CREATE_OWNER;
	o.mode = 0640;
	o.uid = 1234;
	o.gid = 5678;
	ok(kt_put(s, paths[0], "value", 5, &o));
	ok(kt_attr_set(s, paths[0], "user.k", "attr-v", 6, 0));
	sa.mask = KT_SET_ATIME | KT_SET_MTIME;
	sa.atime_ns = 1000000000;
	sa.mtime_ns = 2000000000;
	ok(kt_setattr(s, paths[0], &sa, 0));
	before = lstat_of(s, paths[0]);
	assert_int_equal(before.nlink, 1);
	tick();

	ok(kt_link(s, paths[0], paths[1]));
	after = assert_one_node(s, paths, 2);
	assert_int_equal(after.id, before.id);
	assert_int_equal(after.kind, KT_KIND_ITEM);
	assert_int_equal(after.mode, 0640);
	assert_int_equal(after.uid, 1234);
	assert_int_equal(after.gid, 5678);
	assert_int_equal(after.size, 5);
	assert_int_equal(after.nattrs, 1);
	assert_int_equal(after.atime_ns, 1000000000);
	assert_int_equal(after.mtime_ns, 2000000000);
	/* The link count is metadata: ctime and the version move on. */
	assert_true(after.ctime_ns > before.ctime_ns);
	assert_true(after.version != before.version);
	assert_value(s, paths[1], "value");
	assert_attr(s, paths[1], "user.k", "attr-v");
	/* The missing ancestors of the new path were made. */
	dir = lstat_of(s, "/b/c");
	assert_int_equal(dir.kind, KT_KIND_DIR);
}

static void test_alias__listing_shows_new_path_with_kind_and_id(void **state)
{
	kt_store *s = store_of(state);
	const kt_entry *e;
	kt_iter *it = NULL;
	kt_statbuf sb;
	int rc, seen = 0;

	put_str(s, "/a", "v");
	ok(kt_mkdir(s, "/d", NULL));
	put_str(s, "/d/other", "o");
	ok(kt_link(s, "/a", "/d/new"));
	sb = lstat_of(s, "/a");
	ok(kt_iter_new(&it, s, "/d", NULL));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if (strcmp(e->name, "new") == 0) {
			seen++;
			assert_int_equal(e->kind, KT_KIND_ITEM);
			assert_int_equal(e->id, sb.id);
		} else {
			assert_string_equal(e->name, "other");
		}
	}
	expect_rc(rc, KT_ITEROVER);
	kt_iter_free(it);
	assert_int_equal(seen, 1);
	/* The old path is still listed in its own parent. */
	seen = 0;
	ok(kt_iter_new(&it, s, "/", NULL));
	while ((rc = kt_iter_next(&e, it)) == 0)
		if (strcmp(e->name, "a") == 0) {
			seen++;
			assert_int_equal(e->id, sb.id);
			assert_int_equal(e->kind, KT_KIND_ITEM);
		}
	expect_rc(rc, KT_ITEROVER);
	kt_iter_free(it);
	assert_int_equal(seen, 1);
}

/* kt_find_new under the prefix of either path reports that path. */
static void find_one(kt_store *s, const char *prefix, const char *want,
		     uint64_t id)
{
	const kt_entry *e;
	kt_iter *it = NULL;
	int rc, seen = 0;

	ok(kt_find_new(&it, s, prefix, KT_FIND_ITEMS));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if (strcmp(e->name, want) == 0) {
			seen++;
			assert_int_equal(e->id, id);
			assert_int_equal(e->kind, KT_KIND_ITEM);
		}
	}
	expect_rc(rc, KT_ITEROVER);
	kt_iter_free(it);
	if (seen != 1)
		fail_msg("find '%s' saw '%s' %d times", prefix, want, seen);
}

static void test_alias__find_under_either_prefix(void **state)
{
	kt_store *s = store_of(state);
	uint64_t id;

	put_str(s, "/x/one/item", "v");
	ok(kt_link(s, "/x/one/item", "/y/two/item2"));
	id = lstat_of(s, "/x/one/item").id;
	find_one(s, "/x", "/x/one/item", id);
	find_one(s, "/y", "/y/two/item2", id);
	find_one(s, "/y/two/it", "/y/two/item2", id);
	find_one(s, "/", "/x/one/item", id);
	find_one(s, "/", "/y/two/item2", id);
}

static void test_alias__three_and_more_paths(void **state)
{
	kt_store *s = store_of(state);
	static const char *const paths[] = {"/p0", "/d/p1", "/d/e/p2",
					    "/p3", "/f/p4"};
	kt_store_stats st;
	size_t i;

	put_str(s, paths[0], "shared");
	for (i = 1; i < N(paths); i++) {
		/* Link from a path other than the first, too. */
		ok(kt_link(s, paths[i - 1], paths[i]));
		assert_one_node(s, paths, i + 1);
	}
	ok(kt_stats(&st, s));
	assert_int_equal(st.items, 1);
	assert_int_equal(st.aliases, N(paths) - 1);
	assert_int_equal(st.value_bytes, 6);
	put_str(s, "/d/e/p2", "changed");
	assert_one_node(s, paths, N(paths));
	assert_value(s, "/p0", "changed");
	assert_clean(s);
}

static void test_alias__link_max_paths_then_emlink(void **state)
{
	kt_store *s = store_of(state);
	char path[64], other[64];
	kt_statbuf sb;
	kt_store_stats st;
	int i;

	KT_TEST_LONG_ON_RADOS_BECAUSE(
		"each of the 1023 kt_link calls rewrites every copy of the "
		"node row, half a million row writes in 1023 commits, about "
		"10 minutes there");
	put_str(s, "/n0", "v");
	for (i = 1; i < KT_LINK_MAX; i++) {
		snprintf(path, sizeof(path), "/n%d", i);
		ok(kt_link(s, "/n0", path));
	}
	sb = lstat_of(s, "/n0");
	assert_int_equal(sb.nlink, KT_LINK_MAX);
	sb = lstat_of(s, "/n1023");
	assert_int_equal(sb.nlink, KT_LINK_MAX);
	ok(kt_stats(&st, s));
	assert_int_equal(st.items, 1);
	assert_int_equal(st.aliases, KT_LINK_MAX - 1);
	kt_assert_rejected(s, kt_link(s, "/n0", "/over"), KT_EMLINK, "/n0");
	kt_assert_rejected(s, kt_link(s, "/n517", "/over"), KT_EMLINK,
			   "/n517");
	assert_absent(s, "/over");
	/* One path fewer makes room for one more. */
	ok(kt_delete(s, "/n5", 0));
	ok(kt_link(s, "/n7", "/over"));
	sb = lstat_of(s, "/over");
	assert_int_equal(sb.nlink, KT_LINK_MAX);
	snprintf(other, sizeof(other), "/n%d", KT_LINK_MAX - 1);
	assert_int_equal(lstat_of(s, other).version, sb.version);
	assert_clean(s);
}

/* ------------------------------------------------------------------------ */
/* Changes through one path seen through every path */

static const char *const three[] = {"/a", "/d/b", "/e/f/c"};

static void make_three(kt_store *s, const void *v, size_t len)
{
	ok(kt_put(s, three[0], v, len, NULL));
	ok(kt_link(s, three[0], three[1]));
	ok(kt_link(s, three[1], three[2]));
}

/* After a change: every path shows the same node, with a new version. */
static uint64_t changed(kt_store *s, uint64_t old_version)
{
	kt_statbuf sb = assert_one_node(s, three, N(three));

	assert_true(sb.version != old_version);
	return sb.version;
}

static void test_alias__put_through_one_seen_through_all(void **state)
{
	kt_store *s = store_of(state);
	unsigned char *big = pattern(3 * INLINE_MAX + 17, 1);
	uint64_t v;
	size_t i;

	make_three(s, "first", 5);
	v = assert_one_node(s, three, N(three)).version;
	for (i = 0; i < N(three); i++) {
		char val[32];

		tick();
		snprintf(val, sizeof(val), "through %zu", i);
		put_str(s, three[i], val);
		v = changed(s, v);
		assert_value(s, three[(i + 1) % N(three)], val);
	}
	/* Into blocks and back to inline. */
	ok(kt_put(s, three[1], big, 3 * INLINE_MAX + 17, NULL));
	v = changed(s, v);
	assert_value_bytes(s, three[2], big, 3 * INLINE_MAX + 17);
	put_str(s, three[2], "small again");
	v = changed(s, v);
	assert_value(s, three[0], "small again");
	ok(kt_put(s, three[0], NULL, 0, NULL));
	changed(s, v);
	assert_value(s, three[1], "");
	free(big);
}

static void test_alias__write_and_append_seen_through_all(void **state)
{
	kt_store *s = store_of(state);
	size_t total = 2 * INLINE_MAX + 100;
	unsigned char *want = calloc(1, total + 64);
	unsigned char *chunk = pattern(INLINE_MAX, 2);
	uint64_t v;

	assert_non_null(want);
	make_three(s, "0123456789", 10);
	memcpy(want, "0123456789", 10);
	v = assert_one_node(s, three, N(three)).version;

	ok(kt_write(s, three[1], "AB", 2, 3));
	memcpy(want + 3, "AB", 2);
	v = changed(s, v);
	assert_value_bytes(s, three[0], want, 10);

	ok(kt_write(s, three[2], "xyz", 3, KT_APPEND));
	memcpy(want + 10, "xyz", 3);
	v = changed(s, v);
	assert_value_bytes(s, three[1], want, 13);

	/* Past the end, with a hole, into block rows. */
	ok(kt_write(s, three[0], chunk, INLINE_MAX, INLINE_MAX + 100));
	memcpy(want + INLINE_MAX + 100, chunk, INLINE_MAX);
	v = changed(s, v);
	assert_value_bytes(s, three[2], want, total);

	ok(kt_write(s, three[1], "tail", 4, KT_APPEND));
	memcpy(want + total, "tail", 4);
	v = changed(s, v);
	assert_value_bytes(s, three[0], want, total + 4);

	/* A write inside the blocks. */
	ok(kt_write(s, three[2], "mid", 3, INLINE_MAX + 1));
	memcpy(want + INLINE_MAX + 1, "mid", 3);
	changed(s, v);
	assert_value_bytes(s, three[1], want, total + 4);
	free(want);
	free(chunk);
}

static void test_alias__truncate_across_inline_limit_seen_through_all(
	void **state)
{
	kt_store *s = store_of(state);
	unsigned char *v0 = pattern(INLINE_MAX - 6, 3);
	unsigned char *want = calloc(1, 4 * INLINE_MAX);
	uint64_t v;
	kt_statbuf sb;

	assert_non_null(want);
	make_three(s, v0, INLINE_MAX - 6);
	memcpy(want, v0, INLINE_MAX - 6);
	v = assert_one_node(s, three, N(three)).version;

	/* Grow over the inline limit: a hole after the old end. */
	ok(kt_truncate(s, three[1], 3 * INLINE_MAX));
	v = changed(s, v);
	sb = lstat_of(s, three[2]);
	assert_int_equal(sb.size, 3 * INLINE_MAX);
	assert_value_bytes(s, three[0], want, 3 * INLINE_MAX);

	/* Shrink within blocks. */
	ok(kt_truncate(s, three[2], INLINE_MAX + 5));
	v = changed(s, v);
	assert_value_bytes(s, three[1], want, INLINE_MAX + 5);

	/* Shrink back under the limit. */
	ok(kt_truncate(s, three[0], 100));
	v = changed(s, v);
	assert_int_equal(lstat_of(s, three[1]).size, 100);
	assert_value_bytes(s, three[2], want, 100);

	/* Grow within the inline limit: zeros. */
	memset(want + 100, 0, INLINE_MAX);
	ok(kt_truncate(s, three[1], 200));
	v = changed(s, v);
	assert_value_bytes(s, three[0], want, 200);

	ok(kt_truncate(s, three[2], 0));
	changed(s, v);
	assert_value(s, three[0], "");
	free(v0);
	free(want);
}

static void test_alias__setattr_seen_through_all(void **state)
{
	kt_store *s = store_of(state);
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_statbuf sb;
	uint64_t v;

	make_three(s, "v", 1);
	v = assert_one_node(s, three, N(three)).version;

	sa.mask = KT_SET_MODE;
	sa.mode = 0604;
	ok(kt_setattr(s, three[2], &sa, 0));
	v = changed(s, v);
	assert_int_equal(lstat_of(s, three[0]).mode, 0604);

	sa.mask = KT_SET_UID | KT_SET_GID;
	sa.uid = 42;
	sa.gid = 43;
	ok(kt_setattr(s, three[0], &sa, 0));
	v = changed(s, v);
	sb = lstat_of(s, three[1]);
	assert_int_equal(sb.uid, 42);
	assert_int_equal(sb.gid, 43);

	sa.mask = KT_SET_ATIME | KT_SET_MTIME;
	sa.atime_ns = 111;
	sa.mtime_ns = 222;
	ok(kt_setattr(s, three[1], &sa, 0));
	v = changed(s, v);
	sb = lstat_of(s, three[2]);
	assert_int_equal(sb.atime_ns, 111);
	assert_int_equal(sb.mtime_ns, 222);

	tick();
	sa.mask = KT_SET_ATIME_NOW | KT_SET_MTIME_NOW;
	ok(kt_setattr(s, three[2], &sa, 0));
	changed(s, v);
	sb = lstat_of(s, three[0]);
	assert_true(sb.atime_ns > 111);
	assert_true(sb.mtime_ns > 222);
}

static void test_alias__attrs_seen_through_all(void **state)
{
	kt_store *s = store_of(state);
	uint64_t v;

	make_three(s, "v", 1);
	v = assert_one_node(s, three, N(three)).version;
	ok(kt_attr_set(s, three[1], "user.a", "1", 1, 0));
	v = changed(s, v);
	assert_attr(s, three[0], "user.a", "1");
	assert_attr(s, three[2], "user.a", "1");
	ok(kt_attr_set(s, three[2], "user.b", "2", 1, KT_ATTR_CREATE));
	v = changed(s, v);
	assert_int_equal(lstat_of(s, three[0]).nattrs, 2);
	ok(kt_attr_set(s, three[0], "user.a", "one", 3, KT_ATTR_REPLACE));
	v = changed(s, v);
	assert_attr(s, three[1], "user.a", "one");
	/* The attribute exists through every path: CREATE through another
	 * is KT_EEXISTS. */
	kt_assert_rejected(s, kt_attr_set(s, three[1], "user.b", "x", 1,
					  KT_ATTR_CREATE),
			   KT_EEXISTS, "user.b");
	ok(kt_attr_delete(s, three[1], "user.a"));
	v = changed(s, v);
	assert_no_attr(s, three[2], "user.a");
	kt_assert_rejected(s, kt_attr_delete(s, three[0], "user.a"),
			   KT_ENOATTR, "user.a");
	ok(kt_attr_delete(s, three[2], "user.b"));
	changed(s, v);
	assert_int_equal(lstat_of(s, three[1]).nattrs, 0);
}

/* ------------------------------------------------------------------------ */
/* Delete */

static void assert_stats_equal(const kt_store_stats *a, const kt_store_stats *b)
{
#define F(field)                                                              \
	if (a->field != b->field)                                             \
		fail_msg("kt_stats " #field ": %llu, want %llu",              \
			 (unsigned long long)b->field,                        \
			 (unsigned long long)a->field)
	F(items);
	F(dirs);
	F(links);
	F(specials);
	F(value_bytes);
	F(attrs);
	F(aliases);
	F(rows);
	F(row_bytes);
#undef F
}

static void test_alias__delete_one_path_keeps_the_others(void **state)
{
	kt_store *s = store_of(state);
	static const char *const rest[] = {"/a", "/e/f/c"};
	unsigned char *big = pattern(2 * INLINE_MAX + 3, 4);
	kt_store_stats st;
	kt_statbuf before, after;

	make_three(s, big, 2 * INLINE_MAX + 3);
	ok(kt_attr_set(s, "/a", "user.x", "xv", 2, 0));
	before = lstat_of(s, "/d/b");
	tick();
	ok(kt_delete(s, "/d/b", 0));
	assert_absent(s, "/d/b");
	after = assert_one_node(s, rest, N(rest));
	assert_int_equal(after.nlink, 2);
	assert_int_equal(after.id, before.id);
	assert_true(after.ctime_ns > before.ctime_ns);
	assert_value_bytes(s, "/e/f/c", big, 2 * INLINE_MAX + 3);
	assert_attr(s, "/a", "user.x", "xv");
	assert_id_path_in(s, before.id, rest, N(rest));
	ok(kt_stats(&st, s));
	assert_int_equal(st.items, 1);
	assert_int_equal(st.aliases, 1);
	assert_int_equal(st.attrs, 1);
	assert_int_equal(st.value_bytes, 2 * INLINE_MAX + 3);
	assert_clean(s);

	/* Down to one path: an ordinary node again. */
	ok(kt_delete(s, "/a", 0));
	after = lstat_of(s, "/e/f/c");
	assert_int_equal(after.nlink, 1);
	assert_value_bytes(s, "/e/f/c", big, 2 * INLINE_MAX + 3);
	assert_attr(s, "/e/f/c", "user.x", "xv");
	assert_id_path_in(s, before.id, &rest[1], 1);
	ok(kt_stats(&st, s));
	assert_int_equal(st.aliases, 0);
	assert_clean(s);
	free(big);
}

static void test_alias__delete_last_path_removes_data(void **state)
{
	kt_store *s = store_of(state);
	unsigned char *big = pattern(3 * INLINE_MAX, 5);
	kt_store_stats before, after;
	uint64_t id;

	ok(kt_mkdir(s, "/d", NULL));
	ok(kt_mkdir(s, "/e", NULL));
	ok(kt_mkdir(s, "/e/f", NULL));
	ok(kt_stats(&before, s));
	make_three(s, big, 3 * INLINE_MAX);
	ok(kt_attr_set(s, "/d/b", "user.x", "xv", 2, 0));
	ok(kt_attr_set(s, "/d/b", "user.y", big, 300, 0));
	id = lstat_of(s, "/a").id;
	ok(kt_delete(s, "/a", 0));
	ok(kt_delete(s, "/e/f/c", 0));
	ok(kt_delete(s, "/d/b", 0));
	assert_absent(s, "/d/b");
	assert_id_path_in(s, id, NULL, 0);
	ok(kt_stats(&after, s));
	assert_stats_equal(&before, &after);
	free(big);
}

/* kt_id_path keeps working when the first path (the one the id row named)
 * goes, and follows the node to a remaining path. */
static void test_alias__delete_primary_keeps_id_path(void **state)
{
	kt_store *s = store_of(state);
	static const char *const rest[] = {"/d/b", "/e/f/c"};
	kt_statbuf sb;
	char *p = NULL;
	size_t len = 0;
	uint64_t id;

	make_three(s, "v", 1);
	id = lstat_of(s, "/a").id;
	ok(kt_id_path(&p, &len, s, id));
	assert_string_equal(p, "/a");
	kt_free(p);
	ok(kt_delete(s, "/a", 0));
	assert_id_path_in(s, id, rest, N(rest));
	p = NULL;
	ok(kt_id_lstat(&sb, &p, &len, s, id));
	assert_int_equal(sb.nlink, 2);
	assert_int_equal(sb.id, id);
	assert_true(strcmp(p, rest[0]) == 0 || strcmp(p, rest[1]) == 0);
	/* Drop the path the id row names now: the other one remains. */
	ok(kt_delete(s, p, 0));
	kt_free(p);
	p = NULL;
	ok(kt_id_path(&p, &len, s, id));
	assert_true(strcmp(p, rest[0]) == 0 || strcmp(p, rest[1]) == 0);
	sb = lstat_of(s, p);
	assert_int_equal(sb.nlink, 1);
	assert_value(s, p, "v");
	kt_free(p);
	assert_clean(s);
}

static void test_alias__delete_all_paths_removes_everything(void **state)
{
	kt_store *s = store_of(state);
	unsigned char *big = pattern(2 * INLINE_MAX + 1, 6);
	kt_store_stats before, after;
	kt_statbuf sb;
	uint64_t id;
	size_t i;

	put_str(s, "/other", "o");
	ok(kt_link(s, "/other", "/other2"));
	ok(kt_mkdir(s, "/d", NULL));
	ok(kt_mkdir(s, "/e", NULL));
	ok(kt_mkdir(s, "/e/f", NULL));
	ok(kt_stats(&before, s));
	make_three(s, big, 2 * INLINE_MAX + 1);
	ok(kt_attr_set(s, "/a", "user.x", "xv", 2, 0));
	id = lstat_of(s, "/a").id;
	sb = lstat_of(s, "/e/f");
	tick();
	/* Through a path that is neither the first nor the last. */
	ok(kt_delete(s, "/d/b", KT_DELETE_ALL_PATHS));
	for (i = 0; i < N(three); i++)
		assert_absent(s, three[i]);
	assert_id_path_in(s, id, NULL, 0);
	/* Each parent lost a child. */
	assert_true(lstat_of(s, "/e/f").mtime_ns > sb.mtime_ns);
	ok(kt_stats(&after, s));
	assert_stats_equal(&before, &after);
	/* The other node with two paths was not touched. */
	sb = lstat_of(s, "/other2");
	assert_int_equal(sb.nlink, 2);
	assert_clean(s);
	free(big);
}

static void test_alias__delete_all_paths_of_single_path_node(void **state)
{
	kt_store *s = store_of(state);
	kt_store_stats before, after;

	ok(kt_stats(&before, s));
	put_str(s, "/solo", "v");
	ok(kt_attr_set(s, "/solo", "user.x", "xv", 2, 0));
	ok(kt_delete(s, "/solo", KT_DELETE_ALL_PATHS));
	assert_absent(s, "/solo");
	ok(kt_stats(&after, s));
	assert_stats_equal(&before, &after);
}

static void test_alias__recursive_delete_of_dir_holding_one_path(void **state)
{
	kt_store *s = store_of(state);
	static const char *const out[] = {"/out"};
	kt_statbuf sb;
	uint64_t id;

	put_str(s, "/d/sub/x", "value");
	ok(kt_attr_set(s, "/d/sub/x", "user.k", "kv", 2, 0));
	ok(kt_link(s, "/d/sub/x", "/out"));
	put_str(s, "/d/y", "y");
	id = lstat_of(s, "/out").id;
	ok(kt_delete(s, "/d", KT_DELETE_RECURSIVE));
	assert_absent(s, "/d");
	sb = lstat_of(s, "/out");
	assert_int_equal(sb.nlink, 1);
	assert_int_equal(sb.id, id);
	assert_value(s, "/out", "value");
	assert_attr(s, "/out", "user.k", "kv");
	assert_id_path_in(s, id, out, 1);
	assert_clean(s);
	/* And the path inside may be the later one. */
	put_str(s, "/p", "pv");
	ok(kt_link(s, "/p", "/q/r"));
	ok(kt_link(s, "/p", "/z"));
	ok(kt_delete(s, "/q", KT_DELETE_RECURSIVE));
	sb = lstat_of(s, "/p");
	assert_int_equal(sb.nlink, 2);
	assert_int_equal(lstat_of(s, "/z").nlink, 2);
	assert_clean(s);
}

static void test_alias__recursive_delete_of_dir_holding_all_paths(
	void **state)
{
	kt_store *s = store_of(state);
	kt_store_stats before, after;
	uint64_t id;

	ok(kt_stats(&before, s));
	put_str(s, "/d/x", "value");
	ok(kt_attr_set(s, "/d/x", "user.k", "kv", 2, 0));
	ok(kt_link(s, "/d/x", "/d/e/y"));
	ok(kt_link(s, "/d/e/y", "/d/e/g/z"));
	id = lstat_of(s, "/d/x").id;
	ok(kt_delete(s, "/d", KT_DELETE_RECURSIVE));
	assert_absent(s, "/d");
	assert_id_path_in(s, id, NULL, 0);
	ok(kt_stats(&after, s));
	assert_stats_equal(&before, &after);
}

/* Two of three paths under the deleted directory: one remains, nlink 1. */
static void test_alias__recursive_delete_of_dir_holding_two_of_three(
	void **state)
{
	kt_store *s = store_of(state);
	static const char *const out[] = {"/keep"};
	kt_statbuf sb;

	put_str(s, "/d/x", "value");
	ok(kt_link(s, "/d/x", "/keep"));
	ok(kt_link(s, "/keep", "/d/e/y"));
	sb = lstat_of(s, "/keep");
	ok(kt_delete(s, "/d", KT_DELETE_RECURSIVE | KT_DELETE_PRUNE));
	assert_int_equal(lstat_of(s, "/keep").nlink, 1);
	assert_value(s, "/keep", "value");
	assert_id_path_in(s, sb.id, out, 1);
	assert_clean(s);
}

/* ------------------------------------------------------------------------ */
/* Rename */

static void test_alias__rename_moves_only_that_path(void **state)
{
	kt_store *s = store_of(state);
	static const char *const now[] = {"/a", "/e/f/c", "/g/moved"};
	kt_statbuf before, after;

	make_three(s, "v", 1);
	before = lstat_of(s, "/d/b");
	ok(kt_mkdir(s, "/g", NULL));
	tick();
	ok(kt_rename(s, "/d/b", "/g/moved", 0));
	assert_absent(s, "/d/b");
	after = assert_one_node(s, now, N(now));
	assert_int_equal(after.id, before.id);
	assert_true(after.ctime_ns > before.ctime_ns);
	assert_id_path_in(s, after.id, now, N(now));
	/* The first path moves the same way, and the id row follows it. */
	ok(kt_rename(s, "/a", "/g/first", 0));
	{
		static const char *const now2[] = {"/g/first", "/e/f/c",
						   "/g/moved"};
		char *p = NULL;

		assert_one_node(s, now2, N(now2));
		assert_absent(s, "/a");
		ok(kt_id_path(&p, NULL, s, after.id));
		assert_string_equal(p, "/g/first");
		kt_free(p);
	}
	assert_clean(s);
}

static void test_alias__rename_dir_holding_one_path(void **state)
{
	kt_store *s = store_of(state);
	static const char *const now[] = {"/e/x", "/y"};
	static const char *const now2[] = {"/h/i/x", "/y"};
	kt_statbuf sb;
	char *p = NULL;

	put_str(s, "/d/x", "v");
	ok(kt_link(s, "/d/x", "/y"));
	ok(kt_rename(s, "/d", "/e", 0));
	assert_absent(s, "/d/x");
	sb = assert_one_node(s, now, N(now));
	ok(kt_id_path(&p, NULL, s, sb.id));
	assert_string_equal(p, "/e/x"); /* the first path, moved */
	kt_free(p);
	assert_clean(s);
	/* A change through either path after the move reaches both. */
	put_str(s, "/y", "changed");
	assert_one_node(s, now, N(now));
	assert_value(s, "/e/x", "changed");
	/* The directory holding a later path moves too. */
	ok(kt_link(s, "/y", "/k/z"));
	ok(kt_rename(s, "/k", "/h", 0));
	{
		static const char *const three_now[] = {"/e/x", "/y", "/h/z"};
		assert_one_node(s, three_now, N(three_now));
	}
	ok(kt_rename(s, "/e", "/h/i", 0));
	{
		static const char *const three_now[] = {"/h/i/x", "/y",
							"/h/z"};
		assert_one_node(s, three_now, N(three_now));
	}
	ok(kt_delete(s, "/h/z", 0));
	assert_one_node(s, now2, N(now2));
	ok(kt_delete(s, "/y", 0));
	p = NULL;
	ok(kt_id_path(&p, NULL, s, sb.id));
	assert_string_equal(p, "/h/i/x");
	kt_free(p);
	assert_int_equal(lstat_of(s, "/h/i/x").nlink, 1);
	assert_clean(s);
}

static void test_alias__rename_onto_other_path_of_same_node_is_noop(
	void **state)
{
	kt_store *s = store_of(state);
	char *before, *after;

	make_three(s, "v", 1);
	before = kt_test_digest(s);
	tick();
	ok(kt_rename(s, "/a", "/d/b", 0));
	ok(kt_rename(s, "/e/f/c", "/a", 0));
	ok(kt_rename(s, "/d/b", "/e/f/c", KT_RENAME_EXCHANGE));
	after = kt_test_digest(s);
	assert_string_equal(before, after);
	free(before);
	free(after);
	assert_one_node(s, three, N(three));
}

static void test_alias__rename_noreplace_onto_other_path_is_eexists(
	void **state)
{
	kt_store *s = store_of(state);

	make_three(s, "v", 1);
	kt_assert_rejected(s, kt_rename(s, "/a", "/d/b", KT_RENAME_NOREPLACE),
			   KT_EEXISTS, "/d/b");
	assert_one_node(s, three, N(three));
}

/* A plain node renamed over one path of a node with several replaces only
 * that path; the other node loses one link. */
static void test_alias__rename_over_one_path_of_other_node(void **state)
{
	kt_store *s = store_of(state);
	static const char *const left[] = {"/a", "/e/f/c"};
	kt_statbuf sb, other;

	make_three(s, "three", 5);
	put_str(s, "/plain", "plain");
	other = lstat_of(s, "/plain");
	ok(kt_rename(s, "/plain", "/d/b", 0));
	sb = lstat_of(s, "/d/b");
	assert_int_equal(sb.id, other.id);
	assert_int_equal(sb.nlink, 1);
	assert_value(s, "/d/b", "plain");
	sb = assert_one_node(s, left, N(left));
	assert_value(s, "/a", "three");
	assert_id_path_in(s, sb.id, left, N(left));
	assert_clean(s);

	/* A path of a node with several over a path of another: each
	 * loses or moves one path. */
	put_str(s, "/m", "m");
	ok(kt_link(s, "/m", "/m2"));
	ok(kt_rename(s, "/m2", "/a", 0));
	{
		static const char *const mpaths[] = {"/m", "/a"};
		assert_one_node(s, mpaths, N(mpaths));
		assert_value(s, "/a", "m");
	}
	sb = lstat_of(s, "/e/f/c");
	assert_int_equal(sb.nlink, 1);
	assert_value(s, "/e/f/c", "three");
	assert_clean(s);

	/* Over the last path of a node: its data goes. */
	{
		kt_store_stats st;
		ok(kt_rename(s, "/m", "/e/f/c", 0));
		ok(kt_stats(&st, s));
		assert_int_equal(st.items, 2); /* /d/b and /a=/e/f/c */
		assert_int_equal(st.aliases, 1);
		assert_int_equal(st.value_bytes, 5 + 1);
		assert_id_path_in(s, sb.id, NULL, 0);
	}
	assert_clean(s);
}

static void test_alias__rename_exchange_with_aliased_node(void **state)
{
	kt_store *s = store_of(state);
	static const char *const a_now[] = {"/a", "/e/f/c", "/plain"};
	kt_statbuf a, p;

	make_three(s, "three", 5);
	put_str(s, "/plain", "plain");
	a = lstat_of(s, "/a");
	p = lstat_of(s, "/plain");
	ok(kt_rename(s, "/plain", "/d/b", KT_RENAME_EXCHANGE));
	assert_int_equal(lstat_of(s, "/d/b").id, p.id);
	assert_int_equal(lstat_of(s, "/d/b").nlink, 1);
	assert_value(s, "/d/b", "plain");
	assert_one_node(s, a_now, N(a_now));
	assert_int_equal(lstat_of(s, "/plain").id, a.id);
	assert_id_path_in(s, a.id, a_now, N(a_now));
	assert_clean(s);

	/* Two nodes with several paths each. */
	ok(kt_link(s, "/d/b", "/q"));
	ok(kt_rename(s, "/plain", "/q", KT_RENAME_EXCHANGE));
	{
		static const char *const a2[] = {"/a", "/e/f/c", "/q"};
		static const char *const p2[] = {"/d/b", "/plain"};
		assert_one_node(s, a2, N(a2));
		assert_one_node(s, p2, N(p2));
		assert_value(s, "/q", "three");
		assert_value(s, "/plain", "plain");
	}
	assert_clean(s);

	/* Directories holding paths of the same node swap places. */
	ok(kt_link(s, "/a", "/x/in"));
	ok(kt_link(s, "/d/b", "/w/in"));
	ok(kt_rename(s, "/x", "/w", KT_RENAME_EXCHANGE));
	assert_int_equal(lstat_of(s, "/w/in").id, a.id);
	assert_int_equal(lstat_of(s, "/x/in").id, p.id);
	{
		static const char *const a3[] = {"/a", "/e/f/c", "/q", "/w/in"};
		static const char *const p3[] = {"/d/b", "/plain", "/x/in"};
		assert_one_node(s, a3, N(a3));
		assert_one_node(s, p3, N(p3));
	}
	assert_clean(s);
}

/* ------------------------------------------------------------------------ */
/* What kt_link refuses */

static void test_alias__link_of_directory_is_eperm(void **state)
{
	kt_store *s = store_of(state);

	ok(kt_mkdir(s, "/dir", NULL));
	put_str(s, "/both", "v");
	put_str(s, "/both/child", "c");
	kt_assert_rejected(s, kt_link(s, "/dir", "/new"), KT_EPERM, "/dir");
	kt_assert_rejected(s, kt_link(s, "/both", "/new"), KT_EPERM, "/both");
	kt_assert_rejected(s, kt_link(s, "/", "/new"), KT_EPERM, "/");
	/* An empty item+directory is still a directory. */
	ok(kt_mkdir(s, "/emptyboth", NULL));
	put_str(s, "/emptyboth", "v");
	kt_assert_rejected(s, kt_link(s, "/emptyboth", "/new"), KT_EPERM,
			   "/emptyboth");
	/* Through a symlink to a directory in a middle component. */
	ok(kt_symlink(s, "/ld", "/both", NULL));
	ok(kt_mkdir(s, "/both/sub", NULL));
	kt_assert_rejected(s, kt_link(s, "/ld/sub", "/new"), KT_EPERM,
			   "/ld/sub");
	assert_absent(s, "/new");
}

static void test_alias__link_onto_existing_path_is_eexists(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a", "v");
	put_str(s, "/item", "i");
	ok(kt_mkdir(s, "/dir", NULL));
	ok(kt_symlink(s, "/sl", "/item", NULL));
	ok(kt_symlink(s, "/dangling", "/nowhere", NULL));
	ok(kt_mknod(s, "/fifo", KT_TYPE_FIFO, 0, NULL));
	kt_assert_rejected(s, kt_link(s, "/a", "/item"), KT_EEXISTS, "/item");
	kt_assert_rejected(s, kt_link(s, "/a", "/dir"), KT_EEXISTS, "/dir");
	kt_assert_rejected(s, kt_link(s, "/a", "/sl"), KT_EEXISTS, "/sl");
	kt_assert_rejected(s, kt_link(s, "/a", "/dangling"), KT_EEXISTS,
			   "/dangling");
	kt_assert_rejected(s, kt_link(s, "/a", "/fifo"), KT_EEXISTS, "/fifo");
	kt_assert_rejected(s, kt_link(s, "/a", "/a"), KT_EEXISTS, "/a");
	kt_assert_rejected(s, kt_link(s, "/a", "/"), KT_EEXISTS, "/a");
	/* Onto another path of the same node. */
	ok(kt_link(s, "/a", "/b"));
	kt_assert_rejected(s, kt_link(s, "/a", "/b"), KT_EEXISTS, "/b");
	assert_int_equal(lstat_of(s, "/a").nlink, 2);
}

static void test_alias__link_of_missing_node_is_enotfound(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a", "v");
	kt_assert_rejected(s, kt_link(s, "/missing", "/new"), KT_ENOTFOUND,
			   "/missing");
	kt_assert_rejected(s, kt_link(s, "/nodir/missing", "/new"),
			   KT_ENOTFOUND, "/nodir");
	assert_absent(s, "/new");
	/* Bad paths. */
	kt_assert_rejected(s, kt_link(s, "a", "/new"), KT_EINVAL, "a");
	kt_assert_rejected(s, kt_link(s, "/a", "/new/"), KT_EINVAL, "/new/");
	kt_assert_rejected(s, kt_link(s, "/a", "/x//y"), KT_EINVAL, "/x//y");
}

/* An item with several paths cannot gain children, whichever call would
 * make one and through whichever path. */
static void test_alias__multi_path_item_cannot_gain_children(void **state)
{
	kt_store *s = store_of(state);
	uint64_t oid = 0;

	put_str(s, "/a", "v");
	ok(kt_link(s, "/a", "/b"));
	put_str(s, "/other", "o");
	ok(kt_symlink(s, "/la", "/a", NULL));
	kt_assert_rejected(s, kt_put(s, "/a/child", "c", 1, NULL), KT_EPERM,
			   "/a");
	kt_assert_rejected(s, kt_put(s, "/b/c/d", "c", 1, NULL), KT_EPERM,
			   "/b");
	/* Through a link to the item, as for any item: KT_ENOTDIR. */
	kt_assert_rejected(s, kt_put(s, "/la/child", "c", 1, NULL),
			   KT_ENOTDIR, "/a");
	kt_assert_rejected(s, kt_mkdir(s, "/a", NULL), KT_EPERM, "/a");
	kt_assert_rejected(s, kt_mkdir(s, "/b", NULL), KT_EPERM, "/b");
	/* kt_mkdir makes an item a directory only with
	 * KT_CREATE_PARENTS (without, an item parent is KT_ENOTDIR). */
	{
		kt_create_options po = KT_CREATE_OPTIONS_INIT;
		po.flags = KT_CREATE_PARENTS;
		kt_assert_rejected(s, kt_mkdir(s, "/a/sub", &po), KT_EPERM,
				   "/a");
		kt_assert_rejected(s, kt_mkdir(s, "/b", &po), KT_EPERM, "/b");
		kt_assert_rejected(s, kt_mkdir(s, "/b/s/t", &po), KT_EPERM,
				   "/b");
	}
	kt_assert_rejected(s, kt_symlink(s, "/b/l", "/x", NULL), KT_EPERM,
			   "/b");
	kt_assert_rejected(s, kt_mknod(s, "/a/f", KT_TYPE_FIFO, 0, NULL),
			   KT_EPERM, "/a");
	kt_assert_rejected(s, kt_link(s, "/other", "/a/o"), KT_EPERM, "/a");
	/* A link of the item below one of its own paths. */
	kt_assert_rejected(s, kt_link(s, "/a", "/b/self"), KT_EPERM, "/b");
	ok(kt_orphan_new(&oid, s, NULL));
	kt_assert_rejected(s, kt_orphan_link(s, oid, "/a/orphan"), KT_EPERM,
			   "/a");
	ok(kt_orphan_release(s, oid));
	assert_one_node(s, (const char *const[]){"/a", "/b"}, 2);
	assert_int_equal(lstat_of(s, "/a").kind, KT_KIND_ITEM);
}

/* Linking an item below its own path would make it a directory first. */
static void test_alias__link_below_itself_is_eperm(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a", "v");
	kt_assert_rejected(s, kt_link(s, "/a", "/a/self"), KT_EPERM, "/a");
	assert_int_equal(lstat_of(s, "/a").kind, KT_KIND_ITEM);
	assert_int_equal(lstat_of(s, "/a").nlink, 1);
}

/* Ancestors of the new path: a link to a directory is followed; a
 * dangling link, a link to an item or a special file is refused as
 * kt_put refuses it. */
static void test_alias__link_newpath_through_links(void **state)
{
	kt_store *s = store_of(state);
	int put_rc;

	put_str(s, "/a", "v");
	ok(kt_mkdir(s, "/d", NULL));
	ok(kt_symlink(s, "/ld", "/d", NULL));
	ok(kt_link(s, "/a", "/ld/x"));
	assert_one_node(s, (const char *const[]){"/a", "/d/x"}, 2);
	assert_int_equal(lstat_of(s, "/ld").kind, KT_KIND_LINK);

	ok(kt_symlink(s, "/dl", "/nowhere", NULL));
	put_rc = kt_put(s, "/dl/y", "v", 1, NULL);
	assert_true(put_rc < 0);
	kt_assert_rejected(s, kt_link(s, "/a", "/dl/y"), put_rc, "/dl");
	assert_absent(s, "/nowhere");

	ok(kt_mknod(s, "/fifo", KT_TYPE_FIFO, 0, NULL));
	kt_assert_rejected(s, kt_link(s, "/a", "/fifo/y"), KT_ENOTDIR,
			   "/fifo");
	/* An existing path through links in the middle is followed. */
	ok(kt_link(s, "/ld/x", "/z"));
	assert_one_node(s, (const char *const[]){"/a", "/d/x", "/z"}, 3);
}

/* link(2) does not follow a link in the last component of existing: the
 * symbolic link itself gets the second path. */
static void test_alias__link_of_symlink_links_the_symlink(void **state)
{
	kt_store *s = store_of(state);
	static const char *const lp[] = {"/sl", "/d/sl2"};
	kt_store_stats st;
	kt_statbuf sb;
	char *t = NULL;
	size_t i;

	put_str(s, "/target", "tv");
	ok(kt_symlink(s, "/sl", "/target", NULL));
	ok(kt_link(s, "/sl", "/d/sl2"));
	sb = assert_one_node(s, lp, N(lp));
	assert_int_equal(sb.kind, KT_KIND_LINK);
	assert_int_equal(lstat_of(s, "/target").nlink, 1);
	for (i = 0; i < N(lp); i++) {
		ok(kt_readlink(&t, NULL, s, lp[i]));
		assert_string_equal(t, "/target");
		kt_free(t);
		assert_value(s, lp[i], "tv");
	}
	ok(kt_stats(&st, s));
	assert_int_equal(st.links, 1);
	assert_int_equal(st.aliases, 1);
	assert_int_equal(st.items, 1);
	/* A dangling link can be linked too. */
	ok(kt_symlink(s, "/dangling", "/nowhere", NULL));
	ok(kt_link(s, "/dangling", "/dangling2"));
	assert_int_equal(lstat_of(s, "/dangling2").nlink, 2);
	ok(kt_readlink(&t, NULL, s, "/dangling2"));
	assert_string_equal(t, "/nowhere");
	kt_free(t);
	/* A metadata change through one path of the link (no follow). */
	{
		kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
		kt_statbuf tb = lstat_of(s, "/target");
		sa.mask = KT_SET_UID;
		sa.uid = tb.uid + 77;
		ok(kt_setattr(s, "/d/sl2", &sa, KT_NOFOLLOW));
		sb = assert_one_node(s, lp, N(lp));
		assert_int_equal(sb.uid, tb.uid + 77);
		assert_int_equal(lstat_of(s, "/target").uid, tb.uid);
	}
	ok(kt_delete(s, "/sl", 0));
	assert_int_equal(lstat_of(s, "/d/sl2").nlink, 1);
	assert_value(s, "/d/sl2", "tv");
	assert_value(s, "/target", "tv");
	assert_clean(s);
}

static void test_alias__link_of_special_file(void **state)
{
	kt_store *s = store_of(state);
	static const char *const sp[] = {"/dev0", "/d/dev1"};
	kt_store_stats st;
	kt_statbuf sb;

	ok(kt_mknod(s, "/dev0", KT_TYPE_CHR, 0x0501, NULL));
	ok(kt_link(s, "/dev0", "/d/dev1"));
	sb = assert_one_node(s, sp, N(sp));
	assert_int_equal(sb.kind, KT_KIND_SPECIAL);
	assert_int_equal(sb.type, KT_TYPE_CHR);
	assert_int_equal(sb.rdev, 0x0501);
	ok(kt_stats(&st, s));
	assert_int_equal(st.specials, 1);
	assert_int_equal(st.aliases, 1);
	ok(kt_attr_set(s, "/d/dev1", "user.s", "sv", 2, 0));
	assert_one_node(s, sp, N(sp));
	assert_attr(s, "/dev0", "user.s", "sv");
	kt_assert_rejected(s, kt_put(s, "/dev0/x", "x", 1, NULL), KT_ENOTDIR,
			   "/dev0");
}

/* ------------------------------------------------------------------------ */
/* Orphans */

static void test_alias__orphan_detach_of_multi_path_item_is_eperm(
	void **state)
{
	kt_store *s = store_of(state);
	uint64_t id = 1;
	kt_statbuf sb;

	make_three(s, "v", 1);
	kt_assert_rejected(s, kt_orphan_detach(&id, s, "/d/b"), KT_EPERM,
			   "/d/b");
	kt_assert_rejected(s, kt_orphan_detach(&id, s, "/a"), KT_EPERM, "/a");
	/* With one path left, it is an ordinary item again. */
	ok(kt_delete(s, "/a", 0));
	ok(kt_delete(s, "/d/b", 0));
	sb = lstat_of(s, "/e/f/c");
	ok(kt_orphan_detach(&id, s, "/e/f/c"));
	assert_int_equal(id, sb.id);
	ok(kt_orphan_stat(&sb, s, id));
	assert_int_equal(sb.nlink, 1);
	ok(kt_orphan_release(s, id));
	assert_clean(s);
}

static void test_alias__orphan_copy_of_multi_path_item(void **state)
{
	kt_store *s = store_of(state);
	unsigned char *big = pattern(2 * INLINE_MAX + 9, 7);
	kt_statbuf sb, orig;
	unsigned char *buf = malloc(2 * INLINE_MAX + 9);
	size_t got = 0;
	uint64_t id = 0;

	assert_non_null(buf);
	make_three(s, big, 2 * INLINE_MAX + 9);
	ok(kt_attr_set(s, "/a", "user.k", "kv", 2, 0));
	orig = lstat_of(s, "/d/b");
	ok(kt_orphan_copy(&id, s, "/d/b"));
	assert_true(id != orig.id);
	ok(kt_orphan_stat(&sb, s, id));
	assert_int_equal(sb.nlink, 1);
	assert_int_equal(sb.size, 2 * INLINE_MAX + 9);
	ok(kt_orphan_read(&got, s, id, buf, 2 * INLINE_MAX + 9, 0));
	assert_int_equal(got, 2 * INLINE_MAX + 9);
	assert_memory_equal(buf, big, got);
	/* The original is unchanged, still three paths. */
	sb = assert_one_node(s, three, N(three));
	assert_stat_equal(&orig, &sb, "before copy", "after copy");
	/* The copy is its own node. */
	ok(kt_orphan_link(s, id, "/copy"));
	sb = lstat_of(s, "/copy");
	assert_int_equal(sb.nlink, 1);
	assert_int_equal(sb.id, id);
	assert_attr(s, "/copy", "user.k", "kv");
	put_str(s, "/copy", "changed");
	assert_value_bytes(s, "/a", big, 2 * INLINE_MAX + 9);
	free(big);
	free(buf);
}

/* ------------------------------------------------------------------------ */
/* Batches */

static void test_alias__batch_link_with_other_ops(void **state)
{
	kt_store *s = store_of(state);
	static const char *const paths[] = {"/a", "/b/c"};
	kt_batch *b = NULL;
	kt_statbuf sb;

	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/a", "first", 5, NULL));
	ok(kt_batch_link(b, "/a", "/b/c"));
	ok(kt_batch_attr_set(b, "/b/c", "user.k", "kv", 2, 0));
	ok(kt_batch_put(b, "/a", "second", 6, NULL));
	ok(kt_batch_put(b, "/x", "x", 1, NULL));
	ok(kt_batch_link(b, "/x", "/y"));
	ok(kt_batch_delete(b, "/x", 0)); /* a move by link and unlink */
	ok(kt_batch_commit(b));
	kt_batch_free(b);
	sb = assert_one_node(s, paths, N(paths));
	assert_int_equal(sb.nlink, 2);
	assert_value(s, "/b/c", "second");
	assert_attr(s, "/a", "user.k", "kv");
	assert_absent(s, "/x");
	sb = lstat_of(s, "/y");
	assert_int_equal(sb.nlink, 1);
	assert_id_path_in(s, sb.id, (const char *const[]){"/y"}, 1);
	assert_clean(s);
}

static void test_alias__failing_batch_leaves_nothing(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;

	put_str(s, "/a", "v");
	ok(kt_link(s, "/a", "/b"));

	/* The link succeeds, a later op fails: no trace of either. */
	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/n", "n", 1, NULL));
	ok(kt_batch_link(b, "/n", "/m"));
	ok(kt_batch_link(b, "/a", "/c"));
	ok(kt_batch_put(b, "/a", "changed", 7, NULL));
	ok(kt_batch_link(b, "/n", "/m"));
	kt_assert_rejected(s, kt_batch_commit(b), KT_EEXISTS, "/m");
	kt_batch_free(b);
	assert_absent(s, "/n");
	assert_absent(s, "/c");

	/* A delete of a path, then a child below the other: refused. */
	ok(kt_batch_new(&b, s));
	ok(kt_batch_link(b, "/a", "/c"));
	ok(kt_batch_delete(b, "/b", 0));
	ok(kt_batch_put(b, "/a/child", "c", 1, NULL));
	kt_assert_rejected(s, kt_batch_commit(b), KT_EPERM, "/a");
	kt_batch_free(b);

	/* KT_EMLINK is not reached but a link of a directory is. */
	ok(kt_batch_new(&b, s));
	ok(kt_batch_delete(b, "/b", KT_DELETE_ALL_PATHS));
	ok(kt_batch_mkdir(b, "/dir", NULL));
	ok(kt_batch_link(b, "/dir", "/dir2"));
	kt_assert_rejected(s, kt_batch_commit(b), KT_EPERM, "/dir");
	kt_batch_free(b);
	assert_one_node(s, (const char *const[]){"/a", "/b"}, 2);
	assert_value(s, "/b", "v");
}

/* ------------------------------------------------------------------------ */
/* Persistence, statistics, ids */

static void test_alias__survives_reopen(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf before, after;
	kt_store_stats st;
	char *d0, *d1;

	make_three(f->store, "persist", 7);
	ok(kt_attr_set(f->store, "/d/b", "user.k", "kv", 2, 0));
	ok(kt_delete(f->store, "/a", 0)); /* the id row names another now */
	ok(kt_link(f->store, "/e/f/c", "/a"));
	before = assert_one_node(f->store, three, N(three));
	d0 = kt_test_digest(f->store);
	kt_test_reopen(f);
	d1 = kt_test_digest(f->store);
	assert_string_equal(d0, d1);
	free(d0);
	free(d1);
	after = assert_one_node(f->store, three, N(three));
	assert_stat_equal(&before, &after, "before reopen", "after reopen");
	assert_id_path_in(f->store, after.id, three, N(three));
	ok(kt_stats(&st, f->store));
	assert_int_equal(st.aliases, 2);
	assert_clean(f->store);
	/* Still one node after the reopen: a change reaches every path. */
	ok(kt_write(f->store, "/a", "P", 1, 0));
	assert_one_node(f->store, three, N(three));
	assert_value(f->store, "/d/b", "Persist");
	ok(kt_delete(f->store, "/d/b", KT_DELETE_ALL_PATHS));
	kt_test_reopen(f);
	assert_absent(f->store, "/a");
	assert_absent(f->store, "/e/f/c");
	assert_clean(f->store);
}

static void test_alias__stats_count_node_once(void **state)
{
	kt_store *s = store_of(state);
	kt_store_stats before, st;

	ok(kt_stats(&before, s));
	assert_int_equal(before.aliases, 0);
	make_three(s, "12345", 5);
	ok(kt_attr_set(s, "/a", "user.k", "kv", 2, 0));
	ok(kt_stats(&st, s));
	assert_int_equal(st.items, before.items + 1);
	assert_int_equal(st.aliases, 2);
	assert_int_equal(st.value_bytes, before.value_bytes + 5);
	assert_int_equal(st.attrs, before.attrs + 1);
	/* /d, /e, /e/f */
	assert_int_equal(st.dirs, before.dirs + 3);
	put_str(s, "/single", "1");
	ok(kt_stats(&st, s));
	assert_int_equal(st.items, before.items + 2);
	assert_int_equal(st.aliases, 2);
	ok(kt_link(s, "/single", "/single2"));
	ok(kt_stats(&st, s));
	assert_int_equal(st.items, before.items + 2);
	assert_int_equal(st.aliases, 3);
	assert_int_equal(st.value_bytes, before.value_bytes + 6);
}

static void test_alias__id_read_and_id_lstat(void **state)
{
	kt_store *s = store_of(state);
	unsigned char *big = pattern(INLINE_MAX + 50, 8);
	unsigned char buf[64];
	kt_statbuf sb, by_id;
	char *p = NULL;
	size_t got = 0, len = 0;

	make_three(s, big, INLINE_MAX + 50);
	sb = assert_one_node(s, three, N(three));
	ok(kt_id_read(&got, s, sb.id, buf, sizeof(buf), INLINE_MAX));
	assert_int_equal(got, 50);
	assert_memory_equal(buf, big + INLINE_MAX, 50);
	ok(kt_id_lstat(&by_id, &p, &len, s, sb.id));
	assert_stat_equal(&sb, &by_id, "lstat", "id_lstat");
	assert_int_equal(by_id.nlink, 3);
	assert_int_equal(len, strlen(p));
	assert_id_path_in(s, sb.id, three, N(three));
	kt_free(p);
	/* Through the id after a change through one path. */
	ok(kt_write(s, "/e/f/c", "ZZ", 2, 0));
	ok(kt_id_read(&got, s, sb.id, buf, 4, 0));
	assert_int_equal(got, 4);
	assert_memory_equal(buf, "ZZ", 2);
	assert_memory_equal(buf + 2, big + 2, 2);
	ok(kt_id_lstat(&by_id, NULL, NULL, s, sb.id));
	sb = lstat_of(s, "/d/b");
	assert_stat_equal(&sb, &by_id, "lstat", "id_lstat");
	assert_int_equal(by_id.nlink, 3);
	free(big);
}

/* ------------------------------------------------------------------------ */
/* More edges */

/* kt_link does not follow a link in the last component even when it
 * points at a directory: the symbolic link gets the path, the directory
 * is untouched. */
static void test_alias__link_of_symlink_to_directory(void **state)
{
	kt_store *s = store_of(state);
	static const char *const lp[] = {"/ld", "/ld2"};
	kt_statbuf dir, sb;

	ok(kt_mkdir(s, "/d", NULL));
	put_str(s, "/d/x", "dx");
	ok(kt_symlink(s, "/ld", "/d", NULL));
	dir = lstat_of(s, "/d");
	ok(kt_link(s, "/ld", "/ld2"));
	sb = assert_one_node(s, lp, N(lp));
	assert_int_equal(sb.kind, KT_KIND_LINK);
	assert_value(s, "/ld2/x", "dx");
	sb = lstat_of(s, "/d");
	assert_int_equal(sb.nlink, 1);
	assert_int_equal(sb.version, dir.version);
	/* Writing below the linked link lands in the directory. */
	put_str(s, "/ld2/y", "dy");
	assert_value(s, "/d/y", "dy");
	assert_clean(s);
}

/* The parent of the new path gains a child: its mtime and ctime move;
 * unlinking one path moves those of that path's parent. */
static void test_alias__link_and_unlink_touch_the_parent(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf p0, p1, other;

	put_str(s, "/a", "v");
	ok(kt_mkdir(s, "/d", NULL));
	ok(kt_mkdir(s, "/o", NULL));
	p0 = lstat_of(s, "/d");
	other = lstat_of(s, "/o");
	tick();
	ok(kt_link(s, "/a", "/d/b"));
	p1 = lstat_of(s, "/d");
	assert_true(p1.mtime_ns > p0.mtime_ns);
	assert_true(p1.ctime_ns > p0.ctime_ns);
	assert_int_equal(lstat_of(s, "/o").version, other.version);
	tick();
	ok(kt_delete(s, "/d/b", 0));
	p0 = lstat_of(s, "/d");
	assert_true(p0.mtime_ns > p1.mtime_ns);
	assert_int_equal(lstat_of(s, "/a").nlink, 1);
}

/* A conditional put sees the node's one version through any path. */
static void test_alias__if_version_through_other_path(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_statbuf sb;

	make_three(s, "v1", 2);
	sb = lstat_of(s, "/a");
	o.flags = KT_CREATE_IF_VERSION;
	o.if_version = sb.version;
	ok(kt_put(s, "/e/f/c", "v2", 2, &o));
	assert_one_node(s, three, N(three));
	/* The old version is stale through every path now. */
	kt_assert_rejected(s, kt_put(s, "/d/b", "v3", 2, &o), KT_ECONFLICT,
			   "/d/b");
	o.flags = KT_CREATE_EXCL;
	kt_assert_rejected(s, kt_put(s, "/d/b", "v3", 2, &o), KT_EEXISTS,
			   "/d/b");
	assert_value(s, "/a", "v2");
}

/* KT_DELETE_ITEM on an item (not a directory) with several paths removes
 * that path only, as a plain delete does. */
static void test_alias__delete_item_flag_removes_one_path(void **state)
{
	kt_store *s = store_of(state);
	static const char *const rest[] = {"/a", "/e/f/c"};

	make_three(s, "v", 1);
	ok(kt_delete(s, "/d/b", KT_DELETE_ITEM));
	assert_absent(s, "/d/b");
	assert_one_node(s, rest, N(rest));
	assert_value(s, "/a", "v");
	/* Recursive and prune on a path with others: the same, and the
	 * emptied parents go. */
	ok(kt_delete(s, "/e/f/c", KT_DELETE_RECURSIVE | KT_DELETE_PRUNE));
	assert_absent(s, "/e");
	assert_int_equal(lstat_of(s, "/a").nlink, 1);
	assert_value(s, "/a", "v");
	assert_clean(s);
}

/* KT_DELETE_ALL_PATHS with KT_DELETE_PRUNE: the parents of the path
 * given are pruned; the node is gone under every path. */
static void test_alias__delete_all_paths_with_prune(void **state)
{
	kt_store *s = store_of(state);

	make_three(s, "v", 1);
	ok(kt_delete(s, "/e/f/c", KT_DELETE_ALL_PATHS | KT_DELETE_PRUNE));
	assert_absent(s, "/a");
	assert_absent(s, "/d/b");
	assert_absent(s, "/e/f/c");
	assert_absent(s, "/e");
	assert_clean(s);
}

/* A directory holding two paths of one node moves with both. */
static void test_alias__rename_dir_holding_two_paths(void **state)
{
	kt_store *s = store_of(state);
	static const char *const now[] = {"/n/x", "/n/s/y", "/out"};
	kt_statbuf sb;

	put_str(s, "/d/x", "v");
	ok(kt_link(s, "/d/x", "/d/s/y"));
	ok(kt_link(s, "/d/s/y", "/out"));
	ok(kt_rename(s, "/d", "/n", 0));
	assert_absent(s, "/d");
	sb = assert_one_node(s, now, N(now));
	assert_id_path_in(s, sb.id, now, N(now));
	assert_clean(s);
	ok(kt_delete(s, "/n/x", 0));
	ok(kt_delete(s, "/n/s/y", 0));
	assert_int_equal(lstat_of(s, "/out").nlink, 1);
	assert_id_path_in(s, sb.id, &now[2], 1);
	assert_clean(s);
}

/* Exchanging two directories that each hold a path of the same node. */
static void test_alias__exchange_dirs_holding_paths_of_one_node(
	void **state)
{
	kt_store *s = store_of(state);
	static const char *const now[] = {"/x/one", "/y/two"};
	kt_statbuf sb;

	put_str(s, "/x/one", "v");
	ok(kt_link(s, "/x/one", "/y/two"));
	put_str(s, "/y/plain", "p");
	ok(kt_rename(s, "/x", "/y", KT_RENAME_EXCHANGE));
	assert_absent(s, "/x/one");
	assert_absent(s, "/y/two");
	assert_absent(s, "/y/plain");
	assert_value(s, "/x/plain", "p");
	{
		static const char *const swapped[] = {"/y/one", "/x/two"};
		sb = assert_one_node(s, swapped, N(swapped));
		assert_id_path_in(s, sb.id, swapped, N(swapped));
	}
	assert_clean(s);
	ok(kt_rename(s, "/x", "/y", KT_RENAME_EXCHANGE));
	assert_one_node(s, now, N(now));
	assert_id_path_in(s, sb.id, now, N(now));
	assert_clean(s);
}

/* Recursive delete of a directory holding the only path of a node and
 * one of another's, in one batch with a link that gives the second node a
 * new path first. */
static void test_alias__batch_link_rename_delete(void **state)
{
	kt_store *s = store_of(state);
	static const char *const now[] = {"/keep", "/moved"};
	kt_batch *b = NULL;
	kt_statbuf sb;

	put_str(s, "/d/x", "x");
	put_str(s, "/d/y", "y");
	ok(kt_batch_new(&b, s));
	ok(kt_batch_link(b, "/d/y", "/keep"));
	ok(kt_batch_link(b, "/keep", "/tmp"));
	ok(kt_batch_rename(b, "/tmp", "/moved", 0));
	ok(kt_batch_delete(b, "/d", KT_DELETE_RECURSIVE));
	ok(kt_batch_commit(b));
	kt_batch_free(b);
	assert_absent(s, "/d");
	assert_absent(s, "/tmp");
	sb = assert_one_node(s, now, N(now));
	assert_value(s, "/moved", "y");
	assert_id_path_in(s, sb.id, now, N(now));
	assert_clean(s);

	/* Delete of every path in a batch, one by one, then a new node at
	 * one of them: a new id. */
	ok(kt_batch_new(&b, s));
	ok(kt_batch_delete(b, "/keep", 0));
	ok(kt_batch_delete(b, "/moved", 0));
	ok(kt_batch_put(b, "/keep", "new", 3, NULL));
	ok(kt_batch_commit(b));
	kt_batch_free(b);
	assert_absent(s, "/moved");
	assert_int_equal(lstat_of(s, "/keep").nlink, 1);
	assert_true(lstat_of(s, "/keep").id != sb.id);
	assert_id_path_in(s, sb.id, NULL, 0);
	assert_clean(s);
}

/* An orphan given a path onto an existing path of a node with several is
 * refused. */
static void test_alias__orphan_link_onto_alias_path_is_eexists(void **state)
{
	kt_store *s = store_of(state);
	uint64_t id = 0;

	make_three(s, "v", 1);
	ok(kt_orphan_new(&id, s, NULL));
	kt_assert_rejected(s, kt_orphan_link(s, id, "/d/b"), KT_EEXISTS,
			   "/d/b");
	ok(kt_orphan_link(s, id, "/fresh"));
	ok(kt_link(s, "/fresh", "/fresh2"));
	assert_one_node(s, (const char *const[]){"/fresh", "/fresh2"}, 2);
	assert_int_equal(lstat_of(s, "/fresh2").id, id);
}

/* kt_repair finds nothing to repair in a store with aliases made through
 * the API, and changes nothing. */
static void test_alias__repair_of_clean_store_changes_nothing(void **state)
{
	kt_store *s = store_of(state);
	size_t fixed = 99;
	char *before, *after;

	make_three(s, "v", 1);
	ok(kt_symlink(s, "/sl", "/a", NULL));
	ok(kt_link(s, "/sl", "/sl2"));
	ok(kt_delete(s, "/a", 0));
	before = kt_test_digest(s);
	ok(kt_repair(&fixed, s, NULL));
	assert_int_equal(fixed, 0);
	after = kt_test_digest(s);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

/* Up to KT_LINK_MAX paths in one batch; one more in the same batch fails
 * it whole. */
static void test_alias__link_max_in_one_batch(void **state)
{
	kt_store *s = store_of(state);
	kt_batch *b = NULL;
	char path[64];
	int i;

	KT_TEST_LONG_ON_RADOS_BECAUSE(
		"the refused and the accepted batch, the digests around the "
		"refused link and kt_check each go through all 1024 copies of "
		"the node row, 20 to 25 s there, a third of the suite's time");
	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/n0", "v", 1, NULL));
	for (i = 1; i <= KT_LINK_MAX; i++) {
		snprintf(path, sizeof(path), "/d/n%d", i);
		ok(kt_batch_link(b, "/n0", path));
	}
	kt_assert_rejected(s, kt_batch_commit(b), KT_EMLINK, "/n0");
	kt_batch_free(b);
	assert_absent(s, "/n0");
	assert_absent(s, "/d");

	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/n0", "v", 1, NULL));
	for (i = 1; i < KT_LINK_MAX; i++) {
		snprintf(path, sizeof(path), "/d/n%d", i);
		ok(kt_batch_link(b, "/n0", path));
	}
	ok(kt_batch_commit(b));
	kt_batch_free(b);
	assert_int_equal(lstat_of(s, "/n0").nlink, KT_LINK_MAX);
	assert_int_equal(lstat_of(s, "/d/n1023").nlink, KT_LINK_MAX);
	assert_int_equal(lstat_of(s, "/d/n1023").version,
			 lstat_of(s, "/n0").version);
	kt_assert_rejected(s, kt_link(s, "/d/n9", "/d/more"), KT_EMLINK,
			   "/d/n9");
}

struct appender {
	kt_store *s;
	const char *path;
	char byte;
	int rc;
};

/* Appends per thread: 200, and 40 on a short run on RADOS (kt_test.h). */
static int appends_per_thread = 200;

static void *append_loop(void *arg)
{
	struct appender *a = arg;
	int i;

	for (i = 0; i < appends_per_thread && a->rc == 0; i++)
		a->rc = kt_write(a->s, a->path, &a->byte, 1, KT_APPEND);
	return NULL;
}

/* Appends through different paths at the same time never overwrite each
 * other: there is one value and one end. */
static void test_alias__concurrent_appends_through_two_paths(void **state)
{
	kt_store *s = store_of(state);
	struct appender a[3] = {{s, "/a", 'a', 0}, {s, "/d/b", 'b', 0},
				{s, "/e/f/c", 'c', 0}};
	pthread_t t[3];
	void *v = NULL;
	size_t len = 0, i, count[3] = {0, 0, 0};
	const size_t n = (size_t)kt_test_scale(200, 40);

	appends_per_thread = (int)n;
	make_three(s, "", 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, append_loop,
						&a[i]), 0);
	for (i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		if (a[i].rc != 0)
			fail_msg("append through %s: %d", a[i].path, a[i].rc);
	}
	assert_one_node(s, three, N(three));
	ok(kt_get(&v, &len, s, "/d/b"));
	assert_int_equal(len, 3 * n);
	for (i = 0; i < len; i++) {
		char c = ((char *)v)[i];
		assert_true(c >= 'a' && c <= 'c');
		count[c - 'a']++;
	}
	assert_int_equal(count[0], n);
	assert_int_equal(count[1], n);
	assert_int_equal(count[2], n);
	kt_free(v);
	assert_clean(s);
}

/* A plain item on the way to the new path becomes an item and directory,
 * as kt_put makes it. */
static void test_alias__link_through_plain_item_ancestor(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf sb;

	put_str(s, "/a", "v");
	put_str(s, "/plain", "p");
	ok(kt_link(s, "/a", "/plain/x"));
	sb = lstat_of(s, "/plain");
	assert_int_equal(sb.kind, KT_KIND_ITEM | KT_KIND_DIR);
	assert_value(s, "/plain", "p");
	assert_one_node(s, (const char *const[]){"/a", "/plain/x"}, 2);
	assert_clean(s);
}

/* KT_DELETE_ALL_PATHS on a symbolic link with two paths removes both
 * links, not the target. */
static void test_alias__delete_all_paths_of_symlink(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/t", "tv");
	ok(kt_symlink(s, "/l1", "/t", NULL));
	ok(kt_link(s, "/l1", "/d/l2"));
	ok(kt_delete(s, "/d/l2", KT_DELETE_ALL_PATHS));
	assert_absent(s, "/l1");
	assert_absent(s, "/d/l2");
	assert_value(s, "/t", "tv");
	assert_int_equal(lstat_of(s, "/t").nlink, 1);
	assert_clean(s);
}

/* Exchanging one path of a node with a directory holding another path of
 * the same node. */
static void test_alias__exchange_path_with_dir_holding_other_path(
	void **state)
{
	kt_store *s = store_of(state);
	static const char *const now[] = {"/a/b", "/dir"};
	kt_statbuf before, sb;

	put_str(s, "/a", "v");
	ok(kt_mkdir(s, "/dir", NULL));
	ok(kt_link(s, "/a", "/dir/b"));
	before = lstat_of(s, "/a");
	ok(kt_rename(s, "/a", "/dir", KT_RENAME_EXCHANGE));
	sb = assert_one_node(s, now, N(now));
	assert_int_equal(sb.id, before.id);
	assert_int_equal(lstat_of(s, "/a").kind, KT_KIND_DIR);
	assert_id_path_in(s, sb.id, now, N(now));
	assert_clean(s);
	/* And back. */
	ok(kt_rename(s, "/dir", "/a", KT_RENAME_EXCHANGE));
	assert_one_node(s, (const char *const[]){"/a", "/dir/b"}, 2);
	assert_int_equal(lstat_of(s, "/dir").kind, KT_KIND_DIR);
	assert_clean(s);
	/* A plain rename of the directory moves the path below it. */
	ok(kt_rename(s, "/dir", "/a2", 0));
	assert_one_node(s, (const char *const[]){"/a", "/a2/b"}, 2);
	assert_clean(s);
}

/* KT_FIND_SUBTREE at one path of a node finds that path alone. */
static void test_alias__find_subtree_at_alias_path(void **state)
{
	kt_store *s = store_of(state);
	const kt_entry *e;
	kt_iter *it = NULL;
	int rc, n = 0;

	make_three(s, "v", 1);
	ok(kt_find_new(&it, s, "/d/b", KT_FIND_SUBTREE));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		assert_string_equal(e->name, "/d/b");
		assert_int_equal(e->id, lstat_of(s, "/a").id);
		n++;
	}
	expect_rc(rc, KT_ITEROVER);
	kt_iter_free(it);
	assert_int_equal(n, 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, kt_test_setup, \
					      kt_test_teardown)
	const struct CMUnitTest tests[] = {
		T(test_alias__link_gives_same_node_through_both_paths),
		T(test_alias__listing_shows_new_path_with_kind_and_id),
		T(test_alias__find_under_either_prefix),
		T(test_alias__three_and_more_paths),
		T(test_alias__link_max_paths_then_emlink),
		T(test_alias__put_through_one_seen_through_all),
		T(test_alias__write_and_append_seen_through_all),
		T(test_alias__truncate_across_inline_limit_seen_through_all),
		T(test_alias__setattr_seen_through_all),
		T(test_alias__attrs_seen_through_all),
		T(test_alias__delete_one_path_keeps_the_others),
		T(test_alias__delete_last_path_removes_data),
		T(test_alias__delete_primary_keeps_id_path),
		T(test_alias__delete_all_paths_removes_everything),
		T(test_alias__delete_all_paths_of_single_path_node),
		T(test_alias__recursive_delete_of_dir_holding_one_path),
		T(test_alias__recursive_delete_of_dir_holding_all_paths),
		T(test_alias__recursive_delete_of_dir_holding_two_of_three),
		T(test_alias__rename_moves_only_that_path),
		T(test_alias__rename_dir_holding_one_path),
		T(test_alias__rename_onto_other_path_of_same_node_is_noop),
		T(test_alias__rename_noreplace_onto_other_path_is_eexists),
		T(test_alias__rename_over_one_path_of_other_node),
		T(test_alias__rename_exchange_with_aliased_node),
		T(test_alias__link_of_directory_is_eperm),
		T(test_alias__link_onto_existing_path_is_eexists),
		T(test_alias__link_of_missing_node_is_enotfound),
		T(test_alias__multi_path_item_cannot_gain_children),
		T(test_alias__link_below_itself_is_eperm),
		T(test_alias__link_newpath_through_links),
		T(test_alias__link_of_symlink_links_the_symlink),
		T(test_alias__link_of_special_file),
		T(test_alias__orphan_detach_of_multi_path_item_is_eperm),
		T(test_alias__orphan_copy_of_multi_path_item),
		T(test_alias__batch_link_with_other_ops),
		T(test_alias__failing_batch_leaves_nothing),
		T(test_alias__survives_reopen),
		T(test_alias__stats_count_node_once),
		T(test_alias__id_read_and_id_lstat),
		T(test_alias__link_of_symlink_to_directory),
		T(test_alias__link_and_unlink_touch_the_parent),
		T(test_alias__if_version_through_other_path),
		T(test_alias__delete_item_flag_removes_one_path),
		T(test_alias__delete_all_paths_with_prune),
		T(test_alias__rename_dir_holding_two_paths),
		T(test_alias__exchange_dirs_holding_paths_of_one_node),
		T(test_alias__batch_link_rename_delete),
		T(test_alias__orphan_link_onto_alias_path_is_eexists),
		T(test_alias__repair_of_clean_store_changes_nothing),
		T(test_alias__link_max_in_one_batch),
		T(test_alias__concurrent_appends_through_two_paths),
		T(test_alias__link_through_plain_item_ancestor),
		T(test_alias__delete_all_paths_of_symlink),
		T(test_alias__exchange_path_with_dir_holding_other_path),
		T(test_alias__find_subtree_at_alias_path),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
