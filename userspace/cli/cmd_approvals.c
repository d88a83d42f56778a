// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate approvals | approve ID | deny ID: the person's side of an exec
 * that waits for an answer. Root or --ctl-group members only, and never
 * from inside a session (the daemon checks what the kernel says).
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "ctl/client.h"
#include "util/clock.h"
#include "util/jsonw.h"
#include "util/json.h"
#include "util/log.h"
#include "util/termsafe.h"

struct appr_args {
	struct cli_common common;
	bool watch;
	const char *id;
	const char *reason;
	bool answer;
};

enum { OPT_WATCH = 'w', OPT_REASON = 'r' };

static const struct argp_option list_options[] = {
	{ "watch", OPT_WATCH, NULL, 0, "Keep listening: print each approval event as it happens", 0 },
	{},
};

static const struct argp_option answer_options[] = {
	{ "reason", OPT_REASON, "TEXT", 0, "Why (recorded in the approval event)", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct appr_args *a = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		CLI_COMMON_INIT(state, &a->common);
		break;
	case OPT_WATCH:
		a->watch = true;
		break;
	case OPT_REASON:
		a->reason = arg;
		break;
	case ARGP_KEY_ARG:
		if (a->id || (!a->answer && a->watch))
			argp_error(state, "unexpected argument '%s'", arg);
		a->id = arg;
		break;
	case ARGP_KEY_END:
		if (a->answer && !a->id)
			argp_error(state, "which approval? (its id, from 'execgate approvals')");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* e's string field name for a terminal (the agent's bytes, from its exec), "" when there is none */
static const char *field(const json_t *e, const char *name, char *buf, size_t len)
{
	return eg_term_safe(json_string_value(json_object_get(e, name)) ?: "", buf, len);
}

/* The session's id after its "s-" (the row puts it back), for a terminal */
static const char *session_of(const json_t *e, char *buf, size_t len)
{
	const char *s = json_string_value(json_object_get(e, "session")) ?: "";

	return eg_term_safe(strlen(s) >= 2 ? s + 2 : s, buf, len);
}

static void print_row(json_t *e)
{
	json_t *argv = json_object_get(e, "argv"), *v;
	char id[64], session[64], rule[128];
	struct sbuf cmd = {};
	size_t i;

	/* the command line as the agent's exec gave it: its bytes must not redraw what the approver sees */
	json_array_foreach(argv, i, v) {
		if (i)
			sbuf_putc(&cmd, ' ');
		eg_put_arg(&cmd, json_string_value(v) ?: "");
	}
	field(e, "rule", rule, sizeof(rule));
	printf("%-20s s-%-9s %-7" JSON_INTEGER_FORMAT " %-5" JSON_INTEGER_FORMAT " %4" JSON_INTEGER_FORMAT "s  %-20s %s",
	       field(e, "approval_id", id, sizeof(id)),
	       session_of(e, session, sizeof(session)),
	       json_integer_value(json_object_get(e, "pid")),
	       json_integer_value(json_object_get(e, "depth")),
	       json_integer_value(json_object_get(e, "seconds_left")),
	       rule[0] ? rule : "default", sbuf_cstr(&cmd));
	if (json_is_true(json_object_get(e, "argv_shortened")))
		printf("  [shortened: %" JSON_INTEGER_FORMAT " arguments, %" JSON_INTEGER_FORMAT
		       " bytes; 'execgate approvals -j %s' shows all]", json_integer_value(json_object_get(e, "argc")),
		       json_integer_value(json_object_get(e, "argv_bytes")), id);
	putchar('\n');
	sbuf_free(&cmd);
}

#define RECONNECT_MS	10000	/* a handover takes well under a second */

/*
 * Asks fd for the list (and the events after it, with watch) and prints
 * the list. 0, 1 with the daemon's refusal said, or -errno of the exchange.
 */
static int request(const struct appr_args *a, int fd, struct sbuf *line, bool header)
{
	json_t *reply, *list, *e;
	struct sbuf req = {};
	struct jsonw w;
	size_t i;
	int rc;

	jsonw_init(&w, &req);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "op", "approvals");
	if (a->watch)
		jsonw_bool_field(&w, "watch", true);
	if (a->id)
		jsonw_string_field(&w, "id", a->id);
	jsonw_end_object(&w);
	rc = req.oom ? -ENOMEM : ctl_send_request(fd, req.data, req.len, NULL, 0);
	sbuf_free(&req);
	if (!rc)
		rc = ctl_read_line(fd, line, 30000, 64u << 20);
	if (rc)
		return rc;
	/* an argument that is not UTF-8 (\udcXX) reads as U+FFFD: the listing is shown, not refused */
	reply = json_load_record(line->data, line->len);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		p_err("%s", json_string_value(json_object_get(reply, "error")) ?: "refused");
		json_decref(reply);
		return 1;
	}
	list = json_object_get(reply, "approvals");
	if (a->common.json) {
		/* one line per approval, then one per event while watching */
		json_array_foreach(list, i, e) {
			char *s = json_dumps(e, JSON_COMPACT);

			printf("%s\n", s);
			free(s);
		}
	} else {
		if (header)
			printf("%-20s %-11s %-7s %-5s %5s  %-20s %s\n", "ID", "SESSION", "PID", "DEPTH", "LEFT",
			       "RULE", "COMMAND");
		json_array_foreach(list, i, e)
			print_row(e);
	}
	fflush(stdout);
	json_decref(reply);
	return 0;
}

