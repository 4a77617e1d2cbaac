/*
 * corrupt.c - damaged storage: flip bytes in a store's LevelDB files and
 * require that opening, checking and reading it either give the right data
 * or fail with KT_ECORRUPT (or KT_EIO), never crash and never return wrong
 * data as a success.
 *
 * The parent builds one store with every kind of row (small and
 * multi-block values, holes, directories, links, attributes), spread over
 * table files (.ldb), a write-ahead log (.log), the MANIFEST and CURRENT,
 * and records its digest (digest.h).  Each trial copies the store, flips 1
 * to 4 random bytes in one file (the kind of file chosen first, so that
 * small files get their share), and runs this program again with --trial
 * on the copy, in a process of its own so that a crash is seen as one:
 * open with the defaults, read every node, value, target and attribute,
 * then kt_check.  The child prints how far it got and the digest.
 *
 * Environment: KT_CORRUPT_TRIALS (default 400), KT_CRASH_SEED (default from
 * the clock; printed), KT_CORRUPT_VERBOSE=1 (one line per trial),
 * KT_CORRUPT_KINDS (a comma-separated subset of table,log,MANIFEST,CURRENT;
 * default all).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "keytree.h"

static uint64_t rng_s;

static uint64_t rnd(void)
{
	uint64_t z = (rng_s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int rm_cb(const char *p, const struct stat *sb, int type,
		 struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

static void rmtree(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------------------ */
/* The child: one trial */

/* Print "STAGE RC message", then the digest when the reads worked.
 * Stages: open, read, check, ok.  Everything is read before kt_check
 * runs, as a user reads a store without checking it first: reads take
 * paths that kt_check does not (a dense value's blocks are read without
 * LevelDB's checksums, under their own, FORMAT.md §6), and a read that
 * succeeds must give the right bytes whatever kt_check says next. */
static int trial_main(const char *dir)
{
	kt_store *st = NULL;
	size_t bad = 0;
	char *d = NULL;
	int rc;

	if ((rc = kt_open(&st, dir, NULL)) != 0) {
		printf("open %d %s\n", rc, kt_errmsg());
		return 0;
	}
	if ((rc = ktc_digest(&d, st)) != 0) {
		printf("read %d %s\n", rc, kt_errmsg());
		kt_close(st);
		return 0;
	}
	rc = kt_check(&bad, st, NULL);
	if (rc != 0 || bad != 0)
		printf("check %d %zu violations: %s\n%s", rc, bad,
		       kt_errmsg(), d);
	else
		printf("ok 0 -\n%s", d);
	free(d);
	kt_close(st);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The parent */

static void fill(unsigned char *b, size_t len, unsigned salt)
{
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (unsigned char)(i * 31 + salt + (i >> 9));
}

static int must(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "corrupt: %s: %d %s\n", what, rc, kt_errmsg());
		exit(1);
	}
	return rc;
}

/* Write nodes of every kind under /PREFIX. */
static void populate(kt_store *st, const char *prefix, unsigned salt)
{
	static unsigned char buf[70000];
	static const size_t sizes[] = {0, 10, 4000, 4097, 20000, 70000};
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	char p[128], q[128];
	unsigned i;

	co.flags = KT_CREATE_PARENTS;
	for (i = 0; i < 24; i++) {
		size_t len = sizes[i % 6];

		fill(buf, len, salt + i);
		if (i % 5 == 0 && len > 40000)
			memset(buf + 16384, 0, 16384); /* a hole */
		snprintf(p, sizeof(p), "/%s/d%u/item%u", prefix, i % 4, i);
		must(kt_put(st, p, buf, len, NULL), p);
		if (i % 3 == 0)
			must(kt_attr_set(st, p, "color", buf, 1 + i * 40, 0),
			     p);
		if (i % 4 == 0) {
			snprintf(q, sizeof(q), "/%s/links/l%u", prefix, i);
			must(kt_symlink(st, q, p, &co), q);
		}
	}
	snprintf(p, sizeof(p), "/%s/empty/dir", prefix);
	must(kt_mkdir(st, p, &co), p);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	close(in);
	close(out);
	return n < 0 ? -1 : 0;
}

/* The files of the store, grouped by kind. */
enum { F_LDB, F_LOG, F_MANIFEST, F_CURRENT, F_KINDS };
static const char *kind_names[F_KINDS] = {"table", "log", "MANIFEST",
					  "CURRENT"};

typedef struct files {
	char name[F_KINDS][16][64];
	int n[F_KINDS];
} files;

static int list_files(files *fs, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	memset(fs, 0, sizeof(*fs));
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		int k = -1;

		if (l > 4 && strcmp(e->d_name + l - 4, ".ldb") == 0)
			k = F_LDB;
		else if (l > 4 && strcmp(e->d_name + l - 4, ".log") == 0)
			k = F_LOG;
		else if (strncmp(e->d_name, "MANIFEST-", 9) == 0)
			k = F_MANIFEST;
		else if (strcmp(e->d_name, "CURRENT") == 0)
			k = F_CURRENT;
		if (k >= 0 && fs->n[k] < 16 && l < 64)
			memcpy(fs->name[k][fs->n[k]++], e->d_name, l + 1);
	}
	closedir(d);
	return 0;
}

