/*
 * alias.c - nodes with several paths (format 4, kt_link): hard links, or
 * in StatelyDB's terms the aliases of an item.
 *
 * Every path of such a node has its own copy of the node row, so a read
 * through any path is one lookup, as through the first.  What makes the
 * copies one node is their id: the id row names one path (the primary,
 * the oldest surviving one), and partition "/alias/<id>" holds one row
 * per further path, its sort key the path's partition key.  A change to
 * the node reads those rows and rewrites every copy in the same batch.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tree.h"

void kt__part_alias(char out[32], uint64_t id)
{
	snprintf(out, 32, KT__PART_ALIAS "%016llx", (unsigned long long)id);
}

void kt__paths_free(kt__paths *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		kt__buf_free(&ps->v[i]);
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

static int paths_add(kt__paths *ps, const char *p, size_t len)
{
	if (ps->n == ps->cap) {
		size_t ncap = ps->cap ? ps->cap * 2 : 4;
		kt__buf *nv = realloc(ps->v, ncap * sizeof(*nv));
		if (nv == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		ps->v = nv;
		ps->cap = ncap;
	}
	memset(&ps->v[ps->n], 0, sizeof(ps->v[0]));
	/* kt__buf_set keeps a NUL after the bytes; an empty key (the root)
	 * still gets a buffer. */
	if (kt__buf_set(&ps->v[ps->n], len ? p : "", len) != 0)
		return kt__err(KT_ENOMEM, "out of memory");
	ps->n++;
	return 0;
}

int kt__paths_get(kt__paths *ps, kt__rd *rd, uint64_t id)
{
	char part[32];
	kt__buf prim = {0};
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	int rc;

	memset(ps, 0, sizeof(*ps));
	rc = kt__id_get(&prim, rd, id);
	if (rc == KT_ENOTFOUND)
		rc = kt__err(KT_ECORRUPT, "node %llu has no id row",
			     (unsigned long long)id);
	if (rc == 0)
		rc = paths_add(ps, prim.p, prim.len);
	kt__buf_free(&prim);
	kt__part_alias(part, id);
	memset(&how, 0, sizeof(how));
	how.part = kt__sl(part, strlen(part));
	if (rc == 0)
		rc = kt__rd_scan(&c, rd, &how);
	while (rc == 0 && (rc = kt__mcur_next(c, &row)) == 0)
		rc = paths_add(ps, row.sort.p, row.sort.len);
	kt__mcur_free(c);
	if (rc == KT_ITEROVER)
		rc = 0;
	if (rc != 0)
		kt__paths_free(ps);
	return rc;
}

int kt__alias_add(kt__tx *tx, uint64_t id, kt__slice part)
{
	char ap[32];

	kt__part_alias(ap, id);
	return kt__tx_put(tx, kt__sl(ap, strlen(ap)), part, kt__sl("", 0));
}

/* The first alias row of @p id into @p out: 0, KT_ENOTFOUND or an
 * error. */
static int alias_first(kt__buf *out, kt__tx *tx, uint64_t id)
{
	kt__rd rd = {tx->st, tx, NULL};
	char ap[32];
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	int rc;

	kt__part_alias(ap, id);
	memset(&how, 0, sizeof(how));
	how.part = kt__sl(ap, strlen(ap));
	rc = kt__rd_scan(&c, &rd, &how);
	if (rc == 0)
		rc = kt__mcur_next(c, &row);
	if (rc == 0)
		rc = kt__buf_set(out, row.sort.len ? row.sort.p : "",
				 row.sort.len);
	kt__mcur_free(c);
	return rc == KT_ITEROVER ? KT_ENOTFOUND : rc;
}

/* Does the id row of @p id name @p part?  1, 0 or an error. */
static int is_primary(kt__tx *tx, uint64_t id, kt__slice part)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__buf prim = {0};
	int rc = kt__id_get(&prim, &rd, id);

	if (rc == 0)
		rc = prim.len == part.len &&
		     (part.len == 0 || memcmp(prim.p, part.p, part.len) == 0);
	else if (rc == KT_ENOTFOUND)
		rc = kt__err(KT_ECORRUPT, "node %llu has no id row",
			     (unsigned long long)id);
	kt__buf_free(&prim);
	return rc;
}

int kt__alias_remove(kt__tx *tx, uint64_t id, kt__slice part)
{
	char ap[32];
	kt__buf next = {0};
	int rc = is_primary(tx, id, part);

	kt__part_alias(ap, id);
	if (rc == 0)
		return kt__tx_del(tx, kt__sl(ap, strlen(ap)), part);
	if (rc < 0)
		return rc;
	/* The primary goes: the oldest-sorting further path takes its
	 * place in the id row. */
	rc = alias_first(&next, tx, id);
	if (rc == KT_ENOTFOUND)
		rc = kt__err(KT_ECORRUPT, "node %llu has a link count above 1"
			     " but no further path", (unsigned long long)id);
	if (rc == 0)
		rc = kt__id_put_enc(tx, id, next.p, next.len);
	if (rc == 0)
		rc = kt__tx_del(tx, kt__sl(ap, strlen(ap)), kt__slb(&next));
	kt__buf_free(&next);
	return rc;
}

int kt__alias_move(kt__tx *tx, uint64_t id, kt__slice from, kt__slice to)
{
	char ap[32];
	int rc = is_primary(tx, id, from);

	if (rc == 1)
		return kt__id_put_enc(tx, id, to.p, to.len);
	if (rc < 0)
		return rc;
	kt__part_alias(ap, id);
	rc = kt__tx_del(tx, kt__sl(ap, strlen(ap)), from);
	if (rc == 0)
		rc = kt__tx_put(tx, kt__sl(ap, strlen(ap)), to, kt__sl("", 0));
	return rc;
}

int kt__node_put_all(kt__tx *tx, kt__node *n)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__paths ps;
	kt__buf val = {0};
	size_t i;
	int rc;

	if ((rc = kt__tx_version(tx, &n->version)) != 0 ||
	    (rc = kt__paths_get(&ps, &rd, n->id)) != 0)
		return rc;
	if (ps.n != (n->nlink > 1 ? n->nlink : 1))
		rc = kt__err(KT_ECORRUPT, "node %llu has link count %u but %zu "
			     "paths", (unsigned long long)n->id,
			     (unsigned)(n->nlink > 1 ? n->nlink : 1), ps.n);
	if (rc == 0)
		rc = kt__node_encode(&val, n);
	for (i = 0; i < ps.n && rc == 0; i++)
		rc = kt__tx_put(tx, kt__slb(&ps.v[i]), kt__sl("", 0),
				kt__slb(&val));
	kt__buf_free(&val);
	kt__paths_free(&ps);
	return rc;
}
