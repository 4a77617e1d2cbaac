/*
 * error.c - error codes, their static text, and the per-thread detailed
 * message that every failing call leaves behind (see kt_errmsg()).  Also
 * the small byte-buffer helpers every module uses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define KT__MSGSZ 1024

static _Thread_local char kt__msg[KT__MSGSZ];

const char *kt_strerror(int code)
{
	switch (code) {
	case KT_OK: return "success";
	case KT_ENOTFOUND: return "no such node";
	case KT_EEXISTS: return "node already exists";
	case KT_ENOTDIR: return "not a directory";
	case KT_EISDIR: return "is a directory without a value";
	case KT_ENOTEMPTY: return "directory not empty";
	case KT_ELOOP: return "too many levels of symbolic links";
	case KT_EINVAL: return "invalid argument";
	case KT_ENAMETOOLONG: return "name, path or depth too long";
	case KT_ERESERVED: return "name contains the reserved delimiter";
	case KT_EBUSY: return "store is in use by another process";
	case KT_EREADONLY: return "store is read-only";
	case KT_ENOMEM: return "out of memory";
	case KT_ECORRUPT: return "store is corrupt";
	case KT_EIO: return "I/O error";
	case KT_ENOTSTORE: return "not a keytree store";
	case KT_EVERSION: return "store format is newer than this library";
	case KT_ECONFLICT: return "version conflict";
	case KT_ETOOBIG: return "value too large";
	case KT_ENOATTR: return "no such attribute";
	case KT_EPERM: return "not allowed for this kind of node";
	case KT_EMLINK: return "too many paths for one node";
	case KT_ENOTSUP: return "not supported";
	case KT_ELOCKED: return "locked by another owner";
	case KT_EDIRFULL: return "directory full";
	case KT_ITEROVER: return "iteration over";
	}
	return "unknown error";
}

const char *kt_errmsg(void)
{
	return kt__msg;
}

void kt_free(void *ptr)
{
	free(ptr);
}

const char *kt_version(void)
{
	return KT_VERSION_STRING;
}

int kt__err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(kt__msg, sizeof(kt__msg), fmt, ap);
	va_end(ap);
	return code;
}

void kt__err_prefix(const char *fmt, ...)
{
	char old[KT__MSGSZ];
	char pre[KT__MSGSZ];
	va_list ap;

	memcpy(old, kt__msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	/* Join by hand: a message that does not fit is cut, on purpose. */
	{
		size_t pl = strlen(pre), ol = strlen(old), n = 0;
		size_t cap = sizeof(kt__msg) - 1;
		memcpy(kt__msg, pre, pl < cap ? pl : cap);
		n = pl < cap ? pl : cap;
		if (n + 2 <= cap) {
			memcpy(kt__msg + n, ": ", 2);
			n += 2;
		}
		if (ol > cap - n)
			ol = cap - n;
		memcpy(kt__msg + n, old, ol);
		kt__msg[n + ol] = '\0';
	}
}

void kt__err_clear(void)
{
	kt__msg[0] = '\0';
}

const char *kt__show(char *out, size_t outsz, const void *s, size_t len)
{
	const unsigned char *b = s;
	size_t i, o = 0;

	for (i = 0; i < len && o + 5 < outsz; i++) {
		if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\') {
			out[o++] = (char)b[i];
		} else if (b[i] >= 0x80) {
			/* Keep UTF-8 readable: copy high bytes as they are
			 * unless they are a stray continuation. */
			out[o++] = (char)b[i];
		} else {
			o += (size_t)snprintf(out + o, outsz - o, "\\x%02x",
					      b[i]);
		}
	}
	if (i < len && o + 4 <= outsz) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o < outsz ? o : outsz - 1] = '\0';
	return out;
}

int kt__buf_grow(kt__buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > SIZE_MAX - b->len - 1)
		return kt__err(KT_ENOMEM, "buffer size overflow");
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->p, cap);
	if (p == NULL)
		return kt__err(KT_ENOMEM, "out of memory allocating %zu bytes",
			       cap);
	b->p = p;
	b->cap = cap;
	return 0;
}

void kt__buf_free(kt__buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

char *kt__buf_detach(kt__buf *b, size_t *len)
{
	char *p;

	if (b->p == NULL && kt__buf_reserve(b, 0) != 0)
		return NULL;
	p = b->p;
	if (len != NULL)
		*len = b->len;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}
