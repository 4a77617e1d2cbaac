/*
 * test_bigop.c - renames and recursive deletes too large for one commit
 * (ops.c, "Large renames and deletes"; docs/FORMAT.md §11).  On an engine
 * with fences (LevelDB) such an operation makes its commit point and a
 * journal row, then moves or deletes the subtree's rows a step at a time
 * while the engine keeps every other thread out of them.  These tests
 * lower the step size (kt__big_rows) so that small trees take that road,
 * and check that:
 * - the result is the same as one commit's, aliases and values included;
 * - the steps really happen, and small operations still make one commit;
 * - readers of the subtree see it before or after, never half moved, and
 *   readers elsewhere are not held up meanwhile;
 * - a process killed between steps leaves a store that the next open
 *   finishes, and that a read-only open refuses until then;
 * - the path limits are checked before the commit point.
 * On RADOS the fence is a staged commit (rows_rados.c, "Staged commits"):
 * the steps are parts of one commit that takes effect at the end, so
 * there the tests check instead that readers see the subtree as it was
 * until then, that a client killed before that end leaves nothing done
 * (rolled back once its heartbeat stops), and one killed after it leaves
 * everything done (rolled forward by whoever reads).  The cases about
 * the holder, its clients and the journal are LevelDB's own.
 */
#include "kt_test.h"
#include "kt_helpers.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

extern size_t kt__big_rows;
extern void (*kt__test_big_step)(int step);
#ifdef KT_HAVE_RADOS
extern void (*kt__rados_test_staged)(void);
extern int kt__rados_test_apply_fail;
extern unsigned long kt__rados_test_parts_held;
#endif

static pid_t holder_pid;  /* the holder child of holder_start */
static int holder_fds[2] = {-1, -1}; /* and the parent's ends of its pipes */
static int steps;        /* hook calls of the last operation */
static int fenced_one;   /* ... that said "one commit behind the fence" */
static int exit_at = -1; /* the hook ends the process at this step */

static void count_step(int step)
{
	if (step == -1) {
		fenced_one++;
		return;
	}
	steps++;
	if (step == exit_at)
		_exit(7);
}

static int setup(void **state)
{
	kt__big_rows = 8;
	kt__test_big_step = count_step;
	steps = 0;
	exit_at = -1;
	return kt_test_setup(state);
}

static int teardown(void **state)
{
	int rc, i;

	/* A failed test with a holder (holder_start) leaves it waiting. */
	if (holder_pid > 0) {
		kill(holder_pid, SIGKILL);
		waitpid(holder_pid, NULL, 0);
		holder_pid = 0;
	}
	for (i = 0; i < 2; i++)
		if (holder_fds[i] >= 0) {
			close(holder_fds[i]);
			holder_fds[i] = -1;
		}
	rc = kt_test_teardown(state);

	kt__big_rows = 16384;
	kt__test_big_step = NULL;
	return rc;
}

/* A subtree at @p top: directories, inline and block values, links,
 * attributes, and an alias of a node outside it (/outside/shared). */
static void build(kt_store *s, const char *top)
{
	char p[256], big[40000];
	int d, i;

	memset(big, 'b', sizeof(big));
	for (d = 0; d < 6; d++)
		for (i = 0; i < 8; i++) {
			snprintf(p, sizeof(p), "%s/d%d/f%d", top, d, i);
			put_str(s, p, p);
		}
	snprintf(p, sizeof(p), "%s/d2/deep/er/big", top);
	ok(kt_put(s, p, big, sizeof(big), NULL));
	snprintf(p, sizeof(p), "%s/d1/ln", top);
	ok(kt_symlink(s, p, "../d0/f0", NULL));
	snprintf(p, sizeof(p), "%s/d3/f1", top);
	ok(kt_attr_set(s, p, "user.k", "v", 1, 0));
	put_str(s, "/outside/shared", "shared");
	snprintf(p, sizeof(p), "%s/d4/alias", top);
	ok(kt_link(s, "/outside/shared", p));
	put_str(s, "/other", "other");
}

/* What a subtree holds, by path relative to @p top: kind, id, size,
 * value, link target, attributes, link count; not times or versions. */
