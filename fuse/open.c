/*
 * open.c - the open table of keytreefs, and the orphans of files that are
 * unlinked or replaced while open.
 *
 * The table counts the open handles of each inode (node id, with bit 63
 * set for the value file of an item+dir); each handle points at its
 * inode's entry.  With the low-level API the kernel sends UNLINK (or
 * RENAME over the file) at once and RELEASE at the last close; when the
 * last name of an inode with handles goes away, ns.c makes it a library
 * orphan here: a plain item is detached as it is (kt_orphan_detach, one
 * atomic step that keeps its id, value and attributes); the value of an
 * item+dir cannot be detached without its directory, so it is copied into
 * a temporary item that is detached at once.  Requests on the inode, with
 * or without a handle, are then served by the orphan's id (node.c), and
 * the last release drops the orphan (kt_orphan_release).  An item with
 * further paths (hard links, kt_link) just loses the one unlinked: it is
 * still in the tree, and its handles reach it by id as before.  Orphans of
 * a daemon that died are dropped by the library at the next kt_open.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keytreefs.h"


/* A handle that took range locks as an owner (lock.c). */
struct lkuse {
	uint64_t owner;
	const void *fh;
};

struct ktfs_open {
	uint64_t ino;
	unsigned int count; /* open handles */
	int orphaned;       /* no name left: served by orphan */
	int hooked;         /* in the table (an orphaned entry may not be) */
	uint64_t orphan;    /* the orphan's id */
	struct lkuse *lk;   /* who took range locks through which handle */
	size_t nlk, caplk;
	uint64_t gen;       /* told apart from the entries before it */
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
	if (o->hooked)
		fs->nhooked--;
	o->hooked = 0;
}

/* Whether value file @ino exists now, its node an item and a directory:
 * 1 when it does (the number is in use again) or when that cannot be
 * told, 0 when the node has no value or is gone. */
static int value_back(struct ktfs *fs, uint64_t ino)
{
	uint64_t id = ino & ~KTFS_VALUE_BIT;
	kt_statbuf st;
	int rc = kt_id_lstat(&st, NULL, NULL, fs->store, id);

	if (rc == KT_ENOTFOUND || (rc == 0 && st.id != id))
		return 0;
	return rc < 0 || (st.kind & (KT_KIND_ITEM | KT_KIND_DIR)) ==
				 (KT_KIND_ITEM | KT_KIND_DIR);
}

/* Entries are told apart by a number of their own, not by address: an
 * entry freed while the lock was let go may leave its address to the
 * next. */
static uint64_t open_gen;

struct ktfs_open *ktfs_open_get(struct ktfs *fs, uint64_t ino, int how,
				int *err)
{
	struct ktfs_open **op, *o;
	uint64_t seen = 0;
	int back = -1, tries = 0;

	*err = -ENOMEM;
again:
	pthread_mutex_lock(&fs->lock);
	op = slot(fs, ino);
	/* An open of an orphan (through /proc/PID/fd) that lost the race
	 * with its last release: the orphan is gone. */
	if (how == KTFS_OPEN_ORPHAN && !(*op && (*op)->orphaned)) {
		pthread_mutex_unlock(&fs->lock);
		*err = -ENOENT;
		return NULL;
	}
	/* An orphaned entry, and the open began on a named file: an unlink
	 * (or a rename over it) came in between, while other handles kept
	 * the file, or the number is in use again.  The open joins the
	 * orphan, as if it had come just before the unlink: setting the
	 * entry aside would leave the handles already open unreachable by
	 * inode number (a GETATTR or SETATTR without a handle: ENOENT).  A
	 * plain item's id is never used again.  A value file's number is,
	 * when its directory gets a value anew: the open is then of the
	 * file that has the name now, and the entry is set aside.  A file
	 * this request made is always that; for an open of a name, the
	 * directory's node tells, read without the lock (and again if the
	 * entry changed meanwhile). */
	if (*op && (*op)->orphaned && how != KTFS_OPEN_ORPHAN &&
	    (ino & KTFS_VALUE_BIT)) {
		if (how == KTFS_OPEN_NAMED && (back < 0 || (*op)->gen != seen) &&
		    tries++ < 3) {
			seen = (*op)->gen;
			pthread_mutex_unlock(&fs->lock);
			back = value_back(fs, ino);
			goto again;
		}
		if (how != KTFS_OPEN_NAMED || back != 0 || (*op)->gen != seen)
			unhook(fs, *op);
	}
	op = slot(fs, ino);
	if (!*op && (*op = calloc(1, sizeof(**op))) != NULL) {
		(*op)->ino = ino;
		(*op)->hooked = 1;
		(*op)->gen = __atomic_add_fetch(&open_gen, 1, __ATOMIC_RELAXED);
		fs->nhooked++;
	}
	if ((o = *op) != NULL)
		o->count++;
	pthread_mutex_unlock(&fs->lock);
	return o;
}

