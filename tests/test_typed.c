/*
 * test_typed.c - stores with typed names (kt_options.typed_names, format
 * 5): numbers sort by value, UUIDs take 16 bytes, other names sort as
 * bytes after them, everywhere order shows (listing, paging both ways,
 * find), and every name reads back as written.
 *
 * The row form T() itself (path.c) is checked below the API: one-to-one,
 * order-preserving, free of NUL and of the delimiter, for delimiters that
 * make its escapes work (the default, '|', 0xff).  The rest runs on every
 * engine.
 */
#include <inttypes.h>

#include "kt_test.h"
#include "path.h"

/* ---- The row form --------------------------------------------------- */

static kt__delim delim_of(const char *s)
{
	kt__delim d;

	memset(&d, 0, sizeof(d));
	d.len = strlen(s);
	memcpy(d.s, s, d.len);
	d.typed = 1;
	return d;
}

static void enc(kt__buf *out, const kt__delim *d, const char *name)
{
	out->len = 0;
	assert_int_equal(kt__name_enc(out, d, name, strlen(name)), 0);
}

static int cmp_bytes(const kt__buf *a, const kt__buf *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int r = memcmp(a->p, b->p, n);

	return r ? r : (a->len > b->len) - (a->len < b->len);
}

/* T(name) decodes to name, holds no NUL and no delimiter. */
static void round_trip(const kt__delim *d, const char *name)
{
	kt__buf e = {0}, back = {0};
	size_t i;

	enc(&e, d, name);
	for (i = 0; i < e.len; i++) {
		assert_int_not_equal(e.p[i], '\0');
		assert_false(i + d->len <= e.len &&
			     memcmp(e.p + i, d->s, d->len) == 0);
	}
	assert_int_equal(kt__name_dec(&back, d, e.p, e.len), 0);
	assert_int_equal(back.len, strlen(name));
	assert_memory_equal(back.p, name, back.len);
	kt__buf_free(&e);
	kt__buf_free(&back);
}

static uint64_t rnd64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_typed__row_form(void **state)
{
	const char *delims[] = {KT_DEFAULT_DELIMITER, "|", "\xff", " "};
	static const char *fixed[] = {
		"0", "1", "9", "10", "255", "256", "65535", "65536",
		"18446744073709551615", "18446744073709551616", "007", "+7",
		"-1", "1e3", "01", "00",
		"123e4567-e89b-12d3-a456-426614174000",
		"123E4567-E89B-12D3-A456-426614174000",
		"123e4567e89b12d3a456426614174000",
		"00000000-0000-0000-0000-000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff", "a", "\x01x", "z\xc2"};
	size_t di, i;
	uint64_t seed = 88172645463325252ULL;

	(void)state;
	for (di = 0; di < sizeof(delims) / sizeof(delims[0]); di++) {
		kt__delim d = delim_of(delims[di]);
		kt__buf a = {0}, b = {0};
		char na[32], nb[32];

		for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
			round_trip(&d, fixed[i]);
		/* Numbers keep their order, whatever their bytes (the ones
		 * escaped included: 0, 1, d0 - 1 and d0 in every place). */
		for (i = 0; i < 20000; i++) {
			uint64_t x = rnd64(&seed), y = rnd64(&seed);
			int shift = (int)(rnd64(&seed) % 64);
			x >>= shift;
			y >>= (int)(rnd64(&seed) % 64);
			if (i % 7 == 0)
				y = x + 1;
			if (i % 11 == 0) /* bytes that need escapes */
				x = 0x0001ff00a6c2a5c1ULL >> shift;
			snprintf(na, sizeof(na), "%" PRIu64, x);
			snprintf(nb, sizeof(nb), "%" PRIu64, y);
			round_trip(&d, na);
			enc(&a, &d, na);
			enc(&b, &d, nb);
			if (x < y)
				assert_true(cmp_bytes(&a, &b) < 0);
			else if (x > y)
				assert_true(cmp_bytes(&a, &b) > 0);
			else
				assert_int_equal(cmp_bytes(&a, &b), 0);
		}
		/* Numbers < UUIDs < other names; UUIDs in text order. */
		enc(&a, &d, "18446744073709551615");
		enc(&b, &d, "00000000-0000-0000-0000-000000000000");
		assert_true(cmp_bytes(&a, &b) < 0);
		enc(&a, &d, "ffffffff-ffff-ffff-ffff-ffffffffffff");
		enc(&b, &d, "\x01");
		assert_true(cmp_bytes(&a, &b) < 0);
		enc(&a, &d, "00000000-0000-0000-0000-0000000000ff");
		enc(&b, &d, "00000000-0000-0000-0000-000000000100");
		assert_true(cmp_bytes(&a, &b) < 0);
		/* A UUID takes 16 bytes and a tag, plus an escape for each
		 * of its bytes that needs one. */
		enc(&a, &d, "123e4567-e89b-12d3-a456-426614174000");
		assert_true(a.len >= 17 && a.len <= 20);
		kt__buf_free(&a);
		kt__buf_free(&b);
	}
}

