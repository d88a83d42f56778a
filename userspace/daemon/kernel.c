// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * `execgate daemon --enforce`: the policy compiled into the kernel rule
 * maps, the layer that acts on them (BPF LSM at bprm_check_security where
 * the kernel has it, else a kill at sched_process_exec), links pinned so
 * the rules outlive the daemon, reloads that switch the rules in one
 * store, and the kernel's verdicts in the events.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "daemon/daemon_int.h"
#include "enforce/compile.h"
#include "enforce/kmaps.h"
#include "execgate.skel.h"
#include "trace/cgroups.h"
#include "util/jsonw.h"
#include "util/log.h"

static void kmaps_of(struct execgate_bpf *skel, struct kmaps *m)
{
	m->krules = bpf_map__fd(skel->maps.krules);
	m->kindex = bpf_map__fd(skel->maps.kindex);
	m->kmember = bpf_map__fd(skel->maps.kmember);
	m->kglobs = bpf_map__fd(skel->maps.kglobs);
	m->kconf = bpf_map__fd(skel->maps.kconf);
	m->kstate = bpf_map__fd(skel->maps.kstate);
	m->kctx = bpf_map__fd(skel->maps.kctx);
}

/* "rule NAME (line N): why" for each rule the kernel cannot hold, one a line. */
static void print_left_out(const struct eg_policy *p, const struct kc_prog *k, bool error)
{
	size_t i;

	for (i = 0; i < k->n_info; i++) {
		struct eg_rule_info ri;

		if (k->info[i].kernel)
			continue;
		policy_rule_info(p, i, &ri);
		if (error)
			p_err("  rule '%s' (line %d, %s): %s", ri.name, ri.line,
			      eg_decision_name(ri.decision), k->info[i].why);
		else
			p_warn("  rule '%s' (line %d, %s): %s", ri.name, ri.line,
			       eg_decision_name(ri.decision), k->info[i].why);
	}
	if (k->bypass_left_out) {
		if (error)
			p_err("  %s", k->bypass_why);
		else
			p_warn("  %s", k->bypass_why);
	}
	if (k->ident_left_out) {
		if (error)
			p_err("  %s", k->ident_why);
		else
			p_warn("  %s", k->ident_why);
	}
}

/*
 * Compiles p for the kernel. A policy whose denies the kernel cannot all
 * hold is refused unless --allow-partial. Returns 0, or -EPERM (refused),
 * or another -errno.
 */
static int compile(struct daemon *d, const struct eg_policy *p, struct kc_prog **ret)
{
	int err = kcompile(p, d->fc.host_mnt_ns, true, ret);

	if (err) {
		p_err("--enforce: cannot compile %s for the kernel: %s%s", d->o.policy_path, strerror(-err),
		      err == -E2BIG ? " (too many rules, names or globs for the kernel maps)" : "");
		return err;
	}
	if ((*ret)->partial && !d->o.allow_partial) {
		p_err("--enforce: the kernel cannot hold every rule of %s that denies or comes before a deny:",
		      d->o.policy_path);
		print_left_out(p, *ret, true);
		p_err("rewrite them for the kernel (policy/README.md), or add --allow-partial to enforce "
		      "them in supervised sessions only");
		kc_prog_free(*ret);
		*ret = NULL;
		return -EPERM;
	}
	if ((*ret)->n_left_out || (*ret)->bypass_left_out) {
		p_warn("--enforce: these stay out of the kernel (sessions and the audit log apply them):");
		print_left_out(p, *ret, false);
	}
	return 0;
}

/*
 * Without --enforce, a policy's contexts still go to the kernel: the
 * identities (which task enters which context) and nothing that refuses;
 * the rules stay out (EG_KC_RULES unset) and so does EG_KC_ENFORCE.
 */
