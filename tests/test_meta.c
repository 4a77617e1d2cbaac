/*
 * test_meta.c - node metadata: what kt_stat/kt_lstat report for items,
 * directories and links; ids (unique, kept across reopen and rename);
 * versions (changed by every write, never reused); kt_setattr; the POSIX
 * time rules; and the nsubdirs count.
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

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Let the clock move on, so "changed to now" is observable. */
static void tick(void)
{
	struct timespec ts = {0, 2000000};

	nanosleep(&ts, NULL);
}

static void put_str(kt_store *st, const char *path, const char *val)
{
	int rc = kt_put(st, path, val, strlen(val), NULL);

	if (rc != 0)
		fail_msg("kt_put(%s): %d %s", path, rc, kt_errmsg());
}

static kt_statbuf st_of(kt_store *st, const char *path)
{
	kt_statbuf sb;
	int rc = kt_stat(&sb, st, path);

	if (rc != 0)
		fail_msg("kt_stat(%s): %d %s", path, rc, kt_errmsg());
	return sb;
}

static kt_statbuf lst_of(kt_store *st, const char *path)
{
	kt_statbuf sb;
	int rc = kt_lstat(&sb, st, path);

	if (rc != 0)
		fail_msg("kt_lstat(%s): %d %s", path, rc, kt_errmsg());
	return sb;
}

static void assert_same_stat(const kt_statbuf *a, const kt_statbuf *b)
{
	assert_int_equal(a->id, b->id);
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->gid, b->gid);
	assert_int_equal(a->size, b->size);
	assert_int_equal(a->atime_ns, b->atime_ns);
	assert_int_equal(a->mtime_ns, b->mtime_ns);
	assert_int_equal(a->ctime_ns, b->ctime_ns);
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->nsubdirs, b->nsubdirs);
	assert_int_equal(a->nattrs, b->nattrs);
}

static void assert_between(int64_t t, int64_t lo, int64_t hi)
{
	if (t < lo || t > hi)
		fail_msg("time %lld not in [%lld, %lld]", (long long)t,
			 (long long)lo, (long long)hi);
}

/* ---- kt_stat / kt_lstat ---------------------------------------------------- */

static void test_meta__stat_item(void **state)
{
	kt_test_fixture *f = *state;
	int64_t t0 = now_ns(), t1;
	kt_statbuf sb;

	put_str(f->store, "/a", "abc");
	t1 = now_ns();
	sb = st_of(f->store, "/a");
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	assert_int_equal(sb.size, 3);
	assert_int_equal(sb.mode, 0644);
	assert_int_equal(sb.uid, geteuid());
	assert_int_equal(sb.gid, getegid());
	assert_int_equal(sb.nsubdirs, 0);
	assert_int_equal(sb.nattrs, 0);
	/* id 0 marks "no node" in kt_entry (attributes), so nodes have
	 * non-zero ids */
	assert_int_not_equal(sb.id, 0);
	/* a new node: atime = mtime = ctime = now */
	assert_between(sb.mtime_ns, t0, t1);
	assert_int_equal(sb.atime_ns, sb.mtime_ns);
	assert_int_equal(sb.ctime_ns, sb.mtime_ns);
	/* lstat of a non-link is the same */
	{
		kt_statbuf l = lst_of(f->store, "/a");

		assert_same_stat(&sb, &l);
	}
}

static void test_meta__stat_dir(void **state)
{
	kt_test_fixture *f = *state;
	int64_t t0 = now_ns(), t1;
	kt_statbuf sb;

	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	t1 = now_ns();
	sb = st_of(f->store, "/d");
	assert_int_equal(sb.kind, KT_KIND_DIR);
	assert_int_equal(sb.mode, 0755);
	assert_int_equal(sb.nsubdirs, 0);
	assert_between(sb.ctime_ns, t0, t1);
	assert_int_equal(sb.atime_ns, sb.mtime_ns);
	assert_int_equal(sb.ctime_ns, sb.mtime_ns);
	sb = st_of(f->store, "/");
	assert_int_equal(sb.kind, KT_KIND_DIR);
	assert_int_equal(sb.nsubdirs, 1);
	/* missing, and below a missing directory */
	assert_int_equal(kt_stat(&sb, f->store, "/nope"), KT_ENOTFOUND);
	assert_int_equal(kt_stat(&sb, f->store, "/nope/x"), KT_ENOTFOUND);
	assert_int_equal(kt_lstat(&sb, f->store, "/d/x"), KT_ENOTFOUND);
}

