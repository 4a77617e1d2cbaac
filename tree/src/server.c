/*
 * server.c - the holder's side of one store shared by several processes.
 *
 * LevelDB admits one process per database.  The process that holds it (the
 * holder: its kt_open() got the LevelDB lock) listens on a Unix stream
 * socket, DIR/keytree.sock, and serves every call of the storage seam
 * (rows.h) against its own LevelDB engine.  A process whose kt_open() finds
 * the store locked connects there and runs the whole tree layer over the
 * remote engine (rows_remote.c), so each public call behaves as it does in
 * the holder: transactions read at a snapshot, and the LevelDB engine checks
 * the commit's conditions under its commit lock, for the holder's own
 * transactions and every client's alike.
 *
 * Threads: one accepts connections; each connection gets a thread of its
 * own that reads a request, answers it, and reads the next.  kt__server_stop
 * shuts every socket down and joins them all.
 *
 * Protocol, version 3.  Every message is a frame: u32 length, then that
 * many bytes.  Integers are little-endian; "bytes" is u32 length and the
 * bytes; snapshots and cursors are u64 handles, 0 meaning none.  A request
 * is u8 op and its fields; a reply is i32 status (0, or a kt_error code,
 * or KT__ERETRY, or 1/0 for EMPTY), bytes message (the holder's kt_errmsg()
 * when the status is an error that carries one, else empty), then the
 * fields listed for a successful call.
 *
 *   HELLO         bytes "keytree-rows", u32 version -> u32 version, u32 pid
 *   GET           u64 snap, u8 take, bytes part, bytes sort
 *                                                   -> [u64 snap], bytes value
 *   SCAN          u64 snap, u8 take, u32 flags, bytes part, bytes after,
 *                 bytes from                        -> [u64 snap], batch
 *   NEXT          u64 cursor                        -> batch
 *   CURSOR_FREE   u64 cursor                        (no reply)
 *   SNAPSHOT                                        -> u64 snap
 *   SNAPSHOT_FREE u64 snap                          (no reply)
 *   COMMIT        u64 snap, u8 sync, u32 nw, nw x (bytes part, bytes sort,
 *                 u8 del, bytes value), u32 nc, nc x (u8 kind, bytes part,
 *                 bytes sort, u32 flags, bytes part, bytes after,
 *                 bytes from, u64 nrows, u8 complete)  -> u64 seq
 *   SYNC, EMPTY                                     -> nothing
 *   WATCH                                           -> u64 session
 *   LISTEN        u64 session                       -> nothing, and then
 *                 the connection carries notes: the holder sends
 *   NOTE          u32 n, n x (bytes part, bytes sort, u8 del, bytes value
 *                 cut to KT__NOTE_VALUE)
 *                 for each commit of another session, and the listener
 *                 answers each with
 *   ACK           (no reply) once its watcher has heard it.
 *   FENCE         u32 n, n x bytes prefix               -> u64 token
 *   UNFENCE       u64 token, u8 broken                  -> nothing
 *
 * Watching.  WATCH marks the connection as watching and names its
 * session; the client opens a second connection and sends LISTEN with
 * that session, which turns it into the stream of notes of every commit
 * the holder applies, its own and other clients', except those of the
 * session itself.  A commit of a session that does not watch (a CLI, say)
 * is answered only once every listener has acknowledged its note, or
 * after KT__NOTE_WAIT_MS: when the CLI's call returns, a mount that
 * watches has already dropped its kernel caches of what changed.  A
 * commit of a watching session is not held back: two watchers each
 * waiting for the other's acknowledgement, while the kernel holds a
 * directory lock that one of them needs to invalidate, would stall.
 * Notes not yet acknowledged queue in the holder; a listener whose queue
 * passes KT__NOTE_QUEUE_MAX is disconnected.  The holder's own watcher
 * (kt__server_watch) hears the same notes in process, on a thread of
 * its own.
 *
 * Fences (version 3).  A client that moves or deletes a large subtree in
 * steps (ops.c) fences its rows off through a connection of its own: the
 * fence belongs to that connection's thread, so the client's steps on it
 * pass and everyone else's calls, its other connections' too, are told
 * KT__EFENCED (they wait on their side and ask again).  One fence per
 * connection.  If the connection closes with its fence up, the client was
 * killed between the commit point and the last step: the holder finishes
 * the steps from the journal on that thread (kt__server_on_abandon), and
 * then lifts the fence.
 *
 * Orphans.  The holder remembers which orphan rows each connection's
 * commits created and did not delete; when the connection closes, the
 * client is gone and nothing can reach those orphans any more, so the
 * holder drops them (kt__server_on_orphans).
 *
 * With take 1 (and snap 0) the read first takes a snapshot and reads
 * through it; the reply then carries the new snapshot's handle (0 if it
 * could not be taken) right after the message, whatever the status.  So a
 * transaction's snapshot costs no round trip of its own.
 *
 * A batch is u64 cursor, u32 n, n x (bytes part, bytes sort, bytes value),
 * i32 end, bytes message: end 0 means more rows may follow (ask NEXT with
 * the cursor), KT_ITEROVER or an error that the scan ended (the holder
 * has freed the cursor and sends handle 0; the client reports end after
 * the n rows).  A batch
 * holds up to KT__BATCH_ROWS rows or about KT__BATCH_BYTES.
 *
 * The first request must be HELLO, and the holder answers a version other
 * than its own with an error naming both; HELLO's layout never changes.
 * Nothing read is trusted: a frame over KT__FRAME_MAX, a field running
 * past its frame, an unknown op or handle closes the connection.  The
 * snapshots and cursors of a connection are freed when it closes.
 *
 * Permissions: only a user who could open the store files may connect.
 * The socket file gets the store directory's owner, group and read/write
 * permission bits (when chown is refused, as it is to a holder that is not
 * root and not the owner, the socket stays the holder's with mode 0600);
 * and the holder checks the peer's credentials (SO_PEERCRED): root, the
 * holder's own user and the directory's owner are let in, others only if
 * the directory grants them write permission (the group bit to a member of
 * its group, the other bit to anyone).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "server.h"
#include "tree.h"

/* ---- Wire helpers ------------------------------------------------------ */

