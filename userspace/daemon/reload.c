// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The daemon's policy: its record (at start and at each reload) and a
 * reload (SIGHUP, or the control socket's reload op): the new policy is
 * loaded, compiled for the kernel where the kernel enforces or tracks
 * contexts, and takes over only when every part of it does.
 */
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
#include "daemon/watch.h"
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


void daemon_print_diags(const struct eg_diags *diags, bool errors_only)
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

void daemon_emit_policy(struct daemon *d, bool reload, bool refresh)
{
	struct jsonw w;

	if (d->text) {
		emit_comment(d, "policy %s%s: %zu rules, sha256 %s", d->o.policy_path,
			     refresh ? " loaded again (a file it names changed)" : reload ? " reloaded" : "",
			     policy_rule_count(d->policy),
			     policy_sha256(d->policy));
		return;
	}
	meta_open_daemon(&w, output_buf(d->out), "policy");
	jsonw_string_field(&w, "path", d->o.policy_path);
	jsonw_string_field(&w, "sha256", policy_sha256(d->policy));
	jsonw_uint_field(&w, "rules", policy_rule_count(d->policy));
	jsonw_bool_field(&w, "reload", reload);
	if (refresh)
		jsonw_bool_field(&w, "refresh", true);
	meta_close(&w, d->out);
}

/*
 * Running tasks carry their context's id (its place in "contexts:"), not
 * its name: a new policy that gave an id another name than it had would
 * move agents under another context's rules and name. That includes an id
 * freed by a reload that dropped the last contexts: tasks may still carry
 * it. Contexts added at the end keep every id. The names outlive a daemon
 * with the ids ("ctxnames", kept with "tasks"), so a start is held to them
 * as a reload is. Returns true (why filled) if p renames one.
 */
static bool contexts_renumbered(const struct daemon *d, const struct eg_policy *p, bool start, char *why,
				size_t len)
{
	size_t m = policy_context_count(p);
	struct eg_context_info b;

	for (uint32_t id = 1; id <= m && id <= EG_POLICY_MAX_CONTEXTS; id++) {
		const char *was = d->ctx_names[id];

		if (!was || policy_context_info(p, id, &b) || !strcmp(was, b.name))
			continue;
		if (start)
			snprintf(why, len, "contexts: context %u is '%s' in this policy but was '%s' under an "
				 "earlier daemon, and processes it marked keep their context's number (pinned "
				 "under %s): add contexts at the end or drop the last ones, not reorder, rename or "
				 "reuse a number ('execgate unload -p %s' forgets every number, and every exec "
				 "depth)", id, b.name, was, d->paths.pin, d->paths.pin);
		else
			snprintf(why, len, "contexts: context %u is '%s' in the new policy but was '%s' under "
				 "this daemon (or one before it on these pins), and running agents keep their "
				 "context's number: a reload may add "
				 "contexts at the end or drop the last ones, not reorder, rename or reuse a number",
				 id, b.name, was);
		return true;
	}
	return false;
}

void daemon_contexts_pin(struct daemon *d)
{
	struct eg_ctxname n;

	for (uint32_t id = 1; d->skel && id <= EG_POLICY_MAX_CONTEXTS; id++) {
		if (!d->ctx_names[id])
			continue;
		memset(&n, 0, sizeof(n));
		snprintf(n.name, sizeof(n.name), "%s", d->ctx_names[id]);
		if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.ctxnames), &id, &n, BPF_ANY))
			p_warn("cannot keep context %u's name in the kernel: %s (a daemon started after this "
			       "one could not tell a policy that renumbers contexts)", id, strerror(errno));
	}
}

bool daemon_contexts_note(struct daemon *d, const struct eg_policy *p)
{
	size_t m = policy_context_count(p);
	struct eg_context_info b;
	bool added = false;

	for (uint32_t id = 1; id <= m && id <= EG_POLICY_MAX_CONTEXTS; id++)
		if (!d->ctx_names[id] && !policy_context_info(p, id, &b)) {
			d->ctx_names[id] = strdup(b.name);
			added = true;
		}
	return added;
}