static void test_meta__stat_link(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf a, l;

	put_str(f->store, "/a", "abc");
	assert_int_equal(kt_symlink(f->store, "/l", "/a", NULL), 0);
	a = st_of(f->store, "/a");
	l = lst_of(f->store, "/l");
	assert_int_equal(l.kind, KT_KIND_LINK);
	assert_int_equal(l.size, 2); /* strlen("/a") */
	assert_int_equal(l.mode, 0777);
	assert_int_not_equal(l.id, a.id);
	/* stat follows it */
	l = st_of(f->store, "/l");
	assert_same_stat(&l, &a);
	/* a chain, relative and absolute */
	assert_int_equal(kt_symlink(f->store, "/l2", "l", NULL), 0);
	l = st_of(f->store, "/l2");
	assert_same_stat(&l, &a);
	l = lst_of(f->store, "/l2");
	assert_int_equal(l.kind, KT_KIND_LINK);
	assert_int_equal(l.size, 1);
	/* a link to a directory */
	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/ld", "/d", NULL), 0);
	assert_int_equal(st_of(f->store, "/ld").kind, KT_KIND_DIR);
	assert_int_equal(st_of(f->store, "/ld").id, st_of(f->store, "/d").id);
	/* dangling: lstat works, stat does not */
	assert_int_equal(kt_symlink(f->store, "/dang", "/gone", NULL), 0);
	assert_int_equal(lst_of(f->store, "/dang").kind, KT_KIND_LINK);
	assert_int_equal(kt_stat(&l, f->store, "/dang"), KT_ENOTFOUND);
	/* a loop */
	assert_int_equal(kt_symlink(f->store, "/loop1", "/loop2", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/loop2", "/loop1", NULL), 0);
	assert_int_equal(kt_stat(&l, f->store, "/loop1"), KT_ELOOP);
	assert_int_equal(lst_of(f->store, "/loop1").kind, KT_KIND_LINK);
	/* a link as an inner component is followed by lstat too */
	put_str(f->store, "/d/in", "x");
	assert_int_equal(lst_of(f->store, "/ld/in").id,
			 st_of(f->store, "/d/in").id);
}

/* ---- ids ------------------------------------------------------------------- */

static void test_meta__ids_unique_and_persistent(void **state)
{
	static const char *paths[] = {"/", "/a", "/b", "/d", "/d/x", "/d/y",
				      "/d/y/z", "/l", "/e", "/e/f"};
	kt_test_fixture *f = *state;
	size_t n = sizeof(paths) / sizeof(paths[0]), i, j;
	uint64_t ids[sizeof(paths) / sizeof(paths[0])];
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	co.flags = KT_CREATE_PARENTS;
	put_str(f->store, "/a", "1");
	put_str(f->store, "/b", "2");
	put_str(f->store, "/d/x", "3");
	put_str(f->store, "/d/y/z", "4");
	assert_int_equal(kt_symlink(f->store, "/l", "/a", NULL), 0);
	assert_int_equal(kt_mkdir(f->store, "/e/f", &co), 0);
	for (i = 0; i < n; i++)
		ids[i] = lst_of(f->store, paths[i]).id;
	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			if (ids[i] == ids[j])
				fail_msg("%s and %s share id %llu", paths[i],
					 paths[j], (unsigned long long)ids[i]);
	kt_test_reopen(f);
	for (i = 0; i < n; i++)
		assert_int_equal(lst_of(f->store, paths[i]).id, ids[i]);
	/* new nodes after reopening do not collide with old ones */
	put_str(f->store, "/after", "5");
	for (i = 0; i < n; i++)
		assert_int_not_equal(lst_of(f->store, "/after").id, ids[i]);

	/* rename keeps ids, for the whole subtree */
	assert_int_equal(kt_rename(f->store, "/a", "/a2", 0), 0);
	assert_int_equal(lst_of(f->store, "/a2").id, ids[1]);
	assert_int_equal(kt_rename(f->store, "/d", "/e/d", 0), 0);
	assert_int_equal(lst_of(f->store, "/e/d").id, ids[3]);
	assert_int_equal(lst_of(f->store, "/e/d/x").id, ids[4]);
	assert_int_equal(lst_of(f->store, "/e/d/y/z").id, ids[6]);
	assert_int_equal(kt_rename(f->store, "/l", "/l2", 0), 0);
	assert_int_equal(lst_of(f->store, "/l2").id, ids[7]);
	/* a node made where another was renamed away is new */
	put_str(f->store, "/a", "new");
	for (i = 0; i < n; i++)
		assert_int_not_equal(lst_of(f->store, "/a").id, ids[i]);
	kt_test_reopen(f);
	assert_int_equal(lst_of(f->store, "/e/d/y/z").id, ids[6]);
}

/* ---- versions ---------------------------------------------------------------- */

/* A set of versions seen so far. */
typedef struct vset {
	uint64_t v[256];
	size_t n;
} vset;

/* Record @p path's current version, which must be new. */
static void fresh_version(vset *s, kt_store *st, const char *path,
			  const char *after)
{
	uint64_t v = lst_of(st, path).version;
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i] == v)
			fail_msg("after %s, %s has version %llu seen before",
				 after, path, (unsigned long long)v);
	assert_true(s->n < 256);
	s->v[s->n++] = v;
}

