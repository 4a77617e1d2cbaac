/*
 * fuzz_path.c - arbitrary bytes as paths, names, link targets and
 * delimiters, through the public API.
 *
 * Four stores stay open, made again every STORE_LIFE inputs, each with
 * another delimiter (the default "¦" C2 A6, ':' , the 3-byte "•" E2 80 A2
 * and the single byte FF).  Each has a fixed tree at its root for readers
 * and a scratch subtree /s that is rebuilt before every mutation.  An
 * input is one or more operations, each an operation byte, a flags byte
 * and up to three NUL-terminated strings (the remaining bytes, split at
 * NUL):
 *
 *   readers  kt_stat, kt_lstat, kt_get, kt_readlink, kt_iter_new (with
 *            "after"), kt_find_new, kt_attr_get: on the raw path;
 *   writers  kt_put, kt_mkdir, kt_symlink, kt_delete, kt_rename,
 *            kt_attr_set, kt_attr_delete, kt_setattr, a batch of these:
 *            on "/s/w" followed by the raw bytes, so that they stay
 *            inside the scratch subtree;
 *   open     kt_open of a new store with the bytes as its delimiter.
 *
 * Properties checked:
 *  - nothing crashes, leaks or trips UBSan;
 *  - a path the reference checker below (written from keytree.h, not from
 *    path.c) finds malformed is rejected with a code naming one of its
 *    faults (KT_EINVAL, KT_ENAMETOOLONG, KT_ERESERVED), and a well-formed
 *    one is never rejected with those codes except where keytree.h says
 *    (the root, a non-link for readlink, a directory into itself...);
 *  - every failure sets a non-empty kt_errmsg();
 *  - a rejected mutation leaves the scratch subtree exactly as it was
 *    (digest of every node: metadata, times, versions, values, targets,
 *    attributes), and a failed batch leaves it as it was too;
 *  - a successful one is visible (put then get returns the value, a link
 *    reads back verbatim, an attribute reads back), and kt_check then finds
 *    no violation;
 *  - a delimiter is accepted exactly when keytree.h says so, and then
 *    names holding it are KT_ERESERVED.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

#define NSTORES 4
static const char *const delims[NSTORES] = {KT_DEFAULT_DELIMITER, ":",
					    "\xe2\x80\xa2", "\xff"};
static kt_store *stores[NSTORES];
static char store_dirs[NSTORES][300];
static unsigned long nexec;

#define PREFIX "/s/w"

/* ------------------------------------------------------------------------
 * The reference: what keytree.h says about paths, names and delimiters */

enum { BAD_INVAL = 1, BAD_LONG = 2, BAD_RES = 4 };

/* Every fault of path @p p (a mask of BAD_*), 0 if it is canonical and
 * within the limits for a store with delimiter @p d. */
