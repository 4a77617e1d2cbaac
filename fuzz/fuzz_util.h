/*
 * fuzz_util.h - what the libFuzzer targets share: a scratch directory on
 * tmpfs, removing a directory tree, a failure that aborts (so libFuzzer
 * saves the input), and a digest of a subtree's whole visible state, to
 * assert that a rejected operation left the store unchanged.
 *
 * Header-only: each fuzz target is one translation unit plus the library.
 */
#ifndef KT_FUZZ_UTIL_H
#define KT_FUZZ_UTIL_H

#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keytree.h"

/* Report a broken property and abort: libFuzzer then writes the input out
 * as a crash artifact. */
static inline void fz_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static inline void fz_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\n*** fuzz property violated: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

static inline int fz__rm_cb(const char *p, const struct stat *sb, int type,
			    struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

/* Remove a directory tree (quietly; it may not exist). */
static inline void fz_rmtree(const char *dir)
{
	nftw(dir, fz__rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh scratch directory, on /dev/shm when it is writable (LevelDB's
 * files then cost no disk I/O), else under $TMPDIR or /tmp.  @p out holds
 * at least 256 bytes.  Removed at exit unless the process crashes. */
static char fz__scratch[256];
static inline void fz__scratch_cleanup(void)
{
	if (fz__scratch[0] != '\0')
		fz_rmtree(fz__scratch);
}

static inline const char *fz_scratch(void)
{
	const char *tmp = getenv("TMPDIR");

	if (fz__scratch[0] != '\0')
		return fz__scratch;
	if (access("/dev/shm", W_OK) == 0)
		tmp = "/dev/shm";
	snprintf(fz__scratch, sizeof(fz__scratch), "%s/kt-fuzz-XXXXXX",
		 tmp ? tmp : "/tmp");
	if (mkdtemp(fz__scratch) == NULL) {
		perror(fz__scratch);
		abort();
	}
	atexit(fz__scratch_cleanup);
	return fz__scratch;
}

/* A growable byte string. */
typedef struct fz_str {
	char *p;
	size_t len, cap;
} fz_str;

static inline void fz_str_add(fz_str *s, const void *data, size_t len)
{
	if (s->len + len + 1 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		while (cap < s->len + len + 1)
			cap *= 2;
		s->p = realloc(s->p, cap);
		if (s->p == NULL)
			abort();
		s->cap = cap;
	}
	if (len > 0)
		memcpy(s->p + s->len, data, len);
	s->len += len;
	s->p[s->len] = '\0';
}

static inline void fz_str_addf(fz_str *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void fz_str_addf(fz_str *s, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		abort();
	fz_str_add(s, buf, (size_t)n);
}

/* Append one node: all its metadata (times and version included: a
 * rejected operation may change none of them), value or link target, and
 * attributes.  Returns the kt_lstat code. */
static inline int fz_digest_node(fz_str *s, kt_store *st, const char *path)
{
	kt_statbuf sb;
	kt_iter *it = NULL;
	const kt_entry *e;
	void *v = NULL;
	size_t vl = 0;
	int rc;

	if ((rc = kt_lstat(&sb, st, path)) != 0)
		return rc;
	fz_str_add(s, path, strlen(path));
	fz_str_addf(s,
		    "|k%u|id%llu|m%o|u%u|g%u|s%llu|t%lld.%lld.%lld|v%llu|"
		    "d%u|a%u|",
		    sb.kind, (unsigned long long)sb.id, (unsigned)sb.mode,
		    (unsigned)sb.uid, (unsigned)sb.gid,
		    (unsigned long long)sb.size, (long long)sb.atime_ns,
		    (long long)sb.mtime_ns, (long long)sb.ctime_ns,
		    (unsigned long long)sb.version, (unsigned)sb.nsubdirs,
		    (unsigned)sb.nattrs);
	if (sb.kind & KT_KIND_LINK) {
		char *t = NULL;
		if ((rc = kt_readlink(&t, &vl, st, path)) != 0)
			fz_fail("kt_readlink of link '%s': %d (%s)", path, rc,
				kt_errmsg());
		fz_str_add(s, t, vl);
		kt_free(t);
	} else {
		if (sb.kind & KT_KIND_ITEM) {
			if ((rc = kt_get(&v, &vl, st, path)) != 0)
				fz_fail("kt_get of item '%s': %d (%s)", path,
					rc, kt_errmsg());
			fz_str_add(s, v, vl);
			kt_free(v);
		}
		if ((rc = kt_attr_iter_new(&it, st, path)) != 0)
			fz_fail("kt_attr_iter_new('%s'): %d (%s)", path, rc,
				kt_errmsg());
		while ((rc = kt_iter_next(&e, it)) == 0) {
			fz_str_add(s, "|", 1);
			fz_str_add(s, e->name, e->name_len);
			fz_str_add(s, "=", 1);
			fz_str_add(s, e->value, e->value_len);
		}
		kt_iter_free(it);
		if (rc != KT_ITEROVER)
			fz_fail("kt_iter_next (attributes of '%s'): %d (%s)",
				path, rc, kt_errmsg());
	}
	fz_str_add(s, "\n", 1);
	return 0;
}

/* Everything visible at and below @p path (a directory; "/" for the whole
 * store).  Free with free(). */
static inline char *fz_digest(kt_store *st, const char *path)
{
	fz_str s = {0};
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc;

	if (fz_digest_node(&s, st, path) != 0)
		fz_str_add(&s, "(none)\n", 7);
	rc = kt_find_new(&it, st, path,
			 strcmp(path, "/") == 0 ? 0 : KT_FIND_SUBTREE);
	if (rc == 0) {
		while ((rc = kt_iter_next(&e, it)) == 0) {
			if (strcmp(e->name, path) == 0)
				continue;
			if (fz_digest_node(&s, st, e->name) != 0)
				fz_fail("'%s' found but kt_lstat fails: %s",
					e->name, kt_errmsg());
		}
		kt_iter_free(it);
		if (rc != KT_ITEROVER)
			fz_fail("kt_iter_next (find '%s'): %d (%s)", path, rc,
				kt_errmsg());
	}
	if (s.p == NULL)
		fz_str_add(&s, "", 0);
	return s.p;
}

static inline int fz__check_cb(const char *what, void *payload)
{
	(void)payload;
	fprintf(stderr, "kt_check: %s\n", what);
	return 0;
}

/* kt_check must find nothing. */
static inline void fz_check(kt_store *st, const char *when)
{
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	size_t bad = 0;
	int rc;

	o.on_violation = fz__check_cb;
	rc = kt_check(&bad, st, &o);

	if (rc != 0 || bad != 0)
		fz_fail("kt_check %s: %d (%s), %zu violations", when, rc,
			rc ? kt_errmsg() : "", bad);
}

#endif /* KT_FUZZ_UTIL_H */
