// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate daemon: load the tracer, pin its maps, turn ring-buffer records
 * into JSON lines (or a table on a terminal), report every lost record,
 * and serve the control socket. Everything runs in one event loop
 * (daemon/loop.c): the ring buffer, the flush timer, signals and the
 * control socket's connections.
 *
 * Batching is the whole performance story (DESIGN.md, "Performance notes"):
 * the BPF side submits without waking us, we drain on a short timer or when
 * the ring passes a fill threshold, and write the output in large chunks.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ctl/server.h"
#include "session/boundary.h"
#include "session/session.h"
#include "procs/procs.h"
#include "daemon/daemon_int.h"
#include "daemon/handoff.h"
#include "daemon/httpd.h"
#include "daemon/metrics.h"
#include "daemon/notify.h"
#include "events/lineage.h"
#include "events/meta.h"
#include "events/sinks.h"
#include "trace/containers.h"
#include "execgate.h"
#include "execgate.skel.h"
#include "trace/cgroups.h"
#include "util/fileid.h"
#include "trace/progstats.h"
#include "trace/running.h"
#include "trace/tracer.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/mounts.h"
#include "util/version.h"

#define DRAIN_INTERVAL_MS	100
#define FLUSH_BYTES		(1 << 20)
#define BATCH_RECORDS		4096		/* per drain round: signals and peers get their turn */
/*
 * Per part of a round while sessions run: between parts the loop looks at
 * its fds without waiting, so an exec stopped in a session's seccomp
 * notification waits for at most this many records, not for the whole
 * batch of a 100 ms drain interval (hundreds on a busy host). With no
 * session nobody waits, and a part is a whole round (BATCH_RECORDS).
 */
#define ROUND_RECORDS		32
#define STOP_DRAIN_MS		5000		/* the stop drain gives up formatting after this */

/*
 * The inode of one of the host's namespaces: what events from the host
 * carry. PID 1's, as a service manager's sandbox (ProtectSystem=, PrivateTmp=)
 * gives the daemon a mount namespace of its own; ours where PID 1's is hidden.
 */
static uint32_t ns_inode(const char *kind)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/1/ns/%s", kind);
	if (stat(path, &st))
		snprintf(path, sizeof(path), "/proc/self/ns/%s", kind);
	return stat(path, &st) ? 0 : (uint32_t)st.st_ino;
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

/* ---- policy ------------------------------------------------------------- */

/* What happened, while no enforcement layer covers the task. */
static const char *audit_action(enum eg_decision dec)
{
	switch (dec) {
	case EG_DECISION_DENY: return "would-block";
	case EG_DECISION_APPROVAL: return "would-ask";
	case EG_DECISION_AUDIT: return "audited";
	case EG_DECISION_ERROR: return "error";
	default: return "allowed";
	}
}

static bool annotate(struct daemon *d, const struct eg_record *r, struct eg_annotation *a)
{
	const struct eg_policy *p = d->policy;
	struct eg_verdict v;

	if (!p)
		return false;
	/* the policy the kernel judged it by, when it did: a reload since changes nothing here */
	if (d->k.on && r->h.klayer && kernel_policy_of(d, r->h.kseq))
		p = kernel_policy_of(d, r->h.kseq);
	judge_record(&d->judge, p, r, cgroup_cache_path(d->cgroups, r->h.cgroup_id), false, &v);
	/*
	 * Nothing ran at a path that names no file: a PATH search's miss is no
	 * audited command (one `env setpriv` made ten audit records). A deny
	 * or an approval of the attempt is still said.
	 */
	if (r->h.type == EG_EVENT_EXEC_FAILED && (r->h.err == -ENOENT || r->h.err == -ENOTDIR) &&
	    v.decision == EG_DECISION_AUDIT)
		return false;
	d->st.decisions[v.decision < EG_DECISION__COUNT ? v.decision : EG_DECISION_ERROR]++;
	if (r->h.context) {
		d->st.ctx_execs[r->h.context & 31]++;
		if (v.decision == EG_DECISION_DENY || (r->h.flags & EG_F_KILLED))
			d->st.ctx_denied[r->h.context & 31]++;
	}
	*a = (struct eg_annotation){};
	a->programs = d->judge.progs;
	a->n_programs = d->judge.n_progs;
	if (r->h.context) {
		struct eg_context_info ci;

		if (!policy_context_info(p, r->h.context, &ci))
			a->context = ci.name;
	}
	a->decision = eg_decision_name(v.decision);
	a->rule = v.rule;
	a->message = v.message;
	a->action = audit_action(v.decision);
	a->reason = v.error;
	daemon_label(d, v.rule_index, a);
	return true;
}

