/*
 * crash.c - crash consistency: kill a writer with SIGKILL at random moments
 * and require that the store it leaves behind is exactly what the
 * acknowledged operations made, give or take the one operation in flight.
 *
 * The parent runs rounds.  In each it starts a child (this program again,
 * with --child, so the child gets a fresh LevelDB environment rather than
 * a fork of the parent's threads) that opens the store with sync set and
 * runs operations FIRST, FIRST+1, ... of a seeded sequence.  Operation i is
 * a pure function of (seed, i), not of the store's contents, so the parent
 * can run the same operation on a reference store that is never killed.
 * Around each operation the child writes to a pipe "begin i" and then
 * "done i, rc".  The parent SIGKILLs the child after a random number of
 * acknowledgements plus a random delay (or at a random time after start,
 * which can land inside kt_open), then:
 *
 *   1. brings the reference store up to date with every acknowledged
 *      operation, requiring the same return code the child saw;
 *   2. opens the killed store and requires kt_check to find nothing;
 *   3. compares the two digests (digest.h: paths, kinds, modes, values,
 *      link targets, attributes).  If an operation was in flight, the killed
 *      store must equal the reference either before it or after it (the
 *      parent then applies it to the reference too); otherwise exactly.
 *
 * The next round continues on the same store from the next operation.
 *
 * Environment: KT_CRASH_KILLS (rounds; default KT_CRASH_KILLS_DEFAULT, which
 * CTest sets per test, else 200), KT_CRASH_SEED (default
 * from the clock; printed), KT_CRASH_DIR (where to keep the stores; kept on
 * failure), KT_CRASH_VERBOSE=1 (one line per round), KT_CRASH_BREAK=1
 * (the child runs batches as separate calls: the test must then fail),
 * KT_CRASH_ROUND_S (the watchdog: seconds a stage of a round may take
 * before the run is failed as stuck, with stacks; default 180, 0 off).
 * Exit status 0 when every round passed.
 *
 * On RADOS.  KT_CRASH_RADOS=POOL[/NAMESPACE] makes the killed store a new
 * tree there, rados:POOL[/NAMESPACE]/crash-<pid>-<time> (made with
 * error_if_exists, so nothing left over from another run mixes in); the
 * reference stays a directory under KT_CRASH_DIR.  The cluster is the one
 * of KEYTREE_CEPH_CONF, which the child inherits, as it inherits
 * KEYTREE_RADOS_LEASE_MS: a commit the kill left pending is rolled back
 * by the parent's reopen, check or digest only after the lease, so keep it
 * short (1000 ms in ctest).  A kill there can land in kt_open (loading
 * librados, connecting), or anywhere in a commit: before or after the
 * commit record is written, between locks, on either side of the flip to
 * C, while the objects are applied and unlocked.  The parent's reads
 * settle every lock they meet (roll back a P record after the lease, roll
 * forward a C one), and the round then requires, as on LevelDB, the state
 * before or after the operation in flight.  One assumption: an operation
 * the child had sent when it was killed has reached its OSD before the
 * parent reads (on loopback the parent's reopen alone takes tens of
 * milliseconds); fencing the dead client (blocklisting it) would make
 * this certain.  After a passing run the tree is removed with kt_destroy()
 * (a failure to remove it fails the run); on failure of a round it is kept
 * and its location printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "keytree.h"

/* ------------------------------------------------------------------------ */
/* The seeded operation sequence */

typedef struct rng {
	uint64_t s;
} rng;

static uint64_t rnd(rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned rn(rng *r, unsigned n)
{
	return (unsigned)(rnd(r) % n);
}

/* A path of 1 to 3 components from a small alphabet, so that operations
 * keep meeting each other's nodes. */
static void rpath(rng *r, char *buf, size_t size)
{
	static const char *names[] = {"a", "b", "c", "d"};
	unsigned depth = 1 + rn(r, 3), i;
	size_t n = 0;

	buf[0] = '\0';
	for (i = 0; i < depth && n + 3 < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "/%s",
				      names[rn(r, 4)]);
}

/* A link target: absolute, relative, or to itself-ish. */
static void rtarget(rng *r, char *buf, size_t size)
{
	switch (rn(r, 4)) {
	case 0:
		snprintf(buf, size, "b");
		break;
	case 1:
		snprintf(buf, size, "../c");
		break;
	default:
		rpath(r, buf, size);
	}
}

/* Sizes around the inline limit (4096) and the block size (16384). */
static size_t rsize(rng *r)
{
	static const size_t sizes[] = {0,     1,     63,    4095,
				       4096,  4097,  16383, 16384,
				       16385, 40000, 70000, 100000};
	size_t s = sizes[rn(r, sizeof(sizes) / sizeof(sizes[0]))];

	if (s > 64 && rn(r, 2))
		s += rn(r, 200);
	return s;
}

/* Random bytes with a zero run (a hole when it spans a block) half of the
 * time.  Returns malloc'd memory (at least one byte). */
static unsigned char *rbytes(rng *r, size_t len)
{
	unsigned char *b = malloc(len ? len : 1);
	uint64_t x = rnd(r);
	size_t i;

	if (b == NULL)
		abort();
	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			x = rnd(r);
		b[i] = (unsigned char)(x >> (8 * (i % 8)));
	}
	if (len > 2 && rn(r, 2)) {
		size_t at = rn(r, (unsigned)len), n = rn(r, (unsigned)len);

		if (at + n > len)
			n = len - at;
		memset(b + at, 0, n);
	}
	return b;
}

