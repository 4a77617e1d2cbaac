/*
 * test_format.c - the on-disk format (docs/FORMAT.md) seen from outside:
 * each test closes its store, opens the LevelDB directory directly, reads or
 * writes rows by the documented layout, and checks how the library reacts.
 *
 * - The rows of a small store are exactly those FORMAT.md shows.
 * - Directories that are not keytree stores, headers from a newer format,
 *   damaged headers and a foreign delimiter are refused with exact codes
 *   and messages that name what is wrong.
 * - Each kind of damage kt_check must find is found, named, and undone by
 *   kt_repair without losing the data that should survive.
 * - On a healthy store kt_check is clean and kt_repair changes nothing.
 */
#include "kt_test.h"

/* A store with neither typed names nor block checksums is written in
 * format 4, which older libraries read too; a new LevelDB store has block
 * checksums, so it is format 5 with flag 0x02 (test_typed: flag 0x01). */
#define PLAIN_FORMAT 4
#define FLAGS_FORMAT 5

/* For tests of older formats: when 0, the stores made from now on have no
 * block checksums (store.c), as every store before format 5 had. */
extern int kt__test_blksum;
extern int kt__test_counted;

#include <leveldb/c.h>

#define D    KT_DEFAULT_DELIMITER /* "\xc2\xa6" */
#define DLEN 2

/* Fail the test unless @p call returns 0, showing the library's message. */
#define ok(call)                                                               \
	do {                                                                   \
		int ok__rc = (call);                                           \
		if (ok__rc != 0)                                               \
			fail_msg("%s: %d (%s)", #call, ok__rc, kt_errmsg());   \
	} while (0)

/* Fail unless @p call returns @p code and kt_errmsg() contains @p needle. */
#define fails_naming(call, code, needle)                                       \
	do {                                                                   \
		int fn__rc = (call);                                           \
		if (fn__rc != (code))                                          \
			fail_msg("%s: got %d (%s), want %d", #call, fn__rc,    \
				 kt_errmsg(), (int)(code));                    \
		if (strstr(kt_errmsg(), (needle)) == NULL)                     \
			fail_msg("%s: message '%s' does not name '%s'", #call, \
				 kt_errmsg(), (needle));                       \
	} while (0)

static kt_test_fixture *fix(void **state)
{
	return *state;
}

/* ------------------------------------------------------------------------ */
/* Raw LevelDB access. */

/* A row key: partition || 0x00 || sort. */
typedef struct rkey {
	char p[8192]; /* a deep path (over the depth limit), encoded */
	size_t len;
} rkey;

static void rkey_add(rkey *k, const void *p, size_t len)
{
	assert_true(k->len + len <= sizeof(k->p));
	memcpy(k->p + k->len, p, len);
	k->len += len;
}

/* Append E(path): every '/' becomes the delimiter; "/" gives nothing. */
static void rkey_enc(rkey *k, const char *path)
{
	const char *s;

	if (strcmp(path, "/") == 0)
		return;
	for (s = path; *s; s++) {
		if (*s == '/')
			rkey_add(k, D, DLEN);
		else
			rkey_add(k, s, 1);
	}
}

/* The key of the node row of @p path: E(path) || 0x00. */
static rkey node_key(const char *path)
{
	rkey k = {{0}, 0};

	rkey_enc(&k, path);
	rkey_add(&k, "", 1);
	return k;
}

/* The key of the index row of @p path: E(parent) || D || 0x00 || name. */
static rkey index_key(const char *path)
{
	rkey k = {{0}, 0};
	const char *slash = strrchr(path, '/');
	char parent[8192];

	assert_non_null(slash);
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	rkey_enc(&k, parent[0] ? parent : "/");
	rkey_add(&k, D, DLEN);
	rkey_add(&k, "", 1);
	rkey_add(&k, slash + 1, strlen(slash + 1));
	return k;
}

/* The checksum a block row of block @p b ends with (FORMAT.md §6). */
static uint32_t block_crc(uint64_t b, const void *p, size_t n)
{
	unsigned char be[8];
	int i;

	for (i = 7; i >= 0; i--, b >>= 8)
		be[i] = (unsigned char)b;
	return kt_test_crc32c(kt_test_crc32c(0, be, 8), p, n);
}

/* The key of block @p b of node @p id: "/blk/<16 hex>" 0x00 u64be(b). */
static rkey block_key(uint64_t id, uint64_t b)
{
	rkey k = {{0}, 0};
	char part[40];
	unsigned char be[8];
	int i;

	snprintf(part, sizeof(part), "/blk/%016llx", (unsigned long long)id);
	rkey_add(&k, part, strlen(part) + 1);
	for (i = 7; i >= 0; i--, b >>= 8)
		be[i] = (unsigned char)b;
	rkey_add(&k, be, 8);
	return k;
}

/* The key of the id row of node @p id: "/id" 0x00 u64be(id). */
static rkey id_key(uint64_t id)
{
	rkey k = {{0}, 0};
	unsigned char be[8];
	int i;

	rkey_add(&k, "/id", 4);
	for (i = 7; i >= 0; i--, id >>= 8)
		be[i] = (unsigned char)id;
	rkey_add(&k, be, 8);
	return k;
}

/* The key of attribute @p name of node @p id. */
static rkey attr_key(uint64_t id, const char *name)
{
	rkey k = {{0}, 0};
	char part[40];

	snprintf(part, sizeof(part), "/attr/%016llx", (unsigned long long)id);
	rkey_add(&k, part, strlen(part) + 1);
	rkey_add(&k, name, strlen(name));
	return k;
}

static rkey meta_key(const char *sort)
{
	rkey k = {{0}, 0};

	rkey_add(&k, "/meta", 6);
	rkey_add(&k, sort, strlen(sort));
	return k;
}

static leveldb_t *ldb_open(const char *dir, int create)
{
	leveldb_options_t *o = leveldb_options_create();
	char *err = NULL;
	leveldb_t *db;

	leveldb_options_set_create_if_missing(o, create);
	db = leveldb_open(o, dir, &err);
	leveldb_options_destroy(o);
	if (err != NULL)
		fail_msg("leveldb_open %s: %s", dir, err);
	return db;
}

static void ldb_put(leveldb_t *db, const rkey *k, const void *v, size_t vlen)
{
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	char *err = NULL;

	leveldb_put(db, wo, k->p, k->len, v, vlen, &err);
	leveldb_writeoptions_destroy(wo);
	if (err != NULL)
		fail_msg("leveldb_put: %s", err);
}

static void ldb_del(leveldb_t *db, const rkey *k)
{
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	char *err = NULL;

	leveldb_delete(db, wo, k->p, k->len, &err);
	leveldb_writeoptions_destroy(wo);
	if (err != NULL)
		fail_msg("leveldb_delete: %s", err);
}

/* The value of row @p k (malloc'd), or NULL when absent. */
static unsigned char *ldb_get(leveldb_t *db, const rkey *k, size_t *vlen)
{
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	char *err = NULL, *v;

	v = leveldb_get(db, ro, k->p, k->len, vlen, &err);
	leveldb_readoptions_destroy(ro);
	if (err != NULL)
		fail_msg("leveldb_get: %s", err);
	return (unsigned char *)v;
}

/* Every row of the database as one hex string, to compare states. */
static char *ldb_dump(leveldb_t *db)
{
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
	kt_test_str s = {0};

	for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl);
		const char *v = leveldb_iter_value(it, &vl);
		kt_test_str_hex(&s, k, kl);
		kt_test_str_add(&s, "=", 1);
		kt_test_str_hex(&s, v, vl);
		kt_test_str_add(&s, "\n", 1);
	}
	leveldb_iter_destroy(it);
	leveldb_readoptions_destroy(ro);
	if (s.p == NULL)
		kt_test_str_add(&s, "", 0);
	return s.p;
}

/* Close the fixture's store and open its LevelDB directory directly. */
static leveldb_t *raw_begin(kt_test_fixture *f)
{
	kt_close(f->store);
	f->store = NULL;
	return ldb_open(f->path, 0);
}

/* Close the raw database and reopen the store. */
static void raw_end(kt_test_fixture *f, leveldb_t *db)
{
	leveldb_close(db);
	kt_test_reopen(f);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* Rewrite the u32 at @p off of the node row of @p path. */
static void node_patch32(leveldb_t *db, const char *path, size_t off,
			 uint32_t v)
{
	rkey k = node_key(path);
	size_t vl = 0;
	unsigned char *row = ldb_get(db, &k, &vl);

	assert_non_null(row);
	assert_true(vl >= 74 && off + 4 <= 74);
	put_le32(row + off, v);
	ldb_put(db, &k, row, vl);
	leveldb_free(row);
}

/* ------------------------------------------------------------------------ */
/* Store contents. */

static void put_str(kt_store *s, const char *path, const char *value)
{
	int rc = kt_put(s, path, value, strlen(value), NULL);

	if (rc != 0)
		fail_msg("put %s: %d (%s)", path, rc, kt_errmsg());
}

static uint64_t id_of(kt_store *s, const char *path)
{
	kt_statbuf sb;

	ok(kt_lstat(&sb, s, path));
	return sb.id;
}

static uint32_t lstat_nlink(kt_store *s, const char *path)
{
	kt_statbuf sb;

	ok(kt_lstat(&sb, s, path));
	return sb.nlink;
}

static void assert_value(kt_store *s, const char *path, const char *want)
{
	void *v = NULL;
	size_t len = 0;

	ok(kt_get(&v, &len, s, path));
	assert_int_equal(len, strlen(want));
	assert_memory_equal(v, want, len);
	kt_free(v);
}

/* 1 if @p name is a child of directory @p dir, else 0. */
static int listed(kt_store *s, const char *dir, const char *name)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc, found = 0;

	ok(kt_iter_new(&it, s, dir, NULL));
	while ((rc = kt_iter_next(&e, it)) == 0)
		if (strcmp(e->name, name) == 0)
			found = 1;
	assert_int_equal(rc, KT_ITEROVER);
	kt_iter_free(it);
	return found;
}

#define BIG_LEN 40000u

/* A 40000-byte value: block 0 data, block 1 a hole, block 2 data. */
static unsigned char *big_value(void)
{
	unsigned char *b = calloc(1, BIG_LEN);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < 100; i++)
		b[i] = (unsigned char)('a' + i % 26);
	for (i = 35000; i < BIG_LEN; i++)
		b[i] = (unsigned char)i;
	return b;
}

