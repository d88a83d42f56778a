// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate tracer: exec depth per task in task storage, one ring-buffer
 * record per exec and per failed exec.
 *
 * An exec record says what really runs: the file the kernel opened
 * (bprm->file, walked up to the root of its mount namespace), the path as
 * the caller spelled it, a script's interpreter and the script itself, the
 * committed argv from the new mm, the credentials after the exec, the
 * namespaces and the controlling terminal.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Fixed at load time by the daemon (skel->rodata). */
const volatile __u32 max_argv_bytes = EG_ARGV_DEFAULT;
const volatile __u32 scope_on = 0;		/* 0: every cgroup; else the subtrees in "scope" */
const volatile __u32 scope_max_level = 0;	/* the deepest of them */
const volatile __u64 wakeup_bytes = 1 << 20;	/* queued bytes that force a wakeup */
const volatile __u32 my_gen = 0;		/* acts only while control.active_gen is this */
const volatile __u32 report_failures = 1;	/* exec_failed records (--exec-failed=none: 0) */

/*
 * fput() defers the final release to task work: a script's struct file is
 * on the exec'ing task's task_works list when sched_process_exec fires
 * (fs/file_table.c). The callback's address tells those entries apart.
 */
extern const void ____fput __ksym __weak;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EG_RINGBUF_DEFAULT);
} events SEC(".maps");

EG_TASKS_MAP;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct eg_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eg_counters);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct eg_script);
} scripts SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eg_control);
} control SEC(".maps");

/* This copy of the programs is the one that acts (see struct eg_control). */
static __always_inline bool active(void)
{
	__u32 zero = 0;
	struct eg_control *c = bpf_map_lookup_elem(&control, &zero);

	return !c || c->active_gen == my_gen;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EG_LAUNCHERS_MAX);
	__type(key, struct eg_file_key);
	__type(value, __u32);
} launchers SEC(".maps");

/*
 * Records are built here and copied into the ring buffer at their exact
 * size: a record can reach megabytes, larger than the BPF stack or a
 * per-CPU value. One entry per CPU (max_entries set at load), value size
 * EG_SCRATCH_SIZE(max_argv_bytes) set at load. The programs that use it run
 * in task context with preemption disabled, so a CPU's entry has one user.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, EG_SCRATCH_SIZE(EG_ARGV_DEFAULT));
} scratch SEC(".maps");

/* CO-RE flavors: fields renamed or moved between kernels. */
struct file___old {			/* before the 2023 struct file rework: f_rcuhead */
	struct callback_head f_rcuhead;
} __attribute__((preserve_access_index));

static __always_inline struct eg_counters *counters_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

#define COUNT(field)						\
	do {							\
		struct eg_counters *__c = counters_get();	\
		if (__c)					\
			__sync_fetch_and_add(&__c->field, 1);	\
	} while (0)

static __always_inline char *scratch_get(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&scratch, &cpu);
}

#include "kjudge.bpf.h"

/* The cgroups traced and enforced (--cgroup, repeatable): ids of subtree roots. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u32);
} scope SEC(".maps");

/* The current task is in scope: its cgroup or an ancestor is a --cgroup. */
static __noinline bool traced_cgroup(void)
{
	__u32 level;

	if (!scope_on)
		return true;
	for (level = 0; level < 32; level++) {
		__u64 id;

		if (level > scope_max_level)
			break;
		id = bpf_get_current_ancestor_cgroup_id(level);
		if (!id)
			break;
		if (bpf_map_lookup_elem(&scope, &id))
			return true;
	}
	return false;
}

/* ---- paths --------------------------------------------------------------- */

/*
 * A path walk writes the components of a path, leaf first, each NUL
 * terminated, at scratch[off..]. It stops at root (root_dentry/root_mnt)
 * when given, else at the root of the mount namespace.
 */
struct path_walk {
	struct dentry *dentry;
	struct vfsmount *vfsmnt;
	struct dentry *root_dentry;	/* NULL: walk to the namespace root */
	struct vfsmount *root_mnt;
	__u32 off;			/* where the path starts in scratch */
	__u32 pos;			/* bytes written so far */
	__u32 trunc_flag, fault_flag, deleted_flag;
	__u32 flags;
	__u32 kslot;			/* slot + 1: write into kscratch[slot].raw, not the record */
	struct dentry *mnt_root;	/* vfsmnt's root, once read (NULL: not yet) */
	bool done;
};

/*
 * Helper calls are what a walk costs (each bpf_probe_read_kernel is a call
 * with fault handling; the pointers here are plain numbers once a mount is
 * crossed, so they cannot be loaded directly). Where the kernel keeps the
 * fields a step needs next to each other, one read fetches them all:
 * dentry: d_hash.pprev, d_parent, d_name.hash_len, d_name.name;
 * mount: mnt_parent, mnt_mountpoint. CO-RE settles which way at load time.
 */
struct dentry_head {
	void *pprev;
	struct dentry *parent;
	__u64 hash_len;
	const unsigned char *name;
};

static __always_inline bool dentry_head_packed(void)
{
	__u32 pprev = bpf_core_field_offset(struct dentry, d_hash.pprev);

	return bpf_core_field_offset(struct dentry, d_parent) == pprev + 8 &&
	       bpf_core_field_offset(struct dentry, d_name.hash_len) == pprev + 16 &&
	       bpf_core_field_offset(struct dentry, d_name.name) == pprev + 24 &&
	       bpf_core_field_size(struct dentry, d_hash.pprev) == 8 &&
	       bpf_core_field_size(struct dentry, d_parent) == 8 &&
	       bpf_core_field_size(struct dentry, d_name.name) == 8;
}

static __always_inline int dentry_head_read(struct dentry *d, struct dentry_head *h)
{
	if (dentry_head_packed())
		return bpf_probe_read_kernel(h, sizeof(*h),
					     (char *)d + bpf_core_field_offset(struct dentry, d_hash.pprev));
	h->pprev = BPF_CORE_READ(d, d_hash.pprev);
	h->parent = BPF_CORE_READ(d, d_parent);
	h->name = BPF_CORE_READ(d, d_name.name);
	return 0;
}

struct mount_up {
	struct mount *parent;
	struct dentry *mountpoint;
};

static __always_inline int mount_up_read(struct mount *m, struct mount_up *u)
{
	__u32 off = bpf_core_field_offset(struct mount, mnt_parent);

	if (bpf_core_field_offset(struct mount, mnt_mountpoint) == off + 8 &&
	    bpf_core_field_size(struct mount, mnt_parent) == 8 &&
	    bpf_core_field_size(struct mount, mnt_mountpoint) == 8)
		return bpf_probe_read_kernel(u, sizeof(*u), (char *)m + off);
	u->parent = BPF_CORE_READ(m, mnt_parent);
	u->mountpoint = BPF_CORE_READ(m, mnt_mountpoint);
	return 0;
}

