/*
 * open.c - the open table of keytreefs, and the orphans of files that are
 * unlinked or replaced while open.
 *
 * The table counts the open handles of each inode (node id, with bit 63
 * set for the value file of an item+dir); each handle points at its
 * inode's entry.  With the low-level API the kernel sends UNLINK (or
 * RENAME over the file) at once and RELEASE at the last close; when the
 * name of an inode with handles goes away, ns.c makes it a library orphan
 * here: a plain item is detached as it is (kt_orphan_detach, one atomic
 * step that keeps its id, value and attributes); the value of an item+dir
 * cannot be detached without its directory, so it is copied into a
 * temporary item that is detached at once.  Requests on the inode, with or
 * without a handle, are then served by the orphan's id (node.c), and the
 * last release drops the orphan (kt_orphan_release).  Orphans of a daemon
 * that died are dropped by the library at the next kt_open.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keytreefs.h"

/* Temporary copies live at "/" KTFS_COPY_PREFIX "<n>" for the moment
 * between their creation and their detach. */
#define KTFS_COPY_PREFIX ".keytreefs-copy."

struct ktfs_open {
	uint64_t ino;
	unsigned int count; /* open handles */
	int orphaned;       /* no name left: served by orphan */
	int hooked;         /* in the table (an orphaned entry may not be) */
	uint64_t orphan;    /* the orphan's id */
	struct ktfs_open *next;
};

/* The slot that holds (or would hold) @ino; fs->lock held. */
static struct ktfs_open **slot(struct ktfs *fs, uint64_t ino)
{
	struct ktfs_open **op;

	for (op = &fs->open[ino % KTFS_OPEN_BUCKETS]; *op; op = &(*op)->next)
		if ((*op)->ino == ino)
			break;
	return op;
}

/* Take @o out of the table (it lives on while it has handles). */
static void unhook(struct ktfs *fs, struct ktfs_open *o)
{
	struct ktfs_open **op = slot(fs, o->ino);

	if (o->hooked && *op == o) {
		*op = o->next;
		o->next = NULL;
	}
	o->hooked = 0;
}

struct ktfs_open *ktfs_open_get(struct ktfs *fs, uint64_t ino, int orphan)
{
	struct ktfs_open **op, *o;

	pthread_mutex_lock(&fs->lock);
	op = slot(fs, ino);
	if (*op && (*op)->orphaned && !orphan)
		unhook(fs, *op); /* a value file's number, in use again */
	op = slot(fs, ino);
	if (!*op && (*op = calloc(1, sizeof(**op))) != NULL) {
		(*op)->ino = ino;
		(*op)->hooked = 1;
	}
	if ((o = *op) != NULL)
		o->count++;
	pthread_mutex_unlock(&fs->lock);
	return o;
}

int ktfs_open_put(struct ktfs *fs, struct ktfs_open *o)
{
	uint64_t id = 0;
	int orphaned = 0, rc;

	pthread_mutex_lock(&fs->lock);
	if (--o->count == 0) {
		unhook(fs, o);
		orphaned = o->orphaned;
		id = o->orphan;
		free(o);
	}
	pthread_mutex_unlock(&fs->lock);
	if (!orphaned)
		return 0;
	/* Nobody can reach the orphan any more: drop it unlocked. */
	if ((rc = kt_orphan_release(fs->store, id)) < 0)
		fprintf(stderr, "keytreefs: dropping orphan %" PRIu64 ": %s\n",
			id, kt_errmsg());
	return ktfs_errno(rc);
}

int ktfs_open_orphan(struct ktfs *fs, const struct ktfs_open *o, uint64_t ino,
		     uint64_t *id)
{
	int orphaned = 0;

	pthread_mutex_lock(&fs->lock);
	if (!o)
		o = *slot(fs, ino);
	if (o && o->orphaned) {
		orphaned = 1;
		*id = o->orphan;
	}
	pthread_mutex_unlock(&fs->lock);
	return orphaned;
}

void ktfs_open_lock(struct ktfs *fs)
{
	pthread_mutex_lock(&fs->lock);
}

void ktfs_open_unlock(struct ktfs *fs)
{
	pthread_mutex_unlock(&fs->lock);
}

