// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Metrics (docs/metrics.md): names execgate_*, counters end in _total,
 * every family has HELP and TYPE, every label value a family can take is
 * written (zeros included) so a series never appears out of nowhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "daemon/daemon_int.h"
#include "daemon/httpd.h"
#include "daemon/metrics.h"
#include "util/log.h"
#include "util/prom.h"
#include "util/version.h"

#define C "counter"
#define G "gauge"

static void one(struct sbuf *b, const char *name, const char *type, const char *help, uint64_t v)
{
	prom_family(b, name, type, help);
	prom_u64(b, name, v);
}

static void kernel_part(struct sbuf *b, const struct eg_metrics *m)
{
	const struct eg_counters *k = &m->k;

	one(b, "execgate_execs_total", C, "Successful execs the kernel reported (records queued).", k->exec);
	one(b, "execgate_exits_total", C, "Ends of exec'd processes the kernel reported (exit records queued).", k->exits);
	one(b, "execgate_exec_failed_total", C,
	    "Failed execve/execveat calls the kernel reported (records queued).", k->exec_failed);

	prom_family(b, "execgate_lost_records_total", C,
		    "Records lost before the daemon read them, by cause; record is the kind of record.");
	prom_u64_l(b, "execgate_lost_records_total", "cause", "ringbuf_full", "record", "exec", k->lost_exec);
	prom_u64_l(b, "execgate_lost_records_total", "cause", "ringbuf_full", "record", "exec_failed",
		   k->lost_exec_failed);
	prom_u64_l(b, "execgate_lost_records_total", "cause", "ringbuf_full", "record", "exit", k->lost_exit);
	/* a loader's program, a scope's cgroup gone or back */
	prom_u64_l(b, "execgate_lost_records_total", "cause", "ringbuf_full", "record", "other", k->lost_other);
	prom_u64_l(b, "execgate_lost_records_total", "cause", "no_scratch", "record", "any",
		   k->scratch_missing);
	prom_u64_l(b, "execgate_lost_records_total", "cause", "too_big", "record", "exec", k->record_too_big);
	prom_u64_l(b, "execgate_lost_records_total", "cause", "not_stashed", "record", "exec_failed",
		   k->stash_lost);
	if (m->daemon) {
		prom_u64_l(b, "execgate_lost_records_total", "cause", "bpf_recursion", "record", "any",
			   prog_stats_misses(m->progs, m->nprogs));
		prom_u64_l(b, "execgate_lost_records_total", "cause", "shutdown", "record", "any",
			   m->shutdown_dropped);
		prom_u64_l(b, "execgate_lost_records_total", "cause", "malformed", "record", "any", m->malformed);
	}

	one(b, "execgate_argv_truncated_total", C, "Records whose argv was cut at --max-argv-bytes.",
	    k->argv_truncated);
	one(b, "execgate_read_faults_total", C, "Records with a filename, cwd or argv the kernel could not read.",
	    k->read_faults);
	one(b, "execgate_task_storage_failures_total", C,
	    "Tasks whose exec depth could not be stored (depth unknown afterwards).", k->storage_failed);
	one(b, "execgate_procs_update_failures_total", C, "Always 0: the procs view is an iterator, written by nothing.", k->procs_failed);
	one(b, "execgate_killed_total", C, "Tasks the kernel killed at exec (session tickets, kernel rules).",
	    k->killed);
	one(b, "execgate_kill_failed_total", C,
	    "Kills at exec bpf_send_signal refused (retried at the syscall's exit).", k->kill_failed);
	prom_family(b, "execgate_kernel_judgements_total", C,
		    "Execs the kernel rules (--enforce) judged, by outcome: judged (all), denied (refused or "
		    "killed), error (could not judge: failed closed), retried (redone after a reload swapped the rules).");
	prom_u64_l(b, "execgate_kernel_judgements_total", "outcome", "judged", NULL, NULL, k->kjudged);
	prom_u64_l(b, "execgate_kernel_judgements_total", "outcome", "denied", NULL, NULL, k->kdenied);
	prom_u64_l(b, "execgate_kernel_judgements_total", "outcome", "error", NULL, NULL, k->kerrors);
	prom_u64_l(b, "execgate_kernel_judgements_total", "outcome", "retried", NULL, NULL, k->kretries);
	one(b, "execgate_lsm_deferred_total", C,
	    "Execs bprm_check_security left to the check at exec.", k->lsm_deferred);
}

