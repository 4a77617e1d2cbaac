/*
 * test_multiproc.c - several processes on one store, each doing random
 * operations through the library at once, and what must hold afterwards.
 *
 * N writer processes (2, 4 and 8) and one checker are forked; each opens
 * the store itself, so the first to get LevelDB's lock becomes the holder
 * and the others connect to it.  Every writer runs a bounded number of
 * operations (not a time limit) and logs each one with what it returned.
 * The name space is small and mostly shared, so the processes collide:
 *
 *   /own/pK/nJ   items only writer K touches (put, write, truncate,
 *                delete, setattr, attr set).  Writer K keeps a model of
 *                them and checks every return code and the value after
 *                every call against it; at the end the parent replays
 *                each writer's log of acknowledged calls and requires the
 *                store to hold exactly what the model holds.
 *   /s/...       ten paths every writer puts, writes, mkdirs, renames,
 *                deletes, links, setattrs and sets attributes on.  Every
 *                put and write stores a 16-byte token unique to that call,
 *                so at the end every value (and attribute) under /s must
 *                be the token of a call that was acknowledged: a call that
 *                failed left nothing behind, and no two calls mixed.  A
 *                call may fail only with an error it could get alone
 *                (KT_ENOTFOUND, KT_EEXISTS, ...), never KT_EIO or
 *                KT_ECONFLICT.
 *   /counter     a decimal number each writer increments by compare and
 *                swap (read at version v, put with KT_CREATE_IF_VERSION v,
 *                again on KT_ECONFLICT): at the end it equals the number
 *                of acknowledged increments, and the values the writers
 *                were acknowledged for are exactly 1..n, each once.
 *   /race/rI     renamed by every writer to /race/wI-pK at its I-th
 *                rendezvous: exactly one rename of each succeeds, the
 *                others get KT_ENOTFOUND, and the store holds the
 *                winner's name only.
 *
 * Meanwhile the checker runs kt_check() over and over until the writers
 * are done; each run must be clean (the issue requires `keytree check` on
 * a live store to be clean while writers run).  The store must pass
 * kt_check() at the end.
 *
 * Children report through their exit status and stderr, never through
 * cmocka (a failed assertion in a child would unwind into a copy of the
 * test runner).  Every process arms alarm(): a hang kills it, and the
 * parent reports the signal.  KT_MP_SEED=n in the environment replays a
 * run; the seed is printed on failure.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "kt_test.h"

#define GUARD_SECONDS 120
#define OPS 1500         /* operations per writer */
#define NOWN 4           /* owned items per writer */
#define OWN_MAX 128      /* largest owned value */
#define NRACE 6          /* contested renames per run */
#define TOK 16           /* bytes of a shared token */
#define MAXPROC 8

enum kind {
	OWN_PUT = 1, OWN_WRITE, OWN_TRUNC, OWN_DEL, OWN_MODE, OWN_ATTR,
	SH_PUT, SH_WRITE, SH_MKDIR, SH_RENAME, SH_DELETE, SH_LINK,
	SH_SETATTR, SH_ATTR, COUNTER_INC, RACE_RENAME
};

static const char *const kind_names[] = {
	"?", "own-put", "own-write", "own-trunc", "own-del", "own-mode",
	"own-attr", "put", "write", "mkdir", "rename", "delete", "link",
	"setattr", "attr-set", "counter-inc", "race-rename"};

/* One logged call: what a writer did and what it returned. */
typedef struct rec {
	int kind;
	int rc;
	int name;          /* own: the item's index; race: the round */
	uint32_t flags;    /* shared delete/rename flags, own mode */
	uint64_t off;      /* write offset, truncate size */
	uint32_t len;      /* bytes in data */
	char a[32], b[32]; /* shared paths */
	char data[OWN_MAX]; /* bytes written, or the token */
} rec;

/* What the model says one owned item holds. */
typedef struct own_item {
	int exists;
	size_t len;
	unsigned char v[OWN_MAX + 32];
	uint32_t mode;
	int has_attr;
	char attr[TOK];
} own_item;

