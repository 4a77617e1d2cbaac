/*
 * eng_sqlite.c - the benchmark's workloads on SQLite, as many would build a
 * tree store instead: one table of nodes with a UNIQUE (parent, name)
 * index, paths resolved one component at a time with a prepared
 * statement, links followed from the root.  Durability comparable to
 * keytree's default (no fsync per write, but every write survives a
 * process crash): WAL mode with synchronous=NORMAL, each operation its own
 * transaction.  Cache 8 MiB, as keytree's LevelDB block cache.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench.h"

#define ROOT_ID 1
#define K_ITEM	1
#define K_DIR	2
#define K_LINK	4

typedef struct sctx {
	const bench_params *p;
	sqlite3 *db;
	char file[BENCH_PATH_MAX * 2];
	sqlite3_stmt *lookup, *insert, *children, *rename, *delete_tree;
} sctx;

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS node ("
	" id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,"
	" name TEXT NOT NULL, kind INTEGER NOT NULL, mode INTEGER NOT NULL,"
	" uid INTEGER NOT NULL, gid INTEGER NOT NULL, mtime INTEGER NOT NULL,"
	" value BLOB);"
	"CREATE UNIQUE INDEX IF NOT EXISTS node_parent_name"
	" ON node(parent, name);"
	"INSERT OR IGNORE INTO node VALUES (1, 0, '', 2, 493, 0, 0, 0, NULL);";

static int sq_fail(sctx *c, const char *what)
{
	return bench_fail(what, sqlite3_errmsg(c->db));
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void finalize_all(sctx *c)
{
	sqlite3_finalize(c->lookup);
	sqlite3_finalize(c->insert);
	sqlite3_finalize(c->children);
	sqlite3_finalize(c->rename);
	sqlite3_finalize(c->delete_tree);
	c->lookup = c->insert = c->children = c->rename = NULL;
	c->delete_tree = NULL;
}

static int s_dbopen(sctx *c)
{
	if (sqlite3_open(c->file, &c->db) != SQLITE_OK)
		return sq_fail(c, "sqlite3_open");
	if (sqlite3_exec(c->db,
			 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			 "PRAGMA cache_size=-8192;",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(c->db, schema, NULL, NULL, NULL) != SQLITE_OK)
		return sq_fail(c, "schema");
	if (sqlite3_prepare_v2(c->db,
			       "SELECT id, kind, value FROM node"
			       " WHERE parent = ?1 AND name = ?2",
			       -1, &c->lookup, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db,
			       "INSERT INTO node (parent, name, kind, mode,"
			       " uid, gid, mtime, value)"
			       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
			       -1, &c->insert, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db,
			       "SELECT name, kind, id FROM node"
			       " WHERE parent = ?1 ORDER BY name",
			       -1, &c->children, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db,
			       "UPDATE node SET parent = ?1, name = ?2,"
			       " mtime = ?3 WHERE id = ?4",
			       -1, &c->rename, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db,
			       "WITH RECURSIVE sub(id) AS (VALUES (?1)"
			       " UNION ALL SELECT n.id FROM node n"
			       " JOIN sub ON n.parent = sub.id)"
			       " DELETE FROM node WHERE id IN sub",
			       -1, &c->delete_tree, NULL) != SQLITE_OK)
		return sq_fail(c, "prepare");
	return 0;
}

/* One step of a path: the child @p name of @p parent. */
static int lookup(sctx *c, sqlite3_int64 parent, const char *name, size_t len,
		  sqlite3_int64 *id, int *kind, char *target)
{
	int rc;

	sqlite3_bind_int64(c->lookup, 1, parent);
	sqlite3_bind_text(c->lookup, 2, name, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(c->lookup);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(c->lookup, 0);
		*kind = sqlite3_column_int(c->lookup, 1);
		if (*kind == K_LINK && target != NULL) {
			int n = sqlite3_column_bytes(c->lookup, 2);
			if (n >= BENCH_PATH_MAX)
				n = BENCH_PATH_MAX - 1;
			memcpy(target, sqlite3_column_blob(c->lookup, 2),
			       (size_t)n);
			target[n] = '\0';
		}
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = 1;
	} else {
		rc = sq_fail(c, "lookup");
	}
	sqlite3_reset(c->lookup);
	return rc;
}

/* Resolve an absolute path, following links; the statement is left on the
 * last row when @p keep (so the caller can read the value).  Returns 0, 1
 * when absent, -1 on error. */
static int resolve(sctx *c, const char *path, sqlite3_int64 *id, int *kind,
		   int hops)
{
	char target[BENCH_PATH_MAX];
	const char *s = path + 1;
	sqlite3_int64 cur = ROOT_ID;
	int k = K_DIR, rc;

	while (*s) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		rc = lookup(c, cur, s, len, &cur, &k, target);
		if (rc != 0)
			return rc;
		if (k == K_LINK) {
			if (hops >= 40)
				return bench_fail("resolve", "loop");
			rc = resolve(c, target, &cur, &k, hops + 1);
			if (rc != 0)
				return rc;
		}
		s += len + (e != NULL);
	}
	*id = cur;
	*kind = k;
	return 0;
}

