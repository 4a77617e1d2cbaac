/*
 * fs.c - import and export: copying a real directory tree into the store
 * and back, with regular files, directories, symbolic links, FIFOs,
 * sockets and device nodes (special files, with their device numbers),
 * permission bits, owners, access and modification times, and user.*
 * extended attributes (stored as keytree attributes without the "user."
 * prefix).
 *
 * import records its operations in batches of at most IMPORT_BATCH_OPS
 * operations or IMPORT_BATCH_BYTES value bytes, each committed atomically.
 * A directory's metadata is recorded after its children, since adding a
 * child changes the directory's mtime.  Entries that cannot be copied
 * (names holding the store's delimiter, unreadable files) are reported and
 * skipped, and the command then exits 1.  export makes special files with
 * mknod(2); a device node needs privilege (CAP_MKNOD), and one it cannot
 * make is reported the same way.
 *
 * Hard links survive both ways.  import remembers the first path it gave
 * each file whose link count is above 1, by (st_dev, st_ino), and gives
 * every further name of that file the same node with kt_batch_link (the
 * first path is in the same batch or an earlier, committed one).  export
 * remembers the real path it wrote for each node with several paths, by
 * node id, and makes each further path a link(2) to it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli.h"

#define OPT_HELP                                                               \
	{                                                                      \
		"help", no_argument, NULL, 'h'                                 \
	}
#define OPT_END                                                                \
	{                                                                      \
		NULL, 0, NULL, 0                                               \
	}

#define IMPORT_BATCH_OPS   4096
#define IMPORT_BATCH_BYTES (64u << 20)
#define XATTR_USER	   "user."

typedef struct copier {
	kt_store *st;
	kt_batch *b;
	size_t ops, bytes;
	const char *delim;
	cli_progress pr;
	uint64_t done;
	int bad;   /* something was skipped: exit 1 at the end */
	int fatal; /* a commit failed: stop */
	/* Hard links: import maps "dev:ino" to [first path, paths made],
	 * export maps a node id to the real path of its first copy. */
	json_t *firsts;
} copier;

static char *real_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p = malloc(dl + nl + 2);

	if (p == NULL) {
		fputs("keytree: out of memory\n", stderr);
		exit(CLI_FAIL);
	}
	memcpy(p, dir, dl);
	p[dl] = '/';
	memcpy(p + dl + 1, name, nl + 1);
	return p;
}

/* ------------------------------------------------------------------------ */
/* import */

/* Commit the current batch and start another. */
static int imp_flush(copier *c)
{
	int rc = 0;

	if (c->b != NULL && c->ops > 0)
		rc = kt_batch_commit(c->b);
	kt_batch_free(c->b);
	c->b = NULL;
	c->ops = c->bytes = 0;
	if (rc < 0) {
		c->fatal = 1;
		return cli_fail("import", rc);
	}
	if ((rc = kt_batch_new(&c->b, c->st)) < 0) {
		c->fatal = 1;
		return cli_fail("import", rc);
	}
	return 0;
}

/* After recording an operation: -1 if it could not be recorded (bad
 * arguments are reported against @p path), else flush when full. */
static int imp_added(copier *c, int rc, const char *path, size_t bytes)
{
	if (rc < 0) {
		cli_fail(path, rc);
		c->bad = 1;
		return -1;
	}
	c->ops++;
	c->bytes += bytes;
	if (c->ops >= IMPORT_BATCH_OPS || c->bytes >= IMPORT_BATCH_BYTES)
		return imp_flush(c) == 0 ? 0 : -1;
	return 0;
}

