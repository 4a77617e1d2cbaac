/*
 * test_item.c - item values: kt_put/kt_get round trips of every size around
 * the block boundaries, ranged kt_read, kt_write at offsets (holes read as
 * zeros), kt_truncate, conditional puts, the way put creates ancestors and
 * turns items and directories into both, create options, and the errors of
 * each value operation.
 */
#include "kt_test.h"

#include <time.h>

/* An iterator a failed assertion may have left open: freed by teardown,
 * because closing a store with a live LevelDB iterator aborts the whole
 * test program and loses the failure report. */
static kt_iter *g_iter;

/* Free @p it and forget it. */
static void iter_free(kt_iter *it)
{
	if (it == g_iter)
		g_iter = NULL;
	kt_iter_free(it);
}

static int teardown(void **state)
{
	kt_iter_free(g_iter);
	g_iter = NULL;
	return kt_test_teardown(state);
}

/* The byte at @p off of a position-dependent pattern, so that a block
 * written to the wrong place is noticed. */
static unsigned char pat(uint64_t off, unsigned seed)
{
	return (unsigned char)(((off + 1) * 0x9E3779B97F4A7C15ull + seed) >>
			       56);
}

static unsigned char *pattern(size_t len, unsigned seed)
{
	unsigned char *b = malloc(len ? len : 1);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < len; i++)
		b[i] = pat(i, seed);
	return b;
}

static void put_str(kt_store *st, const char *path, const char *val)
{
	int rc = kt_put(st, path, val, strlen(val), NULL);

	if (rc != 0)
		fail_msg("kt_put(%s): %d %s", path, rc, kt_errmsg());
}

/* Assert that the item at @p path holds exactly @p len bytes @p want,
 * through kt_get, kt_stat and kt_read. */
static void assert_bytes(kt_store *st, const char *path, const void *want,
			 size_t len)
{
	void *v = NULL;
	size_t got = 0, n = 0;
	kt_statbuf sb;
	unsigned char *buf;
	int rc = kt_get(&v, &got, st, path);

	if (rc != 0)
		fail_msg("kt_get(%s): %d %s", path, rc, kt_errmsg());
	assert_non_null(v);
	if (got != len)
		fail_msg("kt_get(%s): %zu bytes, want %zu", path, got, len);
	if (len)
		assert_memory_equal(v, want, len);
	/* one NUL after the last byte */
	assert_int_equal(((const char *)v)[len], '\0');
	kt_free(v);
	assert_int_equal(kt_stat(&sb, st, path), 0);
	assert_int_equal(sb.size, len);
	buf = malloc(len + 10);
	assert_non_null(buf);
	assert_int_equal(kt_read(&n, st, path, buf, len + 10, 0), 0);
	assert_int_equal(n, len);
	if (len)
		assert_memory_equal(buf, want, len);
	free(buf);
}

static void assert_str(kt_store *st, const char *path, const char *val)
{
	assert_bytes(st, path, val, strlen(val));
}

static void sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000L};

	nanosleep(&ts, NULL);
}

static kt_statbuf stat_of(kt_store *st, const char *path)
{
	kt_statbuf sb;
	int rc = kt_stat(&sb, st, path);

	if (rc != 0)
		fail_msg("kt_stat(%s): %d %s", path, rc, kt_errmsg());
	return sb;
}

/* ---- round trips ----------------------------------------------------------- */

static void test_item__put_get_roundtrip(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf sb;

	put_str(f->store, "/a", "hello");
	assert_str(f->store, "/a", "hello");
	sb = stat_of(f->store, "/a");
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(sb.size, 5);
	/* another item does not disturb it */
	put_str(f->store, "/b", "world!");
	assert_str(f->store, "/a", "hello");
	assert_str(f->store, "/b", "world!");
}

static void test_item__empty_value(void **state)
{
	kt_test_fixture *f = *state;
	void *v = NULL;
	size_t len = 99;
	kt_statbuf sb;

	assert_int_equal(kt_put(f->store, "/e", NULL, 0, NULL), 0);
	assert_int_equal(kt_get(&v, &len, f->store, "/e"), 0);
	assert_int_equal(len, 0);
	assert_non_null(v);
	assert_int_equal(((char *)v)[0], '\0');
	kt_free(v);
	sb = stat_of(f->store, "/e");
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(sb.size, 0);
	/* a non-NULL pointer with length 0 is the same thing */
	put_str(f->store, "/e", "x");
	assert_int_equal(kt_put(f->store, "/e", "ignored", 0, NULL), 0);
	assert_bytes(f->store, "/e", "", 0);
}

