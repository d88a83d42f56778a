// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate policy test (the decision for one hypothetical exec) and reload
 * (the running daemon takes its policy again).
 */
#include <argp.h>
#include <errno.h>
#include <pwd.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/commands.h"
#include "util/json.h"
#include "util/log.h"
#include "cli/common.h"
#include "cli/multicall.h"
#include "cli/filters.h"
#include "query/generate.h"
#include "query/query.h"
#include "util/json.h"
#include "ctl/client.h"
#include "enforce/compile.h"
#include "policy/policy.h"
#include "session/boundary.h"
#include "session/resolve.h"
#include "util/jsonw.h"
#include "util/landlock.h"
#include "cli/cmd_policy.h"

/* ---- test ---- */

struct test_opts {
	const char *file;
	char **cmd;
	int ncmd;
	int depth;
	bool unknown_depth;
	long long uid;
	const char *cgroup;
	bool truncated;
	bool session;
	bool json;
	const char *context;		/* --context NAME: the task is in that context */
};

static const struct argp_option test_options[] = {
	{ "depth", 'd', "N", 0, "Exec depth: 0 = direct (default), 1 and more = nested", 0 },
	{ "unknown-depth", 'U', NULL, 0, "The task's tree started before the tracer (depth_known false)", 0 },
	{ "cgroup", 'c', "PATH", 0, "cgroup v2 path of the task, e.g. /system.slice/foo.service "
	  "(default: unknown, so rules with cgroups do not match)", 0 },
	{ "uid", 'u', "USER", 0, "Effective user of the task, a name or a uid (default: you)", 0 },
	{ "session", 's', NULL, 0, "Decide as a session supervisor would: on_truncated and on_error apply", 0 },
	{ "truncated", 't', NULL, 0, "Pretend argv was cut (implies --session: on_truncated applies)", 0 },
	{ "context", 'C', "NAME", 0, "The task is in the policy's context NAME (contexts:), --depth execs below "
	  "its identity's; without it the task is in none, and rules with contexts: [NAME] do not match", 0 },
	{ "json", 'j', NULL, 0, "One JSON object instead of lines", 0 },
	{},
};