unsigned int ktfs_open_busy(struct ktfs *fs, uint64_t ino)
{
	struct ktfs_open *o = *slot(fs, ino);

	return o && !o->orphaned ? o->count : 0;
}

/* Copy the value, mode, owner and times of the item (or item+dir) at
 * @path into a new orphan; @id receives it.  Costs the value's size.  The
 * copy has a name only between its kt_put and its kt_orphan_detach. */
static int orphan_copy(uint64_t *id, struct ktfs *fs, const char *path)
{
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_setattr_args a = {0};
	kt_statbuf ks, ts;
	char tmp[64];
	void *val = NULL;
	size_t len = 0;
	int rc, tries = 0;

	if ((rc = kt_stat(&ks, fs->store, path)) < 0 ||
	    (rc = kt_get(&val, &len, fs->store, path)) < 0)
		return rc;
	o.flags = KT_CREATE_EXCL | KT_CREATE_MODE | KT_CREATE_OWNER;
	o.mode = ks.mode & ((ks.kind & KT_KIND_DIR) ? 0666 : 07777);
	o.uid = ks.uid;
	o.gid = ks.gid;
	do {
		snprintf(tmp, sizeof(tmp), "/%s%" PRIu64, KTFS_COPY_PREFIX,
			 ++fs->copy_seq);
		rc = kt_lstat(&ts, fs->store, tmp);
		if (rc == KT_ENOTFOUND)
			rc = kt_put(fs->store, tmp, val, len, &o);
		else if (rc == 0)
			rc = KT_EEXISTS;
	} while (rc == KT_EEXISTS && ++tries < 16);
	kt_free(val);
	if (rc < 0)
		return rc;
	if ((rc = kt_orphan_detach(id, fs->store, tmp)) < 0) {
		kt_delete(fs->store, tmp, KT_DELETE_ITEM);
		return rc;
	}
	a.mask = KT_SET_ATIME | KT_SET_MTIME;
	a.atime_ns = ks.atime_ns;
	a.mtime_ns = ks.mtime_ns;
	kt_orphan_setattr(fs->store, *id, &a); /* times only: best effort */
	return 0;
}

int ktfs_orphan_make(struct ktfs *fs, uint64_t ino, const char *path,
		     enum ktfs_orphan_how how)
{
	struct ktfs_open *o = *slot(fs, ino);
	uint64_t id = 0;
	int rc;

	if (!o)
		return -ENOENT;
	if (how == KTFS_ORPHAN_DETACH)
		rc = kt_orphan_detach(&id, fs->store, path);
	else
		rc = orphan_copy(&id, fs, path);
	if (rc < 0)
		return ktfs_errno(rc);
	o->orphaned = 1;
	o->orphan = id;
	return 0;
}

void ktfs_orphan_unmake(struct ktfs *fs, uint64_t ino)
{
	struct ktfs_open *o = *slot(fs, ino);

	if (!o || !o->orphaned)
		return;
	kt_orphan_release(fs->store, o->orphan);
	o->orphaned = 0;
	o->orphan = 0;
}

void ktfs_open_setaside(struct ktfs *fs, uint64_t ino)
{
	struct ktfs_open *o = *slot(fs, ino);

	if (o && o->orphaned)
		unhook(fs, o);
}

int ktfs_unlink_file(struct ktfs *fs, const char *path, uint64_t ino,
		     int value, int or_delete)
{
	int rc;

	ktfs_open_lock(fs);
	if (ktfs_open_busy(fs, ino) == 0) {
		rc = or_delete ? ktfs_errno(kt_delete(fs->store, path,
						      value ? KT_DELETE_ITEM
							    : 0))
			       : 1;
	} else if (!value) {
		rc = ktfs_orphan_make(fs, ino, path, KTFS_ORPHAN_DETACH);
	} else if ((rc = ktfs_orphan_make(fs, ino, path, KTFS_ORPHAN_COPY)) ==
			   0 &&
		   or_delete) {
		rc = ktfs_errno(kt_delete(fs->store, path, KT_DELETE_ITEM));
		if (rc < 0)
			ktfs_orphan_unmake(fs, ino);
	}
	ktfs_open_unlock(fs);
	return rc;
}
