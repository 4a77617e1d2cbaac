/*
 * attr.c - metadata handlers of keytreefs: getattr, setattr (mode, owner,
 * size, times), statfs, and the extended attributes that show a node's
 * attributes in the "user." namespace.
 *
 * The value file of an item+dir shares its node's owner, times and
 * attributes; chmod and chown on it are refused (EPERM) because they would
 * change the directory.  A file unlinked while open is served by its
 * orphan id, with link count 0; the library keeps no attribute calls for
 * orphans, so its extended attributes read as none and cannot be set.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#include "keytreefs.h"

#define XATTR_USER "user."
#define XATTR_USER_LEN (sizeof(XATTR_USER) - 1)

static struct ktfs_file *file_of(const struct fuse_file_info *fi)
{
	return fi ? (struct ktfs_file *)(uintptr_t)fi->fh : NULL;
}

void ktfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	struct ktfs_node n;
	struct stat st;
	int rc;

	if ((rc = ktfs_node_get(&n, fs, ino, file_of(fi))) == 0) {
		ktfs_node_stat(&st, fs, &n);
		ktfs_node_free(&n);
	}
	if (rc < 0)
		ktfs_reply_err(req, rc);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

/* The kt_setattr_args of a SETATTR's mode, owner and time bits. */
static int setattr_args(kt_setattr_args *a, const struct stat *attr,
			int to_set)
{
	int rc;

	memset(a, 0, sizeof(*a));
	a->version = KT_SETATTR_ARGS_VERSION;
	if (to_set & FUSE_SET_ATTR_MODE) {
		a->mask |= KT_SET_MODE;
		a->mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		a->mask |= KT_SET_UID;
		a->uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		a->mask |= KT_SET_GID;
		a->gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		a->mask |= KT_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		if ((rc = ktfs_ns_of(&a->atime_ns, &attr->st_atim)) < 0)
			return rc;
		a->mask |= KT_SET_ATIME;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		a->mask |= KT_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		if ((rc = ktfs_ns_of(&a->mtime_ns, &attr->st_mtim)) < 0)
			return rc;
		a->mask |= KT_SET_MTIME;
	}
	return 0;
}

/* Apply a SETATTR to the resolved node @n: the size first (as truncate),
 * then mode, owner and times in one kt_setattr (which sets ctime).  A bare
 * FUSE_SET_ATTR_CTIME needs nothing: every change here sets ctime. */
static int setattr_node(struct ktfs *fs, const struct ktfs_node *n,
			const struct stat *attr, int to_set,
			struct ktfs_file *f)
{
	kt_setattr_args a;
	int rc;

	if ((rc = setattr_args(&a, attr, to_set)) < 0)
		return rc;
	if (a.mask & (KT_SET_MODE | KT_SET_UID | KT_SET_GID)) {
		if (n->value)
			return -EPERM; /* mode and owner are the directory's */
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (attr->st_size < 0)
			return -EINVAL;
		if (!n->orphan && !n->value && (n->st.kind & KT_KIND_DIR))
			return -EISDIR;
		if (n->orphan)
			rc = kt_orphan_truncate(fs->store, n->id,
						(uint64_t)attr->st_size);
		else
			rc = kt_id_truncate(fs->store, n->id,
					    (uint64_t)attr->st_size);
		if (rc == KT_EISDIR) /* a value file whose value went */
			rc = KT_ENOTFOUND;
		if ((rc = ktfs_file_error(fs, f, ktfs_errno(rc))) < 0)
			return rc;
	}
	if (a.mask == 0)
		return 0;
	if (n->orphan)
		rc = kt_orphan_setattr(fs->store, n->id, &a);
	else
		rc = kt_id_setattr(NULL, fs->store, n->id, &a);
	return ktfs_errno(rc);
}

void ktfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		  int to_set, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	struct ktfs_node n, m;
	struct stat st;
	int rc;

	if ((rc = ktfs_node_get(&n, fs, ino, file_of(fi))) == 0) {
		rc = setattr_node(fs, &n, attr, to_set, file_of(fi));
		if (rc == 0 &&
		    (rc = ktfs_node_get(&m, fs, ino, file_of(fi))) == 0) {
			ktfs_node_stat(&st, fs, &m);
			ktfs_node_free(&m);
		}
		ktfs_node_free(&n);
	}
	if (rc < 0)
		ktfs_reply_err(req, rc);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

void ktfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct ktfs *fs = ktfs_of(req);
	struct statvfs sv;

	(void)ino;
	/* A RADOS store has no local filesystem under it: no figures yet,
	 * but statfs must not fail (df, and programs that ask first). */
	if (strncmp(fs->store_dir, "rados:", 6) == 0) {
		memset(&sv, 0, sizeof(sv));
		sv.f_bsize = sv.f_frsize = 4096;
	} else if (statvfs(fs->store_dir, &sv) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	sv.f_namemax = KT_NAME_MAX;
	sv.f_flag = 0;
	fuse_reply_statfs(req, &sv);
}

