// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Policy -> kernel rule maps. The kernel evaluates the compiled rules with
 * the policy's own first-match order (bpf/kjudge.bpf.h); the numbers here
 * keep that order, and a rule left out is said, with why, so `policy
 * check` and `--enforce` can tell the operator exactly what the kernel
 * holds.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "enforce/compile.h"
#include "match/glob.h"

struct vec {
	void *v;
	size_t n, cap, size;
};

static void *vec_push(struct vec *a)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		void *v = realloc(a->v, cap * a->size);

		if (!v)
			return NULL;
		a->v = v;
		a->cap = cap;
	}
	memset((char *)a->v + a->n * a->size, 0, a->size);
	return (char *)a->v + a->n++ * a->size;
}

uint32_t kc_decision(const struct eg_policy *p, enum eg_decision d)
{
	switch (d) {
	case EG_DECISION_DENY:
	case EG_DECISION_REDIRECT:	/* the kernel cannot run another program instead */
		return EG_KD_DENY;
	case EG_DECISION_AUDIT:
		return EG_KD_AUDIT;
	case EG_DECISION_APPROVAL:
		/* the kernel cannot wait for a person */
		return policy_settings(p)->kernel_approval_audit ? EG_KD_AUDIT : EG_KD_DENY;
	case EG_DECISION_ERROR:
		return EG_KD_ERROR;
	default:
		return EG_KD_ALLOW;
	}
}

const char *kc_decision_name(uint32_t kd)
{
	switch (kd) {
	case EG_KD_ALLOW: return "allow";
	case EG_KD_DENY: return "deny";
	case EG_KD_AUDIT: return "audit";
	case EG_KD_BYPASS: return "bypass";
	case EG_KD_ERROR: return "error";
	default: return "none";
	}
}

/* ---- what the kernel's matchers can hold ------------------------------------ */

/* A glob of literal bytes, '*' and '?': the kernel's glob_step() matches those. */
static const char *glob_problem(const char *g)
{
	if (strlen(g) >= EG_KSTR_MAX)
		return "is longer than 255 bytes";
	if (strpbrk(g, "[\\"))
		return "uses [...] or \\ (the kernel matches '*' and '?' only)";
	return NULL;
}

static bool glob_literal(const char *g)
{
	return !strpbrk(g, "*?");
}

/* PCRE2 characters that are not literal outside a class. */
static bool re_special(char c)
{
	return c && strchr("\\^$.|?*+()[]{}", c);
}

int kc_regex_words(const char *re, char *buf, size_t size)
{
	size_t n = strlen(re), at = 0, wstart = 0, i, start, end;
	int words = 0;

	start = 0;
	end = n;
	if (end > start && re[start] == '^')
		start++;
	if (end > start && re[end - 1] == '$' && (end < 2 || re[end - 2] != '\\'))
		end--;
	/* one group around it all: (...) or (?:...) */
	if (end - start >= 2 && re[start] == '(' && re[end - 1] == ')') {
		size_t depth = 0, k;
		bool whole = true;

		for (k = start; k < end; k++) {
			if (re[k] == '\\') {
				k++;
				continue;
			}
			if (re[k] == '(')
				depth++;
			else if (re[k] == ')' && --depth == 0 && k != end - 1)
				whole = false;
		}
		if (whole) {
			start++;
			end--;
			if (end - start >= 2 && re[start] == '?' && re[start + 1] == ':')
				start += 2;
		}
	}
	for (i = start;; i++) {
		if (i == end || re[i] == '|') {
			/* one word ends */
			if (at >= size)
				return -EINVAL;
			buf[at++] = '\0';
			wstart = at;
			words++;
			if (i == end)
				break;
			continue;
		}
		if (re[i] == '\\') {
			/* a backslash before punctuation makes it literal; \d, \w... are classes */
			if (i + 1 >= end || isalnum((unsigned char)re[i + 1]))
				return -EINVAL;
			i++;
		} else if (re_special(re[i])) {
			return -EINVAL;
		}
		if (at + 1 >= size || at - wstart + 1 >= EG_KSTR_MAX)
			return -EINVAL;
		buf[at++] = re[i];
	}
	return words;
}

