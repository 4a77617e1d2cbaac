/*
 * orphan.c - items unlinked while still in use.  An orphan is a node row
 * moved out of the tree into partition "/orphan", keyed by its id; its value
 * blocks and attributes, keyed by id already, stay where they are.  So a
 * detach is one atomic batch (index row and node row out, orphan row in),
 * and the value operations of value.c work on orphans unchanged.
 *
 * Every change runs through the operation runner kt__tx_run(), like the
 * tree's own operations: arguments are checked first, then the work runs
 * as a function of the transaction, which the runner reruns from the start
 * when another process changed what it read.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"

#define SHOW(buf, s) kt__show(buf, sizeof(buf), (s), strlen(s))

static kt__slice orphan_part(void)
{
	return kt__sl(KT__PART_ORPHAN, strlen(KT__PART_ORPHAN));
}

static int orphan_get(kt__node *n, kt__rd *rd, uint64_t id)
{
	unsigned char k[8];
	kt__buf v = {0};
	int rc;

	kt__put64be(k, id);
	rc = kt__rd_get(rd, orphan_part(), kt__sl(k, 8), &v);
	if (rc == KT_ENOTFOUND)
		rc = kt__err(KT_ENOTFOUND, "no orphan with id %llu",
			     (unsigned long long)id);
	else if (rc == 0)
		rc = kt__node_decode(n, v.p, v.len);
	kt__buf_free(&v);
	return rc;
}

static int orphan_put(kt__tx *tx, kt__node *n)
{
	unsigned char k[8];
	kt__buf v = {0};
	int rc;

	if ((rc = kt__tx_version(tx, &n->version)) != 0)
		return rc;
	kt__put64be(k, n->id);
	rc = kt__node_encode(&v, n);
	if (rc == 0)
		rc = kt__tx_put(tx, orphan_part(), kt__sl(k, 8), kt__slb(&v));
	kt__buf_free(&v);
	return rc;
}

static int writable(kt_store *st, const char *op)
{
	if (st == NULL)
		return kt__err(KT_EINVAL, "%s: store is NULL", op);
	if (st->read_only)
		return kt__err(KT_EREADONLY, "%s: the store was opened "
			       "read-only", op);
	return 0;
}

/* Operations run through kt__tx_run(), which may run them more than once:
 * each reads its inputs from its argument struct, leaves them unchanged,
 * and sets its outputs there afresh on every run.  The caller copies the
 * outputs out only once the runner has committed. */

typedef struct detach_args {
	const char *path;
	uint64_t dir;   /* with path "/NAME": the child NAME of dir */
	uint64_t if_id; /* with dir: the node there must have this id */
	uint64_t id;    /* out */
} detach_args;

