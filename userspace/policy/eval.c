// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Matching an exec against the compiled rules. An exec is checked against
 * the few rules that can match it, not all of them: rules are indexed by
 * the basename they require (their basenames, or the last component their
 * paths spell out), by the literal directory their path globs start with,
 * and the rest stay on an "unindexed" list. An exec looks up its basename
 * and each of its directory prefixes, merges those ascending lists with
 * the unindexed one, and stops at the first rule that matches: the same
 * answer as a scan in file order, at the cost of a few hash lookups.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "policy/internal.h"
#include "util/clock.h"
#include "util/fileid.h"

#define JOIN_INITIAL 4096
#define JIT_STACK_MAX (1u << 20)

static int count_slashes(const char *s, size_t n)
{
	int k = 0;

	while (n--)
		k += *s++ == '/';
	return k;
}

int eg_policy_compile(struct eg_policy *p)
{
	struct eg_scratch *sc;
	uint32_t i, j;

	p->unindexed = calloc(p->n_rules ? p->n_rules : 1, sizeof(*p->unindexed));
	if (!p->unindexed)
		return -ENOMEM;
	for (i = 0; i < p->n_rules; i++) {
		struct eg_rule *r = &p->rules[i];
		bool all_keyed = r->paths.n > 0;

		if (r->paths.n) {
			r->path_glob = calloc(r->paths.n, sizeof(*r->path_glob));
			if (!r->path_glob)
				return -ENOMEM;
			for (j = 0; j < r->paths.n; j++)
				eg_glob_info(r->paths.v[j], &r->path_glob[j]);
		}

		if (r->basenames.n) {
			r->indexed_by_basename = true;
			for (j = 0; j < r->basenames.n; j++)
				if (eg_htab_add(&p->by_basename, r->basenames.v[j], i))
					return -ENOMEM;
			continue;
		}
		for (j = 0; j < r->paths.n && all_keyed; j++) {
			const char *key;
			size_t len;

			all_keyed = eg_glob_key(r->paths.v[j], &key, &len) != EG_KEY_NONE;
		}
		if (!all_keyed && r->n_uids) {
			for (j = 0; j < r->n_uids; j++)
				if (eg_htab_add_key(&p->by_uid, (const char *)&r->uids[j], sizeof(r->uids[j]), i))
					return -ENOMEM;
			continue;
		}
		for (j = 0; j < r->cgroups.n && !all_keyed; j++)
			if (!eg_glob_is_literal(r->cgroups.v[j]))
				break;
		/* cgroup globs have no key to look up: such a rule stays unindexed */
		if (!all_keyed && r->cgroups.n && j == r->cgroups.n) {
			for (j = 0; j < r->cgroups.n; j++) {
				const char *cg = r->cgroups.v[j];
				uint32_t k = (uint32_t)count_slashes(cg, strlen(cg));

				if (k > p->max_cg_slashes)
					p->max_cg_slashes = k;
				if (eg_htab_add(&p->by_cgroup, cg, i))
					return -ENOMEM;
			}
			continue;
		}
		if (!all_keyed) {
			p->unindexed[p->n_unindexed++] = i;
			continue;
		}
		for (j = 0; j < r->paths.n; j++) {
			const char *key;
			size_t len;
			uint32_t k;
			int rc;

			switch (eg_glob_key(r->paths.v[j], &key, &len)) {
			case EG_KEY_BASENAME:
				rc = eg_htab_add_key(&p->by_basename, key, len, i);
				break;
			case EG_KEY_DIR:
				k = (uint32_t)count_slashes(key, len);
				if (k > p->max_dir_slashes)
					p->max_dir_slashes = k;
				rc = eg_htab_add_key(&p->by_dir, key, len, i);
				break;
			default:
				p->suffix_lens |= 1ull << (len - 1);
				rc = eg_htab_add_key(&p->by_suffix, key, len, i);
				break;
			}
			if (rc)
				return -ENOMEM;
		}
	}
	p->bypass_glob = calloc(p->bypass.n ? p->bypass.n : 1, sizeof(*p->bypass_glob));
	if (!p->bypass_glob)
		return -ENOMEM;
	for (i = 0; i < p->bypass.n; i++)
		eg_glob_info(p->bypass.v[i], &p->bypass_glob[i]);
	eg_bypass_refresh(p);
	if (eg_identity_compile(p) || eg_alias_compile(p))
		return -ENOMEM;

	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	p->scratch = sc;
	sc->md = pcre2_match_data_create(1, NULL);
	sc->mctx = pcre2_match_context_create(NULL);
	sc->join_cap = JOIN_INITIAL;
	sc->join = malloc(sc->join_cap);
	/* basename x2, dirs, suffixes, uid, cgroup prefixes (one per '/' and the whole), identity, content, alias, unindexed */
	sc->ncur = 2 + p->max_dir_slashes + (uint32_t)__builtin_popcountll(p->suffix_lens) + 1 +
		   p->max_cg_slashes + 1 + 2 + 1 + 1;
	sc->cur = calloc(sc->ncur, sizeof(*sc->cur));
	if (!sc->md || !sc->mctx || !sc->join || !sc->cur)
		return -ENOMEM;
	/* Bounded time per match; a pattern that hits it fails closed (see re_match). */
	pcre2_set_match_limit(sc->mctx, EG_POLICY_MATCH_LIMIT);
	/*
	 * Argv can be 64 KiB and more: give JIT code room to backtrack. Without
	 * it (no memory, or no JIT) matching still works, on less stack.
	 */
	if (p->n_regexes) {
		sc->jit_stack = pcre2_jit_stack_create(32 * 1024, JIT_STACK_MAX, NULL);
		if (sc->jit_stack)
			pcre2_jit_stack_assign(sc->mctx, NULL, sc->jit_stack);
	}
	return 0;
}

