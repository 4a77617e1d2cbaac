/*
 * node.c - the node row and the index row: their byte layout (documented
 * in docs/FORMAT.md), and reading and writing them by path.
 *
 * Node row, under partition E(path), sort key "" (little-endian):
 *   u8 format (1), u8 kind, u64 id, u32 mode, u32 uid, u32 gid, u64 size,
 *   i64 atime, i64 mtime, i64 ctime, u64 version, u32 nsubdirs, u32 nattrs,
 *   u32 nblocks, then the payload: a link's target, an item's value when
 *   it is at most the inline limit, or a special file's u8 type and u64
 *   rdev.
 * Index row, under partition E(parent)||delimiter, sort key = the name:
 *   u8 kind, u64 id, and for a special file u8 type.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tree.h"

#define NODE_FORMAT 1
/* A node with several paths (format 4): the same header, then u32 nlink
 * (at least 2), then the payload.  A node with one path is always written
 * in the plain layout, so each node has exactly one encoding. */
#define NODE_FORMAT_LINKED 2
/* A directory that counts its entries (a store with the counted flag):
 * the same header, then u32 nentries, then the payload.  A directory
 * cannot have several paths, so the two never meet. */
#define NODE_FORMAT_COUNTED 3

int64_t kt__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Item, directory, or both; or a link alone; or a special file alone. */
static int kind_valid(unsigned int kind)
{
	if (kind == KT_KIND_LINK || kind == KT_KIND_SPECIAL)
		return 1;
	return kind != 0 && (kind & ~(KT_KIND_ITEM | KT_KIND_DIR)) == 0;
}

int kt__type_valid(unsigned int type)
{
	return type == KT_TYPE_FIFO || type == KT_TYPE_CHR ||
	       type == KT_TYPE_BLK || type == KT_TYPE_SOCK;
}

const char *kt__type_noun(unsigned int type)
{
	switch (type) {
	case KT_TYPE_FIFO: return "a FIFO";
	case KT_TYPE_CHR: return "a character device";
	case KT_TYPE_BLK: return "a block device";
	case KT_TYPE_SOCK: return "a socket";
	}
	return "a special file";
}

void kt__special_encode(unsigned char out[KT__SPECIAL_LEN], unsigned int type,
			uint64_t rdev)
{
	out[0] = (unsigned char)type;
	kt__put64(out + 1, rdev);
}

unsigned int kt__node_type(const kt__node *n, uint64_t *rdev)
{
	const unsigned char *u = (const unsigned char *)n->payload.p;

	if (rdev != NULL)
		*rdev = 0;
	if (n->kind != KT_KIND_SPECIAL || n->payload.len != KT__SPECIAL_LEN)
		return 0;
	if (rdev != NULL)
		*rdev = kt__get64(u + 1);
	return u[0];
}

const char *kt__node_noun(const kt__node *n)
{
	if (n->kind == KT_KIND_LINK)
		return "a link";
	if (n->kind == KT_KIND_SPECIAL)
		return kt__type_noun(kt__node_type(n, NULL));
	if (n->kind & KT_KIND_ITEM)
		return "an item";
	return "a directory without a value";
}

/* A special file's payload: a known type, and a device number only on a
 * device. */
static int special_ok(const kt__node *n, const char *payload, size_t plen)
{
	const unsigned char *u = (const unsigned char *)payload;
	unsigned int type;

	if (plen != KT__SPECIAL_LEN || n->size != 0)
		return kt__err(KT_ECORRUPT, "special file row with a payload of"
			       " %zu bytes and size %llu (expected %d and 0)",
			       plen, (unsigned long long)n->size,
			       KT__SPECIAL_LEN);
	type = u[0];
	if (!kt__type_valid(type))
		return kt__err(KT_ECORRUPT, "special file row has unknown "
			       "type %u", type);
	if ((type == KT_TYPE_FIFO || type == KT_TYPE_SOCK) &&
	    kt__get64(u + 1) != 0)
		return kt__err(KT_ECORRUPT, "%s row carries a device number",
			       kt__type_noun(type));
	return 0;
}

