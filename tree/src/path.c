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
	const char *end = s + len, *q = s;

	if (d->len == 1)
		return memchr(s, d->s[0], len);
	/* memchr finds each candidate first byte (the delimiter's lead
	 * byte is rare in names); compare the rest there. */
	while ((size_t)(end - q) >= d->len &&
	       (q = memchr(q, d->s[0], (size_t)(end - q) - d->len + 1)) !=
		       NULL) {
		if (memcmp(q + 1, d->s + 1, d->len - 1) == 0)
			return q;
		q++;
	}
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
	int rc, suspect = 0;

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
	/* One pass over the bytes: a component goes to kt__name_check,
	 * which words the error, only when it may be wrong ('.', '..', too
	 * long, or holding the delimiter's first byte where the whole
	 * delimiter follows).  Every get starts here. */
	start = 1;
	for (i = 1; i <= len; i++) {
		size_t n;

		if (i < len && path[i] != '/') {
			if (path[i] == d->s[0] && i + d->len <= len &&
			    memcmp(path + i, d->s, d->len) == 0)
				suspect = 1;
			continue;
		}
		if (i == start)
			return kt__err(KT_EINVAL, "%s '%s': empty component at"
				       " byte %zu ('//')", op,
				       kt__show(a, sizeof(a), path, len), i);
		n = i - start;
		if (suspect || n > KT_NAME_MAX ||
		    (path[start] == '.' &&
		     (n == 1 || (n == 2 && path[start + 1] == '.')))) {
			rc = kt__name_check(d, path + start, n, op, path);
			if (rc != 0)
				return rc;
			suspect = 0;
		}
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

/*
 * Typed names (format 5).  In a store made with typed names every name
 * takes in rows (node partitions, index sort keys) the form T(name):
 *
 *   a canonical unsigned decimal ("0", or 1 to 20 digits without a
 *   leading zero, at most 2^64 - 1):  01, 01 + L, X(the value's L bytes,
 *                                      big-endian, no leading zero byte)
 *   a canonical UUID (36 characters,
 *   8-4-4-4-12 lower-case hex):       02, X(its 16 bytes)
 *   any other name:                   03, the name's bytes
 *
 * X escapes the bytes that may not appear: 00 -> 01 01, 01 -> 01 02, and
 * with d0 the delimiter's first byte, (d0 - 1) -> (d0 - 1) 01 and
 * d0 -> (d0 - 1) 02.  It keeps byte order and is prefix-free, so T keeps
 * numbers in numeric order (shorter first, then by bytes) and all of it
 * is one-to-one; d0 is at least 0x20 (kt__typed_check), so no tag, length
 * or escape byte is ever d0, and the delimiter still separates
 * components unambiguously.
 */
int kt__typed_check(const kt__delim *d)
{
	if ((unsigned char)d->s[0] < 0x20)
		return kt__err(KT_EINVAL, "typed names need a delimiter that "
			       "does not start with a control byte (0x%02x)",
			       (unsigned char)d->s[0]);
	return 0;
}

#define T_NUM 1
#define T_UUID 2
#define T_TEXT 3

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Which type is name[0..len)?  T_NUM with *num, T_UUID with u, or
 * T_TEXT. */
static int name_type(const char *s, size_t len, uint64_t *num,
		     unsigned char u[16])
{
	size_t i, j;

	if (len >= 1 && len <= 20 && (len == 1 || s[0] != '0')) {
		uint64_t v = 0;
		for (i = 0; i < len; i++) {
			unsigned int c = (unsigned char)s[i] - '0';
			if (c > 9 || v > (UINT64_MAX - c) / 10)
				break;
			v = v * 10 + c;
		}
		if (i == len) {
			*num = v;
			return T_NUM;
		}
	}
	if (len == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' &&
	    s[23] == '-') {
		for (i = 0, j = 0; i < 36; i++) {
			int h, l;
			if (i == 8 || i == 13 || i == 18 || i == 23)
				continue;
			if ((h = hexval(s[i])) < 0 || (l = hexval(s[i + 1])) < 0)
				return T_TEXT;
			u[j++] = (unsigned char)(h << 4 | l);
			i++;
		}
		return T_UUID;
	}
	return T_TEXT;
}

static int x_add(kt__buf *out, const kt__delim *d, const unsigned char *b,
		 size_t n)
{
	unsigned char d0 = (unsigned char)d->s[0], q = (unsigned char)(d0 - 1);
	size_t i;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		char e[2];
		if (b[i] <= 1) {
			e[0] = 1;
			e[1] = (char)(b[i] + 1);
		} else if (b[i] == q || b[i] == d0) {
			e[0] = (char)q;
			e[1] = b[i] == q ? 1 : 2;
		} else {
			rc = kt__buf_addc(out, (char)b[i]);
			continue;
		}
		rc = kt__buf_add(out, e, 2);
	}
	return rc;
}

