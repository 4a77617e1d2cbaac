/*
 * api.c - the public entry points for reading and writing single nodes,
 * and batches.  Writers describe their operation as a kt__op and hand it
 * to ops.c; readers resolve the path and read rows directly, taking a
 * snapshot when they need more than one row to agree (large values).
 */
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"

#define SHOW(buf, s) kt__show(buf, sizeof(buf), (s), strlen(s))

static void op_init(kt__op *op, int type, const char *path)
{
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->path = path;
}

static void op_opts(kt__op *op, const kt_create_options *opts)
{
	if (opts != NULL) {
		op->has_opts = 1;
		op->opts = *opts;
	}
}

/* Describe each operation once; the single calls run it, the batch calls
 * record it. */
static kt__op op_put(const char *path, const void *value, size_t len,
		     const kt_create_options *opts)
{
	kt__op op;

	op_init(&op, KT__OP_PUT, path);
	op.data = value;
	op.len = len;
	op_opts(&op, opts);
	return op;
}

static kt__op op_mkdir(const char *path, const kt_create_options *opts)
{
	kt__op op;

	op_init(&op, KT__OP_MKDIR, path);
	op_opts(&op, opts);
	return op;
}

static kt__op op_symlink(const char *link, const char *target,
			 const kt_create_options *opts)
{
	kt__op op;

	op_init(&op, KT__OP_SYMLINK, link);
	op.path2 = target;
	op_opts(&op, opts);
	return op;
}

static kt__op op_mknod(const char *path, unsigned int type, uint64_t rdev,
		       const kt_create_options *opts)
{
	kt__op op;

	op_init(&op, KT__OP_MKNOD, path);
	op.ftype = type;
	op.rdev = rdev;
	op_opts(&op, opts);
	return op;
}

static kt__op op_delete(const char *path, unsigned int flags)
{
	kt__op op;

	op_init(&op, KT__OP_DELETE, path);
	op.flags = flags;
	return op;
}

static kt__op op_rename(const char *src, const char *dst, unsigned int flags)
{
	kt__op op;

	op_init(&op, KT__OP_RENAME, src);
	op.path2 = dst;
	op.flags = flags;
	return op;
}

static kt__op op_link(const char *existing, const char *newpath)
{
	kt__op op;

	op_init(&op, KT__OP_LINK, existing);
	op.path2 = newpath;
	return op;
}

static kt__op op_attr_set(const char *path, const char *name,
			  const void *value, size_t len, unsigned int flags)
{
	kt__op op;

	op_init(&op, KT__OP_ATTR_SET, path);
	op.path2 = name;
	op.data = value;
	op.len = len;
	op.flags = flags;
	return op;
}

static kt__op op_attr_delete(const char *path, const char *name)
{
	kt__op op;

	op_init(&op, KT__OP_ATTR_DELETE, path);
	op.path2 = name;
	return op;
}

static kt__op op_setattr(const char *path, const kt_setattr_args *args,
			 unsigned int flags)
{
	kt__op op;

	op_init(&op, KT__OP_SETATTR, path);
	op.sa = *args;
	op.flags = flags;
	return op;
}

int kt_put(kt_store *st, const char *path, const void *value, size_t len,
	   const kt_create_options *opts)
{
	kt__op op = op_put(path, value, len, opts);

	return kt__op_run(st, &op);
}

int kt_mkdir(kt_store *st, const char *path, const kt_create_options *opts)
{
	kt__op op = op_mkdir(path, opts);

	return kt__op_run(st, &op);
}

int kt_symlink(kt_store *st, const char *link, const char *target,
	       const kt_create_options *opts)
{
	kt__op op = op_symlink(link, target, opts);

	return kt__op_run(st, &op);
}

int kt_mknod(kt_store *st, const char *path, unsigned int type, uint64_t rdev,
	     const kt_create_options *opts)
{
	kt__op op = op_mknod(path, type, rdev, opts);

	return kt__op_run(st, &op);
}

int kt_delete(kt_store *st, const char *path, unsigned int flags)
{
	kt__op op = op_delete(path, flags);

	return kt__op_run(st, &op);
}

int kt_rename(kt_store *st, const char *src, const char *dst,
	      unsigned int flags)
{
	kt__op op = op_rename(src, dst, flags);

	return kt__op_run(st, &op);
}

int kt_link(kt_store *st, const char *existing, const char *newpath)
{
	kt__op op = op_link(existing, newpath);

	return kt__op_run(st, &op);
}

int kt_attr_set(kt_store *st, const char *path, const char *name,
		const void *value, size_t len, unsigned int flags)
{
	kt__op op = op_attr_set(path, name, value, len, flags);

	return kt__op_run(st, &op);
}

int kt_attr_delete(kt_store *st, const char *path, const char *name)
{
	kt__op op = op_attr_delete(path, name);

	return kt__op_run(st, &op);
}

int kt_write(kt_store *st, const char *path, const void *buf, size_t len,
	     uint64_t offset)
{
	kt__op op;

	op_init(&op, KT__OP_WRITE, path);
	op.data = buf;
	op.len = len;
	op.off = offset;
	return kt__op_run(st, &op);
}