int kt__node_decode_hdr(kt__node *n, const char *p, size_t len)
{
	const unsigned char *u = (const unsigned char *)p;

	if (len < KT__NODE_HDR ||
	    (u[0] != NODE_FORMAT &&
	     (u[0] != NODE_FORMAT_LINKED || len < KT__NODE_HDR_LINKED) &&
	     (u[0] != NODE_FORMAT_COUNTED || len < KT__NODE_HDR_COUNTED)))
		return kt__err(KT_ECORRUPT, "node row of %zu bytes does not "
			       "decode", len);
	n->kind = u[1];
	n->id = kt__get64(u + 2);
	n->mode = kt__get32(u + 10);
	n->uid = kt__get32(u + 14);
	n->gid = kt__get32(u + 18);
	n->size = kt__get64(u + 22);
	n->atime = (int64_t)kt__get64(u + 30);
	n->mtime = (int64_t)kt__get64(u + 38);
	n->ctime = (int64_t)kt__get64(u + 46);
	n->version = kt__get64(u + 54);
	n->nsubdirs = kt__get32(u + 62);
	n->nattrs = kt__get32(u + 66);
	n->nblocks = kt__get32(u + 70);
	n->nlink = 1;
	n->nentries = 0;
	n->counted = 0;
	if (!kind_valid(n->kind))
		return kt__err(KT_ECORRUPT, "node row has bad kind %u",
			       n->kind);
	if (u[0] == NODE_FORMAT_LINKED) {
		n->nlink = kt__get32(u + KT__NODE_HDR);
		if (n->nlink < 2 || n->nlink > KT_LINK_MAX ||
		    (n->kind & KT_KIND_DIR))
			return kt__err(KT_ECORRUPT, "node row of a %s with "
				       "link count %u",
				       (n->kind & KT_KIND_DIR) ? "directory"
							       : "node",
				       (unsigned)n->nlink);
	}
	if (u[0] == NODE_FORMAT_COUNTED) {
		if (!(n->kind & KT_KIND_DIR))
			return kt__err(KT_ECORRUPT, "node row of a node that "
				       "is not a directory carries an entry "
				       "count");
		n->nentries = kt__get32(u + KT__NODE_HDR);
		n->counted = 1;
	}
	return 0;
}

size_t kt__node_hdr_len(const char *p, size_t len)
{
	if (len > 0 && (unsigned char)p[0] == NODE_FORMAT_LINKED)
		return KT__NODE_HDR_LINKED;
	if (len > 0 && (unsigned char)p[0] == NODE_FORMAT_COUNTED)
		return KT__NODE_HDR_COUNTED;
	return KT__NODE_HDR;
}

/* Does the payload have exactly the length the kind and size announce? */
static int payload_ok(const kt__node *n, const char *payload, size_t plen)
{
	if (n->kind == KT_KIND_SPECIAL) {
		return special_ok(n, payload, plen);
	} else if (n->kind == KT_KIND_LINK) {
		if (plen != n->size)
			return kt__err(KT_ECORRUPT, "link row payload of %zu "
				       "bytes, size says %llu", plen,
				       (unsigned long long)n->size);
	} else if ((n->kind & KT_KIND_ITEM) && n->size <= KT__INLINE_MAX) {
		if (plen != n->size)
			return kt__err(KT_ECORRUPT, "item row payload of %zu "
				       "bytes, size says %llu", plen,
				       (unsigned long long)n->size);
	} else if (plen != 0) {
		return kt__err(KT_ECORRUPT, "node row has %zu stray payload "
			       "bytes", plen);
	}
	return 0;
}

/* Decode the row in @p val and keep its buffer as the payload: the row is
 * read once and copied no more. */
