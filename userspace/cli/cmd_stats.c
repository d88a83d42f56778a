// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate stats and execgate status. Both ask the daemon over the control
 * socket; when no daemon answers they read what stays pinned (the kernel's
 * counters, the task storage) and say that the daemon is not running.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "ctl/client.h"
#include "execgate.h"
#include "trace/tracer.h"
#include "util/caps.h"
#include "enforce/inforce.h"
#include "util/jsonw.h"
#include "util/log.h"
#include "util/paths.h"

/*
 * The lines of the procs view (one per process, after its header); -1:
 * none pinned. Read as an iterator made from the pinned link, which an
 * older version's map pinned there is not.
 */
static long count_procs(const char *pin)
{
	char path[PATH_MAX + 16], buf[65536];
	long n = 0;
	ssize_t r;
	int link, fd;

	snprintf(path, sizeof(path), "%s/" EG_PROCS_PIN, pin);
	link = bpf_obj_get(path);
	if (link < 0)
		return -1;
	fd = bpf_iter_create(link);
	close(link);
	if (fd < 0)
		return -1;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return r < 0 ? -1 : (n ? n - 1 : 0);
}

/* Prints "name  value" rows, names padded to one column. */
static void print_row(const char *name, const char *value)
{
	printf("%-24s %s\n", name, value ? value : "-");
}

static void print_counter(const char *name, json_t *counters, const char *key)
{
	json_t *v = json_object_get(counters, key);
	char buf[32];

	if (!json_is_integer(v))
		return;
	snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	print_row(name, buf);
}

static void print_counters(json_t *c)
{
	static const struct { const char *label, *key; } rows[] = {
		{ "exec records", "exec" },
		{ "exec_failed records", "exec_failed" },
		{ "written exec", "written_exec" },
		{ "written exec_failed", "written_exec_failed" },
		{ "written exit", "written_exit" },
		{ "filtered --min-severity", "filtered_severity" },
		{ "syslog sent", "syslog_sent" },
		{ "syslog dropped", "syslog_dropped" },
		{ "syslog argv cut", "syslog_cut" },
		{ "syslog filtered", "syslog_filtered" },
		{ "journal sent", "journal_sent" },
		{ "journal dropped", "journal_dropped" },
		{ "journal filtered", "journal_filtered" },
		{ "followers", "followers" },
		{ "followers dropped", "followers_dropped" },
		{ "lost (ring buffer)", "lost" },
		{ "lost exec", "lost_exec" },
		{ "lost exec_failed", "lost_exec_failed" },
		{ "output dropped", "output_dropped" },
		{ "output write errors", "output_write_errors" },
		{ "output rotations", "output_rotations" },
		{ "output rotation failures", "output_rotation_failures" },
		{ "argv truncated", "argv_truncated" },
		{ "read faults", "read_faults" },
		{ "storage failures", "storage_failed" },
		{ "recursion misses (BPF)", "recursion_misses" },
		{ "lost: no scratch (BPF)", "scratch_missing" },
		{ "lost: too big (BPF)", "record_too_big" },
		{ "lost: not stashed (BPF)", "stash_lost" },
		{ "malformed records", "malformed" },
		{ "filtered", "filtered" },
		{ "filtered --uid", "filtered_uid" },
		{ "filtered --exclude-comm", "filtered_comm" },
		{ "filtered --exclude-path", "filtered_path" },
		{ "exec_failed collapsed", "exec_failed_collapsed" },
		{ "exec_failed held now", "exec_failed_held" },
		{ "policy reloads", "policy_reloads" },
		{ "policy reload failures", "policy_reload_failures" },
	};
	json_t *dec = json_object_get(c, "decisions"), *v;
	const char *k;
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		print_counter(rows[i].label, c, rows[i].key);
	json_object_foreach(dec, k, v) {
		char label[64];

		snprintf(label, sizeof(label), "decisions %s", k);
		print_counter(label, dec, k);
	}
}

/* The kernel rules and links in force, from an inforce_json() object. */
static void print_kernel(json_t *k)
{
	json_t *links = json_object_get(k, "links"), *v;
	char buf[1024];
	size_t i, off = 0, pending = 0;

	if (json_is_true(json_object_get(k, "rules_loaded"))) {
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT " (policy sha256 %s)%s",
			 json_integer_value(json_object_get(k, "rules")),
			 json_string_value(json_object_get(k, "sha256")),
			 json_is_true(json_object_get(k, "enforcing")) ? "" : ", judged only");
		print_row("kernel rules", buf);
	} else {
		print_row("kernel rules", "none");
	}
	buf[0] = '\0';
	json_array_foreach(links, i, v) {
		if (off < sizeof(buf))
			off += snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? ", " : "",
					json_string_value(json_object_get(v, "pin")) ?: "?");
		pending += json_is_true(json_object_get(v, "pending"));
	}
	print_row("pinned links", off ? buf : "none");
	if (pending) {
		snprintf(buf, sizeof(buf), "%zu new_ pins: a daemon's start between its two pin steps, or one whose "
			 "renames stopped; the next start takes them over", pending);
		print_row("pending links", buf);
	}
}

