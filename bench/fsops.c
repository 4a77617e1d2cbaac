/*
 * fsops.c - kt_bench_fs, the file-system side of the mount benchmark: the
 * steps that would otherwise cost a process per file in the shell, run the
 * same way on tmpfs, bindfs and keytreefs.  bench/run times each call.
 *
 *   kt_bench_fs tree DIR N         N files of 100 bytes in DIR/dA/eB/fC/
 *   kt_bench_fs flat DIR N         N files of 100 bytes in DIR
 *   kt_bench_fs fill FILE BYTES    write FILE sequentially, 1 MiB at a time
 *   kt_bench_fs randwrite FILE BYTES COUNT
 *                                  COUNT 4 KiB pwrites at random 4 KiB-aligned
 *                                  offsets below BYTES; prints "COUNT SECONDS"
 *   kt_bench_fs ktflat STORE N     a new keytree store holding /flat with N
 *                                  items (made through the library)
 *   kt_bench_fs meta DIR N [SYNCDIR K]
 *                                  in new directory DIR: N creates (100
 *                                  bytes each), N stats, N renames, N
 *                                  unlinks; prints each phase's start and
 *                                  end (CLOCK_REALTIME, ns), so that the
 *                                  phases of several processes on several
 *                                  mounts can be added up (bench/hosts-run);
 *                                  with SYNCDIR, K such processes start each
 *                                  phase together (a barrier of files)
 *   kt_bench_fs visible A B COUNT  COUNT times: create A/vI, then stat B/vI
 *                                  until it is there (A and B: one directory
 *                                  through two mounts); prints each delay
 *                                  from the create's close to the first
 *                                  successful stat, in microseconds
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <keytree.h>

static unsigned char data[1 << 20];

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static void fill_data(void)
{
	size_t i;

	for (i = 0; i < sizeof(data); i += 8) {
		uint64_t x = rnd();
		memcpy(data + i, &x, 8);
	}
}

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "kt_bench_fs: %s %s: %s\n", what, path,
		strerror(errno));
	return 1;
}

static int make_dir(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return fail("mkdir", path);
	return 0;
}

static int small_file(const char *path, long i)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0)
		return fail("create", path);
	if (write(fd, data + (i % 4096) * 100, 100) != 100) {
		close(fd);
		return fail("write", path);
	}
	return close(fd) != 0 ? fail("close", path) : 0;
}

/* 10 files per leaf directory, 10 directories per level. */
static int cmd_tree(const char *dir, long n)
{
	char path[4096];
	long i;

	if (make_dir(dir) != 0)
		return 1;
	for (i = 0; i < n; i++) {
		if (i % 10 == 0) {
			snprintf(path, sizeof(path), "%s/d%ld", dir, i / 1000);
			if (i % 1000 == 0 && make_dir(path) != 0)
				return 1;
			snprintf(path, sizeof(path), "%s/d%ld/e%ld", dir,
				 i / 1000, (i / 100) % 10);
			if (i % 100 == 0 && make_dir(path) != 0)
				return 1;
			snprintf(path, sizeof(path), "%s/d%ld/e%ld/f%ld", dir,
				 i / 1000, (i / 100) % 10, (i / 10) % 10);
			if (make_dir(path) != 0)
				return 1;
		}
		snprintf(path, sizeof(path), "%s/d%ld/e%ld/f%ld/file%ld", dir,
			 i / 1000, (i / 100) % 10, (i / 10) % 10, i % 10);
		if (small_file(path, i) != 0)
			return 1;
	}
	return 0;
}

static int cmd_flat(const char *dir, long n)
{
	char path[4096];
	long i;

	if (make_dir(dir) != 0)
		return 1;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%07ld", dir, i);
		if (small_file(path, i) != 0)
			return 1;
	}
	return 0;
}