bool eg_regex_matches_empty(const struct eg_regex *re)
{
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	int rc;

	if (!md)
		return false;
	rc = pcre2_match(re->code, (PCRE2_SPTR)"", 0, 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return rc >= 0;
}

struct eval {
	const struct eg_policy *p;
	const struct eg_exec_req *req;
	const char *filename;
	size_t filename_len;
	const char *base;		/* of the resolved file */
	size_t base_len;
	const char *rbase;		/* of the path as spelled; NULL when the same */
	size_t rbase_len;
	int depth;
	int container_depth;
	bool joined;
	bool join_failed;
	size_t join_len;
	struct eg_eval_budget *budget;
	const char *error;		/* set: stop, the verdict is an error */
};

/* The exec's file, hashed if it has the size of a file some rule names. */
static bool content_of(struct eval *e, uint8_t out[32])
{
	const struct eg_exec_req *req = e->req;
	const char *path = req->content_path ? req->content_path : req->filename;
	struct stat st;
	int fd, rc;

	if (!req->size)
		return false;
	if (req->content_sha) {
		memcpy(out, req->content_sha, 32);
		return true;
	}
	if (!path)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* only the file the kernel reported: same size, and same inode when known */
	rc = fstat(fd, &st) || (uint64_t)st.st_size != req->size ||
	     (req->ino && (st.st_ino != req->ino || eg_kdev(st.st_dev) != req->dev)) ||
	     eg_hash_fd(fd, st.st_size, out);
	close(fd);
	return !rc;
}

/*
 * 1 match, 0 no match, -1 no answer: PCRE2 gave up (step limit, memory)
 * or the exec's budget is spent; e->error says which.
 */
static int re_match(struct eval *e, const struct eg_regex *re, const char *s, size_t n)
{
	const struct eg_scratch *sc = e->p->scratch;
	int rc;

	if (eg_mono_ns() > e->budget->deadline_ns) {
		e->budget->exceeded = true;
		e->error = "evaluation budget exceeded (regular expressions took too long)";
		return -1;
	}
	rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, 0, 0, sc->md, sc->mctx);
	/* JIT code recurses on a fixed stack; the interpreter backtracks on the heap. */
	if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
		rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, 0, PCRE2_NO_JIT, sc->md, sc->mctx);
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	e->error = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
		   rc == PCRE2_ERROR_HEAPLIMIT ? "a regular expression hit its step limit"
					       : "a regular expression could not be evaluated";
	return -1;
}