/* Why rule i cannot go into the kernel, or NULL. */
static const char *rule_problem(const struct eg_policy *p, size_t i, const struct eg_rule_info *ri,
				char *why, size_t len)
{
	char words[8192];
	size_t k;

	if (ri->n_args_patterns) {
		snprintf(why, len, "args_patterns are regular expressions searched in the joined "
			 "command line: sessions and the audit log apply them");
		return why;
	}
	if (ri->n_args > EG_KARG_GROUPS) {
		snprintf(why, len, "more than %d args", EG_KARG_GROUPS);
		return why;
	}
	for (k = 0; k < ri->n_args; k++) {
		const char *re = policy_rule_regex(p, i, true, k);

		if (kc_regex_words(re, words, sizeof(words)) < 0) {
			snprintf(why, len, "args regex '%.60s' is not a word or a list of words "
				 "(a|b): sessions and the audit log apply it", re);
			return why;
		}
	}
	/* a rule's globs are counted in 16 bits (eg_krule.n_globs, n_cgroups) */
	if (ri->n_paths > UINT16_MAX || ri->n_cgroups > UINT16_MAX / 2) {
		snprintf(why, len, "more than %u paths or cgroups in one rule: split it", UINT16_MAX);
		return why;
	}
	for (k = 0; k < ri->n_paths; k++) {
		const char *pr = glob_problem(ri->paths[k]);

		if (pr) {
			snprintf(why, len, "path '%.60s' %s", ri->paths[k], pr);
			return why;
		}
	}
	for (k = 0; k < ri->n_cgroups; k++) {
		const char *pr = glob_problem(ri->cgroups[k]);

		if (pr) {
			snprintf(why, len, "cgroup '%.60s' %s", ri->cgroups[k], pr);
			return why;
		}
	}
	return NULL;
}


/* ---- building ----------------------------------------------------------------------- */

struct ipair {
	struct eg_kkey key;
	__u32 knum;
};

static int cmp_ipair(const void *a, const void *b)
{
	const struct ipair *x = a, *y = b;
	int c = memcmp(&x->key, &y->key, sizeof(x->key));

	if (c)
		return c;
	return x->knum < y->knum ? -1 : x->knum > y->knum;
}

static int cmp_member(const void *a, const void *b)
{
	const struct kc_member *x = a, *y = b;

	return memcmp(&x->key, &y->key, sizeof(x->key));
}

static struct eg_kkey mkkey(__u32 kind, __u32 rule, const char *s, __u64 a, __u64 b)
{
	struct eg_kkey k;

	memset(&k, 0, sizeof(k));
	k.kind = kind;
	k.rule = rule;
	k.a = a;
	k.b = b;
	if (s)
		memcpy(k.s, s, strnlen(s, sizeof(k.s) - 1));
	return k;
}

static int add_member(struct vec *m, struct eg_kkey key, __u32 val)
{
	struct kc_member *e = vec_push(m);

	if (!e)
		return -ENOMEM;
	e->key = key;
	e->val = val;
	return 0;
}

static int add_index(struct vec *ix, struct eg_kkey key, __u32 knum)
{
	struct ipair *e = vec_push(ix);

	if (!e)
		return -ENOMEM;
	e->key = key;
	e->knum = knum;
	return 0;
}

static int add_glob(struct vec *g, const char *pat, __u16 flags, __u32 *id)
{
	struct kc_glob *e = vec_push(g);

	if (!e)
		return -ENOMEM;
	e->id = g->n - 1;
	e->g.len = strlen(pat);
	e->g.flags = flags | (glob_literal(pat) ? EG_KG_LITERAL : 0);
	memcpy(e->g.pat, pat, e->g.len);
	*id = e->id;
	return 0;
}

