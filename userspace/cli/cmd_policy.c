// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate policy check|test|reload: the policy engine from the command
 * line. Each verb parses its own options (argp); --json prints one JSON
 * object on stdout and nothing else there.
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


static void put_json_str(struct sbuf *b, const char *s)
{
	if (s)
		json_str(b, s, strlen(s));
	else
		sbuf_puts(b, "null");
}

static void write_out(struct sbuf *b)
{
	if (b->oom) {
		p_err("out of memory");
		return;
	}
	fwrite(b->data, 1, b->len, stdout);
	fflush(stdout);
}

static void print_diags_plain(const struct eg_diags *d, bool warnings)
{
	char line[1024];
	size_t i;

	for (i = 0; i < d->n; i++) {
		if (d->v[i].warning != warnings)
			continue;
		eg_diag_format(&d->v[i], line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
}

static void put_diags_json(struct sbuf *b, const struct eg_diags *d, bool warnings)
{
	int first = 1;
	size_t i;

	sbuf_putc(b, '[');
	for (i = 0; i < d->n; i++) {
		const struct eg_diag *g = &d->v[i];
		int f = 1;

		if (g->warning != warnings)
			continue;
		if (!first)
			sbuf_putc(b, ',');
		first = 0;
		sbuf_putc(b, '{');
		json_key(b, "file", &f);
		put_json_str(b, g->file);
		json_key(b, "line", &f);
		sbuf_printf(b, "%d", g->line);
		json_key(b, "column", &f);
		sbuf_printf(b, "%d", g->column);
		json_key(b, "message", &f);
		put_json_str(b, g->msg);
		sbuf_putc(b, '}');
	}
	sbuf_putc(b, ']');
}

/*
 * Where a rule is enforced: every rule in supervised sessions; in the
 * kernel (execgate daemon --enforce) when the compiler can hold it; an
 * audit rule blocks nothing anywhere. *why: why not in the kernel, or NULL.
 */
static size_t rule_layers(const struct kc_prog *k, size_t i, const struct eg_rule_info *ri,
			  const char *out[4], const char **why)
{
	size_t n = 0;

	*why = k && !k->info[i].kernel ? k->info[i].why : NULL;
	if (ri->decision == EG_DECISION_AUDIT) {
		out[n++] = "audit only";
		return n;
	}
	if (k && k->info[i].kernel)
		out[n++] = "kernel";
	out[n++] = k && k->info[i].kernel ? "sessions" : "sessions only";
	return n;
}

/* The facts of an exec a rule reads to decide. */
static size_t rule_facts(const struct eg_rule_info *ri, const char *out[8])
{
	size_t n = 0, i;
	bool literal = false;

	for (i = 0; i < ri->n_paths; i++)
		literal |= ri->paths[i][0] == '/' && !strpbrk(ri->paths[i], "*?[\\");
	if (ri->n_paths)
		out[n++] = literal ? "resolved path (and the named file's identity and content)" : "resolved path";
	if (ri->n_basenames)
		out[n++] = "name";
	if (ri->n_args || ri->n_args_patterns)
		out[n++] = "argv";
	if (ri->min_depth > 0 || ri->max_depth >= 0)
		out[n++] = "depth";
	if (ri->n_uids)
		out[n++] = "euid";
	if (ri->n_cgroups)
		out[n++] = "cgroup";
	return n;
}

/* ---- check ---- */

struct check_opts {
	const char *file;
	bool json;
	bool strict;
};

static const struct argp_option check_options[] = {
	{ "json", 'j', NULL, 0, "One JSON object: errors, warnings, rules", 0 },
	{ "strict", 's', NULL, 0, "Warnings fail the check too (exit 1)", 0 },
	{},
};

static error_t check_parse(int key, char *arg, struct argp_state *state)
{
	struct check_opts *o = state->input;

	switch (key) {
	case 'j':
		o->json = true;
		eg_json_errors = true;
		break;
	case 's':
		o->strict = true;
		break;
	case ARGP_KEY_ARG:
		if (o->file)
			argp_error(state, "one policy file at a time");
		o->file = arg;
		break;
	case ARGP_KEY_END:
		if (!o->file)
			argp_error(state, "which policy file? (execgate policy check FILE)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/*
 * What the policy asks of a session's boundary (filesystem:, network:,
 * environment:), the Landlock ABI it needs, and what a session of it would
 * do on this kernel: start, start without something, or be refused.
 */
static int boundary_need(const struct eg_policy_boundary *b)
{
	if (b->network)
		return EG_LL_ABI_NET;
	if (b->layer.write.set)
		return EG_LL_ABI_TRUNCATE;
	return b->filesystem ? EG_LL_ABI_FS : 0;
}

static void boundary_json(struct jsonw *w, const struct eg_policy *p)
{
	const struct eg_policy_boundary *b = policy_boundary(p);
	int abi = eg_landlock_abi();
	struct sbuf plan = {};
	struct jsonw pw;
	char err[512];
	size_t i;

	jsonw_start_object(w);
	jsonw_key(w, "environment_deny");
	jsonw_start_array(w);
	for (i = 0; i < b->n_env_deny; i++)
		jsonw_string(w, b->env_deny[i]);
	jsonw_end_array(w);
	jsonw_string_field(w, "on_unsupported", b->on_unsupported_allow ? "allow" : "deny");
	jsonw_int_field(w, "needs_landlock_abi", boundary_need(b));
	jsonw_int_field(w, "landlock_abi", abi);
	jsonw_init(&pw, &plan);
	if (boundary_plan(&pw, abi, p, NULL, NULL, err, sizeof(err))) {
		jsonw_key(w, "session");
		jsonw_null(w);
		jsonw_string_field(w, "refused", err);
	} else if (!plan.oom) {
		/* the layers (with their lists) and what holds, for a session of this policy here */
		jsonw_key(w, "session");
		jsonw_raw(w, plan.data, plan.len);
	}
	sbuf_free(&plan);
	jsonw_end_object(w);
}

static void boundary_plain(const struct eg_policy *p)
{
	const struct eg_policy_boundary *b = policy_boundary(p);
	int abi = eg_landlock_abi(), need = boundary_need(b);
	struct sbuf plan = {};
	struct jsonw pw;
	char err[512];
	size_t i;

	if (b->filesystem)
		printf("filesystem: read %s, write %s, execute %s\n",
		       b->layer.read.set ? "the listed paths" : "anywhere",
		       b->layer.write.set ? "the listed paths" : "anywhere",
		       b->layer.execute.set ? "the listed paths" : "anywhere");
	if (b->network)
		printf("network: TCP connect to %s, bind to %s\n",
		       b->layer.connect_tcp.set ? "the listed ports" : "any port",
		       b->layer.bind_tcp.set ? "the listed ports" : "any port");
	if (b->n_env_deny) {
		printf("environment.deny:");
		for (i = 0; i < b->n_env_deny; i++)
			printf(" %s", b->env_deny[i]);
		putchar('\n');
	}
	if (!need)
		return;
	jsonw_init(&pw, &plan);
	if (boundary_plan(&pw, abi, p, NULL, NULL, err, sizeof(err))) {
		printf("sessions here: refused: %s\n", err);
	} else {
		json_t *pl = json_loadb(plan.data ? plan.data : "", plan.len, 0, NULL);
		const char *miss = json_string_value(json_object_get(pl, "missing"));

		printf("sessions here (Landlock ABI %d; the policy needs %d): %s%s\n", abi, need,
		       miss ? "start without " : "start with all of it", miss ? miss : "");
		json_decref(pl);
	}
	sbuf_free(&plan);
}

/* A rule's contexts by name ("ag, none"); "" when it applies in every one and outside. */
static const char *ctx_list(const struct eg_policy *p, uint32_t mask, char *buf, size_t len)
{
	struct eg_context_info ci;
	size_t off = 0;
	uint32_t id;

	buf[0] = '\0';
	for (id = 0; id < 32 && off < len; id++) {
		if (!(mask & (1u << id)))
			continue;
		off += snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
				!id ? "none" : !policy_context_info(p, id, &ci) ? ci.name : "?");
	}
	return buf;
}

static void check_json(const struct check_opts *o, const struct eg_policy *p, const struct kc_prog *kp,
		       const struct eg_diags *d,
		       bool ok)
{
	struct sbuf b = {};
	int first = 1;
	size_t i;

	sbuf_putc(&b, '{');
	json_key(&b, "file", &first);
	put_json_str(&b, o->file);
	json_key(&b, "valid", &first);
	sbuf_puts(&b, p ? "true" : "false");
	json_key(&b, "ok", &first);
	sbuf_puts(&b, ok ? "true" : "false");
	json_key(&b, "strict", &first);
	sbuf_puts(&b, o->strict ? "true" : "false");
	json_key(&b, "sha256", &first);
	put_json_str(&b, p ? policy_sha256(p) : NULL);
	json_key(&b, "default_decision", &first);
	put_json_str(&b, p ? eg_decision_name(policy_settings(p)->default_decision) : NULL);
	if (p) {
		struct jsonw w;

		json_key(&b, "boundary", &first);
		jsonw_init(&w, &b);
		boundary_json(&w, p);
	}
	json_key(&b, "errors", &first);
	put_diags_json(&b, d, false);
	json_key(&b, "warnings", &first);
	put_diags_json(&b, d, true);
	json_key(&b, "rules", &first);
	sbuf_putc(&b, '[');
	for (i = 0; p && i < policy_rule_count(p); i++) {
		struct eg_rule_info ri;
		const char *layers[4], *facts[8], *why;
		size_t n, k;
		int f = 1;

		if (policy_rule_info(p, i, &ri))
			break;
		if (i)
			sbuf_putc(&b, ',');
		sbuf_putc(&b, '{');
		json_key(&b, "name", &f);
		put_json_str(&b, ri.name);
		json_key(&b, "decision", &f);
		put_json_str(&b, eg_decision_name(ri.decision));
		json_key(&b, "line", &f);
		sbuf_printf(&b, "%d", ri.line);
		json_key(&b, "enforced_in", &f);
		sbuf_putc(&b, '[');
		n = rule_layers(kp, i, &ri, layers, &why);
		for (k = 0; k < n; k++) {
			if (k)
				sbuf_putc(&b, ',');
			put_json_str(&b, layers[k]);
		}
		sbuf_putc(&b, ']');
		json_key(&b, "kernel", &f);
		sbuf_puts(&b, kp && kp->info[i].kernel ? "true" : "false");
		if (why) {
			json_key(&b, "not_in_kernel_because", &f);
			put_json_str(&b, why);
		}
		if (ri.ctx_mask) {
			struct eg_context_info ci;
			uint32_t id;
			int c = 0;

			json_key(&b, "contexts", &f);
			sbuf_putc(&b, '[');
			for (id = 0; id < 32; id++) {
				if (!(ri.ctx_mask & (1u << id)))
					continue;
				if (c++)
					sbuf_putc(&b, ',');
				put_json_str(&b, !id ? "none" : !policy_context_info(p, id, &ci) ? ci.name : "?");
			}
			sbuf_putc(&b, ']');
		}
		json_key(&b, "reads", &f);
		sbuf_putc(&b, '[');
		n = rule_facts(&ri, facts);
		for (k = 0; k < n; k++) {
			if (k)
				sbuf_putc(&b, ',');
			put_json_str(&b, facts[k]);
		}
		sbuf_puts(&b, "]}");
	}
	sbuf_putc(&b, ']');
	json_key(&b, "contexts", &first);
	sbuf_putc(&b, '[');
	for (i = 1; p && i <= policy_context_count(p); i++) {
		struct eg_context_info ci;

		policy_context_info(p, i, &ci);
		sbuf_printf(&b, "%s{\"name\":", i > 1 ? "," : "");
		put_json_str(&b, ci.name);
		sbuf_printf(&b, ",\"line\":%d,\"identities\":%zu,\"max_depth\":", ci.line, ci.n_identities);
		if (ci.max_depth >= 0)
			sbuf_printf(&b, "%d", ci.max_depth);
		else
			sbuf_puts(&b, "null");
		sbuf_puts(&b, ",\"max_consecutive_shells\":");
		if (ci.max_shells >= 0)
			sbuf_printf(&b, "%d", ci.max_shells);
		else
			sbuf_puts(&b, "null");
		sbuf_printf(&b, ",\"entered_in_kernel\":%s}", kp && !kp->ident_left_out ? "true" : "false");
	}
	sbuf_puts(&b, "]}\n");
	write_out(&b);
	sbuf_free(&b);
}

static void check_plain(const struct check_opts *o, const struct eg_policy *p, const struct kc_prog *kp,
			const struct eg_diags *d)
{
	size_t nerr = eg_diags_errors(d), nwarn = d->n - nerr, i, w = 4;

	print_diags_plain(d, false);
	print_diags_plain(d, true);
	if (!p) {
		fprintf(stderr, "%s: %zu error%s, policy not valid\n", o->file, nerr, nerr == 1 ? "" : "s");
		return;
	}
	if (o->strict && nwarn)
		fprintf(stderr, "%s: %zu warning%s, failing because of --strict\n", o->file, nwarn,
			nwarn == 1 ? "" : "s");
	printf("%s: valid, %zu rule%s, default_decision %s, %zu warning%s\n", o->file, policy_rule_count(p),
	       policy_rule_count(p) == 1 ? "" : "s", eg_decision_name(policy_settings(p)->default_decision),
	       nwarn, nwarn == 1 ? "" : "s");
	printf("sha256 %s\n", policy_sha256(p));
	boundary_plain(p);
	if (!policy_rule_count(p))
		return;
	for (i = 0; i < policy_rule_count(p); i++) {
		struct eg_rule_info ri;

		if (!policy_rule_info(p, i, &ri) && strlen(ri.name) > w)
			w = strlen(ri.name);
	}
	if (w > 40)
		w = 40;
	printf("\n%-*s  %-8s  %-5s  %-28s  %s\n", (int)w, "RULE", "DECISION", "LINE", "ENFORCED IN", "READS");
	for (i = 0; i < policy_rule_count(p); i++) {
		struct eg_rule_info ri;
		const char *layers[4], *facts[8], *why;
		char col[128];
		size_t n, k, off = 0;

		if (policy_rule_info(p, i, &ri))
			break;
		printf("%-*s  %-8s  %-5d  ", (int)w, ri.name, eg_decision_name(ri.decision), ri.line);
		n = rule_layers(kp, i, &ri, layers, &why);
		col[0] = '\0';
		for (k = 0; k < n && off < sizeof(col); k++)
			off += snprintf(col + off, sizeof(col) - off, "%s%s", k ? ", " : "", layers[k]);
		printf("%-28s  ", col);
		n = rule_facts(&ri, facts);
		for (k = 0; k < n; k++)
			printf("%s%s", k ? ", " : "", facts[k]);
		if (!n)
			printf("nothing (matches every exec)");
		putchar('\n');
		if (why && ri.decision != EG_DECISION_AUDIT)
			printf("%-*s  not in the kernel: %s\n", (int)w, "", why);
		if (ri.ctx_mask)
			printf("%-*s  only in contexts: %s\n", (int)w, "", ctx_list(p, ri.ctx_mask, col, sizeof(col)));
	}
	if (policy_context_count(p)) {
		printf("\n%-20s  %-5s  %-10s  %-9s  %-6s  %s\n", "CONTEXT", "LINE", "IDENTITIES", "MAX_DEPTH",
		       "SHELLS", "ENTERED BY");
		for (i = 1; i <= policy_context_count(p); i++) {
			struct eg_context_info ci;
			char md[16] = "-", ms[16] = "-";

			policy_context_info(p, i, &ci);
			if (ci.max_depth >= 0)
				snprintf(md, sizeof(md), "%d", ci.max_depth);
			if (ci.max_shells >= 0)
				snprintf(ms, sizeof(ms), "%d", ci.max_shells);
			printf("%-20s  %-5d  %-10zu  %-9s  %-6s  %s\n", ci.name, ci.line, ci.n_identities, md, ms,
			       kp && kp->ident_left_out ? "userspace only (see below)" :
			       "the kernel, at exec (with or without --enforce)");
		}
		if (kp && kp->ident_left_out)
			printf("not in the kernel: %s\n", kp->ident_why);
	}
	if (kp)
		printf("\nexecgate daemon --enforce: %zu of %zu rules in the kernel%s\n",
		       kp->n_rules - kp->conf.n_ident, policy_rule_count(p),
		       kp->partial ? "; refused without --allow-partial (a deny the kernel cannot hold)" :
		       kp->n_left_out ? "; the rest change no kernel verdict" : "");
}

static int do_check(int argc, char **argv)
{
	static const char doc[] =
		"Load a policy file and report its errors (FILE:LINE:COLUMN: error: ...)\n"
		"and lint warnings (rules that can never match, patterns that match every\n"
		"command line, approvals with no approval_timeout, rules with no\n"
		"matcher); then list each rule with where it is enforced. Format:\n"
		"policy/README.md.\n\n"
		"Exit status: 0 valid, 1 errors (or warnings with --strict), 2 usage.";
	struct argp argp = { check_options, check_parse, "FILE", doc, NULL, NULL, NULL };
	struct check_opts o = {};
	struct eg_policy *p = NULL;
	struct kc_prog *kp = NULL;
	struct eg_diags d = {};
	size_t nwarn;
	bool ok;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	if (policy_load_file(o.file, &p, &d))
		p = NULL;
	if (p)
		multicall_lint(p, o.file, &d);
	nwarn = d.n - eg_diags_errors(&d);
	ok = p && !(o.strict && nwarn);
	/* what the kernel could hold (the daemon's mount namespace decides internal_bypass) */
	if (p && kcompile(p, 0, &kp))
		kp = NULL;
	if (o.json)
		check_json(&o, p, kp, &d, ok);
	else
		check_plain(&o, p, kp, &d);
	kc_prog_free(kp);
	policy_free(p);
	eg_diags_free(&d);
	return ok ? 0 : 1;
}

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
};

static const struct argp_option test_options[] = {
	{ "depth", 'd', "N", 0, "Exec depth: 0 = direct (default), 1 and more = nested", 0 },
	{ "unknown-depth", 'U', NULL, 0, "The task's tree started before the tracer (depth_known false)", 0 },
	{ "cgroup", 'c', "PATH", 0, "cgroup v2 path of the task, e.g. /system.slice/foo.service "
	  "(default: unknown, so rules with cgroups do not match)", 0 },
	{ "uid", 'u', "USER", 0, "Effective user of the task, a name or a uid (default: you)", 0 },
	{ "session", 's', NULL, 0, "Decide as a session supervisor would: on_truncated and on_error apply", 0 },
	{ "truncated", 't', NULL, 0, "Pretend argv was cut (implies --session: on_truncated applies)", 0 },
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
	case EG_DECISION_APPROVAL: return 3;
	case EG_DECISION_ERROR: return 4;
	default: return 0;	/* allow, audit: it runs */
	}
}

static int do_test(int argc, char **argv)
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
		"audit, 1 deny, 3 approval (a person must answer), 4 error (the policy\n"
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
			put_json_str(&b, "invalid policy");
			json_key(&b, "errors", &first);
			put_diags_json(&b, &d, false);
			sbuf_puts(&b, "}\n");
			write_out(&b);
			sbuf_free(&b);
		} else {
			print_diags_plain(&d, false);
		}
		eg_diags_free(&d);
		return EXIT_POLICY_INVALID;
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
		put_json_str(&b, eg_decision_name(v.decision));
		json_key(&b, "rule", &first);
		put_json_str(&b, v.rule ? v.rule : "default");
		json_key(&b, "rule_index", &first);
		sbuf_printf(&b, "%d", v.rule_index);
		json_key(&b, "message", &first);
		put_json_str(&b, v.message);
		json_key(&b, "filename", &first);
		put_json_str(&b, plan.n && !plan.err ? plan.prog[0].path : filename);
		json_key(&b, "path_requested", &first);
		put_json_str(&b, filename);
		json_key(&b, "argv", &first);
		sbuf_putc(&b, '[');
		for (i = 0; i < o.ncmd; i++) {
			if (i)
				sbuf_putc(&b, ',');
			put_json_str(&b, o.cmd[i]);
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
			put_json_str(&b, plan.n && !plan.err ? plan.prog[k].path : filename);
			json_key(&b, "argv", &f2);
			sbuf_putc(&b, '[');
			for (j = 0; plan.n && !plan.err && j < plan.prog[k].argc; j++) {
				if (j)
					sbuf_putc(&b, ',');
				put_json_str(&b, plan.prog[k].argv[j]);
			}
			sbuf_putc(&b, ']');
			json_key(&b, "decision", &f2);
			put_json_str(&b, eg_decision_name(verdicts[k].decision));
			json_key(&b, "rule", &f2);
			put_json_str(&b, verdicts[k].rule ? verdicts[k].rule : "default");
			sbuf_putc(&b, '}');
		}
		sbuf_putc(&b, ']');
		json_key(&b, "depth", &first);
		sbuf_printf(&b, "%d", o.depth);
		json_key(&b, "uid", &first);
		sbuf_printf(&b, "%lld", o.uid);
		json_key(&b, "cgroup", &first);
		put_json_str(&b, o.cgroup);
		json_key(&b, "truncated", &first);
		sbuf_puts(&b, o.truncated ? "true" : "false");
		sbuf_puts(&b, "}\n");
		write_out(&b);
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