static const char *rattr(rng *r)
{
	static const char *names[] = {"x", "y", "color", "user.long-name"};

	return names[rn(r, 4)];
}

enum {
	OP_PUT,
	OP_MKDIR,
	OP_SYMLINK,
	OP_DELETE,
	OP_RENAME,
	OP_ATTR_SET,
	OP_ATTR_DEL,
	OP_SETATTR,
	OP_WRITE,
	OP_TRUNCATE,
	OP_BATCH,
	OP_DETACH
};

/* Weighted choice of the next operation. */
static int rop(rng *r, int in_batch)
{
	static const int table[] = {
		OP_PUT,	     OP_PUT,	 OP_PUT,     OP_PUT,	  OP_PUT,
		OP_MKDIR,    OP_MKDIR,	 OP_SYMLINK, OP_DELETE,	  OP_DELETE,
		OP_RENAME,   OP_RENAME,	 OP_RENAME,  OP_ATTR_SET, OP_ATTR_SET,
		OP_ATTR_DEL, OP_SETATTR, OP_WRITE,   OP_WRITE,	  OP_WRITE,
		OP_TRUNCATE, OP_BATCH,	 OP_BATCH,   OP_DETACH};
	int op;

	do
		op = table[rn(r, sizeof(table) / sizeof(table[0]))];
	while (in_batch && (op == OP_BATCH || op == OP_WRITE ||
			    op == OP_TRUNCATE || op == OP_DETACH));
	return op;
}

