/*
 * test_store.c - opening, creating and closing stores: kt_open() options,
 * the delimiter recorded at creation, refusal of foreign directories and of
 * a store held by another process, durability across close/reopen, and the
 * error reporting functions kt_strerror() and kt_errmsg().
 */
#include "kt_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <leveldb/c.h>

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

/* A fresh path below the fixture's temporary directory, not yet existing. */
static void sub_path(char *buf, size_t cap, const kt_test_fixture *f,
		     const char *name)
{
	int n = snprintf(buf, cap, "%s/%s", f->dir, name);

	assert_true(n > 0 && (size_t)n < cap);
}

/* Assert that the last error message contains @p needle. */
static void assert_msg_has(const char *needle)
{
	const char *m = kt_errmsg();

	assert_non_null(m);
	if (strstr(m, needle) == NULL)
		fail_msg("message '%s' does not contain '%s'", m, needle);
}

/* Open a new store at @p dir with delimiter @p delim (NULL: default). */
static kt_store *create_store(const char *dir, const char *delim)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	int rc;

	o.create_if_missing = 1;
	o.delimiter = delim;
	rc = kt_open(&st, dir, &o);
	if (rc != 0)
		fail_msg("kt_open(%s): %d %s", dir, rc, kt_errmsg());
	assert_non_null(st);
	return st;
}

/* Put a small item, failing the test on error. */
static void put_str(kt_store *st, const char *path, const char *val)
{
	int rc = kt_put(st, path, val, strlen(val), NULL);

	if (rc != 0)
		fail_msg("kt_put(%s): %d %s", path, rc, kt_errmsg());
}

/* Assert that @p path holds the value @p val. */
static void assert_value(kt_store *st, const char *path, const char *val)
{
	void *v = NULL;
	size_t len = 0;
	int rc = kt_get(&v, &len, st, path);

	if (rc != 0)
		fail_msg("kt_get(%s): %d %s", path, rc, kt_errmsg());
	assert_int_equal(len, strlen(val));
	assert_memory_equal(v, val, len);
	kt_free(v);
}