static void test_meta__version_changes_on_every_write(void **state)
{
	kt_test_fixture *f = *state;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	vset s = {{0}, 0};
	kt_statbuf a, b;

	put_str(f->store, "/a", "one");
	fresh_version(&s, f->store, "/a", "create");
	put_str(f->store, "/a", "two");
	fresh_version(&s, f->store, "/a", "put");
	put_str(f->store, "/a", "two"); /* same bytes: still a write */
	fresh_version(&s, f->store, "/a", "put of the same value");
	assert_int_equal(kt_write(f->store, "/a", "W", 1, 1), 0);
	fresh_version(&s, f->store, "/a", "write");
	assert_int_equal(kt_truncate(f->store, "/a", 100), 0);
	fresh_version(&s, f->store, "/a", "truncate up");
	assert_int_equal(kt_truncate(f->store, "/a", 1), 0);
	fresh_version(&s, f->store, "/a", "truncate down");
	sa.mask = KT_SET_MODE;
	sa.mode = 0600;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	fresh_version(&s, f->store, "/a", "setattr mode");
	sa.mask = KT_SET_MTIME;
	sa.mtime_ns = 1000000000;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	fresh_version(&s, f->store, "/a", "setattr mtime");
	assert_int_equal(kt_attr_set(f->store, "/a", "k", "v", 1, 0), 0);
	fresh_version(&s, f->store, "/a", "attr set");
	assert_int_equal(kt_attr_set(f->store, "/a", "k", "w", 1, 0), 0);
	fresh_version(&s, f->store, "/a", "attr overwrite");
	assert_int_equal(kt_attr_delete(f->store, "/a", "k"), 0);
	fresh_version(&s, f->store, "/a", "attr delete");
	put_str(f->store, "/a/child", "c"); /* becomes item and dir */
	fresh_version(&s, f->store, "/a", "gaining a child");
	assert_int_equal(kt_rename(f->store, "/a", "/b", 0), 0);
	fresh_version(&s, f->store, "/b", "rename (ctime changes)");

	/* reads change nothing, version included */
	a = lst_of(f->store, "/b");
	{
		void *v = NULL;
		size_t len = 0, n = 0;
		char buf[4];
		kt_iter *it = NULL;
		const kt_entry *e;

		assert_int_equal(kt_get(&v, &len, f->store, "/b"), 0);
		kt_free(v);
		assert_int_equal(kt_read(&n, f->store, "/b", buf, 4, 0), 0);
		assert_int_equal(kt_iter_new(&it, f->store, "/b", NULL), 0);
		g_iter = it;
		while (kt_iter_next(&e, it) == 0)
			;
		iter_free(it);
		assert_int_equal(kt_attr_iter_new(&it, f->store, "/b"), 0);
		g_iter = it;
		iter_free(it);
	}
	b = lst_of(f->store, "/b");
	assert_same_stat(&a, &b);
}

