/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Loading, attaching and pinning the tracer BPF object (bpf/execgate.bpf.c). */
#ifndef EG_TRACER_H
#define EG_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

struct execgate_bpf;
struct bpf_link;

struct tracer_opts {
	uint32_t max_argv_bytes;	/* per record, 16 .. EG_ARGV_LIMIT */
	uint32_t ringbuf_size;		/* power of two, >= page size */
	const uint64_t *cgroup_ids;	/* subtrees traced and enforced; none: the whole host */
	const uint32_t *cgroup_levels;
	const char *const *cgroup_paths;	/* from the hierarchy's root: the kernel follows these */
	size_t n_cgroups;
	bool lsm;			/* load lsm/bprm_check_security (host-wide refusal) */
	bool lsm_cgroup;		/* load lsm_cgroup/bprm_check_security (per --cgroup) */
	bool exec_failed;		/* build failed-exec records at the syscall exit tracepoints */
	uint32_t host_pid_ns;		/* the daemon's pid namespace: any other is a container */
	bool exits;			/* exit records at sched_process_exit */
	bool fentry;			/* fentry loads: a '#!' exec's scripts found without sched_prepare_exec */
};

/* Names of the maps pinned under the pin path (docs/maps.md). */
extern const char *const tracer_pinned_maps[];
/* The procs view under the pin path: read it (cat) to run its iterator. */
#define EG_PROCS_PIN	"procs"

/* What tracer_start() picked up from an earlier daemon's pins. */
struct tracer_reuse {
	bool tasks;			/* exec depths carry over */
	bool ctxnames;			/* and the names of the context ids tasks carry */
	bool counters;			/* the kernel's counters go on from where they were */
	bool control;			/* another copy of the programs may still be attached */
	bool events;			/* the same ring buffer, with what is still queued */
	bool rules;			/* the kernel rules' maps, all of them (else new and empty) */
	uint32_t old_kseq;		/* !rules: the rule sequence of the kstate pinned before (0: none) */
	int old_events_fd;		/* a ring of another size: drain it after tracer_activate() */
	int old_tasks_fd;		/* a "tasks" of the older layout: copied over (trace/migrate.h) */
	uint32_t prev_gen;
};

/*
 * Whether this kernel takes the programs as tracer_start() would configure
 * them: opened, configured, loaded (verified), filled and attached with
 * maps of their own, their generation switch never flipped (nothing runs
 * past active()), then destroyed; nothing pinned, no pin read.
 */
int tracer_check(const struct tracer_opts *o);
/*
 * Opens, configures (rodata, map sizes), loads and attaches, reusing what
 * pin_dir holds (see trace/tracer.c). The programs act only after
 * tracer_activate().
 */
int tracer_start(const struct tracer_opts *o, const char *pin_dir, struct execgate_bpf **ret_skel,
		 struct tracer_reuse *ret);
/* This copy acts from now on; an older copy, still attached, stops acting. */
int tracer_activate(struct execgate_bpf *skel);
/* A start that failed after tracer_activate(): the copy that acted before (prev_gen; 0: none) acts again. */
int tracer_deactivate(struct execgate_bpf *skel, uint32_t prev_gen);
/* The link fds of the attached programs (kept open across a re-exec). */
int tracer_link_fds(struct execgate_bpf *skel, int *fds, int max);
/*
 * Pins the maps under dir (created if missing; stale pins replaced); the
 * kernel rules' maps only if rules (else tracer_pin_rules(), once this
 * copy's rules are in force: until then the pins name the copy before's).
 */
int tracer_pin(struct execgate_bpf *skel, const char *dir, bool rules);
int tracer_pin_rules(struct execgate_bpf *skel, const char *dir);
/* Removes the rule maps' pins under dir, whoever's they are. */
void tracer_unpin_rules(const char *dir);
/* Unpins what a daemon's stop removes; "tasks" and "ctxnames" stay unless all is set (execgate unload). */
void tracer_unpin(struct execgate_bpf *skel, const char *dir, bool all);
/* Removes every pin under dir without a loaded object (execgate unload). */
int tracer_unpin_dir(const char *dir);
/*
 * Appends to ids[n..max) the ids of the programs that links (and programs)
 * pinned under dir hold; returns the new count. Read before the pins go.
 */
int tracer_pinned_progs(const char *dir, uint32_t *ids, int n, int max);
/*
 * The kernel lets a program go only after an unpinned link's last
 * reference is dropped, an RCU grace period and a work item later (tens of
 * ms here): waits until none of ids is loaded, up to timeout_ms. Returns
 * how many still are, or -errno when the kernel will not say (EPERM).
 */
int tracer_wait_progs_gone(const uint32_t *ids, int n, int timeout_ms);
/* Puts a cgroup (by id) in the --cgroup scope the programs trace and judge. */
int tracer_scope_add(struct execgate_bpf *skel, uint64_t cgroup_id);
int tracer_scope_del(struct execgate_bpf *skel, uint64_t cgroup_id);
/* Registers an execgate binary (its dev/ino) whose "exec" verb launches sessions. */
int tracer_add_launcher(struct execgate_bpf *skel, uint64_t dev, uint64_t ino);
/* Registers a dynamic loader (its dev/ino): run as a command, the program it maps is judged. */
int tracer_add_loader(struct execgate_bpf *skel, uint64_t dev, uint64_t ino);
int tracer_prune_loaders(struct execgate_bpf *skel, bool (*keep)(void *arg, uint64_t dev, uint64_t ino),
			 void *arg);
/*
 * Pins every link (the programs attached, and lsm_cgroup links) under
 * dir/links, replacing an earlier daemon's: those programs then detach.
 * Pinned links outlive the daemon (kernel rules stay in force after kill -9).
 * In two steps: _prepare pins them all under other names (new_NAME; a
 * failure drops those and leaves the earlier pins as they were), _commit
 * renames each over the earlier pin (*ret_touched, may be NULL: whether
 * one was replaced; a rename that fails keeps the new_ pins, so that no
 * hook is left to the earlier copy alone). _abort drops what _prepare
 * pinned. tracer_pin_links() does both steps.
 */
int tracer_pin_links_prepare(struct execgate_bpf *skel, const char *dir, struct bpf_link **extra,
			     int n_extra);
int tracer_pin_links_commit(struct execgate_bpf *skel, const char *dir, struct bpf_link **extra, int n_extra,
			    bool *ret_touched);
void tracer_pin_links_abort(struct execgate_bpf *skel, const char *dir, struct bpf_link **extra, int n_extra);
int tracer_pin_links(struct execgate_bpf *skel, const char *dir, struct bpf_link **extra, int n_extra);
/* Removes dir/links (links nobody else holds detach). */
int tracer_unpin_links(const char *dir);
/* Detaches the programs: no new records after this. */
void tracer_detach(struct execgate_bpf *skel);
void tracer_destroy(struct execgate_bpf *skel);

/* Sums the per-CPU counters of the pinned or loaded map fd. */
struct eg_counters;
int tracer_read_counters(int map_fd, struct eg_counters *ret);

#endif
