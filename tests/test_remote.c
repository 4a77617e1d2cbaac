/*
 * test_remote.c - one store, several processes: a forked child holds the
 * store (its kt_open got the LevelDB lock, and it serves the store on
 * DIR/keytree.sock), and this process, or further forked children, open
 * the same store and work on it through the holder.
 *
 * Every test arms alarm() first: a client that hangs waiting for a holder
 * kills the test program (a failure) instead of blocking the suite.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "kt_test.h"

#define GUARD_SECONDS 60

/* A holder child: it opens the store, says 'o' (or 'e') on up, then obeys
 * one-byte commands from down until 'q' or the end of the pipe. */
typedef struct holder {
	pid_t pid;
	int up;   /* read the child's answers */
	int down; /* write commands */
} holder;

static int put_str(kt_store *st, const char *path, const char *v)
{
	return kt_put(st, path, v, strlen(v), NULL);
}

/* The value at @p path as a string ("" when absent); free it. */
static char *get_str(kt_store *st, const char *path)
{
	void *v = NULL;
	size_t len = 0;
	char *s;

	if (kt_get(&v, &len, st, path) != 0)
		return strdup("");
	s = malloc(len + 1);
	assert_non_null(s);
	memcpy(s, v, len);
	s[len] = '\0';
	kt_free(v);
	return s;
}

static void holder_main(const char *dir, int up, int down)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char c;

	alarm(GUARD_SECONDS); /* alarms are not inherited */
	o.create_if_missing = 1;
	c = kt_open(&st, dir, &o) == 0 ? 'o' : 'e';
	if (write(up, &c, 1) != 1 || c != 'o')
		_exit(2);
	while (read(down, &c, 1) == 1 && c != 'q') {
		char *v;
		char ans = 'y';

		switch (c) {
		case 'w': /* write something the client will read */
			if (put_str(st, "/from-holder", "held") != 0)
				ans = 'n';
			break;
		case 'r': /* read what the client wrote */
			v = get_str(st, "/from-client");
			ans = strcmp(v, "sent") == 0 ? 'y' : 'n';
			free(v);
			break;
		default:
			ans = '?';
		}
		if (write(up, &ans, 1) != 1)
			_exit(3);
	}
	kt_close(st);
	_exit(0);
}

