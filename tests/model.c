/*
 * model.c - the reference model of the tree operations, the operation
 * generator, every comparison between a store and the model, and the
 * driver that runs them step by step (see model.h for the interface and
 * tests/test_model.c's opening comment for what is generated and compared
 * and the decisions the model takes where keytree.h leaves a corner open).
 *
 * Built once as the static library kt_model and linked by the model test
 * and the fuzz target; each gives its own source of choices (a PRNG or the
 * fuzzer's bytes) and its own way to report a failure.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"

#define PBUF   MODEL_PBUF
#define BIGVAL MODEL_BIGVAL

/* A broken invariant of the model itself (not a difference from the
 * store): say where, and abort. */
static void must_fail(const char *what, const char *file, int line)
	__attribute__((noreturn));
static void must_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "%s:%d: model invariant '%s' broken\n", file, line,
		what);
	abort();
}

#define must(x)                                                                \
	do {                                                                   \
		if (!(x))                                                      \
			must_fail(#x, __FILE__, __LINE__);                     \
	} while (0)
#define must_nn(x)     must((x) != NULL)
#define must_eq(a, b)  must((a) == (b))

static unsigned int rn(mctx *c, unsigned int n);
static void model_value_bytes(mctx *c, unsigned char *v, size_t n);

/* ------------------------------------------------------------------------
 * Small containers */

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	must_nn(p);
	memcpy(p, s, n);
	return p;
}

static void *xmemdup(const void *s, size_t n)
{
	unsigned char *p = malloc(n + 1);

	must_nn(p);
	if (n > 0)
		memcpy(p, s, n);
	p[n] = 0;
	return p;
}


static void sl_push(strlist *l, const char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		must_nn(l->v);
	}
	l->v[l->n++] = xstrdup(s);
}

static void sl_push_unique(strlist *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return;
	sl_push(l, s);
}

