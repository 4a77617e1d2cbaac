/*
 * ops.c - every mutation of the tree: put, mkdir, symlink, mknod, delete,
 * rename, attributes, ranged writes, truncate and setattr.
 *
 * Each runs inside a transaction (tx.c) under the store's writer lock, so
 * its checks and its writes form one step that no other writer can split,
 * and it commits as one atomic batch.  Writes are emitted so that the row
 * which makes a change visible comes last when adding (node row, then the
 * index row in the parent's partition) and first when removing (the index
 * row goes, then the rows it made reachable).  No operation leaves an index
 * row without its node or a node without its index row.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"

#define SHOW(buf, s) kt__show(buf, sizeof(buf), (s), strlen(s))

const char *kt__op_name(int type)
{
	switch (type) {
	case KT__OP_PUT: return "put";
	case KT__OP_MKDIR: return "mkdir";
	case KT__OP_SYMLINK: return "symlink";
	case KT__OP_DELETE: return "delete";
	case KT__OP_RENAME: return "rename";
	case KT__OP_ATTR_SET: return "attr_set";
	case KT__OP_ATTR_DELETE: return "attr_delete";
	case KT__OP_WRITE: return "write";
	case KT__OP_TRUNCATE: return "truncate";
	case KT__OP_SETATTR: return "setattr";
	case KT__OP_MKNOD: return "mknod";
	case KT__OP_LINK: return "link";
	}
	return "operation";
}

static int is_root(const kt__res *r)
{
	return r->path.len == 1;
}

/* ---------------------------------------------------------------------- */
/* Subtrees */

/* One row copied out of a scan.  The bytes live in the vector's arena
 * (one allocation for the whole subtree rather than three per row); the
 * pointers are set once the scan is over (rowvec_seal), the arena no
 * longer moving, and each piece is followed by a NUL. */
typedef struct rowcopy {
	const char *part, *sort, *val;
	size_t poff, soff, voff;
	size_t plen, slen, vlen;
} rowcopy;

typedef struct rowvec {
	rowcopy *v;
	size_t n, cap;
	kt__buf bytes;
} rowvec;

static void rowvec_free(rowvec *rv)
{
	free(rv->v);
	kt__buf_free(&rv->bytes);
	memset(rv, 0, sizeof(*rv));
}

/* Empty the vector for the next step's rows, keeping its allocations:
 * the steps of a large operation are alike in size. */
static void rowvec_reset(rowvec *rv)
{
	rv->n = 0;
	rv->bytes.len = 0;
}

/* Make room in @p rv for @p n rows of @p bytes in all, at once: a large
 * operation's steps know their size, which growing by doubling would
 * copy over and over. */