static void test_meta__versions_never_reused(void **state)
{
	kt_test_fixture *f = *state;
	vset s = {{0}, 0};
	int i;

	/* drive the version counter up on one node */
	put_str(f->store, "/v", "0");
	fresh_version(&s, f->store, "/v", "create");
	for (i = 0; i < 10; i++) {
		assert_int_equal(kt_write(f->store, "/v", "x", 1, 0), 0);
		fresh_version(&s, f->store, "/v", "write");
	}
	put_str(f->store, "/other", "o");
	fresh_version(&s, f->store, "/other", "create other");
	fresh_version(&s, f->store, "/", "children added");

	/* delete and recreate */
	assert_int_equal(kt_delete(f->store, "/v", 0), 0);
	put_str(f->store, "/v", "0");
	fresh_version(&s, f->store, "/v", "delete and recreate");

	/* the node holding the newest version goes away; after a reopen the
	 * counter must not restart from what is left in the store */
	for (i = 0; i < 5; i++)
		assert_int_equal(kt_write(f->store, "/v", "y", 1, 0), 0);
	fresh_version(&s, f->store, "/v", "more writes");
	assert_int_equal(kt_delete(f->store, "/v", 0), 0);
	fresh_version(&s, f->store, "/", "child removed");
	assert_int_equal(kt_delete(f->store, "/other", 0), 0);
	kt_test_reopen(f);
	put_str(f->store, "/v", "again");
	fresh_version(&s, f->store, "/v", "reopen, delete and recreate");
	put_str(f->store, "/w", "w");
	fresh_version(&s, f->store, "/w", "reopen, new node");
	assert_int_equal(kt_mkdir(f->store, "/dir", NULL), 0);
	fresh_version(&s, f->store, "/dir", "reopen, mkdir");
	assert_int_equal(kt_symlink(f->store, "/lnk", "/w", NULL), 0);
	fresh_version(&s, f->store, "/lnk", "reopen, symlink");
}

/* ---- kt_setattr ----------------------------------------------------------------- */

static void test_meta__setattr_fields(void **state)
{
	kt_test_fixture *f = *state;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_statbuf a, b;
	int64_t t0, t1;

	put_str(f->store, "/a", "v");
	a = st_of(f->store, "/a");
	tick();

	sa.mask = KT_SET_MODE;
	sa.mode = 0751;
	sa.uid = 999; /* not in the mask: ignored */
	sa.atime_ns = 5;
	t0 = now_ns();
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	t1 = now_ns();
	b = st_of(f->store, "/a");
	assert_int_equal(b.mode, 0751);
	assert_int_equal(b.uid, a.uid);
	assert_int_equal(b.gid, a.gid);
	assert_int_equal(b.atime_ns, a.atime_ns);
	assert_int_equal(b.mtime_ns, a.mtime_ns);
	assert_between(b.ctime_ns, t0, t1);
	assert_int_equal(b.size, a.size);
	assert_int_equal(b.id, a.id);

	sa.mask = KT_SET_UID;
	sa.uid = 1001;
	sa.mode = 0; /* ignored */
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	b = st_of(f->store, "/a");
	assert_int_equal(b.uid, 1001);
	assert_int_equal(b.gid, a.gid);
	assert_int_equal(b.mode, 0751);

	sa.mask = KT_SET_GID;
	sa.gid = 2002;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	b = st_of(f->store, "/a");
	assert_int_equal(b.uid, 1001);
	assert_int_equal(b.gid, 2002);

	sa.mask = KT_SET_ATIME;
	sa.atime_ns = 1234567890123456789LL;
	sa.mtime_ns = 42; /* ignored */
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	b = st_of(f->store, "/a");
	assert_int_equal(b.atime_ns, 1234567890123456789LL);
	assert_int_equal(b.mtime_ns, a.mtime_ns);

	sa.mask = KT_SET_MTIME;
	sa.mtime_ns = 987654321012345678LL;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	b = st_of(f->store, "/a");
	assert_int_equal(b.mtime_ns, 987654321012345678LL);
	assert_int_equal(b.atime_ns, 1234567890123456789LL);
	/* ctime is now, not the mtime given */
	assert_true(b.ctime_ns > a.ctime_ns);

	/* several at once; all permission bits */
	sa.mask = KT_SET_MODE | KT_SET_UID | KT_SET_GID | KT_SET_ATIME |
		  KT_SET_MTIME;
	sa.mode = 07777;
	sa.uid = 0;
	sa.gid = 0;
	sa.atime_ns = 1;
	sa.mtime_ns = 2;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	b = st_of(f->store, "/a");
	assert_int_equal(b.mode, 07777);
	assert_int_equal(b.uid, 0);
	assert_int_equal(b.gid, 0);
	assert_int_equal(b.atime_ns, 1);
	assert_int_equal(b.mtime_ns, 2);

	/* persisted */
	kt_test_reopen(f);
	a = st_of(f->store, "/a");
	assert_same_stat(&a, &b);
}

static void test_meta__setattr_times_before_epoch(void **state)
{
	kt_test_fixture *f = *state;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_statbuf b;

	/* int64_t times are signed: 1969 is a valid time (POSIX) */
	put_str(f->store, "/a", "v");
	sa.mask = KT_SET_ATIME | KT_SET_MTIME;
	sa.atime_ns = -1;
	sa.mtime_ns = -86400LL * 1000000000LL;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	b = st_of(f->store, "/a");
	assert_int_equal(b.atime_ns, -1);
	assert_int_equal(b.mtime_ns, -86400LL * 1000000000LL);
	kt_test_reopen(f);
	b = st_of(f->store, "/a");
	assert_int_equal(b.atime_ns, -1);
	assert_int_equal(b.mtime_ns, -86400LL * 1000000000LL);
}

