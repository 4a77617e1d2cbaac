/*
 * fs_worker.c - the load of the mount stress test (mount.sh): several
 * processes, each with several threads, doing create, write, read,
 * truncate, rename, unlink, mkdir, rmdir, readdir, symlink and stat on a
 * small set of names in overlapping directories of one keytreefs mount,
 * until a deadline.
 *
 * Usage: kt_stress_fs MOUNTPOINT SECONDS PROCESSES THREADS [SEED]
 *
 * Errors that concurrent users of one tree must expect (ENOENT, EEXIST,
 * ENOTEMPTY, ENOTDIR, EISDIR, EINVAL for a directory moved into itself,
 * ELOOP for link cycles) are counted.  ESTALE is counted separately and
 * fails the run: keytreefs names inodes by persistent node id and resolves
 * each request under its namespace lock, so a node removed or renamed
 * between the kernel's lookup and the next request gives ENOENT (or
 * follows the rename), never ESTALE (docs/FUSE.md).  Anything else
 * (EIO, ENOTCONN, EFAULT, ...), one name listed twice
 * in one readdir pass, or a process killed by a signal fails the run.
 * Each process prints its counts (succeeded/expected errors per kind); the
 * exit status is 0 only when every process is clean and every kind of
 * operation succeeded at least once over the whole run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
	F_CREATE,
	F_APPEND,
	F_READ,
	F_TRUNC,
	F_RENAME,
	F_UNLINK,
	F_MKDIR,
	F_RMDIR,
	F_READDIR,
	F_SYMLINK,
	F_STAT,
	F__COUNT
};

static const char *const fnames[F__COUNT] = {
	"create", "append", "read",    "truncate", "rename", "unlink",
	"mkdir",  "rmdir",  "readdir", "symlink",  "stat"};

typedef struct counts {
	unsigned long ok[F__COUNT], expected[F__COUNT], bad[F__COUNT];
	unsigned long estale; /* of those expected: a node removed meanwhile */
	char first_bad[512];
} counts;

/* More ESTALE than this in a process fails the run (see above). */
#define MAX_ESTALE 0

/* Successes per kind summed over all processes (shared memory). */
static unsigned long *shared_ok;

typedef struct thread_arg {
	const char *mnt;
	double deadline;
	uint64_t rng;
	counts c;
} thread_arg;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned rn(thread_arg *t, unsigned n)
{
	return (unsigned)(rnd(&t->rng) % n);
}

/* A path in a small tree: three top directories, four names, depth one
 * or two, so that everyone collides with everyone. */
static void rand_path(thread_arg *t, char *buf, size_t cap)
{
	static const char *const dirs[] = {"d0", "d1", "d2"};
	static const char *const names[] = {"a", "b", "c", "dd"};

	if (rn(t, 3) == 0)
		snprintf(buf, cap, "%s/%s/%s", t->mnt, dirs[rn(t, 3)],
			 names[rn(t, 4)]);
	else if (rn(t, 2))
		snprintf(buf, cap, "%s/%s/%s/%s", t->mnt, dirs[rn(t, 3)],
			 names[rn(t, 4)], names[rn(t, 4)]);
	else
		snprintf(buf, cap, "%s/%s", t->mnt, dirs[rn(t, 3)]);
}

static void record(thread_arg *t, int op, int rc, int err, const char *path)
{
	if (rc >= 0) {
		t->c.ok[op]++;
		return;
	}
	switch (err) {
	case ENOENT:
	case EEXIST:
	case ENOTEMPTY:
	case ENOTDIR:
	case EISDIR:
	case EINVAL: /* rename of a directory into itself */
	case ELOOP:
		t->c.expected[op]++;
		return;
	case ESTALE: /* see the opening comment: counted, and fails */
		t->c.estale++;
		if (t->c.first_bad[0] == '\0')
			snprintf(t->c.first_bad, sizeof(t->c.first_bad),
				 "%s %.200s: %s", fnames[op], path,
				 strerror(err));
		return;
	default:
		if (t->c.bad[op]++ == 0 && t->c.first_bad[0] == '\0')
			snprintf(t->c.first_bad, sizeof(t->c.first_bad),
				 "%s %.200s: %s", fnames[op], path,
				 strerror(err));
	}
}