static char *shape(kt_store *s, const char *top)
{
	kt_test_str out = {0};
	kt_iter *it = NULL;
	const kt_entry *e;
	size_t tl = strlen(top);
	int rc;

	ok(kt_find_new(&it, s, top, 0));
	while ((rc = kt_iter_next(&e, it)) == 0) {
		kt_statbuf sb;
		void *v = NULL;
		size_t vl = 0;
		ok(kt_lstat(&sb, s, e->name));
		kt_test_str_addf(&out, "%s k%u id%llu s%llu n%u a%u ",
				 e->name + tl, sb.kind,
				 (unsigned long long)sb.id,
				 (unsigned long long)sb.size,
				 (unsigned)sb.nlink, (unsigned)sb.nattrs);
		if (sb.kind & KT_KIND_LINK)
			ok(kt_readlink((char **)&v, &vl, s, e->name));
		else if (sb.kind & KT_KIND_ITEM)
			ok(kt_get(&v, &vl, s, e->name));
		kt_test_str_hex(&out, v, vl < 64 ? vl : 64);
		kt_test_str_addf(&out, " %zu\n", vl);
		kt_free(v);
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	if (out.p == NULL)
		kt_test_str_add(&out, "", 0);
	return out.p;
}

static void test_rename_in_steps(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf sb;
	char *before, *after;

	build(s, "/a");
	before = shape(s, "/a");
	steps = 0;
	ok(kt_rename(s, "/a", "/z", 0));
	/* The commit point, then one step per 8 rows of about 130. */
	assert_true(steps > 10);
	expect_rc(kt_lstat(&sb, s, "/a"), KT_ENOTFOUND);
	after = shape(s, "/z");
	assert_string_equal(before, after);
	free(after);
	/* The alias moved with it: the node outside knows its new path. */
	ok(kt_stat(&sb, s, "/outside/shared"));
	assert_int_equal(sb.nlink, 2);
	ok(kt_delete(s, "/outside/shared", 0));
	ok(kt_lstat(&sb, s, "/z/d4/alias"));
	assert_int_equal(sb.nlink, 1);
	/* And back, deeper. */
	ok(kt_mkdir(s, "/x", NULL));
	ok(kt_rename(s, "/z", "/x/y", 0));
	ok(kt_lstat(&sb, s, "/x/y/d2/deep/er/big"));
	assert_int_equal(sb.size, 40000);
	free(before);
}

static void test_delete_in_steps(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf sb;
	kt_store_stats s0, ss;

	put_str(s, "/outside/shared", "shared");
	put_str(s, "/other", "other");
	ok(kt_stats(&s0, s));
	build(s, "/a");
	steps = 0;
	ok(kt_delete(s, "/a", KT_DELETE_RECURSIVE));
	assert_true(steps > 10);
	expect_rc(kt_lstat(&sb, s, "/a"), KT_ENOTFOUND);
	ok(kt_stat(&sb, s, "/outside/shared"));
	assert_int_equal(sb.nlink, 1);
	/* Only what was there before /a was made is left, row for row. */
	ok(kt_stats(&ss, s));
	assert_int_equal(ss.items, s0.items);
	assert_int_equal(ss.dirs, s0.dirs);
	assert_int_equal(ss.rows, s0.rows);
	/* The teardown's check finds no row of the subtree left over. */
}

static void test_small_is_one_commit(void **state)
{
	kt_store *s = store_of(state);

	kt__big_rows = 1000;
	build(s, "/a");
	steps = 0;
	ok(kt_rename(s, "/a", "/z", 0));
	ok(kt_delete(s, "/z", KT_DELETE_RECURSIVE));
	assert_int_equal(steps, 0);
}

/* A node with a path inside a deleted subtree and one outside: the path
 * outside shows the delete (one link fewer) from the commit point on, not
 * from the step that reaches the inside path. */
static kt_store *outside_store;
static unsigned int outside_nlink;

static void look_outside(int step)
{
	kt_statbuf sb;

	steps++;
	if (step == 1 && kt_stat(&sb, outside_store, "/outside/shared") == 0)
		outside_nlink = sb.nlink;
}

static void test_outside_path_at_commit_point(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf sb;

	build(s, "/a");
	ok(kt_stat(&sb, s, "/outside/shared"));
	assert_int_equal(sb.nlink, 2);
	outside_store = s;
	outside_nlink = 0;
	kt__test_big_step = look_outside;
	steps = 0;
	ok(kt_delete(s, "/a", KT_DELETE_RECURSIVE));
	kt__test_big_step = count_step;
	assert_true(steps > 10);
	/* On RADOS nothing takes effect before the end of the stage. */
	assert_int_equal(outside_nlink, kt_test_on_rados() ? 2 : 1);
	ok(kt_stat(&sb, s, "/outside/shared"));
	assert_int_equal(sb.nlink, 1);
}

/* Between the two sizes: more rows than the first attempt reads, no more
 * than one step.  Made in one commit behind the fence.  (On RADOS the
 * first attempt reads a whole step: an ordinary commit, no fence.) */
static void test_middle_is_one_commit(void **state)
{
	kt_store *s = store_of(state);
	kt_statbuf sb;
	char *before, *after;

	kt__big_rows = 160; /* the first attempt reads 80 rows */
	build(s, "/a");
	before = shape(s, "/a");
	steps = 0;
	fenced_one = 0;
	ok(kt_rename(s, "/a", "/z", 0));
	after = shape(s, "/z");
	assert_string_equal(before, after);
	ok(kt_delete(s, "/z", KT_DELETE_RECURSIVE));
	expect_rc(kt_lstat(&sb, s, "/z"), KT_ENOTFOUND);
	assert_int_equal(steps, 0);
	assert_int_equal(fenced_one, kt_test_on_rados() ? 0 : 2);
	free(before);
	free(after);
}

/* A large rename that would put a node below over KT_PATH_MAX fails
 * before its commit point, leaving everything as it was. */
static void test_limits_before_commit_point(void **state)
{
	kt_store *s = store_of(state);
	char name[250], p[KT_PATH_MAX + 1], dst[300];
	size_t len = 2;
	int i;

	build(s, "/a");
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	strcpy(p, "/a");
	/* A path of almost KT_PATH_MAX bytes below /a. */
	for (i = 0; len + 1 + strlen(name) < KT_PATH_MAX - 40; i++) {
		strcat(p, "/");
		strcat(p, name);
		len = strlen(p);
	}
	put_str(s, p, "x");
	memset(dst, 'd', 100);
	dst[0] = '/';
	dst[100] = '\0';
	steps = 0;
	kt_assert_rejected(s, kt_rename(s, "/a", dst, 0), KT_ENAMETOOLONG,
			   "limits");
	assert_int_equal(steps, 0);
}

/* ---------------------------------------------------------------------- */
/* Readers while the steps run */

typedef struct watch {
	kt_store *s;
	int stop;
	unsigned long other_reads; /* whole gets of /other */
	size_t nodes;              /* below the moving top */
	char wrong[512];
} watch;

static void *read_other(void *arg)
{
	watch *w = arg;
	void *v;
	size_t vl;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		int rc = kt_get(&v, &vl, w->s, "/other");
		if (rc != 0 || vl != 5 || memcmp(v, "other", 5) != 0) {
			snprintf(w->wrong, sizeof(w->wrong),
				 "get /other: %d (%s)", rc, kt_errmsg());
			return NULL;
		}
		kt_free(v);
		__atomic_add_fetch(&w->other_reads, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Gets of a node of the moving subtree, at either place: each finds it
 * (or not) whole.  A get reads without a snapshot, so it waits for the
 * fence (rows_leveldb.c, read_begin) rather than read again. */
static void *get_moving(void *arg)
{
	watch *w = arg;
	void *v;
	size_t vl;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		static const char *p[2] = {"/a/d3/f1", "/z/d3/f1"};
		int t, rc;

		for (t = 0; t < 2; t++) {
			rc = kt_get(&v, &vl, w->s, p[t]);
			if (rc == 0) {
				int same = vl == 8 && memcmp(v, "/a/d3/f1",
							     8) == 0;
				kt_free(v);
				if (!same) {
					snprintf(w->wrong, sizeof(w->wrong),
						 "get %s: not its value", p[t]);
					return NULL;
				}
			} else if (rc != KT_ENOTFOUND) {
				snprintf(w->wrong, sizeof(w->wrong),
					 "get %s: %d (%s)", p[t], rc,
					 kt_errmsg());
				return NULL;
			}
		}
	}
	return NULL;
}

/* The subtree is at /a or at /z, whole, whenever it is looked at. */
static void *read_moving(void *arg)
{
	watch *w = arg;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		static const char *tops[2] = {"/a", "/z"};
		size_t n[2];
		int t;

		for (t = 0; t < 2; t++) {
			kt_iter *it = NULL;
			const kt_entry *e;
			int rc = kt_find_new(&it, w->s, tops[t], 0);
			n[t] = 0;
			if (rc == KT_ENOTFOUND)
				continue;
			while (rc == 0 && (rc = kt_iter_next(&e, it)) == 0)
				n[t]++;
			kt_iter_free(it);
			if (rc != KT_ITEROVER) {
				snprintf(w->wrong, sizeof(w->wrong),
					 "find %s: %d (%s)", tops[t], rc,
					 kt_errmsg());
				return NULL;
			}
		}
		/* The two finds are two calls, so the rename may fall
		 * between them (both whole, or none seen once), but never
		 * a part. */
		if ((n[0] != 0 && n[0] != w->nodes) ||
		    (n[1] != 0 && n[1] != w->nodes)) {
			snprintf(w->wrong, sizeof(w->wrong),
				 "found %zu nodes below /a and %zu below /z, "
				 "of %zu", n[0], n[1], w->nodes);
			return NULL;
		}
	}
	return NULL;
}

static watch *the_watch;

/* At the first step after the commit point: the fence stands, and this
 * thread holds the writer lock.  Wait for readers of /other to get on.
 * On RADOS, where nothing is fenced off, the subtree still reads as it
 * was, at its old place only. */
static void park(int step)
{
	unsigned long base;
	int i;

	steps++;
	if (step != 1)
		return;
	if (kt_test_on_rados()) {
		kt_statbuf sb;
		int at_a = kt_lstat(&sb, the_watch->s, "/a/d3/f1");
		int at_z = kt_lstat(&sb, the_watch->s, "/z/d3/f1");
		if ((at_a == 0) == (at_z == 0))
			snprintf(the_watch->wrong, sizeof(the_watch->wrong),
				 "mid-stage: /a/d3/f1 %d, /z/d3/f1 %d", at_a,
				 at_z);
	}
	base = __atomic_load_n(&the_watch->other_reads, __ATOMIC_ACQUIRE);
	for (i = 0; i < 3000; i++) {
		if (__atomic_load_n(&the_watch->other_reads,
				    __ATOMIC_ACQUIRE) >= base + 3)
			return;
		usleep(10000);
	}
	snprintf(the_watch->wrong, sizeof(the_watch->wrong),
		 "no get of /other finished in 30 s while the steps ran");
}

static void test_readers_during_steps(void **state)
{
	kt_store *s = store_of(state);
	pthread_t to, tm, tg;
	watch w;
	int round;

	kt_iter *it = NULL;
	const kt_entry *e;

	build(s, "/a");
	memset(&w, 0, sizeof(w));
	w.s = s;
	ok(kt_find_new(&it, s, "/a", 0));
	while (kt_iter_next(&e, it) == 0)
		w.nodes++;
	kt_iter_free(it);
	assert_true(w.nodes > 50);
	the_watch = &w;
	kt__test_big_step = park;
	assert_int_equal(pthread_create(&to, NULL, read_other, &w), 0);
	/* A find spanning partitions is no snapshot on RADOS (keytree.h,
	 * Engines): it may see part of the stage rolled forward. */
	if (!kt_test_on_rados())
		assert_int_equal(pthread_create(&tm, NULL, read_moving, &w),
				 0);
	assert_int_equal(pthread_create(&tg, NULL, get_moving, &w), 0);
	for (round = 0; round < 4 && w.wrong[0] == '\0'; round++) {
		steps = 0;
		if (round % 2 == 0)
			ok(kt_rename(s, "/a", "/z", 0));
		else
			ok(kt_rename(s, "/z", "/a", 0));
		assert_true(steps > 10);
	}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
	pthread_join(to, NULL);
	if (!kt_test_on_rados())
		pthread_join(tm, NULL);
	pthread_join(tg, NULL);
	kt__test_big_step = count_step;
	if (w.wrong[0] != '\0')
		fail_msg("%s", w.wrong);
	assert_true(w.other_reads >= 3);
}

/* ---------------------------------------------------------------------- */
/* Killed between steps */

/* The child (this program again, with --child, so that it starts with
 * no threads rather than as a fork of LevelDB's): open the store at
 * @p path, run the rename or delete with the hook ending the process at
 * step @p at. */
#ifdef KT_HAVE_RADOS
static void exit_now(void)
{
	_exit(7);
}
#endif

static int child(const char *path, int at, int rename)
{
	kt_store *s = NULL;
	int rc;

	kt__big_rows = 8;
	kt__test_big_step = count_step;
	exit_at = at;
#ifdef KT_HAVE_RADOS
	/* -3: end just after a staged commit takes effect (RADOS). */
	if (at == -3)
		kt__rados_test_staged = exit_now;
#endif
	if (kt_open(&s, path, NULL) != 0)
		return 2;
	if (rename)
		rc = kt_rename(s, "/a", "/z", 0);
	else
		rc = kt_delete(s, "/a", KT_DELETE_RECURSIVE);
	if (at == -2) {
		/* Not to be ended: made in steps, and whole. */
		kt_close(s);
		return rc == 0 && steps > 10 ? 0 : 9;
	}
	return 3; /* the hook should have ended it */
}

/* ---------------------------------------------------------------------- */
/* Another process reads while the holder's steps run */

static int hold_in = -1, hold_out = -1; /* the holder child's pipes */

static void say(int fd, char c)
{
	if (write(fd, &c, 1) != 1)
		_exit(5);
}

static char hear(int fd)
{
	char c = 0;

	if (read(fd, &c, 1) != 1)
		return 0;
	return c;
}

/* At the first step: tell the parent, and wait until it says go on. */
static void hold_park(int step)
{
	if (step != 1)
		return;
	say(hold_out, 'p');
	if (hear(hold_in) != 'c')
		_exit(6);
}

/* The holder (this program again, with --holder): open the store, say so,
 * rename /a to /z when told, parked at its first step until told to go
 * on, then say done and keep the store until told to close it. */
static int holder(const char *path)
{
	kt_store *s = NULL;
	int rc;

	hold_in = 0;
	hold_out = 1;
	kt__big_rows = 8;
	kt__test_big_step = hold_park;
	if (kt_open(&s, path, NULL) != 0)
		return 2;
	say(hold_out, 'o');
	if (hear(hold_in) != 'g')
		return 3;
	rc = kt_rename(s, "/a", "/z", 0);
	say(hold_out, rc == 0 ? 'd' : 'f');
	hear(hold_in);
	kt_close(s);
	return 0;
}

/* Close the fixture's store and start the holder (this program with
 * --holder) on it, talking through holder_fds (to it, from it); then open
 * the store again, as its client. */
static void holder_start(kt_test_fixture *f)
{
	int to_child[2], from_child[2];
	pid_t pid;

	kt_close(f->store);
	f->store = NULL;
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(from_child), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(to_child[0], 0);
		dup2(from_child[1], 1);
		execl("/proc/self/exe", "test_bigop", "--holder", f->path,
		      (char *)NULL);
		_exit(4);
	}
	holder_pid = pid;
	holder_fds[0] = to_child[1];
	holder_fds[1] = from_child[0];
	close(to_child[0]);
	close(from_child[1]);
	assert_int_equal(hear(holder_fds[1]), 'o');
	ok(kt_open(&f->store, f->path, NULL));
}

