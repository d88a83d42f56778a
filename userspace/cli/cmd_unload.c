// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate unload: remove everything a daemon left pinned (the task storage
 * that keeps depths across restarts, and whatever else stayed), so the
 * kernel frees it. Refuses while a daemon runs on that pin path.
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "daemon/instance.h"
#include "trace/tracer.h"
#include "util/caps.h"
#include "util/log.h"
#include "util/paths.h"

struct unload_args {
	struct cli_common common;
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct unload_args *a = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		CLI_COMMON_INIT(state, &a->common);
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int do_unload(int argc, char **argv)
{
	static const char doc[] =
		"Remove everything pinned under --pin-path: the task storage that carries exec\n"
		"depths across daemon restarts, and anything a killed daemon left. Refuses\n"
		"while a daemon runs there (stop it first).";
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 }, {} };
	struct argp argp = { NULL, parse_opt, NULL, doc, children, NULL, NULL };
	struct unload_args a = {};
	struct eg_paths p;
	pid_t pid = 0;
	int rc;

	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return EXIT_USAGE;
	if (eg_paths_resolve(a.common.pin_path, &p)) {
		p_err("--pin-path must be an absolute path");
		return EXIT_USAGE;
	}
	if (!eg_have_bpf_caps()) {
		p_err(EG_NEEDS_ROOT);
		return 1;
	}
	rc = instance_running(&p, &pid);
	if (rc == 1) {
		p_err("a daemon (pid %d) runs on %s: stop it first", (int)pid, p.pin);
		return 1;
	}
	if (access(p.pin, F_OK)) {
		if (a.common.json)
			printf("{\"pin_path\":\"%s\",\"removed\":false}\n", p.pin);
		else
			printf("nothing pinned at %s\n", p.pin);
		return 0;
	}
	rc = tracer_unpin_dir(p.pin);
	if (rc) {
		p_err("cannot remove %s: %s", p.pin, strerror(-rc));
		return 1;
	}
	if (a.common.json)
		printf("{\"pin_path\":\"%s\",\"removed\":true}\n", p.pin);
	else
		printf("removed everything pinned at %s\n", p.pin);
	return 0;
}
