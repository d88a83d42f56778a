// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The record path: the ring buffer's records decoded, judged (annotate),
 * formatted and written; a loader's exec held for its program; scope
 * changes; losses counted and reported; the drains (each round, at a
 * stop). What helpers of the daemon read of the records (the counters,
 * the scopes) is here too, so that they call down into this file and
 * never up into daemon.c.
 */
/*
 * execgate daemon: load the tracer, pin its maps, turn ring-buffer records
 * into JSON lines (or a table on a terminal), report every lost record,
 * and serve the control socket. Everything runs in one event loop
 * (loop/loop.c): the ring buffer, the drain timer, signals and the
 * control socket's connections.
 *
 * Batching is the whole performance story (DESIGN.md, "Performance notes"):
 * the kernel wakes us only for a record into a drained ring (or past a fill
 * threshold); that wakeup arms a one-shot timer, and the ring is drained
 * when it fires, DRAIN_DELAY_MS later, with everything that came meanwhile
 * (no wakeup for those), and the output is written in large chunks. With
 * no exec there is no timer and no wakeup: the daemon sleeps.
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

/*
 * From the first record's wakeup to its drain: bounds how late a record
 * reaches the output (well under 100 ms with the drain itself), and sets
 * how many records share a wakeup at a low exec rate.
 */
#define DRAIN_DELAY_MS		50
/*
 * Between drains while records keep coming (busy, set_drain_busy): a
 * record waits for at most this and the drain itself, within the 100 ms
 * a record may take to the output with 25 ms to spare, and a drain's
 * fixed cost (its wakeup, its write) is shared by half as many records
 * again as at DRAIN_DELAY_MS.
 */
#define DRAIN_BUSY_MS		75
#define FLUSH_BYTES		(1 << 20)
#define BATCH_RECORDS		4096		/* per drain round: signals and peers get their turn */
/*
 * Per part of a round while sessions run: between parts the loop looks at
 * its fds without waiting, so an exec stopped in a session's seccomp
 * notification waits for at most this many records, not for the whole
 * batch of a drain delay (hundreds on a busy host). With no
 * session nobody waits, and a part is a whole round (BATCH_RECORDS).
 */
#define ROUND_RECORDS		32
#define STOP_DRAIN_MS		5000		/* the stop drain gives up formatting after this */

/* ---- policy ------------------------------------------------------------- */