/* Close the client's store, let the holder close and end, and open the
 * store again. */
static void holder_stop(kt_test_fixture *f)
{
	int status;

	kt_close(f->store);
	f->store = NULL;
	say(holder_fds[0], 'x');
	assert_int_equal(waitpid(holder_pid, &status, 0), holder_pid);
	holder_pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	ok(kt_open(&f->store, f->path, NULL));
}

typedef struct client_find {
	kt_store *s;
	size_t n;
	int rc, done;
	int got; /* whole gets of /other, by get_other */
} client_find;

static void *get_other(void *arg)
{
	client_find *cf = arg;
	void *v;
	size_t vl;

	while (__atomic_load_n(&cf->got, __ATOMIC_ACQUIRE) < 20) {
		if (kt_get(&v, &vl, cf->s, "/other") != 0)
			return NULL;
		kt_free(v);
		__atomic_add_fetch(&cf->got, 1, __ATOMIC_RELEASE);
		usleep(1000);
	}
	return NULL;
}

static void *find_z(void *arg)
{
	client_find *cf = arg;
	kt_iter *it = NULL;
	const kt_entry *e;

	cf->rc = kt_find_new(&it, cf->s, "/z", 0);
	while (cf->rc == 0 && (cf->rc = kt_iter_next(&e, it)) == 0)
		cf->n++;
	kt_iter_free(it);
	__atomic_store_n(&cf->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* While the holder's rename stands parked behind its fence, a client
 * process's thread that reads into the subtree waits, and its other
 * threads, sharing the one connection to the holder, read the rest of the
 * tree: the holder answers a fenced call at once and the client waits
 * (KT__EFENCED), rather than the holder's connection thread waiting for
 * the fence. */
static void test_client_not_held_up(void **state)
{
	kt_test_fixture *f = *state;
	client_find cf;
	pthread_t t, tg;
	size_t nodes = 0;
	kt_iter *it = NULL;
	const kt_entry *e;
	int i, got, finder_waited;

	KT_TEST_LEVELDB_ONLY("the holder and its clients are LevelDB's; on "
			     "RADOS every process is a client of the cluster");

	build(f->store, "/a");
	ok(kt_find_new(&it, f->store, "/a", 0));
	while (kt_iter_next(&e, it) == 0)
		nodes++;
	kt_iter_free(it);
	holder_start(f);
	/* The holder has the store: this process is its client. */
	say(holder_fds[0], 'g');
	assert_int_equal(hear(holder_fds[1]), 'p');
	memset(&cf, 0, sizeof(cf));
	cf.s = f->store;
	assert_int_equal(pthread_create(&t, NULL, find_z, &cf), 0);
	usleep(100000); /* let it reach the fence */
	/* Reads elsewhere go on: 20 gets, given up to 20 s. */
	assert_int_equal(pthread_create(&tg, NULL, get_other, &cf), 0);
	for (i = 0; i < 2000 && __atomic_load_n(&cf.got, __ATOMIC_ACQUIRE) <
					    20; i++)
		usleep(10000);
	got = __atomic_load_n(&cf.got, __ATOMIC_ACQUIRE);
	finder_waited = !__atomic_load_n(&cf.done, __ATOMIC_ACQUIRE);
	say(holder_fds[0], 'c');
	assert_int_equal(hear(holder_fds[1]), 'd');
	pthread_join(t, NULL);
	pthread_join(tg, NULL);
	assert_int_equal(got, 20);
	assert_true(finder_waited);
	/* The finder saw the subtree whole, after the rename. */
	assert_int_equal(cf.rc, KT_ITEROVER);
	assert_int_equal(cf.n, nodes);
	holder_stop(f);
}

typedef struct id_change {
	kt_store *s;
	uint64_t id;
	int rc, done;
} id_change;

static void *put_by_id(void *arg)
{
	id_change *c = arg;

	c->rc = kt_id_put(c->s, c->id, "new", 3, NULL);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A change by id of a node that has left a subtree is not held up by a
 * large rename of that subtree, parked behind its fence in the holder,
 * although the client's id cache still names the node's place in it
 * (api.c: that read is a hint, and a fence over it sends the lookup to
 * the id row). */
static void test_change_by_id_not_held_by_a_fence_it_left(void **state)
{
	kt_test_fixture *f = *state;
	id_change c;
	kt_statbuf sb;
	pthread_t t;
	uint64_t x;
	int i, done;

	KT_TEST_LEVELDB_ONLY("the holder and its clients are LevelDB's; on "
			     "RADOS every process is a client of the cluster");

	build(f->store, "/a");
	put_str(f->store, "/a/moved", "old");
	ok(kt_mkdir(f->store, "/y", NULL));
	holder_start(f);
	x = lstat_of(f->store, "/a/moved").id;
	/* Found by id at /a/moved, then moved out by path. */
	ok(kt_id_lstat(&sb, NULL, NULL, f->store, x));
	ok(kt_rename(f->store, "/a/moved", "/y/moved", 0));
	say(holder_fds[0], 'g');
	assert_int_equal(hear(holder_fds[1]), 'p');
	memset(&c, 0, sizeof(c));
	c.s = f->store;
	c.id = x;
	assert_int_equal(pthread_create(&t, NULL, put_by_id, &c), 0);
	/* Up to 20 s, the fence standing all the while. */
	for (i = 0; i < 2000 && !__atomic_load_n(&c.done, __ATOMIC_ACQUIRE);
	     i++)
		usleep(10000);
	done = __atomic_load_n(&c.done, __ATOMIC_ACQUIRE);
	say(holder_fds[0], 'c');
	assert_int_equal(hear(holder_fds[1]), 'd');
	pthread_join(t, NULL);
	ok(c.rc);
	assert_true(done);
	assert_value(f->store, "/y/moved", "new");
	holder_stop(f);
}

/* Run the child on the fixture's store; it ends at step @p at, with
 * status @p want.  With @p hold, this process keeps the store open, so
 * that the child is a client of it. */
static void run_child(kt_test_fixture *f, int at, int rename, int hold,
		      int want)
{
	char a[16], r[4];
	pid_t pid;
	int status;

	if (!hold) {
		kt_close(f->store);
		f->store = NULL;
	}
	snprintf(a, sizeof(a), "%d", at);
	snprintf(r, sizeof(r), "%d", rename);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "test_bigop", "--child", f->path, a, r,
		      (char *)NULL);
		_exit(4);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), want);
}