static void sl_clear(strlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

static void sl_free(strlist *l)
{
	sl_clear(l);
	free(l->v);
	l->v = NULL;
	l->cap = 0;
}

static size_t u64_slot(const u64set *s, uint64_t x)
{
	uint64_t h = x * 0x9e3779b97f4a7c15ULL;
	size_t i = (size_t)(h >> 7) & (s->cap - 1);

	while (s->v[i] != 0 && s->v[i] != x)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static int u64_has(const u64set *s, uint64_t x)
{
	if (x == 0)
		return s->has_zero;
	return s->cap > 0 && s->v[u64_slot(s, x)] == x;
}

static void u64_add(u64set *s, uint64_t x)
{
	size_t i;

	if (x == 0) {
		s->has_zero = 1;
		return;
	}
	if (2 * (s->n + 1) > s->cap) {
		u64set t = {0};
		t.cap = s->cap ? s->cap * 2 : 1024;
		t.v = calloc(t.cap, sizeof(*t.v));
		must_nn(t.v);
		for (i = 0; i < s->cap; i++)
			if (s->v[i] != 0) {
				t.v[u64_slot(&t, s->v[i])] = s->v[i];
				t.n++;
			}
		free(s->v);
		t.has_zero = s->has_zero;
		*s = t;
	}
	i = u64_slot(s, x);
	if (s->v[i] == 0) {
		s->v[i] = x;
		s->n++;
	}
}

/* ------------------------------------------------------------------------
 * Paths */

/* Whether @p p is canonical as keytree.h defines it. */
static int canonical(const char *p)
{
	const char *c;

	if (p[0] != '/')
		return 0;
	if (p[1] == '\0')
		return 1;
	c = p + 1;
	for (;;) {
		const char *e = strchr(c, '/');
		size_t len = e ? (size_t)(e - c) : strlen(c);
		if (len == 0)
			return 0;
		if ((len == 1 && c[0] == '.') ||
		    (len == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		if (e == NULL)
			return 1;
		c = e + 1;
	}
}

/* The error every function gives for @p p before looking at the store:
 * KT_EINVAL if it is not canonical, KT_ERESERVED if a name contains the
 * (default) delimiter, else 0. */
static int path_err(const char *p)
{
	if (!canonical(p))
		return KT_EINVAL;
	if (strstr(p, KT_DEFAULT_DELIMITER) != NULL)
		return KT_ERESERVED;
	return 0;
}

/* out = dir + "/" + name[0..len) */
static void join_n(char *out, const char *dir, const char *name, size_t len)
{
	size_t dl = strlen(dir);

	if (strcmp(dir, "/") == 0)
		dl = 0;
	must(dl + 1 + len < PBUF);
	memmove(out, dir, dl);
	out[dl] = '/';
	memcpy(out + dl + 1, name, len);
	out[dl + 1 + len] = '\0';
}

static void join(char *out, const char *dir, const char *name)
{
	join_n(out, dir, name, strlen(name));
}

/* The lexical parent of a canonical path other than "/". */
static void parent_of(char *out, const char *p)
{
	const char *s = strrchr(p, '/');

	if (s == p) {
		strcpy(out, "/");
		return;
	}
	memmove(out, p, (size_t)(s - p));
	out[s - p] = '\0';
}

/* Whether @p p is a proper descendant of @p anc. */
static int is_under(const char *p, const char *anc)
{
	size_t n = strlen(anc);

	if (strcmp(anc, "/") == 0)
		return strcmp(p, "/") != 0;
	return strncmp(p, anc, n) == 0 && p[n] == '/';
}

/* ------------------------------------------------------------------------
 * The model: nodes in an array sorted by path (strcmp is byte order). */

static size_t m_lower(const model *m, const char *path)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(m->v[mid]->path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static mnode *m_find(const model *m, const char *path)
{
	size_t i = m_lower(m, path);

	return i < m->n && strcmp(m->v[i]->path, path) == 0 ? m->v[i] : NULL;
}

/* A new path @p path of the node @p b (one more link to it). */
static mnode *m_add_path(model *m, const char *path, mobj *b)
{
	mnode *n = calloc(1, sizeof(*n));
	size_t i = m_lower(m, path);

	must_nn(n);
	must(i == m->n || strcmp(m->v[i]->path, path) != 0);
	n->path = xstrdup(path);
	n->b = b;
	b->nlink++;
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->v = realloc(m->v, m->cap * sizeof(*m->v));
		must_nn(m->v);
	}
	memmove(m->v + i + 1, m->v + i, (m->n - i) * sizeof(*m->v));
	m->v[i] = n;
	m->n++;
	return n;
}

static mnode *m_new(model *m, const char *path, unsigned int kind)
{
	mobj *b = calloc(1, sizeof(*b));

	must_nn(b);
	b->kind = kind;
	b->vstate = V_NEW;
	return m_add_path(m, path, b);
}

static void m_obj_free(mobj *b)
{
	size_t i;

	for (i = 0; i < b->nattrs; i++) {
		free(b->attrs[i].name);
		free(b->attrs[i].val);
	}
	free(b->attrs);
	free(b->val);
	free(b->target);
	free(b);
}

/* Drop the path @p n (already out of the array): the node goes with its
 * last path. */
static void m_node_free(mnode *n)
{
	must(n->b->nlink > 0);
	if (--n->b->nlink == 0)
		m_obj_free(n->b);
	free(n->path);
	free(n);
}

static void m_set_value(mnode *n, const void *v, size_t len)
{
	if (!(n->b->kind & KT_KIND_ITEM))
		n->b->mode = 0;
	free(n->b->val);
	n->b->val = xmemdup(v, len);
	n->b->vlen = len;
	n->b->kind |= KT_KIND_ITEM;
}

/* The range [*lo, *hi) of proper descendants of @p path. */
static void m_desc_range(const model *m, const char *path, size_t *lo,
			 size_t *hi)
{
	char pre[PBUF];
	size_t i, pl;

	if (strcmp(path, "/") == 0)
		strcpy(pre, "/");
	else
		join(pre, path, "");
	pl = strlen(pre);
	i = m_lower(m, pre);
	*lo = i;
	while (i < m->n && strncmp(m->v[i]->path, pre, pl) == 0) {
		if (strcmp(m->v[i]->path, "/") == 0) {
			*lo = ++i;
			continue;
		}
		i++;
	}
	*hi = i;
}

static int m_has_children(const model *m, const char *path)
{
	size_t lo, hi;

	m_desc_range(m, path, &lo, &hi);
	return hi > lo;
}

/* The direct children of @p path in byte order of name, into @p out
 * (allocated; caller frees the array only). */
static size_t m_children(const model *m, const char *path, mnode ***out)
{
	size_t lo, hi, i, n = 0,
			  pl = strcmp(path, "/") == 0 ? 1 : strlen(path) + 1;
	mnode **v;

	m_desc_range(m, path, &lo, &hi);
	v = malloc((hi - lo + 1) * sizeof(*v));
	must_nn(v);
	for (i = lo; i < hi; i++)
		if (strchr(m->v[i]->path + pl, '/') == NULL)
			v[n++] = m->v[i];
	*out = v;
	return n;
}

static uint32_t m_nsubdirs(const model *m, const char *path)
{
	mnode **ch;
	size_t n = m_children(m, path, &ch), i;
	uint32_t d = 0;

	for (i = 0; i < n; i++)
		if (ch[i]->b->kind & KT_KIND_DIR)
			d++;
	free(ch);
	return d;
}

/* Remove the node at @p path and all its descendants. */
static void m_remove_subtree(model *m, const char *path)
{
	size_t lo, hi, i = m_lower(m, path), k;

	must(i < m->n && strcmp(m->v[i]->path, path) == 0);
	m_desc_range(m, path, &lo, &hi);
	must_eq(lo, i + 1);
	for (k = i; k < hi; k++)
		m_node_free(m->v[k]);
	memmove(m->v + i, m->v + hi, (m->n - hi) * sizeof(*m->v));
	m->n -= hi - i;
}

static int m_cmp_node(const void *a, const void *b)
{
	const mnode *x = *(mnode *const *)a, *y = *(mnode *const *)b;

	return strcmp(x->path, y->path);
}

/* Move the subtree at @p a to @p b; with @p swap also the one at @p b to
 * @p a.  Neither may contain the other. */
static void m_move(model *m, const char *a, const char *b, int swap)
{
	size_t i, al = strlen(a), bl = strlen(b);
	char np[PBUF];
	int k;

	for (i = 0; i < m->n; i++) {
		mnode *n = m->v[i];
		const char *to = NULL;
		size_t fl = 0;
		if (strcmp(n->path, a) == 0 || is_under(n->path, a)) {
			to = b;
			fl = al;
		} else if (swap &&
			   (strcmp(n->path, b) == 0 || is_under(n->path, b))) {
			to = a;
			fl = bl;
		}
		if (to == NULL)
			continue;
		k = snprintf(np, sizeof(np), "%s%s", to, n->path + fl);
		must(k >= 0 && (size_t)k < sizeof(np));
		free(n->path);
		n->path = xstrdup(np);
	}
	qsort(m->v, m->n, sizeof(*m->v), m_cmp_node);
}

/* A deep copy of @p src, to roll a failed batch back to. */
static void m_clone(model *dst, const model *src)
{
	size_t i, k;

	dst->n = dst->cap = src->n;
	dst->v = malloc((src->n + 1) * sizeof(*dst->v));
	must_nn(dst->v);
	for (i = 0; i < src->n; i++)
		src->v[i]->b->copy = NULL;
	for (i = 0; i < src->n; i++) {
		const mnode *sn = src->v[i];
		const mobj *s = sn->b;
		mnode *n = malloc(sizeof(*n));
		mobj *b = s->copy;
		must_nn(n);
		*n = *sn;
		n->path = xstrdup(sn->path);
		dst->v[i] = n;
		if (b != NULL) {
			/* another path of a node already copied */
			n->b = b;
			continue;
		}
		b = malloc(sizeof(*b));
		must_nn(b);
		*b = *s;
		b->val = s->val ? xmemdup(s->val, s->vlen) : NULL;
		b->target = s->target ? xstrdup(s->target) : NULL;
		b->attrs = malloc((s->nattrs + 1) * sizeof(*b->attrs));
		must_nn(b->attrs);
		for (k = 0; k < s->nattrs; k++) {
			b->attrs[k].name = xstrdup(s->attrs[k].name);
			b->attrs[k].val =
				xmemdup(s->attrs[k].val, s->attrs[k].len);
			b->attrs[k].len = s->attrs[k].len;
		}
		sn->b->copy = b;
		n->b = b;
	}
}

static void m_free(model *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		m_node_free(m->v[i]);
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
}

static mattr *m_attr_find(mnode *n, const char *name)
{
	size_t i;

	for (i = 0; i < n->b->nattrs; i++)
		if (strcmp(n->b->attrs[i].name, name) == 0)
			return &n->b->attrs[i];
	return NULL;
}

static void m_attr_set(mnode *n, const char *name, const void *v, size_t len)
{
	mattr *a = m_attr_find(n, name);
	size_t i;

	if (a == NULL) {
		n->b->attrs = realloc(n->b->attrs, (n->b->nattrs + 1) * sizeof(*a));
		must_nn(n->b->attrs);
		for (i = n->b->nattrs; i > 0; i--) {
			if (strcmp(n->b->attrs[i - 1].name, name) < 0)
				break;
			n->b->attrs[i] = n->b->attrs[i - 1];
		}
		a = &n->b->attrs[i];
		a->name = xstrdup(name);
		a->val = NULL;
		n->b->nattrs++;
	}
	free(a->val);
	a->val = xmemdup(v, len);
	a->len = len;
}

static void m_attr_delete(mnode *n, const char *name)
{
	mattr *a = m_attr_find(n, name);
	size_t i = (size_t)(a - n->b->attrs);

	free(a->name);
	free(a->val);
	memmove(a, a + 1, (n->b->nattrs - i - 1) * sizeof(*a));
	n->b->nattrs--;
}
typedef struct res res;
static void expect_rc(mctx *c, const char *call, const char *path, int want,
		      int got, const res *r);

/* Fail with the step, its operation and what differed. */
void model_mismatch(mctx *c, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	c->cfg.fail(c, buf);
	/* the callback must not return; if it does, stop here */
	fprintf(stderr, "model: %s\n  op: %s\n", buf, c->desc);
	abort();
}

static const char *rcname(int rc)
{
	static char buf[32];

	switch (rc) {
	case 0:
		return "0";
	case KT_ENOTFOUND:
		return "KT_ENOTFOUND";
	case KT_EEXISTS:
		return "KT_EEXISTS";
	case KT_ENOTDIR:
		return "KT_ENOTDIR";
	case KT_EISDIR:
		return "KT_EISDIR";
	case KT_ENOTEMPTY:
		return "KT_ENOTEMPTY";
	case KT_ELOOP:
		return "KT_ELOOP";
	case KT_EINVAL:
		return "KT_EINVAL";
	case KT_ENAMETOOLONG:
		return "KT_ENAMETOOLONG";
	case KT_ERESERVED:
		return "KT_ERESERVED";
	case KT_ENOMEM:
		return "KT_ENOMEM";
	case KT_ECORRUPT:
		return "KT_ECORRUPT";
	case KT_EIO:
		return "KT_EIO";
	case KT_ENOATTR:
		return "KT_ENOATTR";
	case KT_EPERM:
		return "KT_EPERM";
	case KT_EMLINK:
		return "KT_EMLINK";
	case KT_ITEROVER:
		return "KT_ITEROVER";
	default:
		snprintf(buf, sizeof(buf), "%d", rc);
		return buf;
	}
}

static const char *kindname(unsigned int k)
{
	static const char *const names[8] = {
		"none", "item",	     "dir",	 "item+dir",
		"link", "link+item", "link+dir", "link+item+dir"};
	if (k == KT_KIND_SPECIAL)
		return "special";
	return k < 8 ? names[k] : "bad-kind";
}

/* Append bytes as hex (at most 32 of them) to a message buffer. */
static const char *hexs(char *buf, size_t cap, const void *v, size_t len)
{
	const unsigned char *b = v;
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < len && i < 32 && o + 3 < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%02x", b[i]);
	if (i < len && o + 4 < cap)
		snprintf(buf + o, cap - o, "...");
	return buf;
}

/* ------------------------------------------------------------------------
 * Random choices (rn() is the context's source) */

/* "a" is a prefix of "ab"; "æ" (C3 A6) shares its last byte with the
 * default delimiter (C2 A6); "日本" is multi-byte and sorts last.  With
 * cfg.delimiter_names the alphabet also holds the delimiter's halves. */
static const char *const names[] = {
	"a",	"b",	"c",	  "ab", "\xc3\xa6", "\xe6\x97\xa5\xe6\x9c\xac",
	"\xc2", "\xa6", "a\xc2"};
#define NNAMES_PLAIN 6
#define NNAMES_ALL   (sizeof(names) / sizeof(names[0]))

/* With typed names: numbers ("9" before "10" before "100"), one that is
 * not canonical ("007", a plain name), a UUID, plain names ("a" a prefix
 * of "ab"), then the delimiter's halves. */
#define MODEL_UUID "123e4567-e89b-12d3-a456-426614174000"
static const char *const tnames[] = {
	"a", "ab", "0", "9", "10", "100", "007", MODEL_UUID,
	"\xc2", "\xa6", "a\xc2"};
#define TNAMES_PLAIN 8
#define TNAMES_ALL (sizeof(tnames) / sizeof(tnames[0]))

/* How a name sorts with typed names, from keytree.h (kt_options), not
 * from the library's code: 0 a canonical number, 1 a canonical UUID, 2
 * any other name. */
static int tclass(const char *s, size_t n, unsigned long long *v)
{
	size_t i;

	if (n >= 1 && n <= 20 && (n == 1 || s[0] != '0')) {
		for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == n && (n < 20 ||
			       memcmp(s, "18446744073709551615", 20) <= 0)) {
			*v = strtoull(s, NULL, 10);
			return 0;
		}
	}
	if (n == 36) {
		for (i = 0; i < 36; i++) {
			int dash = i == 8 || i == 13 || i == 18 || i == 23;
			if (dash ? s[i] != '-'
				 : !((s[i] >= '0' && s[i] <= '9') ||
				     (s[i] >= 'a' && s[i] <= 'f')))
				break;
		}
		if (i == 36)
			return 1;
	}
	return 2;
}

/* Compare two names as the store orders them. */
static int name_cmp(const mctx *c, const char *a, const char *b)
{
	unsigned long long x = 0, y = 0;
	int ca, cb;

	if (!c->cfg.typed_names)
		return strcmp(a, b);
	ca = tclass(a, strlen(a), &x);
	cb = tclass(b, strlen(b), &y);
	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (ca == 0)
		return x < y ? -1 : x > y;
	return strcmp(a, b);
}

static const mctx *sort_ctx;

static int child_cmp(const void *a, const void *b)
{
	const mnode *x = *(mnode *const *)a, *y = *(mnode *const *)b;

	return name_cmp(sort_ctx, strrchr(x->path, '/') + 1,
			strrchr(y->path, '/') + 1);
}

/* The last one starts with the delimiter and is only used now and then. */
static const char *const anames[] = {"x",
				     "y",
				     "xy",
				     "\xc3\xbc",
				     "x" KT_DEFAULT_DELIMITER,
				     KT_DEFAULT_DELIMITER "x"};
#define NANAMES (sizeof(anames) / sizeof(anames[0]))

/* Append @p depth random names, '/'-separated, to @p buf. */
static void rand_rel(mctx *c, char *buf, unsigned int depth)
{
	unsigned int i;

	for (i = 0; i < depth; i++) {
		if (i > 0)
			strcat(buf, "/");
		strcat(buf, c->names[rn(c, c->nnames)]);
	}
}

static void rand_path(mctx *c, char *buf)
{
	unsigned int r = rn(c, 100);
	unsigned int depth = r < 25 ? 1 : r < 60 ? 2 : r < 85 ? 3 : 4;

	strcpy(buf, "/");
	rand_rel(c, buf + 1, depth);
}

enum { PW_ALIASED, PW_NONDIR, PW_OBJ };

/* A random path among those of a node with several paths (PW_ALIASED),
 * of a non-directory (PW_NONDIR), or of the node @p b (PW_OBJ); NULL if
 * there is none. */
static mnode *pick_where(mctx *c, int what, const mobj *b)
{
	size_t i, n = 0, k;

	for (k = 0; k < 2; k++) {
		unsigned int want;
		if (k == 1 && n == 0)
			return NULL;
		want = k == 0 ? 0 : rn(c, (unsigned int)n);
		n = 0;
		for (i = 1; i < c->m.n; i++) {
			const mobj *o = c->m.v[i]->b;
			int in = what == PW_ALIASED  ? o->nlink > 1
				 : what == PW_NONDIR ? !(o->kind & KT_KIND_DIR)
						     : o == b;
			if (in && k == 1 && n == want)
				return c->m.v[i];
			n += in;
		}
	}
	return NULL;
}

/* An existing node other than the root, now and then one with several
 * paths; of a node with several paths, often a random one of them, so
 * that operations reach one node through all its paths. */
static mnode *pick_node(mctx *c)
{
	mnode *n = NULL;

	if (rn(c, 4) == 0)
		n = pick_where(c, PW_ALIASED, NULL);
	if (n == NULL)
		n = c->m.v[1 + rn(c, (unsigned int)c->m.n - 1)];
	if (n->b->nlink > 1 && rn(c, 2))
		n = pick_where(c, PW_OBJ, n->b);
	return n;
}

/* A path that is often an existing node (maybe one level below it), and
 * otherwise random. */
static void pick_path(mctx *c, char *buf)
{
	if (c->m.n > 1 && rn(c, 100) < 45) {
		const char *p = pick_node(c)->path;
		if (strlen(p) + 16 < PBUF) {
			strcpy(buf, p);
			if (rn(c, 4) == 0) {
				strcat(buf, "/");
				strcat(buf, c->names[rn(c, c->nnames)]);
			}
			return;
		}
	}
	rand_path(c, buf);
}

/* A link target for a link at @p link: absolute or relative, with "." and
 * "..", often dangling, sometimes the link itself. Never one that ends in
 * "." or ".." or is "/", so that what a link resolves to always has a
 * name. */
static void rand_target(mctx *c, const char *link, char *buf)
{
	unsigned int r = rn(c, 100), i;

	buf[0] = '\0';
	if (r < 28) {
		strcpy(buf, "/");
		rand_rel(c, buf + 1, 1 + rn(c, 3));
	} else if (r < 50) {
		rand_rel(c, buf, 1 + rn(c, 2));
	} else if (r < 64) {
		for (i = 1 + rn(c, 3); i > 0; i--)
			strcat(buf, "../");
		rand_rel(c, buf + strlen(buf), 1 + rn(c, 2));
	} else if (r < 70) {
		strcpy(buf, "./");
		rand_rel(c, buf + 2, 1 + rn(c, 2));
	} else if (r < 78) {
		/* ".." or "." in the middle: physical resolution */
		rand_rel(c, buf, 1);
		strcat(buf, rn(c, 3) ? "/../" : "/./");
		rand_rel(c, buf + strlen(buf), 1);
	} else if (r < 86) {
		/* the link itself: relative or absolute */
		if (rn(c, 2))
			strcpy(buf, strrchr(link, '/') + 1);
		else
			strcpy(buf, link);
	} else if (c->m.n > 1) {
		const char *p =
			c->m.v[1 + rn(c, (unsigned int)c->m.n - 1)]->path;
		if (strlen(p) < 200)
			strcpy(buf, p);
		else
			strcpy(buf, "/a");
	} else {
		strcpy(buf, "/a");
	}
}

static void rand_value(mctx *c, model_op *o)
{
	unsigned int r = rn(c, 100);

	o->vlen = r < 90 ? rn(c, 13) : r < 98 ? 13 + rn(c, 300) : rn(c, BIGVAL);
	model_value_bytes(c, o->val, o->vlen);
}

static const char *const bad_paths[] = {"",	 "a",	   "/a/",     "//a",
					"/a//b", "/a/./b", "/a/../b", "/.",
					"/..",	 "/a/.",   "/b/.."};
#define NBAD (sizeof(bad_paths) / sizeof(bad_paths[0]))

/* Canonical, but with the delimiter in a name. */
static const char *const reserved_paths[] = {
	"/a" KT_DEFAULT_DELIMITER, "/" KT_DEFAULT_DELIMITER,
	"/b/x" KT_DEFAULT_DELIMITER "y", "/" KT_DEFAULT_DELIMITER "/a"};
#define NRESERVED (sizeof(reserved_paths) / sizeof(reserved_paths[0]))

/* kt_link's arguments: existing is often a non-directory (now and then
 * the root), and newpath mostly new, else an existing path, a path below
 * existing, or a name beside one of its paths. */
static void gen_link(mctx *c, model_op *o)
{
	unsigned int r = rn(c, 100);
	mnode *n = NULL;

	if (r < 60 && (n = pick_where(c, rn(c, 3) ? PW_NONDIR : PW_ALIASED,
				      NULL)) != NULL &&
	    strlen(n->path) + 16 < PBUF)
		strcpy(o->p1, n->path);
	else if (r == 99)
		strcpy(o->p1, "/");
	r = rn(c, 100);
	if (r < 60) {
		rand_path(c, o->p2);
	} else if (r < 75) {
		pick_path(c, o->p2);
	} else if (r < 85 && strlen(o->p1) + 16 < PBUF) {
		join(o->p2, o->p1, c->names[rn(c, c->nnames)]);
	} else if (n != NULL) {
		n = pick_where(c, PW_OBJ, n->b);
		parent_of(o->p2, n->path);
		if (strlen(o->p2) + 16 < PBUF)
			join(o->p2, o->p2, c->names[rn(c, c->nnames)]);
		else
			rand_path(c, o->p2);
	} else {
		rand_path(c, o->p2);
	}
}

/* The offset of a write (or KT_APPEND) or the size of a truncate: about
 * the size of the item at @p o->p1 if there is one, so that values are cut,
 * extended and given holes, but stay small.  (Links are not followed
 * here: the choice need not be exact.) */
static void gen_offset(mctx *c, model_op *o)
{
	mnode *n = m_find(&c->m, o->p1);
	size_t len = n ? n->b->vlen : 0;

	switch (rn(c, 5)) {
	case 0:
		o->off = 0;
		break;
	case 1:
		o->off = o->type == OP_WRITE ? KT_APPEND : len;
		break;
	case 2:
		o->off = len + rn(c, 64);
		break;
	default:
		o->off = rn(c, (unsigned int)len + 1);
		break;
	}
}

static void gen_op(mctx *c, model_op *o)
{
	unsigned int r = rn(c, 125);
	static const unsigned int del_flags[] = {
		0,
		KT_DELETE_RECURSIVE,
		KT_DELETE_PRUNE,
		KT_DELETE_RECURSIVE | KT_DELETE_PRUNE,
		KT_DELETE_ITEM,
		KT_DELETE_ITEM | KT_DELETE_PRUNE,
		KT_DELETE_RECURSIVE,
		KT_DELETE_ALL_PATHS,
		KT_DELETE_ALL_PATHS | KT_DELETE_PRUNE,
		KT_DELETE_ALL_PATHS | KT_DELETE_RECURSIVE,
		KT_DELETE_ALL_PATHS | KT_DELETE_ITEM};

	o->flags = 0;
	o->null_opts = 0;
	o->vlen = 0;
	o->aname = anames[rn(c, NANAMES - 1)];
	if (rn(c, 50) == 0)
		o->aname = anames[NANAMES - 1];
	o->p2[0] = '\0';
	o->ftype = 0;
	o->rdev = 0;
	pick_path(c, o->p1);
	if (r >= 110) {
		o->type = r < 116 ? OP_WRITE : r < 120 ? OP_TRUNCATE : OP_SETATTR;
		if (o->type == OP_WRITE) {
			o->vlen = 1 + rn(c, 40);
			model_value_bytes(c, o->val, o->vlen);
		}
		if (o->type == OP_SETATTR) {
			o->smode = 1 + rn(c, 07777); /* 0: unknown */
			o->flags = rn(c, 4) == 0 ? KT_NOFOLLOW : 0;
		} else {
			gen_offset(c, o);
		}
	} else if (r >= 100) {
		o->type = OP_LINK;
		gen_link(c, o);
	} else if (r < 20) {
		o->type = OP_PUT;
		if (rn(c, 10) == 0)
			o->flags = KT_CREATE_EXCL;
		rand_value(c, o);
	} else if (r < 24) {
		static const unsigned int types[] = {
			KT_TYPE_FIFO, KT_TYPE_SOCK, KT_TYPE_CHR, KT_TYPE_BLK};
		o->type = OP_MKNOD;
		o->ftype = types[rn(c, 4)];
		if (o->ftype == KT_TYPE_CHR || o->ftype == KT_TYPE_BLK)
			o->rdev = rn(c, 3) ? rn(c, 2000) : 0;
		if (rn(c, 4) == 0)
			o->flags = KT_CREATE_PARENTS; /* changes nothing */
		/* now and then one the library must refuse */
		r = rn(c, 40);
		if (r == 0)
			o->ftype = rn(c, 2) ? 5 : 0;
		else if (r == 1 && o->ftype == KT_TYPE_FIFO)
			o->rdev = 1 + rn(c, 100);
	} else if (r < 35) {
		o->type = OP_MKDIR;
		if (rn(c, 2))
			o->flags = KT_CREATE_PARENTS;
	} else if (r < 45) {
		o->type = OP_SYMLINK;
		if (rn(c, 10) < 3)
			o->flags = KT_CREATE_PARENTS;
		rand_target(c, o->p1, o->p2);
	} else if (r < 60) {
		o->type = OP_DELETE;
		o->flags = del_flags[rn(c, sizeof(del_flags) /
						   sizeof(del_flags[0]))];
		if (rn(c, 300) == 0)
			strcpy(o->p1, "/");
	} else if (r < 76) {
		o->type = OP_RENAME;
		pick_path(c, o->p2);
		r = rn(c, 10);
		o->flags = r < 6   ? 0
			   : r < 8 ? KT_RENAME_NOREPLACE
				   : KT_RENAME_EXCHANGE;
		if (rn(c, 50) == 0)
			strcpy(o->p2, o->p1);
	} else if (r < 91) {
		o->type = OP_ATTR_SET;
		r = rn(c, 10);
		o->flags = r < 5 ? 0 : r < 8 ? KT_ATTR_CREATE : KT_ATTR_REPLACE;
		o->vlen = rn(c, 9);
		for (r = 0; r < o->vlen; r++)
			o->val[r] = (unsigned char)rn(c, 256);
	} else {
		o->type = OP_ATTR_DELETE;
	}
	if (o->flags == 0 && rn(c, 2) && o->type != OP_SETATTR)
		o->null_opts = 1;
	/* now and then a non-canonical path, which everything rejects */
	if (rn(c, 50) == 0) {
		const char *bad = rn(c, 3) ? bad_paths[rn(c, NBAD)]
					   : reserved_paths[rn(c, NRESERVED)];
		if ((o->type == OP_RENAME || o->type == OP_LINK) && rn(c, 2))
			strcpy(o->p2, bad);
		else
			strcpy(o->p1, bad);
	}
	if (o->type == OP_SYMLINK && rn(c, 200) == 0)
		o->p2[0] = '\0'; /* an empty target is invalid */
}

static void describe_op(char *desc, size_t cap, const model_op *o)
{
	char hx[80];
	const char *fl = "";

	switch (o->type) {
	case OP_PUT:
		snprintf(desc, cap, "kt_put(\"%s\", len %zu [%s], %s)", o->p1,
			 o->vlen, hexs(hx, sizeof(hx), o->val, o->vlen),
			 o->flags	? "KT_CREATE_EXCL"
			 : o->null_opts ? "NULL"
					: "0");
		break;
	case OP_MKDIR:
	case OP_SYMLINK:
		fl = o->flags	    ? "KT_CREATE_PARENTS"
		     : o->null_opts ? "NULL"
				    : "0";
		if (o->type == OP_MKDIR)
			snprintf(desc, cap, "kt_mkdir(\"%s\", %s)", o->p1, fl);
		else
			snprintf(desc, cap,
				 "kt_symlink(\"%s\", target \"%s\", %s)", o->p1,
				 o->p2, fl);
		break;
	case OP_DELETE:
		snprintf(desc, cap, "kt_delete(\"%s\", %s%s%s%s%s)", o->p1,
			 o->flags ? "" : "0",
			 o->flags & KT_DELETE_RECURSIVE ? "RECURSIVE " : "",
			 o->flags & KT_DELETE_PRUNE ? "PRUNE " : "",
			 o->flags & KT_DELETE_ITEM ? "ITEM " : "",
			 o->flags & KT_DELETE_ALL_PATHS ? "ALL_PATHS " : "");
		break;
	case OP_RENAME:
		snprintf(desc, cap, "kt_rename(\"%s\", \"%s\", %s)", o->p1,
			 o->p2,
			 o->flags == KT_RENAME_NOREPLACE  ? "NOREPLACE"
			 : o->flags == KT_RENAME_EXCHANGE ? "EXCHANGE"
							  : "0");
		break;
	case OP_LINK:
		snprintf(desc, cap, "kt_link(\"%s\", \"%s\")", o->p1, o->p2);
		break;
	case OP_WRITE:
		snprintf(desc, cap, "kt_write(\"%s\", len %zu [%s], at %s%llu)",
			 o->p1, o->vlen, hexs(hx, sizeof(hx), o->val, o->vlen),
			 o->off == KT_APPEND ? "KT_APPEND " : "",
			 o->off == KT_APPEND ? 0ULL : (unsigned long long)o->off);
		break;
	case OP_TRUNCATE:
		snprintf(desc, cap, "kt_truncate(\"%s\", %llu)", o->p1,
			 (unsigned long long)o->off);
		break;
	case OP_SETATTR:
		snprintf(desc, cap, "kt_setattr(\"%s\", mode %o, %s)", o->p1,
			 (unsigned)o->smode,
			 o->flags & KT_NOFOLLOW ? "KT_NOFOLLOW" : "0");
		break;
	case OP_MKNOD:
		snprintf(desc, cap, "kt_mknod(\"%s\", type %u, rdev %llu, %s)",
			 o->p1, o->ftype, (unsigned long long)o->rdev,
			 o->flags	? "KT_CREATE_PARENTS"
			 : o->null_opts ? "NULL"
					: "0");
		break;
	case OP_ATTR_SET:
		snprintf(desc, cap,
			 "kt_attr_set(\"%s\", \"%s\", len %zu [%s], %s)", o->p1,
			 o->aname, o->vlen,
			 hexs(hx, sizeof(hx), o->val, o->vlen),
			 o->flags == KT_ATTR_CREATE    ? "CREATE"
			 : o->flags == KT_ATTR_REPLACE ? "REPLACE"
						       : "0");
		break;
	default:
		snprintf(desc, cap, "kt_attr_delete(\"%s\", \"%s\")", o->p1,
			 o->aname);
		break;
	}
}

/* c->desc: the step's operation, as a call (or list of calls). */
static void describe(mctx *c, const model_op *o)
{
	size_t i, len;

	if (o->type != OP_BATCH) {
		describe_op(c->desc, sizeof(c->desc), o);
		return;
	}
	snprintf(c->desc, sizeof(c->desc), "batch of %zu:", c->nsub);
	for (i = 0; i < c->nsub; i++) {
		len = strlen(c->desc);
		snprintf(c->desc + len, sizeof(c->desc) - len, "\n    %zu. ",
			 i + 1);
		len = strlen(c->desc);
		describe_op(c->desc + len, sizeof(c->desc) - len, &c->sub[i]);
	}
}

/* ------------------------------------------------------------------------
 * Resolution in the model */

/* Resolve @p rel (a link target, or the rest of a path) starting in the
 * directory @p dir (a real path), following links in every component and,
 * with @p follow_last, in the last.  *hops counts links followed.  On 0,
 * @p out is the real path of the final component and *outn the node there
 * (NULL if there is none but its parent is a directory). */
static int resolve_from(mctx *c, const char *dir, const char *rel,
			int follow_last, int *hops, char *out, mnode **outn)
{
	char cur[PBUF], rem[PBUF], tmp[PBUF];
	int k;

	*outn = NULL;
	strcpy(cur, dir);
	if (rel[0] == '/')
		strcpy(cur, "/");
	while (rel[0] == '/')
		rel++;
	must(strlen(rel) < PBUF);
	strcpy(rem, rel);
	for (;;) {
		char *slash, *rest;
		char child[PBUF];
		mnode *n;
		int last;

		if (rem[0] == '\0') {
			/* the path ended in "." or ".." (or was "/"): it
			 * names the directory reached */
			strcpy(out, cur);
			*outn = m_find(&c->m, cur);
			return 0;
		}
		slash = strchr(rem, '/');
		if (slash) {
			*slash = '\0';
			rest = slash + 1;
			while (*rest == '/')
				rest++;
		} else {
			rest = rem + strlen(rem);
		}
		last = rest[0] == '\0';
		if (strcmp(rem, ".") == 0) {
			memmove(rem, rest, strlen(rest) + 1);
			continue;
		}
		if (strcmp(rem, "..") == 0) {
			if (strcmp(cur, "/") != 0)
				parent_of(cur, cur);
			memmove(rem, rest, strlen(rest) + 1);
			continue;
		}
		join(child, cur, rem);
		n = m_find(&c->m, child);
		if (n == NULL) {
			if (!last)
				return KT_ENOTFOUND;
			strcpy(out, child);
			return 0;
		}
		if ((n->b->kind & KT_KIND_LINK) && (!last || follow_last)) {
			const char *t = n->b->target;
			if (++*hops > KT_LINK_HOPS_MAX)
				return KT_ELOOP;
			if (t[0] == '/') {
				strcpy(cur, "/");
				while (t[0] == '/')
					t++;
			}
			must(strlen(t) + 1 + strlen(rest) < PBUF);
			if (rest[0])
				k = snprintf(tmp, sizeof(tmp), "%s/%s", t,
					     rest);
			else
				k = snprintf(tmp, sizeof(tmp), "%s", t);
			must(k >= 0 && (size_t)k < sizeof(tmp));
			strcpy(rem, tmp);
			continue;
		}
		if (last) {
			strcpy(out, child);
			*outn = n;
			return 0;
		}
		if (!(n->b->kind & KT_KIND_DIR))
			return KT_ENOTDIR;
		strcpy(cur, child);
		memmove(rem, rest, strlen(rest) + 1);
	}
}

enum { W_STRICT, W_CREATE };

/* Where the walk over an argument path ended. */
typedef struct walk {
	int hops;
	char parent[PBUF]; /* real path of the parent directory */
	char path[PBUF];   /* parent + last name */
	mnode *node;	   /* the node there (not followed), or NULL */
} walk;

/* Walk the components of the canonical path @p path (not "/") but the
 * last, following links.  W_STRICT: every component must be a directory or
 * a link to one.  W_CREATE (put, KT_CREATE_PARENTS): missing ones are
 * planned as new directories and item-only ones to become item+dir.
 * Inside link targets resolution is always strict. */
static int walk_parent(mctx *c, const char *path, int mode, walk *w)
{
	char cur[PBUF], child[PBUF], tgt[PBUF], tag[PBUF + 1];
	const char *p = path + 1, *slash;
	int creating = 0, rc;
	mnode *n, *tn;

	sl_clear(&c->plan);
	w->hops = 0;
	w->node = NULL;
	strcpy(cur, "/");
	while ((slash = strchr(p, '/')) != NULL) {
		join_n(child, cur, p, (size_t)(slash - p));
		p = slash + 1;
		n = creating ? NULL : m_find(&c->m, child);
		if (n == NULL) {
			if (mode == W_STRICT)
				return KT_ENOTFOUND;
			snprintf(tag, sizeof(tag), "c%s", child);
			sl_push(&c->plan, tag);
			creating = 1;
			strcpy(cur, child);
			continue;
		}
		if (n->b->kind & KT_KIND_LINK) {
			if (++w->hops > KT_LINK_HOPS_MAX)
				return KT_ELOOP;
			rc = resolve_from(c, cur, n->b->target, 1, &w->hops, tgt,
					  &tn);
			if (rc != 0)
				return rc;
			if (tn == NULL)
				return KT_ENOTFOUND;
			if (!(tn->b->kind & KT_KIND_DIR))
				return KT_ENOTDIR;
			strcpy(cur, tgt);
			continue;
		}
		if (!(n->b->kind & KT_KIND_DIR)) {
			/* only an item can become a directory too, and only
			 * one with a single path */
			if (mode != W_CREATE || !(n->b->kind & KT_KIND_ITEM))
				return KT_ENOTDIR;
			if (n->b->nlink > 1)
				return KT_EPERM;
			snprintf(tag, sizeof(tag), "v%s", child);
			sl_push(&c->plan, tag);
		}
		strcpy(cur, child);
	}
	strcpy(w->parent, cur);
	join(w->path, cur, p);
	w->node = creating ? NULL : m_find(&c->m, w->path);
	return 0;
}

struct res {
	int rc;
	char path[PBUF]; /* real path of the final component */
	mnode *node;	 /* node there, or NULL */
};

/* Resolve a path as a reader does: following links in the middle
 * components, and in the last with @p follow. */
static int m_resolve(mctx *c, const char *path, int follow, res *r)
{
	walk w;
	int rc;

	r->node = NULL;
	r->path[0] = '\0';
	if (path_err(path) != 0)
		return r->rc = path_err(path);
	if (strcmp(path, "/") == 0) {
		strcpy(r->path, "/");
		r->node = m_find(&c->m, "/");
		return r->rc = 0;
	}
	rc = walk_parent(c, path, W_STRICT, &w);
	if (rc != 0)
		return r->rc = rc;
	if (w.node && (w.node->b->kind & KT_KIND_LINK) && follow) {
		if (++w.hops > KT_LINK_HOPS_MAX)
			return r->rc = KT_ELOOP;
		return r->rc = resolve_from(c, w.parent, w.node->b->target, 1,
					    &w.hops, r->path, &r->node);
	}
	strcpy(r->path, w.path);
	r->node = w.node;
	return r->rc = 0;
}

/* ------------------------------------------------------------------------
 * Operations on the model.  Each returns the code the store must return
 * and, on 0, applies the change and records what it wrote. */

static void touch(mctx *c, const char *path)
{
	sl_push_unique(&c->touched, path);
}

/* The node @p b was written: its next observed version must be new, and
 * every path of it is compared after the step. */
static void dirty_obj(mctx *c, mobj *b)
{
	size_t i;

	if (b->vstate != V_NEW)
		b->vstate = V_DIRTY;
	for (i = 0; i < c->m.n; i++)
		if (c->m.v[i]->b == b)
			touch(c, c->m.v[i]->path);
}

static void dirty(mctx *c, mnode *n)
{
	if (n == NULL)
		return;
	touch(c, n->path);
	dirty_obj(c, n->b);
}

/* Remove the path @p path and every path below it.  A node that keeps
 * other paths (kt_link) only loses these: its link count changes, which
 * is a write of it. */
static void remove_paths(mctx *c, const char *path)
{
	size_t lo, hi, i, k, nb = 0, i0 = m_lower(&c->m, path);
	mobj **bs;
	uint32_t *cnt;

	m_desc_range(&c->m, path, &lo, &hi);
	must(i0 + 1 == lo);
	bs = malloc((hi - i0) * sizeof(*bs));
	cnt = malloc((hi - i0) * sizeof(*cnt));
	must_nn(bs);
	must_nn(cnt);
	for (i = i0; i < hi; i++) {
		mobj *b = c->m.v[i]->b;
		for (k = 0; k < nb && bs[k] != b; k++)
			;
		if (k == nb) {
			bs[nb] = b;
			cnt[nb++] = 0;
		}
		cnt[k]++;
	}
	/* the survivors, before the paths (and maybe nodes) go */
	for (k = 0, i = 0; k < nb; k++)
		if (bs[k]->nlink > cnt[k])
			bs[i++] = bs[k];
	nb = i;
	m_remove_subtree(&c->m, path);
	for (k = 0; k < nb; k++)
		dirty_obj(c, bs[k]);
	free(bs);
	free(cnt);
}

/* A path of @p b other than @p not (NULL if it has none). */
static mnode *other_path(mctx *c, const mobj *b, const mnode *not)
{
	size_t i;

	for (i = 0; i < c->m.n; i++)
		if (c->m.v[i]->b == b && c->m.v[i] != not)
			return c->m.v[i];
	return NULL;
}

static void dirty_parent(mctx *c, const char *path)
{
	char p[PBUF];

	parent_of(p, path);
	dirty(c, m_find(&c->m, p));
}

static mnode *m_create(mctx *c, const char *path, unsigned int kind)
{
	mnode *n = m_new(&c->m, path, kind);

	/* the defaults of kt_create_options */
	n->b->mode = kind == KT_KIND_ITEM || kind == KT_KIND_SPECIAL ? 0644
		  : kind == KT_KIND_DIR				  ? 0755
								  : 0777;
	dirty_parent(c, path);
	touch(c, path);
	return n;
}

/* Carry out the plan of the last walk_parent. */
static void apply_plan(mctx *c)
{
	size_t i;

	for (i = 0; i < c->plan.n; i++) {
		const char *p = c->plan.v[i] + 1;
		if (c->plan.v[i][0] == 'c') {
			m_create(c, p, KT_KIND_DIR);
		} else {
			mnode *n = m_find(&c->m, p);
			n->b->kind |= KT_KIND_DIR;
			n->b->mode = 0;
			dirty(c, n);
		}
	}
}

static int model_put(mctx *c, const model_op *o)
{
	walk w;
	int rc;
	mnode *n, *tn;
	char tp[PBUF];

	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (strcmp(o->p1, "/") == 0)
		return KT_EINVAL;
	rc = walk_parent(c, o->p1, W_CREATE, &w);
	if (rc != 0)
		return rc;
	n = w.node;
	if (n == NULL) {
		apply_plan(c);
		n = m_create(c, w.path, KT_KIND_ITEM);
		m_set_value(n, o->val, o->vlen);
		return 0;
	}
	if (n->b->kind & KT_KIND_LINK) {
		if (o->flags & KT_CREATE_EXCL)
			return KT_EEXISTS;
		if (++w.hops > KT_LINK_HOPS_MAX)
			return KT_ELOOP;
		rc = resolve_from(c, w.parent, n->b->target, 1, &w.hops, tp, &tn);
		if (rc != 0)
			return rc;
		if (tn == NULL)
			return KT_ENOTFOUND; /* dangling */
		n = tn;
	} else if ((o->flags & KT_CREATE_EXCL) &&
		   (n->b->kind & (KT_KIND_ITEM | KT_KIND_SPECIAL))) {
		return KT_EEXISTS;
	}
	if (n->b->kind == KT_KIND_SPECIAL)
		return KT_EINVAL; /* it holds no value */
	must_eq(c->plan.n, 0);
	m_set_value(n, o->val, o->vlen);
	dirty(c, n);
	return 0;
}

static int model_mkdir(mctx *c, const model_op *o)
{
	int parents = (o->flags & KT_CREATE_PARENTS) != 0, rc;
	walk w;
	mnode *n;

	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (strcmp(o->p1, "/") == 0)
		return KT_EINVAL;
	rc = walk_parent(c, o->p1, parents ? W_CREATE : W_STRICT, &w);
	if (rc != 0)
		return rc;
	n = w.node;
	if (n == NULL) {
		apply_plan(c);
		m_create(c, w.path, KT_KIND_DIR);
		return 0;
	}
	if (n->b->kind & (KT_KIND_LINK | KT_KIND_SPECIAL))
		return KT_EEXISTS;
	if (n->b->kind & KT_KIND_DIR)
		return parents ? 0 : KT_EEXISTS;
	if (n->b->nlink > 1)
		return KT_EPERM; /* an item with several paths stays one */
	n->b->kind |= KT_KIND_DIR;
	n->b->mode = 0;
	dirty(c, n);
	return 0;
}

static int model_symlink(mctx *c, const model_op *o)
{
	int rc;
	walk w;
	mnode *n;

	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (strcmp(o->p1, "/") == 0 || o->p2[0] == '\0')
		return KT_EINVAL;
	/* Missing ancestors are made, as by put. */
	rc = walk_parent(c, o->p1, W_CREATE, &w);
	if (rc != 0)
		return rc;
	if (w.node != NULL)
		return KT_EEXISTS;
	apply_plan(c);
	n = m_create(c, w.path, KT_KIND_LINK);
	n->b->target = xstrdup(o->p2);
	return 0;
}

/* 1 if mknod's type or device number is one the library refuses when
 * the operation is recorded (an unknown type, a FIFO or socket with a
 * device number). */
static int mknod_args_bad(const model_op *o)
{
	if (o->ftype != KT_TYPE_FIFO && o->ftype != KT_TYPE_SOCK &&
	    o->ftype != KT_TYPE_CHR && o->ftype != KT_TYPE_BLK)
		return 1;
	return (o->ftype == KT_TYPE_FIFO || o->ftype == KT_TYPE_SOCK) &&
	       o->rdev != 0;
}

/* mknod makes missing ancestors as put does, whatever the flags, and
 * never over anything; the type and device number are checked with the
 * path, before the store is looked at. */
static int model_mknod(mctx *c, const model_op *o)
{
	walk w;
	mnode *n;
	int rc;

	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (mknod_args_bad(o))
		return KT_EINVAL;
	if (strcmp(o->p1, "/") == 0)
		return KT_EINVAL;
	rc = walk_parent(c, o->p1, W_CREATE, &w);
	if (rc != 0)
		return rc;
	if (w.node != NULL)
		return KT_EEXISTS;
	apply_plan(c);
	n = m_create(c, w.path, KT_KIND_SPECIAL);
	n->b->type = o->ftype;
	n->b->rdev = o->rdev;
	return 0;
}

/* PRUNE: remove the ancestors from @p dir upwards that are directories
 * without a value and without children, below the root. */
static void prune(mctx *c, const char *dir)
{
	char p[PBUF];
	mnode *n;

	strcpy(p, dir);
	while (strcmp(p, "/") != 0) {
		n = m_find(&c->m, p);
		if (n->b->kind != KT_KIND_DIR || m_has_children(&c->m, p))
			break;
		m_remove_subtree(&c->m, p);
		dirty_parent(c, p);
		parent_of(p, p);
	}
}

/* Remove the path @p n of a node, and what is below it; with @p all
 * (KT_DELETE_ALL_PATHS) the node's other paths too. */
static void unlink_node(mctx *c, mnode *n, int all)
{
	char p[PBUF];
	mnode *on;

	while (all && (on = other_path(c, n->b, n)) != NULL) {
		strcpy(p, on->path);
		m_remove_subtree(&c->m, p);
		dirty_parent(c, p);
	}
	strcpy(p, n->path);
	remove_paths(c, p);
	dirty_parent(c, p);
}

static int model_delete(mctx *c, const model_op *o)
{
	walk w;
	mnode *n;
	int rc, all = (o->flags & KT_DELETE_ALL_PATHS) != 0;

	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (strcmp(o->p1, "/") == 0)
		return KT_EINVAL;
	rc = walk_parent(c, o->p1, W_STRICT, &w);
	if (rc != 0)
		return rc;
	n = w.node;
	if (n == NULL)
		return KT_ENOTFOUND;
	if (o->flags & KT_DELETE_ITEM) {
		if (n->b->kind & (KT_KIND_LINK | KT_KIND_SPECIAL))
			return KT_EINVAL;
		if (!(n->b->kind & KT_KIND_ITEM))
			return KT_EISDIR;
		if (n->b->kind & KT_KIND_DIR) {
			free(n->b->val);
			n->b->val = NULL;
			n->b->vlen = 0;
			n->b->kind = KT_KIND_DIR;
			dirty(c, n);
		} else {
			unlink_node(c, n, all);
		}
	} else {
		if ((n->b->kind & KT_KIND_DIR) && m_has_children(&c->m, w.path) &&
		    !(o->flags & KT_DELETE_RECURSIVE))
			return KT_ENOTEMPTY;
		unlink_node(c, n, all);
	}
	if (o->flags & KT_DELETE_PRUNE)
		prune(c, w.parent);
	return 0;
}

static int model_rename(mctx *c, const model_op *o)
{
	walk ws, wd;
	mnode *sn, *dn;
	int rc, exch = (o->flags & KT_RENAME_EXCHANGE) != 0;

	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (path_err(o->p2) != 0)
		return path_err(o->p2);
	if (strcmp(o->p1, "/") == 0 || strcmp(o->p2, "/") == 0)
		return KT_EINVAL;
	rc = walk_parent(c, o->p1, W_STRICT, &ws);
	if (rc != 0)
		return rc;
	rc = walk_parent(c, o->p2, W_STRICT, &wd);
	if (rc != 0)
		return rc;
	sn = ws.node;
	dn = wd.node;
	if (sn == NULL)
		return KT_ENOTFOUND;
	if ((o->flags & KT_RENAME_NOREPLACE) && dn != NULL)
		return KT_EEXISTS;
	if (exch && dn == NULL)
		return KT_ENOTFOUND;
	if (is_under(wd.path, ws.path) || (exch && is_under(ws.path, wd.path)))
		return KT_EINVAL;
	if (dn != NULL && sn->b == dn->b)
		return 0; /* the same path, or two paths of one node */
	if (exch) {
		m_move(&c->m, ws.path, wd.path, 1);
		dirty(c, sn);
		dirty(c, dn);
		return 0;
	}
	if (dn != NULL) {
		int sdir = (sn->b->kind & KT_KIND_DIR) != 0;
		int ddir = (dn->b->kind & KT_KIND_DIR) != 0;
		if (sdir && !ddir)
			return KT_ENOTDIR;
		if (!sdir && ddir)
			return KT_EISDIR;
		if (ddir && m_has_children(&c->m, wd.path))
			return KT_ENOTEMPTY;
		remove_paths(c, wd.path);
	}
	dirty_parent(c, ws.path);
	m_move(&c->m, ws.path, wd.path, 0);
	dirty(c, sn);
	dirty_parent(c, wd.path);
	return 0;
}

/* kt_link: existing is walked without following its last component;
 * newpath's ancestors are made as put makes them.  The checks come in
 * the order of Linux linkat(2): the arguments, then existing (resolution,
 * absent), then newpath (resolution, something there: KT_EEXISTS), then
 * the kind of existing (a directory or the root: KT_EPERM), then the link
 * count.  newpath below existing, which would make it a directory with
 * two paths, is KT_EPERM once the walk reaches it. */
static int model_link(mctx *c, const model_op *o)
{
	walk ws, wd;
	mnode *sn;
	size_t i;
	int rc;

	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (path_err(o->p2) != 0)
		return path_err(o->p2);
	if (strcmp(o->p1, "/") == 0) {
		sn = m_find(&c->m, "/");
	} else {
		rc = walk_parent(c, o->p1, W_STRICT, &ws);
		if (rc != 0)
			return rc;
		sn = ws.node;
		if (sn == NULL)
			return KT_ENOTFOUND;
	}
	if (strcmp(o->p2, "/") == 0)
		return KT_EEXISTS;
	rc = walk_parent(c, o->p2, W_CREATE, &wd);
	if (rc != 0)
		return rc;
	for (i = 0; i < c->plan.n; i++)
		if (c->plan.v[i][0] == 'v' &&
		    m_find(&c->m, c->plan.v[i] + 1)->b == sn->b)
			return KT_EPERM;
	if (wd.node != NULL)
		return KT_EEXISTS;
	if (sn->b->kind & KT_KIND_DIR)
		return KT_EPERM;
	if (sn->b->nlink >= KT_LINK_MAX)
		return KT_EMLINK;
	apply_plan(c);
	m_add_path(&c->m, wd.path, sn->b);
	dirty_parent(c, wd.path);
	dirty(c, sn);
	return 0;
}

static int model_attr(mctx *c, const model_op *o)
{
	res r;
	mattr *a;

	/* the arguments are checked before the store is looked at */
	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (strncmp(o->aname, KT_DEFAULT_DELIMITER,
		    strlen(KT_DEFAULT_DELIMITER)) == 0)
		return KT_ERESERVED;
	if (m_resolve(c, o->p1, 1, &r) != 0)
		return r.rc;
	if (r.node == NULL)
		return KT_ENOTFOUND;
	a = m_attr_find(r.node, o->aname);
	if (o->type == OP_ATTR_DELETE) {
		if (a == NULL)
			return KT_ENOATTR;
		m_attr_delete(r.node, o->aname);
	} else {
		if ((o->flags & KT_ATTR_CREATE) && a != NULL)
			return KT_EEXISTS;
		if ((o->flags & KT_ATTR_REPLACE) && a == NULL)
			return KT_ENOATTR;
		m_attr_set(r.node, o->aname, o->val, o->vlen);
	}
	dirty(c, r.node);
	return 0;
}

/* kt_write and kt_truncate: follow links; an item (item+dir included)
 * only. */
static int model_write(mctx *c, const model_op *o)
{
	res r;
	mobj *b;
	uint64_t at, end;
	unsigned char *v;

	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (m_resolve(c, o->p1, 1, &r) != 0)
		return r.rc;
	if (r.node == NULL)
		return KT_ENOTFOUND;
	b = r.node->b;
	if (b->kind == KT_KIND_SPECIAL)
		return KT_EINVAL;
	if (!(b->kind & KT_KIND_ITEM))
		return KT_EISDIR;
	if (o->type == OP_WRITE) {
		at = o->off == KT_APPEND ? b->vlen : o->off;
		end = at + o->vlen;
	} else {
		at = end = o->off;
	}
	if (end > b->vlen || o->type == OP_TRUNCATE) {
		v = calloc(1, (size_t)end + 1);
		must_nn(v);
		memcpy(v, b->val, end < b->vlen ? (size_t)end : b->vlen);
		free(b->val);
		b->val = v;
		b->vlen = (size_t)end;
	}
	if (o->type == OP_WRITE)
		memcpy(b->val + at, o->val, o->vlen);
	dirty(c, r.node);
	return 0;
}

/* kt_setattr of the mode, following a link in the last component unless
 * KT_NOFOLLOW. */
static int model_setattr(mctx *c, const model_op *o)
{
	res r;

	if (path_err(o->p1) != 0)
		return path_err(o->p1);
	if (m_resolve(c, o->p1, !(o->flags & KT_NOFOLLOW), &r) != 0)
		return r.rc;
	if (r.node == NULL)
		return KT_ENOTFOUND;
	r.node->b->mode = o->smode;
	dirty(c, r.node);
	return 0;
}

int model_apply(mctx *c, const model_op *o);

/* A batch applies its operations in order, each seeing the ones before,
 * and on the first failure none of them, returning that failure. */
static int model_batch(mctx *c)
{
	model saved;
	size_t i;
	int rc = 0;

	m_clone(&saved, &c->m);
	for (i = 0; i < c->nsub && rc == 0; i++) {
		rc = model_apply(c, &c->sub[i]);
		c->bad_sub = i;
	}
	if (rc != 0) {
		m_free(&c->m);
		c->m = saved;
	} else {
		m_free(&saved);
	}
	return rc;
}

int model_apply(mctx *c, const model_op *o)
{
	switch (o->type) {
	case OP_BATCH:
		return model_batch(c);
	case OP_PUT:
		return model_put(c, o);
	case OP_MKDIR:
		return model_mkdir(c, o);
	case OP_SYMLINK:
		return model_symlink(c, o);
	case OP_DELETE:
		return model_delete(c, o);
	case OP_RENAME:
		return model_rename(c, o);
	case OP_MKNOD:
		return model_mknod(c, o);
	case OP_LINK:
		return model_link(c, o);
	case OP_WRITE:
	case OP_TRUNCATE:
		return model_write(c, o);
	case OP_SETATTR:
		return model_setattr(c, o);
	default:
		return model_attr(c, o);
	}
}

/* Record one operation in @p b. */
static int batch_record(kt_batch *b, const model_op *o)
{
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	const kt_create_options *cop = o->null_opts ? NULL : &co;

	co.flags = o->flags;
	switch (o->type) {
	case OP_PUT:
		return kt_batch_put(b, o->p1, o->vlen ? o->val : NULL, o->vlen,
				    cop);
	case OP_MKDIR:
		return kt_batch_mkdir(b, o->p1, cop);
	case OP_SYMLINK:
		return kt_batch_symlink(b, o->p1, o->p2, cop);
	case OP_DELETE:
		return kt_batch_delete(b, o->p1, o->flags);
	case OP_RENAME:
		return kt_batch_rename(b, o->p1, o->p2, o->flags);
	case OP_MKNOD:
		return kt_batch_mknod(b, o->p1, o->ftype, o->rdev, cop);
	case OP_LINK:
		return kt_batch_link(b, o->p1, o->p2);
	case OP_SETATTR:
		sa.mask = KT_SET_MODE;
		sa.mode = o->smode;
		return kt_batch_setattr(b, o->p1, &sa, o->flags);
	case OP_WRITE:
	case OP_TRUNCATE:
		must(!"kt_write and kt_truncate have no batch form");
		return KT_EINVAL;
	case OP_ATTR_SET:
		return kt_batch_attr_set(b, o->p1, o->aname, o->val, o->vlen,
					 o->flags);
	default:
		return kt_batch_attr_delete(b, o->p1, o->aname);
	}
}

static void mismatch_at(mctx *c, size_t i, int rc)
{
	model_mismatch(c, "recording operation %zu: %s (%s)", i + 1, rcname(rc),
		 kt_errmsg());
}

static int store_batch(mctx *c)
{
	kt_batch *b = NULL;
	size_t i;
	int rc;

	rc = kt_batch_new(&b, *c->store);
	if (rc != 0)
		expect_rc(c, "kt_batch_new", "", 0, rc, NULL);
	for (i = 0; i < c->nsub; i++) {
		rc = batch_record(b, &c->sub[i]);
		if (rc != 0) {
			kt_batch_free(b);
			mismatch_at(c, i, rc);
		}
	}
	rc = kt_batch_commit(b);
	kt_batch_free(b);
	return rc;
}

int model_store_apply(mctx *c, const model_op *o)
{
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_store *s = *c->store;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	const kt_create_options *cop = o->null_opts ? NULL : &co;

	co.flags = o->flags;
	switch (o->type) {
	case OP_BATCH:
		return store_batch(c);
	case OP_PUT:
		return kt_put(s, o->p1, o->vlen ? o->val : NULL, o->vlen, cop);
	case OP_MKDIR:
		return kt_mkdir(s, o->p1, cop);
	case OP_SYMLINK:
		return kt_symlink(s, o->p1, o->p2, cop);
	case OP_DELETE:
		return kt_delete(s, o->p1, o->flags);
	case OP_RENAME:
		return kt_rename(s, o->p1, o->p2, o->flags);
	case OP_MKNOD:
		return kt_mknod(s, o->p1, o->ftype, o->rdev, cop);
	case OP_LINK:
		return kt_link(s, o->p1, o->p2);
	case OP_WRITE:
		return kt_write(s, o->p1, o->val, o->vlen, o->off);
	case OP_TRUNCATE:
		return kt_truncate(s, o->p1, o->off);
	case OP_SETATTR:
		sa.mask = KT_SET_MODE;
		sa.mode = o->smode;
		return kt_setattr(s, o->p1, &sa, o->flags);
	case OP_ATTR_SET:
		return kt_attr_set(s, o->p1, o->aname, o->val, o->vlen,
				   o->flags);
	default:
		return kt_attr_delete(s, o->p1, o->aname);
	}
}

/* ------------------------------------------------------------------------
 * Comparing the store with the model */

static void expect_rc(mctx *c, const char *call, const char *path, int want,
		      int got, const res *r)
{
	if (got == want) {
		if (got < 0 && kt_errmsg()[0] == '\0')
			model_mismatch(c,
				 "%s(\"%s\") failed with %s but kt_errmsg() "
				 "is empty",
				 call, path, rcname(got));
		return;
	}
	model_mismatch(c, "%s(\"%s\"): expected %s, got %s (%s)%s%s%s", call, path,
		 rcname(want), rcname(got), got < 0 ? kt_errmsg() : "",
		 r ? "; the model resolves it to \"" : "", r ? r->path : "",
		 r ? "\"" : "");
}

/* The id seen for a node must be the one it was first seen with. */
static void cmp_id(mctx *c, const char *call, mnode *n, uint64_t id)
{
	if (n->b->id == 0)
		n->b->id = id;
	else if (n->b->id != id)
		model_mismatch(c,
			 "%s: node \"%s\" has id %llu, expected %llu (ids "
			 "are kept across rename and conversion)",
			 call, n->path, (unsigned long long)id,
			 (unsigned long long)n->b->id);
}

static void cmp_stat(mctx *c, const char *call, const char *path, mnode *n,
		     const kt_statbuf *st)
{
	if (st->kind != n->b->kind)
		model_mismatch(c, "%s(\"%s\"): kind %s, expected %s (node \"%s\")",
			 call, path, kindname(st->kind), kindname(n->b->kind),
			 n->path);
	cmp_id(c, call, n, st->id);
	if (n->b->mode != 0 && st->mode != n->b->mode)
		model_mismatch(c, "%s(\"%s\"): mode %o, expected %o (node \"%s\")",
			 call, path, (unsigned)st->mode, (unsigned)n->b->mode,
			 n->path);
	if (st->uid != (uint32_t)geteuid() || st->gid != (uint32_t)getegid())
		model_mismatch(c, "%s(\"%s\"): owner %u:%u, expected %u:%u", call,
			 path, (unsigned)st->uid, (unsigned)st->gid,
			 (unsigned)geteuid(), (unsigned)getegid());
	if (st->nlink != ((n->b->kind & KT_KIND_DIR) ? 1 : n->b->nlink))
		model_mismatch(c, "%s(\"%s\"): nlink %u, expected %u (node \"%s\")",
			 call, path, (unsigned)st->nlink,
			 (unsigned)((n->b->kind & KT_KIND_DIR) ? 1
							       : n->b->nlink),
			 n->path);
	if (st->nattrs != n->b->nattrs)
		model_mismatch(c, "%s(\"%s\"): nattrs %u, expected %zu", call, path,
			 (unsigned)st->nattrs, n->b->nattrs);
	if ((n->b->kind & KT_KIND_DIR) &&
	    st->nsubdirs != m_nsubdirs(&c->m, n->path))
		model_mismatch(c, "%s(\"%s\"): nsubdirs %u, expected %u", call, path,
			 (unsigned)st->nsubdirs,
			 (unsigned)m_nsubdirs(&c->m, n->path));
	if ((n->b->kind & KT_KIND_ITEM) && st->size != n->b->vlen)
		model_mismatch(c, "%s(\"%s\"): size %llu, expected %zu", call, path,
			 (unsigned long long)st->size, n->b->vlen);
	if (st->type != n->b->type || st->rdev != n->b->rdev ||
	    (n->b->kind == KT_KIND_SPECIAL && st->size != 0))
		model_mismatch(c,
			 "%s(\"%s\"): type %u rdev %llu size %llu, expected "
			 "type %u rdev %llu size 0 (node \"%s\")",
			 call, path, st->type, (unsigned long long)st->rdev,
			 (unsigned long long)st->size, n->b->type,
			 (unsigned long long)n->b->rdev, n->path);
	if ((n->b->kind & KT_KIND_LINK) && st->size != strlen(n->b->target))
		model_mismatch(c,
			 "%s(\"%s\"): size %llu, expected %zu (link "
			 "target)",
			 call, path, (unsigned long long)st->size,
			 strlen(n->b->target));
	if (n->b->vstate != V_KNOWN && u64_has(&c->versions, st->version))
		model_mismatch(c,
			 "%s(\"%s\"): version %llu of %s node \"%s\" was "
			 "seen before (versions are never reused)",
			 call, path, (unsigned long long)st->version,
			 n->b->vstate == V_NEW ? "new" : "written", n->path);
	if (n->b->vstate == V_DIRTY && st->version == n->b->ver)
		model_mismatch(c,
			 "%s(\"%s\"): version %llu unchanged after a write "
			 "of \"%s\"",
			 call, path, (unsigned long long)st->version, n->path);
	n->b->ver = st->version;
	n->b->vstate = V_KNOWN;
	u64_add(&c->step_versions, st->version);
}

/* One page of the listing of @p path: after a random name (or from the
 * start), at most 0 (no limit) to 3 entries, ascending or descending. */
static void cmp_page(mctx *c, const char *path, mnode **ch, size_t n)
{
	kt_list_options lo = KT_LIST_OPTIONS_INIT;
	kt_iter *it = NULL;
	const kt_entry *e;
	const char **want = malloc((n + 1) * sizeof(*want));
	size_t nwant = 0, k, i;
	char msg[PBUF + 512] = "";
	int rc;

	lo.limit = rn(c, 4);
	lo.reverse = (int)rn(c, 2);
	if (rn(c, 3)) {
		lo.after = c->names[rn(c, c->nnames)];
		lo.after_len = strlen(lo.after);
	}
	must_nn(want);
	for (k = 0; k < n; k++) {
		const char *nm;
		i = lo.reverse ? n - 1 - k : k;
		nm = strrchr(ch[i]->path, '/') + 1;
		if (lo.after && (lo.reverse ? name_cmp(c, nm, lo.after) >= 0
					    : name_cmp(c, nm, lo.after) <= 0))
			continue;
		if (lo.limit && nwant == lo.limit)
			break;
		want[nwant++] = nm;
	}
	rc = kt_iter_new(&it, *c->store, path, &lo);
	if (rc != 0)
		expect_rc(c, "kt_iter_new (page)", path, 0, rc, NULL);
	k = 0;
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if (k == nwant || e->name_len != strlen(want[k]) ||
		    memcmp(e->name, want[k], e->name_len) != 0) {
			snprintf(msg, sizeof(msg),
				 "entry %zu is \"%.*s\", "
				 "expected %s%s%s",
				 k, (int)e->name_len, e->name,
				 k < nwant ? "\"" : "the end",
				 k < nwant ? want[k] : "",
				 k < nwant ? "\"" : "");
			break;
		}
		k++;
	}
	kt_iter_free(it);
	if (msg[0] == '\0' && rc != KT_ITEROVER)
		snprintf(msg, sizeof(msg), "kt_iter_next: %s", rcname(rc));
	if (msg[0] == '\0' && k != nwant)
		snprintf(msg, sizeof(msg), "%zu entries, expected %zu", k,
			 nwant);
	free(want);
	if (msg[0] != '\0')
		model_mismatch(c,
			 "kt_iter_new(\"%s\", after \"%s\", limit %zu, "
			 "%s): %s",
			 path, lo.after ? lo.after : "(none)", lo.limit,
			 lo.reverse ? "reverse" : "forward", msg);
}

static void cmp_listing(mctx *c, const char *path, mnode *dir)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	mnode **ch;
	size_t n = m_children(&c->m, dir->path, &ch), i = 0;
	int rc;
	char msg[PBUF + 512] = "";

	/* The model keeps paths in byte order; the store lists in its own. */
	if (c->cfg.typed_names) {
		sort_ctx = c;
		qsort(ch, n, sizeof(*ch), child_cmp);
	}
	rc = kt_iter_new(&it, *c->store, path, NULL);
	if (rc != 0) {
		free(ch);
		expect_rc(c, "kt_iter_new", path, 0, rc, NULL);
	}
	while ((rc = kt_iter_next(&e, it)) == 0) {
		const char *nm = i < n ? strrchr(ch[i]->path, '/') + 1 : NULL;
		if (nm == NULL) {
			snprintf(msg, sizeof(msg),
				 "extra entry \"%.*s\" "
				 "(directory \"%s\" has %zu children)",
				 (int)e->name_len, e->name, dir->path, n);
			break;
		}
		if (e->name_len != strlen(nm) ||
		    memcmp(e->name, nm, e->name_len) != 0 ||
		    e->kind != ch[i]->b->kind || e->type != ch[i]->b->type) {
			snprintf(msg, sizeof(msg),
				 "entry %zu is \"%.*s\" %s type %u, "
				 "expected \"%s\" %s type %u",
				 i, (int)e->name_len, e->name,
				 kindname(e->kind), e->type, nm,
				 kindname(ch[i]->b->kind), ch[i]->b->type);
			break;
		}
		cmp_id(c, "kt_iter_next", ch[i], e->id);
		i++;
	}
	kt_iter_free(it);
	if (msg[0] == '\0' && rc != KT_ITEROVER)
		snprintf(msg, sizeof(msg), "kt_iter_next: %s (%s)", rcname(rc),
			 kt_errmsg());
	if (msg[0] == '\0' && i != n)
		snprintf(msg, sizeof(msg),
			 "%zu entries, expected %zu; missing "
			 "\"%s\"",
			 i, n, ch[i]->path);
	if (msg[0] == '\0')
		cmp_page(c, path, ch, n);
	free(ch);
	if (msg[0] != '\0')
		model_mismatch(c, "kt_iter_new(\"%s\"): %s", path, msg);
}

static void cmp_attrs(mctx *c, const char *path, mnode *n)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	size_t i = 0;
	int rc;
	char h1[80], h2[80];

	rc = kt_attr_iter_new(&it, *c->store, path);
	if (rc != 0)
		expect_rc(c, "kt_attr_iter_new", path, 0, rc, NULL);
	while ((rc = kt_iter_next(&e, it)) == 0) {
		mattr *a = i < n->b->nattrs ? &n->b->attrs[i] : NULL;
		if (a == NULL || e->name_len != strlen(a->name) ||
		    memcmp(e->name, a->name, e->name_len) != 0 ||
		    e->value_len != a->len ||
		    (a->len && memcmp(e->value, a->val, a->len) != 0)) {
			char got[PBUF];
			snprintf(got, sizeof(got), "%.*s=[%s]",
				 (int)e->name_len, e->name,
				 hexs(h1, sizeof(h1), e->value, e->value_len));
			kt_iter_free(it);
			model_mismatch(c,
				 "kt_attr_iter_new(\"%s\"): attribute %zu is "
				 "%s, expected %s%s%s%s",
				 path, i, got, a ? a->name : "(none)",
				 a ? "=[" : "",
				 a ? hexs(h2, sizeof(h2), a->val, a->len) : "",
				 a ? "]" : "");
		}
		i++;
	}
	kt_iter_free(it);
	if (rc != KT_ITEROVER)
		expect_rc(c, "kt_iter_next (attributes)", path, KT_ITEROVER, rc,
			  NULL);
	if (i != n->b->nattrs)
		model_mismatch(c,
			 "kt_attr_iter_new(\"%s\"): %zu attributes, expected "
			 "%zu; missing \"%s\"",
			 path, i, n->b->nattrs, n->b->attrs[i].name);
}

