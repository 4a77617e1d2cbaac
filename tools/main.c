/*
 * main.c - the keytree command: global options (-s STORE, -o NAME=VALUE,
 * --help, --version), the command table with each command's help text,
 * and the usage-error format shared by every command.
 *
 * Exit statuses: 0 success, 1 the operation failed, 2 a usage error.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct cli_command {
	const char *name;
	cli_cmd_fn fn;
	const char *synopsis;
	const char *help; /* options and description */
} cli_command;

static const cli_command commands[] = {
	{"init", cmd_init, "init [--delimiter C] [--typed]",
	 "Create a new, empty store at STORE; fails if one exists.\n"
	 "\n"
	 "  --delimiter C  the reserved delimiter character (default "
	 "'\xc2\xa6')\n"
	 "  --typed        typed names: in every directory, names that are\n"
	 "                 numbers (0, or digits without a leading zero, up\n"
	 "                 to 2^64-1) come first in numeric order, then UUIDs\n"
	 "                 (lower-case, kept in 16 bytes), then the other\n"
	 "                 names in byte order ('007' and '+7' are other\n"
	 "                 names).  Chosen here, for good.\n"},
	{"destroy", cmd_destroy, "destroy --yes",
	 "Remove the store at STORE and everything in it, for good: a\n"
	 "directory store's files (refused while a process has it open), or\n"
	 "every object of a RADOS tree (clients using it are not detected).\n"
	 "\n"
	 "  --yes  required: there is no undo\n"},
	{"put", cmd_put, "put PATH [VALUE]",
	 "Write the value of the item at PATH, creating it and any missing\n"
	 "ancestors.  Without VALUE the value is read from standard input,\n"
	 "byte for byte.\n"},
	{"get", cmd_get, "get PATH",
	 "Write the value of the item at PATH to standard output exactly,\n"
	 "following links.  'cat' is an alias.\n"},
	{"cat", cmd_get, "cat PATH", "An alias of 'get'.\n"},
	{"ls", cmd_ls,
	 "ls [-l] [-R] [--after NAME] [--limit N] [--reverse] "
	 "[--json] [PATH]",
	 "List the children of the directory at PATH (default /), one per "
	 "line,\n"
	 "in byte order of name (in a store made with 'init --typed': numbers\n"
	 "by value, then UUIDs, then other names by bytes).\n"
	 "\n"
	 "  -l, --long     kind and mode, link count, size, mtime; links as\n"
	 "                 'name -> target'; in a typed store a first line\n"
	 "                 'order: typed'\n"
	 "  -R, --recursive  list every directory below PATH too\n"
	 "  --after NAME   start after this name (paging)\n"
	 "  --limit N      at most N entries (per directory with -R)\n"
	 "  --reverse      descending order\n"
	 "  --json         one JSON object per entry\n"},
	{"tree", cmd_tree, "tree [PATH]",
	 "Draw the subtree at PATH (default /) like tree(1).\n"},
	{"find", cmd_find, "find [-a] [--json] [--after PATH] [--limit N] PREFIX",
	 "Print every item whose path starts with PREFIX at a component start\n"
	 "(\"/a/b\" finds /a/b, /a/b/c and /a/bc), one path per line, a node\n"
	 "before its descendants.\n"
	 "\n"
	 "  -a, --all       directories and links too, not only items\n"
	 "  --after PATH    start after PATH, the last path of the page before\n"
	 "                  (paging; it need not exist any more)\n"
	 "  --limit N       at most N paths\n"
	 "  --json          one JSON object per node\n"},
	{"mkdir", cmd_mkdir, "mkdir [-p] PATH",
	 "Make a directory.  If PATH is an item, it becomes an item that is\n"
	 "also a directory (item+dir): it keeps its value and can now hold\n"
	 "children.  An existing directory is an error without -p.\n"
	 "\n"
	 "  -p, --parents  make missing ancestors; no error if it exists\n"},
	{"ln", cmd_ln, "ln [-s] TARGET NAME",
	 "Give the node at TARGET a further path NAME (a hard link; an alias\n"
	 "in StatelyDB's terms): both paths are the same node, so a change\n"
	 "through one is seen through the other at once.  TARGET may be an\n"
	 "item, a symbolic link (itself, not what it points to) or a special\n"
	 "file, not a directory.  NAME is the new path itself and must not\n"
	 "exist.  'rm' removes one path; 'rm --all-paths' removes them all.\n"
	 "\n"
	 "  -s, --symbolic  make a symbolic link NAME whose target is TARGET,\n"
	 "                  stored verbatim\n"
	 "\n"
	 "Missing ancestors of NAME are made, as put makes them.\n"},
	{"mknod", cmd_mknod, "mknod [-m MODE] PATH TYPE [MAJOR MINOR]",
	 "Make a special file at PATH, and any missing ancestors: TYPE p\n"
	 "(fifo), s (socket), c or u (char: a character device) or b (block:\n"
	 "a block device), a device with its MAJOR and MINOR numbers.  The\n"
	 "store only records them; a keytreefs mount or an export gives them\n"
	 "their meaning.\n"
	 "\n"
	 "  -m, --mode MODE  octal permission bits (default 644)\n"},
	{"readlink", cmd_readlink, "readlink PATH",
	 "Print the target of the link at PATH.\n"},
	{"path", cmd_path, "path ID",
	 "Print the path of the node whose id is ID: the id 'stat' shows,\n"
	 "which is also the inode number keytreefs gives the node.\n"},
	{"rm", cmd_rm, "rm [-r] [-a] [--prune] PATH",
	 "Remove the node at PATH (a link itself, not its target).  A\n"
	 "directory with children needs -r.  Of a node with several paths\n"
	 "(ln) only PATH goes; the node stays under its other paths.\n"
	 "\n"
	 "  -r, --recursive  remove the whole subtree, atomically\n"
	 "  -a, --all-paths  remove the node under every one of its paths,\n"
	 "                   atomically\n"
	 "  --prune          then remove ancestors left empty\n"},
	{"mv", cmd_mv, "mv [-T] [-n|--exchange] SRC... DST",
	 "Move SRC, with its subtree, atomically.  If DST is an existing\n"
	 "directory (or a link to one), SRC moves into it, keeping its name,\n"
	 "as mv(1) does; otherwise DST is SRC's new path.  With several SRCs,\n"
	 "DST must be a directory and they all move, or none does.\n"
	 "\n"
	 "  -T, --no-target-directory\n"
	 "                    DST is the new path, never a directory to move "
	 "into\n"
	 "  -n, --no-replace  fail if the target exists\n"
	 "  --exchange        swap SRC and DST, which must both exist "
	 "(implies -T)\n"},
	{"stat", cmd_stat, "stat [-L] [--json] PATH",
	 "Show the kind, id, link count (paths of the node), size, mode,\n"
	 "owner, times, version and attribute count of the node at PATH.  A\n"
	 "link is shown itself.\n"
	 "\n"
	 "  -L, --dereference  follow a link at PATH\n"
	 "  --json             one JSON object\n"},
	{"attr", cmd_attr, "attr get|set|ls|rm PATH [NAME [VALUE]]",
	 "Item attributes.\n"
	 "\n"
	 "  attr get PATH NAME          write the value to standard output\n"
	 "  attr set PATH NAME [VALUE]  set it (VALUE from stdin when absent)\n"
	 "  attr ls PATH                the names, one per line\n"
	 "  attr rm PATH NAME           remove it\n"},
	{"dump", cmd_dump, "dump [PATH]",
	 "Write the store, or the subtree at PATH, to standard output as JSON\n"
	 "Lines (see docs/DUMP.md).\n"},
	{"load", cmd_load, "load",
	 "Read a dump from standard input into the store in one atomic batch:\n"
	 "a malformed or truncated dump changes nothing.  Nodes with several\n"
	 "paths get them all back.\n"},
	{"import", cmd_import, "import DIR [PATH]",
	 "Copy the real directory tree DIR into the store at PATH (default "
	 "/):\n"
	 "files, directories, symbolic links, special files, modes, owners,\n"
	 "times and user.* extended attributes.  Files hard-linked to each\n"
	 "other become one node with several paths, as 'ln' makes.\n"},
	{"export", cmd_export, "export PATH DIR",
	 "Copy the subtree at PATH out to the real directory DIR, which must\n"
	 "be absent or empty.  The paths of a node with several become hard\n"
	 "links to one file.\n"},
	{"check", cmd_check, "check [--repair]",
	 "Verify every invariant of the store and print each violation.\n"
	 "Exits 1 if any remain.\n"
	 "\n"
	 "  --repair   repair what is found, then check again\n"},
	{"stats", cmd_stats, "stats [--json]",
	 "Count the items, directories, links, special files, aliases (paths\n"
	 "beyond the first of nodes with several), value bytes, attributes\n"
	 "and rows of the store.  A node with several paths counts once.\n"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char *store_dir;
/* -o ceph_conf=PATH and -o ceph_client=NAME (NULL: not given). */
static const char *ceph_conf;
static const char *ceph_client;

const char *cli_store_dir(void)
{
	return store_dir;
}

void cli_store_options(kt_options *o)
{
	o->ceph_conf = ceph_conf;
	o->ceph_client = ceph_client;
}

/* Take one -o NAME=VALUE; a usage error (CLI_USAGE) names what is wrong,
 * else 0. */
static int store_option(char *arg)
{
	char *eq = strchr(arg, '=');
	const char **to = NULL;

	if (eq != NULL) {
		*eq = '\0';
		if (strcmp(arg, "ceph_conf") == 0)
			to = &ceph_conf;
		else if (strcmp(arg, "ceph_client") == 0)
			to = &ceph_client;
	}
	if (to == NULL)
		return cli_usage(NULL, "unknown store option '%s' (-o takes "
				       "ceph_conf=PATH or ceph_client=NAME)",
				 arg);
	if (eq[1] == '\0')
		return cli_usage(NULL, "store option '%s' needs a value after "
				       "'='", arg);
	*to = eq + 1;
	return 0;
}

static const cli_command *command_find(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void main_help(FILE *f)
{
	size_t i;

	fprintf(f, "usage: keytree [-s STORE] COMMAND [OPTIONS] [ARGS]\n"
		   "\n"
		   "A hierarchical tree store on LevelDB or on Ceph RADOS.\n"
		   "\n"
		   "  -s, --store STORE  the store (default $KEYTREE_STORE): a "
		   "directory, or\n"
		   "                     rados:POOL/TREE or "
		   "rados:POOL/NAMESPACE/TREE for a tree\n"
		   "                     in a Ceph cluster's pool (a directory "
		   "whose name starts\n"
		   "                     with 'rados:' is given as "
		   "./rados:...)\n"
		   "  -o ceph_conf=PATH  a RADOS store: the cluster's ceph.conf "
		   "(default\n"
		   "                     $KEYTREE_CEPH_CONF, else Ceph's own "
		   "search: $CEPH_CONF,\n"
		   "                     /etc/ceph/ceph.conf, ...)\n"
		   "  -o ceph_client=NAME  a RADOS store: the client to connect "
		   "as, e.g.\n"
		   "                     client.admin (default "
		   "$KEYTREE_CEPH_CLIENT, else Ceph's)\n"
		   "  -h, --help         this help; 'keytree COMMAND --help' "
		   "for one command\n"
		   "  -V, --version      the version\n"
		   "\n"
		   "Commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %s\n", commands[i].synopsis);
	fprintf(f, "\nExit status: 0 success, 1 failure, 2 usage error.\n"
		   "See keytree(1).\n");
}

int cli_help(const char *name)
{
	const cli_command *c = command_find(name);

	if (c == NULL)
		return CLI_USAGE;
	printf("usage: keytree [-s STORE] %s\n\n%s", c->synopsis, c->help);
	return CLI_OK;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "keytree: %s%s", cmd ? cmd : "", cmd ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'keytree %s%s--help'.\n", cmd ? cmd : "",
		cmd ? " " : "");
	return CLI_USAGE;
}

int cli_common_opt(int c, const char *cmd, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";

	if (c == 'h')
		return cli_help(cmd);
	if (c == '?') {
		if (optopt != 0)
			return cli_usage(cmd, "unknown option '-%c'", optopt);
		return cli_usage(cmd, "unknown option '%s'", arg);
	}
	if (c == ':')
		return cli_usage(cmd, "option '%s' needs a value", arg);
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"store", required_argument, NULL, 's'},
		{"option", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const cli_command *cmd;
	int c;

	/* '+': stop at the command; its options are its own. */
	while ((c = getopt_long(argc, argv, "+s:o:hV", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			store_dir = optarg;
			break;
		case 'o':
			if (store_option(optarg) != 0)
				return CLI_USAGE;
			break;
		case 'h':
			main_help(stdout);
			return CLI_OK;
		case 'V':
			printf("keytree %s (libkeytree %s)\n",
			       KT_VERSION_STRING, kt_version());
			return CLI_OK;
		default:
			fprintf(stderr, "Try 'keytree --help'.\n");
			return CLI_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage(NULL, "no command given");
	cmd = command_find(argv[optind]);
	if (cmd == NULL)
		return cli_usage(NULL, "unknown command '%s'", argv[optind]);
	if (store_dir == NULL || store_dir[0] == '\0')
		store_dir = getenv("KEYTREE_STORE");
	if (store_dir != NULL && store_dir[0] == '\0')
		store_dir = NULL;
	argc -= optind;
	argv += optind;
	optind = 0; /* reinitialise getopt for the command */
	return cmd->fn(argc, argv);
}