static void test_item__binary_value_with_nuls(void **state)
{
	kt_test_fixture *f = *state;
	unsigned char b[512];
	size_t i;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)(i % 3 == 0 ? 0 : i);
	b[sizeof(b) - 1] = 0;
	assert_int_equal(kt_put(f->store, "/bin", b, sizeof(b), NULL), 0);
	assert_bytes(f->store, "/bin", b, sizeof(b));
	memset(b, 0, sizeof(b));
	assert_int_equal(kt_put(f->store, "/zeros", b, sizeof(b), NULL), 0);
	assert_bytes(f->store, "/zeros", b, sizeof(b));
}

static void test_item__block_boundary_sizes(void **state)
{
	static const size_t sizes[] = {
		0, 1, 2, 511, 512, 513, 1023, 1024, 1025, 4095, 4096, 4097,
		8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769,
		65535, 65536, 65536 + 7, 131071, 131072, 131073, 1048576 + 3,
	};
	kt_test_fixture *f = *state;
	char path[32];
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned char *b = pattern(sizes[i], (unsigned)i);

		snprintf(path, sizeof(path), "/s%zu", sizes[i]);
		assert_int_equal(kt_put(f->store, path, b, sizes[i], NULL), 0);
		assert_bytes(f->store, path, b, sizes[i]);
		free(b);
	}
	/* all still intact together, and after reopening */
	kt_test_reopen(f);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned char *b = pattern(sizes[i], (unsigned)i);

		snprintf(path, sizeof(path), "/s%zu", sizes[i]);
		assert_bytes(f->store, path, b, sizes[i]);
		free(b);
	}
}

static void test_item__large_value(void **state)
{
	kt_test_fixture *f = *state;
	size_t len = (size_t)5 << 20, n = 0;
	unsigned char *b = pattern(len, 7), buf[10000];

	assert_int_equal(kt_put(f->store, "/big", b, len, NULL), 0);
	assert_bytes(f->store, "/big", b, len);
	/* a range in the middle, across several boundaries */
	assert_int_equal(kt_read(&n, f->store, "/big", buf, sizeof(buf),
				 (3u << 20) - 4000), 0);
	assert_int_equal(n, sizeof(buf));
	assert_memory_equal(buf, b + (3u << 20) - 4000, sizeof(buf));
	free(b);
}

static void test_item__overwrite_shorter_leaves_nothing_behind(void **state)
{
	kt_test_fixture *f = *state;
	unsigned char *b = pattern(100000, 1);
	unsigned char buf[64];
	size_t n = 99;

	assert_int_equal(kt_put(f->store, "/o", b, 100000, NULL), 0);
	put_str(f->store, "/o", "short");
	assert_str(f->store, "/o", "short");
	assert_int_equal(kt_read(&n, f->store, "/o", buf, sizeof(buf), 4096),
			 0);
	assert_int_equal(n, 0);
	/* growing again exposes zeros, not the old bytes */
	assert_int_equal(kt_truncate(f->store, "/o", 100000), 0);
	assert_int_equal(kt_read(&n, f->store, "/o", buf, sizeof(buf), 50000),
			 0);
	assert_int_equal(n, sizeof(buf));
	{
		unsigned char z[64] = {0};

		assert_memory_equal(buf, z, sizeof(z));
	}
	free(b);
}

static void test_item__overwrite_keeps_id_mode_owner(void **state)
{
	kt_test_fixture *f = *state;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_statbuf a, b;

	co.flags = KT_CREATE_MODE | KT_CREATE_OWNER;
	co.mode = 0600;
	co.uid = 4321;
	co.gid = 8765;
	assert_int_equal(kt_put(f->store, "/o", "one", 3, &co), 0);
	a = stat_of(f->store, "/o");
	sleep_ms(2);
	/* plain overwrite */
	assert_int_equal(kt_put(f->store, "/o", "two!", 4, NULL), 0);
	b = stat_of(f->store, "/o");
	assert_int_equal(b.id, a.id);
	assert_int_equal(b.mode, 0600);
	assert_int_equal(b.uid, 4321);
	assert_int_equal(b.gid, 8765);
	assert_int_not_equal(b.version, a.version);
	assert_true(b.mtime_ns > a.mtime_ns);
	assert_true(b.ctime_ns > a.ctime_ns);
	assert_int_equal(b.size, 4);
	/* create options do not apply to an existing item */
	co.mode = 0640;
	co.uid = 1;
	co.gid = 2;
	assert_int_equal(kt_put(f->store, "/o", "three", 5, &co), 0);
	b = stat_of(f->store, "/o");
	assert_int_equal(b.id, a.id);
	assert_int_equal(b.mode, 0600);
	assert_int_equal(b.uid, 4321);
	assert_int_equal(b.gid, 8765);
	assert_str(f->store, "/o", "three");
}

/* ---- kt_read ----------------------------------------------------------------- */

