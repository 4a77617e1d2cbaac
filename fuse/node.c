/*
 * node.c - how keytreefs turns a FUSE inode number into a store node, and
 * the helpers every handler shares: struct stat from a kt_statbuf, entry
 * replies, times.
 *
 * An inode number is a node's persistent id (bit 63 set: the value file of
 * an item+dir).  Each request resolves it with one kt_id_lstat(), which
 * gives the node's current path and metadata from one view.  The path
 * may name another node a moment later (another process may rename
 * anything at any time), so no change is made through it: changes go by
 * id (kt_id_*) or by directory id and name (kt_*_at).  A file unlinked
 * while open is found in the open table first and
 * served by its orphan id.  Nothing is cached per inode.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keytreefs.h"

struct ktfs *ktfs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

int ktfs_is_value_name(const struct ktfs *fs, const char *name)
{
	return strcmp(name, fs->value_name) == 0;
}

char *ktfs_child_path(const char *dir, size_t dir_len, const char *name)
{
	size_t n = strlen(name), d = (dir_len == 1) ? 0 : dir_len;
	char *p = malloc(d + 1 + n + 1);

	if (!p)
		return NULL;
	memcpy(p, dir, d);
	p[d] = '/';
	memcpy(p + d + 1, name, n + 1);
	return p;
}

int ktfs_node_get(struct ktfs_node *n, struct ktfs *fs, uint64_t ino,
		  const struct ktfs_file *f)
{
	uint64_t id = ino & ~KTFS_VALUE_BIT, oid;
	int rc;

	memset(n, 0, sizeof(*n));
	n->ino = ino;
	n->id = id;
	n->value = (ino & KTFS_VALUE_BIT) != 0;
	if (ktfs_open_orphan(fs, f ? f->open : NULL, ino, &oid)) {
		n->orphan = 1;
		n->value = 0;
		n->id = oid;
		return ktfs_errno(kt_orphan_stat(&n->st, fs->store, oid));
	}
	rc = kt_id_lstat(&n->st, &n->path, &n->path_len, fs->store, id);
	if (rc < 0)
		return ktfs_errno(rc);
	/* The kernel never sees a node change kind: a value file exists only
	 * while its node is an item and a directory. */
	if (n->st.id != id ||
	    (n->value && (n->st.kind & (KT_KIND_ITEM | KT_KIND_DIR)) !=
				 (KT_KIND_ITEM | KT_KIND_DIR))) {
		ktfs_node_free(n);
		return -ENOENT;
	}
	return 0;
}

int ktfs_readlink_id(char **target, struct ktfs *fs, uint64_t id)
{
	kt_statbuf ks;
	char *path = NULL;
	int rc = KT_ENOTFOUND, tries;

	*target = NULL;
	/* There is no readlink by id: read by the id's path, then make sure
	 * the path still names the node (a rename may pass in between). */
	for (tries = 0; tries < 8; tries++) {
		if ((rc = kt_id_path(&path, NULL, fs->store, id)) < 0)
			break;
		rc = kt_readlink(target, NULL, fs->store, path);
		if (rc == 0 && kt_lstat(&ks, fs->store, path) == 0 &&
		    ks.id == id)
			break;
		kt_free(*target);
		*target = NULL;
		kt_free(path);
		path = NULL;
		if (rc == 0)
			rc = KT_ECONFLICT;
	}
	kt_free(path);
	return ktfs_errno(rc);
}

int ktfs_dir_get(struct ktfs_node *n, struct ktfs *fs, uint64_t ino)
{
	int rc = ktfs_node_get(n, fs, ino, NULL);

	if (rc == 0 && (n->orphan || n->value || !(n->st.kind & KT_KIND_DIR))) {
		ktfs_node_free(n);
		return -ENOTDIR;
	}
	return rc;
}

void ktfs_node_free(struct ktfs_node *n)
{
	kt_free(n->path);
	n->path = NULL;
}

struct timespec ktfs_ts_of(int64_t ns)
{
	struct timespec t;

	t.tv_sec = ns / 1000000000;
	t.tv_nsec = ns % 1000000000;
	if (t.tv_nsec < 0) {
		t.tv_nsec += 1000000000;
		t.tv_sec--;
	}
	return t;
}

