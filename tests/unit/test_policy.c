// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The policy engine: loading, every field and decision, errors with places, lint, limits. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "unit.h"
#include "policy/internal.h"
#include "util/fileid.h"

/* ---- helpers ---- */

static struct eg_policy *load_d(const char *yaml, struct eg_diags *d)
{
	struct eg_policy *p = NULL;
	int rc = policy_load_buf(yaml, strlen(yaml), "t.yaml", &p, d);
	size_t i;

	if (!ASSERT_OK(rc, "policy_load_buf")) {
		for (i = 0; i < d->n; i++)
			printf("      %d:%d: %s\n", d->v[i].line, d->v[i].column, d->v[i].msg);
		return NULL;
	}
	return p;
}

static struct eg_policy *load(const char *yaml)
{
	struct eg_diags d = {};
	struct eg_policy *p = load_d(yaml, &d);

	eg_diags_free(&d);
	return p;
}

static const struct eg_diag *find_diag(const struct eg_diags *d, bool warning, const char *substr)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->v[i].warning == warning && strstr(d->v[i].msg, substr))
			return &d->v[i];
	return NULL;
}

static void dump_diags(const struct eg_diags *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		printf("      %s %d:%d: %s\n", d->v[i].warning ? "warning" : "error", d->v[i].line,
		       d->v[i].column, d->v[i].msg);
}

/* The load fails with an error at line:col whose message contains substr. */
static bool load_fails_at(const char *yaml, int line, int col, const char *substr)
{
	struct eg_policy *p = NULL;
	struct eg_diags d = {};
	const struct eg_diag *g;
	bool ok = true;
	int rc;

	rc = policy_load_buf(yaml, strlen(yaml), "t.yaml", &p, &d);
	ok &= ASSERT_ERR(rc, "load must fail");
	ok &= ASSERT_TRUE(p == NULL, "no policy on failure");
	g = find_diag(&d, false, substr);
	ok &= ASSERT_OK_PTR(g, substr);
	if (g) {
		if (line)
			ok &= ASSERT_EQ(g->line, line, "error line");
		if (col)
			ok &= ASSERT_EQ(g->column, col, "error column");
		ok &= ASSERT_STREQ(g->file, "t.yaml", "error file");
	}
	if (!ok)
		dump_diags(&d);
	policy_free(p);
	eg_diags_free(&d);
	return ok;
}

struct req {
	int depth;
	uint32_t uid;
	const char *cgroup;
	bool truncated;
	const char *filename;	/* NULL: /usr/bin/ARGV0 */
};

static struct eg_verdict eval_v(const struct eg_policy *p, const struct req *r, const char *const *argv)
{
	char fname[256];
	struct eg_exec_req req = {};
	struct eg_verdict v;
	unsigned int n = 0;

	while (argv[n])
		n++;
	if (r->filename)
		snprintf(fname, sizeof(fname), "%s", r->filename);
	else if (strchr(argv[0], '/'))
		snprintf(fname, sizeof(fname), "%s", argv[0]);
	else
		snprintf(fname, sizeof(fname), "/usr/bin/%s", argv[0]);
	req.filename = fname;
	req.argv = argv;
	req.argc = n;
	req.depth = r->depth;
	req.euid = r->uid;
	req.depth_known = true;
	req.cgroup = r->cgroup;
	req.truncated = r->truncated;
	/* these tests decide as a session supervisor: on_truncated and on_error apply */
	req.apply_on_truncated = true;
	memset(&v, 0xa5, sizeof(v));
	policy_eval(p, &req, &v);
	return v;
}

#define ARGV(...) ((const char *const[]){ __VA_ARGS__, NULL })
/* The verdict's rule name, "default" when none. */
#define RULE_AT(p, dep, ...) ({						\
	struct req __r = { .depth = (dep) };				\
	struct eg_verdict __v = eval_v((p), &__r, ARGV(__VA_ARGS__));	\
	__v.rule ? __v.rule : "default"; })
#define DEC_AT(p, dep, ...) ({						\
	struct req __r = { .depth = (dep) };				\
	eval_v((p), &__r, ARGV(__VA_ARGS__)).decision; })

static char *data_path(const char *name, char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n;
	char *s;

	/* From the source tree (make runs tests at the top), else next to the binary. */
	snprintf(buf, len, "tests/unit/data/%s", name);
	if (!access(buf, R_OK))
		return buf;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		/* OUTPUT/tests/test_policy -> ../../tests/unit/data */
		s = strrchr(exe, '/');
		if (s) {
			*s = '\0';
			if (snprintf(buf, len, "%s/../../tests/unit/data/%s", exe, name) >= (int)len)
				buf[0] = '\0';
		}
	}
	return buf;
}

/* ---- the seed ---- */

static void test_seed001_full_configuration(void)
{
	const struct eg_policy_settings *s;
	struct eg_policy *p = NULL;
	struct eg_diags d = {};
	const struct eg_diag *g;
	char path[PATH_MAX];
	size_t nb;
	const char *const *bp;

	if (!ASSERT_OK(policy_load_file(data_path("seed001.yaml", path, sizeof(path)), &p, &d), "load seed001"))
		goto out;
	s = policy_settings(p);
	ASSERT_TRUE(s->execve_enabled, "execve.enabled");
	ASSERT_EQ(s->max_argc, 1000, "max_argc");
	ASSERT_EQ(s->max_argv_bytes, 65536, "max_argv_bytes");
	ASSERT_EQ(s->on_truncated, EG_DECISION_DENY, "on_truncated");
	ASSERT_EQ(s->approval_timeout_ms, 10000, "approval_timeout");
	ASSERT_TRUE(s->approval_timeout_set, "approval_timeout set");
	ASSERT_EQ(s->approval_timeout_action, EG_TIMEOUT_DENY, "approval_timeout_action");
	ASSERT_EQ(s->default_decision, EG_DECISION_ALLOW, "default_decision");
	ASSERT_EQ(policy_rule_count(p), 4, "rules");
	bp = policy_internal_bypass(p, &nb);
	ASSERT_EQ(nb, 3, "internal_bypass entries");
	if (nb == 3)
		ASSERT_STREQ(bp[2], "*.real", "third bypass entry");
	ASSERT_EQ(eg_diags_errors(&d), 0, "no errors");
	g = find_diag(&d, true, "pattern '/*' in rule 'block-dangerous-rm' matches the empty string, "
			  "so it matches every command line");
	if (ASSERT_OK_PTR(g, "lint warning about \"/*\"")) {
		ASSERT_EQ(g->line, 42, "warning line");
		ASSERT_EQ(g->column, 41, "warning column");
	}
	ASSERT_OK_PTR(find_diag(&d, true, "'*.real' has no directory: it covers files so named in the "
				   "system binary directories"), "bypass lint");
	ASSERT_EQ(strlen(policy_sha256(p)), 64, "sha256 hex length");

	/* What the seed means. */
	ASSERT_STREQ(RULE_AT(p, 0, "ls", "-l"), "allow-common-tools", "ls");
	ASSERT_STREQ(RULE_AT(p, 3, "grep", "x"), "allow-common-tools", "nested grep");
	ASSERT_STREQ(RULE_AT(p, 0, "git", "status"), "allow-git-direct", "git direct");
	ASSERT_STREQ(RULE_AT(p, 1, "git", "status"), "default", "git nested");
	ASSERT_EQ(DEC_AT(p, 0, "rm", "-rf", "/tmp/x"), EG_DECISION_DENY, "rm -rf");
	/* The seed's "/" + "*" matches every command line, as the lint says. */
	ASSERT_STREQ(RULE_AT(p, 0, "rm", "file.txt"), "block-dangerous-rm", "rm file (seed's /*)");
	ASSERT_EQ(DEC_AT(p, 2, "wget", "http://x"), EG_DECISION_APPROVAL, "nested wget");
	ASSERT_EQ(DEC_AT(p, 0, "wget", "http://x"), EG_DECISION_ALLOW, "direct wget");
	{
		/* bypass names files: these do not exist here, so their names buy nothing */
		struct req r = { .filename = "/bin/bash.real" };
		struct eg_verdict v = eval_v(p, &r, ARGV("bash", "-c", "rm -rf /"));

		ASSERT_TRUE(v.rule == NULL, "a missing *.real gets no bypass");
		r.filename = "/usr/local/bin/agentsh";
		v = eval_v(p, &r, ARGV("agentsh"));
		ASSERT_TRUE(v.rule == NULL, "a missing agentsh gets no bypass");
	}
out:
	policy_free(p);
	eg_diags_free(&d);
}

static const char seed_rules[] =
	"default_decision: deny\n"
	"commands:\n"
	"  # Direct-only: user can run git, but scripts can't\n"
	"  - name: allow-git-direct\n"
	"    basenames: [git]\n"
	"    decision: allow\n"
	"    context: [direct]\n"
	"  - name: allow-cc-nested\n"
	"    basenames: [gcc, clang, cc]\n"
	"    decision: allow\n"
	"    context:\n"
	"      min_depth: 1\n"
	"      max_depth: 3\n"
	"  - name: block-dangerous-rm\n"
	"    basenames: [rm]\n"
	"    args_patterns: [\"-(r|rf|fr)\", \"--recursive.*--force\"]\n"
	"    decision: deny\n"
	"    context: [direct, nested]\n"
	"  - name: approve-nested-network\n"
	"    basenames: [curl, wget]\n"
	"    decision: approval\n"
	"    context: [nested]\n"
	"  - name: rm-otherwise\n"
	"    basenames: [rm]\n"
	"    decision: allow\n";

static void test_seed_policy_examples(void)
{
	struct eg_policy *p = load(seed_rules);

	if (!p)
		return;
	ASSERT_STREQ(RULE_AT(p, 0, "git", "status"), "allow-git-direct", "git status at depth 0");
	ASSERT_EQ(DEC_AT(p, 0, "git", "status"), EG_DECISION_ALLOW, "git status allowed at depth 0");
	ASSERT_STREQ(RULE_AT(p, 1, "git", "status"), "default", "git status at depth 1: not that rule");
	ASSERT_EQ(DEC_AT(p, 1, "git", "status"), EG_DECISION_DENY, "git status at depth 1: default deny");

	ASSERT_EQ(DEC_AT(p, 0, "gcc", "-c", "x.c"), EG_DECISION_DENY, "gcc at depth 0");
	ASSERT_STREQ(RULE_AT(p, 1, "gcc", "-c", "x.c"), "allow-cc-nested", "gcc at depth 1");
	ASSERT_STREQ(RULE_AT(p, 2, "cc", "-c", "x.c"), "allow-cc-nested", "cc at depth 2");
	ASSERT_STREQ(RULE_AT(p, 3, "clang", "x.c"), "allow-cc-nested", "clang at depth 3");
	ASSERT_STREQ(RULE_AT(p, 4, "gcc", "x.c"), "default", "gcc at depth 4");

	ASSERT_STREQ(RULE_AT(p, 0, "rm", "-rf", "/tmp/x"), "block-dangerous-rm", "rm -rf /tmp/x");
	ASSERT_EQ(DEC_AT(p, 0, "rm", "-rf", "/tmp/x"), EG_DECISION_DENY, "rm -rf denied");
	ASSERT_EQ(DEC_AT(p, 5, "rm", "-fr", "x"), EG_DECISION_DENY, "rm -fr x denied (nested)");
	ASSERT_EQ(DEC_AT(p, 0, "rm", "--recursive", "--force", "d"), EG_DECISION_DENY, "long options");
	ASSERT_STREQ(RULE_AT(p, 0, "rm", "x"), "rm-otherwise", "plain rm falls through");

	ASSERT_EQ(DEC_AT(p, 1, "curl", "https://example.com"), EG_DECISION_APPROVAL, "curl at depth 1");
	ASSERT_STREQ(RULE_AT(p, 1, "curl", "x"), "approve-nested-network", "curl rule at depth 1");
	ASSERT_STREQ(RULE_AT(p, 0, "curl", "x"), "default", "curl at depth 0: not that rule");
	policy_free(p);
}

