// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The registry's ops on the control socket (procs/internal.h, docs/control.md):
 * ps, poll, log, write, send_keys, kill and wait; the table that registers
 * them with run's.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>
#include "ctl/proto.h"
#include "ctl/server.h"
#include "procs/internal.h"
#include "procs/text.h"
#include "util/clock.h"

#define CHUNK_MAX	(64u << 10)	/* output bytes per poll/log reply */

static void proc_json(struct jsonw *w, const struct proc *p)
{
	uint64_t end = p->exited ? p->end_ms : eg_mono_ms();

	jsonw_start_object(w);
	jsonw_string_field(w, "id", p->id);
	jsonw_int_field(w, "pid", p->pid);
	jsonw_uint_field(w, "uid", p->uid);
	jsonw_string_field(w, "session", p->session);
	jsonw_string_field(w, "command", p->cmd);
	jsonw_bool_field(w, "background", p->background);
	jsonw_bool_field(w, "pty", p->pty);
	proc_status_json(w, p);
	jsonw_uint_field(w, "runtime_ms", end - p->start_ms);
	proc_log_counts_json(w, p);
	jsonw_end_object(w);
}

static int op_ps(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_procs *ps = arg;
	struct sbuf b = {};
	struct jsonw w;
	int i;

	(void)req;
	ctl_reply_open(&w, &b);
	jsonw_key(&w, "processes");
	jsonw_start_array(&w);
	for (i = 0; i < PROCS_MAX; i++)
		if (ps->p[i].used && proc_may(c, &ps->p[i]))
			proc_json(&w, &ps->p[i]);
	jsonw_end_array(&w);
	ctl_reply_send(c, &w, &b);
	return 0;
}

/* "data_b64": up to max bytes of the log from off (base64: output is bytes, not text). */
static uint64_t put_chunk(struct jsonw *w, struct proc *p, uint64_t off, uint64_t max)
{
	static unsigned char raw[CHUNK_MAX], enc[CHUNK_MAX / 3 * 4 + 8];
	uint64_t n = 0;
	ssize_t r = 0;

	if (p->log.fd >= 0 && off < p->log.size) {
		n = p->log.size - off;
		if (n > max)
			n = max;
		if (n > CHUNK_MAX)
			n = CHUNK_MAX;
		r = plog_pread(&p->log, raw, n, off);
		if (r < 0)
			r = 0;
	}
	EVP_EncodeBlock(enc, raw, (int)r);
	jsonw_string_field(w, "data_b64", (const char *)enc);
	return r;
}

/*
 * A process inside a supervised session drives no run: not with input,
 * and not with a signal (sent as root, past the session's Landlock signal
 * scope) or a poll (which moves the reading point of the run's caller)
 * either. Said on c (true) when it is one.
 */
static bool refused_in_session(struct eg_procs *ps, struct ctl_conn *c, const char *op)
{
	if (!ps->o.in_session || !ps->o.in_session(ps->o.arg, c))
		return false;
	ctl_reply_err(c, "%s: a process inside a supervised session cannot drive other processes", op);
	return true;
}

static int op_poll(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct proc *p = refused_in_session(arg, c, "poll") ? NULL : proc_find(arg, c, req);
	struct sbuf b = {};
	struct jsonw w;
	uint64_t got, skipped = 0;

	if (!p)
		return 0;
	if (p->out_fd >= 0 && !proc_out_drain(p, 4))
		proc_out_close(p);
	if (p->poll_off < plog_first(&p->log)) {
		/* more came since the last poll than the log keeps */
		skipped = plog_first(&p->log) - p->poll_off;
		p->poll_off = plog_first(&p->log);
	}
	ctl_reply_open(&w, &b);
	jsonw_string_field(&w, "id", p->id);
	proc_status_json(&w, p);
	jsonw_uint_field(&w, "offset", p->poll_off);
	jsonw_uint_field(&w, "skipped", skipped);
	got = put_chunk(&w, p, p->poll_off, CHUNK_MAX);
	p->poll_off += got;
	jsonw_uint_field(&w, "next_offset", p->poll_off);
	jsonw_bool_field(&w, "more", p->poll_off < p->log.size);
	proc_log_counts_json(&w, p);
	ctl_reply_send(c, &w, &b);
	return 0;
}