/* What happened, while no enforcement layer covers the task. */
static const char *audit_action(enum eg_decision dec)
{
	switch (dec) {
	case EG_DECISION_DENY: return "would-block";
	case EG_DECISION_REDIRECT: return "would-block";	/* a redirect happens in sessions only */
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
	a->redirect = v.redirect;
	daemon_label(d, v.rule_index, a);
	return true;
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
bool records_stage_stats;
static uint64_t stage_ns[STAGES], stage_n[STAGES];

static uint64_t stage_clock(void)
{
	struct timespec ts;

	if (!records_stage_stats)
		return 0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void stage_add(int stage, uint64_t *t)
{
	uint64_t now;

	if (!records_stage_stats)
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

void records_stage_report(void)
{
	int i;

	if (!records_stage_stats)
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
 * The kernel followed a --cgroup scope (or the start found it so): its
 * cgroup was removed, or made again at the same path (a restarted
 * container): said, and the per-cgroup BPF LSM link attached again.
 */
void daemon_scope_changed(struct daemon *d, size_t i, bool back, uint64_t cgroup_id, bool starting)
{
	struct jsonw w;

	if (i >= d->o.n_cgroups)
		return;
	d->scope_changes++;
	d->cg_gone[i] = !back;
	if (back) {
		d->cg_ids[i] = cgroup_id;
		if (d->k.lsm_cgroup && kernel_scope_back(d, i, !starting))
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
	jsonw_uint_field(&w, "cgroup_id", cgroup_id);
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

int records_on_record(void *ctx, void *data, size_t size)
{
	struct daemon *d = ctx;
	struct eg_record r, held;
	uint64_t t = stage_clock();
	size_t held_size;
	void *held_data;

	d->ring_seen++;
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
	if (r.h.type == EG_EVENT_CGROUP) {
		cgroup_cache_made(d->cgroups, r.h.cgroup_id, r.requested.p, r.requested.len);
		goto next;
	}
	if (r.h.type == EG_EVENT_SCOPE) {
		daemon_scope_changed(d, (size_t)r.h.dirfd, r.h.at_flags == EG_SCOPE_BACK, r.h.cgroup_id, false);
		goto next;
	}
	/* a root not seen before (a container's): its own loaders, for its next execs */
	if (r.h.type == EG_EVENT_EXEC && r.h.mnt_ns != d->fc.host_mnt_ns)
		daemon_loaders_on_exec(d, r.h.pid, r.h.mnt_ns);
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

	if (r.h.session && d->sessions && sessions_annotate(d->sessions, &r.h, &a,
							     d->hold && hold_count(d->hold))) {
		ap = &a;
		/* a session's redirect (redirected, or blocked where it could not be): where to */
		if (a.decision && !strcmp(a.decision, "redirect") && a.rule)
			a.redirect = policy_rule_redirect(d->policy, a.rule);
	} else
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
		bool fresh = !ap;

		if (fresh) {
			memset(&a, 0, sizeof(a));
			ap = &a;
		}
		annotate_loaded(d, r.loaded, ap);
		/* no policy and nothing the kernel did: no verdict to write (not a null one) */
		if (fresh && !ap->decision && !ap->action && !ap->kernel_layer)
			ap = NULL;
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

/*
 * The counters map, read again only when the programs' ring_losses moved
 * (a load from the skeleton's mapping of .bss; the map is a system call),
 * when forced, and once a second anyway: a loss counted where our .bss
 * does not see it (a previous daemon's programs, the map being kept across
 * a restart) is still reported within the second. ring_losses is read
 * first and bumped after the map's counter, so no loss is read as older
 * than it is.
 */
static const struct eg_counters *counters_now(struct daemon *d, bool force)
{
	uint64_t seen = d->skel && d->skel->bss ? __atomic_load_n(&d->skel->bss->ring_losses, __ATOMIC_ACQUIRE) : 0;
	uint64_t now = eg_mono_ms();

	if (force || !d->counted_ms || seen != d->counted_losses || now - d->counted_ms >= 1000) {
		daemon_read_counters(d, &d->counted);
		d->counted_losses = seen;
		d->counted_ms = now;
	}
	return &d->counted;
}

/* what a counter gained since it was last reported (never a wrap: a counter that went back counts 0) */
static uint64_t since(uint64_t now, uint64_t reported)
{
	return now > reported ? now - reported : 0;
}

/* A "lost" record for whatever was lost since the last one. */
static void report_lost_now(struct daemon *d, bool force)
{
	struct eg_counters c;
	uint64_t lost, dropped, rec, sinks;
	struct jsonw w;

	c = *counters_now(d, force);
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
			     since(lost, d->lost_reported), lost, dropped, rec);
	} else {
		meta_open(&w, output_buf(d->out), "lost");
		jsonw_uint_field(&w, "count", since(lost, d->lost_reported) + since(dropped, d->dropped_reported) +
				 since(rec, d->recursion_reported) + since(sinks, d->sinks_reported));
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

static void arm_drain_in(struct daemon *d, uint64_t ms)
{
	if (!d->drain_armed && !loop_timer_set(d->flush_timer, ms, 0))
		d->drain_armed = true;
}

static void arm_drain(struct daemon *d)
{
	arm_drain_in(d, DRAIN_DELAY_MS);
}

/*
 * Busy: records keep coming, and each drain arms the next, so the
 * programs submit without waking us (but past the fill threshold): one
 * wakeup a drain, the timer's, instead of the ring's and the timer's.
 * A store into the skeleton's mapping of .bss, read by ring_wakeup().
 */
static void set_drain_busy(struct daemon *d, bool on)
{
	if (d->skel && d->skel->bss)
		__atomic_store_n(&d->skel->bss->drain_busy, on ? 1 : 0, __ATOMIC_SEQ_CST);
}

/* The daemon is the flag's only writer: what it stored last. */
static bool drain_busy(const struct daemon *d)
{
	return d->skel && d->skel->bss && d->skel->bss->drain_busy;
}

/*
 * What a later drain has to do with no record to bring it, in ms from
 * now (0: nothing): records held back by time (a PATH search, a loader's
 * exec), the output's drops (a failing disk), and a sink's drops (counted
 * as the output was flushed, after this drain's report), said once their
 * 10 s since the last report are up.
 */
static uint64_t drain_later(struct daemon *d)
{
	struct eg_collapse_stats cs = {};
	uint64_t since;

	if (d->collapse)
		collapse_stats(d->collapse, &cs);
	if (cs.held || hold_count(d->hold))
		return DRAIN_DELAY_MS;
	/* a failing disk: tried again each second, and its drops reported once it takes writes */
	if (output_dropped_total(d->out) > d->dropped_reported)
		return 1000;
	if (daemon_sinks_dropped(d) > d->sinks_reported) {
		since = eg_mono_ms() - d->sinks_report_ms;
		return since >= 10000 - DRAIN_DELAY_MS ? DRAIN_DELAY_MS : 10000 - since;
	}
	return 0;
}

/*
 * One bounded part of a round while running (producers never starve the
 * loop); the rest goes on once the loop has served what is ready.
 */
static void drain(struct daemon *d)
{
	uint64_t now;
	int rc;

	if (d->drain_armed) {
		/* a fill threshold's wakeup comes first: the timer has nothing left to do */
		loop_timer_set(d->flush_timer, 0, 0);
		d->drain_armed = false;
	}
	d->fc.boot_to_real = clock_boot_to_real();
	d->batch_records = 0;
	d->round_limit = loop_has_urgent(d->loop) ? ROUND_RECORDS : BATCH_RECORDS;
	rc = ring_buffer__consume(d->rb);
	d->round_limit = 0;
	if (rc == -EAGAIN) {
		/*
		 * More is queued: the loop serves what is ready, then the next
		 * part. The loss report and the flush wait for the round's end
		 * or a drain delay (records_on_record flushes a full buffer itself):
		 * two system calls per part of 32 records would be most of what
		 * a record costs, and an endless storm still gets its reports.
		 */
		loop_set_pending(d->loop, drain_more, d);
	}
	now = eg_mono_ms();
	if (rc == -EAGAIN && now - d->last_report_ms < DRAIN_DELAY_MS)
		return;
	d->last_report_ms = now;
	/* PATH searches that no exec ended in time are written as they were */
	if (d->collapse)
		collapse_expire(d->collapse, eg_boot_ns());
	hold_expire(d, false);
	report_lost(d);
	flush_timed(d);
	service_check_rotation(d);
	if (rc != -EAGAIN) {
		uint64_t later;

		/*
		 * Records came since the last drain: more are likely, and the
		 * next drain is armed now, for them, with the ring quiet. None
		 * came: back to the ring's own wakeup, with one last drain for a
		 * record whose program read "busy" just before the switch (it
		 * woke no one). Then, with no record, nothing runs.
		 */
		if (d->ring_seen) {
			set_drain_busy(d, true);
			arm_drain_in(d, DRAIN_BUSY_MS);
		} else if (drain_busy(d)) {
			set_drain_busy(d, false);
			arm_drain(d);
		}
		d->ring_seen = 0;
		later = drain_later(d);
		if (later)
			arm_drain_in(d, later);
	}
}

static void drain_more(void *arg)
{
	drain(arg);
}

/*
 * The ring's wakeups (edge-triggered): the first record into a drained
 * ring arms the drain; one while it is armed is the fill threshold's (no
 * other record wakes us before the drain), and drains now.
 */
void records_on_ring(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct daemon *d = arg;

	(void)w;
	(void)fd;
	(void)events;
	if (d->drain_armed)
		drain(d);
	else
		arm_drain(d);
}

void records_drain_soon(struct daemon *d)
{
	arm_drain(d);
}

void records_on_flush_timer(struct eg_watch *w, uint64_t n, void *arg)
{
	struct daemon *d = arg;

	(void)w;
	(void)n;
	d->drain_armed = false;
	drain(d);
}

/*
 * How the daemon runs, for the start record and status alike: its mode,
 * the layers that enforce now, and what probe found this kernel can do.
 */
void daemon_mode_json(struct daemon *d, struct jsonw *w)
{
	int i;

	jsonw_key(w, "mode");
	jsonw_start_object(w);
	jsonw_string_field(w, "tracer", d->mode.tracer);
	jsonw_string_field(w, "kernel_enforcement", d->mode.kernel_enforcement);
	jsonw_string_field(w, "session_enforcement", d->mode.session_enforcement);
	jsonw_end_object(w);
	jsonw_key(w, "enforcement");
	jsonw_start_array(w);
	if (d->k.on)
		jsonw_string(w, d->k.layer);
	if (d->sessions)
		jsonw_string(w, "seccomp");
	jsonw_end_array(w);
	jsonw_key(w, "available");
	jsonw_start_array(w);
	for (i = 0; i < EG_FEAT__COUNT; i++)
		if (d->feats.r[i].available)
			jsonw_string(w, eg_feature_name(i));
	jsonw_end_array(w);
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

/* ---- stop ---------------------------------------------------------------- */

static int count_only(void *ctx, void *data, size_t size)
{
	struct daemon *d = ctx;

	/* a cgroup made is no record the output would have had */
	if (size >= sizeof(uint32_t) && *(const uint32_t *)data == EG_EVENT_CGROUP)
		return 0;
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
void records_stop_drain(struct daemon *d)
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
