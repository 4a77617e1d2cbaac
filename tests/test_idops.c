/*
 * test_idops.c - the calls by node id (kt_id_write, kt_id_truncate,
 * kt_id_setattr, kt_id_attr_*, kt_id_delete) and the conditional removals
 * (kt_delete_at_if, kt_orphan_detach_at) with the flags a filesystem needs
 * (KT_DELETE_DIR, KT_DELETE_NOTDIR, KT_RENAME_VALUE_FULL): each acts on the
 * node with the id wherever it is, a link itself included, the value of an
 * item+dir is its value, a rename racing the calls never makes a change
 * land elsewhere or vanish, and bad input fails naming the culprit.
 */
#include <pthread.h>

#include "kt_test.h"
#include "kt_helpers.h"

static uint64_t id_of(kt_store *s, const char *path)
{
	return lstat_of(s, path).id;
}

/* Fail unless the last message mentions @p what. */
static void assert_msg_names(const char *what)
{
	if (strstr(kt_errmsg(), what) == NULL)
		fail_msg("message '%s' does not name '%s'", kt_errmsg(), what);
}

static void test_idops__write_and_truncate(void **state)
{
	kt_store *s = store_of(state);
	uint64_t f;

	put_str(s, "/d/f", "hello");
	f = id_of(s, "/d/f");
	ok(kt_id_write(s, f, "XY", 2, 1));
	assert_value(s, "/d/f", "hXYlo");
	ok(kt_id_write(s, f, "!", 1, KT_APPEND));
	assert_value(s, "/d/f", "hXYlo!");
	ok(kt_id_write(s, f, "z", 1, 8)); /* past the end: a hole */
	assert_int_equal(lstat_of(s, "/d/f").size, 9);
	ok(kt_id_truncate(s, f, 3));
	assert_value(s, "/d/f", "hXY");
	ok(kt_id_truncate(s, f, 0));
	assert_value(s, "/d/f", "");
	/* The id is kept across a rename; the call follows it. */
	ok(kt_rename(s, "/d", "/e", 0));
	ok(kt_id_write(s, f, "moved", 5, 0));
	assert_value(s, "/e/f", "moved");
}

static void test_idops__value_of_item_dir(void **state)
{
	kt_store *s = store_of(state);
	uint64_t v;

	ok(kt_mkdir(s, "/v", NULL));
	put_str(s, "/v/child", "c");
	v = id_of(s, "/v");
	/* A directory without a value has none to write. */
	expect_rc(kt_id_write(s, v, "x", 1, 0), KT_EISDIR);
	expect_rc(kt_id_truncate(s, v, 0), KT_EISDIR);
	{
		kt_create_options o = KT_CREATE_OPTIONS_INIT;

		o.flags = KT_CREATE_EXCL;
		ok(kt_id_put(s, v, "abc", 3, &o));
		expect_rc(kt_id_put(s, v, "x", 1, &o), KT_EEXISTS);
	}
	assert_int_equal(lstat_of(s, "/v").kind, KT_KIND_ITEM | KT_KIND_DIR);
	ok(kt_id_write(s, v, "Z", 1, 1));
	assert_value(s, "/v", "aZc");
	ok(kt_id_truncate(s, v, 1));
	assert_value(s, "/v", "a");
	assert_value(s, "/v/child", "c");
	/* kt_id_delete with KT_DELETE_ITEM drops the value, not the
	 * directory, wherever it is. */
	ok(kt_rename(s, "/v", "/w", 0));
	ok(kt_id_delete(s, v, KT_DELETE_ITEM));
	assert_int_equal(lstat_of(s, "/w").kind, KT_KIND_DIR);
	assert_value(s, "/w/child", "c");
	expect_rc(kt_id_delete(s, v, KT_DELETE_ITEM), KT_EISDIR);
}

