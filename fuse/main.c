/*
 * main.c - keytreefs: mount a keytree store as a filesystem.
 *
 *   keytreefs [OPTIONS] STORE MOUNTPOINT
 *
 * STORE is a directory or a RADOS location, rados:POOL[/NAMESPACE]/TREE
 * (kt_open()); -o ceph_conf=PATH and -o ceph_client=NAME are ours, for
 * the latter, and never reach the kernel.
 *
 * Parses our options and libfuse's; without -f, forks and leaves the
 * parent waiting; then (in the process that will serve the mount, the only
 * one that ever opens the store) opens the store, makes a libfuse
 * low-level session, mounts, tells a waiting parent it may exit, runs
 * libfuse's multi-threaded session loop until unmount, SIGINT or SIGTERM,
 * then unmounts and closes the store.  Also run by mount.fuse3 for
 * `mount -t fuse.keytreefs` and /etc/fstab lines.  docs/FUSE.md and
 * docs/keytreefs.1 describe it.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keytreefs.h"

/* The command line, as fuse_opt_parse() fills it. */
struct options {
	char *store;
	char *mountpoint;
	int nonopts;
	int read_only;
	int durable;
	int create;
	int typed;
	int no_default_permissions;
	char *value_name;
	char *abslinks;
	char *ceph_conf;
	char *ceph_client;
	char *cache;         /* -o cache=SIZE, as given */
	size_t cache_bytes;  /* and as read */
	char *write_buffer;  /* -o write_buffer=SIZE, as given */
	size_t wbuf_bytes;   /* and as read */
	char *readahead;     /* -o readahead=SIZE, as given */
	size_t ra_bytes;     /* and as read */
	double entry_timeout;
	double attr_timeout;
	double negative_timeout;
	int show_help;
	int show_version;
};

enum { KEY_HELP, KEY_VERSION, KEY_RO };

#define OPT(t, p, v) {t, offsetof(struct options, p), v}

static const struct fuse_opt option_spec[] = {
	OPT("durable", durable, 1),
	OPT("create", create, 1),
	OPT("typed", typed, 1),
	OPT("no_default_permissions", no_default_permissions, 1),
	OPT("value_name=%s", value_name, 0),
	OPT("abslinks=%s", abslinks, 0),
	OPT("ceph_conf=%s", ceph_conf, 0),
	OPT("ceph_client=%s", ceph_client, 0),
	OPT("cache=%s", cache, 0),
	OPT("write_buffer=%s", write_buffer, 0),
	OPT("readahead=%s", readahead, 0),
	OPT("entry_timeout=%lf", entry_timeout, 0),
	OPT("attr_timeout=%lf", attr_timeout, 0),
	OPT("negative_timeout=%lf", negative_timeout, 0),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END,
};