static long path_step(__u32 i, struct path_walk *w)
{
	struct dentry *d = w->dentry, *mnt_root, *up;
	struct vfsmount *vm = w->vfsmnt;
	struct dentry_head h = {};
	const unsigned char *name;
	__u32 off = w->off, pos = w->pos;
	bool have_h = false;
	char *buf;
	long n;

	/* d_unlinked() of the leaf: unhashed and not a root */
	if (!i && w->deleted_flag) {
		if (dentry_head_read(d, &h)) {
			w->flags |= w->fault_flag;
			goto done;
		}
		have_h = true;
		if (!h.pprev && h.parent != d)
			w->flags |= w->deleted_flag;
	}
	if (w->root_dentry && d == w->root_dentry && vm == w->root_mnt)
		goto done;
	mnt_root = w->mnt_root;
	if (!mnt_root) {
		mnt_root = BPF_CORE_READ(vm, mnt_root);
		w->mnt_root = mnt_root;
	}
	if (d == mnt_root) {
		struct mount *m = eg_container_of(vm, struct mount, mnt);
		struct mount_up u = {};

		if (mount_up_read(m, &u) || u.parent == m)
			goto done;
		w->dentry = u.mountpoint;
		w->vfsmnt = (struct vfsmount *)((char *)u.parent +
				bpf_core_field_offset(struct mount, mnt));
		w->mnt_root = NULL;
		return 0;
	}
	if (!have_h && dentry_head_read(d, &h)) {
		w->flags |= w->fault_flag;
		goto done;
	}
	up = h.parent;
	if (!up || up == d)
		goto done;
	if (off > EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX || pos > EG_FILENAME_MAX - EG_NAME_MAX) {
		w->flags |= w->trunc_flag;
		goto done;
	}
	name = h.name;
	if (w->kslot) {
		struct kfacts *f = kf_get(w->kslot - 1);
		__u64 p = pos;

		if (!f)
			goto done;
		eg_clamp(p, EG_FILENAME_MAX - EG_NAME_MAX);
		n = bpf_probe_read_kernel_str(f->raw + p, EG_NAME_MAX, name);
	} else {
		__u64 o = off, p = pos;

		buf = scratch_get();
		if (!buf)
			goto done;
		/*
		 * Checked above already, but on registers clang then spilled
		 * across the calls: a verifier without ids on spilled scalars
		 * (before 6.8, e.g. 6.1) forgets that bound when it fills the
		 * slot again ("R1 unbounded memory access"). Bound the
		 * registers that are used.
		 */
		eg_clamp(o, EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX);
		eg_clamp(p, EG_FILENAME_MAX - EG_NAME_MAX);
		n = bpf_probe_read_kernel_str(buf + o + p, EG_NAME_MAX, name);
	}
	if (n <= 0) {
		w->flags |= w->fault_flag;
		goto done;
	}
	w->pos = pos + n;
	w->dentry = up;
	return 0;
done:
	w->done = true;
	return 1;
}

/* An internal mount (memfd, pipes, anonymous inodes) belongs to no namespace. */
static __always_inline bool mount_internal(struct vfsmount *vm)
{
	struct mount *m = eg_container_of(vm, struct mount, mnt);
	unsigned long ns = (unsigned long)BPF_CORE_READ(m, mnt_ns);

	return ns < 4096 || ns >= (unsigned long)-4095;
}

/*
 * Walks w (dentry, vfsmnt, roots, off and the flag bits set by the caller);
 * returns the length written at scratch+off (0 on a fault), flags in w->flags.
 */
static __noinline __u32 read_path(struct path_walk *w)
{
	if (!w->dentry || !w->vfsmnt) {
		w->flags |= w->fault_flag;
		return 0;
	}
	bpf_loop(EG_CWD_DEPTH, path_step, w, 0);
	if (!w->done)
		w->flags |= w->trunc_flag;
	return w->pos;
}

/* Fills w to walk (dentry, mnt) up to root (NULL: the namespace root). */
#define PATH_WALK(w, d, m, rd, rm, o, tf, ff, df) do {			\
		__builtin_memset(&(w), 0, sizeof(w));			\
		(w).dentry = (d);					\
		(w).vfsmnt = (m);					\
		(w).root_dentry = (rd);					\
		(w).root_mnt = (rm);					\
		(w).off = (o);						\
		(w).trunc_flag = (tf);					\
		(w).fault_flag = (ff);					\
		(w).deleted_flag = (df);				\
	} while (0)

/* buf + off, with off clamped on the very register the verifier checks. */
static __always_inline char *at(char *buf, __u32 off, __u64 max)
{
	__u64 o = off;

	eg_clamp(o, max);
	return buf + o;
}

#define STR_OFF_MAX	(EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX)

/* The name of a file with no path (memfd:NAME): its dentry's name, alone. */
static __always_inline __u32 read_anon_name(struct dentry *d, char *buf, __u32 off, __u32 *flags,
					    __u32 fault_flag)
{
	long n;

	if (off > STR_OFF_MAX)
		return 0;
	n = bpf_probe_read_kernel_str(at(buf, off, STR_OFF_MAX), EG_NAME_MAX, BPF_CORE_READ(d, d_name.name));
	if (n <= 0) {
		*flags |= fault_flag;
		return 0;
	}
	return n;
}

/* A kernel string copied whole or flagged: the length read, never an error code. */
static __always_inline __u32 read_kstr(char *buf, __u32 off, const char *src, __u32 *flags,
				       __u32 trunc_flag, __u32 fault_flag)
{
	char next = 0;
	long n;

	if (off > STR_OFF_MAX)
		return 0;
	n = bpf_probe_read_kernel_str(at(buf, off, STR_OFF_MAX), EG_FILENAME_MAX, src);
	if (n <= 0) {
		*flags |= fault_flag;
		return 0;
	}
	if (n >= EG_FILENAME_MAX) {
		bpf_probe_read_kernel(&next, 1, src + EG_FILENAME_MAX - 1);
		if (next)
			*flags |= trunc_flag;
		n = EG_FILENAME_MAX;
	}
	return n;
}

/* ---- the script behind an interpreter ------------------------------------ */

struct script_walk {
	struct callback_head *cb;
	struct file *found;		/* the oldest exec-opened file pending release */
};

static long script_step(__u32 i, struct script_walk *w)
{
	struct callback_head *cb = w->cb;
	struct file *f;

	if (!cb)
		return 1;
	if ((const void *)BPF_CORE_READ(cb, func) == &____fput) {
		if (bpf_core_field_exists(struct file, f_task_work))
			f = (struct file *)((char *)cb - bpf_core_field_offset(struct file, f_task_work));
		else
			f = (struct file *)((char *)cb - bpf_core_field_offset(struct file___old, f_rcuhead));
		/* opened by exec (open_exec: __FMODE_EXEC in f_flags); the list is newest first */
		if (BPF_CORE_READ(f, f_flags) & EG___FMODE_EXEC)
			w->found = f;
	}
	w->cb = BPF_CORE_READ(cb, next);
	return 0;
}

/*
 * exec_binprm() replaced the script by its interpreter and fput() it; the
 * release waits on current->task_works, newest first, so the script the
 * caller named is the last exec-opened file there. At sched_prepare_exec
 * (Linux 6.10+) the scripts are the only such files; later, the old
 * image's files join them (and an io_uring cancel may run the list).
 */
static __always_inline struct file *find_script(struct task_struct *task, __u32 max)
{
	struct script_walk w = {};

	if (!&____fput)	/* weak: 0 when kallsyms does not name it */
		return NULL;
	w.cb = BPF_CORE_READ(task, task_works);
	bpf_loop(max, script_step, &w, 0);
	return w.found;
}

/* Writes f's path at scratch+off; returns its length. */
static __always_inline __u32 file_path(struct file *f, __u32 off, __u32 *flags, __u32 trunc_flag,
				       __u32 deleted_flag)
{
	struct vfsmount *mnt = BPF_CORE_READ(f, f_path.mnt);
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
	struct path_walk w;
	char *buf;
	__u32 n;

	if (mount_internal(mnt)) {
		*flags |= EG_F_ANON_FILE;
		buf = scratch_get();
		return buf ? read_anon_name(d, buf, off, flags, EG_F_FILENAME_FAULT) : 0;
	}
	PATH_WALK(w, d, mnt, NULL, NULL, off, trunc_flag, EG_F_FILENAME_FAULT, deleted_flag);
	n = read_path(&w);
	*flags |= w.flags;
	return n;
}

