/*
 * cmd_node.c - the commands that act on one node: put, get (cat), mkdir,
 * ln, mknod, readlink, rm, mv, stat and attr.  Each parses its own options,
 * opens the store, makes one library call (or a few) and maps its result to an
 * exit status and a message.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
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

static const struct option help_only[] = {OPT_HELP, OPT_END};

/* Parse a command that has only --help; returns -1 to go on, else the
 * exit status.  @p stop: stop at the first operand (values may start with
 * '-'). */
static int opts_none(int argc, char **argv, int stop)
{
	int c, rc;

	while ((c = getopt_long(argc, argv, stop ? "+:h" : ":h", help_only,
				NULL)) != -1) {
		rc = cli_common_opt(c, argv[0], argv);
		return rc >= 0 ? rc : CLI_USAGE;
	}
	return -1;
}

/* Check the operand count: between @p min and @p max. */
static int operands(int argc, char **argv, int min, int max)
{
	int n = argc - optind;

	if (n < min)
		return cli_usage(argv[0], "missing operand");
	if (n > max)
		return cli_usage(argv[0], "extra operand '%s'",
				 argv[optind + max]);
	return -1;
}

int cmd_put(int argc, char **argv)
{
	kt_store *st = NULL;
	char *path = NULL, *buf = NULL;
	const char *value;
	size_t len;
	int rc;

	if ((rc = opts_none(argc, argv, 1)) >= 0 ||
	    (rc = operands(argc, argv, 1, 2)) >= 0)
		return rc;
	path = cli_path(argv[optind]);
	if (argc - optind == 2) {
		value = argv[optind + 1];
		len = strlen(value);
	} else {
		/* Read stdin before opening: the store stays free while a
		 * slow producer writes. */
		if (cli_read_fd(&buf, &len, STDIN_FILENO) != 0) {
			rc = cli_fail_errno(path, "reading standard input");
			goto out;
		}
		value = buf;
	}
	if ((rc = cli_open(&st, 1)) != CLI_OK)
		goto out;
	rc = kt_put(st, path, value, len, NULL);
	rc = rc < 0 ? cli_fail(path, rc) : CLI_OK;
out:
	kt_close(st);
	free(buf);
	free(path);
	return rc;
}

int cmd_get(int argc, char **argv)
{
	kt_store *st = NULL;
	char *path = NULL;
	void *value = NULL;
	size_t len = 0;
	int rc;

	if ((rc = opts_none(argc, argv, 0)) >= 0 ||
	    (rc = operands(argc, argv, 1, 1)) >= 0)
		return rc;
	path = cli_path(argv[optind]);
	if ((rc = cli_open(&st, 0)) != CLI_OK)
		goto out;
	rc = kt_get(&value, &len, st, path);
	if (rc < 0)
		rc = cli_fail(path, rc);
	else if (cli_write_all(STDOUT_FILENO, value, len) != 0)
		rc = cli_fail_errno("stdout", "write");
	else
		rc = CLI_OK;
out:
	kt_free(value);
	kt_close(st);
	free(path);
	return rc;
}

int cmd_mkdir(int argc, char **argv)
{
	static const struct option o[] = {
		{"parents", no_argument, NULL, 'p'}, OPT_HELP, OPT_END};
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_store *st = NULL;
	char *path;
	int c, rc;

	while ((c = getopt_long(argc, argv, ":ph", o, NULL)) != -1) {
		if (c == 'p')
			co.flags |= KT_CREATE_PARENTS;
		else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0)
			return rc;
	}
	if ((rc = operands(argc, argv, 1, 1)) >= 0)
		return rc;
	if ((rc = cli_open(&st, 1)) != CLI_OK)
		return rc;
	path = cli_path(argv[optind]);
	rc = kt_mkdir(st, path, &co);
	rc = rc < 0 ? cli_fail(path, rc) : CLI_OK;
	kt_close(st);
	free(path);
	return rc;
}

