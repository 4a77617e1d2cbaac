/*
 * repair.c - kt_repair: bring a damaged store back to a state that passes
 * kt_check, in one atomic batch, losing as little as possible.
 *
 * It reads every path row once, then, parents before children (the row
 * order guarantees it: a node's partition key is a prefix of its
 * descendants'):
 *   - a node row that does not decode, or whose parent is missing or not a
 *     directory, is removed (its descendants follow, as their parent is
 *     then missing);
 *   - a node without an index row is linked back into its parent, and one
 *     without an id row naming its path gets one;
 * then every index row that points at nothing is removed and one that
 * disagrees with its node is rewritten; counts are recomputed; block and
 * attribute rows of no live node, and blocks past the end of a value, are
 * removed, as are id rows that name no node with their id; the counter
 * row is raised above every id and version in use.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tree.h"

/* Every row under a partition prefix, copied. */
typedef struct rows {
	kt__buf *part, *sort, *val;
	size_t n, cap;
} rows;

/* The state of one repair.  kt__tx_run() may run the repair several times
 * (another process changed the store meanwhile): everything from tx down
 * belongs to the current attempt and is reset at its start, and the fix
 * messages reach the callback only after the attempt that committed. */
typedef struct fixer {
	kt_check_cb cb;
	void *payload;
	kt__tx *tx;
	kt__rd rd;
	rows r;       /* every row of the store, as this attempt read it */
	kt__buf msgs; /* this attempt's fix messages, each NUL-terminated */
	size_t nmsgs;
	int msgs_rc;  /* KT_ENOMEM if a message could not be kept */
	size_t fixed;
	size_t swept; /* RADOS: commit records settled first */
	uint64_t max_id, max_ver;
	uint64_t *live; /* ids of surviving nodes, unsorted until the end */
	size_t nlive, caplive;
} fixer;

