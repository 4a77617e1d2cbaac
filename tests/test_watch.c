/*
 * test_watch.c - kt_watch(): a process hears what other processes commit
 * to a store they share, as names and node ids, and before the committing
 * call of a process that watches nothing returns.  Also: the orphans a
 * client leaves are dropped by the holder when the client goes.
 *
 * Other processes are forked children that open the store (the first
 * opener holds it, the others connect) and obey commands, one line each,
 * on a pipe: they answer "<rc> <id>" once the call has returned.  Every
 * test arms alarm(): a hang fails the test program.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>

#include "kt_test.h"

#define GUARD_SECONDS 60

/* ---- What the watcher heard ------------------------------------------- */

static pthread_mutex_t heard_mu = PTHREAD_MUTEX_INITIALIZER;
static char heard[64 * 1024]; /* "name /dir x\n", "node 12\n", ... */
static size_t heard_len;
static unsigned int heard_calls;
/* With block set, the callback waits until it is cleared. */
static pthread_cond_t heard_cv = PTHREAD_COND_INITIALIZER;
static int block;

static void heard_add(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static int heard_has(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void heard_add(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(heard + heard_len, sizeof(heard) - heard_len, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(heard) - heard_len)
		heard_len += (size_t)n;
}

static void on_change(const kt_change *ch, size_t n, void *payload)
{
	size_t i;

	assert_ptr_equal(payload, &heard);
	pthread_mutex_lock(&heard_mu);
	while (block)
		pthread_cond_wait(&heard_cv, &heard_mu);
	for (i = 0; i < n; i++) {
		if (ch[i].what == KT_CHANGE_NODE)
			heard_add("node %llu\n", (unsigned long long)ch[i].id);
		else
			heard_add("name %.*s %.*s\n", (int)ch[i].dir_len,
				  ch[i].dir, (int)ch[i].name_len, ch[i].name);
	}
	heard_calls++;
	pthread_mutex_unlock(&heard_mu);
}

static void heard_clear(void)
{
	pthread_mutex_lock(&heard_mu);
	heard_len = 0;
	heard[0] = '\0';
	heard_calls = 0;
	pthread_mutex_unlock(&heard_mu);
}

/* Has the watcher heard the line @p line (without its newline)? */
static int heard_has(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	const char *p;
	size_t n;
	int found = 0;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	line[n++] = '\n';
	line[n] = '\0';
	pthread_mutex_lock(&heard_mu);
	heard[heard_len] = '\0';
	for (p = heard; *p != '\0'; p = strchr(p, '\n') + 1)
		if (strncmp(p, line, n) == 0) {
			found = 1;
			break;
		}
	pthread_mutex_unlock(&heard_mu);
	return found;
}

static void set_block(int on)
{
	pthread_mutex_lock(&heard_mu);
	block = on;
	pthread_cond_broadcast(&heard_cv);
	pthread_mutex_unlock(&heard_mu);
}

/* ---- Other processes -------------------------------------------------- */

typedef struct peer {
	pid_t pid;
	FILE *to;
	FILE *from;
} peer;

/* Run one command of a peer; the line it answers. */
static void peer_do(kt_store *st, char *cmd, FILE *out)
{
	char *a = strtok(cmd, " \n"), *b = strtok(NULL, " \n");
	char *c = strtok(NULL, " \n");
	uint64_t id = 0;
	kt_statbuf sb;
	int rc;

	if (a == NULL) {
		rc = -999;
	} else if (strcmp(a, "put") == 0 && b && c) {
		rc = kt_put(st, b, c, strlen(c), NULL);
	} else if (strcmp(a, "mkdir") == 0 && b) {
		rc = kt_mkdir(st, b, NULL);
	} else if (strcmp(a, "mv") == 0 && b && c) {
		rc = kt_rename(st, b, c, 0);
	} else if (strcmp(a, "rm") == 0 && b) {
		rc = kt_delete(st, b, KT_DELETE_RECURSIVE);
	} else if (strcmp(a, "attr") == 0 && b && c) {
		rc = kt_attr_set(st, b, c, "v", 1, 0);
	} else if (strcmp(a, "chmod") == 0 && b) {
		kt_setattr_args sa = KT_SETATTR_ARGS_INIT;

		sa.mask = KT_SET_MODE;
		sa.mode = 0600;
		rc = kt_setattr(st, b, &sa, 0);
	} else if (strcmp(a, "orphan") == 0 && b) {
		rc = kt_orphan_detach(&id, st, b);
	} else if (strcmp(a, "stat") == 0 && b) {
		rc = kt_lstat(&sb, st, b);
		id = rc == 0 ? sb.id : 0;
	} else if (strcmp(a, "die") == 0) {
		_exit(0); /* gone without closing: as if killed */
	} else {
		rc = -998;
	}
	fprintf(out, "%d %llu\n", rc, (unsigned long long)id);
	fflush(out);
}

static void peer_main(const char *dir, int in, int out, int holder)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	FILE *fin = fdopen(in, "r"), *fout = fdopen(out, "w");
	char line[512];
	int rc;

	alarm(GUARD_SECONDS);
	rc = kt_open(&st, dir, &o);
	fprintf(fout, "%d %d\n", rc, holder);
	fflush(fout);
	if (rc != 0)
		_exit(2);
	while (fgets(line, sizeof(line), fin) != NULL) {
		if (strncmp(line, "quit", 4) == 0)
			break;
		peer_do(st, line, fout);
	}
	kt_close(st);
	_exit(0);
}

static void peer_start(peer *p, const char *dir, int holder)
{
	int down[2], up[2], rc = -1, ok = 0;

	assert_int_equal(pipe(down), 0);
	assert_int_equal(pipe(up), 0);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		close(down[1]);
		close(up[0]);
		peer_main(dir, down[0], up[1], holder);
	}
	close(down[0]);
	close(up[1]);
	p->to = fdopen(down[1], "w");
	p->from = fdopen(up[0], "r");
	assert_int_equal(fscanf(p->from, "%d %d", &rc, &ok), 2);
	assert_int_equal(rc, 0);
}

