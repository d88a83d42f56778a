// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The record filters `execgate query` and `execgate policy generate` share (an argp child). */
#include <argp.h>
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include "cli/filters.h"
#include "events/format.h"
#include "util/severity.h"

enum {
	OPT_SINCE = 0x300, OPT_UNTIL, OPT_TYPE, OPT_USER, OPT_COMM, OPT_FILENAME, OPT_SESSION, OPT_CONTAINER,
	OPT_POD, OPT_CONTEXT, OPT_DECISION, OPT_ACTION, OPT_RULE, OPT_MIN_SEV,
};

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Filters (of one kind: alternatives; of different kinds: all must hold):", 1 },
	{ "since", OPT_SINCE, "TIME", 0, "Records from TIME on", 1 },
	{ "until", OPT_UNTIL, "TIME", 0, "Records before TIME", 1 },
	{ "type", OPT_TYPE, "TYPE", 0, "exec, exec_failed, exit, approval, session, process, lost, daemon (repeatable)", 1 },
	{ "user", OPT_USER, "NAME|UID", 0, "Records of this user (repeatable)", 1 },
	{ "comm", OPT_COMM, "GLOB", 0, "Records whose comm matches GLOB (repeatable)", 1 },
	{ "filename", OPT_FILENAME, "GLOB", 0, "Records whose program path matches GLOB ('*' crosses '/'; repeatable)", 1 },
	{ "session", OPT_SESSION, "ID", 0, "Records of this supervised session (s-...; repeatable)", 1 },
	{ "container", OPT_CONTAINER, "ID|NAME", 0, "Records of this container: its id (12 characters or more) or name (repeatable)", 1 },
	{ "pod", OPT_POD, "NAME", 0, "Records of this pod (repeatable)", 1 },
	{ "context", OPT_CONTEXT, "NAME", 0, "Records of execs in this agent context (docs/contexts.md; repeatable)", 1 },
	{ "decision", OPT_DECISION, "DECISION", 0, "allow, deny, approval, audit, error (repeatable)", 1 },
	{ "action", OPT_ACTION, "ACTION", 0, "allowed, blocked, killed, would-block, audited, ... (repeatable)", 1 },
	{ "rule", OPT_RULE, "NAME", 0, "Records the rule NAME decided (repeatable)", 1 },
	{ "min-severity", OPT_MIN_SEV, "LEVEL", 0, "Records whose rule's severity is LEVEL or above (info, low, medium, high, critical)", 1 },
	{},
};

static void add(struct argp_state *state, const char **v, size_t *n, const char *arg, const char *opt)
{
	if (*n == QUERY_MAX_LIST)
		argp_error(state, "at most %d %s options", QUERY_MAX_LIST, opt);
	v[(*n)++] = arg;
}

static error_t parse_filter(int key, char *arg, struct argp_state *state)
{
	struct cli_filters *a = state->input;
	struct query_filter *f = &a->f;
	struct passwd *pw;
	char *end;

	switch (key) {
	case OPT_SINCE:
	case OPT_UNTIL:
		if (query_parse_time(arg, clock_real_ns(), key == OPT_SINCE ? f->since : f->until))
			argp_error(state, "--%s: cannot read the time '%s' (2026-01-19T14:30:00Z, 2026-01-19 14:30, "
				   "1h, 2d, today, yesterday)", key == OPT_SINCE ? "since" : "until", arg);
		if (key == OPT_SINCE)
			a->since_arg = arg;
		break;
	case OPT_TYPE:
		add(state, f->types, &f->n_types, arg, "--type");
		break;
	case OPT_USER:
		if (f->n_uids == QUERY_MAX_LIST)
			argp_error(state, "at most %d --user options", QUERY_MAX_LIST);
		pw = getpwnam(arg);
		if (pw) {
			f->uids[f->n_uids++] = pw->pw_uid;
		} else {
			errno = 0;
			f->uids[f->n_uids++] = strtoll(arg, &end, 10);
			if (*end || errno || !*arg || arg[0] == '-')
				argp_error(state, "--user: no user named '%s' (a name or a uid)", arg);
		}
		break;
	case OPT_COMM:
		add(state, f->comm, &f->n_comm, arg, "--comm");
		break;
	case OPT_FILENAME:
		add(state, f->filename, &f->n_filename, arg, "--filename");
		break;
	case OPT_SESSION:
		add(state, f->sessions, &f->n_sessions, arg, "--session");
		break;
	case OPT_CONTAINER:
		add(state, f->containers, &f->n_containers, arg, "--container");
		break;
	case OPT_POD:
		add(state, f->pods, &f->n_pods, arg, "--pod");
		break;
	case OPT_CONTEXT:
		add(state, f->contexts, &f->n_contexts, arg, "--context");
		break;
	case OPT_DECISION:
		add(state, f->decisions, &f->n_decisions, arg, "--decision");
		break;
	case OPT_ACTION:
		add(state, f->actions, &f->n_actions, arg, "--action");
		break;
	case OPT_RULE:
		add(state, f->rules, &f->n_rules, arg, "--rule");
		break;
	case OPT_MIN_SEV:
		f->min_severity = eg_severity_parse(arg);
		if (!f->min_severity)
			argp_error(state, "--min-severity takes info, low, medium, high or critical");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}


const struct argp cli_filter_argp = { options, parse_filter, NULL, NULL, NULL, NULL, NULL };
