/*
 * progress.c - the progress line of long operations (dump, load, import,
 * export): "label: done/total unit, rate/s, M:SS left", redrawn in place on
 * stderr at most ten times a second.  It is shown only when both stdout and
 * stderr are terminals, so scripts, pipes and logs never see it.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_progress_start(cli_progress *p, const char *label, const char *unit,
			uint64_t total)
{
	p->label = label;
	p->unit = unit;
	p->total = total;
	p->done = 0;
	p->start = now_s();
	p->last = 0;
	p->drawn = 0;
	p->on = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
}

static void draw(cli_progress *p, double t)
{
	double el = t - p->start;
	double rate = el > 0 ? (double)p->done / el : 0;

	fprintf(stderr, "\r\033[K%s: %llu", p->label,
		(unsigned long long)p->done);
	if (p->total)
		fprintf(stderr, "/%llu", (unsigned long long)p->total);
	fprintf(stderr, " %s, %.0f/s", p->unit, rate);
	if (p->total && rate > 0 && p->done < p->total) {
		unsigned long left =
			(unsigned long)((double)(p->total - p->done) / rate);
		fprintf(stderr, ", %lu:%02lu left", left / 60, left % 60);
	} else {
		fprintf(stderr, ", %lu:%02lu elapsed", (unsigned long)el / 60,
			(unsigned long)el % 60);
	}
	fflush(stderr);
	p->drawn = 1;
	p->last = t;
}

void cli_progress_update(cli_progress *p, uint64_t done)
{
	double t;

	p->done = done;
	if (!p->on)
		return;
	t = now_s();
	if (t - p->last >= 0.1)
		draw(p, t);
}

void cli_progress_clear(cli_progress *p)
{
	if (p->on && p->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->drawn = 0;
	}
}

void cli_progress_end(cli_progress *p)
{
	if (!p->on)
		return;
	/* A final line, so the user sees the count and the time taken. */
	if (p->done > 0 || p->drawn) {
		draw(p, now_s());
		fputc('\n', stderr);
	}
	p->on = 0;
	p->drawn = 0;
}
