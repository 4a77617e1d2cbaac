/*
 * test_special.c - special files (FIFOs, sockets, character and block
 * devices): kt_mknod records a type and a device number and nothing else.
 * The node has a mode, an owner, times and attributes, is listed with its
 * kind and type, and is renamed, deleted and changed like any node; it
 * holds no value (every value call is KT_EINVAL) and has no children
 * (KT_ENOTDIR below it).  Bad arguments are refused naming the culprit and
 * leave the store as it was.
 */
#include "kt_test.h"
#include "kt_helpers.h"

#include <sys/sysmacros.h>

/* Needle for kt_assert_rejected when the message's wording is free. */
#define ANY_MSG ""

static void mknod_ok(kt_store *s, const char *path, unsigned int type,
		     uint64_t rdev)
{
	int rc = kt_mknod(s, path, type, rdev, NULL);

	if (rc != 0)
		fail_msg("mknod %s: %d (%s)", path, rc, kt_errmsg());
}

static void assert_special(kt_store *s, const char *path, unsigned int type,
			   uint64_t rdev)
{
	kt_statbuf st = lstat_of(s, path);

	assert_int_equal(st.kind, KT_KIND_SPECIAL);
	assert_int_equal(st.type, type);
	assert_int_equal(st.rdev, rdev);
	assert_int_equal(st.size, 0);
	assert_int_equal(st.stored, 0);
	assert_int_equal(st.nsubdirs, 0);
}

static void test_special__each_type_recorded(void **state)
{
	kt_store *s = store_of(state);
	uint64_t null_dev = makedev(1, 3), sda1 = makedev(8, 1);
	uint64_t big = makedev(4000, 1048575); /* beyond 8-bit major/minor */
	kt_statbuf st;

	mknod_ok(s, "/fifo", KT_TYPE_FIFO, 0);
	mknod_ok(s, "/sock", KT_TYPE_SOCK, 0);
	mknod_ok(s, "/null", KT_TYPE_CHR, null_dev);
	mknod_ok(s, "/sda1", KT_TYPE_BLK, sda1);
	mknod_ok(s, "/big", KT_TYPE_CHR, big);
	mknod_ok(s, "/zero-dev", KT_TYPE_BLK, 0);
	assert_special(s, "/fifo", KT_TYPE_FIFO, 0);
	assert_special(s, "/sock", KT_TYPE_SOCK, 0);
	assert_special(s, "/null", KT_TYPE_CHR, null_dev);
	assert_special(s, "/sda1", KT_TYPE_BLK, sda1);
	assert_special(s, "/big", KT_TYPE_CHR, big);
	assert_special(s, "/zero-dev", KT_TYPE_BLK, 0);
	st = lstat_of(s, "/fifo");
	assert_int_equal(st.mode, 0644);
	assert_int_equal(st.uid, geteuid());
	assert_int_equal(st.gid, getegid());
	assert_true(st.id > 1);
	assert_true(st.atime_ns == st.mtime_ns && st.mtime_ns == st.ctime_ns);
	/* The same after the store is closed and opened again. */
	kt_test_reopen(*state);
	s = store_of(state);
	assert_special(s, "/null", KT_TYPE_CHR, null_dev);
	assert_special(s, "/big", KT_TYPE_CHR, big);
	assert_special(s, "/sock", KT_TYPE_SOCK, 0);
	/* Other kinds report no type. */
	put_str(s, "/item", "v");
	st = lstat_of(s, "/item");
	assert_int_equal(st.type, 0);
	assert_int_equal(st.rdev, 0);
}

static void test_special__create_options(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_statbuf st;

	o.flags = KT_CREATE_MODE | KT_CREATE_OWNER;
	o.mode = 01620;
	o.uid = 1234;
	o.gid = 5678;
	ok(kt_mknod(s, "/p", KT_TYPE_FIFO, 0, &o));
	st = lstat_of(s, "/p");
	assert_int_equal(st.mode, 01620);
	assert_int_equal(st.uid, 1234);
	assert_int_equal(st.gid, 5678);
	/* EXCL and PARENTS change nothing: both always hold. */
	o.flags = KT_CREATE_EXCL | KT_CREATE_PARENTS;
	ok(kt_mknod(s, "/q/r", KT_TYPE_SOCK, 0, &o));
	assert_special(s, "/q/r", KT_TYPE_SOCK, 0);
	kt_assert_rejected(s, kt_mknod(s, "/q/r", KT_TYPE_SOCK, 0, &o),
			   KT_EEXISTS, "/q/r");
}

