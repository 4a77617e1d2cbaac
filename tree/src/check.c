/*
 * check.c - kt_check: verify the invariants of a store over a snapshot.
 *
 *  1. The header row and the counter row exist; the root node exists and
 *     is a directory.
 *  2. Every node row decodes (a special file's payload: a known type, a
 *     device number only on a device); its id is unique and below the
 *     persisted id limit, its version below the version limit; its
 *     parent's node row exists and is a directory; its parent's index
 *     partition has a row for it with the same kind, id (and type); only a
 *     directory has children; nsubdirs matches its children; nattrs
 *     matches its attribute rows, nblocks its block rows (format 2); no
 *     block lies past its value, and a node without a value (a directory,
 *     link or special file) has none.
 *  3. Every index row decodes and points at a node row of the same kind,
 *     id and type (no index row points at nothing).
 *  4. Every block and attribute row belongs to a live node.
 *  5. Every node has an id row naming its path, and every id row belongs
 *     to a node in the tree (format 2).
 *  6. A node with several paths (format 4): the id row names one of them
 *     and an alias row each other; at the path the id row names, the
 *     recorded paths number its link count and every one holds the same
 *     node row; every alias row names a node row of its id with more than
 *     one path.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tree.h"

typedef struct checker {
	kt_store *st;
	kt__rd rd;
	kt_check_cb cb;
	kt_progress_cb progress;
	void *payload;
	size_t bad;
	uint64_t done, total;
	int stop;
	uint64_t id_limit, ver_limit;
	/* live node ids: open-addressing set */
	uint64_t *ids;
	size_t nids, capids;
	/* On an engine that validates reads (RADOS) the violations are
	 * held, NUL-separated, until the reads are known to be one moment
	 * (CHECK_HOLD_MAX at most; the rest are only counted). */
	int hold;
	kt__buf held;
	size_t nheld;
	/* The attribute and block partitions, counted before the nodes
	 * (data_scan), in id order. */
	struct dlist {
		struct dcount *v;
		size_t n, cap;
	} attrs, blks;
} checker;

/* The rows of one node's attribute or block partition. */
typedef struct dcount {
	uint64_t id;
	size_t n;
	uint64_t maxb;  /* blocks: the last block's number + 1 */
	size_t lastlen; /* and its length */
} dcount;

#define CHECK_HOLD_MAX 10000
#define CHECK_ATTEMPTS 3

static void violation(checker *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void violation(checker *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	c->bad++;
	if (c->cb == NULL || c->stop)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->hold) {
		if (c->nheld < CHECK_HOLD_MAX &&
		    kt__buf_add(&c->held, msg, strlen(msg) + 1) == 0)
			c->nheld++;
		return;
	}
	if (c->cb(msg, c->payload) != 0)
		c->stop = 1;
}

/* Hand the held violations to the callback. */
static void deliver(checker *c)
{
	char msg[128];
	size_t at = 0, i;

	for (i = 0; i < c->nheld && at < c->held.len; i++) {
		const char *m = c->held.p + at;
		at += strlen(m) + 1;
		if (c->cb(m, c->payload) != 0)
			return;
	}
	if (c->bad > c->nheld) {
		snprintf(msg, sizeof(msg), "%zu further violations not "
			 "listed", c->bad - c->nheld);
		(void)c->cb(msg, c->payload);
	}
}

static size_t id_slot(const checker *c, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15ULL) & (c->capids - 1);

	while (c->ids[i] != 0 && c->ids[i] != id)
		i = (i + 1) & (c->capids - 1);
	return i;
}

/* Add an id; 1 if it was new, 0 if already present, <0 on error. */
static int id_add(checker *c, uint64_t id)
{
	size_t i;

	if ((c->nids + 1) * 2 > c->capids) {
		uint64_t *old = c->ids;
		size_t ocap = c->capids, j;
		c->capids = c->capids ? c->capids * 2 : 1024;
		c->ids = calloc(c->capids, sizeof(*c->ids));
		if (c->ids == NULL) {
			c->ids = old;
			c->capids = ocap;
			return kt__err(KT_ENOMEM, "out of memory");
		}
		for (j = 0; j < ocap; j++)
			if (old[j] != 0)
				c->ids[id_slot(c, old[j])] = old[j];
		free(old);
	}
	i = id_slot(c, id);
	if (c->ids[i] == id)
		return 0;
	c->ids[i] = id;
	c->nids++;
	return 1;
}

static int id_has(const checker *c, uint64_t id)
{
	return c->capids && c->ids[id_slot(c, id)] == id;
}

static const char *showp(char *buf, size_t sz, const kt__buf *p)
{
	return kt__show(buf, sz, p->p, p->len);
}

/* Count rows in partition part, and those whose index value has the DIR
 * kind. */