static const char *const rec_names[EG_REC__COUNT] = { "exec", "exec_failed", "meta", "exit" };

static void daemon_part(struct sbuf *b, const struct eg_metrics *m)
{
	size_t i;

	prom_family(b, "execgate_bpf_recursion_misses_total", C,
		    "Times a BPF program did not run because it was already running on that CPU "
		    "(bpf_prog_info.recursion_misses).");
	for (i = 0; i < m->nprogs; i++)
		prom_u64_l(b, "execgate_bpf_recursion_misses_total", "program", m->progs[i].name, NULL, NULL,
			   m->progs[i].recursion_misses);

	prom_family(b, "execgate_records_written_total", C, "Records that reached the output, by kind.");
	for (i = 0; i < EG_REC__COUNT; i++)
		prom_u64_l(b, "execgate_records_written_total", "record", rec_names[i], NULL, NULL,
			   m->out.written[i]);
	prom_family(b, "execgate_output_dropped_total", C,
		    "Records the daemon could not write (disk full, write errors), by kind.");
	for (i = 0; i < EG_REC__COUNT; i++)
		prom_u64_l(b, "execgate_output_dropped_total", "record", rec_names[i], NULL, NULL,
			   m->out.dropped[i]);
	one(b, "execgate_output_write_errors_total", C, "Failed writes to the output.", m->out.write_errors);
	one(b, "execgate_output_rotations_total", C, "Rotations of --output (--output-max-size).",
	    m->out.rotations);
	one(b, "execgate_output_rotation_failures_total", C,
	    "Rotations of --output that could not be done (no rotated file lost; tried again later).",
	    m->out.rotation_failures);

	prom_family(b, "execgate_filtered_total", C,
		    "Records left out of the output by --uid, --exclude-comm, --exclude-path.");
	for (i = 0; i < EG_FILTER__COUNT; i++)
		prom_u64_l(b, "execgate_filtered_total", "filter", filter_cause_name(i), NULL, NULL,
			   m->filtered[i]);
	prom_family(b, "execgate_exec_failed_collapsed_total", C,
		    "Failed execs of a PATH search folded into the exec that ended it (--exec-failed=collapse).");
	prom_u64(b, "execgate_exec_failed_collapsed_total", m->collapse.folded);
	one(b, "execgate_exec_failed_held", G,
	    "Failed execs held back now, waiting for the exec that may end their PATH search.", m->collapse.held);

	prom_family(b, "execgate_filtered_severity_total", C,
		    "Records left out of the output by --min-severity (the file's; a sink's in execgate_sink_records_total).");
	prom_u64(b, "execgate_filtered_severity_total", m->out.filtered_severity);
	if (m->sinks[0].on || m->sinks[1].on) {
		static const char *const names[2] = { "syslog", "journal" };

		prom_family(b, "execgate_sink_records_total", C,
			    "Records for --syslog and --journal, by result: sent, dropped (no listener, its queue "
			    "and the 4 MiB backlog full), filtered (--min-severity).");
		for (i = 0; i < 2; i++) {
			if (!m->sinks[i].on)
				continue;
			prom_u64_l(b, "execgate_sink_records_total", "sink", names[i], "result", "sent", m->sinks[i].sent);
			prom_u64_l(b, "execgate_sink_records_total", "sink", names[i], "result", "dropped",
				   m->sinks[i].dropped);
			prom_u64_l(b, "execgate_sink_records_total", "sink", names[i], "result", "filtered",
				   m->sinks[i].filtered);
		}
	}
	one(b, "execgate_followers", G, "Connections following the records live (execgate query --follow).",
	    m->followers);
	one(b, "execgate_followers_dropped_total", C, "Followers dropped for reading too slowly.", m->followers_dropped);

	prom_family(b, "execgate_policy_decisions_total", C, "Policy decisions on traced execs, by decision.");
	for (i = 0; i < EG_DECISION__COUNT; i++)
		prom_u64_l(b, "execgate_policy_decisions_total", "decision", eg_decision_name(i), NULL, NULL,
			   m->decisions[i]);
	prom_family(b, "execgate_policy_reloads_total", C, "Policy reloads, by result.");
	prom_u64_l(b, "execgate_policy_reloads_total", "result", "ok", NULL, NULL, m->policy_reloads);
	prom_u64_l(b, "execgate_policy_reloads_total", "result", "failed", NULL, NULL, m->policy_reload_failures);
	one(b, "execgate_policy_loaded", G, "1 when the daemon runs with a policy.", m->policy);
	one(b, "execgate_policy_rules", G, "Rules in the policy in force.", m->policy_rules);
	if (m->ncontexts) {
		prom_family(b, "execgate_context_execs_total", C,
			    "Execs judged inside an agent context (policy contexts:), by context.");
		for (i = 0; i < m->ncontexts; i++)
			prom_u64_l(b, "execgate_context_execs_total", "context", m->contexts[i].name, NULL, NULL,
				   m->contexts[i].execs);
		prom_family(b, "execgate_context_denied_total", C,
			    "Execs inside an agent context that were denied (or killed), by context.");
		for (i = 0; i < m->ncontexts; i++)
			prom_u64_l(b, "execgate_context_denied_total", "context", m->contexts[i].name, NULL, NULL,
				   m->contexts[i].denied);
	}
	one(b, "execgate_scopes", G, "--cgroup scopes the daemon traces and enforces.", m->scopes);
	one(b, "execgate_scopes_gone", G,
	    "--cgroup scopes whose cgroup is gone (removed, not made again yet).", m->scopes_gone);
	one(b, "execgate_scope_changes_total", C,
	    "Times a --cgroup scope's cgroup was removed or made again (a restarted container).",
	    m->scope_changes);

	one(b, "execgate_sessions_started_total", C, "Supervised sessions started.", m->ss.sessions_started);
	one(b, "execgate_sessions_open", G, "Supervised sessions open now.", m->ss.sessions_active);
	prom_family(b, "execgate_session_execs_total", C, "Execs the session supervisor judged, by verdict.");
	prom_u64_l(b, "execgate_session_execs_total", "verdict", "allowed", NULL, NULL, m->ss.allowed);
	prom_u64_l(b, "execgate_session_execs_total", "verdict", "denied", NULL, NULL, m->ss.denied);
	prom_family(b, "execgate_approvals_total", C, "Approval requests, and their outcomes.");
	prom_u64_l(b, "execgate_approvals_total", "outcome", "requested", NULL, NULL, m->ss.approvals);
	prom_u64_l(b, "execgate_approvals_total", "outcome", "approved", NULL, NULL, m->ss.approved);
	prom_u64_l(b, "execgate_approvals_total", "outcome", "denied", NULL, NULL, m->ss.approval_denied);
	prom_u64_l(b, "execgate_approvals_total", "outcome", "timed_out", NULL, NULL, m->ss.timed_out);
	prom_u64_l(b, "execgate_approvals_total", "outcome", "cancelled", NULL, NULL, m->ss.cancelled);
	one(b, "execgate_approvals_pending", G, "Approval requests waiting for an answer now.", m->ss.pending);
	one(b, "execgate_session_access_denied_total", C,
	    "Accesses the sessions' Landlock domains refused (logged by audit).", m->ss.access_denied);
	one(b, "execgate_session_lookup_timeouts_total", C,
	    "Session execs refused because reading or looking up the program took too long.",
	    m->ss.lookup_timeouts);
	one(b, "execgate_session_lookups_waiting", G,
	    "Session execs being read and looked up, or waiting for a worker, now.", m->ss.lookups_waiting);
	one(b, "execgate_session_receiver_stalls_total", C,
	    "Times the event loop took a session's listener over from its thread, stuck in one lookup.",
	    m->ss.receiver_stalls);

	one(b, "execgate_control_connections", G, "Open control socket connections.", m->ctl_conns);
	prom_family(b, "execgate_control_dropped_total", C,
		    "Control socket peers refused or cut off, by reason.");
	prom_u64_l(b, "execgate_control_dropped_total", "reason", "too_many", NULL, NULL, m->ctl.refused);
	prom_u64_l(b, "execgate_control_dropped_total", "reason", "timeout", NULL, NULL, m->ctl.timed_out);
	prom_u64_l(b, "execgate_control_dropped_total", "reason", "too_large", NULL, NULL, m->ctl.too_large);
	prom_u64_l(b, "execgate_control_dropped_total", "reason", "bad_request", NULL, NULL, m->ctl.bad_request);
	prom_u64_l(b, "execgate_control_dropped_total", "reason", "slow_reader", NULL, NULL, m->ctl.slow_reader);
	prom_u64_l(b, "execgate_control_dropped_total", "reason", "no_fds", NULL, NULL, m->ctl.no_fds);
	one(b, "execgate_metrics_http_requests_total", C, "Requests served on --metrics-listen.",
	    m->http_requests);
	one(b, "execgate_metrics_http_rejected_total", C,
	    "Connections on --metrics-listen refused or answered with an error.", m->http_rejected);
	if (m->api) {
		one(b, "execgate_api_requests_total", C, "HTTP requests and WebSocket upgrades with a valid token "
		    "on --api-listen.", m->api_st.requests);
		prom_family(b, "execgate_api_refused_total", C, "Requests and connections the API refused, by reason.");
		prom_u64_l(b, "execgate_api_refused_total", "reason", "unauthorized", NULL, NULL,
			   m->api_st.unauthorized);
		prom_u64_l(b, "execgate_api_refused_total", "reason", "too_many", NULL, NULL, m->api_st.refused);
		prom_u64_l(b, "execgate_api_refused_total", "reason", "too_large", NULL, NULL, m->api_st.too_large);
		prom_u64_l(b, "execgate_api_refused_total", "reason", "slow_client", NULL, NULL,
			   m->api_st.slow_clients);
		prom_u64_l(b, "execgate_api_refused_total", "reason", "in_session", NULL, NULL,
			   m->api_st.in_session);
	}
	one(b, "execgate_metrics_textfile_errors_total", C, "Failed writes of --metrics-textfile.",
	    m->textfile_errors);
}