static void killed_at(kt_test_fixture *f, int at, int rename)
{
	run_child(f, at, rename, 0, 7);
}

/* A client of the store's holder moves a large subtree in steps: its fence
 * is on the holder, through a connection of its own (server.c). */
static void test_client_in_steps(void **state)
{
	kt_test_fixture *f = *state;
	char *before, *after;
	size_t bad = 99;

	KT_TEST_LEVELDB_ONLY("the holder and its clients are LevelDB's; on "
			     "RADOS every process is a client of the cluster");

	build(f->store, "/a");
	before = shape(f->store, "/a");
	run_child(f, -2, 1, 1, 0);
	after = shape(f->store, "/z");
	assert_string_equal(before, after);
	ok(kt_check(&bad, f->store, NULL));
	assert_int_equal(bad, 0);
	run_child(f, -2, 0, 1, 9); /* no /a any more: the delete fails */
	free(before);
	free(after);
}

/* A client killed between its steps: the holder finishes them from the
 * journal as soon as the client's connection closes, while this process
 * keeps the store open, and its readers then see the whole result. */
static void test_client_killed_between_steps(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf sb;
	char *before, *after;
	size_t bad = 99;

	KT_TEST_LEVELDB_ONLY("the holder and its clients are LevelDB's; on "
			     "RADOS every process is a client of the cluster");

	build(f->store, "/a");
	before = shape(f->store, "/a");
	run_child(f, 3, 1, 1, 7);
	after = shape(f->store, "/z");
	assert_string_equal(before, after);
	expect_rc(kt_lstat(&sb, f->store, "/a"), KT_ENOTFOUND);
	ok(kt_check(&bad, f->store, NULL));
	assert_int_equal(bad, 0);
	/* The same for a delete. */
	build(f->store, "/a");
	run_child(f, 2, 0, 1, 7);
	expect_rc(kt_lstat(&sb, f->store, "/a"), KT_ENOTFOUND);
	ok(kt_stat(&sb, f->store, "/outside/shared"));
	assert_int_equal(sb.nlink, 2); /* its path in /z is left */
	ok(kt_check(&bad, f->store, NULL));
	assert_int_equal(bad, 0);
	free(after);
	free(before);
}