static int rowvec_room(rowvec *rv, size_t n, size_t bytes)
{
	if (n > rv->cap) {
		rowcopy *nv = realloc(rv->v, n * sizeof(*nv));
		if (nv == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		rv->v = nv;
		rv->cap = n;
	}
	return kt__buf_reserve(&rv->bytes, bytes);
}

/* Copy @p x and a NUL to @p at, inside b's bytes, setting *@p off to
 * where they start; returns the byte after them. */
static char *arena_put(char *at, const kt__buf *b, kt__slice x, size_t *off)
{
	*off = (size_t)(at - b->p);
	if (x.len != 0)
		memcpy(at, x.p, x.len);
	at[x.len] = '\0';
	return at + x.len + 1;
}

static int rowvec_add(rowvec *rv, const kt__row *row)
{
	rowcopy *c;
	char *at;
	int rc;

	if (rv->n == rv->cap) {
		size_t ncap = rv->cap ? rv->cap * 2 : 32;
		rowcopy *nv = realloc(rv->v, ncap * sizeof(*nv));
		if (nv == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		rv->v = nv;
		rv->cap = ncap;
	}
	c = &rv->v[rv->n];
	/* One reservation for the three slices and their NULs: a row is
	 * copied for every node of a subtree a rename or delete moves. */
	if ((rc = kt__buf_reserve(&rv->bytes, row->part.len + row->sort.len +
						      row->value.len + 3)) != 0)
		return rc;
	at = rv->bytes.p + rv->bytes.len;
	at = arena_put(at, &rv->bytes, row->part, &c->poff);
	at = arena_put(at, &rv->bytes, row->sort, &c->soff);
	at = arena_put(at, &rv->bytes, row->value, &c->voff);
	rv->bytes.len = (size_t)(at - rv->bytes.p);
	c->plen = row->part.len;
	c->slen = row->sort.len;
	c->vlen = row->value.len;
	rv->n++;
	return 0;
}

/* Point every row at its bytes, now that the arena is complete. */
static void rowvec_seal(rowvec *rv)
{
	size_t i;

	for (i = 0; i < rv->n; i++) {
		rowcopy *c = &rv->v[i];
		c->part = rv->bytes.p + c->poff;
		c->sort = rv->bytes.p + c->soff;
		c->val = rv->bytes.p + c->voff;
	}
}

/* One step: the rows in rv go. */
typedef struct big_step {
	int kind;
	kt__slice sp, dp; /* node partitions of source and destination */
	const rowvec *rv;
	int last; /* and the journal with them */
	/* The step's plain writes (tx->extra), and the bytes of the keys
	 * and values they make: new partitions, id rows. */
	kt__write *w;
	size_t nw, wcap;
	kt__buf bytes;
} big_step;

static void step_free(big_step *bs)
{
	free(bs->w);
	kt__buf_free(&bs->bytes);
	bs->w = NULL;
	bs->nw = bs->wcap = 0;
}

/* Empty the step, keeping room for @p n writes: the writes are set one
 * by one (step_add), so the array need not be zeroed, and a step of the
 * same size as the last one allocates nothing. */
static int step_reset(big_step *bs, size_t n)
{
	bs->nw = 0;
	bs->bytes.len = 0;
	if (n > bs->wcap) {
		free(bs->w);
		bs->wcap = 0;
		if ((bs->w = malloc(n * sizeof(*bs->w))) == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		bs->wcap = n;
	}
	return 0;
}

/* Add a write to the step.  Its slices must stay valid until the step's
 * commit: they point into the step's rows or into bs->bytes, which the
 * caller reserves before the first write so that it does not move. */
static void step_add(big_step *bs, kt__slice part, kt__slice sort,
		     kt__slice val, int del)
{
	kt__write *w = &bs->w[bs->nw++];

	w->part = part;
	w->sort = sort;
	w->value = val;
	w->del = del;
}

/* A large operation once fenced (kt__bigplan.run): the rows its commit
 * point read, which are its first step, and where that step ended. */
typedef struct big_state {
	rowvec rv;
	big_step bs;
	int stepped; /* the commit point was made: steps follow */
	kt__buf last_part, last_sort;
} big_state;

static big_state *big_state_of(kt__tx *tx)
{
	if (tx->plan->run == NULL)
		tx->plan->run = calloc(1, sizeof(big_state));
	return tx->plan->run;
}

static void big_state_free(big_state *b)
{
	if (b == NULL)
		return;
	rowvec_free(&b->rv);
	step_free(&b->bs);
	kt__buf_free(&b->last_part);
	kt__buf_free(&b->last_sort);
	free(b);
}

/* At most this many bytes of rows in one step of a large rename or
 * delete (besides kt__big_rows rows); a quarter of it on a staged engine
 * (RADOS), whose readers may read a whole step back to roll one object
 * forward, and whose client keeps a few copies of it while its locks are
 * written. */
#define BIG_BYTES (32u << 20)

static size_t big_bytes(const kt_store *st)
{
	return st->rows->ops->staged ? BIG_BYTES / 4 : BIG_BYTES;
}

/* The bytes to reserve for a step's rows before reading them: room for
 * rows of a typical size (a node row with a small value inline); bigger
 * ones grow the arena as they come. */
static size_t big_room(const kt_store *st)
{
	size_t want = kt__big_rows * (size_t)160;

	return want < big_bytes(st) ? want : big_bytes(st);
}

/* Copy every row below directory p (its index partition and all partitions
 * of its descendants: one range scan).  With @p cap, more than that many
 * rows, or more than a step's bytes, stop it with KT__EBIG. */
static int subtree_rows(kt__tx *tx, const char *p, size_t len, rowvec *rv,
			size_t cap)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__buf pre = {0};
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	int rc;

	if ((rc = kt__enc_index(&pre, &tx->st->delim, p, len)) != 0)
		return rc;
	memset(&how, 0, sizeof(how));
	how.part = kt__slb(&pre);
	how.flags = KT__SCAN_PREFIX;
	rc = kt__rd_scan(&c, &rd, &how);
	while (rc == 0 && (rc = kt__mcur_next(c, &row)) == 0)
		if ((rc = rowvec_add(rv, &row)) == 0 && cap != 0 &&
		    (rv->n > cap || rv->bytes.len > big_bytes(tx->st)))
			rc = KT__EBIG;
	kt__mcur_free(c);
	kt__buf_free(&pre);
	rowvec_seal(rv);
	return rc == KT_ITEROVER ? 0 : rc;
}

/* Does directory p, whose node row the transaction has read as @p d,
 * have any child?  1, 0 or an error.  A row that counts its entries
 * says (a child made or removed meanwhile rewrites that row, so the
 * commit is guarded on it as on a scan); else one scan of its listing
 * tells, which costs more than a lookup when the entries just removed
 * left their tombstones there (rmdir after rm). */
static int has_children(kt__tx *tx, const char *p, size_t len,
			const kt__node *d)
{
	uint64_t n = 0;
	int rc;

	if (d->counted)
		return d->nentries > 0;
	rc = kt__count_entries(tx, p, len, 1, &n);
	return rc != 0 ? rc : n > 0;
}

static int index_del(kt__tx *tx, const char *p, size_t len)
{
	size_t at = 0;
	kt__buf part = {0};
	int rc;

	rc = kt__enc_entry(&part, &at, &tx->st->delim, p, len);
	if (rc == 0)
		rc = kt__tx_del(tx, kt__sl(part.p, at),
				kt__sl(part.p + at, part.len - at));
	kt__buf_free(&part);
	return rc;
}

static int node_del(kt__tx *tx, const char *p, size_t len)
{
	kt__buf part = {0};
	int rc;

	rc = kt__enc_node(&part, &tx->st->delim, p, len);
	if (rc == 0)
		rc = kt__tx_del(tx, kt__slb(&part), kt__sl("", 0));
	kt__buf_free(&part);
	return rc;
}

/* Path @p part of node n (as it is now in the transaction) goes; the
 * caller deletes its node row and index row.  The last path of a node
 * takes its id row, value and attributes with it; a node with others
 * keeps them and is rewritten under those with one link fewer. */
static int path_drop(kt__tx *tx, kt__slice part, kt__node *n)
{
	int rc;

	if (n->nlink <= 1) {
		if ((rc = kt__id_del(tx, n->id)) != 0)
			return rc;
		return kt__node_drop_data(tx, n);
	}
	if ((rc = kt__alias_remove(tx, n->id, part)) != 0)
		return rc;
	n->nlink--;
	n->ctime = tx->now;
	return kt__node_put_all(tx, n);
}

/* Delete the rows of a subtree copied by subtree_rows, with the values and
 * attributes of its nodes (of those with other paths outside, only this
 * path). */
static int subtree_drop(kt__tx *tx, const rowvec *rv)
{
	kt__rd rd = {tx->st, tx, NULL};
	size_t i;
	int rc = 0;

	for (i = 0; i < rv->n && rc == 0; i++) {
		const rowcopy *c = &rv->v[i];
		if (c->slen == 0) {
			kt__node n = {0};
			rc = kt__node_decode_hdr(&n, c->val, c->vlen);
			/* A node with several paths may have changed since
			 * the copy (another of its paths went first). */
			if (rc == 0 && n.nlink > 1)
				rc = kt__node_get_enc(&n, &rd,
						      kt__sl(c->part, c->plen));
			if (rc == 0)
				rc = path_drop(tx, kt__sl(c->part, c->plen),
					       &n);
			kt__node_free(&n);
		}
		if (rc == 0)
			rc = kt__tx_del(tx, kt__sl(c->part, c->plen),
					kt__sl(c->sort, c->slen));
	}
	return rc;
}

/* Remove node n at p, which has no children (or whose subtree rows the
 * caller removes): index row first, then the node, its data, and the
 * parent's counts, its entries by @p ents (-1, or 0 for a caller that
 * puts another entry in its place). */
static int remove_node_ents(kt__tx *tx, const char *p, size_t len,
			    kt__node *n, int ents)
{
	kt__buf part = {0};
	int rc;

	if ((rc = kt__enc_node(&part, &tx->st->delim, p, len)) == 0 &&
	    (rc = index_del(tx, p, len)) == 0 &&
	    (rc = node_del(tx, p, len)) == 0)
		rc = path_drop(tx, kt__slb(&part), n);
	kt__buf_free(&part);
	if (rc != 0)
		return rc;
	return kt__parent_touch(tx, p, len, (n->kind & KT_KIND_DIR) ? -1 : 0,
				ents);
}

static int remove_node(kt__tx *tx, const char *p, size_t len, kt__node *n)
{
	return remove_node_ents(tx, p, len, n, -1);
}

/* Remove node n, which has several paths, under every one of them, with
 * its value and attributes. */
static int remove_all_paths(kt__tx *tx, kt__node *n)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__paths ps;
	kt__buf path = {0};
	char ap[32];
	size_t i;
	int rc;

	if ((rc = kt__paths_get(&ps, &rd, n->id)) != 0)
		return rc;
	kt__part_alias(ap, n->id);
	for (i = 0; i < ps.n && rc == 0; i++) {
		path.len = 0;
		rc = kt__dec_node(&path, &tx->st->delim, ps.v[i].p,
				  ps.v[i].len);
		if (rc == 0)
			rc = index_del(tx, path.p, path.len);
		if (rc == 0)
			rc = kt__tx_del(tx, kt__slb(&ps.v[i]), kt__sl("", 0));
		if (rc == 0 && i > 0)
			rc = kt__tx_del(tx, kt__sl(ap, strlen(ap)),
					kt__slb(&ps.v[i]));
		if (rc == 0)
			rc = kt__parent_touch(tx, path.p, path.len, 0, -1);
	}
	if (rc == 0)
		rc = kt__id_del(tx, n->id);
	if (rc == 0)
		rc = kt__node_drop_data(tx, n);
	kt__buf_free(&path);
	kt__paths_free(&ps);
	return rc;
}

static int big_plan(kt__tx *tx, int kind, const char *src, size_t slen,
		    const char *dst, size_t dlen);
static int big_point(kt__tx *tx, int kind, const char *src, size_t slen,
		     const char *dst, size_t dlen);
static int big_first(kt__tx *tx, big_state *b, int kind, const char *src,
		     size_t slen, const char *dst, size_t dlen);

/* Rows of a subtree the first attempt reads at most before it hands the
 * operation to the fenced road (ops.c, "Large renames and deletes"). */
static size_t plan_cap(const kt_store *st)
{
	/* On a staged engine (RADOS) only past one step: a stage costs
	 * rounds that an ordinary commit of that size does not (its apply
	 * is waited for, and its parts are read back). */
	if (st->rows->ops->staged)
		return kt__big_rows;
	/* Half the step size when tests make steps small, so that they
	 * meet operations between the two sizes too. */
	return kt__big_rows >= 2048 ? 1024 : (kt__big_rows + 1) / 2;
}

/* Does directory node n, as the transaction read it, have no rows below
 * it at all?  A directory that counts its entries and has none has no
 * index partition and no descendants, so the scan of its subtree is
 * skipped: after `rm` that scan stepped over the tombstones its
 * children just left.  The commit is guarded on the node row, which
 * every entry made in the directory rewrites.  (Rows of a child still
 * being removed or moved in steps lie behind that operation's fence,
 * which finishes them wherever the directory goes.) */
static int dir_without_rows(const kt__node *n)
{
	return (n->kind & KT_KIND_DIR) && n->counted && n->nentries == 0;
}

/* Read the rows below directory p for a rename or delete of it, as the
 * attempt's mode allows: all of them (tx->big 0); a few, else KT__EBIG
 * with the plan made (1); up to kt__big_rows into the operation's state,
 * else KT__EBIG (2, fenced: the rows read are its first step).  *@p rvp
 * receives the vector read into. */
static int big_rows(kt__tx *tx, int kind, const char *src, size_t slen,
		    const char *dst, size_t dlen, rowvec *own, rowvec **rvp)
{
	big_state *b;
	int rc;

	*rvp = own;
	if (tx->big == 0)
		return subtree_rows(tx, src, slen, own, 0);
	if (tx->big == 1) {
		rc = subtree_rows(tx, src, slen, own, plan_cap(tx->st));
		return rc == KT__EBIG ? big_plan(tx, kind, src, slen, dst, dlen)
				      : rc;
	}
	if ((b = big_state_of(tx)) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	rowvec_reset(&b->rv);
	*rvp = &b->rv;
	if ((rc = rowvec_room(&b->rv, kt__big_rows + 1, big_room(tx->st))) != 0)
		return rc;
	return subtree_rows(tx, src, slen, &b->rv, kt__big_rows);
}

/* Remove node n at p and everything below it. */
static int remove_tree(kt__tx *tx, const char *p, size_t len, kt__node *n)
{
	rowvec own = {0}, *rv = &own;
	int rc = 0;

	if (!(n->kind & KT_KIND_DIR))
		return remove_node(tx, p, len, n);
	if (!dir_without_rows(n))
		rc = big_rows(tx, 'D', p, len, NULL, 0, &own, &rv);
	if (rc == KT__EBIG && tx->big == 2) {
		/* The commit point of a large delete: the node goes now
		 * with the rows read, the rest of its subtree in the steps
		 * after (big_drain). */
		if ((rc = big_point(tx, 'D', p, len, NULL, 0)) == 0 &&
		    (rc = index_del(tx, p, len)) == 0 &&
		    (rc = node_del(tx, p, len)) == 0 &&
		    (rc = kt__id_del(tx, n->id)) == 0 &&
		    (rc = kt__node_drop_data(tx, n)) == 0 &&
		    (rc = kt__parent_touch(tx, p, len, -1, -1)) == 0)
			rc = big_first(tx, tx->plan->run, 'D', p, len, NULL,
				       0);
		rowvec_free(&own);
		return rc;
	}
	/* The index row goes first: from then on nothing below is
	 * reachable. */
	if (rc == 0)
		rc = index_del(tx, p, len);
	if (rc == 0)
		rc = subtree_drop(tx, rv);
	if (rc == 0)
		rc = node_del(tx, p, len);
	if (rc == 0)
		rc = kt__id_del(tx, n->id);
	if (rc == 0)
		rc = kt__node_drop_data(tx, n);
	if (rc == 0)
		rc = kt__parent_touch(tx, p, len, -1, -1);
	rowvec_free(&own);
	return rc;
}

/* Remove the ancestors of p, nearest first, while they are directories
 * without a value and without children.  Never the root. */
static int prune(kt__tx *tx, const char *p, size_t len)
{
	kt__rd rd = {tx->st, tx, NULL};
	size_t plen = kt__parent_len(p, len);
	int rc = 0;

	while (plen > 0 && rc == 0) {
		kt__node n = {0};
		rc = kt__node_get(&n, &rd, p, plen);
		if (rc != 0) {
			kt__node_free(&n);
			break;
		}
		if (n.kind == KT_KIND_DIR) {
			rc = has_children(tx, p, plen, &n);
			if (rc == 0)
				rc = remove_node(tx, p, plen, &n);
			else if (rc == 1) {
				kt__node_free(&n);
				return 0;
			}
		} else {
			kt__node_free(&n);
			return 0;
		}
		kt__node_free(&n);
		plen = kt__parent_len(p, plen);
	}
	return rc;
}

/* Occurrences of the delimiter in the encoded path @p e: the depth of the
 * path it encodes (each '/' became one delimiter, and no name holds one). */
static size_t enc_depth(const kt__delim *d, const char *e, size_t len)
{
	size_t n = 0, i = 0;

	while (i + d->len <= len) {
		if (memcmp(e + i, d->s, d->len) == 0) {
			n++;
			i += d->len;
		} else {
			i++;
		}
	}
	return n;
}

/* Would the node whose node partition is @p part, below @p src (depth
 * @p sdepth), be within the path limits once moved under @p dst (depth
 * @p ddepth)?  0, or KT_ENAMETOOLONG naming the move and the new size. */
static int moved_fits(const kt_store *st, const char *part, size_t plen,
		      const char *src, size_t slen, size_t sdepth,
		      const char *dst, size_t dlen, size_t ddepth)
{
	size_t depth = enc_depth(&st->delim, part, plen);
	size_t len = plen - depth * (st->delim.len - 1); /* decoded bytes */
	size_t nlen, ndepth = ddepth + (depth - sdepth);
	char a[KT__SHOWSZ], b[KT__SHOWSZ];

	/* Typed names are not their bytes in the key: decode them. */
	if (st->delim.typed) {
		kt__buf path = {0};
		int rc = kt__dec_node(&path, &st->delim, part, plen);
		len = path.len;
		kt__buf_free(&path);
		if (rc != 0)
			return rc;
	}
	nlen = dlen + (len - slen);
	if (nlen <= KT_PATH_MAX && ndepth <= KT_DEPTH_MAX)
		return 0;
	return kt__err(KT_ENAMETOOLONG, "rename '%s' to '%s': a node below "
		       "would get a path of %zu bytes and %zu components "
		       "(limits: %d bytes, %d components)",
		       kt__show(a, sizeof(a), src, slen),
		       kt__show(b, sizeof(b), dst, dlen), nlen, ndepth,
		       KT_PATH_MAX, KT_DEPTH_MAX);
}

/* Fail with KT_ENAMETOOLONG if a node below the directory @p n at @p src
 * would be over a path limit once moved to @p dst (what move_tree's check
 * does, for a move made in steps: EXCHANGE, or a large rename).  Reads the
 * subtree's rows without keeping them; a move that makes no path longer or
 * deeper reads nothing. */
static int subtree_fits(kt__tx *tx, const char *src, size_t slen,
			const char *dst, size_t dlen, const kt__node *n)
{
	kt__rd rd = {tx->st, tx, NULL};
	size_t sdepth = kt__depth(src, slen), ddepth = kt__depth(dst, dlen);
	kt__buf pre = {0};
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	int rc;

	if (!(n->kind & KT_KIND_DIR) ||
	    (dlen <= slen && ddepth <= sdepth))
		return 0;
	if ((rc = kt__enc_index(&pre, &tx->st->delim, src, slen)) != 0)
		return rc;
	memset(&how, 0, sizeof(how));
	how.part = kt__slb(&pre);
	how.flags = KT__SCAN_PREFIX;
	rc = kt__rd_scan(&c, &rd, &how);
	while (rc == 0 && (rc = kt__mcur_next(c, &row)) == 0)
		if (row.sort.len == 0)
			rc = moved_fits(tx->st, row.part.p, row.part.len, src,
					slen, sdepth, dst, dlen, ddepth);
	kt__mcur_free(c);
	kt__buf_free(&pre);
	return rc == KT_ITEROVER ? 0 : rc;
}

/* Move the node n at real path src (with its subtree) to real path dst,
 * which is free.  Ids, values and attributes stay; only path-keyed rows are
 * rewritten.  With @p check, a node below that would be over the path
 * length or depth limit at its new place fails the move (KT_ENAMETOOLONG)
 * before it is made. */
static int move_tree(kt__tx *tx, const char *src, size_t slen,
		     const char *dst, size_t dlen, kt__node *n, int check,
		     int big)
{
	kt_store *st = tx->st;
	kt__buf sp = {0}, dp = {0}, np = {0};
	rowvec own = {0}, *rv = &own;
	size_t i;
	int rc = 0, stepped = 0, mode = tx->big;

	tx->big = big; /* an EXCHANGE's moves are never large */
	if ((n->kind & KT_KIND_DIR) && !dir_without_rows(n))
		rc = big_rows(tx, 'R', src, slen, dst, dlen, &own, &rv);
	tx->big = mode;
	if (rc == KT__EBIG && big == 2) {
		/* The commit point of a large rename: check the limits
		 * (reading the subtree, keeping none of it), move the node
		 * itself and the rows read; the rest of its subtree
		 * follows in steps (big_drain). */
		stepped = 1;
		rc = big_point(tx, 'R', src, slen, dst, dlen);
		if (rc == 0 && check)
			rc = subtree_fits(tx, src, slen, dst, dlen, n);
	}
	/* The limits first, so that nothing is written for a move that
	 * cannot be made. */
	for (i = 0; !stepped && i < rv->n && rc == 0 && check; i++)
		if (rv->v[i].slen == 0)
			rc = moved_fits(st, rv->v[i].part, rv->v[i].plen, src,
					slen, kt__depth(src, slen), dst, dlen,
					kt__depth(dst, dlen));
	if (rc == 0)
		rc = kt__enc_node(&sp, &st->delim, src, slen);
	if (rc == 0)
		rc = kt__enc_node(&dp, &st->delim, dst, dlen);
	/* New rows first, then the index row that shows them at dst, then
	 * the removal of the old index row and the rows it reached. */
	for (i = 0; !stepped && i < rv->n && rc == 0; i++) {
		const rowcopy *c = &rv->v[i];
		np.len = 0;
		rc = kt__buf_add(&np, dp.p, dp.len);
		if (rc == 0)
			rc = kt__buf_add(&np, c->part + sp.len,
					 c->plen - sp.len);
		if (rc == 0)
			rc = kt__tx_put(tx, kt__slb(&np),
					kt__sl(c->sort, c->slen),
					kt__sl(c->val, c->vlen));
		if (rc == 0 && c->slen == 0) {
			/* A node row below: its id row (or, for one path of
			 * a node with several, its alias row) follows it. */
			kt__node sub = {0};
			rc = kt__node_decode_hdr(&sub, c->val, c->vlen);
			if (rc == 0 && sub.nlink > 1)
				rc = kt__alias_move(tx, sub.id,
						    kt__sl(c->part, c->plen),
						    kt__slb(&np));
			else if (rc == 0)
				rc = kt__id_put_enc(tx, sub.id, np.p, np.len);
		}
	}
	/* The moved node: its paths are told first, so that a node with
	 * several is rewritten under its new one (and its others get the
	 * new ctime too). */
	if (rc == 0 && n->nlink > 1)
		rc = kt__alias_move(tx, n->id, kt__slb(&sp), kt__slb(&dp));
	else if (rc == 0)
		rc = kt__id_put_enc(tx, n->id, dp.p ? dp.p : "", dp.len);
	if (rc == 0) {
		n->ctime = tx->now;
		rc = kt__node_put(tx, dst, dlen, n);
	}
	if (rc == 0)
		rc = kt__index_put(tx, dst, dlen, n);
	if (rc == 0)
		rc = index_del(tx, src, slen);
	for (i = 0; !stepped && i < rv->n && rc == 0; i++)
		rc = kt__tx_del(tx, kt__sl(rv->v[i].part, rv->v[i].plen),
				kt__sl(rv->v[i].sort, rv->v[i].slen));
	if (rc == 0)
		rc = node_del(tx, src, slen);
	if (rc == 0 && stepped)
		rc = big_first(tx, tx->plan->run, 'R', src, slen, dst, dlen);
	rowvec_free(&own);
	kt__buf_free(&sp);
	kt__buf_free(&dp);
	kt__buf_free(&np);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The operations */

static uint32_t create_mode(const kt__op *op, uint32_t def)
{
	if (op->has_opts && (op->opts.flags & KT_CREATE_MODE))
		return op->opts.mode & 07777;
	return def;
}

static int op_put(kt__tx *tx, const kt__op *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	unsigned int cf = op->has_opts ? op->opts.flags : 0;
	char a[KT__SHOWSZ];
	kt__res r;
	int rc;

	if (cf & KT_CREATE_EXCL) {
		rc = kt__resolve(&r, &rd, op->path, 0, "put");
		if (rc == 0 && r.exists &&
		    (r.node.kind & (KT_KIND_ITEM | KT_KIND_LINK |
				    KT_KIND_SPECIAL))) {
			rc = kt__err(KT_EEXISTS, "put '%s': %s already exists",
				     SHOW(a, op->path), kt__node_noun(&r.node));
			kt__res_free(&r);
			return rc;
		}
		kt__res_free(&r);
	}
	rc = kt__resolve(&r, &rd, op->path,
			 (op->self ? 0 : KT__R_FOLLOW) | KT__R_CREATE, "put");
	if (rc != 0)
		return rc;
	if (r.exists && r.node.kind == KT_KIND_LINK) { /* only by id */
		rc = kt__err(KT_EINVAL, "put '%s': a link holds no value",
			     SHOW(a, op->path));
		goto out;
	}
	if ((cf & KT_CREATE_IF_VERSION) &&
	    (!r.exists || !(r.node.kind & KT_KIND_ITEM) ||
	     r.node.version != op->opts.if_version)) {
		rc = kt__err(KT_ECONFLICT, "put '%s': expected version %llu, "
			     "found %s %llu", SHOW(a, op->path),
			     (unsigned long long)op->opts.if_version,
			     r.exists && (r.node.kind & KT_KIND_ITEM)
				     ? "version" : "no item, version",
			     (unsigned long long)(r.exists ? r.node.version
							   : 0));
		goto out;
	}
	if (is_root(&r)) {
		rc = kt__err(KT_EINVAL, "put '%s': the root cannot hold a value",
			     SHOW(a, op->path));
		goto out;
	}
	if (r.exists && r.node.kind == KT_KIND_SPECIAL) {
		rc = kt__err(KT_EINVAL, "put '%s': %s is there, which holds no "
			     "value", SHOW(a, op->path), kt__node_noun(&r.node));
		goto out;
	}
	if (r.exists) {
		int kind_changed = !(r.node.kind & KT_KIND_ITEM);
		r.node.kind |= KT_KIND_ITEM;
		rc = kt__value_set(tx, &r.node, op->data, op->len);
		r.node.mtime = r.node.ctime = tx->now;
		if (rc == 0)
			rc = kt__node_put(tx, r.path.p, r.path.len, &r.node);
		if (rc == 0 && kind_changed)
			rc = kt__index_put(tx, r.path.p, r.path.len, &r.node);
		goto out;
	}
	rc = kt__make_node(tx, r.path.p, r.path.len, KT_KIND_ITEM,
			   create_mode(op, 0644), op->data, op->len);
out:
	kt__res_free(&r);
	return rc;
}

static int op_mkdir(kt__tx *tx, const kt__op *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	unsigned int cf = op->has_opts ? op->opts.flags : 0;
	int parents = (cf & KT_CREATE_PARENTS) != 0;
	char a[KT__SHOWSZ];
	kt__res r;
	int rc;

	rc = kt__resolve(&r, &rd, op->path,
			 parents ? KT__R_CREATE : KT__R_NEW, "mkdir");
	if (rc != 0)
		return rc;
	if (r.exists) {
		if (r.node.kind == KT_KIND_LINK ||
		    r.node.kind == KT_KIND_SPECIAL)
			rc = kt__err(KT_EEXISTS, "mkdir '%s': %s exists there",
				     SHOW(a, op->path), kt__node_noun(&r.node));
		else if (r.node.kind & KT_KIND_DIR) {
			if (!parents || (cf & KT_CREATE_EXCL))
				rc = kt__err(KT_EEXISTS, "mkdir '%s': the "
					     "directory already exists",
					     SHOW(a, op->path));
		} else {
			rc = kt__item_to_dir(tx, r.path.p, r.path.len, &r.node);
			if (rc == KT_EPERM)
				kt__err_prefix("mkdir '%s'", SHOW(a, op->path));
		}
	} else {
		rc = kt__make_node(tx, r.path.p, r.path.len, KT_KIND_DIR,
				   create_mode(op, 0755), NULL, 0);
	}
	kt__res_free(&r);
	return rc;
}

static int op_symlink(kt__tx *tx, const kt__op *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	char a[KT__SHOWSZ];
	kt__res r;
	int rc;

	/* Missing ancestors are made, as by put (dynamotree's walkthrough
	 * starts with a link in a directory that does not exist yet). */
	rc = kt__resolve(&r, &rd, op->path, KT__R_CREATE, "symlink");
	if (rc != 0)
		return rc;
	if (r.exists) {
		rc = kt__err(KT_EEXISTS, "symlink '%s': something already "
			     "exists there", SHOW(a, op->path));
		goto out;
	}
	rc = kt__make_node(tx, r.path.p, r.path.len, KT_KIND_LINK,
			   create_mode(op, 0777), op->path2, strlen(op->path2));
out:
	kt__res_free(&r);
	return rc;
}

/* Like a link, a special file is made with its missing ancestors (as put
 * makes them) and never over anything. */
static int op_mknod(kt__tx *tx, const kt__op *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	unsigned char payload[KT__SPECIAL_LEN];
	char a[KT__SHOWSZ];
	kt__res r;
	int rc;

	rc = kt__resolve(&r, &rd, op->path, KT__R_CREATE, "mknod");
	if (rc != 0)
		return rc;
	if (is_root(&r))
		rc = kt__err(KT_EINVAL, "mknod '%s': the root is a directory",
			     SHOW(a, op->path));
	else if (r.exists)
		rc = kt__err(KT_EEXISTS, "mknod '%s': %s already exists there",
			     SHOW(a, op->path),
			     r.node.kind & KT_KIND_DIR ? "a directory"
						       : kt__node_noun(&r.node));
	if (rc == 0) {
		kt__special_encode(payload, op->ftype, op->rdev);
		rc = kt__make_node(tx, r.path.p, r.path.len, KT_KIND_SPECIAL,
				   create_mode(op, 0644), payload,
				   sizeof(payload));
	}
	kt__res_free(&r);
	return rc;
}

/* A further path for an existing node that is not a directory. */
static int op_link(kt__tx *tx, const kt__op *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	char a[KT__SHOWSZ], b[KT__SHOWSZ];
	kt__buf dpart = {0};
	kt__node n = {0};
	kt__res s, d;
	int rc;

	memset(&d, 0, sizeof(d));
	rc = kt__resolve(&s, &rd, op->path, 0, "link");
	if (rc != 0)
		return rc;
	if (!s.exists) {
		rc = kt__err(KT_ENOTFOUND, "link '%s': no such node",
			     SHOW(a, op->path));
		goto out;
	}
	rc = kt__resolve(&d, &rd, op->path2, KT__R_CREATE, "link");
	if (rc != 0)
		goto out;
	if (d.exists) {
		rc = kt__err(KT_EEXISTS, "link '%s' to '%s': %s already exists "
			     "there", SHOW(a, op->path), SHOW(b, op->path2),
			     (d.node.kind & KT_KIND_DIR)
				     ? "a directory"
				     : kt__node_noun(&d.node));
		goto out;
	}
	/* Read the node again: making the ancestors of the new path may
	 * have made it a directory (a link below itself). */
	if ((rc = kt__node_get(&n, &rd, s.path.p, s.path.len)) != 0)
		goto out;
	if (is_root(&s) || (n.kind & KT_KIND_DIR)) {
		rc = kt__err(KT_EPERM, "link '%s': %s cannot have a second "
			     "path", SHOW(a, op->path),
			     is_root(&s) ? "the root" : "a directory");
		goto out;
	}
	if (n.nlink >= KT_LINK_MAX) {
		rc = kt__err(KT_EMLINK, "link '%s': the node already has %u "
			     "paths, the limit", SHOW(a, op->path),
			     (unsigned)n.nlink);
		goto out;
	}
	n.nlink = (n.nlink > 1 ? n.nlink : 1) + 1;
	n.ctime = tx->now;
	rc = kt__enc_node(&dpart, &tx->st->delim, d.path.p, d.path.len);
	if (rc == 0)
		rc = kt__alias_add(tx, n.id, kt__slb(&dpart));
	/* Every copy of the node row (the new one too), then the index row
	 * that shows the new path. */
	if (rc == 0)
		rc = kt__node_put_all(tx, &n);
	if (rc == 0)
		rc = kt__index_put(tx, d.path.p, d.path.len, &n);
	if (rc == 0)
		rc = kt__parent_touch(tx, d.path.p, d.path.len, 0, +1);
out:
	kt__buf_free(&dpart);
	kt__node_free(&n);
	kt__res_free(&s);
	kt__res_free(&d);
	return rc;
}

static int op_delete(kt__tx *tx, const kt__op *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	char a[KT__SHOWSZ];
	kt__res r;
	int rc;

	rc = kt__resolve(&r, &rd, op->path, 0, "delete");
	if (rc != 0)
		return rc;
	if (!r.exists) {
		rc = kt__err(KT_ENOTFOUND, "delete '%s': no such node",
			     SHOW(a, op->path));
		goto out;
	}
	if (is_root(&r)) {
		rc = kt__err(KT_EINVAL, "delete '%s': the root cannot be "
			     "removed", SHOW(a, op->path));
		goto out;
	}
	if ((op->flags & KT_DELETE_NOTDIR) && (r.node.kind & KT_KIND_DIR)) {
		rc = kt__err(KT_EISDIR, "delete '%s': a directory",
			     SHOW(a, op->path));
		goto out;
	}
	if ((op->flags & KT_DELETE_DIR) && !(r.node.kind & KT_KIND_DIR)) {
		rc = kt__err(KT_ENOTDIR, "delete '%s': %s is not a directory",
			     SHOW(a, op->path), kt__node_noun(&r.node));
		goto out;
	}
	if ((op->flags & KT_DELETE_DIR) && (r.node.kind & KT_KIND_ITEM)) {
		rc = kt__err(KT_ENOTEMPTY, "delete '%s': the directory holds "
			     "a value", SHOW(a, op->path));
		goto out;
	}
	if (op->flags & KT_DELETE_ITEM) {
		if (r.node.kind == KT_KIND_LINK ||
		    r.node.kind == KT_KIND_SPECIAL) {
			rc = kt__err(KT_EINVAL, "delete '%s': %s is not an "
				     "item", SHOW(a, op->path),
				     kt__node_noun(&r.node));
			goto out;
		}
		if (!(r.node.kind & KT_KIND_ITEM)) {
			rc = kt__err(KT_EISDIR, "delete '%s': a directory "
				     "without a value", SHOW(a, op->path));
			goto out;
		}
		if (r.node.kind & KT_KIND_DIR) {
			/* Keep the directory; drop only the value. */
			rc = kt__value_set(tx, &r.node, NULL, 0);
			r.node.kind &= ~KT_KIND_ITEM;
			r.node.mtime = r.node.ctime = tx->now;
			if (rc == 0)
				rc = kt__node_put(tx, r.path.p, r.path.len,
						  &r.node);
			if (rc == 0)
				rc = kt__index_put(tx, r.path.p, r.path.len,
						   &r.node);
			goto out;
		}
	}
	if (r.node.kind & KT_KIND_DIR) {
		rc = has_children(tx, r.path.p, r.path.len, &r.node);
		if (rc == 1 && !(op->flags & KT_DELETE_RECURSIVE)) {
			rc = kt__err(KT_ENOTEMPTY, "delete '%s': the directory "
				     "has children (use the recursive flag)",
				     SHOW(a, op->path));
			goto out;
		}
		if (rc < 0)
			goto out;
	}
	if ((op->flags & KT_DELETE_ALL_PATHS) && r.node.nlink > 1)
		rc = remove_all_paths(tx, &r.node);
	else
		rc = remove_tree(tx, r.path.p, r.path.len, &r.node);
	if (rc == 0 && (op->flags & KT_DELETE_PRUNE))
		rc = prune(tx, r.path.p, r.path.len);
out:
	kt__res_free(&r);
	return rc;
}

/* Is p strictly below dir?  (Neither is the root here: rename refuses the
 * root before asking.) */
static int inside(const kt__buf *p, const kt__buf *dir)
{
	return p->len > dir->len && p->p[dir->len] == '/' &&
	       memcmp(p->p, dir->p, dir->len) == 0;
}

static int exchange(kt__tx *tx, kt__res *s, kt__res *d)
{
	kt__buf tmp = {0};
	int rc;

	/* Both subtrees must fit where they go, checked before any move. */
	rc = subtree_fits(tx, s->path.p, s->path.len, d->path.p, d->path.len,
			  &s->node);
	if (rc == 0)
		rc = subtree_fits(tx, d->path.p, d->path.len, s->path.p,
				  s->path.len, &d->node);
	/* Park src in a path no name can spell (a component holding the
	 * delimiter), move dst to src, then src to dst. */
	if (rc == 0)
		rc = kt__buf_set(&tmp, s->path.p, s->parent_len);
	if (rc == 0)
		rc = kt__buf_addc(&tmp, '/');
	if (rc == 0)
		rc = kt__buf_add(&tmp, tx->st->delim.s, tx->st->delim.len);
	if (rc == 0)
		rc = kt__buf_add(&tmp, "x", 1);
	if (rc == 0)
		rc = move_tree(tx, s->path.p, s->path.len, tmp.p, tmp.len,
			       &s->node, 0, 0);
	if (rc == 0)
		rc = move_tree(tx, d->path.p, d->path.len, s->path.p,
			       s->path.len, &d->node, 0, 0);
	if (rc == 0)
		rc = move_tree(tx, tmp.p, tmp.len, d->path.p, d->path.len,
			       &s->node, 0, 0);
	kt__buf_free(&tmp);
	if (rc != 0)
		return rc;
	/* Each parent lost one entry and gained another. */
	if (s->parent_len != d->parent_len ||
	    memcmp(s->path.p, d->path.p, s->parent_len) != 0) {
		int sd = (s->node.kind & KT_KIND_DIR) != 0;
		int dd = (d->node.kind & KT_KIND_DIR) != 0;
		rc = kt__parent_touch(tx, s->path.p, s->path.len, dd - sd, 0);
		if (rc == 0)
			rc = kt__parent_touch(tx, d->path.p, d->path.len,
					      sd - dd, 0);
	} else {
		rc = kt__parent_touch(tx, s->path.p, s->path.len, 0, 0);
	}
	return rc;
}

static int op_rename(kt__tx *tx, const kt__op *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	char a[KT__SHOWSZ], b[KT__SHOWSZ];
	kt__res s, d;
	int rc, sdir, ddir;

	memset(&d, 0, sizeof(d));
	/* Both parents are resolved before the source's absence counts, as
	 * in POSIX: a bad destination directory wins over a missing
	 * source. */
	rc = kt__resolve(&s, &rd, op->path, 0, "rename");
	if (rc != 0)
		return rc;
	rc = kt__resolve(&d, &rd, op->path2, 0, "rename");
	if (rc != 0)
		goto out;
	if (!s.exists) {
		rc = kt__err(KT_ENOTFOUND, "rename '%s': no such node",
			     SHOW(a, op->path));
		goto out;
	}
	if (is_root(&s) || is_root(&d)) {
		rc = kt__err(KT_EINVAL, "rename '%s' to '%s': the root cannot "
			     "be moved or replaced", SHOW(a, op->path),
			     SHOW(b, op->path2));
		goto out;
	}
	if (!d.exists && (op->flags & KT_RENAME_EXCHANGE)) {
		rc = kt__err(KT_ENOTFOUND, "rename '%s': exchange needs an "
			     "existing '%s'", SHOW(a, op->path),
			     SHOW(b, op->path2));
		goto out;
	}
	if (d.exists && (op->flags & KT_RENAME_NOREPLACE)) {
		rc = kt__err(KT_EEXISTS, "rename '%s': '%s' exists",
			     SHOW(a, op->path), SHOW(b, op->path2));
		goto out;
	}
	if (s.path.len == d.path.len &&
	    memcmp(s.path.p, d.path.p, s.path.len) == 0)
		goto out; /* the same node: nothing to do */
	/* Two paths of one node: POSIX says do nothing, and succeed. */
	if (d.exists && d.node.id == s.node.id)
		goto out;
	sdir = (s.node.kind & KT_KIND_DIR) != 0;
	ddir = d.exists && (d.node.kind & KT_KIND_DIR) != 0;
	if ((sdir && inside(&d.path, &s.path)) ||
	    ((op->flags & KT_RENAME_EXCHANGE) && ddir &&
	     inside(&s.path, &d.path))) {
		rc = kt__err(KT_EINVAL, "rename '%s' to '%s': a directory "
			     "cannot move into its own subtree",
			     SHOW(a, op->path), SHOW(b, op->path2));
		goto out;
	}
	if (op->flags & KT_RENAME_EXCHANGE) {
		rc = exchange(tx, &s, &d);
		goto out;
	}
	if (d.exists) {
		/* NOREPLACE was settled above. */
		if (sdir && !ddir)
			rc = kt__err(KT_ENOTDIR, "rename '%s': '%s' is not a "
				     "directory", SHOW(a, op->path),
				     SHOW(b, op->path2));
		else if (!sdir && ddir)
			rc = kt__err(KT_EISDIR, "rename '%s': '%s' is a "
				     "directory", SHOW(a, op->path),
				     SHOW(b, op->path2));
		else if (ddir && (op->flags & KT_RENAME_VALUE_FULL) &&
			 (d.node.kind & KT_KIND_ITEM))
			rc = kt__err(KT_ENOTEMPTY, "rename '%s': directory "
				     "'%s' holds a value", SHOW(a, op->path),
				     SHOW(b, op->path2));
		else if (ddir &&
			 (rc = has_children(tx, d.path.p, d.path.len,
					     &d.node)) == 1)
			rc = kt__err(KT_ENOTEMPTY, "rename '%s': directory "
				     "'%s' is not empty", SHOW(a, op->path),
				     SHOW(b, op->path2));
		/* Its entry is taken over by the source's (below). */
		if (rc == 0)
			rc = remove_node_ents(tx, d.path.p, d.path.len,
					      &d.node, 0);
		if (rc != 0)
			goto out;
	}
	rc = move_tree(tx, s.path.p, s.path.len, d.path.p, d.path.len,
		       &s.node, 1, tx->big);
	/* Entries: the source's directory loses one, the destination's
	 * gains one where no name was replaced.  Within one directory
	 * nothing is added, so a directory at (or over) its limit still
	 * takes a rename inside it. */
	if (rc == 0 && s.parent_len == d.parent_len &&
	    memcmp(s.path.p, d.path.p, s.parent_len) == 0) {
		rc = kt__parent_touch(tx, s.path.p, s.path.len, 0,
				       d.exists ? -1 : 0);
	} else if (rc == 0) {
		rc = kt__parent_touch(tx, s.path.p, s.path.len, sdir ? -1 : 0,
				       -1);
		if (rc == 0)
			rc = kt__parent_touch(tx, d.path.p, d.path.len,
					      sdir ? +1 : 0, d.exists ? 0 : +1);
	}
out:
	kt__res_free(&s);
	kt__res_free(&d);
	return rc;
}

/* Resolve the node an attribute or metadata operation acts on. */
static int target(kt__res *r, kt__tx *tx, const kt__op *op, int follow)
{
	kt__rd rd = {tx->st, tx, NULL};
	const char *name = kt__op_name(op->type);
	char a[KT__SHOWSZ];
	int rc;

	if (op->self)
		follow = 0; /* by id: the node itself */
	rc = kt__resolve(r, &rd, op->path, follow ? KT__R_FOLLOW : 0, name);
	if (rc == 0 && !r->exists) {
		kt__res_free(r);
		rc = kt__err(KT_ENOTFOUND, "%s '%s': no such node", name,
			     SHOW(a, op->path));
	}
	return rc;
}

static int op_attr(kt__tx *tx, const kt__op *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	char a[KT__SHOWSZ], b[KT__SHOWSZ], part[32];
	kt__buf old = {0};
	kt__res r;
	int rc, had;

	if ((rc = target(&r, tx, op, 1)) != 0)
		return rc;
	/* Only a call by id ends on a link; a link carries no attributes. */
	if (r.node.kind == KT_KIND_LINK && op->type == KT__OP_ATTR_SET) {
		rc = kt__err(KT_EINVAL, "attr_set '%s': a link has no "
			     "attributes", SHOW(a, op->path));
		goto out;
	}
	kt__part_attr(part, r.node.id);
	rc = kt__rd_get(&rd, kt__sl(part, strlen(part)),
			kt__sl(op->path2, strlen(op->path2)), &old);
	kt__buf_free(&old);
	if (rc != 0 && rc != KT_ENOTFOUND)
		goto out;
	had = rc == 0;
	rc = 0;
	if (op->type == KT__OP_ATTR_SET) {
		if (had && (op->flags & KT_ATTR_CREATE))
			rc = kt__err(KT_EEXISTS, "attr_set '%s': attribute "
				     "'%s' exists", SHOW(a, op->path),
				     SHOW(b, op->path2));
		else if (!had && (op->flags & KT_ATTR_REPLACE))
			rc = kt__err(KT_ENOATTR, "attr_set '%s': no attribute "
				     "'%s' to replace", SHOW(a, op->path),
				     SHOW(b, op->path2));
		else
			rc = kt__tx_put(tx, kt__sl(part, strlen(part)),
					kt__sl(op->path2, strlen(op->path2)),
					kt__sl(op->data ? op->data : "",
					       op->len));
		if (rc == 0 && !had)
			r.node.nattrs++;
	} else {
		if (!had)
			rc = kt__err(KT_ENOATTR, "attr_delete '%s': no "
				     "attribute '%s'", SHOW(a, op->path),
				     SHOW(b, op->path2));
		else
			rc = kt__tx_del(tx, kt__sl(part, strlen(part)),
					kt__sl(op->path2, strlen(op->path2)));
		if (rc == 0)
			r.node.nattrs--;
	}
	if (rc == 0) {
		r.node.ctime = tx->now;
		rc = kt__node_put(tx, r.path.p, r.path.len, &r.node);
	}
out:
	kt__res_free(&r);
	return rc;
}

static int op_data(kt__tx *tx, const kt__op *op)
{
	const char *name = kt__op_name(op->type);
	char a[KT__SHOWSZ];
	kt__res r;
	int rc;

	if ((rc = target(&r, tx, op, 1)) != 0)
		return rc;
	/* A path that follows links never ends on a link; a call by id
	 * may. */
	if (r.node.kind == KT_KIND_SPECIAL || r.node.kind == KT_KIND_LINK) {
		rc = kt__err(KT_EINVAL, "%s '%s': %s holds no value", name,
			     SHOW(a, op->path), kt__node_noun(&r.node));
		goto out;
	}
	if (!(r.node.kind & KT_KIND_ITEM)) {
		rc = kt__err(KT_EISDIR, "%s '%s': a directory without a value",
			     name, SHOW(a, op->path));
		goto out;
	}
	if (op->type == KT__OP_WRITE) {
		uint64_t off = op->off == KT_APPEND ? r.node.size : op->off;
		if (off > KT_VALUE_MAX || op->len > KT_VALUE_MAX - off) {
			rc = kt__err(KT_ETOOBIG, "write '%s': the value would "
				     "exceed the limit of %llu bytes",
				     SHOW(a, op->path),
				     (unsigned long long)KT_VALUE_MAX);
			goto out;
		}
		rc = kt__value_write(tx, &r.node, op->data, op->len, off);
	}
	else
		rc = kt__value_truncate(tx, &r.node, op->off);
	if (rc == 0 && (op->type == KT__OP_TRUNCATE || op->len > 0)) {
		r.node.mtime = r.node.ctime = tx->now;
		rc = kt__node_put(tx, r.path.p, r.path.len, &r.node);
	}
out:
	kt__res_free(&r);
	return rc;
}

static int op_setattr(kt__tx *tx, const kt__op *op)
{
	const kt_setattr_args *sa = &op->sa;
	kt__res r;
	int rc;

	if ((rc = target(&r, tx, op, !(op->flags & KT_NOFOLLOW))) != 0)
		return rc;
	if (sa->mask & KT_SET_MODE)
		r.node.mode = sa->mode;
	if (sa->mask & KT_SET_UID)
		r.node.uid = sa->uid;
	if (sa->mask & KT_SET_GID)
		r.node.gid = sa->gid;
	if (sa->mask & KT_SET_ATIME)
		r.node.atime = sa->atime_ns;
	if (sa->mask & KT_SET_ATIME_NOW)
		r.node.atime = tx->now;
	if (sa->mask & KT_SET_MTIME)
		r.node.mtime = sa->mtime_ns;
	if (sa->mask & KT_SET_MTIME_NOW)
		r.node.mtime = tx->now;
	r.node.ctime = tx->now;
	rc = kt__node_put(tx, r.path.p, r.path.len, &r.node);
	kt__res_free(&r);
	return rc;
}

/* ---------------------------------------------------------------------- */

static int check_attr_name(kt_store *st, const kt__op *op)
{
	const char *name = kt__op_name(op->type);
	const char *vpath = op->path != NULL ? op->path : "";
	char a[KT__SHOWSZ];
	size_t len;

	if (op->path2 == NULL || op->path2[0] == '\0')
		return kt__err(KT_EINVAL, "%s '%s': empty attribute name",
			       name, SHOW(a, vpath));
	len = strlen(op->path2);
	if (len > KT_NAME_MAX)
		return kt__err(KT_ENAMETOOLONG, "%s '%s': attribute name of "
			       "%zu bytes is over the limit of %d", name,
			       SHOW(a, vpath), len, KT_NAME_MAX);
	if (len >= st->delim.len &&
	    memcmp(op->path2, st->delim.s, st->delim.len) == 0)
		return kt__err(KT_ERESERVED, "%s '%s': attribute name '%s' "
			       "starts with the reserved delimiter", name,
			       SHOW(a, vpath), op->path2);
	return 0;
}

int kt__op_validate(kt_store *st, const kt__op *op)
{
	const char *name = kt__op_name(op->type);
	const char *vpath = op->path != NULL ? op->path : "";
	char a[KT__SHOWSZ], b[KT__SHOWSZ];
	int rc;

	if (st == NULL)
		return kt__err(KT_EINVAL, "%s: store is NULL", name);
	/* An *_at call's path is "/NAME", checked like a path of one
	 * component; NULL names the node with id at. */
	if ((op->path != NULL || op->at == 0) &&
	    (rc = kt__path_check(&st->delim, op->path, name)) != 0)
		return rc;
	if (op->has_opts && op->opts.version != KT_CREATE_OPTIONS_VERSION)
		return kt__err(KT_EINVAL, "%s '%s': create options version %u,"
			       " expected %d", name, SHOW(a, vpath),
			       op->opts.version, KT_CREATE_OPTIONS_VERSION);
	if (op->has_opts && (op->opts.flags & ~0x3fu))
		return kt__err(KT_EINVAL, "%s '%s': unknown create flags 0x%x",
			       name, SHOW(a, vpath), op->opts.flags);
	if (op->has_opts && (op->opts.flags & KT_CREATE_MODE) &&
	    op->opts.mode > 07777)
		return kt__err(KT_EINVAL, "%s '%s': mode %o has bits beyond "
			       "07777", name, SHOW(a, vpath),
			       (unsigned)op->opts.mode);
	switch (op->type) {
	case KT__OP_PUT:
	case KT__OP_WRITE:
		if (op->data == NULL && op->len > 0)
			return kt__err(KT_EINVAL, "%s '%s': value is NULL",
				       name, SHOW(a, vpath));
		if (op->len > KT_VALUE_MAX ||
		    (op->off != KT_APPEND &&
		     (op->off > KT_VALUE_MAX ||
		      op->off + op->len > KT_VALUE_MAX)))
			return kt__err(KT_ETOOBIG, "%s '%s': the value would "
				       "exceed the limit of %llu bytes", name,
				       SHOW(a, vpath),
				       (unsigned long long)KT_VALUE_MAX);
		break;
	case KT__OP_TRUNCATE:
		if (op->off > KT_VALUE_MAX)
			return kt__err(KT_ETOOBIG, "truncate '%s': size %llu "
				       "exceeds the limit of %llu bytes",
				       SHOW(a, vpath),
				       (unsigned long long)op->off,
				       (unsigned long long)KT_VALUE_MAX);
		break;
	case KT__OP_SYMLINK:
		if (op->path2 == NULL || op->path2[0] == '\0')
			return kt__err(KT_EINVAL, "symlink '%s': empty target",
				       SHOW(a, vpath));
		if (strlen(op->path2) > KT_TARGET_MAX)
			return kt__err(KT_ENAMETOOLONG, "symlink '%s': target "
				       "of %zu bytes is over the limit of %d",
				       SHOW(a, vpath), strlen(op->path2),
				       KT_TARGET_MAX);
		break;
	case KT__OP_MKNOD:
		if (!kt__type_valid(op->ftype))
			return kt__err(KT_EINVAL, "mknod '%s': unknown type %u "
				       "(expected a FIFO, socket, character "
				       "or block device)", SHOW(a, vpath),
				       op->ftype);
		if ((op->ftype == KT_TYPE_FIFO || op->ftype == KT_TYPE_SOCK) &&
		    op->rdev != 0)
			return kt__err(KT_EINVAL, "mknod '%s': %s has no device"
				       " number (got %llu)", SHOW(a, vpath),
				       kt__type_noun(op->ftype),
				       (unsigned long long)op->rdev);
		break;
	case KT__OP_DELETE:
		if (op->flags & ~63u)
			return kt__err(KT_EINVAL, "delete '%s': unknown flags "
				       "0x%x", SHOW(a, vpath), op->flags);
		if ((op->flags & KT_DELETE_DIR) &&
		    (op->flags & (KT_DELETE_NOTDIR | KT_DELETE_ITEM)))
			return kt__err(KT_EINVAL, "delete '%s': flags 0x%x "
				       "contradict each other", SHOW(a, vpath),
				       op->flags);
		break;
	case KT__OP_LINK:
		if ((rc = kt__path_check(&st->delim, op->path2, name)) != 0)
			return rc;
		break;
	case KT__OP_RENAME:
		if ((rc = kt__path_check(&st->delim, op->path2, name)) != 0)
			return rc;
		if ((op->flags & ~7u) ||
		    (op->flags & 3u) == 3u)
			return kt__err(KT_EINVAL, "rename '%s': bad flags 0x%x "
				       "(NOREPLACE and EXCHANGE exclude each "
				       "other)", SHOW(a, vpath), op->flags);
		break;
	case KT__OP_ATTR_SET:
		if ((rc = check_attr_name(st, op)) != 0)
			return rc;
		if (op->data == NULL && op->len > 0)
			return kt__err(KT_EINVAL, "attr_set '%s': value is "
				       "NULL", SHOW(a, vpath));
		if (op->len > KT_ATTR_VALUE_MAX)
			return kt__err(KT_ETOOBIG, "attr_set '%s': value of "
				       "attribute '%s' has %zu bytes, over the "
				       "limit of %d", SHOW(a, vpath),
				       SHOW(b, op->path2), op->len,
				       KT_ATTR_VALUE_MAX);
		if ((op->flags & ~3u) || (op->flags & 3u) == 3u)
			return kt__err(KT_EINVAL, "attr_set '%s': bad flags "
				       "0x%x", SHOW(a, vpath), op->flags);
		break;
	case KT__OP_ATTR_DELETE:
		if ((rc = check_attr_name(st, op)) != 0)
			return rc;
		break;
	case KT__OP_SETATTR:
		if (op->sa.version != KT_SETATTR_ARGS_VERSION)
			return kt__err(KT_EINVAL, "setattr '%s': args version "
				       "%u, expected %d", SHOW(a, vpath),
				       op->sa.version,
				       KT_SETATTR_ARGS_VERSION);
		if (op->sa.mask & ~0x7fu)
			return kt__err(KT_EINVAL, "setattr '%s': unknown mask "
				       "bits 0x%x", SHOW(a, vpath),
				       op->sa.mask);
		if ((op->sa.mask & KT_SET_MODE) && op->sa.mode > 07777)
			return kt__err(KT_EINVAL, "setattr '%s': mode %o has "
				       "bits beyond 07777", SHOW(a, vpath),
				       (unsigned)op->sa.mode);
		if (op->flags & ~KT_NOFOLLOW)
			return kt__err(KT_EINVAL, "setattr '%s': unknown flags"
				       " 0x%x", SHOW(a, vpath), op->flags);
		break;
	}
	if (st->read_only)
		return kt__err(KT_EREADONLY, "%s '%s': the store was opened "
			       "read-only", name, SHOW(a, vpath));
	return 0;
}

/* The path of the node with id @p id into @p out (its id row's path). */
static int id_path(kt__buf *out, kt__tx *tx, uint64_t id, int want_dir)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__buf part = {0};
	kt__node n = {0};
	int rc;

	/* The node row where this id was last found, if it still is: one
	 * read instead of the id row and then the node row. */
	out->len = 0;
	rc = kt__idc_lookup(&n, out, &rd, id);
	if (rc == 0 && want_dir && !(n.kind & KT_KIND_DIR))
		rc = kt__err(KT_ENOTDIR, "node %llu is not a directory",
			     (unsigned long long)id);
	if (rc != KT_ENOTFOUND) {
		kt__node_free(&n);
		return rc;
	}
	out->len = 0;
	rc = kt__id_get(&part, &rd, id);
	if (rc == KT_ENOTFOUND) {
		kt__buf_free(&part);
		return kt__err(KT_ENOTFOUND, "no node has id %llu",
			       (unsigned long long)id);
	}
	if (rc == 0)
		rc = kt__node_get_enc(&n, &rd, kt__slb(&part));
	if (rc == KT_ENOTFOUND || (rc == 0 && n.id != id))
		rc = kt__err(KT_ECORRUPT, "the store is damaged: the id row "
			     "of %llu names a path whose node has another id "
			     "or is missing", (unsigned long long)id);
	if (rc == 0 && want_dir && !(n.kind & KT_KIND_DIR))
		rc = kt__err(KT_ENOTDIR, "node %llu is not a directory",
			     (unsigned long long)id);
	if (rc == 0) {
		out->len = 0;
		rc = kt__dec_node(out, &tx->st->delim, part.p ? part.p : "",
				  part.len);
	}
	if (rc == 0 && n.nlink <= 1)
		kt__idc_put(tx->st, id, kt__slb(&part));
	kt__node_free(&n);
	kt__buf_free(&part);
	return rc;
}

/* Resolve an *_at path: @p at's path, then "/NAME" (or nothing). */
int kt__at_path(kt__buf *out, kt__tx *tx, uint64_t at, const char *name)
{
	int rc;

	if ((rc = id_path(out, tx, at, name != NULL)) != 0 || name == NULL)
		return rc;
	if (out->len == 1) /* the root */
		out->len = 0;
	if ((rc = kt__buf_add(out, name, strlen(name))) != 0)
		return rc;
	return kt__path_check(&tx->st->delim, out->p, "at");
}

/* Anything at all at @p path (a link not followed)?  KT_EEXISTS if so. */
static int nothing_there(kt__tx *tx, const char *path, const char *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__res r;
	char a[KT__SHOWSZ];
	int rc;

	if ((rc = kt__resolve(&r, &rd, path, 0, op)) != 0)
		return rc;
	if (r.exists)
		rc = kt__err(KT_EEXISTS, "%s '%s': %s already exists there",
			     op, SHOW(a, path), kt__node_noun(&r.node));
	kt__res_free(&r);
	return rc;
}

/* Is the node at @p path (a link not followed) the one with id @p id?
 * KT_ECONFLICT if another node is there, KT_ENOTFOUND if none is. */
static int is_node(kt__tx *tx, const char *path, uint64_t id, const char *op)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__res r;
	char a[KT__SHOWSZ];
	int rc;

	if ((rc = kt__resolve(&r, &rd, path, 0, op)) != 0)
		return rc;
	if (!r.exists)
		rc = kt__err(KT_ENOTFOUND, "%s '%s': no such node", op,
			     SHOW(a, path));
	else if (r.node.id != id)
		rc = kt__err(KT_ECONFLICT, "%s '%s': the node there has id "
			     "%llu, not %llu", op, SHOW(a, path),
			     (unsigned long long)r.node.id,
			     (unsigned long long)id);
	kt__res_free(&r);
	return rc;
}

static int op_dispatch(kt__tx *tx, const kt__op *op);

int kt__op_apply(kt__tx *tx, const kt__op *op)
{
	kt__buf p1 = {0}, p2 = {0};
	kt__op o;
	int rc = 0;

	if (op->at == 0 && op->at2 == 0 && op->out == NULL &&
	    op->if_id == 0 &&
	    !(op->has_opts && (op->opts.flags & KT_CREATE_NEW)))
		return op_dispatch(tx, op);
	o = *op;
	if (op->at != 0 && (rc = kt__at_path(&p1, tx, op->at, op->path)) == 0)
		o.path = p1.p;
	if (rc == 0 && op->at2 != 0 &&
	    (rc = kt__at_path(&p2, tx, op->at2, op->path2)) == 0)
		o.path2 = p2.p;
	o.self = op->at != 0 && op->path == NULL;
	if (rc == 0 && op->if_id != 0)
		rc = is_node(tx, o.path, op->if_id, kt__op_name(o.type));
	if (rc == 0 && o.has_opts && (o.opts.flags & KT_CREATE_NEW))
		rc = nothing_there(tx, o.type == KT__OP_LINK ? o.path2 : o.path,
				   kt__op_name(o.type));
	if (rc == 0)
		rc = op_dispatch(tx, &o);
	if (rc == 0 && o.out != NULL) {
		kt__rd rd = {tx->st, tx, NULL};
		kt__res r;
		const char *made = o.type == KT__OP_LINK ||
					   o.type == KT__OP_RENAME
				   ? o.path2 : o.path;
		rc = kt__resolve(&r, &rd, made, 0, kt__op_name(o.type));
		if (rc == 0) {
			if (r.exists)
				kt__node_fill_stat(o.out, tx->st, &r.node);
			else
				rc = kt__err(KT_ECORRUPT, "%s: the node it "
					     "made is missing",
					     kt__op_name(o.type));
			kt__res_free(&r);
		}
	}
	kt__buf_free(&p1);
	kt__buf_free(&p2);
	return rc;
}

static int op_dispatch(kt__tx *tx, const kt__op *op)
{
	if (op->has_opts && (op->opts.flags & KT_CREATE_OWNER)) {
		tx->own.uid = op->opts.uid;
		tx->own.gid = op->opts.gid;
	} else {
		tx->own.uid = tx->st->euid;
		tx->own.gid = tx->st->egid;
	}
	switch (op->type) {
	case KT__OP_PUT: return op_put(tx, op);
	case KT__OP_MKDIR: return op_mkdir(tx, op);
	case KT__OP_SYMLINK: return op_symlink(tx, op);
	case KT__OP_DELETE: return op_delete(tx, op);
	case KT__OP_RENAME: return op_rename(tx, op);
	case KT__OP_ATTR_SET:
	case KT__OP_ATTR_DELETE: return op_attr(tx, op);
	case KT__OP_WRITE:
	case KT__OP_TRUNCATE: return op_data(tx, op);
	case KT__OP_SETATTR: return op_setattr(tx, op);
	case KT__OP_MKNOD: return op_mknod(tx, op);
	case KT__OP_LINK: return op_link(tx, op);
	}
	return kt__err(KT_EINVAL, "unknown operation %d", op->type);
}

/* ---------------------------------------------------------------------- */
/* Large renames and deletes
 *
 * Rows are keyed by path, so a rename or recursive delete of a directory
 * rewrites every row below it.  Made as one commit, that is one batch
 * holding the whole subtree in memory.  On an engine with fences (rows.h;
 * LevelDB) one over kt__big_rows rows goes in steps instead:
 *
 * 1. A first attempt, in a transaction like any other, finds more than
 *    1024 rows below the node (KT__EBIG), and records what the operation
 *    is: the plan.
 * 2. Under the store's writer lock, the engine fences off the rows below
 *    the source (and the destination): other threads and processes that
 *    would read them wait, and nobody writes there.
 * 3. The operation runs again.  If the subtree now has at most
 *    kt__big_rows rows, it is made in one commit as usual.  Otherwise
 *    this commit is the commit point: the node itself is moved or
 *    deleted with its index rows and parents, together with the first
 *    kt__big_rows rows below it (the ones this attempt read), and a
 *    journal row (/meta "journal") with a header flag records the
 *    operation.  From here on the operation has happened.
 * 4. The other rows below follow in commits of at most kt__big_rows rows
 *    each, read from one cursor that starts past the first step's rows
 *    (big_drain); then the journal row and the flag go, and the fence is
 *    lifted.
 *
 * Readers never see the steps: outside the fence nothing changes but at
 * the commit point, and inside it they wait.  A process killed after the
 * commit point leaves the journal row; the next open of the store
 * (kt__big_resume) finishes the steps before anyone reads.  Every step
 * is one atomic commit that moves or deletes rows it read, so a step cut
 * short is simply made again.  Memory is bounded by one step. */

size_t kt__big_rows = 16384;
void (*kt__test_big_step)(int step);


static kt__slice journal_key(void)
{
	return kt__sl("journal", 7);
}

static kt__slice meta(void)
{
	return kt__sl(KT__PART_META, strlen(KT__PART_META));
}

/* The first attempt met a subtree too large for one commit: say what it
 * was, and stop. */
static int big_plan(kt__tx *tx, int kind, const char *src, size_t slen,
		    const char *dst, size_t dlen)
{
	kt__bigplan *pl = tx->plan;
	int rc;

	pl->kind = kind;
	if ((rc = kt__buf_set(&pl->src, src, slen)) != 0 ||
	    (rc = kt__buf_set(&pl->dst, dst ? dst : "", dlen)) != 0)
		return rc;
	return KT__EBIG;
}

/* The commit point: the operation is still the planned one (or the
 * fence guards the wrong rows: KT__ECHANGED, plan again); record it. */
static int big_point(kt__tx *tx, int kind, const char *src, size_t slen,
		     const char *dst, size_t dlen)
{
	const kt__bigplan *pl = tx->plan;
	kt__buf v = {0}, sp = {0}, dp = {0};
	unsigned char n[4];
	int rc;

	if (pl->kind != kind || pl->src.len != slen ||
	    memcmp(pl->src.p, src, slen) != 0 || pl->dst.len != dlen ||
	    (dlen > 0 && memcmp(pl->dst.p, dst, dlen) != 0))
		return KT__ECHANGED;
	rc = kt__enc_node(&sp, &tx->st->delim, src, slen);
	if (rc == 0 && dst != NULL)
		rc = kt__enc_node(&dp, &tx->st->delim, dst, dlen);
	if (rc == 0)
		rc = kt__buf_addc(&v, (char)kind);
	kt__put32(n, (uint32_t)sp.len);
	if (rc == 0 && (rc = kt__buf_add(&v, n, 4)) == 0)
		rc = kt__buf_add(&v, sp.p, sp.len);
	kt__put32(n, (uint32_t)dp.len);
	if (rc == 0 && (rc = kt__buf_add(&v, n, 4)) == 0 && dp.len > 0)
		rc = kt__buf_add(&v, dp.p, dp.len);
	/* A staged engine makes every step take effect at once, at the
	 * end, or none: nothing is left to finish after a crash. */
	if (rc == 0 && !tx->st->rows->ops->staged &&
	    (rc = kt__tx_put(tx, meta(), journal_key(), kt__slb(&v))) == 0)
		rc = kt__header_put(tx, 1);
	kt__buf_free(&v);
	kt__buf_free(&sp);
	kt__buf_free(&dp);
	return rc;
}

/* Write each row of the step under the destination, and remove it at the
 * source. */
static int step_move(kt__tx *tx, big_step *bs)
{
	kt__rd rd = {tx->st, tx, NULL};
	const rowvec *rv = bs->rv;
	size_t i, n = rv->n, need = 0;
	size_t *npos = NULL, *kpos = NULL;
	unsigned char *paths = NULL; /* per row: 0 not a node row, else its
					node's path count, 1 or 2 (several) */
	kt__buf now = {0};
	int rc = 0;

	if ((rc = step_reset(bs, n * 3 + 1)) != 0)
		return rc;
	npos = malloc((n + 1) * sizeof(*npos));
	kpos = malloc((n + 1) * sizeof(*kpos));
	paths = calloc(n + 1, 1);
	if (npos == NULL || kpos == NULL || paths == NULL) {
		rc = kt__err(KT_ENOMEM, "out of memory");
		goto out;
	}
	/* First every byte the writes point at: each row's new partition
	 * and each single-path node's id row key, in one buffer that does
	 * not move once filled. */
	for (i = 0; i < n; i++)
		need += bs->dp.len + rv->v[i].plen - bs->sp.len + 8;
	if ((rc = kt__buf_reserve(&bs->bytes, need)) != 0)
		goto out;
	for (i = 0; i < n && rc == 0; i++) {
		const rowcopy *c = &rv->v[i];
		npos[i] = bs->bytes.len;
		kt__buf_add(&bs->bytes, bs->dp.p, bs->dp.len);
		kt__buf_add(&bs->bytes, c->part + bs->sp.len,
			    c->plen - bs->sp.len);
		if (c->slen == 0) {
			kt__node sub = {0};
			rc = kt__node_decode_hdr(&sub, c->val, c->vlen);
			if (rc == 0 && sub.nlink > 1) {
				paths[i] = 2;
			} else if (rc == 0) {
				unsigned char k[8];
				paths[i] = 1;
				kt__put64be(k, sub.id);
				kpos[i] = bs->bytes.len;
				kt__buf_add(&bs->bytes, k, 8);
			}
			kt__node_free(&sub);
		}
	}
	for (i = 0; i < n && rc == 0; i++) {
		const rowcopy *c = &rv->v[i];
		kt__slice old = kt__sl(c->part, c->plen);
		kt__slice np = kt__sl(bs->bytes.p + npos[i],
				      bs->dp.len + c->plen - bs->sp.len);
		kt__slice sort = kt__sl(c->sort, c->slen);
		if (paths[i] == 2) {
			/* A node with several paths: its alias and id rows
			 * were moved at the commit point (big_paths); the
			 * row moves as it is now. */
			now.len = 0;
			rc = kt__rd_get(&rd, old, sort, &now);
			if (rc == 0)
				rc = kt__tx_put(tx, np, sort, kt__slb(&now));
		} else {
			step_add(bs, np, sort, kt__sl(c->val, c->vlen), 0);
			if (paths[i] == 1)
				step_add(bs, kt__sl(KT__PART_ID,
						    strlen(KT__PART_ID)),
					 kt__sl(bs->bytes.p + kpos[i], 8), np,
					 0);
		}
		step_add(bs, old, sort, kt__sl(NULL, 0), 1);
	}
out:
	free(npos);
	free(kpos);
	free(paths);
	kt__buf_free(&now);
	return rc;
}

/* Delete each row of the step, with what goes with its nodes: id row,
 * value and attributes, or, of a node with other paths, only this one. */
static int step_drop(kt__tx *tx, big_step *bs)
{
	const rowvec *rv = bs->rv;
	size_t i, n = rv->n;
	int rc = 0;

	if ((rc = step_reset(bs, n * 2 + 1)) != 0 ||
	    (rc = kt__buf_reserve(&bs->bytes, n * 8 + 1)) != 0)
		return rc;
	for (i = 0; i < n && rc == 0; i++) {
		const rowcopy *c = &rv->v[i];
		kt__slice part = kt__sl(c->part, c->plen);
		if (c->slen == 0) {
			kt__node nd = {0};
			rc = kt__node_decode_hdr(&nd, c->val, c->vlen);
			if (rc == 0 && nd.nlink > 1) {
				/* A path of a node with several: dropped at
				 * the commit point (big_paths); only its
				 * rows are left. */
			} else if (rc == 0) {
				unsigned char k[8];
				kt__put64be(k, nd.id);
				step_add(bs, kt__sl(KT__PART_ID,
						    strlen(KT__PART_ID)),
					 kt__sl(bs->bytes.p + bs->bytes.len, 8),
					 kt__sl(NULL, 0), 1);
				kt__buf_add(&bs->bytes, k, 8);
				if (((nd.kind & KT_KIND_ITEM) &&
				     !kt__node_inline(tx->st, &nd)) ||
				    nd.nattrs > 0)
					rc = kt__node_drop_data(tx, &nd);
			}
			kt__node_free(&nd);
		}
		if (rc == 0)
			step_add(bs, part, kt__sl(c->sort, c->slen),
				 kt__sl(NULL, 0), 1);
	}
	return rc;
}

/* Does the store hold any alias row, that is any node with several paths
 * (FORMAT.md §7c)?  1, 0 or an error. */
static int any_alias(kt__tx *tx)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	int rc;

	memset(&how, 0, sizeof(how));
	how.part = kt__sl(KT__PART_ALIAS, strlen(KT__PART_ALIAS));
	how.flags = KT__SCAN_PREFIX;
	rc = kt__rd_scan(&c, &rd, &how);
	if (rc == 0)
		rc = kt__mcur_next(c, &row);
	kt__mcur_free(c);
	return rc == 0 ? 1 : rc == KT_ITEROVER ? 0 : rc;
}