SEC("tp_btf/sched_prepare_exec")
int BPF_PROG(handle_prepare_exec, struct task_struct *task, struct linux_binprm *bprm)
{
	struct eg_script *sc;
	struct file *f;
	__u32 flags = 0;
	__u64 len;
	char *buf;

	if (!active())
		return 0;
	if (bprm->interp == bprm->filename)
		return 0;
	f = find_script(task, 64);
	buf = f ? scratch_get() : NULL;
	if (!buf) {
		if (f)
			COUNT(scratch_missing);
		/* what an earlier exec left (out of scope, or failed) never stands for this script */
		bpf_task_storage_delete(&scripts, task);
		return 0;
	}
	sc = bpf_task_storage_get(&scripts, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!sc) {
		COUNT(storage_failed);
		return 0;
	}
	len = file_path(f, EG_EVENT_HDR, &flags, EG_F_SCRIPT_TRUNC, EG_F_SCRIPT_DELETED);
	eg_clamp(len, EG_FILENAME_MAX);
	if (len && bpf_probe_read_kernel(sc->path, len, buf + EG_EVENT_HDR))
		len = 0;
	sc->len = len;
	sc->flags = flags;
	sc->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	sc->ino = BPF_CORE_READ(f, f_inode, i_ino);
	return 0;
}

/* ---- record assembly ---------------------------------------------------- */

static __always_inline void submit(char *buf, __u32 size, __u32 type)
{
	__u64 flags = BPF_RB_NO_WAKEUP;
	struct eg_counters *c;
	__u32 ev_flags;
	long err;

	if (size > EG_RECORD_MAX(max_argv_bytes)) {
		COUNT(record_too_big);
		return;
	}
	/* Batch: wake the daemon only past the fill threshold; its timer does the rest. */
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + size >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	ev_flags = ((struct eg_event *)buf)->flags;
	err = bpf_ringbuf_output(&events, buf, size, flags);
	c = counters_get();
	if (!c)
		return;
	if (err) {
		if (type == EG_EVENT_EXEC)
			__sync_fetch_and_add(&c->lost_exec, 1);
		else
			__sync_fetch_and_add(&c->lost_exec_failed, 1);
		return;
	}
	if (type == EG_EVENT_EXEC)
		__sync_fetch_and_add(&c->exec, 1);
	else
		__sync_fetch_and_add(&c->exec_failed, 1);
	if (ev_flags & EG_F_ARGV_TRUNC)
		__sync_fetch_and_add(&c->argv_truncated, 1);
	if (ev_flags & (EG_F_ARGV_FAULT | EG_F_FILENAME_FAULT | EG_F_CWD_FAULT))
		__sync_fetch_and_add(&c->read_faults, 1);
}

/* Who runs it: credentials, namespaces, terminal, login uid. */
static __always_inline void fill_task(struct eg_event *e, struct task_struct *task)
{
	const struct cred *cred = task->cred;
	struct tty_struct *tty;
	struct upid up = {};
	struct pid *pid;
	unsigned int level;

	e->ppid = task->real_parent->tgid;
	e->uid = cred->uid.val;
	e->gid = cred->gid.val;
	e->euid = cred->euid.val;
	e->egid = cred->egid.val;
	if (bpf_core_field_exists(task->loginuid))
		e->auid = task->loginuid.val;
	else
		e->auid = EG_AUID_UNSET;
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->mnt_ns = task->nsproxy->mnt_ns->ns.inum;
	/* the pid namespace the task lives in, and its pid there (a variable index: one read) */
	pid = task->group_leader->thread_pid;
	level = pid->level;
	if (level < 32 && !bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[level])) {
		e->pid_ns = BPF_CORE_READ(up.ns, ns.inum);
		e->ns_pid = up.nr;
	}
	tty = task->signal->tty;
	if (tty)
		bpf_probe_read_kernel_str(e->tty, sizeof(e->tty), &tty->name);
}

static __always_inline void fill_lineage(struct eg_event *e, struct eg_task *st, __s32 new_depth)
{
	if (st && (st->flags & EG_TASK_KNOWN)) {
		/* a depth set from userspace comes without an exec id */
		if (st->exec_ktime)
			e->flags |= EG_F_PARENT_KNOWN;
		e->parent_tgid = st->exec_tgid;
		e->parent_ktime_ns = st->exec_ktime;
		e->session = st->session;
		if (st->flags & EG_TASK_DEPTH_KNOWN)
			e->flags |= EG_F_DEPTH_KNOWN;
	}
	e->depth = new_depth;
}

/*
 * Is this the image of an execgate binary whose first argument is "exec"?
 * argv[0] is read into scratch (overwritten later) to find where argv[1]
 * starts: one bounded string read instead of a byte loop.
 */
static __noinline bool is_launcher(struct file *file, unsigned long arg_start,
				   unsigned long arg_end)
{
	struct eg_file_key k;
	char word[8] = {};
	char *buf;
	long n;

	k.dev = file->f_inode->i_sb->s_dev;
	k.ino = file->f_inode->i_ino;
	if (!bpf_map_lookup_elem(&launchers, &k))
		return false;
	buf = scratch_get();
	if (!buf)
		return false;
	n = bpf_probe_read_user_str(buf + EG_EVENT_HDR, EG_FILENAME_MAX, (const void *)arg_start);
	if (n <= 0 || n >= EG_FILENAME_MAX)
		return false;
	arg_start += n;
	if (arg_start + 5 > arg_end || bpf_probe_read_user(word, 5, (const void *)arg_start))
		return false;
	return word[0] == 'e' && word[1] == 'x' && word[2] == 'e' && word[3] == 'c' && word[4] == 0;
}

/*
 * The script's path at scratch+off, from what sched_prepare_exec stored
 * (Linux 6.10+). Older kernels without it leave the script unresolved: by
 * sched_process_exec the old image's files sit on the same list and an
 * io_uring cancel may have run it, so a guess could name the wrong file.
 * Returns the length (0: not found).
 */
static __noinline __u32 read_script(struct task_struct *task, char *buf, __u32 off,
				    struct eg_event *e)
{
	struct eg_script *sc;
	__u64 len, o = off;

	if (off > EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX)
		return 0;
	sc = bpf_task_storage_get(&scripts, task, 0, 0);
	if (!sc)
		return 0;
	len = sc->len;
	eg_clamp(len, EG_FILENAME_MAX);
	eg_clamp(o, EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX);
	if (len && bpf_probe_read_kernel(buf + o, len, sc->path))
		len = 0;
	e->flags |= sc->flags & (EG_F_SCRIPT_TRUNC | EG_F_SCRIPT_DELETED);
	e->script_dev = sc->dev;
	e->script_ino = sc->ino;
	bpf_task_storage_delete(&scripts, task);
	if (len)
		e->flags |= EG_F_SCRIPT_FOUND;
	return len;
}

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
 * The exec of a task in a session must be the one its supervisor allowed:
 * same session, same file, same script, the same committed argv. Returns
 * EG_REASON_NONE when it is; the ticket is used up either way.
 */
static __noinline __u32 check_ticket(struct eg_event *e, const char *argv, __u64 argv_read,
				     __u64 argv_full)
{
	__u32 tid = e->tid, session = e->session, cap;
	struct eg_ticket *t = ticket_find(tid, &cap);
	struct cmp_walk w = {};
	__u32 reason = EG_REASON_NONE;

	if (!t)
		return EG_REASON_NO_TICKET;
	if (t->session != session)
		reason = EG_REASON_TICKET_SESSION;
	else if (t->dev != e->dev || t->ino != e->ino)
		reason = EG_REASON_TICKET_FILE;
	else if ((t->flags & EG_TICKET_SCRIPT) && (e->flags & EG_F_SCRIPT_FOUND) &&
		 (t->script_dev != e->script_dev || t->script_ino != e->script_ino))
		reason = EG_REASON_TICKET_SCRIPT;
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
	ticket_drop(tid);
	return reason;
}

