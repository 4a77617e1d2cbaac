/*
 * json.c - dump and load: the store, or a subtree, as JSON Lines (one
 * header line, one record per node with its value, link target,
 * attributes, mode, owner and times, then an end line carrying the record
 * count), and back.  The format is specified in docs/DUMP.md.
 *
 * load parses and validates the whole input before it changes anything,
 * records every node in one kt_batch and commits it once: a malformed or
 * truncated dump is rejected with its line number and nothing of it is
 * applied.  Modes, owners and times are set last, after every node exists,
 * because adding a child changes its parent's mtime.
 *
 * A node with several paths (kt_link) is dumped once, at the first of its
 * paths the dump meets, and each further path as an alias record naming
 * that first path; load recreates them with kt_batch_link in the same
 * batch.  Since a dump's records come in one fixed order, the first path
 * always precedes its aliases and a reload meets them in the same order.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define OPT_HELP                                                               \
	{                                                                      \
		"help", no_argument, NULL, 'h'                                 \
	}
#define OPT_END                                                                \
	{                                                                      \
		NULL, 0, NULL, 0                                               \
	}

#define DUMP_FORMAT 1

/* Room for what is wrong with a record, a library message included: the
 * library keeps its messages under 1024 bytes. */
#define ERRSZ 1024

/* ------------------------------------------------------------------------ */
/* dump */

/* The attributes of the node at @p path as a JSON array, or NULL if it has
 * none.  Sets *rc on failure. */
static json_t *dump_attrs(kt_store *st, const char *path, int *rc)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	json_t *arr = NULL;

	if ((*rc = kt_attr_iter_new(&it, st, path)) < 0)
		return NULL;
	while ((*rc = kt_iter_next(&e, it)) == 0) {
		if (arr == NULL)
			arr = json_array();
		json_array_append_new(
			arr,
			json_pack("{s:o,s:o}", "name",
				  cli_json_bytes(e->name, e->name_len), "value",
				  cli_json_bytes(e->value, e->value_len)));
	}
	kt_iter_free(it);
	if (*rc != KT_ITEROVER) {
		json_decref(arr);
		return NULL;
	}
	*rc = 0;
	return arr;
}

/* For a node with several paths: 1 if an earlier record of this dump holds
 * it, with @p first set to that record's path (borrowed from @p firsts);
 * else 0, and @p path is remembered as the node's first.  @p firsts maps
 * node ids (decimal) to first paths. */
static int dump_seen(json_t *firsts, const kt_statbuf *sb, const char *path,
		     size_t plen, const json_t **first)
{
	char id[32];

	snprintf(id, sizeof(id), "%llu", (unsigned long long)sb->id);
	*first = json_object_get(firsts, id);
	if (*first != NULL)
		return 1;
	/* A path holds no NUL but need not be UTF-8: store it unchecked. */
	json_object_set_new(firsts, id, json_stringn_nocheck(path, plen));
	return 0;
}

/* One record: the node at @p path, or an alias record when @p firsts says
 * an earlier record holds the node. */