static void print_diags(const struct eg_diags *diags, bool errors_only)
{
	char line[1024];
	size_t i;

	for (i = 0; i < diags->n; i++) {
		if (errors_only && diags->v[i].warning)
			continue;
		eg_diag_format(&diags->v[i], line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
}

static void emit_policy(struct daemon *d, bool reload)
{
	struct jsonw w;

	if (d->text) {
		emit_comment(d, "policy %s%s: %zu rules, sha256 %s", d->o.policy_path,
			     reload ? " reloaded" : "", policy_rule_count(d->policy),
			     policy_sha256(d->policy));
		return;
	}
	meta_open_daemon(&w, output_buf(d->out), "policy");
	jsonw_string_field(&w, "path", d->o.policy_path);
	jsonw_string_field(&w, "sha256", policy_sha256(d->policy));
	jsonw_uint_field(&w, "rules", policy_rule_count(d->policy));
	jsonw_bool_field(&w, "reload", reload);
	meta_close(&w, d->out);
}

/*
 * The new policy replaces the old only if it loads. Returns 0 or the load
 * error; diags (may be NULL) receives the errors.
 */
int daemon_reload_policy(struct daemon *d, struct eg_diags *diags)
{
	struct eg_diags local = {};
	struct eg_diags *dg = diags ? diags : &local;
	struct eg_policy *p = NULL;
	uint32_t old_seq;
	char line[1024];
	struct jsonw w;
	size_t i;
	int err;

	if (!d->o.policy_path)
		return -ENOENT;
	old_seq = d->k.seq;
	notify_reloading();
	err = policy_load_file(d->o.policy_path, &p, dg);
	if (err) {
		d->st.policy_reload_failures++;
		p_warn("policy reload failed, keeping the previous policy:");
		print_diags(dg, true);
		if (d->text) {
			emit_comment(d, "policy reload failed; the previous policy stays in force");
		} else {
			meta_open_daemon(&w, output_buf(d->out), "policy_error");
			jsonw_string_field(&w, "path", d->o.policy_path);
			jsonw_string_field(&w, "kept_sha256", policy_sha256(d->policy));
			jsonw_key(&w, "errors");
			jsonw_start_array(&w);
			for (i = 0; i < dg->n; i++) {
				if (dg->v[i].warning)
					continue;
				eg_diag_format(&dg->v[i], line, sizeof(line));
				jsonw_string(&w, line);
			}
			jsonw_end_array(&w);
			meta_close(&w, d->out);
		}
	} else if ((d->k.on || d->k.ctx_only || policy_context_count(p)) && (err = kernel_reload(d, p))) {
		/* the kernel cannot hold it: nothing changes, anywhere */
		d->st.policy_reload_failures++;
		policy_free(p);
		p_warn("policy reload refused: the kernel rules cannot take it (see above); the previous "
		       "policy stays in force");
		eg_diags_add_error(dg, d->o.policy_path,
				  err == -EPERM ? "--enforce: the kernel cannot hold every deny rule "
						  "(see the daemon's log, or use --allow-partial)"
						: "--enforce: the kernel rules could not be loaded");
		if (!d->text) {
			meta_open_daemon(&w, output_buf(d->out), "policy_error");
			jsonw_string_field(&w, "path", d->o.policy_path);
			jsonw_string_field(&w, "kept_sha256", policy_sha256(d->policy));
			jsonw_string_field(&w, "error", "the kernel cannot hold the new policy");
			meta_close(&w, d->out);
		}
	} else {
		if (d->k.on)
			/* records judged by the previous rules are annotated with theirs */
			kernel_keep_policy(d, d->policy, old_seq);
		else
			policy_free(d->policy);
		d->policy = p;
		d->st.policy_reloads++;
		emit_policy(d, true);
	}
	output_flush(d->out);
	eg_diags_free(&local);
	notify_send("READY=1");
	return err;
}

/* ---- records ------------------------------------------------------------ */

static void format_record(struct daemon *d, struct sbuf *b, const struct eg_record *r,
			  const struct eg_annotation *a)
{
	if (d->text)
		format_record_text(b, r, &d->fc, a);
	else
		format_record_json(b, r, &d->fc, a);
}

/*
 * EXECGATE_STAGE_STATS=1: the CPU time of each stage of the record path,
 * summed and printed at exit (tools/bench/stages.py reads it). Off, it
 * costs one test of a global per stage.
 */
enum { STAGE_DECODE, STAGE_JUDGE, STAGE_FORMAT, STAGE_WRITE, STAGES };
static const char *const stage_names[STAGES] = { "decode", "judge", "format", "write" };
static bool stage_stats;
static uint64_t stage_ns[STAGES], stage_n[STAGES];

static uint64_t stage_clock(void)
{
	struct timespec ts;

	if (!stage_stats)
		return 0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void stage_add(int stage, uint64_t *t)
{
	uint64_t now;

	if (!stage_stats)
		return;
	now = stage_clock();
	stage_ns[stage] += now - *t;
	stage_n[stage]++;
	*t = now;
}

static int flush_timed(struct daemon *d)
{
	uint64_t t = stage_clock();
	int rc = output_flush(d->out);

	stage_add(STAGE_WRITE, &t);
	return rc;
}

static void stage_report(void)
{
	int i;

	if (!stage_stats)
		return;
	for (i = 0; i < STAGES; i++)
		fprintf(stderr, "stage %s: %" PRIu64 " ns, %" PRIu64 " records\n",
			stage_names[i], stage_ns[i], stage_n[i]);
}

/*
 * A loader's exec and the kernel's record of the program it mapped: what
 * the kernel did to the program (its verdict, a kill) joins the exec's.
 */
static void annotate_loaded(struct daemon *d, const struct eg_record *l, struct eg_annotation *a)
{
	struct eg_annotation k = {};

	if (l->h.flags & EG_F_KILLED) {
		a->action = "killed";
		a->reason = eg_reason_name(l->h.reason);
		if (!a->decision || !strcmp(a->decision, "allow"))
			a->decision = "deny";
		if (l->h.session)
			a->layer = "seccomp";
	}
	if (!l->h.klayer)
		return;
	kernel_annotate(d, l, &k);
	if (!a->kernel_layer || (k.kernel_decision && !strcmp(k.kernel_decision, "deny"))) {
		a->kernel_layer = k.kernel_layer;
		a->kernel_decision = k.kernel_decision;
		a->kernel_rule = k.kernel_rule;
	}
	if (k.layer)
		a->layer = k.layer;
	if (k.action)
		a->action = k.action;
	if (k.reason)
		a->reason = k.reason;
}

static void process_record(struct daemon *d, struct eg_record *rp);

/*
 * The kernel followed a --cgroup scope: its cgroup was removed, or made
 * again at the same path (a restarted container): said, and the
 * per-cgroup BPF LSM link attached again.
 */
static void scope_changed(struct daemon *d, const struct eg_event *h)
{
	size_t i = (size_t)h->dirfd;
	bool back = h->at_flags == EG_SCOPE_BACK;
	struct jsonw w;

	if (i >= d->o.n_cgroups)
		return;
	d->scope_changes++;
	d->cg_gone[i] = !back;
	if (back) {
		d->cg_ids[i] = h->cgroup_id;
		if (d->k.lsm_cgroup && kernel_scope_back(d, i))
			p_warn("--cgroup %s: made again, but the BPF LSM cannot be attached to it: the kill at "
			       "exec enforces there", d->o.cgroups[i]);
	}
	if (d->text) {
		emit_comment(d, "scope %s: %s", d->o.cgroups[i], back ? "its cgroup is back (made again)"
										 : "its cgroup is gone");
		return;
	}
	meta_open_daemon(&w, output_buf(d->out), "scope");
	jsonw_string_field(&w, "cgroup", d->o.cgroups[i]);
	jsonw_string_field(&w, "path", d->cg_paths[i]);
	jsonw_string_field(&w, "state", back ? "back" : "gone");
	jsonw_uint_field(&w, "cgroup_id", h->cgroup_id);
	meta_close(&w, d->out);
}

/* Held loader execs whose time is up (or all, with force) go out without their program's record. */
static void hold_expire(struct daemon *d, bool force)
{
	struct eg_record r;
	size_t size;
	void *data;

	while (d->hold && (data = hold_expired(d->hold, eg_mono_ms(), force, &size))) {
		if (!record_decode(&d->dec_held, data, size, &r))
			process_record(d, &r);
		else
			d->st.malformed++;
		free(data);
	}
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct daemon *d = ctx;
	struct eg_record r, held;
	uint64_t t = stage_clock();
	size_t held_size;
	void *held_data;

	if (size >= sizeof(uint32_t) && *(const uint32_t *)data == EG_EVENT_EXIT) {
		daemon_on_exit(d, data, size);
		if (output_pending(d->out) >= FLUSH_BYTES)
			flush_timed(d);
		goto next;
	}
	if (record_decode(&d->dec, data, size, &r)) {
		d->st.malformed++;
		return 0;
	}
	stage_add(STAGE_DECODE, &t);
	if (r.h.type == EG_EVENT_SCOPE) {
		scope_changed(d, &r.h);
		goto next;
	}
	/* a loader run as the command: wait (briefly) for the program it maps */
	if (r.h.type == EG_EVENT_EXEC && (r.h.flags & EG_F_LOADER) && !(r.h.flags & EG_F_KILLED) &&
	    r.h.loader_arg && d->hold &&
	    !hold_put(d->hold, r.h.pid, r.h.ktime_ns, data, size, eg_mono_ms()))
		goto next;
	if (r.h.type == EG_EVENT_LOADED && d->hold &&
	    (held_data = hold_take(d->hold, r.h.pid, r.h.ktime_ns, &held_size))) {
		if (!record_decode(&d->dec_held, held_data, held_size, &held)) {
			held.loaded = &r;
			process_record(d, &held);
		} else {
			d->st.malformed++;
		}
		free(held_data);
		goto next;
	}
	process_record(d, &r);
next:
	/* a bounded round: the rest waits for the next one (the loop runs between) */
	if (++d->batch_records >= (d->round_limit ? d->round_limit : BATCH_RECORDS))
		return -EAGAIN;
	return 0;
}

/* One record (and a held loader exec's program with it) to the output. */
static void process_record(struct daemon *d, struct eg_record *rp)
{
	struct eg_annotation a, *ap;
	struct sbuf *b = output_buf(d->out);
	struct eg_path_search ps;
	enum eg_filter_cause cause;
	struct eg_record r = *rp;
	uint64_t t = stage_clock();

	if (r.h.session && d->sessions && sessions_annotate(d->sessions, &r.h, &a))
		ap = &a;
	else
		ap = annotate(d, &r, &a) ? &a : NULL;
	if (r.h.flags & EG_F_KILLED) {
		if (!ap) {
			memset(&a, 0, sizeof(a));
			a.decision = "deny";
			ap = &a;
		}
		ap->action = "killed";
		ap->reason = eg_reason_name(r.h.reason);
		if (r.h.session)
			ap->layer = "seccomp";
	}
	if (r.h.klayer) {
		if (!ap) {
			memset(&a, 0, sizeof(a));
			ap = &a;
		}
		kernel_annotate(d, &r, ap);
	}
	if (r.loaded) {
		if (!ap) {
			memset(&a, 0, sizeof(a));
			ap = &a;
		}
		annotate_loaded(d, r.loaded, ap);
	}
	stage_add(STAGE_JUDGE, &t);
	if (r.h.type == EG_EVENT_EXEC) {
		struct eg_str prog = record_program(&r);

		lineage_add(d->lineage, r.h.pid, r.h.ktime_ns, prog.p, prog.len, r.h.comm, ap ? ap->severity : 0);
	}
	/* filters only thin the log: the exec was traced, judged and enforced all the same */
	if (filter_active(&d->filter) && !service_must_show(&r, ap) &&
	    (cause = filter_match(&d->filter, &r)) != EG_FILTER_NONE) {
		d->filter.n[cause]++;
		if (d->collapse && r.h.type == EG_EVENT_EXEC)
			d->filter.n[cause] += collapse_discard(d->collapse, &r);
		return;
	}
	if (d->collapse && r.h.type == EG_EVENT_EXEC_FAILED) {
		sbuf_reset(&d->held_line);
		format_record(d, &d->held_line, &r, ap);
		if (!d->held_line.oom &&
		    collapse_failed(d->collapse, &r, d->held_line.data, d->held_line.len,
				    service_must_show(&r, ap)))
			return;
		if (d->held_line.oom)
			b->oom = true;	/* counted as dropped at the flush */
		else
			sbuf_put(b, d->held_line.data, d->held_line.len);
		output_end(d->out, EG_REC_EXEC_FAILED);
		goto written;
	}
	if (d->collapse && r.h.type == EG_EVENT_EXEC && collapse_exec(d->collapse, &r, &ps))
		d->fc.path_search = &ps;
	format_record(d, b, &r, ap);
	d->fc.path_search = NULL;
	output_end_sev(d->out, r.h.type == EG_EVENT_EXEC_FAILED ? EG_REC_EXEC_FAILED : EG_REC_EXEC,
		       ap ? ap->severity : 0);
	stage_add(STAGE_FORMAT, &t);
written:
	if (output_pending(d->out) >= FLUSH_BYTES)
		flush_timed(d);
}

void daemon_read_counters(struct daemon *d, struct eg_counters *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (d->skel)
		tracer_read_counters(bpf_map__fd(d->skel->maps.counters), ret);
}

/* BPF recursion misses of our programs (read at most once a second unless forced). */
static uint64_t recursion_misses(struct daemon *d, bool force)
{
	static uint64_t last_ms, last;
	struct eg_prog_stat ps[EG_PROGS_MAX];
	uint64_t now = eg_mono_ms();

	if (force || !last_ms || now - last_ms >= 1000) {
		last = prog_stats_misses(ps, tracer_prog_stats(d->skel, ps, EG_PROGS_MAX));
		last_ms = now;
	}
	return last;
}

/* A "lost" record for whatever was lost since the last one. */
static void report_lost_now(struct daemon *d, bool force)
{
	struct eg_counters c;
	uint64_t lost, dropped, rec, sinks;
	struct jsonw w;

	daemon_read_counters(d, &c);
	lost = c.lost_exec + c.lost_exec_failed + c.lost_other + c.lost_exit;
	dropped = output_dropped_total(d->out);
	sinks = daemon_sinks_dropped(d);
	rec = recursion_misses(d, force);
	/* a sink with no listener drops every record: said every 10 s, not at every drain */
	if (lost <= d->lost_reported && dropped <= d->dropped_reported && rec <= d->recursion_reported &&
	    (sinks <= d->sinks_reported || (!force && eg_mono_ms() - d->sinks_report_ms < 10000)))
		return;
	d->sinks_report_ms = eg_mono_ms();
	if (d->text) {
		emit_comment(d, "lost %" PRIu64 " records (ring buffer full), %" PRIu64 " in all; "
			     "%" PRIu64 " not written (output errors); %" PRIu64 " BPF recursion misses",
			     lost - d->lost_reported, lost, dropped, rec);
	} else {
		meta_open(&w, output_buf(d->out), "lost");
		jsonw_uint_field(&w, "count", (lost - d->lost_reported) + (dropped - d->dropped_reported) +
				 (rec - d->recursion_reported) + (sinks - d->sinks_reported));
		jsonw_uint_field(&w, "total", lost + dropped + rec + sinks);
		jsonw_uint_field(&w, "exec", c.lost_exec);
		jsonw_uint_field(&w, "exec_failed", c.lost_exec_failed);
		jsonw_uint_field(&w, "other", c.lost_other);
		jsonw_uint_field(&w, "exit", c.lost_exit);
		jsonw_uint_field(&w, "output_dropped", dropped);
		jsonw_uint_field(&w, "recursion_misses", rec);
		if (d->syslog)
			jsonw_uint_field(&w, "syslog_dropped", sink_stats(d->syslog)->dropped);
		if (d->journal)
			jsonw_uint_field(&w, "journal_dropped", sink_stats(d->journal)->dropped);
		meta_close(&w, d->out);
	}
	d->lost_reported = lost;
	d->recursion_reported = rec;
	d->sinks_reported = sinks;
	/*
	 * Records dropped by a failing disk are reported once the disk takes
	 * writes again; until then this record may be dropped too, and the
	 * next one repeats the totals.
	 */
	if (!output_flush(d->out))
		d->dropped_reported = dropped;
}

static void report_lost(struct daemon *d)
{
	report_lost_now(d, false);
}

static void drain_more(void *arg);

/*
 * One bounded part of a round while running (producers never starve the
 * loop); the rest goes on once the loop has served what is ready.
 */
static void drain(struct daemon *d)
{
	uint64_t now;
	int rc;

	d->fc.boot_to_real = clock_boot_to_real();
	d->batch_records = 0;
	d->round_limit = loop_has_urgent(d->loop) ? ROUND_RECORDS : BATCH_RECORDS;
	rc = ring_buffer__consume(d->rb);
	d->round_limit = 0;
	if (rc == -EAGAIN) {
		/*
		 * More is queued: the loop serves what is ready, then the next
		 * part. The loss report and the flush wait for the round's end
		 * or a drain interval (on_record flushes a full buffer itself):
		 * two system calls per part of 32 records would be most of what
		 * a record costs, and an endless storm still gets its reports.
		 */
		loop_set_pending(d->loop, drain_more, d);
	}
	now = eg_mono_ms();
	if (rc == -EAGAIN && now - d->last_report_ms < DRAIN_INTERVAL_MS)
		return;
	d->last_report_ms = now;
	/* PATH searches that no exec ended in time are written as they were */
	if (d->collapse)
		collapse_expire(d->collapse, eg_boot_ns());
	hold_expire(d, false);
	report_lost(d);
	flush_timed(d);
	service_check_rotation(d);
}

static void drain_more(void *arg)
{
	drain(arg);
}

static void on_ring(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	(void)w;
	(void)fd;
	(void)events;
	drain(arg);
}

static void on_flush_timer(struct eg_watch *w, uint64_t n, void *arg)
{
	(void)w;
	(void)n;
	drain(arg);
}

/* ---- daemon records ----------------------------------------------------- */

/* One line of a small file, without its newline; "" when unreadable. */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* Which host this is, and which cgroup hierarchy cgroup paths come from. */
static void host_facts(struct jsonw *w)
{
	char buf[256], mnt[PATH_MAX];

	if (gethostname(buf, sizeof(buf)))
		buf[0] = '\0';
	buf[sizeof(buf) - 1] = '\0';
	jsonw_string_field(w, "hostname", buf);
	read_line("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	jsonw_string_field(w, "boot_id", buf[0] ? buf : NULL);
	read_line("/etc/machine-id", buf, sizeof(buf));
	jsonw_string_field(w, "machine_id", buf[0] ? buf : NULL);
	jsonw_key(w, "cgroup_hierarchy");
	jsonw_start_object(w);
	jsonw_string_field(w, "version", "v2");
	jsonw_string_field(w, "mount", cgroup2_mount(mnt, sizeof(mnt)) ? NULL : mnt);
	/* a hybrid host (v1 controllers beside a v2 tree at .../unified) */
	jsonw_bool_field(w, "hybrid", !access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK));
	jsonw_end_object(w);
}

/* What the human line says: never more than what is in force. */
static const char *enforcement_text(const struct daemon *d)
{
	static char buf[256];

	if (!d->k.on)
		return d->sessions ? "supervised sessions (seccomp); host-wide: none (audit only)"
				   : "none (audit only)";
	snprintf(buf, sizeof(buf), "%shost-wide: %s, %zu kernel rules%s%s",
		 d->sessions ? "supervised sessions (seccomp); " : "",
		 d->k.layer, d->k.prog->n_rules - d->k.prog->conf.n_ident, d->k.prog->partial ? " (partial)" : "",
		 d->k.lsm_cgroup ? " per --cgroup" : (d->o.n_cgroups ? " in the --cgroup subtrees" : ""));
	return buf;
}

void daemon_scopes_json(struct daemon *d, struct jsonw *w)
{
	size_t i;

	jsonw_key(w, "scopes");
	jsonw_start_array(w);
	for (i = 0; i < d->o.n_cgroups; i++) {
		jsonw_start_object(w);
		jsonw_string_field(w, "cgroup", d->o.cgroups[i]);
		jsonw_string_field(w, "path", d->cg_paths[i]);
		jsonw_string_field(w, "state", d->cg_gone[i] ? "gone" : "present");
		jsonw_uint_field(w, "cgroup_id", d->cg_ids[i]);
		jsonw_end_object(w);
	}
	jsonw_end_array(w);
}

static void emit_start(struct daemon *d)
{
	struct jsonw w;
	int i;

	if (d->text) {
		emit_comment(d, "execgate %s started: tracer %s; enforcement: %s; "
			     "maps in %s; control socket %s; failed execs: %s", EG_VERSION, d->mode.tracer,
			     enforcement_text(d), d->paths.pin, d->paths.sock, daemon_exec_failed_mode(d));
		if (d->policy)
			emit_policy(d, false);
		format_text_header(output_buf(d->out), d->fc.width);
		output_end(d->out, EG_REC_META);
		return;
	}
	meta_open_daemon(&w, output_buf(d->out), "start");
	jsonw_string_field(&w, "version", EG_VERSION);
	jsonw_int_field(&w, "pid", getpid());
	jsonw_key(&w, "mode");
	jsonw_start_object(&w);
	jsonw_string_field(&w, "tracer", d->mode.tracer);
	jsonw_string_field(&w, "kernel_enforcement", d->mode.kernel_enforcement);
	jsonw_string_field(&w, "session_enforcement", d->mode.session_enforcement);
	jsonw_end_object(&w);
	/* the layers that enforce now; "available" is what probe found could */
	jsonw_key(&w, "enforcement");
	jsonw_start_array(&w);
	if (d->k.on)
		jsonw_string(&w, d->k.layer);
	if (d->sessions)
		jsonw_string(&w, "seccomp");
	jsonw_end_array(&w);
	kernel_start_record(d, &w);
	jsonw_key(&w, "available");
	jsonw_start_array(&w);
	for (i = 0; i < EG_FEAT__COUNT; i++)
		if (d->feats.r[i].available)
			jsonw_string(&w, eg_feature_name(i));
	jsonw_end_array(&w);
	jsonw_string_field(&w, "pin_path", d->paths.pin);
	jsonw_string_field(&w, "socket", d->paths.sock);
	jsonw_bool_field(&w, "tasks_reused", d->reuse.tasks);
	/* what /proc told the kernel about processes older than this daemon */
	jsonw_key(&w, "seeded");
	jsonw_start_object(&w);
	jsonw_uint_field(&w, "scanned", d->seeded.scanned);
	jsonw_uint_field(&w, "inferred", d->seeded.inferred);
	jsonw_uint_field(&w, "contexts", d->seeded.contexts);
	jsonw_uint_field(&w, "failed", d->seeded.failed);
	jsonw_end_object(&w);
	jsonw_bool_field(&w, "takeover", d->o.takeover_fd >= 0);
	host_facts(&w);
	jsonw_uint_field(&w, "max_argv_bytes", d->o.max_argv_bytes);
	jsonw_uint_field(&w, "ringbuf_size", d->o.ringbuf_size);
	jsonw_key(&w, "cgroup");
	if (d->o.n_cgroups)
		jsonw_string(&w, d->o.cgroups[0]);
	else
		jsonw_null(&w);
	jsonw_key(&w, "cgroups");
	jsonw_start_array(&w);
	for (i = 0; i < (int)d->o.n_cgroups; i++)
		jsonw_string(&w, d->o.cgroups[i]);
	jsonw_end_array(&w);
	daemon_scopes_json(d, &w);
	jsonw_string_field(&w, "policy", d->o.policy_path);
	jsonw_string_field(&w, "policy_sha256", d->policy ? policy_sha256(d->policy) : NULL);
	service_start_facts(d, &w);
	meta_close(&w, d->out);
	if (d->policy)
		emit_policy(d, false);
}

static void emit_stop(struct daemon *d)
{
	const struct eg_output_stats *os = output_stats(d->out);
	struct eg_counters c;
	struct jsonw w;

	daemon_read_counters(d, &c);
	if (d->text) {
		emit_comment(d, "execgate stopped: %" PRIu64 " exec, %" PRIu64 " exec_failed written, "
			     "%llu lost, %" PRIu64 " not written, %" PRIu64 " BPF recursion misses, "
			     "%" PRIu64 " filtered",
			     os->written[EG_REC_EXEC], os->written[EG_REC_EXEC_FAILED],
			     (unsigned long long)(c.lost_exec + c.lost_exec_failed + c.lost_other + c.lost_exit),
			     output_dropped_total(d->out), d->recursion_reported, filter_total(&d->filter));
		return;
	}
	meta_open_daemon(&w, output_buf(d->out), "stop");
	/* written: reached the file before this record was formatted */
	jsonw_uint_field(&w, "exec", os->written[EG_REC_EXEC]);
	jsonw_uint_field(&w, "exec_failed", os->written[EG_REC_EXEC_FAILED]);
	jsonw_uint_field(&w, "lost", c.lost_exec + c.lost_exec_failed + c.lost_other + c.lost_exit);
	jsonw_uint_field(&w, "exit", os->written[EG_REC_EXIT]);
	jsonw_uint_field(&w, "output_dropped", output_dropped_total(d->out));
	jsonw_uint_field(&w, "shutdown_dropped", d->st.shutdown_dropped);
	jsonw_uint_field(&w, "argv_truncated", c.argv_truncated);
	jsonw_uint_field(&w, "read_faults", c.read_faults);
	jsonw_uint_field(&w, "malformed", d->st.malformed);
	jsonw_uint_field(&w, "recursion_misses", d->recursion_reported);
	jsonw_uint_field(&w, "filtered", filter_total(&d->filter));
	if (d->collapse) {
		struct eg_collapse_stats cs;

		collapse_stats(d->collapse, &cs);
		jsonw_uint_field(&w, "exec_failed_collapsed", cs.folded);
	}
	meta_close(&w, d->out);
}

/* ---- signals ------------------------------------------------------------ */

static void on_signal(const struct signalfd_siginfo *si, void *arg)
{
	struct daemon *d = arg;
	int e;

	switch (si->ssi_signo) {
	case SIGUSR2:
		/* hand over to a fresh copy of ourselves, sessions and all */
		daemon_handoff(d);
		break;
	case SIGHUP:
		/* logrotate's signal: reopen the output, nothing else */
		e = output_reopen(d->out);
		if (e)
			p_warn("SIGHUP: cannot reopen %s: %s; still writing to the old file",
			       output_path(d->out), strerror(-e));
		else if (strcmp(output_path(d->out), "stdout"))
			service_on_reopened(d);
		break;
	default:
		d->stopping = true;
		loop_stop(d->loop);
		break;
	}
}

/* ---- stop ---------------------------------------------------------------- */

static int count_only(void *ctx, void *data, size_t size)
{
	struct daemon *d = ctx;

	(void)data;
	(void)size;
	d->st.shutdown_dropped++;
	return 0;
}

/*
 * After the programs are detached nothing new arrives, so draining what is
 * queued ends; past STOP_DRAIN_MS (a slow disk) the rest is only counted.
 */
/* Whatever is queued, to the output; returns -EAGAIN if time ran out first. */
static int drain_until(struct daemon *d, uint64_t deadline)
{
	int rc;

	d->fc.boot_to_real = clock_boot_to_real();
	do {
		d->batch_records = 0;
		rc = ring_buffer__consume(d->rb);
		output_flush(d->out);
	} while (rc == -EAGAIN && eg_mono_ms() < deadline);
	hold_expire(d, true);
	collapse_flush(d->collapse);
	report_lost_now(d, true);
	return rc == -EAGAIN ? -EAGAIN : 0;
}

void daemon_drain_all(struct daemon *d)
{
	drain_until(d, eg_mono_ms() + STOP_DRAIN_MS);
}

/*
 * After the programs are detached nothing new arrives, so draining what is
 * queued ends; past STOP_DRAIN_MS (a slow disk) the rest is only counted.
 */
static void stop_drain(struct daemon *d)
{
	if (drain_until(d, eg_mono_ms() + STOP_DRAIN_MS) == -EAGAIN) {
		struct ring_buffer *rb = ring_buffer__new(bpf_map__fd(d->skel->maps.events),
							  count_only, d, NULL);

		if (rb) {
			ring_buffer__consume(rb);
			ring_buffer__free(rb);
		}
		report_lost_now(d, true);
	}
}

/* ---- setup -------------------------------------------------------------- */

static int setup_bpffs(void)
{
	int rc;

	/* bpffs belongs at /sys/fs/bpf and nowhere else */
	rc = eg_mount_bpffs(EG_BPFFS_ROOT);
	if (rc) {
		p_err("cannot mount bpffs at " EG_BPFFS_ROOT ": %s", strerror(-rc));
		return rc;
	}
	return 0;
}

static int start_tracer(struct daemon *d)
{
	struct tracer_opts to = {};
	struct stat st;
	int err;

	to.max_argv_bytes = d->o.max_argv_bytes;
	to.ringbuf_size = d->o.ringbuf_size;
	to.exec_failed = d->o.exec_failed != EXEC_FAILED_NONE;
	to.host_pid_ns = d->fc.host_pid_ns;
	to.exits = !d->o.no_exits;
	if (d->o.n_cgroups > EG_SCOPES_MAX) {
		p_err("--cgroup: at most %d scopes", EG_SCOPES_MAX);
		return -E2BIG;
	}
	for (size_t i = 0; i < d->o.n_cgroups; i++) {
		char rel[PATH_MAX];

		err = cgroup_resolve(d->o.cgroups[i], &d->cg_ids[i], &d->cg_levels[i]);
		if (!err)
			err = cgroup_relpath(d->o.cgroups[i], rel, sizeof(rel));
		if (!err && strlen(rel) >= EG_SCOPE_PATH_MAX)
			err = -ENAMETOOLONG;
		if (!err && !(d->cg_paths[i] = strdup(rel)))
			err = -ENOMEM;
		if (err) {
			p_err("--cgroup %s: %s (a cgroup v2 directory, absolute or relative to the cgroup2 mount)",
			      d->o.cgroups[i], strerror(-err));
			return err;
		}
	}
	to.cgroup_ids = d->cg_ids;
	to.cgroup_paths = (const char *const *)d->cg_paths;
	to.cgroup_levels = d->cg_levels;
	to.n_cgroups = d->o.n_cgroups;
	err = kernel_prepare(d, &to);
	if (err)
		return err;
	/*
	 * Where BPF LSM exists, a session's tickets are checked at each file
	 * the kernel opens too (a '#!' chain's scripts on kernels that cannot
	 * name them at exec): attached for that even without --enforce, when
	 * it then judges no rule.
	 */
	if (!to.lsm && !to.lsm_cgroup && d->feats.r[EG_FEAT_BPF_LSM].available &&
	    !strcmp(d->mode.session_enforcement, "seccomp_notify"))
		to.lsm = true;
	err = tracer_start(&to, d->paths.pin, &d->skel, &d->reuse);
	if (err) {
		p_err("cannot load the tracer: %s (run 'execgate probe' to see what this kernel lacks; -v for the verifier log)",
		      strerror(-err));
		return err;
	}
	err = tracer_pin(d->skel, d->paths.pin);
	if (err) {
		p_err("cannot pin maps under %s: %s", d->paths.pin, strerror(-err));
		return err;
	}
	/* our own binary's "exec" verb is a session launcher */
	if (!stat("/proc/self/exe", &st)) {
		err = tracer_add_launcher(d->skel, eg_kdev(st.st_dev), st.st_ino);
		if (err)
			p_warn("cannot register the session launcher: %s", strerror(-err));
	}
	/* the dynamic loaders, by identity: run as a command, what they map is judged */
	if (loaders_find("/", &d->loaders))
		p_warn("no dynamic loader found on this host: `ld.so PROGRAM` is judged as ld.so alone");
	for (size_t i = 0; i < d->loaders.n; i++) {
		err = tracer_add_loader(d->skel, d->loaders.l[i].dev, d->loaders.l[i].ino);
		if (err) {
			p_err("cannot register the dynamic loader %s: %s", d->loaders.l[i].path, strerror(-err));
			return err;
		}
	}
	d->rb = ring_buffer__new(bpf_map__fd(d->skel->maps.events), on_record, d, NULL);
	if (!d->rb) {
		p_err("cannot open the ring buffer: %s", strerror(errno));
		return -errno;
	}
	/* from here our programs act, and any older copy still attached does not */
	err = tracer_activate(d->skel);
	if (err) {
		p_err("cannot switch to the new programs: %s", strerror(-err));
		return err;
	}
	err = kernel_start(d);
	if (err)
		return err;
	/* what ran before us: depths, and agents already running, from /proc */
	err = tasks_seed(bpf_map__fd(d->skel->maps.tasks), d->policy, &d->seeded);
	if (err)
		p_warn("cannot read the running processes: %s (their depths stay unknown)", strerror(-err));
	return 0;
}

/*
 * After the switch: the previous daemon's links go (its programs stop
 * firing), and a ring buffer we could not share is read out.
 */
static void retire_previous(struct daemon *d, json_t *state)
{
	struct eg_counters c;
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(state, "links"), i, v)
		if (json_is_integer(v))
			close((int)json_integer_value(v));
	if (d->reuse.old_events_fd >= 0) {
		struct ring_buffer *rb = ring_buffer__new(d->reuse.old_events_fd, on_record, d, NULL);

		if (rb) {
			d->fc.boot_to_real = clock_boot_to_real();
			while (ring_buffer__consume(rb) == -EAGAIN)
				d->batch_records = 0;
			ring_buffer__free(rb);
		}
		close(d->reuse.old_events_fd);
		d->reuse.old_events_fd = -1;
	}
	/* losses the previous daemon reported are not reported again */
	if (json_is_integer(json_object_get(state, "lost_reported")))
		d->lost_reported = json_integer_value(json_object_get(state, "lost_reported"));
	else if (d->reuse.counters) {
		daemon_read_counters(d, &c);
		d->lost_reported = c.lost_exec + c.lost_exec_failed + c.lost_other + c.lost_exit;
	}
}

/* The sessions module's records: as they are in JSON, a comment line on a terminal. */
static void sessions_out(void *arg, const char *json, size_t len, const char *text)
{
	struct daemon *d = arg;

	if (d->text)
		emit_comment(d, "%s", text);
	else {
		sbuf_put(output_buf(d->out), json, len);
		output_end(d->out, EG_REC_META);
	}
}

static int start_sessions(struct daemon *d)
{
	struct eg_sessions_opts so = {};

	if (strcmp(d->mode.session_enforcement, "seccomp_notify"))
		return 0;	/* said in the start record: sessions are not available here */
	so.loop = d->loop;
	so.ctl = d->ctl;
	so.tasks_fd = bpf_map__fd(d->skel->maps.tasks);
	so.tickets_fd = bpf_map__fd(d->skel->maps.tickets);
	so.tickets_small_fd = bpf_map__fd(d->skel->maps.tickets_small);
	so.argv_cap = d->o.max_argv_bytes;
	so.host_mnt_ns = d->fc.host_mnt_ns;
	so.host_pid_ns = d->fc.host_pid_ns;
	so.loaders = &d->loaders;
	so.global = &d->policy;
	so.out.emit = sessions_out;
	so.out.arg = d;
	return sessions_new(&so, &d->sessions);
}

/* A peer the kernel cannot place (its connecting process has exited) counts as inside. */
static bool procs_in_session(void *arg, const struct ctl_conn *c)
{
	struct daemon *d = arg;
	uint32_t in = 0;

	return d->sessions && (sessions_of_peer(d->sessions, c, &in) || in);
}

/* The daemon's policy's environment.deny, besides the run's own list. */
static bool procs_env_denied(void *arg, const char *kv)
{
	struct daemon *d = arg;

	return boundary_env_denied(d->policy, kv);
}

static int start_procs(struct daemon *d, const json_t *state)
{
	struct eg_procs_opts po = {};

	if (!d->sessions)
		return 0;	/* runs are supervised or not at all */
	po.loop = d->loop;
	po.ctl = d->ctl;
	po.self = d->self;
	po.pin = d->paths.pin;
	po.state_dir = d->o.state_dir ? d->o.state_dir : "/var/lib/execgate";
	po.workspace = d->o.workspace;
	po.in_session = procs_in_session;
	po.env_denied = procs_env_denied;
	po.emit = sessions_out;
	po.arg = d;
	po.handover = state ? json_object_get(state, "procs") : NULL;
	return procs_new(&po, &d->procs);
}

static int load_policy(struct daemon *d)
{
	struct eg_diags diags = {};
	int err;

	if (!d->o.policy_path)
		return 0;
	if (d->policy_fd >= 0) {
		/* a handover: the previous daemon's rules, byte for byte */
		err = policy_load_fd(d->policy_fd, d->o.policy_path, &d->policy, &diags);
		close(d->policy_fd);
		d->policy_fd = -1;
	} else {
		err = policy_load_file(d->o.policy_path, &d->policy, &diags);
	}
	print_diags(&diags, false);
	eg_diags_free(&diags);
	if (err) {
		p_err("policy %s does not load; fix the errors above ('execgate policy check %s')",
		      d->o.policy_path, d->o.policy_path);
		return err;
	}
	return 0;
}

/*
 * A session and a process group of our own: whoever started us (a script,
 * a session's process) cannot stop us with one signal to its group
 * (kill -STOP -- -PGID), nor its terminal's hangup reach us. setsid()
 * refuses a group leader (a shell's job): that one leaves its group for
 * its parent's first, which the kernel allows within a session. Left as
 * it is: a daemon in the foreground of the terminal it reads, whose
 * person stops it with ^C (make run).
 */
static void own_session(void)
{
	if (getsid(0) == getpid())
		return;		/* systemd, a handover: ours already */
	if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp())
		return;
	if (setsid() >= 0)
		return;
	if (errno == EPERM && !setpgid(0, getpgid(getppid())) && setsid() >= 0)
		return;
	p_warn("cannot start a session of its own (%s): a signal to the starter's process group "
	       "reaches the daemon too", strerror(errno));
}

int daemon_run(const struct daemon_opts *o)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR2 };
	struct daemon d = {};
	struct eg_output_opts oo = {};
	char err_msg[512];
	json_t *state = NULL, *v;
	pid_t other = 0;
	int err, rc = 1, ctl_fd = -1;
	bool keep_loop;
	size_t i;

	d.o = *o;
	d.inst.dir_fd = -1;
	d.policy_fd = -1;
	d.started_real_ns = clock_real_ns();
	d.started_mono_ms = eg_mono_ms();
	stage_stats = getenv("EXECGATE_STAGE_STATS") && !strcmp(getenv("EXECGATE_STAGE_STATS"), "1");
	signal(SIGPIPE, SIG_IGN);
	own_session();

	err = eg_paths_resolve(o->pin_path, &d.paths);
	if (err) {
		p_err("--pin-path %s: %s", o->pin_path, strerror(-err));
		return 2;
	}
	if (setup_bpffs())
		return 1;
	d.argc = o->argc;
	d.argv = o->argv;
	if (!realpath("/proc/self/exe", d.self))
		snprintf(d.self, sizeof(d.self), "/proc/self/exe");
	if (o->takeover_fd >= 0) {
		/* a handover: the previous daemon's lock, socket, links and sessions */
		err = handoff_read(o->takeover_fd, &state);
		if (err) {
			p_err("the handover state is unreadable: %s", strerror(-err));
			return 1;
		}
		d.inst.dir_fd = json_integer_value(json_object_get(state, "lock_fd"));
		d.inst.pid_fd = json_integer_value(json_object_get(state, "pid_fd"));
		fcntl(d.inst.dir_fd, F_SETFD, FD_CLOEXEC);
		fcntl(d.inst.pid_fd, F_SETFD, FD_CLOEXEC);
		snprintf(d.inst.pidfile, sizeof(d.inst.pidfile), "%s", d.paths.pidfile);
		snprintf(d.inst.pin, sizeof(d.inst.pin), "%s", d.paths.pin);
		ctl_fd = json_integer_value(json_object_get(state, "ctl_fd"));
		if ((v = json_object_get(state, "policy_fd"))) {
			d.policy_fd = json_integer_value(v);
			fcntl(d.policy_fd, F_SETFD, FD_CLOEXEC);
		}
		json_array_foreach(json_object_get(state, "links"), i, v)
			fcntl((int)json_integer_value(v), F_SETFD, FD_CLOEXEC);
		err = 0;
	} else {
		err = instance_lock(&d.paths, &d.inst, &other);
	}
	if (err == -EBUSY) {
		if (other)
			p_err("another execgate daemon (pid %d) is running on pin path %s",
			      (int)other, d.paths.pin);
		else
			p_err("another execgate daemon is running on pin path %s", d.paths.pin);
		return 1;
	}
	if (err == -ENOTDIR) {
		p_err("--pin-path %s is not inside a bpffs (use a directory under " EG_BPFFS_ROOT ")",
		      d.paths.pin);
		return 1;
	}
	if (err) {
		p_err("cannot lock the pin directory %s: %s", d.paths.pin, strerror(-err));
		return 1;
	}

	d.loop = loop_new();
	if (!d.loop) {
		p_err("cannot create the event loop: %s", strerror(errno));
		goto cleanup;
	}
	err = loop_add_signals(d.loop, sigs, sizeof(sigs) / sizeof(sigs[0]), on_signal, &d);
	if (err) {
		p_err("cannot set up signal handling: %s", strerror(-err));
		goto cleanup;
	}
	oo.path = o->output;
	oo.gid = o->ctl_gid;
	oo.max_size = o->output_max_size;
	oo.keep = o->output_keep;
	oo.min_severity = o->min_severity_output;
	err = output_open(&oo, &d.out, err_msg, sizeof(err_msg));
	if (err) {
		p_err("%s", err_msg);
		goto cleanup;
	}
	if (state)
		handoff_import_output(&d, state);
	/* the sinks send JSON records: with one, a terminal gets them too */
	d.text = o->format == FMT_TEXT ||
		 (o->format == FMT_AUTO && output_is_terminal(d.out) && !o->syslog && !o->journal);
	output_set_rotate_cb(d.out, service_on_rotated, &d);
	if (d.text && output_is_terminal(d.out)) {
		struct winsize ws;

		if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 40)
			d.fc.width = ws.ws_col;
	}
	d.fc.host_mnt_ns = ns_inode("mnt");
	d.fc.host_pid_ns = ns_inode("pid");
	d.judge.host_mnt_ns = d.fc.host_mnt_ns;
	d.judge.loaders = &d.loaders;
	if (hold_new(&d.hold)) {
		p_err("out of memory");
		goto cleanup;
	}
	d.cgroups = cgroup_cache_new();
	d.fc.cgroups = d.cgroups;
	d.containers = containers_new(getenv("EXECGATE_CONTAINERS_ROOT"));
	d.fc.containers = d.containers;
	d.lineage = lineage_new(LINEAGE_ENTRIES, LINEAGE_BYTES);
	d.fc.lineage = d.lineage;
	if (!d.cgroups || !d.containers || !d.lineage) {
		p_err("out of memory");
		goto cleanup;
	}
	if (daemon_shipping_start(&d))
		goto cleanup;
	if (state)
		handoff_import_sinks(&d, state);
	daemon_record_output(&d);
	d.filter.uids = o->uids;
	d.filter.n_uids = o->n_uids;
	d.filter.comm = o->exclude_comm;
	d.filter.n_comm = o->n_exclude_comm;
	d.filter.path = o->exclude_path;
	d.filter.n_path = o->n_exclude_path;
	if (o->exec_failed == EXEC_FAILED_COLLAPSE) {
		d.collapse = collapse_new(service_collapse_out, &d);
		if (!d.collapse) {
			p_err("out of memory");
			goto cleanup;
		}
	}

	if (load_policy(&d))
		goto cleanup;
	err = eg_mount_tracefs();
	if (err) {
		p_err("cannot mount tracefs at /sys/kernel/tracing: %s", strerror(-err));
		goto cleanup;
	}
	probe_features(&d.feats);
	probe_mode(&d.feats, &d.mode);
	if (start_tracer(&d))
		goto cleanup;

	retire_previous(&d, state);
	err = ctl_server_new(d.loop, d.paths.sock, o->ctl_gid, ctl_fd, &d.ctl);
	if (!err)
		err = ctl_ops_register(&d);
	if (!err)
		err = start_sessions(&d);
	if (!err)
		err = start_procs(&d, state);
	if (!err && d.sessions && state)
		err = sessions_import(d.sessions, json_object_get(state, "sessions"));
	if (err) {
		p_err("cannot listen on %s: %s", d.paths.sock, strerror(-err));
		goto cleanup;
	}
	if (o->metrics_listen) {
		struct httpd_addr ha;

		err = httpd_parse_addr(o->metrics_listen, &ha, err_msg, sizeof(err_msg));
		if (!err)
			err = httpd_new(d.loop, &ha, daemon_metrics_render, &d, &d.httpd);
		if (err) {
			p_err("--metrics-listen %s: %s", o->metrics_listen,
			      err == -EINVAL ? err_msg : strerror(-err));
			goto cleanup;
		}
		if (!ha.loopback)
			p_warn("--metrics-listen %s: metrics are served beyond this host", ha.text);
	}
	err = loop_add_fd(d.loop, ring_buffer__epoll_fd(d.rb), EPOLLIN, on_ring, &d, NULL);
	if (!err)
		err = loop_add_timer(d.loop, DRAIN_INTERVAL_MS, DRAIN_INTERVAL_MS, on_flush_timer, &d,
				     &d.flush_timer);
	if (err) {
		p_err("event loop setup failed: %s", strerror(-err));
		goto cleanup;
	}

	err = metrics_textfile_start(&d);
	if (err) {
		p_err("cannot write --metrics-textfile %s: %s", o->metrics_textfile, strerror(-err));
		goto cleanup;
	}
	d.fc.boot_to_real = clock_boot_to_real();
	emit_start(&d);
	if (output_flush(d.out)) {
		/* a handover goes on: tracing and sessions run already, and drops are counted and reported */
		if (o->takeover_fd < 0) {
			p_err("cannot write to %s: %s", output_path(d.out),
			      strerror(-output_stats(d.out)->last_error));
			goto cleanup;
		}
		p_warn("cannot write the start record to %s: %s; going on, records that cannot be written "
		       "are counted and reported once they can", output_path(d.out),
		       strerror(-output_stats(d.out)->last_error));
	}
	/* on a terminal the table's first line says it already: the banner once */
	if (!(d.text && output_is_terminal(d.out) && isatty(STDERR_FILENO)))
		p_info("tracing every exec (tracer %s); enforcement: %s; events to %s; control socket %s",
		       d.mode.tracer, enforcement_text(&d), output_path(d.out), d.paths.sock);
	notify_send("READY=1\nSTATUS=tracing every exec");

	err = loop_run(d.loop, -1, NULL, NULL);
	if (err)
		p_err("event loop failed: %s", strerror(-err));
	notify_send("STOPPING=1");

	/* Stop new records, then take everything still queued. */
	kernel_stop(&d);
	tracer_detach(d.skel);
	stop_drain(&d);
	emit_stop(&d);
	if (output_flush(d.out))
		p_warn("the stop record could not be written to %s: %s; %" PRIu64 " records were not written in all",
		       output_path(d.out), strerror(-output_stats(d.out)->last_error), output_dropped_total(d.out));
	rc = err ? 1 : 0;
	metrics_textfile_stop(&d);

