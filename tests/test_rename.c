/*
 * test_rename.c - kt_rename: the POSIX replacement rules, NOREPLACE and
 * EXCHANGE, moving whole subtrees with their values, attributes and links
 * while keeping ids, links followed in the middle of a path but not in the
 * last component, and every rejected rename leaving the store unchanged.
 *
 * A short run on RADOS (kt_test.h) skips, saying why, the case that moves
 * a chain of KT_DEPTH_MAX - 2 directories.
 */
#include "kt_test.h"
#include "kt_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static uint64_t id_of(kt_store *s, const char *path)
{
	return lstat_of(s, path).id;
}

static void assert_target(kt_store *s, const char *path, const char *want)
{
	char *t = NULL;
	size_t len = 0;

	ok(kt_readlink(&t, &len, s, path));
	assert_int_equal(len, strlen(want));
	assert_memory_equal(t, want, len);
	kt_free(t);
}

static void assert_attr(kt_store *s, const char *path, const char *name,
			const void *want, size_t want_len)
{
	void *v = NULL;
	size_t len = 0;

	ok(kt_attr_get(&v, &len, s, path, name));
	assert_int_equal(len, want_len);
	assert_memory_equal(v, want, len);
	kt_free(v);
}

static void assert_clean(kt_store *s)
{
	size_t n = 99;
	int rc = kt_check(&n, s, NULL);

	if (rc != 0)
		fail_msg("kt_check: %d (%s), %zu violations", rc, kt_errmsg(),
			 n);
	assert_int_equal(n, 0);
}

/* Nodes that kt_find_new reports for @p prefix and @p flags. */
static size_t count_found(kt_store *s, const char *prefix, unsigned int flags)
{
	kt_iter *it = NULL;
	const kt_entry *e = NULL;
	size_t n = 0;
	int rc;

	ok(kt_find_new(&it, s, prefix, flags));
	while ((rc = kt_iter_next(&e, it)) == 0)
		n++;
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	return n;
}

static void test_rename__item_to_new_name(void **state)
{
	kt_store *s = store_of(state);
	uint64_t id = 0;

	put_str(s, "/a/src", "v");
	ok(kt_mkdir(s, "/b", NULL));
	id = id_of(s, "/a/src");
	ok(kt_rename(s, "/a/src", "/b/dst", 0));
	assert_absent(s, "/a/src");
	assert_value(s, "/b/dst", "v");
	assert_int_equal(id_of(s, "/b/dst"), id);
	kt_test_reopen(*state);
	s = store_of(state);
	assert_absent(s, "/a/src");
	assert_int_equal(id_of(s, "/b/dst"), id);
	assert_clean(s);
}

static void test_rename__file_over_file_replaces(void **state)
{
	kt_store *s = store_of(state);
	uint64_t sid = 0, did = 0;

	put_str(s, "/src", "source");
	put_str(s, "/dst", "destination, longer");
	ok(kt_attr_set(s, "/dst", "user.old", "x", 1, 0));
	sid = id_of(s, "/src");
	did = id_of(s, "/dst");
	assert_true(sid != did);
	ok(kt_rename(s, "/src", "/dst", 0));
	assert_absent(s, "/src");
	assert_value(s, "/dst", "source");
	assert_int_equal(id_of(s, "/dst"), sid);
	assert_int_equal(lstat_of(s, "/dst").nattrs, 0);
	/* The replaced node's value and attribute rows are gone too. */
	assert_clean(s);
}

static void test_rename__link_over_file_replaces(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/target", "t");
	put_str(s, "/dst", "d");
	ok(kt_symlink(s, "/l", "/target", NULL));
	ok(kt_rename(s, "/l", "/dst", 0));
	assert_target(s, "/dst", "/target");
	assert_value(s, "/target", "t");
	assert_absent(s, "/l");
	assert_clean(s);
}

static void test_rename__dir_over_empty_dir(void **state)
{
	kt_store *s = store_of(state);
	uint64_t sid = 0;

	put_str(s, "/src/x", "x");
	ok(kt_mkdir(s, "/dst", NULL));
	sid = id_of(s, "/src");
	ok(kt_rename(s, "/src", "/dst", 0));
	assert_absent(s, "/src");
	assert_int_equal(id_of(s, "/dst"), sid);
	assert_value(s, "/dst/x", "x");
	assert_int_equal(lstat_of(s, "/").nsubdirs, 1);
	assert_clean(s);
}