/* Take the item at a->path out of the tree, into the orphans. */
static int detach_fn(kt__tx *tx, void *arg)
{
	size_t eat = 0;
	detach_args *a = arg;
	kt_store *st = tx->st;
	kt__rd rd = {st, tx, NULL};
	kt__res r;
	kt__buf part = {0}, at = {0};
	const char *path = a->path;
	char s[KT__SHOWSZ];
	int rc;

	a->id = 0;
	if (a->dir != 0) {
		if ((rc = kt__at_path(&at, tx, a->dir, a->path)) != 0) {
			kt__buf_free(&at);
			return rc;
		}
		path = at.p;
	}
	rc = kt__resolve(&r, &rd, path, 0, "orphan_detach");
	if (rc != 0) {
		kt__buf_free(&at);
		return rc;
	}
	if (!r.exists)
		rc = kt__err(KT_ENOTFOUND, "orphan_detach '%s': no such node",
			     SHOW(s, path));
	else if (a->dir != 0 && r.node.id != a->if_id)
		rc = kt__err(KT_ECONFLICT, "orphan_detach '%s': the node "
			     "there has id %llu, not %llu", SHOW(s, path),
			     (unsigned long long)r.node.id,
			     (unsigned long long)a->if_id);
	else if (r.node.kind == KT_KIND_LINK || r.node.kind == KT_KIND_SPECIAL)
		rc = kt__err(KT_EINVAL, "orphan_detach '%s': %s is not an "
			     "item", SHOW(s, path), kt__node_noun(&r.node));
	else if (r.node.kind != KT_KIND_ITEM)
		rc = kt__err(KT_EISDIR, "orphan_detach '%s': a directory "
			     "cannot be detached", SHOW(s, path));
	else if (r.node.nlink > 1)
		rc = kt__err(KT_EPERM, "orphan_detach '%s': the item has %u "
			     "paths; delete this one instead",
			     SHOW(s, path), (unsigned)r.node.nlink);
	if (rc != 0)
		goto out;
	/* Out of the tree (index row first), into the orphans. */
	rc = kt__enc_entry(&part, &eat, &st->delim, r.path.p, r.path.len);
	if (rc == 0)
		rc = kt__tx_del(tx, kt__sl(part.p, eat),
				kt__sl(part.p + eat, part.len - eat));
	part.len = 0;
	if (rc == 0)
		rc = kt__enc_node(&part, &st->delim, r.path.p, r.path.len);
	if (rc == 0)
		rc = kt__tx_del(tx, kt__slb(&part), kt__sl("", 0));
	if (rc == 0)
		rc = kt__id_del(tx, r.node.id);
	if (rc == 0) {
		r.node.ctime = tx->now;
		rc = orphan_put(tx, &r.node);
	}
	if (rc == 0)
		rc = kt__parent_touch(tx, r.path.p, r.path.len, 0, -1);
	if (rc == 0)
		a->id = r.node.id;
out:
	kt__res_free(&r);
	kt__buf_free(&part);
	kt__buf_free(&at);
	return rc;
}

int kt_orphan_detach(uint64_t *id, kt_store *st, const char *path)
{
	detach_args a = {path, 0, 0, 0};
	int rc;

	if (id == NULL)
		return kt__err(KT_EINVAL, "orphan_detach: id is NULL");
	*id = 0;
	if ((rc = writable(st, "orphan_detach")) != 0 ||
	    (rc = kt__path_check(&st->delim, path, "orphan_detach")) != 0)
		return rc;
	if ((rc = kt__tx_run(st, detach_fn, &a)) == 0)
		*id = a.id;
	return rc;
}

typedef struct new_args {
	const kt_create_options *opts;
	uint64_t id; /* out */
} new_args;

/* Make an empty item that is an orphan from the start. */
static int new_fn(kt__tx *tx, void *arg)
{
	new_args *a = arg;
	const kt_create_options *o = a->opts;
	kt_store *st = tx->st;
	kt__node n = {0};
	int rc;

	a->id = 0;
	n.kind = KT_KIND_ITEM;
	n.mode = o && (o->flags & KT_CREATE_MODE) ? o->mode : 0644;
	n.uid = o && (o->flags & KT_CREATE_OWNER) ? o->uid : st->euid;
	n.gid = o && (o->flags & KT_CREATE_OWNER) ? o->gid : st->egid;
	n.atime = n.mtime = n.ctime = tx->now;
	rc = kt__tx_alloc_id(tx, &n.id);
	if (rc == 0)
		rc = orphan_put(tx, &n);
	if (rc == 0)
		a->id = n.id;
	kt__node_free(&n);
	return rc;
}

int kt_orphan_new(uint64_t *id, kt_store *st, const kt_create_options *opts)
{
	new_args a = {opts, 0};
	int rc;

	if (id == NULL)
		return kt__err(KT_EINVAL, "orphan_new: id is NULL");
	*id = 0;
	if ((rc = writable(st, "orphan_new")) != 0)
		return rc;
	if (opts != NULL && opts->version != KT_CREATE_OPTIONS_VERSION)
		return kt__err(KT_EINVAL, "orphan_new: create options version "
			       "%u, expected %u", opts->version,
			       KT_CREATE_OPTIONS_VERSION);
	if (opts != NULL && (opts->flags & ~(KT_CREATE_MODE |
					     KT_CREATE_OWNER)))
		return kt__err(KT_EINVAL, "orphan_new: only KT_CREATE_MODE and "
			       "KT_CREATE_OWNER apply (flags 0x%x)",
			       opts->flags);
	if (opts != NULL && (opts->flags & KT_CREATE_MODE) &&
	    opts->mode > 07777)
		return kt__err(KT_EINVAL, "orphan_new: mode %o has bits beyond "
			       "07777", (unsigned)opts->mode);
	if ((rc = kt__tx_run(st, new_fn, &a)) == 0)
		*id = a.id;
	return rc;
}

