/*
 * test_orphan.c - items detached from the tree while in use: gone from
 * every listing at once, still readable and writable by id, dropped on
 * release or at the next writable open.
 */
#include "kt_test.h"

static void put_big(kt_store *s, const char *path, size_t len)
{
	char *v = malloc(len);
	size_t i;

	assert_non_null(v);
	for (i = 0; i < len; i++)
		v[i] = (char)('a' + i % 26);
	assert_int_equal(kt_put(s, path, v, len, NULL), 0);
	free(v);
}

static void test_orphan__detach_hides_and_keeps(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf before, sb;
	uint64_t id = 0;
	char buf[8];
	size_t got = 0, bad = 1;

	put_big(f->store, "/d/file", 50000);
	assert_int_equal(kt_attr_set(f->store, "/d/file", "k", "v", 1, 0), 0);
	assert_int_equal(kt_stat(&before, f->store, "/d/file"), 0);
	assert_int_equal(kt_orphan_detach(&id, f->store, "/d/file"), 0);
	assert_int_equal(id, before.id);
	/* Gone from the tree. */
	assert_int_equal(kt_stat(&sb, f->store, "/d/file"), KT_ENOTFOUND);
	/* Still there by id, with its value. */
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), 0);
	assert_int_equal(sb.size, 50000);
	assert_int_equal(sb.nattrs, 1);
	assert_int_equal(kt_orphan_read(&got, f->store, id, buf, 3, 26), 0);
	assert_int_equal(got, 3);
	assert_memory_equal(buf, "abc", 3);
	/* A new file can take the name meanwhile. */
	assert_int_equal(kt_put(f->store, "/d/file", "new", 3, NULL), 0);
	assert_int_equal(kt_check(&bad, f->store, NULL), 0);
	assert_int_equal(bad, 0);
}

static void test_orphan__write_truncate_setattr(void **state)
{
	kt_test_fixture *f = *state;
	kt_setattr_args sa = {KT_SETATTR_ARGS_VERSION, KT_SET_MODE, 0600,
				0, 0, 0, 0};
	kt_statbuf sb;
	uint64_t id = 0, v0;
	char buf[4] = {0};
	size_t got = 0;

	assert_int_equal(kt_put(f->store, "/f", "hello", 5, NULL), 0);
	assert_int_equal(kt_orphan_detach(&id, f->store, "/f"), 0);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), 0);
	v0 = sb.version;
	assert_int_equal(kt_orphan_write(f->store, id, "XY", 2, 100000), 0);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), 0);
	assert_int_equal(sb.size, 100002);
	assert_true(sb.version != v0);
	assert_int_equal(kt_orphan_read(&got, f->store, id, buf, 4, 99999),
			 0);
	assert_int_equal(got, 3);
	assert_memory_equal(buf, "\0XY", 3);
	assert_int_equal(kt_orphan_truncate(f->store, id, 2), 0);
	assert_int_equal(kt_orphan_read(&got, f->store, id, buf, 4, 0), 0);
	assert_int_equal(got, 2);
	assert_memory_equal(buf, "he", 2);
	assert_int_equal(kt_orphan_setattr(f->store, id, &sa), 0);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), 0);
	assert_int_equal(sb.mode, 0600);
}

static void test_orphan__release_drops_data(void **state)
{
	kt_test_fixture *f = *state;
	kt_store_stats before, after;
	kt_statbuf sb;
	uint64_t id = 0;

	assert_int_equal(kt_stats(&before, f->store), 0);
	put_big(f->store, "/big", 100000);
	assert_int_equal(kt_orphan_detach(&id, f->store, "/big"), 0);
	assert_int_equal(kt_orphan_release(f->store, id), 0);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), KT_ENOTFOUND);
	assert_int_equal(kt_stats(&after, f->store), 0);
	/* Only the counter row may differ in what remains. */
	assert_int_equal(after.rows, before.rows);
	kt_assert_rejected(f->store, kt_orphan_release(f->store, id),
			   KT_ENOTFOUND, "orphan");
}

static void test_orphan__reopen_drops_leftovers(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf sb;
	uint64_t id = 0;

	KT_TEST_LEVELDB_ONLY("orphans are dropped at open by the holder; a "
			     "RADOS tree has none, and other clients' open "
			     "files cannot be told from a dead one's");
	put_big(f->store, "/left", 40000);
	assert_int_equal(kt_orphan_detach(&id, f->store, "/left"), 0);
	kt_test_reopen(f);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), KT_ENOTFOUND);
}

/* kt_orphan_copy: a new orphan with the value (holes kept), attributes,
 * owner and times of an item or item+dir; the original stays as it was. */
