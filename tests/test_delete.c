/*
 * test_delete.c - kt_delete: items, empty directories and links (not their
 * targets), KT_ENOTEMPTY, whole subtrees with KT_DELETE_RECURSIVE,
 * KT_DELETE_PRUNE walking up through empty ancestors, KT_DELETE_ITEM on a
 * node that is item and directory, the root, and that no rows are left
 * behind (kt_check, kt_find_new).
 */
#include "kt_test.h"
#include "kt_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* Needle for kt_assert_rejected when the message's wording is free. */
#define ANY_MSG ""

static int count_cb(const char *what, void *payload)
{
	fprintf(stderr, "violation: %s\n", what);
	(*(size_t *)payload)++;
	return 0;
}

/* Assert that kt_check finds nothing wrong. */
static void assert_clean(kt_store *s)
{
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	size_t n = 99, calls = 0;
	int rc;

	o.on_violation = count_cb;
	o.payload = &calls;
	rc = kt_check(&n, s, &o);

	if (rc != 0)
		fail_msg("kt_check: %d (%s), %zu violations", rc, kt_errmsg(),
			 n);
	assert_int_equal(n, 0);
	assert_int_equal(calls, 0);
}

/* Number of nodes kt_find_new(prefix, flags) reports; with @p below set,
 * fails if any of them is @p below or under it. */
static size_t count_found(kt_store *s, const char *prefix, unsigned int flags,
			  const char *below)
{
	kt_iter *it = NULL;
	const kt_entry *e = NULL;
	size_t n = 0, bl = below ? strlen(below) : 0;
	int rc;

	ok(kt_find_new(&it, s, prefix, flags));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if (below != NULL && strncmp(e->name, below, bl) == 0 &&
		    (e->name[bl] == '\0' || e->name[bl] == '/'))
			fail_msg("'%s' is still there", e->name);
		n++;
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	return n;
}

static size_t count_children(kt_store *s, const char *path)
{
	kt_iter *it = NULL;
	const kt_entry *e = NULL;
	size_t n = 0;
	int rc;

	ok(kt_iter_new(&it, s, path, NULL));
	while ((rc = kt_iter_next(&e, it)) == 0)
		n++;
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	return n;
}

static void pause_a_little(void)
{
	struct timespec ts = {0, 5 * 1000 * 1000};

	nanosleep(&ts, NULL);
}

static void test_delete__item(void **state)
{
	kt_store *s = store_of(state);
	void *v = NULL;
	size_t len = 0;

	put_str(s, "/d/a", "a");
	put_str(s, "/d/b", "b");
	ok(kt_delete(s, "/d/a", 0));
	assert_absent(s, "/d/a");
	expect_rc(kt_get(&v, &len, s, "/d/a"), KT_ENOTFOUND);
	assert_int_equal(count_children(s, "/d"), 1);
	assert_value(s, "/d/b", "b");
	/* Gone for good, not only from a cache. */
	kt_test_reopen(*state);
	s = store_of(state);
	assert_absent(s, "/d/a");
	assert_int_equal(count_children(s, "/d"), 1);
	assert_clean(s);
}

static void test_delete__empty_dir(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf st;

	ok(kt_mkdir(s, "/p", NULL));
	ok(kt_mkdir(s, "/p/e", NULL));
	ok(kt_mkdir(s, "/p/f", NULL));
	assert_int_equal(lstat_of(s, "/p").nsubdirs, 2);
	ok(kt_delete(s, "/p/e", 0));
	assert_absent(s, "/p/e");
	st = lstat_of(s, "/p");
	assert_int_equal(st.nsubdirs, 1);
	assert_int_equal(count_children(s, "/p"), 1);
	assert_clean(s);
}

static void test_delete__link_not_target(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/d/x", "dx");
	put_str(s, "/i", "i");
	ok(kt_symlink(s, "/ld", "/d", NULL));
	ok(kt_symlink(s, "/li", "/i", NULL));
	ok(kt_symlink(s, "/dangling", "/nowhere", NULL));
	/* A link to a directory with children has no children itself. */
	ok(kt_delete(s, "/ld", 0));
	ok(kt_delete(s, "/li", 0));
	ok(kt_delete(s, "/dangling", 0));
	assert_absent(s, "/ld");
	assert_absent(s, "/li");
	assert_absent(s, "/dangling");
	assert_value(s, "/d/x", "dx");
	assert_value(s, "/i", "i");
	assert_int_equal(count_found(s, "/", 0, NULL), 3);
	assert_clean(s);
}