int kt_truncate(kt_store *st, const char *path, uint64_t size)
{
	kt__op op;

	op_init(&op, KT__OP_TRUNCATE, path);
	op.off = size;
	return kt__op_run(st, &op);
}

int kt_setattr(kt_store *st, const char *path, const kt_setattr_args *args,
	       unsigned int flags)
{
	kt__op op;

	if (args == NULL)
		return kt__err(KT_EINVAL, "setattr: args is NULL");
	op = op_setattr(path, args, flags);
	return kt__op_run(st, &op);
}

/* ---------------------------------------------------------------------- */
/* Readers */

/* Resolve @p path for reading; the node must exist. */
static int lookup(kt__res *r, kt__rd *rd, const char *path, int follow,
		  const char *op)
{
	char a[KT__SHOWSZ];
	int rc;

	if (rd->st == NULL)
		return kt__err(KT_EINVAL, "%s: store is NULL", op);
	if ((rc = kt__path_check(&rd->st->delim, path, op)) != 0)
		return rc;
	rc = kt__resolve(r, rd, path, follow ? KT__R_FOLLOW : 0, op);
	if (rc == 0 && !r->exists) {
		kt__res_free(r);
		rc = kt__err(KT_ENOTFOUND, "%s '%s': no such node", op,
			     SHOW(a, path));
	}
	return rc;
}

/* The readers below run their reads as tree.h's kt__rd_begin() shows, so
 * that on RADOS what they return agrees with one moment. */

static int stat_common(kt_statbuf *sb, kt_store *st, const char *path,
		       int follow)
{
	unsigned int attempt = 0;
	kt__rd rd;
	kt__res r;
	int rc;

	if (sb == NULL)
		return kt__err(KT_EINVAL, "stat: statbuf is NULL");
	do {
		memset(sb, 0, sizeof(*sb));
		if ((rc = kt__rd_begin(&rd, st)) == 0)
			rc = lookup(&r, &rd, path, follow,
				    follow ? "stat" : "lstat");
		if (rc == 0) {
			kt__node_fill_stat(sb, st, &r.node);
			kt__res_free(&r);
		}
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0)
		memset(sb, 0, sizeof(*sb));
	return rc;
}

int kt_stat(kt_statbuf *sb, kt_store *st, const char *path)
{
	return stat_common(sb, st, path, 1);
}

int kt_lstat(kt_statbuf *sb, kt_store *st, const char *path)
{
	return stat_common(sb, st, path, 0);
}

/* Find the node with @p id through its id row, then check the node row at
 * the path it names still carries that id: a rename between the two reads
 * is seen and the lookup tried again, so the answer was true at the moment
 * of the second read. */
static int id_lookup_rd(kt__node *n, kt__buf *path, kt__rd *rd,
			uint64_t id);

static int id_lookup(kt__node *n, kt__buf *path, kt_store *st, uint64_t id,
		     const char *op)
{
	unsigned int attempt = 0;
	kt__rd rd;
	int rc;

	if (st == NULL)
		return kt__err(KT_EINVAL, "%s: store is NULL", op);
	do {
		if (path != NULL)
			path->len = 0;
		if ((rc = kt__rd_begin(&rd, st)) == 0)
			rc = id_lookup_rd(n, path, &rd, id);
		if ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY) {
			kt__node_free(n);
			memset(n, 0, sizeof(*n));
		}
	} while (rc == KT__ERETRY);
	return rc;
}

/*
 * The id cache.  An id lookup reads the id row for the node's partition,
 * then the node row there: two reads, two round trips on RADOS.  The
 * cache keeps the partition last found for an id, and a lookup reads the
 * node row there first.  Nothing needs dropping when a node moves or goes
 * (here or in another process or host): what was read decides.  If the
 * row there is the node's (its id) and the node has one path, that path
 * is the one its id row names, at the moment of the read (the id row is
 * written with every node row that moves).  Anything else (no row, a
 * row of another node, a node with several paths, whose id row names one
 * of them) is looked up by the id row as before.  Both reads go through
 * the same reader, so a transaction's conditions cover what was read.
 */
static size_t idc_slot(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) &
	       (KT__IDC_SLOTS - 1);
}

/* Copy the partition cached for @p id into @p part; 0 if none. */
static size_t idc_get(kt_store *st, uint64_t id, char part[KT__IDC_PART])
{
	size_t len = 0;

	pthread_mutex_lock(&st->idc_lock);
	if (st->idc != NULL && st->idc[idc_slot(id)].id == id) {
		len = st->idc[idc_slot(id)].len;
		memcpy(part, st->idc[idc_slot(id)].part, len);
	}
	pthread_mutex_unlock(&st->idc_lock);
	return len;
}

void kt__idc_put(kt_store *st, uint64_t id, kt__slice part)
{
	kt__idc_slot *s;

	if (part.len == 0 || part.len > KT__IDC_PART)
		return;
	pthread_mutex_lock(&st->idc_lock);
	if (st->idc == NULL)
		st->idc = calloc(KT__IDC_SLOTS, sizeof(*st->idc));
	if (st->idc != NULL) {
		s = &st->idc[idc_slot(id)];
		s->id = id;
		s->len = (uint32_t)part.len;
		memcpy(s->part, part.p, part.len);
	}
	pthread_mutex_unlock(&st->idc_lock);
}