static int live_add(fixer *f, uint64_t id)
{
	if (f->nlive == f->caplive) {
		size_t nc = f->caplive ? f->caplive * 2 : 256;
		uint64_t *n = realloc(f->live, nc * sizeof(*n));
		if (n == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		f->live = n;
		f->caplive = nc;
	}
	f->live[f->nlive++] = id;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void fixed(fixer *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fixed(fixer *f, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	f->fixed++;
	if (f->cb == NULL || f->msgs_rc != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Kept until the attempt commits: a rerun repairs afresh. */
	f->msgs_rc = kt__buf_add(&f->msgs, msg, strlen(msg) + 1);
	if (f->msgs_rc == 0)
		f->nmsgs++;
}

static void rows_free(rows *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		kt__buf_free(&r->part[i]);
		kt__buf_free(&r->sort[i]);
		kt__buf_free(&r->val[i]);
	}
	free(r->part);
	free(r->sort);
	free(r->val);
}

static int rows_load(rows *r, kt__rd *rd, const char *prefix, size_t plen)
{
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	int rc;

	memset(&how, 0, sizeof(how));
	how.part = kt__sl(prefix, plen);
	how.flags = KT__SCAN_PREFIX;
	if ((rc = kt__rd_scan(&c, rd, &how)) != 0)
		return rc;
	while ((rc = kt__mcur_next(c, &row)) == 0) {
		if (r->n == r->cap) {
			size_t nc = r->cap ? r->cap * 2 : 256;
			kt__buf *a = realloc(r->part, nc * sizeof(*a));
			if (a != NULL)
				r->part = a;
			a = a ? realloc(r->sort, nc * sizeof(*a)) : NULL;
			if (a != NULL)
				r->sort = a;
			a = a ? realloc(r->val, nc * sizeof(*a)) : NULL;
			if (a == NULL) {
				rc = kt__err(KT_ENOMEM, "out of memory");
				break;
			}
			r->val = a;
			r->cap = nc;
		}
		memset(&r->part[r->n], 0, sizeof(kt__buf));
		memset(&r->sort[r->n], 0, sizeof(kt__buf));
		memset(&r->val[r->n], 0, sizeof(kt__buf));
		r->n++;
		if ((rc = kt__buf_set(&r->part[r->n - 1], row.part.p,
				      row.part.len)) != 0 ||
		    (rc = kt__buf_set(&r->sort[r->n - 1], row.sort.p,
				      row.sort.len)) != 0 ||
		    (rc = kt__buf_set(&r->val[r->n - 1], row.value.p,
				      row.value.len)) != 0)
			break;
	}
	kt__mcur_free(c);
	return rc == KT_ITEROVER ? 0 : rc;
}

/* Remove one row by (part, sort). */
static int drop(fixer *f, const kt__buf *part, const kt__buf *sort)
{
	return kt__tx_del(f->tx, kt__slb(part), kt__slb(sort));
}

/* The id row of surviving node n must name its partition @p part. */
static int fix_id_row(fixer *f, const kt__node *n, const kt__buf *part,
		      const char *shown)
{
	kt__buf v = {0};
	int rc = kt__id_get(&v, &f->rd, n->id);

	if (rc == KT_ENOTFOUND ||
	    (rc == 0 && (v.len != part->len ||
			 (v.len > 0 && memcmp(v.p, part->p, v.len) != 0)))) {
		fixed(f, "%s the id row of '%s'",
		      rc == 0 ? "rewrote" : "restored", shown);
		rc = kt__id_put_enc(f->tx, n->id, part->p ? part->p : "",
				    part->len);
	}
	kt__buf_free(&v);
	return rc;
}

/* Remove id rows that name no node with their id (rows of removed or
 * never-finished nodes).  Reads through the batch, so that the rows
 * restored above count. */
static int fix_stray_ids(fixer *f, const rows *r)
{
	size_t i, il = strlen(KT__PART_ID);
	int rc = 0;

	for (i = 0; i < r->n && rc == 0; i++) {
		const kt__buf *p = &r->part[i];
		kt__buf v = {0}, nv = {0};
		kt__node n = {0};
		uint64_t id;
		if (p->len != il || memcmp(p->p, KT__PART_ID, il) != 0)
			continue;
		if (r->sort[i].len != 8) {
			fixed(f, "removed an id row with a malformed key");
			rc = drop(f, p, &r->sort[i]);
			continue;
		}
		id = kt__get64be((const unsigned char *)r->sort[i].p);
		rc = kt__id_get(&v, &f->rd, id);
		if (rc == 0) {
			rc = kt__rd_get(&f->rd, kt__sl(v.p ? v.p : "", v.len),
					kt__sl("", 0), &nv);
			if (rc == 0 &&
			    (kt__node_decode_hdr(&n, nv.p, nv.len) != 0 ||
			     n.id != id))
				rc = KT_ENOTFOUND;
			if (rc == KT_ENOTFOUND) {
				fixed(f, "removed the id row of id %llu, which "
				      "names no node with that id",
				      (unsigned long long)id);
				rc = drop(f, p, &r->sort[i]);
			}
		} else if (rc == KT_ENOTFOUND) {
			rc = 0; /* already dropped in this batch */
		}
		kt__buf_free(&v);
		kt__buf_free(&nv);
	}
	return rc;
}

static int fix_node(fixer *f, const kt__buf *part, const kt__buf *val)
{
	size_t at = 0;
	kt_store *st = f->tx->st;
	kt__buf path = {0}, ip = {0}, iv = {0};
	kt__node n = {0}, parent = {0};
	unsigned int kind, type;
	uint64_t id;
	size_t pl;
	int rc;

	if (kt__dec_node(&path, &st->delim, part->p, part->len) != 0 ||
	    kt__node_decode(&n, val->p, val->len) != 0) {
		fixed(f, "removed a node row that does not decode (%zu-byte "
		      "key)", part->len);
		rc = kt__tx_del(f->tx, kt__slb(part), kt__sl("", 0));
		goto out;
	}
	if (n.id > f->max_id)
		f->max_id = n.id;
	if (n.version > f->max_ver)
		f->max_ver = n.version;
	if (path.len == 1) {
		rc = 0;
		goto out;
	}
	pl = kt__parent_len(path.p, path.len);
	rc = kt__node_get(&parent, &f->rd, pl ? path.p : "/", pl ? pl : 1);
	if (rc == KT_ENOTFOUND || rc == KT_ECORRUPT ||
	    (rc == 0 && !(parent.kind & KT_KIND_DIR))) {
		fixed(f, "removed node '%s': its parent is %s", path.p,
		      rc == 0 ? "not a directory" : "missing");
		rc = kt__tx_del(f->tx, kt__slb(part), kt__sl("", 0));
		/* Of a node with several paths, the others may hold on to
		 * its data; what no path holds goes in fix_orphans. */
		if (rc == 0 && n.nlink <= 1)
			rc = kt__node_drop_data(f->tx, &n);
		goto out;
	}
	if (rc != 0)
		goto out;
	rc = kt__enc_entry(&ip, &at, &st->delim, path.p, path.len);
	if (rc == 0)
		rc = kt__rd_get(&f->rd, kt__sl(ip.p, at),
				kt__sl(ip.p + at, ip.len - at), &iv);
	if (rc == KT_ENOTFOUND ||
	    (rc == 0 &&
	     (kt__index_decode(&kind, &id, &type, iv.p, iv.len) != 0 ||
	      kind != n.kind || id != n.id ||
	      type != kt__node_type(&n, NULL)))) {
		fixed(f, "%s the index row of '%s'",
		      rc == 0 ? "rewrote" : "restored", path.p);
		rc = kt__index_put(f->tx, path.p, path.len, &n);
	}
	/* The paths of a node with several are settled in fix_aliases. */
	if (rc == 0 && n.nlink <= 1)
		rc = fix_id_row(f, &n, part, path.p);
out:
	kt__node_free(&n);
	kt__node_free(&parent);
	kt__buf_free(&path);
	kt__buf_free(&ip);
	kt__buf_free(&iv);
	return rc;
}

static int fix_index(fixer *f, const kt__buf *part, const kt__buf *sort)
{
	kt__buf np = {0}, nv = {0};
	int rc;

	/* With typed names, a key that is no name's row form (path.c)
	 * cannot be listed: such a row goes (its node, if any, is
	 * relinked under its own key by fix_node). */
	if (f->rd.st->delim.typed &&
	    kt__name_dec(&np, &f->rd.st->delim, sort->p, sort->len) != 0) {
		fixed(f, "removed an index row whose key is no name's row "
		      "form (%zu bytes)", sort->len);
		kt__buf_free(&np);
		return drop(f, part, sort);
	}
	np.len = 0;
	rc = kt__buf_add(&np, part->p, part->len);
	if (rc == 0)
		rc = kt__buf_add(&np, sort->p, sort->len);
	if (rc == 0)
		rc = kt__rd_get(&f->rd, kt__slb(&np), kt__sl("", 0), &nv);
	if (rc == KT_ENOTFOUND) {
		fixed(f, "removed an index row naming '%s', which has no node",
		      sort->p);
		rc = drop(f, part, sort);
	}
	kt__buf_free(&np);
	kt__buf_free(&nv);
	return rc;
}

/* One surviving node row that is not a directory, for fix_aliases. */
typedef struct pathref {
	uint64_t id, version;
	uint32_t nlink;
	size_t row; /* index into the loaded rows */
} pathref;

static int pathref_cmp(const void *a, const void *b)
{
	const pathref *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

static int part_in(const rows *r, const pathref *g, size_t ng, kt__slice p)
{
	size_t i;

	for (i = 0; i < ng; i++) {
		const kt__buf *q = &r->part[g[i].row];
		if (q->len == p.len && (p.len == 0 ||
					memcmp(q->p, p.p, p.len) == 0))
			return 1;
	}
	return 0;
}

/* Make the node rows @p g[0..ng) that share one id the paths of one node:
 * the newest copy wins and is written, with the link count ng, under every
 * path whose row differs; the id row names one of them and an alias row
 * each other. */
static int fix_group(fixer *f, const rows *r, const pathref *g, size_t ng)
{
	kt_store *st = f->tx->st;
	kt__rd *rd = &f->rd;
	kt__buf prim = {0}, enc = {0}, cur = {0}, path = {0};
	kt__node n = {0};
	char ap[32], a[KT__SHOWSZ];
	const pathref *best = &g[0];
	kt__slice pp;
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	size_t i;
	int rc;

	for (i = 1; i < ng; i++)
		if (g[i].version > best->version)
			best = &g[i];
	rc = kt__node_get_enc(&n, rd, kt__slb(&r->part[best->row]));
	if (rc != 0)
		goto out;
	n.nlink = (uint32_t)ng;
	if ((rc = kt__node_encode(&enc, &n)) != 0)
		goto out;
	/* The id row names one of the paths. */
	rc = kt__id_get(&prim, rd, n.id);
	if (rc != 0 && rc != KT_ENOTFOUND)
		goto out;
	if (rc == KT_ENOTFOUND ||
	    !part_in(r, g, ng, kt__slb(&prim))) {
		const kt__buf *p0 = &r->part[g[0].row];
		fixed(f, "%s the id row of id %llu to name one of its paths",
		      rc == 0 ? "rewrote" : "restored",
		      (unsigned long long)n.id);
		if ((rc = kt__id_put_enc(f->tx, n.id, p0->p ? p0->p : "",
					 p0->len)) != 0)
			goto out;
		prim.len = 0;
		if ((rc = kt__buf_set(&prim, p0->p ? p0->p : "", p0->len)) != 0)
			goto out;
	}
	rc = 0;
	pp = kt__slb(&prim);
	/* Alias rows: exactly the other paths. */
	kt__part_alias(ap, n.id);
	memset(&how, 0, sizeof(how));
	how.part = kt__sl(ap, strlen(ap));
	if ((rc = kt__rd_scan(&c, rd, &how)) != 0)
		goto out;
	while ((rc = kt__mcur_next(c, &row)) == 0) {
		int keep = part_in(r, g, ng, row.sort) &&
			   !(row.sort.len == pp.len &&
			     memcmp(row.sort.p, pp.p, pp.len) == 0);
		if (keep)
			continue;
		fixed(f, "removed an alias row of id %llu naming '%s', not "
		      "another path of it", (unsigned long long)n.id,
		      kt__show(a, sizeof(a), row.sort.p, row.sort.len));
		cur.len = 0;
		if ((rc = kt__buf_set(&cur, row.sort.p, row.sort.len)) != 0 ||
		    (rc = kt__tx_del(f->tx, how.part, kt__slb(&cur))) != 0)
			break;
	}
	kt__mcur_free(c);
	if (rc != KT_ITEROVER && rc != 0)
		goto out;
	rc = 0;
	for (i = 0; i < ng && rc == 0; i++) {
		const kt__buf *p = &r->part[g[i].row];
		path.len = 0;
		if ((rc = kt__dec_node(&path, &st->delim, p->p, p->len)) != 0)
			break;
		if (!(p->len == pp.len &&
		      (p->len == 0 || memcmp(p->p, pp.p, pp.len) == 0))) {
			cur.len = 0;
			rc = kt__rd_get(rd, how.part, kt__slb(p), &cur);
			if (rc == KT_ENOTFOUND) {
				fixed(f, "restored the alias row of '%s'",
				      path.p);
				rc = kt__alias_add(f->tx, n.id, kt__slb(p));
			}
			if (rc != 0)
				break;
		}
		cur.len = 0;
		if ((rc = kt__rd_get(rd, kt__slb(p), kt__sl("", 0), &cur)) != 0)
			break;
		if (cur.len == enc.len && memcmp(cur.p, enc.p, enc.len) == 0)
			continue;
		fixed(f, "rewrote node '%s' as path %zu of %zu of id %llu (the "
		      "newest copy)", path.p, i + 1, ng,
		      (unsigned long long)n.id);
		rc = kt__tx_put(f->tx, kt__slb(p), kt__sl("", 0),
				kt__slb(&enc));
		if (rc == 0)
			rc = kt__index_put(f->tx, path.p, path.len, &n);
	}
out:
	kt__node_free(&n);
	kt__buf_free(&prim);
	kt__buf_free(&enc);
	kt__buf_free(&cur);
	kt__buf_free(&path);
	return rc;
}

/* Nodes with several paths: every group of surviving node rows that share
 * an id (none of them a directory) becomes the paths of one node, and
 * alias rows of ids that have no such group go. */
static int fix_aliases(fixer *f, const rows *r)
{
	pathref *v = NULL;
	size_t i, j, n = 0, cap = 0, al = strlen(KT__PART_ALIAS);
	int rc = 0;

	for (i = 0; i < r->n && rc == 0; i++) {
		const kt__buf *p = &r->part[i];
		kt__buf val = {0};
		kt__node nd = {0};
		if (p->len == 0 || p->p[0] == '/' || r->sort[i].len != 0)
			continue;
		rc = kt__rd_get(&f->rd, kt__slb(p), kt__sl("", 0), &val);
		if (rc == KT_ENOTFOUND) {
			rc = 0; /* removed above */
		} else if (rc == 0 &&
			   kt__node_decode_hdr(&nd, val.p, val.len) == 0 &&
			   !(nd.kind & KT_KIND_DIR)) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				pathref *nv = realloc(v, nc * sizeof(*nv));
				if (nv == NULL)
					rc = kt__err(KT_ENOMEM, "out of memory");
				else
					v = nv, cap = nc;
			}
			if (rc == 0) {
				v[n].id = nd.id;
				v[n].version = nd.version;
				v[n].nlink = nd.nlink;
				v[n].row = i;
				n++;
			}
		}
		kt__buf_free(&val);
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), pathref_cmp);
	for (i = 0; i < n && rc == 0; i = j) {
		int multi = v[i].nlink > 1;
		for (j = i + 1; j < n && v[j].id == v[i].id; j++)
			multi = 1;
		if (multi)
			rc = fix_group(f, r, v + i, j - i);
	}
	/* Alias rows of ids with no node of several paths. */
	for (i = 0; i < r->n && rc == 0; i++) {
		const kt__buf *p = &r->part[i];
		pathref key, *hit;
		char hex[17];
		if (p->len < al || memcmp(p->p, KT__PART_ALIAS, al) != 0)
			continue;
		hit = NULL;
		if (p->len == al + 16) {
			memcpy(hex, p->p + al, 16);
			hex[16] = '\0';
			key.id = strtoull(hex, NULL, 16);
			/* The first row of the id's group (v is sorted). */
			size_t lo = 0, hi = n;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (v[mid].id < key.id)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < n && v[lo].id == key.id &&
			    (v[lo].nlink > 1 ||
			     (lo + 1 < n && v[lo + 1].id == key.id)))
				hit = &v[lo];
		}
		if (hit != NULL)
			continue; /* its group was settled above */
		fixed(f, "removed an alias row of no node with several paths");
		rc = drop(f, p, &r->sort[i]);
	}
	free(v);
	return rc;
}