/* At the commit point: every node below with several paths gets the
 * change now, since its other paths, id row and alias rows lie outside
 * the fence: a delete drops this path of it (and its node row), a rename
 * moves its id or alias row to the new path.  The steps then only move or
 * delete rows.  Reads the subtree keeping only such rows' keys; none at
 * all when the store has no alias row.  @p sp and @p dp are the node
 * partitions of source and destination. */
static int big_paths(kt__tx *tx, int kind, kt__slice sp, kt__slice dp)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__buf pre = {0}, keys = {0}, np = {0};
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	size_t off;
	int rc;

	if ((rc = any_alias(tx)) <= 0)
		return rc;
	if ((rc = kt__buf_set(&pre, sp.p, sp.len)) != 0 ||
	    (rc = kt__buf_add(&pre, tx->st->delim.s, tx->st->delim.len)) != 0)
		goto out;
	memset(&how, 0, sizeof(how));
	how.part = kt__slb(&pre);
	how.flags = KT__SCAN_PREFIX;
	/* Partition keys hold no NUL: collect them NUL-ended. */
	rc = kt__rd_scan(&c, &rd, &how);
	while (rc == 0 && (rc = kt__mcur_next(c, &row)) == 0) {
		kt__node n = {0};
		if (row.sort.len != 0 ||
		    kt__node_decode_hdr(&n, row.value.p, row.value.len) != 0 ||
		    n.nlink <= 1)
			continue;
		if ((rc = kt__buf_add(&keys, row.part.p, row.part.len)) == 0)
			rc = kt__buf_addc(&keys, '\0');
	}
	kt__mcur_free(c);
	if (rc == KT_ITEROVER)
		rc = 0;
	for (off = 0; off < keys.len && rc == 0;) {
		kt__slice part = kt__sl(keys.p + off, strlen(keys.p + off));
		kt__node n = {0};
		off += part.len + 1;
		/* As it is now: another of its paths may have gone first. */
		rc = kt__node_get_enc(&n, &rd, part);
		if (rc == 0 && kind == 'D') {
			if ((rc = path_drop(tx, part, &n)) == 0)
				rc = kt__tx_del(tx, part, kt__sl("", 0));
		} else if (rc == 0) {
			np.len = 0;
			if ((rc = kt__buf_add(&np, dp.p, dp.len)) == 0 &&
			    (rc = kt__buf_add(&np, part.p + sp.len,
					      part.len - sp.len)) == 0)
				rc = n.nlink > 1
					     ? kt__alias_move(tx, n.id, part,
							      kt__slb(&np))
					     : kt__id_put_enc(tx, n.id, np.p,
							      np.len);
		}
		kt__node_free(&n);
	}