static void imp_xattrs(copier *c, const char *real, const char *path)
{
	char *names = NULL, *n, *val = NULL;
	ssize_t len, vlen;

	len = llistxattr(real, NULL, 0);
	if (len <= 0)
		return;
	names = malloc((size_t)len);
	if (names == NULL || (len = llistxattr(real, names, (size_t)len)) < 0)
		goto out;
	for (n = names; n < names + len; n += strlen(n) + 1) {
		if (strncmp(n, XATTR_USER, 5) != 0 || n[5] == '\0')
			continue;
		vlen = lgetxattr(real, n, NULL, 0);
		if (vlen < 0 || (val = malloc((size_t)vlen + 1)) == NULL ||
		    (vlen = lgetxattr(real, n, val, (size_t)vlen)) < 0) {
			cli_fail_errno(real, n);
			c->bad = 1;
		} else if (imp_added(c,
				     kt_batch_attr_set(c->b, path, n + 5, val,
						       (size_t)vlen, 0),
				     path, (size_t)vlen) != 0) {
			free(val);
			goto out;
		}
		free(val);
		val = NULL;
	}
out:
	free(names);
}

static int imp_meta(copier *c, const struct stat *sb, const char *path,
		    unsigned int flags)
{
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;

	sa.mask = KT_SET_MODE | KT_SET_UID | KT_SET_GID | KT_SET_ATIME |
		  KT_SET_MTIME;
	sa.mode = sb->st_mode & 07777;
	sa.uid = sb->st_uid;
	sa.gid = sb->st_gid;
	sa.atime_ns =
		(int64_t)sb->st_atim.tv_sec * 1000000000 + sb->st_atim.tv_nsec;
	sa.mtime_ns =
		(int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
	return imp_added(c, kt_batch_setattr(c->b, path, &sa, flags), path, 0);
}

static int imp_dir(copier *c, const char *real, const char *path);

/* The KT_TYPE_* of a FIFO, socket or device node's st_mode; 0 for every
 * other file type. */
static unsigned int special_type(mode_t mode)
{
	if (S_ISFIFO(mode))
		return KT_TYPE_FIFO;
	if (S_ISSOCK(mode))
		return KT_TYPE_SOCK;
	if (S_ISCHR(mode))
		return KT_TYPE_CHR;
	if (S_ISBLK(mode))
		return KT_TYPE_BLK;
	return 0;
}

/* A further name of a file already imported (@p key: its st_dev and
 * st_ino): give its node the path @p path too.  Returns 1
 * when done (or failed: reported), 0 when the file must be copied as a new
 * node, which becomes the first of its later names. */
static int imp_hardlink(copier *c, const char *path, const char *key)
{
	json_t *seen = json_object_get(c->firsts, key);
	json_int_t n;

	if (seen == NULL)
		return 0;
	n = json_integer_value(json_array_get(seen, 1));
	if (n >= KT_LINK_MAX) {
		cli_fail_msg(path,
			     "a node can have at most %u paths: copied as a "
			     "separate item instead of a hard link",
			     (unsigned)KT_LINK_MAX);
		c->bad = 1;
		json_object_del(c->firsts, key);
		return 0;
	}
	imp_added(c,
		  kt_batch_link(c->b,
				json_string_value(json_array_get(seen, 0)),
				path),
		  path, 0);
	json_array_set_new(seen, 1, json_integer(n + 1));
	cli_progress_update(&c->pr, ++c->done);
	return 1;
}

/* Remember @p path as the first path of the file @p key names. */
static void imp_first(copier *c, const char *key, const char *path)
{
	json_object_set_new(c->firsts, key,
			    json_pack("[o,i]",
				      json_stringn_nocheck(path, strlen(path)),
				      1));
}

/* Copy one entry of a real directory. */
static int imp_entry(copier *c, const char *real, const char *path)
{
	kt_create_options parents = KT_CREATE_OPTIONS_INIT;
	struct stat sb;
	char *data = NULL, target[4097], key[64] = "";
	size_t len = 0;
	ssize_t tl;
	int fd, rc = 0;

	if (lstat(real, &sb) != 0) {
		c->bad = 1;
		cli_fail_errno(real, NULL);
		return 0; /* reported; go on with the rest */
	}
	if (sb.st_nlink > 1 && !S_ISDIR(sb.st_mode)) {
		snprintf(key, sizeof(key), "%ju:%ju", (uintmax_t)sb.st_dev,
			 (uintmax_t)sb.st_ino);
		if (imp_hardlink(c, path, key))
			return c->fatal ? -1 : 0;
	}
	if (S_ISREG(sb.st_mode)) {
		fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || cli_read_fd(&data, &len, fd) != 0) {
			cli_fail_errno(real, NULL);
			c->bad = 1;
			if (fd >= 0)
				close(fd);
			return 0;
		}
		close(fd);
		rc = imp_added(c, kt_batch_put(c->b, path, data, len, NULL),
			       path, len);
		free(data);
	} else if (S_ISDIR(sb.st_mode)) {
		parents.flags = KT_CREATE_PARENTS;
		rc = imp_added(c, kt_batch_mkdir(c->b, path, &parents), path,
			       0);
		if (rc == 0)
			rc = imp_dir(c, real, path);
	} else if (S_ISLNK(sb.st_mode)) {
		tl = readlink(real, target, sizeof(target) - 1);
		if (tl < 0) {
			c->bad = 1;
			cli_fail_errno(real, "readlink");
			return 0; /* reported; go on with the rest */
		}
		target[tl] = '\0';
		rc = imp_added(c, kt_batch_symlink(c->b, path, target, NULL),
			       path, (size_t)tl);
		if (rc == 0)
			rc = imp_meta(c, &sb, path, KT_NOFOLLOW);
		if (rc == 0 && key[0] != '\0')
			imp_first(c, key, path);
		cli_progress_update(&c->pr, ++c->done);
		return c->fatal ? -1 : 0;
	} else if (special_type(sb.st_mode) != 0) {
		/* The node records the type and device number; the file
		 * system's semantics come back with export or a mount. */
		unsigned int type = special_type(sb.st_mode);
		int dev = type == KT_TYPE_CHR || type == KT_TYPE_BLK;

		rc = imp_added(c,
			       kt_batch_mknod(c->b, path, type,
					      dev ? (uint64_t)sb.st_rdev : 0,
					      NULL),
			       path, 0);
	} else {
		cli_fail_msg(real, "skipped: not a file type keytree knows");
		c->bad = 1;
		return 0;
	}
	if (rc == 0)
		imp_xattrs(c, real, path);
	if (rc == 0 && !c->fatal)
		rc = imp_meta(c, &sb, path, 0);
	if (rc == 0 && !c->fatal && key[0] != '\0')
		imp_first(c, key, path);
	cli_progress_update(&c->pr, ++c->done);
	return c->fatal ? -1 : 0;
}

