/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* One handler per verb (cli/cmd_<verb>.c); each parses its own options (argp) and returns the exit status. */
#ifndef EG_COMMANDS_H
#define EG_COMMANDS_H

int do_daemon(int argc, char **argv);
int do_probe(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_metrics(int argc, char **argv);
int do_status(int argc, char **argv);
int do_policy(int argc, char **argv);
int do_task(int argc, char **argv);
int do_unload(int argc, char **argv);
int do_exec(int argc, char **argv);
int do_approvals(int argc, char **argv);
int do_approve(int argc, char **argv);
int do_deny(int argc, char **argv);
int do_shim(int argc, char **argv);
int do_shell(int argc, char **argv);
int do_run(int argc, char **argv);
int do_ps(int argc, char **argv);
int do_poll(int argc, char **argv);
int do_log(int argc, char **argv);
int do_write(int argc, char **argv);
int do_send_keys(int argc, char **argv);
int do_kill(int argc, char **argv);
int do_query(int argc, char **argv);

#endif