static void test_idops__links_and_specials(void **state)
{
	kt_store *s = store_of(state);
	kt_setattr_args a = KT_SETATTR_ARGS_INIT;
	kt_statbuf sb;
	uint64_t l, n;
	void *v = NULL;
	size_t len = 0;

	put_str(s, "/t", "target");
	ok(kt_symlink(s, "/l", "/t", NULL));
	ok(kt_mknod(s, "/p", KT_TYPE_FIFO, 0, NULL));
	l = id_of(s, "/l");
	n = id_of(s, "/p");
	/* By id the link itself is acted on, never its target. */
	expect_rc(kt_id_write(s, l, "x", 1, 0), KT_EINVAL);
	expect_rc(kt_id_truncate(s, l, 0), KT_EINVAL);
	expect_rc(kt_id_put(s, l, "x", 1, NULL), KT_EINVAL);
	assert_msg_names("link");
	expect_rc(kt_id_put(s, n, "x", 1, NULL), KT_EINVAL);
	expect_rc(kt_id_put(s, 1, "x", 1, NULL), KT_EINVAL);
	expect_rc(kt_id_write(s, n, "x", 1, 0), KT_EINVAL);
	assert_msg_names("holds no value");
	assert_value(s, "/t", "target");
	expect_rc(kt_id_attr_set(s, l, "a", "1", 1, 0), KT_EINVAL);
	expect_rc(kt_id_attr_get(&v, &len, s, l, "a"), KT_ENOATTR);
	assert_null(v);
	assert_int_equal(lstat_of(s, "/t").nattrs, 0);
	a.mask = KT_SET_MODE;
	a.mode = 0700;
	ok(kt_id_setattr(&sb, s, l, &a));
	assert_int_equal(sb.id, l);
	assert_int_equal(sb.mode, 0700);
	assert_int_equal(lstat_of(s, "/l").mode, 0700);
	assert_int_equal(lstat_of(s, "/t").mode, 0644);
	/* A special file has attributes like any node. */
	ok(kt_id_attr_set(s, n, "a", "1", 1, 0));
	assert_int_equal(lstat_of(s, "/p").nattrs, 1);
}

static void test_idops__setattr(void **state)
{
	kt_store *s = store_of(state);
	kt_setattr_args a = KT_SETATTR_ARGS_INIT;
	kt_statbuf sb, want;
	uint64_t f;

	put_str(s, "/f", "x");
	f = id_of(s, "/f");
	a.mask = KT_SET_MODE | KT_SET_UID | KT_SET_MTIME;
	a.mode = 0604;
	a.uid = 4242;
	a.mtime_ns = 123456789;
	ok(kt_id_setattr(&sb, s, f, &a));
	want = lstat_of(s, "/f");
	assert_int_equal(sb.mode, 0604);
	assert_int_equal(want.mode, 0604);
	assert_int_equal(want.uid, 4242);
	assert_int_equal(want.mtime_ns, 123456789);
	assert_int_equal(sb.version, want.version);
	ok(kt_id_setattr(NULL, s, f, &a));
	a.mask = 0x1000;
	expect_rc(kt_id_setattr(NULL, s, f, &a), KT_EINVAL);
	assert_msg_names("mask");
	a.mask = KT_SET_MODE;
	a.mode = 010000;
	expect_rc(kt_id_setattr(NULL, s, f, &a), KT_EINVAL);
	assert_msg_names("10000");
	expect_rc(kt_id_setattr(NULL, s, f, NULL), KT_EINVAL);
	assert_int_equal(lstat_of(s, "/f").mode, 0604);
}

