// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The daemon's admin ops on the control socket (docs/control.md): status,
 * stats, metrics and policy_reload. Each reply is one JSON line built with jsonw.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "ctl/server.h"
#include "daemon/daemon_int.h"
#include "procs/procs.h"
#include "daemon/metrics.h"
#include "trace/progstats.h"
#include "session/session.h"
#include "execgate.h"
#include "enforce/inforce.h"
#include "util/jsonw.h"
#include "util/prom.h"
#include "util/version.h"

static uint64_t uptime_ms(const struct daemon *d)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - d->started_mono_ms;
}

/* {"program": value, ...} of one uint64_t field (at off) of each program's stats. */
static void put_by_program(struct jsonw *w, const char *key, const struct eg_prog_stat *ps, size_t n,
			   size_t off)
{
	uint64_t v;

	jsonw_key(w, key);
	jsonw_start_object(w);
	for (size_t j = 0; j < n; j++) {
		memcpy(&v, (const char *)&ps[j] + off, sizeof(v));
		jsonw_uint_field(w, ps[j].name, v);
	}
	jsonw_end_object(w);
}

/* The counters every view shares: kernel, output, daemon. */
static void put_counters(struct daemon *d, struct jsonw *w)
{
	const struct eg_output_stats *os = output_stats(d->out);
	struct eg_prog_stat ps[EG_PROGS_MAX];
	size_t nps = tracer_prog_stats(d->skel, ps, EG_PROGS_MAX);
	struct eg_counters c;
	int i;

	daemon_read_counters(d, &c);
	jsonw_key(w, "counters");
	jsonw_start_object(w);
	jsonw_uint_field(w, "exec", c.exec);
	jsonw_uint_field(w, "exec_failed", c.exec_failed);
	jsonw_uint_field(w, "lost", c.lost_exec + c.lost_exec_failed + c.lost_other + c.lost_exit);
	jsonw_uint_field(w, "lost_exec", c.lost_exec);
	jsonw_uint_field(w, "lost_exec_failed", c.lost_exec_failed);
	jsonw_uint_field(w, "lost_other", c.lost_other);
	jsonw_uint_field(w, "scope_changes", d->scope_changes);
	{
		size_t k, gone = 0;

		for (k = 0; k < d->o.n_cgroups; k++)
			gone += d->cg_gone[k];
		jsonw_uint_field(w, "scopes_gone", gone);
	}
	jsonw_uint_field(w, "other", c.other);
	jsonw_uint_field(w, "argv_truncated", c.argv_truncated);
	jsonw_uint_field(w, "read_faults", c.read_faults);
	jsonw_uint_field(w, "storage_failed", c.storage_failed);
	jsonw_uint_field(w, "written_exec", os->written[EG_REC_EXEC]);
	jsonw_uint_field(w, "written_exec_failed", os->written[EG_REC_EXEC_FAILED]);
	jsonw_uint_field(w, "output_dropped", output_dropped_total(d->out));
	jsonw_uint_field(w, "output_write_errors", os->write_errors);
	jsonw_uint_field(w, "output_rotations", os->rotations);
	jsonw_uint_field(w, "output_rotation_failures", os->rotation_failures);
	jsonw_uint_field(w, "malformed", d->st.malformed);
	jsonw_uint_field(w, "loaders_full", d->st.loaders_full);
	jsonw_uint_field(w, "exits", c.exits);
	jsonw_uint_field(w, "lost_exit", c.lost_exit);
	jsonw_uint_field(w, "exits_repeated", d->st.exits_repeated);
	daemon_shipping_counters(d, w);
	jsonw_uint_field(w, "filtered", filter_total(&d->filter));
	jsonw_uint_field(w, "filtered_uid", d->filter.n[EG_FILTER_UID]);
	jsonw_uint_field(w, "filtered_comm", d->filter.n[EG_FILTER_COMM]);
	jsonw_uint_field(w, "filtered_path", d->filter.n[EG_FILTER_PATH]);
	if (d->collapse) {
		struct eg_collapse_stats cs;

		collapse_stats(d->collapse, &cs);
		jsonw_uint_field(w, "exec_failed_collapsed", cs.folded);
		jsonw_uint_field(w, "exec_failed_held", cs.held);
	}
	jsonw_uint_field(w, "recursion_misses", prog_stats_misses(ps, nps));
	jsonw_uint_field(w, "scratch_missing", c.scratch_missing);
	jsonw_uint_field(w, "record_too_big", c.record_too_big);
	jsonw_uint_field(w, "stash_lost", c.stash_lost);
	jsonw_uint_field(w, "procs_failed", c.procs_failed);
	jsonw_uint_field(w, "policy_reloads", d->st.policy_reloads);
	jsonw_uint_field(w, "policy_reload_failures", d->st.policy_reload_failures);
	jsonw_uint_field(w, "killed", c.killed);
	jsonw_uint_field(w, "kill_failed", c.kill_failed);
	jsonw_uint_field(w, "kernel_judged", c.kjudged);
	jsonw_uint_field(w, "kernel_denied", c.kdenied);
	jsonw_uint_field(w, "kernel_errors", c.kerrors);
	jsonw_uint_field(w, "kernel_retries", c.kretries);
	jsonw_uint_field(w, "lsm_deferred", c.lsm_deferred);
	if (d->sessions) {
		struct eg_sessions_stats ss;

		sessions_stats(d->sessions, &ss);
		jsonw_key(w, "sessions");
		jsonw_start_object(w);
		jsonw_uint_field(w, "started", ss.sessions_started);
		jsonw_uint_field(w, "active", ss.sessions_active);
		jsonw_uint_field(w, "execs", ss.execs);
		jsonw_uint_field(w, "allowed", ss.allowed);
		jsonw_uint_field(w, "denied", ss.denied);
		jsonw_uint_field(w, "approvals", ss.approvals);
		jsonw_uint_field(w, "approved", ss.approved);
		jsonw_uint_field(w, "approvals_denied", ss.approval_denied);
		jsonw_uint_field(w, "approvals_timed_out", ss.timed_out);
		jsonw_uint_field(w, "approvals_cancelled", ss.cancelled);
		jsonw_uint_field(w, "approvals_pending", ss.pending);
		jsonw_uint_field(w, "access_denied", ss.access_denied);
		jsonw_uint_field(w, "lookup_timeouts", ss.lookup_timeouts);
		jsonw_uint_field(w, "lookups_waiting", ss.lookups_waiting);
		jsonw_uint_field(w, "sync_wakeups", ss.sync_wakeups);
		jsonw_uint_field(w, "receivers", ss.receivers);
		jsonw_uint_field(w, "receiver_stalls", ss.receiver_stalls);
		/* receipt to answer, approvals left out; bucket low ends (12% wide) */
		jsonw_uint_field(w, "supervisor_latency_count", ss.latency_count);
		jsonw_uint_field(w, "supervisor_latency_p50_us", ss.latency_p50_us);
		jsonw_uint_field(w, "supervisor_latency_p99_us", ss.latency_p99_us);
		jsonw_uint_field(w, "supervisor_latency_max_us", ss.latency_max_us);
		jsonw_end_object(w);
	}
	jsonw_key(w, "decisions");
	jsonw_start_object(w);
	for (i = 0; i < EG_DECISION__COUNT; i++)
		jsonw_uint_field(w, eg_decision_name(i), d->st.decisions[i]);
	jsonw_end_object(w);
	/* per program, like ring-buffer losses per record kind */
	put_by_program(w, "recursion_misses_by_program", ps, nps, offsetof(struct eg_prog_stat, recursion_misses));
	/* what each program costs, while the kernel counts it (kernel.bpf_stats_enabled=1; else 0) */
	put_by_program(w, "bpf_runs_by_program", ps, nps, offsetof(struct eg_prog_stat, run_cnt));
	put_by_program(w, "bpf_run_time_ns_by_program", ps, nps, offsetof(struct eg_prog_stat, run_time_ns));
	jsonw_end_object(w);
}