/* Report a failed kt_link(@p existing, @p newpath) in the user's terms:
 * which of the two paths is at fault and why. */
static int ln_fail(kt_store *st, const char *existing, const char *newpath,
		   int code)
{
	kt_statbuf sb;
	int have = kt_lstat(&sb, st, existing) == 0;

	switch (code) {
	case KT_EPERM:
		if (!have)
			break;
		if (strcmp(existing, "/") == 0)
			return cli_fail_msg(existing,
					    "the root cannot have a second "
					    "path");
		if (sb.kind & KT_KIND_DIR)
			return cli_fail_msg(
				existing,
				"is a%s directory; a directory cannot have "
				"a second path (use ln -s for a symbolic "
				"link to it)",
				sb.kind & KT_KIND_ITEM ? "n item that is also a"
						       : "");
		break;
	case KT_EEXISTS:
		return cli_fail_msg(newpath,
				    "already exists; ln makes a new path and "
				    "never replaces a node");
	case KT_EMLINK:
		return cli_fail_msg(existing,
				    "already has %u paths, the most a node "
				    "can have",
				    (unsigned)KT_LINK_MAX);
	case KT_ENOTFOUND:
		if (!have)
			return cli_fail(existing, code);
		break;
	default:
		break;
	}
	return cli_fail(have ? newpath : existing, code);
}

int cmd_ln(int argc, char **argv)
{
	static const struct option o[] = {
		{"symbolic", no_argument, NULL, 's'}, OPT_HELP, OPT_END};
	kt_store *st = NULL;
	char *name, *target = NULL;
	int c, rc, sym = 0;

	while ((c = getopt_long(argc, argv, ":sh", o, NULL)) != -1) {
		if (c == 's')
			sym = 1;
		else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0)
			return rc;
	}
	if ((rc = operands(argc, argv, 2, 2)) >= 0)
		return rc;
	if ((rc = cli_open(&st, 1)) != CLI_OK)
		return rc;
	name = cli_path(argv[optind + 1]);
	if (sym) {
		/* A symbolic link's target is stored verbatim. */
		rc = kt_symlink(st, name, argv[optind], NULL);
		rc = rc < 0 ? cli_fail(name, rc) : CLI_OK;
	} else {
		target = cli_path(argv[optind]);
		rc = kt_link(st, target, name);
		rc = rc < 0 ? ln_fail(st, target, name, rc) : CLI_OK;
	}
	kt_close(st);
	free(target);
	free(name);
	return rc;
}

/* A device number's part: decimal, 0x hex or 0 octal, as mknod(1) takes
 * it.  0, or -1 when it is not a number of 32 bits. */