/* Count rows of a partition (dirs: how many index rows have DIR). */
static int count(fixer *f, kt__slice part, size_t *n, size_t *dirs)
{
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	int rc;

	*n = *dirs = 0;
	memset(&how, 0, sizeof(how));
	how.part = part;
	if ((rc = kt__rd_scan(&c, &f->rd, &how)) != 0)
		return rc;
	while ((rc = kt__mcur_next(c, &row)) == 0) {
		(*n)++;
		if (row.value.len == KT__INDEX_LEN &&
		    ((unsigned char)row.value.p[0] & KT_KIND_DIR))
			(*dirs)++;
	}
	kt__mcur_free(c);
	return rc == KT_ITEROVER ? 0 : rc;
}

/* Recount a surviving node's children and attributes; trim blocks. */
static int fix_counts(fixer *f, const kt__buf *part)
{
	kt_store *st = f->tx->st;
	kt__buf path = {0}, ip = {0}, v = {0};
	kt__node n = {0};
	char ap[32];
	size_t cnt, dirs;
	int rc, dirty = 0;

	rc = kt__rd_get(&f->rd, kt__slb(part), kt__sl("", 0), &v);
	if (rc == KT_ENOTFOUND) {
		rc = 0; /* removed above */
		goto out;
	}
	if (rc != 0 || (rc = kt__node_decode(&n, v.p, v.len)) != 0 ||
	    (rc = kt__dec_node(&path, &st->delim, part->p, part->len)) != 0)
		goto out;
	if ((rc = kt__enc_index(&ip, &st->delim, path.p, path.len)) != 0 ||
	    (rc = count(f, kt__slb(&ip), &cnt, &dirs)) != 0)
		goto out;
	if (dirs != n.nsubdirs) {
		fixed(f, "'%s': nsubdirs %u -> %zu", path.p, n.nsubdirs, dirs);
		n.nsubdirs = (uint32_t)dirs;
		dirty = 1;
	}
	/* A directory made before its store counted entries is counted
	 * now, quietly; a count that is wrong is a repair. */
	if ((n.kind & KT_KIND_DIR) && (st->counted || n.counted) &&
	    (!n.counted || n.nentries != cnt)) {
		if (n.counted)
			fixed(f, "'%s': entry count %u -> %zu", path.p,
			      n.nentries, cnt);
		n.counted = 1;
		n.nentries = cnt > UINT32_MAX ? UINT32_MAX : (uint32_t)cnt;
		dirty = 1;
	}
	kt__part_attr(ap, n.id);
	if ((rc = count(f, kt__sl(ap, strlen(ap)), &cnt, &dirs)) != 0)
		goto out;
	if (cnt != n.nattrs) {
		fixed(f, "'%s': nattrs %u -> %zu", path.p, n.nattrs, cnt);
		n.nattrs = (uint32_t)cnt;
		dirty = 1;
	}
	/* Blocks past the end go first, then the count of what is left. */
	if ((rc = kt__value_trim(f->tx, &n)) == 1) {
		fixed(f, "'%s': removed value blocks past the end of its "
		      "value", path.p);
		rc = 0;
	}
	if (rc != 0)
		goto out;
	kt__part_blk(ap, n.id);
	if ((rc = count(f, kt__sl(ap, strlen(ap)), &cnt, &dirs)) != 0)
		goto out;
	if (cnt != n.nblocks) {
		/* Quietly for a format 1 store, which never counted them. */
		if (st->format >= 2)
			fixed(f, "'%s': nblocks %u -> %zu", path.p,
			      n.nblocks, cnt);
		n.nblocks = (uint32_t)cnt;
		dirty = 1;
	}
	if (dirty)
		rc = kt__node_put(f->tx, path.p, path.len, &n);
	if (rc == 0)
		rc = live_add(f, n.id);
out:
	kt__node_free(&n);
	kt__buf_free(&path);
	kt__buf_free(&ip);
	kt__buf_free(&v);
	return rc;
}

