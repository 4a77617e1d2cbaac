/*
 * eng_fs.c - the benchmark's workloads on the plain filesystem: a
 * directory tree of small files under DIR/root, one file per item, a
 * symbolic link per link.  bench/run runs it on local disk and on tmpfs.
 * Writes are not fsync'ed, like keytree's default.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

typedef struct fsctx {
	const bench_params *p;
	char root[BENCH_PATH_MAX * 2];
} fsctx;

static int sys_fail(const char *what, const char *path)
{
	fprintf(stderr, "kt_bench_api: %s %s: %s\n", what, path,
		strerror(errno));
	return -1;
}

static void full(char *out, size_t size, const fsctx *c, const char *path)
{
	snprintf(out, size, "%s%s", c->root, path);
}

static int mkdirs(char *path)
{
	char *s;

	for (s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return sys_fail("mkdir", path);
		*s = '/';
	}
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return sys_fail("mkdir", path);
	return 0;
}

static int write_file(const char *path, const void *v, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0)
		return sys_fail("open", path);
	if (write(fd, v, len) != (ssize_t)len) {
		close(fd);
		return sys_fail("write", path);
	}
	if (close(fd) != 0)
		return sys_fail("close", path);
	return 0;
}

static int x_open(void **out, const bench_params *p)
{
	fsctx *c = calloc(1, sizeof(*c));
	char rel[BENCH_PATH_MAX], path[BENCH_PATH_MAX * 4];
	char name[BENCH_PATH_MAX], target[BENCH_PATH_MAX * 4];
	long i;

	*out = c;
	if (c == NULL)
		return bench_fail("open", "out of memory");
	c->p = p;
	snprintf(c->root, sizeof(c->root), "%s/root", p->dir);
	if (mkdir(c->root, 0755) != 0)
		return sys_fail("mkdir", c->root);
	for (i = 0; i < p->n; i += 10) {
		bench_item_dir(rel, i);
		full(path, sizeof(path), c, rel);
		if (mkdirs(path) != 0)
			return -1;
	}
	full(path, sizeof(path), c, "/l");
	if (mkdirs(path) != 0)
		return -1;
	for (i = 0; i < p->nlinks; i++) {
		bench_link_name(name, i);
		snprintf(path, sizeof(path), "%s/l/%s", c->root, name);
		bench_item_path(rel, bench_link_target(p, i));
		full(target, sizeof(target), c, rel);
		if (symlink(target, path) != 0)
			return sys_fail("symlink", path);
	}
	full(path, sizeof(path), c, "/big");
	if (mkdirs(path) != 0)
		return -1;
	for (i = 0; i < p->nbig; i++) {
		bench_big_name(name, i);
		snprintf(path, sizeof(path), "%s/big/%s", c->root, name);
		if (write_file(path, bench_value(i), BENCH_VALUE_LEN) != 0)
			return -1;
	}
	return 0;
}

/* Nothing to reopen.  No syncfs either: st_blocks already counts
 * delayed allocations, and forcing writeback here would make the delete
 * that follows pay for the disk's online discard at once. */
static int x_reopen(void *ctx)
{
	(void)ctx;
	return 0;
}

static int x_put(void *ctx, long i)
{
	char rel[BENCH_PATH_MAX], path[BENCH_PATH_MAX * 4];

	bench_item_path(rel, i);
	full(path, sizeof(path), ctx, rel);
	return write_file(path, bench_value(i), BENCH_VALUE_LEN);
}

static int read_file(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return sys_fail("open", path);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n != BENCH_VALUE_LEN)
		return sys_fail("read", path);
	return 0;
}

static int x_get(void *ctx, long i)
{
	char rel[BENCH_PATH_MAX], path[BENCH_PATH_MAX * 4];

	bench_item_path(rel, i);
	full(path, sizeof(path), ctx, rel);
	return read_file(path);
}

static int x_get_link(void *ctx, long k)
{
	fsctx *c = ctx;
	char name[BENCH_PATH_MAX], path[BENCH_PATH_MAX * 4];

	bench_link_name(name, k);
	snprintf(path, sizeof(path), "%s/l/%s", c->root, name);
	return read_file(path);
}

static long walked;

static int count_entry(const char *path, const struct stat *sb, int flag,
		       struct FTW *ftw)
{
	(void)path;
	(void)sb;
	(void)flag;
	(void)ftw;
	walked++;
	return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag,
			struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) != 0)
		return sys_fail("remove", path);
	walked++;
	return 0;
}

/* Walk (or remove) every top-level entry whose name starts with @p first
 * (any, when 0). */
static long walk_top(fsctx *c, char first, int remove)
{
	DIR *d = opendir(c->root);
	struct dirent *e;
	char path[BENCH_PATH_MAX * 4];

	if (d == NULL)
		return sys_fail("opendir", c->root);
	walked = 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || (first && e->d_name[0] != first))
			continue;
		snprintf(path, sizeof(path), "%s/%s", c->root, e->d_name);
		if (nftw(path, remove ? remove_entry : count_entry, 64,
			 FTW_PHYS | (remove ? FTW_DEPTH : 0)) != 0) {
			closedir(d);
			return sys_fail("nftw", path);
		}
	}
	closedir(d);
	return walked;
}

static long x_find(void *ctx)
{
	return walk_top(ctx, 't', 0);
}

static long x_list_big(void *ctx)
{
	fsctx *c = ctx;
	char path[BENCH_PATH_MAX * 4];
	struct dirent *e;
	long n = 0;
	DIR *d;

	full(path, sizeof(path), c, "/big");
	if ((d = opendir(path)) == NULL)
		return sys_fail("opendir", path);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && e->d_type != DT_UNKNOWN)
			n++;
	closedir(d);
	return n;
}

static int x_rename(void *ctx, const char *from, const char *to)
{
	char a[BENCH_PATH_MAX * 4], b[BENCH_PATH_MAX * 4];

	full(a, sizeof(a), ctx, from);
	full(b, sizeof(b), ctx, to);
	if (rename(a, b) != 0)
		return sys_fail("rename", a);
	return 0;
}

static long x_delete_all(void *ctx)
{
	return walk_top(ctx, 0, 1);
}

static void x_close(void *ctx)
{
	free(ctx);
}

const bench_engine bench_fs = {
	.name = "fs",
	.open = x_open,
	.reopen = x_reopen,
	.put = x_put,
	.get = x_get,
	.get_link = x_get_link,
	.find = x_find,
	.list_big = x_list_big,
	.rename = x_rename,
	.delete_all = x_delete_all,
	.close = x_close,
};