/* The attribute name for xattr @name, or NULL outside "user.". */
static const char *attr_name(const char *name)
{
	if (strncmp(name, XATTR_USER, XATTR_USER_LEN) != 0 ||
	    name[XATTR_USER_LEN] == '\0')
		return NULL;
	return name + XATTR_USER_LEN;
}

/* Resolve @ino for an xattr call: its node's path in @n.  1: an orphan. */
static int xattr_node(struct ktfs_node *n, struct ktfs *fs, uint64_t ino)
{
	int rc = ktfs_node_get(n, fs, ino, NULL);

	if (rc == 0 && n->orphan)
		return 1;
	return rc;
}

void ktfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		   const char *value, size_t size, int flags)
{
	struct ktfs *fs = ktfs_of(req);
	const char *an = attr_name(name);
	unsigned int kflags = 0;
	struct ktfs_node n;
	int rc;

	if (!an) {
		ktfs_reply_err(req, -ENOTSUP);
		return;
	}
	if (flags & XATTR_CREATE)
		kflags |= KT_ATTR_CREATE;
	if (flags & XATTR_REPLACE)
		kflags |= KT_ATTR_REPLACE;
	if ((rc = xattr_node(&n, fs, ino)) == 0) {
		rc = kt_id_attr_set(fs->store, n.id, an, value, size,
				    kflags);
		rc = rc == KT_ETOOBIG ? -E2BIG : ktfs_errno(rc);
	} else if (rc == 1) {
		rc = -ENOTSUP;
	}
	ktfs_node_free(&n);
	ktfs_reply_err(req, rc);
}

void ktfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		   size_t size)
{
	struct ktfs *fs = ktfs_of(req);
	const char *an = attr_name(name);
	struct ktfs_node n;
	void *v = NULL;
	size_t len = 0;
	int rc;

	/* Answered without touching the store: security.capability is asked
	 * for on every write. */
	if (!an) {
		ktfs_reply_err(req, -ENODATA);
		return;
	}
	if ((rc = xattr_node(&n, fs, ino)) == 0)
		rc = ktfs_errno(kt_id_attr_get(&v, &len, fs->store, n.id,
					       an));
	else if (rc == 1)
		rc = -ENODATA;
	ktfs_node_free(&n);
	if (rc < 0)
		ktfs_reply_err(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		ktfs_reply_err(req, -ERANGE);
	else
		fuse_reply_buf(req, v, len);
	kt_free(v);
}

/* The "user." names of the attributes of node @id, in @list (malloc'd). */
static int list_names(char **list, size_t *total, struct ktfs *fs,
		      uint64_t id)
{
	const kt_entry *e;
	kt_iter *it = NULL;
	size_t cap = 0;
	char *l;
	int rc;

	*list = NULL;
	*total = 0;
	if ((rc = kt_id_attr_iter_new(&it, fs->store, id)) < 0)
		return ktfs_errno(rc);
	while ((rc = kt_iter_next(&e, it)) == 0) {
		size_t n = XATTR_USER_LEN + e->name_len + 1;

		if (*total + n > cap) {
			cap = 2 * (*total + n);
			if (!(l = realloc(*list, cap))) {
				rc = KT_ENOMEM;
				break;
			}
			*list = l;
		}
		memcpy(*list + *total, XATTR_USER, XATTR_USER_LEN);
		memcpy(*list + *total + XATTR_USER_LEN, e->name,
		       e->name_len + 1);
		*total += n;
	}
	kt_iter_free(it);
	return rc == KT_ITEROVER ? 0 : ktfs_errno(rc);
}

void ktfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct ktfs *fs = ktfs_of(req);
	struct ktfs_node n;
	char *list = NULL;
	size_t total = 0;
	int rc;

	rc = xattr_node(&n, fs, ino);
	/* Links (and orphans) carry no user attributes. */
	if (rc == 0 && !(n.st.kind & KT_KIND_LINK))
		rc = list_names(&list, &total, fs, n.id);
	else if (rc == 1)
		rc = 0;
	ktfs_node_free(&n);
	if (rc < 0)
		ktfs_reply_err(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, total);
	else if (size < total)
		ktfs_reply_err(req, -ERANGE);
	else
		fuse_reply_buf(req, list, total);
	free(list);
}

void ktfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct ktfs *fs = ktfs_of(req);
	const char *an = attr_name(name);
	struct ktfs_node n;
	int rc;

	if (!an) {
		ktfs_reply_err(req, -ENODATA);
		return;
	}
	if ((rc = xattr_node(&n, fs, ino)) == 0)
		rc = ktfs_errno(kt_id_attr_delete(fs->store, n.id, an));
	else if (rc == 1)
		rc = -ENODATA;
	ktfs_node_free(&n);
	ktfs_reply_err(req, rc);
}
