/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The exec policy: a YAML file (libyaml) compiled into an evaluator. The
 * daemon annotates every event with policy_eval(); the enforcement layers
 * (seccomp sessions, kernel rules) call the same function.
 * Format: policy/README.md. Library code: returns 0 or -errno, never prints.
 */
#ifndef EG_POLICY_H
#define EG_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/landlock.h"

enum eg_decision {
	EG_DECISION_ALLOW = 0,
	EG_DECISION_DENY,
	EG_DECISION_APPROVAL,
	EG_DECISION_AUDIT,
	EG_DECISION_ERROR,		/* the policy could not be evaluated (on_error decides) */
	/*
	 * Run another command instead (the rule's redirect_to): a session's
	 * launcher and its PATH directory do it; everywhere else it is a deny
	 * that names where the exec would have gone (policy/README.md).
	 */
	EG_DECISION_REDIRECT,
	EG_DECISION__COUNT,
};

/* "allow", "deny", "approval", "audit", "error", "redirect" */
const char *eg_decision_name(enum eg_decision d);

struct eg_policy;
struct eg_redirect;
/* Whether any rule redirects. */
bool policy_rule_has_redirects(const struct eg_policy *p);
/* The redirect_to of the redirect rule named rule; NULL if there is none. */
const struct eg_redirect *policy_rule_redirect(const struct eg_policy *p, const char *rule);
/*
 * Each name a redirect rule catches through PATH: its basenames and the
 * last part of each literal path, with the rule; fn's nonzero stops. A
 * session's PATH directory has an entry for each (session/redirect.c).
 */
int policy_redirect_names(const struct eg_policy *p,
			  int (*fn)(void *arg, const char *name, const char *rule, const char *message,
				    const struct eg_redirect *rd),
			  void *arg);

/*
 * A time budget shared by every regular expression one exec is matched
 * against (all its arguments, all patterns, the script and its
 * interpreter): past it the verdict is on_error. deadline_ns is
 * CLOCK_MONOTONIC; 0 means "start the default budget now".
 */
struct eg_eval_budget {
	uint64_t deadline_ns;
	bool exceeded;
};
#define EG_EVAL_BUDGET_NS	(20ull * 1000 * 1000)	/* 20 ms per exec */

/*
 * One program about to run (or that ran), as the daemon or a supervisor
 * saw it. A '#!' script is two programs: the script (filename = the
 * script, argv = what the caller passed) and its interpreter (filename =
 * the interpreter, argv = what the kernel passes it); the caller judges
 * both and keeps the stronger verdict (policy_verdict_merge).
 */
struct eg_exec_req {
	const char *filename;		/* the resolved file: absolute, no symlinks */
	const char *requested;		/* the path as the caller spelled it, or NULL */
	const char *const *argv;	/* argc NUL-terminated strings (argv[0] first) */
	unsigned int argc;
	int depth;			/* 0 = direct, >= 1 = nested (relative when !depth_known) */
	bool depth_known;		/* false: the tracer never saw this tree start */
	/*
	 * In a container (a pid namespace not the host's): the depth from the
	 * container's first exec, which rules scoped with cgroups judge.
	 */
	bool in_container;
	int container_depth;
	const char *cgroup;		/* cgroup v2 path from the hierarchy root ("/a/b"), NULL if unknown */
	uint32_t euid;			/* uids: rules match the effective uid */
	uint64_t dev, ino;		/* the file's identity (st_dev as the kernel encodes it), 0 if unknown */
	uint64_t size;			/* the file's size, 0 if unknown */
	const char *content_path;	/* where the file can be read to compare content (/proc/PID/exe), or NULL */
	const uint8_t *content_sha;	/* its SHA-256, taken by the caller (then nothing is read here), or NULL */
	bool foreign_ns;		/* runs in another mount namespace than the daemon's */
	/*
	 * filename is in a mount namespace a user made (EG_F2_USER_MOUNT): its
	 * path is that user's to spell, so no rule that lets a program run
	 * (allow, audit, an approval the kernel audits) is met by it through
	 * a glob; deny rules, and a literal path's file by identity, are.
	 */
	bool user_mount;
	/*
	 * The agent context the task is in (policy "contexts:", id 1..; 0:
	 * none), the depth from its identity exec (0 for it) and the shell
	 * images in a row up to this one (0: not a shell). Rules with
	 * "contexts:" and the contexts' limits read these.
	 */
	uint32_t context;
	int context_depth;
	unsigned int shells;
	bool truncated;			/* argv (or filename) was cut */
	bool apply_on_truncated;	/* a supervised session: on_truncated decides a cut argv */
	struct eg_eval_budget *budget;	/* NULL: a fresh budget for this call */
};