/* Copy the entries of the real directory @p real to @p path. */
static int imp_dir(copier *c, const char *real, const char *path)
{
	DIR *d = opendir(real);
	struct dirent *e;
	char *r, *p;
	int rc = 0;

	if (d == NULL) {
		c->bad = 1;
		cli_fail_errno(real, NULL);
		return 0; /* reported; go on with the rest */
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		r = real_join(real, e->d_name);
		if (strstr(e->d_name, c->delim) != NULL) {
			cli_fail_msg(r,
				     "skipped: the name holds the store's "
				     "delimiter '%s'",
				     c->delim);
			c->bad = 1;
		} else {
			p = cli_join(path, e->d_name, strlen(e->d_name));
			rc = imp_entry(c, r, p);
			free(p);
		}
		free(r);
	}
	closedir(d);
	return rc;
}

/* Count what import will copy, for the progress line. */
static uint64_t count_real(const char *real)
{
	DIR *d = opendir(real);
	struct dirent *e;
	uint64_t n = 0;
	char *r;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		n++;
		if (e->d_type == DT_DIR) {
			r = real_join(real, e->d_name);
			n += count_real(r);
			free(r);
		}
	}
	closedir(d);
	return n;
}

int cmd_import(int argc, char **argv)
{
	static const struct option o[] = {OPT_HELP, OPT_END};
	kt_create_options parents = KT_CREATE_OPTIONS_INIT;
	copier c;
	struct stat sb;
	char *path;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", o, NULL)) != -1) {
		rc = cli_common_opt(opt, argv[0], argv);
		return rc >= 0 ? rc : CLI_USAGE;
	}
	if (argc - optind < 1)
		return cli_usage(argv[0], "missing DIR");
	if (argc - optind > 2)
		return cli_usage(argv[0], "extra operand '%s'",
				 argv[optind + 2]);
	if (stat(argv[optind], &sb) != 0)
		return cli_fail_errno(argv[optind], NULL);
	if (!S_ISDIR(sb.st_mode))
		return cli_fail_msg(argv[optind], "not a directory");
	memset(&c, 0, sizeof(c));
	if ((rc = cli_open(&c.st, 1)) != CLI_OK)
		return rc;
	c.firsts = json_object();
	c.delim = kt_delimiter(c.st, NULL);
	path = cli_path(argc - optind > 1 ? argv[optind + 1] : "/");
	cli_progress_start(&c.pr, "import", "files", 0);
	if (c.pr.on)
		c.pr.total = count_real(argv[optind]);
	rc = imp_flush(&c);
	parents.flags = KT_CREATE_PARENTS;
	if (rc == 0 && strcmp(path, "/") != 0)
		rc = imp_added(&c, kt_batch_mkdir(c.b, path, &parents), path,
			       0);
	if (rc == 0)
		rc = imp_dir(&c, argv[optind], path);
	if (rc == 0) {
		imp_xattrs(&c, argv[optind], path);
		if (!c.fatal)
			rc = imp_meta(&c, &sb, path, 0);
	}
	if (rc == 0 && !c.fatal)
		rc = imp_flush(&c);
	cli_progress_end(&c.pr);
	json_decref(c.firsts);
	kt_batch_free(c.b);
	kt_close(c.st);
	free(path);
	return rc != 0 || c.fatal || c.bad ? CLI_FAIL : CLI_OK;
}

