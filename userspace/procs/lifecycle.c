// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The end of a run (procs/internal.h): its exit (the pidfd readable), the
 * exit event and the caller's last line, its timeout, and its foreground
 * caller going away.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ctl/server.h"
#include "events/meta.h"
#include "procs/internal.h"
#include "util/clock.h"

static void emit_exit(struct eg_procs *ps, struct proc *p)
{
	struct sbuf b = {};
	struct jsonw w;
	char text[512], st[64];

	proc_status_text(p, st, sizeof(st));
	meta_open(&w, &b, "process");
	jsonw_string_field(&w, "event", "exit");
	jsonw_string_field(&w, "id", p->id);
	jsonw_int_field(&w, "pid", p->pid);
	jsonw_uint_field(&w, "uid", p->uid);
	jsonw_string_field(&w, "session", p->session);
	jsonw_string_field(&w, "command", p->cmd);
	jsonw_bool_field(&w, "background", p->background);
	proc_status_json(&w, p);
	jsonw_uint_field(&w, "duration_ms", p->end_ms - p->start_ms);
	if (p->log.path[0]) {
		jsonw_string_field(&w, "log", p->log.path);
		proc_log_counts_json(&w, p);
	}
	proc_last_lines_json(&w, p);
	jsonw_end_object(&w);
	sbuf_putc(&b, '\n');
	snprintf(text, sizeof(text), "process %s (pid %d, session %s) %s: %.200s", p->id, (int)p->pid,
		 p->session, st, p->cmd);
	if (!b.oom && ps->o.emit)
		ps->o.emit(ps->o.arg, b.data, b.len, text);
	sbuf_free(&b);
}

/* What a foreground caller (or a `wait`) reads last. */
void proc_send_exit_line(struct ctl_conn *c, const struct proc *p)
{
	struct sbuf b = {};
	struct jsonw jw;

	jsonw_init(&jw, &b);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "event", "exit");
	jsonw_string_field(&jw, "id", p->id);
	proc_status_json(&jw, p);
	if (p->state_warn[0])
		jsonw_string_field(&jw, "warning", p->state_warn);
	jsonw_end_object(&jw);
	if (!b.oom)
		ctl_send(c, b.data, b.len);
	sbuf_free(&b);
}

void proc_on_exit(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct proc *p = arg;
	struct eg_procs *ps = p->owner;
	int ws;

	(void)w;
	(void)fd;
	(void)events;
	if (waitpid(p->pid, &ws, WNOHANG) != p->pid)
		return;
	p->exited = true;
	p->ws = ws;
	p->end_ms = eg_mono_ms();
	loop_del(p->pw);
	p->pw = NULL;
	close(p->pidfd);
	p->pidfd = -1;
	if (!proc_alive(p)) {
		/* else the timeout still applies to what it left behind */
		loop_del(p->timer);
		p->timer = NULL;
	}
	if (p->out_fd >= 0 && !proc_out_drain(p, 64))
		proc_out_close(p);
	if (p->st)
		proc_state_end(p, ws);
	emit_exit(ps, p);
	if (p->fg)
		proc_send_exit_line(p->fg, p);
}

void proc_on_timeout(struct eg_watch *w, uint64_t exp, void *arg)
{
	struct proc *p = arg;

	(void)w;
	(void)exp;
	loop_del(p->timer);
	p->timer = NULL;
	if (!proc_alive(p))
		return;
	if (!p->exited)
		p->timed_out = true;
	proc_signal(p, SIGKILL);	/* the whole cgroup and process group */
}

void proc_on_fg_close(struct ctl_conn *c, void *arg)
{
	struct proc *p = arg;

	if (p->fg != c)
		return;
	p->fg = NULL;
	if (!p->background && proc_alive(p)) {
		/* the client went away: so does what it ran, and what that left behind */
		proc_signal(p, SIGTERM);
	}
}