static void test_item__read_ranges(void **state)
{
	kt_test_fixture *f = *state;
	size_t len = 10000, n = 99;
	unsigned char *b = pattern(len, 3), buf[9000];

	assert_int_equal(kt_put(f->store, "/r", b, len, NULL), 0);
	assert_int_equal(kt_read(&n, f->store, "/r", buf, 10, 0), 0);
	assert_int_equal(n, 10);
	assert_memory_equal(buf, b, 10);
	/* across a 4 KiB boundary */
	assert_int_equal(kt_read(&n, f->store, "/r", buf, 20, 4090), 0);
	assert_int_equal(n, 20);
	assert_memory_equal(buf, b + 4090, 20);
	/* a range covering two whole boundaries */
	assert_int_equal(kt_read(&n, f->store, "/r", buf, 9000, 1), 0);
	assert_int_equal(n, 9000);
	assert_memory_equal(buf, b + 1, 9000);
	/* past the end: short */
	memset(buf, 0xEE, 200);
	assert_int_equal(kt_read(&n, f->store, "/r", buf, 100, 9995), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(buf, b + 9995, 5);
	assert_int_equal(buf[5], 0xEE); /* nothing written past nread */
	/* at and beyond the end: 0 */
	n = 99;
	assert_int_equal(kt_read(&n, f->store, "/r", buf, 100, 10000), 0);
	assert_int_equal(n, 0);
	n = 99;
	assert_int_equal(kt_read(&n, f->store, "/r", buf, 100, 1ull << 40), 0);
	assert_int_equal(n, 0);
	n = 99;
	assert_int_equal(kt_read(&n, f->store, "/r", buf, 100, UINT64_MAX),
			 0);
	assert_int_equal(n, 0);
	/* zero length */
	n = 99;
	assert_int_equal(kt_read(&n, f->store, "/r", buf, 0, 5), 0);
	assert_int_equal(n, 0);
	/* an empty item */
	assert_int_equal(kt_put(f->store, "/empty", NULL, 0, NULL), 0);
	n = 99;
	assert_int_equal(kt_read(&n, f->store, "/empty", buf, 10, 0), 0);
	assert_int_equal(n, 0);
	free(b);
}

/* ---- kt_write ------------------------------------------------------------------ */

static void test_item__write_at_offsets(void **state)
{
	kt_test_fixture *f = *state;

	put_str(f->store, "/w", "0123456789");
	/* inside */
	assert_int_equal(kt_write(f->store, "/w", "ab", 2, 3), 0);
	assert_str(f->store, "/w", "012ab56789");
	/* overlapping the end */
	assert_int_equal(kt_write(f->store, "/w", "XYZ", 3, 8), 0);
	assert_str(f->store, "/w", "012ab567XYZ");
	/* exactly at the end */
	assert_int_equal(kt_write(f->store, "/w", "!", 1, 11), 0);
	assert_str(f->store, "/w", "012ab567XYZ!");
	/* past the end: a hole of zeros */
	assert_int_equal(kt_write(f->store, "/w", "end", 3, 20), 0);
	assert_bytes(f->store, "/w", "012ab567XYZ!\0\0\0\0\0\0\0\0end", 23);
	/* zero bytes inside the value change nothing */
	assert_int_equal(kt_write(f->store, "/w", "", 0, 5), 0);
	assert_bytes(f->store, "/w", "012ab567XYZ!\0\0\0\0\0\0\0\0end", 23);
	/* into an empty item */
	assert_int_equal(kt_put(f->store, "/e", NULL, 0, NULL), 0);
	assert_int_equal(kt_write(f->store, "/e", "abc", 3, 0), 0);
	assert_str(f->store, "/e", "abc");
}

static void test_item__write_across_blocks(void **state)
{
	kt_test_fixture *f = *state;
	size_t len = 3 * 65536 + 100, i;
	unsigned char *b = pattern(len, 11), *w = pattern(70000, 99);
	static const uint64_t offs[] = {0, 1, 4090, 4095, 4096, 16380, 65530,
					65536, 131071};

	assert_int_equal(kt_put(f->store, "/x", b, len, NULL), 0);
	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		size_t wl = 10 + i * 7000;

		assert_int_equal(kt_write(f->store, "/x", w, wl, offs[i]), 0);
		memcpy(b + offs[i], w, wl);
	}
	assert_bytes(f->store, "/x", b, len);
	free(b);
	free(w);
}

