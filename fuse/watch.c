/*
 * watch.c - keep the kernel's caches true to what other processes commit.
 *
 * The kernel keeps what keytreefs told it (names for entry_timeout,
 * attributes for attr_timeout, file pages until the inode is invalidated:
 * file.c opens with keep_cache).  When the CLI, a program using the
 * library or another mount changes the store, the library says what
 * (kt_watch(): names and node ids), on a thread of its own, never inside
 * a request handler, and this file tells the kernel to forget it:
 *
 *   a name (dir, name)  -> fuse_lowlevel_notify_inval_entry(dir's id, name)
 *   a node id           -> fuse_lowlevel_notify_inval_inode(id) and of its
 *                          value file (id | KTFS_VALUE_BIT), whose name in
 *                          its directory is forgotten as well
 *
 * The directory of a name is looked up by path; one that is gone has
 * its own name among the changes, and forgetting that entry takes the
 * kernel's entries below it along.  A process that watches nothing (the
 * CLI) gets its call's answer only after this has run, so what it
 * changed is never seen stale through the mount afterwards.
 */
#include <errno.h>
#include <string.h>

#include "keytreefs.h"

static void on_change(const kt_change *ch, size_t n, void *payload)
{
	struct ktfs *fs = payload;
	struct fuse_session *se = __atomic_load_n(&fs->se, __ATOMIC_ACQUIRE);
	const char *last = NULL; /* the directory looked up last */
	size_t last_len = 0;
	uint64_t last_id = 0;
	size_t i;

	if (se == NULL)
		return;
	for (i = 0; i < n; i++) {
		const kt_change *c = &ch[i];

		if (c->what == KT_CHANGE_NODE) {
			fuse_lowlevel_notify_inval_inode(se, c->id, 0, 0);
			fuse_lowlevel_notify_inval_inode(
				se, c->id | KTFS_VALUE_BIT, 0, 0);
			fuse_lowlevel_notify_inval_entry(se, c->id,
							 fs->value_name,
							 fs->value_name_len);
			continue;
		}
		if (last == NULL || last_len != c->dir_len ||
		    memcmp(last, c->dir, c->dir_len) != 0) {
			char path[KT_PATH_MAX + 1];
			kt_statbuf ks;

			last = c->dir;
			last_len = c->dir_len;
			last_id = 0;
			if (c->dir_len <= KT_PATH_MAX) {
				memcpy(path, c->dir, c->dir_len);
				path[c->dir_len] = '\0';
				if (kt_lstat(&ks, fs->store, path) == 0)
					last_id = ks.id;
			}
		}
		if (last_id != 0)
			fuse_lowlevel_notify_inval_entry(se, last_id, c->name,
							 c->name_len);
	}
}

int ktfs_watch_start(struct ktfs *fs, struct fuse_session *se)
{
	int rc;

	__atomic_store_n(&fs->se, se, __ATOMIC_RELEASE);
	rc = kt_watch(fs->store, on_change, fs);
	if (rc != 0)
		__atomic_store_n(&fs->se, NULL, __ATOMIC_RELEASE);
	return rc;
}

void ktfs_watch_stop(struct ktfs *fs)
{
	if (__atomic_load_n(&fs->se, __ATOMIC_ACQUIRE) == NULL)
		return;
	/* Waits for a callback in progress, which may still use se. */
	kt_watch(fs->store, NULL, NULL);
	__atomic_store_n(&fs->se, NULL, __ATOMIC_RELEASE);
}
