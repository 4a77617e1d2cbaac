/*
 * rows_remote.c - the remote engine: the storage seam (rows.h) of a store
 * that another process holds, reached over its socket (server.c describes
 * the protocol).  Every call is one request and its reply on the handle's
 * one connection; a mutex around each round trip lets the threads sharing
 * a kt_store share the connection.  A cursor gets its rows from the holder
 * in batches and hands them out one by one.
 *
 * When the holder goes away (the connection ends or is reset), every call,
 * then and after, fails with KT_EIO and a message saying so; nothing waits
 * for an answer that cannot come.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

typedef struct kt__rwatch kt__rwatch;

typedef struct kt__remote {
	kt__rows base;
	char *dir;          /* the store directory, for a second connection */
	kt__rwatch *watch;  /* the notes of other processes' commits */
	int fd;
	long pid;           /* the holder's */
	pthread_mutex_t mu; /* one round trip at a time; protects dead */
	int dead;           /* the connection is gone */
	int dead_errno;     /* why: 0 for the holder exiting */
	/* While this process moves or deletes a large subtree in steps
	 * (ops.c): the connection that holds its fence on the holder, and
	 * the thread whose calls go through it.  Everyone else's go through
	 * this one, so the holder tells them KT__EFENCED. */
	struct kt__remote *side;
	pthread_t side_owner;
} kt__remote;

/* The connection the calling thread's calls go through. */
static struct kt__remote *route(struct kt__remote *rm)
{
	struct kt__remote *side = __atomic_load_n(&rm->side, __ATOMIC_ACQUIRE);

	if (side != NULL && pthread_equal(rm->side_owner, pthread_self()))
		return side;
	return rm;
}

/* A cursor: one batch of rows at a time. */
typedef struct kt__rcur {
	kt__remote *rm;
	uint64_t h;      /* the holder's cursor; 0 once it has ended */
	kt__buf frame;   /* the reply holding the batch */
	kt__wire_in in;  /* reading the batch's rows */
	uint32_t left;   /* rows of the batch not yet handed out */
	int end;         /* after them: 0 more, KT_ITEROVER or an error */
	kt__buf endmsg;  /* the error's message */
} kt__rcur;

/* A watch: a second connection, turned into a stream of notes by
 * LISTEN, and the thread that reads them. */
struct kt__rwatch {
	kt__remote *lis;
	kt__notify_fn fn;
	void *arg;
	pthread_t th;
};

static const kt__rows_ops remote_ops;

/* The error of a call on a dead connection. */
static int dead_err(const kt__remote *rm)
{
	if (rm->dead_errno == 0)
		return kt__err(KT_EIO, "the process holding the store (pid "
			       "%ld) has exited or closed it; open the store "
			       "again",
			       rm->pid);
	return kt__err(KT_EIO, "lost the connection to the process holding "
		       "the store (pid %ld): %s; open the store again",
		       rm->pid, strerror(rm->dead_errno));
}

/* Send @p req and, unless @p noreply, receive the reply into @p rep, then
 * read its status and message: the status is returned (a failed call's
 * message set as the holder gave it), and @p in is left at the reply's
 * fields.  KT_EIO when the connection fails. */
