/*
 * test_crc.c - CRC-32C, the checksum of value blocks (crc32c.c,
 * docs/FORMAT.md §6): the published check value, the hardware path
 * against the table against a bit-at-a-time definition (kt_test.h) over
 * every alignment and many lengths (across the three-way runs' edges),
 * and continuing a CRC across pieces.
 */
#include <stdlib.h>

#include "kt_test.h"
#include "common.h"

static unsigned char *random_bytes(size_t n, unsigned int seed)
{
	unsigned char *b = malloc(n);
	size_t i;

	assert_non_null(b);
	srand(seed);
	for (i = 0; i < n; i++)
		b[i] = (unsigned char)rand();
	return b;
}

static void test_crc__check_values(void **state)
{
	static const unsigned char zeros[32], ones[32] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

	(void)state;
	/* The catalogue's check value, and RFC 3720's (iSCSI) examples. */
	assert_int_equal(kt__crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(kt__crc32c_sw(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(kt__crc32c(0, zeros, 32), 0x8A9136AAu);
	assert_int_equal(kt__crc32c(0, ones, 32), 0x62A8AB43u);
	assert_int_equal(kt__crc32c(0, "", 0), 0u);
	fprintf(stderr, "kt__crc32c uses: %s\n", kt__crc32c_impl());
}

/* Every alignment, lengths around each edge of the runs (8, 3 * 256,
 * 3 * 4096 bytes), and random lengths up to 64 KiB, from random CRCs. */
static void test_crc__paths_agree(void **state)
{
	static const size_t edges[] = {0,    1,    7,     8,     9,    767,
					768,  769,  1536,  12287, 12288, 12289,
					16384, 16388, 24576, 37632, 65535};
	unsigned char *b = random_bytes(70000, 7);
	size_t i, a;
	int t;

	(void)state;
	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		for (a = 0; a < 8; a++) {
			uint32_t want =
				kt_test_crc32c(0x1234567u, b + a, edges[i]);
			assert_int_equal(kt__crc32c(0x1234567u, b + a, edges[i]),
					 want);
			assert_int_equal(
				kt__crc32c_sw(0x1234567u, b + a, edges[i]),
				want);
		}
	for (t = 0; t < 300; t++) {
		size_t off = (size_t)rand() % 64;
		size_t n = (size_t)rand() % 65536;
		uint32_t seed = (uint32_t)rand();
		uint32_t want = kt_test_crc32c(seed, b + off, n);
		assert_int_equal(kt__crc32c(seed, b + off, n), want);
		assert_int_equal(kt__crc32c_sw(seed, b + off, n), want);
	}
	free(b);
}

/* The CRC of A || B is the CRC of B continued from the CRC of A, which
 * is how a block's number and bytes are summed together. */
static void test_crc__continues(void **state)
{
	unsigned char *b = random_bytes(40000, 11);
	size_t cut;

	(void)state;
	for (cut = 0; cut <= 40000; cut += 1237)
		assert_int_equal(kt__crc32c(kt__crc32c(0, b, cut), b + cut,
					    40000 - cut),
				 kt__crc32c(0, b, 40000));
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc__check_values),
		cmocka_unit_test(test_crc__paths_agree),
		cmocka_unit_test(test_crc__continues),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