/* ---- matching, field by field ---- */

static void test_args_patterns_vs_args(void)
{
	struct eg_policy *search = load("commands:\n"
					"  - name: r\n"
					"    basenames: [rm]\n"
					"    args_patterns: [\"-(r|rf|fr)\"]\n"
					"    decision: deny\n");
	struct eg_policy *whole = load("commands:\n"
				       "  - name: r\n"
				       "    basenames: [rm]\n"
				       "    args: [\"-(r|rf|fr)\"]\n"
				       "    decision: deny\n");

	if (!search || !whole)
		goto out;
	/* "my-report.txt" holds "-r": a search finds it, a whole-argument match does not. */
	ASSERT_STREQ(RULE_AT(search, 0, "rm", "my-report.txt"), "r", "args_patterns searches");
	ASSERT_STREQ(RULE_AT(whole, 0, "rm", "my-report.txt"), "default", "args needs a whole argument");
	ASSERT_STREQ(RULE_AT(whole, 0, "rm", "-rf", "x"), "r", "args: -rf is a whole argument");
	ASSERT_STREQ(RULE_AT(whole, 0, "rm", "x", "-fr"), "r", "args: any position");
	ASSERT_STREQ(RULE_AT(whole, 0, "rm", "-rfv", "x"), "default", "args: anchored at the end");
	ASSERT_STREQ(RULE_AT(whole, 0, "rm", "x-r"), "default", "args: anchored at the start");
	/* argv[0] is not an argument. */
	ASSERT_STREQ(RULE_AT(search, 0, "rm"), "default", "no arguments");
out:
	policy_free(search);
	policy_free(whole);
}

static void test_args_patterns_join(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - name: force\n"
				   "    basenames: [rm]\n"
				   "    args_patterns: [\"--recursive.*--force\", \"^a b$\"]\n"
				   "    decision: deny\n");

	if (!p)
		return;
	ASSERT_STREQ(RULE_AT(p, 0, "rm", "--recursive", "x", "--force"), "force", "across arguments");
	ASSERT_STREQ(RULE_AT(p, 0, "rm", "--force", "--recursive"), "default", "order matters");
	ASSERT_STREQ(RULE_AT(p, 0, "rm", "a", "b"), "force", "joined by one space, anchors on the whole line");
	ASSERT_STREQ(RULE_AT(p, 0, "rm", "a", "b", "c"), "default", "$ is the end of the line");
	policy_free(p);
}

static void test_args_all_must_match(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - name: push-force\n"
				   "    basenames: [git]\n"
				   "    args: [push, \"-f|--force\"]\n"
				   "    decision: deny\n");

	if (!p)
		return;
	ASSERT_STREQ(RULE_AT(p, 0, "git", "push", "--force"), "push-force", "both");
	ASSERT_STREQ(RULE_AT(p, 0, "git", "-f", "origin", "push"), "push-force", "any order");
	ASSERT_STREQ(RULE_AT(p, 0, "git", "push", "origin"), "default", "only one");
	ASSERT_STREQ(RULE_AT(p, 0, "git", "pushy", "-f"), "default", "whole arguments");
	policy_free(p);
}

static void test_basenames_and_paths(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - name: shells\n"
				   "    basenames: [sh, bash]\n"
				   "    decision: audit\n"
				   "  - name: exact\n"
				   "    paths: [/usr/bin/curl]\n"
				   "    decision: deny\n"
				   "  - name: opt\n"
				   "    paths: [\"/opt/*/bin/*\"]\n"
				   "    decision: approval\n"
				   "  - name: tail-literal\n"
				   "    paths: [\"*/python3\"]\n"
				   "    decision: deny\n"
				   "  - name: anywhere\n"
				   "    paths: [\"*.sh\", \"/tmp/?x\"]\n"
				   "    decision: deny\n"
				   "  - name: both\n"
				   "    basenames: [tool]\n"
				   "    paths: [/srv/tool]\n"
				   "    decision: deny\n");
	struct req r = {};

	if (!p)
		return;
	ASSERT_STREQ(RULE_AT(p, 0, "sh", "-c", "x"), "shells", "basename sh");
	ASSERT_STREQ(RULE_AT(p, 0, "/bin/bash"), "shells", "basename bash, other dir");
	ASSERT_STREQ(RULE_AT(p, 0, "/bin/bashx"), "default", "basenames are exact");
	ASSERT_STREQ(RULE_AT(p, 0, "/usr/bin/curl"), "exact", "literal path");
	ASSERT_STREQ(RULE_AT(p, 0, "/usr/local/bin/curl"), "default", "literal path is exact");
	ASSERT_STREQ(RULE_AT(p, 0, "/opt/x/bin/tool"), "opt", "glob");
	ASSERT_STREQ(RULE_AT(p, 0, "/opt/x/y/bin/z/tool"), "opt", "'*' crosses '/'");
	ASSERT_STREQ(RULE_AT(p, 0, "/opt/tool"), "default", "glob needs its literals");
	ASSERT_STREQ(RULE_AT(p, 0, "/usr/bin/python3"), "tail-literal", "*/python3");
	ASSERT_STREQ(RULE_AT(p, 0, "/usr/bin/python3.11"), "default", "*/python3 is the whole tail");
	ASSERT_STREQ(RULE_AT(p, 0, "/home/u/x/run.sh"), "anywhere", "*.sh");
	ASSERT_STREQ(RULE_AT(p, 0, "/tmp/ax"), "anywhere", "?");
	ASSERT_STREQ(RULE_AT(p, 0, "/tmp/abx"), "default", "? is one character");
	ASSERT_STREQ(RULE_AT(p, 0, "/srv/tool"), "both", "basename and path");
	ASSERT_STREQ(RULE_AT(p, 0, "/usr/bin/tool"), "default", "basename without the path");
	/* The filename decides, not argv[0]. */
	r.filename = "/bin/sh";
	ASSERT_STREQ(eval_v(p, &r, ARGV("curl")).rule, "shells", "filename, not argv[0]");
	policy_free(p);
}

static void test_context_forms(void)
{
	struct eg_policy *p = load("default_decision: deny\n"
				   "commands:\n"
				   "  - {name: d, basenames: [a], context: [direct], decision: allow}\n"
				   "  - {name: n, basenames: [b], context: [nested], decision: allow}\n"
				   "  - {name: dn, basenames: [c], context: [direct, nested], decision: allow}\n"
				   "  - {name: min, basenames: [e], context: {min_depth: 2}, decision: allow}\n"
				   "  - {name: max, basenames: [f], context: {max_depth: 1}, decision: allow}\n"
				   "  - {name: all, basenames: [g], decision: allow}\n");
	int depth;

	if (!p)
		return;
	for (depth = 0; depth < 6; depth++) {
		char what[64];

		snprintf(what, sizeof(what), "depth %d", depth);
		ASSERT_EQ(strcmp(RULE_AT(p, depth, "a"), "d") == 0, depth == 0, what);
		ASSERT_EQ(strcmp(RULE_AT(p, depth, "b"), "n") == 0, depth >= 1, what);
		ASSERT_STREQ(RULE_AT(p, depth, "c"), "dn", what);
		ASSERT_EQ(strcmp(RULE_AT(p, depth, "e"), "min") == 0, depth >= 2, what);
		ASSERT_EQ(strcmp(RULE_AT(p, depth, "f"), "max") == 0, depth <= 1, what);
		ASSERT_STREQ(RULE_AT(p, depth, "g"), "all", what);
	}
	/* The launcher's own -1 counts as direct. */
	ASSERT_STREQ(RULE_AT(p, -1, "a"), "d", "depth -1");
	policy_free(p);
}

static void test_cgroups_and_uids(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - name: svc\n"
				   "    cgroups: [/system.slice/foo.service/]\n"
				   "    decision: deny\n"
				   "  - name: root-only\n"
				   "    uids: [0, 1001]\n"
				   "    basenames: [mount]\n"
				   "    decision: allow\n"
				   "  - name: mount-others\n"
				   "    basenames: [mount]\n"
				   "    decision: deny\n");
	struct req r = {};

	if (!p)
		return;
	r.cgroup = "/system.slice/foo.service";
	ASSERT_STREQ(eval_v(p, &r, ARGV("ls")).rule, "svc", "the cgroup itself");
	r.cgroup = "/system.slice/foo.service/sub/x";
	ASSERT_STREQ(eval_v(p, &r, ARGV("ls")).rule, "svc", "below it");
	r.cgroup = "/system.slice/foo.service2";
	ASSERT_TRUE(eval_v(p, &r, ARGV("ls")).rule == NULL, "a sibling with the same prefix");
	r.cgroup = "/system.slice";
	ASSERT_TRUE(eval_v(p, &r, ARGV("ls")).rule == NULL, "above it");
	r.cgroup = NULL;
	ASSERT_TRUE(eval_v(p, &r, ARGV("ls")).rule == NULL, "unknown cgroup");

	r.uid = 0;
	ASSERT_STREQ(eval_v(p, &r, ARGV("mount")).rule, "root-only", "uid 0");
	r.uid = 1001;
	ASSERT_STREQ(eval_v(p, &r, ARGV("mount")).rule, "root-only", "uid 1001");
	r.uid = 1000;
	ASSERT_STREQ(eval_v(p, &r, ARGV("mount")).rule, "mount-others", "uid 1000");
	policy_free(p);
}

static void test_decisions_and_messages(void)
{
	static const char *const names[] = { "allow", "deny", "approval", "audit" };
	char yaml[1024];
	int i, j;

	for (i = 0; i < 4; i++) {
		for (j = 0; j < 4; j++) {
			struct eg_policy *p;
			struct eg_verdict v;
			struct req r = {};
			enum eg_decision d;

			snprintf(yaml, sizeof(yaml),
				 "sandbox: {seccomp: {execve: {approval_timeout: 5s}}}\n"
				 "default_decision: %s\n"
				 "commands:\n"
				 "  - name: the-rule\n"
				 "    basenames: [x]\n"
				 "    decision: %s\n"
				 "    message: \"because %s\"\n", names[i], names[j], names[j]);
			p = load(yaml);
			if (!p)
				return;
			v = eval_v(p, &r, ARGV("x"));
			ASSERT_EQ(v.decision, j, names[j]);
			ASSERT_STREQ(v.rule, "the-rule", "rule");
			ASSERT_EQ(v.rule_index, 0, "rule index");
			{
				char want[32];

				snprintf(want, sizeof(want), "because %s", names[j]);
				ASSERT_STREQ(v.message, want, "message");
			}
			v = eval_v(p, &r, ARGV("y"));
			ASSERT_EQ(v.decision, i, "default_decision");
			ASSERT_TRUE(v.rule == NULL, "default has no rule");
			ASSERT_TRUE(v.message == NULL, "default has no message");
			ASSERT_EQ(v.rule_index, -1, "default rule index");
			ASSERT_OK(eg_decision_parse(names[j], &d), "parse");
			ASSERT_EQ(d, j, "parse value");
			ASSERT_STREQ(eg_decision_name(d), names[j], "name");
			policy_free(p);
		}
	}
}

static void test_first_match_wins(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - {name: one, basenames: [a], args: [x], decision: deny}\n"
				   "  - {name: two, paths: [\"*\"], decision: audit}\n"
				   "  - {name: three, basenames: [a], decision: allow}\n");

	if (!p)
		return;
	ASSERT_STREQ(RULE_AT(p, 0, "a", "x"), "one", "first");
	ASSERT_STREQ(RULE_AT(p, 0, "a", "y"), "two", "an unindexed rule between indexed ones");
	ASSERT_STREQ(RULE_AT(p, 0, "b"), "two", "glob *");
	policy_free(p);
}