/* Compare everything a reader can see at @p path. */
static void check_path(mctx *c, const char *path)
{
	kt_store *s = *c->store;
	kt_statbuf st;
	res rl, rf;
	int want, rc;
	char *t = NULL;
	void *v = NULL;
	size_t len = 0;
	char h1[80], h2[80];

	c->nchecks++;
	/* kt_lstat: the last component is not followed */
	m_resolve(c, path, 0, &rl);
	want = rl.rc ? rl.rc : rl.node ? 0 : KT_ENOTFOUND;
	memset(&st, 0, sizeof(st));
	rc = kt_lstat(&st, s, path);
	expect_rc(c, "kt_lstat", path, want, rc, &rl);
	if (rc == 0)
		cmp_stat(c, "kt_lstat", path, rl.node, &st);

	/* kt_stat: it is */
	m_resolve(c, path, 1, &rf);
	want = rf.rc ? rf.rc : rf.node ? 0 : KT_ENOTFOUND;
	memset(&st, 0, sizeof(st));
	rc = kt_stat(&st, s, path);
	expect_rc(c, "kt_stat", path, want, rc, &rf);
	if (rc == 0)
		cmp_stat(c, "kt_stat", path, rf.node, &st);

	/* kt_readlink */
	want = rl.rc				? rl.rc
	       : rl.node == NULL		? KT_ENOTFOUND
	       : (rl.node->b->kind & KT_KIND_LINK) ? 0
						: KT_EINVAL;
	rc = kt_readlink(&t, &len, s, path);
	expect_rc(c, "kt_readlink", path, want, rc, &rl);
	if (rc == 0 && (len != strlen(rl.node->b->target) ||
			strcmp(t, rl.node->b->target) != 0)) {
		char got[PBUF];
		snprintf(got, sizeof(got), "%s", t);
		kt_free(t);
		model_mismatch(c,
			 "kt_readlink(\"%s\"): \"%s\" (len %zu), expected "
			 "\"%s\"",
			 path, got, len, rl.node->b->target);
	}
	kt_free(t);

	/* kt_get */
	want = rf.rc				    ? rf.rc
	       : rf.node == NULL		    ? KT_ENOTFOUND
	       : (rf.node->b->kind & KT_KIND_ITEM)	    ? 0
	       : rf.node->b->kind == KT_KIND_SPECIAL ? KT_EINVAL
						    : KT_EISDIR;
	rc = kt_get(&v, &len, s, path);
	expect_rc(c, "kt_get", path, want, rc, &rf);
	if (rc == 0 && (len != rf.node->b->vlen ||
			(len && memcmp(v, rf.node->b->val, len) != 0) ||
			((char *)v)[len] != '\0')) {
		hexs(h1, sizeof(h1), v, len);
		kt_free(v);
		model_mismatch(c,
			 "kt_get(\"%s\"): value [%s] (len %zu), expected [%s] "
			 "(len %zu) of \"%s\"",
			 path, h1, len,
			 hexs(h2, sizeof(h2), rf.node->b->val, rf.node->b->vlen),
			 rf.node->b->vlen, rf.node->path);
	}
	kt_free(v);

	/* kt_iter_new: the listing */
	want = rf.rc			       ? rf.rc
	       : rf.node == NULL	       ? KT_ENOTFOUND
	       : (rf.node->b->kind & KT_KIND_DIR) ? 0
					       : KT_ENOTDIR;
	if (want == 0) {
		cmp_listing(c, path, rf.node);
	} else {
		kt_iter *it = NULL;
		rc = kt_iter_new(&it, s, path, NULL);
		kt_iter_free(it);
		expect_rc(c, "kt_iter_new", path, want, rc, &rf);
	}

	/* kt_attr_iter_new */
	want = rf.rc ? rf.rc : rf.node == NULL ? KT_ENOTFOUND : 0;
	if (want == 0) {
		cmp_attrs(c, path, rf.node);
	} else {
		kt_iter *it = NULL;
		rc = kt_attr_iter_new(&it, s, path);
		kt_iter_free(it);
		expect_rc(c, "kt_attr_iter_new", path, want, rc, &rf);
	}
}

