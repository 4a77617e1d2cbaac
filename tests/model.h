/*
 * model.h - the reference model of the tree operations and its driver, a
 * test-support library (kt_model, tests/model.c) shared by the model-based
 * test (tests/test_model.c, choices from a seeded PRNG) and the fuzz target
 * (fuzz/fuzz_ops.c, choices read from the fuzz input).
 *
 * The model holds the tree in memory, written straight from the comments
 * in keytree.h; the driver generates an operation, applies it to both the
 * model and a store, and compares the result codes and then everything a
 * reader can see at the paths the operation is about.  tests/test_model.c's
 * opening comment describes what is generated and compared, and the
 * decisions the model takes where keytree.h leaves a corner open.
 *
 * Use: fill a model_config, model_new(), pick the source of choices
 * (model_use_prng() or model_use_bytes()), then model_run() (or
 * model_step() / model_do_op() and model_end_step() for hand-made steps),
 * and model_free().  A difference is reported through the config's fail
 * callback, which must not return.  A broken invariant of the model itself
 * (an allocation failure, a path longer than MODEL_PBUF) prints where and
 * aborts.
 *
 * Not thread-safe: one context belongs to one thread.
 */
#ifndef KT_MODEL_H
#define KT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "keytree.h"

#define MODEL_PBUF   4352  /* a path buffer, the longest generated path */
#define MODEL_BIGVAL 20000 /* the largest generated value */

/* ------------------------------------------------------------------------
 * Containers */

/* A list of strings owned by the list. */
typedef struct strlist {
	char **v;
	size_t n, cap;
} strlist;

/* A set of 64-bit numbers (open addressing; 0 is kept aside). */
typedef struct u64set {
	uint64_t *v;
	size_t n, cap;
	int has_zero;
} u64set;

/* ------------------------------------------------------------------------
 * The model: nodes in an array sorted by path (strcmp is byte order). */

/* mobj.vstate: what the next observed version of a node must be. */
enum { V_KNOWN, V_DIRTY, V_NEW };

typedef struct mattr {
	char *name;
	unsigned char *val;
	size_t len;
} mattr;

/* A node itself: everything but its path.  A node given further paths
 * with kt_link() is one mobj shared by several mnodes, so that a change
 * through any path is seen through all of them. */
typedef struct mobj {
	unsigned int kind;
	unsigned char *val; /* ITEM: the value */
	size_t vlen;
	char *target; /* LINK: the target */
	unsigned int type; /* SPECIAL: KT_TYPE_* */
	uint64_t rdev;	   /* SPECIAL: the device number */
	mattr *attrs; /* sorted by name */
	size_t nattrs;
	uint64_t id;	    /* 0 until first observed */
	uint64_t ver;	    /* last observed version */
	int vstate;	    /* V_*: what the next observed version must be */
	uint32_t mode;	    /* the default mode it was made with; 0 once an
			       item became item+dir or the reverse, where
			       keytree.h does not say */
	uint32_t nlink;	    /* paths (mnodes) sharing it */
	struct mobj *copy;  /* m_clone: its copy */
} mobj;

/* One path of a node. */
typedef struct mnode {
	char *path;
	mobj *b;
	unsigned long mark; /* check_all: epoch in which find reported it */
} mnode;

typedef struct model {
	mnode **v;
	size_t n, cap;
} model;

/* ------------------------------------------------------------------------
 * Operations */

enum {
	OP_PUT,
	OP_MKDIR,
	OP_SYMLINK,
	OP_DELETE,
	OP_RENAME,
	OP_ATTR_SET,
	OP_ATTR_DELETE,
	OP_MKNOD,
	OP_LINK,
	OP_WRITE,
	OP_TRUNCATE,
	OP_SETATTR,
	OP_BATCH,
	OP__COUNT
};

#define NRC 22 /* result codes 0 .. -21 counted per operation */

/* One operation, as generated and applied. */
typedef struct model_op {
	int type;		/* OP_* */
	char p1[MODEL_PBUF]; /* the path (rename: src; link: existing) */
	char p2[MODEL_PBUF]; /* rename: dst; symlink: target; link: newpath */
	unsigned int flags;
	int null_opts; /* pass NULL options (flags are 0) */
	const char *aname;
	unsigned char *val; /* MODEL_BIGVAL bytes, owned by the context */
	size_t vlen;
	unsigned int ftype; /* mknod: KT_TYPE_* (or a bad one) */
	uint64_t rdev;	    /* mknod: the device number */
	uint64_t off;	    /* write: the offset; truncate: the size */
	uint32_t smode;	    /* setattr: the mode */
} model_op;

/* ------------------------------------------------------------------------
 * The context */

typedef struct mctx mctx;