static void test_meta__setattr_now_flags(void **state)
{
	kt_test_fixture *f = *state;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_statbuf b;
	int64_t t0, t1;

	put_str(f->store, "/a", "v");
	sa.mask = KT_SET_ATIME | KT_SET_MTIME;
	sa.atime_ns = 10;
	sa.mtime_ns = 20;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);

	sa.mask = KT_SET_ATIME_NOW;
	t0 = now_ns();
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	t1 = now_ns();
	b = st_of(f->store, "/a");
	assert_between(b.atime_ns, t0, t1);
	assert_int_equal(b.mtime_ns, 20);

	sa.mask = KT_SET_MTIME_NOW;
	t0 = now_ns();
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	t1 = now_ns();
	b = st_of(f->store, "/a");
	assert_between(b.mtime_ns, t0, t1);
	assert_between(b.ctime_ns, t0, t1);

	sa.mask = KT_SET_ATIME | KT_SET_MTIME;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	sa.mask = KT_SET_ATIME_NOW | KT_SET_MTIME_NOW;
	t0 = now_ns();
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	t1 = now_ns();
	b = st_of(f->store, "/a");
	assert_between(b.atime_ns, t0, t1);
	assert_between(b.mtime_ns, t0, t1);
}

static void test_meta__setattr_nofollow(void **state)
{
	kt_test_fixture *f = *state;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_statbuf a, l, a2, l2;

	put_str(f->store, "/a", "v");
	assert_int_equal(kt_symlink(f->store, "/l", "/a", NULL), 0);
	a = st_of(f->store, "/a");
	l = lst_of(f->store, "/l");

	sa.mask = KT_SET_MODE | KT_SET_UID;
	sa.mode = 0700;
	sa.uid = 77;
	assert_int_equal(kt_setattr(f->store, "/l", &sa, KT_NOFOLLOW), 0);
	l2 = lst_of(f->store, "/l");
	a2 = st_of(f->store, "/a");
	assert_int_equal(l2.mode, 0700);
	assert_int_equal(l2.uid, 77);
	assert_int_equal(l2.kind, KT_KIND_LINK);
	assert_same_stat(&a, &a2);

	/* without the flag the target changes, the link does not */
	l = l2;
	sa.mode = 0600;
	sa.uid = 88;
	assert_int_equal(kt_setattr(f->store, "/l", &sa, 0), 0);
	a2 = st_of(f->store, "/a");
	l2 = lst_of(f->store, "/l");
	assert_int_equal(a2.mode, 0600);
	assert_int_equal(a2.uid, 88);
	assert_same_stat(&l, &l2);

	/* a dangling link can be changed itself, not followed */
	assert_int_equal(kt_symlink(f->store, "/dang", "/gone", NULL), 0);
	assert_int_equal(kt_setattr(f->store, "/dang", &sa, KT_NOFOLLOW), 0);
	assert_int_equal(lst_of(f->store, "/dang").mode, 0600);
	kt_assert_rejected(f->store, kt_setattr(f->store, "/dang", &sa, 0),
			   KT_ENOTFOUND, "/");
	/* NOFOLLOW on a non-link acts on the node */
	sa.mode = 0640;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, KT_NOFOLLOW), 0);
	assert_int_equal(st_of(f->store, "/a").mode, 0640);
}

static void test_meta__setattr_invalid(void **state)
{
	kt_test_fixture *f = *state;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;

	put_str(f->store, "/a", "v");
	sa.mask = KT_SET_MODE;
	sa.mode = 010000;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EINVAL, "/a");
	sa.mode = 0100644; /* S_IFREG | 0644 */
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EINVAL, "/a");
	sa.mode = 0xFFFFFFFFu;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EINVAL, "/a");
	/* a bad mode with other fields: nothing of it is applied */
	sa.mask = KT_SET_MODE | KT_SET_UID;
	sa.uid = 5;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EINVAL, "/a");
	/* unknown mask bits */
	sa.mode = 0600;
	sa.mask = 0x80;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EINVAL, "/a");
	sa.mask = KT_SET_MODE | 0x100;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EINVAL, "/a");
	sa.mask = KT_SET_MODE | 0x80000000u;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EINVAL, "/a");
	/* no args */
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", NULL, 0),
			   KT_EINVAL, "");
	/* a mode outside the mask is not looked at */
	sa.mask = KT_SET_UID;
	sa.mode = 0xFFFFFFFFu;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	assert_int_equal(st_of(f->store, "/a").uid, 5);
	assert_int_equal(st_of(f->store, "/a").mode, 0644);
	/* missing node */
	sa.mask = KT_SET_MODE;
	sa.mode = 0600;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/nope", &sa, 0),
			   KT_ENOTFOUND, "/nope");
}