/* Does kt_find_new(@p prefix) without KT_FIND_SUBTREE find @p path?  Its
 * path starts with the prefix at a component start.  With typed names a
 * last component of the prefix that is a number or a UUID matches that
 * name only, and any other matches only other names. */
static int find_in(const mctx *c, const char *path, const char *prefix,
		   size_t pl)
{
	const char *last = strrchr(prefix, '/') + 1, *comp, *end;
	unsigned long long v;
	int pc;

	if (strncmp(path, prefix, pl) != 0 || strcmp(path, "/") == 0)
		return 0;
	if (!c->cfg.typed_names || *last == '\0')
		return 1;
	/* The component of path that the prefix's last one begins. */
	comp = path + (last - prefix);
	end = strchr(comp, '/');
	if (end == NULL)
		end = comp + strlen(comp);
	pc = tclass(last, strlen(last), &v);
	if (pc != 2)
		return (size_t)(end - comp) == strlen(last);
	return tclass(comp, (size_t)(end - comp), &v) == 2;
}

/* kt_find_new(@p prefix, @p flags) against the model: the same set of
 * nodes (real paths), kinds and ids, each parent before its descendants.
 * @p prefix is a real path whose parent is a directory.  Two finds in
 * three are read in pages of 1 to 5 entries (kt_find_opts_new, each page
 * resuming after the last name of the one before), which must add up to
 * the same. */
