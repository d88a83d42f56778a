// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Placeholder until the policy engine lands (issue 3). */
#include "commands.h"
#include "log.h"

int do_policy(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	p_err("policy: not built yet");
	return 1;
}