/* kt_setattr_args carries a version: zero (a struct not made with
 * KT_SETATTR_ARGS_INIT) or one this library does not know is refused by
 * every call that takes the struct, with a message naming the version, and
 * nothing changes. */
static void test_meta__setattr_args_version(void **state)
{
	kt_test_fixture *f = *state;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_batch *b = NULL;
	uint64_t id, oid = 0;

	put_str(f->store, "/a", "v");
	id = st_of(f->store, "/a").id;
	assert_int_equal(kt_orphan_new(&oid, f->store, NULL), 0);
	sa.mask = KT_SET_MODE;
	sa.mode = 0600;
	sa.version = 0;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EINVAL, "args version 0");
	sa.version = KT_SETATTR_ARGS_VERSION + 1;
	kt_assert_rejected(f->store, kt_setattr(f->store, "/a", &sa, 0),
			   KT_EINVAL, "args version 2");
	kt_assert_rejected(f->store, kt_id_setattr(NULL, f->store, id, &sa),
			   KT_EINVAL, "args version 2");
	kt_assert_rejected(f->store, kt_orphan_setattr(f->store, oid, &sa),
			   KT_EINVAL, "args version 2");
	assert_int_equal(kt_batch_new(&b, f->store), 0);
	kt_assert_rejected(f->store, kt_batch_setattr(b, "/a", &sa, 0),
			   KT_EINVAL, "args version 2");
	kt_batch_free(b);
	assert_int_equal(st_of(f->store, "/a").mode, 0644);
	/* the same args with the right version apply */
	sa.version = KT_SETATTR_ARGS_VERSION;
	assert_int_equal(kt_setattr(f->store, "/a", &sa, 0), 0);
	assert_int_equal(st_of(f->store, "/a").mode, 0600);
	assert_int_equal(kt_orphan_release(f->store, oid), 0);
}

/* ---- times ------------------------------------------------------------------------ */

static void test_meta__times_on_writes(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf a, b;
	int64_t t0, t1;

	put_str(f->store, "/a", "v");
	a = st_of(f->store, "/a");

	/* put, write, truncate: mtime and ctime = now, atime unchanged */
	tick();
	t0 = now_ns();
	put_str(f->store, "/a", "new");
	t1 = now_ns();
	b = st_of(f->store, "/a");
	assert_between(b.mtime_ns, t0, t1);
	assert_between(b.ctime_ns, t0, t1);
	assert_int_equal(b.atime_ns, a.atime_ns);

	tick();
	t0 = now_ns();
	assert_int_equal(kt_write(f->store, "/a", "x", 1, 10), 0);
	t1 = now_ns();
	b = st_of(f->store, "/a");
	assert_between(b.mtime_ns, t0, t1);
	assert_between(b.ctime_ns, t0, t1);
	assert_int_equal(b.atime_ns, a.atime_ns);

	tick();
	t0 = now_ns();
	assert_int_equal(kt_truncate(f->store, "/a", 2), 0);
	t1 = now_ns();
	b = st_of(f->store, "/a");
	assert_between(b.mtime_ns, t0, t1);
	assert_between(b.ctime_ns, t0, t1);
	assert_int_equal(b.atime_ns, a.atime_ns);

	/* attribute changes: ctime only */
	a = b;
	tick();
	t0 = now_ns();
	assert_int_equal(kt_attr_set(f->store, "/a", "k", "v", 1, 0), 0);
	t1 = now_ns();
	b = st_of(f->store, "/a");
	assert_between(b.ctime_ns, t0, t1);
	assert_int_equal(b.mtime_ns, a.mtime_ns);
	assert_int_equal(b.atime_ns, a.atime_ns);
	tick();
	t0 = now_ns();
	assert_int_equal(kt_attr_delete(f->store, "/a", "k"), 0);
	t1 = now_ns();
	b = st_of(f->store, "/a");
	assert_between(b.ctime_ns, t0, t1);
	assert_int_equal(b.mtime_ns, a.mtime_ns);

	/* rename: the moved node's ctime; mtime unchanged */
	a = b;
	tick();
	t0 = now_ns();
	assert_int_equal(kt_rename(f->store, "/a", "/b", 0), 0);
	t1 = now_ns();
	b = st_of(f->store, "/b");
	assert_between(b.ctime_ns, t0, t1);
	assert_int_equal(b.mtime_ns, a.mtime_ns);
	assert_int_equal(b.atime_ns, a.atime_ns);
}