static int dump_node(kt_store *st, json_t *firsts, const char *path,
		     size_t plen)
{
	kt_statbuf sb;
	json_t *rec, *attrs = NULL;
	const json_t *first;
	void *value = NULL;
	char *target = NULL;
	size_t len = 0;
	int rc;

	if ((rc = kt_lstat(&sb, st, path)) < 0)
		return rc;
	if (sb.nlink > 1 && !(sb.kind & KT_KIND_DIR) &&
	    dump_seen(firsts, &sb, path, plen, &first)) {
		cli_json_print(json_pack(
			"{s:o,s:s,s:o}", "path", cli_json_bytes(path, plen),
			"kind", "alias", "of",
			cli_json_bytes(json_string_value(first),
				       json_string_length(first))));
		return 0;
	}
	rec = json_object();
	json_object_set_new(rec, "path", cli_json_bytes(path, plen));
	json_object_set_new(rec, "kind", json_string(cli_kind_name(sb.kind)));
	if (sb.kind == KT_KIND_SPECIAL)
		json_object_set_new(rec, "type",
				    json_string(cli_type_name(sb.type)));
	if (sb.type == KT_TYPE_CHR || sb.type == KT_TYPE_BLK)
		json_object_set_new(rec, "rdev",
				    json_integer((json_int_t)sb.rdev));
	json_object_set_new(rec, "mode", json_integer(sb.mode));
	json_object_set_new(rec, "uid", json_integer(sb.uid));
	json_object_set_new(rec, "gid", json_integer(sb.gid));
	json_object_set_new(rec, "atime", json_integer(sb.atime_ns));
	json_object_set_new(rec, "mtime", json_integer(sb.mtime_ns));
	if (sb.kind == KT_KIND_LINK) {
		rc = kt_readlink(&target, &len, st, path);
		if (rc == 0)
			json_object_set_new(rec, "target",
					    cli_json_bytes(target, len));
	} else {
		if (sb.kind & KT_KIND_ITEM) {
			rc = kt_get(&value, &len, st, path);
			if (rc == 0)
				json_object_set_new(rec, "value",
						    cli_json_bytes(value, len));
		}
		/* Attributes act on a link's target, so a link has none of
		 * its own to dump. */
		if (rc == 0)
			attrs = dump_attrs(st, path, &rc);
		if (attrs != NULL)
			json_object_set_new(rec, "attrs", attrs);
	}
	if (rc == 0)
		cli_json_print(rec);
	else
		json_decref(rec);
	kt_free(value);
	kt_free(target);
	return rc;
}

/* Count the nodes a dump of @p path will hold, for the progress line. */
static uint64_t dump_count(kt_store *st, const char *path)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	uint64_t n = strcmp(path, "/") == 0;

	if (kt_find_new(&it, st, path,
			strcmp(path, "/") ? KT_FIND_SUBTREE : 0) < 0)
		return 0;
	while (kt_iter_next(&e, it) == 0)
		n++;
	kt_iter_free(it);
	return n;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option o[] = {OPT_HELP, OPT_END};
	kt_store *st = NULL;
	kt_iter *it = NULL;
	const kt_entry *e;
	cli_progress pr;
	kt_statbuf sb;
	json_t *firsts = NULL;
	char *path = NULL, *cur = NULL;
	uint64_t n = 0;
	int c, rc, root;

	while ((c = getopt_long(argc, argv, ":h", o, NULL)) != -1) {
		rc = cli_common_opt(c, argv[0], argv);
		return rc >= 0 ? rc : CLI_USAGE;
	}
	if (argc - optind > 1)
		return cli_usage(argv[0], "extra operand '%s'",
				 argv[optind + 1]);
	if ((rc = cli_open(&st, 0)) != CLI_OK)
		return rc;
	/* First path seen per node id, to write the others as aliases. */
	if ((firsts = json_object()) == NULL) {
		rc = cli_fail("dump", KT_ENOMEM);
		goto out;
	}
	path = cli_path(optind < argc ? argv[optind] : "/");
	root = strcmp(path, "/") == 0;
	/* A subtree scan of nothing finds nothing; say so instead. */
	if (!root && (rc = kt_lstat(&sb, st, path)) < 0) {
		rc = cli_fail(path, rc);
		goto out;
	}
	cli_progress_start(&pr, "dump", "nodes", 0);
	if (pr.on)
		pr.total = dump_count(st, path);
	rc = kt_find_new(&it, st, path, root ? 0 : KT_FIND_SUBTREE);
	if (rc < 0) {
		rc = cli_fail(path, rc);
		goto out;
	}
	{
		/* A typed store says so: its order is in the dump's. */
		kt_statbuf rs;
		json_t *h = json_pack("{s:s,s:i}", "keytree", "dump", "format",
				      DUMP_FORMAT);
		if (kt_stat(&rs, st, "/") == 0 && rs.order == KT_ORDER_TYPED)
			json_object_set_new(h, "names", json_string("typed"));
		cli_json_print(h);
	}
	if (root && (rc = dump_node(st, firsts, "/", 1)) < 0) {
		rc = cli_fail("/", rc);
		goto out;
	}
	n = root;
	while ((rc = kt_iter_next(&e, it)) == 0) {
		/* Copy the name: dump_node's calls may reuse the library's
		 * message and buffers, and the entry is only borrowed. */
		free(cur);
		cur = strdup(e->name);
		if (cur == NULL) {
			rc = KT_ENOMEM;
			break;
		}
		cli_progress_clear(&pr);
		if ((rc = dump_node(st, firsts, cur, strlen(cur))) < 0)
			break;
		cli_progress_update(&pr, ++n);
	}
	if (rc != KT_ITEROVER) {
		cli_progress_clear(&pr);
		rc = cli_fail(cur ? cur : path, rc);
		goto out;
	}
	cli_json_print(
		json_pack("{s:b,s:I}", "end", 1, "records", (json_int_t)n));
	cli_progress_end(&pr);
	rc = CLI_OK;
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = cli_fail_errno("stdout", "write");
out:
	json_decref(firsts);
	free(cur);
	kt_iter_free(it);
	kt_close(st);
	free(path);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* load */

