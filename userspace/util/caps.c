// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include "util/caps.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

bool eg_have_bpf_caps(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};

	if (syscall(SYS_capget, &hdr, data))
		return geteuid() == 0;
#define HAS_CAP(c) (data[(c) / 32].effective & (1U << ((c) % 32)))
	return HAS_CAP(CAP_SYS_ADMIN) || (HAS_CAP(CAP_BPF) && HAS_CAP(CAP_PERFMON));
#undef HAS_CAP
}