/* Index pairs, sorted by key: chunks of EG_KCHUNK ascending rule numbers. */
static int make_chunks(struct vec *pairs, struct kc_prog *k)
{
	struct ipair *v = pairs->v;
	struct vec out = { .size = sizeof(struct kc_index) };
	size_t i = 0, j;

	if (pairs->n)
		qsort(v, pairs->n, sizeof(*v), cmp_ipair);
	while (i < pairs->n) {
		__u32 chunk = 0;

		for (j = i; j < pairs->n && !memcmp(&v[j].key, &v[i].key, sizeof(v[i].key)); j++)
			;
		/* i..j-1: one key's rules, ascending (duplicates dropped) */
		while (i < j) {
			struct kc_index *e = vec_push(&out);

			if (!e) {
				free(out.v);
				return -ENOMEM;
			}
			e->key = v[i].key;
			e->key.rule = chunk++;
			while (i < j && e->val.n < EG_KCHUNK) {
				if (!e->val.n || e->val.idx[e->val.n - 1] != v[i].knum)
					e->val.idx[e->val.n++] = v[i].knum;
				i++;
			}
			e->val.more = i < j;
		}
	}
	k->index = out.v;
	k->n_index = out.n;
	return 0;
}

/* Members, sorted; the same key twice: one entry, the values' bits joined. */
static void merge_members(struct vec *m, struct kc_prog *k)
{
	struct kc_member *v = m->v;
	size_t i, n = 0;

	if (m->n)
		qsort(v, m->n, sizeof(*v), cmp_member);
	for (i = 0; i < m->n; i++) {
		if (n && !memcmp(&v[n - 1].key, &v[i].key, sizeof(v[i].key))) {
			v[n - 1].val |= v[i].val;
			continue;
		}
		v[n++] = v[i];
	}
	k->member = v;
	k->n_member = n;
}

/* Does leaving the rules in `out` (and the bypass) out change what the kernel denies? */
static bool partial(const struct eg_policy *p, const struct kc_prog *k)
{
	bool deny_after = kc_decision(p, policy_settings(p)->default_decision) == EG_KD_DENY;
	size_t i;

	if (k->bypass_left_out || k->ident_left_out)
		return true;
	for (i = k->n_info; i-- > 0;) {
		struct eg_rule_info ri;

		policy_rule_info(p, i, &ri);
		if (!k->info[i].kernel && (deny_after || kc_decision(p, ri.decision) == EG_KD_DENY))
			return true;
		if (kc_decision(p, ri.decision) == EG_KD_DENY)
			deny_after = true;
	}
	return false;
}

/*
 * The index key of path glob g, as the policy's own evaluator indexes it:
 * the basename every match ends with, else the literal directory it
 * starts with (cut back to a shorter directory when longer than a key
 * holds), else its literal tail; false: none (the rule is every exec's
 * candidate). The kernel looks up an exec's name, each of its directory
 * prefixes as deep as some key, and its tails as long as some key.
 */
static bool glob_index(struct kc_prog *k, struct vec *ix, const char *g, __u32 knum, int *err)
{
	char key[EG_KSTR_MAX];
	const char *s;
	size_t len, n, slashes = 0;

	switch (eg_glob_key(g, &s, &len)) {
	case EG_KEY_BASENAME:
		if (!len || len >= EG_KSTR_MAX)
			return false;
		memcpy(key, s, len);
		key[len] = '\0';
		*err = add_index(ix, mkkey(EG_KK_NAME, 0, key, 0, 0), knum);
		return true;
	case EG_KEY_DIR:
		while (len >= EG_KSTR_MAX) {
			/* a shorter directory is still one every match starts with */
			for (len--; len && s[len - 1] != '/'; len--)
				;
		}
		if (!len)
			return false;
		memcpy(key, s, len);
		key[len] = '\0';
		for (n = 0; n < len; n++)
			slashes += key[n] == '/';
		if (!slashes || slashes > 64)
			return false;
		k->conf.dir_slashes |= 1ull << (slashes - 1);
		*err = add_index(ix, mkkey(EG_KK_DIR, 0, key, 0, 0), knum);
		/* a path cut short has lost the directory this key is: the rule is its candidate all the same */
		if (!*err)
			*err = add_index(ix, mkkey(EG_KK_DIRCUT, 0, NULL, 0, 0), knum);
		return true;
	case EG_KEY_SUFFIX:
		if (!len || len > 64 || len >= EG_KSTR_MAX)
			return false;
		memcpy(key, s, len);
		key[len] = '\0';
		k->conf.suffix_lens |= 1ull << (len - 1);
		*err = add_index(ix, mkkey(EG_KK_SUFFIX, 0, key, 0, 0), knum);
		return true;
	default:
		return false;
	}
}