static int node_decode_take(kt__node *n, kt__buf *val)
{
	size_t plen, hdr;
	int rc = kt__node_decode_hdr(n, val->p, val->len);

	if (rc != 0)
		return rc;
	hdr = kt__node_hdr_len(val->p, val->len);
	plen = val->len - hdr;
	if ((rc = payload_ok(n, val->p + hdr, plen)) != 0)
		return rc;
	memmove(val->p, val->p + hdr, plen);
	val->len = plen;
	val->p[plen] = '\0';
	kt__buf_free(&n->payload);
	n->payload = *val;
	memset(val, 0, sizeof(*val));
	return 0;
}

int kt__node_decode(kt__node *n, const char *p, size_t len)
{
	int rc = kt__node_decode_hdr(n, p, len);
	size_t hdr, plen;

	if (rc != 0)
		return rc;
	hdr = kt__node_hdr_len(p, len);
	plen = len - hdr;
	if ((rc = payload_ok(n, p + hdr, plen)) != 0)
		return rc;
	return kt__buf_set(&n->payload, p + hdr, plen);
}

int kt__node_encode(kt__buf *out, const kt__node *n)
{
	unsigned char h[KT__NODE_HDR_LINKED];
	size_t hlen = KT__NODE_HDR;
	int rc;

	h[0] = NODE_FORMAT;
	if (n->nlink > 1) {
		h[0] = NODE_FORMAT_LINKED;
		kt__put32(h + KT__NODE_HDR, n->nlink);
		hlen = KT__NODE_HDR_LINKED;
	} else if (n->counted && (n->kind & KT_KIND_DIR)) {
		h[0] = NODE_FORMAT_COUNTED;
		kt__put32(h + KT__NODE_HDR, n->nentries);
		hlen = KT__NODE_HDR_COUNTED;
	}
	h[1] = (unsigned char)n->kind;
	kt__put64(h + 2, n->id);
	kt__put32(h + 10, n->mode);
	kt__put32(h + 14, n->uid);
	kt__put32(h + 18, n->gid);
	kt__put64(h + 22, n->size);
	kt__put64(h + 30, (uint64_t)n->atime);
	kt__put64(h + 38, (uint64_t)n->mtime);
	kt__put64(h + 46, (uint64_t)n->ctime);
	kt__put64(h + 54, n->version);
	kt__put32(h + 62, n->nsubdirs);
	kt__put32(h + 66, n->nattrs);
	kt__put32(h + 70, n->nblocks);
	out->len = 0;
	if ((rc = kt__buf_add(out, h, hlen)) != 0)
		return rc;
	return kt__buf_add(out, n->payload.p, n->payload.len);
}

void kt__node_free(kt__node *n)
{
	kt__buf_free(&n->payload);
}

void kt__node_fill_stat(kt_statbuf *sb, const kt_store *st,
			const kt__node *n)
{
	memset(sb, 0, sizeof(*sb));
	sb->id = n->id;
	sb->kind = n->kind;
	sb->mode = n->mode;
	sb->uid = n->uid;
	sb->gid = n->gid;
	sb->size = n->size;
	sb->atime_ns = n->atime;
	sb->mtime_ns = n->mtime;
	sb->ctime_ns = n->ctime;
	sb->version = n->version;
	sb->nsubdirs = n->nsubdirs;
	sb->nattrs = n->nattrs;
	sb->nlink = n->nlink > 1 ? n->nlink : 1;
	if (!(n->kind & KT_KIND_ITEM))
		sb->stored = 0;
	else if (n->size <= st->inline_max)
		sb->stored = n->size;
	else if (st->format < 2) /* no block count yet: as if dense */
		sb->stored = (n->size + st->block - 1) / st->block * st->block;
	else
		sb->stored = (uint64_t)n->nblocks * st->block;
	sb->type = kt__node_type(n, &sb->rdev);
	if (n->kind & KT_KIND_DIR)
		sb->order = st->delim.typed ? KT_ORDER_TYPED : KT_ORDER_BYTES;
}