static void test_orphan__copy_keeps_holes_and_original(void **state)
{
	kt_test_fixture *f = *state;
	kt_store_stats before, after;
	kt_statbuf src, sb;
	uint64_t id = 0, id2 = 0;
	char buf[16], *v = NULL;
	size_t got = 0, bad = 1, len = 0;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	/* A 64 MiB value with two 3-byte islands: two block rows. */
	co.flags = KT_CREATE_PARENTS;
	assert_int_equal(kt_put(f->store, "/d/sparse", "abc", 3, &co), 0);
	assert_int_equal(kt_write(f->store, "/d/sparse", "xyz", 3,
				  (64u << 20) - 3),
			 0);
	assert_int_equal(kt_attr_set(f->store, "/d/sparse", "k", "v", 1, 0),
			 0);
	assert_int_equal(kt_lstat(&src, f->store, "/d/sparse"), 0);
	assert_int_equal(kt_stats(&before, f->store), 0);

	assert_int_equal(kt_orphan_copy(&id, f->store, "/d/sparse"), 0);
	assert_true(id != 0 && id != src.id);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), 0);
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(sb.size, 64u << 20);
	assert_int_equal(sb.mode, src.mode);
	assert_int_equal(sb.mtime_ns, src.mtime_ns);
	assert_int_equal(sb.nattrs, 1);
	assert_int_equal(kt_orphan_read(&got, f->store, id, buf, 3,
					(64u << 20) - 3),
			 0);
	assert_int_equal(got, 3);
	assert_memory_equal(buf, "xyz", 3);
	assert_int_equal(kt_orphan_read(&got, f->store, id, buf, 4, 1u << 20),
			 0);
	assert_memory_equal(buf, "\0\0\0\0", 4);
	/* Only the two stored blocks were copied, not 64 MiB of zeros. */
	assert_int_equal(kt_stats(&after, f->store), 0);
	assert_true(after.row_bytes < before.row_bytes + 2 * 16384 + 4096);

	/* The copy is independent of the original. */
	assert_int_equal(kt_orphan_write(f->store, id, "QQ", 2, 0), 0);
	assert_int_equal(kt_get((void **)&v, &len, f->store, "/d/sparse"), 0);
	assert_int_equal(len, 64u << 20);
	assert_memory_equal(v, "abc", 3);
	kt_free(v);
	assert_int_equal(kt_lstat(&sb, f->store, "/d/sparse"), 0);
	assert_int_equal(sb.version, src.version);
	assert_int_equal(kt_check(&bad, f->store, NULL), 0);
	assert_int_equal(bad, 0);

	/* An item+dir's value is copied as a plain item. */
	assert_int_equal(kt_put(f->store, "/d", "dir value", 9, NULL), 0);
	assert_int_equal(kt_orphan_copy(&id2, f->store, "/d"), 0);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id2), 0);
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(sb.size, 9);
	assert_int_equal(sb.nsubdirs, 0);

	assert_int_equal(kt_orphan_release(f->store, id), 0);
	assert_int_equal(kt_orphan_release(f->store, id2), 0);
	assert_int_equal(kt_check(&bad, f->store, NULL), 0);
}

