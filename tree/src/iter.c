/*
 * iter.c - listings: the children of a directory (one ordered scan of its
 * index partition, paged by name), every node under a path prefix (one
 * ordered scan of a range of partitions), and a node's attributes.  Each
 * iterator reads a snapshot taken when it is made, so concurrent writers
 * neither add nor remove entries under it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tree.h"

#define SHOW(buf, s) kt__show(buf, sizeof(buf), (s), strlen(s))

enum { IT_LIST, IT_FIND, IT_ATTR };

/* KT_LIST_STAT: children taken from the cursor ahead of the caller, so
 * that their node rows can be read meanwhile (the engine's prefetch). */
#define STAT_AHEAD 32

typedef struct ahead {
	size_t at, len; /* its name in the iterator's ahnames */
	unsigned int kind, type;
	uint64_t id;
} ahead;

struct kt_iter {
	kt_store *st;
	int type;
	kt__snap *snap;
	kt__mcur *cur;
	size_t limit;    /* 0: none */
	size_t count;
	unsigned int flags; /* find flags */
	kt__buf name;    /* current entry's name or path */
	kt__buf pre;     /* find: the partition prefix scanned */
	size_t name_off; /* find: bytes of pre that are whole components */
	kt__buf self;    /* find SUBTREE: the node itself, reported first */
	kt__buf tok;     /* find: the partition of opts->after */
	int self_pending;
	kt_entry e;
	int over;
	unsigned int lflags; /* KT_LIST_* */
	ahead *ah;           /* KT_LIST_STAT: STAT_AHEAD of them */
	kt__buf ahnames;     /* ...and their names, one after another */
	size_t nah, ahat;    /* filled, and handed out */
	int far;             /* KT_LIST_STAT: the last child read was a
				directory, or has many rows of its own */
	kt__buf npart;       /* a child's node partition */
	kt__buf nrow;        /* ...its node row, and decoded: kept from */
	kt__node node;       /* entry to entry, with their buffers */
	kt_statbuf sb;
};

