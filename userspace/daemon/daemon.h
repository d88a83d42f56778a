/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The daemon (`execgate daemon`): options, and the one entry point. */
#ifndef EG_DAEMON_H
#define EG_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum out_format { FMT_AUTO, FMT_JSON, FMT_TEXT };
enum exec_failed_mode { EXEC_FAILED_ALL, EXEC_FAILED_NONE, EXEC_FAILED_COLLAPSE };

#define DAEMON_MAX_LIST 64	/* --cgroup, --uid, --exclude-* entries */

struct daemon_opts {
	const char *output;		/* NULL or "-": stdout */
	const char *pin_path;
	const char *policy_path;
	const char *cgroups[DAEMON_MAX_LIST];
	size_t n_cgroups;
	uint32_t max_argv_bytes;
	uint32_t ringbuf_size;
	bool ringbuf_size_set;
	enum out_format format;
	const char *ctl_group;
	gid_t ctl_gid;			/* (gid_t)-1: none */
	uint64_t output_max_size;
	unsigned int output_keep;
	uint32_t uids[DAEMON_MAX_LIST];
	size_t n_uids;
	const char *exclude_comm[DAEMON_MAX_LIST];
	size_t n_exclude_comm;
	const char *exclude_path[DAEMON_MAX_LIST];
	size_t n_exclude_path;
	enum exec_failed_mode exec_failed;
	const char *metrics_listen;
	const char *metrics_textfile;
	const char *api_listen;		/* --api-listen: the HTTP API (api/api.h), NULL: off */
	const char *api_token_file;
	bool api_run_as_set;		/* --api-run-as USER (never root): the API's runs are USER's */
	uid_t api_run_as_uid;
	gid_t api_run_as_gid;
	bool enforce;			/* kernel rules from --policy */
	bool allow_partial;		/* ... even if some deny rules stay in userspace */
	bool persist;			/* ... left in force after the daemon stops */
	bool check;			/* --check: load the policy and the programs, attach nothing, exit */
	unsigned int metrics_interval;	/* seconds between --metrics-textfile writes */
	const char *state_dir;		/* NULL: /var/lib/execgate */
	const char *workspace;		/* NULL: run --cwd unbounded */
	const char *hostname;		/* --hostname: the host's name in records and syslog; NULL: gethostname() */
	bool no_exits;			/* --exit-events=none */
	const char *syslog;		/* --syslog[=SOCKET]: the socket, NULL: off */
	uint64_t syslog_max_bytes;	/* --syslog-max-bytes (when syslog_max_set; else SYSLOG_MAX_DEFAULT) */
	bool syslog_max_set;
	const char *journal;		/* --journal[=SOCKET] */
	int min_severity;		/* --min-severity LEVEL: every output */
	int min_severity_output;	/* --min-severity output=LEVEL (or the one above) */
	int min_severity_syslog;
	int min_severity_journal;
	int takeover_fd;		/* -1; else the previous daemon's state (a SIGUSR2 re-exec) */
	int argc;			/* the daemon's own arguments, for a re-exec */
	char **argv;
};

/* Runs until SIGINT/SIGTERM; returns the exit status (0 after a clean stop). */
int daemon_run(const struct daemon_opts *o);

#endif