static int op_log(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct proc *p = refused_in_session(arg, c, "log") ? NULL : proc_find(arg, c, req);
	int64_t tail = -1, off = 0, max = CHUNK_MAX;
	struct sbuf b = {};
	struct jsonw w;
	char err[256];
	uint64_t got;

	if (!p)
		return 0;
	if (ctl_get_int(req, "tail", false, 0, 1000000, &tail, err, sizeof(err)) == -EINVAL ||
	    ctl_get_int(req, "offset", false, 0, INT64_MAX, &off, err, sizeof(err)) == -EINVAL ||
	    ctl_get_int(req, "max", false, 1, CHUNK_MAX, &max, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "log: %s", err);
		return 0;
	}
	if (!p->log.path[0]) {
		ctl_reply_err(c, "log: %s ran in the foreground: its output went to its caller", p->id);
		return 0;
	}
	if (p->out_fd >= 0 && !proc_out_drain(p, 4))
		proc_out_close(p);
	if (tail >= 0) {
		off = plog_tail_offset(&p->log, tail, 2 * (uint64_t)PROCS_LOG_MAX);
		if (off < 0) {
			ctl_reply_err(c, "log: reading %s: %s", p->log.path, strerror((int)-off));
			return 0;
		}
	}
	/* bytes the rotation dropped: the answer starts at the first one kept */
	if ((uint64_t)off < plog_first(&p->log))
		off = plog_first(&p->log);
	ctl_reply_open(&w, &b);
	jsonw_string_field(&w, "id", p->id);
	jsonw_uint_field(&w, "size", p->log.size);
	jsonw_uint_field(&w, "first_offset", plog_first(&p->log));
	jsonw_uint_field(&w, "offset", off);
	got = put_chunk(&w, p, off, max);
	jsonw_uint_field(&w, "next_offset", off + got);
	jsonw_bool_field(&w, "running", !p->exited);
	ctl_reply_send(c, &w, &b);
	return 0;
}

static int write_in(struct ctl_conn *c, struct proc *p, const char *data, size_t n, const char *verb)
{
	size_t done = 0;

	if (p->in_fd < 0) {
		ctl_reply_err(c, "%s: %s has no input to write to (%s)", verb, p->id,
			      p->background ? "closed" : "it reads its caller's stdin");
		return 0;
	}
	while (done < n) {
		ssize_t r = write(p->in_fd, data + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ctl_reply_err(c, "%s: %s: %zu of %zu bytes written: %s", verb, p->id, done, n,
				      errno == EAGAIN ? "its input is full (it does not read)" : strerror(errno));
			return 0;
		}
		done += r;
	}
	return 1;
}

static int op_write(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_procs *ps = arg;
	struct proc *p;
	const char *data = NULL;
	bool eof = false;
	char err[256];

	if (refused_in_session(ps, c, "write"))
		return 0;
	if (!(p = proc_find(ps, c, req)))
		return 0;
	if (ctl_get_str(req, "data", false, 128 * 1024, &data, err, sizeof(err)) == -EINVAL ||
	    ctl_get_bool(req, "eof", &eof, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "write: %s", err);
		return 0;
	}
	if (data && *data && !write_in(c, p, data, strlen(data), "write"))
		return 0;
	if (eof && p->in_fd >= 0) {
		if (p->pty) {
			if (!write_in(c, p, "\004", 1, "write"))
				return 0;
		} else {
			close(p->in_fd);
			p->in_fd = -1;
		}
	}
	ctl_reply_ok(c, NULL);
	return 0;
}