static int count_part(checker *c, kt__slice part, size_t *n, size_t *dirs)
{
	kt__scan how;
	kt__mcur *cur = NULL;
	kt__row row;
	int rc;

	*n = 0;
	*dirs = 0;
	memset(&how, 0, sizeof(how));
	how.part = part;
	if ((rc = kt__rd_scan(&cur, &c->rd, &how)) != 0)
		return rc;
	while ((rc = kt__mcur_next(cur, &row)) == 0) {
		(*n)++;
		if (row.value.len == KT__INDEX_LEN &&
		    ((unsigned char)row.value.p[0] & KT_KIND_DIR))
			(*dirs)++;
	}
	kt__mcur_free(cur);
	return rc == KT_ITEROVER ? 0 : rc;
}

/* Node n at @p path (partition key @p part, row @p val) has several
 * paths: this one must be recorded, and at its primary path (the one the
 * id row names) all of them must agree. */
static int check_paths(checker *c, const kt__node *n, const kt__buf *path,
		       kt__slice part, kt__slice val)
{
	char a[KT__SHOWSZ], b[KT__SHOWSZ], ap[32];
	kt__buf prim = {0}, v = {0};
	kt__paths ps = {0};
	size_t i;
	int rc;

	rc = kt__id_get(&prim, &c->rd, n->id);
	if (rc == KT_ENOTFOUND) {
		violation(c, "node '%s': id %llu has no id row",
			  showp(a, sizeof(a), path), (unsigned long long)n->id);
		rc = 0;
		goto out;
	}
	if (rc != 0)
		goto out;
	if (prim.len != part.len ||
	    (part.len > 0 && memcmp(prim.p, part.p, part.len) != 0)) {
		/* Not the primary: an alias row must name it. */
		kt__part_alias(ap, n->id);
		rc = kt__rd_get(&c->rd, kt__sl(ap, strlen(ap)), part, &v);
		if (rc == KT_ENOTFOUND)
			violation(c, "node '%s': one of %u paths of id %llu, "
				  "but neither its id row nor an alias row "
				  "names it", showp(a, sizeof(a), path),
				  (unsigned)n->nlink,
				  (unsigned long long)n->id);
		rc = rc == KT_ENOTFOUND ? 0 : rc;
		goto out;
	}
	if ((rc = kt__paths_get(&ps, &c->rd, n->id)) != 0)
		goto out;
	if (ps.n != n->nlink)
		violation(c, "node '%s': link count %u, but %zu paths are "
			  "recorded for id %llu", showp(a, sizeof(a), path),
			  (unsigned)n->nlink, ps.n, (unsigned long long)n->id);
	for (i = 1; i < ps.n; i++) {
		v.len = 0;
		rc = kt__rd_get(&c->rd, kt__slb(&ps.v[i]), kt__sl("", 0), &v);
		if (rc == KT_ENOTFOUND)
			violation(c, "node '%s': its alias '%s' has no node "
				  "row", showp(a, sizeof(a), path),
				  kt__show(b, sizeof(b), ps.v[i].p,
					   ps.v[i].len));
		else if (rc != 0)
			goto out;
		else if (v.len != val.len || memcmp(v.p, val.p, v.len) != 0)
			violation(c, "node '%s': its alias '%s' holds another "
				  "node row (the paths of one node disagree)",
				  showp(a, sizeof(a), path),
				  kt__show(b, sizeof(b), ps.v[i].p,
					   ps.v[i].len));
		rc = 0;
	}
out:
	kt__buf_free(&prim);
	kt__buf_free(&v);
	kt__paths_free(&ps);
	return rc;
}

/* Every alias row must name a node row of its id with several paths (the
 * node's side was checked with the node). */
static int check_alias_rows(checker *c)
{
	size_t pl = strlen(KT__PART_ALIAS);
	char a[KT__SHOWSZ];
	kt__scan how;
	kt__mcur *cur = NULL;
	kt__row row;
	int rc;

	memset(&how, 0, sizeof(how));
	how.part = kt__sl(KT__PART_ALIAS, pl);
	how.flags = KT__SCAN_PREFIX;
	if ((rc = kt__rd_scan(&cur, &c->rd, &how)) != 0)
		return rc;
	while (!c->stop && (rc = kt__mcur_next(cur, &row)) == 0) {
		kt__buf v = {0};
		kt__node n = {0};
		char hex[17];
		uint64_t id;
		int grc;
		if (row.part.len != pl + 16) {
			violation(c, "an alias row has a malformed partition "
				  "key");
			continue;
		}
		memcpy(hex, row.part.p + pl, 16);
		hex[16] = '\0';
		id = strtoull(hex, NULL, 16);
		grc = kt__rd_get(&c->rd, row.sort, kt__sl("", 0), &v);
		if (grc != 0 && grc != KT_ENOTFOUND) {
			rc = grc;
			break;
		}
		if (grc == KT_ENOTFOUND ||
		    kt__node_decode_hdr(&n, v.p, v.len) != 0 || n.id != id ||
		    n.nlink < 2)
			violation(c, "the alias row of id %llu names '%s', "
				  "which is not a path of that node",
				  (unsigned long long)id,
				  kt__show(a, sizeof(a), row.sort.p,
					   row.sort.len));
		kt__buf_free(&v);
	}
	kt__mcur_free(cur);
	return rc == KT_ITEROVER ? 0 : rc;
}

