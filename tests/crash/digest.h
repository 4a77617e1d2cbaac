/*
 * digest.h - a store's visible contents as one string, for the crash and
 * corruption tests: every node's path, kind, mode, owner, size, value,
 * link target and attributes.  Ids, versions and times are left out, so
 * two stores that went through the same operations (one of them killed
 * and reopened on the way) have equal digests.
 */
#ifndef KT_CRASH_DIGEST_H
#define KT_CRASH_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "keytree.h"

/* FNV-1a, 64 bits, continued from @p h (start with KTC_FNV_INIT). */
#define KTC_FNV_INIT 0xcbf29ce484222325ULL
uint64_t ktc_fnv(uint64_t h, const void *data, size_t len);

/* Describe every node of @p st in *@p out (malloc'd, one line per node in
 * find order), or return the first error of the library, with kt_errmsg()
 * set and *out NULL.  Reading a value or attribute that fails, or a node
 * that find lists but lstat cannot see, is an error. */
int ktc_digest(char **out, kt_store *st);

/* Print to stderr the first line where digests @p a and @p b differ, with
 * @p la and @p lb as their labels. */
void ktc_digest_diff(const char *la, const char *a, const char *lb,
		     const char *b);

#endif