static int compile_rule(const struct eg_policy *p, size_t i, const struct eg_rule_info *ri,
			__u32 knum, struct vec *rules, struct vec *ix, struct vec *mem,
			struct vec *globs, struct kc_prog *kp)
{
	struct eg_krule *r = vec_push(rules);
	char words[8192];
	bool by_name = false;
	size_t k;
	__u32 id;
	int err = 0;

	if (!r)
		return -ENOMEM;
	r->rule = i;
	r->decision = kc_decision(p, ri->decision);
	r->rank = policy_decision_rank(ri->decision);
	r->min_depth = ri->min_depth;
	r->max_depth = ri->max_depth < 0 ? 0x7fffffff : ri->max_depth;
	r->ctx_mask = ri->ctx_mask;

	/* names: members, and the index when the rule has them (they are necessary) */
	if (ri->n_basenames) {
		r->flags |= EG_KR_NAMES;
		for (k = 0; k < ri->n_basenames && !err; k++) {
			if (strlen(ri->basenames[k]) >= EG_KSTR_MAX)
				continue;	/* no file has such a name: never matches */
			err = add_member(mem, mkkey(EG_KK_NAME, knum, ri->basenames[k], 0, 0), 1);
			if (!err)
				err = add_index(ix, mkkey(EG_KK_NAME, 0, ri->basenames[k], 0, 0), knum);
		}
		by_name = true;
		/* an allow's names that root's own links give a file: that file, by identity */
		if (ri->decision == EG_DECISION_ALLOW) {
			uint64_t dev, ino;

			for (k = 0; !err && !policy_rule_alias_id(p, i, k, &dev, &ino); k++) {
				err = add_member(mem, mkkey(EG_KK_ALIAS, knum, NULL, dev, ino), 1);
				if (!err)
					err = add_index(ix, mkkey(EG_KK_ALIAS, 0, NULL, dev, ino), knum);
			}
		}
	}
	if (ri->n_paths) {
		bool all_keyed = true;
		uint64_t dev, ino;

		r->flags |= EG_KR_PATHS;
		r->n_globs = ri->n_paths;
		for (k = 0; k < ri->n_paths && !err; k++) {
			err = add_glob(globs, ri->paths[k], 0, &id);
			if (!k)
				r->glob_first = id;
		}
		/* the files literal paths named at load: the same file by another path */
		for (k = 0; !err && !policy_rule_file_id(p, i, k, &dev, &ino); k++) {
			r->flags |= EG_KR_IDENTS;
			err = add_member(mem, mkkey(EG_KK_IDENT, knum, NULL, dev, ino), 1);
		}
		/*
		 * With no basenames, each path finds the rule by its key: the name
		 * every match ends with, its literal directory or its tail (so
		 * thousands of path rules cost an exec a few lookups); a file a
		 * literal path named, run by another name, by its identity. A glob
		 * with no key makes the rule every exec's candidate.
		 */
		if (!by_name) {
			for (k = 0; k < ri->n_paths && !err && all_keyed; k++)
				all_keyed = glob_index(kp, ix, ri->paths[k], knum, &err);
			for (k = 0; !err && all_keyed && !policy_rule_file_id(p, i, k, &dev, &ino); k++)
				err = add_index(ix, mkkey(EG_KK_IDENT, 0, NULL, dev, ino), knum);
			by_name = all_keyed;
		}
	}
	if (ri->n_uids) {
		r->flags |= EG_KR_UIDS;
		for (k = 0; k < ri->n_uids && !err; k++)
			err = add_member(mem, mkkey(EG_KK_UID, knum, NULL, ri->uids[k], 0), 1);
	}
	if (ri->n_cgroups) {
		r->flags |= EG_KR_CGROUPS;
		r->n_cgroups = ri->n_cgroups;
		for (k = 0; k < ri->n_cgroups && !err; k++) {
			err = add_glob(globs, ri->cgroups[k], 0, &id);
			if (!k)
				r->cg_first = id;
			/*
			 * "/" is every cgroup, as the daemon and sessions match it
			 * (match/glob.c); the kernel tries a glob against the path
			 * and its ancestors below the root, so "/" alone met only
			 * the root cgroup's own tasks: "/" followed by a star meets
			 * the others.
			 */
			if (!err && !strcmp(ri->cgroups[k], "/")) {
				err = add_glob(globs, "/*", 0, &id);
				r->n_cgroups++;
			}
		}
	}
	if (ri->n_args) {
		r->flags |= EG_KR_ARGS;
		r->n_arg_groups = ri->n_args;
		for (k = 0; k < ri->n_args && !err; k++) {
			int n = kc_regex_words(policy_rule_regex(p, i, true, k), words, sizeof(words));
			const char *w = words;

			for (; n > 0 && !err; n--, w += strlen(w) + 1)
				err = add_member(mem, mkkey(EG_KK_ARG, knum, w, 0, 0), 1u << k);
		}
	}
	/* no key rules it out: every exec is its candidate */
	if (!err && !by_name)
		err = add_index(ix, mkkey(EG_KK_ALL, 0, NULL, 0, 0), knum);
	return err;
}