/* ------------------------------------------------------------------------ */
/* export */

static void exp_xattrs(copier *c, const char *path, const char *real)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	char name[KT_NAME_MAX + 8];
	int rc;

	if ((rc = kt_attr_iter_new(&it, c->st, path)) < 0) {
		cli_fail(path, rc);
		c->bad = 1;
		return;
	}
	while ((rc = kt_iter_next(&e, it)) == 0) {
		snprintf(name, sizeof(name), XATTR_USER "%s", e->name);
		if (lsetxattr(real, name, e->value, e->value_len, 0) != 0) {
			cli_fail_errno(real, name);
			c->bad = 1;
		}
	}
	if (rc != KT_ITEROVER) {
		cli_fail(path, rc);
		c->bad = 1;
	}
	kt_iter_free(it);
}

/* Mode, owner (when root) and times of a copied node. */
static void exp_meta(copier *c, const kt_statbuf *sb, const char *real)
{
	struct timespec ts[2];
	int link = sb->kind == KT_KIND_LINK;

	if (geteuid() == 0 && lchown(real, sb->uid, sb->gid) != 0) {
		cli_fail_errno(real, "chown");
		c->bad = 1;
	}
	if (!link && chmod(real, sb->mode & 07777) != 0) {
		cli_fail_errno(real, "chmod");
		c->bad = 1;
	}
	ts[0].tv_sec = (time_t)(sb->atime_ns / 1000000000);
	ts[0].tv_nsec = (long)(sb->atime_ns % 1000000000);
	ts[1].tv_sec = (time_t)(sb->mtime_ns / 1000000000);
	ts[1].tv_nsec = (long)(sb->mtime_ns % 1000000000);
	if (utimensat(AT_FDCWD, real, ts, link ? AT_SYMLINK_NOFOLLOW : 0)) {
		cli_fail_errno(real, "set times");
		c->bad = 1;
	}
}

static int exp_dir(copier *c, const char *path, const char *real);

static int exp_file(copier *c, const char *path, const char *real)
{
	void *value = NULL;
	size_t len = 0;
	int fd, rc;

	if ((rc = kt_get(&value, &len, c->st, path)) < 0)
		return cli_fail(path, rc);
	fd = open(real, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0 || cli_write_all(fd, value, len) != 0) {
		rc = cli_fail_errno(real, NULL);
		if (fd >= 0)
			close(fd);
		kt_free(value);
		return rc;
	}
	kt_free(value);
	if (close(fd) != 0)
		return cli_fail_errno(real, NULL);
	exp_xattrs(c, path, real);
	return 0;
}

