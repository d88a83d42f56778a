// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execgate: dispatch to one handler per verb (cli/cmd_<verb>.c). */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "util/log.h"
#include "util/version.h"

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "daemon", do_daemon, "trace every exec on the host and write events (JSON lines)" },
	{ "exec",   do_exec,   "run a command in a supervised session (every exec judged)" },
	{ "approvals", do_approvals, "list the execs waiting for an answer (--watch)" },
	{ "approve", do_approve, "let a waiting exec run" },
	{ "deny",   do_deny,   "refuse a waiting exec" },
	{ "shell",  do_shell,  "run commands one by one in a session, keeping cwd and exports between them" },
	{ "run",    do_run,    "ask the daemon to run a command in a session (foreground, --background, --stateful)" },
	{ "ps",     do_ps,     "list the processes the daemon runs for you" },
	{ "poll",   do_poll,   "a run's new output since the last poll, and its status" },
	{ "log",    do_log,    "a background run's log (--tail N, --offset N)" },
	{ "write",  do_write,  "write text to a background run's input" },
	{ "send-keys", do_send_keys, "type keys (Enter, C-c, Up, ...) into a background run's pty" },
	{ "kill",   do_kill,   "signal a run's process group (--signal)" },
	{ "shim",   do_shim,   "install or remove the shell shim at /bin/sh and /bin/bash" },
	{ "query",  do_query,  "read the daemon's records: filters, a process tree (--tree), live (--follow)" },
	{ "status", do_status, "the running daemon: pid, mode, enforcement, policy, counters" },
	{ "stats",  do_stats,  "the daemon's counters (events, lost records, decisions)" },
	{ "metrics", do_metrics, "the daemon's counters in the Prometheus text format" },
	{ "policy", do_policy, "check, lint, test or reload a policy file" },
	{ "probe",  do_probe,  "report which kernel features execgate can use here" },
	{ "task",   do_task,   "show or set a process's exec depth (through a pidfd)" },
	{ "unload", do_unload, "remove everything a daemon left pinned (depths, rules)" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

const char *argp_program_version = "execgate " EG_VERSION;
const char *argp_program_bug_address = NULL;

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: execgate COMMAND [OPTION...]\n\n"
		   "execgate traces every execve/execveat with its full argv and exec depth,\n"
		   "and enforces an exec policy. Commands:\n\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n'execgate help COMMAND' (or 'execgate COMMAND --help') describes a command.\n"
		   "Every command that talks to a daemon takes -p/--pin-path; -j/--json gives\n"
		   "machine output. Usage errors exit with status 2.\n");
}

static const struct cmd *find(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(name, cmds[i].name))
			return &cmds[i];
	return NULL;
}

/* Runs cmd with argv[0] = "execgate VERB", so argp's messages name the whole command. */
static int run(const struct cmd *c, int argc, char **argv)
{
	static char name[64];

	snprintf(name, sizeof(name), "execgate %s", c->name);
	argv[0] = name;
	eg_verb = c->name;
	return c->fn(argc, argv);
}

int main(int argc, char **argv)
{
	const struct cmd *c;

	/*
	 * Before anything else: no process of the user's (an agent in a
	 * session, a program it left behind) may trace us or write our
	 * memory through /proc/PID/mem. A waiting `execgate run` or
	 * `approvals --watch` is a process of that uid outside every
	 * session; made to run code it is a way out. Only root (with
	 * CAP_SYS_PTRACE) reaches a process that is not dumpable. A command
	 * we exec is dumpable again: the kernel decides anew at exec.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) {
		fprintf(stderr, "execgate: cannot make this process undumpable: %s\n", strerror(errno));
		return 1;
	}
	argp_err_exit_status = EXIT_USAGE;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--usage")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "help")) {
		char *help_argv[] = { NULL, "--help", NULL };

		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		c = find(argv[2]);
		if (!c) {
			p_err("unknown command '%s': see 'execgate --help'", argv[2]);
			return EXIT_USAGE;
		}
		/* policy has verbs of its own: help policy check */
		if (argc > 3 && !strcmp(c->name, "policy")) {
			char *pargv[] = { NULL, argv[3], "--help", NULL };

			return run(c, 3, pargv);
		}
		return run(c, 2, help_argv);
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("execgate %s\n", EG_VERSION);
		return 0;
	}
	c = find(argv[1]);
	if (!c) {
		p_err("unknown command '%s': see 'execgate --help'", argv[1]);
		return EXIT_USAGE;
	}
	return run(c, argc - 1, argv + 1);
}
