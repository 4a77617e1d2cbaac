/*
 * hold.c - a test helper that holds a store through the library, as
 * keytreefs or any program would, and so serves it to other processes:
 *
 *   kt_cli_hold DIR    open (or create) the store, print "held PID", then
 *                      obey lines from stdin until it ends:
 *                        put PATH VALUE   write it; prints "ok" or the error
 *                        get PATH         print the value or the error
 *                      and close the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keytree.h"

int main(int argc, char **argv)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	char line[4096];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: kt_cli_hold DIR\n");
		return 2;
	}
	o.create_if_missing = 1;
	if ((rc = kt_open(&st, argv[1], &o)) != 0) {
		fprintf(stderr, "kt_cli_hold: %s\n", kt_errmsg());
		return 1;
	}
	printf("held %ld\n", (long)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		char *save = NULL;
		char *cmd = strtok_r(line, " \n", &save);
		char *path = strtok_r(NULL, " \n", &save);
		char *val = strtok_r(NULL, "\n", &save);
		void *v = NULL;
		size_t len = 0;

		if (cmd == NULL || path == NULL) {
			printf("error: bad command\n");
		} else if (strcmp(cmd, "put") == 0 && val != NULL) {
			rc = kt_put(st, path, val, strlen(val), NULL);
			printf("%s\n", rc == 0 ? "ok" : kt_errmsg());
		} else if (strcmp(cmd, "get") == 0) {
			rc = kt_get(&v, &len, st, path);
			if (rc == 0)
				printf("%.*s\n", (int)len, (char *)v);
			else
				printf("error: %s\n", kt_errmsg());
			kt_free(v);
		} else {
			printf("error: bad command\n");
		}
		fflush(stdout);
	}
	kt_close(st);
	return 0;
}
