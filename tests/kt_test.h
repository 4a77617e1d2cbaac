/*
 * kt_test.h - helpers shared by the cmocka test programs: a temporary store
 * per test, and a digest of a store's whole visible state, so that a test
 * can assert that a rejected operation left the store unchanged.
 *
 * Header-only on purpose: each tests/test_*.c is its own executable.
 */
#ifndef KT_TEST_H
#define KT_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keytree.h"

/* One temporary store, made by kt_test_setup and removed by
 * kt_test_teardown.  Tests receive it as *state. */
typedef struct kt_test_fixture {
	char dir[256];   /* the temporary directory holding the store */
	char path[300];  /* the store directory itself (dir/store) */
	kt_store *store;
} kt_test_fixture;

static inline int kt_test__rm_cb(const char *p, const struct stat *sb, int type,
			  struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

/* Remove a directory tree; used by teardown. */
static inline void kt_test_rmtree(const char *dir)
{
	nftw(dir, kt_test__rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Is this run on the RADOS engine (KEYTREE_TEST_ENGINE=rados)? */
static inline int kt_test_on_rados(void)
{
	const char *e = getenv("KEYTREE_TEST_ENGINE");

	return e != NULL && strcmp(e, "rados") == 0;
}

/* A test of something only the LevelDB engine promises or has: on RADOS
 * it is reported as skipped, saying why, never as passed. */
#define KT_TEST_LEVELDB_ONLY(why)                                         \
	do {                                                              \
		if (kt_test_on_rados()) {                                 \
			fprintf(stderr, "skipped on RADOS: %s\n", why);   \
			skip();                                           \
		}                                                         \
	} while (0)

/* Is this a short run on RADOS: the RADOS engine without KT_RADOS_LONG=1
 * (CMake's -DKT_RADOS_LONG=ON)?  A commit there takes several round trips
 * to the OSDs, so a test that makes thousands of them takes minutes. */
static inline int kt_test_rados_short(void)
{
	return kt_test_on_rados() && getenv("KT_RADOS_LONG") == NULL;
}

/* The size of a workload: @p n_full on LevelDB and on RADOS with
 * KT_RADOS_LONG=1, @p n_short on a short run on RADOS, which says so on
 * stderr.  @p n_short must still exercise what the test is named for.
 * Example: n = kt_test_scale(10000, 700); */
static inline long kt_test_scale(long n_full, long n_short)
{
	if (!kt_test_rados_short())
		return n_full;
	fprintf(stderr, "short on RADOS: size %ld instead of %ld "
		"(KT_RADOS_LONG=1 for the full size)\n", n_short, n_full);
	return n_short;
}

/* A test that makes a thousand commits or more, minutes on RADOS, and
 * cannot be made smaller without losing its point (a limit): there it
 * runs only with KT_RADOS_LONG=1 and is reported as skipped otherwise,
 * saying @p why. */
#define KT_TEST_LONG_ON_RADOS_BECAUSE(why)                                \
	do {                                                              \
		if (kt_test_rados_short()) {                              \
			fprintf(stderr, "skipped on RADOS: %s; run with " \
				"KT_RADOS_LONG=1\n", why);                \
			skip();                                           \
		}                                                         \
	} while (0)

#define KT_TEST_LONG_ON_RADOS() KT_TEST_LONG_ON_RADOS_BECAUSE("long there")

static inline int kt_test_setup(void **state)
{
	kt_test_fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	kt_options o = KT_OPTIONS_INIT;
	int rc;

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/kt-test-XXXXXX",
		 tmp ? tmp : "/tmp");
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/store", f->dir);
	/* KEYTREE_TEST_ENGINE=rados: the store is a new tree in pool
	 * "keytree" of the cluster KEYTREE_CEPH_CONF names (ctest's "ceph"
	 * fixture); the directory stays for the test's other files. */
	{
		if (kt_test_on_rados())
			snprintf(f->path, sizeof(f->path),
				 "rados:keytree/t-%ld-%s", (long)getpid(),
				 strrchr(f->dir, '-') + 1);
	}
	o.create_if_missing = 1;
	if ((rc = kt_open(&f->store, f->path, &o)) != 0) {
		fprintf(stderr, "kt_open %s: %d (%s): %s\n", f->path, rc,
			kt_strerror(rc), kt_errmsg());
		kt_test_rmtree(f->dir);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static inline int kt_test_teardown(void **state)
{
	kt_test_fixture *f = *state;
	size_t bad = 0;
	int rc = 0;

	if (f == NULL)
		return 0;
	/* Every test ends with the invariants checked. */
	if (f->store != NULL) {
		rc = kt_check(&bad, f->store, NULL);
		if (rc != 0)
			fprintf(stderr, "kt_check at teardown: %d (%s), %zu "
				"violations\n", rc, kt_errmsg(), bad);
		kt_close(f->store);
	}
	/* A RADOS tree lives in the cluster, not in the directory. */
	if (strncmp(f->path, "rados:", 6) == 0 &&
	    kt_destroy(f->path, NULL) != 0) {
		fprintf(stderr, "kt_destroy at teardown: %s\n", kt_errmsg());
		rc = -1;
	}
	kt_test_rmtree(f->dir);
	free(f);
	return rc == 0 ? 0 : -1;
}

/* Close and reopen the fixture's store. */
static inline void kt_test_reopen(kt_test_fixture *f)
{
	kt_close(f->store);
	f->store = NULL;
	assert_int_equal(kt_open(&f->store, f->path, NULL), 0);
}

/* A growable string used to build digests. */
typedef struct kt_test_str {
	char *p;
	size_t len, cap;
} kt_test_str;

static inline void kt_test_str_add(kt_test_str *s, const void *data, size_t len)
{
	if (s->len + len + 1 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		while (cap < s->len + len + 1)
			cap *= 2;
		s->p = realloc(s->p, cap);
		assert_non_null(s->p);
		s->cap = cap;
	}
	memcpy(s->p + s->len, data, len);
	s->len += len;
	s->p[s->len] = '\0';
}

static inline void kt_test_str_addf(kt_test_str *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline void kt_test_str_addf(kt_test_str *s, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(buf));
	kt_test_str_add(s, buf, (size_t)n);
}

/* Append @p len bytes as hex, so binary values keep the digest a string. */
static inline void kt_test_str_hex(kt_test_str *s, const void *data, size_t len)
{
	const unsigned char *b = data;
	char h[3];
	size_t i;

	for (i = 0; i < len; i++) {
		snprintf(h, sizeof(h), "%02x", b[i]);
		kt_test_str_add(s, h, 2);
	}
}

/* Append one node's state (metadata, value, link target, attributes). */
static inline void kt_test_digest_node(kt_test_str *s, kt_store *st, const char *path)
{
	kt_statbuf sb;
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc;

	assert_int_equal(kt_lstat(&sb, st, path), 0);
	kt_test_str_hex(s, path, strlen(path));
	kt_test_str_addf(s, "|k%u|id%llu|m%o|u%u|g%u|s%llu|t%lld.%lld.%lld|"
			 "v%llu|d%u|a%u|", sb.kind,
			 (unsigned long long)sb.id, (unsigned)sb.mode,
			 (unsigned)sb.uid, (unsigned)sb.gid,
			 (unsigned long long)sb.size, (long long)sb.atime_ns,
			 (long long)sb.mtime_ns, (long long)sb.ctime_ns,
			 (unsigned long long)sb.version, (unsigned)sb.nsubdirs,
			 (unsigned)sb.nattrs);
	if (sb.kind & KT_KIND_SPECIAL)
		kt_test_str_addf(s, "T%u.%llu|", sb.type,
				 (unsigned long long)sb.rdev);
	if (sb.kind & KT_KIND_LINK) {
		char *t = NULL;
		size_t tl = 0;
		assert_int_equal(kt_readlink(&t, &tl, st, path), 0);
		kt_test_str_hex(s, t, tl);
		kt_free(t);
	} else {
		if (sb.kind & KT_KIND_ITEM) {
			void *v = NULL;
			size_t vl = 0;
			assert_int_equal(kt_get(&v, &vl, st, path), 0);
			kt_test_str_hex(s, v, vl);
			kt_free(v);
		}
		assert_int_equal(kt_attr_iter_new(&it, st, path), 0);
		while ((rc = kt_iter_next(&e, it)) == 0) {
			kt_test_str_add(s, "|", 1);
			kt_test_str_hex(s, e->name, e->name_len);
			kt_test_str_add(s, "=", 1);
			kt_test_str_hex(s, e->value, e->value_len);
		}
		assert_int_equal(rc, KT_ITEROVER);
		kt_iter_free(it);
	}
	kt_test_str_add(s, "\n", 1);
}

/* A string describing everything visible in the store: every node with its
 * metadata, value, link target and attributes.  Free with free(). */
static inline char *kt_test_digest(kt_store *st)
{
	kt_test_str s = {0};
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc;

	kt_test_digest_node(&s, st, "/");
	assert_int_equal(kt_find_new(&it, st, "/", 0), 0);
	while ((rc = kt_iter_next(&e, it)) == 0)
		kt_test_digest_node(&s, st, e->name);
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	if (s.p == NULL)
		kt_test_str_add(&s, "", 0);
	return s.p;
}

/* Assert that a call failed with the expected code, that the message is
 * non-empty and contains @p needle (when not NULL), and that the store's
 * digest is what it was before. */
#define kt_assert_rejected(store, call, code, needle)                        \
	do {                                                                 \
		char *kt__before = kt_test_digest(store);                    \
		int kt__rc = (call);                                         \
		char *kt__after;                                             \
		if (kt__rc != (code))                                        \
			fail_msg("%s: got %d (%s), want %d", #call, kt__rc,  \
				 kt_errmsg(), (int)(code));                  \
		assert_true(kt_errmsg()[0] != '\0');                         \
		if ((needle) != NULL &&                                      \
		    strstr(kt_errmsg(), (const char *)(needle)) == NULL)     \
			fail_msg("%s: message '%s' does not name '%s'",      \
				 #call, kt_errmsg(), (const char *)(needle));\
		kt__after = kt_test_digest(store);                           \
		assert_string_equal(kt__before, kt__after);                  \
		free(kt__before);                                            \
		free(kt__after);                                             \
	} while (0)

/* CRC-32C one bit at a time, as its definition reads (reflected
 * polynomial 0x82F63B78): what the library's table and instruction paths
 * (tree/src/crc32c.c) and the block checksums of docs/FORMAT.md §6 are
 * checked against. */
static inline uint32_t kt_test_crc32c(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	int k;

	crc = ~crc;
	while (n-- > 0) {
		crc ^= *b++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

#endif /* KT_TEST_H */
