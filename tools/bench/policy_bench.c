// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * policy_eval() cost per decision as the rule count grows. Generates a
 * policy of N mixed rules (basenames with and without contexts and args
 * regexes, literal paths, directory globs, tail globs, args_patterns, a
 * few rules no index can rule out) and a fixed set of mixed requests, then
 * times the requests against it: median of several runs.
 *
 *   policy_bench                      10, 100, 1000, 10000 rules, 100000 requests, 5 runs
 *   policy_bench --rules N --requests M --once
 *                                     one pass, no timing: for callgrind
 *                                     (--toggle-collect=policy_eval)
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "policy/policy.h"

#define MAX_ARGS 8

struct request {
	char filename[64];
	char cgroup[64];
	char args[MAX_ARGS][32];
	const char *argv[MAX_ARGS + 1];
	struct eg_exec_req req;
};

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)((rng >> 11) % n);
}

struct gen {
	char *buf;
	size_t len, cap;
};

static int gen_printf(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int gen_printf(struct gen *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (g->cap - g->len < 1024) {
		size_t cap = g->cap ? g->cap * 2 : 1 << 16;
		char *b = realloc(g->buf, cap);

		if (!b)
			return -ENOMEM;
		g->buf = b;
		g->cap = cap;
	}
	va_start(ap, fmt);
	n = vsnprintf(g->buf + g->len, g->cap - g->len, fmt, ap);
	va_end(ap);
	g->len += n;
	return 0;
}

static const char *const decisions[] = { "allow", "deny", "audit", "approval" };
static const char *const contexts[] = { "", "    context: [direct]\n", "    context: [nested]\n",
					"    context: {min_depth: 1, max_depth: 3}\n" };

/* Names are drawn from a pool a quarter the size of the policy: a few rules per name. */
static uint32_t pool_size(uint32_t rules)
{
	return rules / 4 > 8 ? rules / 4 : 8;
}

static int gen_policy(struct gen *g, uint32_t rules)
{
	uint32_t pool = pool_size(rules), i;
	int rc = 0;

	rc |= gen_printf(g, "sandbox:\n  seccomp:\n    execve:\n      approval_timeout: 10s\n"
			    "      internal_bypass: [/usr/local/bin/agentsh, \"/usr/bin/*.real\"]\n"
			    "default_decision: audit\ncommands:\n");
	for (i = 0; i < rules && !rc; i++) {
		uint32_t k = rnd(pool), kind = rnd(100);

		rc |= gen_printf(g, "  - name: rule-%u\n    decision: %s\n", i, decisions[rnd(4)]);
		if (kind < 45) {
			/* One rnd() a statement: argument order is the compiler's choice. */
			uint32_t k2 = rnd(pool), ctx = rnd(4);

			rc |= gen_printf(g, "    basenames: [tool%u, tool%u]\n%s", k, k2, contexts[ctx]);
			if (rnd(3) == 0)
				rc |= gen_printf(g, "    args: [\"--opt-%u=.*\", \"-(r|f)+\"]\n", k);
		} else if (kind < 55) {
			rc |= gen_printf(g, "    basenames: [tool%u]\n    args_patterns: [\"--danger-%u\", \"-(r|rf|fr) \"]\n",
					 k, k);
		} else if (kind < 70) {
			rc |= gen_printf(g, "    paths: [/usr/bin/tool%u, /usr/local/bin/tool%u]\n%s", k, k,
					 contexts[rnd(4)]);
		} else if (kind < 83) {
			rc |= gen_printf(g, "    paths: [\"/opt/pkg%u/bin/*\"]\n", k);
		} else if (kind < 96) {
			rc |= gen_printf(g, "    paths: [\"*/bin/tool%u\"]\n    uids: [0, %u]\n", k, 1000 + rnd(3));
		} else if (kind < 97) {
			rc |= gen_printf(g, "    paths: [\"*.%u.sh\"]\n", k);
		} else if (kind < 98) {
			/* No name to go by: indexed by uid, or by cgroup. */
			rc |= gen_printf(g, "    context: {min_depth: %u}\n    uids: [%u]\n", 2 + rnd(3), 2000 + k);
		} else if (kind < 99) {
			rc |= gen_printf(g, "    cgroups: [/system.slice/svc%u.service]\n", k);
		} else if (rnd(10) == 0) {
			/* Nothing any index can go by: checked for every exec. */
			rc |= gen_printf(g, "    context: {min_depth: %u}\n    args_patterns: [\"--never-%u\"]\n",
					 1 + rnd(3), k);
		} else {
			rc |= gen_printf(g, "    basenames: [tool%u]\n", k);
		}
	}
	return rc ? -ENOMEM : 0;
}

static void gen_requests(struct request *r, uint32_t n, uint32_t rules)
{
	static const char *const common[] = { "ls", "cat", "sh", "bash", "git", "make", "cc1", "sed" };
	static const char *const argpool[] = { "-rf", "-v", "file.txt", "--opt-1=x", "-r", "src/main.c",
					       "--danger-3", "-o", "out", "https://example.com" };
	uint32_t pool = pool_size(rules), i, a;

	for (i = 0; i < n; i++) {
		uint32_t kind = rnd(100), argc = 1 + rnd(6), k = rnd(pool * 2);

		if (kind < 55)
			snprintf(r[i].filename, sizeof(r[i].filename), "/usr/bin/tool%u", k);
		else if (kind < 65)
			snprintf(r[i].filename, sizeof(r[i].filename), "/opt/pkg%u/bin/run", k);
		else if (kind < 90)
			snprintf(r[i].filename, sizeof(r[i].filename), "/usr/bin/%s", common[rnd(8)]);
		else if (kind < 97)
			snprintf(r[i].filename, sizeof(r[i].filename), "/home/u/build/%u.sh", k);
		else
			snprintf(r[i].filename, sizeof(r[i].filename), "/usr/bin/bash.real");
		snprintf(r[i].args[0], sizeof(r[i].args[0]), "%s", strrchr(r[i].filename, '/') + 1);
		for (a = 1; a < argc; a++) {
			if (rnd(4) == 0)
				snprintf(r[i].args[a], sizeof(r[i].args[a]), "--opt-%u=%u", k, a);
			else
				snprintf(r[i].args[a], sizeof(r[i].args[a]), "%s", argpool[rnd(10)]);
		}
		for (a = 0; a < argc; a++)
			r[i].argv[a] = r[i].args[a];
		r[i].argv[argc] = NULL;
		memset(&r[i].req, 0, sizeof(r[i].req));
		r[i].req.filename = r[i].filename;
		r[i].req.argv = r[i].argv;
		r[i].req.argc = argc;
		r[i].req.depth = (int)rnd(5);
		r[i].req.euid = rnd(2) ? 0 : 1000 + rnd(3);
		r[i].req.depth_known = true;
		if (rnd(10) == 0) {
			snprintf(r[i].cgroup, sizeof(r[i].cgroup), "/system.slice/svc%u.service", k);
			r[i].req.cgroup = r[i].cgroup;
		} else {
			r[i].req.cgroup = "/user.slice/user-1000.slice/session-1.scope";
		}
	}
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Returns how many requests some rule (not the default) decided. */
static uint32_t one_pass(const struct eg_policy *p, const struct request *r, uint32_t n)
{
	uint32_t i, matched = 0;
	struct eg_verdict v;

	for (i = 0; i < n; i++) {
		policy_eval(p, &r[i].req, &v);
		matched += v.rule != NULL;
	}
	return matched;
}

struct result {
	uint32_t rules;
	double load_ms, median_ns, min_ns, max_ns, matched;
};

static int bench(uint32_t rules, uint32_t nreq, int runs, bool once, struct result *res)
{
	struct eg_diags d = {};
	struct eg_policy *p = NULL;
	struct request *reqs;
	struct gen g = {};
	double t0, times[64];
	uint32_t matched = 0;
	int i, rc;

	rng = 0x9e3779b97f4a7c15ull ^ rules;
	rc = gen_policy(&g, rules);
	if (rc) {
		fprintf(stderr, "policy_bench: out of memory\n");
		free(g.buf);
		return rc;
	}
	t0 = now_ns();
	rc = policy_load_buf(g.buf, g.len, "bench.yaml", &p, &d);
	res->load_ms = (now_ns() - t0) / 1e6;
	free(g.buf);
	if (rc) {
		char line[1024];

		fprintf(stderr, "policy_bench: generated policy does not load (%d):\n", rc);
		for (i = 0; i < (int)d.n && i < 10; i++) {
			eg_diag_format(&d.v[i], line, sizeof(line));
			fprintf(stderr, "  %s\n", line);
		}
		eg_diags_free(&d);
		return rc;
	}
	eg_diags_free(&d);
	reqs = calloc(nreq, sizeof(*reqs));
	if (!reqs) {
		policy_free(p);
		return -ENOMEM;
	}
	gen_requests(reqs, nreq, rules);
	res->rules = rules;
	if (once) {
		matched = one_pass(p, reqs, nreq);
		res->matched = 100.0 * matched / nreq;
		goto out;
	}
	one_pass(p, reqs, nreq);		/* warm caches, fault in the scratch */
	for (i = 0; i < runs; i++) {
		t0 = now_ns();
		matched = one_pass(p, reqs, nreq);
		times[i] = (now_ns() - t0) / nreq;
	}
	qsort(times, runs, sizeof(times[0]), cmp_double);
	res->median_ns = times[runs / 2];
	res->min_ns = times[0];
	res->max_ns = times[runs - 1];
	res->matched = 100.0 * matched / nreq;
out:
	free(reqs);
	policy_free(p);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: policy_bench [--rules N] [--requests N] [--runs N] [--once] [--json]\n"
		   "Times policy_eval() per decision for 10, 100, 1000 and 10000 generated rules\n"
		   "(or --rules N), median of --runs (5) passes over --requests (100000) requests.\n"
		   "--once: a single untimed pass, for valgrind --tool=callgrind --toggle-collect=policy_eval.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rules", required_argument, NULL, 'r' },
		{ "requests", required_argument, NULL, 'n' },
		{ "runs", required_argument, NULL, 'k' },
		{ "once", no_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	static const uint32_t default_rules[] = { 10, 100, 1000, 10000 };
	uint32_t rules[4], nrules = 0, nreq = 100000, i;
	int runs = 5, c;
	bool once = false, json = false;

	while ((c = getopt_long(argc, argv, "r:n:k:ojh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (nrules < 4)
				rules[nrules++] = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			nreq = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'k':
			runs = atoi(optarg);
			break;
		case 'o':
			once = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!nreq || runs < 1 || runs > 64 || (once && nrules != 1)) {
		usage(stderr);
		return 2;
	}
	if (!nrules) {
		memcpy(rules, default_rules, sizeof(rules));
		nrules = 4;
	}
	if (once) {
		struct result res;

		if (bench(rules[0], nreq, 1, true, &res))
			return 1;
		printf("decisions %u rules %u matched %.1f%%\n", nreq, rules[0], res.matched);
		return 0;
	}
	if (json)
		printf("{\"requests\":%u,\"runs\":%d,\"results\":[", nreq, runs);
	else
		printf("policy_eval: %u mixed requests, median of %d runs\n"
		       "%8s %10s %14s %10s %10s %9s\n", nreq, runs,
		       "rules", "load_ms", "ns/decision", "min", "max", "matched");
	for (i = 0; i < nrules; i++) {
		struct result res;

		if (bench(rules[i], nreq, runs, false, &res))
			return 1;
		if (json)
			printf("%s{\"rules\":%u,\"load_ms\":%.2f,\"ns_per_decision\":%.1f,\"min_ns\":%.1f,"
			       "\"max_ns\":%.1f,\"matched_pct\":%.1f}", i ? "," : "", res.rules, res.load_ms,
			       res.median_ns, res.min_ns, res.max_ns, res.matched);
		else
			printf("%8u %10.2f %14.1f %10.1f %10.1f %8.1f%%\n", res.rules, res.load_ms,
			       res.median_ns, res.min_ns, res.max_ns, res.matched);
		fflush(stdout);
	}
	if (json)
		printf("]}\n");
	return 0;
}
