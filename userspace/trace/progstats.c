// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "execgate.skel.h"
#include "trace/progstats.h"

size_t tracer_prog_stats(struct execgate_bpf *skel, struct eg_prog_stat *ret, size_t max)
{
	struct bpf_program *p;
	size_t n = 0;

	if (!skel)
		return 0;
	bpf_object__for_each_program(p, skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		/* not loaded (autoload off: a feature this kernel lacks, --exec-failed=none) */
		if (fd < 0 || n == max)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		snprintf(ret[n].name, sizeof(ret[n].name), "%s", bpf_program__name(p));
		ret[n].recursion_misses = info.recursion_misses;
		ret[n].run_cnt = info.run_cnt;
		ret[n].run_time_ns = info.run_time_ns;
		n++;
	}
	return n;
}

uint64_t prog_stats_misses(const struct eg_prog_stat *stats, size_t n)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += stats[i].recursion_misses;
	return sum;
}
