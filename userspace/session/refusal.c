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
#include "session/internal.h"
#include "util/clock.h"
#include "util/fileid.h"
#include "util/log.h"

void request_json(struct jsonw *w, const struct exec_request *r)
{
	const struct eg_program *p = r->planned && !r->plan.err ? &r->plan.prog[0] : NULL;
	char sid[16];
	unsigned int i;

	jsonw_int_field(w, "pid", r->tgid);
	jsonw_int_field(w, "tid", r->tid);
	jsonw_uint_field(w, "euid", r->euid);
	jsonw_string_field(w, "syscall", r->execveat ? "execveat" : "execve");
	jsonw_string_field(w, "filename", p ? p->path : r->path);
	jsonw_string_field(w, "path_requested", r->path);
	if (p && r->plan.n > 1) {
		jsonw_string_field(w, "interpreter", exec_plan_final(&r->plan)->path);
		jsonw_string_field(w, "interpreter_requested", r->plan.prog[1].requested);
	}
	jsonw_key(w, "argv");
	jsonw_start_array(w);
	for (i = 0; i < r->argc; i++)
		jsonw_string(w, r->argv[i]);
	jsonw_end_array(w);
	jsonw_uint_field(w, "argc", r->argc);
	jsonw_bool_field(w, "truncated", r->argv_trunc);
	jsonw_int_field(w, "depth", r->depth);
	jsonw_bool_field(w, "depth_known", r->depth_known);
	jsonw_int_field(w, "session_depth", r->session_depth);
	snprintf(sid, sizeof(sid), "s-%x", r->session->id);
	jsonw_string_field(w, "session", sid);
	jsonw_string_field(w, "cgroup", r->cgroup[0] ? r->cgroup : NULL);
}

void emit_blocked(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v,
		  const char *action, const char *approval_id)
{
	struct sbuf b = {};
	struct jsonw w;
	char text[512];

	request_cgroup(r);
	meta_open(&w, &b, "exec_failed");
	jsonw_key(&w, "exec_id");
	jsonw_null(&w);
	request_json(&w, r);
	jsonw_uint_field(&w, "errno", EACCES);
	jsonw_string_field(&w, "error", "EACCES");
	jsonw_string_field(&w, "decision", eg_decision_name(v->decision));
	jsonw_string_field(&w, "rule", v->rule);
	jsonw_string_field(&w, "message", v->message);
	jsonw_string_field(&w, "action", action);
	jsonw_string_field(&w, "layer", "seccomp");
	if (v->error)
		jsonw_string_field(&w, "reason", v->error);
	if (approval_id)
		jsonw_string_field(&w, "approval_id", approval_id);
	if (v->decision == EG_DECISION_REDIRECT && v->redirect && v->redirect->command) {
		size_t i;

		jsonw_key(&w, "redirect_to");
		jsonw_start_object(&w);
		jsonw_string_field(&w, "command", v->redirect->command);
		jsonw_key(&w, "args");
		jsonw_start_array(&w);
		for (i = 0; i < v->redirect->n_args; i++)
			jsonw_string(&w, v->redirect->args[i]);
		jsonw_end_array(&w);
		jsonw_end_object(&w);
	}
	jsonw_end_object(&w);
	sbuf_putc(&b, '\n');
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
		    v->message, NULL, 0, 0);
	emit_blocked(s, r, v, "blocked", NULL);
	s->st.denied++;
	r->session->denied++;
}