static int do_reload(int argc, char **argv)
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

/* ---- generate ---- */

struct gen_opts {
	struct cli_common common;
	struct cli_filters fl;
	const char *tree;
	const char *out;
	char *files[257];
	size_t nfiles;
	/* while reading */
	struct eg_generate *g;
	json_t *all;			/* --tree: every exec read, to pick the tree's */
};

static const struct argp_option gen_options[] = {
	{ "tree", 't', "EXEC_ID", 0, "What this exec and every exec below it ran", 2 },
	{ "output", 'o', "FILE", 0, "Write the policy to FILE (default: stdout)", 2 },
	{},
};

static error_t gen_parse(int key, char *arg, struct argp_state *state)
{
	struct gen_opts *o = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->common;
		state->child_inputs[1] = &o->fl;
		break;
	case 't':
		o->tree = arg;
		break;
	case 'o':
		o->out = arg;
		break;
	case ARGP_KEY_ARG:
		if (o->nfiles == 256)
			argp_error(state, "at most 256 files");
		o->files[o->nfiles++] = arg;
		break;
	case ARGP_KEY_END:
		if (!o->tree && !o->fl.f.n_sessions && !o->fl.f.since[0] && !o->fl.f.n_uids && !o->fl.f.n_comm &&
		    !o->fl.f.n_filename && !o->fl.f.n_containers && !o->fl.f.n_pods)
			argp_error(state, "say what to learn from: --session ID, --tree EXEC_ID, or query filters "
				   "(--since, --user, --container, ...)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int gen_line(const char *line, size_t len, void *arg)
{
	struct gen_opts *o = arg;
	json_t *r;

	if (!query_prefilter(&o->fl.f, line, len))
		return 0;
	r = json_load_record(line, len);
	if (json_is_object(r) && query_match(&o->fl.f, r)) {
		if (o->all)
			json_array_append(o->all, r);
		else
			generate_add(o->g, r);
	}
	json_decref(r);
	return 0;
}

/* --tree: the exec and its descendants, by parent_exec_id */
static size_t add_tree(struct gen_opts *o)
{
	json_t *kids = json_object(), *r, *v;
	json_t *todo = json_array(), *seen = json_object();
	size_t i, n = 0;

	json_array_foreach(o->all, i, r) {
		const char *p = json_string_value(json_object_get(r, "parent_exec_id"));

		if (!p)
			continue;
		if (!(v = json_object_get(kids, p)))
			json_object_set_new(kids, p, v = json_array());
		json_array_append_new(v, json_integer(i));
	}
	json_array_foreach(o->all, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "exec_id")) ?: "", o->tree)) {
			json_array_append_new(todo, json_integer(i));
			break;
		}
	while (json_array_size(todo)) {
		json_int_t k = json_integer_value(json_array_get(todo, 0));
		const char *id;

		json_array_remove(todo, 0);
		r = json_array_get(o->all, k);
		generate_add(o->g, r);
		n++;
		id = json_string_value(json_object_get(r, "exec_id"));
		if (!id || json_object_get(seen, id))
			continue;
		json_object_set_new(seen, id, json_true());
		json_array_foreach(json_object_get(kids, id), i, v)
			json_array_append(todo, v);
	}
	json_decref(kids);
	json_decref(todo);
	json_decref(seen);
	return n;
}

