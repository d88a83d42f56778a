/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* `policy check`: warnings for names a multi-call binary on this host answers to (busybox). */
#ifndef EG_MULTICALL_H
#define EG_MULTICALL_H

#include "policy/policy.h"

void multicall_lint(const struct eg_policy *p, const char *file, struct eg_diags *d);

#endif
