// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The supervisor's flow: one trapped execve/execveat at a time, from a
 * session's seccomp listener. request_take() settles what needs no read
 * of the task (its session, the protocol, the limits), request_work()
 * (request.c, in a receiver or a worker) reads its memory and plans what
 * will run, request_finish() judges (judge.c) and answers (answer.c: a
 * ticket then CONTINUE; refusal.c: EACCES and the record) or parks it for
 * a person (approvals.c), once the notification is found still pending
 * (asked of the kernel first, or, for a CONTINUE, by the answer itself).
 * Nothing the target wrote is believed; the kernel kills the task at the
 * exec if what runs is anything but what its ticket names.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
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
#include "trace/amend.h"
#include "util/clock.h"
#include "util/fileid.h"
#include "util/log.h"

struct seccomp_notif *notif_new(const struct eg_sessions *s)
{
	/* zeroed: the kernel refuses a receive into a buffer that is not (ENVIRONMENT.md) */
	return calloc(1, s->notif_size ? s->notif_size : sizeof(struct seccomp_notif));
}

int supervisor_init(struct eg_sessions *s)
{
	const char *no_prog = getenv("EXECGATE_NO_FACTS_PROG");
	int err;

	/* the teller the daemon forked at its start, or, first, while the daemon holds nothing a session controls, one now */
	err = tell_init(s, s->o.teller_fd);
	if (err)
		p_warn("session: cannot start the stderr helper (%s): refusals go without their line",
		       strerror(-err));
	/*
	 * libseccomp learns the kernel's API level and notification sizes on
	 * first use, into unlocked globals: once here, before any receiver
	 * thread can race another to it.
	 */
	{
		struct seccomp_notif *req = NULL;
		struct seccomp_notif_resp *resp = NULL;
		struct seccomp_notif_sizes sz = {};

		seccomp_api_get();
		if (!seccomp_notify_alloc(&req, &resp))
			seccomp_notify_free(req, resp);
		/* the receive buffer, sized once: one calloc per notification, not libseccomp's two */
		s->notif_size = sizeof(struct seccomp_notif);
		if (!syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) && sz.seccomp_notif > s->notif_size)
			s->notif_size = sz.seccomp_notif;
	}
	/*
	 * The kernel's facts about a trapped task in one system call, where the
	 * program loads. EXECGATE_NO_FACTS_PROG=1 asks through pidfds and /proc
	 * as where it does not (tests run both ways on one kernel).
	 */
	if (no_prog && !strcmp(no_prog, "1"))
		err = -EOPNOTSUPP;
	else
		err = facts_open(s->o.tasks_fd, &s->facts);
	if (err)
		p_dbg("session: the facts program cannot serve here (%s): pidfds and /proc instead",
		      strerror(-err));
	/* a launcher's session id, written in the kernel: without it no session opens */
	err = task_amender_open(s->o.tasks_fd, &s->amender);
	if (err)
		p_warn("session: cannot load the program that marks a launcher's session (%s): "
		       "sessions are refused", strerror(-err));
	s->flow.take = request_take;
	s->flow.finish = request_finish;
	s->flow.refuse_early = request_refuse_early;
	s->roots.loaders = s->o.loaders;
	err = roots_open(&s->roots);
	if (err)
		return err;
	return offload_init(s);
}

void supervisor_fini(struct eg_sessions *s)
{
	offload_fini(s);
	facts_close(s->facts);
	s->facts = NULL;
	task_amender_close(s->amender);
	s->amender = NULL;
	tell_fini(s);
	roots_close(&s->roots);
}