static int insert(sctx *c, sqlite3_int64 parent, const char *name, int kind,
		  const void *value, int len, sqlite3_int64 *id)
{
	sqlite3_bind_int64(c->insert, 1, parent);
	sqlite3_bind_text(c->insert, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(c->insert, 3, kind);
	sqlite3_bind_int(c->insert, 4, kind == K_DIR ? 0755 : 0644);
	sqlite3_bind_int(c->insert, 5, (int)geteuid());
	sqlite3_bind_int(c->insert, 6, (int)getegid());
	sqlite3_bind_int64(c->insert, 7, now_ns());
	if (value != NULL)
		sqlite3_bind_blob(c->insert, 8, value, len, SQLITE_STATIC);
	else
		sqlite3_bind_null(c->insert, 8);
	if (sqlite3_step(c->insert) != SQLITE_DONE) {
		sqlite3_reset(c->insert);
		return sq_fail(c, "insert");
	}
	sqlite3_reset(c->insert);
	if (id != NULL)
		*id = sqlite3_last_insert_rowid(c->db);
	return 0;
}

/* mkdir -p */
static int mkdirs(sctx *c, const char *path, sqlite3_int64 *id)
{
	char name[BENCH_PATH_MAX];
	const char *s = path + 1;
	sqlite3_int64 cur = ROOT_ID;
	int k, rc;

	while (*s) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		rc = lookup(c, cur, s, len, &cur, &k, NULL);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			memcpy(name, s, len);
			name[len] = '\0';
			if (insert(c, cur, name, K_DIR, NULL, 0, &cur) != 0)
				return -1;
		}
		s += len + (e != NULL);
	}
	*id = cur;
	return 0;
}

