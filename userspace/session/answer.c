// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The answer to a trapped exec. An allowed one goes on (CONTINUE) only
 * after a ticket in a BPF map names exactly what was allowed: the kernel
 * kills the task at the exec if what runs is anything else. A receiver
 * holds the CONTINUE of the request it carries (its own answer slot) and
 * sends it once it let go of the loop's lock.
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

int notif_respond(int listener, struct seccomp_notif_resp *resp)
{
	int rc;

	do
		rc = seccomp_notify_respond(listener, resp);
	while (rc && errno == EINTR);
	return rc ? -1 : 0;
}

int request_respond(struct exec_request *r, int error, bool cont)
{
	struct seccomp_notif_resp resp = {
		.id = r->id,
		.val = 0,
		.error = cont ? 0 : error,
		.flags = cont ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0,
	};
	struct eg_sessions *s = r->session ? r->session->owner : NULL;
	struct eg_answer *a = r->answer_to;

	if (s)
		latency_record(s, r);
	/*
	 * The receiver that carries r holds its CONTINUE and sends it once it
	 * let go of the loop's lock (answer_send): r's own slot, never another
	 * request's. One answer per request: the slot is taken.
	 */
	if (a && cont && !r->parked) {
		r->answer_to = NULL;
		memset(a, 0, sizeof(*a));
		a->have = true;
		a->listener = r->listener;
		a->id = r->id;
		a->tid = r->tid;
		a->map = -1;
		r->answer_held = a;
		return 0;
	}
	return notif_respond(r->listener, &resp);
}

void request_deny(struct eg_sessions *s, struct exec_request *r, const char *line)
{
	/* for the record of the refusal, while the task is surely there */
	request_cgroup(s, r);
	if (line)
		tell_target(s, r, line);
	if (request_respond(r, -EACCES, false))
		p_dbg("session: answer for tid %d failed (it is gone)", (int)r->tid);
}

struct eg_answer *request_held(const struct exec_request *r)
{
	return r->answer_held;
}