/* The batch being built and, per recorded operation, the dump line it came
 * from, so that a failing commit can be reported by line. */
typedef struct meta {
	char *path;
	kt_setattr_args sa;
	unsigned int flags;
	size_t line;
} meta;

typedef struct loader {
	kt_store *st;
	kt_batch *b;
	json_t *seen; /* path of each record so far -> its kind (integer) */
	size_t *line_of; /* operation index (from 0) -> line */
	size_t nops, cap;
	meta *meta; /* deferred setattr, one per record */
	size_t nmeta, capmeta;
} loader;

/* Remember a record's mode, owner and times; takes @p path. */
static int meta_add(loader *l, char *path, const kt_setattr_args *sa,
		    unsigned int flags, size_t line)
{
	meta *nv;

	if (l->nmeta == l->capmeta) {
		l->capmeta = l->capmeta ? l->capmeta * 2 : 1024;
		nv = realloc(l->meta, l->capmeta * sizeof(*nv));
		if (nv == NULL)
			return -1;
		l->meta = nv;
	}
	l->meta[l->nmeta].path = path;
	l->meta[l->nmeta].sa = *sa;
	l->meta[l->nmeta].flags = flags;
	l->meta[l->nmeta].line = line;
	l->nmeta++;
	return 0;
}

static int op_line(loader *l, size_t line)
{
	size_t *nv;

	if (l->nops == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		nv = realloc(l->line_of, l->cap * sizeof(*nv));
		if (nv == NULL)
			return KT_ENOMEM;
		l->line_of = nv;
	}
	l->line_of[l->nops++] = line;
	return 0;
}

/* Report a bad line and return CLI_FAIL. */
static int bad_line(size_t line, const char *what)
{
	fprintf(stderr, "keytree: load: line %zu: %s\n", line, what);
	return CLI_FAIL;
}

/* An integer field of @p rec within [lo, hi]. */
static int int_field(json_int_t *out, const json_t *rec, const char *key,
		     json_int_t lo, json_int_t hi, char *err)
{
	const json_t *v = json_object_get(rec, key);

	if (v == NULL || !json_is_integer(v)) {
		snprintf(err, ERRSZ, "\"%s\" must be an integer", key);
		return -1;
	}
	*out = json_integer_value(v);
	if (*out < lo || *out > hi) {
		snprintf(err, ERRSZ, "\"%s\" is out of range", key);
		return -1;
	}
	return 0;
}

