/*
 * bench.h - what the API benchmark's driver (api.c) and its engines
 * (eng_*.c) share: the data set's shape, the engine table, and helpers.
 *
 * Every engine holds the same data set: N items of 100 bytes at depth 4
 * (/tA/uB/vC/iD, 10 items per leaf directory, 10^4 per top-level
 * directory), a directory /big with a large number of items, and a
 * directory /l of symbolic links to items.  The driver times the same
 * operations, in the same (seeded) order, on each engine.
 *
 * The alias workloads (kt_bench_api -w alias) run on a store of their own
 * and only on engines with the alias functions (keytree): the N items,
 * each given one further path /sA/uB/vC/iD (kt_link), and groups of items
 * with 1, 2, 4 and 8 paths under /pK.
 */
#ifndef KT_BENCH_H
#define KT_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define BENCH_VALUE_LEN 100
#define BENCH_PATH_MAX	256

/** What one run holds and does. */
typedef struct bench_params {
	const char *dir; /**< the engine's own directory, made by the driver */
	long n;		 /**< items at depth 4 */
	long nbig;	 /**< items in /big */
	long nlinks;	 /**< links in /l */
	int check;	 /**< verify the floor's rows with kt_check */
	/** When not 0, the skeleton holds the leaf directories of the items
	 * i with i % 10^4 < per_top only (the clients workload). */
	long per_top;
} bench_params;

/** One implementation of the workloads.  Functions return 0 or -1 (with a
 * message on stderr); counting ones return the count or -1. */
typedef struct bench_engine {
	const char *name;
	/** Create the empty store with the directory skeleton, /big and
	 * /l (untimed). */
	int (*open)(void **ctx, const bench_params *p);
	/** Open a store made by open() in another process, without the
	 * skeleton (the clients workload), or NULL. */
	int (*attach)(void **ctx, const bench_params *p);
	/** Close and open again, so the data reaches its resting form. */
	int (*reopen)(void *ctx);
	int (*put)(void *ctx, long i);	    /**< insert item i */
	int (*get)(void *ctx, long i);	    /**< read item i's value */
	int (*get_link)(void *ctx, long k); /**< read through link k */
	long (*find)(void *ctx);	    /**< list every node under /t* */
	long (*list_big)(void *ctx);	    /**< list /big */
	int (*rename)(void *ctx, const char *from, const char *to);
	long (*delete_all)(void *ctx); /**< remove every top-level dir */
	void (*close)(void *ctx);
	/* The alias workloads; NULL where the engine has no aliases. */
	/** Write item i's value (or another, @p i being any number) at
	 * @p path, creating the item or replacing the value of the one
	 * there, through any of its paths. */
	int (*put_path)(void *ctx, const char *path, long i);
	/** Give the node at @p existing the further path @p newpath. */
	int (*link)(void *ctx, const char *existing, const char *newpath);
	/** Read the value at @p path (BENCH_VALUE_LEN bytes). */
	int (*get_path)(void *ctx, const char *path);
	/** Verify the store's rows (with -c), or NULL. */
	int (*check)(void *ctx);
	/* Random writes into a large value (-w rwrite); NULL where the
	 * engine has none. */
	/** Make the value at @p path: @p size bytes, @p data (@p dlen
	 * bytes, repeated) written in pieces of @p dlen as a copy through
	 * the mount writes them; then close and open the store (untimed). */
	int (*rw_make)(void *ctx, const char *path, uint64_t size,
		       const unsigned char *data, size_t dlen);
	/** Write the 4096 bytes at @p buf at offset @p off (a multiple of
	 * 4096) of the value at @p path. */
	int (*rw_write)(void *ctx, const char *path, const void *buf,
			uint64_t off);
} bench_engine;

extern const bench_engine bench_keytree;
extern const bench_engine bench_floor;
extern const bench_engine bench_sqlite;
extern const bench_engine bench_fs;
#ifdef KT_BENCH_RADOS
extern const bench_engine bench_rados;
#endif

/* The data set's names (api.c). */
void bench_item_path(char *buf, long i);
void bench_item_dir(char *buf, long i);
void bench_item_name(char *buf, long i);
void bench_big_name(char *buf, long j);
void bench_link_name(char *buf, long k);
void bench_alias_path(char *buf, long i);
void bench_paths_path(char *buf, int k, int m, long j);
long bench_link_target(const bench_params *p, long k);
const unsigned char *bench_value(long i);
long bench_top_dirs(const bench_params *p);

/* Helpers (api.c). */
int bench_fail(const char *what, const char *detail);
uint64_t bench_disk_bytes(const char *dir);

/* The keytree store skeleton shared by the keytree engine and the floor,
 * made through the library (eng_keytree.c). */
struct kt_store;
int bench_kt_skeleton(struct kt_store *st, const bench_params *p);
/* Write the value of rw_make through the library (eng_keytree.c). */
int bench_kt_fill(struct kt_store *st, const char *path, uint64_t size,
		  const unsigned char *data, size_t dlen);

/* The LevelDB block cache of keytree and the floor alike: $KT_BENCH_CACHE_MB
 * mebibytes, or the library's default, 8 MiB. */
static inline size_t bench_cache_bytes(void)
{
	const char *v = getenv("KT_BENCH_CACHE_MB");
	long mb = v != NULL ? strtol(v, NULL, 10) : 0;

	return (size_t)(mb > 0 ? mb : 8) << 20;
}

#endif /* KT_BENCH_H */