/* Missing ancestors are made as put makes them; an item on the way
 * becomes an item and directory. */
static void test_special__makes_missing_ancestors(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf st;

	mknod_ok(s, "/a/b/c/fifo", KT_TYPE_FIFO, 0);
	st = lstat_of(s, "/a/b/c");
	assert_int_equal(st.kind, KT_KIND_DIR);
	assert_int_equal(st.mode, 0755);
	assert_special(s, "/a/b/c/fifo", KT_TYPE_FIFO, 0);
	put_str(s, "/item", "value");
	mknod_ok(s, "/item/dev", KT_TYPE_BLK, makedev(7, 0));
	st = lstat_of(s, "/item");
	assert_int_equal(st.kind, KT_KIND_ITEM | KT_KIND_DIR);
	assert_value(s, "/item", "value");
	/* A link on the way is followed. */
	ok(kt_symlink(s, "/to-a", "/a", NULL));
	mknod_ok(s, "/to-a/sock", KT_TYPE_SOCK, 0);
	assert_special(s, "/a/sock", KT_TYPE_SOCK, 0);
	st = lstat_of(s, "/a");
	assert_int_equal(st.nsubdirs, 1); /* b only: specials are no dirs */
}

static void test_special__over_anything_is_eexists(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options p = KT_CREATE_OPTIONS_INIT;

	p.flags = KT_CREATE_PARENTS;
	put_str(s, "/item", "v");
	ok(kt_mkdir(s, "/dir", &p));
	ok(kt_symlink(s, "/link", "/item", NULL));
	ok(kt_symlink(s, "/dangling", "/nowhere", NULL));
	mknod_ok(s, "/fifo", KT_TYPE_FIFO, 0);
	kt_assert_rejected(s, kt_mknod(s, "/item", KT_TYPE_FIFO, 0, NULL),
			   KT_EEXISTS, "an item");
	kt_assert_rejected(s, kt_mknod(s, "/dir", KT_TYPE_SOCK, 0, NULL),
			   KT_EEXISTS, "a directory");
	kt_assert_rejected(s, kt_mknod(s, "/link", KT_TYPE_FIFO, 0, NULL),
			   KT_EEXISTS, "a link");
	/* The last component is not followed, even to nothing. */
	kt_assert_rejected(s, kt_mknod(s, "/dangling", KT_TYPE_FIFO, 0, NULL),
			   KT_EEXISTS, "a link");
	kt_assert_rejected(
		s, kt_mknod(s, "/fifo", KT_TYPE_CHR, makedev(1, 1), NULL),
		KT_EEXISTS, "a FIFO");
	kt_assert_rejected(s, kt_mknod(s, "/", KT_TYPE_FIFO, 0, NULL),
			   KT_EINVAL, "root");
}

