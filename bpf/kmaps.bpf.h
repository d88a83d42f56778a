/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The kernel rules' maps (written by userspace/enforce/kmaps.c: two sets,
 * one in force) and what is in force: the sequence number, whether the
 * set holds rules or only contexts, whether it enforces.
 */
#ifndef EG_KMAPS_BPF_H
#define EG_KMAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "kfacts.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EG_KSETS * EG_KRULES_MAX);
	__type(key, __u32);
	__type(value, struct eg_krule);
} krules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EG_KINDEX_MAX);
	__type(key, struct eg_kkey);
	__type(value, struct eg_kcands);
} kindex SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EG_KMEMBER_MAX);
	__type(key, struct eg_kkey);
	__type(value, __u32);		/* 1; EG_KK_ARG: a bit per token group holding the argument */
} kmember SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EG_KGLOBS_MAX);
	__type(key, struct eg_kglob_key);
	__type(value, struct eg_kglob);
} kglobs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EG_KSETS);
	__type(key, __u32);
	__type(value, struct eg_kconf);
} kconf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eg_kstate);
} kstate SEC(".maps");

/* Each context's limits and name, per set (key: set * EG_CONTEXTS_MAX + id). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EG_KSETS * EG_CONTEXTS_MAX);
	__type(key, __u32);
	__type(value, struct eg_kctx);
} kctx SEC(".maps");

static __always_inline struct eg_kstate *kstate_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&kstate, &zero);
}

/* The set in force now (eg_kstate.seq); 0: none. */
static __always_inline __u32 kstate_seq(void)
{
	struct eg_kstate *s = kstate_get();

	return s ? *(volatile __u32 *)&s->seq : 0;
}

/* The set in force holds the policy's rules (not only its contexts' identities). */
static __always_inline bool krules_commands(void)
{
	__u32 set = EG_KSET_OF(kstate_seq());
	struct eg_kconf *c = bpf_map_lookup_elem(&kconf, &set);

	return c && (c->flags & EG_KC_RULES);
}

/* Kernel rules are loaded. */
static __always_inline bool krules_loaded(void)
{
	struct eg_kstate *s = kstate_get();

	return s && s->seq;
}

/* The set in force acts on what it denies (else it only judges and reports). */
static __always_inline bool kenforcing(void)
{
	struct eg_kstate *st = kstate_get();
	struct eg_kconf *c;
	__u32 set, seq;

	if (!st)
		return false;
	seq = *(volatile __u32 *)&st->seq;
	if (!seq)
		return false;
	set = EG_KSET_OF(seq);
	c = bpf_map_lookup_elem(&kconf, &set);
	return c && (c->flags & EG_KC_ENFORCE);
}

#endif /* EG_KMAPS_BPF_H */