/* The id cache's read (above): 0 with @p n (and @p path) set when the
 * node row at the cached partition is the node's and it has one path;
 * KT_ENOTFOUND when the cache has nothing that says so; another error
 * when the read failed. */
int kt__idc_lookup(kt__node *n, kt__buf *path, kt__rd *rd, uint64_t id)
{
	char part[KT__IDC_PART];
	size_t len = idc_get(rd->st, id, part);
	kt__buf val = {0};
	int rc, hint = kt__fence_hint;

	if (len == 0)
		return KT_ENOTFOUND;
	kt__fence_hint = 1;
	rc = kt__rd_get(rd, kt__sl(part, len), kt__sl("", 0), &val);
	kt__fence_hint = hint;
	if (rc == KT__EFENCED || rc == KT_EIO || rc == KT_ECORRUPT) {
		/* The last place lies behind a fence (a large rename or
		 * delete of a subtree the node may have left long ago: never
		 * wait for it), or reading it failed: the id row says where
		 * to look.  A failed read was not recorded in a
		 * transaction's conditions. */
		kt__err_clear();
		rc = KT_ENOTFOUND;
	} else if (rc == 0) {
		/* A row that does not decode is left to the id row's
		 * lookup, which says what is wrong where. */
		if (kt__node_decode(n, val.p, val.len) == 0 && n->id == id &&
		    n->nlink <= 1) {
			rc = path != NULL ? kt__dec_node(path, &rd->st->delim,
							 part, len)
					  : 0;
		} else {
			kt__node_free(n);
			memset(n, 0, sizeof(*n));
			kt__err_clear();
			rc = KT_ENOTFOUND;
		}
	}
	kt__buf_free(&val);
	return rc;
}

/* As id_lookup, through reader @p rd (over a snapshot, one pass is
 * enough: the id row and the node row agree or the store is damaged).
 * The messages name the id, not the call: the id is what a user gave. */
static int id_lookup_rd(kt__node *n, kt__buf *path, kt__rd *rd,
			uint64_t id)
{
	kt_store *st = rd->st;
	kt__buf part = {0}, val = {0};
	int rc, tries;

	if (st->format < 2)
		return kt__err(KT_EVERSION, "the store has format version %u, "
			       "which has no id rows; open it writable once "
			       "to upgrade it", st->format);
	if ((rc = kt__idc_lookup(n, path, rd, id)) != KT_ENOTFOUND)
		return rc;
	if (path != NULL)
		path->len = 0;
	for (tries = 0; tries < (rd->snap ? 1 : 8); tries++) {
		part.len = 0;
		rc = kt__id_get(&part, rd, id);
		if (rc == KT_ENOTFOUND) {
			/* A rerun after a rename may have read one already. */
			kt__buf_free(&part);
			kt__buf_free(&val);
			return kt__err(KT_ENOTFOUND, "no node has id %llu",
				       (unsigned long long)id);
		}
		if (rc == 0)
			rc = kt__rd_get(rd, kt__sl(part.p ? part.p : "",
						    part.len),
					kt__sl("", 0), &val);
		if (rc == 0) {
			rc = kt__node_decode(n, val.p, val.len);
			kt__buf_free(&val);
			if (rc == 0 && n->id == id) {
				if (n->nlink <= 1)
					kt__idc_put(st, id, kt__slb(&part));
				break;
			}
			kt__node_free(n);
			memset(n, 0, sizeof(*n));
			if (rc == 0)
				rc = KT_ENOTFOUND;
		}
		if (rc != KT_ENOTFOUND)
			goto out;
	}
	if (rc != 0) {
		rc = kt__err(KT_ECORRUPT, "the store is damaged: the id row of "
			     "%llu names a path whose node has another id or "
			     "is missing", (unsigned long long)id);
		goto out;
	}
	if (path != NULL)
		rc = kt__dec_node(path, &st->delim, part.p ? part.p : "",
				  part.len);
out:
	kt__buf_free(&part);
	return rc;
}

static int id_path_out(char **path, size_t *len, kt__buf *b)
{
	if (kt__buf_addc(b, '\0') != 0)
		return kt__err(KT_ENOMEM, "out of memory");
	b->len--;
	*path = kt__buf_detach(b, len);
	return *path ? 0 : kt__err(KT_ENOMEM, "out of memory");
}

int kt_id_path(char **path, size_t *len, kt_store *st, uint64_t id)
{
	kt__node n = {0};
	kt__buf b = {0};
	int rc;

	if (path == NULL)
		return kt__err(KT_EINVAL, "id_path: path is NULL");
	*path = NULL;
	if (len != NULL)
		*len = 0;
	rc = id_lookup(&n, &b, st, id, "id_path");
	if (rc == 0)
		rc = id_path_out(path, len, &b);
	kt__node_free(&n);
	kt__buf_free(&b);
	return rc;
}

