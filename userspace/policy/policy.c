// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The policy object's life cycle and accessors, and diagnostics. Loading is
 * in load.c, matching in eval.c, warnings in lint.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "policy/internal.h"

static const char *const decision_names[] = {
	[EG_DECISION_ALLOW] = "allow",
	[EG_DECISION_DENY] = "deny",
	[EG_DECISION_APPROVAL] = "approval",
	[EG_DECISION_AUDIT] = "audit",
	[EG_DECISION_ERROR] = "error",
	[EG_DECISION_REDIRECT] = "redirect",
};

const char *eg_decision_name(enum eg_decision d)
{
	if ((unsigned int)d >= sizeof(decision_names) / sizeof(decision_names[0]))
		return "unknown";
	return decision_names[d];
}

const struct eg_redirect *policy_rule_redirect(const struct eg_policy *p, const char *rule)
{
	size_t i;

	for (i = 0; p && rule && i < p->n_rules; i++)
		if (p->rules[i].decision == EG_DECISION_REDIRECT && p->rules[i].name && !strcmp(p->rules[i].name, rule))
			return &p->rules[i].redirect;
	return NULL;
}

bool policy_rule_has_redirects(const struct eg_policy *p)
{
	size_t i;

	for (i = 0; p && i < p->n_rules; i++)
		if (p->rules[i].decision == EG_DECISION_REDIRECT)
			return true;
	return false;
}

int policy_redirect_names(const struct eg_policy *p,
			  int (*fn)(void *arg, const char *name, const char *rule, const char *message,
				    const struct eg_redirect *rd),
			  void *arg)
{
	size_t i, k;
	int rc;

	for (i = 0; p && i < p->n_rules; i++) {
		const struct eg_rule *r = &p->rules[i];

		if (r->decision != EG_DECISION_REDIRECT || !r->redirect.command || r->ident_of)
			continue;
		for (k = 0; k < r->basenames.n; k++)
			if ((rc = fn(arg, r->basenames.v[k], r->name, r->message, &r->redirect)))
				return rc;
		for (k = 0; k < r->paths.n; k++) {
			const char *base = strrchr(r->paths.v[k], '/');

			if (base && base[1] && !strpbrk(base + 1, "*?[") &&
			    (rc = fn(arg, base + 1, r->name, r->message, &r->redirect)))
				return rc;
		}
	}
	return 0;
}

int eg_decision_parse(const char *s, enum eg_decision *ret)
{
	size_t i;

	/* "error" is an outcome, never a decision a file can ask for */
	for (i = 0; i < EG_DECISION__COUNT; i++) {
		if (i != EG_DECISION_ERROR && !strcmp(s, decision_names[i])) {
			*ret = (enum eg_decision)i;
			return 0;
		}
	}
	return -EINVAL;
}

void eg_diag_vadd(struct eg_diags *d, const char *file, struct eg_pos pos, bool warning,
		  const char *fmt, va_list ap)
{
	struct eg_diag *g;

	if (!d)
		return;
	/* Past the cap only the last slot is (re)written, as a summary. */
	if (d->n >= EG_POLICY_MAX_DIAGS)
		return;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		struct eg_diag *v;

		if (cap > EG_POLICY_MAX_DIAGS)
			cap = EG_POLICY_MAX_DIAGS;
		v = realloc(d->v, cap * sizeof(*v));
		if (!v)
			return;
		d->v = v;
		d->cap = cap;
	}
	g = &d->v[d->n++];
	memset(g, 0, sizeof(*g));
	snprintf(g->file, sizeof(g->file), "%s", file ? file : "<policy>");
	g->line = pos.line;
	g->column = pos.col;
	g->warning = warning;
	if (d->n == EG_POLICY_MAX_DIAGS) {
		/* The last slot says more were dropped; it keeps the kind it replaces. */
		snprintf(g->msg, sizeof(g->msg), "too many problems; only the first %u are shown",
			 EG_POLICY_MAX_DIAGS - 1);
		g->line = g->column = 0;
		return;
	}
	vsnprintf(g->msg, sizeof(g->msg), fmt, ap);
}