/* A redirect rule's target: redirect_to: {command: PATH, args: [...]} or a plain PATH. */
struct eg_redirect {
	char *command;			/* absolute */
	char **args;			/* put before the original arguments */
	size_t n_args;
};

struct eg_verdict {
	enum eg_decision decision;
	const char *rule;		/* NULL: default_decision; "internal_bypass"; "on_truncated"; "on_error" */
	const char *message;		/* the rule's message, or NULL */
	int rule_index;			/* index in the file's commands, -1 if none */
	const struct eg_redirect *redirect; /* EG_DECISION_REDIRECT: where to, else NULL */
	const char *error;		/* decision error: why (budget, regex limit, memory) */
};

/*
 * Keeps in *into the stronger of *into and *other: deny > error > approval
 * > audit > allow (a script and its interpreter: any deny wins).
 */
void policy_verdict_merge(struct eg_verdict *into, const struct eg_verdict *other);
/* That order as a number: deny 4 (redirect too: a deny wherever it cannot redirect), error 3, approval 2, audit 1, allow 0. */
int policy_decision_rank(enum eg_decision d);

enum eg_timeout_action {
	EG_TIMEOUT_DENY = 0,
	EG_TIMEOUT_ALLOW,
};

/* sandbox.seccomp.execve settings, with their defaults. */
struct eg_policy_settings {
	bool execve_enabled;		/* default false */
	uint32_t max_argc;		/* default 1000 */
	uint32_t max_argv_bytes;	/* default 65536 */
	enum eg_decision on_truncated;	/* deny (default), allow, approval */
	uint64_t approval_timeout_ms;	/* default 10000 */
	bool approval_timeout_set;	/* the file names approval_timeout */
	enum eg_timeout_action approval_timeout_action; /* default deny */
	enum eg_decision default_decision; /* default allow */
	enum eg_decision on_error;	/* deny (default), allow, approval: when evaluation fails */
	bool unknown_depth_direct;	/* unknown_depth: direct (default nested) */
	bool kernel_approval_audit;	/* kernel_approval: audit (default deny) */
};

/* A problem found while loading or linting: FILE:LINE:COLUMN: message. */
struct eg_diag {
	char file[256];
	int line;			/* 1-based; 0 if not tied to a place */
	int column;			/* 1-based */
	bool warning;			/* lint warning, not an error */
	char msg[512];
};

struct eg_diags {
	struct eg_diag *v;
	size_t n, cap;
};

void eg_diags_free(struct eg_diags *d);
/* Adds an error not tied to a place in the file. */
void eg_diags_add_error(struct eg_diags *d, const char *file, const char *msg);
/* Adds a warning at FILE:LINE:COL (0: no place), from a caller's own lint. */
void eg_diags_add_warning(struct eg_diags *d, const char *file, int line, int col, const char *msg);

struct eg_policy;

/*
 * Loads and compiles a policy. On error returns -EINVAL (or -errno for I/O)
 * and fills diags with at least one error; ret_policy is untouched on
 * failure. Warnings (lint) are added to diags in both cases.
 */
int policy_load_file(const char *path, struct eg_policy **ret_policy, struct eg_diags *diags);
/* The same from an open file (a session policy the launcher opened with the user's rights). */
int policy_load_fd(int fd, const char *name, struct eg_policy **ret_policy, struct eg_diags *diags);
/*
 * POLICY_LOAD_NO_FILES: a policy from someone the daemon does not trust
 * with its files (a session's): the files its literal paths and
 * internal_bypass name are not opened, stat'ed or hashed (opening a file
 * as root can wait for ever on a FIFO or a FUSE server, or run a device's
 * open), so its paths match by name only and its internal_bypass is void.
 */
#define POLICY_LOAD_NO_FILES	(1u << 0)
int policy_load_fd_flags(int fd, const char *name, unsigned int flags, struct eg_policy **ret_policy,
			 struct eg_diags *diags);
