/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the kernel counts about each loaded program (bpf_prog_info): above
 * all recursion_misses, the times a program did not run because it was
 * already running on that CPU (a record that was never made). Reported
 * like ring-buffer losses: nothing is lost silently.
 */
#ifndef EG_PROGSTATS_H
#define EG_PROGSTATS_H

#include <stddef.h>
#include <stdint.h>

struct execgate_bpf;

#define EG_PROGS_MAX 16

struct eg_prog_stat {
	char name[32];
	uint64_t recursion_misses;
	uint64_t run_cnt;		/* with kernel.bpf_stats_enabled=1, else 0 */
	uint64_t run_time_ns;
};

/* The loaded programs of skel (at most max); returns how many were read. */
size_t tracer_prog_stats(struct execgate_bpf *skel, struct eg_prog_stat *ret, size_t max);
/* The sum of recursion_misses over stats[0..n). */
uint64_t prog_stats_misses(const struct eg_prog_stat *stats, size_t n);

#endif
