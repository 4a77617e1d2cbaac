/*
 * rows.c - a test helper that reaches under keytree to LevelDB, so that the
 * CLI tests can damage a store on purpose and hold its lock.
 *
 *   kt_cli_rows DIR del PART SORT        delete the row (PART, SORT)
 *   kt_cli_rows DIR put PART SORT VALUE  write it
 *   kt_cli_rows DIR has PART SORT        exit 0 if it exists, 1 if not
 *   kt_cli_rows DIR hold                 open the database, print "held",
 *                                        keep it open until stdin ends
 *
 * A row (PART, SORT) is the LevelDB key PART || 0x00 || SORT (see
 * docs/FORMAT.md); the arguments are raw bytes, e.g. from bash's $'\xc2'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leveldb/c.h>

static char *make_key(const char *part, const char *sort, size_t *len)
{
	size_t pl = strlen(part), sl = strlen(sort);
	char *k = malloc(pl + sl + 1);

	if (k == NULL)
		exit(3);
	memcpy(k, part, pl);
	k[pl] = '\0';
	memcpy(k + pl + 1, sort, sl);
	*len = pl + 1 + sl;
	return k;
}

static int fail(const char *what, char *err)
{
	fprintf(stderr, "kt_cli_rows: %s: %s\n", what, err);
	leveldb_free(err);
	return 3;
}

int main(int argc, char **argv)
{
	leveldb_options_t *opts;
	leveldb_writeoptions_t *wo;
	leveldb_readoptions_t *ro;
	leveldb_t *db;
	char *err = NULL, *key = NULL, *val;
	size_t klen = 0, vlen = 0;
	int rc = 0, c;

	if (argc < 3) {
		fprintf(stderr, "usage: kt_cli_rows DIR del|put|has|hold "
				"...\n");
		return 2;
	}
	opts = leveldb_options_create();
	wo = leveldb_writeoptions_create();
	ro = leveldb_readoptions_create();
	leveldb_writeoptions_set_sync(wo, 1);
	db = leveldb_open(opts, argv[1], &err);
	if (err != NULL)
		return fail(argv[1], err);
	if (strcmp(argv[2], "hold") == 0) {
		printf("held\n");
		fflush(stdout);
		while ((c = getchar()) != EOF)
			;
	} else if (strcmp(argv[2], "del") == 0 && argc == 5) {
		key = make_key(argv[3], argv[4], &klen);
		leveldb_delete(db, wo, key, klen, &err);
	} else if (strcmp(argv[2], "put") == 0 && argc == 6) {
		key = make_key(argv[3], argv[4], &klen);
		leveldb_put(db, wo, key, klen, argv[5], strlen(argv[5]), &err);
	} else if (strcmp(argv[2], "has") == 0 && argc == 5) {
		key = make_key(argv[3], argv[4], &klen);
		val = leveldb_get(db, ro, key, klen, &vlen, &err);
		rc = val != NULL ? 0 : 1;
		leveldb_free(val);
	} else {
		fprintf(stderr, "kt_cli_rows: bad arguments\n");
		rc = 2;
	}
	if (err != NULL)
		rc = fail(argv[2], err);
	free(key);
	leveldb_close(db);
	leveldb_readoptions_destroy(ro);
	leveldb_writeoptions_destroy(wo);
	leveldb_options_destroy(opts);
	return rc;
}