out:
	kt__buf_free(&pre);
	kt__buf_free(&keys);
	kt__buf_free(&np);
	return rc;
}

/* The first step of a large operation, in its commit point: the rows
 * big_rows read into @p b, written as a step; where it ended is noted
 * for the drain. */
static int big_first(kt__tx *tx, big_state *b, int kind, const char *src,
		     size_t slen, const char *dst, size_t dlen)
{
	kt__buf sp = {0}, dp = {0};
	const rowcopy *last;
	int rc;

	step_free(&b->bs);
	memset(&b->bs, 0, sizeof(b->bs));
	rc = kt__enc_node(&sp, &tx->st->delim, src, slen);
	if (rc == 0 && dst != NULL)
		rc = kt__enc_node(&dp, &tx->st->delim, dst, dlen);
	b->bs.kind = kind;
	b->bs.sp = kt__slb(&sp);
	b->bs.dp = kt__slb(&dp);
	b->bs.rv = &b->rv;
	if (rc == 0)
		rc = big_paths(tx, kind, kt__slb(&sp), kt__slb(&dp));
	if (rc == 0)
		rc = kind == 'R' ? step_move(tx, &b->bs)
				 : step_drop(tx, &b->bs);
	if (rc == 0 && b->rv.n > 0) {
		last = &b->rv.v[b->rv.n - 1];
		if ((rc = kt__buf_set(&b->last_part, last->part,
				      last->plen)) == 0)
			rc = kt__buf_set(&b->last_sort, last->sort,
					 last->slen);
	}
	tx->extra = b->bs.w;
	tx->nextra = b->bs.nw;
	b->stepped = rc == 0;
	kt__buf_free(&sp);
	kt__buf_free(&dp);
	return rc;
}

