/*
 * test_value.c - randomized check of ranged value operations (kt_write,
 * kt_truncate, kt_put, kt_read) against a plain byte array, across the
 * inline limit and block boundaries, with reopen and kt_check on the way.
 * KT_VALUE_OPS sets the number of steps (default 3000).
 */
#include "kt_test.h"

/* The reference: the value as a byte array. */
typedef struct ref {
	unsigned char *p;
	size_t len;
} ref;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Sizes and offsets cluster around the interesting edges: the inline
 * limit (4096) and multiples of the block size (16384). */
static size_t pick_pos(void)
{
	static const size_t edges[] = {0, 1, 4095, 4096, 4097, 16383, 16384,
				       16385, 32768, 49151, 65536, 100000};
	size_t e = edges[rnd() % (sizeof(edges) / sizeof(edges[0]))];
	long d = (long)(rnd() % 9) - 4;

	if ((long)e + d < 0)
		return 0;
	return (size_t)((long)e + d);
}

static void ref_resize(ref *r, size_t len)
{
	if (len > r->len) {
		r->p = realloc(r->p, len ? len : 1);
		assert_non_null(r->p);
		memset(r->p + r->len, 0, len - r->len);
	}
	r->len = len;
}

static void check_value(kt_store *s, const ref *r, size_t step)
{
	void *v = NULL;
	size_t len = 0, off, n, got = 0;
	unsigned char buf[70000];
	kt_statbuf sb;

	assert_int_equal(kt_get(&v, &len, s, "/v"), 0);
	if (len != r->len || (len && memcmp(v, r->p, len) != 0))
		fail_msg("step %zu: value of %zu bytes differs from the "
			 "reference of %zu bytes", step, len, r->len);
	kt_free(v);
	assert_int_equal(kt_stat(&sb, s, "/v"), 0);
	assert_int_equal(sb.size, r->len);
	/* A random range read. */
	off = pick_pos();
	n = pick_pos() % sizeof(buf);
	assert_int_equal(kt_read(&got, s, "/v", buf, n, off), 0);
	if (off >= r->len)
		assert_int_equal(got, 0);
	else {
		size_t want = r->len - off < n ? r->len - off : n;
		assert_int_equal(got, want);
		if (memcmp(buf, r->p + off, want) != 0)
			fail_msg("step %zu: read(%zu, %zu) differs", step, off,
				 n);
	}
}

static void test_value__random_ranged_ops(void **state)
{
	kt_test_fixture *f = *state;
	const char *env = getenv("KT_VALUE_OPS");
	size_t steps = env ? strtoul(env, NULL, 10) : 3000, i;
	unsigned char data[40000];
	ref r = {NULL, 0};
	size_t bad = 0;

	assert_int_equal(kt_put(f->store, "/v", "", 0, NULL), 0);
	for (i = 0; i < steps; i++) {
		int op = (int)(rnd() % 10);
		size_t off = pick_pos(), n = pick_pos() % sizeof(data), k;

		for (k = 0; k < n; k++)
			data[k] = (unsigned char)(rnd() % 3 ? rnd() : 0);
		if (op < 6) {
			assert_int_equal(kt_write(f->store, "/v", data, n, off),
					 0);
			if (n > 0) {
				if (off + n > r.len)
					ref_resize(&r, off + n);
				memcpy(r.p + off, data, n);
			}
		} else if (op < 9) {
			assert_int_equal(kt_truncate(f->store, "/v", off), 0);
			ref_resize(&r, off);
		} else {
			assert_int_equal(kt_put(f->store, "/v", data, n, NULL),
					 0);
			ref_resize(&r, 0);
			ref_resize(&r, n);
			memcpy(r.p, data, n);
		}
		check_value(f->store, &r, i);
		if (i % 500 == 499) {
			kt_test_reopen(f);
			assert_int_equal(kt_check(&bad, f->store, NULL), 0);
			assert_int_equal(bad, 0);
		}
	}
	free(r.p);
}

/* A hole far past the end stays a hole: writing one byte at 2 GiB + 1
 * must not store 2 GiB, which the row byte count shows. */
static void test_value__far_write_is_sparse(void **state)
{
	kt_test_fixture *f = *state;
	kt_store_stats before, after;
	unsigned char b[16];
	size_t got = 0;

	assert_int_equal(kt_put(f->store, "/s", "", 0, NULL), 0);
	assert_int_equal(kt_stats(&before, f->store), 0);
	assert_int_equal(kt_write(f->store, "/s", "x", 1,
				  (2ULL << 30) + 1), 0);
	assert_int_equal(kt_truncate(f->store, "/s", 1ULL << 39), 0);
	assert_int_equal(kt_stats(&after, f->store), 0);
	assert_true(after.row_bytes - before.row_bytes < 64 * 1024);
	assert_int_equal(after.value_bytes, 1ULL << 39);
	assert_int_equal(kt_read(&got, f->store, "/s", b, sizeof(b),
				 (2ULL << 30) - 7), 0);
	assert_int_equal(got, sizeof(b));
	assert_int_equal(b[7], 0);
	assert_int_equal(b[8], 'x');
	assert_int_equal(b[9], 0);
}

