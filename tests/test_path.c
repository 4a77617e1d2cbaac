/*
 * test_path.c - the canonical-path rule and the name, path and depth limits,
 * applied by every path-taking function, readers included; binary-safe names;
 * and the guarantee that no two different paths alias one node, whatever
 * bytes of the delimiter their names hold.
 *
 * A short run on RADOS (kt_test.h) skips, saying why, the case that makes
 * nodes KT_DEPTH_MAX components deep (chains of 2048 directories).
 */
#include "kt_test.h"

#include <sys/stat.h>

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

/* ---- helpers ----------------------------------------------------------- */

/* Fail unless @p msg contains one of the NULL-terminated @p needles. */
static void check_msg_any(const char *what, const char *msg,
			  const char *const *needles)
{
	size_t i;

	if (msg[0] == '\0')
		fail_msg("%s: empty message", what);
	for (i = 0; needles[i] != NULL; i++)
		if (strstr(msg, needles[i]) != NULL)
			return;
	fail_msg("%s: message '%s' names neither '%s' nor the others", what,
		 msg, needles[0]);
}

/* As kt_assert_rejected, with a choice of needles (any one must appear). */
#define assert_rejected_any(st, call, code, needles)                         \
	do {                                                                 \
		char *b_ = kt_test_digest(st);                               \
		int rc_ = (call);                                            \
		char m_[4096], *a_;                                          \
		snprintf(m_, sizeof(m_), "%s", kt_errmsg());                 \
		if (rc_ != (code))                                           \
			fail_msg("%s: got %d (%s), want %d", #call, rc_, m_, \
				 (int)(code));                               \
		check_msg_any(#call, m_, needles);                           \
		a_ = kt_test_digest(st);                                     \
		assert_string_equal(b_, a_);                                 \
		free(b_);                                                    \
		free(a_);                                                    \
	} while (0)

static void put_str(kt_store *st, const char *path, const char *val)
{
	int rc = kt_put(st, path, val, strlen(val), NULL);

	if (rc != 0)
		fail_msg("kt_put(%s): %d %s", path, rc, kt_errmsg());
}

static void assert_value(kt_store *st, const char *path, const char *val)
{
	void *v = NULL;
	size_t len = 0;
	int rc = kt_get(&v, &len, st, path);

	if (rc != 0)
		fail_msg("kt_get(%s): %d %s", path, rc, kt_errmsg());
	if (len != strlen(val) || memcmp(v, val, len) != 0)
		fail_msg("kt_get(%s): wrong value (%zu bytes)", path, len);
	kt_free(v);
}

/* Every path-taking operation, as a function of one path.  Writers use
 * paths chosen so that, were the path accepted and normalised, the call
 * would succeed and change the store. */
typedef int (*path_op)(kt_store *st, const char *path);

static int op_get(kt_store *st, const char *p)
{
	void *v = NULL;
	size_t len = 0;
	int rc = kt_get(&v, &len, st, p);

	kt_free(v);
	return rc;
}

static int op_stat(kt_store *st, const char *p)
{
	kt_statbuf sb;

	return kt_stat(&sb, st, p);
}

static int op_lstat(kt_store *st, const char *p)
{
	kt_statbuf sb;

	return kt_lstat(&sb, st, p);
}

static int op_iter(kt_store *st, const char *p)
{
	kt_iter *it = NULL;
	int rc = kt_iter_new(&it, st, p, NULL);
	g_iter = it;

	iter_free(it);
	return rc;
}

static int op_find(kt_store *st, const char *p)
{
	kt_iter *it = NULL;
	int rc = kt_find_new(&it, st, p, 0);
	g_iter = it;

	iter_free(it);
	return rc;
}

static int op_find_subtree(kt_store *st, const char *p)
{
	kt_iter *it = NULL;
	int rc = kt_find_new(&it, st, p, KT_FIND_SUBTREE);
	g_iter = it;

	iter_free(it);
	return rc;
}

static int op_readlink(kt_store *st, const char *p)
{
	char *t = NULL;
	size_t len = 0;
	int rc = kt_readlink(&t, &len, st, p);

	kt_free(t);
	return rc;
}

static int op_read(kt_store *st, const char *p)
{
	char buf[16];
	size_t n = 0;

	return kt_read(&n, st, p, buf, sizeof(buf), 0);
}

static int op_attr_get(kt_store *st, const char *p)
{
	void *v = NULL;
	size_t len = 0;
	int rc = kt_attr_get(&v, &len, st, p, "k");

	kt_free(v);
	return rc;
}

static int op_attr_iter(kt_store *st, const char *p)
{
	kt_iter *it = NULL;
	int rc = kt_attr_iter_new(&it, st, p);
	g_iter = it;

	iter_free(it);
	return rc;
}

static int op_attr_set(kt_store *st, const char *p)
{
	return kt_attr_set(st, p, "k2", "v", 1, 0);
}

static int op_attr_delete(kt_store *st, const char *p)
{
	return kt_attr_delete(st, p, "k");
}

static int op_put(kt_store *st, const char *p)
{
	return kt_put(st, p, "new", 3, NULL);
}

static int op_mkdir(kt_store *st, const char *p)
{
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	co.flags = KT_CREATE_PARENTS;
	return kt_mkdir(st, p, &co);
}

static int op_symlink(kt_store *st, const char *p)
{
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	co.flags = KT_CREATE_PARENTS;
	return kt_symlink(st, p, "/a", &co);
}

static int op_delete(kt_store *st, const char *p)
{
	return kt_delete(st, p, KT_DELETE_RECURSIVE);
}

static int op_rename_src(kt_store *st, const char *p)
{
	return kt_rename(st, p, "/moved", 0);
}

static int op_rename_dst(kt_store *st, const char *p)
{
	return kt_rename(st, "/a/b", p, 0);
}

static int op_setattr(kt_store *st, const char *p)
{
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;

	sa.mask = KT_SET_MODE;
	sa.mode = 0600;
	return kt_setattr(st, p, &sa, 0);
}

static int op_write(kt_store *st, const char *p)
{
	return kt_write(st, p, "W", 1, 1);
}

static int op_truncate(kt_store *st, const char *p)
{
	return kt_truncate(st, p, 1);
}

static const struct {
	const char *name;
	path_op fn;
} ops[] = {
	{"kt_get", op_get},
	{"kt_stat", op_stat},
	{"kt_lstat", op_lstat},
	{"kt_iter_new", op_iter},
	{"kt_find_new", op_find},
	{"kt_find_new(SUBTREE)", op_find_subtree},
	{"kt_readlink", op_readlink},
	{"kt_read", op_read},
	{"kt_attr_get", op_attr_get},
	{"kt_attr_iter_new", op_attr_iter},
	{"kt_attr_set", op_attr_set},
	{"kt_attr_delete", op_attr_delete},
	{"kt_put", op_put},
	{"kt_mkdir", op_mkdir},
	{"kt_symlink", op_symlink},
	{"kt_delete", op_delete},
	{"kt_rename(src)", op_rename_src},
	{"kt_rename(dst)", op_rename_dst},
	{"kt_setattr", op_setattr},
	{"kt_write", op_write},
	{"kt_truncate", op_truncate},
};

#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* The tree the rejection tests run against: every non-canonical path used
 * below would, if normalised, name one of these nodes. */
static void make_tree(kt_store *st)
{
	put_str(st, "/a/b", "ab");
	put_str(st, "/a/b2/c", "abc");
	assert_int_equal(kt_attr_set(st, "/a/b", "k", "v", 1, 0), 0);
	assert_int_equal(kt_attr_set(st, "/a", "k", "v", 1, 0), 0);
	assert_int_equal(kt_attr_set(st, "/", "k", "v", 1, 0), 0);
}

/* Run every operation on @p path; each must fail with @p code, leave the
 * store unchanged and name one of @p needles (NULL: any message).  The
 * store is compared after each operation with its digest from before the
 * first: as strict as a digest before each one (the one before an
 * operation is the one after the last), and half the reads, which count
 * on RADOS. */
static void reject_everywhere(kt_store *st, const char *path, int code,
			      const char *const *needles)
{
	static const char *const any[] = {"", NULL};
	char what[128];
	char *b = kt_test_digest(st);
	size_t i;

	for (i = 0; i < NOPS; i++) {
		char *a;
		char m[8192];
		int rc = ops[i].fn(st, path);

		snprintf(m, sizeof(m), "%s", kt_errmsg());
		snprintf(what, sizeof(what), "%s(path of %zu bytes)",
			 ops[i].name, strlen(path));
		if (rc != code)
			fail_msg("%s: got %d (%s), want %d", what, rc, m,
				 code);
		check_msg_any(what, m, needles ? needles : any);
		a = kt_test_digest(st);
		if (strcmp(a, b) != 0)
			fail_msg("%s changed the store", what);
		free(a);
	}
	free(b);
}

/* ---- the canonical rule ------------------------------------------------- */

static void test_path__noncanonical_rejected_by_every_op(void **state)
{
	static const char *bad[] = {
		"a", "a/b", "", ".", "..", "./a", "//", "///", "/a//b",
		"//a", "/a/", "/a/b/", "/a/b//", "/.", "/..", "/a/..",
		"/a/.", "/a/./b", "/a/../a/b", "/./a", "/a/b/.",
	};
	kt_test_fixture *f = *state;
	size_t i;

	make_tree(f->store);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *needles[] = {bad[i], NULL};

		/* An empty path cannot be quoted meaningfully. */
		reject_everywhere(f->store, bad[i], KT_EINVAL,
				  bad[i][0] ? needles : NULL);
	}
}

