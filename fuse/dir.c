/*
 * dir.c - directory listings of keytreefs: opendir, readdir, readdirplus,
 * releasedir and fsyncdir.
 *
 * A listing streams: each READDIR(PLUS) reply is filled from a fresh
 * library iterator that starts after a name, never by a count, and never
 * holds more than one reply's entries.  Offsets (the kernel's cookies,
 * what telldir returns) are stable and are not indexes:
 *
 *   0            the start
 *   1            after "."
 *   2            after ".."
 *   3            after the value file (an item+dir's own value)
 *   id + 16      after the child whose node id is id (children's ids are
 *                above 1, the root's, and far below 2^62, so this never
 *                meets the others or overflows off_t)
 *   2^62 + hash  after the child of that name whose node has several
 *                paths (hard links): two of them may be in one directory,
 *                and their id would not tell them apart.  The hash is 62
 *                bits of FNV-1a of the name.
 *
 * The handle remembers the names of its last reply's entries (its last
 * name is where sequential reading continues), so sequential reading, and a kernel that used
 * only part of a reply, continue by name even if those children were
 * removed meanwhile (rm -r).  Any other offset (seekdir to an older
 * telldir) is resolved with kt_id_path(): if the child is still in this
 * directory, the listing continues after its current name; if it was
 * removed or moved out, the position is gone and the reply is EINVAL.
 * A hashed offset that is not in the last reply is looked for among the
 * directory's names (a walk of the directory, only for such a seekdir).
 *
 * Every entry carries d_type.  READDIRPLUS gives each child's full
 * attributes and an entry with the mount's timeouts, so `ls -l` costs no
 * LOOKUP or GETATTR per entry.  The listing itself reads the children's
 * node rows (KT_LIST_STAT), which on RADOS go out many at once, so a
 * reply costs a few rounds, not one per entry.  Plain READDIR (which this
 * mount's kernel is not asked to use) needs each non-directory's node row
 * too, for the link count its offset depends on: the same listing.  The kernel counts lookups for those
 * entries; FORGET is a no-op here, since nothing is kept per inode.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keytreefs.h"

#define DIR_OFF_DOT 1
#define DIR_OFF_DOTDOT 2
#define DIR_OFF_VALUE 3
#define DIR_OFF_BASE 16
#define DIR_OFF_NAMED ((off_t)1 << 62)

/* An entry of the last reply: its offset, and where its name starts in
 * the handle's names. */
struct recent {
	off_t off;
	size_t at;
};

/* An open directory (fi->fh). */
struct ktfs_dir {
	pthread_mutex_t lock;  /* the kernel may overlap requests on one fh */
	struct recent *recent; /* the last reply's children, in order */
	size_t nrecent, caprecent;
	char *names; /* their names, each ended by a NUL, one after another */
	size_t nnames, capnames;
	/* The last reply reached the end of the directory, end_off is its
	 * last entry's offset and end_ver the directory's version read
	 * before it: a request for what follows, while the directory is
	 * at that version, is answered with nothing (dir_read). */
	int at_end;
	off_t end_off;
	uint64_t end_ver;
};

/* Where a reply starts: the stage (0 ".", 1 "..", 2 the value file, 3
 * children) and, for children, the name to start after (or NULL). */
struct start {
	int stage;
	char *after;
};

static struct ktfs_dir *dir_of(const struct fuse_file_info *fi)
{
	return (struct ktfs_dir *)(uintptr_t)fi->fh;
}

/* The offset of the hashed form for @name. */
static off_t name_off(const char *name)
{
	uint64_t h = 1469598103934665603ull;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ull;
	return DIR_OFF_NAMED | (off_t)(h & ((UINT64_C(1) << 62) - 1));
}

/* The offset after the child @name, node @id with @nlink paths. */
static off_t child_off(uint64_t id, uint32_t nlink, const char *name)
{
	return nlink > 1 ? name_off(name) : (off_t)(id + DIR_OFF_BASE);
}

/* The name in @dir whose hashed offset is @off, into @after (malloc'd);
 * -EINVAL when no child has it now. */