/*
 * Kills current before its new image runs an instruction (the signal is
 * delivered on the way back to user mode). bpf_send_signal can refuse
 * (-EBUSY when this CPU has one in flight): the task is marked and the
 * syscall exit tracepoint tries again.
 */
static __noinline void kill_current(struct eg_event *e, struct task_struct *task)
{
	struct eg_task *st;

	e->flags |= EG_F_KILLED;
	if (bpf_send_signal(9 /* SIGKILL */)) {
		e->flags |= EG_F_KILL_FAILED;
		COUNT(kill_failed);
		st = bpf_task_storage_get(&tasks, task, 0, 0);
		if (st)
			st->flags |= EG_TASK_MUST_DIE;
	}
	COUNT(killed);
}

/* ---- kernel rules ------------------------------------------------------------ */

#define KP_LEAF		0	/* a leaf-first path */
#define KP_LEAF_DELETED	1	/* ... of an unlinked file: " (deleted)", as the daemon shows it */
#define KP_PLAIN	2	/* a string as it is: a file with no path, a script not found */

static const char deleted_suffix[] = " (deleted)";

/* The program's file for a judgement: path, name (what follows the last '/'). */
static __always_inline int kf_program(__u32 slot, const char *src, __u32 len, __u32 how)
{
	struct kfacts *f = kf_get(slot);
	__u64 n = len, pl;
	__s32 slash;
	long r;

	if (!f)
		return -1;
	eg_clamp(n, EG_FILENAME_MAX);
	if (how == KP_PLAIN) {
		r = bpf_probe_read_kernel_str(f->path, EG_FILENAME_MAX, src);
		if (r <= 0)
			return -1;
		f->path_len = r - 1;
		slash = last_slash(slot, f->path, r - 1);
		f = kf_get(slot);
		if (!f)
			return -1;
		f->base_off = slash + 1;
		f->base_len = f->path_len - f->base_off;
		return 0;
	}
	/* src NULL: the path is in raw already (a walk wrote it there) */
	if (src && n && bpf_probe_read_kernel(f->raw, n, src))
		return -1;
	pl = kf_forward(slot, n, 0);
	f = kf_get(slot);
	if (!f || !pl)
		return -1;
	f->path_len = pl;
	f->base_off = pl - f->cv.leaf;
	f->base_len = f->cv.leaf;
	if (how == KP_LEAF_DELETED) {
		eg_clamp(pl, EG_FILENAME_MAX);
		bpf_probe_read_kernel(f->path + pl, sizeof(deleted_suffix) - 1, deleted_suffix);
		f->path_len += sizeof(deleted_suffix) - 1;
		f->base_len += sizeof(deleted_suffix) - 1;
	}
	return 0;
}

/*
 * Where a script's own argv starts in the committed argv: the kernel made
 * it [interpreter, optional argument, the script as spelled, the caller's
 * arguments...]. 1 or 2, or 0 when argv does not look like that (then the
 * daemon does not judge the script either: trace/judge.c).
 */
static __always_inline __u32 script_skip(__u32 slot, const char *argv, __u32 argv_len,
					 const char *rq, __u32 rlen)
{
	struct kfacts *f = kf_get(slot);
	long n0, n1;

	if (!f || !rlen || rlen > EG_FILENAME_MAX)
		return 0;
	n0 = bpf_probe_read_kernel_str(f->tmp, EG_FILENAME_MAX, argv);
	if (n0 <= 0)
		return 0;
	if (n0 + rlen <= argv_len && kmemeq(slot, argv + (n0 & (EG_FILENAME_MAX - 1)), rq, rlen))
		return 1;
	if (n0 >= argv_len)
		return 0;
	f = kf_get(slot);
	if (!f)
		return 0;
	n1 = bpf_probe_read_kernel_str(f->tmp, EG_FILENAME_MAX, argv + (n0 & (EG_FILENAME_MAX - 1)));
	if (n1 <= 0)
		return 0;
	if (n0 + n1 + rlen <= argv_len &&
	    kmemeq(slot, argv + ((n0 + n1) & (2 * EG_FILENAME_MAX - 1)), rq, rlen))
		return 2;
	return 0;
}

/*
 * The facts of one program of the exec in the record (scratch), for
 * kjudge() at sched_process_exec: prog 0 is the file that runs with the
 * committed argv; prog 1, for a script, the script with its caller's
 * argv. Returns 0, 1 when there is no such program, -1 on error.
 */
__noinline int kfacts_exec(__u32 prog)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	__u32 slot = kf_slot(KSLOT_EXEC), flen, rlen, ilen, slen, skip, how;
	struct eg_event *e;
	struct kfacts *f;
	char *buf = scratch_get();
	const char *rq;
	__u64 off;

	f = kf_get(slot);
	if (!buf || !f)
		return -1;
	e = (struct eg_event *)buf;
	flen = *(volatile __u16 *)&e->filename_len;
	rlen = *(volatile __u16 *)&e->requested_len;
	ilen = *(volatile __u16 *)&e->interp_len;
	slen = *(volatile __u16 *)&e->script_len;
	off = EG_EVENT_HDR + flen;
	eg_clamp(off, EG_EVENT_HDR + EG_FILENAME_MAX);
	rq = buf + off;
	f->flags = (e->flags & EG_F_DEPTH_KNOWN) ? 0 : KF_DEPTH_UNKNOWN;
	/* a path cut short (too deep, too long) or unreadable: path rules cannot tell */
	if (e->flags & (EG_F_FILENAME_FAULT |
			(prog ? ((e->flags & EG_F_SCRIPT_FOUND) ? EG_F_SCRIPT_TRUNC : EG_F_REQUESTED_TRUNC)
			      : EG_F_FILENAME_TRUNC)))
		f->flags |= KF_PATH_CUT;
	f->depth = e->depth < 0 ? 0 : e->depth;
	f->euid = e->euid;
	f->mnt_ns = e->mnt_ns;
	f->arg_start = BPF_CORE_READ(mm, arg_start);
	f->arg_end = BPF_CORE_READ(mm, arg_end);
	f->kflags = 0;
	if (!prog) {
		f->cg_state = 0;
		f->dev = e->dev;
		f->ino = e->ino;
		f->args_from = 0;
		how = (e->flags & EG_F_ANON_FILE) ? KP_PLAIN :
		      (e->flags & EG_F_FILE_DELETED) ? KP_LEAF_DELETED : KP_LEAF;
		if (kf_program(slot, buf + EG_EVENT_HDR, flen, how))
			return -1;
		/* a script's interpreter is judged by the name its '#!' line spells */
		if (e->flags & EG_F_SCRIPT) {
			off += rlen;
			eg_clamp(off, EG_EVENT_HDR + 2 * EG_FILENAME_MAX);
			kf_spelled(slot, buf + off, ilen);
		} else {
			kf_spelled(slot, rq, rlen);
		}
		return 0;
	}
	if (!(e->flags & EG_F_SCRIPT))
		return 1;
	off = EG_EVENT_HDR + flen + rlen + ilen + slen + *(volatile __u16 *)&e->cwd_len;
	eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX);
	skip = script_skip(slot, buf + off, e->argv_len, rq, rlen);
	f = kf_get(slot);
	if (!f)
		return -1;
	if (!skip)
		return 1;
	f->args_from = skip;
	if (e->flags & EG_F_SCRIPT_FOUND) {
		f->dev = e->script_dev;
		f->ino = e->script_ino;
		off = EG_EVENT_HDR + flen + rlen + ilen;
		eg_clamp(off, EG_EVENT_HDR + 3 * EG_FILENAME_MAX);
		how = (e->flags & EG_F_SCRIPT_DELETED) ? KP_LEAF_DELETED : KP_LEAF;
		if (kf_program(slot, buf + off, slen, how))
			return -1;
	} else {
		f->dev = 0;
		f->ino = 0;
		if (kf_program(slot, rq, rlen, KP_PLAIN))
			return -1;
	}
	kf_spelled(slot, rq, rlen);
	return 0;
}

