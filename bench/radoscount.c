/*
 * radoscount.c - libktradoscount.so, a shim in front of librados that
 * counts the operations a process sends to the cluster and the rounds
 * they take, for the RADOS benchmark (bench/run --rados).
 *
 * Loaded with LD_PRELOAD it comes before librados for a program linked
 * with it (the RADOS floor, eng_rados.c); named by KEYTREE_LIBRADOS as
 * well, it is what libkeytree loads instead of librados.so.2 (dlopen of a
 * file that is already loaded returns it, and symbols it does not define
 * are found in librados, on which it depends).  Each wrapped function
 * counts and then calls librados's own.
 *
 * An operation is one object operation sent: an aio or a synchronous
 * read or write operation, a remove.  A round begins when an operation is
 * sent while none is in flight; an aio operation is in flight from its
 * sending until its completion is first waited for or released.  So N
 * operations sent together and then waited for count as one round, and N
 * operations each waited for before the next count as N: the rounds are
 * the chain of network waits the caller sees.  (A window that never
 * drains, as the floor's 64 in flight over a large rename, counts once.)
 * An operation whose completion has a callback is one nobody waits for
 * (libkeytree applies a commit after its commit point that way): it is
 * counted as an operation, but neither begins a round nor keeps one open.
 *
 * kt_bench_api finds ktcount_read() with dlsym(RTLD_DEFAULT) and reports
 * the counts of each workload.  The counters are plain: the programs
 * measured send operations from one thread.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rados/librados.h>

#define TRACKED 4096

static uint64_t n_ops, n_rounds;
static long in_flight;
static rados_completion_t tracked[TRACKED];
static rados_completion_t background[TRACKED]; /* made with a callback */

/* librados's own definition of @p name. */
static void *real(const char *name)
{
	static void *lib;
	void *f;

	if (lib == NULL)
		lib = dlopen("librados.so.2", RTLD_NOW | RTLD_NOLOAD);
	f = lib != NULL ? dlsym(lib, name) : NULL;
	if (f == NULL) {
		fprintf(stderr, "radoscount: no %s in librados.so.2\n", name);
		abort();
	}
	return f;
}

#define LOAD(f, name) (*(void **)&(f) = real(#name))

/* An operation on @p oid goes out now.  With KTCOUNT_TRACE set, each is
 * told on stderr: the round's number, what it is, the object. */
static int in_background(rados_completion_t c)
{
	size_t i;

	for (i = 0; c != NULL && i < TRACKED; i++)
		if (background[i] == c)
			return 1;
	return 0;
}

static void count_on(const char *what, const char *oid, rados_completion_t c)
{
	static int trace = -1;

	n_ops++;
	if (in_flight == 0 && !in_background(c))
		n_rounds++;
	if (trace < 0)
		trace = getenv("KTCOUNT_TRACE") != NULL;
	if (trace)
		fprintf(stderr, "ktcount: round %llu: %s %s\n",
			(unsigned long long)n_rounds, what, oid);
}

static void count(const char *what, const char *oid)
{
	count_on(what, oid, NULL);
}

/* Aio operation @p c went out: in flight until waited for or released. */
static void track(rados_completion_t c)
{
	size_t i;

	if (in_background(c))
		return;
	for (i = 0; i < TRACKED; i++)
		if (tracked[i] == NULL) {
			tracked[i] = c;
			in_flight++;
			return;
		}
}

static void untrack(rados_completion_t c)
{
	size_t i;

	if (in_flight == 0)
		return;
	for (i = 0; i < TRACKED; i++)
		if (tracked[i] == c) {
			tracked[i] = NULL;
			in_flight--;
			return;
		}
}

/* Operations and rounds so far. */
void ktcount_read(uint64_t *ops, uint64_t *rounds);
void ktcount_read(uint64_t *ops, uint64_t *rounds)
{
	*ops = n_ops;
	*rounds = n_rounds;
}

int rados_aio_read_op_operate(rados_read_op_t op, rados_ioctx_t io,
			      rados_completion_t c, const char *oid, int flags)
{
	static __typeof__(rados_aio_read_op_operate) *f;
	int rc;

	if (f == NULL)
		LOAD(f, rados_aio_read_op_operate);
	count_on("aio read", oid, c);
	if ((rc = f(op, io, c, oid, flags)) == 0)
		track(c);
	return rc;
}

int rados_aio_write_op_operate(rados_write_op_t op, rados_ioctx_t io,
			       rados_completion_t c, const char *oid,
			       time_t *mtime, int flags)
{
	static __typeof__(rados_aio_write_op_operate) *f;
	int rc;

	if (f == NULL)
		LOAD(f, rados_aio_write_op_operate);
	count_on("aio write", oid, c);
	if ((rc = f(op, io, c, oid, mtime, flags)) == 0)
		track(c);
	return rc;
}

int rados_aio_remove(rados_ioctx_t io, const char *oid, rados_completion_t c)
{
	static __typeof__(rados_aio_remove) *f;
	int rc;

	if (f == NULL)
		LOAD(f, rados_aio_remove);
	count_on("aio remove", oid, c);
	if ((rc = f(io, oid, c)) == 0)
		track(c);
	return rc;
}

int rados_aio_wait_for_complete(rados_completion_t c)
{
	static __typeof__(rados_aio_wait_for_complete) *f;

	if (f == NULL)
		LOAD(f, rados_aio_wait_for_complete);
	untrack(c);
	return f(c);
}

void rados_aio_release(rados_completion_t c)
{
	static __typeof__(rados_aio_release) *f;
	size_t i;

	if (f == NULL)
		LOAD(f, rados_aio_release);
	untrack(c);
	for (i = 0; i < TRACKED; i++)
		if (background[i] == c)
			background[i] = NULL;
	f(c);
}

int rados_aio_create_completion2(void *arg, rados_callback_t cb,
				 rados_completion_t *pc)
{
	static __typeof__(rados_aio_create_completion2) *f;
	size_t i;
	int rc;

	if (f == NULL)
		LOAD(f, rados_aio_create_completion2);
	rc = f(arg, cb, pc);
	if (rc == 0 && cb != NULL)
		for (i = 0; i < TRACKED; i++)
			if (background[i] == NULL) {
				background[i] = *pc;
				break;
			}
	return rc;
}

int rados_read_op_operate(rados_read_op_t op, rados_ioctx_t io,
			  const char *oid, int flags)
{
	static __typeof__(rados_read_op_operate) *f;

	if (f == NULL)
		LOAD(f, rados_read_op_operate);
	count("read", oid);
	return f(op, io, oid, flags);
}

int rados_write_op_operate(rados_write_op_t op, rados_ioctx_t io,
			   const char *oid, time_t *mtime, int flags)
{
	static __typeof__(rados_write_op_operate) *f;

	if (f == NULL)
		LOAD(f, rados_write_op_operate);
	count("write", oid);
	return f(op, io, oid, mtime, flags);
}

int rados_remove(rados_ioctx_t io, const char *oid)
{
	static __typeof__(rados_remove) *f;

	if (f == NULL)
		LOAD(f, rados_remove);
	count("remove", oid);
	return f(io, oid);
}