static int iter_alloc(kt_iter **out, kt_store *st, int type)
{
	kt_iter *it = calloc(1, sizeof(*it));
	int rc;

	*out = NULL;
	if (it == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	it->st = st;
	it->type = type;
	rc = st->rows->ops->snapshot(&it->snap, st->rows);
	if (rc != 0) {
		free(it);
		return rc;
	}
	*out = it;
	return 0;
}

void kt_iter_free(kt_iter *it)
{
	if (it == NULL)
		return;
	kt__mcur_free(it->cur);
	if (it->snap != NULL)
		it->st->rows->ops->snapshot_free(it->st->rows, it->snap);
	kt__buf_free(&it->name);
	kt__buf_free(&it->pre);
	kt__buf_free(&it->self);
	kt__buf_free(&it->tok);
	kt__buf_free(&it->npart);
	kt__buf_free(&it->nrow);
	kt__node_free(&it->node);
	kt__buf_free(&it->ahnames);
	free(it->ah);
	free(it);
}

static int start_scan(kt_iter *it, const kt__scan *how)
{
	kt__rd rd = {it->st, NULL, it->snap};

	return kt__rd_scan(&it->cur, &rd, how);
}

/* Resolve a directory for listing, under the iterator's snapshot. */
static int open_node(kt__res *r, kt_iter *it, const char *path,
		     unsigned int rflags, const char *op)
{
	kt__rd rd = {it->st, NULL, it->snap};
	char a[KT__SHOWSZ];
	int rc;

	if ((rc = kt__path_check(&it->st->delim, path, op)) != 0)
		return rc;
	rc = kt__resolve(r, &rd, path, rflags, op);
	if (rc == 0 && !r->exists) {
		kt__res_free(r);
		rc = kt__err(KT_ENOTFOUND, "%s '%s': no such node", op,
			     SHOW(a, path));
	}
	return rc;
}

static int iter_new_once(kt_iter **out, kt_store *st, const char *path,
			 const kt_list_options *opts)
{
	char a[KT__SHOWSZ];
	kt_iter *it = NULL;
	kt__scan how;
	kt__res r;
	int rc;

	if (out == NULL || st == NULL)
		return kt__err(KT_EINVAL, "list: NULL argument");
	*out = NULL;
	if (opts != NULL && opts->version != KT_LIST_OPTIONS_VERSION &&
	    opts->version != 1)
		return kt__err(KT_EINVAL, "list: options version %u, expected "
			       "%d", opts->version, KT_LIST_OPTIONS_VERSION);
	if (opts != NULL && opts->after == NULL && opts->after_len > 0)
		return kt__err(KT_EINVAL, "list: after is NULL");
	/* Version 1 ends before flags. */
	if (opts != NULL && opts->version >= 2 &&
	    (opts->flags & ~KT_LIST_STAT) != 0)
		return kt__err(KT_EINVAL, "list: unknown flags 0x%x",
			       opts->flags & ~KT_LIST_STAT);
	if ((rc = iter_alloc(&it, st, IT_LIST)) != 0)
		return rc;
	if (opts != NULL && opts->version >= 2)
		it->lflags = opts->flags;
	if ((rc = open_node(&r, it, path, KT__R_FOLLOW, "list")) != 0) {
		kt_iter_free(it);
		return rc;
	}
	if (!(r.node.kind & KT_KIND_DIR)) {
		kt__res_free(&r);
		kt_iter_free(it);
		return kt__err(KT_ENOTDIR, "list '%s': not a directory",
			       SHOW(a, path));
	}
	rc = kt__enc_index(&it->pre, &st->delim, r.path.p, r.path.len);
	/* A directory that counts its entries and has none: nothing to
	 * scan (a scan would step over the tombstones of the entries just
	 * removed from it, as when `rm -rf` reads a directory it emptied).
	 * The count is written in the commit of every entry made or
	 * removed, so the snapshot that read it has no entry either. */
	it->over = r.node.counted && r.node.nentries == 0;
	kt__res_free(&r);
	memset(&how, 0, sizeof(how));
	how.part = kt__slb(&it->pre);
	if (opts != NULL) {
		it->limit = opts->limit;
		if (opts->reverse)
			how.flags |= KT__SCAN_REVERSE;
		/* Pages resume after a name in its row form (typed names:
		 * path.c); no name need exist there. */
		if (opts->after != NULL && rc == 0) {
			how.flags |= KT__SCAN_AFTER;
			/* An empty after is before every name, on every
			 * store: it has no row form. */
			if (opts->after_len > 0)
				rc = kt__name_enc(&it->tok, &st->delim,
						  opts->after,
						  opts->after_len);
			how.after = kt__slb(&it->tok);
		}
	}
	if (rc == 0 && !it->over)
		rc = start_scan(it, &how);
	if (rc != 0) {
		kt_iter_free(it);
		return rc;
	}
	*out = it;
	return 0;
}

int kt_find_new(kt_iter **out, kt_store *st, const char *prefix,
		unsigned int flags)
{
	kt_find_options o = KT_FIND_OPTIONS_INIT;

	o.flags = flags;
	return kt_find_opts_new(out, st, prefix, &o);
}

/* A find resumes after the partition of opts->after: check that it is a
 * path under the find's range, and keep its partition in it->tok. */
static int find_token(kt_iter *it, const char *after)
{
	char a[KT__SHOWSZ];
	kt__buf *t = &it->tok;
	int rc;

	if ((rc = kt__path_check(&it->st->delim, after, "find")) != 0)
		return rc;
	if ((rc = kt__enc_node(t, &it->st->delim, after, strlen(after))) != 0)
		return rc;
	if ((it->flags & KT_FIND_SUBTREE) && t->len == it->self.len &&
	    memcmp(t->p, it->self.p, t->len) == 0)
		return 0; /* the node itself: its descendants follow */
	if (t->len >= it->pre.len && memcmp(t->p, it->pre.p, it->pre.len) == 0)
		return 0;
	return kt__err(KT_EINVAL, "find: the continuation '%s' is not under "
		       "the prefix (a token of another find?)",
		       SHOW(a, after));
}

static int find_new_once(kt_iter **out, kt_store *st, const char *prefix,
		     const kt_find_options *opts)
{
	char a[KT__SHOWSZ];
	kt_iter *it = NULL;
	kt__scan how;
	kt__res r;
	size_t len, plen;
	unsigned int flags = opts != NULL ? opts->flags : 0;
	int rc;

	if (out == NULL || st == NULL || prefix == NULL)
		return kt__err(KT_EINVAL, "find: NULL argument");
	*out = NULL;
	if (opts != NULL && opts->version != KT_FIND_OPTIONS_VERSION)
		return kt__err(KT_EINVAL, "find: options version %u, expected "
			       "%d", opts->version, KT_FIND_OPTIONS_VERSION);
	if (flags & ~3u)
		return kt__err(KT_EINVAL, "find: unknown flags 0x%x", flags);
	if ((rc = kt__path_check(&st->delim, prefix, "find")) != 0)
		return rc;
	if ((rc = iter_alloc(&it, st, IT_FIND)) != 0)
		return rc;
	it->flags = flags;
	len = strlen(prefix);
	memset(&how, 0, sizeof(how));
	/* A find keeps node rows only: an engine may step over the index
	 * rows between them without handing each one up. */
	how.flags = KT__SCAN_PREFIX | KT__SCAN_NODES;
	if (len == 1) {
		/* Everything but the root. */
		rc = kt__buf_add(&it->pre, st->delim.s, st->delim.len);
		it->name_off = it->pre.len;
	} else {
		/* Resolve the parent (following links), then scan the
		 * partitions starting with parent||delim||lastname. */
		plen = kt__parent_len(prefix, len);
		rc = kt__buf_set(&it->name, plen ? prefix : "/",
				 plen ? plen : 1);
		if (rc == 0)
			rc = open_node(&r, it, it->name.p, KT__R_FOLLOW,
				       "find");
		if (rc == 0) {
			if (!(r.node.kind & KT_KIND_DIR))
				rc = kt__err(KT_ENOTDIR, "find '%s': the "
					     "parent is not a directory",
					     SHOW(a, prefix));
			if (rc == 0)
				rc = kt__enc_index(&it->pre, &st->delim,
						   r.path.p, r.path.len);
			it->name_off = it->pre.len;
			/* The last component in its row form: with typed
			 * names a number or a UUID matches itself only,
			 * any other prefix the other names it begins. */
			if (rc == 0)
				rc = kt__name_enc(&it->pre, &st->delim,
						  prefix + plen + 1,
						  len - plen - 1);
			if (rc == 0 && (flags & KT_FIND_SUBTREE)) {
				/* The node itself, then below it. */
				rc = kt__buf_set(&it->self, it->pre.p,
						 it->pre.len);
				it->self_pending = 1;
				if (rc == 0)
					rc = kt__buf_add(&it->pre,
							 st->delim.s,
							 st->delim.len);
			}
			kt__res_free(&r);
		}
	}
	how.part = kt__slb(&it->pre);
	if (rc == 0 && opts != NULL) {
		it->limit = opts->limit;
		if (opts->after != NULL && (rc = find_token(it, opts->after)) ==
						   0) {
			/* The node itself came first, on an earlier page. */
			it->self_pending = 0;
			how.flags |= KT__SCAN_AFTER;
			how.after = kt__slb(&it->tok);
		}
	}
	if (rc == 0)
		rc = start_scan(it, &how);
	if (rc != 0) {
		kt_iter_free(it);
		return rc;
	}
	*out = it;
	return 0;
}

static int attr_iter_new_once(kt_iter **out, kt_store *st,
			      const char *path)
{
	kt_iter *it = NULL;
	kt__scan how;
	kt__res r;
	char part[32];
	int rc;

	if (out == NULL || st == NULL)
		return kt__err(KT_EINVAL, "attr_list: NULL argument");
	*out = NULL;
	if ((rc = iter_alloc(&it, st, IT_ATTR)) != 0)
		return rc;
	if ((rc = open_node(&r, it, path, KT__R_FOLLOW, "attr_list")) != 0) {
		kt_iter_free(it);
		return rc;
	}
	kt__part_attr(part, r.node.id);
	kt__res_free(&r);
	rc = kt__buf_set(&it->pre, part, strlen(part));
	memset(&how, 0, sizeof(how));
	how.part = kt__slb(&it->pre);
	if (rc == 0)
		rc = start_scan(it, &how);
	if (rc != 0) {
		kt_iter_free(it);
		return rc;
	}
	*out = it;
	return 0;
}

int kt_id_attr_iter_new(kt_iter **out, kt_store *st, uint64_t id)
{
	kt__rd rd = {st, NULL, NULL};
	kt_iter *it = NULL;
	kt__buf part = {0};
	kt__scan how;
	char ap[32];
	int rc;

	if (out == NULL || st == NULL)
		return kt__err(KT_EINVAL, "id_attr_list: NULL argument");
	*out = NULL;
	if ((rc = iter_alloc(&it, st, IT_ATTR)) != 0)
		return rc;
	/* The node must be in the tree in the snapshot the listing reads. */
	rd.snap = it->snap;
	rc = kt__id_get(&part, &rd, id);
	kt__buf_free(&part);
	if (rc == KT_ENOTFOUND)
		rc = kt__err(KT_ENOTFOUND, "id_attr_list: no node has id %llu",
			     (unsigned long long)id);
	kt__part_attr(ap, id);
	if (rc == 0)
		rc = kt__buf_set(&it->pre, ap, strlen(ap));
	memset(&how, 0, sizeof(how));
	how.part = kt__slb(&it->pre);
	if (rc == 0)
		rc = start_scan(it, &how);
	if (rc != 0) {
		kt_iter_free(it);
		return rc;
	}
	*out = it;
	return 0;
}

/* Fill the entry for node row (part, value) found by a find scan. */
static int find_entry(kt_iter *it, kt__slice part, kt__slice value)
{
	kt__node n = {0};
	int rc;

	rc = kt__node_decode_hdr(&n, value.p, value.len);
	if (rc != 0)
		return rc;
	if ((it->flags & KT_FIND_ITEMS) && !(n.kind & KT_KIND_ITEM))
		return 1;
	it->name.len = 0;
	if ((rc = kt__dec_node(&it->name, &it->st->delim, part.p,
			       part.len)) != 0)
		return rc;
	it->e.name = it->name.p;
	it->e.name_len = it->name.len;
	it->e.kind = n.kind;
	it->e.id = n.id;
	it->e.value = NULL;
	it->e.value_len = 0;
	it->e.type = 0;
	if (n.kind == KT_KIND_SPECIAL &&
	    value.len == kt__node_hdr_len(value.p, value.len) +
				 KT__SPECIAL_LEN)
		it->e.type = (unsigned char)value.p[kt__node_hdr_len(
			value.p, value.len)];
	return 0;
}

/* A find scan of prefix P||D||x also meets partitions where x is followed
 * by the rest of the delimiter, i.e. where the last component does not
 * start with x but ends inside it.  Reject those: the component that
 * starts at name_off must contain x whole. */
static int find_accept(kt_iter *it, kt__slice part)
{
	const kt__delim *d = &it->st->delim;
	size_t i, xlen = it->pre.len - it->name_off;

	if (it->flags & KT_FIND_SUBTREE || xlen == 0)
		return 1;
	for (i = it->name_off; i + d->len <= it->name_off + xlen + d->len - 1 &&
			       i + d->len <= part.len;
	     i++)
		if (memcmp(part.p + i, d->s, d->len) == 0)
			return 0;
	return 1;
}

/* KT_LIST_STAT: take up to STAT_AHEAD children from the cursor, and ask
 * the engine to start reading their node rows.  KT_ITEROVER when there
 * are none left. */
static int ahead_fill(kt_iter *it)
{
	kt__rd rd = {it->st, NULL, it->snap};
	size_t want = STAT_AHEAD;
	kt__row row;
	int rc = 0;

	if (it->ah == NULL &&
	    (it->ah = calloc(STAT_AHEAD, sizeof(*it->ah))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	if (it->limit && it->limit - it->count < want)
		want = it->limit - it->count;
	it->nah = it->ahat = 0;
	it->ahnames.len = 0;
	while (it->nah < want && !it->over) {
		ahead *a = &it->ah[it->nah];
		rc = kt__mcur_next(it->cur, &row);
		if (rc == KT_ITEROVER) {
			it->over = 1;
			/* The node rows read next begin at the row
			 * past the partition's end, where the cursor
			 * stands. */
			kt__mcur_done(it->cur, &rd);
			rc = 0;
			break;
		}
		if (rc == 0)
			rc = kt__index_decode(&a->kind, &a->id, &a->type,
					      row.value.p, row.value.len);
		if (rc == 0) {
			a->at = it->ahnames.len;
			a->len = row.sort.len;
			rc = kt__buf_add(&it->ahnames, row.sort.p,
					 row.sort.len);
		}
		if (rc == 0 && (rc = kt__buf_set(&it->npart, it->pre.p,
						 it->pre.len)) == 0 &&
		    (rc = kt__buf_add(&it->npart, row.sort.p,
				      row.sort.len)) == 0)
			kt__rd_prefetch(&rd, kt__slb(&it->npart),
					kt__sl("", 0));
		if (rc != 0)
			return rc;
		it->nah++;
	}
	return it->nah > 0 ? 0 : KT_ITEROVER;
}

/* The next child with its metadata (KT_LIST_STAT). */
static int list_next_stat(const kt_entry **entry, kt_iter *it)
{
	kt__rd rd = {it->st, NULL, it->snap};
	kt__buf *v = &it->nrow;
	kt__node *n = &it->node;
	int rc;

	for (;;) {
		const char *name;
		ahead *a;
		if (it->ahat == it->nah && (rc = ahead_fill(it)) != 0)
			break;
		a = &it->ah[it->ahat++];
		name = it->ahnames.p + a->at;
		if ((rc = kt__buf_set(&it->npart, it->pre.p,
				      it->pre.len)) != 0 ||
		    (rc = kt__buf_add(&it->npart, name, a->len)) != 0)
			break;
		v->len = 0;
		/* In key order a child's node row follows the one before
		 * it, past only that one's own rows (attributes, value
		 * blocks), unless that one was a directory, whose subtree
		 * lies in between: then a lookup of its own. */
		if (it->far)
			rc = kt__rd_get(&rd, kt__slb(&it->npart),
					kt__sl("", 0), v);
		else
			rc = kt__rd_get_near(&rd, kt__slb(&it->npart),
					     kt__sl("", 0), v);
		if (rc == KT_ENOTFOUND)
			continue; /* gone since the directory was read */
		if (rc != 0)
			break;
		/* Every field but the payload's buffer, which is
		 * reused, is set by the decode. */
		rc = kt__node_decode(n, v->p, v->len);
		if (rc == 0) {
			kt__node_fill_stat(&it->sb, it->st, n);
			/* A listing is often followed by lookups of its
			 * children by id (a mount's opens and getattrs). */
			if (n->nlink <= 1)
				kt__idc_put(it->st, n->id, kt__slb(&it->npart));
			it->far = (n->kind & KT_KIND_DIR) ||
				  (uint64_t)n->nattrs + n->nblocks > 8;
		}
		if (rc != 0)
			break;
		it->name.len = 0;
		if ((rc = kt__name_dec(&it->name, &it->st->delim, name,
				       a->len)) != 0)
			break;
		/* The node row is the later read: where the two disagree
		 * (replaced in between, on an engine without one snapshot),
		 * the entry says what the node row says. */
		it->e.name = it->name.p;
		it->e.name_len = it->name.len;
		it->e.kind = it->sb.kind;
		it->e.id = it->sb.id;
		it->e.type = it->sb.type;
		it->e.stat = &it->sb;
		it->count++;
		*entry = &it->e;
		break;
	}
	return rc;
}

/* A reader whose snapshot was taken while a large rename or delete was
 * under way, and which reads into it, is told KT__ERETRY once that
 * operation is over (rows.h, fences): an iterator is then made again,
 * with a fresh snapshot.  Its reads after it is made stay outside any
 * fence that stood when it was made, or reach only rows no such
 * operation rewrites. */
int kt_iter_new(kt_iter **out, kt_store *st, const char *path,
		const kt_list_options *opts)
{
	int rc;

	while ((rc = iter_new_once(out, st, path, opts)) == KT__ERETRY)
		;
	return rc;
}

int kt_find_opts_new(kt_iter **out, kt_store *st, const char *prefix,
		     const kt_find_options *opts)
{
	int rc;

	while ((rc = find_new_once(out, st, prefix, opts)) == KT__ERETRY)
		;
	return rc;
}

int kt_attr_iter_new(kt_iter **out, kt_store *st, const char *path)
{
	int rc;

	while ((rc = attr_iter_new_once(out, st, path)) == KT__ERETRY)
		;
	return rc;
}

static int iter_next_once(const kt_entry **entry, kt_iter *it)
{
	kt__row row;
	int rc;

	if (entry == NULL || it == NULL)
		return kt__err(KT_EINVAL, "iter_next: NULL argument");
	*entry = NULL;
	if (it->over && it->ahat < it->nah)
		return list_next_stat(entry, it);
	if (it->over || (it->limit && it->count >= it->limit))
		return KT_ITEROVER;
	if (it->lflags & KT_LIST_STAT)
		return list_next_stat(entry, it);
	if (it->self_pending) {
		kt__rd rd = {it->st, NULL, it->snap};
		kt__buf v = {0};
		it->self_pending = 0;
		rc = kt__rd_get(&rd, kt__slb(&it->self), kt__sl("", 0), &v);
		if (rc == 0) {
			rc = find_entry(it, kt__slb(&it->self), kt__slb(&v));
			kt__buf_free(&v);
			if (rc == 0) {
				it->count++; /* a page's limit counts it */
				*entry = &it->e;
				return 0;
			}
			if (rc < 0)
				return rc;
		} else {
			kt__buf_free(&v);
			if (rc != KT_ENOTFOUND)
				return rc;
		}
	}
	for (;;) {
		rc = kt__mcur_next(it->cur, &row);
		if (rc == KT_ITEROVER)
			it->over = 1;
		if (rc != 0)
			return rc;
		switch (it->type) {
		case IT_LIST:
			rc = kt__index_decode(&it->e.kind, &it->e.id,
					      &it->e.type, row.value.p,
					      row.value.len);
			if (rc != 0)
				return rc;
			it->name.len = 0;
			if ((rc = kt__name_dec(&it->name, &it->st->delim,
					       row.sort.p, row.sort.len)) != 0)
				return rc;
			it->e.name = it->name.p;
			it->e.name_len = it->name.len;
			break;
		case IT_FIND:
			if (row.sort.len != 0 || !find_accept(it, row.part))
				continue;
			rc = find_entry(it, row.part, row.value);
			if (rc < 0)
				return rc;
			if (rc > 0)
				continue;
			break;
		case IT_ATTR:
			if ((rc = kt__buf_set(&it->name, row.sort.p,
					      row.sort.len)) != 0)
				return rc;
			it->e.name = it->name.p;
			it->e.name_len = it->name.len;
			it->e.kind = 0;
			it->e.id = 0;
			it->e.type = 0;
			it->e.value = row.value.p;
			it->e.value_len = row.value.len;
			break;
		}
		it->count++;
		*entry = &it->e;
		return 0;
	}
}

int kt_iter_next(const kt_entry **entry, kt_iter *it)
{
	int rc = iter_next_once(entry, it);

	/* Not expected (see kt_iter_new), but never a private code. */
	if (rc == KT__ERETRY)
		rc = kt__err(KT_EBUSY, "the listing met a large rename or "
			     "delete made after it began: list again");
	return rc;
}
