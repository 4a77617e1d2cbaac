/*
 * test_location.c - what kt_open() makes of a store's location: a
 * directory opens LevelDB as it always did ("./rados:x" included), and
 * "rados:POOL[/NAMESPACE]/TREE" is taken apart and checked part by part
 * before any engine is reached, each mistake refused with KT_EINVAL and a
 * message naming the part at fault.  Also the option layouts kt_open()
 * takes (version 1 without ceph_conf and ceph_client, version 2 with).
 *
 * No test here needs a Ceph cluster.  In a build without librados
 * (KT_HAVE_RADOS unset) a well-formed RADOS location gives KT_ENOTSUP;
 * with librados, an unreadable ceph_conf is refused before connecting.
 *
 * Each test runs in a fresh temporary directory, which is also the
 * working directory meanwhile (for relative locations such as
 * "./rados:x"); teardown goes back and removes it.
 */
#include "kt_test.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>

typedef struct loc_fixture {
	char dir[256];
	char cwd[PATH_MAX];
} loc_fixture;

static int loc_setup(void **state)
{
	loc_fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/kt-loc-XXXXXX",
		 tmp ? tmp : "/tmp");
	if (getcwd(f->cwd, sizeof(f->cwd)) == NULL ||
	    mkdtemp(f->dir) == NULL || chdir(f->dir) != 0) {
		free(f);
		return -1;
	}
	unsetenv("KEYTREE_CEPH_CONF");
	unsetenv("KEYTREE_CEPH_CLIENT");
	*state = f;
	return 0;
}

static int loc_teardown(void **state)
{
	loc_fixture *f = *state;
	int rc = chdir(f->cwd);

	unsetenv("KEYTREE_CEPH_CONF");
	unsetenv("KEYTREE_CEPH_CLIENT");
	kt_test_rmtree(f->dir);
	free(f);
	return rc;
}

/* The working directory holds nothing (no location made a directory). */
static void assert_dir_empty(void)
{
	DIR *d = opendir(".");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	assert_int_equal(n, 0);
}

/* kt_open(@p loc) with @p o fails with @p code and a message holding each
 * of the NULL-ended strings after @p code, and no control byte; nothing is
 * created. */
static void open_refused(const char *loc, const kt_options *o, int code, ...)
{
	kt_store *st = (kt_store *)&st; /* must become NULL */
	const char *want;
	va_list ap;
	int rc;

	rc = kt_open(&st, loc, o);
	if (rc != code)
		fail_msg("kt_open('%s') gave %d (%s), expected %d", loc, rc,
			 kt_errmsg(), code);
	assert_null(st);
	va_start(ap, code);
	while ((want = va_arg(ap, const char *)) != NULL)
		if (strstr(kt_errmsg(), want) == NULL)
			fail_msg("kt_open('%s'): message '%s' lacks '%s'", loc,
				 kt_errmsg(), want);
	va_end(ap);
	/* Bytes at fault are shown escaped, never raw. */
	for (want = kt_errmsg(); *want != '\0'; want++)
		if ((unsigned char)*want < 0x20 || *want == 0x7f)
			fail_msg("kt_open('%s'): raw byte 0x%02x in the message",
				 loc, (unsigned char)*want);
	assert_dir_empty();
}

/* Put, close, reopen and read back through @p loc, which must be a
 * directory location. */
static void roundtrip(const char *loc)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char *v = NULL;
	size_t n = 0;

	o.create_if_missing = 1;
	assert_int_equal(kt_open(&st, loc, &o), 0);
	assert_int_equal(kt_put(st, "/x", "hi", 2, NULL), 0);
	kt_close(st);
	st = NULL;
	assert_int_equal(kt_open(&st, loc, NULL), 0);
	assert_int_equal(kt_get((void **)&v, &n, st, "/x"), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(v, "hi", 2);
	kt_free(v);
	kt_close(st);
}

/* A directory, relative or absolute, is a LevelDB store as always. */
static void test_location__directory(void **state)
{
	loc_fixture *f = *state;
	char abs[400];

	roundtrip("s1");
	snprintf(abs, sizeof(abs), "%s/s2", f->dir);
	roundtrip(abs);
	/* LevelDB's files are in the directories. */
	assert_int_equal(access("s1/CURRENT", F_OK), 0);
	assert_int_equal(access("s2/CURRENT", F_OK), 0);
}

/* "rados:" starts a RADOS location; a directory of that name is reached
 * as "./rados:x" (or by its absolute path). */