static void cmp_find(mctx *c, const char *prefix, unsigned int flags)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	kt_find_options o = KT_FIND_OPTIONS_INIT;
	char p[PBUF], pp[PBUF], desc[PBUF + 96], last[PBUF];
	size_t i, pl = strlen(prefix), got;
	int rc;

	c->epoch++;
	o.flags = flags;
	o.limit = c->epoch % 3 == 0 ? 0 : 1 + c->epoch % 5;
	snprintf(desc, sizeof(desc), "kt_find_new(\"%s\", %s%s) in pages of "
		 "%zu", prefix, flags & KT_FIND_SUBTREE ? "SUBTREE " : "",
		 flags & KT_FIND_ITEMS ? "ITEMS" : "", o.limit);
page:
	rc = kt_find_opts_new(&it, *c->store, prefix, &o);
	if (rc != 0)
		expect_rc(c, desc, prefix, 0, rc, NULL);
	got = 0;
	while ((rc = kt_iter_next(&e, it)) == 0) {
		mnode *mn, *pn;
		unsigned int k = e->kind;
		uint64_t id = e->id;
		must(e->name_len < PBUF);
		memcpy(p, e->name, e->name_len);
		p[e->name_len] = '\0';
		mn = m_find(&c->m, p);
		if (mn == NULL || mn->mark == c->epoch) {
			kt_iter_free(it);
			model_mismatch(c, "%s: %s node \"%s\"", desc,
				 mn ? "repeated" : "unexpected", p);
		}
		if (strcmp(p, "/") != 0) {
			parent_of(pp, p);
			pn = m_find(&c->m, pp);
			if (pn != NULL && pn->mark != c->epoch &&
			    (strcmp(pp, prefix) == 0 || is_under(pp, prefix)) &&
			    !(flags & KT_FIND_ITEMS)) {
				kt_iter_free(it);
				model_mismatch(c, "%s: \"%s\" came before its parent",
					 desc, p);
			}
		}
		mn->mark = c->epoch;
		if (k != mn->b->kind) {
			kt_iter_free(it);
			model_mismatch(c, "%s: \"%s\" is %s, expected %s", desc, p,
				 kindname(k), kindname(mn->b->kind));
		}
		cmp_id(c, "kt_find_new", mn, id);
		memcpy(last, p, strlen(p) + 1);
		got++;
	}
	kt_iter_free(it);
	it = NULL;
	if (rc != KT_ITEROVER)
		expect_rc(c, desc, prefix, KT_ITEROVER, rc, NULL);
	if (o.limit > 0 && got == o.limit) {
		o.after = last;
		goto page;
	}
	for (i = 0; i < c->m.n; i++) {
		mnode *mn = c->m.v[i];
		int in;
		if (flags & KT_FIND_SUBTREE)
			in = strcmp(mn->path, prefix) == 0 ||
			     is_under(mn->path, prefix);
		else
			in = find_in(c, mn->path, prefix, pl);
		if ((flags & KT_FIND_ITEMS) && !(mn->b->kind & KT_KIND_ITEM))
			in = 0;
		if (in != (mn->mark == c->epoch))
			model_mismatch(c, "%s: %s \"%s\"", desc,
				 in ? "missing" : "unexpected", mn->path);
	}
}

