// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The daemon as a host service, around the record path of daemon.c: what
 * the volume filters may never hide, the failed execs the collapser held
 * (events/collapse.c), the start record's facts about failed execs,
 * filters and metrics, the record that starts a rotated file, and a
 * rotation that failed.
 */
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "daemon/daemon_int.h"
#include "events/meta.h"
#include "util/jsonw.h"
#include "util/log.h"
#include "util/version.h"

/* What no filter may hide: the kernel killed or refused it, or the policy refused or asked. */
bool service_must_show(const struct eg_record *r, const struct eg_annotation *a)
{
	if (r->h.flags & EG_F_KILLED)
		return true;
	if (a && a->action && (!strcmp(a->action, "killed") || !strcmp(a->action, "blocked")))
		return true;
	return a && a->decision && (!strcmp(a->decision, "deny") || !strcmp(a->decision, "approval") ||
				    !strcmp(a->decision, "error"));
}

/* A failed exec the collapser held, written after all. */
void service_collapse_out(void *arg, const char *line, size_t len)
{
	struct daemon *d = arg;

	sbuf_put(output_buf(d->out), line, len);
	output_end(d->out, EG_REC_EXEC_FAILED);
}

const char *daemon_exec_failed_mode(const struct daemon *d)
{
	switch (d->o.exec_failed) {
	case EXEC_FAILED_NONE: return "none";
	case EXEC_FAILED_COLLAPSE: return "collapse";
	default: return "all";
	}
}

static void strv(struct jsonw *w, const char *key, const char *const *v, size_t n)
{
	size_t i;

	jsonw_key(w, key);
	jsonw_start_array(w);
	for (i = 0; i < n; i++)
		jsonw_string(w, v[i]);
	jsonw_end_array(w);
}

/* Where failed execs come from, what is filtered out, where metrics go. */
void service_start_facts(struct daemon *d, struct jsonw *w)
{
	size_t i;

	jsonw_key(w, "exec_failed");
	jsonw_start_object(w);
	jsonw_string_field(w, "mode", daemon_exec_failed_mode(d));
	/*
	 * The exit tracepoints read a failed call's arguments from its
	 * registers. none: they build no record and stay for enforcement only
	 * (a refused kill at exec is retried there, a failed session exec's
	 * ticket is dropped).
	 */
	jsonw_string_field(w, "source", d->o.exec_failed == EXEC_FAILED_NONE ? NULL : d->mode.exec_failed_source);
	jsonw_key(w, "programs");
	jsonw_start_array(w);
	jsonw_string(w, "tracepoint/syscalls/sys_exit_execve");
	jsonw_string(w, "tracepoint/syscalls/sys_exit_execveat");
	jsonw_end_array(w);
	jsonw_end_object(w);
	jsonw_key(w, "filters");
	jsonw_start_object(w);
	jsonw_key(w, "uid");
	jsonw_start_array(w);
	for (i = 0; i < d->o.n_uids; i++)
		jsonw_uint(w, d->o.uids[i]);
	jsonw_end_array(w);
	strv(w, "exclude_comm", d->o.exclude_comm, d->o.n_exclude_comm);
	strv(w, "exclude_path", d->o.exclude_path, d->o.n_exclude_path);
	jsonw_end_object(w);
	jsonw_key(w, "metrics");
	jsonw_start_object(w);
	jsonw_string_field(w, "listen", d->o.metrics_listen);
	jsonw_string_field(w, "textfile", d->o.metrics_textfile);
	jsonw_end_object(w);
}

/* One line of a small file, without its newline; "" when unreadable. */
static void first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/*
 * What every output file's first record says of where it comes from: the
 * host, its boot, the policy in force (start, rotated and reopened records).
 */
void service_header(struct daemon *d, struct jsonw *w)
{
	service_host(d, w);
	jsonw_string_field(w, "policy_sha256", d->policy ? policy_sha256(d->policy) : NULL);
}

/*
 * In a pod the UTS namespace's name is the pod's: --hostname gives the
 * node's (the DaemonSet passes spec.nodeName), and the node's
 * /etc/machine-id is mounted where the daemon reads it.
 */