static void test_path__null_path_rejected(void **state)
{
	kt_test_fixture *f = *state;
	size_t i;

	make_tree(f->store);
	for (i = 0; i < NOPS; i++) {
		int rc = ops[i].fn(f->store, NULL);

		if (rc != KT_EINVAL)
			fail_msg("%s(NULL): got %d, want KT_EINVAL",
				 ops[i].name, rc);
		assert_true(kt_errmsg()[0] != '\0');
	}
	assert_value(f->store, "/a/b", "ab");
}

static void test_path__delimiter_in_name_reserved_even_for_reads(void **state)
{
	static const char *bad[] = {
		"/a\xc2\xa6" "b",     /* would alias /a/b if split */
		"/a/b\xc2\xa6",
		"/\xc2\xa6",
		"/\xc2\xa6" "a/b",
		"/a\xc2\xa6" "b/c",
		"/a/b2\xc2\xa6" "c",
	};
	kt_test_fixture *f = *state;
	size_t i;

	make_tree(f->store);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *needles[] = {bad[i], NULL};

		reject_everywhere(f->store, bad[i], KT_ERESERVED, needles);
	}
}

static void test_path__delimiter_read_does_not_alias(void **state)
{
	kt_test_fixture *f = *state;
	void *v = NULL;
	size_t len = 0;
	kt_statbuf sb;

	put_str(f->store, "/a/b", "ab");
	assert_int_equal(kt_get(&v, &len, f->store, "/a\xc2\xa6" "b"),
			 KT_ERESERVED);
	assert_null(v);
	assert_int_equal(kt_stat(&sb, f->store, "/a\xc2\xa6" "b"),
			 KT_ERESERVED);
	/* ...and the message says what and where. */
	assert_non_null(strstr(kt_errmsg(), "a\xc2\xa6" "b"));
}

