/*
 * resolve.c - turning a path into the node it names, following symbolic
 * links in every component (and in the last one when asked).
 *
 * The common case costs one lookup: a node row exists only while every
 * ancestor is a real directory, so finding the row of the full path proves
 * there is no link on the way.  Otherwise the path is walked one component
 * at a time from the root.  A link's target replaces the link in the walk:
 * an absolute target restarts at the root, a relative one continues in the
 * link's directory; "." stays put (but, like a trailing '/', makes the
 * name before it a directory) and ".." steps up, never above the root.
 * More than KT_LINK_HOPS_MAX links give KT_ELOOP, so cycles end.
 *
 * With KT__R_CREATE (writers only) missing ancestors named by the caller's
 * path are made as directories, and ancestors that are items become items
 * and directories.  Components that came from a link's target are never
 * created: a link to nowhere is dangling (KT_ENOTFOUND), not a recipe.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tree.h"

typedef struct walk {
	kt__buf cur;     /* real path walked so far; "" is the root */
	kt__buf rest;    /* components still to walk, '/'-separated */
	size_t ro;       /* read offset in rest */
	size_t nrest;    /* components left in rest */
	size_t norig;    /* how many of the last ones came from the caller */
	int hops;
	kt__buf link;    /* last link followed, for messages */
	kt__buf target;
} walk;

static void walk_free(walk *w)
{
	kt__buf_free(&w->cur);
	kt__buf_free(&w->rest);
	kt__buf_free(&w->link);
	kt__buf_free(&w->target);
}

/* Replace the walk's remaining components with a link's target followed
 * by what remained. */
static int walk_follow(walk *w, const char *linkp, size_t linklen,
		       const kt__buf *target)
{
	kt__buf nr = {0};
	const char *t = target->p, *end = target->p + target->len, *s;
	size_t n = 0;
	int rc = 0;

	if (target->len > 0 && t[0] == '/')
		w->cur.len = 0; /* absolute: restart at the root */
	while (t < end && rc == 0) {
		s = memchr(t, '/', (size_t)(end - t));
		if (s == NULL)
			s = end;
		/* Empty components ("//") drop out; "." stays, because the
		 * name before it must be a directory. */
		if (s > t) {
			if (nr.len > 0)
				rc = kt__buf_addc(&nr, '/');
			if (rc == 0)
				rc = kt__buf_add(&nr, t, (size_t)(s - t));
			n++;
		}
		t = s + 1;
	}
	/* A trailing '/' asks for a directory, as a trailing "." does. */
	if (rc == 0 && n > 0 && target->p[target->len - 1] == '/') {
		rc = kt__buf_add(&nr, "/.", 2);
		n++;
	}
	if (rc == 0 && w->ro < w->rest.len) {
		if (nr.len > 0)
			rc = kt__buf_addc(&nr, '/');
		if (rc == 0)
			rc = kt__buf_add(&nr, w->rest.p + w->ro,
					 w->rest.len - w->ro);
	}
	if (rc == 0)
		rc = kt__buf_set(&w->link, linkp, linklen);
	if (rc == 0)
		rc = kt__buf_set(&w->target, target->p, target->len);
	if (rc != 0) {
		kt__buf_free(&nr);
		return rc;
	}
	kt__buf_free(&w->rest);
	w->rest = nr;
	w->ro = 0;
	w->nrest += n;
	return 0;
}

static int dangling(walk *w, const char *op, const char *path)
{
	char a[KT__SHOWSZ], b[KT__SHOWSZ], c[KT__SHOWSZ];

	return kt__err(KT_ENOTFOUND, "%s '%s': dangling link: '%s' points to "
		       "'%s', which does not exist", op,
		       kt__show(a, sizeof(a), path, strlen(path)),
		       kt__show(b, sizeof(b), w->link.p, w->link.len),
		       kt__show(c, sizeof(c), w->target.p, w->target.len));
}