static int check_cb(const char *what, void *payload)
{
	(void)payload;
	fprintf(stderr, "kt_check: %s\n", what);
	return 0;
}

/* kt_stats against the model: a node with several paths counts once, its
 * paths beyond the first as aliases. */
static void cmp_stats(mctx *c)
{
	kt_store_stats st, want;
	size_t i;
	int rc;

	memset(&st, 0, sizeof(st));
	memset(&want, 0, sizeof(want));
	for (i = 0; i < c->m.n; i++) {
		const mnode *n = c->m.v[i];
		const mobj *b = n->b;
		if (other_path(c, b, NULL) != n) {
			want.aliases++;
			continue;
		}
		want.items += (b->kind & KT_KIND_ITEM) != 0;
		want.dirs += (b->kind & KT_KIND_DIR) != 0;
		want.links += (b->kind & KT_KIND_LINK) != 0;
		want.specials += b->kind == KT_KIND_SPECIAL;
		want.value_bytes += (b->kind & KT_KIND_ITEM) ? b->vlen : 0;
		want.attrs += b->nattrs;
	}
	rc = kt_stats(&st, *c->store);
	if (rc != 0)
		expect_rc(c, "kt_stats", "", 0, rc, NULL);
	if (st.items != want.items || st.dirs != want.dirs ||
	    st.links != want.links || st.specials != want.specials ||
	    st.value_bytes != want.value_bytes || st.attrs != want.attrs ||
	    st.aliases != want.aliases)
		model_mismatch(c,
			 "kt_stats: items %llu dirs %llu links %llu specials "
			 "%llu value_bytes %llu attrs %llu aliases %llu, "
			 "expected %llu %llu %llu %llu %llu %llu %llu",
			 (unsigned long long)st.items,
			 (unsigned long long)st.dirs,
			 (unsigned long long)st.links,
			 (unsigned long long)st.specials,
			 (unsigned long long)st.value_bytes,
			 (unsigned long long)st.attrs,
			 (unsigned long long)st.aliases,
			 (unsigned long long)want.items,
			 (unsigned long long)want.dirs,
			 (unsigned long long)want.links,
			 (unsigned long long)want.specials,
			 (unsigned long long)want.value_bytes,
			 (unsigned long long)want.attrs,
			 (unsigned long long)want.aliases);
}