static void test_rename__dir_over_nonempty_dir_is_enotempty(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/src/x", "x");
	put_str(s, "/dst/y", "y");
	kt_assert_rejected(s, kt_rename(s, "/src", "/dst", 0), KT_ENOTEMPTY,
			   "/dst");
}

static void test_rename__dir_over_file_is_enotdir(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/src/x", "x");
	put_str(s, "/file", "f");
	kt_assert_rejected(s, kt_rename(s, "/src", "/file", 0), KT_ENOTDIR,
			   "/file");
}

static void test_rename__file_over_dir_is_eisdir(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/file", "f");
	ok(kt_mkdir(s, "/dir", NULL));
	put_str(s, "/full/x", "x");
	kt_assert_rejected(s, kt_rename(s, "/file", "/dir", 0), KT_EISDIR,
			   "/dir");
	kt_assert_rejected(s, kt_rename(s, "/file", "/full", 0), KT_EISDIR,
			   "/full");
}

static void test_rename__into_own_subtree_is_einval(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a/b/c", "v");
	kt_assert_rejected(s, kt_rename(s, "/a", "/a/b/new", 0), KT_EINVAL,
			   "/a");
	kt_assert_rejected(s, kt_rename(s, "/a", "/a/new", 0), KT_EINVAL,
			   "/a");
	/* The descendant exists, too. */
	kt_assert_rejected(s, kt_rename(s, "/a", "/a/b/c", 0), KT_EINVAL,
			   "/a");
}

/* Not a subtree: "/ab" only shares a name prefix with "/a". */
static void test_rename__into_name_prefix_sibling_ok(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a/x", "v");
	ok(kt_mkdir(s, "/ab", NULL));
	ok(kt_rename(s, "/a", "/ab/a", 0));
	assert_value(s, "/ab/a/x", "v");
	assert_absent(s, "/a");
	assert_clean(s);
}