static error_t test_parse(int key, char *arg, struct argp_state *state)
{
	struct test_opts *o = state->input;
	char *end;
	long long v;

	switch (key) {
	case 'd':
		errno = 0;
		v = strtoll(arg, &end, 10);
		if (errno || *end || end == arg || v < 0 || v > INT_MAX)
			argp_error(state, "--depth takes a number from 0 (direct) up");
		o->depth = (int)v;
		break;
	case 'u': {
		struct passwd *pw = getpwnam(arg);

		errno = 0;
		v = pw ? (long long)pw->pw_uid : strtoll(arg, &end, 10);
		if (!pw && (errno || *end || end == arg || v < 0 || v >= (long long)UINT32_MAX))
			argp_error(state, "--uid: no user named '%s' (a user name or a uid)", arg);
		o->uid = v;
		break;
	}
	case 'c':
		if (arg[0] != '/')
			argp_error(state, "--cgroup takes a cgroup v2 path starting with '/'");
		o->cgroup = arg;
		break;
	case 't':
		o->truncated = true;
		o->session = true;
		break;
	case 's':
		o->session = true;
		break;
	case 'U':
		o->unknown_depth = true;
		break;
	case 'j':
		o->json = true;
		eg_json_errors = true;
		break;
	case 'C':
		o->context = arg;
		break;
	case ARGP_KEY_ARG:
		if (!o->file) {
			o->file = arg;
			break;
		}
		return ARGP_ERR_UNKNOWN;
	case ARGP_KEY_ARGS:
		o->cmd = state->argv + state->next;
		o->ncmd = state->argc - state->next;
		break;
	case ARGP_KEY_END:
		if (!o->file || !o->ncmd)
			argp_error(state, "give a policy file and a command: execgate policy test FILE -- ARGV...");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* policy test's exit status: the decision (docs: execgate(8), EXIT STATUS) */
#define EXIT_POLICY_INVALID	5
static int decision_status(enum eg_decision d)
{
	switch (d) {
	case EG_DECISION_DENY: return 1;
	case EG_DECISION_REDIRECT: return 1;	/* the command as asked does not run */
	case EG_DECISION_APPROVAL: return 3;
	case EG_DECISION_ERROR: return 4;
	default: return 0;	/* allow, audit: it runs */
	}
}

int do_test(int argc, char **argv)
{
	static const char doc[] =
		"Evaluate the policy for a hypothetical exec and print the decision, the\n"
		"rule that decided (or 'default', 'internal_bypass', 'on_truncated') and\n"
		"its message. ARGV[0] is the filename as given; without a '/' it is\n"
		"looked up in $PATH as a shell would (kept as is when not found).\n"
		"Options go before ARGV: from ARGV[0] on, every word is the command's\n"
		"(a '--' before it is optional).\n\n"
		"Example:\n"
		"  execgate policy test policy/agent-sandbox.yaml --depth 1 -- curl -s x\n\n"
		"Exit status: the decision, so a script can branch on it: 0 allow or\n"
		"audit, 1 deny or redirect, 3 approval (a person must answer), 4 error (the policy\n"
		"could not decide: on_error applies), 5 the policy does not load, 2 usage.";
	struct argp argp = { test_options, test_parse, "FILE -- ARGV...", doc, NULL, NULL, NULL };
	struct test_opts o = { .uid = getuid() };
	char filename[PATH_MAX];
	struct eg_policy *p = NULL;
	struct eg_diags d = {};
	struct eg_verdict v, verdicts[EG_MAX_PROGRAMS];
	struct eg_exec_req req = {};
	struct eg_eval_budget budget = {};
	struct eg_exec_spec spec = {};
	struct eg_exec_plan plan = {};
	unsigned int k, nprog;
	int rc, i;

	/* In order: the first word after FILE starts ARGV, dashes and all (a "--" is optional). */
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &o))
		return EXIT_USAGE;
	rc = policy_load_file(o.file, &p, &d);
	if (rc) {
		if (o.json) {
			struct sbuf b = {};
			int first = 1;

			sbuf_putc(&b, '{');
			json_key(&b, "error", &first);
			policy_put_json_str(&b, "invalid policy");
			json_key(&b, "errors", &first);
			policy_put_diags_json(&b, &d, false);
			sbuf_puts(&b, "}\n");
			policy_write_out(&b);
			sbuf_free(&b);
		} else {
			policy_print_diags_plain(&d, false);
		}
		eg_diags_free(&d);
		return EXIT_POLICY_INVALID;
	}
	if (o.context && strcmp(o.context, "none") && !policy_context_id(p, o.context)) {
		fprintf(stderr, "execgate policy test: --context %s: %s defines no such context\n", o.context, o.file);
		policy_free(p);
		return EXIT_USAGE;
	}
	/* the program a shell would run, and every interpreter after it */
	path_lookup(o.cmd[0], getenv("PATH"), filename, sizeof(filename));
	spec.cwd_fd = AT_FDCWD;
	spec.root_fd = -1;
	spec.dir_fd = -1;
	spec.dir_fd_num = -1;
	spec.path = filename;
	spec.argv = (const char *const *)o.cmd;
	spec.argc = (unsigned int)o.ncmd;
	exec_plan(&spec, &plan);
	nprog = plan.n && !plan.err ? plan.n : 1;
	for (k = 0; k < nprog; k++) {
		const struct eg_program *pr = &plan.prog[k];
		struct eg_verdict pv;

		memset(&req, 0, sizeof(req));
		/* a file that does not resolve is judged by its name */
		req.filename = plan.n && !plan.err ? pr->path : filename;
		req.requested = plan.n ? pr->requested : filename;
		req.argv = plan.n && !plan.err ? (const char *const *)pr->argv : (const char *const *)o.cmd;
		req.argc = plan.n && !plan.err ? pr->argc : (unsigned int)o.ncmd;
		req.dev = plan.n && !plan.err ? pr->dev : 0;
		req.ino = plan.n && !plan.err ? pr->ino : 0;
		req.depth = o.depth;
		req.depth_known = !o.unknown_depth;
		req.cgroup = o.cgroup;
		req.euid = (uint32_t)o.uid;
		req.truncated = o.truncated;
		req.apply_on_truncated = o.session;
		req.context = o.context ? policy_context_id(p, o.context) : 0;
		req.context_depth = o.depth;
		req.budget = &budget;
		policy_eval(p, &req, &pv);
		verdicts[k] = pv;
		if (k == 0)
			v = pv;
		else
			policy_verdict_merge(&v, &pv);
	}

	if (o.json) {
		struct sbuf b = {};
		int first = 1;

		sbuf_putc(&b, '{');
		json_key(&b, "decision", &first);
		policy_put_json_str(&b, eg_decision_name(v.decision));
		json_key(&b, "rule", &first);
		policy_put_json_str(&b, v.rule ? v.rule : "default");
		json_key(&b, "rule_index", &first);
		sbuf_printf(&b, "%d", v.rule_index);
		json_key(&b, "message", &first);
		policy_put_json_str(&b, v.message);
		json_key(&b, "filename", &first);
		policy_put_json_str(&b, plan.n && !plan.err ? plan.prog[0].path : filename);
		json_key(&b, "path_requested", &first);
		policy_put_json_str(&b, filename);
		json_key(&b, "argv", &first);
		sbuf_putc(&b, '[');
		for (i = 0; i < o.ncmd; i++) {
			if (i)
				sbuf_putc(&b, ',');
			policy_put_json_str(&b, o.cmd[i]);
		}
		sbuf_putc(&b, ']');
		json_key(&b, "programs", &first);
		sbuf_putc(&b, '[');
		for (k = 0; k < nprog; k++) {
			int f2 = 1;
			unsigned int j;

			if (k)
				sbuf_putc(&b, ',');
			sbuf_putc(&b, '{');
			json_key(&b, "filename", &f2);
			policy_put_json_str(&b, plan.n && !plan.err ? plan.prog[k].path : filename);
			json_key(&b, "argv", &f2);
			sbuf_putc(&b, '[');
			for (j = 0; plan.n && !plan.err && j < plan.prog[k].argc; j++) {
				if (j)
					sbuf_putc(&b, ',');
				policy_put_json_str(&b, plan.prog[k].argv[j]);
			}
			sbuf_putc(&b, ']');
			json_key(&b, "decision", &f2);
			policy_put_json_str(&b, eg_decision_name(verdicts[k].decision));
			json_key(&b, "rule", &f2);
			policy_put_json_str(&b, verdicts[k].rule ? verdicts[k].rule : "default");
			sbuf_putc(&b, '}');
		}
		sbuf_putc(&b, ']');
		json_key(&b, "depth", &first);
		sbuf_printf(&b, "%d", o.depth);
		json_key(&b, "uid", &first);
		sbuf_printf(&b, "%lld", o.uid);
		json_key(&b, "cgroup", &first);
		policy_put_json_str(&b, o.cgroup);
		json_key(&b, "truncated", &first);
		sbuf_puts(&b, o.truncated ? "true" : "false");
		sbuf_puts(&b, "}\n");
		policy_write_out(&b);
		sbuf_free(&b);
	} else {
		printf("decision: %s\n", eg_decision_name(v.decision));
		printf("rule: %s\n", v.rule ? v.rule : "default");
		if (v.message)
			printf("message: %s\n", v.message);
		printf("filename: %s\n", plan.n && !plan.err ? plan.prog[0].path : filename);
		for (k = 1; k < nprog; k++)
			printf("interpreter: %s (%s, rule %s)\n", plan.prog[k].path,
			       eg_decision_name(verdicts[k].decision),
			       verdicts[k].rule ? verdicts[k].rule : "default");
	}
	exec_plan_free(&plan);
	policy_free(p);
	eg_diags_free(&d);
	return decision_status(v.decision);
}