/* ---- limits ------------------------------------------------------------- */

/* A string of @p n copies of @p c; free() it. */
static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* "/" + @p prefix-less join: @p parts components of @p name. */
static char *join_depth(const char *name, size_t depth)
{
	size_t nl = strlen(name), i;
	char *s = malloc(depth * (nl + 1) + 1), *p = s;

	assert_non_null(s);
	for (i = 0; i < depth; i++) {
		*p++ = '/';
		memcpy(p, name, nl);
		p += nl;
	}
	*p = '\0';
	return s;
}

/* A canonical path of exactly @p len bytes made of 255-byte names (the
 * last one shorter), first component @p first. */
static char *long_path(size_t len, char first)
{
	char *s = malloc(len + 1);
	size_t pos = 0;

	assert_non_null(s);
	while (pos < len) {
		size_t n = len - pos - 1;

		if (n > KT_NAME_MAX)
			n = KT_NAME_MAX;
		/* never leave a 1-byte tail that would be "/" alone */
		if (len - pos - 1 - n == 1)
			n--;
		s[pos++] = '/';
		memset(s + pos, pos == 1 ? first : 'p', n);
		pos += n;
	}
	s[len] = '\0';
	assert_int_equal(strlen(s), len);
	return s;
}

static const char *const name_needles[] = {"255", "256", "NAME_MAX", NULL};
static const char *const path_needles[] = {"4096", "4097", "PATH_MAX", NULL};
static const char *const target_needles[] = {"4095", "4096", NULL};
/* With one-byte names, 2049 components are 4098 bytes: the length limit is
 * reached exactly where the depth limit is, and either may be named. */