int kt_id_lstat(kt_statbuf *sb, char **path, size_t *len, kt_store *st,
		uint64_t id)
{
	kt__node n = {0};
	kt__buf b = {0};
	int rc;

	if (sb == NULL)
		return kt__err(KT_EINVAL, "id_lstat: statbuf is NULL");
	memset(sb, 0, sizeof(*sb));
	if (path != NULL)
		*path = NULL;
	if (len != NULL)
		*len = 0;
	rc = id_lookup(&n, path ? &b : NULL, st, id, "id_lstat");
	if (rc == 0)
		kt__node_fill_stat(sb, st, &n);
	if (rc == 0 && path != NULL)
		rc = id_path_out(path, len, &b);
	kt__node_free(&n);
	kt__buf_free(&b);
	return rc;
}

int kt_readlink(char **target, size_t *len, kt_store *st, const char *path)
{
	unsigned int attempt = 0;
	char a[KT__SHOWSZ];
	kt__buf t = {0};
	kt__rd rd;
	kt__res r;
	int rc;

	if (target == NULL)
		return kt__err(KT_EINVAL, "readlink: target is NULL");
	*target = NULL;
	if (len != NULL)
		*len = 0;
	do {
		kt__buf_free(&t);
		if ((rc = kt__rd_begin(&rd, st)) == 0)
			rc = lookup(&r, &rd, path, 0, "readlink");
		if (rc == 0) {
			if (r.node.kind != KT_KIND_LINK)
				rc = kt__err(KT_EINVAL, "readlink '%s': not a "
					     "symbolic link", SHOW(a, path));
			else
				t = r.node.payload;
			if (rc == 0)
				memset(&r.node.payload, 0, sizeof(t));
			kt__res_free(&r);
		}
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0) {
		kt__buf_free(&t);
		return rc;
	}
	*target = kt__buf_detach(&t, len);
	return *target ? 0 : kt__err(KT_ENOMEM, "out of memory");
}

/* Fail unless node n has a value to read: KT_EISDIR for a directory,
 * KT_EINVAL for a special file (or a link, reached by id). */
/* Does node n hold a value?  0, or the error naming it: by @p path, or by
 * its id when @p path is NULL (made only then: this is every read's
 * path). */
static int has_value(const kt__node *n, const char *op, const char *path)
{
	char a[KT__SHOWSZ], what[KT__SHOWSZ + 32];

	if (n->kind & KT_KIND_ITEM)
		return 0;
	if (path != NULL)
		snprintf(what, sizeof(what), "'%s'", SHOW(a, path));
	else
		snprintf(what, sizeof(what), "node %llu",
			 (unsigned long long)n->id);
	if (n->kind & KT_KIND_DIR)
		return kt__err(KT_EISDIR, "%s %s: a directory without a value",
			       op, what);
	return kt__err(KT_EINVAL, "%s %s: %s holds no value", op, what,
		       kt__node_noun(n));
}

/* Resolve an item for reading its value; with a snapshot when the value
 * lives in blocks, so the node row and its blocks agree. */
static int item_open(kt__res *r, kt__rd *rd, const char *path, const char *op)
{
	int rc;

	rc = lookup(r, rd, path, 1, op);
	if (rc != 0)
		return rc;
	if ((rc = has_value(&r->node, op, path)) != 0)
		kt__res_free(r);
	if (rc == 0 && rd->snap == NULL &&
	    !kt__node_inline(rd->st, &r->node)) {
		kt__res_free(r);
		rc = rd->st->rows->ops->snapshot(&rd->snap, rd->st->rows);
		if (rc == 0)
			rc = lookup(r, rd, path, 1, op);
		if (rc == 0 && (rc = has_value(&r->node, op, path)) != 0)
			kt__res_free(r);
	}
	return rc;
}

int kt_get(void **value, size_t *len, kt_store *st, const char *path)
{
	unsigned int attempt = 0;
	kt__buf v = {0};
	kt__rd rd;
	kt__res r;
	size_t got = 0;
	int rc;

	if (value == NULL || len == NULL)
		return kt__err(KT_EINVAL, "get: value or len is NULL");
	*value = NULL;
	*len = 0;
	do {
		kt__buf_free(&v);
		if ((rc = kt__rd_begin(&rd, st)) == 0)
			rc = item_open(&r, &rd, path, "get");
		if (rc == 0) {
			if (kt__node_inline(st, &r.node)) {
				v = r.node.payload;
				memset(&r.node.payload, 0, sizeof(v));
				got = v.len;
			} else if (r.node.size > SIZE_MAX - 1) {
				rc = kt__err(KT_ENOMEM, "get: value too large");
			} else if ((rc = kt__buf_reserve(
					    &v, (size_t)r.node.size)) == 0) {
				rc = kt__value_read(&rd, &r.node, v.p,
						    (size_t)r.node.size, 0,
						    &got);
				v.len = got;
				v.p[got] = '\0';
			}
			kt__res_free(&r);
		}
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0) {
		kt__buf_free(&v);
		return rc;
	}
	*value = kt__buf_detach(&v, len);
	return *value ? 0 : kt__err(KT_ENOMEM, "out of memory");
}