/* Count the rows of every partition starting with @p prefix ("/attr/"
 * or "/blk/" followed by 16 hex digits of an id) into @p l, in one scan:
 * a node's counts are then looked up, not scanned for, one partition
 * per node (on RADOS, mostly objects that do not exist). */
static int data_scan(checker *c, const char *prefix, const char *what,
		     struct dlist *l)
{
	kt__scan how;
	kt__mcur *cur = NULL;
	kt__row row;
	size_t pl = strlen(prefix);
	int rc;

	memset(&how, 0, sizeof(how));
	how.part = kt__sl(prefix, pl);
	how.flags = KT__SCAN_PREFIX;
	if ((rc = kt__rd_scan(&cur, &c->rd, &how)) != 0)
		return rc;
	while (!c->stop && (rc = kt__mcur_next(cur, &row)) == 0) {
		char hex[17], *end;
		uint64_t id;
		dcount *d;
		if (row.part.len != pl + 16) {
			violation(c, "%s row with a malformed partition key",
				  what);
			continue;
		}
		memcpy(hex, row.part.p + pl, 16);
		hex[16] = '\0';
		id = strtoull(hex, &end, 16);
		if (*end != '\0' || id == 0) {
			violation(c, "%s row with a malformed partition key",
				  what);
			continue;
		}
		if (l->n == 0 || l->v[l->n - 1].id != id) {
			if (l->n == l->cap) {
				size_t cap = l->cap ? 2 * l->cap : 256;
				dcount *nv = realloc(l->v, cap * sizeof(*nv));
				if (nv == NULL) {
					rc = kt__err(KT_ENOMEM,
						     "out of memory");
					break;
				}
				l->v = nv;
				l->cap = cap;
			}
			memset(&l->v[l->n], 0, sizeof(l->v[0]));
			l->v[l->n++].id = id;
		}
		d = &l->v[l->n - 1];
		d->n++;
		if (row.sort.len == 8) {
			uint64_t b = kt__get64be(
				(const unsigned char *)row.sort.p);
			size_t len = row.value.len;
			/* A block that fails its checksum reads as an
			 * error, never as wrong bytes: still damage. */
			if (l == &c->blks &&
			    kt__blk_open(c->st, id, b, row.value.p, &len) != 0)
				violation(c, "%s", kt_errmsg());
			if (b + 1 > d->maxb) {
				d->maxb = b + 1;
				d->lastlen = len;
			}
		}
	}
	kt__mcur_free(cur);
	return rc == KT_ITEROVER ? 0 : rc;
}

/* The counts of node @p id in @p l (sorted by id), or NULL: none. */
static const dcount *data_of(const struct dlist *l, uint64_t id)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->n && l->v[lo].id == id ? &l->v[lo] : NULL;
}

/* Block and attribute partitions must belong to live nodes. */
static void data_orphans(checker *c, const struct dlist *l, const char *what)
{
	size_t i;

	for (i = 0; i < l->n && !c->stop; i++)
		if (!id_has(c, l->v[i].id))
			violation(c, "%s rows of node id %llu, which does not "
				  "exist", what,
				  (unsigned long long)l->v[i].id);
}

/* Everything check_node is about to read of node @p n at @p path, asked
 * for at once: on an engine whose reads are round trips (RADOS) they then
 * cost about one round instead of four, one after the other.  Only what
 * check_node surely reads, so that nothing sent ahead is left unread. */
static void node_prefetch(checker *c, const kt__buf *path, const kt__node *n)
{
	size_t at = 0;
	kt_store *st = c->st;
	kt__buf pp = {0};
	unsigned char k[8];
	size_t plen;

	if (path->len > 1) {
		plen = kt__parent_len(path->p, path->len);
		if (kt__enc_node(&pp, &st->delim, plen ? path->p : "/",
				 plen ? plen : 1) == 0)
			kt__rd_prefetch(&c->rd, kt__slb(&pp), kt__sl("", 0));
		pp.len = 0;
		if (kt__enc_entry(&pp, &at, &st->delim, path->p,
				  path->len) == 0)
			kt__rd_prefetch(&c->rd, kt__sl(pp.p, at),
					kt__sl(pp.p + at, pp.len - at));
	}
	if (n->nlink <= 1 && st->format >= 2) {
		kt__put64be(k, n->id);
		kt__rd_prefetch(&c->rd, kt__sl(KT__PART_ID,
					       strlen(KT__PART_ID)),
				kt__sl(k, 8));
	}
	pp.len = 0;
	if (kt__enc_index(&pp, &st->delim, path->p, path->len) == 0)
		kt__rd_prefetch_scan(&c->rd, kt__slb(&pp));
	kt__buf_free(&pp);
}