static void test_rename__to_itself_is_noop(void **state)
{
	kt_store *s = store_of(state);
	char *before = NULL, *after = NULL;

	put_str(s, "/f", "v");
	put_str(s, "/d/x", "x");
	put_str(s, "/both", "b");
	put_str(s, "/both/c", "c");
	ok(kt_symlink(s, "/l", "/d", NULL));
	before = kt_test_digest(s);
	ok(kt_rename(s, "/f", "/f", 0));
	ok(kt_rename(s, "/d", "/d", 0));
	ok(kt_rename(s, "/both", "/both", 0));
	ok(kt_rename(s, "/l", "/l", 0));
	ok(kt_rename(s, "/d/x", "/d/x", 0));
	after = kt_test_digest(s);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

static void test_rename__noreplace(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a", "a");
	put_str(s, "/b", "b");
	ok(kt_mkdir(s, "/e", NULL));
	kt_assert_rejected(s, kt_rename(s, "/a", "/b", KT_RENAME_NOREPLACE),
			   KT_EEXISTS, "/b");
	kt_assert_rejected(s, kt_rename(s, "/e", "/b", KT_RENAME_NOREPLACE),
			   KT_EEXISTS, "/b");
	ok(kt_symlink(s, "/dl", "/nowhere", NULL));
	kt_assert_rejected(s, kt_rename(s, "/a", "/dl", KT_RENAME_NOREPLACE),
			   KT_EEXISTS, "/dl");
	ok(kt_rename(s, "/a", "/c", KT_RENAME_NOREPLACE));
	assert_value(s, "/c", "a");
	assert_absent(s, "/a");
	assert_clean(s);
}

static void test_rename__exchange_files(void **state)
{
	kt_store *s = store_of(state);
	uint64_t ia = 0, ib = 0;

	put_str(s, "/p/a", "aaa");
	put_str(s, "/q/b", "b");
	ok(kt_attr_set(s, "/p/a", "user.who", "a", 1, 0));
	ia = id_of(s, "/p/a");
	ib = id_of(s, "/q/b");
	ok(kt_rename(s, "/p/a", "/q/b", KT_RENAME_EXCHANGE));
	assert_value(s, "/p/a", "b");
	assert_value(s, "/q/b", "aaa");
	assert_int_equal(id_of(s, "/p/a"), ib);
	assert_int_equal(id_of(s, "/q/b"), ia);
	assert_attr(s, "/q/b", "user.who", "a", 1);
	assert_int_equal(lstat_of(s, "/p/a").nattrs, 0);
	assert_clean(s);
}

static void test_rename__exchange_dirs(void **state)
{
	kt_store *s = store_of(state);
	uint64_t ia = 0, ib = 0;

	put_str(s, "/a/x/deep", "ax");
	put_str(s, "/b/y", "by");
	ok(kt_mkdir(s, "/b/z", NULL));
	ia = id_of(s, "/a");
	ib = id_of(s, "/b");
	ok(kt_rename(s, "/a", "/b", KT_RENAME_EXCHANGE));
	assert_int_equal(id_of(s, "/a"), ib);
	assert_int_equal(id_of(s, "/b"), ia);
	assert_value(s, "/a/y", "by");
	assert_value(s, "/b/x/deep", "ax");
	assert_absent(s, "/a/x");
	assert_absent(s, "/b/y");
	assert_int_equal(lstat_of(s, "/a").nsubdirs, 1);
	assert_int_equal(lstat_of(s, "/b").nsubdirs, 1);
	assert_clean(s);
}

static void test_rename__exchange_file_and_dir(void **state)
{
	kt_store *s = store_of(state);
	uint64_t fi = 0, di = 0;

	put_str(s, "/f", "file");
	put_str(s, "/sub/d/c", "child");
	fi = id_of(s, "/f");
	di = id_of(s, "/sub/d");
	assert_int_equal(lstat_of(s, "/sub").nsubdirs, 1);
	ok(kt_rename(s, "/f", "/sub/d", KT_RENAME_EXCHANGE));
	assert_int_equal(id_of(s, "/f"), di);
	assert_int_equal(id_of(s, "/sub/d"), fi);
	assert_int_equal(lstat_of(s, "/f").kind, KT_KIND_DIR);
	assert_int_equal(lstat_of(s, "/sub/d").kind, KT_KIND_ITEM);
	assert_value(s, "/f/c", "child");
	assert_value(s, "/sub/d", "file");
	/* Directory counts follow the kinds. */
	assert_int_equal(lstat_of(s, "/sub").nsubdirs, 0);
	assert_int_equal(lstat_of(s, "/").nsubdirs, 2);
	assert_clean(s);
}

static void test_rename__exchange_needs_both(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a", "a");
	kt_assert_rejected(s, kt_rename(s, "/a", "/none", KT_RENAME_EXCHANGE),
			   KT_ENOTFOUND, "/none");
	kt_assert_rejected(s, kt_rename(s, "/none", "/a", KT_RENAME_EXCHANGE),
			   KT_ENOTFOUND, "/none");
}

static void test_rename__subtree_moves_whole(void **state)
{
	kt_store *s = store_of(state);
	static const char *const rel[] = {
		"", "/a", "/a/b", "/a/b/c", "/a/b/c/d", "/a/rel", "/a/abs",
		"/both", "/both/k", "/big", "/sparse", "/empty",
	};
	const size_t nrel = sizeof(rel) / sizeof(rel[0]);
	uint64_t ids[sizeof(rel) / sizeof(rel[0])];
	size_t big_len = 2u << 20, i;
	char *big = malloc(big_len);
	char path[128];
	char buf[8];
	size_t nread = 0;
	void *v = NULL;
	size_t len = 0;

	assert_non_null(big);
	for (i = 0; i < big_len; i++)
		big[i] = (char)(i % 251);
	put_str(s, "/src/a/b/c/d", "deep");
	put_str(s, "/src/a/b/val", "b-val");
	ok(kt_symlink(s, "/src/a/rel", "b/c/d", NULL));
	ok(kt_symlink(s, "/src/a/abs", "/src/a/b/val", NULL));
	put_str(s, "/src/both", "both");
	put_str(s, "/src/both/k", "k");
	ok(kt_put(s, "/src/big", big, big_len, NULL));
	put_str(s, "/src/sparse", "s");
	ok(kt_write(s, "/src/sparse", "end", 3, (uint64_t)1 << 32));
	ok(kt_mkdir(s, "/src/empty", NULL));
	ok(kt_attr_set(s, "/src", "user.root", "r", 1, 0));
	ok(kt_attr_set(s, "/src/a/b/c", "user.c", "cc", 2, 0));
	ok(kt_attr_set(s, "/src/big", "user.big", big, 4000, 0));
	put_str(s, "/srcx/keep", "keep");
	for (i = 0; i < nrel; i++) {
		snprintf(path, sizeof(path), "/src%s", rel[i]);
		ids[i] = id_of(s, path);
	}
	assert_int_equal(count_found(s, "/src", KT_FIND_SUBTREE), 13);

	ok(kt_mkdir(s, "/dst", NULL));
	ok(kt_rename(s, "/src", "/dst/moved", 0));

	for (i = 0; i < nrel; i++) {
		snprintf(path, sizeof(path), "/dst/moved%s", rel[i]);
		assert_int_equal(id_of(s, path), ids[i]);
		snprintf(path, sizeof(path), "/src%s", rel[i]);
		assert_absent(s, path);
	}
	assert_int_equal(count_found(s, "/src", KT_FIND_SUBTREE), 0);
	assert_int_equal(count_found(s, "/dst/moved", KT_FIND_SUBTREE), 13);
	assert_value(s, "/dst/moved/a/b/c/d", "deep");
	assert_value(s, "/dst/moved/both", "both");
	assert_value(s, "/dst/moved/both/k", "k");
	/* Link targets are verbatim; the relative one resolves anew. */
	assert_target(s, "/dst/moved/a/rel", "b/c/d");
	assert_target(s, "/dst/moved/a/abs", "/src/a/b/val");
	assert_value(s, "/dst/moved/a/rel", "deep");
	expect_rc(kt_get(&v, &len, s, "/dst/moved/a/abs"), KT_ENOTFOUND);
	ok(kt_get(&v, &len, s, "/dst/moved/big"));
	assert_int_equal(len, big_len);
	assert_memory_equal(v, big, big_len);
	kt_free(v);
	assert_int_equal(lstat_of(s, "/dst/moved/sparse").size,
			 ((uint64_t)1 << 32) + 3);
	ok(kt_read(&nread, s, "/dst/moved/sparse", buf, sizeof(buf),
		   ((uint64_t)1 << 32) - 1));
	assert_int_equal(nread, 4);
	assert_memory_equal(buf, "\0end", 4);
	assert_attr(s, "/dst/moved", "user.root", "r", 1);
	assert_attr(s, "/dst/moved/a/b/c", "user.c", "cc", 2);
	assert_attr(s, "/dst/moved/big", "user.big", big, 4000);
	assert_value(s, "/srcx/keep", "keep");
	assert_int_equal(lstat_of(s, "/dst").nsubdirs, 1);
	assert_clean(s);
	kt_test_reopen(*state);
	s = store_of(state);
	assert_value(s, "/dst/moved/a/b/val", "b-val");
	assert_clean(s);
	free(big);
}

static void test_rename__moved_node_ctime(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf before, after;
	struct timespec ts = {0, 5 * 1000 * 1000};

	put_str(s, "/a", "v");
	before = lstat_of(s, "/a");
	nanosleep(&ts, NULL);
	ok(kt_rename(s, "/a", "/b", 0));
	after = lstat_of(s, "/b");
	assert_true(after.ctime_ns > before.ctime_ns);
	assert_int_equal(after.mtime_ns, before.mtime_ns);
}

static void test_rename__missing_src_or_dst_parent(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a", "v");
	kt_assert_rejected(s, kt_rename(s, "/a", "/no/b", 0), KT_ENOTFOUND,
			   "/no");
	kt_assert_rejected(s, kt_rename(s, "/missing", "/b", 0), KT_ENOTFOUND,
			   "/missing");
	put_str(s, "/file", "f");
	kt_assert_rejected(s, kt_rename(s, "/a", "/file/b", 0), KT_ENOTDIR,
			   "/file");
}

static void test_rename__root_is_rejected(void **state)
{
	kt_store *s = store_of(state);

	ok(kt_mkdir(s, "/d", NULL));
	/* Moving the root is moving a directory into its own subtree. */
	kt_assert_rejected(s, kt_rename(s, "/", "/d/r", 0), KT_EINVAL, "");
}

static void test_rename__link_in_last_component_not_followed(void **state)
{
	kt_store *s = store_of(state);
	uint64_t lid = 0, did = 0;

	put_str(s, "/d/x", "x");
	put_str(s, "/g", "g");
	did = id_of(s, "/d");
	ok(kt_symlink(s, "/l", "/d", NULL));
	lid = id_of(s, "/l");
	ok(kt_rename(s, "/l", "/m", 0));
	assert_int_equal(id_of(s, "/m"), lid);
	assert_int_equal(lstat_of(s, "/m").kind, KT_KIND_LINK);
	assert_int_equal(id_of(s, "/d"), did);
	assert_value(s, "/d/x", "x");
	assert_absent(s, "/l");

	/* A link as dst is replaced itself; its target is untouched. */
	ok(kt_symlink(s, "/lg", "/g", NULL));
	put_str(s, "/f", "f");
	ok(kt_rename(s, "/f", "/lg", 0));
	assert_int_equal(lstat_of(s, "/lg").kind, KT_KIND_ITEM);
	assert_value(s, "/lg", "f");
	assert_value(s, "/g", "g");

	/* A directory over a link to a directory: a link is not a
	 * directory, so POSIX says ENOTDIR. */
	ok(kt_mkdir(s, "/e", NULL));
	kt_assert_rejected(s, kt_rename(s, "/e", "/m", 0), KT_ENOTDIR, "/m");
	assert_clean(s);
}

static void test_rename__links_in_middle_followed(void **state)
{
	kt_store *s = store_of(state);
	uint64_t id = 0;

	put_str(s, "/d/x", "x");
	ok(kt_mkdir(s, "/e", NULL));
	ok(kt_symlink(s, "/ld", "/d", NULL));
	ok(kt_symlink(s, "/le", "e", NULL));
	id = id_of(s, "/d/x");
	ok(kt_rename(s, "/ld/x", "/le/y", 0));
	assert_absent(s, "/d/x");
	assert_int_equal(id_of(s, "/e/y"), id);
	assert_value(s, "/e/y", "x");
	assert_int_equal(lstat_of(s, "/ld").kind, KT_KIND_LINK);
	assert_int_equal(lstat_of(s, "/le").kind, KT_KIND_LINK);
	assert_clean(s);
}

static void test_rename__invalid_paths(void **state)
{
	kt_store *s = store_of(state);

	put_str(s, "/a", "v");
	kt_assert_rejected(s, kt_rename(s, "/a", "/b/", 0), KT_EINVAL, "/b/");
	kt_assert_rejected(s, kt_rename(s, "a", "/b", 0), KT_EINVAL, "");
	/* The two modes contradict each other (renameat2: EINVAL). */
	kt_assert_rejected(s, kt_rename(s, "/a", "/b",
					KT_RENAME_NOREPLACE |
						KT_RENAME_EXCHANGE),
			   KT_EINVAL, "");
}

/* A reader that counts, in one snapshot of the whole store, the nodes
 * under /src and under /dst/moved, until told to stop. */
typedef struct reader {
	kt_store *store;
	atomic_int stop;
	atomic_size_t reads;
	size_t full;      /* nodes in the moved subtree */
	size_t torn, errors;
} reader;

static int under(const char *path, const char *top)
{
	size_t n = strlen(top);

	return strncmp(path, top, n) == 0 &&
	       (path[n] == '\0' || path[n] == '/');
}

static void *count_loop(void *arg)
{
	reader *r = arg;

	while (!atomic_load(&r->stop) || atomic_load(&r->reads) == 0) {
		kt_iter *it = NULL;
		const kt_entry *e = NULL;
		size_t src = 0, dst = 0;
		int rc = kt_find_new(&it, r->store, "/", 0);

		if (rc != 0) {
			r->errors++;
			continue;
		}
		while ((rc = kt_iter_next(&e, it)) == 0) {
			src += under(e->name, "/src");
			dst += under(e->name, "/dst/moved");
		}
		kt_iter_free(it);
		if (rc != KT_ITEROVER)
			r->errors++;
		else if (!(src == r->full && dst == 0) &&
			 !(src == 0 && dst == r->full))
			r->torn++;
		atomic_fetch_add(&r->reads, 1);
	}
	return NULL;
}

/* One atomic write: a reader sees the subtree at src or at dst, whole. */
static void test_rename__subtree_move_is_atomic_to_readers(void **state)
{
	kt_store *s = store_of(state);
	struct timespec ts = {0, 2 * 1000 * 1000};
	reader r;
	pthread_t th;
	char path[64];
	int i;

	KT_TEST_LEVELDB_ONLY("a find spanning partitions reads each at its own "
			     "moment there (keytree.h, Engines), so it can see "
			     "part of a subtree being moved or removed");

	for (i = 0; i < 400; i++) {
		snprintf(path, sizeof(path), "/src/d%d/e%d", i % 20, i);
		put_str(s, path, "v");
	}
	ok(kt_mkdir(s, "/dst", NULL));
	memset(&r, 0, sizeof(r));
	atomic_init(&r.stop, 0);
	atomic_init(&r.reads, 0);
	r.store = s;
	r.full = 1 + 20 + 400;
	assert_int_equal(pthread_create(&th, NULL, count_loop, &r), 0);
	while (atomic_load(&r.reads) < 3)
		nanosleep(&ts, NULL);
	ok(kt_rename(s, "/src", "/dst/moved", 0));
	nanosleep(&ts, NULL);
	atomic_store(&r.stop, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(r.errors, 0);
	if (r.torn != 0)
		fail_msg("%zu of %zu reads saw a torn move", r.torn,
			 (size_t)atomic_load(&r.reads));
	/* The reader's last count may predate the rename; look now. */
	assert_int_equal(count_found(s, "/src", KT_FIND_SUBTREE), 0);
	assert_int_equal(count_found(s, "/dst/moved", KT_FIND_SUBTREE),
			 r.full);
	assert_clean(s);
}

/* A path of @p n components of one byte each below @p base, made with
 * mkdir -p; the deepest path in @p out (malloc'd). */
static char *deep_chain(kt_store *s, const char *base, size_t n)
{
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	size_t blen = strlen(base), i;
	char *p = malloc(blen + 2 * n + 1);

	assert_non_null(p);
	memcpy(p, base, blen);
	for (i = 0; i < n; i++) {
		p[blen + 2 * i] = '/';
		p[blen + 2 * i + 1] = 'x';
	}
	p[blen + 2 * n] = '\0';
	o.flags = KT_CREATE_PARENTS;
	ok(kt_mkdir(s, p, &o));
	return p;
}

/* A rename rewrites every node below the moved one: none may end up over
 * the path length limit.  Refused with KT_ENAMETOOLONG, store unchanged,
 * through kt_rename, EXCHANGE and batches; a move that keeps every node
 * within the limit, even exactly at it, works. */
static void test_rename__subtree_within_path_max(void **state)
{
	kt_store *s = store_of(state);
	char name[256], *longdir, *p;
	kt_batch *b = NULL;
	size_t i;

	/* Length: /a/N/N/.../N with 15 names of 255 bytes = 3842 bytes. */
	memset(name, 'n', 255);
	name[255] = '\0';
	p = malloc(KT_PATH_MAX + 2);
	assert_non_null(p);
	strcpy(p, "/a");
	for (i = 0; i < 15; i++) {
		strcat(p, "/");
		strcat(p, name);
	}
	ok(kt_put(s, p, "deep", 4, NULL));
	/* /L/NNN..N: one name of 255 bytes; /a moved below it gets
	 * 3842 + 257 bytes. */
	longdir = malloc(300);
	assert_non_null(longdir);
	snprintf(longdir, 300, "/L/%s", name);
	ok(kt_mkdir(s, longdir, &(kt_create_options){KT_CREATE_OPTIONS_VERSION,
						      KT_CREATE_PARENTS, 0, 0,
						      0, 0}));
	strcat(longdir, "/a");
	kt_assert_rejected(s, kt_rename(s, "/a", longdir, 0), KT_ENAMETOOLONG,
			   "bytes");
	ok(kt_batch_new(&b, s));
	ok(kt_batch_mkdir(b, "/unrelated", NULL));
	ok(kt_batch_rename(b, "/a", longdir, 0));
	kt_assert_rejected(s, kt_batch_commit(b), KT_ENAMETOOLONG, "/a");
	kt_batch_free(b);
	/* EXCHANGE moves /a to where /L/NNN/a is: refused the same way. */
	ok(kt_mkdir(s, longdir, NULL));
	kt_assert_rejected(s, kt_rename(s, "/a", longdir, KT_RENAME_EXCHANGE),
			   KT_ENAMETOOLONG, "/a");
	ok(kt_delete(s, longdir, 0));
	/* Exactly at the limit is fine: /a -> /bbb..b where the deepest
	 * path becomes KT_PATH_MAX bytes. */
	i = KT_PATH_MAX - (strlen(p) - 2);
	longdir[0] = '/';
	memset(longdir + 1, 'b', i - 1);
	longdir[i] = '\0';
	ok(kt_rename(s, "/a", longdir, 0));
	memmove(p + i, p + 2, strlen(p + 2) + 1);
	memcpy(p, longdir, i);
	assert_int_equal(strlen(p), KT_PATH_MAX);
	assert_int_equal(lstat_of(s, p).kind, KT_KIND_ITEM);
	assert_int_equal(kt_check(NULL, s, NULL), 0);
	free(longdir);
	free(p);
}

/* The same for the depth limit: a chain of KT_DEPTH_MAX - 2 below /d
 * (depth 1) fits at the top, not two levels deeper. */
static void test_rename__subtree_within_depth_max(void **state)
{
	kt_store *s = store_of(state);
	char *deep;

	KT_TEST_LONG_ON_RADOS_BECAUSE(
		"the limit needs a chain of 2046 directories, one object each "
		"there, made and moved in commits that lock every one of them");
	deep = deep_chain(s, "/d", KT_DEPTH_MAX - 2);
	ok(kt_mkdir(s, "/p", NULL));
	ok(kt_mkdir(s, "/p/q", NULL));
	kt_assert_rejected(s, kt_rename(s, "/d", "/p/q/d", 0),
			   KT_ENAMETOOLONG, "components");
	ok(kt_rename(s, "/d", "/p/d", 0)); /* exactly KT_DEPTH_MAX */
	assert_int_equal(kt_check(NULL, s, NULL), 0);
	free(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup,         \
						kt_test_teardown)
		T(test_rename__item_to_new_name),
		T(test_rename__file_over_file_replaces),
		T(test_rename__link_over_file_replaces),
		T(test_rename__dir_over_empty_dir),
		T(test_rename__dir_over_nonempty_dir_is_enotempty),
		T(test_rename__dir_over_file_is_enotdir),
		T(test_rename__file_over_dir_is_eisdir),
		T(test_rename__into_own_subtree_is_einval),
		T(test_rename__into_name_prefix_sibling_ok),
		T(test_rename__to_itself_is_noop),
		T(test_rename__noreplace),
		T(test_rename__exchange_files),
		T(test_rename__exchange_dirs),
		T(test_rename__exchange_file_and_dir),
		T(test_rename__exchange_needs_both),
		T(test_rename__subtree_moves_whole),
		T(test_rename__subtree_move_is_atomic_to_readers),
		T(test_rename__moved_node_ctime),
		T(test_rename__missing_src_or_dst_parent),
		T(test_rename__root_is_rejected),
		T(test_rename__link_in_last_component_not_followed),
		T(test_rename__links_in_middle_followed),
		T(test_rename__invalid_paths),
		T(test_rename__subtree_within_path_max),
		T(test_rename__subtree_within_depth_max),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
