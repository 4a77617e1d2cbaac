/*
 * value.c - item values.  A value of at most the inline limit lives in its
 * node row; a larger one lives in block rows of the store's block size,
 * under partition "/blk/<id>" and the big-endian block number as sort key.
 * A missing block, or the part of a block past its stored length, reads as
 * zeros, so holes cost nothing and a write costs the blocks it touches, not
 * the size of the value.  Invariants (checked by kt_check): no block lies
 * at or past the end of the value, an inline value has no blocks, and the
 * node's nblocks is the number of its block rows (so that a stat can tell
 * how much a sparse value really takes).
 */
#include <stdlib.h>

#include "tree.h"

static void blk_sort(unsigned char out[8], uint64_t b)
{
	kt__put64be(out, b);
}

/* The CRC-32C a block row of a store with block checksums ends with: of
 * the block number (8 bytes, big-endian) and then the block's bytes, so
 * a row that turned up under another block's key fails it too. */
static uint32_t blk_crc(uint64_t b, const void *p, size_t len)
{
	unsigned char be[8];

	kt__put64be(be, b);
	return kt__crc32c(kt__crc32c(0, be, 8), p, len);
}

int kt__blk_open(const kt_store *st, uint64_t id, uint64_t b, const void *v,
		 size_t *len)
{
	size_t n;

	if (!st->blksum)
		return 0;
	if (*len < 4)
		return kt__err(KT_ECORRUPT, "block %llu of node %llu is "
			       "damaged: %zu bytes, too short for its "
			       "checksum", (unsigned long long)b,
			       (unsigned long long)id, *len);
	n = *len - 4;
	if (blk_crc(b, v, n) != kt__get32((const unsigned char *)v + n))
		return kt__err(KT_ECORRUPT, "block %llu of node %llu is "
			       "damaged: its checksum does not match its "
			       "bytes", (unsigned long long)b,
			       (unsigned long long)id);
	*len = n;
	return 0;
}

/* Is @p n's value dense: does every block up to its end have a row? */
static int dense(const kt_store *st, const kt__node *n)
{
	return n->nblocks == (n->size + st->block - 1) / st->block;
}

/* Read block @p b of node @p n.  In a store with block checksums the row
 * is checked against its own CRC, so the engine may skip its checks
 * (kt__rd_get_unchecked); a block missing from a dense value is then
 * asked for again with them, since damage to a key can make a row seem
 * absent (read_scan_once says more). */
static int blk_get(kt__rd *rd, const kt__node *n, uint64_t b, kt__buf *out)
{
	char part[32];
	unsigned char sk[8];
	kt__slice p, k;
	int rc;

	kt__part_blk(part, n->id);
	blk_sort(sk, b);
	p = kt__sl(part, strlen(part));
	k = kt__sl(sk, 8);
	if (rd->st->blksum && dense(rd->st, n)) {
		rc = kt__rd_get_unchecked(rd, p, k, out);
		if (rc == KT_ENOTFOUND)
			rc = kt__rd_get(rd, p, k, out);
	} else {
		rc = kt__rd_get(rd, p, k, out);
	}
	if (rc == 0)
		rc = kt__blk_open(rd->st, n->id, b, out->p, &out->len);
	return rc;
}

static int blk_put(kt__tx *tx, uint64_t id, uint64_t b, const void *p,
		   size_t len)
{
	char part[32];
	unsigned char sk[8];
	kt__buf v = {0};
	int rc;

	kt__part_blk(part, id);
	blk_sort(sk, b);
	if (!tx->st->blksum)
		return kt__tx_put(tx, kt__sl(part, strlen(part)),
				  kt__sl(sk, 8), kt__sl(p, len));
	if ((rc = kt__buf_reserve(&v, len + 4)) != 0)
		return rc;
	kt__buf_add(&v, p, len);
	kt__put32((unsigned char *)v.p + len, blk_crc(b, p, len));
	v.len = len + 4;
	rc = kt__tx_put(tx, kt__sl(part, strlen(part)), kt__sl(sk, 8),
			kt__slb(&v));
	kt__buf_free(&v);
	return rc;
}