static int record_attrs(loader *l, const char *path, const json_t *attrs,
			size_t line, char *err)
{
	const json_t *a;
	char *name = NULL, *val = NULL;
	size_t i, nlen, vlen;
	int rc = 0;

	if (!json_is_array(attrs)) {
		snprintf(err, ERRSZ, "\"attrs\" must be an array");
		return -1;
	}
	json_array_foreach(attrs, i, a)
	{
		if (!json_is_object(a) || json_object_size(a) != 2 ||
		    cli_json_to_bytes(&name, &nlen, json_object_get(a, "name"),
				      err) != 0 ||
		    cli_json_to_bytes(&val, &vlen, json_object_get(a, "value"),
				      err) != 0) {
			free(name);
			snprintf(err, ERRSZ,
				 "attribute %zu: needs exactly "
				 "\"name\" and \"value\", strings or "
				 "{\"base64\": ...}",
				 i + 1);
			return -1;
		}
		if (strlen(name) != nlen) {
			snprintf(err, ERRSZ, "attribute %zu: name holds NUL",
				 i + 1);
			rc = -1;
		} else if ((rc = kt_batch_attr_set(l->b, path, name, val, vlen,
						   0)) < 0) {
			snprintf(err, ERRSZ, "%s", cli_errmsg(NULL, rc));
		} else {
			rc = op_line(l, line);
		}
		free(name);
		free(val);
		name = val = NULL;
		if (rc != 0)
			return -1;
	}
	return 0;
}

static const char *const rec_keys[] = {
	"path",	 "kind",  "type",  "rdev",   "mode",  "uid", "gid",
	"atime", "mtime", "value", "target", "attrs", "of",  NULL};

/* A path from the input as the tool shows names (escaped), cut to fit
 * @p outsz bytes, for a message. */
static void shown(char *out, size_t outsz, const char *path)
{
	FILE *f = fmemopen(out, outsz, "w");

	out[0] = '\0';
	if (f == NULL)
		return;
	setvbuf(f, NULL, _IONBF, 0);
	cli_put_name(f, path, strlen(path));
	fclose(f);
	out[outsz - 1] = '\0';
}

/* Validate an alias record ({"path", "kind":"alias", "of"}) at canonical
 * @p path and record its kt_batch_link.  The node it names must have an
 * earlier record in the dump (its first path comes first) and must not be
 * a directory.  0, or -1 with @p err (ERRSZ bytes) saying what is wrong. */
static int record_alias(loader *l, const json_t *rec, const char *path,
			size_t line, char *err)
{
	kt_statbuf a, b;
	const json_t *kind;
	char *of = NULL, *canon = NULL, s[300];
	size_t olen;
	int rc = -1;

	if (cli_json_to_bytes(&of, &olen, json_object_get(rec, "of"), err) !=
	    0) {
		snprintf(err, ERRSZ,
			 "an alias needs \"of\", the path of its node's "
			 "record, a string or {\"base64\": ...}");
		return -1;
	}
	if (json_object_size(rec) != 3) {
		snprintf(err, ERRSZ,
			 "an alias has only \"path\", \"kind\" and "
			 "\"of\": the rest is in its node's record");
		free(of);
		return -1;
	}
	canon = cli_path(of);
	if (strlen(of) != olen || of[0] != '/' || strcmp(canon, of) != 0) {
		snprintf(err, ERRSZ, "\"of\" is not a canonical path");
		goto out;
	}
	shown(s, sizeof(s), of);
	if (strcmp(path, "/") == 0) {
		snprintf(err, ERRSZ, "the root cannot be an alias");
		goto out;
	}
	kind = json_object_get(l->seen, of);
	/* The root is a directory whether or not the dump records it. */
	if (strcmp(of, "/") == 0 ||
	    (kind != NULL && (json_integer_value(kind) & KT_KIND_DIR))) {
		snprintf(err, ERRSZ,
			 "alias of %s, a directory: a directory cannot have "
			 "a second path",
			 s);
		goto out;
	}
	if (kind == NULL) {
		snprintf(err, ERRSZ,
			 "alias of %s, which no earlier record holds (a "
			 "node's record comes before its aliases)",
			 s);
		goto out;
	}
	/* Loading into a store that already has this alias (the same dump
	 * again) keeps it, as it keeps existing directories. */
	rc = 0;
	if (kt_lstat(&a, l->st, of) != 0 || kt_lstat(&b, l->st, path) != 0 ||
	    a.id != b.id) {
		if ((rc = kt_batch_link(l->b, of, path)) < 0) {
			snprintf(err, ERRSZ, "%s", cli_errmsg(NULL, rc));
			rc = -1;
			goto out;
		}
		rc = op_line(l, line);
	}
	if (rc == 0 && json_object_set_nocheck(l->seen, path, (json_t *)kind))
		rc = KT_ENOMEM;
	if (rc != 0) {
		snprintf(err, ERRSZ, "out of memory");
		rc = -1;
	}
out:
	free(of);
	free(canon);
	return rc;
}