static const char *arg_at(const struct eg_exec_req *req, unsigned int i)
{
	const char *a = req->argv ? req->argv[i] : NULL;

	return a ? a : "";
}

static int join_args(struct eval *e)
{
	const struct eg_exec_req *req = e->req;
	struct eg_scratch *sc = e->p->scratch;
	size_t need = 1, off = 0;
	unsigned int i;

	e->joined = true;
	for (i = 1; i < req->argc; i++)
		need += strlen(arg_at(req, i)) + 1;
	if (need > sc->join_cap) {
		size_t cap = need > sc->join_cap * 2 ? need : sc->join_cap * 2;
		char *nb = realloc(sc->join, cap);

		if (!nb) {
			e->join_failed = true;
			return -ENOMEM;
		}
		sc->join = nb;
		sc->join_cap = cap;
	}
	for (i = 1; i < req->argc; i++) {
		const char *a = arg_at(req, i);
		size_t n = strlen(a);

		if (i > 1)
			sc->join[off++] = ' ';
		memcpy(sc->join + off, a, n);
		off += n;
	}
	sc->join[off] = '\0';
	e->join_len = off;
	return 0;
}

static bool has_basename(const struct eg_rule *r, const char *b, size_t n)
{
	uint32_t i;

	for (i = 0; i < r->basenames.n; i++)
		if (strlen(r->basenames.v[i]) == n && !memcmp(r->basenames.v[i], b, n))
			return true;
	return false;
}

/*
 * Whether rule r lets the program run without a person's word, as the
 * kernel's judge has it (kc_decision): such a rule is not met by the path
 * of a user's mount. An identity (a context's) is met: it adds rules.
 */
static bool lets_run(const struct eval *e, const struct eg_rule *r)
{
	if (r->ident_of)
		return false;
	return r->decision == EG_DECISION_ALLOW || r->decision == EG_DECISION_AUDIT ||
	       (r->decision == EG_DECISION_APPROVAL && e->p->settings.kernel_approval_audit);
}

/*
 * Cheap tests first: depth, uid, cgroup, names, and regexes last. A regex
 * that gives no answer stops the evaluation (e->error): the verdict is
 * on_error, never a guess.
 *
 * Names: a rule's basenames match the resolved file's name; a rule that
 * denies, asks or audits also matches the name the caller spelled (a
 * symlink such as /bin/sh -> dash still meets "basenames: [sh]"), but an
 * allow is never granted through a name the file does not have.
 */
static bool rule_matches(struct eval *e, const struct eg_rule *r, bool via_base, bool via_req,
			 bool via_file)
{
	const struct eg_exec_req *req = e->req;
	uint32_t i;
	unsigned int a;
	int depth;

	/* a rule scoped to contexts: bit 0 is "none", bit N the context N */
	if (r->ctx_mask && !(r->ctx_mask & (1u << (req->context & 31))))
		return false;
	/* a rule scoped to cgroups speaks of depth in the container, where there is one */
	depth = r->cgroups.n && req->in_container ? e->container_depth : e->depth;
	if (depth < r->min_depth || depth > r->max_depth)
		return false;
	if (r->n_uids) {
		for (i = 0; i < r->n_uids && r->uids[i] != req->euid; i++)
			;
		if (i == r->n_uids)
			return false;
	}
	if (r->cgroups.n) {
		if (!req->cgroup)
			return false;
		for (i = 0; i < r->cgroups.n && !eg_cgroup_under(req->cgroup, r->cgroups.v[i]); i++)
			;
		if (i == r->cgroups.n)
			return false;
	}
	if (r->basenames.n) {
		bool named = (via_base && r->indexed_by_basename) || has_basename(r, e->base, e->base_len);

		if (!named && r->decision != EG_DECISION_ALLOW && e->rbase)
			named = (via_req && r->indexed_by_basename) || has_basename(r, e->rbase, e->rbase_len);
		/* an allow: a name root's own links give this very file (alias.c) */
		if (!named && r->decision == EG_DECISION_ALLOW && req->ino)
			named = eg_rule_has_alias(r, req->dev, req->ino);
		if (!named)
			return false;
	}
	/* a path names a file: this one, by its path, its identity or its content */
	if (r->paths.n && !via_file) {
		if (req->user_mount && lets_run(e, r))
			return false;
		for (i = 0; i < r->paths.n; i++)
			if (eg_glob_match(r->paths.v[i], &r->path_glob[i], e->filename, e->filename_len))
				break;
		if (i == r->paths.n)
			return false;
	}
	for (i = 0; i < r->n_args; i++) {
		int m = 0;

		for (a = 1; a < req->argc && m == 0; a++) {
			const char *s = arg_at(req, a);

			m = re_match(e, &r->args[i], s, strlen(s));
		}
		if (m < 0)
			return false;
		if (m == 0)
			return false;
	}
	if (r->n_args_patterns) {
		int m = 0;

		if (!e->joined)
			join_args(e);
		if (e->join_failed) {
			e->error = "out of memory joining the arguments";
			return false;
		}
		for (i = 0; i < r->n_args_patterns && m == 0; i++)
			m = re_match(e, &r->args_patterns[i], e->p->scratch->join, e->join_len);
		if (m <= 0)
			return false;
	}
	return true;
}