static void test_delete__through_intermediate_link(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/d/x", "dx");
	ok(kt_symlink(s, "/l", "/d", NULL));
	ok(kt_delete(s, "/l/x", 0));
	assert_absent(s, "/d/x");
	assert_int_equal(lstat_of(s, "/l").kind, KT_KIND_LINK);
	assert_clean(s);
}

static void test_delete__dir_with_children_is_enotempty(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/d/x", "v");
	ok(kt_mkdir(s, "/d/sub", NULL));
	kt_assert_rejected(s, kt_delete(s, "/d", 0), KT_ENOTEMPTY, "/d");
	/* An item that is also a directory with children, too. */
	put_str(s, "/both", "v");
	put_str(s, "/both/c", "v");
	kt_assert_rejected(s, kt_delete(s, "/both", 0), KT_ENOTEMPTY,
			   "/both");
	kt_assert_rejected(s, kt_delete(s, "/both", KT_DELETE_PRUNE),
			   KT_ENOTEMPTY, "/both");
}

static void test_delete__recursive_removes_subtree(void **state)
{
	kt_store *s = store_of(state);
	size_t big_len = 3u << 20, i;
	char *big = malloc(big_len);
	kt_statbuf st;
	void *v = NULL;
	size_t len = 0;
	size_t before = 0;

	assert_non_null(big);
	for (i = 0; i < big_len; i++)
		big[i] = (char)(i * 131 + 7);
	/* Siblings that share the name prefix must survive. */
	put_str(s, "/tt", "tt");
	put_str(s, "/t-x/y", "t-x");
	put_str(s, "/t.y", "t.y");
	put_str(s, "/a/t/z", "other t");
	before = count_found(s, "/", 0, NULL);

	put_str(s, "/t/a/b/c/d", "deep");
	put_str(s, "/t/a/b2", "v");
	ok(kt_mkdir(s, "/t/empty", NULL));
	put_str(s, "/t/both", "v");
	put_str(s, "/t/both/child", "v");
	ok(kt_symlink(s, "/t/link", "/tt", NULL));
	ok(kt_put(s, "/t/big", big, big_len, NULL));
	put_str(s, "/t/sparse", "head");
	ok(kt_write(s, "/t/sparse", "tail", 4, (uint64_t)1 << 33));
	ok(kt_attr_set(s, "/t", "user.top", "1", 1, 0));
	ok(kt_attr_set(s, "/t/a/b", "user.mid", "2", 1, 0));
	ok(kt_attr_set(s, "/t/big", "user.big", big, 60000, 0));

	ok(kt_delete(s, "/t", KT_DELETE_RECURSIVE));
	assert_absent(s, "/t");
	assert_absent(s, "/t/a/b/c/d");
	assert_absent(s, "/t/big");
	assert_int_equal(count_found(s, "/t", KT_FIND_SUBTREE, "/t"), 0);
	assert_int_equal(count_found(s, "/", 0, "/t"), before);
	assert_value(s, "/tt", "tt");
	assert_value(s, "/t-x/y", "t-x");
	assert_value(s, "/t.y", "t.y");
	assert_value(s, "/a/t/z", "other t");
	/* No value or attribute rows of the dead nodes are left. */
	assert_clean(s);

	/* Nodes made again at the same paths start empty. */
	put_str(s, "/t/big", "small");
	assert_value(s, "/t/big", "small");
	st = lstat_of(s, "/t");
	assert_int_equal(st.nattrs, 0);
	assert_int_equal(st.kind, KT_KIND_DIR);
	expect_rc(kt_attr_get(&v, &len, s, "/t", "user.top"), KT_ENOATTR);
	assert_int_equal(lstat_of(s, "/t/big").nattrs, 0);
	put_str(s, "/t/sparse", "x");
	assert_int_equal(lstat_of(s, "/t/sparse").size, 1);
	assert_clean(s);
	free(big);
}