static void test_item__write_far_past_end_is_sparse(void **state)
{
	kt_test_fixture *f = *state;
	uint64_t off = (2ull << 30) + 1;
	unsigned char buf[8192], zero[8192] = {0};
	size_t n = 0;
	kt_statbuf sb;

	put_str(f->store, "/sparse", "head");
	assert_int_equal(kt_write(f->store, "/sparse", "tail", 4, off), 0);
	sb = stat_of(f->store, "/sparse");
	assert_int_equal(sb.size, off + 4);
	/* the start is intact */
	assert_int_equal(kt_read(&n, f->store, "/sparse", buf, 8, 0), 0);
	assert_int_equal(n, 8);
	assert_memory_equal(buf, "head\0\0\0\0", 8);
	/* the middle of the hole reads as zeros */
	memset(buf, 0xAB, sizeof(buf));
	assert_int_equal(kt_read(&n, f->store, "/sparse", buf, sizeof(buf),
				 1ull << 30), 0);
	assert_int_equal(n, sizeof(buf));
	assert_memory_equal(buf, zero, sizeof(buf));
	/* the data sits right at the end, after zeros */
	memset(buf, 0xAB, sizeof(buf));
	assert_int_equal(kt_read(&n, f->store, "/sparse", buf, 100, off - 6),
			 0);
	assert_int_equal(n, 10);
	assert_memory_equal(buf, "\0\0\0\0\0\0tail", 10);
	/* and past the end there is nothing */
	assert_int_equal(kt_read(&n, f->store, "/sparse", buf, 100, off + 4),
			 0);
	assert_int_equal(n, 0);
	/* shrink it back so nothing reads 2 GiB later */
	assert_int_equal(kt_truncate(f->store, "/sparse", 4), 0);
	assert_str(f->store, "/sparse", "head");
}

/* ---- kt_truncate --------------------------------------------------------------- */

static void test_item__truncate_down_up_zero(void **state)
{
	kt_test_fixture *f = *state;
	size_t len = 20000;
	unsigned char *b = pattern(len, 5), *want = calloc(1, len);

	assert_non_null(want);
	assert_int_equal(kt_put(f->store, "/t", b, len, NULL), 0);
	/* down, inside a block */
	assert_int_equal(kt_truncate(f->store, "/t", 5000), 0);
	assert_bytes(f->store, "/t", b, 5000);
	/* up: what was cut reads as zeros */
	assert_int_equal(kt_truncate(f->store, "/t", 9000), 0);
	memcpy(want, b, 5000);
	assert_bytes(f->store, "/t", want, 9000);
	/* down to a block boundary, then up across several */
	assert_int_equal(kt_truncate(f->store, "/t", 4096), 0);
	assert_bytes(f->store, "/t", b, 4096);
	assert_int_equal(kt_truncate(f->store, "/t", len), 0);
	memset(want + 4096, 0, len - 4096);
	assert_bytes(f->store, "/t", want, len);
	/* same size: nothing changes */
	assert_int_equal(kt_truncate(f->store, "/t", len), 0);
	assert_bytes(f->store, "/t", want, len);
	/* to zero and up again: all zeros */
	assert_int_equal(kt_truncate(f->store, "/t", 0), 0);
	assert_bytes(f->store, "/t", "", 0);
	assert_int_equal(kt_truncate(f->store, "/t", 4097), 0);
	memset(want, 0, len);
	assert_bytes(f->store, "/t", want, 4097);
	/* a write after a cut does not resurrect old bytes around it */
	assert_int_equal(kt_put(f->store, "/t", b, len, NULL), 0);
	assert_int_equal(kt_truncate(f->store, "/t", 100), 0);
	assert_int_equal(kt_write(f->store, "/t", "Z", 1, 10000), 0);
	memset(want, 0, len);
	memcpy(want, b, 100);
	want[10000] = 'Z';
	assert_bytes(f->store, "/t", want, 10001);
	free(b);
	free(want);
}

/* ---- conditional puts -------------------------------------------------------- */

static void test_item__create_excl(void **state)
{
	kt_test_fixture *f = *state;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_statbuf sb;

	co.flags = KT_CREATE_EXCL;
	assert_int_equal(kt_put(f->store, "/fresh", "1", 1, &co), 0);
	assert_str(f->store, "/fresh", "1");
	kt_assert_rejected(f->store, kt_put(f->store, "/fresh", "2", 1, &co),
			   KT_EEXISTS, "/fresh");
	/* also fresh below missing ancestors */
	assert_int_equal(kt_put(f->store, "/p/q/fresh", "1", 1, &co), 0);
	/* a directory without a value is not an item: EXCL succeeds */
	assert_int_equal(kt_mkdir(f->store, "/dir", NULL), 0);
	assert_int_equal(kt_put(f->store, "/dir", "v", 1, &co), 0);
	sb = stat_of(f->store, "/dir");
	assert_int_equal(sb.kind, KT_KIND_ITEM | KT_KIND_DIR);
	kt_assert_rejected(f->store, kt_put(f->store, "/dir", "w", 1, &co),
			   KT_EEXISTS, "/dir");
	/* a link there (even dangling) counts */
	assert_int_equal(kt_symlink(f->store, "/link", "/nowhere", NULL), 0);
	kt_assert_rejected(f->store, kt_put(f->store, "/link", "w", 1, &co),
			   KT_EEXISTS, "/link");
}

