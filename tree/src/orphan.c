/*
 * orphan.c - items unlinked while still in use.  An orphan is a node row
 * moved out of the tree into partition "/orphan", keyed by its id; its value
 * blocks and attributes, keyed by id already, stay where they are.  So a
 * detach is one atomic batch (index row and node row out, orphan row in),
 * and the value operations of value.c work on orphans unchanged.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tree.h"

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

int kt_orphan_detach(uint64_t *id, kt_store *st, const char *path)
{
	kt__tx tx;
	kt__rd rd;
	kt__res r;
	kt__buf part = {0};
	char a[KT__SHOWSZ];
	int rc;

	if (id == NULL)
		return kt__err(KT_EINVAL, "orphan_detach: id is NULL");
	*id = 0;
	if ((rc = writable(st, "orphan_detach")) != 0 ||
	    (rc = kt__path_check(&st->delim, path, "orphan_detach")) != 0)
		return rc;
	pthread_mutex_lock(&st->wlock);
	kt__tx_init(&tx, st);
	rd.st = st;
	rd.tx = &tx;
	rd.snap = NULL;
	rc = kt__resolve(&r, &rd, path, 0, "orphan_detach");
	if (rc == 0) {
		if (!r.exists)
			rc = kt__err(KT_ENOTFOUND, "orphan_detach '%s': no such"
				     " node", SHOW(a, path));
		else if (r.node.kind == KT_KIND_LINK ||
			 r.node.kind == KT_KIND_SPECIAL)
			rc = kt__err(KT_EINVAL, "orphan_detach '%s': %s is not"
				     " an item", SHOW(a, path),
				     kt__node_noun(&r.node));
		else if (r.node.kind != KT_KIND_ITEM)
			rc = kt__err(KT_EISDIR, "orphan_detach '%s': a "
				     "directory cannot be detached",
				     SHOW(a, path));
		else if (r.node.nlink > 1)
			rc = kt__err(KT_EPERM, "orphan_detach '%s': the item "
				     "has %u paths; delete this one instead",
				     SHOW(a, path), (unsigned)r.node.nlink);
		/* Out of the tree (index row first), into the orphans. */
		if (rc == 0) {
			size_t pl = kt__parent_len(r.path.p, r.path.len);
			rc = kt__enc_index(&part, &st->delim, r.path.p, pl);
			if (rc == 0)
				rc = kt__tx_del(&tx, kt__slb(&part),
						kt__sl(r.path.p + pl + 1,
						       r.path.len - pl - 1));
			part.len = 0;
			if (rc == 0)
				rc = kt__enc_node(&part, &st->delim, r.path.p,
						  r.path.len);
			if (rc == 0)
				rc = kt__tx_del(&tx, kt__slb(&part),
						kt__sl("", 0));
		}
		if (rc == 0)
			rc = kt__id_del(&tx, r.node.id);
		if (rc == 0) {
			r.node.ctime = tx.now;
			rc = orphan_put(&tx, &r.node);
		}
		if (rc == 0)
			rc = kt__parent_touch(&tx, r.path.p, r.path.len, 0);
		if (rc == 0)
			rc = kt__tx_commit(&tx);
		if (rc == 0)
			*id = r.node.id;
		kt__res_free(&r);
	}
	kt__tx_free(&tx);
	pthread_mutex_unlock(&st->wlock);
	kt__buf_free(&part);
	return rc;
}

int kt_orphan_new(uint64_t *id, kt_store *st, const kt_create_options *opts)
{
	kt__tx tx;
	kt__node n = {0};
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
	pthread_mutex_lock(&st->wlock);
	kt__tx_init(&tx, st);
	n.kind = KT_KIND_ITEM;
	n.mode = opts && (opts->flags & KT_CREATE_MODE) ? opts->mode : 0644;
	n.uid = opts && (opts->flags & KT_CREATE_OWNER) ? opts->uid : st->euid;
	n.gid = opts && (opts->flags & KT_CREATE_OWNER) ? opts->gid : st->egid;
	n.atime = n.mtime = n.ctime = tx.now;
	rc = kt__tx_alloc_id(&tx, &n.id);
	if (rc == 0)
		rc = orphan_put(&tx, &n);
	if (rc == 0)
		rc = kt__tx_commit(&tx);
	if (rc == 0)
		*id = n.id;
	kt__node_free(&n);
	kt__tx_free(&tx);
	pthread_mutex_unlock(&st->wlock);
	return rc;
}