int policy_load_buf_flags(const char *buf, size_t len, const char *name, unsigned int flags,
			  struct eg_policy **ret_policy, struct eg_diags *diags);
int policy_load_buf(const char *buf, size_t len, const char *name,
		    struct eg_policy **ret_policy, struct eg_diags *diags);
void policy_free(struct eg_policy *p);

/*
 * First match wins; no match gives default_decision. Never fails: a
 * regular expression that hits its step limit, an exhausted budget or no
 * memory give decision "error" (with ->error) unless on_error says
 * otherwise for a supervised session (apply_on_truncated set).
 * Not reentrant: the policy holds the scratch space (PCRE2 match data, the
 * joined argv) an evaluation uses, so call it from one thread at a time per
 * policy (or load one policy per thread). ret's strings live as long as p.
 */
void policy_eval(const struct eg_policy *p, const struct eg_exec_req *req, struct eg_verdict *ret);

const struct eg_policy_settings *policy_settings(const struct eg_policy *p);
/* Hex sha256 of the file's bytes (65 bytes with the NUL). */
const char *policy_sha256(const struct eg_policy *p);
/* Which load this is, in this process: the same text loaded again (its files changed) is another. */
uint64_t policy_load_seq(const struct eg_policy *p);
/*
 * The sizes of the files the policy's literal paths name by content (a
 * copy of one matches it): up to max into out; returns how many there are
 * (more than max: the caller cannot tell them all). policy_wants_size():
 * is size one of them.
 */
size_t policy_content_sizes(const struct eg_policy *p, uint64_t *out, size_t max);
bool policy_wants_size(const struct eg_policy *p, uint64_t size);
size_t policy_rule_count(const struct eg_policy *p);
/* The bytes the policy was loaded from. */
const char *policy_source(const struct eg_policy *p, size_t *ret_len);
/*
 * The files a policy names by path, as its load found them: whether b
 * (the same text loaded again) found the same ones (a package upgrade
 * replaces a file: a rule by path, an allow's alias, internal_bypass
 * then name another file). policy_file_dirs() gives each directory whose
 * change could change them (again and again: the caller keeps a set).
 */
bool policy_files_same(const struct eg_policy *a, const struct eg_policy *b);
void policy_file_dirs(const struct eg_policy *p, void (*fn)(const char *dir, void *arg), void *arg);

/*
 * The session's boundary a policy asks for (policy/README.md): its
 * filesystem: and network: sections as a Landlock layer (scopes false:
 * the daemon adds the boundary), environment.deny, and on_unsupported
 * (allow: a session runs without what the kernel cannot hold, and says
 * so). Pointers live as long as the policy.
 */
struct eg_policy_boundary {
	struct eg_ll_layer layer;
	bool filesystem, network;	/* the sections are there */
	const char *const *env_deny;	/* fnmatch globs on a variable's name, upper case */
	size_t n_env_deny;
	bool on_unsupported_allow;
};
const struct eg_policy_boundary *policy_boundary(const struct eg_policy *p);

/* Parses "allow", "deny", "approval", "audit"; -EINVAL otherwise. */
int eg_decision_parse(const char *s, enum eg_decision *ret);

/* "FILE:LINE:COL: error: msg" (or "FILE: warning: msg" without a place). */
int eg_diag_format(const struct eg_diag *d, char *buf, size_t len);

/* Errors in d (warnings not counted). */
size_t eg_diags_errors(const struct eg_diags *d);

/*
 * A read-only view of one compiled rule, for `policy check`, the kernel
 * rule compiler and tests. Pointers live as long as the policy.
 */
struct eg_rule_info {
	const char *name;
	const char *message;		/* NULL if none */
	enum eg_decision decision;
	int line, column;		/* where the rule starts in the file */
	const char *const *basenames;	/* exact names */
	size_t n_basenames;
	const char *const *paths;	/* fnmatch globs on the filename, '*' crosses '/' */
	size_t n_paths;
	const char *const *cgroups;	/* cgroup v2 paths: that cgroup and below */
	size_t n_cgroups;
	const uint32_t *uids;
	size_t n_uids;
	size_t n_args_patterns;		/* regexes: the kernel cannot evaluate these */
	size_t n_args;
	int min_depth;			/* 0 when the rule has no context */
	int max_depth;			/* -1: no upper bound */
	uint32_t ctx_mask;		/* contexts: bit 0 none, bit N context N; 0: in every one and outside */
};

