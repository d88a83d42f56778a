// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Refusals: EACCES with a line on the target's stderr, the record of an
 * exec the kernel never saw (the exec record's schema, as the supervisor
 * knows it), and the refusals a shell's PATH search would repeat.
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
#include "events/request.h"
#include "session/internal.h"
#include "util/clock.h"
#include "util/fileid.h"
#include "util/log.h"

/* The request's facts as the records about it carry them (events/request.h). */
static void request_view(const struct exec_request *r, struct eg_request_view *v)
{
	const struct eg_program *p = r->planned && !r->plan.err ? &r->plan.prog[0] : NULL;

	memset(v, 0, sizeof(*v));
	v->pid = r->tgid;
	v->tid = r->tid;
	v->euid = r->euid;
	v->execveat = r->execveat;
	v->filename = p ? p->path : r->path;
	v->path_requested = r->path;
	if (p && r->plan.n > 1) {
		v->interpreter = exec_plan_final(&r->plan)->path;
		v->interpreter_requested = r->plan.prog[1].requested;
	}
	v->argv = r->argv;
	v->argc = r->argc;
	v->truncated = r->argv_trunc;
	v->depth = r->depth;
	v->depth_known = r->depth_known;
	v->session_depth = r->session_depth;
	v->session = r->session->id;
	v->cgroup = r->cgroup[0] ? r->cgroup : NULL;
}

void request_json(struct jsonw *w, const struct exec_request *r)
{
	request_json_argv(w, r, r->argv, r->argc);
}

void request_json_argv(struct jsonw *w, const struct exec_request *r, char *const *argv, unsigned int argc)
{
	struct eg_request_view v;

	request_view(r, &v);
	v.argv = argv;
	v.argv_listed = argc;
	v.argv_listed_set = true;
	format_request_fields(w, &v);
}

static struct eg_str str_of(const char *s)
{
	return (struct eg_str){ .p = s, .len = strlen(s) };
}

/*
 * Every program the exec runs, when there is more than one (a script and
 * its interpreter, the scripts between them, a loader and the program it
 * maps), each with its own verdict: the file that runs first, then the
 * program a loader maps, the script the caller named, the ones between.
 * Returns how many went into pv (room for EG_MAX_PROGRAMS + 1).
 */
static unsigned int programs_of(const struct exec_request *r, struct eg_program_verdict *pv)
{
	const struct eg_exec_plan *pl = &r->plan;
	bool loader = pl->loader == EG_LOADER_TARGET;
	unsigned int k, n = 0;

	if (!r->planned || pl->err || !r->pjudged || !pl->n || (pl->n < 2 && !loader))
		return 0;
	pv[n++] = (struct eg_program_verdict){
		.role = loader ? "loader" : pl->n > 1 ? "interpreter" : "program",
		.filename = str_of(pl->prog[pl->n - 1].path),
		.decision = eg_decision_name(r->pverdict[pl->n - 1].decision),
		.rule = r->pverdict[pl->n - 1].rule };
	if (loader)
		pv[n++] = (struct eg_program_verdict){
			.role = "program", .filename = str_of(pl->target.path),
			.decision = eg_decision_name(r->pverdict[EG_MAX_PROGRAMS].decision),
			.rule = r->pverdict[EG_MAX_PROGRAMS].rule };
	for (k = 0; k + 1 < pl->n; k++)
		pv[n++] = (struct eg_program_verdict){
			.role = k ? "chain" : "script", .filename = str_of(pl->prog[k].path),
			.decision = eg_decision_name(r->pverdict[k].decision), .rule = r->pverdict[k].rule };
	return n;
}