static void usage(const char *prog)
{
	printf("usage: %s [options] STORE MOUNTPOINT\n\n"
	       "Mount the keytree store STORE on MOUNTPOINT.  STORE is a "
	       "directory, or\nrados:POOL/TREE or rados:POOL/NAMESPACE/TREE "
	       "for a tree in a Ceph cluster's\npool (a directory whose "
	       "name starts with 'rados:' is given as ./rados:...).\n"
	       "Without -f, keytreefs returns once the mount is up and "
	       "serves it in the\nbackground until it is unmounted "
	       "(fusermount3 -u MOUNTPOINT).\n\n"
	       "keytreefs options:\n"
	       "    -o ro                  mount and open the store read-only\n"
	       "    -o durable             flush every write to disk before "
	       "it returns\n"
	       "    -o create              create the store if it does not "
	       "exist\n"
	       "    -o typed               with create: a store with typed "
	       "names (numbers\n"
	       "                           by value, then UUIDs, then other "
	       "names)\n"
	       "    -o value_name=NAME     name of an item+directory's own "
	       "value file\n"
	       "                           (must contain the store's "
	       "delimiter;\n"
	       "                           default: the delimiter + "
	       "\"value\")\n"
	       "    -o abslinks=store|host how absolute link targets are "
	       "read (default:\n"
	       "                           store: relative to the store's "
	       "root)\n"
	       "    -o ceph_conf=PATH      a RADOS store: the cluster's "
	       "ceph.conf (default:\n"
	       "                           $KEYTREE_CEPH_CONF, else Ceph's "
	       "own search)\n"
	       "    -o ceph_client=NAME    a RADOS store: the client to "
	       "connect as, e.g.\n"
	       "                           client.admin (default: "
	       "$KEYTREE_CEPH_CLIENT, else\n"
	       "                           Ceph's)\n"
	       "    -o cache=SIZE          a directory store: LevelDB's "
	       "block cache, bytes\n"
	       "                           or with K, M or G (default: "
	       "8M); what the daemon\n"
	       "                           keeps of the store in memory\n"
	       "    -o write_buffer=SIZE   a directory store: LevelDB's "
	       "write buffer, 1M to\n"
	       "                           1G (default: 12M); the daemon "
	       "holds up to twice\n"
	       "                           this while writes come faster "
	       "than the disk\n"
	       "                           takes them; smaller means more "
	       "compaction\n"
	       "    -o readahead=SIZE      how far the kernel reads ahead "
	       "of a file being read\n"
	       "                           in order, 0 or 4K to 64M "
	       "(default: 1M; 0 keeps\n"
	       "                           the kernel's 128K); set through "
	       "/sys/class/bdi,\n"
	       "                           which only root may write\n"
	       "    -o no_default_permissions  leave permission checks to "
	       "nobody (default:\n"
	       "                           the kernel checks them)\n"
	       "    -o entry_timeout=T     kernel cache of names, seconds "
	       "(default: 1)\n"
	       "    -o attr_timeout=T      kernel cache of attributes, "
	       "seconds (default: 1)\n"
	       "    -o negative_timeout=T  kernel cache of missing names, "
	       "seconds (default: 0)\n"
	       "    -h, --help             this help\n"
	       "    -V, --version          print versions\n\n"
	       "FUSE options:\n"
	       "    -f                     stay in the foreground (default: "
	       "detach once mounted)\n"
	       "    -d, -o debug           print every request (implies -f)\n"
	       "    -s                     serve requests on one thread\n"
	       "    -o max_threads=N       worker threads at most (default: "
	       "10)\n"
	       "    -o max_idle_threads=N  idle worker threads kept "
	       "(default: 10)\n"
	       "    -o clone_fd            a /dev/fuse descriptor per worker "
	       "thread\n"
	       "    -o allow_other         let other users use the mount "
	       "(default: only you)\n"
	       "    -o allow_root          let root use the mount too\n"
	       "    -o auto_unmount        unmount when keytreefs exits, "
	       "however it exits\n\n"
	       "See keytreefs(1) and docs/FUSE.md.\n",
	       prog);
}

/* One clear line when the mountpoint is unusable (libfuse would say "bad
 * mount point" and then we "no mountpoint"); 0 if it is a directory. */
static int mountpoint_check(const char *mnt)
{
	struct stat st;

	if (stat(mnt, &st) != 0 && errno == ENOTCONN) {
		fprintf(stderr, "keytreefs: %s: a mount whose daemon is gone "
				"is there (fusermount3 -u %s removes it)\n",
			mnt, mnt);
		return -1;
	}
	if (stat(mnt, &st) != 0) {
		fprintf(stderr, "keytreefs: %s: %s (the mountpoint must be an "
				"existing directory)\n",
			mnt, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "keytreefs: %s: not a directory (the mountpoint "
				"must be an existing directory)\n",
			mnt);
		return -1;
	}
	return 0;
}

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct options *o = data;

	(void)outargs;
	switch (key) {
	case KEY_HELP:
		o->show_help = 1;
		return 0;
	case KEY_VERSION:
		o->show_version = 1;
		return 0;
	case KEY_RO:
		o->read_only = 1;
		return 1; /* the kernel mounts read-only too */
	case FUSE_OPT_KEY_NONOPT:
		if (o->nonopts++ == 0) {
			o->store = strdup(arg);
			return o->store ? 0 : -1;
		}
		if (o->nonopts == 2)
			return mountpoint_check(arg) ? -1 : 1;
		fprintf(stderr, "keytreefs: unexpected argument '%s'\n", arg);
		return -1;
	default:
		return 1;
	}
}