static unsigned ref_path(const char *p, const char *d)
{
	size_t len = strlen(p), depth = 0;
	const char *c, *e;
	unsigned bad = 0;

	if (len == 0 || p[0] != '/')
		return BAD_INVAL;
	if (len > KT_PATH_MAX)
		bad |= BAD_LONG;
	if (len == 1)
		return bad;
	for (c = p + 1;; c = e + 1) {
		size_t n;
		e = strchr(c, '/');
		n = e ? (size_t)(e - c) : strlen(c);
		if (n == 0)
			bad |= BAD_INVAL; /* "//" or a trailing '/' */
		if (n > KT_NAME_MAX)
			bad |= BAD_LONG;
		if ((n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			bad |= BAD_INVAL;
		if (memmem(c, n, d, strlen(d)) != NULL)
			bad |= BAD_RES;
		depth++;
		if (e == NULL)
			break;
	}
	if (depth > KT_DEPTH_MAX)
		bad |= BAD_LONG;
	return bad;
}

/* An attribute name: 1 to KT_NAME_MAX bytes, not starting with the
 * delimiter. */
static unsigned ref_attr(const char *n, const char *d)
{
	size_t len = strlen(n);

	if (len == 0)
		return BAD_INVAL;
	if (len > KT_NAME_MAX)
		return BAD_LONG;
	if (strncmp(n, d, strlen(d)) == 0)
		return BAD_RES;
	return 0;
}

/* A delimiter: one byte but NUL and '/', or one well-formed UTF-8
 * sequence (no overlong form, no surrogate, at most U+10FFFF). */
static int ref_delim_ok(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = strlen(s), i;
	uint32_t cp;

	if (len == 1)
		return u[0] != '/';
	if (len < 2 || len > 4)
		return 0;
	for (i = 1; i < len; i++)
		if ((u[i] & 0xc0) != 0x80)
			return 0;
	if (len == 2 && (u[0] & 0xe0) == 0xc0)
		cp = ((uint32_t)(u[0] & 0x1f) << 6) | (u[1] & 0x3f);
	else if (len == 3 && (u[0] & 0xf0) == 0xe0)
		cp = ((uint32_t)(u[0] & 0x0f) << 12) |
		     ((uint32_t)(u[1] & 0x3f) << 6) | (u[2] & 0x3f);
	else if (len == 4 && (u[0] & 0xf8) == 0xf0)
		cp = ((uint32_t)(u[0] & 0x07) << 18) |
		     ((uint32_t)(u[1] & 0x3f) << 12) |
		     ((uint32_t)(u[2] & 0x3f) << 6) | (u[3] & 0x3f);
	else
		return 0;
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
	    (len == 4 && cp < 0x10000))
		return 0; /* overlong */
	if (cp >= 0xd800 && cp <= 0xdfff)
		return 0;
	return cp <= 0x10ffff;
}

static unsigned code_bit(int rc)
{
	return rc == KT_EINVAL	       ? BAD_INVAL
	       : rc == KT_ENAMETOOLONG ? BAD_LONG
	       : rc == KT_ERESERVED    ? BAD_RES
				       : 0;
}

/* ------------------------------------------------------------------------
 * The stores */

static void must(int rc, const char *what)
{
	if (rc != 0)
		fz_fail("setup: %s: %d (%s)", what, rc, kt_errmsg());
}

/* The fixed tree readers walk: items, an item+dir, links (to a directory,
 * relative, dangling, a loop, to an item), attributes. */
static void make_root_tree(kt_store *st)
{
	kt_create_options p = KT_CREATE_OPTIONS_INIT;

	p.flags = KT_CREATE_PARENTS;
	must(kt_put(st, "/a/b", "value", 5, NULL), "put /a/b");
	must(kt_put(st, "/a", "also an item", 12, NULL), "put /a");
	must(kt_mkdir(st, "/a/c/d", &p), "mkdir /a/c/d");
	must(kt_put(st, "/ab", "", 0, NULL), "put /ab");
	must(kt_symlink(st, "/ln", "/a", NULL), "symlink /ln");
	must(kt_symlink(st, "/a/c/up", "../..", NULL), "symlink up");
	must(kt_symlink(st, "/a/c/rel", "d", NULL), "symlink rel");
	must(kt_symlink(st, "/dang", "/nothing/here", NULL), "symlink dang");
	must(kt_symlink(st, "/loop", "/loop", NULL), "symlink loop");
	must(kt_symlink(st, "/toitem", "/a/b", NULL), "symlink toitem");
	must(kt_attr_set(st, "/a/b", "color", "blue", 4, 0), "attr");
	must(kt_attr_set(st, "/", "rootattr", "", 0, 0), "attr root");
}

/* Rebuild the scratch subtree /s. */
static void make_scratch(kt_store *st)
{
	kt_create_options p = KT_CREATE_OPTIONS_INIT;
	kt_statbuf sb;

	p.flags = KT_CREATE_PARENTS;
	if (kt_lstat(&sb, st, "/s") == 0)
		must(kt_delete(st, "/s", KT_DELETE_RECURSIVE), "delete /s");
	must(kt_mkdir(st, PREFIX "/d/e", &p), "mkdir");
	must(kt_put(st, PREFIX "/i", "item", 4, NULL), "put i");
	must(kt_put(st, PREFIX "/d/x", "x", 1, NULL), "put d/x");
	must(kt_put(st, PREFIX "/d", "d's own value", 13, NULL), "put d");
	must(kt_mkdir(st, PREFIX "/empty", NULL), "mkdir empty");
	must(kt_symlink(st, PREFIX "/l", PREFIX "/d", NULL), "symlink l");
	must(kt_symlink(st, PREFIX "/r", "d/e", NULL), "symlink r");
	must(kt_symlink(st, PREFIX "/dang", "gone", NULL), "symlink dang");
	must(kt_symlink(st, PREFIX "/li", "i", NULL), "symlink li");
	must(kt_attr_set(st, PREFIX "/i", "a", "1", 1, 0), "attr");
}

/* Make store @p i afresh.  Every write rebuilds /s, and LevelDB keeps the
 * tombstones of the old rows until a compaction reaches them, so scans
 * (kt_check after each write) slow down as a run goes on; the stores are
 * made again every STORE_LIFE inputs (and checked first). */
#define STORE_LIFE 1024

static void make_store(int i)
{
	kt_options o = KT_OPTIONS_INIT;

	if (stores[i] != NULL) {
		fz_check(stores[i], "before the store is made again");
		kt_close(stores[i]);
		stores[i] = NULL;
	}
	fz_rmtree(store_dirs[i]);
	o.create_if_missing = 1;
	o.delimiter = delims[i];
	must(kt_open(&stores[i], store_dirs[i], &o), "kt_open");
	make_root_tree(stores[i]);
	make_scratch(stores[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int i;

	(void)argc;
	(void)argv;
	for (i = 0; i < NSTORES; i++) {
		snprintf(store_dirs[i], sizeof(store_dirs[i]), "%s/store%d",
			 fz_scratch(), i);
		make_store(i);
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Decoding the input */

typedef struct cursor {
	const uint8_t *p;
	size_t n;
} cursor;

static unsigned take_byte(cursor *c)
{
	unsigned b;

	if (c->n == 0)
		return 0;
	b = c->p[0];
	c->p++;
	c->n--;
	return b;
}

/* The next string, up to a NUL or the end of the input (malloc'd). */
static char *take_str(cursor *c)
{
	const uint8_t *z = memchr(c->p, 0, c->n);
	size_t len = z ? (size_t)(z - c->p) : c->n;
	char *s = malloc(len + 1);

	if (s == NULL)
		abort();
	memcpy(s, c->p, len);
	s[len] = '\0';
	c->p += len + (z != NULL);
	c->n -= len + (z != NULL);
	return s;
}

/* Paths a writer acts on: the prefix and the raw bytes. */
static char *scratch_path(const char *raw)
{
	size_t n = strlen(raw);
	char *s = malloc(sizeof(PREFIX) + n);

	if (s == NULL)
		abort();
	memcpy(s, PREFIX, sizeof(PREFIX) - 1);
	memcpy(s + sizeof(PREFIX) - 1, raw, n + 1);
	return s;
}

enum {
	OP_STAT,
	OP_LSTAT,
	OP_GET,
	OP_READLINK,
	OP_ITER,
	OP_FIND,
	OP_ATTR_GET,
	OP_PUT,
	OP_MKDIR,
	OP_SYMLINK,
	OP_DELETE,
	OP_RENAME,
	OP_ATTR_SET,
	OP_ATTR_DELETE,
	OP_SETATTR,
	OP_BATCH,
	OP_OPEN,
	OP__COUNT
};

#define FIRST_WRITER OP_PUT

typedef struct fop {
	int type;
	unsigned flags;
	char *s1, *s2, *s3; /* raw strings from the input */
	char *p1, *p2;	    /* the paths used (writers: prefixed) */
} fop;

static void fop_free(fop *o)
{
	free(o->s1);
	free(o->s2);
	free(o->s3);
	free(o->p1);
	free(o->p2);
}

static void take_op(cursor *c, fop *o)
{
	memset(o, 0, sizeof(*o));
	o->type = (int)(take_byte(c) % OP__COUNT);
	o->flags = take_byte(c);
	o->s1 = take_str(c);
	o->s2 = take_str(c);
	o->s3 = take_str(c);
	if (o->type >= FIRST_WRITER) {
		o->p1 = scratch_path(o->s1);
		/* a symlink's second string is its target, verbatim */
		o->p2 = o->type == OP_SYMLINK ? strdup(o->s2)
					      : scratch_path(o->s2);
	} else {
		o->p1 = strdup(o->s1);
		o->p2 = strdup(o->s2);
	}
	if (o->p1 == NULL || o->p2 == NULL)
		abort();
}

/* ------------------------------------------------------------------------
 * Running one operation */

static const char *opname(int t)
{
	static const char *const n[OP__COUNT] = {
		"stat",	  "lstat",    "get",	  "readlink",	 "iter",
		"find",	  "attr_get", "put",	  "mkdir",	 "symlink",
		"delete", "rename",   "attr_set", "attr_delete", "setattr",
		"batch",  "open"};
	return n[t];
}

/* The codes a call on well-formed arguments may return. */
static int code_allowed(int type, int rc, unsigned flags)
{
	switch (rc) {
	case 0:
	case KT_ENOTFOUND:
	case KT_ENOTDIR:
	case KT_ELOOP:
		return 1;
	case KT_EISDIR:
		return type == OP_GET || type == OP_DELETE || type == OP_RENAME;
	case KT_EEXISTS:
		return type == OP_PUT || type == OP_MKDIR ||
		       type == OP_SYMLINK || type == OP_RENAME ||
		       type == OP_ATTR_SET;
	case KT_ENOTEMPTY:
		return type == OP_DELETE || type == OP_RENAME;
	case KT_ENOATTR:
		return type == OP_ATTR_GET || type == OP_ATTR_SET ||
		       type == OP_ATTR_DELETE;
	case KT_EINVAL:
		/* readlink of a non-link, delete ITEM of a link, a directory
		 * renamed into itself, unknown setattr bits, both
		 * attribute flags */
		return type == OP_READLINK ||
		       (type == OP_DELETE && (flags & KT_DELETE_ITEM)) ||
		       type == OP_RENAME || type == OP_SETATTR ||
		       /* KT_ATTR_CREATE and KT_ATTR_REPLACE at once */
		       (type == OP_ATTR_SET && (flags & 3) == 3);
	case KT_ETOOBIG:
		return type == OP_ATTR_SET;
	default:
		return 0;
	}
}

/* Check a result against the reference: @p bad is the mask of faults of
 * the arguments. */
static void check_rc(const fop *o, unsigned bad, int rc)
{
	if (rc < 0 && kt_errmsg()[0] == '\0')
		fz_fail("%s('%s', '%s') failed with %d but kt_errmsg() is "
			"empty",
			opname(o->type), o->p1, o->p2, rc);
	if (bad != 0) {
		if (!(code_bit(rc) & bad))
			fz_fail("%s('%s', '%s'): arguments have faults %#x but "
				"the result is %d (%s)",
				opname(o->type), o->p1, o->p2, bad, rc,
				rc ? kt_errmsg() : "");
		return;
	}
	if (!code_allowed(o->type, rc, o->flags))
		fz_fail("%s('%s', '%s', flags %#x): well-formed arguments but "
			"the result is %d (%s)",
			opname(o->type), o->p1, o->p2, o->flags, rc,
			rc ? kt_errmsg() : "");
}

static void run_reader(kt_store *st, const char *d, const fop *o)
{
	kt_statbuf sb;
	kt_iter *it = NULL;
	kt_list_options lo = KT_LIST_OPTIONS_INIT;
	const kt_entry *e;
	void *v = NULL;
	char *t = NULL;
	size_t len = 0;
	unsigned bad = ref_path(o->p1, d);
	int rc = 0;

	switch (o->type) {
	case OP_STAT:
		rc = kt_stat(&sb, st, o->p1);
		break;
	case OP_LSTAT:
		rc = kt_lstat(&sb, st, o->p1);
		break;
	case OP_GET:
		rc = kt_get(&v, &len, st, o->p1);
		if (rc == 0 && ((char *)v)[len] != '\0')
			fz_fail("kt_get('%s'): no NUL after the value", o->p1);
		if (rc != 0 && v != NULL)
			fz_fail("kt_get failed but set the value");
		kt_free(v);
		break;
	case OP_READLINK:
		rc = kt_readlink(&t, &len, st, o->p1);
		if (rc == 0 && strlen(t) != len)
			fz_fail("kt_readlink('%s'): length %zu, strlen %zu",
				o->p1, len, strlen(t));
		kt_free(t);
		break;
	case OP_ITER:
		lo.after = o->s2[0] ? o->s2 : NULL;
		lo.after_len = strlen(o->s2);
		lo.limit = o->flags & 7;
		lo.reverse = (o->flags >> 3) & 1;
		rc = kt_iter_new(&it, st, o->p1, &lo);
		while (rc == 0 && (rc = kt_iter_next(&e, it)) == 0)
			if (strlen(e->name) != e->name_len ||
			    (lo.after &&
			     (lo.reverse ? strcmp(e->name, lo.after) >= 0
					 : strcmp(e->name, lo.after) <= 0)))
				fz_fail("kt_iter_new('%s', after '%s'): entry "
					"'%s' out of place",
					o->p1, o->s2, e->name);
		if (rc == KT_ITEROVER)
			rc = 0;
		kt_iter_free(it);
		break;
	case OP_FIND:
		rc = kt_find_new(&it, st, o->p1, o->flags & 3);
		while (rc == 0 && (rc = kt_iter_next(&e, it)) == 0)
			if (e->name[0] != '/' || strlen(e->name) != e->name_len)
				fz_fail("kt_find_new('%s'): entry '%s'", o->p1,
					e->name);
		if (rc == KT_ITEROVER)
			rc = 0;
		kt_iter_free(it);
		break;
	case OP_ATTR_GET:
		bad |= ref_attr(o->s2, d);
		rc = kt_attr_get(&v, &len, st, o->p1, o->s2);
		kt_free(v);
		break;
	}
	/* "/" is canonical, but kt_find_new with SUBTREE on it, and the
	 * rest, are ordinary */
	check_rc(o, bad, rc);
}

/* Record a writer in a batch (@p b) or run it directly. */
static int apply_writer(kt_store *st, kt_batch *b, const fop *o)
{
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	size_t vlen = strlen(o->s3);

	co.flags = o->flags & (KT_CREATE_EXCL | KT_CREATE_PARENTS);
	switch (o->type) {
	case OP_PUT:
		return b ? kt_batch_put(b, o->p1, o->s3, vlen, &co)
			 : kt_put(st, o->p1, o->s3, vlen, &co);
	case OP_MKDIR:
		return b ? kt_batch_mkdir(b, o->p1, &co)
			 : kt_mkdir(st, o->p1, &co);
	case OP_SYMLINK:
		return b ? kt_batch_symlink(b, o->p1, o->p2, &co)
			 : kt_symlink(st, o->p1, o->p2, &co);
	case OP_DELETE:
		return b ? kt_batch_delete(b, o->p1, o->flags & 7)
			 : kt_delete(st, o->p1, o->flags & 7);
	case OP_RENAME:
		return b ? kt_batch_rename(b, o->p1, o->p2, o->flags & 3)
			 : kt_rename(st, o->p1, o->p2, o->flags & 3);
	case OP_ATTR_SET:
		return b ? kt_batch_attr_set(b, o->p1, o->s2, o->s3, vlen,
					     o->flags & 3)
			 : kt_attr_set(st, o->p1, o->s2, o->s3, vlen,
				       o->flags & 3);
	case OP_ATTR_DELETE:
		return b ? kt_batch_attr_delete(b, o->p1, o->s2)
			 : kt_attr_delete(st, o->p1, o->s2);
	default:
		sa.mask = o->flags & 0x7f;
		sa.mode = (uint32_t)vlen * 0111u;
		sa.uid = sa.gid = (uint32_t)vlen;
		sa.atime_ns = sa.mtime_ns = (int64_t)vlen * 1000000007;
		return b ? kt_batch_setattr(b, o->p1, &sa, 0)
			 : kt_setattr(st, o->p1, &sa, 0);
	}
}

/* The faults of a writer's arguments. */
static unsigned writer_bad(const fop *o, const char *d)
{
	unsigned bad = ref_path(o->p1, d);
	size_t tl;

	switch (o->type) {
	case OP_RENAME:
		bad |= ref_path(o->p2, d);
		break;
	case OP_SYMLINK:
		tl = strlen(o->p2);
		if (tl == 0)
			bad |= BAD_INVAL;
		if (tl > KT_TARGET_MAX)
			bad |= BAD_LONG | BAD_INVAL;
		break;
	case OP_ATTR_SET:
	case OP_ATTR_DELETE:
		bad |= ref_attr(o->s2, d);
		break;
	default:
		break;
	}
	return bad;
}

/* What a successful writer must have left visible. */
static void check_visible(kt_store *st, const fop *o)
{
	void *v = NULL;
	char *t = NULL;
	size_t len = 0;
	int rc;

	switch (o->type) {
	case OP_PUT:
		rc = kt_get(&v, &len, st, o->p1);
		if (rc != 0 || len != strlen(o->s3) ||
		    memcmp(v, o->s3, len) != 0)
			fz_fail("put('%s') succeeded but get gives %d (%s), "
				"%zu bytes",
				o->p1, rc, kt_errmsg(), len);
		kt_free(v);
		break;
	case OP_SYMLINK:
		rc = kt_readlink(&t, &len, st, o->p1);
		if (rc != 0 || strcmp(t, o->p2) != 0)
			fz_fail("symlink('%s', '%s') succeeded but readlink "
				"gives %d (%s)",
				o->p1, o->p2, rc, rc ? kt_errmsg() : t);
		kt_free(t);
		break;
	case OP_ATTR_SET:
		rc = kt_attr_get(&v, &len, st, o->p1, o->s2);
		if (rc != 0 || len != strlen(o->s3) ||
		    memcmp(v, o->s3, len) != 0)
			fz_fail("attr_set('%s', '%s') succeeded but attr_get "
				"gives %d (%s)",
				o->p1, o->s2, rc, kt_errmsg());
		kt_free(v);
		break;
	case OP_DELETE:
		if (!(o->flags & KT_DELETE_ITEM)) {
			kt_statbuf sb;
			rc = kt_lstat(&sb, st, o->p1);
			if (rc != KT_ENOTFOUND)
				fz_fail("delete('%s') succeeded but lstat "
					"gives %d",
					o->p1, rc);
		}
		break;
	default:
		break;
	}
}

static void run_writers(kt_store *st, const char *d, fop *ops, size_t n,
			int batch)
{
	kt_batch *b = NULL;
	char *before, *after;
	unsigned bad = 0;
	size_t i;
	int rc = 0;

	make_scratch(st);
	before = fz_digest(st, "/s");
	if (batch) {
		must(kt_batch_new(&b, st), "kt_batch_new");
		for (i = 0; i < n && rc == 0; i++) {
			bad = writer_bad(&ops[i], d);
			rc = apply_writer(st, b, &ops[i]);
			if (rc != 0 || bad != 0)
				check_rc(&ops[i], bad, rc);
		}
		if (rc == 0) {
			rc = kt_batch_commit(b);
			if (rc < 0 && kt_errmsg()[0] == '\0')
				fz_fail("kt_batch_commit failed with %d, "
					"no message",
					rc);
			if (rc < 0 && !code_allowed(OP_RENAME, rc, 0) &&
			    !code_allowed(OP_ATTR_SET, rc, 0) &&
			    rc != KT_EINVAL)
				fz_fail("kt_batch_commit: %d (%s)", rc,
					kt_errmsg());
			if (kt_batch_commit(b) != KT_EINVAL)
				fz_fail("a second kt_batch_commit was not "
					"KT_EINVAL");
		}
		kt_batch_free(b);
	} else {
		bad = writer_bad(&ops[0], d);
		rc = apply_writer(st, NULL, &ops[0]);
		check_rc(&ops[0], bad, rc);
		if (rc == 0)
			check_visible(st, &ops[0]);
	}
	if (rc != 0) {
		after = fz_digest(st, "/s");
		if (strcmp(before, after) != 0)
			fz_fail("%s%s rejected with %d (%s), but the store "
				"changed:\n--- before\n%s--- after\n%s",
				batch ? "batch ending in " : "",
				opname(ops[0].type), rc, kt_errmsg(), before,
				after);
		free(after);
	} else {
		fz_check(st, "after a successful write");
	}
	free(before);
}

/* A store made with a fuzzed delimiter. */
static void run_open(const char *delim)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char dir[300], path[64];
	size_t dl = 0;
	int ok = ref_delim_ok(delim), rc;

	snprintf(dir, sizeof(dir), "%s/open", fz_scratch());
	fz_rmtree(dir);
	o.create_if_missing = 1;
	o.delimiter = delim;
	rc = kt_open(&st, dir, &o);
	if ((rc == 0) != ok)
		fz_fail("kt_open with delimiter of %zu bytes [%02x...]: %d "
			"(%s), but keytree.h says it is %s",
			strlen(delim), (unsigned char)delim[0], rc, kt_errmsg(),
			ok ? "valid" : "invalid");
	if (rc != 0) {
		if (rc != KT_EINVAL || st != NULL)
			fz_fail("kt_open, bad delimiter: %d, handle %p", rc,
				(void *)st);
		fz_rmtree(dir);
		return;
	}
	if (strcmp(kt_delimiter(st, &dl), delim) != 0 || dl != strlen(delim))
		fz_fail("kt_delimiter differs from the one given");
	snprintf(path, sizeof(path), "/n%sx", delim);
	if ((rc = kt_put(st, path, "", 0, NULL)) != KT_ERESERVED)
		fz_fail("put of a name holding the delimiter: %d", rc);
	must(kt_mkdir(st, delim[0] == 'q' ? "/r" : "/q", NULL),
	     "mkdir in a new store");
	fz_check(st, "in a new store");
	kt_close(st);
	/* another delimiter for an existing store is refused */
	o.create_if_missing = 0;
	o.delimiter = strcmp(delim, ":") ? ":" : ";";
	if ((rc = kt_open(&st, dir, &o)) != KT_EINVAL)
		fz_fail("reopen with another delimiter: %d", rc);
	kt_close(st);
	fz_rmtree(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cursor c = {data, size};
	unsigned sel = take_byte(&c);
	kt_store *st = stores[sel % NSTORES];
	const char *d = delims[sel % NSTORES];
	fop ops[4];
	size_t n = 0, i;

	take_op(&c, &ops[0]);
	n = 1;
	if (ops[0].type == OP_BATCH) {
		/* the batch's own strings are ignored; up to 4 writers
		 * follow */
		fop_free(&ops[0]);
		n = 0;
		while (c.n > 0 && n < 4) {
			take_op(&c, &ops[n]);
			if (ops[n].type < FIRST_WRITER ||
			    ops[n].type >= OP_BATCH) {
				fop_free(&ops[n]);
				continue;
			}
			n++;
		}
		if (n > 0)
			run_writers(st, d, ops, n, 1);
	} else if (ops[0].type == OP_OPEN) {
		run_open(ops[0].s1);
	} else if (ops[0].type >= FIRST_WRITER) {
		run_writers(st, d, ops, 1, 0);
	} else {
		run_reader(st, d, &ops[0]);
	}
	for (i = 0; i < n; i++)
		fop_free(&ops[i]);
	if (++nexec % STORE_LIFE == 0)
		for (i = 0; i < NSTORES; i++)
			make_store((int)i);
	return 0;
}