/* Compare the whole tree: kt_find_new over "/", every node in detail, ids
 * unique, kt_stats, and kt_check clean. */
static void check_all(mctx *c)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	size_t n = 0, i, bad = 0;
	uint64_t *ids;
	char p[PBUF], pp[PBUF];
	int rc;

	c->epoch++;
	m_find(&c->m, "/")->mark = c->epoch;
	rc = kt_find_new(&it, *c->store, "/", 0);
	if (rc != 0)
		expect_rc(c, "kt_find_new", "/", 0, rc, NULL);
	while ((rc = kt_iter_next(&e, it)) == 0) {
		mnode *mn, *pn;
		must(e->name_len < PBUF);
		memcpy(p, e->name, e->name_len);
		p[e->name_len] = '\0';
		mn = m_find(&c->m, p);
		if (mn == NULL || mn->mark == c->epoch || strcmp(p, "/") == 0) {
			kt_iter_free(it);
			model_mismatch(c, "kt_find_new(\"/\"): %s node \"%s\"",
				 mn ? "repeated" : "unexpected", p);
		}
		parent_of(pp, p);
		pn = m_find(&c->m, pp);
		if (pn != NULL && pn->mark != c->epoch) {
			kt_iter_free(it);
			model_mismatch(c,
				 "kt_find_new(\"/\"): \"%s\" came before its "
				 "parent",
				 p);
		}
		if (e->kind != mn->b->kind || e->type != mn->b->type) {
			unsigned int k = e->kind, t = e->type;
			kt_iter_free(it);
			model_mismatch(c,
				 "kt_find_new(\"/\"): \"%s\" is %s type %u, "
				 "expected %s type %u",
				 p, kindname(k), t, kindname(mn->b->kind),
				 mn->b->type);
		}
		cmp_id(c, "kt_find_new", mn, e->id);
		mn->mark = c->epoch;
		n++;
	}
	kt_iter_free(it);
	if (rc != KT_ITEROVER)
		expect_rc(c, "kt_iter_next (find)", "/", KT_ITEROVER, rc, NULL);
	for (i = 0; i < c->m.n; i++)
		if (c->m.v[i]->mark != c->epoch)
			model_mismatch(c,
				 "kt_find_new(\"/\"): %zu nodes, expected %zu; "
				 "missing \"%s\"",
				 n, c->m.n - 1, c->m.v[i]->path);

	for (i = 0; i < c->m.n; i++)
		check_path(c, c->m.v[i]->path);

	/* one id per node: the paths of a node share it, and only they */
	ids = malloc(c->m.n * sizeof(*ids));
	must_nn(ids);
	for (i = 0; i < c->m.n; i++)
		ids[i] = c->m.v[i]->b->id;
	for (i = 0; i < c->m.n; i++) {
		size_t k;
		for (k = i + 1; k < c->m.n; k++)
			if ((ids[i] == ids[k]) !=
			    (c->m.v[i]->b == c->m.v[k]->b)) {
				free(ids);
				model_mismatch(c,
					 "\"%s\" has id %llu and \"%s\" id "
					 "%llu, but they are %s",
					 c->m.v[i]->path,
					 (unsigned long long)c->m.v[i]->b->id,
					 c->m.v[k]->path,
					 (unsigned long long)c->m.v[k]->b->id,
					 c->m.v[i]->b == c->m.v[k]->b
						 ? "paths of one node"
						 : "different nodes");
			}
	}
	free(ids);

	/* every node's id leads back to its path (one of its paths), and to
	 * its metadata */
	for (i = 0; i < c->m.n; i++) {
		mnode *mn = c->m.v[i], *ipn;
		kt_statbuf st;
		char *ip = NULL;
		size_t il = 0;
		rc = kt_id_path(&ip, &il, *c->store, mn->b->id);
		ipn = rc == 0 && il == strlen(ip) ? m_find(&c->m, ip) : NULL;
		if (ipn == NULL || ipn->b != mn->b) {
			char got[PBUF];
			snprintf(got, sizeof(got), "%s", rc == 0 ? ip : "");
			kt_free(ip);
			model_mismatch(c, "kt_id_path(%llu): %s \"%s\" %s, expected "
				 "\"%s\"%s", (unsigned long long)mn->b->id,
				 rcname(rc), rc ? kt_errmsg() : got,
				 ipn ? "(another node)" : "",
				 mn->path, mn->b->nlink > 1
				 ? " or another path of it" : "");
		}
		kt_free(ip);
		rc = kt_id_lstat(&st, NULL, NULL, *c->store, mn->b->id);
		if (rc != 0)
			expect_rc(c, "kt_id_lstat", mn->path, 0, rc, NULL);
		cmp_stat(c, "kt_id_lstat", mn->path, mn, &st);
		if (mn->b->kind & KT_KIND_ITEM) {
			/* the value by id: its last up to 64 bytes */
			unsigned char b[64];
			size_t got = 0, want = mn->b->vlen < 64 ? mn->b->vlen : 64;
			uint64_t at = mn->b->vlen - want;
			rc = kt_id_read(&got, *c->store, mn->b->id, b, 64, at);
			if (rc != 0 || got != want ||
			    (want > 0 && memcmp(b, mn->b->val + at, want) != 0))
				model_mismatch(c, "kt_id_read(%llu) of \"%s\": %s, "
					 "%zu bytes at %llu, expected %zu",
					 (unsigned long long)mn->b->id, mn->path,
					 rcname(rc), got,
					 (unsigned long long)at, want);
		} else if (mn->b->kind == KT_KIND_SPECIAL) {
			unsigned char b[8];
			size_t got = 0;
			rc = kt_id_read(&got, *c->store, mn->b->id, b, 8, 0);
			if (rc != KT_EINVAL)
				model_mismatch(c, "kt_id_read(%llu) of special file "
					 "\"%s\": %s, expected KT_EINVAL",
					 (unsigned long long)mn->b->id, mn->path,
					 rcname(rc));
		}
	}

	/* a random directory: its subtree, and the nodes whose paths start
	 * with it plus a name (so "/a" finds "/ab" too), all of them or
	 * only items */
	cmp_find(c, "/", KT_FIND_ITEMS);
	for (i = 0; i < 4; i++) {
		mnode *d = c->m.v[rn(c, (unsigned int)c->m.n)];
		if (!(d->b->kind & KT_KIND_DIR))
			continue;
		if (strcmp(d->path, "/") != 0)
			cmp_find(c, d->path,
				 i % 2 ? KT_FIND_ITEMS | KT_FIND_SUBTREE
				       : KT_FIND_SUBTREE);
		join(p, d->path, c->names[rn(c, c->nnames)]);
		cmp_find(c, p, i % 2 ? KT_FIND_ITEMS : 0);
	}

	cmp_stats(c);

	{
		kt_check_options co = KT_CHECK_OPTIONS_INIT;

		co.on_violation = check_cb;
		rc = kt_check(&bad, *c->store, &co);
	}
	if (rc != 0 || bad != 0)
		model_mismatch(c, "kt_check: %s (%s), %zu violations", rcname(rc),
			 rc ? kt_errmsg() : "", bad);
}


/* ------------------------------------------------------------------------
 * The source of choices */