/*
 * The kernel's verdict on the exec in the record, at sched_process_exec:
 * the file that runs, and for a script the script too; the stronger
 * verdict stands. Fills e->k* and returns the decision (EG_KD_*).
 */
static __always_inline int kjudge_exec(struct eg_event *e)
{
	__u32 slot = kf_slot(KSLOT_EXEC), rule = 0, kfl = 0, seq = 0, rank = KRANK_ERROR;
	struct kfacts *f;
	int d, d2, r;

	d = kfacts_exec(0) ? EG_KD_ERROR : kjudge(slot);
	f = kf_get(slot);
	if (f && d != EG_KD_ERROR) {
		rule = f->out_rule;
		kfl = f->kflags;
		seq = f->seq;
		rank = f->out_rank;
	}
	if (d != EG_KD_ERROR) {
		/* the stronger of the two stands; the file that runs keeps a tie */
		r = kfacts_exec(1);
		d2 = r < 0 ? EG_KD_ERROR : r ? EG_KD_NONE : kjudge(slot);
		f = kf_get(slot);
		if (d2 == EG_KD_ERROR) {
			d = d2;
			rule = 0;
		} else if (f && d2 != EG_KD_NONE && f->out_rank > rank) {
			d = d2;
			rule = f->out_rule;
			kfl = f->kflags | EG_KF_SCRIPT_RULE;
			seq = f->seq;
		}
	}
	e->kdecision = d;
	e->krule = rule;
	e->kflags = kfl;
	e->klayer = EG_KL_KILL;
	e->kseq = seq;
	return d;
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

/* ---- bprm_check_security: refuse before the exec (BPF LSM) ------------------ */

/* The facts of the program bprm->file is now, for kjudge() in slot. */
__noinline int kfacts_bprm(__u32 slot, __u64 bprm_addr)
{
	struct linux_binprm *bprm = (struct linux_binprm *)bprm_addr;
	struct task_struct *task = bpf_get_current_task_btf();
	struct file *file = BPF_CORE_READ(bprm, file);
	struct vfsmount *mnt = BPF_CORE_READ(file, f_path.mnt);
	struct dentry *d = BPF_CORE_READ(file, f_path.dentry);
	struct kfacts *f = kf_get(slot);
	struct eg_task *st;
	struct path_walk w;
	umode_t mode;
	__u32 n;
	long r;

	if (!f)
		return -1;
	mode = BPF_CORE_READ(file, f_inode, i_mode);
	/* the new credentials are computed after this hook: a set-id file's euid is not known */
	f->flags = KF_NO_ARGV | ((mode & (04000 | 02000)) ? KF_NO_UID : 0);
	f->euid = BPF_CORE_READ(task, cred, euid.val);
	f->mnt_ns = BPF_CORE_READ(task, nsproxy, mnt_ns, ns.inum);
	f->dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	f->ino = BPF_CORE_READ(file, f_inode, i_ino);
	f->arg_start = 0;
	f->arg_end = 0;
	f->args_from = 0;
	f->cg_state = 0;
	f->kflags = 0;
	f->depth = 0;
	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (st && (st->flags & EG_TASK_KNOWN)) {
		f->depth = st->depth + 1 < 0 ? 0 : st->depth + 1;
		if (!(st->flags & EG_TASK_DEPTH_KNOWN))
			f->flags |= KF_DEPTH_UNKNOWN;
	} else {
		f->flags |= KF_DEPTH_UNKNOWN;
	}
	if (mount_internal(mnt)) {
		r = bpf_probe_read_kernel_str(f->path, EG_NAME_MAX, BPF_CORE_READ(d, d_name.name));
		if (r <= 0)
			return -1;
		f->path_len = r - 1;
		f->base_off = 0;
		f->base_len = r - 1;
	} else {
		PATH_WALK(w, d, mnt, NULL, NULL, 0, EG_F_FILENAME_TRUNC, EG_F_FILENAME_FAULT,
			  EG_F_FILE_DELETED);
		w.kslot = slot + 1;
		n = read_path(&w);
		if (w.flags & EG_F_FILENAME_FAULT)
			return -1;
		if (kf_program(slot, NULL, n, (w.flags & EG_F_FILE_DELETED) ? KP_LEAF_DELETED : KP_LEAF))
			return -1;
		f = kf_get(slot);
		if (!f)
			return -1;
		if (w.flags & EG_F_FILENAME_TRUNC)
			f->flags |= KF_PATH_CUT;
	}
	/* the name as spelled: bprm->interp is the path, or the '#!' line's interpreter */
	r = bpf_probe_read_kernel_str(f->tmp, EG_FILENAME_MAX, BPF_CORE_READ(bprm, interp));
	if (r > 0)
		kf_spelled(slot, f->tmp, r);
	else
		f->rbase_len = 0;
	return 0;
}

/*
 * A session exec must be the one its supervisor allowed: the ticket names
 * the file that will run and, for a script, the script (checked here per
 * program, as the kernel opens each); argv is compared at exec, when it is
 * final. No ticket, or another file: refused.
 */
static __always_inline int lsm_ticket(struct eg_task *st, struct file *file, __u32 *reason)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), cap;
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
	dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	ino = BPF_CORE_READ(file, f_inode, i_ino);
	if (dev == t->dev && ino == t->ino)
		return 0;
	if ((t->flags & EG_TICKET_SCRIPT) && dev == t->script_dev && ino == t->script_ino)
		return 0;
	*reason = EG_REASON_TICKET_FILE;
	return -1;
}

/* Remembers why bprm_check refused, for the exec_failed record. */
static __always_inline void lsm_note(struct eg_task *st, __u32 reason, __u32 kd, __u32 rule,
				     __u32 seq, __u32 kflags)
{
	if (!st)
		return;
	st->flags |= EG_TASK_LSM_DENIED;
	st->lsm_reason = reason;
	st->lsm_kdecision = kd;
	st->lsm_rule = rule;
	st->lsm_seq = seq;
	st->lsm_kflags = kflags;
}

/* 0 to let the exec go on, -EPERM to refuse it. */
static __always_inline int lsm_check(struct linux_binprm *bprm, bool scoped)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file *file = BPF_CORE_READ(bprm, file);
	__u32 slot, reason = 0, rule, seq, kfl;
	__u64 bprm_addr = 0;
	struct eg_task *st;
	struct kfacts *f;
	int d;

	if (!active())
		return 0;
	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (lsm_ticket(st, file, &reason)) {
		lsm_note(st, reason, EG_KD_NONE, 0, 0, 0);
		return -1;
	}
	if (!krules_loaded() || (!scoped && !traced_cgroup()))
		return 0;
	slot = kf_slot(KSLOT_LSM);
	f = kf_get(slot);
	if (!f)
		return 0;
	/* this slot may be in use by a task this one preempted: leave it to the check at exec */
	if (__sync_lock_test_and_set(&f->busy, 1)) {
		COUNT(lsm_deferred);
		return 0;
	}
	/*
	 * The pointer's value as a plain number: a global function's scalar
	 * argument must be a scalar to 6.1's verifier, which refuses a cast
	 * pointer ("R2 is not a scalar").
	 */
	bpf_probe_read_kernel(&bprm_addr, sizeof(bprm_addr), &bprm);
	if (kfacts_bprm(slot, bprm_addr))
		d = EG_KD_ERROR;
	else
		d = kjudge(slot);
	f = kf_get(slot);
	if (!f)
		return 0;
	rule = f->out_rule;
	seq = f->seq;
	kfl = f->kflags;
	*(volatile __u64 *)&f->busy = 0;	/* release: a plain store after the work */
	if (d == KJ_DEFER) {
		COUNT(lsm_deferred);
		return 0;
	}
	/* an exec that goes on is judged (and counted) again at sched_process_exec */
	if ((d != EG_KD_DENY && d != EG_KD_ERROR) || !kenforcing())
		return 0;
	COUNT(kjudged);
	if (d == EG_KD_ERROR)
		COUNT(kerrors);
	COUNT(kdenied);
	st = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	lsm_note(st, d == EG_KD_ERROR ? EG_REASON_KERNEL_ERROR : EG_REASON_RULE, d, rule, seq, kfl);
	return -1;
}