static void test_special__bad_arguments(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *s = store_of(state), *ro = NULL;
	kt_options o = KT_OPTIONS_INIT;
	kt_batch *b = NULL;
	static const unsigned int bad_types[] = {0, 3, 4, 5, 7, 8, 10, 99};
	size_t i;

	for (i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
		kt_assert_rejected(s, kt_mknod(s, "/x", bad_types[i], 0, NULL),
				   KT_EINVAL, "unknown type");
		kt_assert_rejected(s, kt_mknod(s, "/x", bad_types[i], 0, NULL),
				   KT_EINVAL, "'/x'");
	}
	kt_assert_rejected(s, kt_mknod(s, "/x", KT_TYPE_FIFO, 1, NULL),
			   KT_EINVAL, "a FIFO has no device number");
	kt_assert_rejected(s,
			   kt_mknod(s, "/x", KT_TYPE_SOCK, makedev(1, 3), NULL),
			   KT_EINVAL, "a socket has no device number");
	kt_assert_rejected(s, kt_mknod(s, "x", KT_TYPE_FIFO, 0, NULL),
			   KT_EINVAL, ANY_MSG);
	kt_assert_rejected(s, kt_mknod(s, "/x/", KT_TYPE_FIFO, 0, NULL),
			   KT_EINVAL, ANY_MSG);
	kt_assert_rejected(s,
			   kt_mknod(s, "/a" KT_DEFAULT_DELIMITER "b",
				    KT_TYPE_FIFO, 0, NULL),
			   KT_ERESERVED, ANY_MSG);
	expect_rc(kt_mknod(NULL, "/x", KT_TYPE_FIFO, 0, NULL), KT_EINVAL);
	/* A batch refuses them when they are recorded. */
	ok(kt_batch_new(&b, s));
	kt_assert_rejected(s, kt_batch_mknod(b, "/x", 42, 0, NULL), KT_EINVAL,
			   "unknown type 42");
	kt_assert_rejected(s, kt_batch_mknod(b, "/x", KT_TYPE_FIFO, 7, NULL),
			   KT_EINVAL, "no device number");
	kt_batch_free(b);
	/* A read-only store writes nothing. */
	kt_close(f->store);
	f->store = NULL;
	o.read_only = 1;
	ok(kt_open(&ro, f->path, &o));
	kt_assert_rejected(ro, kt_mknod(ro, "/x", KT_TYPE_FIFO, 0, NULL),
			   KT_EREADONLY, ANY_MSG);
	kt_close(ro);
	kt_test_reopen(f);
}

/* Listings know the kind and type from the index rows; find from the
 * node rows. */
static void test_special__listed_with_kind_and_type(void **state)
{
	kt_store *s = store_of(state);
	kt_iter *it = NULL;
	const kt_entry *e;
	unsigned int seen = 0;
	int rc;

	mknod_ok(s, "/d/a-fifo", KT_TYPE_FIFO, 0);
	mknod_ok(s, "/d/b-chr", KT_TYPE_CHR, makedev(5, 1));
	mknod_ok(s, "/d/c-blk", KT_TYPE_BLK, makedev(8, 0));
	mknod_ok(s, "/d/d-sock", KT_TYPE_SOCK, 0);
	put_str(s, "/d/e-item", "v");
	ok(kt_iter_new(&it, s, "/d", NULL));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		switch (e->name[0]) {
		case 'a':
			assert_int_equal(e->type, KT_TYPE_FIFO);
			break;
		case 'b':
			assert_int_equal(e->type, KT_TYPE_CHR);
			break;
		case 'c':
			assert_int_equal(e->type, KT_TYPE_BLK);
			break;
		case 'd':
			assert_int_equal(e->type, KT_TYPE_SOCK);
			break;
		case 'e':
			assert_int_equal(e->kind, KT_KIND_ITEM);
			assert_int_equal(e->type, 0);
			seen |= 1u << 4;
			continue;
		}
		assert_int_equal(e->kind, KT_KIND_SPECIAL);
		seen |= 1u << (e->name[0] - 'a');
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	assert_int_equal(seen, 0x1f);

	/* find: every node, with kind and type; KT_FIND_ITEMS skips them. */
	seen = 0;
	ok(kt_find_new(&it, s, "/d", KT_FIND_SUBTREE));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if (strcmp(e->name, "/d/b-chr") == 0) {
			assert_int_equal(e->kind, KT_KIND_SPECIAL);
			assert_int_equal(e->type, KT_TYPE_CHR);
			assert_int_equal(e->id, lstat_of(s, "/d/b-chr").id);
		}
		seen++;
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	assert_int_equal(seen, 6);
	ok(kt_find_new(&it, s, "/d", KT_FIND_SUBTREE | KT_FIND_ITEMS));
	ok(kt_iter_next(&e, it));
	assert_string_equal(e->name, "/d/e-item");
	expect_rc(kt_iter_next(&e, it), KT_ITEROVER);
	kt_iter_free(it);
}

/* A special file holds no value and has no children: every call that
 * would need one fails, naming the node and what it is, and changes
 * nothing. */