/* The store the damage tests start from. */
static void populate(kt_store *s)
{
	unsigned char *big = big_value();

	put_str(s, "/d/item", "hello");
	ok(kt_attr_set(s, "/d/item", "colour", "blue", 4, 0));
	put_str(s, "/d/sub/leaf", "leaf value");
	ok(kt_attr_set(s, "/d/sub/leaf", "k", "v", 1, 0));
	put_str(s, "/p/c", "child of p");
	ok(kt_attr_set(s, "/p/c", "a", "1", 1, 0));
	put_str(s, "/keep", "kept");
	ok(kt_put(s, "/big", big, BIG_LEN, NULL));
	ok(kt_symlink(s, "/ln", "/d/item", NULL));
	free(big);
}

/* ------------------------------------------------------------------------ */
/* kt_check and kt_repair. */

/* What a kt_check or kt_repair callback was told.  A fixed buffer, so
 * that a failing assertion (which leaves the test by longjmp) leaks
 * nothing. */
typedef struct calls {
	size_t n;
	char all[8192]; /* every text, one per line, truncated when full */
	size_t len;
} calls;

static int record_cb(const char *what, void *payload)
{
	calls *c = payload;
	int w;

	c->n++;
	w = snprintf(c->all + c->len, sizeof(c->all) - c->len, "%s\n", what);
	if (w > 0)
		c->len += (size_t)w < sizeof(c->all) - c->len
				  ? (size_t)w
				  : sizeof(c->all) - c->len - 1;
	return 0;
}

/* kt_check must find violations, return KT_ECORRUPT, and one of its texts
 * must contain every needle (NULL-terminated list). */
static void assert_check_finds(kt_store *s, const char *needle, ...)
{
	calls c = {0, {0}, 0};
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	size_t n = 0;
	int rc;
	va_list ap;
	const char *nd;
	char *line, *save = NULL, text[sizeof(c.all)];
	int hit = 0;

	o.on_violation = record_cb;
	o.payload = &c;
	rc = kt_check(&n, s, &o);

	if (rc != KT_ECORRUPT || n == 0 || c.n != n)
		fail_msg("kt_check: %d (%s), %zu violations, %zu callbacks", rc,
			 kt_errmsg(), n, c.n);
	assert_non_null(strstr(kt_errmsg(), "violation"));
	memcpy(text, c.all, sizeof(text));
	for (line = strtok_r(text, "\n", &save); line && !hit;
	     line = strtok_r(NULL, "\n", &save)) {
		hit = 1;
		va_start(ap, needle);
		for (nd = needle; nd != NULL; nd = va_arg(ap, const char *))
			if (strstr(line, nd) == NULL)
				hit = 0;
		va_end(ap);
	}
	if (!hit)
		fail_msg("no violation names '%s' (and the rest); got:\n%s",
			 needle, c.all);
}

static void assert_clean(kt_store *s)
{
	calls c = {0, {0}, 0};
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	size_t n = 12345;
	int rc;

	o.on_violation = record_cb;
	o.payload = &c;
	rc = kt_check(&n, s, &o);

	if (rc != 0 || n != 0 || c.n != 0)
		fail_msg("kt_check: %d (%s), %zu violations:\n%s", rc,
			 kt_errmsg(), n, c.all);
}

/* kt_repair must succeed, after which the store passes kt_check.  Returns
 * the number of repairs it reported, which the caller checks last with
 * assert_reported(), after what survived. */
static size_t repair_and_check(kt_store *s)
{
	calls c = {0, {0}, 0};
	kt_check_options o = KT_CHECK_OPTIONS_INIT;
	size_t n = 0;

	o.on_violation = record_cb;
	o.payload = &c;
	ok(kt_repair(&n, s, &o));
	assert_int_equal(c.n, n);
	assert_clean(s);
	return n;
}

/* Every repair is counted and reported through the callback. */
static void assert_reported(size_t nfixed)
{
	if (nfixed == 0)
		fail_msg("kt_repair fixed the store but reported 0 repairs");
}

/* What must survive every damage test: the nodes not damaged. */
static void assert_survivors(kt_store *s)
{
	unsigned char *big = big_value();
	void *v = NULL;
	size_t len = 0;
	char *t = NULL;

	assert_value(s, "/keep", "kept");
	assert_value(s, "/d/sub/leaf", "leaf value");
	ok(kt_get(&v, &len, s, "/big"));
	assert_int_equal(len, BIG_LEN);
	assert_memory_equal(v, big, BIG_LEN);
	kt_free(v);
	ok(kt_readlink(&t, &len, s, "/ln"));
	assert_string_equal(t, "/d/item");
	kt_free(t);
	assert_true(listed(s, "/", "keep"));
	assert_true(listed(s, "/d/sub", "leaf"));
	free(big);
}

/* ------------------------------------------------------------------------ */
/* The rows are those docs/FORMAT.md describes. */

static void test_format__rows_as_documented(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_store *s = f->store;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	const char *alice = "{\"name\":\"Alice\"}";
	const char *target = "/Accounts/123456/Links/xyzpdq";
	const unsigned char hdr[] = "keytree\0\x05\0\0\0\0\x40\0\0\0\x10\0\0"
				    "\x02\xc2\xa6\x0a";
	uint64_t acct, item, ln, big, root;
	unsigned char *v, *bigv = big_value();
	leveldb_t *db;
	rkey k;
	size_t vl;

	co.flags = KT_CREATE_PARENTS;
	ok(kt_put(s, "/Accounts/123456", alice, strlen(alice), NULL));
	put_str(s, "/Accounts/123456/Links/xyzpdq", "x");
	ok(kt_symlink(s, "/Links/xyzpdq", target, &co));
	ok(kt_put(s, "/big", bigv, BIG_LEN, NULL));
	root = id_of(s, "/");
	acct = id_of(s, "/Accounts/123456");
	item = id_of(s, "/Accounts/123456/Links/xyzpdq");
	ln = id_of(s, "/Links/xyzpdq");
	big = id_of(s, "/big");
	db = raw_begin(f);

	/* Header: magic, format, block, inline limit, delimiter, flags
	 * (block checksums, counted directories). */
	k = meta_key("header");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, sizeof(hdr) - 1);
	assert_memory_equal(v, hdr, vl);
	leveldb_free(v);

	/* Counters: two u64 limits above every id and version in use. */
	k = meta_key("alloc");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 16);
	assert_true(le64(v) > big && le64(v) > ln);
	leveldb_free(v);

	/* The root: empty partition, a directory with two subdirectories
	 * and three entries, which its row counts after the header (format
	 * byte 3). */
	k = node_key("/");
	assert_int_equal(k.len, 1);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 78);
	assert_int_equal(v[0], 3);
	assert_int_equal(v[1], KT_KIND_DIR);
	assert_int_equal(le64(v + 2), root);
	assert_int_equal(le32(v + 62), 2); /* Accounts, Links */
	assert_int_equal(le32(v + 74), 3); /* Accounts, Links, big */
	leveldb_free(v);

	/* Item and directory at once, value inline after the 78 bytes of a
	 * counted directory's header. */
	k = node_key("/Accounts/123456");
	assert_int_equal(k.len, 2 * DLEN + 8 + 6 + 1);
	assert_memory_equal(k.p,
			    "\xc2\xa6"
			    "Accounts\xc2\xa6"
			    "123456\0",
			    k.len);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 78 + strlen(alice));
	assert_int_equal(v[0], 3);
	assert_int_equal(v[1], KT_KIND_ITEM | KT_KIND_DIR);
	assert_int_equal(le64(v + 2), acct);
	assert_int_equal(le32(v + 10), 0755);
	assert_int_equal(le64(v + 22), strlen(alice));
	assert_int_equal(le32(v + 62), 1); /* Links */
	assert_int_equal(le32(v + 66), 0);
	assert_int_equal(le32(v + 70), 0); /* reserved */
	assert_int_equal(le32(v + 74), 1); /* Links */
	assert_memory_equal(v + 78, alice, strlen(alice));
	leveldb_free(v);

	/* Its index row in the parent's index partition: kind, id. */
	k = index_key("/Accounts/123456");
	assert_memory_equal(k.p,
			    "\xc2\xa6"
			    "Accounts\xc2\xa6\0"
			    "123456",
			    k.len);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 9);
	assert_int_equal(v[0], KT_KIND_ITEM | KT_KIND_DIR);
	assert_int_equal(le64(v + 1), acct);
	leveldb_free(v);

	k = index_key("/Accounts/123456/Links/xyzpdq");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(v[0], KT_KIND_ITEM);
	assert_int_equal(le64(v + 1), item);
	leveldb_free(v);

	/* A link: payload is the target verbatim, size its length. */
	k = node_key("/Links/xyzpdq");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(v[1], KT_KIND_LINK);
	assert_int_equal(le64(v + 22), strlen(target));
	assert_int_equal(vl, 74 + strlen(target));
	assert_memory_equal(v + 74, target, strlen(target));
	leveldb_free(v);

	/* A large value: no payload, blocks keyed big-endian, hole at 1,
	 * the last block only as long as the value. */
	k = node_key("/big");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 74);
	assert_int_equal(le64(v + 22), BIG_LEN);
	leveldb_free(v);
	/* Each block row ends with le32 CRC-32C(u64be(block) || bytes). */
	assert_int_equal(kt_test_crc32c(0, "123456789", 9), 0xE3069283u);
	k = block_key(big, 0);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 16384 + 4);
	assert_memory_equal(v, bigv, 16384);
	assert_int_equal(le32(v + 16384), block_crc(0, bigv, 16384));
	leveldb_free(v);
	k = block_key(big, 1);
	assert_null(ldb_get(db, &k, &vl));
	k = block_key(big, 2);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, BIG_LEN - 2 * 16384 + 4);
	assert_memory_equal(v, bigv + 2 * 16384, vl - 4);
	assert_int_equal(le32(v + vl - 4),
			 block_crc(2, bigv + 2 * 16384, vl - 4));
	leveldb_free(v);

	/* Id rows: the node's partition key, E(path); the root's is empty. */
	k = id_key(acct);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 2 * DLEN + 8 + 6);
	assert_memory_equal(v, "\xc2\xa6" "Accounts\xc2\xa6" "123456", vl);
	leveldb_free(v);
	k = id_key(root);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 0);
	leveldb_free(v);
	k = id_key(ln);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 2 * DLEN + 5 + 6);
	assert_memory_equal(v, "\xc2\xa6" "Links\xc2\xa6" "xyzpdq", vl);
	leveldb_free(v);

	raw_end(f, db);
	free(bigv);
}

/* ------------------------------------------------------------------------ */
/* Directories that are not (readable) stores. */

