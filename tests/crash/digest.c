/*
 * digest.c - the logical digest of a store (see digest.h).  It reads the
 * store only through the public API, as a user would, so it also checks
 * that everything find lists can be read.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

typedef struct ktc_str {
	char *p;
	size_t len, cap;
} ktc_str;

uint64_t ktc_fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *b = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int str_add(ktc_str *s, const char *data, size_t len)
{
	if (s->len + len + 1 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		char *p;

		while (cap < s->len + len + 1)
			cap *= 2;
		p = realloc(s->p, cap);
		if (p == NULL)
			return KT_ENOMEM;
		s->p = p;
		s->cap = cap;
	}
	memcpy(s->p + s->len, data, len);
	s->len += len;
	s->p[s->len] = '\0';
	return 0;
}

static int str_addf(ktc_str *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int str_addf(ktc_str *s, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return KT_EINVAL;
	return str_add(s, buf, (size_t)n);
}

/* Bytes as printable text: the paths here are short and mostly ASCII. */
static int str_esc(ktc_str *s, const char *p, size_t len)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < len && rc == 0; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c > 0x20 && c < 0x7f && c != '\\' && c != '|')
			rc = str_add(s, p + i, 1);
		else
			rc = str_addf(s, "\\x%02x", c);
	}
	return rc;
}

static int digest_attrs(ktc_str *s, kt_store *st, const char *path)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc;

	if ((rc = kt_attr_iter_new(&it, st, path)) != 0)
		return rc;
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if ((rc = str_add(s, " @", 2)) != 0 ||
		    (rc = str_esc(s, e->name, e->name_len)) != 0 ||
		    (rc = str_addf(
			     s, "=%zu:%016llx", e->value_len,
			     (unsigned long long)ktc_fnv(KTC_FNV_INIT, e->value,
							 e->value_len))) != 0)
			break;
	}
	kt_iter_free(it);
	return rc == KT_ITEROVER ? 0 : rc;
}

static int digest_node(ktc_str *s, kt_store *st, const char *path)
{
	kt_statbuf sb;
	void *v = NULL;
	size_t len = 0;
	int rc;

	if ((rc = kt_lstat(&sb, st, path)) != 0)
		return rc;
	if ((rc = str_esc(s, path, strlen(path))) != 0 ||
	    (rc = str_addf(s, "|k%u m%o u%u g%u s%llu d%u a%u", sb.kind,
			   (unsigned)sb.mode, (unsigned)sb.uid,
			   (unsigned)sb.gid, (unsigned long long)sb.size,
			   (unsigned)sb.nsubdirs, (unsigned)sb.nattrs)) != 0)
		return rc;
	if (sb.kind & KT_KIND_LINK) {
		char *t = NULL;

		if ((rc = kt_readlink(&t, &len, st, path)) != 0)
			return rc;
		rc = str_add(s, " ->", 3);
		if (rc == 0)
			rc = str_esc(s, t, len);
		kt_free(t);
	} else {
		if (sb.kind & KT_KIND_ITEM) {
			if ((rc = kt_get(&v, &len, st, path)) != 0)
				return rc;
			rc = str_addf(s, " v%zu:%016llx", len,
				      (unsigned long long)ktc_fnv(KTC_FNV_INIT,
								  v, len));
			kt_free(v);
			if (rc == 0 && len != sb.size)
				rc = str_addf(s, " SIZE-MISMATCH");
			if (rc != 0)
				return rc;
		}
		rc = digest_attrs(s, st, path);
	}
	if (rc == 0)
		rc = str_add(s, "\n", 1);
	return rc;
}

int ktc_digest(char **out, kt_store *st)
{
	ktc_str s = {0};
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc;

	*out = NULL;
	rc = digest_node(&s, st, "/");
	if (rc == 0)
		rc = kt_find_new(&it, st, "/", 0);
	while (rc == 0 && (rc = kt_iter_next(&e, it)) == 0)
		rc = digest_node(&s, st, e->name);
	kt_iter_free(it);
	if (rc == KT_ITEROVER)
		rc = 0;
	if (rc == 0 && s.p == NULL)
		rc = str_add(&s, "", 0);
	if (rc != 0) {
		free(s.p);
		return rc;
	}
	*out = s.p;
	return 0;
}

void ktc_digest_diff(const char *la, const char *a, const char *lb,
		     const char *b)
{
	while (*a != '\0' || *b != '\0') {
		size_t na = strcspn(a, "\n"), nb = strcspn(b, "\n");

		if (na != nb || memcmp(a, b, na) != 0) {
			fprintf(stderr,
				"  first difference:\n  %s: %.*s\n"
				"  %s: %.*s\n",
				la, (int)na, a, lb, (int)nb, b);
			return;
		}
		a += na + (a[na] != '\0');
		b += nb + (b[nb] != '\0');
	}
}
