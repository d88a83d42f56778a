/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A --cgroup scope follows its path. `podman restart` makes a new cgroup
 * (a new id) at the same path: at the cgroup's mkdir, before any task can
 * be moved into it, its id joins the scope, so the container's first exec
 * is traced and judged; at its rmdir the id leaves. Each change is an
 * EG_EVENT_SCOPE record for the daemon (status, metrics, the per-cgroup
 * BPF LSM link it attaches again).
 */
#ifndef EG_SCOPE_BPF_H
#define EG_SCOPE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "record.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EG_SCOPES_MAX);
	__type(key, __u32);
	__type(value, struct eg_scope);
} scope_paths SEC(".maps");

struct scope_find {
	char path[EG_SCOPE_PATH_MAX];
	__u32 len;
	__s32 hit;
};

static long scope_step(__u32 i, struct scope_find *c)
{
	struct eg_scope *sp = bpf_map_lookup_elem(&scope_paths, &i);
	__u64 *a, *b;
	__u32 k;

	if (!sp || !sp->len)
		return 1;	/* the scopes are the first entries */
	if (sp->len != c->len)
		return 0;
	a = (__u64 *)sp->path;
	b = (__u64 *)c->path;
	for (k = 0; k < EG_SCOPE_PATH_MAX / 8; k++)
		if (a[k] != b[k])
			return 0;
	c->hit = i;
	return 1;
}

/* The scope whose path is this cgroup's (on the default hierarchy), or -1. */
static __always_inline __s32 scope_of(struct cgroup *cgrp, const char *path, struct scope_find *c)
{
	long n;

	c->hit = -1;
	if (!scope_on || BPF_CORE_READ(cgrp, root, hierarchy_id) != 0)
		return -1;
	__builtin_memset(c->path, 0, sizeof(c->path));
	/* a path of 255 bytes is a scope's longest (EG_SCOPE_PATH_MAX with its NUL) */
	n = bpf_probe_read_kernel_str(c->path, sizeof(c->path), path);
	n = eg_str_whole(n, path, sizeof(c->path), false);
	if (n <= 1)
		return -1;
	c->len = n - 1;
	bpf_loop(EG_SCOPES_MAX, scope_step, c, 0);
	return c->hit;
}

/* The id in or out of the scope, and a record of it. */
static __noinline void scope_change(__u64 id, __u32 index, __u32 state)
{
	struct eg_event *e;
	__u32 one = 1;

	if (state == EG_SCOPE_BACK)
		bpf_map_update_elem(&scope, &id, &one, BPF_ANY);
	else
		bpf_map_delete_elem(&scope, &id);
	e = record_begin(EG_EVENT_SCOPE);
	if (!e)
		return;
	e->cgroup_id = id;
	e->dirfd = index;
	e->at_flags = state;
	submit((char *)e, EG_EVENT_HDR, EG_EVENT_SCOPE);
}

/*
 * A cgroup (v2) made, by its id and path: the daemon names the cgroups of
 * its records by id when it writes them, and a container that ran and
 * went within its drain delay (docker run --rm, a Job's pod) would have
 * left nothing to name it by (no cgroup, no container, its cgroups: rules
 * unjudged). A cgroup is made before anything runs in it, so this record
 * comes before theirs.
 */
#define EG_CGROUP_MADE_MAX	1024

static __noinline void cgroup_made(struct cgroup *cgrp, const char *path)
{
	struct eg_event *e;
	long n;

	if (!cgrp || BPF_CORE_READ(cgrp, root, hierarchy_id) != 0)
		return;
	e = record_begin(EG_EVENT_CGROUP);
	if (!e)
		return;
	e->cgroup_id = BPF_CORE_READ(cgrp, kn, id);
	n = bpf_probe_read_kernel_str((char *)e + EG_EVENT_HDR, EG_FILENAME_MAX, path);
	/*
	 * A path cut short names another cgroup: none. The tracepoint's own
	 * buffer is 1024 bytes (TRACE_CGROUP_PATH_LEN): a path that fills it
	 * may have been cut there.
	 */
	if (n <= 1 || n >= EG_CGROUP_MADE_MAX)
		return;
	e->requested_len = (__u16)(n - 1);
	submit((char *)e, EG_EVENT_HDR + (__u32)(n - 1), EG_EVENT_CGROUP);
}

#endif /* EG_SCOPE_BPF_H */
