/*
 * fuzz_ops.c - operation sequences chosen by the fuzzer, applied both to a
 * store and to the reference model of tests/test_model.c.
 *
 * The model, the operation generator and every comparison are those of
 * tests/test_model.c (see its opening comment for the operations, the
 * decisions the model takes where keytree.h leaves a corner open, and what
 * is compared after each step).  What differs here:
 *  - every random choice rn(n) reads the next byte (two bytes when n is
 *    over 256) of the fuzz input instead of a PRNG, so the fuzzer steers
 *    which operations, paths, flags, link targets and batches come; when
 *    the input is used up the run ends with a comparison of the whole tree
 *    (check_all: kt_find_new, every node in detail, kt_check);
 *  - value bytes come from a small generator seeded by one input byte;
 *  - the name alphabet also holds the default delimiter's halves (C2, A6,
 *    "a" C2), so that names meet the delimiter where keys are joined;
 *  - each input starts from a new, empty store on tmpfs, and a choice now
 *    and then closes and reopens it (the visible state must be unchanged);
 *  - an input of odd length gets a store made with typed names (FORMAT.md
 *    §3a) and the model's typed alphabet (numbers, "007", a UUID) and
 *    order, so the fuzzer reaches both kinds of store.
 * Any difference aborts with the step, the call and expected versus
 * actual; KT_FUZZ_VERBOSE=1 prints every step when replaying an input.
 *
 * The model, the generator, the comparisons and the driver are the
 * kt_model library (tests/model.h), shared with tests/test_model.c, so a
 * change of the specification there is a change here too; this file only
 * feeds it the input and reports a difference by aborting.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "model.h"

#define MAX_STEPS 400UL

static void model_fail(mctx *c, const char *what)
{
	fz_fail("model mismatch at step %lu\n  op: %s\n  %s", c->step, c->desc,
		what);
}

/* fz_digest of the whole store, for model_reopen. */
static char *digest(kt_store *st)
{
	return fz_digest(st, "/");
}

static char store_path[300];
static kt_store *store;
static FILE *log_to;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(store_path, sizeof(store_path), "%s/store", fz_scratch());
	log_to = getenv("KT_FUZZ_VERBOSE") != NULL ? stderr : NULL;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kt_options o = KT_OPTIONS_INIT;
	model_config cfg = {0};
	mctx *c;
	int rc;

	fz_rmtree(store_path);
	o.create_if_missing = 1;
	o.typed_names = (int)(size & 1);
	if ((rc = kt_open(&store, store_path, &o)) != 0)
		fz_fail("kt_open: %d (%s)", rc, kt_errmsg());
	cfg.store = &store;
	cfg.path = store_path;
	cfg.digest = digest;
	cfg.fail = model_fail;
	cfg.delimiter_names = 1;
	cfg.typed_names = o.typed_names;
	cfg.log = log_to;
	cfg.reopen_chance = 64;
	if ((c = model_new(&cfg)) == NULL)
		fz_fail("model_new: out of memory");
	model_use_bytes(c, data, size);
	model_run(c, MAX_STEPS);
	model_free(c);
	kt_close(store);
	store = NULL;
	return 0;
}