static void test_delete__recursive_item_and_empty(void **state)
{
	kt_store *s = store_of(state);

	/* RECURSIVE on a leaf or an empty directory is a plain delete. */
	put_str(s, "/leaf", "v");
	ok(kt_mkdir(s, "/empty", NULL));
	ok(kt_delete(s, "/leaf", KT_DELETE_RECURSIVE));
	ok(kt_delete(s, "/empty", KT_DELETE_RECURSIVE));
	assert_absent(s, "/leaf");
	assert_absent(s, "/empty");
	assert_int_equal(lstat_of(s, "/").nsubdirs, 0);
	assert_clean(s);
}

/* dynamotree could not delete a path of one component. */
static void test_delete__one_component_path(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a", "v");
	ok(kt_delete(s, "/a", 0));
	assert_absent(s, "/a");
	ok(kt_mkdir(s, "/b", NULL));
	ok(kt_delete(s, "/b", 0));
	assert_absent(s, "/b");
	put_str(s, "/c/d/e", "v");
	ok(kt_delete(s, "/c", KT_DELETE_RECURSIVE));
	assert_absent(s, "/c");
	assert_int_equal(count_found(s, "/", 0, NULL), 0);
	assert_int_equal(lstat_of(s, "/").nsubdirs, 0);
	assert_clean(s);
}

static void test_delete__prune_removes_empty_ancestors(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf st;

	ok(kt_mkdir(s, "/keep", NULL));
	put_str(s, "/p1/p2/p3/leaf", "v");
	ok(kt_delete(s, "/p1/p2/p3/leaf", KT_DELETE_PRUNE));
	assert_absent(s, "/p1/p2/p3/leaf");
	assert_absent(s, "/p1/p2/p3");
	assert_absent(s, "/p1/p2");
	assert_absent(s, "/p1");
	assert_int_equal(lstat_of(s, "/keep").kind, KT_KIND_DIR);
	ok(kt_lstat(&st, s, "/"));
	assert_int_equal(st.nsubdirs, 1);
	assert_clean(s);
}

static void test_delete__prune_stops_at_value(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/v", "value");
	put_str(s, "/v/a/b", "v");
	ok(kt_delete(s, "/v/a/b", KT_DELETE_PRUNE));
	assert_absent(s, "/v/a");
	assert_int_equal(lstat_of(s, "/v").kind, KT_KIND_ITEM | KT_KIND_DIR);
	assert_value(s, "/v", "value");
	assert_clean(s);
}

static void test_delete__prune_stops_at_other_children(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/s/a/x", "v");
	put_str(s, "/s/b", "v");
	ok(kt_delete(s, "/s/a/x", KT_DELETE_PRUNE));
	assert_absent(s, "/s/a");
	assert_int_equal(lstat_of(s, "/s").kind, KT_KIND_DIR);
	assert_value(s, "/s/b", "v");
	/* An empty-directory child also keeps its parent. */
	ok(kt_mkdir(s, "/t", NULL));
	ok(kt_mkdir(s, "/t/empty", NULL));
	put_str(s, "/t/u/x", "v");
	ok(kt_delete(s, "/t/u/x", KT_DELETE_PRUNE));
	assert_absent(s, "/t/u");
	assert_int_equal(lstat_of(s, "/t/empty").kind, KT_KIND_DIR);
	assert_clean(s);
}

static void test_delete__prune_never_removes_root(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf st;

	put_str(s, "/only/x", "v");
	ok(kt_delete(s, "/only/x", KT_DELETE_PRUNE));
	assert_absent(s, "/only");
	ok(kt_lstat(&st, s, "/"));
	assert_true(st.kind & KT_KIND_DIR);
	assert_int_equal(st.nsubdirs, 0);
	/* The store is still usable. */
	put_str(s, "/again", "v");
	put_str(s, "/one", "v");
	ok(kt_delete(s, "/one", KT_DELETE_PRUNE));
	ok(kt_lstat(&st, s, "/"));
	assert_value(s, "/again", "v");
	assert_clean(s);
}

static void test_delete__prune_with_recursive(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a/b/c/d/e", "v");
	put_str(s, "/a/b/c/d/f", "v");
	put_str(s, "/a/keep", "v");
	ok(kt_delete(s, "/a/b/c", KT_DELETE_RECURSIVE | KT_DELETE_PRUNE));
	assert_absent(s, "/a/b");
	assert_value(s, "/a/keep", "v");
	assert_int_equal(count_found(s, "/", 0, NULL), 2);
	assert_clean(s);
}