/* Undo x_add for exactly @p n bytes from enc[0..len), into b; how many
 * bytes of enc that took, or 0 when they do not decode. */
static size_t x_take(const kt__delim *d, const unsigned char *enc,
		     size_t len, unsigned char *b, size_t n)
{
	unsigned char d0 = (unsigned char)d->s[0], q = (unsigned char)(d0 - 1);
	size_t i = 0, k;

	for (k = 0; k < n; k++) {
		if (i >= len || enc[i] == 0 || enc[i] == d0)
			return 0;
		if (enc[i] == 1 || enc[i] == q) {
			if (i + 1 >= len || (enc[i + 1] != 1 && enc[i + 1] != 2))
				return 0;
			b[k] = enc[i] == 1 ? (unsigned char)(enc[i + 1] - 1)
					   : enc[i + 1] == 1 ? q : d0;
			i += 2;
		} else {
			b[k] = enc[i++];
		}
	}
	return i;
}

int kt__name_enc(kt__buf *out, const kt__delim *d, const char *name,
		 size_t len)
{
	unsigned char u[16], be[8];
	uint64_t v = 0;
	int rc, i, lead;

	if (!d->typed)
		return kt__buf_add(out, name, len);
	switch (name_type(name, len, &v, u)) {
	case T_NUM:
		for (i = 0; i < 8; i++)
			be[i] = (unsigned char)(v >> (56 - 8 * i));
		for (lead = 0; lead < 7 && be[lead] == 0; lead++)
			;
		if ((rc = kt__buf_addc(out, T_NUM)) != 0 ||
		    (rc = kt__buf_addc(out, (char)(1 + 8 - lead))) != 0)
			return rc;
		return x_add(out, d, be + lead, (size_t)(8 - lead));
	case T_UUID:
		if ((rc = kt__buf_addc(out, T_UUID)) != 0)
			return rc;
		return x_add(out, d, u, 16);
	default:
		if ((rc = kt__buf_addc(out, T_TEXT)) != 0)
			return rc;
		return kt__buf_add(out, name, len);
	}
}

int kt__name_dec(kt__buf *out, const kt__delim *d, const char *enc,
		 size_t len)
{
	const unsigned char *e = (const unsigned char *)enc;
	unsigned char b[16];
	char text[40];
	uint64_t v = 0;
	size_t n, used, i;

	if (!d->typed)
		return kt__buf_add(out, enc, len);
	if (len > 1 && e[0] == T_TEXT) {
		/* Only a name that is none of the typed kinds has this
		 * form (one name, one form), and it is a name: no NUL, no
		 * '/', no delimiter, not too long. */
		if (len - 1 > KT_NAME_MAX ||
		    name_type(enc + 1, len - 1, &v, b) != T_TEXT ||
		    memchr(enc + 1, '\0', len - 1) != NULL ||
		    memchr(enc + 1, '/', len - 1) != NULL ||
		    find_delim(d, enc + 1, len - 1) != NULL)
			goto bad;
		return kt__buf_add(out, enc + 1, len - 1);
	}
	if (len >= 2 && e[0] == T_NUM && e[1] >= 2 && e[1] <= 9) {
		n = (size_t)e[1] - 1;
		used = x_take(d, e + 2, len - 2, b, n);
		/* The shortest form only: one number, one encoding. */
		if (used == 0 || used != len - 2 || (n > 1 && b[0] == 0))
			goto bad;
		for (i = 0; i < n; i++)
			v = v << 8 | b[i];
		/* Its digits, last first (listings decode every name). */
		i = sizeof(text);
		do {
			text[--i] = (char)('0' + v % 10);
			v /= 10;
		} while (v != 0);
		return kt__buf_add(out, text + i, sizeof(text) - i);
	}
	if (len >= 1 && e[0] == T_UUID) {
		static const char hx[] = "0123456789abcdef";
		size_t k = 0;
		used = x_take(d, e + 1, len - 1, b, 16);
		if (used == 0 || used != len - 1)
			goto bad;
		for (i = 0; i < 16; i++) {
			if (i == 4 || i == 6 || i == 8 || i == 10)
				text[k++] = '-';
			text[k++] = hx[b[i] >> 4];
			text[k++] = hx[b[i] & 15];
		}
		return kt__buf_add(out, text, 36);
	}
bad:
	return kt__err(KT_ECORRUPT, "a typed name does not decode");
}