/* Host-wide: every exec in scope (--cgroup, or the whole host). */
SEC("lsm/bprm_check_security")
int BPF_PROG(enforce_bprm, struct linux_binprm *bprm, int ret)
{
	if (ret)
		return ret;
	return lsm_check(bprm, false) ? -1 /* EPERM */ : 0;
}

/* Attached to each --cgroup: the kernel runs it for tasks in that subtree only. */
SEC("lsm_cgroup/bprm_check_security")
int BPF_PROG(enforce_bprm_cgroup, struct linux_binprm *bprm)
{
	return lsm_check(bprm, true) ? 0 : 1;
}

/* ---- fork / exec / exit ------------------------------------------------- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	struct eg_task *pst, *cst;

	if (!active())
		return 0;
	pst = bpf_task_storage_get(&tasks, parent, 0, 0);
	if (!pst)
		return 0;
	cst = bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!cst) {
		COUNT(storage_failed);
		return 0;
	}
	cst->depth = pst->depth;
	cst->flags = pst->flags & (EG_TASK_KNOWN | EG_TASK_DEPTH_KNOWN | EG_TASK_LAUNCHER);
	cst->exec_ktime = pst->exec_ktime;
	cst->exec_tgid = pst->exec_tgid;
	cst->session = pst->session;
	return 0;
}

/*
 * Where the next string of e starts. The lengths are read back from the
 * record (map memory, volatile so the compiler does not forward them): the
 * verifier then sees one state here, however each string read went, instead
 * of one per combination of outcomes.
 */
static __always_inline __u64 strings_end(struct eg_event *e)
{
	__u64 off = EG_EVENT_HDR;

	off += *(volatile __u16 *)&e->filename_len;
	off += *(volatile __u16 *)&e->requested_len;
	off += *(volatile __u16 *)&e->interp_len;
	off += *(volatile __u16 *)&e->script_len;
	off += *(volatile __u16 *)&e->cwd_len;
	return off;
}

static __always_inline __u16 cut16(__u32 n, __u32 max)
{
	barrier_var(n);
	return n > max ? max : n;
}

/* filename, requested, interp, script and cwd, one after the other */
static __always_inline void exec_strings(struct eg_event *e, char *buf, struct task_struct *task,
					 struct linux_binprm *bprm, struct file *file)
{
	const char *fname, *interp;
	struct fs_struct *fs;
	struct path_walk w;
	__u32 n;

	/* the file that runs, by its place in the mount namespace */
	if (mount_internal(file->f_path.mnt)) {
		e->flags |= EG_F_ANON_FILE;
		n = read_anon_name(file->f_path.dentry, buf, EG_EVENT_HDR, &e->flags,
				   EG_F_FILENAME_FAULT);
	} else {
		PATH_WALK(w, file->f_path.dentry, file->f_path.mnt, NULL,
			  NULL, EG_EVENT_HDR, EG_F_FILENAME_TRUNC, EG_F_FILENAME_FAULT, EG_F_FILE_DELETED);
		n = read_path(&w);
		e->flags |= w.flags;
	}
	e->filename_len = cut16(n, EG_FILENAME_MAX);

	/* the path as the caller spelled it */
	fname = bprm->filename;
	n = read_kstr(buf, strings_end(e), fname, &e->flags, EG_F_REQUESTED_TRUNC, EG_F_FILENAME_FAULT);
	e->requested_len = cut16(n, EG_FILENAME_MAX);

	/* a script: bprm->interp moved off bprm->filename to the '#!' interpreter */
	interp = bprm->interp;
	if (interp != fname) {
		e->flags |= EG_F_SCRIPT;
		n = read_kstr(buf, strings_end(e), interp, &e->flags, EG_F_INTERP_TRUNC,
			      EG_F_FILENAME_FAULT);
		e->interp_len = cut16(n, EG_FILENAME_MAX);
		n = read_script(task, buf, strings_end(e), e);
		e->script_len = cut16(n, EG_FILENAME_MAX);
	}

	/* the working directory, as the task sees it (from its own root) */
	fs = task->fs;
	if (fs) {
		PATH_WALK(w, fs->pwd.dentry, fs->pwd.mnt, fs->root.dentry, fs->root.mnt, strings_end(e),
			  EG_F_CWD_TRUNC, EG_F_CWD_FAULT, EG_F_CWD_DELETED);
		n = read_path(&w);
		e->flags |= w.flags;
	} else {
		e->flags |= EG_F_CWD_FAULT;
		n = 0;
	}
	e->cwd_len = cut16(n, EG_CWD_MAX);
}

/*
 * The exec record in scratch: header, strings, the committed argv.
 * Returns its size; 0 when there is none (out of scope, no buffer, too
 * big). Apart from the checks below (exec_check()), so that the frames
 * of the kernel judgement's call chain stay within 512 bytes of stack.
 */
static __noinline __u32 exec_record(struct task_struct *task, pid_t old_pid,
				    struct linux_binprm *bprm, bool launcher, struct eg_task *st)
{
	struct file *file = bprm->file;
	struct mm_struct *mm = task->mm;
	unsigned long arg_start = mm->arg_start, arg_end = mm->arg_end;
	struct eg_event *e;
	struct inode *inode;
	__u64 len, off;
	char *buf;

	buf = scratch_get();
	if (!buf) {
		COUNT(scratch_missing);
		/* a session exec, or one kernel rules judge, that cannot be checked does not run */
		if (((st && st->session) || (krules_loaded() && kenforcing())) && bpf_send_signal(9))
			COUNT(kill_failed);
		return 0;
	}
	e = (struct eg_event *)buf;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = EG_EVENT_EXEC;
	e->pid = task->tgid;
	e->tid = old_pid;
	fill_lineage(e, st, st && (st->flags & EG_TASK_KNOWN) ? st->depth + 1 : 0);
	e->session = st ? st->session : 0;
	if (launcher)
		e->flags |= EG_F_LAUNCHER;
	e->argc = bprm->argc;
	/*
	 * From here on the record is the state: what was decided above is read
	 * back from it, so the verifier does not carry one copy of the rest per
	 * outcome.
	 */
	if (!traced_cgroup() && !*(volatile __u32 *)&e->session)
		return 0;

	fill_task(e, task);
	if (bpf_core_field_exists(bprm->secureexec) && BPF_CORE_READ_BITFIELD(bprm, secureexec))
		e->flags |= EG_F_SECUREEXEC;
	inode = file->f_inode;
	e->dev = inode->i_sb->s_dev;
	e->ino = inode->i_ino;
	e->size = inode->i_size;
	exec_strings(e, buf, task, bprm, file);

