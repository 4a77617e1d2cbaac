/*
 * path.h - validating paths and names, and turning canonical paths into
 * the partition keys of their rows and back.
 */
#ifndef KT_PATH_H
#define KT_PATH_H

#include "common.h"

/* The store's delimiter. */
typedef struct kt__delim {
	char s[8];
	size_t len;
	int typed;  /* names are typed (format 5): kt__name_enc */
} kt__delim;

/* Is @p d (NUL-terminated) an acceptable delimiter?  0 or KT_EINVAL with a
 * message. */
int kt__delim_check(const char *d);

/* Validate one name of @p len bytes: 0, KT_EINVAL, KT_ENAMETOOLONG or
 * KT_ERESERVED; the message names the operation @p op and @p path. */
int kt__name_check(const kt__delim *d, const char *name, size_t len,
		   const char *op, const char *path);

/* Validate a path for operation @p op: canonical, absolute, every name
 * valid, within the length and depth limits.  0 or an error with a
 * message such as "get '/a//b': empty component at byte 3". */
int kt__path_check(const kt__delim *d, const char *path, const char *op);

/* Is p[0..len) a canonical path within the limits?  Like kt__path_check
 * but silent: no message, a yes or no. */
int kt__path_valid(const kt__delim *d, const char *p, size_t len);

/* Length of the parent of canonical path p[0..len) ("/a/b" -> 2, "/a" ->
 * 0 meaning the root).  Must not be called on the root. */
size_t kt__parent_len(const char *p, size_t len);

/* Append the node partition E(p) of canonical path p[0..len): each '/'
 * becomes the delimiter; the root gives "". */
int kt__enc_node(kt__buf *out, const kt__delim *d, const char *p, size_t len);

/* Append the index partition of directory p: E(p) || delimiter. */
int kt__enc_index(kt__buf *out, const kt__delim *d, const char *p, size_t len);

/* Append E(p) of canonical path p[0..len), not the root, and set *at to
 * where its last component's T() begins: out[0..*at) is the index
 * partition of p's parent, out[*at..) the sort key of p's index row. */
int kt__enc_entry(kt__buf *out, size_t *at, const kt__delim *d,
		  const char *p, size_t len);

/* Decode a node partition back into a canonical path ("" -> "/"). */
int kt__dec_node(kt__buf *out, const kt__delim *d, const char *part,
		 size_t len);

/* Can a store with delimiter @p d type its names?  0 or KT_EINVAL. */
int kt__typed_check(const kt__delim *d);

/* Append T(name), the form name[0..len) takes in rows: the name itself
 * in a plain store; in a typed one a tag and the name's typed form
 * (docs/FORMAT.md §3a), which sorts numbers by value, then UUIDs, then
 * the other names by their bytes.  Never contains NUL or the delimiter. */
int kt__name_enc(kt__buf *out, const kt__delim *d, const char *name,
		 size_t len);

/* Append the name whose T() is enc[0..len): KT_ECORRUPT when no name
 * has that form. */
int kt__name_dec(kt__buf *out, const kt__delim *d, const char *enc,
		 size_t len);

/* Number of components of a canonical path. */
size_t kt__depth(const char *p, size_t len);

#endif /* KT_PATH_H */
