/*
 * lock.c - advisory locks kept in the store (kt_lock_set, kt_lock_test):
 * the checks of the public calls, and what an owner's locks on one node
 * are, whichever engine keeps them: a list of ranges, each shared or
 * exclusive, changed the way POSIX record locks are (a new lock replaces
 * what the owner held under it; ranges split and merge), and its encoding
 * (rows.h, kt__lkent).  Where the entries live, who may change them and
 * what happens to the locks of a client that died is the engine's part
 * (rows_rados.c, "Locks").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree.h"

#define LK_FMT 1

void kt__lk_key(char out[KT__LKKEY_MAX], uint64_t inst, uint64_t owner,
		int whole)
{
	snprintf(out, KT__LKKEY_MAX, "o%016" PRIx64 ".%016" PRIx64 "%c", inst,
		 owner, whole ? 'w' : 'r');
}

static int hex16(const char *p, uint64_t *out)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 16; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint64_t)(c - 'a' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

void kt__lk_free(kt__lkent *e)
{
	free(e->r);
	memset(e, 0, sizeof(*e));
}

static int lk_room(kt__lkent *e, size_t n)
{
	kt__lkrange *r;
	size_t cap;

	if (n <= e->cap)
		return 0;
	cap = e->cap ? e->cap : 4;
	while (cap < n)
		cap *= 2;
	if ((r = realloc(e->r, cap * sizeof(*r))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	e->r = r;
	e->cap = cap;
	return 0;
}

int kt__lk_dec(kt__lkent *e, const char *k, size_t kl, const char *v,
	       size_t vl, const char *where)
{
	const unsigned char *p = (const unsigned char *)v;
	size_t alen, i, n;

	memset(e, 0, sizeof(*e));
	if (kl != 35 || k[0] != 'o' || k[17] != '.' ||
	    (k[34] != 'w' && k[34] != 'r') || hex16(k + 1, &e->inst) != 0 ||
	    hex16(k + 18, &e->owner) != 0)
		return kt__err(KT_ECORRUPT, "lock object '%s': a key that is "
			       "not a lock owner's", where);
	e->whole = k[34] == 'w';
	if (vl < 7 || p[0] != LK_FMT)
		goto bad;
	e->pid = kt__get32(p + 1);
	alen = (size_t)p[5] | (size_t)p[6] << 8;
	if (alen >= sizeof(e->addr) || vl < 7 + alen + 4)
		goto bad;
	memcpy(e->addr, p + 7, alen);
	e->addr[alen] = '\0';
	p += 7 + alen;
	n = kt__get32(p);
	p += 4;
	if (vl != 7 + alen + 4 + n * 17)
		goto bad;
	if (lk_room(e, n) != 0)
		return KT_ENOMEM;
	for (i = 0; i < n; i++, p += 17) {
		kt__lkrange *r = &e->r[i];
		r->start = kt__get64(p);
		r->end = kt__get64(p + 8);
		r->type = p[16];
		if (r->end < r->start ||
		    (r->type != KT_LOCK_SHARED && r->type != KT_LOCK_EXCL) ||
		    (i > 0 && r->start <= e->r[i - 1].end))
			goto bad;
	}
	e->n = n;
	return 0;
bad:
	kt__lk_free(e);
	return kt__err(KT_ECORRUPT, "lock object '%s': the entry of owner "
		       "%.35s does not decode", where, k);
}

int kt__lk_enc(kt__buf *out, const kt__lkent *e)
{
	size_t alen = strlen(e->addr), i;
	unsigned char h[7], r[17];
	int rc;

	h[0] = LK_FMT;
	kt__put32(h + 1, e->pid);
	h[5] = (unsigned char)alen;
	h[6] = (unsigned char)(alen >> 8);
	out->len = 0;
	if ((rc = kt__buf_add(out, h, 7)) != 0 ||
	    (rc = kt__buf_add(out, e->addr, alen)) != 0)
		return rc;
	kt__put32(r, (uint32_t)e->n);
	if ((rc = kt__buf_add(out, r, 4)) != 0)
		return rc;
	for (i = 0; i < e->n; i++) {
		kt__put64(r, e->r[i].start);
		kt__put64(r + 8, e->r[i].end);
		r[16] = (unsigned char)e->r[i].type;
		if ((rc = kt__buf_add(out, r, 17)) != 0)
			return rc;
	}
	return 0;
}

const kt__lkrange *kt__lk_conflict(const kt__lkent *e, int type,
				   uint64_t start, uint64_t end)
{
	size_t i;

	if (type == KT_LOCK_UNLOCK)
		return NULL;
	for (i = 0; i < e->n; i++) {
		const kt__lkrange *r = &e->r[i];
		if (r->start <= end && start <= r->end &&
		    (type == KT_LOCK_EXCL || r->type == KT_LOCK_EXCL))
			return r;
	}
	return NULL;
}

int kt__lk_apply(kt__lkent *e, int type, uint64_t start, uint64_t end)
{
	kt__lkrange *r;
	size_t i, j = 0, n;

	/* At most one range is split in two, and one more is added. */
	if ((r = malloc((e->n + 2) * sizeof(*r))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	/* What lies before start, the new lock, what lies after end: the
	 * ranges are sorted and disjoint, so this keeps them so. */
	for (i = 0; i < e->n; i++) {
		if (e->r[i].start < start) {
			r[j] = e->r[i];
			if (r[j].end >= start)
				r[j].end = start - 1;
			j++;
		}
	}
	if (type != KT_LOCK_UNLOCK) {
		r[j].start = start;
		r[j].end = end;
		r[j++].type = type;
	}
	for (i = 0; i < e->n; i++) {
		if (e->r[i].end > end) {
			r[j] = e->r[i];
			if (r[j].start <= end)
				r[j].start = end + 1;
			j++;
		}
	}
	/* Merge neighbours of one type that touch. */
	n = j;
	for (i = 0, j = 0; i < n; i++) {
		if (j > 0 && r[j - 1].type == r[i].type &&
		    r[j - 1].end + 1 == r[i].start)
			r[j - 1].end = r[i].end;
		else
			r[j++] = r[i];
	}
	e->cap = e->n + 2;
	free(e->r);
	e->r = r;
	e->n = j;
	return 0;
}

static int lk_check(kt_store *st, const kt_lock *lk, unsigned int flags,
		    const char *what)
{
	if (st == NULL || lk == NULL)
		return kt__err(KT_EINVAL, "%s: %s is NULL", what,
			       st == NULL ? "store" : "lock");
	if ((flags & ~KT_LOCK_WHOLE) != 0)
		return kt__err(KT_EINVAL, "%s: unknown flags 0x%x", what,
			       flags & ~KT_LOCK_WHOLE);
	if (lk->type != KT_LOCK_UNLOCK && lk->type != KT_LOCK_SHARED &&
	    lk->type != KT_LOCK_EXCL)
		return kt__err(KT_EINVAL, "%s: lock type %d is none of "
			       "KT_LOCK_UNLOCK, KT_LOCK_SHARED, KT_LOCK_EXCL",
			       what, lk->type);
	if (!(flags & KT_LOCK_WHOLE) && lk->end < lk->start)
		return kt__err(KT_EINVAL, "%s: the range ends (%" PRIu64
			       ") before it starts (%" PRIu64 ")", what,
			       lk->end, lk->start);
#ifdef KT_HAVE_RADOS
	if (st->rados)
		return 0;
#endif
	return kt__err(KT_ENOTSUP, "%s: locks kept in the store need a "
		       "RADOS tree (a directory store is on one host, where "
		       "the kernel's locks serve)", what);
}

int kt_lock_set(kt_store *st, uint64_t id, const kt_lock *lk,
		unsigned int flags)
{
	kt_lock l;
	int rc;

	if ((rc = lk_check(st, lk, flags, "lock")) != 0)
		return rc;
	l = *lk;
	if (flags & KT_LOCK_WHOLE) {
		l.start = 0;
		l.end = UINT64_MAX;
	}
#ifdef KT_HAVE_RADOS
	return kt__rados_lock(st->rows, id, &l, flags, 0);
#else
	(void)id;
	return KT_ENOTSUP;
#endif
}

int kt_lock_test(kt_store *st, uint64_t id, kt_lock *lk, unsigned int flags)
{
	int rc;

	if ((rc = lk_check(st, lk, flags, "lock test")) != 0)
		return rc;
	if (flags & KT_LOCK_WHOLE) {
		lk->start = 0;
		lk->end = UINT64_MAX;
	}
#ifdef KT_HAVE_RADOS
	return kt__rados_lock(st->rows, id, lk, flags, 1);
#else
	(void)id;
	return KT_ENOTSUP;
#endif
}