/*
 * The daemon hung up on a watcher: a handover (SIGUSR2, a package upgrade)
 * does, and the new daemon answers on the same socket. The approvals
 * waiting then are listed again. Returns the new connection, or -1 (said).
 */
static int rewatch(const struct appr_args *a, struct sbuf *line)
{
	uint64_t deadline = eg_mono_ms() + RECONNECT_MS;
	int fd, rc;

	p_info("the daemon closed the connection; watching again");
	for (;;) {
		fd = ctl_connect(a->common.pin_path);
		rc = fd < 0 ? fd : request(a, fd, line, false);
		if (!rc)
			return fd;
		if (fd >= 0)
			close(fd);
		if (rc > 0)
			return -1;
		if (eg_mono_ms() >= deadline)
			break;
		usleep(100 * 1000);
	}
	p_err("the daemon went away and did not come back within %d s: %s", RECONNECT_MS / 1000,
	      fd < 0 ? ctl_connect_hint(rc) : strerror(-rc));
	return -1;
}

static int do_list(int argc, char **argv)
{
	static const char doc[] =
		"List the execs that wait for an answer, with the seconds left before the\n"
		"policy's approval_timeout decides; a long command line is shortened (its\n"
		"size is said): with an ID, that one is shown whole (-j for JSON). --watch\n"
		"keeps listening and prints each\n"
		"approval event (requested, approved, denied, timeout, cancelled) as a line;\n"
		"it goes on with the new daemon after a handover (SIGUSR2), and exits 1 when\n"
		"the daemon is gone.";
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 }, {} };
	struct argp argp = { list_options, parse_opt, "[ID]", doc, children, NULL, NULL };
	struct appr_args a = {};
	struct sbuf line = {};
	json_t *e;
	int fd, rc;

	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return EXIT_USAGE;
	fd = ctl_connect(a.common.pin_path);
	if (fd < 0) {
		p_err("%s", ctl_connect_hint(fd));
		return 1;
	}
	rc = request(&a, fd, &line, true);
	if (rc < 0)
		p_err("no reply from the daemon: %s", strerror(-rc));
	while (!rc && a.watch) {
		rc = ctl_read_line(fd, &line, -1, 64u << 20);
		if (rc == -EPIPE || rc == -ECONNRESET) {
			close(fd);
			fd = rewatch(&a, &line);
			rc = fd < 0;
			continue;
		}
		if (rc) {
			p_err("reading from the daemon: %s", strerror(-rc));
			break;
		}
		if (a.common.json) {
			printf("%.*s\n", (int)line.len, line.data);
		} else {
			char id[64], ev[32], session[64], file[4096 * 4];

			e = json_load_record(line.data, line.len);
			printf("%s %s s-%s pid %" JSON_INTEGER_FORMAT ": %s\n", field(e, "approval_id", id, sizeof(id)),
			       field(e, "event", ev, sizeof(ev)), session_of(e, session, sizeof(session)),
			       json_integer_value(json_object_get(e, "pid")), field(e, "filename", file, sizeof(file)));
			json_decref(e);
		}
		fflush(stdout);
	}
	sbuf_free(&line);
	if (fd >= 0)
		close(fd);
	return rc ? 1 : 0;
}

static int do_answer(int argc, char **argv, bool approve)
{
	static const char approve_doc[] =
		"Let a waiting exec run. Root or --ctl-group members only, and not from inside a\n"
		"session.";
	static const char deny_doc[] =
		"Refuse a waiting exec: it fails with EACCES. Root or --ctl-group members only,\n"
		"and not from inside a session.";
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 }, {} };
	struct argp argp = { answer_options, parse_opt, "ID", approve ? approve_doc : deny_doc, children,
			     NULL, NULL };
	struct appr_args a = { .answer = true };
	struct sbuf req = {};
	struct jsonw w;
	json_t *reply = NULL;
	char err[1024];
	int rc;

	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return EXIT_USAGE;
	jsonw_init(&w, &req);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "op", approve ? "approve" : "deny");
	jsonw_string_field(&w, "id", a.id);
	if (a.reason)
		jsonw_string_field(&w, "reason", a.reason);
	jsonw_end_object(&w);
	rc = ctl_call(a.common.pin_path, sbuf_cstr(&req), &reply, err, sizeof(err));
	sbuf_free(&req);
	json_decref(reply);
	if (rc) {
		p_err("%s", err);
		return 1;
	}
	if (a.common.json)
		printf("{\"approval_id\":\"%s\",\"answer\":\"%s\"}\n", a.id, approve ? "approved" : "denied");
	else
		printf("%s %s\n", a.id, approve ? "approved" : "denied");
	return 0;
}

int do_approvals(int argc, char **argv)
{
	return do_list(argc, argv);
}

int do_approve(int argc, char **argv)
{
	return do_answer(argc, argv, true);
}

int do_deny(int argc, char **argv)
{
	return do_answer(argc, argv, false);
}