void metrics_render(struct sbuf *b, const struct eg_metrics *m)
{
	prom_family(b, "execgate_build_info", G, "The execgate version; always 1.");
	prom_u64_l(b, "execgate_build_info", "version", EG_VERSION, NULL, NULL, 1);
	one(b, "execgate_daemon_up", G,
	    "1 when these numbers come from a running daemon; 0 when read from the pinned maps "
	    "without one, or written by a daemon as it stopped.",
	    m->daemon && !m->stopped);
	if (m->daemon) {
		prom_family(b, "execgate_start_time_seconds", G, "When the daemon started, in Unix seconds.");
		prom_double(b, "execgate_start_time_seconds", m->start_time);
		prom_family(b, "execgate_exec_failed_mode", G,
			    "1 for the --exec-failed mode in force (all, none, collapse).");
		prom_u64_l(b, "execgate_exec_failed_mode", "mode", "all", NULL, NULL,
			   !strcmp(m->exec_failed_mode, "all"));
		prom_u64_l(b, "execgate_exec_failed_mode", "mode", "none", NULL, NULL,
			   !strcmp(m->exec_failed_mode, "none"));
		prom_u64_l(b, "execgate_exec_failed_mode", "mode", "collapse", NULL, NULL,
			   !strcmp(m->exec_failed_mode, "collapse"));
	}
	if (m->have_counters)
		kernel_part(b, m);
	if (m->daemon)
		daemon_part(b, m);
}

