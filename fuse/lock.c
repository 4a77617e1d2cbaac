/*
 * lock.c - fcntl(2) record locks and flock(2) on a store that keeps locks
 * for every client (kt_lock_set; a RADOS tree), so that programs on two
 * hosts that lock one file exclude each other.  On other stores keytreefs
 * leaves locks to the kernel (ops.c, init), where they hold for every
 * program of this host.
 *
 * Owners are the kernel's: lock_owner of a request names a process's
 * record locks (its files table) or one open file description's flock.
 * The kernel keeps no copy of a lock the daemon took, so a close of any
 * descriptor of the file (flush) drops the closing owner's record locks,
 * and the release of the last descriptor of an open file description
 * drops its flock.  A lock is on the inode: every path of the file shares
 * it.  F_SETLKW and blocking flock wait here, asking again at growing
 * intervals up to WAIT_MAX_US, until the lock is free or the call is
 * interrupted (EINTR).  Taking a lock makes the kernel read the file
 * afresh (lock_set).  No deadlock is detected across hosts: two owners
 * that wait for each other wait until one is interrupted.
 */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "keytreefs.h"

#define WAIT_MIN_US 5000
#define WAIT_MAX_US 200000

static void range_of(kt_lock *l, const struct flock *fl)
{
	l->start = (uint64_t)fl->l_start;
	l->end = fl->l_len <= 0 ? UINT64_MAX
				: (uint64_t)fl->l_start + (uint64_t)fl->l_len - 1;
}

static int type_of(short t)
{
	return t == F_RDLCK ? KT_LOCK_SHARED
			    : t == F_WRLCK ? KT_LOCK_EXCL : KT_LOCK_UNLOCK;
}

/* Set @p l on @p ino, waiting for it when @p wait: 0 or a negative
 * errno. */
static int lock_set(fuse_req_t req, fuse_ino_t ino, kt_lock *l,
		    unsigned int flags, int wait)
{
	struct ktfs *fs = ktfs_of(req);
	useconds_t delay = WAIT_MIN_US;
	int rc;

	struct fuse_session *se;

	while ((rc = kt_lock_set(fs->store, ino, l, flags)) == KT_ELOCKED &&
	       wait) {
		if (fuse_req_interrupted(req))
			return -EINTR;
		usleep(delay);
		if (delay < WAIT_MAX_US)
			delay *= 2;
	}
	/* Taking a lock is when a program trusts what it reads next (a
	 * database that another host wrote under the lock a moment ago):
	 * drop this file's cached attributes now rather than when the
	 * writer's notify arrives (watch.c), as NFS clients revalidate on
	 * lock; the next read fetches them and, seeing a new mtime, drops
	 * the pages (auto_inval_data; file.c says why not from here). */
	se = __atomic_load_n(&fs->se, __ATOMIC_ACQUIRE);
	if (rc == 0 && l->type != KT_LOCK_UNLOCK && se != NULL)
		fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);
	return ktfs_errno(rc);
}

void ktfs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *fl)
{
	struct ktfs *fs = ktfs_of(req);
	kt_lock l;
	int rc;

	memset(&l, 0, sizeof(l));
	l.type = type_of(fl->l_type);
	l.owner = fi->lock_owner;
	range_of(&l, fl);
	if ((rc = kt_lock_test(fs->store, ino, &l, 0)) != 0) {
		ktfs_reply_err(req, ktfs_errno(rc));
		return;
	}
	if (l.type == KT_LOCK_UNLOCK) {
		fl->l_type = F_UNLCK;
	} else {
		fl->l_type = l.type == KT_LOCK_EXCL ? F_WRLCK : F_RDLCK;
		fl->l_whence = SEEK_SET;
		fl->l_start = (off_t)l.start;
		fl->l_len = l.end == UINT64_MAX ? 0
						: (off_t)(l.end - l.start + 1);
		/* A process of another host has no number here. */
		fl->l_pid = l.here ? (pid_t)l.pid : 0;
	}
	fuse_reply_lock(req, fl);
}

void ktfs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct flock *fl, int sleep)
{
	kt_lock l;

	memset(&l, 0, sizeof(l));
	l.type = type_of(fl->l_type);
	l.owner = fi->lock_owner;
	l.pid = (uint32_t)fl->l_pid;
	range_of(&l, fl);
	ktfs_reply_err(req, lock_set(req, ino, &l, 0, sleep));
}

void ktfs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		int op)
{
	kt_lock l;

	memset(&l, 0, sizeof(l));
	l.type = (op & LOCK_EX) ? KT_LOCK_EXCL
		 : (op & LOCK_SH) ? KT_LOCK_SHARED : KT_LOCK_UNLOCK;
	l.owner = fi->lock_owner;
	l.pid = (uint32_t)fuse_req_ctx(req)->pid;
	ktfs_reply_err(req, lock_set(req, ino, &l, KT_LOCK_WHOLE,
				     !(op & LOCK_NB)));
}

int ktfs_locks_drop(struct ktfs *fs, fuse_ino_t ino, uint64_t owner,
		    int whole)
{
	kt_lock l;

	if (!fs->locks)
		return 0;
	memset(&l, 0, sizeof(l));
	l.type = KT_LOCK_UNLOCK;
	l.owner = owner;
	l.end = UINT64_MAX;
	return ktfs_errno(kt_lock_set(fs->store, ino, &l,
				      whole ? KT_LOCK_WHOLE : 0));
}