static int cmd_fill(const char *file, long long bytes)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	long long done = 0;

	if (fd < 0)
		return fail("create", file);
	while (done < bytes) {
		size_t n = bytes - done < (long long)sizeof(data)
				   ? (size_t)(bytes - done)
				   : sizeof(data);
		if (write(fd, data, n) != (ssize_t)n) {
			close(fd);
			return fail("write", file);
		}
		done += (long long)n;
	}
	return close(fd) != 0 ? fail("close", file) : 0;
}

static int cmd_randwrite(const char *file, long long bytes, long count)
{
	int fd = open(file, O_WRONLY);
	uint64_t blocks = (uint64_t)bytes / 4096;
	struct timespec a, b;
	long i;

	if (fd < 0 || blocks == 0)
		return fail("open", file);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < count; i++) {
		off_t off = (off_t)(rnd() % blocks) * 4096;
		if (pwrite(fd, data + (i % 256) * 4096, 4096, off) != 4096) {
			close(fd);
			return fail("pwrite", file);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (close(fd) != 0)
		return fail("close", file);
	printf("%ld %.6f\n", count,
	       (double)(b.tv_sec - a.tv_sec) +
		       (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}

static int cmd_ktflat(const char *store, long n)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	kt_batch *b = NULL;
	char path[64];
	long i;
	int rc = 0;

	o.create_if_missing = 1;
	o.error_if_exists = 1;
	if (kt_open(&st, store, &o) != 0 || kt_mkdir(st, "/flat", NULL) != 0)
		goto fail;
	for (i = 0; i < n && rc == 0; i += 10000) {
		long j;

		if (kt_batch_new(&b, st) != 0)
			goto fail;
		for (j = i; j < n && j < i + 10000 && rc == 0; j++) {
			snprintf(path, sizeof(path), "/flat/f%07ld", j);
			rc = kt_batch_put(b, path, data + (j % 4096) * 100, 100,
					  NULL);
		}
		if (rc == 0)
			rc = kt_batch_commit(b);
		kt_batch_free(b);
	}
	if (rc != 0)
		goto fail;
	kt_close(st);
	return 0;
fail:
	fprintf(stderr, "kt_bench_fs: ktflat %s: %s\n", store, kt_errmsg());
	kt_close(st);
	return 1;
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Wait until @p k processes have reached phase @p phase: each makes a
 * file SYNC/PHASE.PID and waits for @p k of them (none without @p sync). */
static int barrier(const char *sync, long k, const char *phase)
{
	char p[4096];
	size_t pl = strlen(phase);
	int fd;

	if (sync == NULL)
		return 0;
	snprintf(p, sizeof(p), "%s/%s.%ld", sync, phase, (long)getpid());
	if ((fd = open(p, O_WRONLY | O_CREAT, 0644)) < 0 || close(fd) != 0)
		return fail("barrier", p);
	for (;;) {
		struct timespec nap = {0, 1000000}; /* 1 ms */
		struct dirent *e;
		DIR *d = opendir(sync);
		long seen = 0;

		if (d == NULL)
			return fail("opendir", sync);
		while ((e = readdir(d)) != NULL)
			if (strncmp(e->d_name, phase, pl) == 0 &&
			    e->d_name[pl] == '.')
				seen++;
		closedir(d);
		if (seen >= k)
			return 0;
		nanosleep(&nap, NULL);
	}
}

static int cmd_meta(const char *dir, long n, const char *sync, long k)
{
	char a[4096], b[4096];
	struct stat sb;
	int64_t t;
	long i;
	int fd;

	if (make_dir(dir) != 0 || barrier(sync, k, "create") != 0)
		return 1;
	t = now_ns();
	for (i = 0; i < n; i++) {
		snprintf(a, sizeof(a), "%s/f%ld", dir, i);
		fd = open(a, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			return fail("create", a);
		if (write(fd, data, 100) != 100 || close(fd) != 0)
			return fail("write", a);
	}
	printf("create %lld %lld\n", (long long)t, (long long)now_ns());
	if (barrier(sync, k, "stat") != 0)
		return 1;
	t = now_ns();
	for (i = 0; i < n; i++) {
		snprintf(a, sizeof(a), "%s/f%ld", dir, i);
		if (stat(a, &sb) != 0)
			return fail("stat", a);
	}
	printf("stat %lld %lld\n", (long long)t, (long long)now_ns());
	if (barrier(sync, k, "rename") != 0)
		return 1;
	t = now_ns();
	for (i = 0; i < n; i++) {
		snprintf(a, sizeof(a), "%s/f%ld", dir, i);
		snprintf(b, sizeof(b), "%s/g%ld", dir, i);
		if (rename(a, b) != 0)
			return fail("rename", a);
	}
	printf("rename %lld %lld\n", (long long)t, (long long)now_ns());
	if (barrier(sync, k, "unlink") != 0)
		return 1;
	t = now_ns();
	for (i = 0; i < n; i++) {
		snprintf(b, sizeof(b), "%s/g%ld", dir, i);
		if (unlink(b) != 0)
			return fail("unlink", b);
	}
	printf("unlink %lld %lld\n", (long long)t, (long long)now_ns());
	return 0;
}

static int cmd_visible(const char *da, const char *db, long count)
{
	char a[4096], b[4096];
	struct stat sb;
	long i;
	int fd;

	for (i = 0; i < count; i++) {
		int64_t t0, t1;
		snprintf(a, sizeof(a), "%s/v%ld", da, i);
		snprintf(b, sizeof(b), "%s/v%ld", db, i);
		/* The other mount looks first, so that its kernel holds a
		 * negative entry the create must get rid of. */
		if (stat(b, &sb) == 0) {
			fprintf(stderr, "kt_bench_fs: %s exists already\n", b);
			return 1;
		}
		fd = open(a, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || close(fd) != 0)
			return fail("create", a);
		t0 = now_ns();
		while (stat(b, &sb) != 0) {
			struct timespec nap = {0, 100000}; /* 0.1 ms */
			if (errno != ENOENT)
				return fail("stat", b);
			if (now_ns() - t0 > 30 * (int64_t)1000000000) {
				fprintf(stderr, "kt_bench_fs: %s not there 30 s "
					"after %s was made\n", b, a);
				return 1;
			}
			nanosleep(&nap, NULL);
		}
		t1 = now_ns();
		printf("%lld\n", (long long)((t1 - t0) / 1000));
	}
	return 0;
}

int main(int argc, char **argv)
{
	fill_data();
	if (argc == 4 && strcmp(argv[1], "meta") == 0)
		return cmd_meta(argv[2], atol(argv[3]), NULL, 0);
	if (argc == 6 && strcmp(argv[1], "meta") == 0)
		return cmd_meta(argv[2], atol(argv[3]), argv[4], atol(argv[5]));
	if (argc == 5 && strcmp(argv[1], "visible") == 0)
		return cmd_visible(argv[2], argv[3], atol(argv[4]));
	if (argc == 4 && strcmp(argv[1], "tree") == 0)
		return cmd_tree(argv[2], atol(argv[3]));
	if (argc == 4 && strcmp(argv[1], "flat") == 0)
		return cmd_flat(argv[2], atol(argv[3]));
	if (argc == 4 && strcmp(argv[1], "fill") == 0)
		return cmd_fill(argv[2], atoll(argv[3]));
	if (argc == 5 && strcmp(argv[1], "randwrite") == 0)
		return cmd_randwrite(argv[2], atoll(argv[3]), atol(argv[4]));
	if (argc == 4 && strcmp(argv[1], "ktflat") == 0)
		return cmd_ktflat(argv[2], atol(argv[3]));
	fprintf(stderr, "usage: kt_bench_fs tree|flat DIR N | fill FILE BYTES"
			" | randwrite FILE BYTES COUNT | ktflat STORE N"
			" | meta DIR N [SYNCDIR K] | visible A B COUNT\n");
	return 2;
}
