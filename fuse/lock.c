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
 * it.  F_SETLKW and blocking flock wait on a thread of their own (below,
 * "Waiting"), not on a worker, until the lock is free or the call is
 * interrupted (EINTR).  Taking a lock makes the kernel read the file
 * afresh (lock_set).  No deadlock is detected across hosts: two owners
 * that wait for each other wait until one is interrupted.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
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

/* Drop @p ino's cached attributes (and so, at the next read, its pages):
 * taking a lock is when a program trusts what it reads next (a database
 * another host wrote under the lock a moment ago), so it must not wait for
 * the writer's notify (watch.c); NFS clients revalidate on lock alike.  The
 * next read fetches the attributes, sees a new mtime and drops the pages
 * (auto_inval_data; file.c says why not from here). */
static void lock_taken(struct ktfs *fs, fuse_ino_t ino)
{
	struct fuse_session *se = __atomic_load_n(&fs->se, __ATOMIC_ACQUIRE);

	if (se != NULL)
		fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);
}

/*
 * Waiting.  A request that must wait for a lock (F_SETLKW, flock without
 * LOCK_NB) is not held on its worker thread: with -s there is only one,
 * and with several, waiters would use them all up while the unlock that
 * frees them waits for a worker.  It goes on a list that one thread of
 * the mount works through, asking the store again at growing intervals
 * (WAIT_MIN_US to WAIT_MAX_US) and replying when the lock is taken, the
 * store fails, or the kernel interrupts the request (EINTR).
 */
struct waiter {
	struct waiter *next;
	struct ktfs *fs;
	fuse_req_t req;
	fuse_ino_t ino;
	kt_lock l;
	unsigned int flags;
};

static pthread_mutex_t wmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wcv = PTHREAD_COND_INITIALIZER;
static struct waiter *waiting;
static pthread_t wthread;
static int wrunning, wstop;

/* The kernel interrupted a request: wake the thread, which sees it with
 * fuse_req_interrupted (the callback may come once the waiter is gone). */
static void on_interrupt(fuse_req_t req, void *arg)
{
	(void)req;
	(void)arg;
	pthread_mutex_lock(&wmu);
	pthread_cond_signal(&wcv);
	pthread_mutex_unlock(&wmu);
}

static void *wait_main(void *arg)
{
	useconds_t delay = WAIT_MIN_US;

	(void)arg;
	pthread_mutex_lock(&wmu);
	while (!wstop) {
		struct waiter **pp = &waiting, *w;
		int progress = 0;
		/* Only this thread removes waiters, and others only add
		 * at the end, so pp stays valid while wmu is let go. */
		while ((w = *pp) != NULL) {
			int rc = KT_ELOCKED, intr = fuse_req_interrupted(w->req);
			if (!intr) {
				/* Not under wmu: the store may take a while
				 * (a holder that does not answer). */
				pthread_mutex_unlock(&wmu);
				rc = kt_lock_set(w->fs->store, w->ino, &w->l,
						 w->flags);
				pthread_mutex_lock(&wmu);
			}
			if (rc == KT_ELOCKED && !intr) {
				pp = &w->next;
				continue;
			}
			*pp = w->next;
			progress = 1;
			pthread_mutex_unlock(&wmu);
			if (rc == 0)
				lock_taken(w->fs, w->ino);
			fuse_reply_err(w->req, rc == 0 ? 0
					     : rc == KT_ELOCKED ? EINTR
								: -ktfs_errno(rc));
			free(w);
			pthread_mutex_lock(&wmu);
		}
		if (progress)
			delay = WAIT_MIN_US;
		if (waiting == NULL) {
			delay = WAIT_MIN_US;
			pthread_cond_wait(&wcv, &wmu);
		} else {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)delay * 1000;
			ts.tv_sec += ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			(void)pthread_cond_timedwait(&wcv, &wmu, &ts);
			if (delay < WAIT_MAX_US)
				delay *= 2;
		}
	}
	pthread_mutex_unlock(&wmu);
	return NULL;
}

/* Queue @p req to wait for @p l; 0, or a negative errno (it was not
 * queued: reply yourself). */
static int wait_for(fuse_req_t req, fuse_ino_t ino, const kt_lock *l,
		    unsigned int flags)
{
	struct waiter *w = calloc(1, sizeof(*w));
	int rc = 0;

	if (w == NULL)
		return -ENOMEM;
	w->fs = ktfs_of(req);
	w->req = req;
	w->ino = ino;
	w->l = *l;
	w->flags = flags;
	/* Before the request is queued: once it is, the thread may answer
	 * it at any moment, and req is gone. */
	fuse_req_interrupt_func(req, on_interrupt, NULL);
	pthread_mutex_lock(&wmu);
	if (!wrunning) {
		if (pthread_create(&wthread, NULL, wait_main, NULL) != 0)
			rc = -EAGAIN;
		else
			wrunning = 1;
	}
	if (rc == 0) {
		struct waiter **pp = &waiting;
		while (*pp != NULL)
			pp = &(*pp)->next;
		*pp = w;
		pthread_cond_signal(&wcv);
	}
	pthread_mutex_unlock(&wmu);
	if (rc != 0)
		free(w);
	return rc;
}

void ktfs_locks_stop(void)
{
	struct waiter *w;

	pthread_mutex_lock(&wmu);
	if (!wrunning) {
		pthread_mutex_unlock(&wmu);
		return;
	}
	wstop = 1;
	pthread_cond_signal(&wcv);
	pthread_mutex_unlock(&wmu);
	pthread_join(wthread, NULL);
	while ((w = waiting) != NULL) {
		waiting = w->next;
		fuse_reply_err(w->req, EINTR);
		free(w);
	}
	wrunning = 0;
	wstop = 0;
}

/* Set @p l on @p ino now, or queue the request to wait for it (@p wait),
 * replying either way. */
static void lock_set(fuse_req_t req, fuse_ino_t ino, kt_lock *l,
		     unsigned int flags, int wait)
{
	struct ktfs *fs = ktfs_of(req);
	int rc = kt_lock_set(fs->store, ino, l, flags);

	if (rc == KT_ELOCKED && wait) {
		if ((rc = wait_for(req, ino, l, flags)) == 0)
			return;
		ktfs_reply_err(req, rc);
		return;
	}
	if (rc == 0 && l->type != KT_LOCK_UNLOCK)
		lock_taken(fs, ino);
	ktfs_reply_err(req, ktfs_errno(rc));
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
	/* The kernel keeps no note of the lock: remember which handle the
	 * owner locked through, for release (file.c). */
	if (l.type != KT_LOCK_UNLOCK && fi->fh != 0) {
		struct ktfs_file *f = (struct ktfs_file *)(uintptr_t)fi->fh;
		ktfs_open_lockuse(ktfs_of(req), f->open, f, l.owner);
	}
	lock_set(req, ino, &l, 0, sleep);
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
	lock_set(req, ino, &l, KT_LOCK_WHOLE, !(op & LOCK_NB));
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