static void test_meta__reads_do_not_change_times(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf a, b, l1, l2;
	void *v = NULL;
	size_t len = 0, n = 0;
	char buf[8], *t = NULL;
	kt_iter *it = NULL;
	const kt_entry *e;

	put_str(f->store, "/d/a", "value");
	assert_int_equal(kt_attr_set(f->store, "/d/a", "k", "v", 1, 0), 0);
	assert_int_equal(kt_symlink(f->store, "/l", "/d/a", NULL), 0);
	a = st_of(f->store, "/d/a");
	l1 = lst_of(f->store, "/d");
	tick();
	assert_int_equal(kt_get(&v, &len, f->store, "/l"), 0);
	kt_free(v);
	assert_int_equal(kt_read(&n, f->store, "/d/a", buf, 8, 0), 0);
	assert_int_equal(kt_attr_get(&v, &len, f->store, "/d/a", "k"), 0);
	kt_free(v);
	assert_int_equal(kt_readlink(&t, &len, f->store, "/l"), 0);
	kt_free(t);
	assert_int_equal(kt_iter_new(&it, f->store, "/d", NULL), 0);
	g_iter = it;
	while (kt_iter_next(&e, it) == 0)
		;
	iter_free(it);
	assert_int_equal(kt_find_new(&it, f->store, "/d", KT_FIND_SUBTREE), 0);
	g_iter = it;
	while (kt_iter_next(&e, it) == 0)
		;
	iter_free(it);
	b = st_of(f->store, "/d/a");
	assert_same_stat(&a, &b);
	l2 = lst_of(f->store, "/d");
	assert_same_stat(&l1, &l2);
}

static void test_meta__parent_times_on_child_add_remove(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf p0, p1, q1;
	int64_t t0, t1;

	assert_int_equal(kt_mkdir(f->store, "/p", NULL), 0);
	assert_int_equal(kt_mkdir(f->store, "/q", NULL), 0);

#define CHECK_PARENT_TOUCHED(path, call)                                    \
	do {                                                                \
		tick();                                                     \
		t0 = now_ns();                                              \
		assert_int_equal((call), 0);                                \
		t1 = now_ns();                                              \
		p1 = st_of(f->store, path);                                 \
		assert_between(p1.mtime_ns, t0, t1);                        \
		assert_between(p1.ctime_ns, t0, t1);                        \
	} while (0)

	CHECK_PARENT_TOUCHED("/p", kt_put(f->store, "/p/a", "1", 1, NULL));
	CHECK_PARENT_TOUCHED("/p", kt_mkdir(f->store, "/p/d", NULL));
	CHECK_PARENT_TOUCHED("/p", kt_symlink(f->store, "/p/l", "a", NULL));
	CHECK_PARENT_TOUCHED("/p", kt_delete(f->store, "/p/l", 0));
	CHECK_PARENT_TOUCHED("/", kt_put(f->store, "/new", "1", 1, NULL));

	/* Changing a child's value or attributes is not adding or removing
	 * a child: the directory is untouched (POSIX). */
	p0 = st_of(f->store, "/p");
	tick();
	assert_int_equal(kt_put(f->store, "/p/a", "22", 2, NULL), 0);
	assert_int_equal(kt_write(f->store, "/p/a", "3", 1, 0), 0);
	assert_int_equal(kt_attr_set(f->store, "/p/a", "k", "v", 1, 0), 0);
	p1 = st_of(f->store, "/p");
	assert_int_equal(p1.mtime_ns, p0.mtime_ns);
	assert_int_equal(p1.ctime_ns, p0.ctime_ns);

	/* rename between directories touches both parents (POSIX) */
	tick();
	t0 = now_ns();
	assert_int_equal(kt_rename(f->store, "/p/a", "/q/a", 0), 0);
	t1 = now_ns();
	p1 = st_of(f->store, "/p");
	q1 = st_of(f->store, "/q");
	assert_between(p1.mtime_ns, t0, t1);
	assert_between(q1.mtime_ns, t0, t1);

	/* deleting the last child, and a recursive delete */
	CHECK_PARENT_TOUCHED("/q", kt_delete(f->store, "/q/a", 0));
	put_str(f->store, "/p/d/x/y", "v");
	CHECK_PARENT_TOUCHED("/p", kt_delete(f->store, "/p/d",
					     KT_DELETE_RECURSIVE));
	/* a put that makes ancestors touches the first existing one */
	CHECK_PARENT_TOUCHED("/q", kt_put(f->store, "/q/m/n/o", "v", 1,
					  NULL));
#undef CHECK_PARENT_TOUCHED
}