static void test_delete__item_flag_keeps_dir(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf before, after;
	void *v = NULL;
	size_t len = 0;

	put_str(s, "/b", "value");
	put_str(s, "/b/c1", "c1");
	ok(kt_mkdir(s, "/b/c2", NULL));
	ok(kt_attr_set(s, "/b", "user.k", "kv", 2, 0));
	before = lstat_of(s, "/b");
	assert_int_equal(before.kind, KT_KIND_ITEM | KT_KIND_DIR);
	ok(kt_delete(s, "/b", KT_DELETE_ITEM));
	after = lstat_of(s, "/b");
	assert_int_equal(after.kind, KT_KIND_DIR);
	assert_int_equal(after.id, before.id);
	assert_int_equal(after.nsubdirs, 1);
	assert_int_equal(after.nattrs, 1);
	expect_rc(kt_get(&v, &len, s, "/b"), KT_EISDIR);
	ok(kt_attr_get(&v, &len, s, "/b", "user.k"));
	assert_int_equal(len, 2);
	assert_memory_equal(v, "kv", 2);
	kt_free(v);
	assert_value(s, "/b/c1", "c1");
	assert_int_equal(count_children(s, "/b"), 2);
	assert_clean(s);
}

static void test_delete__item_flag_on_plain_item(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/i", "v");
	ok(kt_delete(s, "/i", KT_DELETE_ITEM));
	assert_absent(s, "/i");
	assert_clean(s);
}

static void test_delete__item_flag_on_dir_is_eisdir(void **state)
{
	kt_store *s = store_of(state);

	ok(kt_mkdir(s, "/d", NULL));
	put_str(s, "/e/x", "v");
	kt_assert_rejected(s, kt_delete(s, "/d", KT_DELETE_ITEM), KT_EISDIR,
			   "/d");
	kt_assert_rejected(s, kt_delete(s, "/e", KT_DELETE_ITEM), KT_EISDIR,
			   "/e");
}

static void test_delete__item_flag_on_link_is_einval(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/i", "v");
	ok(kt_symlink(s, "/l", "/i", NULL));
	kt_assert_rejected(s, kt_delete(s, "/l", KT_DELETE_ITEM), KT_EINVAL,
			   "/l");
}

static void test_delete__root_is_einval(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/x", "v");
	kt_assert_rejected(s, kt_delete(s, "/", 0), KT_EINVAL, ANY_MSG);
	kt_assert_rejected(s, kt_delete(s, "/", KT_DELETE_RECURSIVE),
			   KT_EINVAL, ANY_MSG);
	kt_assert_rejected(s, kt_delete(s, "/", KT_DELETE_PRUNE), KT_EINVAL,
			   ANY_MSG);
	assert_value(s, "/x", "v");
}

static void test_delete__missing_is_enotfound(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/d/x", "v");
	kt_assert_rejected(s, kt_delete(s, "/d/missing", 0), KT_ENOTFOUND,
			   "missing");
	kt_assert_rejected(s, kt_delete(s, "/gone/x", KT_DELETE_RECURSIVE),
			   KT_ENOTFOUND, "gone");
	kt_assert_rejected(s, kt_delete(s, "/d/x/y", 0), KT_ENOTDIR, "/d/x");
}

static void test_delete__parent_times_updated(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf before, after;

	put_str(s, "/p/x", "v");
	ok(kt_mkdir(s, "/p/sub", NULL));
	before = lstat_of(s, "/p");
	pause_a_little();
	ok(kt_delete(s, "/p/x", 0));
	after = lstat_of(s, "/p");
	assert_true(after.mtime_ns > before.mtime_ns);
	assert_true(after.ctime_ns > before.ctime_ns);
	assert_true(after.version != before.version);

	before = after;
	pause_a_little();
	ok(kt_delete(s, "/p/sub", 0));
	after = lstat_of(s, "/p");
	assert_true(after.mtime_ns > before.mtime_ns);
	assert_int_equal(after.nsubdirs, 0);

	/* The root is a parent like any other. */
	before = lstat_of(s, "/");
	pause_a_little();
	ok(kt_delete(s, "/p", 0));
	after = lstat_of(s, "/");
	assert_true(after.mtime_ns > before.mtime_ns);
}