static int compile_bypass(const struct eg_policy *p, uint64_t host_mnt_ns, struct kc_prog *k,
			  struct vec *mem, struct vec *globs)
{
	const char *const *e;
	uint64_t dev, ino;
	size_t n, i;
	__u32 id;
	int err = 0;

	e = policy_internal_bypass(p, &n);
	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		const char *pr = glob_problem(e[i]);

		if (pr) {
			k->bypass_left_out = true;
			snprintf(k->bypass_why, sizeof(k->bypass_why), "internal_bypass entry '%.60s' %s",
				 e[i], pr);
			return 0;
		}
	}
	k->conf.flags |= EG_KC_BYPASS;
	k->conf.host_mnt_ns = host_mnt_ns;
	k->conf.n_bypass = n;
	for (i = 0; i < n && !err; i++) {
		/* a bare name ("*.real") names files by their name */
		err = add_glob(globs, e[i], strchr(e[i], '/') ? 0 : EG_KG_BASE, &id);
		if (!i)
			k->conf.bypass_first = id;
	}
	for (i = 0; !err && !policy_bypass_file_id(p, i, &dev, &ino); i++)
		err = add_member(mem, mkkey(EG_KK_BYPASS, 0, NULL, dev, ino), 1);
	return err;
}

/*
 * The contexts: their identities as kernel rules after the commands'
 * (rule = the context's id, an allow each: the judge's verdict says which
 * matched), their limits in ctx[]. An identity the kernel cannot match
 * leaves the context to userspace: partial, and said why.
 */
static int compile_contexts(const struct eg_policy *p, __u32 *knum, struct vec *rules, struct vec *ix,
			    struct vec *mem, struct vec *globs, struct kc_prog *k)
{
	const struct eg_policy *ids = policy_identities(p);
	size_t i, n = policy_context_count(p);
	struct eg_context_info ci;
	struct eg_rule_info ri;
	char why[200];
	int err = 0;