static void test_special__holds_no_value(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options excl = KT_CREATE_OPTIONS_INIT;
	kt_create_options p = KT_CREATE_OPTIONS_INIT;
	kt_iter *it = NULL;
	char buf[8], *t = NULL;
	void *v = NULL;
	size_t n = 0;
	uint64_t id;

	mknod_ok(s, "/fifo", KT_TYPE_FIFO, 0);
	mknod_ok(s, "/tty", KT_TYPE_CHR, makedev(4, 1));
	ok(kt_symlink(s, "/to-fifo", "/fifo", NULL));
	id = lstat_of(s, "/fifo").id;
	kt_assert_rejected(s, kt_get(&v, &n, s, "/fifo"), KT_EINVAL,
			   "'/fifo': a FIFO holds no value");
	assert_null(v);
	kt_assert_rejected(s, kt_get(&v, &n, s, "/to-fifo"), KT_EINVAL,
			   "a FIFO");
	kt_assert_rejected(s, kt_read(&n, s, "/tty", buf, sizeof(buf), 0),
			   KT_EINVAL, "a character device holds no value");
	kt_assert_rejected(s, kt_id_read(&n, s, id, buf, sizeof(buf), 0),
			   KT_EINVAL, "a FIFO");
	kt_assert_rejected(s, kt_write(s, "/fifo", "x", 1, 0), KT_EINVAL,
			   "a FIFO holds no value");
	kt_assert_rejected(s, kt_write(s, "/fifo", "x", 1, KT_APPEND),
			   KT_EINVAL, "a FIFO");
	kt_assert_rejected(s, kt_truncate(s, "/tty", 0), KT_EINVAL,
			   "a character device");
	kt_assert_rejected(s, kt_put(s, "/fifo", "x", 1, NULL), KT_EINVAL,
			   "a FIFO is there");
	kt_assert_rejected(s, kt_put(s, "/to-fifo", "x", 1, NULL), KT_EINVAL,
			   "a FIFO");
	excl.flags = KT_CREATE_EXCL;
	kt_assert_rejected(s, kt_put(s, "/fifo", "x", 1, &excl), KT_EEXISTS,
			   "a FIFO already exists");
	kt_assert_rejected(s, kt_delete(s, "/fifo", KT_DELETE_ITEM), KT_EINVAL,
			   "a FIFO is not an item");
	kt_assert_rejected(s, kt_readlink(&t, &n, s, "/fifo"), KT_EINVAL,
			   "not a symbolic link");
	kt_assert_rejected(s, kt_orphan_detach(&id, s, "/fifo"), KT_EINVAL,
			   "a FIFO is not an item");
	kt_assert_rejected(s, kt_orphan_copy(&id, s, "/tty"), KT_EINVAL,
			   "a character device is not an item");
	/* No children. */
	kt_assert_rejected(s, kt_iter_new(&it, s, "/fifo", NULL), KT_ENOTDIR,
			   "/fifo");
	kt_assert_rejected(s, kt_mkdir(s, "/fifo", NULL), KT_EEXISTS,
			   "a FIFO exists there");
	p.flags = KT_CREATE_PARENTS;
	kt_assert_rejected(s, kt_mkdir(s, "/fifo", &p), KT_EEXISTS, "a FIFO");
	kt_assert_rejected(s, kt_mkdir(s, "/fifo/d", &p), KT_ENOTDIR,
			   "'/fifo' is not a directory");
	kt_assert_rejected(s, kt_put(s, "/fifo/x", "v", 1, NULL), KT_ENOTDIR,
			   "'/fifo' is not a directory");
	kt_assert_rejected(s, kt_mknod(s, "/tty/x", KT_TYPE_FIFO, 0, NULL),
			   KT_ENOTDIR, "/tty");
	kt_assert_rejected(s, kt_symlink(s, "/fifo/l", "/", &p), KT_ENOTDIR,
			   "/fifo");
	kt_assert_rejected(s, kt_rename(s, "/tty", "/fifo/tty", 0), KT_ENOTDIR,
			   "/fifo");
}

