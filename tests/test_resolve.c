/*
 * test_resolve.c - corners of link resolution that the link tests do not
 * reach: links that end on the root or on their own directory, targets
 * whose components cannot be names, and paths that grow past the limit
 * only once links are followed.
 */
#include "kt_test.h"

static void test_resolve__link_to_root(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf root, sb;
	kt_iter *it = NULL;
	const kt_entry *e;
	int n = 0;

	assert_int_equal(kt_put(f->store, "/top", "v", 1, NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/d/up", "..",
				    &(kt_create_options){
					    KT_CREATE_OPTIONS_VERSION,
					    KT_CREATE_PARENTS, 0, 0, 0, 0}),
			 0);
	assert_int_equal(kt_symlink(f->store, "/r", "/", NULL), 0);
	assert_int_equal(kt_stat(&root, f->store, "/"), 0);
	assert_int_equal(kt_stat(&sb, f->store, "/r"), 0);
	assert_int_equal(sb.id, root.id);
	assert_int_equal(kt_stat(&sb, f->store, "/d/up"), 0);
	assert_int_equal(sb.id, root.id);
	/* Through the link the root's children are listed. */
	assert_int_equal(kt_iter_new(&it, f->store, "/r", NULL), 0);
	while (kt_iter_next(&e, it) == 0)
		n++;
	kt_iter_free(it);
	assert_int_equal(n, 3); /* d, r, top */
	/* And reached again below it. */
	assert_int_equal(kt_stat(&sb, f->store, "/d/up/top"), 0);
	assert_int_equal(sb.kind, KT_KIND_ITEM);
	/* The root holds no value, through a link neither. */
	kt_assert_rejected(f->store, kt_put(f->store, "/r", "x", 1, NULL),
			   KT_EINVAL, "root");
}

static void test_resolve__link_to_dot(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf d, sb;

	assert_int_equal(kt_put(f->store, "/d/x", "v", 1, NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/d/self", ".", NULL), 0);
	assert_int_equal(kt_stat(&d, f->store, "/d"), 0);
	assert_int_equal(kt_stat(&sb, f->store, "/d/self"), 0);
	assert_int_equal(sb.id, d.id);
	assert_int_equal(kt_stat(&sb, f->store, "/d/self/self/x"), 0);
	assert_int_equal(sb.kind, KT_KIND_ITEM);
}

static void test_resolve__target_component_not_a_name(void **state)
{
	kt_test_fixture *f = *state;
	char longname[300];
	char target[310];
	kt_statbuf sb;

	assert_int_equal(kt_mkdir(f->store, "/d", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/bad", "/d/a\xc2\xa6" "b",
				    NULL), 0);
	kt_assert_rejected(f->store, kt_stat(&sb, f->store, "/bad"),
			   KT_ENOTFOUND, "/bad");
	memset(longname, 'n', 256);
	longname[256] = '\0';
	snprintf(target, sizeof(target), "d/%s", longname);
	assert_int_equal(kt_symlink(f->store, "/long", target, NULL), 0);
	kt_assert_rejected(f->store, kt_stat(&sb, f->store, "/long"),
			   KT_ENOTFOUND, "/long");
	/* Writing through it creates nothing. */
	kt_assert_rejected(f->store, kt_put(f->store, "/bad", "v", 1, NULL),
			   KT_ENOTFOUND, "/bad");
}

static void test_resolve__too_long_after_links(void **state)
{
	kt_test_fixture *f = *state;
	char deep[4096], path[4096], name[201];
	kt_create_options o = KT_CREATE_OPTIONS_INIT;
	kt_statbuf sb;
	size_t len = 0;

	/* A real directory 3990 bytes deep... */
	memset(name, 'x', 200);
	name[200] = '\0';
	while (len + 201 <= 3819) {
		deep[len++] = '/';
		memcpy(deep + len, name, 200);
		len += 200;
	}
	/* Pad to 3990 bytes with one shorter name. */
	deep[len++] = '/';
	memset(deep + len, 'y', 3990 - len);
	len = 3990;
	deep[len] = '\0';
	o.flags = KT_CREATE_PARENTS;
	assert_int_equal(kt_mkdir(f->store, deep, &o), 0);
	/* ...reached through a short link, then 200 more bytes: a path of
	 * valid length that is too long once the link is followed. */
	assert_int_equal(kt_symlink(f->store, "/s", deep, NULL), 0);
	snprintf(path, sizeof(path), "/s/%s", name);
	kt_assert_rejected(f->store, kt_stat(&sb, f->store, path),
			   KT_ENAMETOOLONG, "/s/");
}

/* A target ending in '/' or "/." names a directory, as in POSIX. */
static void test_resolve__trailing_slash_wants_a_directory(void **state)
{
	kt_test_fixture *f = *state;
	kt_statbuf d, sb;

	assert_int_equal(kt_put(f->store, "/item", "v", 1, NULL), 0);
	assert_int_equal(kt_mkdir(f->store, "/dir", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/l1", "item/.", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/l2", "/item//", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/l3", "./dir/", NULL), 0);
	assert_int_equal(kt_symlink(f->store, "/l4", "/dir/.", NULL), 0);
	kt_assert_rejected(f->store, kt_stat(&sb, f->store, "/l1"),
			   KT_ENOTDIR, "/item");
	kt_assert_rejected(f->store, kt_stat(&sb, f->store, "/l2"),
			   KT_ENOTDIR, "/item");
	assert_int_equal(kt_stat(&d, f->store, "/dir"), 0);
	assert_int_equal(kt_stat(&sb, f->store, "/l3"), 0);
	assert_int_equal(sb.id, d.id);
	assert_int_equal(kt_stat(&sb, f->store, "/l4"), 0);
	assert_int_equal(sb.id, d.id);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, kt_test_setup, \
					      kt_test_teardown)
	const struct CMUnitTest tests[] = {
		T(test_resolve__link_to_root),
		T(test_resolve__link_to_dot),
		T(test_resolve__target_component_not_a_name),
		T(test_resolve__too_long_after_links),
		T(test_resolve__trailing_slash_wants_a_directory),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