static int first_match(struct eval *e)
{
	const struct eg_policy *p = e->p;
	struct eg_cursor *cur = p->scratch->cur;
	const struct eg_bucket *b;
	uint32_t nc = 0, h, slashes = 0, req_cur = UINT32_MAX, ident_cur = UINT32_MAX;
	uint32_t content_cur = UINT32_MAX;
	const char *f = e->filename;
	bool have_base;
	size_t i;

	b = eg_htab_find(&p->by_basename, e->base, e->base_len, eg_hash(e->base, e->base_len));
	if (b)
		cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
	/* Cursor 0 is the basename list only when there was one. */
	have_base = nc == 1;
	/* then the spelled name's list, for the rules that are not allows */
	if (e->rbase) {
		b = eg_htab_find(&p->by_basename, e->rbase, e->rbase_len, eg_hash(e->rbase, e->rbase_len));
		if (b) {
			req_cur = nc;
			cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
		}
	}

	if (p->by_dir.used) {
		h = 2166136261u;
		for (i = 0; f[i] && slashes < p->max_dir_slashes; i++) {
			h ^= (unsigned char)f[i];
			h *= 16777619u;
			if (f[i] != '/')
				continue;
			slashes++;
			b = eg_htab_find(&p->by_dir, f, i + 1, h);
			if (b)
				cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
		}
	}
	if (p->suffix_lens) {
		uint64_t lens = p->suffix_lens;

		while (lens) {
			size_t n = (size_t)__builtin_ctzll(lens) + 1;

			lens &= lens - 1;
			if (n > e->filename_len)
				break;
			b = eg_htab_find(&p->by_suffix, f + e->filename_len - n, n,
					 eg_hash(f + e->filename_len - n, n));
			if (b)
				cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
		}
	}
	if (p->by_uid.used) {
		b = eg_htab_find(&p->by_uid, (const char *)&e->req->euid, sizeof(e->req->euid),
				 eg_hash((const char *)&e->req->euid, sizeof(e->req->euid)));
		if (b)
			cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
	}
	if (p->by_cgroup.used && e->req->cgroup && e->req->cgroup[0] == '/') {
		/* Every ancestor: "/", "/a", "/a/b", ... as far as the keys go deep. */
		const char *cg = e->req->cgroup;

		h = 2166136261u;
		slashes = 0;
		for (i = 0;; i++) {
			if (i > 0 && (cg[i] == '/' || !cg[i])) {
				b = eg_htab_find(&p->by_cgroup, cg, i, h);
				if (b)
					cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
			}
			if (!cg[i] || (cg[i] == '/' && ++slashes > p->max_cg_slashes))
				break;
			h ^= (unsigned char)cg[i];
			h *= 16777619u;
			if (i == 0) {
				b = eg_htab_find(&p->by_cgroup, cg, 1, h);
				if (b)
					cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
			}
		}
	}
	/* the same file under another name, or a copy of it */
	if (p->by_ident.used && e->req->ino) {
		struct eg_file_id id = { e->req->dev, e->req->ino };

		b = eg_htab_find(&p->by_ident, (const char *)&id, sizeof(id), eg_hash((const char *)&id, sizeof(id)));
		if (b) {
			ident_cur = nc;
			cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
		}
	}
	if (p->by_size.used && e->req->size &&
	    eg_htab_find(&p->by_size, (const char *)&e->req->size, sizeof(e->req->size),
			 eg_hash((const char *)&e->req->size, sizeof(e->req->size)))) {
		uint8_t sha[32];

		if (content_of(e, sha)) {
			b = eg_htab_find(&p->by_content, (const char *)sha, sizeof(sha), eg_hash((const char *)sha, sizeof(sha)));
			if (b) {
				content_cur = nc;
				cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
			}
		}
	}
	/* an allow whose names root's own links give this file */
	if (p->by_alias.used && e->req->ino) {
		struct eg_file_id id = { e->req->dev, e->req->ino };

		b = eg_htab_find(&p->by_alias, (const char *)&id, sizeof(id), eg_hash((const char *)&id, sizeof(id)));
		if (b)
			cur[nc++] = (struct eg_cursor){ b->idx, b->n, 0 };
	}
	if (p->n_unindexed)
		cur[nc++] = (struct eg_cursor){ p->unindexed, p->n_unindexed, 0 };

	for (;;) {
		uint32_t min = UINT32_MAX, k;
		bool via_base = false, via_req = false, via_file = false;

		for (k = 0; k < nc; k++)
			if (cur[k].at < cur[k].n && cur[k].idx[cur[k].at] < min)
				min = cur[k].idx[cur[k].at];
		if (min == UINT32_MAX)
			return -1;
		/* A rule can sit in several lists; step past it in all. */
		for (k = 0; k < nc; k++) {
			if (cur[k].at < cur[k].n && cur[k].idx[cur[k].at] == min) {
				cur[k].at++;
				via_base |= k == 0 && have_base;
				via_req |= k == req_cur;
				via_file |= k == ident_cur || k == content_cur;
			}
		}
		if (rule_matches(e, &p->rules[min], via_base, via_req, via_file))
			return (int)min;
		if (e->error)
			return -2;
	}
}