/* ---- nsubdirs ---------------------------------------------------------------------- */

static void test_meta__nsubdirs_counts_directory_children(void **state)
{
	kt_test_fixture *f = *state;
	kt_create_options co = KT_CREATE_OPTIONS_INIT;

	co.flags = KT_CREATE_PARENTS;
	assert_int_equal(st_of(f->store, "/").nsubdirs, 0);
	assert_int_equal(kt_mkdir(f->store, "/d/a", &co), 0);
	assert_int_equal(kt_mkdir(f->store, "/d/b", NULL), 0);
	assert_int_equal(st_of(f->store, "/d").nsubdirs, 2);
	assert_int_equal(st_of(f->store, "/").nsubdirs, 1);
	/* an item is not a directory */
	put_str(f->store, "/d/i", "v");
	assert_int_equal(st_of(f->store, "/d").nsubdirs, 2);
	/* until it gets a child */
	put_str(f->store, "/d/i/x", "v");
	assert_int_equal(st_of(f->store, "/d").nsubdirs, 3);
	assert_int_equal(st_of(f->store, "/d/i").nsubdirs, 0);
	/* a link to a directory is not one */
	assert_int_equal(kt_symlink(f->store, "/d/l", "/d/a", NULL), 0);
	assert_int_equal(st_of(f->store, "/d").nsubdirs, 3);
	/* grandchildren do not count */
	assert_int_equal(kt_mkdir(f->store, "/d/a/g", NULL), 0);
	assert_int_equal(st_of(f->store, "/d").nsubdirs, 3);
	assert_int_equal(st_of(f->store, "/d/a").nsubdirs, 1);

	assert_int_equal(kt_delete(f->store, "/d/b", 0), 0);
	assert_int_equal(st_of(f->store, "/d").nsubdirs, 2);
	/* removing only the value keeps the directory */
	assert_int_equal(kt_delete(f->store, "/d/i", KT_DELETE_ITEM), 0);
	assert_int_equal(st_of(f->store, "/d").nsubdirs, 2);
	/* rename out of /d and into / */
	assert_int_equal(kt_rename(f->store, "/d/a", "/a", 0), 0);
	assert_int_equal(st_of(f->store, "/d").nsubdirs, 1);
	assert_int_equal(st_of(f->store, "/").nsubdirs, 2);
	/* a directory over an empty directory: one less */
	assert_int_equal(kt_mkdir(f->store, "/e", NULL), 0);
	assert_int_equal(st_of(f->store, "/").nsubdirs, 3);
	assert_int_equal(kt_rename(f->store, "/d", "/e", 0), 0);
	assert_int_equal(st_of(f->store, "/").nsubdirs, 2);
	assert_int_equal(st_of(f->store, "/e").nsubdirs, 1);
	/* recursive delete */
	assert_int_equal(kt_delete(f->store, "/e", KT_DELETE_RECURSIVE), 0);
	assert_int_equal(st_of(f->store, "/").nsubdirs, 1);
	kt_test_reopen(f);
	assert_int_equal(st_of(f->store, "/").nsubdirs, 1);
	assert_int_equal(st_of(f->store, "/a").nsubdirs, 1);
}

#define T(name) cmocka_unit_test_setup_teardown(name, kt_test_setup, \
						 teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_meta__stat_item),
		T(test_meta__stat_dir),
		T(test_meta__stat_link),
		T(test_meta__ids_unique_and_persistent),
		T(test_meta__version_changes_on_every_write),
		T(test_meta__versions_never_reused),
		T(test_meta__setattr_fields),
		T(test_meta__setattr_times_before_epoch),
		T(test_meta__setattr_now_flags),
		T(test_meta__setattr_nofollow),
		T(test_meta__setattr_invalid),
		T(test_meta__setattr_args_version),
		T(test_meta__times_on_writes),
		T(test_meta__reads_do_not_change_times),
		T(test_meta__parent_times_on_child_add_remove),
		T(test_meta__nsubdirs_counts_directory_children),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