static void holder_start(holder *h, const char *dir)
{
	int up[2], down[2];
	char c = 0;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	h->pid = fork();
	assert_true(h->pid >= 0);
	if (h->pid == 0) {
		close(up[0]);
		close(down[1]);
		holder_main(dir, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	h->up = up[0];
	h->down = down[1];
	assert_int_equal(read(h->up, &c, 1), 1);
	assert_int_equal(c, 'o');
}

/* Send the holder command @p c; its one-byte answer. */
static char holder_ask(holder *h, char c)
{
	char ans = 0;

	assert_int_equal(write(h->down, &c, 1), 1);
	assert_int_equal(read(h->up, &ans, 1), 1);
	return ans;
}

/* Tell the holder to close the store and exit; wait for it. */
static void holder_stop(holder *h)
{
	char c = 'q';
	int status = 0;

	assert_int_equal(write(h->down, &c, 1), 1);
	assert_int_equal(waitpid(h->pid, &status, 0), h->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(h->up);
	close(h->down);
}

/* The fixture's store, created and closed, so that a child can hold it. */
static int setup(void **state)
{
	kt_test_fixture *f;

	if (kt_test_setup(state) != 0)
		return -1;
	f = *state;
	kt_close(f->store);
	f->store = NULL;
	alarm(GUARD_SECONDS);
	return 0;
}

static int teardown(void **state)
{
	alarm(0);
	return kt_test_teardown(state);
}

static kt_store *open_client(const char *dir, int read_only)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	int rc;

	o.read_only = read_only;
	rc = kt_open(&st, dir, &o);
	if (rc != 0)
		fail_msg("kt_open through the holder: %d (%s)", rc,
			 kt_errmsg());
	return st;
}

static void check_clean(kt_store *st)
{
	size_t bad = 99;

	assert_int_equal(kt_check(&bad, st, NULL), 0);
	assert_int_equal(bad, 0);
}

/* Names of the children of @p dir, in pages of @p page entries, joined
 * with ',' into a string to free. */
static char *list_paged(kt_store *st, const char *dir, size_t page,
			size_t *count)
{
	kt_test_str s = {0};
	char last[KT_NAME_MAX + 1] = "";
	size_t got;

	*count = 0;
	kt_test_str_add(&s, "", 0);
	do {
		kt_list_options lo = KT_LIST_OPTIONS_INIT;
		kt_iter *it = NULL;
		const kt_entry *e;
		int rc;

		lo.limit = page;
		if (*count > 0) {
			lo.after = last;
			lo.after_len = strlen(last);
		}
		assert_int_equal(kt_iter_new(&it, st, dir, &lo), 0);
		got = 0;
		while ((rc = kt_iter_next(&e, it)) == 0) {
			if (*count > 0)
				kt_test_str_add(&s, ",", 1);
			kt_test_str_add(&s, e->name, e->name_len);
			memcpy(last, e->name, e->name_len);
			last[e->name_len] = '\0';
			(*count)++;
			got++;
		}
		assert_int_equal(rc, KT_ITEROVER);
		kt_iter_free(it);
	} while (got == page);
	return s.p;
}

static void test_remote__client_does_everything(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st;
	kt_statbuf sb;
	kt_batch *b = NULL;
	kt_iter *it = NULL;
	const kt_entry *e;
	holder h;
	char *s, *big, *back, name[64];
	void *v = NULL;
	size_t len = 0, n, i, big_len = 5 * 16384 + 123;
	int rc;

	holder_start(&h, f->path);
	st = open_client(f->path, 0);

	/* put, get, stat */
	assert_int_equal(put_str(st, "/a/b", "hello"), 0);
	s = get_str(st, "/a/b");
	assert_string_equal(s, "hello");
	free(s);
	assert_int_equal(kt_stat(&sb, st, "/a/b"), 0);
	assert_int_equal(sb.size, 5);
	assert_true(sb.kind & KT_KIND_ITEM);
	assert_int_equal(kt_stat(&sb, st, "/nope"), KT_ENOTFOUND);

	/* A listing of more rows than one batch, in pages. */
	for (i = 0; i < 700; i++) {
		snprintf(name, sizeof(name), "/many/n%04zu", i);
		assert_int_equal(put_str(st, name, "x"), 0);
	}
	s = list_paged(st, "/many", 64, &n);
	assert_int_equal(n, 700);
	assert_non_null(strstr(s, "n0000,n0001,"));
	assert_non_null(strstr(s, ",n0699"));
	free(s);
	s = list_paged(st, "/many", 100000, &n);
	assert_int_equal(n, 700);
	free(s);

	/* find */
	assert_int_equal(kt_find_new(&it, st, "/many/n069", 0), 0);
	n = 0;
	while ((rc = kt_iter_next(&e, it)) == 0)
		n++;
	assert_int_equal(rc, KT_ITEROVER);
	assert_int_equal(n, 10);
	kt_iter_free(it);

	/* batch */
	assert_int_equal(kt_batch_new(&b, st), 0);
	assert_int_equal(kt_batch_put(b, "/batch/one", "1", 1, NULL), 0);
	assert_int_equal(kt_batch_put(b, "/batch/two", "2", 1, NULL), 0);
	assert_int_equal(kt_batch_rename(b, "/batch/one", "/batch/uno", 0), 0);
	assert_int_equal(kt_batch_commit(b), 0);
	kt_batch_free(b);
	assert_int_equal(kt_stat(&sb, st, "/batch/uno"), 0);
	assert_int_equal(kt_stat(&sb, st, "/batch/one"), KT_ENOTFOUND);

	/* rename and delete, and their errors as locally */
	assert_int_equal(kt_rename(st, "/a/b", "/a/c", 0), 0);
	assert_int_equal(kt_rename(st, "/a/b", "/a/d", 0), KT_ENOTFOUND);
	assert_true(kt_errmsg()[0] != '\0');
	assert_int_equal(kt_delete(st, "/a", 0), KT_ENOTEMPTY);
	assert_int_equal(kt_delete(st, "/a", KT_DELETE_RECURSIVE), 0);
	assert_int_equal(kt_stat(&sb, st, "/a/c"), KT_ENOTFOUND);

	/* attributes */
	assert_int_equal(kt_attr_set(st, "/batch/two", "user.k", "val", 3, 0),
			 0);
	assert_int_equal(kt_attr_get(&v, &len, st, "/batch/two", "user.k"), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(v, "val", 3);
	kt_free(v);
	assert_int_equal(kt_attr_set(st, "/batch/two", "user.k", "w", 1,
				     KT_ATTR_CREATE),
			 KT_EEXISTS);
	assert_int_equal(kt_attr_delete(st, "/batch/two", "user.k"), 0);
	assert_int_equal(kt_attr_get(&v, &len, st, "/batch/two", "user.k"),
			 KT_ENOATTR);

	/* a large value over several blocks, and ranged writes and reads */
	big = malloc(big_len);
	back = malloc(big_len);
	assert_non_null(big);
	assert_non_null(back);
	for (i = 0; i < big_len; i++)
		big[i] = (char)(i * 7 + i / 251);
	assert_int_equal(kt_put(st, "/big", big, big_len, NULL), 0);
	assert_int_equal(kt_write(st, "/big", "PATCH", 5, 20000), 0);
	memcpy(big + 20000, "PATCH", 5);
	assert_int_equal(kt_read(&n, st, "/big", back, big_len, 0), 0);
	assert_int_equal(n, big_len);
	assert_memory_equal(back, big, big_len);
	assert_int_equal(kt_read(&n, st, "/big", back, 10, 19998), 0);
	assert_int_equal(n, 10);
	assert_memory_equal(back, big + 19998, 10);
	free(big);
	free(back);

	assert_int_equal(kt_sync(st), 0);
	check_clean(st);
	kt_close(st);
	holder_stop(&h);

	/* All of it is in the store the holder had. */
	assert_int_equal(kt_open(&f->store, f->path, NULL), 0);
	assert_int_equal(kt_stat(&sb, f->store, "/big"), 0);
	assert_int_equal(sb.size, big_len);
	assert_int_equal(kt_stat(&sb, f->store, "/many/n0699"), 0);
}

static void test_remote__changes_seen_both_ways(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st;
	holder h;
	char *s;

	holder_start(&h, f->path);
	st = open_client(f->path, 0);
	assert_int_equal(put_str(st, "/from-client", "sent"), 0);
	assert_int_equal(holder_ask(&h, 'r'), 'y');
	assert_int_equal(holder_ask(&h, 'w'), 'y');
	s = get_str(st, "/from-holder");
	assert_string_equal(s, "held");
	free(s);
	kt_close(st);
	holder_stop(&h);
}

/* A second kt_open in the holder's own process reaches the store too. */
static void test_remote__second_open_in_one_process(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *a = NULL, *b = NULL;
	char *s;

	assert_int_equal(kt_open(&a, f->path, NULL), 0);
	assert_int_equal(kt_open(&b, f->path, NULL), 0);
	assert_int_equal(put_str(b, "/via-b", "b"), 0);
	s = get_str(a, "/via-b");
	assert_string_equal(s, "b");
	free(s);
	kt_close(b);
	kt_close(a);
}

#define NCLIENTS 4
#define NITEMS 200

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_remote__concurrent_creators(void **state)
{
	kt_test_fixture *f = *state;
	pid_t pids[NCLIENTS];
	uint64_t ids[NCLIENTS * NITEMS];
	int go[2];
	kt_store *st;
	kt_iter *it = NULL;
	const kt_entry *e;
	holder h;
	size_t n = 0, i;
	int k, rc, status;
	char c;

	holder_start(&h, f->path);
	assert_int_equal(pipe(go), 0);
	for (k = 0; k < NCLIENTS; k++) {
		pids[k] = fork();
		assert_true(pids[k] >= 0);
		if (pids[k] == 0) {
			kt_store *cs = NULL;
			char name[64];
			int j;

			alarm(GUARD_SECONDS);
			close(go[1]);
			if (kt_open(&cs, f->path, NULL) != 0)
				_exit(10);
			if (read(go[0], &c, 1) != 0)
				_exit(11);
			for (j = 0; j < NITEMS; j++) {
				snprintf(name, sizeof(name), "/d/c%d-%03d", k,
					 j);
				if (put_str(cs, name, name) != 0) {
					fprintf(stderr, "%s: %s\n", name,
						kt_errmsg());
					_exit(12);
				}
			}
			kt_close(cs);
			_exit(0);
		}
	}
	close(go[0]);
	close(go[1]); /* every child starts at once */
	for (k = 0; k < NCLIENTS; k++) {
		assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}

	st = open_client(f->path, 0);
	assert_int_equal(kt_iter_new(&it, st, "/d", NULL), 0);
	while ((rc = kt_iter_next(&e, it)) == 0) {
		assert_true(n < NCLIENTS * NITEMS);
		ids[n++] = e->id;
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	assert_int_equal(n, NCLIENTS * NITEMS);
	qsort(ids, n, sizeof(ids[0]), cmp_u64);
	for (i = 1; i < n; i++)
		if (ids[i] == ids[i - 1])
			fail_msg("id %llu given to two nodes",
				 (unsigned long long)ids[i]);
	check_clean(st);
	kt_close(st);
	holder_stop(&h);
}

static void test_remote__conflicting_renames_one_winner(void **state)
{
	kt_test_fixture *f = *state;
	pid_t pids[NCLIENTS];
	int go[2], k, status, wins = 0, lost = 0;
	kt_store *st;
	kt_statbuf sb;
	holder h;
	char dst[32];
	char c;

	holder_start(&h, f->path);
	st = open_client(f->path, 0);
	assert_int_equal(put_str(st, "/src", "v"), 0);
	assert_int_equal(pipe(go), 0);
	for (k = 0; k < NCLIENTS; k++) {
		pids[k] = fork();
		assert_true(pids[k] >= 0);
		if (pids[k] == 0) {
			kt_store *cs = NULL;
			int rc;

			alarm(GUARD_SECONDS);
			close(go[1]);
			if (kt_open(&cs, f->path, NULL) != 0)
				_exit(10);
			if (read(go[0], &c, 1) != 0)
				_exit(11);
			snprintf(dst, sizeof(dst), "/dst%d", k);
			rc = kt_rename(cs, "/src", dst, 0);
			kt_close(cs);
			_exit(rc == 0 ? 0 : rc == KT_ENOTFOUND ? 1 : 2);
		}
	}
	close(go[0]);
	close(go[1]);
	for (k = 0; k < NCLIENTS; k++) {
		assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
		assert_true(WIFEXITED(status));
		if (WEXITSTATUS(status) == 0)
			wins++;
		else if (WEXITSTATUS(status) == 1)
			lost++;
		else
			fail_msg("a rename failed otherwise (status %d)",
				 WEXITSTATUS(status));
	}
	assert_int_equal(wins, 1);
	assert_int_equal(lost, NCLIENTS - 1);
	assert_int_equal(kt_stat(&sb, st, "/src"), KT_ENOTFOUND);
	for (k = 0, wins = 0; k < NCLIENTS; k++) {
		snprintf(dst, sizeof(dst), "/dst%d", k);
		if (kt_stat(&sb, st, dst) == 0)
			wins++;
	}
	assert_int_equal(wins, 1);
	check_clean(st);
	kt_close(st);
	holder_stop(&h);
}

static void test_remote__holder_killed(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st, *again = NULL;
	kt_statbuf sb;
	holder h;
	char pidtext[32];
	int status, rc;
	char *s;

	holder_start(&h, f->path);
	st = open_client(f->path, 0);
	assert_int_equal(put_str(st, "/acked", "yes"), 0);
	assert_int_equal(kill(h.pid, SIGKILL), 0);
	assert_int_equal(waitpid(h.pid, &status, 0), h.pid);
	close(h.up);
	close(h.down);

	/* Every call fails at once, saying what happened; none hangs (the
	 * alarm would fire). */
	snprintf(pidtext, sizeof(pidtext), "pid %ld", (long)h.pid);
	rc = kt_stat(&sb, st, "/acked");
	assert_int_equal(rc, KT_EIO);
	if (strstr(kt_errmsg(), pidtext) == NULL ||
	    strstr(kt_errmsg(), "open the store again") == NULL)
		fail_msg("message '%s' does not say the holder (%s) is gone",
			 kt_errmsg(), pidtext);
	assert_int_equal(put_str(st, "/after", "no"), KT_EIO);
	assert_non_null(strstr(kt_errmsg(), pidtext));
	kt_close(st);

	/* The next opener becomes the holder (the stale socket is
	 * replaced), and the acknowledged write is there. */
	assert_int_equal(kt_open(&again, f->path, NULL), 0);
	s = get_str(again, "/acked");
	assert_string_equal(s, "yes");
	free(s);
	check_clean(again);
	/* ... and it serves the store in turn. */
	st = open_client(f->path, 0);
	s = get_str(st, "/acked");
	assert_string_equal(s, "yes");
	free(s);
	kt_close(st);
	kt_close(again);
}

static void test_remote__holder_closes(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st;
	kt_statbuf sb;
	holder h;

	holder_start(&h, f->path);
	st = open_client(f->path, 0);
	assert_int_equal(put_str(st, "/x", "1"), 0);
	holder_stop(&h);
	assert_int_equal(kt_stat(&sb, st, "/x"), KT_EIO);
	assert_non_null(strstr(kt_errmsg(), "open the store again"));
	kt_close(st);
}

static void test_remote__read_only_client(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st, *ro;
	holder h;
	char *s;

	holder_start(&h, f->path);
	st = open_client(f->path, 0);
	assert_int_equal(put_str(st, "/k", "v"), 0);
	ro = open_client(f->path, 1);
	s = get_str(ro, "/k");
	assert_string_equal(s, "v");
	free(s);
	assert_int_equal(put_str(ro, "/k", "w"), KT_EREADONLY);
	assert_int_equal(kt_delete(ro, "/k", 0), KT_EREADONLY);
	s = get_str(st, "/k");
	assert_string_equal(s, "v");
	free(s);
	kt_close(ro);
	kt_close(st);
	holder_stop(&h);
}

/* A process that holds the LevelDB lock without serving the store (an
 * older keytree, or a tool on LevelDB itself): kt_open waits a little,
 * then says who holds the store. */
static void test_remote__holder_without_server_named(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *st = (kt_store *)f;
	int up[2], down[2], status;
	char lockfile[400], pidtext[32], c = 0;
	pid_t pid;

	snprintf(lockfile, sizeof(lockfile), "%s/LOCK", f->path);
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct flock fl;
		int fd = open(lockfile, O_RDWR);

		alarm(GUARD_SECONDS);
		close(up[0]);
		close(down[1]);
		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		c = fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0 ? 'o' : 'e';
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], &c, 1), 1);
	assert_int_equal(c, 'o');
	assert_int_equal(kt_open(&st, f->path, NULL), KT_EBUSY);
	assert_null(st);
	snprintf(pidtext, sizeof(pidtext), "in use by process %ld",
		 (long)pid);
	if (strstr(kt_errmsg(), pidtext) == NULL)
		fail_msg("message '%s' does not name the holder (%s)",
			 kt_errmsg(), pidtext);
	close(down[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(up[0]);
}

/* Connect to the holder's socket by hand. */
static int raw_connect(const char *dir)
{
	struct sockaddr_un a;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	/* A path cut short would name another socket. */
	assert_true((size_t)snprintf(a.sun_path, sizeof(a.sun_path),
				     "%s/keytree.sock", dir) <
		    sizeof(a.sun_path));
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* A bad frame closes that connection only; a HELLO of another protocol
 * version is refused with a message naming both versions. */
static void test_remote__bad_peers_refused(void **state)
{
	kt_test_fixture *f = *state;
	unsigned char m[64], r[512];
	kt_store *st;
	holder h;
	ssize_t n;
	size_t got;
	int fd;
	char *s;

	holder_start(&h, f->path);

	/* A frame claiming 4 GiB: the holder hangs up. */
	fd = raw_connect(f->path);
	put_le32(m, 0xfffffff0u);
	assert_int_equal(send(fd, m, 4, MSG_NOSIGNAL), 4);
	assert_int_equal(recv(fd, r, sizeof(r), 0), 0);
	close(fd);

	/* HELLO, protocol version 99. */
	fd = raw_connect(f->path);
	put_le32(m, 1 + 4 + 12 + 4);
	m[4] = 1;
	put_le32(m + 5, 12);
	memcpy(m + 9, "keytree-rows", 12);
	put_le32(m + 21, 99);
	assert_int_equal(send(fd, m, 25, MSG_NOSIGNAL), 25);
	got = 0;
	while ((n = recv(fd, r + got, sizeof(r) - 1 - got, 0)) > 0)
		got += (size_t)n;
	r[got] = '\0';
	close(fd);
	assert_true(got > 12);
	/* status KT_EVERSION, then the message */
	assert_int_equal((int32_t)(r[4] | r[5] << 8 | r[6] << 16 |
				   (uint32_t)r[7] << 24),
			 KT_EVERSION);
	if (strstr((char *)r + 12, "protocol version 3") == NULL ||
	    strstr((char *)r + 12, "version 99") == NULL)
		fail_msg("refusal '%s' does not name both versions",
			 (char *)r + 12);

	/* The holder still serves everyone else. */
	st = open_client(f->path, 0);
	assert_int_equal(put_str(st, "/still", "ok"), 0);
	s = get_str(st, "/still");
	assert_string_equal(s, "ok");
	free(s);
	kt_close(st);
	holder_stop(&h);
}

/* The socket gets the store directory's permission bits, without x. */
static void test_remote__socket_follows_directory(void **state)
{
	kt_test_fixture *f = *state;
	char sock[400];
	struct stat sb, db;
	holder h;

	assert_int_equal(chmod(f->path, 0750), 0);
	holder_start(&h, f->path);
	snprintf(sock, sizeof(sock), "%s/keytree.sock", f->path);
	assert_int_equal(stat(sock, &sb), 0);
	assert_int_equal(stat(f->path, &db), 0);
	assert_true(S_ISSOCK(sb.st_mode));
	assert_int_equal(sb.st_mode & 0777, 0640);
	assert_int_equal(sb.st_uid, db.st_uid);
	holder_stop(&h);
	/* The holder removes it when it closes the store. */
	assert_int_equal(stat(sock, &sb), -1);
	assert_int_equal(chmod(f->path, 0755), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_remote__client_does_everything),
		T(test_remote__changes_seen_both_ways),
		T(test_remote__second_open_in_one_process),
		T(test_remote__concurrent_creators),
		T(test_remote__conflicting_renames_one_winner),
		T(test_remote__holder_killed),
		T(test_remote__holder_closes),
		T(test_remote__read_only_client),
		T(test_remote__holder_without_server_named),
		T(test_remote__bad_peers_refused),
		T(test_remote__socket_follows_directory),
#undef T
	};

	/* SIGPIPE stays at its default on purpose: the library must never
	 * raise it, whatever happens to a holder. */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