/* ---- the daemon's snapshot --------------------------------------------- */

void daemon_metrics(struct daemon *d, struct eg_metrics *m)
{
	memset(m, 0, sizeof(*m));
	m->daemon = true;
	m->have_counters = d->skel != NULL;
	daemon_read_counters(d, &m->k);
	m->start_time = d->started_real_ns / 1e9;
	m->out = *output_stats(d->out);
	memcpy(m->decisions, d->st.decisions, sizeof(m->decisions));
	m->policy = d->policy != NULL;
	m->policy_rules = d->policy ? policy_rule_count(d->policy) : 0;
	for (size_t id = 1; d->policy && id <= policy_context_count(d->policy) && id < 32; id++) {
		struct eg_context_info ci;

		if (policy_context_info(d->policy, id, &ci))
			continue;
		m->contexts[m->ncontexts].name = ci.name;
		m->contexts[m->ncontexts].execs = d->st.ctx_execs[id];
		m->contexts[m->ncontexts].denied = d->st.ctx_denied[id];
		m->ncontexts++;
	}
	m->policy_reloads = d->st.policy_reloads;
	m->policy_reload_failures = d->st.policy_reload_failures;
	m->malformed = d->st.malformed;
	m->shutdown_dropped = d->st.shutdown_dropped;
	memcpy(m->filtered, d->filter.n, sizeof(m->filtered));
	m->exec_failed_mode = daemon_exec_failed_mode(d);
	if (d->collapse)
		collapse_stats(d->collapse, &m->collapse);
	if (d->sessions) {
		m->sessions = true;
		sessions_stats(d->sessions, &m->ss);
	}
	m->nprogs = tracer_prog_stats(d->skel, m->progs, EG_PROGS_MAX);
	if (d->ctl) {
		m->ctl_conns = ctl_conn_count(d->ctl);
		ctl_server_stats(d->ctl, &m->ctl);
	}
	if (d->httpd)
		httpd_stats(d->httpd, &m->http_requests, &m->http_rejected);
	if (d->api) {
		m->api = true;
		api_get_stats(d->api, &m->api_st);
	}
	m->textfile_writes = d->textfile_writes;
	m->textfile_errors = d->textfile_errors;
	m->scopes = d->o.n_cgroups;
	for (size_t i = 0; i < d->o.n_cgroups; i++)
		m->scopes_gone += d->cg_gone[i];
	m->scope_changes = d->scope_changes;
	daemon_shipping_metrics(d, m);
}