/* ---- reload ---- */

int do_reload(int argc, char **argv)
{
	static const char doc[] =
		"Make the running daemon reload its policy file, over the control socket.\n"
		"Prints the new policy's sha256, or the errors and the sha256 of the policy\n"
		"that stays in force (exit status 1). Check a file first with\n"
		"'execgate policy check FILE'.";
	struct cli_common common = {};
	json_t *reply = NULL, *v;
	char err[1024];
	size_t i;
	int rc;

	if (cli_parse_no_args(argc, argv, doc, &common))
		return EXIT_USAGE;
	rc = ctl_call(common.pin_path, "{\"op\":\"policy_reload\"}", &reply, err, sizeof(err));
	if (rc && rc != -EREMOTEIO) {
		p_err("%s", err);
		return rc == -ENOENT || rc == -ECONNREFUSED ? EXIT_NO_DAEMON : 1;
	}
	if (rc == -EREMOTEIO && !json_object_get(reply, "kept_sha256")) {
		/* refused before any load (permission denied, no --policy): the daemon's one line */
		/* the reply carried no details (an old or refusing daemon) */
		p_err("%s", err);
		return 1;
	}
	if (common.json) {
		char *s = json_dumps(reply, JSON_COMPACT);

		printf("%s\n", s ? s : "{}");
		free(s);
	} else if (!rc) {
		printf("policy %s reloaded: %" JSON_INTEGER_FORMAT " rules, sha256 %s\n",
		       json_string_value(json_object_get(reply, "path")),
		       json_integer_value(json_object_get(reply, "rules")),
		       json_string_value(json_object_get(reply, "sha256")));
	}
	json_array_foreach(json_object_get(reply, "diagnostics"), i, v)
		if (!common.json)
			fprintf(stderr, "%s\n", json_string_value(v));
	if (rc) {
		if (!common.json)
			p_err("%s does not load; the policy with sha256 %s stays in force",
			      json_string_value(json_object_get(reply, "path")),
			      json_string_value(json_object_get(reply, "kept_sha256")));
		json_decref(reply);
		return 1;
	}
	json_decref(reply);
	return 0;
}
