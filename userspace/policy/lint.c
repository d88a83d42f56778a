// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Warnings about policies that load but probably do not say what their
 * author meant: rules that can never match, patterns that match every
 * command line, approvals with no timeout configured, bypass entries any
 * file can satisfy. `policy check --strict` turns them into failures.
 */
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "policy/internal.h"

struct lint {
	const struct eg_policy *p;
	const char *file;
	struct eg_diags *d;
	uint64_t budget;
	uint32_t *stamp;		/* per rule: the last R it was a candidate for, + 1 */
};

static void warn(struct lint *l, struct eg_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void warn(struct lint *l, struct eg_pos pos, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	eg_diag_vadd(l->d, l->file, pos, true, fmt, ap);
	va_end(ap);
}

static bool glob_matches_all(const char *g)
{
	for (; *g; g++)
		if (*g != '*')
			return false;
	return true;
}

static bool has_filter(const struct eg_rule *r)
{
	return r->basenames.n || r->paths.n || r->n_args || r->n_args_patterns || r->cgroups.n ||
	       r->n_uids || r->min_depth > 0 || r->max_depth != EG_DEPTH_INF;
}

static bool in_strv(const struct eg_strv *s, const char *v)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], v))
			return true;
	return false;
}

static const char *path_base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Every filename r accepts, e accepts too (decidable cases only). */
static bool names_covered(const struct eg_rule *e, const struct eg_rule *r)
{
	bool base_ok, path_ok;
	uint32_t i, j;

	base_ok = !e->basenames.n;
	if (!base_ok && r->basenames.n) {
		for (i = 0; i < r->basenames.n && in_strv(&e->basenames, r->basenames.v[i]); i++)
			;
		base_ok = i == r->basenames.n;
	}
	if (!base_ok && r->paths.n) {
		for (i = 0; i < r->paths.n; i++)
			if (!r->path_glob[i].literal || !in_strv(&e->basenames, path_base(r->paths.v[i])))
				break;
		base_ok = i == r->paths.n;
	}
	if (!base_ok)
		return false;

	path_ok = !e->paths.n;
	for (j = 0; j < e->paths.n && !path_ok; j++)
		path_ok = glob_matches_all(e->paths.v[j]);
	if (!path_ok && r->paths.n) {
		for (i = 0; i < r->paths.n; i++) {
			bool one = false;

			for (j = 0; j < e->paths.n && !one; j++)
				one = !strcmp(e->paths.v[j], r->paths.v[i]) ||
				      (r->path_glob[i].literal && !fnmatch(e->paths.v[j], r->paths.v[i], 0));
			if (!one)
				break;
		}
		path_ok = i == r->paths.n;
	}
	return path_ok;
}

/* e matches every exec r matches, so r is never the first match. */
static bool covers(const struct eg_rule *e, const struct eg_rule *r)
{
	uint32_t i, j;

	if (e->n_args || e->n_args_patterns)
		return false;
	if (e->min_depth > r->min_depth || e->max_depth < r->max_depth)
		return false;
	if (e->n_uids) {
		if (!r->n_uids)
			return false;
		for (i = 0; i < r->n_uids; i++) {
			for (j = 0; j < e->n_uids && e->uids[j] != r->uids[i]; j++)
				;
			if (j == e->n_uids)
				return false;
		}
	}
	if (e->cgroups.n) {
		if (!r->cgroups.n)
			return false;
		for (i = 0; i < r->cgroups.n; i++) {
			for (j = 0; j < e->cgroups.n && !eg_cgroup_under(r->cgroups.v[i], e->cgroups.v[j]); j++)
				;
			if (j == e->cgroups.n)
				return false;
		}
	}
	return names_covered(e, r);
}

/* The earliest rule before j in list that covers rule j, or -1. */
static int scan(struct lint *l, const uint32_t *idx, uint32_t n, uint32_t j, int best)
{
	const struct eg_policy *p = l->p;
	uint32_t k;

	for (k = 0; k < n && idx[k] < j; k++) {
		uint32_t i = idx[k];

		if (best >= 0 && i >= (uint32_t)best)
			break;
		if (l->stamp[i] == j + 1)
			continue;
		l->stamp[i] = j + 1;
		if (!l->budget)
			return -2;
		l->budget--;
		if (covers(&p->rules[i], &p->rules[j]))
			return (int)i;
	}
	return best;
}

static int scan_bucket(struct lint *l, const struct eg_htab *t, const char *key, size_t n, uint32_t j, int best)
{
	const struct eg_bucket *b;

	if (best == -2)
		return best;
	b = eg_htab_find(t, key, n, eg_hash(key, n));
	return b ? scan(l, b->idx, b->n, j, best) : best;
}

/*
 * Only rules that could cover j are compared: a rule that covers j accepts
 * j's first basename, path, uid and cgroup, so it sits on the unindexed
 * list or in the index buckets those lead to; a budget bounds the rest.
 */
