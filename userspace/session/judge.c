// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Judging a trapped exec: the facts the policies over its session look at
 * (read only when a rule does), then every program of the exec under the
 * daemon's policy and each session's, the strongest verdict standing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <seccomp.h>
#include <bpf/bpf.h>
#include "loop/loop.h"
#include "events/meta.h"
#include "session/internal.h"
#include "util/clock.h"
#include "util/fileid.h"
#include "util/log.h"
#include "util/ns.h"

/* What p's rules look at besides the exec (POLICY_NEEDS_*). */
static unsigned int policy_needs(const struct eg_policy *p)
{
	struct eg_rule_info ri;
	unsigned int needs = 0;
	size_t i, n = 0;

	policy_internal_bypass(p, &n);
	if (n)
		needs |= POLICY_NEEDS_MNT_NS;
	for (i = 0; i < policy_rule_count(p); i++)
		if (!policy_rule_info(p, i, &ri) && ri.n_cgroups) {
			needs |= POLICY_NEEDS_CGROUP;
			break;
		}
	return needs;
}

/*
 * What is known of the daemon's policy, taken again when another load is
 * in force (a reload; the same text loaded again because its files
 * changed: other files, other sizes).
 */
static void global_known(struct eg_sessions *s, const struct eg_policy *g)
{
	size_t n;

	if (policy_load_seq(g) == s->global_load_seq)
		return;
	s->global_needs = policy_needs(g);
	n = policy_content_sizes(g, s->global_sizes, 64);
	s->n_global_sizes = n < 64 ? n : 64;
	s->global_load_seq = policy_load_seq(g);
}

/* What the policies over r's session look at: the daemon's (it may be reloaded), the sessions'. */
static unsigned int chain_needs(struct eg_sessions *s, struct eg_session *se)
{
	const struct eg_policy *g = *s->o.global;
	unsigned int needs = 0;
	struct eg_session *x;

	if (g) {
		global_known(s, g);
		needs |= s->global_needs;
	}
	for (x = se; x; x = x->parent) {
		if (!x->policy)
			continue;
		if (!x->needs_known) {
			x->needs = policy_needs(x->policy);
			x->needs_known = true;
		}
		needs |= x->needs;
	}
	return needs;
}

/*
 * A namespace of the task, by its inode number: from the facts program
 * when it read them (request_new), else a stat of /proc/TID/ns/NAME.
 * False when the task is gone.
 */
static bool task_ns(const struct exec_request *r, const char *name, uint32_t known, uint64_t *ret)
{
	char path[64];
	struct stat st;

	if (r->ns_known) {
		*ret = known;
		return true;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)r->tid, name);
	if (stat(path, &st))
		return false;
	*ret = st.st_ino;
	return true;
}

/*
 * The task's cgroup and mount namespace, read only when a rule looks at
 * them (on most execs none does; a refusal's record reads the cgroup).
 */
void request_policy_facts(struct eg_sessions *s, struct exec_request *r)
{
	unsigned int needs = chain_needs(s, r->session);
	uint64_t ns;

	if (needs & POLICY_NEEDS_CGROUP)
		request_cgroup(s, r);
	/* rules scoped to cgroups judge the depth in a container: is it in one? */
	if ((needs & POLICY_NEEDS_CGROUP) && s->o.host_pid_ns && task_ns(r, "pid", r->pid_ns, &ns) &&
	    ns != s->o.host_pid_ns) {
		r->in_container = true;
		/* as the kernel counts it (container_depth_of in bpf/execgate.bpf.h) */
		if (r->task.cont_pidns)
			r->container_depth = r->task.container_depth + 1;
		else if (!(r->ns_known ? r->pid_ns_ours : eg_ns_ours(r->tid, "pid")))	/* a user's own (unknown: the same) */
			r->container_depth = r->task.depth + 1;
		else
			r->container_depth = 0;
	}
	/*
	 * Another mount namespace than the daemon's. One a user made (a
	 * session started inside one: its tasks cannot make one): any path in
	 * it may be of their own making, so no allow by a glob holds there,
	 * as the kernel's judge has it.
	 */
	if (s->o.host_mnt_ns && task_ns(r, "mnt", r->mnt_ns, &ns) && ns != s->o.host_mnt_ns) {
		r->foreign_ns = needs & POLICY_NEEDS_MNT_NS;
		r->user_mount = !(r->ns_known ? r->mnt_ns_root_made : eg_ns_root_made(r->tid, "mnt"));
	}
}

/* ---- judging ----------------------------------------------------------------- */

/*
 * One program under one policy. host: the daemon's policy, which judges the
 * host's depth (nothing a user starts resets it); a session's policy judges
 * the depth from the session's command.
 */
static void judge_one(const struct eg_policy *p, struct exec_request *r, const struct eg_program *pr,
		      bool host, struct eg_eval_budget *budget, struct eg_verdict *acc, bool *first,
		      struct eg_verdict *own, bool own_first)
{
	struct eg_exec_req req = {};
	struct eg_verdict v;

