/*
 * errno.c - the one place where keytree's error codes become errno values.
 *
 * The switch has no default on purpose: when the library appends a code,
 * the compiler (-Wswitch, part of -Wall) names it here until it is mapped.
 */
#include <errno.h>

#include "keytreefs.h"

/* Map a kt_error to the negative errno a FUSE handler returns, e.g.
 * ktfs_errno(KT_ENOTFOUND) == -ENOENT.  Unknown values give -EIO. */
int ktfs_errno(int code)
{
	switch ((kt_error)code) {
	case KT_OK:
		return 0;
	case KT_ENOTFOUND:
		return -ENOENT;
	case KT_EEXISTS:
		return -EEXIST;
	case KT_ENOTDIR:
		return -ENOTDIR;
	case KT_EISDIR:
		return -EISDIR;
	case KT_ENOTEMPTY:
		return -ENOTEMPTY;
	case KT_ELOOP:
		return -ELOOP;
	case KT_EINVAL:
		return -EINVAL;
	case KT_ENAMETOOLONG:
		return -ENAMETOOLONG;
	case KT_ERESERVED:
		/* A name holding the delimiter can never exist. */
		return -EINVAL;
	case KT_EBUSY:
		return -EBUSY;
	case KT_EREADONLY:
		return -EROFS;
	case KT_ENOMEM:
		return -ENOMEM;
	case KT_ECORRUPT:
	case KT_EIO:
	case KT_ENOTSTORE:
	case KT_EVERSION:
		return -EIO;
	case KT_ECONFLICT:
	case KT_ELOCKED:
		return -EAGAIN;
	case KT_EPERM:
		return -EPERM;
	case KT_EMLINK:
		return -EMLINK;
	case KT_EDIRFULL: /* as CephFS refuses a full directory fragment */
		return -ENOSPC;
	case KT_ETOOBIG:
		return -EFBIG;
	case KT_ENOATTR:
		return -ENODATA;
	case KT_ENOTSUP:
		return -EOPNOTSUPP;
	case KT_ITEROVER:
		return 0;
	}
	return -EIO;
}