void eg_diag_add(struct eg_diags *d, const char *file, struct eg_pos pos, bool warning,
		 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	eg_diag_vadd(d, file, pos, warning, fmt, ap);
	va_end(ap);
}

void eg_diags_free(struct eg_diags *d)
{
	if (!d)
		return;
	free(d->v);
	d->v = NULL;
	d->n = d->cap = 0;
}

size_t eg_diags_errors(const struct eg_diags *d)
{
	size_t i, n = 0;

	for (i = 0; d && i < d->n; i++)
		n += !d->v[i].warning;
	return n;
}

int eg_diag_format(const struct eg_diag *d, char *buf, size_t len)
{
	const char *kind = d->warning ? "warning" : "error";

	if (d->line > 0)
		return snprintf(buf, len, "%s:%d:%d: %s: %s", d->file, d->line, d->column, kind, d->msg);
	return snprintf(buf, len, "%s: %s: %s", d->file, kind, d->msg);
}

void eg_strv_free(struct eg_strv *s)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->pos);
	memset(s, 0, sizeof(*s));
}

static void regexes_free(struct eg_regex *v, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		pcre2_code_free(v[i].code);
		free(v[i].src);
	}
	free(v);
}

static void rule_free(struct eg_rule *r)
{
	free(r->name);
	free(r->message);
	for (size_t i = 0; i < r->redirect.n_args; i++)
		free(r->redirect.args[i]);
	free(r->redirect.args);
	free(r->redirect.command);
	eg_strv_free(&r->basenames);
	eg_strv_free(&r->paths);
	free(r->path_glob);
	free(r->path_ids);
	free(r->alias_ids);
	eg_strv_free(&r->cgroups);
	eg_strv_free(&r->ctx_names);
	eg_strv_free(&r->tags);
	regexes_free(r->args_patterns, r->n_args_patterns);
	regexes_free(r->args, r->n_args);
	free(r->uids);
}

void policy_free(struct eg_policy *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n_rules; i++)
		rule_free(&p->rules[i]);
	free(p->rules);
	eg_strv_free(&p->bypass);
	eg_htab_free(&p->by_basename);
	eg_htab_free(&p->by_dir);
	eg_htab_free(&p->by_suffix);
	eg_htab_free(&p->by_uid);
	eg_htab_free(&p->by_cgroup);
	eg_htab_free(&p->by_ident);
	eg_htab_free(&p->by_content);
	eg_htab_free(&p->by_alias);
	eg_htab_free(&p->by_size);
	free(p->bypass_glob);
	free(p->bypass_ids);
	free(p->source);
	free(p->unindexed);
	for (i = 0; i < p->n_contexts; i++)
		free(p->contexts[i].name);
	free(p->contexts);
	policy_free(p->idents);
	eg_strv_free(&p->fs_read);
	eg_strv_free(&p->fs_write);
	eg_strv_free(&p->fs_execute);
	eg_strv_free(&p->env_deny);
	free(p->connect_tcp);
	free(p->bind_tcp);
	if (p->scratch) {
		pcre2_match_data_free(p->scratch->md);
		pcre2_match_context_free(p->scratch->mctx);
		pcre2_jit_stack_free(p->scratch->jit_stack);
		free(p->scratch->join);
		free(p->scratch->cur);
		free(p->scratch);
	}
	free(p);
}

const struct eg_policy_settings *policy_settings(const struct eg_policy *p)
{
	return &p->settings;
}

const char *policy_source(const struct eg_policy *p, size_t *ret_len)
{
	*ret_len = p->source_len;
	return p->source;
}

const struct eg_policy_boundary *policy_boundary(const struct eg_policy *p)
{
	return &p->boundary;
}

const char *policy_sha256(const struct eg_policy *p)
{
	return p->sha256;
}

uint64_t policy_load_seq(const struct eg_policy *p)
{
	return p->load_seq;
}

size_t policy_rule_count(const struct eg_policy *p)
{
	return p ? p->n_rules : 0;
}