static const char *const shared_paths[] = {
	"/s/a", "/s/b", "/s/c", "/s/d", "/s/x", "/s/y",
	"/s/x/a", "/s/x/b", "/s/y/a", "/s/y/x/a"};
#define NSHARED (sizeof(shared_paths) / sizeof(shared_paths[0]))

static unsigned int seed_base;
static const char *log_dir; /* the fixture's directory: logs, counts */

/* xorshift; each process has its own state. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static unsigned int rn(uint64_t *s, unsigned int n)
{
	return (unsigned int)(rng_next(s) % n);
}

static void own_path(char *buf, size_t size, int proc, int name)
{
	snprintf(buf, size, "/own/p%d/n%d", proc, name);
}

/* Apply an acknowledged owned call to the model; the rc the model
 * predicts for it (the call's own rc is not looked at). */
static int own_apply(own_item *m, const rec *r, int commit)
{
	own_item *it = &m[r->name];
	size_t end;

	switch (r->kind) {
	case OWN_PUT:
		if (commit) {
			if (!it->exists) {
				it->exists = 1;
				it->mode = 0644;
				it->has_attr = 0;
			}
			memcpy(it->v, r->data, r->len);
			it->len = r->len;
		}
		return 0;
	case OWN_WRITE:
		if (!it->exists)
			return KT_ENOTFOUND;
		if (commit) {
			end = (size_t)r->off + r->len;
			if (end > it->len) {
				memset(it->v + it->len, 0, end - it->len);
				it->len = end;
			}
			memcpy(it->v + r->off, r->data, r->len);
		}
		return 0;
	case OWN_TRUNC:
		if (!it->exists)
			return KT_ENOTFOUND;
		if (commit) {
			if (r->off > it->len)
				memset(it->v + it->len, 0, r->off - it->len);
			it->len = (size_t)r->off;
		}
		return 0;
	case OWN_DEL:
		if (!it->exists)
			return KT_ENOTFOUND;
		if (commit)
			memset(it, 0, sizeof(*it));
		return 0;
	case OWN_MODE:
		if (!it->exists)
			return KT_ENOTFOUND;
		if (commit)
			it->mode = r->flags;
		return 0;
	case OWN_ATTR:
		if (!it->exists)
			return KT_ENOTFOUND;
		if (commit) {
			it->has_attr = 1;
			memcpy(it->attr, r->data, TOK);
		}
		return 0;
	}
	return KT_EINVAL;
}

/* "" when the item at @p path matches the model; else what differs. */
static const char *own_compare(char *why, size_t size, kt_store *st,
			       const char *path, const own_item *it)
{
	kt_statbuf sb;
	void *v = NULL;
	size_t len = 0;
	int rc = kt_lstat(&sb, st, path);

	why[0] = '\0';
	if (!it->exists) {
		if (rc != KT_ENOTFOUND)
			snprintf(why, size, "%s: lstat %d, model: absent",
				 path, rc);
		return why;
	}
	if (rc != 0) {
		snprintf(why, size, "%s: lstat %d (%s), model: present", path,
			 rc, kt_errmsg());
		return why;
	}
	if ((sb.mode & 07777) != it->mode) {
		snprintf(why, size, "%s: mode %o, model %o", path,
			 (unsigned)(sb.mode & 07777), (unsigned)it->mode);
		return why;
	}
	rc = kt_get(&v, &len, st, path);
	if (rc != 0 || len != it->len || memcmp(v, it->v, len) != 0) {
		snprintf(why, size, "%s: value of %zu bytes (rc %d), model "
			 "%zu bytes%s", path, len, rc, it->len,
			 rc == 0 && len == it->len ? ", contents differ" : "");
		kt_free(v);
		return why;
	}
	kt_free(v);
	v = NULL;
	rc = kt_attr_get(&v, &len, st, path, "user.o");
	if (it->has_attr ? rc != 0 || len != TOK ||
				   memcmp(v, it->attr, TOK) != 0
			 : rc != KT_ENOATTR)
		snprintf(why, size, "%s: attribute user.o rc %d, model %s",
			 path, rc, it->has_attr ? "set" : "absent");
	kt_free(v);
	return why;
}