static void lint_shadowed(struct lint *l)
{
	const struct eg_policy *p = l->p;
	uint32_t j;

	l->stamp = calloc(p->n_rules ? p->n_rules : 1, sizeof(*l->stamp));
	if (!l->stamp)
		return;
	for (j = 1; j < p->n_rules; j++) {
		const struct eg_rule *r = &p->rules[j];
		int best = scan(l, p->unindexed, p->n_unindexed, j, -1);

		if (r->basenames.n)
			best = scan_bucket(l, &p->by_basename, r->basenames.v[0], strlen(r->basenames.v[0]), j, best);
		if (r->paths.n) {
			const char *g = r->paths.v[0], *key;
			size_t len, i;

			switch (eg_glob_key(g, &key, &len)) {
			case EG_KEY_BASENAME:
				best = scan_bucket(l, &p->by_basename, key, len, j, best);
				break;
			case EG_KEY_DIR:
				best = scan_bucket(l, &p->by_dir, key, len, j, best);
				break;
			case EG_KEY_SUFFIX:
				best = scan_bucket(l, &p->by_suffix, key, len, j, best);
				break;
			default:
				break;
			}
			/* A literal path also falls under the directory and tail globs that take it. */
			for (i = 0; r->path_glob[0].literal && g[i] && best != -2; i++)
				if (g[i] == '/')
					best = scan_bucket(l, &p->by_dir, g, i + 1, j, best);
			for (i = 1; r->path_glob[0].literal && i <= EG_SUFFIX_KEY_MAX && i <= strlen(g) &&
				    best != -2; i++)
				if (p->suffix_lens & (1ull << (i - 1)))
					best = scan_bucket(l, &p->by_suffix, g + strlen(g) - i, i, j, best);
		}
		if (r->n_uids)
			best = scan_bucket(l, &p->by_uid, (const char *)&r->uids[0], sizeof(r->uids[0]), j, best);
		if (r->cgroups.n) {
			const char *cg = r->cgroups.v[0];
			size_t i;

			best = scan_bucket(l, &p->by_cgroup, "/", 1, j, best);
			for (i = 1; best != -2; i++) {
				if (cg[i] == '/' || !cg[i])
					best = scan_bucket(l, &p->by_cgroup, cg, i, j, best);
				if (!cg[i])
					break;
			}
		}
		if (best == -2) {
			warn(l, r->pos, "stopped looking for rules that can never match at rule '%s': "
			     "too many rules to compare", r->name);
			break;
		}
		if (best >= 0)
			warn(l, r->pos, "rule '%s' can never match: rule '%s' (line %d) comes first and "
			     "matches every exec it would", r->name, p->rules[best].name, p->rules[best].pos.line);
	}
	free(l->stamp);
}

static bool looks_like_glob(const char *re)
{
	const char *star = strchr(re, '*');

	/* A star after a literal ("/" then star): how shell globs read, not regexes. */
	return star && (star == re || (star[-1] != '.' && star[-1] != ')' && star[-1] != ']'));
}

/*
 * Execs are judged by the file that runs: its absolute path with every
 * symlink resolved. A path written another way (relative, with "..", "//"
 * or through a symlinked directory) can only ever match a spelling, never
 * a resolved file: say what to write instead.
 */
static void lint_path(struct lint *l, const struct eg_rule *r, uint32_t i)
{
	const char *g = r->paths.v[i];
	char lit[PATH_MAX], norm[PATH_MAX], real[PATH_MAX];
	size_t n;

	if (g[0] != '/') {
		if (g[0] != '*')
			warn(l, r->paths.pos[i], "path '%.100s' in rule '%s' is not absolute: execs are judged by "
			     "their resolved absolute path, so it never matches", g, r->name);
		return;
	}
	if (strlen(g) > 1 && g[strlen(g) - 1] == '/') {
		warn(l, r->paths.pos[i], "path '%.100s' in rule '%s' ends with '/': a program is a file, so it "
		     "never matches; for what is under the directory write '%.100s*'", g, r->name, g);
		return;
	}
	if (strstr(g, "//") || strstr(g, "/./") || strstr(g, "/../") ||
	    (strlen(g) >= 2 && !strcmp(g + strlen(g) - 2, "/.")) ||
	    (strlen(g) >= 3 && !strcmp(g + strlen(g) - 3, "/.."))) {
		warn(l, r->paths.pos[i], "path '%.100s' in rule '%s' can only match how a command is typed, "
		     "and execs are judged by the resolved file: write it without '//', '.' or '..'", g, r->name);
		return;
	}
	/* the literal part: the whole path, or the directory before the first metacharacter */
	for (n = 0; g[n] && !strchr("*?[\\", g[n]); n++)
		;
	if (g[n])
		while (n > 0 && g[n - 1] != '/')
			n--;
	if (n >= sizeof(lit) || n == 0)
		return;
	memcpy(lit, g, n);
	lit[n] = '\0';
	snprintf(norm, sizeof(norm), "%s", lit);
	if (n > 1 && norm[n - 1] == '/')
		norm[n - 1] = '\0';
	/* the longest part that exists: a file yet to be installed still sits in a directory */
	while (!realpath(norm, real)) {
		char *slash = strrchr(norm, '/');

		if (!slash || slash == norm)
			return;
		*slash = '\0';
	}
	if (!strcmp(real, norm))
		return;
	warn(l, r->paths.pos[i], "'%.100s' in rule '%s' goes through a symlink: '%.100s' is '%.100s' once "
	     "resolved, and execs are judged by the resolved file, so this spelling never matches; write "
	     "'%.100s%s' (or use basenames)", g, r->name, norm, real, real, g + strlen(norm));
}