bool request_take(struct eg_sessions *s, struct eg_session *se, struct exec_request *r)
{
	const struct seccomp_notif *req = r->req;
	struct eg_verdict v = {};
	struct eg_session *own;

	r->listener = se->listener;
	r->session = se;
	s->st.execs++;
	se->execs++;

	/* only 64-bit native execs: anything else is refused, never guessed at */
	if (req->data.arch != AUDIT_ARCH_X86_64 ||
	    (req->data.nr != __NR_execve && req->data.nr != __NR_execveat)) {
		v = (struct eg_verdict){ .decision = EG_DECISION_DENY, .rule = "unsupported",
					 .message = "32-bit and x32 execs are not supported in sessions" };
		r->depth = -1;
		request_deny_with(s, r, &v);
		goto done;
	}
	own = r->rc_facts ? NULL : session_find(s, r->task.session);
	for (struct eg_session *x = own; x && x != se; x = x->parent)
		if (!x->parent)
			own = NULL;	/* not inside this listener's session */
	if (!own) {
		v = (struct eg_verdict){ .decision = EG_DECISION_DENY, .rule = "membership",
					 .message = "the kernel does not know this task as a member of the session" };
		request_deny_with(s, r, &v);
		goto done;
	}
	r->session = own;
	r->depth = (r->task.flags & EG_TASK_KNOWN) ? r->task.depth + 1 : 0;
	r->depth_known = r->task.flags & EG_TASK_DEPTH_KNOWN;
	/* a session's command is 0 (its launcher was -1), below it 1 and more */
	r->session_depth = (r->task.flags & EG_TASK_SESSION_DEPTH) ? r->task.session_depth + 1 : 0;
	/* the first exec on a new listener is its launcher's: anything else breaks the protocol */
	if (!se->first_seen) {
		se->first_seen = true;
		if (r->tgid != se->launcher) {
			se->compromised = true;
			p_warn("session s-%x: the first exec came from pid %d, not its launcher %d: refusing all",
			       se->id, (int)r->tgid, (int)se->launcher);
		}
	}
	if (se->compromised) {
		v = (struct eg_verdict){ .decision = EG_DECISION_DENY, .rule = "protocol",
					 .message = "this session's listener was not installed by its launcher" };
		request_deny_with(s, r, &v);
		goto done;
	}
	{
		const struct seccomp_data *d = &req->data;
		uint32_t argc, bytes;

		request_limits(s, r->session, &argc, &bytes);
		r->execveat = d->nr == __NR_execveat;
		r->dirfd_num = r->execveat ? (int)d->args[0] : AT_FDCWD;
		r->at_flags = r->execveat ? (int)d->args[4] : 0;
		r->max_argc = argc;
		r->max_argv_bytes = bytes;
		/* a re-asked exec rejoins its approval by argv (approval_rejoin): read it whatever the lookup */
		r->argv_wanted = approval_waits_for(s, r->tid);
	}
	request_policy_facts(s, r);
	/* the worker hashes a program of a size the daemon's policy names by content (known just now) */
	if (*s->o.global) {
		memcpy(r->content_sizes, s->global_sizes, s->n_global_sizes * sizeof(uint64_t));
		r->n_content_sizes = s->n_global_sizes;
	}
	return true;
done:
	request_free(r);
	return false;
}

/* A notification the loop took from a listener (no receiver, or the receiver is stuck). */
void supervisor_handle(struct eg_sessions *s, struct eg_session *se, struct seccomp_notif *req)
{
	struct exec_request *r = request_new(s, req);

	if (!r) {
		struct exec_request tmp = { .listener = se->listener, .id = req->id, .pidfd = -1 };

		request_deny(s, &tmp, NULL);
		free(req);
		return;
	}
	/* memory and files the session controls: read and looked up off the loop */
	if (request_take(s, se, r))
		offload_submit(s, r, se);
}

/* Whether r still waits in its exec: asked of the kernel once (*known), then known. */
static bool still_waits(const struct exec_request *r, bool *known)
{
	if (!*known)
		*known = request_valid(r);
	return *known;
}

/*
 * Whether a request of r's thread that came after r was finished already:
 * then r is gone (a thread waits in one exec at a time, and it asked
 * again: a signal withdrew r, on a kernel without WAIT_KILLABLE_RECV, or
 * the thread died and its tid was reused). Else r is noted as its
 * thread's newest. Loop's lock. A slot another thread took since forgets
 * the older one: the same as before this table.
 */