/* Add "-o NAME=VALUE" with VALUE's commas and backslashes escaped. */
static int add_escaped_opt(struct fuse_args *args, const char *name,
			   const char *value)
{
	size_t n = strlen(name), i, j = 0;
	char *s = malloc(3 + n + 2 * strlen(value) + 1);
	int rc;

	if (!s)
		return -1;
	j = (size_t)sprintf(s, "-o%s=", name);
	for (i = 0; value[i]; i++) {
		if (value[i] == ',' || value[i] == '\\')
			s[j++] = '\\';
		s[j++] = value[i];
	}
	s[j] = '\0';
	rc = fuse_opt_add_arg(args, s);
	free(s);
	return rc;
}

/* Read a size such as "65536", "512K", "64M" or "2G" (binary units) into
 * *@p out: 0, or -1 when it is not one or is outside 1 MiB to 1 TiB. */
static int parse_bytes(const char *s, unsigned long long min,
		       unsigned long long max, int zero, size_t *out);

/* A size of 1M to 1T: bytes, or a number with K, M or G. */
static int parse_size(const char *s, size_t *out)
{
	return parse_bytes(s, 1ull << 20, 1ull << 40, 0, out);
}

/* A size of @p min to @p max, or 0 if @p zero: bytes, or a number with
 * K, M or G. */
static int parse_bytes(const char *s, unsigned long long min,
		       unsigned long long max, int zero, size_t *out)
{
	unsigned long long v, unit = 1;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end == 'K' || *end == 'k')
		unit = 1ull << 10;
	else if (*end == 'M' || *end == 'm')
		unit = 1ull << 20;
	else if (*end == 'G' || *end == 'g')
		unit = 1ull << 30;
	if (unit != 1)
		end++;
	if (*end != '\0' || v > (1ull << 40) / unit)
		return -1;
	v *= unit;
	if ((v < min && !(v == 0 && zero)) || v > max || v > SIZE_MAX)
		return -1;
	*out = (size_t)v;
	return 0;
}

/* Open the store; print why not and return non-zero on failure. */
static int store_open(struct ktfs *fs, const struct options *o)
{
	kt_options ko = KT_OPTIONS_INIT;
	const char *msg;
	int rc;

	ko.read_only = o->read_only;
	ko.sync = o->durable;
	ko.create_if_missing = o->create && !o->read_only;
	ko.typed_names = o->typed;
	ko.ceph_conf = o->ceph_conf;
	ko.ceph_client = o->ceph_client;
	ko.cache_size = o->cache_bytes;
	/* Less than the library's 16 MiB: a daemon copying a large file in
	 * holds up to two buffers, and 16 MiB ones took its resident memory
	 * to 51 to 76 MiB, 12 MiB ones to 42 to 54, 8 MiB ones to 35 to 40;
	 * but random writes into a large file took about a quarter longer
	 * with 8 MiB, and about as long with 12 (docs/PERFORMANCE.md). */
	ko.write_buffer_size = o->wbuf_bytes ? o->wbuf_bytes
					     : (size_t)12 << 20;
	/* kt_open drops the orphans (files unlinked while open) that a
	 * daemon which died left behind. */
	rc = kt_open(&fs->store, fs->store_dir, &ko);
	if (rc == 0) {
		/* Does the store keep locks for every client (lock.c)?
		 * Dropping a lock nobody holds costs nothing and says. */
		kt_lock none;
		memset(&none, 0, sizeof(none));
		none.end = UINT64_MAX;
		fs->locks = kt_lock_set(fs->store, FUSE_ROOT_ID, &none, 0) == 0;
		return 0;
	}
	switch (rc) {
	case KT_EBUSY:
		/* The library's message names the holder when it can. */
		msg = strstr(kt_errmsg(), "in use by ");
		fprintf(stderr, "keytreefs: %s: the store is %s; not mounting\n",
			fs->store_dir, msg ? msg : "in use by another process");
		break;
	case KT_ENOTFOUND:
		fprintf(stderr,
			"keytreefs: %s: no keytree store here (-o create "
			"makes one)\n",
			fs->store_dir);
		break;
	default:
		fprintf(stderr, "keytreefs: %s: %s (%s)\n", fs->store_dir,
			kt_strerror(rc), kt_errmsg());
		break;
	}
	return 1;
}