static void test_delete__no_orphans(void **state)
{
	kt_store *s = store_of(state);
	char path[64];
	int i;

	for (i = 0; i < 50; i++) {
		snprintf(path, sizeof(path), "/r/d%d/e%d/f", i % 5, i);
		put_str(s, path, "v");
		ok(kt_attr_set(s, path, "user.n", "1", 1, 0));
	}
	ok(kt_symlink(s, "/r/d0/l", "/r/d1", NULL));
	ok(kt_delete(s, "/r/d0", KT_DELETE_RECURSIVE));
	ok(kt_delete(s, "/r/d1/e1/f", KT_DELETE_PRUNE));
	ok(kt_delete(s, "/r/d2/e2/f", 0));
	ok(kt_delete(s, "/r/d2/e2", 0));
	ok(kt_delete(s, "/r/d3", KT_DELETE_RECURSIVE | KT_DELETE_PRUNE));
	assert_clean(s);
	assert_int_equal(count_found(s, "/r/d0", KT_FIND_SUBTREE, "/r/d0"), 0);
	assert_int_equal(count_found(s, "/r/d3", KT_FIND_SUBTREE, "/r/d3"), 0);
	/* /r, d1 with 9 e/f pairs, d2 with 9, d4 with 10. */
	assert_int_equal(count_found(s, "/", 0, NULL),
			 1 + 3 + 2 * 9 + 2 * 9 + 2 * 10);
	assert_int_equal(lstat_of(s, "/r").nsubdirs, 3);
	kt_test_reopen(*state);
	assert_clean(store_of(state));
}

/* Children listed with KT_LIST_STAT (each with its attributes), as
 * keytreefs lists. */
static size_t count_stat_children(kt_store *s, const char *path)
{
	kt_list_options o = KT_LIST_OPTIONS_INIT;
	kt_iter *it = NULL;
	const kt_entry *e = NULL;
	size_t n = 0;
	int rc;

	o.flags = KT_LIST_STAT;
	ok(kt_iter_new(&it, s, path, &o));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		assert_non_null(e->stat);
		n++;
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	return n;
}

/* A directory whose entries were all removed (its count says none, and
 * listings, rmdir and rename skip the scan of its subtree) lists nothing,
 * renames and goes as an empty one, and lists what is made in it again.
 * A directory holding only files (no subdirectories, entries all the
 * same) lists, moves and refuses rmdir as a full one. */
static void test_delete__emptied_directory(void **state)
{
	kt_store *s = store_of(state);
	char path[64];
	int i;

	for (i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "/e/f%02d", i);
		put_str(s, path, "v");
		snprintf(path, sizeof(path), "/files/f%02d", i);
		put_str(s, path, "v");
	}
	ok(kt_mkdir(s, "/e/sub", NULL));
	put_str(s, "/e/sub/deep", "v");
	ok(kt_delete(s, "/e/sub", KT_DELETE_RECURSIVE));
	for (i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "/e/f%02d", i);
		ok(kt_delete(s, path, 0));
	}
	assert_int_equal(count_children(s, "/e"), 0);
	assert_int_equal(count_stat_children(s, "/e"), 0);
	assert_int_equal(count_found(s, "/e", KT_FIND_SUBTREE, NULL), 1);
	/* Made in again: listed. */
	put_str(s, "/e/again", "v");
	assert_int_equal(count_children(s, "/e"), 1);
	assert_int_equal(count_stat_children(s, "/e"), 1);
	ok(kt_delete(s, "/e/again", 0));
	ok(kt_rename(s, "/e", "/e2", 0));
	assert_int_equal(count_children(s, "/e2"), 0);
	put_str(s, "/e2/x", "v");
	assert_int_equal(count_children(s, "/e2"), 1);
	ok(kt_delete(s, "/e2/x", 0));
	ok(kt_delete(s, "/e2", 0));
	assert_absent(s, "/e2");

	/* Only files: 40 entries, no subdirectory. */
	assert_int_equal(lstat_of(s, "/files").nsubdirs, 0);
	assert_int_equal(count_children(s, "/files"), 40);
	assert_int_equal(count_stat_children(s, "/files"), 40);
	expect_rc(kt_delete(s, "/files", 0), KT_ENOTEMPTY);
	ok(kt_rename(s, "/files", "/moved", 0));
	assert_int_equal(count_children(s, "/moved"), 40);
	assert_int_equal(count_found(s, "/moved", KT_FIND_SUBTREE, NULL), 41);
	assert_absent(s, "/files");
	ok(kt_delete(s, "/moved", KT_DELETE_RECURSIVE));
	assert_int_equal(count_found(s, "/", 0, NULL), 0);
	assert_clean(s);
	kt_test_reopen(*state);
	assert_clean(store_of(state));
}