/* A token no other call uses: writer, call number, kind. */
static void make_token(char *tok, int proc, int seq, const char *tag)
{
	char buf[TOK + 1];

	snprintf(buf, sizeof(buf), "p%d-%05d-%-6.6s", proc, seq, tag);
	memcpy(tok, buf, TOK);
}

static int shared_rc_allowed(int rc)
{
	switch (rc) {
	case 0:
	case KT_ENOTFOUND:
	case KT_EEXISTS:
	case KT_ENOTDIR:
	case KT_EISDIR:
	case KT_ENOTEMPTY:
	case KT_EINVAL:
	case KT_EPERM:
		return 1;
	}
	return 0;
}

/* Increment /counter by compare and swap; the value acknowledged in
 * @p got.  0, or the error that stopped it. */
static int counter_inc(kt_store *st, uint64_t *got)
{
	int tries, rc = KT_ECONFLICT;

	for (tries = 0; tries < 10000 && rc == KT_ECONFLICT; tries++) {
		kt_create_options co = KT_CREATE_OPTIONS_INIT;
		kt_statbuf a, b;
		void *v = NULL;
		size_t len = 0;
		char buf[32];
		unsigned long long n;

		if ((rc = kt_stat(&a, st, "/counter")) != 0 ||
		    (rc = kt_get(&v, &len, st, "/counter")) != 0)
			return rc;
		n = strtoull(v, NULL, 10);
		kt_free(v);
		if ((rc = kt_stat(&b, st, "/counter")) != 0)
			return rc;
		if (a.version != b.version) {
			rc = KT_ECONFLICT;
			continue;
		}
		snprintf(buf, sizeof(buf), "%llu", n + 1);
		co.flags = KT_CREATE_IF_VERSION;
		co.if_version = a.version;
		rc = kt_put(st, "/counter", buf, strlen(buf), &co);
		if (rc == 0)
			*got = n + 1;
	}
	return rc;
}

/* One owned call, chosen at random, made and checked against the model. */
static int writer_own(kt_store *st, uint64_t *rs, int proc, own_item *m,
		      rec *r)
{
	char path[64], why[256];
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	unsigned int i;
	int want;

	r->name = (int)rn(rs, NOWN);
	own_path(path, sizeof(path), proc, r->name);
	switch (rn(rs, 8)) {
	case 0:
	case 1:
		r->kind = OWN_PUT;
		r->len = rn(rs, OWN_MAX / 2);
		for (i = 0; i < r->len; i++)
			r->data[i] = (char)('a' + rn(rs, 26));
		r->rc = kt_put(st, path, r->data, r->len, NULL);
		break;
	case 2:
	case 3:
		r->kind = OWN_WRITE;
		r->off = rn(rs, 80);
		r->len = 1 + rn(rs, 24);
		for (i = 0; i < r->len; i++)
			r->data[i] = (char)('A' + rn(rs, 26));
		r->rc = kt_write(st, path, r->data, r->len, r->off);
		break;
	case 4:
		r->kind = OWN_TRUNC;
		r->off = rn(rs, 100);
		r->rc = kt_truncate(st, path, r->off);
		break;
	case 5:
		r->kind = OWN_DEL;
		r->rc = kt_delete(st, path, 0);
		break;
	case 6:
		r->kind = OWN_MODE;
		r->flags = 0600 | (rn(rs, 2) ? 040 : 0) | (rn(rs, 2) ? 04 : 0);
		sa.mask = KT_SET_MODE;
		sa.mode = r->flags;
		r->rc = kt_setattr(st, path, &sa, 0);
		break;
	default:
		r->kind = OWN_ATTR;
		r->len = TOK;
		make_token(r->data, proc, (int)rn(rs, 100000), "own");
		r->rc = kt_attr_set(st, path, "user.o", r->data, TOK, 0);
		break;
	}
	want = own_apply(m, r, 0);
	if (r->rc != want) {
		fprintf(stderr, "writer %d: %s %s returned %d (%s), the model "
			"says %d\n", proc, kind_names[r->kind], path, r->rc,
			kt_errmsg(), want);
		return -1;
	}
	if (r->rc == 0)
		own_apply(m, r, 1);
	if (own_compare(why, sizeof(why), st, path, &m[r->name])[0]) {
		fprintf(stderr, "writer %d: after %s: %s\n", proc,
			kind_names[r->kind], why);
		return -1;
	}
	return 0;
}