static void bad(thread_arg *t, int op, const char *what, const char *path)
{
	t->c.bad[op]++;
	if (t->c.first_bad[0] == '\0')
		snprintf(t->c.first_bad, sizeof(t->c.first_bad),
			 "%s %.200s: %s", fnames[op], path, what);
}

static void do_readdir(thread_arg *t, const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char seen[64][256];
	size_t n = 0, i;
	int err;

	if (d == NULL) {
		record(t, F_READDIR, -1, errno, path);
		return;
	}
	errno = 0;
	while ((e = readdir(d)) != NULL) {
		for (i = 0; i < n; i++)
			if (strcmp(seen[i], e->d_name) == 0)
				bad(t, F_READDIR, "a name listed twice", path);
		if (n < 64)
			snprintf(seen[n++], sizeof(seen[0]), "%s", e->d_name);
		errno = 0;
	}
	err = errno;
	closedir(d);
	record(t, F_READDIR, err ? -1 : 0, err, path);
}

static void one_op(thread_arg *t)
{
	char p1[512], p2[512], buf[4096];
	struct stat st;
	int op = (int)rn(t, F__COUNT), fd, rc;
	ssize_t n;

	rand_path(t, p1, sizeof(p1));
	switch (op) {
	case F_CREATE:
		fd = open(p1, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			record(t, op, -1, errno, p1);
			break;
		}
		memset(buf, 'a' + (int)rn(t, 26), sizeof(buf));
		n = write(fd, buf, 1 + rn(t, sizeof(buf)));
		rc = n < 0 ? -1 : 0;
		record(t, op, rc, errno, p1);
		if (close(fd) != 0)
			record(t, op, -1, errno, p1);
		break;
	case F_APPEND:
		fd = open(p1, O_WRONLY | O_APPEND);
		if (fd < 0) {
			record(t, op, -1, errno, p1);
			break;
		}
		n = write(fd, "0123456789abcdef", 16);
		record(t, op, n == 16 ? 0 : -1, n < 0 ? errno : EIO, p1);
		close(fd);
		break;
	case F_READ:
		fd = open(p1, O_RDONLY);
		if (fd < 0) {
			record(t, op, -1, errno, p1);
			break;
		}
		rc = fstat(fd, &st);
		if (rc == 0 && S_ISREG(st.st_mode)) {
			n = read(fd, buf, sizeof(buf));
			if (n < 0)
				record(t, op, -1, errno, p1);
			else
				record(t, op, 0, 0, p1);
		} else {
			record(t, op, rc, errno, p1);
		}
		close(fd);
		break;
	case F_TRUNC:
		rc = truncate(p1, rn(t, 100));
		record(t, op, rc, errno, p1);
		break;
	case F_RENAME:
		rand_path(t, p2, sizeof(p2));
		rc = rename(p1, p2);
		record(t, op, rc, errno, p1);
		break;
	case F_UNLINK:
		rc = unlink(p1);
		/* EISDIR and EPERM are what unlink of a directory gives */
		if (rc != 0 && errno == EPERM)
			errno = EISDIR;
		record(t, op, rc, errno, p1);
		break;
	case F_MKDIR:
		rc = mkdir(p1, 0755);
		record(t, op, rc, errno, p1);
		break;
	case F_RMDIR:
		rc = rmdir(p1);
		record(t, op, rc, errno, p1);
		break;
	case F_READDIR:
		do_readdir(t, p1);
		break;
	case F_SYMLINK:
		rc = symlink(rn(t, 2) ? "a" : "../d1/b", p1);
		record(t, op, rc, errno, p1);
		break;
	default:
		rc = rn(t, 2) ? stat(p1, &st) : lstat(p1, &st);
		record(t, op, rc, errno, p1);
		break;
	}
}

static void *thread_main(void *arg)
{
	thread_arg *t = arg;

	while (now() < t->deadline)
		one_op(t);
	return NULL;
}

/* One process: its threads, then its counts on one line per kind, and its
 * status. */