static int finish(kt__res *r, walk *w, int exists, kt__node *n)
{
	int rc;

	if (w->cur.len == 0)
		rc = kt__buf_set(&r->path, "/", 1);
	else
		rc = kt__buf_set(&r->path, w->cur.p, w->cur.len);
	if (rc != 0)
		return rc;
	r->parent_len = kt__parent_len(r->path.p, r->path.len);
	r->exists = exists;
	if (exists) {
		r->node = *n;
		memset(n, 0, sizeof(*n));
	}
	return 0;
}

static int walk_run(kt__res *r, kt__rd *rd, walk *w, const char *path,
		    unsigned int flags, const char *op)
{
	kt_store *st = rd->st;
	char a[KT__SHOWSZ];
	kt__node n = {0};
	int rc = 0, have = 0;

	while (w->nrest > 0) {
		const char *c = w->rest.p + w->ro, *e;
		size_t clen, save;
		int last = w->nrest == 1;
		int orig = w->nrest <= w->norig;

		e = memchr(c, '/', w->rest.len - w->ro);
		clen = e ? (size_t)(e - c) : w->rest.len - w->ro;
		w->ro += clen + (e != NULL);
		w->nrest--;
		if (orig)
			w->norig--;

		if (clen == 1 && c[0] == '.') {
			/* The walk is already in a directory: the name
			 * before "." was checked as one. */
			if (w->nrest == 0)
				break;
			continue;
		}
		if (clen == 2 && c[0] == '.' && c[1] == '.') {
			w->cur.len = kt__parent_len(w->cur.p, w->cur.len);
			if (w->cur.p)
				w->cur.p[w->cur.len] = '\0';
			if (w->nrest == 0)
				break;
			continue;
		}
		if (!orig) {
			rc = kt__name_check(&st->delim, c, clen, op, path);
			if (rc != 0) {
				kt__err_prefix("in the target of link '%s'",
					       kt__show(a, sizeof(a), w->link.p,
							w->link.len));
				return KT_ENOTFOUND;
			}
		}
		save = w->cur.len;
		if ((rc = kt__buf_addc(&w->cur, '/')) != 0 ||
		    (rc = kt__buf_add(&w->cur, c, clen)) != 0)
			return rc;
		if (w->cur.len > KT_PATH_MAX ||
		    kt__depth(w->cur.p, w->cur.len) > KT_DEPTH_MAX)
			return kt__err(KT_ENAMETOOLONG, "%s '%s': the path "
				       "reached through links is too long", op,
				       kt__show(a, sizeof(a), path,
						strlen(path)));
		rc = kt__node_get(&n, rd, w->cur.p, w->cur.len);
		if (rc == KT_ENOTFOUND) {
			if (!orig)
				return dangling(w, op, path);
			if (last) {
				return finish(r, w, 0, NULL);
			}
			if (!(flags & KT__R_CREATE))
				return kt__err(KT_ENOTFOUND, "%s '%s': no "
					       "directory '%s'", op,
					       kt__show(a, sizeof(a), path,
							strlen(path)),
					       w->cur.p);
			rc = kt__make_node(rd->tx, w->cur.p, w->cur.len,
					   KT_KIND_DIR, 0755, NULL, 0);
			if (rc != 0)
				return rc;
			continue;
		}
		if (rc != 0)
			return rc;
		if (n.kind == KT_KIND_LINK && (!last || (flags & KT__R_FOLLOW))) {
			if (++w->hops > KT_LINK_HOPS_MAX) {
				kt__node_free(&n);
				return kt__err(KT_ELOOP, "%s '%s': more than %d "
					       "symbolic links followed (a "
					       "loop?)", op,
					       kt__show(a, sizeof(a), path,
							strlen(path)),
					       KT_LINK_HOPS_MAX);
			}
			w->cur.len = save;
			w->cur.p[save] = '\0';
			{
				kt__buf lp = {0};
				rc = kt__buf_set(&lp, w->cur.p, save);
				if (rc == 0)
					rc = kt__buf_addc(&lp, '/');
				if (rc == 0)
					rc = kt__buf_add(&lp, c, clen);
				if (rc == 0)
					rc = walk_follow(w, lp.p, lp.len,
							 &n.payload);
				kt__buf_free(&lp);
			}
			kt__node_free(&n);
			if (rc != 0)
				return rc;
			continue;
		}
		if (last) {
			have = 1;
			break;
		}
		if (!(n.kind & KT_KIND_DIR)) {
			if ((flags & KT__R_CREATE) && orig &&
			    (n.kind & KT_KIND_ITEM)) {
				rc = kt__item_to_dir(rd->tx, w->cur.p,
						     w->cur.len, &n);
				kt__node_free(&n);
				if (rc == KT_EPERM)
					kt__err_prefix("%s '%s'", op,
						       kt__show(a, sizeof(a),
								path,
								strlen(path)));
				if (rc != 0)
					return rc;
				continue;
			}
			kt__node_free(&n);
			return kt__err(KT_ENOTDIR, "%s '%s': '%s' is not a "
				       "directory", op,
				       kt__show(a, sizeof(a), path,
						strlen(path)),
				       w->cur.p);
		}
		kt__node_free(&n);
	}
	if (!have) {
		/* Ended on the root or after "..": load where we are. */
		const char *p = w->cur.len ? w->cur.p : "/";
		size_t plen = w->cur.len ? w->cur.len : 1;
		rc = kt__node_get(&n, rd, p, plen);
		if (rc == KT_ENOTFOUND)
			rc = kt__err(KT_ECORRUPT, "%s: node '%s' vanished", op,
				     p);
		if (rc != 0)
			return rc;
	}
	rc = finish(r, w, 1, &n);
	kt__node_free(&n);
	return rc;
}