/* One call on the shared paths, chosen at random. */
static void writer_shared(kt_store *st, uint64_t *rs, int proc, int seq,
			  rec *r)
{
	const char *a = shared_paths[rn(rs, NSHARED)];
	const char *b = shared_paths[rn(rs, NSHARED)];
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;

	snprintf(r->a, sizeof(r->a), "%s", a);
	snprintf(r->b, sizeof(r->b), "%s", b);
	switch (rn(rs, 10)) {
	case 0:
	case 1:
		r->kind = SH_PUT;
		r->len = TOK;
		make_token(r->data, proc, seq, "put");
		r->rc = kt_put(st, a, r->data, TOK, NULL);
		break;
	case 2:
		r->kind = SH_WRITE;
		r->len = TOK;
		make_token(r->data, proc, seq, "write");
		r->rc = kt_write(st, a, r->data, TOK, 0);
		break;
	case 3:
		r->kind = SH_MKDIR;
		r->rc = kt_mkdir(st, a, NULL);
		break;
	case 4:
	case 5:
		r->kind = SH_RENAME;
		r->flags = rn(rs, 2) ? KT_RENAME_NOREPLACE : 0;
		r->rc = kt_rename(st, a, b, r->flags);
		break;
	case 6:
		r->kind = SH_DELETE;
		r->flags = rn(rs, 3) == 0 ? KT_DELETE_RECURSIVE : 0;
		r->rc = kt_delete(st, a, r->flags);
		break;
	case 7:
		r->kind = SH_LINK;
		r->rc = kt_link(st, a, b);
		break;
	case 8:
		r->kind = SH_SETATTR;
		sa.mask = KT_SET_MODE;
		sa.mode = rn(rs, 2) ? 0600 : 0644;
		r->flags = sa.mode;
		r->rc = kt_setattr(st, a, &sa, KT_NOFOLLOW);
		break;
	default:
		r->kind = SH_ATTR;
		r->len = TOK;
		make_token(r->data, proc, seq, "attr");
		r->rc = kt_attr_set(st, a, "user.t", r->data, TOK, 0);
		break;
	}
}

