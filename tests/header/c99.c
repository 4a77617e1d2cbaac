/*
 * c99.c - compiles keytree.h alone as strict C99 (see header_c99 in
 * cmake/keytreeTests.cmake).  The header must come first, with nothing
 * before it, so that it is proven to include what it needs itself.  The
 * rest touches each public type and initializer macro, so that a macro
 * which does not expand to valid C99 fails too.
 */
#include "keytree.h"

#include "keytree.h" /* the include guard works */

int kt_header_c99(void);

int kt_header_c99(void)
{
	kt_options opts = KT_OPTIONS_INIT;
	kt_create_options copts = KT_CREATE_OPTIONS_INIT;
	kt_list_options lopts = KT_LIST_OPTIONS_INIT;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_check_options chk = KT_CHECK_OPTIONS_INIT;
	kt_statbuf st = {0};
	kt_entry ent = {0};
	kt_error err = KT_ENOTFOUND;
	kt_check_cb cb = NULL;
	int (*open_fn)(kt_store **, const char *, const kt_options *) = kt_open;
	int (*next_fn)(const kt_entry **, kt_iter *) = kt_iter_next;
	unsigned long long vmax = KT_VALUE_MAX;
	const char *delim = KT_DEFAULT_DELIMITER;

	(void)cb;
	(void)st;
	(void)ent;
	sa.mask = KT_SET_MODE;
	sa.mode = 0644;
	return (int)(opts.version + copts.version + lopts.version + sa.mask +
		     sa.version + chk.version +
		     (unsigned)(open_fn != NULL) + (unsigned)(next_fn != NULL) +
		     (unsigned)(vmax >> 40) + (unsigned)delim[0] +
		     (unsigned)KT_FORMAT_VERSION + (unsigned)KT_NAME_MAX) +
	       err + KT_ITEROVER;
}