static bool finished_after(struct eg_sessions *s, const struct exec_request *r)
{
	unsigned int i = ((uint32_t)r->tid * 2654435761u) & (FINISHED_SLOTS - 1);

	if (s->finished[i].tid == r->tid && s->finished[i].ns > r->received_ns)
		return true;
	s->finished[i].tid = r->tid;
	s->finished[i].ns = r->received_ns;
	return false;
}

void request_finish(struct eg_sessions *s, struct exec_request *r)
{
	struct eg_verdict v = {};
	int rc = r->rc_read;
	bool waits = false, ask_first;

	/* first, whatever the outcome: gone already, or another of its thread in flight (below) */
	ask_first = finished_after(s, r) || offload_tid_live(s, r->tid);
	if (rc == -ESRCH)
		goto done;		/* gone: nobody to answer */
	if (rc) {
		if (!request_valid(r))
			goto done;
		/* unreadable memory, a path longer than PATH_MAX: the kernel says so itself */
		if (rc == -EFAULT || rc == -ENAMETOOLONG) {
			request_let_fail(s, r, rc);
			goto done;
		}
		/* no such program either (argv was read for a rejoin only): the kernel says so */
		if (lookup_fails_in_kernel(r->rc_plan)) {
			request_let_fail(s, r, r->rc_plan);
			goto done;
		}
		/* our own failure (out of memory): refused, never let through to be killed */
		v = (struct eg_verdict){ .decision = EG_DECISION_DENY, .rule = "error",
					 .message = "the daemon could not read the exec's arguments" };
		request_deny_with(s, r, &v);
		goto done;
	}
	rc = r->rc_plan;
	/*
	 * Everything read so far (memory, /proc/TID, the pidfd) was the
	 * target's only if it still waits in this very exec: one check after
	 * the last read, before anything is believed or answered. Two
	 * outcomes are the exception, an allow and a lookup the kernel fails
	 * too (let fail, with a ticket that names no file): their CONTINUE is
	 * the check (it fails for a request that is gone, and then the
	 * ticket, the verdict and the count are taken back: ticket_continue,
	 * answer_send), and a thread that still waits in its exec cannot have
	 * been replaced by another while we read. Every other outcome is
	 * checked first, as it writes a record, answers with an error or asks
	 * a person. So are both while another request of the same thread is
	 * in flight or was finished after this one came: withdrawn by
	 * a signal and asked again (kernels without WAIT_KILLABLE_RECV), the
	 * other taken by the loop while a receiver was stuck or waiting in a
	 * backlog, a stale answer would put its ticket over the live one's,
	 * then take it away. So are both while the thread has an exec waiting
	 * for a person (a re-ask rejoins it). (One system call less per
	 * allowed exec or failed lookup: docs/bench.md.)
	 */
	if ((ask_first || approval_waits_for(s, r->tid)) && !still_waits(r, &waits))
		goto done;
	if (approval_rejoin(s, r) > 0) {
		r = NULL;		/* the parked request took it over */
		goto done;
	}
	if (rc && !lookup_fails_in_kernel(rc) && !still_waits(r, &waits))
		goto done;
	if (rc == -EXDEV) {
		/*
		 * Through another process's /proc entry, or a magic link reached
		 * from a relative path: where it leads for the task is not what
		 * it would be for us. Refused rather than guessed at (let to
		 * fail, it would run and be killed for its empty ticket).
		 */
		v = (struct eg_verdict){ .decision = EG_DECISION_DENY, .rule = "unsupported",
					 .message = "the path goes through /proc links the daemon cannot follow as "
						    "the task would (another process's entry, or a magic link from "
						    "a relative path)" };
		request_deny_with(s, r, &v);
		goto done;
	}
	if (rc && !lookup_fails_in_kernel(rc)) {
		/* our own failure (memory, descriptors, I/O): refused, never guessed at */
		v = (struct eg_verdict){ .decision = EG_DECISION_DENY, .rule = "error",
					 .message = "the daemon could not look the program up" };
		request_deny_with(s, r, &v);
		goto done;
	}
	if (rc) {
		/* the exec will fail: the kernel fails it (and the tracer records it) */
		request_let_fail(s, r, rc);
		goto done;
	}
	/* the next PATH entry of a shell's search, for the file just refused: no second question */
	{
		const struct refusal *f = request_refused_recently(s, r);

		if (f) {
			struct eg_verdict same = { .decision = EG_DECISION_DENY, .rule = f->rule,
						   .message = f->message, .rule_index = -1 };

			if (!still_waits(r, &waits))
				goto done;
			/* a redirect refused at the previous PATH entry: said the same way */
			same.redirect = policy_rule_redirect(*s->o.global, f->rule);
			if (same.redirect)
				same.decision = EG_DECISION_REDIRECT;

			request_deny(s, r, NULL);
			verdict_put(s, r->tid, r->session->id, "deny", f->action, f->rule, f->message, NULL, 0, 0, 0);
			emit_blocked(s, r, &same, f->action, NULL);
			s->st.denied++;
			r->session->denied++;
			goto done;
		}
	}
	request_judge(s, r, &v);
	if (v.decision != EG_DECISION_ALLOW && v.decision != EG_DECISION_AUDIT &&
	    v.decision != EG_DECISION_REDIRECT && !still_waits(r, &waits))
		goto done;
	switch (v.decision) {
	case EG_DECISION_DENY:
	case EG_DECISION_ERROR:
		request_deny_with(s, r, &v);
		break;
	case EG_DECISION_APPROVAL:
		/* answered later, by whoever answers it: not through this receiver's slot */
		r->answer_to = NULL;
		approval_park(s, r, &v);
		r = NULL;
		break;
	case EG_DECISION_REDIRECT:
		/*
		 * An entry of the session's redirect directory (root's file, the
		 * one the ticket pins) is the redirect itself: it runs. Any other
		 * way to the command (an absolute path, a changed PATH) is refused,
		 * naming where it would have gone.
		 */
		if (!r->plan.n || r->plan.prog[0].uid ||
		    !redirect_path_in(r->session, r->plan.prog[0].path, r->plan.prog[0].dev, r->plan.prog[0].ino)) {
			if (still_waits(r, &waits))
				request_deny_with(s, r, &v);
			break;
		}
		/* fallthrough */
	default:
		if (request_allow(s, r) == 0) {
			uint64_t seq = verdict_put(s, r->tid, r->session->id, eg_decision_name(v.decision),
						   verdict_action(v.decision), v.rule, v.message, NULL,
						   s->ticket->dev, s->ticket->ino, s->ticket->issued_ns);
			struct eg_answer *held = request_held(r);

			s->st.allowed++;
			if (held) {
				held->verdict_seq = seq;
				held->allowed = true;
			}
		}
		break;
	}
done:
	request_free(r);
}