void service_host(const struct daemon *d, struct jsonw *w)
{
	char buf[256];

	if (d->o.hostname)
		snprintf(buf, sizeof(buf), "%s", d->o.hostname);
	else if (gethostname(buf, sizeof(buf)))
		buf[0] = '\0';
	buf[sizeof(buf) - 1] = '\0';
	jsonw_string_field(w, "hostname", buf);
	first_line("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	jsonw_string_field(w, "boot_id", buf[0] ? buf : NULL);
	first_line("/etc/machine-id", buf, sizeof(buf));
	jsonw_string_field(w, "machine_id", buf[0] ? buf : NULL);
}

/* A cut last line the output could not end (a full disk): said once an open, counted by the output. */
void service_check_cut_line(const struct eg_output *o)
{
	const char *e = output_cut_line_error(o);

	if (e)
		p_warn("%s", e);
}

/* SIGHUP (logrotate moved the file): the new file starts with a header too. */
void service_on_reopened(struct daemon *d)
{
	struct jsonw w;

	if (d->text) {
		emit_comment(d, "execgate %s (pid %d) reopened %s", EG_VERSION, (int)getpid(), output_path(d->out));
		return;
	}
	meta_open_daemon(&w, output_buf(d->out), "reopened");
	jsonw_int_field(&w, "pid", getpid());
	jsonw_string_field(&w, "version", EG_VERSION);
	jsonw_string_field(&w, "file", output_path(d->out));
	jsonw_bool_field(&w, "ended_cut_line", output_ended_cut_line(d->out));
	service_header(d, &w);
	meta_close(&w, d->out);
}

/* The first record of a file --output-max-size started: which one it continues. */
void service_on_rotated(struct eg_output *o, const char *prev, void *arg)
{
	struct daemon *d = arg;
	const struct eg_output_stats *os = output_stats(o);
	char gz[NAME_MAX + 8];
	struct jsonw w;

	service_check_cut_line(o);
	if (prev)
		snprintf(gz, sizeof(gz), "%s.gz", prev);
	if (d->text) {
		emit_comment(d, "execgate %s (pid %d) continues in a new file after rotation %" PRIu64 "%s%s",
			     EG_VERSION, (int)getpid(), os->rotations, prev ? "; the previous one is " : "",
			     prev ? gz : "");
		return;
	}
	meta_open_daemon(&w, output_buf(o), "rotated");
	jsonw_int_field(&w, "pid", getpid());
	jsonw_string_field(&w, "file", output_path(o));
	/* the previous file, by the name this rotation gave it (the time of the rotation) */
	jsonw_string_field(&w, "continues", prev ? gz : NULL);
	/* a file replaced under the daemon is opened as at a start: it may have ended in a cut line */
	jsonw_bool_field(&w, "ended_cut_line", output_ended_cut_line(o));
	jsonw_uint_field(&w, "rotations", os->rotations);
	jsonw_uint_field(&w, "exec", os->written[EG_REC_EXEC]);
	jsonw_uint_field(&w, "exec_failed", os->written[EG_REC_EXEC_FAILED]);
	jsonw_uint_field(&w, "output_dropped", output_dropped_total(o));
	service_header(d, &w);
	meta_close(&w, o);
}

/* Failed rotations are said once a run; the output counts every failure. */
void service_check_rotation(struct daemon *d)
{
	uint64_t streak;
	const char *e = output_rotation_error(d->out, &streak);

	if (e && streak != d->rotation_streak) {
		p_warn("%s", e);
		d->rotation_streak = streak;
	} else if (!e && d->rotation_streak && !d->rotation_fixed) {
		p_info("%s rotates again", output_path(d->out));
	}
	d->rotation_fixed = !e;
}

/* ---- text mode ---------------------------------------------------------- */

/* Text mode shows daemon and lost records as comment lines. */
void emit_comment(struct daemon *d, const char *fmt, ...)
{
	struct sbuf *b = output_buf(d->out);
	char line[1024];
	va_list ap;

	const char *p = line;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* a terminal never wraps: a long comment goes on as more comment lines */
	while (d->fc.width > 8 && strlen(p) + 2 > d->fc.width) {
		n = d->fc.width - (p == line ? 2 : 4);
		while (n > 8 && p[n] != ' ')
			n--;
		if (p[n] != ' ')
			n = d->fc.width - (p == line ? 2 : 4);
		sbuf_printf(b, "%s%.*s\n", p == line ? "# " : "#   ", (int)n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
	sbuf_printf(b, "%s%s\n", p == line ? "# " : "#   ", p);
	output_end(d->out, EG_REC_META);
}
