/*
 * ns.c - the namespace handlers of keytreefs: lookup, mkdir, mknod,
 * unlink, rmdir, symlink, readlink, rename and link.
 *
 * Each names a child by (parent inode, name): the parent is resolved to
 * its path (node.c) and the child's path is built from it.  The value file
 * of an item+dir is the name fs->value_name inside it; since every store
 * name is free of the delimiter, no child can have that name.  unlink,
 * rmdir and rename hold ns_lock exclusively (keytreefs.h): they are what
 * can make a path stop naming a node.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keytreefs.h"

/* A child named by (parent, name): its store path, and whether it is the
 * parent's value file (then path is the parent's). */
struct child {
	struct ktfs_node dir; /* the parent */
	char *path;           /* malloc'd, or the parent's path for value */
	int value;
};

static void child_free(struct child *c)
{
	if (!c->value)
		free(c->path);
	c->path = NULL;
	ktfs_node_free(&c->dir);
}

/* Resolve the parent @parent and the child @name's path.  The value name
 * in the root is -ENOENT, or -EPERM when @creating. */
static int child_get(struct child *c, struct ktfs *fs, uint64_t parent,
		     const char *name, int creating)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = ktfs_dir_get(&c->dir, fs, parent)) < 0)
		return rc;
	if (ktfs_is_value_name(fs, name)) {
		if (c->dir.st.id == 1) {
			ktfs_node_free(&c->dir);
			return creating ? -EPERM : -ENOENT;
		}
		c->value = 1;
		c->path = c->dir.path;
		return 0;
	}
	c->path = ktfs_child_path(c->dir.path, c->dir.path_len, name);
	if (!c->path) {
		ktfs_node_free(&c->dir);
		return -ENOMEM;
	}
	return 0;
}

/* kt_lstat() of the child @c, checking that a value file exists. */
static int child_stat(kt_statbuf *ks, struct ktfs *fs, const struct child *c)
{
	int rc;

	if (c->value) {
		*ks = c->dir.st;
		return (ks->kind & KT_KIND_ITEM) ? 0 : -ENOENT;
	}
	rc = kt_lstat(ks, fs->store, c->path);
	return ktfs_errno(rc);
}

void ktfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ktfs *fs = ktfs_of(req);
	struct fuse_entry_param e;
	struct child c;
	kt_statbuf ks;
	struct stat st;
	int rc;

	ktfs_ns_lock(fs, 0);
	if ((rc = child_get(&c, fs, parent, name, 0)) == 0) {
		if ((rc = child_stat(&ks, fs, &c)) == 0)
			ktfs_fill_stat(&st, fs, c.path, &ks, c.value);
		child_free(&c);
	}
	ktfs_ns_unlock(fs);
	/* A name holding the delimiter (KT_ERESERVED) can never exist, nor
	 * can a name within the name limit whose path would be over the
	 * store's path limit (a program may be deep below the root). */
	if (rc == -EINVAL ||
	    (rc == -ENAMETOOLONG && strlen(name) <= KT_NAME_MAX))
		rc = -ENOENT;
	if (rc == 0) {
		ktfs_reply_entry(req, fs, &st);
	} else if (rc == -ENOENT && fs->negative_timeout > 0) {
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs->negative_timeout;
		fuse_reply_entry(req, &e);
	} else {
		ktfs_reply_err(req, rc);
	}
}

/* Reply to a request that made the node at @path (lstat'ed now). */
static int made_stat(struct stat *st, struct ktfs *fs, const char *path)
{
	kt_statbuf ks;
	int rc = ktfs_errno(kt_lstat(&ks, fs->store, path));

	if (rc == 0)
		ktfs_fill_stat(st, fs, path, &ks, 0);
	return rc;
}

void ktfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode)
{
	struct ktfs *fs = ktfs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	pthread_mutex_t *stripe;
	struct child c;
	kt_statbuf ks;
	struct stat st;
	int rc;

	ktfs_ns_lock(fs, 0);
	if ((rc = child_get(&c, fs, parent, name, 1)) == 0) {
		stripe = ktfs_name_lock(fs, c.dir.st.id, name);
		/* kt_mkdir would turn an item there into an item+dir. */
		if (c.value || kt_lstat(&ks, fs->store, c.path) == 0) {
			rc = -EEXIST;
		} else {
			/* The caller's uid and gid, the mode after its umask;
			 * a set-group-ID parent passes on its group and the
			 * bit itself. */
			o.flags = KT_CREATE_EXCL | KT_CREATE_MODE |
				  KT_CREATE_OWNER;
			o.mode = mode & 07777 & ~ctx->umask;
			o.uid = ctx->uid;
			o.gid = ctx->gid;
			if (c.dir.st.mode & S_ISGID) {
				o.gid = c.dir.st.gid;
				o.mode |= S_ISGID;
			}
			rc = ktfs_errno(kt_mkdir(fs->store, c.path, &o));
			if (rc == 0)
				rc = made_stat(&st, fs, c.path);
		}
		pthread_mutex_unlock(stripe);
		child_free(&c);
	}
	ktfs_ns_unlock(fs);
	if (rc == 0)
		ktfs_reply_entry(req, fs, &st);
	else
		ktfs_reply_err(req, rc);
}

/* The KT_TYPE_* of the file type in @p mode; 0 when it is no special
 * file. */
static unsigned int special_type(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFIFO:
		return KT_TYPE_FIFO;
	case S_IFCHR:
		return KT_TYPE_CHR;
	case S_IFBLK:
		return KT_TYPE_BLK;
	case S_IFSOCK:
		return KT_TYPE_SOCK;
	}
	return 0;
}

/* mknod of a regular file makes one as create would.  A FIFO, socket
 * (bind() of a Unix socket comes here) or device node becomes a special
 * file that records its type and device number; the kernel gives it its
 * behaviour, and opens of it never reach keytreefs.  Made as mkdir makes
 * a directory: the name checked free, then made, under its name stripe. */
void ktfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, dev_t rdev)
{
	struct ktfs *fs = ktfs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	unsigned int type = special_type(mode);
	/* Only a device has a number; the kernel passes 0 for the rest. */
	uint64_t dev = (type == KT_TYPE_CHR || type == KT_TYPE_BLK) ? rdev : 0;
	pthread_mutex_t *stripe;
	struct child c;
	kt_statbuf ks;
	struct stat st;
	int rc;

	if (S_ISREG(mode)) {
		ktfs_mknod_file(req, parent, name, mode);
		return;
	}
	if (type == 0) {
		ktfs_reply_err(req, -EINVAL);
		return;
	}
	ktfs_ns_lock(fs, 0);
	if ((rc = child_get(&c, fs, parent, name, 1)) == 0) {
		stripe = ktfs_name_lock(fs, c.dir.st.id, name);
		if (c.value || kt_lstat(&ks, fs->store, c.path) == 0) {
			rc = -EEXIST;
		} else {
			/* The caller's, with the mode after its umask; in a
			 * set-group-ID directory, the directory's group. */
			o.flags = KT_CREATE_MODE | KT_CREATE_OWNER;
			o.mode = mode & 07777 & ~ctx->umask;
			o.uid = ctx->uid;
			o.gid = (c.dir.st.mode & S_ISGID) ? c.dir.st.gid
							  : ctx->gid;
			rc = ktfs_errno(
				kt_mknod(fs->store, c.path, type, dev, &o));
			if (rc == 0)
				rc = made_stat(&st, fs, c.path);
		}
		pthread_mutex_unlock(stripe);
		child_free(&c);
	}
	ktfs_ns_unlock(fs);
	if (rc == 0)
		ktfs_reply_entry(req, fs, &st);
	else
		ktfs_reply_err(req, rc);
}