static void test_idops__attributes(void **state)
{
	kt_store *s = store_of(state);
	const kt_entry *e;
	kt_iter *it = NULL;
	void *v = NULL;
	size_t len = 0, n = 0;
	uint64_t f;
	int rc;

	put_str(s, "/d/f", "x");
	f = id_of(s, "/d/f");
	ok(kt_id_attr_set(s, f, "colour", "red", 3, KT_ATTR_CREATE));
	expect_rc(kt_id_attr_set(s, f, "colour", "x", 1, KT_ATTR_CREATE),
		  KT_EEXISTS);
	expect_rc(kt_id_attr_set(s, f, "size", "x", 1, KT_ATTR_REPLACE),
		  KT_ENOATTR);
	ok(kt_rename(s, "/d", "/e", 0));
	ok(kt_id_attr_set(s, f, "size", "big", 3, 0));
	ok(kt_id_attr_get(&v, &len, s, f, "colour"));
	assert_int_equal(len, 3);
	assert_memory_equal(v, "red", 3);
	kt_free(v);
	ok(kt_attr_get(&v, &len, s, "/e/f", "size"));
	assert_memory_equal(v, "big", 3);
	kt_free(v);
	v = NULL;
	ok(kt_id_attr_iter_new(&it, s, f));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		assert_string_equal(e->name, n == 0 ? "colour" : "size");
		n++;
	}
	assert_int_equal(rc, KT_ITEROVER);
	assert_int_equal(n, 2);
	kt_iter_free(it);
	ok(kt_id_attr_delete(s, f, "colour"));
	expect_rc(kt_id_attr_delete(s, f, "colour"), KT_ENOATTR);
	assert_msg_names("colour");
	expect_rc(kt_id_attr_get(&v, &len, s, f, "colour"), KT_ENOATTR);
	assert_msg_names("colour");
	assert_int_equal(lstat_of(s, "/e/f").nattrs, 1);
	/* Bad names. */
	expect_rc(kt_id_attr_set(s, f, "", "x", 1, 0), KT_EINVAL);
	expect_rc(kt_id_attr_set(s, f, NULL, "x", 1, 0), KT_EINVAL);
	expect_rc(kt_id_attr_set(s, f, "\xc2\xa6x", "x", 1, 0),
		  KT_ERESERVED);
	expect_rc(kt_id_attr_get(&v, &len, s, f, "\xc2\xa6x"), KT_ERESERVED);
	expect_rc(kt_id_attr_delete(s, f, ""), KT_EINVAL);
	expect_rc(kt_id_attr_set(s, f, "a", NULL, 3, 0), KT_EINVAL);
	expect_rc(kt_id_attr_set(s, f, "a", "x", 1, 3), KT_EINVAL);
	expect_rc(kt_id_attr_get(NULL, &len, s, f, "a"), KT_EINVAL);
	expect_rc(kt_id_attr_iter_new(NULL, s, f), KT_EINVAL);
	assert_int_equal(lstat_of(s, "/e/f").nattrs, 1);
}

static void test_idops__unknown_ids(void **state)
{
	kt_store *s = store_of(state);
	kt_setattr_args a = KT_SETATTR_ARGS_INIT;
	kt_iter *it = NULL;
	void *v = NULL;
	size_t len = 0;
	uint64_t f;

	put_str(s, "/f", "x");
	f = id_of(s, "/f");
	ok(kt_delete(s, "/f", 0));
	a.mask = KT_SET_MODE;
	a.mode = 0600;
	expect_rc(kt_id_write(s, f, "x", 1, 0), KT_ENOTFOUND);
	assert_msg_names("id");
	expect_rc(kt_id_truncate(s, f, 0), KT_ENOTFOUND);
	expect_rc(kt_id_put(s, f, "x", 1, NULL), KT_ENOTFOUND);
	expect_rc(kt_id_setattr(NULL, s, f, &a), KT_ENOTFOUND);
	expect_rc(kt_id_attr_set(s, f, "a", "x", 1, 0), KT_ENOTFOUND);
	expect_rc(kt_id_attr_get(&v, &len, s, f, "a"), KT_ENOTFOUND);
	expect_rc(kt_id_attr_delete(s, f, "a"), KT_ENOTFOUND);
	expect_rc(kt_id_attr_iter_new(&it, s, f), KT_ENOTFOUND);
	assert_null(it);
	expect_rc(kt_id_delete(s, f, 0), KT_ENOTFOUND);
	expect_rc(kt_id_write(s, 999999, "x", 1, 0), KT_ENOTFOUND);
	assert_msg_names("999999");
	/* Nothing was made by any of them. */
	assert_absent(s, "/f");
}

/* Move /a/f and its directory around until told to stop. */
struct mover {
	kt_store *s;
	volatile int stop;
	int moves;
	int err;
};

static void *move_loop(void *arg)
{
	static const char *const step[][2] = {
		{"/a/f", "/a/g"}, {"/a", "/b"}, {"/b/g", "/b/f"}, {"/b", "/a"},
	};
	struct mover *m = arg;
	int i = 0, rc;

	while (!m->stop) {
		rc = kt_rename(m->s, step[i][0], step[i][1], 0);
		if (rc != 0) {
			m->err = rc;
			break;
		}
		i = (i + 1) % 4;
		m->moves++;
	}
	return NULL;
}