/* Rename, delete, setattr and attributes treat it as any non-directory. */
static void test_special__treated_like_any_node(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options p = KT_CREATE_OPTIONS_INIT;
	kt_setattr_args a = KT_SETATTR_ARGS_INIT;
	kt_statbuf before, st;
	void *v = NULL;
	size_t n = 0;

	p.flags = KT_CREATE_PARENTS;
	mknod_ok(s, "/d/sda", KT_TYPE_BLK, makedev(8, 0));
	before = lstat_of(s, "/d/sda");
	ok(kt_attr_set(s, "/d/sda", "note", "disk", 4, 0));
	/* The destination's parent must exist, as for any node. */
	kt_assert_rejected(s, kt_rename(s, "/d/sda", "/e/disk", 0),
			   KT_ENOTFOUND, ANY_MSG);
	ok(kt_mkdir(s, "/e", &p));
	ok(kt_rename(s, "/d/sda", "/e/disk", 0));
	assert_absent(s, "/d/sda");
	st = lstat_of(s, "/e/disk");
	assert_int_equal(st.id, before.id);
	assert_int_equal(st.kind, KT_KIND_SPECIAL);
	assert_int_equal(st.type, KT_TYPE_BLK);
	assert_int_equal(st.rdev, makedev(8, 0));
	assert_int_equal(st.nattrs, 1);
	ok(kt_attr_get(&v, &n, s, "/e/disk", "note"));
	assert_int_equal(n, 4);
	assert_memory_equal(v, "disk", 4);
	kt_free(v);
	/* A non-directory replaces a non-directory, either way round. */
	put_str(s, "/e/item", "v");
	ok(kt_rename(s, "/e/disk", "/e/item", 0));
	assert_special(s, "/e/item", KT_TYPE_BLK, makedev(8, 0));
	mknod_ok(s, "/e/fifo", KT_TYPE_FIFO, 0);
	put_str(s, "/e/other", "w");
	ok(kt_rename(s, "/e/other", "/e/fifo", 0));
	assert_value(s, "/e/fifo", "w");
	/* Against directories: POSIX's codes. */
	ok(kt_mkdir(s, "/e/dir", NULL));
	kt_assert_rejected(s, kt_rename(s, "/e/item", "/e/dir", 0), KT_EISDIR,
			   ANY_MSG);
	kt_assert_rejected(s, kt_rename(s, "/e/dir", "/e/item", 0), KT_ENOTDIR,
			   ANY_MSG);
	kt_assert_rejected(
		s, kt_rename(s, "/e/fifo", "/e/item", KT_RENAME_NOREPLACE),
		KT_EEXISTS, ANY_MSG);
	ok(kt_rename(s, "/e/item", "/e/dir", KT_RENAME_EXCHANGE));
	assert_special(s, "/e/dir", KT_TYPE_BLK, makedev(8, 0));
	assert_int_equal(lstat_of(s, "/e/item").kind, KT_KIND_DIR);
	/* setattr: mode, owner, times; ctime moves. */
	before = lstat_of(s, "/e/dir");
	a.mask = KT_SET_MODE | KT_SET_UID | KT_SET_GID | KT_SET_ATIME |
		 KT_SET_MTIME;
	a.mode = 0600;
	a.uid = 42;
	a.gid = 43;
	a.atime_ns = 1000000001;
	a.mtime_ns = 2000000002;
	ok(kt_setattr(s, "/e/dir", &a, 0));
	st = lstat_of(s, "/e/dir");
	assert_int_equal(st.mode, 0600);
	assert_int_equal(st.uid, 42);
	assert_int_equal(st.gid, 43);
	assert_int_equal(st.atime_ns, 1000000001);
	assert_int_equal(st.mtime_ns, 2000000002);
	assert_true(st.ctime_ns >= before.ctime_ns);
	assert_true(st.version != before.version);
	assert_int_equal(st.type, KT_TYPE_BLK);
	assert_int_equal(st.rdev, makedev(8, 0));
	/* Through a link, stat and setattr reach the special file. */
	ok(kt_symlink(s, "/l", "/e/dir", NULL));
	ok(kt_stat(&st, s, "/l"));
	assert_int_equal(st.kind, KT_KIND_SPECIAL);
	a.mask = KT_SET_MODE;
	a.mode = 0640;
	ok(kt_setattr(s, "/l", &a, 0));
	assert_int_equal(lstat_of(s, "/e/dir").mode, 0640);
	/* Delete, also with the parent pruned. */
	ok(kt_attr_delete(s, "/e/dir", "note"));
	ok(kt_delete(s, "/e/dir", 0));
	assert_absent(s, "/e/dir");
	mknod_ok(s, "/p/q/sock", KT_TYPE_SOCK, 0);
	ok(kt_delete(s, "/p/q/sock", KT_DELETE_PRUNE));
	assert_absent(s, "/p");
	mknod_ok(s, "/r/s/t", KT_TYPE_FIFO, 0);
	ok(kt_delete(s, "/r", KT_DELETE_RECURSIVE));
	assert_absent(s, "/r");
}