/* The whole result of renaming /a (as @p before) to /z, or of deleting
 * /a, is there. */
static void assert_done(kt_store *s, const char *before, int rename)
{
	kt_statbuf sb;
	char *after;

	expect_rc(kt_lstat(&sb, s, "/a"), KT_ENOTFOUND);
	if (rename) {
		after = shape(s, "/z");
		assert_string_equal(before, after);
		free(after);
	} else {
		expect_rc(kt_lstat(&sb, s, "/z"), KT_ENOTFOUND);
		ok(kt_stat(&sb, s, "/outside/shared"));
		assert_int_equal(sb.nlink, 1);
	}
}

static void crash_case(void **state, int at, int rename)
{
	kt_test_fixture *f = *state;
	kt_options ro = KT_OPTIONS_INIT;
	kt_store *r = NULL;
	char *before;
	size_t bad = 99;

	KT_TEST_LEVELDB_ONLY("the journal that the next open finishes is "
			     "LevelDB's; RADOS: test_killed_*_stage_*");

	build(f->store, "/a");
	before = shape(f->store, "/a");
	killed_at(f, at, rename);
	/* A read-only open cannot finish it, and says so. */
	ro.read_only = 1;
	expect_rc(kt_open(&r, f->path, &ro), KT_EBUSY);
	assert_non_null(strstr(kt_errmsg(), "cut short"));
	/* The next open finishes it: the state after the operation. */
	steps = 0;
	ok(kt_open(&f->store, f->path, NULL));
	assert_true(steps > 0);
	assert_done(f->store, before, rename);
	ok(kt_check(&bad, f->store, NULL));
	assert_int_equal(bad, 0);
	/* And the store is as any other: read-only opens work again. */
	kt_close(f->store);
	ok(kt_open(&r, f->path, &ro));
	kt_close(r);
	ok(kt_open(&f->store, f->path, NULL));
	free(before);
}

