// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execgate stats: the running daemon's counters, read from the pinned maps. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "cli/commands.h"
#include "execgate.h"
#include "util/json.h"
#include "util/log.h"
#include "util/pidfile.h"
#include "trace/tracer.h"

struct stats_opts {
	const char *pin_path;
	bool json;
};

static const struct argp_option options[] = {
	{ "pin-path", 'p', "DIR", 0, "Where the daemon pinned its maps (default " EG_PIN_PATH_DEFAULT ")", 0 },
	{ "json", 'j', NULL, 0, "One JSON object instead of a table", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct stats_opts *o = state->input;

	switch (key) {
	case 'p': o->pin_path = arg; break;
	case 'j': o->json = true; eg_json_errors = true; break;
	case ARGP_KEY_ARG: argp_error(state, "unexpected argument '%s'", arg); break;
	default: return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static long count_procs(const char *pin_path)
{
	char path[PATH_MAX];
	__u32 key, next;
	long n = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/procs", pin_path);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -1;
	if (!bpf_map_get_next_key(fd, NULL, &key)) {
		n = 1;
		while (!bpf_map_get_next_key(fd, &key, &next) && n < 10000000) {
			key = next;
			n++;
		}
	}
	close(fd);
	return n;
}

int do_stats(int argc, char **argv)
{
	static const char doc[] =
		"Show the counters of the daemon pinned at --pin-path: records written to the\n"
		"ring buffer, records lost because it was full, cut argv, unreadable memory.\n"
		"Works while the daemon runs (the counters live in a pinned per-CPU map).";
	struct argp argp = { options, parse_opt, NULL, doc, NULL, NULL, NULL };
	struct stats_opts o = { .pin_path = EG_PIN_PATH_DEFAULT };
	struct eg_counters c;
	char path[PATH_MAX], pidfile[PATH_MAX];
	pid_t pid = 0;
	long procs;
	int fd, err;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return 2;
	snprintf(path, sizeof(path), "%s/counters", o.pin_path);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		err = errno;
		if (err == ENOENT)
			p_err("no daemon state at %s: is 'execgate daemon' running (with this --pin-path)?", path);
		else
			p_err("cannot open %s: %s", path, strerror(err));
		return 1;
	}
	err = tracer_read_counters(fd, &c);
	close(fd);
	if (err) {
		p_err("cannot read %s: %s", path, strerror(-err));
		return 1;
	}
	procs = count_procs(o.pin_path);
	if (pidfile_path(o.pin_path, pidfile, sizeof(pidfile)) || pidfile_read(pidfile, &pid))
		pid = 0;

	if (o.json) {
		struct sbuf b = {};

		sbuf_puts(&b, "{\"pin_path\":");
		json_str(&b, o.pin_path, strlen(o.pin_path));
		if (pid)
			sbuf_printf(&b, ",\"daemon_pid\":%d", (int)pid);
		else
			sbuf_puts(&b, ",\"daemon_pid\":null");
		sbuf_printf(&b, ",\"exec\":%llu,\"exec_failed\":%llu,\"lost\":%llu,\"lost_exec\":%llu,"
			    "\"lost_exec_failed\":%llu,\"argv_truncated\":%llu,\"read_faults\":%llu,"
			    "\"storage_failed\":%llu,\"procs\":%ld}\n",
			    c.exec, c.exec_failed, c.lost_exec + c.lost_exec_failed, c.lost_exec,
			    c.lost_exec_failed, c.argv_truncated, c.read_faults, c.storage_failed, procs);
		fwrite(b.data, 1, b.len, stdout);
		sbuf_free(&b);
		return 0;
	}
	printf("pin path           %s\n", o.pin_path);
	if (pid)
		printf("daemon pid         %d\n", (int)pid);
	else
		printf("daemon pid         (not running)\n");
	printf("exec records       %llu\n", c.exec);
	printf("exec_failed records %llu\n", c.exec_failed);
	printf("lost records       %llu (exec %llu, exec_failed %llu)\n",
	       c.lost_exec + c.lost_exec_failed, c.lost_exec, c.lost_exec_failed);
	printf("argv truncated     %llu\n", c.argv_truncated);
	printf("read faults        %llu\n", c.read_faults);
	printf("storage failures   %llu\n", c.storage_failed);
	printf("processes tracked  %ld\n", procs);
	return 0;
}