void answer_send(struct eg_sessions *s, const struct eg_answer *a)
{
	struct seccomp_notif_resp resp = { .id = a->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
	uint32_t key = a->tid;

	if (!a->have || !notif_respond(a->listener, &resp))
		return;
	/* gone (killed, or it left the wait): nothing of it may stay for another exec of its thread */
	loop_lock(s->o.loop);
	if (a->map >= 0)
		bpf_map_delete_elem(a->map, &key);
	verdict_forget(s, a->tid, a->verdict_seq);
	if (a->allowed && s->st.allowed)
		s->st.allowed--;
	loop_unlock(s->o.loop);
}

size_t ticket_argv_room(const struct eg_sessions *s)
{
	return s->o.argv_cap < EG_TICKET_ARGV_MAX ? s->o.argv_cap : EG_TICKET_ARGV_MAX;
}

/* The committed argv of the program that will run, NUL separated, into t. */
static void fill_ticket(struct eg_sessions *s, struct exec_request *r, struct eg_ticket *t)
{
	const struct eg_program *f = exec_plan_final(&r->plan);
	uint64_t full = 0, stored = 0;
	unsigned int i;

	memset(t, 0, offsetof(struct eg_ticket, argv));
	t->session = r->session->id;
	t->dev = f->dev;
	t->ino = f->ino;
	if (r->plan.n > 1) {
		t->flags |= EG_TICKET_SCRIPT;
		t->script_dev = r->plan.prog[0].dev;
		t->script_ino = r->plan.prog[0].ino;
		/* the scripts between the first and the interpreter, each opened by the kernel in turn */
		for (i = 1; i + 1 < r->plan.n && t->chain_n < EG_CHAIN_MAX; i++) {
			t->chain_dev[t->chain_n] = r->plan.prog[i].dev;
			t->chain_ino[t->chain_n] = r->plan.prog[i].ino;
			t->chain_n++;
		}
	}
	/* a loader run as the command: the one program it may map */
	if (r->plan.loader == EG_LOADER_TARGET) {
		t->flags |= EG_TICKET_LOADER;
		t->target_dev = r->plan.target.dev;
		t->target_ino = r->plan.target.ino;
	}
	for (i = 0; i < f->argc; i++) {
		size_t n = strlen(f->argv[i]) + 1;

		full += n;
		if (stored + n <= ticket_argv_room(s)) {
			memcpy(t->argv + stored, f->argv[i], n);
			stored += n;
		} else {
			/* the tracer keeps only its cap of argv: check what both have */
			size_t room = ticket_argv_room(s);

			if (stored < room) {
				memcpy(t->argv + stored, f->argv[i], room - stored);
				stored = room;
			}
			t->flags |= EG_TICKET_ARGV_PREFIX;
		}
	}
	/* an argv we did not read whole (on_truncated: allow) is only a prefix */
	if (r->argv_trunc)
		t->flags |= EG_TICKET_ARGV_PREFIX;
	t->argv_len = full;
	t->argv_stored = stored;
	t->issued_ns = eg_boot_ns();
}

/*
 * The ticket into the small map when its argv fits (a map update copies
 * the whole value: 568 bytes instead of 64 KiB), else into the large one,
 * and then no small ticket of this thread may stand before it: the kernel
 * looks in the small map first. The thread waits in this very exec until
 * we answer, so it makes no exec in between. The map fd written, or -errno.
 */
static int ticket_put(struct eg_sessions *s, uint32_t key)
{
	if (s->ticket->argv_stored <= EG_TICKET_SMALL_ARGV_MAX) {
		/* the small value is a prefix of the large one (execgate.h) */
		if (bpf_map_update_elem(s->o.tickets_small_fd, &key, s->ticket, BPF_ANY))
			return -errno;
		return s->o.tickets_small_fd;
	}
	if (bpf_map_delete_elem(s->o.tickets_small_fd, &key) && errno != ENOENT)
		return -errno;
	if (bpf_map_update_elem(s->o.tickets_fd, &key, s->ticket, BPF_ANY))
		return -errno;
	return s->o.tickets_fd;
}

/*
 * s->ticket into its map, then CONTINUE. -ESRCH: the request is gone (its
 * ticket taken back); another -errno: no ticket was written, the request
 * still waits for an answer.
 */
static int ticket_continue(struct eg_sessions *s, struct exec_request *r)
{
	uint32_t key = r->tid;
	int map;

	/*
	 * One that waited for a person is checked again first, for the record
	 * of the outcome, and before its ticket is written: its thread may
	 * have gone on to another exec (a signal withdrew this one), whose
	 * live ticket this would replace.
	 */
	if (r->parked && !request_valid(r))
		return -ESRCH;
	map = ticket_put(s, key);
	if (map < 0)
		return map;
	/*
	 * The answer itself fails for a request that is gone (request_finish
	 * checks a fresh one first only where another of its thread is or was
	 * in flight).
	 */
	if (request_respond(r, 0, true)) {
		bpf_map_delete_elem(map, &key);
		return -ESRCH;
	}
	if (request_held(r))
		request_held(r)->map = map;
	return 0;
}

int request_allow(struct eg_sessions *s, struct exec_request *r)
{
	int rc;

	fill_ticket(s, r, s->ticket);
	rc = ticket_continue(s, r);
	if (rc && rc != -ESRCH)
		request_deny(s, r, "execgate: denied: too many execs in flight in this session (no ticket)\n");
	return rc;
}

/*
 * An exec the kernel will refuse (no such file, a directory, a path too
 * long): let the kernel refuse it, so its record comes from the tracer
 * like any failed exec's, with the kernel's own errno, and a shell's PATH
 * search looks the same in a session as outside one. The ticket names no
 * file (device and inode 0): should the kernel find one after all (made
 * since we looked), that exec is killed before its image runs (refused at
 * bprm_check_security where BPF LSM is on), never run unjudged. rc: the
 * error to give if the ticket cannot be written.
 */
void request_let_fail(struct eg_sessions *s, struct exec_request *r, int rc)
{
	int err;

	memset(s->ticket, 0, offsetof(struct eg_ticket, argv));
	s->ticket->session = r->session->id;
	s->ticket->issued_ns = eg_boot_ns();
	err = ticket_continue(s, r);
	if (!err) {
		uint64_t seq = verdict_put(s, r->tid, r->session->id, "allow", "allowed", NULL, NULL, NULL, 0, 0,
					   s->ticket->issued_ns);

		if (request_held(r))
			request_held(r)->verdict_seq = seq;
	} else if (err != -ESRCH)
		request_respond(r, rc, false);
}