static int op_status(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct daemon *d = arg;
	struct sbuf b = {};
	struct jsonw w;

	(void)req;
	ctl_reply_open(&w, &b);
	jsonw_string_field(&w, "version", EG_VERSION);
	jsonw_int_field(&w, "pid", getpid());
	jsonw_uint_field(&w, "uptime_ms", uptime_ms(d));
	jsonw_string_field(&w, "pin_path", d->paths.pin);
	jsonw_string_field(&w, "socket", d->paths.sock);
	daemon_mode_json(d, &w);
	/* what the kernel holds, read back from the maps and the pinned links */
	jsonw_key(&w, "kernel");
	inforce_json(d->paths.pin, &w);
	/* --cgroup scopes, and whether each one's cgroup is there now */
	daemon_scopes_json(d, &w);
	jsonw_key(&w, "policy");
	if (d->policy) {
		jsonw_start_object(&w);
		jsonw_string_field(&w, "path", d->o.policy_path);
		jsonw_string_field(&w, "sha256", policy_sha256(d->policy));
		jsonw_uint_field(&w, "rules", policy_rule_count(d->policy));
		jsonw_end_object(&w);
	} else {
		jsonw_null(&w);
	}
	if (d->sessions) {
		/* what a session's Landlock domain holds on this kernel, and what is counted */
		jsonw_key(&w, "boundary");
		sessions_boundary_status(d->sessions, &w);
	}
	if (d->procs) {
		/* where runs end whole: their cgroups */
		jsonw_key(&w, "runs");
		procs_status(d->procs, &w);
	}
	jsonw_key(&w, "output");
	jsonw_start_object(&w);
	jsonw_string_field(&w, "path", output_path(d->out));
	jsonw_string_field(&w, "format", d->text ? "text" : "json");
	jsonw_end_object(&w);
	put_counters(d, &w);
	ctl_reply_send(c, &w, &b);
	return 0;
}