int kt_read(size_t *nread, kt_store *st, const char *path, void *buf,
	    size_t len, uint64_t offset)
{
	unsigned int attempt = 0;
	kt__rd rd;
	kt__res r;
	int rc;

	if (nread == NULL || (buf == NULL && len > 0))
		return kt__err(KT_EINVAL, "read: nread or buf is NULL");
	do {
		*nread = 0;
		if ((rc = kt__rd_begin(&rd, st)) == 0)
			rc = item_open(&r, &rd, path, "read");
		if (rc == 0) {
			rc = kt__value_read(&rd, &r.node, buf, len, offset,
					    nread);
			kt__res_free(&r);
		}
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0)
		*nread = 0;
	return rc;
}

int kt_id_read(size_t *nread, kt_store *st, uint64_t id, void *buf,
	       size_t len, uint64_t offset)
{
	unsigned int attempt = 0;
	kt__node n = {0};
	kt__rd rd;
	int rc;

	if (nread == NULL || st == NULL || (buf == NULL && len > 0))
		return kt__err(KT_EINVAL, "id_read: NULL argument");
	do {
		*nread = 0;
		/* One snapshot for the id row, the node row and the
		 * blocks. */
		if ((rc = kt__rd_begin_snap(&rd, st)) == 0)
			rc = id_lookup_rd(&n, NULL, &rd, id);
		if (rc == 0)
			rc = has_value(&n, "reading", NULL);
		if (rc == 0)
			rc = kt__value_read(&rd, &n, buf, len, offset, nread);
		kt__node_free(&n);
		memset(&n, 0, sizeof(n));
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0)
		*nread = 0;
	return rc;
}

int kt_attr_get(void **value, size_t *len, kt_store *st, const char *path,
		const char *name)
{
	char a[KT__SHOWSZ], b[KT__SHOWSZ], part[32];
	unsigned int attempt = 0;
	kt__buf v = {0};
	kt__rd rd;
	kt__res r;
	int rc;

	if (value == NULL || len == NULL || st == NULL)
		return kt__err(KT_EINVAL, "attr_get: NULL argument");
	*value = NULL;
	*len = 0;
	if (name == NULL || name[0] == '\0')
		return kt__err(KT_EINVAL, "attr_get: empty attribute name");
	if (strlen(name) > KT_NAME_MAX)
		return kt__err(KT_ENAMETOOLONG, "attr_get: attribute name of "
			       "%zu bytes is over the limit of %d",
			       strlen(name), KT_NAME_MAX);
	if (strncmp(name, st->delim.s, st->delim.len) == 0)
		return kt__err(KT_ERESERVED, "attr_get '%s': attribute name "
			       "'%s' starts with the reserved delimiter",
			       SHOW(a, path), SHOW(b, name));
	do {
		v.len = 0;
		if ((rc = kt__rd_begin(&rd, st)) == 0 &&
		    (rc = lookup(&r, &rd, path, 1, "attr_get")) == 0) {
			kt__part_attr(part, r.node.id);
			rc = kt__rd_get(&rd, kt__sl(part, strlen(part)),
					kt__sl(name, strlen(name)), &v);
			kt__res_free(&r);
			if (rc == KT_ENOTFOUND)
				rc = kt__err(KT_ENOATTR, "attr_get '%s': no "
					     "attribute '%s'", SHOW(a, path),
					     SHOW(b, name));
		}
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0) {
		kt__buf_free(&v);
		return rc;
	}
	*value = kt__buf_detach(&v, len);
	return *value ? 0 : kt__err(KT_ENOMEM, "out of memory");
}

/* ---------------------------------------------------------------------- */
/* Batches */

struct kt_batch {
	kt_store *st;
	kt__op *ops;
	size_t n, cap;
	int done;
};