static int step_fn(kt__tx *tx, void *arg)
{
	big_step *bs = arg;
	int rc;

	rc = bs->kind == 'R' ? step_move(tx, bs) : step_drop(tx, bs);
	if (rc == 0 && bs->last && !tx->st->rows->ops->staged &&
	    (rc = kt__tx_del(tx, meta(), journal_key())) == 0)
		rc = kt__header_put(tx, 0);
	tx->extra = bs->w;
	tx->nextra = bs->nw;
	return rc;
}

/* The steps after the commit point: every row below source partition
 * @p sp, read from one cursor and moved under @p dp or deleted, a step
 * at a time; then the journal.  The steps take over the memory of the
 * commit point's rows and writes in @p from (committed by now), so that
 * one step's worth is held at a time.  The caller holds the writer
 * lock. */
static int big_drain(kt_store *st, int kind, kt__slice sp, kt__slice dp,
		     big_state *from)
{
	kt__rows *r = st->rows;
	kt__buf pre = {0};
	kt__cursor *cur = NULL;
	kt__scan how;
	kt__row row;
	rowvec rv = {0};
	big_step bs;
	int rc, step = 0, over = 0;

	memset(&bs, 0, sizeof(bs));
	if ((rc = kt__buf_set(&pre, sp.p, sp.len)) != 0 ||
	    (rc = kt__buf_add(&pre, st->delim.s, st->delim.len)) != 0)
		goto out;
	memset(&how, 0, sizeof(how));
	how.part = kt__slb(&pre);
	how.flags = KT__SCAN_PREFIX;
	if (from != NULL && from->rv.n > 0) {
		/* Past the rows the commit point took. */
		how.flags |= KT__SCAN_PAST;
		how.after = kt__slb(&from->last_part);
		how.from = kt__slb(&from->last_sort);
	}
	if (from != NULL) {
		rv = from->rv;
		bs = from->bs;
		memset(&from->rv, 0, sizeof(from->rv));
		memset(&from->bs, 0, sizeof(from->bs));
		rowvec_reset(&rv);
	}
	/* The cursor reads the subtree as it was after the commit point:
	 * the fence keeps everyone else out, and the steps only take
	 * away. */
	if ((rc = r->ops->scan(&cur, r, NULL, &how)) != 0 ||
	    (rc = rowvec_room(&rv, kt__big_rows, big_room(st))) != 0)
		goto out;
	while (rc == 0 && !over) {
		rowvec_reset(&rv);
		while (rv.n < kt__big_rows && rv.bytes.len < big_bytes(st) &&
		       (rc = r->ops->next(cur, &row)) == 0)
			if ((rc = rowvec_add(&rv, &row)) != 0)
				break;
		if (rc == KT_ITEROVER) {
			over = 1;
			rc = 0;
		}
		if (rc != 0)
			break;
		rowvec_seal(&rv);
		bs.kind = kind;
		bs.sp = sp;
		bs.dp = dp;
		bs.rv = &rv;
		bs.last = over;
		rc = kt__tx_run_held(st, step_fn, &bs);
		if (rc == 0 && kt__test_big_step != NULL)
			kt__test_big_step(++step);
	}
	if (rc == 0)
		st->journal = 0;
out:
	r->ops->cursor_free(cur);
	step_free(&bs);
	rowvec_free(&rv);
	kt__buf_free(&pre);
	return rc;
}

