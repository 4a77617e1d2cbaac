/*
 * hello.c - a tour of the keytree API.
 *
 * Creates a store, fills it with a few customer records, links to one of
 * them, reads through the link, lists and searches, renames and deletes
 * (saying what it renamed and deleted), checks the store's invariants and
 * prints everything that is left.
 *
 *   cc hello.c $(pkg-config --cflags --libs keytree) -o hello
 *   ./hello            a store in a temporary directory, removed at the end
 *   ./hello DIR        a store in DIR (made if missing), kept afterwards
 *
 * Every call returns 0 or a negative kt_error; on failure kt_errmsg() tells
 * exactly what went wrong, so the TRY() macro prints it and gives up.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include <keytree.h>

#define TRY(call)                                                              \
	do {                                                                   \
		if ((rc = (call)) < 0) {                                       \
			fprintf(stderr, "hello: %s\n  %s: %s\n", #call,        \
				kt_strerror(rc), kt_errmsg());                 \
			goto out;                                              \
		}                                                              \
	} while (0)

static const char *kind_name(unsigned int kind)
{
	if (kind & KT_KIND_LINK)
		return "link";
	if ((kind & KT_KIND_ITEM) && (kind & KT_KIND_DIR))
		return "item+dir";
	return (kind & KT_KIND_DIR) ? "dir" : "item";
}

/* kt_check() calls this for each broken invariant it finds. */
static int report(const char *what, void *payload)
{
	(void)payload;
	fprintf(stderr, "hello: check: %s\n", what);
	return 0; /* keep checking */
}

/* Print each entry of an iteration and free the iterator.  When the
 * entries are full paths (kt_find_new), also print the value of each item
 * and the target of each link.  Returns 0 or the error that ended it. */
static int print_entries(kt_store *store, kt_iter *it, int paths)
{
	const kt_entry *e = NULL;
	char *target = NULL;
	void *value = NULL;
	size_t len = 0;
	int rc;

	/* kt_iter_next() ends with KT_ITEROVER, so an error cannot pass
	 * for the end of the list.  The entry is borrowed from the
	 * iterator until the next call. */
	while ((rc = kt_iter_next(&e, it)) == 0) {
		printf("  %-8s %s", kind_name(e->kind), e->name);
		if (paths && (e->kind & KT_KIND_LINK)) {
			if ((rc = kt_readlink(&target, &len, store, e->name)))
				break;
			printf(" -> %s", target);
		} else if (paths && (e->kind & KT_KIND_ITEM)) {
			if ((rc = kt_get(&value, &len, store, e->name)))
				break;
			printf(" = \"%.*s\"", (int)len, (const char *)value);
		}
		printf("\n");
		kt_free(target); /* results belong to the caller */
		kt_free(value);
		target = NULL;
		value = NULL;
	}
	kt_free(target);
	kt_free(value);
	kt_iter_free(it);
	return rc == KT_ITEROVER ? 0 : rc;
}

static int rm_entry(const char *p, const struct stat *sb, int type,
		    struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/keytree-hello-XXXXXX", dir[64];
	const char *path = argc > 1 ? argv[1] : dir;
	kt_options opts = KT_OPTIONS_INIT;
	kt_check_options check = KT_CHECK_OPTIONS_INIT;
	kt_store *store = NULL;
	kt_iter *it = NULL;
	void *value = NULL;
	size_t len = 0, nbad = 0;
	int rc = 0;

	if (argc < 2 && mkdtemp(tmp) == NULL) {
		perror("hello: mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/store", tmp);

	/* A store is a directory; LevelDB creates it on first open. */
	opts.create_if_missing = 1;
	TRY(kt_open(&store, path, &opts));
	printf("opened a store in %s, delimiter \"%s\"\n", path,
	       kt_delimiter(store, NULL));

	/* Paths are absolute and canonical.  kt_put() makes any missing
	 * ancestors as directories, like mkdir -p followed by a write. */
	TRY(kt_put(store, "/customers/c-1/name", "Ada", 3, NULL));
	TRY(kt_put(store, "/customers/c-1/orders/o-1", "3 apples", 8, NULL));
	TRY(kt_put(store, "/customers/c-1/orders/o-2", "1 pear", 6, NULL));
	TRY(kt_put(store, "/customers/c-2/name", "Grace", 5, NULL));

	/* An empty directory, and a symbolic link in it.  The target is
	 * stored verbatim and resolved each time the link is used. */
	TRY(kt_mkdir(store, "/favourites", NULL));
	TRY(kt_symlink(store, "/favourites/ada", "/customers/c-1", NULL));

	/* Links in the middle of a path are always followed. */
	TRY(kt_get(&value, &len, store, "/favourites/ada/name"));
	printf("read through the link: /favourites/ada/name = \"%.*s\"\n",
	       (int)len, (const char *)value);

	/* Listing a directory is one range scan over its children's index
	 * rows, in byte order of name; entries carry names only. */
	printf("children of /customers/c-1:\n");
	TRY(kt_iter_new(&it, store, "/customers/c-1", NULL));
	TRY(print_entries(store, it, 0));

	/* Finding by prefix is one range scan too: "/customers/c-" matches
	 * c-1, c-2 and everything below them; entries carry full paths. */
	printf("nodes under the prefix /customers/c-:\n");
	TRY(kt_find_new(&it, store, "/customers/c-", 0));
	TRY(print_entries(store, it, 1));

	/* Rename moves a node with its subtree atomically, and delete with
	 * KT_DELETE_RECURSIVE removes a whole subtree in one atomic write. */
	TRY(kt_rename(store, "/customers/c-2", "/customers/c-3", 0));
	printf("renamed /customers/c-2 to /customers/c-3, with its subtree\n");
	TRY(kt_delete(store, "/customers/c-1/orders", KT_DELETE_RECURSIVE));
	printf("deleted /customers/c-1/orders and everything under it\n");

	/* Verify every invariant of the rows: 0 means the store is sound. */
	check.on_violation = report;
	TRY(kt_check(&nbad, store, &check));
	printf("checked the store: %zu broken invariants\n", nbad);

	printf("what the store holds now:\n");
	TRY(kt_find_new(&it, store, "/", 0));
	TRY(print_entries(store, it, 1));
out:
	kt_free(value);
	kt_close(store); /* after every iterator is freed */
	if (argc < 2)
		nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return rc < 0 ? 1 : 0;
}
