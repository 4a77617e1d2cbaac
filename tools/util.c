/*
 * util.c - helpers every command uses: opening the store named by -s or
 * $KEYTREE_STORE, turning library errors into "keytree: PATH: message",
 * normalising user paths, escaping names for output, whole-file reads,
 * and the JSON encoding of byte strings (UTF-8 text or base64).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL) {
		fputs("keytree: out of memory\n", stderr);
		exit(CLI_FAIL);
	}
	return p;
}

int cli_open(kt_store **out, int write)
{
	kt_options opts = KT_OPTIONS_INIT;
	const char *dir = cli_store_dir();
	int rc;

	*out = NULL;
	if (dir == NULL)
		return cli_usage(NULL, "no store given: use -s STORE or set "
				       "KEYTREE_STORE");
	opts.read_only = !write;
	cli_store_options(&opts);
	rc = kt_open(out, dir, &opts);
	if (rc == 0)
		return CLI_OK;
	switch (rc) {
	case KT_EBUSY:
		return cli_fail_busy(dir);
	case KT_ENOTFOUND:
		return cli_fail_msg(dir, "no store here (create one with "
					 "'keytree init')");
	default:
		return cli_fail(dir, rc);
	}
}

/* ---- library messages in the user's terms ----
 *
 * kt_errmsg() starts with the library call that failed and the path it was
 * given ("put '/a/b': ...", "batch operation 2 (put): put '/a/b': ...",
 * "id_path: ..."): right for a C programmer, noise for someone who typed
 * "keytree put".  The tool drops the call's name; the path stays when it is
 * not the one the message is already reported against ("/a/b: ...").
 */

/* Length of a library call's name at @p s ("put", "attr_set"), or 0. */
static size_t op_name_len(const char *s)
{
	size_t n = 0;

	while ((s[n] >= 'a' && s[n] <= 'z') || s[n] == '_')
		n++;
	return n;
}

/* @p path as kt__show() quotes it in messages: bytes from ' ' to '~'
 * except '\\', and bytes from 0x80, as they are; others as \xHH; cut at 160
 * bytes with "...". */
static void shown_path(char *out, size_t outsz, const char *path)
{
	const unsigned char *b = (const unsigned char *)path;
	size_t i, o = 0, len = strlen(path);

	for (i = 0; i < len && o + 5 < outsz; i++) {
		if ((b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\') ||
		    b[i] >= 0x80)
			out[o++] = (char)b[i];
		else
			o += (size_t)snprintf(out + o, outsz - o, "\\x%02x",
					      b[i]);
	}
	out[o] = '\0';
}

/* Does the quoted path @p q (@p qlen bytes) of a message name @p what? */
static int names_what(const char *q, size_t qlen, const char *what)
{
	char shown[1100];
	size_t n;

	if (what == NULL)
		return 0;
	shown_path(shown, sizeof(shown), what);
	n = strlen(shown);
	if (qlen == n && memcmp(q, shown, n) == 0)
		return 1;
	/* A long path is cut to "...". */
	return qlen > 3 && memcmp(q + qlen - 3, "...", 3) == 0 &&
	       n >= qlen - 3 && memcmp(q, shown, qlen - 3) == 0;
}

/* At @p s, "call 'PATH': " or "rename 'PATH' to 'OTHER': ": set @p path,
 * @p plen and return where the rest begins; else NULL.  A quote followed by
 * a space inside PATH means this is prose ("name 'x' is ..."), not a head. */
static const char *call_head(const char *s, const char **path, size_t *plen)
{
	size_t n = op_name_len(s);
	const char *p, *q, *to;

	if (n == 0 || strncmp(s + n, " '", 2) != 0)
		return NULL;
	p = s + n + 2;
	q = strstr(p, "': ");
	to = strstr(p, "' to '");
	if (to != NULL && (q == NULL || to < q)) {
		*path = p;
		*plen = (size_t)(to - p);
		q = strstr(to + 6, "': ");
	} else {
		*path = p;
		*plen = q ? (size_t)(q - p) : 0;
	}
	if (q == NULL || memchr(*path, '\'', *plen) != NULL)
		return NULL;
	return q + 3;
}

int cli_fail_busy(const char *dir)
{
	/* kt_errmsg() names the holder when it can: "open 'DIR': the store is
	 * in use by process 1234 (keytreefs, mounted on /mnt/kt)". */
	const char *msg = strstr(kt_errmsg(), "in use by ");
	const char *mnt = msg ? strstr(msg, ", mounted on ") : NULL;

	/* Without a holder named (a RADOS engine's own KT_EBUSY, say), the
	 * library's message is the best there is. */
	if (msg == NULL)
		return cli_fail(dir, KT_EBUSY);
	if (mnt != NULL) {
		mnt += strlen(", mounted on ");
		return cli_fail_msg(dir, "the store is %s; unmount it first "
					 "(fusermount3 -u %.*s)",
				    msg, (int)(strlen(mnt) - 1), mnt);
	}
	return cli_fail_msg(dir, "the store is %s", msg);
}

const char *cli_errmsg(const char *what, int code)
{
	static char out[1100];
	const char *s = kt_errmsg(), *rest, *path, *colon;
	size_t o = 0, n, plen;
	int start = 1;

	if (s == NULL || s[0] == '\0')
		return kt_strerror(code);
	while (*s != '\0' && o + 1 < sizeof(out)) {
		if (start && strncmp(s, "batch operation ", 16) == 0 &&
		    (rest = strstr(s, "): ")) != NULL) {
			s = rest + 3;
			continue;
		}
		n = op_name_len(s);
		if (start && n > 0 && strncmp(s + n, ": ", 2) == 0) {
			s += n + 2; /* "id_path: ..." */
			start = 0;
			continue;
		}
		start = 0;
		if ((rest = call_head(s, &path, &plen)) != NULL) {
			if (!names_what(path, plen, what))
				o += (size_t)snprintf(out + o, sizeof(out) - o,
						      "%.*s: ", (int)plen,
						      path);
			s = rest;
			continue;
		}
		/* Prose up to the next ": ", after which a call may follow
		 * ("in the target of link '/l': get '/a': ..."). */
		colon = strstr(s, ": ");
		n = colon ? (size_t)(colon - s) + 2 : strlen(s);
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%.*s", (int)n,
				      s);
		s += n;
	}
	if (o >= sizeof(out))
		o = sizeof(out) - 1;
	out[o] = '\0';
	return out;
}