static void test_store__open_missing_without_create_is_notfound(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = (kt_store *)&o; /* poison: must become NULL */
	char dir[512];
	struct stat sb;

	sub_path(dir, sizeof(dir), f, "absent");
	assert_int_equal(kt_open(&st, dir, &o), KT_ENOTFOUND);
	assert_null(st);
	assert_msg_has("absent");
	st = (kt_store *)&o;
	assert_int_equal(kt_open(&st, dir, NULL), KT_ENOTFOUND);
	assert_null(st);
	/* A failed open must not have created anything. */
	assert_int_equal(stat(dir, &sb), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_store__open_empty_dir(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = NULL;
	char dir[512];

	/* An empty directory holds no store: not found without
	 * create_if_missing, and a store can be made in it. */
	sub_path(dir, sizeof(dir), f, "empty");
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(kt_open(&st, dir, NULL), KT_ENOTFOUND);
	assert_null(st);
	st = create_store(dir, NULL);
	put_str(st, "/x", "1");
	kt_close(st);
	st = NULL;
	assert_int_equal(kt_open(&st, dir, NULL), 0);
	assert_value(st, "/x", "1");
	kt_close(st);
}

static void test_store__create_if_missing_makes_store(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = NULL;
	kt_statbuf sb;
	char dir[512];

	sub_path(dir, sizeof(dir), f, "new");
	st = create_store(dir, NULL);
	/* A new store has a root directory and nothing else. */
	assert_int_equal(kt_stat(&sb, st, "/"), 0);
	assert_true(sb.kind & KT_KIND_DIR);
	assert_int_equal(kt_get(&(void *){NULL}, &(size_t){0}, st, "/x"),
			 KT_ENOTFOUND);
	kt_close(st);
	/* Reopening without options now finds it. */
	st = NULL;
	assert_int_equal(kt_open(&st, dir, NULL), 0);
	assert_non_null(st);
	kt_close(st);
}

static void test_store__error_if_exists(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = (kt_store *)&o;
	char dir[512];

	put_str(f->store, "/keep", "v");
	kt_close(f->store);
	f->store = NULL;

	o.error_if_exists = 1;
	assert_int_equal(kt_open(&st, f->path, &o), KT_EEXISTS);
	assert_null(st);
	assert_true(kt_errmsg()[0] != '\0');
	o.create_if_missing = 1;
	st = (kt_store *)&o;
	assert_int_equal(kt_open(&st, f->path, &o), KT_EEXISTS);
	assert_null(st);

	/* The refused open did not touch the store. */
	assert_int_equal(kt_open(&f->store, f->path, NULL), 0);
	assert_value(f->store, "/keep", "v");

	/* On a fresh directory both flags together create it. */
	sub_path(dir, sizeof(dir), f, "fresh");
	st = NULL;
	assert_int_equal(kt_open(&st, dir, &o), 0);
	assert_non_null(st);
	kt_close(st);
}

/* Populate a small tree used by the read-only test. */
static void populate(kt_store *st)
{
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	co.flags = KT_CREATE_PARENTS;
	put_str(st, "/a", "alpha");
	assert_int_equal(kt_mkdir(st, "/d/e", &co), 0);
	put_str(st, "/d/e/f", "deep");
	assert_int_equal(kt_symlink(st, "/l", "/a", NULL), 0);
	assert_int_equal(kt_attr_set(st, "/a", "color", "red", 3, 0), 0);
}

static void test_store__read_only_refuses_writes(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_batch *b = NULL;
	kt_iter *it = NULL;
	const kt_entry *e;
	kt_statbuf sb;
	char *before, *after;
	char *target = NULL;
	void *v = NULL;
	size_t len = 0, n = 0;
	char buf[8];
	int rc;

	populate(f->store);
	before = kt_test_digest(f->store);
	kt_close(f->store);
	f->store = NULL;
	o.read_only = 1;
	assert_int_equal(kt_open(&f->store, f->path, &o), 0);

	kt_assert_rejected(f->store, kt_put(f->store, "/n", "x", 1, NULL),
			   KT_EREADONLY, "/n");
	kt_assert_rejected(f->store, kt_put(f->store, "/a", "x", 1, NULL),
			   KT_EREADONLY, "/a");
	kt_assert_rejected(f->store, kt_mkdir(f->store, "/nd", NULL),
			   KT_EREADONLY, "/nd");
	kt_assert_rejected(f->store, kt_symlink(f->store, "/nl", "/a", NULL),
			   KT_EREADONLY, "/nl");
	kt_assert_rejected(f->store, kt_write(f->store, "/a", "x", 1, 0),
			   KT_EREADONLY, "/a");
	kt_assert_rejected(f->store, kt_truncate(f->store, "/a", 0),
			   KT_EREADONLY, "/a");
	kt_assert_rejected(f->store, kt_delete(f->store, "/a", 0),
			   KT_EREADONLY, "/a");
	kt_assert_rejected(f->store,
			   kt_delete(f->store, "/d", KT_DELETE_RECURSIVE),
			   KT_EREADONLY, "/d");
	kt_assert_rejected(f->store, kt_rename(f->store, "/a", "/b", 0),
			   KT_EREADONLY, "/a");
	kt_assert_rejected(f->store,
			   kt_attr_set(f->store, "/a", "k", "v", 1, 0),
			   KT_EREADONLY, "/a");
	kt_assert_rejected(f->store, kt_attr_delete(f->store, "/a", "color"),
			   KT_EREADONLY, "/a");
	sa.mask = KT_SET_MODE;
	sa.mode = 0600;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EREADONLY, "/a");

	/* A batch is refused when made, when recorded or at the latest
	 * when committed; nothing is written. */
	rc = kt_batch_new(&b, f->store);
	if (rc == 0) {
		rc = kt_batch_put(b, "/bp", "x", 1, NULL);
		if (rc == 0)
			rc = kt_batch_commit(b);
		kt_batch_free(b);
	}
	assert_int_equal(rc, KT_EREADONLY);
	assert_true(kt_errmsg()[0] != '\0');

	/* Reads work. */
	assert_value(f->store, "/a", "alpha");
	assert_value(f->store, "/l", "alpha");
	assert_value(f->store, "/d/e/f", "deep");
	assert_int_equal(kt_stat(&sb, f->store, "/d"), 0);
	assert_int_equal(sb.kind, KT_KIND_DIR);
	assert_int_equal(kt_readlink(&target, &len, f->store, "/l"), 0);
	assert_string_equal(target, "/a");
	kt_free(target);
	assert_int_equal(kt_read(&n, f->store, "/a", buf, 3, 1), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(buf, "lph", 3);
	assert_int_equal(kt_attr_get(&v, &len, f->store, "/a", "color"), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(v, "red", 3);
	kt_free(v);
	assert_int_equal(kt_iter_new(&it, f->store, "/", NULL), 0);
	g_iter = it;
	n = 0;
	while ((rc = kt_iter_next(&e, it)) == 0)
		n++;
	assert_int_equal(rc, KT_ITEROVER);
	assert_int_equal(n, 3);
	iter_free(it);

	/* Reopened writable, the store is exactly as it was. */
	kt_close(f->store);
	f->store = NULL;
	assert_int_equal(kt_open(&f->store, f->path, NULL), 0);
	after = kt_test_digest(f->store);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

static void test_store__sync_option(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	char big[10000];

	kt_close(f->store);
	f->store = NULL;
	o.sync = 1;
	assert_int_equal(kt_open(&f->store, f->path, &o), 0);
	memset(big, 'q', sizeof(big));
	put_str(f->store, "/s1", "one");
	assert_int_equal(kt_put(f->store, "/s2", big, sizeof(big), NULL), 0);
	assert_int_equal(kt_write(f->store, "/s1", "ONE", 3, 0), 0);
	assert_int_equal(kt_sync(f->store), 0);
	kt_test_reopen(f);
	assert_value(f->store, "/s1", "ONE");
	{
		void *v = NULL;
		size_t len = 0;

		assert_int_equal(kt_get(&v, &len, f->store, "/s2"), 0);
		assert_int_equal(len, sizeof(big));
		assert_memory_equal(v, big, sizeof(big));
		kt_free(v);
	}
}

static void test_store__cache_size_option(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	size_t sz = 300000, i, len = 0;
	unsigned char *big = malloc(sz);
	void *v = NULL;

	assert_non_null(big);
	for (i = 0; i < sz; i++)
		big[i] = (unsigned char)((i * 2654435761u) >> 24);
	kt_close(f->store);
	f->store = NULL;
	/* A tiny cache still works, just slower. */
	o.cache_size = 4096;
	assert_int_equal(kt_open(&f->store, f->path, &o), 0);
	assert_int_equal(kt_put(f->store, "/big", big, sz, NULL), 0);
	kt_close(f->store);
	f->store = NULL;
	o.cache_size = (size_t)64 << 20;
	assert_int_equal(kt_open(&f->store, f->path, &o), 0);
	assert_int_equal(kt_get(&v, &len, f->store, "/big"), 0);
	assert_int_equal(len, sz);
	assert_memory_equal(v, big, sz);
	kt_free(v);
	free(big);
}

/* $KEYTREE_ROW_CACHE sets how many rows the row cache keeps: any number
 * from 0 (none) to 2^20 opens the store, which reads and writes alike
 * (a row written after it was read, through a small cache and with
 * none); anything else is refused at open, naming the variable and the
 * value. */
static void test_store__row_cache_variable(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *other = NULL;
	const char *bad[] = {"lots", "-1", "5x", "1048577", " 8"};
	const char *good[] = {"0", "1", "3", "1048576"};
	char want[16];
	size_t i;

	KT_TEST_LEVELDB_ONLY("the row cache is the LevelDB engine's");
	kt_close(f->store);
	f->store = NULL;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("KEYTREE_ROW_CACHE", bad[i], 1);
		assert_int_equal(kt_open(&other, f->path, NULL), KT_EINVAL);
		assert_null(other);
		assert_non_null(strstr(kt_errmsg(), "KEYTREE_ROW_CACHE"));
		assert_non_null(strstr(kt_errmsg(), bad[i]));
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		void *v = NULL;
		size_t len = 0;

		setenv("KEYTREE_ROW_CACHE", good[i], 1);
		assert_int_equal(kt_open(&other, f->path, NULL), 0);
		snprintf(want, sizeof(want), "%zu", i);
		assert_int_equal(kt_put(other, "/r", want, strlen(want), NULL),
				 0);
		assert_int_equal(kt_get(&v, &len, other, "/r"), 0);
		kt_free(v);
		assert_int_equal(kt_put(other, "/r", "x", 1, NULL), 0);
		assert_int_equal(kt_get(&v, &len, other, "/r"), 0);
		assert_int_equal(len, 1);
		assert_memory_equal(v, "x", 1);
		kt_free(v);
		kt_close(other);
		other = NULL;
	}
	unsetenv("KEYTREE_ROW_CACHE");
	assert_int_equal(kt_open(&f->store, f->path, NULL), 0);
}

/* Files of the store at @p dir whose names end in .ldb: LevelDB's sorted
 * tables, which it writes when a write buffer fills. */
static int count_tables(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l > 4 && strcmp(de->d_name + l - 4, ".ldb") == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* Put 4 MiB of values (40 of 100 KiB) into a new store at @p dir opened
 * with @p o, close it, and return how many tables it has then.  Through a
 * 1 MiB buffer the third buffer cannot start until the second has gone
 * out as a table, so two are there even if the close cuts in. */
static int tables_after_writes(const char *dir, const kt_options *o)
{
	size_t sz = 100 * 1024, i;
	unsigned char *v = malloc(sz);
	kt_store *st = NULL;
	char path[32];
	int k;

	assert_non_null(v);
	assert_int_equal(kt_open(&st, dir, o), 0);
	for (k = 0; k < 40; k++) {
		for (i = 0; i < sz; i++)
			v[i] = (unsigned char)(((i + (size_t)k * 7919u) *
						2654435761u) >> 24);
		snprintf(path, sizeof(path), "/v%d", k);
		assert_int_equal(kt_put(st, path, v, sz, NULL), 0);
	}
	kt_close(st);
	free(v);
	return count_tables(dir);
}

/* write_buffer_size bounds what a handle keeps of its latest writes in
 * memory: with 1 MiB, 4 MiB of writes go out to tables as they come; with
 * the default (16 MiB) they all stay in the buffer and its log.  Sizes
 * outside 1 MiB to 1 GiB are refused, naming the field, and nothing is
 * created. */
static void test_store__write_buffer_option(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	char small[PATH_MAX], dflt[PATH_MAX], bad[PATH_MAX];
	const size_t refused[] = {1000, ((size_t)1 << 20) - 1,
				  ((size_t)1 << 30) + 1};
	struct stat sb;
	kt_store *st = NULL;
	size_t i;

	KT_TEST_LEVELDB_ONLY("write_buffer_size is LevelDB's memtable");
	snprintf(small, sizeof(small), "%s-wb1", f->path);
	snprintf(dflt, sizeof(dflt), "%s-wb16", f->path);
	snprintf(bad, sizeof(bad), "%s-wbbad", f->path);
	o.create_if_missing = 1;
	o.write_buffer_size = (size_t)1 << 20;
	assert_true(tables_after_writes(small, &o) >= 2);
	o.write_buffer_size = 0;
	assert_int_equal(tables_after_writes(dflt, &o), 0);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char want[64];

		o.write_buffer_size = refused[i];
		assert_int_equal(kt_open(&st, bad, &o), KT_EINVAL);
		assert_null(st);
		snprintf(want, sizeof(want), "write_buffer_size %zu",
			 refused[i]);
		assert_non_null(strstr(kt_errmsg(), want));
		assert_int_not_equal(stat(bad, &sb), 0);
	}
	/* What was written with the small buffer reads back. */
	o.write_buffer_size = (size_t)1 << 30;
	o.create_if_missing = 0;
	assert_int_equal(kt_open(&st, small, &o), 0);
	for (i = 0; i < 40; i++) {
		char path[32];
		void *v = NULL;
		size_t len = 0;

		snprintf(path, sizeof(path), "/v%zu", i);
		assert_int_equal(kt_get(&v, &len, st, path), 0);
		assert_int_equal(len, 100 * 1024);
		kt_free(v);
	}
	kt_close(st);
	kt_test_rmtree(small);
	kt_test_rmtree(dflt);
}

static void test_store__default_delimiter(void **state)
{
	kt_test_fixture *f = *state;
	size_t len = 99;
	const char *d = kt_delimiter(f->store, &len);

	assert_non_null(d);
	assert_string_equal(d, "\xc2\xa6");
	assert_string_equal(d, KT_DEFAULT_DELIMITER);
	assert_int_equal(len, 2);
	/* len may be NULL. */
	assert_string_equal(kt_delimiter(f->store, NULL), "\xc2\xa6");
	kt_test_reopen(f);
	len = 0;
	assert_string_equal(kt_delimiter(f->store, &len), "\xc2\xa6");
	assert_int_equal(len, 2);
	/* The default delimiter is reserved in names. */
	kt_assert_rejected(f->store,
			   kt_put(f->store, "/x\xc2\xa6y", "v", 1, NULL),
			   KT_ERESERVED, "/x");
}

/* Create a store with @p delim, check it is reported, survives reopening
 * with a NULL delimiter, and is the one reserved in names. */
static void check_custom_delimiter(kt_test_fixture *f, const char *sub,
				   const char *delim)
{
	char dir[512], name[64], other[64];
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st;
	size_t len = 0;

	sub_path(dir, sizeof(dir), f, sub);
	st = create_store(dir, delim);
	assert_string_equal(kt_delimiter(st, &len), delim);
	assert_int_equal(len, strlen(delim));
	kt_close(st);

	st = NULL;
	assert_int_equal(kt_open(&st, dir, NULL), 0);
	len = 0;
	assert_string_equal(kt_delimiter(st, &len), delim);
	assert_int_equal(len, strlen(delim));
	kt_close(st);

	/* Opening with the same delimiter given explicitly works too. */
	st = NULL;
	o.delimiter = delim;
	assert_int_equal(kt_open(&st, dir, &o), 0);
	snprintf(name, sizeof(name), "/a%sb", delim);
	assert_int_equal(kt_put(st, name, "v", 1, NULL), KT_ERESERVED);
	/* The default delimiter is an ordinary name byte pair now. */
	snprintf(other, sizeof(other), "/a\xc2\xa6" "b");
	put_str(st, other, "broken bar");
	assert_value(st, other, "broken bar");
	kt_close(st);
}

static void test_store__custom_delimiters(void **state)
{
	kt_test_fixture *f = *state;

	check_custom_delimiter(f, "pipe", "|");
	check_custom_delimiter(f, "bullet", "\xe2\x80\xa2");
	check_custom_delimiter(f, "emoji", "\xf0\x9f\x98\x80");
}

static void test_store__reopen_with_other_delimiter_fails(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char dir[512];

	sub_path(dir, sizeof(dir), f, "pipe");
	st = create_store(dir, "|");
	put_str(st, "/k", "v");
	kt_close(st);

	o.delimiter = "#";
	st = (kt_store *)&o;
	assert_int_equal(kt_open(&st, dir, &o), KT_EINVAL);
	assert_null(st);
	assert_msg_has("|");
	assert_msg_has("#");
	/* The default given explicitly is just another delimiter. */
	o.delimiter = KT_DEFAULT_DELIMITER;
	st = NULL;
	assert_int_equal(kt_open(&st, dir, &o), KT_EINVAL);
	assert_null(st);
	assert_msg_has("|");
	/* Also with create_if_missing: the store exists. */
	o.delimiter = "#";
	o.create_if_missing = 1;
	assert_int_equal(kt_open(&st, dir, &o), KT_EINVAL);
	assert_null(st);

	/* NULL still opens it, delimiter unchanged, data intact. */
	o.delimiter = NULL;
	o.create_if_missing = 0;
	assert_int_equal(kt_open(&st, dir, &o), 0);
	assert_string_equal(kt_delimiter(st, NULL), "|");
	assert_value(st, "/k", "v");
	kt_close(st);

	/* A default store refuses another delimiter too. */
	kt_close(f->store);
	f->store = NULL;
	o.delimiter = "|";
	assert_int_equal(kt_open(&f->store, f->path, &o), KT_EINVAL);
	assert_null(f->store);
	assert_msg_has("|");
	assert_msg_has("\xc2\xa6");
	o.delimiter = NULL;
	assert_int_equal(kt_open(&f->store, f->path, &o), 0);
}

static void test_store__invalid_delimiters(void **state)
{
	/* Neither one UTF-8 character nor a single byte, or NUL / '/'.
	 * Overlong forms and surrogates are not UTF-8 (RFC 3629).
	 * Note: the header allows "a single byte", so a lone "\xc2" is not
	 * tested as invalid here. */
	static const char *bad[] = {
		"",
		"/",
		"ab",
		"||",
		"\xc2\xa6\xc2\xa6",
		"\xc2\x41",         /* lead byte + ASCII */
		"\xe2\x80",         /* truncated 3-byte sequence */
		"\xa6\xa6",         /* two continuation bytes */
		"\xc0\xaf",         /* overlong '/' */
		"\xe0\x80\xaf",     /* overlong '/' */
		"\xed\xa0\x80",     /* UTF-16 surrogate */
		"\xf8\x88\x80\x80\x80", /* 5-byte form */
		"\xe2\x80\xa2x",    /* a character plus a byte */
	};
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st;
	char dir[512];
	size_t i;

	sub_path(dir, sizeof(dir), f, "bad");
	o.create_if_missing = 1;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.delimiter = bad[i];
		st = (kt_store *)&o;
		if (kt_open(&st, dir, &o) != KT_EINVAL)
			fail_msg("delimiter #%zu accepted", i);
		assert_null(st);
		assert_true(kt_errmsg()[0] != '\0');
		/* Nothing was created. */
		st = (kt_store *)&o;
		assert_int_equal(kt_open(&st, dir, NULL), KT_ENOTFOUND);
		assert_null(st);
	}
}

static void test_store__foreign_directory_is_notstore(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char dir[512], file[600];
	struct stat sb;
	FILE *fp;
	int i;

	sub_path(dir, sizeof(dir), f, "plain");
	assert_int_equal(mkdir(dir, 0755), 0);
	for (i = 0; i < 3; i++) {
		snprintf(file, sizeof(file), "%s/file%d.txt", dir, i);
		fp = fopen(file, "w");
		assert_non_null(fp);
		fprintf(fp, "not a store %d\n", i);
		fclose(fp);
	}
	assert_int_equal(kt_open(&st, dir, NULL), KT_ENOTSTORE);
	assert_null(st);
	assert_msg_has("plain");
	/* create_if_missing must not build a store over foreign files. */
	o.create_if_missing = 1;
	assert_int_equal(kt_open(&st, dir, &o), KT_ENOTSTORE);
	assert_null(st);
	snprintf(file, sizeof(file), "%s/CURRENT", dir);
	assert_int_equal(stat(file, &sb), -1);
	snprintf(file, sizeof(file), "%s/file1.txt", dir);
	assert_int_equal(stat(file, &sb), 0);
	assert_int_equal(sb.st_size, strlen("not a store 1\n"));
}

/* A LevelDB database that is not a keytree store, in @p dir: foo=bar. */
static void foreign_make(const char *dir)
{
	leveldb_options_t *lo = leveldb_options_create();
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	leveldb_t *db;
	char *err = NULL;

	leveldb_options_set_create_if_missing(lo, 1);
	db = leveldb_open(lo, dir, &err);
	assert_null(err);
	leveldb_put(db, wo, "foo", 3, "bar", 3, &err);
	assert_null(err);
	leveldb_close(db);
	leveldb_writeoptions_destroy(wo);
	leveldb_options_destroy(lo);
}

/* The database foreign_make() made is still there, untouched. */
static void foreign_intact(const char *dir)
{
	leveldb_options_t *lo = leveldb_options_create();
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	leveldb_t *db;
	char *err = NULL, *val;
	size_t vlen = 0;

	db = leveldb_open(lo, dir, &err);
	assert_null(err);
	val = leveldb_get(db, ro, "foo", 3, &vlen, &err);
	assert_null(err);
	assert_int_equal(vlen, 3);
	assert_memory_equal(val, "bar", 3);
	leveldb_free(val);
	leveldb_close(db);
	leveldb_readoptions_destroy(ro);
	leveldb_options_destroy(lo);
}

static void test_store__foreign_leveldb_is_notstore(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char dir[512];

	sub_path(dir, sizeof(dir), f, "foreign");
	foreign_make(dir);

	assert_int_equal(kt_open(&st, dir, NULL), KT_ENOTSTORE);
	assert_null(st);
	o.create_if_missing = 1;
	assert_int_equal(kt_open(&st, dir, &o), KT_ENOTSTORE);
	assert_null(st);
	assert_true(kt_errmsg()[0] != '\0');

	/* The foreign database is untouched. */
	foreign_intact(dir);
}

static void test_store__open_in_other_process_goes_through_holder(void **state)
{
	kt_test_fixture *f = *state;
	int up[2], down[2];
	kt_store *st = NULL;
	char c = 0;
	pid_t pid;
	int status = 0;

	put_str(f->store, "/k", "v");
	kt_close(f->store);
	f->store = NULL;
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		kt_store *cs = NULL;
		char r = kt_open(&cs, f->path, NULL) == 0 ? 'o' : 'e';

		close(up[0]);
		close(down[1]);
		if (write(up[1], &r, 1) != 1)
			_exit(2);
		if (read(down[0], &r, 1) < 0)
			_exit(3);
		kt_close(cs);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &c, 1), 1);
	assert_int_equal(c, 'o');

	/* The child holds the store and serves it: this open goes through
	 * it (test_remote.c tests that path in depth). */
	assert_int_equal(kt_open(&st, f->path, NULL), 0);
	assert_non_null(st);
	{
		void *v = NULL;
		size_t len = 0;

		assert_int_equal(kt_get(&v, &len, st, "/k"), 0);
		assert_int_equal(len, 1);
		assert_memory_equal(v, "v", 1);
		kt_free(v);
	}
	kt_close(st);
	/* Read-only opens too. */
	{
		kt_options o = KT_OPTIONS_INIT;

		o.read_only = 1;
		st = NULL;
		assert_int_equal(kt_open(&st, f->path, &o), 0);
		assert_int_equal(kt_put(st, "/k", "w", 1, NULL), KT_EREADONLY);
		kt_close(st);
	}

	c = 'q';
	assert_int_equal(write(down[1], &c, 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(up[0]);
	close(down[1]);

	/* Released by the other process: opens again. */
	assert_int_equal(kt_open(&f->store, f->path, NULL), 0);
	assert_value(f->store, "/k", "v");
}

/* kt_destroy() of a directory store removes its files and the directory,
 * and refuses what is not a store, or a store in use. */
static void test_store__destroy_directory_store(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_options bad = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char dir[512], file[600];
	struct stat sb;
	FILE *fp;

	sub_path(dir, sizeof(dir), f, "doomed");
	o.create_if_missing = 1;
	assert_int_equal(kt_open(&st, dir, &o), 0);
	put_str(st, "/a/b", "v");
	/* Open here: LevelDB's lock refuses, and nothing is removed. */
	assert_int_equal(kt_destroy(dir, NULL), KT_EBUSY);
	assert_msg_has("doomed");
	assert_value(st, "/a/b", "v");
	kt_close(st);
	st = NULL;

	bad.version = 9;
	assert_int_equal(kt_destroy(dir, &bad), KT_EINVAL);
	assert_int_equal(kt_destroy(NULL, NULL), KT_EINVAL);
	assert_int_equal(kt_destroy("", NULL), KT_EINVAL);
	assert_int_equal(stat(dir, &sb), 0);

	assert_int_equal(kt_destroy(dir, NULL), 0);
	assert_int_equal(stat(dir, &sb), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(kt_open(&st, dir, NULL), KT_ENOTFOUND);
	assert_int_equal(kt_destroy(dir, NULL), KT_ENOTFOUND);
	assert_msg_has("doomed");

	/* A file of the user's in the store directory stays, and so does
	 * the directory holding it. */
	assert_int_equal(kt_open(&st, dir, &o), 0);
	kt_close(st);
	snprintf(file, sizeof(file), "%s/NOTES", dir);
	fp = fopen(file, "w");
	assert_non_null(fp);
	fputs("mine\n", fp);
	fclose(fp);
	assert_int_equal(kt_destroy(dir, NULL), 0);
	assert_int_equal(stat(file, &sb), 0);
	snprintf(file, sizeof(file), "%s/CURRENT", dir);
	assert_int_equal(stat(file, &sb), -1);
	assert_int_equal(kt_open(&st, dir, NULL), KT_ENOTSTORE);

	/* A directory that is not a store is left alone. */
	assert_int_equal(kt_destroy(dir, NULL), KT_ENOTSTORE);
	snprintf(file, sizeof(file), "%s/NOTES", dir);
	assert_int_equal(stat(file, &sb), 0);
}

static void test_store__destroy_refuses_foreign_leveldb(void **state)
{
	kt_test_fixture *f = *state;
	char dir[512];

	sub_path(dir, sizeof(dir), f, "foreign");
	foreign_make(dir);

	assert_int_equal(kt_destroy(dir, NULL), KT_ENOTSTORE);
	assert_msg_has("foreign");
	foreign_intact(dir);
}

static void test_store__free_functions_accept_null(void **state)
{
	(void)state;
	kt_close(NULL);
	kt_free(NULL);
	kt_iter_free(NULL); /* accepts NULL */
	kt_batch_free(NULL);
	/* Reaching here without a crash is the assertion; and the library
	 * still works afterwards. */
	assert_string_equal(kt_version(), KT_VERSION_STRING);
}

static void test_store__open_rejects_bad_arguments(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = (kt_store *)f;

	assert_int_equal(kt_open(&st, NULL, NULL), KT_EINVAL);
	assert_null(st);
	assert_true(kt_errmsg()[0] != '\0');
	assert_int_equal(kt_open(NULL, f->path, NULL), KT_EINVAL);
}

static void test_store__data_survives_reopen(void **state)
{
	kt_test_fixture *f = *state;
	char *before, *after;
	kt_statbuf a, b;

	populate(f->store);
	assert_int_equal(kt_write(f->store, "/d/e/f", "DE", 2, 0), 0);
	assert_int_equal(kt_lstat(&a, f->store, "/d/e/f"), 0);
	before = kt_test_digest(f->store);
	kt_test_reopen(f);
	after = kt_test_digest(f->store);
	assert_string_equal(before, after);
	assert_int_equal(kt_lstat(&b, f->store, "/d/e/f"), 0);
	assert_int_equal(a.id, b.id);
	assert_int_equal(a.version, b.version);
	assert_value(f->store, "/d/e/f", "DEep");
	assert_value(f->store, "/l", "alpha");
	free(before);
	free(after);
}

static void test_store__sync_works(void **state)
{
	kt_test_fixture *f = *state;

	put_str(f->store, "/a", "1");
	assert_int_equal(kt_sync(f->store), 0);
	put_str(f->store, "/b", "2");
	assert_int_equal(kt_sync(f->store), 0);
	assert_int_equal(kt_sync(f->store), 0);
	kt_test_reopen(f);
	assert_value(f->store, "/a", "1");
	assert_value(f->store, "/b", "2");
}

static void test_store__strerror_distinct(void **state)
{
	static const int codes[] = {
		KT_OK, KT_ENOTFOUND, KT_EEXISTS, KT_ENOTDIR, KT_EISDIR,
		KT_ENOTEMPTY, KT_ELOOP, KT_EINVAL, KT_ENAMETOOLONG,
		KT_ERESERVED, KT_EBUSY, KT_EREADONLY, KT_ENOMEM, KT_ECORRUPT,
		KT_EIO, KT_ENOTSTORE, KT_EVERSION, KT_ECONFLICT, KT_ETOOBIG,
		KT_ENOATTR, KT_ITEROVER,
	};
	static const int unknown[] = {1, 42, -20, -99, -101, -1000, INT_MIN,
				      INT_MAX};
	size_t n = sizeof(codes) / sizeof(codes[0]), i, j;
	const char *s, *t;

	(void)state;
	for (i = 0; i < n; i++) {
		s = kt_strerror(codes[i]);
		assert_non_null(s);
		if (s[0] == '\0')
			fail_msg("kt_strerror(%d) is empty", codes[i]);
		for (j = 0; j < i; j++) {
			t = kt_strerror(codes[j]);
			if (strcmp(s, t) == 0)
				fail_msg("kt_strerror(%d) == kt_strerror(%d):"
					 " '%s'", codes[i], codes[j], s);
		}
	}
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		s = kt_strerror(unknown[i]);
		assert_non_null(s);
		assert_true(s[0] != '\0');
	}
}

static void *errmsg_thread(void *arg)
{
	const char **out = arg;
	static char copy[2][512];

	/* A thread that has not failed sees an empty message. */
	snprintf(copy[0], sizeof(copy[0]), "%s", kt_errmsg());
	out[0] = copy[0];
	return NULL;
}

static void test_store__errmsg_names_culprit(void **state)
{
	kt_test_fixture *f = *state;
	const char *res[1] = {NULL};
	void *v = (void *)f;
	size_t len = 7;
	pthread_t th;

	assert_int_equal(kt_get(&v, &len, f->store, "/nowhere/missing"),
			 KT_ENOTFOUND);
	assert_null(v);
	assert_int_equal(len, 0);
	assert_true(kt_errmsg()[0] != '\0');
	assert_msg_has("nowhere");

	assert_int_equal(kt_mkdir(f->store, "/x/y", NULL), KT_ENOTFOUND);
	assert_msg_has("/x");

	assert_int_equal(kt_mkdir(f->store, "/exists", NULL), 0);
	assert_int_equal(kt_mkdir(f->store, "/exists", NULL), KT_EEXISTS);
	assert_msg_has("/exists");

	/* The message is per thread. */
	assert_int_equal(pthread_create(&th, NULL, errmsg_thread, res), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_non_null(res[0]);
	assert_string_equal(res[0], "");
	assert_msg_has("/exists");
}

static void test_store__version_string(void **state)
{
	(void)state;
	assert_non_null(kt_version());
	assert_string_equal(kt_version(), KT_VERSION_STRING);
}

#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup, \
						 teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_store__open_missing_without_create_is_notfound),
		T(test_store__open_empty_dir),
		T(test_store__create_if_missing_makes_store),
		T(test_store__error_if_exists),
		T(test_store__read_only_refuses_writes),
		T(test_store__sync_option),
		T(test_store__cache_size_option),
		T(test_store__row_cache_variable),
		T(test_store__write_buffer_option),
		T(test_store__default_delimiter),
		T(test_store__custom_delimiters),
		T(test_store__reopen_with_other_delimiter_fails),
		T(test_store__invalid_delimiters),
		T(test_store__foreign_directory_is_notstore),
		T(test_store__foreign_leveldb_is_notstore),
		T(test_store__open_in_other_process_goes_through_holder),
		T(test_store__destroy_directory_store),
		T(test_store__destroy_refuses_foreign_leveldb),
		T(test_store__free_functions_accept_null),
		T(test_store__open_rejects_bad_arguments),
		T(test_store__data_survives_reopen),
		T(test_store__sync_works),
		T(test_store__strerror_distinct),
		T(test_store__errmsg_names_culprit),
		T(test_store__version_string),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
