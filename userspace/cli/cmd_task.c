// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execgate task: show or set a process's exec depth in the pinned task storage. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <jansson.h>
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

/* The name the pinned "ctxnames" keeps for context id (empty: none kept). */
static void context_name(const char *pin, __u32 id, char *buf, size_t len)
{
	struct eg_ctxname n = {};
	char path[PATH_MAX + 16];
	int fd;

	buf[0] = '\0';
	if (!id)
		return;
	snprintf(path, sizeof(path), "%s/ctxnames", pin);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return;
	if (!bpf_map_lookup_elem(fd, &id, &n))
		snprintf(buf, len, "%.*s", (int)sizeof(n.name) - 1, n.name);
	close(fd);
}

int do_task(int argc, char **argv)
{
	static const char doc[] =
		"Show PID's exec depth and exec id as the tracer keeps them (and its agent context, if any), "
		"or set its depth.\n"
		"Needs a running daemon (the state lives in its pinned task storage).";
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 }, {} };
	struct argp argp = { options, parse_opt, "PID", doc, children, NULL, NULL };
	struct task_opts o = {};
	struct eg_paths p;
	struct eg_task t = {};
	char name[EG_CONTEXT_NAME_MAX] = "";
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
	context_name(p.pin, t.context, name, sizeof(name));
	if (o.common.json) {
		json_t *j = json_object(), *c = json_null();
		char id[64];

		snprintf(id, sizeof(id), "%u:%llu", t.exec_tgid, (unsigned long long)t.exec_ktime);
		json_object_set_new(j, "pid", json_integer(o.pid));
		json_object_set_new(j, "known", json_boolean(t.flags & EG_TASK_KNOWN));
		json_object_set_new(j, "depth_known", json_boolean(t.flags & EG_TASK_DEPTH_KNOWN));
		json_object_set_new(j, "depth", (t.flags & EG_TASK_KNOWN) ? json_integer(t.depth) : json_null());
		json_object_set_new(j, "exec_id", (t.flags & EG_TASK_KNOWN) ? json_string(id) : json_null());
		json_object_set_new(j, "session", json_integer(t.session));
		if (t.context) {
			json_t *nm = name[0] ? json_string(name) : NULL;

			c = json_pack("{s:I, s:o, s:i, s:I}", "id", (json_int_t)t.context, "name", nm ?: json_null(),
				      "depth", (int)t.context_depth, "identity_tgid", (json_int_t)t.context_tgid);
		}
		json_object_set_new(j, "context", c);
		json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(j);
		return 0;
	}
	if (t.flags & EG_TASK_KNOWN)
		printf("pid %d: depth %d%s, exec id %u:%llu\n", (int)o.pid, t.depth,
		       (t.flags & EG_TASK_DEPTH_KNOWN) ? "" : " (counted from the first exec seen: its tree is older than the tracer)",
		       t.exec_tgid, (unsigned long long)t.exec_ktime);
	else
		printf("pid %d: no exec seen since the daemon started (its next exec is depth 0)\n",
		       (int)o.pid);
	if (t.context)
		printf("pid %d: in context %s (number %u), depth %d from its identity's exec by pid %u\n",
		       (int)o.pid, name[0] ? name : "(no name kept)", t.context, t.context_depth, t.context_tgid);
	return 0;
}
