/*
 * memfs.c - kt_bench_memfs, the floor of a listing through FUSE: a
 * read-only mount of a copy of a directory tree held in memory, answered
 * the way keytreefs answers (the low-level API, READDIRPLUS always, the
 * same timeouts, a multi-threaded loop), with no store behind it.
 *
 *   kt_bench_memfs [-f] [-d] [-s] SOURCE MOUNTPOINT
 *
 * SOURCE is read once, before mounting (names, types, modes, sizes and
 * times; no file data).  What a find or an `ls -l` of the mount costs
 * is then what the kernel, FUSE and libfuse cost for the same requests
 * keytreefs gets: bench/run times it beside bindfs and keytreefs.
 */
#define FUSE_USE_VERSION 314

#include <dirent.h>
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One node of the copy.  Inode numbers are indexes into nodes[] plus 1,
 * so FUSE_ROOT_ID (1) is nodes[0]. */
struct mnode {
	char *name;
	struct stat st;
	size_t parent;    /* index */
	size_t *kids;     /* indexes, sorted by name */
	size_t nkids;
};

static struct mnode *nodes;
static size_t nnodes, capnodes;
static const double timeout = 1.0; /* keytreefs's default */

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static size_t node_add(const char *name, const struct stat *st,
		       size_t parent)
{
	if (nnodes == capnodes) {
		capnodes = capnodes ? 2 * capnodes : 1024;
		nodes = realloc(nodes, capnodes * sizeof(*nodes));
		if (!nodes)
			die("realloc");
	}
	memset(&nodes[nnodes], 0, sizeof(nodes[nnodes]));
	if (!(nodes[nnodes].name = strdup(name)))
		die("strdup");
	nodes[nnodes].st = *st;
	nodes[nnodes].st.st_ino = nnodes + 1;
	/* keytreefs's block size, which sets the size of a reader's
	 * getdents buffer, so of each READDIRPLUS (glibc's opendir). */
	nodes[nnodes].st.st_blksize = 128 * 1024;
	nodes[nnodes].parent = parent;
	return nnodes++;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(nodes[*(const size_t *)a].name,
		      nodes[*(const size_t *)b].name);
}

/* Copy the directory @path, node @self, and everything under it. */
static void load(const char *path, size_t self)
{
	DIR *d = opendir(path);
	struct dirent *de;
	size_t cap = 0;

	if (!d)
		die(path);
	while ((de = readdir(d)) != NULL) {
		char *sub;
		struct stat st;
		size_t k;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (asprintf(&sub, "%s/%s", path, de->d_name) < 0)
			die("asprintf");
		if (lstat(sub, &st) != 0)
			die(sub);
		k = node_add(de->d_name, &st, self);
		if (nodes[self].nkids == cap) {
			cap = cap ? 2 * cap : 8;
			nodes[self].kids = realloc(nodes[self].kids,
						   cap * sizeof(size_t));
			if (!nodes[self].kids)
				die("realloc");
		}
		nodes[self].kids[nodes[self].nkids++] = k;
		if (S_ISDIR(st.st_mode))
			load(sub, k);
		free(sub);
	}
	closedir(d);
	qsort(nodes[self].kids, nodes[self].nkids, sizeof(size_t), by_name);
}

static struct mnode *node_of(fuse_ino_t ino)
{
	return ino >= 1 && ino <= nnodes ? &nodes[ino - 1] : NULL;
}

static void entry_of(struct fuse_entry_param *e, const struct mnode *n)
{
	memset(e, 0, sizeof(*e));
	e->ino = n->st.st_ino;
	e->attr = n->st;
	e->attr_timeout = timeout;
	e->entry_timeout = timeout;
}

static void mem_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned int)FUSE_CAP_READDIRPLUS_AUTO;
}

static void mem_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mnode *p = node_of(parent);
	struct fuse_entry_param e;
	size_t lo = 0, hi;

	if (!p) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	hi = p->nkids;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(nodes[p->kids[mid]].name, name);

		if (c == 0) {
			entry_of(&e, &nodes[p->kids[mid]]);
			fuse_reply_entry(req, &e);
			return;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	fuse_reply_err(req, ENOENT);
}

static void mem_getattr(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	struct mnode *n = node_of(ino);

	(void)fi;
	if (!n)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &n->st, timeout);
}

static void mem_opendir(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	struct mnode *n = node_of(ino);

	if (!n)
		fuse_reply_err(req, ENOENT);
	else if (!S_ISDIR(n->st.st_mode))
		fuse_reply_err(req, ENOTDIR);
	else
		fuse_reply_open(req, fi);
}