/* link(2): the node of @ino gets the further path newparent/newname
 * (kt_link), so both names are one inode: same number, value, attributes
 * and times, link count from the node.  A directory, an item+dir and its
 * value file cannot be linked (EPERM).  linkat(2) of a file opened with
 * O_TMPFILE gives the unnamed file its first name instead (open.c).
 * Adding a path makes no path name another node, so ns_lock is shared. */
static int link_node(struct ktfs *fs, uint64_t ino, const char *newpath)
{
	struct ktfs_node n;
	uint64_t oid;
	int rc;

	if (ktfs_open_orphan(fs, NULL, ino, &oid))
		return ktfs_open_link(fs, ino, newpath);
	if ((rc = ktfs_node_get(&n, fs, ino, NULL)) < 0)
		return rc;
	if (n.value || n.orphan || (n.st.kind & KT_KIND_DIR))
		rc = -EPERM;
	else
		rc = ktfs_errno(kt_link(fs->store, n.path, newpath));
	ktfs_node_free(&n);
	return rc;
}

void ktfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	       const char *newname)
{
	struct ktfs *fs = ktfs_of(req);
	pthread_mutex_t *stripe;
	struct child c;
	kt_statbuf ks;
	struct stat st;
	int rc;

	ktfs_ns_lock(fs, 0);
	if ((rc = child_get(&c, fs, newparent, newname, 1)) == 0) {
		stripe = ktfs_name_lock(fs, c.dir.st.id, newname);
		if (c.value || kt_lstat(&ks, fs->store, c.path) == 0)
			rc = -EEXIST;
		else if ((rc = link_node(fs, ino, c.path)) == 0)
			rc = made_stat(&st, fs, c.path);
		pthread_mutex_unlock(stripe);
		child_free(&c);
	}
	ktfs_ns_unlock(fs);
	if (rc == 0)
		ktfs_reply_entry(req, fs, &st);
	else
		ktfs_reply_err(req, rc);
}

/* Unlink: a file with open handles becomes an orphan for them (open.c),
 * so its name is gone at once and its content lives until the last
 * close.  A file with further paths (hard links) only loses this one: its
 * handles keep reaching it by id through the others. */
void ktfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ktfs *fs = ktfs_of(req);
	struct child c;
	kt_statbuf ks;
	int rc;

	ktfs_ns_lock(fs, 1);
	if ((rc = child_get(&c, fs, parent, name, 0)) == 0) {
		if ((rc = child_stat(&ks, fs, &c)) < 0)
			;
		else if (!c.value && (ks.kind & KT_KIND_DIR))
			rc = -EISDIR;
		else
			rc = ktfs_unlink_file(fs, c.path,
					      c.value ? (ks.id | KTFS_VALUE_BIT)
						      : ks.id,
					      c.value, c.value ? 1 : ks.nlink,
					      1);
		child_free(&c);
	}
	ktfs_ns_unlock(fs);
	ktfs_reply_err(req, rc);
}

void ktfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ktfs *fs = ktfs_of(req);
	struct child c;
	kt_statbuf ks;
	int rc;

	ktfs_ns_lock(fs, 1);
	if ((rc = child_get(&c, fs, parent, name, 0)) == 0) {
		if (c.value)
			rc = -ENOTDIR;
		else if ((rc = child_stat(&ks, fs, &c)) < 0)
			;
		else if (!(ks.kind & KT_KIND_DIR))
			rc = -ENOTDIR;
		else if (ks.kind & KT_KIND_ITEM) /* it holds its value file */
			rc = -ENOTEMPTY;
		else
			rc = ktfs_errno(kt_delete(fs->store, c.path, 0));
		child_free(&c);
	}
	ktfs_ns_unlock(fs);
	ktfs_reply_err(req, rc);
}