static const char *const depth_needles[] = {"2048", "2049", "DEPTH", "4096",
					    NULL};

static void test_path__name_255_ok_256_too_long(void **state)
{
	kt_test_fixture *f = *state;
	char *n255 = repeat('n', 255), *n256 = repeat('n', 256);
	char p255[300], p256[300], deep[600];
	kt_iter *it = NULL;
	const kt_entry *e;
	kt_statbuf sb;

	make_tree(f->store);
	snprintf(p255, sizeof(p255), "/%s", n255);
	snprintf(p256, sizeof(p256), "/%s", n256);
	put_str(f->store, p255, "long");
	assert_value(f->store, p255, "long");
	assert_int_equal(kt_stat(&sb, f->store, p255), 0);
	assert_int_equal(kt_iter_new(&it, f->store, "/", NULL), 0);
	g_iter = it;
	while (kt_iter_next(&e, it) == 0)
		if (e->name_len == 255)
			break;
	assert_int_equal(e->name_len, 255);
	assert_memory_equal(e->name, n255, 255);
	iter_free(it);

	/* 255 as an inner component, and as a directory */
	snprintf(deep, sizeof(deep), "%s/%s", p255, n255);
	put_str(f->store, deep, "deeper");
	assert_value(f->store, deep, "deeper");

	reject_everywhere(f->store, p256, KT_ENAMETOOLONG, name_needles);
	/* too long as an inner component, even where nothing exists */
	snprintf(deep, sizeof(deep), "%s/x", p256);
	reject_everywhere(f->store, deep, KT_ENAMETOOLONG, name_needles);
	snprintf(deep, sizeof(deep), "/a/%s/x", n256);
	reject_everywhere(f->store, deep, KT_ENAMETOOLONG, name_needles);
	free(n255);
	free(n256);
}

static void test_path__path_max_ok_plus_one_too_long(void **state)
{
	kt_test_fixture *f = *state;
	char *ok = long_path(KT_PATH_MAX, 'q');
	char *bad = long_path(KT_PATH_MAX + 1, 'r');
	char *bad2 = long_path(KT_PATH_MAX + 1, 'q');
	kt_iter *it = NULL;
	const kt_entry *e;
	kt_statbuf sb;
	int rc, found = 0;

	make_tree(f->store);
	put_str(f->store, ok, "at the limit");
	assert_value(f->store, ok, "at the limit");
	assert_int_equal(kt_stat(&sb, f->store, ok), 0);
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(kt_find_new(&it, f->store, "/", 0), 0);
	g_iter = it;
	while ((rc = kt_iter_next(&e, it)) == 0)
		if (e->name_len == KT_PATH_MAX &&
		    memcmp(e->name, ok, KT_PATH_MAX) == 0)
			found = 1;
	assert_int_equal(rc, KT_ITEROVER);
	assert_true(found);
	iter_free(it);

	reject_everywhere(f->store, bad, KT_ENAMETOOLONG, path_needles);
	/* one byte past an existing node's path */
	reject_everywhere(f->store, bad2, KT_ENAMETOOLONG, path_needles);
	free(ok);
	free(bad);
	free(bad2);
}

/* Each operation on @p path fails with @p code and names the limit; no
 * digest (the store is deep), the caller checks what could have changed. */
static void reject_codes(kt_store *st, const char *path, int code,
			 const char *const *needles)
{
	char what[128];
	size_t i;

	for (i = 0; i < NOPS; i++) {
		int rc = ops[i].fn(st, path);

		snprintf(what, sizeof(what), "%s(depth)", ops[i].name);
		if (rc != code)
			fail_msg("%s: got %d (%s), want %d", what, rc,
				 kt_errmsg(), code);
		check_msg_any(what, kt_errmsg(), needles);
	}
}

/* KT_DEPTH_MAX + 1 components, on a small store (a full before/after
 * digest): refused by every operation. */