static void test_item__create_if_version(void **state)
{
	kt_test_fixture *f = *state;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_statbuf a, b;

	put_str(f->store, "/v", "one");
	a = stat_of(f->store, "/v");
	co.flags = KT_CREATE_IF_VERSION;
	co.if_version = a.version;
	assert_int_equal(kt_put(f->store, "/v", "two", 3, &co), 0);
	assert_str(f->store, "/v", "two");
	b = stat_of(f->store, "/v");
	assert_int_not_equal(b.version, a.version);
	/* the old version is stale now */
	kt_assert_rejected(f->store, kt_put(f->store, "/v", "three", 5, &co),
			   KT_ECONFLICT, "/v");
	co.if_version = b.version + 1000;
	kt_assert_rejected(f->store, kt_put(f->store, "/v", "three", 5, &co),
			   KT_ECONFLICT, "/v");
	co.if_version = b.version;
	assert_int_equal(kt_put(f->store, "/v", "three", 5, &co), 0);
	assert_str(f->store, "/v", "three");

	/* no item: conflict, and nothing (not even ancestors) is made */
	co.if_version = 0;
	kt_assert_rejected(f->store, kt_put(f->store, "/absent", "x", 1, &co),
			   KT_ECONFLICT, "/absent");
	co.if_version = b.version;
	kt_assert_rejected(f->store,
			   kt_put(f->store, "/new/deep/item", "x", 1, &co),
			   KT_ECONFLICT, "/new");
	/* a directory without a value is no item either */
	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	b = stat_of(f->store, "/d");
	co.if_version = b.version;
	kt_assert_rejected(f->store, kt_put(f->store, "/d", "x", 1, &co),
			   KT_ECONFLICT, "/d");
}

/* ---- structure --------------------------------------------------------------- */

static void test_item__put_creates_ancestors_as_dirs(void **state)
{
	kt_test_fixture *f = *state;
	kt_iter *it = NULL;
	const kt_entry *e;
	kt_statbuf sb;

	put_str(f->store, "/p/q/r", "leaf");
	sb = stat_of(f->store, "/p");
	assert_int_equal(sb.kind, KT_KIND_DIR);
	assert_int_equal(sb.mode, 0755);
	sb = stat_of(f->store, "/p/q");
	assert_int_equal(sb.kind, KT_KIND_DIR);
	assert_int_equal(sb.nsubdirs, 0);
	sb = stat_of(f->store, "/p");
	assert_int_equal(sb.nsubdirs, 1);
	sb = stat_of(f->store, "/p/q/r");
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(sb.mode, 0644);
	assert_int_equal(kt_iter_new(&it, f->store, "/p/q", NULL), 0);
	g_iter = it;
	assert_int_equal(kt_iter_next(&e, it), 0);
	assert_string_equal(e->name, "r");
	assert_int_equal(e->kind, KT_KIND_ITEM);
	assert_int_equal(kt_iter_next(&e, it), KT_ITEROVER);
	iter_free(it);
}

static void test_item__put_under_item_makes_item_dir(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf a, b;

	put_str(f->store, "/i", "value");
	a = stat_of(f->store, "/i");
	assert_int_equal(a.kind, KT_KIND_ITEM);
	put_str(f->store, "/i/c", "child");
	b = stat_of(f->store, "/i");
	assert_int_equal(b.kind, KT_KIND_ITEM | KT_KIND_DIR);
	assert_int_equal(b.id, a.id);
	assert_str(f->store, "/i", "value");
	assert_str(f->store, "/i/c", "child");
	/* deeper: every item ancestor becomes both */
	put_str(f->store, "/i/c/g/h", "grand");
	assert_int_equal(stat_of(f->store, "/i/c").kind,
			 KT_KIND_ITEM | KT_KIND_DIR);
	assert_int_equal(stat_of(f->store, "/i/c/g").kind, KT_KIND_DIR);
	assert_str(f->store, "/i/c", "child");
	assert_int_equal(stat_of(f->store, "/").nsubdirs, 1);
	assert_int_equal(stat_of(f->store, "/i").nsubdirs, 1);
}

static void test_item__put_on_dir_makes_item_dir(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf a, b;

	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	put_str(f->store, "/d/child", "c");
	a = stat_of(f->store, "/d");
	put_str(f->store, "/d", "dir value");
	b = stat_of(f->store, "/d");
	assert_int_equal(b.kind, KT_KIND_ITEM | KT_KIND_DIR);
	assert_int_equal(b.id, a.id);
	assert_int_equal(b.mode, a.mode);
	assert_str(f->store, "/d", "dir value");
	assert_str(f->store, "/d/child", "c");
}

