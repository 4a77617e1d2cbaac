/*
 * path.c - paths and names.
 *
 * Only canonical absolute paths are accepted, by readers and writers alike:
 * "/" or "/name(/name)*", every name 1..KT_NAME_MAX bytes, no NUL, no '/',
 * not "." or "..", and free of the store's delimiter.  Because a name never
 * contains the delimiter and the delimiter is a single character (one byte,
 * or one UTF-8 sequence, which can never overlap itself), replacing each
 * '/' by the delimiter is a one-to-one encoding: every occurrence of the
 * delimiter in an encoded path is a separator, so two different paths can
 * never encode to the same row.
 */
#include <stdio.h>

#include "path.h"

/* Length of the UTF-8 sequence introduced by lead byte @p c, 0 if @p c
 * cannot start one. */
static size_t utf8_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

int kt__delim_check(const char *d)
{
	size_t len, i, n;
	const unsigned char *u = (const unsigned char *)d;

	if (d == NULL || d[0] == '\0')
		return kt__err(KT_EINVAL, "delimiter is empty");
	len = strlen(d);
	if (len == 1) {
		if (d[0] == '/')
			return kt__err(KT_EINVAL, "delimiter may not be '/'");
		return 0; /* any single byte but NUL and '/' */
	}
	n = utf8_len(u[0]);
	if (n != len)
		return kt__err(KT_EINVAL, "delimiter must be one character "
			       "(one byte or one UTF-8 sequence); got %zu "
			       "bytes", len);
	for (i = 1; i < len; i++)
		if ((u[i] & 0xc0) != 0x80)
			return kt__err(KT_EINVAL, "delimiter is not valid "
				       "UTF-8 (byte %zu)", i);
	/* Reject overlong and surrogate forms. */
	if ((n == 3 && u[0] == 0xe0 && u[1] < 0xa0) ||
	    (n == 3 && u[0] == 0xed && u[1] >= 0xa0) ||
	    (n == 4 && u[0] == 0xf0 && u[1] < 0x90) ||
	    (n == 4 && u[0] == 0xf4 && u[1] >= 0x90))
		return kt__err(KT_EINVAL, "delimiter is not valid UTF-8");
	return 0;
}

static const char *find_delim(const kt__delim *d, const char *s, size_t len)
{
	size_t i;

	if (d->len == 1)
		return memchr(s, d->s[0], len);
	for (i = 0; i + d->len <= len; i++)
		if (s[i] == d->s[0] && memcmp(s + i, d->s, d->len) == 0)
			return s + i;
	return NULL;
}

int kt__name_check(const kt__delim *d, const char *name, size_t len,
		   const char *op, const char *path)
{
	char a[KT__SHOWSZ], b[KT__SHOWSZ];
	const char *hit;

	if (len == 0)
		return kt__err(KT_EINVAL, "%s '%s': empty name", op,
			       kt__show(a, sizeof(a), path, strlen(path)));
	if (len > KT_NAME_MAX)
		return kt__err(KT_ENAMETOOLONG, "%s '%s': name of %zu bytes "
			       "is over the limit of %d", op,
			       kt__show(a, sizeof(a), path, strlen(path)), len,
			       KT_NAME_MAX);
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return kt__err(KT_EINVAL, "%s '%s': '%.*s' is not a valid name"
			       " (paths must be canonical)", op,
			       kt__show(a, sizeof(a), path, strlen(path)),
			       (int)len, name);
	hit = find_delim(d, name, len);
	if (hit != NULL)
		return kt__err(KT_ERESERVED, "%s '%s': name '%s' contains the "
			       "reserved delimiter at byte %zu", op,
			       kt__show(a, sizeof(a), path, strlen(path)),
			       kt__show(b, sizeof(b), name, len),
			       (size_t)(hit - name));
	return 0;
}