static int s_open(void **out, const bench_params *p)
{
	sctx *c = calloc(1, sizeof(*c));
	char path[BENCH_PATH_MAX], name[BENCH_PATH_MAX];
	sqlite3_int64 dir, l, big;
	long i;

	*out = c;
	if (c == NULL)
		return bench_fail("open", "out of memory");
	c->p = p;
	snprintf(c->file, sizeof(c->file), "%s/tree.db", p->dir);
	if (s_dbopen(c) != 0 ||
	    sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	for (i = 0; i < p->n; i += 10) {
		bench_item_dir(path, i);
		if (mkdirs(c, path, &dir) != 0)
			return -1;
	}
	if (mkdirs(c, "/l", &l) != 0 || mkdirs(c, "/big", &big) != 0)
		return -1;
	for (i = 0; i < p->nlinks; i++) {
		bench_link_name(name, i);
		bench_item_path(path, bench_link_target(p, i));
		if (insert(c, l, name, K_LINK, path, (int)strlen(path), NULL) !=
		    0)
			return -1;
	}
	for (i = 0; i < p->nbig; i++) {
		bench_big_name(name, i);
		if (insert(c, big, name, K_ITEM, bench_value(i),
			   BENCH_VALUE_LEN, NULL) != 0)
			return -1;
	}
	if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return sq_fail(c, "commit");
	return 0;
}

static int s_reopen(void *ctx)
{
	sctx *c = ctx;

	finalize_all(c);
	if (sqlite3_close(c->db) != SQLITE_OK)
		return sq_fail(c, "close");
	c->db = NULL;
	return s_dbopen(c);
}

static int s_put(void *ctx, long i)
{
	sctx *c = ctx;
	char dir[BENCH_PATH_MAX], name[BENCH_PATH_MAX];
	sqlite3_int64 parent;
	int kind, rc;

	bench_item_dir(dir, i);
	bench_item_name(name, i);
	rc = resolve(c, dir, &parent, &kind, 0);
	if (rc != 0)
		return rc < 0 ? rc : bench_fail("put", "no parent");
	return insert(c, parent, name, K_ITEM, bench_value(i), BENCH_VALUE_LEN,
		      NULL);
}

/* Resolve the parent, then read the last component's value. */
static int read_value(sctx *c, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[BENCH_PATH_MAX];
	sqlite3_int64 parent;
	int kind, rc, n;
	void *val;

	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	rc = resolve(c, slash == path ? "/" : dir, &parent, &kind, 0);
	if (rc != 0)
		return rc < 0 ? rc : bench_fail("get", "no parent");
	sqlite3_bind_int64(c->lookup, 1, parent);
	sqlite3_bind_text(c->lookup, 2, slash + 1, -1, SQLITE_STATIC);
	if (sqlite3_step(c->lookup) != SQLITE_ROW) {
		sqlite3_reset(c->lookup);
		return bench_fail("get", "no item");
	}
	kind = sqlite3_column_int(c->lookup, 1);
	if (kind == K_LINK) {
		char target[BENCH_PATH_MAX];

		n = sqlite3_column_bytes(c->lookup, 2);
		memcpy(target, sqlite3_column_blob(c->lookup, 2), (size_t)n);
		target[n] = '\0';
		sqlite3_reset(c->lookup);
		return read_value(c, target);
	}
	n = sqlite3_column_bytes(c->lookup, 2);
	val = malloc((size_t)n + 1);
	memcpy(val, sqlite3_column_blob(c->lookup, 2), (size_t)n);
	free(val);
	sqlite3_reset(c->lookup);
	return n == BENCH_VALUE_LEN ? 0 : bench_fail("get", "wrong length");
}

static int s_get(void *ctx, long i)
{
	char path[BENCH_PATH_MAX];

	bench_item_path(path, i);
	return read_value(ctx, path);
}

static int s_get_link(void *ctx, long k)
{
	char path[BENCH_PATH_MAX * 2], name[BENCH_PATH_MAX];

	bench_link_name(name, k);
	snprintf(path, sizeof(path), "/l/%s", name);
	return read_value(ctx, path);
}

static long s_find(void *ctx)
{
	sctx *c = ctx;
	sqlite3_stmt *st = NULL;
	long n = 0;
	int rc;

	/* Every node under a top-level name starting with 't', with its
	 * path, kind and id. */
	if (sqlite3_prepare_v2(c->db,
			       "WITH RECURSIVE sub(id, kind, path) AS ("
			       " SELECT id, kind, '/' || name FROM node"
			       "  WHERE parent = 1 AND name >= 't' AND"
			       "  name < 'u'"
			       " UNION ALL SELECT n.id, n.kind,"
			       "  sub.path || '/' || n.name"
			       "  FROM node n JOIN sub ON n.parent = sub.id)"
			       " SELECT path, kind, id FROM sub",
			       -1, &st, NULL) != SQLITE_OK)
		return sq_fail(c, "prepare");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		(void)sqlite3_column_text(st, 0);
		n++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sq_fail(c, "find");
	return n;
}

static long s_list_big(void *ctx)
{
	sctx *c = ctx;
	sqlite3_int64 big;
	long n = 0;
	int kind, rc;

	if (resolve(c, "/big", &big, &kind, 0) != 0)
		return bench_fail("list", "no /big");
	sqlite3_bind_int64(c->children, 1, big);
	while ((rc = sqlite3_step(c->children)) == SQLITE_ROW) {
		(void)sqlite3_column_text(c->children, 0);
		n++;
	}
	sqlite3_reset(c->children);
	if (rc != SQLITE_DONE)
		return sq_fail(c, "list");
	return n;
}

/* Both paths are top-level here: one UPDATE, whatever the subtree. */
static int s_rename(void *ctx, const char *from, const char *to)
{
	sctx *c = ctx;
	sqlite3_int64 id;
	int kind, rc;

	rc = lookup(c, ROOT_ID, from + 1, strlen(from + 1), &id, &kind, NULL);
	if (rc != 0)
		return rc < 0 ? rc : bench_fail("rename", "no source");
	sqlite3_bind_int64(c->rename, 1, ROOT_ID);
	sqlite3_bind_text(c->rename, 2, to + 1, -1, SQLITE_STATIC);
	sqlite3_bind_int64(c->rename, 3, now_ns());
	sqlite3_bind_int64(c->rename, 4, id);
	rc = sqlite3_step(c->rename);
	sqlite3_reset(c->rename);
	return rc == SQLITE_DONE ? 0 : sq_fail(c, "rename");
}

static long s_delete_all(void *ctx)
{
	sctx *c = ctx;
	sqlite3_int64 *ids = NULL;
	long n = 0, cap = 0, i;
	int rc;

	sqlite3_bind_int64(c->children, 1, ROOT_ID);
	while ((rc = sqlite3_step(c->children)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			ids = realloc(ids, sizeof(*ids) * (size_t)cap);
		}
		ids[n++] = sqlite3_column_int64(c->children, 2);
	}
	sqlite3_reset(c->children);
	for (i = 0; i < n && rc == SQLITE_DONE; i++) {
		if (sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
			break;
		sqlite3_bind_int64(c->delete_tree, 1, ids[i]);
		rc = sqlite3_step(c->delete_tree);
		sqlite3_reset(c->delete_tree);
		if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) !=
		    SQLITE_OK)
			rc = SQLITE_ERROR;
	}
	free(ids);
	if (rc != SQLITE_DONE)
		return sq_fail(c, "delete");
	return n;
}

static void s_close(void *ctx)
{
	sctx *c = ctx;

	if (c == NULL)
		return;
	finalize_all(c);
	sqlite3_close(c->db);
	free(c);
}

const bench_engine bench_sqlite = {
	.name = "sqlite",
	.open = s_open,
	.reopen = s_reopen,
	.put = s_put,
	.get = s_get,
	.get_link = s_get_link,
	.find = s_find,
	.list_big = s_list_big,
	.rename = s_rename,
	.delete_all = s_delete_all,
	.close = s_close,
};