/* The "type" and "rdev" of a record: a special file has a known type, and
 * a device (only) its number; no other kind has either.  0, or -1 with
 * @p err (128 bytes at least) saying what is wrong. */
static int special_fields(unsigned int *type, uint64_t *rdev, const json_t *rec,
			  unsigned int kind, char *err)
{
	const json_t *t = json_object_get(rec, "type");
	const json_t *r = json_object_get(rec, "rdev");

	*type = 0;
	*rdev = 0;
	if (kind != KT_KIND_SPECIAL) {
		if (t == NULL && r == NULL)
			return 0;
		snprintf(err, 128,
			 "\"type\" and \"rdev\" belong to special "
			 "files only");
		return -1;
	}
	if (!json_is_string(t) ||
	    (*type = cli_type_parse(json_string_value(t))) == 0) {
		snprintf(err, 128,
			 "a special file needs a \"type\": fifo, "
			 "socket, char or block");
		return -1;
	}
	if (*type == KT_TYPE_FIFO || *type == KT_TYPE_SOCK) {
		if (r == NULL)
			return 0;
		snprintf(err, 128, "a %s has no \"rdev\"",
			 json_string_value(t));
		return -1;
	}
	if (!json_is_integer(r) || json_integer_value(r) < 0) {
		snprintf(err, 128,
			 "a %s device needs an \"rdev\", a "
			 "non-negative integer",
			 json_string_value(t));
		return -1;
	}
	*rdev = (uint64_t)json_integer_value(r);
	return 0;
}

/* Validate one record and add its operations to the batch.  0, or -1 with
 * @p err (ERRSZ bytes) saying what is wrong. */