size_t kt__index_encode(unsigned char out[KT__INDEX_MAX], const kt__node *n)
{
	out[0] = (unsigned char)n->kind;
	kt__put64(out + 1, n->id);
	if (n->kind != KT_KIND_SPECIAL)
		return KT__INDEX_LEN;
	out[KT__INDEX_LEN] = (unsigned char)kt__node_type(n, NULL);
	return KT__INDEX_LEN + 1;
}

int kt__index_decode(unsigned int *kind, uint64_t *id, unsigned int *type,
		     const char *p, size_t len)
{
	const unsigned char *u = (const unsigned char *)p;
	int special = len > 0 && u[0] == KT_KIND_SPECIAL;

	if (len != (special ? KT__INDEX_LEN + 1u : KT__INDEX_LEN) ||
	    !kind_valid(u[0]) ||
	    (special && !kt__type_valid(u[KT__INDEX_LEN])))
		return kt__err(KT_ECORRUPT, "index row of %zu bytes does not "
			       "decode", len);
	*kind = u[0];
	*id = kt__get64(u + 1);
	if (type != NULL)
		*type = special ? u[KT__INDEX_LEN] : 0;
	return 0;
}

static kt__slice id_part(void)
{
	return kt__sl(KT__PART_ID, sizeof(KT__PART_ID) - 1);
}

int kt__id_put_enc(kt__tx *tx, uint64_t id, const char *part, size_t plen)
{
	unsigned char k[8];

	kt__put64be(k, id);
	return kt__tx_put(tx, id_part(), kt__sl(k, 8), kt__sl(part, plen));
}

int kt__id_put(kt__tx *tx, uint64_t id, const char *p, size_t len)
{
	kt__buf part = {0};
	int rc;

	rc = kt__enc_node(&part, &tx->st->delim, p, len);
	if (rc == 0)
		rc = kt__id_put_enc(tx, id, part.p ? part.p : "", part.len);
	kt__buf_free(&part);
	return rc;
}

int kt__id_del(kt__tx *tx, uint64_t id)
{
	unsigned char k[8];

	kt__put64be(k, id);
	return kt__tx_del(tx, id_part(), kt__sl(k, 8));
}

int kt__id_get(kt__buf *part, kt__rd *rd, uint64_t id)
{
	unsigned char k[8];

	kt__put64be(k, id);
	return kt__rd_get(rd, id_part(), kt__sl(k, 8), part);
}

void kt__part_blk(char out[32], uint64_t id)
{
	snprintf(out, 32, KT__PART_BLK "%016llx", (unsigned long long)id);
}

void kt__part_attr(char out[32], uint64_t id)
{
	snprintf(out, 32, KT__PART_ATTR "%016llx", (unsigned long long)id);
}

int kt__node_get(kt__node *n, kt__rd *rd, const char *p, size_t len)
{
	char stackbuf[512];
	kt__buf part = {0}, val = {0};
	const kt__delim *d = &rd->st->delim;
	kt__slice ps;
	int rc;
	/* E(p) is at most this long: each '/' becomes the delimiter; a
	 * typed name's row form is at most twice its bytes and 2 more (a
	 * one-digit number takes 4, a UUID 33 or fewer of 36; path.c). */
	size_t most = d->typed ? len * (d->len + 2) : len * d->len;

	/* Encode on the stack when it fits: this is the hot read path.  (A
	 * buffer that grew past the stack would be realloc'ed: never.) */
	if (most < sizeof(stackbuf)) {
		part.p = stackbuf;
		part.cap = sizeof(stackbuf);
		rc = kt__enc_node(&part, &rd->st->delim, p, len);
		ps = kt__sl(part.p, part.len);
		part.p = NULL;
	} else {
		rc = kt__enc_node(&part, &rd->st->delim, p, len);
		ps = kt__slb(&part);
	}
	if (rc == 0)
		rc = kt__rd_get(rd, ps, kt__sl("", 0), &val);
	if (rc == 0) {
		rc = node_decode_take(n, &val);
		if (rc == KT_ECORRUPT)
			kt__err_prefix("the store is damaged at '%.*s'",
				       (int)len, p);
	}
	kt__buf_free(&part);
	kt__buf_free(&val);
	return rc;
}

