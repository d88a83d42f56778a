/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Privilege checks, so that a verb says "needs root" instead of a bare EPERM. */
#ifndef EG_CAPS_H
#define EG_CAPS_H

#include <stdbool.h>

/* CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON, in the effective set. */
bool eg_have_bpf_caps(void);

/* The one-line hint every verb prints when it lacks them. */
#define EG_NEEDS_ROOT "needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN); try sudo"

#endif