void daemon_metrics_render(struct sbuf *b, void *daemon)
{
	struct eg_metrics m;

	daemon_metrics(daemon, &m);
	metrics_render(b, &m);
}

/* ---- --metrics-textfile ------------------------------------------------- */

int metrics_write_file(const char *path, const char *data, size_t len)
{
	char tmp[PATH_MAX];
	size_t off = 0;
	int fd, err = 0;

	/* node_exporter reads only *.prom: the temporary name is not one */
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		off += n;
	}
	if (!err && fchmod(fd, 0644))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* quiet: the caller says what failed */
static int write_textfile(struct daemon *d, bool up, bool quiet)
{
	struct eg_metrics m;
	struct sbuf b = {};
	int err;

	daemon_metrics(d, &m);
	/* the last write, at stop: the daemon is gone, its totals stay readable */
	m.stopped = !up;
	metrics_render(&b, &m);
	err = b.oom ? -ENOMEM : metrics_write_file(d->o.metrics_textfile, b.data, b.len);
	if (err) {
		if ((!d->textfile_errors++ || d->textfile_errors % 100 == 0) && !quiet)
			p_warn("cannot write --metrics-textfile %s: %s (%llu failures so far)",
			       d->o.metrics_textfile, strerror(-err), (unsigned long long)d->textfile_errors);
	} else {
		d->textfile_writes++;
	}
	sbuf_free(&b);
	return err;
}

static void on_textfile_timer(struct eg_watch *w, uint64_t n, void *arg)
{
	(void)w;
	(void)n;
	write_textfile(arg, true, false);
}

int metrics_textfile_start(struct daemon *d)
{
	uint64_t ms = (uint64_t)d->o.metrics_interval * 1000;

	int err;

	if (!d->o.metrics_textfile)
		return 0;
	/*
	 * The first write tells a wrong path at once; later failures are
	 * counted and warned about. So is a first one after a handover: the
	 * daemon runs already, and a full disk must not stop it.
	 */
	err = write_textfile(d, true, d->o.takeover_fd < 0);
	if (err && d->o.takeover_fd < 0)
		return err;
	return loop_add_timer(d->loop, ms, ms, on_textfile_timer, d, &d->textfile_timer);
}

void metrics_textfile_stop(struct daemon *d)
{
	if (!d->o.metrics_textfile)
		return;
	loop_del(d->textfile_timer);
	d->textfile_timer = NULL;
	write_textfile(d, false, false);
}