static int do_generate(int argc, char **argv)
{
	static const char doc[] =
		"Write a policy that allows what the records show ran, and nothing else (default deny).\n"
		"\v"
		"The records are the daemon's (its output and rotated files, as 'execgate query' reads them) "
		"or the FILEs given. Pick them with --session ID (a supervised session), --tree EXEC_ID (an "
		"exec and every exec below it) or query's filters. Programs are allowed by resolved path, at "
		"the depths they ran at (context); their argument lists become args_patterns, generalized where "
		"runs differ only in file names or numbers (a comment shows examples); tools that reach the "
		"network or install software get 'approval'; what was refused or killed is written as "
		"commented-out rules to review. The result passes 'execgate policy check --strict'. Example: "
		"run a build once in a session, generate, then run it under the policy: "
		"execgate exec --policy gen.yaml -- make";
	static const struct argp_child children[] = { { &cli_common_argp, 0, NULL, 0 },
						      { &cli_filter_argp, 0, NULL, 1 }, {} };
	struct argp argp = { gen_options, gen_parse, "[FILE...]", doc, children, NULL, NULL };
	struct gen_opts o = {};
	char **files = NULL, path[PATH_MAX], err[PATH_MAX + 512], source[512];
	struct sbuf out = {};
	int rc = 1;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	query_filter_ready(&o.fl.f);
	o.g = generate_new();
	if (o.tree)
		o.all = json_array();
	if (!o.g || (o.tree && !o.all))
		goto out;
	if (o.nfiles) {
		files = o.files;
	} else if (query_daemon_output(o.common.pin_path, path, sizeof(path), err, sizeof(err)) ||
		   query_output_files(path, &files)) {
		p_err("%s", err);
		goto out;
	}
	if (query_scan(files, gen_line, &o, err, sizeof(err))) {
		p_err("%s", err);
		goto out;
	}
	if (o.tree && !add_tree(&o)) {
		p_err("no exec %s in the records read", o.tree);
		goto out;
	}
	if (o.tree)
		snprintf(source, sizeof(source), "the tree of exec %s", o.tree);
	else if (o.fl.f.n_sessions)
		snprintf(source, sizeof(source), "session %s", o.fl.f.sessions[0]);
	else
		snprintf(source, sizeof(source), "the records the query filters selected");
	rc = generate_write(o.g, source, &out);
	if (rc) {
		p_err(rc == -ENOENT ? "no exec in the records read matches: nothing to allow" : "out of memory");
		rc = 1;
		goto out;
	}
	if (o.out) {
		char tmp[PATH_MAX + 8];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", o.out);
		f = fopen(tmp, "we");
		if (!f || fwrite(out.data, 1, out.len, f) != out.len || fclose(f) || rename(tmp, o.out)) {
			p_err("cannot write %s: %s", o.out, strerror(errno));
			unlink(tmp);
			rc = 1;
			goto out;
		}
	} else {
		rc = cli_write(&out) ? 1 : 0;
	}
out:
	if (files != o.files)
		query_files_free(files);
	generate_free(o.g);
	json_decref(o.all);
	sbuf_free(&out);
	return rc;
}

