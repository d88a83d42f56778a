/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Session tickets: what a supervisor allowed, checked against the exec
 * that really happens (at bprm_check_security per program, at
 * sched_process_exec with the committed argv).
 */
#ifndef EG_TICKETS_BPF_H
#define EG_TICKETS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct eg_ticket);
} tickets SEC(".maps");

/* most tickets: argv up to EG_TICKET_SMALL_ARGV_MAX bytes (execgate.h) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct eg_ticket_small);
} tickets_small SEC(".maps");

/* ---- session tickets ------------------------------------------------------ */

struct cmp_walk {
	const char *a;			/* the committed argv, in scratch */
	const char *b;			/* the ticket's copy */
	__u32 len;
	bool differ;
};

static long cmp_step(__u32 i, struct cmp_walk *w)
{
	__u64 x = 0, y = 0, mask = ~0ull;
	__u32 at = i * 8, left;

	if (at >= w->len)
		return 1;
	left = w->len - at;
	if (left < 8)
		mask = (1ull << (left * 8)) - 1;
	if (bpf_probe_read_kernel(&x, 8, w->a + at) || bpf_probe_read_kernel(&y, 8, w->b + at) ||
	    ((x ^ y) & mask)) {
		w->differ = true;
		return 1;
	}
	return 0;
}

/*
 * A thread's ticket: the small map first (most tickets), then the large
 * one. The small value is a prefix of struct eg_ticket, so both are read
 * through one type; *ret_cap is how much argv the value holds.
 */
static __always_inline struct eg_ticket *ticket_find(__u32 tid, __u32 *ret_cap)
{
	struct eg_ticket *t = bpf_map_lookup_elem(&tickets_small, &tid);

	if (t) {
		*ret_cap = EG_TICKET_SMALL_ARGV_MAX;
		return t;
	}
	*ret_cap = EG_TICKET_ARGV_MAX;
	return bpf_map_lookup_elem(&tickets, &tid);
}

/*
 * Used up, or for an exec that will never be: gone from both maps. 0 if
 * the thread had a ticket, -ENOENT if it had none.
 */
static __always_inline long ticket_drop(__u32 tid)
{
	long small = bpf_map_delete_elem(&tickets_small, &tid);
	long large = bpf_map_delete_elem(&tickets, &tid);

	return small && large ? -2 /* ENOENT */ : 0;
}

/*
 * The middle scripts of the record's '#!' chain (chain[], at scratch+off,
 * len bytes) are the ones the ticket names, in order. A chain the record
 * could not hold whole is not: without BPF LSM (which checked every file
 * as the kernel opened it) that exec is not one that can be pinned.
 */
static __noinline __u32 check_chain(struct eg_ticket *t, const char *chain, __u32 len, __u32 cut)
{
	struct eg_chain_ent ent = {};
	__u32 off = 0, k, n = t->chain_n;

	if (cut)
		return lsm_tickets ? EG_REASON_NONE : EG_REASON_NO_PIN;
	for (k = 0; k < EG_CHAIN_MAX; k++) {
		if (off + sizeof(ent) > len)
			break;
		if (off > EG_CHAIN_BYTES || bpf_probe_read_kernel(&ent, sizeof(ent), chain + off))
			return EG_REASON_TICKET_CHAIN;
		if (k >= n || ent.dev != t->chain_dev[k] || ent.ino != t->chain_ino[k])
			return EG_REASON_TICKET_CHAIN;
		off += sizeof(ent) + ent.len;
	}
	/* fewer levels than allowed (or more, cut): not the chain judged */
	if (k != n && !(lsm_tickets && !len))
		return EG_REASON_TICKET_CHAIN;
	return EG_REASON_NONE;
}

/*
 * The exec of a task in a session must be the one its supervisor allowed:
 * same session, same file, same scripts, the same committed argv; a loader
 * run as the command gets the program the supervisor judged as its target
 * (checked when it maps it: loaded.bpf.h). Returns EG_REASON_NONE when it
 * is; the ticket is used up either way.
 */