void ktfs_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		  const char *name)
{
	struct ktfs *fs = ktfs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	pthread_mutex_t *stripe;
	struct child c;
	struct stat st;
	int rc;

	/* A target inside the mount is kept as the store path it names;
	 * the mountpoint itself is the store's root. */
	if (!fs->abslinks_host && fs->mountpoint_len > 1 &&
	    strncmp(target, fs->mountpoint, fs->mountpoint_len) == 0 &&
	    (target[fs->mountpoint_len] == '/' ||
	     target[fs->mountpoint_len] == '\0'))
		target = target[fs->mountpoint_len] ? target + fs->mountpoint_len
						    : "/";
	ktfs_ns_lock(fs, 0);
	if ((rc = child_get(&c, fs, parent, name, 1)) == 0) {
		stripe = ktfs_name_lock(fs, c.dir.st.id, name);
		if (c.value) {
			rc = -EEXIST;
		} else {
			o.flags = KT_CREATE_OWNER;
			o.uid = ctx->uid;
			/* In a set-group-ID directory, its group. */
			o.gid = (c.dir.st.mode & S_ISGID) ? c.dir.st.gid
							  : ctx->gid;
			rc = ktfs_errno(
				kt_symlink(fs->store, c.path, target, &o));
			if (rc == 0)
				rc = made_stat(&st, fs, c.path);
		}
		pthread_mutex_unlock(stripe);
		child_free(&c);
	}
	ktfs_ns_unlock(fs);
	if (rc == 0)
		ktfs_reply_entry(req, fs, &st);
	else
		ktfs_reply_err(req, rc);
}

void ktfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct ktfs *fs = ktfs_of(req);
	char *target = NULL, *shown = NULL;
	struct ktfs_node n;
	int rc;

	ktfs_ns_lock(fs, 0);
	if ((rc = ktfs_node_get(&n, fs, ino, NULL)) == 0) {
		if (n.orphan || n.value || !(n.st.kind & KT_KIND_LINK))
			rc = -EINVAL;
		else
			rc = ktfs_errno(
				kt_readlink(&target, NULL, fs->store, n.path));
		ktfs_node_free(&n);
	}
	ktfs_ns_unlock(fs);
	if (rc == 0 &&
	    asprintf(&shown, "%s%s",
		     ktfs_link_shows_mountpoint(fs, target) ? fs->mountpoint
							     : "",
		     target) < 0) {
		shown = NULL;
		rc = -ENOMEM;
	}
	if (rc == 0)
		fuse_reply_readlink(req, shown);
	else
		ktfs_reply_err(req, rc);
	free(shown);
	kt_free(target);
}

/* A rename from or to a value file: the value is copied in one atomic
 * batch (so the cost is the value's size, and a moved file gets a new
 * inode number).  RENAME_EXCHANGE is not supported here (EINVAL). */