/* Join a link's directory and its target into a canonical path, when that
 * can be done by text alone: no "..", which needs the walk (the component
 * before it must be a real directory), and no trailing '/', which demands a
 * directory.  Empty and "." components drop out.  0 on success, 1 when the
 * target is not that simple, or an error. */
static int join_simple(kt__buf *out, const char *dir, size_t dlen,
		       const kt__buf *target, const kt__delim *d)
{
	const char *t = target->p, *end = t + target->len, *s;
	int rc = 0;

	/* A trailing '/' or "." after a name asks for a directory: walk. */
	if (target->len == 0 || t[target->len - 1] == '/' ||
	    (target->len >= 2 && t[target->len - 1] == '.' &&
	     t[target->len - 2] == '/'))
		return 1;
	out->len = 0;
	if (t[0] != '/' && dlen > 1)
		rc = kt__buf_add(out, dir, dlen);
	for (; t < end && rc == 0; t = s + 1) {
		s = memchr(t, '/', (size_t)(end - t));
		if (s == NULL)
			s = end;
		if (s == t || (s - t == 1 && t[0] == '.'))
			continue;
		if (s - t == 2 && t[0] == '.' && t[1] == '.')
			return 1;
		if ((rc = kt__buf_addc(out, '/')) == 0)
			rc = kt__buf_add(out, t, (size_t)(s - t));
	}
	if (rc == 0 && out->len == 0)
		rc = kt__buf_addc(out, '/');
	if (rc != 0)
		return rc;
	/* Names that cannot exist (the delimiter, too long) are the walk's
	 * to report. */
	return kt__path_valid(d, out->p, out->len) ? 0 : 1;
}

/* A link found by the fast path: follow it by text while targets stay
 * simple and land on existing rows, with one lookup per hop.  0 with @p r
 * filled, 1 to fall back to the walk, or an error. */