static void test_format__foreign_leveldb_is_not_a_store(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_options o = KT_OPTIONS_INIT;
	kt_store *s = (kt_store *)1;
	char dir[400];
	leveldb_t *db;
	rkey k = {{0}, 0};

	snprintf(dir, sizeof(dir), "%s/foreign", f->dir);
	db = ldb_open(dir, 1);
	rkey_add(&k, "user:42", 7);
	ldb_put(db, &k, "Bob", 3);
	k.len = 0;
	rkey_add(&k, "\0\0", 2); /* looks like an empty partition */
	ldb_put(db, &k, "?", 1);
	leveldb_close(db);

	fails_naming(kt_open(&s, dir, NULL), KT_ENOTSTORE, dir);
	assert_null(s);
	assert_non_null(strstr(kt_errmsg(), "header"));
	/* Creating does not take it over either. */
	o.create_if_missing = 1;
	fails_naming(kt_open(&s, dir, &o), KT_ENOTSTORE, dir);
	assert_null(s);
	/* And the foreign rows are untouched. */
	db = ldb_open(dir, 0);
	{
		char *dump = ldb_dump(db);
		assert_non_null(strstr(dump, "757365723a3432=426f62\n"));
		assert_null(strstr(dump, "2f6d657461")); /* "/meta" */
		free(dump);
	}
	leveldb_close(db);
}

/* An empty LevelDB database is a LevelDB database without a keytree
 * header: not a store (opening never writes one into an existing
 * database; only a directory that is absent or empty is created). */
static void test_format__empty_leveldb_is_not_a_store(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_store *s = (kt_store *)1;
	char dir[400];

	snprintf(dir, sizeof(dir), "%s/empty", f->dir);
	leveldb_close(ldb_open(dir, 1));
	fails_naming(kt_open(&s, dir, NULL), KT_ENOTSTORE, dir);
	assert_null(s);
	assert_non_null(strstr(kt_errmsg(), "header"));
}

static void test_format__newer_format_version(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_store *s = (kt_store *)1;
	leveldb_t *db = raw_begin(f);
	rkey k = meta_key("header");
	unsigned char *v;
	size_t vl;

	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(le32(v + 8), FLAGS_FORMAT);
	put_le32(v + 8, KT_FORMAT_VERSION + 1);
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	leveldb_close(db);

	{
		char want[64], upto[64];
		snprintf(want, sizeof(want), "version %d",
			 KT_FORMAT_VERSION + 1);
		snprintf(upto, sizeof(upto), "up to %d", KT_FORMAT_VERSION);
		fails_naming(kt_open(&s, f->path, NULL), KT_EVERSION, want);
		assert_null(s);
		assert_non_null(strstr(kt_errmsg(), upto));
	}
	assert_non_null(strstr(kt_errmsg(), f->path));

	/* Put it back so that teardown checks a readable store. */
	db = ldb_open(f->path, 0);
	v = ldb_get(db, &k, &vl);
	put_le32(v + 8, FLAGS_FORMAT);
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	raw_end(f, db);
}

/* A store as a library before block checksums and counted directories
 * made it (format 4), for the tests that turn it into a store of an older
 * format still. */
static int setup_old(void **state)
{
	int rc;

	kt__test_blksum = 0;
	kt__test_counted = 0;
	rc = kt_test_setup(state);
	kt__test_blksum = 1;
	kt__test_counted = 1;
	return rc;
}

static void test_format__damaged_header(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_store *s = (kt_store *)1;
	leveldb_t *db = raw_begin(f);
	rkey k = meta_key("header");
	unsigned char *good, bad[64];
	size_t gl;

	good = ldb_get(db, &k, &gl);
	assert_non_null(good);
	assert_true(gl <= sizeof(bad));

	/* Wrong magic: not a keytree header at all. */
	memcpy(bad, good, gl);
	bad[0] = 'K';
	ldb_put(db, &k, bad, gl);
	leveldb_close(db);
	fails_naming(kt_open(&s, f->path, NULL), KT_ENOTSTORE,
		     "not a keytree header");
	assert_null(s);

	/* Too short for the fixed fields: not a keytree header either. */
	db = ldb_open(f->path, 0);
	ldb_put(db, &k, good, 10);
	leveldb_close(db);
	fails_naming(kt_open(&s, f->path, NULL), KT_ENOTSTORE,
		     "not a keytree header");

	/* Right magic, impossible fields: damaged. */
	memcpy(bad, good, gl);
	bad[20] = 0; /* delimiter length */
	db = ldb_open(f->path, 0);
	ldb_put(db, &k, bad, gl);
	leveldb_close(db);
	fails_naming(kt_open(&s, f->path, NULL), KT_ECORRUPT, "header");
	assert_non_null(strstr(kt_errmsg(), f->path));

	memcpy(bad, good, gl);
	put_le32(bad + 16, 1u << 20); /* inline limit above the block */
	db = ldb_open(f->path, 0);
	ldb_put(db, &k, bad, gl);
	leveldb_close(db);
	fails_naming(kt_open(&s, f->path, NULL), KT_ECORRUPT, "damaged");

	/* A trailing byte after the delimiter. */
	memcpy(bad, good, gl);
	bad[gl] = 'x';
	db = ldb_open(f->path, 0);
	ldb_put(db, &k, bad, gl + 1);
	leveldb_close(db);
	fails_naming(kt_open(&s, f->path, NULL), KT_ECORRUPT, "damaged");

	db = ldb_open(f->path, 0);
	ldb_put(db, &k, good, gl);
	leveldb_free(good);
	raw_end(f, db);
}

static void test_format__missing_counter_row(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_store *s = (kt_store *)1;
	leveldb_t *db = raw_begin(f);
	rkey k = meta_key("alloc");
	unsigned char *v;
	size_t vl;

	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 16);
	ldb_del(db, &k);
	leveldb_close(db);
	fails_naming(kt_open(&s, f->path, NULL), KT_ECORRUPT, "counter row");
	assert_null(s);

	db = ldb_open(f->path, 0);
	ldb_put(db, &k, v, 15);
	leveldb_close(db);
	fails_naming(kt_open(&s, f->path, NULL), KT_ECORRUPT, "counter row");

	db = ldb_open(f->path, 0);
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	raw_end(f, db);
}

static void test_format__delimiter_mismatch(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_options o = KT_OPTIONS_INIT;
	kt_store *s = NULL;
	char dir[400];
	leveldb_t *db;
	rkey k = {{0}, 0};
	unsigned char *v;
	size_t vl;

	snprintf(dir, sizeof(dir), "%s/pipe", f->dir);
	o.create_if_missing = 1;
	o.delimiter = "|";
	ok(kt_open(&s, dir, &o));
	put_str(s, "/a/b", "v");
	kt_close(s);
	s = (kt_store *)1;

	/* Asking for the default names both delimiters. */
	o.create_if_missing = 0;
	o.delimiter = KT_DEFAULT_DELIMITER;
	fails_naming(kt_open(&s, dir, &o), KT_EINVAL, "'|'");
	assert_null(s);
	assert_non_null(strstr(kt_errmsg(), "'" KT_DEFAULT_DELIMITER "'"));
	assert_non_null(strstr(kt_errmsg(), dir));

	/* The rows use '|': "|a|" 0x00 "b" is b's index row. */
	db = ldb_open(dir, 0);
	rkey_add(&k, "|a|\0b", 5);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 9);
	assert_int_equal(v[0], KT_KIND_ITEM);
	leveldb_free(v);
	leveldb_close(db);

	/* NULL means "whatever the store has". */
	ok(kt_open(&s, dir, NULL));
	assert_string_equal(kt_delimiter(s, &vl), "|");
	assert_int_equal(vl, 1);
	assert_value(s, "/a/b", "v");
	assert_clean(s);
	kt_close(s);
}

/* ------------------------------------------------------------------------ */
/* Damage that kt_check finds and kt_repair undoes. */

