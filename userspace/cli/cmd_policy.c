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
#include "cli/cmd_policy.h"
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


void policy_put_json_str(struct sbuf *b, const char *s)
{
	if (s)
		json_str(b, s, strlen(s));
	else
		sbuf_puts(b, "null");
}

void policy_write_out(struct sbuf *b)
{
	if (b->oom) {
		p_err("out of memory");
		return;
	}
	fwrite(b->data, 1, b->len, stdout);
	fflush(stdout);
}

void policy_print_diags_plain(const struct eg_diags *d, bool warnings)
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

void policy_put_diags_json(struct sbuf *b, const struct eg_diags *d, bool warnings)
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
		policy_put_json_str(b, g->file);
		json_key(b, "line", &f);
		sbuf_printf(b, "%d", g->line);
		json_key(b, "column", &f);
		sbuf_printf(b, "%d", g->column);
		json_key(b, "message", &f);
		policy_put_json_str(b, g->msg);
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
	if (ri->decision == EG_DECISION_REDIRECT) {
		/* only a session's launcher and PATH directory can run another program instead */
		if (k && k->info[i].kernel)
			out[n++] = "kernel (as deny)";
		out[n++] = "sessions (redirect)";
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
	bool enforce;
	bool allow_partial;
};

enum { CHECK_ALLOW_PARTIAL = 0x100 };

static const struct argp_option check_options[] = {
	{ "json", 'j', NULL, 0, "One JSON object: errors, warnings, rules", 0 },
	{ "strict", 's', NULL, 0, "Warnings fail the check too (exit 1)", 0 },
	{ "enforce", 'e', NULL, 0, "Fail (exit 1) where 'execgate daemon --enforce' would refuse the policy: "
	  "more than the kernel maps hold, or a deny the kernel cannot hold", 0 },
	{ "allow-partial", CHECK_ALLOW_PARTIAL, NULL, 0, "With --enforce: as the daemon's --allow-partial, "
	  "a deny the kernel cannot hold is no failure", 0 },
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
	case 'e':
		o->enforce = true;
		break;
	case CHECK_ALLOW_PARTIAL:
		o->allow_partial = true;
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
	policy_put_json_str(&b, o->file);
	json_key(&b, "valid", &first);
	sbuf_puts(&b, p ? "true" : "false");
	json_key(&b, "ok", &first);
	sbuf_puts(&b, ok ? "true" : "false");
	json_key(&b, "strict", &first);
	sbuf_puts(&b, o->strict ? "true" : "false");
	json_key(&b, "sha256", &first);
	policy_put_json_str(&b, p ? policy_sha256(p) : NULL);
	json_key(&b, "default_decision", &first);
	policy_put_json_str(&b, p ? eg_decision_name(policy_settings(p)->default_decision) : NULL);
	if (p) {
		struct jsonw w;

		json_key(&b, "boundary", &first);
		jsonw_init(&w, &b);
		boundary_json(&w, p);
	}
	json_key(&b, "errors", &first);
	policy_put_diags_json(&b, d, false);
	json_key(&b, "warnings", &first);
	policy_put_diags_json(&b, d, true);
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
		policy_put_json_str(&b, ri.name);
		json_key(&b, "decision", &f);
		policy_put_json_str(&b, eg_decision_name(ri.decision));
		json_key(&b, "line", &f);
		sbuf_printf(&b, "%d", ri.line);
		json_key(&b, "enforced_in", &f);
		sbuf_putc(&b, '[');
		n = rule_layers(kp, i, &ri, layers, &why);
		for (k = 0; k < n; k++) {
			if (k)
				sbuf_putc(&b, ',');
			policy_put_json_str(&b, layers[k]);
		}
		sbuf_putc(&b, ']');
		json_key(&b, "kernel", &f);
		sbuf_puts(&b, kp && kp->info[i].kernel ? "true" : "false");
		if (why) {
			json_key(&b, "not_in_kernel_because", &f);
			policy_put_json_str(&b, why);
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
				policy_put_json_str(&b, !id ? "none" : !policy_context_info(p, id, &ci) ? ci.name : "?");
			}
			sbuf_putc(&b, ']');
		}
		json_key(&b, "reads", &f);
		sbuf_putc(&b, '[');
		n = rule_facts(&ri, facts);
		for (k = 0; k < n; k++) {
			if (k)
				sbuf_putc(&b, ',');
			policy_put_json_str(&b, facts[k]);
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
		policy_put_json_str(&b, ci.name);
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
	policy_write_out(&b);
	sbuf_free(&b);
}

static void check_plain(const struct check_opts *o, const struct eg_policy *p, const struct kc_prog *kp,
			const struct eg_diags *d)
{
	size_t nerr = eg_diags_errors(d), nwarn = d->n - nerr, i, w = 4;

	policy_print_diags_plain(d, false);
	policy_print_diags_plain(d, true);
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
		if (ri.decision == EG_DECISION_REDIRECT) {
			const struct eg_redirect *rd = policy_rule_redirect(p, ri.name);

			printf("%-*s  redirects to %s", (int)w, "", rd ? rd->command : "?");
			for (k = 0; rd && k < rd->n_args; k++)
				printf(" %s", rd->args[k]);
			printf(" (executable: checked); a deny in the kernel and outside sessions, which cannot "
			       "run another program instead\n");
		}
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
		"Exit status: 0 valid, 1 errors (or warnings with --strict, or what\n"
		"'daemon --enforce' would refuse with --enforce), 2 usage.";
	struct argp argp = { check_options, check_parse, "FILE", doc, NULL, NULL, NULL };
	struct check_opts o = {};
	struct eg_policy *p = NULL;
	struct kc_prog *kp = NULL;
	struct eg_diags d = {};
	size_t nwarn;
	int err = 0;
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
	if (p && (err = kcompile(p, 0, true, &kp)))
		kp = NULL;
	/* what 'daemon --enforce' would refuse (kernel.c: compile) */
	if (p && o.enforce && (!kp || (kp->partial && !o.allow_partial))) {
		ok = false;
		if (!o.json)
			fprintf(stderr, "%s: error: --enforce would refuse it: %s\n", o.file,
				!kp ? (err == -E2BIG ? "more rules, names or globs than the kernel maps hold" :
							 strerror(-err)) :
				"the kernel cannot hold every rule that denies or comes before a deny "
				"(see above; --allow-partial takes it)");
	}
	if (o.json)
		check_json(&o, p, kp, &d, ok);
	else
		check_plain(&o, p, kp, &d);
	kc_prog_free(kp);
	policy_free(p);
	eg_diags_free(&d);
	return ok ? 0 : 1;
}

static const struct verb {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} verbs[] = {
	{ "check",  do_check,  "FILE [--json] [--strict] [--enforce [--allow-partial]]\n"
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