/*
 * A refusal before (or without) what a worker reads: the record names the
 * task, its session and depth, not the program (the worker may still be
 * writing r's path and argv).
 */
void request_refuse_early(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v)
{
	struct exec_request *tmp = malloc(sizeof(*tmp));

	if (!tmp) {
		struct seccomp_notif_resp resp = { .id = r->id, .error = -EACCES };

		notif_respond(r->listener, &resp);
		return;
	}
	memset(tmp, 0, offsetof(struct exec_request, plan));
	tmp->received_ns = r->received_ns;
	tmp->session = r->session;
	tmp->listener = r->listener;
	tmp->id = r->id;
	tmp->tid = r->tid;
	tmp->tgid = r->tgid;
	tmp->pidfd = -1;
	tmp->depth = r->depth;
	tmp->depth_known = r->depth_known;
	tmp->session_depth = r->session_depth;
	tmp->euid = r->euid;
	tmp->foreign_ns = r->foreign_ns;
	tmp->user_mount = r->user_mount;
	if (r->cgroup_read) {
		memcpy(tmp->cgroup, r->cgroup, sizeof(tmp->cgroup));
		tmp->cgroup_read = true;
	}
	request_deny_with(s, tmp, v);
	if (tmp->pidfd >= 0)
		close(tmp->pidfd);
	free(tmp);
}