	/* argv as committed to the new mm: what the program will read */
	len = arg_end > arg_start ? arg_end - arg_start : 0;
	e->argv_bytes = len > 0xffffffffull ? 0xffffffffu : len;
	if (len > max_argv_bytes)
		e->flags |= EG_F_ARGV_TRUNC;
	eg_clamp(len, max_argv_bytes);
	off = strings_end(e);
	if (off > EG_EVENT_HDR + EG_STRINGS_MAX) {
		COUNT(record_too_big);
		if (*(volatile __u32 *)&e->session || (krules_loaded() && kenforcing()))
			kill_current(e, task);
		return 0;
	}
	eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX);
	if (len && bpf_probe_read_user(buf + off, len, (const void *)arg_start)) {
		e->flags |= EG_F_ARGV_FAULT;
		len = 0;
	}
	e->argv_len = len;
	return off + len;
}

/* What may stop the exec in the record: kernel rules, a session's ticket. Then it goes out. */
static __always_inline void exec_check(struct task_struct *task, __u32 size, __u64 now)
{
	struct eg_event *e;
	__u64 off;
	char *buf;

	buf = scratch_get();
	if (!buf)
		return;
	e = (struct eg_event *)buf;
	e->ktime_ns = now;	/* here: exec_record() has five arguments already */
	/* the kernel rules (--enforce): a denied exec dies before its image runs */
	if (krules_loaded()) {
		int d = kjudge_exec(e);

		COUNT(kjudged);
		if (d == EG_KD_ERROR)
			COUNT(kerrors);
		if ((d == EG_KD_DENY || d == EG_KD_ERROR) && kenforcing()) {
			COUNT(kdenied);
			e->reason = d == EG_KD_ERROR ? EG_REASON_KERNEL_ERROR : EG_REASON_RULE;
			kill_current(e, task);
		}
	}
	/* a session exec runs only as its supervisor allowed it */
	if (*(volatile __u32 *)&e->session && !(e->flags & EG_F_KILLED)) {
		off = strings_end(e);
		eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX);
		e->reason = check_ticket(e, buf + off, e->argv_len, e->argv_bytes);
		if (e->reason)
			kill_current(e, task);
		else
			e->flags |= EG_F_TICKET_OK;
	}
	if (traced_cgroup() || (e->flags & EG_F_KILLED))
		submit(buf, size, EG_EVENT_EXEC);
}

/* The task's depth and exec id for its next exec, and the procs view. */
static __noinline void exec_update(struct task_struct *task, bool launcher, __u64 now,
				   bool have_record, struct eg_task *st)
{
	struct eg_proc proc = {};
	struct eg_event *e;
	__u32 tgid = task->tgid, task_flags;
	char *buf;

	if (st) {
		proc.parent_tgid = (st->flags & EG_TASK_KNOWN) ? st->exec_tgid : 0;
		proc.parent_ktime = (st->flags & EG_TASK_KNOWN) ? st->exec_ktime : 0;
		task_flags = (st->flags & (EG_TASK_DEPTH_KNOWN | EG_TASK_KNOWN | EG_TASK_MUST_DIE)) |
			     EG_TASK_KNOWN;
		proc.depth = (st->flags & EG_TASK_KNOWN) ? st->depth + 1 : 0;
		st->depth = proc.depth;
		/*
		 * A launcher outside any session restarts the count: the command
		 * it execs is depth 0. Inside a session the count goes on, so a
		 * nested session never makes anything look "direct" again.
		 */
		if (launcher) {
			task_flags |= EG_TASK_LAUNCHER;
			if (!st->session) {
				st->depth = -1;
				task_flags |= EG_TASK_DEPTH_KNOWN;
			}
		}
		st->flags = task_flags;
		st->exec_ktime = now;
		st->exec_tgid = tgid;
		proc.session = st->session;
		proc.flags = task_flags & ~EG_TASK_MUST_DIE;
	}
	proc.exec_ktime = now;
	buf = have_record ? scratch_get() : NULL;
	e = (struct eg_event *)buf;
	if (e && e->uid == task->cred->uid.val) {
		/* already read for the record */
		proc.ppid = e->ppid;
		proc.uid = e->uid;
		proc.cgroup_id = e->cgroup_id;
		__builtin_memcpy(proc.comm, e->comm, sizeof(proc.comm));
	} else {
		proc.ppid = task->real_parent->tgid;
		proc.uid = task->cred->uid.val;
		proc.cgroup_id = bpf_get_current_cgroup_id();
		bpf_get_current_comm(proc.comm, sizeof(proc.comm));
	}
	if (bpf_map_update_elem(&procs, &tgid, &proc, BPF_ANY))
		COUNT(procs_failed);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct mm_struct *mm;
	struct eg_task *st;
	bool launcher;
	__u32 size;

	if (!active())
		return 0;
	mm = task->mm;
	launcher = is_launcher(bprm->file, mm->arg_start, mm->arg_end);
	/* one lookup for the record and the update (created: the task is known from here on) */
	st = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		COUNT(storage_failed);
	size = exec_record(task, old_pid, bprm, launcher, st);
	if (size)
		exec_check(task, size, now);
	exec_update(task, launcher, now, size != 0, st);
	return 0;
}

/* ---- exits ------------------------------------------------------------- */

const volatile __u32 report_exits = 1;	/* exit records (--exit-events=none: 0) */

#define EG_SIGNAL_GROUP_EXIT	0x00000004	/* include/linux/sched/signal.h */

/* The end of a process that exec'd while traced: its exec id, status and lifetime. */
static __noinline void report_exit(struct task_struct *task, const struct eg_task *st)
{
	struct signal_struct *sig = task->signal;
	__u64 flags = BPF_RB_NO_WAKEUP;
	struct eg_exit_event *e;

	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + sizeof(*e) >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		COUNT(lost_exit);
		return;
	}
	e->type = EG_EVENT_EXIT;
	e->flags = st->flags & EG_TASK_DEPTH_KNOWN ? EG_F_DEPTH_KNOWN : 0;
	e->ktime_ns = bpf_ktime_get_boot_ns();
	e->exec_ktime_ns = st->exec_ktime;
	e->pid = task->tgid;
	e->tid = task->pid;
	/* a group exit (exit_group, a fatal signal) gives every thread its code */
	e->exit_code = (sig->flags & EG_SIGNAL_GROUP_EXIT) ? sig->group_exit_code : task->exit_code;
	e->uid = (__u32)bpf_get_current_uid_gid();
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->session = st->session;
	e->depth = st->depth;
	e->pad = 0;
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, flags);
	COUNT(exits);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;
	__u32 tid = task->pid;
	struct eg_task *st;

	if (!active())
		return 0;
	/*
	 * A ticket for an exec this thread will never make. Only session tasks
	 * get tickets; a task with no storage (older than the tracer) is
	 * cleaned too. The storage lookup costs far less than a locked delete.
	 */
	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!st || st->session)
		ticket_drop(tid);

	/*
	 * The process is gone when its last thread is: do_exit() counts the
	 * live threads down before this tracepoint (a leader that called
	 * pthread_exit() keeps the entry while the others run).
	 */
	if (task->signal->live.counter == 0) {
		bpf_map_delete_elem(&procs, &tgid);
		/* only an image that exec'd in this process ends here */
		if (report_exits && st && (st->flags & EG_TASK_KNOWN) && st->exec_tgid == tgid &&
		    traced_cgroup())
			report_exit(task, st);
	}
	return 0;
}

/* ---- failed execs: reported from the syscall's exit ---------------------- */

/*
 * A failed execve leaves the caller's registers as they were: the
 * arguments the syscall used are still in pt_regs at sys_exit (after any
 * change by ptrace or seccomp, which happen before the call). So no entry
 * tracepoint has to stash them: one program run per exec fewer. The exit
 * tracepoint also fires for a call a seccomp filter refused without
 * running it: a container's or a service's filter (reported: someone
 * tried), or a session's supervisor (not reported here: see below).
 */