static void test_item__put_on_root(void **state)
{
	kt_test_fixture *f = *state;

	/* The header exempts the root: it is a directory and holds no
	 * value. */
	kt_assert_rejected(f->store, kt_put(f->store, "/", "root value", 10,
					    NULL),
			   KT_EINVAL, "root");
	assert_int_equal(stat_of(f->store, "/").kind, KT_KIND_DIR);
}

static void test_item__get_errors(void **state)
{
	kt_test_fixture *f = *state;
	void *v = (void *)f;
	size_t len = 5, n = 5;
	char buf[4];

	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	put_str(f->store, "/i", "item");
	assert_int_equal(kt_get(&v, &len, f->store, "/d"), KT_EISDIR);
	assert_null(v);
	assert_int_equal(len, 0);
	assert_non_null(strstr(kt_errmsg(), "/d"));
	v = (void *)f;
	assert_int_equal(kt_get(&v, &len, f->store, "/"), KT_EISDIR);
	assert_null(v);
	assert_int_equal(kt_read(&n, f->store, "/d", buf, 4, 0), KT_EISDIR);
	assert_int_equal(n, 0);

	v = (void *)f;
	assert_int_equal(kt_get(&v, &len, f->store, "/missing"),
			 KT_ENOTFOUND);
	assert_null(v);
	assert_non_null(strstr(kt_errmsg(), "/missing"));
	assert_int_equal(kt_get(&v, &len, f->store, "/d/missing"),
			 KT_ENOTFOUND);
	assert_int_equal(kt_get(&v, &len, f->store, "/nodir/missing"),
			 KT_ENOTFOUND);
	assert_int_equal(kt_read(&n, f->store, "/missing", buf, 4, 0),
			 KT_ENOTFOUND);

	/* through an item that is not a directory */
	assert_int_equal(kt_get(&v, &len, f->store, "/i/x"), KT_ENOTDIR);
	assert_null(v);
	assert_non_null(strstr(kt_errmsg(), "/i"));
	assert_int_equal(kt_get(&v, &len, f->store, "/i/x/y"), KT_ENOTDIR);
	assert_int_equal(kt_read(&n, f->store, "/i/x", buf, 4, 0),
			 KT_ENOTDIR);
	kt_assert_rejected(f->store, kt_write(f->store, "/i/x", "a", 1, 0),
			   KT_ENOTDIR, "/i");
	kt_assert_rejected(f->store, kt_truncate(f->store, "/i/x", 0),
			   KT_ENOTDIR, "/i");
	{
		kt_statbuf sb;

		assert_int_equal(kt_stat(&sb, f->store, "/i/x"), KT_ENOTDIR);
	}
	/* put through a link to an item is ENOTDIR (header) */
	assert_int_equal(kt_symlink(f->store, "/li", "/i", NULL), 0);
	kt_assert_rejected(f->store, kt_put(f->store, "/li/x", "a", 1, NULL),
			   KT_ENOTDIR, "/li");
}

static void test_item__write_truncate_errors(void **state)
{
	kt_test_fixture *f = *state;

	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	put_str(f->store, "/i", "item");
	kt_assert_rejected(f->store, kt_write(f->store, "/m", "a", 1, 0),
			   KT_ENOTFOUND, "/m");
	kt_assert_rejected(f->store, kt_truncate(f->store, "/m", 10),
			   KT_ENOTFOUND, "/m");
	kt_assert_rejected(f->store, kt_write(f->store, "/d/m", "a", 1, 0),
			   KT_ENOTFOUND, "/d/m");
	kt_assert_rejected(f->store, kt_write(f->store, "/d", "a", 1, 0),
			   KT_EISDIR, "/d");
	kt_assert_rejected(f->store, kt_truncate(f->store, "/d", 0),
			   KT_EISDIR, "/d");
	kt_assert_rejected(f->store, kt_write(f->store, "/", "a", 1, 0),
			   KT_EISDIR, "/");
	/* a dangling link: nothing to write */
	assert_int_equal(kt_symlink(f->store, "/dl", "/gone", NULL), 0);
	kt_assert_rejected(f->store, kt_write(f->store, "/dl", "a", 1, 0),
			   KT_ENOTFOUND, "/");
	kt_assert_rejected(f->store, kt_truncate(f->store, "/dl", 0),
			   KT_ENOTFOUND, "/");
	/* NULL buffer with a length */
	kt_assert_rejected(f->store, kt_write(f->store, "/i", NULL, 3, 0),
			   KT_EINVAL, "");
	kt_assert_rejected(f->store, kt_put(f->store, "/i", NULL, 3, NULL),
			   KT_EINVAL, "");
}

