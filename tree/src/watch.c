/*
 * watch.c - kt_watch: what other processes commit, told as names and node
 * ids.
 *
 * The holder's server (server.c) hears every commit applied to the store
 * and sends its writes, values cut short, to each watcher: to the holder's
 * own through a thread of the server, to a client's over a second
 * connection (rows_remote.c).  On RADOS, where there is no holder, each
 * client tells the watchers itself with a notify (rows_rados.c,
 * "Watching").  Here the rows become changes a cache can act on:
 *
 *   node row    E(p), ""        the node's id (bytes 2..9 of the value)
 *                               when written; not its name: a node that
 *                               comes, goes or changes kind has its index
 *                               row written too, so a node row alone is an
 *                               update of the node (its times, its size)
 *                               and forgetting its inode is enough.  (A
 *                               name change there would make every other
 *                               mount drop its cache of the whole directory
 *                               whose mtime a create inside it moved.)
 *   index row   E(d) D, name    the name in d; the child's id (bytes 1..8)
 *   /id, /orphan  id (8 bytes BE)                       the node id
 *   /blk/ID, /attr/ID, /alias/ID  (16 hex digits)       the node id
 *
 * A node deleted by the commit is known by its id row (deleted with it),
 * a renamed one by both names and its rewritten id row.  /meta rows
 * (counters, header) mean nothing to a cache.  Each change is reported
 * once per commit.
 */
#include <stdlib.h>
#include <string.h>

#include "path.h"
#include "server.h"
#include "tree.h"

struct kt__watch {
	kt_store *st;
	kt_watch_cb cb;
	void *payload;
};

/* A change being collected: strings are offsets into the arena, which
 * moves as it grows. */
typedef struct pending {
	unsigned int what;
	size_t dir, dir_len, name, name_len;
	uint64_t id;
} pending;

typedef struct collect {
	const kt__delim *d;
	pending *v;
	size_t n, cap;
	kt__buf arena;
	kt__buf tmp;
} collect;

static pending *add(collect *c)
{
	if (c->n == c->cap) {
		size_t nc = c->cap ? 2 * c->cap : 16;
		pending *t = realloc(c->v, nc * sizeof(*t));
		if (t == NULL)
			return NULL;
		c->v = t;
		c->cap = nc;
	}
	memset(&c->v[c->n], 0, sizeof(c->v[0]));
	return &c->v[c->n++];
}

static int add_node(collect *c, uint64_t id)
{
	pending *p;

	if (id == 0)
		return 0;
	if ((p = add(c)) == NULL)
		return KT_ENOMEM;
	p->what = KT_CHANGE_NODE;
	p->id = id;
	return 0;
}

/* The name @p name in directory @p dir (a canonical path). */
static int add_name(collect *c, const char *dir, size_t dir_len,
		    const char *name, size_t name_len)
{
	pending *p;

	if ((p = add(c)) == NULL)
		return KT_ENOMEM;
	p->what = KT_CHANGE_NAME;
	p->dir = c->arena.len;
	p->dir_len = dir_len;
	if (kt__buf_add(&c->arena, dir, dir_len) != 0)
		return KT_ENOMEM;
	p->name = c->arena.len;
	p->name_len = name_len;
	return name_len ? kt__buf_add(&c->arena, name, name_len) : 0;
}

/* The id in 16 lowercase hex digits after @p plen bytes of @p part. */
static uint64_t hex_id(kt__slice part, size_t plen)
{
	uint64_t id = 0;
	size_t i;

	if (part.len != plen + 16)
		return 0;
	for (i = plen; i < part.len; i++) {
		char ch = part.p[i];
		unsigned int v;

		if (ch >= '0' && ch <= '9')
			v = (unsigned int)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v = (unsigned int)(ch - 'a' + 10);
		else
			return 0;
		id = id << 4 | v;
	}
	return id;
}

static int starts(kt__slice s, const char *prefix)
{
	size_t n = strlen(prefix);

	return s.len >= n && memcmp(s.p, prefix, n) == 0;
}

static int same(kt__slice s, const char *what)
{
	return s.len == strlen(what) && memcmp(s.p, what, s.len) == 0;
}

/* The changes one written row stands for. */
static int row_changes(collect *c, const kt__write *w)
{
	const kt__delim *d = c->d;
	const unsigned char *v = (const unsigned char *)w->value.p;
	int live = !w->del && v != NULL;
	int rc;

	if (w->part.len > 0 && w->part.p[0] == '/') {
		if ((same(w->part, KT__PART_ID) ||
		     same(w->part, KT__PART_ORPHAN)) && w->sort.len == 8)
			return add_node(c, kt__get64be(
				(const unsigned char *)w->sort.p));
		if (starts(w->part, KT__PART_BLK))
			return add_node(c, hex_id(w->part,
						  strlen(KT__PART_BLK)));
		if (starts(w->part, KT__PART_ATTR))
			return add_node(c, hex_id(w->part,
						  strlen(KT__PART_ATTR)));
		if (starts(w->part, KT__PART_ALIAS))
			return add_node(c, hex_id(w->part,
						  strlen(KT__PART_ALIAS)));
		return 0;
	}
	c->tmp.len = 0;
	if (w->sort.len == 0) {
		/* A node row: its id (see the top of this file). */
		if (live && w->value.len >= 10)
			return add_node(c, kt__get64(v + 2));
		return 0;
	}
	/* An index row: E(dir) D, sort key the name. */
	if (w->part.len < d->len ||
	    memcmp(w->part.p + w->part.len - d->len, d->s, d->len) != 0)
		return 0;
	if (live && w->value.len >= 9 &&
	    (rc = add_node(c, kt__get64(v + 1))) != 0)
		return rc;
	if (kt__dec_node(&c->tmp, d, w->part.p, w->part.len - d->len) != 0)
		return 0;
	if (!d->typed)
		return add_name(c, c->tmp.p, c->tmp.len, w->sort.p,
				w->sort.len);
	{
		/* Typed names: the sort key is the name's row form. */
		kt__buf name = {0};
		rc = kt__name_dec(&name, d, w->sort.p, w->sort.len);
		if (rc == 0)
			rc = add_name(c, c->tmp.p, c->tmp.len, name.p,
				      name.len);
		kt__buf_free(&name);
		return rc == KT_ECORRUPT ? 0 : rc;
	}
}

