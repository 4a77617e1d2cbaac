/*
 * ns.c - the namespace handlers of keytreefs: lookup, mkdir, mknod,
 * unlink, rmdir, symlink, readlink, rename and link.
 *
 * Each names a child by (parent inode, name) and hands exactly that to
 * the library's calls by directory id (kt_lstat_at, kt_make_at,
 * kt_delete_at, kt_rename_at, kt_link_at), which resolve the directory
 * inside their own atomic step: a rename of the directory at the same
 * time, by this mount or another process, can never make a call act on a
 * stale path, and an exclusive create fails on anything at the name, so
 * a file and a directory racing for one name never merge.  The value file
 * of an item+dir is the name fs->value_name inside it; since every store
 * name is free of the delimiter, no child can have that name.  Its
 * changes go by the directory's id (kt_id_put, kt_id_delete), except a
 * rename to or from it (value_rename), which is a copy by paths.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keytreefs.h"

/* A child named by (parent, name): its parent resolved, and whether it is
 * the parent's value file. */
struct child {
	struct ktfs_node dir; /* the parent */
	int value;
};

static void child_free(struct child *c)
{
	ktfs_node_free(&c->dir);
}

/* Resolve the parent @parent of the child @name.  The value name in the
 * root is -ENOENT, or -EPERM when @creating. */
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
	}
	return 0;
}

/* The metadata of the child @name of @c (a link not followed), checking
 * that a value file exists. */
static int child_stat(kt_statbuf *ks, struct ktfs *fs, const struct child *c,
		      const char *name)
{
	if (c->value) {
		*ks = c->dir.st;
		return (ks->kind & KT_KIND_ITEM) ? 0 : -ENOENT;
	}
	return ktfs_errno(kt_lstat_at(ks, fs->store, c->dir.st.id, name));
}

/* Can the child @name of @parent be read with one kt_lstat_at, without
 * fetching the directory first?  Yes when it names no value file and
 * the parent is neither a value file nor an open orphan: then
 * kt_lstat_at finds the directory by id, refuses one that is not a
 * directory (ENOTDIR) or is gone (ENOENT) as child_get would, and
 * reads the child in the same snapshot: two reads fewer than
 * child_get and child_stat, on every lookup and unlink. */
static int plain_child(struct ktfs *fs, fuse_ino_t parent, const char *name)
{
	uint64_t oid;

	return !(parent & KTFS_VALUE_BIT) && !ktfs_is_value_name(fs, name) &&
	       !ktfs_open_orphan(fs, NULL, parent, &oid);
}

/* The metadata of the child @name of @parent (a link not followed), by
 * the shortest road: one kt_lstat_at for a plain child, else the
 * directory first (child_get, child_stat).  @c tells a value file
 * (c->value); free it with child_free whatever the result. */
static int child_lstat(struct child *c, kt_statbuf *ks, struct ktfs *fs,
		       fuse_ino_t parent, const char *name)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if (plain_child(fs, parent, name))
		return ktfs_errno(kt_lstat_at(ks, fs->store, parent, name));
	if ((rc = child_get(c, fs, parent, name, 0)) < 0)
		return rc;
	return child_stat(ks, fs, c, name);
}

/* The store path of the child @name of @c as its parent was resolved:
 * only for what has no call by id (a value file's rename, an unnamed
 * file's first name).  From malloc, NULL when out of memory. */
static char *child_path(const struct child *c, const char *name)
{
	if (c->value)
		return strdup(c->dir.path);
	return ktfs_child_path(c->dir.path, c->dir.path_len, name);
}

void ktfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ktfs *fs = ktfs_of(req);
	struct fuse_entry_param e;
	struct child c;
	kt_statbuf ks;
	struct stat st;
	int rc;

	if ((rc = child_lstat(&c, &ks, fs, parent, name)) == 0)
		ktfs_fill_stat(&st, fs, NULL, &ks, c.value);
	child_free(&c);
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

/* Make the child @name of @parent as @a says, in one exclusive step
 * (kt_make_at: EEXIST whatever is at the name, the value file included),
 * and reply with its entry.  The caller's uid and gid own it; in a
 * set-group-ID directory the directory's group does, and a new directory
 * gets the bit itself. */