static void test_location__dot_slash_rados_is_directory(void **state)
{
	loc_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	char abs[400];
	struct stat sb;

	o.create_if_missing = 1;
	/* Read as RADOS: no tree name, and no directory made. */
	open_refused("rados:x", &o, KT_EINVAL, "'rados:x'", "no tree name",
		     NULL);
	roundtrip("./rados:x");
	assert_int_equal(stat("rados:x", &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(access("rados:x/CURRENT", F_OK), 0);
	snprintf(abs, sizeof(abs), "%s/rados:x", f->dir);
	roundtrip(abs);
}

/* Each malformed RADOS location names the part at fault. */
static void test_location__bad_rados(void **state)
{
	static const struct {
		const char *loc;
		const char *what; /* in the message */
	} bad[] = {
		{"rados:", "the pool name is empty"},
		{"rados:pool", "no tree name after the pool"},
		{"rados:/t", "the pool name is empty"},
		{"rados:/ns/t", "the pool name is empty"},
		{"rados:p/", "the tree name is empty"},
		{"rados:p//t", "the namespace is empty"},
		{"rados:p/ns/", "the tree name is empty"},
		{"rados:p/a/b/c", "too many '/'"},
		{"rados:p/t t", "the tree name 't t' has ' ' at byte 1"},
		{"rados:p/ns/a:b", "the tree name 'a:b' has ':' at byte 1"},
		{"rados:p/caf\xc3\xa9", "the tree name 'caf\xc3\xa9' has "
					"'\\xc3' at byte 3"},
		{"rados:p\x01q/t", "the pool name 'p\\x01q' has '\\x01' at "
				   "byte 1"},
		{"rados:p/n\x7fs/t", "the namespace 'n\\x7fs' has '\\x7f' at "
				     "byte 1"},
	};
	kt_options o = KT_OPTIONS_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.create_if_missing = 1;
		o.read_only = 0;
		open_refused(bad[i].loc, &o, KT_EINVAL, bad[i].what, NULL);
		/* The same when opening without creating, or read-only. */
		o.create_if_missing = 0;
		open_refused(bad[i].loc, &o, KT_EINVAL, bad[i].what, NULL);
		o.read_only = 1;
		open_refused(bad[i].loc, &o, KT_EINVAL, bad[i].what, NULL);
	}
}

/* The limits: a tree name of up to KT_RADOS_TREE_MAX bytes, pool and
 * namespace names of up to 255. */
static void test_location__rados_lengths(void **state)
{
	kt_options o = KT_OPTIONS_INIT;
	char loc[700], name[300];

	(void)state;
	o.create_if_missing = 1;
	memset(name, 't', sizeof(name));
	name[KT_RADOS_TREE_MAX + 1] = '\0';
	snprintf(loc, sizeof(loc), "rados:p/%s", name);
	open_refused(loc, &o, KT_EINVAL, "the tree name is 101 bytes, more "
		     "than 100", NULL);
	memset(name, 'p', 256);
	name[256] = '\0';
	snprintf(loc, sizeof(loc), "rados:%s/t", name);
	open_refused(loc, &o, KT_EINVAL, "the pool name is 256 bytes", NULL);
	snprintf(loc, sizeof(loc), "rados:p/%s/t", name);
	open_refused(loc, &o, KT_EINVAL, "the namespace is 256 bytes", NULL);
}

/* A client name is "client." and an id, from the options or from
 * $KEYTREE_CEPH_CLIENT; refused before any connection is tried. */
static void test_location__bad_client(void **state)
{
	kt_options o = KT_OPTIONS_INIT;

	(void)state;
	o.create_if_missing = 1;
	o.ceph_client = "admin";
	open_refused("rados:p/t", &o, KT_EINVAL, "ceph_client 'admin'",
		     "client.admin", NULL);
	o.ceph_client = "client.";
	open_refused("rados:p/t", &o, KT_EINVAL, "ceph_client 'client.'",
		     NULL);
	o.ceph_client = "client.a b";
	open_refused("rados:p/t", &o, KT_EINVAL, "ceph_client 'client.a b'",
		     NULL);
	o.ceph_client = NULL;
	assert_int_equal(setenv("KEYTREE_CEPH_CLIENT", "bob", 1), 0);
	open_refused("rados:p/t", &o, KT_EINVAL, "ceph_client 'bob'", NULL);
	/* The option wins over the environment. */
	o.ceph_client = "carol";
	open_refused("rados:p/t", &o, KT_EINVAL, "ceph_client 'carol'", NULL);
	/* A directory store has no use for it, nor for ceph_conf. */
	o.ceph_conf = "/nonexistent/ceph.conf";
	roundtrip("./s");
}

#ifndef KT_HAVE_RADOS
/* Without librados a well-formed RADOS location, whatever the options,
 * is refused with KT_ENOTSUP saying why. */
static void test_location__rados_not_built(void **state)
{
	static const char *const good[] = {
		"rados:keytree/t",
		"rados:keytree/ns/t",
		"rados:my pool/name space/A-Za-z0-9._-",
	};
	kt_options o = KT_OPTIONS_INIT;
	char loc[200], name[KT_RADOS_TREE_MAX + 1];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		o.create_if_missing = 1;
		o.read_only = 0;
		open_refused(good[i], &o, KT_ENOTSUP, good[i],
			     "built without RADOS support", NULL);
		o.create_if_missing = 0;
		o.read_only = 1;
		o.ceph_conf = "/etc/ceph/ceph.conf";
		o.ceph_client = "client.admin";
		open_refused(good[i], &o, KT_ENOTSUP, good[i],
			     "built without RADOS support", NULL);
		open_refused(good[i], NULL, KT_ENOTSUP,
			     "built without RADOS support", NULL);
		o.ceph_conf = o.ceph_client = NULL;
	}
	memset(name, 'z', KT_RADOS_TREE_MAX);
	name[KT_RADOS_TREE_MAX] = '\0';
	snprintf(loc, sizeof(loc), "rados:p/%s", name);
	open_refused(loc, NULL, KT_ENOTSUP, "built without RADOS support",
		     NULL);
}
#else
/* An unreadable ceph_conf (option or $KEYTREE_CEPH_CONF) is named before
 * any connection is tried. */