cleanup:
	json_decref(state);
	httpd_free(d.httpd);
	loop_del(d.textfile_timer);
	collapse_free(d.collapse);
	filter_free(&d.filter);
	sbuf_free(&d.held_line);
	/* first: a connection's close calls back into the modules that hold it (a watcher, a launcher) */
	ctl_server_free(d.ctl);
	procs_free(d.procs);
	/* a session thread stuck in a file system keeps the loop (and its lock) until the exit */
	keep_loop = !sessions_free(d.sessions);
	ring_buffer__free(d.rb);
	/* --persist: the rules, their maps and links stay for `execgate unload` */
	if (d.skel && !(d.k.on && d.o.persist))
		tracer_unpin(d.skel, d.paths.pin, false);
	kernel_free(&d);
	tracer_destroy(d.skel);
	decoder_free(&d.dec);
	for (size_t i = 0; i < d.o.n_cgroups; i++)
		free(d.cg_paths[i]);
	decoder_free(&d.dec_held);
	hold_free(d.hold);
	policy_free(d.policy);
	cgroup_cache_free(d.cgroups);
	containers_free(d.containers);
	lineage_free(d.lineage);
	judge_free(&d.judge);
	output_close(d.out);
	daemon_shipping_free(&d);
	if (!keep_loop)
		loop_free(d.loop);
	instance_unlock(&d.inst);
	stage_report();
	return rc;
}