/* Decode the journal row @p v: kind, source and destination partitions
 * (slices into v). */
static int journal_decode(int *kind, kt__slice *sp, kt__slice *dp,
			  const kt__buf *v)
{
	const unsigned char *u = (const unsigned char *)v->p;
	uint32_t sl, dl;

	if (v->len < 9 || (u[0] != 'R' && u[0] != 'D'))
		goto bad;
	sl = kt__get32(u + 1);
	if (sl == 0 || sl > v->len - 9)
		goto bad;
	dl = kt__get32(u + 5 + sl);
	if (dl != v->len - 9 - sl || (u[0] == 'R') != (dl > 0))
		goto bad;
	*kind = u[0];
	*sp = kt__sl(u + 5, sl);
	*dp = kt__sl(u + 9 + sl, dl);
	return 0;
bad:
	return kt__err(KT_ECORRUPT, "the journal row of a large rename or "
		       "delete is damaged (%zu bytes)", v->len);
}

static int big_resume(kt_store *st, int clear)
{
	kt__rd rd = {st, NULL, NULL};
	kt__buf v = {0};
	kt__slice sp, dp;
	int kind = 0, rc;

	rc = kt__rd_get(&rd, meta(), journal_key(), &v);
	if (rc == KT_ENOTFOUND && !clear)
		return 0;
	pthread_mutex_lock(&st->wlock);
	if (rc == KT_ENOTFOUND) {
		/* The flag without its row: nothing to finish. */
		big_step bs;
		rowvec none = {0};
		memset(&bs, 0, sizeof(bs));
		bs.kind = 'D';
		bs.rv = &none;
		bs.last = 1;
		rc = kt__tx_run_held(st, step_fn, &bs);
		step_free(&bs);
		if (rc == 0)
			st->journal = 0;
	} else if (rc == 0 && (rc = journal_decode(&kind, &sp, &dp, &v)) == 0) {
		rc = big_drain(st, kind, sp, dp, NULL);
	}
	pthread_mutex_unlock(&st->wlock);
	kt__buf_free(&v);
	if (rc != 0)
		kt__err_prefix("finishing a large rename or delete that was "
			       "cut short");
	return rc;
}