int kt__path_check(const kt__delim *d, const char *path, const char *op)
{
	char a[KT__SHOWSZ];
	size_t len, i, start, depth = 0;
	int rc;

	if (path == NULL)
		return kt__err(KT_EINVAL, "%s: path is NULL", op);
	len = strlen(path);
	if (len == 0)
		return kt__err(KT_EINVAL, "%s: path is empty", op);
	if (path[0] != '/')
		return kt__err(KT_EINVAL, "%s '%s': path is not absolute (it "
			       "must start with '/')", op,
			       kt__show(a, sizeof(a), path, len));
	if (len > KT_PATH_MAX)
		return kt__err(KT_ENAMETOOLONG, "%s '%s': path of %zu bytes is"
			       " over the limit of %d", op,
			       kt__show(a, sizeof(a), path, len), len,
			       KT_PATH_MAX);
	if (len == 1)
		return 0;
	if (path[len - 1] == '/')
		return kt__err(KT_EINVAL, "%s '%s': trailing '/' (paths must be"
			       " canonical)", op,
			       kt__show(a, sizeof(a), path, len));
	start = 1;
	for (i = 1; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		if (i == start)
			return kt__err(KT_EINVAL, "%s '%s': empty component at"
				       " byte %zu ('//')", op,
				       kt__show(a, sizeof(a), path, len), i);
		rc = kt__name_check(d, path + start, i - start, op, path);
		if (rc != 0)
			return rc;
		if (++depth > KT_DEPTH_MAX)
			return kt__err(KT_ENAMETOOLONG, "%s '%s...': more than"
				       " %d components", op,
				       kt__show(a, 40, path, len),
				       KT_DEPTH_MAX);
		start = i + 1;
	}
	return 0;
}

size_t kt__parent_len(const char *p, size_t len)
{
	while (len > 0 && p[len - 1] != '/')
		len--;
	return len > 0 ? len - 1 : 0;
}

size_t kt__depth(const char *p, size_t len)
{
	size_t i, n = 0;

	if (len <= 1)
		return 0;
	for (i = 0; i < len; i++)
		n += p[i] == '/';
	return n;
}

int kt__enc_node(kt__buf *out, const kt__delim *d, const char *p, size_t len)
{
	size_t i, start;
	int rc;

	if (len <= 1)
		return kt__buf_reserve(out, 0);
	if ((rc = kt__buf_reserve(out, len + len * (d->len - 1))) != 0)
		return rc;
	for (i = 0; i < len; i = start) {
		/* p[i] == '/' */
		kt__buf_add(out, d->s, d->len);
		start = i + 1;
		while (start < len && p[start] != '/')
			start++;
		kt__buf_add(out, p + i + 1, start - i - 1);
	}
	return 0;
}

int kt__enc_index(kt__buf *out, const kt__delim *d, const char *p, size_t len)
{
	int rc = kt__enc_node(out, d, p, len);

	return rc ? rc : kt__buf_add(out, d->s, d->len);
}

int kt__dec_node(kt__buf *out, const kt__delim *d, const char *part,
		 size_t len)
{
	const char *end = part + len, *hit;
	int rc;

	if (len == 0)
		return kt__buf_addc(out, '/');
	while (part < end) {
		/* Every partition starts with the delimiter. */
		if ((size_t)(end - part) < d->len ||
		    memcmp(part, d->s, d->len) != 0)
			return kt__err(KT_ECORRUPT, "malformed partition key");
		part += d->len;
		hit = find_delim(d, part, (size_t)(end - part));
		if (hit == NULL)
			hit = end;
		if ((rc = kt__buf_addc(out, '/')) != 0 ||
		    (rc = kt__buf_add(out, part, (size_t)(hit - part))) != 0)
			return rc;
		part = hit;
	}
	return 0;
}

int kt__path_valid(const kt__delim *d, const char *p, size_t len)
{
	size_t i, start = 1, depth = 0;

	if (len == 0 || p[0] != '/' || len > KT_PATH_MAX)
		return 0;
	if (len == 1)
		return 1;
	for (i = 1; i <= len; i++) {
		size_t n;
		if (i < len && p[i] != '/')
			continue;
		n = i - start;
		if (n == 0 || n > KT_NAME_MAX || ++depth > KT_DEPTH_MAX ||
		    (n == 1 && p[start] == '.') ||
		    (n == 2 && p[start] == '.' && p[start + 1] == '.') ||
		    memchr(p + start, '\0', n) != NULL ||
		    find_delim(d, p + start, n) != NULL)
			return 0;
		start = i + 1;
	}
	return 1;
}