int kt_orphan_link(kt_store *st, uint64_t id, const char *path)
{
	kt__tx tx;
	kt__rd rd;
	kt__res r;
	kt__node n = {0};
	unsigned char k[8];
	char a[KT__SHOWSZ];
	int rc;

	if ((rc = writable(st, "orphan_link")) != 0 ||
	    (rc = kt__path_check(&st->delim, path, "orphan_link")) != 0)
		return rc;
	pthread_mutex_lock(&st->wlock);
	kt__tx_init(&tx, st);
	rd.st = st;
	rd.tx = &tx;
	rd.snap = NULL;
	if ((rc = orphan_get(&n, &rd, id)) != 0)
		goto out_unlock;
	rc = kt__resolve(&r, &rd, path, KT__R_CREATE, "orphan_link");
	if (rc != 0)
		goto out_unlock;
	if (r.exists)
		rc = kt__err(KT_EEXISTS, "orphan_link '%s': something already "
			     "exists there", SHOW(a, path));
	/* Out of the orphans, into the tree under its own id: node row, id
	 * row, then the index row that makes it visible. */
	kt__put64be(k, id);
	if (rc == 0)
		rc = kt__tx_del(&tx, orphan_part(), kt__sl(k, 8));
	if (rc == 0) {
		n.ctime = tx.now;
		rc = kt__node_put(&tx, r.path.p, r.path.len, &n);
	}
	if (rc == 0)
		rc = kt__id_put(&tx, n.id, r.path.p, r.path.len);
	if (rc == 0)
		rc = kt__index_put(&tx, r.path.p, r.path.len, &n);
	if (rc == 0)
		rc = kt__parent_touch(&tx, r.path.p, r.path.len, 0);
	if (rc == 0)
		rc = kt__tx_commit(&tx);
	kt__res_free(&r);
out_unlock:
	kt__node_free(&n);
	kt__tx_free(&tx);
	pthread_mutex_unlock(&st->wlock);
	return rc;
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

int kt_orphan_copy(uint64_t *id, kt_store *st, const char *path)
{
	kt__tx tx;
	kt__rd rd;
	kt__res r;
	kt__node n = {0};
	char a[KT__SHOWSZ], from[32], to[32];
	uint64_t old = 0;
	int rc;

	if (id == NULL)
		return kt__err(KT_EINVAL, "orphan_copy: id is NULL");
	*id = 0;
	if ((rc = writable(st, "orphan_copy")) != 0 ||
	    (rc = kt__path_check(&st->delim, path, "orphan_copy")) != 0)
		return rc;
	pthread_mutex_lock(&st->wlock);
	kt__tx_init(&tx, st);
	rd.st = st;
	rd.tx = &tx;
	rd.snap = NULL;
	rc = kt__resolve(&r, &rd, path, 0, "orphan_copy");
	if (rc != 0)
		goto out;
	if (!r.exists)
		rc = kt__err(KT_ENOTFOUND, "orphan_copy '%s': no such node",
			     SHOW(a, path));
	else if (r.node.kind == KT_KIND_LINK ||
		 r.node.kind == KT_KIND_SPECIAL)
		rc = kt__err(KT_EINVAL, "orphan_copy '%s': %s is not an item",
			     SHOW(a, path), kt__node_noun(&r.node));
	else if (!(r.node.kind & KT_KIND_ITEM))
		rc = kt__err(KT_EISDIR, "orphan_copy '%s': a directory "
			     "without a value", SHOW(a, path));
	if (rc == 0) {
		n = r.node;
		memset(&r.node, 0, sizeof(r.node)); /* n owns the payload */
		old = n.id;
		n.kind = KT_KIND_ITEM;
		n.nsubdirs = 0;
		n.nlink = 1; /* a new node, of no path yet */
		n.ctime = tx.now;
		rc = kt__tx_alloc_id(&tx, &n.id);
	}
	/* Blocks and attributes are keyed by id: copy them under the new
	 * one as they are stored, so holes (absent rows) stay holes. */
	if (rc == 0 && !kt__node_inline(st, &n)) {
		kt__part_blk(from, old);
		kt__part_blk(to, n.id);
		rc = copy_part(&tx, from, to);
	}
	if (rc == 0 && n.nattrs > 0) {
		kt__part_attr(from, old);
		kt__part_attr(to, n.id);
		rc = copy_part(&tx, from, to);
	}
	if (rc == 0)
		rc = orphan_put(&tx, &n);
	if (rc == 0)
		rc = kt__tx_commit(&tx);
	if (rc == 0)
		*id = n.id;
	kt__res_free(&r);
out:
	kt__node_free(&n);
	kt__tx_free(&tx);
	pthread_mutex_unlock(&st->wlock);
	return rc;
}

int kt_orphan_stat(kt_statbuf *sb, kt_store *st, uint64_t id)
{
	kt__rd rd = {st, NULL, NULL};
	kt__node n = {0};
	int rc;

	if (sb == NULL || st == NULL)
		return kt__err(KT_EINVAL, "orphan_stat: NULL argument");
	memset(sb, 0, sizeof(*sb));
	rc = orphan_get(&n, &rd, id);
	if (rc == 0)
		kt__node_fill_stat(sb, st, &n);
	kt__node_free(&n);
	return rc;
}

int kt_orphan_read(size_t *nread, kt_store *st, uint64_t id, void *buf,
		   size_t len, uint64_t offset)
{
	kt__rd rd = {st, NULL, NULL};
	kt__node n = {0};
	int rc;

	if (nread == NULL || st == NULL || (buf == NULL && len > 0))
		return kt__err(KT_EINVAL, "orphan_read: NULL argument");
	*nread = 0;
	if ((rc = st->rows->ops->snapshot(&rd.snap, st->rows)) != 0)
		return rc;
	rc = orphan_get(&n, &rd, id);
	if (rc == 0)
		rc = kt__value_read(&rd, &n, buf, len, offset, nread);
	kt__node_free(&n);
	st->rows->ops->snapshot_free(st->rows, rd.snap);
	return rc;
}

enum { OW_WRITE, OW_TRUNCATE, OW_SETATTR, OW_RELEASE };

/* Load orphan id, change it, store it back, in one transaction. */
static int orphan_change(kt_store *st, uint64_t id, int what,
			 const void *buf, size_t len, uint64_t off,
			 const kt_setattr_args *sa)
{
	static const char *const names[] = {"orphan_write", "orphan_truncate",
					    "orphan_setattr",
					    "orphan_release"};
	kt__tx tx;
	kt__rd rd;
	kt__node n = {0};
	unsigned char k[8];
	int rc;

	if ((rc = writable(st, names[what])) != 0)
		return rc;
	if ((what == OW_WRITE && off != KT_APPEND &&
	     (off > KT_VALUE_MAX || len > KT_VALUE_MAX - off)) ||
	    (what == OW_TRUNCATE && off > KT_VALUE_MAX))
		return kt__err(KT_ETOOBIG, "%s: orphan %llu would exceed the "
			       "value limit", names[what],
			       (unsigned long long)id);
	if (what == OW_WRITE && buf == NULL && len > 0)
		return kt__err(KT_EINVAL, "orphan_write: buf is NULL");
	pthread_mutex_lock(&st->wlock);
	kt__tx_init(&tx, st);
	rd.st = st;
	rd.tx = &tx;
	rd.snap = NULL;
	rc = orphan_get(&n, &rd, id);
	if (rc == 0) {
		switch (what) {
		case OW_WRITE:
			if (off == KT_APPEND)
				off = n.size;
			if (off > KT_VALUE_MAX || len > KT_VALUE_MAX - off)
				rc = kt__err(KT_ETOOBIG, "orphan_write: orphan "
					     "%llu would exceed the value "
					     "limit", (unsigned long long)id);
			else
				rc = kt__value_write(&tx, &n, buf, len, off);
			n.mtime = n.ctime = tx.now;
			break;
		case OW_TRUNCATE:
			rc = kt__value_truncate(&tx, &n, off);
			n.mtime = n.ctime = tx.now;
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
				n.atime = tx.now;
			if (sa->mask & KT_SET_MTIME)
				n.mtime = sa->mtime_ns;
			if (sa->mask & KT_SET_MTIME_NOW)
				n.mtime = tx.now;
			n.ctime = tx.now;
			break;
		case OW_RELEASE:
			rc = kt__node_drop_data(&tx, &n);
			kt__put64be(k, id);
			if (rc == 0)
				rc = kt__tx_del(&tx, orphan_part(),
						kt__sl(k, 8));
			break;
		}
		if (rc == 0 && what != OW_RELEASE)
			rc = orphan_put(&tx, &n);
		if (rc == 0)
			rc = kt__tx_commit(&tx);
	}
	kt__node_free(&n);
	kt__tx_free(&tx);
	pthread_mutex_unlock(&st->wlock);
	return rc;
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