static int follow_fast(kt__res *r, kt__rd *rd, const char *path, size_t len,
		       kt__node *link)
{
	kt__buf cur = {0}, next = {0};
	kt__node n = {0};
	int hops = 0, rc;

	if ((rc = kt__buf_set(&cur, path, len)) != 0)
		return rc;
	for (;;) {
		size_t pl = kt__parent_len(cur.p, cur.len);
		rc = join_simple(&next, pl ? cur.p : "/", pl ? pl : 1,
				 hops == 0 ? &link->payload : &n.payload,
				 &rd->st->delim);
		kt__node_free(&n);
		memset(&n, 0, sizeof(n));
		if (rc != 0 || ++hops > KT_LINK_HOPS_MAX)
			break;
		rc = kt__node_get(&n, rd, next.p, next.len);
		if (rc != 0) {
			if (rc == KT_ENOTFOUND)
				rc = 1;
			break;
		}
		if (n.kind != KT_KIND_LINK) {
			r->exists = 1;
			r->node = n;
			memset(&n, 0, sizeof(n));
			r->parent_len = next.len > 1
						? kt__parent_len(next.p, next.len)
						: 0;
			r->path = next;
			memset(&next, 0, sizeof(next));
			break;
		}
		kt__buf tmp = cur;
		cur = next;
		next = tmp;
	}
	if (hops > KT_LINK_HOPS_MAX)
		rc = 1; /* the walk says KT_ELOOP, with its message */
	kt__node_free(&n);
	kt__buf_free(&cur);
	kt__buf_free(&next);
	return rc;
}

/* Hint that the node row of @p path's parent will be read. */
static void parent_prefetch(kt__rd *rd, const char *path, size_t len)
{
	size_t pl = kt__parent_len(path, len);
	kt__buf part = {0};

	if (kt__enc_node(&part, &rd->st->delim, pl ? path : "/",
			 pl ? pl : 1) == 0)
		kt__rd_prefetch(rd, kt__slb(&part), kt__sl("", 0));
	kt__buf_free(&part);
}

int kt__resolve(kt__res *r, kt__rd *rd, const char *path, unsigned int flags,
		const char *op)
{
	size_t len = strlen(path);
	walk w;
	kt__node n = {0};
	int rc;

	memset(r, 0, sizeof(*r));
	/* A create usually finds the name absent and then reads the parent:
	 * on an engine where a read is a round trip, both go at once. */
	if ((flags & (KT__R_CREATE | KT__R_NEW)) && len > 1)
		parent_prefetch(rd, path, len);
	/* Fast path: the full path has a row and needs no link followed. */
	rc = kt__node_get(&n, rd, path, len);
	if (rc == 0 && n.kind == KT_KIND_LINK && (flags & KT__R_FOLLOW)) {
		rc = follow_fast(r, rd, path, len, &n);
		kt__node_free(&n);
		if (rc != 1)
			return rc;
		rc = 0; /* not simple: straight to the walk */
	} else if (rc == 0) {
		r->exists = 1;
		r->node = n;
		r->parent_len = len > 1 ? kt__parent_len(path, len) : 0;
		rc = kt__buf_set(&r->path, path, len);
		if (rc != 0)
			kt__res_free(r);
		return rc;
	}
	kt__node_free(&n);
	if (rc != 0 && rc != KT_ENOTFOUND)
		return rc;
	if (rc == KT_ENOTFOUND && len > 1) {
		/* Second chance: the parent is a plain directory, so the
		 * name is simply absent (the creation case). */
		size_t pl = kt__parent_len(path, len);
		rc = kt__node_get(&n, rd, pl ? path : "/", pl ? pl : 1);
		if (rc == 0 && n.kind & KT_KIND_DIR) {
			kt__node_free(&n);
			r->exists = 0;
			r->parent_len = pl;
			rc = kt__buf_set(&r->path, path, len);
			if (rc != 0)
				kt__res_free(r);
			return rc;
		}
		kt__node_free(&n);
		if (rc != 0 && rc != KT_ENOTFOUND)
			return rc;
	}

	memset(&w, 0, sizeof(w));
	rc = kt__buf_set(&w.rest, len > 1 ? path + 1 : "", len > 1 ? len - 1 : 0);
	if (rc == 0 && (rc = kt__buf_reserve(&w.cur, len)) == 0) {
		w.nrest = w.norig = kt__depth(path, len);
		rc = walk_run(r, rd, &w, path, flags, op);
	}
	walk_free(&w);
	if (rc != 0)
		kt__res_free(r);
	return rc;
}

void kt__res_free(kt__res *r)
{
	kt__buf_free(&r->path);
	kt__node_free(&r->node);
	memset(r, 0, sizeof(*r));
}
