/*
 * server.h - one store, several processes: the holder of a store (the
 * process whose LevelDB engine holds the lock) serves the storage seam
 * (rows.h) on a Unix stream socket in the store directory (server.c), and
 * other processes reach it through the remote engine (rows_remote.c).  The
 * protocol is described at the top of server.c.  Private; never installed.
 */
#ifndef KT_SERVER_H
#define KT_SERVER_H

#include <sys/un.h>

#include "rows.h"

#define KT__SOCK_NAME "keytree.sock"
#define KT__PROTO_VERSION 3u
#define KT__PROTO_MAGIC "keytree-rows"
#define KT__PROTO_MAGIC_LEN 12
/* The largest frame either side accepts; larger ones close the
 * connection. */
#define KT__FRAME_MAX (1u << 30)
/* A cursor's batch ends after this many rows or bytes, whichever first. */
#define KT__BATCH_ROWS 256u
#define KT__BATCH_BYTES (256u << 10)

/* Requests.  Values are part of the protocol: never renumber. */
enum {
	KT__OP_HELLO = 1,
	KT__OP_GET = 2,
	KT__OP_SCAN = 3,
	KT__OP_NEXT = 4,
	KT__OP_CURSOR_FREE = 5,  /* no reply */
	KT__OP_SNAPSHOT = 6,
	KT__OP_SNAPSHOT_FREE = 7, /* no reply */
	KT__OP_COMMIT = 8,
	KT__OP_SYNC = 9,
	KT__OP_EMPTY = 10,
	KT__OP_WATCH = 11,  /* version 2 */
	KT__OP_LISTEN = 12,
	KT__OP_NOTE = 13,   /* holder -> listener */
	KT__OP_ACK = 14,    /* listener -> holder, no reply */
	KT__OP_FENCE = 15,  /* version 3 */
	KT__OP_UNFENCE = 16
};

/* A note carries at most this many bytes of each written value: enough
 * for the id of a node row (bytes 2..9) or an index row (1..8). */
#define KT__NOTE_VALUE 16u
/* A listener whose unheard notes pass this many bytes is dropped. */
#define KT__NOTE_QUEUE_MAX (64u << 20)
/* How long a commit of a process that watches nothing waits for the
 * watchers to hear it, in milliseconds. */
#define KT__NOTE_WAIT_MS 2000

typedef struct kt__server kt__server;

/* Hears the writes of one commit (values cut to KT__NOTE_VALUE bytes). */
typedef void (*kt__notify_fn)(void *arg, const kt__write *w, size_t n);

/* Drops the orphans @p ids a client left when its connection closed. */
typedef void (*kt__orphans_fn)(void *arg, const uint64_t *ids, size_t n);

/* Finishes the large rename or delete (ops.c) whose client went away
 * while its fence stood: called on the connection's thread, which owns
 * the fence, before the fence is lifted. */
typedef void (*kt__abandon_fn)(void *arg);

/* Serve @p rows (the holder's LevelDB engine, which must outlive the
 * server) on DIR/keytree.sock, replacing a stale socket file.  0, or an
 * error with the message set. */
int kt__server_start(kt__server **out, kt__rows *rows, const char *dir);

/* Call @p fn with the orphans a client leaves behind when its connection
 * closes (the orphan rows its commits wrote and did not delete), unless
 * the server is stopping.  Set once, before clients can commit. */
void kt__server_on_orphans(kt__server *srv, kt__orphans_fn fn, void *arg);

/* Call @p fn when a client's connection closes while it holds a fence
 * (rows.h), unless the server is stopping: its large rename or delete
 * was cut short, and the holder finishes it.  Set once, before clients
 * can commit. */
void kt__server_on_abandon(kt__server *srv, kt__abandon_fn fn, void *arg);

/* Tell the watchers about @p cm, which the holder's own handle has just
 * committed; when the holder itself watches nothing, wait (a bounded
 * time) until each has heard it. */
void kt__server_publish(kt__server *srv, const kt__commit *cm);