/* What a session's Landlock domain holds here (docs/sessions.md, "The boundary"). */
static void print_boundary(json_t *b)
{
	json_t *se = json_object_get(b, "session"), *den = json_object_get(b, "denials"), *v;
	char buf[1024];
	size_t i, off = 0;

	if (!json_is_object(b))
		return;
	snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(b, "landlock_abi")));
	print_row("landlock abi", buf);
	if (json_is_object(se)) {
		buf[0] = '\0';
		json_array_foreach(json_object_get(se, "in_force"), i, v)
			off += snprintf(buf + off, off < sizeof(buf) ? sizeof(buf) - off : 0, "%s%s", i ? ", " : "",
					json_string_value(v));
		print_row("session boundary", off ? buf : "none");
		if (json_string_value(json_object_get(se, "missing")))
			print_row("  without", json_string_value(json_object_get(se, "missing")));
	} else {
		print_row("session boundary", json_string_value(json_object_get(b, "refused")));
	}
	if (json_is_true(json_object_get(den, "counted")))
		print_row("boundary refusals", "counted (audit)");
	else
		print_row("boundary refusals", json_string_value(json_object_get(den, "why")));
}

static void print_kernel_pinned(const char *pin)
{
	struct sbuf b = {};
	struct jsonw w;
	json_t *k;

	jsonw_init(&w, &b);
	inforce_json(pin, &w);
	k = json_loadb(b.data ? b.data : "", b.len, 0, NULL);
	if (k)
		print_kernel(k);
	json_decref(k);
	sbuf_free(&b);
}

/* No daemon: the kernel's counters are still pinned while tracing state is. */
static int pinned_counters(const struct cli_common *c, struct eg_paths *p, bool status, bool stuck)
{
	struct eg_counters k;
	struct sbuf b = {};
	struct jsonw w;
	char path[PATH_MAX + 16];
	int fd, err;
	long procs;
	bool have = false;

	snprintf(path, sizeof(path), "%s/counters", p->pin);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		err = tracer_read_counters(fd, &k);
		close(fd);
		have = !err;
	}
	procs = count_procs(p->pin);
	if (!have && !status) {
		if (stuck)
			p_err("the daemon on %s does not answer and no counters are pinned", p->pin);
		else
			p_err("no daemon is running on %s and it left no counters pinned (start one with 'execgate daemon')",
			      p->pin);
		return EXIT_NO_DAEMON;
	}
	if (c->json) {
		jsonw_init(&w, &b);
		jsonw_start_object(&w);
		jsonw_bool_field(&w, "daemon_running", stuck);
		jsonw_bool_field(&w, "daemon_answering", false);
		jsonw_string_field(&w, "pin_path", p->pin);
		jsonw_string_field(&w, "source", "pinned maps");
		jsonw_key(&w, "counters");
		if (have) {
			jsonw_start_object(&w);
			jsonw_uint_field(&w, "exec", k.exec);
			jsonw_uint_field(&w, "exec_failed", k.exec_failed);
			jsonw_uint_field(&w, "lost", k.lost_exec + k.lost_exec_failed + k.lost_exit);
			jsonw_uint_field(&w, "lost_exec", k.lost_exec);
			jsonw_uint_field(&w, "lost_exec_failed", k.lost_exec_failed);
			jsonw_uint_field(&w, "exits", k.exits);
			jsonw_uint_field(&w, "lost_exit", k.lost_exit);
			jsonw_uint_field(&w, "argv_truncated", k.argv_truncated);
			jsonw_uint_field(&w, "read_faults", k.read_faults);
			jsonw_uint_field(&w, "storage_failed", k.storage_failed);
			jsonw_end_object(&w);
		} else {
			jsonw_null(&w);
		}
		jsonw_key(&w, "procs");
		if (procs >= 0)
			jsonw_int(&w, procs);
		else
			jsonw_null(&w);
		if (status) {
			jsonw_key(&w, "kernel");
			inforce_json(p->pin, &w);
		}
		jsonw_end_object(&w);
		sbuf_putc(&b, '\n');
		err = cli_write(&b);
		sbuf_free(&b);
		return err;
	}
	printf("%-24s %s (read from the maps pinned in %s)\n", "daemon",
	       stuck ? "not answering" : "not running", p->pin);
	if (have) {
		printf("%-24s %llu\n", "exec records", (unsigned long long)k.exec);
		printf("%-24s %llu\n", "exec_failed records", (unsigned long long)k.exec_failed);
		printf("%-24s %llu\n", "lost (ring buffer)", (unsigned long long)(k.lost_exec + k.lost_exec_failed + k.lost_exit));
		printf("%-24s %llu\n", "argv truncated", (unsigned long long)k.argv_truncated);
		printf("%-24s %llu\n", "read faults", (unsigned long long)k.read_faults);
		printf("%-24s %llu\n", "storage failures", (unsigned long long)k.storage_failed);
	} else {
		printf("%-24s %s\n", "counters", "(none pinned)");
	}
	if (procs >= 0)
		printf("%-24s %ld\n", "processes tracked", procs);
	if (status)
		print_kernel_pinned(p->pin);
	return 0;
}

