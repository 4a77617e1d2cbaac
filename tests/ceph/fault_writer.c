/*
 * fault_writer.c - the write workload of tests/ceph/faults.sh: one client
 * that keeps changing a tree while the test breaks the cluster under it.
 *
 * usage: kt_fault_writer LOCATION STOPFILE
 *
 * Round i puts /w/<i> (value "v<i>-" and letters, 3000 + i % 100 bytes) and every fifth round also makes directory /d/<i>
 * with an item in it and renames it to /r/<i>: operations on one object
 * and on several.  After each acknowledged operation it prints one line on
 * stdout ("put /w/7", "mv /r/5"), flushed, so the test knows exactly what
 * was acknowledged.  It stops at the first failure (status 1, the message
 * on stderr) or when STOPFILE exists (status 0), and prints "rounds N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keytree.h"

static int failed(const char *what, const char *path, int rc)
{
	fprintf(stderr, "kt_fault_writer: %s %s: %d (%s)\n", what, path, rc,
		kt_errmsg());
	return 1;
}

static int put(kt_store *st, const char *path, unsigned long i)
{
	char v[3100];
	int rc;

	memset(v, 'a' + (int)(i % 26), sizeof(v));
	v[snprintf(v, 32, "v%lu", i)] = '-';
	if ((rc = kt_put(st, path, v, 3000 + i % 100, NULL)) != 0)
		return failed("put", path, rc);
	printf("put %s\n", path);
	return 0;
}

int main(int argc, char **argv)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	unsigned long i;
	char p[64], q[64];
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: kt_fault_writer LOCATION STOPFILE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	o.create_if_missing = 1;
	if ((rc = kt_open(&st, argv[1], &o)) != 0)
		return failed("open", argv[1], rc);
	if ((rc = kt_mkdir(st, "/w", NULL)) != 0 ||
	    (rc = kt_mkdir(st, "/d", NULL)) != 0 ||
	    (rc = kt_mkdir(st, "/r", NULL)) != 0)
		return failed("mkdir", "/w, /d, /r", rc);
	printf("ready\n");
	for (i = 1; access(argv[2], F_OK) != 0; i++) {
		snprintf(p, sizeof(p), "/w/%lu", i);
		if (put(st, p, i) != 0)
			goto out;
		if (i % 5 != 0)
			continue;
		snprintf(p, sizeof(p), "/d/%lu", i);
		if ((rc = kt_mkdir(st, p, NULL)) != 0) {
			failed("mkdir", p, rc);
			goto out;
		}
		snprintf(q, sizeof(q), "/d/%lu/item", i);
		if (put(st, q, i) != 0)
			goto out;
		snprintf(q, sizeof(q), "/r/%lu", i);
		if ((rc = kt_rename(st, p, q, 0)) != 0) {
			failed("mv", p, rc);
			goto out;
		}
		printf("mv %s\n", q);
	}
	printf("rounds %lu\n", i - 1);
	kt_close(st);
	return 0;
out:
	kt_close(st);
	return 1;
}