static void test_truncated(void)
{
	static const char *const fmt =
		"sandbox: {seccomp: {execve: {on_truncated: %s, approval_timeout: 1s}}}\n"
		"commands:\n"
		"  - {name: no-rm, basenames: [rm], decision: deny}\n"
		"  - {name: ok-ls, basenames: [ls], decision: allow}\n"
		"  - {name: ask, basenames: [curl], decision: approval}\n";
	char yaml[512];
	struct eg_policy *p;
	struct eg_verdict v;
	struct req r = { .truncated = true };

	snprintf(yaml, sizeof(yaml), fmt, "deny");
	p = load(yaml);
	if (!p)
		return;
	v = eval_v(p, &r, ARGV("ls"));
	ASSERT_EQ(v.decision, EG_DECISION_DENY, "deny: allow rule overridden");
	ASSERT_STREQ(v.rule, "on_truncated", "deny: rule");
	ASSERT_EQ(v.rule_index, -1, "deny: no index");
	v = eval_v(p, &r, ARGV("other"));
	ASSERT_STREQ(v.rule, "on_truncated", "deny: default overridden");
	v = eval_v(p, &r, ARGV("rm"));
	ASSERT_STREQ(v.rule, "no-rm", "a deny stays the rule's deny");
	r.truncated = false;
	ASSERT_STREQ(eval_v(p, &r, ARGV("ls")).rule, "ok-ls", "not truncated");
	r.truncated = true;
	policy_free(p);

	snprintf(yaml, sizeof(yaml), fmt, "approval");
	p = load(yaml);
	if (!p)
		return;
	v = eval_v(p, &r, ARGV("ls"));
	ASSERT_EQ(v.decision, EG_DECISION_APPROVAL, "approval");
	ASSERT_STREQ(v.rule, "on_truncated", "approval: rule");
	v = eval_v(p, &r, ARGV("rm"));
	ASSERT_EQ(v.decision, EG_DECISION_DENY, "approval: deny stays");
	policy_free(p);

	snprintf(yaml, sizeof(yaml), fmt, "allow");
	p = load(yaml);
	if (!p)
		return;
	v = eval_v(p, &r, ARGV("ls"));
	ASSERT_STREQ(v.rule, "ok-ls", "allow keeps the result");
	v = eval_v(p, &r, ARGV("curl"));
	ASSERT_EQ(v.decision, EG_DECISION_APPROVAL, "allow keeps approval");
	ASSERT_STREQ(v.rule, "ask", "allow keeps the rule");
	policy_free(p);
}

static void test_internal_bypass_first(void)
{
	char dir[] = "/tmp/egbypass.XXXXXX", copy[64], cmd[160];
	struct eg_policy *p = load("sandbox:\n"
				   "  seccomp:\n"
				   "    execve:\n"
				   "      internal_bypass: [/usr/bin/true, \"fals?\"]\n"
				   "default_decision: deny\n"
				   "commands:\n"
				   "  - {name: no, paths: [\"*\"], decision: deny}\n");
	struct req r = { .truncated = true };
	struct eg_verdict v;
	struct stat st;

	if (!p)
		return;
	r.filename = "/usr/bin/true";
	v = eval_v(p, &r, ARGV("true"));
	ASSERT_EQ(v.decision, EG_DECISION_ALLOW, "bypass beats a deny rule and truncation");
	ASSERT_STREQ(v.rule, "internal_bypass", "bypass rule");
	ASSERT_EQ(v.rule_index, -1, "bypass has no rule index");
	r.filename = "/usr/bin/false";
	ASSERT_STREQ(eval_v(p, &r, ARGV("false")).rule, "internal_bypass", "a bare-name glob, in a system directory");
	r.filename = "/usr/bin/true2";
	ASSERT_STREQ(eval_v(p, &r, ARGV("a")).rule, "no", "literal is exact; a deny stays");
	/* a copy named like the entry, in a directory anyone can write: no bypass */
	if (ASSERT_TRUE(mkdtemp(dir) != NULL, "tmpdir")) {
		snprintf(copy, sizeof(copy), "%s/false", dir);
		snprintf(cmd, sizeof(cmd), "cp /usr/bin/false %s", copy);
		ASSERT_EQ(system(cmd), 0, "copy");
		r.filename = copy;
		ASSERT_STREQ(eval_v(p, &r, ARGV("false")).rule, "no", "a copy named false elsewhere");
		unlink(copy);
		rmdir(dir);
	}
	/*
	 * ... nor in a directory only root can write, outside the system
	 * directories: a bare name covers those only, whatever else the list
	 * holds (the check was made only when every entry was a bare name)
	 */
	if (geteuid() == 0) {
		char rdir[] = "/var/lib/egbypass.XXXXXX";

		if (ASSERT_TRUE(mkdtemp(rdir) != NULL, "root's tmpdir")) {
			chmod(rdir, 0755);
			snprintf(copy, sizeof(copy), "%s/false", rdir);
			snprintf(cmd, sizeof(cmd), "cp /usr/bin/false %s", copy);
			ASSERT_EQ(system(cmd), 0, "copy");
			r.filename = copy;
			ASSERT_STREQ(eval_v(p, &r, ARGV("false")).rule, "no", "a bare name outside the system directories");
			unlink(copy);
			rmdir(rdir);
		}
	}
	/* the real file, but seen in another mount namespace: no bypass */
	{
		struct eg_exec_req req = { .filename = "/usr/bin/true", .argv = ARGV("true"), .argc = 1,
					   .depth_known = true, .foreign_ns = true };

		policy_eval(p, &req, &v);
		ASSERT_STREQ(v.rule, "no", "another mount namespace's /usr/bin/true");
		/* the path with another file's identity (a tmpfs over the directory) */
		ASSERT_OK(stat("/usr/bin/false", &st), "stat");
		req.foreign_ns = false;
		req.dev = 1;
		req.ino = st.st_ino + 1;
		policy_eval(p, &req, &v);
		ASSERT_STREQ(v.rule, "no", "same path, another file");
	}
	r.truncated = false;
	r.filename = "/usr/bin/true2";
	ASSERT_STREQ(eval_v(p, &r, ARGV("a")).rule, "no", "no bypass");
	policy_free(p);
}

static void test_settings(void)
{
	struct eg_policy *p = load("sandbox:\n"
				   "  seccomp:\n"
				   "    enabled: false\n"
				   "    unix_socket: {enabled: no}\n"
				   "    execve:\n"
				   "      enabled: yes\n"
				   "      max_argc: 12\n"
				   "      max_argv_bytes: 4096\n"
				   "      on_truncated: allow\n"
				   "      approval_timeout: 1m30s\n"
				   "      approval_timeout_action: allow\n"
				   "default_decision: audit\n");
	const struct eg_policy_settings *s;
	struct eg_policy *d;

	if (!p)
		return;
	s = policy_settings(p);
	ASSERT_TRUE(s->execve_enabled, "enabled");
	ASSERT_EQ(s->max_argc, 12, "max_argc");
	ASSERT_EQ(s->max_argv_bytes, 4096, "max_argv_bytes");
	ASSERT_EQ(s->on_truncated, EG_DECISION_ALLOW, "on_truncated");
	ASSERT_EQ(s->approval_timeout_ms, 90000, "1m30s");
	ASSERT_EQ(s->approval_timeout_action, EG_TIMEOUT_ALLOW, "approval_timeout_action");
	ASSERT_EQ(s->default_decision, EG_DECISION_AUDIT, "default_decision");
	ASSERT_EQ(policy_rule_count(p), 0, "no rules");
	policy_free(p);

	d = load("commands: []\n");
	if (!d)
		return;
	s = policy_settings(d);
	ASSERT_FALSE(s->execve_enabled, "default enabled");
	ASSERT_EQ(s->max_argc, 1000, "default max_argc");
	ASSERT_EQ(s->max_argv_bytes, 65536, "default max_argv_bytes");
	ASSERT_EQ(s->on_truncated, EG_DECISION_DENY, "default on_truncated");
	ASSERT_EQ(s->approval_timeout_ms, 10000, "default approval_timeout");
	ASSERT_FALSE(s->approval_timeout_set, "approval_timeout not set");
	ASSERT_EQ(s->approval_timeout_action, EG_TIMEOUT_DENY, "default approval_timeout_action");
	ASSERT_EQ(s->default_decision, EG_DECISION_ALLOW, "default default_decision");
	policy_free(d);
}

static void test_durations(void)
{
	static const struct {
		const char *s;
		int64_t ms;		/* -1: invalid */
	} cases[] = {
		{ "10s", 10000 }, { "500ms", 500 }, { "2m", 120000 }, { "1h", 3600000 },
		{ "1m30s", 90000 }, { "10", 10000 }, { "1.5", 1500 }, { "0.25s", 250 },
		{ "1h2m3s4ms", 3723004 }, { "", -1 }, { "s", -1 }, { "10x", -1 }, { "-1s", -1 },
		{ "1e3", -1 }, { "0x10", -1 }, { "1..2s", -1 }, { "10 s", -1 }, { "inf", -1 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t ms = 0;
		int rc = eg_parse_duration_ms(cases[i].s, &ms);

		if (cases[i].ms < 0) {
			ASSERT_ERR(rc, cases[i].s);
		} else if (ASSERT_OK(rc, cases[i].s)) {
			ASSERT_EQ(ms, cases[i].ms, cases[i].s);
		}
	}
	load_fails_at("sandbox:\n  seccomp:\n    execve:\n      approval_timeout: 10 seconds\n", 4, 25,
		      "'approval_timeout' must be a duration like 10s");
	load_fails_at("sandbox: {seccomp: {execve: {approval_timeout: 0s}}}\n", 1, 48, "from 1ms to 24h");
	load_fails_at("sandbox: {seccomp: {execve: {approval_timeout: 25h}}}\n", 1, 48, "from 1ms to 24h");
}

/* ---- errors, with their places ---- */

static void test_error_misspelled_key(void)
{
	load_fails_at("commands:\n"
		      "  - name: a\n"
		      "    basenames: [ls]\n"
		      "    decision: allow\n"
		      "  - name: b\n"
		      "    decision: deny\n"
		      "    basename: [rm]\n",
		      7, 5, "unknown key 'basename' in a rule; did you mean 'basenames'?");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    args_pattern: [x]\n", 4, 5,
		      "did you mean 'args_patterns'?");
	load_fails_at("comands: []\n", 1, 1, "unknown key 'comands' at the top level; did you mean 'commands'?");
	load_fails_at("commands:\n  - name: a\n    decisoin: allow\n", 3, 5, "did you mean 'decision'?");
	load_fails_at("approval_timeout: 10s\n", 1, 1, "'approval_timeout' does not belong at the top level; "
		      "it goes in sandbox.seccomp.execve");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    color: red\n", 4, 5,
		      "unknown key 'color' in a rule (known keys: name, basenames");
}