static void make_child(fuse_req_t req, fuse_ino_t parent, const char *name,
		       kt_make_args *a, mode_t mode)
{
	struct ktfs *fs = ktfs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct child c;
	kt_statbuf ks;
	struct stat st;
	int rc;

	if ((rc = child_get(&c, fs, parent, name, 1)) == 0) {
		a->create.version = KT_CREATE_OPTIONS_VERSION;
		a->create.flags = KT_CREATE_OWNER;
		if (a->kind != KT_KIND_LINK) {
			a->create.flags |= KT_CREATE_MODE;
			a->create.mode = mode & 07777 & ~ctx->umask;
		}
		a->create.uid = ctx->uid;
		a->create.gid = ctx->gid;
		if (c.dir.st.mode & S_ISGID) {
			a->create.gid = c.dir.st.gid;
			if (a->kind == KT_KIND_DIR)
				a->create.mode |= S_ISGID;
		}
		if (c.value)
			rc = -EEXIST;
		else
			rc = ktfs_errno(kt_make_at(&ks, fs->store, parent,
						   name, a));
		if (rc == 0)
			ktfs_fill_stat(&st, fs, NULL, &ks, 0);
		child_free(&c);
	}
	if (rc == 0)
		ktfs_reply_entry(req, fs, &st);
	else
		ktfs_reply_err(req, rc);
}

static kt_make_args make_args(unsigned int kind)
{
	kt_make_args a;

	memset(&a, 0, sizeof(a));
	a.version = KT_MAKE_ARGS_VERSION;
	a.kind = kind;
	return a;
}

void ktfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode)
{
	kt_make_args a = make_args(KT_KIND_DIR);

	make_child(req, parent, name, &a, mode);
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
 * behaviour, and opens of it never reach keytreefs. */
void ktfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, dev_t rdev)
{
	kt_make_args a = make_args(KT_KIND_SPECIAL);

	if (S_ISREG(mode)) {
		ktfs_mknod_file(req, parent, name, mode);
		return;
	}
	if ((a.type = special_type(mode)) == 0) {
		ktfs_reply_err(req, -EINVAL);
		return;
	}
	/* Only a device has a number; the kernel passes 0 for the rest. */
	if (a.type == KT_TYPE_CHR || a.type == KT_TYPE_BLK)
		a.rdev = rdev;
	make_child(req, parent, name, &a, mode);
}

/* link(2): the node of @ino gets the further name newparent/newname
 * (kt_link_at, by the node's id), so both names are one inode: same
 * number, value, attributes and times, link count from the node.  A
 * directory, an item+dir and its value file cannot be linked (EPERM).
 * linkat(2) of a file opened with O_TMPFILE gives the unnamed file its
 * first name instead (open.c). */
static int link_node(kt_statbuf *ks, struct ktfs *fs, uint64_t ino,
		     const struct child *c, const char *newname)
{
	struct ktfs_node n;
	char *path;
	uint64_t oid;
	int rc;

	if (ktfs_open_orphan(fs, NULL, ino, &oid)) {
		if (!(path = child_path(c, newname)))
			return -ENOMEM;
		rc = ktfs_open_link(fs, ino, path);
		free(path);
		if (rc == 0)
			rc = ktfs_errno(kt_lstat_at(ks, fs->store,
						    c->dir.st.id, newname));
		return rc;
	}
	if ((rc = ktfs_node_get(&n, fs, ino, NULL)) < 0)
		return rc;
	if (n.value || n.orphan || (n.st.kind & KT_KIND_DIR))
		rc = -EPERM;
	else
		rc = ktfs_errno(kt_link_at(ks, fs->store, n.id, c->dir.st.id,
					   newname));
	ktfs_node_free(&n);
	return rc;
}

void ktfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
	       const char *newname)
{
	struct ktfs *fs = ktfs_of(req);
	struct child c;
	kt_statbuf ks;
	struct stat st;
	int rc;

	if ((rc = child_get(&c, fs, newparent, newname, 1)) == 0) {
		if (c.value)
			rc = -EEXIST;
		else if ((rc = link_node(&ks, fs, ino, &c, newname)) == 0)
			ktfs_fill_stat(&st, fs, NULL, &ks, 0);
		child_free(&c);
	}
	if (rc == 0)
		ktfs_reply_entry(req, fs, &st);
	else
		ktfs_reply_err(req, rc);
}

/* Unlink: a file with open handles becomes an orphan for them (open.c),
 * so its name is gone at once and its content lives until the last
 * close.  A file with further paths (hard links) only loses this one: its
 * handles keep reaching it by id through the others.  The decision is
 * made for the node seen at the name; if another process put another
 * node there meanwhile, the removal refuses (it is conditional on the id)
 * and the name is looked at again. */
void ktfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ktfs *fs = ktfs_of(req);
	struct child c;
	kt_statbuf ks;
	int rc, tries;

	/* With nothing open (rm -rf, as a rule) the file goes in one step,
	 * without first reading its id to look it up in the open table. */
	if (plain_child(fs, parent, name) &&
	    (rc = ktfs_unlink_unopened(fs, parent, name)) <= 0) {
		ktfs_reply_err(req, rc);
		return;
	}
	for (tries = 0; tries < 64; tries++) {
		if ((rc = child_lstat(&c, &ks, fs, parent, name)) < 0)
			;
		else if (!c.value && (ks.kind & KT_KIND_DIR))
			rc = -EISDIR;
		else
			rc = ktfs_unlink_file(fs, parent, name,
					      c.value ? (ks.id | KTFS_VALUE_BIT)
						      : ks.id,
					      c.value ? 1 : ks.nlink, 1);
		child_free(&c);
		if (rc != -EAGAIN)
			break;
	}
	ktfs_reply_err(req, rc);
}

/* rmdir: only a directory without a value (an item+dir holds its value
 * file: ENOTEMPTY), checked in the step that removes it. */
void ktfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ktfs *fs = ktfs_of(req);
	struct child c;
	int rc;

	if ((rc = child_get(&c, fs, parent, name, 0)) == 0) {
		if (c.value)
			rc = -ENOTDIR;
		else
			rc = ktfs_errno(kt_delete_at(fs->store, parent, name,
						     KT_DELETE_DIR));
		child_free(&c);
	}
	ktfs_reply_err(req, rc);
}

void ktfs_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		  const char *name)
{
	struct ktfs *fs = ktfs_of(req);
	kt_make_args a = make_args(KT_KIND_LINK);

	/* A target inside the mount is kept as the store path it names;
	 * the mountpoint itself is the store's root. */
	if (!fs->abslinks_host && fs->mountpoint_len > 1 &&
	    strncmp(target, fs->mountpoint, fs->mountpoint_len) == 0 &&
	    (target[fs->mountpoint_len] == '/' ||
	     target[fs->mountpoint_len] == '\0'))
		target = target[fs->mountpoint_len] ? target + fs->mountpoint_len
						    : "/";
	a.data = target;
	a.len = strlen(target);
	make_child(req, parent, name, &a, 0);
}

void ktfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct ktfs *fs = ktfs_of(req);
	char *target = NULL, *shown = NULL;
	struct ktfs_node n;
	int rc;

	if ((rc = ktfs_node_get(&n, fs, ino, NULL)) == 0) {
		if (n.orphan || n.value || !(n.st.kind & KT_KIND_LINK))
			rc = -EINVAL;
		else
			rc = ktfs_readlink_id(&target, fs, n.id);
		ktfs_node_free(&n);
	}
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
 * inode number).  RENAME_EXCHANGE is not supported here (EINVAL).  The
 * batch works by the paths the parents had when resolved; each put in it
 * is conditional on the version read (KT_CREATE_IF_VERSION), so if another
 * process changed the source meanwhile the batch fails (EAGAIN) rather
 * than lose its write. */
