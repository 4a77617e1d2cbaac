/*
 * cmd_list.c - the commands that walk the tree: ls (one directory, a page
 * of it, or every directory below with -R), tree (the subtree drawn like
 * tree(1)) and find (every node under a prefix, in one range scan).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define OPT_HELP                                                               \
	{                                                                      \
		"help", no_argument, NULL, 'h'                                 \
	}
#define OPT_END                                                                \
	{                                                                      \
		NULL, 0, NULL, 0                                               \
	}

typedef struct ls_opts {
	kt_list_options list;
	int lng, rec, json;
} ls_opts;

/* A growable list of names (subdirectories still to list). */
typedef struct names {
	char **v;
	size_t n, cap;
} names;

static int names_add(names *l, const char *s)
{
	char **nv;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		nv = realloc(l->v, l->cap * sizeof(*nv));
		if (nv == NULL)
			return -1;
		l->v = nv;
	}
	if ((l->v[l->n] = strdup(s)) == NULL)
		return -1;
	l->n++;
	return 0;
}

static void names_free(names *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* One line (or JSON object) for the node at @p path shown as @p name;
 * @p have: its metadata, when the listing read it already. */
static int ls_entry(kt_store *st, const ls_opts *o, const char *path,
		    const char *name, size_t name_len, const kt_statbuf *have)
{
	kt_statbuf sb;
	char *target = NULL, m[11], t[32], size[32];
	size_t tlen = 0;
	struct tm tm;
	time_t sec;
	json_t *obj;
	int rc;

	if (!o->lng && !o->json) {
		cli_put_name(stdout, name, name_len);
		putchar('\n');
		return 0;
	}
	if (have != NULL)
		sb = *have;
	else if ((rc = kt_lstat(&sb, st, path)) < 0)
		return cli_fail(path, rc);
	if (sb.kind == KT_KIND_LINK &&
	    (rc = kt_readlink(&target, &tlen, st, path)) < 0)
		return cli_fail(path, rc);
	if (o->json) {
		obj = json_object();
		json_object_set_new(obj, "name",
				    cli_json_bytes(name, name_len));
		json_object_set_new(obj, "path",
				    cli_json_bytes(path, strlen(path)));
		cli_json_stat(obj, &sb);
		if (target != NULL)
			json_object_set_new(obj, "target",
					    cli_json_bytes(target, tlen));
		cli_json_print(obj);
	} else {
		cli_mode_string(m, &sb);
		sec = (time_t)(sb.mtime_ns / 1000000000);
		localtime_r(&sec, &tm);
		strftime(t, sizeof(t), "%Y-%m-%d %H:%M", &tm);
		/* A device shows its number where the size goes, as in ls. */
		if (sb.type == KT_TYPE_CHR || sb.type == KT_TYPE_BLK)
			cli_dev_string(size, sizeof(size), sb.rdev);
		else
			snprintf(size, sizeof(size), "%llu",
				 (unsigned long long)sb.size);
		/* The link count (paths of the node) as ls -l shows it. */
		printf("%s %2u %10s %s ", m, (unsigned)sb.nlink, size, t);
		cli_put_name(stdout, name, name_len);
		if (target != NULL) {
			fputs(" -> ", stdout);
			cli_put_name(stdout, target, tlen);
		}
		putchar('\n');
	}
	kt_free(target);
	return 0;
}

/* List the directory at @p path; with -R, then each subdirectory. */
static int ls_dir(kt_store *st, const ls_opts *o, const char *path, int header)
{
	kt_iter *it = NULL;
	kt_list_options lo = o->list;
	const kt_entry *e;
	names subs = {0};
	char *child;
	size_t i;
	int rc, bad = 0;

	/* -l and --json show every child's metadata: read it with the
	 * listing, ahead, rather than one lookup per child. */
	if (o->lng || o->json)
		lo.flags |= KT_LIST_STAT;
	if ((rc = kt_iter_new(&it, st, path, &lo)) < 0)
		return cli_fail(path, rc);
	if (header && !o->json) {
		cli_put_name(stdout, path, strlen(path));
		fputs(":\n", stdout);
	}
	/* How the children come: said when it is not byte order. */
	if (o->lng && !o->json) {
		kt_statbuf ds;
		if (kt_stat(&ds, st, path) == 0 && ds.order == KT_ORDER_TYPED)
			puts("order: typed");
	}
	while ((rc = kt_iter_next(&e, it)) == 0) {
		child = cli_join(path, e->name, e->name_len);
		if (ls_entry(st, o, child, e->name, e->name_len, e->stat) != 0)
			bad = 1;
		if (o->rec && (e->kind & KT_KIND_DIR) &&
		    names_add(&subs, child) != 0)
			rc = KT_ENOMEM;
		free(child);
		if (rc != 0)
			break;
	}
	kt_iter_free(it);
	if (rc != KT_ITEROVER) {
		names_free(&subs);
		return cli_fail(path, rc);
	}
	for (i = 0; i < subs.n; i++) {
		if (!o->json)
			putchar('\n');
		if (ls_dir(st, o, subs.v[i], 1) != 0)
			bad = 1;
	}
	names_free(&subs);
	return bad ? CLI_FAIL : CLI_OK;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
		{"long", no_argument, NULL, 'l'},
		{"recursive", no_argument, NULL, 'R'},
		{"after", required_argument, NULL, 'a'},
		{"limit", required_argument, NULL, 'n'},
		{"reverse", no_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		OPT_HELP,
		OPT_END};
	ls_opts o;
	kt_list_options lo = KT_LIST_OPTIONS_INIT;
	kt_store *st = NULL;
	kt_statbuf sb;
	char *path;
	int c, rc;

	memset(&o, 0, sizeof(o));
	o.list = lo;
	while ((c = getopt_long(argc, argv, ":lRh", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			o.lng = 1;
			break;
		case 'R':
			o.rec = 1;
			break;
		case 'a':
			o.list.after = optarg;
			o.list.after_len = strlen(optarg);
			break;
		case 'n':
			if (cli_parse_size(&o.list.limit, optarg) != 0 ||
			    o.list.limit == 0)
				return cli_usage(argv[0],
						 "--limit needs a "
						 "positive count, not '%s'",
						 optarg);
			break;
		case 'r':
			o.list.reverse = 1;
			break;
		case 'j':
			o.json = 1;
			break;
		default:
			rc = cli_common_opt(c, argv[0], argv);
			return rc >= 0 ? rc : CLI_USAGE;
		}
	}
	if (o.rec && o.list.after != NULL)
		return cli_usage(argv[0], "--after pages one directory; it "
					  "cannot be used with -R");
	if (argc - optind > 1)
		return cli_usage(argv[0], "extra operand '%s'",
				 argv[optind + 1]);
	if ((rc = cli_open(&st, 0)) != CLI_OK)
		return rc;
	path = cli_path(optind < argc ? argv[optind] : "/");
	/* Like ls(1), a node that is not a directory lists as itself. */
	if (kt_lstat(&sb, st, path) == 0 && !(sb.kind & KT_KIND_DIR) &&
	    (sb.kind != KT_KIND_LINK || kt_stat(&sb, st, path) != 0 ||
	     !(sb.kind & KT_KIND_DIR)))
		rc = ls_entry(st, &o, path, path, strlen(path), NULL) ? CLI_FAIL
								: CLI_OK;
	else
		rc = ls_dir(st, &o, path, o.rec);
	kt_close(st);
	free(path);
	return rc;
}

typedef struct tree_count {
	unsigned long long dirs, items, links, specials;
} tree_count;

/* Draw the children of @p path, each line starting with @p indent. */
static int tree_dir(kt_store *st, const char *path, char *indent, size_t ilen,
		    tree_count *n)
{
	kt_list_options lo = KT_LIST_OPTIONS_INIT;
	kt_iter *it = NULL;
	const kt_entry *e, *next;
	char *child = NULL, *target = NULL, *ni = NULL;
	size_t tlen;
	int rc, last, bad = 0;
	unsigned int kind;

	if ((rc = kt_iter_new(&it, st, path, &lo)) < 0)
		return cli_fail(path, rc);
	rc = kt_iter_next(&e, it);
	while (rc == 0) {
		/* Copy what we need: the next call invalidates e. */
		kind = e->kind;
		child = cli_join(path, e->name, e->name_len);
		rc = kt_iter_next(&next, it);
		last = rc == KT_ITEROVER;
		fputs(indent, stdout);
		fputs(last ? "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 "
			   : "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 ",
		      stdout);
		cli_put_name(stdout, strrchr(child, '/') + 1,
			     strlen(strrchr(child, '/') + 1));
		if (kind == KT_KIND_LINK) {
			n->links++;
			if (kt_readlink(&target, &tlen, st, child) == 0) {
				fputs(" -> ", stdout);
				cli_put_name(stdout, target, tlen);
			}
			kt_free(target);
			target = NULL;
		}
		putchar('\n');
		if (kind & KT_KIND_DIR) {
			n->dirs++;
			ni = malloc(ilen + 16);
			if (ni == NULL) {
				free(child);
				kt_iter_free(it);
				return cli_fail(path, KT_ENOMEM);
			}
			memcpy(ni, indent, ilen);
			strcpy(ni + ilen, last ? "    " : "\xe2\x94\x82   ");
			if (tree_dir(st, child, ni, strlen(ni), n) != 0)
				bad = 1;
			free(ni);
		} else if (kind == KT_KIND_ITEM) {
			n->items++;
		} else if (kind == KT_KIND_SPECIAL) {
			n->specials++;
		}
		free(child);
		e = next;
	}
	kt_iter_free(it);
	if (rc != KT_ITEROVER)
		return cli_fail(path, rc);
	return bad ? CLI_FAIL : CLI_OK;
}

int cmd_tree(int argc, char **argv)
{
	static const struct option opts[] = {OPT_HELP, OPT_END};
	kt_store *st = NULL;
	tree_count n = {0, 0, 0, 0};
	kt_statbuf sb;
	char indent[1] = "";
	char *path;
	int c, rc;

	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		rc = cli_common_opt(c, argv[0], argv);
		return rc >= 0 ? rc : CLI_USAGE;
	}
	if (argc - optind > 1)
		return cli_usage(argv[0], "extra operand '%s'",
				 argv[optind + 1]);
	if ((rc = cli_open(&st, 0)) != CLI_OK)
		return rc;
	path = cli_path(optind < argc ? argv[optind] : "/");
	if ((rc = kt_stat(&sb, st, path)) < 0) {
		rc = cli_fail(path, rc);
		goto out;
	}
	cli_put_name(stdout, path, strlen(path));
	putchar('\n');
	/* Like tree(1), a file alone is drawn as itself. */
	if (sb.kind & KT_KIND_DIR)
		rc = tree_dir(st, path, indent, 0, &n);
	else if (sb.kind == KT_KIND_SPECIAL)
		n.specials = 1;
	else
		n.items = 1;
	printf("\n%llu director%s, %llu item%s, %llu link%s", n.dirs,
	       n.dirs == 1 ? "y" : "ies", n.items, n.items == 1 ? "" : "s",
	       n.links, n.links == 1 ? "" : "s");
	/* Only when there are any: the line stays as it was otherwise. */
	if (n.specials > 0)
		printf(", %llu special file%s", n.specials,
		       n.specials == 1 ? "" : "s");
	putchar('\n');
out:
	kt_close(st);
	free(path);
	return rc;
}

int cmd_find(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"all", no_argument, NULL, 'a'},
		{"after", required_argument, NULL, 'A'},
		{"limit", required_argument, NULL, 'n'}, OPT_HELP, OPT_END};
	kt_find_options fo = KT_FIND_OPTIONS_INIT;
	kt_store *st = NULL;
	kt_iter *it = NULL;
	const kt_entry *e;
	char *prefix, *after = NULL;
	json_t *obj;
	int c, rc, json = 0;

	fo.flags = KT_FIND_ITEMS;
	while ((c = getopt_long(argc, argv, ":ha", opts, NULL)) != -1) {
		if (c == 'j') {
			json = 1;
		} else if (c == 'a') {
			fo.flags = 0; /* directories and links too */
		} else if (c == 'A') {
			after = optarg;
		} else if (c == 'n') {
			if (cli_parse_size(&fo.limit, optarg) != 0 ||
			    fo.limit == 0)
				return cli_usage(argv[0], "--limit needs a "
						 "positive count, not '%s'",
						 optarg);
		} else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0) {
			return rc;
		}
	}
	if (argc - optind < 1)
		return cli_usage(argv[0], "missing PREFIX");
	if (argc - optind > 1)
		return cli_usage(argv[0], "extra operand '%s'",
				 argv[optind + 1]);
	if ((rc = cli_open(&st, 0)) != CLI_OK)
		return rc;
	prefix = cli_path(argv[optind]);
	if (after != NULL)
		fo.after = after = cli_path(after);
	if ((rc = kt_find_opts_new(&it, st, prefix, &fo)) < 0) {
		rc = cli_fail(prefix, rc);
		goto out;
	}
	while ((rc = kt_iter_next(&e, it)) == 0) {
		if (json) {
			obj = json_object();
			json_object_set_new(
				obj, "path",
				cli_json_bytes(e->name, e->name_len));
			json_object_set_new(
				obj, "kind",
				json_string(cli_kind_name(e->kind)));
			json_object_set_new(obj, "id",
					    json_integer((json_int_t)e->id));
			if (e->kind == KT_KIND_SPECIAL)
				json_object_set_new(
					obj, "type",
					json_string(cli_type_name(e->type)));
			cli_json_print(obj);
		} else {
			cli_put_name(stdout, e->name, e->name_len);
			putchar('\n');
		}
	}
	rc = rc == KT_ITEROVER ? CLI_OK : cli_fail(prefix, rc);
out:
	kt_iter_free(it);
	kt_close(st);
	free(prefix);
	free(after);
	return rc;
}