/* A missing or unreadable root is made again, empty; everything below it
 * is then linked back by fix_node. */
static int fix_root(fixer *f)
{
	kt__node n = {0};
	int rc = kt__node_get(&n, &f->rd, "/", 1);

	if (rc == 0 && (n.kind & KT_KIND_DIR) && !(n.kind & KT_KIND_ITEM)) {
		if (n.id > f->max_id)
			f->max_id = n.id;
		if (n.version > f->max_ver)
			f->max_ver = n.version;
	} else if (rc == 0 || rc == KT_ENOTFOUND || rc == KT_ECORRUPT) {
		kt__node_free(&n);
		memset(&n, 0, sizeof(n));
		fixed(f, "made a new root directory (the old one was %s)",
		      rc == KT_ENOTFOUND ? "missing" : "damaged");
		n.kind = KT_KIND_DIR;
		n.mode = 0755;
		n.uid = f->tx->own.uid;
		n.gid = f->tx->own.gid;
		n.atime = n.mtime = n.ctime = f->tx->now;
		/* A fresh id above anything in use comes later; take one
		 * from the top of the counter range now. */
		rc = kt__tx_alloc_id(f->tx, &n.id);
		if (rc == 0)
			rc = kt__node_put(f->tx, "/", 1, &n);
	}
	if (rc == 0) {
		kt__buf none = {0};
		rc = fix_id_row(f, &n, &none, "/");
	}
	kt__node_free(&n);
	return rc;
}

