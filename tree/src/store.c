/*
 * store.c - opening, creating and closing a store: where it is (a
 * directory, for LevelDB, or a RADOS location, "rados:POOL[/NS]/TREE"),
 * which engine reaches it, the header row that marks the rows as a
 * keytree store (format version, delimiter, value layout), the id/version
 * counters, and the root node.  Both engines share everything after the
 * engine is open: creation, the header, upgrades.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server.h"
#include "tree.h"

/* How long kt_open() of a store held by another process waits for the
 * holder's socket to appear (a holder starting up) or for the lock to be
 * freed (a holder going away), in steps of KT__WAIT_STEP_MS. */
#define KT__WAIT_MS 2000
#define KT__WAIT_STEP_MS 20

#define MAGIC "keytree\0"
#define MAGIC_LEN 8
#define HEADER_LEN (MAGIC_LEN + 4 + 4 + 4 + 1)

static kt__slice meta_part(void)
{
	return kt__sl(KT__PART_META, strlen(KT__PART_META));
}

/* What is at @p dir: 0 nothing (absent or empty directory), 1 a LevelDB
 * database, or an error. */
static int probe_dir(const char *dir)
{
	struct stat sb;
	char cur[4096];
	DIR *d;
	struct dirent *e;
	int other = 0;

	if (stat(dir, &sb) != 0) {
		if (errno == ENOENT)
			return 0;
		return kt__err(KT_EIO, "open '%s': %s", dir, strerror(errno));
	}
	if (!S_ISDIR(sb.st_mode))
		return kt__err(KT_ENOTSTORE, "open '%s': not a directory, so "
			       "not a keytree store", dir);
	snprintf(cur, sizeof(cur), "%s/CURRENT", dir);
	if (access(cur, F_OK) == 0)
		return 1;
	d = opendir(dir);
	if (d == NULL)
		return kt__err(KT_EIO, "open '%s': %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			other = 1;
	closedir(d);
	if (other)
		return kt__err(KT_ENOTSTORE, "open '%s': the directory is not "
			       "empty and holds no keytree store", dir);
	return 0;
}

/* Formats this library writes: a store with neither typed names nor
 * block checksums (a RADOS tree of plain names) keeps format 4, which
 * older libraries read; the others are 5, whose header ends with a flags
 * byte.  KT_FORMAT_VERSION is the newest it reads. */
#define FORMAT_PLAIN 4
#define FORMAT_FLAGS 5
#define HF_TYPED 0x01  /* typed names (§3a) */
#define HF_BLKSUM 0x02 /* block rows end with their CRC-32C (§6) */
#define HF_JOURNAL 0x04 /* a large rename or delete is under way (§11) */
#define HF_COUNTED 0x08 /* directories count their entries (§4) */
#define HF_KNOWN (HF_TYPED | HF_BLKSUM | HF_JOURNAL | HF_COUNTED)

int kt__test_blksum = 1;
int kt__test_counted = 1;

static unsigned int header_flags(const kt_store *st, int journal)
{
	return (st->delim.typed ? HF_TYPED : 0) |
	       (st->blksum ? HF_BLKSUM : 0) | (journal ? HF_JOURNAL : 0) |
	       (st->counted ? HF_COUNTED : 0);
}

int kt__header_put(kt__tx *tx, int journal)
{
	kt_store *st = tx->st;
	unsigned char h[HEADER_LEN + 8];
	unsigned int fl = header_flags(st, journal);

	memcpy(h, MAGIC, MAGIC_LEN);
	kt__put32(h + 8, fl ? FORMAT_FLAGS : FORMAT_PLAIN);
	kt__put32(h + 12, st->block);
	kt__put32(h + 16, st->inline_max);
	h[20] = (unsigned char)st->delim.len;
	memcpy(h + 21, st->delim.s, st->delim.len);
	h[21 + st->delim.len] = (unsigned char)fl;
	return kt__tx_put(tx, meta_part(), kt__sl("header", 6),
			  kt__sl(h, HEADER_LEN + st->delim.len +
					    (fl ? 1 : 0)));
}

/* Add the header row, for this library's format version, to @p tx. */
static int header_put(kt__tx *tx)
{
	return kt__header_put(tx, tx->st->journal);
}

static int write_initial_once(kt_store *st)
{
	kt__tx tx;
	kt__node root = {0};
	kt__owner own;
	unsigned char alloc[16];
	int rc;

	st->format = header_flags(st, 0) ? FORMAT_FLAGS : FORMAT_PLAIN;
	kt__tx_init(&tx, st);
	own.uid = st->euid;
	own.gid = st->egid;
	root.kind = KT_KIND_DIR;
	root.counted = st->counted;
	root.mode = 0755;
	root.uid = own.uid;
	root.gid = own.gid;
	root.atime = root.mtime = root.ctime = tx.now;
	/* The counter row starts at 1 for both; the root's id and version
	 * are the first of the range this handle reserves from it. */
	kt__put64(alloc, 1);
	kt__put64(alloc + 8, 1);
	rc = kt__tx_put(&tx, meta_part(), kt__sl("alloc", 5),
			kt__sl(alloc, sizeof(alloc)));
	if (rc == 0)
		rc = kt__tx_alloc_id(&tx, &root.id);
	if (rc == 0)
		rc = kt__node_put(&tx, "/", 1, &root);
	if (rc == 0)
		rc = kt__id_put(&tx, root.id, "/", 1);
	/* The header goes last: a store without it is not yet a store. */
	if (rc == 0)
		rc = header_put(&tx);
	if (rc == 0)
		rc = kt__tx_commit(&tx);
	kt__tx_free(&tx);
	kt__node_free(&root);
	return rc;
}

/* The first rows of a new store, in one commit.  It reads nothing, so
 * only an engine that gave up on its own can refuse it (RADOS, a commit
 * slower than its budget, which the next attempt gets more of): try
 * again, as the operation runner does for every other commit. */
static int write_initial(kt_store *st)
{
	int rc, tries;

	for (tries = 1;; tries++) {
		rc = write_initial_once(st);
		if (rc != KT__ERETRY)
			return rc;
		if (tries == 100)
			return kt__err(KT_EBUSY, "creating the store: its first "
				       "commit was refused %d times", tries);
	}
}

static int read_header(kt_store *st, const char *dir, const char *want)
{
	kt__rd rd = {st, NULL, NULL};
	kt__buf v = {0};
	const unsigned char *u;
	uint32_t fmt;
	char a[KT__SHOWSZ], b[KT__SHOWSZ];
	int rc;

	rc = kt__rd_get(&rd, meta_part(), kt__sl("header", 6), &v);
	if (rc == KT_ENOTFOUND)
		return kt__err(KT_ENOTSTORE, "open '%s': a %s without a keytree"
			       " header row, so not a keytree store", dir,
			       st->rados ? "RADOS tree with rows but"
					 : "LevelDB database");
	if (rc != 0)
		return rc;
	u = (const unsigned char *)v.p;
	if (v.len < HEADER_LEN || memcmp(u, MAGIC, MAGIC_LEN) != 0) {
		kt__buf_free(&v);
		return kt__err(KT_ENOTSTORE, "open '%s': the header row is not"
			       " a keytree header", dir);
	}
	fmt = kt__get32(u + 8);
	if (fmt > KT_FORMAT_VERSION) {
		kt__buf_free(&v);
		return kt__err(KT_EVERSION, "open '%s': the store has format "
			       "version %u; this library (%s) reads up to %d",
			       dir, fmt, KT_VERSION_STRING, KT_FORMAT_VERSION);
	}
	st->format = fmt;
	st->block = kt__get32(u + 12);
	st->inline_max = kt__get32(u + 16);
	st->delim.len = u[20];
	if (st->delim.len == 0 || st->delim.len > 4 ||
	    v.len != HEADER_LEN + st->delim.len +
			     (fmt >= FORMAT_FLAGS ? 1 : 0) ||
	    st->block == 0 || st->inline_max > st->block ||
	    st->block > (1u << 24)) {
		kt__buf_free(&v);
		return kt__err(KT_ECORRUPT, "open '%s': the header row is "
			       "damaged", dir);
	}
	if (fmt >= FORMAT_FLAGS && (u[21 + st->delim.len] & ~HF_KNOWN)) {
		unsigned int fl = u[21 + st->delim.len];
		kt__buf_free(&v);
		return kt__err(KT_EVERSION, "open '%s': the store has flags "
			       "0x%02x; this library (%s) knows only 0x%02x",
			       dir, fl, KT_VERSION_STRING, HF_KNOWN);
	}
	memcpy(st->delim.s, u + 21, st->delim.len);
	st->delim.s[st->delim.len] = '\0';
	st->delim.typed = fmt >= FORMAT_FLAGS &&
			  (u[21 + st->delim.len] & HF_TYPED) != 0;
	st->blksum = fmt >= FORMAT_FLAGS &&
		     (u[21 + st->delim.len] & HF_BLKSUM) != 0;
	st->journal = fmt >= FORMAT_FLAGS &&
		      (u[21 + st->delim.len] & HF_JOURNAL) != 0;
	st->counted = fmt >= FORMAT_FLAGS &&
		      (u[21 + st->delim.len] & HF_COUNTED) != 0;
	if (st->delim.typed && kt__typed_check(&st->delim) != 0) {
		kt__buf_free(&v);
		return kt__err(KT_ECORRUPT, "open '%s': the header row is "
			       "damaged (typed names with a control-byte "
			       "delimiter)", dir);
	}
	kt__buf_free(&v);
	if (want != NULL && strcmp(want, st->delim.s) != 0)
		return kt__err(KT_EINVAL, "open '%s': the store's delimiter is"
			       " '%s', not '%s'", dir,
			       kt__show(a, sizeof(a), st->delim.s,
					st->delim.len),
			       kt__show(b, sizeof(b), want, strlen(want)));

	/* The counters are checked here; the handle reserves its ranges
	 * from them at its first write (kt__tx_alloc_id). */
	rc = kt__rd_get(&rd, meta_part(), kt__sl("alloc", 5), &v);
	if (rc == 0 && v.len == 16) {
		st->next_id = st->id_limit = 0;
		st->next_ver = st->ver_limit = 0;
	} else if (rc == 0 || rc == KT_ENOTFOUND) {
		rc = kt__err(KT_ECORRUPT, "open '%s': the counter row is "
			     "missing or damaged", dir);
	}
	kt__buf_free(&v);
	if (rc != 0)
		return rc;
	return 0;
}

/* Bring an older store to this library's format.  From format 1:
 * kt_repair gives every node its id row (and fixes whatever else it
 * finds).  Format 3 only added a node kind (special files), so a format 2
 * store's rows are already format 3 rows.  Then the header says so.  A
 * crash in between leaves the old format number over rows that are
 * already upgraded, and the next writable open upgrades it again. */
static int header_put_fn(kt__tx *tx, void *arg)
{
	(void)arg;
	return header_put(tx);
}

int kt__store_count_entries(kt_store *st)
{
	int rc;

	if (st->counted)
		return 0;
	st->counted = 1;
	rc = kt__tx_run(st, header_put_fn, NULL);
	if (rc == 0)
		st->format = FORMAT_FLAGS;
	else
		st->counted = 0;
	return rc;
}

static int upgrade(kt_store *st, const char *dir)
{
	int rc = 0;

	if (st->format < 2)
		rc = kt_repair(NULL, st, NULL);
	if (rc != 0) {
		kt__err_prefix("open '%s': upgrading from format %u", dir,
			       st->format);
		return rc;
	}
	rc = kt__tx_run(st, header_put_fn, NULL);
	if (rc == 0)
		st->format = FORMAT_PLAIN;
	return rc;
}

/* A client's connection closed: nothing can reach the orphans it left. */
/* A client went away in the steps of a large rename or delete: finish
 * them (on the thread that owns their fence, server.c). */
static void finish_abandoned(void *arg)
{
	kt_store *st = arg;

	if (kt__big_finish(st) != 0)
		fprintf(stderr, "keytree: %s\n", kt_errmsg());
}

static void drop_orphans(void *arg, const uint64_t *ids, size_t n)
{
	kt_store *st = arg;
	size_t i;

	for (i = 0; i < n; i++)
		kt_orphan_release(st, ids[i]);
}

/* Open the engine of the store in @p dir into st->rows: LevelDB when this
 * process gets the lock (it becomes the holder), else the remote engine
 * connected to the holder.  While the store is locked and nobody serves
 * it, try both again for up to KT__WAIT_MS; then the error is LevelDB's
 * KT_EBUSY, which names the holder. */
static int engine_open(kt_store *st, const char *dir,
		       const kt__leveldb_opts *lo)
{
	char busy[1024];
	struct timespec ts = {0, KT__WAIT_STEP_MS * 1000000L};
	int rc, waited;

	for (waited = 0;; waited += KT__WAIT_STEP_MS) {
		rc = kt__leveldb_open(&st->rows, dir, lo);
		if (rc != KT_EBUSY)
			return rc;
		snprintf(busy, sizeof(busy), "%s", kt_errmsg());
		rc = kt__remote_open(&st->rows, dir);
		if (rc == 0) {
			st->remote = 1;
			return 0;
		}
		if (rc != KT_ENOTFOUND)
			return rc;
		if (waited >= KT__WAIT_MS)
			break;
		nanosleep(&ts, NULL);
	}
	return kt__err(KT_EBUSY, "%s", busy);
}

/* ---- locations ----
 *
 * A location names a store: a directory (LevelDB) or
 * "rados:POOL[/NAMESPACE]/TREE".  Parsing happens before anything is
 * opened, so that a typo is told as such rather than as a missing store.
 */

#define RADOS_PREFIX "rados:"
#define RADOS_PREFIX_LEN 6
#define RADOS_FORM "a RADOS location is rados:POOL/TREE or " \
		   "rados:POOL/NAMESPACE/TREE"
/* Pool and namespace names: Ceph takes nearly any string; these bounds
 * only keep out what could not be meant. */
#define RADOS_NAME_MAX 255

/* A location taken apart; the strings point into buf. */
typedef struct loc_parts {
	const char *dir;  /* a directory location, or NULL */
	const char *pool; /* a RADOS location: its three parts */
	const char *nspace; /* NULL: the pool's default namespace */
	const char *tree;
	char *buf;
} loc_parts;

/* Check one part of a RADOS location: @p what names it in messages.  With
 * @p strict only [A-Za-z0-9._-] may occur, else anything but control
 * bytes ('/' was split on already). */
static int loc_part_check(const char *loc, const char *what, const char *p,
			  size_t max, int strict)
{
	char a[KT__SHOWSZ], b[8], l[KT__SHOWSZ];
	size_t i, n = strlen(p);

	/* The location may hold the very bytes at fault. */
	loc = kt__show(l, sizeof(l), loc, strlen(loc));
	if (n == 0)
		return kt__err(KT_EINVAL, "open '%s': the %s is empty (%s)",
			       loc, what, RADOS_FORM);
	if (n > max)
		return kt__err(KT_EINVAL, "open '%s': the %s is %zu bytes, "
			       "more than %zu", loc, what, n, max);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		int ok = strict ? ((c >= 'A' && c <= 'Z') ||
				   (c >= 'a' && c <= 'z') ||
				   (c >= '0' && c <= '9') || c == '.' ||
				   c == '_' || c == '-')
				: (c >= 0x20 && c != 0x7f);

		if (!ok && c >= 0x20 && c < 0x7f)
			snprintf(b, sizeof(b), "%c", c);
		else if (!ok)
			snprintf(b, sizeof(b), "\\x%02x", c);
		if (!ok)
			return kt__err(KT_EINVAL, "open '%s': the %s '%s' "
				       "has '%s' at byte %zu; %s", loc, what,
				       kt__show(a, sizeof(a), p, n), b, i,
				       strict ? "a tree name is made of "
						"A-Z a-z 0-9 . _ -"
					      : "control characters are not "
						"allowed");
	}
	return 0;
}

