/*
 * watch.c - print what other programs change in a store, as they change it.
 *
 * Several programs can use one store at once: the first to open it holds
 * it and serves the others (docs/CONCURRENCY.md).  kt_watch() tells a
 * program what the others commit, one call per commit, as the names that
 * appeared, went or changed and the ids of the nodes that changed, so
 * that a cache (a FUSE mount's, an application's) can forget them.  This
 * program just prints them.  Run it, then in another terminal run
 * `hello DIR`, `keytree -s DIR put /x 1`, or mount DIR with keytreefs and
 * use the mount:
 *
 *   cc watch.c $(pkg-config --cflags --libs keytree) -o watch
 *   ./watch DIR        until Ctrl-C
 *   ./watch DIR N      until N commits have been seen
 *
 * The callback runs on a thread of the library, so what it shares with
 * main() is guarded by a mutex.
 */
#define _XOPEN_SOURCE 700
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <keytree.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long commits; /* seen so far, under mu */
static volatile sig_atomic_t stop;

/* One commit of another program: print its changes. */
static void on_change(const kt_change *ch, size_t n, void *payload)
{
	size_t i;

	(void)payload;
	pthread_mutex_lock(&mu);
	printf("commit %lu: %zu change%s\n", commits + 1, n, n == 1 ? "" : "s");
	for (i = 0; i < n; i++) {
		if (ch[i].what == KT_CHANGE_NAME) {
			/* The directory "/" and a name "x" make "/x". */
			int root = ch[i].dir_len == 1;

			printf("  name %.*s%s%.*s\n", (int)ch[i].dir_len,
			       ch[i].dir, root ? "" : "/", (int)ch[i].name_len,
			       ch[i].name);
		} else {
			printf("  node %llu\n", (unsigned long long)ch[i].id);
		}
	}
	fflush(stdout);
	commits++;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	kt_options opts = KT_OPTIONS_INIT;
	kt_store *store = NULL;
	unsigned long want = 0;
	struct sigaction sa = {0};
	int rc;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: watch DIR [COMMITS]\n");
		return 2;
	}
	if (argc == 3 && (want = strtoul(argv[2], NULL, 10)) == 0) {
		fprintf(stderr, "watch: '%s' is not a number of commits\n",
			argv[2]);
		return 2;
	}
	opts.create_if_missing = 1;
	if ((rc = kt_open(&store, argv[1], &opts)) != 0) {
		fprintf(stderr, "watch: %s: %s\n", argv[1], kt_errmsg());
		return 1;
	}
	if ((rc = kt_watch(store, on_change, NULL)) != 0) {
		fprintf(stderr, "watch: %s: %s\n", argv[1], kt_errmsg());
		kt_close(store);
		return 1;
	}
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	printf("watching %s\n", argv[1]);
	fflush(stdout);

	/* Wait for the commits, waking now and then to see a signal. */
	pthread_mutex_lock(&mu);
	while (!stop && (want == 0 || commits < want)) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += 1;
		pthread_cond_timedwait(&cv, &mu, &t);
	}
	pthread_mutex_unlock(&mu);

	kt_close(store); /* stops the watch first */
	return 0;
}
