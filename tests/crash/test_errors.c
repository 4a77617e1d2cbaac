/*
 * test_errors.c - every rejected input catalogued in docs/ERRORS.md: each
 * case asserts the code, that the message names the culprit, and that the
 * store is unchanged afterwards (kt_assert_rejected compares digests of
 * the whole visible store).  The case names match the entries of
 * ERRORS.md.  With KT_ERRORS_PRINT=1 every case also prints its message,
 * which is how ERRORS.md's message column was made.
 *
 * Each test starts from the same tree:
 *
 *   /item        item "v", attribute color=red
 *   /d/e/f       directories /d and /d/e, item f
 *   /empty       an empty directory
 *   /l1 -> /l2, /l2 -> /l1, /self -> /self   link loops
 *   /li -> /item                            a link to an item
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <leveldb/c.h>

#include "../kt_test.h"

#define D KT_DEFAULT_DELIMITER

static int setup(void **state)
{
	kt_test_fixture *f;

	if (kt_test_setup(state) != 0)
		return -1;
	f = *state;
	if (kt_put(f->store, "/item", "v", 1, NULL) != 0 ||
	    kt_attr_set(f->store, "/item", "color", "red", 3, 0) != 0 ||
	    kt_put(f->store, "/d/e/f", "f", 1, NULL) != 0 ||
	    kt_mkdir(f->store, "/empty", NULL) != 0 ||
	    kt_symlink(f->store, "/l1", "/l2", NULL) != 0 ||
	    kt_symlink(f->store, "/l2", "/l1", NULL) != 0 ||
	    kt_symlink(f->store, "/self", "/self", NULL) != 0 ||
	    kt_symlink(f->store, "/li", "/item", NULL) != 0 ||
	    kt_mknod(f->store, "/fifo", KT_TYPE_FIFO, 0, NULL) != 0) {
		fprintf(stderr, "setup: %s\n", kt_errmsg());
		kt_test_teardown(state);
		return -1;
	}
	return 0;
}

/* Print the message for ERRORS.md when asked. */
static void show(const char *call)
{
	if (getenv("KT_ERRORS_PRINT") != NULL)
		printf("ERRORS| %s | %s\n", call, kt_errmsg());
}

