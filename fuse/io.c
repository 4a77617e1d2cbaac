/*
 * io.c - how keytreefs reads requests from /dev/fuse: as libfuse would,
 * except that an O_TMPFILE request reaches our create handler.
 *
 * The kernel sends open(O_TMPFILE) as FUSE_TMPFILE, which libfuse 3.14
 * does not know: it answers ENOSYS and the kernel then fails every
 * O_TMPFILE with EOPNOTSUPP.  The request has the layout of FUSE_CREATE
 * (struct fuse_create_in, then a name) and wants the same reply (an entry
 * and an open file); its name is "/", which no FUSE_CREATE can carry.  So
 * the read below relabels it FUSE_CREATE, and ktfs_create() (file.c) makes
 * an unnamed file when the name is "/".  The first request after INIT also
 * sets the mount's read-ahead (main.c).  This file includes the kernel's
 * <linux/fuse.h> and nothing of libfuse's, whose headers declare some of
 * the same names.
 */
#include <linux/fuse.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* libfuse's fuse_custom_io.read for the session (main.c). */
ssize_t ktfs_io_read(int fd, void *buf, size_t len, void *userdata);
ssize_t ktfs_io_writev(int fd, struct iovec *iov, int count, void *userdata);

/* The first request after INIT has come (main.c: read-ahead). */
void ktfs_io_after_init(void);

ssize_t ktfs_io_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	struct fuse_in_header *in = buf;

	(void)userdata;
	if (n >= (ssize_t)sizeof(*in) && in->opcode == FUSE_TMPFILE)
		in->opcode = FUSE_CREATE;
	if (n >= (ssize_t)sizeof(*in) && in->opcode != FUSE_INIT)
		ktfs_io_after_init();
	return n;
}

ssize_t ktfs_io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	return writev(fd, iov, count);
}