static int record(loader *l, const json_t *rec, size_t line, char *err)
{
	kt_create_options parents = KT_CREATE_OPTIONS_INIT;
	const char *key, *kind_s;
	const json_t *v;
	char *path = NULL, *canon = NULL, *data = NULL;
	size_t plen, dlen = 0, i;
	json_int_t mode, uid, gid, at, mt;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	unsigned int kind, type;
	uint64_t rdev;
	int rc = -1, known;

	json_object_foreach((json_t *)rec, key, v)
	{
		for (known = 0, i = 0; rec_keys[i] && !known; i++)
			known = strcmp(key, rec_keys[i]) == 0;
		if (!known) {
			char shown[48];
			size_t k, n = 0;
			/* The name comes from the input: no control byte
			 * may reach the terminal through the message. */
			for (k = 0; key[k] && n + 1 < sizeof(shown) && k < 40;
			     k++) {
				unsigned char ch = (unsigned char)key[k];
				shown[n++] = ch < 0x20 || ch == 0x7f ? '?'
								     : (char)ch;
			}
			shown[n] = '\0';
			snprintf(err, ERRSZ, "unknown field \"%s\"", shown);
			return -1;
		}
	}
	if (cli_json_to_bytes(&path, &plen, json_object_get(rec, "path"),
			      err) != 0) {
		snprintf(err, ERRSZ,
			 "\"path\" must be a string or "
			 "{\"base64\": ...}");
		return -1;
	}
	kind_s = json_string_value(json_object_get(rec, "kind"));
	kind = kind_s ? cli_kind_parse(kind_s) : 0;
	canon = cli_path(path);
	if (strlen(path) != plen || path[0] != '/' || strcmp(canon, path)) {
		snprintf(err, ERRSZ, "\"path\" is not a canonical path");
		goto out;
	}
	if (kind_s != NULL && strcmp(kind_s, "alias") == 0) {
		rc = record_alias(l, rec, path, line, err);
		goto out;
	}
	if (kind == 0) {
		snprintf(err, ERRSZ,
			 "\"kind\" must be item, dir, item+dir, "
			 "link, special or alias");
		goto out;
	}
	if (json_object_get(rec, "of") != NULL) {
		snprintf(err, ERRSZ, "\"of\" belongs to aliases only");
		goto out;
	}
	if (special_fields(&type, &rdev, rec, kind, err) != 0)
		goto out;
	if (int_field(&mode, rec, "mode", 0, 07777, err) ||
	    int_field(&uid, rec, "uid", 0, UINT32_MAX, err) ||
	    int_field(&gid, rec, "gid", 0, UINT32_MAX, err) ||
	    int_field(&at, rec, "atime", INT64_MIN, INT64_MAX, err) ||
	    int_field(&mt, rec, "mtime", INT64_MIN, INT64_MAX, err))
		goto out;
	v = json_object_get(rec, kind == KT_KIND_LINK ? "target" : "value");
	if ((kind & (KT_KIND_ITEM | KT_KIND_LINK)) &&
	    cli_json_to_bytes(&data, &dlen, v, err) != 0) {
		snprintf(err, ERRSZ,
			 "a%s needs a \"%s\" string or {\"base64\":"
			 " ...}",
			 kind == KT_KIND_LINK ? " link" : "n item",
			 kind == KT_KIND_LINK ? "target" : "value");
		goto out;
	}
	if (((kind == KT_KIND_DIR || kind == KT_KIND_SPECIAL) &&
	     json_object_get(rec, "value")) ||
	    (kind != KT_KIND_LINK && json_object_get(rec, "target")) ||
	    (kind == KT_KIND_LINK && (json_object_get(rec, "value") ||
				      json_object_get(rec, "attrs")))) {
		snprintf(err, ERRSZ, "fields that a %s cannot have", kind_s);
		goto out;
	}
	if (strcmp(path, "/") == 0 && kind != KT_KIND_DIR) {
		snprintf(err, ERRSZ, "the root must be a dir");
		goto out;
	}
	parents.flags = KT_CREATE_PARENTS;
	rc = 0;
	if (kind == KT_KIND_LINK) {
		if (strlen(data) != dlen) {
			snprintf(err, ERRSZ, "the link target holds NUL");
			rc = -1;
			goto out;
		}
		if ((rc = kt_batch_symlink(l->b, path, data, &parents)) == 0)
			rc = op_line(l, line);
	} else if (kind == KT_KIND_SPECIAL) {
		if ((rc = kt_batch_mknod(l->b, path, type, rdev, NULL)) == 0)
			rc = op_line(l, line);
	} else if (strcmp(path, "/") != 0) {
		/* The root exists in every store; only its metadata and
		 * attributes are recorded. */
		if ((kind & KT_KIND_ITEM) &&
		    (rc = kt_batch_put(l->b, path, data, dlen, NULL)) == 0)
			rc = op_line(l, line);
		if (rc == 0 && (kind & KT_KIND_DIR) &&
		    (rc = kt_batch_mkdir(l->b, path, &parents)) == 0)
			rc = op_line(l, line);
	}
	if (rc < 0) {
		snprintf(err, ERRSZ, "%s", cli_errmsg(NULL, rc));
		rc = -1;
		goto out;
	}
	v = json_object_get(rec, "attrs");
	if (v != NULL && (rc = record_attrs(l, path, v, line, err)) != 0)
		goto out;
	if (json_object_set_new_nocheck(l->seen, path, json_integer(kind))) {
		snprintf(err, ERRSZ, "out of memory");
		rc = -1;
		goto out;
	}
	sa.mask = KT_SET_MODE | KT_SET_UID | KT_SET_GID | KT_SET_ATIME |
		  KT_SET_MTIME;
	sa.mode = (uint32_t)mode;
	sa.uid = (uint32_t)uid;
	sa.gid = (uint32_t)gid;
	sa.atime_ns = at;
	sa.mtime_ns = mt;
	if (meta_add(l, path, &sa, kind == KT_KIND_LINK ? KT_NOFOLLOW : 0,
		     line) != 0) {
		snprintf(err, ERRSZ, "out of memory");
		rc = -1;
		goto out;
	}
	path = NULL; /* the meta list owns it now */
out:
	free(path);
	free(canon);
	free(data);
	return rc;
}