int kt__wire_addr(struct sockaddr_un *a, int *dfd, const char *dir)
{
	int n;

	*dfd = -1;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", dir,
		     KT__SOCK_NAME);
	if (n >= 0 && (size_t)n < sizeof(a->sun_path))
		return 0;
	/* Too long for sun_path: go through the directory's descriptor. */
	*dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dfd < 0)
		return -1;
	snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/%s",
		 *dfd, KT__SOCK_NAME);
	return 0;
}

int kt__wire_begin(kt__buf *b, unsigned int op)
{
	static const char room[4] = {0, 0, 0, 0};

	b->len = 0;
	if (kt__buf_add(b, room, 4) != 0)
		return KT_ENOMEM;
	return kt__wire_u8(b, op);
}

int kt__wire_u8(kt__buf *b, unsigned int v)
{
	return kt__buf_addc(b, (char)(unsigned char)v);
}

int kt__wire_u32(kt__buf *b, uint32_t v)
{
	unsigned char x[4];

	kt__put32(x, v);
	return kt__buf_add(b, x, 4);
}

int kt__wire_u64(kt__buf *b, uint64_t v)
{
	unsigned char x[8];

	kt__put64(x, v);
	return kt__buf_add(b, x, 8);
}

int kt__wire_bytes(kt__buf *b, kt__slice s)
{
	int rc;

	if (s.len > KT__FRAME_MAX)
		return kt__err(KT_ETOOBIG, "a row of %zu bytes is too large "
			       "to send to the holder", s.len);
	if ((rc = kt__wire_u32(b, (uint32_t)s.len)) != 0)
		return rc;
	return s.len ? kt__buf_add(b, s.p, s.len) : 0;
}

