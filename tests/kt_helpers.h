/*
 * kt_helpers.h - small assertions shared by the API test programs (links,
 * listing, find, delete, rename, batches, threads, check): call-or-fail
 * macros and one-line readers that fail the test with the library's
 * message.  Include after kt_test.h.
 */
#ifndef KT_HELPERS_H
#define KT_HELPERS_H

#include "kt_test.h"

/* Fail the test unless @p call returns 0, showing the library's message. */
#define ok(call)                                                             \
	do {                                                                 \
		int ok__rc = (call);                                         \
		if (ok__rc != 0)                                             \
			fail_msg("%s: %d (%s)", #call, ok__rc, kt_errmsg()); \
	} while (0)

/* Fail the test unless @p call returns @p code. */
#define expect_rc(call, code)                                                \
	do {                                                                 \
		int ex__rc = (call);                                         \
		if (ex__rc != (code))                                        \
			fail_msg("%s: got %d (%s), want %d", #call, ex__rc,  \
				 kt_errmsg(), (int)(code));                  \
	} while (0)

static inline kt_store *store_of(void **state)
{
	return ((kt_test_fixture *)*state)->store;
}

static inline void put_str(kt_store *s, const char *path, const char *value)
{
	int rc = kt_put(s, path, value, strlen(value), NULL);

	if (rc != 0)
		fail_msg("put %s: %d (%s)", path, rc, kt_errmsg());
}

/* Assert that the item at @p path (links followed) holds @p want. */
static inline void assert_value(kt_store *s, const char *path, const char *want)
{
	void *v = NULL;
	size_t len = 0;
	int rc = kt_get(&v, &len, s, path);

	if (rc != 0)
		fail_msg("get %s: %d (%s)", path, rc, kt_errmsg());
	assert_int_equal(len, strlen(want));
	assert_memory_equal(v, want, len);
	kt_free(v);
}

static inline kt_statbuf lstat_of(kt_store *s, const char *path)
{
	kt_statbuf st;
	int rc = kt_lstat(&st, s, path);

	if (rc != 0)
		fail_msg("lstat %s: %d (%s)", path, rc, kt_errmsg());
	return st;
}

static inline void assert_absent(kt_store *s, const char *path)
{
	kt_statbuf st;

	expect_rc(kt_lstat(&st, s, path), KT_ENOTFOUND);
}

#endif /* KT_HELPERS_H */