static void test_path__depth_max_plus_one_too_long(void **state)
{
	kt_test_fixture *f = *state;
	char *ok = join_depth("d", KT_DEPTH_MAX);
	char *bad = join_depth("d", KT_DEPTH_MAX + 1);
	char *bad2 = join_depth("e", KT_DEPTH_MAX + 1);

	/* KT_DEPTH_MAX two-byte components are exactly KT_PATH_MAX bytes;
	 * one more is over both limits. */
	assert_int_equal(strlen(ok), KT_PATH_MAX);
	assert_true(strlen(bad) > KT_PATH_MAX);
	make_tree(f->store);
	reject_everywhere(f->store, bad, KT_ENAMETOOLONG, depth_needles);
	reject_everywhere(f->store, bad2, KT_ENAMETOOLONG, depth_needles);
	free(ok);
	free(bad);
	free(bad2);
}

/* A node at KT_DEPTH_MAX components (made by a put and by mkdir -p) works;
 * one more component below it is refused by every operation.  This needs
 * two chains of KT_DEPTH_MAX nodes. */
static void test_path__depth_max_ok_one_more_below_too_long(void **state)
{
	kt_test_fixture *f = *state;
	char *ok = NULL, *bad = NULL;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_iter *it = NULL;
	kt_statbuf sb;

	KT_TEST_LONG_ON_RADOS_BECAUSE(
		"the limit needs a chain of 2048 directories, one object each "
		"there, made in one commit that locks every one of them");
	ok = join_depth("d", KT_DEPTH_MAX);
	bad = join_depth("d", KT_DEPTH_MAX + 1);
	make_tree(f->store);
	put_str(f->store, ok, "bottom");
	assert_value(f->store, ok, "bottom");
	assert_int_equal(kt_stat(&sb, f->store, ok), 0);
	assert_int_equal(sb.kind, KT_KIND_ITEM);

	/* One more component below an existing node at the limit. */
	reject_codes(f->store, bad, KT_ENAMETOOLONG, depth_needles);
	assert_value(f->store, ok, "bottom");
	assert_int_equal(kt_stat(&sb, f->store, ok), 0);
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(sb.nattrs, 0);
	assert_int_equal(kt_iter_new(&it, f->store, ok, NULL), KT_ENOTDIR);
	g_iter = it;
	assert_null(it);

	/* mkdir -p at the limit works too */
	free(ok);
	ok = join_depth("m", KT_DEPTH_MAX);
	co.flags = KT_CREATE_PARENTS;
	assert_int_equal(kt_mkdir(f->store, ok, &co), 0);
	assert_int_equal(kt_stat(&sb, f->store, ok), 0);
	assert_int_equal(sb.kind, KT_KIND_DIR);
	free(ok);
	free(bad);
}

static void test_path__link_target_limits(void **state)
{
	kt_test_fixture *f = *state;
	char *t_ok = long_path(KT_TARGET_MAX, 't');
	char *t_bad = long_path(KT_TARGET_MAX + 1, 't');
	char *t = NULL;
	size_t len = 0;
	kt_statbuf sb;

	/* The target is stored verbatim and need not exist, but has 1 to
	 * KT_TARGET_MAX bytes (what readlink(2) can return). */
	assert_int_equal(kt_symlink(f->store, "/l", t_ok, NULL), 0);
	assert_int_equal(kt_readlink(&t, &len, f->store, "/l"), 0);
	assert_int_equal(len, KT_TARGET_MAX);
	assert_string_equal(t, t_ok);
	kt_free(t);
	assert_int_equal(kt_lstat(&sb, f->store, "/l"), 0);
	assert_int_equal(sb.size, KT_TARGET_MAX);
	kt_assert_rejected(f->store, kt_symlink(f->store, "/m", "", NULL),
			   KT_EINVAL, "/m");
	assert_rejected_any(f->store, kt_symlink(f->store, "/m", t_bad, NULL),
			    KT_ENAMETOOLONG, target_needles);
	free(t_ok);
	free(t_bad);
}

/* ---- binary-safe names ---------------------------------------------------- */

static int cmp_bytes(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;

	return strcmp(x, y); /* strcmp compares as unsigned char */
}