int kt__wire_send(int fd, kt__buf *b)
{
	size_t off = 0;

	if (b->len < 4 || b->len - 4 > KT__FRAME_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	kt__put32((unsigned char *)b->p, (uint32_t)(b->len - 4));
	while (off < b->len) {
		ssize_t n = send(fd, b->p + off, b->len - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/* Read exactly @p len bytes.  0, 1 at end of stream before any byte, -1
 * with errno set (EPROTO when the stream ends part way). */
static int read_full(int fd, void *p, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = recv(fd, (char *)p + off, len - off, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			if (off == 0)
				return 1;
			errno = EPROTO;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

int kt__wire_recv(int fd, kt__buf *b, size_t max)
{
	unsigned char h[4];
	uint32_t len;
	int rc;

	b->len = 0;
	if ((rc = read_full(fd, h, 4)) != 0)
		return rc;
	len = kt__get32(h);
	if (len > max || len > KT__FRAME_MAX) {
		errno = EPROTO;
		return -1;
	}
	if (kt__buf_reserve(b, len) != 0) {
		errno = ENOMEM;
		return -1;
	}
	if (len > 0 && (rc = read_full(fd, b->p, len)) != 0) {
		if (rc == 1)
			errno = EPROTO;
		return -1;
	}
	b->len = len;
	return 0;
}

static const unsigned char *wire_take(kt__wire_in *in, size_t n)
{
	const unsigned char *p;

	if (in->bad || in->len - in->pos < n) {
		in->bad = 1;
		return NULL;
	}
	p = in->p + in->pos;
	in->pos += n;
	return p;
}

unsigned int kt__wire_get_u8(kt__wire_in *in)
{
	const unsigned char *p = wire_take(in, 1);
	return p ? p[0] : 0;
}

uint32_t kt__wire_get_u32(kt__wire_in *in)
{
	const unsigned char *p = wire_take(in, 4);
	return p ? kt__get32(p) : 0;
}

uint64_t kt__wire_get_u64(kt__wire_in *in)
{
	const unsigned char *p = wire_take(in, 8);
	return p ? kt__get64(p) : 0;
}

kt__slice kt__wire_get_bytes(kt__wire_in *in)
{
	uint32_t n = kt__wire_get_u32(in);
	const unsigned char *p = in->bad ? NULL : wire_take(in, n);

	return p ? kt__sl(p, n) : kt__sl("", 0);
}

/* ---- The server -------------------------------------------------------- */

/* A note waiting for a listener. */
typedef struct kt__note {
	struct kt__note *next;
	uint64_t seq;
	size_t len;
	char body[]; /* as kt__note_encode wrote it */
} kt__note;

/* A watcher: the holder's own (session 0, a thread calling fn), or a
 * client's LISTEN connection.  Protected by srv->mu. */
typedef struct kt__listener {
	struct kt__server *srv;
	uint64_t session;       /* its commits are not sent to it */
	kt__notify_fn fn;       /* the holder's own */
	void *arg;
	pthread_t th;
	int fd;                 /* a client's; -1 */
	kt__note *head, *tail;  /* queued, not yet sent */
	size_t queued;          /* bytes queued */
	uint64_t seq, heard;    /* the last note queued, and heard */
	int dead;               /* hears nothing more */
	int listed;             /* on srv->listeners */
	unsigned int refs;      /* the list's and each waiting publisher's */
	struct kt__listener *next;
} kt__listener;

typedef struct kt__conn {
	struct kt__server *srv;
	int fd;
	uint64_t sid;     /* its session */
	int watching;     /* sent WATCH; protected by srv->mu */
	uint64_t *orphans; /* orphan ids its commits made */
	size_t norphans, corphans;
	pthread_t th;
	int done; /* the thread has finished; protected by srv->mu */
	uint64_t fence; /* its fence's token; 0: none */
	/* Handles are slot index + 1. */
	kt__snap **snaps;
	size_t nsnaps;
	kt__cursor **curs;
	size_t ncurs;
	struct kt__conn *next;
} kt__conn;

struct kt__server {
	kt__rows *rows;
	int lfd;             /* the listening socket */
	int dfd;             /* the store directory, for unlinkat */
	pthread_t accept_th;
	uid_t euid;          /* the holder's */
	struct stat dir;     /* the store directory, at start */
	pthread_mutex_t mu;  /* protects conns, stopping and listeners */
	pthread_cond_t cv;   /* a note was queued or heard, a listener died */
	kt__conn *conns;
	int stopping;
	uint64_t nsid;       /* the last session given out */
	kt__listener *listeners;
	int nlisteners;      /* also read without mu, as a hint */
	kt__orphans_fn ofn;
	void *oarg;
	kt__abandon_fn afn;
	void *aarg;
};

/* Is group @p gid among those of process @p pid (its /proc status)? */
static int proc_in_group(pid_t pid, gid_t gid)
{
	char path[64], line[4096];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		char *p = line + 7, *end;

		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		for (;;) {
			unsigned long g = strtoul(p, &end, 10);
			if (end == p)
				break;
			if ((gid_t)g == gid)
				found = 1;
			p = end;
		}
		break;
	}
	fclose(f);
	return found;
}

/* May the peer on @p fd use the store?  0, or an error with a message. */
static int peer_check(kt__server *srv, int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	mode_t m = srv->dir.st_mode;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
		return kt__err(KT_EIO, "the holder cannot tell who connected: "
			       "%s", strerror(errno));
	if (cr.uid == 0 || cr.uid == srv->euid || cr.uid == srv->dir.st_uid)
		return 0;
	if (m & S_IWOTH)
		return 0;
	if ((m & S_IWGRP) && (cr.gid == srv->dir.st_gid ||
			      proc_in_group(cr.pid, srv->dir.st_gid)))
		return 0;
	return kt__err(KT_EIO, "permission denied: user %ld may not write "
		       "the store directory, so the holder (pid %ld) does not "
		       "serve it", (long)cr.uid, (long)getpid());
}

/* Start a reply with status @p rc, and its message when it has one. */
static int reply_begin(kt__buf *b, int rc)
{
	const char *msg = "";

	b->len = 0;
	if (kt__buf_add(b, "\0\0\0\0", 4) != 0)
		return KT_ENOMEM;
	if (rc < 0 && rc != KT_ENOTFOUND && rc != KT_ITEROVER &&
	    rc != KT__ERETRY && rc != KT__EFENCED)
		msg = kt_errmsg();
	if (kt__wire_u32(b, (uint32_t)rc) != 0)
		return KT_ENOMEM;
	return kt__wire_bytes(b, kt__sl(msg, strlen(msg)));
}

/* Add @p p to a table of handles; its handle into *h. */
static int slot_add(void ***tab, size_t *n, void *p, uint64_t *h)
{
	size_t i;
	void **t;

	for (i = 0; i < *n; i++)
		if ((*tab)[i] == NULL)
			break;
	if (i == *n) {
		t = realloc(*tab, (*n + 8) * sizeof(*t));
		if (t == NULL)
			return kt__err(KT_ENOMEM, "out of memory");
		memset(t + *n, 0, 8 * sizeof(*t));
		*tab = t;
		*n += 8;
	}
	(*tab)[i] = p;
	*h = (uint64_t)i + 1;
	return 0;
}

/* The entry of handle @p h, NULL if there is none. */
static void *slot_get(void **tab, size_t n, uint64_t h)
{
	return h >= 1 && h <= n ? tab[h - 1] : NULL;
}

/* Fill a batch from cursor @p h of @p c into @p out (a reply begun with
 * status 0). */
static int batch_fill(kt__conn *c, uint64_t h, kt__buf *out)
{
	kt__rows *r = c->srv->rows;
	kt__cursor *cur = c->curs[h - 1];
	size_t hat, nat, start = out->len;
	uint32_t n = 0;
	kt__row row;
	int rc = 0;
	const char *msg = "";

	hat = out->len;
	if (kt__wire_u64(out, h) != 0 || kt__wire_u32(out, 0) != 0)
		return KT_ENOMEM;
	nat = out->len - 4;
	while (n < KT__BATCH_ROWS && out->len - start < KT__BATCH_BYTES) {
		rc = r->ops->next(cur, &row);
		if (rc != 0)
			break;
		if (kt__wire_bytes(out, row.part) != 0 ||
		    kt__wire_bytes(out, row.sort) != 0 ||
		    kt__wire_bytes(out, row.value) != 0)
			return KT_ENOMEM;
		n++;
	}
	kt__put32((unsigned char *)out->p + nat, n);
	if (rc != 0) {
		/* The scan is over: the cursor goes now, and the batch
		 * says so with handle 0. */
		kt__put64((unsigned char *)out->p + hat, 0);
		r->ops->cursor_free(cur);
		c->curs[h - 1] = NULL;
		if (rc != KT_ITEROVER)
			msg = kt_errmsg();
	}
	if (kt__wire_u32(out, (uint32_t)rc) != 0 ||
	    kt__wire_bytes(out, kt__sl(msg, strlen(msg))) != 0)
		return KT_ENOMEM;
	return 0;
}

static void read_scan(kt__wire_in *in, kt__scan *how)
{
	how->flags = kt__wire_get_u32(in);
	how->part = kt__wire_get_bytes(in);
	how->after = kt__wire_get_bytes(in);
	how->from = kt__wire_get_bytes(in);
}

/* ---- Notes: telling watchers what was committed ----------------------- */

int kt__note_encode(kt__buf *b, const kt__commit *cm)
{
	size_t i;

	if (kt__wire_u32(b, (uint32_t)cm->nw) != 0)
		return KT_ENOMEM;
	for (i = 0; i < cm->nw; i++) {
		const kt__write *w = &cm->w[i];
		int del = w->del || w->value.p == NULL;
		size_t vlen = del ? 0 : w->value.len;

		if (vlen > KT__NOTE_VALUE)
			vlen = KT__NOTE_VALUE;
		if (kt__wire_bytes(b, w->part) != 0 ||
		    kt__wire_bytes(b, w->sort) != 0 ||
		    kt__wire_u8(b, (unsigned int)del) != 0 ||
		    kt__wire_bytes(b, kt__sl(del ? "" : w->value.p, vlen)) != 0)
			return KT_ENOMEM;
	}
	return 0;
}

/* Read u32 n and n writes (bytes part, bytes sort, u8 del, bytes value),
 * as COMMIT and NOTE carry them, into a malloc'd array pointing into the
 * frame.  0, 1 for a malformed frame, or KT_ENOMEM. */
static int writes_read(kt__write **out, uint32_t *nout, kt__wire_in *in)
{
	uint32_t i, n = kt__wire_get_u32(in);
	kt__write *w = NULL;

	*out = NULL;
	*nout = 0;
	/* Each write takes at least 13 bytes of the frame: bound the count
	 * by what is there before allocating for it. */
	if (in->bad || n > (in->len - in->pos) / 13)
		return 1;
	if (n > 0 && (w = calloc(n, sizeof(*w))) == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		w[i].part = kt__wire_get_bytes(in);
		w[i].sort = kt__wire_get_bytes(in);
		w[i].del = kt__wire_get_u8(in) != 0;
		w[i].value = kt__wire_get_bytes(in);
		if (w[i].del)
			w[i].value.p = NULL;
	}
	*out = w;
	*nout = n;
	return 0;
}

int kt__note_decode(kt__write **out, size_t *nout, kt__wire_in *in)
{
	kt__write *w;
	uint32_t n;
	int rc;

	*out = NULL;
	*nout = 0;
	if ((rc = writes_read(&w, &n, in)) != 0)
		return rc;
	if (in->bad || in->pos != in->len) {
		free(w);
		return 1;
	}
	*out = w;
	*nout = n;
	return 0;
}

/* Free the notes still queued for @p l.  Caller holds srv->mu. */
static void notes_clear(kt__listener *l)
{
	kt__note *n;

	while ((n = l->head) != NULL) {
		l->head = n->next;
		free(n);
	}
	l->tail = NULL;
	l->queued = 0;
}

static void listener_unref(kt__listener *l)
{
	if (--l->refs == 0) {
		notes_clear(l);
		free(l);
	}
}

/* @p l hears nothing more: wake its thread and whoever waits for it.
 * Caller holds srv->mu. */
static void listener_kill(kt__listener *l)
{
	l->dead = 1;
	if (l->fd >= 0)
		shutdown(l->fd, SHUT_RDWR);
	pthread_cond_broadcast(&l->srv->cv);
}

/* Take @p l off the list (once).  Caller holds srv->mu. */
static void listener_unlink(kt__listener *l)
{
	kt__server *srv = l->srv;
	kt__listener **pp;

	if (!l->listed)
		return;
	for (pp = &srv->listeners; *pp != NULL; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	l->listed = 0;
	__atomic_store_n(&srv->nlisteners, srv->nlisteners - 1,
			 __ATOMIC_RELEASE);
	listener_kill(l);
	notes_clear(l);
	listener_unref(l);
}

static kt__listener *listener_new(kt__server *srv, uint64_t session)
{
	kt__listener *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->srv = srv;
	l->session = session;
	l->fd = -1;
	l->refs = 1;
	l->listed = 1;
	l->next = srv->listeners;
	srv->listeners = l;
	__atomic_store_n(&srv->nlisteners, srv->nlisteners + 1,
			 __ATOMIC_RELEASE);
	return l;
}

/* Wait for the next note of @p l: NULL when it is dead or the server
 * stops.  Caller holds srv->mu. */
static kt__note *listener_next(kt__listener *l)
{
	kt__server *srv = l->srv;
	kt__note *n;

	while (l->head == NULL && !l->dead && !srv->stopping)
		pthread_cond_wait(&srv->cv, &srv->mu);
	if (l->dead || srv->stopping)
		return NULL;
	n = l->head;
	l->head = n->next;
	if (l->head == NULL)
		l->tail = NULL;
	l->queued -= n->len;
	return n;
}

/* Note @p n has been heard.  Caller holds srv->mu. */
static void listener_heard(kt__listener *l, kt__note *n)
{
	l->heard = n->seq;
	pthread_cond_broadcast(&l->srv->cv);
	free(n);
}

/* Does session @p sid watch?  0 is the holder.  Caller holds srv->mu. */
static int session_watches(kt__server *srv, uint64_t sid)
{
	kt__listener *l;

	for (l = srv->listeners; l != NULL; l = l->next)
		if (l->session == sid && !l->dead)
			return 1;
	return 0;
}

/* Is anyone but session @p sid listening?  Caller holds srv->mu. */
static int others_listen(kt__server *srv, uint64_t sid)
{
	kt__listener *l;

	for (l = srv->listeners; l != NULL; l = l->next)
		if (l->session != sid && !l->dead)
			return 1;
	return 0;
}

/* Queue @p cm, committed by session @p sid, for every other listener;
 * unless that session watches, wait until they have heard it. */
static void publish(kt__server *srv, const kt__commit *cm, uint64_t sid)
{
	struct target {
		kt__listener *l;
		uint64_t seq;
	} *t = NULL;
	size_t nt = 0, nq = 0, i;
	kt__buf body = {0};
	kt__listener *l;
	struct timespec dl;
	int wait, late = 0, others;

	if (__atomic_load_n(&srv->nlisteners, __ATOMIC_ACQUIRE) == 0 ||
	    cm->nw == 0)
		return;
	/* A mount watches the store it holds, and hears nothing of its
	 * own commits: with no one else listening there is nothing to
	 * encode, and no thread to wake. */
	pthread_mutex_lock(&srv->mu);
	others = others_listen(srv, sid);
	pthread_mutex_unlock(&srv->mu);
	if (!others)
		return;
	if (kt__note_encode(&body, cm) != 0) {
		kt__buf_free(&body);
		return;
	}
	kt__deadline(&dl, CLOCK_MONOTONIC, KT__NOTE_WAIT_MS);
	pthread_mutex_lock(&srv->mu);
	wait = !session_watches(srv, sid);
	if (wait)
		t = calloc((size_t)srv->nlisteners + 1, sizeof(*t));
	for (l = srv->listeners; l != NULL; l = l->next) {
		kt__note *n;

		if (l->session == sid || l->dead)
			continue;
		if (l->queued + body.len > KT__NOTE_QUEUE_MAX ||
		    (n = malloc(sizeof(*n) + body.len)) == NULL) {
			/* It cannot keep up, or no memory to tell it:
			 * it must not believe it heard everything. */
			listener_kill(l);
			continue;
		}
		n->next = NULL;
		n->seq = ++l->seq;
		n->len = body.len;
		memcpy(n->body, body.p, body.len);
		if (l->tail != NULL)
			l->tail->next = n;
		else
			l->head = n;
		l->tail = n;
		l->queued += n->len;
		nq++;
		if (t != NULL) {
			l->refs++;
			t[nt].l = l;
			t[nt].seq = n->seq;
			nt++;
		}
	}
	if (nq > 0)
		pthread_cond_broadcast(&srv->cv);
	for (i = 0; i < nt; i++) {
		l = t[i].l;
		while (!late && !l->dead && !srv->stopping &&
		       l->heard < t[i].seq)
			if (pthread_cond_timedwait(&srv->cv, &srv->mu,
						   &dl) == ETIMEDOUT)
				late = 1;
		listener_unref(l);
	}
	pthread_mutex_unlock(&srv->mu);
	free(t);
	kt__buf_free(&body);
}

void kt__server_publish(kt__server *srv, const kt__commit *cm)
{
	if (srv != NULL)
		publish(srv, cm, 0);
}

static void *local_main(void *arg)
{
	kt__listener *l = arg;
	kt__server *srv = l->srv;
	kt__note *n;

	pthread_mutex_lock(&srv->mu);
	while ((n = listener_next(l)) != NULL) {
		kt__wire_in in = {(const unsigned char *)n->body, n->len, 0, 0};
		kt__write *w;
		size_t nw;

		pthread_mutex_unlock(&srv->mu);
		if (kt__note_decode(&w, &nw, &in) == 0) {
			l->fn(l->arg, w, nw);
			free(w);
		}
		pthread_mutex_lock(&srv->mu);
		listener_heard(l, n);
	}
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

int kt__server_watch(kt__server *srv, kt__notify_fn fn, void *arg)
{
	kt__listener *l;

	pthread_mutex_lock(&srv->mu);
	for (l = srv->listeners; l != NULL; l = l->next)
		if (l->session == 0 && !l->dead)
			break;
	if (fn == NULL) {
		if (l == NULL) {
			pthread_mutex_unlock(&srv->mu);
			return 0;
		}
		l->refs++;
		listener_kill(l);
		pthread_mutex_unlock(&srv->mu);
		pthread_join(l->th, NULL);
		pthread_mutex_lock(&srv->mu);
		listener_unlink(l);
		listener_unref(l);
		pthread_mutex_unlock(&srv->mu);
		return 0;
	}
	if (l != NULL) {
		pthread_mutex_unlock(&srv->mu);
		return kt__err(KT_EEXISTS, "this store handle is watched "
			       "already");
	}
	if ((l = listener_new(srv, 0)) == NULL) {
		pthread_mutex_unlock(&srv->mu);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	l->fn = fn;
	l->arg = arg;
	if (pthread_create(&l->th, NULL, local_main, l) != 0) {
		listener_unlink(l);
		pthread_mutex_unlock(&srv->mu);
		return kt__err(KT_ENOMEM, "cannot start a thread to watch "
			       "the store");
	}
	pthread_mutex_unlock(&srv->mu);
	return 0;
}

/* A client's LISTEN connection: send it every note queued for it and
 * read its acknowledgement.  Returns when either side is done. */
static void serve_listen(kt__conn *c, uint64_t sid, kt__buf *out)
{
	kt__server *srv = c->srv;
	kt__buf ack = {0};
	kt__listener *l = NULL;
	kt__conn *w;
	kt__note *n;
	int rc = 0;

	pthread_mutex_lock(&srv->mu);
	for (w = srv->conns; w != NULL; w = w->next)
		if (w->sid == sid && w != c && w->watching && !w->done)
			break;
	if (w == NULL)
		rc = kt__err(KT_EINVAL, "no session %llu is watching",
			     (unsigned long long)sid);
	else if (session_watches(srv, sid))
		rc = kt__err(KT_EEXISTS, "session %llu has a listener "
			     "already", (unsigned long long)sid);
	else if ((l = listener_new(srv, sid)) == NULL)
		rc = kt__err(KT_ENOMEM, "out of memory");
	else
		l->fd = c->fd;
	pthread_mutex_unlock(&srv->mu);
	if (reply_begin(out, rc) != 0 || kt__wire_send(c->fd, out) != 0 ||
	    rc != 0)
		goto done;
	pthread_mutex_lock(&srv->mu);
	while ((n = listener_next(l)) != NULL) {
		pthread_mutex_unlock(&srv->mu);
		rc = -1;
		if (kt__wire_begin(out, KT__OP_NOTE) == 0 &&
		    kt__buf_add(out, n->body, n->len) == 0 &&
		    kt__wire_send(c->fd, out) == 0 &&
		    kt__wire_recv(c->fd, &ack, 16) == 0 && ack.len == 1 &&
		    (unsigned char)ack.p[0] == KT__OP_ACK)
			rc = 0;
		if (out->cap > (4u << 20))
			kt__buf_free(out);
		pthread_mutex_lock(&srv->mu);
		if (rc != 0) {
			free(n);
			break;
		}
		listener_heard(l, n);
	}
	pthread_mutex_unlock(&srv->mu);
done:
	kt__buf_free(&ack);
	if (l != NULL) {
		pthread_mutex_lock(&srv->mu);
		listener_unlink(l);
		pthread_mutex_unlock(&srv->mu);
	}
}

/* Remember or forget the orphans @p cm of connection @p c made or
 * dropped. */
static void orphans_note(kt__conn *c, const kt__commit *cm)
{
	size_t plen = strlen(KT__PART_ORPHAN), i, j;

	for (i = 0; i < cm->nw; i++) {
		const kt__write *w = &cm->w[i];
		uint64_t id;

		if (w->part.len != plen || w->sort.len != 8 ||
		    memcmp(w->part.p, KT__PART_ORPHAN, plen) != 0)
			continue;
		id = kt__get64be((const unsigned char *)w->sort.p);
		for (j = 0; j < c->norphans; j++)
			if (c->orphans[j] == id)
				break;
		if (w->del || w->value.p == NULL) {
			if (j < c->norphans)
				c->orphans[j] = c->orphans[--c->norphans];
			continue;
		}
		if (j < c->norphans)
			continue;
		if (c->norphans == c->corphans) {
			size_t nc = c->corphans ? 2 * c->corphans : 8;
			uint64_t *t = realloc(c->orphans, nc * sizeof(*t));
			if (t == NULL)
				continue; /* the next holder drops it */
			c->orphans = t;
			c->corphans = nc;
		}
		c->orphans[c->norphans++] = id;
	}
}

void kt__server_on_orphans(kt__server *srv, kt__orphans_fn fn, void *arg)
{
	pthread_mutex_lock(&srv->mu);
	srv->ofn = fn;
	srv->oarg = arg;
	pthread_mutex_unlock(&srv->mu);
}

void kt__server_on_abandon(kt__server *srv, kt__abandon_fn fn, void *arg)
{
	pthread_mutex_lock(&srv->mu);
	srv->afn = fn;
	srv->aarg = arg;
	pthread_mutex_unlock(&srv->mu);
}

/* FENCE: the prefixes, then the engine's fence, owned by this thread. */
static int serve_fence(kt__conn *c, kt__wire_in *in, kt__buf *out)
{
	kt__rows *r = c->srv->rows;
	uint32_t n = kt__wire_get_u32(in), i;
	kt__slice *pre;
	uint64_t token = 0;
	int rc;

	if (in->bad || n == 0 || n > 16)
		return 1;
	if ((pre = calloc(n, sizeof(*pre))) == NULL)
		return KT_ENOMEM;
	for (i = 0; i < n; i++)
		pre[i] = kt__wire_get_bytes(in);
	if (in->bad || in->pos != in->len) {
		free(pre);
		return 1;
	}
	if (c->fence != 0)
		rc = kt__err(KT_EBUSY, "this connection has a fence up "
			     "already");
	else if (r->ops->fence == NULL)
		rc = kt__err(KT_EINVAL, "the holder's engine has no fences");
	else
		rc = r->ops->fence(r, pre, n, &token);
	free(pre);
	if (rc == 0)
		c->fence = token;
	if (reply_begin(out, rc) != 0 ||
	    (rc == 0 && kt__wire_u64(out, token) != 0))
		return KT_ENOMEM;
	return 0;
}

/* Decode and run a COMMIT.  Returns the engine's status, or 1 for a
 * malformed request. */
static int serve_commit(kt__conn *c, kt__wire_in *in, uint64_t *applied)
{
	kt__rows *r = c->srv->rows;
	kt__commit cm;
	kt__write *w = NULL;
	kt__cond *cd = NULL;
	uint64_t sh = kt__wire_get_u64(in);
	uint32_t i, nw, nc;
	int rc;

	memset(&cm, 0, sizeof(cm));
	cm.sync = kt__wire_get_u8(in) != 0;
	if ((rc = writes_read(&w, &nw, in)) != 0)
		return rc;
	nc = kt__wire_get_u32(in);
	if (in->bad || nc > (in->len - in->pos) / 34) {
		free(w);
		return 1;
	}
	if (nc > 0 && (cd = calloc(nc, sizeof(*cd))) == NULL) {
		free(w);
		return kt__err(KT_ENOMEM, "out of memory");
	}
	for (i = 0; i < nc; i++) {
		cd[i].kind = (int)kt__wire_get_u8(in);
		cd[i].part = kt__wire_get_bytes(in);
		cd[i].sort = kt__wire_get_bytes(in);
		read_scan(in, &cd[i].how);
		cd[i].nrows = kt__wire_get_u64(in);
		cd[i].complete = kt__wire_get_u8(in) != 0;
		if (cd[i].kind != KT__COND_ROW && cd[i].kind != KT__COND_SCAN)
			in->bad = 1;
	}
	cm.snap = sh ? slot_get((void **)c->snaps, c->nsnaps, sh) : NULL;
	if (in->bad || in->pos != in->len || (sh && cm.snap == NULL)) {
		rc = 1;
	} else {
		cm.w = w;
		cm.nw = nw;
		cm.c = cd;
		cm.nc = nc;
		cm.applied = applied;
		rc = r->ops->commit(r, &cm);
		if (rc == 0) {
			orphans_note(c, &cm);
			publish(c->srv, &cm, c->sid);
		}
	}
	free(w);
	free(cd);
	return rc;
}

/* Take a snapshot for connection @p c, for a read that asked for it
 * ("take"): into *snap, its handle into *h (0 when it failed). */
static int snap_take(kt__conn *c, kt__snap **snap, uint64_t *h)
{
	kt__rows *r = c->srv->rows;
	int rc;

	*h = 0;
	if ((rc = r->ops->snapshot(snap, r)) != 0)
		return rc;
	if ((rc = slot_add((void ***)&c->snaps, &c->nsnaps, *snap, h)) != 0) {
		r->ops->snapshot_free(r, *snap);
		*snap = NULL;
		*h = 0;
	}
	return rc;
}

/* Answer one request in @p req into @p out (empty when the request has no
 * reply).  0, or 1 when the request is malformed (the connection closes),
 * or a negative code when the reply cannot be built. */
static int serve_one(kt__conn *c, const kt__buf *req, kt__buf *out)
{
	kt__rows *r = c->srv->rows;
	kt__wire_in in = {(const unsigned char *)req->p, req->len, 0, 0};
	unsigned int op = kt__wire_get_u8(&in);
	kt__buf val = {0};
	kt__scan how;
	kt__slice part, sort;
	kt__snap *snap;
	kt__cursor *cur;
	uint64_t h, sh = 0;
	unsigned int take;
	int rc;

	out->len = 0;
	switch (op) {
	case KT__OP_GET:
		h = kt__wire_get_u64(&in);
		take = kt__wire_get_u8(&in);
		part = kt__wire_get_bytes(&in);
		sort = kt__wire_get_bytes(&in);
		snap = h ? slot_get((void **)c->snaps, c->nsnaps, h) : NULL;
		if (in.bad || in.pos != in.len || (h && snap == NULL) ||
		    take > 1 || (take && h))
			return 1;
		rc = take ? snap_take(c, &snap, &h) : 0;
		if (rc == 0)
			rc = r->ops->get(r, snap, part, sort, &val);
		if (reply_begin(out, rc) != 0 ||
		    (take && kt__wire_u64(out, h) != 0) ||
		    (rc == 0 && kt__wire_bytes(out, kt__slb(&val)) != 0))
			rc = KT_ENOMEM;
		else
			rc = 0;
		kt__buf_free(&val);
		return rc;
	case KT__OP_SCAN:
		h = kt__wire_get_u64(&in);
		take = kt__wire_get_u8(&in);
		memset(&how, 0, sizeof(how));
		read_scan(&in, &how);
		snap = h ? slot_get((void **)c->snaps, c->nsnaps, h) : NULL;
		if (in.bad || in.pos != in.len || (h && snap == NULL) ||
		    take > 1 || (take && h))
			return 1;
		rc = take ? snap_take(c, &snap, &sh) : 0;
		if (rc == 0)
			rc = r->ops->scan(&cur, r, snap, &how);
		if (rc == 0 && (rc = slot_add((void ***)&c->curs, &c->ncurs,
					      cur, &h)) != 0)
			r->ops->cursor_free(cur);
		if (reply_begin(out, rc) != 0 ||
		    (take && kt__wire_u64(out, sh) != 0))
			return KT_ENOMEM;
		return rc == 0 ? batch_fill(c, h, out) : 0;
	case KT__OP_NEXT:
		h = kt__wire_get_u64(&in);
		if (in.bad || in.pos != in.len ||
		    slot_get((void **)c->curs, c->ncurs, h) == NULL)
			return 1;
		if (reply_begin(out, 0) != 0)
			return KT_ENOMEM;
		return batch_fill(c, h, out);
	case KT__OP_CURSOR_FREE:
		h = kt__wire_get_u64(&in);
		if (in.bad || in.pos != in.len ||
		    slot_get((void **)c->curs, c->ncurs, h) == NULL)
			return 1;
		r->ops->cursor_free(c->curs[h - 1]);
		c->curs[h - 1] = NULL;
		return 0;
	case KT__OP_SNAPSHOT:
		if (in.pos != in.len)
			return 1;
		rc = r->ops->snapshot(&snap, r);
		if (rc == 0 && (rc = slot_add((void ***)&c->snaps, &c->nsnaps,
					      snap, &h)) != 0)
			r->ops->snapshot_free(r, snap);
		if (reply_begin(out, rc) != 0 ||
		    (rc == 0 && kt__wire_u64(out, h) != 0))
			return KT_ENOMEM;
		return 0;
	case KT__OP_SNAPSHOT_FREE:
		h = kt__wire_get_u64(&in);
		if (in.bad || in.pos != in.len ||
		    slot_get((void **)c->snaps, c->nsnaps, h) == NULL)
			return 1;
		r->ops->snapshot_free(r, c->snaps[h - 1]);
		c->snaps[h - 1] = NULL;
		return 0;
	case KT__OP_COMMIT:
		h = 0;
		rc = serve_commit(c, &in, &h);
		if (rc == 1)
			return 1;
		if (reply_begin(out, rc) != 0 ||
		    (rc == 0 && kt__wire_u64(out, h) != 0))
			return KT_ENOMEM;
		return 0;
	case KT__OP_SYNC:
		if (in.pos != in.len)
			return 1;
		rc = r->ops->sync(r);
		return reply_begin(out, rc) != 0 ? KT_ENOMEM : 0;
	case KT__OP_EMPTY:
		if (in.pos != in.len)
			return 1;
		rc = r->ops->empty(r);
		return reply_begin(out, rc) != 0 ? KT_ENOMEM : 0;
	case KT__OP_WATCH:
		if (in.pos != in.len)
			return 1;
		pthread_mutex_lock(&c->srv->mu);
		c->watching = 1;
		pthread_mutex_unlock(&c->srv->mu);
		if (reply_begin(out, 0) != 0 || kt__wire_u64(out, c->sid) != 0)
			return KT_ENOMEM;
		return 0;
	case KT__OP_LISTEN:
		h = kt__wire_get_u64(&in);
		if (in.bad || in.pos != in.len)
			return 1;
		serve_listen(c, h, out);
		return 1; /* the connection is done */
	case KT__OP_FENCE:
		return serve_fence(c, &in, out);
	case KT__OP_UNFENCE:
		h = kt__wire_get_u64(&in);
		take = kt__wire_get_u8(&in);
		if (in.bad || in.pos != in.len || h == 0 || h != c->fence ||
		    take > 1)
			return 1;
		(void)r->ops->unfence(r, h, (int)take);
		c->fence = 0;
		return reply_begin(out, 0) != 0 ? KT_ENOMEM : 0;
	default:
		return 1;
	}
}

/* The HELLO exchange.  0 when the client may go on. */
static int serve_hello(kt__conn *c, kt__buf *req, kt__buf *out)
{
	kt__wire_in in = {(const unsigned char *)req->p, req->len, 0, 0};
	unsigned int op = kt__wire_get_u8(&in);
	kt__slice magic = kt__wire_get_bytes(&in);
	uint32_t ver = kt__wire_get_u32(&in);
	int rc = 0;

	if (in.bad || op != KT__OP_HELLO || magic.len != KT__PROTO_MAGIC_LEN ||
	    memcmp(magic.p, KT__PROTO_MAGIC, KT__PROTO_MAGIC_LEN) != 0)
		return -1; /* not one of ours: just close */
	if (ver != KT__PROTO_VERSION)
		rc = kt__err(KT_EVERSION, "the holder of the store (pid %ld, "
			     "keytree %s) speaks protocol version %u, this "
			     "process version %u", (long)getpid(),
			     KT_VERSION_STRING, KT__PROTO_VERSION, ver);
	if (rc == 0)
		rc = peer_check(c->srv, c->fd);
	if (reply_begin(out, rc) != 0 ||
	    kt__wire_u32(out, KT__PROTO_VERSION) != 0 ||
	    kt__wire_u32(out, (uint32_t)getpid()) != 0 ||
	    kt__wire_send(c->fd, out) != 0)
		return -1;
	return rc == 0 ? 0 : -1;
}

/* Connection @p c is closing: its listener hears nothing more, and the
 * orphans it left are dropped. */
static void conn_end(kt__conn *c)
{
	kt__server *srv = c->srv;
	kt__listener *l;
	kt__orphans_fn fn;
	kt__abandon_fn afn;
	void *arg, *aarg;
	int stopping;

	pthread_mutex_lock(&srv->mu);
	for (l = srv->listeners; l != NULL; l = l->next)
		if (c->watching && l->session == c->sid)
			listener_kill(l);
	c->watching = 0;
	stopping = srv->stopping;
	fn = srv->ofn;
	arg = srv->oarg;
	afn = srv->afn;
	aarg = srv->aarg;
	pthread_mutex_unlock(&srv->mu);
	/* A client killed in the steps of a large operation: finish them
	 * here, the fence's owner, then lift it.  When the holder is
	 * closing, the next open finishes them; the fence stands till
	 * then. */
	if (c->fence != 0) {
		if (afn != NULL && !stopping)
			afn(aarg);
		(void)srv->rows->ops->unfence(srv->rows, c->fence,
					afn == NULL || stopping);
		c->fence = 0;
	}
	if (c->norphans > 0 && fn != NULL && !stopping)
		fn(arg, c->orphans, c->norphans);
	free(c->orphans);
	c->orphans = NULL;
	c->norphans = c->corphans = 0;
}

static void *conn_main(void *arg)
{
	kt__conn *c = arg;
	kt__rows *r = c->srv->rows;
	kt__buf req = {0}, out = {0};
	size_t i;
	int rc;

	/* A call that meets a fence is answered at once (KT__EFENCED), and
	 * the client waits: this thread serves every thread of the client's
	 * process. */
	kt__fence_nowait = 1;
	/* Nothing large is read before the caller is known. */
	rc = kt__wire_recv(c->fd, &req, KT__HELLO_MAX);
	if (rc == 0)
		rc = serve_hello(c, &req, &out);
	while (rc == 0) {
		if (kt__wire_recv(c->fd, &req, KT__FRAME_MAX) != 0)
			break;
		/* Frames are sized by what they carry: do not keep a large
		 * one's memory for the life of the connection. */
		rc = serve_one(c, &req, &out);
		if (rc == 0 && out.len > 0 && kt__wire_send(c->fd, &out) != 0)
			rc = -1;
		if (req.cap > (4u << 20))
			kt__buf_free(&req);
		if (out.cap > (4u << 20))
			kt__buf_free(&out);
	}
	kt__buf_free(&req);
	kt__buf_free(&out);
	for (i = 0; i < c->ncurs; i++)
		if (c->curs[i] != NULL)
			r->ops->cursor_free(c->curs[i]);
	for (i = 0; i < c->nsnaps; i++)
		if (c->snaps[i] != NULL)
			r->ops->snapshot_free(r, c->snaps[i]);
	free(c->curs);
	free(c->snaps);
	c->curs = NULL;
	c->snaps = NULL;
	c->ncurs = c->nsnaps = 0;
	conn_end(c);
	/* The descriptor stays open until the join, so that stop never
	 * shuts down a number that has been reused meanwhile. */
	shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_lock(&c->srv->mu);
	c->done = 1;
	pthread_mutex_unlock(&c->srv->mu);
	return NULL;
}

/* Join and free the connections whose threads have finished (all of them
 * when @p all).  Caller does not hold srv->mu. */
static void conns_reap(kt__server *srv, int all)
{
	kt__conn **pp, *c, *dead = NULL;

	pthread_mutex_lock(&srv->mu);
	pp = &srv->conns;
	while ((c = *pp) != NULL) {
		if (all || c->done) {
			*pp = c->next;
			c->next = dead;
			dead = c;
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&srv->mu);
	while ((c = dead) != NULL) {
		dead = c->next;
		pthread_join(c->th, NULL);
		close(c->fd);
		free(c);
	}
}

static void *accept_main(void *arg)
{
	kt__server *srv = arg;

	for (;;) {
		kt__conn *c;
		int fd = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			pthread_mutex_lock(&srv->mu);
			if (srv->stopping) {
				pthread_mutex_unlock(&srv->mu);
				break;
			}
			pthread_mutex_unlock(&srv->mu);
			/* Out of descriptors or memory: wait a little
			 * rather than spin. */
			poll(NULL, 0, 50);
			continue;
		}
		conns_reap(srv, 0);
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->srv = srv;
		c->fd = fd;
		pthread_mutex_lock(&srv->mu);
		c->sid = ++srv->nsid;
		if (srv->stopping ||
		    pthread_create(&c->th, NULL, conn_main, c) != 0) {
			pthread_mutex_unlock(&srv->mu);
			close(fd);
			free(c);
			continue;
		}
		c->next = srv->conns;
		srv->conns = c;
		pthread_mutex_unlock(&srv->mu);
	}
	return NULL;
}

int kt__server_start(kt__server **out, kt__rows *rows, const char *dir)
{
	kt__server *srv;
	struct sockaddr_un a;
	mode_t mode;
	int afd = -1, rc;

	*out = NULL;
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return kt__err(KT_ENOMEM, "out of memory");
	srv->rows = rows;
	srv->lfd = -1;
	srv->euid = geteuid();
	pthread_mutex_init(&srv->mu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	srv->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (srv->dfd < 0 || fstat(srv->dfd, &srv->dir) != 0) {
		rc = kt__err(KT_EIO, "serving '%s': %s", dir, strerror(errno));
		goto fail;
	}
	srv->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0 || kt__wire_addr(&a, &afd, dir) != 0) {
		rc = kt__err(KT_EIO, "serving '%s': %s", dir, strerror(errno));
		goto fail;
	}
	/* This process holds the LevelDB lock, so a socket file there is
	 * a dead holder's. */
	unlinkat(srv->dfd, KT__SOCK_NAME, 0);
	if (bind(srv->lfd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		rc = kt__err(KT_EIO, "serving '%s': cannot create %s: %s", dir,
			     KT__SOCK_NAME, strerror(errno));
		goto fail;
	}
	/* Permissions before listen(): nobody can connect until then. */
	mode = srv->dir.st_mode & 0666;
	if (fchownat(srv->dfd, KT__SOCK_NAME, srv->dir.st_uid,
		     srv->dir.st_gid, 0) != 0)
		mode = 0600;
	if (fchmodat(srv->dfd, KT__SOCK_NAME, mode, 0) != 0 ||
	    listen(srv->lfd, 64) != 0) {
		rc = kt__err(KT_EIO, "serving '%s': %s", dir, strerror(errno));
		unlinkat(srv->dfd, KT__SOCK_NAME, 0);
		goto fail;
	}
	if (pthread_create(&srv->accept_th, NULL, accept_main, srv) != 0) {
		rc = kt__err(KT_EIO, "serving '%s': cannot start a thread",
			     dir);
		unlinkat(srv->dfd, KT__SOCK_NAME, 0);
		goto fail;
	}
	if (afd >= 0)
		close(afd);
	*out = srv;
	return 0;
fail:
	if (afd >= 0)
		close(afd);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->dfd >= 0)
		close(srv->dfd);
	pthread_cond_destroy(&srv->cv);
	pthread_mutex_destroy(&srv->mu);
	free(srv);
	return rc;
}

void kt__server_stop(kt__server *srv)
{
	kt__conn *c;

	if (srv == NULL)
		return;
	kt__server_watch(srv, NULL, NULL);
	pthread_mutex_lock(&srv->mu);
	srv->stopping = 1;
	pthread_cond_broadcast(&srv->cv);
	/* Wake the accept thread and every connection's. */
	shutdown(srv->lfd, SHUT_RDWR);
	for (c = srv->conns; c != NULL; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&srv->mu);
	pthread_join(srv->accept_th, NULL);
	conns_reap(srv, 1);
	close(srv->lfd);
	unlinkat(srv->dfd, KT__SOCK_NAME, 0);
	close(srv->dfd);
	pthread_cond_destroy(&srv->cv);
	pthread_mutex_destroy(&srv->mu);
	free(srv);
}