static void test_idops__rename_races_calls(void **state)
{
	kt_store *s = store_of(state);
	struct mover m;
	pthread_t th;
	kt_setattr_args a = KT_SETATTR_ARGS_INIT;
	char buf[400];
	size_t got = 0;
	uint64_t f;
	int i;

	put_str(s, "/a/f", "");
	f = id_of(s, "/a/f");
	memset(&m, 0, sizeof(m));
	m.s = s;
	assert_int_equal(pthread_create(&th, NULL, move_loop, &m), 0);
	/* Every write lands in the moving node, none elsewhere. */
	for (i = 0; i < 400; i++) {
		char c = (char)('a' + i % 26);

		ok(kt_id_write(s, f, &c, 1, (uint64_t)i));
		if (i % 50 == 0) {
			char name[16];

			snprintf(name, sizeof(name), "n%d", i);
			ok(kt_id_attr_set(s, f, name, "v", 1, 0));
		}
	}
	a.mask = KT_SET_MODE;
	a.mode = 0611;
	ok(kt_id_setattr(NULL, s, f, &a));
	m.stop = 1;
	pthread_join(th, NULL);
	assert_int_equal(m.err, 0);
	ok(kt_id_read(&got, s, f, buf, sizeof(buf), 0));
	assert_int_equal(got, 400);
	for (i = 0; i < 400; i++)
		assert_int_equal(buf[i], 'a' + i % 26);
	{
		kt_statbuf sb;
		char *p = NULL;

		ok(kt_id_lstat(&sb, &p, NULL, s, f));
		assert_int_equal(sb.nattrs, 8);
		assert_int_equal(sb.mode, 0611);
		assert_int_equal(sb.kind, KT_KIND_ITEM);
		kt_free(p);
	}
}

static void test_idops__delete_at_if(void **state)
{
	kt_store *s = store_of(state);
	uint64_t d, f, g;

	put_str(s, "/d/f", "f");
	put_str(s, "/d/g", "g");
	d = id_of(s, "/d");
	f = id_of(s, "/d/f");
	g = id_of(s, "/d/g");
	/* Another node took the name: nothing is removed. */
	ok(kt_rename(s, "/d/g", "/d/f", 0));
	expect_rc(kt_delete_at_if(s, d, "f", f, 0), KT_ECONFLICT);
	assert_msg_names("f");
	assert_value(s, "/d/f", "g");
	ok(kt_delete_at_if(s, d, "f", g, 0));
	assert_absent(s, "/d/f");
	expect_rc(kt_delete_at_if(s, d, "f", g, 0), KT_ENOTFOUND);
	expect_rc(kt_delete_at_if(s, d, "f", 0, 0), KT_EINVAL);
	expect_rc(kt_delete_at_if(s, d, "a/b", g, 0), KT_EINVAL);
	expect_rc(kt_delete_at_if(s, 424242, "f", g, 0), KT_ENOTFOUND);
	assert_msg_names("424242");
}

static void test_idops__delete_kind_flags(void **state)
{
	kt_store *s = store_of(state);
	uint64_t root = 1;

	ok(kt_mkdir(s, "/dir", NULL));
	ok(kt_mkdir(s, "/both", NULL));
	put_str(s, "/both", "value");
	put_str(s, "/file", "x");
	ok(kt_symlink(s, "/ldir", "/dir", NULL));
	/* rmdir: only a directory without a value. */
	expect_rc(kt_delete_at(s, root, "file", KT_DELETE_DIR), KT_ENOTDIR);
	assert_msg_names("file");
	expect_rc(kt_delete_at(s, root, "ldir", KT_DELETE_DIR), KT_ENOTDIR);
	expect_rc(kt_delete_at(s, root, "both", KT_DELETE_DIR), KT_ENOTEMPTY);
	assert_msg_names("value");
	/* unlink: only a non-directory. */
	expect_rc(kt_delete_at(s, root, "dir", KT_DELETE_NOTDIR), KT_EISDIR);
	expect_rc(kt_delete_at(s, root, "both", KT_DELETE_NOTDIR), KT_EISDIR);
	expect_rc(kt_delete(s, "/dir", KT_DELETE_DIR | KT_DELETE_NOTDIR),
		  KT_EINVAL);
	assert_msg_names("contradict");
	expect_rc(kt_delete(s, "/both", KT_DELETE_DIR | KT_DELETE_ITEM),
		  KT_EINVAL);
	expect_rc(kt_delete(s, "/dir", 0x40), KT_EINVAL);
	assert_value(s, "/both", "value");
	ok(kt_delete_at(s, root, "ldir", KT_DELETE_NOTDIR));
	ok(kt_delete_at(s, root, "file", KT_DELETE_NOTDIR));
	ok(kt_delete_at(s, root, "dir", KT_DELETE_DIR));
	assert_absent(s, "/dir");
	assert_absent(s, "/file");
	assert_absent(s, "/ldir");
}

