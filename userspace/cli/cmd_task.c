// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execgate task: show or set a process's exec depth in the pinned task storage. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "execgate.h"
#include "trace/tasks.h"
#include "util/log.h"
#include "cli/common.h"
#include "daemon/instance.h"
#include "util/caps.h"
#include "util/paths.h"

struct task_opts {
	struct cli_common common;
	pid_t pid;
	bool set;
	int depth;
};

static const struct argp_option options[] = {
	{ "set-depth", 'd', "N", 0, "Set the depth of PID's current image (its next exec gets N+1)", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct task_opts *o = state->input;
	char *end;
	long v;

	switch (key) {
	case ARGP_KEY_INIT:
		CLI_COMMON_INIT(state, &o->common);
		break;
	case 'd':
		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || *end || v < -1 || v > 1000000)
			argp_error(state, "--set-depth takes a number from -1 to 1000000");
		o->set = true;
		o->depth = v;
		break;
	case ARGP_KEY_ARG:
		if (o->pid)
			argp_error(state, "one PID only");
		v = strtol(arg, &end, 10);
		if (*end || v <= 0 || v > INT_MAX)
			argp_error(state, "'%s' is not a process id", arg);
		o->pid = v;
		break;
	case ARGP_KEY_END:
		if (!o->pid)
			argp_error(state, "which PID?");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int do_task(int argc, char **argv)
{
	static const char doc[] =
		"Show PID's exec depth and exec id as the tracer keeps them, or set its depth.\n"
		"Needs a running daemon (the state lives in its pinned task storage).";
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 }, {} };
	struct argp argp = { options, parse_opt, "PID", doc, children, NULL, NULL };
	struct task_opts o = {};
	struct eg_paths p;
	struct eg_task t = {};
	int fd, err;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	if (eg_paths_resolve(o.common.pin_path, &p)) {
		p_err("--pin-path must be an absolute path");
		return EXIT_USAGE;
	}
	if (!eg_have_bpf_caps()) {
		p_err(EG_NEEDS_ROOT);
		return 1;
	}
	/* a depth written with no daemon to keep the tree would only mislead */
	if (o.set && instance_running(&p, NULL) != 1) {
		p_err("no daemon is running on %s: start 'execgate daemon' first", p.pin);
		return EXIT_NO_DAEMON;
	}
	fd = task_open_map(p.pin);
	if (fd < 0) {
		p_err("cannot open %s/tasks: %s (is the daemon running?)", p.pin, strerror(-fd));
		return 1;
	}
	if (o.set) {
		err = task_set_depth(fd, o.pid, o.depth);
		if (err) {
			p_err("cannot set the depth of pid %d: %s", (int)o.pid, strerror(-err));
			close(fd);
			return 1;
		}
	}
	err = task_get(fd, o.pid, &t);
	close(fd);
	if (err == -ENOENT) {
		/* no storage yet: never forked from a traced task, never exec'd since start */
		t = (struct eg_task){};
	} else if (err) {
		p_err("cannot read pid %d: %s", (int)o.pid, strerror(-err));
		return 1;
	}
	if (o.common.json) {
		printf("{\"pid\":%d,\"known\":%s,\"depth_known\":%s,\"depth\":", (int)o.pid,
		       (t.flags & EG_TASK_KNOWN) ? "true" : "false",
		       (t.flags & EG_TASK_DEPTH_KNOWN) ? "true" : "false");
		if (t.flags & EG_TASK_KNOWN)
			printf("%d,\"exec_id\":\"%u:%llu\"", t.depth, t.exec_tgid, (unsigned long long)t.exec_ktime);
		else
			printf("null,\"exec_id\":null");
		printf(",\"session\":%u}\n", t.session);
		return 0;
	}
	if (t.flags & EG_TASK_KNOWN)
		printf("pid %d: depth %d%s, exec id %u:%llu\n", (int)o.pid, t.depth,
		       (t.flags & EG_TASK_DEPTH_KNOWN) ? "" : " (counted from the first exec seen: its tree is older than the tracer)",
		       t.exec_tgid, (unsigned long long)t.exec_ktime);
	else
		printf("pid %d: no exec seen since the daemon started (its next exec is depth 0)\n",
		       (int)o.pid);
	return 0;
}
