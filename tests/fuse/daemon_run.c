/*
 * daemon_run.c - ktfs_daemon_run, how the FUSE tests run keytreefs in its
 * default mode (detaching) and still learn how the daemon ended.
 *
 *   ktfs_daemon_run KEYTREEFS ARGS...
 *
 * Runs KEYTREEFS ARGS (without -f) as a child.  If that command fails, its
 * status is ours.  If it succeeds, it has left a daemon behind, which the
 * kernel hands to us when its parent exits, because we are a child
 * subreaper (prctl PR_SET_CHILD_SUBREAPER): we wait for the daemon and
 * exit with its status (128 + N if signal N ended it).  SIGTERM, SIGINT and
 * SIGHUP sent to us are passed on to the daemon, so a test can signal the
 * mount through our pid.  One that comes while the command is still
 * starting waits until the daemon is ours: the mount shows before the
 * command has heard that the daemon is ready (on RADOS, watching the tree
 * takes a while), and the command itself, like any program that is not a
 * daemon yet, dies of the signal; the daemon would never get it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t pending; /* a signal to pass on, or 0 */

static void on_signal(int sig)
{
	pending = sig;
}

/* The pid of a child of ours other than @p except, or -1: after the
 * command exits, the daemon it left is our only child. */
static pid_t find_child(pid_t except)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = -1, me = getpid();

	if (d == NULL)
		return -1;
	while (found < 0 && (e = readdir(d)) != NULL) {
		char path[300], buf[512], *p;
		long pid = strtol(e->d_name, &p, 10);
		long ppid;
		FILE *f;

		if (*p != '\0' || pid <= 0 || pid == except)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		/* "PID (COMM) STATE PPID ...": COMM may hold spaces and ')'. */
		if (p == NULL || (p = strrchr(buf, ')')) == NULL)
			continue;
		if (sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == me)
			found = (pid_t)pid;
	}
	closedir(d);
	return found;
}

static int status_of(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 1;
}

/* Wait for @p pid, passing on signals we get meanwhile if @p pass (else
 * they stay pending); its status. */
static int wait_for(pid_t pid, int pass)
{
	int st;

	for (;;) {
		if (pass && pending) {
			kill(pid, pending);
			pending = 0;
		}
		if (waitpid(pid, &st, 0) == pid)
			return status_of(st);
		if (errno != EINTR) {
			perror("ktfs_daemon_run: waitpid");
			return 1;
		}
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pid_t cmd, daemon;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: ktfs_daemon_run KEYTREEFS ARGS...\n");
		return 2;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
		perror("ktfs_daemon_run: PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: waitpid sees EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	cmd = fork();
	if (cmd < 0) {
		perror("ktfs_daemon_run: fork");
		return 1;
	}
	if (cmd == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execv(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	if ((rc = wait_for(cmd, 0)) != 0)
		return rc;
	if ((daemon = find_child(cmd)) < 0) {
		fprintf(stderr, "ktfs_daemon_run: %s exited 0 but left no "
				"daemon\n",
			argv[1]);
		return 1;
	}
	return wait_for(daemon, 1);
}