struct argv_walk {
	const char *const *argv;
	__u32 off;		/* where argv starts in scratch */
	__u32 pos;		/* bytes of whole arguments copied */
	__u32 argc;
	__u32 bytes;		/* real size, NULs included, as far as known */
	__u32 flags;
	bool full;		/* cap reached: only count from here on */
};

static long argv_step(__u32 i, struct argv_walk *w)
{
	const char *arg = NULL;
	__u64 off = w->off, pos = w->pos, room;
	char *buf, last = 1;
	long n;

	if (bpf_probe_read_user(&arg, sizeof(arg), &w->argv[i])) {
		w->flags |= EG_F_ARGV_FAULT;
		return 1;
	}
	if (!arg)
		return 1;
	/*
	 * argc is only counted, never compared here: a compared counter would
	 * make every iteration a distinct verifier state.
	 */
	w->argc++;
	if (i == EG_ARGC_SCAN - 1)
		w->flags |= EG_F_ARGC_INEXACT;
	if (w->full)
		return 0;
	if (off > EG_EVENT_HDR + EG_STRINGS_MAX || pos >= max_argv_bytes || pos >= EG_ARGV_LIMIT) {
		w->full = true;
		w->flags |= EG_F_ARGV_TRUNC;
		return 0;
	}
	buf = scratch_get();
	if (!buf)
		return 1;
	room = max_argv_bytes - pos;
	eg_clamp(room, EG_ARG_READ_MAX);
	eg_clamp(pos, max_argv_bytes);
	eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX);	/* for 6.1: see path_step() */
	n = bpf_probe_read_user_str(buf + off + pos, room, arg);
	if (n < 0) {
		w->flags |= EG_F_ARGV_FAULT;
		w->full = true;
		return 0;
	}
	/*
	 * n == room is either a string that fits exactly (its NUL is the last
	 * byte) or one that was cut: the source's byte at room-1 tells.
	 */
	if (n == room && (bpf_probe_read_user(&last, 1, arg + room - 1) || last)) {
		w->full = true;
		w->flags |= EG_F_ARGV_TRUNC;
		return 0;
	}
	w->pos = pos + n;
	w->bytes += n;
	return 0;
}

static __always_inline void report_failed(long ret, bool at)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;
	struct argv_walk aw = {};
	struct eg_task *st;
	struct eg_event *e;
	struct fs_struct *fs;
	struct path_walk w;
	const char *filename;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 off, n, lsm = 0, lsm_rule = 0, lsm_seq = 0, lsm_kd = 0, lsm_reason = 0, lsm_kflags = 0;
	__u64 filename_ptr, argv_ptr;
	bool session_refused = false;
	char next = 0;
	long rn;
	char *buf;

	if (!active())
		return;
	/* a task older than the tracer has no storage: its failures are reported all the same */
	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (st) {
		/* the kill at exec was refused: this is the last stop before user mode */
		if (st->flags & EG_TASK_MUST_DIE) {
			if (!bpf_send_signal(9))
				st->flags &= ~EG_TASK_MUST_DIE;
		}
		if (ret < 0 && st->session) {
			__u32 tid = (__u32)pid_tgid;

			/*
			 * The exec failed: its ticket must not serve a later one.
			 * No ticket: the supervisor refused it before the call ran
			 * (seccomp answered; the exit tracepoint fires all the
			 * same) and wrote its record itself.
			 */
			if (ticket_drop(tid))
				session_refused = true;
		}
		/* bprm_check_security refused it: say so in the record */
		lsm = st->flags & EG_TASK_LSM_DENIED;
		if (lsm) {
			lsm_rule = st->lsm_rule;
			lsm_seq = st->lsm_seq;
			lsm_kflags = st->lsm_kflags;
			lsm_kd = st->lsm_kdecision;
			lsm_reason = st->lsm_reason;
			st->flags &= ~EG_TASK_LSM_DENIED;
		}
	}
	if (ret >= 0 || session_refused || !report_failures || !traced_cgroup())
		return;

	buf = scratch_get();
	if (!buf) {
		COUNT(scratch_missing);
		return;
	}
	e = (struct eg_event *)buf;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = EG_EVENT_EXEC_FAILED;
	e->ktime_ns = bpf_ktime_get_boot_ns();
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->err = ret;
	fill_lineage(e, st, st && (st->flags & EG_TASK_KNOWN) ? st->depth + 1 : 0);
	fill_task(e, task);
	/* the syscall's own arguments (x86-64: di, si, dx, r10, r8) */
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (at) {
		e->flags |= EG_F_EXECVEAT;
		e->dirfd = (int)regs->di;
		filename_ptr = regs->si;
		argv_ptr = regs->dx;
		e->at_flags = (__u32)regs->r8;
	} else {
		filename_ptr = regs->di;
		argv_ptr = regs->si;
	}
	if (lsm && ret == -1 /* EPERM */) {
		e->klayer = EG_KL_LSM;
		e->kdecision = lsm_kd;
		e->krule = lsm_rule;
		e->kseq = lsm_seq;
		e->kflags = lsm_kflags;
		e->reason = lsm_reason;
	}

	/* the path as passed; an error from the read is never taken for a length */
	off = EG_EVENT_HDR;
	filename = (const char *)filename_ptr;
	rn = bpf_probe_read_user_str(buf + off, EG_FILENAME_MAX, filename);
	if (rn <= 0) {
		e->flags |= EG_F_FILENAME_FAULT;
		rn = 0;
	} else if (rn >= EG_FILENAME_MAX) {
		bpf_probe_read_user(&next, 1, filename + EG_FILENAME_MAX - 1);
		if (next)
			e->flags |= EG_F_FILENAME_TRUNC;
		rn = EG_FILENAME_MAX;
	}
	n = rn;
	barrier_var(n);
	if (n > EG_FILENAME_MAX)
		n = EG_FILENAME_MAX;
	e->filename_len = n;
	off += n;

	fs = BPF_CORE_READ(task, fs);
	if (fs) {
		PATH_WALK(w, BPF_CORE_READ(fs, pwd.dentry), BPF_CORE_READ(fs, pwd.mnt),
			  BPF_CORE_READ(fs, root.dentry), BPF_CORE_READ(fs, root.mnt), off,
			  EG_F_CWD_TRUNC, EG_F_CWD_FAULT, EG_F_CWD_DELETED);
		n = read_path(&w);
		e->flags |= w.flags;
	} else {
		e->flags |= EG_F_CWD_FAULT;
		n = 0;
	}
	barrier_var(n);
	if (n > EG_CWD_MAX)
		n = EG_CWD_MAX;
	e->cwd_len = n;
	off += n;

	aw.argv = (const char *const *)argv_ptr;
	aw.off = off;
	if (aw.argv)
		bpf_loop(EG_ARGC_SCAN, argv_step, &aw, 0);
	e->flags |= aw.flags;
	e->argc = aw.argc;
	e->argv_bytes = aw.bytes;
	n = aw.pos;
	barrier_var(n);
	if (n > EG_ARGV_LIMIT)
		n = EG_ARGV_LIMIT;
	e->argv_len = n;
	submit(buf, off + n, EG_EVENT_EXEC_FAILED);
}

SEC("tracepoint/syscalls/sys_exit_execve")
int handle_exit_execve(struct trace_event_raw_sys_exit *ctx)
{
	report_failed(ctx->ret, false);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_execveat")
int handle_exit_execveat(struct trace_event_raw_sys_exit *ctx)
{
	report_failed(ctx->ret, true);
	return 0;
}
