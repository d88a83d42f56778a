/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Loading, attaching and pinning the tracer BPF object (bpf/execgate.bpf.c). */
#ifndef EG_TRACER_H
#define EG_TRACER_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

struct execgate_bpf;

struct tracer_opts {
	uint32_t max_argv_bytes;	/* per record, 16 .. EG_ARGV_LIMIT */
	uint32_t ringbuf_size;		/* power of two, >= page size */
	uint64_t cgroup_id;		/* 0: trace every cgroup */
	uint32_t cgroup_level;
};

/* Names of the maps pinned under the pin path (docs/maps.md). */
extern const char *const tracer_pinned_maps[];

/*
 * Opens, configures (rodata, map sizes), loads and attaches. A "tasks" map
 * pinned under pin_dir by an earlier daemon is reused, so exec depths
 * survive a restart; *ret_reused says whether it was.
 */
int tracer_start(const struct tracer_opts *o, const char *pin_dir, struct execgate_bpf **ret_skel,
		 bool *ret_reused);
/* Pins the maps under dir (created if missing; stale pins replaced). */
int tracer_pin(struct execgate_bpf *skel, const char *dir);
/* Unpins what a daemon's stop removes; "tasks" stays unless all is set (execgate unload). */
void tracer_unpin(struct execgate_bpf *skel, const char *dir, bool all);
/* Removes every pin under dir without a loaded object (execgate unload). */
int tracer_unpin_dir(const char *dir);
/* Registers an execgate binary (its dev/ino) whose "exec" verb launches sessions. */
int tracer_add_launcher(struct execgate_bpf *skel, unsigned int slot, uint64_t dev, uint64_t ino);
/* Detaches the programs: no new records after this. */
void tracer_detach(struct execgate_bpf *skel);
void tracer_destroy(struct execgate_bpf *skel);

/* Sums the per-CPU counters of the pinned or loaded map fd. */
struct eg_counters;
int tracer_read_counters(int map_fd, struct eg_counters *ret);

#endif
