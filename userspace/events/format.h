/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Rendering of events: JSON lines (schema v1, docs/events.md) and a terminal table. */
#ifndef EG_FORMAT_H
#define EG_FORMAT_H

#include <stdint.h>
#include "trace/record.h"
#include "util/errnos.h"

struct cgroup_cache;
struct eg_containers;
struct eg_lineage;
#include "util/sbuf.h"

/* One program of an exec (a script, a chain's middle script, a loader's program) and its verdict. */
struct eg_program_verdict {
	const char *role;		/* "program", "script", "chain", "interpreter", "loader" */
	struct eg_str filename;
	const char *decision;
	const char *rule;		/* NULL: the default decision */
};

/* What the policy said about an exec; NULL fields are left out (rule: null). */
struct eg_annotation {
	const char *decision;
	const char *rule;		/* NULL: the default decision */
	const char *message;
	const char *action;
	const char *layer;		/* "seccomp", "kernel-lsm", "kernel-kill"; NULL: none */
	const char *reason;		/* why, when the action needs one (error, ticket-mismatch) */
	/* the kernel's own verdict (--enforce), when it judged: "kernel":{...} */
	const char *kernel_decision;
	const char *kernel_rule;	/* NULL: the default decision */
	const char *kernel_layer;	/* NULL: the kernel did not judge */
	/* every program judged, when there are more than one ("programs":[...]) */
	const struct eg_program_verdict *programs;
	unsigned int n_programs;
	const char *context;		/* the agent context's name (h->context), NULL: not known */
	int severity;			/* the rule's (enum eg_severity), 0: none */
	const char *const *tags;	/* the rule's */
	size_t ntags;
	const struct eg_redirect *redirect; /* decision redirect: where to ("redirect_to") */
};

/* Failed execs of a PATH search folded into the exec that ended it (events/collapse.h). */
struct eg_path_search {
	unsigned int failed;
	const struct eg_str *dirs;	/* the directories tried, in order */
	size_t ndirs;
};

/* Daemon facts a record is formatted against (the host's namespaces). */
struct eg_format_ctx {
	int64_t boot_to_real;
	uint32_t host_mnt_ns;
	uint32_t host_pid_ns;
	struct cgroup_cache *cgroups;	/* id -> path, NULL: no "cgroup" field */
	unsigned int width;		/* text: columns a line may take, 0: no limit */
	const struct eg_path_search *path_search;	/* this exec's, NULL: none */
	struct eg_containers *containers;	/* container metadata; NULL: id and runtime from the path */
	const struct eg_lineage *lineage;	/* recent execs: "parent" inline; NULL: no "parent" */
};

/*
 * The verdict's fields of an exec record ("decision" ... "kernel"), for
 * every writer of exec records; h: the kernel's record, or NULL.
 */
void format_annotation_json(struct sbuf *b, const struct eg_annotation *a, const struct eg_event *h);

/* ,"container":{...},"pod":{...} for a cgroup that is a container's (nothing otherwise). */
void format_container_json(struct sbuf *b, const struct eg_format_ctx *fc, uint64_t cgroup_id,
			   const char *cgroup);

/* The file the exec named: the script for a script, else the file that runs. */
struct eg_str record_program(const struct eg_record *r);
/* Whether that path (record_program's) keeps only its last components. */
bool record_filename_truncated(const struct eg_record *r);
/* Whether record_program()'s path passes a mount a user made (EG_F2_USER_MOUNT, execgate.h). */
bool record_user_mount(const struct eg_record *r);
/* Whether the program was named by a file descriptor (execveat AT_EMPTY_PATH, /dev/fd/N). */
bool record_exec_fd(const struct eg_record *r);

/* CLOCK_BOOTTIME -> CLOCK_REALTIME, sampled at start and refreshed per batch. */
int64_t clock_boot_to_real(void);
uint64_t clock_real_ns(void);
/* 2026-01-19T14:30:00.123456789Z */
void format_time(struct sbuf *b, uint64_t real_ns);

/* "PID:NS" */
void format_exec_id(struct sbuf *b, uint32_t pid, uint64_t ktime);
/* uid -> user name (cached), the number when there is none */
const char *format_user_name(uint32_t uid, char *buf, size_t len);

/* One JSON line (with '\n') for an exec or exec_failed record. */
void format_record_json(struct sbuf *b, const struct eg_record *r, const struct eg_format_ctx *fc,
			const struct eg_annotation *a);
/* One line of the terminal table, and its header. */
void format_record_text(struct sbuf *b, const struct eg_record *r, const struct eg_format_ctx *fc,
			const struct eg_annotation *a);
void format_text_header(struct sbuf *b, unsigned int width);
/* Cuts the line that starts at b->data[start] (no '\n' yet) to width columns, with a '+' (0: no limit). */
void format_text_fit(struct sbuf *b, size_t start, unsigned int width);
/* Opens a JSON record {"v":1,"type":TYPE,"time":...; the caller adds fields and "}\n". */
void format_json_open(struct sbuf *b, const char *type, uint64_t real_ns);

#endif