/* Append to the description, never overflowing it. */
static void desc_add(char *desc, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void desc_add(char *desc, size_t size, const char *fmt, ...)
{
	size_t n = strlen(desc);
	va_list ap;

	if (n + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(desc + n, size - n, fmt, ap);
	va_end(ap);
}

/* Run (or, with @p b, record in a batch) one generated operation. */
static int op_one(kt_store *st, kt_batch *b, rng *r, int kind, char *desc,
		  size_t dsize)
{
	char p[64], q[64];
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	unsigned char *data = NULL;
	size_t len;
	uint64_t off;
	unsigned flags;
	uint64_t id;
	int rc = 0;

	rpath(r, p, sizeof(p));
	switch (kind) {
	case OP_PUT:
		len = rsize(r);
		data = rbytes(r, len);
		co.flags = rn(r, 8) == 0 ? KT_CREATE_EXCL : 0;
		desc_add(desc, dsize, "put %s %zu%s", p, len,
			 co.flags ? " excl" : "");
		rc = b ? kt_batch_put(b, p, data, len, &co)
		       : kt_put(st, p, data, len, &co);
		break;
	case OP_MKDIR:
		co.flags = rn(r, 2) ? KT_CREATE_PARENTS : 0;
		desc_add(desc, dsize, "mkdir %s%s", p, co.flags ? " -p" : "");
		rc = b ? kt_batch_mkdir(b, p, &co) : kt_mkdir(st, p, &co);
		break;
	case OP_SYMLINK:
		rtarget(r, q, sizeof(q));
		co.flags = rn(r, 2) ? KT_CREATE_PARENTS : 0;
		desc_add(desc, dsize, "symlink %s -> %s", p, q);
		rc = b ? kt_batch_symlink(b, p, q, &co)
		       : kt_symlink(st, p, q, &co);
		break;
	case OP_DELETE: {
		static const unsigned fl[] = {
			0, KT_DELETE_RECURSIVE,
			KT_DELETE_RECURSIVE | KT_DELETE_PRUNE, KT_DELETE_ITEM};

		flags = fl[rn(r, 4)];
		desc_add(desc, dsize, "delete %s flags %u", p, flags);
		rc = b ? kt_batch_delete(b, p, flags) : kt_delete(st, p, flags);
		break;
	}
	case OP_RENAME: {
		static const unsigned fl[] = {0, 0, KT_RENAME_NOREPLACE,
					      KT_RENAME_EXCHANGE};

		rpath(r, q, sizeof(q));
		flags = fl[rn(r, 4)];
		desc_add(desc, dsize, "rename %s %s flags %u", p, q, flags);
		rc = b ? kt_batch_rename(b, p, q, flags)
		       : kt_rename(st, p, q, flags);
		break;
	}
	case OP_ATTR_SET: {
		const char *name = rattr(r);

		len = rn(r, 4) == 0 ? 3000 + rn(r, 100) : rn(r, 40);
		data = rbytes(r, len);
		flags = rn(r, 3);
		desc_add(desc, dsize, "attr set %s %s %zu flags %u", p, name,
			 len, flags);
		rc = b ? kt_batch_attr_set(b, p, name, data, len, flags)
		       : kt_attr_set(st, p, name, data, len, flags);
		break;
	}
	case OP_ATTR_DEL: {
		const char *name = rattr(r);

		desc_add(desc, dsize, "attr delete %s %s", p, name);
		rc = b ? kt_batch_attr_delete(b, p, name)
		       : kt_attr_delete(st, p, name);
		break;
	}
	case OP_SETATTR:
		sa.mask = KT_SET_MODE;
		sa.mode = 0600u | rn(r, 0200);
		desc_add(desc, dsize, "chmod %s %o", p, (unsigned)sa.mode);
		rc = b ? kt_batch_setattr(b, p, &sa, 0)
		       : kt_setattr(st, p, &sa, 0);
		break;
	case OP_WRITE:
		len = 1 + rn(r, 40000);
		off = rn(r, 4) == 0 ? KT_APPEND : rn(r, 120000);
		data = rbytes(r, len);
		desc_add(desc, dsize, "write %s %zu at %" PRIu64, p, len, off);
		rc = kt_write(st, p, data, len, off);
		break;
	case OP_TRUNCATE:
		off = rn(r, 150000);
		desc_add(desc, dsize, "truncate %s %" PRIu64, p, off);
		rc = kt_truncate(st, p, off);
		break;
	case OP_DETACH:
		desc_add(desc, dsize, "orphan detach %s", p);
		rc = kt_orphan_detach(&id, st, p);
		break;
	default:
		abort();
	}
	free(data);
	return rc;
}

/* Set in a child by KT_CRASH_BREAK=1: batches are run as separate calls,
 * which are not atomic together, to show that the harness notices. */
static int g_break;

/* Run operation @p i of the sequence of @p seed on @p st.  Its return code
 * depends only on the store's visible contents. */
static int op_run(kt_store *st, uint64_t seed, uint64_t i, char *desc,
		  size_t dsize)
{
	rng r = {seed ^ (i * 0xd1342543de82ef95ULL)};
	kt_batch *b = NULL;
	int kind = rop(&r, 0), rc, n, k;

	desc[0] = '\0';
	if (kind != OP_BATCH)
		return op_one(st, NULL, &r, kind, desc, dsize);
	n = 2 + (int)rn(&r, 5);
	desc_add(desc, dsize, "batch of %d:", n);
	if (!g_break && (rc = kt_batch_new(&b, st)) != 0)
		return rc;
	for (k = 0, rc = 0; k < n && rc == 0; k++) {
		desc_add(desc, dsize, " [");
		rc = op_one(st, b, &r, rop(&r, 1), desc, dsize);
		desc_add(desc, dsize, "]");
	}
	if (rc == 0 && b != NULL)
		rc = kt_batch_commit(b);
	kt_batch_free(b);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* The child */

typedef struct msg {
	uint32_t type; /* 'B' begin, 'D' done */
	int32_t rc;
	uint64_t op;
} msg;

static void send_msg(int fd, uint32_t type, uint64_t op, int rc)
{
	msg m = {type, rc, op};

	if (write(fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
		_exit(3);
}

static int child_main(const char *dir, uint64_t seed, uint64_t first, int fd)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char desc[1024];
	uint64_t i;

	o.sync = 1;
	g_break = getenv("KT_CRASH_BREAK") != NULL;
	if (kt_open(&st, dir, &o) != 0) {
		fprintf(stderr, "crash child: open: %s\n", kt_errmsg());
		return 2;
	}
	for (i = first;; i++) {
		int rc;

		send_msg(fd, 'B', i, 0);
		rc = op_run(st, seed, i, desc, sizeof(desc));
		send_msg(fd, 'D', i, rc);
	}
}

/* ------------------------------------------------------------------------ */
/* A RADOS tree of the run (KT_CRASH_RADOS) */

typedef struct where {
	char pool[256], ns[256]; /* ns empty: the pool's default namespace */
	char tree[64];
} where;

/* Read "POOL[/NAMESPACE]" into @p w; the library checks the characters. */
static int where_parse(where *w, const char *v)
{
	const char *slash = strchr(v, '/');
	size_t np = slash ? (size_t)(slash - v) : strlen(v);

	memset(w, 0, sizeof(*w));
	if (np == 0 || np >= sizeof(w->pool) ||
	    (slash && (slash[1] == '\0' || strchr(slash + 1, '/') ||
		       strlen(slash + 1) >= sizeof(w->ns)))) {
		fprintf(stderr,
			"crash: KT_CRASH_RADOS '%s': want POOL or "
			"POOL/NAMESPACE (the tree's name is made here)\n",
			v);
		return -1;
	}
	memcpy(w->pool, v, np);
	if (slash)
		snprintf(w->ns, sizeof(w->ns), "%s", slash + 1);
	snprintf(w->tree, sizeof(w->tree), "crash-%ld-%ld", (long)getpid(),
		 (long)time(NULL));
	return 0;
}

/* Free an array of names ended by NULL; accepts NULL. */
static void names_free(char **v)
{
	size_t i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

#ifdef KT_HAVE_RADOS
/*
 * The parent looks at the tree's objects directly, through librados: which
 * commit records a kill left (and whether the check settled them), and, at
 * the end, deleting the tree.  librados is loaded with dlopen, as the
 * library loads it, so that the children (this program too) do not pay
 * Ceph's start-up for nothing.
 */
#include <dlfcn.h>
#include <rados/librados.h>

#define CRASH_RADOS_FUNCS \
	X(create) X(conf_read_file) X(connect) X(shutdown) \
	X(ioctx_create) X(ioctx_destroy) X(ioctx_set_namespace) \
	X(nobjects_list_open) X(nobjects_list_next) X(nobjects_list_close) \
	X(getxattr) X(getxattrs) X(getxattrs_next) X(getxattrs_end)

static struct {
#define X(n) __typeof__(rados_##n) *n;
	CRASH_RADOS_FUNCS
#undef X
	rados_t cl;
	rados_ioctx_t io;
} rl;

/* Connect to the cluster of KEYTREE_CEPH_CONF, on @p w's pool and
 * namespace.  0, or -1 with a message. */
static int rl_open(const where *w)
{
	const char *conf = getenv("KEYTREE_CEPH_CONF");
	void *h = dlopen("librados.so.2", RTLD_NOW | RTLD_LOCAL);
	int rc;

	if (h == NULL) {
		fprintf(stderr, "crash: %s\n", dlerror());
		return -1;
	}
#define X(n)                                                             \
	if ((*(void **)&rl.n = dlsym(h, "rados_" #n)) == NULL) {         \
		fprintf(stderr, "crash: librados has no rados_" #n "\n"); \
		return -1;                                               \
	}
	CRASH_RADOS_FUNCS
#undef X
	if ((rc = rl.create(&rl.cl, NULL)) < 0 ||
	    (rc = rl.conf_read_file(rl.cl, conf && *conf ? conf : NULL)) <
		    0 ||
	    (rc = rl.connect(rl.cl)) < 0 ||
	    (rc = rl.ioctx_create(rl.cl, w->pool, &rl.io)) < 0) {
		fprintf(stderr, "crash: librados: connecting to pool %s: %s\n",
			w->pool, strerror(-rc));
		return -1;
	}
	rl.ioctx_set_namespace(rl.io, w->ns[0] ? w->ns : NULL);
	return 0;
}

static void rl_close(void)
{
	if (rl.io != NULL)
		rl.ioctx_destroy(rl.io);
	if (rl.cl != NULL)
		rl.shutdown(rl.cl);
	rl.io = rl.cl = NULL;
}

/* The names of @p w's objects that belong to its tree ("TREE/...",
 * "TREE#...", "TREE!..."; with @p records only "TREE!tx..."), as a
 * malloc'd, NULL-terminated array of malloc'd strings in *@p out.
 * 0, or a negative errno. */
static int rl_names(char ***out, const where *w, int records)
{
	rados_list_ctx_t ctx = NULL;
	size_t tl = strlen(w->tree), n = 0, cap = 0;
	char **v = NULL;
	const char *oid;
	int rc;

	*out = NULL;
	if ((rc = rl.nobjects_list_open(rl.io, &ctx)) < 0)
		return rc;
	while ((rc = rl.nobjects_list_next(ctx, &oid, NULL, NULL)) == 0) {
		if (strncmp(oid, w->tree, tl) != 0 ||
		    (records ? strncmp(oid + tl, "!tx.", 4) != 0
			     : oid[tl] == '\0' || !strchr("/#!", oid[tl])))
			continue;
		if (n + 2 > cap) {
			cap = cap ? 2 * cap : 64;
			if ((v = realloc(v, cap * sizeof(*v))) == NULL)
				abort();
		}
		if ((v[n++] = strdup(oid)) == NULL)
			abort();
	}
	rl.nobjects_list_close(ctx);
	if (rc != -ENOENT) { /* the end of the listing */
		while (n > 0)
			free(v[--n]);
		free(v);
		return rc;
	}
	if (v == NULL && (v = malloc(sizeof(*v))) == NULL)
		abort();
	v[n] = NULL;
	*out = v;
	return 0;
}

/* The state of commit record @p oid: 'P', 'C', 'A', 0 when it is gone, or
 * '?' when it cannot be read. */
static char rl_record_state(const char *oid)
{
	char st[8];
	int n = rl.getxattr(rl.io, oid, "kt.st", st, sizeof(st));

	return n == -ENOENT ? 0 : n >= 1 ? st[0] : '?';
}

static int swept_note(const char *what, void *payload)
{
	(void)payload;
	if (getenv("KT_CRASH_VERBOSE") != NULL)
		fprintf(stderr, "crash: repair: %s\n", what);
	return 0;
}

/* Remove @p w's tree, at @p loc, with kt_destroy(), after a kt_repair()
 * that must leave no commit record and no object locked (the records
 * kills left, which nobody's lock pointed at, are swept), and after
 * counting its objects; then make sure no object of it is left.  0, or -1
 * with a message. */
static int tree_drop(const where *w, const char *loc)
{
	kt_check_options co = KT_CHECK_OPTIONS_INIT;
	kt_store *st = NULL;
	char **v = NULL;
	size_t i, tl = strlen(w->tree), fixed = 0;
	unsigned records = 0, locked = 0, kept = 0;
	int rc;

	co.on_violation = swept_note;
	if ((rc = kt_open(&st, loc, NULL)) != 0 ||
	    (rc = kt_repair(&fixed, st, &co)) != 0) {
		fprintf(stderr, "crash: repair of %s: %d %s\n", loc, rc,
			kt_errmsg());
		kt_close(st);
		return -1;
	}
	kt_close(st);
	fprintf(stderr, "crash: repair settled %zu leftover commit "
		"records\n", fixed);
	rc = rl_names(&v, w, 0);

	if (rc < 0) {
		fprintf(stderr, "crash: listing pool %s: %s\n", w->pool,
			strerror(-rc));
		return -1;
	}
	for (i = 0; v[i] != NULL; i++) {
		char lk[64];
		int n = rl.getxattr(rl.io, v[i], "kt.lk", lk, sizeof(lk));

		rados_xattrs_iter_t xi;
		const char *xn, *xv;
		size_t xl;

		locked += n > 0 && !(n == 1 && lk[0] == '-');
		records += strncmp(v[i] + tl, "!tx.", 4) == 0;
		/* A record kept on one of the commit's objects (FORMAT.md
		 * §14): its state and body, and the other objects'
		 * pointer to it. */
		if (rl.getxattrs(rl.io, v[i], &xi) < 0)
			continue;
		while (rl.getxattrs_next(xi, &xn, &xv, &xl) == 0 &&
		       xn != NULL)
			kept += strncmp(xn, "kt.t.", 5) == 0 ||
				strncmp(xn, "kt.d.", 5) == 0 ||
				strncmp(xn, "kt.c.", 5) == 0 ||
				strcmp(xn, "kt.pri") == 0;
		rl.getxattrs_end(xi);
	}
	names_free(v);
	fprintf(stderr,
		"crash: tree %s: %zu objects, %u of them commit records "
		"after the repair, %u records kept on objects, %u still "
		"locked\n",
		w->tree, i, records, kept, locked);
	if (records != 0 || locked != 0 || kept != 0) {
		fprintf(stderr, "crash: FAILED: kt_repair left commit records "
			"or locks\n");
		return -1;
	}
	if ((rc = kt_destroy(loc, NULL)) != 0) {
		fprintf(stderr, "crash: kt_destroy %s: %d %s\n", loc, rc,
			kt_errmsg());
		return -1;
	}
	if ((rc = rl_names(&v, w, 0)) < 0 || v[0] != NULL) {
		fprintf(stderr, "crash: kt_destroy %s left %s\n", loc,
			rc < 0 ? "(listing failed)" : v[0]);
		names_free(v);
		return -1;
	}
	names_free(v);
	return 0;
}
#endif /* KT_HAVE_RADOS */

/* ------------------------------------------------------------------------ */
/* The parent */

typedef struct stats {
	unsigned rounds, inflight_applied, inflight_not, idle, ops, failed_ops;
	unsigned killed_in_open;
	double op_us;	     /* mean time of one operation in a child */
	double settle_s;     /* time spent reopening and checking */
	double open_s, check_s; /* of which in kt_open, in kt_check */
	double start_s;	     /* children's start-up, to their first op */
	unsigned started;    /* children that got to their first op */
	double records_s;    /* RADOS: listing the commit records */
	/* RADOS: the commit records kills left, by state (P, C, A, other),
	 * how many rounds left one, and the names of those that the check
	 * did not settle (nothing pointed at them any more). */
	unsigned rec[4], rec_rounds;
	char **leaked;
	size_t nleaked;
} stats;

#ifdef KT_HAVE_RADOS
/* The commit records of @p w's tree that the kill just left, in *@p recs
 * (records of earlier kills that nothing settled are left out), counted
 * by state in @p n and in @p sx. */
static void records_left(char ***recs, unsigned n[4], const where *w,
			 stats *sx)
{
	size_t i, j, k = 0;
	char **v = NULL;
	int rc = rl_names(&v, w, 1);

	if (rc < 0) {
		fprintf(stderr, "crash: listing the tree's records: %s\n",
			strerror(-rc));
		*recs = NULL;
		return;
	}
	for (i = 0; v[i] != NULL; i++) {
		char st;

		for (j = 0; j < sx->nleaked; j++)
			if (strcmp(v[i], sx->leaked[j]) == 0)
				break;
		/* A staged commit's parts (TREE!tx.ID.S.k) go with its
		 * header, which is counted. */
		if (j < sx->nleaked || strstr(v[i], ".S.") != NULL) {
			free(v[i]);
			continue;
		}
		st = rl_record_state(v[i]);
		/* Gone already (0) counts as unreadable: no one else
		 * works on the tree between the kill and the check. */
		n[st == 'P' ? 0 : st == 'C' ? 1 : st == 'A' ? 2 : 3]++;
		v[k++] = v[i];
	}
	v[k] = NULL;
	for (i = 0; i < 4; i++)
		sx->rec[i] += n[i];
	sx->rec_rounds += k > 0;
	*recs = v;
}

/* After the check: keep the names of the records in @p recs that are
 * still there (nothing will ever settle them); frees @p recs. */
static void records_settled(char **recs, stats *sx)
{
	size_t i;

	for (i = 0; recs != NULL && recs[i] != NULL; i++) {
		if (rl_record_state(recs[i]) == 0) {
			free(recs[i]);
			continue;
		}
		sx->leaked = realloc(sx->leaked,
				     (sx->nleaked + 1) * sizeof(char *));
		if (sx->leaked == NULL)
			abort();
		sx->leaked[sx->nleaked++] = recs[i];
	}
	free(recs);
}
#endif

static int rm_cb(const char *p, const struct stat *sb, int type,
		 struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------------ */
/* The watchdog */

/*
 * A round takes seconds.  One that takes KT_CRASH_ROUND_S (default 180) is
 * stuck: rather than leave ctest to kill a silent test at its timeout, the
 * alarm says what the parent was doing, prints the stacks of the parent
 * and of the child (with gdb, when it is installed), kills the child and
 * fails the run.  Only async-signal-safe calls in the handler, apart from
 * what runs in the forked gdb.
 */
static const char *volatile wd_stage = "starting";
static volatile pid_t wd_child;
static unsigned wd_secs;

static void wd_say(const char *s)
{
	ssize_t n = write(2, s, strlen(s));

	(void)n;
}

static void wd_itoa(char *buf, long v)
{
	char t[24];
	int i = 0, j = 0;

	do
		t[i++] = (char)('0' + v % 10);
	while ((v /= 10) > 0 && i < (int)sizeof(t));
	while (i > 0)
		buf[j++] = t[--i];
	buf[j] = '\0';
}

/* gdb's stacks of @p pid, on stderr: its main thread's first, then every
 * thread's. */
static void wd_stacks(pid_t pid)
{
	char spid[24];
	pid_t g;
	int st;

	wd_itoa(spid, (long)pid);
	if ((g = fork()) == 0) {
		dup2(2, 1);
		execlp("timeout", "timeout", "60", "gdb", "-nx", "-batch",
		       "-iex", "set print thread-events off", "-p", spid,
		       "-ex", "bt 40", "-ex", "thread apply all bt 20",
		       (char *)NULL);
		wd_say("crash: watchdog: no timeout(1) to run gdb with\n");
		_exit(127);
	}
	if (g > 0)
		waitpid(g, &st, 0);
}

static void wd_fire(int sig)
{
	char secs[24];
	pid_t child = wd_child;

	(void)sig;
	wd_itoa(secs, (long)wd_secs);
	wd_say("crash: watchdog: no progress for ");
	wd_say(secs);
	wd_say(" s (KT_CRASH_ROUND_S) while ");
	wd_say(wd_stage);
	wd_say("; stacks of the parent");
	wd_say(child > 0 ? " and of the child follow\n" : " follow\n");
	wd_stacks(getpid());
	if (child > 0) {
		wd_stacks(child);
		kill(child, SIGKILL);
	}
	wd_say("crash: FAILED (stuck)\n");
	_exit(1);
}

/* Give the stage @p what (a string literal) a fresh allowance. */
static void wd_arm(const char *what)
{
	wd_stage = what;
	alarm(wd_secs);
}

/* Start a child on @p dir from operation @p first; *rfd reads its pipe. */
static pid_t spawn(const char *self, const char *dir, uint64_t seed,
		   uint64_t first, int *rfd)
{
	int p[2];
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char a_seed[32], a_first[32], a_fd[16];

		close(p[0]);
		snprintf(a_seed, sizeof(a_seed), "%" PRIu64, seed);
		snprintf(a_first, sizeof(a_first), "%" PRIu64, first);
		snprintf(a_fd, sizeof(a_fd), "%d", p[1]);
		execl(self, self, "--child", dir, a_seed, a_first, a_fd,
		      (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*rfd = p[0];
	wd_child = pid;
	return pid;
}

/* Read one message: 1 got one, 0 end of stream. */
static int recv_msg(int fd, msg *m)
{
	size_t got = 0;

	while (got < sizeof(*m)) {
		ssize_t n = read(fd, (char *)m + got, sizeof(*m) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		got += (size_t)n;
	}
	return 1;
}

typedef struct round_log {
	uint64_t first; /* first operation of the round */
	uint64_t begun; /* highest operation begun, or first - 1 */
	uint64_t done;	/* highest operation acknowledged, or first - 1 */
	int *rcs;	/* rc of operation first + k */
	size_t nrcs, cap;
} round_log;

static void log_msg(round_log *lg, const msg *m)
{
	if (m->type == 'B') {
		lg->begun = m->op;
		return;
	}
	lg->done = m->op;
	if (lg->nrcs == lg->cap) {
		lg->cap = lg->cap ? lg->cap * 2 : 64;
		lg->rcs = realloc(lg->rcs, lg->cap * sizeof(int));
		if (lg->rcs == NULL)
			abort();
	}
	lg->rcs[lg->nrcs++] = m->rc;
}

/* One round: run a child, kill it, verify.  Returns 0 or -1. */
static int one_round(const char *self, const char *dir, const where *w,
		     kt_store *ref, uint64_t seed, rng *r, uint64_t *next,
		     stats *sx, int verbose)
{
	round_log lg = {*next, *next - 1, *next - 1, NULL, 0, 0};
	char desc[1024];
	char *dc = NULL, *d0 = NULL, *d1 = NULL;
	kt_store *st = NULL;
	size_t bad = 0;
	/* On RADOS an operation costs milliseconds and the check after the
	 * kill grows with the tree: fewer operations a round, so that the
	 * rounds (the kills) are what the time goes to. */
	unsigned want_acks = rn(r, w == NULL ? 40 : 12);
	unsigned mode = rn(r, 8);
	int status = 0, fd = -1, rc, ok = -1;
	const char *outcome = "idle";
	unsigned rec[4] = {0, 0, 0, 0};
	char **recs = NULL;
	double t_check, t_open;
	pid_t pid;
	msg m;
	uint64_t i;

	wd_arm("running a child until its kill");
	pid = spawn(self, dir, seed, *next, &fd);
	if (pid < 0) {
		perror("crash: fork");
		return -1;
	}
	if (mode == 0) {
		/* Anywhere in the first 30 ms, kt_open included. */
		usleep(rn(r, 30000));
	} else {
		unsigned acks = 0, span;
		double t1 = 0, tn = 0, t_spawn = now_s();

		while (acks < want_acks && recv_msg(fd, &m)) {
			if (lg.begun < lg.first && m.type == 'B') {
				sx->start_s += now_s() - t_spawn;
				sx->started++;
			}
			log_msg(&lg, &m);
			if (m.type == 'D') {
				tn = now_s();
				t1 = acks++ == 0 ? tn : t1;
			}
		}
		if (acks > 4)
			sx->op_us = 0.8 * sx->op_us +
				    0.2 * (tn - t1) * 1e6 / (acks - 1);
		/* Soon after an acknowledgement, or anywhere in the next
		 * operation or two.  A RADOS operation takes milliseconds
		 * (several round trips to the OSDs), so the window there
		 * scales with the operations measured, to land in every
		 * step of a commit. */
		span = mode < 4 ? 300 : w == NULL ? 3000
			 : (unsigned)(2 * sx->op_us) + 1;
		usleep(rn(r, span < 200000 ? span : 200000));
	}
	kill(pid, SIGKILL);
	wd_arm("reading the killed child's pipe to its end");
	while (recv_msg(fd, &m))
		log_msg(&lg, &m);
	close(fd);
	waitpid(pid, &status, 0);
	wd_child = 0;
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
		fprintf(stderr,
			"crash: the child ended by itself (status "
			"%d) before the kill\n",
			status);
		goto out;
	}
	if (lg.begun < lg.first && lg.done < lg.first)
		sx->killed_in_open++;
#ifdef KT_HAVE_RADOS
	if (w != NULL) {
		t_check = now_s();
		wd_arm("listing the commit records the kill left");
		records_left(&recs, rec, w, sx);
		sx->records_s += now_s() - t_check;
	}
#endif

	/* 1. The reference store catches up with what was acknowledged. */
	wd_arm("bringing the reference store up to date");
	for (i = lg.first; i <= lg.done && i >= lg.first; i++) {
		rc = op_run(ref, seed, i, desc, sizeof(desc));
		sx->ops++;
		sx->failed_ops += rc != 0;
		if (rc != lg.rcs[i - lg.first]) {
			fprintf(stderr,
				"crash: op %" PRIu64 " (%s): the child "
				"got %d, the reference %d (%s)\n",
				i, desc, lg.rcs[i - lg.first], rc, kt_errmsg());
			goto out;
		}
	}

	/* 2. The killed store opens and is consistent. */
	wd_arm("reopening the killed store");
	t_check = now_s();
	if ((rc = kt_open(&st, dir, NULL)) != 0) {
		fprintf(stderr, "crash: reopen after the kill: %d %s\n", rc,
			kt_errmsg());
		goto out;
	}
	sx->open_s += now_s() - t_check;
	t_open = now_s();
	wd_arm("checking the killed store");
	rc = kt_check(&bad, st, NULL);
	sx->check_s += now_s() - t_open;
	if (rc != 0 || bad != 0) {
		fprintf(stderr,
			"crash: kt_check after the kill: %d, %zu "
			"violations (%s)\n",
			rc, bad, kt_errmsg());
		kt_check(NULL, st, NULL);
		goto out;
	}

	/* 3. Its contents are the acknowledged operations, plus all or
	 * nothing of the one in flight. */
	wd_arm("reading the killed store and the reference (digests)");
	if ((rc = ktc_digest(&dc, st)) != 0 ||
	    (rc = ktc_digest(&d0, ref)) != 0) {
		fprintf(stderr, "crash: digest: %d %s\n", rc, kt_errmsg());
		goto out;
	}
	sx->settle_s += now_s() - t_check;
#ifdef KT_HAVE_RADOS
	records_settled(recs, sx);
	recs = NULL;
#endif
	*next = lg.done + 1;
	if (lg.begun > lg.done) {
		if (strcmp(dc, d0) == 0) {
			outcome = "in flight, not applied";
			sx->inflight_not++;
		} else {
			rc = op_run(ref, seed, lg.begun, desc, sizeof(desc));
			if ((rc = ktc_digest(&d1, ref)) != 0) {
				fprintf(stderr, "crash: digest: %d %s\n", rc,
					kt_errmsg());
				goto out;
			}
			if (strcmp(dc, d1) != 0) {
				fprintf(stderr,
					"crash: op %" PRIu64 " (%s) "
					"was in flight; the store is neither "
					"before nor after it\n",
					lg.begun, desc);
				ktc_digest_diff("killed", dc, "before", d0);
				ktc_digest_diff("killed", dc, "after", d1);
				goto out;
			}
			outcome = "in flight, applied";
			sx->inflight_applied++;
		}
		*next = lg.begun + 1;
	} else if (strcmp(dc, d0) != 0) {
		fprintf(stderr,
			"crash: nothing was in flight after op %" PRIu64
			", yet the store differs from the reference\n",
			lg.done);
		ktc_digest_diff("killed", dc, "reference", d0);
		goto out;
	} else {
		sx->idle++;
	}
	if (verbose) {
		fprintf(stderr,
			"round %u: ops %" PRIu64 "..%" PRIu64
			" acknowledged, %s",
			sx->rounds + 1, lg.first, lg.done, outcome);
		if (w != NULL)
			fprintf(stderr,
				"; commit records left: %u P, %u C, %u A; "
				"reopen and check %.2f s",
				rec[0], rec[1], rec[2], now_s() - t_check);
		fputc('\n', stderr);
	}
	ok = 0;
out:
	if (ok != 0)
		fprintf(stderr,
			"crash: round %u failed (ops %" PRIu64 "..%" PRIu64
			" acknowledged, %" PRIu64 " begun)\n",
			sx->rounds + 1, lg.first, lg.done, lg.begun);
	sx->rounds++;
	kt_close(st);
#ifdef KT_HAVE_RADOS
	names_free(recs);
#endif
	free(dc);
	free(d0);
	free(d1);
	free(lg.rcs);
	return ok;
}

int main(int argc, char **argv)
{
	char base[512], dir[1200], refdir[600], self[4096];
	const char *tmp = getenv("TMPDIR");
	const char *rados = getenv("KT_CRASH_RADOS");
	where w;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *ref = NULL, *st = NULL;
	uint64_t kills, seed, next = 1;
	int verbose = getenv("KT_CRASH_VERBOSE") != NULL;
	stats sx = {0};
	double t0 = now_s();
	ssize_t n;
	rng r;
	int fail = 0;

	if (argc == 6 && strcmp(argv[1], "--child") == 0)
		return child_main(argv[2], strtoull(argv[3], NULL, 10),
				  strtoull(argv[4], NULL, 10), atoi(argv[5]));
	if (argc != 1) {
		fprintf(stderr,
			"usage: %s (environment: KT_CRASH_KILLS, "
			"KT_CRASH_SEED, KT_CRASH_DIR, KT_CRASH_VERBOSE, "
			"KT_CRASH_RADOS, KT_CRASH_ROUND_S)\n",
			argv[0]);
		return 2;
	}
	if (rados != NULL && *rados == '\0')
		rados = NULL;
	if (rados != NULL && where_parse(&w, rados) != 0)
		return 2;
#ifdef KT_HAVE_RADOS
	if (rados != NULL && rl_open(&w) != 0)
		return 1;
#else
	if (rados != NULL) {
		fprintf(stderr, "crash: KT_CRASH_RADOS: this build has no "
				"RADOS engine\n");
		return 2;
	}
#endif
	signal(SIGPIPE, SIG_IGN);
	wd_secs = (unsigned)env_u64("KT_CRASH_ROUND_S", 180);
	if (wd_secs > 0)
		signal(SIGALRM, wd_fire);
	sx.op_us = 1000;
	/* CTest sets a test's own count as KT_CRASH_KILLS_DEFAULT, so that
	 * KT_CRASH_KILLS in ctest's environment still makes a longer run. */
	kills = env_u64("KT_CRASH_KILLS",
			env_u64("KT_CRASH_KILLS_DEFAULT", 200));
	seed = env_u64("KT_CRASH_SEED",
		       (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32));
	r.s = seed ^ 0x5eed;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		perror("crash: /proc/self/exe");
		return 1;
	}
	self[n] = '\0';
	if (getenv("KT_CRASH_DIR") != NULL) {
		snprintf(base, sizeof(base), "%s", getenv("KT_CRASH_DIR"));
		mkdir(base, 0777);
	} else {
		snprintf(base, sizeof(base), "%s/kt-crash-XXXXXX",
			 tmp ? tmp : "/tmp");
		if (mkdtemp(base) == NULL) {
			perror("crash: mkdtemp");
			return 1;
		}
	}
	if (rados != NULL)
		snprintf(dir, sizeof(dir), "rados:%s%s%s/%s", w.pool,
			 w.ns[0] ? "/" : "", w.ns, w.tree);
	else
		snprintf(dir, sizeof(dir), "%s/store", base);
	snprintf(refdir, sizeof(refdir), "%s/reference", base);
	if (rados == NULL)
		nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	nftw(refdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	fprintf(stderr,
		"crash: %" PRIu64 " kills, KT_CRASH_SEED=%" PRIu64
		", stores in %s%s%s\n",
		kills, seed, base, rados ? ", killed store " : "",
		rados ? dir : "");

	o.create_if_missing = 1;
	wd_arm("creating the stores");
	if (kt_open(&ref, refdir, &o) != 0) {
		fprintf(stderr, "crash: create %s: %s\n", refdir, kt_errmsg());
		return 1;
	}
	o.error_if_exists = 1;
	if (kt_open(&st, dir, &o) != 0) {
		fprintf(stderr, "crash: create %s: %s\n", dir, kt_errmsg());
		kt_close(ref);
		return 1;
	}
	kt_close(st);

	while (sx.rounds < kills) {
		if (one_round(self, dir, rados ? &w : NULL, ref, seed, &r,
			      &next, &sx, verbose) != 0) {
			fail = 1;
			break;
		}
	}
	kt_close(ref);
	alarm(0);
	fprintf(stderr,
		"crash: %u rounds in %.1f s, %" PRIu64 " operations "
		"(%u acknowledged, %u of them failed as expected); in flight "
		"at the kill: %u applied, %u not applied; %u idle, %u killed "
		"before the first operation\n",
		sx.rounds, now_s() - t0, next - 1, sx.ops, sx.failed_ops,
		sx.inflight_applied, sx.inflight_not, sx.idle,
		sx.killed_in_open);
	fprintf(stderr,
		"crash: %.1f ms per operation in a child; %.1f s reopening, "
		"checking and reading the killed store (kt_open %.1f s, "
		"kt_check %.1f s)\n",
		sx.op_us / 1000, sx.settle_s, sx.open_s, sx.check_s);
	if (sx.started > 0)
		fprintf(stderr,
			"crash: %.0f ms from starting a child to its first "
			"operation\n",
			1000 * sx.start_s / sx.started);
	if (rados != NULL)
		fprintf(stderr,
			"crash: %u kills left a commit record behind (%u P, "
			"%u C, %u A, %u unreadable); %zu of them were never "
			"settled (no lock pointed at them); %.1f s listing "
			"them\n",
			sx.rec_rounds, sx.rec[0], sx.rec[1], sx.rec[2],
			sx.rec[3], sx.nleaked, sx.records_s);
	while (sx.nleaked > 0)
		free(sx.leaked[--sx.nleaked]);
	free(sx.leaked);
	if (fail) {
		fprintf(stderr,
			"crash: FAILED; rerun with KT_CRASH_SEED=%" PRIu64
			" (timing differs); stores kept in %s%s%s\n",
			seed, base, rados ? " and " : "", rados ? dir : "");
#ifdef KT_HAVE_RADOS
		rl_close();
#endif
		return 1;
	}
	if (getenv("KT_CRASH_DIR") == NULL)
		nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
#ifdef KT_HAVE_RADOS
	if (rados != NULL) {
		wd_arm("removing the tree");
		fail = tree_drop(&w, dir) != 0;
		alarm(0);
		rl_close();
	}
#endif
	return fail;
}