int cli_fail(const char *what, int code)
{
	fputs("keytree: ", stderr);
	cli_put_name(stderr, what, strlen(what));
	fprintf(stderr, ": %s\n", cli_errmsg(what, code));
	return CLI_FAIL;
}

int cli_fail_errno(const char *what, const char *doing)
{
	int e = errno;

	fputs("keytree: ", stderr);
	cli_put_name(stderr, what, strlen(what));
	if (doing != NULL)
		fprintf(stderr, ": %s: %s\n", doing, strerror(e));
	else
		fprintf(stderr, ": %s\n", strerror(e));
	return CLI_FAIL;
}

int cli_fail_msg(const char *what, const char *fmt, ...)
{
	va_list ap;

	fputs("keytree: ", stderr);
	cli_put_name(stderr, what, strlen(what));
	fputs(": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_FAIL;
}

char *cli_path(const char *arg)
{
	size_t n = strlen(arg), i, o = 0;
	char *p = xmalloc(n + 2);

	p[o++] = '/';
	for (i = 0; i < n; i++) {
		if (arg[i] == '/' && p[o - 1] == '/')
			continue;
		p[o++] = arg[i];
	}
	if (o > 1 && p[o - 1] == '/')
		o--;
	p[o] = '\0';
	return p;
}

char *cli_join(const char *dir, const char *name, size_t name_len)
{
	size_t dl = strlen(dir);
	char *p = xmalloc(dl + name_len + 2);

	if (dl == 1)
		dl = 0; /* the root */
	memcpy(p, dir, dl);
	p[dl] = '/';
	memcpy(p + dl + 1, name, name_len);
	p[dl + 1 + name_len] = '\0';
	return p;
}

/* Length of the valid UTF-8 sequence at @p s (of @p n bytes), and its code
 * point; 0 when the bytes there are not valid UTF-8. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len, i;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	*cp = c;
	return len;
}

int cli_utf8_valid(const void *p, size_t len)
{
	const unsigned char *s = p;
	size_t i = 0, k;
	uint32_t cp;

	while (i < len) {
		k = utf8_seq(s + i, len - i, &cp);
		if (k == 0 || cp == 0)
			return 0;
		i += k;
	}
	return 1;
}

void cli_put_name(FILE *f, const char *name, size_t len)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t i = 0, k;
	uint32_t cp;

	while (i < len) {
		k = utf8_seq(s + i, len - i, &cp);
		if (k == 0) {
			fprintf(f, "\\x%02x", s[i]);
			i++;
			continue;
		}
		if (cp == '\\')
			fputs("\\\\", f);
		else if (cp == '\n')
			fputs("\\n", f);
		else if (cp == '\t')
			fputs("\\t", f);
		else if (cp == '\r')
			fputs("\\r", f);
		else if (cp < 0x20 || cp == 0x7f)
			fprintf(f, "\\x%02x", (unsigned)cp);
		else if ((cp >= 0x80 && cp < 0xa0) || cp == 0x2028 ||
			 cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
			 (cp >= 0x2066 && cp <= 0x2069))
			/* C1 controls, line separators and bidi overrides
			 * would change how a terminal shows the rest. */
			fprintf(f, "\\u{%x}", (unsigned)cp);
		else
			fwrite(s + i, 1, k, f);
		i += k;
	}
}