int policy_decision_rank(enum eg_decision d)
{
	switch (d) {
	case EG_DECISION_DENY: return 4;
	case EG_DECISION_REDIRECT: return 4;
	case EG_DECISION_ERROR: return 3;
	case EG_DECISION_APPROVAL: return 2;
	case EG_DECISION_AUDIT: return 1;
	default: return 0;
	}
}

void policy_verdict_merge(struct eg_verdict *into, const struct eg_verdict *other)
{
	int a = policy_decision_rank(other->decision), b = policy_decision_rank(into->decision);

	/*
	 * A redirect ranks with a deny (where it cannot run, it is one), but
	 * a deny of another policy or program wins over it: the daemon's
	 * redirect of a name a session's policy denies ran the redirect.
	 */
	if (a > b || (other->decision == EG_DECISION_DENY && into->decision == EG_DECISION_REDIRECT))
		*into = *other;
}

/* A context's limits: read here, where every verdict is made (contexts.c calls the evaluator). */
bool policy_context_over(const struct eg_policy *p, const struct eg_exec_req *req, const char **why)
{
	const struct eg_context *c;

	if (!p || !req->context || req->context > p->n_contexts)
		return false;
	c = &p->contexts[req->context - 1];
	if (c->max_depth >= 0 && req->context_depth > c->max_depth) {
		*why = "deeper than its context's max_depth";
		return true;
	}
	if (c->max_shells >= 0 && req->shells > (unsigned int)c->max_shells) {
		*why = "more shells in a row than its context's max_consecutive_shells";
		return true;
	}
	return false;
}

static void set_error(const struct eg_policy *p, const struct eg_exec_req *req, const char *why,
		      struct eg_verdict *ret)
{
	ret->rule = "on_error";
	ret->message = why;
	ret->error = why;
	ret->rule_index = -1;
	ret->redirect = NULL;
	/* a supervisor enforces on_error; an audit log records what happened */
	ret->decision = req->apply_on_truncated ? p->settings.on_error : EG_DECISION_ERROR;
}

