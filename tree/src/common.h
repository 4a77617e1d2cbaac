/*
 * common.h - internals shared by every module of libkeytree: growable byte
 * buffers, the per-thread error message, fixed-width encoding helpers and
 * the limits of the row format.  Private; never installed.
 */
#ifndef KT_COMMON_H
#define KT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "keytree.h"

/* Values of at most KT__INLINE_MAX bytes live inside their node row; larger
 * ones in blocks of KT__BLOCK bytes keyed by node id.  Both are recorded in
 * the header row, so a later library can change them for new stores. */
#define KT__INLINE_MAX 4096u
#define KT__BLOCK 16384u

/* The moment @p ms milliseconds from now on clock @p clk: a deadline for
 * pthread_cond_timedwait on a condition variable of that clock. */
static inline void kt__deadline(struct timespec *ts, clockid_t clk,
				unsigned int ms)
{
	clock_gettime(clk, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* A growable byte buffer.  p is NUL-terminated whenever it is non-NULL, so
 * a buffer holding text can be passed where a C string is expected. */
typedef struct kt__buf {
	char *p;
	size_t len;
	size_t cap;
} kt__buf;

/* Make the buffer room for @p extra more bytes and the NUL (error.c). */
int kt__buf_grow(kt__buf *b, size_t extra);

/* The buffer functions run on every row a listing or a get reads; where
 * the room is there already they take no call. */
static inline int kt__buf_reserve(kt__buf *b, size_t extra)
{
	if (b->len < b->cap && extra < b->cap - b->len)
		return 0;
	return kt__buf_grow(b, extra);
}

static inline int kt__buf_add(kt__buf *b, const void *data, size_t len)
{
	int rc = kt__buf_reserve(b, len);

	if (rc != 0)
		return rc;
	if (len > 0)
		memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

static inline int kt__buf_set(kt__buf *b, const void *data, size_t len)
{
	b->len = 0;
	return kt__buf_add(b, data, len);
}

static inline int kt__buf_addc(kt__buf *b, char c)
{
	return kt__buf_add(b, &c, 1);
}

void kt__buf_free(kt__buf *b);
/* Hand the buffer's memory to the caller (never NULL on success). */
char *kt__buf_detach(kt__buf *b, size_t *len);

/* Internal status, never returned by a public call: a guarded commit saw
 * that something its transaction read has changed since (rows.h); the
 * operation runs again. */
#define KT__ERETRY (-1000)
/* A rename or recursive delete over kt__big_rows rows, on an engine with
 * fences: the operation runner takes it over (ops.c). */
#define KT__EBIG (-1001)
/* The tree changed between the plan of such an operation and its
 * commit point: plan again. */
#define KT__ECHANGED (-1002)
/* A fence (rows.h) stands over what a call of the holder's connection
 * thread reads or writes: the holder does not wait, so that the client's
 * connection stays free for its other threads; the client waits and asks
 * again (rows_remote.c). */
#define KT__EFENCED (-1003)

/* Record this thread's error message and return @p code. */
int kt__err(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prefix this thread's current message with "prefix: ". */
void kt__err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Clear this thread's message (used at the start of a call that may fail
 * after partial success). */
void kt__err_clear(void);

/* Write @p len bytes of @p s into @p out as printable text for messages:
 * bytes outside printable ASCII become \xHH.  Always NUL-terminates. */
const char *kt__show(char *out, size_t outsz, const void *s, size_t len);
#define KT__SHOWSZ 160

/* Who holds the lock of the store in @p dir, as a phrase for a message
 * ("process 1234 (keytreefs, mounted on /mnt/kt)", or "another process"
 * when that cannot be told), into @p out (holder.c). */
void kt__lock_holder(char *out, size_t outsz, const char *dir);

static inline void kt__put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline void kt__put64(unsigned char *p, uint64_t v)
{
	kt__put32(p, (uint32_t)v);
	kt__put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t kt__get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t kt__get64(const unsigned char *p)
{
	return (uint64_t)kt__get32(p) | (uint64_t)kt__get32(p + 4) << 32;
}

/* Big-endian, so that block rows sort in block order. */
static inline void kt__put64be(unsigned char *p, uint64_t v)
{
	int i;
	for (i = 7; i >= 0; i--) {
		p[i] = (unsigned char)v;
		v >>= 8;
	}
}

static inline uint64_t kt__get64be(const unsigned char *p)
{
	uint64_t v = 0;
	int i;
	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* CRC-32C of @p n bytes at @p p, continuing from @p crc (0 to start):
 * the CPU's instruction where it has one (crc32c.c). */
uint32_t kt__crc32c(uint32_t crc, const void *p, size_t n);
/* The same with the portable table, whatever the CPU (for tests). */
uint32_t kt__crc32c_sw(uint32_t crc, const void *p, size_t n);
/* Which one kt__crc32c uses: "sse4.2" or "table". */
const char *kt__crc32c_impl(void);

#endif /* KT_COMMON_H */
