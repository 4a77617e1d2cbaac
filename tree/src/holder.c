/*
 * holder.c - who holds a store that kt_open() found locked.
 *
 * LevelDB locks a database with a POSIX record lock on the file LOCK in its
 * directory.  A record lock has an owner the kernel will name: F_GETLK on
 * that file returns the holder's pid.  From the pid, /proc gives the
 * program's name, and for keytreefs, /proc/self/mounts gives where it
 * mounted the store (keytreefs names its mount after the store directory,
 * fuse.keytreefs).  All of this is best effort and Linux-specific: each
 * step that fails just leaves its part out of the message, which then
 * falls back to "another process".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* Undo the octal escapes (\040 for a space, ...) of a /proc/mounts field,
 * in place. */
static void mounts_unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* The mountpoint of a keytreefs mount of @p dir (absolute, resolved) into
 * @p out; 0 if one was found. */
static int keytreefs_mountpoint(char *out, size_t outsz, const char *dir)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char line[2 * PATH_MAX + 256];
	int found = -1;

	if (f == NULL)
		return -1;
	while (found != 0 && fgets(line, sizeof(line), f) != NULL) {
		char *save = NULL;
		char *fsname = strtok_r(line, " ", &save);
		char *mnt = strtok_r(NULL, " ", &save);
		char *type = strtok_r(NULL, " ", &save);

		if (fsname == NULL || mnt == NULL || type == NULL ||
		    strcmp(type, "fuse.keytreefs") != 0)
			continue;
		mounts_unescape(fsname);
		if (strcmp(fsname, dir) != 0)
			continue;
		mounts_unescape(mnt);
		snprintf(out, outsz, "%s", mnt);
		found = 0;
	}
	fclose(f);
	return found;
}

/* The name of process @p pid (its comm) into @p out; 0 on success. */
static int process_name(char *out, size_t outsz, long pid)
{
	char path[64];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	n = fread(out, 1, outsz - 1, f);
	fclose(f);
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
		n--;
	out[n] = '\0';
	return n > 0 ? 0 : -1;
}

void kt__lock_holder(char *out, size_t outsz, const char *dir)
{
	char lockfile[PATH_MAX + 8], name[64], mnt[PATH_MAX];
	char *real = NULL;
	struct flock fl;
	int fd;

	snprintf(out, outsz, "another process");
	if (snprintf(lockfile, sizeof(lockfile), "%s/LOCK", dir) >=
	    (int)sizeof(lockfile))
		return;
	if ((fd = open(lockfile, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_GETLK, &fl) != 0) {
		close(fd);
		return;
	}
	close(fd);
	if (fl.l_type == F_UNLCK) {
		/* A process's own record locks never conflict with it: LevelDB
		 * refused because this process has the store open already. */
		snprintf(out, outsz, "this process (it has the store open "
				     "already)");
		return;
	}
	if (fl.l_pid <= 0)
		return;
	if (process_name(name, sizeof(name), (long)fl.l_pid) != 0) {
		snprintf(out, outsz, "process %ld", (long)fl.l_pid);
		return;
	}
	if (strcmp(name, "keytreefs") == 0 &&
	    (real = realpath(dir, NULL)) != NULL &&
	    keytreefs_mountpoint(mnt, sizeof(mnt), real) == 0)
		snprintf(out, outsz, "process %ld (keytreefs, mounted on %s)",
			 (long)fl.l_pid, mnt);
	else
		snprintf(out, outsz, "process %ld (%s)", (long)fl.l_pid, name);
	free(real);
}