static void test_format__index_row_to_nothing(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	unsigned char v[9] = {KT_KIND_ITEM, 0x39, 0x05};
	leveldb_t *db;
	rkey k;

	populate(f->store);
	db = raw_begin(f);
	k = index_key("/d/ghost");
	ldb_put(db, &k, v, sizeof(v));
	raw_end(f, db);

	assert_true(listed(f->store, "/d", "ghost"));
	assert_check_finds(f->store, "'/d'", "'ghost'", "points at no node",
			   NULL);
	nfix = repair_and_check(f->store);
	assert_false(listed(f->store, "/d", "ghost"));
	assert_value(f->store, "/d/item", "hello");
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void assert_id_path(kt_store *s, const char *path)
{
	char *p = NULL;
	size_t len = 0;

	ok(kt_id_path(&p, &len, s, id_of(s, path)));
	assert_string_equal(p, path);
	assert_int_equal(len, strlen(path));
	kt_free(p);
}

static void test_format__node_without_id_row(void **state)
{
	kt_test_fixture *f = fix(state);
	uint64_t id;
	char *p = NULL;
	size_t nfix;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	id = id_of(f->store, "/d/item");
	db = raw_begin(f);
	k = id_key(id);
	ldb_del(db, &k);
	raw_end(f, db);

	assert_int_equal(kt_id_path(&p, NULL, f->store, id), KT_ENOTFOUND);
	assert_null(p);
	assert_check_finds(f->store, "'/d/item'", "no id row", NULL);
	nfix = repair_and_check(f->store);
	assert_id_path(f->store, "/d/item");
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void test_format__id_row_names_another_path(void **state)
{
	kt_test_fixture *f = fix(state);
	uint64_t id;
	size_t nfix;
	leveldb_t *db;
	rkey k, wrong = node_key("/keep");
	char *p = NULL;

	populate(f->store);
	id = id_of(f->store, "/d/item");
	db = raw_begin(f);
	k = id_key(id);
	ldb_put(db, &k, wrong.p, wrong.len - 1);
	raw_end(f, db);

	/* The lookup sees that /keep has another id, never answers it. */
	assert_int_equal(kt_id_path(&p, NULL, f->store, id), KT_ECORRUPT);
	assert_null(p);
	assert_check_finds(f->store, "'/d/item'", "names another path", NULL);
	nfix = repair_and_check(f->store);
	assert_id_path(f->store, "/d/item");
	assert_id_path(f->store, "/keep");
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void test_format__id_row_of_no_node(void **state)
{
	kt_test_fixture *f = fix(state);
	rkey k = node_key("/d/item"), ik;
	size_t nfix;
	leveldb_t *db;
	char *p = NULL;

	populate(f->store);
	db = raw_begin(f);
	ik = id_key(987654);
	ldb_put(db, &ik, k.p, k.len - 1);
	raw_end(f, db);

	assert_int_equal(kt_id_path(&p, NULL, f->store, 987654),
			 KT_ECORRUPT);
	assert_check_finds(f->store, "id row of id 987654", "names no node",
			   NULL);
	nfix = repair_and_check(f->store);
	assert_int_equal(kt_id_path(&p, NULL, f->store, 987654),
			 KT_ENOTFOUND);
	assert_id_path(f->store, "/d/item");
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* A format 1 store has no id rows: read-only it opens and checks clean
 * but cannot look ids up; the first writable open adds them and raises
 * the header to this library's format. */
static void test_format__format_1_upgraded(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_options ro = KT_OPTIONS_INIT;
	kt_store *s = NULL;
	leveldb_t *db;
	leveldb_readoptions_t *rdo;
	leveldb_iterator_t *it;
	leveldb_writebatch_t *wb;
	leveldb_writeoptions_t *wo;
	rkey k = meta_key("header");
	unsigned char *v;
	char *p = NULL, *err = NULL, *before;
	size_t vl, nid = 0;

	populate(f->store);
	before = kt_test_digest(f->store);
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	put_le32(v + 8, 1);
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	/* Drop every id row, as format 1 never wrote them. */
	rdo = leveldb_readoptions_create();
	wo = leveldb_writeoptions_create();
	wb = leveldb_writebatch_create();
	it = leveldb_create_iterator(db, rdo);
	for (leveldb_iter_seek(it, "/id", 4); leveldb_iter_valid(it);
	     leveldb_iter_next(it)) {
		size_t kl;
		const char *key = leveldb_iter_key(it, &kl);
		if (kl < 4 || memcmp(key, "/id", 4) != 0)
			break;
		leveldb_writebatch_delete(wb, key, kl);
		nid++;
	}
	leveldb_iter_destroy(it);
	assert_true(nid > 5);
	leveldb_write(db, wo, wb, &err);
	assert_null(err);
	leveldb_writebatch_destroy(wb);
	leveldb_writeoptions_destroy(wo);
	leveldb_readoptions_destroy(rdo);
	leveldb_close(db);

	ro.read_only = 1;
	ok(kt_open(&s, f->path, &ro));
	assert_clean(s);
	kt_assert_rejected(s, kt_id_path(&p, NULL, s, 1), KT_EVERSION,
			   "format version 1");
	kt_close(s);

	kt_test_reopen(f);
	assert_clean(f->store);
	assert_id_path(f->store, "/");
	assert_id_path(f->store, "/d/item");
	assert_id_path(f->store, "/d/sub/leaf");
	assert_id_path(f->store, "/ln");
	{
		char *after = kt_test_digest(f->store);
		assert_string_equal(before, after);
		free(after);
	}
	free(before);
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(le32(v + 8), PLAIN_FORMAT);
	leveldb_free(v);
	raw_end(f, db);
}

static void test_format__node_without_index_row(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	uint64_t id;
	kt_statbuf sb;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	id = id_of(f->store, "/d/item");
	db = raw_begin(f);
	k = index_key("/d/item");
	ldb_del(db, &k);
	k = index_key("/d/sub"); /* a directory, so /d's count is off too */
	ldb_del(db, &k);
	raw_end(f, db);

	assert_false(listed(f->store, "/d", "item"));
	assert_check_finds(f->store, "'/d/item'", "no index row", "unreachable",
			   NULL);
	assert_check_finds(f->store, "'/d/sub'", "no index row", NULL);
	nfix = repair_and_check(f->store);

	/* Linked back in, with value, attributes and id. */
	assert_true(listed(f->store, "/d", "item"));
	assert_true(listed(f->store, "/d", "sub"));
	assert_value(f->store, "/d/item", "hello");
	assert_int_equal(id_of(f->store, "/d/item"), id);
	ok(kt_stat(&sb, f->store, "/d"));
	assert_int_equal(sb.nsubdirs, 1);
	ok(kt_stat(&sb, f->store, "/d/item"));
	assert_int_equal(sb.nattrs, 1);
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void test_format__node_without_parent(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	kt_statbuf sb;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	db = raw_begin(f);
	k = node_key("/p");
	ldb_del(db, &k);
	raw_end(f, db);

	assert_check_finds(f->store, "'/p/c'", "parent has no node row", NULL);
	assert_check_finds(f->store, "'/'", "'p'", "points at no node", NULL);
	nfix = repair_and_check(f->store);

	/* /p/c cannot be placed anywhere: it goes, with its attributes
	 * (kt_check above would count them as orphans otherwise). */
	assert_int_equal(kt_stat(&sb, f->store, "/p"), KT_ENOTFOUND);
	assert_int_equal(kt_stat(&sb, f->store, "/p/c"), KT_ENOTFOUND);
	assert_false(listed(f->store, "/", "p"));
	ok(kt_stat(&sb, f->store, "/"));
	assert_int_equal(sb.nsubdirs, 1); /* /d */
	assert_value(f->store, "/d/item", "hello");
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void test_format__index_kind_disagrees(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	kt_statbuf sb;
	unsigned char *v;
	leveldb_t *db;
	size_t vl;
	rkey k;

	populate(f->store);
	db = raw_begin(f);
	k = index_key("/d/item");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(v[0], KT_KIND_ITEM);
	v[0] = KT_KIND_DIR;
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	raw_end(f, db);

	assert_check_finds(f->store, "'/d/item'", "index row says kind 2",
			   "node row kind 1", NULL);
	nfix = repair_and_check(f->store);
	ok(kt_stat(&sb, f->store, "/d/item"));
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	ok(kt_stat(&sb, f->store, "/d"));
	assert_int_equal(sb.nsubdirs, 1);
	assert_value(f->store, "/d/item", "hello");
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* A directory's entry count (format byte 3, u32 after the header) that
 * disagrees with its listing: kt_check names it, kt_repair recounts. */
static void test_format__entry_count_wrong(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix, vl;
	unsigned char *v;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	db = raw_begin(f);
	k = node_key("/d");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 78);
	assert_int_equal(v[0], 3);
	assert_int_equal(le32(v + 74), 2); /* item, sub */
	put_le32(v + 74, 7);
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	raw_end(f, db);

	assert_check_finds(f->store, "'/d'", "entry count is 7",
			   "has 2 children", NULL);
	nfix = repair_and_check(f->store);
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_int_equal(le32(v + 74), 2);
	leveldb_free(v);
	raw_end(f, db);
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* An entry count on a node that is no directory does not decode. */
static void test_format__entry_count_on_an_item(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t vl;
	unsigned char *v, *w;
	void *got = NULL;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	db = raw_begin(f);
	k = node_key("/d/item");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(v[0], 1);
	w = malloc(vl + 4);
	assert_non_null(w);
	memcpy(w, v, 74);
	w[0] = 3;
	put_le32(w + 74, 0);
	memcpy(w + 78, v + 74, vl - 74);
	ldb_put(db, &k, w, vl + 4);
	leveldb_free(v);
	free(w);
	raw_end(f, db);

	assert_int_equal(kt_get(&got, &vl, f->store, "/d/item"), KT_ECORRUPT);
	assert_non_null(strstr(kt_errmsg(), "entry count"));
	assert_check_finds(f->store, "'/d/item'", NULL);
	repair_and_check(f->store);
	assert_survivors(f->store);
}

/* A directory whose row does not carry its count (a RADOS tree made
 * before counts, docs/FORMAT.md §4) is valid; under a limit it is counted
 * at the first entry added to it, and carries its count from then on. */
static void test_format__directory_counted_at_first_entry(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t vl;
	unsigned char *v;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	put_str(f->store, "/d/third", "3");
	db = raw_begin(f);
	k = node_key("/d");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 78);
	v[0] = 1;
	ldb_put(db, &k, v, 74);
	leveldb_free(v);
	raw_end(f, db);
	assert_clean(f->store);

	/* No limit: nothing counts it; a removal leaves it uncounted. */
	ok(kt_delete(f->store, "/d/third", 0));
	put_str(f->store, "/d/third", "3");
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_int_equal(vl, 74);
	leveldb_free(v);
	raw_end(f, db);

	/* Under a limit of 3 it is counted: 3 there already. */
	setenv("KEYTREE_DIR_MAX", "3", 1);
	kt_test_reopen(f);
	assert_int_equal(kt_put(f->store, "/d/fourth", "4", 1, NULL), KT_EDIRFULL);
	assert_non_null(strstr(kt_errmsg(), "already holds 3 entries"));
	ok(kt_delete(f->store, "/d/third", 0));
	put_str(f->store, "/d/fourth", "4");
	assert_int_equal(kt_put(f->store, "/d/fifth", "5", 1, NULL), KT_EDIRFULL);
	unsetenv("KEYTREE_DIR_MAX");
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_int_equal(vl, 78);
	assert_int_equal(v[0], 3);
	assert_int_equal(le32(v + 74), 3);
	leveldb_free(v);
	raw_end(f, db);
	assert_clean(f->store);
	assert_survivors(f->store);
}

static void test_format__index_row_does_not_decode(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	db = raw_begin(f);
	k = index_key("/d/item");
	ldb_put(db, &k, "\x01\x02\x03", 3); /* 3 bytes, not 9 */
	raw_end(f, db);

	assert_check_finds(f->store, "'/d/item'", "index row does not decode",
			   NULL);
	assert_check_finds(f->store, "'/d' -> 'item'", "does not decode", NULL);
	nfix = repair_and_check(f->store);
	assert_true(listed(f->store, "/d", "item"));
	assert_value(f->store, "/d/item", "hello");
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void test_format__nsubdirs_wrong(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	kt_statbuf sb;
	leveldb_t *db;

	populate(f->store);
	db = raw_begin(f);
	node_patch32(db, "/d", 62, 7);
	raw_end(f, db);

	ok(kt_stat(&sb, f->store, "/d"));
	assert_int_equal(sb.nsubdirs, 7);
	assert_check_finds(f->store, "'/d'", "nsubdirs is 7", NULL);
	nfix = repair_and_check(f->store);
	ok(kt_stat(&sb, f->store, "/d"));
	assert_int_equal(sb.nsubdirs, 1);
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void test_format__nattrs_wrong(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	kt_statbuf sb;
	void *v = NULL;
	size_t len;
	leveldb_t *db;

	populate(f->store);
	db = raw_begin(f);
	node_patch32(db, "/d/item", 66, 5);
	raw_end(f, db);

	assert_check_finds(f->store, "'/d/item'", "nattrs is 5",
			   "1 attribute rows", NULL);
	nfix = repair_and_check(f->store);
	ok(kt_stat(&sb, f->store, "/d/item"));
	assert_int_equal(sb.nattrs, 1);
	ok(kt_attr_get(&v, &len, f->store, "/d/item", "colour"));
	assert_int_equal(len, 4);
	assert_memory_equal(v, "blue", 4);
	kt_free(v);
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void test_format__block_past_end(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	k = block_key(id_of(f->store, "/big"), 5);
	db = raw_begin(f);
	ldb_put(db, &k, "stale", 5);
	raw_end(f, db);

	assert_check_finds(f->store, "'/big'", "block 5",
			   "past the end of the 40000-byte value", NULL);
	nfix = repair_and_check(f->store);
	db = raw_begin(f);
	assert_null(ldb_get(db, &k, &(size_t){0}));
	raw_end(f, db);
	/* Growing the value now shows zeros, not the stale block. */
	ok(kt_truncate(f->store, "/big", 6 * 16384));
	{
		unsigned char buf[5] = {1, 1, 1, 1, 1};
		size_t got = 0;
		ok(kt_read(&got, f->store, "/big", buf, 5, 5 * 16384));
		assert_int_equal(got, 5);
		assert_memory_equal(buf, "\0\0\0\0\0", 5);
	}
	ok(kt_truncate(f->store, "/big", BIG_LEN));
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* @p n bytes without a zero block (no holes): malloc'd. */
static unsigned char *dense_value(size_t n)
{
	unsigned char *v = malloc(n);
	size_t i;

	assert_non_null(v);
	for (i = 0; i < n; i++)
		v[i] = (unsigned char)(1 + (i * 7919 + i / 251) % 255);
	return v;
}

/* Block checksums (format 5 flag 0x02): a block row whose bytes were
 * damaged reads as KT_ECORRUPT naming the block, through the scan of a
 * whole value (which skips LevelDB's own checks) and through a read of
 * one block alike, and kt_check reports it. */
static void test_format__block_checksum_damage(void **state)
{
	kt_test_fixture *f = fix(state);
	unsigned char *big = dense_value(3 * 16384), *v, *saved, buf[100];
	uint64_t id;
	size_t vl, got = 0, len = 0;
	char *whole = NULL, want[64];
	leveldb_t *db;
	rkey k;

	ok(kt_put(f->store, "/dense", big, 3 * 16384, NULL));
	id = id_of(f->store, "/dense");
	snprintf(want, sizeof(want), "block 1 of node %llu is damaged",
		 (unsigned long long)id);
	k = block_key(id, 1);
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 16384 + 4);
	saved = malloc(vl);
	memcpy(saved, v, vl);
	v[5000] ^= 0x40; /* one bit of the bytes, the checksum left alone */
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	raw_end(f, db);

	fails_naming(kt_get((void **)&whole, &len, f->store, "/dense"),
		     KT_ECORRUPT, want);
	assert_null(whole);
	fails_naming(kt_read(&got, f->store, "/dense", buf, sizeof(buf),
			     16384 + 4990),
		     KT_ECORRUPT, want);
	/* Blocks 0 and 2 still read. */
	ok(kt_read(&got, f->store, "/dense", buf, sizeof(buf), 100));
	assert_int_equal(got, sizeof(buf));
	assert_memory_equal(buf, big + 100, sizeof(buf));
	assert_check_finds(f->store, want, "checksum does not match", NULL);

	/* The damaged checksum instead of the bytes: the same. */
	db = raw_begin(f);
	saved[16384 + 1] ^= 0x01;
	ldb_put(db, &k, saved, 16384 + 4);
	raw_end(f, db);
	fails_naming(kt_get((void **)&whole, &len, f->store, "/dense"),
		     KT_ECORRUPT, want);
	saved[16384 + 1] ^= 0x01;

	/* Too short to hold a checksum at all. */
	db = raw_begin(f);
	ldb_put(db, &k, "ab", 2);
	raw_end(f, db);
	fails_naming(kt_get((void **)&whole, &len, f->store, "/dense"),
		     KT_ECORRUPT, "too short for its checksum");

	/* Put the row back: the value reads whole again. */
	db = raw_begin(f);
	ldb_put(db, &k, saved, 16384 + 4);
	raw_end(f, db);
	ok(kt_get((void **)&whole, &len, f->store, "/dense"));
	assert_int_equal(len, 3 * 16384);
	assert_memory_equal(whole, big, len);
	kt_free(whole);
	free(saved);
	free(big);
}

/* The checksum covers the block's number: a whole, valid row of block 0
 * copied under block 2's key does not read as block 2. */
static void test_format__block_row_under_another_key(void **state)
{
	kt_test_fixture *f = fix(state);
	unsigned char *big = dense_value(3 * 16384), *v0, *v2;
	uint64_t id;
	size_t l0, l2, len = 0;
	char *whole = NULL, want[64];
	leveldb_t *db;
	rkey k0, k2;

	ok(kt_put(f->store, "/dense", big, 3 * 16384, NULL));
	id = id_of(f->store, "/dense");
	k0 = block_key(id, 0);
	k2 = block_key(id, 2);
	db = raw_begin(f);
	v0 = ldb_get(db, &k0, &l0);
	v2 = ldb_get(db, &k2, &l2);
	assert_non_null(v0);
	assert_non_null(v2);
	ldb_put(db, &k2, v0, l0);
	raw_end(f, db);
	snprintf(want, sizeof(want), "block 2 of node %llu is damaged",
		 (unsigned long long)id);
	fails_naming(kt_get((void **)&whole, &len, f->store, "/dense"),
		     KT_ECORRUPT, want);
	db = raw_begin(f);
	ldb_put(db, &k2, v2, l2);
	raw_end(f, db);
	leveldb_free(v0);
	leveldb_free(v2);
	assert_clean(f->store);
	free(big);
}

/* A read of a dense value skips LevelDB's checks only while every block
 * it needs is there; with one missing (here deleted, so nblocks is
 * wrong) it reads again with them, and the hole reads as zeros: for the
 * scan of a whole value and for the read of one block alike. */
static void test_format__dense_value_missing_block(void **state)
{
	kt_test_fixture *f = fix(state);
	unsigned char *want = dense_value(4 * 16384);
	size_t len = 0;
	char *whole = NULL;
	leveldb_t *db;
	rkey k;

	ok(kt_put(f->store, "/dense", want, 4 * 16384, NULL));
	/* The last block missing, then one in the middle. */
	k = block_key(id_of(f->store, "/dense"), 3);
	db = raw_begin(f);
	ldb_del(db, &k);
	raw_end(f, db);
	memset(want + 3 * 16384, 0, 16384);
	ok(kt_get((void **)&whole, &len, f->store, "/dense"));
	assert_int_equal(len, 4 * 16384);
	assert_memory_equal(whole, want, len);
	kt_free(whole);
	k = block_key(id_of(f->store, "/dense"), 1);
	db = raw_begin(f);
	ldb_del(db, &k);
	raw_end(f, db);
	memset(want + 16384, 0, 16384);
	ok(kt_get((void **)&whole, &len, f->store, "/dense"));
	assert_memory_equal(whole, want, len);
	kt_free(whole);
	/* A read within one block asks for that row alone, the same way. */
	{
		unsigned char buf[100];
		size_t got = 0;
		ok(kt_read(&got, f->store, "/dense", buf, sizeof(buf),
			   16384 + 50));
		assert_int_equal(got, sizeof(buf));
		assert_memory_equal(buf, want + 16384 + 50, sizeof(buf));
		ok(kt_read(&got, f->store, "/dense", buf, sizeof(buf),
			   2 * 16384 + 50));
		assert_memory_equal(buf, want + 2 * 16384 + 50, sizeof(buf));
	}
	assert_check_finds(f->store, "'/dense'", "nblocks", NULL);
	(void)repair_and_check(f->store);
	free(want);
}

/* A store made before block checksums (format 4, no flags byte) keeps
 * its blocks as plain bytes, reads them, and writes new ones the same
 * way: the format of a store does not change under it. */
static void test_format__store_without_block_checksums(void **state)
{
	kt_test_fixture *f = fix(state);
	unsigned char *big = big_value(), *v;
	size_t vl, len = 0;
	char *whole = NULL;
	leveldb_t *db;
	rkey k = meta_key("header");
	uint64_t id;

	ok(kt_put(f->store, "/big", big, BIG_LEN, NULL));
	id = id_of(f->store, "/big");
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_int_equal(le32(v + 8), PLAIN_FORMAT);
	assert_int_equal(vl, sizeof("keytree") + 12 + 1 + DLEN);
	leveldb_free(v);
	k = block_key(id, 0);
	v = ldb_get(db, &k, &vl);
	assert_int_equal(vl, 16384);
	assert_memory_equal(v, big, vl);
	leveldb_free(v);
	raw_end(f, db);
	ok(kt_get((void **)&whole, &len, f->store, "/big"));
	assert_int_equal(len, BIG_LEN);
	assert_memory_equal(whole, big, len);
	kt_free(whole);
	free(big);
	assert_clean(f->store);
}

/* How many mappings of this process are of files in @p dir. */
static int mapped_files_in(const char *dir)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[4096];
	int n = 0;

	assert_non_null(m);
	while (fgets(line, sizeof(line), m) != NULL)
		if (strstr(line, dir) != NULL && strstr(line, ".ldb") != NULL)
			n++;
	fclose(m);
	return n;
}

/* Table files are read with pread, not mapped (ldb_env.cc), so what a
 * process reads of them stays out of its resident set; with
 * KEYTREE_MMAP_TABLES=1 LevelDB maps them, as the check that this test
 * can see a mapping at all. */
static void test_format__tables_read_not_mapped(void **state)
{
	kt_test_fixture *f = fix(state);
	unsigned char *v = dense_value(200000);
	size_t len = 0;
	char *whole = NULL;
	int mmapped;

	for (mmapped = 0; mmapped < 2; mmapped++) {
		ok(kt_put(f->store, "/v", v, 200000, NULL));
		/* Reopening turns the log into a table file. */
		if (mmapped)
			setenv("KEYTREE_MMAP_TABLES", "1", 1);
		kt_test_reopen(f);
		ok(kt_get((void **)&whole, &len, f->store, "/v"));
		assert_int_equal(len, 200000);
		assert_memory_equal(whole, v, len);
		kt_free(whole);
		whole = NULL;
		if (mmapped)
			assert_true(mapped_files_in(f->path) > 0);
		else
			assert_int_equal(mapped_files_in(f->path), 0);
		unsetenv("KEYTREE_MMAP_TABLES");
	}
	kt_test_reopen(f);
	free(v);
}

static void test_format__block_of_inline_value(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	k = block_key(id_of(f->store, "/d/item"), 0);
	db = raw_begin(f);
	ldb_put(db, &k, "XXXXXXXXXXXX", 12);
	raw_end(f, db);

	assert_check_finds(f->store, "'/d/item'", "1 block rows", "inline",
			   NULL);
	nfix = repair_and_check(f->store);
	assert_value(f->store, "/d/item", "hello");
	/* Growing it past the inline limit must not pick the block up. */
	ok(kt_truncate(f->store, "/d/item", 5000));
	{
		unsigned char buf[8];
		size_t got = 0;
		ok(kt_read(&got, f->store, "/d/item", buf, 8, 0));
		assert_int_equal(got, 8);
		assert_memory_equal(buf, "hello\0\0\0", 8);
	}
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void test_format__attr_of_missing_node(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	const uint64_t ghost = 0xfffff; /* 1048575: far above any id used */
	kt_statbuf sb;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	db = raw_begin(f);
	k = attr_key(ghost, "orphan");
	ldb_put(db, &k, "x", 1);
	k = block_key(ghost, 3);
	ldb_put(db, &k, "y", 1);
	raw_end(f, db);

	assert_check_finds(f->store, "attribute rows", "1048575",
			   "does not exist", NULL);
	assert_check_finds(f->store, "block rows", "1048575", NULL);
	nfix = repair_and_check(f->store);
	db = raw_begin(f);
	k = attr_key(ghost, "orphan");
	assert_null(ldb_get(db, &k, &(size_t){0}));
	raw_end(f, db);
	ok(kt_stat(&sb, f->store, "/d/item"));
	assert_int_equal(sb.nattrs, 1);
	assert_survivors(f->store);
	assert_reported(nfix);
}

static void test_format__node_row_does_not_decode(void **state)
{
	kt_test_fixture *f = fix(state);
	size_t nfix;
	kt_statbuf sb;
	unsigned char *v;
	leveldb_t *db;
	size_t vl;
	rkey k;

	populate(f->store);
	db = raw_begin(f);
	k = node_key("/d/item");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	ldb_put(db, &k, v, 30); /* cut inside the fixed fields */
	leveldb_free(v);
	raw_end(f, db);

	/* Readers report it, naming the node. */
	fails_naming(kt_stat(&sb, f->store, "/d/item"), KT_ECORRUPT, "/d/item");
	assert_check_finds(f->store, "'/d/item'", "does not decode", NULL);
	nfix = repair_and_check(f->store);

	/* Nothing of it can be trusted: node, index row and attributes
	 * go; everything else stays. */
	assert_int_equal(kt_stat(&sb, f->store, "/d/item"), KT_ENOTFOUND);
	assert_false(listed(f->store, "/d", "item"));
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* ------------------------------------------------------------------------ */
/* Special files (format 3). */

/* A FIFO and a device: node rows of kind 8 with a 9-byte payload (type,
 * u64 rdev) and size 0; index rows of 10 bytes (kind, id, type). */
static void test_format__special_rows_as_documented(void **state)
{
	kt_test_fixture *f = fix(state);
	uint64_t fifo, dev, rdev = ((uint64_t)0x12345 << 32) | 0xabcdef01u;
	unsigned char *v;
	leveldb_t *db;
	rkey k;
	size_t vl;

	ok(kt_mknod(f->store, "/s/fifo", KT_TYPE_FIFO, 0, NULL));
	ok(kt_mknod(f->store, "/s/dev", KT_TYPE_BLK, rdev, NULL));
	fifo = id_of(f->store, "/s/fifo");
	dev = id_of(f->store, "/s/dev");
	db = raw_begin(f);

	k = node_key("/s/fifo");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 74 + 9);
	assert_int_equal(v[0], 1);
	assert_int_equal(v[1], KT_KIND_SPECIAL);
	assert_int_equal(v[1], 8);
	assert_int_equal(le64(v + 2), fifo);
	assert_int_equal(le32(v + 10), 0644);
	assert_int_equal(le64(v + 22), 0); /* size */
	assert_int_equal(le32(v + 62), 0);
	assert_int_equal(le32(v + 70), 0);
	assert_memory_equal(v + 74, "\x01\0\0\0\0\0\0\0\0", 9);
	leveldb_free(v);

	k = node_key("/s/dev");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 74 + 9);
	assert_int_equal(v[1], KT_KIND_SPECIAL);
	assert_memory_equal(v + 74, "\x06\x01\xef\xcd\xab\x45\x23\x01\x00", 9);
	assert_int_equal(v[74], KT_TYPE_BLK);
	assert_int_equal(le64(v + 75), rdev);
	leveldb_free(v);

	k = index_key("/s/fifo");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 10);
	assert_int_equal(v[0], KT_KIND_SPECIAL);
	assert_int_equal(le64(v + 1), fifo);
	assert_int_equal(v[9], KT_TYPE_FIFO);
	leveldb_free(v);
	k = index_key("/s/dev");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 10);
	assert_int_equal(le64(v + 1), dev);
	assert_int_equal(v[9], KT_TYPE_BLK);
	assert_int_equal(v[9], 6);
	leveldb_free(v);

	/* The id row, as for every node. */
	k = id_key(dev);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 2 * DLEN + 1 + 3);
	assert_memory_equal(v, "\xc2\xa6" "s\xc2\xa6" "dev", vl);
	leveldb_free(v);
	raw_end(f, db);
}

/* Format 3 only added the special kind: a format 2 store opens read-only
 * as it is, and a writable open rewrites its header, and nothing else. */
static void test_format__format_2_upgraded(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_options ro = KT_OPTIONS_INIT;
	kt_store *s = NULL;
	rkey k = meta_key("header");
	unsigned char *v;
	char *before, *raw_before, *raw_after, *p;
	leveldb_t *db;
	size_t vl;

	populate(f->store);
	before = kt_test_digest(f->store);
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(le32(v + 8), PLAIN_FORMAT);
	put_le32(v + 8, 2);
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	raw_before = ldb_dump(db);
	leveldb_close(db);

	ro.read_only = 1;
	ok(kt_open(&s, f->path, &ro));
	assert_clean(s);
	p = kt_test_digest(s);
	assert_string_equal(before, p);
	free(p);
	fails_naming(kt_mknod(s, "/x", KT_TYPE_FIFO, 0, NULL), KT_EREADONLY,
		     "read-only");
	kt_close(s);
	db = ldb_open(f->path, 0);
	raw_after = ldb_dump(db);
	leveldb_close(db);
	assert_string_equal(raw_before, raw_after); /* still format 2 */
	free(raw_after);

	kt_test_reopen(f);
	assert_clean(f->store);
	p = kt_test_digest(f->store);
	assert_string_equal(before, p);
	free(p);
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(le32(v + 8), PLAIN_FORMAT);
	/* With the old number put back, every row is as it was; the next
	 * writable open upgrades it again. */
	put_le32(v + 8, 2);
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	raw_after = ldb_dump(db);
	assert_string_equal(raw_before, raw_after);
	raw_end(f, db);
	ok(kt_mknod(f->store, "/fifo", KT_TYPE_FIFO, 0, NULL));
	assert_clean(f->store);
	free(before);
	free(raw_before);
	free(raw_after);
}

/* Rewrite the payload of the special file at @p path. */
static void special_patch(leveldb_t *db, const char *path,
			  const unsigned char payload[9])
{
	rkey k = node_key(path);
	size_t vl = 0;
	unsigned char *row = ldb_get(db, &k, &vl);

	assert_non_null(row);
	assert_int_equal(vl, 74 + 9);
	memcpy(row + 74, payload, 9);
	ldb_put(db, &k, row, vl);
	leveldb_free(row);
}

/* A special file whose payload is not one the library writes (an
 * unknown type, a FIFO with a device number, a wrong length): readers
 * say the row is damaged, kt_check names it, kt_repair removes it. */
static void test_format__special_payload_damaged(void **state)
{
	kt_test_fixture *f = fix(state);
	static const unsigned char bad_type[9] = {5, 0, 0, 0, 0, 0, 0, 0, 0};
	static const unsigned char fifo_dev[9] = {1, 3, 1, 0, 0, 0, 0, 0, 0};
	kt_statbuf sb;
	unsigned char *v;
	leveldb_t *db;
	size_t nfix, vl;
	rkey k;

	populate(f->store);
	ok(kt_mknod(f->store, "/d/bad", KT_TYPE_FIFO, 0, NULL));
	ok(kt_mknod(f->store, "/d/fifo", KT_TYPE_FIFO, 0, NULL));
	ok(kt_mknod(f->store, "/d/short", KT_TYPE_SOCK, 0, NULL));
	ok(kt_mknod(f->store, "/d/good", KT_TYPE_CHR, 0x0103, NULL));
	db = raw_begin(f);
	special_patch(db, "/d/bad", bad_type);
	special_patch(db, "/d/fifo", fifo_dev);
	k = node_key("/d/short");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	ldb_put(db, &k, v, 74 + 1); /* the type without its device number */
	leveldb_free(v);
	raw_end(f, db);

	fails_naming(kt_lstat(&sb, f->store, "/d/bad"), KT_ECORRUPT,
		     "unknown type 5");
	fails_naming(kt_lstat(&sb, f->store, "/d/bad"), KT_ECORRUPT, "/d/bad");
	fails_naming(kt_lstat(&sb, f->store, "/d/fifo"), KT_ECORRUPT,
		     "FIFO row carries a device number");
	fails_naming(kt_lstat(&sb, f->store, "/d/short"), KT_ECORRUPT,
		     "payload of 1 bytes");
	assert_check_finds(f->store, "'/d/bad'", "does not decode",
			   "unknown type 5", NULL);
	assert_check_finds(f->store, "'/d/fifo'", "does not decode", NULL);
	assert_check_finds(f->store, "'/d/short'", "does not decode", NULL);
	nfix = repair_and_check(f->store);
	assert_int_equal(kt_lstat(&sb, f->store, "/d/bad"), KT_ENOTFOUND);
	assert_int_equal(kt_lstat(&sb, f->store, "/d/fifo"), KT_ENOTFOUND);
	assert_int_equal(kt_lstat(&sb, f->store, "/d/short"), KT_ENOTFOUND);
	assert_false(listed(f->store, "/d", "bad"));
	ok(kt_lstat(&sb, f->store, "/d/good"));
	assert_int_equal(sb.type, KT_TYPE_CHR);
	assert_int_equal(sb.rdev, 0x0103);
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* The type in the index row must be the node's: kt_check names both,
 * kt_repair rewrites the index row, and listings then tell the truth. */
static void test_format__index_type_disagrees(void **state)
{
	kt_test_fixture *f = fix(state);
	unsigned char *v;
	leveldb_t *db;
	size_t nfix, vl;
	rkey k;

	populate(f->store);
	ok(kt_mknod(f->store, "/d/pipe", KT_TYPE_FIFO, 0, NULL));
	ok(kt_mknod(f->store, "/d/cut", KT_TYPE_SOCK, 0, NULL));
	db = raw_begin(f);
	k = index_key("/d/pipe");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 10);
	v[9] = KT_TYPE_SOCK;
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	k = index_key("/d/cut"); /* 9 bytes: the type is missing */
	v = ldb_get(db, &k, &vl);
	ldb_put(db, &k, v, 9);
	leveldb_free(v);
	raw_end(f, db);

	assert_check_finds(f->store, "'/d/pipe'", "type 12", "type 1", NULL);
	assert_check_finds(f->store, "'/d' -> 'pipe'", "type 12", NULL);
	assert_check_finds(f->store, "'/d/cut'", "index row does not decode",
			   NULL);
	nfix = repair_and_check(f->store);
	{
		kt_iter *it = NULL;
		const kt_entry *e;
		int rc, n = 0;

		ok(kt_iter_new(&it, f->store, "/d", NULL));
		while ((rc = kt_iter_next(&e, it)) == 0) {
			if (strcmp(e->name, "pipe") == 0) {
				assert_int_equal(e->type, KT_TYPE_FIFO);
				n++;
			} else if (strcmp(e->name, "cut") == 0) {
				assert_int_equal(e->type, KT_TYPE_SOCK);
				n++;
			}
		}
		assert_int_equal(rc, KT_ITEROVER);
		kt_iter_free(it);
		assert_int_equal(n, 2);
	}
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* A special file has no children and no value: rows that say otherwise
 * are found and removed, and the special file itself stays. */
static void test_format__special_with_children_or_blocks(void **state)
{
	kt_test_fixture *f = fix(state);
	static const unsigned char fifo[9] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
	unsigned char *v;
	kt_statbuf sb;
	leveldb_t *db;
	size_t nfix, vl;
	uint64_t sid, did;
	rkey k;

	populate(f->store);
	/* /s starts as a directory with a child, then its rows are made
	 * those of a FIFO: the child is left below a special file. */
	put_str(f->store, "/s/child", "orphaned");
	ok(kt_mknod(f->store, "/dev", KT_TYPE_CHR, 0x0501, NULL));
	sid = id_of(f->store, "/s");
	did = id_of(f->store, "/dev");
	db = raw_begin(f);
	k = node_key("/s");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 78); /* a directory's row, counted */
	v = realloc(v, 74 + 9);
	assert_non_null(v);
	v[0] = 1; /* the plain header of a special file */
	v[1] = KT_KIND_SPECIAL;
	put_le32(v + 62, 0); /* nsubdirs */
	memcpy(v + 74, fifo, 9);
	ldb_put(db, &k, v, 74 + 9);
	free(v);
	k = index_key("/s");
	v = ldb_get(db, &k, &vl);
	v = realloc(v, 10);
	assert_non_null(v);
	v[0] = KT_KIND_SPECIAL;
	v[9] = KT_TYPE_FIFO;
	ldb_put(db, &k, v, 10);
	free(v);
	node_patch32(db, "/", 62, 1); /* /d only is a directory now */
	k = block_key(did, 0);
	ldb_put(db, &k, "stray", 5);
	raw_end(f, db);

	assert_check_finds(f->store, "'/s'", "not a directory but has 1 "
			   "children", NULL);
	assert_check_finds(f->store, "'/s/child'", "parent is not a directory",
			   NULL);
	assert_check_finds(f->store, "'/dev'", "1 block rows",
			   "inline or absent", NULL);
	nfix = repair_and_check(f->store);
	ok(kt_lstat(&sb, f->store, "/s"));
	assert_int_equal(sb.kind, KT_KIND_SPECIAL);
	assert_int_equal(sb.id, sid);
	assert_int_equal(kt_lstat(&sb, f->store, "/s/child"), KT_ENOTDIR);
	ok(kt_lstat(&sb, f->store, "/dev"));
	assert_int_equal(sb.type, KT_TYPE_CHR);
	assert_int_equal(sb.rdev, 0x0501);
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* ------------------------------------------------------------------------ */
/* A healthy store. */

static void test_format__healthy_store_untouched_by_repair(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_store *s = f->store;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	unsigned char *big = big_value();
	kt_batch *b = NULL;
	calls c = {0, {0}, 0};
	kt_check_options ro = KT_CHECK_OPTIONS_INIT;
	char path[64], *before, *after, *raw_before, *raw_after;
	leveldb_t *db;
	size_t n = 99;
	int i;

	populate(s);
	co.flags = KT_CREATE_PARENTS;
	for (i = 0; i < 60; i++) {
		snprintf(path, sizeof(path), "/many/d%d/item%d", i % 7, i);
		put_str(s, path, path);
		if (i % 5 == 0)
			ok(kt_attr_set(s, path, "n", path, strlen(path), 0));
		if (i % 9 == 0)
			ok(kt_write(s, path, big, 20000, (uint64_t)i * 100));
	}
	ok(kt_mkdir(s, "/empty/dir", &co));
	ok(kt_symlink(s, "/links/dangling", "/nowhere", &co));
	ok(kt_put(s, "/sparse", big, BIG_LEN, NULL));
	ok(kt_truncate(s, "/sparse", 1u << 20));
	ok(kt_write(s, "/sparse", "end", 3, (1u << 20) - 3));
	ok(kt_truncate(s, "/sparse", 20000));
	ok(kt_truncate(s, "/sparse", 100));
	ok(kt_truncate(s, "/sparse", 30000));
	ok(kt_rename(s, "/many/d3", "/moved", 0));
	ok(kt_delete(s, "/many/d4", KT_DELETE_RECURSIVE));
	ok(kt_delete(s, "/many/d5/item5", KT_DELETE_PRUNE));
	ok(kt_put(s, "/d", "d is an item too", 16, NULL));
	ok(kt_delete(s, "/d", KT_DELETE_ITEM));
	ok(kt_attr_delete(s, "/d/item", "colour"));
	ok(kt_mknod(s, "/dev/null", KT_TYPE_CHR, 0x0103, NULL));
	ok(kt_mknod(s, "/dev/fifo", KT_TYPE_FIFO, 0, NULL));
	ok(kt_attr_set(s, "/dev/fifo", "k", "v", 1, 0));
	ok(kt_rename(s, "/dev/fifo", "/moved/fifo", 0));
	ok(kt_batch_new(&b, s));
	ok(kt_batch_put(b, "/batch/a", "1", 1, NULL));
	ok(kt_batch_rename(b, "/batch/a", "/batch/b", 0));
	ok(kt_batch_attr_set(b, "/batch/b", "x", "y", 1, 0));
	ok(kt_batch_delete(b, "/keep", 0));
	ok(kt_batch_put(b, "/keep", "kept", 4, NULL));
	ok(kt_batch_mknod(b, "/batch/sock", KT_TYPE_SOCK, 0, NULL));
	ok(kt_batch_commit(b));
	kt_batch_free(b);

	assert_clean(s);
	before = kt_test_digest(s);
	db = raw_begin(f);
	raw_before = ldb_dump(db);
	raw_end(f, db);
	s = f->store;

	ro.on_violation = record_cb;
	ro.payload = &c;
	ok(kt_repair(&n, s, &ro));
	if (n != 0 || c.n != 0)
		fail_msg("kt_repair on a healthy store made %zu repairs:\n%s",
			 n, c.all);
	assert_clean(s);
	after = kt_test_digest(s);
	assert_string_equal(before, after);
	db = raw_begin(f);
	raw_after = ldb_dump(db);
	raw_end(f, db);
	assert_string_equal(raw_before, raw_after);
	assert_survivors(f->store);

	free(before);
	free(after);
	free(raw_before);
	free(raw_after);
	free(big);
}

/* A node over the depth limit, as a rename by an older library could
 * leave one: kt_check names it; kt_repair says it cannot fix it, and how
 * to remove it, and returns KT_ECORRUPT; a recursive delete of an ancestor
 * within the limits removes it. */
static void test_format__node_over_limits(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	char *deep = malloc(2 * KT_DEPTH_MAX + 16);
	calls c = {0, {0}, 0};
	kt_check_options ro = KT_CHECK_OPTIONS_INIT;
	unsigned char *nv, *iv;
	size_t i, nlen, ilen, n = 0;
	leveldb_t *db;
	rkey idv = {{0}, 0};
	rkey k;
	char comps[32];

	assert_non_null(deep);
	strcpy(deep, "/d");
	for (i = 1; i < KT_DEPTH_MAX; i++)
		strcat(deep, "/x"); /* depth KT_DEPTH_MAX */
	o.flags = KT_CREATE_PARENTS;
	ok(kt_mkdir(f->store, deep, &o));
	put_str(f->store, "/tmpitem", "v");
	assert_clean(f->store);
	/* Move /tmpitem to deep/y by hand: one component too deep. */
	db = raw_begin(f);
	k = node_key("/tmpitem");
	nv = ldb_get(db, &k, &nlen);
	k = index_key("/tmpitem");
	iv = ldb_get(db, &k, &ilen);
	assert_non_null(nv);
	assert_non_null(iv);
	k = node_key("/tmpitem");
	ldb_del(db, &k);
	k = index_key("/tmpitem");
	ldb_del(db, &k);
	strcat(deep, "/y");
	k = node_key(deep);
	ldb_put(db, &k, nv, nlen);
	k = index_key(deep);
	ldb_put(db, &k, iv, ilen);
	rkey_enc(&idv, deep);
	k = id_key(le64(nv + 2));
	ldb_put(db, &k, idv.p, idv.len);
	free(nv);
	free(iv);
	raw_end(f, db);

	snprintf(comps, sizeof(comps), "%d components", KT_DEPTH_MAX + 1);
	assert_check_finds(f->store, "over the limits", comps, NULL);
	ro.on_violation = record_cb;
	ro.payload = &c;
	assert_int_equal(kt_repair(&n, f->store, &ro), KT_ECORRUPT);
	assert_non_null(strstr(kt_errmsg(), "recursive delete"));
	assert_non_null(strstr(c.all, "cannot repair"));
	if (strstr(c.all, comps) == NULL)
		fail_msg("repair said: %s", c.all);
	assert_check_finds(f->store, "over the limits", NULL);
	ok(kt_delete(f->store, "/d", KT_DELETE_RECURSIVE));
	assert_clean(f->store);
	free(deep);
}

/* ------------------------------------------------------------------------ */
/* Nodes with several paths (format 4, docs/FORMAT.md "Aliases"). */

/* The key of the alias row of @p path, one of node @p id's paths:
 * "/alias/<16 hex>" 0x00 E(path). */
static rkey alias_key(uint64_t id, const char *path)
{
	rkey k = {{0}, 0};
	char part[40];

	snprintf(part, sizeof(part), "/alias/%016llx", (unsigned long long)id);
	rkey_add(&k, part, strlen(part) + 1);
	rkey_enc(&k, path);
	return k;
}

/* /a (value "v") with a second path /d/b. */
static uint64_t make_pair(kt_store *s)
{
	put_str(s, "/a", "v");
	ok(kt_link(s, "/a", "/d/b"));
	return id_of(s, "/a");
}

static void test_format__alias_rows_as_documented(void **state)
{
	kt_test_fixture *f = fix(state);
	rkey ka = node_key("/a"), kb = node_key("/d/b"), k;
	unsigned char *va, *vb, *v;
	size_t la, lb, vl;
	uint64_t id;
	leveldb_t *db;

	populate(f->store);
	id = make_pair(f->store);
	db = raw_begin(f);
	/* Each path has the same node row: layout 2, link count after the
	 * 74-byte header, then the inline value. */
	va = ldb_get(db, &ka, &la);
	vb = ldb_get(db, &kb, &lb);
	assert_non_null(va);
	assert_non_null(vb);
	assert_int_equal(la, 78 + 1);
	assert_int_equal(va[0], 2);
	assert_int_equal(va[1], KT_KIND_ITEM);
	assert_int_equal(le64(va + 2), id);
	assert_int_equal(le32(va + 74), 2);
	assert_int_equal(va[78], 'v');
	assert_int_equal(lb, la);
	assert_memory_equal(va, vb, la);
	leveldb_free(va);
	leveldb_free(vb);
	/* The index row of the new path is an ordinary one. */
	k = index_key("/d/b");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 9);
	assert_int_equal(v[0], KT_KIND_ITEM);
	assert_int_equal(le64(v + 1), id);
	leveldb_free(v);
	/* The id row names the first path, the alias row the second. */
	k = id_key(id);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, DLEN + 1);
	assert_memory_equal(v, D "a", vl);
	leveldb_free(v);
	k = alias_key(id, "/d/b");
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 0);
	leveldb_free(v);
	k = alias_key(id, "/a");
	assert_null(ldb_get(db, &k, &vl));
	raw_end(f, db);

	/* The first path goes: the second takes the id row, the alias row
	 * goes, and its node row is a plain one again. */
	ok(kt_delete(f->store, "/a", 0));
	db = raw_begin(f);
	assert_null(ldb_get(db, &ka, &la));
	vb = ldb_get(db, &kb, &lb);
	assert_non_null(vb);
	assert_int_equal(lb, 74 + 1);
	assert_int_equal(vb[0], 1);
	leveldb_free(vb);
	k = id_key(id);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 2 * DLEN + 2);
	assert_memory_equal(v, D "d" D "b", vl);
	leveldb_free(v);
	k = alias_key(id, "/d/b");
	assert_null(ldb_get(db, &k, &vl));
	raw_end(f, db);
	assert_clean(f->store);
}

/* The two copies of one node's row disagree (one lost a write). */
static void test_format__alias_copies_disagree(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_statbuf a, b;
	size_t nfix;
	leveldb_t *db;

	populate(f->store);
	make_pair(f->store);
	db = raw_begin(f);
	node_patch32(db, "/d/b", 10, 0600); /* the mode */
	raw_end(f, db);
	assert_check_finds(f->store, "'/a'", "'", "disagree", NULL);
	nfix = repair_and_check(f->store);
	ok(kt_lstat(&a, f->store, "/a"));
	ok(kt_lstat(&b, f->store, "/d/b"));
	assert_int_equal(a.nlink, 2);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_value(f->store, "/d/b", "v");
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* A path of a node with several is recorded nowhere. */
static void test_format__alias_row_missing(void **state)
{
	kt_test_fixture *f = fix(state);
	kt_statbuf sb;
	uint64_t id;
	size_t nfix;
	leveldb_t *db;
	rkey k;

	populate(f->store);
	id = make_pair(f->store);
	db = raw_begin(f);
	k = alias_key(id, "/d/b");
	ldb_del(db, &k);
	raw_end(f, db);
	assert_check_finds(f->store, "'/d/b'", "neither its id row nor an "
			   "alias row names it", NULL);
	assert_check_finds(f->store, "'/a'", "link count 2, but 1 paths",
			   NULL);
	nfix = repair_and_check(f->store);
	ok(kt_lstat(&sb, f->store, "/d/b"));
	assert_int_equal(sb.nlink, 2);
	/* A change through one path reaches the other again. */
	put_str(f->store, "/a", "new");
	assert_value(f->store, "/d/b", "new");
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* An alias row names a node of another id, and one names nothing. */
static void test_format__alias_row_to_nothing(void **state)
{
	kt_test_fixture *f = fix(state);
	uint64_t id;
	size_t nfix;
	leveldb_t *db;
	rkey k, k2;

	populate(f->store);
	id = make_pair(f->store);
	db = raw_begin(f);
	k = alias_key(id, "/keep");
	ldb_put(db, &k, "", 0);
	k2 = alias_key(4242, "/nothing");
	ldb_put(db, &k2, "", 0);
	raw_end(f, db);
	assert_check_finds(f->store, "alias row of id", "'" D "keep'",
			   "not a path of that node", NULL);
	assert_check_finds(f->store, "alias row of id 4242", NULL);
	nfix = repair_and_check(f->store);
	db = raw_begin(f);
	assert_null(ldb_get(db, &k, &nfix));
	assert_null(ldb_get(db, &k2, &nfix));
	raw_end(f, db);
	assert_int_equal(lstat_nlink(f->store, "/a"), 2);
	assert_survivors(f->store);
}

/* Both copies claim three paths where two are recorded. */
static void test_format__alias_link_count_wrong(void **state)
{
	kt_test_fixture *f = fix(state);
	rkey ka = node_key("/a"), kb = node_key("/d/b");
	unsigned char *v;
	size_t vl, nfix;
	leveldb_t *db;

	populate(f->store);
	make_pair(f->store);
	db = raw_begin(f);
	v = ldb_get(db, &ka, &vl);
	assert_non_null(v);
	put_le32(v + 74, 3);
	ldb_put(db, &ka, v, vl);
	ldb_put(db, &kb, v, vl);
	leveldb_free(v);
	raw_end(f, db);
	assert_check_finds(f->store, "'/a'", "link count 3, but 2 paths",
			   NULL);
	nfix = repair_and_check(f->store);
	assert_int_equal(lstat_nlink(f->store, "/a"), 2);
	assert_int_equal(lstat_nlink(f->store, "/d/b"), 2);
	assert_survivors(f->store);
	assert_reported(nfix);
}

/* A link count of 1 in the layout for several paths is not an encoding
 * (each node has one), nor is a directory with several. */
static void test_format__alias_layout_damaged(void **state)
{
	kt_test_fixture *f = fix(state);
	rkey ka = node_key("/a");
	unsigned char *v;
	size_t vl;
	leveldb_t *db;

	populate(f->store);
	make_pair(f->store);
	db = raw_begin(f);
	v = ldb_get(db, &ka, &vl);
	assert_non_null(v);
	put_le32(v + 74, 1);
	ldb_put(db, &ka, v, vl);
	leveldb_free(v);
	raw_end(f, db);
	assert_check_finds(f->store, "'/a'", "does not decode",
			   "link count 1", NULL);
	repair_and_check(f->store);
	/* The damaged copy went; the other path is the node now. */
	assert_int_equal(lstat_nlink(f->store, "/d/b"), 1);
	assert_value(f->store, "/d/b", "v");
	assert_survivors(f->store);
}

/* Format 4 only added nodes with several paths: a format 3 store's rows
 * are format 4 rows, and a writable open rewrites the header only. */
static void test_format__format_3_upgraded(void **state)
{
	kt_test_fixture *f = fix(state);
	rkey k = meta_key("header");
	unsigned char *v;
	char *before, *raw_before, *raw_after, *p;
	leveldb_t *db;
	size_t vl;

	populate(f->store);
	before = kt_test_digest(f->store);
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(le32(v + 8), 4);
	put_le32(v + 8, 3);
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	raw_before = ldb_dump(db);
	raw_end(f, db);  /* reopens writable: upgrades */
	assert_clean(f->store);
	p = kt_test_digest(f->store);
	assert_string_equal(before, p);
	free(p);
	db = raw_begin(f);
	v = ldb_get(db, &k, &vl);
	assert_non_null(v);
	assert_int_equal(le32(v + 8), 4);
	put_le32(v + 8, 3);
	ldb_put(db, &k, v, vl);
	leveldb_free(v);
	raw_after = ldb_dump(db);
	assert_string_equal(raw_before, raw_after);
	raw_end(f, db);
	ok(kt_link(f->store, "/keep", "/keep2"));
	assert_clean(f->store);
	free(before);
	free(raw_before);
	free(raw_after);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name)                                                                \
	cmocka_unit_test_setup_teardown(test_format__##name, kt_test_setup,    \
					kt_test_teardown)
#define T_OLD(name)                                                            \
	cmocka_unit_test_setup_teardown(test_format__##name, setup_old,        \
					kt_test_teardown)
		T(rows_as_documented),
		T(foreign_leveldb_is_not_a_store),
		T(empty_leveldb_is_not_a_store),
		T(newer_format_version),
		T(damaged_header),
		T(missing_counter_row),
		T(delimiter_mismatch),
		T(index_row_to_nothing),
		T(node_without_index_row),
		T(node_without_id_row),
		T(id_row_names_another_path),
		T(id_row_of_no_node),
		T_OLD(format_1_upgraded),
		T(node_without_parent),
		T(index_kind_disagrees),
		T(index_row_does_not_decode),
		T(entry_count_wrong),
		T(entry_count_on_an_item),
		T(directory_counted_at_first_entry),
		T(nsubdirs_wrong),
		T(nattrs_wrong),
		T(block_past_end),
		T(block_of_inline_value),
		T(block_checksum_damage),
		T(tables_read_not_mapped),
		T(block_row_under_another_key),
		T(dense_value_missing_block),
		T_OLD(store_without_block_checksums),
		T(attr_of_missing_node),
		T(node_row_does_not_decode),
		T(special_rows_as_documented),
		T_OLD(format_2_upgraded),
		T(special_payload_damaged),
		T(index_type_disagrees),
		T(special_with_children_or_blocks),
		T(healthy_store_untouched_by_repair),
		T(node_over_limits),
		T(alias_rows_as_documented),
		T(alias_copies_disagree),
		T(alias_row_missing),
		T(alias_row_to_nothing),
		T(alias_link_count_wrong),
		T(alias_layout_damaged),
		T_OLD(format_3_upgraded),
#undef T
#undef T_OLD
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
