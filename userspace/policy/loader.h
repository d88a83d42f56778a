/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the policy loader: the state its parts share (load.c: the file
 * and the top level; load_rules.c: commands and contexts; load_sandbox.c:
 * the session's settings and boundary), the schema's keys, and the
 * helpers the parts have in common. Built on the YAML reader (yaml/).
 */
#ifndef EG_POLICY_LOADER_H
#define EG_POLICY_LOADER_H

#include "policy/internal.h"
#include "yaml/reader.h"

struct loader {
	struct yreader y;		/* first: the reader's callbacks get the loader */
	const char *file;
	struct eg_diags *diags;
	struct eg_policy *p;
	struct eg_htab names;		/* rule name -> index, for duplicates */
	struct eg_policy *top;		/* the policy (l->p is its identities' while they are read) */
};

/* The loader of a reader (the reader is its first member). */
#define LOADER(y) ((struct loader *)(y))

/* Keys per mapping; enum values index these tables. */
enum { ROOT_SANDBOX, ROOT_COMMANDS, ROOT_DEFAULT_DECISION, ROOT_UNKNOWN_DEPTH, ROOT_KERNEL_APPROVAL,
       ROOT_CONTEXTS, ROOT_FILESYSTEM, ROOT_NETWORK, ROOT_ENVIRONMENT, ROOT_ON_UNSUPPORTED };
extern const char *const root_keys[];

/* The session's boundary: filesystem:, network:, environment: */
enum { FS_READ, FS_WRITE, FS_EXECUTE };
extern const char *const filesystem_keys[];
enum { NET_CONNECT_TCP, NET_BIND_TCP };
extern const char *const network_keys[];
enum { ENV_DENY };
extern const char *const environment_keys[];

enum { SANDBOX_SECCOMP };
extern const char *const sandbox_keys[];

enum { SECCOMP_ENABLED, SECCOMP_UNIX_SOCKET, SECCOMP_EXECVE };
extern const char *const seccomp_keys[];

enum { UNIX_ENABLED };
extern const char *const unix_socket_keys[];

enum { EX_ENABLED, EX_MAX_ARGC, EX_MAX_ARGV_BYTES, EX_ON_TRUNCATED, EX_APPROVAL_TIMEOUT,
       EX_APPROVAL_TIMEOUT_ACTION, EX_INTERNAL_BYPASS, EX_ON_ERROR };
extern const char *const execve_keys[];

enum { R_NAME, R_BASENAMES, R_PATHS, R_ARGS_PATTERNS, R_ARGS, R_CONTEXT, R_CGROUPS, R_UIDS,
       R_DECISION, R_MESSAGE, R_SEVERITY, R_TAGS, R_CONTEXTS, R_REDIRECT_TO };
extern const char *const rule_keys[];

/* What an identity matches on: the program, its arguments, who runs it. */
#define IDENT_KEYS ((1u << R_BASENAMES) | (1u << R_PATHS) | (1u << R_ARGS) | (1u << R_UIDS))

enum { AC_NAME, AC_IDENTITIES, AC_LIMITS };
extern const char *const actx_keys[];

enum { LIM_MAX_DEPTH, LIM_MAX_SHELLS };
extern const char *const limit_keys[];

enum { CTX_MIN_DEPTH, CTX_MAX_DEPTH };
extern const char *const context_keys[];

#define ALL_DECISIONS 0xfu
/* a rule's: redirect too (never a default) */
#define RULE_DECISIONS (ALL_DECISIONS | 1u << EG_DECISION_REDIRECT)

/* load.c */
int load_decision(struct loader *l, const char *what, unsigned int allowed, enum eg_decision *out);
/* One of two words: *ret = false for `no`, true for `yes`. */
int load_word(struct loader *l, const char *what, const char *no, const char *yes, bool *ret);
int load_strv_push(struct loader *l, struct eg_strv *sv, char *s, struct eg_pos pos);
/* An item of a list of strings, into the eg_strv ctx. */
int load_strv_item(struct yreader *y, const char *what, void *ctx);
void load_settings_defaults(struct eg_policy_settings *s);

/* load_rules.c */
int load_commands(struct loader *l);
int load_contexts(struct loader *l);
/* Rules' contexts: names, now that every context is known, into masks. */
void load_resolve_contexts(struct loader *l);

/* load_sandbox.c */
int load_sandbox(struct loader *l);
int load_filesystem(struct loader *l);
int load_network(struct loader *l);
int load_environment(struct loader *l);
/* After the load: the boundary's views of the policy's sections. */
void load_boundary_views(struct eg_policy *p);

#endif
