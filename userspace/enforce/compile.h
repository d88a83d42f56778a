/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The policy compiler: the rules the kernel can evaluate, as the entries of
 * the kernel rule maps (ABI in bpf/execgate.h, evaluated by
 * bpf/kjudge.bpf.h), and for every rule where it is enforced and why.
 *
 * A rule goes into the kernel when all its matchers can: basenames, paths
 * (exact, or globs of '*' and '?'), uids, cgroups (the same globs),
 * context, and args regexes that are plain words or alternations of
 * words (matched as whole arguments). args_patterns (a regex searched in
 * the joined command line) and other regexes stay in userspace: supervised
 * sessions and the audit log apply them.
 */
#ifndef EG_ENFORCE_COMPILE_H
#define EG_ENFORCE_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "execgate.h"
#include "policy/policy.h"

struct kc_index {
	struct eg_kkey key;		/* set 0; the writer sets it */
	struct eg_kcands val;
};

struct kc_member {
	struct eg_kkey key;
	__u32 val;
};

struct kc_glob {
	__u32 id;
	struct eg_kglob g;
};

/* Where one policy rule is enforced. */
struct kc_rule {
	bool kernel;			/* compiled into the kernel maps */
	uint32_t knum;			/* its kernel rule number, when kernel */
	char why[200];			/* when not: the reason */
};

struct kc_prog {
	struct eg_kconf conf;		/* flags without EG_KC_ENFORCE; the writer adds it */
	struct eg_krule *rules;
	size_t n_rules;
	struct kc_index *index;
	size_t n_index;
	struct kc_member *member;
	size_t n_member;
	struct kc_glob *globs;
	size_t n_globs;
	struct kc_rule *info;		/* one per policy rule */
	size_t n_info;
	size_t n_left_out;		/* policy rules not in the kernel */
	bool bypass_left_out;		/* internal_bypass could not be compiled */
	char bypass_why[200];
	/* agent contexts: limits and names by id (1..n_ctx), and an identity the kernel cannot match */
	struct eg_kctx ctx[EG_CONTEXTS_MAX];
	uint32_t n_ctx;
	bool ident_left_out;
	char ident_why[260];
	/*
	 * Leaving those out changes what the kernel denies: one of them denies
	 * (or asks, with kernel_approval: deny), or a deny comes after it.
	 */
	bool partial;
};

/*
 * host_mnt_ns: where internal_bypass holds (the daemon's mount namespace
 * inode). rules false: the contexts' identities alone (a daemon without
 * --enforce), where the rules' size cannot make it fail.
 */
int kcompile(const struct eg_policy *p, uint64_t host_mnt_ns, bool rules, struct kc_prog **ret);
void kc_prog_free(struct kc_prog *k);

/* The kernel's decision for a policy decision (approval follows kernel_approval). */
uint32_t kc_decision(const struct eg_policy *p, enum eg_decision d);
/* "allow", "deny", ... for EG_KD_*; "bypass" and "error" too. */
const char *kc_decision_name(uint32_t kd);

/*
 * Splits an args regex into the whole arguments it matches when it is a
 * plain word or an alternation of words ("-rf|-fr", "^(--force)$");
 * returns the number of words (stored NUL-terminated in buf, one after
 * the other) or -EINVAL when it is a real regular expression.
 */
int kc_regex_words(const char *re, char *buf, size_t size);

#endif
