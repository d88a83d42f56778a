// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execgate: dispatch to one handler per verb. */
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "util/log.h"
#include "util/version.h"

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "daemon", do_daemon, "trace every exec on the host and write events (JSON lines)" },
	{ "probe",  do_probe,  "report which kernel features execgate can use here" },
	{ "stats",  do_stats,  "show the running daemon's counters (events, lost records)" },
	{ "policy", do_policy, "check, lint, test or reload a policy file" },
	{ "task",   do_task,   "show or set a process's exec depth (through a pidfd)" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: execgate COMMAND [OPTION...]\n\n"
		   "execgate traces every execve/execveat with its full argv and exec depth,\n"
		   "and enforces an exec policy. Commands:\n\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n'execgate COMMAND --help' describes each command's options.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("execgate %s\n", EG_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	p_err("unknown command '%s': see 'execgate --help'", argv[1]);
	return 2;
}