static void lint_rule(struct lint *l, const struct eg_rule *r)
{
	const struct eg_policy_settings *s = &l->p->settings;
	uint32_t i;

	if (!has_filter(r))
		warn(l, r->pos, "rule '%s' has no matcher (basenames, paths, args, args_patterns, context, "
		     "cgroups, uids): it matches every exec and no rule after it is reached", r->name);
	for (i = 0; i < r->n_args_patterns; i++) {
		const struct eg_regex *re = &r->args_patterns[i];

		if (!eg_regex_matches_empty(re))
			continue;
		warn(l, re->pos, "pattern '%.100s' in rule '%s' matches the empty string, so it matches every "
		     "command line%s", re->src, r->name,
		     looks_like_glob(re->src) ? " (args_patterns are regular expressions: '*' repeats "
						"what is before it; it is not a glob)" : "");
	}
	for (i = 0; i < r->basenames.n; i++) {
		if (strchr(r->basenames.v[i], '/'))
			warn(l, r->basenames.pos[i], "basename '%.100s' contains '/', so it never matches; "
			     "put paths under 'paths'", r->basenames.v[i]);
		else if (strpbrk(r->basenames.v[i], "*?["))
			warn(l, r->basenames.pos[i], "basename '%.100s' in rule '%s' is compared whole, not as a "
			     "glob: it matches only a file of that very name; for a glob write paths: ['*/%.100s']",
			     r->basenames.v[i], r->name, r->basenames.v[i]);
	}
	for (i = 0; i < r->paths.n; i++)
		lint_path(l, r, i);
	for (i = 0; i < r->cgroups.n; i++)
		if (!strcmp(r->cgroups.v[i], "/"))
			warn(l, r->cgroups.pos[i], "cgroup '/' is the whole hierarchy; drop 'cgroups' to say so");
	if (r->decision == EG_DECISION_APPROVAL && !s->approval_timeout_set)
		warn(l, r->decision_pos, "rule '%s' asks for approval but sandbox.seccomp.execve.approval_timeout "
		     "is not set: a waiting exec is %s after the default 10s", r->name,
		     s->approval_timeout_action == EG_TIMEOUT_ALLOW ? "allowed" : "denied");
}

static void lint_bypass(struct lint *l)
{
	const struct eg_strv *b = &l->p->bypass;
	uint32_t i;

	for (i = 0; i < b->n; i++) {
		const char *g = b->v[i];

		if (!strchr(g, '/'))
			warn(l, b->pos[i], "internal_bypass entry '%.100s' has no directory: it covers files so "
			     "named in the system binary directories (/bin, /sbin, /usr/bin, /usr/sbin, "
			     "/usr/local/bin, ...) only", g);
		else if (g[0] != '/')
			warn(l, b->pos[i], "internal_bypass entry '%.100s' is not an absolute path: it never "
			     "matches a resolved file", g);
	}
}

void eg_policy_lint(const struct eg_policy *p, const char *file, struct eg_diags *d)
{
	struct lint l = { .p = p, .file = file, .d = d, .budget = EG_POLICY_LINT_BUDGET };
	const struct eg_policy_settings *s = &p->settings;
	size_t i;

	if (!d)
		return;
	lint_bypass(&l);
	if (!s->approval_timeout_set) {
		if (s->default_decision == EG_DECISION_APPROVAL)
			warn(&l, p->default_decision_pos, "default_decision is approval but "
			     "sandbox.seccomp.execve.approval_timeout is not set (default 10s)");
		if (s->on_truncated == EG_DECISION_APPROVAL)
			warn(&l, p->on_truncated_pos, "on_truncated is approval but "
			     "sandbox.seccomp.execve.approval_timeout is not set (default 10s)");
	}
	for (i = 0; i < p->n_rules; i++)
		lint_rule(&l, &p->rules[i]);
	lint_shadowed(&l);
}