/* A writer: OPS calls, then its log to log_dir/log-K. */
static int writer_run(kt_store *st, int proc, int nproc)
{
	own_item model[NOWN];
	rec *log = calloc(OPS + NRACE, sizeof(rec));
	uint64_t rs = ((uint64_t)seed_base << 8 | (unsigned)proc) * 2654435761u
		      + 1;
	char path[400], src[32], dst[32];
	int seq, nlog = 0, race = 0, bad = 0;
	FILE *fp;

	(void)nproc;
	memset(model, 0, sizeof(model));
	if (log == NULL)
		return 20;
	for (seq = 0; seq < OPS && !bad; seq++) {
		rec *r = &log[nlog++];
		unsigned int pick = rn(&rs, 10);
		uint64_t got = 0;

		if (race < NRACE && seq == (race + 1) * OPS / (NRACE + 1)) {
			r->kind = RACE_RENAME;
			r->name = race;
			snprintf(src, sizeof(src), "/race/r%d", race);
			snprintf(dst, sizeof(dst), "/race/w%d-p%d", race,
				 proc);
			r->rc = kt_rename(st, src, dst, 0);
			if (r->rc != 0 && r->rc != KT_ENOTFOUND) {
				fprintf(stderr, "writer %d: rename %s: %d "
					"(%s)\n", proc, src, r->rc,
					kt_errmsg());
				bad = 1;
			}
			race++;
			r = &log[nlog++];
		}
		if (pick < 4) {
			bad = writer_own(st, &rs, proc, model, r) != 0;
		} else if (pick == 4) {
			r->kind = COUNTER_INC;
			r->rc = counter_inc(st, &got);
			r->off = got;
			if (r->rc != 0) {
				fprintf(stderr, "writer %d: counter: %d (%s)\n",
					proc, r->rc, kt_errmsg());
				bad = 1;
			}
		} else {
			writer_shared(st, &rs, proc, seq, r);
			if (!shared_rc_allowed(r->rc)) {
				fprintf(stderr, "writer %d: %s %s %s: %d (%s)\n",
					proc, kind_names[r->kind], r->a, r->b,
					r->rc, kt_errmsg());
				bad = 1;
			}
		}
	}
	snprintf(path, sizeof(path), "%s/log-%d", log_dir, proc);
	fp = fopen(path, "wb");
	if (fp == NULL || fwrite(log, sizeof(rec), (size_t)nlog, fp) !=
				  (size_t)nlog || fclose(fp) != 0)
		bad = 1;
	free(log);
	return bad ? 21 : 0;
}

static int check_violation(const char *what, void *payload)
{
	fprintf(stderr, "live kt_check (pass %zu): %s\n", *(size_t *)payload,
		what);
	return 0;
}

/* The checker: kt_check until @p stop reaches its end. */
static int checker_run(kt_store *st, int stop)
{
	struct pollfd p = {.fd = stop, .events = POLLIN};
	size_t passes = 0, bad = 0;
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	char path[400];
	FILE *fp;
	int rc;

	o.on_violation = check_violation;
	o.payload = &passes;
	do {
		rc = kt_check(&bad, st, &o);
		passes++;
		if (rc != 0 || bad != 0) {
			fprintf(stderr, "live kt_check pass %zu: rc %d (%s), "
				"%zu violations\n", passes, rc, kt_errmsg(),
				bad);
			return 30;
		}
	} while (poll(&p, 1, 0) == 0);
	snprintf(path, sizeof(path), "%s/checks", log_dir);
	fp = fopen(path, "w");
	if (fp == NULL)
		return 31;
	fprintf(fp, "%zu\n", passes);
	fclose(fp);
	return 0;
}

/* A child: open the store, wait for the start, do its part, tell the
 * parent, stay open (it may be the holder) until released. */
static void child_main(const char *dir, int proc, int nproc, int go,
		       int done, int release, int stop)
{
	kt_store *st = NULL;
	int code;
	char c = 'd';

	alarm(GUARD_SECONDS);
	if (kt_open(&st, dir, NULL) != 0) {
		fprintf(stderr, "child %d: kt_open: %s\n", proc, kt_errmsg());
		_exit(10);
	}
	if (read(go, &c, 1) != 0)
		_exit(11);
	if (proc == nproc)
		code = checker_run(st, stop);
	else
		code = writer_run(st, proc, nproc);
	c = code == 0 ? 'd' : 'f';
	if (write(done, &c, 1) != 1)
		_exit(12);
	while (read(release, &c, 1) > 0)
		;
	kt_close(st);
	_exit(code);
}

/*
 * This process never holds a store itself: LevelDB's default environment
 * starts one compaction thread per process, and a child forked after it
 * started inherits the flag "started" but not the thread, so a store the
 * child holds never compacts and its kt_close() waits forever.  So the
 * store is made and seeded by a forked child, and the checks at the end
 * run through the holder, before the writers are let go.
 */