/* Delete every block numbered @p from or more; @p dropped (may be NULL)
 * receives how many there were. */
static int blk_drop_from(kt__tx *tx, uint64_t id, uint64_t from,
			 size_t *dropped)
{
	kt__rd rd = {tx->st, tx, NULL};
	char part[32];
	unsigned char sk[8];
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0, i;
	int rc;

	kt__part_blk(part, id);
	blk_sort(sk, from);
	memset(&how, 0, sizeof(how));
	how.part = kt__sl(part, strlen(part));
	how.from = kt__sl(sk, 8);
	how.flags = KT__SCAN_FROM;
	if ((rc = kt__rd_scan(&c, &rd, &how)) != 0)
		return rc;
	/* Collect first: writing while the cursor is open would move the
	 * rows it is reading. */
	while ((rc = kt__mcur_next(c, &row)) == 0) {
		if (row.sort.len != 8) {
			rc = kt__err(KT_ECORRUPT, "block row with a %zu-byte "
				     "key", row.sort.len);
			break;
		}
		if (n == cap) {
			uint64_t *nv;
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (nv == NULL) {
				rc = kt__err(KT_ENOMEM, "out of memory");
				break;
			}
			v = nv;
		}
		v[n++] = kt__get64be((const unsigned char *)row.sort.p);
	}
	kt__mcur_free(c);
	if (rc == KT_ITEROVER)
		rc = 0;
	for (i = 0; i < n && rc == 0; i++) {
		blk_sort(sk, v[i]);
		rc = kt__tx_del(tx, kt__sl(part, strlen(part)), kt__sl(sk, 8));
	}
	free(v);
	if (dropped != NULL)
		*dropped = n;
	return rc;
}

/* Read a range spanning several blocks with one ordered scan over the
 * blocks that exist: holes cost nothing, which matters for sparse values.
 * 0, 1 when @p fast and a block was missing, or an error.
 *
 * LevelDB checks each table block's CRC in software as it reads it, which
 * was a third of a large sequential read's time.  A store with block
 * checksums checks each block row itself (with the CPU's CRC-32C), so the
 * scan of a dense value (no holes: nblocks counts every block) asks the
 * engine to skip its own check (KT__SCAN_NOVERIFY).  What LevelDB's check
 * would still catch is a damaged key, which could make a row vanish: in a
 * dense value every block of the range must be there, so a missing one
 * sends the read back to a scan the engine checks, which reports the
 * damage (or, if nothing is damaged after all, reads the hole as zeros). */
static int read_scan_once(kt__rd *rd, const kt__node *n, unsigned char *out,
			  size_t len, uint64_t off, int fast)
{
	kt_store *st = rd->st;
	uint64_t end = off + len, want = off / st->block;
	char part[32];
	unsigned char sk[8];
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	int rc;

	/* Holes read as zeros; in the fast case there are none, and each
	 * block zeroes what its row does not hold itself. */
	if (!fast)
		memset(out, 0, len);
	kt__part_blk(part, n->id);
	blk_sort(sk, off / st->block);
	memset(&how, 0, sizeof(how));
	how.part = kt__sl(part, strlen(part));
	how.from = kt__sl(sk, 8);
	how.flags = KT__SCAN_FROM | (fast ? KT__SCAN_NOVERIFY : 0);
	if ((rc = kt__rd_scan(&c, rd, &how)) != 0)
		return rc;
	while ((rc = kt__mcur_next(c, &row)) == 0) {
		uint64_t b, bs;
		size_t s, e, vlen = row.value.len;
		if (row.sort.len != 8) {
			rc = kt__err(KT_ECORRUPT, "block row of node %llu is "
				     "malformed", (unsigned long long)n->id);
			break;
		}
		b = kt__get64be((const unsigned char *)row.sort.p);
		bs = b * st->block;
		if (bs >= end)
			break;
		if (fast && b != want) {
			rc = 1; /* a block is missing */
			break;
		}
		want = b + 1;
		if ((rc = kt__blk_open(st, n->id, b, row.value.p, &vlen)) != 0)
			break;
		if (vlen > st->block) {
			rc = kt__err(KT_ECORRUPT, "block row of node %llu is "
				     "malformed", (unsigned long long)n->id);
			break;
		}
		s = off > bs ? (size_t)(off - bs) : 0;
		e = end < bs + vlen ? (size_t)(end - bs) : vlen;
		if (e > s)
			memcpy(out + (bs + s - off), row.value.p + s, e - s);
		if (fast) {
			/* The rest of the block's place in the range. */
			size_t z = end < bs + st->block ? (size_t)(end - bs)
							: st->block;
			size_t from = e > s ? e : s;
			if (z > from)
				memset(out + (bs + from - off), 0, z - from);
		}
	}
	kt__mcur_free(c);
	if (rc == KT_ITEROVER)
		rc = 0;
	if (rc == 0 && fast && want * st->block < end)
		rc = 1; /* the last ones are missing */
	return rc;
}