static int check_node(checker *c, kt__slice part, kt__slice val)
{
	size_t at = 0;
	kt_store *st = c->st;
	kt__buf path = {0}, ipart = {0}, iv = {0}, pv = {0};
	char a[KT__SHOWSZ];
	const dcount *dc;
	kt__node n = {0}, parent = {0};
	size_t cnt, dirs, plen, lastlen = 0;
	uint64_t maxb;
	unsigned int ikind, itype;
	uint64_t iid;
	int rc;

	rc = kt__dec_node(&path, &st->delim, part.p, part.len);
	if (rc != 0) {
		violation(c, "node row with a malformed partition key of %zu "
			  "bytes", part.len);
		goto out;
	}
	/* One path, one key: the key is the path's own encoding (with
	 * typed names, each name in its one row form: path.c). */
	if (st->delim.typed) {
		rc = kt__enc_node(&ipart, &st->delim, path.p, path.len);
		if (rc != 0)
			goto out;
		if (ipart.len != part.len ||
		    memcmp(ipart.p, part.p, part.len) != 0) {
			violation(c, "node '%s': its key is not the row form "
				  "of its path", showp(a, sizeof(a), &path));
			rc = 0;
			goto out;
		}
		ipart.len = 0;
	}
	if (kt__node_decode(&n, val.p, val.len) != 0) {
		violation(c, "node '%s': row does not decode: %s",
			  showp(a, sizeof(a), &path), kt_errmsg());
		rc = 0;
		goto out;
	}
	/* No call can reach a node over a limit by its path: only an old
	 * library's rename could have made one (kt_repair cannot move it;
	 * removing an ancestor within the limits removes it). */
	if (path.len > KT_PATH_MAX ||
	    kt__depth(path.p, path.len) > KT_DEPTH_MAX)
		violation(c, "node '%s': its path of %zu bytes and %zu "
			  "components is over the limits (%d bytes, %d "
			  "components)",
			  showp(a, sizeof(a), &path), path.len,
			  kt__depth(path.p, path.len), KT_PATH_MAX,
			  KT_DEPTH_MAX);
	if ((rc = id_add(c, n.id)) < 0)
		goto out;
	if (rc == 0 && n.nlink <= 1)
		violation(c, "node '%s': id %llu is used twice",
			  showp(a, sizeof(a), &path),
			  (unsigned long long)n.id);
	if (n.id == 0 || n.id >= c->id_limit)
		violation(c, "node '%s': id %llu is not below the persisted "
			  "limit %llu", showp(a, sizeof(a), &path),
			  (unsigned long long)n.id,
			  (unsigned long long)c->id_limit);
	if (n.version >= c->ver_limit)
		violation(c, "node '%s': version %llu is not below the "
			  "persisted limit %llu", showp(a, sizeof(a), &path),
			  (unsigned long long)n.version,
			  (unsigned long long)c->ver_limit);
	rc = 0;
	if (path.len == 1) {
		if (!(n.kind & KT_KIND_DIR) || (n.kind & KT_KIND_ITEM))
			violation(c, "root node has kind %u, not a directory",
				  n.kind);
	} else {
		/* Parent exists and is a directory. */
		plen = kt__parent_len(path.p, path.len);
		rc = kt__node_get(&parent, &c->rd, plen ? path.p : "/",
				  plen ? plen : 1);
		if (rc == KT_ENOTFOUND || rc == KT_ECORRUPT)
			violation(c, "node '%s': its parent has no node row "
				  "(unreachable)", showp(a, sizeof(a), &path));
		else if (rc == 0 && !(parent.kind & KT_KIND_DIR))
			violation(c, "node '%s': its parent is not a "
				  "directory", showp(a, sizeof(a), &path));
		else if (rc != 0)
			goto out;
		/* The index row in the parent's partition matches. */
		rc = kt__enc_entry(&ipart, &at, &st->delim, path.p, path.len);
		if (rc == 0)
			rc = kt__rd_get(&c->rd, kt__sl(ipart.p, at),
					kt__sl(ipart.p + at, ipart.len - at),
					&iv);
		if (rc == KT_ENOTFOUND)
			violation(c, "node '%s': no index row in its parent "
				  "(unreachable)", showp(a, sizeof(a), &path));
		else if (rc != 0)
			goto out;
		else if (kt__index_decode(&ikind, &iid, &itype, iv.p,
					  iv.len) != 0)
			violation(c, "node '%s': its index row does not "
				  "decode", showp(a, sizeof(a), &path));
		else if (ikind != n.kind || iid != n.id ||
			 itype != kt__node_type(&n, NULL))
			violation(c, "node '%s': index row says kind %u id "
				  "%llu type %u, node row kind %u id %llu "
				  "type %u", showp(a, sizeof(a), &path), ikind,
				  (unsigned long long)iid, itype, n.kind,
				  (unsigned long long)n.id,
				  kt__node_type(&n, NULL));
		rc = 0;
	}
	/* The id row names this node's path, or one of them. */
	if (n.nlink > 1) {
		if ((rc = check_paths(c, &n, &path, part, val)) != 0)
			goto out;
	} else if (st->format >= 2) {
		pv.len = 0;
		rc = kt__id_get(&pv, &c->rd, n.id);
		if (rc == KT_ENOTFOUND)
			violation(c, "node '%s': id %llu has no id row",
				  showp(a, sizeof(a), &path),
				  (unsigned long long)n.id);
		else if (rc != 0)
			goto out;
		else if (pv.len != part.len ||
			 (part.len > 0 && memcmp(pv.p, part.p, part.len) != 0))
			violation(c, "node '%s': the id row of id %llu names "
				  "another path", showp(a, sizeof(a), &path),
				  (unsigned long long)n.id);
		rc = 0;
	}
	/* Children. */
	ipart.len = 0;
	if ((rc = kt__enc_index(&ipart, &st->delim, path.p, path.len)) != 0 ||
	    (rc = count_part(c, kt__slb(&ipart), &cnt, &dirs)) != 0)
		goto out;
	if (!(n.kind & KT_KIND_DIR) && cnt > 0)
		violation(c, "node '%s': not a directory but has %zu children",
			  showp(a, sizeof(a), &path), cnt);
	if (dirs != n.nsubdirs)
		violation(c, "node '%s': nsubdirs is %u but %zu children are "
			  "directories", showp(a, sizeof(a), &path),
			  (unsigned)n.nsubdirs, dirs);
	/* (A handle opened before another set the counted flag sees
	 * counted rows in a store it believes uncounted: they are kept
	 * exact all the same, node.c.) */
	if (n.counted && n.nentries != cnt)
		violation(c, "node '%s': entry count is %u but it has %zu "
			  "children", showp(a, sizeof(a), &path),
			  (unsigned)n.nentries, cnt);
	/* Attributes. */
	dc = data_of(&c->attrs, n.id);
	cnt = dc != NULL ? dc->n : 0;
	if (cnt != n.nattrs)
		violation(c, "node '%s': nattrs is %u but %zu attribute rows "
			  "exist", showp(a, sizeof(a), &path),
			  (unsigned)n.nattrs, cnt);
	/* Blocks. */
	dc = data_of(&c->blks, n.id);
	cnt = dc != NULL ? dc->n : 0;
	maxb = dc != NULL ? dc->maxb : 0;
	lastlen = dc != NULL ? dc->lastlen : 0;
	if (st->format >= 2 && cnt != n.nblocks)
		violation(c, "node '%s': nblocks is %u but %zu block rows "
			  "exist", showp(a, sizeof(a), &path),
			  (unsigned)n.nblocks, cnt);
	if (cnt > 0 && !((n.kind & KT_KIND_ITEM) && n.size > st->inline_max))
		violation(c, "node '%s': %zu block rows but the value is "
			  "inline or absent", showp(a, sizeof(a), &path), cnt);
	else if (cnt > 0 && maxb > (n.size + st->block - 1) / st->block)
		violation(c, "node '%s': block %llu lies past the end of the "
			  "%llu-byte value", showp(a, sizeof(a), &path),
			  (unsigned long long)(maxb - 1),
			  (unsigned long long)n.size);
	else if (cnt > 0 && maxb == (n.size + st->block - 1) / st->block &&
		 lastlen > n.size - (maxb - 1) * st->block)
		violation(c, "node '%s': block %llu holds %zu bytes, past the "
			  "end of the %llu-byte value",
			  showp(a, sizeof(a), &path),
			  (unsigned long long)(maxb - 1), lastlen,
			  (unsigned long long)n.size);
out:
	kt__node_free(&n);
	kt__node_free(&parent);
	kt__buf_free(&path);
	kt__buf_free(&ipart);
	kt__buf_free(&iv);
	kt__buf_free(&pv);
	return rc;
}