static int dev_part(unsigned int *out, const char *s)
{
	unsigned long long v;
	char *end = NULL;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (s[0] == '\0' || s[0] == '-' || *end != '\0' || errno != 0 ||
	    v > UINT32_MAX)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

int cmd_mknod(int argc, char **argv)
{
	static const struct option o[] = {
		{"mode", required_argument, NULL, 'm'}, OPT_HELP, OPT_END};
	kt_create_options co = KT_CREATE_OPTIONS_INIT;
	kt_store *st = NULL;
	const char *t;
	unsigned int type, maj = 0, min = 0;
	uint64_t rdev = 0;
	char *path, *end;
	int c, rc, dev;

	while ((c = getopt_long(argc, argv, ":m:h", o, NULL)) != -1) {
		if (c == 'm') {
			unsigned long m = strtoul(optarg, &end, 8);
			if (optarg[0] == '\0' || *end != '\0' || m > 07777)
				return cli_usage(
					argv[0],
					"--mode needs octal permission "
					"bits (0 to 7777), not '%s'",
					optarg);
			co.flags |= KT_CREATE_MODE;
			co.mode = (uint32_t)m;
		} else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0) {
			return rc;
		}
	}
	if ((rc = operands(argc, argv, 2, 4)) >= 0)
		return rc;
	t = argv[optind + 1];
	type = strcmp(t, "p") == 0			    ? KT_TYPE_FIFO
	       : strcmp(t, "s") == 0			    ? KT_TYPE_SOCK
	       : strcmp(t, "c") == 0 || strcmp(t, "u") == 0 ? KT_TYPE_CHR
	       : strcmp(t, "b") == 0			    ? KT_TYPE_BLK
							    : cli_type_parse(t);
	if (type == 0)
		return cli_usage(argv[0],
				 "unknown type '%s' (p or fifo, s or socket, "
				 "c or char, b or block)",
				 t);
	dev = type == KT_TYPE_CHR || type == KT_TYPE_BLK;
	if (dev && argc - optind != 4)
		return cli_usage(argv[0], "a device needs MAJOR and MINOR");
	if (!dev && argc - optind != 2)
		return cli_usage(argv[0], "%s has no device number",
				 type == KT_TYPE_FIFO ? "a FIFO" : "a socket");
	if (dev && (dev_part(&maj, argv[optind + 2]) != 0 ||
		    dev_part(&min, argv[optind + 3]) != 0))
		return cli_usage(argv[0],
				 "MAJOR and MINOR must be numbers below 2^32, "
				 "not '%s' '%s'",
				 argv[optind + 2], argv[optind + 3]);
	if (dev)
		rdev = makedev(maj, min);
	if ((rc = cli_open(&st, 1)) != CLI_OK)
		return rc;
	path = cli_path(argv[optind]);
	rc = kt_mknod(st, path, type, rdev, &co);
	rc = rc < 0 ? cli_fail(path, rc) : CLI_OK;
	kt_close(st);
	free(path);
	return rc;
}

int cmd_readlink(int argc, char **argv)
{
	kt_store *st = NULL;
	char *path, *target = NULL;
	size_t len = 0;
	int rc;

	if ((rc = opts_none(argc, argv, 0)) >= 0 ||
	    (rc = operands(argc, argv, 1, 1)) >= 0)
		return rc;
	if ((rc = cli_open(&st, 0)) != CLI_OK)
		return rc;
	path = cli_path(argv[optind]);
	rc = kt_readlink(&target, &len, st, path);
	if (rc < 0) {
		rc = cli_fail(path, rc);
	} else {
		cli_put_name(stdout, target, len);
		putchar('\n');
		rc = CLI_OK;
	}
	kt_free(target);
	kt_close(st);
	free(path);
	return rc;
}

int cmd_path(int argc, char **argv)
{
	kt_store *st = NULL;
	const char *arg;
	char *path = NULL;
	size_t len = 0, id;
	int rc;

	if ((rc = opts_none(argc, argv, 0)) >= 0 ||
	    (rc = operands(argc, argv, 1, 1)) >= 0)
		return rc;
	arg = argv[optind];
	if (cli_parse_size(&id, arg) != 0 || id == 0)
		return cli_usage("path", "'%s' is not a node id (a positive "
				 "decimal number, as 'stat' shows)", arg);
	if ((rc = cli_open(&st, 0)) != CLI_OK)
		return rc;
	rc = kt_id_path(&path, &len, st, (uint64_t)id);
	if (rc < 0) {
		rc = cli_fail(arg, rc);
	} else {
		cli_put_name(stdout, path, len);
		putchar('\n');
		rc = CLI_OK;
	}
	kt_free(path);
	kt_close(st);
	return rc;
}