static int contexts_only(struct daemon *d, const struct eg_policy *p, struct kc_prog **ret)
{
	int err;

	*ret = NULL;
	if (!p || !policy_context_count(p)) {
		d->k.ctx_only = false;
		return 0;
	}
	/* a failure leaves ctx_only as it was: the kernel keeps the contexts it holds */
	err = kcompile(p, d->fc.host_mnt_ns, false, ret);
	if (err) {
		p_err("cannot compile the contexts of %s for the kernel: %s", d->o.policy_path, strerror(-err));
		return err;
	}
	if ((*ret)->ident_left_out)
		p_warn("%s: the kernel cannot match every identity, so these tasks do not enter "
		       "their context: %s", d->o.policy_path, (*ret)->ident_why);
	d->k.ctx_only = true;
	return 0;
}

int kernel_prepare(struct daemon *d, struct tracer_opts *to)
{
	struct daemon_kernel *k = &d->k;
	int err;

	if (!d->o.enforce)
		return contexts_only(d, d->policy, &k->prog);
	err = compile(d, d->policy, &k->prog);
	if (err)
		return err;
	if (d->feats.r[EG_FEAT_BPF_LSM].available) {
		k->layer = "kernel-lsm";
		/* per cgroup where the kernel can scope it itself */
		if (d->o.n_cgroups && d->feats.r[EG_FEAT_BPF_LSM_CGROUP].available) {
			k->lsm_cgroup = true;
			to->lsm_cgroup = true;
		} else {
			to->lsm = true;
		}
	} else if (d->feats.r[EG_FEAT_SEND_SIGNAL].available) {
		k->layer = "kernel-kill";
	} else {
		p_err("--enforce: this kernel can neither refuse an exec (BPF LSM: %s) nor kill it "
		      "before it runs (bpf_send_signal: %s)", d->feats.r[EG_FEAT_BPF_LSM].reason,
		      d->feats.r[EG_FEAT_SEND_SIGNAL].reason);
		return -EOPNOTSUPP;
	}
	k->on = true;
	return 0;
}

static int attach_cgroups(struct daemon *d)
{
	struct daemon_kernel *k = &d->k;
	size_t i;

	for (i = 0; i < d->o.n_cgroups; i++) {
		char path[PATH_MAX];
		int fd, err;

		if (cgroup_dir(d->o.cgroups[i], path, sizeof(path))) {
			p_err("--cgroup %s: not a cgroup v2 directory", d->o.cgroups[i]);
			return -ENOENT;
		}
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			p_err("--cgroup %s: %s", path, strerror(errno));
			return err;
		}
		k->cg_links[k->n_cg_links] = bpf_program__attach_cgroup(d->skel->progs.enforce_bprm_cgroup, fd);
		err = libbpf_get_error(k->cg_links[k->n_cg_links]);
		close(fd);
		if (err) {
			k->cg_links[k->n_cg_links] = NULL;
			p_err("--enforce: cannot attach the BPF LSM program to cgroup %s: %s", path,
			      strerror(-err));
			return err;
		}
		k->n_cg_links++;
	}
	return 0;
}

int kernel_scope_back(struct daemon *d, size_t i, bool pin)
{
	struct daemon_kernel *k = &d->k;
	struct bpf_link *l;
	char path[PATH_MAX];
	int fd, err;

	if (!k->lsm_cgroup || i >= (size_t)k->n_cg_links)
		return 0;
	if (cgroup_dir(d->o.cgroups[i], path, sizeof(path)))
		return -ENOENT;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	l = bpf_program__attach_cgroup(d->skel->progs.enforce_bprm_cgroup, fd);
	err = libbpf_get_error(l);
	close(fd);
	if (err)
		return err;
	/* the old cgroup is gone, and its link with it */
	bpf_link__destroy(k->cg_links[i]);
	k->cg_links[i] = l;
	/* at the start, kernel_start() pins them all, or hands the last copy's pins back */
	return pin ? tracer_pin_links(d->skel, d->paths.pin, k->cg_links, k->n_cg_links) : 0;
}