static int named_start(char **after, struct ktfs *fs,
		       const struct ktfs_node *dir, off_t off)
{
	kt_list_options lo = KT_LIST_OPTIONS_INIT;
	const kt_entry *e;
	kt_iter *it = NULL;
	int rc;

	if ((rc = kt_iter_new(&it, fs->store, dir->path, &lo)) < 0)
		return ktfs_errno(rc);
	while ((rc = kt_iter_next(&e, it)) == 0)
		if (name_off(e->name) == off)
			break;
	if (rc == 0)
		rc = (*after = strdup(e->name)) ? 0 : -ENOMEM;
	else
		rc = rc == KT_ITEROVER ? -EINVAL : ktfs_errno(rc);
	kt_iter_free(it);
	return rc;
}

static void recent_clear(struct ktfs_dir *d)
{
	d->nrecent = 0;
	d->nnames = 0;
}

static const char *recent_name(const struct ktfs_dir *d, size_t i)
{
	return d->names + d->recent[i].at;
}

static int recent_add(struct ktfs_dir *d, off_t off, const char *name)
{
	size_t len = strlen(name) + 1;

	if (d->nrecent == d->caprecent) {
		size_t cap = d->caprecent ? 2 * d->caprecent : 64;
		struct recent *r = realloc(d->recent, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		d->recent = r;
		d->caprecent = cap;
	}
	if (d->capnames - d->nnames < len) {
		size_t cap = d->capnames ? 2 * d->capnames : 1024;
		char *n;

		while (cap - d->nnames < len)
			cap *= 2;
		if (!(n = realloc(d->names, cap)))
			return -ENOMEM;
		d->names = n;
		d->capnames = cap;
	}
	memcpy(d->names + d->nnames, name, len);
	d->recent[d->nrecent].off = off;
	d->recent[d->nrecent++].at = d->nnames;
	d->nnames += len;
	return 0;
}

/* The start of a reply for offset @off in directory @dir.  -EINVAL when
 * the child @off names is no longer in the directory. */
static int dir_start(struct start *s, struct ktfs *fs, struct ktfs_dir *d,
		     const struct ktfs_node *dir, off_t off)
{
	char *path = NULL;
	size_t len = 0, i;
	int rc;

	s->after = NULL;
	if (off < DIR_OFF_BASE) {
		if (off < 0 || off > DIR_OFF_VALUE)
			return -EINVAL;
		s->stage = (int)off;
		return 0;
	}
	s->stage = 3;
	for (i = d->nrecent; i-- > 0;)
		if (d->recent[i].off == off)
			return (s->after = strdup(recent_name(d, i))) ? 0
								      : -ENOMEM;
	if (off >= DIR_OFF_NAMED)
		return named_start(&s->after, fs, dir, off);
	rc = kt_id_path(&path, &len, fs->store, (uint64_t)off - DIR_OFF_BASE);
	if (rc < 0)
		return rc == KT_ENOTFOUND ? -EINVAL : ktfs_errno(rc);
	/* Still a child of this directory? */
	if (len > dir->path_len &&
	    memcmp(path, dir->path, dir->path_len) == 0 &&
	    (dir->path_len == 1 || path[dir->path_len] == '/') &&
	    !strchr(path + dir->path_len + (dir->path_len > 1), '/'))
		s->after = strdup(strrchr(path, '/') + 1);
	else
		rc = -EINVAL;
	kt_free(path);
	if (rc == 0 && !s->after)
		rc = -ENOMEM;
	return rc;
}

void ktfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ktfs *fs = ktfs_of(req);
	struct ktfs_node n;
	struct ktfs_dir *d;
	int rc;

	rc = ktfs_dir_get(&n, fs, ino);
	ktfs_node_free(&n);
	if (rc < 0) {
		ktfs_reply_err(req, rc);
		return;
	}
	if (!(d = calloc(1, sizeof(*d)))) {
		ktfs_reply_err(req, -ENOMEM);
		return;
	}
	pthread_mutex_init(&d->lock, NULL);
	fi->fh = (uintptr_t)d;
	if (fuse_reply_open(req, fi) != 0) {
		pthread_mutex_destroy(&d->lock);
		free(d);
	}
}