/* splitmix64 */
static uint64_t prng_next(mctx *c)
{
	uint64_t z = (c->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* From the bytes: one byte for up to 256 choices, two for more; past the
 * end every choice is 0. */
static unsigned int bytes_next(mctx *c, unsigned int n)
{
	unsigned int v = 0, k = n > 256 ? 2 : 1;

	if (n <= 1)
		return 0;
	if (c->inlen < k) {
		c->exhausted = 1;
		c->inlen = 0;
		return 0;
	}
	while (k-- > 0) {
		v = v << 8 | *c->in++;
		c->inlen--;
	}
	return v % n;
}

static unsigned int rn(mctx *c, unsigned int n)
{
	if (c->from_bytes)
		return bytes_next(c, n);
	return (unsigned int)(prng_next(c) % n);
}

static void model_value_bytes(mctx *c, unsigned char *v, size_t n)
{
	size_t i;
	uint32_t x;

	if (!c->from_bytes) {
		for (i = 0; i < n; i++)
			v[i] = (unsigned char)rn(c, 256);
		return;
	}
	/* xorshift32 seeded by one byte: a large value costs one byte */
	x = 0x9e3779b9u ^ rn(c, 256);
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		v[i] = (unsigned char)x;
	}
}

unsigned int model_choose(mctx *c, unsigned int n)
{
	return rn(c, n);
}

void model_use_prng(mctx *c, uint64_t seed)
{
	c->from_bytes = 0;
	c->seed = c->rng = seed;
	c->exhausted = 0;
}

void model_use_bytes(mctx *c, const uint8_t *in, size_t len)
{
	c->from_bytes = 1;
	c->in = in;
	c->inlen = len;
	c->exhausted = 0;
}

/* ------------------------------------------------------------------------
 * The driver */

const char *const model_op_names[OP__COUNT] = {
	"put",	    "mkdir",	   "symlink", "delete", "rename",
	"attr_set", "attr_delete", "mknod",   "link",	"write",
	"truncate", "setattr",	   "batch"};

typedef struct snap {
	int lrc, src;
	uint64_t lver, sver;
} snap;

static void take_snap(mctx *c, snap *sn, size_t n)
{
	size_t i;
	kt_statbuf st;

	for (i = 0; i < n; i++) {
		sn[i].lrc = kt_lstat(&st, *c->store, c->checks.v[i]);
		sn[i].lver = sn[i].lrc == 0 ? st.version : 0;
		sn[i].src = kt_stat(&st, *c->store, c->checks.v[i]);
		sn[i].sver = sn[i].src == 0 ? st.version : 0;
	}
}

/* Paths the step is about: its arguments, their parents, what they
 * resolve to and the parents of that. */
static void add_checks(mctx *c, const char *path)
{
	char p[PBUF];
	res r;
	int follow;

	sl_push_unique(&c->checks, path);
	if (path_err(path) != 0 || strcmp(path, "/") == 0)
		return;
	parent_of(p, path);
	sl_push_unique(&c->checks, p);
	for (follow = 0; follow < 2; follow++) {
		if (m_resolve(c, path, follow, &r) != 0 || r.path[0] == '\0')
			continue;
		sl_push_unique(&c->checks, r.path);
		if (strcmp(r.path, "/") != 0) {
			parent_of(p, r.path);
			sl_push_unique(&c->checks, p);
		}
	}
}

/* add_checks() for the paths of @p o (a batch: of each operation). */
static void add_op_checks(mctx *c, const model_op *o)
{
	size_t i;

	if (o->type == OP_BATCH) {
		for (i = 0; i < c->nsub; i++)
			add_op_checks(c, &c->sub[i]);
		return;
	}
	add_checks(c, o->p1);
	if (o->type == OP_RENAME || o->type == OP_LINK)
		add_checks(c, o->p2);
}

/* The message of a failed operation names its path (a failed batch also
 * the number of the operation, counted from 1). */
static void check_errmsg(mctx *c, const model_op *o)
{
	const char *msg = kt_errmsg();
	char num[32] = "";

	if (o->type == OP_BATCH) {
		o = &c->sub[c->bad_sub];
		snprintf(num, sizeof(num), "%zu", c->bad_sub + 1);
	}
	if (msg[0] == '\0')
		model_mismatch(c, "failed but kt_errmsg() is empty");
	if (strstr(msg, num) == NULL)
		model_mismatch(c,
			       "kt_errmsg() '%s' does not say that operation "
			       "%s failed",
			       msg, num);
	if (strstr(msg, o->p1) == NULL &&
	    ((o->type != OP_RENAME && o->type != OP_LINK) ||
	     strstr(msg, o->p2) == NULL))
		model_mismatch(c, "kt_errmsg() '%s' does not name \"%s\"", msg,
			       o->p1);
}

/* A rejected operation writes nothing: the paths snapshot in @p sn before
 * it show the same codes and versions now. */
static void check_unchanged(mctx *c, int rc, const snap *sn, size_t nsnap)
{
	snap after[32];
	size_t i;

	take_snap(c, after, nsnap);
	for (i = 0; i < nsnap; i++)
		if (sn[i].lrc != after[i].lrc || sn[i].lver != after[i].lver ||
		    sn[i].src != after[i].src || sn[i].sver != after[i].sver)
			model_mismatch(
				c,
				"rejected with %s but \"%s\" changed: lstat "
				"%s version %llu -> %s %llu, stat %s version "
				"%llu -> %s %llu",
				rcname(rc), c->checks.v[i], rcname(sn[i].lrc),
				(unsigned long long)sn[i].lver,
				rcname(after[i].lrc),
				(unsigned long long)after[i].lver,
				rcname(sn[i].src),
				(unsigned long long)sn[i].sver,
				rcname(after[i].src),
				(unsigned long long)after[i].sver);
}

void model_do_op(mctx *c, const char *const *extra, size_t nextra)
{
	model_op *o = &c->o;
	snap sn[32];
	int want, got;
	size_t i, nsnap, nal;

	describe(c, o);
	sl_clear(&c->checks);
	sl_clear(&c->touched);
	add_op_checks(c, o);
	for (i = 0; i < nextra; i++)
		sl_push_unique(&c->checks, extra[i]);
	nsnap = c->checks.n < 32 ? c->checks.n : 32;
	take_snap(c, sn, nsnap);

	want = model_apply(c, o);
	got = model_store_apply(c, o);
	c->last_rc = want;
	if (c->cfg.log != NULL) {
		fprintf(c->cfg.log, "step %lu: %s = %s\n", c->step, c->desc,
			rcname(want));
		fflush(c->cfg.log);
	}
	c->count[o->type][-want < NRC ? -want : NRC - 1]++;
	if (got != want)
		model_mismatch(c, "expected %s, got %s (%s)", rcname(want),
			       rcname(got), got < 0 ? kt_errmsg() : "");
	if (got < 0) {
		check_errmsg(c, o);
		check_unchanged(c, got, sn, nsnap);
	}
	for (i = 0; i < c->touched.n; i++)
		sl_push_unique(&c->checks, c->touched.v[i]);
	if (want == 0 && (o->type == OP_RENAME || o->type == OP_BATCH))
		add_op_checks(c, o); /* the paths moved: look at them again */
	for (i = 0; i < c->checks.n; i++)
		check_path(c, c->checks.v[i]);
	if (c->m.n > c->max_nodes)
		c->max_nodes = c->m.n;
	/* aliases: the paths of each node beyond its first */
	for (i = 0, nal = 0; i < c->m.n; i++)
		if (c->m.v[i]->b->nlink > 1 &&
		    other_path(c, c->m.v[i]->b, NULL) != c->m.v[i])
			nal++;
	if (nal > c->max_aliases)
		c->max_aliases = nal;
}

/* Whether @p o may stand in a batch: valid paths and arguments (a bad
 * path could be refused when recorded or when committed), and a batch
 * form (write and truncate have none). */
static int batchable(const model_op *o)
{
	return path_err(o->p1) == 0 && strcmp(o->p1, "/") != 0 &&
	       !((o->type == OP_RENAME || o->type == OP_LINK) &&
		 path_err(o->p2) != 0) &&
	       strcmp(o->aname, anames[NANAMES - 1]) != 0 &&
	       !(o->type == OP_SYMLINK && o->p2[0] == '\0') &&
	       o->type != OP_WRITE && o->type != OP_TRUNCATE &&
	       !(o->type == OP_MKNOD && mknod_args_bad(o));
}

/* c->sub and c->nsub: a batch of valid operations. */
static void gen_batch(mctx *c)
{
	char p[PBUF];
	size_t i;

	c->o.type = OP_BATCH;
	c->nsub = 2 + rn(c, 3);
	for (i = 0; i < c->nsub; i++) {
		model_op *o = &c->sub[i];
		do
			gen_op(c, o);
		while (!c->exhausted && !batchable(o));
		/* past the end of the bytes the same invalid choice would
		 * come forever: end the batch here */
		if (c->exhausted) {
			c->nsub = i;
			break;
		}
		/* puts mostly succeed, so that whole batches do */
		if (rn(c, 2) && o->type != OP_PUT) {
			o->type = OP_PUT;
			o->flags = 0;
			rand_value(c, o);
		}
		/* act on what the operation before made (or moved away, or
		 * below it) */
		if (i > 0 && rn(c, 2) == 0) {
			const model_op *b = &c->sub[i - 1];
			int two = o->type == OP_RENAME || o->type == OP_LINK;
			char *to = rn(c, 2) && two ? o->p2 : o->p1;
			strcpy(p, (b->type == OP_RENAME || b->type == OP_LINK) &&
					  rn(c, 3)
				       ? b->p2
				       : b->p1);
			if (rn(c, 3) == 0 && strlen(p) + 16 < PBUF) {
				strcat(p, "/");
				strcat(p, c->names[rn(c, c->nnames)]);
			}
			strcpy(to, p);
		}
	}
}

void model_step(mctx *c)
{
	char p1[PBUF], p2[PBUF];
	const char *const extra[2] = {p1, p2};

	if (rn(c, 100) < 5)
		gen_batch(c);
	else
		gen_op(c, &c->o);
	pick_path(c, p1);
	pick_path(c, p2);
	model_do_op(c, extra, 2);
}

void model_end_step(mctx *c)
{
	size_t i;

	for (i = 0; i < c->step_versions.cap; i++)
		if (c->step_versions.v[i] != 0)
			u64_add(&c->versions, c->step_versions.v[i]);
	if (c->step_versions.has_zero)
		c->versions.has_zero = 1;
	if (c->step_versions.n > 0 || c->step_versions.has_zero) {
		memset(c->step_versions.v, 0,
		       c->step_versions.cap * sizeof(*c->step_versions.v));
		c->step_versions.n = 0;
		c->step_versions.has_zero = 0;
	}
}

void model_reopen(mctx *c)
{
	char *before, *after;
	int rc;

	must_nn(c->cfg.digest);
	before = c->cfg.digest(*c->store);
	kt_close(*c->store);
	*c->store = NULL;
	rc = kt_open(c->store, c->cfg.path, NULL);
	if (rc != 0) {
		free(before);
		model_mismatch(c, "reopen of \"%s\": %s (%s)", c->cfg.path,
			       rcname(rc), kt_errmsg());
	}
	after = c->cfg.digest(*c->store);
	if (strcmp(before, after) != 0) {
		free(before);
		free(after);
		model_mismatch(c, "the store differs after close and reopen");
	}
	free(before);
	free(after);
	check_path(c, "/");
}

void model_run(mctx *c, unsigned long nsteps)
{
	unsigned long every = c->cfg.reopen_every;

	for (c->step = 0; c->step < nsteps && !c->exhausted; c->step++) {
		model_step(c);
		if (c->cfg.check_every > 0 &&
		    (c->step + 1) % c->cfg.check_every == 0)
			check_all(c);
		if (every > 0 && c->step % every == every / 2)
			model_reopen(c);
		if (c->cfg.reopen_chance > 0 &&
		    rn(c, c->cfg.reopen_chance) == 0)
			model_reopen(c);
		model_end_step(c);
	}
	snprintf(c->desc, sizeof(c->desc), "(final comparison)");
	check_all(c);
}

void model_retune(mctx *c)
{
	if (c->cfg.typed_names) {
		c->names = tnames;
		c->nnames = c->cfg.delimiter_names ? TNAMES_ALL : TNAMES_PLAIN;
	} else {
		c->names = names;
		c->nnames = c->cfg.delimiter_names ? NNAMES_ALL : NNAMES_PLAIN;
	}
}

mctx *model_new(const model_config *cfg)
{
	mctx *c = calloc(1, sizeof(*c));
	mnode *root;
	size_t i;

	if (c == NULL)
		return NULL;
	c->cfg = *cfg;
	c->store = cfg->store;
	model_retune(c);
	model_use_prng(c, cfg->seed);
	c->o.val = malloc(BIGVAL);
	must_nn(c->o.val);
	for (i = 0; i < 4; i++) {
		c->sub[i].val = malloc(BIGVAL);
		must_nn(c->sub[i].val);
	}
	root = m_new(&c->m, "/", KT_KIND_DIR);
	root->b->vstate = V_KNOWN;
	check_path(c, "/");
	return c;
}

void model_free(mctx *c)
{
	size_t i;

	if (c == NULL)
		return;
	while (c->m.n > 0)
		m_remove_subtree(&c->m, c->m.v[c->m.n - 1]->path);
	free(c->m.v);
	sl_free(&c->plan);
	sl_free(&c->touched);
	sl_free(&c->checks);
	free(c->versions.v);
	free(c->step_versions.v);
	free(c->o.val);
	for (i = 0; i < 4; i++)
		free(c->sub[i].val);
	free(c);
}

void model_check_all(mctx *c)
{
	check_all(c);
}

void model_describe(mctx *c, const model_op *o)
{
	describe(c, o);
}

mnode *model_find(mctx *c, const char *path)
{
	return m_find(&c->m, path);
}

const char *model_rcname(int rc)
{
	return rcname(rc);
}

void model_gen_op(mctx *c, model_op *o)
{
	gen_op(c, o);
}

const char *const *model_attr_names(size_t *n)
{
	*n = NANAMES;
	return anames;
}