static void test_typed__bad_forms_refused(void **state)
{
	kt__delim d = delim_of(KT_DEFAULT_DELIMITER);
	kt__buf out = {0};
	/* Not the shortest form of 5; a length byte out of range; a cut
	 * UUID; an unknown tag; an empty other name; 5 and a UUID in the
	 * form of other names (each name has one form); other names that
	 * are no names ('/', the delimiter). */
	static const char *bad[] = {"\x01\x03\x01\x01\x05", "\x01\x0a\x05",
				    "\x02\x12\x34", "\x04x", "\x03", "\x03" "5",
				    "\x03" "123e4567-e89b-12d3-a456-426614174000",
				    "\x03" "a/b", "\x03" "a\xc2\xa6"};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out.len = 0;
		assert_int_equal(kt__name_dec(&out, &d, bad[i], strlen(bad[i])),
				 KT_ECORRUPT);
	}
	kt__buf_free(&out);
	d = delim_of("\x05");
	assert_int_equal(kt__typed_check(&d), KT_EINVAL);
}

/* ---- Through the API ------------------------------------------------- */

/* The fixture's store again, made with typed names. */
static int setup_typed(void **state)
{
	kt_test_fixture *f;
	kt_options o = KT_OPTIONS_INIT;

	if (kt_test_setup(state) != 0)
		return -1;
	f = *state;
	kt_close(f->store);
	f->store = NULL;
	if (kt_destroy(f->path, NULL) != 0)
		return -1;
	o.create_if_missing = 1;
	o.typed_names = 1;
	return kt_open(&f->store, f->path, &o) == 0 ? 0 : -1;
}

static void put(kt_store *st, const char *path)
{
	if (kt_put(st, path, path, strlen(path), NULL) != 0)
		fail_msg("put %s: %s", path, kt_errmsg());
}