/* The file type bits mknod(2) takes for a special file of @p type. */
static mode_t special_mode(unsigned int type)
{
	switch (type) {
	case KT_TYPE_FIFO:
		return S_IFIFO;
	case KT_TYPE_SOCK:
		return S_IFSOCK;
	case KT_TYPE_CHR:
		return S_IFCHR;
	case KT_TYPE_BLK:
		return S_IFBLK;
	}
	return 0;
}

/* Make the special file @p sb describes at @p real (a socket too: mknod
 * makes its name, which a server can bind again after removing it). */
static int exp_special(copier *c, const char *path, const kt_statbuf *sb,
		       const char *real)
{
	if (special_mode(sb->type) == 0)
		return cli_fail_msg(path, "a special file of unknown type %u",
				    sb->type);
	if (mknod(real, special_mode(sb->type) | 0600, (dev_t)sb->rdev) != 0)
		return cli_fail_errno(real, "mknod");
	exp_xattrs(c, path, real);
	return 0;
}

/* A further path of a node with several, already copied: make @p real a
 * hard link to its first copy.  1 when done, 0 when the node is to be
 * copied (the first of its paths here, or link(2) failed: reported). */
static int exp_hardlink(copier *c, const kt_statbuf *sb, const char *real,
			char *key, size_t keysz)
{
	const json_t *first;

	snprintf(key, keysz, "%llu", (unsigned long long)sb->id);
	first = json_object_get(c->firsts, key);
	if (first == NULL)
		return 0;
	/* linkat without AT_SYMLINK_FOLLOW links a symbolic link itself. */
	if (linkat(AT_FDCWD, json_string_value(first), AT_FDCWD, real, 0) ==
	    0) {
		cli_progress_update(&c->pr, ++c->done);
		return 1;
	}
	cli_fail_errno(real, "hard link failed, copied instead");
	c->bad = 1;
	return 0;
}

/* Copy the node at @p path to the real path @p real (which is absent). */
static int exp_node(copier *c, const char *path, const char *real)
{
	kt_statbuf sb;
	char *target = NULL, key[32] = "";
	int rc;

	if ((rc = kt_lstat(&sb, c->st, path)) < 0)
		return cli_fail(path, rc);
	if (sb.nlink > 1 && !(sb.kind & KT_KIND_DIR) &&
	    exp_hardlink(c, &sb, real, key, sizeof(key)))
		return 0;
	if (sb.kind == KT_KIND_LINK) {
		if ((rc = kt_readlink(&target, NULL, c->st, path)) < 0)
			return cli_fail(path, rc);
		rc = symlink(target, real);
		kt_free(target);
		if (rc != 0)
			return cli_fail_errno(real, NULL);
	} else if (sb.kind & KT_KIND_DIR) {
		if (sb.kind & KT_KIND_ITEM) {
			cli_fail_msg(path,
				     "both an item and a directory: "
				     "exported as a directory without its "
				     "value");
			c->bad = 1;
		}
		if (mkdir(real, 0700) != 0)
			return cli_fail_errno(real, NULL);
		if ((rc = exp_dir(c, path, real)) != 0)
			return rc;
		exp_xattrs(c, path, real);
	} else if (sb.kind == KT_KIND_SPECIAL) {
		if ((rc = exp_special(c, path, &sb, real)) != 0) {
			/* Reported; the rest of the tree goes on. */
			c->bad = 1;
			cli_progress_update(&c->pr, ++c->done);
			return 0;
		}
	} else if ((rc = exp_file(c, path, real)) != 0) {
		return rc;
	}
	/* Last, when the children are in place: chmod could make the
	 * directory unwritable, and writing children changes mtime. */
	exp_meta(c, &sb, real);
	if (key[0] != '\0' && json_object_get(c->firsts, key) == NULL)
		json_object_set_new(c->firsts, key,
				    json_stringn_nocheck(real, strlen(real)));
	cli_progress_update(&c->pr, ++c->done);
	return 0;
}