static void test_item__too_big(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf sb;
	size_t n = 9;
	char buf[4];

	put_str(f->store, "/i", "item");
	kt_assert_rejected(f->store,
			   kt_write(f->store, "/i", "ab", 2, KT_VALUE_MAX - 1),
			   KT_ETOOBIG, "/i");
	kt_assert_rejected(f->store,
			   kt_write(f->store, "/i", "a", 1, KT_VALUE_MAX),
			   KT_ETOOBIG, "/i");
	/* offset + len wrapping around 2^64 must not pass the check */
	kt_assert_rejected(f->store,
			   kt_write(f->store, "/i", "abcd", 4, UINT64_MAX - 1),
			   KT_ETOOBIG, "/i");
	kt_assert_rejected(f->store,
			   kt_truncate(f->store, "/i", KT_VALUE_MAX + 1),
			   KT_ETOOBIG, "/i");
	kt_assert_rejected(f->store, kt_truncate(f->store, "/i", UINT64_MAX),
			   KT_ETOOBIG, "/i");
	/* exactly at the limit is allowed, and sparse */
	assert_int_equal(kt_write(f->store, "/i", "z", 1, KT_VALUE_MAX - 1),
			 0);
	sb = stat_of(f->store, "/i");
	assert_int_equal(sb.size, KT_VALUE_MAX);
	assert_int_equal(kt_read(&n, f->store, "/i", buf, 4,
				 KT_VALUE_MAX - 2), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "\0z", 2);
	assert_int_equal(kt_truncate(f->store, "/i", 4), 0);
	assert_int_equal(kt_truncate(f->store, "/i", KT_VALUE_MAX), 0);
	assert_int_equal(stat_of(f->store, "/i").size, KT_VALUE_MAX);
	assert_int_equal(kt_truncate(f->store, "/i", 4), 0);
	assert_str(f->store, "/i", "item");
}

/* ---- create options ------------------------------------------------------------ */