static void test_path__utf8_and_binary_names(void **state)
{
	static const char *names[] = {
		"\xc3\xa6",                 /* æ: contains byte A6 */
		"\xd0\xa6\xd0\xb2\xd0\xb5\xd1\x82", /* Цвет: Ц is D0 A6 */
		"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", /* 日本語 */
		"\xf0\x9f\xa6\x80",         /* 🦀: contains A6 */
		"\xa6",                     /* second delimiter byte alone */
		"\xc2",                     /* first delimiter byte alone */
		"\xa6\xc2",                 /* both, in the other order */
		"x\xc2",                    /* ends with C2 */
		"\xa6x",                    /* starts with A6 */
		"x\xc2y\xa6z",
		"\xc2\xc2",
		"a b", " ", "a\nb", "\n", "\x01", "\x7f", "\xff", "\xff\xfe",
		"...", ".a", "..a", "a.", "a..", "-", "\\", "a\\b", "*", "?",
		"%s%n",
	};
	size_t n = sizeof(names) / sizeof(names[0]), i, seen = 0;
	const char *sorted[sizeof(names) / sizeof(names[0])];
	kt_test_fixture *f = *state;
	kt_iter *it = NULL;
	const kt_entry *e;
	char path[64], leaf[96];
	kt_statbuf sb;
	int rc;

	assert_int_equal(kt_mkdir(f->store, "/n", NULL), 0);
	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/n/%s", names[i]);
		put_str(f->store, path, names[i]);
		/* the same name as a directory with a child */
		snprintf(leaf, sizeof(leaf), "/d/%s/leaf", names[i]);
		put_str(f->store, leaf, path);
		assert_int_equal(kt_attr_set(f->store, path, names[i], "v", 1,
					     0), 0);
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/n/%s", names[i]);
		assert_value(f->store, path, names[i]);
		assert_int_equal(kt_stat(&sb, f->store, path), 0);
		assert_int_equal(sb.kind, KT_KIND_ITEM);
		assert_int_equal(sb.nattrs, 1);
		snprintf(leaf, sizeof(leaf), "/d/%s/leaf", names[i]);
		assert_value(f->store, leaf, path);
		snprintf(leaf, sizeof(leaf), "/d/%s", names[i]);
		assert_int_equal(kt_stat(&sb, f->store, leaf), 0);
		assert_int_equal(sb.kind, KT_KIND_DIR);
	}

	/* Listing returns exactly these names, in byte order. */
	memcpy(sorted, names, sizeof(sorted));
	qsort(sorted, n, sizeof(sorted[0]), cmp_bytes);
	assert_int_equal(kt_iter_new(&it, f->store, "/n", NULL), 0);
	g_iter = it;
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if (seen >= n)
			fail_msg("more than %zu children", n);
		assert_int_equal(e->name_len, strlen(sorted[seen]));
		if (memcmp(e->name, sorted[seen], e->name_len) != 0)
			fail_msg("child %zu is not the expected name", seen);
		assert_int_equal(e->kind, KT_KIND_ITEM);
		seen++;
	}
	assert_int_equal(rc, KT_ITEROVER);
	assert_int_equal(seen, n);
	iter_free(it);

	kt_test_reopen(f);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/n/%s", names[i]);
		assert_value(f->store, path, names[i]);
	}
}

/* ---- no aliasing ------------------------------------------------------------ */

/* A set of paths, as NUL-terminated strings. */
typedef struct pset {
	char *p[256];
	size_t n;
} pset;

static int pset_has(const pset *s, const char *p)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->p[i], p) == 0)
			return 1;
	return 0;
}

static void pset_add(pset *s, const char *p)
{
	if (pset_has(s, p))
		return;
	assert_true(s->n < 256);
	s->p[s->n] = strdup(p);
	assert_non_null(s->p[s->n]);
	s->n++;
}

static void pset_free(pset *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->p[i]);
	s->n = 0;
}

/* Every node implied by @p paths: the paths and their ancestors, "/"
 * excluded. */
static void node_set(pset *s, const char *const *paths, size_t n)
{
	char buf[256];
	size_t i;
	char *q;

	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%s", paths[i]);
		pset_add(s, buf);
		while ((q = strrchr(buf, '/')) != NULL && q != buf) {
			*q = '\0';
			pset_add(s, buf);
		}
	}
}

/* Check that kt_find_new(@p prefix, @p flags) returns exactly @p want, each
 * once, with a parent before its descendants. */