static void test_killed_at_commit_point_rename(void **state)
{
	crash_case(state, 0, 1);
}

static void test_killed_between_steps_rename(void **state)
{
	crash_case(state, 4, 1);
}

static void test_killed_at_commit_point_delete(void **state)
{
	crash_case(state, 0, 0);
}

static void test_killed_between_steps_delete(void **state)
{
	crash_case(state, 4, 0);
}

/* ---------------------------------------------------------------------- */
/* RADOS: clients killed in a staged commit */

#define KT_TEST_RADOS_ONLY(why)                                           \
	do {                                                              \
		if (!kt_test_on_rados()) {                                \
			fprintf(stderr, "skipped on LevelDB: %s\n", why); \
			skip();                                           \
		}                                                         \
	} while (0)

/* Killed between two parts of the stage: none of it took effect.  The
 * readers see the subtree as it was, at once; a writer into it waits until
 * the dead client's heartbeat has stood still for a lease, rolls the
 * stage back, and is made; the operation can be made again. */
static void stage_killed_case(void **state, int rename)
{
	kt_test_fixture *f = *state;
	kt_statbuf sb;
	char *before, *after;
	size_t bad = 99;
	void *v = NULL;
	size_t vl = 0;

	KT_TEST_RADOS_ONLY("a staged commit is RADOS's fence");
	build(f->store, "/a");
	before = shape(f->store, "/a");
	run_child(f, 4, rename, 1, 7);
	after = shape(f->store, "/a");
	assert_string_equal(before, after);
	free(after);
	expect_rc(kt_lstat(&sb, f->store, "/z"), KT_ENOTFOUND);
	ok(kt_stat(&sb, f->store, "/outside/shared"));
	assert_int_equal(sb.nlink, 2);
	put_str(f->store, "/a/d0/f0", "new");
	ok(kt_get(&v, &vl, f->store, "/a/d0/f0"));
	assert_int_equal(vl, 3);
	assert_memory_equal(v, "new", 3);
	kt_free(v);
	ok(kt_check(&bad, f->store, NULL));
	assert_int_equal(bad, 0);
	steps = 0;
	if (rename) {
		ok(kt_rename(f->store, "/a", "/z", 0));
		ok(kt_lstat(&sb, f->store, "/z/d2/deep/er/big"));
		assert_int_equal(sb.size, 40000);
	} else {
		ok(kt_delete(f->store, "/a", KT_DELETE_RECURSIVE));
		ok(kt_stat(&sb, f->store, "/outside/shared"));
		assert_int_equal(sb.nlink, 1);
	}
	assert_true(steps > 10);
	expect_rc(kt_lstat(&sb, f->store, "/a"), KT_ENOTFOUND);
	free(before);
}