static void test_error_types(void)
{
	load_fails_at("commands:\n  - name: a\n    basenames: git\n    decision: allow\n", 3, 16,
		      "'basenames' must be a list of names, e.g. [git], got 'git'");
	load_fails_at("commands:\n  - name: a\n    basenames: [[git]]\n    decision: allow\n", 3, 17,
		      "items of 'basenames' must be strings, got a list");
	load_fails_at("commands:\n  - name: a\n    basenames: []\n    decision: allow\n", 3, 16,
		      "'basenames' is an empty list");
	load_fails_at("commands:\n  - name: a\n    decision: maybe\n", 3, 15,
		      "'decision' must be allow, deny, approval, audit or redirect, got 'maybe'");
	load_fails_at("commands:\n  - name: a\n    decision: aproval\n", 3, 15, "did you mean 'approval'?");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    uids: [root]\n", 4, 12,
		      "'uids' must be an integer from 0 to");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    context: direct\n", 4, 14,
		      "'context' must be [direct], [nested], [direct, nested] or {min_depth: N, max_depth: M}");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    context: [sideways]\n", 4, 15,
		      "context must list 'direct' and/or 'nested', got 'sideways'");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    context: [direct, nestd]\n", 4, 23,
		      "got 'nestd'; did you mean 'nested'?");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    context: {min_depth: 3, max_depth: 1}\n",
		      4, 14, "min_depth 3 is above max_depth 1");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    context: {min_depth: -1}\n", 4, 26,
		      "'min_depth' must be an integer from 0");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    cgroups: [system.slice]\n", 4, 15,
		      "must be a path from the cgroup v2 root");
	load_fails_at("sandbox: {seccomp: {execve: {max_argc: lots}}}\n", 1, 40, "'max_argc' must be an integer");
	load_fails_at("sandbox: {seccomp: {execve: {max_argc: \"12\"}}}\n", 1, 40,
		      "'max_argc' must be an integer, got a quoted string");
	load_fails_at("sandbox: {seccomp: {execve: {max_argc: 0}}}\n", 1, 40, "from 1 to");
	load_fails_at("sandbox: {seccomp: {execve: {enabled: maybe}}}\n", 1, 39, "'enabled' must be true or false");
	load_fails_at("sandbox: {seccomp: {execve: {on_truncated: audit}}}\n", 1, 44,
		      "'on_truncated' must be allow, deny or approval");
	load_fails_at("sandbox: {seccomp: {execve: {approval_timeout_action: approval}}}\n", 1, 55,
		      "'approval_timeout_action' must be allow or deny");
	load_fails_at("commands: {name: a}\n", 1, 11, "'commands' must be a list of rules");
	load_fails_at("commands:\n  - just-a-string\n", 2, 5, "each item of 'commands' must be a rule mapping");
	load_fails_at("- a\n- b\n", 1, 1, "a policy is a mapping");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    message: [x]\n", 4, 14,
		      "'message' must be a string");
}

/* filesystem:, network:, environment:, on_unsupported: (the session's boundary, issue 18) */
static void test_boundary_sections(void)
{
	const struct eg_policy_boundary *b;
	struct eg_policy *p;

	p = load("filesystem:\n  read: [/]\n  write: [workspace, /dev/null]\n  execute: []\n"
		 "network: {connect_tcp: [443, 47811], bind_tcp: []}\n"
		 "environment: {deny: [corp_*, X]}\non_unsupported: allow\ncommands: []\n");
	if (!ASSERT_TRUE(p, "a policy with every section"))
		return;
	b = policy_boundary(p);
	ASSERT_TRUE(b->filesystem && b->network && b->on_unsupported_allow, "sections seen");
	ASSERT_TRUE(b->layer.read.set && b->layer.read.n == 1 && !strcmp(b->layer.read.v[0], "/"), "read");
	ASSERT_TRUE(b->layer.write.n == 2 && !strcmp(b->layer.write.v[0], "workspace"), "write");
	/* an empty list is a list: nothing of that kind is allowed */
	ASSERT_TRUE(b->layer.execute.set && !b->layer.execute.n, "execute: []");
	ASSERT_TRUE(b->layer.connect_tcp.n == 2 && b->layer.connect_tcp.v[1] == 47811, "connect_tcp");
	ASSERT_TRUE(b->layer.bind_tcp.set && !b->layer.bind_tcp.n, "bind_tcp: []");
	ASSERT_FALSE(b->layer.scopes, "scopes are the daemon's to add");
	ASSERT_TRUE(b->n_env_deny == 2 && !strcmp(b->env_deny[0], "CORP_*"), "deny names, upper case");
	policy_free(p);
	p = load("commands: []\n");
	if (ASSERT_TRUE(p, "no sections")) {
		b = policy_boundary(p);
		ASSERT_FALSE(b->filesystem || b->network || b->n_env_deny || b->on_unsupported_allow, "defaults");
		ASSERT_FALSE(b->layer.read.set || b->layer.connect_tcp.set, "nothing limited");
		policy_free(p);
	}
	load_fails_at("filesystem: {read: [etc]}\n", 1, 21, "absolute paths or the word workspace");
	load_fails_at("filesystem: {wirte: [/]}\n", 1, 14, "did you mean 'write'?");
	load_fails_at("network: {connect_tcp: [70000]}\n", 1, 25, "from 0 to 65535");
	load_fails_at("network: {connect_tcp: 443}\n", 1, 24, "'connect_tcp' must be");
	load_fails_at("environment: {deny: [A=1]}\n", 1, 22, "without '='");
	load_fails_at("on_unsupported: maybe\n", 1, 17, "'on_unsupported' is deny or allow");
	load_fails_at("read: [/]\n", 1, 1, "'read' does not belong at the top level; it goes in filesystem");
}

static void test_error_rules(void)
{
	load_fails_at("commands:\n  - name: \"\"\n    decision: allow\n", 2, 11, "rule name is empty");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n  - name: a\n    decision: deny\n", 4, 11,
		      "duplicate rule name 'a' (first at line 2)");
	load_fails_at("commands:\n  - basenames: [ls]\n    decision: allow\n", 2, 5, "rule has no 'name'");
	load_fails_at("commands:\n  - name: x\n    basenames: [ls]\n", 2, 5, "rule 'x' has no 'decision'");
	load_fails_at("commands:\n  - name: x\n    decision: allow\n    decision: deny\n", 4, 5,
		      "duplicate key 'decision' in a rule (first at line 3)");
	load_fails_at("commands:\n  - name: default\n    decision: allow\n", 2, 11, "rule name 'default' is reserved");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    args_patterns: [\"-(r\"]\n", 4, 21,
		      "bad regular expression '-(r' in 'args_patterns': missing closing parenthesis");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    args: [\"[z-a]\"]\n", 4, 12,
		      "bad regular expression '[z-a]' in 'args'");
	load_fails_at("commands:\n  - name: a\n    decision: allow\n    basenames: [\"a\\0b\"]\n", 4, 17,
		      "contains a NUL byte");
}

/*
 * Errors the load goes on past, to report more, leave nothing half made for
 * what comes after: a context with no name (a rule naming a context then
 * compared every context's name, NULL included: the daemon, which loads a
 * session's policy from any user, crashed), an identity with a name (its
 * index went into the rules' name table, and a rule of the same name read
 * the message's line past the rules).
 */
static void test_errors_leave_nothing_half_made(void)
{
	load_fails_at("contexts:\n  - identities: [{basenames: [x]}]\ncommands:\n"
		      "  - {name: r, contexts: [foo], decision: deny}\n", 2, 5, "context has no 'name'");
	load_fails_at("contexts:\n  - identities: [{basenames: [x]}]\ncommands:\n"
		      "  - {name: r, contexts: [foo], decision: deny}\n", 4, 26, "names context 'foo'");
	load_fails_at("contexts:\n  - name: c\n    identities: [{name: twin, basenames: [x]}]\ncommands:\n"
		      "  - {name: twin, basenames: [y], decision: deny}\n", 3, 19, "does not belong in an identity");
	/* the names verdicts carry when no rule decided them */
	load_fails_at("commands:\n  - name: on_error\n    decision: allow\n", 2, 11, "rule name 'on_error' is reserved");
	load_fails_at("commands:\n  - name: ticket\n    decision: allow\n", 2, 11, "rule name 'ticket' is reserved");
}

/* A session's policy (POLICY_LOAD_NO_FILES): no contexts (its rules are judged outside any), no file looked at. */
static void test_session_policy_limits(void)
{
	static const char ctx[] = "contexts:\n  - name: c\n    identities: [{basenames: [x]}]\ncommands: []\n";
	static const char redirect[] = "commands:\n  - {name: r, basenames: [grep], decision: redirect, "
				       "redirect_to: /root/.nothing-here}\n";
	struct eg_policy *p = NULL;
	struct eg_diags d = {};

	ASSERT_ERR(policy_load_buf_flags(ctx, strlen(ctx), "s.yaml", POLICY_LOAD_NO_FILES, &p, &d), "contexts refused");
	ASSERT_OK_PTR(find_diag(&d, false, "'contexts' belongs in the daemon's policy"), "said why");
	eg_diags_free(&d);
	p = load(ctx);
	ASSERT_OK_PTR(p, "the daemon's own policy has them");
	policy_free(p);
	p = NULL;
	/* the daemon says nothing of a file a session's policy names: not whether it is there */
	ASSERT_OK(policy_load_buf_flags(redirect, strlen(redirect), "s.yaml", POLICY_LOAD_NO_FILES, &p, &d),
		  "a session's redirect_to is not looked at");
	policy_free(p);
	eg_diags_free(&d);
	p = NULL;
	ASSERT_ERR(policy_load_buf(redirect, strlen(redirect), "t.yaml", &p, &d), "the daemon's own is");
	eg_diags_free(&d);
}

static void test_error_yaml(void)
{
	load_fails_at("", 1, 1, "the policy is empty");
	load_fails_at("# only a comment\n", 1, 1, "the policy is empty");
	load_fails_at("commands: [\n", 2, 1, "YAML syntax");
	load_fails_at("commands:\n  - name: a\n   decision: allow\n", 3, 4, "YAML syntax");
	load_fails_at("x: &a [1]\ny: *a\n", 2, 4, "aliases (*a) are not supported");
	load_fails_at("commands: []\n---\ncommands: []\n", 2, 1, "one YAML document");
	load_fails_at("hello world\n", 1, 1, "a policy is a mapping");
	load_fails_at("commands: []\n\x01\n", 2, 1, "not a YAML text");
	/* More errors than one: all reported. */
	{
		static const char y[] = "commands:\n  - name: a\n    decision: nope\n  - name: b\n    decision: nah\n";
		struct eg_policy *p = NULL;
		struct eg_diags d = {};

		ASSERT_ERR(policy_load_buf(y, strlen(y), "t.yaml", &p, &d), "two bad rules");
		ASSERT_EQ(eg_diags_errors(&d), 2, "both reported");
		eg_diags_free(&d);
	}
}

static void test_diag_format(void)
{
	struct eg_diag g = { .file = "p.yaml", .line = 7, .column = 5, .msg = "oops" };
	char buf[128];

	eg_diag_format(&g, buf, sizeof(buf));
	ASSERT_STREQ(buf, "p.yaml:7:5: error: oops", "error line");
	g.warning = true;
	g.line = 0;
	eg_diag_format(&g, buf, sizeof(buf));
	ASSERT_STREQ(buf, "p.yaml: warning: oops", "warning without a place");
}

/* ---- lint ---- */

static bool has_warning(const char *yaml, const char *substr)
{
	struct eg_diags d = {};
	struct eg_policy *p = load_d(yaml, &d);
	bool found = find_diag(&d, true, substr) != NULL;

	policy_free(p);
	eg_diags_free(&d);
	return found;
}

static size_t n_warnings(const char *yaml)
{
	struct eg_diags d = {};
	struct eg_policy *p = load_d(yaml, &d);
	size_t n = d.n - eg_diags_errors(&d);

	if (n)
		dump_diags(&d);
	policy_free(p);
	eg_diags_free(&d);
	return n;
}