int kt_batch_new(kt_batch **out, kt_store *st)
{
	if (out == NULL || st == NULL)
		return kt__err(KT_EINVAL, "batch_new: NULL argument");
	*out = calloc(1, sizeof(**out));
	if (*out == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	(*out)->st = st;
	return 0;
}

static void op_free(kt__op *op)
{
	free((void *)op->path);
	free((void *)op->path2);
	free((void *)op->data);
}

void kt_batch_free(kt_batch *b)
{
	size_t i;

	if (b == NULL)
		return;
	for (i = 0; i < b->n; i++)
		op_free(&b->ops[i]);
	free(b->ops);
	free(b);
}

static char *dup_str(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Validate, copy and append an operation. */
static int batch_add(kt_batch *b, const kt__op *op)
{
	kt__op c = *op;
	int rc;

	if (b == NULL)
		return kt__err(KT_EINVAL, "batch: NULL batch");
	if (b->done)
		return kt__err(KT_EINVAL, "batch: already committed");
	if ((rc = kt__op_validate(b->st, op)) != 0)
		return rc;
	c.path = dup_str(op->path);
	c.path2 = dup_str(op->path2);
	c.data = NULL;
	if (op->data != NULL) {
		void *d = malloc(op->len ? op->len : 1);
		if (d != NULL && op->len)
			memcpy(d, op->data, op->len);
		c.data = d;
	}
	if (c.path == NULL || (op->path2 && !c.path2) ||
	    (op->data && !c.data)) {
		op_free(&c);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 8;
		kt__op *n = realloc(b->ops, ncap * sizeof(*n));
		if (n == NULL) {
			op_free(&c);
			return kt__err(KT_ENOMEM, "out of memory");
		}
		b->ops = n;
		b->cap = ncap;
	}
	b->ops[b->n++] = c;
	return 0;
}

int kt_batch_put(kt_batch *b, const char *path, const void *value,
		 size_t len, const kt_create_options *opts)
{
	kt__op op = op_put(path, value, len, opts);

	return batch_add(b, &op);
}

int kt_batch_mkdir(kt_batch *b, const char *path,
		   const kt_create_options *opts)
{
	kt__op op = op_mkdir(path, opts);

	return batch_add(b, &op);
}

int kt_batch_symlink(kt_batch *b, const char *link, const char *target,
		     const kt_create_options *opts)
{
	kt__op op = op_symlink(link, target, opts);

	return batch_add(b, &op);
}

int kt_batch_mknod(kt_batch *b, const char *path, unsigned int type,
		   uint64_t rdev, const kt_create_options *opts)
{
	kt__op op = op_mknod(path, type, rdev, opts);

	return batch_add(b, &op);
}

int kt_batch_delete(kt_batch *b, const char *path, unsigned int flags)
{
	kt__op op = op_delete(path, flags);

	return batch_add(b, &op);
}

int kt_batch_rename(kt_batch *b, const char *src, const char *dst,
		    unsigned int flags)
{
	kt__op op = op_rename(src, dst, flags);

	return batch_add(b, &op);
}

int kt_batch_link(kt_batch *b, const char *existing, const char *newpath)
{
	kt__op op = op_link(existing, newpath);

	return batch_add(b, &op);
}

int kt_batch_attr_set(kt_batch *b, const char *path, const char *name,
		      const void *value, size_t len, unsigned int flags)
{
	kt__op op = op_attr_set(path, name, value, len, flags);

	return batch_add(b, &op);
}

int kt_batch_attr_delete(kt_batch *b, const char *path, const char *name)
{
	kt__op op = op_attr_delete(path, name);

	return batch_add(b, &op);
}

int kt_batch_setattr(kt_batch *b, const char *path,
		     const kt_setattr_args *args, unsigned int flags)
{
	kt__op op;

	if (args == NULL)
		return kt__err(KT_EINVAL, "batch_setattr: args is NULL");
	op = op_setattr(path, args, flags);
	return batch_add(b, &op);
}

static int batch_apply(kt__tx *tx, void *arg)
{
	kt_batch *b = arg;
	size_t i;
	int rc = 0;

	for (i = 0; i < b->n && rc == 0; i++) {
		rc = kt__op_apply(tx, &b->ops[i]);
		if (rc != 0)
			kt__err_prefix("batch operation %zu (%s)", i + 1,
				       kt__op_name(b->ops[i].type));
	}
	return rc;
}

int kt_batch_commit(kt_batch *b)
{
	kt_store *st;

	if (b == NULL)
		return kt__err(KT_EINVAL, "batch_commit: NULL batch");
	if (b->done)
		return kt__err(KT_EINVAL, "batch_commit: the batch was already"
			       " committed");
	b->done = 1;
	st = b->st;
	if (st->read_only)
		return kt__err(KT_EREADONLY, "batch_commit: the store was "
			       "opened read-only");
	return kt__tx_run(st, batch_apply, b);
}


/* ---------------------------------------------------------------------- */
/* Calls by directory id and name */

/* "/NAME" for a call by directory id (from malloc, into *out); @p name
 * must be one component.  The rest of its checks (length, delimiter) are
 * those of a path of one component. */
static int at_name(char **out, const char *name, const char *op)
{
	char a[KT__SHOWSZ];
	size_t n;

	*out = NULL;
	if (name == NULL)
		return kt__err(KT_EINVAL, "%s: name is NULL", op);
	if (name[0] == '\0')
		return kt__err(KT_EINVAL, "%s: the name is empty", op);
	if (strchr(name, '/') != NULL)
		return kt__err(KT_EINVAL, "%s '%s': a name cannot hold '/'", op,
			       SHOW(a, name));
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return kt__err(KT_EINVAL, "%s '%s': not a name", op, name);
	n = strlen(name);
	if ((*out = malloc(n + 2)) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	(*out)[0] = '/';
	memcpy(*out + 1, name, n + 1);
	return 0;
}

int kt_lstat_at(kt_statbuf *sb, kt_store *st, uint64_t dir, const char *name)
{
	unsigned int attempt = 0;
	kt__node d = {0};
	kt__buf path = {0};
	kt__rd rd;
	kt__res r;
	char *rel = NULL;
	int rc;

	if (sb == NULL || st == NULL)
		return kt__err(KT_EINVAL, "lstat_at: NULL argument");
	memset(sb, 0, sizeof(*sb));
	if ((rc = at_name(&rel, name, "lstat_at")) != 0)
		return rc;
	do {
		memset(sb, 0, sizeof(*sb));
		kt__node_free(&d);
		memset(&d, 0, sizeof(d));
		path.len = 0;
		/* One snapshot: the directory's path and the child agree. */
		if ((rc = kt__rd_begin_snap(&rd, st)) == 0)
			rc = id_lookup_rd(&d, &path, &rd, dir);
		if (rc == 0 && !(d.kind & KT_KIND_DIR))
			rc = kt__err(KT_ENOTDIR, "lstat_at: node %llu is not a "
				     "directory", (unsigned long long)dir);
		if (rc == 0) {
			if (path.len == 1)
				path.len = 0;
			rc = kt__buf_add(&path, rel, strlen(rel));
		}
		if (rc == 0 &&
		    (rc = lookup(&r, &rd, path.p, 0, "lstat")) == 0) {
			kt__node_fill_stat(sb, st, &r.node);
			kt__res_free(&r);
		}
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0)
		memset(sb, 0, sizeof(*sb));
	kt__node_free(&d);
	kt__buf_free(&path);
	free(rel);
	return rc;
}

int kt_make_at(kt_statbuf *sb, kt_store *st, uint64_t dir, const char *name,
	       const kt_make_args *args)
{
	kt__op op;
	char *rel = NULL, *target = NULL;
	int rc;

	if (st == NULL || args == NULL)
		return kt__err(KT_EINVAL, "make_at: NULL argument");
	if (args->version != KT_MAKE_ARGS_VERSION)
		return kt__err(KT_EINVAL, "make_at: args version %u, expected "
			       "%d", args->version, KT_MAKE_ARGS_VERSION);
	if (args->create.version != 0 &&
	    (args->create.flags & ~(KT_CREATE_MODE | KT_CREATE_OWNER)))
		return kt__err(KT_EINVAL, "make_at: only KT_CREATE_MODE and "
			       "KT_CREATE_OWNER apply (flags 0x%x)",
			       args->create.flags);
	if ((rc = at_name(&rel, name, "make_at")) != 0)
		return rc;
	memset(&op, 0, sizeof(op));
	op.path = rel;
	op.at = dir;
	op.out = sb;
	op.has_opts = 1;
	if (args->create.version != 0)
		op.opts = args->create;
	else
		op.opts.version = KT_CREATE_OPTIONS_VERSION;
	op.opts.flags |= KT_CREATE_NEW;
	switch (args->kind) {
	case KT_KIND_ITEM:
		op.type = KT__OP_PUT;
		op.data = args->data;
		op.len = args->len;
		break;
	case KT_KIND_DIR:
		op.type = KT__OP_MKDIR;
		break;
	case KT_KIND_LINK:
		if (args->data == NULL || args->len == 0 ||
		    memchr(args->data, '\0', args->len) != NULL) {
			rc = kt__err(KT_EINVAL, "make_at '%s': a link target "
				     "must be 1 or more bytes without NUL",
				     rel + 1);
			goto out;
		}
		if ((target = malloc(args->len + 1)) == NULL) {
			rc = kt__err(KT_ENOMEM, "out of memory");
			goto out;
		}
		memcpy(target, args->data, args->len);
		target[args->len] = '\0';
		op.type = KT__OP_SYMLINK;
		op.path2 = target;
		break;
	case KT_KIND_SPECIAL:
		op.type = KT__OP_MKNOD;
		op.ftype = args->type;
		op.rdev = args->rdev;
		break;
	default:
		rc = kt__err(KT_EINVAL, "make_at '%s': unknown kind %u", rel + 1,
			     args->kind);
		goto out;
	}
	rc = kt__op_run(st, &op);
out:
	free(rel);
	free(target);
	return rc;
}

int kt_delete_at(kt_store *st, uint64_t dir, const char *name,
		 unsigned int flags)
{
	kt__op op;
	char *rel = NULL;
	int rc;

	if ((rc = at_name(&rel, name, "delete_at")) != 0)
		return rc;
	op = op_delete(rel, flags);
	op.at = dir;
	rc = kt__op_run(st, &op);
	free(rel);
	return rc;
}

int kt_rename_at(kt_store *st, uint64_t dir, const char *name,
		 uint64_t newdir, const char *newname, unsigned int flags)
{
	kt__op op;
	char *a = NULL, *b = NULL;
	int rc;

	if ((rc = at_name(&a, name, "rename_at")) == 0 &&
	    (rc = at_name(&b, newname, "rename_at")) == 0) {
		op = op_rename(a, b, flags);
		op.at = dir;
		op.at2 = newdir;
		rc = kt__op_run(st, &op);
	}
	free(a);
	free(b);
	return rc;
}

int kt_link_at(kt_statbuf *sb, kt_store *st, uint64_t id, uint64_t newdir,
	       const char *newname)
{
	kt__op op;
	char *b = NULL;
	int rc;

	if ((rc = at_name(&b, newname, "link_at")) != 0)
		return rc;
	op = op_link(NULL, b);
	op.at = id;
	op.at2 = newdir;
	op.out = sb;
	rc = kt__op_run(st, &op);
	free(b);
	return rc;
}

int kt_delete_at_if(kt_store *st, uint64_t dir, const char *name,
		    uint64_t id, unsigned int flags)
{
	kt__op op;
	char *rel = NULL;
	int rc;

	if (id == 0)
		return kt__err(KT_EINVAL, "delete_at_if: id 0 names no node");
	if ((rc = at_name(&rel, name, "delete_at_if")) != 0)
		return rc;
	op = op_delete(rel, flags);
	op.at = dir;
	op.if_id = id;
	rc = kt__op_run(st, &op);
	free(rel);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Calls by node id: a kt__op with path NULL and at = id names the node
 * with that id, resolved inside the operation's transaction. */

static kt__op op_id(int type, uint64_t id)
{
	kt__op op;

	op_init(&op, type, NULL);
	op.at = id;
	return op;
}

int kt_id_write(kt_store *st, uint64_t id, const void *buf, size_t len,
		uint64_t offset)
{
	kt__op op = op_id(KT__OP_WRITE, id);

	op.data = buf;
	op.len = len;
	op.off = offset;
	return kt__op_run(st, &op);
}

int kt_id_put(kt_store *st, uint64_t id, const void *value, size_t len,
	      const kt_create_options *opts)
{
	kt__op op = op_id(KT__OP_PUT, id);

	op.data = value;
	op.len = len;
	op_opts(&op, opts);
	return kt__op_run(st, &op);
}

int kt_id_truncate(kt_store *st, uint64_t id, uint64_t size)
{
	kt__op op = op_id(KT__OP_TRUNCATE, id);

	op.off = size;
	return kt__op_run(st, &op);
}

int kt_id_setattr(kt_statbuf *sb, kt_store *st, uint64_t id,
		  const kt_setattr_args *args)
{
	kt__op op = op_id(KT__OP_SETATTR, id);

	if (args == NULL)
		return kt__err(KT_EINVAL, "id_setattr: args is NULL");
	op.sa = *args;
	op.flags = KT_NOFOLLOW;
	op.out = sb;
	return kt__op_run(st, &op);
}

int kt_id_attr_set(kt_store *st, uint64_t id, const char *name,
		   const void *value, size_t len, unsigned int flags)
{
	kt__op op = op_id(KT__OP_ATTR_SET, id);

	op.path2 = name;
	op.data = value;
	op.len = len;
	op.flags = flags;
	return kt__op_run(st, &op);
}

int kt_id_attr_delete(kt_store *st, uint64_t id, const char *name)
{
	kt__op op = op_id(KT__OP_ATTR_DELETE, id);

	op.path2 = name;
	return kt__op_run(st, &op);
}

int kt_id_delete(kt_store *st, uint64_t id, unsigned int flags)
{
	kt__op op = op_id(KT__OP_DELETE, id);

	op.flags = flags;
	return kt__op_run(st, &op);
}

int kt_id_attr_get(void **value, size_t *len, kt_store *st, uint64_t id,
		   const char *name)
{
	char b[KT__SHOWSZ], part[32];
	unsigned int attempt = 0;
	kt__node n = {0};
	kt__buf v = {0};
	kt__rd rd;
	int rc;

	if (value == NULL || len == NULL || st == NULL)
		return kt__err(KT_EINVAL, "id_attr_get: NULL argument");
	*value = NULL;
	*len = 0;
	if (name == NULL || name[0] == '\0')
		return kt__err(KT_EINVAL, "id_attr_get: empty attribute name");
	if (strlen(name) > KT_NAME_MAX)
		return kt__err(KT_ENAMETOOLONG, "id_attr_get: attribute name "
			       "of %zu bytes is over the limit of %d",
			       strlen(name), KT_NAME_MAX);
	if (strncmp(name, st->delim.s, st->delim.len) == 0)
		return kt__err(KT_ERESERVED, "id_attr_get: attribute name "
			       "'%s' starts with the reserved delimiter",
			       SHOW(b, name));
	do {
		v.len = 0;
		/* One snapshot: the node is alive where its attribute is
		 * read. */
		if ((rc = kt__rd_begin_snap(&rd, st)) == 0 &&
		    (rc = id_lookup_rd(&n, NULL, &rd, id)) == 0) {
			kt__part_attr(part, id);
			rc = kt__rd_get(&rd, kt__sl(part, strlen(part)),
					kt__sl(name, strlen(name)), &v);
			if (rc == KT_ENOTFOUND)
				rc = kt__err(KT_ENOATTR, "id_attr_get: node "
					     "%llu has no attribute '%s'",
					     (unsigned long long)id,
					     SHOW(b, name));
		}
		kt__node_free(&n);
		memset(&n, 0, sizeof(n));
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc == 0 && (*value = kt__buf_detach(&v, len)) == NULL)
		rc = kt__err(KT_ENOMEM, "out of memory");
	kt__buf_free(&v);
	return rc;
}