static void check_find(kt_store *st, const char *prefix, unsigned flags,
		       const pset *want)
{
	pset got = {0};
	kt_iter *it = NULL;
	const kt_entry *e;
	char parent[256], *q;
	size_t i;
	int rc;

	rc = kt_find_new(&it, st, prefix, flags);
	g_iter = it;
	if (rc != 0)
		fail_msg("kt_find_new(%zu-byte prefix): %d %s", strlen(prefix),
			 rc, kt_errmsg());
	while ((rc = kt_iter_next(&e, it)) == 0) {
		assert_int_equal(strlen(e->name), e->name_len);
		if (!pset_has(want, e->name))
			fail_msg("find '%s' (flags %u) returned unexpected "
				 "'%s'", prefix, flags, e->name);
		if (pset_has(&got, e->name))
			fail_msg("find returned '%s' twice", e->name);
		/* the parent, if it matches too, came first */
		snprintf(parent, sizeof(parent), "%s", e->name);
		q = strrchr(parent, '/');
		if (q != NULL && q != parent) {
			*q = '\0';
			if (pset_has(want, parent) && !pset_has(&got, parent))
				fail_msg("find returned '%s' before its "
					 "parent", e->name);
		}
		pset_add(&got, e->name);
	}
	assert_int_equal(rc, KT_ITEROVER);
	iter_free(it);
	for (i = 0; i < want->n; i++)
		if (!pset_has(&got, want->p[i]))
			fail_msg("find '%s' (flags %u) missed '%s'", prefix,
				 flags, want->p[i]);
	pset_free(&got);
}

/* The children of directory @p dir among @p nodes, checked against
 * kt_iter_new. */
static void check_list(kt_store *st, const char *dir, const pset *nodes)
{
	pset want = {0}, got = {0};
	kt_iter *it = NULL;
	const kt_entry *e;
	char full[512];
	size_t i, dl = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
	int rc;

	for (i = 0; i < nodes->n; i++) {
		const char *p = nodes->p[i];

		if (strncmp(p, dir, dl) == 0 && p[dl] == '/' &&
		    strchr(p + dl + 1, '/') == NULL)
			pset_add(&want, p);
	}
	assert_int_equal(kt_iter_new(&it, st, dir, NULL), 0);
	g_iter = it;
	while ((rc = kt_iter_next(&e, it)) == 0) {
		snprintf(full, sizeof(full), "%.*s/%s", (int)dl, dir, e->name);
		if (!pset_has(&want, full))
			fail_msg("listing '%s' returned unexpected '%s'", dir,
				 e->name);
		pset_add(&got, full);
	}
	assert_int_equal(rc, KT_ITEROVER);
	iter_free(it);
	assert_int_equal(got.n, want.n);
	pset_free(&want);
	pset_free(&got);
}

/* Put each path with its own path as value; check that every node reads
 * back its own value, listings and finds return exactly the right nodes,
 * for each prefix in @p prefixes. */
static void check_no_alias(kt_store *st, const char *const *paths, size_t n,
			   const char *const *prefixes, size_t np)
{
	pset nodes = {0}, want = {0};
	size_t i, j;
	char sub[256];

	for (i = 0; i < n; i++)
		put_str(st, paths[i], paths[i]);
	for (i = 0; i < n; i++)
		assert_value(st, paths[i], paths[i]);
	node_set(&nodes, paths, n);

	check_find(st, "/", 0, &nodes);
	check_list(st, "/", &nodes);
	for (i = 0; i < nodes.n; i++) {
		kt_statbuf sb;

		assert_int_equal(kt_stat(&sb, st, nodes.p[i]), 0);
		if (sb.kind & KT_KIND_DIR)
			check_list(st, nodes.p[i], &nodes);
	}
	for (j = 0; j < np; j++) {
		for (i = 0; i < nodes.n; i++)
			if (strncmp(nodes.p[i], prefixes[j],
				    strlen(prefixes[j])) == 0)
				pset_add(&want, nodes.p[i]);
		check_find(st, prefixes[j], 0, &want);
		pset_free(&want);
		/* SUBTREE: the node itself and what is below it */
		if (!pset_has(&nodes, prefixes[j]))
			continue;
		snprintf(sub, sizeof(sub), "%s/", prefixes[j]);
		for (i = 0; i < nodes.n; i++)
			if (strcmp(nodes.p[i], prefixes[j]) == 0 ||
			    strncmp(nodes.p[i], sub, strlen(sub)) == 0)
				pset_add(&want, nodes.p[i]);
		check_find(st, prefixes[j], KT_FIND_SUBTREE, &want);
		pset_free(&want);
	}
	pset_free(&nodes);
}