int cmd_rm(int argc, char **argv)
{
	static const struct option o[] = {
		{"recursive", no_argument, NULL, 'r'},
		{"prune", no_argument, NULL, 'P'},
		{"all-paths", no_argument, NULL, 'a'},
		OPT_HELP,
		OPT_END};
	kt_store *st = NULL;
	unsigned int flags = 0;
	char *path;
	int c, rc;

	while ((c = getopt_long(argc, argv, ":rRah", o, NULL)) != -1) {
		if (c == 'r' || c == 'R')
			flags |= KT_DELETE_RECURSIVE;
		else if (c == 'a')
			flags |= KT_DELETE_ALL_PATHS;
		else if (c == 'P')
			flags |= KT_DELETE_PRUNE;
		else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0)
			return rc;
	}
	if ((rc = operands(argc, argv, 1, 1)) >= 0)
		return rc;
	if ((rc = cli_open(&st, 1)) != CLI_OK)
		return rc;
	path = cli_path(argv[optind]);
	rc = kt_delete(st, path, flags);
	if (rc == KT_ENOTEMPTY && !(flags & KT_DELETE_RECURSIVE))
		rc = cli_fail_msg(path, "directory not empty (use rm -r to "
					"remove it and everything under it)");
	else
		rc = rc < 0 ? cli_fail(path, rc) : CLI_OK;
	kt_close(st);
	free(path);
	return rc;
}

/* The path SRC moves to when it moves into the directory DIR:
 * DIR/NAME, NAME being SRC's last name.  The root has no name: it keeps
 * DIR, for the library to refuse. */
static char *mv_into(const char *dir, const char *src)
{
	const char *name = strrchr(src, '/') + 1;

	if (*name == '\0')
		return cli_path(dir);
	return cli_join(dir, name, strlen(name));
}

/* Move several nodes in one batch: all move or none does.  A failure is
 * reported against the source whose move failed. */
static int mv_batch(kt_store *st, char **src, char **dst, int n,
		    unsigned int flags)
{
	kt_batch *b = NULL;
	unsigned long long k;
	int i, rc;

	if ((rc = kt_batch_new(&b, st)) < 0)
		return cli_fail(src[0], rc);
	for (i = 0; i < n; i++) {
		if ((rc = kt_batch_rename(b, src[i], dst[i], flags)) < 0) {
			rc = cli_fail(src[i], rc);
			goto out;
		}
	}
	if ((rc = kt_batch_commit(b)) < 0) {
		/* kt_errmsg() starts "batch operation K (rename): ". */
		k = strncmp(kt_errmsg(), "batch operation ", 16) == 0
			    ? strtoull(kt_errmsg() + 16, NULL, 10)
			    : 0;
		rc = cli_fail(k >= 1 && k <= (unsigned)n ? src[k - 1] : src[0],
			      rc);
	}
out:
	kt_batch_free(b);
	return rc;
}

int cmd_mv(int argc, char **argv)
{
	static const struct option o[] = {
		{"no-replace", no_argument, NULL, 'n'},
		{"exchange", no_argument, NULL, 'x'},
		{"no-target-directory", no_argument, NULL, 'T'},
		OPT_HELP,
		OPT_END};
	kt_store *st = NULL;
	kt_statbuf sb;
	unsigned int flags = 0;
	char **src = NULL, **dst = NULL, *last = NULL;
	int c, i, n, rc, name_only = 0, into = 0;

	while ((c = getopt_long(argc, argv, ":nTh", o, NULL)) != -1) {
		if (c == 'n')
			flags |= KT_RENAME_NOREPLACE;
		else if (c == 'x')
			flags |= KT_RENAME_EXCHANGE;
		else if (c == 'T')
			name_only = 1;
		else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0)
			return rc;
	}
	if (flags == (KT_RENAME_NOREPLACE | KT_RENAME_EXCHANGE))
		return cli_usage(argv[0], "--no-replace and --exchange "
					  "exclude each other");
	/* An exchange swaps two given names, as renameat2() does. */
	if (flags & KT_RENAME_EXCHANGE)
		name_only = 1;
	if ((rc = operands(argc, argv, 2, name_only ? 2 : argc)) >= 0)
		return rc;
	n = argc - optind - 1;
	if ((rc = cli_open(&st, 1)) != CLI_OK)
		return rc;
	last = cli_path(argv[argc - 1]);
	/* Like mv(1): into an existing directory, following a link to
	 * one; several sources need one. */
	if (!name_only) {
		rc = kt_stat(&sb, st, last);
		into = rc == 0 && (sb.kind & KT_KIND_DIR);
		if (n > 1 && rc < 0) {
			rc = cli_fail(last, rc);
			goto out;
		}
		if (n > 1 && !into) {
			rc = cli_fail_msg(last, "not a directory, so several "
						"sources cannot move into it");
			goto out;
		}
	}
	src = calloc((size_t)n, sizeof(*src));
	dst = calloc((size_t)n, sizeof(*dst));
	if (src == NULL || dst == NULL) {
		rc = cli_fail_msg("mv", "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		src[i] = cli_path(argv[optind + i]);
		dst[i] = into ? mv_into(last, src[i]) : cli_path(last);
		if (into && strcmp(src[i], dst[i]) == 0) {
			rc = cli_fail_msg(src[i], "the source and the target "
						  "are the same node");
			goto out;
		}
	}
	if (n == 1) {
		rc = kt_rename(st, src[0], dst[0], flags);
		rc = rc < 0 ? cli_fail(src[0], rc) : CLI_OK;
	} else {
		rc = mv_batch(st, src, dst, n, flags);
	}
out:
	for (i = 0; src != NULL && i < n; i++)
		free(src[i]);
	for (i = 0; dst != NULL && i < n; i++)
		free(dst[i]);
	free(src);
	free(dst);
	free(last);
	kt_close(st);
	return rc;
}