/* Have peer @p p run @p cmd; its result, and an id in *id. */
static int peer_cmd(peer *p, uint64_t *id, const char *cmd)
{
	unsigned long long v = 0;
	int rc = -1;

	fprintf(p->to, "%s\n", cmd);
	fflush(p->to);
	assert_int_equal(fscanf(p->from, "%d %llu", &rc, &v), 2);
	if (id != NULL)
		*id = v;
	return rc;
}

static void peer_stop(peer *p, int die)
{
	int status = 0;

	fprintf(p->to, die ? "die\n" : "quit\n");
	fflush(p->to);
	assert_int_equal(waitpid(p->pid, &status, 0), p->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	fclose(p->to);
	fclose(p->from);
}

/* ---- Fixture ---------------------------------------------------------- */

static int setup(void **state)
{
	kt_test_fixture *f;

	if (kt_test_setup(state) != 0)
		return -1;
	f = *state;
	kt_close(f->store);
	f->store = NULL;
	heard_clear();
	set_block(0);
	alarm(GUARD_SECONDS);
	return 0;
}

static int teardown(void **state)
{
	alarm(0);
	return kt_test_teardown(state);
}

static kt_store *open_store(const char *dir)
{
	kt_store *st = NULL;
	int rc = kt_open(&st, dir, NULL);

	if (rc != 0)
		fail_msg("kt_open: %d (%s)", rc, kt_errmsg());
	return st;
}

static uint64_t id_of(kt_store *st, const char *path)
{
	kt_statbuf sb;

	assert_int_equal(kt_lstat(&sb, st, path), 0);
	return sb.id;
}

/* ---- Tests ------------------------------------------------------------ */

/* The holder watches; a client's put is heard before the put returns in
 * the client: names of the new directory and item, and the item's id. */
static void test_watch__holder_hears_client(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = open_store(f->path);
	peer p;

	assert_int_equal(kt_watch(st, on_change, &heard), 0);
	peer_start(&p, f->path, 0);
	assert_int_equal(peer_cmd(&p, NULL, "put /a/b one"), 0);
	/* No waiting here: the client's call returned only after the
	 * watcher had heard. */
	assert_true(heard_has("name / a"));
	assert_true(heard_has("name /a b"));
	assert_true(heard_has("node %llu",
			      (unsigned long long)id_of(st, "/a/b")));
	assert_true(heard_has("node %llu",
			      (unsigned long long)id_of(st, "/a")));
	peer_stop(&p, 0);
	kt_close(st);
}

/* A client watches: it hears the holder's commits and another client's,
 * never its own. */
static void test_watch__client_hears_others_not_itself(void **state)
{
	kt_test_fixture *f = *state;
	peer h, other;
	kt_store *st;
	uint64_t id = 0;

	peer_start(&h, f->path, 1);
	st = open_store(f->path);
	assert_int_equal(kt_watch(st, on_change, &heard), 0);
	peer_start(&other, f->path, 0);

	assert_int_equal(kt_put(st, "/mine", "m", 1, NULL), 0);
	assert_int_equal(peer_cmd(&h, NULL, "put /from-holder x"), 0);
	assert_true(heard_has("name / from-holder"));
	assert_int_equal(peer_cmd(&other, NULL, "put /d/f y"), 0);
	assert_int_equal(peer_cmd(&other, &id, "stat /d/f"), 0);
	assert_true(heard_has("name /d f"));
	assert_true(heard_has("node %llu", (unsigned long long)id));
	/* Its own put was not reported to itself. */
	assert_false(heard_has("name / mine"));

	/* A rename: both names and the node. */
	heard_clear();
	assert_int_equal(peer_cmd(&other, NULL, "mv /d/f /g"), 0);
	assert_true(heard_has("name /d f"));
	assert_true(heard_has("name / g"));
	assert_true(heard_has("node %llu", (unsigned long long)id));

	/* Metadata and attributes of a node: its id. */
	heard_clear();
	assert_int_equal(peer_cmd(&h, NULL, "chmod /g"), 0);
	assert_true(heard_has("node %llu", (unsigned long long)id));
	heard_clear();
	assert_int_equal(peer_cmd(&other, NULL, "attr /g user.x"), 0);
	assert_true(heard_has("node %llu", (unsigned long long)id));

	/* A delete: the name and, from the id row, the node. */
	heard_clear();
	assert_int_equal(peer_cmd(&h, NULL, "rm /g"), 0);
	assert_true(heard_has("name / g"));
	assert_true(heard_has("node %llu", (unsigned long long)id));

	peer_stop(&other, 0);
	kt_close(st);
	peer_stop(&h, 0);
}

/* A recursive delete or a rename of a subtree reports every name in it. */
static void test_watch__subtree_names(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = open_store(f->path);
	peer p;

	assert_int_equal(kt_put(st, "/t/u/v", "1", 1, NULL), 0);
	assert_int_equal(kt_put(st, "/t/w", "2", 1, NULL), 0);
	assert_int_equal(kt_watch(st, on_change, &heard), 0);
	peer_start(&p, f->path, 0);
	assert_int_equal(peer_cmd(&p, NULL, "mv /t /s"), 0);
	assert_true(heard_has("name / t"));
	assert_true(heard_has("name / s"));
	assert_true(heard_has("name /t/u v"));
	assert_true(heard_has("name /s/u v"));
	assert_true(heard_has("name /s w"));
	heard_clear();
	assert_int_equal(peer_cmd(&p, NULL, "rm /s"), 0);
	assert_true(heard_has("name /s/u v"));
	assert_true(heard_has("name / s"));
	/* One commit, one call, each change once.  (Made in steps, as
	 * test_watch_steps makes it, a large delete is one commit per
	 * step, each heard on its own.) */
	if (getenv("KEYTREE_TEST_BIG_ROWS") == NULL)
		assert_int_equal(heard_calls, 1);
	assert_false(strstr(heard, "name /s/u v\nname /s/u v\n") != NULL);
	peer_stop(&p, 0);
	kt_close(st);
}

/* A create inside an existing directory rewrites the directory's node
 * row (its mtime): that is heard as the directory's id, to forget its
 * attributes, not as its name, which would make a mount drop everything
 * its kernel cached under the directory at every create there. */
static void test_watch__update_is_node_not_name(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = open_store(f->path);
	peer p;

	assert_int_equal(kt_put(st, "/a/x", "1", 1, NULL), 0);
	assert_int_equal(kt_watch(st, on_change, &heard), 0);
	peer_start(&p, f->path, 0);
	assert_int_equal(peer_cmd(&p, NULL, "put /a/b one"), 0);
	assert_true(heard_has("name /a b"));
	assert_true(heard_has("node %llu",
			      (unsigned long long)id_of(st, "/a")));
	assert_false(heard_has("name / a"));
	peer_stop(&p, 0);
	kt_close(st);
}

/* kt_watch(NULL) stops; a second callback is refused; watching again
 * after stopping works. */
static void test_watch__stop_and_again(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = open_store(f->path);
	peer p;

	assert_int_equal(kt_watch(st, on_change, &heard), 0);
	assert_int_equal(kt_watch(st, on_change, &heard), KT_EEXISTS);
	assert_non_null(strstr(kt_errmsg(), "watched already"));
	peer_start(&p, f->path, 0);
	assert_int_equal(kt_watch(st, NULL, NULL), 0);
	assert_int_equal(peer_cmd(&p, NULL, "put /x 1"), 0);
	assert_false(heard_has("name / x"));
	assert_int_equal(kt_watch(st, on_change, &heard), 0);
	assert_int_equal(peer_cmd(&p, NULL, "put /y 1"), 0);
	assert_true(heard_has("name / y"));
	assert_false(heard_has("name / x"));
	peer_stop(&p, 0);
	kt_close(st);
}

/* A watcher that does not answer holds a writer back for a bounded time
 * only: the write returns, and the watcher hears it once it goes on. */
static void test_watch__stuck_watcher_does_not_hang_writers(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = open_store(f->path);
	peer p;

	assert_int_equal(kt_watch(st, on_change, &heard), 0);
	peer_start(&p, f->path, 0);
	set_block(1);
	assert_int_equal(peer_cmd(&p, NULL, "put /late 1"), 0);
	assert_int_equal(peer_cmd(&p, NULL, "put /later 2"), 0);
	assert_false(heard_has("name / late"));
	set_block(0);
	/* It hears both, in order; wait for that without a clock. */
	assert_int_equal(peer_cmd(&p, NULL, "put /sync 3"), 0);
	assert_true(heard_has("name / late"));
	assert_true(heard_has("name / later"));
	assert_true(heard_has("name / sync"));
	peer_stop(&p, 0);
	kt_close(st);
}

/* A client that watches, and whose holder exits: its watch ends quietly
 * and its calls fail with KT_EIO, nothing hangs. */
static void test_watch__holder_exit_ends_watch(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf sb;
	kt_store *st;
	peer h;

	peer_start(&h, f->path, 1);
	st = open_store(f->path);
	assert_int_equal(kt_watch(st, on_change, &heard), 0);
	peer_stop(&h, 1);
	assert_int_equal(kt_lstat(&sb, st, "/"), KT_EIO);
	assert_int_equal(kt_watch(st, NULL, NULL), 0);
	kt_close(st);
}

/* The orphans of a client stay while it lives, and go with it. */
static void test_watch__client_orphans_dropped_when_it_goes(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = open_store(f->path);
	kt_statbuf sb;
	uint64_t id = 0, mine = 0;
	peer p;
	int i, rc;

	assert_int_equal(kt_put(st, "/keep", "k", 1, NULL), 0);
	assert_int_equal(kt_put(st, "/gone", "g", 1, NULL), 0);
	assert_int_equal(kt_orphan_detach(&mine, st, "/keep"), 0);
	peer_start(&p, f->path, 0);
	assert_int_equal(peer_cmd(&p, &id, "orphan /gone"), 0);
	assert_true(id != 0);
	assert_int_equal(kt_orphan_stat(&sb, st, id), 0);
	peer_stop(&p, 1); /* exits without closing the store */
	/* The holder notices the connection close on its own thread. */
	for (i = 0; i < 500; i++) {
		if ((rc = kt_orphan_stat(&sb, st, id)) != 0)
			break;
		usleep(10000);
	}
	assert_int_equal(rc, KT_ENOTFOUND);
	/* The holder's own orphan is untouched. */
	assert_int_equal(kt_orphan_stat(&sb, st, mine), 0);
	{
		size_t bad = 99;

		assert_int_equal(kt_check(&bad, st, NULL), 0);
		assert_int_equal(bad, 0);
	}
	kt_close(st);
}

/* ---- RADOS: each handle is a cluster client of its own --------------- */

/* A watching handle hears another handle's commit before that commit's
 * call returns (the other watches nothing, so it waits for the
 * acknowledgement): names and ids, and every name a rename moves. */
static void test_watch__rados_hears_other_handle(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *a = open_store(f->path), *b = open_store(f->path);

	assert_int_equal(kt_watch(a, on_change, &heard), 0);
	assert_int_equal(kt_put(b, "/a/b", "one", 3, NULL), 0);
	/* No waiting here. */
	assert_true(heard_has("name / a"));
	assert_true(heard_has("name /a b"));
	assert_true(heard_has("node %llu",
			      (unsigned long long)id_of(b, "/a/b")));
	heard_clear();
	assert_int_equal(kt_rename(b, "/a", "/z", 0), 0);
	assert_true(heard_has("name / a"));
	assert_true(heard_has("name / z"));
	assert_true(heard_has("name /z b"));
	assert_int_equal(heard_calls, 1);
	kt_close(b);
	kt_close(a);
}

/* What a second watcher heard: the names, one per line. */
static pthread_mutex_t heard_b_mu = PTHREAD_MUTEX_INITIALIZER;
static char heard_b[4096];

static void on_change_b(const kt_change *ch, size_t n, void *payload)
{
	size_t i, len;

	(void)payload;
	pthread_mutex_lock(&heard_b_mu);
	for (i = 0; i < n; i++) {
		len = strlen(heard_b);
		if (ch[i].what == KT_CHANGE_NAME)
			snprintf(heard_b + len, sizeof(heard_b) - len,
				 "%.*s\n", (int)ch[i].name_len, ch[i].name);
	}
	pthread_mutex_unlock(&heard_b_mu);
}

/* A watching handle is not told its own commits; another watcher is,
 * from its hello on (a had looked who watches just before), and the
 * watching writer does not wait for it. */
static void test_watch__rados_not_itself(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *a = open_store(f->path), *b = open_store(f->path);
	kt_store *c = open_store(f->path);
	int b_heard;

	heard_b[0] = '\0';
	assert_int_equal(kt_watch(a, on_change, &heard), 0);
	/* a looks who watches: nobody else yet, and it keeps that answer
	 * for a second, but b's hello overrides it. */
	assert_int_equal(kt_put(a, "/before", "0", 1, NULL), 0);
	assert_int_equal(kt_watch(b, on_change_b, NULL), 0);
	assert_int_equal(kt_put(a, "/mine", "1", 1, NULL), 0);
	/* c watches nothing: its put returns once a and b acknowledged it,
	 * and each hears notes in the order the watch object got them, so
	 * a's own note, sent before, has been passed on or dropped. */
	assert_int_equal(kt_put(c, "/theirs", "2", 1, NULL), 0);
	assert_true(heard_has("name / theirs"));
	assert_false(heard_has("name / mine"));
	pthread_mutex_lock(&heard_b_mu);
	b_heard = strstr(heard_b, "mine\n") != NULL &&
		  strstr(heard_b, "theirs\n") != NULL;
	pthread_mutex_unlock(&heard_b_mu);
	assert_true(b_heard);
	kt_close(c);
	kt_close(b);
	kt_close(a);
}

/* A handle that watches nothing and read who watches just before a
 * watcher started (nobody) keeps that answer for a second; its commits
 * right after kt_watch() returned are heard all the same, since
 * kt_watch() returns only once every such answer has run out. */
static void test_watch__rados_new_watcher_misses_nothing(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *a = open_store(f->path), *b = open_store(f->path);

	/* b commits, and so reads who watches: nobody. */
	assert_int_equal(kt_put(b, "/early", "0", 1, NULL), 0);
	assert_int_equal(kt_watch(a, on_change, &heard), 0);
	assert_int_equal(kt_put(b, "/late", "1", 1, NULL), 0);
	/* b watches nothing, so once its put returned a has heard it. */
	assert_true(heard_has("name / late"));
	kt_close(b);
	kt_close(a);
}

/* kt_watch(NULL) stops; a second callback is refused; watching again
 * works (once the others have read who watches, at most a second
 * later). */
static void test_watch__rados_stop_and_again(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *a = open_store(f->path), *b = open_store(f->path);

	assert_int_equal(kt_watch(a, on_change, &heard), 0);
	assert_int_equal(kt_watch(a, on_change, &heard), KT_EEXISTS);
	assert_non_null(strstr(kt_errmsg(), "watched already"));
	assert_int_equal(kt_watch(a, NULL, NULL), 0);
	assert_int_equal(kt_put(b, "/x", "1", 1, NULL), 0);
	assert_false(heard_has("name / x"));
	assert_int_equal(kt_watch(a, on_change, &heard), 0);
	usleep(1200 * 1000); /* past b's cached answer (WATCHERS_MS) */
	assert_int_equal(kt_put(b, "/y", "1", 1, NULL), 0);
	assert_true(heard_has("name / y"));
	assert_false(heard_has("name / x"));
	kt_close(b);
	kt_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_watch__holder_hears_client,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_watch__client_hears_others_not_itself, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_watch__update_is_node_not_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch__subtree_names,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch__stop_and_again,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_watch__stuck_watcher_does_not_hang_writers, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_watch__holder_exit_ends_watch, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_watch__client_orphans_dropped_when_it_goes, setup,
			teardown),
	};

	const struct CMUnitTest rados_tests[] = {
		cmocka_unit_test_setup_teardown(
			test_watch__rados_hears_other_handle, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_watch__rados_new_watcher_misses_nothing, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_watch__rados_not_itself,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_watch__rados_stop_and_again, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	/* On RADOS there is no holder and librados does not survive a
	 * fork: the tests there use several handles of this process, each
	 * its own cluster client. */
	if (kt_test_on_rados())
		return cmocka_run_group_tests(rados_tests, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