/* Record the deferred modes, owners and times. */
static int record_meta(loader *l, char *err, size_t *line)
{
	size_t i;
	int rc;

	for (i = 0; i < l->nmeta; i++) {
		*line = l->meta[i].line;
		rc = kt_batch_setattr(l->b, l->meta[i].path, &l->meta[i].sa,
				      l->meta[i].flags);
		if (rc == 0)
			rc = op_line(l, *line);
		if (rc < 0) {
			snprintf(err, ERRSZ, "%s", cli_errmsg(NULL, rc));
			return -1;
		}
	}
	return 0;
}

/* Check the header line. */
static int header_ok(const json_t *h)
{
	const json_t *f = json_object_get(h, "format");
	const json_t *names = json_object_get(h, "names");

	/* "names":"typed", from a store with typed names, is the one
	 * optional key. */
	if (names != NULL && (!json_is_string(names) ||
			      strcmp(json_string_value(names), "typed") != 0))
		return 0;
	return json_is_object(h) &&
	       json_object_size(h) == (names != NULL ? 3u : 2u) &&
	       json_is_string(json_object_get(h, "keytree")) &&
	       strcmp(json_string_value(json_object_get(h, "keytree")),
		      "dump") == 0 &&
	       json_is_integer(f) && json_integer_value(f) == DUMP_FORMAT;
}

/* Parse every line of @p buf into the batch.  Returns CLI_OK or the exit
 * status after reporting the line at fault. */