/* Remove block and attribute rows whose node id is not live. */
static int fix_orphans(fixer *f, const rows *r)
{
	size_t i, bl = strlen(KT__PART_BLK), al = strlen(KT__PART_ATTR);
	uint64_t last = 0;
	int rc = 0;

	qsort(f->live, f->nlive, sizeof(*f->live), u64_cmp);
	for (i = 0; i < r->n && rc == 0; i++) {
		const kt__buf *p = &r->part[i];
		size_t pl = 0;
		char hex[17];
		uint64_t id;
		if (p->len == bl + 16 && memcmp(p->p, KT__PART_BLK, bl) == 0)
			pl = bl;
		else if (p->len == al + 16 &&
			 memcmp(p->p, KT__PART_ATTR, al) == 0)
			pl = al;
		else
			continue;
		memcpy(hex, p->p + pl, 16);
		hex[16] = '\0';
		id = strtoull(hex, NULL, 16);
		if (bsearch(&id, f->live, f->nlive, sizeof(id), u64_cmp))
			continue;
		if (id != last)
			fixed(f, "removed %s rows of node id %llu, which does "
			      "not exist", pl == bl ? "block" : "attribute",
			      (unsigned long long)id);
		last = id;
		rc = drop(f, p, &r->sort[i]);
	}
	return rc;
}

