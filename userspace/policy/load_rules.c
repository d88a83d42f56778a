// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The policy's rules (commands:) and agent contexts (contexts:): each
 * rule's matchers, its decision and scope; each context's identities (read
 * as rules into the identities' policy) and limits; rules' context names
 * resolved once the whole file is read.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "policy/loader.h"
#include "util/severity.h"

static int cgroup_item(struct yreader *y, const char *what, void *ctx)
{
	struct loader *l = LOADER(y);
	struct eg_pos pos = yr_ev_pos(&l->y);
	char *s = yr_get_string(&l->y, what, false);
	size_t n;

	if (!s)
		return l->y.fatal ? -EINVAL : 0;
	if (s[0] != '/') {
		yr_err(&l->y, pos, "cgroup '%.64s' must be a path from the cgroup v2 root, starting with '/'", s);
		free(s);
		return 0;
	}
	/* "/a/b/" and "/a/b" name the same cgroup; the root stays "/". */
	n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
	return load_strv_push(l, ctx, s, pos);
}

struct regex_list {
	struct eg_regex **v;
	uint32_t *n;
	bool whole;			/* args: anchored at both ends */
};

static int regex_item(struct yreader *y, const char *what, void *ctx)
{
	struct loader *l = LOADER(y);
	struct regex_list *rl = ctx;
	struct eg_pos pos = yr_ev_pos(&l->y);
	uint32_t opts = PCRE2_NEVER_UTF | PCRE2_NEVER_BACKSLASH_C;
	struct eg_regex *re;
	PCRE2_SIZE erroff;
	pcre2_code *code;
	int errcode;
	char *s;

	if (l->p->n_regexes >= EG_POLICY_MAX_REGEXES) {
		yr_err(&l->y, pos, "more than %u regular expressions in one policy", EG_POLICY_MAX_REGEXES);
		l->y.fatal = true;
		return -EINVAL;
	}
	s = yr_get_string(&l->y, what, false);
	if (!s)
		return l->y.fatal ? -EINVAL : 0;
	if (rl->whole)
		opts |= PCRE2_ANCHORED | PCRE2_ENDANCHORED;
	code = pcre2_compile((PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, opts, &errcode, &erroff, NULL);
	if (!code) {
		PCRE2_UCHAR msg[256];

		if (errcode == PCRE2_ERROR_NOMEMORY) {
			free(s);
			yr_oom(&l->y);
			return -ENOMEM;
		}
		pcre2_get_error_message(errcode, msg, sizeof(msg));
		yr_err(&l->y, pos, "bad regular expression '%.128s' in '%s': %s at offset %zu", s, what,
		    (const char *)msg, (size_t)erroff);
		free(s);
		return 0;
	}
	/* JIT where it works; the interpreter gives the same answers, slower. */
	if (l->p->n_regexes < EG_POLICY_MAX_JIT)
		pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
	l->p->n_regexes++;
	/* A short pattern can compile to 64 KiB ("(a|b){1000}"): bound the sum. */
	{
		size_t code_size = 0, jit_size = 0;

		pcre2_pattern_info(code, PCRE2_INFO_SIZE, &code_size);
		pcre2_pattern_info(code, PCRE2_INFO_JITSIZE, &jit_size);
		l->p->regex_mem += code_size + jit_size;
	}
	if (l->p->regex_mem > EG_POLICY_MAX_REGEX_MEM) {
		yr_err(&l->y, pos, "the regular expressions need more than %u MiB compiled; simplify them "
		    "(this one, '%.64s', is one of many or a large one)", EG_POLICY_MAX_REGEX_MEM >> 20, s);
		pcre2_code_free(code);
		free(s);
		l->y.fatal = true;
		return -EINVAL;
	}
	if (!(*rl->n & (*rl->n - 1))) {
		size_t cap = *rl->n ? (size_t)*rl->n * 2 : 1;

		re = realloc(*rl->v, cap * sizeof(*re));
		if (!re) {
			pcre2_code_free(code);
			free(s);
			yr_oom(&l->y);
			return -ENOMEM;
		}
		*rl->v = re;
	}
	re = &(*rl->v)[(*rl->n)++];
	re->code = code;
	re->src = s;
	re->pos = pos;
	return 0;
}

struct ctx_words {
	bool direct, nested;
};

static int context_item(struct yreader *y, const char *what, void *ctx)
{
	struct loader *l = LOADER(y);
	static const char *const words[] = { "direct", "nested", NULL };
	struct ctx_words *w = ctx;

	(void)what;
	if (!strcmp(yr_sval(&l->y), "direct"))
		w->direct = true;
	else if (!strcmp(yr_sval(&l->y), "nested"))
		w->nested = true;
	else if (yr_suggest(yr_sval(&l->y), words))
		yr_err(&l->y, yr_ev_pos(&l->y), "context must list 'direct' and/or 'nested', got '%.64s'; did you mean '%s'?",
		    yr_sval(&l->y), yr_suggest(yr_sval(&l->y), words));
	else
		yr_err(&l->y, yr_ev_pos(&l->y), "context must list 'direct' and/or 'nested', got '%.64s'", yr_sval(&l->y));
	return 0;
}

static int parse_context(struct loader *l, struct eg_rule *r)
{
	struct yr_map it;
	long long v;
	int k, rc;

	r->has_context = true;
	if (l->y.ev.type == YAML_SEQUENCE_START_EVENT) {
		struct ctx_words w = {};

		if (yr_each_item(&l->y, "context", NULL, context_item, &w))
			return -EINVAL;
		r->min_depth = w.direct ? 0 : 1;
		r->max_depth = w.nested ? EG_DEPTH_INF : 0;
		return 0;
	}
	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return yr_wrong_type(&l->y, "context", "[direct], [nested], [direct, nested] or {min_depth: N, max_depth: M}");
	yr_map_begin(&l->y, &it, context_keys, "in a rule's context mapping");
	while ((k = yr_map_next(&l->y, &it)) >= 0) {
		rc = yr_get_int(&l->y, context_keys[k], 0, EG_DEPTH_INF - 1, &v);
		if (rc < 0)
			return -EINVAL;
		if (rc)
			continue;
		if (k == CTX_MIN_DEPTH)
			r->min_depth = (int32_t)v;
		else
			r->max_depth = (int32_t)v;
	}
	if (k == -2)
		return -EINVAL;
	if (!it.seen)
		yr_err(&l->y, it.pos, "context mapping is empty; give min_depth and/or max_depth");
	if (r->min_depth > r->max_depth)
		yr_err(&l->y, it.pos, "context min_depth %d is above max_depth %d: the rule could never match",
		    r->min_depth, r->max_depth);
	return 0;
}

static int uid_item(struct yreader *y, const char *what, void *ctx)
{
	struct loader *l = LOADER(y);
	struct eg_rule *r = ctx;
	long long v;
	int rc;

	(void)what;
	rc = yr_get_int(&l->y, "uids", 0, (long long)UINT32_MAX - 1, &v);
	if (rc)
		return rc < 0 ? -EINVAL : 0;
	if (yr_count_item(&l->y, yr_ev_pos(&l->y)))
		return -EINVAL;
	if (!(r->n_uids & (r->n_uids - 1))) {
		size_t cap = r->n_uids ? (size_t)r->n_uids * 2 : 1;
		uint32_t *u = realloc(r->uids, cap * sizeof(*u));

		if (!u) {
			yr_oom(&l->y);
			return -ENOMEM;
		}
		r->uids = u;
	}
	r->uids[r->n_uids++] = (uint32_t)v;
	return 0;
}

static int parse_uids(struct loader *l, struct eg_rule *r)
{
	struct eg_pos pos = yr_ev_pos(&l->y);
	size_t n = 0;

	/* Integers, not strings: each_item would refuse nothing here, so walk by hand. */
	if (l->y.ev.type != YAML_SEQUENCE_START_EVENT)
		return yr_wrong_type(&l->y, "uids", "a list of integers");
	for (;;) {
		if (yr_next(&l->y))
			return -EINVAL;
		if (l->y.ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		n++;
		if (uid_item(&l->y, "uids", r))
			return -EINVAL;
	}
	if (!n)
		yr_err(&l->y, pos, "'uids' is an empty list; remove the key or list something");
	return 0;
}

static struct eg_rule *new_rule(struct loader *l)
{
	struct eg_policy *p = l->p;
	struct eg_rule *r;

	if (p->n_rules >= EG_POLICY_MAX_RULES) {
		yr_err(&l->y, yr_ev_pos(&l->y), "more than %u rules", EG_POLICY_MAX_RULES);
		l->y.fatal = true;
		return NULL;
	}
	if (p->n_rules == p->cap_rules) {
		size_t cap = p->cap_rules ? p->cap_rules * 2 : 16;

		r = realloc(p->rules, cap * sizeof(*r));
		if (!r) {
			yr_oom(&l->y);
			return NULL;
		}
		p->rules = r;
		p->cap_rules = cap;
	}
	r = &p->rules[p->n_rules++];
	memset(r, 0, sizeof(*r));
	r->max_depth = EG_DEPTH_INF;
	return r;
}

/* severity: info, low, medium, high or critical (events carry it; --min-severity filters by it) */
static int parse_severity(struct loader *l, struct eg_rule *r)
{
	struct eg_pos pos = yr_ev_pos(&l->y);
	char *v = yr_get_string(&l->y, "severity", true);

	if (!v)
		return 0;
	r->severity = eg_severity_parse(v);
	if (!r->severity)
		yr_err(&l->y, pos, "severity '%s' is none of info, low, medium, high, critical", v);
	free(v);
	return 0;
}

static int redirect_arg(struct yreader *y, const char *what, void *ctx)
{
	struct eg_redirect *rd = ctx;
	char *s = yr_get_string(y, what, true), **v;

	if (!s)
		return y->fatal ? -EINVAL : 0;
	if (rd->n_args >= 256) {
		free(s);
		yr_err(y, yr_ev_pos(y), "redirect_to.args: 256 arguments at most");
		return 0;
	}
	v = realloc(rd->args, (rd->n_args + 1) * sizeof(*v));
	if (!v) {
		free(s);
		yr_oom(y);
		return -EINVAL;
	}
	rd->args = v;
	rd->args[rd->n_args++] = s;
	return 0;
}

/*
 * redirect_to: PATH, or {command: PATH, args: [...]}. The command must be
 * an absolute path to an executable file now (policy check says so): a
 * redirect to nothing would be a deny that hides why.
 */
static int parse_redirect(struct loader *l, struct eg_rule *r)
{
	static const char *const keys[] = { "command", "args", NULL };
	struct eg_pos pos = yr_ev_pos(&l->y);
	struct eg_redirect *rd = &r->redirect;
	struct stat st;
	struct yr_map it;
	int k = 0, rc = 0;

	r->redirect_pos = pos;
	if (yr_is_scalar(&l->y)) {
		rd->command = yr_get_string(&l->y, "redirect_to", false);
	} else if (l->y.ev.type == YAML_MAPPING_START_EVENT) {
		yr_map_begin(&l->y, &it, keys, "in redirect_to");
		while (rc == 0 && (k = yr_map_next(&l->y, &it)) >= 0) {
			if (k == 0)
				rd->command = yr_get_string(&l->y, "redirect_to.command", false);
			else
				rc = yr_each_item(&l->y, "redirect_to.args", "a list of arguments", redirect_arg, rd);
			if (l->y.fatal)
				return -EINVAL;
		}
		if (rc || k == -2)
			return -EINVAL;
		if (!(it.seen & 1u))
			yr_err(&l->y, pos, "redirect_to needs 'command' (an absolute path)");
	} else {
		return yr_wrong_type(&l->y, "redirect_to", "a command's absolute path, or {command: PATH, args: [...]}");
	}
	if (l->y.fatal)
		return -EINVAL;
	if (rd->command && rd->command[0] != '/')
		yr_err(&l->y, pos, "redirect_to '%.200s' must be an absolute path (/usr/bin/...)", rd->command);
	/* a session's policy (no_files): the daemon looks at no file for someone it does not trust */
	else if (rd->command && !l->top->no_files && (errno = 0, stat(rd->command, &st) || !S_ISREG(st.st_mode) || !(st.st_mode & 0111) ||
				 access(rd->command, X_OK)))
		yr_err(&l->y, pos, "redirect_to '%.200s' is not an executable file here: %s", rd->command,
		       errno ? strerror(errno) : "not a file with an execute bit");
	return 0;
}

/*
 * The rule names a verdict carries when no rule of the policy decided it
 * (policy/README.md): a rule so named could not be told from them.
 * ("restricted", a restricted session's refusal, is the shipped
 * policy/restricted.yaml's rule of the same meaning.)
 */
static bool reserved_rule_name(const char *n)
{
	static const char *const names[] = { "default", "internal_bypass", "on_truncated", "context_limit",
					     "on_error", "loader", "ticket", "unsupported" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(n, names[i]))
			return true;
	return false;
}

/*
 * A rule of commands, or (ident, the context's id) one of a context's
 * identities: a matcher of the same keys, without name, decision or scope.
 */
static int parse_rule(struct loader *l, uint32_t ident)
{
	struct regex_list rl;
	struct yr_map it;
	struct eg_rule *r;
	uint32_t idx, extra;
	int k = 0, rc = 0;

	r = new_rule(l);
	if (!r)
		return -EINVAL;
	idx = (uint32_t)(r - l->p->rules);
	r->pos = yr_ev_pos(&l->y);
	r->ident_of = ident;
	yr_map_begin(&l->y, &it, rule_keys, ident ? "in an identity" : "in a rule");
	while (rc == 0 && (k = yr_map_next(&l->y, &it)) >= 0) {
		/* p->rules does not move while one rule is read: r stays valid. */
		switch (k) {
		case R_NAME:
			r->name_pos = yr_ev_pos(&l->y);
			r->name = yr_get_string(&l->y, "name", true);
			if (r->name && !r->name[0]) {
				yr_err(&l->y, r->name_pos, "rule name is empty");
			} else if (r->name && reserved_rule_name(r->name)) {
				/* Verdicts that no rule decided carry these names. */
				yr_err(&l->y, r->name_pos, "rule name '%s' is reserved; choose another", r->name);
			} else if (r->name && !ident) {
				/* (an identity's name is an error, said below; its index is not a rule's) */
				struct eg_bucket *b = eg_htab_find(&l->names, r->name, strlen(r->name),
								   eg_hash(r->name, strlen(r->name)));

				if (b)
					yr_err(&l->y, r->name_pos, "duplicate rule name '%s' (first at line %d)", r->name,
					    l->p->rules[b->idx[0]].name_pos.line);
				else if (eg_htab_add(&l->names, r->name, idx))
					yr_oom(&l->y);
			}
			break;
		case R_BASENAMES:
			rc = yr_each_item(&l->y, "basenames", "a list of names, e.g. [git]", load_strv_item, &r->basenames);
			break;
		case R_PATHS:
			rc = yr_each_item(&l->y, "paths", "a list of paths or globs, e.g. [/usr/bin/*]", load_strv_item, &r->paths);
			break;
		case R_ARGS_PATTERNS:
			rl = (struct regex_list){ &r->args_patterns, &r->n_args_patterns, false };
			rc = yr_each_item(&l->y, "args_patterns", "a list of regular expressions", regex_item, &rl);
			break;
		case R_ARGS:
			rl = (struct regex_list){ &r->args, &r->n_args, true };
			rc = yr_each_item(&l->y, "args", "a list of regular expressions", regex_item, &rl);
			break;
		case R_CONTEXT:
			rc = parse_context(l, r);
			break;
		case R_CGROUPS:
			rc = yr_each_item(&l->y, "cgroups", "a list of cgroup paths, e.g. [/system.slice/foo.service]",
				       cgroup_item, &r->cgroups);
			break;
		case R_UIDS:
			rc = parse_uids(l, r);
			break;
		case R_DECISION:
			r->decision_pos = yr_ev_pos(&l->y);
			rc = load_decision(l, "decision", RULE_DECISIONS, &r->decision);
			r->has_decision = true;
			break;
		case R_MESSAGE:
			r->message = yr_get_string(&l->y, "message", true);
			break;
		case R_CONTEXTS:
			rc = yr_each_item(&l->y, "contexts", "a list of context names, e.g. [claude] or [none]",
				       load_strv_item, &r->ctx_names);
			break;
		case R_SEVERITY:
			rc = parse_severity(l, r);
			break;
		case R_TAGS:
			rc = yr_each_item(&l->y, "tags", "a list of words, e.g. [network, download]", load_strv_item, &r->tags);
			break;
		case R_REDIRECT_TO:
			rc = parse_redirect(l, r);
			break;
		}
		if (l->y.fatal)
			return -EINVAL;
	}
	if (rc || k == -2)
		return -EINVAL;
	if (ident) {
		extra = it.seen & ~IDENT_KEYS;
		for (k = 0; rule_keys[k]; k++)
			if (extra & (1u << k))
				yr_err(&l->y, it.first[k], "'%s' does not belong in an identity, which says what the "
				    "program is (basenames, paths, args, uids)", rule_keys[k]);
		if (!(it.seen & IDENT_KEYS))
			yr_err(&l->y, r->pos, "an identity needs basenames, paths, args or uids");
		r->decision = EG_DECISION_ALLOW;
		r->has_decision = true;
		return 0;
	}
	if (!(it.seen & (1u << R_NAME)))
		yr_err(&l->y, r->pos, "rule has no 'name'");
	if (!(it.seen & (1u << R_DECISION)))
		yr_err(&l->y, r->pos, "rule '%s' has no 'decision' (allow, deny, approval, audit or redirect)",
		    r->name ? r->name : "?");
	else if (r->decision == EG_DECISION_REDIRECT && !r->redirect.command && !(it.seen & (1u << R_REDIRECT_TO)))
		yr_err(&l->y, r->decision_pos, "rule '%s' redirects but has no 'redirect_to' (a command: "
		    "redirect_to: /usr/bin/rg, or {command: /usr/bin/rg, args: [--hidden]})", r->name ? r->name : "?");
	else if (r->decision != EG_DECISION_REDIRECT && (it.seen & (1u << R_REDIRECT_TO)))
		yr_err(&l->y, r->redirect_pos, "rule '%s' has 'redirect_to' but its decision is not redirect",
		    r->name ? r->name : "?");
	return 0;
}

int load_commands(struct loader *l)
{
	if (l->y.ev.type != YAML_SEQUENCE_START_EVENT)
		return yr_wrong_type(&l->y, "commands", "a list of rules (- name: ...)");
	for (;;) {
		if (yr_next(&l->y))
			return -EINVAL;
		if (l->y.ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (l->y.ev.type != YAML_MAPPING_START_EVENT) {
			yr_err(&l->y, yr_ev_pos(&l->y), "each item of 'commands' must be a rule mapping (- name: ...), got %s",
			    yr_kind(&l->y));
			if (yr_skip(&l->y))
				return -EINVAL;
			continue;
		}
		if (parse_rule(l, 0))
			return -EINVAL;
	}
}


/* A context's identities: a list of matchers, read into the identities' policy. */
static int parse_identities(struct loader *l, uint32_t id)
{
	struct eg_context *c = &l->top->contexts[id - 1];
	struct eg_pos pos = yr_ev_pos(&l->y);
	int rc = 0;

	if (l->y.ev.type != YAML_SEQUENCE_START_EVENT)
		return yr_wrong_type(&l->y, "identities", "a list of matchers, e.g. [{paths: [/usr/local/bin/agent]}]");
	l->p = l->top->idents;
	for (;;) {
		if (yr_next(&l->y)) {
			rc = -EINVAL;
			break;
		}
		if (l->y.ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		if (l->y.ev.type != YAML_MAPPING_START_EVENT) {
			yr_err(&l->y, yr_ev_pos(&l->y), "each identity is a mapping (- paths: [...]), got %s", yr_kind(&l->y));
			if (yr_skip(&l->y)) {
				rc = -EINVAL;
				break;
			}
			continue;
		}
		if (parse_rule(l, id)) {
			rc = -EINVAL;
			break;
		}
		c->n_ident++;
	}
	l->p = l->top;
	if (!rc && !c->n_ident)
		yr_err(&l->y, pos, "'identities' is an empty list: the context could never be entered");
	return rc;
}

static int parse_limits(struct loader *l, struct eg_context *c)
{
	struct yr_map it;
	long long v;
	int k, rc;

	if (l->y.ev.type != YAML_MAPPING_START_EVENT)
		return yr_wrong_type(&l->y, "limits", "a mapping, e.g. {max_depth: 8, max_consecutive_shells: 2}");
	yr_map_begin(&l->y, &it, limit_keys, "in a context's limits");
	while ((k = yr_map_next(&l->y, &it)) >= 0) {
		rc = yr_get_int(&l->y, limit_keys[k], k == LIM_MAX_SHELLS ? 1 : 0, 65535, &v);
		if (rc < 0)
			return -EINVAL;
		if (rc)
			continue;
		if (k == LIM_MAX_DEPTH)
			c->max_depth = (int32_t)v;
		else
			c->max_shells = (int32_t)v;
	}
	return k == -2 ? -EINVAL : 0;
}

static int parse_one_context(struct loader *l)
{
	struct eg_policy *p = l->top;
	struct eg_context *c;
	struct yr_map it;
	uint32_t id;
	int k = 0, rc = 0;

	if (p->n_contexts >= EG_POLICY_MAX_CONTEXTS) {
		yr_err(&l->y, yr_ev_pos(&l->y), "more than %u contexts (the kernel keeps one of 31 ids per task)",
		    EG_POLICY_MAX_CONTEXTS);
		return yr_skip(&l->y);
	}
	if (!p->contexts) {
		p->contexts = calloc(EG_POLICY_MAX_CONTEXTS, sizeof(*p->contexts));
		if (!p->contexts) {
			yr_oom(&l->y);
			return -ENOMEM;
		}
	}
	id = ++p->n_contexts;
	c = &p->contexts[id - 1];
	c->pos = yr_ev_pos(&l->y);
	c->max_depth = -1;
	c->max_shells = -1;
	yr_map_begin(&l->y, &it, actx_keys, "in a context");
	while (!rc && (k = yr_map_next(&l->y, &it)) >= 0) {
		switch (k) {
		case AC_NAME: {
			struct eg_pos pos = yr_ev_pos(&l->y);
			uint32_t j;

			c->name = yr_get_string(&l->y, "name", false);
			if (!c->name)
				break;
			if (!strcmp(c->name, "none")) {
				yr_err(&l->y, pos, "context name 'none' is reserved (a rule's contexts: [none] means outside any)");
				break;
			}
			if (strlen(c->name) > EG_POLICY_CONTEXT_NAME_MAX) {
				yr_err(&l->y, pos, "context name '%.20s...' is %zu bytes long; at most %d", c->name,
				       strlen(c->name), EG_POLICY_CONTEXT_NAME_MAX);
				break;
			}
			for (j = 0; j + 1 < id; j++)
				if (p->contexts[j].name && !strcmp(p->contexts[j].name, c->name))
					yr_err(&l->y, pos, "duplicate context name '%s' (first at line %d)", c->name,
					    p->contexts[j].pos.line);
			break;
		}
		case AC_IDENTITIES:
			rc = parse_identities(l, id);
			break;
		case AC_LIMITS:
			rc = parse_limits(l, c);
			break;
		}
		if (l->y.fatal)
			return -EINVAL;
	}
	if (rc || k == -2)
		return -EINVAL;
	if (!(it.seen & (1u << AC_NAME)))
		yr_err(&l->y, c->pos, "context has no 'name'");
	if (!(it.seen & (1u << AC_IDENTITIES)))
		yr_err(&l->y, c->pos, "context '%s' has no 'identities': nothing would enter it",
		    c->name ? c->name : "?");
	return 0;
}

int load_contexts(struct loader *l)
{
	if (l->y.ev.type != YAML_SEQUENCE_START_EVENT)
		return yr_wrong_type(&l->y, "contexts", "a list of contexts (- name: ...)");
	if (l->top->no_files) {
		/* a session's policy judges every exec of the session at context none: its contexts never match */
		yr_err(&l->y, yr_ev_pos(&l->y), "'contexts' belongs in the daemon's policy, not a session's "
		       "(every process of a session is in the session; its rules are judged outside any context)");
		return yr_skip(&l->y) ? -EINVAL : 0;
	}
	if (!l->top->idents) {
		struct eg_policy *q = calloc(1, sizeof(*q));

		if (!q) {
			yr_oom(&l->y);
			return -ENOMEM;
		}
		load_settings_defaults(&q->settings);
		q->no_files = l->top->no_files;
		memcpy(q->sha256, l->top->sha256, sizeof(q->sha256));
		l->top->idents = q;
	}
	for (;;) {
		if (yr_next(&l->y))
			return -EINVAL;
		if (l->y.ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (l->y.ev.type != YAML_MAPPING_START_EVENT) {
			yr_err(&l->y, yr_ev_pos(&l->y), "each item of 'contexts' must be a mapping (- name: ...), got %s", yr_kind(&l->y));
			if (yr_skip(&l->y))
				return -EINVAL;
			continue;
		}
		if (parse_one_context(l))
			return -EINVAL;
	}
}

/* Rules' contexts: names, now that every context is known, into masks. */
void load_resolve_contexts(struct loader *l)
{
	struct eg_policy *p = l->top;
	size_t i;
	uint32_t j, id;

	for (i = 0; i < p->n_rules; i++) {
		struct eg_rule *r = &p->rules[i];

		for (j = 0; j < r->ctx_names.n; j++) {
			const char *n = r->ctx_names.v[j];

			id = strcmp(n, "none") ? policy_context_id(p, n) : 0;
			if (!id && strcmp(n, "none")) {
				yr_err(&l->y, r->ctx_names.pos[j], "rule '%s' names context '%.64s', which the policy does "
				    "not define (contexts: [- name: %.64s ...])", r->name ? r->name : "?", n, n);
				continue;
			}
			r->ctx_mask |= 1u << id;
		}
	}
}