static void test_lint_shadowed(void)
{
	ASSERT_TRUE(has_warning("commands:\n"
				"  - {name: tools, basenames: [ls, cat], decision: allow}\n"
				"  - {name: cat-nested, basenames: [cat], context: [nested], decision: deny}\n",
				"rule 'cat-nested' can never match: rule 'tools' (line 2) comes first"),
		    "basenames subset");
	ASSERT_TRUE(has_warning("commands:\n"
				"  - {name: any-nested, context: [nested], decision: audit}\n"
				"  - {name: cc, basenames: [cc], context: {min_depth: 2, max_depth: 4}, decision: deny}\n",
				"rule 'cc' can never match: rule 'any-nested'"), "depth range inside");
	ASSERT_TRUE(has_warning("commands:\n"
				"  - {name: bin, paths: [\"/usr/bin/*\"], decision: audit}\n"
				"  - {name: curl, paths: [/usr/bin/curl], decision: deny}\n",
				"rule 'curl' can never match: rule 'bin'"), "glob covers a literal path");
	ASSERT_TRUE(has_warning("commands:\n"
				"  - {name: svc, cgroups: [/system.slice], uids: [0, 1], decision: audit}\n"
				"  - {name: sub, cgroups: [/system.slice/a], uids: [1], basenames: [x], decision: deny}\n",
				"rule 'sub' can never match: rule 'svc'"), "cgroup below, uid subset");
	ASSERT_TRUE(has_warning("commands:\n"
				"  - {name: curl, basenames: [curl], decision: audit}\n"
				"  - {name: curl-args, basenames: [curl], args: [\"-X\"], decision: deny}\n",
				"rule 'curl-args' can never match"), "args on the later rule only");
	/* Not shadowed: the earlier rule has args, a narrower context, other names, a uid set... */
	ASSERT_EQ(n_warnings("commands:\n"
			     "  - {name: a, basenames: [rm], args: [\"-rf\"], decision: deny}\n"
			     "  - {name: b, basenames: [rm], decision: allow}\n"
			     "  - {name: c, basenames: [git], context: [direct], decision: allow}\n"
			     "  - {name: d, basenames: [git], decision: deny}\n"
			     "  - {name: e, basenames: [ls], decision: allow}\n"
			     "  - {name: f, basenames: [ls, cat], decision: deny}\n"
			     "  - {name: g, uids: [0], basenames: [su], decision: allow}\n"
			     "  - {name: h, basenames: [su], decision: deny}\n"
			     "  - {name: i, paths: [\"/opt/*\"], decision: audit}\n"
			     "  - {name: j, paths: [\"/opt2/*\"], decision: audit}\n"),
		  0, "no false positives");
}

static void test_lint_other(void)
{
	/* matchers that never match, silently: a basename compared whole, a path that is a directory */
	ASSERT_TRUE(has_warning("commands:\n  - {name: py, basenames: [\"python*\"], decision: deny}\n",
				"basename 'python*' in rule 'py' is compared whole, not as a glob"), "glob in basenames");
	ASSERT_TRUE(has_warning("commands:\n  - {name: t, paths: [/opt/tools/], decision: deny}\n",
				"path '/opt/tools/' in rule 't' ends with '/'"), "a directory in paths");
	ASSERT_FALSE(has_warning("commands:\n  - {name: t, paths: [/opt/tools/*], basenames: [python3], decision: deny}\n",
				 "never matches"), "a glob under a directory, a plain basename");
	ASSERT_TRUE(has_warning("commands:\n  - {name: all, decision: deny}\n", "rule 'all' has no matcher"),
		    "no matcher");
	ASSERT_TRUE(has_warning("commands:\n  - {name: all, context: [direct, nested], decision: deny}\n",
				"has no matcher"), "a context that is every depth is no matcher");
	ASSERT_TRUE(has_warning("commands:\n  - {name: ask, basenames: [curl], decision: approval}\n",
				"rule 'ask' asks for approval but sandbox.seccomp.execve.approval_timeout is not set"),
		    "approval without timeout");
	ASSERT_FALSE(has_warning("sandbox: {seccomp: {execve: {approval_timeout: 30s}}}\n"
				 "commands:\n  - {name: ask, basenames: [curl], decision: approval}\n",
				 "asks for approval"), "approval with a timeout");
	ASSERT_TRUE(has_warning("commands:\n  - {name: r, basenames: [rm], args_patterns: [\"x?\"], decision: deny}\n",
				"pattern 'x?' in rule 'r' matches the empty string"), "x? matches empty");
	ASSERT_TRUE(has_warning("commands:\n  - {name: r, basenames: [/bin/rm], decision: deny}\n",
				"basename '/bin/rm' contains '/'"), "basename with a slash");
	ASSERT_TRUE(has_warning("sandbox: {seccomp: {execve: {internal_bypass: [helper]}}}\ncommands: []\n",
				"has no directory: it covers files so named in the system binary directories"),
		    "a bare-name bypass says where it applies");
	ASSERT_TRUE(has_warning("sandbox: {seccomp: {execve: {internal_bypass: [\"x/y\"]}}}\ncommands: []\n",
				"is not an absolute path"), "relative bypass");
	/* paths are judged resolved: spellings that can never be the resolved file */
	ASSERT_TRUE(has_warning("commands:\n  - {name: r, paths: [/opt/../usr/bin/curl], decision: deny}\n",
				"can only match how a command is typed"), "a path with ..");
	ASSERT_TRUE(has_warning("commands:\n  - {name: r, paths: [\"//tmp/evil\"], decision: deny}\n",
				"can only match how a command is typed"), "a path with //");
	ASSERT_TRUE(has_warning("commands:\n  - {name: r, paths: [bin/curl], decision: deny}\n",
				"is not absolute"), "a relative path");
	{
		char dir[] = "/tmp/eglint.XXXXXX", real[64], link[64], yaml[256], want[256];

		if (ASSERT_TRUE(mkdtemp(dir) != NULL, "tmpdir")) {
			snprintf(real, sizeof(real), "%s/real", dir);
			snprintf(link, sizeof(link), "%s/link", dir);
			mkdir(real, 0755);
			ASSERT_OK(symlink(real, link), "symlink");
			snprintf(yaml, sizeof(yaml), "commands:\n  - {name: r, paths: [%s/tool], decision: deny}\n", link);
			/* the tool does not exist yet: its directory resolves elsewhere */
			snprintf(want, sizeof(want), "write '%s/tool'", real);
			ASSERT_TRUE(has_warning(yaml, want), "a path through a symlinked directory");
			snprintf(yaml, sizeof(yaml), "commands:\n  - {name: r, paths: [\"%s/*\"], decision: deny}\n", link);
			snprintf(want, sizeof(want), "write '%s/*'", real);
			ASSERT_TRUE(has_warning(yaml, want), "a glob through a symlinked directory");
			unlink(link);
			rmdir(real);
			rmdir(dir);
		}
	}
	ASSERT_EQ(n_warnings("sandbox: {seccomp: {execve: {approval_timeout: 5s, internal_bypass: "
			     "[/usr/local/bin/agentsh, \"/usr/bin/*.real\"]}}}\n"
			     "commands:\n"
			     "  - {name: r, basenames: [rm], args_patterns: [\"-(r|rf|fr)\"], decision: deny}\n"
			     "  - {name: n, basenames: [curl], context: [nested], decision: approval}\n"),
		  0, "a clean policy has no warnings");
}

/* ---- the index gives the answers of a scan in file order ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static void random_rule(char *buf, size_t len, int i)
{
	static const char *const names[] = { "a", "b", "rm", "git", "curl", "sh" };
	static const char *const paths[] = {
		"/usr/bin/a", "/usr/bin/*", "*/rm", "/opt/*/bin/b", "/opt/x/*", "*sh", "/usr/*/git",
		"/usr/bin/[a-c]", "b", "/opt/?/bin/*", "*",
	};
	static const char *const ctxs[] = { "", "context: [direct], ", "context: [nested], ",
					    "context: {min_depth: 1, max_depth: 2}, " };
	static const char *const args[] = { "", "args: [\"-r\"], ", "args_patterns: [\"-r\"], ",
					    "args_patterns: [\"x y\"], " };
	static const char *const decs[] = { "allow", "deny", "audit" };
	size_t off;

	off = snprintf(buf, len, "  - {name: r%d, ", i);
	if (rnd(3) == 0) {
		uint32_t a = rnd(6), b = rnd(6);

		off += snprintf(buf + off, len - off, "basenames: [%s, %s], ", names[a], names[b]);
	}
	if (rnd(2) == 0)
		off += snprintf(buf + off, len - off, "paths: [\"%s\"], ", paths[rnd(11)]);
	if (rnd(4) == 0)
		off += snprintf(buf + off, len - off, "uids: [%u], ", rnd(2));
	if (rnd(5) == 0)
		off += snprintf(buf + off, len - off, "cgroups: [/s%u], ", rnd(2));
	{
		uint32_t c = rnd(4), a = rnd(4), d = rnd(3);

		off += snprintf(buf + off, len - off, "%s%sdecision: %s}\n", ctxs[c], args[a], decs[d]);
	}
}

static void test_index_equals_scan(void)
{
	static const char *const files[] = {
		"/usr/bin/a", "/usr/bin/b", "/usr/bin/rm", "/bin/rm", "/usr/local/git", "/usr/bin/git",
		"/opt/x/bin/b", "/opt/y/bin/b", "/opt/x/a", "/bin/sh", "/bin/bash", "curl", "b", "/usr/bin/c",
		"/opt/q/bin/zz",
	};
	enum { NRULES = 40, NREQ = 3000 };
	static char rules[NRULES][256];
	struct eg_policy *all = NULL, *one[NRULES] = {};
	char yaml[NRULES * 256 + 64];
	size_t off;
	int i, k, bad = 0;

	off = snprintf(yaml, sizeof(yaml), "commands:\n");
	for (i = 0; i < NRULES; i++) {
		random_rule(rules[i], sizeof(rules[i]), i);
		off += snprintf(yaml + off, sizeof(yaml) - off, "%s", rules[i]);
	}
	all = load(yaml);
	for (i = 0; i < NRULES; i++) {
		char y1[320];

		if (snprintf(y1, sizeof(y1), "commands:\n%s", rules[i]) >= (int)sizeof(y1))
			goto out;
		one[i] = load(y1);
		if (!one[i])
			goto out;
	}
	if (!all)
		goto out;
	for (k = 0; k < NREQ && bad < 5; k++) {
		static const char *const a1[] = { "-r", "x", "-rf", "y" };
		const char *argv[4] = { "prog", a1[rnd(4)], a1[rnd(4)], NULL };
		static char cg[8];
		struct req r = { .depth = (int)rnd(4), .uid = rnd(2) };
		struct eg_verdict v;
		int want = -1;

		snprintf(cg, sizeof(cg), "/s%u", rnd(3));
		r.cgroup = rnd(4) ? cg : NULL;
		r.filename = files[rnd(sizeof(files) / sizeof(files[0]))];
		if (rnd(3) == 0)
			argv[2] = NULL;
		for (i = 0; i < NRULES && want < 0; i++)
			if (eval_v(one[i], &r, argv).rule_index == 0)
				want = i;
		v = eval_v(all, &r, argv);
		if (!ASSERT_EQ(v.rule_index, want, r.filename)) {
			printf("      depth %d uid %u cgroup %s argv %s %s\n", r.depth, r.uid,
			       r.cgroup ? r.cgroup : "-", argv[1], argv[2] ? argv[2] : "");
			bad++;
		}
	}
out:
	policy_free(all);
	for (i = 0; i < NRULES; i++)
		policy_free(one[i]);
}

static void test_rule_info(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - name: x\n"
				   "    basenames: [a, b]\n"
				   "    paths: [\"/opt/*\"]\n"
				   "    cgroups: [/c]\n"
				   "    uids: [7]\n"
				   "    args: [q]\n"
				   "    args_patterns: [r, s]\n"
				   "    context: {min_depth: 1}\n"
				   "    decision: approval\n"
				   "    message: hi\n");
	struct eg_rule_info ri;

	if (!p)
		return;
	if (ASSERT_OK(policy_rule_info(p, 0, &ri), "rule 0")) {
		ASSERT_STREQ(ri.name, "x", "name");
		ASSERT_STREQ(ri.message, "hi", "message");
		ASSERT_EQ(ri.decision, EG_DECISION_APPROVAL, "decision");
		ASSERT_EQ(ri.line, 2, "line");
		ASSERT_EQ(ri.column, 5, "column");
		ASSERT_EQ(ri.n_basenames, 2, "basenames");
		ASSERT_STREQ(ri.basenames[1], "b", "basename");
		ASSERT_EQ(ri.n_paths, 1, "paths");
		ASSERT_STREQ(ri.cgroups[0], "/c", "cgroup");
		ASSERT_EQ(ri.uids[0], 7, "uid");
		ASSERT_EQ(ri.n_args, 1, "args");
		ASSERT_EQ(ri.n_args_patterns, 2, "args_patterns");
		ASSERT_EQ(ri.min_depth, 1, "min_depth");
		ASSERT_EQ(ri.max_depth, -1, "max_depth unbounded");
	}
	ASSERT_STREQ(policy_rule_regex(p, 0, true, 0), "q", "args source");
	ASSERT_STREQ(policy_rule_regex(p, 0, false, 1), "s", "args_patterns source");
	ASSERT_TRUE(policy_rule_regex(p, 0, true, 1) == NULL, "past the end");
	ASSERT_EQ(policy_rule_info(p, 1, &ri), -ERANGE, "out of range");
	policy_free(p);
}