static int check_index(checker *c, kt__slice part, kt__slice sort,
		       kt__slice val)
{
	kt_store *st = c->st;
	kt__buf dir = {0}, np = {0}, nv = {0};
	char a[KT__SHOWSZ];
	kt__node n = {0};
	unsigned int kind, type;
	uint64_t id;
	int rc;

	/* part = E(dir) || D */
	if (part.len < st->delim.len ||
	    kt__dec_node(&dir, &st->delim, part.p,
			 part.len - st->delim.len) != 0) {
		violation(c, "index row with a malformed partition key");
		return 0;
	}
	/* With typed names the sort key is a name's one row form: a key
	 * that is not would make listing the directory fail. */
	if (st->delim.typed &&
	    kt__name_dec(&np, &st->delim, sort.p, sort.len) != 0) {
		violation(c, "index row in '%s' whose key is no name's row "
			  "form (%zu bytes)", showp(a, sizeof(a), &dir),
			  sort.len);
		kt__buf_free(&dir);
		kt__buf_free(&np);
		return 0;
	}
	np.len = 0;
	if (kt__index_decode(&kind, &id, &type, val.p, val.len) != 0) {
		violation(c, "index row '%s' -> '%.*s' does not decode",
			  showp(a, sizeof(a), &dir), (int)sort.len, sort.p);
		kt__buf_free(&dir);
		kt__buf_free(&np);
		return 0;
	}
	rc = kt__buf_add(&np, part.p, part.len);
	if (rc == 0)
		rc = kt__buf_add(&np, sort.p, sort.len);
	if (rc == 0)
		rc = kt__rd_get(&c->rd, kt__slb(&np), kt__sl("", 0), &nv);
	if (rc == KT_ENOTFOUND) {
		violation(c, "index row '%s' -> '%.*s' points at no node",
			  showp(a, sizeof(a), &dir), (int)sort.len, sort.p);
		rc = 0;
	} else if (rc == 0 && kt__node_decode(&n, nv.p, nv.len) == 0 &&
		   (n.kind != kind || n.id != id ||
		    kt__node_type(&n, NULL) != type)) {
		violation(c, "index row '%s' -> '%.*s' says kind %u id %llu "
			  "type %u, the node has kind %u id %llu type %u",
			  showp(a, sizeof(a), &dir), (int)sort.len, sort.p,
			  kind, (unsigned long long)id, type, n.kind,
			  (unsigned long long)n.id, kt__node_type(&n, NULL));
	}
	kt__node_free(&n);
	kt__buf_free(&dir);
	kt__buf_free(&np);
	kt__buf_free(&nv);
	return rc == KT_ECORRUPT ? 0 : rc;
}

