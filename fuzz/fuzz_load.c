/*
 * fuzz_load.c - the dump loader of the command-line tool, `keytree load`
 * (tools/json.c, format in docs/DUMP.md), on arbitrary input.
 *
 * tools/ has no library entry point for the loader: its commands are
 * reached through main().  This target is linked with the tool's own
 * sources, main.c compiled with main renamed to kt_cli_main, and runs
 * `keytree -s STORE load` in-process with the input as standard input
 * (a memfd) and the tool's stdio streams swapped for memory streams, so
 * that exactly the code users run is fuzzed.
 *
 * Properties checked, besides no crash, leak or undefined behaviour:
 *  - the exit status is 0 or 1 (2 is for usage errors, and the command
 *    line is always right);
 *  - a rejected load changes nothing: the store is as empty as before
 *    (DUMP.md: all or nothing), and it says why in a "keytree: " message
 *    (with KT_FUZZ_STRICT_MESSAGES=1: in exactly one line; the loader
 *    echoes an unknown field name raw, control bytes included, so this
 *    fails today: see docs/FUZZING.md);
 *  - an accepted one leaves a store that kt_check finds clean, and DUMP.md's
 *    round trip holds: its dump, loaded into another empty store and
 *    dumped again, is byte for byte the same.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"

int kt_cli_main(int argc, char **argv);

static char store_a[300], store_b[300];
static int strict_messages;
static int a_dirty = 1;	   /* store_a must be made again before use */
static char *empty_digest; /* of store_a as made, before any load */

/* Make an empty store at @p dir, replacing what is there. */
static void fresh_store(const char *dir)
{
	kt_options o = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	int rc;

	fz_rmtree(dir);
	o.create_if_missing = 1;
	if ((rc = kt_open(&st, dir, &o)) != 0)
		fz_fail("kt_open(create %s): %d (%s)", dir, rc, kt_errmsg());
	if (strcmp(dir, store_a) == 0) {
		free(empty_digest);
		empty_digest = fz_digest(st, "/");
	}
	kt_close(st);
}

typedef struct cli_out {
	char *out, *err; /* what the tool wrote, NUL-terminated */
	size_t outlen, errlen;
} cli_out;

static void cli_out_free(cli_out *o)
{
	free(o->out);
	free(o->err);
}

/* Run `keytree -s DIR CMD` with @p in as standard input; returns the exit
 * status. */
static int run_cli(cli_out *res, const char *dir, const char *cmd,
		   const void *in, size_t inlen)
{
	char a0[] = "keytree", a1[] = "-s", a3[16];
	char *a2 = strdup(dir);
	char *argv[] = {a0, a1, a2, a3, NULL};
	FILE *old_out = stdout, *old_err = stderr;
	int infd, saved_in, rc;

	if (a2 == NULL)
		abort();
	snprintf(a3, sizeof(a3), "%s", cmd);
	infd = memfd_create("kt-fuzz-in", 0);
	if (infd < 0 ||
	    (inlen > 0 && write(infd, in, inlen) != (ssize_t)inlen) ||
	    lseek(infd, 0, SEEK_SET) != 0)
		abort();
	saved_in = dup(STDIN_FILENO);
	if (saved_in < 0 || dup2(infd, STDIN_FILENO) < 0)
		abort();
	close(infd);
	memset(res, 0, sizeof(*res));
	stdout = open_memstream(&res->out, &res->outlen);
	stderr = open_memstream(&res->err, &res->errlen);
	if (stdout == NULL || stderr == NULL)
		abort();
	optind = 0; /* a full restart of getopt */
	rc = kt_cli_main(4, argv);
	fclose(stdout);
	fclose(stderr);
	stdout = old_out;
	stderr = old_err;
	if (dup2(saved_in, STDIN_FILENO) < 0)
		abort();
	close(saved_in);
	free(a2);
	return rc;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	strict_messages = getenv("KT_FUZZ_STRICT_MESSAGES") != NULL;
	snprintf(store_a, sizeof(store_a), "%s/a", fz_scratch());
	snprintf(store_b, sizeof(store_b), "%s/b", fz_scratch());
	return 0;
}

/* The store at @p dir must still be empty. */
static void check_empty(const char *dir, const cli_out *r)
{
	kt_store *st = NULL;
	char *d;
	int rc;

	if ((rc = kt_open(&st, dir, NULL)) != 0)
		fz_fail("kt_open after a failed load: %d (%s)", rc,
			kt_errmsg());
	d = fz_digest(st, "/");
	kt_close(st);
	if (strcmp(d, empty_digest) != 0)
		fz_fail("a failed load (%s) changed the store:\n%s", r->err, d);
	free(d);
}

static void check_store(const char *dir)
{
	kt_store *st = NULL;
	int rc;

	if ((rc = kt_open(&st, dir, NULL)) != 0)
		fz_fail("kt_open after a load: %d (%s)", rc, kt_errmsg());
	fz_check(st, "after a load");
	kt_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cli_out r, d1, d2, l2;
	int rc;

	if (a_dirty) {
		fresh_store(store_a);
		a_dirty = 0;
	}
	rc = run_cli(&r, store_a, "load", data, size);
	if (rc != 0) {
		if (rc != 1)
			fz_fail("load exited %d: %s", rc, r.err);
		if (strncmp(r.err, "keytree: ", 9) != 0)
			fz_fail("load failed without a 'keytree: ' message: "
				"'%s'",
				r.err);
		/* the message echoes parts of the input (a field name); with
		 * KT_FUZZ_STRICT_MESSAGES=1 it must still be one line */
		if (strict_messages &&
		    strchr(r.err, '\n') != r.err + r.errlen - 1)
			fz_fail("load failed without one 'keytree: ' line: "
				"'%s'",
				r.err);
		check_empty(store_a, &r);
		cli_out_free(&r);
		return 0;
	}
	cli_out_free(&r);
	a_dirty = 1;
	check_store(store_a);

	/* the round trip of DUMP.md */
	if ((rc = run_cli(&d1, store_a, "dump", "", 0)) != 0)
		fz_fail("dump after a load exited %d: %s", rc, d1.err);
	fresh_store(store_b);
	if ((rc = run_cli(&l2, store_b, "load", d1.out, d1.outlen)) != 0)
		fz_fail("loading a dump of a loaded store failed (%d): %s\n"
			"the dump:\n%s",
			rc, l2.err, d1.out);
	check_store(store_b);
	if ((rc = run_cli(&d2, store_b, "dump", "", 0)) != 0)
		fz_fail("second dump exited %d: %s", rc, d2.err);
	if (d1.outlen != d2.outlen || memcmp(d1.out, d2.out, d1.outlen) != 0)
		fz_fail("dump, load, dump differs:\n--- first\n%s--- second\n"
			"%s",
			d1.out, d2.out);
	cli_out_free(&d1);
	cli_out_free(&l2);
	cli_out_free(&d2);
	fz_rmtree(store_b);
	return 0;
}