/* A node over the path length or depth limit (only an old library's
 * rename could make one) cannot be repaired: moving it would need a name
 * nobody chose, and removing it would lose data.  Each is reported through
 * the callback, and not counted as a repair; the return is then
 * KT_ECORRUPT with a message saying how to remove such nodes. */
static int over_limits(fixer *f, const kt_store *st, const rows *r)
{
	kt__buf path = {0};
	char msg[1024], a[KT__SHOWSZ];
	size_t i, n = 0, depth;

	for (i = 0; i < r->n; i++) {
		const kt__buf *p = &r->part[i];
		if (p->len == 0 || p->p[0] == '/' || r->sort[i].len != 0)
			continue;
		path.len = 0;
		if (kt__dec_node(&path, &st->delim, p->p, p->len) != 0)
			continue; /* removed above */
		depth = kt__depth(path.p, path.len);
		if (path.len <= KT_PATH_MAX && depth <= KT_DEPTH_MAX)
			continue;
		n++;
		if (f->cb != NULL) {
			snprintf(msg, sizeof(msg),
				 "cannot repair: node '%s' has a path of %zu "
				 "bytes and %zu components, over the limits "
				 "(%d bytes, %d components); remove it with a "
				 "recursive delete of an ancestor within them",
				 kt__show(a, sizeof(a), path.p, path.len),
				 path.len, depth, KT_PATH_MAX, KT_DEPTH_MAX);
			f->cb(msg, f->payload);
		}
	}
	kt__buf_free(&path);
	if (n == 0)
		return 0;
	return kt__err(KT_ECORRUPT, "repair: %zu node%s over the path limits "
		       "could not be repaired (remove each with a recursive "
		       "delete of an ancestor within the limits)",
		       n, n == 1 ? "" : "s");
}