static void test_sha256_of_file(void)
{
	static const char y[] = "commands: []\n";
	struct eg_policy *p = load(y);

	if (!p)
		return;
	/* sha256("commands: []\n"), from sha256sum. */
	ASSERT_STREQ(policy_sha256(p), "287258b629a2b80224a65b8df92b834b28c9d3ae981f43ab2d9c72f6adeac010",
		     "sha256 of the bytes");
	policy_free(p);
}

/* ---- limits: bounded memory, clear errors, no crash ---- */

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

struct gen {
	char *buf;
	size_t len, cap;
};

static void gen_printf(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gen_printf(struct gen *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (g->cap - g->len < 4096) {
		g->cap = g->cap ? g->cap * 2 : 1 << 20;
		g->buf = realloc(g->buf, g->cap);
		if (!g->buf)
			abort();
	}
	va_start(ap, fmt);
	n = vsnprintf(g->buf + g->len, g->cap - g->len, fmt, ap);
	va_end(ap);
	g->len += n;
}

static void test_limit_100k_rules(void)
{
	struct gen g = {};
	struct eg_policy *p = NULL;
	struct eg_diags d = {};
	long before = maxrss_kb();
	int i;

	gen_printf(&g, "commands:\n");
	for (i = 0; i < 100000; i++)
		gen_printf(&g, "  - name: rule-%d\n    basenames: [tool%d, bin%d]\n    decision: %s\n",
			   i, i, i % 977, i % 2 ? "deny" : "allow");
	if (ASSERT_OK(policy_load_buf(g.buf, g.len, "big.yaml", &p, &d), "100000 rules load")) {
		ASSERT_EQ(policy_rule_count(p), 100000, "count");
		ASSERT_STREQ(RULE_AT(p, 0, "tool99999"), "rule-99999", "last rule");
		ASSERT_STREQ(RULE_AT(p, 0, "bin5"), "rule-5", "first rule of a shared basename");
	}
	/* ~100 MB would mean something grows with the square of the rules. */
	ASSERT_TRUE(maxrss_kb() - before < 400 * 1024, "memory stays bounded");
	policy_free(p);
	eg_diags_free(&d);
	free(g.buf);
}

static void test_limit_10mb_file(void)
{
	struct gen g = {};
	struct eg_policy *p = NULL;
	struct eg_diags d = {};
	long before = maxrss_kb();
	char path[] = "/tmp/execgate-test-policy-XXXXXX";
	int i = 0, fd;

	gen_printf(&g, "default_decision: audit\ncommands:\n");
	while (g.len < 10u << 20) {
		gen_printf(&g, "  - name: r%d\n    paths: [\"/opt/app%d/bin/*\", /usr/lib/x%d]\n"
			   "    args: [\"--opt-%d=.*\"]\n    context: {min_depth: %d}\n"
			   "    decision: deny\n    message: \"%0200d\"\n", i, i, i, i, i % 5, i);
		i++;
	}
	fd = mkstemp(path);
	if (!ASSERT_TRUE(fd >= 0, "mkstemp"))
		goto out;
	ASSERT_EQ(write(fd, g.buf, g.len), (ssize_t)g.len, "write");
	close(fd);
	if (ASSERT_OK(policy_load_file(path, &p, &d), "a 10 MB policy loads")) {
		struct req r = { .depth = 4, .filename = "/opt/app42/bin/x" };

		ASSERT_TRUE(policy_rule_count(p) > 20000, "rules");
		ASSERT_STREQ(eval_v(p, &r, ARGV("x", "--opt-42=1")).rule, "r42", "matches");
	}
	ASSERT_TRUE(maxrss_kb() - before < 1024 * 1024, "memory stays bounded");
	unlink(path);
out:
	policy_free(p);
	eg_diags_free(&d);
	free(g.buf);
}

static void test_limit_file_size(void)
{
	char path[] = "/tmp/execgate-test-policy-XXXXXX";
	size_t len = (16u << 20) + 1;
	struct eg_policy *p = NULL;
	struct eg_diags d = {};
	char *buf = malloc(len);
	int fd;

	if (!ASSERT_OK_PTR(buf, "malloc"))
		return;
	memset(buf, '#', len);
	ASSERT_EQ(policy_load_buf(buf, len, "huge.yaml", &p, &d), -EFBIG, "buffer over 16 MiB");
	ASSERT_OK_PTR(find_diag(&d, false, "the limit is 16 MiB"), "says why");
	eg_diags_free(&d);
	fd = mkstemp(path);
	if (ASSERT_TRUE(fd >= 0, "mkstemp")) {
		ASSERT_EQ(write(fd, buf, len), (ssize_t)len, "write");
		close(fd);
		ASSERT_EQ(policy_load_file(path, &p, &d), -EFBIG, "file over 16 MiB");
		ASSERT_OK_PTR(find_diag(&d, false, "policies are limited to 16 MiB"), "says why");
		unlink(path);
	}
	ASSERT_TRUE(p == NULL, "no policy");
	eg_diags_free(&d);
	ASSERT_EQ(policy_load_file("/nonexistent/policy.yaml", &p, &d), -ENOENT, "missing file");
	ASSERT_OK_PTR(find_diag(&d, false, "cannot open"), "says so");
	eg_diags_free(&d);
	ASSERT_EQ(policy_load_file("/tmp", &p, &d), -EISDIR, "a directory");
	eg_diags_free(&d);
	free(buf);
}

static void test_limit_deep_nesting(void)
{
	size_t n = 100000, i;
	char *buf = malloc(2 * n + 16);
	long before = maxrss_kb();

	if (!ASSERT_OK_PTR(buf, "malloc"))
		return;
	memset(buf, '[', n);
	memset(buf + n, ']', n);
	buf[2 * n] = '\0';
	load_fails_at(buf, 1, 65, "YAML nested deeper than 64 levels");
	/* Block style, a mapping per level. */
	{
		struct gen g = {};

		for (i = 0; i < 2000; i++)
			gen_printf(&g, "%*sk:\n", (int)i, "");
		load_fails_at(g.buf, 65, 65, "nested deeper than 64");
		free(g.buf);
	}
	/* Flow mappings: {a: {a: ... */
	{
		struct gen g = {};

		for (i = 0; i < 50000; i++)
			gen_printf(&g, "{a: ");
		load_fails_at(g.buf, 1, 0, "nested deeper than 64");
		free(g.buf);
	}
	ASSERT_TRUE(maxrss_kb() - before < 64 * 1024, "memory stays bounded");
	free(buf);
}

static void test_limit_not_yaml(void)
{
	unsigned char junk[4096];
	struct eg_policy *p = NULL;
	struct eg_diags d = {};
	size_t i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)rnd(256);
	ASSERT_ERR(policy_load_buf((const char *)junk, sizeof(junk), "junk", &p, &d), "random bytes");
	ASSERT_TRUE(eg_diags_errors(&d) >= 1, "an error");
	eg_diags_free(&d);
	/* An ELF header, a NUL in the middle, a lone invalid UTF-8 byte. */
	ASSERT_ERR(policy_load_buf("\x7f" "ELF\x02\x01\x01", 7, "elf", &p, &d), "ELF");
	eg_diags_free(&d);
	ASSERT_ERR(policy_load_buf("commands: []\n\0x", 15, "nul", &p, &d), "NUL byte");
	ASSERT_OK_PTR(find_diag(&d, false, "not a YAML text"), "NUL is not YAML");
	eg_diags_free(&d);
	load_fails_at("commands: [caf\xe9]\n", 1, 15, "not a YAML text");
	load_fails_at("{\"json\": \"is yaml\"}\n", 1, 2, "unknown key 'json'");
	ASSERT_TRUE(p == NULL, "never a policy");
}

static void test_limit_aliases_refused(void)
{
	/* A billion laughs never expands: the first alias stops the load. */
	load_fails_at("a: &a [x, x, x, x, x, x, x, x, x]\n"
		      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
		      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n", 2, 8, "aliases");
}

static void test_limit_regex_count(void)
{
	struct gen g = {};
	long before = maxrss_kb();
	int i;

	gen_printf(&g, "commands:\n  - name: many\n    decision: deny\n    args: [");
	for (i = 0; i < 200001; i++)
		gen_printf(&g, "%sa", i ? "," : "");
	gen_printf(&g, "]\n");
	load_fails_at(g.buf, 4, 0, "more than 200000 regular expressions");
	ASSERT_TRUE(maxrss_kb() - before < 512 * 1024, "memory stays bounded");
	free(g.buf);
}

static void test_limit_list_items(void)
{
	size_t n = 2100000, i;
	char *buf = malloc(2 * n + 64), *p;
	long before = maxrss_kb();

	if (!ASSERT_OK_PTR(buf, "malloc"))
		return;
	p = buf + sprintf(buf, "commands:\n- {name: x, decision: deny, basenames: [");
	for (i = 0; i < n; i++) {
		*p++ = 'a';
		*p++ = ',';
	}
	strcpy(p - 1, "]}\n");
	load_fails_at(buf, 2, 0, "more than 2000000 list items");
	ASSERT_TRUE(maxrss_kb() - before < 512 * 1024, "memory stays bounded");
	free(buf);
}

static void test_limit_regex_memory(void)
{
	struct gen g = {};
	long before = maxrss_kb();
	int i;

	/* 30 bytes of YAML, about 40 KiB compiled: the total is capped, not the count. */
	gen_printf(&g, "commands:\n  - name: big\n    decision: deny\n    args:\n");
	for (i = 0; i < 20000; i++)
		gen_printf(&g, "      - \"(a|b|c|d){1000}(e|f){1000}\"\n");
	load_fails_at(g.buf, 0, 0, "the regular expressions need more than 128 MiB compiled");
	ASSERT_TRUE(maxrss_kb() - before < 512 * 1024, "memory stays bounded");
	free(g.buf);
}

static void test_limit_catastrophic_regex(void)
{
	/* ^(a+)+$ on a long run of a's and a c: exponential backtracking without a limit. */
	struct eg_policy *p = load("commands:\n"
				   "  - {name: deny-it, basenames: [x], args: [\"^(a+)+$\"], decision: deny}\n"
				   "  - {name: allow-it, basenames: [y], args: [\"^(a+)+$\"], decision: allow}\n");
	struct eg_exec_req req = { .filename = "/usr/bin/y", .argc = 2, .depth_known = true };
	struct eg_verdict v;
	char arg[4096];
	const char *argv[] = { "y", arg, NULL };

	if (!p)
		return;
	memset(arg, 'a', sizeof(arg) - 2);
	arg[sizeof(arg) - 2] = 'c';
	arg[sizeof(arg) - 1] = '\0';
	/* PCRE2 gives up: no rule can be said to match or not, the verdict is on_error */
	ASSERT_STREQ(RULE_AT(p, 0, "x", arg), "on_error", "a deny rule that cannot be evaluated");
	ASSERT_EQ(DEC_AT(p, 0, "x", arg), EG_DECISION_DENY, "on_error defaults to deny in a session");
	ASSERT_STREQ(RULE_AT(p, 0, "y", arg), "on_error", "an allow rule never matches by giving up");
	/* outside a session the audit log says "error", with the reason */
	req.argv = argv;
	policy_eval(p, &req, &v);
	ASSERT_EQ(v.decision, EG_DECISION_ERROR, "audit: decision error");
	ASSERT_TRUE(v.error && strstr(v.error, "step limit"), "audit: the reason");
	policy_free(p);
}

/* What the caller spelled counts for deny/approval/audit, never to grant an allow. */
static void test_spelled_names(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - {name: allow-ls, basenames: [ls], decision: allow}\n"
				   "  - {name: deny-sh, basenames: [sh], decision: deny}\n"
				   "  - {name: audit-sh-path, paths: [/bin/sh], decision: audit}\n"
				   "default_decision: deny\n");
	struct eg_exec_req req = { .argv = ARGV("x"), .argc = 1, .depth_known = true };
	struct eg_verdict v;

	if (!p)
		return;
	/* /bin/sh -> dash: the deny rule still meets the name sh */
	req.filename = "/usr/bin/dash";
	req.requested = "/bin/sh";
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "deny-sh", "symlink name matches a deny");
	/* a link named ls to curl: the allow is not granted through a name curl does not have */
	req.filename = "/usr/bin/curl";
	req.requested = "/tmp/x/ls";
	policy_eval(p, &req, &v);
	ASSERT_TRUE(v.rule == NULL && v.decision == EG_DECISION_DENY, "no allow through a spelled name");
	/* paths match the resolved file only (the lint warns about such a rule) */
	req.filename = "/usr/bin/dash";
	req.requested = "/bin/sh";
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "deny-sh", "first match");
	policy_free(p);
}