typedef struct link_args {
	uint64_t id;
	const char *path;
} link_args;

/* Put orphan a->id back into the tree at a->path. */
static int link_fn(kt__tx *tx, void *arg)
{
	const link_args *a = arg;
	kt__rd rd = {tx->st, tx, NULL};
	kt__res r;
	kt__node n = {0};
	unsigned char k[8];
	char s[KT__SHOWSZ];
	int rc;

	if ((rc = orphan_get(&n, &rd, a->id)) != 0)
		goto out_node;
	rc = kt__resolve(&r, &rd, a->path, KT__R_CREATE, "orphan_link");
	if (rc != 0)
		goto out_node;
	if (r.exists)
		rc = kt__err(KT_EEXISTS, "orphan_link '%s': something already "
			     "exists there", SHOW(s, a->path));
	/* Out of the orphans, into the tree under its own id: node row, id
	 * row, then the index row that makes it visible. */
	kt__put64be(k, a->id);
	if (rc == 0)
		rc = kt__tx_del(tx, orphan_part(), kt__sl(k, 8));
	if (rc == 0) {
		n.ctime = tx->now;
		rc = kt__node_put(tx, r.path.p, r.path.len, &n);
	}
	if (rc == 0)
		rc = kt__id_put(tx, n.id, r.path.p, r.path.len);
	if (rc == 0)
		rc = kt__index_put(tx, r.path.p, r.path.len, &n);
	if (rc == 0)
		rc = kt__parent_touch(tx, r.path.p, r.path.len, 0, +1);
	kt__res_free(&r);
out_node:
	kt__node_free(&n);
	return rc;
}

int kt_orphan_link(kt_store *st, uint64_t id, const char *path)
{
	link_args a = {id, path};
	int rc;

	if ((rc = writable(st, "orphan_link")) != 0 ||
	    (rc = kt__path_check(&st->delim, path, "orphan_link")) != 0)
		return rc;
	return kt__tx_run(st, link_fn, &a);
}

/* Copy every row of partition @p from to partition @p to. */
static int copy_part(kt__tx *tx, const char *from, const char *to)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	int rc;

	memset(&how, 0, sizeof(how));
	how.part = kt__sl(from, strlen(from));
	if ((rc = kt__rd_scan(&c, &rd, &how)) != 0)
		return rc;
	while ((rc = kt__mcur_next(c, &row)) == 0)
		if ((rc = kt__tx_put(tx, kt__sl(to, strlen(to)), row.sort,
				     row.value)) != 0)
			break;
	kt__mcur_free(c);
	return rc == KT_ITEROVER ? 0 : rc;
}

typedef struct copy_args {
	const char *path;
	uint64_t from;     /* path NULL: the node with this id */
	unsigned int drop; /* KT_DELETE_ITEM: drop its value in the step */
	uint64_t id;       /* out */
} copy_args;

/* Make an orphan holding a copy of the value and attributes of the item
 * at a->path. */