int kernel_load_before_switch(struct daemon *d)
{
	struct daemon_kernel *k = &d->k;
	int err;

	/* shared maps: the rules in force now stay until ours replace them, after the switch */
	if (d->reuse.rules || (!k->on && !k->ctx_only))
		return 0;
	kmaps_of(d->skel, &k->km);
	if (k->lsm_cgroup) {
		err = attach_cgroups(d);
		if (err)
			return err;
	}
	err = kmaps_continue(&k->km, d->reuse.old_kseq);
	if (!err)
		err = kmaps_load(&k->km, k->prog, k->on, &k->seq);
	if (err) {
		p_err("%s: %s", k->on ? "--enforce: cannot load the kernel rules" :
		      "cannot load the policy's contexts into the kernel", strerror(-err));
		return err;
	}
	k->loaded = true;
	return 0;
}

/* Rule maps of our own: pinned once ours are in force (the pins named the copy before's until then). */
static int pin_rules(struct daemon *d)
{
	int err;

	if (d->reuse.rules)
		return 0;
	err = tracer_pin_rules(d->skel, d->paths.pin);
	if (err)
		p_err("cannot pin the kernel rules' maps under %s: %s", d->paths.pin, strerror(-err));
	return err;
}

int kernel_start(struct daemon *d)
{
	struct daemon_kernel *k = &d->k;
	struct kmaps_status st;
	bool touched;
	int err;

	kmaps_of(d->skel, &k->km);
	if (!k->on) {
		/* rules an earlier daemon left (--persist) are not ours to keep enforcing */
		if (!k->loaded && !kmaps_status(&k->km, &st) && st.loaded) {
			p_warn("kernel rules left in force by an earlier daemon (policy sha256 %s) are "
			       "removed: this daemon runs without --enforce", st.conf.sha256);
			kmaps_unload(&k->km);
		} else if (!d->reuse.rules && d->reuse.old_kseq) {
			p_warn("kernel rules or contexts left by an earlier daemon (of another version) are "
			       "removed: this daemon runs without --enforce");
		}
		k->links_touched = true;
		tracer_unpin_links(d->paths.pin);
		if (k->ctx_only && !k->loaded) {
			err = kmaps_load(&k->km, k->prog, false, &k->seq);
			if (err) {
				p_err("cannot load the policy's contexts into the kernel: %s", strerror(-err));
				return err;
			}
		}
		return pin_rules(d);
	}
	if (k->lsm_cgroup && !k->loaded) {
		err = attach_cgroups(d);
		if (err)
			return err;
	}
	/*
	 * Pinned, the links (and so the rules) outlive this process: first
	 * under other names, before the rules switch, so that a pin that fails
	 * leaves the copy before to act again with its own rules (cleanup).
	 */
	err = tracer_pin_links_prepare(d->skel, d->paths.pin, k->cg_links, k->n_cg_links);
	if (err) {
		p_err("--enforce: cannot pin the links under %s: %s", d->paths.pin, strerror(-err));
		return err;
	}
	if (!k->loaded) {
		err = kmaps_load(&k->km, k->prog, true, &k->seq);
		if (err) {
			tracer_pin_links_abort(d->skel, d->paths.pin, k->cg_links, k->n_cg_links);
			p_err("--enforce: cannot load the kernel rules: %s", strerror(-err));
			return err;
		}
		/* shared maps switched to our rules: handing back would give them to the copy before */
		k->links_touched = true;
	}
	/* from the first rename on, a failed start is a stop (or keeps the rules it found) */
	err = tracer_pin_links_commit(d->skel, d->paths.pin, k->cg_links, k->n_cg_links, &touched);
	k->links_touched |= touched;
	if (err) {
		p_err("--enforce: cannot pin the links under %s: %s", d->paths.pin, strerror(-err));
		if (!k->links_touched)
			tracer_pin_links_abort(d->skel, d->paths.pin, k->cg_links, k->n_cg_links);
		else
			pin_rules(d);	/* the pins name the maps of the copy that acts */
		return err;
	}
	return pin_rules(d);
}