static const char *sort_arena;

static int pending_cmp(const void *a, const void *b)
{
	const pending *x = a, *y = b;
	int r;

	if (x->what != y->what)
		return x->what < y->what ? -1 : 1;
	if (x->what == KT_CHANGE_NODE)
		return x->id < y->id ? -1 : x->id > y->id;
	if (x->dir_len != y->dir_len)
		return x->dir_len < y->dir_len ? -1 : 1;
	if ((r = memcmp(sort_arena + x->dir, sort_arena + y->dir,
			x->dir_len)) != 0)
		return r;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return memcmp(sort_arena + x->name, sort_arena + y->name, x->name_len);
}

int kt__changes(kt_change **out, size_t *nout, char **arena,
		const kt__delim *d, const kt__write *w, size_t nw)
{
	static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;
	collect c;
	kt_change *ch = NULL;
	size_t i, n = 0;
	int rc = 0;

	memset(&c, 0, sizeof(c));
	c.d = d;
	*out = NULL;
	*nout = 0;
	*arena = NULL;
	for (i = 0; i < nw && rc == 0; i++)
		rc = row_changes(&c, &w[i]);
	if (rc == 0 && c.n > 0) {
		/* Sort and keep each change once; qsort has no argument,
		 * hence the lock around the arena it compares in. */
		pthread_mutex_lock(&sort_mu);
		sort_arena = c.arena.p;
		qsort(c.v, c.n, sizeof(*c.v), pending_cmp);
		sort_arena = NULL;
		pthread_mutex_unlock(&sort_mu);
		if ((ch = calloc(c.n, sizeof(*ch))) == NULL)
			rc = KT_ENOMEM;
	}
	for (i = 0; rc == 0 && i < c.n; i++) {
		pending *p = &c.v[i];

		if (n > 0) {
			const kt_change *q = &ch[n - 1];

			if (q->what == p->what &&
			    (p->what == KT_CHANGE_NODE ? q->id == p->id :
			     q->dir_len == p->dir_len &&
			     q->name_len == p->name_len &&
			     memcmp(q->dir, c.arena.p + p->dir,
				    p->dir_len) == 0 &&
			     memcmp(q->name, c.arena.p + p->name,
				    p->name_len) == 0))
				continue;
		}
		ch[n].what = p->what;
		ch[n].id = p->id;
		if (p->what == KT_CHANGE_NAME) {
			ch[n].dir = c.arena.p + p->dir;
			ch[n].dir_len = p->dir_len;
			ch[n].name = c.arena.p + p->name;
			ch[n].name_len = p->name_len;
		}
		n++;
	}
	free(c.v);
	kt__buf_free(&c.tmp);
	if (rc != 0) {
		free(ch);
		kt__buf_free(&c.arena);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	*out = ch;
	*nout = n;
	*arena = c.arena.p;
	return 0;
}

static void on_note(void *arg, const kt__write *w, size_t nw)
{
	kt__watch *wt = arg;
	kt_change *ch;
	size_t n;
	char *arena;

	if (kt__changes(&ch, &n, &arena, &wt->st->delim, w, nw) != 0)
		return;
	if (n > 0)
		wt->cb(ch, n, wt->payload);
	free(ch);
	free(arena);
}

void kt__watch_stop(kt_store *st)
{
	if (st->watch == NULL)
		return;
	if (st->server != NULL)
		kt__server_watch(st->server, NULL, NULL);
	else if (st->remote)
		kt__remote_watch(st->rows, NULL, NULL);
#ifdef KT_HAVE_RADOS
	else if (st->rados)
		kt__rados_watch(st->rows, NULL, NULL);
#endif
	free(st->watch);
	st->watch = NULL;
}

int kt_watch(kt_store *st, kt_watch_cb cb, void *payload)
{
	kt__watch *wt;
	int rc = 0;

	if (st == NULL)
		return kt__err(KT_EINVAL, "watch: store is NULL");
	if (cb == NULL) {
		kt__watch_stop(st);
		return 0;
	}
	if (st->watch != NULL)
		return kt__err(KT_EEXISTS, "watch: this store handle is "
			       "watched already");
	if ((wt = calloc(1, sizeof(*wt))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	wt->st = st;
	wt->cb = cb;
	wt->payload = payload;
	/* A holder that could not start its server is alone with the
	 * store: nobody else can commit, so there is nothing to hear. */
	if (st->server != NULL)
		rc = kt__server_watch(st->server, on_note, wt);
	else if (st->remote)
		rc = kt__remote_watch(st->rows, on_note, wt);
#ifdef KT_HAVE_RADOS
	/* Other clients of a RADOS store commit straight to the cluster:
	 * they tell each other with RADOS watch/notify (rows_rados.c). */
	else if (st->rados)
		rc = kt__rados_watch(st->rows, on_note, wt);
#endif
	if (rc != 0) {
		free(wt);
		return rc;
	}
	st->watch = wt;
	return 0;
}