/* A reader that counts the nodes under /t, over and over, until told to
 * stop; each count is over one snapshot. */
typedef struct reader {
	kt_store *store;
	atomic_int stop;
	atomic_size_t reads;
	size_t full;      /* the count before the delete */
	size_t partial, errors;
} reader;

static void *count_loop(void *arg)
{
	reader *r = arg;

	while (!atomic_load(&r->stop) || atomic_load(&r->reads) == 0) {
		kt_iter *it = NULL;
		const kt_entry *e = NULL;
		size_t n = 0;
		int rc = kt_find_new(&it, r->store, "/t", KT_FIND_SUBTREE);

		if (rc != 0) {
			r->errors++;
			continue;
		}
		while ((rc = kt_iter_next(&e, it)) == 0)
			n++;
		kt_iter_free(it);
		if (rc != KT_ITEROVER)
			r->errors++;
		else if (n != 0 && n != r->full)
			r->partial++;
		atomic_fetch_add(&r->reads, 1);
	}
	return NULL;
}

/* One atomic batch: a reader sees the whole subtree or none of it. */
static void test_delete__recursive_is_atomic_to_readers(void **state)
{
	kt_store *s = store_of(state);
	reader r;
	pthread_t th;
	char path[64];
	int i;

	KT_TEST_LEVELDB_ONLY("a find spanning partitions reads each at its own "
			     "moment there (keytree.h, Engines), so it can see "
			     "part of a subtree being moved or removed");

	for (i = 0; i < 400; i++) {
		snprintf(path, sizeof(path), "/t/d%d/e%d", i % 20, i);
		put_str(s, path, "v");
	}
	memset(&r, 0, sizeof(r));
	atomic_init(&r.stop, 0);
	atomic_init(&r.reads, 0);
	r.store = s;
	r.full = 1 + 20 + 400;
	assert_int_equal(pthread_create(&th, NULL, count_loop, &r), 0);
	while (atomic_load(&r.reads) < 3)
		pause_a_little();
	ok(kt_delete(s, "/t", KT_DELETE_RECURSIVE));
	pause_a_little();
	atomic_store(&r.stop, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(r.errors, 0);
	if (r.partial != 0)
		fail_msg("%zu of %zu reads saw part of the subtree", r.partial,
			 (size_t)atomic_load(&r.reads));
	/* The reader's last count may predate the delete; look now. */
	assert_int_equal(count_found(s, "/t", KT_FIND_SUBTREE, "/t"), 0);
	assert_clean(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup,         \
						kt_test_teardown)
		T(test_delete__item),
		T(test_delete__empty_dir),
		T(test_delete__link_not_target),
		T(test_delete__through_intermediate_link),
		T(test_delete__dir_with_children_is_enotempty),
		T(test_delete__recursive_removes_subtree),
		T(test_delete__recursive_is_atomic_to_readers),
		T(test_delete__recursive_item_and_empty),
		T(test_delete__one_component_path),
		T(test_delete__prune_removes_empty_ancestors),
		T(test_delete__prune_stops_at_value),
		T(test_delete__prune_stops_at_other_children),
		T(test_delete__prune_never_removes_root),
		T(test_delete__prune_with_recursive),
		T(test_delete__item_flag_keeps_dir),
		T(test_delete__item_flag_on_plain_item),
		T(test_delete__item_flag_on_dir_is_eisdir),
		T(test_delete__item_flag_on_link_is_einval),
		T(test_delete__root_is_einval),
		T(test_delete__missing_is_enotfound),
		T(test_delete__parent_times_updated),
		T(test_delete__no_orphans),
		T(test_delete__emptied_directory),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