/* Offsets: 1 after ".", 2 after "..", 2 + k + 1 after child k. */
static void dir_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     int plus)
{
	struct mnode *n = node_of(ino);
	char *buf;
	size_t used = 0;
	off_t i;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!(buf = malloc(size ? size : 1))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (i = off; i < 2 + (off_t)n->nkids; i++) {
		const struct mnode *k;
		struct fuse_entry_param e;
		const char *name;
		size_t len;

		if (i < 2) {
			k = i == 0 ? n : &nodes[n->parent];
			name = i == 0 ? "." : "..";
		} else {
			k = &nodes[n->kids[i - 2]];
			name = k->name;
		}
		entry_of(&e, k);
		if (plus) {
			if (i < 2)
				e.ino = 0; /* no entry for "." and ".." */
			len = fuse_add_direntry_plus(req, buf + used,
						     size - used, name, &e,
						     i + 1);
		} else {
			len = fuse_add_direntry(req, buf + used, size - used,
						name, &e.attr, i + 1);
		}
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void mem_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	dir_read(req, ino, size, off, 0);
}

static void mem_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			    off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	dir_read(req, ino, size, off, 1);
}

static void mem_releasedir(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

/* No extended attributes, but asked for as on keytreefs (`ls -l` asks
 * for two an entry): a filesystem without the handler would be asked
 * once, then never again. */
static void mem_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			 size_t size)
{
	(void)name;
	(void)size;
	fuse_reply_err(req, node_of(ino) ? ENODATA : ENOENT);
}

static void mem_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (!node_of(ino))
		fuse_reply_err(req, ENOENT);
	else if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

static void mem_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

static const struct fuse_lowlevel_ops mem_ops = {
	.init = mem_init,
	.lookup = mem_lookup,
	.forget = mem_forget,
	.getattr = mem_getattr,
	.opendir = mem_opendir,
	.readdir = mem_readdir,
	.readdirplus = mem_readdirplus,
	.releasedir = mem_releasedir,
	.getxattr = mem_getxattr,
	.listxattr = mem_listxattr,
};

static void usage(FILE *f)
{
	fprintf(f, "usage: kt_bench_memfs [-f] [-d] [-s] SOURCE MOUNTPOINT\n"
		   "Mounts a read-only copy, in memory, of the tree under "
		   "SOURCE (no file data).\n"
		   "  -f  stay in the foreground\n"
		   "  -d  log every request on stderr (implies -f)\n"
		   "  -s  one thread (as bindfs by default), not libfuse's "
		   "pool\n");
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;
	struct fuse_loop_config *lc;
	struct stat st;
	const char *src, *mnt;
	int fg = 0, single = 0, i = 1, rc;

	if (argc > 1 && (strcmp(argv[1], "-h") == 0 ||
			 strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (fuse_opt_add_arg(&args, argv[0]) != 0)
		die("fuse_opt_add_arg");
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-f") == 0) {
			fg = 1;
		} else if (strcmp(argv[i], "-s") == 0) {
			single = 1;
		} else if (strcmp(argv[i], "-d") == 0) {
			/* libfuse's request log, on stderr, in the foreground */
			fg = 1;
			if (fuse_opt_add_arg(&args, "-d") != 0)
				die("fuse_opt_add_arg");
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (argc - i != 2) {
		usage(stderr);
		return 2;
	}
	src = argv[i];
	mnt = argv[i + 1];
	if (stat(src, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "kt_bench_memfs: '%s' is not a directory\n",
			src);
		return 1;
	}
	node_add("/", &st, 0);
	load(src, 0);
	se = fuse_session_new(&args, &mem_ops, sizeof(mem_ops), NULL);
	if (!se || fuse_session_mount(se, mnt) != 0) {
		fprintf(stderr, "kt_bench_memfs: cannot mount on '%s'\n", mnt);
		return 1;
	}
	if (fuse_daemonize(fg) != 0)
		die("fuse_daemonize");
	fuse_set_signal_handlers(se);
	/* libfuse's defaults, as keytreefs runs by default. */
	lc = single ? NULL : fuse_loop_cfg_create();
	if (single)
		rc = fuse_session_loop(se);
	else
		rc = lc ? fuse_session_loop_mt(se, lc) : 1;
	if (lc)
		fuse_loop_cfg_destroy(lc);
	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return rc ? 1 : 0;
}