/* Rule i's severity (enum eg_severity, 0: none) and tags; -ERANGE out of range. */
int policy_rule_labels(const struct eg_policy *p, int i, int *ret_severity, const char *const **ret_tags,
		       size_t *ret_ntags);

/* -ERANGE if i >= policy_rule_count(p). */
int policy_rule_info(const struct eg_policy *p, size_t i, struct eg_rule_info *ret);

/* Source text of rule i's regex k: from args (whole) or args_patterns; NULL out of range. */
const char *policy_rule_regex(const struct eg_policy *p, size_t i, bool whole, size_t k);

/*
 * The k-th file rule i's literal paths named when the policy was loaded
 * (dev in the kernel's encoding, inode); -ERANGE past the last.
 */
int policy_rule_file_id(const struct eg_policy *p, size_t i, size_t k, uint64_t *dev, uint64_t *ino);
/*
 * The k-th file rule i (an allow) names through root's own links from one
 * of its basenames (/usr/bin/gcc -> x86_64-linux-gnu-gcc-12); -ERANGE past the last.
 */
int policy_rule_alias_id(const struct eg_policy *p, size_t i, size_t k, uint64_t *dev, uint64_t *ino);
/* The k-th file internal_bypass names on this host (at load); -ERANGE past the last. */
int policy_bypass_file_id(const struct eg_policy *p, size_t k, uint64_t *dev, uint64_t *ino);

/* sandbox.seccomp.execve.internal_bypass globs, in file order. */
const char *const *policy_internal_bypass(const struct eg_policy *p, size_t *ret_n);

/*
 * Whether the file (resolved path, identity) may use internal_bypass: the
 * path matches an entry and the file is the one the entry names on this
 * host (identity from the daemon's mount namespace, refreshed at load and
 * checked again on a miss), in a root-owned directory nobody else can
 * write. A file from another mount namespace never gets it.
 */
bool policy_bypass_allowed(const struct eg_policy *p, const char *filename, uint64_t dev,
			   uint64_t ino, bool foreign_ns);

/*
 * Agent contexts (top-level "contexts:"): ids 1..policy_context_count().
 * An exec that matches one of a context's identities enters it; rules
 * with "contexts:" apply only there (or, with "none", outside any).
 */
#define EG_POLICY_MAX_CONTEXTS	31
#define EG_POLICY_CONTEXT_NAME_MAX 63	/* bytes: the kernel keeps a context's name (eg_kctx, eg_ctxname) */
struct eg_context_info {
	const char *name;
	int line, column;
	int max_depth;			/* limits.max_depth; -1: none */
	int max_shells;			/* limits.max_consecutive_shells; -1: none */
	size_t n_identities;
};
size_t policy_context_count(const struct eg_policy *p);
/* id 1..count; -ERANGE otherwise. */
int policy_context_info(const struct eg_policy *p, uint32_t id, struct eg_context_info *ret);
/* The id of the context named so; 0: none. */
uint32_t policy_context_id(const struct eg_policy *p, const char *name);
/*
 * The context whose identity the program in req is (the first context in
 * file order with an identity that matches); 0: none. What req says of its
 * context and depth is not read.
 */
uint32_t policy_context_identity(const struct eg_policy *p, const struct eg_exec_req *req);
/*
 * The identities as a policy of allow rules (one per identity, named after
 * its context; policy_identity_context() maps rule i to its context), for
 * the kernel compiler; NULL when the policy has no contexts.
 */
const struct eg_policy *policy_identities(const struct eg_policy *p);
uint32_t policy_identity_context(const struct eg_policy *idents, size_t i);
/* The resolved file is a shell (its name: sh, dash, bash, ...), as max_consecutive_shells counts them. */
bool policy_is_shell(const char *path);
/* ... an interpreter (node, python3, ...) whose script a context's identity may name. */
bool policy_is_interpreter(const char *path);
/* Whether req goes past its context's limits; *why says which (static text). */
bool policy_context_over(const struct eg_policy *p, const struct eg_exec_req *req, const char **why);

#endif