static void test_idops__rename_value_full(void **state)
{
	kt_store *s = store_of(state);

	ok(kt_mkdir(s, "/src", NULL));
	ok(kt_mkdir(s, "/both", NULL));
	put_str(s, "/both", "value");
	expect_rc(kt_rename(s, "/src", "/both", KT_RENAME_VALUE_FULL),
		  KT_ENOTEMPTY);
	assert_msg_names("holds a value");
	assert_value(s, "/both", "value");
	expect_rc(kt_rename(s, "/src", "/both", 8), KT_EINVAL);
	/* Without the flag the library's own rule: it replaces it. */
	ok(kt_rename(s, "/src", "/both", 0));
	assert_int_equal(lstat_of(s, "/both").kind, KT_KIND_DIR);
}

static void test_idops__orphan_detach_at(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf sb;
	size_t got = 0;
	char buf[8];
	uint64_t d, f, g;

	put_str(s, "/d/f", "f");
	put_str(s, "/d/g", "g");
	d = id_of(s, "/d");
	f = id_of(s, "/d/f");
	g = id_of(s, "/d/g");
	expect_rc(kt_orphan_detach_at(s, d, "f", g), KT_ECONFLICT);
	assert_value(s, "/d/f", "f");
	expect_rc(kt_orphan_detach_at(s, d, "none", f), KT_ENOTFOUND);
	expect_rc(kt_orphan_detach_at(s, d, "", f), KT_EINVAL);
	expect_rc(kt_orphan_detach_at(s, d, "f", 0), KT_EINVAL);
	expect_rc(kt_orphan_detach_at(s, 1, "d", d), KT_EISDIR);
	ok(kt_rename(s, "/d", "/e", 0));
	ok(kt_orphan_detach_at(s, d, "f", f));
	assert_absent(s, "/e/f");
	ok(kt_orphan_stat(&sb, s, f));
	ok(kt_orphan_read(&got, s, f, buf, sizeof(buf), 0));
	assert_int_equal(got, 1);
	assert_int_equal(buf[0], 'f');
	ok(kt_orphan_release(s, f));
}

static void test_idops__orphan_copy_id(void **state)
{
	kt_store *s = store_of(state);
	size_t got = 0;
	char buf[8];
	uint64_t v, o1, o2;

	ok(kt_mkdir(s, "/v", NULL));
	put_str(s, "/v", "val");
	put_str(s, "/v/c", "c");
	v = id_of(s, "/v");
	ok(kt_rename(s, "/v", "/w", 0));
	ok(kt_orphan_copy_id(&o1, s, v, 0));
	assert_value(s, "/w", "val");
	ok(kt_orphan_copy_id(&o2, s, v, KT_DELETE_ITEM));
	assert_int_equal(lstat_of(s, "/w").kind, KT_KIND_DIR);
	assert_value(s, "/w/c", "c");
	ok(kt_orphan_read(&got, s, o2, buf, sizeof(buf), 0));
	assert_int_equal(got, 3);
	assert_memory_equal(buf, "val", 3);
	expect_rc(kt_orphan_copy_id(&o2, s, v, 0), KT_EISDIR);
	expect_rc(kt_orphan_copy_id(&o2, s, v, KT_DELETE_RECURSIVE),
		  KT_EINVAL);
	expect_rc(kt_orphan_copy_id(&o2, s, 777777, 0), KT_ENOTFOUND);
	expect_rc(kt_orphan_copy_id(NULL, s, v, 0), KT_EINVAL);
	ok(kt_orphan_release(s, o1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup,         \
						kt_test_teardown)
		T(test_idops__write_and_truncate),
		T(test_idops__value_of_item_dir),
		T(test_idops__links_and_specials),
		T(test_idops__setattr),
		T(test_idops__attributes),
		T(test_idops__unknown_ids),
		T(test_idops__rename_races_calls),
		T(test_idops__delete_at_if),
		T(test_idops__delete_kind_flags),
		T(test_idops__rename_value_full),
		T(test_idops__orphan_detach_at),
		T(test_idops__orphan_copy_id),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
