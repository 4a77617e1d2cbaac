/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of value blocks in stores that carry their own (format 5 flag
 * HF_BLKSUM, docs/FORMAT.md §6).  On x86-64 with SSE4.2 the CPU's crc32
 * instruction does the work, eight bytes at a time; elsewhere a
 * slice-by-8 table does, which is what LevelDB's own build uses when it
 * is compiled without a hardware CRC.  The choice is made once, at the
 * first call.
 */
#include <pthread.h>

#include "common.h"

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static uint32_t (*impl)(uint32_t crc, const unsigned char *p, size_t n);
static pthread_once_t once = PTHREAD_ONCE_INIT;

static uint32_t crc_table(uint32_t crc, const unsigned char *p, size_t n)
{
	/* Bytes up to an 8-byte boundary, then 8 at a time, then the rest. */
	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		n--;
	}
	while (n >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				     (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
			      (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
		      table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
		      table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/*
 * Shifting a CRC over zeros.  Without the pre- and post-inversion the
 * CRC is linear: the state after A || B is the state after A carried over
 * |B| zero bytes, xor the state of B alone from 0.  So three pieces can
 * be summed independently, at the same time, and joined at the end; the
 * carry over a fixed length is a linear map of 32 bits, kept as four
 * byte tables.
 */
#define LONG_RUN 4096
#define SHORT_RUN 256

static uint32_t shift_long[4][256], shift_short[4][256];

static uint32_t shift(uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^
	       t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

static void shift_setup(uint32_t t[4][256], size_t len)
{
	uint32_t img[32];
	int i, k, b;

	/* The image of each single bit, by feeding it len zero bytes. */
	for (i = 0; i < 32; i++) {
		uint32_t c = 1u << i;
		size_t n;
		for (n = 0; n < len; n++)
			c = table[0][c & 0xff] ^ (c >> 8);
		img[i] = c;
	}
	for (k = 0; k < 4; k++)
		for (b = 0; b < 256; b++) {
			uint32_t v = 0;
			for (i = 0; i < 8; i++)
				if (b & (1 << i))
					v ^= img[8 * k + i];
			t[k][b] = v;
		}
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>

/* Three runs of @p run bytes each, summed at once (the crc32 instruction
 * takes three cycles but starts one every cycle), then joined. */
__attribute__((target("sse4.2"))) static uint64_t
crc_sse42_3(uint64_t c0, const unsigned char *p, size_t run,
	    uint32_t t[4][256])
{
	uint64_t c1 = 0, c2 = 0, w0, w1, w2;
	const unsigned char *end = p + run;

	while (p < end) {
		memcpy(&w0, p, 8);
		memcpy(&w1, p + run, 8);
		memcpy(&w2, p + 2 * run, 8);
		c0 = _mm_crc32_u64(c0, w0);
		c1 = _mm_crc32_u64(c1, w1);
		c2 = _mm_crc32_u64(c2, w2);
		p += 8;
	}
	c0 = shift(t, (uint32_t)c0) ^ (uint32_t)c1;
	return shift(t, (uint32_t)c0) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t
crc_sse42(uint32_t crc, const unsigned char *p, size_t n)
{
	uint64_t c = crc;

	while (n > 0 && ((uintptr_t)p & 7) != 0) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		n--;
	}
	while (n >= 3 * LONG_RUN) {
		c = crc_sse42_3(c, p, LONG_RUN, shift_long);
		p += 3 * LONG_RUN;
		n -= 3 * LONG_RUN;
	}
	while (n >= 3 * SHORT_RUN) {
		c = crc_sse42_3(c, p, SHORT_RUN, shift_short);
		p += 3 * SHORT_RUN;
		n -= 3 * SHORT_RUN;
	}
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return (uint32_t)c;
}
#define HAVE_SSE42_PATH 1
#endif

static void setup(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			table[j][i] = (table[j - 1][i] >> 8) ^
				      table[0][table[j - 1][i] & 0xff];
	impl = crc_table;
	shift_setup(shift_long, LONG_RUN);
	shift_setup(shift_short, SHORT_RUN);
#ifdef HAVE_SSE42_PATH
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		impl = crc_sse42;
#endif
}

uint32_t kt__crc32c(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&once, setup);
	return ~impl(~crc, p, n);
}

uint32_t kt__crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&once, setup);
	return ~crc_table(~crc, p, n);
}

const char *kt__crc32c_impl(void)
{
	pthread_once(&once, setup);
	return impl == crc_table ? "table" : "sse4.2";
}