/* A batch makes special files with everything else, atomically. */
static void test_special__batch(void **state)
{
	kt_store *s = store_of(state);
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_batch *b = NULL;
	kt_statbuf st;
	char *before, *after;

	o.flags = KT_CREATE_MODE;
	o.mode = 0600;
	ok(kt_batch_new(&b, s));
	ok(kt_batch_mknod(b, "/b/fifo", KT_TYPE_FIFO, 0, &o));
	ok(kt_batch_mknod(b, "/b/null", KT_TYPE_CHR, makedev(1, 3), NULL));
	ok(kt_batch_rename(b, "/b/fifo", "/b/pipe", 0));
	ok(kt_batch_attr_set(b, "/b/pipe", "k", "v", 1, 0));
	ok(kt_batch_commit(b));
	kt_batch_free(b);
	st = lstat_of(s, "/b/pipe");
	assert_int_equal(st.type, KT_TYPE_FIFO);
	assert_int_equal(st.mode, 0600);
	assert_int_equal(st.nattrs, 1);
	assert_special(s, "/b/null", KT_TYPE_CHR, makedev(1, 3));
	assert_absent(s, "/b/fifo");

	/* One failing operation: nothing of the batch is applied. */
	before = kt_test_digest(s);
	ok(kt_batch_new(&b, s));
	ok(kt_batch_mknod(b, "/c/new", KT_TYPE_SOCK, 0, NULL));
	ok(kt_batch_mknod(b, "/b/null", KT_TYPE_FIFO, 0, NULL));
	expect_rc(kt_batch_commit(b), KT_EEXISTS);
	assert_non_null(strstr(kt_errmsg(), "batch operation 2 (mknod)"));
	assert_non_null(strstr(kt_errmsg(), "/b/null"));
	kt_batch_free(b);
	after = kt_test_digest(s);
	assert_string_equal(before, after);
	free(before);
	free(after);
	assert_absent(s, "/c");
}

static void test_special__counted_and_checked(void **state)
{
	kt_store *s = store_of(state);
	kt_store_stats ss;
	size_t bad = 99;

	mknod_ok(s, "/a", KT_TYPE_FIFO, 0);
	mknod_ok(s, "/b", KT_TYPE_SOCK, 0);
	mknod_ok(s, "/d/c", KT_TYPE_CHR, makedev(1, 5));
	put_str(s, "/i", "v");
	ok(kt_stats(&ss, s));
	assert_int_equal(ss.specials, 3);
	assert_int_equal(ss.items, 1);
	assert_int_equal(ss.dirs, 2);
	assert_int_equal(ss.links, 0);
	ok(kt_check(&bad, s, NULL));
	assert_int_equal(bad, 0);
	ok(kt_repair(&bad, s, NULL));
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name)                                                                \
	cmocka_unit_test_setup_teardown(test_special__##name, kt_test_setup,   \
					kt_test_teardown)
		T(each_type_recorded),
		T(create_options),
		T(makes_missing_ancestors),
		T(over_anything_is_eexists),
		T(bad_arguments),
		T(listed_with_kind_and_type),
		T(holds_no_value),
		T(treated_like_any_node),
		T(batch),
		T(counted_and_checked),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