static void stat_text(const char *path, const kt_statbuf *s, const char *target,
		      size_t tlen)
{
	char m[11], t[64];

	cli_mode_string(m, s);
	fputs("path: ", stdout);
	cli_put_name(stdout, path, strlen(path));
	printf("\nkind: %s\n", cli_kind_name(s->kind));
	if (s->kind == KT_KIND_SPECIAL)
		printf("type: %s\n", cli_type_name(s->type));
	if (s->type == KT_TYPE_CHR || s->type == KT_TYPE_BLK) {
		cli_dev_string(t, sizeof(t), s->rdev);
		printf("rdev: %s (major, minor)\n", t);
	}
	if (target != NULL) {
		fputs("target: ", stdout);
		cli_put_name(stdout, target, tlen);
		putchar('\n');
	}
	printf("id: %llu\nlinks: %u\nsize: %llu\n", (unsigned long long)s->id,
	       (unsigned)s->nlink, (unsigned long long)s->size);
	if (s->kind & KT_KIND_ITEM)
		printf("stored: %llu\n", (unsigned long long)s->stored);
	printf("mode: %04o (%s)\nuid: %u\ngid: %u\n", (unsigned)s->mode, m,
	       (unsigned)s->uid, (unsigned)s->gid);
	cli_time_iso(t, sizeof(t), s->atime_ns);
	printf("atime: %s\n", t);
	cli_time_iso(t, sizeof(t), s->mtime_ns);
	printf("mtime: %s\n", t);
	cli_time_iso(t, sizeof(t), s->ctime_ns);
	printf("ctime: %s\n", t);
	printf("version: %llu\n", (unsigned long long)s->version);
	if (s->kind & KT_KIND_DIR)
		printf("subdirs: %u\n", (unsigned)s->nsubdirs);
	printf("attributes: %u\n", (unsigned)s->nattrs);
}