/* FUSE's root inode (FUSE_ROOT_ID, 1) is the store's root node, because
 * inode numbers are node ids: the root's must be 1. */
static int root_check(struct ktfs *fs)
{
	kt_statbuf ks;
	int rc = kt_lstat(&ks, fs->store, "/");

	if (rc < 0 || ks.id != FUSE_ROOT_ID) {
		fprintf(stderr, "keytreefs: %s: the root node %s\n",
			fs->store_dir,
			rc < 0 ? kt_errmsg() : "does not have id 1");
		return 1;
	}
	return 0;
}

/* Is @p store a RADOS location rather than a directory (as kt_open()
 * tells them apart)? */
static int is_rados(const char *store)
{
	return strncmp(store, "rados:", 6) == 0;
}

/* Fill @fs from the options; non-zero (after a message) if they are bad. */
static int configure(struct ktfs *fs, struct options *o, const char *mnt)
{
	fs->read_only = o->read_only;
	/* A RADOS location is the library's to check, and the mount's
	 * source as it is. */
	if (is_rados(o->store))
		fs->store_dir = strdup(o->store);
	else if (o->create && !o->read_only && mkdir(o->store, 0755) < 0 &&
	    errno != EEXIST) {
		fprintf(stderr, "keytreefs: %s: %s\n", o->store,
			strerror(errno));
		return 1;
	} else {
		fs->store_dir = realpath(o->store, NULL);
	}
	if (!fs->store_dir && errno == ENOENT) {
		fprintf(stderr, "keytreefs: %s: no such store (-o create "
				"makes one)\n", o->store);
		return 1;
	}
	if (!fs->store_dir) {
		fprintf(stderr, "keytreefs: %s: %s\n", o->store,
			strerror(errno));
		return 1;
	}
	fs->mountpoint = realpath(mnt, NULL);
	if (!fs->mountpoint) {
		fprintf(stderr, "keytreefs: %s: %s\n", mnt, strerror(errno));
		return 1;
	}
	fs->mountpoint_len = strlen(fs->mountpoint);
	if (o->abslinks && strcmp(o->abslinks, "host") == 0) {
		fs->abslinks_host = 1;
	} else if (o->abslinks && strcmp(o->abslinks, "store") != 0) {
		fprintf(stderr, "keytreefs: abslinks must be store or host\n");
		return 1;
	}
	if (o->cache && parse_size(o->cache, &o->cache_bytes) != 0) {
		fprintf(stderr, "keytreefs: cache=%s: not a size (bytes, or "
			"a number with K, M or G, from 1M to 1T)\n", o->cache);
		return 1;
	}
	if (o->write_buffer &&
	    (parse_size(o->write_buffer, &o->wbuf_bytes) != 0 ||
	     o->wbuf_bytes > ((size_t)1 << 30))) {
		fprintf(stderr, "keytreefs: write_buffer=%s: not a size (bytes, "
			"or a number with K, M or G, from 1M to 1G)\n",
			o->write_buffer);
		return 1;
	}
	if (o->readahead && parse_bytes(o->readahead, 4096, 64ull << 20, 1,
				       &o->ra_bytes) != 0) {
		fprintf(stderr, "keytreefs: readahead=%s: not a size (0, or "
			"bytes or a number with K, M or G, from 4K to 64M)\n",
			o->readahead);
		return 1;
	}
	fs->entry_timeout = o->entry_timeout;
	fs->attr_timeout = o->attr_timeout;
	fs->negative_timeout = o->negative_timeout;
	if (fs->entry_timeout < 0 || fs->attr_timeout < 0 ||
	    fs->negative_timeout < 0) {
		fprintf(stderr, "keytreefs: timeouts must not be negative\n");
		return 1;
	}
	return 0;
}