static int round_trip(kt__remote *rm, kt__buf *req, kt__buf *rep,
		      kt__wire_in *in, int noreply)
{
	kt__slice msg;
	int rc, io;

	pthread_mutex_lock(&rm->mu);
	if (rm->dead) {
		rc = dead_err(rm);
		pthread_mutex_unlock(&rm->mu);
		return rc;
	}
	io = kt__wire_send(rm->fd, req);
	if (io == 0 && !noreply)
		io = kt__wire_recv(rm->fd, rep, KT__FRAME_MAX);
	if (io != 0) {
		int e = io == 1 ? 0 : errno;

		/* The holder's end: it exited (end of stream, reset, a
		 * broken pipe) or sent something this side cannot read. */
		rm->dead = 1;
		rm->dead_errno = e == ECONNRESET || e == EPIPE ? 0 : e;
		shutdown(rm->fd, SHUT_RDWR);
		rc = dead_err(rm);
		pthread_mutex_unlock(&rm->mu);
		return rc;
	}
	pthread_mutex_unlock(&rm->mu);
	if (noreply)
		return 0;
	in->p = (const unsigned char *)rep->p;
	in->len = rep->len;
	in->pos = 0;
	in->bad = 0;
	rc = (int)kt__wire_get_u32(in);
	msg = kt__wire_get_bytes(in);
	if (in->bad)
		return kt__err(KT_EIO, "the holder of the store (pid %ld) sent "
			       "a reply cut short", rm->pid);
	if (msg.len > 0)
		kt__err(rc, "%.*s", (int)msg.len, msg.p);
	return rc;
}

static int bad_reply(const kt__remote *rm)
{
	return kt__err(KT_EIO, "the holder of the store (pid %ld) sent a "
		       "malformed reply", rm->pid);
}

/* A snapshot is taken on the holder lazily, by the first read through
 * it (GET or SCAN with "take"), which saves a round trip per transaction:
 * a transaction's snapshot and its first read are one request.  Until
 * then its handle is 0.  A snapshot is used by one thread at a time. */
typedef struct kt__rsnap {
	uint64_t h;
	struct kt__remote *conn; /* the connection it was taken on */
} kt__rsnap;

static uint64_t snap_handle(const kt__snap *s)
{
	return s != NULL ? ((const kt__rsnap *)s)->h : 0;
}

/* Does a read through @p s take the snapshot first? */
static int snap_take(const kt__snap *s)
{
	return s != NULL && ((const kt__rsnap *)s)->h == 0;
}

/* After a read that asked to take snapshot @p s: its handle, from the
 * reply at @p in (which holds it whatever the status). */
static int snap_taken(kt__remote *rm, const kt__snap *s, kt__wire_in *in)
{
	uint64_t h = kt__wire_get_u64(in);

	if (in->bad)
		return bad_reply(rm);
	((kt__rsnap *)(uintptr_t)s)->h = h;
	((kt__rsnap *)(uintptr_t)s)->conn = rm;
	return 0;
}