/* One reply being filled. */
struct fill {
	fuse_req_t req;
	struct ktfs *fs;
	struct ktfs_dir *d;
	int plus;
	char *buf;
	size_t size, used;
	off_t last_off; /* of the last entry added */
	int end;        /* the listing ran out before the reply was full */
};

/* Add one entry; 1 if it does not fit (the reply is full). */
static int fill_add(struct fill *f, const char *name, const struct stat *st,
		    off_t off)
{
	struct fuse_entry_param e;
	size_t n;

	if (f->plus) {
		ktfs_entry_param(&e, f->fs, st);
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			e.ino = 0; /* the kernel takes no entry for them */
		n = fuse_add_direntry_plus(f->req, f->buf + f->used,
					   f->size - f->used, name, &e, off);
	} else {
		n = fuse_add_direntry(f->req, f->buf + f->used,
				      f->size - f->used, name, st, off);
	}
	if (n > f->size - f->used)
		return 1;
	f->used += n;
	f->last_off = off;
	return 0;
}

/* ".", ".." and the value file, from stage @stage on.  1: full. */
static int fill_special(struct fill *f, const struct ktfs_node *dir,
			int stage)
{
	struct stat st;
	kt_statbuf ps;
	char *parent;

	if (stage == 0) {
		ktfs_fill_stat(&st, f->fs, dir->path, &dir->st, 0);
		if (fill_add(f, ".", &st, DIR_OFF_DOT))
			return 1;
	}
	if (stage <= 1) {
		memset(&st, 0, sizeof(st));
		st.st_mode = S_IFDIR;
		st.st_ino = dir->st.id;
		if (dir->path_len > 1 && (parent = strdup(dir->path)) != NULL) {
			*strrchr(parent, '/') = '\0';
			if (kt_lstat(&ps, f->fs->store,
				     parent[0] ? parent : "/") == 0)
				st.st_ino = ps.id;
			free(parent);
		}
		if (fill_add(f, "..", &st, DIR_OFF_DOTDOT))
			return 1;
	}
	if (stage <= 2 && (dir->st.kind & KT_KIND_ITEM)) {
		ktfs_fill_stat(&st, f->fs, dir->path, &dir->st, 1);
		if (fill_add(f, f->fs->value_name, &st, DIR_OFF_VALUE))
			return 1;
	}
	return 0;
}

/* The stat of child @e of @dir and the offset after it: full attributes
 * with plus, else the inode number and type (and, for a non-directory,
 * its link count, which decides the offset: one lookup).  1: it is
 * gone. */
static int child_stat(struct stat *st, off_t *off, struct fill *f,
		      const struct ktfs_node *dir, const kt_entry *e)
{
	kt_statbuf ks;
	int rc = 0;

	memset(st, 0, sizeof(*st));
	memset(&ks, 0, sizeof(ks));
	ks.nlink = 1;
	if (e->stat != NULL) {
		/* Read with the listing (KT_LIST_STAT). */
		ks = *e->stat;
		if (f->plus)
			ktfs_fill_stat(st, f->fs, NULL, &ks, 0);
	} else if (f->plus || !(e->kind & KT_KIND_DIR)) {
		/* By the directory's id: its path may be another's by now. */
		rc = kt_lstat_at(&ks, f->fs->store, dir->id, e->name);
		if (rc == 0 && f->plus)
			ktfs_fill_stat(st, f->fs, NULL, &ks, 0);
		if (rc < 0)
			return rc == KT_ENOTFOUND ? 1 : ktfs_errno(rc);
	}
	*off = child_off(e->id, (ks.kind & KT_KIND_DIR) ? 1 : ks.nlink,
			 e->name);
	if (!f->plus) {
		st->st_ino = e->id;
		if (e->kind == KT_KIND_SPECIAL) /* the index row's type */
			st->st_mode = ktfs_type_mode(e->type);
		else
			st->st_mode = (e->kind & KT_KIND_LINK)  ? S_IFLNK
				      : (e->kind & KT_KIND_DIR) ? S_IFDIR
								: S_IFREG;
	}
	return 0;
}