static void test_orphan__rejects(void **state)
{
	kt_test_fixture *f = *state;
	uint64_t id = 7;

	assert_int_equal(kt_mkdir(f->store, "/dir", NULL), 0);
	assert_int_equal(kt_put(f->store, "/both", "v", 1, NULL), 0);
	assert_int_equal(kt_mkdir(f->store, "/both", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/ln", "/both", NULL), 0);
	kt_assert_rejected(f->store, kt_orphan_detach(&id, f->store, "/dir"),
			   KT_EISDIR, "/dir");
	assert_int_equal(id, 0);
	kt_assert_rejected(f->store, kt_orphan_detach(&id, f->store, "/both"),
			   KT_EISDIR, "/both");
	kt_assert_rejected(f->store, kt_orphan_detach(&id, f->store, "/ln"),
			   KT_EINVAL, "/ln");
	kt_assert_rejected(f->store, kt_orphan_detach(&id, f->store, "/no"),
			   KT_ENOTFOUND, "/no");
	kt_assert_rejected(f->store, kt_orphan_detach(&id, f->store, "a//b"),
			   KT_EINVAL, "a//b");
	kt_assert_rejected(f->store, kt_orphan_copy(&id, f->store, "/dir"),
			   KT_EISDIR, "/dir");
	kt_assert_rejected(f->store, kt_orphan_copy(&id, f->store, "/ln"),
			   KT_EINVAL, "/ln");
	kt_assert_rejected(f->store, kt_orphan_copy(&id, f->store, "/no"),
			   KT_ENOTFOUND, "/no");
	kt_assert_rejected(f->store, kt_orphan_copy(NULL, f->store, "/both"),
			   KT_EINVAL, "id");
	kt_assert_rejected(f->store, kt_orphan_write(f->store, 12345, "x", 1,
						     0),
			   KT_ENOTFOUND, "12345");
}

/* kt_orphan_new + kt_orphan_link: what O_TMPFILE and linkat(2) do.  The
 * new orphan is in no listing and counts as live; once linked it is an
 * ordinary item under its own id, with what was written meanwhile. */
static void test_orphan__new_then_link(void **state)
{
	kt_test_fixture *f = *state;
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_statbuf sb;
	kt_store_stats stats;
	uint64_t id = 0;
	char buf[8];
	size_t got = 0, bad = 1;

	o.flags = KT_CREATE_MODE | KT_CREATE_OWNER;
	o.mode = 0600;
	o.uid = 4321;
	o.gid = 8765;
	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	assert_int_equal(kt_orphan_new(&id, f->store, &o), 0);
	assert_true(id > 1);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), 0);
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(sb.size, 0);
	assert_int_equal(sb.mode, 0600);
	assert_int_equal(sb.uid, 4321);
	assert_int_equal(sb.gid, 8765);
	assert_int_equal(kt_stats(&stats, f->store), 0);
	assert_int_equal(stats.items, 0);
	assert_int_equal(kt_check(&bad, f->store, NULL), 0);
	assert_int_equal(bad, 0);

	assert_int_equal(kt_orphan_write(f->store, id, "temp", 4, 0), 0);
	assert_int_equal(kt_orphan_link(f->store, id, "/d/new"), 0);
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), KT_ENOTFOUND);
	assert_int_equal(kt_lstat(&sb, f->store, "/d/new"), 0);
	assert_int_equal(sb.id, id);
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(sb.mode, 0600);
	assert_int_equal(sb.uid, 4321);
	assert_int_equal(kt_read(&got, f->store, "/d/new", buf, 8, 0), 0);
	assert_int_equal(got, 4);
	assert_memory_equal(buf, "temp", 4);
	assert_int_equal(kt_check(&bad, f->store, NULL), 0);
	assert_int_equal(bad, 0);

	/* Missing ancestors are made, as by kt_put. */
	assert_int_equal(kt_orphan_new(&id, f->store, NULL), 0);
	assert_int_equal(kt_orphan_link(f->store, id, "/x/y/z"), 0);
	assert_int_equal(kt_lstat(&sb, f->store, "/x/y/z"), 0);
	assert_int_equal(sb.id, id);
	assert_int_equal(sb.mode, 0644);
	assert_int_equal(kt_check(&bad, f->store, NULL), 0);
	assert_int_equal(bad, 0);
}

static void test_orphan__link_rejects(void **state)
{
	kt_test_fixture *f = *state;
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	uint64_t id = 0;
	kt_statbuf sb;

	assert_int_equal(kt_put(f->store, "/file", "v", 1, NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/dangling", "/nowhere", NULL),
			 0);
	assert_int_equal(kt_orphan_new(&id, f->store, NULL), 0);
	kt_assert_rejected(f->store, kt_orphan_link(f->store, id, "/file"),
			   KT_EEXISTS, "/file");
	kt_assert_rejected(f->store, kt_orphan_link(f->store, id, "/dangling"),
			   KT_EEXISTS, "/dangling");
	kt_assert_rejected(f->store, kt_orphan_link(f->store, id, "/"),
			   KT_EEXISTS, "/");
	kt_assert_rejected(f->store, kt_orphan_link(f->store, id, "/a/"),
			   KT_EINVAL, "/a/");
	kt_assert_rejected(f->store, kt_orphan_link(f->store, 99999, "/n"),
			   KT_ENOTFOUND, "99999");
	/* Still an orphan after every refusal. */
	assert_int_equal(kt_orphan_stat(&sb, f->store, id), 0);
	o.flags = KT_CREATE_EXCL;
	kt_assert_rejected(f->store, kt_orphan_new(&id, f->store, &o),
			   KT_EINVAL, "flags");
	o.flags = KT_CREATE_MODE;
	o.mode = 010000;
	kt_assert_rejected(f->store, kt_orphan_new(&id, f->store, &o),
			   KT_EINVAL, "mode");
	kt_assert_rejected(f->store, kt_orphan_new(NULL, f->store, NULL),
			   KT_EINVAL, "id");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, kt_test_setup, \
					      kt_test_teardown)
	const struct CMUnitTest tests[] = {
		T(test_orphan__detach_hides_and_keeps),
		T(test_orphan__write_truncate_setattr),
		T(test_orphan__release_drops_data),
		T(test_orphan__reopen_drops_leftovers),
		T(test_orphan__copy_keeps_holes_and_original),
		T(test_orphan__rejects),
		T(test_orphan__new_then_link),
		T(test_orphan__link_rejects),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