void policy_eval(const struct eg_policy *p, const struct eg_exec_req *req, struct eg_verdict *ret)
{
	struct eg_eval_budget local = {};
	struct eval e = {};
	const char *slash;
	int m;

	ret->decision = EG_DECISION_ALLOW;
	ret->rule = NULL;
	ret->message = NULL;
	ret->rule_index = -1;
	ret->error = NULL;
	ret->redirect = NULL;
	if (!p)
		return;
	e.p = p;
	e.req = req;
	e.budget = req->budget ? req->budget : &local;
	if (!e.budget->deadline_ns)
		e.budget->deadline_ns = eg_mono_ns() + EG_EVAL_BUDGET_NS;
	e.filename = req->filename ? req->filename : "";
	e.filename_len = strlen(e.filename);
	slash = memrchr(e.filename, '/', e.filename_len);
	e.base = slash ? slash + 1 : e.filename;
	e.base_len = e.filename_len - (size_t)(e.base - e.filename);
	if (req->requested) {
		size_t n = strlen(req->requested);

		slash = memrchr(req->requested, '/', n);
		e.rbase = slash ? slash + 1 : req->requested;
		e.rbase_len = n - (size_t)(e.rbase - req->requested);
		if (e.rbase_len == e.base_len && !memcmp(e.rbase, e.base, e.base_len))
			e.rbase = NULL;
	}
	/* The launcher's own -1 is not an exec a rule speaks of: count it as direct. */
	e.depth = req->depth < 0 ? 0 : req->depth;
	/* Older than the tracer: nested unless the policy says otherwise. */
	if (!req->depth_known && !p->settings.unknown_depth_direct && e.depth < 1)
		e.depth = 1;
	e.container_depth = req->container_depth < 0 ? 0 : req->container_depth;

	/* Bypass first, whatever the argv: the infrastructure, by identity. */
	if (p->bypass.n && policy_bypass_allowed(p, e.filename, req->dev, req->ino, req->foreign_ns)) {
		ret->rule = "internal_bypass";
		return;
	}
	if (e.budget->exceeded) {
		set_error(p, req, "evaluation budget exceeded (regular expressions took too long)", ret);
		return;
	}
	/* past its context's limits: refused, whatever the rules say */
	if (policy_context_over(p, req, &ret->message)) {
		ret->decision = EG_DECISION_DENY;
		ret->rule = "context_limit";
		return;
	}

	m = first_match(&e);
	if (m == -2) {
		set_error(p, req, e.error, ret);
		return;
	}
	if (m >= 0) {
		const struct eg_rule *r = &p->rules[m];

		ret->decision = r->decision;
		ret->rule = r->name;
		ret->message = r->message;
		ret->rule_index = m;
		ret->redirect = r->decision == EG_DECISION_REDIRECT ? &r->redirect : NULL;
	} else {
		ret->decision = p->settings.default_decision;
	}

	/*
	 * A cut argv may hide what a deny rule looks for. Only a supervisor
	 * acts on that (on_truncated); the host audit log keeps the verdict
	 * and the event says "truncated".
	 */
	if (req->truncated && req->apply_on_truncated && ret->decision != EG_DECISION_DENY) {
		switch (p->settings.on_truncated) {
		case EG_DECISION_DENY:
			ret->decision = EG_DECISION_DENY;
			ret->rule = "on_truncated";
			ret->message = "argv was truncated; on_truncated is deny";
			ret->rule_index = -1;
			break;
		case EG_DECISION_APPROVAL:
			ret->decision = EG_DECISION_APPROVAL;
			ret->rule = "on_truncated";
			ret->message = "argv was truncated; on_truncated asks for approval";
			ret->rule_index = -1;
			break;
		default:
			break;
		}
	}
	/* a redirect's target goes with a redirect only (on_truncated may have taken its place) */
	if (ret->decision != EG_DECISION_REDIRECT)
		ret->redirect = NULL;
}