static int value_rename(struct ktfs *fs, const struct child *from,
			const char *name, const struct child *to,
			const char *newname, unsigned int flags)
{
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	char *fpath = NULL, *tpath = NULL;
	kt_statbuf fs_, ts, now;
	kt_batch *b = NULL;
	void *val = NULL;
	size_t len = 0;
	int rc, dst_exists;

	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	if ((rc = child_stat(&fs_, fs, from, name)) < 0)
		return rc;
	if (!from->value &&
	    (fs_.kind & (KT_KIND_DIR | KT_KIND_LINK | KT_KIND_SPECIAL)))
		return (fs_.kind & KT_KIND_DIR) ? -EISDIR : -EINVAL;
	rc = child_stat(&ts, fs, to, newname);
	if (to->value && rc < 0 && rc != -ENOENT)
		return rc;
	dst_exists = rc == 0;
	if (!to->value && dst_exists && (ts.kind & KT_KIND_DIR))
		return -EISDIR;
	if (dst_exists && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (from->value == to->value && from->dir.st.id == to->dir.st.id &&
	    (from->value || strcmp(name, newname) == 0))
		return 0;
	if (!(fpath = child_path(from, name)) ||
	    !(tpath = child_path(to, newname))) {
		rc = -ENOMEM;
		goto out;
	}
	o.flags = KT_CREATE_MODE | KT_CREATE_OWNER;
	o.mode = fs_.mode & 0666;
	o.uid = fs_.uid;
	o.gid = fs_.gid;
	/* The value and the version it has, read together; the source must
	 * still be that node at that path. */
	if ((rc = kt_get(&val, &len, fs->store, fpath)) == 0 &&
	    (rc = kt_lstat(&now, fs->store, fpath)) == 0 &&
	    (now.id != fs_.id || now.version != fs_.version))
		rc = KT_ECONFLICT;
	if (rc == 0 && (rc = kt_batch_new(&b, fs->store)) == 0) {
		kt_create_options same = KT_CREATE_OPTIONS_INIT;

		same.flags = KT_CREATE_IF_VERSION;
		same.if_version = fs_.version;
		if ((rc = kt_batch_put(b, fpath, val, len, &same)) == 0 &&
		    (!dst_exists || to->value ||
		     (rc = kt_batch_delete(b, tpath, 0)) == 0) &&
		    (rc = kt_batch_put(b, tpath, val, len, &o)) == 0 &&
		    (rc = kt_batch_delete(b, fpath,
					  from->value ? KT_DELETE_ITEM
						      : 0)) == 0)
			rc = kt_batch_commit(b);
	}
	rc = ktfs_errno(rc);
out:
	kt_batch_free(b);
	kt_free(val);
	free(fpath);
	free(tpath);
	return rc;
}

/* A plain rename over a file with open handles: the target becomes an
 * orphan for them first (its content stays readable through them), then
 * the source moves.  1: the target is not open or keeps other paths,
 * nothing was done.  Only when the rename can replace it: the source
 * exists and is a file.  The open table is held by the caller. */
static int rename_over_open(uint64_t *ino, struct ktfs *fs,
			    const struct child *from, const char *name,
			    const struct child *to, const char *newname)
{
	kt_statbuf fs_, ts;

	if (child_stat(&fs_, fs, from, name) < 0 ||
	    (!from->value && (fs_.kind & KT_KIND_DIR)) ||
	    child_stat(&ts, fs, to, newname) < 0 ||
	    (!to->value && (ts.kind & (KT_KIND_DIR | KT_KIND_LINK))) ||
	    (!from->value && !to->value && fs_.id == ts.id))
		return 1;
	*ino = to->value ? (ts.id | KTFS_VALUE_BIT) : ts.id;
	/* A value target is copied, and then replaced by the rename; a
	 * target with further paths loses only this one, so its handles
	 * need no orphan. */
	return ktfs_unlink_file_held(fs, to->dir.st.id, newname, *ino,
				     to->value ? 1 : ts.nlink, 0);
}

void ktfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		 fuse_ino_t newparent, const char *newname,
		 unsigned int flags)
{
	struct ktfs *fs = ktfs_of(req);
	struct child from, to;
	unsigned int kflags = KT_RENAME_VALUE_FULL;
	uint64_t ino = 0;
	int rc, made = 0;

	if (flags & ~(unsigned int)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		ktfs_reply_err(req, -EINVAL);
		return;
	}
	if (flags & RENAME_NOREPLACE)
		kflags |= KT_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		kflags |= KT_RENAME_EXCHANGE;
	if ((rc = child_get(&from, fs, parent, name, 0)) < 0)
		goto out;
	if ((rc = child_get(&to, fs, newparent, newname, 1)) < 0) {
		child_free(&from);
		goto out;
	}
	/* Replacing a file: the open table is held from the decision to
	 * orphan it (or not) until the rename is done, so no handle of this
	 * mount opens on it in between. */
	if (flags == 0) {
		ktfs_open_lock(fs);
		made = (rc = rename_over_open(&ino, fs, &from, name, &to,
					      newname)) == 0;
	}
	if (rc >= 0) {
		if (from.value || to.value)
			rc = value_rename(fs, &from, name, &to, newname, flags);
		else
			rc = ktfs_errno(kt_rename_at(fs->store, parent, name,
						     newparent, newname,
						     kflags));
	}
	if (flags == 0) {
		if (to.value && (made || rc >= 0)) {
			/* An orphan (copied now, or left by an earlier unlink
			 * of the open value) serves the old handles; the
			 * inode number is the new value's now, or the old
			 * value's again on failure. */
			if (!made)
				ino = to.dir.st.id | KTFS_VALUE_BIT;
			if (rc < 0)
				ktfs_orphan_unmake(fs, ino, 0, NULL);
			else
				ktfs_open_setaside(fs, ino);
		} else if (made && rc < 0) {
			/* The detached target gets its name back if it is
			 * still free. */
			ktfs_orphan_unmake(fs, ino, to.dir.st.id, newname);
		}
		ktfs_open_unlock(fs);
	}
	child_free(&from);
	child_free(&to);
out:
	ktfs_reply_err(req, rc);
}