static int value_rename(struct ktfs *fs, const struct child *from,
			const struct child *to, unsigned int flags)
{
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_statbuf fs_, ts;
	kt_batch *b = NULL;
	void *val = NULL;
	size_t len = 0;
	int rc, dst_exists;

	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	if ((rc = child_stat(&fs_, fs, from)) < 0)
		return rc;
	if (!from->value &&
	    (fs_.kind & (KT_KIND_DIR | KT_KIND_LINK | KT_KIND_SPECIAL)))
		return (fs_.kind & KT_KIND_DIR) ? -EISDIR : -EINVAL;
	rc = kt_lstat(&ts, fs->store, to->path);
	if (to->value && rc < 0)
		return ktfs_errno(rc);
	dst_exists = to->value ? (ts.kind & KT_KIND_ITEM) != 0 : rc == 0;
	if (!to->value && dst_exists && (ts.kind & KT_KIND_DIR))
		return -EISDIR;
	if (dst_exists && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (from->value == to->value && strcmp(from->path, to->path) == 0)
		return 0;
	o.flags = KT_CREATE_MODE | KT_CREATE_OWNER;
	o.mode = fs_.mode & 0666;
	o.uid = fs_.uid;
	o.gid = fs_.gid;
	if ((rc = kt_get(&val, &len, fs->store, from->path)) == 0 &&
	    (rc = kt_batch_new(&b, fs->store)) == 0 &&
	    (!dst_exists || to->value ||
	     (rc = kt_batch_delete(b, to->path, 0)) == 0) &&
	    (rc = kt_batch_put(b, to->path, val, len, &o)) == 0 &&
	    (rc = kt_batch_delete(b, from->path,
				  from->value ? KT_DELETE_ITEM : 0)) == 0)
		rc = kt_batch_commit(b);
	kt_batch_free(b);
	kt_free(val);
	return ktfs_errno(rc);
}

/* A rename between two plain paths (no value file). */
static int plain_rename(struct ktfs *fs, const char *from, const char *to,
			unsigned int flags)
{
	unsigned int kflags = 0;
	kt_statbuf ks, ds;

	if (flags & RENAME_NOREPLACE)
		kflags |= KT_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		kflags |= KT_RENAME_EXCHANGE;
	/* An item+dir target holds its value file: not empty. */
	if (!(flags & (RENAME_EXCHANGE | RENAME_NOREPLACE)) &&
	    kt_lstat(&ks, fs->store, from) == 0 && (ks.kind & KT_KIND_DIR) &&
	    kt_lstat(&ds, fs->store, to) == 0 && (ds.kind & KT_KIND_DIR) &&
	    (ds.kind & KT_KIND_ITEM) && ks.id != ds.id)
		return -ENOTEMPTY;
	return ktfs_errno(kt_rename(fs->store, from, to, kflags));
}

/* A plain rename over a file with open handles: the target becomes an
 * orphan for them first (its content stays readable through them), then
 * the source moves.  1: the target is not open or keeps other paths,
 * nothing was done.  Only
 * when the rename can replace it: the source exists and is a file. */
static int rename_over_open(uint64_t *ino, struct ktfs *fs,
			    const struct child *from, const struct child *to)
{
	kt_statbuf fs_, ts;

	if (child_stat(&fs_, fs, from) < 0 ||
	    (!from->value && (fs_.kind & KT_KIND_DIR)) ||
	    child_stat(&ts, fs, to) < 0 ||
	    (!to->value && (ts.kind & (KT_KIND_DIR | KT_KIND_LINK))) ||
	    (!from->value && !to->value && fs_.id == ts.id))
		return 1;
	*ino = to->value ? (ts.id | KTFS_VALUE_BIT) : ts.id;
	/* A value target is copied, and then replaced by the rename; a
	 * target with further paths loses only this one, so its handles
	 * need no orphan. */
	return ktfs_unlink_file(fs, to->path, *ino, to->value,
				to->value ? 1 : ts.nlink, 0);
}

void ktfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		 fuse_ino_t newparent, const char *newname,
		 unsigned int flags)
{
	struct ktfs *fs = ktfs_of(req);
	struct child from, to;
	uint64_t ino = 0;
	int rc, made = 0;

	if (flags & ~(unsigned int)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		ktfs_reply_err(req, -EINVAL);
		return;
	}
	ktfs_ns_lock(fs, 1);
	if ((rc = child_get(&from, fs, parent, name, 0)) < 0)
		goto out;
	if ((rc = child_get(&to, fs, newparent, newname, 1)) < 0) {
		child_free(&from);
		goto out;
	}
	if (flags == 0)
		made = (rc = rename_over_open(&ino, fs, &from, &to)) == 0;
	if (rc >= 0) {
		if (from.value || to.value)
			rc = value_rename(fs, &from, &to, flags);
		else
			rc = plain_rename(fs, from.path, to.path, flags);
	}
	if (to.value && (made || rc >= 0)) {
		/* An orphan (copied now, or left by an earlier unlink of the
		 * open value) serves the old handles; the inode number is the
		 * new value's now, or the old value's again on failure. */
		if (!made)
			ino = to.dir.st.id | KTFS_VALUE_BIT;
		ktfs_open_lock(fs);
		if (rc < 0)
			ktfs_orphan_unmake(fs, ino);
		else
			ktfs_open_setaside(fs, ino);
		ktfs_open_unlock(fs);
	}
	child_free(&from);
	child_free(&to);
out:
	ktfs_ns_unlock(fs);
	ktfs_reply_err(req, rc);
}