static int copy_store(const char *from, const char *to)
{
	DIR *d = opendir(from);
	struct dirent *e;
	char a[1024], b[1024];
	int rc = 0;

	rmtree(to);
	if (d == NULL || mkdir(to, 0755) != 0) {
		if (d)
			closedir(d);
		return -1;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(a, sizeof(a), "%s/%s", from, e->d_name);
		snprintf(b, sizeof(b), "%s/%s", to, e->d_name);
		rc = copy_file(a, b);
	}
	closedir(d);
	return rc;
}

/* Flip 1 to 4 bytes of @p path at random offsets; describe them. */
static int flip(const char *path, char *desc, size_t dsize)
{
	int fd = open(path, O_RDWR);
	struct stat sb;
	unsigned n, k;
	size_t dl = 0;

	if (fd < 0 || fstat(fd, &sb) != 0 || sb.st_size == 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = 1 + (unsigned)(rnd() % 4);
	for (k = 0; k < n; k++) {
		off_t at = (off_t)(rnd() % (uint64_t)sb.st_size);
		unsigned char c, x = (unsigned char)(1 + rnd() % 255);

		if (pread(fd, &c, 1, at) != 1)
			break;
		c ^= x;
		if (pwrite(fd, &c, 1, at) != 1)
			break;
		dl += (size_t)snprintf(desc + dl, dsize - dl, " @%lld^%02x",
				       (long long)at, x);
		if (dl >= dsize)
			break;
	}
	close(fd);
	return 0;
}

/* Run the trial child on @p dir; its whole output in *out. */
static int run_trial(const char *self, const char *dir, char **out, int *status)
{
	int p[2];
	pid_t pid;
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t n;

	if (buf == NULL || pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl(self, self, "--trial", dir, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		if (len + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);

			if (nb == NULL)
				abort();
			buf = nb;
		}
		n = read(p[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(p[0]);
	waitpid(pid, status, 0);
	*out = buf;
	return 0;
}

typedef struct tally {
	unsigned open_corrupt, open_eio, open_other, check_corrupt, check_eio,
		read_corrupt, read_eio, clean;
	unsigned wrong;
	unsigned by_kind[F_KINDS][4]; /* refused at open, later; right
				       * data; test failed */
} tally;

int main(int argc, char **argv)
{
	char base[512], golden[600], trial[600], self[4096], path[1024];
	char desc[256], *expect = NULL, *out = NULL;
	const char *tmp = getenv("TMPDIR");
	const char *ev = getenv("KT_CORRUPT_TRIALS");
	const char *es = getenv("KT_CRASH_SEED");
	int verbose = getenv("KT_CORRUPT_VERBOSE") != NULL;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	unsigned trials, t;
	uint64_t seed;
	tally ty = {0};
	files fs;
	ssize_t n;
	unsigned failed = 0;
	int k;
	struct timespec t0, t1;

	int kind_on[F_KINDS] = {1, 1, 1, 1};
	const char *ek = getenv("KT_CORRUPT_KINDS");

	if (argc == 3 && strcmp(argv[1], "--trial") == 0)
		return trial_main(argv[2]);
	if (ek != NULL && *ek != '\0') {
		for (k = 0; k < F_KINDS; k++)
			kind_on[k] = strstr(ek, kind_names[k]) != NULL;
		if (!kind_on[0] && !kind_on[1] && !kind_on[2] && !kind_on[3]) {
			fprintf(stderr, "corrupt: KT_CORRUPT_KINDS names no "
					"file kind\n");
			return 2;
		}
	}
	trials = ev && *ev ? (unsigned)strtoul(ev, NULL, 0) : 400;
	seed = es && *es ? strtoull(es, NULL, 0)
			 : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	rng_s = seed;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	snprintf(base, sizeof(base), "%s/kt-corrupt-XXXXXX",
		 tmp ? tmp : "/tmp");
	if (mkdtemp(base) == NULL) {
		perror("corrupt: mkdtemp");
		return 1;
	}
	snprintf(golden, sizeof(golden), "%s/golden", base);
	snprintf(trial, sizeof(trial), "%s/trial", base);
	fprintf(stderr, "corrupt: %u trials, KT_CRASH_SEED=%" PRIu64 "\n",
		trials, seed);

	/* Tables from a first generation (the log of a store becomes a
	 * table when it is opened again), a log from a second. */
	o.create_if_missing = 1;
	must(kt_open(&st, golden, &o), "create");
	populate(st, "one", 1);
	kt_close(st);
	must(kt_open(&st, golden, NULL), "reopen");
	populate(st, "two", 2);
	must(kt_rename(st, "/one/d1", "/two/moved", 0), "rename");
	must(kt_delete(st, "/one/d2", KT_DELETE_RECURSIVE), "delete");
	must(ktc_digest(&expect, st), "digest");
	kt_close(st);
	list_files(&fs, golden);
	for (k = 0; k < F_KINDS; k++)
		if (fs.n[k] == 0) {
			fprintf(stderr, "corrupt: the store has no %s file\n",
				kind_names[k]);
			return 1;
		}

	for (t = 1; t <= trials; t++) {
		int kind = (int)(rnd() % F_KINDS), status = 0;

		while (!kind_on[kind])
			kind = (kind + 1) % F_KINDS;
		{
			const char *file =
				fs.name[kind][rnd() % (unsigned)fs.n[kind]];
			char stage[16] = "";
			int rc = 0, len = 0;
			const char *verdict = NULL;

			if (copy_store(golden, trial) != 0) {
				perror("corrupt: copy");
				return 1;
			}
			snprintf(path, sizeof(path), "%s/%s", trial, file);
			desc[0] = '\0';
			flip(path, desc, sizeof(desc));
			free(out);
			out = NULL;
			if (run_trial(self, trial, &out, &status) != 0) {
				perror("corrupt: fork");
				return 1;
			}
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
			    sscanf(out, "%15s %d %n", stage, &rc, &len) < 2) {
				verdict = "FAIL: the trial crashed or said "
					  "nothing";
			} else if (strcmp(stage, "ok") == 0) {
				const char *d = strchr(out, '\n');

				if (d == NULL || strcmp(d + 1, expect) != 0) {
					verdict = "FAIL: wrong data read back "
						  "without an error";
					ty.wrong++;
					if (d != NULL && failed < 5)
						ktc_digest_diff("read", d + 1,
								"expected",
								expect);
				} else {
					ty.clean++;
					ty.by_kind[kind][2]++;
				}
			} else if (strcmp(stage, "check") == 0 &&
				   (strchr(out, '\n') == NULL ||
				    strcmp(strchr(out, '\n') + 1, expect) !=
					    0)) {
				/* Damage found by kt_check only after the
				 * reads had succeeded: they must have read
				 * the right data. */
				verdict = "FAIL: wrong data read back "
					  "without an error (kt_check found "
					  "the damage afterwards)";
				ty.wrong++;
			} else if (rc != KT_ECORRUPT && rc != KT_EIO) {
				verdict = "FAIL: an error other than "
					  "KT_ECORRUPT or "
					  "KT_EIO";
			} else {
				int eio = rc == KT_EIO;

				if (strcmp(stage, "open") == 0) {
					ty.open_corrupt += !eio;
					ty.open_eio += eio;
					ty.by_kind[kind][0]++;
				} else {
					if (strcmp(stage, "check") == 0) {
						ty.check_corrupt += !eio;
						ty.check_eio += eio;
					} else {
						ty.read_corrupt += !eio;
						ty.read_eio += eio;
					}
					ty.by_kind[kind][1]++;
				}
			}
			if ((verdict != NULL && failed < 5) || verbose)
				fprintf(stderr, "trial %u: %s%s: %.*s\n", t,
					file, desc, (int)strcspn(out, "\n"),
					out);
			if (verdict != NULL) {
				if (failed < 5)
					fprintf(stderr,
						"corrupt: %s (exit status "
						"%d)\n",
						verdict, status);
				failed++;
				ty.by_kind[kind][3]++;
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr,
		"corrupt: %u trials in %.1f s: open refused %u "
		"(KT_ECORRUPT %u, KT_EIO %u), check reported %u (KT_ECORRUPT "
		"%u, KT_EIO %u), a read failed %u, right data %u, wrong data "
		"%u, other failures %u\n",
		t - 1,
		(double)(t1.tv_sec - t0.tv_sec) +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
		ty.open_corrupt + ty.open_eio, ty.open_corrupt, ty.open_eio,
		ty.check_corrupt + ty.check_eio, ty.check_corrupt, ty.check_eio,
		ty.read_corrupt + ty.read_eio, ty.clean, ty.wrong,
		failed - ty.wrong);
	for (k = 0; k < F_KINDS; k++)
		fprintf(stderr,
			"corrupt:   %-8s files: open refused %u, "
			"check or read refused %u, right data %u, FAILED %u\n",
			kind_names[k], ty.by_kind[k][0], ty.by_kind[k][1],
			ty.by_kind[k][2], ty.by_kind[k][3]);
	free(out);
	free(expect);
	if (failed) {
		fprintf(stderr,
			"corrupt: FAILED in %u trials; rerun with "
			"KT_CRASH_SEED=%" PRIu64 "\n",
			failed, seed);
		return 1;
	}
	rmtree(base);
	return 0;
}