static int run(int argc, char **argv, bool status)
{
	static const char stats_doc[] =
		"Show the daemon's counters: records written, lost because the ring buffer\n"
		"was full, dropped by output errors, cut argv, unreadable memory, decisions.\n"
		"Asks the daemon of --pin-path; without one, reads the counters it left pinned.";
	static const char status_doc[] =
		"Show the daemon: pid, uptime, mode, active enforcement layers, policy, output\n"
		"and counters. Without a running daemon, says so and shows what is pinned.";
	struct cli_common common = {};
	struct eg_paths p;
	json_t *reply, *v;
	char *s;
	int rc;

	if (cli_parse_no_args(argc, argv, status ? status_doc : stats_doc, &common))
		return EXIT_USAGE;
	if (eg_paths_resolve(common.pin_path, &p)) {
		p_err("--pin-path must be an absolute path");
		return EXIT_USAGE;
	}
	/* the socket first: members of the daemon's --ctl-group are not root */
	{
		/* quietly: no daemon is an answer here, not an error */
		json_t *r = NULL;
		char err[512];
		int e = ctl_call_timeout(common.pin_path,
					 status ? "{\"op\":\"status\"}" : "{\"op\":\"stats\"}", 3000,
					 &r, err, sizeof(err));

		if (e == -ENOENT || e == -ECONNREFUSED || e == -ETIMEDOUT) {
			json_decref(r);
			if (eg_have_bpf_caps())
				rc = pinned_counters(&common, &p, status, e == -ETIMEDOUT);
			else
				p_err("%s on %s; reading its pinned maps %s",
				      e == -ETIMEDOUT ? "the daemon does not answer" : "no daemon is running",
				      p.pin, EG_NEEDS_ROOT);
			/* the LSB's status codes, whatever was pinned */
			return e == -ETIMEDOUT ? EXIT_NOT_ANSWERING : EXIT_NOT_RUNNING;
		}
		if (e) {
			json_decref(r);
			p_err("%s", err);
			return 1;
		}
		reply = r;
	}
	if (common.json) {
		json_object_del(reply, "ok");
		json_object_set_new(reply, "daemon_running", json_true());
		s = json_dumps(reply, JSON_COMPACT);
		if (s)
			printf("%s\n", s);
		free(s);
		json_decref(reply);
		return s ? 0 : 1;
	}
	rc = 0;
	{
		char buf[256];

		snprintf(buf, sizeof(buf), "running, pid %" JSON_INTEGER_FORMAT,
			 json_integer_value(json_object_get(reply, "pid")));
		print_row("daemon", buf);
		print_row("pin path", json_string_value(json_object_get(reply, "pin_path")));
	}
	if (status) {
		json_t *mode = json_object_get(reply, "mode"), *pol = json_object_get(reply, "policy");
		json_t *enf = json_object_get(reply, "enforcement"), *av = json_object_get(reply, "available");
		char buf[1024];
		size_t i, off;

		print_row("socket", json_string_value(json_object_get(reply, "socket")));
		snprintf(buf, sizeof(buf), "%.1f s",
			 json_integer_value(json_object_get(reply, "uptime_ms")) / 1000.0);
		print_row("uptime", buf);
		print_row("version", json_string_value(json_object_get(reply, "version")));
		print_row("tracer", json_string_value(json_object_get(mode, "tracer")));
		off = 0;
		buf[0] = '\0';
		json_array_foreach(enf, i, v)
			off += snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? ", " : "", json_string_value(v));
		print_row("enforcement", off ? buf : "none (audit only)");
		off = 0;
		buf[0] = '\0';
		json_array_foreach(av, i, v)
			if (off < sizeof(buf))
				off += snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? ", " : "",
						json_string_value(v));
		print_row("kernel features", buf);
		if (json_is_object(pol)) {
			snprintf(buf, sizeof(buf), "%s (%" JSON_INTEGER_FORMAT " rules, sha256 %s)",
				 json_string_value(json_object_get(pol, "path")),
				 json_integer_value(json_object_get(pol, "rules")),
				 json_string_value(json_object_get(pol, "sha256")));
			print_row("policy", buf);
		} else {
			print_row("policy", "none");
		}
		print_row("output", json_string_value(json_object_get(json_object_get(reply, "output"), "path")));
		print_kernel(json_object_get(reply, "kernel"));
		print_boundary(json_object_get(reply, "boundary"));
	}
	print_counters(json_object_get(reply, "counters"));
	json_decref(reply);
	return rc;
}

int do_stats(int argc, char **argv)
{
	return run(argc, argv, false);
}

int do_status(int argc, char **argv)
{
	return run(argc, argv, true);
}