int kt__big_resume(kt_store *st)
{
	return big_resume(st, 1);
}

int kt__big_finish(kt_store *st)
{
	return big_resume(st, 0);
}

typedef struct op_ctx {
	const kt__op *op;
	int big;
	kt__bigplan plan;
} op_ctx;

static int op_apply_fn(kt__tx *tx, void *arg)
{
	op_ctx *c = arg;

	tx->big = c->big;
	tx->plan = &c->plan;
	if (c->plan.run != NULL)
		((big_state *)c->plan.run)->stepped = 0;
	return kt__op_apply(tx, c->op);
}

/* May this operation go in steps, if it is large? */
static int big_ok(const kt_store *st, const kt__op *op)
{
	if (st->rows->ops->fence == NULL)
		return 0;
	if (op->type == KT__OP_RENAME)
		return !(op->flags & KT_RENAME_EXCHANGE);
	return op->type == KT__OP_DELETE &&
	       (op->flags & KT_DELETE_RECURSIVE) &&
	       !(op->flags & KT_DELETE_ALL_PATHS);
}

/* Run the operation under the writer lock the caller holds; while
 * another's fence stands over what it reads (KT__EFENCED: a large
 * operation of another process), wait for it without the lock. */
static int held_run(kt_store *st, op_ctx *c)
{
	unsigned int waits = 0;
	int rc;

	while ((rc = kt__tx_run_held(st, op_apply_fn, c)) == KT__EFENCED) {
		pthread_mutex_unlock(&st->wlock);
		kt__fence_pause(&waits);
		pthread_mutex_lock(&st->wlock);
	}
	return rc;
}