static int copy_fn(kt__tx *tx, void *arg)
{
	copy_args *a = arg;
	const char *path = a->path;
	kt__buf at = {0};
	kt_store *st = tx->st;
	kt__rd rd = {st, tx, NULL};
	kt__res r;
	kt__node n = {0};
	char s[KT__SHOWSZ], from[32], to[32];
	uint64_t old;
	int rc;

	a->id = 0;
	if (a->path == NULL) {
		if ((rc = kt__at_path(&at, tx, a->from, NULL)) != 0) {
			kt__buf_free(&at);
			return rc;
		}
		path = at.p;
	}
	rc = kt__resolve(&r, &rd, path, 0, "orphan_copy");
	kt__buf_free(&at);
	if (rc != 0)
		return rc;
	if (!r.exists)
		rc = kt__err(KT_ENOTFOUND, "orphan_copy '%s': no such node",
			     SHOW(s, a->path ? a->path : "(by id)"));
	else if (r.node.kind == KT_KIND_LINK || r.node.kind == KT_KIND_SPECIAL)
		rc = kt__err(KT_EINVAL, "orphan_copy '%s': %s is not an item",
			     SHOW(s, a->path ? a->path : "(by id)"), kt__node_noun(&r.node));
	else if (!(r.node.kind & KT_KIND_ITEM))
		rc = kt__err(KT_EISDIR, "orphan_copy '%s': a directory "
			     "without a value", SHOW(s, a->path ? a->path : "(by id)"));
	if (rc != 0)
		goto out;
	n = r.node;
	memset(&r.node, 0, sizeof(r.node)); /* n owns the payload */
	old = n.id;
	n.kind = KT_KIND_ITEM;
	n.nsubdirs = 0;
	n.nlink = 1; /* a new node, of no path yet */
	n.ctime = tx->now;
	rc = kt__tx_alloc_id(tx, &n.id);
	/* Blocks and attributes are keyed by id: copy them under the new
	 * one as they are stored, so holes (absent rows) stay holes. */
	if (rc == 0 && !kt__node_inline(st, &n)) {
		kt__part_blk(from, old);
		kt__part_blk(to, n.id);
		rc = copy_part(tx, from, to);
	}
	if (rc == 0 && n.nattrs > 0) {
		kt__part_attr(from, old);
		kt__part_attr(to, n.id);
		rc = copy_part(tx, from, to);
	}
	if (rc == 0)
		rc = orphan_put(tx, &n);
	if (rc == 0 && a->drop) {
		kt__op op;

		memset(&op, 0, sizeof(op));
		op.type = KT__OP_DELETE;
		op.at = old;
		op.flags = KT_DELETE_ITEM;
		rc = kt__op_apply(tx, &op);
	}
	if (rc == 0)
		a->id = n.id;
out:
	kt__res_free(&r);
	kt__node_free(&n);
	return rc;
}

int kt_orphan_copy(uint64_t *id, kt_store *st, const char *path)
{
	copy_args a = {path, 0, 0, 0};
	int rc;

	if (id == NULL)
		return kt__err(KT_EINVAL, "orphan_copy: id is NULL");
	*id = 0;
	if ((rc = writable(st, "orphan_copy")) != 0 ||
	    (rc = kt__path_check(&st->delim, path, "orphan_copy")) != 0)
		return rc;
	if ((rc = kt__tx_run(st, copy_fn, &a)) == 0)
		*id = a.id;
	return rc;
}

int kt_orphan_stat(kt_statbuf *sb, kt_store *st, uint64_t id)
{
	unsigned int attempt = 0;
	kt__node n = {0};
	kt__rd rd;
	int rc;

	if (sb == NULL || st == NULL)
		return kt__err(KT_EINVAL, "orphan_stat: NULL argument");
	do {
		memset(sb, 0, sizeof(*sb));
		if ((rc = kt__rd_begin(&rd, st)) == 0)
			rc = orphan_get(&n, &rd, id);
		if (rc == 0)
			kt__node_fill_stat(sb, st, &n);
		kt__node_free(&n);
		memset(&n, 0, sizeof(n));
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0)
		memset(sb, 0, sizeof(*sb));
	return rc;
}

int kt_orphan_read(size_t *nread, kt_store *st, uint64_t id, void *buf,
		   size_t len, uint64_t offset)
{
	unsigned int attempt = 0;
	kt__node n = {0};
	kt__rd rd;
	int rc;

	if (nread == NULL || st == NULL || (buf == NULL && len > 0))
		return kt__err(KT_EINVAL, "orphan_read: NULL argument");
	do {
		*nread = 0;
		if ((rc = kt__rd_begin_snap(&rd, st)) == 0)
			rc = orphan_get(&n, &rd, id);
		if (rc == 0)
			rc = kt__value_read(&rd, &n, buf, len, offset, nread);
		kt__node_free(&n);
		memset(&n, 0, sizeof(n));
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0)
		*nread = 0;
	return rc;
}