/* Items detached from the tree while in use (orphan.c) are live: they
 * must decode, be plain items, and hold ids of their own. */
static int check_detached(checker *c)
{
	kt__scan how;
	kt__mcur *cur = NULL;
	kt__row row;
	int rc;

	memset(&how, 0, sizeof(how));
	how.part = kt__sl(KT__PART_ORPHAN, strlen(KT__PART_ORPHAN));
	if ((rc = kt__rd_scan(&cur, &c->rd, &how)) != 0)
		return rc;
	while (!c->stop && (rc = kt__mcur_next(cur, &row)) == 0) {
		kt__node n = {0};
		if (row.sort.len != 8 ||
		    kt__node_decode(&n, row.value.p, row.value.len) != 0 ||
		    n.kind != KT_KIND_ITEM) {
			violation(c, "a detached item's row is malformed");
		} else if ((rc = id_add(c, n.id)) <= 0) {
			if (rc < 0)
				break;
			violation(c, "detached item id %llu is used twice",
				  (unsigned long long)n.id);
		}
		rc = 0;
		kt__node_free(&n);
	}
	kt__mcur_free(cur);
	return rc == KT_ITEROVER ? 0 : rc;
}

/* Every id row must belong to a node in the tree (that the node's id row
 * names its path was checked with the node).  Runs before the detached
 * items join the id set: they have no id rows. */
static int check_id_rows(checker *c)
{
	kt__scan how;
	kt__mcur *cur = NULL;
	kt__row row;
	int rc;

	if (c->st->format < 2)
		return 0;
	memset(&how, 0, sizeof(how));
	how.part = kt__sl(KT__PART_ID, strlen(KT__PART_ID));
	if ((rc = kt__rd_scan(&cur, &c->rd, &how)) != 0)
		return rc;
	while (!c->stop && (rc = kt__mcur_next(cur, &row)) == 0) {
		uint64_t id;
		if (row.sort.len != 8) {
			violation(c, "an id row has a malformed key");
			continue;
		}
		id = kt__get64be((const unsigned char *)row.sort.p);
		if (!id_has(c, id))
			violation(c, "the id row of id %llu names no node",
				  (unsigned long long)id);
	}
	kt__mcur_free(cur);
	return rc == KT_ITEROVER ? 0 : rc;
}

/* Count the path rows, for the progress total. */
static int count_rows(checker *c, uint64_t *n)
{
	kt__scan how;
	kt__mcur *cur = NULL;
	kt__row row;
	int rc;

	*n = 0;
	memset(&how, 0, sizeof(how));
	how.part = kt__sl(c->st->delim.s, c->st->delim.len);
	how.flags = KT__SCAN_PREFIX;
	if ((rc = kt__rd_scan(&cur, &c->rd, &how)) != 0)
		return rc;
	while ((rc = kt__mcur_next(cur, &row)) == 0)
		(*n)++;
	kt__mcur_free(cur);
	return rc == KT_ITEROVER ? 0 : rc;
}

static void progress(checker *c, int force)
{
	if (c->progress == NULL || c->stop)
		return;
	if ((force || (c->done & 1023) == 0) &&
	    c->progress(c->done, c->total, c->payload) != 0)
		c->stop = 2;
}

/* What the check of row @p r will read, asked for now (rows.h,
 * prefetch): an index row's child, a node row's parent, index row, id
 * row and listing (node_prefetch). */
static void row_prefetch(checker *c, const kt__row *r)
{
	kt__buf b = {0};
	kt__node n = {0};

	if (r->sort.len > 0) {
		if (kt__buf_add(&b, r->part.p, r->part.len) == 0 &&
		    kt__buf_add(&b, r->sort.p, r->sort.len) == 0)
			kt__rd_prefetch(&c->rd, kt__slb(&b), kt__sl("", 0));
	} else if (kt__dec_node(&b, &c->st->delim, r->part.p, r->part.len) ==
			   0 &&
		   kt__node_decode_hdr(&n, r->value.p, r->value.len) == 0) {
		node_prefetch(c, &b, &n);
	}
	kt__buf_free(&b);
}