/* One attempt at the repair, in transaction @p tx. */
static int repair_fn(kt__tx *tx, void *arg)
{
	fixer *f = arg;
	rows *r = &f->r;
	size_t i;
	int rc;

	f->tx = tx;
	f->rd.st = tx->st;
	f->rd.tx = tx;
	f->rd.snap = NULL;
	rows_free(r);
	memset(r, 0, sizeof(*r));
	f->msgs.len = 0;
	f->nmsgs = 0;
	f->msgs_rc = 0;
	f->fixed = 0;
	f->max_id = f->max_ver = 0;
	f->nlive = 0;

	rc = rows_load(r, &f->rd, "", 0);
	if (rc == 0)
		rc = fix_root(f);
	for (i = 0; i < r->n && rc == 0; i++) {
		const kt__buf *p = &r->part[i];
		if (p->len == 0 || p->p[0] == '/')
			continue; /* root, meta, block and attribute rows */
		if (r->sort[i].len == 0)
			rc = fix_node(f, p, &r->val[i]);
	}
	for (i = 0; i < r->n && rc == 0; i++) {
		const kt__buf *p = &r->part[i];
		if ((p->len > 0 && p->p[0] == '/') || r->sort[i].len == 0)
			continue;
		rc = fix_index(f, p, &r->sort[i]);
	}
	if (rc == 0)
		rc = fix_aliases(f, r);
	for (i = 0; i < r->n && rc == 0; i++) {
		const kt__buf *p = &r->part[i];
		if ((p->len == 0 || p->p[0] != '/') && r->sort[i].len == 0)
			rc = fix_counts(f, p);
		/* Detached items keep their data. */
		if (p->len == strlen(KT__PART_ORPHAN) &&
		    memcmp(p->p, KT__PART_ORPHAN, p->len) == 0 &&
		    r->sort[i].len == 8)
			rc = live_add(f, kt__get64be((const unsigned char *)
							     r->sort[i].p));
	}
	if (rc == 0) {
		/* The root again, in case it was made anew above. */
		kt__buf none = {0};
		rc = fix_counts(f, &none);
	}
	if (rc == 0)
		rc = fix_orphans(f, r);
	if (rc == 0)
		rc = fix_stray_ids(f, r);
	if (rc == 0) {
		int raised = 0;
		rc = kt__tx_counters_raise(tx, f->max_id + 1, f->max_ver + 1,
					   &raised);
		if (raised & 1)
			fixed(f, "raised the id counter above %llu",
			      (unsigned long long)f->max_id);
		if (raised & 2)
			fixed(f, "raised the version counter above %llu",
			      (unsigned long long)f->max_ver);
	}
	if (rc == 0 && f->msgs_rc != 0)
		rc = kt__err(f->msgs_rc, "repair: out of memory keeping the "
			     "messages of what was fixed");
	f->tx = NULL;
	f->rd.tx = NULL;
	return rc;
}