enum { OW_WRITE, OW_TRUNCATE, OW_SETATTR, OW_RELEASE };

static const char *const change_names[] = {
	"orphan_write", "orphan_truncate", "orphan_setattr", "orphan_release"};

/* What orphan_change does: its inputs, never changed by a run. */
typedef struct change_args {
	uint64_t id;
	int what;
	const void *buf;
	size_t len;
	uint64_t off; /* OW_WRITE: offset or KT_APPEND; OW_TRUNCATE: size */
	const kt_setattr_args *sa;
} change_args;

/* Load orphan a->id, change it, store it back (or drop it). */
static int change_fn(kt__tx *tx, void *arg)
{
	const change_args *a = arg;
	kt__rd rd = {tx->st, tx, NULL};
	kt__node n = {0};
	unsigned char k[8];
	uint64_t off = a->off;
	const kt_setattr_args *sa = a->sa;
	int rc;

	if ((rc = orphan_get(&n, &rd, a->id)) != 0)
		goto out;
	switch (a->what) {
	case OW_WRITE:
		if (off == KT_APPEND)
			off = n.size;
		if (off > KT_VALUE_MAX || a->len > KT_VALUE_MAX - off)
			rc = kt__err(KT_ETOOBIG, "orphan_write: orphan %llu "
				     "would exceed the value limit",
				     (unsigned long long)a->id);
		else
			rc = kt__value_write(tx, &n, a->buf, a->len, off);
		n.mtime = n.ctime = tx->now;
		break;
	case OW_TRUNCATE:
		rc = kt__value_truncate(tx, &n, off);
		n.mtime = n.ctime = tx->now;
		break;
	case OW_SETATTR:
		if (sa->mask & KT_SET_MODE)
			n.mode = sa->mode & 07777;
		if (sa->mask & KT_SET_UID)
			n.uid = sa->uid;
		if (sa->mask & KT_SET_GID)
			n.gid = sa->gid;
		if (sa->mask & KT_SET_ATIME)
			n.atime = sa->atime_ns;
		if (sa->mask & KT_SET_ATIME_NOW)
			n.atime = tx->now;
		if (sa->mask & KT_SET_MTIME)
			n.mtime = sa->mtime_ns;
		if (sa->mask & KT_SET_MTIME_NOW)
			n.mtime = tx->now;
		n.ctime = tx->now;
		break;
	case OW_RELEASE:
		rc = kt__node_drop_data(tx, &n);
		kt__put64be(k, a->id);
		if (rc == 0)
			rc = kt__tx_del(tx, orphan_part(), kt__sl(k, 8));
		break;
	}
	if (rc == 0 && a->what != OW_RELEASE)
		rc = orphan_put(tx, &n);
out:
	kt__node_free(&n);
	return rc;
}

/* Validate, then run change_fn. */
static int orphan_change(kt_store *st, uint64_t id, int what,
			 const void *buf, size_t len, uint64_t off,
			 const kt_setattr_args *sa)
{
	const char *name = change_names[what];
	change_args a = {id, what, buf, len, off, sa};
	int rc;

	if ((rc = writable(st, name)) != 0)
		return rc;
	if ((what == OW_WRITE && off != KT_APPEND &&
	     (off > KT_VALUE_MAX || len > KT_VALUE_MAX - off)) ||
	    (what == OW_TRUNCATE && off > KT_VALUE_MAX))
		return kt__err(KT_ETOOBIG, "%s: orphan %llu would exceed the "
			       "value limit", name, (unsigned long long)id);
	if (what == OW_WRITE && buf == NULL && len > 0)
		return kt__err(KT_EINVAL, "orphan_write: buf is NULL");
	return kt__tx_run(st, change_fn, &a);
}

int kt_orphan_write(kt_store *st, uint64_t id, const void *buf, size_t len,
		    uint64_t offset)
{
	return orphan_change(st, id, OW_WRITE, buf, len, offset, NULL);
}

int kt_orphan_truncate(kt_store *st, uint64_t id, uint64_t size)
{
	return orphan_change(st, id, OW_TRUNCATE, NULL, 0, size, NULL);
}