/* Copy the children of the directory at @p path into @p real. */
static int exp_dir(copier *c, const char *path, const char *real)
{
	kt_list_options lo = KT_LIST_OPTIONS_INIT;
	kt_iter *it = NULL;
	const kt_entry *e;
	char *p, *r, name[KT_NAME_MAX + 1];
	int rc;

	if ((rc = kt_iter_new(&it, c->st, path, &lo)) < 0)
		return cli_fail(path, rc);
	while ((rc = kt_iter_next(&e, it)) == 0) {
		memcpy(name, e->name, e->name_len);
		name[e->name_len] = '\0';
		p = cli_join(path, name, e->name_len);
		r = real_join(real, name);
		rc = exp_node(c, p, r);
		free(p);
		free(r);
		if (rc != 0)
			break;
	}
	kt_iter_free(it);
	if (rc == KT_ITEROVER)
		return 0;
	return rc > 0 ? rc : cli_fail(path, rc);
}

/* Count the nodes below @p path, for the progress line. */
static uint64_t count_store(kt_store *st, const char *path)
{
	int root = strcmp(path, "/") == 0;
	kt_iter *it = NULL;
	const kt_entry *e;
	uint64_t n = 0;

	/* "/" finds all but the root; a subtree scan includes its top. */
	if (kt_find_new(&it, st, path, root ? 0 : KT_FIND_SUBTREE) < 0)
		return 0;
	while (kt_iter_next(&e, it) == 0)
		n++;
	kt_iter_free(it);
	return root || n == 0 ? n : n - 1;
}

/* Make sure @p dir is an empty directory, creating it if absent. */
static int exp_target(const char *dir)
{
	DIR *d;
	struct dirent *e;
	int used = 0;

	if (mkdir(dir, 0700) == 0)
		return 0;
	if (errno != EEXIST)
		return cli_fail_errno(dir, NULL);
	if ((d = opendir(dir)) == NULL)
		return cli_fail_errno(dir, NULL);
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, ".."))
			used = 1;
	closedir(d);
	return used ? cli_fail_msg(dir, "not empty: export writes only into "
					"an absent or empty directory")
		    : 0;
}

int cmd_export(int argc, char **argv)
{
	static const struct option o[] = {OPT_HELP, OPT_END};
	copier c;
	kt_statbuf sb;
	char *path;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", o, NULL)) != -1) {
		rc = cli_common_opt(opt, argv[0], argv);
		return rc >= 0 ? rc : CLI_USAGE;
	}
	if (argc - optind < 2)
		return cli_usage(argv[0], "missing operand");
	if (argc - optind > 2)
		return cli_usage(argv[0], "extra operand '%s'",
				 argv[optind + 2]);
	memset(&c, 0, sizeof(c));
	if ((rc = cli_open(&c.st, 0)) != CLI_OK)
		return rc;
	c.firsts = json_object();
	path = cli_path(argv[optind]);
	if ((rc = kt_stat(&sb, c.st, path)) < 0) {
		rc = cli_fail(path, rc);
		goto out;
	}
	if (!(sb.kind & KT_KIND_DIR)) {
		rc = cli_fail_msg(path, "not a directory");
		goto out;
	}
	if ((rc = exp_target(argv[optind + 1])) != 0)
		goto out;
	cli_progress_start(&c.pr, "export", "nodes", 0);
	if (c.pr.on)
		c.pr.total = count_store(c.st, path);
	rc = exp_dir(&c, path, argv[optind + 1]);
	if (rc == 0) {
		exp_xattrs(&c, path, argv[optind + 1]);
		exp_meta(&c, &sb, argv[optind + 1]);
	}
	cli_progress_end(&c.pr);
	rc = rc != 0 || c.bad ? CLI_FAIL : CLI_OK;
out:
	json_decref(c.firsts);
	kt_close(c.st);
	free(path);
	return rc;
}
