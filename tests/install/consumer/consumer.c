/*
 * consumer.c - a program from outside the keytree tree, built by
 * tests/install/run.sh against an installed keytree (with pkg-config and
 * with find_package).  It opens a new store in the directory given as its
 * argument, puts /a/b = "hello", reads it back and prints the value.
 */
#include <stdio.h>

#include <keytree.h>

static int fail(const char *what, int rc)
{
	fprintf(stderr, "consumer: %s: %s: %s\n", what, kt_strerror(rc),
		kt_errmsg());
	return 1;
}

int main(int argc, char **argv)
{
	kt_options opts = KT_OPTIONS_INIT;
	kt_store *store = NULL;
	void *value = NULL;
	size_t len = 0;
	int rc;
	int status = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s STORE-DIR\n", argv[0]);
		return 2;
	}
	opts.create_if_missing = 1;
	if ((rc = kt_open(&store, argv[1], &opts)) < 0)
		return fail("open", rc);
	if ((rc = kt_put(store, "/a/b", "hello", 5, NULL)) < 0) {
		status = fail("put /a/b", rc);
		goto out;
	}
	if ((rc = kt_get(&value, &len, store, "/a/b")) < 0) {
		status = fail("get /a/b", rc);
		goto out;
	}
	printf("%.*s\n", (int)len, (const char *)value);
	status = 0;
out:
	kt_free(value);
	kt_close(store);
	return status;
}