void emit_blocked(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v,
		  const char *action, const char *approval_id)
{
	struct eg_program_verdict pv[EG_MAX_PROGRAMS + 1];
	struct eg_annotation a = {};
	struct eg_request_view rv;
	struct sbuf b = {};
	char text[512];

	request_cgroup(s, r);
	request_view(r, &rv);
	a.decision = eg_decision_name(v->decision);
	a.rule = v->rule;
	a.message = v->message;
	a.action = action;
	a.layer = "seccomp";
	a.reason = v->error;
	/* a redirect refused: where it would have gone (redirect_to) */
	a.redirect = v->decision == EG_DECISION_REDIRECT ? v->redirect : NULL;
	a.programs = pv;
	a.n_programs = programs_of(r, pv);
	format_refused_json(&b, &rv, EACCES, &a, approval_id);
	snprintf(text, sizeof(text), "%s s-%x pid %d depth %d: %.200s (%.100s)", action, r->session->id,
		 (int)r->tgid, r->depth, r->argc ? r->argv[0] : r->path, v->rule ? v->rule : "default");
	sessions_emit(s, &b, text);
	sbuf_free(&b);
}

const char *verdict_action(enum eg_decision d)
{
	switch (d) {
	case EG_DECISION_AUDIT: return "audited";
	case EG_DECISION_APPROVAL: return "approved";
	case EG_DECISION_REDIRECT: return "redirected";
	default: return "allowed";
	}
}

/* ---- refusals a shell's PATH search repeats ------------------------------------ */

static uint64_t argv_hash(const struct exec_request *r)
{
	uint64_t h = 1469598103934665603ull;
	unsigned int i;
	const char *p;

	for (i = 0; i < r->argc; i++) {
		for (p = r->argv[i]; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		h = (h ^ 0xff) * 1099511628211ull;
	}
	return h;
}

void refusal_note(struct eg_sessions *s, const struct exec_request *r, const char *rule,
		  const char *message, const char *action)
{
	struct refusal *f = &s->refusals[s->next_refusal++ % REFUSALS_MAX];
	const struct eg_program *p = r->planned && !r->plan.err ? exec_plan_final(&r->plan) : NULL;

	if (!p)
		return;
	f->tid = r->tid;
	f->session = r->session->id;
	f->dev = p->dev;
	f->ino = p->ino;
	f->argv_hash = argv_hash(r);
	f->at_ns = eg_mono_ns();
	snprintf(f->rule, sizeof(f->rule), "%s", rule ? rule : "");
	snprintf(f->message, sizeof(f->message), "%s", message ? message : "");
	snprintf(f->action, sizeof(f->action), "%s", action);
}

/* The same thread asking again for the same file and argv, just refused. */
const struct refusal *request_refused_recently(struct eg_sessions *s, const struct exec_request *r)
{
	const struct eg_program *p = exec_plan_final(&r->plan);
	uint64_t now = eg_mono_ns(), h = argv_hash(r);
	unsigned int i;

	for (i = 0; i < REFUSALS_MAX; i++) {
		const struct refusal *f = &s->refusals[i];

		if (f->tid == (uint32_t)r->tid && f->session == r->session->id && f->dev == p->dev &&
		    f->ino == p->ino && f->argv_hash == h && now - f->at_ns < REFUSAL_TTL_NS)
			return f;
	}
	return NULL;
}

/* ---- one notification ------------------------------------------------------ */

void request_deny_with(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v)
{
	char line[1024];

	snprintf(line, sizeof(line), "execgate: denied: %s (rule %s)\n",
		 v->message ? v->message : "refused by policy", v->rule ? v->rule : "default");
	if (v->decision == EG_DECISION_REDIRECT && v->redirect && v->redirect->command) {
		/* the redirect could not catch this exec (an absolute path, a changed PATH): say where to go */
		size_t i, n;

		n = (size_t)snprintf(line, sizeof(line), "execgate: denied: %s (rule %s); this command is redirected: "
				     "run %s", v->message ? v->message : "refused by policy",
				     v->rule ? v->rule : "default", v->redirect->command);
		for (i = 0; i < v->redirect->n_args && n < sizeof(line) - 2; i++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %s", v->redirect->args[i]);
		if (n > sizeof(line) - 2)
			n = sizeof(line) - 2;
		snprintf(line + n, sizeof(line) - n, "\n");
	}
	request_deny(s, r, line);
	refusal_note(s, r, v->rule, v->message, "blocked");
	verdict_put(s, r->tid, r->session->id, eg_decision_name(v->decision), "blocked", v->rule,
		    v->message, NULL, 0, 0, 0);
	emit_blocked(s, r, v, "blocked", NULL);
	s->st.denied++;
	r->session->denied++;
}