/* The store checks clean, and what a staged commit left (its header and
 * parts) takes one repair, after which there is nothing to repair. */
static void assert_one_repair(kt_store *s)
{
	size_t bad = 99, fixed = 0;

	ok(kt_check(&bad, s, NULL));
	assert_int_equal(bad, 0);
	ok(kt_repair(&fixed, s, NULL));
	assert_int_equal(fixed, 1);
	ok(kt_repair(&fixed, s, NULL));
	assert_int_equal(fixed, 0);
}

/* Killed just after the stage took effect, before applying it: all of
 * it took effect.  Every reader rolls forward what it meets, and
 * kt_repair removes the records left behind. */
static void stage_committed_case(void **state, int rename)
{
	kt_test_fixture *f = *state;
	char *before;

	KT_TEST_RADOS_ONLY("a staged commit is RADOS's fence");
	build(f->store, "/a");
	before = shape(f->store, "/a");
	run_child(f, -3, rename, 1, 7);
	assert_done(f->store, before, rename);
	assert_one_repair(f->store);
	free(before);
}

/* RADOS: one object's apply of a staged commit fails after its commit
 * point (an OSD error, say).  The operation has taken effect and says so;
 * the object stays locked, and the header and the parts stay with it, so
 * that the next reader rolls it forward; an object of several parts gets
 * none of its later parts meanwhile, and stays locked.  (The writer used
 * to remove them all the same, and a reader then undid that object's lock
 * as one whose header is gone, losing its part of an acknowledged rename;
 * and a later part applied fenced out the failed one.) */