/* kt_assert_rejected on the fixture's store, then show the message. */
#define REJECT(call, code, needle)                                             \
	do {                                                                   \
		kt_test_fixture *f_ = *state;                                  \
		kt_assert_rejected(f_->store, call, code, needle);             \
		show(#call);                                                   \
	} while (0)

#define ST (((kt_test_fixture *)*state)->store)

/* A string of @p n copies of @p c, in a static buffer. */
static const char *rep(char c, size_t n, const char *prefix)
{
	static char buf[8192];
	size_t pl = strlen(prefix);

	assert_true(pl + n < sizeof(buf));
	memcpy(buf, prefix, pl);
	memset(buf + pl, c, n);
	buf[pl + n] = '\0';
	return buf;
}

/* ------------------------------------------------------------------------ */
/* Names and paths */

static void test_errors__name_with_delimiter(void **state)
{
	REJECT(kt_put(ST, "/a" D "b", "x", 1, NULL), KT_ERESERVED, "a" D "b");
}

static void test_errors__name_ending_in_delimiter(void **state)
{
	REJECT(kt_mkdir(ST, "/d/x" D, NULL), KT_ERESERVED, "x" D);
}

static void test_errors__name_with_other_store_delimiter(void **state)
{
	/* In a store whose delimiter is '|', that byte is reserved and the
	 * default one is an ordinary character. */
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char dir[400];
	char *before, *after;

	snprintf(dir, sizeof(dir), "%s/pipe", f->dir);
	o.create_if_missing = 1;
	o.delimiter = "|";
	assert_int_equal(kt_open(&st, dir, &o), 0);
	assert_int_equal(kt_put(st, "/a" D "b", "x", 1, NULL), 0);
	before = kt_test_digest(st);
	kt_assert_rejected(st, kt_put(st, "/a|b", "x", 1, NULL), KT_ERESERVED,
			   "a|b");
	show("kt_put(\"/a|b\") in a store with delimiter '|'");
	after = kt_test_digest(st);
	assert_string_equal(before, after);
	free(before);
	free(after);
	kt_close(st);
}

static void test_errors__slash_in_name_is_a_separator(void **state)
{
	/* A '/' can never be part of a name: "/a/b" is two names.  Writing
	 * the item "b" under a missing "a" through a link to an item shows
	 * the '/' was taken as a separator. */
	REJECT(kt_put(ST, "/li/x", "x", 1, NULL), KT_ENOTDIR, "/li/x");
}

static void test_errors__nul_ends_the_name(void **state)
{
	/* A NUL ends the C string, so "/empty\0x" is "/empty": a directory
	 * without a value, which cannot be read. */
	void *v = NULL;
	size_t len = 0;

	REJECT(kt_get(&v, &len, ST, "/empty\0x"), KT_EISDIR, "/empty");
}

static void test_errors__relative_path(void **state)
{
	REJECT(kt_put(ST, "item", "x", 1, NULL), KT_EINVAL, "item");
}

static void test_errors__empty_path(void **state)
{
	REJECT(kt_put(ST, "", "x", 1, NULL), KT_EINVAL, "put");
}

static void test_errors__empty_name(void **state)
{
	REJECT(kt_mkdir(ST, "/d//x", NULL), KT_EINVAL, "/d//x");
}

static void test_errors__trailing_slash(void **state)
{
	REJECT(kt_put(ST, "/d/", "x", 1, NULL), KT_EINVAL, "/d/");
}

static void test_errors__dot_name(void **state)
{
	REJECT(kt_mkdir(ST, "/d/./x", NULL), KT_EINVAL, "/d/./x");
}

static void test_errors__dotdot_name(void **state)
{
	REJECT(kt_put(ST, "/d/..", "x", 1, NULL), KT_EINVAL, "/d/..");
}

static void test_errors__name_256_bytes(void **state)
{
	const char *p = rep('n', 256, "/d/");

	REJECT(kt_put(ST, p, "x", 1, NULL), KT_ENAMETOOLONG, "255");
}

static void test_errors__path_too_long(void **state)
{
	/* 17 names of 250 bytes: 4267 bytes, each name within its limit. */
	char p[5000];
	size_t n = 0;
	int i;

	for (i = 0; i < 17; i++) {
		p[n++] = '/';
		memset(p + n, 'a' + i, 250);
		n += 250;
	}
	p[n] = '\0';
	REJECT(kt_put(ST, p, "x", 1, NULL), KT_ENAMETOOLONG, "4096");
}

static void test_errors__path_too_deep(void **state)
{
	/* 2049 components of one byte: 4098 bytes.  With one-byte names the
	 * length limit (4096) is reached exactly where the depth limit (2048)
	 * is, so either may be named. */
	char p[4200];
	int i;

	for (i = 0; i < 2049; i++) {
		p[2 * i] = '/';
		p[2 * i + 1] = 'x';
	}
	p[4098] = '\0';
	REJECT(kt_mkdir(ST, p,
			&(kt_create_options){KT_CREATE_OPTIONS_VERSION,
					     KT_CREATE_PARENTS, 0, 0, 0, 0}),
	       KT_ENAMETOOLONG, "over the limit");
}

/* ------------------------------------------------------------------------ */
/* Values and attributes */

static void test_errors__value_over_limit_truncate(void **state)
{
	REJECT(kt_truncate(ST, "/item", KT_VALUE_MAX + 1), KT_ETOOBIG, "/item");
}

static void test_errors__value_over_limit_write(void **state)
{
	REJECT(kt_write(ST, "/item", "x", 1, KT_VALUE_MAX), KT_ETOOBIG,
	       "/item");
}

static void test_errors__attr_value_over_limit(void **state)
{
	static char big[KT_ATTR_VALUE_MAX + 1];

	REJECT(kt_attr_set(ST, "/item", "color", big, sizeof(big), 0),
	       KT_ETOOBIG, "65536");
}

static void test_errors__attr_name_with_delimiter_first(void **state)
{
	REJECT(kt_attr_set(ST, "/item", D "sys", "x", 1, 0), KT_ERESERVED,
	       D "sys");
}

static void test_errors__attr_name_empty(void **state)
{
	REJECT(kt_attr_set(ST, "/item", "", "x", 1, 0), KT_EINVAL, "/item");
}

static void test_errors__attr_name_256_bytes(void **state)
{
	REJECT(kt_attr_set(ST, "/item", rep('a', 256, ""), "x", 1, 0),
	       KT_ENAMETOOLONG, "255");
}

static void test_errors__attr_create_existing(void **state)
{
	REJECT(kt_attr_set(ST, "/item", "color", "x", 1, KT_ATTR_CREATE),
	       KT_EEXISTS, "color");
}

static void test_errors__attr_replace_missing(void **state)
{
	REJECT(kt_attr_set(ST, "/item", "size", "x", 1, KT_ATTR_REPLACE),
	       KT_ENOATTR, "size");
}

static void test_errors__attr_delete_missing(void **state)
{
	REJECT(kt_attr_delete(ST, "/item", "size"), KT_ENOATTR, "size");
}

static void test_errors__put_if_version_mismatch(void **state)
{
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	co.flags = KT_CREATE_IF_VERSION;
	co.if_version = 1;
	REJECT(kt_put(ST, "/item", "w", 1, &co), KT_ECONFLICT, "/item");
}

static void test_errors__put_on_root(void **state)
{
	REJECT(kt_put(ST, "/", "x", 1, NULL), KT_EINVAL, "'/'");
}

static void test_errors__write_missing_item(void **state)
{
	REJECT(kt_write(ST, "/nope", "x", 1, 0), KT_ENOTFOUND, "/nope");
}

static void test_errors__write_directory(void **state)
{
	REJECT(kt_write(ST, "/empty", "x", 1, 0), KT_EISDIR, "/empty");
}

/* ------------------------------------------------------------------------ */
/* Links */

static void test_errors__link_loop(void **state)
{
	REJECT(kt_put(ST, "/l1", "x", 1, NULL), KT_ELOOP, "/l1");
}

static void test_errors__link_to_itself(void **state)
{
	kt_statbuf sb;

	REJECT(kt_stat(&sb, ST, "/self"), KT_ELOOP, "/self");
	REJECT(kt_put(ST, "/self/x", "x", 1, NULL), KT_ELOOP, "/self");
}

static void test_errors__link_target_empty(void **state)
{
	REJECT(kt_symlink(ST, "/nl", "", NULL), KT_EINVAL, "/nl");
}

static void test_errors__link_target_too_long(void **state)
{
	REJECT(kt_symlink(ST, "/nl", rep('t', 4096, ""), NULL), KT_ENAMETOOLONG,
	       "4095");
}

static void test_errors__symlink_over_existing(void **state)
{
	REJECT(kt_symlink(ST, "/item", "/d", NULL), KT_EEXISTS, "/item");
}

static void test_errors__readlink_of_item(void **state)
{
	char *t = NULL;

	REJECT(kt_readlink(&t, NULL, ST, "/item"), KT_EINVAL, "/item");
}

/* ------------------------------------------------------------------------ */
/* Creating, removing, renaming */

static void test_errors__mkdir_existing(void **state)
{
	REJECT(kt_mkdir(ST, "/d", NULL), KT_EEXISTS, "/d");
}

static void test_errors__mkdir_missing_parent(void **state)
{
	REJECT(kt_mkdir(ST, "/nope/x", NULL), KT_ENOTFOUND, "/nope");
}

static void test_errors__put_excl_existing(void **state)
{
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	co.flags = KT_CREATE_EXCL;
	REJECT(kt_put(ST, "/item", "w", 1, &co), KT_EEXISTS, "/item");
}

static void test_errors__rmdir_not_empty(void **state)
{
	REJECT(kt_delete(ST, "/d", 0), KT_ENOTEMPTY, "/d");
}

static void test_errors__delete_root(void **state)
{
	REJECT(kt_delete(ST, "/", KT_DELETE_RECURSIVE), KT_EINVAL, "'/'");
}

static void test_errors__delete_missing(void **state)
{
	REJECT(kt_delete(ST, "/nope", 0), KT_ENOTFOUND, "/nope");
}

static void test_errors__delete_item_of_link(void **state)
{
	REJECT(kt_delete(ST, "/li", KT_DELETE_ITEM), KT_EINVAL, "/li");
}

static void test_errors__rename_into_own_subtree(void **state)
{
	REJECT(kt_rename(ST, "/d", "/d/e/g", 0), KT_EINVAL, "/d");
}

static void test_errors__rename_dir_over_nonempty_dir(void **state)
{
	assert_int_equal(kt_mkdir(ST, "/empty/x", NULL), 0);
	REJECT(kt_rename(ST, "/d/e", "/empty", 0), KT_ENOTEMPTY, "/empty");
}

static void test_errors__rename_dir_over_item(void **state)
{
	REJECT(kt_rename(ST, "/empty", "/item", 0), KT_ENOTDIR, "/item");
}

static void test_errors__rename_item_over_dir(void **state)
{
	REJECT(kt_rename(ST, "/item", "/empty", 0), KT_EISDIR, "/empty");
}

static void test_errors__rename_noreplace_existing(void **state)
{
	REJECT(kt_rename(ST, "/item", "/d/e/f", KT_RENAME_NOREPLACE),
	       KT_EEXISTS, "/d/e/f");
}

static void test_errors__rename_missing_source(void **state)
{
	REJECT(kt_rename(ST, "/nope", "/x", 0), KT_ENOTFOUND, "/nope");
}

static void test_errors__setattr_bad_mode(void **state)
{
	kt_setattr_args a = KT_SETATTR_ARGS_INIT;

	a.mask = KT_SET_MODE;
	a.mode = 010000;
	REJECT(kt_setattr(ST, "/item", &a, 0), KT_EINVAL, "/item");
}

static void test_errors__orphan_detach_directory(void **state)
{
	uint64_t id = 0;

	REJECT(kt_orphan_detach(&id, ST, "/empty"), KT_EISDIR, "/empty");
}

static void test_errors__orphan_copy_directory(void **state)
{
	uint64_t id = 0;

	REJECT(kt_orphan_copy(&id, ST, "/empty"), KT_EISDIR, "/empty");
}

static void test_errors__id_path_unknown_id(void **state)
{
	char *p = NULL;

	REJECT(kt_id_path(&p, NULL, ST, 987654), KT_ENOTFOUND, "987654");
	assert_null(p);
}

/* ------------------------------------------------------------------------ */
/* Special files */

static void test_errors__mknod_unknown_type(void **state)
{
	REJECT(kt_mknod(ST, "/x", 5, 0, NULL), KT_EINVAL, "unknown type 5");
}

static void test_errors__mknod_fifo_with_device_number(void **state)
{
	REJECT(kt_mknod(ST, "/x", KT_TYPE_FIFO, 259, NULL), KT_EINVAL,
	       "a FIFO has no device number (got 259)");
}

static void test_errors__mknod_over_existing(void **state)
{
	REJECT(kt_mknod(ST, "/item", KT_TYPE_SOCK, 0, NULL), KT_EEXISTS,
	       "mknod '/item': an item already exists there");
}

static void test_errors__get_of_special(void **state)
{
	void *v = NULL;
	size_t len = 0;

	REJECT(kt_get(&v, &len, ST, "/fifo"), KT_EINVAL,
	       "get '/fifo': a FIFO holds no value");
	assert_null(v);
}

static void test_errors__write_to_special(void **state)
{
	REJECT(kt_write(ST, "/fifo", "x", 1, 0), KT_EINVAL,
	       "write '/fifo': a FIFO holds no value");
}

static void test_errors__mkdir_over_special(void **state)
{
	REJECT(kt_mkdir(ST, "/fifo", NULL), KT_EEXISTS,
	       "mkdir '/fifo': a FIFO exists there");
}

static void test_errors__put_below_special(void **state)
{
	REJECT(kt_put(ST, "/fifo/x", "v", 1, NULL), KT_ENOTDIR,
	       "'/fifo' is not a directory");
}

/* ------------------------------------------------------------------------ */
/* Aliases (several paths of one node) */

static void test_errors__link_of_directory(void **state)
{
	REJECT(kt_link(ST, "/d", "/d2"), KT_EPERM,
	       "link '/d': a directory cannot have a second path");
}

static void test_errors__link_of_root(void **state)
{
	REJECT(kt_link(ST, "/", "/r"), KT_EPERM,
	       "link '/': the root cannot have a second path");
}

static void test_errors__link_onto_existing(void **state)
{
	REJECT(kt_link(ST, "/item", "/empty"), KT_EEXISTS,
	       "link '/item' to '/empty': a directory already exists there");
}

static void test_errors__link_of_missing(void **state)
{
	REJECT(kt_link(ST, "/nope", "/x"), KT_ENOTFOUND,
	       "link '/nope': no such node");
}

static void test_errors__child_of_item_with_two_paths(void **state)
{
	assert_int_equal(kt_link(ST, "/item", "/item2"), 0);
	REJECT(kt_put(ST, "/item2/x", "v", 1, NULL), KT_EPERM,
	       "'/item2' is an item with 2 paths, which cannot have children");
	REJECT(kt_mkdir(ST, "/item", NULL), KT_EPERM,
	       "'/item' is an item with 2 paths");
}

static void test_errors__detach_item_with_two_paths(void **state)
{
	uint64_t id = 1;

	assert_int_equal(kt_link(ST, "/item", "/item2"), 0);
	REJECT(kt_orphan_detach(&id, ST, "/item"), KT_EPERM,
	       "orphan_detach '/item': the item has 2 paths");
	assert_int_equal(id, 0);
}

static void test_errors__batch_failing_op_commits_nothing(void **state)
{
	kt_batch *b = NULL;

	assert_int_equal(kt_batch_new(&b, ST), 0);
	assert_int_equal(kt_batch_put(b, "/new", "x", 1, NULL), 0);
	assert_int_equal(kt_batch_delete(b, "/d", 0), 0); /* not empty */
	REJECT(kt_batch_commit(b), KT_ENOTEMPTY, "2");
	kt_batch_free(b);
}

static void test_errors__batch_commit_twice(void **state)
{
	kt_batch *b = NULL;

	assert_int_equal(kt_batch_new(&b, ST), 0);
	assert_int_equal(kt_batch_put(b, "/item", "w", 1, NULL), 0);
	assert_int_equal(kt_batch_commit(b), 0);
	REJECT(kt_batch_commit(b), KT_EINVAL, "commit");
	kt_batch_free(b);
}

static void test_errors__batch_records_bad_path(void **state)
{
	kt_batch *b = NULL;

	assert_int_equal(kt_batch_new(&b, ST), 0);
	REJECT(kt_batch_mkdir(b, "/a" D "b", NULL), KT_ERESERVED, "a" D "b");
	kt_batch_free(b);
}

/* ------------------------------------------------------------------------ */
/* Opening stores */

/* Every file name and size under @p dir, as one string. */
static char *dir_listing(const char *dir)
{
	kt_test_str s = {0};
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat sb;
	char p[1024];

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, "LOG") == 0 ||
		    strcmp(e->d_name, "LOG.old") == 0)
			continue; /* LevelDB's own diary */
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		assert_int_equal(lstat(p, &sb), 0);
		kt_test_str_addf(&s, "%s:%lld;", e->d_name,
				 S_ISDIR(sb.st_mode) ? 0LL
						     : (long long)sb.st_size);
	}
	closedir(d);
	if (s.p == NULL)
		kt_test_str_add(&s, "", 0);
	return s.p;
}

