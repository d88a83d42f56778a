/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What an exec will run, worked out the way the kernel will: the file the
 * path leads to (symlinks followed, from the caller's working directory or
 * execveat's dirfd), and for a '#!' script each interpreter in turn with
 * the argv the kernel builds for it (fs/binfmt_script.c). The policy judges
 * every program in the chain; the last one's argv is what the new image
 * will find in its memory, which the kernel-side ticket check compares.
 *
 * Nothing a supervised process wrote is trusted here beyond being the
 * spelling of a request: the files are opened by the daemon itself, and
 * their identity (device, inode) is what a ticket names. They are opened
 * O_PATH and only a regular file is read (non-blocking): naming a FIFO or
 * a device must not make the daemon wait or run a driver's open.
 */
#ifndef EG_RESOLVE_H
#define EG_RESOLVE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/loaders.h"

#define EG_MAX_PROGRAMS		6	/* the file and up to 5 interpreters (exec_binprm: depth > 5 is ELOOP) */
#define EG_BINPRM_BUF		256	/* what the kernel reads of a file to choose a handler */

enum eg_prog_kind {
	EG_PROG_ELF,
	EG_PROG_SCRIPT,			/* "#!": an interpreter follows */
	EG_PROG_UNKNOWN,		/* neither: the kernel answers ENOEXEC (or binfmt_misc) */
};

struct eg_program {
	char path[PATH_MAX];		/* resolved, absolute (in the daemon's view) */
	char requested[PATH_MAX];	/* as spelled: the caller's path, or the '#!' text */
	uint64_t dev, ino;		/* identity (kernel dev encoding) */
	uint32_t mode, uid, gid;	/* of the file: setuid/setgid, owner */
	enum eg_prog_kind kind;
	uint64_t size;
	bool hashed;			/* sha256 is the content's: its size was one the spec asked for */
	uint8_t sha256[32];
	char **argv;			/* what this program is judged with */
	unsigned int argc;
};

struct eg_exec_spec {
	int cwd_fd;			/* the caller's working directory (relative paths) */
	/*
	 * Or, with cwd_fd -1: called the first time a relative path needs
	 * the working directory (most execs never do); an fd the caller
	 * keeps and closes, or -errno. It may be called again.
	 */
	int (*open_cwd)(void *arg);
	void *open_cwd_arg;
	int root_fd;			/* the caller's root; -1: the daemon's "/" */
	int dir_fd;			/* execveat's dirfd opened in the daemon (O_PATH will do), or -1 */
	int dir_fd_num;			/* execveat's dirfd number in the caller (for /dev/fd/N) */
	bool dir_fd_cloexec;		/* ... and it is close-on-exec in the caller */
	bool execveat;
	const char *path;		/* as passed */
	int at_flags;			/* AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW */
	const char *const *argv;
	unsigned int argc;
	/*
	 * Where set, argv and argc come from here instead, asked only once the
	 * first program is found: a lookup that fails (a shell's PATH search)
	 * never reads argv. 0, or -errno, which exec_plan returns.
	 */
	int (*load_argv)(void *arg, const char *const **ret_argv, unsigned int *ret_argc);
	void *load_argv_arg;
	/* files of these sizes are hashed (a policy names a file of that size by content) */
	const uint64_t *content_sizes;
	unsigned int n_content_sizes;
	/* the dynamic loaders: run as the command, the program each is asked to run is a program too */
	const struct eg_loaders *loaders;
	/* the caller (its process and thread): what /proc/self, /dev/fd name for it; 0: not known */
	int tgid, tid;
};

enum eg_loader_plan {
	EG_LOADER_NONE,			/* the final program is no loader (or asked for none: --help) */
	EG_LOADER_TARGET,		/* plan->target is the program the loader will map */
	EG_LOADER_UNPINNED,		/* a loader asked for a program this side cannot name for sure */
};

struct eg_exec_plan {
	struct eg_program prog[EG_MAX_PROGRAMS];
	unsigned int n;			/* programs found */
	int err;			/* 0, or -errno the exec will fail with (ENOENT, ELOOP...) */
	/*
	 * A loader run as the command (ld.so [options] PROG ARGS): PROG, as the
	 * loader will open it (its argv points into the final program's).
	 */
	enum eg_loader_plan loader;
	struct eg_program target;
	char bprm_filename[PATH_MAX + 32]; /* the kernel's bprm->filename */
};

/*
 * Opens the daemon's /proc/self/fd once, which exec_plan() reads the files
 * it opened through (a descriptor kept for the process's life; without
 * it, the first exec_plan() opens it).
 */
void exec_plan_init(void);
/* Fills plan; returns plan->err. Frees nothing of spec. */
int exec_plan(const struct eg_exec_spec *spec, struct eg_exec_plan *plan);
void exec_plan_free(struct eg_exec_plan *plan);
/* The last program: what the new image is, with its committed argv. */
const struct eg_program *exec_plan_final(const struct eg_exec_plan *plan);

/*
 * Parses a '#!' line as the kernel does (load_script): the interpreter and
 * at most one argument (the rest of the line, inner blanks kept). Returns 0
 * or -ENOEXEC; the strings point into buf, which is modified.
 */
int parse_shebang(char *buf, size_t len, const char **ret_name, const char **ret_arg);

/* A name without '/' looked up in PATH as a shell would; buf keeps name when not found. */
void path_lookup(const char *name, const char *path_env, char *buf, size_t len);

#endif
