// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include "commands.h"
#include "log.h"
int do_task(int argc, char **argv) { (void)argc; (void)argv; p_err("task: not built yet"); return 1; }