static void apply_lost_case(void **state, int rename)
{
#ifdef KT_HAVE_RADOS
	/* The first object of the first part; one of an object of several
	 * parts (whose later parts must then wait); a later one. */
	static const int fail_at[] = {1, 4, 6};
	kt_test_fixture *f = *state;
	size_t i;
	unsigned long held = kt__rados_test_parts_held;
	char *before;

	KT_TEST_RADOS_ONLY("a staged commit is RADOS's fence");
	for (i = 0; i < sizeof(fail_at) / sizeof(fail_at[0]); i++) {
		build(f->store, "/a");
		before = shape(f->store, "/a");
		steps = 0;
		kt__rados_test_apply_fail = fail_at[i];
		if (rename)
			ok(kt_rename(f->store, "/a", "/z", 0));
		else
			ok(kt_delete(f->store, "/a", KT_DELETE_RECURSIVE));
		/* It did fail one. */
		assert_int_equal(kt__rados_test_apply_fail, 0);
		assert_true(steps > 10);
		assert_done(f->store, before, rename);
		/* The header and its parts, left for the readers. */
		assert_one_repair(f->store);
		assert_done(f->store, before, rename);
		if (rename)
			ok(kt_delete(f->store, "/z", KT_DELETE_RECURSIVE));
		free(before);
	}
	/* One of them was an object of several parts. */
	assert_true(kt__rados_test_parts_held > held);
#else
	(void)state;
	skip();
#endif
}

static void test_apply_lost_rename(void **state)
{
	apply_lost_case(state, 1);
}

static void test_apply_lost_delete(void **state)
{
	apply_lost_case(state, 0);
}

/* RADOS: watchers hear a staged rename, once it has taken effect, names
 * from every part of it included (the top's in the first part, the
 * deepest in the last). */
typedef struct heard {
	pthread_mutex_t mu;
	kt_test_str names; /* "dir|name\n" per NAME change */
} heard;

static void hear_names(const kt_change *c, size_t n, void *payload)
{
	heard *h = payload;
	size_t i;

	pthread_mutex_lock(&h->mu);
	for (i = 0; i < n; i++)
		if (c[i].what == KT_CHANGE_NAME)
			kt_test_str_addf(&h->names, "%.*s|%.*s\n",
					 (int)c[i].dir_len, c[i].dir,
					 (int)c[i].name_len, c[i].name);
	pthread_mutex_unlock(&h->mu);
}

static int heard_has(heard *h, const char *line)
{
	int has;

	pthread_mutex_lock(&h->mu);
	has = h->names.p != NULL && strstr(h->names.p, line) != NULL;
	pthread_mutex_unlock(&h->mu);
	return has;
}

static void test_watchers_hear_stage(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *w = NULL;
	heard h;
	int i;

	KT_TEST_RADOS_ONLY("a staged commit is RADOS's fence");
	memset(&h, 0, sizeof(h));
	pthread_mutex_init(&h.mu, NULL);
	build(f->store, "/a");
	ok(kt_open(&w, f->path, NULL));
	ok(kt_watch(w, hear_names, &h));
	steps = 0;
	ok(kt_rename(f->store, "/a", "/z", 0));
	assert_true(steps > 10);
	/* The rename returns once the watchers have acknowledged, 2 s at
	 * most; give their thread a little longer to run the callback. */
	for (i = 0; i < 500 && !(heard_has(&h, "/z/d5|f7\n") &&
				 heard_has(&h, "/|z\n")); i++)
		usleep(10000);
	assert_true(heard_has(&h, "/|a\n"));
	assert_true(heard_has(&h, "/|z\n"));
	assert_true(heard_has(&h, "/z/d0|f0\n"));
	assert_true(heard_has(&h, "/z/d5|f7\n"));
	assert_true(heard_has(&h, "/a/d5|f7\n"));
	ok(kt_watch(w, NULL, NULL));
	kt_close(w);
	free(h.names.p);
	pthread_mutex_destroy(&h.mu);
}

static void test_killed_in_stage_rename(void **state)
{
	stage_killed_case(state, 1);
}

static void test_killed_in_stage_delete(void **state)
{
	stage_killed_case(state, 0);
}

static void test_killed_after_stage_rename(void **state)
{
	stage_committed_case(state, 1);
}

static void test_killed_after_stage_delete(void **state)
{
	stage_committed_case(state, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rename_in_steps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_delete_in_steps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_small_is_one_commit,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_middle_is_one_commit,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_outside_path_at_commit_point, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits_before_commit_point,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_readers_during_steps,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_not_held_up,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_change_by_id_not_held_by_a_fence_it_left, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_client_in_steps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_client_killed_between_steps, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_killed_at_commit_point_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_killed_between_steps_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_killed_at_commit_point_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_killed_between_steps_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_in_stage_rename,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_in_stage_delete,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_after_stage_rename,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_after_stage_delete,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_watchers_hear_stage,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_lost_rename, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_apply_lost_delete, setup,
						teardown),
	};

	if (argc == 5 && strcmp(argv[1], "--child") == 0)
		return child(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 3 && strcmp(argv[1], "--holder") == 0)
		return holder(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