static __noinline __u32 check_ticket(struct eg_event *e, const char *argv, __u64 argv_read,
				     __u64 argv_full, struct eg_task *st)
{
	__u32 tid = e->tid, session = e->session, cap, clen;
	struct eg_ticket *t = ticket_find(tid, &cap);
	struct cmp_walk w = {};
	__u32 reason = EG_REASON_NONE;
	__u64 coff;

	if (st)
		st->flags &= ~EG_TASK_LOADER_TICKET;
	if (!t)
		return EG_REASON_NO_TICKET;
	coff = EG_EVENT_HDR + *(volatile __u16 *)&e->filename_len + *(volatile __u16 *)&e->requested_len +
	       *(volatile __u16 *)&e->interp_len + *(volatile __u16 *)&e->script_len;
	clen = *(volatile __u16 *)&e->chain_len;
	eg_clamp(coff, EG_EVENT_HDR + EG_STRINGS_MAX);
	if (t->session != session)
		reason = EG_REASON_TICKET_SESSION;
	else if (t->dev != e->dev || t->ino != e->ino)
		reason = EG_REASON_TICKET_FILE;
	else if ((t->flags & EG_TICKET_SCRIPT) && (e->flags & EG_F_SCRIPT_FOUND) &&
		 (t->script_dev != e->script_dev || t->script_ino != e->script_ino))
		reason = EG_REASON_TICKET_SCRIPT;
	/* a script this kernel could not name: only BPF LSM, which saw each file opened, pinned it */
	else if ((t->flags & EG_TICKET_SCRIPT) && !(e->flags & EG_F_SCRIPT_FOUND) && !lsm_tickets)
		reason = EG_REASON_NO_PIN;
	else if ((t->flags & EG_TICKET_SCRIPT) &&
		 (reason = check_chain(t, (const char *)e + coff, clen, e->flags & EG_F_CHAIN_CUT)))
		;
	/* a loader asked for a program: only the one the supervisor judged (or none it could tell) */
	else if ((e->flags & EG_F_LOADER) && e->loader_arg && !(t->flags & EG_TICKET_LOADER))
		reason = EG_REASON_TICKET_LOADER;
	/* ... which a 32-bit loader's mapping (mmap2, no tracepoint) cannot be checked against */
	else if ((e->flags & EG_F_LOADER) && (e->flags2 & EG_F2_LOADER_32))
		reason = EG_REASON_TICKET_LOADER;
	/* an overlay view whose file behind it is unknown: a loader, say, is not known as one */
	else if (e->flags2 & EG_F2_BACKING_UNKNOWN)
		reason = EG_REASON_TICKET_FILE;
	else if (t->argv_len != argv_full ||
		 (!(t->flags & EG_TICKET_ARGV_PREFIX) && t->argv_stored != argv_full) ||
		 t->argv_stored > argv_read || t->argv_stored > cap)
		reason = EG_REASON_TICKET_ARGV;
	if (!reason) {
		w.a = argv;
		w.b = t->argv;
		w.len = t->argv_stored;
		bpf_loop(EG_TICKET_ARGV_MAX / 8, cmp_step, &w, 0);
		if (w.differ)
			reason = EG_REASON_TICKET_ARGV;
	}
	if (!reason && st && (e->flags & EG_F_LOADER)) {
		st->loader_dev = t->target_dev;
		st->loader_ino = t->target_ino;
		st->flags |= EG_TASK_LOADER_TICKET;
	}
	ticket_drop(tid);
	return reason;
}

/*
 * A session exec must be the one its supervisor allowed: the ticket names
 * the file that will run and, for a script, the script (checked here per
 * program, as the kernel opens each); argv is compared at exec, when it is
 * final. No ticket, or another file: refused.
 */
static __always_inline int lsm_ticket(struct eg_task *st, struct file *file, __u32 *reason)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), cap, k;
	struct eg_ticket *t;
	__u64 dev, ino;

	if (!st || !st->session)
		return 0;
	t = ticket_find(tid, &cap);
	if (!t) {
		*reason = EG_REASON_NO_TICKET;
		return -1;
	}
	if (t->session != st->session) {
		*reason = EG_REASON_TICKET_SESSION;
		return -1;
	}
	dev = inode_dev(BPF_CORE_READ(file, f_inode));
	ino = BPF_CORE_READ(file, f_inode, i_ino);
	if (dev == t->dev && ino == t->ino)
		return 0;
	if ((t->flags & EG_TICKET_SCRIPT) && dev == t->script_dev && ino == t->script_ino)
		return 0;
	/* a '#!' chain: each middle script is opened (and checked) in turn */
	for (k = 0; k < EG_CHAIN_MAX; k++)
		if (k < t->chain_n && dev == t->chain_dev[k] && ino == t->chain_ino[k])
			return 0;
	*reason = EG_REASON_TICKET_FILE;
	return -1;
}

#endif /* EG_TICKETS_BPF_H */