int kt_orphan_setattr(kt_store *st, uint64_t id, const kt_setattr_args *sa)
{
	if (sa == NULL)
		return kt__err(KT_EINVAL, "orphan_setattr: args is NULL");
	if (sa->version != KT_SETATTR_ARGS_VERSION)
		return kt__err(KT_EINVAL, "orphan_setattr: args version %u, "
			       "expected %d", sa->version,
			       KT_SETATTR_ARGS_VERSION);
	if (sa->mask & ~0x7fu)
		return kt__err(KT_EINVAL, "orphan_setattr: unknown mask bits "
			       "0x%x", sa->mask);
	if ((sa->mask & KT_SET_MODE) && sa->mode > 07777)
		return kt__err(KT_EINVAL, "orphan_setattr: mode %o has bits "
			       "beyond 07777", (unsigned)sa->mode);
	return orphan_change(st, id, OW_SETATTR, NULL, 0, 0, sa);
}

int kt_orphan_release(kt_store *st, uint64_t id)
{
	return orphan_change(st, id, OW_RELEASE, NULL, 0, 0, NULL);
}

int kt__orphans_drop_all(kt_store *st)
{
	kt__rd rd = {st, NULL, NULL};
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	uint64_t *ids = NULL;
	size_t n = 0, cap = 0, i;
	int rc;

	memset(&how, 0, sizeof(how));
	how.part = orphan_part();
	if ((rc = kt__rd_scan(&c, &rd, &how)) != 0)
		return rc;
	while ((rc = kt__mcur_next(c, &row)) == 0) {
		if (row.sort.len != 8)
			continue;
		if (n == cap) {
			uint64_t *ni;
			cap = cap ? cap * 2 : 16;
			ni = realloc(ids, cap * sizeof(*ni));
			if (ni == NULL) {
				rc = kt__err(KT_ENOMEM, "out of memory");
				break;
			}
			ids = ni;
		}
		ids[n++] = kt__get64be((const unsigned char *)row.sort.p);
	}
	kt__mcur_free(c);
	if (rc == KT_ITEROVER)
		rc = 0;
	for (i = 0; i < n && rc == 0; i++)
		rc = kt_orphan_release(st, ids[i]);
	free(ids);
	return rc;
}

int kt_orphan_detach_at(kt_store *st, uint64_t dir, const char *name,
			uint64_t id)
{
	char s[KT__SHOWSZ], *rel = NULL;
	detach_args a = {NULL, dir, id, 0};
	size_t n;
	int rc;

	if ((rc = writable(st, "orphan_detach_at")) != 0)
		return rc;
	if (name == NULL || name[0] == '\0' || strchr(name, '/') != NULL ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return kt__err(KT_EINVAL, "orphan_detach_at: '%s' is not a "
			       "name", name ? SHOW(s, name) : "(null)");
	if (id == 0)
		return kt__err(KT_EINVAL, "orphan_detach_at: id 0 names no "
			       "node");
	n = strlen(name);
	if ((rel = malloc(n + 2)) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	rel[0] = '/';
	memcpy(rel + 1, name, n + 1);
	a.path = rel;
	if ((rc = kt__path_check(&st->delim, rel, "orphan_detach_at")) == 0)
		rc = kt__tx_run(st, detach_fn, &a);
	free(rel);
	return rc;
}

int kt_orphan_copy_id(uint64_t *orphan, kt_store *st, uint64_t id,
		      unsigned int flags)
{
	copy_args a = {NULL, id, flags, 0};
	int rc;

	if (orphan == NULL)
		return kt__err(KT_EINVAL, "orphan_copy_id: orphan is NULL");
	*orphan = 0;
	if ((rc = writable(st, "orphan_copy_id")) != 0)
		return rc;
	if (flags & ~KT_DELETE_ITEM)
		return kt__err(KT_EINVAL, "orphan_copy_id: unknown flags 0x%x",
			       flags);
	if ((rc = kt__tx_run(st, copy_fn, &a)) == 0)
		*orphan = a.id;
	return rc;
}