static void test_unknown_depth(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - {name: direct-git, basenames: [git], context: [direct], decision: allow}\n"
				   "default_decision: deny\n");
	struct eg_policy *q = load("unknown_depth: direct\n"
				   "commands:\n"
				   "  - {name: direct-git, basenames: [git], context: [direct], decision: allow}\n"
				   "default_decision: deny\n");
	struct eg_exec_req req = { .filename = "/usr/bin/git", .argv = ARGV("git"), .argc = 1 };
	struct eg_verdict v;

	if (!p || !q)
		goto out;
	req.depth_known = false;
	policy_eval(p, &req, &v);
	ASSERT_EQ(v.decision, EG_DECISION_DENY, "older than the tracer: nested, not direct");
	policy_eval(q, &req, &v);
	ASSERT_STREQ(v.rule, "direct-git", "unknown_depth: direct");
	req.depth_known = true;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "direct-git", "known depth 0 is direct");
out:
	policy_free(p);
	policy_free(q);
}

static void test_truncated_outside_sessions(void)
{
	struct eg_policy *p = load("commands:\n  - {name: ok, basenames: [env], decision: allow}\n");
	struct eg_exec_req req = { .filename = "/usr/bin/env", .argv = ARGV("env", "true"), .argc = 2,
				   .depth_known = true, .truncated = true };
	struct eg_verdict v;

	if (!p)
		return;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "ok", "the host audit log keeps the verdict of a long command line");
	req.apply_on_truncated = true;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "on_truncated", "a session applies on_truncated");
	policy_free(p);
}

/* req as an exec of the file at path (its name, size and identity); false if it cannot be read */
static bool exec_of(struct eg_exec_req *req, const char *path, struct stat *st)
{
	if (!ASSERT_OK(stat(path, st), path))
		return false;
	req->filename = path;
	req->size = st->st_size;
	req->dev = eg_kdev(st->st_dev);
	req->ino = st->st_ino;
	return true;
}

/* A rule naming a file by path catches that file under any name, and copies of it when it denies. */
static void test_named_file_identity(void)
{
	char dir[] = "/tmp/egident.XXXXXX", copy[64], link[64], other[64], cmd[200];
	struct eg_policy *p = NULL;
	struct eg_exec_req req = { .argv = ARGV("x"), .argc = 1, .depth_known = true };
	struct eg_verdict v;
	struct stat st;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "tmpdir"))
		return;
	snprintf(copy, sizeof(copy), "%s/innocent", dir);
	snprintf(link, sizeof(link), "%s/hard", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(cmd, sizeof(cmd), "cp /usr/bin/printf %s && cp /usr/bin/true %s", copy, other);
	if (!ASSERT_EQ(system(cmd), 0, "copies"))
		goto out;
	p = load("commands:\n  - {name: no-printf, paths: [/usr/bin/printf], decision: deny}\n");
	if (!p)
		goto out;
	/* a copy under another name: same content */
	if (!exec_of(&req, copy, &st))
		goto out;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "no-printf", "a copy of the named file");
	/* another program: no */
	ASSERT_OK(stat(other, &st), "stat other");
	req.filename = other;
	req.size = st.st_size;
	req.ino = st.st_ino;
	policy_eval(p, &req, &v);
	ASSERT_TRUE(v.rule == NULL, "another program");
	/* the named file itself by identity, under a name the rule does not spell */
	ASSERT_OK(stat("/usr/bin/printf", &st), "stat printf");
	req.filename = "/some/other/name";
	req.size = 0;
	req.dev = eg_kdev(st.st_dev);
	req.ino = st.st_ino;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "no-printf", "the same inode (a hard link, a bind mount)");
	/* an allow: by identity, never by content (a copy could be rewritten after the hash) */
	policy_free(p);
	p = load("default_decision: deny\ncommands:\n  - {name: ok-printf, paths: [/usr/bin/printf], decision: allow}\n");
	if (!p)
		goto out;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "ok-printf", "an allow: the named file by identity");
	if (!exec_of(&req, copy, &st))
		goto out;
	policy_eval(p, &req, &v);
	ASSERT_TRUE(v.rule == NULL && v.decision == EG_DECISION_DENY, "an allow: not a copy of the named file");
	ASSERT_TRUE(!policy_wants_size(p, st.st_size), "nothing hashed for an allow");
out:
	policy_free(p);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ASSERT_EQ(system(cmd), 0, "cleanup");
}

static void test_verdict_merge(void)
{
	struct eg_verdict a = { .decision = EG_DECISION_ALLOW, .rule = "a" };
	struct eg_verdict d = { .decision = EG_DECISION_DENY, .rule = "d" };
	struct eg_verdict q = { .decision = EG_DECISION_APPROVAL, .rule = "q" };
	struct eg_verdict e = { .decision = EG_DECISION_ERROR, .rule = "e" };
	struct eg_verdict x = a;

	policy_verdict_merge(&x, &q);
	ASSERT_STREQ(x.rule, "q", "approval over allow");
	policy_verdict_merge(&x, &e);
	ASSERT_STREQ(x.rule, "e", "error over approval");
	policy_verdict_merge(&x, &d);
	ASSERT_STREQ(x.rule, "d", "deny over everything");
	policy_verdict_merge(&x, &a);
	ASSERT_STREQ(x.rule, "d", "an allow never weakens a deny");
}

static void test_cgroup_globs(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - {name: pods, cgroups: [\"/libpod_parent/libpod-*\"], basenames: [curl], decision: deny}\n");
	struct req r = { .cgroup = "/libpod_parent/libpod-abc123" };

	if (!p)
		return;
	ASSERT_STREQ(eval_v(p, &r, ARGV("curl")).rule, "pods", "a container's cgroup");
	r.cgroup = "/libpod_parent/libpod-abc123/init.scope";
	ASSERT_STREQ(eval_v(p, &r, ARGV("curl")).rule, "pods", "below it");
	r.cgroup = "/libpod_parent/conmon";
	ASSERT_TRUE(eval_v(p, &r, ARGV("curl")).rule == NULL, "beside it");
	r.cgroup = "/";
	ASSERT_TRUE(eval_v(p, &r, ARGV("curl")).rule == NULL, "the host");
	policy_free(p);
}

static void test_new_keys(void)
{
	struct eg_policy *p = load("unknown_depth: nested\nkernel_approval: audit\n"
				   "sandbox: {seccomp: {execve: {on_error: approval}}}\ncommands: []\n");

	if (p) {
		ASSERT_EQ(policy_settings(p)->on_error, EG_DECISION_APPROVAL, "on_error");
		ASSERT_FALSE(policy_settings(p)->unknown_depth_direct, "unknown_depth");
		ASSERT_TRUE(policy_settings(p)->kernel_approval_audit, "kernel_approval");
		policy_free(p);
	}
	load_fails_at("unknown_depth: sideways\ncommands: []\n", 1, 16, "'unknown_depth' is nested or direct");
	load_fails_at("kernel_approval: allow\ncommands: []\n", 1, 18, "'kernel_approval' is deny or audit");
	load_fails_at("sandbox: {seccomp: {execve: {on_error: audit}}}\n", 1, 40,
		      "'on_error' must be allow, deny or approval");
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * One budget for the whole exec: 1,600 hostile arguments against a
 * backtracking allow pattern are decided (on_error) within the budget,
 * not 1,600 times a per-match limit.
 */
static void test_budget_per_exec(void)
{
	struct eg_policy *p = load("sandbox: {seccomp: {execve: {on_error: deny}}}\n"
				   "commands:\n"
				   "  - name: corp\n"
				   "    basenames: [curl]\n"
				   "    args: ['https://([a-z0-9]+[-.]?)+\\.corp\\.example/.*']\n"
				   "    decision: allow\n"
				   "default_decision: deny\n");
	static char args[1600][41];
	const char *argv[1602];
	struct eg_exec_req req = { .filename = "/usr/bin/curl", .depth_known = true,
				   .apply_on_truncated = true };
	struct eg_eval_budget budget = {};
	struct eg_verdict v;
	uint64_t t0, dt;
	int i;

	if (!p)
		return;
	argv[0] = "curl";
	for (i = 0; i < 1600; i++) {
		memcpy(args[i], "https://", 8);
		memset(args[i] + 8, 'a', 31);
		args[i][39] = '!';
		args[i][40] = '\0';
		argv[i + 1] = args[i];
	}
	argv[1601] = NULL;
	req.argv = argv;
	req.argc = 1601;
	req.budget = &budget;
	t0 = now_ns();
	policy_eval(p, &req, &v);
	dt = now_ns() - t0;
	ASSERT_EQ(v.decision, EG_DECISION_DENY, "on_error: deny");
	ASSERT_STREQ(v.rule, "on_error", "decided by on_error");
	ASSERT_TRUE(v.error != NULL, "with the reason");
	printf("    1600 hostile arguments decided in %.1f ms (budget %llu ms)\n", dt / 1e6,
	       EG_EVAL_BUDGET_NS / 1000000);
	ASSERT_TRUE(dt < 50ull * 1000 * 1000, "under 50 ms");
	/* a spent budget (as after the script's own judgement) stops at the first pattern */
	budget = (struct eg_eval_budget){ .deadline_ns = now_ns() - 1 };
	args[0][39] = '/';
	policy_eval(p, &req, &v);
	ASSERT_TRUE(budget.exceeded, "budget marked exceeded");
	ASSERT_STREQ(v.rule, "on_error", "spent budget: on_error");
	ASSERT_TRUE(v.error && strstr(v.error, "budget"), "says budget");
	policy_free(p);
}

static void test_long_argv_matches(void)
{
	/* A group repeated 30000 times backtracks deep: JIT needs more than its default stack. */
	struct eg_policy *p = load("commands:\n"
				   "  - {name: allow-long, basenames: [x], args: [\"(a|b)*c\"], decision: allow}\n"
				   "  - {name: search-long, basenames: [y], args_patterns: [\"(a|b)*c$\"], decision: allow}\n");
	size_t n = 60001;
	char *arg = malloc(n + 1);

	if (!p || !ASSERT_OK_PTR(arg, "malloc"))
		goto out;
	memset(arg, 'a', n);
	memcpy(arg + n / 2, "b", 1);
	arg[n - 1] = 'c';
	arg[n] = '\0';
	ASSERT_STREQ(RULE_AT(p, 0, "x", "-v", arg), "allow-long", "a 60 KB argument");
	ASSERT_STREQ(RULE_AT(p, 0, "y", "-v", arg), "search-long", "a 60 KB command line");
	arg[n - 1] = 'd';
	ASSERT_STREQ(RULE_AT(p, 0, "x", "-v", arg), "default", "no match");
out:
	free(arg);
	policy_free(p);
}

static void test_eval_edge_requests(void)
{
	struct eg_policy *p = load("commands:\n"
				   "  - {name: e, basenames: [\"\\u00e9\"], decision: deny}\n"
				   "  - {name: any-args, args_patterns: [\"^$\"], decision: audit}\n");
	struct eg_exec_req req = {};
	struct eg_verdict v;
	const char *argv[] = { NULL, NULL };

	if (!p)
		return;
	/* No filename, no argv at all. */
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "any-args", "empty request: empty joined argv");
	req.filename = "/x/\xc3\xa9";
	req.argv = argv;
	req.argc = 2;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "e", "UTF-8 basename, NULL argv entries");
	policy_eval(NULL, &req, &v);
	ASSERT_EQ(v.decision, EG_DECISION_ALLOW, "no policy: allow");
	policy_free(p);
}

