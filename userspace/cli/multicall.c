// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * `policy check`: a basename rule names a name a multi-call binary on this
 * host answers to (busybox, toybox run one file under many names). Such a
 * binary is the file that runs for `busybox cat` or a link named cat, so a
 * rule on the name `cat` does not hold against it: warn, and say the rule
 * that does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli/multicall.h"

static const struct {
	const char *path;
	const char *list_arg;		/* what makes it print its applets, one a line; NULL: none */
} candidates[] = {
	{ "/usr/bin/busybox", "--list" }, { "/bin/busybox", "--list" }, { "/usr/sbin/busybox", "--list" },
	{ "/usr/bin/toybox", NULL }, { "/bin/toybox", NULL },
};

#define LIST_MAX	(256 * 1024)
#define LIST_MS		2000

/* Runs path [arg] with no input and a bounded time; its stdout in buf (NUL terminated). */
static int run_list(const char *path, const char *arg, char *buf, size_t len)
{
	int p[2], st;
	size_t n = 0;
	pid_t pid;
	struct timespec t0, t;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (!pid) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		dup2(null, 0);
		dup2(p[1], 1);
		dup2(null, 2);
		execl(path, path, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		long left;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = LIST_MS - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&pf, 1, left) <= 0)
			break;
		r = read(p[0], buf + n, len - 1 - n);
		if (r <= 0)
			break;
		n += r;
		if (n >= len - 1)
			break;
	}
	buf[n] = '\0';
	close(p[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return 0;
}

static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *s;

	for (s = list; (s = strstr(s, name)); s += n) {
		bool start = s == list || s[-1] == '\n' || s[-1] == ' ' || s[-1] == '\t';
		bool end = !s[n] || s[n] == '\n' || s[n] == ' ' || s[n] == '\t';

		if (start && end)
			return true;
	}
	return false;
}

/* Some rule names the binary itself (by path or name): the policy took it into account. */
static bool named(const struct eg_policy *p, const char *path)
{
	const char *base = strrchr(path, '/') + 1;
	char real[4096];
	size_t i, k;

	if (!realpath(path, real))
		real[0] = '\0';
	for (i = 0; i < policy_rule_count(p); i++) {
		struct eg_rule_info ri;

		if (policy_rule_info(p, i, &ri))
			break;
		for (k = 0; k < ri.n_basenames; k++)
			if (!strcmp(ri.basenames[k], base))
				return true;
		for (k = 0; k < ri.n_paths; k++)
			if (!strcmp(ri.paths[k], path) || !strcmp(ri.paths[k], real))
				return true;
	}
	return false;
}

void multicall_lint(const struct eg_policy *p, const char *file, struct eg_diags *d)
{
	char *list;

	/* EXECGATE_NO_MULTICALL_LINT: what a policy's own lint says, whatever this host has (tests) */
	if (getenv("EXECGATE_NO_MULTICALL_LINT"))
		return;
	list = malloc(LIST_MAX);
	dev_t seen_dev[8];
	ino_t seen_ino[8];
	size_t nseen = 0, c, i, k;

	if (!list)
		return;
	for (c = 0; c < sizeof(candidates) / sizeof(candidates[0]); c++) {
		struct stat st;
		bool dup = false;

		if (stat(candidates[c].path, &st) || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
			continue;
		for (k = 0; k < nseen; k++)
			dup |= seen_dev[k] == st.st_dev && seen_ino[k] == st.st_ino;
		if (dup || nseen == 8 || named(p, candidates[c].path))
			continue;
		seen_dev[nseen] = st.st_dev;
		seen_ino[nseen++] = st.st_ino;
		if (run_list(candidates[c].path, candidates[c].list_arg, list, LIST_MAX) || !list[0])
			continue;
		for (i = 0; i < policy_rule_count(p); i++) {
			struct eg_rule_info ri;
			char msg[512];

			if (policy_rule_info(p, i, &ri))
				break;
			for (k = 0; k < ri.n_basenames; k++) {
				if (!listed(list, ri.basenames[k]))
					continue;
				snprintf(msg, sizeof(msg),
					 "rule '%s' names '%s', which the multi-call binary %s also runs as "
					 "('%s %s', or a link named %s): a name does not hold against it; deny "
					 "that file (paths: [%s]) or match its argv",
					 ri.name, ri.basenames[k], candidates[c].path, strrchr(candidates[c].path, '/') + 1,
					 ri.basenames[k], ri.basenames[k], candidates[c].path);
				eg_diags_add_warning(d, file, ri.line, ri.column, msg);
			}
		}
	}
	free(list);
}
