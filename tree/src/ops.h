/*
 * ops.h - the mutations, each applied inside a transaction.  A public call
 * runs one operation in its own transaction; a batch runs several in one.
 */
#ifndef KT_OPS_H
#define KT_OPS_H

#include "tree.h"

enum kt__op_type {
	KT__OP_PUT = 1,
	KT__OP_MKDIR,
	KT__OP_SYMLINK,
	KT__OP_DELETE,
	KT__OP_RENAME,
	KT__OP_ATTR_SET,
	KT__OP_ATTR_DELETE,
	KT__OP_WRITE,
	KT__OP_TRUNCATE,
	KT__OP_SETATTR,
	KT__OP_MKNOD,
	KT__OP_LINK
};

typedef struct kt__op {
	int type;
	const char *path;  /* the node; the link for symlink; rename's src */
	const char *path2; /* rename's and link's new path, symlink's target,
			      attr name */
	const void *data;  /* value to put/write, attribute value */
	size_t len;
	uint64_t off;      /* write offset, truncate size */
	unsigned int flags;
	int has_opts;
	kt_create_options opts;
	kt_setattr_args sa;
	unsigned int ftype; /* mknod: the file type, KT_TYPE_* */
	uint64_t rdev;     /* mknod: the device number */
	/* By id (the *_at calls): with at != 0, path is "/NAME" and names
	 * the child NAME of the directory whose id is at, or, when path is
	 * NULL, the node with id at itself; at2 does the same for path2.
	 * The id is resolved inside the transaction, so a concurrent rename
	 * of the directory makes the commit rerun, not land elsewhere. */
	uint64_t at, at2;
	/* With at: the node at path must have this id, else KT_ECONFLICT
	 * (0: any node).  What a caller that decided on one node uses so
	 * that its change cannot land on another that took the name. */
	uint64_t if_id;
	/* Set by kt__op_apply on its copy when path was NULL: path is the
	 * node's own (by id), so a link there is acted on, not followed. */
	int self;
	kt_statbuf *out;   /* filled with the node at path afterwards */
} kt__op;

/* Check what can be checked without reading the store: path syntax,
 * limits, flags.  Messages name the operation. */
int kt__op_validate(kt_store *st, const kt__op *op);

/* Apply one operation in @p tx. */
int kt__op_apply(kt__tx *tx, const kt__op *op);

/* Validate, apply in a fresh transaction under the writer lock, commit. */
int kt__op_run(kt_store *st, const kt__op *op);

const char *kt__op_name(int type);

/* The path of the node with id @p at into @p out, then "/NAME" when
 * @p name ("/NAME") is not NULL, in @p tx: KT_ENOTFOUND when no node has
 * that id, KT_ENOTDIR when @p name is given and it is no directory. */
int kt__at_path(kt__buf *out, kt__tx *tx, uint64_t at, const char *name);

#endif /* KT_OPS_H */