/* A staged operation that did not commit (rolled back, or never made)
 * may have had a part reserve ids or versions (tx.c, reserve): its
 * commit gave the handle that range although the raised limit was
 * rolled back with the stage, so another handle could reserve the same
 * one.  Forget the ranges; the next write reserves anew from the
 * persisted counters.  The caller holds the writer lock. */
static void big_forget(kt_store *st)
{
	st->next_id = st->id_limit = 0;
	st->next_ver = st->ver_limit = 0;
}

/* After a try of a large operation that came to nothing (@p *rc): if
 * another process changed what it read (KT__ECHANGED), plan it again,
 * and say 1 if it is still large and worth another try. */
static int big_again(kt_store *st, op_ctx *c, int *rc, int attempt)
{
	if (*rc == KT__EFENCED)
		*rc = KT__ECHANGED; /* another's fence */
	if (*rc != KT__ECHANGED || attempt == KT__RETRY_MAX)
		return 0;
	/* Another process changed the tree between the plan and the fence
	 * (or, staged, before the end): plan again; it may now be small. */
	c->big = 1;
	*rc = held_run(st, c);
	return *rc == KT__EBIG;
}

/* Run the operation that the first attempt found too large (c->plan).
 * On a staged engine (RADOS) the fence is one commit in parts, which
 * the unfence makes take effect or not; there is no journal, and the
 * operation runs again if another client's change makes it fail. */
static int big_run(kt_store *st, op_ctx *c)
{
	kt__rows *r = st->rows;
	const int staged = r->ops->staged;
	kt__buf pre[2];
	kt__slice ps[2];
	kt__buf sp = {0}, dp = {0};
	char a[KT__SHOWSZ];
	big_state *b;
	uint64_t token;
	size_t n, i;
	int rc, rc2, attempt;

	memset(pre, 0, sizeof(pre));
	pthread_mutex_lock(&st->wlock);
	for (attempt = 0;; attempt++) {
		n = c->plan.kind == 'R' ? 2 : 1;
		pre[0].len = pre[1].len = 0;
		rc = kt__enc_index(&pre[0], &st->delim, c->plan.src.p,
				   c->plan.src.len);
		if (rc == 0 && n == 2)
			rc = kt__enc_index(&pre[1], &st->delim,
					   c->plan.dst.p, c->plan.dst.len);
		for (i = 0; i < n; i++)
			ps[i] = kt__slb(&pre[i]);
		if (rc == 0)
			rc = r->ops->fence(r, ps, n, &token);
		if (rc != 0)
			break;
		c->big = 2;
		rc = kt__tx_run_held(st, op_apply_fn, c);
		if (rc != 0) {
			/* Nothing made: lifted, or rolled back. */
			(void)r->ops->unfence(r, token, staged);
			if (staged)
				big_forget(st);
			if (big_again(st, c, &rc, attempt))
				continue;
			break;
		}
		b = c->plan.run;
		if (b == NULL || !b->stepped) {
			/* It was no larger than one step: made in one
			 * commit, behind the fence. */
			rc = r->ops->unfence(r, token, 0);
			if (rc != 0 && staged)
				big_forget(st);
			if (rc == 0 && kt__test_big_step != NULL)
				kt__test_big_step(-1);
			if (rc != 0 && big_again(st, c, &rc, attempt))
				continue;
			break;
		}
		if (!staged)
			st->journal = 1;
		if (kt__test_big_step != NULL)
			kt__test_big_step(0);
		sp.len = dp.len = 0;
		rc = kt__enc_node(&sp, &st->delim, c->plan.src.p,
				  c->plan.src.len);
		if (rc == 0 && n == 2)
			rc = kt__enc_node(&dp, &st->delim, c->plan.dst.p,
					  c->plan.dst.len);
		if (rc == 0)
			rc = big_drain(st, c->plan.kind, kt__slb(&sp),
				       kt__slb(&dp), b);
		if (staged) {
			/* All of it now, or none of it. */
			rc2 = r->ops->unfence(r, token, rc != 0);
			if (rc == 0)
				rc = rc2;
			if (rc != 0)
				big_forget(st);
			if (rc != 0 && big_again(st, c, &rc, attempt))
				continue;
		} else if (rc != 0) {
			/* Made, but not finished: the rows below stay
			 * fenced until the store is opened again. */
			(void)r->ops->unfence(r, token, 1);
			kt__err_prefix("%s '%s': done, but the rows below "
				       "could not all be %s; they will be when "
				       "the store is next opened",
				       c->plan.kind == 'R' ? "rename"
							   : "delete",
				       kt__show(a, sizeof(a), c->plan.src.p,
						c->plan.src.len),
				       c->plan.kind == 'R' ? "moved"
							   : "removed");
		} else {
			(void)r->ops->unfence(r, token, 0);
		}
		break;
	}
	pthread_mutex_unlock(&st->wlock);
	for (i = 0; i < 2; i++)
		kt__buf_free(&pre[i]);
	kt__buf_free(&sp);
	kt__buf_free(&dp);
	if (rc == KT__ECHANGED)
		rc = kt__err(KT_EBUSY, "gave up after %d attempts: other "
			     "processes kept changing what this operation "
			     "reads", KT__RETRY_MAX);
	return rc;
}

int kt__op_run(kt_store *st, const kt__op *op)
{
	op_ctx c;
	int rc;

	if ((rc = kt__op_validate(st, op)) != 0)
		return rc;
	memset(&c, 0, sizeof(c));
	c.op = op;
	c.big = big_ok(st, op);
	rc = kt__tx_run(st, op_apply_fn, &c);
	if (rc == KT__EBIG)
		rc = big_run(st, &c);
	kt__buf_free(&c.plan.src);
	kt__buf_free(&c.plan.dst);
	big_state_free(c.plan.run);
	return rc;
}
