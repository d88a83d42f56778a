/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the policy engine: the compiled form shared by the loader
 * (policy_load.c), the index and evaluator (policy_eval.c) and the linter
 * (policy_lint.c). Nothing outside policy_*.c includes this.
 */
#ifndef EG_POLICY_INT_H
#define EG_POLICY_INT_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdarg.h>
#include "match/glob.h"
#include "match/htab.h"
#include "policy/policy.h"
#include "util/digest.h"
#include "yaml/reader.h"	/* struct eg_pos */

/* Limits on what a policy file may ask of us (bounded memory, bounded time). */
#define EG_POLICY_MAX_BYTES	(16u << 20)	/* file size */
#define EG_POLICY_MAX_RULES	1000000u
#define EG_POLICY_MAX_NEST	64		/* YAML collections inside each other */
#define EG_POLICY_MAX_ITEMS	2000000u	/* list items (names, paths, uids...), whole file */
#define EG_POLICY_MAX_REGEXES	200000u		/* args + args_patterns, whole file */
#define EG_POLICY_MAX_JIT	20000u		/* regexes past this run interpreted */
#define EG_POLICY_MAX_REGEX_MEM	(128u << 20)	/* compiled + JIT code, whole file */
#define EG_POLICY_MAX_PATTERN	4096u		/* bytes in one regex or glob */
#define EG_POLICY_MAX_DIAGS	1000u		/* diagnostics kept; the count goes on */
#define EG_POLICY_MATCH_LIMIT	1000000u	/* PCRE2 backtracking steps per match */
#define EG_POLICY_LINT_BUDGET	20000000u	/* rule pairs the shadowing lint compares */
#define EG_DEPTH_INF		INT32_MAX


struct eg_strv {
	char **v;
	struct eg_pos *pos;
	uint32_t n;
};

struct eg_regex {
	pcre2_code *code;
	char *src;
	struct eg_pos pos;
};

struct eg_file_id {
	uint64_t dev, ino;		/* dev in the kernel's encoding (eg_kdev) */
};

struct eg_rule {
	/* What the evaluator reads first, in the first cache line. */
	int32_t min_depth, max_depth;	/* max_depth EG_DEPTH_INF: no bound */
	uint32_t n_uids;
	enum eg_decision decision;
	uint32_t *uids;
	struct eg_strv paths;		/* fnmatch globs, no FNM_PATHNAME */
	struct eg_glob *path_glob;	/* per path */
	struct eg_file_key *path_ids;	/* what the literal paths were at load: file and content */
	uint32_t n_path_ids;
	uint32_t n_args;
	uint32_t n_args_patterns;
	bool indexed_by_basename;	/* reached only through its basenames */
	struct eg_file_id *alias_ids;	/* an allow: files its names lead to through root's links (alias.c) */
	uint32_t n_alias_ids;
	bool has_context;
	bool has_decision;
	uint32_t ctx_mask;		/* contexts: bit 0 none, bit N context N; 0: any */
	uint32_t ident_of;		/* an identity (p->idents): its context's id */
	struct eg_strv ctx_names;	/* contexts: as written, resolved into ctx_mask after the file */
	struct eg_regex *args;		/* each must match one whole argument */
	struct eg_regex *args_patterns;	/* searched in argv[1..] joined by ' ' */
	struct eg_strv cgroups;		/* normalized: no trailing '/', "/" for the root */
	struct eg_strv basenames;
	char *name;
	char *message;
	struct eg_redirect redirect;	/* decision redirect: redirect_to */
	struct eg_pos redirect_pos;
	int severity;			/* enum eg_severity, 0: none */
	struct eg_strv tags;
	struct eg_pos pos, name_pos, decision_pos;
};

/* An agent context (top-level "contexts:"): id = index + 1. */
struct eg_context {
	char *name;
	struct eg_pos pos;
	int32_t max_depth;		/* limits.max_depth; -1: none */
	int32_t max_shells;		/* limits.max_consecutive_shells; -1: none */
	uint32_t n_ident;		/* identities in p->idents */
};

struct eg_cursor {
	const uint32_t *idx;
	uint32_t n, at;
};

/*
 * What one evaluation scribbles on. It hangs off the policy so that an
 * evaluation allocates nothing; hence one evaluating thread at a time.
 */
struct eg_scratch {
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jit_stack;	/* NULL: JIT runs on its default 32 KiB */
	char *join;			/* argv[1..] joined by ' ' */
	size_t join_cap;
	struct eg_cursor *cur;
	uint32_t ncur;
};

/*
 * A file a rule names by its literal path, as found at load: its identity
 * (a hard link or a bind mount is the same file) and its content (a copy
 * under another name is the same program).
 */
