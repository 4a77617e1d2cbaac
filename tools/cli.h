/*
 * cli.h - what the files of the keytree command-line tool share: the
 * command functions, error reporting in the tool's one message format,
 * path normalisation, name escaping, JSON helpers and the progress line.
 */
#ifndef KT_CLI_H
#define KT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "keytree.h"

/* Exit statuses fixed by the interface. */
#define CLI_OK	  0
#define CLI_FAIL  1
#define CLI_USAGE 2

/* One subcommand: argv[0] is the command name, options and operands
 * follow.  Returns an exit status. */
typedef int (*cli_cmd_fn)(int argc, char **argv);

int cmd_init(int argc, char **argv);
int cmd_destroy(int argc, char **argv);
int cmd_put(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_find(int argc, char **argv);
int cmd_mkdir(int argc, char **argv);
int cmd_ln(int argc, char **argv);
int cmd_mknod(int argc, char **argv);
int cmd_readlink(int argc, char **argv);
int cmd_path(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_mv(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_attr(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_stats(int argc, char **argv);

/* ---- main.c: the command table, help and usage errors ---- */

/* The store given by -s or $KEYTREE_STORE (NULL if neither): a
 * directory or a RADOS location, as kt_open() takes it. */
const char *cli_store_dir(void);

/* Set the fields of @p o that -o NAME=VALUE gave (ceph_conf,
 * ceph_client); the library reads the environment for the others. */
void cli_store_options(kt_options *o);

/* Print the help of command @p name to stdout; returns CLI_OK. */
int cli_help(const char *name);

/* Report a usage error of command @p cmd ("keytree: cmd: ...", then a
 * hint to --help) on stderr; returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Handle a getopt_long result every command shares (option strings start
 * with ':' so that getopt itself prints nothing): 'h' prints the help
 * (returns CLI_OK), '?' and ':' are usage errors (CLI_USAGE).  Returns -1
 * for any other option, which the caller handles. */
int cli_common_opt(int c, const char *cmd, char **argv);

/* ---- util.c ---- */

/* Open the store for reading (@p write 0) or writing.  On failure prints
 * the error and returns CLI_FAIL; a missing store directory is named. */
int cli_open(kt_store **out, int write);

/* Report that the store in @p dir is in use, naming the holder when
 * kt_open()'s message does; returns CLI_FAIL. */
int cli_fail_busy(const char *dir);

/* kt_errmsg() in the user's terms: without the names of library calls
 * ("put '/a': ", "batch operation 2 (put): ", "id_path: "), keeping a
 * path that is not @p what (NULL: keep every path) as "/path: ".
 * kt_strerror(@p code) when there is no message.  The text is valid until
 * the next call. */
const char *cli_errmsg(const char *what, int code);

/* Print "keytree: WHAT: message" for library code @p code, the message
 * from cli_errmsg(); returns CLI_FAIL. */
int cli_fail(const char *what, int code);

/* Print "keytree: WHAT: strerror(errno)" (with @p doing before it when
 * not NULL); returns CLI_FAIL. */
int cli_fail_errno(const char *what, const char *doing);

/* Print "keytree: WHAT: message"; returns CLI_FAIL. */
int cli_fail_msg(const char *what, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Normalise a user path into the library's canonical form: a leading '/'
 * is added when missing, runs of '/' collapse, a trailing '/' goes.  "."
 * and ".." are left for the library to reject.  Returns malloc'd memory
 * (never NULL: aborts on out of memory). */
char *cli_path(const char *arg);

/* Join a directory path and a name into a new canonical path. */
char *cli_join(const char *dir, const char *name, size_t name_len);

/* Write @p len bytes of @p s to @p f with every byte that is not
 * printable UTF-8 escaped (\n, \t, \\, \xHH), so that no control byte
 * ever reaches a terminal and the output stays one name per line. */
void cli_put_name(FILE *f, const char *s, size_t len);

/* Read all of file descriptor @p fd into a malloc'd buffer (NUL after the
 * end, not counted).  0, or -1 with errno set. */
int cli_read_fd(char **out, size_t *len, int fd);

/* Write all of a buffer; 0, or -1 with errno set. */
int cli_write_all(int fd, const void *p, size_t len);

/* Parse a non-negative decimal count; 0 or -1. */
int cli_parse_size(size_t *out, const char *s);

/* 1 if @p p holds valid UTF-8 (no NUL), else 0. */
int cli_utf8_valid(const void *p, size_t len);

/* A JSON value for bytes: a string when they are valid UTF-8 without NUL,
 * otherwise {"base64": "..."}.  NULL on out of memory. */
json_t *cli_json_bytes(const void *p, size_t len);

/* The inverse of cli_json_bytes(): 0 with a malloc'd, NUL-terminated
 * copy, or -1 with @p err (80 bytes) describing what is wrong. */
int cli_json_to_bytes(char **out, size_t *len, const json_t *v, char *err);

/* "item", "dir", "item+dir", "link", "special" */
const char *cli_kind_name(unsigned int kind);
/* The inverse; 0 for an unknown name. */
unsigned int cli_kind_parse(const char *name);

/* A special file's type (KT_TYPE_*): "fifo", "socket", "char", "block". */
const char *cli_type_name(unsigned int type);
/* The inverse; 0 for an unknown name. */
unsigned int cli_type_parse(const char *name);

/* ls -l's kind letter and permission bits, "drwxr-xr-x": '-' item, 'd'
 * directory, 'D' item and directory, 'l' link, and as ls(1) 'p' FIFO,
 * 's' socket, 'c' character device, 'b' block device. */
void cli_mode_string(char out[11], const kt_statbuf *st);

/* A device number as ls shows it, "MAJOR, MINOR". */
void cli_dev_string(char *out, size_t outsz, uint64_t rdev);

/* Print one JSON object on a line of stdout (compact, keys in insertion
 * order) and release it. */
void cli_json_print(json_t *obj);

/* A stat buffer as JSON fields added to @p obj. */
void cli_json_stat(json_t *obj, const kt_statbuf *st);

/* Nanoseconds since the epoch as "2024-05-01T12:00:00.123456789Z". */
void cli_time_iso(char *out, size_t outsz, int64_t ns);

/* ---- progress.c ---- */

/* A progress line on stderr for long operations, drawn at most ten times a
 * second, only when both stdout and stderr are terminals. */
typedef struct cli_progress {
	const char *label;
	const char *unit;
	uint64_t total; /* 0: unknown */
	uint64_t done;
	double start;
	double last;
	int on;
	int drawn;
} cli_progress;

void cli_progress_start(cli_progress *p, const char *label, const char *unit,
			uint64_t total);
void cli_progress_update(cli_progress *p, uint64_t done);
/* Erase the line (before other output reaches the terminal). */
void cli_progress_clear(cli_progress *p);
void cli_progress_end(cli_progress *p);

#endif /* KT_CLI_H */