/* Rows taken from the scan ahead of their check, so that their reads
 * are in flight together: CHECK_AHEAD rows of up to four reads each. */
#define CHECK_AHEAD 8

typedef struct crow {
	kt__buf part, sort, value;
} crow;

/* Check every row @p cur yields: node rows and index rows. */
static int check_rows(checker *c, kt__mcur *cur)
{
	crow ring[CHECK_AHEAD];
	size_t head = 0, n = 0, i;
	kt__row row;
	int rc = 0, over = 0;

	memset(ring, 0, sizeof(ring));
	while (rc == 0 && !c->stop) {
		while (!over && n < CHECK_AHEAD) {
			crow *r = &ring[(head + n) % CHECK_AHEAD];
			rc = kt__mcur_next(cur, &row);
			if (rc == KT_ITEROVER) {
				over = 1;
				rc = 0;
				break;
			}
			if (rc != 0 ||
			    (rc = kt__buf_set(&r->part, row.part.p,
					      row.part.len)) != 0 ||
			    (rc = kt__buf_set(&r->sort, row.sort.p,
					      row.sort.len)) != 0 ||
			    (rc = kt__buf_set(&r->value, row.value.p,
					      row.value.len)) != 0)
				break;
			row_prefetch(c, &row);
			n++;
		}
		if (rc != 0 || n == 0)
			break;
		{
			crow *r = &ring[head];
			head = (head + 1) % CHECK_AHEAD;
			n--;
			if (r->sort.len == 0)
				rc = check_node(c, kt__slb(&r->part),
						kt__slb(&r->value));
			else
				rc = check_index(c, kt__slb(&r->part),
						 kt__slb(&r->sort),
						 kt__slb(&r->value));
		}
		c->done++;
		progress(c, 0);
	}
	for (i = 0; i < CHECK_AHEAD; i++) {
		kt__buf_free(&ring[i].part);
		kt__buf_free(&ring[i].sort);
		kt__buf_free(&ring[i].value);
	}
	return rc;
}

/* One pass of the check over c->rd's snapshot. */
static int check_pass(checker *c)
{
	kt_store *st = c->st;
	kt__scan how;
	kt__mcur *cur = NULL;
	kt__buf v = {0};
	int rc;

	if (c->progress != NULL && (rc = count_rows(c, &c->total)) != 0)
		return rc;
	progress(c, 1);
	rc = kt__rd_get(&c->rd, kt__sl(KT__PART_META, strlen(KT__PART_META)),
			kt__sl("header", 6), &v);
	if (rc == KT_ENOTFOUND)
		violation(c, "the header row is missing");
	rc = kt__rd_get(&c->rd, kt__sl(KT__PART_META, strlen(KT__PART_META)),
			kt__sl("alloc", 5), &v);
	if (rc == 0 && v.len == 16) {
		c->id_limit = kt__get64((const unsigned char *)v.p);
		c->ver_limit = kt__get64((const unsigned char *)v.p + 8);
	} else {
		violation(c, "the counter row is missing or damaged");
		c->id_limit = c->ver_limit = UINT64_MAX;
	}
	kt__buf_free(&v);
	/* Attribute and block rows first, counted per node. */
	if ((rc = data_scan(c, KT__PART_BLK, "block", &c->blks)) != 0 ||
	    (rc = data_scan(c, KT__PART_ATTR, "attribute", &c->attrs)) != 0)
		return rc;
	/* The root's own row, then every path row (they all start with the
	 * delimiter). */
	rc = kt__rd_get(&c->rd, kt__sl("", 0), kt__sl("", 0), &v);
	if (rc == KT_ENOTFOUND)
		violation(c, "the root node row is missing");
	else if (rc == 0)
		rc = check_node(c, kt__sl("", 0), kt__slb(&v));
	if (rc == KT_ENOTFOUND)
		rc = 0;
	kt__buf_free(&v);
	memset(&how, 0, sizeof(how));
	how.part = kt__sl(st->delim.s, st->delim.len);
	how.flags = KT__SCAN_PREFIX;
	if (rc == 0)
		rc = kt__rd_scan(&cur, &c->rd, &how);
	if (rc == 0)
		rc = check_rows(c, cur);
	kt__mcur_free(cur);
	if (rc == 0 && !c->stop)
		rc = check_id_rows(c);
	if (rc == 0 && !c->stop)
		rc = check_alias_rows(c);
	if (rc == 0 && !c->stop)
		rc = check_detached(c);
	if (rc == 0 && !c->stop)
		data_orphans(c, &c->blks, "block");
	if (rc == 0 && !c->stop)
		data_orphans(c, &c->attrs, "attribute");
	return rc;
}

