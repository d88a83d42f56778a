// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Agent contexts: the policy's "contexts:" as the daemon, the kernel rule
 * compiler and `policy check` read them. The loader (load.c) parses them
 * into p->contexts and their identities into p->idents, a policy of allow
 * rules evaluated like any other (names, paths by identity and content,
 * args), so that an identity means in userspace what it means in the
 * kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "policy/internal.h"
#include "names.h"

static bool named(const char *path, const char *const *names, size_t n)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	size_t i;

	b = b ? b + 1 : path;
	for (i = 0; b && i < n; i++)
		if (!strcmp(b, names[i]))
			return true;
	return false;
}

bool policy_is_shell(const char *path)
{
	static const char *const names[] = { EG_SHELL_NAMES };

	return named(path, names, sizeof(names) / sizeof(names[0]));
}

bool policy_is_interpreter(const char *path)
{
	static const char *const names[] = { EG_INTERP_NAMES };

	return named(path, names, sizeof(names) / sizeof(names[0]));
}

size_t policy_context_count(const struct eg_policy *p)
{
	return p ? p->n_contexts : 0;
}

int policy_context_info(const struct eg_policy *p, uint32_t id, struct eg_context_info *ret)
{
	const struct eg_context *c;

	if (!p || !id || id > p->n_contexts)
		return -ERANGE;
	c = &p->contexts[id - 1];
	memset(ret, 0, sizeof(*ret));
	ret->name = c->name;
	ret->line = c->pos.line;
	ret->column = c->pos.col;
	ret->max_depth = c->max_depth;
	ret->max_shells = c->max_shells;
	ret->n_identities = c->n_ident;
	return 0;
}

uint32_t policy_context_id(const struct eg_policy *p, const char *name)
{
	uint32_t i;

	if (!p || !name)
		return 0;
	for (i = 0; i < p->n_contexts; i++)
		/* a context with no name (an error, reported; the load goes on to report more) */
		if (p->contexts[i].name && !strcmp(p->contexts[i].name, name))
			return i + 1;
	return 0;
}

const struct eg_policy *policy_identities(const struct eg_policy *p)
{
	return p && p->n_contexts ? p->idents : NULL;
}

uint32_t policy_identity_context(const struct eg_policy *idents, size_t i)
{
	return idents && i < idents->n_rules ? idents->rules[i].ident_of : 0;
}

uint32_t policy_context_identity(const struct eg_policy *p, const struct eg_exec_req *req)
{
	struct eg_exec_req r;
	struct eg_verdict v;

	if (!p || !p->n_contexts || !p->idents)
		return 0;
	/* an identity is a fact of the program: no depth, no context scopes it */
	r = *req;
	r.context = 0;
	r.depth_known = true;
	r.apply_on_truncated = false;
	policy_eval(p->idents, &r, &v);
	if (v.rule_index < 0 || v.decision != EG_DECISION_ALLOW)
		return 0;
	return p->idents->rules[v.rule_index].ident_of;
}