/* The names kt_iter_new gives, joined by spaces. */
static void listing(char *out, size_t outsz, kt_store *st, const char *dir,
		    const char *after, size_t limit, int reverse)
{
	kt_list_options lo = KT_LIST_OPTIONS_INIT;
	const kt_entry *e;
	kt_iter *it = NULL;
	size_t n = 0;
	int rc;

	lo.after = after;
	lo.after_len = after ? strlen(after) : 0;
	lo.limit = limit;
	lo.reverse = reverse;
	if ((rc = kt_iter_new(&it, st, dir, &lo)) != 0)
		fail_msg("list %s: %s", dir, kt_errmsg());
	out[0] = '\0';
	while ((rc = kt_iter_next(&e, it)) == 0) {
		n += (size_t)snprintf(out + n, outsz - n, "%s%.*s",
				      n ? " " : "", (int)e->name_len, e->name);
		assert_true(n < outsz);
		assert_int_equal(strlen(e->name), e->name_len);
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
}

#define UL "123e4567-e89b-12d3-a456-426614174000"
#define UU "123E4567-E89B-12D3-A456-426614174000"
#define ALL "0 9 10 100 18446744073709551615 " UL " 007 " UU " 18446744073709551616 abc"

static void fill(kt_store *st)
{
	/* Made in no particular order. */
	put(st, "/o/abc");
	put(st, "/o/100");
	put(st, "/o/" UU);
	put(st, "/o/9");
	put(st, "/o/007");
	put(st, "/o/18446744073709551616");
	put(st, "/o/10");
	put(st, "/o/" UL);
	put(st, "/o/0");
	put(st, "/o/18446744073709551615");
}

static void test_typed__listing_order(void **state)
{
	kt_test_fixture *f = *state;
	char got[1024];
	kt_statbuf sb;

	fill(f->store);
	listing(got, sizeof(got), f->store, "/o", NULL, 0, 0);
	assert_string_equal(got, ALL);
	listing(got, sizeof(got), f->store, "/o", NULL, 0, 1);
	assert_string_equal(got, "abc 18446744073709551616 " UU " 007 " UL
			    " 18446744073709551615 100 10 9 0");
	/* Pages: after 9 comes 10; after a name that is not there, the
	 * next one in the order; backwards too. */
	listing(got, sizeof(got), f->store, "/o", "9", 1, 0);
	assert_string_equal(got, "10");
	listing(got, sizeof(got), f->store, "/o", "50", 2, 0);
	assert_string_equal(got, "100 18446744073709551615");
	listing(got, sizeof(got), f->store, "/o", "100", 2, 1);
	assert_string_equal(got, "10 9");
	listing(got, sizeof(got), f->store, "/o", "18446744073709551615", 2,
		0);
	assert_string_equal(got, UL " 007");
	/* An empty after is before every name, as in a plain store. */
	listing(got, sizeof(got), f->store, "/o", "", 0, 0);
	assert_string_equal(got, ALL);
	listing(got, sizeof(got), f->store, "/o", "", 0, 1);
	assert_string_equal(got, "");
	/* Every name reads back as written, by path too. */
	assert_int_equal(kt_stat(&sb, f->store, "/o/" UU), 0);
	assert_int_equal(kt_stat(&sb, f->store, "/o/007"), 0);
	assert_int_equal(kt_stat(&sb, f->store, "/o/7"), KT_ENOTFOUND);
	assert_int_equal(kt_stat(&sb, f->store, "/o"), 0);
	assert_int_equal(sb.order, KT_ORDER_TYPED);
}

/* The paths kt_find_new(@p prefix, @p flags) gives, joined by spaces. */
static void found(char *out, size_t outsz, kt_store *st, const char *prefix,
		  unsigned int flags)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	size_t n = 0;
	int rc;

	if ((rc = kt_find_new(&it, st, prefix, flags)) != 0)
		fail_msg("find %s: %s", prefix, kt_errmsg());
	out[0] = '\0';
	while ((rc = kt_iter_next(&e, it)) == 0) {
		n += (size_t)snprintf(out + n, outsz - n, "%s%s",
				      n ? " " : "", e->name);
		assert_true(n < outsz);
	}
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
}

static void test_typed__find_order(void **state)
{
	kt_test_fixture *f = *state;
	char got[2048];

	fill(f->store);
	put(f->store, "/o/10/2");
	put(f->store, "/o/10/11");
	found(got, sizeof(got), f->store, "/o", KT_FIND_SUBTREE);
	assert_string_equal(got, "/o /o/0 /o/9 /o/10 /o/10/2 /o/10/11 /o/100 "
			    "/o/18446744073709551615 /o/" UL " /o/007 "
			    "/o/" UU " /o/18446744073709551616 /o/abc");
	/* A prefix that is a number matches that name only; another prefix
	 * the other names it begins. */
	found(got, sizeof(got), f->store, "/o/10", 0);
	assert_string_equal(got, "/o/10 /o/10/2 /o/10/11");
	found(got, sizeof(got), f->store, "/o/0", 0);
	assert_string_equal(got, "/o/0");
	found(got, sizeof(got), f->store, "/o/00", 0);
	assert_string_equal(got, "/o/007");
}

