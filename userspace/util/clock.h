/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The clocks the daemon reads, as integers: CLOCK_MONOTONIC for timeouts
 * and latencies, CLOCK_BOOTTIME to compare with the kernel's
 * bpf_ktime_get_boot_ns(). (CLOCK_REALTIME for records: events/format.h.)
 */
#ifndef EG_UTIL_CLOCK_H
#define EG_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t eg_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline uint64_t eg_mono_ns(void)
{
	return eg_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t eg_mono_ms(void)
{
	return eg_mono_ns() / 1000000;
}

static inline uint64_t eg_boot_ns(void)
{
	return eg_clock_ns(CLOCK_BOOTTIME);
}

#endif