int kt__node_get_enc(kt__node *n, kt__rd *rd, kt__slice part)
{
	kt__buf val = {0};
	int rc = kt__rd_get(rd, part, kt__sl("", 0), &val);

	if (rc == 0)
		rc = node_decode_take(n, &val);
	kt__buf_free(&val);
	return rc;
}

int kt__node_put(kt__tx *tx, const char *p, size_t len, kt__node *n)
{
	kt__buf part = {0}, val = {0};
	int rc;

	if (n->nlink > 1)
		return kt__node_put_all(tx, n);
	rc = kt__tx_version(tx, &n->version);
	if (rc == 0)
		rc = kt__enc_node(&part, &tx->st->delim, p, len);
	if (rc == 0)
		rc = kt__node_encode(&val, n);
	if (rc == 0)
		rc = kt__tx_put(tx, kt__slb(&part), kt__sl("", 0),
				kt__slb(&val));
	kt__buf_free(&part);
	kt__buf_free(&val);
	return rc;
}

int kt__index_put(kt__tx *tx, const char *p, size_t len, const kt__node *n)
{
	size_t at = 0;
	unsigned char v[KT__INDEX_MAX];
	size_t vlen;
	kt__buf part = {0};
	int rc;

	vlen = kt__index_encode(v, n);
	rc = kt__enc_entry(&part, &at, &tx->st->delim, p, len);
	if (rc == 0)
		rc = kt__tx_put(tx, kt__sl(part.p, at),
				kt__sl(part.p + at, part.len - at),
				kt__sl(v, vlen));
	kt__buf_free(&part);
	return rc;
}

int kt__count_entries(kt__tx *tx, const char *p, size_t len, uint64_t max,
		      uint64_t *out)
{
	kt__rd rd = {tx->st, tx, NULL};
	kt__buf part = {0};
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	uint64_t n = 0;
	int rc;

	if ((rc = kt__enc_index(&part, &tx->st->delim, p, len)) != 0)
		return rc;
	memset(&how, 0, sizeof(how));
	how.part = kt__slb(&part);
	rc = kt__rd_scan(&c, &rd, &how);
	while (rc == 0 && (max == 0 || n < max) &&
	       (rc = kt__mcur_next(c, &row)) == 0)
		n++;
	kt__mcur_free(c);
	kt__buf_free(&part);
	if (rc != 0 && rc != KT_ITEROVER)
		return rc;
	*out = n;
	return 0;
}

/* Entries of directory n at p after @p ents more: refused past the
 * store's limit.  A directory whose row does not carry its count yet is
 * counted when a limit applies (the entry just added included). */
static int entries_add(kt__tx *tx, const char *pp, size_t plen, kt__node *n,
		       int ents)
{
	kt_store *st = tx->st;
	char b[KT__SHOWSZ];
	uint64_t after;
	int rc;

	if (!n->counted) {
		if (ents <= 0 || !st->counted || st->dir_max == 0)
			return 0;
		if ((rc = kt__count_entries(tx, pp, plen, 0, &after)) != 0)
			return rc;
		n->counted = 1;
	} else if (ents < 0) {
		n->nentries = n->nentries > (uint32_t)-ents
				      ? n->nentries - (uint32_t)-ents
				      : 0;
		return 0;
	} else {
		after = (uint64_t)n->nentries + (uint64_t)ents;
	}
	if (ents > 0 && st->dir_max != 0 && after > st->dir_max)
		return kt__err(KT_EDIRFULL, "directory '%s' already holds "
			       "%u entries, the most a directory of this "
			       "store may hold ($KEYTREE_DIR_MAX); spread them "
			       "over subdirectories",
			       kt__show(b, sizeof(b), pp, plen),
			       (unsigned)(after - (uint64_t)ents));
	n->nentries = after > UINT32_MAX ? UINT32_MAX : (uint32_t)after;
	return 0;
}

