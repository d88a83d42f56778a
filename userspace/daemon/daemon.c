// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate daemon: load the tracer, pin its maps, turn ring-buffer records
 * into JSON lines (or a table on a terminal), report every lost record,
 * and serve the control socket. Everything runs in one event loop
 * (loop/loop.c): the ring buffer, the drain timer, signals and the
 * control socket's connections.
 *
 * Batching is the whole performance story (DESIGN.md, "Performance notes"):
 * the kernel wakes us for a record into a drained ring or past a fill
 * threshold, we drain once a short delay later (records.c), and write the
 * output in large chunks. No periodic timer: idle, the daemon sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
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
#include "trace/migrate.h"
#include "trace/progstats.h"
#include "trace/running.h"
#include "trace/tracer.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/mounts.h"
#include "util/version.h"


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

/* ---- daemon records ----------------------------------------------------- */

/* Which host this is, and which cgroup hierarchy cgroup paths come from. */
static void host_facts(const struct daemon *d, struct jsonw *w)
{
	char mnt[PATH_MAX];

	service_host(d, w);
	jsonw_key(w, "cgroup_hierarchy");
	jsonw_start_object(w);
	/* "none": cgroup v1 alone (no v2 tree in use): every task is at the v2 root */
	jsonw_string_field(w, "version", cgroup2_mount(mnt, sizeof(mnt)) ? "none" : "v2");
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


static void emit_start(struct daemon *d)
{
	struct jsonw w;
	int i;

	if (d->text) {
		emit_comment(d, "execgate %s started: tracer %s; enforcement: %s; "
			     "maps in %s; control socket %s; failed execs: %s", EG_VERSION, d->mode.tracer,
			     enforcement_text(d), d->paths.pin, d->paths.sock, daemon_exec_failed_mode(d));
		if (d->policy)
			daemon_policy_in_force(d, false, false);
		format_text_header(output_buf(d->out), d->fc.width);
		output_end(d->out, EG_REC_META);
		return;
	}
	meta_open_daemon(&w, output_buf(d->out), "start");
	jsonw_string_field(&w, "version", EG_VERSION);
	jsonw_int_field(&w, "pid", getpid());
	daemon_mode_json(d, &w);
	kernel_start_record(d, &w);
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
	jsonw_bool_field(&w, "ended_cut_line", output_ended_cut_line(d->out));
	host_facts(d, &w);
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
		daemon_policy_in_force(d, false, false);
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
		if (!e)
			service_check_cut_line(d->out);
		if (e)
			p_warn("SIGHUP: cannot reopen %s: %s; still writing to the old file",
			       output_path(d->out), strerror(-e));
		else if (strcmp(output_path(d->out), "stdout"))
			service_on_reopened(d);
		records_drain_soon(d);	/* the new file's header is written within the drain delay */
		break;
	default:
		d->stopping = true;
		loop_stop(d->loop);
		break;
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

/*
 * The pin directory held an older version's task storage (an upgrade):
 * every task's entry is copied into ours, threads included, so depths,
 * contexts and a session's id (which the kernel's ticket check and the
 * approvals read) carry over. Fails closed: a daemon that would run the
 * sessions it takes over without their ids does not start.
 */
static int migrate_old_tasks(struct daemon *d)
{
	struct tasks_migrated m = {};
	int err;

	if (d->reuse.old_tasks_fd < 0)
		return 0;
	err = tasks_migrate(d->reuse.old_tasks_fd, bpf_map__fd(d->skel->maps.tasks), &m);
	if (err) {
		p_err("cannot carry over the older version's task storage in %s/tasks: %s "
		      "(the running processes' depths and session ids would be lost)", d->paths.pin, strerror(-err));
		return err;
	}
	p_info("task storage of the older layout carried over: %llu entries copied, %llu newer kept%s",
	       (unsigned long long)m.copied, (unsigned long long)m.newer, m.failed ? ", some refused" : "");
	if (m.failed)
		p_warn("%llu tasks' entries could not be copied (no memory): they count as unknown",
		       (unsigned long long)m.failed);
	return 0;
}

/*
 * Right after the switch: a --cgroup path made again since it was resolved
 * (a container restarted while the programs loaded) has a new id, which
 * no active program saw made. It joins the scope here; one made after the
 * switch, the programs' cgroup_mkdir adds themselves.
 */
static void scopes_recheck(struct daemon *d)
{
	for (size_t i = 0; i < d->o.n_cgroups; i++) {
		uint64_t id;
		uint32_t level;
		int err;

		if (cgroup_resolve(d->o.cgroups[i], &id, &level) || id == d->cg_ids[i])
			continue;
		err = tracer_scope_add(d->skel, id);
		if (err) {
			p_warn("--cgroup %s: made again while the programs loaded, and cannot be put in scope: %s",
			       d->o.cgroups[i], strerror(-err));
			continue;
		}
		/* the old id is gone (no program saw it go), and what the programs do for a cgroup back */
		tracer_scope_del(d->skel, d->cg_ids[i]);
		daemon_scope_changed(d, i, true, id, true);
	}
}

/* The tracer's options from ours: the scopes resolved, the kernel rules compiled (kernel.c). */
static int tracer_options(struct daemon *d, struct tracer_opts *ret)
{
	struct tracer_opts to = {};
	int err;

	to.max_argv_bytes = d->o.max_argv_bytes;
	to.ringbuf_size = d->o.ringbuf_size;
	to.exec_failed = d->o.exec_failed != EXEC_FAILED_NONE;
	to.host_pid_ns = d->fc.host_pid_ns;
	to.exits = !d->o.no_exits;
	to.fentry = d->feats.r[EG_FEAT_FENTRY].available;
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
	*ret = to;
	return 0;
}

static void tracer_failed(int err)
{
	p_err("cannot load the tracer: %s (run 'execgate probe' to see what this kernel lacks; -v for the verifier log)",
	      strerror(-err));
}

/* tracefs mounted, and what this kernel offers: the same for a start and a --check */
static int probe_kernel(struct daemon *d)
{
	int err = eg_mount_tracefs();

	if (err) {
		p_err("cannot mount tracefs at /sys/kernel/tracing: %s", strerror(-err));
		return err;
	}
	probe_features(&d->feats);
	probe_mode(&d->feats, &d->mode);
	return 0;
}

static int start_tracer(struct daemon *d)
{
	struct tracer_opts to;
	struct stat st;
	int err;

	err = tracer_options(d, &to);
	if (err)
		return err;
	err = tracer_start(&to, d->paths.pin, &d->skel, &d->reuse);
	if (err) {
		tracer_failed(err);
		return err;
	}
	err = daemon_contexts_start(d);
	if (err)
		return err;
	err = tracer_pin(d->skel, d->paths.pin, d->reuse.rules);
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
	err = daemon_loaders_start(d);
	if (err)
		return err;
	d->rb = ring_buffer__new(bpf_map__fd(d->skel->maps.events), records_on_record, d, NULL);
	if (!d->rb) {
		p_err("cannot open the ring buffer: %s", strerror(errno));
		return -errno;
	}
	/* an older version's task storage: copied before the switch, and what it wrote until then after */
	err = migrate_old_tasks(d);
	if (err)
		return err;
	err = kernel_load_before_switch(d);
	if (err)
		return err;
	/* the context names, kept from here: no task carries this policy's ids before the switch */
	daemon_contexts_pin(d);
	/* from here our programs act, and any older copy still attached does not */
	err = tracer_activate(d->skel);
	if (err) {
		p_err("cannot switch to the new programs: %s", strerror(-err));
		return err;
	}
	d->activated = true;
	scopes_recheck(d);
	err = migrate_old_tasks(d);
	if (err)
		return err;
	if (d->reuse.old_tasks_fd >= 0) {
		close(d->reuse.old_tasks_fd);
		d->reuse.old_tasks_fd = -1;
	}
	err = kernel_start(d);
	if (err)
		return err;
	/* what ran before us: depths, and agents already running, from /proc */
	err = tasks_seed(bpf_map__fd(d->skel->maps.tasks), d->policy, &d->seeded);
	if (err)
		p_warn("cannot read or mark the running processes: %s (their depths or contexts stay unknown; "
		       "the start record's seeded counts them)", strerror(-err));
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
		struct ring_buffer *rb = ring_buffer__new(d->reuse.old_events_fd, records_on_record, d, NULL);

		if (rb) {
			d->fc.boot_to_real = clock_boot_to_real();
			while (ring_buffer__consume(rb) == -EAGAIN)
				d->batch_records = 0;
			ring_buffer__free(rb);
		}
		close(d->reuse.old_events_fd);
		d->reuse.old_events_fd = -1;
	}
	/*
	 * Losses the previous daemon reported are not reported again, where
	 * its counters go on here. Counters of another layout (an older
	 * version's) are not taken over: the new map starts at 0 and every
	 * loss in it is new (its figure taken as reported hid the losses
	 * until they passed it, and the difference could wrap).
	 */
	if (d->reuse.counters) {
		json_t *saved = json_object_get(state, "lost_reported");
		uint64_t total;

		daemon_read_counters(d, &c);
		total = c.lost_exec + c.lost_exec_failed + c.lost_other + c.lost_exit;
		d->lost_reported = total;
		if (json_is_integer(saved) && (uint64_t)json_integer_value(saved) < total)
			d->lost_reported = json_integer_value(saved);
	}
}

/*
 * The sessions module's records: as they are in JSON, a comment line on a
 * terminal. Written within the drain delay like the tracer's: a session
 * whose execs all wait (approvals) brings no ring record to flush them.
 */
static void sessions_out(void *arg, const char *json, size_t len, const char *text)
{
	struct daemon *d = arg;

	if (d->text)
		emit_comment(d, "%s", text);
	else {
		sbuf_put(output_buf(d->out), json, len);
		output_end(d->out, EG_REC_META);
	}
	records_drain_soon(d);
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
	so.cgroups = d->cgroups;
	so.global = &d->policy;
	so.out.emit = sessions_out;
	so.out.arg = d;
	so.teller_fd = d->teller_fd;	/* theirs now, whatever comes */
	d->teller_fd = -1;
	return sessions_new(&so, &d->sessions);
}

static bool procs_in_session(void *arg, const struct ctl_conn *c)
{
	return daemon_peer_in_session(arg, c);
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
	po.tasks_fd = bpf_map__fd(d->skel->maps.tasks);
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
	daemon_print_diags(&diags, false);
	eg_diags_free(&diags);
	if (err) {
		p_err("policy %s does not load; fix the errors above ('execgate policy check %s')",
		      d->o.policy_path, d->o.policy_path);
		return err;
	}
	{
		struct eg_rule_info ri;
		char mnt[PATH_MAX];
		size_t i;

		for (i = 0; i < policy_rule_count(d->policy); i++)
			if (!policy_rule_info(d->policy, i, &ri) && ri.n_cgroups && cgroup2_mount(mnt, sizeof(mnt))) {
				p_warn("policy %s: rule '%s' has cgroups, but no cgroup v2 hierarchy is mounted here "
				       "(cgroup v1 alone): rules with cgroups never apply", d->o.policy_path, ri.name);
				break;
			}
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

/*
 * --check: what this command line's start would load, loaded and let go:
 * the policy, its compilation for the kernel (--enforce), the API's token
 * file, the programs as this kernel verifies and attaches them (switched
 * off: tracer_check()). No lock, pin, output or socket: a daemon running
 * on the same pins is left alone (its handover runs this with the binary
 * it is about to become).
 */
static int daemon_check(struct daemon *d)
{
	struct tracer_opts to;
	int err;

	d->fc.host_mnt_ns = ns_inode("mnt");
	d->fc.host_pid_ns = ns_inode("pid");
	err = load_policy(d);
	if (!err)
		err = daemon_api_check(d);
	if (!err)
		err = probe_kernel(d);
	if (!err)
		err = tracer_options(d, &to);
	if (!err) {
		err = tracer_check(&to);
		if (err)
			tracer_failed(err);
	}
	if (!err)
		printf("execgate daemon --check: this command line would start a daemon here (%s%s; the programs "
		       "load and attach)\n", d->o.policy_path ? "policy " : "no policy",
		       d->o.policy_path ? d->o.policy_path : "");
	kernel_free(d);
	for (size_t i = 0; i < d->o.n_cgroups; i++)
		free(d->cg_paths[i]);
	policy_free(d->policy);
	return err ? 1 : 0;
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
	bool keep_loop, keep_rules = false;
	size_t i;

	d.o = *o;
	d.inst.dir_fd = -1;
	d.policy_fd = -1;
	d.teller_fd = -1;
	d.started_real_ns = clock_real_ns();
	d.started_mono_ms = eg_mono_ms();
	records_stage_stats = getenv("EXECGATE_STAGE_STATS") && !strcmp(getenv("EXECGATE_STAGE_STATS"), "1");
	signal(SIGPIPE, SIG_IGN);
	/* children are waited for (a handover's check): not reaped behind our back */
	signal(SIGCHLD, SIG_DFL);
	if (o->check)
		return daemon_check(&d);
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

	/*
	 * The probes fork a child (seccomp's listener flags): done while the
	 * daemon is small, before its tables are made, or every page of them
	 * the daemon writes afterwards is copied once (a fault each, and a
	 * TLB flush on every CPU the daemon's threads ran on).
	 */
	err = probe_kernel(&d);
	if (err)
		goto cleanup;
	/* the sessions' helper process, forked while the daemon is this small (sessions_teller_fork) */
	if (!strcmp(d.mode.session_enforcement, "seccomp_notify"))
		d.teller_fd = sessions_teller_fork();

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
	service_check_cut_line(d.out);
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
	/* the names context ids had under the previous daemon (an older one's pins may lack them) */
	json_array_foreach(json_object_get(state, "ctx_names"), i, v)
		if (i <= EG_POLICY_MAX_CONTEXTS && json_is_string(v) && !d.ctx_names[i])
			d.ctx_names[i] = strdup(json_string_value(v));
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
	if (daemon_api_start(&d))
		goto cleanup;
	/*
	 * Edge-triggered: the ring's wakeups, not its level (records.c); the
	 * drain timer is armed by a wakeup, never periodic. Whatever came
	 * before (a handover's queue) is drained at once.
	 */
	err = loop_add_fd(d.loop, ring_buffer__epoll_fd(d.rb), EPOLLIN | EPOLLET, records_on_ring, &d, NULL);
	if (!err)
		err = loop_add_timer(d.loop, 1, 0, records_on_flush_timer, &d, &d.flush_timer);
	if (!err)
		d.drain_armed = true;
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
	/*
	 * What the start used and let go (libbpf's parse of the kernel's BTF,
	 * the probes, the policy's compilation: 20 MB of heap) goes back to
	 * the system; the heap would keep it resident otherwise.
	 */
	malloc_trim(0);

	err = loop_run(d.loop, -1, NULL, NULL);
	if (err)
		p_err("event loop failed: %s", strerror(-err));
	notify_send("STOPPING=1");

	/* No session answers once the programs that check its tickets are gone. */
	sessions_end_all(d.sessions);
	/* Stop new records, then take everything still queued. */
	kernel_stop(&d);
	tracer_detach(d.skel);
	records_stop_drain(&d);
	emit_stop(&d);
	if (output_flush(d.out))
		p_warn("the stop record could not be written to %s: %s; %" PRIu64 " records were not written in all",
		       output_path(d.out), strerror(-output_stats(d.out)->last_error), output_dropped_total(d.out));
	rc = err ? 1 : 0;
	metrics_textfile_stop(&d);

cleanup:
	json_decref(state);
	handoff_cancel(&d);
	if (d.teller_fd >= 0)
		close(d.teller_fd);
	/* its thread calls into the control server: it goes first */
	daemon_api_stop(&d);
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
	/*
	 * A start that failed (or a stop) after the switch to our programs.
	 * Before our links were pinned, the copy we switched away from (a
	 * --persist or killed daemon's, pinned; a handover's) acts again, with
	 * its pins: nothing enforcing at all would be the other way. After,
	 * rules that were in force before the start stay, with every pin;
	 * else a failed start is a stop: --persist keeps the rules in force
	 * with every pin, else the rules go with their links. A start that
	 * failed before the switch leaves an earlier copy's pins as they are.
	 */
	if (d.skel && d.activated && !d.k.links_touched) {
		err = tracer_deactivate(d.skel, d.reuse.prev_gen);
		if (err)
			p_warn("cannot hand back to the programs before: %s", strerror(-err));
	} else if (d.skel && d.activated && !d.k.stopped && d.k.on && d.reuse.control) {
		/* rules were in force before this start (--persist, kill -9, a handover): they stay */
		keep_rules = true;
		p_warn("the start failed; kernel rules stay in force, as before it (this daemon's if it had "
		       "switched them on: 'execgate status -p %s' shows which; 'execgate unload -p %s' removes "
		       "them)", d.paths.pin, d.paths.pin);
	} else if (d.skel && d.activated) {
		kernel_stop(&d);
	}
	/* --persist: the rules, their maps and links stay for `execgate unload` */
	if (d.skel && !(d.k.on && d.o.persist) && !keep_rules && (d.k.links_touched || !d.reuse.control)) {
		tracer_unpin(d.skel, d.paths.pin, false);
		/* rule maps of our own, not pinned yet: the pins left are the copy before's, whose links went */
		if (!d.reuse.rules)
			tracer_unpin_rules(d.paths.pin);
	}
	kernel_free(&d);
	tracer_destroy(d.skel);
	decoder_free(&d.dec);
	for (size_t i = 0; i < d.o.n_cgroups; i++)
		free(d.cg_paths[i]);
	decoder_free(&d.dec_held);
	hold_free(d.hold);
	policy_free(d.policy);
	for (size_t i = 0; i <= EG_POLICY_MAX_CONTEXTS; i++)
		free(d.ctx_names[i]);
	cgroup_cache_free(d.cgroups);
	containers_free(d.containers);
	lineage_free(d.lineage);
	daemon_loaders_free(&d);
	judge_free(&d.judge);
	output_close(d.out);
	daemon_shipping_free(&d);
	if (!keep_loop)
		loop_free(d.loop);
	instance_unlock(&d.inst);
	records_stage_report();
	return rc;
}
