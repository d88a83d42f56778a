/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the daemon: the state its parts share (daemon.c: setup and the
 * record path; ctl_ops.c: the control socket's admin verbs). Nothing outside
 * daemon/ includes this.
 */
#ifndef EG_DAEMON_INT_H
#define EG_DAEMON_INT_H

#include <stdint.h>
#include "daemon/daemon.h"
#include "daemon/instance.h"
#include "loop/loop.h"
#include "events/collapse.h"
#include "events/filter.h"
#include "events/format.h"
#include "events/output.h"
#include "policy/policy.h"
#include "session/session.h"
#include "trace/probe.h"
#include "trace/record.h"
#include "trace/running.h"
#include "trace/tracer.h"
#include "daemon/judge.h"
#include "util/loaders.h"
#include "util/paths.h"
#include "daemon/hold.h"
#include "enforce/kmaps.h"

struct execgate_bpf;
struct ring_buffer;
struct ctl_server;
struct cgroup_cache;
struct eg_sessions;
struct eg_httpd;
struct eg_api;
struct eg_lineage;
struct eg_containers;
struct eg_sink;
struct eg_follow;
struct jsonw;
struct ns_seen;

/* What the daemon counts itself; the kernel's counters live in the "counters" map. */
struct daemon_stats {
	uint64_t decisions[EG_DECISION__COUNT];
	/* by agent context id (policy contexts:): execs judged in it, and refused or would be */
	uint64_t ctx_execs[32], ctx_denied[32];
	uint64_t policy_reloads;
	uint64_t policy_reload_failures;
	uint64_t malformed;		/* records that did not decode */
	uint64_t shutdown_dropped;	/* still queued when the bounded stop drain ended */
	uint64_t loaders_full;		/* a root's loaders that did not fit the map (loaders.c) */
	uint64_t exits_repeated;	/* a process's end reported by two of its last threads: one kept */
};

/* --enforce (daemon/kernel.c) */
#define DAEMON_KEPT_POLICIES	16
struct kc_prog;
struct bpf_link;
struct daemon_kernel {
	bool on;
	bool ctx_only;			/* no --enforce: the policy's contexts alone, tracked by the kernel */
	const char *layer;		/* "kernel-lsm" or "kernel-kill" */
	bool lsm_cgroup;		/* BPF_LSM_CGROUP links, one per --cgroup */
	struct kmaps km;
	struct kc_prog *prog;		/* what the kernel holds now */
	uint32_t seq;			/* its eg_kstate.seq */
	/*
	 * The policies of earlier rule sets, by their seq: a record the kernel
	 * judged before a reload is annotated with the policy it was judged by
	 * (its decision, rule and action then agree with what the kernel did).
	 */
	struct { uint32_t seq; struct eg_policy *p; } kept[DAEMON_KEPT_POLICIES];
	unsigned int next_kept;
	struct bpf_link *cg_links[DAEMON_MAX_LIST];
	int n_cg_links;
	bool loaded;			/* the rules (or contexts) went into new maps before the switch */
	bool links_touched;		/* kernel_start() changed the pinned links: a failed start is a stop */
	bool stopped;			/* kernel_stop() ran */
};

struct daemon {
	struct daemon_opts o;
	struct eg_paths paths;
	struct eg_instance inst;
	struct eg_loop *loop;
	struct execgate_bpf *skel;
	struct ring_buffer *rb;
	struct eg_watch *flush_timer;	/* one-shot: the drain after a wakeup (records.c) */
	struct files_watch *files;	/* the files the policy in force names (watch.h) */
	bool drain_armed;		/* flush_timer is set */
	uint64_t ring_seen;		/* ring records since the last whole drain */
	struct ctl_server *ctl;
	struct eg_sessions *sessions;
	struct eg_procs *procs;		/* execgate run */
	struct eg_output *out;
	struct eg_decoder dec;
	struct eg_decoder dec_held;	/* a held loader exec, decoded beside the record that frees it */
	struct eg_hold *hold;		/* loader execs waiting for the program they map (hold.h) */
	struct eg_loaders loaders;	/* the dynamic loaders registered (util/loaders.h, loaders.c) */
	struct ns_seen *ns_seen;	/* mount namespaces whose root was searched for loaders (loaders.c) */
	bool loaders_started;		/* the start's loaders registered: a new one at once */
	struct eg_format_ctx fc;
	bool text;
	struct tracer_reuse reuse;	/* what an earlier daemon left and we picked up */
	bool activated;			/* our programs act (tracer_activate) */
	bool stopping;
	uint64_t started_real_ns;
	uint64_t started_mono_ms;
	uint64_t lost_reported;		/* ring-buffer losses already reported */
	struct eg_counters counted;	/* the counters map as read last (report_lost_now) */
	uint64_t counted_losses;	/* the programs' ring_losses then */
	uint64_t counted_ms;		/* and when (0: never) */
	uint64_t sinks_reported;	/* --syslog/--journal drops already reported */
	uint64_t sinks_report_ms;
	uint64_t dropped_reported;	/* output drops already reported */
	uint64_t batch_records;		/* records in the current drain round */
	uint64_t round_limit;		/* records in a round while running; 0: BATCH_RECORDS */
	uint64_t last_report_ms;	/* the last loss report and flush of a drain */
	struct eg_features feats;
	struct eg_mode mode;
	struct daemon_stats st;
	/* policy */
	struct eg_policy *policy;
	/* the name each context id had under this daemon (reload.c): a reload never gives it another */
	char *ctx_names[EG_POLICY_MAX_CONTEXTS + 1];
	int policy_fd;			/* -1; else the policy in force at a handover (memfd) */
	int teller_fd;			/* -1; else the sessions' stderr helper, forked at the start */
	struct cgroup_cache *cgroups;
	struct eg_judge judge;
	/* a re-exec: the command line again, and the binary */
	int argc;
	char **argv;
	char self[PATH_MAX];
	struct handoff_check *check;	/* a handover's check of the new binary, running (handoff.c) */
	struct daemon_kernel k;
	struct seed_stats seeded;	/* what the /proc walk at start gave the kernel */
	/* --cgroup scopes, resolved */
	uint64_t cg_ids[DAEMON_MAX_LIST];
	uint32_t cg_levels[DAEMON_MAX_LIST];
	char *cg_paths[DAEMON_MAX_LIST];	/* from the cgroup2 root: the kernel follows them */
	bool cg_gone[DAEMON_MAX_LIST];		/* the scope's cgroup was removed (not made again yet) */
	uint64_t scope_changes;
	/* volume control and metrics (events/filter.c, events/collapse.c, daemon/metrics.c) */
	struct eg_filter filter;
	struct eg_collapse *collapse;	/* --exec-failed=collapse */
	struct sbuf held_line;		/* a failed exec formatted for the collapser */
	uint64_t recursion_reported;	/* BPF recursion misses already reported */
	struct eg_httpd *httpd;
	struct eg_api *api;		/* --api-listen (apiserve.c), NULL: off */
	struct eg_watch *textfile_timer;
	uint64_t textfile_writes, textfile_errors;
	/* process lifetimes, containers, shipping (daemon/exits.c, trace/containers.c, events/sinks.h) */
	struct eg_lineage *lineage;
	/* the processes whose exit was written last (exits.c), by a hash of their exec id */
	struct { uint32_t pid; uint64_t exec_ktime_ns; } exits_seen[256];
	struct eg_containers *containers;
	struct eg_sink *syslog, *journal;
	struct eg_follow *follow;
	uint64_t rotation_streak;	/* the last run of failed rotations logged */
	bool rotation_fixed;		/* a rotation worked since */
};

/* reload.c */
int daemon_reload_policy(struct daemon *d, struct eg_diags *diags);
/* The policy in force loaded again from its text: taken if the files it names changed (watch.c). */
int daemon_refresh_policy(struct daemon *d);
/* The policy record (start, reload, or refresh: its files changed). */
void daemon_emit_policy(struct daemon *d, bool reload, bool refresh);
/* A policy is in force (start, reload, refresh): its record, and its files watched. */
void daemon_policy_in_force(struct daemon *d, bool reload, bool refresh);
/* A load's errors (or all its lines) on stderr. */
void daemon_print_diags(const struct eg_diags *diags, bool errors_only);

/* records.c: the ring buffer's records to the output */
/* "mode", "enforcement" and "available": the start record's and status's. */
void daemon_mode_json(struct daemon *d, struct jsonw *w);
int records_on_record(void *ctx, void *data, size_t size);
void records_on_ring(struct eg_watch *w, int fd, uint32_t events, void *arg);
void records_on_flush_timer(struct eg_watch *w, uint64_t n, void *arg);
/* A drain (and the output's flush) within the drain delay, for what was written outside one. */
void records_drain_soon(struct daemon *d);
/* At a stop: what the ring buffer still holds, bounded by time. */
void records_stop_drain(struct daemon *d);
/* EXECGATE_STAGE_STATS=1: time per stage of the record path, printed at the stop. */
extern bool records_stage_stats;
void records_stage_report(void);
/* A --cgroup's cgroup gone, or back with a new id: said, and its LSM link attached again. */
void daemon_scope_changed(struct daemon *d, size_t i, bool back, uint64_t cgroup_id, bool starting);
/* Everything queued in the ring buffer, to the output (bounded by time). */
void daemon_drain_all(struct daemon *d);
void daemon_read_counters(struct daemon *d, struct eg_counters *ret);

/* loaders.c: the dynamic loaders, the host's and those of other roots (containers) */
int daemon_loaders_start(struct daemon *d);
void daemon_loaders_on_exec(struct daemon *d, pid_t pid, uint32_t mnt_ns);
void daemon_loaders_free(struct daemon *d);

/* kernel.c: --enforce */
int kernel_prepare(struct daemon *d, struct tracer_opts *to);
/*
 * Rule maps this copy does not share with one in force (a first start, an
 * upgrade across their layout) get the rules before the switch, so that
 * no exec finds the new programs acting with none.
 */
int kernel_load_before_switch(struct daemon *d);
/* The names p gives context ids not named yet, into d->ctx_names (kept for the daemon's life and its handovers); true if any. */
bool daemon_contexts_note(struct daemon *d, const struct eg_policy *p);
/* Every name of d->ctx_names into "ctxnames", kept with "tasks" for the daemons after this one. */
void daemon_contexts_pin(struct daemon *d);
/*
 * At a start: the names an earlier daemon gave the ids tasks carry, then
 * the policy's; -EINVAL (said) if the policy renames one (a handover,
 * which runs the policy in force, warns and takes the policy's).
 */
int daemon_contexts_start(struct daemon *d);
int kernel_start(struct daemon *d);
/* Compiles and switches to p's rules; -EPERM: refused (partial), the old ones stay. */
int kernel_reload(struct daemon *d, const struct eg_policy *p);
void kernel_stop(struct daemon *d);
void kernel_free(struct daemon *d);
void kernel_annotate(struct daemon *d, const struct eg_record *r, struct eg_annotation *a);
/* A --cgroup scope's cgroup made again (state EG_SCOPE_BACK): its per-cgroup BPF LSM link too. */
int kernel_scope_back(struct daemon *d, size_t i, bool pin);
/* The policy whose rules the kernel's set seq holds (the one in force, or a recent one), or NULL. */
const struct eg_policy *kernel_policy_of(const struct daemon *d, uint32_t seq);
/* The policy in force until a reload, for records the kernel judged with its rules. */
void kernel_keep_policy(struct daemon *d, struct eg_policy *old, uint32_t old_seq);
/* Why the kernel acted (enum eg_reason): "kernel-rule", "ticket-mismatch"...; NULL for none. */
const char *eg_reason_name(uint32_t reason);
struct jsonw;
void kernel_start_record(struct daemon *d, struct jsonw *w);

/* "scopes": each --cgroup, its path and whether its cgroup is there (status, stats, start). */
void daemon_scopes_json(struct daemon *d, struct jsonw *w);

/* Text mode: a comment line ("# ..."), folded at the terminal's width. */
void emit_comment(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* service.c */
bool service_must_show(const struct eg_record *r, const struct eg_annotation *a);
void service_collapse_out(void *arg, const char *line, size_t len);
const char *daemon_exec_failed_mode(const struct daemon *d);
void service_start_facts(struct daemon *d, struct jsonw *w);
void service_on_rotated(struct eg_output *o, const char *prev, void *arg);
void service_check_rotation(struct daemon *d);
void service_header(struct daemon *d, struct jsonw *w);
/* hostname (--hostname, else this host's), boot_id, machine_id: the start record's and service_header()'s */
void service_host(const struct daemon *d, struct jsonw *w);
void service_on_reopened(struct daemon *d);
void service_check_cut_line(const struct eg_output *o);

/* exits.c: an exit record (EG_EVENT_EXIT) to the output */
void daemon_on_exit(struct daemon *d, const void *data, size_t size);
/* Severity and tags of the rule that judged an exec, into its annotation. */
void daemon_label(struct daemon *d, int rule_index, struct eg_annotation *a);
/* The sinks (--syslog, --journal) and the followers, set up on the output; 0 or -errno (said). */
int daemon_shipping_start(struct daemon *d);
void daemon_shipping_free(struct daemon *d);
void daemon_shipping_counters(struct daemon *d, struct jsonw *w);
struct sbuf;
int daemon_follow_register(struct daemon *d);
void daemon_record_output(struct daemon *d);
uint64_t daemon_sinks_dropped(struct daemon *d);
struct eg_metrics;
void daemon_shipping_metrics(struct daemon *d, struct eg_metrics *m);

/* ctl_ops.c */
int ctl_ops_register(struct daemon *d);

/* apiserve.c: --api-listen's server, started once the control socket and runs are (0 when off) */
int daemon_api_start(struct daemon *d);
/* daemon --check: what the start reads for the API (the address, the token file), read and let go. */
int daemon_api_check(struct daemon *d);
void daemon_api_stop(struct daemon *d);

/* Whether c's process is inside a supervised session; one the kernel cannot place (gone) counts as inside. */
static inline bool daemon_peer_in_session(struct daemon *d, const struct ctl_conn *c)
{
	return d->sessions && sessions_peer_inside(d->sessions, c);
}

#endif