int kt__parent_touch(kt__tx *tx, const char *p, size_t len, int dirs,
		     int ents)
{
	kt__rd rd = {tx->st, tx, NULL};
	size_t plen = kt__parent_len(p, len);
	const char *pp = plen ? p : "/";
	kt__node n = {0};
	int rc;

	if (plen == 0)
		plen = 1;
	rc = kt__node_get(&n, &rd, pp, plen);
	if (rc == KT_ENOTFOUND)
		rc = kt__err(KT_ECORRUPT, "parent '%.*s' has no node row",
			     (int)plen, pp);
	if (rc == 0 && ents != 0)
		rc = entries_add(tx, pp, plen, &n, ents);
	if (rc == 0) {
		n.mtime = n.ctime = tx->now;
		if (dirs < 0 && n.nsubdirs > 0)
			n.nsubdirs--;
		else if (dirs > 0)
			n.nsubdirs++;
		rc = kt__node_put(tx, pp, plen, &n);
	}
	kt__node_free(&n);
	return rc;
}

int kt__item_to_dir(kt__tx *tx, const char *p, size_t len, kt__node *n)
{
	char a[KT__SHOWSZ];
	int rc;

	/* Children belong to one path; a node row shared by several
	 * cannot count them. */
	if (n->nlink > 1)
		return kt__err(KT_EPERM, "'%s' is an item with %u paths, which "
			       "cannot have children",
			       kt__show(a, sizeof(a), p, len),
			       (unsigned)n->nlink);

	n->kind |= KT_KIND_DIR;
	/* An item has no children: a count of 0 where the store counts. */
	n->counted = tx->st->counted;
	n->nentries = 0;
	/* A directory needs search permission where it can be read. */
	n->mode |= (n->mode & 0444) >> 2;
	n->ctime = tx->now;
	if ((rc = kt__node_put(tx, p, len, n)) != 0)
		return rc;
	if (len == 1)
		return 0;
	if ((rc = kt__index_put(tx, p, len, n)) != 0)
		return rc;
	return kt__parent_touch(tx, p, len, +1, 0);
}

int kt__make_node(kt__tx *tx, const char *p, size_t len, unsigned int kind,
		  uint32_t mode, const void *data, size_t dlen)
{
	kt__node n = {0};
	int rc;

	n.kind = kind;
	n.mode = mode;
	n.uid = tx->own.uid;
	n.gid = tx->own.gid;
	n.atime = n.mtime = n.ctime = tx->now;
	n.counted = kind == KT_KIND_DIR && tx->st->counted;
	rc = kt__tx_alloc_id(tx, &n.id);
	if (rc == 0 && kind == KT_KIND_ITEM) {
		rc = kt__value_set(tx, &n, data, dlen);
	} else if (rc == 0 && kind == KT_KIND_LINK) {
		n.size = dlen;
		rc = kt__buf_set(&n.payload, data, dlen);
	} else if (rc == 0 && kind == KT_KIND_SPECIAL) {
		rc = kt__buf_set(&n.payload, data, dlen); /* size stays 0 */
	}
	/* Node first, then the index row that makes it visible. */
	if (rc == 0)
		rc = kt__node_put(tx, p, len, &n);
	if (rc == 0)
		rc = kt__id_put(tx, n.id, p, len);
	if (rc == 0)
		rc = kt__index_put(tx, p, len, &n);
	if (rc == 0)
		rc = kt__parent_touch(tx, p, len,
				      kind == KT_KIND_DIR ? +1 : 0, +1);
	kt__node_free(&n);
	return rc;
}