static void test_location__bad_conf(void **state)
{
	kt_options o = KT_OPTIONS_INIT;

	(void)state;
	o.ceph_conf = "/nonexistent/ceph.conf";
	open_refused("rados:p/t", &o, KT_EINVAL,
		     "ceph_conf '/nonexistent/ceph.conf'", NULL);
	o.ceph_conf = NULL;
	assert_int_equal(setenv("KEYTREE_CEPH_CONF", "/nonexistent/env.conf",
				1), 0);
	open_refused("rados:p/t", &o, KT_EINVAL,
		     "ceph_conf '/nonexistent/env.conf'", NULL);
}
#endif

/* Version 1 of kt_options ended at cache_size: a program built against
 * that header still opens stores (nothing after it is read: under ASan a
 * read past this struct fails the test).  Other versions are refused. */
static void test_location__options_version(void **state)
{
	struct {
		unsigned int version;
		int create_if_missing, error_if_exists, read_only, sync;
		const char *delimiter;
		size_t cache_size;
	} v1 = {1, 1, 0, 0, 0, NULL, 0};
	struct {
		unsigned int version;
		int create_if_missing, error_if_exists, read_only, sync;
		const char *delimiter;
		size_t cache_size;
		const char *ceph_conf, *ceph_client;
		int typed_names;
	} v3 = {3, 0, 0, 0, 0, NULL, 0, NULL, NULL, 0};
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;

	(void)state;
	assert_int_equal(KT_OPTIONS_VERSION, 4);
	assert_int_equal(sizeof(v1), offsetof(kt_options, ceph_conf));
	assert_int_equal(kt_open(&st, "s", (const kt_options *)(void *)&v1),
			 0);
	assert_int_equal(kt_put(st, "/x", "1", 1, NULL), 0);
	kt_close(st);
	st = NULL;
	v1.create_if_missing = 0;
	v1.read_only = 1;
	assert_int_equal(kt_open(&st, "s", (const kt_options *)(void *)&v1),
			 0);
	assert_int_equal(kt_put(st, "/y", "1", 1, NULL), KT_EREADONLY);
	kt_close(st);
	st = NULL;
	assert_int_equal(kt_open(&st, "s", &o), 0);
	kt_close(st);
	st = NULL;
	/* Version 2, without typed_names: read up to ceph_client. */
	o.version = 2;
	o.typed_names = 77;
	assert_int_equal(kt_open(&st, "s", &o), 0);
	kt_close(st);
	st = NULL;
	o.typed_names = 0;
	/* Version 3 ended at typed_names: a struct of that layout opens
	 * (under ASan a read past it fails the test), and the field after
	 * it in a newer struct is not read. */
	assert_int_equal(sizeof(v3), offsetof(kt_options, write_buffer_size));
	assert_int_equal(kt_open(&st, "s", (const kt_options *)(void *)&v3),
			 0);
	kt_close(st);
	st = NULL;
	o.version = 3;
	o.write_buffer_size = 5;
	assert_int_equal(kt_open(&st, "s", &o), 0);
	kt_close(st);
	st = NULL;
	o.version = 4;
	assert_int_equal(kt_open(&st, "s", &o), KT_EINVAL);
	assert_null(st);
	assert_non_null(strstr(kt_errmsg(), "write_buffer_size 5"));
	o.write_buffer_size = 0;
	o.version = 5;
	assert_int_equal(kt_open(&st, "s", &o), KT_EINVAL);
	assert_null(st);
	assert_non_null(strstr(kt_errmsg(), "options version 5"));
	o.version = 0;
	assert_int_equal(kt_open(&st, "s", &o), KT_EINVAL);
	assert_non_null(strstr(kt_errmsg(), "options version 0"));
}

/* No location at all. */
static void test_location__empty(void **state)
{
	kt_store *st = NULL;

	(void)state;
	assert_int_equal(kt_open(&st, "", NULL), KT_EINVAL);
	assert_non_null(strstr(kt_errmsg(), "no store location"));
	assert_int_equal(kt_open(&st, NULL, NULL), KT_EINVAL);
	assert_non_null(strstr(kt_errmsg(), "no store location"));
	assert_null(st);
}

#define T(f) cmocka_unit_test_setup_teardown(f, loc_setup, loc_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_location__directory),
		T(test_location__dot_slash_rados_is_directory),
		T(test_location__bad_rados),
		T(test_location__rados_lengths),
		T(test_location__bad_client),
#ifndef KT_HAVE_RADOS
		T(test_location__rados_not_built),
#else
		T(test_location__bad_conf),
#endif
		T(test_location__options_version),
		T(test_location__empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