struct eg_file_key {
	struct eg_file_id id;
	uint64_t size;
	uint8_t sha256[32];
	bool hashed;
};

#define EG_POLICY_MAX_HASHED	(256u << 20)	/* bytes of named files hashed at load, whole file */

#define EG_POLICY_MAX_BYPASS_IDS 65536u

struct eg_policy {
	struct eg_policy_settings settings;
	bool no_files;			/* POLICY_LOAD_NO_FILES: no file is opened or hashed */
	struct eg_rule *rules;
	size_t n_rules, cap_rules;
	struct eg_strv bypass;		/* internal_bypass globs on the filename */
	struct eg_pos bypass_pos;
	struct eg_pos approval_timeout_pos;
	struct eg_pos default_decision_pos;
	struct eg_pos on_truncated_pos;
	uint32_t n_regexes;
	size_t regex_mem;		/* compiled + JIT bytes so far */
	struct eg_htab by_basename;	/* basenames, and basenames implied by paths */
	struct eg_htab by_dir;		/* literal directory prefix of path globs ("/opt/x/") */
	uint32_t max_dir_slashes;	/* most '/' in a by_dir key */
	struct eg_htab by_suffix;	/* literal tail of path globs ("*.sh" -> ".sh") */
	uint64_t suffix_lens;		/* bit n-1: some by_suffix key is n bytes long */
	struct eg_htab by_uid;		/* rules with no name to go by: their uids (4 bytes) */
	struct eg_htab by_cgroup;	/* ... or else their cgroups */
	struct eg_htab by_ident;	/* dev+ino of files literal paths name */
	struct eg_htab by_content;	/* sha256 of those files */
	struct eg_htab by_alias;	/* dev+ino of files allows name through root's own links */
	struct eg_htab by_size;		/* their sizes: whether an exec's file is worth hashing */
	uint64_t hashed_bytes;
	uint32_t max_cg_slashes;	/* most '/' in a by_cgroup key */
	struct eg_glob *bypass_glob;
	struct eg_file_id *bypass_ids;	/* the files internal_bypass names, on this host */
	size_t n_bypass_ids;
	uint32_t *unindexed;		/* rules no key can rule out, ascending */
	uint32_t n_unindexed;
	char sha256[SHA256_HEX_LEN];
	uint64_t load_seq;		/* this load's number in the process (policy_load_seq) */
	char *source;			/* the bytes it was loaded from */
	size_t source_len;
	struct eg_scratch *scratch;
	struct eg_context *contexts;	/* ids 1..n_contexts */
	uint32_t n_contexts;
	struct eg_policy *idents;	/* the contexts' identities, as allow rules (ident_of) */
	/* filesystem:, network:, environment:, on_unsupported: (the session's boundary) */
	struct eg_strv fs_read, fs_write, fs_execute, env_deny;
	uint16_t *connect_tcp, *bind_tcp;
	size_t n_connect_tcp, n_bind_tcp;
	struct eg_policy_boundary boundary;	/* views of the above, set at the end of a load */
};

/* policy.c */
void eg_diag_vadd(struct eg_diags *d, const char *file, struct eg_pos pos, bool warning,
		  const char *fmt, va_list ap);
void eg_diag_add(struct eg_diags *d, const char *file, struct eg_pos pos, bool warning,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void eg_strv_free(struct eg_strv *s);

/* policy_load.c: "10s", "500ms", "2m", "1m30s", "1.5" (a bare number is seconds). */
int eg_parse_duration_ms(const char *s, uint64_t *ret_ms);

/* policy_eval.c */
/* Builds the indexes and the scratch space: the last step of a load. */
int eg_policy_compile(struct eg_policy *p);
/* pattern matches the empty string (interpreted, no scratch needed) */
bool eg_regex_matches_empty(const struct eg_regex *re);

/* identity.c */
int eg_identity_compile(struct eg_policy *p);

/* alias.c */
int eg_alias_compile(struct eg_policy *p);
/* the directories allows' names are looked up in, to fn */
void eg_alias_dirs(void (*fn)(const char *dir, void *arg), void *arg);
/* bypass.c: the directories internal_bypass's bare names cover, to fn */
void eg_bypass_dirs(void (*fn)(const char *dir, void *arg), void *arg);
bool eg_rule_has_alias(const struct eg_rule *r, uint64_t dev, uint64_t ino);

/* bypass.c */
/* Expands the internal_bypass entries into file identities (load, reload). */
void eg_bypass_refresh(struct eg_policy *p);
/* dir (an absolute, resolved path) and every directory above it are root's and nobody else's to write */
bool eg_trusted_dirs(const char *dir);

/* policy_lint.c: adds warnings only. */
void eg_policy_lint(const struct eg_policy *p, const char *file, struct eg_diags *d);

#endif