int kernel_reload(struct daemon *d, const struct eg_policy *p)
{
	struct daemon_kernel *k = &d->k;
	struct kc_prog *prog = NULL;
	uint32_t seq;
	int err;

	if (!k->on) {
		/* contexts only: the new policy's (none: the kernel holds nothing) */
		err = contexts_only(d, p, &prog);
		if (err)
			return err;
		if (!prog) {
			if (k->prog)
				kmaps_unload(&k->km);
			kc_prog_free(k->prog);
			k->prog = NULL;
			k->seq = 0;
			return 0;
		}
	} else {
		err = compile(d, p, &prog);
	}
	if (err)
		return err;
	err = kmaps_load(&k->km, prog, k->on, &seq);
	if (err) {
		p_err("--enforce: cannot load the new kernel rules (the previous ones stay): %s",
		      strerror(-err));
		kc_prog_free(prog);
		return err;
	}
	kc_prog_free(k->prog);
	k->prog = prog;
	k->seq = seq;
	return 0;
}

void kernel_keep_policy(struct daemon *d, struct eg_policy *old, uint32_t old_seq)
{
	struct daemon_kernel *k = &d->k;
	unsigned int i = k->next_kept++ % DAEMON_KEPT_POLICIES;

	policy_free(k->kept[i].p);
	k->kept[i].p = old;
	k->kept[i].seq = old_seq;
}

void kernel_stop(struct daemon *d)
{
	struct daemon_kernel *k = &d->k;
	int i;

	if (k->stopped)
		return;
	k->stopped = true;
	if (!k->on) {
		if (k->ctx_only)
			kmaps_unload(&k->km);
		return;
	}
	if (d->o.persist) {
		p_info("kernel rules stay in force (--persist); 'execgate unload -p %s' removes them",
		       d->paths.pin);
	} else {
		kmaps_unload(&k->km);
		tracer_unpin_links(d->paths.pin);
	}
	for (i = 0; i < k->n_cg_links; i++)
		bpf_link__destroy(k->cg_links[i]);
	k->n_cg_links = 0;
}

void kernel_free(struct daemon *d)
{
	kc_prog_free(d->k.prog);
	d->k.prog = NULL;
	for (unsigned int i = 0; i < DAEMON_KEPT_POLICIES; i++) {
		policy_free(d->k.kept[i].p);
		d->k.kept[i].p = NULL;
	}
}

const struct eg_policy *kernel_policy_of(const struct daemon *d, uint32_t seq)
{
	unsigned int i;

	if (!seq)
		return NULL;
	if (seq == d->k.seq)
		return d->policy;
	for (i = 0; i < DAEMON_KEPT_POLICIES; i++)
		if (d->k.kept[i].p && d->k.kept[i].seq == seq)
			return d->k.kept[i].p;
	return NULL;
}

const char *eg_reason_name(uint32_t reason)
{
	switch (reason) {
	case EG_REASON_RULE: return "kernel-rule";
	case EG_REASON_KERNEL_ERROR: return "kernel-error";
	case EG_REASON_NO_TICKET: return "no-ticket";
	case EG_REASON_TICKET_FILE:
	case EG_REASON_TICKET_ARGV:
	case EG_REASON_TICKET_SESSION:
	case EG_REASON_TICKET_SCRIPT:
	case EG_REASON_TICKET_CHAIN:
	case EG_REASON_TICKET_LOADER: return "ticket-mismatch";
	case EG_REASON_NO_PIN: return "not-pinned";
	case EG_REASON_CONTEXT_LIMIT: return "context-limit";
	default: return NULL;
	}
}