static int read_scan(kt__rd *rd, const kt__node *n, unsigned char *out,
		     size_t len, uint64_t off, size_t *nread)
{
	kt_store *st = rd->st;
	int rc = read_scan_once(rd, n, out, len, off,
				st->blksum && dense(st, n));

	if (rc == 1)
		rc = read_scan_once(rd, n, out, len, off, 0);
	if (rc == 0)
		*nread = len;
	return rc;
}

int kt__value_read(kt__rd *rd, const kt__node *n, void *buf, size_t len,
		   uint64_t off, size_t *nread)
{
	kt_store *st = rd->st;
	unsigned char *out = buf;
	kt__buf blk = {0};
	uint64_t b, end;
	int rc = 0;

	*nread = 0;
	if (off >= n->size || len == 0)
		return 0;
	if (len > n->size - off)
		len = (size_t)(n->size - off);
	if (n->size <= st->inline_max) {
		memcpy(buf, n->payload.p + off, len);
		*nread = len;
		return 0;
	}
	end = off + len;
	if ((end - 1) / st->block - off / st->block >= 2)
		return read_scan(rd, n, out, len, off, nread);
	for (b = off / st->block; b * st->block < end && rc == 0; b++) {
		uint64_t bs = b * st->block;
		size_t s = off > bs ? (size_t)(off - bs) : 0;
		size_t e = end < bs + st->block ? (size_t)(end - bs) : st->block;
		unsigned char *dst = out + (bs + s - off);

		rc = blk_get(rd, n, b, &blk);
		if (rc == KT_ENOTFOUND) {
			memset(dst, 0, e - s);
			rc = 0;
			continue;
		}
		if (rc != 0)
			break;
		if (blk.len > st->block) {
			rc = kt__err(KT_ECORRUPT, "block %llu of node %llu has "
				     "%zu bytes", (unsigned long long)b,
				     (unsigned long long)n->id, blk.len);
			break;
		}
		if (blk.len > s) {
			size_t have = blk.len < e ? blk.len : e;
			memcpy(dst, blk.p + s, have - s);
			if (have < e)
				memset(dst + (have - s), 0, e - have);
		} else {
			memset(dst, 0, e - s);
		}
	}
	kt__buf_free(&blk);
	if (rc == 0)
		*nread = len;
	return rc;
}

/* Move an inline value into block 0 (the value is about to outgrow the
 * inline limit). */
static int to_blocks(kt__tx *tx, kt__node *n)
{
	int rc = 0;

	if (n->size > 0)
		rc = blk_put(tx, n->id, 0, n->payload.p, (size_t)n->size);
	n->nblocks = n->size > 0 ? 1 : 0;
	n->payload.len = 0;
	return rc;
}