struct ktfs_open *ktfs_open_tmpfile(struct ktfs *fs, uint64_t id)
{
	struct ktfs_open **op, *o;

	pthread_mutex_lock(&fs->lock);
	op = slot(fs, id);
	/* Ids are never reused: no entry can have this one yet. */
	if (!*op && (*op = calloc(1, sizeof(**op))) != NULL) {
		(*op)->ino = id;
		(*op)->hooked = 1;
		(*op)->gen = __atomic_add_fetch(&open_gen, 1, __ATOMIC_RELAXED);
		fs->nhooked++;
		(*op)->orphaned = 1;
		(*op)->orphan = id;
	}
	if ((o = *op) != NULL)
		o->count++;
	pthread_mutex_unlock(&fs->lock);
	return o;
}

int ktfs_open_link(struct ktfs *fs, uint64_t ino, const char *path)
{
	struct ktfs_open *o;
	int rc;

	pthread_mutex_lock(&fs->lock);
	o = *slot(fs, ino);
	/* Only an unnamed file of its own id (O_TMPFILE) can get a name: the
	 * orphan of an unlinked value file has another id, and the kernel
	 * lets no unlinked file but an O_TMPFILE one be linked. */
	if (!o || !o->orphaned || o->orphan != ino) {
		rc = -EPERM;
	} else if ((rc = ktfs_errno(kt_orphan_link(fs->store, ino, path))) ==
		   0) {
		o->orphaned = 0;
		o->orphan = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
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
		free(o->lk);
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

/* Copy the value, owner, times and attributes of the node @id's value
 * (an item, or an item+dir) into a new orphan (stored blocks only, so
 * holes stay holes); @oid receives it.  With @drop the node's value goes
 * in the same atomic step, so no write can fall between copy and drop.
 * The value file of an item+dir shows its mode without the execute bits,
 * and so does the copy. */
static int orphan_copy(uint64_t *oid, struct ktfs *fs, uint64_t id, int drop)
{
	kt_setattr_args a = KT_SETATTR_ARGS_INIT;
	kt_statbuf ks;
	int rc;

	rc = kt_orphan_copy_id(oid, fs->store, id, drop ? KT_DELETE_ITEM : 0);
	if (rc < 0)
		return rc;
	if ((rc = kt_orphan_stat(&ks, fs->store, *oid)) == 0 &&
	    (ks.mode & 0111)) {
		a.mask = KT_SET_MODE;
		a.mode = ks.mode & 0666;
		rc = kt_orphan_setattr(fs->store, *oid, &a);
	}
	/* The value is gone from the node already: the orphan, even with
	 * its mode unchanged, is what its handles must keep. */
	if (rc < 0 && !drop)
		kt_orphan_release(fs->store, *oid);
	return drop ? 0 : rc;
}

/* The library's answer when the node seen at a name is no longer there
 * (another process renamed or replaced it): look again. */
static int changed(int code)
{
	return code == KT_ECONFLICT ? -EAGAIN : ktfs_errno(code);
}

int ktfs_orphan_make(struct ktfs *fs, uint64_t ino, uint64_t dir,
		     const char *name, enum ktfs_orphan_how how)
{
	struct ktfs_open *o = *slot(fs, ino);
	uint64_t id = ino & ~KTFS_VALUE_BIT, oid = 0;
	int rc;

	if (!o)
		return -ENOENT;
	if (how == KTFS_ORPHAN_DETACH) {
		/* EPERM: it gained a path meanwhile; look again. */
		rc = kt_orphan_detach_at(fs->store, dir, name, id);
		if (rc == KT_EPERM)
			rc = KT_ECONFLICT;
		oid = id;
	} else {
		rc = orphan_copy(&oid, fs, id, how == KTFS_ORPHAN_TAKE);
	}
	if (rc < 0)
		return (ino & KTFS_VALUE_BIT) && rc == KT_EISDIR ? -ENOENT
								: changed(rc);
	o->orphaned = 1;
	o->orphan = oid;
	return 0;
}

void ktfs_orphan_unmake(struct ktfs *fs, uint64_t ino, uint64_t dir,
			const char *name)
{
	struct ktfs_open *o = *slot(fs, ino);
	char *dpath = NULL, *path = NULL;
	size_t dlen = 0;

	if (!o || !o->orphaned)
		return;
	if (dir == 0) {
		kt_orphan_release(fs->store, o->orphan);
	} else {
		/* A detached file goes back under its name if that is still
		 * free; if not, it stays an orphan for its handles (its
		 * content is never dropped while they are open). */
		if (kt_id_path(&dpath, &dlen, fs->store, dir) < 0 ||
		    !(path = ktfs_child_path(dpath, dlen, name)) ||
		    kt_orphan_link(fs->store, o->orphan, path) < 0) {
			kt_free(dpath);
			free(path);
			return;
		}
		kt_free(dpath);
		free(path);
	}
	o->orphaned = 0;
	o->orphan = 0;
}

void ktfs_open_setaside(struct ktfs *fs, uint64_t ino)
{
	struct ktfs_open *o = *slot(fs, ino);

	if (o && o->orphaned)
		unhook(fs, o);
}

int ktfs_unlink_file_held(struct ktfs *fs, uint64_t dir, const char *name,
			  uint64_t ino, uint32_t nlink, int or_delete)
{
	int value = (ino & KTFS_VALUE_BIT) != 0;
	uint64_t id = ino & ~KTFS_VALUE_BIT;
	int rc;

	/* With other paths left the item stays in the tree, and its handles
	 * reach it by id (kt_id_lstat gives one of those paths).  Every
	 * removal is conditional on the node decided about: the plain
	 * file's on its id at the name, the value's on its directory's id. */
	if (ktfs_open_busy(fs, ino) == 0 || (!value && nlink > 1)) {
		if (!or_delete)
			rc = 1;
		else if (value)
			rc = (rc = kt_id_delete(fs->store, id,
						KT_DELETE_ITEM)) == KT_EISDIR
				     ? -ENOENT
				     : ktfs_errno(rc);
		else
			rc = changed(kt_delete_at_if(fs->store, dir, name, id,
						     KT_DELETE_NOTDIR));
	} else if (!value) {
		rc = ktfs_orphan_make(fs, ino, dir, name, KTFS_ORPHAN_DETACH);
	} else {
		rc = ktfs_orphan_make(fs, ino, dir, name,
				      or_delete ? KTFS_ORPHAN_TAKE
						: KTFS_ORPHAN_COPY);
	}
	return rc;
}

int ktfs_unlink_file(struct ktfs *fs, uint64_t dir, const char *name,
		     uint64_t ino, uint32_t nlink, int or_delete)
{
	int rc;

	ktfs_open_lock(fs);
	rc = ktfs_unlink_file_held(fs, dir, name, ino, nlink, or_delete);
	ktfs_open_unlock(fs);
	return rc;
}

int ktfs_unlink_unopened(struct ktfs *fs, uint64_t dir, const char *name)
{
	int rc = 1;

	ktfs_open_lock(fs);
	if (fs->nhooked == 0)
		rc = ktfs_errno(kt_delete_at(fs->store, dir, name,
					     KT_DELETE_NOTDIR));
	ktfs_open_unlock(fs);
	return rc;
}

void ktfs_open_lockuse(struct ktfs *fs, struct ktfs_open *o, const void *fh,
		       uint64_t owner)
{
	size_t i;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < o->nlk; i++)
		if (o->lk[i].owner == owner && o->lk[i].fh == fh)
			break;
	if (i == o->nlk) {
		if (o->nlk == o->caplk) {
			size_t cap = o->caplk ? 2 * o->caplk : 4;
			struct lkuse *n = realloc(o->lk, cap * sizeof(*n));
			if (n != NULL) {
				o->lk = n;
				o->caplk = cap;
			}
		}
		/* Out of memory: the owner's locks stay until it closes
		 * the file in this process, or the mount ends. */
		if (o->nlk < o->caplk) {
			o->lk[o->nlk].owner = owner;
			o->lk[o->nlk++].fh = fh;
		}
	}
	pthread_mutex_unlock(&fs->lock);
}

size_t ktfs_open_lockuse_end(struct ktfs *fs, struct ktfs_open *o,
			     const void *fh, uint64_t **out)
{
	size_t i, j, k, n = 0;
	uint64_t *v;

	*out = NULL;
	pthread_mutex_lock(&fs->lock);
	v = o->nlk ? malloc(o->nlk * sizeof(*v)) : NULL;
	for (i = 0, j = 0; i < o->nlk; i++) {
		if (o->lk[i].fh != fh) {
			o->lk[j++] = o->lk[i];
			continue;
		}
		if (v != NULL)
			v[n++] = o->lk[i].owner;
	}
	o->nlk = j;
	/* An owner another handle of the file still uses keeps its locks
	 * (a process's record locks outlive the descriptions it did not
	 * close). */
	for (i = 0, k = 0; i < n; i++) {
		for (j = 0; j < o->nlk && o->lk[j].owner != v[i]; j++)
			;
		if (j == o->nlk)
			v[k++] = v[i];
	}
	pthread_mutex_unlock(&fs->lock);
	*out = v;
	return k;
}