static void test_path__no_alias_default_delimiter(void **state)
{
	static const char *const paths[] = {
		"/x/y", "/x\xc2/\xa6y", "/x\xc2", "/x\xc2/y", "/x/\xa6y",
		"/x\xc2\xc2/\xa6\xa6y", "/\xa6", "/\xc2", "/\xc2/\xa6",
		"/x\xc2/\xa6", "/x/\xa6", "/\xc2\xc2", "/x/\xc2",
		"/x\xc2/\xc2", "/xy", "/x/y/\xa6", "/x/y\xc2/\xa6",
		"/\xa6/\xc2", "/\xa6\xa6", "/\xc2\xa7", "/\xc2\xa5",
	};
	static const char *const prefixes[] = {
		"/x", "/x\xc2", "/x\xc2\xc2", "/\xc2", "/\xa6", "/x/\xa6",
		"/x\xc2/\xa6", "/x/y", "/x/y\xc2", "/\xc2\xa5",
		"/x/\xc2",
	};
	kt_test_fixture *f = *state;

	check_no_alias(f->store, paths, sizeof(paths) / sizeof(paths[0]),
		       prefixes, sizeof(prefixes) / sizeof(prefixes[0]));
	kt_test_reopen(f);
	check_no_alias(f->store, paths, sizeof(paths) / sizeof(paths[0]),
		       prefixes, sizeof(prefixes) / sizeof(prefixes[0]));
}

static void test_path__no_alias_custom_delimiter(void **state)
{
	/* delimiter U+2022 BULLET, bytes E2 80 A2 */
	static const char *const paths[] = {
		"/x/y", "/x\xe2/\x80\xa2y", "/x\xe2\x80/\xa2y", "/x\xe2",
		"/x\xe2\x80", "/x/\x80\xa2", "/\xa2", "/\xe2\x80/\xa2",
		"/x/\xa2y", "/x\xe2/y", "/a\xc2\xa6" "b", "/a/b",
		"/a\xc2/\xa6" "b", "/x\xe2\x80\xa3", "/x\xe2\x81\xa2",
	};
	static const char *const prefixes[] = {
		"/x", "/x\xe2", "/x\xe2\x80", "/x/\x80", "/a", "/a\xc2",
		"/a\xc2\xa6", "/\xe2\x80",
	};
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/bullet", f->dir);
	o.create_if_missing = 1;
	o.delimiter = "\xe2\x80\xa2";
	assert_int_equal(kt_open(&st, dir, &o), 0);
	check_no_alias(st, paths, sizeof(paths) / sizeof(paths[0]), prefixes,
		       sizeof(prefixes) / sizeof(prefixes[0]));
	assert_int_equal(kt_put(st, "/x\xe2\x80\xa2y", "v", 1, NULL),
			 KT_ERESERVED);
	assert_int_equal(kt_check(NULL, st, NULL), 0);
	kt_close(st);
}

static void test_path__no_alias_single_byte_delimiter(void **state)
{
	/* delimiter '|': names around it and '/' */
	static const char *const paths[] = {
		"/x/y", "/x", "/xy", "/x!/y", "/x/!y", "/x{/y", "/x}",
		"/x\xc2\xa6" "y", "/x\xc2/\xa6" "y", "/x\x7f/y",
	};
	static const char *const prefixes[] = {
		"/x", "/x!", "/x{", "/x\xc2",
	};
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/pipe", f->dir);
	o.create_if_missing = 1;
	o.delimiter = "|";
	assert_int_equal(kt_open(&st, dir, &o), 0);
	check_no_alias(st, paths, sizeof(paths) / sizeof(paths[0]), prefixes,
		       sizeof(prefixes) / sizeof(prefixes[0]));
	assert_int_equal(kt_put(st, "/x|y", "v", 1, NULL), KT_ERESERVED);
	assert_int_equal(kt_check(NULL, st, NULL), 0);
	kt_close(st);
}

#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup, \
						 teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_path__noncanonical_rejected_by_every_op),
		T(test_path__null_path_rejected),
		T(test_path__delimiter_in_name_reserved_even_for_reads),
		T(test_path__delimiter_read_does_not_alias),
		T(test_path__name_255_ok_256_too_long),
		T(test_path__path_max_ok_plus_one_too_long),
		T(test_path__depth_max_plus_one_too_long),
		T(test_path__depth_max_ok_one_more_below_too_long),
		T(test_path__link_target_limits),
		T(test_path__utf8_and_binary_names),
		T(test_path__no_alias_default_delimiter),
		T(test_path__no_alias_custom_delimiter),
		T(test_path__no_alias_single_byte_delimiter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