/* Take @p loc apart into @p l.  0, KT_EINVAL naming the part at fault,
 * or KT_ENOMEM.  l->buf is to be freed by the caller either way. */
static int loc_parse(loc_parts *l, const char *loc)
{
	char *s, *a, *b;
	int rc;

	memset(l, 0, sizeof(*l));
	if (strncmp(loc, RADOS_PREFIX, RADOS_PREFIX_LEN) != 0) {
		l->dir = loc;
		return 0;
	}
	l->buf = s = strdup(loc + RADOS_PREFIX_LEN);
	if (s == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	a = strchr(s, '/');
	if (a == NULL && s[0] == '\0')
		return loc_part_check(loc, "pool name", s, RADOS_NAME_MAX, 0);
	if (a == NULL)
		return kt__err(KT_EINVAL, "open '%s': no tree name after the "
			       "pool (%s)", loc, RADOS_FORM);
	*a++ = '\0';
	b = strchr(a, '/');
	if (b != NULL) {
		*b++ = '\0';
		if (strchr(b, '/') != NULL)
			return kt__err(KT_EINVAL, "open '%s': too many '/' "
				       "(%s; a tree name has no '/')", loc,
				       RADOS_FORM);
	}
	l->pool = s;
	l->nspace = b != NULL ? a : NULL;
	l->tree = b != NULL ? b : a;
	rc = loc_part_check(loc, "pool name", l->pool, RADOS_NAME_MAX, 0);
	if (rc == 0 && l->nspace != NULL)
		rc = loc_part_check(loc, "namespace", l->nspace,
				    RADOS_NAME_MAX, 0);
	if (rc == 0)
		rc = loc_part_check(loc, "tree name", l->tree,
				    KT_RADOS_TREE_MAX, 1);
	return rc;
}

/* @p given, else the environment variable @p env when set and not empty,
 * else NULL. */
static const char *opt_or_env(const char *given, const char *env)
{
	const char *v;

	if (given != NULL)
		return given;
	v = getenv(env);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* A Ceph client name is "client." and an id, as rados_create2() wants. */
static int client_check(const char *loc, const char *client)
{
	char a[KT__SHOWSZ];
	size_t i, n = strlen(client);
	int ok = n > 7 && strncmp(client, "client.", 7) == 0;

	for (i = 0; ok && i < n; i++)
		if ((unsigned char)client[i] <= 0x20 || client[i] == 0x7f)
			ok = 0;
	if (!ok)
		return kt__err(KT_EINVAL, "open '%s': ceph_client '%s' is not "
			       "a client name: 'client.' and an id, as in "
			       "client.admin", loc,
			       kt__show(a, sizeof(a), client, n));
	return 0;
}

/* ---- opening ---- */

/* The LevelDB store in @p dir: make the directory when creating, open
 * the engine into st->rows (LevelDB, or the remote engine of a holder).
 * *creating is set when the store is new (or its creation was cut
 * short) and is to be given its first rows. */
static int open_leveldb(kt_store *st, const char *dir, const kt_options *o,
			int *creating)
{
	kt__leveldb_opts lo = {0, 0, 0};
	int rc, present;

	present = probe_dir(dir);
	if (present < 0)
		return present;
	if (present && o->error_if_exists)
		return kt__err(KT_EEXISTS, "open '%s': a store already exists "
			       "there", dir);
	if (!present) {
		if (!o->create_if_missing)
			return kt__err(KT_ENOTFOUND, "open '%s': no store there "
				       "(create_if_missing is not set)", dir);
		if (mkdir(dir, 0777) != 0 && errno != EEXIST)
			return kt__err(KT_EIO, "open '%s': cannot create the "
				       "directory: %s", dir, strerror(errno));
		*creating = 1;
	}
	lo.create = *creating;
	lo.cache_size = o->cache_size;
	lo.write_buffer_size = o->write_buffer_size;
	rc = engine_open(st, dir, &lo);
	if (rc == KT_ENOTFOUND)
		return kt__err(KT_ENOTFOUND, "open '%s': no store there", dir);
	/* A database with no rows at all is a creation that was cut short
	 * (LevelDB had made its files, the first batch never landed):
	 * finish it when asked to create. */
	if (rc == 0 && !*creating && o->create_if_missing &&
	    st->rows->ops->empty(st->rows) == 1)
		*creating = 1;
	return rc;
}

/* The RADOS tree @p l names (@p loc as given, for messages).  There is
 * no holder: this process is a client of the cluster like any other.  A
 * tree without rows counts as absent, whether it never was or its
 * creation was cut short. */
static int open_rados(kt_store *st, const char *loc, const loc_parts *l,
		      const kt_options *o, int *creating)
{
	const char *client = opt_or_env(o->ceph_client, "KEYTREE_CEPH_CLIENT");
	int rc;

	if (client != NULL && (rc = client_check(loc, client)) != 0)
		return rc;
#ifndef KT_HAVE_RADOS
	(void)st;
	(void)l;
	(void)creating;
	return kt__err(KT_ENOTSUP, "open '%s': this keytree was built "
		       "without RADOS support (librados-dev missing at build "
		       "time)", loc);
#else
	{
		kt__rados_opts ro;
		const char *conf = opt_or_env(o->ceph_conf,
					      "KEYTREE_CEPH_CONF");

		if (conf != NULL && access(conf, R_OK) != 0)
			return kt__err(KT_EINVAL, "open '%s': ceph_conf '%s': "
				       "%s", loc, conf, strerror(errno));
		memset(&ro, 0, sizeof(ro));
		ro.pool = l->pool;
		ro.nspace = l->nspace;
		ro.tree = l->tree;
		ro.conf = conf;
		ro.client = client;
		ro.create = o->create_if_missing != 0;
		st->rados = 1;
		rc = kt__rados_open(&st->rows, &ro);
		if (rc == KT_ENOTFOUND && !o->create_if_missing)
			return kt__err(KT_ENOTFOUND, "open '%s': no store there "
				       "(create_if_missing is not set)", loc);
		if (rc != 0) {
			kt__err_prefix("open '%s'", loc);
			return rc;
		}
		rc = st->rows->ops->empty(st->rows);
		if (rc < 0)
			return rc;
		if (rc == 0 && o->error_if_exists)
			return kt__err(KT_EEXISTS, "open '%s': a store already "
				       "exists there", loc);
		if (rc == 1 && !o->create_if_missing)
			return kt__err(KT_ENOTFOUND, "open '%s': no store there "
				       "(create_if_missing is not set)", loc);
		*creating = rc == 1;
		return 0;
	}
#endif
}

/* Check kt_open()'s arguments and bring @p opts to this library's
 * layout in @p o: version 1 ends before ceph_conf. */
static int options_take(kt_options *o, const char *loc,
			const kt_options *opts)
{
	kt_options def = KT_OPTIONS_INIT;
	int rc;

	*o = def;
	if (opts == NULL)
		return 0;
	if (opts->version == 1)
		memcpy(o, opts, offsetof(kt_options, ceph_conf));
	else if (opts->version == 2)
		memcpy(o, opts, offsetof(kt_options, typed_names));
	else if (opts->version == 3)
		memcpy(o, opts, offsetof(kt_options, write_buffer_size));
	else if (opts->version == KT_OPTIONS_VERSION)
		*o = *opts;
	else
		return kt__err(KT_EINVAL, "open '%s': options version %u, "
			       "expected %d (or 1, 2 or 3)", loc, opts->version,
			       KT_OPTIONS_VERSION);
	o->version = KT_OPTIONS_VERSION;
	if (o->read_only && o->create_if_missing)
		return kt__err(KT_EINVAL, "open '%s': read_only and "
			       "create_if_missing exclude each other", loc);
	if (o->write_buffer_size != 0 &&
	    (o->write_buffer_size < KT__WBUF_MIN ||
	     o->write_buffer_size > KT__WBUF_MAX))
		return kt__err(KT_EINVAL, "open '%s': write_buffer_size %zu "
			       "is outside 1 MiB to 1 GiB", loc,
			       o->write_buffer_size);
	if (o->delimiter != NULL && (rc = kt__delim_check(o->delimiter)) != 0) {
		kt__err_prefix("open '%s'", loc);
		return rc;
	}
	if (o->typed_names) {
		kt__delim d;
		const char *ds = o->delimiter ? o->delimiter
					      : KT_DEFAULT_DELIMITER;
		memset(&d, 0, sizeof(d));
		d.s[0] = ds[0];
		d.len = strlen(ds);
		if ((rc = kt__typed_check(&d)) != 0) {
			kt__err_prefix("open '%s'", loc);
			return rc;
		}
	}
	return 0;
}

/* The most entries a directory may hold: none on LevelDB, whose
 * listings are ranges of one ordered table; KT__DIR_MAX_RADOS on RADOS;
 * $KEYTREE_DIR_MAX, a number (0: no limit), for either. */
static int dir_max_take(kt_store *st, const char *loc)
{
	const char *e = getenv("KEYTREE_DIR_MAX");
	char *end;
	unsigned long long v;

	st->dir_max = st->rados ? KT__DIR_MAX_RADOS : 0;
	if (e == NULL || e[0] == '\0')
		return 0;
	errno = 0;
	v = strtoull(e, &end, 10);
	if (*end != '\0' || errno != 0 || e[0] == '-' || v > UINT32_MAX)
		return kt__err(KT_EINVAL, "open '%s': KEYTREE_DIR_MAX='%s' is "
			       "not a number of entries from 0 (no limit) to "
			       "%u", loc, e, (unsigned)UINT32_MAX);
	st->dir_max = (uint32_t)v;
	return 0;
}

/* What both engines do once st->rows is open: give a new store its first
 * rows, read and check the header, upgrade an older format, drop the
 * orphans a dead process left. */
static int store_load(kt_store *st, const char *loc, const kt_options *o,
		      int creating)
{
	int rc = 0;

	if (creating) {
		const char *d = o->delimiter ? o->delimiter
					     : KT_DEFAULT_DELIMITER;
		/* Another process may have created it meanwhile. */
		rc = st->rows->ops->empty(st->rows);
		if (rc == 1) {
			st->delim.len = strlen(d);
			memcpy(st->delim.s, d, st->delim.len + 1);
			st->delim.typed = o->typed_names != 0;
			/* LevelDB checks a table block's CRC in software on
			 * every read; a store's own hardware CRC-32C of each
			 * value block lets reads of whole values skip it
			 * (value.c).  A RADOS tree keeps blocks in object
			 * data, where the OSD checks them. */
			st->blksum = !st->rados && kt__test_blksum;
			/* Directories count their entries, so that a limit
			 * on them can be kept (KT_EDIRFULL). */
			st->counted = kt__test_counted;
			st->block = KT__BLOCK;
			st->inline_max = KT__INLINE_MAX;
			rc = write_initial(st);
		} else if (rc == 0) {
			rc = KT_OK; /* not empty: read its header below */
		}
	}
	if (rc == 0)
		rc = read_header(st, loc, o->delimiter);
	if (rc == 0 && !o->read_only && st->format < FORMAT_PLAIN)
		rc = upgrade(st, loc);
	if (rc == 0)
		rc = dir_max_take(st, loc);
	/* Also when creating: another client may have made it first. */
	if (rc == 0 && o->typed_names && !st->delim.typed)
		rc = kt__err(KT_EINVAL, "open '%s': typed names are chosen "
			     "when a store is made; this one has plain names",
			     loc);
	/* A large rename or delete was cut short: its commit point was
	 * made, so it is finished now, before anyone reads the subtree half
	 * moved (ops.c).  Only a store's holder finishes it; a client
	 * meets the flag while the holder's own is under way. */
	if (rc == 0 && st->journal && !st->remote && !st->rados) {
		if (o->read_only)
			rc = kt__err(KT_EBUSY, "open '%s': a large rename or "
				     "delete was cut short in this store; "
				     "open it for writing once to finish it",
				     loc);
		else
			rc = kt__big_resume(st);
	}
	/* Orphans belonged to open files of a process that is gone; but a
	 * client is not alone with the store, so only the holder drops
	 * them.  A RADOS store has no holder, and the other clients' open
	 * files cannot be told from a dead one's: its orphans stay. */
	if (rc == 0 && !o->read_only && !st->remote && !st->rados)
		rc = kt__orphans_drop_all(st);
	return rc;
}

int kt_open(kt_store **out, const char *location, const kt_options *opts)
{
	kt_options o;
	loc_parts l = {0};
	kt_store *st = NULL;
	int rc, creating = 0;

	if (out == NULL)
		return kt__err(KT_EINVAL, "open: out is NULL");
	*out = NULL;
	if (location == NULL || location[0] == '\0')
		return kt__err(KT_EINVAL, "open: no store location given");
	rc = options_take(&o, location, opts);
	if (rc == 0)
		rc = loc_parse(&l, location);
	if (rc == 0 && (st = calloc(1, sizeof(*st))) == NULL)
		rc = kt__err(KT_ENOMEM, "out of memory");
	if (rc != 0) {
		free(l.buf);
		return rc;
	}
	pthread_mutex_init(&st->wlock, NULL);
	pthread_mutex_init(&st->idc_lock, NULL);
	/* For tests: the size above which a rename or recursive delete
	 * goes in steps (ops.c), so that whole suites can run that way. */
	{
		const char *b = getenv("KEYTREE_TEST_BIG_ROWS");
		if (b != NULL && atol(b) > 0)
			kt__big_rows = (size_t)atol(b);
	}
	st->euid = (uint32_t)geteuid();
	st->egid = (uint32_t)getegid();
	st->sync = o.sync != 0;
	if (l.dir != NULL)
		rc = open_leveldb(st, l.dir, &o, &creating);
	else
		rc = open_rados(st, location, &l, &o, &creating);
	free(l.buf);
	if (rc == 0)
		rc = store_load(st, location, &o, creating);
	if (rc != 0) {
		kt_close(st);
		return rc;
	}
	/* The holder serves the store to other processes.  Best effort:
	 * without a server (a read-only directory, say) they are refused
	 * as before, with a message naming this process. */
	if (l.dir != NULL && !st->remote &&
	    kt__server_start(&st->server, st->rows, l.dir) != 0)
		st->server = NULL;
	if (st->server != NULL && !o.read_only) {
		kt__server_on_orphans(st->server, drop_orphans, st);
		kt__server_on_abandon(st->server, finish_abandoned, st);
	}
	st->read_only = o.read_only != 0;
	*out = st;
	return 0;
}

/* kt_destroy() of a directory store: only a keytree store, and only
 * when no process has it open (LevelDB's lock says so). */
static int destroy_leveldb(const char *dir)
{
	kt__leveldb_opts lo = {0, 0, 0};
	kt_store *st;
	char sock[PATH_MAX];
	int rc, present;

	present = probe_dir(dir);
	if (present < 0) {
		kt__err_prefix("destroy");
		return present;
	}
	if (!present)
		return kt__err(KT_ENOTFOUND, "destroy '%s': no store there",
			       dir);
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	pthread_mutex_init(&st->wlock, NULL);
	pthread_mutex_init(&st->idc_lock, NULL);
	rc = kt__leveldb_open(&st->rows, dir, &lo);
	if (rc == 0)
		rc = read_header(st, dir, NULL);
	kt_close(st);
	if (rc != 0) {
		kt__err_prefix("destroy");
		return rc;
	}
	if ((rc = kt__leveldb_destroy(dir)) != 0)
		return rc;
	/* A holder killed with -9 leaves its socket behind. */
	if ((size_t)snprintf(sock, sizeof(sock), "%s/keytree.sock", dir) <
	    sizeof(sock))
		(void)unlink(sock);
	if (rmdir(dir) != 0 && errno != ENOENT && errno != ENOTEMPTY &&
	    errno != EEXIST)
		return kt__err(KT_EIO, "destroy '%s': the store is gone but "
			       "the directory stays: %s", dir,
			       strerror(errno));
	return 0;
}

int kt_destroy(const char *location, const kt_options *opts)
{
	kt_options o;
	loc_parts l = {0};
	int rc;

	if (location == NULL || location[0] == '\0')
		return kt__err(KT_EINVAL, "destroy: no store location given");
	rc = options_take(&o, location, opts);
	if (rc == 0)
		rc = loc_parse(&l, location);
	if (rc != 0) {
		free(l.buf);
		return rc;
	}
	if (l.dir != NULL) {
		rc = destroy_leveldb(l.dir);
		free(l.buf);
		return rc;
	}
#ifndef KT_HAVE_RADOS
	free(l.buf);
	return kt__err(KT_ENOTSUP, "destroy '%s': this keytree was built "
		       "without RADOS support (librados-dev missing at build "
		       "time)", location);
#else
	{
		kt__rados_opts ro;
		uint64_t n;
		const char *client = opt_or_env(o.ceph_client,
						"KEYTREE_CEPH_CLIENT");
		const char *conf = opt_or_env(o.ceph_conf, "KEYTREE_CEPH_CONF");

		if (client != NULL && (rc = client_check(location, client)) != 0)
			goto out;
		if (conf != NULL && access(conf, R_OK) != 0) {
			rc = kt__err(KT_EINVAL, "destroy '%s': ceph_conf '%s': "
				     "%s", location, conf, strerror(errno));
			goto out;
		}
		memset(&ro, 0, sizeof(ro));
		ro.pool = l.pool;
		ro.nspace = l.nspace;
		ro.tree = l.tree;
		ro.conf = conf;
		ro.client = client;
		if ((rc = kt__rados_destroy(&ro, &n)) != 0)
			kt__err_prefix("destroy '%s'", location);
	}
out:
	free(l.buf);
	return rc;
#endif
}

void kt_close(kt_store *st)
{
	if (st == NULL)
		return;
	/* The watcher, the clients, then the engine they use. */
	kt__watch_stop(st);
	kt__server_stop(st->server);
	if (st->rows != NULL)
		st->rows->ops->close(st->rows);
	pthread_mutex_destroy(&st->wlock);
	pthread_mutex_destroy(&st->idc_lock);
	free(st->idc);
	free(st);
}

int kt_sync(kt_store *st)
{
	if (st == NULL)
		return kt__err(KT_EINVAL, "sync: store is NULL");
	return st->rows->ops->sync(st->rows);
}

const char *kt_delimiter(const kt_store *st, size_t *len)
{
	if (len != NULL)
		*len = st->delim.len;
	return st->delim.s;
}