/* Reject an open of @p dir and require that the files there stay as they
 * were and that the fixture's store is unchanged. */
#define REJECT_OPEN(dir, opts, code, needle)                                   \
	do {                                                                   \
		char *files_before = dir_listing(dir);                         \
		char *files_after;                                             \
		kt_store *st_ = NULL;                                          \
		REJECT(kt_open(&st_, dir, opts), code, needle);                \
		assert_null(st_);                                              \
		files_after = dir_listing(dir);                                \
		assert_string_equal(files_before, files_after);                \
		free(files_before);                                            \
		free(files_after);                                             \
	} while (0)

static char *raw_rows(const char *dir);

/* Out of range either way: refused before anything is opened, for the
 * fixture's store and, with create_if_missing, for the directory around
 * it; nothing is made or changed. */
static void test_errors__open_bad_write_buffer(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;

	o.write_buffer_size = 1000;
	REJECT_OPEN(f->path, &o, KT_EINVAL,
		    "write_buffer_size 1000 is outside 1 MiB to 1 GiB");
	o.write_buffer_size = ((size_t)1 << 30) + 1;
	o.create_if_missing = 1;
	REJECT_OPEN(f->dir, &o, KT_EINVAL, "write_buffer_size 1073741825");
}

static void test_errors__open_directory_not_a_store(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	char dir[400], file[500];
	FILE *fp;

	snprintf(dir, sizeof(dir), "%s/docs", f->dir);
	snprintf(file, sizeof(file), "%s/notes.txt", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	fp = fopen(file, "w");
	assert_non_null(fp);
	fputs("not a store\n", fp);
	fclose(fp);
	o.create_if_missing = 1;
	REJECT_OPEN(dir, &o, KT_ENOTSTORE, dir);
}

static void test_errors__open_regular_file(void **state)
{
	kt_test_fixture *f = *state;
	char file[400];
	kt_store *st = NULL;
	FILE *fp;

	snprintf(file, sizeof(file), "%s/file", f->dir);
	fp = fopen(file, "w");
	assert_non_null(fp);
	fclose(fp);
	REJECT(kt_open(&st, file, NULL), KT_ENOTSTORE, file);
	assert_null(st);
}

static void test_errors__open_missing_store(void **state)
{
	kt_test_fixture *f = *state;
	char dir[400];
	kt_store *st = NULL;
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s/absent", f->dir);
	REJECT(kt_open(&st, dir, NULL), KT_ENOTFOUND, dir);
	assert_int_equal(stat(dir, &sb), -1); /* not created */
}

static void test_errors__open_foreign_leveldb(void **state)
{
	kt_test_fixture *f = *state;
	leveldb_options_t *lo = leveldb_options_create();
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	leveldb_t *db;
	kt_store *st = NULL;
	char dir[400], *err = NULL, *before, *after;

	snprintf(dir, sizeof(dir), "%s/foreign", f->dir);
	leveldb_options_set_create_if_missing(lo, 1);
	db = leveldb_open(lo, dir, &err);
	assert_null(err);
	leveldb_put(db, wo, "foo", 3, "bar", 3, &err);
	assert_null(err);
	leveldb_close(db);
	leveldb_writeoptions_destroy(wo);
	leveldb_options_destroy(lo);
	/* LevelDB itself rewrites its files when it opens a database (the
	 * log becomes a table), so compare the rows, not the files: no
	 * header row may have been written. */
	before = raw_rows(dir);
	REJECT(kt_open(&st, dir, NULL), KT_ENOTSTORE, dir);
	assert_null(st);
	after = raw_rows(dir);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

static void test_errors__open_with_other_delimiter(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	char *before = kt_test_digest(f->store), *after;
	kt_store *st = NULL;

	kt_close(f->store);
	f->store = NULL;
	o.delimiter = "|";
	assert_int_equal(kt_open(&st, f->path, &o), KT_EINVAL);
	assert_null(st);
	if (strstr(kt_errmsg(), "|") == NULL || strstr(kt_errmsg(), D) == NULL)
		fail_msg("message '%s' names not both delimiters", kt_errmsg());
	show("kt_open(store made with the default delimiter, "
	     "delimiter \"|\")");
	kt_test_reopen(f);
	after = kt_test_digest(f->store);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

static void test_errors__open_invalid_delimiter(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	char dir[400];
	kt_store *st = NULL;
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s/slash", f->dir);
	o.create_if_missing = 1;
	o.delimiter = "/";
	REJECT(kt_open(&st, dir, &o), KT_EINVAL, "delimiter");
	assert_int_equal(stat(dir, &sb), -1); /* not created */
}

/* Rewrite the header row's format version with LevelDB directly; the
 * version it had is returned. */
static uint32_t set_format_version(const char *dir, uint32_t fmt)
{
	uint32_t old;
	leveldb_options_t *lo = leveldb_options_create();
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	static const char key[] = "/meta\0header";
	leveldb_t *db;
	char *err = NULL, *v;
	size_t vlen = 0;

	db = leveldb_open(lo, dir, &err);
	assert_null(err);
	v = leveldb_get(db, ro, key, sizeof(key) - 1, &vlen, &err);
	assert_null(err);
	assert_non_null(v);
	assert_true(vlen >= 12);
	old = (uint32_t)(unsigned char)v[8] |
	      (uint32_t)(unsigned char)v[9] << 8 |
	      (uint32_t)(unsigned char)v[10] << 16 |
	      (uint32_t)(unsigned char)v[11] << 24;
	v[8] = (char)(fmt & 0xff);
	v[9] = (char)(fmt >> 8);
	v[10] = (char)(fmt >> 16);
	v[11] = (char)(fmt >> 24);
	leveldb_put(db, wo, key, sizeof(key) - 1, v, vlen, &err);
	assert_null(err);
	leveldb_free(v);
	leveldb_close(db);
	leveldb_writeoptions_destroy(wo);
	leveldb_readoptions_destroy(ro);
	leveldb_options_destroy(lo);
	return old;
}

/* Every LevelDB key and value of the store at @p dir, as one string. */
static char *raw_rows(const char *dir)
{
	leveldb_options_t *lo = leveldb_options_create();
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	leveldb_iterator_t *it;
	leveldb_t *db;
	kt_test_str s = {0};
	char *err = NULL;

	db = leveldb_open(lo, dir, &err);
	assert_null(err);
	it = leveldb_create_iterator(db, ro);
	for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl);
		const char *v = leveldb_iter_value(it, &vl);

		kt_test_str_hex(&s, k, kl);
		kt_test_str_add(&s, "=", 1);
		kt_test_str_hex(&s, v, vl);
		kt_test_str_add(&s, "\n", 1);
	}
	leveldb_iter_destroy(it);
	leveldb_close(db);
	leveldb_readoptions_destroy(ro);
	leveldb_options_destroy(lo);
	return s.p;
}

static void test_errors__open_newer_format(void **state)
{
	kt_test_fixture *f = *state;
	char *before, *after;
	kt_store *st = NULL;
	uint32_t was;

	kt_close(f->store);
	f->store = NULL;
	was = set_format_version(f->path, KT_FORMAT_VERSION + 1);
	before = raw_rows(f->path);
	assert_int_equal(kt_open(&st, f->path, NULL), KT_EVERSION);
	assert_null(st);
	{
		char want[64];
		snprintf(want, sizeof(want), "version %d",
			 KT_FORMAT_VERSION + 1);
		if (strstr(kt_errmsg(), want) == NULL)
			fail_msg("message '%s' does not name the version",
				 kt_errmsg());
	}
	show("kt_open(a store of a newer format version)");
	after = raw_rows(f->path);
	assert_string_equal(before, after);
	free(before);
	free(after);
	/* Put the version back so that teardown can check the store. */
	set_format_version(f->path, was);
	kt_test_reopen(f);
}

static void test_errors__open_locked_store(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = NULL;

	/* The fixture holds the store open and serves it: a second open,
	 * in this process as in another, goes through it.  A holder that
	 * does not serve it is named (test_remote.c). */
	assert_int_equal(kt_open(&st, f->path, NULL), 0);
	assert_non_null(st);
	kt_close(st);
}

static void test_errors__write_read_only(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;

	kt_close(f->store);
	f->store = NULL;
	o.read_only = 1;
	assert_int_equal(kt_open(&f->store, f->path, &o), 0);
	REJECT(kt_put(f->store, "/item", "w", 1, NULL), KT_EREADONLY, "/item");
	kt_test_reopen(f);
}

static void test_errors__open_bad_options_version(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;

	o.version = 99;
	REJECT(kt_open(&st, f->path, &o), KT_EINVAL, "99");
}

static void test_errors__setattr_bad_args_version(void **state)
{
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;

	sa.version = 7;
	sa.mask = KT_SET_MODE;
	sa.mode = 0600;
	REJECT(kt_setattr(ST, "/item", &sa, 0), KT_EINVAL, "args version 7");
}

static void test_errors__check_bad_options_version(void **state)
{
	kt_check_options co = KT_CHECK_OPTIONS_INIT;
	size_t n = 0;

	co.version = 9;
	REJECT(kt_check(&n, ST, &co), KT_EINVAL, "options version 9");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, kt_test_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_errors__name_with_delimiter),
		T(test_errors__name_ending_in_delimiter),
		T(test_errors__name_with_other_store_delimiter),
		T(test_errors__slash_in_name_is_a_separator),
		T(test_errors__nul_ends_the_name),
		T(test_errors__relative_path),
		T(test_errors__empty_path),
		T(test_errors__empty_name),
		T(test_errors__trailing_slash),
		T(test_errors__dot_name),
		T(test_errors__dotdot_name),
		T(test_errors__name_256_bytes),
		T(test_errors__path_too_long),
		T(test_errors__path_too_deep),
		T(test_errors__value_over_limit_truncate),
		T(test_errors__value_over_limit_write),
		T(test_errors__attr_value_over_limit),
		T(test_errors__attr_name_with_delimiter_first),
		T(test_errors__attr_name_empty),
		T(test_errors__attr_name_256_bytes),
		T(test_errors__attr_create_existing),
		T(test_errors__attr_replace_missing),
		T(test_errors__attr_delete_missing),
		T(test_errors__put_if_version_mismatch),
		T(test_errors__put_on_root),
		T(test_errors__write_missing_item),
		T(test_errors__write_directory),
		T(test_errors__link_loop),
		T(test_errors__link_to_itself),
		T(test_errors__link_target_empty),
		T(test_errors__link_target_too_long),
		T(test_errors__symlink_over_existing),
		T(test_errors__readlink_of_item),
		T(test_errors__mkdir_existing),
		T(test_errors__mkdir_missing_parent),
		T(test_errors__put_excl_existing),
		T(test_errors__rmdir_not_empty),
		T(test_errors__delete_root),
		T(test_errors__delete_missing),
		T(test_errors__delete_item_of_link),
		T(test_errors__rename_into_own_subtree),
		T(test_errors__rename_dir_over_nonempty_dir),
		T(test_errors__rename_dir_over_item),
		T(test_errors__rename_item_over_dir),
		T(test_errors__rename_noreplace_existing),
		T(test_errors__rename_missing_source),
		T(test_errors__setattr_bad_mode),
		T(test_errors__orphan_detach_directory),
		T(test_errors__orphan_copy_directory),
		T(test_errors__id_path_unknown_id),
		T(test_errors__mknod_unknown_type),
		T(test_errors__mknod_fifo_with_device_number),
		T(test_errors__mknod_over_existing),
		T(test_errors__get_of_special),
		T(test_errors__write_to_special),
		T(test_errors__mkdir_over_special),
		T(test_errors__put_below_special),
		T(test_errors__link_of_directory),
		T(test_errors__link_of_root),
		T(test_errors__link_onto_existing),
		T(test_errors__link_of_missing),
		T(test_errors__child_of_item_with_two_paths),
		T(test_errors__detach_item_with_two_paths),
		T(test_errors__batch_failing_op_commits_nothing),
		T(test_errors__batch_commit_twice),
		T(test_errors__batch_records_bad_path),
		T(test_errors__open_directory_not_a_store),
		T(test_errors__open_regular_file),
		T(test_errors__open_missing_store),
		T(test_errors__open_foreign_leveldb),
		T(test_errors__open_with_other_delimiter),
		T(test_errors__open_invalid_delimiter),
		T(test_errors__open_newer_format),
		T(test_errors__open_locked_store),
		T(test_errors__write_read_only),
		T(test_errors__open_bad_options_version),
		T(test_errors__open_bad_write_buffer),
		T(test_errors__setattr_bad_args_version),
		T(test_errors__check_bad_options_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