/* What the user of the library provides; copied by model_new(). */
typedef struct model_config {
	/* The store under test: the caller's handle, which model_reopen()
	 * replaces (so a fixture's teardown closes the right one). */
	kt_store **store;
	/* The store's directory, for model_reopen(). */
	const char *path;
	/* The whole visible state of a store as a string the caller frees
	 * with free(), for model_reopen() to compare; NULL: no reopening. */
	char *(*digest)(kt_store *st);
	/* Report a difference (or a broken expectation) and do not return:
	 * fail the test, abort, or exit.  @p what says what differed; the
	 * step is in c->step and its operation in c->desc. */
	void (*fail)(mctx *c, const char *what);
	/* The first seed of the PRNG (model_new() compares the empty root
	 * with choices drawn from it). */
	uint64_t seed;
	/* Add the default delimiter's halves (C2, A6, "a" C2) to the name
	 * alphabet, so that names meet the delimiter where keys are
	 * joined. */
	int delimiter_names;
	/* The store was made with typed names (kt_options.typed_names): the
	 * alphabet holds numbers, a non-canonical number and a UUID, and
	 * listings are expected in the typed order (numbers by value, then
	 * UUIDs, then other names by bytes), finds by the typed prefix rule
	 * (keytree.h, kt_find_new). */
	int typed_names;
	/* Where every step is printed; NULL: quiet. */
	FILE *log;
	/* model_run(): compare the whole tree after every check_every steps;
	 * reopen the store in the middle of every reopen_every steps, and
	 * when a choice among reopen_chance comes out 0 (0: never). */
	unsigned long check_every;
	unsigned long reopen_every;
	unsigned int reopen_chance;
	/* The caller's own. */
	void *user;
} model_config;

/* The state of a run.  Fields below are read (and a few set) by users; the
 * library owns the memory. */
struct mctx {
	model_config cfg;
	kt_store **store; /* cfg.store */
	model m;

	/* the source of choices (model_use_prng, model_use_bytes) */
	uint64_t seed, rng;
	const uint8_t *in; /* the bytes still to decode */
	size_t inlen;
	int from_bytes;
	int exhausted; /* a choice ran past the end of the bytes */
	unsigned int nnames; /* names of the alphabet in use */
	const char *const *names; /* the alphabet (cfg.typed_names) */

	unsigned long step;
	char desc[MODEL_PBUF * 2 + 256]; /* the current step, for messages */
	int step_failed;	   /* the current step's op was rejected */
	int last_rc;		   /* the code of the last model_do_op */
	strlist plan;	 /* walk_parent: "c<path>" create, "v<path>" convert */
	strlist touched; /* real paths of nodes the step created or wrote */
	strlist checks;	 /* paths compared after the step */
	u64set versions; /* versions observed in earlier steps */
	u64set step_versions;
	unsigned long epoch;
	unsigned long count[OP__COUNT][NRC]; /* codes seen per operation */
	size_t max_nodes;   /* most paths at one time */
	size_t max_aliases; /* most paths beyond a node's first at one time */
	unsigned long nchecks;
	model_op o;
	model_op sub[4]; /* OP_BATCH: the operations recorded */
	size_t nsub;
	size_t bad_sub; /* model_batch: index of the failing operation */
};

/* The names of the operations, by OP_*. */
extern const char *const model_op_names[OP__COUNT];

/* A context whose model holds only the root, for an empty store, compared
 * with it at once.  Choices come from a PRNG seeded with cfg->seed.
 * Returns NULL when out of memory. */
mctx *model_new(const model_config *cfg);

/* Choose the alphabet again after c->cfg.typed_names or
 * c->cfg.delimiter_names changed (before the first step). */
void model_retune(mctx *c);

/* Release @p c (NULL is fine); the store stays open. */
void model_free(mctx *c);

/* Take the following choices from splitmix64 seeded with @p seed. */
void model_use_prng(mctx *c, uint64_t seed);

/* Take the following choices from @p len bytes at @p in (borrowed until
 * the run ends): one byte for up to 256 choices, two for more.  Past the
 * end every choice is 0, c->exhausted is set, and model_run() stops after
 * the step in progress.  Value bytes come from a small generator seeded by
 * one byte, so that a large value costs one byte of input. */
void model_use_bytes(mctx *c, const uint8_t *in, size_t len);

/* A choice in [0, n) from the context's source. */
unsigned int model_choose(mctx *c, unsigned int n);

/* Run up to @p nsteps random steps (fewer if the bytes run out) with the
 * config's comparisons and reopenings, then compare the whole tree. */
void model_run(mctx *c, unsigned long nsteps);

/* One random step: an operation (now and then a batch) applied to both,
 * then the paths it is about and two random ones compared. */
void model_step(mctx *c);

/* Apply c->o (a batch: c->sub[0 .. c->nsub)) to the model and the store,
 * compare the codes (and a failure's message, and that it wrote nothing),
 * then the paths the operation is about and @p extra.  The code is left in
 * c->last_rc. */
void model_do_op(mctx *c, const char *const *extra, size_t nextra);

/* End a step: its observed versions join the earlier ones. */
void model_end_step(mctx *c);

/* Close and reopen the store; everything visible must be as it was. */
void model_reopen(mctx *c);

/* Compare the whole tree: kt_find_new over "/" and random subtrees, every
 * node by path and by id, kt_stats, and kt_check. */
void model_check_all(mctx *c);

/* Generate a random operation into @p o (not a batch), as model_step()
 * does, without applying it. */
void model_gen_op(mctx *c, model_op *o);

/* The attribute names model_op.aname is chosen from (*n of them), for a
 * caller that records operations by index. */
const char *const *model_attr_names(size_t *n);

/* Set c->desc to describe @p o. */
void model_describe(mctx *c, const model_op *o);

/* Apply @p o to the model only, or to the store only; the result code. */
int model_apply(mctx *c, const model_op *o);
int model_store_apply(mctx *c, const model_op *o);

/* The node at @p path in the model (no links followed), or NULL. */
mnode *model_find(mctx *c, const char *path);

/* A result code's name ("KT_ENOTFOUND"); the buffer of an unknown one is
 * static. */
const char *model_rcname(int rc);

/* Report a difference through cfg.fail (printf-style); does not return. */
void model_mismatch(mctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

#endif /* KT_MODEL_H */