static int op_stats(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct daemon *d = arg;
	struct sbuf b = {};
	struct jsonw w;

	(void)req;
	ctl_reply_open(&w, &b);
	jsonw_int_field(&w, "pid", getpid());
	jsonw_string_field(&w, "pin_path", d->paths.pin);
	put_counters(d, &w);
	ctl_reply_send(c, &w, &b);
	return 0;
}

static int op_policy_reload(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct daemon *d = arg;
	struct eg_diags diags = {};
	struct sbuf b = {};
	struct jsonw w;
	char line[1024];
	size_t i;
	int err;

	(void)req;
	/* an operator's act: an agent whose user may reload could apply a file half edited */
	if (daemon_peer_in_session(d, c)) {
		ctl_reply_err(c, "policy_reload: a process inside a supervised session cannot reload the policy");
		return 0;
	}
	if (!d->o.policy_path) {
		ctl_reply_err(c, "the daemon runs without --policy: nothing to reload");
		return 0;
	}
	err = daemon_reload_policy(d, &diags);
	jsonw_init(&w, &b);
	jsonw_start_object(&w);
	jsonw_bool_field(&w, "ok", !err);
	jsonw_string_field(&w, "path", d->o.policy_path);
	if (err) {
		jsonw_string_field(&w, "error", "the policy does not load; the previous policy stays in force");
		jsonw_string_field(&w, "kept_sha256", policy_sha256(d->policy));
	} else {
		jsonw_string_field(&w, "sha256", policy_sha256(d->policy));
		jsonw_uint_field(&w, "rules", policy_rule_count(d->policy));
	}
	jsonw_key(&w, "diagnostics");
	jsonw_start_array(&w);
	for (i = 0; i < diags.n; i++) {
		eg_diag_format(&diags.v[i], line, sizeof(line));
		jsonw_string(&w, line);
	}
	jsonw_end_array(&w);
	eg_diags_free(&diags);
	ctl_reply_send(c, &w, &b);
	return 0;
}

/* {"ok":true,"content_type":"...","text":"<Prometheus text exposition>"} */
static int op_metrics(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct sbuf text = {}, b = {};
	struct jsonw w;

	(void)req;
	daemon_metrics_render(&text, arg);
	ctl_reply_open(&w, &b);
	jsonw_int_field(&w, "pid", getpid());
	jsonw_string_field(&w, "content_type", PROM_CONTENT_TYPE);
	jsonw_key(&w, "text");
	jsonw_bytes(&w, text.data ? text.data : "", text.len);
	if (text.oom)
		b.oom = true;
	sbuf_free(&text);
	ctl_reply_send(c, &w, &b);
	return 0;
}

/*
 * The control server's placer (ctl/server.h): the outermost session of a
 * connecting process's, so that sessions started one inside another share
 * one bound. Runs in the loop's thread.
 */
static int place_conn(void *arg, const struct ctl_conn *c, uint32_t *ret_session)
{
	struct daemon *d = arg;
	int rc;

	*ret_session = 0;
	if (!d->sessions)
		return 0;
	rc = sessions_of_peer(d->sessions, c, ret_session);
	if (!rc && *ret_session)
		*ret_session = sessions_outermost(d->sessions, *ret_session);
	return rc;
}

int ctl_ops_register(struct daemon *d)
{
	int err;

	/* which session a connecting process is in, for the bounds on sessions' connections */
	ctl_server_set_placer(d->ctl, place_conn, d);
	err = ctl_register(d->ctl, "status", CTL_ADMIN, op_status, d);
	if (!err)
		err = ctl_register(d->ctl, "stats", CTL_ADMIN, op_stats, d);
	if (!err)
		err = ctl_register(d->ctl, "policy_reload", CTL_ADMIN, op_policy_reload, d);
	if (!err)
		err = ctl_register(d->ctl, "metrics", CTL_ADMIN, op_metrics, d);
	if (!err)
		err = daemon_follow_register(d);
	return err;
}