static int all_zero(const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

int kt__value_set(kt__tx *tx, kt__node *n, const void *data, size_t len)
{
	kt_store *st = tx->st;
	const unsigned char *d = data;
	uint64_t b;
	int rc = 0;

	if ((n->kind & KT_KIND_ITEM) && n->size > st->inline_max &&
	    (rc = blk_drop_from(tx, n->id, 0, NULL)) != 0)
		return rc;
	n->size = len;
	n->nblocks = 0;
	if (len <= st->inline_max)
		return kt__buf_set(&n->payload, data, len);
	n->payload.len = 0;
	for (b = 0; b * st->block < len && rc == 0; b++) {
		size_t s = (size_t)(b * st->block);
		size_t e = len - s < st->block ? len : s + st->block;
		/* Whole zero blocks stay holes. */
		if (!all_zero(d + s, e - s)) {
			rc = blk_put(tx, n->id, b, d + s, e - s);
			n->nblocks++;
		}
	}
	return rc;
}

int kt__value_write(kt__tx *tx, kt__node *n, const void *data, size_t len,
		    uint64_t off)
{
	kt_store *st = tx->st;
	kt__rd rd = {st, tx, NULL};
	const unsigned char *d = data;
	uint64_t end = off + len, newsize, oldsize = n->size, b;
	kt__buf blk = {0};
	int rc = 0;

	if (len == 0)
		return 0;
	newsize = end > n->size ? end : n->size;
	if (newsize <= st->inline_max) {
		size_t old = n->payload.len;
		if ((rc = kt__buf_reserve(&n->payload,
					  (size_t)newsize - old)) != 0)
			return rc;
		if (newsize > old) {
			memset(n->payload.p + old, 0, (size_t)newsize - old);
			n->payload.len = (size_t)newsize;
			n->payload.p[n->payload.len] = '\0';
		}
		memcpy(n->payload.p + off, data, len);
		n->size = newsize;
		return 0;
	}
	if (n->size <= st->inline_max && (rc = to_blocks(tx, n)) != 0)
		return rc;
	n->size = newsize;
	for (b = off / st->block; b * st->block < end && rc == 0; b++) {
		uint64_t bs = b * st->block;
		size_t s = off > bs ? (size_t)(off - bs) : 0;
		size_t e = end < bs + st->block ? (size_t)(end - bs) : st->block;
		const unsigned char *src = d + (bs + s - off);

		if (s == 0 && e == st->block) {
			/* A whole block: no read of the old one, except to
			 * learn whether it existed when it lies inside the old
			 * value (none lies past its end). */
			if (oldsize <= st->inline_max) {
				/* Only block 0 exists, made by to_blocks. */
				if (!(b == 0 && oldsize > 0))
					n->nblocks++;
			} else if (bs >= oldsize) {
				n->nblocks++;
			} else if ((rc = blk_get(&rd, n, b, &blk)) ==
				   KT_ENOTFOUND) {
				n->nblocks++;
				rc = 0;
			}
			if (rc == 0)
				rc = blk_put(tx, n->id, b, src, e);
			continue;
		}
		/* Partial block: read, patch, write back. */
		rc = blk_get(&rd, n, b, &blk);
		if (rc == KT_ENOTFOUND) {
			n->nblocks++;
			blk.len = 0;
			rc = 0;
		}
		if (rc != 0)
			break;
		if (blk.len < e) {
			if ((rc = kt__buf_reserve(&blk, e - blk.len)) != 0)
				break;
			memset(blk.p + blk.len, 0, e - blk.len);
			blk.len = e;
		}
		memcpy(blk.p + s, src, e - s);
		rc = blk_put(tx, n->id, b, blk.p, blk.len);
	}
	kt__buf_free(&blk);
	return rc;
}

int kt__value_truncate(kt__tx *tx, kt__node *n, uint64_t size)
{
	kt_store *st = tx->st;
	kt__rd rd = {st, tx, NULL};
	kt__buf blk = {0};
	size_t got;
	int rc = 0;

	if (size == n->size)
		return 0;
	if (size <= st->inline_max) {
		if (n->size > st->inline_max) {
			/* Back inline: keep the first size bytes. */
			kt__buf v = {0};
			if ((rc = kt__buf_reserve(&v, (size_t)size)) != 0)
				return rc;
			rc = kt__value_read(&rd, n, v.p, (size_t)size, 0, &got);
			if (rc == 0)
				rc = blk_drop_from(tx, n->id, 0, NULL);
			n->nblocks = 0;
			if (rc != 0) {
				kt__buf_free(&v);
				return rc;
			}
			v.len = got;
			v.p[got] = '\0';
			kt__buf_free(&n->payload);
			n->payload = v;
		} else if (size < n->payload.len) {
			n->payload.len = (size_t)size;
			n->payload.p[size] = '\0';
		} else {
			size_t old = n->payload.len;
			if ((rc = kt__buf_reserve(&n->payload,
						  (size_t)size - old)) != 0)
				return rc;
			memset(n->payload.p + old, 0, (size_t)size - old);
			n->payload.len = (size_t)size;
			n->payload.p[size] = '\0';
		}
		n->size = size;
		return 0;
	}
	if (n->size <= st->inline_max) {
		rc = to_blocks(tx, n);
		n->size = size;
		return rc;
	}
	if (size < n->size) {
		uint64_t keep = (size + st->block - 1) / st->block;
		size_t tail = (size_t)(size % st->block), dropped = 0;
		rc = blk_drop_from(tx, n->id, keep, &dropped);
		n->nblocks = n->nblocks > dropped ? n->nblocks - (uint32_t)dropped
						  : 0;
		if (rc == 0 && tail != 0) {
			rc = blk_get(&rd, n, keep - 1, &blk);
			if (rc == 0 && blk.len > tail)
				rc = blk_put(tx, n->id, keep - 1, blk.p, tail);
			else if (rc == KT_ENOTFOUND)
				rc = 0;
		}
	}
	kt__buf_free(&blk);
	n->size = size;
	return rc;
}

int kt__node_drop_data(kt__tx *tx, const kt__node *n)
{
	kt__rd rd = {tx->st, tx, NULL};
	char part[32];
	kt__scan how;
	kt__mcur *c = NULL;
	kt__row row;
	kt__buf names = {0};
	size_t off;
	int rc = 0;

	if ((n->kind & KT_KIND_ITEM) && n->size > tx->st->inline_max &&
	    (rc = blk_drop_from(tx, n->id, 0, NULL)) != 0)
		return rc;
	if (n->nattrs == 0)
		return 0;
	kt__part_attr(part, n->id);
	memset(&how, 0, sizeof(how));
	how.part = kt__sl(part, strlen(part));
	if ((rc = kt__rd_scan(&c, &rd, &how)) != 0)
		return rc;
	/* Names are NUL-free: collect them NUL-separated, then delete. */
	while ((rc = kt__mcur_next(c, &row)) == 0)
		if ((rc = kt__buf_add(&names, row.sort.p, row.sort.len)) != 0 ||
		    (rc = kt__buf_addc(&names, '\0')) != 0)
			break;
	kt__mcur_free(c);
	if (rc == KT_ITEROVER)
		rc = 0;
	for (off = 0; off < names.len && rc == 0;) {
		size_t l = strlen(names.p + off);
		rc = kt__tx_del(tx, kt__sl(part, strlen(part)),
				kt__sl(names.p + off, l));
		off += l + 1;
	}
	kt__buf_free(&names);
	return rc;
}

int kt__value_trim(kt__tx *tx, const kt__node *n)
{
	kt_store *st = tx->st;
	kt__rd rd = {st, tx, NULL};
	kt__buf blk = {0};
	uint64_t keep = 0;
	size_t tail, before = tx->nreal;
	int rc;

	if ((n->kind & KT_KIND_ITEM) && n->size > st->inline_max)
		keep = (n->size + st->block - 1) / st->block;
	if ((rc = blk_drop_from(tx, n->id, keep, NULL)) != 0)
		return rc;
	if (keep > 0) {
		tail = (size_t)(n->size - (keep - 1) * st->block);
		rc = blk_get(&rd, n, keep - 1, &blk);
		if (rc == 0 && blk.len > tail)
			rc = blk_put(tx, n->id, keep - 1, blk.p, tail);
		else if (rc == KT_ENOTFOUND)
			rc = 0;
		kt__buf_free(&blk);
	}
	if (rc != 0)
		return rc;
	return tx->nreal > before; /* 1 when something was cut */
}