/* The holder's own watcher: @p fn hears every client's commit on a thread
 * of the server.  NULL removes it (waiting until a call in progress
 * returns).  0, KT_EEXISTS when one is set, KT_ENOMEM. */
int kt__server_watch(kt__server *srv, kt__notify_fn fn, void *arg);

/* Stop serving: close the listening socket and every connection, join the
 * threads, free what the clients held (snapshots, cursors) and remove the
 * socket file.  NULL is allowed. */
void kt__server_stop(kt__server *srv);

/* Connect to the holder serving the store in @p dir.  0 with *out set;
 * KT_ENOTFOUND (no message) when nobody listens there (no socket file, or
 * it refuses: a holder starting up, an old holder without a server, a
 * stale file); any other error with the message set (the holder refused
 * this client: another protocol version, no permission). */
int kt__remote_open(kt__rows **out, const char *dir);

/* Is @p r the remote engine? */
int kt__rows_is_remote(const kt__rows *r);

/* In a client: hear every commit of the other processes on a thread of
 * the remote engine (a second connection, on which the holder sends
 * notes); NULL @p fn stops it.  0, KT_EEXISTS, KT_EIO, KT_ENOMEM. */
int kt__remote_watch(kt__rows *r, kt__notify_fn fn, void *arg);

/* ---- Wire helpers shared by both sides --------------------------------
 * A frame is u32 length (little-endian) then that many bytes.  A frame
 * being built is a kt__buf whose first four bytes are the length, filled
 * in by kt__wire_send. */

/* The address of DIR/keytree.sock into @p a.  When the path does not fit
 * a sun_path, the address goes through /proc/self/fd/N of a directory
 * descriptor returned in *dfd (close it after bind or connect; -1 when
 * none was opened).  0, or -1 with errno set. */
int kt__wire_addr(struct sockaddr_un *a, int *dfd, const char *dir);

/* Start a frame: four bytes of room for the length, then @p op. */
int kt__wire_begin(kt__buf *b, unsigned int op);
int kt__wire_u8(kt__buf *b, unsigned int v);
int kt__wire_u32(kt__buf *b, uint32_t v);
int kt__wire_u64(kt__buf *b, uint64_t v);
/* u32 length, then the bytes. */
int kt__wire_bytes(kt__buf *b, kt__slice s);

/* Send the frame in @p b (fills in its length).  0, or -1 with errno set
 * (EPIPE and ECONNRESET when the peer is gone; never raises SIGPIPE). */
int kt__wire_send(int fd, kt__buf *b);

/* Receive one frame of at most @p max bytes into @p b (its body only,
 * without the length).  0; 1 at a clean end of stream before a frame; -1
 * with errno set (EPROTO for a frame over @p max or cut short). */
int kt__wire_recv(int fd, kt__buf *b, size_t max);

/* The largest HELLO the holder reads, before it knows who is calling. */
#define KT__HELLO_MAX 256u

/* Reading a received frame: each getter sets bad (and returns 0 or an
 * empty slice) when the frame is shorter than what it asks for. */
typedef struct kt__wire_in {
	const unsigned char *p;
	size_t len;
	size_t pos;
	int bad;
} kt__wire_in;

unsigned int kt__wire_get_u8(kt__wire_in *in);
uint32_t kt__wire_get_u32(kt__wire_in *in);
uint64_t kt__wire_get_u64(kt__wire_in *in);
kt__slice kt__wire_get_bytes(kt__wire_in *in);

/* Notes on the wire: u32 n, n x (bytes part, bytes sort, u8 del, bytes
 * value cut to KT__NOTE_VALUE).  Encode @p cm's writes into @p b (appended);
 * decode the note at @p in into a malloc'd array (*w, *n) pointing into
 * the frame.  Decoding: 0, or 1 for a malformed note. */
int kt__note_encode(kt__buf *b, const kt__commit *cm);
int kt__note_decode(kt__write **w, size_t *n, kt__wire_in *in);

#endif /* KT_SERVER_H */