static const struct verb {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} verbs[] = {
	{ "check",  do_check,  "FILE [--json] [--strict]\n"
			       "          validate and lint; show where each rule is enforced" },
	{ "test",   do_test,   "FILE [--depth N] [--cgroup PATH] [--uid N] [--json] -- ARGV...\n"
			       "          the decision for one hypothetical exec" },
	{ "reload", do_reload, "[-p DIR] [--json]\n"
			       "          make the running daemon reload its policy" },
	{ "generate", do_generate, "[--session ID | --tree EXEC_ID | FILTERS] [-o FILE] [FILE...]\n"
			       "          a default-deny policy allowing what the records show ran" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: execgate policy VERB [OPTION...]\n\n"
		   "Check, try and reload exec policies: YAML files of sandbox.seccomp.execve\n"
		   "settings and 'commands' rules (the first rule that matches decides, else\n"
		   "default_decision). Schema: policy/README.md.\n\n");
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(f, "  %-7s %s\n", verbs[i].name, verbs[i].help);
	fprintf(f, "\n'execgate policy VERB --help' describes each verb's options.\n");
}

int do_policy(int argc, char **argv)
{
	static char names[4][32];
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	argp_err_exit_status = EXIT_USAGE;
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (strcmp(argv[1], verbs[i].name))
			continue;
		/* argp names the program after argv[0]: make it the whole command. */
		snprintf(names[i], sizeof(names[i]), "execgate policy %s", verbs[i].name);
		argv[1] = names[i];
		eg_verb = names[i] + strlen("execgate ");
		return verbs[i].fn(argc - 1, argv + 1);
	}
	p_err("unknown policy verb '%s': see 'execgate policy --help'", argv[1]);
	return EXIT_USAGE;
}