	if (!ids)
		return 0;
	k->n_ctx = n;
	for (i = 1; i <= n; i++) {
		policy_context_info(p, i, &ci);
		k->ctx[i].max_depth = ci.max_depth;
		k->ctx[i].max_shells = ci.max_shells;
		_Static_assert(EG_POLICY_CONTEXT_NAME_MAX < EG_CONTEXT_NAME_MAX, "a context's name fits eg_kctx");
		snprintf(k->ctx[i].name, sizeof(k->ctx[i].name), "%s", ci.name);
	}
	k->conf.ident_first = *knum;
	for (i = 0; i < policy_rule_count(ids) && !err; i++) {
		policy_rule_info(ids, i, &ri);
		if (rule_problem(ids, i, &ri, why, sizeof(why)) || *knum >= EG_KRULES_MAX) {
			if (*knum >= EG_KRULES_MAX)
				snprintf(why, sizeof(why), "the kernel holds %d rules at most", EG_KRULES_MAX);
			k->ident_left_out = true;
			snprintf(k->ident_why, sizeof(k->ident_why), "context '%s' (line %d): an identity %s",
				 ri.name, ri.line, why);
			continue;
		}
		err = compile_rule(ids, i, &ri, *knum, rules, ix, mem, globs, k);
		if (err)
			break;
		((struct eg_krule *)rules->v)[rules->n - 1].rule = policy_identity_context(ids, i);
		(*knum)++;
		k->conf.n_ident++;
	}
	return err;
}

int kcompile(const struct eg_policy *p, uint64_t host_mnt_ns, bool with_rules, struct kc_prog **ret)
{
	struct vec rules = { .size = sizeof(struct eg_krule) };
	struct vec ix = { .size = sizeof(struct ipair) };
	struct vec mem = { .size = sizeof(struct kc_member) };
	struct vec globs = { .size = sizeof(struct kc_glob) };
	const struct eg_policy_settings *st = policy_settings(p);
	struct kc_prog *k;
	size_t i, n = policy_rule_count(p);
	__u32 knum = 0;
	int err = 0;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->info = calloc(n ? n : 1, sizeof(*k->info));
	if (!k->info) {
		free(k);
		return -ENOMEM;
	}
	k->n_info = n;
	for (i = 0; with_rules && i < n && !err; i++) {
		struct eg_rule_info ri;
		struct kc_rule *info = &k->info[i];

		policy_rule_info(p, i, &ri);
		if (rule_problem(p, i, &ri, info->why, sizeof(info->why))) {
			k->n_left_out++;
			continue;
		}
		if (knum >= EG_KRULES_MAX) {
			snprintf(info->why, sizeof(info->why), "the kernel holds %d rules at most",
				 EG_KRULES_MAX);
			k->n_left_out++;
			continue;
		}
		err = compile_rule(p, i, &ri, knum, &rules, &ix, &mem, &globs, k);
		info->kernel = true;
		info->knum = knum++;
	}
	if (!err)
		err = compile_contexts(p, &knum, &rules, &ix, &mem, &globs, k);
	if (!err && with_rules)
		err = compile_bypass(p, host_mnt_ns, k, &mem, &globs);
	if (!err && globs.n > EG_KGLOBS_MAX / EG_KSETS)
		err = -E2BIG;
	if (!err)
		err = make_chunks(&ix, k);
	free(ix.v);
	merge_members(&mem, k);
	k->rules = rules.v;
	k->n_rules = rules.n;
	k->globs = globs.v;
	k->n_globs = globs.n;
	if (!err && (k->n_index > EG_KINDEX_MAX / EG_KSETS || k->n_member > EG_KMEMBER_MAX / EG_KSETS))
		err = -E2BIG;
	if (err) {
		kc_prog_free(k);
		return err;
	}
	k->conf.nrules = k->n_rules;
	if (with_rules)
		k->conf.flags |= EG_KC_RULES;
	k->conf.default_decision = kc_decision(p, st->default_decision);
	k->conf.default_rank = policy_decision_rank(st->default_decision);
	if (st->unknown_depth_direct)
		k->conf.flags |= EG_KC_UNKNOWN_DIRECT;
	snprintf(k->conf.sha256, sizeof(k->conf.sha256), "%s", policy_sha256(p));
	k->partial = partial(p, k);
	*ret = k;
	return 0;
}

void kc_prog_free(struct kc_prog *k)
{
	if (!k)
		return;
	free(k->rules);
	free(k->index);
	free(k->member);
	free(k->globs);
	free(k->info);
	free(k);
}