int cmd_stat(int argc, char **argv)
{
	static const struct option o[] = {
		{"dereference", no_argument, NULL, 'L'},
		{"json", no_argument, NULL, 'j'},
		OPT_HELP,
		OPT_END};
	kt_store *st = NULL;
	kt_statbuf sb;
	char *path, *target = NULL;
	size_t tlen = 0;
	int c, rc, follow = 0, json = 0;
	json_t *obj;

	while ((c = getopt_long(argc, argv, ":Lh", o, NULL)) != -1) {
		if (c == 'L')
			follow = 1;
		else if (c == 'j')
			json = 1;
		else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0)
			return rc;
	}
	if ((rc = operands(argc, argv, 1, 1)) >= 0)
		return rc;
	if ((rc = cli_open(&st, 0)) != CLI_OK)
		return rc;
	path = cli_path(argv[optind]);
	rc = follow ? kt_stat(&sb, st, path) : kt_lstat(&sb, st, path);
	if (rc == 0 && sb.kind == KT_KIND_LINK)
		rc = kt_readlink(&target, &tlen, st, path);
	if (rc < 0) {
		rc = cli_fail(path, rc);
		goto out;
	}
	if (json) {
		obj = json_object();
		json_object_set_new(obj, "path",
				    cli_json_bytes(path, strlen(path)));
		cli_json_stat(obj, &sb);
		if (target != NULL)
			json_object_set_new(obj, "target",
					    cli_json_bytes(target, tlen));
		cli_json_print(obj);
	} else {
		stat_text(path, &sb, target, tlen);
	}
	rc = CLI_OK;
out:
	kt_free(target);
	kt_close(st);
	free(path);
	return rc;
}

static int attr_ls(kt_store *st, const char *path)
{
	kt_iter *it = NULL;
	const kt_entry *e;
	int rc;

	if ((rc = kt_attr_iter_new(&it, st, path)) < 0)
		return cli_fail(path, rc);
	while ((rc = kt_iter_next(&e, it)) == 0) {
		cli_put_name(stdout, e->name, e->name_len);
		putchar('\n');
	}
	kt_iter_free(it);
	return rc == KT_ITEROVER ? CLI_OK : cli_fail(path, rc);
}

int cmd_attr(int argc, char **argv)
{
	static const int nargs[4][2] = {{2, 2}, {2, 3}, {1, 1}, {2, 2}};
	static const char *const subs[4] = {"get", "set", "ls", "rm"};
	kt_store *st = NULL;
	char *path = NULL, *buf = NULL;
	const char *name, *value;
	void *got = NULL;
	size_t len = 0;
	int rc, sub, n;

	if ((rc = opts_none(argc, argv, 1)) >= 0)
		return rc;
	if (optind >= argc)
		return cli_usage(argv[0], "missing subcommand (get, set, ls "
					  "or rm)");
	for (sub = 0; sub < 4; sub++)
		if (strcmp(argv[optind], subs[sub]) == 0)
			break;
	if (sub == 4)
		return cli_usage(argv[0], "unknown subcommand '%s'",
				 argv[optind]);
	optind++;
	n = argc - optind;
	if (n < nargs[sub][0])
		return cli_usage(argv[0], "%s: missing operand", subs[sub]);
	if (n > nargs[sub][1])
		return cli_usage(argv[0], "%s: extra operand '%s'", subs[sub],
				 argv[optind + nargs[sub][1]]);
	name = n > 1 ? argv[optind + 1] : NULL;
	value = n > 2 ? argv[optind + 2] : NULL;
	path = cli_path(argv[optind]);
	if (sub == 1 && value == NULL) {
		if (cli_read_fd(&buf, &len, STDIN_FILENO) != 0) {
			rc = cli_fail_errno(path, "reading standard input");
			goto out;
		}
		value = buf;
	} else if (value != NULL) {
		len = strlen(value);
	}
	if ((rc = cli_open(&st, sub == 1 || sub == 3)) != CLI_OK)
		goto out;
	switch (sub) {
	case 0:
		rc = kt_attr_get(&got, &len, st, path, name);
		if (rc == 0 && cli_write_all(STDOUT_FILENO, got, len) != 0)
			rc = cli_fail_errno("stdout", "write");
		break;
	case 1:
		rc = kt_attr_set(st, path, name, value, len, 0);
		break;
	case 2:
		rc = attr_ls(st, path);
		goto out;
	default:
		rc = kt_attr_delete(st, path, name);
		break;
	}
	rc = rc < 0 ? cli_fail(path, rc) : rc;
out:
	kt_free(got);
	kt_close(st);
	free(buf);
	free(path);
	return rc;
}