int ktfs_ns_of(int64_t *ns, const struct timespec *t)
{
	if (t->tv_sec > INT64_MAX / 1000000000 - 1 ||
	    t->tv_sec < INT64_MIN / 1000000000 + 1)
		return -EINVAL;
	*ns = (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
	return 0;
}

int ktfs_link_shows_mountpoint(const struct ktfs *fs, const char *target)
{
	return !fs->abslinks_host && target[0] == '/';
}

mode_t ktfs_type_mode(unsigned int type)
{
	switch (type) {
	case KT_TYPE_FIFO:
		return S_IFIFO;
	case KT_TYPE_CHR:
		return S_IFCHR;
	case KT_TYPE_BLK:
		return S_IFBLK;
	case KT_TYPE_SOCK:
		return S_IFSOCK;
	}
	return 0;
}

void ktfs_fill_stat(struct stat *st, struct ktfs *fs, const char *path,
		    const kt_statbuf *ks, int value)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ks->id;
	st->st_uid = ks->uid;
	st->st_gid = ks->gid;
	st->st_size = (off_t)ks->size;
	st->st_nlink = 1;
	if (value) {
		st->st_ino = ks->id | KTFS_VALUE_BIT;
		st->st_mode = S_IFREG | (ks->mode & 0666);
	} else if (ks->kind & KT_KIND_LINK) {
		char *target = NULL;

		st->st_mode = S_IFLNK | (ks->mode & 07777);
		(void)path;
		if (ktfs_readlink_id(&target, fs, ks->id) == 0 &&
		    ktfs_link_shows_mountpoint(fs, target))
			st->st_size += (off_t)fs->mountpoint_len;
		kt_free(target);
	} else if (ks->kind & KT_KIND_DIR) {
		st->st_mode = S_IFDIR | (ks->mode & 07777);
		st->st_nlink = 2 + ks->nsubdirs;
		st->st_size = 0; /* the value is in the value file */
	} else if (ks->kind == KT_KIND_SPECIAL) {
		/* The kernel gives it FIFO, socket or device semantics. */
		st->st_mode = ktfs_type_mode(ks->type) | (ks->mode & 07777);
		st->st_rdev = (dev_t)ks->rdev;
	} else {
		st->st_mode = S_IFREG | (ks->mode & 07777);
	}
	/* Every path of a node (kt_link) is one of its hard links; a value
	 * file is one name of its own. */
	if (!value && !(ks->kind & KT_KIND_DIR))
		st->st_nlink = ks->nlink;
	st->st_blksize = 128 * 1024;
	/* What the value takes in the store, so du and cp --sparse see the
	 * holes of a sparse file; a directory or link takes its row. */
	if (value || (ks->kind & KT_KIND_ITEM && !(ks->kind & KT_KIND_DIR)))
		st->st_blocks = (blkcnt_t)((ks->stored + 511) / 512);
	else
		st->st_blocks = (blkcnt_t)(((uint64_t)st->st_size + 511) / 512);
	st->st_atim = ktfs_ts_of(ks->atime_ns);
	st->st_mtim = ktfs_ts_of(ks->mtime_ns);
	st->st_ctim = ktfs_ts_of(ks->ctime_ns);
}

void ktfs_node_stat(struct stat *st, struct ktfs *fs,
		    const struct ktfs_node *n)
{
	ktfs_fill_stat(st, fs, n->path, &n->st, n->value);
	if (n->orphan) {
		/* A regular file without a name: the inode number its
		 * handles have, link count 0. */
		st->st_ino = n->ino;
		st->st_nlink = 0;
	}
}

void ktfs_entry_param(struct fuse_entry_param *e, struct ktfs *fs,
		      const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	e->ino = st->st_ino;
	e->generation = 0; /* ids are never reused */
	e->attr = *st;
	e->attr_timeout = fs->attr_timeout;
	e->entry_timeout = fs->entry_timeout;
}

void ktfs_reply_entry(fuse_req_t req, struct ktfs *fs, const struct stat *st)
{
	struct fuse_entry_param e;

	ktfs_entry_param(&e, fs, st);
	fuse_reply_entry(req, &e);
}

void ktfs_reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, -rc);
}