int policy_rule_info(const struct eg_policy *p, size_t i, struct eg_rule_info *ret)
{
	const struct eg_rule *r;

	if (!p || i >= p->n_rules)
		return -ERANGE;
	r = &p->rules[i];
	memset(ret, 0, sizeof(*ret));
	ret->name = r->name;
	ret->message = r->message;
	ret->decision = r->decision;
	ret->line = r->pos.line;
	ret->column = r->pos.col;
	ret->basenames = (const char *const *)r->basenames.v;
	ret->n_basenames = r->basenames.n;
	ret->paths = (const char *const *)r->paths.v;
	ret->n_paths = r->paths.n;
	ret->cgroups = (const char *const *)r->cgroups.v;
	ret->n_cgroups = r->cgroups.n;
	ret->uids = r->uids;
	ret->n_uids = r->n_uids;
	ret->n_args_patterns = r->n_args_patterns;
	ret->n_args = r->n_args;
	ret->min_depth = r->min_depth;
	ret->max_depth = r->max_depth == EG_DEPTH_INF ? -1 : r->max_depth;
	ret->ctx_mask = r->ctx_mask;
	return 0;
}

const char *policy_rule_regex(const struct eg_policy *p, size_t i, bool whole, size_t k)
{
	const struct eg_rule *r;

	if (!p || i >= p->n_rules)
		return NULL;
	r = &p->rules[i];
	if (whole)
		return k < r->n_args ? r->args[k].src : NULL;
	return k < r->n_args_patterns ? r->args_patterns[k].src : NULL;
}

const char *const *policy_internal_bypass(const struct eg_policy *p, size_t *ret_n)
{
	*ret_n = p->bypass.n;
	return (const char *const *)p->bypass.v;
}

int policy_rule_file_id(const struct eg_policy *p, size_t i, size_t k, uint64_t *dev, uint64_t *ino)
{
	const struct eg_rule *r;

	if (!p || i >= p->n_rules)
		return -ERANGE;
	r = &p->rules[i];
	if (k >= r->n_path_ids)
		return -ERANGE;
	*dev = r->path_ids[k].id.dev;
	*ino = r->path_ids[k].id.ino;
	return 0;
}

int policy_bypass_file_id(const struct eg_policy *p, size_t k, uint64_t *dev, uint64_t *ino)
{
	if (!p || k >= p->n_bypass_ids)
		return -ERANGE;
	*dev = p->bypass_ids[k].dev;
	*ino = p->bypass_ids[k].ino;
	return 0;
}

void eg_diags_add_error(struct eg_diags *d, const char *file, const char *msg)
{
	struct eg_pos nowhere = { 0, 0 };

	eg_diag_add(d, file, nowhere, false, "%s", msg);
}

void eg_diags_add_warning(struct eg_diags *d, const char *file, int line, int col, const char *msg)
{
	struct eg_pos at = { line, col };

	eg_diag_add(d, file, at, true, "%s", msg);
}

size_t policy_content_sizes(const struct eg_policy *p, uint64_t *out, size_t max)
{
	size_t n = 0;
	uint32_t i;

	if (!p || !p->by_size.used)
		return 0;
	for (i = 0; i <= p->by_size.mask; i++) {
		const struct eg_bucket *b = &p->by_size.b[i];

		if (!b->key || b->keylen != sizeof(uint64_t))
			continue;
		if (n < max)
			memcpy(&out[n], b->key, sizeof(uint64_t));
		n++;
	}
	return n;
}

bool policy_wants_size(const struct eg_policy *p, uint64_t size)
{
	return p && p->by_size.used && size &&
	       eg_htab_find(&p->by_size, (const char *)&size, sizeof(size),
			    eg_hash((const char *)&size, sizeof(size)));
}

int policy_rule_labels(const struct eg_policy *p, int i, int *ret_severity, const char *const **ret_tags,
		       size_t *ret_ntags)
{
	if (!p || i < 0 || (size_t)i >= p->n_rules)
		return -ERANGE;
	*ret_severity = p->rules[i].severity;
	*ret_tags = (const char *const *)p->rules[i].tags.v;
	*ret_ntags = p->rules[i].tags.n;
	return 0;
}