static void test_typed__ops_and_check(void **state)
{
	kt_test_fixture *f = *state;
	char got[1024];
	size_t nv = 99;

	fill(f->store);
	assert_int_equal(kt_rename(f->store, "/o", "/p", 0), 0);
	assert_int_equal(kt_rename(f->store, "/p/9", "/p/11", 0), 0);
	assert_int_equal(kt_rename(f->store, "/p/" UL, "/p/8", 0), 0);
	listing(got, sizeof(got), f->store, "/p", NULL, 0, 0);
	assert_string_equal(got, "0 8 10 11 100 18446744073709551615 007 "
			    UU " 18446744073709551616 abc");
	assert_int_equal(kt_delete(f->store, "/p/100", 0), 0);
	assert_int_equal(kt_check(&nv, f->store, NULL), 0);
	assert_int_equal(nv, 0);
}

/* Row forms longer or shorter than the names: a deep path of "0"s (each
 * 1 byte of text, 4 in its row form) is read and listed; a directory
 * named by a UUID (18 bytes in rows, 36 as text) moves with its subtree
 * (the path limits are counted in text). */
static void test_typed__forms_longer_and_shorter(void **state)
{
	kt_test_fixture *f = *state;
	char deep[512], got[64];
	kt_statbuf sb;
	size_t n = 0, i;

	for (i = 0; i < 120; i++)
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "/0");
	put(f->store, deep);
	assert_int_equal(kt_stat(&sb, f->store, deep), 0);
	deep[n - 2] = '\0';
	listing(got, sizeof(got), f->store, deep, NULL, 0, 0);
	assert_string_equal(got, "0");
	put(f->store, "/u/" UL "/x/" UL);
	assert_int_equal(kt_rename(f->store, "/u/" UL, "/v", 0), 0);
	assert_int_equal(kt_stat(&sb, f->store, "/v/x/" UL), 0);
	assert_int_equal(kt_rename(f->store, "/v", "/u/" UL "0", 0), 0);
	assert_int_equal(kt_stat(&sb, f->store, "/u/" UL "0/x/" UL), 0);
}

static void test_typed__chosen_at_creation(void **state)
{
	kt_test_fixture *f = *state;
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	kt_statbuf sb;
	char got[256];

	put(f->store, "/o/10");
	put(f->store, "/o/9");
	kt_close(f->store);
	f->store = NULL;
	/* Opened again without asking: still typed. */
	assert_int_equal(kt_open(&f->store, f->path, NULL), 0);
	listing(got, sizeof(got), f->store, "/o", NULL, 0, 0);
	assert_string_equal(got, "9 10");
	/* A plain store stays plain, and cannot be opened as typed. */
	kt_close(f->store);
	f->store = NULL;
	assert_int_equal(kt_destroy(f->path, NULL), 0);
	o.create_if_missing = 1;
	assert_int_equal(kt_open(&st, f->path, &o), 0);
	put(st, "/o/10");
	put(st, "/o/9");
	listing(got, sizeof(got), st, "/o", NULL, 0, 0);
	assert_string_equal(got, "10 9");
	assert_int_equal(kt_stat(&sb, st, "/o"), 0);
	assert_int_equal(sb.order, KT_ORDER_BYTES);
	kt_close(st);
	o.create_if_missing = 0;
	o.typed_names = 1;
	assert_int_equal(kt_open(&st, f->path, &o), KT_EINVAL);
	assert_non_null(strstr(kt_errmsg(), "chosen when a store is made"));
	assert_int_equal(kt_open(&f->store, f->path, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_typed__row_form),
		cmocka_unit_test(test_typed__bad_forms_refused),
		cmocka_unit_test_setup_teardown(test_typed__listing_order,
						setup_typed, kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_typed__find_order,
						setup_typed, kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_typed__ops_and_check,
						setup_typed, kt_test_teardown),
		cmocka_unit_test_setup_teardown(
			test_typed__forms_longer_and_shorter, setup_typed,
			kt_test_teardown),
		cmocka_unit_test_setup_teardown(test_typed__chosen_at_creation,
						setup_typed, kt_test_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