int cli_read_fd(char **out, size_t *len, int fd)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1), *nb;
	ssize_t r;

	*out = NULL;
	*len = 0;
	if (buf == NULL)
		return -1;
	for (;;) {
		if (n == cap) {
			nb = realloc(buf, cap * 2 + 1);
			if (nb == NULL) {
				free(buf);
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int cli_write_all(int fd, const void *p, size_t len)
{
	const char *c = p;
	ssize_t w;

	while (len > 0) {
		w = write(fd, c, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		c += w;
		len -= (size_t)w;
	}
	return 0;
}

int cli_parse_size(size_t *out, const char *s)
{
	char *end = NULL;
	unsigned long long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > SIZE_MAX)
		return -1;
	*out = (size_t)v;
	return 0;
}

/* ---- base64 (RFC 4648, with padding) ---- */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const unsigned char *s, size_t n)
{
	char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;
	size_t i;
	uint32_t v;

	for (i = 0; i + 2 < n; i += 3) {
		v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = b64[v & 63];
	}
	if (i < n) {
		v = (uint32_t)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

/* Decode strictly: length a multiple of 4, padding only at the end. */
static int b64_decode(char **out, size_t *len, const char *s, size_t n)
{
	char *buf, *o;
	size_t i, pad = 0;
	int a, b, c, d;

	if (n % 4 != 0)
		return -1;
	if (n > 0 && s[n - 1] == '=')
		pad++;
	if (n > 1 && s[n - 2] == '=')
		pad++;
	buf = o = xmalloc(n / 4 * 3 + 1);
	for (i = 0; i < n; i += 4) {
		int last = i + 4 == n;

		a = b64_val(s[i]);
		b = b64_val(s[i + 1]);
		c = (last && pad == 2) ? 0 : b64_val(s[i + 2]);
		d = (last && pad >= 1) ? 0 : b64_val(s[i + 3]);
		if (a < 0 || b < 0 || c < 0 || d < 0) {
			free(buf);
			return -1;
		}
		*o++ = (char)(a << 2 | b >> 4);
		if (!(last && pad == 2))
			*o++ = (char)((b & 15) << 4 | c >> 2);
		if (!(last && pad >= 1))
			*o++ = (char)((c & 3) << 6 | d);
	}
	*o = '\0';
	*out = buf;
	*len = (size_t)(o - buf);
	return 0;
}

json_t *cli_json_bytes(const void *p, size_t len)
{
	json_t *obj;
	char *enc;

	if (cli_utf8_valid(p, len))
		return json_stringn(p, len);
	enc = b64_encode(p, len);
	obj = json_pack("{s:s}", "base64", enc);
	free(enc);
	return obj;
}

int cli_json_to_bytes(char **out, size_t *len, const json_t *v, char *err)
{
	const json_t *b;

	*out = NULL;
	*len = 0;
	if (json_is_string(v)) {
		*len = json_string_length(v);
		*out = xmalloc(*len + 1);
		memcpy(*out, json_string_value(v), *len);
		(*out)[*len] = '\0';
		return 0;
	}
	b = json_is_object(v) ? json_object_get(v, "base64") : NULL;
	if (b == NULL || !json_is_string(b) || json_object_size(v) != 1) {
		snprintf(err, 80, "expected a string or {\"base64\": ...}");
		return -1;
	}
	if (b64_decode(out, len, json_string_value(b), json_string_length(b)) !=
	    0) {
		snprintf(err, 80, "invalid base64");
		return -1;
	}
	return 0;
}

const char *cli_kind_name(unsigned int kind)
{
	if (kind == KT_KIND_LINK)
		return "link";
	if (kind == (KT_KIND_ITEM | KT_KIND_DIR))
		return "item+dir";
	if (kind == KT_KIND_DIR)
		return "dir";
	if (kind == KT_KIND_ITEM)
		return "item";
	if (kind == KT_KIND_SPECIAL)
		return "special";
	return "unknown";
}

unsigned int cli_kind_parse(const char *name)
{
	if (strcmp(name, "link") == 0)
		return KT_KIND_LINK;
	if (strcmp(name, "item+dir") == 0)
		return KT_KIND_ITEM | KT_KIND_DIR;
	if (strcmp(name, "dir") == 0)
		return KT_KIND_DIR;
	if (strcmp(name, "item") == 0)
		return KT_KIND_ITEM;
	if (strcmp(name, "special") == 0)
		return KT_KIND_SPECIAL;
	return 0;
}

static const struct {
	unsigned int type;
	const char *name;
	char letter;
} types[] = {
	{KT_TYPE_FIFO, "fifo", 'p'},
	{KT_TYPE_SOCK, "socket", 's'},
	{KT_TYPE_CHR, "char", 'c'},
	{KT_TYPE_BLK, "block", 'b'},
};

const char *cli_type_name(unsigned int type)
{
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return types[i].name;
	return "unknown";
}

unsigned int cli_type_parse(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(types[i].name, name) == 0)
			return types[i].type;
	return 0;
}

void cli_dev_string(char *out, size_t outsz, uint64_t rdev)
{
	snprintf(out, outsz, "%u, %u", major((dev_t)rdev), minor((dev_t)rdev));
}

void cli_json_print(json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);

	if (s == NULL) {
		fputs("keytree: out of memory\n", stderr);
		exit(CLI_FAIL);
	}
	fputs(s, stdout);
	fputc('\n', stdout);
	free(s);
	json_decref(obj);
}

void cli_json_stat(json_t *o, const kt_statbuf *st)
{
	json_object_set_new(o, "kind", json_string(cli_kind_name(st->kind)));
	json_object_set_new(o, "id", json_integer((json_int_t)st->id));
	json_object_set_new(o, "nlink", json_integer((json_int_t)st->nlink));
	json_object_set_new(o, "size", json_integer((json_int_t)st->size));
	json_object_set_new(o, "stored", json_integer((json_int_t)st->stored));
	json_object_set_new(o, "mode", json_integer((json_int_t)st->mode));
	json_object_set_new(o, "uid", json_integer((json_int_t)st->uid));
	json_object_set_new(o, "gid", json_integer((json_int_t)st->gid));
	json_object_set_new(o, "atime", json_integer(st->atime_ns));
	json_object_set_new(o, "mtime", json_integer(st->mtime_ns));
	json_object_set_new(o, "ctime", json_integer(st->ctime_ns));
	json_object_set_new(o, "version",
			    json_integer((json_int_t)st->version));
	json_object_set_new(o, "nsubdirs",
			    json_integer((json_int_t)st->nsubdirs));
	json_object_set_new(o, "nattrs", json_integer((json_int_t)st->nattrs));
	if (st->order == KT_ORDER_TYPED)
		json_object_set_new(o, "order", json_string("typed"));
	if (st->kind == KT_KIND_SPECIAL) {
		json_object_set_new(o, "type",
				    json_string(cli_type_name(st->type)));
		json_object_set_new(o, "rdev",
				    json_integer((json_int_t)st->rdev));
	}
}

void cli_time_iso(char *out, size_t outsz, int64_t ns)
{
	time_t sec = (time_t)(ns / 1000000000);
	long frac = (long)(ns % 1000000000);
	struct tm tm;
	char buf[64];

	if (frac < 0) {
		frac += 1000000000;
		sec--;
	}
	gmtime_r(&sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, outsz, "%s.%09ldZ", buf, frac);
}

void cli_mode_string(char out[11], const kt_statbuf *st)
{
	static const char rwx[] = "rwxrwxrwx";
	unsigned int kind = st->kind;
	uint32_t mode = st->mode;
	size_t i;

	out[0] = kind == KT_KIND_LINK			? 'l'
		 : kind == (KT_KIND_DIR | KT_KIND_ITEM) ? 'D'
		 : kind == KT_KIND_DIR			? 'd'
		 : kind == KT_KIND_SPECIAL		? '?'
							: '-';
	for (i = 0;
	     kind == KT_KIND_SPECIAL && i < sizeof(types) / sizeof(types[0]);
	     i++)
		if (types[i].type == st->type)
			out[0] = types[i].letter;
	for (i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & 04000)
		out[3] = (mode & 0100) ? 's' : 'S';
	if (mode & 02000)
		out[6] = (mode & 0010) ? 's' : 'S';
	if (mode & 01000)
		out[9] = (mode & 0001) ? 't' : 'T';
	out[10] = '\0';
}