void kernel_annotate(struct daemon *d, const struct eg_record *r, struct eg_annotation *a)
{
	const struct eg_event *h = &r->h;
	const struct eg_policy *p;
	struct eg_rule_info ri;
	bool acted;

	if (!h->klayer)
		return;
	a->kernel_layer = h->klayer == EG_KL_LSM ? "kernel-lsm" : "kernel-kill";
	a->kernel_decision = h->kdecision ? kc_decision_name(h->kdecision) : NULL;
	a->kernel_rule = NULL;
	p = kernel_policy_of(d, h->kseq);
	if (h->krule && p && !policy_rule_info(p, h->krule - 1, &ri))
		a->kernel_rule = ri.name;
	acted = (h->type != EG_EVENT_EXEC_FAILED && (h->flags & EG_F_KILLED) &&
		 (h->reason == EG_REASON_RULE || h->reason == EG_REASON_KERNEL_ERROR)) ||
		(h->type == EG_EVENT_EXEC_FAILED && h->klayer == EG_KL_LSM && h->err == -EPERM);
	if (!acted)
		return;
	/* what the kernel did */
	a->action = h->type != EG_EVENT_EXEC_FAILED ? "killed" : "blocked";
	a->layer = a->kernel_layer;
	a->reason = eg_reason_name(h->reason);
	/*
	 * ... and the decision agrees with it: the kernel could not judge
	 * (error), or its rule's (the policy's verdict stands where it
	 * refuses too, a session's say).
	 */
	if (h->reason == EG_REASON_KERNEL_ERROR) {
		a->decision = "error";
		a->rule = "on_error";
		a->message = "the kernel could not judge this exec";
		return;
	}
	if (a->decision && (!strcmp(a->decision, "deny") || !strcmp(a->decision, "approval")))
		return;
	if (h->krule && p && !policy_rule_info(p, h->krule - 1, &ri)) {
		a->decision = eg_decision_name(ri.decision);
		a->rule = ri.name;
		a->message = ri.message;
	} else if (h->reason == EG_REASON_KERNEL_ERROR) {
		a->decision = "error";
		a->rule = "on_error";
		a->message = "the kernel could not judge this exec";
	} else if (h->reason == EG_REASON_RULE) {
		a->decision = p ? eg_decision_name(policy_settings(p)->default_decision) : "deny";
	} else {
		a->decision = "deny";
	}
}

void kernel_start_record(struct daemon *d, struct jsonw *w)
{
	struct daemon_kernel *k = &d->k;
	size_t i;

	/* the agent contexts the kernel tracks (with or without --enforce) */
	if (k->prog && k->prog->n_ctx) {
		jsonw_key(w, "contexts");
		jsonw_start_array(w);
		for (i = 1; i <= k->prog->n_ctx; i++) {
			struct eg_context_info ci;

			if (policy_context_info(d->policy, i, &ci))
				continue;
			jsonw_start_object(w);
			jsonw_string_field(w, "name", ci.name);
			jsonw_uint_field(w, "identities", ci.n_identities);
			jsonw_key(w, "max_depth");
			if (ci.max_depth >= 0)
				jsonw_int(w, ci.max_depth);
			else
				jsonw_null(w);
			jsonw_key(w, "max_consecutive_shells");
			if (ci.max_shells >= 0)
				jsonw_int(w, ci.max_shells);
			else
				jsonw_null(w);
			jsonw_bool_field(w, "entered_in_kernel", !k->prog->ident_left_out);
			jsonw_bool_field(w, "limits_enforced", k->on);
			jsonw_end_object(w);
		}
		jsonw_end_array(w);
	}
	if (!k->on)
		return;
	jsonw_key(w, "kernel");
	jsonw_start_object(w);
	jsonw_string_field(w, "layer", k->layer);
	jsonw_bool_field(w, "per_cgroup", k->lsm_cgroup);
	jsonw_uint_field(w, "rules", k->prog->n_rules - k->prog->conf.n_ident);
	jsonw_bool_field(w, "partial", k->prog->partial);
	jsonw_bool_field(w, "persist", d->o.persist);
	jsonw_key(w, "left_out");
	jsonw_start_array(w);
	for (i = 0; i < k->prog->n_info; i++) {
		struct eg_rule_info ri;

		if (k->prog->info[i].kernel)
			continue;
		policy_rule_info(d->policy, i, &ri);
		jsonw_start_object(w);
		jsonw_string_field(w, "rule", ri.name);
		jsonw_string_field(w, "why", k->prog->info[i].why);
		jsonw_end_object(w);
	}
	if (k->prog->bypass_left_out) {
		jsonw_start_object(w);
		jsonw_string_field(w, "rule", "internal_bypass");
		jsonw_string_field(w, "why", k->prog->bypass_why);
		jsonw_end_object(w);
	}
	jsonw_end_array(w);
	jsonw_end_object(w);
}