static int process_main(const char *mnt, double secs, int nthreads,
			uint64_t seed, int pn)
{
	thread_arg *ts = calloc((size_t)nthreads, sizeof(*ts));
	pthread_t *tid = calloc((size_t)nthreads, sizeof(*tid));
	counts tot;
	int i, k, status = 0;

	if (ts == NULL || tid == NULL)
		return 2;
	memset(&tot, 0, sizeof(tot));
	for (i = 0; i < nthreads; i++) {
		ts[i].mnt = mnt;
		ts[i].deadline = now() + secs;
		ts[i].rng = seed * 1000003u + (uint64_t)pn * 101u + (uint64_t)i;
		if (pthread_create(&tid[i], NULL, thread_main, &ts[i]) != 0)
			return 2;
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(tid[i], NULL);
		for (k = 0; k < F__COUNT; k++) {
			tot.ok[k] += ts[i].c.ok[k];
			tot.expected[k] += ts[i].c.expected[k];
			tot.bad[k] += ts[i].c.bad[k];
		}
		tot.estale += ts[i].c.estale;
		if (tot.first_bad[0] == '\0' && ts[i].c.first_bad[0] != '\0')
			memcpy(tot.first_bad, ts[i].c.first_bad,
			       sizeof(tot.first_bad));
	}
	printf("process %d:", pn);
	for (k = 0; k < F__COUNT; k++) {
		printf(" %s %lu/%lu", fnames[k], tot.ok[k], tot.expected[k]);
		if (tot.bad[k]) {
			printf(" (%lu UNEXPECTED)", tot.bad[k]);
			status = 1;
		}
	}
	printf(" (ESTALE: %lu)\n", tot.estale);
	if (tot.estale > MAX_ESTALE) {
		printf("process %d: %lu ESTALE (at most %d allowed)\n", pn,
		       tot.estale, MAX_ESTALE);
		status = 1;
	}
	if (tot.first_bad[0] != '\0')
		printf("process %d: first unexpected result: %s\n", pn,
		       tot.first_bad);
	for (k = 0; k < F__COUNT; k++)
		__atomic_fetch_add(&shared_ok[k], tot.ok[k], __ATOMIC_SEQ_CST);
	fflush(stdout);
	free(ts);
	free(tid);
	return status;
}

int main(int argc, char **argv)
{
	const char *mnt;
	double secs;
	int nproc, nthreads, i, status, failed = 0;
	uint64_t seed;
	pid_t *pids;

	if (argc < 5) {
		fprintf(stderr,
			"usage: %s MOUNTPOINT SECONDS PROCESSES "
			"THREADS [SEED]\n",
			argv[0]);
		return 2;
	}
	mnt = argv[1];
	secs = atof(argv[2]);
	nproc = atoi(argv[3]);
	nthreads = atoi(argv[4]);
	seed = argc > 5 ? strtoull(argv[5], NULL, 0) : (uint64_t)time(NULL);
	printf("kt_stress_fs: %s, %.0f s, %d processes x %d threads, seed "
	       "%llu\n",
	       mnt, secs, nproc, nthreads, (unsigned long long)seed);
	fflush(stdout);
	pids = calloc((size_t)nproc, sizeof(*pids));
	shared_ok =
		mmap(NULL, F__COUNT * sizeof(*shared_ok),
		     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (pids == NULL || shared_ok == MAP_FAILED)
		return 2;
	for (i = 0; i < nproc; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			return 2;
		}
		if (pids[i] == 0)
			_exit(process_main(mnt, secs, nthreads, seed, i));
	}
	for (i = 0; i < nproc; i++) {
		if (waitpid(pids[i], &status, 0) < 0) {
			perror("waitpid");
			failed = 1;
		} else if (WIFSIGNALED(status)) {
			printf("process %d killed by signal %d\n", i,
			       WTERMSIG(status));
			failed = 1;
		} else if (WEXITSTATUS(status) != 0) {
			failed = 1;
		}
	}
	/* a run that never managed some kind of operation proves little */
	for (i = 0; i < F__COUNT; i++)
		if (shared_ok[i] == 0) {
			printf("no %s succeeded in any process\n", fnames[i]);
			failed = 1;
		}
	free(pids);
	printf("kt_stress_fs: %s\n", failed ? "FAILED" : "clean");
	return failed;
}