static int op_send_keys(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_procs *ps = arg;
	const char **keys = NULL;
	struct sbuf b = {};
	struct proc *p;
	size_t n = 0, i;
	char err[256];

	if (refused_in_session(ps, c, "send-keys"))
		return 0;
	if (!(p = proc_find(ps, c, req)))
		return 0;
	if (ctl_get_strv(req, "keys", true, 1024, 4096, &keys, &n, err, sizeof(err))) {
		ctl_reply_err(c, "send-keys: %s", err);
		return 0;
	}
	for (i = 0; i < n; i++)
		eg_key_encode(keys[i], &b);
	free(keys);
	if (b.oom)
		ctl_reply_err(c, "send-keys: out of memory");
	else if (!b.len || write_in(c, p, b.data, b.len, "send-keys"))
		ctl_reply_ok(c, NULL);
	sbuf_free(&b);
	return 0;
}

static int op_kill(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct proc *p = refused_in_session(arg, c, "kill") ? NULL : proc_find(arg, c, req);
	const char *s = NULL;
	char err[256], name[16], extra[64];
	int sig = SIGTERM, e;

	if (!p)
		return 0;
	if (ctl_get_str(req, "signal", false, 16, &s, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "kill: %s", err);
		return 0;
	}
	if (s && (sig = eg_signal_parse(s)) < 0) {
		ctl_reply_err(c, "kill: unknown signal %s", s);
		return 0;
	}
	if (!proc_alive(p)) {
		ctl_reply_err(c, "kill: %s has exited already (and all it started too)", p->id);
		return 0;
	}
	/* an exited first process: what it left behind in its cgroup and group */
	e = proc_signal(p, sig);
	if (e) {
		ctl_reply_err(c, "kill: %s: %s", p->id, strerror(-e));
		return 0;
	}
	snprintf(extra, sizeof(extra), ",\"signal\":\"%s\"", eg_signal_name(sig, name, sizeof(name)));
	ctl_reply_ok(c, extra);
	return 0;
}

/*
 * A caller that lost its connection (the daemon restarted: SIGUSR2) takes
 * its place again: the exit line comes on this connection, and hanging up
 * is what hanging up on a foreground run is (its group gets SIGTERM).
 */
static int op_wait(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_procs *ps = arg;
	struct proc *p;
	char extra[64];

	if (refused_in_session(ps, c, "wait"))
		return 0;
	if (!(p = proc_find(ps, c, req)))
		return 0;
	if (p->fg) {
		ctl_reply_err(c, "wait: %s has a caller waiting already", p->id);
		return 0;
	}
	snprintf(extra, sizeof(extra), ",\"id\":\"%s\"", p->id);
	ctl_reply_ok(c, extra);
	if (p->exited) {
		proc_send_exit_line(c, p);
		return 0;
	}
	p->fg = c;
	ctl_hold(c, proc_on_fg_close, p);
	return 0;
}

int procs_ops_register(struct eg_procs *ps)
{
	struct ctl_server *ctl = ps->o.ctl;
	int err;

	err = ctl_register(ctl, "run", CTL_ANYONE, procs_op_run, ps);
	if (!err)
		err = ctl_register(ctl, "ps", CTL_ANYONE, op_ps, ps);
	if (!err)
		err = ctl_register(ctl, "poll", CTL_ANYONE, op_poll, ps);
	if (!err)
		err = ctl_register(ctl, "log", CTL_ANYONE, op_log, ps);
	if (!err)
		err = ctl_register(ctl, "write", CTL_ANYONE, op_write, ps);
	if (!err)
		err = ctl_register(ctl, "send_keys", CTL_ANYONE, op_send_keys, ps);
	if (!err)
		err = ctl_register(ctl, "kill", CTL_ANYONE, op_kill, ps);
	if (!err)
		err = ctl_register(ctl, "wait", CTL_ANYONE, op_wait, ps);
	return err;
}