int daemon_contexts_start(struct daemon *d)
{
	int fd = bpf_map__fd(d->skel->maps.ctxnames);
	struct eg_context_info b;
	struct eg_ctxname n;
	char why[2 * PATH_MAX + 1024];
	bool known = false;

	/* the names an earlier daemon gave the ids running tasks may carry */
	for (uint32_t id = 1; d->reuse.ctxnames && id <= EG_POLICY_MAX_CONTEXTS; id++)
		if (!d->ctx_names[id] && !bpf_map_lookup_elem(fd, &id, &n) && n.name[0])
			d->ctx_names[id] = strndup(n.name, sizeof(n.name) - 1);
	for (uint32_t id = 1; id <= EG_POLICY_MAX_CONTEXTS; id++)
		known |= d->ctx_names[id] != NULL;
	if (d->reuse.tasks && !d->reuse.ctxnames && !known && policy_context_count(d->policy))
		p_warn("the running processes' task storage comes from a daemon that kept no names for its "
		       "context numbers (an older version): this start cannot tell whether the policy renumbers "
		       "contexts; keep their order");
	if (contexts_renumbered(d, d->policy, true, why, sizeof(why))) {
		if (d->o.takeover_fd < 0) {
			p_err("%s", why);
			return -EINVAL;
		}
		/* a handover runs the policy in force, byte for byte: names that disagree were stale */
		p_warn("the context names pinned under %s disagree with the policy in force, which this "
		       "handover keeps: %s", d->paths.pin, why);
		for (uint32_t id = 1; id <= policy_context_count(d->policy) && id <= EG_POLICY_MAX_CONTEXTS; id++)
			if (!policy_context_info(d->policy, id, &b) && d->ctx_names[id] &&
			    strcmp(d->ctx_names[id], b.name)) {
				free(d->ctx_names[id]);
				d->ctx_names[id] = NULL;
			}
	}
	daemon_contexts_note(d, d->policy);
	return 0;
}

static void on_files_changed(void *arg)
{
	daemon_refresh_policy(arg);
}

/*
 * A policy's files are watched while it is in force: 2 s after a change
 * in their directories it is loaded again from its own text, and when the
 * files it finds differ (a package upgrade renamed a new file into place:
 * the deny would not meet it under another path, the allow would refuse
 * the new compiler, the kernel would judge a bypassed program by the
 * rules) that load takes its place, in the kernel too, as a reload would.
 */
static void rewatch(struct daemon *d)
{
	int err;

	files_watch_free(d->files);
	d->files = d->policy && d->loop ? files_watch(d->loop, d->policy, on_files_changed, d, &err) : NULL;
	if (d->policy && d->loop && !d->files && err)
		p_warn("cannot watch the files the policy names (%s): after an upgrade replaces one, "
		       "'execgate policy reload' binds the rules to it", strerror(-err));
}

void daemon_policy_in_force(struct daemon *d, bool reload, bool refresh)
{
	daemon_emit_policy(d, reload, refresh);
	rewatch(d);
}

/* p (loaded) in place of the policy in force, unless its contexts' ids or the kernel refuse it. */
static int take(struct daemon *d, struct eg_policy *p, struct eg_diags *dg, uint32_t old_seq, bool refresh)
{
	char why[512];
	struct jsonw w;
	int err = 0;

	if (contexts_renumbered(d, p, false, why, sizeof(why))) {
		d->st.policy_reload_failures++;
		policy_free(p);
		err = -EINVAL;
		p_warn("policy reload refused, keeping the previous policy: %s", why);
		eg_diags_add_error(dg, d->o.policy_path, why);
		if (!d->text) {
			meta_open_daemon(&w, output_buf(d->out), "policy_error");
			jsonw_string_field(&w, "path", d->o.policy_path);
			jsonw_string_field(&w, "kept_sha256", policy_sha256(d->policy));
			jsonw_string_field(&w, "error", why);
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
						: d->k.on ? "--enforce: the kernel rules could not be loaded"
							  : "the kernel could not load the policy's contexts");
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
		if (daemon_contexts_note(d, p))
			daemon_contexts_pin(d);
		d->st.policy_reloads++;
		/*
		 * Agents already running are put in the contexts the new policy
		 * names, as at a start: otherwise only an identity exec after the
		 * reload would enter one, and a reload would hold less than a
		 * restart with the same policy.
		 */
		if (policy_context_count(p) && d->skel) {
			struct seed_stats ss = {};
			int serr = tasks_seed(bpf_map__fd(d->skel->maps.tasks), p, &ss);

			if (serr || ss.failed)
				p_warn("policy reload: running agents not all put in their contexts (%u failed): %s",
				       ss.failed, serr ? strerror(-serr) : "the kernel refused");
		}
		daemon_policy_in_force(d, true, refresh);
	}
	return err;
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
		daemon_print_diags(dg, true);
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
	} else {
		err = take(d, p, dg, old_seq, false);
	}
	output_flush(d->out);
	eg_diags_free(&local);
	notify_send("READY=1");
	return err;
}

int daemon_refresh_policy(struct daemon *d)
{
	struct eg_diags dg = {};
	struct eg_policy *p = NULL;
	const char *src;
	size_t len;
	int err;

	if (!d->policy || d->stopping)
		return 0;
	src = policy_source(d->policy, &len);
	err = policy_load_buf(src, len, d->o.policy_path, &p, &dg);
	if (!err && policy_files_same(d->policy, p)) {
		policy_free(p);
		/* the same files; a directory made meanwhile (a package's, not installed yet) is watched now */
		rewatch(d);
	} else if (!err) {
		p_info("a file the policy names changed: the policy loaded again");
		err = take(d, p, &dg, d->k.seq, true);
		output_flush(d->out);
	} else {
		p_warn("a file the policy names changed, and the policy in force no longer loads: kept");
	}
	eg_diags_free(&dg);
	return err;
}