int kt__enc_node(kt__buf *out, const kt__delim *d, const char *p, size_t len)
{
	size_t i, start;
	int rc;

	if (len <= 1)
		return kt__buf_reserve(out, 0);
	if ((rc = kt__buf_reserve(out, len + len * (d->len - 1))) != 0)
		return rc;
	if (!d->typed) {
		/* A plain name is its own row form: each '/' becomes the
		 * delimiter and every other byte is copied, in one pass (the
		 * hot path of every get; names are short, so bytes one at a
		 * time beat a call per name). */
		char *o = out->p + out->len;
		size_t j;

		for (i = 0; i < len; i++) {
			if (p[i] != '/') {
				*o++ = p[i];
				continue;
			}
			for (j = 0; j < d->len; j++)
				*o++ = d->s[j];
		}
		out->len = (size_t)(o - out->p);
		out->p[out->len] = '\0';
		return 0;
	}
	for (i = 0; i < len; i = start) {
		/* p[i] == '/' */
		if ((rc = kt__buf_add(out, d->s, d->len)) != 0)
			return rc;
		start = i + 1;
		while (start < len && p[start] != '/')
			start++;
		if ((rc = kt__name_enc(out, d, p + i + 1, start - i - 1)) != 0)
			return rc;
	}
	return 0;
}

int kt__enc_index(kt__buf *out, const kt__delim *d, const char *p, size_t len)
{
	int rc = kt__enc_node(out, d, p, len);

	return rc ? rc : kt__buf_add(out, d->s, d->len);
}

int kt__enc_entry(kt__buf *out, size_t *at, const kt__delim *d,
		  const char *p, size_t len)
{
	size_t plen = kt__parent_len(p, len);
	int rc = kt__enc_index(out, d, p, plen);

	*at = out->len;
	return rc ? rc : kt__name_enc(out, d, p + plen + 1, len - plen - 1);
}

int kt__dec_node(kt__buf *out, const kt__delim *d, const char *part,
		 size_t len)
{
	const char *end = part + len, *hit;
	size_t dl;
	char c0;
	int rc;

	if (len == 0)
		return kt__buf_addc(out, '/');
	if (!d->typed) {
		/* The reverse of kt__enc_node's plain case: the path is never
		 * longer than the partition (a delimiter is at least one
		 * byte), so reserve once and copy byte by byte, each
		 * delimiter becoming '/'.  Every partition starts with one. */
		char *o;

		if (len < d->len || memcmp(part, d->s, d->len) != 0)
			return kt__err(KT_ECORRUPT, "malformed partition key");
		if ((rc = kt__buf_reserve(out, len)) != 0)
			return rc;
		o = out->p + out->len;
		/* The delimiter in locals: stores through o may alias d. */
		c0 = d->s[0];
		dl = d->len;
		while (part < end) {
			size_t k = 1;

			if (*part != c0) {
				*o++ = *part++;
				continue;
			}
			/* The delimiter's other bytes, compared in line: a
			 * library call per component costs more than the
			 * few bytes it compares. */
			while (k < dl && part + k < end && part[k] == d->s[k])
				k++;
			if (k == dl) {
				*o++ = '/';
				part += k;
			} else {
				*o++ = *part++;
			}
		}
		out->len = (size_t)(o - out->p);
		out->p[out->len] = '\0';
		return 0;
	}
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
		    (rc = kt__name_dec(out, d, part, (size_t)(hit - part))) != 0)
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