int kt_check(size_t *nviolations, kt_store *st,
	     const kt_check_options *opts)
{
	kt_check_options def = KT_CHECK_OPTIONS_INIT;
	kt__rows *r;
	checker c;
	unsigned int attempt;
	int rc, torn = 0, fenced;

	if (nviolations != NULL)
		*nviolations = 0;
	if (st == NULL)
		return kt__err(KT_EINVAL, "check: store is NULL");
	if (opts == NULL)
		opts = &def;
	if (opts->version != KT_CHECK_OPTIONS_VERSION)
		return kt__err(KT_EINVAL, "check: options version %u, expected "
			       "%d", opts->version, KT_CHECK_OPTIONS_VERSION);
	r = st->rows;
	/* On RADOS the pass reads each partition at its own moment; if
	 * anything it read changed by its end, another client's commit may
	 * have been seen part way, and the pass is run again, a few times
	 * at most: a tree that never stops changing is checked as it was
	 * read, and the message says so. */
	for (attempt = 0;; attempt++) {
		memset(&c, 0, sizeof(c));
		c.st = st;
		c.cb = opts->on_violation;
		c.progress = opts->on_progress;
		c.payload = opts->payload;
		c.rd.st = st;
		c.hold = kt__rd_validates(st);
		if ((rc = r->ops->snapshot(&c.rd.snap, r)) != 0)
			return rc;
		rc = check_pass(&c);
		torn = 0;
		fenced = rc == KT__ERETRY;
		/* A large rename or delete was under way: the snapshot may
		 * hold it half done (its fence, rows.h).  The read that
		 * said so waited for it to end: check again. */
		if (fenced)
			rc = 0;
		if (rc == 0 && c.hold && c.stop != 2) {
			int v = r->ops->validate(r, c.rd.snap);
			if (v == KT__ERETRY)
				torn = 1;
			else
				rc = v;
		}
		r->ops->snapshot_free(r, c.rd.snap);
		free(c.ids);
		free(c.attrs.v);
		free(c.blks.v);
		if (!fenced && (!torn || attempt + 1 >= CHECK_ATTEMPTS))
			break;
		kt__buf_free(&c.held);
	}
	if (rc == 0 && c.hold && c.cb != NULL)
		deliver(&c);
	kt__buf_free(&c.held);
	if (rc == 0 && !c.stop)
		progress(&c, 1);
	if (nviolations != NULL)
		*nviolations = c.bad;
	if (rc != 0)
		return rc;
	if (c.stop == 2)
		return kt__err(KT_ITEROVER, "check: stopped by the caller "
			       "after %llu rows", (unsigned long long)c.done);
	if (c.bad > 0)
		return kt__err(KT_ECORRUPT, "check: %zu violation%s found%s",
			       c.bad, c.bad == 1 ? "" : "s",
			       torn ? " while other clients kept changing "
				      "the tree (some may be their commits "
				      "seen part way: check again when they "
				      "stop)" : "");
	return 0;
}

/* One count of kt_stats over @p rd's snapshot. */
static int stats_pass(kt_store_stats *out, kt__rd *rd)
{
	kt__scan how;
	kt__mcur *cur = NULL;
	kt__row row;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&how, 0, sizeof(how));
	how.flags = KT__SCAN_PREFIX; /* the empty prefix: every row */
	rc = kt__rd_scan(&cur, rd, &how);
	while (rc == 0 && (rc = kt__mcur_next(cur, &row)) == 0) {
		out->rows++;
		out->row_bytes += row.part.len + 1 + row.sort.len +
				  row.value.len;
		if (row.part.len >= 6 &&
		    memcmp(row.part.p, KT__PART_ATTR, 6) == 0) {
			out->attrs++;
		} else if (row.part.len >= 7 &&
			   memcmp(row.part.p, KT__PART_ALIAS, 7) == 0) {
			out->aliases++;
		} else if (row.sort.len == 0 &&
			   (row.part.len == 0 || row.part.p[0] != '/')) {
			kt__node n = {0};
			if ((rc = kt__node_decode_hdr(&n, row.value.p,
						      row.value.len)) != 0)
				break;
			/* A node with several paths counts once, at the
			 * path its id row names. */
			if (n.nlink > 1) {
				kt__buf prim = {0};
				int same;
				if ((rc = kt__id_get(&prim, rd, n.id)) != 0 &&
				    rc != KT_ENOTFOUND)
					break;
				same = rc == 0 && prim.len == row.part.len &&
				       memcmp(prim.p, row.part.p,
					      prim.len) == 0;
				kt__buf_free(&prim);
				rc = 0;
				if (!same)
					continue;
			}
			if (n.kind & KT_KIND_ITEM) {
				out->items++;
				out->value_bytes += n.size;
			}
			if (n.kind & KT_KIND_DIR)
				out->dirs++;
			if (n.kind & KT_KIND_LINK)
				out->links++;
			if (n.kind & KT_KIND_SPECIAL)
				out->specials++;
		}
	}
	kt__mcur_free(cur);
	return rc == KT_ITEROVER ? 0 : rc;
}

int kt_stats(kt_store_stats *out, kt_store *st)
{
	unsigned int attempt = 0;
	kt__rd rd;
	int rc;

	if (out == NULL || st == NULL)
		return kt__err(KT_EINVAL, "stats: NULL argument");
	do {
		if ((rc = kt__rd_begin_snap(&rd, st)) == 0)
			rc = stats_pass(out, &rd);
	} while ((rc = kt__rd_end(&rd, rc, &attempt)) == KT__ERETRY);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}