static void test_item__create_defaults(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf sb;

	put_str(f->store, "/dir/item", "v");
	assert_int_equal(kt_mkdir(f->store, "/made", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/link", "/dir", NULL), 0);
	sb = stat_of(f->store, "/dir/item");
	assert_int_equal(sb.mode, 0644);
	assert_int_equal(sb.uid, geteuid());
	assert_int_equal(sb.gid, getegid());
	sb = stat_of(f->store, "/dir");
	assert_int_equal(sb.mode, 0755);
	assert_int_equal(sb.uid, geteuid());
	assert_int_equal(sb.gid, getegid());
	sb = stat_of(f->store, "/made");
	assert_int_equal(sb.mode, 0755);
	assert_int_equal(sb.uid, geteuid());
	assert_int_equal(sb.gid, getegid());
	assert_int_equal(kt_lstat(&sb, f->store, "/link"), 0);
	assert_int_equal(sb.kind, KT_KIND_LINK);
	assert_int_equal(sb.mode, 0777);
	assert_int_equal(sb.uid, geteuid());
	assert_int_equal(sb.gid, getegid());
}

static void test_item__create_mode_and_owner(void **state)
{
	kt_test_fixture *f = *state;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_statbuf sb;

	co.flags = KT_CREATE_MODE;
	co.mode = 0600;
	assert_int_equal(kt_put(f->store, "/m", "v", 1, &co), 0);
	sb = stat_of(f->store, "/m");
	assert_int_equal(sb.mode, 0600);
	assert_int_equal(sb.uid, geteuid());
	co.mode = 04711;
	assert_int_equal(kt_mkdir(f->store, "/md", &co), 0);
	assert_int_equal(stat_of(f->store, "/md").mode, 04711);
	/* The header applies the mode to "a new node", links included
	 * (unlike Linux, where a symlink's mode is always 0777). */
	co.mode = 0700;
	assert_int_equal(kt_symlink(f->store, "/ml", "/m", &co), 0);
	assert_int_equal(kt_lstat(&sb, f->store, "/ml"), 0);
	assert_int_equal(sb.mode, 0700);
	/* mode without the flag is ignored */
	co.flags = 0;
	co.mode = 0123;
	assert_int_equal(kt_put(f->store, "/nomode", "v", 1, &co), 0);
	assert_int_equal(stat_of(f->store, "/nomode").mode, 0644);

	co.flags = KT_CREATE_OWNER;
	co.uid = 4242;
	co.gid = 4343;
	assert_int_equal(kt_put(f->store, "/o1/o2", "v", 1, &co), 0);
	sb = stat_of(f->store, "/o1/o2");
	assert_int_equal(sb.uid, 4242);
	assert_int_equal(sb.gid, 4343);
	assert_int_equal(sb.mode, 0644);
	/* "use uid/gid for new nodes": the ancestors made too */
	sb = stat_of(f->store, "/o1");
	assert_int_equal(sb.uid, 4242);
	assert_int_equal(sb.gid, 4343);
	/* owner without the flag is ignored */
	co.flags = 0;
	assert_int_equal(kt_put(f->store, "/noowner", "v", 1, &co), 0);
	assert_int_equal(stat_of(f->store, "/noowner").uid, geteuid());

	/* The mode applies to the new node only; ancestors made on the way
	 * get the directory default, like POSIX mkdir -p -m. */
	co.flags = KT_CREATE_MODE;
	co.mode = 0600;
	assert_int_equal(kt_put(f->store, "/a1/a2", "v", 1, &co), 0);
	assert_int_equal(stat_of(f->store, "/a1/a2").mode, 0600);
	assert_int_equal(stat_of(f->store, "/a1").mode, 0755);
}

static void test_item__create_rejects_bad_options(void **state)
{
	kt_test_fixture *f = *state;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	co.flags = KT_CREATE_MODE;
	co.mode = 010644; /* above 07777 */
	kt_assert_rejected(f->store, kt_put(f->store, "/x", "v", 1, &co),
			   KT_EINVAL, "");
	kt_assert_rejected(f->store, kt_mkdir(f->store, "/x", &co), KT_EINVAL,
			   "");
	co.flags = 0x8000; /* unknown */
	co.mode = 0;
	kt_assert_rejected(f->store, kt_put(f->store, "/x", "v", 1, &co),
			   KT_EINVAL, "");
}

static void test_item__value_ops_follow_links(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf a, l;
	char buf[16];
	size_t n = 0;

	put_str(f->store, "/a", "0123456789");
	assert_int_equal(kt_symlink(f->store, "/l", "/a", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/rel", "l", NULL), 0);
	assert_int_equal(kt_lstat(&l, f->store, "/l"), 0);
	assert_int_equal(kt_read(&n, f->store, "/rel", buf, 4, 2), 0);
	assert_int_equal(n, 4);
	assert_memory_equal(buf, "2345", 4);
	assert_int_equal(kt_write(f->store, "/l", "ab", 2, 0), 0);
	assert_str(f->store, "/a", "ab23456789");
	assert_int_equal(kt_truncate(f->store, "/rel", 3), 0);
	assert_str(f->store, "/a", "ab2");
	/* put follows a link in the last component too */
	put_str(f->store, "/l", "via link");
	assert_str(f->store, "/a", "via link");
	a = stat_of(f->store, "/a");
	assert_int_equal(a.kind, KT_KIND_ITEM);
	{
		kt_statbuf l2;

		assert_int_equal(kt_lstat(&l2, f->store, "/l"), 0);
		assert_int_equal(l2.kind, KT_KIND_LINK);
		assert_int_equal(l2.id, l.id);
		assert_int_equal(l2.size, 2);
	}
	/* links in inner components */
	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/ld", "/d", NULL), 0);
	put_str(f->store, "/ld/x", "inner");
	assert_str(f->store, "/d/x", "inner");
	/* a dangling link: nothing to put to */
	assert_int_equal(kt_symlink(f->store, "/dang", "/gone/item", NULL), 0);
	kt_assert_rejected(f->store, kt_put(f->store, "/dang", "x", 1, NULL),
			   KT_ENOTFOUND, "/");
	/* a link to a directory: the directory gets the value */
	put_str(f->store, "/ld", "dir value");
	assert_int_equal(stat_of(f->store, "/d").kind,
			 KT_KIND_ITEM | KT_KIND_DIR);
	assert_str(f->store, "/d", "dir value");
	assert_int_equal(kt_lstat(&l, f->store, "/ld"), 0);
	assert_int_equal(l.kind, KT_KIND_LINK);
}

#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup, \
						 teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_item__put_get_roundtrip),
		T(test_item__empty_value),
		T(test_item__binary_value_with_nuls),
		T(test_item__block_boundary_sizes),
		T(test_item__large_value),
		T(test_item__overwrite_shorter_leaves_nothing_behind),
		T(test_item__overwrite_keeps_id_mode_owner),
		T(test_item__read_ranges),
		T(test_item__write_at_offsets),
		T(test_item__write_across_blocks),
		T(test_item__write_far_past_end_is_sparse),
		T(test_item__truncate_down_up_zero),
		T(test_item__create_excl),
		T(test_item__create_if_version),
		T(test_item__put_creates_ancestors_as_dirs),
		T(test_item__put_under_item_makes_item_dir),
		T(test_item__put_on_dir_makes_item_dir),
		T(test_item__put_on_root),
		T(test_item__value_ops_follow_links),
		T(test_item__get_errors),
		T(test_item__write_truncate_errors),
		T(test_item__too_big),
		T(test_item__create_defaults),
		T(test_item__create_mode_and_owner),
		T(test_item__create_rejects_bad_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