/* Open the store and finish what depends on it.  Runs in the process that
 * serves the mount, and nowhere else: LevelDB keeps threads and state that
 * a fork would not carry over (a compaction the parent started would never
 * run in the child, and the child's writes would wait for it forever). */
static int store_setup(struct ktfs *fs, const struct options *o)
{
	size_t dlen;
	const char *delim;

	if (store_open(fs, o) || root_check(fs))
		return 1;
	delim = kt_delimiter(fs->store, &dlen);
	if (o->value_name) {
		fs->value_name = strdup(o->value_name);
	} else if (asprintf(&fs->value_name, "%svalue", delim) < 0) {
		fs->value_name = NULL;
	}
	if (!fs->value_name)
		return 1;
	fs->value_name_len = strlen(fs->value_name);
	if (!strstr(fs->value_name, delim) || strchr(fs->value_name, '/') ||
	    fs->value_name_len > KT_NAME_MAX) {
		fprintf(stderr,
			"keytreefs: value_name '%s' must contain the store's "
			"delimiter '%s' and no '/'\n",
			fs->value_name, delim);
		return 1;
	}
	return 0;
}

static int run_loop(struct fuse_session *se,
		    const struct fuse_cmdline_opts *co)
{
	struct fuse_loop_config *lc;
	int rc;

	if (co->singlethread)
		return fuse_session_loop(se);
	lc = fuse_loop_cfg_create();
	if (!lc)
		return -1;
	fuse_loop_cfg_set_clone_fd(lc, (unsigned int)co->clone_fd);
	if (co->max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(lc, co->max_idle_threads);
	if (co->max_threads > 0 && co->max_threads <= 100000)
		fuse_loop_cfg_set_max_threads(lc, co->max_threads);
	rc = fuse_session_loop_mt(se, lc);
	fuse_loop_cfg_destroy(lc);
	return rc;
}

/* Become a daemon, before anything of the store exists in this process.
 * The parent waits until the child has opened the store and mounted, told
 * by one status byte through a pipe, and exits with the result: a store
 * in use, missing or damaged, or a failed mount, is reported by the
 * command that asked for the mount (the child's message goes to the same
 * terminal), before anything is mounted.  Returns in the child only (0),
 * with the pipe's write end in @ready, or -1 in the parent if the fork
 * failed. */
static int daemon_fork(int *ready)
{
	int p[2];
	char c = 1;
	pid_t pid;

	if (pipe(p) != 0) {
		perror("keytreefs: pipe");
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("keytreefs: fork");
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			c = 1; /* the child ended before it was ready */
		_exit(c == 0 ? 0 : 1);
	}
	close(p[0]);
	setsid();
	*ready = p[1];
	return 0;
}

/* The mount is up: detach from the terminal and let the parent go. */
static void daemon_ready(int ready)
{
	char c = 0;
	int fd;

	if (chdir("/") != 0)
		perror("keytreefs: chdir /");
	if ((fd = open("/dev/null", O_RDWR)) >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	if (write(ready, &c, 1) != 1) {
		/* The parent is gone; nothing to tell. */
	}
	close(ready);
}

/* Mount @fs and serve until unmounted or signalled; 0 on a clean end. */
/*
 * Read-ahead.  The kernel gives a FUSE mount its own backing device with
 * a read-ahead of 128 KiB, so a file read in order arrives in READ
 * requests of 128 KiB, each a round trip through the daemon and one id
 * lookup in the store.  Its read_ahead_kb in /sys/class/bdi/MAJ:MIN can
 * be raised (by root), up to the 1 MiB a request may carry here; the
 * device's number is the mount's, in /proc/self/mountinfo.  It must be
 * written after the kernel has taken our reply to INIT, which lowers the
 * read-ahead to what the reply says (what the kernel offered, 128 KiB):
 * so at the first request after INIT (io.c, ktfs_io_read).
 */
static char ra_file[64];
static char ra_value[32];
static int ra_explicit;
static atomic_int ra_pending;

/* The field of mountinfo @p f, with its octal escapes (\040) undone. */
static void unescape(char *f)
{
	char *r = f, *w = f;

	while (*r) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' &&
		    r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 +
				      (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

/* Find the mount's device number and arm the write of its read-ahead. */
static void readahead_plan(struct ktfs *fs, const struct options *o)
{
	size_t bytes = o->readahead ? o->ra_bytes : (size_t)1 << 20;
	char *line = NULL, dev[32] = "";
	size_t cap = 0;
	FILE *f;

	if (bytes == 0 || (f = fopen("/proc/self/mountinfo", "r")) == NULL)
		return;
	/* Whole lines, however long: a mount point may take up to
	 * PATH_MAX bytes, four times that escaped, and its options more. */
	while (getline(&line, &cap, f) != -1) {
		char *save = NULL, *fld[5];
		int i;

		fld[0] = strtok_r(line, " ", &save);
		for (i = 1; i < 5 && fld[i - 1] != NULL; i++)
			fld[i] = strtok_r(NULL, " ", &save);
		if (i < 5 || fld[4] == NULL)
			continue;
		unescape(fld[4]);
		/* The last mount on our mount point is ours. */
		if (strcmp(fld[4], fs->mountpoint) == 0 &&
		    strlen(fld[2]) < sizeof(dev))
			strcpy(dev, fld[2]);
	}
	free(line);
	fclose(f);
	if (dev[0] == '\0')
		return;
	snprintf(ra_file, sizeof(ra_file), "/sys/class/bdi/%s/read_ahead_kb",
		 dev);
	snprintf(ra_value, sizeof(ra_value), "%zu\n", bytes >> 10);
	ra_explicit = o->readahead != NULL;
	atomic_store(&ra_pending, 1);
}

void ktfs_io_after_init(void)
{
	int fd;

	if (!atomic_load(&ra_pending) || !atomic_exchange(&ra_pending, 0))
		return;
	fd = open(ra_file, O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, ra_value, strlen(ra_value)) ==
			       (ssize_t)strlen(ra_value)) {
		close(fd);
		return;
	}
	/* Not root: the kernel's read-ahead stays, which is no error
	 * unless it was asked for. */
	if (ra_explicit)
		fprintf(stderr, "keytreefs: readahead: cannot write %s: %s\n",
			ra_file, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static int serve(struct ktfs *fs, struct fuse_args *args,
		 const struct fuse_cmdline_opts *co, const struct options *o)
{
	struct fuse_custom_io io = {0};
	struct fuse_session *se;
	int rc = 1, ready = -1;

	if (!co->foreground && daemon_fork(&ready) != 0)
		return 1;
	/* In the foreground, or in the daemon: the store is opened only by
	 * the process that serves it.  A failure here is reported on the
	 * terminal, by the daemon before it detaches; its parent then exits
	 * with status 1. */
	if (store_setup(fs, o) != 0)
		goto out_ready;
	se = fuse_session_new(args, &ktfs_ops, sizeof(ktfs_ops), fs);
	if (!se)
		goto out_ready;
	/* libfuse only catches signals that are not ignored, and a shell
	 * starts background commands with SIGINT ignored: SIGINT and SIGTERM
	 * must always unmount cleanly. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(se) != 0)
		goto out_destroy;
	if (fuse_session_mount(se, co->mountpoint) != 0)
		goto out_signals;
	readahead_plan(fs, o);
	/* Our own reads of the mount's device: O_TMPFILE (io.c). */
	io.read = ktfs_io_read;
	io.writev = ktfs_io_writev;
	if (fuse_session_custom_io(se, &io, fuse_session_fd(se)) != 0)
		goto out_unmount;
	/* What other processes change, the kernel must not keep.  (A
	 * library that cannot watch, KT_ENOTSUP, still mounts: the kernel
	 * then sees other clients' changes once its caches time out.) */
	rc = ktfs_watch_start(fs, se);
	if (rc == KT_ENOTSUP) {
		fprintf(stderr, "keytreefs: %s: %s; mounting without it: "
			"the kernel's caches may lag other clients' changes "
			"by up to their timeouts\n", fs->store_dir,
			kt_errmsg());
		rc = 0;
	}
	if (rc != 0) {
		rc = 1;
		fprintf(stderr, "keytreefs: %s: cannot watch the store for "
			"other processes' changes: %s\n", fs->store_dir,
			kt_errmsg());
		goto out_unmount;
	}
	if (ready >= 0) {
		daemon_ready(ready);
		ready = -1;
	}
	rc = run_loop(se, co);
	ktfs_reply_buf_release(); /* the loop's, when single-threaded */
	/* The loop ends at an unmount or a signal; anything else is a
	 * failure worth a line (a test that saw a daemon end early had
	 * nothing to go on). */
	if (rc < 0)
		fprintf(stderr, "keytreefs: %s: serving the mount failed: %s\n",
			fs->mountpoint, strerror(-rc));
	rc = rc < 0 ? 1 : 0;
out_unmount:
	ktfs_locks_stop();
	ktfs_watch_stop(fs);
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
out_ready:
	if (ready >= 0)
		close(ready); /* not ready: the parent sees EOF and exits 1 */
	return rc;
}

/* The open table's lock: the only lock of the mount (keytreefs.h). */
static int locks_init(struct ktfs *fs)
{
	return pthread_mutex_init(&fs->lock, NULL) == 0 ? 0 : -1;
}

static void locks_destroy(struct ktfs *fs)
{
	pthread_mutex_destroy(&fs->lock);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct options o;
	struct ktfs fs;
	int rc = 1;

	memset(&o, 0, sizeof(o));
	memset(&co, 0, sizeof(co));
	memset(&fs, 0, sizeof(fs));
	o.entry_timeout = 1.0;
	o.attr_timeout = 1.0;
	if (locks_init(&fs) != 0)
		return 1;
	if (fuse_opt_parse(&args, &o, option_spec, opt_proc) != 0)
		goto out;
	if (o.show_version) {
		printf("keytreefs %s (libkeytree %s, libfuse %s)\n",
		       KTFS_VERSION, kt_version(), fuse_pkgversion());
		rc = 0;
		goto out;
	}
	if (o.show_help) {
		usage(argv[0]);
		rc = 0;
		goto out;
	}
	if (!o.store || o.nonopts < 2) {
		fprintf(stderr,
			"usage: %s [options] STORE MOUNTPOINT (--help for "
			"more)\n",
			argv[0]);
		rc = 2;
		goto out;
	}
	if ((!o.no_default_permissions &&
	     fuse_opt_add_arg(&args, "-odefault_permissions") != 0) ||
	    fuse_opt_add_arg(&args, "-osubtype=keytreefs") != 0)
		goto out;
	if (fuse_parse_cmdline(&args, &co) != 0 || !co.mountpoint) {
		fprintf(stderr, "keytreefs: no mountpoint\n");
		goto out;
	}
	/* The mount's source is the store's absolute path: what mount(8)
	 * shows, and how kt_open() finds the mount of a store in use. */
	if (configure(&fs, &o, co.mountpoint) == 0 &&
	    add_escaped_opt(&args, "fsname", fs.store_dir) == 0)
		rc = serve(&fs, &args, &co, &o);
out:
	ktfs_files_free(&fs);
	kt_close(fs.store);
	free(fs.store_dir);
	free(fs.mountpoint);
	free(fs.value_name);
	free(co.mountpoint);
	free(o.store);
	free(o.value_name);
	free(o.abslinks);
	free(o.ceph_conf);
	free(o.ceph_client);
	free(o.cache);
	free(o.write_buffer);
	free(o.readahead);
	fuse_opt_free_args(&args);
	locks_destroy(&fs);
	return rc;
}