/* The children of @dir after @after, until the reply is full. */
static int fill_children(struct fill *f, const struct ktfs_node *dir,
			 const char *after)
{
	kt_list_options lo = KT_LIST_OPTIONS_INIT;
	const kt_entry *e;
	kt_iter *it = NULL;
	struct stat st;
	off_t off = 0;
	int rc;

	lo.after = after;
	lo.after_len = after ? strlen(after) : 0;
	/* Every child's attributes come with the listing, read ahead
	 * together (on RADOS, many at once) rather than one lookup each. */
	lo.flags = KT_LIST_STAT;
	if ((rc = kt_iter_new(&it, f->fs->store, dir->path, &lo)) < 0)
		return ktfs_errno(rc);
	for (;;) {
		if ((rc = kt_iter_next(&e, it)) < 0) {
			f->end = rc == KT_ITEROVER;
			rc = rc == KT_ITEROVER ? 0 : ktfs_errno(rc);
			break;
		}
		if ((rc = child_stat(&st, &off, f, dir, e)) < 0)
			break;
		if (rc == 1)
			continue; /* gone since the snapshot */
		if (fill_add(f, e->name, &st, off)) {
			rc = 0; /* full */
			break;
		}
		if ((rc = recent_add(f->d, off, e->name)) < 0)
			break;
	}
	kt_iter_free(it);
	return rc;
}

static void dir_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi, int plus)
{
	struct fill f = {req, ktfs_of(req), dir_of(fi), plus, NULL, size,
			 0, 0, 0};
	struct start s = {0, NULL};
	struct ktfs_node dir;
	char *own;
	int rc;

	if (!(f.buf = ktfs_reply_buf(size, &own))) {
		ktfs_reply_err(req, -ENOMEM);
		return;
	}
	pthread_mutex_lock(&f.d->lock);
	if ((rc = ktfs_dir_get(&dir, f.fs, ino)) < 0) {
		/* Removed while open: nothing is left in it. */
		rc = rc == -ENOENT ? 0 : rc;
		f.d->at_end = 0;
		goto out;
	}
	/* The request that follows a reply that reached the end (every
	 * listing ends with one): nothing follows if the directory has
	 * not changed since (every entry made, removed or renamed in it
	 * rewrites its node row, with a new version), and no iterator is
	 * made to find that out.  The kernel does not tell a rewinddir, so
	 * the version, not the handle's history, decides. */
	if (f.d->at_end && off == f.d->end_off &&
	    dir.st.version == f.d->end_ver)
		goto out_dir;
	f.d->at_end = 0;
	if ((rc = dir_start(&s, f.fs, f.d, &dir, off)) < 0)
		goto out_dir;
	recent_clear(f.d);
	if (s.stage < 3 && fill_special(&f, &dir, s.stage))
		goto out_dir;
	rc = fill_children(&f, &dir, s.after);
	if (rc == 0 && f.end && f.used > 0) {
		f.d->at_end = 1;
		f.d->end_off = f.last_off;
		f.d->end_ver = dir.st.version;
	}
out_dir:
	ktfs_node_free(&dir);
out:
	pthread_mutex_unlock(&f.d->lock);
	if (rc < 0 && f.used == 0)
		ktfs_reply_err(req, rc);
	else
		fuse_reply_buf(req, f.buf, f.used);
	free(s.after);
	free(own);
}

void ktfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	dir_read(req, ino, size, off, fi, 0);
}

void ktfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	dir_read(req, ino, size, off, fi, 1);
}

void ktfs_releasedir(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	struct ktfs_dir *d = dir_of(fi);

	(void)ino;
	free(d->recent);
	free(d->names);
	pthread_mutex_destroy(&d->lock);
	free(d);
	fuse_reply_err(req, 0);
}

/* fsync(2) of a directory: its entries are rows like any other, and one
 * synced write makes every earlier write durable. */
void ktfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		   struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	ktfs_reply_err(req, ktfs_errno(kt_sync(ktfs_of(req)->store)));
}