static uint64_t stored_of(kt_store *s, const char *path)
{
	kt_statbuf st;

	assert_int_equal(kt_lstat(&st, s, path), 0);
	return st.stored;
}

/* kt_statbuf.stored counts the blocks a value really has: holes take
 * nothing, an overwrite of an existing block adds nothing. */
static void test_value__stored_counts_blocks(void **state)
{
	kt_test_fixture *f = *state;
	kt_store *s = f->store;
	unsigned char *v = malloc(40000);
	size_t bad = 1;

	assert_non_null(v);
	assert_int_equal(kt_put(s, "/s", "", 0, NULL), 0);
	assert_int_equal(stored_of(s, "/s"), 0);
	assert_int_equal(kt_write(s, "/s", "x", 1, (2ULL << 30) + 1), 0);
	assert_int_equal(stored_of(s, "/s"), 16384);
	assert_int_equal(kt_truncate(s, "/s", 1ULL << 39), 0);
	assert_int_equal(stored_of(s, "/s"), 16384);
	memset(v, 'a', 16384);
	assert_int_equal(kt_write(s, "/s", v, 16384, 0), 0); /* a hole */
	assert_int_equal(stored_of(s, "/s"), 2 * 16384);
	assert_int_equal(kt_write(s, "/s", v, 16384, 0), 0); /* again */
	assert_int_equal(stored_of(s, "/s"), 2 * 16384);
	assert_int_equal(kt_write(s, "/s", "yy", 2, 100), 0);
	assert_int_equal(stored_of(s, "/s"), 2 * 16384);
	assert_int_equal(kt_truncate(s, "/s", 20000), 0); /* drops one */
	assert_int_equal(stored_of(s, "/s"), 16384);
	assert_int_equal(kt_truncate(s, "/s", 100), 0); /* inline again */
	assert_int_equal(stored_of(s, "/s"), 100);
	assert_int_equal(kt_write(s, "/s", v, 16384, 16384), 0);
	assert_int_equal(stored_of(s, "/s"), 2 * 16384); /* block 0 moved */

	/* A put leaves whole zero blocks out. */
	memset(v + 16384, 0, 16384);
	memset(v + 32768, 'b', 40000 - 32768);
	assert_int_equal(kt_put(s, "/p", v, 40000, NULL), 0);
	assert_int_equal(stored_of(s, "/p"), 2 * 16384);
	assert_int_equal(kt_put(s, "/small", "abc", 3, NULL), 0);
	assert_int_equal(stored_of(s, "/small"), 3);
	assert_int_equal(kt_mkdir(s, "/dir", NULL), 0);
	assert_int_equal(stored_of(s, "/dir"), 0);

	kt_test_reopen(f);
	assert_int_equal(stored_of(f->store, "/s"), 2 * 16384);
	assert_int_equal(kt_check(&bad, f->store, NULL), 0);
	assert_int_equal(bad, 0);
	free(v);
}

/* KT_APPEND writes at the end, read under the writer lock. */
static void test_value__append(void **state)
{
	kt_test_fixture *f = *state;
	void *v = NULL;
	size_t len = 0;
	uint64_t id = 0;
	char buf[8];
	size_t got = 0;

	assert_int_equal(kt_put(f->store, "/log", "ab", 2, NULL), 0);
	assert_int_equal(kt_write(f->store, "/log", "cd", 2, KT_APPEND), 0);
	assert_int_equal(kt_write(f->store, "/log", "e", 1, KT_APPEND), 0);
	assert_int_equal(kt_get(&v, &len, f->store, "/log"), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(v, "abcde", 5);
	kt_free(v);
	assert_int_equal(kt_orphan_detach(&id, f->store, "/log"), 0);
	assert_int_equal(kt_orphan_write(f->store, id, "f", 1, KT_APPEND), 0);
	assert_int_equal(kt_orphan_read(&got, f->store, id, buf, 8, 0), 0);
	assert_int_equal(got, 6);
	assert_memory_equal(buf, "abcdef", 6);
	assert_int_equal(kt_orphan_release(f->store, id), 0);
}

static void test_value__stats_count_kinds(void **state)
{
	kt_test_fixture *f = *state;
	kt_store_stats st;

	assert_int_equal(kt_put(f->store, "/a/b", "12345", 5, NULL), 0);
	assert_int_equal(kt_put(f->store, "/a", "xy", 2, NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/l", "/a", NULL), 0);
	assert_int_equal(kt_attr_set(f->store, "/a", "k", "v", 1, 0), 0);
	assert_int_equal(kt_stats(&st, f->store), 0);
	assert_int_equal(st.items, 2);   /* /a (item+dir) and /a/b */
	assert_int_equal(st.dirs, 2);    /* / and /a */
	assert_int_equal(st.links, 1);
	assert_int_equal(st.value_bytes, 7);
	assert_int_equal(st.attrs, 1);
	assert_true(st.rows >= 4 + 3 + 1 + 2);
	kt_assert_rejected(f->store, kt_stats(NULL, f->store), KT_EINVAL,
			   "stats");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_value__random_ranged_ops,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_value__far_write_is_sparse,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_value__stored_counts_blocks,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_value__append,
						kt_test_setup,
						kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_value__stats_count_kinds,
						kt_test_setup,
						kt_test_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