static int load_lines(loader *l, char *buf, size_t len)
{
	json_error_t jerr;
	json_t *rec, *end = NULL;
	cli_progress pr;
	char err[ERRSZ], msg[300];
	size_t line = 0, nrec = 0, off = 0, n, nlines = 0, i;
	char *nl;
	int rc = CLI_OK;

	for (i = 0; i < len; i++)
		nlines += buf[i] == '\n';
	cli_progress_start(&pr, "load", "lines", nlines);
	while (off < len && rc == CLI_OK) {
		line++;
		nl = memchr(buf + off, '\n', len - off);
		if (nl == NULL) {
			rc = bad_line(line, "truncated: the line has no end");
			break;
		}
		n = (size_t)(nl - (buf + off));
		if (end != NULL) {
			rc = bad_line(line, "data after the end line");
			break;
		}
		rec = json_loadb(buf + off, n, JSON_REJECT_DUPLICATES, &jerr);
		off += n + 1;
		if (rec == NULL) {
			snprintf(msg, sizeof(msg), "column %d: %s", jerr.column,
				 jerr.text);
			rc = bad_line(line, msg);
		} else if (line == 1) {
			kt_statbuf rs;
			if (!header_ok(rec))
				rc = bad_line(line, "not a keytree dump "
						    "(expected the header "
						    "{\"keytree\":\"dump\","
						    "\"format\":1})");
			else if (json_object_get(rec, "names") != NULL &&
				 kt_stat(&rs, l->st, "/") == 0 &&
				 rs.order != KT_ORDER_TYPED)
				fprintf(stderr, "keytree: load: the dump comes "
					"from a store with typed names and this "
					"one has plain names: its listings sort "
					"by bytes ('keytree init --typed' makes "
					"a typed store)\n");
			json_decref(rec);
		} else if (!json_is_object(rec)) {
			rc = bad_line(line, "not a JSON object");
			json_decref(rec);
		} else if (json_object_get(rec, "end") != NULL) {
			end = rec;
		} else {
			if (record(l, rec, line, err) != 0)
				rc = bad_line(line, err);
			nrec++;
			json_decref(rec);
		}
		cli_progress_update(&pr, line);
	}
	cli_progress_end(&pr);
	if (rc == CLI_OK && line == 0)
		rc = bad_line(1, "empty input: not a keytree dump");
	else if (rc == CLI_OK && end == NULL)
		rc = bad_line(line + 1, "truncated: the end line is missing");
	else if (rc == CLI_OK &&
		 (json_object_size(end) != 2 ||
		  !json_is_true(json_object_get(end, "end")) ||
		  !json_is_integer(json_object_get(end, "records"))))
		rc = bad_line(line, "a malformed end line");
	else if (rc == CLI_OK && (size_t)json_integer_value(json_object_get(
					 end, "records")) != nrec) {
		snprintf(msg, sizeof(msg),
			 "the end line counts %lld records"
			 ", the dump holds %zu",
			 (long long)json_integer_value(
				 json_object_get(end, "records")),
			 nrec);
		rc = bad_line(line, msg);
	}
	json_decref(end);
	if (rc == CLI_OK && record_meta(l, err, &line) != 0)
		rc = bad_line(line, err);
	return rc;
}

/* Report a failed commit by the dump line of the operation that failed:
 * kt_errmsg() starts "batch operation N (op): ". */
static int commit_failed(const loader *l, int code)
{
	const char *msg = kt_errmsg();
	unsigned long long k;

	if (strncmp(msg, "batch operation ", 16) == 0) {
		k = strtoull(msg + 16, NULL, 10);
		if (k >= 1 && k <= l->nops)
			return bad_line(l->line_of[k - 1],
					cli_errmsg(NULL, code));
	}
	return cli_fail("load", code);
}

int cmd_load(int argc, char **argv)
{
	static const struct option o[] = {OPT_HELP, OPT_END};
	loader l;
	kt_store *st = NULL;
	char *buf = NULL;
	size_t len = 0;
	int c, rc;

	while ((c = getopt_long(argc, argv, ":h", o, NULL)) != -1) {
		rc = cli_common_opt(c, argv[0], argv);
		return rc >= 0 ? rc : CLI_USAGE;
	}
	if (argc > optind)
		return cli_usage(argv[0],
				 "extra operand '%s' (the dump is "
				 "read from standard input)",
				 argv[optind]);
	memset(&l, 0, sizeof(l));
	if (cli_read_fd(&buf, &len, STDIN_FILENO) != 0)
		return cli_fail_errno("load", "reading standard input");
	if ((rc = cli_open(&st, 1)) != CLI_OK)
		goto out;
	l.st = st;
	l.seen = json_object();
	if ((rc = kt_batch_new(&l.b, st)) < 0) {
		rc = cli_fail("load", rc);
		goto out;
	}
	rc = load_lines(&l, buf, len);
	/* Nothing was written yet; one commit applies all or nothing. */
	if (rc == CLI_OK && (rc = kt_batch_commit(l.b)) < 0)
		rc = commit_failed(&l, rc);
out:
	json_decref(l.seen);
	kt_batch_free(l.b);
	for (len = 0; len < l.nmeta; len++)
		free(l.meta[len].path);
	free(l.meta);
	free(l.line_of);
	kt_close(st);
	free(buf);
	return rc;
}