int kt_repair(size_t *nfixed, kt_store *st, const kt_check_options *opts)
{
	kt_check_options def = KT_CHECK_OPTIONS_INIT;
	kt_check_cb cb;
	void *payload;
	fixer f;
	size_t i, at;
	int rc;

	if (nfixed != NULL)
		*nfixed = 0;
	if (st == NULL)
		return kt__err(KT_EINVAL, "repair: store is NULL");
	if (opts == NULL)
		opts = &def;
	if (opts->version != KT_CHECK_OPTIONS_VERSION)
		return kt__err(KT_EINVAL, "repair: options version %u, "
			       "expected %d", opts->version,
			       KT_CHECK_OPTIONS_VERSION);
	/* One atomic read-fix-commit, possibly rerun: no progress to tell
	 * that would not go backwards. */
	if (opts->on_progress != NULL)
		return kt__err(KT_EINVAL, "repair: on_progress is not "
			       "supported (only kt_check reports progress)");
	cb = opts->on_violation;
	payload = opts->payload;
	if (st->read_only)
		return kt__err(KT_EREADONLY, "repair: the store was opened "
			       "read-only");
	memset(&f, 0, sizeof(f));
	f.cb = cb;
	f.payload = payload;
#ifdef KT_HAVE_RADOS
	/* On RADOS, first the commit records clients left behind, so that
	 * what they held is settled before the rows are read. */
	if (st->rados) {
		size_t swept = 0;
		rc = kt__rados_sweep(st->rows, cb, payload, &swept);
		if (rc != 0)
			return rc;
		f.swept = swept;
		/* A tree made before directories counted their entries
		 * starts counting them, so that their limit holds
		 * (KT_EDIRFULL); the repair below counts every directory.
		 * Not on a mere open: a client of an older library still
		 * running would fail on the counted rows. */
		if (!st->counted && kt__test_counted &&
		    (rc = kt__store_count_entries(st)) != 0)
			return rc;
	}
#endif
	rc = kt__tx_run(st, repair_fn, &f);
	if (rc == 0) {
		/* Only the committed attempt's fixes happened. */
		for (i = 0, at = 0; i < f.nmsgs; i++) {
			cb(f.msgs.p + at, payload);
			at += strlen(f.msgs.p + at) + 1;
		}
		if (nfixed != NULL)
			*nfixed = f.fixed + f.swept;
		rc = over_limits(&f, st, &f.r);
	}
	rows_free(&f.r);
	kt__buf_free(&f.msgs);
	free(f.live);
	return rc;
}
