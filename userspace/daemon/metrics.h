/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The daemon's counters as Prometheus metrics (docs/metrics.md): one
 * snapshot of every counter, rendered in the text exposition format. Three
 * ways out: the control socket's "metrics" op (execgate metrics), an HTTP
 * endpoint (--metrics-listen, daemon/httpd.c) and a node_exporter textfile
 * (--metrics-textfile). Without a daemon, `execgate metrics` renders the
 * kernel's counters from the pinned maps (daemon false).
 */
#ifndef EG_METRICS_H
#define EG_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include "api/api.h"
#include "ctl/server.h"
#include "events/collapse.h"
#include "events/filter.h"
#include "events/output.h"
#include "execgate.h"
#include "policy/policy.h"
#include "session/session.h"
#include "trace/progstats.h"
#include "util/sbuf.h"

struct eg_metrics {
	bool daemon;			/* a daemon's own view; false: pinned maps only */
	bool stopped;			/* ... written as it stopped (execgate_daemon_up 0) */
	bool have_counters;
	struct eg_counters k;		/* the kernel's counters */
	/* the rest: only with daemon */
	double start_time;		/* Unix seconds */
	struct eg_output_stats out;
	uint64_t decisions[EG_DECISION__COUNT];
	bool policy;
	uint64_t policy_rules;
	uint64_t policy_reloads, policy_reload_failures;
	uint64_t malformed, shutdown_dropped;
	uint64_t filtered[EG_FILTER__COUNT];
	const char *exec_failed_mode;	/* "all", "none", "collapse" */
	struct eg_collapse_stats collapse;
	bool sessions;
	struct eg_sessions_stats ss;
	struct eg_prog_stat progs[EG_PROGS_MAX];
	size_t nprogs;
	unsigned int ctl_conns;
	struct ctl_server_stats ctl;
	uint64_t http_requests, http_rejected;
	bool api;			/* --api-listen: the API's counters (api/api.h) */
	struct eg_api_stats api_st;
	uint64_t textfile_writes, textfile_errors;
	uint64_t scopes, scopes_gone, scope_changes;	/* --cgroup scopes */
	/* --syslog, --journal (events/sinks.h); followers of the records (query --follow) */
	struct { bool on; uint64_t sent, dropped, filtered; } sinks[2];
	uint64_t followers, followers_dropped;
	/* agent contexts of the policy in force: name, execs judged in it, denied */
	struct { const char *name; uint64_t execs, denied; } contexts[32];
	size_t ncontexts;
};

/* Appends the exposition text for m to b. */
void metrics_render(struct sbuf *b, const struct eg_metrics *m);

struct daemon;
/* Fills m from the running daemon. */
void daemon_metrics(struct daemon *d, struct eg_metrics *m);
/* Renders the running daemon's metrics (an httpd_render_fn). */
void daemon_metrics_render(struct sbuf *b, void *daemon);

/* --metrics-textfile: written now, then every interval (daemon/metrics.c). */
int metrics_textfile_start(struct daemon *d);
/* The last write, at stop (execgate_daemon_up 0). */
void metrics_textfile_stop(struct daemon *d);
/* Writes path atomically (a temporary file renamed over it); 0 or -errno. */
int metrics_write_file(const char *path, const char *data, size_t len);

#endif