	req.filename = pr->path;
	req.requested = pr->requested;
	req.argv = (const char *const *)pr->argv;
	req.argc = pr->argc;
	req.depth = host ? r->depth : r->session_depth;
	req.depth_known = host ? r->depth_known : true;
	req.in_container = r->in_container;
	req.container_depth = r->container_depth;
	req.cgroup = r->cgroup[0] ? r->cgroup : NULL;
	req.euid = r->euid;
	req.dev = pr->dev;
	req.ino = pr->ino;
	/* the content, as a worker read it: nothing is read here, in the loop */
	if (pr->hashed) {
		req.size = pr->size;
		req.content_sha = pr->sha256;
	}
	req.foreign_ns = r->foreign_ns;
	req.user_mount = r->user_mount;
	req.truncated = r->argv_trunc;
	req.apply_on_truncated = true;
	req.budget = budget;
	/*
	 * The daemon's policy knows agent contexts: the one the task is in
	 * (the kernel's, inherited), or the one this program's identity
	 * enters; the shells in a row as the kernel counts them.
	 */
	if (host && policy_context_count(p)) {
		uint32_t id = policy_context_identity(p, &req);

		if (id && id != r->task.context) {
			req.context = id;
			req.context_depth = 0;
		} else if (r->task.context) {
			req.context = r->task.context;
			req.context_depth = r->task.context_depth + 1;
		}
		req.shells = policy_is_shell(pr->path) ? r->task.shells + 1u : 0;
	}
	policy_eval(p, &req, &v);
	if (own_first)
		*own = v;
	else
		policy_verdict_merge(own, &v);
	if (*first) {
		*acc = v;
		*first = false;
	} else {
		policy_verdict_merge(acc, &v);
	}
}

/*
 * Every program of the exec, under every policy that covers the session:
 * the daemon's, then each session's from the outermost in. The strongest
 * verdict stands (a session policy can only add refusals). A restricted
 * session refuses every exec below its own command.
 */
void request_judge(struct eg_sessions *s, struct exec_request *r, struct eg_verdict *ret)
{
	const struct eg_policy *chain[64];
	struct eg_eval_budget budget = {};
	struct eg_session *x;
	unsigned int n = 0, i, k;
	bool first = true, restricted = false;

	if (*s->o.global)
		chain[n++] = *s->o.global;
	for (x = r->session; x; x = x->parent)
		restricted |= x->restricted;
	memset(ret, 0, sizeof(*ret));
	r->pjudged = false;
	ret->decision = EG_DECISION_ALLOW;
	ret->rule_index = -1;
	{
		struct eg_session *stack[63];
		unsigned int m = 0;

		for (x = r->session; x; x = x->parent) {
			if (!x->policy)
				continue;
			if (m == 63) {
				/* every policy above must judge: one that is left out would be weakened */
				ret->decision = EG_DECISION_DENY;
				ret->rule = "on_error";
				ret->message = "more nested session policies than the supervisor evaluates (63)";
				return;
			}
			stack[m++] = x;
		}
		while (m && n < 64)
			chain[n++] = stack[--m]->policy;
	}
	/* restricted: nothing below the session's own command (its depth, not the host's) */
	if (restricted && r->session_depth >= 1) {
		ret->decision = EG_DECISION_DENY;
		ret->rule = "restricted";
		ret->message = "restricted session: only the session's command runs, external commands are refused";
		return;
	}
	if (!n)
		return;
	/*
	 * A program of a size the daemon's policy names by content must have
	 * been hashed by the worker: unread (a policy reloaded meanwhile, more
	 * sizes than a request carries, a file root cannot read) it could be a
	 * copy of a denied one. Nothing is read here: refused.
	 */
	for (k = 0; *s->o.global && k < r->plan.n; k++) {
		const struct eg_program *pr = &r->plan.prog[k];

		if (!pr->hashed && policy_wants_size(*s->o.global, pr->size)) {
			ret->decision = EG_DECISION_DENY;
			ret->rule = "on_error";
			ret->message = "the program has the size of a file the policy names, and its content "
				       "could not be compared";
			return;
		}
	}
	/* a loader asked for a program by a name it looks up itself: which file is not known */
	if (r->plan.loader == EG_LOADER_UNPINNED) {
		ret->decision = EG_DECISION_DENY;
		ret->rule = "loader";
		ret->message = "the dynamic loader was asked for a program this supervisor cannot pin "
			       "(a bare name, or a file that is not there): name it by its path";
		return;
	}
	/* a loader's program off a layer's execute list (request_work looked) */
	if (r->target_off_lists) {
		ret->decision = EG_DECISION_DENY;
		ret->rule = "loader";
		ret->message = "the dynamic loader was asked for a program outside the session's execute list "
			       "(filesystem: execute), where the kernel runs nothing";
		return;
	}
	/*
	 * The ticket pins the first ticket_argv_room() bytes of the argv the
	 * kernel hands the program that runs last. A script's interpreter
	 * gets more than the caller gave (its name, the #! line's argument,
	 * the script's path), so a caller's argv read whole can end past what
	 * is pinned, and a thread could rewrite that end between the read and
	 * the exec, after the judge saw it. Judged as cut (on_truncated), as
	 * an argv read in part is.
	 */
	if (!r->argv_trunc && r->planned && !r->plan.err && r->plan.n > 1) {
		const struct eg_program *f = exec_plan_final(&r->plan);
		size_t bytes = 0;

		for (k = 0; k < f->argc; k++)
			bytes += strlen(f->argv[k]) + 1;
		if (bytes > ticket_argv_room(s))
			r->argv_trunc = true;
	}
	for (i = 0; i < n; i++) {
		bool host = *s->o.global && i == 0;

		for (k = 0; k < r->plan.n && k < EG_MAX_PROGRAMS; k++)
			judge_one(chain[i], r, &r->plan.prog[k], host, &budget, ret, &first,
				  &r->pverdict[k], i == 0);
		if (r->plan.loader == EG_LOADER_TARGET)
			judge_one(chain[i], r, &r->plan.target, host, &budget, ret, &first,
				  &r->pverdict[EG_MAX_PROGRAMS], i == 0);
	}
	r->pjudged = r->plan.n <= EG_MAX_PROGRAMS;
}