static int setup(void **state)
{
	kt_test_fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	const char *env = getenv("KT_MP_SEED");
	pid_t pid;
	int status;

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/kt-test-XXXXXX",
		 tmp ? tmp : "/tmp");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/store", f->dir);
	*state = f;
	seed_base = env ? (unsigned)strtoul(env, NULL, 10)
			: (unsigned)time(NULL) ^ (unsigned)getpid();
	pid = fork();
	if (pid == 0) {
		kt_options o = KT_OPTIONS_INIT;
		kt_store *st = NULL;
		char p[32];
		int i, rc;

		o.create_if_missing = 1;
		rc = kt_open(&st, f->path, &o);
		if (rc == 0)
			rc = kt_put(st, "/counter", "0", 1, NULL);
		for (i = 0; i < NRACE && rc == 0; i++) {
			snprintf(p, sizeof(p), "/race/r%d", i);
			rc = kt_put(st, p, "race", 4, NULL);
		}
		if (rc != 0)
			fprintf(stderr, "making the store: %s\n", kt_errmsg());
		kt_close(st);
		_exit(rc == 0 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	alarm(GUARD_SECONDS);
	return 0;
}

static int teardown(void **state)
{
	alarm(0);
	return kt_test_teardown(state);
}

/* The logs of @p nproc writers, in @p logs[k] (@p nlogs[k] records). */
static void read_logs(const char *dir, int nproc, rec **logs, size_t *nlogs)
{
	char path[400];
	struct stat sb;
	FILE *fp;
	int k;

	for (k = 0; k < nproc; k++) {
		snprintf(path, sizeof(path), "%s/log-%d", dir, k);
		assert_int_equal(stat(path, &sb), 0);
		nlogs[k] = (size_t)sb.st_size / sizeof(rec);
		logs[k] = calloc(nlogs[k] + 1, sizeof(rec));
		assert_non_null(logs[k]);
		fp = fopen(path, "rb");
		assert_non_null(fp);
		assert_int_equal(fread(logs[k], sizeof(rec), nlogs[k], fp),
				 nlogs[k]);
		fclose(fp);
	}
}

/* Each writer's owned items hold what its acknowledged calls, replayed on
 * the model in the order it made them, leave. */
static void verify_owned(kt_store *st, int nproc, rec **logs, size_t *nlogs)
{
	char path[64], why[256];
	int k, j;
	size_t i;

	for (k = 0; k < nproc; k++) {
		own_item m[NOWN];

		memset(m, 0, sizeof(m));
		for (i = 0; i < nlogs[k]; i++)
			if (logs[k][i].kind >= OWN_PUT &&
			    logs[k][i].kind <= OWN_ATTR && logs[k][i].rc == 0)
				own_apply(m, &logs[k][i], 1);
		for (j = 0; j < NOWN; j++) {
			own_path(path, sizeof(path), k, j);
			if (own_compare(why, sizeof(why), st, path, &m[j])[0])
				fail_msg("writer %d's item: %s (seed %u)", k,
					 why, seed_base);
		}
	}
}

/* Is @p v (@p len bytes) the token of an acknowledged call of one of
 * @p kinds?  Fails the test if it is the token of a failed one. */
static int token_acked(const void *v, size_t len, int kind1, int kind2,
		       int nproc, rec **logs, size_t *nlogs)
{
	size_t i;
	int k;

	if (len != TOK)
		return 0;
	for (k = 0; k < nproc; k++)
		for (i = 0; i < nlogs[k]; i++) {
			const rec *r = &logs[k][i];

			if ((r->kind != kind1 && r->kind != kind2) ||
			    memcmp(r->data, v, TOK) != 0)
				continue;
			if (r->rc != 0)
				fail_msg("'%.16s' is in the store, but its "
					 "%s %s returned %d (seed %u)",
					 (const char *)v, kind_names[r->kind],
					 r->a, r->rc, seed_base);
			return 1;
		}
	return 0;
}

/* Every value and attribute under /s is an acknowledged call's token. */
static void verify_shared(kt_store *st, int nproc, rec **logs, size_t *nlogs)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	size_t n = 0;
	int rc;

	assert_int_equal(kt_find_new(&it, st, "/s", 0), 0);
	while ((rc = kt_iter_next(&e, it)) == 0) {
		kt_statbuf sb;
		void *v = NULL;
		size_t len = 0;

		assert_int_equal(kt_lstat(&sb, st, e->name), 0);
		if (sb.kind & KT_KIND_ITEM) {
			assert_int_equal(kt_get(&v, &len, st, e->name), 0);
			if (!token_acked(v, len, SH_PUT, SH_WRITE, nproc, logs,
					 nlogs))
				fail_msg("%s holds '%.*s', which no "
					 "acknowledged put or write wrote "
					 "(seed %u)", e->name, (int)len,
					 (const char *)v, seed_base);
			kt_free(v);
			v = NULL;
		}
		rc = kt_attr_get(&v, &len, st, e->name, "user.t");
		if (rc == 0 && !token_acked(v, len, SH_ATTR, SH_ATTR, nproc,
					    logs, nlogs))
			fail_msg("%s has attribute '%.*s', which no "
				 "acknowledged attr set wrote (seed %u)",
				 e->name, (int)len, (const char *)v,
				 seed_base);
		if (rc != 0 && rc != KT_ENOATTR)
			fail_msg("attr get %s: %d (%s)", e->name, rc,
				 kt_errmsg());
		kt_free(v);
		n++;
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	(void)n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* /counter is the number of acknowledged increments, and they were
 * acknowledged for 1..n, each once. */
static void verify_counter(kt_store *st, int nproc, rec **logs,
			   size_t *nlogs)
{
	uint64_t vals[MAXPROC * OPS];
	void *v = NULL;
	size_t len = 0, n = 0, i;
	int k;

	for (k = 0; k < nproc; k++)
		for (i = 0; i < nlogs[k]; i++)
			if (logs[k][i].kind == COUNTER_INC &&
			    logs[k][i].rc == 0)
				vals[n++] = logs[k][i].off;
	assert_int_equal(kt_get(&v, &len, st, "/counter"), 0);
	if (strtoull(v, NULL, 10) != n)
		fail_msg("/counter is %s after %zu acknowledged increments "
			 "(seed %u)", (char *)v, n, seed_base);
	kt_free(v);
	qsort(vals, n, sizeof(vals[0]), cmp_u64);
	for (i = 0; i < n; i++)
		if (vals[i] != i + 1)
			fail_msg("increment acknowledged for %llu where %zu "
				 "was due: two writers got one value (seed %u)",
				 (unsigned long long)vals[i], i + 1, seed_base);
}

/* Of each contested rename, exactly one won, and only its name is there. */
static void verify_races(kt_store *st, int nproc, rec **logs, size_t *nlogs)
{
	kt_statbuf sb;
	char p[32];
	int round, k, winner, tries;
	size_t i;

	for (round = 0; round < NRACE; round++) {
		winner = -1;
		tries = 0;
		for (k = 0; k < nproc; k++)
			for (i = 0; i < nlogs[k]; i++) {
				const rec *r = &logs[k][i];

				if (r->kind != RACE_RENAME || r->name != round)
					continue;
				tries++;
				if (r->rc != 0)
					continue;
				if (winner >= 0)
					fail_msg("rename of /race/r%d won by "
						 "writers %d and %d", round,
						 winner, k);
				winner = k;
			}
		assert_int_equal(tries, nproc);
		if (winner < 0)
			fail_msg("no rename of /race/r%d succeeded", round);
		snprintf(p, sizeof(p), "/race/r%d", round);
		assert_int_equal(kt_lstat(&sb, st, p), KT_ENOTFOUND);
		for (k = 0; k < nproc; k++) {
			snprintf(p, sizeof(p), "/race/w%d-p%d", round, k);
			assert_int_equal(kt_lstat(&sb, st, p),
					 k == winner ? 0 : KT_ENOTFOUND);
		}
	}
}

/* One line on what the run did, so that a log shows the collisions
 * happened: calls per kind, how many were acknowledged, live checks. */
static void summary(int nproc, rec **logs, size_t *nlogs, size_t checks)
{
	size_t calls[RACE_RENAME + 1] = {0}, acked[RACE_RENAME + 1] = {0};
	size_t i;
	int k;

	for (k = 0; k < nproc; k++)
		for (i = 0; i < nlogs[k]; i++) {
			calls[logs[k][i].kind]++;
			acked[logs[k][i].kind] += logs[k][i].rc == 0;
		}
	printf("# %d writers, seed %u, %zu live checks;", nproc, seed_base,
	       checks);
	for (k = OWN_PUT; k <= RACE_RENAME; k++)
		printf(" %s %zu/%zu", kind_names[k], acked[k], calls[k]);
	printf("\n");
}

static void run_procs(kt_test_fixture *f, int nproc)
{
	pid_t pids[MAXPROC + 1];
	rec *logs[MAXPROC];
	size_t nlogs[MAXPROC], bad = 99, checks = 0;
	int go[2], done[2], release[2], stop[2], k, status, failed = 0;
	char c, path[400];
	kt_store *st = NULL;
	FILE *fp;

	assert_true(nproc <= MAXPROC);
	log_dir = f->dir;
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	assert_int_equal(pipe(release), 0);
	assert_int_equal(pipe(stop), 0);
	for (k = 0; k <= nproc; k++) {
		pids[k] = fork();
		assert_true(pids[k] >= 0);
		if (pids[k] == 0) {
			close(go[1]);
			close(done[0]);
			close(release[1]);
			close(stop[1]);
			child_main(f->path, k, nproc, go[0], done[1],
				   release[0], stop[0]);
		}
	}
	close(go[0]);
	close(done[1]);
	close(release[0]);
	close(stop[0]);
	close(go[1]); /* every child starts at once */
	for (k = 0; k <= nproc; k++) {
		if (k == nproc)
			close(stop[1]); /* the writers are done */
		if (read(done[0], &c, 1) != 1)
			break; /* a child died: its status says how */
		if (c != 'd')
			failed = 1;
	}
	/* Everyone is still open, the holder among them: check the store
	 * through it. */
	if (!failed && k > nproc) {
		snprintf(path, sizeof(path), "%s/checks", f->dir);
		fp = fopen(path, "r");
		assert_non_null(fp);
		assert_int_equal(fscanf(fp, "%zu", &checks), 1);
		fclose(fp);
		assert_true(checks >= 1);
		if (kt_open(&st, f->path, NULL) != 0)
			fail_msg("kt_open through the holder: %s",
				 kt_errmsg());
		assert_int_equal(kt_check(&bad, st, NULL), 0);
		assert_int_equal(bad, 0);
		read_logs(f->dir, nproc, logs, nlogs);
		verify_owned(st, nproc, logs, nlogs);
		verify_shared(st, nproc, logs, nlogs);
		verify_counter(st, nproc, logs, nlogs);
		verify_races(st, nproc, logs, nlogs);
		summary(nproc, logs, nlogs, checks);
		for (k = 0; k < nproc; k++)
			free(logs[k]);
		kt_close(st);
	}
	close(release[1]); /* the holder closes only now */
	close(done[0]);
	for (k = 0; k <= nproc; k++) {
		assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
		if (WIFSIGNALED(status))
			fail_msg("%s %d killed by signal %d (seed %u)",
				 k == nproc ? "checker" : "writer", k,
				 WTERMSIG(status), seed_base);
		if (WEXITSTATUS(status) != 0)
			fail_msg("%s %d failed with status %d, see stderr "
				 "(seed %u)", k == nproc ? "checker" : "writer",
				 k, WEXITSTATUS(status), seed_base);
	}
	assert_false(failed);
}

static void test_multiproc__two(void **state)
{
	run_procs(*state, 2);
}

static void test_multiproc__four(void **state)
{
	run_procs(*state, 4);
}

static void test_multiproc__eight(void **state)
{
	run_procs(*state, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_multiproc__two),
		T(test_multiproc__four),
		T(test_multiproc__eight),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