static int remote_get(kt__rows *r, const kt__snap *snap, kt__slice part,
		      kt__slice sort, kt__buf *out)
{
	kt__remote *rm = route((kt__remote *)r);
	kt__buf req = {0}, rep = {0};
	kt__wire_in in;
	kt__slice v;
	unsigned int waits = 0;
	int rc, take;

again:
	take = snap_take(snap);
	req.len = 0;
	if (kt__wire_begin(&req, KT__OP_GET) != 0 ||
	    kt__wire_u64(&req, snap_handle(snap)) != 0 ||
	    kt__wire_u8(&req, (unsigned int)take) != 0 ||
	    kt__wire_bytes(&req, part) != 0 ||
	    kt__wire_bytes(&req, sort) != 0) {
		kt__buf_free(&req);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	in.p = NULL;
	rc = round_trip(rm, &req, &rep, &in, 0);
	if (take && in.p != NULL && !rm->dead) {
		int trc = snap_taken(rm, snap, &in);
		if (trc != 0)
			rc = trc;
	}
	if (rc == KT__EFENCED && !kt__fence_hint) {
		kt__fence_pause(&waits); /* the connection stays free */
		goto again;
	}
	if (rc == 0) {
		v = kt__wire_get_bytes(&in);
		rc = in.bad ? bad_reply(rm) : kt__buf_set(out, v.p, v.len);
	}
	kt__buf_free(&req);
	kt__buf_free(&rep);
	return rc;
}

/* Take the batch in c->frame (read up to its rows): the cursor handle and
 * the count.  0, or an error. */
static int batch_take(kt__rcur *c)
{
	c->h = kt__wire_get_u64(&c->in);
	c->left = kt__wire_get_u32(&c->in);
	if (c->in.bad || c->left > (c->in.len - c->in.pos) / 12)
		return bad_reply(c->rm);
	return 0;
}

/* The end of the batch, after its last row. */
static int batch_end(kt__rcur *c)
{
	kt__slice msg;

	c->end = (int)kt__wire_get_u32(&c->in);
	msg = kt__wire_get_bytes(&c->in);
	if (c->in.bad || c->end > 0)
		return bad_reply(c->rm);
	if (kt__buf_set(&c->endmsg, msg.p, msg.len) != 0)
		return kt__err(KT_ENOMEM, "out of memory");
	return 0;
}

static int remote_scan(kt__cursor **out, kt__rows *r, const kt__snap *snap,
		       const kt__scan *how)
{
	kt__remote *rm = route((kt__remote *)r);
	kt__buf req = {0};
	kt__rcur *c;
	unsigned int waits = 0;
	int rc, take;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	c->rm = rm;
again:
	take = snap_take(snap);
	c->in.p = NULL;
	req.len = 0;
	if (kt__wire_begin(&req, KT__OP_SCAN) != 0 ||
	    kt__wire_u64(&req, snap_handle(snap)) != 0 ||
	    kt__wire_u8(&req, (unsigned int)take) != 0 ||
	    kt__wire_u32(&req, how->flags) != 0 ||
	    kt__wire_bytes(&req, how->part) != 0 ||
	    kt__wire_bytes(&req, how->after) != 0 ||
	    kt__wire_bytes(&req, how->from) != 0)
		rc = kt__err(KT_ENOMEM, "out of memory");
	else
		rc = round_trip(rm, &req, &c->frame, &c->in, 0);
	if (take && c->in.p != NULL && !rm->dead) {
		int trc = snap_taken(rm, snap, &c->in);
		if (trc != 0)
			rc = trc;
	}
	if (rc == KT__EFENCED) {
		kt__fence_pause(&waits); /* the connection stays free */
		goto again;
	}
	if (rc == 0)
		rc = batch_take(c);
	kt__buf_free(&req);
	if (rc != 0) {
		kt__buf_free(&c->frame);
		free(c);
		return rc;
	}
	*out = (kt__cursor *)c;
	return 0;
}

/* The cursor failed with @p rc (message set): it stays failed, and the
 * holder's cursor is left to the connection's end. */
static int cursor_fail(kt__rcur *c, int rc)
{
	const char *m = kt_errmsg();

	c->left = 0;
	c->end = rc;
	c->h = 0;
	c->in.pos = c->in.len;
	kt__buf_set(&c->endmsg, m, strlen(m));
	return rc;
}

static int remote_next(kt__cursor *cur, kt__row *row)
{
	kt__rcur *c = (kt__rcur *)cur;
	kt__buf req = {0};
	int rc;

	while (c->left == 0) {
		if (c->end == 0 && c->in.pos < c->in.len &&
		    (rc = batch_end(c)) != 0)
			return cursor_fail(c, rc);
		if (c->end != 0) {
			if (c->end == KT_ITEROVER)
				return KT_ITEROVER;
			return kt__err(c->end, "%s",
				       c->endmsg.p ? c->endmsg.p : "");
		}
		if (kt__wire_begin(&req, KT__OP_NEXT) != 0 ||
		    kt__wire_u64(&req, c->h) != 0) {
			kt__buf_free(&req);
			return kt__err(KT_ENOMEM, "out of memory");
		}
		rc = round_trip(c->rm, &req, &c->frame, &c->in, 0);
		kt__buf_free(&req);
		if (rc == 0)
			rc = batch_take(c);
		if (rc != 0)
			return cursor_fail(c, rc);
	}
	row->part = kt__wire_get_bytes(&c->in);
	row->sort = kt__wire_get_bytes(&c->in);
	row->value = kt__wire_get_bytes(&c->in);
	if (c->in.bad)
		return cursor_fail(c, bad_reply(c->rm));
	c->left--;
	return 0;
}

static void remote_cursor_free(kt__cursor *cur)
{
	kt__rcur *c = (kt__rcur *)cur;
	kt__buf req = {0};

	if (c == NULL)
		return;
	/* A cursor whose last batch has arrived, the common case, is gone
	 * on the holder already (its handle reads 0). */
	if (c->h != 0 && kt__wire_begin(&req, KT__OP_CURSOR_FREE) == 0 &&
	    kt__wire_u64(&req, c->h) == 0)
		round_trip(c->rm, &req, NULL, NULL, 1);
	kt__buf_free(&req);
	kt__buf_free(&c->frame);
	kt__buf_free(&c->endmsg);
	free(c);
}

static int remote_snapshot(kt__snap **out, kt__rows *r)
{
	kt__rsnap *rs = calloc(1, sizeof(*rs));

	(void)r;
	*out = (kt__snap *)rs;
	return rs != NULL ? 0 : kt__err(KT_ENOMEM, "out of memory");
}

static void remote_snapshot_free(kt__rows *r, kt__snap *snap)
{
	kt__remote *rm = (kt__remote *)r;
	kt__buf req = {0};

	if (snap == NULL)
		return;
	if (((kt__rsnap *)snap)->conn != NULL)
		rm = ((kt__rsnap *)snap)->conn;
	if (snap_handle(snap) != 0 &&
	    kt__wire_begin(&req, KT__OP_SNAPSHOT_FREE) == 0 &&
	    kt__wire_u64(&req, snap_handle(snap)) == 0)
		round_trip(rm, &req, NULL, NULL, 1);
	kt__buf_free(&req);
	free(snap);
}

static int scan_put(kt__buf *b, const kt__scan *how)
{
	int rc = kt__wire_u32(b, how->flags);

	if (rc == 0)
		rc = kt__wire_bytes(b, how->part);
	if (rc == 0)
		rc = kt__wire_bytes(b, how->after);
	if (rc == 0)
		rc = kt__wire_bytes(b, how->from);
	return rc;
}

static int remote_commit(kt__rows *r, const kt__commit *cm)
{
	kt__remote *rm = route((kt__remote *)r);
	kt__buf req = {0}, rep = {0};
	kt__wire_in in;
	unsigned int waits = 0;
	size_t i;
	int rc;

	if (cm->nw > UINT32_MAX || cm->nc > UINT32_MAX)
		return kt__err(KT_ETOOBIG, "a commit of %zu rows is too large "
			       "to send to the holder", cm->nw);
	rc = kt__wire_begin(&req, KT__OP_COMMIT);
	if (rc == 0)
		rc = kt__wire_u64(&req, snap_handle(cm->snap));
	if (rc == 0)
		rc = kt__wire_u8(&req, cm->sync != 0);
	if (rc == 0)
		rc = kt__wire_u32(&req, (uint32_t)cm->nw);
	for (i = 0; rc == 0 && i < cm->nw; i++) {
		const kt__write *w = &cm->w[i];
		int del = w->del || w->value.p == NULL;

		rc = kt__wire_bytes(&req, w->part);
		if (rc == 0)
			rc = kt__wire_bytes(&req, w->sort);
		if (rc == 0)
			rc = kt__wire_u8(&req, (unsigned int)del);
		if (rc == 0)
			rc = kt__wire_bytes(&req,
					    del ? kt__sl("", 0) : w->value);
	}
	if (rc == 0)
		rc = kt__wire_u32(&req, (uint32_t)cm->nc);
	for (i = 0; rc == 0 && i < cm->nc; i++) {
		const kt__cond *c = &cm->c[i];

		rc = kt__wire_u8(&req, (unsigned int)c->kind);
		if (rc == 0)
			rc = kt__wire_bytes(&req, c->part);
		if (rc == 0)
			rc = kt__wire_bytes(&req, c->sort);
		if (rc == 0)
			rc = scan_put(&req, &c->how);
		if (rc == 0)
			rc = kt__wire_u64(&req, c->nrows);
		if (rc == 0)
			rc = kt__wire_u8(&req, c->complete != 0);
	}
	if (rc == 0 && req.len - 4 > KT__FRAME_MAX)
		rc = kt__err(KT_ETOOBIG, "a commit of %zu bytes is too large "
			     "to send to the holder", req.len);
	while (rc == 0 &&
	       (rc = round_trip(rm, &req, &rep, &in, 0)) == KT__EFENCED) {
		kt__fence_pause(&waits); /* the connection stays free */
		rc = 0;
	}
	if (rc == 0) {
		uint64_t seq = kt__wire_get_u64(&in);

		if (in.bad)
			rc = bad_reply(rm);
		else if (cm->applied != NULL)
			*cm->applied = seq;
	}
	kt__buf_free(&req);
	kt__buf_free(&rep);
	return rc;
}

/* A call with no fields either way: its status. */
static int simple_call(kt__rows *r, unsigned int op)
{
	kt__remote *rm = route((kt__remote *)r);
	kt__buf req = {0}, rep = {0};
	kt__wire_in in;
	int rc;

	if (kt__wire_begin(&req, op) != 0)
		return kt__err(KT_ENOMEM, "out of memory");
	rc = round_trip(rm, &req, &rep, &in, 0);
	kt__buf_free(&req);
	kt__buf_free(&rep);
	return rc;
}

static int remote_sync(kt__rows *r)
{
	return simple_call(r, KT__OP_SYNC);
}

static int remote_empty(kt__rows *r)
{
	return simple_call(r, KT__OP_EMPTY);
}

static int dial(kt__remote **out, const char *dir);

/* A fence (rows.h) on the holder, through a connection of the calling
 * thread's own (server.c, "Fences"). */
static int remote_fence(kt__rows *r, const kt__slice *pre, size_t n,
			uint64_t *token)
{
	kt__remote *rm = (kt__remote *)r, *side = NULL;
	kt__buf req = {0}, rep = {0};
	kt__wire_in in;
	size_t i;
	int rc;

	if (rm->side != NULL)
		return kt__err(KT_EBUSY, "this handle has a fence up already");
	if ((rc = dial(&side, rm->dir)) != 0)
		return rc == KT_ENOTFOUND
			       ? kt__err(KT_EIO, "the holder of the store "
					 "went away")
			       : rc;
	rc = kt__wire_begin(&req, KT__OP_FENCE);
	if (rc == 0)
		rc = kt__wire_u32(&req, (uint32_t)n);
	for (i = 0; rc == 0 && i < n; i++)
		rc = kt__wire_bytes(&req, pre[i]);
	if (rc != 0)
		rc = kt__err(KT_ENOMEM, "out of memory");
	else
		rc = round_trip(side, &req, &rep, &in, 0);
	if (rc == 0) {
		*token = kt__wire_get_u64(&in);
		if (in.bad)
			rc = bad_reply(side);
	}
	kt__buf_free(&req);
	kt__buf_free(&rep);
	if (rc != 0) {
		side->base.ops->close(&side->base);
		return rc;
	}
	rm->side_owner = pthread_self();
	__atomic_store_n(&rm->side, side, __ATOMIC_RELEASE);
	return 0;
}

/* Lift it, and close its connection.  A broken one (the steps failed) is
 * not lifted: closing the connection with the fence up has the holder
 * finish the steps from the journal before it lifts it. */
static int remote_unfence(kt__rows *r, uint64_t token, int broken)
{
	kt__remote *rm = (kt__remote *)r, *side = rm->side;
	kt__buf req = {0}, rep = {0};
	kt__wire_in in;

	if (side == NULL)
		return 0;
	if (!broken && kt__wire_begin(&req, KT__OP_UNFENCE) == 0 &&
	    kt__wire_u64(&req, token) == 0 && kt__wire_u8(&req, 0) == 0)
		round_trip(side, &req, &rep, &in, 0);
	kt__buf_free(&req);
	kt__buf_free(&rep);
	__atomic_store_n(&rm->side, NULL, __ATOMIC_RELEASE);
	side->base.ops->close(&side->base);
	return 0;
}

static void remote_close(kt__rows *r)
{
	kt__remote *rm = (kt__remote *)r;

	if (rm == NULL)
		return;
	if (rm->side != NULL) {
		rm->side->base.ops->close(&rm->side->base);
		rm->side = NULL;
	}
	kt__remote_watch(r, NULL, NULL);
	/* The holder frees this connection's snapshots and cursors. */
	close(rm->fd);
	pthread_mutex_destroy(&rm->mu);
	free(rm->dir);
	free(rm);
}

static const kt__rows_ops remote_ops = {
	.get = remote_get,
	.scan = remote_scan,
	.next = remote_next,
	.cursor_free = remote_cursor_free,
	.snapshot = remote_snapshot,
	.snapshot_free = remote_snapshot_free,
	.commit = remote_commit,
	.sync = remote_sync,
	.empty = remote_empty,
	.close = remote_close,
	.fence = remote_fence,
	.unfence = remote_unfence,
	.atomic_batch = 1,
};

int kt__rows_is_remote(const kt__rows *r)
{
	return r != NULL && r->ops == &remote_ops;
}

/* Connect to the holder of the store in @p dir and say HELLO.  0 with
 * *out set; KT_ENOTFOUND (no message) when nobody listens; an error. */
static int dial(kt__remote **out, const char *dir)
{
	kt__remote *rm;
	kt__buf req = {0}, rep = {0};
	kt__wire_in in = {NULL, 0, 0, 0};
	struct sockaddr_un a;
	uint32_t ver;
	int fd, afd = -1, rc, gone;

	*out = NULL;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return kt__err(KT_EIO, "open '%s': %s", dir, strerror(errno));
	if (kt__wire_addr(&a, &afd, dir) != 0 ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		int e = errno;

		if (afd >= 0)
			close(afd);
		close(fd);
		if (e == ENOENT || e == ECONNREFUSED)
			return KT_ENOTFOUND;
		return kt__err(KT_EIO, "open '%s': cannot connect to the "
			       "holder of the store (%s): %s", dir,
			       KT__SOCK_NAME, strerror(e));
	}
	if (afd >= 0)
		close(afd);
	rm = calloc(1, sizeof(*rm));
	if (rm == NULL || (rm->dir = strdup(dir)) == NULL) {
		free(rm);
		close(fd);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	rm->base.ops = &remote_ops;
	rm->fd = fd;
	rm->pid = 0;
	pthread_mutex_init(&rm->mu, NULL);
	if (kt__wire_begin(&req, KT__OP_HELLO) != 0 ||
	    kt__wire_bytes(&req, kt__sl(KT__PROTO_MAGIC,
					KT__PROTO_MAGIC_LEN)) != 0 ||
	    kt__wire_u32(&req, KT__PROTO_VERSION) != 0)
		rc = kt__err(KT_ENOMEM, "out of memory");
	else
		rc = round_trip(rm, &req, &rep, &in, 0);
	if (rc != KT_ENOMEM && !rm->dead && in.len >= 4) {
		/* The reply's fields follow even when it refuses. */
		ver = kt__wire_get_u32(&in);
		rm->pid = (long)kt__wire_get_u32(&in);
		if (rc == 0 && (in.bad || ver != KT__PROTO_VERSION))
			rc = kt__err(KT_EVERSION, "open '%s': the holder "
				     "of the store speaks protocol version %u, "
				     "this process version %u", dir, ver,
				     KT__PROTO_VERSION);
	}
	gone = rm->dead;
	if (rc != 0 && rc != KT_ENOMEM)
		kt__err_prefix("open '%s'", dir);
	kt__buf_free(&req);
	kt__buf_free(&rep);
	if (rc != 0) {
		remote_close(&rm->base);
		/* A holder that hung up at once is going away: as if
		 * nobody listened. */
		return gone ? KT_ENOTFOUND : rc;
	}
	*out = rm;
	return 0;
}

int kt__remote_open(kt__rows **out, const char *dir)
{
	kt__remote *rm;
	int rc = dial(&rm, dir);

	*out = rc == 0 ? &rm->base : NULL;
	return rc;
}

static void *watch_main(void *arg)
{
	kt__rwatch *wt = arg;
	kt__buf frame = {0}, ack = {0};

	for (;;) {
		kt__wire_in in;
		kt__write *w;
		size_t n;

		if (kt__wire_recv(wt->lis->fd, &frame, KT__FRAME_MAX) != 0)
			break;
		in.p = (const unsigned char *)frame.p;
		in.len = frame.len;
		in.pos = 0;
		in.bad = 0;
		if (kt__wire_get_u8(&in) != KT__OP_NOTE ||
		    kt__note_decode(&w, &n, &in) != 0)
			break;
		wt->fn(wt->arg, w, n);
		free(w);
		if (kt__wire_begin(&ack, KT__OP_ACK) != 0 ||
		    kt__wire_send(wt->lis->fd, &ack) != 0)
			break;
		if (frame.cap > (4u << 20))
			kt__buf_free(&frame);
	}
	kt__buf_free(&frame);
	kt__buf_free(&ack);
	return NULL;
}

int kt__remote_watch(kt__rows *r, kt__notify_fn fn, void *arg)
{
	kt__remote *rm = (kt__remote *)r;
	kt__buf req = {0}, rep = {0};
	kt__wire_in in;
	kt__rwatch *wt;
	uint64_t sid = 0;
	int rc;

	if (fn == NULL) {
		if ((wt = rm->watch) == NULL)
			return 0;
		rm->watch = NULL;
		shutdown(wt->lis->fd, SHUT_RDWR);
		pthread_join(wt->th, NULL);
		remote_close(&wt->lis->base);
		free(wt);
		return 0;
	}
	if (rm->watch != NULL)
		return kt__err(KT_EEXISTS, "this store handle is watched "
			       "already");
	if (kt__wire_begin(&req, KT__OP_WATCH) != 0)
		rc = kt__err(KT_ENOMEM, "out of memory");
	else
		rc = round_trip(rm, &req, &rep, &in, 0);
	if (rc == 0) {
		sid = kt__wire_get_u64(&in);
		if (in.bad)
			rc = bad_reply(rm);
	}
	kt__buf_free(&req);
	kt__buf_free(&rep);
	if (rc != 0)
		return rc;
	if ((wt = calloc(1, sizeof(*wt))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	wt->fn = fn;
	wt->arg = arg;
	rc = dial(&wt->lis, rm->dir);
	if (rc == KT_ENOTFOUND)
		rc = dead_err(rm);
	if (rc == 0) {
		if (kt__wire_begin(&req, KT__OP_LISTEN) != 0 ||
		    kt__wire_u64(&req, sid) != 0)
			rc = kt__err(KT_ENOMEM, "out of memory");
		else
			rc = round_trip(wt->lis, &req, &rep, &in, 0);
		kt__buf_free(&req);
		kt__buf_free(&rep);
		if (rc == 0 && pthread_create(&wt->th, NULL, watch_main,
					      wt) != 0)
			rc = kt__err(KT_ENOMEM, "cannot start a thread to "
				     "watch the store");
		if (rc != 0)
			remote_close(&wt->lis->base);
	}
	if (rc != 0) {
		free(wt);
		return rc;
	}
	rm->watch = wt;
	return 0;
}
