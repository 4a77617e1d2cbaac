/*
 * cmd_store.c - the commands that act on the store as a whole: init,
 * destroy, check (and repair) and stats.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define OPT_HELP                                                               \
	{                                                                      \
		"help", no_argument, NULL, 'h'                                 \
	}
#define OPT_END                                                                \
	{                                                                      \
		NULL, 0, NULL, 0                                               \
	}

int cmd_init(int argc, char **argv)
{
	static const struct option o[] = {
		{"delimiter", required_argument, NULL, 'd'},
		{"typed", no_argument, NULL, 't'}, OPT_HELP, OPT_END};
	kt_options opts = KT_OPTIONS_INIT;
	kt_store *st = NULL;
	const char *dir;
	int c, rc;

	while ((c = getopt_long(argc, argv, ":h", o, NULL)) != -1) {
		if (c == 'd')
			opts.delimiter = optarg;
		else if (c == 't')
			opts.typed_names = 1;
		else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0)
			return rc;
	}
	if (argc > optind)
		return cli_usage(argv[0], "extra operand '%s'", argv[optind]);
	dir = cli_store_dir();
	if (dir == NULL)
		return cli_usage(NULL, "no store given: use -s STORE or set "
				       "KEYTREE_STORE");
	opts.create_if_missing = 1;
	opts.error_if_exists = 1;
	cli_store_options(&opts);
	rc = kt_open(&st, dir, &opts);
	if (rc == KT_EEXISTS)
		return cli_fail_msg(dir, "a store already exists here");
	if (rc == KT_EBUSY)
		return cli_fail_busy(dir);
	if (rc < 0)
		return cli_fail(dir, rc);
	kt_close(st);
	return CLI_OK;
}

int cmd_destroy(int argc, char **argv)
{
	static const struct option o[] = {
		{"yes", no_argument, NULL, 'y'}, OPT_HELP, OPT_END};
	kt_options opts = KT_OPTIONS_INIT;
	const char *loc;
	int c, rc, yes = 0;

	while ((c = getopt_long(argc, argv, ":h", o, NULL)) != -1) {
		if (c == 'y')
			yes = 1;
		else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0)
			return rc;
	}
	if (argc > optind)
		return cli_usage(argv[0], "extra operand '%s'", argv[optind]);
	loc = cli_store_dir();
	if (loc == NULL)
		return cli_usage(NULL, "no store given: use -s STORE or set "
				       "KEYTREE_STORE");
	if (!yes)
		return cli_usage(argv[0], "this removes the store '%s' and "
				 "everything in it for good; say --yes", loc);
	cli_store_options(&opts);
	rc = kt_destroy(loc, &opts);
	if (rc == KT_EBUSY)
		return cli_fail_busy(loc);
	if (rc < 0)
		return cli_fail(loc, rc);
	return CLI_OK;
}

static int print_line(const char *what, void *payload)
{
	const char *prefix = payload;

	fputs(prefix, stdout);
	cli_put_name(stdout, what, strlen(what));
	putchar('\n');
	return 0;
}

/* kt_check's progress, drawn by the CLI's progress line. */
static int check_progress(uint64_t done, uint64_t total, void *payload)
{
	cli_progress *p = payload;

	p->total = total;
	cli_progress_update(p, done);
	return 0;
}

/* Each violation on its own line, after clearing the progress line. */
static int check_violation(const char *what, void *payload)
{
	static char none[] = "";

	cli_progress_clear(payload);
	return print_line(what, none);
}

int cmd_check(int argc, char **argv)
{
	static const struct option o[] = {
		{"repair", no_argument, NULL, 'r'}, OPT_HELP, OPT_END};
	kt_store *st = NULL;
	size_t nbad = 0, nfixed = 0;
	int c, rc, repair = 0;
	char repaired[] = "repaired: ";

	while ((c = getopt_long(argc, argv, ":h", o, NULL)) != -1) {
		if (c == 'r')
			repair = 1;
		else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0)
			return rc;
	}
	if (argc > optind)
		return cli_usage(argv[0], "extra operand '%s'", argv[optind]);
	if ((rc = cli_open(&st, repair)) != CLI_OK)
		return rc;
	if (repair) {
		kt_check_options ro = KT_CHECK_OPTIONS_INIT;

		ro.on_violation = print_line;
		ro.payload = repaired;
		rc = kt_repair(&nfixed, st, &ro);
		if (rc < 0) {
			rc = cli_fail(cli_store_dir(), rc);
			goto out;
		}
	}
	{
		kt_check_options co = KT_CHECK_OPTIONS_INIT;
		cli_progress p;

		cli_progress_start(&p, "check", "rows", 0);
		co.on_violation = check_violation;
		co.on_progress = p.on ? check_progress : NULL;
		co.payload = &p;
		rc = kt_check(&nbad, st, &co);
		cli_progress_end(&p);
	}
	/* KT_ECORRUPT with no violation counted is a read that failed
	 * (damaged files): then LevelDB's diagnosis is the message. */
	if (nbad > 0 && (rc == 0 || rc == KT_ECORRUPT))
		rc = cli_fail_msg(cli_store_dir(), "%zu violation%s %s", nbad,
				  nbad == 1 ? "" : "s",
				  !repair     ? "found"
				  : nbad == 1 ? "remains after repair"
					      : "remain after repair");
	else if (rc < 0)
		rc = cli_fail(cli_store_dir(), rc);
	else
		rc = CLI_OK;
	if (repair && nfixed > 0)
		fprintf(stderr, "keytree: %zu repair%s made\n", nfixed,
			nfixed == 1 ? "" : "s");
out:
	kt_close(st);
	return rc;
}

int cmd_stats(int argc, char **argv)
{
	static const struct option o[] = {
		{"json", no_argument, NULL, 'j'}, OPT_HELP, OPT_END};
	kt_store_stats s;
	kt_store *st = NULL;
	int c, rc, json = 0;

	while ((c = getopt_long(argc, argv, ":h", o, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else if ((rc = cli_common_opt(c, argv[0], argv)) >= 0)
			return rc;
	}
	if (argc > optind)
		return cli_usage(argv[0], "extra operand '%s'", argv[optind]);
	if ((rc = cli_open(&st, 0)) != CLI_OK)
		return rc;
	rc = kt_stats(&s, st);
	kt_close(st);
	if (rc < 0)
		return cli_fail(cli_store_dir(), rc);
	if (json) {
		cli_json_print(json_pack(
			"{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "items",
			(json_int_t)s.items, "dirs", (json_int_t)s.dirs,
			"links", (json_int_t)s.links, "bytes",
			(json_int_t)s.value_bytes, "attrs", (json_int_t)s.attrs,
			"rows", (json_int_t)s.rows, "row_bytes",
			(json_int_t)s.row_bytes, "specials",
			(json_int_t)s.specials, "aliases",
			(json_int_t)s.aliases));
		return CLI_OK;
	}
	printf("items: %llu\ndirectories: %llu\nlinks: %llu\n"
	       "special files: %llu\naliases: %llu\nbytes: %llu\n"
	       "attributes: %llu\nrows: %llu\nrow bytes: %llu\n",
	       (unsigned long long)s.items, (unsigned long long)s.dirs,
	       (unsigned long long)s.links, (unsigned long long)s.specials,
	       (unsigned long long)s.aliases,
	       (unsigned long long)s.value_bytes, (unsigned long long)s.attrs,
	       (unsigned long long)s.rows, (unsigned long long)s.row_bytes);
	return CLI_OK;
}