/*
 * A path through a mount a user made (EG_F2_USER_MOUNT) lets nothing run:
 * rules that allow, audit or (with kernel_approval: audit) ask are not met
 * by it; a deny, a literal path's own file by its identity, a name and a
 * context's identity still are.
 */
static void test_user_mount_paths(void)
{
	struct eg_policy *p = load("default_decision: deny\n"
				   "kernel_approval: audit\n"
				   "contexts:\n"
				   "  - name: agent\n"
				   "    identities: [{paths: [\"/usr/local/agent/*\"]}]\n"
				   "commands:\n"
				   "  - {name: no-rm, paths: [\"/usr/bin/rm*\"], decision: deny}\n"
				   "  - {name: env, paths: [/usr/bin/env], decision: allow}\n"
				   "  - {name: watched, paths: [\"/usr/local/*\"], decision: audit}\n"
				   "  - {name: asked, paths: [\"/opt/*\"], decision: approval}\n"
				   "  - {name: system, paths: [\"/usr/*\"], decision: allow}\n"
				   "  - {name: shells, basenames: [dash], decision: allow}\n");
	const char *argv[] = { "x", NULL };
	struct eg_exec_req req = { .argv = argv, .argc = 1, .depth_known = true };
	static const struct { const char *path; const char *own, *users; } cases[] = {
		{ "/usr/bin/true", "system", NULL },
		{ "/usr/local/games/x", "watched", NULL },
		{ "/opt/tool", "asked", NULL },
		{ "/usr/bin/rmdir", "no-rm", "no-rm" },
		{ "/usr/bin/dash", "system", "shells" },
	};
	struct eg_verdict v;
	struct stat st;
	size_t i;

	if (!p)
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		req.filename = cases[i].path;
		req.user_mount = false;
		policy_eval(p, &req, &v);
		ASSERT_STREQ(v.rule ? v.rule : "default", cases[i].own, cases[i].path);
		req.user_mount = true;
		policy_eval(p, &req, &v);
		ASSERT_STREQ(v.rule ? v.rule : "default", cases[i].users ? cases[i].users : "default",
			     cases[i].path);
		if (!cases[i].users)
			ASSERT_EQ(v.decision, EG_DECISION_DENY, "the default decides");
	}
	/* the literal path's own file, by its identity, under any path */
	if (ASSERT_OK(stat("/usr/bin/env", &st), "stat /usr/bin/env")) {
		req.filename = "/usr/local/games/env";
		req.dev = eg_kdev(st.st_dev);
		req.ino = st.st_ino;
		policy_eval(p, &req, &v);
		ASSERT_STREQ(v.rule ? v.rule : "default", "env", "the file, by identity");
		req.dev = req.ino = 0;
	}
	/* a context's identity adds rules: met all the same */
	req.filename = "/usr/local/agent/run";
	ASSERT_EQ(policy_context_identity(p, &req), 1, "an identity by path");
	policy_free(p);
}

/* contexts: identities, rules scoped to contexts (and to none), limits, errors in place. */
static void test_agent_contexts(void)
{
	struct eg_policy *p = load("default_decision: allow\n"
				   "contexts:\n"
				   "  - name: claude\n"
				   "    identities: [{paths: [/opt/claude/cli.js]}, {basenames: [claude], uids: [1000]}]\n"
				   "    limits: {max_depth: 3, max_consecutive_shells: 2}\n"
				   "  - name: aider\n"
				   "    identities: [{basenames: [python3], args: [aider]}]\n"
				   "commands:\n"
				   "  - {name: no-curl-in-agents, basenames: [curl], contexts: [claude, aider], decision: deny}\n"
				   "  - {name: no-sudo-outside, basenames: [sudo], contexts: [none], decision: deny}\n");
	struct eg_exec_req req = {};
	struct eg_context_info ci;
	struct eg_verdict v;
	const char *argv[] = { "curl", "x", NULL };
	const char *pargv[] = { "python3", "-m", "aider", NULL };
	const char *why;

	if (!p)
		return;
	ASSERT_EQ(policy_context_count(p), 2, "two contexts");
	ASSERT_OK(policy_context_info(p, 1, &ci), "info");
	ASSERT_STREQ(ci.name, "claude", "name");
	ASSERT_EQ(ci.max_depth, 3, "max_depth");
	ASSERT_EQ(ci.max_shells, 2, "max_consecutive_shells");
	ASSERT_EQ(ci.n_identities, 2, "identities");
	ASSERT_EQ(policy_context_id(p, "aider"), 2, "by name");
	ASSERT_EQ(policy_context_id(p, "none"), 0, "none is no context");

	/* identities: a path, a name for one uid only (allow: the file's own name), argv */
	req.filename = "/opt/claude/cli.js";
	req.argv = argv;
	req.argc = 1;
	req.depth_known = true;
	ASSERT_EQ(policy_context_identity(p, &req), 1, "the script's path");
	req.filename = "/usr/local/bin/claude";
	req.euid = 1000;
	ASSERT_EQ(policy_context_identity(p, &req), 1, "name and uid");
	req.euid = 0;
	ASSERT_EQ(policy_context_identity(p, &req), 0, "another uid");
	req.filename = "/usr/bin/python3";
	req.argv = pargv;
	req.argc = 3;
	ASSERT_EQ(policy_context_identity(p, &req), 2, "an argument");
	req.requested = "claude";
	req.filename = "/tmp/evil";
	ASSERT_EQ(policy_context_identity(p, &req), 0, "a name spelled is not the file's");

	/* rules by context */
	memset(&req, 0, sizeof(req));
	req.filename = "/usr/bin/curl";
	req.argv = argv;
	req.argc = 2;
	req.depth_known = true;
	policy_eval(p, &req, &v);
	ASSERT_EQ(v.decision, EG_DECISION_ALLOW, "curl outside");
	req.context = 2;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "no-curl-in-agents", "curl in aider");
	req.filename = "/usr/bin/sudo";
	policy_eval(p, &req, &v);
	ASSERT_EQ(v.decision, EG_DECISION_ALLOW, "sudo in a context: the rule is for outside");
	req.context = 0;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "no-sudo-outside", "sudo outside");

	/* limits: past them, a deny whatever the rules say */
	req.context = 1;
	req.filename = "/usr/bin/true";
	req.context_depth = 3;
	ASSERT_FALSE(policy_context_over(p, &req, &why), "depth 3 of 3");
	req.context_depth = 4;
	ASSERT_TRUE(policy_context_over(p, &req, &why), "depth 4 of 3");
	policy_eval(p, &req, &v);
	ASSERT_EQ(v.decision, EG_DECISION_DENY, "too deep");
	ASSERT_STREQ(v.rule, "context_limit", "rule");
	req.context_depth = 1;
	req.shells = 3;
	policy_eval(p, &req, &v);
	ASSERT_STREQ(v.rule, "context_limit", "third shell");
	req.shells = 2;
	policy_eval(p, &req, &v);
	ASSERT_EQ(v.decision, EG_DECISION_ALLOW, "second shell");
	req.context = 2;
	req.shells = 9;
	req.context_depth = 99;
	policy_eval(p, &req, &v);
	ASSERT_EQ(v.decision, EG_DECISION_ALLOW, "a context without limits");
	ASSERT_TRUE(policy_is_shell("/usr/bin/dash") && !policy_is_shell("/usr/bin/dashboard"), "shells");
	ASSERT_TRUE(policy_is_interpreter("/usr/bin/node") && !policy_is_interpreter("/usr/bin/git"),
		    "interpreters");
	policy_free(p);

	ASSERT_TRUE(load_fails_at("contexts:\n  - name: a\n    identities: [{paths: [/x], decision: deny}]\n",
				  3, 32, "does not belong in an identity"), "identity with a decision");
	ASSERT_TRUE(load_fails_at("contexts:\n  - name: a\n    identities: []\n", 3, 17, "empty"),
		    "no identities");
	ASSERT_TRUE(load_fails_at("contexts:\n  - name: a\n", 2, 5, "no 'identities'"), "identities missing");
	ASSERT_TRUE(load_fails_at("contexts:\n  - {name: a, identities: [{basenames: [x]}]}\n"
				  "  - {name: a, identities: [{basenames: [y]}]}\n", 3, 12, "duplicate context"),
		    "duplicate");
	/* 63 bytes: the kernel keeps the name (eg_kctx, eg_ctxname); a longer one would be cut */
	ASSERT_TRUE(load_fails_at("contexts:\n  - {name: a123456789012345678901234567890123456789012345678901234567890123, "
				  "identities: [{basenames: [x]}]}\n", 2, 12, "at most 63"), "a name too long");
	ASSERT_TRUE(load_fails_at("commands:\n  - {name: r, basenames: [x], contexts: [nope], decision: deny}\n",
				  2, 42, "names context 'nope'"), "unknown context");
	ASSERT_TRUE(load_fails_at("contexts:\n  - {name: a, identities: [{basenames: [x]}], "
				  "limits: {max_consecutive_shells: 0}}\n", 2, 80, "from 1"), "zero shells");
	ASSERT_TRUE(load_fails_at("commands:\n  - {name: context_limit, basenames: [x], decision: deny}\n",
				  2, 12, "reserved"), "reserved name");
}

int main(void)
{
	RUN(test_seed001_full_configuration);
	RUN(test_seed_policy_examples);
	RUN(test_args_patterns_vs_args);
	RUN(test_args_patterns_join);
	RUN(test_args_all_must_match);
	RUN(test_basenames_and_paths);
	RUN(test_context_forms);
	RUN(test_user_mount_paths);
	RUN(test_agent_contexts);
	RUN(test_cgroups_and_uids);
	RUN(test_decisions_and_messages);
	RUN(test_first_match_wins);
	RUN(test_truncated);
	RUN(test_internal_bypass_first);
	RUN(test_settings);
	RUN(test_durations);
	RUN(test_error_misspelled_key);
	RUN(test_error_types);
	RUN(test_boundary_sections);
	RUN(test_error_rules);
	RUN(test_error_yaml);
	RUN(test_errors_leave_nothing_half_made);
	RUN(test_session_policy_limits);
	RUN(test_diag_format);
	RUN(test_lint_shadowed);
	RUN(test_lint_other);
	RUN(test_index_equals_scan);
	RUN(test_rule_info);
	RUN(test_sha256_of_file);
	RUN(test_budget_per_exec);
	RUN(test_spelled_names);
	RUN(test_unknown_depth);
	RUN(test_truncated_outside_sessions);
	RUN(test_named_file_identity);
	RUN(test_verdict_merge);
	RUN(test_cgroup_globs);
	RUN(test_new_keys);
	RUN(test_long_argv_matches);
	RUN(test_eval_edge_requests);
	RUN(test_limit_100k_rules);
	RUN(test_limit_10mb_file);
	RUN(test_limit_file_size);
	RUN(test_limit_deep_nesting);
	RUN(test_limit_not_yaml);
	RUN(test_limit_aliases_refused);
	RUN(test_limit_regex_count);
	RUN(test_limit_list_items);
	RUN(test_limit_regex_memory);
	RUN(test_limit_catastrophic_regex);
	return UNIT_DONE();
}
